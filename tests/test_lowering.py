"""Every supported ONNX operator through every stage: each stage is interpreted and
compared with onnxruntime, and the compiled code too (so each conversion pass is
checked to preserve meaning)."""

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import xweave
from xweave.dialects.interpreters import interpret
from xweave.pipeline import lower

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


def graph_model(nodes, input_shapes, outputs, initializers=None, opset=13):
    """A model of several nodes: inputs x0, x1, ... (float32), the given outputs."""
    graph = helper.make_graph(
        nodes, "g",
        [helper.make_tensor_value_info(f"x{i}", TensorProto.FLOAT, s) for i, s in enumerate(input_shapes)],
        [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outputs],
        initializer=[numpy_helper.from_array(v, k) for k, v in (initializers or {}).items()])
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
    # --- convolution family: transposed, 1-D ---
    "conv_transpose_stride_pad": ("ConvTranspose", [(1, 2, 2, 3)],
                                  dict(strides=[2, 2], pads=[1, 0, 0, 1], output_padding=[1, 0]),
                                  {"w": w(2, 2, 3, 3), "b": w(2)}),
    "conv_transpose_groups_dilation": ("ConvTranspose", [(1, 4, 2, 2)],
                                       dict(group=2, dilations=[2, 1], strides=[1, 2]),
                                       {"w": w(4, 1, 2, 3)}),
    "conv_transpose_same_upper": ("ConvTranspose", [(1, 2, 2, 3)],
                                  dict(strides=[2, 2], auto_pad="SAME_UPPER"), {"w": w(2, 1, 3, 3)}),
    "conv_transpose_output_shape": ("ConvTranspose", [(1, 2, 2, 3)],
                                    dict(strides=[2, 2], output_shape=[5, 8]), {"w": w(2, 1, 3, 3)}),
    "conv_transpose_1d": ("ConvTranspose", [(1, 2, 5)], dict(strides=[2], pads=[1, 0]),
                          {"w": w(2, 3, 3)}),
    "conv_1d_same": ("Conv", [(1, 2, 7)], dict(auto_pad="SAME_LOWER", strides=[2]),
                     {"w": w(3, 2, 4), "b": w(3)}),
    "maxpool_1d": ("MaxPool", [(1, 2, 9)], dict(kernel_shape=[3], strides=[2], pads=[1, 1]), {}),
    "avgpool_1d_ceil": ("AveragePool", [(1, 2, 8)], dict(kernel_shape=[3], strides=[2], ceil_mode=1), {}),
    "global_avg_3d": ("GlobalAveragePool", [(2, 3, 5)], {}, {}),
    "global_max_5d": ("GlobalMaxPool", [(1, 2, 2, 3, 2)], {}, {}),
    # --- normalization ---
    "batch_norm": ("BatchNormalization", [(2, 3, 2, 3)], dict(epsilon=1e-3),
                   {"s": w(3), "b": w(3), "m": w(3), "v": np.abs(w(3)) + 0.5}),
    "batch_norm_3d_input": ("BatchNormalization", [(2, 3, 4)], {},
                            {"s": w(3), "b": w(3), "m": w(3), "v": np.abs(w(3)) + 0.5}),
    "instance_norm": ("InstanceNormalization", [(2, 3, 2, 3)], dict(epsilon=1e-4),
                      {"s": w(3), "b": w(3)}),
    "layer_norm_last_axis": ("LayerNormalization", [(2, 3, 4)], {}, {"s": w(4), "b": w(4)},
                             dict(opset=17)),
    "layer_norm_axis1_no_bias": ("LayerNormalization", [(2, 3, 2)], dict(axis=1, epsilon=1e-3),
                                 {"s": w(3, 2)}, dict(opset=17)),
    "group_norm_opset18": ("GroupNormalization", [(2, 4, 3)], dict(num_groups=2),
                           {"s": w(2), "b": w(2)}, dict(opset=18)),
    "group_norm_opset21": ("GroupNormalization", [(1, 4, 2, 2)], dict(num_groups=2),
                           {"s": w(4), "b": w(4)}, dict(opset=21)),
    "lrn": ("LRN", [(1, 5, 2, 2)], dict(size=3, alpha=0.1, beta=0.6, bias=1.5), {}),
    "lrn_window_wider_than_channels": ("LRN", [(1, 4, 1, 3)], dict(size=5), {}),
    # --- softmax family (the opset-11 form coerces to 2-D) ---
    "softmax_axis1": ("Softmax", [(2, 3, 4)], dict(axis=1), {}, dict(scale=5.0)),
    "softmax_opset11_2d": ("Softmax", [(2, 3, 4)], dict(axis=1), {}, dict(opset=11, scale=5.0)),
    "log_softmax_last": ("LogSoftmax", [(3, 5)], {}, {}, dict(scale=5.0)),
    "log_softmax_opset11_axis0": ("LogSoftmax", [(2, 3)], dict(axis=0), {}, dict(opset=11)),
    # --- reductions (axes as attribute or input, by opset) ---
    "reduce_mean_attr": ("ReduceMean", [(2, 3, 4)], dict(axes=[0, 2]), {}),
    "reduce_mean_opset18": ("ReduceMean", [(2, 3, 4)], dict(keepdims=0),
                            {"axes": np.array([-1], np.int64)}, dict(opset=18)),
    "reduce_sum_input_all": ("ReduceSum", [(2, 3)], dict(keepdims=0), {}),
    "reduce_sum_input_axes": ("ReduceSum", [(2, 3, 2)], {}, {"axes": np.array([1], np.int64)}),
    "reduce_max": ("ReduceMax", [(2, 3, 4)], dict(axes=[1], keepdims=0), {}),
    "reduce_min": ("ReduceMin", [(2, 3)], dict(axes=[0]), {}),
    "reduce_prod": ("ReduceProd", [(2, 3)], dict(axes=[1]), {}),
    "reduce_l1": ("ReduceL1", [(2, 3)], dict(axes=[1]), {}),
    "reduce_l2": ("ReduceL2", [(2, 3)], dict(axes=[0], keepdims=0), {}),
    "reduce_sum_square": ("ReduceSumSquare", [(2, 3)], dict(axes=[1]), {}),
    "reduce_log_sum_exp": ("ReduceLogSumExp", [(2, 3)], dict(axes=[1], keepdims=0), {},
                           dict(scale=10.0)),
    # --- elementwise: math and activations ---
    "log": ("Log", [(2, 5)], {}, {}, dict(positive=True)),
    "erf": ("Erf", [(2, 5)], {}, {}),
    "reciprocal": ("Reciprocal", [(2, 5)], {}, {}, dict(positive=True)),
    "softplus": ("Softplus", [(2, 5)], {}, {}, dict(scale=10.0)),
    "softsign": ("Softsign", [(2, 5)], {}, {}),
    "sign": ("Sign", [(2, 5)], {}, {}),
    "floor": ("Floor", [(2, 5)], {}, {}, dict(scale=3.0)),
    "ceil": ("Ceil", [(2, 5)], {}, {}, dict(scale=3.0)),
    "round": ("Round", [(2, 5)], {}, {}, dict(scale=3.0)),
    "sin": ("Sin", [(2, 5)], {}, {}),
    "cos": ("Cos", [(2, 5)], {}, {}),
    "hard_swish": ("HardSwish", [(2, 5)], {}, {}, dict(opset=14, scale=4.0)),
    "hard_sigmoid": ("HardSigmoid", [(2, 5)], dict(alpha=0.3, beta=0.4), {}, dict(scale=3.0)),
    "leaky_relu": ("LeakyRelu", [(2, 5)], dict(alpha=0.2), {}),
    "elu": ("Elu", [(2, 5)], dict(alpha=0.7), {}),
    "selu": ("Selu", [(2, 5)], {}, {}),
    "gelu": ("Gelu", [(2, 5)], {}, {}, dict(opset=20, scale=2.0)),
    "gelu_tanh": ("Gelu", [(2, 5)], dict(approximate="tanh"), {}, dict(opset=20, scale=2.0)),
    "shrink": ("Shrink", [(2, 5)], dict(lambd=0.4, bias=0.1), {}),
    "prelu_channels": ("PRelu", [(1, 3, 2, 2)], {}, {"slope": w(3, 1, 1)}),
    "prelu_scalar": ("PRelu", [(2, 3)], {}, {"slope": np.array([0.25], np.float32)}),
    "sum3": ("Sum", [(2, 3), (3,), (2, 1)], {}, {}),
    "mean3": ("Mean", [(2, 3), (1, 3), (2, 3)], {}, {}),
    "max3": ("Max", [(2, 3), (3,), (2, 1)], {}, {}),
    # --- data movement ---
    "concat": ("Concat", [(2, 1, 3), (2, 2, 3), (2, 1, 3)], dict(axis=1), {}),
    "split_opset13": ("Split", [(2, 6)], dict(axis=1), {"split": np.array([1, 3, 2], np.int64)},
                      dict(outputs=3)),
    "split_opset11_equal": ("Split", [(4, 3)], {}, {}, dict(opset=11, outputs=2)),
    "slice_steps": ("Slice", [(5, 6)], {},
                    {"s": np.array([4, 1], np.int64), "e": np.array([-9, 6], np.int64),
                     "a": np.array([0, 1], np.int64), "st": np.array([-2, 2], np.int64)}),
    "slice_opset9_attrs": ("Slice", [(3, 4)], dict(starts=[1], ends=[100], axes=[1]), {},
                           dict(opset=9)),
    "gather_indices": ("Gather", [(3, 4)], dict(axis=1), {"i": np.array([[3, 0], [-1, 1]], np.int64)}),
    "gather_scalar": ("Gather", [(3, 4)], dict(axis=0), {"i": np.array(-2, np.int64)}),
    "gather_contiguous": ("Gather", [(5, 2)], {}, {"i": np.array([1, 2, 3], np.int64)}),
    "pad_constant": ("Pad", [(2, 3)], {}, {"p": np.array([1, 0, 0, 2], np.int64),
                                           "v": np.array(1.5, np.float32)}),
    "pad_reflect": ("Pad", [(2, 4)], dict(mode="reflect"), {"p": np.array([1, 2, 1, 3], np.int64)}),
    "pad_edge": ("Pad", [(2, 3)], dict(mode="edge"), {"p": np.array([0, 2, 1, 1], np.int64)}),
    "pad_negative": ("Pad", [(3, 4)], {}, {"p": np.array([-1, 1, 0, -2], np.int64)}),
    "pad_opset9_attr": ("Pad", [(1, 2, 2)], dict(pads=[0, 1, 0, 0, 1, 2], value=-1.0), {},
                        dict(opset=9)),
    "tile": ("Tile", [(2, 3)], {}, {"r": np.array([2, 1], np.int64)}),
    "expand": ("Expand", [(3, 1)], {}, {"s": np.array([2, 1, 4], np.int64)}),
    "squeeze_opset11": ("Squeeze", [(2, 1, 3, 1)], dict(axes=[1, -1]), {}, dict(opset=11)),
    "squeeze_all": ("Squeeze", [(1, 3, 1)], {}, {}),
    "unsqueeze_opset13": ("Unsqueeze", [(2, 3)], {}, {"a": np.array([0, -1], np.int64)}),
    "unsqueeze_opset11": ("Unsqueeze", [(2, 3)], dict(axes=[1]), {}, dict(opset=11)),
    "depth_to_space_dcr": ("DepthToSpace", [(1, 8, 2, 3)], dict(blocksize=2), {}),
    "depth_to_space_crd": ("DepthToSpace", [(1, 8, 2, 1)], dict(blocksize=2, mode="CRD"), {}),
    "space_to_depth": ("SpaceToDepth", [(1, 2, 4, 2)], dict(blocksize=2), {}),
}


def node(op, inputs, outputs, **attrs):
    return helper.make_node(op, inputs, outputs, name=outputs[0], **attrs)


GRAPH_CASES = {
    # name: (nodes, input shapes, outputs, initializers, opset)
    "where_constant_condition": (
        [node("Where", ["c", "x0", "x1"], ["y"])], [(2, 3), (3,)], ["y"],
        {"c": np.array([[True, False, True], [False, False, True]])}, 13),
    "compare_logic_where": (
        [node("Greater", ["x0", "x1"], ["gt"]), node("Less", ["x0", "zero"], ["lt"]),
         node("Equal", ["x1", "x1"], ["eq"]), node("LessOrEqual", ["x0", "x1"], ["le"]),
         node("GreaterOrEqual", ["x0", "zero"], ["ge"]),
         node("Or", ["gt", "lt"], ["or"]), node("And", ["or", "eq"], ["and"]),
         node("Xor", ["and", "le"], ["xor"]), node("Not", ["xor"], ["not"]),
         node("And", ["not", "ge"], ["cond"]),
         node("Where", ["cond", "x0", "x1"], ["y"])],
        [(2, 3), (3,)], ["y"], {"zero": np.array(0.0, np.float32)}, 13),
    "cast_roundtrip_and_bool": (
        [node("Mul", ["x0", "three"], ["big"]), node("Cast", ["big"], ["i"], to=TensorProto.INT64),
         node("Cast", ["i"], ["f"], to=TensorProto.FLOAT),
         node("Cast", ["i"], ["b"], to=TensorProto.BOOL),
         node("Cast", ["b"], ["bf"], to=TensorProto.FLOAT), node("Add", ["f", "bf"], ["y"])],
        [(3, 4)], ["y"], {"three": np.array(3.0, np.float32)}, 13),
    "gather_runtime_indices": (
        [node("Abs", ["x0"], ["a"]), node("Cast", ["a"], ["i"], to=TensorProto.INT64),
         node("Gather", ["table", "i"], ["y"], axis=0)],
        [(2, 3)], ["y"], {"table": w(3, 4)}, 13),
    "shape_chain_reshape": (  # Shape -> Gather -> Unsqueeze -> Concat -> Reshape, folded
        [node("Shape", ["x0"], ["s"]), node("Gather", ["s", "zero"], ["n"], axis=0),
         node("Unsqueeze", ["n", "axes0"], ["n1"]), node("Concat", ["n1", "minus1"], ["shape"], axis=0),
         node("Reshape", ["x0", "shape"], ["y"])],
        [(2, 3, 4)], ["y"],
        {"zero": np.array(0, np.int64), "axes0": np.array([0], np.int64),
         "minus1": np.array([-1], np.int64)}, 13),
}


def check_every_stage(model, feeds, rtol=1e-4, atol=1e-5):
    """Interpret the graph, te and loop stages and run the compiled code: all agree with
    onnxruntime."""
    expected = ort.InferenceSession(model.SerializeToString()).run(None, feeds)
    inputs = list(feeds.values())
    checked = []

    def on_stage(name, module):
        if name in ("graph", "te"):
            got = interpret(module, inputs)
        elif name in ("loop", "scheduled", "planned"):
            got = [np.zeros_like(e) for e in expected]
            interpret(module, [*inputs, *got])
        else:
            return
        for g, e in zip(got, expected, strict=True):
            np.testing.assert_allclose(g, e, rtol=rtol, atol=atol, err_msg=f"stage {name}")
        checked.append(name)

    lower(xweave.load_onnx(model), on_stage=on_stage)
    assert checked == ["graph", "te", "loop", "scheduled", "planned"]
    got = xweave.build(model).run(**feeds)
    for g, e in zip(got, expected, strict=True):
        np.testing.assert_allclose(g, e, rtol=rtol, atol=atol, err_msg="compiled")


def positive(*shape):
    return (np.abs(RNG.standard_normal(shape)) + 0.2).astype(np.float32)


@pytest.mark.parametrize("case", sorted(CASES))
def test_operator_through_every_stage(case):
    op, shapes, attrs, inits, *extra = CASES[case]
    options = extra[0] if extra else {}
    model = single_node_model(op, shapes, attrs, inits, n_outputs=options.get("outputs", 1),
                              opset=options.get("opset", 13))
    make_input = positive if options.get("positive") else \
        lambda *s: RNG.standard_normal(s).astype(np.float32) * options.get("scale", 1.0)
    feeds = {f"x{i}": make_input(*s) for i, s in enumerate(shapes)}
    check_every_stage(model, feeds, options.get("rtol", 1e-4), options.get("atol", 1e-5))


@pytest.mark.parametrize("case", sorted(GRAPH_CASES))
def test_graph_through_every_stage(case):
    nodes, shapes, outputs, inits, opset = GRAPH_CASES[case]
    model = graph_model(nodes, shapes, outputs, inits, opset)
    feeds = {f"x{i}": RNG.standard_normal(s).astype(np.float32) for i, s in enumerate(shapes)}
    check_every_stage(model, feeds)


def test_sqrt_of_positive_values():
    model = single_node_model("Sqrt", [(3, 4)])
    x = np.abs(RNG.standard_normal((3, 4))).astype(np.float32) + 0.1
    (expected,) = ort.InferenceSession(model.SerializeToString()).run(None, {"x0": x})
    np.testing.assert_allclose(xweave.build(model).run(x0=x)[0], expected, rtol=1e-5)
