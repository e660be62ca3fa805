"""Graph-level passes (graph-fold-constants, graph-simplify-inference, graph-cse, dce):
each preserves meaning (graph interpreter before vs after; compiled models vs
onnxruntime) and removes work (fewer kernels)."""

import numpy as np
import onnxruntime as ort
import pytest
from onnx import helper, numpy_helper
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType, f32
from xdsl.ir import Block, Region
from xdsl.passes import PassPipeline

import xweave
from xweave.context import make_context, parse_module
from xweave.dialects import graph
from xweave.dialects.graph.constants import constant_value
from xweave.dialects.interpreters import interpret
from xweave.frontend.onnx import load_onnx
from xweave.lowering.graph_to_te import ConvertGraphToTePass
from xweave.passes.graph_cse import GraphCsePass
from xweave.passes.graph_fold_constants import GraphFoldConstantsPass
from xweave.passes.graph_simplify_inference import GraphSimplifyInferencePass
from xweave.pipeline import CompileOptions, cpu_stages

from helpers import onnx_model

RNG = np.random.default_rng(4)


def apply(module: ModuleOp, *passes) -> ModuleOp:
    """A copy of `module` with `passes` applied (verified)."""
    out = module.clone()
    PassPipeline(tuple(passes)).apply(make_context(), out)
    out.verify()
    return out


def graph_opt_passes():
    (stage,) = [s for s in cpu_stages(CompileOptions()) if s.name == "graph-opt"]
    return stage.passes


def ops_named(module: ModuleOp, name: str) -> list:
    return [op for op in module.walk() if op.name == name]


def kernel_count(module: ModuleOp) -> int:
    """Kernel calls after convert-graph-to-te (no fusion): one per graph op but constants."""
    lowered = apply(module, ConvertGraphToTePass())
    return len(ops_named(lowered, "func.call"))


def assert_same_results(before: ModuleOp, after: ModuleOp, inputs, rtol=1e-5, atol=1e-6):
    expected, got = interpret(before, inputs), interpret(after, inputs)
    assert len(expected) == len(got)
    for e, g in zip(expected, got):
        assert e.dtype == g.dtype and e.shape == g.shape
        np.testing.assert_allclose(g, e, rtol=rtol, atol=atol)


# --------------------------------------------------------------------------------------
# graph-fold-constants
# --------------------------------------------------------------------------------------

FOLDABLE = """
func.func @main(%x: tensor<1x2x5x5xf32>, %v: tensor<6x4xf32>) -> (tensor<1x3x5x5xf32>, tensor<6x3xf32>, tensor<3xi64>) {
  %w = graph.constant dense_resource<w_00000001> : tensor<3x4xf32>
  %wt = graph.transpose %w {perm = array<i64: 1, 0>} : tensor<3x4xf32> -> tensor<4x3xf32>
  %two = graph.constant dense<2.0> : tensor<f32>
  %ws = graph.mul %wt, %two : (tensor<4x3xf32>, tensor<f32>) -> tensor<4x3xf32>
  %y = graph.matmul %v, %ws : (tensor<6x4xf32>, tensor<4x3xf32>) -> tensor<6x3xf32>
  %k = graph.reshape %ws : tensor<4x3xf32> -> tensor<3x2x1x2xf32>
  %kk = graph.transpose %k {perm = array<i64: 0, 1, 3, 2>} : tensor<3x2x1x2xf32> -> tensor<3x2x2x1xf32>
  %c = graph.conv2d %x, %kk {strides = array<i64: 1, 1>, pads = array<i64: 1, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x2x5x5xf32>, tensor<3x2x2x1xf32>) -> tensor<1x3x5x5xf32>
  %s = graph.constant dense<[7, 1, 5, 3]> : tensor<4xi64>
  %i = graph.constant dense<[3, -1, 0]> : tensor<3xi64>
  %g = graph.gather %s, %i {axis = 0 : i64} : (tensor<4xi64>, tensor<3xi64>) -> tensor<3xi64>
  func.return %c, %y, %g : tensor<1x3x5x5xf32>, tensor<6x3xf32>, tensor<3xi64>
}
{-#
  dialect_resources: {
    builtin: {
      w_00000001: "0xBLOB"
    }
  }
#-}
"""


def foldable_module() -> ModuleOp:
    w = RNG.standard_normal((3, 4)).astype(np.float32)
    return parse_module(FOLDABLE.replace("BLOB", "04000000" + w.tobytes().hex().upper()))


def test_fold_constants_evaluates_constant_chains():
    before = foldable_module()
    after = apply(before, GraphFoldConstantsPass())
    # Only the ops reading the inputs are left, each fed by one folded constant.
    assert [op.name for op in after.walk() if op.name.startswith("graph.")
            and op.name != "graph.constant"] == ["graph.matmul", "graph.conv2d"]
    assert len(ops_named(after, "graph.constant")) == 3
    inputs = (RNG.standard_normal((1, 2, 5, 5)).astype(np.float32),
              RNG.standard_normal((6, 4)).astype(np.float32))
    assert_same_results(before, after, inputs)
    assert kernel_count(after) == 2 < kernel_count(before)


def test_fold_constants_bound_keeps_growing_folds():
    text = """
    func.func @main(%x: tensor<64x64xf32>) -> tensor<64x64xf32> {
      %c = graph.constant dense<[1.0, 2.0]> : tensor<2xf32>
      %t = graph.tile %c {repeats = array<i64: 32>} : tensor<2xf32> -> tensor<64xf32>
      %b = graph.broadcast_to %t : tensor<64xf32> -> tensor<64x64xf32>
      %y = graph.add %x, %b : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
      func.return %y : tensor<64x64xf32>
    }
    """
    before = parse_module(text)
    bounded = apply(before, GraphFoldConstantsPass(max_elements=100))
    assert [op.name for op in bounded.walk() if op.name.startswith("graph.")] == [
        "graph.constant", "graph.broadcast_to", "graph.add"]
    unbounded = apply(before, GraphFoldConstantsPass())
    assert [op.name for op in unbounded.walk() if op.name.startswith("graph.")] == [
        "graph.constant", "graph.add"]
    x = RNG.standard_normal((64, 64)).astype(np.float32)
    assert_same_results(before, bounded, (x,))
    assert_same_results(before, unbounded, (x,))


# --------------------------------------------------------------------------------------
# graph-cse
# --------------------------------------------------------------------------------------


def test_cse_merges_weights_equal_by_value():
    w = RNG.standard_normal((4, 6)).astype(np.float32)
    other = w.copy()
    other[2, 3] += 1.0
    arg = TensorType(f32, [3, 6])
    block = Block(arg_types=[arg])
    consts = [graph.ConstantOp.from_array(name, array)
              for name, array in (("fc1", w), ("fc2", w.copy()), ("fc3", other))]
    dense = [graph.DenseOp(block.args[0], c.result) for c in consts]
    s1 = graph.AddOp(dense[0].result, dense[1].result)
    s2 = graph.AddOp(s1.result, dense[2].result)
    block.add_ops([*consts, *dense, s1, s2, func.ReturnOp(s2.result)])
    module = ModuleOp([func.FuncOp("main", ([arg], [s2.result.type]), Region(block))])
    module.verify()
    assert len({c.value for c in consts}) == 3  # the handles differ

    after = apply(module, GraphCsePass())
    assert len(ops_named(after, "graph.constant")) == 2
    assert len(ops_named(after, "graph.dense")) == 2
    assert_same_results(module, after, (RNG.standard_normal((3, 6)).astype(np.float32),))


# --------------------------------------------------------------------------------------
# graph-simplify-inference and the whole graph-opt stage, on ONNX models
# --------------------------------------------------------------------------------------


def w(*shape, scale=0.3):
    return (RNG.standard_normal(shape) * scale).astype(np.float32)


def bn_params(prefix: str, c: int) -> dict[str, np.ndarray]:
    return {f"{prefix}_s": (1 + w(c)), f"{prefix}_b": w(c), f"{prefix}_m": w(c),
            f"{prefix}_v": (RNG.random(c) + 0.2).astype(np.float32)}


def bn(prefix: str, x: str, y: str, **attrs):
    return helper.make_node("BatchNormalization",
                            [x, f"{prefix}_s", f"{prefix}_b", f"{prefix}_m", f"{prefix}_v"], [y],
                            name=prefix, **attrs)


def conv_bn_relu():
    """conv(+bias) -> bn -> relu -> grouped conv(no bias) -> bn -> add."""
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        bn("bn1", "c1", "n1"),
        helper.make_node("Relu", ["n1"], ["r1"]),
        helper.make_node("Conv", ["r1", "w2"], ["c2"], kernel_shape=[3, 3], pads=[1, 1, 1, 1],
                         group=2),
        bn("bn2", "c2", "n2", epsilon=1e-3),
        helper.make_node("Add", ["n2", "r1"], ["y"]),
    ]
    init = {"w1": w(4, 3, 3, 3), "b1": w(4), "w2": w(4, 2, 3, 3),
            **bn_params("bn1", 4), **bn_params("bn2", 4)}
    return (onnx_model(nodes, [("x", [1, 3, 8, 8])], ["y"], init, infer_shapes=False),
            {"x": [1, 3, 8, 8]}, 2)


def gemm_bn():
    """Gemm (dense) -> 2-D batch norm."""
    nodes = [helper.make_node("Gemm", ["x", "wf", "bf"], ["g"], transB=1),
             bn("bn", "g", "y")]
    init = {"wf": w(5, 7), "bf": w(5), **bn_params("bn", 5)}
    return (onnx_model(nodes, [("x", [3, 7])], ["y"], init, infer_shapes=False),
            {"x": [3, 7]}, 1)


def conv_mul_add():
    """conv -> mul by a per-channel scale -> add of a per-channel shift -> relu."""
    nodes = [helper.make_node("Conv", ["x", "w1"], ["c"], kernel_shape=[3, 3]),
             helper.make_node("Mul", ["k", "c"], ["m"]),
             helper.make_node("Add", ["m", "h"], ["a"]),
             helper.make_node("Relu", ["a"], ["y"])]
    init = {"w1": w(4, 2, 3, 3), "k": w(4, 1, 1), "h": w(1, 4, 1, 1)}
    return (onnx_model(nodes, [("x", [1, 2, 6, 6])], ["y"], init, infer_shapes=False),
            {"x": [1, 2, 6, 6]}, 2)


def conv_shared_bn():
    """The conv result feeds the batch norm and the output: the batch norm cannot fold
    into the conv; it becomes a multiply-add (one kernel more before fusion)."""
    nodes = [helper.make_node("Conv", ["x", "w1"], ["c"], kernel_shape=[1, 1]),
             bn("bn", "c", "n"),
             helper.make_node("Add", ["n", "c"], ["y"])]
    init = {"w1": w(3, 3, 1, 1), **bn_params("bn", 3)}
    return (onnx_model(nodes, [("x", [1, 3, 4, 4])], ["y"], init, infer_shapes=False),
            {"x": [1, 3, 4, 4]}, -1)


def dense_block():
    """DenseNet's pre-activation layer: concat -> bn -> relu -> 1x1 conv, a bn after a
    pool; the batch norms have no conv before them and become multiply-adds (the
    channels split into 16-blocks, so graph-alter-layout keeps all of it blocked)."""
    nodes = [helper.make_node("Conv", ["x", "w1"], ["c1"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             helper.make_node("MaxPool", ["c1"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
             bn("bn1", "p", "n1"),
             helper.make_node("Relu", ["n1"], ["r1"]),
             helper.make_node("Conv", ["r1", "w2"], ["c2"], kernel_shape=[1, 1]),
             helper.make_node("Concat", ["p", "c2"], ["cat"], axis=1),
             bn("bn2", "cat", "n2"),
             helper.make_node("Relu", ["n2"], ["r2"]),
             helper.make_node("Conv", ["r2", "w3"], ["y"], kernel_shape=[1, 1])]
    init = {"w1": w(32, 3, 3, 3), "w2": w(16, 32, 1, 1), "w3": w(16, 48, 1, 1),
            **bn_params("bn1", 32), **bn_params("bn2", 48)}
    return (onnx_model(nodes, [("x", [1, 3, 8, 8])], ["y"], init, infer_shapes=False),
            {"x": [1, 3, 8, 8]}, -2)


def duplicate_weights():
    """Two convs of the same input with equal (separately stored) weights -> one conv;
    a reshape of a reshape -> one reshape."""
    weight = w(4, 3, 3, 3)
    nodes = [helper.make_node("Conv", ["x", "wa"], ["a"], kernel_shape=[3, 3]),
             helper.make_node("Conv", ["x", "wb"], ["b"], kernel_shape=[3, 3]),
             helper.make_node("Mul", ["a", "b"], ["m"]),
             helper.make_node("Reshape", ["m", "s1"], ["r1"]),
             helper.make_node("Reshape", ["r1", "s2"], ["y"])]
    init = {"wa": weight, "wb": weight.copy(), "s1": np.array([4, 16], np.int64),
            "s2": np.array([8, 8], np.int64)}
    return (onnx_model(nodes, [("x", [1, 3, 6, 6])], ["y"], init, infer_shapes=False),
            {"x": [1, 3, 6, 6]}, 2)


MODELS = [conv_bn_relu, gemm_bn, conv_mul_add, conv_shared_bn, dense_block, duplicate_weights]


@pytest.mark.parametrize("make", MODELS, ids=[m.__name__ for m in MODELS])
def test_graph_opt_preserves_results_and_removes_kernels(make):
    model, shapes, removed = make()
    feeds = {k: RNG.standard_normal(s).astype(np.float32) for k, s in shapes.items()}
    before = load_onnx(model)
    after = apply(before, *graph_opt_passes())
    assert_same_results(before, after, tuple(feeds.values()), rtol=1e-4, atol=1e-5)
    assert kernel_count(before) - kernel_count(after) == removed
    assert not ops_named(after, "graph.batch_norm")

    expected = ort.InferenceSession(model.SerializeToString()).run(None, feeds)
    got = xweave.build(model).run(**feeds)
    for g, e in zip(got, expected, strict=True):
        np.testing.assert_allclose(g, e, rtol=1e-4, atol=1e-5)


def test_simplify_inference_folds_bn_into_conv_weights():
    model, _, _ = conv_bn_relu()
    after = apply(load_onnx(model), GraphSimplifyInferencePass())
    assert not ops_named(after, "graph.batch_norm")
    convs = ops_named(after, "graph.conv2d")
    assert len(convs) == 2 and all(c.bias is not None for c in convs)
    # The folded weights of the first conv are the ONNX weights times a per channel.
    init = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    a = init["bn1_s"].astype(np.float64) / np.sqrt(init["bn1_v"].astype(np.float64) + 1e-5)
    folded = constant_value(convs[0].weight.owner)
    np.testing.assert_allclose(folded, init["w1"] * a[:, None, None, None], rtol=1e-6)
    bias = constant_value(convs[0].bias.owner)
    np.testing.assert_allclose(bias, (init["b1"] - init["bn1_m"]) * a + init["bn1_b"], rtol=1e-5,
                               atol=1e-7)


def test_graph_opt_is_in_the_pipeline_first():
    names = [s.name for s in cpu_stages(CompileOptions())]
    assert names[0] == "graph-opt" and names.index("graph-opt") < names.index("te")
    assert [str(p) for p in graph_opt_passes()] == [
        "graph-fold-qdq", "graph-fold-constants", "graph-simplify-inference", "graph-cse", "dce"]


def test_onnx_model_is_unchanged_when_nothing_applies():
    model = onnx_model([helper.make_node("Relu", ["x"], ["y"])], [("x", [2, 3])], ["y"], {},
                       infer_shapes=False)
    before = load_onnx(model)
    after = apply(before, *graph_opt_passes())
    assert str(after) == str(before)


def test_preactivation_batch_norms_stay_in_the_blocked_layout():
    """With the batch norms as multiply-adds, a dense block runs blocked from the first
    conv to the last: one transform in (the input) and one out (the result)."""
    model, _, _ = dense_block()
    module = load_onnx(model)
    for stage in cpu_stages(CompileOptions()):
        module = apply(module, *stage.passes)
        if stage.name == "layout":
            break
    transforms = [(op.src_layout.data, op.dst_layout.data)
                  for op in ops_named(module, "graph.layout_transform")
                  if not isinstance(op.input.owner, graph.ConstantOp)]
    assert sorted(transforms) == [("NCHW", "NCHW3c"), ("NCHW16c", "NCHW")]
