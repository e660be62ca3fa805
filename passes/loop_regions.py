"""Stages, access regions and bound inference: the analysis behind the placement passes.

`loop-inline`, `loop-compute-at`, `loop-cache-write` and `loop-pack` share it:

* **stages** (`find_stage`): the top-level nests of a kernel whose loops are named
  `<stage>.*` (and `<stage>_init.*`, a reduction's init nest), writing one buffer;
* **bound inference** (`infer_region`, over `loop_analysis`'s linear forms): the box of a buffer touched by the accesses
  inside one iteration of a loop `at`: the loops around `at` (and `at` itself) are
  fixed, the ones inside it range over their whole domain. Each dimension's region is
  `[offset, offset + extent)` with `offset` an affine function of the fixed loops and
  `extent` a constant, as TVM's InferBound computes it for `compute_at`;
* **rewriting onto a region**: a stage's loops re-targeted to the region
  (`retarget_loop`), accesses re-based into a smaller buffer (`loop.LoadOp.rebase`),
  `scf.if` guards where a region may stick out of its buffer (`guard_nest`);
* **all-or-nothing application** (`PlannedLoopPass`, `restore_on_failure`): a pass
  validates every kernel before touching any, and a failure midway puts the original
  kernels back.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import cast

from xdsl.context import Context
from xdsl.dialects import arith, func, scf
from xdsl.dialects.builtin import (
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    ModuleOp,
    i1,
    i64,
)
from xdsl.ir import Block, BlockArgument, Operation, OpResult, SSAValue
from xdsl.ir.affine import AffineConstantExpr, AffineDimExpr, AffineExpr
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import PassFailedException, VerifyException

from xweave.dialects import loop
from xweave.passes.loop_analysis import Linear, loop_range, simplify
from xweave.passes.loop_utils import (
    affine_of,
    enclosing_loops,
    kernels,
    loops_named,
    materialize,
    walk_list,
)

Access = loop.LoadOp | loop.StoreOp

# --- stages ----------------------------------------------------------------------------


def stage_of(loop_name: str) -> str:
    """The stage a loop name belongs to: `conv2d.y.outer` -> `conv2d`."""
    return loop_name.split(".", 1)[0]


def owner_stage(op: Operation) -> str | None:
    """The stage of the innermost named loop around `op` (or of `op` itself)."""
    current: Operation | None = op
    while current is not None:
        if isinstance(current, loop.ForOp) and current.name_str is not None:
            return stage_of(current.name_str)
        current = current.parent_op()
    return None


@dataclass
class Stage:
    """The nests of one stage: `init` nests (`<name>_init.*`), then update nests."""

    name: str
    roots: list[loop.ForOp]
    """Every root nest, in program order."""
    buffer: SSAValue
    """The buffer the stage writes."""
    stores: list[loop.StoreOp]
    """The stores of the stage (to `buffer`)."""

    @property
    def init(self) -> list[loop.ForOp]:
        return [r for r in self.roots if stage_of(r.name_str or "") == f"{self.name}_init"]

    @property
    def update(self) -> list[loop.ForOp]:
        return [r for r in self.roots if stage_of(r.name_str or "") == self.name]

    @property
    def block(self) -> Block:
        return cast(Block, self.roots[0].parent_block())

    def contains(self, op: Operation) -> bool:
        """Whether `op` is inside one of the stage's nests."""
        return any(root.is_ancestor(op) for root in self.roots)


def find_stage(kernel: func.FuncOp, name: str) -> Stage | None:
    """The stage `name` of `kernel`, or None if no loop of the kernel is named `name.*`."""
    names = (name, f"{name}_init")

    def is_stage_loop(op: Operation) -> bool:
        return (isinstance(op, loop.ForOp) and op.name_str is not None
                and stage_of(op.name_str) in names)

    roots = [op for op in walk_list(kernel) if is_stage_loop(op)
             and not any(is_stage_loop(outer) for outer in enclosing_loops(op))]
    roots = cast(list[loop.ForOp], roots)
    if not roots:
        return None
    if len({id(r.parent_block()) for r in roots}) != 1:
        raise PassFailedException(
            f"the nests of stage '{name}' are not in the same block; the placement "
            "passes need them side by side"
        )
    stores = [op for root in roots for op in walk_list(root)
              if isinstance(op, loop.StoreOp) and owner_stage(op) in names]
    buffers = list(dict.fromkeys(s.memref for s in stores))
    if len(buffers) != 1:
        what = "no buffer" if not buffers else f"{len(buffers)} buffers"
        raise PassFailedException(f"stage '{name}' writes {what}; expected exactly one")
    return Stage(name, roots, buffers[0], cast(list[loop.StoreOp], stores))


# --- finding what a pass works on ------------------------------------------------------


def unique_loop(kernel: func.FuncOp, name: str) -> loop.ForOp:
    """The one loop of `kernel` named `name`."""
    found = loops_named(kernel, name)
    if len(found) != 1:
        what = "no loop" if not found else f"{len(found)} loops"
        raise PassFailedException(f"{what} named '{name}' in kernel "
                                  f"'{kernel.sym_name.data}'; expected exactly one")
    return found[0]


def stage_kernels(module: ModuleOp, stage: str, kernel: str | None) -> list[func.FuncOp]:
    """The kernels (all, or just `kernel`) that have a stage named `stage`."""
    found = [k for k in kernels(module, kernel) if find_stage(k, stage) is not None]
    if not found:
        where = f"kernel '{kernel}'" if kernel else "any kernel"
        raise PassFailedException(f"no stage '{stage}' (no loop named '{stage}.*') in {where}")
    return found


def memory_scope(scope: str) -> loop.ScopeAttr:
    """The `#loop.scope<scope>` attribute, or a PassFailedException."""
    try:
        return loop.ScopeAttr(scope)
    except VerifyException as error:
        raise PassFailedException(str(error)) from error


def check_inputs_stable(kernel: func.FuncOp, stage: Stage) -> None:
    """Refuse if a buffer the stage reads is written after the stage's nests: moving the
    stage later (or inlining it) would then read different values."""
    reads = {op.memref for root in stage.roots for op in walk_list(root)
             if isinstance(op, loop.LoadOp) and op.memref != stage.buffer}
    ops = walk_list(kernel)
    start = ops.index(stage.roots[0])
    for op in ops[start:]:
        if isinstance(op, loop.StoreOp) and op.memref in reads and not stage.contains(op):
            raise PassFailedException(
                f"stage '{stage.name}' reads a buffer that is written after it; moving "
                "the stage would change what it reads")


def outside_readers(kernel: func.FuncOp, stage: Stage, what: str) -> list[loop.LoadOp]:
    """The loads of the stage's temporary buffer outside the stage; an error if the
    buffer has another use, or is also written outside the stage."""
    alloc = temporary_alloc(stage.buffer)
    for use in stage.buffer.uses:
        user = use.operation
        if user is not alloc and not isinstance(user, loop.LoadOp | loop.StoreOp):
            raise PassFailedException(f"{what}: the buffer is used by {user.name}")
    readers = [a for a in accesses_of(kernel, stage.buffer) if not stage.contains(a)]
    if any(isinstance(reader, loop.StoreOp) for reader in readers):
        raise PassFailedException(f"{what}: the buffer is also written outside the stage")
    return cast(list[loop.LoadOp], readers)


def stage_anchor(stage: Stage, at: loop.ForOp, what: str) -> Operation:
    """The op of the stage's block that holds `at`, which must follow the stage."""
    if stage.contains(at):
        raise PassFailedException(f"{what}: '{at.name_str}' is a loop of the stage itself")
    anchor = stage.block.find_ancestor_op_in_block(at)
    if anchor is None or not all(r.is_before_in_block(anchor) for r in stage.roots):
        raise PassFailedException(
            f"{what}: '{at.name_str}' must come after the stage's nests, in the block "
            "that holds them or nested in an op that follows them")
    return anchor


def temporary_alloc(buffer: SSAValue) -> loop.AllocOp | None:
    """The `loop.alloc` of `buffer`, if it is a temporary (not a kernel argument)."""
    return buffer.owner if isinstance(buffer.owner, loop.AllocOp) else None


def accesses_of(root: Operation, buffer: SSAValue) -> list[Access]:
    """Every load and store of `buffer` under `root`."""
    return [op for op in walk_list(root) if isinstance(op, Access) and op.memref == buffer]


def dominates(value: SSAValue, user: Operation) -> bool:
    """Whether `value` is defined where `user` (in a nested region, maybe) can use it."""
    if isinstance(value, BlockArgument):
        return value.block.is_ancestor(user)
    assert isinstance(value, OpResult)
    block = value.op.parent_block()
    if block is None:
        return False
    ancestor = block.find_ancestor_op_in_block(user)
    return ancestor is not None and ancestor is not value.op and value.op.is_before_in_block(ancestor)


def loop_of(value: SSAValue) -> loop.ForOp | None:
    """The loop whose induction variable `value` is."""
    if isinstance(value, BlockArgument):
        parent = value.block.parent_op()
        if isinstance(parent, loop.ForOp):
            return parent
    return None


def dimension_order(order: Sequence[int], rank: int, what: str) -> list[int]:
    """The `order` option of a pass creating a buffer (identity if empty), checked to be
    a permutation of `rank` dimensions."""
    result = list(order) or list(range(rank))
    if sorted(result) != list(range(rank)):
        raise PassFailedException(f"{what}: order {tuple(order)} is not a permutation of "
                                  f"the {rank} dimensions of the buffer")
    return result


def access_exprs(op: Access) -> tuple[list[loop.ForOp], list[AffineExpr]] | None:
    """The loops around `op` (outermost first) and its indices as affine expressions
    of their induction variables; None if an index is not affine in them."""
    loops = enclosing_loops(op)
    dims = {f.induction_var: i for i, f in enumerate(loops)}
    exprs = [affine_of(v, dims) for v in op.indices]
    if any(e is None for e in exprs):
        return None
    amap = op.map.data
    composed = amap.replace_dims_and_symbols(cast(list[AffineExpr], exprs), [], len(loops), 0)
    return loops, list(composed.results)


# --- bound inference -------------------------------------------------------------------


@dataclass
class BufferRegion:
    """The part of a buffer touched in one iteration of `fixed[-1]`: per dimension,
    `[offsets[d], offsets[d] + extents[d])`, `offsets` affine in the `fixed` loops."""

    fixed: list[loop.ForOp]
    """The attach loop's enclosing loops and itself, outermost first."""
    offsets: list[AffineExpr]
    extents: list[int]
    guard_low: list[bool]
    """Per dimension: whether `offset + i` may be negative for some iteration."""
    guard_high: list[bool]
    """Per dimension: whether `offset + i` may exceed the buffer for some iteration."""

    @property
    def fixed_ivs(self) -> list[SSAValue]:
        return [f.induction_var for f in self.fixed]


@dataclass
class _AccessBox:
    """One access's box: per dimension the fixed part (no constant) and [lo, hi]."""

    fixed_parts: list[Linear]
    bounds: list[tuple[int, int]]
    inner: list[Linear]
    inner_loops: list[loop.ForOp]
    lanes: int
    """Elements per access along the last dimension (a vector's length, else 1)."""


def _access_box(op: Access, at: loop.ForOp, what: str) -> _AccessBox | None:
    """The box `op` touches in one iteration of `at` (None if it never executes)."""
    found = access_exprs(op)
    if found is None:
        raise PassFailedException(f"{what}: an index of {op.name} is not affine in the "
                                  "loop variables; cannot infer its region")
    loops, exprs = found
    n_fixed = loops.index(at) + 1
    fixed_dims = set(range(n_fixed))
    ranges: dict[int, tuple[int, int]] = {}
    for i, f in enumerate(loops[n_fixed:], n_fixed):
        r = loop_range(f)
        if r is None:
            return None
        ranges[i] = r
    vector = op.vector_type
    lanes = vector.get_shape()[0] if vector is not None else 1
    all_ranges = dict(ranges)
    for i, f in enumerate(loops[:n_fixed]):
        if (r := loop_range(f)) is not None:
            all_ranges[i] = r
    fixed_parts, bounds, inners = [], [], []
    for d, e in enumerate(exprs):
        parts = simplify(e, all_ranges, fold_dims=False).split(fixed_dims)
        if parts is None:
            raise PassFailedException(
                f"{what}: index {e} mixes loops around and inside '{at.name_str}' in a "
                "non-linear term; cannot infer its region")
        fixed_part, inner = parts
        lo, hi = inner.bounds(ranges)
        if math.isinf(lo) or math.isinf(hi):
            raise PassFailedException(f"{what}: cannot bound index {e} inside "
                                      f"'{at.name_str}'")
        if d == len(exprs) - 1:
            hi += lanes - 1
        const = fixed_part.const
        fixed_parts.append(Linear(fixed_part.terms))
        bounds.append((const + int(lo), const + int(hi)))
        inners.append(inner)
    return _AccessBox(fixed_parts, bounds, inners, loops[n_fixed:], lanes)


def infer_region(accesses: Sequence[Access], at: loop.ForOp, shape: Sequence[int],
                 what: str, clip: bool = True
                 ) -> tuple[BufferRegion, list[_AccessBox | None]]:
    """The region of a buffer of `shape` touched by `accesses` (all inside `at`) in one
    iteration of `at`, and each access's box (None if it never runs). A dimension
    whose offset is constant is clipped to the buffer; one whose offset varies is
    flagged for guards where it may leave the buffer."""
    fixed = enclosing_loops(at) + [at]
    all_boxes = [_access_box(op, at, what) for op in accesses]
    boxes = [b for b in all_boxes if b is not None]
    if not boxes:
        raise PassFailedException(f"{what}: no access of the buffer runs inside "
                                  f"'{at.name_str}'")
    fixed_ranges = {i: r for i, f in enumerate(fixed) if (r := loop_range(f)) is not None}
    offsets, extents, low, high = [], [], [], []
    for d, size in enumerate(shape):
        part = boxes[0].fixed_parts[d]
        for box in boxes[1:]:
            if box.fixed_parts[d].terms != part.terms:
                raise PassFailedException(
                    f"{what}: the accesses inside '{at.name_str}' read dimension {d} at "
                    f"offsets {part.expr()} and {box.fixed_parts[d].expr()}, which differ "
                    "by a non-constant; their union is not a box of constant size")
        lo = min(b.bounds[d][0] for b in boxes)
        hi = max(b.bounds[d][1] for b in boxes)
        if clip and part.is_constant:
            lo, hi = max(lo, 0), min(hi, size - 1)
            if lo > hi:
                raise PassFailedException(f"{what}: the region of dimension {d} lies "
                                          "outside the buffer")
        offset = part + Linear(const=lo)
        extent = hi - lo + 1
        span = offset.bounds(fixed_ranges)  # unbounded only if the code never runs
        offsets.append(offset.expr())
        extents.append(extent)
        low.append(span[0] < 0)
        high.append(span[1] + extent > size)
    return BufferRegion(fixed, offsets, extents, low, high), all_boxes


def check_dense(box: _AccessBox, region: BufferRegion, what: str) -> None:
    """Require the access of `box` to write every element of `region` (no holes), so
    copying the whole region back never copies values it did not compute."""
    n_fixed = len(region.fixed)
    seen: set[int] = set()
    for d, inner in enumerate(box.inner):
        steps = []
        for atom, c in inner.terms.items():
            if not isinstance(atom, AffineDimExpr) or atom.position in seen:
                raise PassFailedException(f"{what}: the stores do not cover their region "
                                          "densely (a non-linear or repeated index)")
            seen.add(atom.position)
            f = box.inner_loops[atom.position - n_fixed]
            steps.append((abs(c) * f.step.value.data, f.extent))
        stride = box.lanes if d == len(box.inner) - 1 else 1
        for step, trips in sorted(steps):
            if step != stride:
                raise PassFailedException(f"{what}: the stores leave holes in dimension "
                                          f"{d} of their region (stride {step})")
            stride *= trips
        region_lo = simplify(region.offsets[d]).const
        region_hi = region_lo + region.extents[d] - 1
        lo, hi = box.bounds[d]
        if lo > region_lo or hi < region_hi:
            raise PassFailedException(f"{what}: a store does not cover dimension {d} of "
                                      "the region written inside the attach loop")


def check_disjoint(region: BufferRegion, loops: Sequence[loop.ForOp], what: str) -> None:
    """Require distinct iterations of `loops` (some of `region.fixed`) to touch disjoint
    regions: each loop steps one dimension's offset by at least the region's extent
    (mixed radix), so a per-iteration copy never overwrites another iteration's part."""
    position = {f: i for i, f in enumerate(region.fixed)}
    per_dim: dict[int, list[tuple[int, int]]] = {}
    for f in loops:
        if f.extent <= 1:
            continue
        uses = []
        for d, off in enumerate(region.offsets):
            lin = simplify(off)
            for atom, c in lin.terms.items():
                if position[f] in atom.used_dims():
                    if not isinstance(atom, AffineDimExpr):
                        raise PassFailedException(
                            f"{what}: '{f.name_str}' moves the region non-linearly")
                    uses.append((d, abs(c) * f.step.value.data))
        if len(uses) != 1:
            raise PassFailedException(
                f"{what}: '{f.name_str}' encloses the attach point but "
                + ("does not move the written region (is it a reduction loop?)"
                   if not uses else "moves the region along several dimensions"))
        d, step = uses[0]
        per_dim.setdefault(d, []).append((step, f.extent))
    for d, steps in per_dim.items():
        need = region.extents[d]
        for step, trips in sorted(steps):
            if step < need:
                raise PassFailedException(
                    f"{what}: consecutive iterations of the loops around the attach "
                    f"point write overlapping regions along dimension {d}")
            need = step * trips


# --- rewriting stage loops onto a region ------------------------------------------------


def spatial_loops(stage: Stage, root: loop.ForOp, shape: Sequence[int]) -> list[loop.ForOp]:
    """The loop of nest `root` iterating over each dimension of the stage's buffer.

    The stage's stores in the nest must write `buffer[i_0, ..., i_n]` for distinct loops
    `i_d` of the stage running over the whole dimension `[0, shape[d])` with step 1.
    """
    stores = [s for s in stage.stores if root.is_ancestor(s)]
    found: list[loop.ForOp] | None = None
    for store in stores:
        loops: list[loop.ForOp] = []
        exprs = access_exprs(store)
        if exprs is None:
            raise PassFailedException(f"stage '{stage.name}': a store index is not affine")
        encl, results = exprs
        for d, e in enumerate(results):
            f = encl[e.position] if isinstance(e, AffineDimExpr) else None
            if (f is None or f in loops or not root.is_ancestor(f) or f.lb.value.data != 0
                    or f.step.value.data != 1 or f.ub.value.data != shape[d]):
                raise PassFailedException(
                    f"stage '{stage.name}' must store to its buffer at one whole, unsplit "
                    f"loop per dimension (dimension {d} is stored at {e}); schedule the "
                    "placement before splitting or fusing the stage's own loops")
            loops.append(f)
        if found is not None and found != loops:
            raise PassFailedException(f"stage '{stage.name}' stores to its buffer at "
                                      "different loops in one nest")
        found = loops
    if found is None:
        raise PassFailedException(f"a nest of stage '{stage.name}' stores nothing")
    return found


def retarget_loop(for_op: loop.ForOp, offset: AffineExpr, extent: int,
                  fixed: Sequence[SSAValue]) -> None:
    """Make `for_op` run over `[0, extent)`, its variable standing for `offset + i`
    (`offset` affine in `fixed`): uses see the materialized `offset + i`."""
    iv = for_op.induction_var
    for_op.properties["lb"] = IntegerAttr(0, i64)
    for_op.properties["ub"] = IntegerAttr(extent, i64)
    if isinstance(offset, AffineConstantExpr) and offset.value == 0:
        return
    expr = offset.replace_dims_and_symbols(
        [AffineExpr.dimension(i + 1) for i in range(len(fixed))], []) + AffineExpr.dimension(0)
    ops, value = materialize(expr, [iv, *fixed])
    block = for_op.body.block
    block.insert_ops_before(ops, cast(Operation, block.first_op))
    created = set(ops)
    iv.replace_uses_with_if(value, lambda use: use.operation not in created)


def bounds_condition(indices: Sequence[tuple[AffineExpr, int, bool, bool]],
                     operands: Sequence[SSAValue]) -> tuple[list[Operation], SSAValue]:
    """Ops computing `AND(0 <= e (if low), e < size (if high))` over `indices`."""
    ops: list[Operation] = []
    cond: SSAValue | None = None
    for expr, size, low, high in indices:
        expr_ops, value = materialize(expr, list(operands))
        ops += expr_ops
        checks = []
        if low:
            zero = arith.ConstantOp(IntegerAttr(0, IndexType()))
            checks.append(arith.CmpiOp(value, zero, "sge"))
            ops.append(zero)
        if high:
            bound = arith.ConstantOp(IntegerAttr(size, IndexType()))
            checks.append(arith.CmpiOp(value, bound, "slt"))
            ops.append(bound)
        for check in checks:
            ops.append(check)
            if cond is None:
                cond = check.result
            else:
                both = arith.AndIOp(cond, check.result)
                ops.append(both)
                cond = both.result
    if cond is None:
        true = arith.ConstantOp(IntegerAttr(1, i1))
        ops.append(true)
        cond = true.result
    return ops, cond


def guard_body(for_op: loop.ForOp, cond_ops: Sequence[Operation], cond: SSAValue) -> None:
    """Wrap the body of `for_op` in `scf.if cond`, computing `cond` first."""
    block = for_op.body.block
    body = [op for op in block.ops if not isinstance(op, loop.YieldOp)]
    for op in body:
        op.detach()
    if_op = scf.IfOp(cond, [], [*body, scf.YieldOp()])
    for_op.add_ops([*cond_ops, if_op])


def guard_nest(region: BufferRegion, shape: Sequence[int], loops: Sequence[loop.ForOp]) -> None:
    """Guard the nest whose loop `loops[d]` runs over dimension `d` of `region` (already
    retargeted) so that only in-buffer elements are computed."""
    dims = [d for d in range(len(shape)) if region.guard_low[d] or region.guard_high[d]]
    if not dims:
        return
    innermost = max((loops[d] for d in dims), key=lambda f: len(enclosing_loops(f)))
    fixed = region.fixed_ivs
    operands = [*fixed, *(loops[d].induction_var for d in dims)]
    indices = []
    for k, d in enumerate(dims):
        expr = region.offsets[d] + AffineExpr.dimension(len(fixed) + k)
        indices.append((expr, shape[d], region.guard_low[d], region.guard_high[d]))
    ops, cond = bounds_condition(indices, operands)
    guard_body(innermost, ops, cond)


def nest_of(extents: Sequence[int], names: Sequence[str]) -> list[loop.ForOp]:
    """A perfect nest of fresh loops, outermost first (fill `nest[-1]`)."""
    fors = [loop.ForOp(0, e, name=n) for e, n in zip(extents, names)]
    for outer, inner in zip(fors, fors[1:]):
        outer.add_ops([inner])
    return fors


# --- all-or-nothing application ----------------------------------------------------------


@contextmanager
def restore_on_failure(funcs: Sequence[func.FuncOp]) -> Iterator[None]:
    """Run a rewrite of `funcs`; if it raises (or leaves invalid IR), put the
    original functions back and raise a PassFailedException."""
    saved = [k.clone() for k in funcs]
    try:
        yield
        for k in funcs:
            k.verify()
    except Exception as error:
        for k, original in zip(funcs, saved):
            block = cast(Block, k.parent_block())
            block.insert_op_before(original, k)
            k.detach()
            k.erase(safe_erase=False)
        if isinstance(error, PassFailedException):
            raise
        raise PassFailedException(f"internal error, IR left unchanged: {error}") from error


class PlannedLoopPass(ModulePass, ABC):
    """A loop pass that plans its rewrite of every kernel it targets before changing
    any (`plan` validates one kernel and returns the rewrite), then runs the rewrites
    under `restore_on_failure`. By default the targets are the kernels that have the
    stage named by the pass's `stage` option (all, or its `kernel` option's)."""

    def targets(self, module: ModuleOp) -> list[func.FuncOp]:
        return stage_kernels(module, getattr(self, "stage"), getattr(self, "kernel"))

    @abstractmethod
    def plan(self, kernel: func.FuncOp) -> Callable[[], None]:
        """Check that `kernel` can be rewritten (PassFailedException otherwise) and
        return the rewrite."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        targets = self.targets(op)
        plans = [self.plan(k) for k in targets]
        with restore_on_failure(targets):
            for run in plans:
                run()


def element_zero(memref_type: MemRefType) -> arith.ConstantOp:
    """A constant 0 of the buffer's element type."""
    element = memref_type.get_element_type()
    if isinstance(element, IntegerType):
        return arith.ConstantOp(IntegerAttr(0, element))
    return arith.ConstantOp(FloatAttr(0.0, element))
