// RUN: xweave-opt %s --split-input-file --verify-diagnostics
// RUN: not xweave-opt %s --split-input-file --verify-diagnostics --print-op-generic -p 'loop-split{loop="missing" factor=2}' 2>&1 | filecheck %s --check-prefix=MISMATCH

// A file with `expected-error` annotations is checked as mlir-opt checks it: every
// error is expected at its file line and every expectation is met (lit fails the first
// RUN line otherwise). The second RUN line makes the pass fail in the first chunk,
// where no error is expected: the run fails and says where.

func.func @fine(%a: memref<4xf32>) {
  loop.for "l" %i = 0 to 4 {
  }
  func.return
}

// -----

// expected-error @+1 {{step must be positive, got 0}}
"loop.for"() <{lb = 0 : i64, ub = 64 : i64, step = 0 : i64}> ({
^bb0(%i: index):
  "loop.yield"() : () -> ()
}) : () -> ()

// -----

// expected-error @below {{lower bound 8 exceeds upper bound 4}}
"loop.for"() <{lb = 8 : i64, ub = 4 : i64}> ({
^bb0(%i: index):
  "loop.yield"() : () -> ()
}) : () -> ()

// MISMATCH: verify-diagnostics-expected.mlir: error: unexpected error: {{.*}}missing
