// RUN: xweave-opt %s -p 'loop-prefetch{loop="mm.k"}' | filecheck %s
// RUN: xweave-opt %s -p 'loop-prefetch{loop="mm.k" kernel=other}' | filecheck %s --check-prefix=KERNEL
// RUN: not xweave-opt %s -p 'loop-prefetch{loop="nope"}' 2>&1 | filecheck %s --check-prefix=MISSING

// loop-prefetch{loop=L}: in front of every loop L, one prefetch per cache line that
// the ops after L in its block load from non-local buffers (a register tile's fused
// epilogue), when the address is known before L. Stores, local buffers, and loads
// inside a loop after L are left alone; two vectors of one 64-byte line give one
// prefetch.

func.func @tile(%a: memref<8x64xf32>, %b: memref<64x16xf32>, %bias: memref<16xf32>, %res: memref<8x16xf32>, %out: memref<8x16xf32>) attributes {xweave.kernel} {
  loop.for "mm.i" %i = 0 to 2 {
    %acc = loop.alloc : memref<4x16xf32, #loop.scope<local>>
    loop.for "mm.k" %k = 0 to 64 {
      %x = loop.load %a[%i * 4, %k] : memref<8x64xf32>
      %w = loop.load %b[%k, 0] : memref<64x16xf32> -> vector<8xf32>
      %s = loop.load %acc[0, 0] : memref<4x16xf32, #loop.scope<local>> -> vector<8xf32>
      %xv = vector.broadcast %x : f32 to vector<8xf32>
      %f = vector.fma %xv, %w, %s : vector<8xf32>
      loop.store %f, %acc[0, 0] : memref<4x16xf32, #loop.scope<local>>, vector<8xf32>
    }
    %t0 = loop.load %acc[0, 0] : memref<4x16xf32, #loop.scope<local>> -> vector<8xf32>
    %c0 = loop.load %bias[0] : memref<16xf32> -> vector<8xf32>
    %r0 = loop.load %res[%i * 4, 0] : memref<8x16xf32> -> vector<8xf32>
    %r1 = loop.load %res[%i * 4, 8] : memref<8x16xf32> -> vector<8xf32>
    %r2 = loop.load %res[%i * 4 + 1, 0] : memref<8x16xf32> -> vector<8xf32>
    %u0 = arith.addf %t0, %c0 : vector<8xf32>
    %u1 = arith.addf %u0, %r0 : vector<8xf32>
    %u2 = arith.addf %r1, %r2 : vector<8xf32>
    loop.store %u1, %out[%i * 4, 0] : memref<8x16xf32>, vector<8xf32>
    loop.store %u2, %out[%i * 4, 8] : memref<8x16xf32>, vector<8xf32>
    loop.for "mm.rest" %j = 1 to 4 {
      %r = loop.load %res[%i * 4 + %j, 0] : memref<8x16xf32> -> vector<8xf32>
      loop.store %r, %out[%i * 4 + %j, 0] : memref<8x16xf32>, vector<8xf32>
    }
  }
  func.return
}

// CHECK:      loop.for "mm.i" %i = 0 to 2 {
// CHECK-NEXT:   %acc = loop.alloc : memref<4x16xf32, #loop.scope<local>>
// CHECK-NEXT:   loop.prefetch %bias[0] : memref<16xf32>
// CHECK-NEXT:   loop.prefetch %res[%i * 4, 0] : memref<8x16xf32>
// CHECK-NEXT:   loop.prefetch %res[%i * 4 + 1, 0] : memref<8x16xf32>
// CHECK-NEXT:   loop.for "mm.k" %k = 0 to 64 {
// CHECK-NOT:    loop.prefetch
// CHECK:        func.return

// KERNEL-NOT: loop.prefetch

// MISSING: loop-prefetch: no loop named 'nope' in any kernel

func.func @other(%a: memref<4xf32>) attributes {xweave.kernel} {
  loop.for "mm.k" %k = 0 to 4 {
    %x = loop.load %a[%k] : memref<4xf32>
  }
  func.return
}
