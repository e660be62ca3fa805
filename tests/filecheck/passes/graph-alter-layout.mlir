// RUN: xweave-opt %s -p graph-alter-layout | filecheck %s
// RUN: xweave-opt %s -p 'graph-alter-layout{block=8}' | filecheck %s --check-prefix=B8

// graph-alter-layout: convs on channel-blocked NCHW<k>c data, the blocked layout
// propagated through elementwise ops, pools and channel concats, NCHW only where a
// consumer needs it.

// A residual block: the first conv's 3 channels make one block (NCHW3c), its output
// block of 16 flows through relu, the next conv (no transform pair in between), the
// residual add and both pools; only the reshape needs NCHW again. Weights and bias
// get transforms (constants: graph-fold-constants evaluates them at compile time).
// CHECK-LABEL: func.func @residual
// CHECK-NEXT:    %0 = graph.layout_transform %x {src_layout = "NCHW", dst_layout = "NCHW3c"} : tensor<1x3x8x8xf32> -> tensor<1x1x8x8x3xf32>
// CHECK-NEXT:    %1 = graph.layout_transform %w1 {src_layout = "OIHW", dst_layout = "OIHW3i16o"} : tensor<16x3x3x3xf32> -> tensor<1x1x3x3x3x16xf32>
// CHECK-NEXT:    %2 = graph.reshape %b1 : tensor<16xf32> -> tensor<1x16xf32>
// CHECK-NEXT:    %3 = graph.conv2d_nchwc %0, %1, %2 {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x1x8x8x3xf32>, tensor<1x1x3x3x3x16xf32>, tensor<1x16xf32>) -> tensor<1x1x8x8x16xf32>
// CHECK-NEXT:    %4 = graph.relu %3 : tensor<1x1x8x8x16xf32>
// CHECK-NEXT:    %5 = graph.layout_transform %w2 {src_layout = "OIHW", dst_layout = "OIHW16i16o"} : tensor<16x16x1x1xf32> -> tensor<1x1x1x1x16x16xf32>
// CHECK-NEXT:    %6 = graph.conv2d_nchwc %4, %5 {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x1x8x8x16xf32>, tensor<1x1x1x1x16x16xf32>) -> tensor<1x1x8x8x16xf32>
// CHECK-NEXT:    %7 = graph.add %6, %4 : (tensor<1x1x8x8x16xf32>, tensor<1x1x8x8x16xf32>) -> tensor<1x1x8x8x16xf32>
// CHECK-NEXT:    %8 = graph.max_pool2d %7 {dilations = array<i64: 1, 1>, kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, ceil_mode = false, layout = "NCHW16c"} : tensor<1x1x8x8x16xf32> -> tensor<1x1x4x4x16xf32>
// CHECK-NEXT:    %9 = graph.global_avg_pool2d %8 {layout = "NCHW16c"} : tensor<1x1x4x4x16xf32> -> tensor<1x1x1x1x16xf32>
// CHECK-NEXT:    %g = graph.layout_transform %9 {src_layout = "NCHW16c", dst_layout = "NCHW"} : tensor<1x1x1x1x16xf32> -> tensor<1x16x1x1xf32>
// CHECK-NEXT:    %y = graph.reshape %g : tensor<1x16x1x1xf32> -> tensor<1x16xf32>
// CHECK-NEXT:    func.return %y : tensor<1x16xf32>
// B8-LABEL: func.func @residual
// B8:          graph.layout_transform %x {src_layout = "NCHW", dst_layout = "NCHW3c"}
// B8:          graph.layout_transform %w1 {src_layout = "OIHW", dst_layout = "OIHW3i8o"}
// B8:          graph.conv2d_nchwc {{.*}} -> tensor<1x2x8x8x8xf32>
// B8:          graph.layout_transform %w2 {src_layout = "OIHW", dst_layout = "OIHW8i8o"}
func.func @residual(%x: tensor<1x3x8x8xf32>, %w1: tensor<16x3x3x3xf32>, %b1: tensor<16xf32>, %w2: tensor<16x16x1x1xf32>) -> tensor<1x16xf32> {
  %c1 = graph.conv2d %x, %w1, %b1 {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x3x8x8xf32>, tensor<16x3x3x3xf32>, tensor<16xf32>) -> tensor<1x16x8x8xf32>
  %r1 = graph.relu %c1 : tensor<1x16x8x8xf32>
  %c2 = graph.conv2d %r1, %w2 {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x16x8x8xf32>, tensor<16x16x1x1xf32>) -> tensor<1x16x8x8xf32>
  %a = graph.add %c2, %r1 : (tensor<1x16x8x8xf32>, tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32>
  %p = graph.max_pool2d %a {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, ceil_mode = false} : tensor<1x16x8x8xf32> -> tensor<1x16x4x4xf32>
  %g = graph.global_avg_pool2d %p : tensor<1x16x4x4xf32> -> tensor<1x16x1x1xf32>
  %y = graph.reshape %g : tensor<1x16x1x1xf32> -> tensor<1x16xf32>
  func.return %y : tensor<1x16xf32>
}

// 8 output channels: blocks of 8. A per-channel [C, 1, 1] operand is blocked
// ([C/8, 1, 1, 8], through rank 4); an operand without channels ([H, W]) gets a
// trailing 1; a scalar-like one broadcasts as it is.
// CHECK-LABEL: func.func @per_channel
// CHECK-NEXT:    %0 = graph.layout_transform %x {src_layout = "NCHW", dst_layout = "NCHW8c"} : tensor<1x8x4x4xf32> -> tensor<1x1x4x4x8xf32>
// CHECK-NEXT:    %1 = graph.layout_transform %w {src_layout = "OIHW", dst_layout = "OIHW8i8o"} : tensor<8x8x1x1xf32> -> tensor<1x1x1x1x8x8xf32>
// CHECK-NEXT:    %2 = graph.conv2d_nchwc %0, %1 {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x1x4x4x8xf32>, tensor<1x1x1x1x8x8xf32>) -> tensor<1x1x4x4x8xf32>
// CHECK-NEXT:    %3 = graph.reshape %s : tensor<8x1x1xf32> -> tensor<1x8x1x1xf32>
// CHECK-NEXT:    %4 = graph.layout_transform %3 {src_layout = "NCHW", dst_layout = "NCHW8c"} : tensor<1x8x1x1xf32> -> tensor<1x1x1x1x8xf32>
// CHECK-NEXT:    %5 = graph.reshape %4 : tensor<1x1x1x1x8xf32> -> tensor<1x1x1x8xf32>
// CHECK-NEXT:    %6 = graph.mul %2, %5 : (tensor<1x1x4x4x8xf32>, tensor<1x1x1x8xf32>) -> tensor<1x1x4x4x8xf32>
// CHECK-NEXT:    %7 = graph.reshape %m : tensor<4x4xf32> -> tensor<4x4x1xf32>
// CHECK-NEXT:    %8 = graph.add %6, %7 : (tensor<1x1x4x4x8xf32>, tensor<4x4x1xf32>) -> tensor<1x1x4x4x8xf32>
// CHECK-NEXT:    %9 = graph.sub %8, %k : (tensor<1x1x4x4x8xf32>, tensor<1xf32>) -> tensor<1x1x4x4x8xf32>
// CHECK-NEXT:    %10 = graph.layout_transform %w2 {src_layout = "OIHW", dst_layout = "OIHW8i16o"} : tensor<16x8x1x1xf32> -> tensor<1x1x1x1x8x16xf32>
// CHECK-NEXT:    %11 = graph.conv2d_nchwc %9, %10 {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x1x4x4x8xf32>, tensor<1x1x1x1x8x16xf32>) -> tensor<1x1x4x4x16xf32>
// CHECK-NEXT:    %y = graph.layout_transform %11 {src_layout = "NCHW16c", dst_layout = "NCHW"} : tensor<1x1x4x4x16xf32> -> tensor<1x16x4x4xf32>
// CHECK-NEXT:    func.return %y : tensor<1x16x4x4xf32>
func.func @per_channel(%x: tensor<1x8x4x4xf32>, %w: tensor<8x8x1x1xf32>, %s: tensor<8x1x1xf32>, %m: tensor<4x4xf32>, %k: tensor<1xf32>, %w2: tensor<16x8x1x1xf32>) -> tensor<1x16x4x4xf32> {
  %c = graph.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x8x4x4xf32>, tensor<8x8x1x1xf32>) -> tensor<1x8x4x4xf32>
  %a = graph.mul %c, %s : (tensor<1x8x4x4xf32>, tensor<8x1x1xf32>) -> tensor<1x8x4x4xf32>
  %b = graph.add %a, %m : (tensor<1x8x4x4xf32>, tensor<4x4xf32>) -> tensor<1x8x4x4xf32>
  %u = graph.sub %b, %k : (tensor<1x8x4x4xf32>, tensor<1xf32>) -> tensor<1x8x4x4xf32>
  %y = graph.conv2d %u, %w2 {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x8x4x4xf32>, tensor<16x8x1x1xf32>) -> tensor<1x16x4x4xf32>
  func.return %y : tensor<1x16x4x4xf32>
}

// A last conv whose channels only split into blocks of 8 (24) reads its blocked input
// back in NCHW and stays NCHW; the conv before it still runs blocked.
// CHECK-LABEL: func.func @fallback_last
// CHECK:         %2 = graph.conv2d_nchwc %0, %1 {{.*}} -> tensor<1x1x4x4x16xf32>
// CHECK:         %4 = graph.conv2d_nchwc %2, %3 {{.*}} -> tensor<1x1x4x4x16xf32>
// CHECK-NEXT:    %b = graph.layout_transform %4 {src_layout = "NCHW16c", dst_layout = "NCHW"}
// CHECK-NEXT:    %y = graph.conv2d %b, %w3 {{.*}} -> tensor<1x24x4x4xf32>
// CHECK-NEXT:    func.return %y
func.func @fallback_last(%x: tensor<1x16x4x4xf32>, %w: tensor<16x16x1x1xf32>, %w3: tensor<24x16x1x1xf32>) -> tensor<1x24x4x4xf32> {
  %a = graph.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x16x4x4xf32>, tensor<16x16x1x1xf32>) -> tensor<1x16x4x4xf32>
  %b = graph.conv2d %a, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x16x4x4xf32>, tensor<16x16x1x1xf32>) -> tensor<1x16x4x4xf32>
  %y = graph.conv2d %b, %w3 {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x16x4x4xf32>, tensor<24x16x1x1xf32>) -> tensor<1x24x4x4xf32>
  func.return %y : tensor<1x24x4x4xf32>
}

// A depthwise conv keeps its producer's block (weight OIHW1i16o); a concat of blocked
// inputs along the channels stays blocked; one along H reads both inputs in NCHW.
// CHECK-LABEL: func.func @depthwise_concat
// CHECK-NEXT:    %0 = graph.layout_transform %x {src_layout = "NCHW", dst_layout = "NCHW16c"} : tensor<1x16x4x4xf32> -> tensor<1x1x4x4x16xf32>
// CHECK-NEXT:    %1 = graph.layout_transform %w {src_layout = "OIHW", dst_layout = "OIHW16i16o"} : tensor<16x16x1x1xf32> -> tensor<1x1x1x1x16x16xf32>
// CHECK-NEXT:    %2 = graph.conv2d_nchwc %0, %1 {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x1x4x4x16xf32>, tensor<1x1x1x1x16x16xf32>) -> tensor<1x1x4x4x16xf32>
// CHECK-NEXT:    %c = graph.layout_transform %2 {src_layout = "NCHW16c", dst_layout = "NCHW"} : tensor<1x1x4x4x16xf32> -> tensor<1x16x4x4xf32>
// CHECK-NEXT:    %3 = graph.layout_transform %d {src_layout = "OIHW", dst_layout = "OIHW1i16o"} : tensor<16x1x3x3xf32> -> tensor<1x1x3x3x1x16xf32>
// CHECK-NEXT:    %4 = graph.conv2d_nchwc %2, %3 {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 16 : i64} : (tensor<1x1x4x4x16xf32>, tensor<1x1x3x3x1x16xf32>) -> tensor<1x1x4x4x16xf32>
// CHECK-NEXT:    %e = graph.layout_transform %4 {src_layout = "NCHW16c", dst_layout = "NCHW"} : tensor<1x1x4x4x16xf32> -> tensor<1x16x4x4xf32>
// CHECK-NEXT:    %5 = graph.concat %2, %4 {axis = 1 : i64} : (tensor<1x1x4x4x16xf32>, tensor<1x1x4x4x16xf32>) -> tensor<1x2x4x4x16xf32>
// CHECK-NEXT:    %k = graph.layout_transform %5 {src_layout = "NCHW16c", dst_layout = "NCHW"} : tensor<1x2x4x4x16xf32> -> tensor<1x32x4x4xf32>
// CHECK-NEXT:    %h = graph.concat %c, %e {axis = 2 : i64} : (tensor<1x16x4x4xf32>, tensor<1x16x4x4xf32>) -> tensor<1x16x8x4xf32>
// CHECK-NEXT:    func.return %k, %h : tensor<1x32x4x4xf32>, tensor<1x16x8x4xf32>
func.func @depthwise_concat(%x: tensor<1x16x4x4xf32>, %w: tensor<16x16x1x1xf32>, %d: tensor<16x1x3x3xf32>) -> (tensor<1x32x4x4xf32>, tensor<1x16x8x4xf32>) {
  %c = graph.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x16x4x4xf32>, tensor<16x16x1x1xf32>) -> tensor<1x16x4x4xf32>
  %e = graph.conv2d %c, %d {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 16 : i64} : (tensor<1x16x4x4xf32>, tensor<16x1x3x3xf32>) -> tensor<1x16x4x4xf32>
  %k = graph.concat %c, %e {axis = 1 : i64} : (tensor<1x16x4x4xf32>, tensor<1x16x4x4xf32>) -> tensor<1x32x4x4xf32>
  %h = graph.concat %c, %e {axis = 2 : i64} : (tensor<1x16x4x4xf32>, tensor<1x16x4x4xf32>) -> tensor<1x16x8x4xf32>
  func.return %k, %h : tensor<1x32x4x4xf32>, tensor<1x16x8x4xf32>
}

// Left alone: 5 output channels (no block of 8 or 16), a grouped conv that is not
// depthwise, and a conv between NCHW producer and consumers (its blocked output
// would reach no other conv: two transforms for nothing).
// CHECK-LABEL: func.func @left_alone
// CHECK-NEXT:    %c = graph.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x8x4x4xf32>, tensor<5x8x1x1xf32>) -> tensor<1x5x4x4xf32>
// CHECK-NEXT:    %r = graph.relu %c : tensor<1x5x4x4xf32>
// CHECK-NEXT:    %d = graph.conv2d %x, %g {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 2 : i64} : (tensor<1x8x4x4xf32>, tensor<8x4x1x1xf32>) -> tensor<1x8x4x4xf32>
// CHECK-NEXT:    %v1 = graph.conv2d %x, %v {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x8x4x4xf32>, tensor<16x8x1x1xf32>) -> tensor<1x16x4x4xf32>
// CHECK-NEXT:    %v2 = graph.relu %v1 : tensor<1x16x4x4xf32>
// CHECK-NEXT:    func.return %r, %d, %v2 : tensor<1x5x4x4xf32>, tensor<1x8x4x4xf32>, tensor<1x16x4x4xf32>
func.func @left_alone(%x: tensor<1x8x4x4xf32>, %w: tensor<5x8x1x1xf32>, %g: tensor<8x4x1x1xf32>, %v: tensor<16x8x1x1xf32>) -> (tensor<1x5x4x4xf32>, tensor<1x8x4x4xf32>, tensor<1x16x4x4xf32>) {
  %c = graph.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x8x4x4xf32>, tensor<5x8x1x1xf32>) -> tensor<1x5x4x4xf32>
  %r = graph.relu %c : tensor<1x5x4x4xf32>
  %d = graph.conv2d %x, %g {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 2 : i64} : (tensor<1x8x4x4xf32>, tensor<8x4x1x1xf32>) -> tensor<1x8x4x4xf32>
  %v1 = graph.conv2d %x, %v {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x8x4x4xf32>, tensor<16x8x1x1xf32>) -> tensor<1x16x4x4xf32>
  %v2 = graph.relu %v1 : tensor<1x16x4x4xf32>
  func.return %r, %d, %v2 : tensor<1x5x4x4xf32>, tensor<1x8x4x4xf32>, tensor<1x16x4x4xf32>
}

// A transform back to where a value came from cancels, two transforms become one,
// a transform to the same layout vanishes.
// CHECK-LABEL: func.func @cancel
// CHECK-NEXT:    %c = graph.layout_transform %x {src_layout = "NCHW", dst_layout = "NCHW4c"} : tensor<1x16x4x4xf32> -> tensor<1x4x4x4x4xf32>
// CHECK-NEXT:    func.return %x, %c : tensor<1x16x4x4xf32>, tensor<1x4x4x4x4xf32>
func.func @cancel(%x: tensor<1x16x4x4xf32>) -> (tensor<1x16x4x4xf32>, tensor<1x4x4x4x4xf32>) {
  %a = graph.layout_transform %x {src_layout = "NCHW", dst_layout = "NCHW16c"} : tensor<1x16x4x4xf32> -> tensor<1x1x4x4x16xf32>
  %b = graph.layout_transform %a {src_layout = "NCHW16c", dst_layout = "NCHW"} : tensor<1x1x4x4x16xf32> -> tensor<1x16x4x4xf32>
  %c = graph.layout_transform %a {src_layout = "NCHW16c", dst_layout = "NCHW4c"} : tensor<1x1x4x4x16xf32> -> tensor<1x4x4x4x4xf32>
  %i = graph.layout_transform %c {src_layout = "NCHW4c", dst_layout = "NCHW4c"} : tensor<1x4x4x4x4xf32> -> tensor<1x4x4x4x4xf32>
  func.return %b, %i : tensor<1x16x4x4xf32>, tensor<1x4x4x4x4xf32>
}



// A grouped conv (4 groups of 8 channels, constant weights) runs one group per block
// of 16: its weights are padded with zeros between the two groups a block holds (a
// 32x16 constant, transformed at compile time). With non-constant weights, or fewer
// output than input channels per group, it stays NCHW.
// CHECK-LABEL: func.func @grouped
// CHECK:         %[[W:.*]] = graph.constant dense_resource<{{.*}}block_diagonal{{.*}}> : tensor<32x16x3x3xf32>
// CHECK:         graph.layout_transform %[[W]] {src_layout = "OIHW", dst_layout = "OIHW16i16o"} : tensor<32x16x3x3xf32> -> tensor<2x1x3x3x16x16xf32>
// CHECK:         graph.conv2d_nchwc {{.*}} groups = 2 : i64} : (tensor<1x2x8x8x16xf32>, tensor<2x1x3x3x16x16xf32>) -> tensor<1x2x8x8x16xf32>
// CHECK:         graph.conv2d %x, %wv {{.*}} groups = 4 : i64}
// CHECK:         graph.conv2d %x, %wn {{.*}} groups = 4 : i64}
func.func @grouped(%x: tensor<1x32x8x8xf32>, %wv: tensor<32x8x3x3xf32>, %wn: tensor<16x8x3x3xf32>)
    -> (tensor<1x32x8x8xf32>, tensor<1x32x8x8xf32>, tensor<1x16x8x8xf32>) {
  %w = graph.constant dense<0.5> : tensor<32x8x3x3xf32>
  %a = graph.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 4 : i64} : (tensor<1x32x8x8xf32>, tensor<32x8x3x3xf32>) -> tensor<1x32x8x8xf32>
  %b = graph.conv2d %x, %wv {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 4 : i64} : (tensor<1x32x8x8xf32>, tensor<32x8x3x3xf32>) -> tensor<1x32x8x8xf32>
  %c = graph.conv2d %x, %wn {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 4 : i64} : (tensor<1x32x8x8xf32>, tensor<16x8x3x3xf32>) -> tensor<1x16x8x8xf32>
  func.return %a, %b, %c : tensor<1x32x8x8xf32>, tensor<1x32x8x8xf32>, tensor<1x16x8x8xf32>
}

// An integer conv is blocked even alone between NCHW ops: its dot-product
// instructions (vpdpbusd, vpmaddwd) need the input channels contiguous, which only
// the blocked layout gives (its NCHW loops multiply lane by lane).
// CHECK-LABEL: func.func @integer_alone
// CHECK:         graph.layout_transform %x {src_layout = "NCHW", dst_layout = "NCHW16c"} : tensor<1x16x4x4xui8> -> tensor<1x1x4x4x16xui8>
// CHECK:         graph.conv2d_nchwc {{.*}} : (tensor<1x1x4x4x16xui8>, tensor<1x1x1x1x16x16xi8>) -> tensor<1x1x4x4x16xi32>
// CHECK:         graph.layout_transform {{.*}} {src_layout = "NCHW16c", dst_layout = "NCHW"} : tensor<1x1x4x4x16xi32> -> tensor<1x16x4x4xi32>
func.func @integer_alone(%x: tensor<1x16x4x4xui8>, %w: tensor<16x16x1x1xi8>) -> tensor<1x16x4x4xi32> {
  %y = graph.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x16x4x4xui8>, tensor<16x16x1x1xi8>) -> tensor<1x16x4x4xi32>
  func.return %y : tensor<1x16x4x4xi32>
}
