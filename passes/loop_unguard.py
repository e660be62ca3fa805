"""loop-unguard: drop bounds guards that only protect a local cache.

A non-dividing `loop-split` of the rows of a register block guards the innermost body
(`scf.if (row < M)`); after the tile is unrolled, each row's FMAs sit in such a guard
inside the reduction loop, and unless LLVM unswitches the loop, the branches (and the
spills they force) stay in the hot loop. `loop-unguard{loop="matmul.k.inner"}` removes,
inside every loop named `loop`, each `scf.if` (without results) that is safe to
execute unconditionally:

* its body only computes (side-effect-free ops), loads from buffers at indices that
  are in bounds over the whole ranges of the enclosing loops (a packed operand padded
  to whole tiles, not the unpadded argument), and stores into local-scope buffers
  (the register block's cache);
* its condition is an index comparison of loop variables that enclose those caches'
  allocation (so it does not change while the cache lives);
* every load of an element it stores into, outside the guard, is itself under a guard
  with the same condition (the write-back of a ragged tile): elements computed for
  rows past the end are never read.

The body then runs for the rows past the end too, on the padding, into cache elements
nobody reads. Guards that do not qualify are left alone (nothing is refused).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

from xdsl.context import Context
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IndexType, MemRefType, ModuleOp, VectorType
from xdsl.ir import Operation, SSAValue
from xdsl.ir.affine import AffineDimExpr, AffineExpr
from xdsl.passes import ModulePass
from xdsl.traits import is_side_effect_free
from xdsl.utils.exceptions import PassFailedException

from xweave.dialects import loop
from xweave.passes.loop_simplify import (
    Interval,
    enclosing_function,
    expr_bounds,
    iv_range,
    simplify_expr,
)
from xweave.passes.loop_utils import affine_of, enclosing_loops, find_loops

Key = tuple[int, AffineExpr]


class _Dims:
    """Every loop variable of a function as an affine dimension, with its range."""

    def __init__(self, function: Operation):
        ivs = [op.induction_var for op in function.walk() if isinstance(op, loop.ForOp)]
        self.dims: dict[SSAValue, int] = {v: i for i, v in enumerate(ivs)}
        self.ranges: list[Interval] = [iv_range(v) for v in ivs]
        self.ivs = ivs

    def condition(self, value: SSAValue) -> Key | None:
        """(predicate, lhs - rhs simplified) of an index `arith.cmpi`, else None."""
        op = value.owner
        if not isinstance(op, arith.CmpiOp) or not isinstance(op.lhs.type, IndexType):
            return None
        lhs, rhs = affine_of(op.lhs, self.dims), affine_of(op.rhs, self.dims)
        if lhs is None or rhs is None:
            return None
        return op.predicate.value.data, simplify_expr(lhs - rhs, self.ranges)

    def indices(self, access: loop.LoadOp | loop.StoreOp) -> list[AffineExpr] | None:
        """The accessed element as affine expressions of the loop variables."""
        operands = [affine_of(v, self.dims) for v in access.indices]
        if any(e is None for e in operands):
            return None
        amap = access.map.data
        exprs = cast(list[AffineExpr], operands)
        return [simplify_expr(r.replace_dims_and_symbols(exprs[:amap.num_dims],
                                                          exprs[amap.num_dims:]), self.ranges)
                for r in amap.results]

    def in_bounds(self, access: loop.LoadOp) -> bool:
        """Whether `access` stays inside its buffer over the whole loop ranges."""
        element = self.indices(access)
        if element is None:
            return False
        shape = cast(MemRefType, access.memref.type).get_shape()
        lanes = access.result.type.get_shape()[-1] if isinstance(access.result.type, VectorType) else 1
        for d, (expr, size) in enumerate(zip(element, shape, strict=True)):
            lo, hi = expr_bounds(expr, self.ranges)
            if d == len(shape) - 1:
                hi += lanes - 1
            if lo < 0 or hi > size - 1:
                return False
        return True


def _guard_key(op: Operation, dims: _Dims) -> list[Key]:
    """The conditions of the guards around `op`."""
    keys = []
    parent = op.parent_op()
    while parent is not None:
        if isinstance(parent, scf.IfOp):
            key = dims.condition(parent.cond)
            if key is not None:
                keys.append(key)
        parent = parent.parent_op()
    return keys


def _removable(guard: scf.IfOp, dims: _Dims) -> bool:
    if guard.results or guard.false_region.blocks and any(
            not isinstance(o, scf.YieldOp) for o in guard.false_region.block.ops):
        return False
    key = dims.condition(guard.cond)
    if key is None:
        return False
    stores: list[loop.StoreOp] = []
    for op in guard.true_region.walk():
        if isinstance(op, loop.LoadOp):
            if not dims.in_bounds(op):
                return False
        elif isinstance(op, loop.StoreOp):
            scope = cast(MemRefType, op.memref.type).memory_space
            if scope != loop.LOCAL_SCOPE or not isinstance(op.memref.owner, loop.AllocOp):
                return False
            stores.append(op)
        elif not isinstance(op, scf.YieldOp) and (op.regions or not is_side_effect_free(op)):
            return False
    # The condition must hold still while each cache lives.
    used = {dims.ivs[e.position] for e in key[1].dfs() if isinstance(e, AffineDimExpr)}
    for store in stores:
        alloc = cast(Operation, store.memref.owner)
        if not used <= {f.induction_var for f in enclosing_loops(alloc)}:
            return False
        written = dims.indices(store)
        if written is None:
            return False
        for use in store.memref.uses:
            reader = use.operation
            if not isinstance(reader, loop.LoadOp) or guard.is_ancestor(reader):
                continue
            if key in _guard_key(reader, dims):
                continue
            read = dims.indices(reader)
            if read is None or _may_overlap(read, written, dims):
                return False
    return True


def _may_overlap(a: list[AffineExpr], b: list[AffineExpr], dims: _Dims) -> bool:
    """Whether two accesses of a buffer may touch one element (they differ by a
    provably non-zero constant along some dimension otherwise)."""
    for x, y in zip(a, b):
        lo, hi = expr_bounds(simplify_expr(x - y, dims.ranges), dims.ranges)
        if lo > 0 or hi < 0:
            return False
    return True


def _inline(guard: scf.IfOp) -> None:
    block = guard.parent_block()
    assert block is not None
    for op in list(guard.true_region.block.ops):
        if isinstance(op, scf.YieldOp):
            continue
        op.detach()
        block.insert_op_before(op, guard)
    guard.detach()
    guard.erase()


@dataclass(frozen=True)
class LoopUnguardPass(ModulePass):
    """Drop the guards inside loop `loop` that only keep a local cache's rows past the
    end of a ragged tile from being computed (see the module docstring)."""

    name = "loop-unguard"

    loop: str
    """The loop whose guards are dropped where safe (the reduction inside a tile)."""
    kernel: str | None = None
    """Only in this kernel (default: every kernel having the loop)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        try:
            found = find_loops(op, self.loop, self.kernel)
        except PassFailedException as e:
            raise PassFailedException(f"loop-unguard: {e}") from None
        for for_op in found:
            dims = _Dims(enclosing_function(for_op))
            guards = [g for g in for_op.walk() if isinstance(g, scf.IfOp)]
            for guard in guards:
                if _removable(guard, dims):
                    _inline(guard)
