"""loop-simplify-indices: index arithmetic and access maps inside a loop, simplified
with the ranges of the loop variables.

`loop-simplify-indices{loop="reshape_1.i3"}` rewrites, inside every loop of that name,
each access map and each index computation (`arith` on loop variables: the
flattened index of an inlined reshape, the channel of a concat) into its simplest
form over the loop ranges: with `0 <= x < 28` and `0 <= y < 28`,
`((c * 784 + y * 28 + x) floordiv 28) floordiv 28` is `c` and
`(c * 784 + y * 28 + x) mod 28` is `x`. A channel shuffle
(concat -> reshape -> transpose -> reshape, inlined into one loop nest) then reads its
rows contiguously along `x`, and the concat's choice of input depends on the channel
only: `loop-vectorize` can take the loop. Values are unchanged, so it never refuses
(except for a loop name that names no loop).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith
from xdsl.dialects.builtin import AffineMapAttr, IndexType, ModuleOp
from xdsl.ir import Operation
from xdsl.ir.affine import AffineMap
from xdsl.passes import ModulePass

from xweave.dialects import loop
from xweave.passes.loop_analysis import iv_range, simplify_expr
from xweave.passes.loop_utils import (
    affine_of,
    enclosing_loops,
    erase_dead_ops,
    find_loops,
    fold_access_maps,
    materialize,
)

_INDEX_OPS = (arith.AddiOp, arith.SubiOp, arith.MuliOp, arith.FloorDivSIOp, arith.DivSIOp,
              arith.RemSIOp)


def simplify_indices(root: loop.ForOp) -> None:
    """Simplify the index computations and access maps inside `root` (see above)."""
    fold_access_maps(root, erase_dead=False)
    for op in list(root.walk()):
        if isinstance(op, loop.LoadOp | loop.StoreOp | loop.PrefetchOp):
            ranges = [iv_range(v) for v in op.indices]
            amap = op.map.data
            results = tuple(simplify_expr(r, ranges) for r in amap.results)
            if results != amap.results:
                op.properties["map"] = AffineMapAttr(
                    AffineMap(amap.num_dims, amap.num_symbols, results))
        elif (isinstance(op, _INDEX_OPS) and isinstance(op.results[0].type, IndexType)
              and any(not isinstance(use.operation, _INDEX_OPS) for use in op.results[0].uses)):
            _simplify_value(op)
    erase_dead_ops(root)


def _simplify_value(op: Operation) -> None:
    """Replace an index computation by its simplified form, if that is different."""
    ivs = [f.induction_var for f in enclosing_loops(op)]
    expr = affine_of(op.results[0], {v: i for i, v in enumerate(ivs)})
    if expr is None:
        return
    simple = simplify_expr(expr, [iv_range(v) for v in ivs])
    if simple == expr:
        return
    ops, value = materialize(simple, ivs)
    block = op.parent_block()
    assert block is not None
    if ops:
        block.insert_ops_before(ops, op)
    op.results[0].replace_all_uses_with(value)


@dataclass(frozen=True)
class LoopSimplifyIndicesPass(ModulePass):
    """Simplify the index arithmetic and access maps inside loop `loop` with the ranges
    of the loop variables (see the module docstring)."""

    name = "loop-simplify-indices"

    loop: str
    kernel: str | None = None

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for for_op in find_loops(op, self.loop, self.kernel, self.name):
            simplify_indices(for_op)
