"""ONNX frontend: models built with onnx.helper, imported, interpreted at the graph
stage and compared with onnxruntime; plus the errors users see."""

import os
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from xweave.context import parse_module
from xweave.dialects import graph
from xweave.dialects.interpreters import interpret
from xweave.context import print_module
from xweave.errors import ModelError, UnsupportedOpsError
from xweave.frontend.onnx import load_onnx

rng = np.random.default_rng(0)
IR_VERSION = {9: 8, 11: 8, 13: 8, 17: 8, 18: 9, 19: 9, 21: 10}


def rand(*shape, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def make_model(nodes, inputs, outputs, initializers=None, opset=13):
    """inputs: {name: shape (dims may be str)}; outputs: names; initializers: {name: array}."""
    graph_proto = helper.make_graph(
        nodes,
        "test",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs.items()],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in outputs],
        [numpy_helper.from_array(v, k) for k, v in (initializers or {}).items()],
    )
    return helper.make_model(
        graph_proto,
        opset_imports=[helper.make_opsetid("", opset)],
        ir_version=IR_VERSION.get(opset, 8),
    )


def check(model, feeds, input_shapes=None, rtol=1e-4, atol=1e-5):
    """Import, interpret, compare with onnxruntime; returns the module."""
    module = load_onnx(model, input_shapes)
    ours = interpret(module, list(feeds.values()))
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    theirs = session.run(None, feeds)
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        assert a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)
    return module


def ops_of(module):
    return [op.name for op in module.walk() if op.name.startswith("graph.")]


def main_of(module):
    return next(iter(module.body.block.ops))


# --------------------------------------------------------------------------------------
# Whole networks
# --------------------------------------------------------------------------------------


def test_conv_relu_maxpool_gemm_stack():
    nodes = [
        helper.make_node("Conv", ["data", "w1", "b1"], ["c1"], name="conv1",
                         pads=[1, 1, 1, 1], strides=[2, 2]),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        helper.make_node("Conv", ["r1", "w2"], ["c2"], name="conv2", group=4,
                         dilations=[2, 2], pads=[2, 1, 2, 1]),
        helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
        helper.make_node("MaxPool", ["r2"], ["p"], name="pool", kernel_shape=[3, 3],
                         strides=[2, 2], pads=[1, 1, 1, 1]),
        helper.make_node("Flatten", ["p"], ["f"], name="flatten"),
        helper.make_node("Gemm", ["f", "fc_w", "fc_b"], ["logits"], name="fc", transB=1),
    ]  # fmt: skip
    inits = {
        "w1": rand(8, 3, 3, 3, scale=0.3), "b1": rand(8),
        "w2": rand(8, 2, 3, 3, scale=0.3),
        "fc_w": rand(10, 8 * 3 * 2, scale=0.1), "fc_b": rand(10),
    }  # fmt: skip
    model = make_model(nodes, {"data": ["N", 3, 11, 11]}, ["logits"], inits)
    module = check(model, {"data": rand(2, 3, 11, 11)}, input_shapes={"data": (2, 3, 11, 11)})

    main = main_of(module)
    assert main.sym_name.data == "main"
    assert [s.data for s in main.attributes["xweave.input_names"].data] == ["data"]
    assert [s.data for s in main.attributes["xweave.output_names"].data] == ["logits"]
    assert str(main.function_type) == "(tensor<2x3x11x11xf32>) -> tensor<2x10xf32>"
    assert ops_of(module).count("graph.conv2d") == 2 and "graph.dense" in ops_of(module)
    assert "dense_resource<fc_w_" in print_module(module)
    # The imported module round-trips through text, weights included.
    reparsed = parse_module(print_module(module))
    x = rand(2, 3, 11, 11)
    np.testing.assert_array_equal(interpret(reparsed, [x])[0], interpret(module, [x])[0])


def test_multiple_inputs_outputs_and_initializer_listed_as_input():
    nodes = [
        helper.make_node("Add", ["a", "k"], ["s"], name="add"),
        helper.make_node("Mul", ["s", "b"], ["p"], name="mul"),
        helper.make_node("Relu", ["p"], ["r"], name="relu"),
    ]
    model = make_model(nodes, {"a": [2, 3], "b": [3], "k": [2, 3]}, ["r", "s"], {"k": rand(2, 3)})
    module = check(model, {"a": rand(2, 3), "b": rand(3)})
    main = main_of(module)
    assert [s.data for s in main.attributes["xweave.input_names"].data] == ["a", "b"]
    assert [s.data for s in main.attributes["xweave.output_names"].data] == ["r", "s"]


# --------------------------------------------------------------------------------------
# Gemm / MatMul
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "trans_a, trans_b, alpha, beta, c_kind, b_const",
    [
        (0, 0, 1.0, 1.0, "vector", True),
        (0, 1, 1.0, 1.0, "none", True),
        (0, 1, 0.5, 2.0, "vector", True),
        (0, 0, 1.5, 1.0, "scalar", True),
        (1, 0, 1.0, 0.5, "matrix", True),
        (0, 1, 1.0, 1.0, "column", True),
        (0, 0, 2.0, 3.0, "input", True),
        (1, 1, 0.5, 2.0, "vector", False),
        (0, 0, 1.0, 1.0, "none", False),
        (0, 1, 1.0, 0.5, "input", False),
    ],
)
def test_gemm_variants(trans_a, trans_b, alpha, beta, c_kind, b_const):
    m, k, n = 3, 5, 4
    a = rand(k, m) if trans_a else rand(m, k)
    b = rand(n, k) if trans_b else rand(k, n)
    c = {"vector": rand(n), "scalar": rand(1), "matrix": rand(m, n), "column": rand(m, 1),
         "input": rand(m, n), "none": None}[c_kind]  # fmt: skip
    inputs, inits, feeds = {"a": list(a.shape)}, {}, {"a": a}
    if b_const:
        inits["b"] = b
    else:
        inputs["b"], feeds["b"] = list(b.shape), b
    if c_kind == "input":
        inputs["c"], feeds["c"] = list(c.shape), c
    elif c is not None:
        inits["c"] = c
    node = helper.make_node("Gemm", ["a", "b"] + (["c"] if c is not None else []), ["y"],
                            name="gemm", transA=trans_a, transB=trans_b, alpha=alpha, beta=beta)  # fmt: skip
    module = check(make_model([node], inputs, ["y"], inits), feeds)
    ops = ops_of(module)
    assert ("graph.dense" in ops) == b_const
    if b_const and c_kind in ("vector", "scalar", "none"):
        assert "graph.add" not in ops and "graph.mul" not in ops  # alpha/beta folded


@pytest.mark.parametrize(
    "a_shape, b_shape",
    [((3, 4), (4, 5)), ((2, 3, 4), (4, 5)), ((2, 1, 3, 4), (3, 4, 2)), ((4,), (4, 5)), ((2, 3, 4), (4,))],
)
def test_matmul(a_shape, b_shape):
    node = helper.make_node("MatMul", ["a", "b"], ["y"], name="mm")
    model = make_model([node], {"a": list(a_shape), "b": list(b_shape)}, ["y"])
    check(model, {"a": rand(*a_shape), "b": rand(*b_shape)})


# --------------------------------------------------------------------------------------
# Elementwise
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("op", ["Add", "Sub", "Mul", "Div", "Max", "Min", "Pow"])
def test_broadcasting_binary(op):
    shapes = {"a": [2, 1, 4], "b": [3, 1]}
    feeds = {"a": rand(2, 1, 4), "b": rand(3, 1)}
    if op == "Pow":
        feeds["a"] = np.abs(feeds["a"]) + 0.5
    nodes = [
        helper.make_node(op, ["a", "b"], ["t"], name="t"),
        helper.make_node(op, ["t", "k"], ["y"], name="y"),  # with a constant
    ]
    check(make_model(nodes, shapes, ["y"], {"k": rand(4) if op != "Pow" else np.float32([2.0])}), feeds)


def test_variadic_max_min_and_integer_pow_exponent():
    nodes = [
        helper.make_node("Max", ["a", "b", "c"], ["m"], name="max3"),
        helper.make_node("Min", ["m", "a"], ["n"], name="min2"),
        helper.make_node("Pow", ["n", "two"], ["y"], name="square"),
    ]
    model = make_model(nodes, {"a": [2, 3], "b": [3], "c": [1, 3]}, ["y"],
                       {"two": np.array(2, np.int64)})  # fmt: skip
    check(model, {"a": rand(2, 3), "b": rand(3), "c": rand(1, 3)})


@pytest.mark.parametrize("op", ["Relu", "Sigmoid", "Tanh", "Exp", "Neg", "Sqrt", "Abs"])
def test_unary(op):
    x = rand(2, 3, 4) * 3
    if op == "Sqrt":
        x = np.abs(x)
    check(make_model([helper.make_node(op, ["x"], ["y"], name="u")], {"x": [2, 3, 4]}, ["y"]), {"x": x})


@pytest.mark.parametrize("opset", [9, 11, 13])
def test_clip_attribute_and_input_forms(opset):
    x = rand(3, 4) * 5
    if opset < 11:
        nodes = [helper.make_node("Clip", ["x"], ["y"], name="clip", min=-1.0, max=2.0),
                 helper.make_node("Clip", ["y"], ["z"], name="clip_min", min=0.0)]  # fmt: skip
        inits = {}
    else:
        nodes = [helper.make_node("Clip", ["x", "lo", "hi"], ["y"], name="clip"),
                 helper.make_node("Clip", ["y", "lo2"], ["z"], name="clip_min")]  # fmt: skip
        inits = {"lo": np.array(-1.0, np.float32), "hi": np.array(2.0, np.float32),
                 "lo2": np.array(0.0, np.float32)}  # fmt: skip
    module = check(make_model(nodes, {"x": [3, 4]}, ["z"], inits, opset=opset), {"x": x})
    assert ops_of(module) == ["graph.clip", "graph.clip"]


# --------------------------------------------------------------------------------------
# Layout, pools, convolution padding
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("axis", [0, 1, 2, -1])
def test_flatten(axis):
    node = helper.make_node("Flatten", ["x"], ["y"], name="flat", axis=axis)
    check(make_model([node], {"x": [2, 3, 4, 5]}, ["y"]), {"x": rand(2, 3, 4, 5)})


@pytest.mark.parametrize("shape", [[0, -1], [-1, 4], [2, 0, 5, 4], [6, 20]])
def test_reshape_constant_shape(shape):
    nodes = [helper.make_node("Reshape", ["x", "shape"], ["y"], name="reshape")]
    model = make_model(nodes, {"x": [2, 3, 4, 5]}, ["y"], {"shape": np.array(shape, np.int64)})
    check(model, {"x": rand(2, 3, 4, 5)})


def test_reshape_from_constant_node_transpose_identity_dropout():
    nodes = [
        helper.make_node("Constant", [], ["shape"], name="const_shape",
                         value=numpy_helper.from_array(np.array([4, -1], np.int64))),
        helper.make_node("Reshape", ["x", "shape"], ["r"], name="reshape"),
        helper.make_node("Transpose", ["r"], ["t"], name="transpose_default"),
        helper.make_node("Identity", ["t"], ["i"], name="identity"),
        helper.make_node("Dropout", ["i"], ["d"], name="dropout"),
        helper.make_node("Constant", [], ["k"], name="const_k", value_float=0.5),
        helper.make_node("Mul", ["d", "k"], ["m"], name="mul"),
        helper.make_node("Transpose", ["x"], ["xt"], name="transpose", perm=[1, 2, 0]),
    ]  # fmt: skip
    module = check(make_model(nodes, {"x": [2, 3, 4]}, ["m", "xt"]), {"x": rand(2, 3, 4)})
    assert ops_of(module).count("graph.transpose") == 2


@pytest.mark.parametrize("op", ["GlobalAveragePool", "GlobalMaxPool"])
def test_global_pools(op):
    check(make_model([helper.make_node(op, ["x"], ["y"], name="gp")], {"x": [2, 3, 5, 7]}, ["y"]),
          {"x": rand(2, 3, 5, 7)})  # fmt: skip


@pytest.mark.parametrize(
    "op, attrs",
    [
        ("MaxPool", dict(kernel_shape=[2, 2], strides=[2, 2])),
        ("MaxPool", dict(kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1)),
        ("MaxPool", dict(kernel_shape=[3, 2], strides=[1, 2], pads=[1, 0, 1, 1], dilations=[2, 1])),
        ("MaxPool", dict(kernel_shape=[3, 3], strides=[2, 2], auto_pad="SAME_UPPER")),
        ("AveragePool", dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])),
        ("AveragePool", dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], count_include_pad=1)),
        ("AveragePool", dict(kernel_shape=[2, 2], strides=[3, 3], pads=[1, 0, 1, 1], ceil_mode=1, count_include_pad=1)),
        ("AveragePool", dict(kernel_shape=[3, 3], strides=[2, 2], auto_pad="SAME_LOWER")),
    ],
)
def test_pools(op, attrs):
    node = helper.make_node(op, ["x"], ["y"], name="pool", **attrs)
    check(make_model([node], {"x": [1, 3, 9, 8]}, ["y"]), {"x": rand(1, 3, 9, 8)})


@pytest.mark.parametrize("auto_pad", ["SAME_UPPER", "SAME_LOWER", "VALID"])
@pytest.mark.parametrize("strides", [[1, 1], [2, 2], [3, 2]])
def test_conv_auto_pad(auto_pad, strides):
    node = helper.make_node("Conv", ["x", "w"], ["y"], name="conv", auto_pad=auto_pad,
                            strides=strides, kernel_shape=[3, 2])  # fmt: skip
    model = make_model([node], {"x": [1, 2, 8, 7]}, ["y"], {"w": rand(4, 2, 3, 2)})
    check(model, {"x": rand(1, 2, 8, 7)})


@pytest.mark.parametrize("opset", [9, 11, 17, 21])
def test_opsets(opset):
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", pads=[1, 1, 1, 1]),
        helper.make_node("Clip", ["c"], ["r"], name="relu6", min=0.0, max=6.0)
        if opset < 11 else helper.make_node("Clip", ["c", "zero", "six"], ["r"], name="relu6"),
        helper.make_node("AveragePool", ["r"], ["p"], name="pool", kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Reshape", ["p", "shape"], ["f"], name="flatten"),
        helper.make_node("Gemm", ["f", "fc", "fc_b"], ["y"], name="fc", transB=1),
    ]  # fmt: skip
    inits = {"w": rand(4, 3, 3, 3), "b": rand(4), "shape": np.array([0, -1], np.int64),
             "fc": rand(5, 16), "fc_b": rand(5), "zero": np.float32(0.0), "six": np.float32(6.0)}  # fmt: skip
    if opset < 11:
        del inits["zero"], inits["six"]
    check(make_model(nodes, {"x": [1, 3, 4, 4]}, ["y"], inits, opset=opset), {"x": rand(1, 3, 4, 4)})


def test_load_from_path(tmp_path):
    nodes = [helper.make_node("Conv", ["x", "w"], ["y"], name="conv", pads=[1, 1, 1, 1])]
    model = make_model(nodes, {"x": [1, 2, 5, 5]}, ["y"], {"w": rand(3, 2, 3, 3)})
    path = tmp_path / "m.onnx"
    onnx.save(model, str(path))
    x = rand(1, 2, 5, 5)
    ref = interpret(load_onnx(model), [x])[0]
    np.testing.assert_array_equal(interpret(load_onnx(path), [x])[0], ref)
    np.testing.assert_array_equal(interpret(load_onnx(str(path)), [x])[0], ref)


# --------------------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------------------


def test_unsupported_ops_are_listed_together_with_node_names():
    nodes = [
        helper.make_node("Relu", ["x"], ["a"], name="ok"),
        helper.make_node("LSTM", ["a2", "w", "r"], ["b"], name="lstm_1"),
        helper.make_node("Hardmax", ["a"], ["c"], name="hard_a"),
        helper.make_node("Hardmax", ["c"], ["d"]),  # unnamed
        helper.make_node("MaxPool", ["d"], ["e", "idx"], name="pool_with_indices", kernel_shape=[2, 2]),
        helper.make_node("Mul", ["b", "e"], ["y"], name="mul"),
        helper.make_node("LSTM", ["a2", "w", "r"], ["dead"], name="unused_lstm"),
    ]  # fmt: skip
    model = make_model(nodes, {"x": [1, 2, 4, 4], "a2": [1, 1, 4]}, ["y", "idx"],
                       {"w": rand(1, 4, 4), "r": rand(1, 4, 1)})
    with pytest.raises(UnsupportedOpsError) as info:
        load_onnx(model)
    message = str(info.value)
    assert "LSTM (nodes: lstm_1, unused_lstm)" in message
    assert "Hardmax (nodes: hard_a, #3 (-> d))" in message
    assert "MaxPool with the Indices output (nodes: pool_with_indices)" in message
    assert "ok" not in message.replace("nodes", "")
    assert set(info.value.ops) == {"LSTM", "Hardmax", "MaxPool with the Indices output"}


def test_unsupported_attribute_values_and_domains():
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], name="conv3d"),
        helper.make_node("FusedConv", ["c"], ["y"], name="fused", domain="com.microsoft"),
    ]
    model = make_model(nodes, {"x": [1, 2, 8, 8, 8]}, ["y"], {"w": rand(3, 2, 3, 3, 3)})
    model.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    with pytest.raises(UnsupportedOpsError, match=r"Conv with 3-D convolution \(only 1-D and 2-D\) \(nodes: conv3d\); com\.microsoft\.FusedConv \(nodes: fused\)"):
        load_onnx(model)


def test_malformed_and_missing_files(tmp_path):
    bad = tmp_path / "garbage.onnx"
    bad.write_bytes(b"\x08\x07this is not a protobuf \xff\xfe\x00" * 10)
    with pytest.raises(ModelError, match="garbage.onnx"):
        load_onnx(bad)
    with pytest.raises(ModelError, match="missing.onnx"):
        load_onnx(tmp_path / "missing.onnx")


def test_unbound_symbolic_dimension_names_the_tensor():
    model = make_model([helper.make_node("Relu", ["data"], ["y"], name="relu")],
                       {"data": ["batch", 3]}, ["y"])  # fmt: skip
    with pytest.raises(ModelError, match=r"tensor 'data' \(model input\).*\[batch, 3\].*input_shapes"):
        load_onnx(model)
    module = load_onnx(model, {"data": (4, 3)})
    assert str(main_of(module).function_type) == "(tensor<4x3xf32>) -> tensor<4x3xf32>"
    with pytest.raises(ModelError, match="unknown inputs"):
        load_onnx(model, {"dta": (4, 3)})
    with pytest.raises(ModelError, match="fixes it to 3"):
        load_onnx(model, {"data": (4, 5)})


def test_non_float_inputs_are_rejected():
    inputs = [helper.make_tensor_value_info("x", TensorProto.DOUBLE, [3])]
    g = helper.make_graph([helper.make_node("Abs", ["x"], ["y"], name="abs")], "g", inputs,
                          [helper.make_tensor_value_info("y", TensorProto.DOUBLE, [3])])  # fmt: skip
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    with pytest.raises(ModelError, match="input 'x' has element type DOUBLE"):
        load_onnx(model)


def test_int64_inputs_are_indices_not_data():
    """int64 inputs may index (Gather) but arithmetic beyond add/sub/mul is unsupported."""
    inputs = [helper.make_tensor_value_info("ids", TensorProto.INT64, [2, 3])]
    g = helper.make_graph([helper.make_node("Abs", ["ids"], ["y"], name="abs")], "g", inputs,
                          [helper.make_tensor_value_info("y", TensorProto.INT64, [2, 3])])  # fmt: skip
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    with pytest.raises(UnsupportedOpsError, match=r"Abs with int64 data \('ids'\) \(nodes: abs\)"):
        load_onnx(model)


def test_graph_constants_use_onnx_names():
    nodes = [helper.make_node("Conv", ["x", "conv1.weight"], ["y"], name="conv")]
    model = make_model(nodes, {"x": [1, 2, 5, 5]}, ["y"], {"conv1.weight": rand(3, 2, 3, 3)})
    module = load_onnx(model)
    (const,) = [op for op in module.walk() if isinstance(op, graph.ConstantOp)]
    assert const.value.resource_handle.data.startswith("conv1_weight_")


# --------------------------------------------------------------------------------------
# Import-time evaluation of shape computations
# --------------------------------------------------------------------------------------


def _int_constants(module):
    return [op for op in module.walk() if isinstance(op, graph.ConstantOp)
            and "f32" not in str(op.result.type)]


def test_shape_chains_constant_of_shape_and_casts_are_evaluated_at_import():
    """What exported PyTorch models do with a dynamic-looking batch: all folded."""
    i64 = lambda *v: np.array(v, np.int64)  # noqa: E731
    nodes = [
        helper.make_node("Shape", ["x"], ["shape"], name="shape"),
        helper.make_node("Gather", ["shape", "zero"], ["n"], name="n", axis=0),
        helper.make_node("Unsqueeze", ["n", "axes0"], ["n1"], name="n1"),
        helper.make_node("Concat", ["n1", "minus1"], ["flat_shape"], name="flat_shape", axis=0),
        helper.make_node("Reshape", ["x", "flat_shape"], ["flat"], name="flatten"),
        helper.make_node("Shape", ["flat"], ["flat_dims"], name="flat_dims", start=1),
        helper.make_node("ConstantOfShape", ["flat_dims"], ["ones"], name="ones",
                         value=numpy_helper.from_array(np.array([1.5], np.float32))),
        helper.make_node("Size", ["x"], ["size"], name="size"),
        helper.make_node("Cast", ["size"], ["size_f"], name="size_f", to=TensorProto.FLOAT),
        helper.make_node("Div", ["ones", "size_f"], ["scale"], name="scale"),
        helper.make_node("Mul", ["flat", "scale"], ["y"], name="mul"),
    ]
    model = make_model(nodes, {"x": ["batch", 3, 2]}, ["y"],
                       {"zero": np.array(0, np.int64), "axes0": i64(0), "minus1": i64(-1)},
                       opset=15)  # Shape's start attribute
    module = check(model, {"x": rand(4, 3, 2)}, input_shapes={"x": (4, 3, 2)})
    assert ops_of(module) == ["graph.reshape", "graph.constant", "graph.mul"]
    assert not _int_constants(module)


def test_constant_subgraphs_fold_through_the_reference_implementation():
    """Any default-domain op whose inputs are all constants is evaluated (here Range,
    Equal, Where, Cos: not convertible themselves on run-time data)."""
    nodes = [
        helper.make_node("Range", ["start", "limit", "delta"], ["r"], name="range"),
        helper.make_node("Cast", ["r"], ["rf"], name="rf", to=TensorProto.FLOAT),
        helper.make_node("Equal", ["r", "two"], ["is_two"], name="eq"),
        helper.make_node("Where", ["is_two", "rf", "ten"], ["w"], name="where"),
        helper.make_node("Cos", ["w"], ["c"], name="cos"),
        helper.make_node("Add", ["x", "c"], ["y"], name="add"),
    ]
    inits = {"start": np.array(0, np.int64), "limit": np.array(4, np.int64),
             "delta": np.array(1, np.int64), "two": np.array(2, np.int64),
             "ten": np.array(10.0, np.float32)}
    module = check(make_model(nodes, {"x": [3, 4]}, ["y"], inits), {"x": rand(3, 4)})
    assert ops_of(module) == ["graph.constant", "graph.add"]


def test_shape_depending_on_run_time_data_names_the_tensor():
    nodes = [
        helper.make_node("Cast", ["s"], ["si"], name="to_int", to=TensorProto.INT64),
        helper.make_node("Reshape", ["x", "si"], ["y"], name="dyn_reshape"),
    ]
    model = make_model(nodes, {"x": [2, 3], "s": [2]}, ["y"])
    with pytest.raises(ModelError, match=r"shape of tensor 'y' \(output of Reshape 'dyn_reshape'\) "
                                         r"cannot be inferred statically: its input 'si' is "
                                         r"computed at run time"):
        load_onnx(model)


def test_run_time_integer_and_bool_data():
    """Bool tensors from comparisons feed Where; int64 tensors index Gather; integer
    arithmetic beyond add/sub/mul on run-time data is reported with the node."""
    nodes = [
        helper.make_node("Greater", ["x", "zero"], ["pos"], name="pos"),
        helper.make_node("Not", ["pos"], ["neg"], name="neg"),
        helper.make_node("Where", ["neg", "x", "table_row"], ["w"], name="where"),
        helper.make_node("Abs", ["x"], ["a"], name="abs"),
        helper.make_node("Cast", ["a"], ["idx"], name="idx", to=TensorProto.INT64),
        helper.make_node("Gather", ["table", "idx"], ["g"], name="lookup", axis=0),
        helper.make_node("ReduceSum", ["g", "last"], ["gs"], name="gs", keepdims=0),
        helper.make_node("Add", ["w", "gs"], ["y"], name="add"),
    ]
    inits = {"zero": np.float32(0), "table": rand(3, 4), "table_row": rand(4),
             "last": np.array([-1], np.int64)}
    x = np.array([[0.5, -1.2, 2.9, -0.1], [1.7, 0.2, -2.5, 0.0]], np.float32)
    module = check(make_model(nodes, {"x": [2, 4]}, ["y"], inits), {"x": x})
    assert {"graph.greater", "graph.not", "graph.where", "graph.cast", "graph.gather"} <= set(ops_of(module))

    nodes = [helper.make_node("Cast", ["x"], ["i"], name="to_int", to=TensorProto.INT64),
             helper.make_node("Div", ["i", "i"], ["q"], name="int_div"),
             helper.make_node("Cast", ["q"], ["y"], name="to_float", to=TensorProto.FLOAT)]
    with pytest.raises(UnsupportedOpsError, match=r"Div with int64 data \('i'\) \(nodes: int_div\)"):
        load_onnx(make_model(nodes, {"x": [2]}, ["y"]))


@pytest.mark.parametrize("opset", [9, 11, 13, 18, 21])
def test_attribute_and_input_forms_across_opsets(opset):
    """Slice, Split, Squeeze/Unsqueeze, Reduce*, Pad: axes/sizes as attributes or inputs."""
    i64 = lambda *v: np.array(v, np.int64)  # noqa: E731
    inits = {}

    def axes_node(op, x, out, axes, input_from, **kw):
        if opset >= input_from:
            inits[f"{out}_axes"] = i64(*axes)
            return helper.make_node(op, [x, f"{out}_axes"], [out], name=out, **kw)
        return helper.make_node(op, [x], [out], name=out, axes=axes, **kw)

    if opset >= 10:
        inits.update({"st": i64(1, 0), "en": i64(3, -1), "ax": i64(1, 2), "sp": i64(1, 2)})
        slice_node = helper.make_node("Slice", ["x", "st", "en", "ax", "sp"], ["sl"], name="sl")
    else:
        slice_node = helper.make_node("Slice", ["x"], ["sl"], name="sl", starts=[1, 0],
                                      ends=[3, -1], axes=[1, 2])
    if opset >= 18:
        split_node = helper.make_node("Split", ["sl"], ["p0", "p1"], name="split", axis=2,
                                      num_outputs=2)
    elif opset >= 13:
        inits["split"] = i64(1, 1) if opset >= 10 else None
        split_node = helper.make_node("Split", ["sl", "split"], ["p0", "p1"], name="split", axis=2)
    else:
        split_node = helper.make_node("Split", ["sl"], ["p0", "p1"], name="split", axis=2,
                                      split=[1, 1] if opset >= 10 else [2, 2])
    if opset >= 11:
        inits["pads"] = i64(0, 1, 0, 0, 0, 1) if opset < 18 else i64(1, 1)
        pad_inputs = ["m", "pads", "pv"] + (["pad_axes"] if opset >= 18 else [])
        inits["pv"] = np.float32(0.5)
        if opset >= 18:
            inits["pad_axes"] = i64(-2)
        pad_node = helper.make_node("Pad", pad_inputs, ["padded"], name="pad")
    else:
        pad_node = helper.make_node("Pad", ["m"], ["padded"], name="pad",
                                    pads=[0, 1, 0, 0, 0, 1], value=0.5)
    nodes = [
        slice_node, split_node,
        helper.make_node("Add", ["p0", "p1"], ["s"], name="add"),
        axes_node("Unsqueeze", "s", "u", [0], 13),
        axes_node("Squeeze", "u", "q", [0], 13),
        axes_node("ReduceMean", "q", "m", [-1], 18, keepdims=1),
        pad_node,
        axes_node("ReduceSum", "padded", "y", [0, 1], 13, keepdims=0),
    ]
    model = make_model(nodes, {"x": [2, 4, 4 if opset >= 10 else 5]}, ["y"],
                       {k: v for k, v in inits.items() if v is not None}, opset=opset)
    check(model, {"x": rand(2, 4, 4 if opset >= 10 else 5)})


@pytest.mark.parametrize("opset", [11, 13])
def test_softmax_axis_semantics_before_and_after_opset_13(opset):
    """Before opset 13, Softmax normalizes the 2-D coercion [prod(:axis), prod(axis:)]."""
    nodes = [helper.make_node("Softmax", ["x"], ["s"], name="softmax", axis=1),
             helper.make_node("LogSoftmax", ["x"], ["l"], name="log_softmax", axis=1)]
    check(make_model(nodes, {"x": [2, 3, 4]}, ["s", "l"], opset=opset), {"x": rand(2, 3, 4) * 4})


def test_legacy_broadcast_of_opset_6():
    nodes = [helper.make_node("Add", ["x", "b"], ["y"], name="add", broadcast=1, axis=1),
             helper.make_node("Mul", ["y", "k"], ["z"], name="mul", broadcast=1)]
    model = make_model(nodes, {"x": [2, 3, 4, 5]}, ["z"], {"b": rand(3, 4), "k": rand(5)}, opset=6)
    b, k = (numpy_helper.to_array(t) for t in model.graph.initializer)
    x = rand(2, 3, 4, 5)
    expected = (x + b.reshape(3, 4, 1)) * k  # b aligned at axis 1, k at the end
    np.testing.assert_allclose(interpret(load_onnx(model), [x])[0], expected, rtol=1e-6)


def test_normalizations_and_lrn_stay_graph_ops():
    nodes = [
        helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["bn"], name="bn"),
        helper.make_node("LRN", ["bn"], ["lrn"], name="lrn", size=3),
        helper.make_node("InstanceNormalization", ["lrn", "s", "b"], ["inorm"], name="in"),
        helper.make_node("LayerNormalization", ["inorm", "ls"], ["y"], name="ln", axis=-2),
    ]
    inits = {"s": rand(3), "b": rand(3), "m": rand(3), "v": np.abs(rand(3)) + 0.5,
             "ls": rand(4, 5)}
    module = check(make_model(nodes, {"x": [2, 3, 4, 5]}, ["y"], inits, opset=17),
                   {"x": rand(2, 3, 4, 5)})
    assert [op for op in ops_of(module) if op != "graph.constant"] == [
        "graph.batch_norm", "graph.lrn", "graph.layer_norm", "graph.layer_norm"]


def test_gather_with_constant_indices_becomes_a_slice_when_it_can():
    nodes = [
        helper.make_node("Gather", ["x", "one"], ["row"], name="scalar", axis=0),
        helper.make_node("Gather", ["x", "evens"], ["cols"], name="strided", axis=1),
        helper.make_node("Gather", ["x", "perm"], ["rows"], name="permuted", axis=0),
    ]
    inits = {"one": np.array(1, np.int64), "evens": np.array([0, 2], np.int64),
             "perm": np.array([[2, 0], [1, -1]], np.int64)}
    module = check(make_model(nodes, {"x": [3, 4]}, ["row", "cols", "rows"], inits),
                   {"x": rand(3, 4)})
    assert ops_of(module).count("graph.slice") == 2 and ops_of(module).count("graph.gather") == 1


def test_three_d_convolution_and_pooling_are_unsupported():
    nodes = [helper.make_node("MaxPool", ["x"], ["p"], name="pool3d", kernel_shape=[2, 2, 2]),
             helper.make_node("Relu", ["p"], ["y"], name="relu")]
    with pytest.raises(UnsupportedOpsError, match=r"MaxPool with 3-D pooling \(only 1-D and 2-D\) \(nodes: pool3d\)"):
        load_onnx(make_model(nodes, {"x": [1, 2, 4, 4, 4]}, ["y"]))


def test_empty_tensors_are_reported_with_the_node():
    nodes = [helper.make_node("Slice", ["x", "s", "e"], ["y"], name="empty_slice")]
    model = make_model(nodes, {"x": [4]}, ["y"],
                       {"s": np.array([3], np.int64), "e": np.array([1], np.int64)})
    with pytest.raises(UnsupportedOpsError, match=r"Slice with an empty result .*\(nodes: empty_slice\)"):
        load_onnx(model)


# --------------------------------------------------------------------------------------
# Classic CNNs: the "light" models shipped with onnx (weights from ConstantOfShape)
# --------------------------------------------------------------------------------------

LIGHT = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"
LIGHT_MODELS = {
    # model: graph ops it must import to (besides constants), weights folded at import
    "squeezenet": {"conv2d", "relu", "max_pool2d", "concat", "global_avg_pool2d", "softmax"},
    "shufflenet": {"conv2d", "batch_norm", "relu", "transpose", "reshape", "avg_pool2d", "add"},
    "resnet50": {"conv2d", "batch_norm", "relu", "max_pool2d", "add", "avg_pool2d", "dense"},
    "inception_v1": {"conv2d", "lrn", "max_pool2d", "concat", "avg_pool2d", "dense", "softmax"},
    "inception_v2": {"conv2d", "batch_norm", "mul", "add", "concat", "avg_pool2d", "dense"},
    "densenet121": {"conv2d", "batch_norm", "concat", "avg_pool2d", "global_avg_pool2d"},
    # AlexNet, ZFNet and VGG-19 fold hundreds of MB of fully connected weights (slow).
    "bvlc_alexnet": {"conv2d", "lrn", "max_pool2d", "dense", "softmax"},
    "zfnet512": {"conv2d", "lrn", "max_pool2d", "dense", "softmax"},
    "vgg19": {"conv2d", "relu", "max_pool2d", "dense", "softmax"},
}
SLOW_LIGHT_MODELS = {"bvlc_alexnet", "zfnet512", "vgg19"}


@pytest.mark.parametrize("name", sorted(LIGHT_MODELS))
def test_classic_cnn_light_models_import(name):
    if name in SLOW_LIGHT_MODELS and not os.environ.get("XWEAVE_SLOW_TESTS"):
        pytest.skip("folds hundreds of MB of weights; set XWEAVE_SLOW_TESTS=1")
    module = load_onnx(LIGHT / f"light_{name}.onnx")
    ops = {op.removeprefix("graph.") for op in ops_of(module)}
    assert LIGHT_MODELS[name] <= ops
    assert not _int_constants(module)
    (main,) = [op for op in module.body.block.ops]
    assert str(main.function_type).startswith("(tensor<1x3x224x224xf32>) -> tensor<1x1000")
