// RUN: xweave-opt %s -p convert-loop-to-llvm | filecheck %s

// A view is a byte offset from its source. Kernel arguments stay `noalias` when the
// views passed to one call are disjoint, and lose it when they overlap.

builtin.module {
  func.func @k(%a: memref<4xf32>, %b: memref<4xf32>) attributes {xweave.kernel} {
    func.return
  }
  func.func @k2(%a: memref<4xf32>, %b: memref<4xf32>) attributes {xweave.kernel} {
    func.return
  }
  "memref.global"() <{sym_name = "xweave_arena", type = memref<128xi8>, initial_value, sym_visibility = "private"}> : () -> ()
  func.func @main(%x: memref<4xf32>) {
    %arena = memref.get_global @xweave_arena : memref<128xi8>
    %0 = loop.view %arena[0] : memref<128xi8> to memref<4xf32>
    %1 = loop.view %arena[64] : memref<128xi8> to memref<4xf32>
    %2 = loop.view %arena[8] : memref<128xi8> to memref<4xf32>
    func.call @k(%0, %1) : (memref<4xf32>, memref<4xf32>) -> ()
    func.call @k2(%0, %2) : (memref<4xf32>, memref<4xf32>) -> ()
    %v = loop.load %1[1] : memref<4xf32>
    loop.store %v, %x[0] : memref<4xf32>
    func.return
  }
}

// The arena is call state (an uninitialized, writable global): not a parameter global
// but @main's argument after the model's own, recorded in `xweave.call_state`.
// CHECK:      llvm.func @k(%0: !llvm.ptr {llvm.noalias, llvm.dereferenceable = 16 : i64}, %1: !llvm.ptr {llvm.noalias, llvm.dereferenceable = 16 : i64})
// CHECK:      llvm.func @k2(%{{.*}}: !llvm.ptr {llvm.dereferenceable = 16 : i64}, %{{.*}}: !llvm.ptr {llvm.dereferenceable = 16 : i64})
// CHECK-NOT:  xweave_arena()
// CHECK:      llvm.func @main(%[[X:.*]]: !llvm.ptr, %[[A:.*]]: !llvm.ptr) attributes {xweave.arg_types = [memref<4xf32>], xweave.call_state = [{name = "xweave_arena", nbytes = 128 : i64}]} {
// CHECK-NEXT:   %[[V1:.*]] = llvm.getelementptr inbounds %[[A]][64] : (!llvm.ptr) -> !llvm.ptr, i8
// CHECK-NEXT:   %[[V2:.*]] = llvm.getelementptr inbounds %[[A]][8] : (!llvm.ptr) -> !llvm.ptr, i8
// CHECK-NEXT:   llvm.call @k(%[[A]], %[[V1]])
// CHECK-NEXT:   llvm.call @k2(%[[A]], %[[V2]])
// CHECK-NEXT:   %[[P:.*]] = llvm.getelementptr inbounds %[[V1]][1] : (!llvm.ptr) -> !llvm.ptr, f32
// CHECK-NEXT:   %{{.*}} = llvm.load %[[P]] {alignment = 4 : i64} : !llvm.ptr -> f32
