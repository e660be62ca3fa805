// RUN: xweave-opt %s --split-input-file -p graph-fuse | filecheck %s
// RUN: xweave-opt %s --split-input-file -p graph-fuse,graph-fuse | filecheck %s
// RUN: xweave-opt %s --split-input-file -p 'graph-fuse{max-depth=2}' | filecheck %s --check-prefix=DEPTH

// conv2d takes its whole elementwise epilogue: bias, a batch norm written as mul/add
// with per-channel constants, relu and the residual add. Constants stay outside.

func.func @conv_epilogue(%x: tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32> {
  %w = graph.constant dense<0.5> : tensor<4x4x3x3xf32>
  %s = graph.constant dense<2.0> : tensor<1x4x1x1xf32>
  %t = graph.constant dense<0.1> : tensor<1x4x1x1xf32>
  %c = graph.conv2d %x, %w {dilations = array<i64: 1, 1>, groups = 1 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x8x8xf32>
  %m = graph.mul %c, %s : (tensor<1x4x8x8xf32>, tensor<1x4x1x1xf32>) -> tensor<1x4x8x8xf32>
  %a = graph.add %m, %t : (tensor<1x4x8x8xf32>, tensor<1x4x1x1xf32>) -> tensor<1x4x8x8xf32>
  %r = graph.relu %a : tensor<1x4x8x8xf32>
  %y = graph.add %r, %x : (tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  func.return %y : tensor<1x4x8x8xf32>
}

// CHECK-LABEL: func.func @conv_epilogue
// CHECK-NEXT:    %w = graph.constant
// CHECK-NEXT:    %s = graph.constant
// CHECK-NEXT:    %t = graph.constant
// CHECK-NEXT:    %y = graph.fused (%x_1 = %x, %w_1 = %w, %s_1 = %s, %t_1 = %t) : (tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>, tensor<1x4x1x1xf32>, tensor<1x4x1x1xf32>) -> tensor<1x4x8x8xf32> {
// CHECK-NEXT:      %c = graph.conv2d %x_1, %w_1
// CHECK-NEXT:      %m = graph.mul %c, %s_1
// CHECK-NEXT:      %a = graph.add %m, %t_1
// CHECK-NEXT:      %r = graph.relu %a
// CHECK-NEXT:      %y_1 = graph.add %r, %x_1
// CHECK-NEXT:      graph.yield %y_1 : tensor<1x4x8x8xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %y : tensor<1x4x8x8xf32>

// DEPTH-LABEL: func.func @conv_epilogue
// DEPTH:         graph.fused
// DEPTH-NEXT:      graph.conv2d
// DEPTH-NEXT:      graph.mul
// DEPTH-NEXT:      graph.yield
// DEPTH:         graph.fused
// DEPTH-NEXT:      graph.add
// DEPTH-NEXT:      graph.relu
// DEPTH-NEXT:      graph.yield
// DEPTH:         graph.add

// -----

// A value with two users fuses only if the group takes both: the conv result is also
// returned, so the conv stands alone; exp's users meet again at the final add, so the
// diamond becomes one group.

func.func @two_users(%x: tensor<1x4x8x8xf32>) -> (tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>) {
  %w = graph.constant dense<0.5> : tensor<4x4x1x1xf32>
  %c = graph.conv2d %x, %w {dilations = array<i64: 1, 1>, groups = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x4x8x8xf32>, tensor<4x4x1x1xf32>) -> tensor<1x4x8x8xf32>
  %r = graph.relu %c : tensor<1x4x8x8xf32>
  %e = graph.exp %x : tensor<1x4x8x8xf32>
  %n = graph.neg %e : tensor<1x4x8x8xf32>
  %q = graph.sqrt %e : tensor<1x4x8x8xf32>
  %d = graph.add %n, %q : (tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  func.return %c, %r, %d : tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>
}

// CHECK-LABEL: func.func @two_users
// CHECK-NEXT:    %w = graph.constant
// CHECK-NEXT:    %c = graph.conv2d %x, %w
// CHECK-NEXT:    %r = graph.relu %c
// CHECK-NEXT:    %d = graph.fused (%x_1 = %x) : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32> {
// CHECK-NEXT:      %e = graph.exp %x_1
// CHECK-NEXT:      %n = graph.neg %e
// CHECK-NEXT:      %q = graph.sqrt %e
// CHECK-NEXT:      %d_1 = graph.add %n, %q
// CHECK-NEXT:      graph.yield %d_1
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %c, %r, %d

// -----

// A reduction fuses its injective inputs (transpose, scale, exp) but takes no epilogue;
// conv2d takes no prologue; an op that broadcasts the conv result is no epilogue.

func.func @reductions(%x: tensor<4x8xf32>, %z: tensor<1x4x8x8xf32>, %big: tensor<2x4x8x8xf32>) -> (tensor<8x1xf32>, tensor<2x4x8x8xf32>) {
  %k = graph.constant dense<0.5> : tensor<1xf32>
  %w = graph.constant dense<0.5> : tensor<4x4x1x1xf32>
  %t = graph.transpose %x {perm = array<i64: 1, 0>} : tensor<4x8xf32> -> tensor<8x4xf32>
  %m = graph.mul %t, %k : (tensor<8x4xf32>, tensor<1xf32>) -> tensor<8x4xf32>
  %e = graph.exp %m : tensor<8x4xf32>
  %s = graph.reduce %e {axes = array<i64: 1>, keepdims = true, kind = "sum"} : tensor<8x4xf32> -> tensor<8x1xf32>
  %l = graph.log %s : tensor<8x1xf32>
  %r = graph.relu %z : tensor<1x4x8x8xf32>
  %c = graph.conv2d %r, %w {dilations = array<i64: 1, 1>, groups = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x4x8x8xf32>, tensor<4x4x1x1xf32>) -> tensor<1x4x8x8xf32>
  %b = graph.add %c, %big : (tensor<1x4x8x8xf32>, tensor<2x4x8x8xf32>) -> tensor<2x4x8x8xf32>
  func.return %l, %b : tensor<8x1xf32>, tensor<2x4x8x8xf32>
}

// CHECK-LABEL: func.func @reductions
// CHECK:         %s = graph.fused (%x_1 = %x, %k_1 = %k) : (tensor<4x8xf32>, tensor<1xf32>) -> tensor<8x1xf32> {
// CHECK-NEXT:      %t = graph.transpose %x_1
// CHECK-NEXT:      %m = graph.mul %t, %k_1
// CHECK-NEXT:      %e = graph.exp %m
// CHECK-NEXT:      %s_1 = graph.reduce %e
// CHECK-NEXT:      graph.yield %s_1
// CHECK-NEXT:    }
// CHECK-NEXT:    %l = graph.log %s
// CHECK-NEXT:    %r = graph.relu %z
// CHECK-NEXT:    %c = graph.conv2d %r, %w
// CHECK-NEXT:    %b = graph.add %c, %big
// CHECK-NEXT:    func.return %l, %b

// -----

// softmax (out-elementwise-fusable) takes an elementwise epilogue, not its input
// scaling; injective and broadcast chains fuse together.

func.func @softmax_and_chains(%x: tensor<2x8xf32>, %y: tensor<8x2xf32>) -> (tensor<2x8xf32>, tensor<16xf32>) {
  %k = graph.constant dense<0.5> : tensor<1xf32>
  %m = graph.mul %x, %k : (tensor<2x8xf32>, tensor<1xf32>) -> tensor<2x8xf32>
  %s = graph.softmax %m {axis = 1 : i64} : tensor<2x8xf32>
  %c = graph.clip %s {max = 0.9 : f64, min = 0.1 : f64} : tensor<2x8xf32>
  %t = graph.transpose %y {perm = array<i64: 1, 0>} : tensor<8x2xf32> -> tensor<2x8xf32>
  %a = graph.add %t, %x : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %f = graph.reshape %a : tensor<2x8xf32> -> tensor<16xf32>
  %g = graph.sigmoid %f : tensor<16xf32>
  func.return %c, %g : tensor<2x8xf32>, tensor<16xf32>
}

// CHECK-LABEL: func.func @softmax_and_chains
// CHECK:         %m = graph.mul %x, %k
// CHECK-NEXT:    %c = graph.fused (%m_1 = %m) : (tensor<2x8xf32>) -> tensor<2x8xf32> {
// CHECK-NEXT:      %s = graph.softmax %m_1
// CHECK-NEXT:      %c_1 = graph.clip %s
// CHECK-NEXT:      graph.yield %c_1
// CHECK-NEXT:    }
// CHECK-NEXT:    %g = graph.fused (%y_1 = %y, %x_1 = %x) : (tensor<8x2xf32>, tensor<2x8xf32>) -> tensor<16xf32> {
// CHECK-NEXT:      %t = graph.transpose %y_1
// CHECK-NEXT:      %a = graph.add %t, %x_1
// CHECK-NEXT:      %f = graph.reshape %a
// CHECK-NEXT:      %g_1 = graph.sigmoid %f
// CHECK-NEXT:      graph.yield %g_1
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %c, %g

// -----

// Existing groups are opaque: nothing fuses into or out of them.

func.func @opaque(%x: tensor<4xf32>) -> tensor<4xf32> {
  %e = graph.exp %x : tensor<4xf32>
  %g = graph.fused (%a = %e) : (tensor<4xf32>) -> tensor<4xf32> {
    %n = graph.neg %a : tensor<4xf32>
    graph.yield %n : tensor<4xf32>
  }
  %r = graph.relu %g : tensor<4xf32>
  func.return %r : tensor<4xf32>
}

// CHECK-LABEL: func.func @opaque
// CHECK-NEXT:    %e = graph.exp %x
// CHECK-NEXT:    %g = graph.fused (%a = %e)
// CHECK-NEXT:      %n = graph.neg %a
// CHECK-NEXT:      graph.yield %n
// CHECK-NEXT:    }
// CHECK-NEXT:    %r = graph.relu %g
