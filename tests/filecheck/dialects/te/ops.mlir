// RUN: XWEAVE_ROUNDTRIP
// RUN: XWEAVE_GENERIC_ROUNDTRIP

// An elementwise compute: no reduction, no name.
func.func @scale(%A: tensor<4x8xf32>) -> tensor<4x8xf32> attributes {xweave.kernel} {
  %B = te.compute (%i, %j) in [4, 8] {
    %cst = arith.constant 2.000000e+00 : f32
    %a = te.extract %A[%i, %j] : tensor<4x8xf32>
    %b = arith.mulf %a, %cst : f32
    te.yield %b : f32
  } : tensor<4x8xf32>
  func.return %B : tensor<4x8xf32>
}

// CHECK:      func.func @scale(%A: tensor<4x8xf32>) -> tensor<4x8xf32> attributes {xweave.kernel} {
// CHECK-NEXT:   %B = te.compute (%i, %j) in [4, 8] {
// CHECK-NEXT:     %cst = arith.constant 2.000000e+00 : f32
// CHECK-NEXT:     %a = te.extract %A[%i, %j] : tensor<4x8xf32>
// CHECK-NEXT:     %b = arith.mulf %a, %cst : f32
// CHECK-NEXT:     te.yield %b : f32
// CHECK-NEXT:   } : tensor<4x8xf32>
// CHECK-NEXT:   func.return %B : tensor<4x8xf32>
// CHECK-NEXT: }

// CHECK-GENERIC:      "func.func"() <{sym_name = "scale", function_type = (tensor<4x8xf32>) -> tensor<4x8xf32>}> ({
// CHECK-GENERIC-NEXT: ^bb0(%A: tensor<4x8xf32>):
// CHECK-GENERIC-NEXT:   %B = "te.compute"() <{shape = array<i64: 4, 8>, reduce_shape = array<i64>}> ({
// CHECK-GENERIC-NEXT:   ^bb0(%i: index, %j: index):
// CHECK-GENERIC-NEXT:     %cst = "arith.constant"() <{value = 2.000000e+00 : f32}> : () -> f32
// CHECK-GENERIC-NEXT:     %a = "te.extract"(%A, %i, %j) : (tensor<4x8xf32>, index, index) -> f32
// CHECK-GENERIC-NEXT:     %b = "arith.mulf"(%a, %cst) <{fastmath = #arith.fastmath<none>}> : (f32, f32) -> f32
// CHECK-GENERIC-NEXT:     "te.yield"(%b) : (f32) -> ()
// CHECK-GENERIC-NEXT:   }) : () -> tensor<4x8xf32>
// CHECK-GENERIC-NEXT:   "func.return"(%B) : (tensor<4x8xf32>) -> ()
// CHECK-GENERIC-NEXT: }) {xweave.kernel} : () -> ()

// A reduction with a name.
func.func @matmul(%A: tensor<4x3xf32>, %B: tensor<3x5xf32>) -> tensor<4x5xf32> attributes {xweave.kernel} {
  %C = te.compute (%i, %j) in [4, 5] reduce sum (%k) in [3] {
    %a = te.extract %A[%i, %k] : tensor<4x3xf32>
    %b = te.extract %B[%k, %j] : tensor<3x5xf32>
    %p = arith.mulf %a, %b : f32
    te.yield %p : f32
  } {name = "matmul"} : tensor<4x5xf32>
  func.return %C : tensor<4x5xf32>
}

// CHECK:      func.func @matmul(%A: tensor<4x3xf32>, %B: tensor<3x5xf32>) -> tensor<4x5xf32> attributes {xweave.kernel} {
// CHECK-NEXT:   %C = te.compute (%i, %j) in [4, 5] reduce sum (%k) in [3] {
// CHECK-NEXT:     %a = te.extract %A[%i, %k] : tensor<4x3xf32>
// CHECK-NEXT:     %b = te.extract %B[%k, %j] : tensor<3x5xf32>
// CHECK-NEXT:     %p = arith.mulf %a, %b : f32
// CHECK-NEXT:     te.yield %p : f32
// CHECK-NEXT:   } {name = "matmul"} : tensor<4x5xf32>
// CHECK-NEXT:   func.return %C : tensor<4x5xf32>
// CHECK-NEXT: }

// CHECK-GENERIC:      "func.func"() <{sym_name = "matmul", function_type = (tensor<4x3xf32>, tensor<3x5xf32>) -> tensor<4x5xf32>}> ({
// CHECK-GENERIC-NEXT: ^bb0(%A: tensor<4x3xf32>, %B: tensor<3x5xf32>):
// CHECK-GENERIC-NEXT:   %C = "te.compute"() <{shape = array<i64: 4, 5>, reduce_shape = array<i64: 3>, reducer = #te.reducer<sum>, name = "matmul"}> ({
// CHECK-GENERIC-NEXT:   ^bb0(%i: index, %j: index, %k: index):
// CHECK-GENERIC-NEXT:     %a = "te.extract"(%A, %i, %k) : (tensor<4x3xf32>, index, index) -> f32
// CHECK-GENERIC-NEXT:     %b = "te.extract"(%B, %k, %j) : (tensor<3x5xf32>, index, index) -> f32
// CHECK-GENERIC-NEXT:     %p = "arith.mulf"(%a, %b) <{fastmath = #arith.fastmath<none>}> : (f32, f32) -> f32
// CHECK-GENERIC-NEXT:     "te.yield"(%p) : (f32) -> ()
// CHECK-GENERIC-NEXT:   }) : () -> tensor<4x5xf32>
// CHECK-GENERIC-NEXT:   "func.return"(%C) : (tensor<4x5xf32>) -> ()
// CHECK-GENERIC-NEXT: }) {xweave.kernel} : () -> ()

// Every other reducer, over several axes, and a rank-0 result.
func.func @reducers(%X: tensor<2x3x4xf32>) -> (tensor<2xf32>, tensor<3xf32>, tensor<f32>) {
  %mx = te.compute (%n) in [2] reduce max (%r, %s) in [3, 4] {
    %x = te.extract %X[%n, %r, %s] : tensor<2x3x4xf32>
    te.yield %x : f32
  } {name = "max"} : tensor<2xf32>
  %mn = te.compute (%c) in [3] reduce min (%r, %s) in [2, 4] {
    %x = te.extract %X[%r, %c, %s] : tensor<2x3x4xf32>
    te.yield %x : f32
  } : tensor<3xf32>
  %pr = te.compute () in [] reduce prod (%r) in [2] {
    %x = te.extract %mx[%r] : tensor<2xf32>
    te.yield %x : f32
  } {name = "prod", note = 1 : i64} : tensor<f32>
  func.return %mx, %mn, %pr : tensor<2xf32>, tensor<3xf32>, tensor<f32>
}

// CHECK:      func.func @reducers(%X: tensor<2x3x4xf32>) -> (tensor<2xf32>, tensor<3xf32>, tensor<f32>) {
// CHECK-NEXT:   %mx = te.compute (%n) in [2] reduce max (%r, %s) in [3, 4] {
// CHECK-NEXT:     %x = te.extract %X[%n, %r, %s] : tensor<2x3x4xf32>
// CHECK-NEXT:     te.yield %x : f32
// CHECK-NEXT:   } {name = "max"} : tensor<2xf32>
// CHECK-NEXT:   %mn = te.compute (%c) in [3] reduce min (%r_1, %s_1) in [2, 4] {
// CHECK-NEXT:     %x_1 = te.extract %X[%r_1, %c, %s_1] : tensor<2x3x4xf32>
// CHECK-NEXT:     te.yield %x_1 : f32
// CHECK-NEXT:   } : tensor<3xf32>
// CHECK-NEXT:   %pr = te.compute () in [] reduce prod (%r_2) in [2] {
// CHECK-NEXT:     %x_2 = te.extract %mx[%r_2] : tensor<2xf32>
// CHECK-NEXT:     te.yield %x_2 : f32
// CHECK-NEXT:   } {name = "prod", note = 1 : i64} : tensor<f32>
// CHECK-NEXT:   func.return %mx, %mn, %pr : tensor<2xf32>, tensor<3xf32>, tensor<f32>
// CHECK-NEXT: }

// CHECK-GENERIC:      "func.func"() <{sym_name = "reducers", function_type = (tensor<2x3x4xf32>) -> (tensor<2xf32>, tensor<3xf32>, tensor<f32>)}> ({
// CHECK-GENERIC-NEXT: ^bb0(%X: tensor<2x3x4xf32>):
// CHECK-GENERIC-NEXT:   %mx = "te.compute"() <{shape = array<i64: 2>, reduce_shape = array<i64: 3, 4>, reducer = #te.reducer<max>, name = "max"}> ({
// CHECK-GENERIC-NEXT:   ^bb0(%n: index, %r: index, %s: index):
// CHECK-GENERIC-NEXT:     %x = "te.extract"(%X, %n, %r, %s) : (tensor<2x3x4xf32>, index, index, index) -> f32
// CHECK-GENERIC-NEXT:     "te.yield"(%x) : (f32) -> ()
// CHECK-GENERIC-NEXT:   }) : () -> tensor<2xf32>
// CHECK-GENERIC-NEXT:   %mn = "te.compute"() <{shape = array<i64: 3>, reduce_shape = array<i64: 2, 4>, reducer = #te.reducer<min>}> ({
// CHECK-GENERIC-NEXT:   ^bb0(%c: index, %r_1: index, %s_1: index):
// CHECK-GENERIC-NEXT:     %x_1 = "te.extract"(%X, %r_1, %c, %s_1) : (tensor<2x3x4xf32>, index, index, index) -> f32
// CHECK-GENERIC-NEXT:     "te.yield"(%x_1) : (f32) -> ()
// CHECK-GENERIC-NEXT:   }) : () -> tensor<3xf32>
// CHECK-GENERIC-NEXT:   %pr = "te.compute"() <{shape = array<i64>, reduce_shape = array<i64: 2>, reducer = #te.reducer<prod>, name = "prod"}> ({
// CHECK-GENERIC-NEXT:   ^bb0(%r_2: index):
// CHECK-GENERIC-NEXT:     %x_2 = "te.extract"(%mx, %r_2) : (tensor<2xf32>, index) -> f32
// CHECK-GENERIC-NEXT:     "te.yield"(%x_2) : (f32) -> ()
// CHECK-GENERIC-NEXT:   }) {note = 1 : i64} : () -> tensor<f32>
// CHECK-GENERIC-NEXT:   "func.return"(%mx, %mn, %pr) : (tensor<2xf32>, tensor<3xf32>, tensor<f32>) -> ()
// CHECK-GENERIC-NEXT: }) : () -> ()

// A padded read: te.if keeps the out-of-bounds te.extract from happening.
func.func @pad(%X: tensor<6xf32>) -> tensor<8xf32> {
  %P = te.compute (%i) in [8] {
    %c1 = arith.constant 1 : index
    %c7 = arith.constant 7 : index
    %cst = arith.constant 0.000000e+00 : f32
    %lo = arith.cmpi sge, %i, %c1 : index
    %hi = arith.cmpi slt, %i, %c7 : index
    %in = arith.andi %lo, %hi : i1
    %v = te.if %in -> f32 {
      %j = arith.subi %i, %c1 : index
      %x = te.extract %X[%j] : tensor<6xf32>
      te.yield %x : f32
    } else {
      te.yield %cst : f32
    }
    te.yield %v : f32
  } {name = "pad"} : tensor<8xf32>
  func.return %P : tensor<8xf32>
}

// CHECK:      func.func @pad(%X: tensor<6xf32>) -> tensor<8xf32> {
// CHECK-NEXT:   %P = te.compute (%i) in [8] {
// CHECK-NEXT:     %c1 = arith.constant 1 : index
// CHECK-NEXT:     %c7 = arith.constant 7 : index
// CHECK-NEXT:     %cst = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:     %lo = arith.cmpi sge, %i, %c1 : index
// CHECK-NEXT:     %hi = arith.cmpi slt, %i, %c7 : index
// CHECK-NEXT:     %in = arith.andi %lo, %hi : i1
// CHECK-NEXT:     %v = te.if %in -> f32 {
// CHECK-NEXT:       %j = arith.subi %i, %c1 : index
// CHECK-NEXT:       %x = te.extract %X[%j] : tensor<6xf32>
// CHECK-NEXT:       te.yield %x : f32
// CHECK-NEXT:     } else {
// CHECK-NEXT:       te.yield %cst : f32
// CHECK-NEXT:     }
// CHECK-NEXT:     te.yield %v : f32
// CHECK-NEXT:   } {name = "pad"} : tensor<8xf32>
// CHECK-NEXT:   func.return %P : tensor<8xf32>
// CHECK-NEXT: }

// CHECK-GENERIC:      "func.func"() <{sym_name = "pad", function_type = (tensor<6xf32>) -> tensor<8xf32>}> ({
// CHECK-GENERIC-NEXT: ^bb0(%X: tensor<6xf32>):
// CHECK-GENERIC-NEXT:   %P = "te.compute"() <{shape = array<i64: 8>, reduce_shape = array<i64>, name = "pad"}> ({
// CHECK-GENERIC-NEXT:   ^bb0(%i: index):
// CHECK-GENERIC-NEXT:     %c1 = "arith.constant"() <{value = 1 : index}> : () -> index
// CHECK-GENERIC-NEXT:     %c7 = "arith.constant"() <{value = 7 : index}> : () -> index
// CHECK-GENERIC-NEXT:     %cst = "arith.constant"() <{value = 0.000000e+00 : f32}> : () -> f32
// CHECK-GENERIC-NEXT:     %lo = "arith.cmpi"(%i, %c1) <{predicate = 5 : i64}> : (index, index) -> i1
// CHECK-GENERIC-NEXT:     %hi = "arith.cmpi"(%i, %c7) <{predicate = 2 : i64}> : (index, index) -> i1
// CHECK-GENERIC-NEXT:     %in = "arith.andi"(%lo, %hi) : (i1, i1) -> i1
// CHECK-GENERIC-NEXT:     %v = "te.if"(%in) ({
// CHECK-GENERIC-NEXT:       %j = "arith.subi"(%i, %c1) <{overflowFlags = #arith.overflow<none>}> : (index, index) -> index
// CHECK-GENERIC-NEXT:       %x = "te.extract"(%X, %j) : (tensor<6xf32>, index) -> f32
// CHECK-GENERIC-NEXT:       "te.yield"(%x) : (f32) -> ()
// CHECK-GENERIC-NEXT:     }, {
// CHECK-GENERIC-NEXT:       "te.yield"(%cst) : (f32) -> ()
// CHECK-GENERIC-NEXT:     }) : (i1) -> f32
// CHECK-GENERIC-NEXT:     "te.yield"(%v) : (f32) -> ()
// CHECK-GENERIC-NEXT:   }) : () -> tensor<8xf32>
// CHECK-GENERIC-NEXT:   "func.return"(%P) : (tensor<8xf32>) -> ()
// CHECK-GENERIC-NEXT: }) : () -> ()
