"""loop-unroll: fully unroll a loop of constant extent.

`loop-unroll{loop="conv2d.rx"}` replaces the loop by one copy of its body per
iteration, in order, with the induction variable replaced by the iteration's constant;
the constants are then folded into the access maps, so every access of the copies has
constant offsets (what LLVM's SROA needs to promote a small local buffer to
registers). Loops nested in the body are copied with their names; constants still
used inside them move into them, so nests stay perfect. Extents above
`max-extent` (default 64) are refused, and so is a loop whose copies would hold more
than `max-loops` (default 64) loops: unrolling is for the loops of a register tile,
and a body that still holds a loop nest (a tile placement that did not apply, say)
multiplies into a function LLVM takes minutes to compile. Guards that became constant are left to
`loop-simplify`.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith
from xdsl.dialects.builtin import IndexType, IntegerAttr, ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import PassFailedException

from xweave.dialects import loop
from xweave.passes.loop_simplify import sink_constants
from xweave.passes.loop_utils import (
    body_ops,
    enclosing_function,
    erase_dead_ops,
    find_loops,
    fold_access_maps,
)


def unroll_loop(for_op: loop.ForOp) -> list[Operation]:
    """Replace `for_op` by copies of its body; returns the ops inserted in its place.
    Access maps are left to the caller to fold (`fold_access_maps`)."""
    parent = for_op.parent_block()
    assert parent is not None
    body = body_ops(for_op)
    inserted: list[Operation] = []
    for value in for_op.range:
        const = arith.ConstantOp(IntegerAttr(value, IndexType()))
        mapping: dict[SSAValue, SSAValue] = {for_op.induction_var: const.result}
        copies = [const, *(op.clone(value_mapper=mapping) for op in body)]
        parent.insert_ops_before(copies, for_op)
        inserted.extend(copies)
    for_op.detach()
    for_op.erase()
    return inserted


@dataclass(frozen=True)
class LoopUnrollPass(ModulePass):
    """Fully unroll loop `loop` (constant extent at most `max_extent`)."""

    name = "loop-unroll"

    loop: str
    """The name of the loop to unroll."""
    max_extent: int = 64
    """Refuse to unroll loops with more iterations than this."""
    max_loops: int = 64
    """Refuse to unroll a loop whose copies would hold more loops than this."""
    kernel: str | None = None
    """Only unroll in this kernel (default: every kernel having the loop)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        found = find_loops(op, self.loop, self.kernel, self.name)
        for for_op in found:
            if for_op.extent > self.max_extent:
                raise PassFailedException(
                    f"loop-unroll: loop '{self.loop}' has {for_op.extent} iterations, more "
                    f"than max-extent={self.max_extent}; split it first, or raise max-extent"
                )
            nested = sum(1 for o in for_op.body.walk() if isinstance(o, loop.ForOp))
            if nested * for_op.extent > self.max_loops:
                raise PassFailedException(
                    f"loop-unroll: loop '{self.loop}' holds {nested} loop(s): its "
                    f"{for_op.extent} copies would hold {nested * for_op.extent}, more than "
                    f"max-loops={self.max_loops}"
                )
        # Only the copies' accesses change, and only the op holding the loop can gain
        # dead code or movable constants: clean up there, not in the whole kernel (a
        # tuning candidate unrolls dozens of loops; refolding every kernel-wide access
        # each time was a third of its schedule time).
        holders: list[Operation] = []
        for for_op in reversed(found):  # inner copies first, should names nest
            holder = for_op.parent_op() or enclosing_function(for_op)
            for copy in unroll_loop(for_op):
                fold_access_maps(copy, erase_dead=False)
            if holder not in holders:
                holders.append(holder)
        for holder in holders:
            if holder.parent is not None:  # not itself unrolled since
                erase_dead_ops(holder)
                sink_constants(holder)
