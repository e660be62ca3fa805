// RUN: xweave-opt %s -p convert-graph-to-te | filecheck %s

// Every graph op but constants becomes a call of a te kernel; equal ops share one
// kernel; constants and function attributes stay in @main.

func.func @main(%x: tensor<1x2x4x4xf32>, %b: tensor<2xf32>) -> (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) attributes {xweave.input_names = ["x", "b"], xweave.output_names = ["y", "z"]} {
  %w = graph.constant dense<1.0> : tensor<2x1x3x3xf32>
  %c = graph.conv2d %x, %w, %b {dilations = array<i64: 1, 1>, groups = 2 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x2x4x4xf32>, tensor<2x1x3x3xf32>, tensor<2xf32>) -> tensor<1x2x4x4xf32>
  %r = graph.relu %c : tensor<1x2x4x4xf32>
  %r2 = graph.relu %x : tensor<1x2x4x4xf32>
  func.return %r, %r2 : tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>
}

// CHECK:      func.func @main(%x: tensor<1x2x4x4xf32>, %b: tensor<2xf32>) -> (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) attributes {xweave.input_names = ["x", "b"], xweave.output_names = ["y", "z"]} {
// CHECK-NEXT:   %w = graph.constant dense<1.000000e+00> : tensor<2x1x3x3xf32>
// CHECK-NEXT:   %c = func.call @conv2d_0(%x, %w, %b) : (tensor<1x2x4x4xf32>, tensor<2x1x3x3xf32>, tensor<2xf32>) -> tensor<1x2x4x4xf32>
// CHECK-NEXT:   %r = func.call @relu_0(%c) : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
// CHECK-NEXT:   %r2 = func.call @relu_0(%x) : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
// CHECK-NEXT:   func.return %r, %r2

// The conv kernel: a padding stage (lazy te.if), the reduction, the bias epilogue.
// CHECK:      func.func @conv2d_0(%arg0: tensor<1x2x4x4xf32>, %arg1: tensor<2x1x3x3xf32>, %arg2: tensor<2xf32>) -> tensor<1x2x4x4xf32> attributes {xweave.kernel} {
// CHECK:        %pad = te.compute (%i0, %i1, %i2, %i3) in [1, 2, 6, 6] {
// CHECK:          te.if
// CHECK:          te.extract %arg0
// CHECK:        } {name = "pad"} : tensor<1x2x6x6xf32>
// CHECK:        %conv2d = te.compute (%n, %o, %y, %x) in [1, 2, 4, 4] reduce sum (%rc, %ry, %rx) in [1, 3, 3] {
// CHECK:          %{{.*}} = arith.addi %o, %rc : index
// CHECK:          te.extract %pad
// CHECK:          te.extract %arg1[%o, %rc, %ry, %rx]
// CHECK:        } {name = "conv2d"} : tensor<1x2x4x4xf32>
// CHECK:        %bias_add = te.compute
// CHECK:        func.return %bias_add : tensor<1x2x4x4xf32>

// Only one relu kernel for the two equal relus.
// CHECK:      func.func @relu_0(%arg0: tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> attributes {xweave.kernel} {
// CHECK:        arith.maximumf
// CHECK-NOT:  func.func @relu_1

