// RUN: xweave-opt %s -p convert-graph-to-te | filecheck %s

// The channel-blocked ops as tensor expressions: a layout transform reads the element
// it moves, conv2d_nchwc reduces over input-channel blocks, the kernel window and the
// lanes of a block (depthwise: the window only, same channel), pools keep the block
// as their last spatial axis.

func.func @main(%x: tensor<1x16x4x4xf32>, %w: tensor<1x1x3x3x16x8xf32>, %b: tensor<1x8xf32>, %d: tensor<1x1x3x3x1x16xf32>) -> (tensor<1x1x4x4x8xf32>, tensor<1x1x2x2x16xf32>, tensor<1x1x1x1x8xf32>) {
  %xb = graph.layout_transform %x {src_layout = "NCHW", dst_layout = "NCHW16c"} : tensor<1x16x4x4xf32> -> tensor<1x1x4x4x16xf32>
  %c = graph.conv2d_nchwc %xb, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x1x4x4x16xf32>, tensor<1x1x3x3x16x8xf32>, tensor<1x8xf32>) -> tensor<1x1x4x4x8xf32>
  %e = graph.conv2d_nchwc %xb, %d {strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 16 : i64} : (tensor<1x1x4x4x16xf32>, tensor<1x1x3x3x1x16xf32>) -> tensor<1x1x1x1x16xf32>
  %p = graph.max_pool2d %xb {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, ceil_mode = false, layout = "NCHW16c"} : tensor<1x1x4x4x16xf32> -> tensor<1x1x2x2x16xf32>
  %g = graph.global_avg_pool2d %c {layout = "NCHW8c"} : tensor<1x1x4x4x8xf32> -> tensor<1x1x1x1x8xf32>
  func.return %c, %p, %g : tensor<1x1x4x4x8xf32>, tensor<1x1x2x2x16xf32>, tensor<1x1x1x1x8xf32>
}

// CHECK-LABEL: func.func @layout_transform_0(%arg0: tensor<1x16x4x4xf32>) -> tensor<1x1x4x4x16xf32>
// CHECK:         te.compute (%i0, %i1, %i2, %i3, %i4) in [1, 1, 4, 4, 16] {
// CHECK:           %0 = arith.muli %i1, %c16 : index
// CHECK-NEXT:      %1 = arith.addi %0, %i4 : index
// CHECK-NEXT:      %2 = te.extract %arg0[%i0, %1, %i2, %i3] : tensor<1x16x4x4xf32>

// CHECK-LABEL: func.func @conv2d_nchwc_0(%arg0: tensor<1x1x4x4x16xf32>, %arg1: tensor<1x1x3x3x16x8xf32>, %arg2: tensor<1x8xf32>)
// CHECK:         %pad = te.compute (%i0, %i1, %i2, %i3, %i4) in [1, 1, 6, 6, 16] {
// CHECK:             te.extract %arg0[%i0, %i1, %8, %9, %i4] : tensor<1x1x4x4x16xf32>
// CHECK:         %conv2d_nchwc = te.compute (%n, %o, %y, %x, %b) in [1, 1, 4, 4, 8] reduce sum (%rc, %ry, %rx, %rb) in [1, 3, 3, 16] {
// CHECK:           te.extract %pad[%n, %rc, %11, %12, %rb] : tensor<1x1x6x6x16xf32>
// CHECK-NEXT:      te.extract %arg1[%o, %rc, %ry, %rx, %rb, %b] : tensor<1x1x3x3x16x8xf32>
// CHECK:         %bias_add = te.compute (%n_1, %o_1, %y_1, %x_1, %b_1) in [1, 1, 4, 4, 8] {
// CHECK:           te.extract %arg2[%o_1, %b_1] : tensor<1x8xf32>

// CHECK-LABEL: func.func @conv2d_nchwc_1(%arg0: tensor<1x1x4x4x16xf32>, %arg1: tensor<1x1x3x3x1x16xf32>)
// CHECK:         te.compute (%n, %o, %y, %x, %b) in [1, 1, 1, 1, 16] reduce sum (%ry, %rx) in [3, 3] {
// CHECK:           te.extract %arg0[%n, %o, %1, %3, %b] : tensor<1x1x4x4x16xf32>
// CHECK-NEXT:      te.extract %arg1[%o, %c0, %ry, %rx, %c0, %b] : tensor<1x1x3x3x1x16xf32>

// CHECK-LABEL: func.func @max_pool2d_0(%arg0: tensor<1x1x4x4x16xf32>) -> tensor<1x1x2x2x16xf32>
// CHECK:         te.compute (%n, %c, %y, %xx, %b0) in [1, 1, 2, 2, 16] reduce max (%ry, %rx) in [2, 2] {
// CHECK:             te.extract %arg0[%n, %c, %1, %5, %b0] : tensor<1x1x4x4x16xf32>

// CHECK-LABEL: func.func @global_avg_pool2d_0(%arg0: tensor<1x1x4x4x8xf32>) -> tensor<1x1x1x1x8xf32>
// CHECK:         %global_sum = te.compute (%i, %j, %_y, %_x, %b0) in [1, 1, 1, 1, 8] reduce sum (%ry, %rx) in [4, 4] {
// CHECK-NEXT:      te.extract %arg0[%i, %j, %ry, %rx, %b0] : tensor<1x1x4x4x8xf32>
