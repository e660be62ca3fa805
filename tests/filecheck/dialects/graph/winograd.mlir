// RUN: xweave-opt %s | xweave-opt | filecheck %s
// RUN: XWEAVE_ROUNDTRIP

// The three ops of a Winograd F(2x2, 3x3) convolution (a = 4 points per axis), on
// NCHW data (channel block 1) and on NCHW8c data.

// CHECK-LABEL: func.func @nchw
// CHECK-NEXT:    %v = graph.winograd_input_transform %x {tile = 2 : i64, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x16x6x6xf32>) -> tensor<16x9x16x1xf32>
// CHECK-NEXT:    %m = graph.winograd_matmul %v, %u : (tensor<16x9x16x1xf32>, tensor<16x16x1x8xf32>) -> tensor<16x9x8xf32>
// CHECK-NEXT:    %y = graph.winograd_output_transform %m {tile = 2 : i64} : (tensor<16x9x8xf32>) -> tensor<1x8x6x6xf32>
func.func @nchw(%x: tensor<1x16x6x6xf32>, %u: tensor<16x16x1x8xf32>) -> tensor<1x8x6x6xf32> {
  %v = graph.winograd_input_transform %x {tile = 2 : i64, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x16x6x6xf32>) -> tensor<16x9x16x1xf32>
  %m = graph.winograd_matmul %v, %u : (tensor<16x9x16x1xf32>, tensor<16x16x1x8xf32>) -> tensor<16x9x8xf32>
  %y = graph.winograd_output_transform %m {tile = 2 : i64} : (tensor<16x9x8xf32>) -> tensor<1x8x6x6xf32>
  func.return %y : tensor<1x8x6x6xf32>
}

// -----

// An odd 5x5 output in tiles of 4 (2 x 2 tiles, the last row and column cut off).
// CHECK-LABEL: func.func @blocked
// CHECK-NEXT:    %v = graph.winograd_input_transform %x {tile = 4 : i64, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x2x5x5x8xf32>) -> tensor<36x4x2x8xf32>
// CHECK-NEXT:    %m = graph.winograd_matmul %v, %u : (tensor<36x4x2x8xf32>, tensor<36x2x8x16xf32>) -> tensor<36x4x16xf32>
// CHECK-NEXT:    %y = graph.winograd_output_transform %m {tile = 4 : i64} : (tensor<36x4x16xf32>) -> tensor<1x2x5x5x8xf32>
func.func @blocked(%x: tensor<1x2x5x5x8xf32>, %u: tensor<36x2x8x16xf32>) -> tensor<1x2x5x5x8xf32> {
  %v = graph.winograd_input_transform %x {tile = 4 : i64, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x2x5x5x8xf32>) -> tensor<36x4x2x8xf32>
  %m = graph.winograd_matmul %v, %u : (tensor<36x4x2x8xf32>, tensor<36x2x8x16xf32>) -> tensor<36x4x16xf32>
  %y = graph.winograd_output_transform %m {tile = 4 : i64} : (tensor<36x4x16xf32>) -> tensor<1x2x5x5x8xf32>
  func.return %y : tensor<1x2x5x5x8xf32>
}
