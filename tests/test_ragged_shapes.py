"""Shapes no vector divides, at 8 lanes (the pinned Zen 3) and 16 (Zen 4, run only on
AVX-512 hosts): rows of prime length through softmax and LayerNorm (partial results per
lane, a ragged last vector), matmuls of a prime row count with an epilogue (ragged row
tiles), a batch matmul whose columns no vector divides (ragged column tiles), 1x1 and
3x3 convs of 58, 116 and 232 channels; each against numpy or onnxruntime."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import xweave
from xweave.target import Target

AVX2 = "llvm -mcpu=znver3"
AVX512 = "llvm -mcpu=znver4"
HOST_AVX512 = "avx512f" in Target().features
TARGETS = [AVX2, AVX512]


def _model(nodes, inputs, inits=()):
    graph = helper.make_graph(
        nodes, "m", [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        initializer=[numpy_helper.from_array(a, n) for n, a in inits])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def _check(model, target, rtol=1e-4, atol=1e-5):
    """Build for `target`, run (where the host can) and compare with onnxruntime."""
    rng = np.random.default_rng(0)
    feeds = {i.name: rng.standard_normal([d.dim_value for d in i.type.tensor_type.shape.dim],
                                         dtype=np.float32) * 3 for i in model.graph.input}
    module = xweave.build(model, target=target)
    if not module.runnable:
        assert not HOST_AVX512
        pytest.skip("the code needs AVX-512, which this host lacks (it compiled)")
    (got,) = module.run(**feeds)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    (expected,) = session.run(None, feeds)
    np.testing.assert_allclose(got, expected, rtol=rtol, atol=atol)
    return got


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("row", [1, 7, 197, 1000])
def test_softmax_rows(target, row):
    got = _check(_model([helper.make_node("Softmax", ["x"], ["y"], axis=-1)], [("x", [3, 2, row])]),
                 target)
    np.testing.assert_allclose(got.sum(axis=-1), 1.0, rtol=1e-5)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("row", [1, 7, 197, 1000])
def test_layer_norm_rows(target, row):
    rng = np.random.default_rng(1)
    scale = rng.standard_normal(row).astype(np.float32)
    bias = rng.standard_normal(row).astype(np.float32)
    _check(_model([helper.make_node("LayerNormalization", ["x", "s", "b"], ["y"], axis=-1)],
                  [("x", [1, 5, row])], [("s", scale), ("b", bias)]), target, atol=1e-4)


@pytest.mark.parametrize("target", TARGETS)
def test_reduce_max_and_sum_of_prime_rows(target):
    axes = numpy_helper.from_array(np.array([-1], np.int64), "a")
    model = _model([helper.make_node("ReduceMax", ["x"], ["m"], axes=[-1]),
                    helper.make_node("ReduceSum", ["x", "a"], ["s"]),
                    helper.make_node("Add", ["m", "s"], ["y"])], [("x", [4, 197])])
    model.graph.initializer.append(axes)
    model.opset_import[0].version = 13
    _check(model, target, atol=1e-4)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("rows", [13, 197])
def test_matmul_of_prime_rows_with_an_epilogue(target, rows):
    rng = np.random.default_rng(2)
    w = (rng.standard_normal((96, 80)) * 0.1).astype(np.float32)
    b = rng.standard_normal(80).astype(np.float32)
    _check(_model([helper.make_node("MatMul", ["x", "w"], ["t"]),
                   helper.make_node("Add", ["t", "b"], ["u"]),
                   helper.make_node("Erf", ["u"], ["y"])],
                  [("x", [rows, 96])], [("w", w), ("b", b)]), target, atol=1e-4)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("cols", [21, 197])
def test_batch_matmul_whose_columns_no_vector_divides(target, cols):
    """Q.K^T of a 197-token attention (scaled): ragged column tiles."""
    scale = numpy_helper.from_array(np.array(0.125, np.float32), "c")
    model = _model([helper.make_node("MatMul", ["q", "k"], ["t"]),
                    helper.make_node("Mul", ["t", "c"], ["y"])],
                   [("q", [2, 19, 32]), ("k", [2, 32, cols])], [])
    model.graph.initializer.append(scale)
    _check(model, target, atol=1e-4)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("channels, kernel", [(58, 1), (116, 1), (232, 1), (58, 3), (116, 3)])
def test_convs_of_channels_no_vector_divides(target, channels, kernel):
    rng = np.random.default_rng(3)
    w1 = (rng.standard_normal((channels, channels, kernel, kernel))
          / np.sqrt(channels * kernel * kernel)).astype(np.float32)
    w2 = (rng.standard_normal((channels, channels, 1, 1)) / np.sqrt(channels)).astype(np.float32)
    pads = [kernel // 2] * 4
    # Two convs in a row: the layout stage may block them; a lone one stays NCHW.
    _check(_model([helper.make_node("Conv", ["x", "w1"], ["t"], kernel_shape=[kernel] * 2, pads=pads),
                   helper.make_node("Relu", ["t"], ["u"]),
                   helper.make_node("Conv", ["u", "w2"], ["y"], kernel_shape=[1, 1])],
                  [("x", [1, channels, 9, 9])], [("w1", w1), ("w2", w2)]), target, atol=1e-4)


def _default_steps(inputs, outputs, name="k"):
    from xdsl.dialects import func

    from xweave.kernel import lower_kernel_to_loop
    from xweave.schedules import analyse, apply_steps, template_for

    module = lower_kernel_to_loop(name, inputs, outputs)
    kernel = next(f for f in module.ops if isinstance(f, func.FuncOp))
    info = analyse(kernel)
    template = template_for(info)
    config = template.default_config(info)
    steps = template.pipeline(info, config)
    return config, steps, apply_steps(module, steps, skip_illegal=True), module


def test_softmax_rows_get_partial_results_per_lane_and_every_step_applies():
    from xweave import te
    from xweave.operators import nn

    x = te.placeholder((4, 197), "float32", name="x")
    _, steps, applied, module = _default_steps([x], [nn.softmax(x, 1)])
    assert applied == steps  # no refused step left a split or an rfactor behind
    assert sum("loop-rfactor" in s for s in steps) == 2  # the row max and the row sum
    text = str(module)
    assert "vector.reduction <maximumf>" in text and "vector.reduction <add>" in text
    assert "math.exp %" in text and "vector<8xf32>" in text


def test_a_prime_row_count_under_an_epilogue_gets_ragged_row_tiles():
    from xweave import te

    a = te.placeholder((197, 64), "float32", name="a")
    b = te.placeholder((64, 96), "float32", name="b")
    k = te.reduce_axis(64, name="k")
    mm = te.compute((197, 96), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k), name="matmul")
    out = te.compute((197, 96), lambda i, j: te.max(mm[i, j], 0.0), name="relu")
    config, steps, applied, _ = _default_steps([a, b], [out])
    assert config["tile_rows"] > 1  # not the 1-row tiles 197's divisors allow
    assert applied == steps


def test_columns_no_vector_divides_get_a_ragged_tile_computed_unguarded():
    from xweave import te

    a = te.placeholder((197, 32), "float32", name="a")  # (rows no vector divides either:
    b = te.placeholder((32, 197), "float32", name="b")  # the columns stay the vector axis)
    k = te.reduce_axis(32, name="k")
    out = te.compute((197, 197), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k), name="matmul")
    config, steps, applied, module = _default_steps([a, b], [out])
    assert config["tile_cols"] % 8 == 0 and config["tile_cols"] > 1
    assert applied == steps
    from xweave.dialects import loop as loop_dialect
    from xdsl.dialects import scf

    (reduction,) = [f for f in module.walk()
                    if isinstance(f, loop_dialect.ForOp) and f.name_str == "matmul.k"]
    assert not any(isinstance(op, scf.IfOp) for op in reduction.walk())  # no guard inside


@pytest.mark.parametrize("cols", [72, 232])
def test_columns_only_narrow_vectors_divide_get_whole_wide_vectors(cols):
    """At 16 lanes, 72 or 232 columns divide only into 8-lane vectors, which leave half
    of each FMA idle: the default block takes whole 16-lane vectors, the last tile ragged."""
    import re

    from xweave import te

    rng = np.random.default_rng(5)
    a = te.placeholder((24, 48), "float32", name="a")
    b = te.placeholder((48, cols), "float32", name="b")
    k = te.reduce_axis(48, name="k")
    out = te.compute((24, cols), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k), name="matmul")
    kernel = xweave.build_kernel("matmul", [a, b], [out], target=AVX512)
    widths = set(re.findall(r"vector\.fma .*: vector<(\d+)xf32>", kernel.loop_ir))
    assert widths == {"16"}
    if HOST_AVX512:
        x, y = (rng.standard_normal(s, dtype=np.float32) for s in ((24, 48), (48, cols)))
        got = np.full((24, cols), np.nan, np.float32)
        kernel(x, y, out=[got])
        np.testing.assert_allclose(got, x @ y, rtol=1e-4, atol=1e-4)
