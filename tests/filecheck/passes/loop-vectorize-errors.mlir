// RUN: not xweave-opt %s -p 'loop-vectorize{loop="e.nope"}' 2>&1 | filecheck %s --check-prefix=MISSING
// RUN: not xweave-opt %s -p 'loop-vectorize{loop="stride.j"}' 2>&1 | filecheck %s --check-prefix=STRIDE
// RUN: not xweave-opt %s -p 'loop-vectorize{loop="row.j"}' 2>&1 | filecheck %s --check-prefix=ROW
// RUN: not xweave-opt %s -p 'loop-vectorize{loop="pad.j"}' 2>&1 | filecheck %s --check-prefix=IF
// RUN: not xweave-opt %s -p 'loop-vectorize{loop="idx.j"}' 2>&1 | filecheck %s --check-prefix=INDEX
// RUN: not xweave-opt %s -p 'loop-vectorize{loop="red.j"}' 2>&1 | filecheck %s --check-prefix=REDUCE
// RUN: not xweave-opt %s -p 'loop-vectorize{loop="cmp.j"}' 2>&1 | filecheck %s --check-prefix=CMP
// RUN: not xweave-opt %s -p 'loop-vectorize{loop="dep.j"}' 2>&1 | filecheck %s --check-prefix=DEP
// RUN: not xweave-opt %s -p 'loop-vectorize{loop="rmw.j"}' 2>&1 | filecheck %s --check-prefix=RMW
// RUN: not xweave-opt %s -p 'loop-vectorize{loop="call.j"}' 2>&1 | filecheck %s --check-prefix=CALL
// RUN: not xweave-opt %s -p 'loop-vectorize{loop="six.j"}' 2>&1 | filecheck %s --check-prefix=WIDTH
// RUN: not xweave-opt %s -p 'loop-vectorize{loop="step.j"}' 2>&1 | filecheck %s --check-prefix=STEP
// RUN: not xweave-opt %s -p 'loop-vectorize{loop="par.j"}' 2>&1 | filecheck %s --check-prefix=KIND

func.func @errors(%A: memref<16x16xf32>, %x: memref<20xf32>, %y: memref<16xf32>, %s: memref<1xf32>, %i32: memref<16xi32>) attributes {xweave.kernel} {
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  // A gather: stride 2 along the loop.
  loop.for "stride.j" %j = 0 to 8 {
    %v = loop.load %x[%j * 2] : memref<20xf32>
    loop.store %v, %y[%j] : memref<16xf32>
  }
  // The variable outside the last dimension (a column: stride 16).
  loop.for "row.j" %j = 0 to 8 {
    %v = loop.load %A[%j, 0] : memref<16x16xf32>
    loop.store %v, %y[%j] : memref<16xf32>
  }
  // A padding condition on the variable.
  loop.for "pad.j" %j = 0 to 8 {
    %in = arith.cmpi sge, %j, %c1 : index
    %v = scf.if %in -> (f32) {
      %e = loop.load %x[%j] : memref<20xf32>
      scf.yield %e : f32
    } else {
      scf.yield %zero : f32
    }
    loop.store %v, %y[%j] : memref<16xf32>
  }
  // Integer index math on the variable (not folded into the access map).
  loop.for "idx.j" %j = 0 to 8 {
    %t = arith.addi %j, %c1 : index
    %v = loop.load %x[%t] : memref<20xf32>
    loop.store %v, %y[%j] : memref<16xf32>
  }
  // A store of lane values to one address that is not the supported reduction form.
  loop.for "red.j" %j = 0 to 8 {
    %v = loop.load %x[%j] : memref<20xf32>
    loop.store %v, %s[0] : memref<1xf32>
  }
  // A comparison of lane values (no i1 vectors).
  loop.for "cmp.j" %j = 0 to 8 {
    %v = loop.load %x[%j] : memref<20xf32>
    %p = arith.cmpf ogt, %v, %zero : f32
    %r = arith.select %p, %v, %zero : f32
    loop.store %r, %y[%j] : memref<16xf32>
  }
  // Lanes communicating through memory: x[j + 1] read, x[j] written.
  loop.for "dep.j" %j = 0 to 8 {
    %v = loop.load %x[%j + 1] : memref<20xf32>
    loop.store %v, %x[%j] : memref<20xf32>
  }
  // A read-modify-write at an address not depending on the variable.
  loop.for "rmw.j" %j = 0 to 8 {
    %v = loop.load %s[0] : memref<1xf32>
    %w = arith.addf %v, %one : f32
    loop.store %w, %s[0] : memref<1xf32>
  }
  // A call: unknown memory effects.
  loop.for "call.j" %j = 0 to 8 {
    %v = loop.load %x[%j] : memref<20xf32>
    %w = func.call @f(%v) : (f32) -> f32
    loop.store %w, %y[%j] : memref<16xf32>
  }
  // Extent 1: no vector.
  loop.for "six.j" %j = 0 to 1 {
    %v = loop.load %x[%j] : memref<20xf32>
    loop.store %v, %y[%j] : memref<16xf32>
  }
  loop.for "step.j" %j = 0 to 16 step 2 {
    %v = loop.load %x[%j] : memref<20xf32>
    loop.store %v, %y[%j] : memref<16xf32>
  }
  loop.for "par.j" %j = 0 to 8 parallel {
    %v = loop.load %x[%j] : memref<20xf32>
    loop.store %v, %y[%j] : memref<16xf32>
  }
  func.return
}
func.func private @f(f32) -> f32

// MISSING: loop-vectorize: no loop named 'e.nope' in any kernel
// STRIDE: loop-vectorize: cannot vectorize loop 'stride.j': 'loop.load' accesses its buffer with stride 2 along the loop (a gather/scatter: only stride 1 becomes a vector access)
// ROW: loop-vectorize: cannot vectorize loop 'row.j': 'loop.load' uses the loop variable outside the last dimension of memref<16x16xf32> (a gather/scatter, not a contiguous vector access)
// IF: loop-vectorize: cannot vectorize loop 'pad.j': 'scf.if' has a condition that depends on the loop variable
// INDEX: loop-vectorize: cannot vectorize loop 'idx.j': 'arith.addi' uses the loop variable (integer index math on it is not vectorized: fold it into the access maps)
// REDUCE: loop-vectorize: cannot vectorize loop 'red.j': 'loop.store' stores a lane-dependent value to an address that does not depend on the loop variable (a reduction over the lanes, supported only as `load X[a]; combine; store X[a]`)
// CMP: loop-vectorize: cannot vectorize loop 'cmp.j': 'arith.select' has a condition that depends on the loop variable
// DEP: loop-vectorize: cannot vectorize loop 'dep.j': lanes may depend on each other through %x: the body writes it ('loop.store') and accesses it at different addresses
// RMW: loop-vectorize: cannot vectorize loop 'rmw.j': 'loop.store' writes %s at an address that does not depend on the loop variable, from a value read there: a read-modify-write that would run once instead of 8 times
// CALL: loop-vectorize: cannot vectorize loop 'call.j': 'func.call' has memory effects (calls are not vectorized)
// WIDTH: loop-vectorize: cannot vectorize loop 'six.j': its extent 1 holds no vector (at least 2 lanes)
// STEP: loop-vectorize: cannot vectorize loop 'step.j': its step is 2 (only step 1 makes contiguous lanes)
// KIND: loop-vectorize: cannot vectorize loop 'par.j': it is already parallel
