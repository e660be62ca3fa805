"""ONNX reductions (ReduceSum, ReduceMean, ... ReduceLogSumExp) as graph reductions."""

from __future__ import annotations

import onnx
from xdsl.ir import SSAValue

from xweave.dialects import graph
from xweave.frontend.importer import Importer, normalize_axes
from xweave.frontend.registry import onnx_op

REDUCE_OPS = {
    "ReduceSum": "sum", "ReduceMean": "mean", "ReduceMax": "max", "ReduceMin": "min",
    "ReduceProd": "prod", "ReduceL1": "l1", "ReduceL2": "l2", "ReduceSumSquare": "sum_square",
    "ReduceLogSum": "log_sum", "ReduceLogSumExp": "log_sum_exp",
}
"""ONNX reduction -> its kind (a graph.reduce kind, or one built from them)."""

_AXES_INPUT_OPSET = {"ReduceSum": 13}
"""The opset from which a reduction takes its axes as an input (18 for the others)."""


@onnx_op(*REDUCE_OPS, shape_inputs=(1,))
def convert_reduce(imp: Importer, node: onnx.NodeProto, attrs: dict) -> SSAValue:
    """A reduction over constant axes (attribute or input 1)."""
    kind = REDUCE_OPS[node.op_type]
    x = imp.data(node, node.input[0])
    rank = len(imp.shape_of_value(x))
    axes = imp.axes(node, attrs, _AXES_INPUT_OPSET.get(node.op_type, 18))
    keep = bool(attrs.get("keepdims", 1))
    if not axes:
        if attrs.get("noop_with_empty_axes", 0):
            return x
        axes = list(range(rank))
    axes = sorted(set(normalize_axes(axes, rank, node)))
    if rank == 0:
        return x

    def reduce(value: SSAValue, how: str, keepdims: bool = keep) -> SSAValue:
        return imp.emit(graph.ReduceOp(value, how, axes, keepdims))

    if kind in graph.REDUCE_KINDS:
        return reduce(x, kind)
    if kind == "l1":
        return reduce(imp.emit(graph.AbsOp(x)), "sum")
    if kind in ("l2", "sum_square"):
        total = reduce(imp.emit(graph.MulOp(x, x)), "sum")
        return imp.emit(graph.SqrtOp(total)) if kind == "l2" else total
    if kind == "log_sum":
        return imp.emit(graph.LogOp(reduce(x, "sum")))
    # log_sum_exp, stable: m + log(sum(exp(x - m))) with m the maximum.
    peak = reduce(x, "max", True)
    total = reduce(imp.emit(graph.ExpOp(imp.emit(graph.SubOp(x, peak)))), "sum")
    peak = imp.reshape(peak, imp.shape_of_value(total))
    return imp.emit(graph.AddOp(imp.emit(graph.LogOp(total)), peak))
