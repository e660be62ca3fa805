// RUN: xweave-opt %s -p convert-loop-to-llvm | filecheck %s

// A serial loop whose body is a register block of at least 13 vector FMAs (one step
// of a blocked reduction) is marked so that LLVM does not unroll it (the
// accumulators would spill): its back edge carries xweave.no_llvm_unroll, which
// runtime.jit turns into !llvm.loop metadata. A block of 12 FMAs keeps the unroll.

builtin.module {
  func.func @blocks(%X: memref<64x13xf32>, %W: memref<64x8xf32>) attributes {xweave.kernel} {
    %acc = loop.alloc : memref<13x8xf32, #loop.scope<local>>
    loop.for "thirteen" %k13 = 0 to 64 {
      %w13 = loop.load %W[%k13, 0] : memref<64x8xf32> -> vector<8xf32>
      %x13_0 = loop.load %X[%k13, 0] : memref<64x13xf32>
      %b13_0 = vector.broadcast %x13_0 : f32 to vector<8xf32>
      %a13_0 = loop.load %acc[0, 0] : memref<13x8xf32, #loop.scope<local>> -> vector<8xf32>
      %f13_0 = vector.fma %b13_0, %w13, %a13_0 : vector<8xf32>
      loop.store %f13_0, %acc[0, 0] : memref<13x8xf32, #loop.scope<local>>, vector<8xf32>
      %x13_1 = loop.load %X[%k13, 1] : memref<64x13xf32>
      %b13_1 = vector.broadcast %x13_1 : f32 to vector<8xf32>
      %a13_1 = loop.load %acc[1, 0] : memref<13x8xf32, #loop.scope<local>> -> vector<8xf32>
      %f13_1 = vector.fma %b13_1, %w13, %a13_1 : vector<8xf32>
      loop.store %f13_1, %acc[1, 0] : memref<13x8xf32, #loop.scope<local>>, vector<8xf32>
      %x13_2 = loop.load %X[%k13, 2] : memref<64x13xf32>
      %b13_2 = vector.broadcast %x13_2 : f32 to vector<8xf32>
      %a13_2 = loop.load %acc[2, 0] : memref<13x8xf32, #loop.scope<local>> -> vector<8xf32>
      %f13_2 = vector.fma %b13_2, %w13, %a13_2 : vector<8xf32>
      loop.store %f13_2, %acc[2, 0] : memref<13x8xf32, #loop.scope<local>>, vector<8xf32>
      %x13_3 = loop.load %X[%k13, 3] : memref<64x13xf32>
      %b13_3 = vector.broadcast %x13_3 : f32 to vector<8xf32>
      %a13_3 = loop.load %acc[3, 0] : memref<13x8xf32, #loop.scope<local>> -> vector<8xf32>
      %f13_3 = vector.fma %b13_3, %w13, %a13_3 : vector<8xf32>
      loop.store %f13_3, %acc[3, 0] : memref<13x8xf32, #loop.scope<local>>, vector<8xf32>
      %x13_4 = loop.load %X[%k13, 4] : memref<64x13xf32>
      %b13_4 = vector.broadcast %x13_4 : f32 to vector<8xf32>
      %a13_4 = loop.load %acc[4, 0] : memref<13x8xf32, #loop.scope<local>> -> vector<8xf32>
      %f13_4 = vector.fma %b13_4, %w13, %a13_4 : vector<8xf32>
      loop.store %f13_4, %acc[4, 0] : memref<13x8xf32, #loop.scope<local>>, vector<8xf32>
      %x13_5 = loop.load %X[%k13, 5] : memref<64x13xf32>
      %b13_5 = vector.broadcast %x13_5 : f32 to vector<8xf32>
      %a13_5 = loop.load %acc[5, 0] : memref<13x8xf32, #loop.scope<local>> -> vector<8xf32>
      %f13_5 = vector.fma %b13_5, %w13, %a13_5 : vector<8xf32>
      loop.store %f13_5, %acc[5, 0] : memref<13x8xf32, #loop.scope<local>>, vector<8xf32>
      %x13_6 = loop.load %X[%k13, 6] : memref<64x13xf32>
      %b13_6 = vector.broadcast %x13_6 : f32 to vector<8xf32>
      %a13_6 = loop.load %acc[6, 0] : memref<13x8xf32, #loop.scope<local>> -> vector<8xf32>
      %f13_6 = vector.fma %b13_6, %w13, %a13_6 : vector<8xf32>
      loop.store %f13_6, %acc[6, 0] : memref<13x8xf32, #loop.scope<local>>, vector<8xf32>
      %x13_7 = loop.load %X[%k13, 7] : memref<64x13xf32>
      %b13_7 = vector.broadcast %x13_7 : f32 to vector<8xf32>
      %a13_7 = loop.load %acc[7, 0] : memref<13x8xf32, #loop.scope<local>> -> vector<8xf32>
      %f13_7 = vector.fma %b13_7, %w13, %a13_7 : vector<8xf32>
      loop.store %f13_7, %acc[7, 0] : memref<13x8xf32, #loop.scope<local>>, vector<8xf32>
      %x13_8 = loop.load %X[%k13, 8] : memref<64x13xf32>
      %b13_8 = vector.broadcast %x13_8 : f32 to vector<8xf32>
      %a13_8 = loop.load %acc[8, 0] : memref<13x8xf32, #loop.scope<local>> -> vector<8xf32>
      %f13_8 = vector.fma %b13_8, %w13, %a13_8 : vector<8xf32>
      loop.store %f13_8, %acc[8, 0] : memref<13x8xf32, #loop.scope<local>>, vector<8xf32>
      %x13_9 = loop.load %X[%k13, 9] : memref<64x13xf32>
      %b13_9 = vector.broadcast %x13_9 : f32 to vector<8xf32>
      %a13_9 = loop.load %acc[9, 0] : memref<13x8xf32, #loop.scope<local>> -> vector<8xf32>
      %f13_9 = vector.fma %b13_9, %w13, %a13_9 : vector<8xf32>
      loop.store %f13_9, %acc[9, 0] : memref<13x8xf32, #loop.scope<local>>, vector<8xf32>
      %x13_10 = loop.load %X[%k13, 10] : memref<64x13xf32>
      %b13_10 = vector.broadcast %x13_10 : f32 to vector<8xf32>
      %a13_10 = loop.load %acc[10, 0] : memref<13x8xf32, #loop.scope<local>> -> vector<8xf32>
      %f13_10 = vector.fma %b13_10, %w13, %a13_10 : vector<8xf32>
      loop.store %f13_10, %acc[10, 0] : memref<13x8xf32, #loop.scope<local>>, vector<8xf32>
      %x13_11 = loop.load %X[%k13, 11] : memref<64x13xf32>
      %b13_11 = vector.broadcast %x13_11 : f32 to vector<8xf32>
      %a13_11 = loop.load %acc[11, 0] : memref<13x8xf32, #loop.scope<local>> -> vector<8xf32>
      %f13_11 = vector.fma %b13_11, %w13, %a13_11 : vector<8xf32>
      loop.store %f13_11, %acc[11, 0] : memref<13x8xf32, #loop.scope<local>>, vector<8xf32>
      %x13_12 = loop.load %X[%k13, 12] : memref<64x13xf32>
      %b13_12 = vector.broadcast %x13_12 : f32 to vector<8xf32>
      %a13_12 = loop.load %acc[12, 0] : memref<13x8xf32, #loop.scope<local>> -> vector<8xf32>
      %f13_12 = vector.fma %b13_12, %w13, %a13_12 : vector<8xf32>
      loop.store %f13_12, %acc[12, 0] : memref<13x8xf32, #loop.scope<local>>, vector<8xf32>
    }
    loop.for "twelve" %k12 = 0 to 64 {
      %w12 = loop.load %W[%k12, 0] : memref<64x8xf32> -> vector<8xf32>
      %x12_0 = loop.load %X[%k12, 0] : memref<64x13xf32>
      %b12_0 = vector.broadcast %x12_0 : f32 to vector<8xf32>
      %a12_0 = loop.load %acc[0, 0] : memref<13x8xf32, #loop.scope<local>> -> vector<8xf32>
      %f12_0 = vector.fma %b12_0, %w12, %a12_0 : vector<8xf32>
      loop.store %f12_0, %acc[0, 0] : memref<13x8xf32, #loop.scope<local>>, vector<8xf32>
      %x12_1 = loop.load %X[%k12, 1] : memref<64x13xf32>
      %b12_1 = vector.broadcast %x12_1 : f32 to vector<8xf32>
      %a12_1 = loop.load %acc[1, 0] : memref<13x8xf32, #loop.scope<local>> -> vector<8xf32>
      %f12_1 = vector.fma %b12_1, %w12, %a12_1 : vector<8xf32>
      loop.store %f12_1, %acc[1, 0] : memref<13x8xf32, #loop.scope<local>>, vector<8xf32>
      %x12_2 = loop.load %X[%k12, 2] : memref<64x13xf32>
      %b12_2 = vector.broadcast %x12_2 : f32 to vector<8xf32>
      %a12_2 = loop.load %acc[2, 0] : memref<13x8xf32, #loop.scope<local>> -> vector<8xf32>
      %f12_2 = vector.fma %b12_2, %w12, %a12_2 : vector<8xf32>
      loop.store %f12_2, %acc[2, 0] : memref<13x8xf32, #loop.scope<local>>, vector<8xf32>
      %x12_3 = loop.load %X[%k12, 3] : memref<64x13xf32>
      %b12_3 = vector.broadcast %x12_3 : f32 to vector<8xf32>
      %a12_3 = loop.load %acc[3, 0] : memref<13x8xf32, #loop.scope<local>> -> vector<8xf32>
      %f12_3 = vector.fma %b12_3, %w12, %a12_3 : vector<8xf32>
      loop.store %f12_3, %acc[3, 0] : memref<13x8xf32, #loop.scope<local>>, vector<8xf32>
      %x12_4 = loop.load %X[%k12, 4] : memref<64x13xf32>
      %b12_4 = vector.broadcast %x12_4 : f32 to vector<8xf32>
      %a12_4 = loop.load %acc[4, 0] : memref<13x8xf32, #loop.scope<local>> -> vector<8xf32>
      %f12_4 = vector.fma %b12_4, %w12, %a12_4 : vector<8xf32>
      loop.store %f12_4, %acc[4, 0] : memref<13x8xf32, #loop.scope<local>>, vector<8xf32>
      %x12_5 = loop.load %X[%k12, 5] : memref<64x13xf32>
      %b12_5 = vector.broadcast %x12_5 : f32 to vector<8xf32>
      %a12_5 = loop.load %acc[5, 0] : memref<13x8xf32, #loop.scope<local>> -> vector<8xf32>
      %f12_5 = vector.fma %b12_5, %w12, %a12_5 : vector<8xf32>
      loop.store %f12_5, %acc[5, 0] : memref<13x8xf32, #loop.scope<local>>, vector<8xf32>
      %x12_6 = loop.load %X[%k12, 6] : memref<64x13xf32>
      %b12_6 = vector.broadcast %x12_6 : f32 to vector<8xf32>
      %a12_6 = loop.load %acc[6, 0] : memref<13x8xf32, #loop.scope<local>> -> vector<8xf32>
      %f12_6 = vector.fma %b12_6, %w12, %a12_6 : vector<8xf32>
      loop.store %f12_6, %acc[6, 0] : memref<13x8xf32, #loop.scope<local>>, vector<8xf32>
      %x12_7 = loop.load %X[%k12, 7] : memref<64x13xf32>
      %b12_7 = vector.broadcast %x12_7 : f32 to vector<8xf32>
      %a12_7 = loop.load %acc[7, 0] : memref<13x8xf32, #loop.scope<local>> -> vector<8xf32>
      %f12_7 = vector.fma %b12_7, %w12, %a12_7 : vector<8xf32>
      loop.store %f12_7, %acc[7, 0] : memref<13x8xf32, #loop.scope<local>>, vector<8xf32>
      %x12_8 = loop.load %X[%k12, 8] : memref<64x13xf32>
      %b12_8 = vector.broadcast %x12_8 : f32 to vector<8xf32>
      %a12_8 = loop.load %acc[8, 0] : memref<13x8xf32, #loop.scope<local>> -> vector<8xf32>
      %f12_8 = vector.fma %b12_8, %w12, %a12_8 : vector<8xf32>
      loop.store %f12_8, %acc[8, 0] : memref<13x8xf32, #loop.scope<local>>, vector<8xf32>
      %x12_9 = loop.load %X[%k12, 9] : memref<64x13xf32>
      %b12_9 = vector.broadcast %x12_9 : f32 to vector<8xf32>
      %a12_9 = loop.load %acc[9, 0] : memref<13x8xf32, #loop.scope<local>> -> vector<8xf32>
      %f12_9 = vector.fma %b12_9, %w12, %a12_9 : vector<8xf32>
      loop.store %f12_9, %acc[9, 0] : memref<13x8xf32, #loop.scope<local>>, vector<8xf32>
      %x12_10 = loop.load %X[%k12, 10] : memref<64x13xf32>
      %b12_10 = vector.broadcast %x12_10 : f32 to vector<8xf32>
      %a12_10 = loop.load %acc[10, 0] : memref<13x8xf32, #loop.scope<local>> -> vector<8xf32>
      %f12_10 = vector.fma %b12_10, %w12, %a12_10 : vector<8xf32>
      loop.store %f12_10, %acc[10, 0] : memref<13x8xf32, #loop.scope<local>>, vector<8xf32>
      %x12_11 = loop.load %X[%k12, 11] : memref<64x13xf32>
      %b12_11 = vector.broadcast %x12_11 : f32 to vector<8xf32>
      %a12_11 = loop.load %acc[11, 0] : memref<13x8xf32, #loop.scope<local>> -> vector<8xf32>
      %f12_11 = vector.fma %b12_11, %w12, %a12_11 : vector<8xf32>
      loop.store %f12_11, %acc[11, 0] : memref<13x8xf32, #loop.scope<local>>, vector<8xf32>
    }
    func.return
  }
}

// CHECK-LABEL: llvm.func @blocks
// CHECK:       llvm.cond_br {{.*}} {xweave.no_llvm_unroll}
// CHECK-NOT:   xweave.no_llvm_unroll
// CHECK:       llvm.return
