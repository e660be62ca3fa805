// RUN: xweave-opt %s -p convert-graph-to-te | filecheck %s

// A graph.fused group becomes one kernel whose stages are the computes of its ops in
// order, each reading the tensor of the op before it; equal groups share one kernel,
// groups that differ in one op do not.

func.func @main(%x: tensor<2x8xf32>, %b: tensor<4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>) {
  %w = graph.constant dense<0.5> : tensor<4x8xf32>
  %y = graph.fused (%a = %x, %ww = %w, %bb = %b) : (tensor<2x8xf32>, tensor<4x8xf32>, tensor<4xf32>) -> tensor<2x4xf32> {
    %d = graph.dense %a, %ww : (tensor<2x8xf32>, tensor<4x8xf32>) -> tensor<2x4xf32>
    %s = graph.add %d, %bb : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
    %r = graph.relu %s : tensor<2x4xf32>
    graph.yield %r : tensor<2x4xf32>
  }
  %z = graph.fused (%a = %x, %ww = %w, %bb = %b) : (tensor<2x8xf32>, tensor<4x8xf32>, tensor<4xf32>) -> tensor<2x4xf32> {
    %d = graph.dense %a, %ww : (tensor<2x8xf32>, tensor<4x8xf32>) -> tensor<2x4xf32>
    %s = graph.add %d, %bb : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
    %r = graph.relu %s : tensor<2x4xf32>
    graph.yield %r : tensor<2x4xf32>
  }
  %u = graph.fused (%a = %x, %ww = %w, %bb = %b) : (tensor<2x8xf32>, tensor<4x8xf32>, tensor<4xf32>) -> tensor<2x4xf32> {
    %d = graph.dense %a, %ww : (tensor<2x8xf32>, tensor<4x8xf32>) -> tensor<2x4xf32>
    %s = graph.add %d, %bb : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
    %r = graph.sigmoid %s : tensor<2x4xf32>
    graph.yield %r : tensor<2x4xf32>
  }
  func.return %y, %z, %u : tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>
}

// CHECK:      func.func @main(%x: tensor<2x8xf32>, %b: tensor<4xf32>)
// CHECK-NEXT:   %w = graph.constant
// CHECK-NEXT:   %y = func.call @fused_dense_add_relu_0(%x, %w, %b) : (tensor<2x8xf32>, tensor<4x8xf32>, tensor<4xf32>) -> tensor<2x4xf32>
// CHECK-NEXT:   %z = func.call @fused_dense_add_relu_0(%x, %w, %b)
// CHECK-NEXT:   %u = func.call @fused_dense_add_sigmoid_0(%x, %w, %b)
// CHECK-NEXT:   func.return %y, %z, %u

// CHECK:      func.func @fused_dense_add_relu_0(%arg0: tensor<2x8xf32>, %arg1: tensor<4x8xf32>, %arg2: tensor<4xf32>) -> tensor<2x4xf32> attributes {xweave.kernel} {
// CHECK-NEXT:   %dense = te.compute (%i, %j) in [2, 4] reduce sum (%k) in [8] {
// CHECK:          te.extract %arg0[%i, %k]
// CHECK:          te.extract %arg1[%j, %k]
// CHECK:        } {name = "dense"} : tensor<2x4xf32>
// CHECK-NEXT:   %add = te.compute
// CHECK:          te.extract %dense
// CHECK:          te.extract %arg2
// CHECK:        } {name = "add"} : tensor<2x4xf32>
// CHECK-NEXT:   %relu = te.compute
// CHECK:          te.extract %add
// CHECK:          arith.maximumf
// CHECK:        } {name = "relu"} : tensor<2x4xf32>
// CHECK-NEXT:   func.return %relu : tensor<2x4xf32>
// CHECK-NEXT: }
// CHECK-NOT:  func.func @fused_dense_add_relu_1
// CHECK:      func.func @fused_dense_add_sigmoid_0
