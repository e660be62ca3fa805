// RUN: not xweave-opt %s -p 'loop-fuse{outer="u.i" inner="u.j"}' 2>&1 | filecheck %s --check-prefix=IMPERFECT
// RUN: not xweave-opt %s -p 'loop-fuse{outer="s.i" inner="s.k"}' 2>&1 | filecheck %s --check-prefix=BETWEEN
// RUN: not xweave-opt %s -p 'loop-fuse{outer="g.i" inner="g.j"}' 2>&1 | filecheck %s --check-prefix=GUARD
// RUN: not xweave-opt %s -p 'loop-fuse{outer="s.i" inner="u.j"}' 2>&1 | filecheck %s --check-prefix=OUTSIDE
// RUN: not xweave-opt %s -p 'loop-fuse{outer="s.x" inner="s.j"}' 2>&1 | filecheck %s --check-prefix=MISSING

func.func @copy(%a: memref<2x3x4xf32>, %out: memref<2x3x4xf32>) attributes {xweave.kernel} {
  loop.for "s.i" %i = 0 to 2 {
    loop.for "s.j" %j = 0 to 3 {
      loop.for "s.k" %k = 0 to 4 {
        %v = loop.load %a[%i, %j, %k] : memref<2x3x4xf32>
        loop.store %v, %out[%i, %j, %k] : memref<2x3x4xf32>
      }
    }
  }
  loop.for "u.i" %i = 0 to 2 {
    %z = arith.constant 0.0 : f32
    loop.store %z, %out[%i, 0, 0] : memref<2x3x4xf32>
    loop.for "u.j" %j = 0 to 3 {
      loop.store %z, %out[%i, %j, 1] : memref<2x3x4xf32>
    }
  }
  loop.for "g.i" %i = 0 to 2 {
    %c1 = arith.constant 1 : index
    %c = arith.cmpi slt, %i, %c1 : index
    scf.if %c {
      loop.for "g.j" %j = 0 to 3 {
        %z = arith.constant 0.0 : f32
        loop.store %z, %out[%i, %j, 2] : memref<2x3x4xf32>
      }
    }
  }
  func.return
}

// IMPERFECT: loop-fuse: loop 'u.j' must be the only op in the body of loop 'u.i', but 'arith.constant' is there too
// BETWEEN: loop-fuse: loop 's.k' must be the only op in the body of loop 's.i', but loop 's.j' is there too
// GUARD: loop-fuse: loop 'g.j' must be the only op in the body of loop 'g.i', but a guard (scf.if) is there too
// OUTSIDE: loop-fuse: no loop named 'u.j' inside loop 's.i'
// MISSING: loop-fuse: no loop named 's.x' in any kernel
