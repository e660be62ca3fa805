"""Reference numpy semantics of the `graph` dialect (values are numpy arrays)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view
from xdsl.interpreter import (
    Interpreter,
    InterpreterFunctions,
    PythonValues,
    ReturnedValues,
    impl,
    impl_terminator,
    register_impls,
)
from xdsl.ir import Operation

from xweave.dialects import graph
from xweave.dialects.dtypes import integer_range, numpy_dtype
from xweave.dialects.graph.constants import constant_value
from xweave.dialects.graph.shapes import window2d_output_size, window_output_size
from xweave.dialects.graph.winograd import winograd_tiles
from xweave.dialects.interpreters.numpy_ops import erf
from xweave.layout import transform_array
from xweave.winograd import winograd_matrices


def _result(op: Operation, value: np.ndarray) -> PythonValues:
    """`value` as the op's result: the result type's dtype, C-contiguous, checked shape."""
    typ = op.results[0].type
    out = np.require(np.asarray(value, dtype=numpy_dtype(typ.element_type)), requirements="C")  # pyright: ignore
    shape = typ.get_shape()  # pyright: ignore
    assert out.shape == tuple(shape), f"{op.name}: computed {out.shape}, type says {shape}"
    return (out,)


def _nchw(op: Operation, fn: Callable[[np.ndarray], np.ndarray], x: np.ndarray) -> PythonValues:
    """`fn` (NCHW in, NCHW out) applied to `x` in the pool op's `layout`."""
    layout = op.layout.data  # pyright: ignore[reportAttributeAccessIssue]
    if layout == "NCHW":
        return _result(op, fn(x))
    return _result(op, transform_array(fn(transform_array(x, layout, "NCHW")), "NCHW", layout))


def _conv_window(
    op: graph.Conv2dOp | graph.Conv2dNchwcOp | graph.ConvTranspose2dOp,
) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """(strides, pads, dilations) of a convolution op."""
    return op.strides.get_values(), op.pads.get_values(), op.dilations.get_values()


def _pool_window(op: graph.MaxPool2dOp | graph.AvgPool2dOp) -> dict:
    """kernel, strides, pads and ceil_mode of a pool op, as keywords of `max_pool2d`
    and `avg_pool2d`."""
    return {
        "kernel": op.kernel.get_values(),
        "strides": op.strides.get_values(),
        "pads": op.pads.get_values(),
        "ceil_mode": bool(op.ceil_mode.value.data),
    }


def _sigmoid(x: np.ndarray) -> np.ndarray:
    e = np.exp(-np.abs(x))  # never overflows
    return np.where(x >= 0, 1 / (1 + e), e / (1 + e))


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
    pad_value: int = 0,
) -> np.ndarray:
    """NCHW x OIHW grouped convolution by im2col and one batched matmul; integer
    operands are summed exactly (in int64, then wrapped to the result's int32 by the
    caller), their input padded with `pad_value`."""
    if x.dtype.kind in "iu":
        x, w = x.astype(np.int64), w.astype(np.int64)
        b = None if b is None else b.astype(np.int64)
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    oh = window_output_size(h, kh, strides[0], pads[0], pads[2], dilations[0])
    ow = window_output_size(wd, kw, strides[1], pads[1], pads[3], dilations[1])
    xp = np.pad(x, ((0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])),
                constant_values=pad_value)
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
    """Max over each window; padding is -inf (an integer type's least value) so it
    never wins."""
    out_hw = window2d_output_size(x.shape[2:], kernel, strides, pads, dilations, ceil_mode)
    lowest = np.iinfo(x.dtype).min if x.dtype.kind in "iu" else -np.inf
    xp = _pad_for_windows(x, pads, kernel, strides, dilations, out_hw, lowest)
    return _windows(xp, kernel, strides, dilations, out_hw).max(axis=(4, 5))


def avg_pool2d(x, kernel, strides, pads, ceil_mode, count_include_pad) -> np.ndarray:
    """Mean over each window; the divisor counts padding only with count_include_pad.

    Window positions added by ceil_mode beyond the end padding never count.
    """
    ones = (1, 1)
    out_hw = window2d_output_size(x.shape[2:], kernel, strides, pads, ones, ceil_mode)
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


def _exact(arrays: list[np.ndarray]) -> list[np.ndarray]:
    """Integer operands as int64 (summed exactly); float ones unchanged."""
    return [a.astype(np.int64) if a.dtype.kind in "iu" else a for a in arrays]


def _wrapped(op: Operation, y: np.ndarray) -> np.ndarray:
    """An exact integer result as the op's (int32) result: wrapped, as i32 adds wrap."""
    element = op.results[0].type.element_type  # pyright: ignore[reportAttributeAccessIssue]
    return y.astype(numpy_dtype(element)) if y.dtype.kind in "iu" else y


def _saturate(op: Operation, scaled: np.ndarray, zero_point: np.ndarray) -> np.ndarray:
    """round_half_even(scaled) + zero_point, saturated to the result's integer type
    (float32 `scaled`; NaN saturates to the low end, as onnxruntime's MLAS does)."""
    element = op.results[0].type.element_type  # pyright: ignore[reportAttributeAccessIssue]
    lo, hi = integer_range(element)
    values = np.rint(scaled.astype(np.float64)) + zero_point.astype(np.float64)
    values = np.clip(np.nan_to_num(values, nan=lo, posinf=hi, neginf=lo), lo, hi)
    return values.astype(numpy_dtype(element))


# --------------------------------------------------------------------------------------
# Activations, math, logic, comparisons
# --------------------------------------------------------------------------------------


def _softplus(x: np.ndarray) -> np.ndarray:
    return np.maximum(x, 0) + np.log1p(np.exp(-np.abs(x)))


def _gelu(x: np.ndarray, approximate: str) -> np.ndarray:
    x = x.astype(np.float64)
    if approximate == "tanh":
        return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3)))
    return 0.5 * x * (1 + erf(x / np.sqrt(2)))


def _elu(x: np.ndarray, alpha: float) -> np.ndarray:
    return np.where(x > 0, x, alpha * np.expm1(np.minimum(x, 0)))


def _f(op: Operation, prop: str) -> float:
    return op.properties[prop].value.data  # pyright: ignore[reportAttributeAccessIssue]


UNARY_FUNCTIONS: dict[type[Operation], Callable[[Operation, np.ndarray], np.ndarray]] = {
    graph.ReluOp: lambda op, x: np.maximum(x, 0),
    graph.SigmoidOp: lambda op, x: _sigmoid(x),
    graph.TanhOp: lambda op, x: np.tanh(x),
    graph.ExpOp: lambda op, x: np.exp(x),
    graph.NegOp: lambda op, x: np.negative(x),
    graph.SqrtOp: lambda op, x: np.sqrt(x),
    graph.AbsOp: lambda op, x: np.abs(x),
    graph.ClipOp: lambda op, x: np.minimum(np.maximum(x, _f(op, "min")), _f(op, "max")),
    graph.LogOp: lambda op, x: np.log(x),
    graph.ErfOp: lambda op, x: erf(x),
    graph.ReciprocalOp: lambda op, x: 1 / x,
    graph.SoftplusOp: lambda op, x: _softplus(x),
    graph.SoftsignOp: lambda op, x: x / (1 + np.abs(x)),
    graph.SignOp: lambda op, x: np.sign(x),
    graph.FloorOp: lambda op, x: np.floor(x),
    graph.CeilOp: lambda op, x: np.ceil(x),
    graph.RoundOp: lambda op, x: np.rint(x),
    graph.SinOp: lambda op, x: np.sin(x),
    graph.CosOp: lambda op, x: np.cos(x),
    graph.HardSwishOp: lambda op, x: x * np.clip(x / 6 + 0.5, 0, 1),
    graph.LeakyReluOp: lambda op, x: np.where(x >= 0, x, _f(op, "alpha") * x),
    graph.EluOp: lambda op, x: _elu(x, _f(op, "alpha")),
    graph.SeluOp: lambda op, x: _f(op, "gamma") * _elu(x, _f(op, "alpha")),
    graph.HardSigmoidOp: lambda op, x: np.clip(_f(op, "alpha") * x + _f(op, "beta"), 0, 1),
    graph.GeluOp: lambda op, x: _gelu(x, op.approximate.data),  # pyright: ignore
    graph.ShrinkOp: lambda op, x: np.where(
        x > _f(op, "lambd"), x - _f(op, "bias"),
        np.where(x < -_f(op, "lambd"), x + _f(op, "bias"), 0)),
    graph.NotOp: lambda op, x: np.logical_not(x),
}

BINARY_FUNCTIONS: dict[type[Operation], Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    graph.AddOp: np.add,
    graph.SubOp: np.subtract,
    graph.MulOp: np.multiply,
    graph.DivOp: np.divide,
    graph.MaxOp: np.maximum,
    graph.MinOp: np.minimum,
    graph.PowOp: np.power,
    graph.PreluOp: lambda x, s: np.where(x >= 0, x, s * x),
    graph.AndOp: np.logical_and,
    graph.OrOp: np.logical_or,
    graph.XorOp: np.logical_xor,
    graph.EqualOp: np.equal,
    graph.LessOp: np.less,
    graph.LessEqualOp: np.less_equal,
    graph.GreaterOp: np.greater,
    graph.GreaterEqualOp: np.greater_equal,
}


def softmax(x: np.ndarray, axis: int) -> np.ndarray:
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def log_softmax(x: np.ndarray, axis: int) -> np.ndarray:
    shifted = x - x.max(axis=axis, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))


def layer_norm(x, scale, bias, axis: int, epsilon: float) -> np.ndarray:
    axes = tuple(range(axis, x.ndim))
    mean = x.mean(axis=axes, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=axes, keepdims=True)
    y = (x - mean) / np.sqrt(var + epsilon) * scale
    return y if bias is None else y + bias


def lrn(x: np.ndarray, size: int, alpha: float, beta: float, bias: float) -> np.ndarray:
    channels = x.shape[1]
    before = (size - 1) // 2
    after = size - 1 - before
    squares = np.pad(x.astype(np.float64) ** 2,
                     [(0, 0), (before, after)] + [(0, 0)] * (x.ndim - 2))
    window = sum(squares[:, i : i + channels] for i in range(size))
    return x / (bias + alpha / size * window) ** beta


def conv_transpose2d(x, w, b, strides, pads, dilations, output_padding, groups) -> np.ndarray:
    """Scatter-add of every input pixel's weighted kernel, then crop the pads."""
    n, c, h, wd = x.shape
    _, og, kh, kw = w.shape
    sh, sw = strides
    dh, dw = dilations
    full_h = sh * (h - 1) + output_padding[0] + dh * (kh - 1) + 1
    full_w = sw * (wd - 1) + output_padding[1] + dw * (kw - 1) + 1
    out = np.zeros((n, og * groups, full_h, full_w), dtype=np.float64)
    cg = c // groups
    for g in range(groups):
        xg = x[:, g * cg : (g + 1) * cg].astype(np.float64)
        wg = w[g * cg : (g + 1) * cg].astype(np.float64)  # cg, og, kh, kw
        for ky in range(kh):
            for kx in range(kw):
                contrib = np.einsum("nchw,co->nohw", xg, wg[:, :, ky, kx])
                y0, x0 = ky * dh, kx * dw
                out[:, g * og : (g + 1) * og,
                    y0 : y0 + sh * (h - 1) + 1 : sh, x0 : x0 + sw * (wd - 1) + 1 : sw] += contrib
    out = out[:, :, pads[0] : full_h - pads[2], pads[1] : full_w - pads[3]]
    if b is not None:
        out = out + b.reshape(1, -1, 1, 1)
    return out


def pad(x: np.ndarray, pads, mode: str, value: float) -> np.ndarray:
    rank = x.ndim
    widths = [(pads[d], pads[d + rank]) for d in range(rank)]
    if mode == "constant":
        return np.pad(x, widths, mode="constant", constant_values=value)
    return np.pad(x, widths, mode=mode)


def gather(x: np.ndarray, indices: np.ndarray, axis: int) -> np.ndarray:
    extent = x.shape[axis]
    indices = np.where(indices < 0, indices + extent, indices)
    return np.take(x, np.clip(indices, 0, extent - 1), axis=axis)


_REDUCERS = {"sum": np.sum, "mean": np.mean, "max": np.max, "min": np.min, "prod": np.prod}


class GraphFunctions(InterpreterFunctions):
    """numpy implementations of every graph op (the elementwise ones from
    `UNARY_FUNCTIONS` and `BINARY_FUNCTIONS`, registered below the class)."""

    def _unary(self, interpreter: Interpreter, op: Operation, args: PythonValues):
        return _elementwise(op, lambda x: UNARY_FUNCTIONS[type(op)](op, x), args[0])

    def _binary(self, interpreter: Interpreter, op: Operation, args: PythonValues):
        return _elementwise(op, BINARY_FUNCTIONS[type(op)], *args)

    @impl(graph.LayoutTransformOp)
    def run_layout_transform(self, interpreter: Interpreter, op: graph.LayoutTransformOp,
                             args: PythonValues):
        return _result(op, transform_array(args[0], op.src_layout.data, op.dst_layout.data))

    @impl(graph.Conv2dNchwcOp)
    def run_conv2d_nchwc(self, interpreter: Interpreter, op: graph.Conv2dNchwcOp,
                         args: PythonValues):
        # The meaning of the blocked op: conv2d on the same tensors in NCHW / OIHW.
        x, w, *bias = args
        ci, (ob, _, _, _, wi, co) = x.shape[4], w.shape
        y = conv2d(
            transform_array(x, f"NCHW{ci}c", "NCHW"),
            transform_array(w, f"OIHW{wi}i{co}o", "OIHW"),
            bias[0].reshape(ob * co) if bias else None,
            *_conv_window(op),
            op.groups.value.data,
            op.input_pad_value,
        )
        return _result(op, _wrapped(op, transform_array(y, "NCHW", f"NCHW{co}c")))

    @impl(graph.WinogradInputTransformOp)
    def run_winograd_input_transform(self, interpreter: Interpreter,
                                     op: graph.WinogradInputTransformOp, args: PythonValues):
        x, tile, pads = args[0], op.tile.value.data, op.pads.get_values()
        blocked = x if x.ndim == 5 else x[..., None]
        n, cb, h, w, blk = blocked.shape
        th, tw = winograd_tiles(h + pads[0] + pads[2] - 2, w + pads[1] + pads[3] - 2, tile)
        a = tile + 2
        padded = np.pad(blocked, ((0, 0), (0, 0), (pads[0], th * tile + 2 - h - pads[0]),
                                  (pads[1], tw * tile + 2 - w - pads[1]), (0, 0)))
        windows = sliding_window_view(padded, (a, a), axis=(2, 3))
        tiles = windows[:, :, ::tile, ::tile][:, :, :th, :tw]  # [n][cb][th][tw][blk][a][a]
        _, _, bt = winograd_matrices(tile)
        v = np.einsum("ui,nctwkij,vj->uvntwck", bt, tiles, bt)
        return _result(op, v.reshape(a * a, n * th * tw, cb, blk))

    @impl(graph.WinogradMatmulOp)
    def run_winograd_matmul(self, interpreter: Interpreter, op: graph.WinogradMatmulOp,
                            args: PythonValues):
        return _result(op, np.einsum("bpcl,bclk->bpk", args[0], args[1]))

    @impl(graph.WinogradOutputTransformOp)
    def run_winograd_output_transform(self, interpreter: Interpreter,
                                      op: graph.WinogradOutputTransformOp, args: PythonValues):
        m, tile = args[0], op.tile.value.data
        shape = tuple(op.result.type.get_shape())
        n, _, oh, ow = shape[:4]
        th, tw = winograd_tiles(oh, ow, tile)
        a = tile + 2
        at, _, _ = winograd_matrices(tile)
        points = m.reshape(a, a, n, th, tw, m.shape[-1])
        y = np.einsum("ru,uvntwk,sv->nktrws", at, points, at)
        y = y.reshape(n, m.shape[-1], th * tile, tw * tile)[:, :, :oh, :ow]
        if len(shape) == 5:
            y = transform_array(y, "NCHW", f"NCHW{shape[4]}c")
        return _result(op, y)

    @impl(graph.WhereOp)
    def run_where(self, interpreter: Interpreter, op: graph.WhereOp, args: PythonValues):
        return _result(op, np.where(*args))

    @impl(graph.CastOp)
    def run_cast(self, interpreter: Interpreter, op: graph.CastOp, args: PythonValues):
        target = numpy_dtype(op.result.type.element_type)  # pyright: ignore
        with np.errstate(all="ignore"):
            return _result(op, np.asarray(args[0]).astype(target))

    @impl(graph.SoftmaxOp)
    def run_softmax(self, interpreter: Interpreter, op: graph.SoftmaxOp, args: PythonValues):
        return _elementwise(op, softmax, args[0], op.axis.value.data)

    @impl(graph.LogSoftmaxOp)
    def run_log_softmax(self, interpreter: Interpreter, op: graph.LogSoftmaxOp, args: PythonValues):
        return _elementwise(op, log_softmax, args[0], op.axis.value.data)

    @impl(graph.ReduceOp)
    def run_reduce(self, interpreter: Interpreter, op: graph.ReduceOp, args: PythonValues):
        fn = _REDUCERS[op.kind.data]
        axes = tuple(op.axes.get_values())
        return _elementwise(op, lambda x: fn(x, axis=axes, keepdims=bool(op.keepdims.value.data)),
                            args[0])

    @impl(graph.BatchNormOp)
    def run_batch_norm(self, interpreter: Interpreter, op: graph.BatchNormOp, args: PythonValues):
        x, scale, bias, mean, var = args
        shape = (1, -1) + (1,) * (x.ndim - 2)
        inv = scale / np.sqrt(var + op.epsilon.value.data)
        return _elementwise(
            op, lambda: (x - mean.reshape(shape)) * inv.reshape(shape) + bias.reshape(shape)
        )

    @impl(graph.LayerNormOp)
    def run_layer_norm(self, interpreter: Interpreter, op: graph.LayerNormOp, args: PythonValues):
        x, scale, *bias = args
        return _elementwise(op, layer_norm, x, scale, bias[0] if bias else None,
                            op.axis.value.data, op.epsilon.value.data)

    @impl(graph.LrnOp)
    def run_lrn(self, interpreter: Interpreter, op: graph.LrnOp, args: PythonValues):
        return _elementwise(op, lrn, args[0], op.size.value.data, op.alpha.value.data,
                            op.beta.value.data, op.bias.value.data)

    @impl(graph.ConvTranspose2dOp)
    def run_conv_transpose2d(self, interpreter: Interpreter, op: graph.ConvTranspose2dOp,
                             args: PythonValues):
        x, w, *bias = args
        y = conv_transpose2d(x, w, bias[0] if bias else None, *_conv_window(op),
                             op.output_padding.get_values(), op.groups.value.data)
        return _result(op, y)

    @impl(graph.ConcatOp)
    def run_concat(self, interpreter: Interpreter, op: graph.ConcatOp, args: PythonValues):
        return _result(op, np.concatenate(args, axis=op.axis.value.data))

    @impl(graph.SliceOp)
    def run_slice(self, interpreter: Interpreter, op: graph.SliceOp, args: PythonValues):
        sizes = op.result.type.get_shape()  # pyright: ignore
        index = tuple(
            np.arange(size) * step + start
            for start, step, size in zip(op.starts.get_values(), op.steps.get_values(), sizes)
        )
        return _result(op, args[0][np.ix_(*index)] if index else args[0])

    @impl(graph.PadOp)
    def run_pad(self, interpreter: Interpreter, op: graph.PadOp, args: PythonValues):
        return _result(op, pad(args[0], op.pads.get_values(), op.mode.data, op.value.value.data))

    @impl(graph.TileOp)
    def run_tile(self, interpreter: Interpreter, op: graph.TileOp, args: PythonValues):
        return _result(op, np.tile(args[0], op.repeats.get_values()))

    @impl(graph.BroadcastToOp)
    def run_broadcast_to(self, interpreter: Interpreter, op: graph.BroadcastToOp,
                         args: PythonValues):
        return _result(op, np.broadcast_to(args[0], op.result.type.get_shape()))  # pyright: ignore

    @impl(graph.GatherOp)
    def run_gather(self, interpreter: Interpreter, op: graph.GatherOp, args: PythonValues):
        return _result(op, gather(args[0], args[1], op.axis.value.data))


    @impl(graph.ConstantOp)
    def run_constant(self, interpreter: Interpreter, op: graph.ConstantOp, args: PythonValues):
        return (constant_value(op),)

    @impl(graph.Conv2dOp)
    def run_conv2d(self, interpreter: Interpreter, op: graph.Conv2dOp, args: PythonValues):
        x, w, *bias = args
        y = conv2d(x, w, bias[0] if bias else None, *_conv_window(op), op.groups.value.data,
                   op.input_pad_value)
        return _result(op, _wrapped(op, y))

    @impl(graph.DenseOp)
    def run_dense(self, interpreter: Interpreter, op: graph.DenseOp, args: PythonValues):
        x, w, *bias = _exact(args)
        y = x @ w.T
        return _result(op, _wrapped(op, y + bias[0] if bias else y))

    @impl(graph.MatmulOp)
    def run_matmul(self, interpreter: Interpreter, op: graph.MatmulOp, args: PythonValues):
        return _result(op, _wrapped(op, np.matmul(*_exact(args))))

    @impl(graph.QuantizeOp)
    def run_quantize(self, interpreter: Interpreter, op: graph.QuantizeOp, args: PythonValues):
        x, scale, zero_point = args
        with np.errstate(all="ignore"):
            return _result(op, _saturate(op, np.float32(x) / np.float32(scale), zero_point))

    @impl(graph.DequantizeOp)
    def run_dequantize(self, interpreter: Interpreter, op: graph.DequantizeOp,
                       args: PythonValues):
        x, scale, zero_point = args
        shifted = x.astype(np.int64) - zero_point.astype(np.int64)
        return _result(op, shifted.astype(np.int32).astype(np.float32) * np.float32(scale))

    @impl(graph.RequantizeOp)
    def run_requantize(self, interpreter: Interpreter, op: graph.RequantizeOp,
                       args: PythonValues):
        acc, scale, zero_point = args
        with np.errstate(all="ignore"):
            return _result(op, _saturate(op, acc.astype(np.float32) * np.float32(scale),
                                         zero_point))

    @impl(graph.MaxPool2dOp)
    def run_max_pool2d(self, interpreter: Interpreter, op: graph.MaxPool2dOp, args: PythonValues):
        dilations = op.dilations.get_values()
        return _nchw(op, lambda x: max_pool2d(x, dilations=dilations, **_pool_window(op)), args[0])

    @impl(graph.AvgPool2dOp)
    def run_avg_pool2d(self, interpreter: Interpreter, op: graph.AvgPool2dOp, args: PythonValues):
        include_pad = bool(op.count_include_pad.value.data)
        return _nchw(op, lambda x: avg_pool2d(x, count_include_pad=include_pad, **_pool_window(op)),
                     args[0])

    @impl(graph.GlobalAvgPool2dOp)
    def run_global_avg_pool2d(self, interpreter: Interpreter, op: Operation, args: PythonValues):
        return _nchw(op, lambda x: x.mean(axis=(2, 3), keepdims=True), args[0])

    @impl(graph.GlobalMaxPool2dOp)
    def run_global_max_pool2d(self, interpreter: Interpreter, op: Operation, args: PythonValues):
        return _nchw(op, lambda x: x.max(axis=(2, 3), keepdims=True), args[0])

    @impl(graph.ReshapeOp)
    def run_reshape(self, interpreter: Interpreter, op: graph.ReshapeOp, args: PythonValues):
        return _result(op, args[0].reshape(op.result.type.get_shape()))  # pyright: ignore

    @impl(graph.TransposeOp)
    def run_transpose(self, interpreter: Interpreter, op: graph.TransposeOp, args: PythonValues):
        return _result(op, args[0].transpose(op.perm.get_values()))

    @impl(graph.FusedOp)
    def run_fused(self, interpreter: Interpreter, op: graph.FusedOp, args: PythonValues):
        return interpreter.run_ssacfg_region(op.body, args, "graph.fused")

    @impl_terminator(graph.YieldOp)
    def run_yield(self, interpreter: Interpreter, op: graph.YieldOp, args: PythonValues):
        return ReturnedValues(args), ()


for _cls in UNARY_FUNCTIONS:
    setattr(GraphFunctions, f"run_{_cls.name[6:]}", impl(_cls)(GraphFunctions._unary))
for _cls in BINARY_FUNCTIONS:
    setattr(GraphFunctions, f"run_{_cls.name[6:]}", impl(_cls)(GraphFunctions._binary))
register_impls(GraphFunctions)
