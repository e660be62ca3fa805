"""loop-cache-write: compute a stage tile by tile in a local buffer, then copy each tile
to the stage's buffer (TVM's `cache_write` followed by `compute_at` of the cache).

```
loop-cache-write{stage=conv2d at="conv2d.y.outer"}
```

`at` is a loop of the stage's own (update) nest. For each iteration of `at`:

* a local buffer `%<stage>_local` (`#loop.scope<local>`) holds the box of the stage's
  buffer written inside that iteration (bound inference, `loop_regions.infer_region`);
* the stage's init nest (`<stage>_init.*`) moves to the start of `at`'s body and fills
  the local buffer (its loops keep their names and run over the box);
* the update code inside `at` accumulates into the local buffer (accesses re-based by
  the box offset);
* a write-back nest `<stage>_write.<axis>` at the end of `at`'s body copies the box to
  the stage's buffer (guarded by `scf.if` where a box at the end of a non-dividing
  tile would leave the buffer), for later epilogue fusion, vectorizing or unrolling.

`accumulate=true` caches a stage whose reduction is split around `at` (GotoBLAS-style
K blocking: `k.outer > ... > at > k.inner`): loops of the update nest enclosing `at`
may then be reduction loops (ones that do not move the box). The init nest stays
where it is and initialises the whole buffer once; instead, a copy-in nest
`<stage>_read.<axis>` at the start of `at`'s body loads the box from the buffer into
the local buffer (guarded like the write-back), so each visit of the box resumes the
partial sums the previous visit wrote back. The stores need not cover the box then.

`order=d_1,...,d_r` (a permutation of the buffer's dimensions) lays the local buffer
out in that dimension order, e.g. `order=0,2,3,1` for an NCHW conv tile vectorized
over channels: the channel axis becomes the contiguous one, as the vector loop needs.

This is how a stage writing a kernel output (the last conv2d of a kernel) gets a
register-blocked accumulator. Refused (PassFailedException, IR untouched): an unknown
stage or loop; `at` not a loop of the stage's single update nest; an access of the
buffer in that nest outside `at`; a loop enclosing `at` inside the stage that does not
move the written box by at least its size along one dimension (overlapping tiles, or,
unless `accumulate`, a reduction loop); stores that leave holes in the box; an init nest not stored at one
whole loop per dimension.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import cast

from xdsl.dialects import func
from xdsl.dialects.builtin import MemRefType
from xdsl.ir import Operation
from xdsl.ir.affine import AffineDimExpr, AffineExpr, AffineMap
from xdsl.utils.exceptions import PassFailedException

from xweave.dialects import loop
from xweave.passes.loop_analysis import simplify, simplify_access
from xweave.passes.loop_regions import (
    PlannedLoopPass,
    Stage,
    accesses_of,
    check_dense,
    check_disjoint,
    find_stage,
    guard_nest,
    infer_region,
    memory_scope,
    nest_of,
    dimension_order,
    retarget_loop,
    spatial_loops,
    stage_of,
    unique_loop,
)
from xweave.passes.loop_utils import fold_access_maps


@dataclass(frozen=True)
class LoopCacheWritePass(PlannedLoopPass):
    """Compute stage `stage` into a local buffer per iteration of its loop `at`, with
    its init inside `at` and a write-back nest `<stage>_write.*` at the end of `at`.

    Options: `stage`, `at` (a loop of the stage's update nest), `scope` (the memory
    scope of the cache, default `local`), `order` (dimension order of the cache,
    default the buffer's), `accumulate` (reduction loops may enclose `at`: the cache
    is loaded from the buffer by a `<stage>_read.*` nest and the init nest stays
    put), `kernel` (default: every kernel that has the stage).
    """

    name = "loop-cache-write"

    stage: str
    at: str
    scope: str = "local"
    order: tuple[int, ...] = ()
    accumulate: bool = False
    kernel: str | None = None

    def plan(self, kernel: func.FuncOp) -> Callable[[], None]:
        what = f"cache-write of '{self.stage}' at '{self.at}'"
        stage = cast(Stage, find_stage(kernel, self.stage))
        at = unique_loop(kernel, self.at)
        updates = [r for r in stage.update if r.is_ancestor(at)]
        if (len(stage.update) != 1 or not updates or at.name_str is None
                or stage_of(at.name_str) != self.stage):
            raise PassFailedException(
                f"{what}: '{self.at}' must be a loop of the stage's (single) update nest")
        update = updates[0]
        buffer = stage.buffer
        buffer_type = cast(MemRefType, buffer.type)
        shape = list(buffer_type.get_shape())
        accesses = accesses_of(update, buffer)
        if any(not at.is_ancestor(a) for a in accesses):
            raise PassFailedException(
                f"{what}: the stage accesses its buffer outside '{self.at}'")
        stores = [a for a in accesses if isinstance(a, loop.StoreOp)]
        region, boxes = infer_region(accesses, at, shape, what)
        inside = [f for f in region.fixed if update.is_ancestor(f)]
        if self.accumulate:
            # The copy-in makes every element of the box valid: holes are harmless, and
            # a loop that leaves the box in place just revisits the same partial sums.
            inside = [f for f in inside if _moves(region, f)]
        else:
            for access, box in zip(accesses, boxes, strict=True):
                if box is not None and access in stores:
                    check_dense(box, region, what)
        check_disjoint(region, inside, what)
        if self.accumulate:
            inits = []
            names = _init_axes(stage, shape)
        else:
            inits = [(root, spatial_loops(stage, root, shape)) for root in stage.init]
            names = inits[0][1] if inits else None
        order = dimension_order(self.order, len(shape), what)
        cache_type = MemRefType(buffer_type.get_element_type(),
                                [region.extents[d] for d in order],
                                memory_space=memory_scope(self.scope))
        axes = _axis_names(names, boxes, region, len(shape))

        def run() -> None:
            fixed = region.fixed_ivs
            cache = loop.AllocOp(cache_type)
            cache.memref.name_hint = f"{self.stage}_{self.scope.replace('.', '_')}"
            block = at.body.block
            moved: list[Operation] = [cache]
            for root, _ in inits:
                root.detach()
                moved.append(root)
            block.insert_ops_before(moved, cast(Operation, block.first_op))
            for _, loops in inits:
                for d, f in enumerate(loops):
                    retarget_loop(f, region.offsets[d], region.extents[d], fixed)
            touched = accesses_of(at, buffer)
            for access in touched:
                access.rebase(cache.memref, region.offsets, fixed)
            rank = len(shape)
            shifted = [off.replace_dims_and_symbols(
                [AffineExpr.dimension(rank + i) for i in range(len(fixed))], [])
                for off in region.offsets]
            target = AffineMap(rank + len(fixed), 0, tuple(
                AffineDimExpr(d) + shifted[d] for d in range(rank)))

            def copy_nest(kind: str) -> tuple[loop.ForOp, list[loop.LoadOp | loop.StoreOp]]:
                """cache[i] = buffer[offset + i] (`read`) or the reverse (`write`)."""
                fors = nest_of(region.extents, [f"{self.stage}_{kind}.{a}" for a in axes])
                ivs = [f.induction_var for f in fors]
                for f, a in zip(fors, axes):
                    f.induction_var.name_hint = a.replace(".", "_")
                if kind == "read":
                    value = loop.LoadOp(buffer, [*ivs, *fixed], target)
                    store = loop.StoreOp(value.result, cache.memref, ivs)
                else:
                    value = loop.LoadOp(cache.memref, ivs)
                    store = loop.StoreOp(value.result, buffer, [*ivs, *fixed], target)
                fors[-1].add_ops([value, store])
                guard_nest(region, shape, fors)
                return fors[0], [value, store]

            if self.accumulate:
                read, copies = copy_nest("read")
                block.insert_op_after(read, cache)
                touched += copies
            write, copies = copy_nest("write")
            at.add_ops([write])
            touched += copies
            for access in touched:
                if access.memref is cache.memref:
                    access.permute(order)
            fold_access_maps(kernel)
            for access in touched:
                simplify_access(access, fold_dims=False)

        return run


def _moves(region, f: loop.ForOp) -> bool:
    """Whether the box's offset depends on loop `f` (one of `region.fixed`)."""
    position = region.fixed.index(f)
    return any(position in simplify(off).used_dims() for off in region.offsets)


def _init_axes(stage: Stage, shape) -> list[loop.ForOp] | None:
    """The init nest's loop per dimension, if it still has one whole loop each."""
    if len(stage.init) != 1:
        return None
    try:
        return spatial_loops(stage, stage.init[0], shape)
    except PassFailedException:
        return None


def _axis_names(init_loops, boxes, region, rank: int) -> list[str]:
    """Names of the copy loops: the init nest's axes (`conv2d_init.y` -> `y`), or
    the base name of the loop indexing each dimension inside `at`, or `i<d>`."""
    names: list[str | None] = [None] * rank
    if init_loops:
        for d, f in enumerate(init_loops):
            names[d] = f.name_str.split(".", 1)[1] if f.name_str and "." in f.name_str else None
    else:
        box = next(b for b in boxes if b is not None)
        for d, inner in enumerate(box.inner):
            dims = [a for a in inner.terms if isinstance(a, AffineDimExpr)]
            if len(dims) == 1:
                f = box.inner_loops[dims[0].position - len(region.fixed)]
                if f.name_str and "." in f.name_str:
                    names[d] = f.name_str.split(".")[1]
    result: list[str] = []
    for d, n in enumerate(names):
        n = n or f"i{d}"
        result.append(n if n not in result else f"{n}{d}")
    return result
