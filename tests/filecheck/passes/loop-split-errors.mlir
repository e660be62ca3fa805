// RUN: not xweave-opt %s -p 'loop-split{loop="s.nope" factor=2}' 2>&1 | filecheck %s --check-prefix=MISSING
// RUN: not xweave-opt %s -p 'loop-split{loop="s.i" factor=2 kernel=nope}' 2>&1 | filecheck %s --check-prefix=KERNEL
// RUN: not xweave-opt %s -p 'loop-split{loop="s.i" factor=2 kernel=main}' 2>&1 | filecheck %s --check-prefix=NOTKERNEL
// RUN: not xweave-opt %s -p 'loop-split{loop="s.i"}' 2>&1 | filecheck %s --check-prefix=NEITHER
// RUN: not xweave-opt %s -p 'loop-split{loop="s.i" factor=2 nparts=2}' 2>&1 | filecheck %s --check-prefix=NEITHER
// RUN: not xweave-opt %s -p 'loop-split{loop="s.i" factor=0}' 2>&1 | filecheck %s --check-prefix=ZERO
// RUN: xweave-opt %s --verify-diagnostics -p 'loop-split{loop="s.x" factor=2}' | filecheck %s --check-prefix=DIAG

func.func @copy(%a: memref<10xf32>, %out: memref<10xf32>) attributes {xweave.kernel} {
  loop.for "s.i" %i = 0 to 10 {
    %v = loop.load %a[%i] : memref<10xf32>
    loop.store %v, %out[%i] : memref<10xf32>
  }
  func.return
}
func.func @main(%a: memref<10xf32>, %out: memref<10xf32>) {
  func.call @copy(%a, %out) : (memref<10xf32>, memref<10xf32>) -> ()
  func.return
}

// MISSING: loop-split: no loop named 's.nope' in any kernel
// KERNEL: loop-split: no kernel named 'nope'
// NOTKERNEL: loop-split: no kernel named 'main'
// NEITHER: loop-split: give exactly one of factor and nparts for loop 's.i'
// ZERO: loop-split: factor must be at least 1, got 0
// DIAG: loop-split: no loop named 's.x' in any kernel
