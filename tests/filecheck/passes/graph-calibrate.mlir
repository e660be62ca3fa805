// RUN: python -c "import numpy as np; x = np.zeros((2, 1, 4, 2, 2), np.float32); x[0, 0, 0, 0, 0] = 3.0; x[1, 0, 1, 1, 1] = -5.0; np.savez('%t.npz', x=x)"
// RUN: xweave-opt %s -p 'graph-calibrate{inputs="%t.npz"}' | filecheck %s
// RUN: xweave-opt %s -p 'graph-calibrate{inputs="%t.npz" min_in_channels=8}' | filecheck %s --check-prefix=MIN
// RUN: not xweave-opt %s -p graph-calibrate 2>&1 | filecheck %s --check-prefix=NOFILE

// graph-calibrate runs the float model on every sample (here two, stacked on a leading
// axis) and records the largest |value| of each conv2d/dense layer's input and output;
// a relu that is the output's only user belongs to the layer. Sample 0 peaks at 3 in
// channel 0, sample 1 at -5 in channel 1: the conv (weights 1 on the diagonal, so it
// copies its input) sees 5 in, and 3 out after the relu. The dense reads the relu output.

func.func @main(%x: tensor<1x4x2x2xf32>) -> tensor<1x3xf32> attributes {xweave.input_names = ["x"], xweave.output_names = ["y"]} {
  %w = graph.constant dense<[[[[1.0]], [[0.0]], [[0.0]], [[0.0]]], [[[0.0]], [[1.0]], [[0.0]], [[0.0]]], [[[0.0]], [[0.0]], [[1.0]], [[0.0]]], [[[0.0]], [[0.0]], [[0.0]], [[1.0]]]]> : tensor<4x4x1x1xf32>
  %c = graph.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x4x2x2xf32>, tensor<4x4x1x1xf32>) -> tensor<1x4x2x2xf32>
  %r = graph.relu %c : tensor<1x4x2x2xf32>
  %f = graph.reshape %r : tensor<1x4x2x2xf32> -> tensor<1x16xf32>
  %w2 = graph.constant dense<2.0> : tensor<3x16xf32>
  %d = graph.dense %f, %w2 : (tensor<1x16xf32>, tensor<3x16xf32>) -> tensor<1x3xf32>
  func.return %d : tensor<1x3xf32>
}

// CHECK:      graph.conv2d %x, %w {xweave.calibration = {input_absmax = 5.000000e+00 : f64, output_absmax = 3.000000e+00 : f64}, strides
// CHECK-NEXT: graph.relu
// CHECK:      graph.dense %f, %w2 {xweave.calibration = {input_absmax = 3.000000e+00 : f64, output_absmax = 6.000000e+00 : f64}}

// With min_in_channels=8 the conv (4 channels) is skipped, the dense (16 features) not.
// MIN:      %c = graph.conv2d %x, %w {strides
// MIN:      graph.dense %f, %w2 {xweave.calibration = {input_absmax = 3.000000e+00 : f64

// NOFILE: graph-calibrate needs inputs=FILE.npz
