// RUN: xweave-opt %s -p graph-simplify-inference | filecheck %s

// graph-simplify-inference: batch_norm and per-channel mul/div/add/sub after a
// conv2d/dense fold into its weights and bias (computed at compile time); ops that
// return their input disappear.

// a = scale / sqrt(var + eps) = [1, 3]; w' = w * a; b' = (b - mean) * a + beta.
// CHECK-LABEL: func.func @conv_bn
// CHECK-NEXT:    %w = graph.constant dense<{{\[\[\[\[}}1.000000e+00]]], {{\[\[\[}}6.000000e+00]]]]> : tensor<2x1x1x1xf32>
// CHECK-NEXT:    %b = graph.constant dense<[1.000000e+00, -6.000000e+00]> : tensor<2xf32>
// CHECK-NEXT:    %y = graph.conv2d %x, %w, %b {{.*}}groups = 1 : i64
// CHECK-NEXT:    %r = graph.relu %y
// CHECK-NEXT:    func.return %r
func.func @conv_bn(%x: tensor<1x1x3x3xf32>) -> tensor<1x2x3x3xf32> {
  %w = graph.constant dense<[[[[1.0]]], [[[2.0]]]]> : tensor<2x1x1x1xf32>
  %b = graph.constant dense<[0.5, -1.0]> : tensor<2xf32>
  %c = graph.conv2d %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x1x3x3xf32>, tensor<2x1x1x1xf32>, tensor<2xf32>) -> tensor<1x2x3x3xf32>
  %scale = graph.constant dense<[2.0, 3.0]> : tensor<2xf32>
  %beta = graph.constant dense<[1.0, 0.0]> : tensor<2xf32>
  %mean = graph.constant dense<[0.5, 1.0]> : tensor<2xf32>
  %var = graph.constant dense<[3.0, 0.0]> : tensor<2xf32>
  %y = graph.batch_norm %c, %scale, %beta, %mean, %var {epsilon = 1.0 : f64} : (tensor<1x2x3x3xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x3x3xf32>
  %r = graph.relu %y : tensor<1x2x3x3xf32>
  func.return %r : tensor<1x2x3x3xf32>
}

// A conv2d without bias gets one; dense folds the same way (channels = axis 1).
// CHECK-LABEL: func.func @no_bias_and_dense
// CHECK-NEXT:    %w = graph.constant dense<{{\[\[\[\[}}1.000000e+00]]], {{\[\[\[}}6.000000e+00]]]]> : tensor<2x1x1x1xf32>
// CHECK-NEXT:    %w_bias = graph.constant dense<[-5.000000e-01, -3.000000e+00]> : tensor<2xf32>
// CHECK-NEXT:    %y = graph.conv2d %x, %w, %w_bias
// CHECK-NEXT:    %d = graph.constant dense<{{\[\[}}1.000000e+00, 2.000000e+00], [9.000000e+00, 1.200000e+01]]> : tensor<2x2xf32>
// CHECK-NEXT:    %d_bias = graph.constant dense<[-5.000000e-01, -3.000000e+00]> : tensor<2xf32>
// CHECK-NEXT:    %z = graph.dense %m, %d, %d_bias : (tensor<3x2xf32>, tensor<2x2xf32>, tensor<2xf32>) -> tensor<3x2xf32>
// CHECK-NEXT:    func.return %y, %z
func.func @no_bias_and_dense(%x: tensor<1x1x3x3xf32>, %m: tensor<3x2xf32>) -> (tensor<1x2x3x3xf32>, tensor<3x2xf32>) {
  %w = graph.constant dense<[[[[1.0]]], [[[2.0]]]]> : tensor<2x1x1x1xf32>
  %c = graph.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x1x3x3xf32>, tensor<2x1x1x1xf32>) -> tensor<1x2x3x3xf32>
  %scale = graph.constant dense<[2.0, 3.0]> : tensor<2xf32>
  %beta = graph.constant dense<[0.0, 0.0]> : tensor<2xf32>
  %mean = graph.constant dense<[0.5, 1.0]> : tensor<2xf32>
  %var = graph.constant dense<[3.0, 0.0]> : tensor<2xf32>
  %y = graph.batch_norm %c, %scale, %beta, %mean, %var {epsilon = 1.0 : f64} : (tensor<1x2x3x3xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x3x3xf32>
  %d = graph.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %e = graph.dense %m, %d : (tensor<3x2xf32>, tensor<2x2xf32>) -> tensor<3x2xf32>
  %z = graph.batch_norm %e, %scale, %beta, %mean, %var {epsilon = 1.0 : f64} : (tensor<3x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<3x2xf32>
  func.return %y, %z : tensor<1x2x3x3xf32>, tensor<3x2xf32>
}

// Where there is no conv/dense to fold into (its result has another user, or the
// input is not one: DenseNet's pre-activation batch norms), a batch_norm with constant
// parameters becomes x * a + (beta - mean * a), per-channel constants shaped to
// broadcast along axis 1 (a = 2 / sqrt(2 + 1)). Non-constant parameters: left alone.
// CHECK-LABEL: func.func @bn_as_affine
// CHECK-NEXT:    %w = graph.constant
// CHECK-NEXT:    %c = graph.conv2d %x, %w
// CHECK-NEXT:    %scale = graph.constant
// CHECK-NEXT:    %y = graph.constant dense<{{\[\[\[}}1.15470052]], {{\[\[}}1.500000e+00]]]> : tensor<2x1x1xf32>
// CHECK-NEXT:    %y_1 = graph.constant dense<{{\[\[\[}}-0.309401065]], {{\[\[}}-1.500000e+00]]]> : tensor<2x1x1xf32>
// CHECK-NEXT:    %y_2 = graph.mul %c, %y : (tensor<1x2x3x3xf32>, tensor<2x1x1xf32>) -> tensor<1x2x3x3xf32>
// CHECK-NEXT:    %y_3 = graph.add %y_2, %y_1 : (tensor<1x2x3x3xf32>, tensor<2x1x1xf32>) -> tensor<1x2x3x3xf32>
// CHECK-NEXT:    %z = graph.batch_norm %c, %p, %scale, %scale, %scale
// CHECK-NEXT:    %r = graph.relu %x
// CHECK-NEXT:    %u = graph.constant {{.*}} : tensor<2x1x1xf32>
// CHECK-NEXT:    %u_1 = graph.constant {{.*}} : tensor<2x1x1xf32>
// CHECK-NEXT:    %u_2 = graph.mul %r, %u
// CHECK-NEXT:    %u_3 = graph.add %u_2, %u_1
// CHECK-NEXT:    %v = graph.constant dense<[1.15470052, 1.500000e+00]> : tensor<2xf32>
// CHECK-NEXT:    %v_1 = graph.constant dense<[-0.309401065, -1.500000e+00]> : tensor<2xf32>
// CHECK-NEXT:    %v_2 = graph.mul %m, %v : (tensor<3x2xf32>, tensor<2xf32>) -> tensor<3x2xf32>
// CHECK-NEXT:    %v_3 = graph.add %v_2, %v_1
// CHECK-NEXT:    func.return %y_3, %z, %u_3, %v_3
func.func @bn_as_affine(%x: tensor<1x2x3x3xf32>, %p: tensor<2xf32>, %m: tensor<3x2xf32>) -> (tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>, tensor<3x2xf32>) {
  %w = graph.constant dense<[[[[1.0]], [[0.0]]], [[[0.0]], [[2.0]]]]> : tensor<2x2x1x1xf32>
  %c = graph.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x2x3x3xf32>, tensor<2x2x1x1xf32>) -> tensor<1x2x3x3xf32>
  %scale = graph.constant dense<[2.0, 3.0]> : tensor<2xf32>
  %y = graph.batch_norm %c, %scale, %scale, %scale, %scale {epsilon = 1.0 : f64} : (tensor<1x2x3x3xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x3x3xf32>
  %z = graph.batch_norm %c, %p, %scale, %scale, %scale {epsilon = 1.0 : f64} : (tensor<1x2x3x3xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x3x3xf32>
  %r = graph.relu %x : tensor<1x2x3x3xf32>
  %u = graph.batch_norm %r, %scale, %scale, %scale, %scale {epsilon = 1.0 : f64} : (tensor<1x2x3x3xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x3x3xf32>
  %v = graph.batch_norm %m, %scale, %scale, %scale, %scale {epsilon = 1.0 : f64} : (tensor<3x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<3x2xf32>
  func.return %y, %z, %u, %v : tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>, tensor<3x2xf32>
}

// conv -> mul by [1, 2, 1, 1] -> add of [2, 1, 1]: weights scaled, bias shifted.
// CHECK-LABEL: func.func @channel_affine
// CHECK-NEXT:    %w = graph.constant dense<{{\[\[\[\[}}1.000000e+00]]], {{\[\[\[}}4.000000e+00]]]]> : tensor<2x1x1x1xf32>
// CHECK-NEXT:    %w_bias = graph.constant dense<[5.000000e-01, -1.000000e+00]> : tensor<2xf32>
// CHECK-NEXT:    %t = graph.conv2d %x, %w, %w_bias
// CHECK-NEXT:    func.return %t
func.func @channel_affine(%x: tensor<1x1x3x3xf32>) -> tensor<1x2x3x3xf32> {
  %w = graph.constant dense<[[[[1.0]]], [[[2.0]]]]> : tensor<2x1x1x1xf32>
  %c = graph.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x1x3x3xf32>, tensor<2x1x1x1xf32>) -> tensor<1x2x3x3xf32>
  %k = graph.constant dense<[[[[1.0]], [[2.0]]]]> : tensor<1x2x1x1xf32>
  %s = graph.mul %k, %c : (tensor<1x2x1x1xf32>, tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  %h = graph.constant dense<[[[0.5]], [[-1.0]]]> : tensor<2x1x1xf32>
  %t = graph.add %s, %h : (tensor<1x2x3x3xf32>, tensor<2x1x1xf32>) -> tensor<1x2x3x3xf32>
  func.return %t : tensor<1x2x3x3xf32>
}

// Left alone: a constant varying along W (not the channels), a constant minus the
// conv, a division by zero.
// CHECK-LABEL: func.func @affine_stays
// CHECK:         %s = graph.mul %c, %k
// CHECK:         %t = graph.sub %k, %s
// CHECK:         %u = graph.div %t, %z
func.func @affine_stays(%x: tensor<1x1x3x3xf32>) -> tensor<1x2x3x3xf32> {
  %w = graph.constant dense<[[[[1.0]]], [[[2.0]]]]> : tensor<2x1x1x1xf32>
  %c = graph.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x1x3x3xf32>, tensor<2x1x1x1xf32>) -> tensor<1x2x3x3xf32>
  %k = graph.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
  %s = graph.mul %c, %k : (tensor<1x2x3x3xf32>, tensor<3xf32>) -> tensor<1x2x3x3xf32>
  %t = graph.sub %k, %s : (tensor<3xf32>, tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  %v = graph.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x1x3x3xf32>, tensor<2x1x1x1xf32>) -> tensor<1x2x3x3xf32>
  %z = graph.constant dense<[[[0.0]], [[1.0]]]> : tensor<2x1x1xf32>
  %u = graph.div %t, %z : (tensor<1x2x3x3xf32>, tensor<2x1x1xf32>) -> tensor<1x2x3x3xf32>
  %q = graph.div %v, %z : (tensor<1x2x3x3xf32>, tensor<2x1x1xf32>) -> tensor<1x2x3x3xf32>
  %o = graph.add %u, %q : (tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  func.return %o : tensor<1x2x3x3xf32>
}

// Ops returning their input vanish; consecutive reshapes/transposes compose.
// CHECK-LABEL: func.func @identities
// CHECK-NEXT:    %r2 = graph.reshape %x : tensor<2x3x4xf32> -> tensor<4x6xf32>
// CHECK-NEXT:    %t2 = graph.transpose %x {perm = array<i64: 2, 0, 1>} : tensor<2x3x4xf32> -> tensor<4x2x3xf32>
// CHECK-NEXT:    %real = graph.slice %x
// CHECK-NEXT:    func.return %x, %r2, %t2, %real
func.func @identities(%x: tensor<2x3x4xf32>) -> (tensor<2x3x4xf32>, tensor<4x6xf32>, tensor<4x2x3xf32>, tensor<1x3x4xf32>) {
  %a = graph.reshape %x : tensor<2x3x4xf32> -> tensor<2x3x4xf32>
  %b = graph.transpose %a {perm = array<i64: 0, 1, 2>} : tensor<2x3x4xf32> -> tensor<2x3x4xf32>
  %c = graph.cast %b : tensor<2x3x4xf32> -> tensor<2x3x4xf32>
  %d = graph.broadcast_to %c : tensor<2x3x4xf32> -> tensor<2x3x4xf32>
  %e = graph.tile %d {repeats = array<i64: 1, 1, 1>} : tensor<2x3x4xf32> -> tensor<2x3x4xf32>
  %f = graph.pad %e {pads = array<i64: 0, 0, 0, 0, 0, 0>, mode = "constant", value = 0.0 : f64} : tensor<2x3x4xf32> -> tensor<2x3x4xf32>
  %g = graph.slice %f {starts = array<i64: 0, 0, 0>, steps = array<i64: 1, 1, 1>} : tensor<2x3x4xf32> -> tensor<2x3x4xf32>
  %h = graph.concat %g {axis = 0 : i64} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %r1 = graph.reshape %x : tensor<2x3x4xf32> -> tensor<6x4xf32>
  %r2 = graph.reshape %r1 : tensor<6x4xf32> -> tensor<4x6xf32>
  %t1 = graph.transpose %x {perm = array<i64: 1, 2, 0>} : tensor<2x3x4xf32> -> tensor<3x4x2xf32>
  %t2 = graph.transpose %t1 {perm = array<i64: 1, 2, 0>} : tensor<3x4x2xf32> -> tensor<4x2x3xf32>
  %real = graph.slice %x {starts = array<i64: 1, 0, 0>, steps = array<i64: 1, 1, 1>} : tensor<2x3x4xf32> -> tensor<1x3x4xf32>
  func.return %h, %r2, %t2, %real : tensor<2x3x4xf32>, tensor<4x6xf32>, tensor<4x2x3xf32>, tensor<1x3x4xf32>
}
