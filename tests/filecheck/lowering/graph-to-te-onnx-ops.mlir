// RUN: xweave-opt %s -p convert-graph-to-te | filecheck %s

// The te forms of operators added for the ONNX frontend: softmax subtracts the maximum
// (stable), layer_norm takes two passes (mean, then squared deviations), where selects
// lazily on an i1 tensor, gather casts integer indices and clamps them.

func.func @main(%x: tensor<2x5xf32>, %s: tensor<5xf32>, %c: tensor<2x5xi1>, %i: tensor<3xi64>) -> (tensor<2x5xf32>, tensor<2x5xf32>, tensor<2x5xf32>, tensor<2x3xf32>) {
  %sm = graph.softmax %x {axis = 1 : i64} : tensor<2x5xf32>
  %ln = graph.layer_norm %x, %s {axis = 1 : i64, epsilon = 1.0e-05 : f64} : (tensor<2x5xf32>, tensor<5xf32>) -> tensor<2x5xf32>
  %w = graph.where %c, %sm, %ln : (tensor<2x5xi1>, tensor<2x5xf32>, tensor<2x5xf32>) -> tensor<2x5xf32>
  %g = graph.gather %x, %i {axis = 1 : i64} : (tensor<2x5xf32>, tensor<3xi64>) -> tensor<2x3xf32>
  func.return %sm, %ln, %w, %g : tensor<2x5xf32>, tensor<2x5xf32>, tensor<2x5xf32>, tensor<2x3xf32>
}

// CHECK:      func.func @main(
// CHECK-NEXT:   %sm = func.call @softmax_0(%x)
// CHECK-NEXT:   %ln = func.call @layer_norm_0(%x, %s)
// CHECK-NEXT:   %w = func.call @where_0(%c, %sm, %ln)
// CHECK-NEXT:   %g = func.call @gather_0(%x, %i)

// CHECK:      func.func @softmax_0(%arg0: tensor<2x5xf32>) -> tensor<2x5xf32> attributes {xweave.kernel} {
// CHECK:        %softmax_max = te.compute (%i0, %i1) in [2, 1] reduce max (%k) in [5] {
// CHECK:        %softmax_exp = te.compute ({{.*}}) in [2, 5] {
// CHECK:          arith.subf
// CHECK:          math.exp
// CHECK:        %softmax_sum = te.compute ({{.*}}) in [2, 1] reduce sum ({{.*}}) in [5] {
// CHECK:        %softmax = te.compute ({{.*}}) in [2, 5] {
// CHECK:          arith.divf
// CHECK:        func.return %softmax : tensor<2x5xf32>

// CHECK:      func.func @layer_norm_0(%arg0: tensor<2x5xf32>, %arg1: tensor<5xf32>) -> tensor<2x5xf32> attributes {xweave.kernel} {
// CHECK:        %layer_norm_sum = te.compute (%i0, %i1) in [2, 1] reduce sum (%r1) in [5] {
// CHECK:        %layer_norm_mean = te.compute
// CHECK:        %layer_norm_sq = te.compute ({{.*}}) in [2, 1] reduce sum ({{.*}}) in [5] {
// CHECK:          te.extract %layer_norm_mean
// CHECK:          arith.subf
// CHECK:          arith.mulf
// CHECK:        %layer_norm_rstd = te.compute
// CHECK:          math.sqrt
// CHECK:        %layer_norm = te.compute ({{.*}}) in [2, 5] {

// CHECK:      func.func @where_0(%arg0: tensor<2x5xi1>, %arg1: tensor<2x5xf32>, %arg2: tensor<2x5xf32>) -> tensor<2x5xf32> attributes {xweave.kernel} {
// CHECK:          %[[COND:.*]] = te.extract %arg0[%i0, %i1] : tensor<2x5xi1>
// CHECK-NEXT:     %{{.*}} = te.if %[[COND]] -> f32 {

// CHECK:      func.func @gather_0(%arg0: tensor<2x5xf32>, %arg1: tensor<3xi64>) -> tensor<2x3xf32> attributes {xweave.kernel} {
// CHECK:          te.extract %arg1[%i1] : tensor<3xi64>
// CHECK:          arith.index_cast
// CHECK:          arith.maxsi
// CHECK:          arith.minsi
// CHECK:          te.extract %arg0[%i0, %{{.*}}] : tensor<2x5xf32>
