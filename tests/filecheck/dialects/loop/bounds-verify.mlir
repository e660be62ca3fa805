// RUN: xweave-opt %s --split-input-file --verify-diagnostics | filecheck %s

// Loop bounds written in the generic form are i64 properties: 2^63 wraps around to
// -2^63, and the trip length then overflows.
"loop.for"() <{lb = 9223372036854775808 : i64, ub = 3 : i64}> ({
^bb0(%i: index):
  "loop.yield"() : () -> ()
}) : () -> ()

// CHECK: bounds -9223372036854775808 to 3 step 1 overflow a 64-bit induction variable

// -----

"loop.for"() <{lb = 0 : i64, ub = 9223372036854775807 : i64, step = 2 : i64}> ({
^bb0(%i: index):
  "loop.yield"() : () -> ()
}) : () -> ()

// CHECK: bounds 0 to 9223372036854775807 step 2 overflow a 64-bit induction variable

// -----

"loop.for"() <{lb = 0 : i64, ub = 9223372036854775806 : i64}> ({
^bb0(%i: index):
  "loop.yield"() : () -> ()
}) : () -> ()

// The largest loop that fits is accepted.
// CHECK: loop.for %i = 0 to 9223372036854775806 {

// -----

%A = "test.op"() : () -> memref<1x1x1x4x16xf32>
%v = loop.load %A[0, 0, 0, -1, 0] : memref<1x1x1x4x16xf32>

// CHECK: constant index -1 of dimension 3 is out of bounds for memref<1x1x1x4x16xf32>

// -----

%A = "test.op"() : () -> memref<1x1x1x4x16xf32>
%v = loop.load %A[0, 0, 0, 9223372036854775808, 0] : memref<1x1x1x4x16xf32>

// CHECK: constant index 9223372036854775808 of dimension 3 is out of bounds for memref<1x1x1x4x16xf32>

// -----

%A = "test.op"() : () -> memref<4x16xf32>
%i = "test.op"() : () -> index
%x = "test.op"() : () -> f32
loop.store %x, %A[%i, 16] : memref<4x16xf32>

// CHECK: constant index 16 of dimension 1 is out of bounds for memref<4x16xf32>

// -----

%A = "test.op"() : () -> memref<4x16xf32>
%i = "test.op"() : () -> index
%v = loop.load %A[%i, 12] : memref<4x16xf32> -> vector<8xf32>

// CHECK: constant index 12 of dimension 1 is out of bounds for memref<4x16xf32> (a result of 8 elements)

// -----

%A = "test.op"() : () -> memref<4x16xf32>
%i = "test.op"() : () -> index
%v = loop.load %A[%i, 8] : memref<4x16xf32> -> vector<8xf32>
loop.prefetch %A[3, 15] : memref<4x16xf32>

// In-bounds constant indices, the vector's last lane on the last element, are kept.
// CHECK: %v = loop.load %A[%i, 8] : memref<4x16xf32> -> vector<8xf32>
// CHECK: loop.prefetch %A[3, 15] : memref<4x16xf32>

// -----

%A = "test.op"() : () -> memref<4x16xf32>
loop.prefetch %A[4, 0] : memref<4x16xf32>

// CHECK: constant index 4 of dimension 0 is out of bounds for memref<4x16xf32>

// -----

%m = loop.alloc : memref<4611686018427387904x4xf32>

// CHECK: buffer memref<4611686018427387904x4xf32> is too large: 73786976294838206464 bytes
