// RUN: xweave-opt %s -p graph-fold-constants | filecheck %s
// RUN: xweave-opt %s -p 'graph-fold-constants{max-elements=16}' | filecheck %s --check-prefix=BOUND

// graph-fold-constants: a graph op whose operands are all constants becomes the
// constant it computes (by the graph interpreter); chains fold in one walk and the
// constants left unused disappear. Ops with a non-constant operand stay.

// CHECK-LABEL: func.func @chain
// CHECK-NEXT:    %s = graph.constant dense<{{\[\[}}1.100000e+01, 2.200000e+01, 3.300000e+01], [1.400000e+01, 2.500000e+01, 3.600000e+01]]> : tensor<2x3xf32>
// CHECK-NEXT:    %t = graph.constant dense<{{\[\[}}1.100000e+01, 1.400000e+01], [2.200000e+01, 2.500000e+01], [3.300000e+01, 3.600000e+01]]> : tensor<3x2xf32>
// CHECK-NEXT:    %y = graph.mul %x, %s
// CHECK-NEXT:    func.return %t, %y
func.func @chain(%x: tensor<2x3xf32>) -> (tensor<3x2xf32>, tensor<2x3xf32>) {
  %a = graph.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  %b = graph.constant dense<[10.0, 20.0, 30.0]> : tensor<3xf32>
  %s = graph.add %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %t = graph.transpose %s {perm = array<i64: 1, 0>} : tensor<2x3xf32> -> tensor<3x2xf32>
  %y = graph.mul %x, %s : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %t, %y : tensor<3x2xf32>, tensor<2x3xf32>
}

// A weight transform: the transposed weight is a new blob named after the weight.
// Bounded folds still fold it: it is no bigger than its operand.
// CHECK-LABEL: func.func @weight_transpose
// CHECK-NEXT:    %wt = graph.constant dense_resource<w_transpose_{{[0-9a-f]+}}> : tensor<8x4xf32>
// CHECK-NEXT:    %y = graph.matmul %x, %wt
// BOUND-LABEL: func.func @weight_transpose
// BOUND-NEXT:    %wt = graph.constant dense_resource<w_transpose_{{[0-9a-f]+}}> : tensor<8x4xf32>
func.func @weight_transpose(%x: tensor<2x8xf32>) -> tensor<2x4xf32> {
  %w = graph.constant dense_resource<w_0123abcd> : tensor<4x8xf32>
  %wt = graph.transpose %w {perm = array<i64: 1, 0>} : tensor<4x8xf32> -> tensor<8x4xf32>
  %y = graph.matmul %x, %wt : (tensor<2x8xf32>, tensor<8x4xf32>) -> tensor<2x4xf32>
  func.return %y : tensor<2x4xf32>
}

// Growing a constant past max-elements is refused; within the bound it folds.
// CHECK-LABEL: func.func @broadcast
// CHECK-NEXT:    %b = graph.constant dense<2.500000e+00> : tensor<4x8xf32>
// BOUND-LABEL: func.func @broadcast
// BOUND-NEXT:    %c = graph.constant dense<2.500000e+00> : tensor<f32>
// BOUND-NEXT:    %b = graph.broadcast_to %c : tensor<f32> -> tensor<4x8xf32>
func.func @broadcast(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %c = graph.constant dense<2.5> : tensor<f32>
  %b = graph.broadcast_to %c : tensor<f32> -> tensor<4x8xf32>
  %y = graph.add %x, %b : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  func.return %y : tensor<4x8xf32>
}

// Integer shape arithmetic folds; a cast to i1 stays (no i1 parameters on the CPU).
// CHECK-LABEL: func.func @ints_and_bools
// CHECK-NEXT:    %g = graph.constant dense<[3, 1]> : tensor<2xi64>
// CHECK-NEXT:    %m = graph.constant dense<[1, 0]> : tensor<2xi8>
// CHECK-NEXT:    %b = graph.cast %m : tensor<2xi8> -> tensor<2xi1>
// CHECK-NEXT:    %y = graph.where %b, %x, %x
func.func @ints_and_bools(%x: tensor<2xf32>) -> (tensor<2xi64>, tensor<2xf32>) {
  %s = graph.constant dense<[2, 5, 3, 1]> : tensor<4xi64>
  %i = graph.constant dense<[2, 3]> : tensor<2xi64>
  %g = graph.gather %s, %i {axis = 0 : i64} : (tensor<4xi64>, tensor<2xi64>) -> tensor<2xi64>
  %m = graph.constant dense<[1, 0]> : tensor<2xi8>
  %b = graph.cast %m : tensor<2xi8> -> tensor<2xi1>
  %y = graph.where %b, %x, %x : (tensor<2xi1>, tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  func.return %g, %y : tensor<2xi64>, tensor<2xf32>
}

// Nothing constant: nothing changes.
// CHECK-LABEL: func.func @no_constants
// CHECK-NEXT:    %r = graph.relu %x
// CHECK-NEXT:    func.return %r
func.func @no_constants(%x: tensor<4xf32>) -> tensor<4xf32> {
  %r = graph.relu %x : tensor<4xf32>
  func.return %r : tensor<4xf32>
}

{-#
  dialect_resources: {
    builtin: {
      w_0123abcd: "0x04000000000000000000003F0000803F0000C03F0000004000002040000040400000604000008040000090400000A0400000B0400000C0400000D0400000E0400000F04000000041000008410000104100001841000020410000284100003041000038410000404100004841000050410000584100006041000068410000704100007841"
    }
  }
#-}
