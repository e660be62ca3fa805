"""Operator fusion: graph-fuse groups, their meaning (interpreter, onnxruntime), one
kernel per group, the kernels' schedule templates, and fusion turned off."""

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
from xweave.dialects.graph import PatternKind
from xweave.dialects.interpreters import interpret
from xweave.passes.graph_fuse import GraphFusePass
from xweave.pipeline import CompileOptions, cpu_stages
from xweave.schedules import template_for
from xweave.schedules.analysis import analyse

from helpers import onnx_model

RNG = np.random.default_rng(7)
BIN = Path(sys.executable).parent


def rand(*shape, scale=1.0):
    return (RNG.standard_normal(shape) * scale).astype(np.float32)


# --------------------------------------------------------------------------------------
# The pass on graph IR: groups and meaning (the interpreter runs graph.fused regions)
# --------------------------------------------------------------------------------------

CONV = ('{dilations = array<i64: 1, 1>, groups = 1 : i64, pads = array<i64: 1, 1, 1, 1>, '
        'strides = array<i64: 1, 1>}')

PROGRAMS = {
    # conv + batch norm (unfolded) + relu + residual add: one group
    "conv_bn_relu_add": ("""
func.func @main(%x: tensor<1x4x6x6xf32>, %w: tensor<4x4x3x3xf32>, %s: tensor<4xf32>,
                %b: tensor<4xf32>, %m: tensor<4xf32>, %v: tensor<4xf32>) -> tensor<1x4x6x6xf32> {
  %c = graph.conv2d %x, %w CONV : (tensor<1x4x6x6xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x6x6xf32>
  %n = graph.batch_norm %c, %s, %b, %m, %v {epsilon = 1.0e-05 : f64} : (tensor<1x4x6x6xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<1x4x6x6xf32>
  %r = graph.relu %n : tensor<1x4x6x6xf32>
  %y = graph.add %r, %x : (tensor<1x4x6x6xf32>, tensor<1x4x6x6xf32>) -> tensor<1x4x6x6xf32>
  func.return %y : tensor<1x4x6x6xf32>
}""", [(1, 4, 6, 6), (4, 4, 3, 3), (4,), (4,), (4,), "var4"], [4]),
    # a value used twice inside the group and once outside; a reduction with inputs
    "diamond_and_reduce": ("""
func.func @main(%x: tensor<3x8xf32>) -> (tensor<3x8xf32>, tensor<3x1xf32>, tensor<3x1xf32>) {
  %e = graph.exp %x : tensor<3x8xf32>
  %t = graph.tanh %e : tensor<3x8xf32>
  %q = graph.sqrt %e : tensor<3x8xf32>
  %d = graph.sub %t, %q : (tensor<3x8xf32>, tensor<3x8xf32>) -> tensor<3x8xf32>
  %s = graph.reduce %d {axes = array<i64: 1>, keepdims = true, kind = "max"} : tensor<3x8xf32> -> tensor<3x1xf32>
  %n = graph.neg %x : tensor<3x8xf32>
  %k = graph.reduce %n {axes = array<i64: 1>, keepdims = true, kind = "sum"} : tensor<3x8xf32> -> tensor<3x1xf32>
  func.return %d, %s, %k : tensor<3x8xf32>, tensor<3x1xf32>, tensor<3x1xf32>
}""", [(3, 8)], [4, 2]),
    # dense + decomposed gelu; softmax + epilogue
    "dense_gelu_softmax": ("""
func.func @main(%x: tensor<2x8xf32>, %w: tensor<6x8xf32>) -> tensor<2x6xf32> {
  %h = graph.constant dense<0.5> : tensor<f32>
  %r2 = graph.constant dense<1.41421354> : tensor<f32>
  %one = graph.constant dense<1.0> : tensor<f32>
  %d = graph.dense %x, %w : (tensor<2x8xf32>, tensor<6x8xf32>) -> tensor<2x6xf32>
  %a = graph.div %d, %r2 : (tensor<2x6xf32>, tensor<f32>) -> tensor<2x6xf32>
  %e = graph.erf %a : tensor<2x6xf32>
  %p = graph.add %e, %one : (tensor<2x6xf32>, tensor<f32>) -> tensor<2x6xf32>
  %m = graph.mul %d, %p : (tensor<2x6xf32>, tensor<2x6xf32>) -> tensor<2x6xf32>
  %g = graph.mul %m, %h : (tensor<2x6xf32>, tensor<f32>) -> tensor<2x6xf32>
  %s = graph.softmax %g {axis = 1 : i64} : tensor<2x6xf32>
  %y = graph.mul %s, %h : (tensor<2x6xf32>, tensor<f32>) -> tensor<2x6xf32>
  func.return %y : tensor<2x6xf32>
}""", [(2, 8), (6, 8)], [6, 2]),
}


def _program(name):
    text, shapes, group_sizes = PROGRAMS[name]
    inputs = [np.abs(rand(4)) + 0.5 if s == "var4" else rand(*s) for s in shapes]
    return parse_module(text.replace("CONV", CONV)), inputs, group_sizes


def _fused_ops(module):
    return [op for op in module.walk() if isinstance(op, graph.FusedOp)]


@pytest.mark.parametrize("name", PROGRAMS)
def test_fusion_preserves_meaning(name):
    module, inputs, group_sizes = _program(name)
    expected = interpret(module, inputs)
    fused = module.clone()
    GraphFusePass().apply(make_context(), fused)
    fused.verify()
    groups = _fused_ops(fused)
    assert [len(list(g.body.block.ops)) - 1 for g in groups] == group_sizes
    got = interpret(fused, inputs)
    for g, e in zip(got, expected, strict=True):
        np.testing.assert_array_equal(g, e)


def test_fused_group_kind_is_its_master_op():
    module, _, _ = _program("dense_gelu_softmax")
    GraphFusePass().apply(make_context(), module)
    kinds = [g.pattern_kind for g in _fused_ops(module)]
    assert kinds == [PatternKind.OUT_ELEMWISE_FUSABLE, PatternKind.OUT_ELEMWISE_FUSABLE]
    assert graph.FusedOp.pattern_kind is PatternKind.OPAQUE  # on the class: no master


def test_max_depth_bounds_the_group():
    module, inputs, _ = _program("conv_bn_relu_add")
    expected = interpret(module, inputs)
    GraphFusePass(max_depth=2).apply(make_context(), module)
    sizes = [len(list(g.body.block.ops)) - 1 for g in _fused_ops(module)]
    assert sizes and max(sizes) <= 2
    np.testing.assert_array_equal(interpret(module, inputs)[0], expected[0])


# --------------------------------------------------------------------------------------
# Whole models: onnxruntime, kernel counts with fusion on and off, templates
# --------------------------------------------------------------------------------------


def conv_bias_relu():
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["y"])]
    init = {"w": rand(16, 8, 3, 3, scale=0.2), "b": rand(16)}
    return onnx_model(nodes, [("x", [1, 8, 10, 10])], ["y"], init), {"x": rand(1, 8, 10, 10)}


def residual_block():
    """conv-bn-relu, conv-bn, + x, relu: ResNet's basic block."""
    def bn(name, c):
        return {f"{name}_s": rand(c, scale=0.3) + 1, f"{name}_b": rand(c, scale=0.1),
                f"{name}_m": rand(c, scale=0.1), f"{name}_v": np.abs(rand(c)) + 0.5}

    nodes = [
        helper.make_node("Conv", ["x", "w1"], ["c1"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["c1", "n1_s", "n1_b", "n1_m", "n1_v"], ["n1"]),
        helper.make_node("Relu", ["n1"], ["r1"]),
        helper.make_node("Conv", ["r1", "w2"], ["c2"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["c2", "n2_s", "n2_b", "n2_m", "n2_v"], ["n2"]),
        helper.make_node("Add", ["n2", "x"], ["a"]),
        helper.make_node("Relu", ["a"], ["y"]),
    ]
    init = {"w1": rand(8, 8, 3, 3, scale=0.2), "w2": rand(8, 8, 3, 3, scale=0.2),
            **bn("n1", 8), **bn("n2", 8)}
    return onnx_model(nodes, [("x", [1, 8, 8, 8])], ["y"], init), {"x": rand(1, 8, 8, 8)}


def dense_gelu():
    """Gemm, then gelu written out with Erf (as exporters do): the Gemm result feeds two ops."""
    const = {"half": np.array(0.5, np.float32), "sqrt2": np.array(np.sqrt(2), np.float32),
             "one": np.array(1.0, np.float32)}
    nodes = [
        helper.make_node("Gemm", ["x", "w", "b"], ["d"], transB=1),
        helper.make_node("Div", ["d", "sqrt2"], ["q"]),
        helper.make_node("Erf", ["q"], ["e"]),
        helper.make_node("Add", ["e", "one"], ["p"]),
        helper.make_node("Mul", ["d", "p"], ["m"]),
        helper.make_node("Mul", ["m", "half"], ["y"]),
    ]
    init = {"w": rand(24, 16, scale=0.3), "b": rand(24), **const}
    return onnx_model(nodes, [("x", [4, 16])], ["y"], init), {"x": rand(4, 16)}


def matmul_add_relu():
    nodes = [helper.make_node("MatMul", ["x", "w"], ["m"]),
             helper.make_node("Add", ["m", "b"], ["a"]),
             helper.make_node("Relu", ["a"], ["y"])]
    init = {"w": rand(16, 32, scale=0.3), "b": rand(32)}
    return onnx_model(nodes, [("x", [8, 16])], ["y"], init), {"x": rand(8, 16)}


def elementwise_chain():
    nodes = [helper.make_node("Add", ["x", "z"], ["a"]),
             helper.make_node("Sigmoid", ["a"], ["s"]),
             helper.make_node("Mul", ["s", "x"], ["m"]),
             helper.make_node("Transpose", ["m"], ["t"], perm=[1, 0]),
             helper.make_node("Tanh", ["t"], ["y"])]
    return (onnx_model(nodes, [("x", [6, 10]), ("z", [10])], ["y"], {}),
            {"x": rand(6, 10), "z": rand(10)})


def reduction_inputs():
    """A reduction fuses its injective inputs (transpose, scale, exp)."""
    nodes = [
        helper.make_node("Transpose", ["x"], ["t"], perm=[1, 0]),
        helper.make_node("Mul", ["t", "k"], ["s"]),
        helper.make_node("Exp", ["s"], ["e"]),
        helper.make_node("ReduceSum", ["e", "axes"], ["y"], keepdims=1),
    ]
    init = {"k": np.array([0.5], np.float32), "axes": np.array([1], np.int64)}
    return onnx_model(nodes, [("x", [6, 16])], ["y"], init), {"x": rand(6, 16)}


def softmax_epilogue():
    """softmax takes an elementwise epilogue; the decomposed form's reductions do not."""
    nodes = [
        helper.make_node("Softmax", ["x"], ["p"], axis=1),
        helper.make_node("Mul", ["p", "k"], ["y"]),
        helper.make_node("ReduceMax", ["x"], ["m"], axes=[1], keepdims=1),
        helper.make_node("Sub", ["x", "m"], ["d"]),
        helper.make_node("Exp", ["d"], ["e"]),
        helper.make_node("ReduceSum", ["e", "axes"], ["s"], keepdims=1),
        helper.make_node("Div", ["e", "s"], ["z"]),
    ]
    init = {"k": np.array([0.5], np.float32), "axes": np.array([1], np.int64)}
    return onnx_model(nodes, [("x", [6, 16])], ["y", "z"], init), {"x": rand(6, 16)}


MODELS = {
    # model, (kernel calls fused, kernel calls unfused)
    "conv_bias_relu": (conv_bias_relu, (1, 2)),
    "residual_block": (residual_block, (2, 5)),
    "dense_gelu": (dense_gelu, (1, 6)),
    "matmul_add_relu": (matmul_add_relu, (1, 3)),
    "elementwise_chain": (elementwise_chain, (1, 5)),
    "reduction_inputs": (reduction_inputs, (1, 4)),
    "softmax_epilogue": (softmax_epilogue, (5, 7)),
}


def lowered(model, fuse: bool, until: str):
    """The module after pipeline stage `until` (NCHW convs: the layout stage's
    transforms would add kernels that have nothing to do with fusion)."""
    module = xweave.load_onnx(model)
    ctx = make_context()
    for stage in cpu_stages(CompileOptions(fuse=fuse, layout=False)):
        PassPipeline(stage.passes).apply(ctx, module)
        if stage.name == until:
            return module
    raise AssertionError(until)


def kernel_calls(module) -> list[str]:
    main = next(f for f in module.ops if isinstance(f, func.FuncOp) and f.sym_name.data == "main")
    return [op.callee.root_reference.data for op in main.walk() if isinstance(op, func.CallOp)]


@pytest.mark.parametrize("name", MODELS)
def test_models_match_onnxruntime_with_fewer_kernels(name):
    make, (fused_calls, unfused_calls) = MODELS[name]
    model, feeds = make()
    assert len(kernel_calls(lowered(model, True, "te"))) == fused_calls
    assert len(kernel_calls(lowered(model, False, "te"))) == unfused_calls
    expected = ort.InferenceSession(model.SerializeToString()).run(None, feeds)
    got = xweave.build(model).run(**feeds)
    for g, e in zip(got, expected, strict=True):
        np.testing.assert_allclose(g, e, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("make", [conv_bias_relu, matmul_add_relu, dense_gelu])
def test_fused_anchor_kernels_get_the_blocked_reduction_template(make):
    model, _ = make()
    module = lowered(model, True, "loop")
    kernels = [f for f in module.ops if isinstance(f, func.FuncOp) and "xweave.kernel" in f.attributes]
    assert len(kernels) == 1 and kernels[0].sym_name.data.startswith("fused_")
    info = analyse(kernels[0])
    assert template_for(info).name == "blocked-reduction"
    assert len(info.stages) >= 3  # the anchor and its epilogue stages, in one kernel


def test_equal_groups_share_one_kernel():
    """Two identical conv+relu groups (different weights): one kernel, called twice."""
    nodes = [helper.make_node("Conv", ["x", "w1"], ["c1"], kernel_shape=[1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("Conv", ["r1", "w2"], ["c2"], kernel_shape=[1, 1]),
             helper.make_node("Relu", ["c2"], ["y"])]
    model = onnx_model(nodes, [("x", [1, 8, 4, 4])], ["y"],
                       {"w1": rand(8, 8, 1, 1), "w2": rand(8, 8, 1, 1)})
    module = lowered(model, True, "te")
    assert kernel_calls(module) == ["fused_conv2d_relu_0", "fused_conv2d_relu_0"]
    feeds = {"x": rand(1, 8, 4, 4)}
    expected = ort.InferenceSession(model.SerializeToString()).run(None, feeds)[0]
    np.testing.assert_allclose(xweave.build(model).run(**feeds)[0], expected, rtol=1e-4, atol=1e-5)


def test_build_and_compile_without_fusion(tmp_path):
    model, feeds = conv_bias_relu()
    expected = ort.InferenceSession(model.SerializeToString()).run(None, feeds)[0]
    np.testing.assert_allclose(xweave.build(model, fuse=False).run(**feeds)[0], expected,
                               rtol=1e-4, atol=1e-5)
    onnx.save(model, tmp_path / "m.onnx")
    dump = tmp_path / "ir"
    out = subprocess.run([str(BIN / "xweave"), "compile", str(tmp_path / "m.onnx"), "--no-fuse",
                          "-o", str(tmp_path / "m.xw"), "--dump-ir", str(dump)],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert not list(dump.glob("*-fused.mlir"))
    assert next(dump.glob("*-te.mlir")).read_text().count("attributes {xweave.kernel}") == 2
    np.testing.assert_allclose(xweave.load_module(tmp_path / "m.xw").run(**feeds)[0], expected,
                               rtol=1e-4, atol=1e-5)
