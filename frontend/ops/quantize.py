"""Quantization ONNX operators: QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear,
and the integer layers QLinearConv, ConvInteger, QLinearMatMul, MatMulInteger.

Quantized values are 8-bit (uint8 or int8 tensors); scales are float32 and zero points
of the quantized type, per tensor (a scalar or a 1-element vector), per axis (a vector
along `axis`) or, for QuantizeLinear/DequantizeLinear, per block of `block_size`
elements along `axis`. They become graph ops computing what onnxruntime computes:

* QuantizeLinear / DequantizeLinear -> `graph.quantize` / `graph.dequantize` (scale and
  zero point broadcast to the input). A DequantizeLinear of constant quantized weights
  is kept as an op, not evaluated at import time: `graph-fold-qdq` reads the integers;
* ConvInteger / MatMulInteger -> an integer `graph.conv2d` (padded with the input's
  zero point) / `graph.dense` or `graph.matmul` on the quantized operands, accumulating
  in int32; the zero points' contributions are constants folded into the bias where
  the weights are constant (a weight zero point is subtracted from the weights at
  compile time), else computed by graph ops;
* QLinearConv / QLinearMatMul -> the same, then `graph.requantize` by
  x_scale * w_scale / y_scale (in float32, in that order, as onnxruntime);
* DynamicQuantizeLinear -> the range of the data (including 0), its scale and zero
  point by onnxruntime's formula (a constant input gives scale 1), and `graph.quantize`.

Bad quantization parameters are one `ModelError` naming the node: a scale of zero, NaN
or infinity, a zero point whose type differs from the quantized data's, per-axis
parameters whose length differs from the axis'.
"""

from __future__ import annotations

from math import prod

import numpy as np
import onnx
from xdsl.dialects.builtin import i32
from xdsl.ir import SSAValue

from xweave.dialects import graph
from xweave.dialects.dtypes import element_type, narrowest
from xweave.errors import ModelError
from xweave.frontend.importer import Importer, normalize_axes
from xweave.frontend.onnx_checks import check_window
from xweave.frontend.ops.nn import _as_2d, _check_conv, _from_2d, _lift_1d, _window_attrs
from xweave.frontend.registry import NodeCheck, onnx_op

QUANTIZED_DTYPES = (np.dtype(np.uint8), np.dtype(np.int8))
"""The element types of quantized tensors xweave computes on."""

_ONNX_TO_NUMPY = {onnx.TensorProto.UINT8: np.dtype(np.uint8), onnx.TensorProto.INT8: np.dtype(np.int8)}


def _fail(imp: Importer, message: str) -> ModelError:
    return ModelError(f"{imp.source}: {imp.label}: {message}")


def _input(node: onnx.NodeProto, i: int) -> str | None:
    return node.input[i] if len(node.input) > i and node.input[i] else None


# --------------------------------------------------------------------------------------
# Scales and zero points
# --------------------------------------------------------------------------------------


def _check_scale(imp: Importer, name: str, scale: np.ndarray) -> np.ndarray:
    """A constant scale, checked: float32, finite and non-zero."""
    if scale.dtype != np.float32:
        raise imp.unsupported(imp.node, f"a {scale.dtype} scale ('{name}')")
    if not np.all(np.isfinite(scale)) or np.any(scale == 0):
        bad = scale[~np.isfinite(scale) | (scale == 0)].reshape(-1)[0]
        raise _fail(imp, f"scale '{name}' holds {bad}; a scale must be finite and non-zero")
    return scale


def _check_zero_point(imp: Importer, name: str | None, zero_point: np.ndarray,
                      dtype: np.dtype, what: str) -> None:
    if zero_point.dtype != dtype:
        raise _fail(imp, f"zero point '{name}' is {zero_point.dtype} but {what} is {dtype}; "
                         "they must have one type")


def _per_block_shape(shape: tuple[int, ...], axis: int, block: int) -> tuple[int, ...]:
    """The shape of per-block parameters of a `shape` tensor (blocks along `axis`)."""
    return tuple(-(-d // block) if a == axis else d for a, d in enumerate(shape))


def _check_param_shape(imp: Importer, name: str, got: tuple[int, ...], shape: tuple[int, ...],
                       axis: int, block: int) -> str:
    """'tensor', 'axis' or 'block': how parameters of shape `got` apply to `shape`."""
    if block:
        expected = _per_block_shape(shape, axis, block)
        if got != expected:
            raise _fail(imp, f"'{name}' has shape {list(got)}; blocks of {block} along axis "
                             f"{axis} of {list(shape)} need {list(expected)}")
        return "block"
    if prod(got) == 1 and len(got) <= 1:
        return "tensor"
    if len(got) != 1 or not shape or got[0] != shape[axis]:
        along = f"axis {axis} ({shape[axis]}) of {list(shape)}" if shape else "a scalar"
        raise _fail(imp, f"'{name}' has shape {list(got)}; per-axis parameters need one value "
                         f"per element of {along}")
    return "axis"


def _broadcastable(imp: Importer, name: str, array: np.ndarray, shape: tuple[int, ...],
                   axis: int, block: int) -> np.ndarray:
    """A per-tensor, per-axis or per-block constant as an array broadcasting to `shape`."""
    kind = _check_param_shape(imp, name, tuple(array.shape), shape, axis, block)
    if kind == "tensor":
        return array.reshape(())
    if kind == "block":
        return np.repeat(array, block, axis=axis).take(range(shape[axis]), axis=axis)
    return array.reshape([-1 if a == axis else 1 for a in range(len(shape))])


def _broadcastable_value(imp: Importer, name: str, shape: tuple[int, ...], axis: int,
                         block: int) -> SSAValue:
    """A run-time per-tensor, per-axis or per-block parameter, made to broadcast to
    `shape` by graph ops (blocks: each value repeated `block` times along `axis`)."""
    got = tuple(imp.shape(name))
    kind = _check_param_shape(imp, name, got, shape, axis, block)
    value = imp.value(name)
    if kind == "tensor":
        return imp.reshape(value, ())
    if kind == "axis":
        return imp.reshape(value, [shape[axis] if a == axis else 1 for a in range(len(shape))])
    blocks = got[axis]
    split = (*got[:axis + 1], 1, *got[axis + 1:])
    wide = (*got[:axis + 1], block, *got[axis + 1:])
    repeated = imp.emit(graph.BroadcastToOp(imp.reshape(value, split), wide))
    flat = imp.reshape(repeated, (*got[:axis], blocks * block, *got[axis + 1:]))
    if blocks * block == shape[axis]:
        return flat
    return imp.emit(graph.SliceOp(flat, [0] * len(shape), [1] * len(shape), shape))


def quantization_params(imp: Importer, node: onnx.NodeProto, scale_index: int,
                        zp_index: int, shape: tuple[int, ...], axis: int = 1,
                        block: int = 0, dtype: np.dtype | None = None,
                        what: str = "the quantized data") -> tuple[SSAValue, SSAValue]:
    """The scale and zero point of inputs `scale_index` and `zp_index` of `node` as graph
    values broadcasting to `shape` (zero points of `dtype`, 0 when absent).

    Constants are checked (`_check_scale`, the zero point's type, per-axis lengths);
    run-time ones are reshaped (repeated, for blocks) to broadcast the same way."""
    scale_name, zp_name = node.input[scale_index], _input(node, zp_index)
    rank = len(shape)
    if rank and (block or prod(imp.shape(scale_name)) != 1):
        axis = normalize_axes([axis], rank, node)[0]
    if imp.dtype(scale_name) != np.float32:
        raise imp.unsupported(node, f"a {imp.dtype(scale_name)} scale ('{scale_name}')")
    if scale_name in imp.constants:
        scale = _check_scale(imp, scale_name, np.asarray(imp.constants[scale_name]))
        scale = imp.constant(scale_name, _broadcastable(imp, scale_name, scale, shape, axis, block))
    else:
        scale = _broadcastable_value(imp, scale_name, shape, axis, block)
    target = imp.shape_of_value(scale)
    if zp_name is None:
        return scale, imp.constant("zero_point", np.zeros(target, dtype or np.uint8))
    zp_dtype = imp.dtype(zp_name)
    if dtype is not None and zp_dtype != dtype:
        raise _fail(imp, f"zero point '{zp_name}' is {zp_dtype} but {what} is {dtype}; "
                         "they must have one type")
    if zp_dtype not in QUANTIZED_DTYPES and not (zp_dtype == np.int32 and dtype == np.int32):
        raise imp.unsupported(node, f"{zp_dtype} quantized values ('{zp_name}')")
    if zp_name in imp.constants:
        zp = _broadcastable(imp, zp_name, np.asarray(imp.constants[zp_name]), shape, axis, block)
        return scale, imp.constant(zp_name, np.array(np.broadcast_to(zp, target)))
    value = _broadcastable_value(imp, zp_name, shape, axis, block)
    if imp.shape_of_value(value) != tuple(target):
        value = imp.emit(graph.BroadcastToOp(value, target))
    return scale, value


def _constant_zero_point(imp: Importer, node: onnx.NodeProto, i: int, dtype: np.dtype,
                         what: str) -> np.ndarray:
    """Input i, a constant zero point of `dtype` (0 when absent), as an int64 array."""
    name = _input(node, i)
    if name is None:
        return np.zeros((), np.int64)
    zp = np.asarray(imp.constants[name])
    _check_zero_point(imp, name, zp, dtype, what)
    return zp.astype(np.int64)


def _quantized_data(imp: Importer, node: onnx.NodeProto, name: str) -> SSAValue:
    """Input `name`: uint8 or int8 data."""
    dtype = imp.dtype(name)
    if dtype not in QUANTIZED_DTYPES:
        raise imp.unsupported(node, f"{dtype} quantized values ('{name}')")
    return imp.value(name)


# --------------------------------------------------------------------------------------
# QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear
# --------------------------------------------------------------------------------------


def _check_quantize_linear(check: NodeCheck) -> str | None:
    if check.attrs.get("precision", 0) not in (0, onnx.TensorProto.FLOAT):
        return f"precision={check.attrs['precision']}"
    dtype = check.attrs.get("output_dtype", 0)
    if dtype and dtype not in _ONNX_TO_NUMPY:
        return f"output_dtype {onnx.TensorProto.DataType.Name(dtype)}"
    return None


@onnx_op("QuantizeLinear", check=_check_quantize_linear)
def convert_quantize_linear(imp: Importer, node: onnx.NodeProto, attrs: dict) -> SSAValue:
    """graph.quantize: saturate(round(x / y_scale) + y_zero_point); `saturate` concerns
    float8 outputs only (xweave quantizes to uint8 and int8)."""
    x = imp.data(node, node.input[0])
    output_dtype = attrs.get("output_dtype", 0)
    dtype = _ONNX_TO_NUMPY[output_dtype] if output_dtype else None
    if dtype is None and _input(node, 2) is None:
        dtype = np.dtype(np.uint8)
    scale, zp = quantization_params(imp, node, 1, 2, imp.shape_of_value(x),
                                    attrs.get("axis", 1), attrs.get("block_size", 0), dtype,
                                    "output_dtype" if output_dtype else "the output")
    return imp.emit(graph.QuantizeOp(x, scale, zp))


def _check_dequantize_linear(check: NodeCheck) -> str | None:
    dtype = check.attrs.get("output_dtype", 0)
    if dtype and dtype != onnx.TensorProto.FLOAT:
        return f"output_dtype {onnx.TensorProto.DataType.Name(dtype)}"
    return None


@onnx_op("DequantizeLinear", check=_check_dequantize_linear, fold=False)
def convert_dequantize_linear(imp: Importer, node: onnx.NodeProto, attrs: dict) -> SSAValue:
    """graph.dequantize: (x - x_zero_point) * x_scale, for uint8, int8 and int32 x (an
    int32 bias of a quantized layer)."""
    dtype = imp.dtype(node.input[0])
    if dtype not in (*QUANTIZED_DTYPES, np.dtype(np.int32)):
        raise imp.unsupported(node, f"{dtype} quantized values ('{node.input[0]}')")
    x = imp.value(node.input[0])
    scale, zp = quantization_params(imp, node, 1, 2, imp.shape_of_value(x),
                                    attrs.get("axis", 1), attrs.get("block_size", 0), dtype)
    return imp.emit(graph.DequantizeOp(x, scale, zp))


@onnx_op("DynamicQuantizeLinear")
def convert_dynamic_quantize_linear(imp: Importer, node: onnx.NodeProto, attrs: dict
                                    ) -> list[SSAValue]:
    """uint8 quantization by the data's range [min(x, 0), max(x, 0)]: scale = range /
    255 (1 for an all-zero input, as onnxruntime), zero point round(clamp(-min /
    scale, 0, 255)); outputs y, y_scale, y_zero_point."""
    x = imp.data(node, node.input[0])
    axes = list(range(len(imp.shape_of_value(x))))

    def const(value: float) -> SSAValue:
        return imp.constant("dynamic_quantize", np.float32(value))

    lo = imp.emit(graph.MinOp(imp.emit(graph.ReduceOp(x, "min", axes, False)), const(0)))
    hi = imp.emit(graph.MaxOp(imp.emit(graph.ReduceOp(x, "max", axes, False)), const(0)))
    span = imp.emit(graph.SubOp(hi, lo))
    empty = imp.emit(graph.EqualOp(span, const(0)))
    scale = imp.emit(graph.WhereOp(empty, const(1), imp.emit(graph.DivOp(span, const(255)))))
    start = imp.emit(graph.SubOp(const(0), imp.emit(graph.DivOp(lo, scale))))
    zero = imp.emit(graph.RoundOp(imp.emit(graph.ClipOp(start, 0.0, 255.0))))
    zero_point = imp.emit(graph.CastOp(zero, element_type(np.uint8)))
    y = imp.emit(graph.QuantizeOp(x, scale, zero_point))
    return [y, scale, zero_point]


# --------------------------------------------------------------------------------------
# Integer convolutions
# --------------------------------------------------------------------------------------


def _wrap_i32(values: np.ndarray) -> np.ndarray:
    """int64 values as int32, wrapping as int32 sums do."""
    return values.astype(np.int64).astype(np.int32)


def integer_conv(imp: Importer, node: onnx.NodeProto, attrs: dict, x_zp: np.ndarray,
                 w_zp: np.ndarray, bias: np.ndarray | None) -> tuple[SSAValue, bool]:
    """sum over the window of (x - x_zp) * (w - w_zp) (+ bias), in int32; returns the
    value and whether it is 1-D ([N, O, L], from [N, C, L] data)."""
    x_name, w_name = node.input[0], node.input[3 if node.op_type == "QLinearConv" else 1]
    _check_conv(imp, x_name, w_name, attrs)
    one_d = len(imp.shape(w_name)) == 3
    if one_d:
        attrs = _lift_1d(attrs)
        x = _as_2d(imp, x_name)
    else:
        x = _quantized_data(imp, node, x_name)
    w_shape = imp.shape(w_name) if not one_d else (*imp.shape(w_name)[:2], 1, imp.shape(w_name)[2])
    kernel = w_shape[2:]
    strides, pads, dilations = _window_attrs(attrs, imp.shape_of_value(x)[2:], kernel)
    check_window(imp.source, imp.label, imp.shape_of_value(x), kernel, strides, pads, dilations,
                 outer=imp.shape_of_value(x)[0] * w_shape[0], per_tap=w_shape[1])
    if x_zp.size != 1:
        raise _fail(imp, f"the input zero point has {x_zp.size} values; it must be per tensor")
    zx = int(x_zp.reshape(-1)[0])
    out_channels = w_shape[0]
    if w_zp.size not in (1, out_channels):
        raise _fail(imp, f"the weight zero point has {w_zp.size} values; it must be per tensor "
                         f"or one per output channel ({out_channels})")
    zw = w_zp.reshape(-1)
    window = dict(strides=strides, pads=pads, dilations=dilations, groups=attrs.get("group", 1))
    if w_name in imp.constants:
        w = np.asarray(imp.constants[w_name]).reshape(w_shape)
        if w.dtype not in QUANTIZED_DTYPES:
            raise imp.unsupported(node, f"{w.dtype} weights ('{w_name}')")
        shifted = w.astype(np.int64) - zw.reshape(-1, 1, 1, 1)
        offset = -zx * shifted.reshape(out_channels, -1).sum(axis=1)
        if bias is not None:
            offset = offset + bias
        weight = imp.constant(w_name, narrowest(shifted))
        b = imp.constant(f"{w_name}_bias", _wrap_i32(offset))
        y = imp.emit(graph.Conv2dOp(x, weight, b, pad_value=zx, **window))
    else:
        weight = imp.emit(graph.CastOp(_quantized_data(imp, node, w_name), i32))
        if one_d:
            weight = imp.reshape(weight, w_shape)
        if np.any(zw):
            zero = imp.constant("w_zero_point", _wrap_i32(np.broadcast_to(zw, (out_channels,))
                                                          ).reshape(-1, 1, 1, 1))
            weight = imp.emit(graph.SubOp(weight, zero))
        b = None if bias is None else imp.constant("bias", _wrap_i32(bias))
        y = imp.emit(graph.Conv2dOp(x, weight, b, pad_value=zx, **window))
        if zx:
            sums = imp.emit(graph.ReduceOp(weight, "sum", [1, 2, 3], False))
            scaled = imp.emit(graph.MulOp(sums, imp.constant("x_zero_point", np.int32(zx))))
            y = imp.emit(graph.SubOp(y, imp.reshape(scaled, (out_channels, 1, 1))))
    return y, one_d


def _conv_rank(check: NodeCheck) -> str | None:
    r = check.rank(3 if check.node.op_type == "QLinearConv" else 1)
    if r is not None and r not in (3, 4):
        return f"{r - 2}-D convolution (only 1-D and 2-D)"
    return None


@onnx_op("ConvInteger", check=_conv_rank, constant_inputs=(2, 3),
         constant_reason="a run-time zero point")
def convert_conv_integer(imp: Importer, node: onnx.NodeProto, attrs: dict) -> SSAValue:
    """The int32 convolution of (x - x_zero_point) and (w - w_zero_point)."""
    x_dtype, w_dtype = imp.dtype(node.input[0]), imp.dtype(node.input[1])
    x_zp = _constant_zero_point(imp, node, 2, x_dtype, "x")
    w_zp = _constant_zero_point(imp, node, 3, w_dtype, "w")
    y, one_d = integer_conv(imp, node, attrs, x_zp, w_zp, None)
    return _from_2d(imp, y) if one_d else y


def multiplier(imp: Importer, node: onnx.NodeProto, a: int, b: int, y: int) -> np.ndarray:
    """a_scale * b_scale / y_scale in float32, in onnxruntime's order (constants)."""
    scales = []
    for i in (a, b, y):
        name = node.input[i]
        scales.append(_check_scale(imp, name, np.asarray(imp.constants[name])).reshape(-1))
    a_scale, b_scale, y_scale = scales
    if y_scale.size != 1:
        raise _fail(imp, f"y_scale has {y_scale.size} values; it must be per tensor")
    return (a_scale.reshape(-1, 1) * b_scale.reshape(1, -1)) / y_scale[0]


def _requantized(imp: Importer, node: onnx.NodeProto, acc: SSAValue, scale: np.ndarray,
                 zp_index: int, axis: int, dtype: np.dtype) -> SSAValue:
    """graph.requantize of `acc` by `scale` ([channels]) along `axis`."""
    rank = len(imp.shape_of_value(acc))
    shape = [1] * rank
    if scale.size != 1:
        shape[axis] = scale.size
    m = imp.constant("multiplier", np.array(scale.reshape(shape)))
    zp = _constant_zero_point(imp, node, zp_index, dtype, "the output")
    if zp.size != 1:
        raise _fail(imp, f"y_zero_point has {zp.size} values; it must be per tensor")
    zero = imp.constant(node.input[zp_index] if _input(node, zp_index) else "y_zero_point",
                        np.full(shape, zp.reshape(-1)[0], dtype))
    return imp.emit(graph.RequantizeOp(acc, m, zero))


@onnx_op("QLinearConv", check=_conv_rank, constant_inputs=(1, 2, 4, 5, 6, 7),
         constant_reason="a run-time scale or zero point")
def convert_qlinear_conv(imp: Importer, node: onnx.NodeProto, attrs: dict) -> SSAValue:
    """The integer convolution plus the int32 bias, requantized by x_scale * w_scale /
    y_scale to y_zero_point's type (onnxruntime's QLinearConv)."""
    x_dtype, w_dtype = imp.dtype(node.input[0]), imp.dtype(node.input[3])
    x_zp = _constant_zero_point(imp, node, 2, x_dtype, "x")
    w_zp = _constant_zero_point(imp, node, 5, w_dtype, "w")
    bias = None
    if (b_name := _input(node, 8)) is not None:
        if b_name not in imp.constants:
            raise imp.unsupported(node, f"a run-time bias ('{b_name}')")
        bias = np.asarray(imp.constants[b_name])
        if bias.dtype != np.int32:
            raise _fail(imp, f"bias '{b_name}' is {bias.dtype}; QLinearConv's bias is int32")
        bias = bias.astype(np.int64)
    y_dtype = imp.dtype(node.input[7]) if node.input[7] in imp.constants else x_dtype
    if y_dtype not in QUANTIZED_DTYPES:
        raise imp.unsupported(node, f"{y_dtype} outputs")
    acc, one_d = integer_conv(imp, node, attrs, x_zp, w_zp, bias)
    out_channels = imp.shape_of_value(acc)[1]
    scale = multiplier(imp, node, 1, 4, 6).reshape(-1)
    if scale.size not in (1, out_channels):
        raise _fail(imp, f"w_scale has {scale.size} values; it must be per tensor or one per "
                         f"output channel ({out_channels})")
    y = _requantized(imp, node, acc, scale, 7, 1, y_dtype)
    return _from_2d(imp, y) if one_d else y


# --------------------------------------------------------------------------------------
# Integer matrix products
# --------------------------------------------------------------------------------------


def _zero_point_value(imp: Importer, node: onnx.NodeProto, i: int, dtype: np.dtype,
                      what: str) -> np.ndarray | SSAValue | None:
    """Input i, a zero point: a constant (int64 array), a run-time value, or None."""
    name = _input(node, i)
    if name is None:
        return None
    if name in imp.constants:
        return _constant_zero_point(imp, node, i, dtype, what)
    if imp.dtype(name) != dtype:
        raise _fail(imp, f"zero point '{name}' is {imp.dtype(name)} but {what} is {dtype}; "
                         "they must have one type")
    return imp.value(name)


def integer_matmul(imp: Importer, node: onnx.NodeProto, a_index: int, b_index: int,
                   a_zp, b_zp) -> SSAValue:
    """sum over k of (a - a_zp) * (b - b_zp), in int32 (numpy matmul shapes). `a_zp`:
    None, a constant (per tensor or per row of a 2-D a) or a run-time per-tensor value;
    `b_zp`: None, a constant (per tensor or per column) or a run-time value (per tensor
    or per column)."""
    a_name, b_name = node.input[a_index], node.input[b_index]
    a = _quantized_data(imp, node, a_name)
    a_shape, b_shape = imp.shape(a_name), imp.shape(b_name)
    if len(a_shape) < 1 or len(b_shape) < 1:
        raise imp.unsupported(node, "scalar operands")
    if len(a_shape) == 1:
        a = imp.reshape(a, (1, *a_shape))
    a_rows = imp.shape_of_value(a)
    k, n = (b_shape[0], 1) if len(b_shape) == 1 else b_shape[-2:]
    if a_rows[-1] != k:
        raise _fail(imp, f"contracting dimensions differ: {list(a_shape)} x {list(b_shape)}")
    zb = np.zeros((), np.int64) if b_zp is None else b_zp
    zb_size = prod(imp.shape_of_value(zb)) if isinstance(zb, SSAValue) else zb.size
    if zb_size not in (1, n):
        raise _fail(imp, f"b's zero point has {zb_size} values; it must be per tensor or one "
                         f"per column ({n})")
    colsum: SSAValue | np.ndarray
    if b_name in imp.constants and len(b_shape) <= 2 and isinstance(zb, np.ndarray):
        b = np.asarray(imp.constants[b_name]).reshape(k, n)
        if b.dtype not in QUANTIZED_DTYPES:
            raise imp.unsupported(node, f"{b.dtype} values ('{b_name}')")
        shifted = b.astype(np.int64) - zb.reshape(1, -1)
        colsum = shifted.sum(axis=0)
        rows = prod(a_rows[:-1])
        flat = imp.reshape(a, (rows, k))
        weight = imp.constant(b_name, np.ascontiguousarray(narrowest(shifted).T))
        bias = None
        if isinstance(a_zp, np.ndarray) and a_zp.size == 1 and a_zp.reshape(-1)[0]:
            bias = imp.constant(f"{b_name}_bias", _wrap_i32(-a_zp.reshape(-1)[0] * colsum))
            a_zp = None
        y = imp.reshape(imp.emit(graph.DenseOp(flat, weight, bias)), (*a_rows[:-1], n))
        colsum = imp.constant(f"{b_name}_colsum", _wrap_i32(colsum))
    else:
        b = imp.emit(graph.CastOp(_quantized_data(imp, node, b_name), i32))
        if len(b_shape) == 1:
            b = imp.reshape(b, (k, 1))
        if isinstance(zb, SSAValue):
            zero = imp.emit(graph.CastOp(imp.reshape(zb, (zb_size,)), i32))
            b = imp.emit(graph.SubOp(b, zero))
        elif np.any(zb):
            b = imp.emit(graph.SubOp(b, imp.constant("b_zero_point", _wrap_i32(
                np.broadcast_to(zb.reshape(-1), (n,))))))
        y = imp.emit(graph.MatmulOp(a, b))
        b_rank = len(imp.shape_of_value(b))
        colsum = imp.emit(graph.ReduceOp(b, "sum", [b_rank - 2], True))
    if isinstance(a_zp, np.ndarray):
        if a_zp.size not in (1, a_rows[-2]) or (a_zp.size > 1 and len(a_rows) != 2):
            raise _fail(imp, f"a's zero point has {a_zp.size} values; it must be per tensor or "
                             f"one per row of a 2-D a ({a_rows[-2]})")
        if np.any(a_zp):
            zero = imp.constant("a_zero_point", _wrap_i32(a_zp.reshape(-1, 1)
                                                          if a_zp.size > 1 else a_zp.reshape(())))
            y = imp.emit(graph.SubOp(y, imp.emit(graph.MulOp(zero, colsum))))
    elif a_zp is not None:  # a run-time zero point (DynamicQuantizeLinear's)
        if prod(imp.shape_of_value(a_zp)) != 1:
            raise imp.unsupported(node, "a run-time zero point of a that is not per tensor")
        zero = imp.emit(graph.CastOp(imp.reshape(a_zp, ()), i32))
        y = imp.emit(graph.SubOp(y, imp.emit(graph.MulOp(zero, colsum))))
    shape = list(imp.shape_of_value(y))
    if len(b_shape) == 1:
        shape.pop(-1)
    if len(a_shape) == 1:
        shape.pop(-1 if len(b_shape) == 1 else -2)
    return imp.reshape(y, shape)


@onnx_op("MatMulInteger")
def convert_matmul_integer(imp: Importer, node: onnx.NodeProto, attrs: dict) -> SSAValue:
    """numpy matmul of (A - a_zero_point) and (B - b_zero_point), in int32."""
    a_dtype, b_dtype = imp.dtype(node.input[0]), imp.dtype(node.input[1])
    a_zp = _zero_point_value(imp, node, 2, a_dtype, "A")
    b_zp = _zero_point_value(imp, node, 3, b_dtype, "B")
    return integer_matmul(imp, node, 0, 1, a_zp, b_zp)


@onnx_op("QLinearMatMul", constant_inputs=(1, 2, 4, 5, 6, 7),
         constant_reason="a run-time scale or zero point")
def convert_qlinear_matmul(imp: Importer, node: onnx.NodeProto, attrs: dict) -> SSAValue:
    """The integer matmul requantized by a_scale * b_scale / y_scale (per tensor, or
    per row of a 2-D a / per column of b) to y_zero_point's type."""
    a_dtype, b_dtype = imp.dtype(node.input[0]), imp.dtype(node.input[3])
    y_dtype = imp.dtype(node.input[7])
    if y_dtype not in QUANTIZED_DTYPES:
        raise imp.unsupported(node, f"{y_dtype} outputs")
    for i in (1, 4, 6):
        if imp.dtype(node.input[i]) != np.float32:
            raise imp.unsupported(node, f"a {imp.dtype(node.input[i])} scale ('{node.input[i]}')")
    a_zp = _constant_zero_point(imp, node, 2, a_dtype, "a")
    b_zp = _constant_zero_point(imp, node, 5, b_dtype, "b")
    acc = integer_matmul(imp, node, 0, 3, a_zp, b_zp)
    shape = imp.shape_of_value(acc)
    scale = multiplier(imp, node, 1, 4, 6)
    rows, columns = scale.shape
    if rows != 1 and (len(shape) < 2 or rows != shape[-2]):
        raise _fail(imp, f"a_scale has {rows} values; it must be per tensor or one per row")
    if columns != 1 and columns != shape[-1]:
        raise _fail(imp, f"b_scale has {columns} values; it must be per tensor or one per "
                         f"column ({shape[-1]})")
    m = scale.reshape((rows, columns) if rows != 1 else (columns,)) if scale.size > 1 else scale.reshape(())
    m_value = imp.constant("multiplier", np.array(m))
    zp = _constant_zero_point(imp, node, 7, y_dtype, "the output")
    if zp.size != 1:
        raise _fail(imp, f"y_zero_point has {zp.size} values; it must be per tensor")
    zero = imp.constant(node.input[7], np.full(imp.shape_of_value(m_value), zp.reshape(-1)[0],
                                               y_dtype))
    return imp.emit(graph.RequantizeOp(acc, m_value, zero))


__all__ = ["QUANTIZED_DTYPES", "integer_conv", "integer_matmul", "quantization_params"]
