"""loop-rfactor: a reduction's inner loop accumulates into one partial result per lane
(TVM's `rfactor`), so that it vectorizes with vector accumulators.

`loop-rfactor{loop="softmax_sum.k.inner"}` takes a loop L (extent W) directly inside a
loop P (the rest of the reduction, e.g. `k.outer` after `loop-split{factor=W}`), whose
body ends a reduction into one element: `%acc = loop.load X[a]; %s = <combine> %acc,
%v; loop.store %s, X[a]`, the address `a` not depending on L or P (a row's sum, max,
...). It becomes

```
%part = loop.alloc : memref<W x T, #loop.scope<local>>
loop.for "<L>.rf_init" %l = 0 to W { loop.store <identity>, %part[%l] }
P { L { ... %acc = loop.load %part[%l]; %s = <combine> %acc, %v; loop.store %s, %part[%l] } }
loop.for "<L>.rf" %l = 0 to W { X[a] = <combine> X[a], %part[%l] }
```

L now writes a different element per iteration, so `loop-vectorize` turns it into
vector operations on a register of partial results (several, with W a multiple of the
vector width: independent chains), and `<L>.rf` into one horizontal reduction per
row. The sum is reassociated (W partial sums, as every vectorized library reduces);
max and min are unchanged. The combine may sit under guards (a non-dividing split's
`scf.if`). Combines: addf, mulf, maximumf, minimumf, maxnumf, minnumf.

Refused (PassFailedException, IR untouched): no loop of that name; a loop whose parent
is not a loop; a body without exactly one such reduction, or one whose buffer is
accessed elsewhere in P, or whose address depends on L or P.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith
from xdsl.dialects.builtin import FloatAttr, MemRefType, ModuleOp
from xdsl.ir import Block, Operation, SSAValue
from xdsl.ir.affine import AffineDimExpr, AffineMap
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import PassFailedException

from xweave.dialects import loop
from xweave.passes.loop_utils import find_loops

_IDENTITY: dict[type[Operation], float] = {
    arith.AddfOp: 0.0,
    arith.MulfOp: 1.0,
    arith.MaximumfOp: float("-inf"),
    arith.MaxnumfOp: float("-inf"),
    arith.MinimumfOp: float("inf"),
    arith.MinnumfOp: float("inf"),
}


def _inside(value: SSAValue, op: Operation) -> bool:
    """Whether `value` is defined inside `op` (by an op or as a block argument)."""
    owner = value.owner
    current = owner.parent_op() if isinstance(owner, Block) else owner
    while current is not None:
        if current is op:
            return True
        current = current.parent_op()
    return False


def _reduction(inner: loop.ForOp, outer: loop.ForOp) -> tuple[loop.LoadOp, Operation, loop.StoreOp]:
    """The load, combine and store of the reduction `inner` ends in (or a refusal)."""
    stores = [op for op in inner.walk() if isinstance(op, loop.StoreOp)
              and not any(_inside(v, outer) for v in op.indices)]
    if len(stores) != 1:
        raise PassFailedException(
            f"its body has {len(stores)} stores to an address not depending on the "
            "reduction loops (expected one reduction)")
    store = stores[0]
    combine = store.value.owner
    if not isinstance(combine, Operation) or type(combine) not in _IDENTITY:
        raise PassFailedException(
            f"the value stored to %{store.memref.name_hint or 'a buffer'} is not a "
            f"combine of {', '.join(sorted(t.name for t in _IDENTITY))}")
    for acc in combine.operands:
        load = acc.owner
        if (isinstance(load, loop.LoadOp) and load.memref is store.memref
                and load.map.data == store.map.data and list(load.indices) == list(store.indices)
                and load.vector_type is None and store.value.type == load.result.type
                and sum(1 for _ in acc.uses) == 1 and sum(1 for _ in combine.results[0].uses) == 1):
            others = [op for op in outer.walk() if isinstance(op, loop.LoadOp | loop.StoreOp)
                      and op.memref is store.memref and op not in (load, store)]
            if others:
                raise PassFailedException(
                    f"%{store.memref.name_hint or 'its buffer'} is accessed elsewhere in "
                    f"'{outer.name_str}'")
            return load, combine, store
    raise PassFailedException("the combine does not read the element it stores")


def rfactor(inner: loop.ForOp) -> None:
    """Rewrite the reduction ending in `inner` as described in the module docstring."""
    outer = inner.parent_op()
    if not isinstance(outer, loop.ForOp):
        raise PassFailedException("it is not directly inside another loop")
    load, combine, store = _reduction(inner, outer)
    element = load.result.type
    width = inner.extent
    name = inner.name_str or "rfactor"
    part = loop.AllocOp(MemRefType(element, [width], memory_space=loop.ScopeAttr("local")))
    part.memref.name_hint = f"{store.memref.name_hint or 'acc'}_part"
    lane = AffineMap(1, 0, (AffineDimExpr(0),))

    init = loop.ForOp(0, width, name=f"{name}.rf_init")
    identity = arith.ConstantOp(FloatAttr(_IDENTITY[type(combine)], element))
    init.add_ops([identity, loop.StoreOp(identity, part, [init.induction_var], lane)])

    final = loop.ForOp(0, width, name=f"{name}.rf")
    acc = load.clone()
    partial = loop.LoadOp(part, [final.induction_var], lane)
    lane_value = next(v for v in combine.operands if v is not load.result)
    total = combine.clone(value_mapper={load.result: acc.result, lane_value: partial.result})
    final.add_ops([acc, partial, total, store.clone(value_mapper={store.value: total.results[0]})])

    iv = inner.induction_var
    new_load = loop.LoadOp(part, [iv], lane)
    load.parent_block().insert_op_before(new_load, load)
    load.result.replace_all_uses_with(new_load.result)
    load.detach()
    load.erase()
    store.parent_block().insert_op_before(loop.StoreOp(store.value, part, [iv], lane), store)
    store.detach()
    store.erase()

    block = outer.parent_block()
    assert block is not None
    block.insert_ops_before([part, init], outer)
    block.insert_op_after(final, outer)


@dataclass(frozen=True)
class LoopRfactorPass(ModulePass):
    """Make the reduction ending in loop `loop` accumulate one partial result per
    iteration of it (see the module docstring)."""

    name = "loop-rfactor"

    loop: str
    kernel: str | None = None

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        loops = find_loops(op, self.loop, self.kernel, self.name)
        try:
            for for_op in loops:  # check them all before changing any
                outer = for_op.parent_op()
                if not isinstance(outer, loop.ForOp):
                    raise PassFailedException("it is not directly inside another loop")
                _reduction(for_op, outer)
        except PassFailedException as e:
            raise PassFailedException(f"loop-rfactor: cannot rfactor loop '{self.loop}': {e}") \
                from None
        for for_op in loops:
            rfactor(for_op)
