// RUN: xweave-opt %s -p 'loop-unguard{loop="t.k"}' | filecheck %s
// RUN: xweave-opt %s -p 'loop-unguard{loop="t.k" kernel="unpadded"}' | filecheck %s --check-prefix=ONE
// RUN: xweave-opt %s -p 'loop-unguard{loop="t.nope"}' --verify-diagnostics | filecheck %s --check-prefix=ERROR
// RUN: xweave-opt %s -p 'loop-unguard{loop="t.k" grow=true kernel="window"}' | filecheck %s --check-prefix=GROW
// RUN: xweave-opt %s -p 'loop-unguard{loop="t.k" grow=true kernel="unpadded"}' | filecheck %s --check-prefix=NO-GROW

// A column of 5 rows computed in tiles of 2 rows (the last tile ragged) with a 2-row
// local accumulator: row 1 of a tile is guarded by `2 * o + 1 < 5`, in the reduction
// and at the write-back. @padded reads its rows from a buffer padded to whole tiles;
// the others must keep their guards: @unpadded reads past the end of its rows,
// @peek reads row 1 of the cache unguarded, @global stores to memory, and
// @moving tests the reduction variable, which changes while the cache lives.
// @window reads row 1 through a window of 3 from a padded temporary of 7 elements: its
// last tile reads %pad[7], so only with grow=true the guard goes and %pad grows to 8.

func.func @padded(%a: memref<3x4x2xf32>, %b: memref<4xf32>, %out: memref<5xf32>) attributes {xweave.kernel} {
  loop.for "t.i.outer" %o = 0 to 3 {
    %t_local = loop.alloc : memref<2xf32, #loop.scope<local>>
    %zero = arith.constant 0.000000e+00 : f32
    loop.store %zero, %t_local[0] : memref<2xf32, #loop.scope<local>>
    loop.store %zero, %t_local[1] : memref<2xf32, #loop.scope<local>>
    loop.for "t.k" %k = 0 to 4 {
      %w = loop.load %b[%k] : memref<4xf32>
      %x0 = loop.load %a[%o, %k, 0] : memref<3x4x2xf32>
      %acc0 = loop.load %t_local[0] : memref<2xf32, #loop.scope<local>>
      %p0 = arith.mulf %x0, %w : f32
      %s0 = arith.addf %acc0, %p0 : f32
      loop.store %s0, %t_local[0] : memref<2xf32, #loop.scope<local>>
      %c2 = arith.constant 2 : index
      %c1 = arith.constant 1 : index
      %c5 = arith.constant 5 : index
      %m = arith.muli %o, %c2 : index
      %r = arith.addi %m, %c1 : index
      %ok = arith.cmpi slt, %r, %c5 : index
      scf.if %ok {
        %x1 = loop.load %a[%o, %k, 1] : memref<3x4x2xf32>
        %acc1 = loop.load %t_local[1] : memref<2xf32, #loop.scope<local>>
        %p1 = arith.mulf %x1, %w : f32
        %s1 = arith.addf %acc1, %p1 : f32
        loop.store %s1, %t_local[1] : memref<2xf32, #loop.scope<local>>
      }
    }
    %v0 = loop.load %t_local[0] : memref<2xf32, #loop.scope<local>>
    loop.store %v0, %out[%o * 2] : memref<5xf32>
    %d2 = arith.constant 2 : index
    %d1 = arith.constant 1 : index
    %d5 = arith.constant 5 : index
    %n = arith.muli %o, %d2 : index
    %q = arith.addi %n, %d1 : index
    %in = arith.cmpi slt, %q, %d5 : index
    scf.if %in {
      %v1 = loop.load %t_local[1] : memref<2xf32, #loop.scope<local>>
      loop.store %v1, %out[%o * 2 + 1] : memref<5xf32>
    }
  }
  func.return
}

func.func @unpadded(%a: memref<5x4xf32>, %b: memref<4xf32>, %out: memref<5xf32>) attributes {xweave.kernel} {
  loop.for "t.i.outer" %o = 0 to 3 {
    %t_local = loop.alloc : memref<2xf32, #loop.scope<local>>
    loop.for "t.k" %k = 0 to 4 {
      %w = loop.load %b[%k] : memref<4xf32>
      %c2 = arith.constant 2 : index
      %c1 = arith.constant 1 : index
      %c5 = arith.constant 5 : index
      %m = arith.muli %o, %c2 : index
      %r = arith.addi %m, %c1 : index
      %ok = arith.cmpi slt, %r, %c5 : index
      scf.if %ok {
        %x1 = loop.load %a[%o * 2 + 1, %k] : memref<5x4xf32>
        %acc1 = loop.load %t_local[1] : memref<2xf32, #loop.scope<local>>
        %p1 = arith.mulf %x1, %w : f32
        %s1 = arith.addf %acc1, %p1 : f32
        loop.store %s1, %t_local[1] : memref<2xf32, #loop.scope<local>>
      }
    }
    %d2 = arith.constant 2 : index
    %d1 = arith.constant 1 : index
    %d5 = arith.constant 5 : index
    %n = arith.muli %o, %d2 : index
    %q = arith.addi %n, %d1 : index
    %in = arith.cmpi slt, %q, %d5 : index
    scf.if %in {
      %v1 = loop.load %t_local[1] : memref<2xf32, #loop.scope<local>>
      loop.store %v1, %out[%o * 2 + 1] : memref<5xf32>
    }
  }
  func.return
}

func.func @peek(%a: memref<3x4x2xf32>, %b: memref<4xf32>, %out: memref<5xf32>) attributes {xweave.kernel} {
  loop.for "t.i.outer" %o = 0 to 3 {
    %t_local = loop.alloc : memref<2xf32, #loop.scope<local>>
    loop.for "t.k" %k = 0 to 4 {
      %w = loop.load %b[%k] : memref<4xf32>
      %c2 = arith.constant 2 : index
      %c1 = arith.constant 1 : index
      %c5 = arith.constant 5 : index
      %m = arith.muli %o, %c2 : index
      %r = arith.addi %m, %c1 : index
      %ok = arith.cmpi slt, %r, %c5 : index
      scf.if %ok {
        %x1 = loop.load %a[%o, %k, 1] : memref<3x4x2xf32>
        %acc1 = loop.load %t_local[1] : memref<2xf32, #loop.scope<local>>
        %p1 = arith.mulf %x1, %w : f32
        %s1 = arith.addf %acc1, %p1 : f32
        loop.store %s1, %t_local[1] : memref<2xf32, #loop.scope<local>>
      }
    }
    %v1 = loop.load %t_local[1] : memref<2xf32, #loop.scope<local>>
    loop.store %v1, %out[%o] : memref<5xf32>
  }
  func.return
}

func.func @global(%a: memref<3x4x2xf32>, %b: memref<4xf32>, %out: memref<5xf32>) attributes {xweave.kernel} {
  loop.for "t.i.outer" %o = 0 to 3 {
    loop.for "t.k" %k = 0 to 4 {
      %c2 = arith.constant 2 : index
      %c1 = arith.constant 1 : index
      %c5 = arith.constant 5 : index
      %m = arith.muli %o, %c2 : index
      %r = arith.addi %m, %c1 : index
      %ok = arith.cmpi slt, %r, %c5 : index
      scf.if %ok {
        %x1 = loop.load %a[%o, %k, 1] : memref<3x4x2xf32>
        loop.store %x1, %out[%o * 2 + 1] : memref<5xf32>
      }
    }
  }
  func.return
}

func.func @moving(%a: memref<3x4x2xf32>, %out: memref<5xf32>) attributes {xweave.kernel} {
  loop.for "t.i.outer" %o = 0 to 3 {
    %t_local = loop.alloc : memref<2xf32, #loop.scope<local>>
    loop.for "t.k" %k = 0 to 4 {
      %c3 = arith.constant 3 : index
      %early = arith.cmpi slt, %k, %c3 : index
      scf.if %early {
        %x1 = loop.load %a[%o, %k, 1] : memref<3x4x2xf32>
        loop.store %x1, %t_local[1] : memref<2xf32, #loop.scope<local>>
      }
    }
    %d3 = arith.constant 3 : index
    %late = arith.cmpi slt, %o, %d3 : index
    scf.if %late {
      %v1 = loop.load %t_local[1] : memref<2xf32, #loop.scope<local>>
      loop.store %v1, %out[%o] : memref<5xf32>
    }
  }
  func.return
}

func.func @window(%x: memref<5xf32>, %b: memref<3xf32>, %out: memref<5xf32>) attributes {xweave.kernel} {
  %pad = loop.alloc : memref<7xf32>
  loop.for "pad.i" %i = 0 to 7 {
    %c1 = arith.constant 1 : index
    %c6 = arith.constant 6 : index
    %zero = arith.constant 0.000000e+00 : f32
    %lo = arith.cmpi sge, %i, %c1 : index
    %hi = arith.cmpi slt, %i, %c6 : index
    %in = arith.andi %lo, %hi : i1
    %v = scf.if %in -> (f32) {
      %a = loop.load %x[%i - 1] : memref<5xf32>
      scf.yield %a : f32
    } else {
      scf.yield %zero : f32
    }
    loop.store %v, %pad[%i] : memref<7xf32>
  }
  loop.for "t.i.outer" %o = 0 to 3 {
    %t_local = loop.alloc : memref<2xf32, #loop.scope<local>>
    loop.for "t.k" %k = 0 to 3 {
      %w = loop.load %b[%k] : memref<3xf32>
      %c2 = arith.constant 2 : index
      %c1 = arith.constant 1 : index
      %c5 = arith.constant 5 : index
      %m = arith.muli %o, %c2 : index
      %r = arith.addi %m, %c1 : index
      %ok = arith.cmpi slt, %r, %c5 : index
      scf.if %ok {
        %x1 = loop.load %pad[%o * 2 + 1 + %k] : memref<7xf32>
        %acc1 = loop.load %t_local[1] : memref<2xf32, #loop.scope<local>>
        %p1 = arith.mulf %x1, %w : f32
        %s1 = arith.addf %acc1, %p1 : f32
        loop.store %s1, %t_local[1] : memref<2xf32, #loop.scope<local>>
      }
    }
    %d2 = arith.constant 2 : index
    %d1 = arith.constant 1 : index
    %d5 = arith.constant 5 : index
    %n = arith.muli %o, %d2 : index
    %q = arith.addi %n, %d1 : index
    %in = arith.cmpi slt, %q, %d5 : index
    scf.if %in {
      %v1 = loop.load %t_local[1] : memref<2xf32, #loop.scope<local>>
      loop.store %v1, %out[%o * 2 + 1] : memref<5xf32>
    }
  }
  func.return
}

// The reduction of @padded runs row 1 unconditionally; its write-back keeps the guard.
// CHECK-LABEL: func.func @padded(
// CHECK:         loop.for "t.k" %k = 0 to 4 {
// CHECK:           %ok = arith.cmpi slt, %r, %c5 : index
// CHECK-NEXT:      %x1 = loop.load %a[%o, %k, 1] : memref<3x4x2xf32>
// CHECK-NEXT:      %acc1 = loop.load %t_local[1] : memref<2xf32, #loop.scope<local>>
// CHECK-NEXT:      %p1 = arith.mulf %x1, %w : f32
// CHECK-NEXT:      %s1 = arith.addf %acc1, %p1 : f32
// CHECK-NEXT:      loop.store %s1, %t_local[1] : memref<2xf32, #loop.scope<local>>
// CHECK-NEXT:    }
// CHECK:         scf.if %in {
// CHECK-NEXT:      %v1 = loop.load %t_local[1] : memref<2xf32, #loop.scope<local>>
// CHECK-LABEL: func.func @unpadded(
// CHECK:           scf.if %ok {
// CHECK-NEXT:        %x1 = loop.load %a[%o * 2 + 1, %k] : memref<5x4xf32>
// CHECK-LABEL: func.func @peek(
// CHECK:           scf.if %ok {
// CHECK-NEXT:        %x1 = loop.load %a[%o, %k, 1] : memref<3x4x2xf32>
// CHECK-LABEL: func.func @global(
// CHECK:           scf.if %ok {
// CHECK-NEXT:        %x1 = loop.load %a[%o, %k, 1] : memref<3x4x2xf32>
// CHECK-LABEL: func.func @moving(
// CHECK:           scf.if %early {

// With kernel=..., other kernels are not looked at.
// ONE-LABEL: func.func @padded(
// ONE:         loop.for "t.k" %k = 0 to 4 {
// ONE:           scf.if %ok {

// ERROR: loop-unguard: no loop named 't.nope' in any kernel

// With grow=true, @window's %pad grows to 8 (its stage computes the zero at 7) and the
// reduction of row 1 runs unconditionally; the write-back keeps its guard.
// GROW-LABEL: func.func @window(
// GROW-NEXT:    %pad = loop.alloc : memref<8xf32>
// GROW-NEXT:    loop.for "pad.i" %i = 0 to 8 {
// GROW:         loop.for "t.k" %k = 0 to 3 {
// GROW:           %ok = arith.cmpi slt, %r, %c5 : index
// GROW-NEXT:      %x1 = loop.load %pad[%o * 2 + 1 + %k] : memref<8xf32>
// GROW:         scf.if %in_1 {
// GROW-NEXT:      %v1 = loop.load %t_local[1] : memref<2xf32, #loop.scope<local>>

// Growing cannot help a read past the end of a kernel argument: the guard stays.
// NO-GROW-LABEL: func.func @unpadded(
// NO-GROW:           scf.if %ok {
// NO-GROW-NEXT:        %x1 = loop.load %a[%o * 2 + 1, %k] : memref<5x4xf32>
