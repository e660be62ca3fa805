// RUN: xweave-opt %s --split-input-file -p convert-loop-to-llvm | filecheck %s
// RUN: xweave-opt %s --split-input-file -p convert-loop-to-llvm | filecheck %s --check-prefix=NOT-LEFT

// Nothing of the loop stage survives: only llvm.func and llvm.mlir.global at top level.
// NOT-LEFT-NOT: func.func
// NOT-LEFT-NOT: loop.
// NOT-LEFT-NOT: memref.
// NOT-LEFT-NOT: arith.
// NOT-LEFT-NOT: scf.
// NOT-LEFT-NOT: vector.
// NOT-LEFT-NOT: math.

builtin.module {
  func.func @kernel(%A: memref<8x4xf32>, %B: memref<3x4xf32>) attributes {xweave.kernel} {
    %tmp = loop.alloc : memref<4xf32, #loop.scope<local>>
    %zero = arith.constant 0.0 : f32
    loop.for %i = 0 to 3 {
      loop.for %k = 0 to 2 {
        %a = loop.load %A[%i * 2 + %k, 1] : memref<8x4xf32>
        %e = math.sqrt %a : f32
        %pos = arith.cmpf ogt, %e, %zero : f32
        %r = scf.if %pos -> (f32) {
          %s = arith.mulf %e, %a : f32
          scf.yield %s : f32
        } else {
          scf.yield %zero : f32
        }
        loop.store %r, %tmp[%k] : memref<4xf32, #loop.scope<local>>
      }
    }
    %v = loop.load %A[0, 0] : memref<8x4xf32> -> vector<4xf32>
    %w = loop.load %tmp[0] : memref<4xf32, #loop.scope<local>> -> vector<4xf32>
    %f = vector.fma %v, %w, %v : vector<4xf32>
    loop.store %f, %B[2, 0] : memref<3x4xf32>, vector<4xf32>
    func.return
  }

  func.func @main(%x: memref<8x4xf32>, %y: memref<3x4xf32>) attributes {xweave.input_names = ["x"], xweave.output_names = ["y"]} {
    %w = loop.get_global @weight : memref<8x4xf32>
    %t = loop.alloc : memref<3x4xf32>
    func.call @kernel(%w, %t) : (memref<8x4xf32>, memref<3x4xf32>) -> ()
    func.call @kernel(%x, %y) : (memref<8x4xf32>, memref<3x4xf32>) -> ()
    func.return
  }

  loop.global @weight : memref<8x4xf32> = dense<1.0> : tensor<8x4xf32>

  llvm.func @already_lowered(%p: !llvm.ptr) -> f32 {
    %0 = llvm.load %p {alignment = 4 : i64} : !llvm.ptr -> f32
    llvm.return %0 : f32
  }
}

// Kernel arguments: bare pointers, noalias (distinct buffers at every call), dereferenceable bytes.
// CHECK-LABEL: llvm.func @kernel(
// CHECK-SAME:    %[[A:[0-9]+]]: !llvm.ptr {llvm.noalias, llvm.dereferenceable = 128 : i64},
// CHECK-SAME:    %[[B:[0-9]+]]: !llvm.ptr {llvm.noalias, llvm.dereferenceable = 48 : i64})
// CHECK-SAME:    attributes {xweave.kernel}
// Constants and the local buffer (an alloca) are hoisted into the entry block.
// CHECK-DAG:     %[[C4:[0-9]+]] = llvm.mlir.constant(4) : i64
// CHECK-DAG:     %[[ZERO:[0-9]+]] = llvm.mlir.constant(0.000000e+00 : f32) : f32
// CHECK-DAG:     %[[C0:[0-9]+]] = llvm.mlir.constant(0) : i64
// CHECK-DAG:     %[[C8:[0-9]+]] = llvm.mlir.constant(8) : i64
// CHECK-DAG:     %[[C1:[0-9]+]] = llvm.mlir.constant(1) : i64
// CHECK-DAG:     %[[C2:[0-9]+]] = llvm.mlir.constant(2) : i64
// CHECK-DAG:     %[[C3:[0-9]+]] = llvm.mlir.constant(3) : i64
// CHECK:         %[[TMP:[0-9]+]] = llvm.alloca %[[C4]] x f32 {alignment = 32 : i64} : (i64) -> !llvm.ptr
// A loop.for is a block taking the induction variable, with the latch at its end.
// CHECK-NEXT:    llvm.br ^[[I_LOOP:bb[0-9]+]](%[[C0]] : i64)
// CHECK-NEXT:  ^[[I_LOOP]](%[[I:[0-9]+]]: i64):
// CHECK-NEXT:    llvm.br ^[[K_LOOP:bb[0-9]+]](%[[C0]] : i64)
// CHECK-NEXT:  ^[[K_LOOP]](%[[K:[0-9]+]]: i64):
// %A[%i * 2 + %k, 1] on memref<8x4xf32>: offset i * 8 + k * 4 + 1.
// CHECK-NEXT:    %[[I8:[0-9]+]] = llvm.mul %[[I]], %[[C8]] overflow<nsw> : i64
// CHECK-NEXT:    %[[K4:[0-9]+]] = llvm.mul %[[K]], %[[C4]] overflow<nsw> : i64
// CHECK-NEXT:    %[[SUM:[0-9]+]] = llvm.add %[[I8]], %[[K4]] overflow<nsw> : i64
// CHECK-NEXT:    %[[OFF:[0-9]+]] = llvm.add %[[SUM]], %[[C1]] overflow<nsw> : i64
// CHECK-NEXT:    %[[PA:[0-9]+]] = llvm.getelementptr inbounds %[[A]][%[[OFF]]] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CHECK-NEXT:    %[[LA:[0-9]+]] = llvm.load %[[PA]] {alignment = 4 : i64} : !llvm.ptr -> f32
// CHECK-NEXT:    %[[E:[0-9]+]] = llvm.call_intrinsic "llvm.sqrt.f32"(%[[LA]]) : (f32) -> f32
// CHECK-NEXT:    %[[POS:[0-9]+]] = llvm.fcmp "ogt" %[[E]], %[[ZERO]] : f32
// scf.if with a result: two blocks branching to a join block whose argument is the result.
// CHECK-NEXT:    llvm.cond_br %[[POS]], ^[[THEN:bb[0-9]+]], ^[[ELSE:bb[0-9]+]]
// CHECK-NEXT:  ^[[THEN]]:
// CHECK-NEXT:    %[[S:[0-9]+]] = llvm.fmul %[[E]], %[[LA]] {fastmathFlags = #llvm.fastmath<contract>} : f32
// CHECK-NEXT:    llvm.br ^[[JOIN:bb[0-9]+]](%[[S]] : f32)
// CHECK-NEXT:  ^[[ELSE]]:
// CHECK-NEXT:    llvm.br ^[[JOIN]](%[[ZERO]] : f32)
// CHECK-NEXT:  ^[[JOIN]](%[[R:[0-9]+]]: f32):
// CHECK-NEXT:    %[[PT:[0-9]+]] = llvm.getelementptr inbounds %[[TMP]][%[[K]]] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CHECK-NEXT:    llvm.store %[[R]], %[[PT]] {alignment = 4 : i64} : f32, !llvm.ptr
// CHECK-NEXT:    %[[KN:[0-9]+]] = llvm.add %[[K]], %[[C1]] overflow<nsw,nuw> : i64
// CHECK-NEXT:    %[[KC:[0-9]+]] = llvm.icmp "slt" %[[KN]], %[[C2]] : i64
// CHECK-NEXT:    llvm.cond_br %[[KC]], ^[[K_LOOP]](%[[KN]] : i64), ^[[K_EXIT:bb[0-9]+]]
// CHECK-NEXT:  ^[[K_EXIT]]:
// CHECK-NEXT:    %[[IN:[0-9]+]] = llvm.add %[[I]], %[[C1]] overflow<nsw,nuw> : i64
// CHECK-NEXT:    %[[IC:[0-9]+]] = llvm.icmp "slt" %[[IN]], %[[C3]] : i64
// CHECK-NEXT:    llvm.cond_br %[[IC]], ^[[I_LOOP]](%[[IN]] : i64), ^[[I_EXIT:bb[0-9]+]]
// CHECK-NEXT:  ^[[I_EXIT]]:
// Vector accesses load/store vector<4xf32> at the element's alignment, unless the buffer
// was allocated here (the stack buffer: 32 bytes at offset 0); vector.fma is llvm.intr.fma.
// CHECK-NEXT:    %[[V:[0-9]+]] = llvm.load %[[A]] {alignment = 4 : i64} : !llvm.ptr -> vector<4xf32>
// CHECK-NEXT:    %[[W:[0-9]+]] = llvm.load %[[TMP]] {alignment = 32 : i64} : !llvm.ptr -> vector<4xf32>
// CHECK-NEXT:    %[[F:[0-9]+]] = llvm.intr.fma(%[[V]], %[[W]], %[[V]]) : (vector<4xf32>, vector<4xf32>, vector<4xf32>) -> vector<4xf32>
// CHECK-NEXT:    %[[PB:[0-9]+]] = llvm.getelementptr inbounds %[[B]][8] : (!llvm.ptr) -> !llvm.ptr, f32
// CHECK-NEXT:    llvm.store %[[F]], %[[PB]] {alignment = 4 : i64} : vector<4xf32>, !llvm.ptr
// CHECK-NEXT:    llvm.return
// CHECK-NEXT:  }

// @main: pointers in, pointers out, its attributes kept and its memref types recorded
// (xweave.arg_types); a global (weight) is an addressof, a global-scope buffer an
// aligned_alloc freed before the return.
// CHECK-LABEL: llvm.func @main(
// CHECK-SAME:    %[[X:[0-9]+]]: !llvm.ptr, %[[Y:[0-9]+]]: !llvm.ptr)
// CHECK-SAME:    attributes {xweave.input_names = ["x"], xweave.output_names = ["y"], xweave.arg_types = [memref<8x4xf32>, memref<3x4xf32>]}
// CHECK-NEXT:    %[[C64:[0-9]+]] = llvm.mlir.constant(64) : i64
// CHECK-NEXT:    %[[W:[0-9]+]] = llvm.mlir.addressof @xweave_param_weight : !llvm.ptr
// CHECK-NEXT:    %[[T:[0-9]+]] = llvm.call @aligned_alloc(%[[C64]], %[[C64]]) : (i64, i64) -> !llvm.ptr
// CHECK-NEXT:    llvm.call @kernel(%[[W]], %[[T]]) : (!llvm.ptr, !llvm.ptr) -> ()
// CHECK-NEXT:    llvm.call @kernel(%[[X]], %[[Y]]) : (!llvm.ptr, !llvm.ptr) -> ()
// CHECK-NEXT:    llvm.call @free(%[[T]]) : (!llvm.ptr) -> ()
// CHECK-NEXT:    llvm.return
// CHECK-NEXT:  }

// The weight: an external declaration without initializer (the runtime binds the data),
// its value kept beside it for `extract_params` (LLVM IR never sees it).
// CHECK-NEXT:  llvm.mlir.global external constant @xweave_param_weight() {addr_space = 0 : i32, xweave.value = dense<1.000000e+00> : tensor<8x4xf32>} : !llvm.array<8 x !llvm.array<4 x f32>>

// Already in the llvm dialect: left alone.
// CHECK-NEXT:  llvm.func @already_lowered(%p: !llvm.ptr) -> f32 {
// CHECK-NEXT:    %{{[0-9]+}} = llvm.load %p {alignment = 4 : i64} : !llvm.ptr -> f32
// CHECK-NEXT:    llvm.return %{{[0-9]+}} : f32
// CHECK-NEXT:  }
// CHECK-NEXT:  llvm.func @aligned_alloc(i64, i64) -> !llvm.ptr
// CHECK-NEXT:  llvm.func @free(!llvm.ptr)

// -----

// A kernel called with the same buffer twice: no noalias on those two arguments.
builtin.module {
  func.func @add(%a: memref<16xf32>, %b: memref<16xf32>, %c: memref<16xf32>) attributes {xweave.kernel} {
    loop.for %i = 0 to 16 step 8 vectorized {
      %x = loop.load %a[%i] : memref<16xf32> -> vector<8xf32>
      %y = loop.load %b[%i] : memref<16xf32> -> vector<8xf32>
      %s = arith.addf %x, %y : vector<8xf32>
      %t = math.tanh %s : vector<8xf32>
      loop.store %t, %c[%i] : memref<16xf32>, vector<8xf32>
    }
    func.return
  }
  func.func @main(%in: memref<16xf32>, %out: memref<16xf32>) {
    func.call @add(%in, %in, %out) : (memref<16xf32>, memref<16xf32>, memref<16xf32>) -> ()
    func.return
  }
}

// CHECK-LABEL: llvm.func @add(
// CHECK-SAME:    %{{[0-9]+}}: !llvm.ptr {llvm.dereferenceable = 64 : i64},
// CHECK-SAME:    %{{[0-9]+}}: !llvm.ptr {llvm.dereferenceable = 64 : i64},
// CHECK-SAME:    %{{[0-9]+}}: !llvm.ptr {llvm.noalias, llvm.dereferenceable = 64 : i64})
// A vectorized loop is (for now) a serial loop stepping by the vector width.
// CHECK:         ^[[L:bb[0-9]+]](%[[IV:[0-9]+]]: i64):
// CHECK:         %{{[0-9]+}} = llvm.load %{{[0-9]+}} {alignment = 4 : i64} : !llvm.ptr -> vector<8xf32>
// CHECK:         %[[S:[0-9]+]] = llvm.fadd %{{[0-9]+}}, %{{[0-9]+}} {fastmathFlags = #llvm.fastmath<contract>} : vector<8xf32>
// Math without an llvm op of its own: an intrinsic call.
// CHECK-NEXT:    %{{[0-9]+}} = llvm.call_intrinsic "llvm.tanh.v8f32"(%[[S]]) : (vector<8xf32>) -> vector<8xf32>
// CHECK:         %[[N:[0-9]+]] = llvm.add %[[IV]], %{{[0-9]+}} overflow<nsw,nuw> : i64
// CHECK:         llvm.cond_br %{{[0-9]+}}, ^[[L]](%[[N]] : i64), ^bb{{[0-9]+}}
