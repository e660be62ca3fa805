// RUN: xweave-opt %s -p 'graph-winograd{tile=2 min-channels=2 min-pixels=1 nchw=true}' | filecheck %s
// RUN: xweave-opt %s -p 'graph-winograd{tile=4 min-channels=4 min-pixels=1 nchw=true}' | filecheck %s --check-prefix=MIN4
// RUN: xweave-opt %s -p 'graph-winograd{tile=2 min-channels=2 min-pixels=1}' | filecheck %s --check-prefix=BLOCKED
// RUN: xweave-opt %s -p 'graph-winograd{tile=2 min-channels=2 min-pixels=26 nchw=true}' | filecheck %s --check-prefix=PIXELS

// graph-winograd: a 3x3 stride-1 conv with constant weights becomes input transform,
// products with the transformed weights (a constant) and output transform; its bias an
// add after it. Other convs are left alone.

// CHECK-LABEL: func.func @rewritten
// CHECK-NEXT:    %w = graph.constant
// CHECK-NEXT:    %b = graph.constant
// CHECK-NEXT:    %0 = graph.winograd_input_transform %x {tile = 2 : i64, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x2x5x5xf32>) -> tensor<16x9x2x1xf32>
// CHECK-NEXT:    %1 = graph.constant {{.*}} : tensor<16x2x1x3xf32>
// CHECK-NEXT:    %2 = graph.winograd_matmul %0, %1 : (tensor<16x9x2x1xf32>, tensor<16x2x1x3xf32>) -> tensor<16x9x3xf32>
// CHECK-NEXT:    %3 = graph.winograd_output_transform %2 {tile = 2 : i64} : (tensor<16x9x3xf32>) -> tensor<1x3x5x5xf32>
// CHECK-NEXT:    %4 = graph.constant dense<[{{\[\[}}1.000000e+00]], {{\[\[}}2.000000e+00]], {{\[\[}}3.000000e+00]]]> : tensor<3x1x1xf32>
// CHECK-NEXT:    %c = graph.add %3, %4 : (tensor<1x3x5x5xf32>, tensor<3x1x1xf32>) -> tensor<1x3x5x5xf32>
// CHECK-NEXT:    %r = graph.relu %c : tensor<1x3x5x5xf32>
// CHECK-NEXT:    func.return %r
// By default only channel-blocked convs are rewritten (NCHW transforms do not vectorize).
// BLOCKED-LABEL: func.func @rewritten
// BLOCKED-NOT:     winograd
// BLOCKED:         graph.conv2d
// BLOCKED-LABEL: func.func @blocked
// BLOCKED:         graph.winograd_input_transform
// Outputs of fewer than `min-pixels` pixels (here 5x5 and 4x4) stay direct convs.
// PIXELS-NOT:     winograd
// MIN4-LABEL: func.func @rewritten
// MIN4-NOT:     winograd
// MIN4:         graph.conv2d
func.func @rewritten(%x: tensor<1x2x5x5xf32>) -> tensor<1x3x5x5xf32> {
  %w = graph.constant dense<0.5> : tensor<3x2x3x3xf32>
  %b = graph.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
  %c = graph.conv2d %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x2x5x5xf32>, tensor<3x2x3x3xf32>, tensor<3xf32>) -> tensor<1x3x5x5xf32>
  %r = graph.relu %c : tensor<1x3x5x5xf32>
  func.return %r : tensor<1x3x5x5xf32>
}

// A blocked conv (NCHW2c data, OIHW2i2o weights) keeps its layout: the transforms read
// and write NCHW2c; the bias [O/2][2] broadcasts as [O/2, 1, 1, 2].
// CHECK-LABEL: func.func @blocked
// CHECK:         graph.winograd_input_transform %x {{.*}} : (tensor<1x1x4x4x2xf32>) -> tensor<16x4x1x2xf32>
// CHECK:         graph.winograd_matmul %{{.*}} : (tensor<16x4x1x2xf32>, tensor<16x1x2x2xf32>) -> tensor<16x4x2xf32>
// CHECK:         graph.winograd_output_transform %{{.*}} : (tensor<16x4x2xf32>) -> tensor<1x1x4x4x2xf32>
// CHECK:         graph.add %{{.*}}, %{{.*}} : (tensor<1x1x4x4x2xf32>, tensor<1x1x1x2xf32>) -> tensor<1x1x4x4x2xf32>
func.func @blocked(%x: tensor<1x1x4x4x2xf32>) -> tensor<1x1x4x4x2xf32> {
  %w = graph.constant dense<0.25> : tensor<1x1x3x3x2x2xf32>
  %b = graph.constant dense<[[1.0, 2.0]]> : tensor<1x2xf32>
  %c = graph.conv2d_nchwc %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x1x4x4x2xf32>, tensor<1x1x3x3x2x2xf32>, tensor<1x2xf32>) -> tensor<1x1x4x4x2xf32>
  func.return %c : tensor<1x1x4x4x2xf32>
}

// Left alone: 1x1, strided, grouped, dilated convs and weights computed at run time.
// CHECK-LABEL: func.func @untouched
// CHECK-NOT:     winograd
// CHECK-COUNT-5: graph.conv2d
// CHECK-NOT:     winograd
// CHECK:         func.return
func.func @untouched(%x: tensor<1x4x6x6xf32>, %wr: tensor<4x4x3x3xf32>) -> (tensor<1x4x6x6xf32>, tensor<1x4x3x3xf32>, tensor<1x4x6x6xf32>, tensor<1x4x4x4xf32>, tensor<1x4x6x6xf32>) {
  %w1 = graph.constant dense<0.5> : tensor<4x4x1x1xf32>
  %w3 = graph.constant dense<0.5> : tensor<4x4x3x3xf32>
  %wg = graph.constant dense<0.5> : tensor<4x2x3x3xf32>
  %a = graph.conv2d %x, %w1 {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x4x6x6xf32>, tensor<4x4x1x1xf32>) -> tensor<1x4x6x6xf32>
  %s = graph.conv2d %x, %w3 {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x4x6x6xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x3x3xf32>
  %g = graph.conv2d %x, %wg {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 2 : i64} : (tensor<1x4x6x6xf32>, tensor<4x2x3x3xf32>) -> tensor<1x4x6x6xf32>
  %d = graph.conv2d %x, %w3 {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 2, 2>, groups = 1 : i64} : (tensor<1x4x6x6xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x4x4xf32>
  %r = graph.conv2d %x, %wr {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x4x6x6xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x6x6xf32>
  func.return %a, %s, %g, %d, %r : tensor<1x4x6x6xf32>, tensor<1x4x3x3xf32>, tensor<1x4x6x6xf32>, tensor<1x4x4x4xf32>, tensor<1x4x6x6xf32>
}
