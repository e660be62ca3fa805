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
from xweave.winograd import sparse_sum, winograd_matrices

NEG_INF = float("-inf")


def is_integer(t: te.Tensor) -> bool:
    """Whether a tensor holds integers (a quantized layer's operands)."""
    return t.dtype.startswith(("int", "uint"))


def _product(a: te.Expr, b: te.Expr, integer: bool) -> te.Expr:
    """a * b; integer operands converted to int32 first (exact: 8-bit products and their
    sums fit), so an integer layer accumulates in int32."""
    if integer:
        return te.cast(a, "int32") * te.cast(b, "int32")
    return a * b


def lowest(dtype: str) -> float | int:
    """The least value of `dtype` (-inf for floats): a padding that never wins a max."""
    if dtype.startswith("uint"):
        return 0
    if dtype.startswith("int"):
        return -(1 << (int(dtype[3:]) - 1))
    return NEG_INF


# --- dense / matmul ------------------------------------------------------------------


def dense(x: te.Tensor, w: te.Tensor, bias: te.Tensor | None = None):
    """x[M, K] . w[N, K]^T (+ bias[N])."""
    (m, k_extent), (n, _) = x.shape, w.shape
    k = te.reduce_axis(k_extent, name="k")
    integer = is_integer(x)
    x = widened(x, w)
    out = te.compute((m, n), lambda i, j: te.sum(_product(x[i, k], w[j, k], integer), axis=k),
                     name="dense")
    if bias is None:
        return out
    return te.compute((m, n), lambda i, j: out[i, j] + bias[j], name="bias_add")


def matmul(a: te.Tensor, b: te.Tensor, out_shape: Sequence[int]):
    """numpy matmul of rank >= 2 operands with broadcast batch dimensions."""
    k_extent = a.shape[-1]
    k = te.reduce_axis(k_extent, name="k")
    batch = list(out_shape[:-2])
    integer = is_integer(a)

    def body(*idx):
        *b_idx, i, j = idx
        a_batch = _broadcast_index(_Shape(a.shape[:-2]), batch, b_idx)
        b_batch = _broadcast_index(_Shape(b.shape[:-2]), batch, b_idx)
        return te.sum(_product(a[(*a_batch, i, k)], b[(*b_batch, k, j)], integer), axis=k)

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


def widened(x: te.Tensor, weight: te.Tensor) -> te.Tensor:
    """uint8 data against int16 weights (the int16 form of a quantized layer, for
    `vpmaddwd`: graph-widen-weights) as int16, once: a stage the products read."""
    if x.dtype != "uint8" or weight.dtype != "int16":
        return x
    return te.compute(x.shape, lambda *i: te.cast(x[i], "int16"), name="widen")


def _source(data: te.Tensor, weight: te.Tensor, pads, pad_value: int, trailing: int = 0):
    """A convolution's input as its products read it: padded (with `pad_value`) and, for
    int16 weights, widened to int16 in the same stage (`widened`)."""
    if not any(pads):
        return widened(data, weight)
    if data.dtype == "uint8" and weight.dtype == "int16":
        top, left, bottom, right = pads
        end = len(data.shape) - trailing
        *lead, h, w = data.shape[:end]
        shape = (*lead, h + top + bottom, w + left + right, *data.shape[end:])

        def body(*idx):
            rest, (y, xx), block = idx[: end - 2], idx[end - 2 : end], idx[end:]
            inside = te.all(y >= top, y < h + top, xx >= left, xx < w + left)
            value = te.cast(data[(*rest, y - top, xx - left, *block)], "int16")
            return te.if_then_else(inside, value, te.const(pad_value, "int16"))

        return te.compute(shape, body, name="pad")
    return pad(data, pads, pad_value, trailing=trailing)


def conv2d(data: te.Tensor, weight: te.Tensor, bias: te.Tensor | None, out_shape,
           strides, pads, dilations, groups: int, pad_value: int = 0):
    """2-D convolution, NCHW data, OIHW weights, with groups and dilation; on integers
    (int32 sums) the input is padded with `pad_value`."""
    _, channels, _, _ = data.shape
    out_channels, group_channels, kh, kw = weight.shape
    sh, sw = strides
    dh, dw = dilations
    integer = is_integer(data)
    source = _source(data, weight, pads, pad_value)
    rc = te.reduce_axis(group_channels, name="rc")
    ry = te.reduce_axis(kh, name="ry")
    rx = te.reduce_axis(kw, name="rx")
    per_group = out_channels // groups

    def body(n, o, y, x):
        c = rc if groups == 1 else (o // per_group) * group_channels + rc
        return te.sum(_product(source[n, c, y * sh + ry * dh, x * sw + rx * dw],
                               weight[o, rc, ry, rx], integer), axis=[rc, ry, rx])

    out = te.compute(tuple(out_shape), body, name="conv2d")
    if bias is None:
        return out
    return te.compute(tuple(out_shape), lambda n, o, y, x: out[n, o, y, x] + bias[o],
                      name="bias_add")


def conv2d_nchwc(data: te.Tensor, weight: te.Tensor, bias: te.Tensor | None, out_shape,
                 strides, pads, dilations, groups: int, pad_value: int = 0):
    """2-D convolution on channel-blocked data: [N][C/ci][H][W][ci] x
    [O/co][C/ci][KH][KW][ci][co] -> [N][O/co][OH][OW][co], bias [O/co][co]; groups 1,
    one per channel block (weight [C/co][1][KH][KW][ci][co]) or depthwise (weight
    [C/co][1][KH][KW][1][co], see graph.conv2d_nchwc)."""
    _, blocks, _, _, ci = data.shape
    _, in_blocks, kh, kw, group_in, _ = weight.shape
    sh, sw = strides
    dh, dw = dilations
    integer = is_integer(data)
    source = _source(data, weight, pads, pad_value, trailing=1)
    ry = te.reduce_axis(kh, name="ry")
    rx = te.reduce_axis(kw, name="rx")
    if groups == 1:
        rc = te.reduce_axis(in_blocks, name="rc")
        rb = te.reduce_axis(ci, name="rb")

        # The lanes of an input block innermost (TVM's order): each step broadcasts one
        # input value per row against contiguous weight vectors.
        def body(n, o, y, x, b):
            return te.sum(_product(source[n, rc, y * sh + ry * dh, x * sw + rx * dw, rb],
                                   weight[o, rc, ry, rx, rb, b], integer), axis=[rc, ry, rx, rb])
    elif groups == blocks and group_in == ci:  # output block o reads input block o
        rb = te.reduce_axis(ci, name="rb")

        def body(n, o, y, x, b):
            return te.sum(_product(source[n, o, y * sh + ry * dh, x * sw + rx * dw, rb],
                                   weight[o, 0, ry, rx, rb, b], integer), axis=[ry, rx, rb])
    else:  # depthwise: output channel (o, b) reads input channel (o, b)
        def body(n, o, y, x, b):
            return te.sum(_product(source[n, o, y * sh + ry * dh, x * sw + rx * dw, b],
                                   weight[o, 0, ry, rx, 0, b], integer), axis=[ry, rx])

    out = te.compute(tuple(out_shape), body, name="conv2d_nchwc")
    if bias is None:
        return out
    return te.compute(tuple(out_shape), lambda n, o, y, x, b: out[n, o, y, x, b] + bias[o, b],
                      name="bias_add")


def _choose(index, options):
    """options[index] for a te index in [0, len(options)): a balanced tree of
    selects, decided at compile time once the index is a constant (the transforms'
    point loops are unrolled: see schedules/winograd.py). Eager selects, so that the
    options' common terms (loads, row sums) are emitted once."""
    def pick(lo, hi):
        if hi - lo == 1:
            return options[lo]
        mid = (lo + hi) // 2
        return te.select(index < mid, pick(lo, mid), pick(mid, hi))
    return pick(0, len(options))


def winograd_input_transform(data: te.Tensor, tile: int, pads, out_shape):
    """V[b][p][cb][c] = (B^T d B)[b // a][b % a] of tile p (a x a pixels, m = `tile`
    apart) of the zero-padded data (see graph.winograd_input_transform). Separable and
    with the constant integer B^T: the row pass (B^T d) and the column pass are short
    sums whose shared terms LLVM computes once."""
    a = tile + 2
    _, _, bt = winograd_matrices(tile)
    rank5 = len(data.shape) == 5
    h, w = data.shape[2], data.shape[3]
    th = -(-(h + pads[0] + pads[2] - 2) // tile)
    tw = -(-(w + pads[1] + pads[3] - 2) // tile)
    # pad to exactly the tiles' extent: no guards in the transform
    extra = (pads[0], pads[1], th * tile + 2 - h - pads[0], tw * tile + 2 - w - pads[1])
    source = pad(data, extra, trailing=1 if rank5 else 0, name="winograd_pad") if any(extra) else data

    def body(b, p, cb, c):
        n, ty, tx = p // (th * tw), (p // tw) % th, p % tw
        u, v = b // a, b % a

        def pixel(i, j):
            y, x = ty * tile + i, tx * tile + j
            return source[(n, cb, y, x, c) if rank5 else (n, cb, y, x)]

        rows = [_choose(u, [sparse_sum(bt[r], [pixel(i, j) for i in range(a)]) for r in range(a)])
                for j in range(a)]  # (B^T d)[u][j]
        return _choose(v, [sparse_sum(bt[r], rows) for r in range(a)])

    return te.compute(tuple(out_shape), body, name="winograd_input")


def winograd_matmul(data: te.Tensor, weight: te.Tensor):
    """M[b][p][k] = sum over (cb, c) of data[b][p][cb][c] * weight[b][cb][c][k]."""
    points, tiles, blocks, lanes = data.shape
    rc = te.reduce_axis(blocks, name="rc")
    rb = te.reduce_axis(lanes, name="rb")
    return te.compute((points, tiles, weight.shape[3]),
                      lambda b, p, k: te.sum(data[b, p, rc, rb] * weight[b, rc, rb, k], axis=[rc, rb]),
                      name="winograd_matmul")


def winograd_output_transform(data: te.Tensor, tile: int, out_shape):
    """Y at pixel (y, x) of tile p = (A^T M_p A)[y % m][x % m], M_p[u][v] =
    data[u * a + v][p][k] (see graph.winograd_output_transform); NCHW or NCHW<k>c.
    Separable with the constant A^T, as the input transform."""
    a = tile + 2
    at, _, _ = winograd_matrices(tile)
    rank5 = len(out_shape) == 5
    oh, ow = out_shape[2], out_shape[3]
    th, tw = -(-oh // tile), -(-ow // tile)
    lanes = out_shape[4] if rank5 else 1

    def body(n, kb, y, x, *c):
        p = n * (th * tw) + (y // tile) * tw + x // tile
        k = kb * lanes + c[0] if rank5 else kb
        columns = [_choose(x % tile, [sparse_sum(at[s], [data[u * a + v, p, k] for v in range(a)])
                                      for s in range(tile)])
                   for u in range(a)]  # (M A)[u][x % m]
        return _choose(y % tile, [sparse_sum(at[r], columns) for r in range(tile)])

    return te.compute(tuple(out_shape), body, name="winograd_output")


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
            _window_read(x, n, c, y, xx, ry, rx, strides, pads, dilations, lowest(x.dtype), b),
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
