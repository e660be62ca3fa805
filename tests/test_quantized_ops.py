"""The ONNX quantization operators, compiled end to end, against onnxruntime.

QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear, QLinearConv, ConvInteger,
QLinearMatMul and MatMulInteger: per-tensor and per-axis (and per-block) parameters,
uint8 and int8 zero points (negative ones too), rounding ties, saturation. Results must
equal onnxruntime's bit for bit.

onnxruntime runs with `session.x64quantprecision=1` on uint8 data (its int8 x int8
kernels are exact without it, and it has none for int8 data with it): by default its
u8 x s8 kernels on
x86 CPUs without VNNI (AVX2: `vpmaddubsw`) add pairs of products in saturating 16-bit
arithmetic (255 * 127 * 2 > 32767), so an int8 weight of magnitude above 64 next to
large activations gives a wrong sum (MatMulInteger sums off by 22242 on a Zen 3); that
option converts such weights to uint8 (`Avx2WeightS8ToU8Transformer`: w + 128, the zero
point likewise) and runs its exact U8U8 kernels. xweave's sums are exact on every
machine (`vpmaddubsw` only for weights within +-64, `vpmaddwd` on 16-bit weights
otherwise); the saturating edge (255 x 127 x K) is also checked against numpy.
"""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import xweave
from xweave.errors import ModelError
from xweave import load_onnx

_TYPES = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.uint8): TensorProto.UINT8,
          np.dtype(np.int8): TensorProto.INT8, np.dtype(np.int32): TensorProto.INT32}


def _model(nodes, inputs: dict, outputs: dict, initializers: dict, opset: int = 13):
    graph = helper.make_graph(
        nodes, "quantized",
        [helper.make_tensor_value_info(n, _TYPES[a.dtype], a.shape) for n, a in inputs.items()],
        [helper.make_tensor_value_info(n, _TYPES[np.dtype(t)], None) for n, t in outputs.items()],
        [numpy_helper.from_array(np.asarray(a), n) for n, a in initializers.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8 if opset < 21 else 10
    return model


def _onnxruntime(model, feeds):
    options = ort.SessionOptions()
    if all(a.dtype != np.int8 for a in feeds.values()):  # (it has no kernels for int8 data)
        options.add_session_config_entry("session.x64quantprecision", "1")  # exact u8 x s8
    session = ort.InferenceSession(model.SerializeToString(), options,
                                   providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


def _xweave(model, feeds):
    return xweave.build(model).run(**feeds)


def _same(got, expected):
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        assert g.dtype == e.dtype and g.shape == e.shape
        np.testing.assert_array_equal(g, e)


def _ints(rng, dtype, shape, low=None, high=None):
    info = np.iinfo(dtype)
    return rng.integers(info.min if low is None else low, (info.max if high is None else high) + 1,
                        shape).astype(dtype)


@pytest.mark.parametrize("dtype, zero_point", [(np.uint8, 131), (np.int8, -7)])
def test_quantize_and_dequantize_per_tensor_and_per_axis_match_onnxruntime(dtype, zero_point):
    rng = np.random.default_rng(0)
    scale = np.float32(0.25)
    x = (rng.standard_normal((2, 3, 4, 5)) * 20).astype(np.float32)
    # ties (k + 0.5 steps round to even), saturation both ways
    x.flat[:8] = np.array([0.5, 1.5, -0.5, -2.5, 2.5, 1e6, -1e6, 0.0], np.float32) * scale
    axis_scale = np.array([0.25, 0.125, 2.0], np.float32)
    axis_zero = np.array([zero_point, 0, np.iinfo(dtype).max], dtype)
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"]),
             helper.make_node("QuantizeLinear", ["x", "sa", "za"], ["qa"], axis=1),
             helper.make_node("DequantizeLinear", ["qa", "sa", "za"], ["d"], axis=1),
             helper.make_node("DequantizeLinear", ["q", "s", "z"], ["dt"])]
    model = _model(nodes, {"x": x}, {"q": dtype, "qa": dtype, "d": np.float32, "dt": np.float32},
                   {"s": scale, "z": np.array(zero_point, dtype), "sa": axis_scale, "za": axis_zero})
    _same(_xweave(model, {"x": x}), _onnxruntime(model, {"x": x}))


def test_blocked_and_default_zero_point_quantization_match_onnxruntime():
    rng = np.random.default_rng(1)
    x = (rng.standard_normal((3, 7)) * 5).astype(np.float32)
    scale = (rng.random((3, 4)) + 0.1).astype(np.float32)  # blocks of 2 along axis 1 (7 -> 4)
    zero = _ints(rng, np.int8, (3, 4))
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"], axis=1, block_size=2),
             helper.make_node("DequantizeLinear", ["q", "s", "z"], ["d"], axis=1, block_size=2),
             helper.make_node("QuantizeLinear", ["x", "s1"], ["u"])]  # no zero point: uint8, 0
    model = _model(nodes, {"x": x}, {"q": np.int8, "d": np.float32, "u": np.uint8},
                   {"s": scale, "z": zero, "s1": np.float32(0.05)}, opset=21)
    _same(_xweave(model, {"x": x}), _onnxruntime(model, {"x": x}))


def _qlinear_conv(x, w, x_zero, w_zero, w_scale, y_zero, bias, **attrs):
    initializers = {"xs": np.float32(0.02), "xz": x_zero, "w": w, "ws": w_scale, "wz": w_zero,
                    "ys": np.float32(0.75), "yz": y_zero, "b": bias}
    node = helper.make_node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "b"],
                            ["y"], **attrs)
    return _model([node], {"x": x}, {"y": y_zero.dtype}, initializers)


@pytest.mark.parametrize("x_type, w_type", [(np.uint8, np.int8), (np.int8, np.int8),
                                            (np.uint8, np.uint8)])
def test_qlinear_conv_per_channel_matches_onnxruntime(x_type, w_type):
    rng = np.random.default_rng(2)
    x = _ints(rng, x_type, (1, 8, 7, 6))
    w = _ints(rng, w_type, (16, 4, 3, 3))
    x_zero = np.array(-5 if x_type == np.int8 else 7, x_type)
    w_zero = np.zeros(16, w_type) if w_type == np.int8 else _ints(rng, w_type, (16,))
    w_scale = (rng.random(16) * 0.01 + 0.001).astype(np.float32)
    model = _qlinear_conv(x, w, x_zero, w_zero, w_scale, np.array(-3 if x_type == np.int8 else 100,
                                                                  x_type),
                          _ints(rng, np.int32, (16,), -5000, 5000), pads=[1, 0, 2, 1],
                          strides=[2, 1], group=2)
    _same(_xweave(model, {"x": x}), _onnxruntime(model, {"x": x}))


def test_qlinear_conv_saturating_edge_is_exact():
    """255 x 127 summed over K = 64 * 9 (18.7 million, far beyond 16 bits): exact, against
    numpy; negative zero points of int8 outputs."""
    x = np.full((1, 64, 5, 5), 255, np.uint8)
    x[0, :, 2, 2] = 0
    w = np.full((4, 64, 3, 3), 127, np.int8)
    w[1] = -128
    w[2, ::2] = -127
    bias = np.array([7, -7, 0, 1 << 20], np.int32)
    w_scale = np.array([1e-6, 2e-6, 3e-6, 4e-6], np.float32)
    model = _qlinear_conv(x, w, np.array(0, np.uint8), np.zeros(4, np.int8), w_scale,
                          np.array(-100, np.int8), bias, pads=[1, 1, 1, 1])
    (got,) = _xweave(model, {"x": x})
    xp = np.pad(x.astype(np.int64), ((0, 0), (0, 0), (1, 1), (1, 1)))
    windows = np.lib.stride_tricks.sliding_window_view(xp, (3, 3), axis=(2, 3))
    acc = np.einsum("nchwij,ocij->nohw", windows, w.astype(np.int64)) + bias.reshape(1, 4, 1, 1)
    scale = (np.float32(0.02) * w_scale) / np.float32(0.75)
    y = np.rint(acc.astype(np.float32) * scale.reshape(1, 4, 1, 1)) - 100
    np.testing.assert_array_equal(got, np.clip(y, -128, 127).astype(np.int8))
    assert acc.max() > 255 * 127 * 2 * 100  # the sums really are far beyond 16 bits


def test_conv_integer_with_zero_points_and_run_time_weights_matches_onnxruntime():
    rng = np.random.default_rng(3)
    x = _ints(rng, np.uint8, (1, 3, 6, 6))
    w = _ints(rng, np.uint8, (4, 3, 3, 3))
    nodes = [helper.make_node("ConvInteger", ["x", "w", "xz", "wz"], ["y"], pads=[1, 0, 1, 2]),
             helper.make_node("ConvInteger", ["x", "wr", "xz", "wz"], ["yr"], pads=[1, 0, 1, 2])]
    model = _model(nodes, {"x": x, "wr": w}, {"y": np.int32, "yr": np.int32},
                   {"w": w, "xz": np.array(9, np.uint8), "wz": np.array(130, np.uint8)})
    _same(_xweave(model, {"x": x, "wr": w}), _onnxruntime(model, {"x": x, "wr": w}))


@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
def test_qlinear_matmul_per_column_matches_onnxruntime(dtype):
    rng = np.random.default_rng(4)
    a = _ints(rng, dtype, (2, 5, 24))
    b = _ints(rng, dtype, (24, 10))
    zero = np.array(-3 if dtype == np.int8 else 3, dtype)
    node = helper.make_node("QLinearMatMul", ["a", "as", "az", "b", "bs", "bz", "ys", "yz"], ["y"])
    model = _model([node], {"a": a}, {"y": dtype},
                   {"as": np.float32(0.03), "az": zero, "b": b,
                    "bs": (rng.random(10) * 0.02 + 0.001).astype(np.float32),
                    "bz": np.zeros(10, dtype) if dtype == np.int8 else _ints(rng, dtype, (10,)),
                    "ys": np.float32(0.2), "yz": np.array(-20 if dtype == np.int8 else 120, dtype)})
    _same(_xweave(model, {"a": a}), _onnxruntime(model, {"a": a}))


def test_dynamic_quantization_and_matmul_integer_match_onnxruntime():
    """quantize_dynamic's pattern: DynamicQuantizeLinear, then MatMulInteger with the
    run-time zero point, Cast and the scales' product; an all-zero input gets scale 1."""
    rng = np.random.default_rng(5)
    x = (rng.standard_normal((1, 6, 32)) * 3).astype(np.float32)
    b = _ints(rng, np.int8, (32, 16))
    nodes = [helper.make_node("DynamicQuantizeLinear", ["x"], ["xq", "xs", "xz"]),
             helper.make_node("MatMulInteger", ["xq", "b", "xz", "bz"], ["acc"]),
             helper.make_node("Cast", ["acc"], ["accf"], to=TensorProto.FLOAT),
             helper.make_node("Mul", ["xs", "bs"], ["s"]),
             helper.make_node("Mul", ["accf", "s"], ["y"]),
             helper.make_node("DynamicQuantizeLinear", ["zeros"], ["zq", "zs", "zz"])]
    feeds = {"x": x, "zeros": np.zeros((3, 4), np.float32)}
    model = _model(nodes, feeds, {"y": np.float32, "xq": np.uint8, "xs": np.float32,
                                  "xz": np.uint8, "zq": np.uint8, "zs": np.float32,
                                  "zz": np.uint8},
                   {"b": b, "bz": np.array(0, np.int8), "bs": np.float32(0.01)})
    _same(_xweave(model, feeds), _onnxruntime(model, feeds))


# --------------------------------------------------------------------------------------
# Bad quantization parameters: one line naming the node
# --------------------------------------------------------------------------------------


def _bad_model(scale, zero, x_type=np.float32, zero_name="z"):
    x = np.zeros((1, 3, 2, 2), x_type)
    op = "QuantizeLinear" if x_type == np.float32 else "DequantizeLinear"
    node = helper.make_node(op, ["x", "s", zero_name], ["y"], name="quant1", axis=1)
    out = zero.dtype if op == "QuantizeLinear" else np.float32
    return _model([node], {"x": x}, {"y": out}, {"s": scale, "z": zero})


@pytest.mark.parametrize("scale, message", [
    (np.float32(0.0), "scale 's' holds 0.0; a scale must be finite and non-zero"),
    (np.float32(np.nan), "scale 's' holds nan; a scale must be finite and non-zero"),
    (np.array([0.1, 0.2], np.float32),
     "'s' has shape [2]; per-axis parameters need one value per element of axis 1 (3)"),
])
def test_bad_scales_are_one_line_errors_naming_the_node(scale, message):
    zero = np.zeros(np.shape(scale), np.uint8)
    with pytest.raises(ModelError) as error:
        load_onnx(_bad_model(scale, zero))
    text = str(error.value)
    assert "\n" not in text and "node 'quant1' (QuantizeLinear)" in text and message in text


def test_a_zero_point_of_the_wrong_type_is_a_one_line_error():
    with pytest.raises(ModelError) as error:
        load_onnx(_bad_model(np.float32(0.1), np.array(3, np.int8), x_type=np.uint8))
    text = str(error.value)
    assert "\n" not in text and "node 'quant1' (DequantizeLinear)" in text
    assert "zero point 'z' is int8 but the quantized data is uint8" in text
