"""graph-fold-constants: evaluate graph ops whose operands are all constants.

Every graph op whose operands are all `graph.constant` results is computed at compile
time by the graph interpreter (the dialect's reference semantics) and replaced by a
`graph.constant` holding the value; a chain of such ops folds in one walk, so weight
transforms (transposes, casts, reshapes of parameters) and shape arithmetic cost
nothing at run time. The constants left without users are erased.

Folds are bounded: a result with more than `max-elements` elements is only folded when
it is no bigger than its operands together (a transposed or rescaled weight, never a
constant broadcast to a huge tensor). Results of element type `i1` are never folded:
the CPU backend stores no `i1` parameters (the frontend keeps boolean constants as
`i8` plus a cast).
"""

from __future__ import annotations

from dataclasses import dataclass
from math import prod

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import (
    BytesAttr,
    DenseIntOrFPElementsAttr,
    DenseResourceAttr,
    ModuleOp,
    TensorType,
    i1,
)
from xdsl.interpreter import Interpreter
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
)

from xweave.dialects import graph
from xweave.dialects.dtypes import element_type, numpy_dtype
from xweave.dialects.graph.constants import constant_value
from xweave.dialects.interpreters import graph_interpreter


def constant_name(op: graph.ConstantOp, suffix: str) -> str:
    """A readable name for a constant derived from `op`: its weight's name (the
    resource handle without the content hash) and `suffix`."""
    if isinstance(op.value, DenseResourceAttr):
        return f"{op.value.resource_handle.data.rsplit('_', 1)[0]}_{suffix}"
    return suffix


def folded_constant(name: str, array: np.ndarray) -> graph.ConstantOp:
    """A constant holding `array`; a splat (all elements equal) is stored as one value."""
    flat = array.reshape(-1)
    if flat.size > 1 and (flat == flat[0]).all():
        typ = TensorType(element_type(array.dtype), array.shape)
        data = flat[:1].astype(flat.dtype.newbyteorder("<")).tobytes()
        return graph.ConstantOp(DenseIntOrFPElementsAttr(typ, BytesAttr(data)))
    return graph.ConstantOp.from_array(name, array)


def _elements(value_type) -> int:
    assert isinstance(value_type, TensorType)
    return prod(value_type.get_shape())


@dataclass
class FoldConstantOperation(RewritePattern):
    """Replace a graph op whose operands are all constants by the constant it computes."""

    interpreter: Interpreter
    max_elements: int

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if (
            not isinstance(op, graph.GraphOperation)
            or isinstance(op, graph.ConstantOp)
            or op.regions
            or not op.operands
            or not all(isinstance(v.owner, graph.ConstantOp) for v in op.operands)
        ):
            return
        if any(r.type.element_type == i1 for r in op.results):  # pyright: ignore
            return
        out = sum(_elements(r.type) for r in op.results)
        if out > self.max_elements and out > sum(_elements(v.type) for v in op.operands):
            return
        constants = [v.owner for v in op.operands]
        args = tuple(constant_value(c) for c in constants)  # pyright: ignore
        values = self.interpreter.run_op(op, args)
        first = next((c for c in constants if isinstance(c.value, DenseResourceAttr)), None)
        suffix = op.name.removeprefix("graph.")
        new = [
            folded_constant(
                constant_name(first, suffix) if first else suffix,  # pyright: ignore
                np.asarray(v, numpy_dtype(r.type.element_type)),  # pyright: ignore
            )
            for v, r in zip(values, op.results)
        ]
        rewriter.replace(op, new, [c.result for c in new])


@dataclass(frozen=True)
class GraphFoldConstantsPass(ModulePass):
    """Evaluate every graph op whose operands are all constants at compile time."""

    name = "graph-fold-constants"

    max_elements: int = 1 << 22
    """Skip folds whose result has more elements than this, unless it is no bigger
    than the operands."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        pattern = FoldConstantOperation(graph_interpreter(op), self.max_elements)
        PatternRewriteWalker(GreedyRewritePatternApplier([pattern])).rewrite_module(op)
