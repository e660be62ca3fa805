"""ONNX models built with onnx.helper, compiled by xweave, compared with onnxruntime."""

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import xweave

RNG = np.random.default_rng(1234)


def make_model(nodes, inputs, outputs, initializers, opset=13):
    graph = helper.make_graph(
        nodes, "test",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in outputs],
        initializer=[numpy_helper.from_array(v, k) for k, v in initializers.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return onnx.shape_inference.infer_shapes(model)


def weights(*shape, scale=0.2):
    return (RNG.standard_normal(shape) * scale).astype(np.float32)


def check(model, feeds, rtol=1e-4, atol=1e-5):
    expected = ort.InferenceSession(model.SerializeToString()).run(None, feeds)
    compiled = xweave.build(model, target="llvm")
    got = compiled.run(**feeds)
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e, rtol=rtol, atol=atol)
    return compiled


def conv_stack():
    """conv(stride, pad) -> relu -> maxpool -> grouped dilated conv -> relu -> gap -> gemm."""
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="conv1", kernel_shape=[3, 3],
                         pads=[1, 2, 1, 0], strides=[2, 1]),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        helper.make_node("MaxPool", ["r1"], ["p1"], name="pool1", kernel_shape=[3, 3],
                         strides=[2, 2], pads=[1, 1, 1, 1]),
        helper.make_node("Conv", ["p1", "w2"], ["c2"], name="conv2", kernel_shape=[3, 3],
                         group=2, dilations=[2, 2], pads=[2, 2, 2, 2]),
        helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
        helper.make_node("GlobalAveragePool", ["r2"], ["g"], name="gap"),
        helper.make_node("Flatten", ["g"], ["f"], name="flat"),
        helper.make_node("Gemm", ["f", "wf", "bf"], ["y"], name="fc", transB=1, alpha=0.5, beta=2.0),
    ]
    init = {"w1": weights(8, 3, 3, 3), "b1": weights(8), "w2": weights(6, 4, 3, 3),
            "wf": weights(5, 6), "bf": weights(5)}
    return make_model(nodes, [("x", [2, 3, 15, 13])], ["y"], init)


def test_conv_relu_pool_gemm_stack():
    x = RNG.standard_normal((2, 3, 15, 13)).astype(np.float32)
    check(conv_stack(), {"x": x})


def test_matmul_broadcast_add_mul_reshape():
    nodes = [
        helper.make_node("MatMul", ["a", "b"], ["m"], name="mm"),
        helper.make_node("Add", ["m", "bias"], ["s"], name="add"),
        helper.make_node("Mul", ["s", "scale"], ["t"], name="mul"),
        helper.make_node("Reshape", ["t", "shape"], ["y"], name="reshape"),
    ]
    init = {"b": weights(2, 5, 7), "bias": weights(7), "scale": weights(4, 1, 1, 1),
            "shape": np.array([4, -1], dtype=np.int64)}
    model = make_model(nodes, [("a", [4, 1, 3, 5])], ["y"], init)
    check(model, {"a": RNG.standard_normal((4, 1, 3, 5)).astype(np.float32)})


def test_two_inputs_two_outputs_and_passthrough_output():
    nodes = [
        helper.make_node("Add", ["a", "b"], ["s"], name="add"),
        helper.make_node("Relu", ["s"], ["r"], name="relu"),
        helper.make_node("Mul", ["r", "a"], ["y"], name="mul"),
    ]
    model = make_model(nodes, [("a", [3, 4]), ("b", [1, 4])], ["y", "r"], {})
    feeds = {"a": RNG.standard_normal((3, 4)).astype(np.float32),
             "b": RNG.standard_normal((1, 4)).astype(np.float32)}
    check(model, feeds)


def test_export_and_load_module(tmp_path):
    model = conv_stack()
    x = RNG.standard_normal((2, 3, 15, 13)).astype(np.float32)
    compiled = check(model, {"x": x})
    path = tmp_path / "model.xwm"
    compiled.export(path)
    loaded = xweave.load_module(path)
    np.testing.assert_array_equal(loaded.run(x=x)[0], compiled.run(x=x)[0])


def test_run_rejects_bad_inputs():
    compiled = xweave.build(conv_stack())
    good = RNG.standard_normal((2, 3, 15, 13)).astype(np.float32)
    with pytest.raises(xweave.InputError, match=r"missing input.*'x'.*\[2, 3, 15, 13\].*float32"):
        compiled.run()
    with pytest.raises(xweave.InputError, match=r"unknown input.*'z'"):
        compiled.run(x=good, z=good)
    with pytest.raises(xweave.InputError, match=r"input 'x': expected shape \[2, 3, 15, 13\], got \[2, 3, 15, 12\]"):
        compiled.run(x=good[..., :12])
    with pytest.raises(xweave.InputError, match=r"input 'x': expected dtype float32, got float64"):
        compiled.run(x=good.astype(np.float64))


def test_every_stage_interprets_like_onnxruntime(tmp_path):
    """graph, te and loop stages, run by the interpreters, agree with onnxruntime."""
    from xweave.dialects.interpreters import interpret
    from xweave.driver import print_module
    from xweave.context import parse_module
    from xweave.pipeline import lower_to_llvm

    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], name="conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["r"], name="relu"),
        helper.make_node("GlobalAveragePool", ["r"], ["y"], name="gap"),
    ]
    model = make_model(nodes, [("x", [1, 2, 5, 5])], ["y"], {"w": weights(3, 2, 3, 3)})
    x = RNG.standard_normal((1, 2, 5, 5)).astype(np.float32)
    (expected,) = ort.InferenceSession(model.SerializeToString()).run(None, {"x": x})

    seen = []

    def on_stage(name, module):
        # Every stage prints and re-parses to the same module.
        text = print_module(module)
        assert print_module(parse_module(text)) == text
        if name in ("graph", "te"):
            (got,) = interpret(module, [x])
        elif name == "loop":
            got = np.zeros_like(expected)
            interpret(module, [x, got])
        else:
            return
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)
        seen.append(name)

    lower_to_llvm(xweave.load_onnx(model), on_stage)
    assert seen == ["graph", "te", "loop"]
