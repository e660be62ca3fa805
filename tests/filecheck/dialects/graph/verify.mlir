// RUN: xweave-opt %s --split-input-file --verify-diagnostics | filecheck %s

%x = "test.op"() : () -> tensor<?x3xf32>
%r = "graph.relu"(%x) : (tensor<?x3xf32>) -> tensor<?x3xf32>
// CHECK: graph.relu: expected a static shape but got tensor<?x3xf32>

// -----

%a, %b = "test.op"() : () -> (tensor<3xf32>, tensor<3xf16>)
%r = "graph.add"(%a, %b) : (tensor<3xf32>, tensor<3xf16>) -> tensor<3xf32>
// CHECK: graph.add: expected one element type but got f16, f32

// -----

%c = "graph.constant"() <{value = dense_resource<missing_blob> : tensor<8x8xf32>}> : () -> tensor<8x8xf32>
// CHECK: graph.constant: no data for dense_resource<missing_blob>

// -----

%c = "graph.constant"() <{value = dense_resource<short_blob> : tensor<8xf32>}> : () -> tensor<8xf32>

{-#
  dialect_resources: {
    builtin: {
      short_blob: "0x040000000000803F"
    }
  }
#-}
// CHECK: graph.constant: dense_resource<short_blob> holds 4 bytes but tensor<8xf32> needs 32

// -----

%c = "graph.constant"() <{value = dense<1.0> : tensor<4xf32>}> : () -> tensor<5xf32>
// CHECK: 'graph.constant' op: attribute tensor<5xf32> expected from variable 'T', but got tensor<4xf32>

// -----

%x, %w = "test.op"() : () -> (tensor<3x8x8xf32>, tensor<4x3x3x3xf32>)
%y = "graph.conv2d"(%x, %w) <{strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64}> : (tensor<3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
// CHECK: graph.conv2d: expected input of rank 4 but got tensor<3x8x8xf32>

// -----

%x, %w = "test.op"() : () -> (tensor<1x3x8x8xf32>, tensor<4x3x3xf32>)
%y = "graph.conv2d"(%x, %w) <{strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64}> : (tensor<1x3x8x8xf32>, tensor<4x3x3xf32>) -> tensor<1x4x6x6xf32>
// CHECK: graph.conv2d: expected weight of rank 4 but got tensor<4x3x3xf32>

// -----

%x, %w = "test.op"() : () -> (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>)
%y = "graph.conv2d"(%x, %w) <{strides = array<i64: 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64}> : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
// CHECK: graph.conv2d: expected 2 values in strides but got [1]

// -----

%x, %w = "test.op"() : () -> (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>)
%y = "graph.conv2d"(%x, %w) <{strides = array<i64: 0, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64}> : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
// CHECK: graph.conv2d: expected strides >= 1 but got [0, 1]

// -----

%x, %w = "test.op"() : () -> (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>)
%y = "graph.conv2d"(%x, %w) <{strides = array<i64: 1, 1>, pads = array<i64: 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64}> : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
// CHECK: graph.conv2d: expected 4 values in pads but got [0, 0]

// -----

%x, %w = "test.op"() : () -> (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>)
%y = "graph.conv2d"(%x, %w) <{strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, -1>, dilations = array<i64: 1, 1>, groups = 1 : i64}> : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
// CHECK: graph.conv2d: expected pads >= 0 but got [0, 0, 0, -1]

// -----

%x, %w = "test.op"() : () -> (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>)
%y = "graph.conv2d"(%x, %w) <{strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1, 1>, groups = 1 : i64}> : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
// CHECK: graph.conv2d: expected 2 values in dilations but got [1, 1, 1]

// -----

%x, %w = "test.op"() : () -> (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>)
%y = "graph.conv2d"(%x, %w) <{strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 0 : i64}> : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
// CHECK: graph.conv2d: expected groups >= 1 but got 0

// -----

%x, %w = "test.op"() : () -> (tensor<1x4x8x8xf32>, tensor<4x3x3x3xf32>)
%y = "graph.conv2d"(%x, %w) <{strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64}> : (tensor<1x4x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
// CHECK: graph.conv2d: input has 4 channels but weight expects 3 x 1 groups = 3

// -----

%x, %w = "test.op"() : () -> (tensor<1x4x8x8xf32>, tensor<3x2x3x3xf32>)
%y = "graph.conv2d"(%x, %w) <{strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 2 : i64}> : (tensor<1x4x8x8xf32>, tensor<3x2x3x3xf32>) -> tensor<1x3x6x6xf32>
// CHECK: graph.conv2d: 3 output channels are not divisible by 2 groups

// -----

%x, %w, %b = "test.op"() : () -> (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<3xf32>)
%y = "graph.conv2d"(%x, %w, %b) <{strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64}> : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<3xf32>) -> tensor<1x4x6x6xf32>
// CHECK: graph.conv2d: expected bias shape [4] but got [3]

// -----

%x, %w = "test.op"() : () -> (tensor<1x3x2x2xf32>, tensor<4x3x3x3xf32>)
%y = "graph.conv2d"(%x, %w) <{strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64}> : (tensor<1x3x2x2xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x1x1xf32>
// CHECK: graph.conv2d: kernel does not fit: output shape would be [1, 4, 0, 0]

// -----

%x, %w = "test.op"() : () -> (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>)
%y = "graph.conv2d"(%x, %w) <{strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64}> : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x9x9xf32>
// CHECK: graph.conv2d: expected result shape [1, 4, 8, 8] but got [1, 4, 9, 9]

// -----

%x, %w = "test.op"() : () -> (tensor<2x3x4xf32>, tensor<5x4xf32>)
%y = "graph.dense"(%x, %w) : (tensor<2x3x4xf32>, tensor<5x4xf32>) -> tensor<2x5xf32>
// CHECK: graph.dense: expected input of rank 2 but got tensor<2x3x4xf32>

// -----

%x, %w = "test.op"() : () -> (tensor<2x3xf32>, tensor<5x4xf32>)
%y = "graph.dense"(%x, %w) : (tensor<2x3xf32>, tensor<5x4xf32>) -> tensor<2x5xf32>
// CHECK: graph.dense: input has K = 3 but weight has K = 4

// -----

%x, %w, %b = "test.op"() : () -> (tensor<2x4xf32>, tensor<5x4xf32>, tensor<1x5xf32>)
%y = "graph.dense"(%x, %w, %b) : (tensor<2x4xf32>, tensor<5x4xf32>, tensor<1x5xf32>) -> tensor<2x5xf32>
// CHECK: graph.dense: expected bias shape [5] but got [1, 5]

// -----

%x, %w = "test.op"() : () -> (tensor<2x4xf32>, tensor<5x4xf32>)
%y = "graph.dense"(%x, %w) : (tensor<2x4xf32>, tensor<5x4xf32>) -> tensor<2x4xf32>
// CHECK: graph.dense: expected result shape [2, 5] but got [2, 4]

// -----

%a, %b = "test.op"() : () -> (tensor<4xf32>, tensor<4x5xf32>)
%y = "graph.matmul"(%a, %b) : (tensor<4xf32>, tensor<4x5xf32>) -> tensor<5xf32>
// CHECK: graph.matmul: expected operands of rank >= 2 but got ranks 1 and 2

// -----

%a, %b = "test.op"() : () -> (tensor<3x4xf32>, tensor<5x4xf32>)
%y = "graph.matmul"(%a, %b) : (tensor<3x4xf32>, tensor<5x4xf32>) -> tensor<3x5xf32>
// CHECK: graph.matmul: contracting dimensions differ: [3, 4] x [5, 4]

// -----

%a, %b = "test.op"() : () -> (tensor<2x3x4xf32>, tensor<3x4x5xf32>)
%y = "graph.matmul"(%a, %b) : (tensor<2x3x4xf32>, tensor<3x4x5xf32>) -> tensor<2x3x5xf32>
// CHECK: graph.matmul: batch dimensions of [2, 3, 4] and [3, 4, 5] do not broadcast

// -----

%a, %b = "test.op"() : () -> (tensor<2x3x4xf32>, tensor<4x5xf32>)
%y = "graph.matmul"(%a, %b) : (tensor<2x3x4xf32>, tensor<4x5xf32>) -> tensor<3x5xf32>
// CHECK: graph.matmul: expected result shape [2, 3, 5] but got [3, 5]

// -----

%a, %b = "test.op"() : () -> (tensor<2x3xf32>, tensor<4xf32>)
%y = "graph.mul"(%a, %b) : (tensor<2x3xf32>, tensor<4xf32>) -> tensor<2x3xf32>
// CHECK: graph.mul: operand shapes [2, 3] and [4] are not broadcast-compatible

// -----

%a, %b = "test.op"() : () -> (tensor<2x1xf32>, tensor<3xf32>)
%y = "graph.add"(%a, %b) : (tensor<2x1xf32>, tensor<3xf32>) -> tensor<2x1xf32>
// CHECK: graph.add: expected result shape [2, 3] but got [2, 1]

// -----

%a = "test.op"() : () -> tensor<2x3xf32>
%y = "graph.relu"(%a) : (tensor<2x3xf32>) -> tensor<3x2xf32>
// CHECK: 'graph.relu' op: result 'result' at position 0 does not verify:
// CHECK-NEXT: attribute tensor<2x3xf32> expected from variable 'T', but got tensor<3x2xf32>

// -----

%x = "test.op"() : () -> tensor<4x8x8xf32>
%y = "graph.max_pool2d"(%x) <{kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, ceil_mode = false}> : (tensor<4x8x8xf32>) -> tensor<4x4x4xf32>
// CHECK: graph.max_pool2d: expected input of rank 4 but got tensor<4x8x8xf32>

// -----

%x = "test.op"() : () -> tensor<1x4x8x8xf32>
%y = "graph.max_pool2d"(%x) <{kernel = array<i64: 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, ceil_mode = false}> : (tensor<1x4x8x8xf32>) -> tensor<1x4x4x4xf32>
// CHECK: graph.max_pool2d: expected 2 values in kernel but got [2]

// -----

%x = "test.op"() : () -> tensor<1x4x8x8xf32>
%y = "graph.max_pool2d"(%x) <{kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 2, 0, 0, 0>, dilations = array<i64: 1, 1>, ceil_mode = false}> : (tensor<1x4x8x8xf32>) -> tensor<1x4x5x4xf32>
// CHECK: graph.max_pool2d: pads [2, 0, 0, 0] must be smaller than the window [2, 2]

// -----

%x = "test.op"() : () -> tensor<1x4x2x2xf32>
%y = "graph.avg_pool2d"(%x) <{kernel = array<i64: 3, 3>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, ceil_mode = false, count_include_pad = false}> : (tensor<1x4x2x2xf32>) -> tensor<1x4x1x1xf32>
// CHECK: graph.avg_pool2d: window does not fit: output shape would be [1, 4, 0, 0]

// -----

%x = "test.op"() : () -> tensor<1x4x8x8xf32>
%y = "graph.max_pool2d"(%x) <{kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, ceil_mode = false}> : (tensor<1x4x8x8xf32>) -> tensor<1x4x4x4xf32>
// CHECK: graph.max_pool2d: expected result shape [1, 4, 3, 3] but got [1, 4, 4, 4]

// -----

%x = "test.op"() : () -> tensor<1x4x8x8xf32>
%y = "graph.global_avg_pool2d"(%x) : (tensor<1x4x8x8xf32>) -> tensor<1x4xf32>
// CHECK: graph.global_avg_pool2d: expected result shape [1, 4, 1, 1] but got [1, 4]

// -----

%x = "test.op"() : () -> tensor<2x3xf32>
%y = "graph.reshape"(%x) : (tensor<2x3xf32>) -> tensor<7xf32>
// CHECK: graph.reshape: cannot reshape [2, 3] (6 elements) to [7] (7 elements)

// -----

%x = "test.op"() : () -> tensor<2x3xf32>
%y = "graph.transpose"(%x) <{perm = array<i64: 0, 0>}> : (tensor<2x3xf32>) -> tensor<2x2xf32>
// CHECK: graph.transpose: perm [0, 0] is not a permutation of 2 dimensions

// -----

%x = "test.op"() : () -> tensor<2x3xf32>
%y = "graph.transpose"(%x) <{perm = array<i64: 1, 0>}> : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK: graph.transpose: expected result shape [3, 2] but got [2, 3]
