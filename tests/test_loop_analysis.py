"""The loop analysis: intervals, linear forms, the simplifier, conditions, and the
access-map rewriting methods of the loop dialect's memory ops."""

import itertools
import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from xdsl.dialects import func
from xdsl.ir.affine import AffineBinaryOpExpr, AffineBinaryOpKind, AffineExpr, AffineMap

from xweave.context import parse_module
from xweave.dialects import loop
from xweave.passes.loop_analysis import (
    UNBOUNDED,
    Linear,
    bounds,
    compare,
    simplify,
    simplify_access,
    simplify_expr,
    single_value,
)

d0, d1, d2 = (AffineExpr.dimension(i) for i in range(3))
C = AffineExpr.constant


def affine_exprs(num_dims: int):
    leaf = st.one_of(st.integers(0, num_dims - 1).map(AffineExpr.dimension),
                     st.integers(-5, 9).map(AffineExpr.constant))

    def extend(child):
        return st.one_of(
            st.tuples(child, child).map(lambda t: t[0] + t[1]),
            st.tuples(child, st.integers(-3, 5)).map(lambda t: t[0] * t[1]),
            st.tuples(child, st.integers(1, 6)).map(lambda t: t[0] // t[1]),
            st.tuples(child, st.integers(1, 6)).map(lambda t: t[0] % t[1]),
            st.tuples(child, st.integers(1, 6)).map(lambda t: t[0].ceil_div(t[1])),
        )

    return st.recursive(leaf, extend, max_leaves=8)


RANGES = st.lists(st.tuples(st.integers(-4, 4), st.integers(0, 5)), min_size=2, max_size=2)


# --- intervals ------------------------------------------------------------------------


@settings(max_examples=150, deadline=None)
@given(affine_exprs(2), RANGES)
def test_bounds_hold_every_value_over_the_ranges(expr, ranges):
    ranges = [(lo, lo + width) for lo, width in ranges]
    lo, hi = bounds(expr, ranges)
    linear_lo, linear_hi = Linear.of(expr).bounds(ranges)
    for point in itertools.product(*[range(a, b + 1) for a, b in ranges]):
        value = expr.eval(point, [])
        assert lo <= value <= hi
        assert linear_lo <= value <= linear_hi


def test_bounds_examples():
    ranges = [(0, 3), (0, 15)]
    assert bounds(d0 * 16 + d1, ranges) == (0, 63)
    assert bounds((d0 * 16 + d1) // 16, ranges) == (0, 3)
    assert bounds(d1 % 4, ranges) == (0, 3)
    assert bounds((d0 + 4) % 8, ranges) == (4, 7)  # within one period: exact
    assert bounds(d0 * -2, ranges) == (-6, 0)
    assert bounds(d0.ceil_div(2), ranges) == (0, 2)


def test_bounds_of_unknown_dims_and_products_are_unbounded():
    assert bounds(d2, [(0, 1)]) == UNBOUNDED
    product = AffineBinaryOpExpr(AffineBinaryOpKind.Mul, d0, d1)
    assert bounds(product, [(0, 1), (0, 1)]) == UNBOUNDED
    lo, hi = bounds(d2 // 4 + 1, {0: (0, 1)})
    assert math.isinf(lo) and math.isinf(hi)
    assert bounds(d2 % 4, {}) == (0, 3)  # a remainder is bounded whatever its dividend


def test_bounds_per_value_of_a_dim_with_arrays():
    xs = np.arange(10)
    ranges = {0: (xs, xs), 1: (0, 3)}
    expr = (d0 * 4 + d1) // 8 + d0 % 4
    lo, hi = bounds(expr, ranges)
    for i, x in enumerate(xs):
        assert (lo[i], hi[i]) == bounds(expr, [(int(x), int(x)), (0, 3)])


def test_single_value():
    assert single_value((3, 3)) == 3
    assert single_value((2, 3)) is None
    assert single_value(UNBOUNDED) is None


# --- linear forms ---------------------------------------------------------------------


def test_linear_form_expands_sums_and_constant_products():
    form = Linear.of((d0 + d1 * 2) * 3 + d0 // 4 + 5 - d1 * 6)
    assert form.terms == {d0: 3, d0 // 4: 1}
    assert form.const == 5
    assert form.expr() == d0 * 3 + d0 // 4 + 5


def test_linear_split_and_split_by():
    form = Linear.of(d0 * 8 + d1 * 3 + d2 // 2 + 7)
    inside, outside = form.split({0, 1})
    assert inside.expr() == d0 * 8 + d1 * 3 + 7
    assert outside.expr() == d2 // 2
    assert Linear.of((d0 + d1) // 2).split({0}) is None  # a term mixes both
    quotient, remainder = form.split_by(4)
    assert quotient.expr() == d0 * 2 + 1
    assert remainder.expr() == d1 * 3 + d2 // 2 + 3


def test_linear_bounds_are_exact_for_distinct_dims():
    assert Linear.of(d0 * 4 - d1 + 2).bounds([(0, 3), (0, 3)]) == (-1, 14)
    assert Linear.of(d0 - d0).bounds([(0, 3)]) == (0, 0)  # a tree walk says (-3, 3)


# --- simplification -------------------------------------------------------------------


@settings(max_examples=150, deadline=None)
@given(affine_exprs(2), RANGES, st.booleans())
def test_simplify_expr_is_exact_over_the_ranges(expr, ranges, fold_dims):
    ranges = [(lo, lo + width) for lo, width in ranges]
    simple = simplify_expr(expr, ranges, fold_dims)
    for point in itertools.product(*[range(a, b + 1) for a, b in ranges]):
        assert simple.eval(point, []) == expr.eval(point, []), (str(expr), str(simple), point)


def test_simplify_expr_examples():
    ranges = [(0, 2), (0, 3)]
    assert simplify_expr((d0 * 4 + d1) // 4, ranges) == d0
    assert simplify_expr((d0 * 4 + d1) % 4, ranges) == d1
    assert simplify_expr((d1 // 2) * 2 + d1 % 2, ranges) == d1
    assert simplify_expr(d1 // 2 // 2, ranges) == C(0)
    assert simplify_expr(d0 * 3 + d1 - d0 * 3, ranges) == d1
    assert simplify_expr((d0 * 4 + d1 + 9) // 4, [(0, 2), (0, 2)]) == d0 + 2
    assert simplify_expr((d0 * 4 + d1 + 1).ceil_div(4), [(0, 2), (0, 2)]) == d0 + 1
    # Unresolved divisions keep what the divisor divides outside.
    assert simplify_expr((d0 * 8 + d1) // 4, [(0, 2), (0, 7)]) == d0 * 2 + d1 // 4
    assert simplify_expr((d0 * 8 + d1) % 4, [(0, 2), (0, 7)]) == d1 % 4


def test_simplify_without_ranges_only_uses_the_constants():
    assert simplify_expr((d0 * 4 + 2) // 4) == d0
    assert simplify_expr((d0 * 4 + d1) // 4) == d0 + d1 // 4
    assert simplify(d0 * 2 + 3 - d0 * 2) == Linear(const=3)


def test_fold_dims_decides_whether_single_valued_dims_stay():
    ranges = [(0, 0), (0, 1)]
    assert simplify_expr(d0 * 2 + d1, ranges) == d1
    assert simplify_expr(d0 * 2 + d1, ranges, fold_dims=False) == d0 * 2 + d1
    assert simplify_expr(d0, ranges) == C(0)
    assert simplify_expr(d0, ranges, fold_dims=False) == d0
    # Terms that are not dims are folded either way.
    assert simplify_expr(d1 // 2 + d0, ranges, fold_dims=False) == d0


# --- conditions -----------------------------------------------------------------------

SLT, SGE, EQ, ULT = 2, 5, 0, 6


def test_compare_decides_what_holds_over_the_ranges():
    ranges = [(0, 3), (0, 15)]
    assert compare(SLT, d0 * 16 + d1, C(64), ranges) is True
    assert compare(SLT, d0 * 16 + d1, C(63), ranges) is None
    assert compare(SGE, d0, C(4), ranges) is False
    assert compare(EQ, (d0 * 16 + d1) // 16, d0, ranges) is True
    assert compare(ULT, d0 - 1, C(3), ranges) is None  # unsigned of a negative: undecided


# --- access-map rewriting on the memory ops --------------------------------------------

ACCESSES = """
func.func @k(%a: memref<8x16xf32>, %b: memref<4x16xf32>) attributes {xweave.kernel} {
  loop.for "k.o" %o = 0 to 1 {
    loop.for "k.i" %i = 0 to 2 {
      loop.for "k.j" %j = 0 to 16 {
        %v = loop.load %a[(%i * 4 + %o) floordiv 4 + %o, %j] : memref<8x16xf32>
        loop.store %v, %b[%i, %j mod 16] : memref<4x16xf32>
      }
    }
  }
  func.return
}
"""


def _accesses():
    module = parse_module(ACCESSES)
    kernel = next(op for op in module.ops if isinstance(op, func.FuncOp))
    load = next(op for op in kernel.walk() if isinstance(op, loop.LoadOp))
    store = next(op for op in kernel.walk() if isinstance(op, loop.StoreOp))
    ivs = {f.name_str: f.induction_var for f in kernel.walk() if isinstance(f, loop.ForOp)}
    return module, load, store, (ivs["k.o"], ivs["k.i"], ivs["k.j"])


def _text(op) -> str:
    return str(op).strip()


def test_simplify_access_folds_and_drops_unused_operands():
    module, load, store, (o, i, j) = _accesses()
    assert simplify_access(load)
    assert _text(load) == "%v = loop.load %a[%i, %j] : memref<8x16xf32>"
    assert simplify_access(store)
    assert _text(store) == "loop.store %v, %b[%i, %j] : memref<4x16xf32>"
    assert not simplify_access(store)  # already simple
    module.verify()


def test_simplify_access_keeps_loop_variables_with_fold_dims_false():
    module, load, _, (o, i, j) = _accesses()
    assert simplify_access(load, fold_dims=False)
    assert _text(load) == "%v = loop.load %a[%i + %o, %j] : memref<8x16xf32>"


def test_set_access_compacts_the_operands():
    module, load, store, (o, i, j) = _accesses()
    changed = store.set_access([o, i, j], AffineMap(3, 0, (d1, d2)), compact=True)
    assert changed and list(store.indices) == [i, j]
    assert store.value is load.result  # a store keeps its value operand
    assert store.map.data == AffineMap(2, 0, (d0, d1))
    assert not store.set_access([i, j], AffineMap(2, 0, (d0, d1)))
    module.verify()


def test_rebase_and_permute():
    module, load, store, (o, i, j) = _accesses()
    b = store.memref
    store.set_access([i, j], AffineMap(2, 0, (d0 + 2, d1)), compact=True)
    store.rebase(b, [d0 + 2, C(0)], [i])  # b[i + 2, j] -> b[i + 2 - (i + 2), j]
    assert list(store.indices) == [i, j, i]
    assert store.map.data.results[0].eval([5, 1, 5], []) == 0
    load.set_access([i, j], AffineMap(2, 0, (d0, d1)), compact=True)
    load.permute([1, 0])
    assert load.map.data.results == (d1, d0)


def test_prefetch_rewrites_its_access_too():
    module, load, _, (o, i, j) = _accesses()
    prefetch = loop.PrefetchOp(load.memref, [o, i, j], AffineMap(3, 0, (d1 + d0, d2)))
    load.parent_block().insert_op_before(prefetch, load)
    assert simplify_access(prefetch)
    assert list(prefetch.indices) == [i, j]
    assert prefetch.map.data == AffineMap(2, 0, (d0, d1))
    module.verify()
