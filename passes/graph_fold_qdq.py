"""graph-fold-qdq: QDQ patterns become integer operators (quantized models on the CPU).

A model quantized in ONNX's QDQ form (onnxruntime's `quantize_static`) computes in
float between DequantizeLinear and QuantizeLinear pairs. Each rewrite below replaces
such a pattern by what onnxruntime's int8 kernels compute, on the integers:

* unsigned activations (`unsigned-activations=true`): an int8 `graph.quantize` read only
  by equal dequantizes becomes uint8, zero point + 128 (the same real values: q + 128 at
  z + 128); the CPU's dot-product instructions take uint8 data and int8 weights
  (onnxruntime's QDQS8ToU8Transformer does the same);
* conv2d / dense: `quantize(conv2d(dequantize(x), dequantize(W), dequantize(b)))`, W and
  the int32 bias b constants, per-tensor activations, per-tensor or per-output-channel
  weights, becomes `requantize(conv2d(x, W - w_zp, b - x_zp * sum(W - w_zp)), x_scale *
  w_scale / y_scale, y_zp)`: an integer conv2d/dense padded with x's zero point and
  accumulating in i32, and the requantize epilogue of onnxruntime's QLinearConv (the
  multiplier in float32, (x_scale * w_scale) / y_scale);
* data movement and max: reshape, transpose, slice, max_pool2d, global_max_pool2d and
  concat between a dequantize and a quantize of the same scale and zero point run on
  the integers (they commute with the quantization: quantize(dequantize(q)) = q);
  relu and clip become a max / min with their bounds quantized;
* global_avg_pool2d: onnxruntime's QLinearGlobalAveragePool, an int32 sum of the
  window, minus x_zp * H * W, requantized by x_scale / (y_scale * H * W).

What matches no rewrite stays as it is: a dequantize, float ops, a quantize (an add of
two quantized tensors, a sigmoid, ...): fusion then makes each such chain one kernel
reading and writing integers (onnxruntime computes those ops in float too). The
dequantizes of constant weights left behind are folded by graph-fold-constants.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, i32
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
from xweave.dialects.dtypes import element_type, integer_range, narrowest, numpy_dtype
from xweave.dialects.graph.constants import constant_operand, constant_value
from xweave.dialects.graph.nn import is_integer_layer
from xweave.dialects.graph.tensors import element_type_of, shape_of, tensor_type
from xweave.passes.graph_fold_constants import constant_name


def _params(op: graph.QuantizeOp | graph.DequantizeOp) -> tuple[np.ndarray, np.ndarray] | None:
    """(scale, zero point) of a quantization op, when both are constants."""
    scale, zero = constant_operand(op.scale), constant_operand(op.zero_point)
    if scale is None or zero is None:
        return None
    return scale, zero


def _per_tensor(op: graph.QuantizeOp | graph.DequantizeOp) -> tuple[np.float32, int] | None:
    """(scale, zero point) of a per-tensor quantization op with constant parameters."""
    params = _params(op)
    if params is None or params[0].size != 1:
        return None
    return np.float32(params[0].reshape(-1)[0]), int(params[1].reshape(-1)[0])


def _same_params(a: graph.QuantizeOp | graph.DequantizeOp,
                 b: graph.QuantizeOp | graph.DequantizeOp) -> bool:
    """Whether two quantization ops use equal scales and zero points (of one type)."""
    if element_type_of(a.zero_point) != element_type_of(b.zero_point):
        return False
    if (a.scale, a.zero_point) == (b.scale, b.zero_point):
        return True
    pa, pb = _params(a), _params(b)
    return (pa is not None and pb is not None and pa[0].shape == pb[0].shape
            and np.array_equal(pa[0], pb[0]) and np.array_equal(pa[1], pb[1]))


def _dequantized(value: SSAValue) -> graph.DequantizeOp | None:
    owner = value.owner
    return owner if isinstance(owner, graph.DequantizeOp) else None


def _named(op: graph.ConstantOp, like: SSAValue | None, suffix: str) -> graph.ConstantOp:
    """Name a new constant's value after `like`'s (the operand it replaces)."""
    if like is not None and like.name_hint:
        op.result.name_hint = f"{like.name_hint}_{suffix}"
    return op


def _new_constant(like: SSAValue, suffix: str, array: np.ndarray) -> graph.ConstantOp:
    owner = like.owner
    name = constant_name(owner, suffix) if isinstance(owner, graph.ConstantOp) else suffix
    return _named(graph.ConstantOp.from_array(name, array), like, suffix)


# --------------------------------------------------------------------------------------
# Unsigned activations
# --------------------------------------------------------------------------------------


class UnsignedActivations(RewritePattern):
    """An int8 quantize read only by dequantizes of the same parameters -> uint8 with the
    zero point + 128 (every dequantize then reads the uint8 tensor)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.QuantizeOp, rewriter: PatternRewriter) -> None:
        if element_type_of(op.result) != element_type(np.int8) or not op.result.uses:
            return
        users = [use.operation for use in op.result.uses]
        if not all(isinstance(u, graph.DequantizeOp) and u.input is op.result
                   and _same_params(u, op) for u in users):
            return
        zero = constant_operand(op.zero_point)
        if zero is None:
            return
        shifted = _new_constant(op.zero_point, "u8", (zero.astype(np.int16) + 128).astype(np.uint8))
        quantize = graph.QuantizeOp(op.input, op.scale, shifted.result)
        rewriter.replace(op, [shifted, quantize], quantize.results)
        for user in users:
            assert isinstance(user, graph.DequantizeOp)
            dequantize = graph.DequantizeOp(quantize.result, user.scale, shifted.result)
            rewriter.replace(user, [dequantize], dequantize.results)


# --------------------------------------------------------------------------------------
# Integer conv2d and dense
# --------------------------------------------------------------------------------------


def _channel_vector(array: np.ndarray, channels: int, axis: int, rank: int) -> np.ndarray | None:
    """A per-tensor or per-`axis` parameter (broadcasting to a rank-`rank` tensor) as a
    vector of `channels` values; None if it varies along another axis."""
    if array.size == 1:
        return np.broadcast_to(array.reshape(-1), (channels,))
    padded = array.reshape((1,) * (rank - array.ndim) + array.shape)
    if padded.ndim != rank or padded.shape[axis] != channels or padded.size != channels:
        return None
    return padded.reshape(-1)


@dataclass
class _IntegerLayer:
    """The integer form of a conv2d/dense between QDQ pairs, checked by `match`."""

    data: SSAValue
    x_zero: int
    weight: np.ndarray
    bias: np.ndarray
    multiplier: np.ndarray
    output: graph.QuantizeOp

    @staticmethod
    def match(layer: graph.Conv2dOp | graph.DenseOp, q: graph.QuantizeOp) -> _IntegerLayer | None:
        if is_integer_layer(layer) or not layer.result.has_one_use():
            return None
        xd, wd = _dequantized(layer.input), _dequantized(layer.weight)
        if xd is None or wd is None:
            return None
        x_params, y_params = _per_tensor(xd), _per_tensor(q)
        w_params = _params(wd)
        w = constant_operand(wd.input)
        if x_params is None or y_params is None or w_params is None or w is None:
            return None
        if w.dtype not in (np.uint8, np.int8) or element_type_of(xd.input).width.data != 8:  # pyright: ignore
            return None
        channels, rank = w.shape[0], w.ndim
        w_scale = _channel_vector(w_params[0], channels, 0, rank)
        w_zero = _channel_vector(w_params[1], channels, 0, rank)
        if w_scale is None or w_zero is None:
            return None
        (x_scale, x_zero), (y_scale, _) = x_params, y_params
        accumulator_scale = x_scale * w_scale.astype(np.float32)
        bias = np.zeros(channels, np.int64)
        if layer.bias is not None:
            bd = _dequantized(layer.bias)
            b = None if bd is None else constant_operand(bd.input)
            b_params = None if bd is None else _params(bd)
            if b is None or b_params is None or b.dtype != np.int32 or np.any(b_params[1]):
                return None
            b_scale = _channel_vector(b_params[0], channels, 0, 1)
            # The int32 bias is the accumulator's: its scale must be x_scale * w_scale.
            if b_scale is None or not np.allclose(b_scale, accumulator_scale, rtol=1e-6, atol=0):
                return None
            bias = b.reshape(channels).astype(np.int64)
        shifted = w.astype(np.int64) - w_zero.astype(np.int64).reshape((channels,) + (1,) * (rank - 1))
        bias = bias - x_zero * shifted.reshape(channels, -1).sum(axis=1)
        multiplier = accumulator_scale / y_scale  # float32: (x_scale * w_scale) / y_scale
        return _IntegerLayer(xd.input, x_zero, narrowest(shifted), bias.astype(np.int32),
                             multiplier.astype(np.float32), q)

    def rewrite(self, layer: graph.Conv2dOp | graph.DenseOp, rewriter: PatternRewriter) -> None:
        weight = _new_constant(layer.weight, "int", self.weight)
        bias = _new_constant(layer.weight, "int_bias", self.bias)
        out_shape = shape_of(layer.result)
        if isinstance(layer, graph.Conv2dOp):
            new = graph.Conv2dOp(
                self.data, weight.result, bias.result, strides=layer.strides.get_values(),
                pads=layer.pads.get_values(), dilations=layer.dilations.get_values(),
                groups=layer.groups.value.data, pad_value=self.x_zero)
            param_shape = (1, out_shape[1]) + (1,) * (len(out_shape) - 2)
        else:
            new = graph.DenseOp(self.data, weight.result, bias.result)
            param_shape = (1, out_shape[1])
        zero = constant_value(self.output.zero_point.owner).reshape(-1)[0]  # pyright: ignore
        multiplier = _named(graph.ConstantOp.from_array(
            "multiplier", self.multiplier.reshape(param_shape)), layer.result, "multiplier")
        zeros = graph.ConstantOp.from_array("zero_point", np.full(
            param_shape, zero, numpy_dtype(element_type_of(self.output.result))))
        requantize = graph.RequantizeOp(new.result, multiplier.result, zeros.result)
        rewriter.replace(self.output, [weight, bias, new, multiplier, zeros, requantize],
                         requantize.results)
        rewriter.erase(layer)


class FoldIntegerLayer(RewritePattern):
    """quantize(conv2d/dense(dequantize(x), dequantize(W), dequantize(b))) -> requantize
    of an integer conv2d/dense (see the module docstring)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.QuantizeOp, rewriter: PatternRewriter) -> None:
        layer = op.input.owner
        if not isinstance(layer, graph.Conv2dOp | graph.DenseOp):
            return
        if (found := _IntegerLayer.match(layer, op)) is not None:
            found.rewrite(layer, rewriter)


# --------------------------------------------------------------------------------------
# Ops that commute with quantization
# --------------------------------------------------------------------------------------

_MOVES = (graph.ReshapeOp, graph.TransposeOp, graph.SliceOp, graph.MaxPool2dOp,
          graph.GlobalMaxPool2dOp, graph.BroadcastToOp, graph.TileOp)
"""One-input ops that only move or select elements (or take a max): they commute with a
monotonic quantization of the same parameters."""


def _retyped(op: Operation, operands: list[SSAValue], element) -> Operation:
    """A copy of `op` on `operands` whose result holds `element`s."""
    result = tensor_type(element, shape_of(op.results[0]))
    return type(op).create(operands=operands, result_types=[result],
                           properties=dict(op.properties), attributes=dict(op.attributes))


class FoldCommuting(RewritePattern):
    """quantize(f(dequantize(q))) with equal parameters -> f(q), for data movement and
    max (`_MOVES`), and concat of dequantizes all of those parameters."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.QuantizeOp, rewriter: PatternRewriter) -> None:
        inner = op.input.owner
        if not isinstance(inner, (*_MOVES, graph.ConcatOp)) or not op.input.has_one_use():
            return
        sources = inner.operands if isinstance(inner, graph.ConcatOp) else inner.operands[:1]
        dequantizes = [_dequantized(v) for v in sources]
        if any(d is None or not _same_params(d, op) for d in dequantizes):
            return
        new = _retyped(inner, [d.input for d in dequantizes] + list(inner.operands[len(sources):]),  # pyright: ignore
                       element_type_of(op.result))
        rewriter.replace(op, [new], new.results)
        rewriter.erase(inner)


class FoldClamp(RewritePattern):
    """quantize(relu / clip(dequantize(q))) with equal parameters -> max / min of q and
    the bounds quantized (a clamp commutes with a monotonic quantization)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.QuantizeOp, rewriter: PatternRewriter) -> None:
        inner = op.input.owner
        if not isinstance(inner, graph.ReluOp | graph.ClipOp) or not op.input.has_one_use():
            return
        dq = _dequantized(inner.input)
        params = _per_tensor(op)
        if dq is None or params is None or not _same_params(dq, op):
            return
        scale, zero = params
        element = element_type_of(op.result)
        lo_q, hi_q = integer_range(element)
        if isinstance(inner, graph.ReluOp):
            lo, hi = 0.0, float("inf")
        else:
            lo, hi = inner.min.value.data, inner.max.value.data
        dtype = numpy_dtype(element)

        def quantized(v: float) -> int:
            with np.errstate(all="ignore"):
                r = np.rint(np.float64(np.float32(v) / scale)) + zero
            return int(np.clip(np.nan_to_num(r, nan=lo_q, posinf=hi_q, neginf=lo_q), lo_q, hi_q))

        ops: list[Operation] = []
        value = dq.input
        for bound, cls, limit in ((quantized(lo), graph.MaxOp, lo_q), (quantized(hi), graph.MinOp, hi_q)):
            if bound == limit:
                continue
            c = graph.ConstantOp.from_array("clamp", np.array(bound, dtype))
            clamp = cls(value, c.result)
            ops += [c, clamp]
            value = clamp.results[0]
        if not ops:  # nothing to clamp: quantize(dequantize(q)) is q
            rewriter.replace(op, [], [value])
        else:
            rewriter.replace(op, ops, [value])
        rewriter.erase(inner)


class FoldGlobalAveragePool(RewritePattern):
    """quantize(global_avg_pool2d(dequantize(q))) -> onnxruntime's
    QLinearGlobalAveragePool: requantize(sum(q) - x_zp * H * W, x_scale / (y_scale * H * W))."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.QuantizeOp, rewriter: PatternRewriter) -> None:
        pool = op.input.owner
        if not isinstance(pool, graph.GlobalAvgPool2dOp) or not op.input.has_one_use():
            return
        if pool.layout.data != "NCHW":
            return
        dq = _dequantized(pool.input)
        x_params, y_params = (None, None) if dq is None else (_per_tensor(dq), _per_tensor(op))
        if dq is None or x_params is None or y_params is None:
            return
        (x_scale, x_zero), (y_scale, y_zero) = x_params, y_params
        n, c, h, w = shape_of(dq.input)
        size = h * w
        cast = graph.CastOp(dq.input, i32)
        total = graph.ReduceOp(cast.result, "sum", [2, 3], True)
        offset = graph.ConstantOp.from_array("pool_offset", np.int32(x_zero * size))
        shifted = graph.SubOp(total.result, offset.result)
        m = graph.ConstantOp.from_array(
            "multiplier", np.float32(x_scale / (y_scale * np.float32(size))))
        zero = graph.ConstantOp.from_array(
            "zero_point", np.array(y_zero, numpy_dtype(element_type_of(op.result))))
        requantize = graph.RequantizeOp(shifted.results[0], m.result, zero.result)
        rewriter.replace(op, [cast, total, offset, shifted, m, zero, requantize],
                         requantize.results)
        rewriter.erase(pool)


@dataclass(frozen=True)
class GraphFoldQdqPass(ModulePass):
    """Rewrite QDQ patterns into integer operators (see the module docstring)."""

    name = "graph-fold-qdq"

    unsigned_activations: bool = True
    """Make int8 activations uint8 (zero point + 128), as the CPU's u8 x s8 dot
    products need; false keeps their type."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if not any(isinstance(o, graph.QuantizeOp) for o in op.walk()):
            return
        if self.unsigned_activations:
            PatternRewriteWalker(UnsignedActivations(), apply_recursively=False).rewrite_module(op)
        PatternRewriteWalker(GreedyRewritePatternApplier([
            FoldIntegerLayer(), FoldCommuting(), FoldClamp(), FoldGlobalAveragePool(),
        ])).rewrite_module(op)


__all__ = ["GraphFoldQdqPass"]
