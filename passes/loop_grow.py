"""Growing kernel temporaries so that reads past their end stay in bounds.

A register block whose last tile is ragged (7 output columns in tiles of 4) is best
computed whole: the rows past the end run on whatever the reads find, into
accumulators nobody writes back, and the reduction needs no guard. That is only legal
if those reads stay inside their buffers. A read past the end of a temporary computed
by a stage of the kernel (the padded input of a conv, `%pad`) is made legal by growing
the temporary: its `loop.alloc` gets the larger shape and the stage's loops over the
grown dimensions run over it, computing the extra elements too. That is safe when
every read of the stage stays in bounds on the grown ranges, under the `scf.if`
conditions around it: a padding stage reads its input only where `1 <= x < 8`, and
writes zeros elsewhere.

`loop-compute-at{overcompute=true}` and `loop-unguard{grow=true}` use this; a read past
the end of a kernel argument, before the start of a buffer, or of a temporary whose
stage cannot be grown safely is refused (PassFailedException).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import cast

from xdsl.dialects import arith, func, scf
from xdsl.dialects.builtin import IndexType, IntegerAttr, MemRefType, VectorType, i64
from xdsl.ir import Operation, SSAValue
from xdsl.ir.affine import AffineDimExpr, AffineExpr
from xdsl.utils.exceptions import PassFailedException

from xweave.dialects import loop
from xweave.passes.loop_regions import find_stage, owner_stage, spatial_loops, stage_of
from xweave.passes.loop_analysis import Interval, Linear, bounds, iv_range, simplify_expr
from xweave.passes.loop_utils import affine_of

Key = tuple[int, AffineExpr]


class Dims:
    """Every loop variable of a function as an affine dimension, with its range
    (`overrides`: other ranges for some loop variables)."""

    def __init__(self, function: Operation, overrides: dict[SSAValue, Interval] | None = None):
        ivs = [op.induction_var for op in function.walk() if isinstance(op, loop.ForOp)]
        self.dims: dict[SSAValue, int] = {v: i for i, v in enumerate(ivs)}
        overrides = overrides or {}
        self.ranges: list[Interval] = [overrides.get(v, iv_range(v)) for v in ivs]
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

    def indices(self, access: loop.LoadOp | loop.StoreOp,
                ranges: Sequence[Interval] | None = None) -> list[AffineExpr] | None:
        """The accessed element as affine expressions of the loop variables."""
        operands = [affine_of(v, self.dims) for v in access.indices]
        if any(e is None for e in operands):
            return None
        amap = access.map.data
        exprs = cast(list[AffineExpr], operands)
        return [simplify_expr(r.replace_dims_and_symbols(exprs[:amap.num_dims],
                                                          exprs[amap.num_dims:]),
                              ranges or self.ranges)
                for r in amap.results]

    def bounds(self, access: loop.LoadOp, guarded: bool = False) -> list[Interval] | None:
        """Per dimension, the first and last element `access` may read (the last one of
        a vector load included); with `guarded`, only where the `scf.if` conditions
        around it hold."""
        ranges = self.guarded_ranges(access) if guarded else self.ranges
        element = self.indices(access, ranges)
        if element is None:
            return None
        lanes = access.result.type.get_shape()[-1] if isinstance(access.result.type, VectorType) else 1
        found = [bounds(e, ranges) for e in element]
        lo, hi = found[-1]
        found[-1] = (lo, hi + lanes - 1)
        return found

    def in_bounds(self, access: loop.LoadOp) -> bool:
        """Whether `access` stays inside its buffer over the whole loop ranges."""
        found = self.bounds(access)
        shape = cast(MemRefType, access.memref.type).get_shape()
        return found is not None and all(lo >= 0 and hi <= size - 1
                                         for (lo, hi), size in zip(found, shape, strict=True))

    def guarded_ranges(self, op: Operation) -> list[Interval]:
        """The loop ranges narrowed by the conditions of the `scf.if`s whose then-branch
        holds `op` (conjunctions of comparisons of one loop variable with a constant)."""
        ranges = list(self.ranges)
        child, parent = op, op.parent_op()
        while parent is not None:
            if isinstance(parent, scf.IfOp) and parent.true_region.is_ancestor(child):
                for cond in conjuncts(parent.cond):
                    self._narrow(cond, ranges)
            child, parent = parent, parent.parent_op()
        return ranges

    def _narrow(self, cond: SSAValue, ranges: list[Interval]) -> None:
        key = self.condition(cond)
        if key is None:
            return
        predicate, expr = key
        form = Linear.of(expr)
        terms, const = form.terms, form.const
        if len(terms) != 1:
            return
        (atom, a), = terms.items()
        if not isinstance(atom, AffineDimExpr) or a == 0:
            return
        # a * x + const <pred> 0, as lo <= a * x <= hi
        lo, hi = {2: (-float("inf"), -const - 1), 3: (-float("inf"), -const),
                  4: (-const + 1, float("inf")), 5: (-const, float("inf")),
                  0: (-const, -const)}.get(predicate, (None, None))
        if lo is None:
            return
        if a < 0:
            lo, hi, a = -hi, -lo, -a
        x_lo = -(-lo // a) if lo != -float("inf") else lo
        x_hi = hi // a if hi != float("inf") else hi
        old_lo, old_hi = ranges[atom.position]
        ranges[atom.position] = (max(old_lo, x_lo), min(old_hi, x_hi))


def conjuncts(value: SSAValue) -> list[SSAValue]:
    op = value.owner
    if isinstance(op, arith.AndIOp):
        return conjuncts(op.lhs) + conjuncts(op.rhs)
    return [value]


def plan_growth(kernel: func.FuncOp, loads: Sequence[loop.LoadOp], what: str) -> Callable[[], None]:
    """A rewrite growing the temporaries `loads` read past their end, so that every
    load stays in bounds over the whole ranges of its loops; PassFailedException
    (nothing changed) if that cannot be done safely."""
    dims = Dims(kernel)
    sizes: dict[SSAValue, list[int]] = {}
    for load in loads:
        found = dims.bounds(load)
        shape = list(cast(MemRefType, load.memref.type).get_shape())
        name = load.memref.name_hint or "buffer"
        if found is None:
            raise PassFailedException(f"{what}: a read of %{name} is not affine")
        if any(lo < 0 for lo, _ in found):
            raise PassFailedException(f"{what}: a read of %{name} may run before its start")
        if all(hi < size for (_, hi), size in zip(found, shape)):
            continue
        grown = sizes.setdefault(load.memref, shape)
        for d, (_, hi) in enumerate(found):
            grown[d] = max(grown[d], int(hi) + 1)
    plans = [_plan_buffer(kernel, buffer, grown, what) for buffer, grown in sizes.items()]

    def run() -> None:
        for plan in plans:
            plan()

    return run


def _plan_buffer(kernel: func.FuncOp, buffer: SSAValue, sizes: list[int],
                 what: str) -> Callable[[], None]:
    """Grow temporary `buffer` to `sizes`, its stage computing the extra elements."""
    name = f"%{buffer.name_hint or 'buffer'}"
    alloc = buffer.owner
    buffer_type = cast(MemRefType, buffer.type)
    shape = list(buffer_type.get_shape())
    if not isinstance(alloc, loop.AllocOp):
        raise PassFailedException(
            f"{what}: reads past the end of kernel argument {name} {shape} (need {sizes}); "
            "pack or pad it first")
    stores = [u.operation for u in buffer.uses if isinstance(u.operation, loop.StoreOp)]
    if any(not isinstance(u.operation, loop.LoadOp | loop.StoreOp | loop.AllocOp)
           for u in buffer.uses):
        raise PassFailedException(f"{what}: {name} is used by an op other than loads and stores")
    stage_names = {stage_of(owner_stage(s) or "").removesuffix("_init") for s in stores}
    if len(stage_names) != 1:
        raise PassFailedException(f"{what}: {name} is not written by exactly one stage")
    stage = find_stage(kernel, stage_names.pop())
    if stage is None or stage.buffer != buffer:
        raise PassFailedException(f"{what}: {name} is not written by exactly one stage")
    nests = [spatial_loops(stage, root, shape) for root in stage.roots]
    grown = [d for d in range(len(shape)) if sizes[d] > shape[d]]
    overrides = {nest[d].induction_var: (0, sizes[d] - 1) for nest in nests for d in grown}
    dims = Dims(kernel, overrides)
    for root in stage.roots:
        for op in root.walk():
            if isinstance(op, loop.StoreOp) and op.memref != buffer:
                raise PassFailedException(
                    f"{what}: cannot grow {name}: stage '{stage.name}' writes another buffer")
            if not isinstance(op, loop.LoadOp):
                continue
            found = dims.bounds(op, guarded=True)
            limit = sizes if op.memref == buffer else cast(MemRefType, op.memref.type).get_shape()
            if found is None or any(lo < 0 or hi >= size
                                    for (lo, hi), size in zip(found, limit)):
                raise PassFailedException(
                    f"{what}: cannot grow {name} to {sizes}: stage '{stage.name}' would "
                    f"read past the end of %{op.memref.name_hint or 'a buffer'}")

    def run() -> None:
        for nest in nests:
            for d in grown:
                nest[d].properties["ub"] = IntegerAttr(sizes[d], i64)
        new = loop.AllocOp(MemRefType(buffer_type.get_element_type(), sizes,
                                      memory_space=buffer_type.memory_space),
                           alloc.alignment.value.data if alloc.alignment else None)
        new.attributes.update(alloc.attributes)
        new.memref.name_hint = buffer.name_hint
        block = alloc.parent_block()
        assert block is not None
        block.insert_op_before(new, alloc)
        buffer.replace_all_uses_with(new.memref)
        alloc.detach()
        alloc.erase()

    return run
