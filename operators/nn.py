"""Compute definitions of the built-in operators, written with `xweave.te`.

These are the same tensor expressions a user writes for a custom operator (there is
one way to define compute); `convert-graph-to-te` calls them with placeholders shaped
like a graph op's operands. Layouts are NCHW for data and OIHW for conv weights, or
channel-blocked NCHW<k>c and OIHW<i>i<o>o (`conv2d_nchwc`, the pools on rank-5 data).

This module holds convolutions, pools and dense/matmul; the other themes live next to
it and are re-exported here (`nn.<name>` is the library's one namespace):
`elementwise` (math, activations, logic, comparisons, where, cast), `reduce`
(reductions, softmax, normalizations) and `transform` (data movement).
"""

from __future__ import annotations

from collections.abc import Sequence

from xweave import te
from xweave.operators.elementwise import (  # noqa: F401  (the library's names, kept here)
    BINARY,
    PARAMETRIC_UNARY,
    UNARY,
    broadcast_binary,
    cast,
    clip,
    unary,
    where,
)
from xweave.operators.elementwise import broadcast_index as _broadcast_index
from xweave.operators.reduce import (  # noqa: F401
    batch_norm,
    layer_norm,
    log_softmax,
    lrn,
    reduce,
    softmax,
)
from xweave.operators.transform import (  # noqa: F401
    broadcast_to,
    concat,
    gather,
    layout_transform,
    reshape,
    tile,
    transpose,
)

NEG_INF = float("-inf")


# --- dense / matmul ------------------------------------------------------------------


def dense(x: te.Tensor, w: te.Tensor, bias: te.Tensor | None = None):
    """x[M, K] . w[N, K]^T (+ bias[N])."""
    (m, k_extent), (n, _) = x.shape, w.shape
    k = te.reduce_axis(k_extent, name="k")
    out = te.compute((m, n), lambda i, j: te.sum(x[i, k] * w[j, k], axis=k), name="dense")
    if bias is None:
        return out
    return te.compute((m, n), lambda i, j: out[i, j] + bias[j], name="bias_add")


def matmul(a: te.Tensor, b: te.Tensor, out_shape: Sequence[int]):
    """numpy matmul of rank >= 2 operands with broadcast batch dimensions."""
    k_extent = a.shape[-1]
    k = te.reduce_axis(k_extent, name="k")
    batch = list(out_shape[:-2])

    def body(*idx):
        *b_idx, i, j = idx
        a_batch = _broadcast_index(_Shape(a.shape[:-2]), batch, b_idx)
        b_batch = _broadcast_index(_Shape(b.shape[:-2]), batch, b_idx)
        return te.sum(a[(*a_batch, i, k)] * b[(*b_batch, k, j)], axis=k)

    return te.compute(tuple(out_shape), body, name="matmul")


class _Shape:
    """Just a shape, to reuse `_broadcast_index` on a prefix of a tensor's dims."""

    def __init__(self, shape):
        self.shape = tuple(shape)


# --- convolution ---------------------------------------------------------------------


def pad(x: te.Tensor, pads: Sequence[int], value: float = 0.0, name: str = "pad",
        trailing: int = 0):
    """Pad the two dims before the last `trailing` ones (H and W: the last two of NCHW,
    `trailing=1` for NCHW<k>c) by (top, left, bottom, right) with `value`."""
    top, left, bottom, right = pads
    end = len(x.shape) - trailing
    *lead, h, w = x.shape[:end]
    tail = x.shape[end:]
    shape = (*lead, h + top + bottom, w + left + right, *tail)

    def body(*idx):
        rest, (y, xx), block = idx[: end - 2], idx[end - 2 : end], idx[end:]
        inside = te.all(y >= top, y < h + top, xx >= left, xx < w + left)
        return te.if_then_else(inside, x[(*rest, y - top, xx - left, *block)], value)

    return te.compute(shape, body, name=name)


def conv2d(data: te.Tensor, weight: te.Tensor, bias: te.Tensor | None, out_shape,
           strides, pads, dilations, groups: int):
    """2-D convolution, NCHW data, OIHW weights, with groups and dilation."""
    _, channels, _, _ = data.shape
    out_channels, group_channels, kh, kw = weight.shape
    sh, sw = strides
    dh, dw = dilations
    source = pad(data, pads) if any(pads) else data
    rc = te.reduce_axis(group_channels, name="rc")
    ry = te.reduce_axis(kh, name="ry")
    rx = te.reduce_axis(kw, name="rx")
    per_group = out_channels // groups

    def body(n, o, y, x):
        c = rc if groups == 1 else (o // per_group) * group_channels + rc
        return te.sum(source[n, c, y * sh + ry * dh, x * sw + rx * dw] * weight[o, rc, ry, rx],
                      axis=[rc, ry, rx])

    out = te.compute(tuple(out_shape), body, name="conv2d")
    if bias is None:
        return out
    return te.compute(tuple(out_shape), lambda n, o, y, x: out[n, o, y, x] + bias[o],
                      name="bias_add")


def conv2d_nchwc(data: te.Tensor, weight: te.Tensor, bias: te.Tensor | None, out_shape,
                 strides, pads, dilations, groups: int):
    """2-D convolution on channel-blocked data: [N][C/ci][H][W][ci] x
    [O/co][C/ci][KH][KW][ci][co] -> [N][O/co][OH][OW][co], bias [O/co][co]; groups 1
    or depthwise (weight [C/co][1][KH][KW][1][co], see graph.conv2d_nchwc)."""
    _, _, _, _, ci = data.shape
    _, in_blocks, kh, kw, _, _ = weight.shape
    sh, sw = strides
    dh, dw = dilations
    source = pad(data, pads, trailing=1) if any(pads) else data
    ry = te.reduce_axis(kh, name="ry")
    rx = te.reduce_axis(kw, name="rx")
    if groups == 1:
        rc = te.reduce_axis(in_blocks, name="rc")
        rb = te.reduce_axis(ci, name="rb")

        # The lanes of an input block innermost (TVM's order): each step broadcasts one
        # input value per row against contiguous weight vectors.
        def body(n, o, y, x, b):
            return te.sum(source[n, rc, y * sh + ry * dh, x * sw + rx * dw, rb]
                          * weight[o, rc, ry, rx, rb, b], axis=[rc, ry, rx, rb])
    else:  # depthwise: output channel (o, b) reads input channel (o, b)
        def body(n, o, y, x, b):
            return te.sum(source[n, o, y * sh + ry * dh, x * sw + rx * dw, b]
                          * weight[o, 0, ry, rx, 0, b], axis=[ry, rx])

    out = te.compute(tuple(out_shape), body, name="conv2d_nchwc")
    if bias is None:
        return out
    return te.compute(tuple(out_shape), lambda n, o, y, x, b: out[n, o, y, x, b] + bias[o, b],
                      name="bias_add")


def conv_transpose2d(data: te.Tensor, weight: te.Tensor, bias: te.Tensor | None, out_shape,
                     strides, pads, dilations, groups: int):
    """2-D transposed convolution (the gradient of conv2d with respect to its input).

    NCHW data, weights [C, O/groups, KH, KW]. Output pixel y gathers input pixel
    (y + pad - ky * dilation) / stride wherever that is a whole in-range index.
    """
    _, channels, h, w = data.shape
    _, group_out, kh, kw = weight.shape
    group_in = channels // groups
    sh, sw = strides
    dh, dw = dilations
    rc = te.reduce_axis(group_in, name="rc")
    ry = te.reduce_axis(kh, name="ry")
    rx = te.reduce_axis(kw, name="rx")

    def body(n, o, y, x):
        ty = y + pads[0] - ry * dh
        tx = x + pads[1] - rx * dw
        iy, ix = ty // sh, tx // sw
        inside = te.all(ty >= 0, tx >= 0, ty % sh == 0, tx % sw == 0, iy < h, ix < w)
        c = rc if groups == 1 else (o // group_out) * group_in + rc
        oc = o if groups == 1 else o % group_out
        value = te.if_then_else(inside, data[n, c, iy, ix] * weight[c, oc, ry, rx], 0.0)
        return te.sum(value, axis=[rc, ry, rx])

    out = te.compute(tuple(out_shape), body, name="conv_transpose2d")
    if bias is None:
        return out
    return te.compute(tuple(out_shape), lambda n, o, y, x: out[n, o, y, x] + bias[o],
                      name="bias_add")


# --- pooling -------------------------------------------------------------------------


# Pools take NCHW data or channel-blocked NCHW<k>c data (rank 5, the block last).


def _window_read(x: te.Tensor, n, c, y, xx, ry, rx, strides, pads, dilations, fill, block=()):
    """x at the window position, or `fill` outside the input (padding, ceil mode)."""
    h, w = x.shape[2], x.shape[3]
    iy = y * strides[0] + ry * dilations[0] - pads[0]
    ix = xx * strides[1] + rx * dilations[1] - pads[1]
    inside = te.all(iy >= 0, iy < h, ix >= 0, ix < w)
    return te.if_then_else(inside, x[(n, c, iy, ix, *block)], fill)


def max_pool2d(x: te.Tensor, out_shape, kernel, strides, pads, dilations):
    """Max over each window; padding never wins."""
    ry = te.reduce_axis(kernel[0], name="ry")
    rx = te.reduce_axis(kernel[1], name="rx")
    return te.compute(
        tuple(out_shape),
        lambda n, c, y, xx, *b: te.reduce_max(
            _window_read(x, n, c, y, xx, ry, rx, strides, pads, dilations, NEG_INF, b),
            axis=[ry, rx]),
        name="max_pool2d",
    )


def avg_pool2d(x: te.Tensor, out_shape, kernel, strides, pads, count_include_pad: bool):
    """Mean over each window (padding counted or not, as ONNX's count_include_pad)."""
    h, w = x.shape[2], x.shape[3]
    dil = (1, 1)
    ry = te.reduce_axis(kernel[0], name="ry")
    rx = te.reduce_axis(kernel[1], name="rx")
    total = te.compute(
        tuple(out_shape),
        lambda n, c, y, xx, *b: te.sum(
            _window_read(x, n, c, y, xx, ry, rx, strides, pads, dil, 0.0, b), axis=[ry, rx]),
        name="pool_sum",
    )
    # Elements counted in the divisor: inside the padded input, or inside the input.
    lo_y, lo_x = (-pads[0], -pads[1]) if count_include_pad else (0, 0)
    hi_y, hi_x = (h + pads[2], w + pads[3]) if count_include_pad else (h, w)
    cy = te.reduce_axis(kernel[0], name="cy")
    cx = te.reduce_axis(kernel[1], name="cx")

    def count(y, xx):
        iy = y * strides[0] + cy - pads[0]
        ix = xx * strides[1] + cx - pads[1]
        inside = te.all(iy >= lo_y, iy < hi_y, ix >= lo_x, ix < hi_x)
        return te.sum(te.if_then_else(inside, 1.0, 0.0), axis=[cy, cx])

    divisor = te.compute(tuple(out_shape[2:4]), count, name="pool_count")
    return te.compute(tuple(out_shape),
                      lambda n, c, y, xx, *b: total[(n, c, y, xx, *b)] / divisor[y, xx],
                      name="avg_pool2d")


def global_pool(x: te.Tensor, kind: str):
    """Mean or max over the spatial dims: N, C, H, W(, k) -> N, C, 1, 1(, k)."""
    n, c, h, w, *block = x.shape
    shape = (n, c, 1, 1, *block)
    ry = te.reduce_axis(h, name="ry")
    rx = te.reduce_axis(w, name="rx")
    if kind == "max":
        return te.compute(shape,
                          lambda i, j, _y, _x, *b: te.reduce_max(x[(i, j, ry, rx, *b)], axis=[ry, rx]),
                          name="global_max_pool2d")
    total = te.compute(shape,
                       lambda i, j, _y, _x, *b: te.sum(x[(i, j, ry, rx, *b)], axis=[ry, rx]),
                       name="global_sum")
    return te.compute(shape, lambda *i: total[i] * (1.0 / (h * w)),
                      name="global_avg_pool2d")
