// RUN: not xweave-opt %s -p 'loop-reorder{order="g.j","g.i"}' 2>&1 | filecheck %s --check-prefix=GUARD
// RUN: not xweave-opt %s -p 'loop-reorder{order="h.j","h.i"}' 2>&1 | filecheck %s --check-prefix=IMPERFECT
// RUN: not xweave-opt %s -p 'loop-reorder{order="scan.j","scan.i"}' 2>&1 | filecheck %s --check-prefix=DEPENDENCE
// RUN: not xweave-opt %s -p 'loop-reorder{order="last.j","last.i"}' 2>&1 | filecheck %s --check-prefix=LASTWRITE
// RUN: not xweave-opt %s -p 'loop-reorder{order="h.i","last.i"}' 2>&1 | filecheck %s --check-prefix=NONEST
// RUN: not xweave-opt %s -p 'loop-reorder{order="g.i","h.i"}' 2>&1 | filecheck %s --check-prefix=SIBLINGS
// RUN: not xweave-opt %s -p 'loop-reorder{order="h.i","nope.i"}' 2>&1 | filecheck %s --check-prefix=MISSING
// RUN: not xweave-opt %s -p 'loop-reorder{order="x.i","nope.i"}' 2>&1 | filecheck %s --check-prefix=NONE
// RUN: not xweave-opt %s -p 'loop-reorder{order="h.i","h.i"}' 2>&1 | filecheck %s --check-prefix=TWICE

// Reorders that could change the result are refused, naming what is in the way.

func.func @guarded(%a: memref<4x5xf32>, %out: memref<4x5xf32>) attributes {xweave.kernel} {
  loop.for "g.i" %i = 0 to 4 {
    %c2 = arith.constant 2 : index
    %c = arith.cmpi slt, %i, %c2 : index
    scf.if %c {
      loop.for "g.j" %j = 0 to 5 {
        %v = loop.load %a[%i, %j] : memref<4x5xf32>
        loop.store %v, %out[%i, %j] : memref<4x5xf32>
      }
    }
  }
  loop.for "h.i" %i = 0 to 4 {
    %z = arith.constant 0.0 : f32
    loop.store %z, %out[%i, 0] : memref<4x5xf32>
    loop.for "h.j" %j = 0 to 5 {
      %v = loop.load %a[%i, %j] : memref<4x5xf32>
      loop.store %v, %out[%i, %j] : memref<4x5xf32>
    }
  }
  func.return
}
func.func @scan(%a: memref<4x4xf32>, %out: memref<4x4xf32>) attributes {xweave.kernel} {
  loop.for "scan.i" %i = 1 to 4 {
    loop.for "scan.j" %j = 0 to 4 {
      %p = loop.load %out[%i - 1, %j] : memref<4x4xf32>
      %v = loop.load %a[%i, %j] : memref<4x4xf32>
      %s = arith.addf %p, %v : f32
      loop.store %s, %out[%i, %j] : memref<4x4xf32>
    }
  }
  loop.for "last.i" %i = 0 to 4 {
    loop.for "last.j" %j = 0 to 4 {
      %v = loop.load %a[%i, %j] : memref<4x4xf32>
      loop.store %v, %out[%i, 0] : memref<4x4xf32>
    }
  }
  func.return
}

// GUARD: loop-reorder: loops 'g.j', 'g.i' are not in one perfect nest: a guard (scf.if) in the body of loop 'g.i' stands between it and loop 'g.j'
// IMPERFECT: loop-reorder: loops 'h.j', 'h.i' are not in one perfect nest: 'arith.constant' in the body of loop 'h.i' stands between it and loop 'h.j'
// DEPENDENCE: loop-reorder: %out is written and accessed at different indices inside the nest of loop 'scan.i', so its iterations may depend on each other
// LASTWRITE: loop-reorder: several iterations of the nest of loop 'last.i' store to the same element of %out (the last one wins)
// NONEST: loop-reorder: kernel 'guarded' has no loop named 'last.i'
// SIBLINGS: loop-reorder: loop 'h.i' is not nested inside loop 'g.i', so they are not in one perfect nest
// MISSING: loop-reorder: kernel 'guarded' has no loop named 'nope.i' (it has h.i)
// NONE: loop-reorder: no loop named 'x.i' in any kernel
// TWICE: loop-reorder: loop 'h.i' appears twice in `order`
