// RUN: xweave-opt %s --split-input-file --parsing-diagnostics | filecheck %s

// A bound read into an i64 property would wrap around: the parser refuses it.
loop.for %i = 9223372036854775808 to 3 {
}

// CHECK: bounds-parse.mlir:4:15
// CHECK: lower bound 9223372036854775808 does not fit in a 64-bit integer

// -----

loop.for %i = 0 to 18446744073709551616 {
}

// CHECK: upper bound 18446744073709551616 does not fit in a 64-bit integer

// -----

loop.for %i = 0 to 8 step -9223372036854775809 {
}

// CHECK: step -9223372036854775809 does not fit in a 64-bit integer
