"""NCHW[x]c for the CPU: layout algebra, graph-alter-layout's meaning (graph
interpreter) and small CNNs compiled with the layout stage vs onnxruntime."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import helper
from xdsl.dialects import func
from xdsl.passes import PassPipeline

import xweave
from xweave.context import make_context, parse_module
from xweave.dialects import graph
from xweave.dialects.dtypes import numpy_dtype
from xweave.dialects.interpreters import interpret
from xweave.layout import Layout, source_index, transform_array, transform_shape
from xweave.passes.graph_alter_layout import GraphAlterLayoutPass
from xweave.pipeline import CompileOptions, cpu_stages

from helpers import onnx_model

RNG = np.random.default_rng(11)
FILECHECK = Path(__file__).parent / "filecheck" / "passes" / "graph-alter-layout.mlir"


def rand(*shape, scale=1.0):
    return (RNG.standard_normal(shape) * scale).astype(np.float32)


# --------------------------------------------------------------------------------------
# Layout algebra
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("shape, src, dst", [
    ((2, 32, 3, 5), "NCHW", "NCHW16c"),
    ((2, 2, 3, 5, 16), "NCHW16c", "NCHW8c"),
    ((24, 32, 3, 3), "OIHW", "OIHW16i8o"),
    ((16, 1, 3, 3), "OIHW", "OIHW1i16o"),
    ((1, 3, 4, 4), "NCHW", "NHWC"),
])
def test_transform_array_agrees_with_source_index(shape, src, dst):
    x = rand(*shape)
    y = transform_array(x, src, dst)
    assert y.shape == transform_shape(shape, src, dst)
    for index in np.ndindex(*y.shape):
        assert y[index] == x[tuple(source_index(index, src, dst))]
    np.testing.assert_array_equal(transform_array(y, dst, src), x)


def test_nchw16c_element_positions():
    x = rand(1, 32, 2, 2)
    y = transform_array(x, "NCHW", "NCHW16c")
    assert y[0, 1, 1, 0, 5] == x[0, 21, 1, 0]


@pytest.mark.parametrize("text, message", [
    ("NCHW16", "expected letters"), ("NCHWc", "needs a factor"), ("NCHW8d", "has no axis D"),
    ("NCHC", "appears twice"), ("N2CHW", "takes no factor"),
])
def test_bad_layouts_are_named(text, message):
    with pytest.raises(ValueError, match=message):
        Layout.parse(text)


def test_blocks_must_divide():
    with pytest.raises(ValueError, match="does not split"):
        transform_shape((1, 24, 4, 4), "NCHW", "NCHW16c")


# --------------------------------------------------------------------------------------
# The pass keeps the meaning of every function in its filecheck test
# --------------------------------------------------------------------------------------


def _random_inputs(function: func.FuncOp):
    """Floats, or integers over the whole range of an integer element type."""
    inputs = []
    for t in function.function_type.inputs.data:
        dtype = numpy_dtype(t.element_type)
        if dtype.kind in "iu":
            info = np.iinfo(dtype)
            inputs.append(RNG.integers(info.min, info.max, t.get_shape(), endpoint=True).astype(dtype))
        else:
            inputs.append(rand(*t.get_shape()))
    return inputs


@pytest.mark.parametrize("block", [16, 8])
def test_pass_preserves_meaning(block):
    module = parse_module(FILECHECK.read_text())
    before = module.clone()
    GraphAlterLayoutPass(block=block).apply(make_context(), module)
    module.verify()
    rewritten = [op for op in module.walk() if isinstance(op, graph.Conv2dNchwcOp)]
    # with blocks of 8, the last conv of @fallback_last (24 channels) is blocked too
    assert len(rewritten) == {16: 10, 8: 11}[block]
    for function in [f for f in before.ops if isinstance(f, func.FuncOp)]:
        name = function.sym_name.data
        inputs = _random_inputs(function)
        expected = interpret(before, inputs, name)
        got = interpret(module, inputs, name)
        for g, e in zip(got, expected, strict=True):
            np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-5, err_msg=name)


# --------------------------------------------------------------------------------------
# Small CNNs through the whole pipeline vs onnxruntime
# --------------------------------------------------------------------------------------


N = helper.make_node


def resnet_stem_and_block():
    """The first 3-channel conv (7x7/2), max pool, a basic block with a residual add,
    global average pool, flatten, gemm."""
    nodes = [
        N("Conv", ["x", "w0", "b0"], ["c0"], kernel_shape=[7, 7], strides=[2, 2], pads=[3, 3, 3, 3]),
        N("Relu", ["c0"], ["r0"]),
        N("MaxPool", ["r0"], ["p0"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
        N("Conv", ["p0", "w1", "b1"], ["c1"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        N("Relu", ["c1"], ["r1"]),
        N("Conv", ["r1", "w2", "b2"], ["c2"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        N("Add", ["c2", "p0"], ["a"]),
        N("Relu", ["a"], ["r2"]),
        N("GlobalAveragePool", ["r2"], ["g"]),
        N("Flatten", ["g"], ["f"]),
        N("Gemm", ["f", "wf", "bf"], ["y"], transB=1),
    ]
    init = {"w0": rand(16, 3, 7, 7, scale=0.2), "b0": rand(16), "w1": rand(16, 16, 3, 3, scale=0.1),
            "b1": rand(16), "w2": rand(16, 16, 3, 3, scale=0.1), "b2": rand(16),
            "wf": rand(10, 16), "bf": rand(10)}
    return onnx_model(nodes, [("x", [1, 3, 32, 32])], ["y"], init), {"x": rand(1, 3, 32, 32)}


def inverted_residual():
    """MobileNetV2: 1x1 expand + relu6, depthwise 3x3/1 + relu6, 1x1 project to 24
    channels (blocks of 8: last, it stays NCHW), residual add, a per-channel scale."""
    nodes = [
        N("Conv", ["x", "we"], ["e"], kernel_shape=[1, 1]),
        N("Clip", ["e", "lo", "hi"], ["e6"]),
        N("Conv", ["e6", "wd", "bd"], ["d"], kernel_shape=[3, 3], pads=[1, 1, 1, 1], group=48),
        N("Clip", ["d", "lo", "hi"], ["d6"]),
        N("Conv", ["d6", "wp", "bp"], ["p"], kernel_shape=[1, 1]),
        N("Add", ["p", "x"], ["a"]),
        N("Mul", ["a", "s"], ["y"]),
    ]
    init = {"we": rand(48, 24, 1, 1, scale=0.2), "wd": rand(48, 1, 3, 3, scale=0.3), "bd": rand(48),
            "wp": rand(24, 48, 1, 1, scale=0.2), "bp": rand(24), "s": rand(24, 1, 1),
            "lo": np.array(0, np.float32), "hi": np.array(6, np.float32)}
    return onnx_model(nodes, [("x", [1, 24, 10, 10])], ["y"], init), {"x": rand(1, 24, 10, 10)}


def fire_module():
    """SqueezeNet: squeeze 1x1, two expands concatenated on the channels, a ceil-mode
    max pool and an average pool; a concat along H; a final 10-class conv (NCHW)."""
    nodes = [
        N("Conv", ["x", "ws", "bs"], ["s"], kernel_shape=[1, 1]), N("Relu", ["s"], ["rs"]),
        N("Conv", ["rs", "w1", "b1"], ["e1"], kernel_shape=[1, 1]), N("Relu", ["e1"], ["r1"]),
        N("Conv", ["rs", "w3", "b3"], ["e3"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        N("Relu", ["e3"], ["r3"]),
        N("Concat", ["r1", "r3"], ["c"], axis=1),
        N("MaxPool", ["c"], ["m"], kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1),
        N("AveragePool", ["m"], ["v"], kernel_shape=[2, 2], pads=[1, 1, 0, 0], count_include_pad=0),
        N("Concat", ["r1", "r3"], ["h"], axis=2),
        N("Conv", ["v", "wo"], ["o"], kernel_shape=[1, 1]),
        N("GlobalMaxPool", ["o"], ["y"]),
    ]
    init = {"ws": rand(16, 32, 1, 1, scale=0.2), "bs": rand(16), "w1": rand(32, 16, 1, 1, scale=0.2),
            "b1": rand(32), "w3": rand(32, 16, 3, 3, scale=0.1), "b3": rand(32),
            "wo": rand(10, 64, 1, 1, scale=0.2)}
    return onnx_model(nodes, [("x", [1, 32, 13, 13])], ["y", "h"], init), {"x": rand(1, 32, 13, 13)}


def grouped_bottleneck():
    """RegNet/ResNeXt: 1x1, grouped 3x3/2 (6 groups of 8 channels: blocks of 16 hold
    two), 1x1, and a lone grouped 3x3 of 4-channel groups (ResNeXt's width) with a bias
    between NCHW ops, which is blocked too (one 16-channel block of 4 groups)."""
    nodes = [
        N("Conv", ["x", "wa"], ["a"], kernel_shape=[1, 1]), N("Relu", ["a"], ["ra"]),
        N("Conv", ["ra", "wg", "bg"], ["g"], kernel_shape=[3, 3], pads=[1, 1, 1, 1],
          strides=[2, 2], group=6),
        N("Relu", ["g"], ["rg"]),
        N("Conv", ["rg", "wc"], ["c"], kernel_shape=[1, 1]),
        N("Conv", ["x2", "wx", "bx"], ["y2"], kernel_shape=[3, 3], pads=[1, 1, 1, 1], group=4),
    ]
    init = {"wa": rand(48, 16, 1, 1, scale=0.3), "wg": rand(48, 8, 3, 3, scale=0.2),
            "bg": rand(48), "wc": rand(32, 48, 1, 1, scale=0.2),
            "wx": rand(16, 4, 3, 3, scale=0.3), "bx": rand(16)}
    feeds = {"x": rand(1, 16, 14, 14), "x2": rand(1, 16, 9, 9)}
    return onnx_model(nodes, [("x", [1, 16, 14, 14]), ("x2", [1, 16, 9, 9])], ["c", "y2"],
                      init), feeds


MODELS = {"resnet": (resnet_stem_and_block, 3), "mobilenet": (inverted_residual, 2),
          "squeezenet": (fire_module, 3), "grouped": (grouped_bottleneck, 4)}


def after_layout(model):
    module = xweave.load_onnx(model)
    ctx = make_context()
    for stage in cpu_stages(CompileOptions(layout=True)):
        PassPipeline(stage.passes).apply(ctx, module)
        if stage.name == "layout":
            return module
    raise AssertionError("no layout stage")


@pytest.mark.parametrize("name", MODELS)
def test_models_match_onnxruntime(name):
    make, blocked_convs = MODELS[name]
    model, feeds = make()
    module = after_layout(model)
    ops = list(module.walk())
    assert sum(isinstance(op, graph.Conv2dNchwcOp) for op in ops) == blocked_convs
    # Weights were transformed at compile time: no transform reads a constant.
    assert not any(isinstance(op, graph.LayoutTransformOp) and isinstance(op.input.owner, graph.ConstantOp)
                   for op in ops)
    expected = ort.InferenceSession(model.SerializeToString()).run(None, feeds)
    got = xweave.build(model, layout=True).run(**feeds)
    for g, e in zip(got, expected, strict=True):
        np.testing.assert_allclose(g, e, rtol=1e-4, atol=1e-4)


def test_layout_stage_can_be_left_out():
    model, _ = resnet_stem_and_block()
    names = [s.name for s in cpu_stages(CompileOptions(layout=False))]
    assert "layout" not in names and "layout" in [s.name for s in cpu_stages(CompileOptions(layout=True))]
    module = xweave.load_onnx(model)
    ctx = make_context()
    for stage in cpu_stages(CompileOptions(layout=False)):
        if stage.name == "te":
            break
        PassPipeline(stage.passes).apply(ctx, module)
    assert not any(isinstance(op, graph.Conv2dNchwcOp) for op in module.walk())


def test_compile_cli_layout_option(tmp_path):
    model, feeds = resnet_stem_and_block()
    onnx.save(model, tmp_path / "m.onnx")
    xweave_cli = Path(sys.executable).parent / "xweave"
    out = subprocess.run([str(xweave_cli), "compile", str(tmp_path / "m.onnx"), "--layout", "nchwc",
                          "-o", str(tmp_path / "m.xw"), "--dump-ir", str(tmp_path / "ir")],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "graph.conv2d_nchwc" in next((tmp_path / "ir").glob("*-layout.mlir")).read_text()
    expected = ort.InferenceSession(model.SerializeToString()).run(None, feeds)[0]
    np.testing.assert_allclose(xweave.load_module(tmp_path / "m.xw").run(**feeds)[0], expected,
                               rtol=1e-4, atol=1e-4)
    bad = subprocess.run([str(xweave_cli), "compile", str(tmp_path / "m.onnx"), "--layout", "nhwc",
                          "-o", str(tmp_path / "n.xw")], capture_output=True, text=True)
    assert bad.returncode != 0 and "--layout" in bad.stderr and "Traceback" not in bad.stderr
