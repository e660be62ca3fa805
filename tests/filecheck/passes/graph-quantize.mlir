// RUN: xweave-opt %s -p graph-quantize --split-input-file | filecheck %s
// RUN: xweave-opt %s -p 'graph-quantize{min_in_channels=5}' --split-input-file | filecheck %s --check-prefix=MIN

// graph-quantize: a calibrated conv2d/dense becomes quantize -> call of an outlined int8
// layer -> dequantize, with power-of-two scales. Conv below: input absmax 1.5 -> x * 2^6;
// weights 0.25 -> 2^8 (64); accumulator 2^14; output absmax 10 -> 2^3, so shift = 11
// (the scale 2^-11 in the body) and the bias 0.5 * 2^14 + 2^10 (rounding) = 9216.
// The relu is absorbed (clip to [0, 127]). The dense input is requantized at 2^3.

func.func @main(%x: tensor<1x8x6x6xf32>) -> tensor<1x5xf32> {
  %w = graph.constant dense<0.25> : tensor<8x8x3x3xf32>
  %b = graph.constant dense<0.5> : tensor<8xf32>
  %c = graph.conv2d %x, %w, %b {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64, xweave.calibration = {input_absmax = 1.5 : f64, output_absmax = 10.0 : f64}} : (tensor<1x8x6x6xf32>, tensor<8x8x3x3xf32>, tensor<8xf32>) -> tensor<1x8x3x3xf32>
  %r = graph.relu %c : tensor<1x8x3x3xf32>
  %f = graph.reshape %r : tensor<1x8x3x3xf32> -> tensor<1x72xf32>
  %w2 = graph.constant dense<-0.125> : tensor<5x72xf32>
  %d = graph.dense %f, %w2 {xweave.calibration = {input_absmax = 10.0 : f64, output_absmax = 60.0 : f64}} : (tensor<1x72xf32>, tensor<5x72xf32>) -> tensor<1x5xf32>
  func.return %d : tensor<1x5xf32>
}

// CHECK-LABEL: func.func @main
// CHECK-NEXT:    %[[S:.*]] = graph.constant dense<6.400000e+01> : tensor<f32>
// CHECK-NEXT:    %[[M:.*]] = graph.mul %x, %[[S]]
// CHECK-NEXT:    %[[R:.*]] = graph.round %[[M]]
// CHECK-NEXT:    %[[C:.*]] = graph.clip %[[R]] {min = -1.280000e+02 : f64, max = 1.270000e+02 : f64}
// CHECK-NEXT:    %[[XQ:.*]] = graph.cast %[[C]] : tensor<1x8x6x6xf32> -> tensor<1x8x6x6xi8>
// CHECK-NEXT:    %[[WQ:.*]] = graph.constant dense_resource<{{.*}}> : tensor<8x8x3x3xi8>
// CHECK-NEXT:    %[[BQ:.*]] = graph.constant dense<9216> : tensor<8xi32>
// CHECK-NEXT:    %[[Y:.*]] = func.call @int8_conv2d_0(%[[XQ]], %[[WQ]], %[[BQ]]) : (tensor<1x8x6x6xi8>, tensor<8x8x3x3xi8>, tensor<8xi32>) -> tensor<1x8x3x3xi8>
// CHECK-NEXT:    %[[YF:.*]] = graph.cast %[[Y]] : tensor<1x8x3x3xi8> -> tensor<1x8x3x3xf32>
// CHECK-NEXT:    %[[DS:.*]] = graph.constant dense<1.250000e-01> : tensor<f32>
// CHECK-NEXT:    %r = graph.mul %[[YF]], %[[DS]]
// CHECK-NEXT:    %f = graph.reshape %r
// CHECK-NEXT:    %[[S2:.*]] = graph.constant dense<8.000000e+00> : tensor<f32>
// CHECK-NEXT:    %[[M2:.*]] = graph.mul %f, %[[S2]]
// CHECK:         %[[XQ2:.*]] = graph.cast %{{.*}} : tensor<1x72xf32> -> tensor<1x72xi8>
// CHECK-NEXT:    %[[WQ2:.*]] = graph.constant dense_resource<{{.*}}> : tensor<5x72xi8>
// CHECK-NEXT:    %[[BQ2:.*]] = graph.constant dense<1024> : tensor<5xi32>
// CHECK-NEXT:    %[[Y2:.*]] = func.call @int8_dense_0(%[[XQ2]], %[[WQ2]], %[[BQ2]])
// CHECK-NEXT:    %[[Y2F:.*]] = graph.cast %[[Y2]] : tensor<1x5xi8> -> tensor<1x5xf32>
// CHECK-NEXT:    %[[DS2:.*]] = graph.constant dense<5.000000e-01> : tensor<f32>
// CHECK-NEXT:    %d = graph.mul %[[Y2F]], %[[DS2]]
// CHECK-NEXT:    func.return %d : tensor<1x5xf32>

// CHECK-LABEL: func.func private @int8_conv2d_0(%0: tensor<1x8x6x6xi8>, %1: tensor<8x8x3x3xi8>, %2: tensor<8xi32>) -> tensor<1x8x3x3xi8> attributes {xweave.int8_layer = "conv2d"} {
// CHECK-NEXT:    %[[XI:.*]] = graph.cast %0 : tensor<1x8x6x6xi8> -> tensor<1x8x6x6xi32>
// CHECK-NEXT:    %[[WI:.*]] = graph.cast %1 : tensor<8x8x3x3xi8> -> tensor<8x8x3x3xi32>
// CHECK-NEXT:    %[[ACC:.*]] = graph.conv2d %[[XI]], %[[WI]], %2 {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x8x6x6xi32>, tensor<8x8x3x3xi32>, tensor<8xi32>) -> tensor<1x8x3x3xi32>
// CHECK-NEXT:    %[[AF:.*]] = graph.cast %[[ACC]] : tensor<1x8x3x3xi32> -> tensor<1x8x3x3xf64>
// CHECK-NEXT:    %[[SH:.*]] = graph.constant dense<0.00048828125> : tensor<f64>
// CHECK-NEXT:    %[[P:.*]] = graph.mul %[[AF]], %[[SH]]
// CHECK-NEXT:    %[[FL:.*]] = graph.floor %[[P]]
// CHECK-NEXT:    %[[CL:.*]] = graph.clip %[[FL]] {min = 0.000000e+00 : f64, max = 1.270000e+02 : f64}
// CHECK-NEXT:    %[[O:.*]] = graph.cast %[[CL]] : tensor<1x8x3x3xf64> -> tensor<1x8x3x3xi8>
// CHECK-NEXT:    func.return %[[O]] : tensor<1x8x3x3xi8>

// CHECK-LABEL: func.func private @int8_dense_0
// CHECK:         graph.dense %{{.*}}, %{{.*}}, %2 : (tensor<1x72xi32>, tensor<5x72xi32>, tensor<5xi32>) -> tensor<1x5xi32>
// CHECK:         graph.clip %{{.*}} {min = -1.280000e+02 : f64, max = 1.270000e+02 : f64}

// With min_in_channels=5 the dense layer (72 features) is still quantized, the conv
// (8 channels) too; see the next case for one that stays float.
// MIN-LABEL: func.func @main
// MIN:         func.call @int8_conv2d_0
// MIN:         func.call @int8_dense_0

// -----

// Two int8 layers in a row: the int8 output of the first is the second's input (same
// tensor, same scale), so no dequantize/quantize pair is left between the calls.

func.func @main(%x: tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32> {
  %w = graph.constant dense<0.5> : tensor<8x8x1x1xf32>
  %c = graph.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64, xweave.calibration = {input_absmax = 1.0 : f64, output_absmax = 4.0 : f64}} : (tensor<1x8x4x4xf32>, tensor<8x8x1x1xf32>) -> tensor<1x8x4x4xf32>
  %r = graph.relu %c : tensor<1x8x4x4xf32>
  %w2 = graph.constant dense<0.25> : tensor<8x8x1x1xf32>
  %c2 = graph.conv2d %r, %w2 {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64, xweave.calibration = {input_absmax = 4.0 : f64, output_absmax = 8.0 : f64}} : (tensor<1x8x4x4xf32>, tensor<8x8x1x1xf32>) -> tensor<1x8x4x4xf32>
  func.return %c2 : tensor<1x8x4x4xf32>
}

// CHECK-LABEL: func.func @main
// CHECK:         %[[Y1:.*]] = func.call @int8_conv2d_0(
// CHECK-NOT:     graph.round
// CHECK:         %[[Y2:.*]] = func.call @int8_conv2d_1(%[[Y1]],
// CHECK-NEXT:    graph.cast %[[Y2]] : tensor<1x8x4x4xi8> -> tensor<1x8x4x4xf32>
// CHECK:       func.func private @int8_conv2d_0
// CHECK:       func.func private @int8_conv2d_1
// CHECK-NOT:     graph.clip %{{.*}} {min = 0.0

// -----

// Left alone: a layer without calibration, a grouped conv, a conv whose weight is not a
// constant; and, with min_in_channels=5, a conv with 4 input channels (an RGB-like
// input layer that stays on the CPU).

func.func @main(%x: tensor<1x4x4x4xf32>, %wa: tensor<4x4x1x1xf32>) -> (tensor<1x4x4x4xf32>, tensor<1x4x4x4xf32>, tensor<1x4x4x4xf32>, tensor<1x4x4x4xf32>) {
  %w = graph.constant dense<0.5> : tensor<4x4x1x1xf32>
  %a = graph.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x4x4x4xf32>, tensor<4x4x1x1xf32>) -> tensor<1x4x4x4xf32>
  %wg = graph.constant dense<0.5> : tensor<4x2x1x1xf32>
  %g = graph.conv2d %x, %wg {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 2 : i64, xweave.calibration = {input_absmax = 1.0 : f64, output_absmax = 4.0 : f64}} : (tensor<1x4x4x4xf32>, tensor<4x2x1x1xf32>) -> tensor<1x4x4x4xf32>
  %v = graph.conv2d %x, %wa {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64, xweave.calibration = {input_absmax = 1.0 : f64, output_absmax = 4.0 : f64}} : (tensor<1x4x4x4xf32>, tensor<4x4x1x1xf32>) -> tensor<1x4x4x4xf32>
  %m = graph.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64, xweave.calibration = {input_absmax = 1.0 : f64, output_absmax = 4.0 : f64}} : (tensor<1x4x4x4xf32>, tensor<4x4x1x1xf32>) -> tensor<1x4x4x4xf32>
  func.return %a, %g, %v, %m : tensor<1x4x4x4xf32>, tensor<1x4x4x4xf32>, tensor<1x4x4x4xf32>, tensor<1x4x4x4xf32>
}

// CHECK-LABEL: func.func @main
// CHECK:         %a = graph.conv2d %x, %w {
// CHECK:         %g = graph.conv2d %x, %wg {{.*}}groups = 2
// CHECK:         %v = graph.conv2d %x, %wa {
// CHECK:         func.call @int8_conv2d_0(
// CHECK-NOT:   func.call

// MIN-LABEL: func.func @main
// MIN:         %m = graph.conv2d %x, %w {
// MIN-NOT:     func.call
// MIN-NOT:     func.func private
