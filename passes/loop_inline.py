"""loop-inline: substitute an injective stage into its consumers (TVM's `compute_inline`).

```
loop-inline{stage=bias_add}
```

Every `loop.load %bias_add[e_0, ..., e_n]` of a consumer is replaced by the body of
`bias_add`'s nest evaluated at `i_d = e_d` (the store's map is inverted: the stage
stores `%bias_add[i_0, ..., i_n]` at one whole loop per dimension, in any order). The
stage's nest and its `loop.alloc` are then erased. A conditional in the stage (the
`scf.if` of a padding stage) moves into the consumer with the rest of the body, so the
padded read of a convolution becomes a guarded read of its input.

Refused (PassFailedException, IR untouched): an unknown stage; a reduction (an init
nest, or a loop that does not index the stored element); a stage writing a kernel
argument (it must stay materialized); a nest that is not perfect with the whole body
in the innermost loop; a store map that is not one whole loop per dimension; vector
loads of the buffer; a value the body uses that is not visible at a consumer; a buffer
the stage reads that is written after it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import cast

from xdsl.dialects import func
from xdsl.dialects.builtin import MemRefType
from xdsl.ir import Block, Operation, SSAValue
from xdsl.utils.exceptions import PassFailedException

from xweave.dialects import loop
from xweave.passes.loop_analysis import simplify_access
from xweave.passes.loop_regions import (
    PlannedLoopPass,
    Stage,
    check_inputs_stable,
    dominates,
    find_stage,
    outside_readers,
    spatial_loops,
    temporary_alloc,
)
from xweave.passes.loop_utils import body_ops, fold_access_maps, materialize, perfect_nest


@dataclass(frozen=True)
class LoopInlinePass(PlannedLoopPass):
    """Inline the injective stage `stage` into every load of its buffer, then erase it.

    Options: `stage` (the stage's name), `kernel` (default: every kernel that has the
    stage).
    """

    name = "loop-inline"

    stage: str
    kernel: str | None = None

    def plan(self, kernel: func.FuncOp) -> Callable[[], None]:
        what = f"inline of '{self.stage}'"
        stage = cast(Stage, find_stage(kernel, self.stage))
        if stage.init or len(stage.roots) != 1:
            raise PassFailedException(
                f"{what}: the stage is a reduction (it has an init nest) or has several "
                "nests; only injective stages can be inlined")
        root = stage.roots[0]
        buffer = stage.buffer
        alloc = temporary_alloc(buffer)
        if alloc is None:
            raise PassFailedException(f"{what}: the stage writes a kernel argument, "
                                      "which must stay materialized")
        shape = list(cast(MemRefType, buffer.type).get_shape())
        nest = perfect_nest(root)
        innermost = nest[-1]
        body = body_ops(innermost)
        if any(isinstance(o, loop.ForOp) for o in body):
            raise PassFailedException(f"{what}: the nest is not perfect")
        stores = [o for o in innermost.walk() if isinstance(o, loop.StoreOp)]
        if len(stage.stores) != 1 or stores != stage.stores or stores[0] not in body:
            raise PassFailedException(
                f"{what}: the stage must store its element once, in the innermost "
                "body, and write nothing else")
        store = stores[0]
        loops = spatial_loops(stage, root, shape)
        if set(loops) != set(nest):
            raise PassFailedException(
                f"{what}: a loop of the stage does not index the stored element (a "
                "reduction?); only injective stages can be inlined")
        readers = outside_readers(kernel, stage, what)
        for reader in readers:
            if reader.vector_type is not None:
                raise PassFailedException(f"{what}: a consumer reads the buffer with a "
                                          "vector load; inline before vectorizing")
        ivs = {f.induction_var for f in nest}
        external = {v for o in body for inner in o.walk() for v in inner.operands
                    if v not in ivs and not _defined_inside(v, root)}
        for reader in readers:
            for value in external:
                if not dominates(value, reader):
                    raise PassFailedException(
                        f"{what}: a value the stage uses is not visible at a consumer")
        check_inputs_stable(kernel, stage)
        computed = [o for o in body if o is not store]

        def run() -> None:
            touched: list[Operation] = []
            for reader in readers:
                assert isinstance(reader, loop.LoadOp)
                operands = list(reader.indices)
                mapping: dict[SSAValue, SSAValue] = {}
                new_ops: list[Operation] = []
                for f, expr in zip(loops, reader.map.data.results):
                    ops, value = materialize(expr, operands)
                    new_ops += ops
                    mapping[f.induction_var] = value
                for o in computed:
                    clone = o.clone(value_mapper=mapping)
                    new_ops.append(clone)
                    touched += [a for a in clone.walk()
                                if isinstance(a, loop.LoadOp | loop.StoreOp)]
                cast(Block, reader.parent_block()).insert_ops_before(new_ops, reader)
                reader.result.replace_all_uses_with(mapping.get(store.value, store.value))
                reader.detach()
                reader.erase()
            root.detach()
            root.erase()
            alloc.detach()
            alloc.erase()
            fold_access_maps(kernel)
            for access in touched:
                if access.parent is not None:
                    simplify_access(access, fold_dims=False)

        return run


def _defined_inside(value: SSAValue, root: Operation) -> bool:
    """Whether `value` is defined by an op or block inside `root`."""
    return root.is_ancestor(value.owner)
