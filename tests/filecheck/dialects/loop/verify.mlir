// RUN: xweave-opt %s --split-input-file --verify-diagnostics | filecheck %s

"loop.for"() <{lb = 0 : i64, ub = 64 : i64, step = 0 : i64}> ({
^bb0(%i: index):
  "loop.yield"() : () -> ()
}) : () -> ()

// CHECK: step must be positive, got 0

// -----

"loop.for"() <{lb = 8 : i64, ub = 4 : i64}> ({
^bb0(%i: index):
  "loop.yield"() : () -> ()
}) : () -> ()

// CHECK: lower bound 8 exceeds upper bound 4

// -----

"loop.for"() <{lb = 0 : i64, ub = 4 : i64}> ({
^bb0(%i: i32):
  "loop.yield"() : () -> ()
}) : () -> ()

// CHECK: body must have exactly one block argument, the index induction variable; got (i32)

// -----

"loop.for"() <{lb = 0 : i64, ub = 4 : i64}> ({
^bb0(%i: index):
  "test.op"() : () -> ()
}) : () -> ()

// CHECK: 'loop.for' terminates with operation test.op instead of loop.yield

// -----

"test.op"() ({
  "loop.yield"() : () -> ()
}) : () -> ()

// CHECK: 'loop.yield' expects parent op 'loop.for'

// -----

%m = "loop.alloc"() : () -> memref<?x4xf32>

// CHECK: buffer memref<?x4xf32> must have a static shape

// -----

%m = "loop.alloc"() <{alignment = 48 : i64}> : () -> memref<4xf32>

// CHECK: alignment must be a positive power of two, got 48

// -----

%A = "test.op"() : () -> memref<4x16xf32>
%i = "test.op"() : () -> index
%v = "loop.load"(%A, %i) <{map = affine_map<(d0, d1) -> (d0, d1)>}> : (memref<4x16xf32>, index) -> f32

// CHECK: expected 2 index operands for map (d0, d1) -> (d0, d1) (2 dims + 0 symbols), got 1

// -----

%A = "test.op"() : () -> memref<4x16xf32>
%i = "test.op"() : () -> index
%v = "loop.load"(%A, %i) <{map = affine_map<(d0) -> (d0)>}> : (memref<4x16xf32>, index) -> f32

// CHECK: map (d0) -> (d0) has 1 results, but the memref has rank 2

// -----

%A = "test.op"() : () -> memref<4x16xf32>
%i = "test.op"() : () -> index
%v = "loop.load"(%A, %i, %i) <{map = affine_map<(d0, d1) -> (d0, d1)>}> : (memref<4x16xf32>, index, index) -> f64

// CHECK: result type f64 must be the element type f32 or a 1-D vector of it

// -----

%A = "test.op"() : () -> memref<4x16xf32>
%i = "test.op"() : () -> index
%v = "loop.load"(%A, %i, %i) <{map = affine_map<(d0, d1) -> (d0, d1)>}> : (memref<4x16xf32>, index, index) -> vector<32xf32>

// A vector longer than the last dimension reads whole rows, from index 0 of it.
// CHECK: a vector result of 2 whole rows of memref<4x16xf32> must start at index 0 of the last dimension, not d1

// -----

%A = "test.op"() : () -> memref<4x16xf32>
%i = "test.op"() : () -> index
%v = "loop.load"(%A, %i) <{map = affine_map<(d0) -> (d0, 0)>}> : (memref<4x16xf32>, index) -> vector<24xf32>

// CHECK: vector length 24 exceeds the last dimension 16 of memref<4x16xf32> and is not a number of its whole rows within the dimension before

// -----

%A = "test.op"() : () -> memref<f32>
%v = "loop.load"(%A) <{map = affine_map<() -> ()>}> : (memref<f32>) -> vector<4xf32>

// CHECK: a vector result needs a memref of rank >= 1

// -----

%A = "test.op"() : () -> memref<4x16xf32>
%i = "test.op"() : () -> index
%x = "test.op"() : () -> i32
"loop.store"(%x, %A, %i, %i) <{map = affine_map<(d0, d1) -> (d0, d1)>}> : (i32, memref<4x16xf32>, index, index) -> ()

// CHECK: value type i32 must be the element type f32 or a 1-D vector of it

// -----

%A = "test.op"() : () -> memref<4x16xf32>
%i = "test.op"() : () -> index
%x = "test.op"() : () -> vector<2x8xf32>
"loop.store"(%x, %A, %i, %i) <{map = affine_map<(d0, d1) -> (d0, d1)>}> : (vector<2x8xf32>, memref<4x16xf32>, index, index) -> ()

// CHECK: value type vector<2x8xf32> must be the element type f32 or a 1-D vector of it

// -----

"loop.global"() <{sym_name = "w", type = memref<2x2xf32>, initial_value = dense<0.0> : tensor<4xf32>}> : () -> ()

// CHECK: initial value of type tensor<4xf32> does not fit memref<2x2xf32>

// -----

%w = "loop.get_global"() <{name = @nope}> : () -> memref<4xf32>

// CHECK: no loop.global named @nope

// -----

"loop.global"() <{sym_name = "w", type = memref<2xf32>, initial_value = dense<0.0> : tensor<2xf32>}> : () -> ()
%w = "loop.get_global"() <{name = @w}> : () -> memref<4xf32>

// CHECK: result type memref<4xf32> does not match the type memref<2xf32> of @w
