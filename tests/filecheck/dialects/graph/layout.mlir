// RUN: xweave-opt %s | xweave-opt | filecheck %s
// RUN: XWEAVE_ROUNDTRIP

// Channel-blocked ops: graph.layout_transform, graph.conv2d_nchwc and pools with a
// `layout` (the default "NCHW" is not printed).

// CHECK-LABEL: func.func @blocked
// CHECK-NEXT:    %xb = graph.layout_transform %x {src_layout = "NCHW", dst_layout = "NCHW16c"} : tensor<1x32x8x8xf32> -> tensor<1x2x8x8x16xf32>
// CHECK-NEXT:    %wb = graph.layout_transform %w {src_layout = "OIHW", dst_layout = "OIHW16i8o"} : tensor<24x32x3x3xf32> -> tensor<3x2x3x3x16x8xf32>
// CHECK-NEXT:    %c = graph.conv2d_nchwc %xb, %wb, %b {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x2x8x8x16xf32>, tensor<3x2x3x3x16x8xf32>, tensor<3x8xf32>) -> tensor<1x3x8x8x8xf32>
// CHECK-NEXT:    %d = graph.conv2d_nchwc %xb, %dw {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 32 : i64} : (tensor<1x2x8x8x16xf32>, tensor<2x1x3x3x1x16xf32>) -> tensor<1x2x4x4x16xf32>
// CHECK-NEXT:    %k = graph.conv2d_nchwc %xb, %gw {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 2 : i64} : (tensor<1x2x8x8x16xf32>, tensor<2x1x3x3x16x16xf32>) -> tensor<1x2x8x8x16xf32>
// CHECK-NEXT:    %p = graph.max_pool2d %c {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, ceil_mode = false, layout = "NCHW8c"} : tensor<1x3x8x8x8xf32> -> tensor<1x3x4x4x8xf32>
// CHECK-NEXT:    %a = graph.avg_pool2d %d {kernel = array<i64: 3, 3>, strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, ceil_mode = false, count_include_pad = false, layout = "NCHW16c"} : tensor<1x2x4x4x16xf32> -> tensor<1x2x4x4x16xf32>
// CHECK-NEXT:    %g = graph.global_avg_pool2d %p {layout = "NCHW8c"} : tensor<1x3x4x4x8xf32> -> tensor<1x3x1x1x8xf32>
// CHECK-NEXT:    %m = graph.global_max_pool2d %x : tensor<1x32x8x8xf32> -> tensor<1x32x1x1xf32>
// CHECK-NEXT:    %y = graph.layout_transform %g {src_layout = "NCHW8c", dst_layout = "NCHW"} : tensor<1x3x1x1x8xf32> -> tensor<1x24x1x1xf32>
func.func @blocked(%x: tensor<1x32x8x8xf32>, %w: tensor<24x32x3x3xf32>, %b: tensor<3x8xf32>,
                   %dw: tensor<2x1x3x3x1x16xf32>, %gw: tensor<2x1x3x3x16x16xf32>) -> tensor<1x24x1x1xf32> {
  %xb = graph.layout_transform %x {src_layout = "NCHW", dst_layout = "NCHW16c"} : tensor<1x32x8x8xf32> -> tensor<1x2x8x8x16xf32>
  %wb = graph.layout_transform %w {src_layout = "OIHW", dst_layout = "OIHW16i8o"} : tensor<24x32x3x3xf32> -> tensor<3x2x3x3x16x8xf32>
  %c = graph.conv2d_nchwc %xb, %wb, %b {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x2x8x8x16xf32>, tensor<3x2x3x3x16x8xf32>, tensor<3x8xf32>) -> tensor<1x3x8x8x8xf32>
  %d = graph.conv2d_nchwc %xb, %dw {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 32 : i64} : (tensor<1x2x8x8x16xf32>, tensor<2x1x3x3x1x16xf32>) -> tensor<1x2x4x4x16xf32>
  %k = graph.conv2d_nchwc %xb, %gw {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 2 : i64} : (tensor<1x2x8x8x16xf32>, tensor<2x1x3x3x16x16xf32>) -> tensor<1x2x8x8x16xf32>
  %p = graph.max_pool2d %c {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, ceil_mode = false, layout = "NCHW8c"} : tensor<1x3x8x8x8xf32> -> tensor<1x3x4x4x8xf32>
  %a = graph.avg_pool2d %d {kernel = array<i64: 3, 3>, strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, ceil_mode = false, count_include_pad = false, layout = "NCHW16c"} : tensor<1x2x4x4x16xf32> -> tensor<1x2x4x4x16xf32>
  %g = graph.global_avg_pool2d %p {layout = "NCHW8c"} : tensor<1x3x4x4x8xf32> -> tensor<1x3x1x1x8xf32>
  %m = graph.global_max_pool2d %x {layout = "NCHW"} : tensor<1x32x8x8xf32> -> tensor<1x32x1x1xf32>
  %y = graph.layout_transform %g {src_layout = "NCHW8c", dst_layout = "NCHW"} : tensor<1x3x1x1x8xf32> -> tensor<1x24x1x1xf32>
  func.return %y : tensor<1x24x1x1xf32>
}
