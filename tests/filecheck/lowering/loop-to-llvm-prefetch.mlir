// RUN: xweave-opt %s -p convert-loop-to-llvm | filecheck %s

// loop.prefetch becomes llvm.prefetch(address, write, locality 3, data cache).

func.func @f(%a: memref<128x768xf32>) attributes {xweave.kernel} {
  loop.for "i" %i = 0 to 32 {
    loop.prefetch %a[%i * 4 + 1, 16] : memref<128x768xf32>
    loop.prefetch write %a[%i, 0] : memref<128x768xf32>
  }
  func.return
}

// CHECK-DAG:  %[[ZERO:.*]] = llvm.mlir.constant(0 : i32) : i32
// CHECK-DAG:  %[[ONE:.*]] = llvm.mlir.constant(1 : i32) : i32
// CHECK-DAG:  %[[THREE:.*]] = llvm.mlir.constant(3 : i32) : i32
// CHECK:      %[[P:.*]] = llvm.getelementptr
// CHECK:      llvm.call_intrinsic "llvm.prefetch.p0"(%[[P]], %[[ZERO]], %[[THREE]], %[[ONE]]) : (!llvm.ptr, i32, i32, i32) -> ()
// CHECK:      %[[Q:.*]] = llvm.getelementptr
// CHECK:      llvm.call_intrinsic "llvm.prefetch.p0"(%[[Q]], %[[ONE]], %[[THREE]], %[[ONE]]) : (!llvm.ptr, i32, i32, i32) -> ()
