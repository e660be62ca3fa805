"""Compute definitions of the quantization ops (graph.quantize, dequantize, requantize).

Each is elementwise over its input with the scale and zero point broadcast to it
(numpy rules), in float32 as onnxruntime computes them: a quotient `x / scale` (not a
product with the reciprocal), rounding to nearest even, the zero point added, then
saturation to the result type by clamping in float32 before the conversion (values
beyond it never reach the conversion, which would be undefined for them).
"""

from __future__ import annotations

from collections.abc import Sequence

from xweave import te
from xweave.operators.elementwise import broadcast_index

RANGES = {"int8": (-128, 127), "uint8": (0, 255), "int32": (-(1 << 31), (1 << 31) - 1)}
"""The values of each quantized dtype."""


def _saturated(value: te.Expr, zero_point: te.Expr, dtype: str) -> te.Expr:
    """round_half_even(value) + zero_point (float32), clamped to `dtype`, converted."""
    lo, hi = RANGES[dtype]
    shifted = te.round(value) + te.cast(zero_point, "float32")
    return te.cast(te.min(te.max(shifted, float(lo)), float(hi)), dtype)


def quantize(x: te.Tensor, scale: te.Tensor, zero_point: te.Tensor, out_shape: Sequence[int]):
    """saturate(round(x / scale) + zero_point), of the zero point's dtype."""
    shape = tuple(out_shape)

    def body(*i):
        s, z = scale[broadcast_index(scale, shape, i)], zero_point[broadcast_index(zero_point, shape, i)]
        return _saturated(x[i] / s, z, zero_point.dtype)

    return te.compute(shape, body, name="quantize")


def dequantize(x: te.Tensor, scale: te.Tensor, zero_point: te.Tensor, out_shape: Sequence[int]):
    """float32(x - zero_point) * scale (the difference exact, in int32)."""
    shape = tuple(out_shape)

    def body(*i):
        s, z = scale[broadcast_index(scale, shape, i)], zero_point[broadcast_index(zero_point, shape, i)]
        difference = te.cast(x[i], "int32") - te.cast(z, "int32")
        return te.cast(difference, "float32") * s

    return te.compute(shape, body, name="dequantize")


def requantize(acc: te.Tensor, scale: te.Tensor, zero_point: te.Tensor, out_shape: Sequence[int]):
    """saturate(round(float32(acc) * scale) + zero_point): an int32 accumulator to the
    zero point's dtype (an integer layer's epilogue)."""
    shape = tuple(out_shape)

    def body(*i):
        s, z = scale[broadcast_index(scale, shape, i)], zero_point[broadcast_index(zero_point, shape, i)]
        return _saturated(te.cast(acc[i], "float32") * s, z, zero_point.dtype)

    return te.compute(shape, body, name="requantize")
