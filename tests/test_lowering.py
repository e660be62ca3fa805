"""Every supported ONNX operator through every stage: each stage is interpreted and
compared with onnxruntime, and the compiled code too (so each conversion pass is
checked to preserve meaning)."""

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import xweave
from xweave.dialects.interpreters import interpret
from xweave.pipeline import lower_to_llvm

RNG = np.random.default_rng(7)


def single_node_model(op, input_shapes, attrs=None, initializers=None, n_outputs=1, opset=13):
    initializers = initializers or {}
    names = [f"x{i}" for i in range(len(input_shapes))] + list(initializers)
    node = helper.make_node(op, names, [f"y{i}" for i in range(n_outputs)], name="node",
                            **(attrs or {}))
    graph = helper.make_graph(
        [node], op,
        [helper.make_tensor_value_info(f"x{i}", TensorProto.FLOAT, s) for i, s in enumerate(input_shapes)],
        [helper.make_tensor_value_info(f"y{i}", TensorProto.FLOAT, None) for i in range(n_outputs)],
        initializer=[numpy_helper.from_array(v, k) for k, v in initializers.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model


def w(*shape):
    return (RNG.standard_normal(shape) * 0.5).astype(np.float32)


CASES = {
    "conv_stride_pad": ("Conv", [(1, 3, 7, 6)], dict(kernel_shape=[3, 3], strides=[2, 1], pads=[1, 0, 2, 1]),
                        {"w": w(4, 3, 3, 3), "b": w(4)}),
    "conv_groups_dilation": ("Conv", [(1, 4, 7, 7)], dict(kernel_shape=[3, 3], group=2, dilations=[2, 1]),
                             {"w": w(6, 2, 3, 3)}),
    "conv_depthwise_same": ("Conv", [(1, 3, 5, 5)], dict(kernel_shape=[3, 3], group=3, auto_pad="SAME_UPPER"),
                            {"w": w(3, 1, 3, 3)}),
    "gemm": ("Gemm", [(3, 5)], dict(transB=1, alpha=0.7, beta=1.5), {"w": w(4, 5), "b": w(4)}),
    "gemm_no_trans": ("Gemm", [(3, 5)], {}, {"w": w(5, 4), "b": w(1, 4)}),
    "matmul_batched": ("MatMul", [(2, 1, 3, 4), (3, 4, 5)], {}, {}),
    "add": ("Add", [(2, 3, 4), (3, 1)], {}, {}),
    "sub": ("Sub", [(2, 3, 4), (4,)], {}, {}),
    "mul": ("Mul", [(1, 3), (2, 1)], {}, {}),
    "div": ("Div", [(2, 3)], {}, {"d": (np.abs(w(2, 3)) + 0.5)}),
    "max": ("Max", [(2, 3), (2, 3)], {}, {}),
    "min": ("Min", [(2, 3), (1, 3)], {}, {}),
    "pow": ("Pow", [(2, 3)], {}, {"p": np.full((1,), 2.0, np.float32)}),
    "relu": ("Relu", [(2, 3, 4)], {}, {}),
    "sigmoid": ("Sigmoid", [(2, 5)], {}, {}),
    "tanh": ("Tanh", [(2, 5)], {}, {}),
    "exp": ("Exp", [(2, 5)], {}, {}),
    "neg": ("Neg", [(2, 5)], {}, {}),
    "abs": ("Abs", [(2, 5)], {}, {}),
    "clip": ("Clip", [(2, 5)], {}, {"lo": np.array(-0.3, np.float32), "hi": np.array(0.4, np.float32)}),
    "maxpool_pads_dilation": ("MaxPool", [(1, 2, 7, 7)], dict(kernel_shape=[3, 3], strides=[2, 2],
                                                              pads=[1, 1, 1, 1], dilations=[1, 2]), {}),
    "maxpool_ceil": ("MaxPool", [(1, 2, 6, 6)], dict(kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1), {}),
    "avgpool_exclude_pad": ("AveragePool", [(1, 2, 5, 5)], dict(kernel_shape=[3, 3], pads=[1, 1, 1, 1]), {}),
    "avgpool_include_pad": ("AveragePool", [(1, 2, 5, 5)], dict(kernel_shape=[2, 3], strides=[2, 2],
                                                                pads=[1, 0, 1, 1], count_include_pad=1), {}),
    "global_avg": ("GlobalAveragePool", [(1, 3, 4, 5)], {}, {}),
    "global_max": ("GlobalMaxPool", [(2, 3, 4, 5)], {}, {}),
    "flatten": ("Flatten", [(2, 3, 2, 2)], dict(axis=2), {}),
    "reshape": ("Reshape", [(2, 3, 4)], {}, {"s": np.array([4, 0, -1], np.int64)}),
    "transpose": ("Transpose", [(2, 3, 4)], dict(perm=[2, 0, 1]), {}),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_operator_through_every_stage(case):
    op, shapes, attrs, inits = CASES[case]
    model = single_node_model(op, shapes, attrs, inits)
    feeds = {f"x{i}": RNG.standard_normal(s).astype(np.float32) for i, s in enumerate(shapes)}
    (expected,) = ort.InferenceSession(model.SerializeToString()).run(None, feeds)
    inputs = list(feeds.values())

    checked = []

    def on_stage(name, module):
        if name in ("graph", "te"):
            (got,) = interpret(module, inputs)
        elif name == "loop":
            got = np.zeros_like(expected)
            interpret(module, [*inputs, got])
        else:
            return
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5, err_msg=f"stage {name}")
        checked.append(name)

    lower_to_llvm(xweave.load_onnx(model), on_stage)
    assert checked == ["graph", "te", "loop"]
    (got,) = xweave.build(model).run(**feeds)
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5, err_msg="compiled")


def test_sqrt_of_positive_values():
    model = single_node_model("Sqrt", [(3, 4)])
    x = np.abs(RNG.standard_normal((3, 4))).astype(np.float32) + 0.1
    (expected,) = ort.InferenceSession(model.SerializeToString()).run(None, {"x0": x})
    np.testing.assert_allclose(xweave.build(model).run(x0=x)[0], expected, rtol=1e-5)
