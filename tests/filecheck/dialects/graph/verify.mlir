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

// -----

%a = "test.op"() : () -> tensor<2x3xi64>
%r = "graph.log"(%a) : (tensor<2x3xi64>) -> tensor<2x3xi64>
// CHECK: graph.log: expected input of float elements but got tensor<2x3xi64>

// -----

%a = "test.op"() : () -> tensor<2x3xf32>
%r = "graph.gelu"(%a) <{approximate = "fast"}> : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK: graph.gelu: approximate must be one of ['none', 'tanh'] but got 'fast'

// -----

%a, %s = "test.op"() : () -> (tensor<2x3xf32>, tensor<4x3xf32>)
%r = "graph.prelu"(%a, %s) : (tensor<2x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
// CHECK: graph.prelu: operand shapes [2, 3] and [4, 3] are not broadcast-compatible

// -----

%a, %s = "test.op"() : () -> (tensor<1x3xf32>, tensor<2x3xf32>)
%r = "graph.prelu"(%a, %s) : (tensor<1x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK: graph.prelu: slope shape [2, 3] must broadcast to the input shape [1, 3]

// -----

%a = "test.op"() : () -> tensor<2x3xf32>
%r = "graph.not"(%a) : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK: graph.not: expected input of bool elements but got tensor<2x3xf32>

// -----

%a, %b = "test.op"() : () -> (tensor<2x3xf32>, tensor<3xf32>)
%r = "graph.less"(%a, %b) : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
// CHECK: graph.less: expected result of bool elements but got tensor<2x3xf32>

// -----

%a, %b = "test.op"() : () -> (tensor<2x3xf32>, tensor<3xi64>)
%r = "graph.equal"(%a, %b) : (tensor<2x3xf32>, tensor<3xi64>) -> tensor<2x3xi1>
// CHECK: graph.equal: expected one element type but got f32, i64

// -----

%c, %a, %b = "test.op"() : () -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<3xf32>)
%r = "graph.where"(%c, %a, %b) : (tensor<2x3xf32>, tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
// CHECK: graph.where: expected cond of bool elements but got tensor<2x3xf32>

// -----

%c, %a, %b = "test.op"() : () -> (tensor<4x1x1xi1>, tensor<2x3xf32>, tensor<3xf32>)
%r = "graph.where"(%c, %a, %b) : (tensor<4x1x1xi1>, tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
// CHECK: graph.where: expected result shape [4, 2, 3] but got [2, 3]

// -----

%a = "test.op"() : () -> tensor<2x3xf32>
%r = "graph.cast"(%a) : (tensor<2x3xf32>) -> tensor<3x2xi64>
// CHECK: graph.cast: expected result shape [2, 3] but got [3, 2]

// -----

%a = "test.op"() : () -> tensor<2x3xf32>
%r = "graph.softmax"(%a) <{axis = 2 : i64}> : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK: graph.softmax: axis 2 is out of range for rank 2

// -----

%a = "test.op"() : () -> tensor<2x3xf32>
%r = "graph.reduce"(%a) <{kind = "median", axes = array<i64: 0>, keepdims = true}> : (tensor<2x3xf32>) -> tensor<1x3xf32>
// CHECK: graph.reduce: kind must be one of ['sum', 'mean', 'max', 'min', 'prod'] but got 'median'

// -----

%a = "test.op"() : () -> tensor<2x3xf32>
%r = "graph.reduce"(%a) <{kind = "sum", axes = array<i64: 1, 0>, keepdims = true}> : (tensor<2x3xf32>) -> tensor<1x1xf32>
// CHECK: graph.reduce: axes [1, 0] must be sorted, unique and within rank 2

// -----

%a = "test.op"() : () -> tensor<2x3xf32>
%r = "graph.reduce"(%a) <{kind = "sum", axes = array<i64: 1>, keepdims = false}> : (tensor<2x3xf32>) -> tensor<2x1xf32>
// CHECK: graph.reduce: expected result shape [2] but got [2, 1]

// -----

%x, %p = "test.op"() : () -> (tensor<2x3x4xf32>, tensor<4xf32>)
%r = "graph.batch_norm"(%x, %p, %p, %p, %p) <{epsilon = 1.0e-05 : f64}> : (tensor<2x3x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x3x4xf32>
// CHECK: graph.batch_norm: expected scale shape [3] but got [4]

// -----

%x, %s = "test.op"() : () -> (tensor<2x3x4xf32>, tensor<3xf32>)
%r = "graph.layer_norm"(%x, %s) <{axis = 2 : i64, epsilon = 1.0e-05 : f64}> : (tensor<2x3x4xf32>, tensor<3xf32>) -> tensor<2x3x4xf32>
// CHECK: graph.layer_norm: scale shape [3] does not broadcast to [2, 3, 4]

// -----

%x = "test.op"() : () -> tensor<2x3x4xf32>
%r = "graph.lrn"(%x) <{size = 0 : i64, alpha = 1.0e-04 : f64, beta = 0.75 : f64, bias = 1.0 : f64}> : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
// CHECK: graph.lrn: expected size >= 1 but got 0

// -----

%x, %w = "test.op"() : () -> (tensor<1x4x5x5xf32>, tensor<3x2x3x3xf32>)
%y = "graph.conv_transpose2d"(%x, %w) <{strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, output_padding = array<i64: 0, 0>, groups = 1 : i64}> : (tensor<1x4x5x5xf32>, tensor<3x2x3x3xf32>) -> tensor<1x2x7x7xf32>
// CHECK: graph.conv_transpose2d: input has 4 channels but weight has 3

// -----

%x, %w = "test.op"() : () -> (tensor<1x4x5x5xf32>, tensor<4x2x3x3xf32>)
%y = "graph.conv_transpose2d"(%x, %w) <{strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, output_padding = array<i64: 0, 0>, groups = 2 : i64}> : (tensor<1x4x5x5xf32>, tensor<4x2x3x3xf32>) -> tensor<1x2x11x11xf32>
// CHECK: graph.conv_transpose2d: expected result shape [1, 4, 11, 11] but got [1, 2, 11, 11]

// -----

%a, %b = "test.op"() : () -> (tensor<2x3xf32>, tensor<2x4xf32>)
%r = "graph.concat"(%a, %b) <{axis = 0 : i64}> : (tensor<2x3xf32>, tensor<2x4xf32>) -> tensor<4x3xf32>
// CHECK: graph.concat: input shapes [[2, 3], [2, 4]] differ outside axis 0

// -----

%a = "test.op"() : () -> tensor<5x3xf32>
%r = "graph.slice"(%a) <{starts = array<i64: 1, 0>, steps = array<i64: 2, 1>}> : (tensor<5x3xf32>) -> tensor<3x3xf32>
// CHECK: graph.slice: dimension 0: 3 elements from 1 by 2 leave [0, 5)

// -----

%a = "test.op"() : () -> tensor<5x3xf32>
%r = "graph.slice"(%a) <{starts = array<i64: 1, 0>, steps = array<i64: 0, 1>}> : (tensor<5x3xf32>) -> tensor<3x3xf32>
// CHECK: graph.slice: step of dimension 0 is 0

// -----

%a = "test.op"() : () -> tensor<2x3xf32>
%r = "graph.pad"(%a) <{pads = array<i64: 0, 3, 0, 0>, mode = "reflect", value = 0.0 : f64}> : (tensor<2x3xf32>) -> tensor<2x6xf32>
// CHECK: graph.pad: reflect pads [0, 3, 0, 0] must be smaller than the dimensions [2, 3]

// -----

%a = "test.op"() : () -> tensor<2x3xf32>
%r = "graph.pad"(%a) <{pads = array<i64: 0, 1, 0, 0>, mode = "wrap", value = 0.0 : f64}> : (tensor<2x3xf32>) -> tensor<2x4xf32>
// CHECK: graph.pad: mode must be one of ['constant', 'reflect', 'edge'] but got 'wrap'

// -----

%a = "test.op"() : () -> tensor<2x3xf32>
%r = "graph.tile"(%a) <{repeats = array<i64: 2>}> : (tensor<2x3xf32>) -> tensor<4x3xf32>
// CHECK: graph.tile: expected 2 values in repeats but got [2]

// -----

%a = "test.op"() : () -> tensor<2x3xf32>
%r = "graph.broadcast_to"(%a) : (tensor<2x3xf32>) -> tensor<4x3xf32>
// CHECK: graph.broadcast_to: cannot broadcast [2, 3] to [4, 3]

// -----

%a, %i = "test.op"() : () -> (tensor<2x3xf32>, tensor<2xf32>)
%r = "graph.gather"(%a, %i) <{axis = 0 : i64}> : (tensor<2x3xf32>, tensor<2xf32>) -> tensor<2x3xf32>
// CHECK: graph.gather: expected indices of integer elements but got tensor<2xf32>

// -----

%a, %i = "test.op"() : () -> (tensor<2x3xf32>, tensor<4xi64>)
%r = "graph.gather"(%a, %i) <{axis = 1 : i64}> : (tensor<2x3xf32>, tensor<4xi64>) -> tensor<2x3xf32>
// CHECK: graph.gather: expected result shape [2, 4] but got [2, 3]
