// RUN: not xweave-opt %s -p 'loop-parallel{loop="e.nope"}' 2>&1 | filecheck %s --check-prefix=MISSING
// RUN: not xweave-opt %s -p 'loop-parallel{loop="mm.k"}' 2>&1 | filecheck %s --check-prefix=REDUCTION
// RUN: not xweave-opt %s -p 'loop-parallel{loop="shift.i"}' 2>&1 | filecheck %s --check-prefix=SHIFT
// RUN: not xweave-opt %s -p 'loop-parallel{loop="win.i"}' 2>&1 | filecheck %s --check-prefix=WINDOW
// RUN: not xweave-opt %s -p 'loop-parallel{loop="loc.i"}' 2>&1 | filecheck %s --check-prefix=LOCAL
// RUN: not xweave-opt %s -p 'loop-parallel{loop="call.i"}' 2>&1 | filecheck %s --check-prefix=CALL
// RUN: not xweave-opt %s -p 'loop-parallel{loop="unr.i"}' 2>&1 | filecheck %s --check-prefix=KIND

func.func @errors(%A: memref<16x8xf32>, %B: memref<8x16xf32>, %C: memref<16x16xf32>, %x: memref<64xf32>) attributes {xweave.kernel} {
  %loc = loop.alloc : memref<8xf32, #loop.scope<local>>
  // The reduction axis of an update nest: every k writes C[i, j].
  loop.for "mm.i" %i = 0 to 16 {
    loop.for "mm.j" %j = 0 to 16 {
      loop.for "mm.k" %k = 0 to 8 {
        %a = loop.load %A[%i, %k] : memref<16x8xf32>
        %b = loop.load %B[%k, %j] : memref<8x16xf32>
        %c = loop.load %C[%i, %j] : memref<16x16xf32>
        %p = arith.mulf %a, %b : f32
        %s = arith.addf %c, %p : f32
        loop.store %s, %C[%i, %j] : memref<16x16xf32>
      }
    }
  }
  // Iteration i reads what iteration i - 1 wrote.
  loop.for "shift.i" %i = 1 to 64 {
    %a = loop.load %x[%i - 1] : memref<64xf32>
    loop.store %a, %x[%i] : memref<64xf32>
  }
  // Overlapping windows: i * 2 + k with 0 <= k < 3.
  loop.for "win.i" %i = 0 to 20 {
    loop.for "win.k" %k = 0 to 3 {
      %a = loop.load %x[%i * 2 + %k] : memref<64xf32>
      %b = arith.addf %a, %a : f32
      loop.store %b, %x[%i * 2 + %k] : memref<64xf32>
    }
  }
  // A thread-private buffer shared by all iterations.
  loop.for "loc.i" %i = 0 to 8 {
    %a = loop.load %x[%i] : memref<64xf32>
    loop.store %a, %loc[%i] : memref<8xf32, #loop.scope<local>>
  }
  loop.for "call.i" %i = 0 to 8 {
    func.call @g(%x) : (memref<64xf32>) -> ()
  }
  loop.for "unr.i" %i = 0 to 8 unrolled {
    %a = loop.load %x[%i] : memref<64xf32>
    loop.store %a, %x[%i] : memref<64xf32>
  }
  func.return
}
func.func private @g(memref<64xf32>)

// MISSING: loop-parallel: no loop named 'e.nope' in any kernel
// REDUCTION: loop-parallel: cannot parallelize loop 'mm.k': every iteration writes the same element of %C ('loop.store' does not depend on the loop variable: a reduction axis?)
// SHIFT: loop-parallel: cannot parallelize loop 'shift.i': iterations 1 and 2 may access a common element of %x ('loop.load', 'loop.store'), one of them writing it
// WINDOW: loop-parallel: cannot parallelize loop 'win.i': iterations 0 and 1 may access a common element of %x ('loop.load', 'loop.store'), one of them writing it
// LOCAL: loop-parallel: cannot parallelize loop 'loc.i': the local buffer %loc is allocated outside the loop and written inside it ('loop.store'): one copy shared by all threads
// CALL: loop-parallel: cannot parallelize loop 'call.i': 'func.call' has memory effects that cannot be analysed
// KIND: loop-parallel: cannot parallelize loop 'unr.i': it is already unrolled
