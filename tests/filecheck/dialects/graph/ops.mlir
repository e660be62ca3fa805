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
// CHECK-GENERIC-NEXT:     %mp = "graph.max_pool2d"(%relu) <{kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, ceil_mode = false, layout = "NCHW"}> : (tensor<1x4x8x8xf32>) -> tensor<1x4x4x4xf32>
// CHECK-GENERIC-NEXT:     %ap = "graph.avg_pool2d"(%relu) <{kernel = array<i64: 2, 2>, strides = array<i64: 3, 3>, pads = array<i64: 0, 0, 0, 0>, ceil_mode = true, count_include_pad = true, layout = "NCHW"}> : (tensor<1x4x8x8xf32>) -> tensor<1x4x3x3xf32>
// CHECK-GENERIC-NEXT:     %gap = "graph.global_avg_pool2d"(%relu) <{layout = "NCHW"}> : (tensor<1x4x8x8xf32>) -> tensor<1x4x1x1xf32>
// CHECK-GENERIC-NEXT:     %gmp = "graph.global_max_pool2d"(%relu) <{layout = "NCHW"}> : (tensor<1x4x8x8xf32>) -> tensor<1x4x1x1xf32>
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

// -----

// The operators added for the ONNX frontend (elementwise, logic, normalization,
// reductions, data movement).

func.func @onnx_ops(%x: tensor<1x4x8x8xf32>, %v: tensor<2x3xf32>, %r: tensor<3xf32>, %i: tensor<2x2xi64>) -> tensor<2x3xf32> {
  %log = graph.log %v : tensor<2x3xf32>
  %erf = graph.erf %v : tensor<2x3xf32>
  %rcp = graph.reciprocal %v : tensor<2x3xf32>
  %sp = graph.softplus %v : tensor<2x3xf32>
  %ss = graph.softsign %v : tensor<2x3xf32>
  %sign = graph.sign %v : tensor<2x3xf32>
  %floor = graph.floor %v : tensor<2x3xf32>
  %ceil = graph.ceil %v : tensor<2x3xf32>
  %round = graph.round %v : tensor<2x3xf32>
  %sin = graph.sin %v : tensor<2x3xf32>
  %cos = graph.cos %v : tensor<2x3xf32>
  %hsw = graph.hard_swish %v : tensor<2x3xf32>
  %lrelu = graph.leaky_relu %v {alpha = 0.1 : f64} : tensor<2x3xf32>
  %elu = graph.elu %v {alpha = 1.0 : f64} : tensor<2x3xf32>
  %selu = graph.selu %v {alpha = 1.5 : f64, gamma = 1.25 : f64} : tensor<2x3xf32>
  %hsig = graph.hard_sigmoid %v {alpha = 0.2 : f64, beta = 0.5 : f64} : tensor<2x3xf32>
  %shrink = graph.shrink %v {lambd = 0.5 : f64, bias = 0.0 : f64} : tensor<2x3xf32>
  %gelu = graph.gelu %v {approximate = "tanh"} : tensor<2x3xf32>
  %prelu = graph.prelu %v, %r : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %lt = graph.less %v, %r : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
  %le = graph.less_equal %v, %r : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
  %gt = graph.greater %v, %r : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
  %ge = graph.greater_equal %v, %r : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
  %eq = graph.equal %i, %i : (tensor<2x2xi64>, tensor<2x2xi64>) -> tensor<2x2xi1>
  %and = graph.and %lt, %le : (tensor<2x3xi1>, tensor<2x3xi1>) -> tensor<2x3xi1>
  %or = graph.or %and, %gt : (tensor<2x3xi1>, tensor<2x3xi1>) -> tensor<2x3xi1>
  %xor = graph.xor %or, %ge : (tensor<2x3xi1>, tensor<2x3xi1>) -> tensor<2x3xi1>
  %not = graph.not %xor : tensor<2x3xi1>
  %where = graph.where %not, %v, %r : (tensor<2x3xi1>, tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %cast = graph.cast %v : tensor<2x3xf32> -> tensor<2x3xi64>
  %sm = graph.softmax %v {axis = 1 : i64} : tensor<2x3xf32>
  %lsm = graph.log_softmax %v {axis = 0 : i64} : tensor<2x3xf32>
  %red = graph.reduce %x {kind = "mean", axes = array<i64: 2, 3>, keepdims = true} : tensor<1x4x8x8xf32> -> tensor<1x4x1x1xf32>
  %red2 = graph.reduce %v {kind = "max", axes = array<i64: 0>, keepdims = false} : tensor<2x3xf32> -> tensor<3xf32>
  %c4 = graph.constant dense<1.0> : tensor<4xf32>
  %bn = graph.batch_norm %x, %c4, %c4, %c4, %c4 {epsilon = 1.0e-05 : f64} : (tensor<1x4x8x8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<1x4x8x8xf32>
  %ln = graph.layer_norm %v, %r, %r {axis = 1 : i64, epsilon = 1.0e-05 : f64} : (tensor<2x3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %ln_nb = graph.layer_norm %v, %r {axis = 0 : i64, epsilon = 1.0e-03 : f64} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %lrn = graph.lrn %x {size = 3 : i64, alpha = 1.0e-04 : f64, beta = 0.75 : f64, bias = 1.0 : f64} : tensor<1x4x8x8xf32>
  %tw = graph.constant dense<0.5> : tensor<4x2x3x3xf32>
  %ct = graph.conv_transpose2d %x, %tw {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, output_padding = array<i64: 1, 0>, groups = 1 : i64} : (tensor<1x4x8x8xf32>, tensor<4x2x3x3xf32>) -> tensor<1x2x16x15xf32>
  %cat = graph.concat %v, %v, %v {axis = 0 : i64} : (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<6x3xf32>
  %sl = graph.slice %v {starts = array<i64: 1, 2>, steps = array<i64: 1, -2>} : tensor<2x3xf32> -> tensor<1x2xf32>
  %pad = graph.pad %v {pads = array<i64: 0, 1, 1, 2>, mode = "reflect", value = 0.0 : f64} : tensor<2x3xf32> -> tensor<3x6xf32>
  %tile = graph.tile %v {repeats = array<i64: 2, 1>} : tensor<2x3xf32> -> tensor<4x3xf32>
  %bc = graph.broadcast_to %r : tensor<3xf32> -> tensor<2x3xf32>
  %g = graph.gather %v, %i {axis = 1 : i64} : (tensor<2x3xf32>, tensor<2x2xi64>) -> tensor<2x2x2xf32>
  func.return %where : tensor<2x3xf32>
}

// CHECK:      {{^// -+$}}
// CHECK-NEXT: builtin.module {
// CHECK-NEXT:   func.func @onnx_ops(%x: tensor<1x4x8x8xf32>, %v: tensor<2x3xf32>, %r: tensor<3xf32>, %i: tensor<2x2xi64>) -> tensor<2x3xf32> {
// CHECK-NEXT:     %log = graph.log %v : tensor<2x3xf32>
// CHECK-NEXT:     %erf = graph.erf %v : tensor<2x3xf32>
// CHECK-NEXT:     %rcp = graph.reciprocal %v : tensor<2x3xf32>
// CHECK-NEXT:     %sp = graph.softplus %v : tensor<2x3xf32>
// CHECK-NEXT:     %ss = graph.softsign %v : tensor<2x3xf32>
// CHECK-NEXT:     %sign = graph.sign %v : tensor<2x3xf32>
// CHECK-NEXT:     %floor = graph.floor %v : tensor<2x3xf32>
// CHECK-NEXT:     %ceil = graph.ceil %v : tensor<2x3xf32>
// CHECK-NEXT:     %round = graph.round %v : tensor<2x3xf32>
// CHECK-NEXT:     %sin = graph.sin %v : tensor<2x3xf32>
// CHECK-NEXT:     %cos = graph.cos %v : tensor<2x3xf32>
// CHECK-NEXT:     %hsw = graph.hard_swish %v : tensor<2x3xf32>
// CHECK-NEXT:     %lrelu = graph.leaky_relu %v {alpha = 1.000000e-01 : f64} : tensor<2x3xf32>
// CHECK-NEXT:     %elu = graph.elu %v {alpha = 1.000000e+00 : f64} : tensor<2x3xf32>
// CHECK-NEXT:     %selu = graph.selu %v {alpha = 1.500000e+00 : f64, gamma = 1.250000e+00 : f64} : tensor<2x3xf32>
// CHECK-NEXT:     %hsig = graph.hard_sigmoid %v {alpha = 2.000000e-01 : f64, beta = 5.000000e-01 : f64} : tensor<2x3xf32>
// CHECK-NEXT:     %shrink = graph.shrink %v {lambd = 5.000000e-01 : f64, bias = 0.000000e+00 : f64} : tensor<2x3xf32>
// CHECK-NEXT:     %gelu = graph.gelu %v {approximate = "tanh"} : tensor<2x3xf32>
// CHECK-NEXT:     %prelu = graph.prelu %v, %r : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:     %lt = graph.less %v, %r : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
// CHECK-NEXT:     %le = graph.less_equal %v, %r : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
// CHECK-NEXT:     %gt = graph.greater %v, %r : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
// CHECK-NEXT:     %ge = graph.greater_equal %v, %r : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
// CHECK-NEXT:     %eq = graph.equal %i, %i : (tensor<2x2xi64>, tensor<2x2xi64>) -> tensor<2x2xi1>
// CHECK-NEXT:     %and = graph.and %lt, %le : (tensor<2x3xi1>, tensor<2x3xi1>) -> tensor<2x3xi1>
// CHECK-NEXT:     %or = graph.or %and, %gt : (tensor<2x3xi1>, tensor<2x3xi1>) -> tensor<2x3xi1>
// CHECK-NEXT:     %xor = graph.xor %or, %ge : (tensor<2x3xi1>, tensor<2x3xi1>) -> tensor<2x3xi1>
// CHECK-NEXT:     %not = graph.not %xor : tensor<2x3xi1>
// CHECK-NEXT:     %where = graph.where %not, %v, %r : (tensor<2x3xi1>, tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:     %cast = graph.cast %v : tensor<2x3xf32> -> tensor<2x3xi64>
// CHECK-NEXT:     %sm = graph.softmax %v {axis = 1 : i64} : tensor<2x3xf32>
// CHECK-NEXT:     %lsm = graph.log_softmax %v {axis = 0 : i64} : tensor<2x3xf32>
// CHECK-NEXT:     %red = graph.reduce %x {kind = "mean", axes = array<i64: 2, 3>, keepdims = true} : tensor<1x4x8x8xf32> -> tensor<1x4x1x1xf32>
// CHECK-NEXT:     %red2 = graph.reduce %v {kind = "max", axes = array<i64: 0>, keepdims = false} : tensor<2x3xf32> -> tensor<3xf32>
// CHECK-NEXT:     %c4 = graph.constant dense<1.000000e+00> : tensor<4xf32>
// CHECK-NEXT:     %bn = graph.batch_norm %x, %c4, %c4, %c4, %c4 {epsilon = 1.000000e-05 : f64} : (tensor<1x4x8x8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<1x4x8x8xf32>
// CHECK-NEXT:     %ln = graph.layer_norm %v, %r, %r {axis = 1 : i64, epsilon = 1.000000e-05 : f64} : (tensor<2x3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:     %ln_nb = graph.layer_norm %v, %r {axis = 0 : i64, epsilon = 1.000000e-03 : f64} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:     %lrn = graph.lrn %x {size = 3 : i64, alpha = 1.000000e-04 : f64, beta = 7.500000e-01 : f64, bias = 1.000000e+00 : f64} : tensor<1x4x8x8xf32>
// CHECK-NEXT:     %tw = graph.constant dense<5.000000e-01> : tensor<4x2x3x3xf32>
// CHECK-NEXT:     %ct = graph.conv_transpose2d %x, %tw {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, output_padding = array<i64: 1, 0>, groups = 1 : i64} : (tensor<1x4x8x8xf32>, tensor<4x2x3x3xf32>) -> tensor<1x2x16x15xf32>
// CHECK-NEXT:     %cat = graph.concat %v, %v, %v {axis = 0 : i64} : (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<6x3xf32>
// CHECK-NEXT:     %sl = graph.slice %v {starts = array<i64: 1, 2>, steps = array<i64: 1, -2>} : tensor<2x3xf32> -> tensor<1x2xf32>
// CHECK-NEXT:     %pad = graph.pad %v {pads = array<i64: 0, 1, 1, 2>, mode = "reflect", value = 0.000000e+00 : f64} : tensor<2x3xf32> -> tensor<3x6xf32>
// CHECK-NEXT:     %tile = graph.tile %v {repeats = array<i64: 2, 1>} : tensor<2x3xf32> -> tensor<4x3xf32>
// CHECK-NEXT:     %bc = graph.broadcast_to %r : tensor<3xf32> -> tensor<2x3xf32>
// CHECK-NEXT:     %g = graph.gather %v, %i {axis = 1 : i64} : (tensor<2x3xf32>, tensor<2x2xi64>) -> tensor<2x2x2xf32>
// CHECK-NEXT:     func.return %where : tensor<2x3xf32>
// CHECK-NEXT:   }
// CHECK-NEXT: }

// CHECK-GENERIC:      {{^// -+$}}
// CHECK-GENERIC-NEXT: "builtin.module"() ({
// CHECK-GENERIC-NEXT:   "func.func"() <{sym_name = "onnx_ops", function_type = (tensor<1x4x8x8xf32>, tensor<2x3xf32>, tensor<3xf32>, tensor<2x2xi64>) -> tensor<2x3xf32>}> ({
// CHECK-GENERIC-NEXT:   ^bb0(%x: tensor<1x4x8x8xf32>, %v: tensor<2x3xf32>, %r: tensor<3xf32>, %i: tensor<2x2xi64>):
// CHECK-GENERIC-NEXT:     %log = "graph.log"(%v) : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-GENERIC-NEXT:     %erf = "graph.erf"(%v) : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-GENERIC-NEXT:     %rcp = "graph.reciprocal"(%v) : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-GENERIC-NEXT:     %sp = "graph.softplus"(%v) : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-GENERIC-NEXT:     %ss = "graph.softsign"(%v) : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-GENERIC-NEXT:     %sign = "graph.sign"(%v) : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-GENERIC-NEXT:     %floor = "graph.floor"(%v) : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-GENERIC-NEXT:     %ceil = "graph.ceil"(%v) : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-GENERIC-NEXT:     %round = "graph.round"(%v) : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-GENERIC-NEXT:     %sin = "graph.sin"(%v) : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-GENERIC-NEXT:     %cos = "graph.cos"(%v) : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-GENERIC-NEXT:     %hsw = "graph.hard_swish"(%v) : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-GENERIC-NEXT:     %lrelu = "graph.leaky_relu"(%v) <{alpha = 1.000000e-01 : f64}> : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-GENERIC-NEXT:     %elu = "graph.elu"(%v) <{alpha = 1.000000e+00 : f64}> : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-GENERIC-NEXT:     %selu = "graph.selu"(%v) <{alpha = 1.500000e+00 : f64, gamma = 1.250000e+00 : f64}> : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-GENERIC-NEXT:     %hsig = "graph.hard_sigmoid"(%v) <{alpha = 2.000000e-01 : f64, beta = 5.000000e-01 : f64}> : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-GENERIC-NEXT:     %shrink = "graph.shrink"(%v) <{lambd = 5.000000e-01 : f64, bias = 0.000000e+00 : f64}> : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-GENERIC-NEXT:     %gelu = "graph.gelu"(%v) <{approximate = "tanh"}> : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-GENERIC-NEXT:     %prelu = "graph.prelu"(%v, %r) : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
// CHECK-GENERIC-NEXT:     %lt = "graph.less"(%v, %r) : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
// CHECK-GENERIC-NEXT:     %le = "graph.less_equal"(%v, %r) : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
// CHECK-GENERIC-NEXT:     %gt = "graph.greater"(%v, %r) : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
// CHECK-GENERIC-NEXT:     %ge = "graph.greater_equal"(%v, %r) : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
// CHECK-GENERIC-NEXT:     %eq = "graph.equal"(%i, %i) : (tensor<2x2xi64>, tensor<2x2xi64>) -> tensor<2x2xi1>
// CHECK-GENERIC-NEXT:     %and = "graph.and"(%lt, %le) : (tensor<2x3xi1>, tensor<2x3xi1>) -> tensor<2x3xi1>
// CHECK-GENERIC-NEXT:     %or = "graph.or"(%and, %gt) : (tensor<2x3xi1>, tensor<2x3xi1>) -> tensor<2x3xi1>
// CHECK-GENERIC-NEXT:     %xor = "graph.xor"(%or, %ge) : (tensor<2x3xi1>, tensor<2x3xi1>) -> tensor<2x3xi1>
// CHECK-GENERIC-NEXT:     %not = "graph.not"(%xor) : (tensor<2x3xi1>) -> tensor<2x3xi1>
// CHECK-GENERIC-NEXT:     %where = "graph.where"(%not, %v, %r) : (tensor<2x3xi1>, tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
// CHECK-GENERIC-NEXT:     %cast = "graph.cast"(%v) : (tensor<2x3xf32>) -> tensor<2x3xi64>
// CHECK-GENERIC-NEXT:     %sm = "graph.softmax"(%v) <{axis = 1 : i64}> : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-GENERIC-NEXT:     %lsm = "graph.log_softmax"(%v) <{axis = 0 : i64}> : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-GENERIC-NEXT:     %red = "graph.reduce"(%x) <{kind = "mean", axes = array<i64: 2, 3>, keepdims = true}> : (tensor<1x4x8x8xf32>) -> tensor<1x4x1x1xf32>
// CHECK-GENERIC-NEXT:     %red2 = "graph.reduce"(%v) <{kind = "max", axes = array<i64: 0>, keepdims = false}> : (tensor<2x3xf32>) -> tensor<3xf32>
// CHECK-GENERIC-NEXT:     %c4 = "graph.constant"() <{value = dense<1.000000e+00> : tensor<4xf32>}> : () -> tensor<4xf32>
// CHECK-GENERIC-NEXT:     %bn = "graph.batch_norm"(%x, %c4, %c4, %c4, %c4) <{epsilon = 1.000000e-05 : f64}> : (tensor<1x4x8x8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<1x4x8x8xf32>
// CHECK-GENERIC-NEXT:     %ln = "graph.layer_norm"(%v, %r, %r) <{axis = 1 : i64, epsilon = 1.000000e-05 : f64}> : (tensor<2x3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
// CHECK-GENERIC-NEXT:     %ln_nb = "graph.layer_norm"(%v, %r) <{axis = 0 : i64, epsilon = 1.000000e-03 : f64}> : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
// CHECK-GENERIC-NEXT:     %lrn = "graph.lrn"(%x) <{size = 3 : i64, alpha = 1.000000e-04 : f64, beta = 7.500000e-01 : f64, bias = 1.000000e+00 : f64}> : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
// CHECK-GENERIC-NEXT:     %tw = "graph.constant"() <{value = dense<5.000000e-01> : tensor<4x2x3x3xf32>}> : () -> tensor<4x2x3x3xf32>
// CHECK-GENERIC-NEXT:     %ct = "graph.conv_transpose2d"(%x, %tw) <{strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, output_padding = array<i64: 1, 0>, groups = 1 : i64}> : (tensor<1x4x8x8xf32>, tensor<4x2x3x3xf32>) -> tensor<1x2x16x15xf32>
// CHECK-GENERIC-NEXT:     %cat = "graph.concat"(%v, %v, %v) <{axis = 0 : i64}> : (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<6x3xf32>
// CHECK-GENERIC-NEXT:     %sl = "graph.slice"(%v) <{starts = array<i64: 1, 2>, steps = array<i64: 1, -2>}> : (tensor<2x3xf32>) -> tensor<1x2xf32>
// CHECK-GENERIC-NEXT:     %pad = "graph.pad"(%v) <{pads = array<i64: 0, 1, 1, 2>, mode = "reflect", value = 0.000000e+00 : f64}> : (tensor<2x3xf32>) -> tensor<3x6xf32>
// CHECK-GENERIC-NEXT:     %tile = "graph.tile"(%v) <{repeats = array<i64: 2, 1>}> : (tensor<2x3xf32>) -> tensor<4x3xf32>
// CHECK-GENERIC-NEXT:     %bc = "graph.broadcast_to"(%r) : (tensor<3xf32>) -> tensor<2x3xf32>
// CHECK-GENERIC-NEXT:     %g = "graph.gather"(%v, %i) <{axis = 1 : i64}> : (tensor<2x3xf32>, tensor<2x2xi64>) -> tensor<2x2x2xf32>
// CHECK-GENERIC-NEXT:     "func.return"(%where) : (tensor<2x3xf32>) -> ()
// CHECK-GENERIC-NEXT:   }) : () -> ()
// CHECK-GENERIC-NEXT: }) : () -> ()
