"""Range-aware affine reasoning over loop nests: the one analysis the loop passes share.

Index expressions are xDSL's `AffineExpr`s whose dimensions stand for loop variables
(or other index values); the ranges of those variables bound them.

* **intervals** (`Interval`, `bounds`): inclusive bounds of an expression when each
  dimension ranges over an interval, sound but not tight; `-inf`/`inf` where unknown.
  The bounds may also be numpy arrays (one interval per value of a loop variable,
  `loop-parallel` proves iterations disjoint that way);
* **linear forms** (`Linear`): `sum(coef * atom) + const`, where the atoms are
  dimensions and the terms that are not linear (`floordiv`, `mod`, `ceildiv`);
* **simplification** (`simplify`, `simplify_expr`, `simplify_map`): one canonical form,
  with `floordiv`/`mod`/`ceildiv` by a constant resolved where the ranges allow it
  (`(i.o * 16 + i.i) floordiv 16` is `i.o` when `0 <= i.i < 16`), `c * (e floordiv c) +
  e mod c` recombined into `e`, and terms of a single value folded into the constant;
* **loop ranges and conditions** (`iv_range`, `loop_range`, `truth_value`): the values
  a loop variable takes, and `i1` index comparisons decided over those ranges.

Rewriting an access onto new operands and a new map is a method of the loop
dialect's memory ops (`loop.LoadOp.set_access`, ...); `simplify_access` here computes
the simplified map.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from xdsl.dialects import arith
from xdsl.dialects.builtin import IndexType, IntegerAttr, IntegerType
from xdsl.ir import BlockArgument, Operation, SSAValue
from xdsl.ir.affine import (
    AffineBinaryOpExpr,
    AffineBinaryOpKind,
    AffineConstantExpr,
    AffineDimExpr,
    AffineExpr,
    AffineMap,
)

from xweave.dialects import loop
from xweave.passes.loop_utils import affine_of, constant_index, enclosing_loops

Interval = tuple[float, float]
"""Inclusive bounds `(lo, hi)` of an integer value; `-inf`/`inf` when unbounded."""

UNBOUNDED: Interval = (-math.inf, math.inf)

Ranges = Sequence[Interval] | Mapping[int, Interval]
"""The interval of each dimension, by position; a missing dimension is unbounded."""

_DIVISIONS = (AffineBinaryOpKind.FloorDiv, AffineBinaryOpKind.CeilDiv, AffineBinaryOpKind.Mod)

# --- intervals -------------------------------------------------------------------------


def _range_of(ranges: Ranges, position: int) -> Interval:
    if isinstance(ranges, Mapping):
        return ranges.get(position, UNBOUNDED)
    return ranges[position] if position < len(ranges) else UNBOUNDED


def _finite(x) -> bool:
    """Whether a bound is known: a number or an array (arrays never hold infinities)."""
    return isinstance(x, np.ndarray) or not math.isinf(x)


def _add(x, y):
    if not _finite(x):
        return x
    return y if not _finite(y) else x + y


def _scale(interval: Interval, c: int) -> Interval:
    if c == 0:
        return (0, 0)
    lo, hi = interval[0] * c, interval[1] * c
    return (lo, hi) if c > 0 else (hi, lo)


def _divide(interval: Interval, kind: AffineBinaryOpKind, c: int) -> Interval:
    """Bounds of `x floordiv/ceildiv/mod c` for `x` in `interval`, `c > 0`."""
    lo, hi = interval
    if kind == AffineBinaryOpKind.FloorDiv:
        return (lo // c if _finite(lo) else lo, hi // c if _finite(hi) else hi)
    if kind == AffineBinaryOpKind.CeilDiv:
        return (-(-lo // c) if _finite(lo) else lo, -(-hi // c) if _finite(hi) else hi)
    # Mod: exact within one period, else [0, c-1].
    if not (_finite(lo) and _finite(hi)):
        return (0, c - 1)
    same = lo // c == hi // c
    if isinstance(same, np.ndarray):
        return np.where(same, lo % c, 0), np.where(same, hi % c, c - 1)
    return (lo % c, hi % c) if same else (0, c - 1)


def _const_of(expr: AffineExpr) -> int | None:
    return expr.value if isinstance(expr, AffineConstantExpr) else None


def bounds(expr: AffineExpr, ranges: Ranges) -> Interval:
    """Bounds of `expr` when dimension `d_i` ranges over `ranges[i]` (sound, not tight)."""
    match expr:
        case AffineConstantExpr(value=v):
            return (v, v)
        case AffineDimExpr(position=p):
            return _range_of(ranges, p)
        case AffineBinaryOpExpr(kind=AffineBinaryOpKind.Add, lhs=lhs, rhs=rhs):
            a, b = bounds(lhs, ranges), bounds(rhs, ranges)
            return (_add(a[0], b[0]), _add(a[1], b[1]))
        case AffineBinaryOpExpr(kind=AffineBinaryOpKind.Mul, lhs=lhs, rhs=rhs):
            c, other = _const_of(rhs), lhs
            if c is None:
                c, other = _const_of(lhs), rhs
            return UNBOUNDED if c is None else _scale(bounds(other, ranges), c)
        case AffineBinaryOpExpr(kind=kind, lhs=lhs, rhs=rhs):
            c = _const_of(rhs)
            if c is None or c <= 0:
                return UNBOUNDED
            return _divide(bounds(lhs, ranges), kind, c)
    return UNBOUNDED


def single_value(interval: Interval) -> int | None:
    """The value of an interval that holds one, else None."""
    lo, hi = interval
    return int(lo) if lo == hi and _finite(lo) else None


# --- linear forms -----------------------------------------------------------------------


def _atom_key(atom: AffineExpr) -> tuple[int, int]:
    """Dims in position order, then the other atoms in the order they were met."""
    return (0, atom.position) if isinstance(atom, AffineDimExpr) else (1, 0)


@dataclass
class Linear:
    """`sum(coef * atom) + const`: atoms are dims or the terms that are not linear
    (floordiv, mod, ceildiv, products of two variables)."""

    terms: dict[AffineExpr, int] = field(default_factory=dict)
    const: int = 0

    @staticmethod
    def of(expr: AffineExpr) -> Linear:
        """`expr` with sums and products by constants expanded (no range reasoning)."""
        match expr:
            case AffineConstantExpr(value=v):
                return Linear(const=v)
            case AffineBinaryOpExpr(kind=AffineBinaryOpKind.Add, lhs=lhs, rhs=rhs):
                return Linear.of(lhs) + Linear.of(rhs)
            case AffineBinaryOpExpr(kind=AffineBinaryOpKind.Mul, lhs=lhs, rhs=rhs) if (
                _const_of(rhs) is not None or _const_of(lhs) is not None
            ):
                c, other = _const_of(rhs), lhs
                if c is None:
                    c, other = _const_of(lhs), rhs
                return Linear.of(other).scale(c)
        return Linear({expr: 1})

    def __add__(self, other: Linear) -> Linear:
        terms = dict(self.terms)
        for atom, c in other.terms.items():
            terms[atom] = terms.get(atom, 0) + c
        return Linear({a: c for a, c in terms.items() if c}, self.const + other.const)

    def __sub__(self, other: Linear) -> Linear:
        return self + other.scale(-1)

    def scale(self, k: int) -> Linear:
        if k == 0:
            return Linear()
        return Linear({a: c * k for a, c in self.terms.items()}, self.const * k)

    @property
    def is_constant(self) -> bool:
        return not self.terms

    def used_dims(self) -> set[int]:
        return {d for atom in self.terms for d in atom.used_dims()}

    def split(self, dims: set[int]) -> tuple[Linear, Linear] | None:
        """(the terms over `dims` only, with the constant; the other terms), or None if a
        term mixes both."""
        inside, outside = Linear(const=self.const), Linear()
        for atom, c in self.terms.items():
            used = atom.used_dims()
            if used <= dims:
                inside.terms[atom] = c
            elif not used & dims:
                outside.terms[atom] = c
            else:
                return None
        return inside, outside

    def split_by(self, c: int) -> tuple[Linear, Linear]:
        """`(quotient, remainder)` with `self == c * quotient + remainder`, where the
        remainder keeps the terms whose coefficient `c` does not divide."""
        q_const, r_const = divmod(self.const, c)
        quotient = Linear({a: k // c for a, k in self.terms.items() if k % c == 0}, q_const)
        remainder = Linear({a: k for a, k in self.terms.items() if k % c != 0}, r_const)
        return quotient, remainder

    def bounds(self, ranges: Ranges) -> Interval:
        """Bounds over `ranges`, exact when the atoms are distinct dims."""
        lo = hi = self.const
        for atom, c in self.terms.items():
            a, b = _scale(bounds(atom, ranges), c)
            lo, hi = _add(lo, a), _add(hi, b)
        return lo, hi

    def expr(self) -> AffineExpr:
        """The canonical expression: dims in position order, then the other atoms, then
        the constant."""
        result: AffineExpr | None = None
        for atom in sorted((a for a, k in self.terms.items() if k), key=_atom_key):
            c = self.terms[atom]
            term = atom if c == 1 else atom * c
            result = term if result is None else result + term
        if result is None:
            return AffineExpr.constant(self.const)
        return result + self.const if self.const else result


# --- simplification ---------------------------------------------------------------------


def simplify(expr: AffineExpr, ranges: Ranges = (), fold_dims: bool = True) -> Linear:
    """The canonical linear form of `expr`, equal to it for every dim value within
    `ranges`. With `fold_dims` False, a dim of a single value stays a dim (the
    placement passes keep every loop variable an access names, so that the nest can
    still be scheduled by loop); terms that are not dims are folded either way."""
    if fold_dims:
        value = single_value(bounds(expr, ranges))
        if value is not None:
            return Linear(const=value)
    form = Linear.of(expr)
    out = Linear(const=form.const)
    for atom, coef in form.terms.items():
        if isinstance(atom, AffineDimExpr):
            out.terms[atom] = out.terms.get(atom, 0) + coef
        else:
            out = out + Linear.of(_simplify_atom(atom, ranges, fold_dims)).scale(coef)
    for atom in list(out.terms):
        if not fold_dims and isinstance(atom, AffineDimExpr):
            continue
        value = single_value(bounds(atom, ranges))
        if value is not None:
            out.const += out.terms.pop(atom) * value
    _recombine_div_mod(out)
    return out


def simplify_expr(expr: AffineExpr, ranges: Ranges = (), fold_dims: bool = True) -> AffineExpr:
    """An expression equal to `expr` for every dim value within `ranges`, simplified."""
    return simplify(expr, ranges, fold_dims).expr()


def simplify_map(amap: AffineMap, ranges: Ranges = (), fold_dims: bool = True) -> AffineMap:
    """`amap` with every result simplified over `ranges` (of its dims)."""
    if isinstance(ranges, Mapping):
        return _simplify_map(amap, ranges, fold_dims)
    return _simplify_map_memo(amap, tuple(ranges), fold_dims)


def _simplify_map(amap: AffineMap, ranges: Ranges, fold_dims: bool) -> AffineMap:
    return AffineMap(amap.num_dims, amap.num_symbols,
                     tuple(simplify_expr(r, ranges, fold_dims) for r in amap.results))


@functools.lru_cache(maxsize=1 << 16)
def _simplify_map_memo(amap: AffineMap, ranges: tuple[Interval, ...],
                       fold_dims: bool) -> AffineMap:
    # The same accesses are simplified again and again (every round of loop-simplify,
    # every copy of an unrolled body): a pure function of its arguments, remembered.
    return _simplify_map(amap, ranges, fold_dims)


def _recombine_div_mod(form: Linear) -> None:
    """`c*k * (e floordiv c) + k * (e mod c)` -> `k * e`, in place."""
    terms = form.terms
    changed = True
    while changed:
        changed = False
        for atom, coef in list(terms.items()):
            if not (isinstance(atom, AffineBinaryOpExpr) and atom.kind == AffineBinaryOpKind.Mod):
                continue
            c = _const_of(atom.rhs)
            div = AffineBinaryOpExpr(AffineBinaryOpKind.FloorDiv, atom.lhs, atom.rhs)
            if c is None or not coef or terms.get(div) != coef * c:
                continue
            del terms[atom], terms[div]
            inner = Linear.of(atom.lhs)
            for a, k in inner.terms.items():
                terms[a] = terms.get(a, 0) + coef * k
            form.const += coef * inner.const
            changed = True
            break


def _simplify_atom(atom: AffineExpr, ranges: Ranges, fold_dims: bool) -> AffineExpr:
    """Simplify a floordiv/mod/ceildiv (or a product of two variables)."""
    assert isinstance(atom, AffineBinaryOpExpr)
    c = _const_of(atom.rhs)
    inner = simplify_expr(atom.lhs, ranges, fold_dims)
    if c is None or c <= 0:
        return AffineExpr.binary(atom.kind, inner, simplify_expr(atom.rhs, ranges, fold_dims))
    if c == 1:
        return AffineExpr.constant(0) if atom.kind == AffineBinaryOpKind.Mod else inner
    if atom.kind == AffineBinaryOpKind.FloorDiv:
        # (e floordiv a) floordiv c == e floordiv (a * c) for positive a, c.
        if isinstance(inner, AffineBinaryOpExpr) and inner.kind == AffineBinaryOpKind.FloorDiv:
            a = _const_of(inner.rhs)
            if a is not None and a > 0:
                return _simplify_atom(inner.lhs // (a * c), ranges, fold_dims)
    quotient, rest = Linear.of(inner).split_by(c)
    remainder = rest.expr()
    lo, hi = bounds(remainder, ranges)
    known = _finite(lo) and _finite(hi)
    if atom.kind == AffineBinaryOpKind.CeilDiv:
        # ceil((c*q + r) / c) == q + ceil(r / c)
        if known and -(-lo // c) == -(-hi // c):
            return (quotient + Linear(const=-(-int(lo) // c))).expr()
        return inner.ceil_div(c)
    exact = known and lo // c == hi // c
    if atom.kind == AffineBinaryOpKind.FloorDiv:
        # floor((c*q + r) / c) == q + floor(r / c)
        if exact:
            return (quotient + Linear(const=int(lo) // c)).expr()
        if quotient.terms or quotient.const:
            return quotient.expr() + remainder // c
        return remainder // c
    # (c*q + r) mod c == r mod c
    if exact:
        return remainder - (int(lo) // c) * c
    return remainder % c


# --- loop ranges ------------------------------------------------------------------------


def loop_range(for_op: loop.ForOp) -> Interval | None:
    """(first, last) value of the induction variable; None for an empty loop."""
    r = for_op.range
    return (r[0], r[-1]) if len(r) else None


def iv_range(value: SSAValue) -> Interval:
    """The values an index takes: exact for a `loop.for` induction variable and for a
    constant."""
    if isinstance(value, BlockArgument):
        owner = value.owner.parent_op()
        if isinstance(owner, loop.ForOp) and value is owner.induction_var:
            lb, step, extent = owner.lb.value.data, owner.step.value.data, owner.extent
            return (lb, lb + step * max(extent - 1, 0))
    const = constant_index(value)
    return UNBOUNDED if const is None else (const, const)


def loop_dims(op: Operation) -> tuple[dict[SSAValue, int], list[Interval]]:
    """The variables of the loops around `op` as dims (outermost first), with ranges."""
    ivs = [f.induction_var for f in enclosing_loops(op)]
    return {v: i for i, v in enumerate(ivs)}, [iv_range(v) for v in ivs]


def simplify_access(op: loop.LoadOp | loop.StoreOp | loop.PrefetchOp,
                    fold_dims: bool = True) -> bool:
    """Simplify `op`'s map over the ranges of its index operands and drop the operands
    no index uses; returns whether `op` changed."""
    ranges = [iv_range(v) for v in op.indices]
    amap = simplify_map(op.map.data, ranges, fold_dims)
    return op.set_access(list(op.indices), amap, compact=True)


# --- conditions -------------------------------------------------------------------------

_CMPI_SIGNED = {0: "eq", 1: "ne", 2: "slt", 3: "sle", 4: "sgt", 5: "sge",
                6: "slt", 7: "sle", 8: "sgt", 9: "sge"}


def _non_negative_divisions(expr: AffineExpr, ranges: Ranges) -> bool:
    return all(bounds(e.lhs, ranges)[0] >= 0 for e in expr.dfs()
               if isinstance(e, AffineBinaryOpExpr) and e.kind in _DIVISIONS)


def compare(predicate: int, lhs: AffineExpr, rhs: AffineExpr, ranges: Ranges) -> bool | None:
    """The value of `arith.cmpi predicate, lhs, rhs` if it is the same over `ranges`.

    `lhs` and `rhs` come from `affine_of`, which reads arith's signed division and
    remainder as floordiv and mod: they agree only for non-negative dividends."""
    if not (_non_negative_divisions(lhs, ranges) and _non_negative_divisions(rhs, ranges)):
        return None
    if predicate >= 6:  # unsigned: the same as signed when both sides are non-negative
        if bounds(simplify_expr(lhs, ranges), ranges)[0] < 0:
            return None
        if bounds(simplify_expr(rhs, ranges), ranges)[0] < 0:
            return None
    lo, hi = bounds(simplify_expr(lhs - rhs, ranges), ranges)
    match _CMPI_SIGNED[predicate]:
        case "eq":
            return True if lo == hi == 0 else (False if lo > 0 or hi < 0 else None)
        case "ne":
            return False if lo == hi == 0 else (True if lo > 0 or hi < 0 else None)
        case "slt":
            return True if hi < 0 else (False if lo >= 0 else None)
        case "sle":
            return True if hi <= 0 else (False if lo > 0 else None)
        case "sgt":
            return True if lo > 0 else (False if hi <= 0 else None)
        case _:  # sge
            return True if lo >= 0 else (False if hi < 0 else None)


def truth_value(value: SSAValue) -> bool | None:
    """True/False if the `i1` `value` is provably so over the enclosing loop ranges."""
    op = value.owner
    if isinstance(op, arith.ConstantOp) and isinstance(op.value, IntegerAttr):
        if isinstance(op.value.type, IntegerType) and op.value.type.width.data == 1:
            return op.value.value.data != 0
        return None
    if isinstance(op, arith.CmpiOp):
        if not isinstance(op.lhs.type, IndexType):
            return None
        dims, ranges = loop_dims(op)
        lhs, rhs = affine_of(op.lhs, dims), affine_of(op.rhs, dims)
        if lhs is None or rhs is None:
            return None
        return compare(op.predicate.value.data, lhs, rhs, ranges)
    if isinstance(op, arith.AndIOp | arith.OrIOp | arith.XOrIOp):
        a, b = truth_value(op.lhs), truth_value(op.rhs)
        if isinstance(op, arith.AndIOp):
            return False if a is False or b is False else (True if a and b else None)
        if isinstance(op, arith.OrIOp):
            if a is True or b is True:
                return True
            return False if a is False and b is False else None
        return None if a is None or b is None else a != b
    return None
