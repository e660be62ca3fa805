"""Reference numpy semantics of the `graph` dialect (values are numpy arrays)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view
from xdsl.interpreter import (
    Interpreter,
    InterpreterFunctions,
    PythonValues,
    impl,
    register_impls,
)
from xdsl.ir import Operation

from xweave.dialects import graph
from xweave.dialects.graph import numpy_dtype, window_output_size


def _result(op: Operation, value: np.ndarray) -> PythonValues:
    """`value` as the op's result: the result type's dtype, C-contiguous, checked shape."""
    typ = op.results[0].type
    out = np.require(np.asarray(value, dtype=numpy_dtype(typ.element_type)), requirements="C")  # pyright: ignore
    shape = typ.get_shape()  # pyright: ignore
    assert out.shape == tuple(shape), f"{op.name}: computed {out.shape}, type says {shape}"
    return (out,)


def _sigmoid(x: np.ndarray) -> np.ndarray:
    e = np.exp(-np.abs(x))  # never overflows
    return np.where(x >= 0, 1 / (1 + e), e / (1 + e))


def _relu(x: np.ndarray) -> np.ndarray:
    return np.maximum(x, 0)


def _elementwise(op: Operation, fn: Callable[..., np.ndarray], *args: np.ndarray) -> PythonValues:
    with np.errstate(all="ignore"):  # IEEE results (inf, nan) are the semantics
        return _result(op, fn(*args))


def _windows(
    x: np.ndarray,
    kernel: tuple[int, ...],
    strides: tuple[int, ...],
    dilations: tuple[int, ...],
    out_hw: tuple[int, int],
) -> np.ndarray:
    """[N, C, OH, OW, KH, KW] view of the windows of already padded NCHW data."""
    span = tuple(d * (k - 1) + 1 for k, d in zip(kernel, dilations))
    view = sliding_window_view(x, span, axis=(2, 3))
    view = view[:, :, :: strides[0], :: strides[1], :: dilations[0], :: dilations[1]]
    return view[:, :, : out_hw[0], : out_hw[1]]


def _pad_for_windows(
    x: np.ndarray,
    pads: tuple[int, ...],
    kernel: tuple[int, ...],
    strides: tuple[int, ...],
    dilations: tuple[int, ...],
    out_hw: tuple[int, int],
    value: float,
) -> np.ndarray:
    """Pad H and W by `pads` and, where ceil_mode needs it, further at the end."""
    h, w = x.shape[2:]
    extra = []
    for axis, (size, k, s, d, begin, end) in enumerate(
        zip((h, w), kernel, strides, dilations, pads[:2], pads[2:])
    ):
        needed = (out_hw[axis] - 1) * s + d * (k - 1) + 1
        extra.append(max(end, needed - size - begin))
    widths = ((0, 0), (0, 0), (pads[0], extra[0]), (pads[1], extra[1]))
    return np.pad(x, widths, constant_values=value)


def conv2d(
    x: np.ndarray,
    w: np.ndarray,
    b: np.ndarray | None,
    strides: tuple[int, ...],
    pads: tuple[int, ...],
    dilations: tuple[int, ...],
    groups: int,
) -> np.ndarray:
    """NCHW x OIHW grouped convolution by im2col and one batched matmul."""
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    oh = window_output_size(h, kh, strides[0], pads[0], pads[2], dilations[0])
    ow = window_output_size(wd, kw, strides[1], pads[1], pads[3], dilations[1])
    xp = np.pad(x, ((0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])))
    cols = _windows(xp, (kh, kw), strides, dilations, (oh, ow))  # N C OH OW KH KW
    cols = cols.reshape(n, groups, cg, oh, ow, kh, kw)
    cols = cols.transpose(1, 0, 3, 4, 2, 5, 6).reshape(groups, n * oh * ow, cg * kh * kw)
    wg = w.reshape(groups, o // groups, cg * kh * kw).transpose(0, 2, 1)
    y = np.matmul(cols, wg)  # G, N*OH*OW, O/G
    y = y.reshape(groups, n, oh, ow, o // groups).transpose(1, 0, 4, 2, 3).reshape(n, o, oh, ow)
    if b is not None:
        y = y + b.reshape(1, o, 1, 1)
    return y


def max_pool2d(x, kernel, strides, pads, dilations, ceil_mode) -> np.ndarray:
    """Max over each window; padding is -inf so it never wins."""
    out_hw = graph.pool2d_output_shape(x.shape, kernel, strides, pads, dilations, ceil_mode)[2:]
    xp = _pad_for_windows(x, pads, kernel, strides, dilations, out_hw, -np.inf)
    return _windows(xp, kernel, strides, dilations, out_hw).max(axis=(4, 5))


def avg_pool2d(x, kernel, strides, pads, ceil_mode, count_include_pad) -> np.ndarray:
    """Mean over each window; the divisor counts padding only with count_include_pad.

    Window positions added by ceil_mode beyond the end padding never count.
    """
    ones = (1, 1)
    out_hw = graph.pool2d_output_shape(x.shape, kernel, strides, pads, ones, ceil_mode)[2:]
    xp = _pad_for_windows(x, pads, kernel, strides, ones, out_hw, 0.0)
    sums = _windows(xp, kernel, strides, ones, out_hw).sum(axis=(4, 5))
    # The divisor: window sums over a mask of the positions that count.
    h, w = x.shape[2:]
    mask = np.zeros((1, 1, *xp.shape[2:]), dtype=x.dtype)
    if count_include_pad:
        mask[:, :, : pads[0] + h + pads[2], : pads[1] + w + pads[3]] = 1
    else:
        mask[:, :, pads[0] : pads[0] + h, pads[1] : pads[1] + w] = 1
    counts = _windows(mask, kernel, strides, ones, out_hw).sum(axis=(4, 5))
    return sums / counts


@register_impls
class GraphFunctions(InterpreterFunctions):
    """numpy implementations of every graph op."""

    @impl(graph.ConstantOp)
    def run_constant(self, interpreter: Interpreter, op: graph.ConstantOp, args: PythonValues):
        return (graph.constant_value(op),)

    @impl(graph.Conv2dOp)
    def run_conv2d(self, interpreter: Interpreter, op: graph.Conv2dOp, args: PythonValues):
        x, w, *bias = args
        y = conv2d(
            x,
            w,
            bias[0] if bias else None,
            op.strides.get_values(),
            op.pads.get_values(),
            op.dilations.get_values(),
            op.groups.value.data,
        )
        return _result(op, y)

    @impl(graph.DenseOp)
    def run_dense(self, interpreter: Interpreter, op: graph.DenseOp, args: PythonValues):
        x, w, *bias = args
        y = x @ w.T
        return _result(op, y + bias[0] if bias else y)

    @impl(graph.MatmulOp)
    def run_matmul(self, interpreter: Interpreter, op: graph.MatmulOp, args: PythonValues):
        return _result(op, np.matmul(args[0], args[1]))

    @impl(graph.AddOp)
    def run_add(self, interpreter: Interpreter, op: graph.AddOp, args: PythonValues):
        return _elementwise(op, np.add, *args)

    @impl(graph.SubOp)
    def run_sub(self, interpreter: Interpreter, op: graph.SubOp, args: PythonValues):
        return _elementwise(op, np.subtract, *args)

    @impl(graph.MulOp)
    def run_mul(self, interpreter: Interpreter, op: graph.MulOp, args: PythonValues):
        return _elementwise(op, np.multiply, *args)

    @impl(graph.DivOp)
    def run_div(self, interpreter: Interpreter, op: graph.DivOp, args: PythonValues):
        return _elementwise(op, np.divide, *args)

    @impl(graph.MaxOp)
    def run_max(self, interpreter: Interpreter, op: graph.MaxOp, args: PythonValues):
        return _elementwise(op, np.maximum, *args)

    @impl(graph.MinOp)
    def run_min(self, interpreter: Interpreter, op: graph.MinOp, args: PythonValues):
        return _elementwise(op, np.minimum, *args)

    @impl(graph.PowOp)
    def run_pow(self, interpreter: Interpreter, op: graph.PowOp, args: PythonValues):
        return _elementwise(op, np.power, *args)

    @impl(graph.ReluOp)
    def run_relu(self, interpreter: Interpreter, op: graph.ReluOp, args: PythonValues):
        return _elementwise(op, _relu, *args)

    @impl(graph.SigmoidOp)
    def run_sigmoid(self, interpreter: Interpreter, op: graph.SigmoidOp, args: PythonValues):
        return _elementwise(op, _sigmoid, *args)

    @impl(graph.TanhOp)
    def run_tanh(self, interpreter: Interpreter, op: graph.TanhOp, args: PythonValues):
        return _elementwise(op, np.tanh, *args)

    @impl(graph.ExpOp)
    def run_exp(self, interpreter: Interpreter, op: graph.ExpOp, args: PythonValues):
        return _elementwise(op, np.exp, *args)

    @impl(graph.NegOp)
    def run_neg(self, interpreter: Interpreter, op: graph.NegOp, args: PythonValues):
        return _elementwise(op, np.negative, *args)

    @impl(graph.SqrtOp)
    def run_sqrt(self, interpreter: Interpreter, op: graph.SqrtOp, args: PythonValues):
        return _elementwise(op, np.sqrt, *args)

    @impl(graph.AbsOp)
    def run_abs(self, interpreter: Interpreter, op: graph.AbsOp, args: PythonValues):
        return _elementwise(op, np.abs, *args)

    @impl(graph.ClipOp)
    def run_clip(self, interpreter: Interpreter, op: graph.ClipOp, args: PythonValues):
        low, high = op.min.value.data, op.max.value.data
        return _result(op, np.minimum(np.maximum(args[0], low), high))

    @impl(graph.MaxPool2dOp)
    def run_max_pool2d(self, interpreter: Interpreter, op: graph.MaxPool2dOp, args: PythonValues):
        y = max_pool2d(
            args[0],
            op.kernel.get_values(),
            op.strides.get_values(),
            op.pads.get_values(),
            op.dilations.get_values(),
            bool(op.ceil_mode.value.data),
        )
        return _result(op, y)

    @impl(graph.AvgPool2dOp)
    def run_avg_pool2d(self, interpreter: Interpreter, op: graph.AvgPool2dOp, args: PythonValues):
        y = avg_pool2d(
            args[0],
            op.kernel.get_values(),
            op.strides.get_values(),
            op.pads.get_values(),
            bool(op.ceil_mode.value.data),
            bool(op.count_include_pad.value.data),
        )
        return _result(op, y)

    @impl(graph.GlobalAvgPool2dOp)
    def run_global_avg_pool2d(self, interpreter: Interpreter, op: Operation, args: PythonValues):
        return _result(op, args[0].mean(axis=(2, 3), keepdims=True))

    @impl(graph.GlobalMaxPool2dOp)
    def run_global_max_pool2d(self, interpreter: Interpreter, op: Operation, args: PythonValues):
        return _result(op, args[0].max(axis=(2, 3), keepdims=True))

    @impl(graph.ReshapeOp)
    def run_reshape(self, interpreter: Interpreter, op: graph.ReshapeOp, args: PythonValues):
        return _result(op, args[0].reshape(op.result.type.get_shape()))  # pyright: ignore

    @impl(graph.TransposeOp)
    def run_transpose(self, interpreter: Interpreter, op: graph.TransposeOp, args: PythonValues):
        return _result(op, args[0].transpose(op.perm.get_values()))
