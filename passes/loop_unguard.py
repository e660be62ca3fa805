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
nobody reads. With `grow=true`, a body may also read past the end of a temporary that a
stage of the kernel computes (the padded input of a conv read through a window): the
temporary is grown so that those reads stay in bounds (`loop_grow`). Guards that do not
qualify are left alone (nothing is refused).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

from xdsl.context import Context
from xdsl.dialects import func, scf
from xdsl.dialects.builtin import MemRefType, ModuleOp
from xdsl.ir import Operation
from xdsl.ir.affine import AffineDimExpr, AffineExpr
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import PassFailedException

from xweave.dialects import loop
from xweave.passes.loop_grow import Dims, Key, conjuncts, plan_growth
from xweave.passes.loop_analysis import bounds, simplify_expr
from xweave.passes.loop_utils import (
    enclosing_function,
    enclosing_loops,
    find_loops,
    side_effect_free,
)

def _guard_key(op: Operation, dims: Dims) -> list[Key]:
    """The conditions of the guards around `op`."""
    keys = []
    parent = op.parent_op()
    while parent is not None:
        if isinstance(parent, scf.IfOp):
            for cond in conjuncts(parent.cond):  # (row < M) && (column < N)
                key = dims.condition(cond)
                if key is not None:
                    keys.append(key)
        parent = parent.parent_op()
    return keys


class _Reads:
    """The guard conditions around each read of a cache (`_guard_key`) and the element it
    reads (`Dims.indices`), found once while the IR does not change: every guard of a
    register block asks them of every read of its cache, the same hundreds of times
    (a 13-row tile: 60,000 times, 70 s)."""

    def __init__(self, dims: Dims):
        self.dims = dims
        self._keys: dict[Operation, list[Key]] = {}
        self._indices: dict[Operation, list[AffineExpr] | None] = {}

    def guard_keys(self, op: Operation) -> list[Key]:
        if op not in self._keys:
            self._keys[op] = _guard_key(op, self.dims)
        return self._keys[op]

    def indices(self, op: loop.LoadOp) -> list[AffineExpr] | None:
        if op not in self._indices:
            self._indices[op] = self.dims.indices(op)
        return self._indices[op]


def _removable(guard: scf.IfOp, dims: Dims, past_end: list[loop.LoadOp] | None,
               reads: _Reads) -> bool:
    """Whether `guard` can go; with `past_end` (a list), loads that leave their buffer
    are allowed and appended to it (for growing), else they keep the guard."""
    if guard.results or guard.false_region.blocks and any(
            not isinstance(o, scf.YieldOp) for o in guard.false_region.block.ops):
        return False
    key = dims.condition(guard.cond)
    if key is None:
        return False
    stores: list[loop.StoreOp] = []
    outside: list[loop.LoadOp] = []
    for op in guard.true_region.walk():
        if isinstance(op, loop.LoadOp):
            if not dims.in_bounds(op):
                if past_end is None:
                    return False
                outside.append(op)
        elif isinstance(op, loop.StoreOp):
            scope = cast(MemRefType, op.memref.type).memory_space
            if scope != loop.LOCAL_SCOPE or not isinstance(op.memref.owner, loop.AllocOp):
                return False
            stores.append(op)
        elif not isinstance(op, scf.YieldOp) and (op.regions or not side_effect_free(op)):
            return False
    # The condition must hold still while each cache lives, or depend on loops inside
    # it only through the element written (the lane of a ragged column tile).
    used = {dims.ivs[e.position] for e in key[1].dfs() if isinstance(e, AffineDimExpr)}
    for store in stores:
        alloc = cast(Operation, store.memref.owner)
        written = dims.indices(store)
        if written is None:
            return False
        inner = used - {f.induction_var for f in enclosing_loops(alloc)}
        own = _per_element(key, written, inner, dims)
        if own is None:
            return False
        for use in store.memref.uses:
            reader = use.operation
            if not isinstance(reader, loop.LoadOp) or guard.is_ancestor(reader):
                continue
            read = reads.indices(reader)
            if not inner and key in reads.guard_keys(reader):
                continue
            if inner and read is not None and any(
                    _per_element(k, read, _inner_ivs(k, alloc, dims), dims) == own
                    for k in reads.guard_keys(reader)):
                continue
            if read is None or _may_overlap(read, written, dims):
                return False
    if past_end is not None:
        past_end += outside
    return True


def _inner_ivs(key: Key, alloc: Operation, dims: Dims) -> set:
    used = {dims.ivs[e.position] for e in key[1].dfs() if isinstance(e, AffineDimExpr)}
    return used - {f.induction_var for f in enclosing_loops(alloc)}


def _per_element(key: Key, element: list[AffineExpr], inner: set, dims: Dims) -> Key | None:
    """`key` with each loop variable of `inner` replaced by the dimension of the cache
    element it indexes (on its own: `cache[.., %j, ..]`), so that guards of a write and
    of a read of the same element compare equal; None if one indexes no dimension so."""
    if not inner:
        return key
    base = len(dims.ivs)
    replacements: list[AffineExpr] = [AffineExpr.dimension(i) for i in range(base)]
    for iv in inner:
        position = dims.dims[iv]
        where = [d for d, e in enumerate(element)
                 if isinstance(e, AffineDimExpr) and e.position == position]
        if len(where) != 1 or any(position in {x.position for x in e.dfs()
                                               if isinstance(x, AffineDimExpr)}
                                  for d, e in enumerate(element) if d != where[0]):
            return None
        replacements[position] = AffineExpr.dimension(base + where[0])
    predicate, expr = key
    return predicate, expr.replace_dims_and_symbols(replacements, [])


def _may_overlap(a: list[AffineExpr], b: list[AffineExpr], dims: Dims) -> bool:
    """Whether two accesses of a buffer may touch one element (they differ by a
    provably non-zero constant along some dimension otherwise)."""
    for x, y in zip(a, b):
        lo, hi = bounds(simplify_expr(x - y, dims.ranges), dims.ranges)
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
    grow: bool = False
    """Also drop guards whose body reads past the end of a temporary computed in the
    kernel (a padded input), growing the temporary so that those reads stay in bounds
    (see `loop_grow`); if it cannot be grown, those guards stay."""
    kernel: str | None = None
    """Only in this kernel (default: every kernel having the loop)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        found = find_loops(op, self.loop, self.kernel, self.name)
        for for_op in found:
            while self._unguard(for_op):
                pass  # a guard holding another one goes once the inner one has gone

    def _unguard(self, for_op: loop.ForOp) -> bool:
        """Drop the removable guards inside `for_op`; whether there were any."""
        function = enclosing_function(for_op)
        dims = Dims(function)
        guards = [g for g in for_op.walk() if isinstance(g, scf.IfOp)]
        past_end: list[loop.LoadOp] = []
        reads = _Reads(dims)
        removable = [g for g in guards
                     if _removable(g, dims, past_end if self.grow else None, reads)]
        if past_end:
            try:
                grow = plan_growth(cast(func.FuncOp, function), past_end, "loop-unguard")
            except PassFailedException:
                removable = [g for g in removable if _removable(g, dims, None, reads)]
            else:
                grow()
        for guard in removable:
            _inline(guard)
        return bool(removable)
