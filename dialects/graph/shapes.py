"""Result shapes of the graph ops, shared by verifiers, builders, the interpreter and frontend."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def broadcast_shape(*shapes: Sequence[int]) -> tuple[int, ...] | None:
    """numpy's broadcast of `shapes`, or None if they are incompatible."""
    try:
        return tuple(np.broadcast_shapes(*(tuple(s) for s in shapes)))
    except ValueError:
        return None


def window_output_size(
    size: int,
    kernel: int,
    stride: int,
    pad_begin: int,
    pad_end: int,
    dilation: int = 1,
    ceil_mode: bool = False,
) -> int:
    """Output length of a sliding window (ONNX conv/pool formula, incl. ceil_mode).

    With ceil_mode a last window that would start inside the end padding is dropped
    (ONNX, onnxruntime and PyTorch agree on this).
    """
    span = dilation * (kernel - 1) + 1
    room = size + pad_begin + pad_end - span
    if not ceil_mode:
        return room // stride + 1
    out = -(-room // stride) + 1
    if (out - 1) * stride >= size + pad_begin:
        out -= 1
    return out


def window2d_output_size(
    plane: Sequence[int],
    kernel: Sequence[int],
    strides: Sequence[int],
    pads: Sequence[int],
    dilations: Sequence[int] = (1, 1),
    ceil_mode: bool = False,
) -> tuple[int, int]:
    """(OH, OW) of a 2-D window (a pool's, a convolution's kernel) slid over an (H, W)
    plane (pads: top, left, bottom, right)."""
    h, w = plane
    oh = window_output_size(h, kernel[0], strides[0], pads[0], pads[2], dilations[0], ceil_mode)
    ow = window_output_size(w, kernel[1], strides[1], pads[1], pads[3], dilations[1], ceil_mode)
    return oh, ow


def matmul_output_shape(a: Sequence[int], b: Sequence[int]) -> tuple[int, ...] | None:
    """numpy matmul's result shape for rank >= 2 operands, or None if incompatible."""
    if len(a) < 2 or len(b) < 2 or a[-1] != b[-2]:
        return None
    batch = broadcast_shape(a[:-2], b[:-2])
    if batch is None:
        return None
    return (*batch, a[-2], b[-1])


def reduce_output_shape(
    shape: Sequence[int], axes: Sequence[int], keepdims: bool
) -> tuple[int, ...]:
    """Shape after reducing `axes` (non-negative) of `shape`."""
    if keepdims:
        return tuple(1 if d in axes else e for d, e in enumerate(shape))
    return tuple(e for d, e in enumerate(shape) if d not in axes)


def conv_transpose2d_output_shape(
    input_shape: Sequence[int],
    weight_shape: Sequence[int],
    strides: Sequence[int],
    pads: Sequence[int],
    dilations: Sequence[int],
    output_padding: Sequence[int],
    groups: int,
) -> tuple[int, ...]:
    """[N, O, OH, OW] of a transposed convolution (weight [C, O/groups, KH, KW])."""
    n, _, h, w = input_shape
    _, og, kh, kw = weight_shape
    sizes = []
    for i, (size, k) in enumerate(((h, kh), (w, kw))):
        sizes.append(strides[i] * (size - 1) + output_padding[i] + dilations[i] * (k - 1) + 1
                     - pads[i] - pads[i + 2])
    return (n, og * groups, *sizes)


def gather_output_shape(
    data: Sequence[int], indices: Sequence[int], axis: int
) -> tuple[int, ...]:
    """numpy.take's result shape."""
    return (*data[:axis], *indices, *data[axis + 1 :])
