"""graph-simplify-inference: fold inference-time arithmetic into weights, drop no-ops.

* A `graph.batch_norm` whose input is a `graph.conv2d` or `graph.dense` is folded into
  that op's weights and bias: with a = scale / sqrt(variance + epsilon), the weights of
  output channel c are multiplied by a[c] and the bias becomes
  (bias - mean) * a + bias_bn. The same holds for a `graph.mul` / `graph.div` by a
  per-channel constant (scales the weights and bias) and a `graph.add` / `graph.sub` of
  one (shifts the bias). The new parameters are computed in float64 at compile time.
  Only when the weights (and bias, if any) and the normalization parameters are
  constants and the conv/dense result has no other user.
* Any other `graph.batch_norm` with constant parameters (DenseNet's pre-activation
  ones, after a concat or a pool) becomes `x * a + (bias - mean * a)`: a `graph.mul`
  and a `graph.add` by per-channel constants, ops that graph-alter-layout carries in
  the blocked layout and graph-fuse fuses like any other elementwise op.
* Ops that return their input unchanged are removed: reshape, cast and broadcast_to
  to the same type, transpose by the identity permutation, tile by ones, pad by zeros,
  a slice of everything, a concat of one tensor. Consecutive reshapes become one
  reshape and consecutive transposes one transpose.

Dropout and Identity never reach the graph dialect (the ONNX frontend drops them).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from xweave.dialects import graph
from xweave.dialects.graph.constants import constant_operand
from xweave.passes.graph_fold_constants import constant_name


def _per_channel(value: np.ndarray, result: SSAValue) -> np.ndarray | None:
    """`value` as a vector over axis 1 of `result` (the output channels of a conv2d
    or dense), if broadcasting it against `result` varies only along that axis."""
    shape = result.type.get_shape()  # pyright: ignore[reportAttributeAccessIssue]
    if value.ndim > len(shape):
        return None
    padded = (1,) * (len(shape) - value.ndim) + value.shape
    if any(e != 1 for d, e in enumerate(padded) if d != 1) or padded[1] not in (1, shape[1]):
        return None
    return np.broadcast_to(value.reshape(-1).astype(np.float64), (shape[1],))


def fold_affine_into_weights(
    producer: graph.Conv2dOp | graph.DenseOp,
    scale: np.ndarray | None,
    shift: np.ndarray | None,
    replaced: Operation,
    rewriter: PatternRewriter,
) -> bool:
    """Replace `replaced`, which computes producer(x) * scale + shift per output
    channel, by `producer` with rescaled weights and bias. False if the weights or
    the bias are not constants or the producer's result has other users."""
    weight, bias = constant_operand(producer.weight), constant_operand(producer.bias)
    if weight is None or (producer.bias is not None and bias is None):
        return False
    if weight.dtype.kind in "iu":  # an integer layer: its bias is int32, its sums exact
        return False
    if not producer.result.has_one_use():
        return False
    channels = weight.shape[0]
    new_weight = weight.astype(np.float64)
    new_bias = np.zeros(channels) if bias is None else bias.astype(np.float64)
    if scale is not None:
        new_weight = new_weight * scale.reshape((channels,) + (1,) * (weight.ndim - 1))
        new_bias = new_bias * scale
    if shift is not None:
        new_bias = new_bias + shift
    w_op = producer.weight.owner
    assert isinstance(w_op, graph.ConstantOp)
    w_const = graph.ConstantOp.from_array(
        constant_name(w_op, "folded"), new_weight.astype(weight.dtype))
    b_const = graph.ConstantOp.from_array(
        constant_name(w_op, "folded_bias"), new_bias.astype(weight.dtype))
    new = type(producer).create(
        operands=[producer.input, w_const.result, b_const.result],
        result_types=[producer.result.type],
        properties=dict(producer.properties),
        attributes=dict(producer.attributes),
    )
    w_const.result.name_hint = producer.weight.name_hint
    if producer.bias is not None:
        b_const.result.name_hint = producer.bias.name_hint
    elif producer.weight.name_hint:
        b_const.result.name_hint = f"{producer.weight.name_hint}_bias"
    rewriter.replace(replaced, [w_const, b_const, new], new.results)
    rewriter.erase(producer)
    return True


class FoldBatchNorm(RewritePattern):
    """conv2d/dense followed by batch_norm -> conv2d/dense with folded parameters."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.BatchNormOp, rewriter: PatternRewriter) -> None:
        producer = op.input.owner
        if not isinstance(producer, graph.Conv2dOp | graph.DenseOp):
            return
        params = [constant_operand(v) for v in (op.scale, op.bias, op.mean, op.variance)]
        if any(p is None for p in params):
            return
        scale, bias, mean, variance = (p.astype(np.float64) for p in params)  # pyright: ignore
        a = scale / np.sqrt(variance + op.epsilon.value.data)
        fold_affine_into_weights(producer, a, bias - mean * a, op, rewriter)


class BatchNormAsAffine(RewritePattern):
    """batch_norm with constant parameters -> mul and add by per-channel constants
    (tried after FoldBatchNorm, so only where there is no producer to fold into)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.BatchNormOp, rewriter: PatternRewriter) -> None:
        params = [constant_operand(v) for v in (op.scale, op.bias, op.mean, op.variance)]
        if any(p is None for p in params) or op.scale.type != TensorType(
                op.input.type.element_type, op.scale.type.get_shape()):  # pyright: ignore
            return
        scale, bias, mean, variance = (p.astype(np.float64) for p in params)  # pyright: ignore
        rank = len(op.input.type.get_shape())  # pyright: ignore[reportAttributeAccessIssue]
        dtype = params[0].dtype  # pyright: ignore[reportOptionalMemberAccess]
        a = scale / np.sqrt(variance + op.epsilon.value.data)
        per_channel = (-1,) + (1,) * (rank - 2)  # broadcasts along axis 1 of the input
        handle = op.scale.owner
        assert isinstance(handle, graph.ConstantOp)
        a_const = graph.ConstantOp.from_array(
            constant_name(handle, "bn_scale"), a.reshape(per_channel).astype(dtype))
        b_const = graph.ConstantOp.from_array(
            constant_name(handle, "bn_shift"), (bias - mean * a).reshape(per_channel).astype(dtype))
        mul = graph.MulOp(op.input, a_const.result)
        add = graph.AddOp(mul.result, b_const.result)
        rewriter.replace(op, [a_const, b_const, mul, add], add.results)


class FoldChannelAffine(RewritePattern):
    """conv2d/dense followed by mul/div/add/sub of a per-channel constant -> the
    conv2d/dense with folded parameters."""

    @op_type_rewrite_pattern
    def match_and_rewrite(
        self, op: graph.MulOp | graph.DivOp | graph.AddOp | graph.SubOp, rewriter: PatternRewriter
    ) -> None:
        orders = [(op.lhs, op.rhs)]
        if isinstance(op, graph.MulOp | graph.AddOp):
            orders.append((op.rhs, op.lhs))
        for data, other in orders:
            producer = data.owner
            if not isinstance(producer, graph.Conv2dOp | graph.DenseOp):
                continue
            if (c := constant_operand(other)) is None or (c := _per_channel(c, data)) is None:
                continue
            if op.result.type != data.type or (isinstance(op, graph.DivOp) and not c.all()):
                continue
            scale = {graph.MulOp: c, graph.DivOp: 1 / c}.get(type(op))
            shift = {graph.AddOp: c, graph.SubOp: -c}.get(type(op))
            if fold_affine_into_weights(producer, scale, shift, op, rewriter):
                return


def _is_identity(op: Operation) -> bool:
    if not isinstance(op, graph.GraphOperation) or not op.operands or len(op.results) != 1:
        return False
    same_type = op.operands[0].type == op.results[0].type
    match op:
        case graph.ReshapeOp() | graph.CastOp() | graph.BroadcastToOp():
            return same_type
        case graph.TransposeOp():
            return list(op.perm.get_values()) == list(range(len(op.perm.get_values())))
        case graph.TileOp():
            return all(r == 1 for r in op.repeats.get_values())
        case graph.PadOp():
            return not any(op.pads.get_values())
        case graph.SliceOp():
            return same_type and all(s == 1 for s in op.steps.get_values())
        case graph.ConcatOp():
            return len(op.inputs) == 1
        case _:
            return False


class RemoveIdentity(RewritePattern):
    """Replace an op that returns its input unchanged by its input."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if _is_identity(op):
            rewriter.replace(op, [], [op.operands[0]])


class ComposeReshapes(RewritePattern):
    """reshape(reshape(x)) -> reshape(x)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.ReshapeOp, rewriter: PatternRewriter) -> None:
        inner = op.input.owner
        if isinstance(inner, graph.ReshapeOp):
            shape = op.result.type.get_shape()  # pyright: ignore[reportAttributeAccessIssue]
            rewriter.replace(op, graph.ReshapeOp(inner.input, shape))


class ComposeTransposes(RewritePattern):
    """transpose(transpose(x, p), q) -> transpose(x, [p[i] for i in q])."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.TransposeOp, rewriter: PatternRewriter) -> None:
        inner = op.input.owner
        if isinstance(inner, graph.TransposeOp):
            p = inner.perm.get_values()
            perm = [p[i] for i in op.perm.get_values()]
            rewriter.replace(op, graph.TransposeOp(inner.input, perm))


@dataclass(frozen=True)
class GraphSimplifyInferencePass(ModulePass):
    """Fold batch norms and per-channel affine ops into conv2d/dense weights, other
    batch norms into a multiply-add; remove ops that return their input."""

    name = "graph-simplify-inference"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        patterns: list[RewritePattern] = [
            RemoveIdentity(),
            ComposeReshapes(),
            ComposeTransposes(),
            FoldBatchNorm(),
            FoldChannelAffine(),
            BatchNormAsAffine(),
        ]
        PatternRewriteWalker(GreedyRewritePatternApplier(patterns)).rewrite_module(op)

