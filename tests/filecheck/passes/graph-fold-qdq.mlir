// RUN: xweave-opt %s -p graph-fold-qdq --split-input-file | filecheck %s

// graph-fold-qdq: a conv2d between QDQ pairs becomes an integer conv2d (the activations
// made uint8, zero point + 128; padded with that zero point; the weights' zero point and
// x_zp * sum(W) folded into an int32 bias) and a requantize by x_scale * w_scale / y_scale.
// x: scale 0.5, zp -3 (s8) -> ui8 zp 125; W per channel: scales [0.25, 0.125], zp 0.
// bias' = b - 125 * sum(W[o]) = [10 - 125*3, -4 - 125*(-1)] = [-365, 121];
// multiplier = 0.5 * [0.25, 0.125] / 0.0625 = [2, 1]; y zp 5 (s8) -> 133 (ui8).

// CHECK-LABEL: func.func @conv
// CHECK:       %[[Q:.*]] = graph.quantize %x, %{{.*}}, %[[ZX:.*]] : (tensor<1x1x3x3xf32>, tensor<f32>, tensor<ui8>) -> tensor<1x1x3x3xui8>
// CHECK:       %[[W:.*]] = graph.constant dense<{{\[\[\[\[}}1, 2], [0, 0]]], {{\[\[\[}}-1, 0], [0, 0]]]]> : tensor<2x1x2x2xi8>
// CHECK-NEXT:  %[[B:.*]] = graph.constant dense<[-365, 121]> : tensor<2xi32>
// CHECK-NEXT:  %[[ACC:.*]] = graph.conv2d %[[Q]], %[[W]], %[[B]] {{{.*}}pad_value = 125 : i64{{.*}}} : (tensor<1x1x3x3xui8>, tensor<2x1x2x2xi8>, tensor<2xi32>) -> tensor<1x2x4x4xi32>
// CHECK-NEXT:  %[[M:.*]] = graph.constant dense<{{\[\[\[\[}}2.000000e+00]], {{\[\[}}1.000000e+00]]]]> : tensor<1x2x1x1xf32>
// CHECK-NEXT:  %[[ZY:.*]] = graph.constant dense<133> : tensor<1x2x1x1xui8>
// CHECK-NEXT:  %[[YQ:.*]] = graph.requantize %[[ACC]], %[[M]], %[[ZY]] : (tensor<1x2x4x4xi32>, tensor<1x2x1x1xf32>, tensor<1x2x1x1xui8>) -> tensor<1x2x4x4xui8>
// CHECK:       graph.dequantize %[[YQ]], %{{.*}}, %{{.*}} : (tensor<1x2x4x4xui8>, tensor<f32>, tensor<ui8>) -> tensor<1x2x4x4xf32>
func.func @conv(%x: tensor<1x1x3x3xf32>) -> tensor<1x2x4x4xf32> {
  %sx = graph.constant dense<0.5> : tensor<f32>
  %zx = graph.constant dense<-3> : tensor<i8>
  %xq = graph.quantize %x, %sx, %zx : (tensor<1x1x3x3xf32>, tensor<f32>, tensor<i8>) -> tensor<1x1x3x3xi8>
  %xd = graph.dequantize %xq, %sx, %zx : (tensor<1x1x3x3xi8>, tensor<f32>, tensor<i8>) -> tensor<1x1x3x3xf32>
  %wq = graph.constant dense<[[[[1, 2], [0, 0]]], [[[-1, 0], [0, 0]]]]> : tensor<2x1x2x2xi8>
  %sw = graph.constant dense<[[[[0.25]]], [[[0.125]]]]> : tensor<2x1x1x1xf32>
  %zw = graph.constant dense<0> : tensor<2x1x1x1xi8>
  %wd = graph.dequantize %wq, %sw, %zw : (tensor<2x1x2x2xi8>, tensor<2x1x1x1xf32>, tensor<2x1x1x1xi8>) -> tensor<2x1x2x2xf32>
  %bq = graph.constant dense<[10, -4]> : tensor<2xi32>
  %sb = graph.constant dense<[0.125, 0.0625]> : tensor<2xf32>
  %zb = graph.constant dense<0> : tensor<2xi32>
  %bd = graph.dequantize %bq, %sb, %zb : (tensor<2xi32>, tensor<2xf32>, tensor<2xi32>) -> tensor<2xf32>
  %y = graph.conv2d %xd, %wd, %bd {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x1x3x3xf32>, tensor<2x1x2x2xf32>, tensor<2xf32>) -> tensor<1x2x4x4xf32>
  %sy = graph.constant dense<0.0625> : tensor<f32>
  %zy = graph.constant dense<5> : tensor<i8>
  %yq = graph.quantize %y, %sy, %zy : (tensor<1x2x4x4xf32>, tensor<f32>, tensor<i8>) -> tensor<1x2x4x4xi8>
  %yd = graph.dequantize %yq, %sy, %zy : (tensor<1x2x4x4xi8>, tensor<f32>, tensor<i8>) -> tensor<1x2x4x4xf32>
  func.return %yd : tensor<1x2x4x4xf32>
}

// -----

// Data movement, max pooling and clamps of the same scale and zero point run on the
// integers; relu is a max with the zero point, clip(0, 6) a max with it and a min with
// quantize(6) = round(6 / 0.1) + 10 = 70.

// CHECK-LABEL: func.func @commuting
// CHECK-NEXT:    %s = graph.constant dense<1.000000e-01> : tensor<f32>
// CHECK-NEXT:    %z = graph.constant dense<10> : tensor<ui8>
// CHECK-NEXT:    %q = graph.quantize %x, %s, %z
// CHECK-NEXT:    %[[P:.*]] = graph.max_pool2d %q {{.*}} : tensor<1x2x4x4xui8> -> tensor<1x2x2x2xui8>
// CHECK-NEXT:    %[[T:.*]] = graph.reshape %[[P]] : tensor<1x2x2x2xui8> -> tensor<1x8xui8>
// CHECK-NEXT:    %[[C0:.*]] = graph.constant dense<10> : tensor<ui8>
// CHECK-NEXT:    %[[R:.*]] = graph.max %[[T]], %[[C0]] : (tensor<1x8xui8>, tensor<ui8>) -> tensor<1x8xui8>
// CHECK-NEXT:    %[[C1:.*]] = graph.constant dense<10> : tensor<ui8>
// CHECK-NEXT:    %[[LO:.*]] = graph.max %[[R]], %[[C1]] : (tensor<1x8xui8>, tensor<ui8>) -> tensor<1x8xui8>
// CHECK-NEXT:    %[[C2:.*]] = graph.constant dense<70> : tensor<ui8>
// CHECK-NEXT:    %[[HI:.*]] = graph.min %[[LO]], %[[C2]] : (tensor<1x8xui8>, tensor<ui8>) -> tensor<1x8xui8>
// CHECK-NEXT:    %[[D:.*]] = graph.dequantize %[[HI]], %s, %z
// CHECK-NEXT:    func.return %[[D]]
func.func @commuting(%x: tensor<1x2x4x4xf32>) -> tensor<1x8xf32> {
  %s = graph.constant dense<0.1> : tensor<f32>
  %z = graph.constant dense<10> : tensor<ui8>
  %q = graph.quantize %x, %s, %z : (tensor<1x2x4x4xf32>, tensor<f32>, tensor<ui8>) -> tensor<1x2x4x4xui8>
  %d0 = graph.dequantize %q, %s, %z : (tensor<1x2x4x4xui8>, tensor<f32>, tensor<ui8>) -> tensor<1x2x4x4xf32>
  %p = graph.max_pool2d %d0 {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, ceil_mode = false, dilations = array<i64: 1, 1>} : tensor<1x2x4x4xf32> -> tensor<1x2x2x2xf32>
  %q1 = graph.quantize %p, %s, %z : (tensor<1x2x2x2xf32>, tensor<f32>, tensor<ui8>) -> tensor<1x2x2x2xui8>
  %d1 = graph.dequantize %q1, %s, %z : (tensor<1x2x2x2xui8>, tensor<f32>, tensor<ui8>) -> tensor<1x2x2x2xf32>
  %t = graph.reshape %d1 : tensor<1x2x2x2xf32> -> tensor<1x8xf32>
  %q2 = graph.quantize %t, %s, %z : (tensor<1x8xf32>, tensor<f32>, tensor<ui8>) -> tensor<1x8xui8>
  %d2 = graph.dequantize %q2, %s, %z : (tensor<1x8xui8>, tensor<f32>, tensor<ui8>) -> tensor<1x8xf32>
  %r = graph.relu %d2 : tensor<1x8xf32>
  %q3 = graph.quantize %r, %s, %z : (tensor<1x8xf32>, tensor<f32>, tensor<ui8>) -> tensor<1x8xui8>
  %d3 = graph.dequantize %q3, %s, %z : (tensor<1x8xui8>, tensor<f32>, tensor<ui8>) -> tensor<1x8xf32>
  %c = graph.clip %d3 {min = 0.0 : f64, max = 6.0 : f64} : tensor<1x8xf32>
  %q4 = graph.quantize %c, %s, %z : (tensor<1x8xf32>, tensor<f32>, tensor<ui8>) -> tensor<1x8xui8>
  %d4 = graph.dequantize %q4, %s, %z : (tensor<1x8xui8>, tensor<f32>, tensor<ui8>) -> tensor<1x8xf32>
  func.return %d4 : tensor<1x8xf32>
}

// -----

// Left alone: an add (computed in float, as onnxruntime does; fusion makes it one
// kernel), a max pool between different scales, a conv with a float bias, a quantized
// tensor the function returns (its type is the model's).

// CHECK-LABEL: func.func @left_alone
// CHECK:         graph.quantize %x, %s, %z : {{.*}} -> tensor<1x2x4x4xi8>
// CHECK:         graph.add
// CHECK:         graph.max_pool2d {{.*}} : tensor<1x2x4x4xf32> -> tensor<1x2x2x2xf32>
// CHECK:         graph.conv2d {{.*}} : (tensor<1x2x4x4xf32>, tensor<2x2x1x1xf32>, tensor<2xf32>) -> tensor<1x2x4x4xf32>
// CHECK-NOT:     graph.requantize
func.func @left_alone(%x: tensor<1x2x4x4xf32>) -> (tensor<1x2x4x4xi8>, tensor<1x2x2x2xf32>, tensor<1x2x4x4xf32>) {
  %s = graph.constant dense<0.1> : tensor<f32>
  %s2 = graph.constant dense<0.2> : tensor<f32>
  %z = graph.constant dense<0> : tensor<i8>
  %q = graph.quantize %x, %s, %z : (tensor<1x2x4x4xf32>, tensor<f32>, tensor<i8>) -> tensor<1x2x4x4xi8>
  %d = graph.dequantize %q, %s, %z : (tensor<1x2x4x4xi8>, tensor<f32>, tensor<i8>) -> tensor<1x2x4x4xf32>
  %a = graph.add %d, %d : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %p = graph.max_pool2d %a {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, ceil_mode = false, dilations = array<i64: 1, 1>} : tensor<1x2x4x4xf32> -> tensor<1x2x2x2xf32>
  %wq = graph.constant dense<1> : tensor<2x2x1x1xi8>
  %zw = graph.constant dense<0> : tensor<i8>
  %wd = graph.dequantize %wq, %s, %zw : (tensor<2x2x1x1xi8>, tensor<f32>, tensor<i8>) -> tensor<2x2x1x1xf32>
  %b = graph.constant dense<[0.5, 1.5]> : tensor<2xf32>
  %y = graph.conv2d %d, %wd, %b {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x2x4x4xf32>, tensor<2x2x1x1xf32>, tensor<2xf32>) -> tensor<1x2x4x4xf32>
  %yq = graph.quantize %y, %s2, %z : (tensor<1x2x4x4xf32>, tensor<f32>, tensor<i8>) -> tensor<1x2x4x4xi8>
  %yd = graph.dequantize %yq, %s2, %z : (tensor<1x2x4x4xi8>, tensor<f32>, tensor<i8>) -> tensor<1x2x4x4xf32>
  func.return %q, %p, %yd : tensor<1x2x4x4xi8>, tensor<1x2x2x2xf32>, tensor<1x2x4x4xf32>
}
