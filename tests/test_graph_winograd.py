"""graph-winograd: the Cook-Toom transform matrices, and 3x3 convs computed through
Winograd F(2x2) and F(4x4) by compiled code against a numpy convolution."""

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper
from xdsl.passes import PassPipeline

import xweave
from xweave.context import make_context
from xweave.frontend.onnx import load_onnx
from xweave.passes.graph_winograd import GraphWinogradPass
from xweave.winograd import sparse_sum, winograd_matrices

RNG = np.random.default_rng(13)


@pytest.mark.parametrize("tile", [1, 2, 3, 4])
def test_matrices_compute_a_correlation(tile):
    at, g, bt = winograd_matrices(tile)
    d, w = RNG.standard_normal(tile + 2), RNG.standard_normal(3)
    expected = np.correlate(d, w, mode="valid")
    np.testing.assert_allclose(at @ ((g @ w) * (bt @ d)), expected, rtol=1e-12, atol=1e-12)
    assert np.all(bt == np.round(bt))  # B^T scaled to integers


def test_sparse_sum_skips_zeros_and_unit_coefficients():
    class Term:  # records the expression sparse_sum builds
        def __init__(self, text): self.text = text
        def __add__(self, o): return Term(f"({self.text} + {o.text})")
        def __sub__(self, o): return Term(f"({self.text} - {o.text})")
        def __neg__(self): return Term(f"-{self.text}")
        def __rmul__(self, c): return Term(f"{c:g}*{self.text}")

    terms = [Term(n) for n in "abcd"]
    assert sparse_sum([0, -1, 4, 1], terms).text == "((-b + 4*c) + d)"
    assert sparse_sum([4, 0, -5, 0, 1, 0], [1, 2, 3, 4, 5, 6]) == 4 - 15 + 5
    with pytest.raises(ValueError):
        sparse_sum([0, 0], [1, 2])


def conv_numpy(x, w, b, pad):
    n, c, h, wd = x.shape
    k = w.shape[0]
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh, ow = h + 2 * pad - 2, wd + 2 * pad - 2
    out = np.zeros((n, k, oh, ow))
    for i in range(3):
        for j in range(3):
            out += np.einsum("nchw,kc->nkhw", xp[:, :, i:i + oh, j:j + ow], w[:, :, i, j])
    return out + b[None, :, None, None]


def conv_model(c, k, h, w, pad, convs=1, batch=1):
    """`convs` 3x3 convs with bias and relu (two: the layout stage blocks them)."""
    nodes, inits, prev, weights = [], [], "x", []
    for i in range(convs):
        wt = (RNG.standard_normal((k if i else k, c if i == 0 else k, 3, 3)) * 0.2).astype(np.float32)
        bias = RNG.standard_normal(k).astype(np.float32)
        weights.append((wt, bias))
        inits += [numpy_helper.from_array(wt, f"w{i}"), numpy_helper.from_array(bias, f"b{i}")]
        nodes += [helper.make_node("Conv", [prev, f"w{i}", f"b{i}"], [f"c{i}"], kernel_shape=[3, 3],
                                   pads=[pad] * 4),
                  helper.make_node("Relu", [f"c{i}"], [f"r{i}"])]
        prev = f"r{i}"
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, c, h, w])],
                              [helper.make_tensor_value_info(prev, TensorProto.FLOAT, None)], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model, weights


def reference(x, weights, pad):
    for wt, bias in weights:
        x = np.maximum(conv_numpy(x, wt, bias, pad), 0)
    return x


def check(result, expected):
    scale = np.abs(expected).max()
    assert np.abs(result - expected).max() <= 1e-4 * scale


@pytest.mark.parametrize("tile, c, k, h, w, pad", [
    (2, 16, 16, 6, 6, 1),
    (4, 16, 24, 7, 5, 1),   # odd sizes: the last tiles cut off
    (4, 20, 16, 9, 9, 0),   # no padding
    (2, 16, 16, 5, 7, 0),
])
def test_nchw_conv_matches_numpy(tile, c, k, h, w, pad):
    model, weights = conv_model(c, k, h, w, pad)
    module = load_onnx(model)
    PassPipeline((GraphWinogradPass(tile=tile, nchw=True, min_pixels=1),)).apply(make_context(), module)
    assert "graph.winograd_matmul" in str(module)
    compiled = xweave.build(module, threads=1, layout=False)
    x = RNG.standard_normal((1, c, h, w)).astype(np.float32)
    check(compiled.run(x=x)[0], reference(x, weights, pad))


def _kernel_text(module_text: str, name: str) -> str:
    start = module_text.index(f"func.func @{name}")
    end = module_text.find("\n  func.func", start + 1)
    return module_text[start:end if end > 0 else None]


def test_blocked_convs_through_build(tmp_path):
    """Two convs: the layout stage blocks them (NCHW16c), then both become Winograd
    (the default build; batch 2, 2 threads); the transforms' point loops are unrolled
    into straight vector code with constant coefficients: no select tree or point loop
    is left."""
    model, weights = conv_model(16, 32, 30, 29, 1, convs=2, batch=2)
    x = RNG.standard_normal((2, 16, 30, 29)).astype(np.float32)
    compiled = xweave.build(model, threads=2, dump_ir=tmp_path)
    check(compiled.run(x=x)[0], reference(x, weights, 1))
    scheduled = next(tmp_path.glob("*-scheduled.mlir")).read_text()
    assert scheduled.count("func.func @winograd_input_transform") == 2  # 16 and 32 channels in
    inputs = _kernel_text(scheduled, "winograd_input_transform_0")
    outputs = _kernel_text(scheduled, "fused_winograd_output_transform_add_relu_0")
    for kernel in (inputs, outputs):
        assert "vector<8xf32>" in kernel and "arith.select" not in kernel
    assert '"winograd_input.b"' not in inputs
    assert '"relu.i2.inner"' not in outputs and '"relu.i3.inner"' not in outputs


def test_winograd_stage_on_by_default():
    from xweave.pipeline import CompileOptions, cpu_stages

    assert "winograd" in [s.name for s in cpu_stages(CompileOptions())]
    assert "winograd" not in [s.name for s in cpu_stages(CompileOptions(winograd=False))]


def test_small_images_left_alone():
    """Below `min-pixels` output pixels the direct conv stays (it is faster there)."""
    model, _ = conv_model(16, 16, 14, 14, 1, convs=2)
    module = load_onnx(model)
    PassPipeline((GraphWinogradPass(nchw=True),)).apply(make_context(), module)
    assert "winograd" not in str(module)
    PassPipeline((GraphWinogradPass(nchw=True, min_pixels=196),)).apply(make_context(), module)
    assert str(module).count("graph.winograd_matmul") == 2


def test_small_channels_left_alone():
    model, _ = conv_model(3, 16, 6, 6, 1)
    module = load_onnx(model)
    PassPipeline((GraphWinogradPass(nchw=True, min_pixels=1),)).apply(make_context(), module)
    assert "winograd" not in str(module) and "graph.conv2d" in str(module)


@pytest.mark.parametrize("tile", [2, 3, 4])
@pytest.mark.parametrize("blocked", [False, True])
def test_interpreter_runs_the_rewritten_graph(tile, blocked):
    """The graph interpreter's numpy Winograd ops give the convolutions' results
    (NCHW, and NCHW16c after the layout stage)."""
    from xweave.dialects.interpreters import interpret
    from xweave.passes.graph_alter_layout import GraphAlterLayoutPass
    from xweave.passes.graph_fold_constants import GraphFoldConstantsPass

    model, weights = conv_model(16, 16, 7, 6, 1, convs=2)
    module = load_onnx(model)
    passes = (GraphAlterLayoutPass(), GraphFoldConstantsPass()) if blocked else ()
    PassPipeline(passes + (GraphWinogradPass(tile=tile, nchw=True, min_pixels=1),)).apply(make_context(), module)
    text = str(module)
    assert text.count("graph.winograd_matmul") == 2 and ("16c" in text) == blocked
    x = RNG.standard_normal((1, 16, 7, 6)).astype(np.float32)
    check(interpret(module, [x])[0], reference(x, weights, 1))
