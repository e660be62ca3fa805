"""ONNX models built with onnx.helper, compiled by xweave, compared with onnxruntime."""

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import xweave

from helpers import onnx_model

RNG = np.random.default_rng(1234)


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
    return onnx_model(nodes, [("x", [2, 3, 15, 13])], ["y"], init)


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
    model = onnx_model(nodes, [("a", [4, 1, 3, 5])], ["y"], init)
    check(model, {"a": RNG.standard_normal((4, 1, 3, 5)).astype(np.float32)})


def test_two_inputs_two_outputs_and_passthrough_output():
    nodes = [
        helper.make_node("Add", ["a", "b"], ["s"], name="add"),
        helper.make_node("Relu", ["s"], ["r"], name="relu"),
        helper.make_node("Mul", ["r", "a"], ["y"], name="mul"),
    ]
    model = onnx_model(nodes, [("a", [3, 4]), ("b", [1, 4])], ["y", "r"], {})
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
    from xweave.context import print_module
    from xweave.context import parse_module
    from xweave.pipeline import lower

    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], name="conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["r"], name="relu"),
        helper.make_node("GlobalAveragePool", ["r"], ["y"], name="gap"),
    ]
    model = onnx_model(nodes, [("x", [1, 2, 5, 5])], ["y"], {"w": weights(3, 2, 3, 3)})
    x = RNG.standard_normal((1, 2, 5, 5)).astype(np.float32)
    (expected,) = ort.InferenceSession(model.SerializeToString()).run(None, {"x": x})

    seen = []

    def on_stage(name, module):
        # Every stage prints and re-parses to the same module.
        text = print_module(module)
        assert print_module(parse_module(text)) == text
        if name in ("graph", "te"):
            (got,) = interpret(module, [x])
        elif name in ("loop", "scheduled", "planned"):
            got = np.zeros_like(expected)
            interpret(module, [x, got])
        else:
            return
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)
        seen.append(name)

    lower(xweave.load_onnx(model), on_stage=on_stage)
    assert seen == ["graph", "te", "loop", "scheduled", "planned"]


# --------------------------------------------------------------------------------------
# Blocks of the models people bring: a transformer encoder, MobileNet v2/v3 blocks
# --------------------------------------------------------------------------------------


def _layer_norm_nodes(x, out, scale, bias, decomposed, opset, tag):
    """LayerNormalization over the last axis, as the op or decomposed like exporters do."""
    if not decomposed:
        return [helper.make_node("LayerNormalization", [x, scale, bias], [out], name=tag,
                                 axis=-1, epsilon=1e-5)]
    mean_kwargs = {} if opset >= 18 else {"axes": [-1]}
    mean_inputs = ["last_axis"] if opset >= 18 else []
    return [
        helper.make_node("ReduceMean", [x, *mean_inputs], [f"{tag}_mean"], name=f"{tag}_mean",
                         **mean_kwargs),
        helper.make_node("Sub", [x, f"{tag}_mean"], [f"{tag}_d"], name=f"{tag}_sub"),
        helper.make_node("Pow", [f"{tag}_d", "two"], [f"{tag}_sq"], name=f"{tag}_pow"),
        helper.make_node("ReduceMean", [f"{tag}_sq", *mean_inputs], [f"{tag}_var"],
                         name=f"{tag}_var", **mean_kwargs),
        helper.make_node("Add", [f"{tag}_var", "eps"], [f"{tag}_ve"], name=f"{tag}_add_eps"),
        helper.make_node("Sqrt", [f"{tag}_ve"], [f"{tag}_std"], name=f"{tag}_sqrt"),
        helper.make_node("Div", [f"{tag}_d", f"{tag}_std"], [f"{tag}_n"], name=f"{tag}_div"),
        helper.make_node("Mul", [f"{tag}_n", scale], [f"{tag}_scaled"], name=f"{tag}_scale"),
        helper.make_node("Add", [f"{tag}_scaled", bias], [out], name=f"{tag}_bias"),
    ]


def transformer_encoder(opset, batch=2, seq=4, dim=8, heads=2, hidden=16):
    """Pre-norm encoder block: x + MHA(LN(x)), then + FFN(LN(.)) with GELU.

    opset 17: LayerNormalization op + GELU written with Erf; opset 20: decomposed layer
    norm (ReduceMean/Sub/Pow/Sqrt/Div, axes as inputs) + the Gelu op. The head split
    reshapes take their shapes from Shape -> Gather -> Unsqueeze -> Concat chains.
    """
    d_head = dim // heads
    nodes = _layer_norm_nodes("x", "ln1", "ln1_s", "ln1_b", decomposed=opset >= 20,
                              opset=opset, tag="ln1")
    # Q, K, V projections and head split [B, S, D] -> [B, H, S, Dh].
    nodes += [
        helper.make_node("Shape", ["x"], ["x_shape"], name="shape"),
        helper.make_node("Gather", ["x_shape", "i0"], ["b"], name="batch_dim", axis=0),
        helper.make_node("Gather", ["x_shape", "i1"], ["s"], name="seq_dim", axis=0),
        helper.make_node("Unsqueeze", ["b", "axes0"], ["batch1"], name="batch1"),
        helper.make_node("Unsqueeze", ["s", "axes0"], ["seq1"], name="seq1"),
        helper.make_node("Concat", ["batch1", "seq1", "heads_dh"], ["split_shape"],
                         name="split_shape", axis=0),
        helper.make_node("Concat", ["batch1", "seq1", "minus1"], ["merge_shape"],
                         name="merge_shape", axis=0),
    ]
    for p in "qkv":
        nodes += [
            helper.make_node("MatMul", ["ln1", f"w{p}"], [f"{p}_mm"], name=f"{p}_proj"),
            helper.make_node("Add", [f"{p}_mm", f"b{p}"], [f"{p}_flat"], name=f"{p}_bias"),
            helper.make_node("Reshape", [f"{p}_flat", "split_shape"], [f"{p}_4d"], name=f"{p}_split"),
            helper.make_node("Transpose", [f"{p}_4d"], [p], name=f"{p}_heads",
                             perm=[0, 2, 3, 1] if p == "k" else [0, 2, 1, 3]),
        ]
    nodes += [
        helper.make_node("MatMul", ["q", "k"], ["scores"], name="qk"),  # [B, H, S, S]
        helper.make_node("Div", ["scores", "sqrt_dh"], ["scaled"], name="scale"),
        helper.make_node("Where", ["causal", "scaled", "neg_inf"], ["masked"], name="mask"),
        helper.make_node("Softmax", ["masked"], ["attn"], name="softmax", axis=-1),
        helper.make_node("MatMul", ["attn", "v"], ["ctx"], name="attn_v"),
        helper.make_node("Transpose", ["ctx"], ["ctx_t"], name="merge_heads", perm=[0, 2, 1, 3]),
        helper.make_node("Reshape", ["ctx_t", "merge_shape"], ["ctx_flat"], name="merge"),
        helper.make_node("MatMul", ["ctx_flat", "wo"], ["o_mm"], name="out_proj"),
        helper.make_node("Add", ["o_mm", "bo"], ["o"], name="out_bias"),
        helper.make_node("Add", ["x", "o"], ["h"], name="residual1"),
    ]
    nodes += _layer_norm_nodes("h", "ln2", "ln2_s", "ln2_b", decomposed=opset >= 20,
                               opset=opset, tag="ln2")
    nodes += [
        helper.make_node("MatMul", ["ln2", "w1"], ["f1_mm"], name="ffn1"),
        helper.make_node("Add", ["f1_mm", "b1"], ["f1"], name="ffn1_bias"),
    ]
    if opset >= 20:
        nodes.append(helper.make_node("Gelu", ["f1"], ["g"], name="gelu"))
    else:  # 0.5 * x * (1 + erf(x / sqrt(2)))
        nodes += [
            helper.make_node("Div", ["f1", "sqrt2"], ["g_in"], name="gelu_div"),
            helper.make_node("Erf", ["g_in"], ["g_erf"], name="gelu_erf"),
            helper.make_node("Add", ["g_erf", "one"], ["g_1"], name="gelu_add"),
            helper.make_node("Mul", ["f1", "g_1"], ["g_x"], name="gelu_mul"),
            helper.make_node("Mul", ["g_x", "half"], ["g"], name="gelu_half"),
        ]
    nodes += [
        helper.make_node("MatMul", ["g", "w2"], ["f2_mm"], name="ffn2"),
        helper.make_node("Add", ["f2_mm", "b2"], ["f2"], name="ffn2_bias"),
        helper.make_node("Add", ["h", "f2"], ["y"], name="residual2"),
    ]
    init = {
        "ln1_s": 1 + weights(dim), "ln1_b": weights(dim), "ln2_s": 1 + weights(dim),
        "ln2_b": weights(dim),
        "wq": weights(dim, dim, scale=0.4), "bq": weights(dim), "wk": weights(dim, dim, scale=0.4),
        "bk": weights(dim), "wv": weights(dim, dim, scale=0.4), "bv": weights(dim),
        "wo": weights(dim, dim, scale=0.4), "bo": weights(dim),
        "w1": weights(dim, hidden, scale=0.4), "b1": weights(hidden),
        "w2": weights(hidden, dim, scale=0.4), "b2": weights(dim),
        "i0": np.array(0, np.int64), "i1": np.array(1, np.int64), "axes0": np.array([0], np.int64),
        "heads_dh": np.array([heads, d_head], np.int64), "minus1": np.array([-1], np.int64),
        "sqrt_dh": np.array(np.sqrt(d_head), np.float32),
        "causal": np.tril(np.ones((seq, seq), bool)),
        "neg_inf": np.array(-1e9, np.float32),
        "two": np.array(2.0, np.float32), "eps": np.array(1e-5, np.float32),
        "last_axis": np.array([-1], np.int64), "sqrt2": np.array(np.sqrt(2), np.float32),
        "one": np.array(1.0, np.float32), "half": np.array(0.5, np.float32),
    }
    return onnx_model(nodes, [("x", ["batch", seq, dim])], ["y"], init, opset, infer_shapes=False)


@pytest.mark.parametrize("opset", [17, 20])
def test_transformer_encoder_block(opset):
    from xweave.frontend.onnx import load_onnx

    model = transformer_encoder(opset)
    x = RNG.standard_normal((2, 4, 8)).astype(np.float32)
    expected = ort.InferenceSession(model.SerializeToString()).run(None, {"x": x})
    module = load_onnx(model, input_shapes={"x": (2, 4, 8)})
    ops = [op.name for op in module.walk() if op.name.startswith("graph.")]
    assert "graph.softmax" in ops and ops.count("graph.matmul") == 8  # 4 projections + 2 FFN + 2 attention
    assert ("graph.layer_norm" in ops) == (opset < 20) and ("graph.gelu" in ops) == (opset >= 20)
    # The shape chains were evaluated at import time: no int64 tensor reaches the graph.
    int_constants = [op for op in module.walk() if op.name == "graph.constant"
                     and "i64" in str(op.results[0].type)]
    assert not int_constants
    got = xweave.build(module).run(x=x)
    # float32 sums of 8-16 products in another order than onnxruntime's: 1e-4 absolute.
    np.testing.assert_allclose(got[0], expected[0], rtol=1e-4, atol=1e-4)


def _conv_bn(nodes, init, x, out, cin, cout, kernel, group=1, tag=""):
    """Conv (no bias) + BatchNormalization, as exported CNNs have them."""
    init[f"{tag}_w"] = weights(cout, cin // group, kernel, kernel, scale=0.4)
    init.update({f"{tag}_s": 1 + weights(cout), f"{tag}_b": weights(cout),
                 f"{tag}_m": weights(cout), f"{tag}_v": np.abs(weights(cout)) + 0.5})
    nodes += [
        helper.make_node("Conv", [x, f"{tag}_w"], [f"{tag}_c"], name=f"{tag}_conv",
                         kernel_shape=[kernel, kernel], pads=[kernel // 2] * 4, group=group),
        helper.make_node("BatchNormalization", [f"{tag}_c", f"{tag}_s", f"{tag}_b", f"{tag}_m",
                                                f"{tag}_v"], [out], name=f"{tag}_bn"),
    ]


def inverted_residual(version, channels=8, expand=3, size=6):
    """MobileNet v2 (Clip 0..6) or v3 (HardSwish + squeeze-excite, HardSigmoid) block."""
    hidden = channels * expand
    nodes, init = [], {"zero": np.array(0.0, np.float32), "six": np.array(6.0, np.float32)}

    def activation(x, out):
        if version == 2:
            nodes.append(helper.make_node("Clip", [x, "zero", "six"], [out], name=f"{out}_relu6"))
        else:
            nodes.append(helper.make_node("HardSwish", [x], [out], name=f"{out}_hswish"))

    _conv_bn(nodes, init, "x", "e_bn", channels, hidden, 1, tag="expand")
    activation("e_bn", "e")
    _conv_bn(nodes, init, "e", "d_bn", hidden, hidden, 3, group=hidden, tag="depthwise")
    activation("d_bn", "d")
    if version == 3:  # squeeze and excite
        init.update({"se1_w": weights(hidden // 4, hidden, 1, 1), "se1_b": weights(hidden // 4),
                     "se2_w": weights(hidden, hidden // 4, 1, 1), "se2_b": weights(hidden)})
        nodes += [
            helper.make_node("GlobalAveragePool", ["d"], ["se_p"], name="se_pool"),
            helper.make_node("Conv", ["se_p", "se1_w", "se1_b"], ["se_1"], name="se_fc1"),
            helper.make_node("Relu", ["se_1"], ["se_r"], name="se_relu"),
            helper.make_node("Conv", ["se_r", "se2_w", "se2_b"], ["se_2"], name="se_fc2"),
            helper.make_node("HardSigmoid", ["se_2"], ["se_g"], name="se_gate",
                             alpha=1 / 6, beta=0.5),
            helper.make_node("Mul", ["d", "se_g"], ["d_se"], name="se_scale"),
        ]
    _conv_bn(nodes, init, "d_se" if version == 3 else "d", "p", hidden, channels, 1,
             tag="project")
    nodes.append(helper.make_node("Add", ["x", "p"], ["y"], name="residual"))
    return onnx_model(nodes, [("x", [1, channels, size, size])], ["y"], init, 14,
                      infer_shapes=False)


@pytest.mark.parametrize("version", [2, 3])
def test_mobilenet_inverted_residual_block(version):
    model = inverted_residual(version)
    x = RNG.standard_normal((1, 8, 6, 6)).astype(np.float32)
    from xweave.frontend.onnx import load_onnx

    ops = [op.name for op in load_onnx(model).walk() if op.name.startswith("graph.")]
    assert ops.count("graph.batch_norm") == 3  # kept as real ops (for BN folding later)
    check(model, {"x": x}, rtol=1e-4, atol=1e-4)


def test_token_embedding_with_int64_input_ids():
    """int64 token ids index an embedding table at run time; padding tokens (id 0) are
    masked with Where on a run-time comparison of the ids."""
    nodes = [
        helper.make_node("Gather", ["table", "ids"], ["tok"], name="embed", axis=0),
        helper.make_node("Add", ["tok", "positions"], ["emb"], name="add_positions"),
        helper.make_node("LayerNormalization", ["emb", "ln_s", "ln_b"], ["ln"], name="ln", axis=-1),
        helper.make_node("Equal", ["ids", "pad_id"], ["is_pad"], name="is_pad"),
        helper.make_node("Unsqueeze", ["is_pad", "last"], ["is_pad3"], name="is_pad3"),
        helper.make_node("Where", ["is_pad3", "zero", "ln"], ["masked"], name="mask"),
        helper.make_node("MatMul", ["masked", "proj"], ["y"], name="proj"),
    ]
    init = {"table": weights(10, 8, scale=1.0), "positions": weights(5, 8), "ln_s": 1 + weights(8),
            "ln_b": weights(8), "pad_id": np.array(0, np.int64), "last": np.array([-1], np.int64),
            "zero": np.array(0.0, np.float32), "proj": weights(8, 3)}
    graph = helper.make_graph(
        nodes, "embedding", [helper.make_tensor_value_info("ids", TensorProto.INT64, [2, 5])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        initializer=[numpy_helper.from_array(v, k) for k, v in init.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    ids = np.array([[3, 9, 1, 0, 0], [7, 7, 2, 5, 0]], np.int64)
    compiled = check(model, {"ids": ids})
    assert compiled.inputs[0].dtype == "int64"
