// RUN: xweave-opt %s --split-input-file --parsing-diagnostics | filecheck %s

// Errors of the custom syntax itself (reported by the parser, with a caret).

vta.load out2 sram 0 dram 0 y 1 x 1 stride 1
// CHECK: Expected `uop`, `wgt`, `inp`, `acc`, or `out`.

// -----

vta.load inp sram 0 dram 0 y 1 x 1 stride 1 pad(1, 1)
// CHECK: 'pad' expects 4 integers (y_pad_0, y_pad_1, x_pad_0, x_pad_1)

// -----

vta.finish deps(pop_prev, pop_prev)
// CHECK: dependency flag 'pop_prev' given twice

// -----

vta.finish deps(pop_later)
// CHECK: Expected one of 'pop_next', 'pop_prev', 'push_next', 'push_prev' (a dependency flag)

// -----

vta.gemm uop[0:1] iter(1) dst(0, 0) src(0, 0) wgt(0, 0)
// CHECK: 'iter' expects 2 integers, got 1

// -----

vta.alu sub uop[0:1] iter(1, 1) dst(0, 0) src(0, 0)
// CHECK: Expected `min`, `max`, `add`, `shr`, or `mul`.

// -----

vta.gemm uop[0, 4] iter(1, 1) dst(0, 0) src(0, 0) wgt(0, 0)
// CHECK: Expected ':'
