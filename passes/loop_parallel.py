"""loop-parallel{loop=NAME kernel=K}: run the iterations of a loop on several threads.

The pass only sets the loop's kind to `parallel` (`convert-loop-to-llvm` outlines the
body and runs contiguous chunks of the iterations on libgomp's thread pool), after
checking that the iterations are independent:

* no iteration may access an element of a buffer that another iteration writes.
  For every written buffer, each access (load or store, under any inner loop or
  `scf.if`) is an affine function of the loop variable, of inner loop variables
  (whose ranges are known) and of outer loop variables (fixed during the loop; they
  may only appear linearly, with the same coefficient in every access of that
  dimension). For each value of the loop variable, the index range it writes and the
  one it accesses in each dimension are computed by interval arithmetic over the
  inner variables (two boxes); no iteration's write box may meet the access box of
  another iteration (the boxes must be disjoint in some dimension).
  A store whose address does not involve the loop variable (the reduction axis of an
  update nest: `C[i, j] += A[i, k] * B[k, j]` over `k`) is rejected; so is
  `A[i] = A[i - 1] + ...` (a read of another iteration's element), while
  `A[i floordiv 4, i mod 4]` (a fused loop) is accepted;
* no local buffer (`#loop.scope<local>`, thread-private) allocated outside the loop
  may be written inside it; buffers allocated inside the loop are private to each
  iteration;
* no op with unknown or unanalysable memory effects (calls, ...) in the body.

Buffers are told apart by SSA value: two kernel arguments are assumed not to share
memory when one of them is written (bufferization passes every result its own buffer;
only inputs are ever passed twice).

A loop that is already `parallel` is left as it is; other kinds (`vectorized`,
`unrolled`, `vthread`) are an error. Loops nested in a parallel loop may be parallel
too: only the outermost one runs on threads.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects import memref, scf, vector
from xdsl.dialects.builtin import MemRefType, ModuleOp, VectorType
from xdsl.ir import Operation, SSAValue
from xdsl.ir.affine import AffineDimExpr, AffineExpr
from xdsl.passes import ModulePass
from xdsl.traits import MemoryEffectKind, get_effects
from xdsl.utils.exceptions import PassFailedException

from xweave.dialects import loop
from xweave.passes.loop_analysis import Linear
from xweave.passes.loop_utils import (
    affine_of,
    constant_index,
    enclosing_loops,
    find_loops,
    side_effect_free,
)

PAIRWISE_LIMIT = 4096
"""Above this many iterations, only a single-dimension proof of independence is tried."""

ITERATION_LIMIT = 1 << 20
"""Above this many iterations no proof is tried (it holds arrays of one entry per
iteration): the loop stays serial. Tiled loops have far fewer; a loop this long is a
tensor's whole extent, often a size the model only claims."""


@dataclass(frozen=True)
class LoopParallelPass(ModulePass):
    """Mark the loops named `loop` (in every kernel, or in `kernel`) parallel."""

    name = "loop-parallel"

    loop: str
    kernel: str | None = None

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        loops = find_loops(op, self.loop, self.kernel, self.name)
        for for_op in loops:  # check them all first: on an error, nothing changes
            problem = parallel_conflict(for_op)
            if problem is not None:
                raise PassFailedException(
                    f"loop-parallel: cannot parallelize loop '{self.loop}': {problem}"
                )
        for for_op in loops:
            for_op.properties["kind"] = loop.ForKindAttr(loop.ForKind.PARALLEL)


def parallel_conflict(for_op: loop.ForOp) -> str | None:
    """Why the iterations of `for_op` may not run concurrently, or None if they may."""
    kind = for_op.kind.data
    if kind not in (loop.ForKind.SERIAL, loop.ForKind.PARALLEL):
        return f"it is already {kind.value}"
    try:
        _check(for_op)
    except _Conflict as e:
        return str(e)
    return None


class _Conflict(Exception):
    pass


# ----------------------------------------------------------------------------------
# Collecting the accesses
# ----------------------------------------------------------------------------------


@dataclass
class _Access:
    op: Operation
    buffer: SSAValue
    exprs: list[AffineExpr]
    """One expression per buffer dimension, over `_Vars.values` (as dims)."""
    lanes: int
    writes: bool


class _Vars:
    """The index variables an access may use: outer loop variables (fixed), the
    parallel loop's variable, and inner loop variables (with their ranges)."""

    def __init__(self, for_op: loop.ForOp):
        self.for_op = for_op
        self.values: list[SSAValue] = []
        self.position: dict[SSAValue, int] = {}
        self.outer: set[int] = set()
        self.ranges: dict[int, tuple[int, int] | None] = {}
        for outer in enclosing_loops(for_op):
            self.outer.add(self._add(outer.induction_var))
        self.iv = self._add(for_op.induction_var)

    def _add(self, value: SSAValue) -> int:
        self.position[value] = len(self.values)
        self.values.append(value)
        return self.position[value]

    def add_inner(self, value: SSAValue, bounds: tuple[int, int] | None) -> None:
        self.ranges[self._add(value)] = bounds


def _name(value: SSAValue) -> str:
    return f"%{value.name_hint}" if value.name_hint else "a buffer"


def _access_parts(
    op: Operation,
) -> tuple[SSAValue, Sequence[SSAValue], list[AffineExpr] | None, Operation]:
    if isinstance(op, loop.LoadOp | loop.StoreOp):
        return op.memref, op.indices, list(op.map.data.results), op
    if isinstance(op, memref.LoadOp | memref.StoreOp):
        return op.memref, op.indices, None, op
    if isinstance(op, vector.LoadOp | vector.StoreOp):
        return op.base, op.indices, None, op
    raise AssertionError(op)


_ACCESS_OPS = (
    loop.LoadOp, loop.StoreOp, memref.LoadOp, memref.StoreOp, vector.LoadOp, vector.StoreOp
)
_WRITES = (loop.StoreOp, memref.StoreOp, vector.StoreOp)


def _collect(for_op: loop.ForOp, variables: _Vars) -> tuple[list[Operation], set[SSAValue]]:
    """Every buffer access in the body, and the buffers allocated inside it."""
    accesses: list[Operation] = []
    private: set[SSAValue] = set()
    for op in for_op.body.walk():
        if isinstance(op, loop.ForOp):
            bounds = (op.range.start, op.range[-1]) if op.extent else None
            variables.add_inner(op.induction_var, bounds)
            continue
        if isinstance(op, scf.ForOp):
            lb, ub, step = (constant_index(v) for v in (op.lb, op.ub, op.step))
            bounds = (lb, ub - 1) if lb is not None and ub is not None and ub > lb else None
            variables.add_inner(op.body.block.args[0], bounds)
            continue
        if isinstance(op, loop.AllocOp | memref.AllocOp | memref.AllocaOp):
            private.add(op.results[0])
            continue
        if isinstance(op, _ACCESS_OPS):
            accesses.append(op)
            continue
        if isinstance(op, loop.YieldOp | scf.YieldOp | scf.IfOp):
            continue
        if side_effect_free(op):
            continue
        effects = get_effects(op)
        if effects is None or any(
            e.kind in (MemoryEffectKind.WRITE, MemoryEffectKind.FREE) for e in effects
        ):
            raise _Conflict(f"'{op.name}' has memory effects that cannot be analysed")
    return accesses, private


def _access(op: Operation, variables: _Vars) -> _Access:
    buffer, indices, results, _ = _access_parts(op)
    operand_exprs = []
    for value in indices:
        expr = affine_of(value, variables.position)
        if expr is None:
            raise _Conflict(f"an index of '{op.name}' is not an affine function of loop variables")
        operand_exprs.append(expr)
    if results is None:
        exprs = operand_exprs
    else:
        exprs = [
            r.replace_dims_and_symbols(operand_exprs, []) for r in results
        ]
    value_type = op.results[0].type if op.results else op.operands[0].type
    lanes = value_type.get_shape()[0] if isinstance(value_type, VectorType) else 1
    return _Access(op, buffer, exprs, lanes, isinstance(op, _WRITES))


# ----------------------------------------------------------------------------------
# Index ranges per iteration (loop_analysis's bounds, one interval per iteration)
# ----------------------------------------------------------------------------------


def _outer_split(expr: AffineExpr, outer: set[int]) -> tuple[dict[int, int], Linear] | None:
    """Split off the outer variables: ({outer dim: coefficient}, the rest), or None if an
    outer variable appears non-linearly."""
    parts = Linear.of(expr).split(outer)
    if parts is None:
        return None
    fixed, rest = parts
    if not all(isinstance(atom, AffineDimExpr) for atom in fixed.terms):
        return None
    rest.const = fixed.const
    return {atom.position: c for atom, c in fixed.terms.items()}, rest


def _check(for_op: loop.ForOp) -> None:
    variables = _Vars(for_op)
    access_ops, private = _collect(for_op, variables)
    written: dict[SSAValue, Operation] = {}
    for op in access_ops:
        buffer = _access_parts(op)[0]
        if isinstance(op, _WRITES) and buffer not in private:
            written.setdefault(buffer, op)
    accesses = [_access(op, variables) for op in access_ops if _access_parts(op)[0] in written]
    for buffer, store in written.items():
        t = buffer.type
        if isinstance(t, MemRefType) and isinstance(buffer.owner, loop.AllocOp):
            if loop.scope_of(t).data == "local":
                raise _Conflict(
                    f"the local buffer {_name(buffer)} is allocated outside the loop and "
                    f"written inside it ('{store.name}'): one copy shared by all threads"
                )
    if for_op.extent > ITERATION_LIMIT:
        raise _Conflict(f"cannot prove that its {for_op.extent} iterations are independent "
                        f"(more than {ITERATION_LIMIT} to analyse)")
    xs = np.array(for_op.range, dtype=np.int64)
    for buffer, store in written.items():
        group = [a for a in accesses if a.buffer == buffer]
        for a in group:
            if a.writes and not any(variables.iv in e.used_dims() for e in a.exprs):
                raise _Conflict(
                    f"every iteration writes the same element of {_name(buffer)} "
                    f"('{a.op.name}' does not depend on the loop variable: a reduction axis?)"
                )
        _check_disjoint(buffer, group, variables, xs)


def _check_disjoint(
    buffer: SSAValue, group: list[_Access], variables: _Vars, xs: np.ndarray
) -> None:
    """No iteration writes an element another one accesses. Per iteration, two boxes
    (an index range per dimension): one covering its writes, one all its accesses; the
    write box of each iteration must be disjoint from the access box of every other."""
    rank = len(group[0].exprs)
    ranges = {p: r for p, r in variables.ranges.items() if r is not None}
    ranges[variables.iv] = (xs, xs)
    boxes: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []  # per usable dim
    for d in range(rank):
        signature = None
        bounds: list[tuple[_Access, np.ndarray, np.ndarray]] = []
        for a in group:
            split = _outer_split(a.exprs[d], variables.outer)
            if split is None or (signature is not None and split[0] != signature):
                break
            signature = split[0]
            interval = split[1].bounds(ranges)
            if not all(isinstance(x, np.ndarray) or not math.isinf(x) for x in interval):
                break
            lo = np.broadcast_to(interval[0], xs.shape)
            hi = np.broadcast_to(interval[1], xs.shape)
            if d == rank - 1 and a.lanes > 1:
                hi = hi + (a.lanes - 1)
            bounds.append((a, lo, hi))
        else:
            writes = [(lo, hi) for a, lo, hi in bounds if a.writes]
            boxes.append((
                np.minimum.reduce([lo for lo, _ in writes]),
                np.maximum.reduce([hi for _, hi in writes]),
                np.minimum.reduce([lo for _, lo, _ in bounds]),
                np.maximum.reduce([hi for _, _, hi in bounds]),
            ))
    n = len(xs)
    for _, _, lo, hi in boxes:  # one dimension alone separates every iteration
        order = np.argsort(lo, kind="stable")
        if np.all(hi[order][:-1] < lo[order][1:]):
            return
    if boxes and n <= PAIRWISE_LIMIT:
        wlo, whi, alo, ahi = (np.stack(b) for b in zip(*boxes))  # each (dims, n)
        step = max(1, (1 << 22) // max(1, n * len(boxes)))
        for start in range(0, n, step):
            block = slice(start, min(n, start + step))
            overlap = np.all(  # writes of x (rows) meet accesses of y (columns)
                (wlo[:, block, None] <= ahi[:, None, :]) & (alo[:, None, :] <= whi[:, block, None]),
                axis=0,
            )
            rows = np.arange(block.start, block.stop)
            overlap[rows - block.start, rows] = False
            if overlap.any():
                x, y = np.argwhere(overlap)[0]
                _conflict(buffer, group, int(xs[x + block.start]), int(xs[y]))
        return
    if boxes:
        raise _Conflict(
            f"cannot prove that iterations access disjoint parts of {_name(buffer)} "
            f"({n} iterations: more than {PAIRWISE_LIMIT} to compare pairwise)"
        )
    _conflict(buffer, group, None, None)


def _conflict(buffer: SSAValue, group: list[_Access], x: int | None, y: int | None) -> None:
    ops = sorted({a.op.name for a in group})
    which = f"iterations {x} and {y}" if x is not None else "different iterations"
    raise _Conflict(
        f"{which} may access a common element of {_name(buffer)} "
        f"({', '.join(repr(o) for o in ops)}), one of them writing it"
    )

