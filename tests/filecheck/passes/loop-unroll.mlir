// RUN: xweave-opt %s -p 'loop-unroll{loop="c.r"}' | filecheck %s
// RUN: xweave-opt %s -p 'loop-unroll{loop="c.r" kernel=strided}' | filecheck %s --check-prefix=KERNEL
// RUN: xweave-opt %s -p 'loop-unroll{loop="big" max-extent=6}' | filecheck %s --check-prefix=MAX
// RUN: not xweave-opt %s -p 'loop-unroll{loop="big" max-extent=5}' 2>&1 | filecheck %s --check-prefix=TOOBIG
// RUN: xweave-opt %s -p 'loop-unroll{loop="c.r" kernel=strided max-loops=3}' | filecheck %s --check-prefix=KERNEL
// RUN: not xweave-opt %s -p 'loop-unroll{loop="c.r" kernel=strided max-loops=2}' 2>&1 | filecheck %s --check-prefix=NESTS
// RUN: not xweave-opt %s -p 'loop-unroll{loop="nope"}' 2>&1 | filecheck %s --check-prefix=MISSING

// loop-unroll{loop=L}: one copy of the body per iteration, the induction variable
// replaced by the iteration's value and folded into the access maps (constant
// offsets). Nested loops are copied with their names. Every kernel with a loop L is
// unrolled, unless kernel= is given.

func.func @conv1d(%a: memref<6xf32>, %w: memref<3xf32>, %out: memref<4xf32>) attributes {xweave.kernel} {
  %acc = loop.alloc : memref<1xf32, #loop.scope<local>>
  loop.for "c.x" %x = 0 to 4 {
    %z = arith.constant 0.0 : f32
    loop.store %z, %acc[0] : memref<1xf32, #loop.scope<local>>
    loop.for "c.r" %r = 0 to 3 {
      %i = arith.addi %x, %r : index
      %v = loop.load %a[%i] : memref<6xf32>
      %k = loop.load %w[%r] : memref<3xf32>
      %p = arith.mulf %v, %k : f32
      %s0 = loop.load %acc[0] : memref<1xf32, #loop.scope<local>>
      %s = arith.addf %s0, %p : f32
      loop.store %s, %acc[0] : memref<1xf32, #loop.scope<local>>
    }
    %res = loop.load %acc[0] : memref<1xf32, #loop.scope<local>>
    loop.store %res, %out[%x] : memref<4xf32>
  }
  func.return
}
func.func @strided(%a: memref<12xf32>, %out: memref<12xf32>) attributes {xweave.kernel} {
  loop.for "c.r" %r = 1 to 8 step 3 {
    loop.for "t.j" %j = 0 to 2 {
      %v = loop.load %a[%r + %j] : memref<12xf32>
      loop.store %v, %out[%r + %j] : memref<12xf32>
    }
  }
  loop.for "big" %b = 0 to 6 {
    %v = loop.load %a[%b] : memref<12xf32>
    loop.store %v, %out[%b] : memref<12xf32>
  }
  func.return
}

// CHECK-LABEL: func.func @conv1d
// CHECK-NEXT:    %acc = loop.alloc : memref<1xf32, #loop.scope<local>>
// CHECK-NEXT:    loop.for "c.x" %x = 0 to 4 {
// CHECK-NEXT:      %z = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:      loop.store %z, %acc[0] : memref<1xf32, #loop.scope<local>>
// CHECK-NEXT:      %v = loop.load %a[%x] : memref<6xf32>
// CHECK-NEXT:      %k = loop.load %w[0] : memref<3xf32>
// CHECK-NEXT:      %p = arith.mulf %v, %k : f32
// CHECK-NEXT:      %s0 = loop.load %acc[0] : memref<1xf32, #loop.scope<local>>
// CHECK-NEXT:      %s = arith.addf %s0, %p : f32
// CHECK-NEXT:      loop.store %s, %acc[0] : memref<1xf32, #loop.scope<local>>
// CHECK-NEXT:      %v_1 = loop.load %a[%x + 1] : memref<6xf32>
// CHECK-NEXT:      %k_1 = loop.load %w[1] : memref<3xf32>
// CHECK:           loop.store %s_1, %acc[0] : memref<1xf32, #loop.scope<local>>
// CHECK-NEXT:      %v_2 = loop.load %a[%x + 2] : memref<6xf32>
// CHECK-NEXT:      %k_2 = loop.load %w[2] : memref<3xf32>
// CHECK:           loop.store %s_2, %acc[0] : memref<1xf32, #loop.scope<local>>
// CHECK-NEXT:      %res = loop.load %acc[0] : memref<1xf32, #loop.scope<local>>
// CHECK-NEXT:      loop.store %res, %out[%x] : memref<4xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return
// A lower bound and a step: r takes the values 1, 4, 7.
// CHECK-LABEL: func.func @strided
// CHECK-NEXT:    loop.for "t.j" %j = 0 to 2 {
// CHECK-NEXT:      %v = loop.load %a[%j + 1] : memref<12xf32>
// CHECK:         loop.for "t.j" %j_1 = 0 to 2 {
// CHECK-NEXT:      %v_1 = loop.load %a[%j_1 + 4] : memref<12xf32>
// CHECK:         loop.for "t.j" %j_2 = 0 to 2 {
// CHECK-NEXT:      %v_2 = loop.load %a[%j_2 + 7] : memref<12xf32>
// CHECK:         loop.for "big" %b = 0 to 6 {

// KERNEL-LABEL: func.func @conv1d
// KERNEL:          loop.for "c.r" %r = 0 to 3 {
// KERNEL-LABEL: func.func @strided
// KERNEL-NOT:      "c.r"
// KERNEL:          loop.for "t.j" %j_2 = 0 to 2 {

// MAX-LABEL: func.func @strided
// MAX:         loop.store %v_1, %out[0] : memref<12xf32>
// MAX:         loop.store %v_6, %out[5] : memref<12xf32>
// MAX-NEXT:    func.return

// TOOBIG: loop-unroll: loop 'big' has 6 iterations, more than max-extent=5; split it first, or raise max-extent
// (c.r of @strided holds one loop: its 3 copies hold 3)
// NESTS: loop-unroll: loop 'c.r' holds 1 loop(s): its 3 copies would hold 3, more than max-loops=2
// MISSING: loop-unroll: no loop named 'nope' in any kernel
