"""loop-simplify: clean loop nests up after scheduling, so the emitted LLVM is clean.

Repeated until nothing changes, on every function (or on `kernel` only):

* index arithmetic is folded into the access maps (`loop_utils.fold_access_maps`);
* loops of extent 1 disappear (the induction variable becomes the constant lower
  bound), loops of extent 0 are erased;
* access maps are simplified with the loop ranges: linear terms are collected,
  `(4*a + b) floordiv 4` becomes `a` and `(4*a + b) mod 4` becomes `b` when `0 <= b < 4`,
  `c * (e floordiv c) + e mod c` becomes `e`, terms with a single value become constants;
* guards are decided: an `i1` built with `arith.cmpi` of affine index expressions (and
  `andi`/`ori`/`xori` of those) that is provably true or false over the ranges of the
  enclosing loops is replaced by a constant, and an `scf.if` (or `arith.select`) on such
  a condition is replaced by the branch taken;
* buffers that are unused or only ever written (`loop.alloc`s whose every use is a
  `loop.store` into them) are erased with their stores;
* dead pure ops, empty loops and unused `loop.alloc`s are dropped (dead code elimination);
* constants move into the region of the one op that holds all their uses (so that nests
  stay perfect).

The bound analysis (`expr_bounds`, `simplify_expr`, `truth_value`) is reused by the
other schedule passes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, func, scf
from xdsl.dialects.builtin import AffineMapAttr, IndexType, IntegerAttr, IntegerType, ModuleOp
from xdsl.ir import Block, BlockArgument, Operation, SSAValue
from xdsl.ir.affine import (
    AffineBinaryOpExpr,
    AffineBinaryOpKind,
    AffineConstantExpr,
    AffineDimExpr,
    AffineExpr,
    AffineMap,
)
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import PassFailedException

from xweave.dialects import loop
from xweave.passes.loop_utils import affine_of, enclosing_loops, erase_dead_ops, fold_access_map, kernels

Interval = tuple[float, float]
"""Inclusive bounds `(lo, hi)` of an integer value; `-inf`/`inf` when unbounded."""

UNBOUNDED: Interval = (-math.inf, math.inf)

# --- ranges and bounds ---------------------------------------------------------------


def iv_range(value: SSAValue) -> Interval:
    """The values an index takes: exact for a `loop.for` induction variable."""
    if isinstance(value, BlockArgument):
        owner = value.owner.parent_op()
        if isinstance(owner, loop.ForOp) and value is owner.induction_var:
            lb, step, extent = owner.lb.value.data, owner.step.value.data, owner.extent
            return (lb, lb + step * max(extent - 1, 0))
    const = _int_constant(value)
    if const is not None:
        return (const, const)
    return UNBOUNDED


def _int_constant(value: SSAValue) -> int | None:
    op = value.owner
    if isinstance(op, arith.ConstantOp) and isinstance(op.value, IntegerAttr):
        return op.value.value.data
    return None


def _floor_div(x: float, c: int) -> float:
    return x if math.isinf(x) else x // c


def _ceil_div(x: float, c: int) -> float:
    return x if math.isinf(x) else -(-x // c)


def _const_of(expr: AffineExpr) -> int | None:
    return expr.value if isinstance(expr, AffineConstantExpr) else None


def expr_bounds(expr: AffineExpr, ranges: Sequence[Interval]) -> Interval:
    """Bounds of `expr` when dimension `d_i` ranges over `ranges[i]` (sound, not tight)."""
    match expr:
        case AffineConstantExpr(value=v):
            return (v, v)
        case AffineDimExpr(position=p):
            return ranges[p] if p < len(ranges) else UNBOUNDED
        case AffineBinaryOpExpr(kind=kind, lhs=lhs, rhs=rhs):
            a = expr_bounds(lhs, ranges)
            if kind == AffineBinaryOpKind.Add:
                b = expr_bounds(rhs, ranges)
                return (a[0] + b[0], a[1] + b[1])
            if kind == AffineBinaryOpKind.Mul:
                c = _const_of(rhs)
                if c is None:
                    c, a = _const_of(lhs), expr_bounds(rhs, ranges)
                if c is None:
                    return UNBOUNDED
                if c == 0:
                    return (0, 0)
                lo, hi = a[0] * c, a[1] * c
                return (lo, hi) if c > 0 else (hi, lo)
            c = _const_of(rhs)
            if c is None or c <= 0:
                return UNBOUNDED
            if kind == AffineBinaryOpKind.FloorDiv:
                return (_floor_div(a[0], c), _floor_div(a[1], c))
            if kind == AffineBinaryOpKind.CeilDiv:
                return (_ceil_div(a[0], c), _ceil_div(a[1], c))
            # Mod: exact within one period, else [0, c-1].
            if not any(math.isinf(x) for x in a) and a[0] // c == a[1] // c:
                return (a[0] % c, a[1] % c)
            return (0, c - 1)
    return UNBOUNDED


def _single_value(bounds: Interval) -> int | None:
    lo, hi = bounds
    return int(lo) if lo == hi and not math.isinf(lo) else None


# --- affine simplification -------------------------------------------------------------

Linear = tuple[dict[AffineExpr, int], int]
"""`sum(coef * atom) + const`; atoms are dims and floordiv/mod/ceildiv expressions."""


def linear_form(expr: AffineExpr) -> Linear:
    """`expr` as `(terms, constant)`: sums and products by constants are expanded."""
    match expr:
        case AffineConstantExpr(value=v):
            return {}, v
        case AffineBinaryOpExpr(kind=AffineBinaryOpKind.Add, lhs=lhs, rhs=rhs):
            (lt, lc), (rt, rc) = linear_form(lhs), linear_form(rhs)
            terms = dict(lt)
            for atom, coef in rt.items():
                terms[atom] = terms.get(atom, 0) + coef
            return terms, lc + rc
        case AffineBinaryOpExpr(kind=AffineBinaryOpKind.Mul, lhs=lhs, rhs=rhs) if (
            _const_of(rhs) is not None or _const_of(lhs) is not None
        ):
            c = _const_of(rhs)
            other = lhs
            if c is None:
                c, other = _const_of(lhs), rhs
            assert c is not None
            terms, const = linear_form(other)
            return {a: k * c for a, k in terms.items()}, const * c
    return {expr: 1}, 0


def _atom_key(atom: AffineExpr) -> tuple[int, int]:
    return (0, atom.position) if isinstance(atom, AffineDimExpr) else (1, 0)


def _build(terms: dict[AffineExpr, int], const: int) -> AffineExpr:
    """The expression of a linear form: dims in order, then other atoms, then the constant."""
    result: AffineExpr | None = None
    for atom in sorted((a for a, k in terms.items() if k), key=_atom_key):
        coef = terms[atom]
        term = atom if coef == 1 else atom * coef
        result = term if result is None else result + term
    if result is None:
        return AffineExpr.constant(const)
    return result + const if const else result


def simplify_expr(expr: AffineExpr, ranges: Sequence[Interval]) -> AffineExpr:
    """An expression equal to `expr` for every dim value within `ranges`, simplified."""
    value = _single_value(expr_bounds(expr, ranges))
    if value is not None:
        return AffineExpr.constant(value)
    terms, const = linear_form(expr)
    out: dict[AffineExpr, int] = {}
    for atom, coef in terms.items():
        simple = atom if isinstance(atom, AffineDimExpr) else _simplify_atom(atom, ranges)
        sub_terms, sub_const = linear_form(simple)
        const += coef * sub_const
        for a, k in sub_terms.items():
            out[a] = out.get(a, 0) + coef * k
    for atom in list(out):
        value = _single_value(expr_bounds(atom, ranges))
        if value is not None:
            const += out.pop(atom) * value
    const += _recombine_div_mod(out)
    return _build(out, const)


def _recombine_div_mod(terms: dict[AffineExpr, int]) -> int:
    """`c*k * (e floordiv c) + k * (e mod c)` -> `k * e`, in place; returns the constant
    to add (from the constant part of `e`)."""
    extra = 0
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
            inner_terms, inner_const = linear_form(atom.lhs)
            for a, k in inner_terms.items():
                terms[a] = terms.get(a, 0) + coef * k
            extra += coef * inner_const
            changed = True
            break
    return extra


def _split_by(terms: dict[AffineExpr, int], const: int, c: int) -> tuple[Linear, Linear]:
    """`(quotient, remainder)` with `terms + const == c * quotient + remainder`,
    where the remainder keeps the terms whose coefficient `c` does not divide."""
    q_terms = {a: k // c for a, k in terms.items() if k % c == 0}
    r_terms = {a: k for a, k in terms.items() if k % c != 0}
    q_const, r_const = divmod(const, c)
    return (q_terms, q_const), (r_terms, r_const)


def _simplify_atom(atom: AffineExpr, ranges: Sequence[Interval]) -> AffineExpr:
    """Simplify a floordiv/mod/ceildiv expression."""
    assert isinstance(atom, AffineBinaryOpExpr)
    c = _const_of(atom.rhs)
    inner = simplify_expr(atom.lhs, ranges)
    if c is None or c <= 0:
        return AffineExpr.binary(atom.kind, inner, simplify_expr(atom.rhs, ranges))
    if atom.kind == AffineBinaryOpKind.CeilDiv:
        return inner if c == 1 else inner.ceil_div(c)
    if atom.kind == AffineBinaryOpKind.FloorDiv:
        if c == 1:
            return inner
        # (e floordiv a) floordiv c == e floordiv (a * c) for positive a, c.
        if isinstance(inner, AffineBinaryOpExpr) and inner.kind == AffineBinaryOpKind.FloorDiv:
            a = _const_of(inner.rhs)
            if a is not None and a > 0:
                return _simplify_atom(inner.lhs // (a * c), ranges)
    if atom.kind == AffineBinaryOpKind.Mod and c == 1:
        return AffineExpr.constant(0)
    terms, const = linear_form(inner)
    (q_terms, q_const), (r_terms, r_const) = _split_by(terms, const, c)
    remainder = _build(r_terms, r_const)
    lo, hi = expr_bounds(remainder, ranges)
    exact = not (math.isinf(lo) or math.isinf(hi)) and lo // c == hi // c
    if atom.kind == AffineBinaryOpKind.FloorDiv:
        # floor((c*q + r) / c) == q + floor(r / c)
        if exact:
            return _build(q_terms, q_const + int(lo) // c)
        return _build(q_terms, q_const) + remainder // c if q_terms or q_const else remainder // c
    # (c*q + r) mod c == r mod c
    if exact:
        return remainder - (int(lo) // c) * c
    return remainder % c


def simplify_map(amap: AffineMap, ranges: Sequence[Interval]) -> AffineMap:
    """`amap` with every result simplified over `ranges` (of its dims)."""
    return AffineMap(
        amap.num_dims, amap.num_symbols, tuple(simplify_expr(r, ranges) for r in amap.results)
    )


# --- conditions ---------------------------------------------------------------------------

_CMPI_SIGNED = {0: "eq", 1: "ne", 2: "slt", 3: "sle", 4: "sgt", 5: "sge",
                6: "slt", 7: "sle", 8: "sgt", 9: "sge"}


def _loop_dims(op: Operation) -> tuple[dict[SSAValue, int], list[Interval]]:
    ivs = [f.induction_var for f in enclosing_loops(op)]
    return {v: i for i, v in enumerate(ivs)}, [iv_range(v) for v in ivs]


def _non_negative_divisions(expr: AffineExpr, ranges: Sequence[Interval]) -> bool:
    return all(
        expr_bounds(e.lhs, ranges)[0] >= 0
        for e in expr.dfs()
        if isinstance(e, AffineBinaryOpExpr) and e.kind not in (
            AffineBinaryOpKind.Add, AffineBinaryOpKind.Mul)
    )


def _compare(op: arith.CmpiOp) -> bool | None:
    """The value of an index comparison if it is the same over all the loop ranges."""
    if not isinstance(op.lhs.type, IndexType):
        return None
    dims, ranges = _loop_dims(op)
    lhs, rhs = affine_of(op.lhs, dims), affine_of(op.rhs, dims)
    if lhs is None or rhs is None:
        return None
    # `affine_of` reads arith's signed division and remainder as floordiv and mod,
    # which agree only for non-negative dividends.
    if not (_non_negative_divisions(lhs, ranges) and _non_negative_divisions(rhs, ranges)):
        return None
    predicate = op.predicate.value.data
    if predicate >= 6:  # unsigned: the same as signed when both sides are non-negative
        if expr_bounds(simplify_expr(lhs, ranges), ranges)[0] < 0:
            return None
        if expr_bounds(simplify_expr(rhs, ranges), ranges)[0] < 0:
            return None
    lo, hi = expr_bounds(simplify_expr(lhs - rhs, ranges), ranges)
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
        return _compare(op)
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


# --- rewrites ---------------------------------------------------------------------------


def enclosing_function(op: Operation) -> Operation:
    """The top-level op (function) of the module that contains `op`."""
    while (parent := op.parent_op()) is not None and not isinstance(parent, ModuleOp):
        op = parent
    return op


def _insert_before(ops: Sequence[Operation], anchor: Operation) -> None:
    block = anchor.parent_block()
    assert block is not None
    block.insert_ops_before(list(ops), anchor)


def remove_trivial_loops(root: Operation) -> bool:
    """Inline loops of extent 1 (the induction variable becomes a constant), erase
    loops of extent 0."""
    trivial = [op for op in root.walk() if isinstance(op, loop.ForOp) and op.extent <= 1]
    for for_op in reversed(trivial):  # inner loops first: each is still in place
        if for_op.extent == 1:
            const = arith.ConstantOp(IntegerAttr(for_op.lb.value.data, IndexType()))
            _insert_before([const], for_op)
            for_op.induction_var.replace_all_uses_with(const.result)
            body = [op for op in for_op.body.block.ops if not isinstance(op, loop.YieldOp)]
            for op in body:
                op.detach()
            _insert_before(body, for_op)
        for_op.detach()
        for_op.erase()
    return bool(trivial)


def simplify_access_map(op: loop.LoadOp | loop.StoreOp | loop.PrefetchOp) -> bool:
    """Simplify `op`'s map over the ranges of its index operands; drop unused operands."""
    amap = op.map.data
    indices = list(op.indices)
    ranges = [iv_range(v) for v in indices[: amap.num_dims]]
    results = tuple(simplify_expr(r, ranges) for r in amap.results)
    used = sorted({d for r in results for d in r.used_dims()})
    if amap.num_symbols == 0 and len(used) < amap.num_dims:
        remap = {d: AffineExpr.dimension(i) for i, d in enumerate(used)}
        dims = [remap.get(d, AffineExpr.constant(0)) for d in range(amap.num_dims)]
        results = tuple(r.replace_dims_and_symbols(dims, []) for r in results)
        new_map = AffineMap(len(used), 0, results)
        new_indices = [indices[d] for d in used]
    else:
        new_map = AffineMap(amap.num_dims, amap.num_symbols, results)
        new_indices = indices
    if new_map == amap and new_indices == indices:
        return False
    fixed = list(op.operands)[: 2 if isinstance(op, loop.StoreOp) else 1]
    op.operands = [*fixed, *new_indices]
    op.properties["map"] = AffineMapAttr(new_map)
    return True


def _bool_constant(value: bool, anchor: Operation) -> SSAValue:
    const = arith.ConstantOp(IntegerAttr(int(value), IntegerType(1)))
    _insert_before([const], anchor)
    return const.result


def _inline_branch(if_op: scf.IfOp, taken: bool) -> None:
    region = if_op.true_region if taken else if_op.false_region
    if region.blocks:
        block = region.block
        terminator = block.last_op
        values = list(terminator.operands) if isinstance(terminator, scf.YieldOp) else []
        body = [op for op in block.ops if op is not terminator]
        for op in body:
            op.detach()
        _insert_before(body, if_op)
        for result, value in zip(if_op.results, values):
            result.replace_all_uses_with(value)
    if_op.detach()
    if_op.erase()


def _attached(op: Operation, root: Operation) -> bool:
    while op is not root:
        parent = op.parent_op()
        if parent is None:
            return False
        op = parent
    return True


def simplify_conditions(root: Operation) -> bool:
    """Decide comparisons, boolean ops, `scf.if` and `arith.select` that are constant
    over the loop ranges."""
    changed = False
    for op in list(root.walk()):
        if not _attached(op, root):  # inside a branch erased earlier in this walk
            continue
        if isinstance(op, scf.IfOp):
            taken = truth_value(op.cond)
            if taken is not None:
                _inline_branch(op, taken)
                changed = True
        elif isinstance(op, arith.SelectOp) and isinstance(op.cond.type, IntegerType):
            taken = truth_value(op.cond)
            if taken is not None:
                op.result.replace_all_uses_with(op.lhs if taken else op.rhs)
                changed = True
        elif isinstance(op, arith.CmpiOp) and op.result.uses:
            known = truth_value(op.result)
            if known is not None:
                op.result.replace_all_uses_with(_bool_constant(known, op))
                changed = True
        elif isinstance(op, arith.AndIOp | arith.OrIOp) and op.result.uses:
            if op.result.type != IntegerType(1):
                continue
            a, b = truth_value(op.lhs), truth_value(op.rhs)
            neutral = isinstance(op, arith.AndIOp)  # x and true == x; x or false == x
            if a is neutral:
                op.result.replace_all_uses_with(op.rhs)
                changed = True
            elif b is neutral:
                op.result.replace_all_uses_with(op.lhs)
                changed = True
    return changed


def remove_write_only_buffers(root: Operation) -> bool:
    """Erase `loop.alloc` buffers that are unused or only ever stored to (with those
    stores)."""
    changed = False
    for alloc in [op for op in root.walk() if isinstance(op, loop.AllocOp)]:
        uses = list(alloc.memref.uses)
        if not all(
            isinstance(u.operation, loop.StoreOp) and u.index == 1 for u in uses
        ):
            continue
        for use in uses:
            store = use.operation
            store.detach()
            store.erase()
        alloc.detach()
        alloc.erase()
        changed = True
    return changed


def _ancestor_in(op: Operation, block: Block) -> Operation | None:
    """The op of `block` that is `op` or contains it."""
    while op.parent_block() is not block:
        parent = op.parent_op()
        if parent is None:
            return None
        op = parent
    return op


def sink_constants(root: Operation) -> bool:
    """Move each `arith.constant` into the region of the one op that holds all its uses,
    as deep as possible, so that constants left by unrolling or by removing a loop do not
    sit between nested loops (which keeps nests perfect)."""
    changed = False
    work = [op for op in root.walk() if isinstance(op, arith.ConstantOp)]
    while work:
        const = work.pop()
        block = const.parent_block()
        users = [use.operation for use in const.result.uses]
        if block is None or not users:
            continue
        holders = {_ancestor_in(user, block) for user in users}
        if len(holders) != 1:
            continue
        (holder,) = holders
        if holder is None or holder in users or not holder.regions:
            continue
        regions = {id(_region_holding(user, holder)): _region_holding(user, holder)
                   for user in users}
        if len(regions) != 1:
            continue
        (region,) = regions.values()
        if region is None or len(region.blocks) != 1 or region.block.first_op is None:
            continue
        const.detach()
        region.block.insert_op_before(const, region.block.first_op)
        work.append(const)
        changed = True
    return changed


def _region_holding(op: Operation, holder: Operation):
    """The region of `holder` that contains `op`."""
    while (parent := op.parent_op()) is not holder:
        if parent is None:
            return None
        op = parent
    return op.parent_region()


def simplify_function(function: func.FuncOp, max_rounds: int = 10) -> None:
    """Apply every simplification to `function` until nothing changes."""
    for _ in range(max_rounds):
        changed = remove_trivial_loops(function)
        for op in list(function.walk()):
            if isinstance(op, loop.LoadOp | loop.StoreOp | loop.PrefetchOp):
                changed |= fold_access_map(op)
                changed |= simplify_access_map(op)
        changed |= simplify_conditions(function)
        changed |= remove_write_only_buffers(function)
        changed |= erase_dead_ops(function)
        changed |= sink_constants(function)
        if not changed:
            return


@dataclass(frozen=True)
class LoopSimplifyPass(ModulePass):
    """Clean loop nests up: fold and simplify access maps, remove extent-1 loops and
    provably true/false guards, drop dead code, empty loops and unused buffers."""

    name = "loop-simplify"

    kernel: str | None = None
    """Only simplify this kernel (default: every function of the module)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.kernel is not None:
            try:
                functions = kernels(op, self.kernel)
            except PassFailedException as e:
                raise PassFailedException(f"loop-simplify: {e}") from None
        else:
            functions = [f for f in op.ops if isinstance(f, func.FuncOp) and not f.is_declaration]
        for function in functions:
            simplify_function(function)
