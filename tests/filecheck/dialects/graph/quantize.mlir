// RUN: XWEAVE_ROUNDTRIP
// RUN: XWEAVE_GENERIC_ROUNDTRIP

// Quantization ops and integer layers (quantized models): 8-bit operands, i32 accumulators.

func.func @quantized(%x: tensor<1x4x6x6xf32>) -> tensor<1x8x6x6xf32> {
  %s = graph.constant dense<0.5> : tensor<f32>
  %zp = graph.constant dense<3> : tensor<ui8>
  %q = graph.quantize %x, %s, %zp : (tensor<1x4x6x6xf32>, tensor<f32>, tensor<ui8>) -> tensor<1x4x6x6xui8>
  %w = graph.constant dense<1> : tensor<8x4x3x3xi8>
  %b = graph.constant dense<-7> : tensor<8xi32>
  %acc = graph.conv2d %q, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, pad_value = 3 : i64, groups = 1 : i64} : (tensor<1x4x6x6xui8>, tensor<8x4x3x3xi8>, tensor<8xi32>) -> tensor<1x8x6x6xi32>
  %m = graph.constant dense<[[[[0.1]], [[0.2]], [[0.3]], [[0.4]], [[0.5]], [[0.6]], [[0.7]], [[0.8]]]]> : tensor<1x8x1x1xf32>
  %zy = graph.constant dense<-5> : tensor<1x8x1x1xi8>
  %y = graph.requantize %acc, %m, %zy : (tensor<1x8x6x6xi32>, tensor<1x8x1x1xf32>, tensor<1x8x1x1xi8>) -> tensor<1x8x6x6xi8>
  %sy = graph.constant dense<0.25> : tensor<1x8x1x1xf32>
  %r = graph.dequantize %y, %sy, %zy : (tensor<1x8x6x6xi8>, tensor<1x8x1x1xf32>, tensor<1x8x1x1xi8>) -> tensor<1x8x6x6xf32>
  func.return %r : tensor<1x8x6x6xf32>
}

// CHECK-LABEL: func.func @quantized
// CHECK:      graph.quantize %{{.*}}, %{{.*}}, %{{.*}} : (tensor<1x4x6x6xf32>, tensor<f32>, tensor<ui8>) -> tensor<1x4x6x6xui8>
// CHECK:      graph.conv2d %{{.*}}, %{{.*}}, %{{.*}} {{{.*}}pad_value = 3 : i64{{.*}}} : (tensor<1x4x6x6xui8>, tensor<8x4x3x3xi8>, tensor<8xi32>) -> tensor<1x8x6x6xi32>
// CHECK:      graph.requantize %{{.*}}, %{{.*}}, %{{.*}} : (tensor<1x8x6x6xi32>, tensor<1x8x1x1xf32>, tensor<1x8x1x1xi8>) -> tensor<1x8x6x6xi8>
// CHECK:      graph.dequantize %{{.*}}, %{{.*}}, %{{.*}} : (tensor<1x8x6x6xi8>, tensor<1x8x1x1xf32>, tensor<1x8x1x1xi8>) -> tensor<1x8x6x6xf32>

// CHECK-GENERIC: "graph.quantize"
// CHECK-GENERIC: "graph.conv2d"
// CHECK-GENERIC-SAME: pad_value = 3 : i64
// CHECK-GENERIC: "graph.requantize"
// CHECK-GENERIC: "graph.dequantize"

// -----

func.func @integer_matmuls(%a: tensor<4x16xui8>, %b: tensor<16x8xi8>, %w: tensor<8x16xi16>) -> (tensor<4x8xi32>, tensor<4x8xi32>) {
  %mm = graph.matmul %a, %b : (tensor<4x16xui8>, tensor<16x8xi8>) -> tensor<4x8xi32>
  %d = graph.dense %a, %w : (tensor<4x16xui8>, tensor<8x16xi16>) -> tensor<4x8xi32>
  func.return %mm, %d : tensor<4x8xi32>, tensor<4x8xi32>
}

// CHECK-LABEL: func.func @integer_matmuls
// CHECK:      graph.matmul %{{.*}}, %{{.*}} : (tensor<4x16xui8>, tensor<16x8xi8>) -> tensor<4x8xi32>
// CHECK:      graph.dense %{{.*}}, %{{.*}} : (tensor<4x16xui8>, tensor<8x16xi16>) -> tensor<4x8xi32>
// CHECK-GENERIC: "graph.matmul"
// CHECK-GENERIC: "graph.dense"
