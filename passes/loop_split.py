"""loop-split: split one loop into an outer and an inner loop (TVM's `split`).

`loop-split{loop=conv2d.y factor=4}` turns the loop named `conv2d.y` (N iterations)
into `conv2d.y.outer` (ceil(N/4) iterations) around `conv2d.y.inner` (4 iterations);
the old induction variable becomes `lb + step * (outer * 4 + inner)`, folded into the
access maps. `nparts=P` instead fixes the outer extent: P outer iterations of
ceil(N/P) inner ones. When outer * inner overshoots N, the body is guarded by
`scf.if (outer * F + inner < N)`: by default around the inner loop's body
(`guard=inner`), or, with `guard=innermost`, around the innermost body of the perfect
nest below the split loop, which keeps that nest perfect so that it can still be
reordered or fused (the guard is then evaluated once per innermost iteration).

Loops with a lower bound or step are normalized (both new loops start at 0 with step
1). Split loops are serial, whatever the kind of the original loop (as in TVM, a split
axis loses its annotation: schedule the new loops afterwards).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from xdsl.context import Context
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IndexType, IntegerAttr, ModuleOp
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.ir.affine import AffineExpr
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import PassFailedException

from xweave.dialects import loop
from xweave.passes.loop_utils import (
    body_ops,
    enclosing_function,
    find_loops,
    fold_access_maps,
    materialize,
    perfect_nest,
    replace_induction_var,
)


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def split_loop(
    for_op: loop.ForOp,
    factor: int | None = None,
    nparts: int | None = None,
    guard: Literal["inner", "innermost"] = "inner",
) -> tuple[loop.ForOp, loop.ForOp]:
    """Split `for_op` in place by `factor` (inner extent) or `nparts` (outer extent).

    Returns the new `(outer, inner)` loops. Access maps are left to the caller to fold
    (`fold_access_maps`).
    """
    if (factor is None) == (nparts is None):
        raise ValueError("give exactly one of factor and nparts")
    n = for_op.extent
    if factor is not None:
        inner_extent, outer_extent = factor, _ceil_div(n, factor)
    else:
        assert nparts is not None
        outer_extent, inner_extent = nparts, max(1, _ceil_div(n, nparts))
    name = for_op.name_str or "loop"
    hint = for_op.induction_var.name_hint or "i"
    outer = loop.ForOp(0, outer_extent, name=f"{name}.outer")
    inner = loop.ForOp(0, inner_extent, name=f"{name}.inner")
    outer.induction_var.name_hint = f"{hint}_outer"
    inner.induction_var.name_hint = f"{hint}_inner"
    outer.add_ops([inner])

    ops = body_ops(for_op)
    for op in ops:
        op.detach()
    inner.add_ops(ops)
    target = inner.body.block
    ivs = [outer.induction_var, inner.induction_var]
    index = AffineExpr.dimension(0) * inner_extent + AffineExpr.dimension(1)
    if outer_extent * inner_extent != n:
        where = inner if guard == "inner" else perfect_nest(inner)[-1]
        target = _guard(where, index, ivs, n)
    else:
        target = _uses_block(for_op.induction_var, target)
    lb, step = for_op.lb.value.data, for_op.step.value.data
    replace_induction_var(for_op.induction_var, index * step + lb, ivs, target)

    parent = for_op.parent_block()
    assert parent is not None
    parent.insert_op_before(outer, for_op)
    for_op.detach()
    for_op.erase()
    return outer, inner


def _uses_block(value: SSAValue, top: Block) -> Block:
    """The innermost block under `top` that holds every use of `value`: the old index
    is computed there, so a use deep in the nest (a guard's condition) does not put
    ops between the new loops and the rest of a perfect nest."""
    chains = []
    for use in value.uses:
        chain: list[Block] = []
        block = use.operation.parent_block()
        while block is not None and block is not top:
            chain.append(block)
            parent = block.parent_op()
            block = parent.parent_block() if parent is not None else None
        if block is None:
            return top
        chains.append(chain[::-1])
    if not chains:
        return top
    found = top
    for level in zip(*chains):
        if any(b is not level[0] for b in level):
            break
        found = level[0]
    return found


def _guard(where: loop.ForOp, index: AffineExpr, ivs, n: int) -> Block:
    """Wrap the body of `where` in `scf.if (index < n)`; return the guarded block."""
    ops = body_ops(where)
    for op in ops:
        op.detach()
    then_block = Block()
    then_block.add_ops([*ops, scf.YieldOp()])
    index_ops, value = materialize(index, ivs)
    bound = arith.ConstantOp(IntegerAttr(n, IndexType()))
    cond = arith.CmpiOp(value, bound, "slt")
    guard_ops: list[Operation] = [*index_ops, bound, cond, scf.IfOp(cond, [], Region(then_block))]
    where.add_ops(guard_ops)
    return then_block


@dataclass(frozen=True)
class LoopSplitPass(ModulePass):
    """Split loop `loop` into `<loop>.outer` and `<loop>.inner` by `factor` (the inner
    extent) or `nparts` (the outer extent), with a guard when they overshoot."""

    name = "loop-split"

    loop: str
    """The name of the loop to split (`<stage>.<axis>`)."""
    factor: int | None = None
    """The extent of the inner loop."""
    nparts: int | None = None
    """The extent of the outer loop (instead of `factor`)."""
    guard: Literal["inner", "innermost"] = "inner"
    """Where the bounds guard goes when the extents overshoot: around the inner loop's
    body, or around the innermost body of the perfect nest below it."""
    kernel: str | None = None
    """Only split in this kernel (default: every kernel having the loop)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if (self.factor is None) == (self.nparts is None):
            raise PassFailedException(
                f"loop-split: give exactly one of factor and nparts for loop '{self.loop}'"
            )
        size = self.factor if self.factor is not None else self.nparts
        if size is None or size < 1:
            which = "factor" if self.factor is not None else "nparts"
            raise PassFailedException(f"loop-split: {which} must be at least 1, got {size}")
        found = find_loops(op, self.loop, self.kernel, self.name)
        functions = []
        for for_op in found:
            function = enclosing_function(for_op)
            split_loop(for_op, self.factor, self.nparts, self.guard)
            if function not in functions:
                functions.append(function)
        for function in functions:
            fold_access_maps(function)

