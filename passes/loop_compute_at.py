"""loop-compute-at: compute a producer stage inside a loop of its consumer (TVM's
`compute_at`), for just the part of its buffer that each iteration reads.

```
loop-compute-at{stage=dense at=relu.j.outer scope=local}
```

Before: `dense` (init nest + update nest) fills all of `%dense`, then `relu` reads it.
After: at the start of every iteration of `relu.j.outer`, `dense`'s nests compute the
box of `%dense` read by the code inside that iteration (bound inference, see
`loop_regions.infer_region`): `dense`'s loops keep their names and run over the box
(extents = box sizes), their variables standing for `offset + i`. With `scope=local`
the buffer itself shrinks to the box (`loop.alloc` at the start of the iteration, in
memory scope `#loop.scope<local>`) and every access is re-based by the box offset:
the accumulator tile of a register-blocked matmul.

Where the box may stick out of the buffer for some iterations (a consumer tile that
does not divide the extent), the producer's body is guarded by `scf.if` so that it only
computes elements inside the buffer. With `overcompute=true` (and a scope), it is not:
the stage computes the whole box every time, the elements past the end of the buffer
into the part of the shrunk buffer that no consumer reads (they stay guarded), so that
the nest stays perfect (a register block's reduction can be reordered and unrolled).
Its reads must then stay in bounds: a temporary the stage reads past its end (the
padded input of a conv) is grown, its producer computing the extra elements
(`loop_grow`); a read past the end of a kernel argument is refused.

Refused (PassFailedException, IR untouched): an unknown stage or loop; a stage writing
a kernel argument (use `loop-cache-write`); `at` inside the stage or before it; a
reader of the buffer outside `at`; a stage whose stores are not at one whole loop per
buffer dimension (split/fuse the producer after placing it, not before); non-affine
reads; reads whose offsets differ by a non-constant (no constant-size box); a buffer
the stage reads that is written after the stage.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import cast

from xdsl.dialects import func
from xdsl.dialects.builtin import MemRefType
from xdsl.ir import Operation
from xdsl.utils.exceptions import PassFailedException

from xweave.dialects import loop
from xweave.passes.loop_analysis import simplify_access
from xweave.passes.loop_regions import (
    PlannedLoopPass,
    Stage,
    accesses_of,
    check_inputs_stable,
    dimension_order,
    find_stage,
    guard_nest,
    infer_region,
    outside_readers,
    memory_scope,
    retarget_loop,
    spatial_loops,
    stage_anchor,
    temporary_alloc,
    unique_loop,
)
from xweave.passes.loop_grow import plan_growth
from xweave.passes.loop_utils import fold_access_maps


@dataclass(frozen=True)
class LoopComputeAtPass(PlannedLoopPass):
    """Compute stage `stage` inside loop `at` of its consumer, for the region of its
    buffer each iteration of `at` reads (bound inference).

    Options: `stage` (the producer's name), `at` (the consumer loop's name), `scope`
    (`keep`: the buffer stays as is; a memory scope such as `local`: shrink the buffer
    to the region, allocated at the start of `at`'s body in that scope), `order` (with
    a scope: the dimension order of the shrunk buffer, e.g. `0,2,3,1` to make an NCHW
    tile channel-contiguous), `overcompute` (with a scope: compute the whole box even
    where it sticks out of the buffer, unguarded), `kernel` (default: every kernel that
    has the stage).
    """

    name = "loop-compute-at"

    stage: str
    at: str
    scope: str = "keep"
    order: tuple[int, ...] = ()
    overcompute: bool = False
    kernel: str | None = None

    def plan(self, kernel: func.FuncOp) -> Callable[[], None]:
        what = f"compute-at of '{self.stage}' at '{self.at}'"
        stage = cast(Stage, find_stage(kernel, self.stage))
        at = unique_loop(kernel, self.at)
        stage_anchor(stage, at, what)
        buffer = stage.buffer
        alloc = temporary_alloc(buffer)
        if alloc is None:
            raise PassFailedException(
                f"{what}: the stage writes a kernel argument, which must be filled "
                "whole; use loop-cache-write to compute it through a local buffer")
        buffer_type = cast(MemRefType, buffer.type)
        shape = list(buffer_type.get_shape())
        readers = outside_readers(kernel, stage, what)
        for reader in readers:
            if not at.is_ancestor(reader):
                raise PassFailedException(
                    f"{what}: the buffer is also read outside '{self.at}'; attach the "
                    "stage at a loop around all its readers")
        nests = [(root, spatial_loops(stage, root, shape)) for root in stage.roots]
        check_inputs_stable(kernel, stage)
        region, _ = infer_region(readers, at, shape, what)
        new_type = None
        order = dimension_order(self.order, len(shape), what)
        if self.scope != "keep":
            new_type = MemRefType(buffer_type.get_element_type(),
                                  [region.extents[d] for d in order],
                                  memory_space=memory_scope(self.scope))
        elif self.order or self.overcompute:
            option = "order" if self.order else "overcompute"
            raise PassFailedException(f"{what}: {option} needs a scope (the buffer is kept)")

        def run() -> None:
            fixed = region.fixed_ivs
            moved: list[Operation] = []
            new_alloc = None
            if new_type is not None:
                new_alloc = loop.AllocOp(new_type)
                new_alloc.memref.name_hint = buffer.name_hint or self.stage
                moved.append(new_alloc)
            for root in stage.roots:
                root.detach()
                moved.append(root)
            block = at.body.block
            block.insert_ops_before(moved, cast(Operation, block.first_op))
            for root, loops in nests:
                for d, f in enumerate(loops):
                    retarget_loop(f, region.offsets[d], region.extents[d], fixed)
                # Out of the buffer, a nest must neither read its inputs nor write the
                # buffer; a nest writing a shrunk buffer and reading nothing (an init)
                # stays inside the shrunk buffer anyway.
                reads = any(isinstance(a, loop.LoadOp) and a.memref != buffer
                            for a in root.walk())
                if (new_type is None or reads) and not self.overcompute:
                    guard_nest(region, shape, loops)
            touched = [a for root in stage.roots for a in root.walk()
                       if isinstance(a, loop.LoadOp | loop.StoreOp)]
            if new_alloc is not None:
                for access in accesses_of(kernel, buffer):
                    access.rebase(new_alloc.memref, region.offsets, fixed)
                alloc.detach()
                alloc.erase()
                touched = list(dict.fromkeys(touched + accesses_of(at, new_alloc.memref)))
                for access in touched:
                    if access.memref is new_alloc.memref:
                        access.permute(order)
            fold_access_maps(kernel)
            for access in dict.fromkeys(touched):
                simplify_access(access, fold_dims=False)
            if self.overcompute:
                assert new_alloc is not None
                inputs = [a for root in stage.roots for a in root.walk()
                          if isinstance(a, loop.LoadOp) and a.memref is not new_alloc.memref]
                plan_growth(kernel, inputs, what)()

        return run
