// RUN: xweave-opt %s -p 'loop-simplify' | filecheck %s
// RUN: xweave-opt %s -p 'loop-simplify{kernel=maps}' | filecheck %s --check-prefix=KERNEL
// RUN: not xweave-opt %s -p 'loop-simplify{kernel=nope}' 2>&1 | filecheck %s --check-prefix=NOKERNEL

// loop-simplify: index arithmetic folds into the access maps, which are simplified with
// the loop ranges ((4i + j) floordiv 4 = i and (4i + j) mod 4 = j since 0 <= j < 4);
// loops of extent 1 disappear (n = 0).
func.func @maps(%a: memref<12xf32>, %b: memref<3x4xf32>, %out: memref<3x4xf32>) attributes {xweave.kernel} {
  loop.for "m.n" %n = 0 to 1 {
    loop.for "m.i" %i = 0 to 3 {
      loop.for "m.j" %j = 0 to 4 {
        %c4 = arith.constant 4 : index
        %t = arith.muli %i, %c4 : index
        %f = arith.addi %t, %j : index
        %q = arith.floordivsi %f, %c4 : index
        %r = arith.remsi %f, %c4 : index
        %v = loop.load %a[%f + %n] : memref<12xf32>
        %w = loop.load %b[%q, %r] : memref<3x4xf32>
        %s = arith.addf %v, %w : f32
        loop.store %s, %out[%n * 5 + %i, %j mod 4] : memref<3x4xf32>
      }
    }
  }
  func.return
}

// CHECK-LABEL: func.func @maps
// CHECK-NEXT:    loop.for "m.i" %i = 0 to 3 {
// CHECK-NEXT:      loop.for "m.j" %j = 0 to 4 {
// CHECK-NEXT:        %v = loop.load %a[%i * 4 + %j] : memref<12xf32>
// CHECK-NEXT:        %w = loop.load %b[%i, %j] : memref<3x4xf32>
// CHECK-NEXT:        %s = arith.addf %v, %w : f32
// CHECK-NEXT:        loop.store %s, %out[%i, %j] : memref<3x4xf32>
// CHECK-NEXT:      }
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return

// Guards whose condition is provably true or false over the loop ranges go, with the
// branch not taken: 0 <= y + 1 < 6 always holds, x >= 4 never does; in `hi and edge`
// only `edge` (x < 1) is left to test. Dead code goes: the unused buffer, the buffer
// that is only written (%scratch), dead arithmetic, empty loops and loops without
// iterations.
func.func @guards(%a: memref<6x6xf32>, %out: memref<4x4xf32>) attributes {xweave.kernel} {
  %unused = loop.alloc : memref<8xf32, #loop.scope<local>>
  %scratch = loop.alloc : memref<4xf32, #loop.scope<local>>
  loop.for "g.y" %y = 0 to 4 {
    loop.for "g.x" %x = 0 to 4 {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c6 = arith.constant 6 : index
      %c4 = arith.constant 4 : index
      %zero = arith.constant 0.0 : f32
      %yy = arith.addi %y, %c1 : index
      %lo = arith.cmpi sge, %yy, %c0 : index
      %hi = arith.cmpi slt, %yy, %c6 : index
      %in = arith.andi %lo, %hi : i1
      %v = scf.if %in -> (f32) {
        %l = loop.load %a[%y + 1, %x] : memref<6x6xf32>
        scf.yield %l : f32
      } else {
        scf.yield %zero : f32
      }
      %never = arith.cmpi sge, %x, %c4 : index
      %w = arith.select %never, %zero, %v : f32
      %edge = arith.cmpi slt, %x, %c1 : index
      %both = arith.andi %hi, %edge : i1
      %u = scf.if %both -> (f32) {
        scf.yield %zero : f32
      } else {
        scf.yield %w : f32
      }
      loop.store %u, %out[%y, %x] : memref<4x4xf32>
      loop.store %u, %scratch[%x] : memref<4xf32, #loop.scope<local>>
      %dead = arith.mulf %u, %u : f32
    }
  }
  loop.for "g.empty" %e = 0 to 4 {
    %dead = arith.constant 1.0 : f32
  }
  loop.for "g.none" %e = 3 to 3 {
    %c = arith.constant 2.0 : f32
    loop.store %c, %out[%e, 0] : memref<4x4xf32>
  }
  func.return
}
func.func @other(%out: memref<1xf32>) attributes {xweave.kernel} {
  loop.for "o.i" %i = 0 to 1 {
    %z = arith.constant 0.0 : f32
    loop.store %z, %out[%i] : memref<1xf32>
  }
  func.return
}

// CHECK-LABEL: func.func @guards
// CHECK-NEXT:    loop.for "g.y" %y = 0 to 4 {
// CHECK-NEXT:      loop.for "g.x" %x = 0 to 4 {
// CHECK-NEXT:        %c1 = arith.constant 1 : index
// CHECK-NEXT:        %l = loop.load %a[%y + 1, %x] : memref<6x6xf32>
// CHECK-NEXT:        %edge = arith.cmpi slt, %x, %c1 : index
// CHECK-NEXT:        %u = scf.if %edge -> (f32) {
// CHECK-NEXT:          %zero = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:          scf.yield %zero : f32
// CHECK-NEXT:        } else {
// CHECK-NEXT:          scf.yield %l : f32
// CHECK-NEXT:        }
// CHECK-NEXT:        loop.store %u, %out[%y, %x] : memref<4x4xf32>
// CHECK-NEXT:      }
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return
// CHECK-LABEL: func.func @other
// CHECK-NEXT:    %z = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:    loop.store %z, %out[0] : memref<1xf32>
// CHECK-NEXT:    func.return

// kernel= restricts the pass to one kernel.
// KERNEL-LABEL: func.func @maps
// KERNEL-NEXT:    loop.for "m.i" %i = 0 to 3 {
// KERNEL-LABEL: func.func @guards
// KERNEL-NEXT:    %unused = loop.alloc
// KERNEL-LABEL: func.func @other
// KERNEL-NEXT:    loop.for "o.i" %i = 0 to 1 {

// NOKERNEL: loop-simplify: no kernel named 'nope'
