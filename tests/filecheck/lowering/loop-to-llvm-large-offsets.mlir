// RUN: xweave-opt %s -p convert-loop-to-llvm | filecheck %s

// Buffers past 2 GiB: every offset is an i64. A view's byte offset that does not fit
// the i32 constant indices of `llvm.getelementptr` becomes an i64 constant operand
// (2415919104 would wrap to -1879048192, 6442450944 would not fit at all); element
// offsets of loads and stores too. Offsets under 2^31 stay folded into the op.

builtin.module {
  "memref.global"() <{sym_name = "xweave_arena", type = memref<8589934592xi8>, initial_value, sym_visibility = "private"}> : () -> ()
  func.func @k(%a: memref<1x3x16384x16384xf32>, %b: memref<8xf32>) attributes {xweave.kernel} {
    %arena = memref.get_global @xweave_arena : memref<8589934592xi8>
    %t = loop.view %arena[7516192768] : memref<8589934592xi8> to memref<16xf32>
    loop.for "k.i" %i = 0 to 8 parallel {
      %v = loop.load %a[0, 2, 16383, %i] : memref<1x3x16384x16384xf32>
      loop.store %v, %t[%i] : memref<16xf32>
      loop.store %v, %b[%i] : memref<8xf32>
    }
    func.return
  }
  func.func @main(%x: memref<8xf32>) {
    %arena = memref.get_global @xweave_arena : memref<8589934592xi8>
    %0 = loop.view %arena[2415919104] : memref<8589934592xi8> to memref<1x3x16384x16384xf32>
    %1 = loop.view %arena[6442450944] : memref<8589934592xi8> to memref<8xf32>
    %2 = loop.view %arena[1024] : memref<8589934592xi8> to memref<8xf32>
    func.call @k(%0, %1) : (memref<1x3x16384x16384xf32>, memref<8xf32>) -> ()
    %v = loop.load %2[3] : memref<8xf32>
    loop.store %v, %x[0] : memref<8xf32>
    func.return
  }
}

// The kernel takes the arena after its own arguments; the parallel loop's body gets
// it as a captured value (the loop reads a view of it).
// CHECK:      llvm.func @k(%{{.*}}: !llvm.ptr {llvm.noalias, llvm.dereferenceable = 3221225472 : i64}, %{{.*}}: !llvm.ptr {llvm.noalias, llvm.dereferenceable = 32 : i64}, %[[KA:.*]]: !llvm.ptr {llvm.dereferenceable = 8589934592 : i64})
// CHECK:        %[[OFF:.*]] = llvm.mlir.constant(7516192768) : i64
// CHECK:        %{{.*}} = llvm.getelementptr inbounds %[[KA]][%[[OFF]]] : (!llvm.ptr, i64) -> !llvm.ptr, i8
// CHECK:      llvm.func @main(%[[X:.*]]: !llvm.ptr, %[[A:.*]]: !llvm.ptr) attributes {xweave.arg_types = [memref<8xf32>], xweave.call_state = [{name = "xweave_arena", nbytes = 8589934592 : i64}]} {
// CHECK-DAG:    %[[C1:.*]] = llvm.mlir.constant(2415919104) : i64
// CHECK-DAG:    %[[C2:.*]] = llvm.mlir.constant(6442450944) : i64
// CHECK:        %[[V0:.*]] = llvm.getelementptr inbounds %[[A]][%[[C1]]] : (!llvm.ptr, i64) -> !llvm.ptr, i8
// CHECK-NEXT:   %[[V1:.*]] = llvm.getelementptr inbounds %[[A]][%[[C2]]] : (!llvm.ptr, i64) -> !llvm.ptr, i8
// CHECK-NEXT:   %[[V2:.*]] = llvm.getelementptr inbounds %[[A]][1024] : (!llvm.ptr) -> !llvm.ptr, i8
// CHECK-NEXT:   llvm.call @k(%[[V0]], %[[V1]], %[[A]]) : (!llvm.ptr, !llvm.ptr, !llvm.ptr) -> ()
// The element offset of %a[0, 2, 16383, %i]: 2 * 16384^2 + 16383 * 16384 = 805289984,
// under 2^31 elements; in the parallel body, an i64 sum with the induction variable.
// CHECK:      llvm.func internal @k_parallel0_body(
// CHECK:        llvm.mlir.constant(805289984) : i64
