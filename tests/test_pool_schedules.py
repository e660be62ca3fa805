"""Default schedules of reductions whose contiguous axis is not reduced (pooling over
NCHW[x]c data, sums over a leading axis): the lanes become a vector below the
reduction loops. Compared with numpy; the vector path is checked in the loop IR."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from xweave import te
from xweave.kernel import build_kernel

RNG = np.random.default_rng(3)


def blocked_max_pool(shape, kernel, stride, pad):
    """Max pool over [N][C/c][H][W][c] with -inf padding, as the te builder writes it."""
    n, cb, h, w, c = shape
    oh, ow = (h + 2 * pad - kernel) // stride + 1, (w + 2 * pad - kernel) // stride + 1
    x = te.placeholder(shape, name="x")
    ry, rx = te.reduce_axis(kernel, name="ry"), te.reduce_axis(kernel, name="rx")

    def window(b, co, y, xx, ci):
        iy, ix = y * stride + ry - pad, xx * stride + rx - pad
        inside = te.all(iy >= 0, iy < h, ix >= 0, ix < w)
        return te.if_then_else(inside, x[b, co, iy, ix, ci], float("-inf"))

    out = te.compute((n, cb, oh, ow, c),
                     lambda b, co, y, xx, ci: te.reduce_max(window(b, co, y, xx, ci), axis=[ry, rx]),
                     name="max_pool2d")
    return x, out


def numpy_max_pool(a, kernel, stride, pad):
    h, w = a.shape[2], a.shape[3]
    padded = np.pad(a, ((0, 0), (0, 0), (pad, pad), (pad, pad), (0, 0)), constant_values=-np.inf)
    oh, ow = (h + 2 * pad - kernel) // stride + 1, (w + 2 * pad - kernel) // stride + 1
    windows = [padded[:, :, i:i + stride * oh:stride, j:j + stride * ow:stride, :]
               for i in range(kernel) for j in range(kernel)]
    return np.max(np.stack(windows), axis=0)


@pytest.mark.parametrize("lanes", [8, 16, 32])
def test_blocked_max_pool_vectorizes_the_channel_block(lanes):
    x, out = blocked_max_pool((1, 2, 13, 13, lanes), 3, 2, 1)
    kernel = build_kernel("pool", [x], [out])
    # The lanes are the innermost vector loop, below the window loops.
    assert "vector<8xf32>" in kernel.loop_ir or "vector<16xf32>" in kernel.loop_ir
    assert "maximumf" in kernel.loop_ir and "vector.reduction" not in kernel.loop_ir
    a = RNG.standard_normal((1, 2, 13, 13, lanes)).astype(np.float32)
    np.testing.assert_array_equal(kernel(a), numpy_max_pool(a, 3, 2, 1))


def test_nchw_max_pool_keeps_its_scalar_schedule():
    """x is windowed (read at 2x + rx): no contiguous lanes, so no vector loop."""
    x = te.placeholder((1, 8, 12, 12), name="x")
    ry, rx = te.reduce_axis(2, name="ry"), te.reduce_axis(2, name="rx")
    out = te.compute((1, 8, 6, 6),
                     lambda n, c, y, xx: te.reduce_max(x[n, c, y * 2 + ry, xx * 2 + rx], axis=[ry, rx]),
                     name="max_pool2d")
    kernel = build_kernel("pool", [x], [out])
    assert "vector<" not in kernel.loop_ir
    a = RNG.standard_normal((1, 8, 12, 12)).astype(np.float32)
    np.testing.assert_array_equal(kernel(a), a.reshape(1, 8, 6, 2, 6, 2).max(axis=(3, 5)))


def test_sum_over_a_leading_axis_vectorizes_the_trailing_one():
    x = te.placeholder((3, 17, 24), name="x")
    r = te.reduce_axis(17, name="r")
    out = te.compute((3, 24), lambda n, l: te.sum(x[n, r, l], axis=r), name="reduce_sum")
    kernel = build_kernel("rsum", [x], [out])
    assert "vector<8xf32>" in kernel.loop_ir
    a = RNG.standard_normal((3, 17, 24)).astype(np.float32)
    np.testing.assert_allclose(kernel(a), a.sum(axis=1), rtol=1e-5, atol=1e-5)


@settings(max_examples=12, deadline=None)
@given(size=st.integers(3, 12), kernel=st.integers(1, 3), stride=st.integers(1, 2),
       pad=st.integers(0, 1), lanes=st.sampled_from([8, 16, 24]))
def test_random_blocked_max_pools(size, kernel, stride, pad, lanes):
    if size + 2 * pad < kernel:
        return
    x, out = blocked_max_pool((1, 1, size, size, lanes), kernel, stride, pad)
    compiled = build_kernel("pool", [x], [out])
    a = RNG.standard_normal((1, 1, size, size, lanes)).astype(np.float32)
    np.testing.assert_array_equal(compiled(a), numpy_max_pool(a, kernel, stride, pad))
