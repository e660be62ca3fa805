// RUN: xweave-opt %s --split-input-file --verify-diagnostics | filecheck %s

%x = "test.op"() : () -> tensor<1x16x6x6xf32>
%v = graph.winograd_input_transform %x {tile = 5 : i64, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x16x6x6xf32>) -> tensor<49x4x16x1xf32>
// CHECK: graph.winograd_input_transform: expected tile 1 to 4 but got 5

// -----

%x = "test.op"() : () -> tensor<1x16x6x6xf32>
%v = graph.winograd_input_transform %x {tile = 2 : i64, pads = array<i64: 0, 0, 0, 0>} : (tensor<1x16x6x6xf32>) -> tensor<16x9x16x1xf32>
// CHECK: graph.winograd_input_transform: expected result shape [16, 4, 16, 1] but got [16, 9, 16, 1]

// -----

%x = "test.op"() : () -> tensor<1x16x1x1xf32>
%v = graph.winograd_input_transform %x {tile = 2 : i64, pads = array<i64: 0, 0, 0, 0>} : (tensor<1x16x1x1xf32>) -> tensor<16x1x16x1xf32>
// CHECK: graph.winograd_input_transform: a 3x3 window does not fit the padded 1x1 input

// -----

%v = "test.op"() : () -> tensor<16x9x16x1xf32>
%u = "test.op"() : () -> tensor<16x8x1x8xf32>
%m = graph.winograd_matmul %v, %u : (tensor<16x9x16x1xf32>, tensor<16x8x1x8xf32>) -> tensor<16x9x8xf32>
// CHECK: graph.winograd_matmul: weight [16, 8, 1, 8] does not match input [16, 9, 16, 1] (expected [16, 16, 1, K])

// -----

%m = "test.op"() : () -> tensor<16x9x8xf32>
%y = graph.winograd_output_transform %m {tile = 2 : i64} : (tensor<16x9x8xf32>) -> tensor<1x8x8x8xf32>
// CHECK: graph.winograd_output_transform: expected input shape [16, 16, 8] for result [1, 8, 8, 8] but got [16, 9, 8]

// -----

%m = "test.op"() : () -> tensor<16x9x8xf32>
%y = graph.winograd_output_transform %m {tile = 0 : i64} : (tensor<16x9x8xf32>) -> tensor<1x8x6x6xf32>
// CHECK: graph.winograd_output_transform: expected tile 1 to 4 but got 0
