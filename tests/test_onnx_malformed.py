"""Malformed ONNX models: one clear ModelError naming the node, the attribute or input
and the problem; never a Python exception from deeper down, never an allocation."""

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto as T
from onnx import helper, numpy_helper

from xweave.errors import ModelError
from xweave.frontend.onnx import load_onnx
from xweave.frontend.onnx_checks import MAX_ELEMENTS

vi = helper.make_tensor_value_info


def model(nodes, inputs, outputs, initializers=(), opset=17, ir_version=8):
    g = helper.make_graph(nodes, "g", inputs, outputs, list(initializers))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)],
                             ir_version=ir_version)


def conv(x_shape=(1, 3, 8, 8), w_shape=(4, 3, 3, 3), inputs=("x", "w"), opset=17, **attrs):
    node = helper.make_node("Conv", list(inputs), ["y"], name="c1", **attrs)
    w = numpy_helper.from_array(np.ones(w_shape, np.float32), "w")
    return model([node], [vi("x", T.FLOAT, list(x_shape))], [vi("y", T.FLOAT, None)], [w],
                 opset=opset)


def relu(x_shape=(4,), elem=T.FLOAT):
    return model([helper.make_node("Relu", ["x"], ["y"], name="r1")],
                 [vi("x", elem, list(x_shape))], [vi("y", T.FLOAT, None)])


def with_(m, change):
    change(m)
    return m


def _short_raw(m):
    m.graph.initializer[0].raw_data = m.graph.initializer[0].raw_data[:10]


def _no_opset(m):
    del m.opset_import[:]


def _ir(version):
    def set_ir(m):
        m.ir_version = version
    return set_ir


def huge_initializer():
    t = onnx.TensorProto(name="w", data_type=T.FLOAT, dims=[2**20, 2**20])
    t.raw_data = b"\0" * 16
    return t


def gemm(b_shape, c_shape):
    return model([helper.make_node("Gemm", ["a", "b", "c"], ["y"], name="gm")],
                 [vi("a", T.FLOAT, [2, 3]), vi("b", T.FLOAT, list(b_shape)),
                  vi("c", T.FLOAT, list(c_shape))], [vi("y", T.FLOAT, None)])


# (model, pattern of the one-line error): the seven invalid models onnxruntime refuses.
ORT_REFUSES = {
    "opset 99": (conv(opset=99), r"opset version 99 of domain '' is not supported"),
    "opset 0": (conv(opset=0), r"opset version 0 of domain '' is not supported"),
    "opset -3": (conv(opset=-3), r"opset version -3 of domain '' is not supported"),
    "no opset import": (with_(conv(), _no_opset), r"imports no version of the default ONNX "
                                                  r"operator set"),
    "ir_version 999": (with_(conv(), _ir(999)), r"IR version 999 is not supported"),
    "auto_pad BOGUS": (conv(auto_pad="BOGUS"), r"node 'c1' \(Conv\): attribute auto_pad is "
                                               r"'BOGUS' \(expected one of NOTSET"),
    "element type UNDEFINED": (relu(elem=T.UNDEFINED), r"graph input 'x' has no element type"),
}

OUT_OF_ORDER = model([helper.make_node("Relu", ["t"], ["y"], name="r1"),
                      helper.make_node("Relu", ["x"], ["t"], name="r2")],
                     [vi("x", T.FLOAT, [4])], [vi("y", T.FLOAT, None)])

MALFORMED = {
    **ORT_REFUSES,
    "nodes out of order": (
        OUT_OF_ORDER,
        r"node 'r1' \(Relu\): input 0 't' is produced by a later node 'r2' \(Relu\): the nodes "
        r"are not in topological order"),
    "stride 0": (conv(strides=[0, 0]), r"node 'c1' \(Conv\): attribute strides is \[0, 0\] "
                                       r"\(every value must be at least 1\)"),
    "dilation 0": (conv(dilations=[1, 0]), r"attribute dilations is \[1, 0\]"),
    "negative pads": (conv(pads=[0, -1, 0, 0]), r"attribute pads is \[0, -1, 0, 0\]"),
    "pads of length 3": (conv(pads=[1, 1, 1]), r"node 'c1' \(Conv\): attribute pads is "
                                               r"\[1, 1, 1\]: expected a begin and an end"),
    "pads of length 2 for 2-D": (conv(kernel_shape=[3, 3], pads=[1, 1]),
                                 r"attribute pads is \[1, 1\]: expected 4 values"),
    "kernel_shape disagrees": (conv(kernel_shape=[9, 9]), r"attribute kernel_shape \[9, 9\] "
                                                          r"differs from the weights'"),
    "conv with one input": (conv(inputs=("x",)), r"node 'c1' \(Conv\): .*input size 1 not in "
                                                 r"range \[min=2, max=3\]"),
    "dangling input": (conv(inputs=("x", "nope")), r"node 'c1' \(Conv\): input 1 'nope' is not "
                                                   r"defined"),
    "cycle": (model([helper.make_node("Relu", ["z"], ["y"], name="r1"),
                     helper.make_node("Relu", ["y"], ["z"], name="r2")],
                    [vi("x", T.FLOAT, [4])], [vi("y", T.FLOAT, None)]),
              r"the graph has a cycle: node 'r1' \(Relu\) -> node 'r2' \(Relu\) -> node 'r1'"),
    "tensor produced twice": (
        model([helper.make_node("Relu", ["x"], ["y"], name="r1"),
               helper.make_node("Relu", ["x"], ["y"], name="r2")],
              [vi("x", T.FLOAT, [4])], [vi("y", T.FLOAT, None)]),
        r"node 'r2' \(Relu\): output 'y' is already produced by node 'r1'"),
    "graph output not computed": (
        model([helper.make_node("Relu", ["x"], ["y"], name="r1")],
              [vi("x", T.FLOAT, [4])], [vi("q", T.FLOAT, None)]),
        r"graph output 'q' is not computed by any node"),
    "attribute of the wrong type": (conv(strides=1.5), r"node 'c1' \(Conv\): Mismatched "
                                                       r"attribute type in 'c1 : strides'"),
    "unknown attribute": (conv(bogus=1), r"node 'c1' \(Conv\): Unrecognized attribute: bogus"),
    "rank 3 input to a 2-D conv": (conv(x_shape=(1, 3, 8)), r"node 'c1' \(Conv\): input 0 has "
                                                            r"rank 3 \[1, 3, 8\]; a 2-D window "
                                                            r"needs rank 4"),
    "rank 5 input to a 2-D pool": (
        model([helper.make_node("MaxPool", ["x"], ["y"], name="mp", kernel_shape=[2, 2])],
              [vi("x", T.FLOAT, [1, 1, 4, 4, 4])], [vi("y", T.FLOAT, None)]),
        r"node 'mp' \(MaxPool\): input 0 has rank 5"),
    "rank 3 input to DepthToSpace": (
        model([helper.make_node("DepthToSpace", ["x"], ["y"], name="d2s", blocksize=2)],
              [vi("x", T.FLOAT, [1, 8, 4])], [vi("y", T.FLOAT, None)]),
        r"node 'd2s' \(DepthToSpace\): cannot be imported .*inputs: 'x' \[1, 8, 4\]"),
    "kernel larger than input": (conv(x_shape=(1, 3, 2, 2)),
                                 r"node 'c1' \(Conv\): the kernel \[3, 3\] \(dilations \[1, 1\]\) "
                                 r"is larger than the input \[2, 2\] padded by pads"),
    "Gemm C does not broadcast": (gemm((3, 4), (3, 5)), r"node 'gm' \(Gemm\): cannot be imported "
                                                        r"\(graph.add: operand shapes do not "
                                                        r"broadcast\); inputs: 'a' \[2, 3\]"),
    "Gemm K differs": (gemm((5, 4), (4,)), r"node 'gm' \(Gemm\): cannot be imported "
                                           r"\(graph.matmul: incompatible operand shapes\)"),
    "short raw_data": (with_(conv(), _short_raw), r"initializer 'w': .*raw_data size \(10 bytes\) "
                                                  r"is too small"),
    "2^31 x 2^31 input": (relu((2**31, 2**31)), r"graph input 'x' of shape \[2147483648, "
                                                r"2147483648\] is too large"),
    "negative input dim": (relu((-4,)), r"graph input 'x' has a negative dimension -4"),
    "pads of 1e6": (conv(pads=[10**6] * 4), r"node 'c1' \(Conv\): too large: the kernel "
                                            r"\[3, 3\] over the input \[8, 8\] \(pads "
                                            r"\[1000000, 1000000, 1000000, 1000000\]"),
    "Pad of 1e6": (
        model([helper.make_node("Pad", ["x", "p"], ["y"], name="pad")],
              [vi("x", T.FLOAT, [1, 3, 4, 4])], [vi("y", T.FLOAT, None)],
              [numpy_helper.from_array(np.array([0, 0, 10**6, 10**6] * 2, np.int64), "p")]),
        r"node 'pad' \(Pad\): output 'y' of shape \[1, 3, 2000004, 2000004\] is too large"),
    "ConstantOfShape 2^31 x 2^31": (
        model([helper.make_node("ConstantOfShape", ["s"], ["y"], name="cos")], [],
              [vi("y", T.FLOAT, None)],
              [numpy_helper.from_array(np.array([2**31, 2**31], np.int64), "s")]),
        r"node 'cos' \(ConstantOfShape\): output 'y' of shape \[2147483648, 2147483648\] is "
        r"too large"),
    "unknown element type": (relu(elem=99), r"graph input 'x' has an unknown element type 99"),
    "initializer with more data than its shape": (
        with_(conv(), lambda m: m.graph.initializer[0].dims.__setitem__(0, 2)),
        r"initializer 'w': its data does not match its shape \[2, 3, 3, 3\]"),
    "pool window of 2^63-1 taps": (
        model([helper.make_node("AveragePool", ["x"], ["y"], name="ap", auto_pad="SAME_UPPER",
                                kernel_shape=[3, 2**63 - 1])],
              [vi("x", T.FLOAT, [1, 3, 8, 8])], [vi("y", T.FLOAT, None)]),
        r"node 'ap' \(AveragePool\): too large: the kernel \[3, 9223372036854775807\] over the "
        r"input \[8, 8\]"),
    "huge initializer dims": (
        model([helper.make_node("Add", ["x", "w"], ["y"], name="add")],
              [vi("x", T.FLOAT, [4])], [vi("y", T.FLOAT, None)],
              [huge_initializer()]),
        r"initializer 'w' of shape \[1048576, 1048576\] is too large"),
}


@pytest.mark.parametrize("case", list(MALFORMED))
def test_malformed_model_is_one_clear_error(case):
    m, pattern = MALFORMED[case]
    with pytest.raises(ModelError, match=pattern) as info:
        load_onnx(m)
    message = str(info.value)
    assert "\n" not in message and message.startswith("model 'g': ")


@pytest.mark.parametrize("case", list(ORT_REFUSES))
def test_onnxruntime_refuses_them_too(case):
    m, _ = ORT_REFUSES[case]
    with pytest.raises(Exception):
        ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])


def test_the_spec_requires_topological_order():
    # onnxruntime sorts the nodes itself; the ONNX spec (and its checker) require the
    # order, and so does xweave.
    shaped = onnx.ModelProto()
    shaped.CopyFrom(OUT_OF_ORDER)
    shaped.graph.output[0].type.tensor_type.shape.dim.add().dim_value = 4
    with pytest.raises(onnx.checker.ValidationError, match="topologically sorted"):
        onnx.checker.check_model(shaped)


def test_the_size_bound_is_int32_elements():
    assert MAX_ELEMENTS == 2**31 - 1
    load_onnx(relu((2**15, 2**15)))  # large but allowed: nothing is allocated at import


def test_deprecated_operators_are_not_refused_by_the_checker():
    m = model([helper.make_node("Upsample", ["x", "s"], ["y"], name="up", mode="nearest")],
              [vi("x", T.FLOAT, [1, 1, 2, 2])], [vi("y", T.FLOAT, None)],
              [numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "s")], opset=9)
    with pytest.raises(Exception) as info:
        load_onnx(m)
    assert "deprecated" not in str(info.value)  # unsupported (if so), not refused as invalid


def test_file_source_is_named(tmp_path):
    path = tmp_path / "bad.onnx"
    onnx.save(conv(strides=[0, 0]), path)
    with pytest.raises(ModelError, match=rf"^{path}: node 'c1' \(Conv\): attribute strides"):
        load_onnx(path)
