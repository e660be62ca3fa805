// RUN: xweave-opt %s --split-input-file --verify-diagnostics | filecheck %s

// Invalid te ops, in generic form (a type clash in custom syntax is a parse error).

%0 = "te.compute"() <{shape = array<i64: 4, 0>, reduce_shape = array<i64>}> ({
^bb0(%i: index, %j: index):
  %cst = "arith.constant"() <{value = 0.0 : f32}> : () -> f32
  "te.yield"(%cst) : (f32) -> ()
}) : () -> tensor<4x0xf32>

// CHECK: extents must be positive, got shape [4, 0] and reduce_shape []

// -----

%0 = "te.compute"() <{shape = array<i64: 4>, reduce_shape = array<i64: 3>}> ({
^bb0(%i: index, %k: index):
  %cst = "arith.constant"() <{value = 0.0 : f32}> : () -> f32
  "te.yield"(%cst) : (f32) -> ()
}) : () -> tensor<4xf32>

// CHECK: a reduction (non-empty reduce_shape) needs a reducer

// -----

%0 = "te.compute"() <{shape = array<i64: 4>, reduce_shape = array<i64>, reducer = #te.reducer<max>}> ({
^bb0(%i: index):
  %cst = "arith.constant"() <{value = 0.0 : f32}> : () -> f32
  "te.yield"(%cst) : (f32) -> ()
}) : () -> tensor<4xf32>

// CHECK: reducer 'max' given without a reduce domain

// -----

%0 = "te.compute"() <{shape = array<i64: 4, 4>, reduce_shape = array<i64>}> ({
^bb0(%i: index, %j: index):
  %cst = "arith.constant"() <{value = 0.0 : f32}> : () -> f32
  "te.yield"(%cst) : (f32) -> ()
}) : () -> tensor<4x5xf32>

// CHECK: result type tensor<4x5xf32> does not match shape [4, 4]

// -----

%0 = "te.compute"() <{shape = array<i64: 4>, reduce_shape = array<i64: 3>, reducer = #te.reducer<sum>}> ({
^bb0(%i: index):
  %cst = "arith.constant"() <{value = 0.0 : f32}> : () -> f32
  "te.yield"(%cst) : (f32) -> ()
}) : () -> tensor<4xf32>

// CHECK: expected 2 block arguments (1 spatial + 1 reduce), got 1

// -----

%0 = "te.compute"() <{shape = array<i64: 4>, reduce_shape = array<i64>}> ({
^bb0(%i: i32):
  %cst = "arith.constant"() <{value = 0.0 : f32}> : () -> f32
  "te.yield"(%cst) : (f32) -> ()
}) : () -> tensor<4xf32>

// CHECK: block argument #0 must be of type index, got i32

// -----

%0 = "te.compute"() <{shape = array<i64: 4>, reduce_shape = array<i64>}> ({
^bb0(%i: index):
  %cst = "arith.constant"() <{value = 0.0 : f32}> : () -> f32
  "test.termop"(%cst) : (f32) -> ()
}) : () -> tensor<4xf32>

// CHECK: body must end with te.yield

// -----

%0 = "te.compute"() <{shape = array<i64: 4>, reduce_shape = array<i64>}> ({
^bb0(%i: index):
  %cst = "arith.constant"() <{value = 0.0 : f64}> : () -> f64
  "te.yield"(%cst) : (f64) -> ()
}) : () -> tensor<4xf32>

// CHECK: yielded type f64 does not match result element type f32

// -----

%t = "test.op"() : () -> tensor<4x8xf32>
%0 = "te.compute"() <{shape = array<i64: 4>, reduce_shape = array<i64>}> ({
^bb0(%i: index):
  %x = "te.extract"(%t, %i) : (tensor<4x8xf32>, index) -> f32
  "te.yield"(%x) : (f32) -> ()
}) : () -> tensor<4xf32>

// CHECK: expected 2 indices for a tensor of rank 2, got 1

// -----

%c = "test.op"() : () -> i1
%0 = "te.compute"() <{shape = array<i64: 4>, reduce_shape = array<i64>}> ({
^bb0(%i: index):
  %a = "arith.constant"() <{value = 0.0 : f32}> : () -> f32
  %b = "arith.constant"() <{value = 1.0 : f64}> : () -> f64
  %v = "te.if"(%c) ({
    "te.yield"(%a) : (f32) -> ()
  }, {
    "te.yield"(%b) : (f64) -> ()
  }) : (i1) -> f32
  "te.yield"(%v) : (f32) -> ()
}) : () -> tensor<4xf32>

// CHECK: else branch yields f64, expected f32

// -----

%c = "test.op"() : () -> i1
%v = "te.if"(%c) ({
  %a = "arith.constant"() <{value = 0.0 : f32}> : () -> f32
  "test.termop"(%a) : (f32) -> ()
}, {
  %b = "arith.constant"() <{value = 1.0 : f32}> : () -> f32
  "te.yield"(%b) : (f32) -> ()
}) : (i1) -> f32

// CHECK: then branch must end with te.yield

// -----

func.func @f(%x: f32) -> f32 {
  "te.yield"(%x) : (f32) -> ()
}

// CHECK: 'te.yield' expects parent op to be one of 'te.compute', 'te.if'
