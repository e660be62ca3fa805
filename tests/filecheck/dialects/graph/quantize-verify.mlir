// RUN: xweave-opt %s --split-input-file --verify-diagnostics | filecheck %s

%x, %s, %zp = "test.op"() : () -> (tensor<4xf32>, tensor<f32>, tensor<i16>)
%q = "graph.quantize"(%x, %s, %zp) : (tensor<4xf32>, tensor<f32>, tensor<i16>) -> tensor<4xi16>
// CHECK: graph.quantize: expected a zero point of i8 or ui8 elements but got tensor<i16>

// -----

%x, %s, %zp = "test.op"() : () -> (tensor<4xf32>, tensor<f32>, tensor<ui8>)
%q = "graph.quantize"(%x, %s, %zp) : (tensor<4xf32>, tensor<f32>, tensor<ui8>) -> tensor<4xi8>
// CHECK: graph.quantize: the zero point tensor<ui8> and the quantized values tensor<4xi8> have different element types

// -----

%x, %s, %zp = "test.op"() : () -> (tensor<4xf32>, tensor<f16>, tensor<ui8>)
%q = "graph.quantize"(%x, %s, %zp) : (tensor<4xf32>, tensor<f16>, tensor<ui8>) -> tensor<4xui8>
// CHECK: graph.quantize: expected a scale of f32 elements but got tensor<f16>

// -----

%x, %s, %zp = "test.op"() : () -> (tensor<2x4xf32>, tensor<3xf32>, tensor<3xui8>)
%q = "graph.quantize"(%x, %s, %zp) : (tensor<2x4xf32>, tensor<3xf32>, tensor<3xui8>) -> tensor<2x4xui8>
// CHECK: graph.quantize: the scale's shape [3] does not broadcast to the input's [2, 4]

// -----

%x, %s, %zp = "test.op"() : () -> (tensor<2x4xf32>, tensor<4xf32>, tensor<ui8>)
%q = "graph.quantize"(%x, %s, %zp) : (tensor<2x4xf32>, tensor<4xf32>, tensor<ui8>) -> tensor<2x4xui8>
// CHECK: graph.quantize: the zero point's shape [] differs from the scale's [4]

// -----

%x, %s, %zp = "test.op"() : () -> (tensor<4xi32>, tensor<f32>, tensor<ui8>)
%q = "graph.dequantize"(%x, %s, %zp) : (tensor<4xi32>, tensor<f32>, tensor<ui8>) -> tensor<4xf32>
// CHECK: graph.dequantize: the zero point tensor<ui8> and the quantized values tensor<4xi32> have different element types

// -----

%x, %s, %zp = "test.op"() : () -> (tensor<4xi8>, tensor<f32>, tensor<ui8>)
%q = "graph.requantize"(%x, %s, %zp) : (tensor<4xi8>, tensor<f32>, tensor<ui8>) -> tensor<4xui8>
// CHECK: graph.requantize: expected an input of i32 elements but got tensor<4xi8>

// -----

%x, %w = "test.op"() : () -> (tensor<1x2x4x4xui8>, tensor<2x2x1x1xi8>)
%y = "graph.conv2d"(%x, %w) <{strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64}> : (tensor<1x2x4x4xui8>, tensor<2x2x1x1xi8>) -> tensor<1x2x4x4xi8>
// CHECK: graph.conv2d: expected an i32 result for integer operands but got tensor<1x2x4x4xi8>

// -----

%x, %w = "test.op"() : () -> (tensor<1x2x4x4xui8>, tensor<2x2x1x1xi8>)
%y = "graph.conv2d"(%x, %w) <{strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64, pad_value = 300 : i64}> : (tensor<1x2x4x4xui8>, tensor<2x2x1x1xi8>) -> tensor<1x2x4x4xi32>
// CHECK: graph.conv2d: pad_value 300 is not a value of ui8

// -----

%x, %w = "test.op"() : () -> (tensor<1x2x4x4xf32>, tensor<2x2x1x1xf32>)
%y = "graph.conv2d"(%x, %w) <{strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64, pad_value = 1 : i64}> : (tensor<1x2x4x4xf32>, tensor<2x2x1x1xf32>) -> tensor<1x2x4x4xf32>
// CHECK: graph.conv2d: pad_value is only for integer convolutions (a float one pads with 0)

// -----

%a, %b = "test.op"() : () -> (tensor<4x16xui8>, tensor<16x8xf32>)
%y = "graph.matmul"(%a, %b) : (tensor<4x16xui8>, tensor<16x8xf32>) -> tensor<4x8xi32>
// CHECK: graph.matmul: expected weight of integer elements but got tensor<16x8xf32>
