"""loop-defer-accumulate: start a K-blocked tile's partial sums from zero and add the
buffer's value at the write-back.

`loop-cache-write{accumulate=true}` loads a tile's partial sums from the stage's buffer
into the local cache (`<stage>_read.*`) before the reduction block, so every FMA chain
of the register block waits for those loads (from L2 or L3 once the output outgrows
the caches) before it can start. `loop-defer-accumulate{stage=matmul}` rewrites

```
<stage>_read:   cache[c] = out[o]            ->   cache[c] = 0
(updates)       cache[c] = cache[c] + v           (unchanged)
<stage>_write:  out[o] = cache[c]            ->   out[o] = out[o] + cache[c]
```

so the buffer is read when the tile is written back, after the reduction block, and
the out-of-order core overlaps those loads with the next tile's reduction. The result
is the same sum in another order: (out + v1 + v2 + ...) becomes out + (v1 + v2 + ...).

Refused (PassFailedException, IR untouched): a stage without copy-in/write-back nests;
copy nests that are not one load and one store of matching elements; an access of the
cache other than the copies and `cache[c] = cache[c] + v` updates (`arith.addf`,
`arith.addi`, or the addend of `vector.fma`) of one element each; an access of the
buffer between the copy-in and the write-back other than the copies.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, vector
from xdsl.dialects.builtin import FloatAttr, IntegerAttr, IntegerType, ModuleOp, VectorType
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import PassFailedException

from xweave.dialects import loop
from xweave.passes.loop_utils import enclosing_loops, kernels

Access = loop.LoadOp | loop.StoreOp


def _nests(block: Block, prefix: str) -> list[loop.ForOp]:
    return [op for op in block.ops if isinstance(op, loop.ForOp)
            and (op.name_str or "").startswith(prefix)]


def _copy(nest: loop.ForOp, what: str) -> tuple[loop.LoadOp, loop.StoreOp, list[loop.ForOp]]:
    """The one load and one store of a copy nest, and its loops (outer first)."""
    accesses = [op for op in nest.walk() if isinstance(op, (loop.LoadOp, loop.StoreOp))]
    loads = [a for a in accesses if isinstance(a, loop.LoadOp)]
    stores = [a for a in accesses if isinstance(a, loop.StoreOp)]
    if (len(loads) != 1 or len(stores) != 1 or stores[0].value is not loads[0].result
            or not loads[0].result.has_one_use()):
        raise PassFailedException(f"{what}: '{nest.name_str}' is not a copy nest "
                                  "(one load stored once)")
    return loads[0], stores[0], [op for op in nest.walk() if isinstance(op, loop.ForOp)]


def _same_element(a: Access, b: Access, a_ivs: list[SSAValue], b_ivs: list[SSAValue]) -> bool:
    """Whether `a` (in one nest) and `b` (in another) access the same element of the same
    buffer for corresponding iterations of the two nests."""
    if a.memref is not b.memref or a.map != b.map or len(a.indices) != len(b.indices):
        return False
    for x, y in zip(a.indices, b.indices):
        if x is y:
            continue
        if x not in a_ivs or y not in b_ivs or a_ivs.index(x) != b_ivs.index(y):
            return False
    return True


def _addend_of(update: Operation, load: loop.LoadOp) -> bool:
    """Whether `update` adds something to `load`'s value (and nothing else)."""
    if isinstance(update, (arith.AddfOp, arith.AddiOp)):
        return load.result in (update.lhs, update.rhs) and update.lhs is not update.rhs
    if isinstance(update, vector.FMAOp):
        return update.acc is load.result and load.result not in (update.lhs, update.rhs)
    return False


def _check_updates(cache: SSAValue, copies: set[Operation], what: str) -> None:
    """Every other access of `cache` is part of a `cache[c] = cache[c] + v` update."""
    for use in cache.uses:
        access = use.operation
        if access in copies:
            continue
        if not isinstance(access, (loop.LoadOp, loop.StoreOp)):
            raise PassFailedException(f"{what}: the cache is used by '{access.name}'")
        if isinstance(access, loop.LoadOp):
            users = [u.operation for u in access.result.uses]
            stores = [s.operation for s in users[0].results[0].uses] if (
                len(users) == 1 and len(users[0].results) == 1) else []
            if (len(users) != 1 or not _addend_of(users[0], access) or len(stores) != 1
                    or not isinstance(stores[0], loop.StoreOp)
                    or not _same_element(access, stores[0], [], [])):
                raise PassFailedException(f"{what}: a load of the cache is not the "
                                          "accumulator of an update cache[c] += v")
        else:
            producer = access.value.owner
            loads = [o.owner for o in producer.operands
                     if isinstance(o.owner, loop.LoadOp) and o.owner.memref is cache
                     and _addend_of(producer, o.owner)] if isinstance(producer, Operation) else []
            if (len(loads) != 1 or not access.value.has_one_use()
                    or not _same_element(loads[0], access, [], [])):
                raise PassFailedException(f"{what}: a store into the cache is not an "
                                          "update cache[c] = cache[c] + v")


def _zero(type_: Attribute) -> list[Operation]:
    """Ops computing a zero of `type_` (a float, an integer or a vector of either)."""
    element = type_.element_type if isinstance(type_, VectorType) else type_
    value = IntegerAttr(0, element) if isinstance(element, IntegerType) else FloatAttr(0.0, element)
    ops: list[Operation] = [arith.ConstantOp(value, element)]
    if isinstance(type_, VectorType):
        ops.append(vector.BroadcastOp(ops[0].results[0], type_))
    return ops


def _plan(read: loop.ForOp, stage: str) -> Callable[[], None]:
    what = f"defer-accumulate of '{stage}' at '{read.name_str}'"
    block = read.parent_block()
    assert block is not None
    ops = list(block.ops)
    writes = [w for w in _nests(block, f"{stage}_write.") if ops.index(w) > ops.index(read)]
    if not writes:
        raise PassFailedException(f"{what}: no write-back nest '{stage}_write.*' after it")
    write = writes[0]
    fill, into, read_loops = _copy(read, what)
    take, back, write_loops = _copy(write, what)
    read_ivs = [f.induction_var for f in read_loops]
    write_ivs = [f.induction_var for f in write_loops]
    buffer, cache = fill.memref, into.memref
    if ([f.extent for f in read_loops] != [f.extent for f in write_loops]
            or not _same_element(fill, back, read_ivs, write_ivs)
            or not _same_element(into, take, read_ivs, write_ivs) or buffer is cache):
        raise PassFailedException(f"{what}: the copy-in and the write-back do not copy "
                                  "the same elements")
    if not isinstance(cache.owner, loop.AllocOp) or cache.owner.parent_block() is not block:
        raise PassFailedException(f"{what}: the cache is not allocated next to the copies")
    copies: set[Operation] = {into, take}
    _check_updates(cache, copies, what)
    between = ops[ops.index(read) + 1:ops.index(write)]
    for op in between:
        for inner in op.walk():
            if isinstance(inner, (loop.LoadOp, loop.StoreOp)) and inner.memref is buffer:
                raise PassFailedException(f"{what}: the buffer is accessed between the "
                                          "copy-in and the write-back")

    def run() -> None:
        zero = _zero(fill.result.type)
        fill_block = fill.parent_block()
        assert fill_block is not None
        fill_block.insert_ops_before(zero, fill)
        fill.result.replace_all_uses_with(zero[-1].results[0])
        fill.detach()
        fill.erase()
        old = loop.LoadOp(buffer, list(back.indices), back.map, take.result.type)
        element = take.result.type
        if isinstance(element, VectorType):
            element = element.element_type
        add = (arith.AddiOp if isinstance(element, IntegerType) else arith.AddfOp)(
            old.result, take.result)
        back_block = back.parent_block()
        assert back_block is not None
        back_block.insert_ops_before([old, add], back)
        back.operands[0] = add.result

    return run


@dataclass(frozen=True)
class LoopDeferAccumulatePass(ModulePass):
    """Zero the accumulating cache of stage `stage` instead of loading it from the
    buffer, and add the buffer's value when the tile is written back."""

    name = "loop-defer-accumulate"

    stage: str
    """The stage cached by `loop-cache-write{accumulate=true}`."""
    kernel: str | None = None
    """Only rewrite this kernel (default: every kernel that has the stage)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        prefix = f"{self.stage}_read."
        reads = [f for k in kernels(op, self.kernel) for f in k.walk()
                 if isinstance(f, loop.ForOp) and (f.name_str or "").startswith(prefix)
                 and not any((e.name_str or "").startswith(prefix) for e in enclosing_loops(f))]
        if not reads:
            raise PassFailedException(
                f"defer-accumulate: no copy-in nest '{prefix}*' (is '{self.stage}' cached "
                "with loop-cache-write{accumulate=true}?)")
        plans = [_plan(r, self.stage) for r in reads]
        for run in plans:
            run()
