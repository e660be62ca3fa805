// RUN: xweave-opt %s --split-input-file --verify-diagnostics | filecheck %s

%x = "test.op"() : () -> tensor<1x32x8x8xf32>
%y = graph.layout_transform %x {src_layout = "NCHW", dst_layout = "NCHW16"} : tensor<1x32x8x8xf32> -> tensor<1x2x8x8x16xf32>
// CHECK: graph.layout_transform: layout 'NCHW16': expected letters such as NCHW or NCHW16c

// -----

%x = "test.op"() : () -> tensor<1x24x8x8xf32>
%y = graph.layout_transform %x {src_layout = "NCHW", dst_layout = "NCHW16c"} : tensor<1x24x8x8xf32> -> tensor<1x2x8x8x16xf32>
// CHECK: graph.layout_transform: axis C of extent 24 does not split into blocks of 16

// -----

%x = "test.op"() : () -> tensor<1x32x8x8xf32>
%y = graph.layout_transform %x {src_layout = "NCHW", dst_layout = "OIHW"} : tensor<1x32x8x8xf32> -> tensor<1x32x8x8xf32>
// CHECK: graph.layout_transform: layouts NCHW and OIHW have different axes

// -----

%x = "test.op"() : () -> tensor<1x32x8x8xf32>
%y = graph.layout_transform %x {src_layout = "NCHW", dst_layout = "NCHW16c"} : tensor<1x32x8x8xf32> -> tensor<1x32x8x8xf32>
// CHECK: graph.layout_transform: expected result shape [1, 2, 8, 8, 16] but got [1, 32, 8, 8]

// -----

%x, %w = "test.op"() : () -> (tensor<1x2x8x8x16xf32>, tensor<3x4x3x3x8x8xf32>)
%y = graph.conv2d_nchwc %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x2x8x8x16xf32>, tensor<3x4x3x3x8x8xf32>) -> tensor<1x3x8x8x8xf32>
// CHECK: graph.conv2d_nchwc: weight blocks input channels as [4][..][8] but the input has [2][..][16]

// -----

%x, %w = "test.op"() : () -> (tensor<1x2x8x8x16xf32>, tensor<2x1x3x3x1x16xf32>)
%y = graph.conv2d_nchwc %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 4 : i64} : (tensor<1x2x8x8x16xf32>, tensor<2x1x3x3x1x16xf32>) -> tensor<1x2x8x8x16xf32>
// CHECK: graph.conv2d_nchwc: expected groups 1, 2 (one per channel block) or 32 (depthwise) but got 4

// -----

// One group per channel block: the weight is [blocks][1][KH][KW][ci][co] with co = ci.
%x, %w = "test.op"() : () -> (tensor<1x2x8x8x16xf32>, tensor<2x1x3x3x8x16xf32>)
%y = graph.conv2d_nchwc %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 2 : i64} : (tensor<1x2x8x8x16xf32>, tensor<2x1x3x3x8x16xf32>) -> tensor<1x2x8x8x16xf32>
// CHECK: graph.conv2d_nchwc: one group per channel block (2 groups) expects weight [2][1][KH][KW][16][16] but got [2, 1, 3, 3, 8, 16]

// -----

%x, %w = "test.op"() : () -> (tensor<1x2x8x8x16xf32>, tensor<4x1x3x3x1x8xf32>)
%y = graph.conv2d_nchwc %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 32 : i64} : (tensor<1x2x8x8x16xf32>, tensor<4x1x3x3x1x8xf32>) -> tensor<1x4x8x8x8xf32>
// CHECK: graph.conv2d_nchwc: depthwise (32 groups) expects weight [2][1][KH][KW][1][16] but got [4, 1, 3, 3, 1, 8]

// -----

%x, %w, %b = "test.op"() : () -> (tensor<1x2x8x8x16xf32>, tensor<3x2x3x3x16x8xf32>, tensor<24xf32>)
%y = graph.conv2d_nchwc %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x2x8x8x16xf32>, tensor<3x2x3x3x16x8xf32>, tensor<24xf32>) -> tensor<1x3x8x8x8xf32>
// CHECK: graph.conv2d_nchwc: expected bias shape [3, 8] but got [24]

// -----

%x, %w = "test.op"() : () -> (tensor<1x2x8x8x16xf32>, tensor<3x2x3x3x16x8xf32>)
%y = graph.conv2d_nchwc %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x2x8x8x16xf32>, tensor<3x2x3x3x16x8xf32>) -> tensor<1x3x8x8x8xf32>
// CHECK: graph.conv2d_nchwc: expected result shape [1, 3, 6, 6, 8] but got [1, 3, 8, 8, 8]

// -----

%x = "test.op"() : () -> tensor<1x2x8x8x16xf32>
%y = graph.max_pool2d %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, ceil_mode = false, layout = "NHWC"} : tensor<1x2x8x8x16xf32> -> tensor<1x2x4x4x16xf32>
// CHECK: graph.max_pool2d: expected layout "NCHW" or "NCHW<k>c" but got "NHWC"

// -----

%x = "test.op"() : () -> tensor<1x2x8x8x16xf32>
%y = graph.global_avg_pool2d %x {layout = "NCHW8c"} : tensor<1x2x8x8x16xf32> -> tensor<1x2x1x1x16xf32>
// CHECK: graph.global_avg_pool2d: layout NCHW8c needs a last dimension of 8 but got tensor<1x2x8x8x16xf32>

// -----

%x = "test.op"() : () -> tensor<1x2x8x8x16xf32>
%y = graph.global_avg_pool2d %x : tensor<1x2x8x8x16xf32> -> tensor<1x2x1x1x16xf32>
// CHECK: graph.global_avg_pool2d: expected input of rank 4 but got tensor<1x2x8x8x16xf32>
