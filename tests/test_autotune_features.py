"""Itervar features of hand-written loop IR, checked against values worked out by hand."""

import math

import numpy as np
import pytest

from xweave.autotune.features import (
    NUM_FEATURES,
    analyze,
    feature_names,
    itervar_features,
    slog,
)
from xweave.context import parse_module

from helpers import MATMUL_LOOPS as MATMUL

NAMES = {n: i for i, n in enumerate(feature_names())}


VECTOR = """
func.func @k(%A: memref<16x32xf32>, %B: memref<32xf32>, %C: memref<16x32xf32>) attributes {xweave.kernel} {
  %acc = loop.alloc : memref<8xf32, #loop.scope<local>>
  loop.for "s.i" %i = 0 to 16 parallel {
    loop.for "s.j" %j = 0 to 32 step 8 vectorized {
      %a = loop.load %A[%i, %j] : memref<16x32xf32> -> vector<8xf32>
      %b = loop.load %B[%j] : memref<32xf32> -> vector<8xf32>
      %c = vector.fma %a, %b, %b : vector<8xf32>
      %d = arith.mulf %c, %a : vector<8xf32>
      loop.store %d, %C[%i, %j] : memref<16x32xf32>, vector<8xf32>
      loop.store %d, %acc[0] : memref<8xf32, #loop.scope<local>>, vector<8xf32>
    }
  }
  func.return
}
"""

TILED = """
func.func @t(%X: memref<4x4xf32>, %Y: memref<64x64xf32>, %Z: memref<64xf32>) attributes {xweave.kernel} {
  loop.for "t.r" %r = 0 to 16 {
    %x = loop.load %X[%r floordiv 4, %r mod 4] : memref<4x4xf32>
    loop.store %x, %Z[%r] : memref<64xf32>
  }
  loop.for "t.io" %io = 0 to 4 {
    loop.for "t.j" %j = 0 to 64 {
      loop.for "t.ii" %ii = 0 to 16 {
        %y = loop.load %Y[%io * 16 + %ii, %j] : memref<64x64xf32>
        %e = math.exp %y : f32
        %q = arith.divf %e, %y : f32
        loop.store %q, %Y[%io * 16 + %ii, %j] : memref<64x64xf32>
      }
    }
  }
  func.return
}
"""


def feature(vec, name):
    return float(vec[NAMES[name]])


def test_matmul_loops_ops_and_accesses():
    info = analyze(parse_module(MATMUL))
    loops = {l.name: l for l in info.loops}
    assert [l.name for l in info.loops] == ["mm_init.i", "mm_init.j", "mm.i", "mm.j", "mm.k"]
    k = loops["mm.k"]
    assert (k.extent, k.depth, k.kind, k.topdown, k.bottomup) == (7, 2, "unrolled", 315, 7)
    assert (loops["mm.i"].topdown, loops["mm.i"].bottomup) == (5, 315)
    assert (loops["mm.j"].topdown, loops["mm.j"].bottomup) == (45, 63)
    assert k.ops == {"add": 1, "mul": 1, "div": 0, "fma": 0, "other": 0}
    assert loops["mm.j"].ops["add"] == 0  # counted on the innermost loop only
    assert info.nest_flops == [0, 630]
    assert info.flops == 630

    a = next(x for x in info.accesses if x.buffer_name == "A")
    assert a.buffer == 0 and not a.is_store and a.elem_bytes == 4 and a.lanes == 1
    assert a.strides == [7, 0, 1]                 # A[i, k] in a 5x7 row-major buffer
    assert a.depends == [True, False, True]
    assert a.footprint == [35, 7, 7]              # i: whole A; j: one row; k: one row
    assert a.executions == [315, 63, 7]
    assert a.reuse_at(0) == 9 and a.reuse_at(1) == 9 and a.reuse_at(2) == 1
    b = next(x for x in info.accesses if x.buffer_name == "B")
    assert b.strides == [0, 1, 9] and b.footprint == [63, 63, 7]
    stores = [x for x in info.accesses if x.buffer_name == "C" and x.is_store]
    assert [s.ordinal for s in stores] == [0, 2]  # init store, then the update's store
    assert stores[1].strides == [9, 1, 0] and stores[1].footprint == [45, 9, 1]
    assert stores[1].reuse_at(2) == 7             # k does not move C: reused 7 times
    # total bytes: A 35*4 + B 63*4 + C 45*4
    assert info.bytes == (35 + 63 + 45) * 4


def test_matmul_vector_layout():
    vec = itervar_features(parse_module(MATMUL))
    assert vec.shape == (NUM_FEATURES,) and vec.dtype == np.float32
    assert len(feature_names()) == NUM_FEATURES
    # the update nest (630 flops) comes before the init nest (0 flops)
    assert feature(vec, "loop0.extent") == pytest.approx(slog(5))
    assert feature(vec, "loop2.kind_unrolled") == 1 and feature(vec, "loop2.kind_serial") == 0
    assert feature(vec, "loop2.depth") == 2
    assert feature(vec, "loop2.topdown") == pytest.approx(slog(315))
    assert feature(vec, "loop2.mul_ct") == pytest.approx(slog(1))
    assert feature(vec, "loop3.extent") == pytest.approx(slog(5))  # mm_init.i
    assert feature(vec, "loop5.present") == 0 and feature(vec, "loop5.extent") == 0
    # access slots of mm.k, by buffer then ordinal: A, B, C load (ordinal 1), C store (2)
    assert feature(vec, "loop2.acc0_stride") == pytest.approx(slog(1))    # A along k
    assert feature(vec, "loop2.acc1_stride") == pytest.approx(slog(9))    # B along k
    assert feature(vec, "loop2.acc2_stride") == 0                          # C along k
    assert feature(vec, "loop2.acc2_reuse") == pytest.approx(slog(7))
    assert feature(vec, "g.total_flops") == pytest.approx(slog(630))
    assert feature(vec, "g.arith_intensity") == pytest.approx(slog(630 / 572))
    assert feature(vec, "g.num_loops") == 5 and feature(vec, "g.num_nests") == 2
    assert feature(vec, "g.num_unrolled_loops") == 1
    # access section: update nest first: A, B, C (load), C (store)
    assert feature(vec, "access0.inner_stride") == pytest.approx(slog(1))
    assert feature(vec, "access0.bytes") == pytest.approx(slog(140))
    assert feature(vec, "access3.is_store") == 1
    assert feature(vec, "access3.depth") == 3


def test_vector_ops_are_counted_by_lanes():
    info = analyze(parse_module(VECTOR))
    i, j = info.loops
    assert (i.kind, j.kind, j.extent, j.step, j.topdown) == ("parallel", "vectorized", 4, 8, 64)
    assert j.ops == {"add": 0, "mul": 8, "div": 0, "fma": 8, "other": 0}
    assert info.flops == (8 + 2 * 8) * 64
    a, b, c, acc = info.accesses
    assert a.lanes == 8 and a.strides == [32, 8]
    assert a.footprint == [512, 32] and a.reuse_at(0) == 1
    assert b.strides == [0, 8] and b.footprint == [32, 32] and b.reuse_at(0) == 16
    assert acc.local and acc.buffer == 3 and acc.footprint == [8, 8]
    assert acc.reuse_at(0) == 64
    vec = itervar_features(parse_module(VECTOR))
    assert feature(vec, "loop1.kind_vectorized") == 1
    assert feature(vec, "loop0.kind_parallel") == 1
    assert feature(vec, "loop1.fma_ct") == pytest.approx(slog(8))
    assert feature(vec, "g.max_vector_lanes") == pytest.approx(slog(8))
    assert feature(vec, "access3.local_scope") == 1
    assert feature(vec, "access0.lanes") == pytest.approx(slog(8))


def test_floordiv_split_indices_and_nest_order():
    info = analyze(parse_module(TILED))
    x = info.accesses[0]
    assert x.depends == [True] and x.strides == [1]   # r // 4, r % 4: linear in r
    assert x.footprint == [16]                         # the whole 4x4 buffer
    y = next(a for a in info.accesses if a.buffer_name == "Y" and not a.is_store)
    assert y.strides == [16 * 64, 1, 64]               # io, j, ii
    assert y.footprint == [64 * 64, 16 * 64, 16]
    loops = {l.name: l for l in info.loops}
    assert loops["t.ii"].ops == {"add": 0, "mul": 0, "div": 1, "fma": 0, "other": 1}
    vec = itervar_features(parse_module(TILED))
    # the 4-deep compute nest (flops) is ordered before the copy nest (no flops)
    assert feature(vec, "loop0.extent") == pytest.approx(slog(4))
    assert feature(vec, "loop3.extent") == pytest.approx(slog(16))
    assert feature(vec, "loop2.div_ct") == pytest.approx(slog(1))
    assert feature(vec, "loop2.other_ct") == pytest.approx(slog(1))


def test_slog_and_determinism():
    assert slog(0) == 0 and slog(1) == 1 and slog(-3) == -2
    assert math.isclose(slog(7), 3)
    a = itervar_features(parse_module(TILED))
    b = itervar_features(parse_module(TILED))
    assert np.array_equal(a, b)
