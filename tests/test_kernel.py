"""Custom operators written with xweave.te and compiled with xweave.build_kernel."""

import numpy as np
import pytest

import xweave
from xweave import te

from helpers import dense_bias_relu

RNG = np.random.default_rng(3)


def test_matmul_bias_relu():
    m, k_extent, n = 13, 9, 11
    f = xweave.build_kernel("matmul_relu", *dense_bias_relu(m, k_extent, n))
    a, b, c = (RNG.standard_normal(s).astype(np.float32) for s in ((m, k_extent), (k_extent, n), (n,)))
    np.testing.assert_allclose(f(a, b, c), np.maximum(a @ b + c, 0), rtol=1e-5, atol=1e-6)
    assert "loop.for" in f.loop_ir


def test_softmax_last_axis():
    rows, cols = 5, 17
    X = te.placeholder((rows, cols), "float32", name="X")
    r1 = te.reduce_axis(cols, name="r1")
    r2 = te.reduce_axis(cols, name="r2")
    mx = te.compute((rows,), lambda i: te.reduce_max(X[i, r1], axis=r1), name="max")
    ex = te.compute((rows, cols), lambda i, j: te.exp(X[i, j] - mx[i]), name="exp")
    total = te.compute((rows,), lambda i: te.sum(ex[i, r2], axis=r2), name="sum")
    sm = te.compute((rows, cols), lambda i, j: ex[i, j] / total[i], name="softmax")
    f = xweave.build_kernel("softmax", [X], [sm])
    x = RNG.standard_normal((rows, cols)).astype(np.float32) * 4
    e = np.exp(x - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(f(x), e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-7)


def test_depthwise_conv_with_padding():
    c, h, w, kk, pad = 4, 7, 6, 3, 1
    X = te.placeholder((c, h, w), "float32", name="X")
    W = te.placeholder((c, kk, kk), "float32", name="W")
    ry = te.reduce_axis(kk, name="ry")
    rx = te.reduce_axis(kk, name="rx")

    def read(ch, y, x):
        inside = te.all(y >= 0, y < h, x >= 0, x < w)
        return te.if_then_else(inside, X[ch, y, x], 0.0)

    out = te.compute((c, h, w), lambda ch, y, x: te.sum(
        read(ch, y + ry - pad, x + rx - pad) * W[ch, ry, rx], axis=[ry, rx]), name="dwconv")
    f = xweave.build_kernel("dwconv", [X, W], [out])
    x = RNG.standard_normal((c, h, w)).astype(np.float32)
    wt = RNG.standard_normal((c, kk, kk)).astype(np.float32)
    xp = np.pad(x, ((0, 0), (pad, pad), (pad, pad)))
    expected = np.zeros_like(x)
    for dy in range(kk):
        for dx in range(kk):
            expected += xp[:, dy:dy + h, dx:dx + w] * wt[:, dy, dx][:, None, None]
    np.testing.assert_allclose(f(x, wt), expected, rtol=1e-5, atol=1e-6)


def test_kernel_rejects_wrong_inputs():
    X = te.placeholder((3,), "float32", name="X")
    Y = te.compute((3,), lambda i: X[i] * 2.0, name="double")
    f = xweave.build_kernel("double", [X], [Y])
    with pytest.raises(xweave.InputError, match=r"input 0: expected \[3\] float32"):
        f(np.zeros((4,), np.float32))
    with pytest.raises(xweave.InputError, match="expected 1 inputs"):
        f()


def test_kernel_checks_its_out_arrays_and_takes_any_input_layout():
    # A wrong out= array would be written past its end; read-only and strided inputs
    # are read through their data address or a contiguous copy.
    X = te.placeholder((3, 4), "float32", name="X")
    Y = te.compute((3, 4), lambda i, j: X[i, j] * 2.0, name="double")
    f = xweave.build_kernel("double", [X], [Y])
    x = RNG.standard_normal((4, 3)).astype(np.float32).T  # not C-contiguous
    for bad, what in ((np.empty((4, 3), np.float32), r"\[3, 4\] float32 array, got \[4, 3\]"),
                      (np.empty((3, 4), np.float64), "got \\[3, 4\\] float64"),
                      (np.empty((4, 3), np.float32).T, "C-contiguous"),
                      ([0.0] * 12, "got list")):
        with pytest.raises(xweave.InputError, match=what):
            f(x, out=[bad])
    with pytest.raises(xweave.InputError, match="expected 1 output arrays"):
        f(x, out=[])
    frozen = np.ascontiguousarray(x)
    frozen.flags.writeable = False
    with pytest.raises(xweave.InputError, match="writable"):
        f(x, out=[frozen])
    out = np.empty((3, 4), np.float32)
    assert f(frozen, out=[out]) is out
    np.testing.assert_array_equal(out, x * 2)
    np.testing.assert_array_equal(f(x), x * 2)


def test_scalar_and_vector_math_in_one_kernel():
    # exp/sqrt/abs used on scalars and on 8-lane vectors of one module: each width gets
    # its own intrinsic declaration (llvm.sqrt.v8f32 and a narrower one; float32 exp
    # is an inline polynomial).
    A = te.placeholder((4, 16), "float32", name="A")
    B = te.compute((4, 16), lambda i, j: te.exp(A[i, j]) + te.sqrt(te.abs(A[i, j])), name="e")
    C = te.compute((4, 3), lambda i, j: te.exp(A[i, j]) + te.sqrt(te.abs(A[i, j])), name="s")
    kernel = xweave.build_kernel("mix", [A], [B, C], schedule="default")
    a = np.random.default_rng(0).standard_normal((4, 16)).astype(np.float32)
    b, c = np.empty((4, 16), np.float32), np.empty((4, 3), np.float32)
    kernel(a, out=[b, c])
    np.testing.assert_allclose(b, np.exp(a) + np.sqrt(np.abs(a)), rtol=1e-5)
    np.testing.assert_allclose(c, np.exp(a[:, :3]) + np.sqrt(np.abs(a[:, :3])), rtol=1e-5)
    # (LLVM's SLP vectorizer may turn the 3 scalar lanes into a 4-lane vector)
    assert "llvm.sqrt.v8f32" in kernel.llvm_ir
    assert "llvm.sqrt.f32" in kernel.llvm_ir or "llvm.sqrt.v4f32" in kernel.llvm_ir
    assert "llvm.exp" not in kernel.llvm_ir and "expf" not in kernel.llvm_ir
