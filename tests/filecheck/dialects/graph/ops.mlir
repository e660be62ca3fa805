// RUN: XWEAVE_ROUNDTRIP
// RUN: XWEAVE_GENERIC_ROUNDTRIP

func.func @ops(%x: tensor<1x4x8x8xf32>, %v: tensor<2x3xf32>, %r: tensor<3xf32>) -> tensor<1x4x8x8xf32> {
  %w = graph.constant dense_resource<conv1_w_0a1b2c3d> : tensor<4x2x3x3xf32>
  %b = graph.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %conv = graph.conv2d %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 2 : i64} : (tensor<1x4x8x8xf32>, tensor<4x2x3x3xf32>, tensor<4xf32>) -> tensor<1x4x8x8xf32>
  %conv_nb = graph.conv2d %x, %w {strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 2, 2>, groups = 2 : i64} : (tensor<1x4x8x8xf32>, tensor<4x2x3x3xf32>) -> tensor<1x4x2x2xf32>
  %dw = graph.constant dense<1.0> : tensor<5x3xf32>
  %db = graph.constant dense<0.5> : tensor<5xf32>
  %dense = graph.dense %v, %dw, %db : (tensor<2x3xf32>, tensor<5x3xf32>, tensor<5xf32>) -> tensor<2x5xf32>
  %dense_nb = graph.dense %v, %dw : (tensor<2x3xf32>, tensor<5x3xf32>) -> tensor<2x5xf32>
  %dwt = graph.transpose %dw {perm = array<i64: 1, 0>} : tensor<5x3xf32> -> tensor<3x5xf32>
  %mm = graph.matmul %v, %dwt : (tensor<2x3xf32>, tensor<3x5xf32>) -> tensor<2x5xf32>
  %add = graph.add %v, %r : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %sub = graph.sub %v, %r : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %mul = graph.mul %v, %v : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %div = graph.div %r, %v : (tensor<3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %max = graph.max %v, %r : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %min = graph.min %v, %r : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %pow = graph.pow %v, %r : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %relu = graph.relu %conv : tensor<1x4x8x8xf32>
  %sigmoid = graph.sigmoid %v : tensor<2x3xf32>
  %tanh = graph.tanh %v : tensor<2x3xf32>
  %exp = graph.exp %v : tensor<2x3xf32>
  %neg = graph.neg %v : tensor<2x3xf32>
  %sqrt = graph.sqrt %v : tensor<2x3xf32>
  %abs = graph.abs %v : tensor<2x3xf32>
  %clip = graph.clip %v {min = 0.0 : f64, max = 6.0 : f64} : tensor<2x3xf32>
  %mp = graph.max_pool2d %relu {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, ceil_mode = false} : tensor<1x4x8x8xf32> -> tensor<1x4x4x4xf32>
  %ap = graph.avg_pool2d %relu {kernel = array<i64: 2, 2>, strides = array<i64: 3, 3>, pads = array<i64: 0, 0, 0, 0>, ceil_mode = true, count_include_pad = true} : tensor<1x4x8x8xf32> -> tensor<1x4x3x3xf32>
  %gap = graph.global_avg_pool2d %relu : tensor<1x4x8x8xf32> -> tensor<1x4x1x1xf32>
  %gmp = graph.global_max_pool2d %relu : tensor<1x4x8x8xf32> -> tensor<1x4x1x1xf32>
  %reshape = graph.reshape %gap : tensor<1x4x1x1xf32> -> tensor<1x4xf32>
  %transpose = graph.transpose %v {perm = array<i64: 1, 0>} : tensor<2x3xf32> -> tensor<3x2xf32>
  func.return %relu : tensor<1x4x8x8xf32>
}

{-#
  dialect_resources: {
    builtin: {
      conv1_w_0a1b2c3d: "0x04000000000000000000803F0000004000004040000080400000A0400000C0400000E0400000004100001041000020410000304100004041000050410000604100007041000080410000884100009041000098410000A0410000A8410000B0410000B8410000C0410000C8410000D0410000D8410000E0410000E8410000F0410000F84100000042000004420000084200000C4200001042000014420000184200001C4200002042000024420000284200002C4200003042000034420000384200003C4200004042000044420000484200004C4200005042000054420000584200005C4200006042000064420000684200006C4200007042000074420000784200007C42000080420000824200008442000086420000884200008A4200008C4200008E42"
    }
  }
#-}

// CHECK:      builtin.module {
// CHECK-NEXT:   func.func @ops(%x: tensor<1x4x8x8xf32>, %v: tensor<2x3xf32>, %r: tensor<3xf32>) -> tensor<1x4x8x8xf32> {
// CHECK-NEXT:     %w = graph.constant dense_resource<conv1_w_0a1b2c3d> : tensor<4x2x3x3xf32>
// CHECK-NEXT:     %b = graph.constant dense<[1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00]> : tensor<4xf32>
// CHECK-NEXT:     %conv = graph.conv2d %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 2 : i64} : (tensor<1x4x8x8xf32>, tensor<4x2x3x3xf32>, tensor<4xf32>) -> tensor<1x4x8x8xf32>
// CHECK-NEXT:     %conv_nb = graph.conv2d %x, %w {strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 2, 2>, groups = 2 : i64} : (tensor<1x4x8x8xf32>, tensor<4x2x3x3xf32>) -> tensor<1x4x2x2xf32>
// CHECK-NEXT:     %dw = graph.constant dense<1.000000e+00> : tensor<5x3xf32>
// CHECK-NEXT:     %db = graph.constant dense<5.000000e-01> : tensor<5xf32>
// CHECK-NEXT:     %dense = graph.dense %v, %dw, %db : (tensor<2x3xf32>, tensor<5x3xf32>, tensor<5xf32>) -> tensor<2x5xf32>
// CHECK-NEXT:     %dense_nb = graph.dense %v, %dw : (tensor<2x3xf32>, tensor<5x3xf32>) -> tensor<2x5xf32>
// CHECK-NEXT:     %dwt = graph.transpose %dw {perm = array<i64: 1, 0>} : tensor<5x3xf32> -> tensor<3x5xf32>
// CHECK-NEXT:     %mm = graph.matmul %v, %dwt : (tensor<2x3xf32>, tensor<3x5xf32>) -> tensor<2x5xf32>
// CHECK-NEXT:     %add = graph.add %v, %r : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:     %sub = graph.sub %v, %r : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:     %mul = graph.mul %v, %v : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:     %div = graph.div %r, %v : (tensor<3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:     %max = graph.max %v, %r : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:     %min = graph.min %v, %r : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:     %pow = graph.pow %v, %r : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:     %relu = graph.relu %conv : tensor<1x4x8x8xf32>
// CHECK-NEXT:     %sigmoid = graph.sigmoid %v : tensor<2x3xf32>
// CHECK-NEXT:     %tanh = graph.tanh %v : tensor<2x3xf32>
// CHECK-NEXT:     %exp = graph.exp %v : tensor<2x3xf32>
// CHECK-NEXT:     %neg = graph.neg %v : tensor<2x3xf32>
// CHECK-NEXT:     %sqrt = graph.sqrt %v : tensor<2x3xf32>
// CHECK-NEXT:     %abs = graph.abs %v : tensor<2x3xf32>
// CHECK-NEXT:     %clip = graph.clip %v {min = 0.000000e+00 : f64, max = 6.000000e+00 : f64} : tensor<2x3xf32>
// CHECK-NEXT:     %mp = graph.max_pool2d %relu {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, ceil_mode = false} : tensor<1x4x8x8xf32> -> tensor<1x4x4x4xf32>
// CHECK-NEXT:     %ap = graph.avg_pool2d %relu {kernel = array<i64: 2, 2>, strides = array<i64: 3, 3>, pads = array<i64: 0, 0, 0, 0>, ceil_mode = true, count_include_pad = true} : tensor<1x4x8x8xf32> -> tensor<1x4x3x3xf32>
// CHECK-NEXT:     %gap = graph.global_avg_pool2d %relu : tensor<1x4x8x8xf32> -> tensor<1x4x1x1xf32>
// CHECK-NEXT:     %gmp = graph.global_max_pool2d %relu : tensor<1x4x8x8xf32> -> tensor<1x4x1x1xf32>
// CHECK-NEXT:     %reshape = graph.reshape %gap : tensor<1x4x1x1xf32> -> tensor<1x4xf32>
// CHECK-NEXT:     %transpose = graph.transpose %v {perm = array<i64: 1, 0>} : tensor<2x3xf32> -> tensor<3x2xf32>
// CHECK-NEXT:     func.return %relu : tensor<1x4x8x8xf32>
// CHECK-NEXT:   }
// CHECK-NEXT: }
// CHECK-EMPTY:
// CHECK-NEXT: {-#
// CHECK-NEXT:   dialect_resources: {
// CHECK-NEXT:     builtin: {
// CHECK-NEXT:       conv1_w_0a1b2c3d: "0x04000000000000000000803F0000004000004040000080400000A0400000C0400000E0400000004100001041000020410000304100004041000050410000604100007041000080410000884100009041000098410000A0410000A8410000B0410000B8410000C0410000C8410000D0410000D8410000E0410000E8410000F0410000F84100000042000004420000084200000C4200001042000014420000184200001C4200002042000024420000284200002C4200003042000034420000384200003C4200004042000044420000484200004C4200005042000054420000584200005C4200006042000064420000684200006C4200007042000074420000784200007C42000080420000824200008442000086420000884200008A4200008C4200008E42"
// CHECK-NEXT:     }
// CHECK-NEXT:   }
// CHECK-NEXT: #-}

// CHECK-GENERIC: "builtin.module"() ({
// CHECK-GENERIC-NEXT:   "func.func"() <{sym_name = "ops", function_type = (tensor<1x4x8x8xf32>, tensor<2x3xf32>, tensor<3xf32>) -> tensor<1x4x8x8xf32>}> ({
// CHECK-GENERIC-NEXT:   ^bb0(%x: tensor<1x4x8x8xf32>, %v: tensor<2x3xf32>, %r: tensor<3xf32>):
// CHECK-GENERIC-NEXT:     %w = "graph.constant"() <{value = dense_resource<conv1_w_0a1b2c3d> : tensor<4x2x3x3xf32>}> : () -> tensor<4x2x3x3xf32>
// CHECK-GENERIC-NEXT:     %b = "graph.constant"() <{value = dense<[1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00]> : tensor<4xf32>}> : () -> tensor<4xf32>
// CHECK-GENERIC-NEXT:     %conv = "graph.conv2d"(%x, %w, %b) <{strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 2 : i64}> : (tensor<1x4x8x8xf32>, tensor<4x2x3x3xf32>, tensor<4xf32>) -> tensor<1x4x8x8xf32>
// CHECK-GENERIC-NEXT:     %conv_nb = "graph.conv2d"(%x, %w) <{strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 2, 2>, groups = 2 : i64}> : (tensor<1x4x8x8xf32>, tensor<4x2x3x3xf32>) -> tensor<1x4x2x2xf32>
// CHECK-GENERIC-NEXT:     %dw = "graph.constant"() <{value = dense<1.000000e+00> : tensor<5x3xf32>}> : () -> tensor<5x3xf32>
// CHECK-GENERIC-NEXT:     %db = "graph.constant"() <{value = dense<5.000000e-01> : tensor<5xf32>}> : () -> tensor<5xf32>
// CHECK-GENERIC-NEXT:     %dense = "graph.dense"(%v, %dw, %db) : (tensor<2x3xf32>, tensor<5x3xf32>, tensor<5xf32>) -> tensor<2x5xf32>
// CHECK-GENERIC-NEXT:     %dense_nb = "graph.dense"(%v, %dw) : (tensor<2x3xf32>, tensor<5x3xf32>) -> tensor<2x5xf32>
// CHECK-GENERIC-NEXT:     %dwt = "graph.transpose"(%dw) <{perm = array<i64: 1, 0>}> : (tensor<5x3xf32>) -> tensor<3x5xf32>
// CHECK-GENERIC-NEXT:     %mm = "graph.matmul"(%v, %dwt) : (tensor<2x3xf32>, tensor<3x5xf32>) -> tensor<2x5xf32>
// CHECK-GENERIC-NEXT:     %add = "graph.add"(%v, %r) : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
// CHECK-GENERIC-NEXT:     %sub = "graph.sub"(%v, %r) : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
// CHECK-GENERIC-NEXT:     %mul = "graph.mul"(%v, %v) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-GENERIC-NEXT:     %div = "graph.div"(%r, %v) : (tensor<3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-GENERIC-NEXT:     %max = "graph.max"(%v, %r) : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
// CHECK-GENERIC-NEXT:     %min = "graph.min"(%v, %r) : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
// CHECK-GENERIC-NEXT:     %pow = "graph.pow"(%v, %r) : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
// CHECK-GENERIC-NEXT:     %relu = "graph.relu"(%conv) : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
// CHECK-GENERIC-NEXT:     %sigmoid = "graph.sigmoid"(%v) : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-GENERIC-NEXT:     %tanh = "graph.tanh"(%v) : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-GENERIC-NEXT:     %exp = "graph.exp"(%v) : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-GENERIC-NEXT:     %neg = "graph.neg"(%v) : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-GENERIC-NEXT:     %sqrt = "graph.sqrt"(%v) : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-GENERIC-NEXT:     %abs = "graph.abs"(%v) : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-GENERIC-NEXT:     %clip = "graph.clip"(%v) <{min = 0.000000e+00 : f64, max = 6.000000e+00 : f64}> : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-GENERIC-NEXT:     %mp = "graph.max_pool2d"(%relu) <{kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, ceil_mode = false}> : (tensor<1x4x8x8xf32>) -> tensor<1x4x4x4xf32>
// CHECK-GENERIC-NEXT:     %ap = "graph.avg_pool2d"(%relu) <{kernel = array<i64: 2, 2>, strides = array<i64: 3, 3>, pads = array<i64: 0, 0, 0, 0>, ceil_mode = true, count_include_pad = true}> : (tensor<1x4x8x8xf32>) -> tensor<1x4x3x3xf32>
// CHECK-GENERIC-NEXT:     %gap = "graph.global_avg_pool2d"(%relu) : (tensor<1x4x8x8xf32>) -> tensor<1x4x1x1xf32>
// CHECK-GENERIC-NEXT:     %gmp = "graph.global_max_pool2d"(%relu) : (tensor<1x4x8x8xf32>) -> tensor<1x4x1x1xf32>
// CHECK-GENERIC-NEXT:     %reshape = "graph.reshape"(%gap) : (tensor<1x4x1x1xf32>) -> tensor<1x4xf32>
// CHECK-GENERIC-NEXT:     %transpose = "graph.transpose"(%v) <{perm = array<i64: 1, 0>}> : (tensor<2x3xf32>) -> tensor<3x2xf32>
// CHECK-GENERIC-NEXT:     "func.return"(%relu) : (tensor<1x4x8x8xf32>) -> ()
// CHECK-GENERIC-NEXT:   }) : () -> ()
// CHECK-GENERIC-NEXT: }) : () -> ()
// CHECK-GENERIC-EMPTY:
// CHECK-GENERIC-NEXT: {-#
// CHECK-GENERIC-NEXT:   dialect_resources: {
// CHECK-GENERIC-NEXT:     builtin: {
// CHECK-GENERIC-NEXT:       conv1_w_0a1b2c3d: "0x04000000000000000000803F0000004000004040000080400000A0400000C0400000E0400000004100001041000020410000304100004041000050410000604100007041000080410000884100009041000098410000A0410000A8410000B0410000B8410000C0410000C8410000D0410000D8410000E0410000E8410000F0410000F84100000042000004420000084200000C4200001042000014420000184200001C4200002042000024420000284200002C4200003042000034420000384200003C4200004042000044420000484200004C4200005042000054420000584200005C4200006042000064420000684200006C4200007042000074420000784200007C42000080420000824200008442000086420000884200008A4200008C4200008E42"
// CHECK-GENERIC-NEXT:     }
// CHECK-GENERIC-NEXT:   }
// CHECK-GENERIC-NEXT: #-}
