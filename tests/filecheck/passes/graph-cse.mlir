// RUN: xweave-opt %s -p graph-cse | filecheck %s
// RUN: xweave-opt %s -p cse | filecheck %s --check-prefix=UPSTREAM

// graph-cse: constants of a block with equal values are merged even when their
// dense_resource handles differ (the first stays), then xDSL's cse merges the ops
// computed from them. Plain `cse` compares handles and keeps both weights.

// CHECK-LABEL: func.func @same_weights
// CHECK-NEXT:    %a = graph.constant dense_resource<a_11111111> : tensor<20xf32>
// CHECK-NEXT:    %c = graph.constant dense_resource<c_33333333> : tensor<20xf32>
// CHECK-NEXT:    %ya = graph.mul %x, %a
// CHECK-NEXT:    %yc = graph.mul %x, %c
// CHECK-NEXT:    %s = graph.add %ya, %ya
// CHECK-NEXT:    %t = graph.add %s, %yc
// CHECK-NEXT:    func.return %t
// UPSTREAM-LABEL: func.func @same_weights
// UPSTREAM-NEXT:    %a = graph.constant dense_resource<a_11111111>
// UPSTREAM-NEXT:    %b = graph.constant dense_resource<b_22222222>
// UPSTREAM-NEXT:    %c = graph.constant dense_resource<c_33333333>
func.func @same_weights(%x: tensor<20xf32>) -> tensor<20xf32> {
  %a = graph.constant dense_resource<a_11111111> : tensor<20xf32>
  %b = graph.constant dense_resource<b_22222222> : tensor<20xf32>
  %c = graph.constant dense_resource<c_33333333> : tensor<20xf32>
  %ya = graph.mul %x, %a : (tensor<20xf32>, tensor<20xf32>) -> tensor<20xf32>
  %yb = graph.mul %x, %b : (tensor<20xf32>, tensor<20xf32>) -> tensor<20xf32>
  %yc = graph.mul %x, %c : (tensor<20xf32>, tensor<20xf32>) -> tensor<20xf32>
  %s = graph.add %ya, %yb : (tensor<20xf32>, tensor<20xf32>) -> tensor<20xf32>
  %t = graph.add %s, %yc : (tensor<20xf32>, tensor<20xf32>) -> tensor<20xf32>
  func.return %t : tensor<20xf32>
}

// Equal bytes under different types are different constants; inline constants merge.
// CHECK-LABEL: func.func @types_differ
// CHECK-NEXT:    %f = graph.constant dense<1.000000e+00> : tensor<2xf32>
// CHECK-NEXT:    %g = graph.constant dense<1065353216> : tensor<2xi32>
// CHECK-NEXT:    %y = graph.add %x, %f
// CHECK-NEXT:    %z = graph.add %y, %f
func.func @types_differ(%x: tensor<2xf32>) -> (tensor<2xf32>, tensor<2xi32>) {
  %f = graph.constant dense<1.0> : tensor<2xf32>
  %g = graph.constant dense<1065353216> : tensor<2xi32>
  %h = graph.constant dense<[1.0, 1.0]> : tensor<2xf32>
  %y = graph.add %x, %f : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %z = graph.add %y, %h : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  func.return %z, %g : tensor<2xf32>, tensor<2xi32>
}

// Different ops, or the same op with different properties, stay apart.
// CHECK-LABEL: func.func @distinct
// CHECK-NEXT:    %r = graph.relu %x
// CHECK-NEXT:    %s = graph.sigmoid %x
// CHECK-NEXT:    %t0 = graph.transpose %m {perm = array<i64: 1, 0>}
// CHECK-NEXT:    %t1 = graph.transpose %m {perm = array<i64: 0, 1>}
func.func @distinct(%x: tensor<4xf32>, %m: tensor<2x2xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<2x2xf32>, tensor<2x2xf32>) {
  %r = graph.relu %x : tensor<4xf32>
  %s = graph.sigmoid %x : tensor<4xf32>
  %t0 = graph.transpose %m {perm = array<i64: 1, 0>} : tensor<2x2xf32> -> tensor<2x2xf32>
  %t1 = graph.transpose %m {perm = array<i64: 0, 1>} : tensor<2x2xf32> -> tensor<2x2xf32>
  func.return %r, %s, %t0, %t1 : tensor<4xf32>, tensor<4xf32>, tensor<2x2xf32>, tensor<2x2xf32>
}

{-#
  dialect_resources: {
    builtin: {
      a_11111111: "0x04000000000040BF000000BF000080BE000000000000803E0000003F0000403F0000803F0000A03F0000C03F0000E03F000000400000104000002040000030400000404000005040000060400000704000008040",
      b_22222222: "0x04000000000040BF000000BF000080BE000000000000803E0000003F0000403F0000803F0000A03F0000C03F0000E03F000000400000104000002040000030400000404000005040000060400000704000008040",
      c_33333333: "0x04000000000040BF000000BF000080BE000000000000803E0000003F0000403F0000C8420000A03F0000C03F0000E03F000000400000104000002040000030400000404000005040000060400000704000008040"
    }
  }
#-}
