"""Reductions and the operators built on them: reduce (sum, mean, max, min, prod over
axes), softmax and log-softmax (numerically stable), layer and batch normalization,
local response normalization."""

from __future__ import annotations

from collections.abc import Sequence
from math import prod

from xweave import te
from xweave.operators.elementwise import broadcast_index

_REDUCERS = {"sum": te.sum, "mean": te.sum, "max": te.reduce_max, "min": te.reduce_min,
             "prod": te.prod}


def _reduce_axes(x: te.Tensor, axes: Sequence[int], prefix: str) -> list[te.ReduceAxis]:
    return [te.reduce_axis(x.shape[a], name=f"{prefix}{a}") for a in axes]


def _input_index(idx, axes: Sequence[int], raxes, rank: int, keepdims: bool) -> tuple:
    """The input index of output index `idx` and reduce axes `raxes` (over `axes`)."""
    by_axis = dict(zip(axes, raxes))
    out = iter(idx)
    result = []
    for d in range(rank):
        if d in by_axis:
            if keepdims:
                next(out)
            result.append(by_axis[d])
        else:
            result.append(next(out))
    return tuple(result)


def reduce(x: te.Tensor, kind: str, axes: Sequence[int], keepdims: bool,
           out_shape: Sequence[int]):
    """Reduce `axes` of x by `kind` (sum, mean, max, min, prod)."""
    raxes = _reduce_axes(x, axes, "r")
    rank = len(x.shape)
    total = te.compute(
        tuple(out_shape),
        lambda *i: _REDUCERS[kind](x[_input_index(i, axes, raxes, rank, keepdims)], axis=raxes),
        name="reduce_sum" if kind == "mean" else f"reduce_{kind}",
    )
    if kind != "mean":
        return total
    count = float(prod(x.shape[a] for a in axes))
    return te.compute(tuple(out_shape), lambda *i: total[i] / count, name="reduce_mean")


def _along(idx, axis: int, value) -> tuple:
    return (*idx[:axis], value, *idx[axis + 1 :])


def _max_and_sum_exp(x: te.Tensor, axis: int, prefix: str):
    """max of x along axis, and exp(x - max) with its sum (keepdims shapes)."""
    shape = x.shape
    kept = _along(shape, axis, 1)
    k = te.reduce_axis(shape[axis], name="k")
    peak = te.compute(kept, lambda *i: te.reduce_max(x[_along(i, axis, k)], axis=k),
                      name=f"{prefix}_max")
    shifted = te.compute(shape, lambda *i: te.exp(x[i] - peak[_along(i, axis, 0)]),
                         name=f"{prefix}_exp")
    k2 = te.reduce_axis(shape[axis], name="k")
    total = te.compute(kept, lambda *i: te.sum(shifted[_along(i, axis, k2)], axis=k2),
                       name=f"{prefix}_sum")
    return peak, shifted, total


def softmax(x: te.Tensor, axis: int):
    """exp(x - max) / sum(exp(x - max)) along `axis`."""
    _, shifted, total = _max_and_sum_exp(x, axis, "softmax")
    return te.compute(x.shape, lambda *i: shifted[i] / total[_along(i, axis, 0)],
                      name="softmax")


def log_softmax(x: te.Tensor, axis: int):
    """x - max - log(sum(exp(x - max))) along `axis`."""
    peak, _, total = _max_and_sum_exp(x, axis, "log_softmax")
    return te.compute(
        x.shape,
        lambda *i: x[i] - peak[_along(i, axis, 0)] - te.log(total[_along(i, axis, 0)]),
        name="log_softmax",
    )


def layer_norm(x: te.Tensor, scale: te.Tensor, bias: te.Tensor | None, axis: int,
               epsilon: float):
    """(x - mean) / sqrt(var + epsilon) * scale + bias over the dims from `axis` on.

    Two passes (mean, then the mean of squared deviations): stable for large means.
    """
    shape, rank = x.shape, len(x.shape)
    kept = (*shape[:axis], *(1,) * (rank - axis))
    count = float(prod(shape[axis:]))
    normalized = list(range(axis, rank))

    def reduced(fn, name):
        raxes = _reduce_axes(x, normalized, "r")
        return te.compute(kept, lambda *i: te.sum(fn(i, (*i[:axis], *raxes)), axis=raxes),
                          name=name)

    total = reduced(lambda i, j: x[j], "layer_norm_sum")
    mean = te.compute(kept, lambda *i: total[i] / count, name="layer_norm_mean")
    squares = reduced(lambda i, j: (x[j] - mean[i]) * (x[j] - mean[i]), "layer_norm_sq")
    rstd = te.compute(kept, lambda *i: 1.0 / te.sqrt(squares[i] / count + epsilon),
                      name="layer_norm_rstd")

    def body(*i):
        k = (*i[:axis], *(0,) * (rank - axis))
        y = (x[i] - mean[k]) * rstd[k] * scale[broadcast_index(scale, shape, i)]
        return y if bias is None else y + bias[broadcast_index(bias, shape, i)]

    return te.compute(shape, body, name="layer_norm")


def batch_norm(x: te.Tensor, scale: te.Tensor, bias: te.Tensor, mean: te.Tensor,
               variance: te.Tensor, epsilon: float):
    """Inference batch normalization over channel axis 1."""
    channels = x.shape[1]
    factor = te.compute((channels,), lambda c: scale[c] / te.sqrt(variance[c] + epsilon),
                        name="batch_norm_factor")
    return te.compute(x.shape, lambda *i: (x[i] - mean[i[1]]) * factor[i[1]] + bias[i[1]],
                      name="batch_norm")


def lrn(x: te.Tensor, size: int, alpha: float, beta: float, bias: float):
    """Local response normalization across channels (ONNX LRN)."""
    channels = x.shape[1]
    before = (size - 1) // 2
    r = te.reduce_axis(size, name="r")

    def square_sum(*i):
        c = i[1] + r - before
        v = te.if_then_else(te.all(c >= 0, c < channels), x[(i[0], c, *i[2:])], 0.0)
        return te.sum(v * v, axis=r)

    window = te.compute(x.shape, square_sum, name="lrn_sum")
    return te.compute(
        x.shape, lambda *i: x[i] / te.pow(bias + (alpha / size) * window[i], beta), name="lrn"
    )
