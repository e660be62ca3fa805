"""graph-calibrate / graph-quantize: power-of-two scales, the int8 layer functions'
semantics (bit for bit the accelerator's), and the quantized model against the float one."""

import numpy as np
import pytest
from xdsl.dialects import func
from xdsl.dialects.builtin import FloatAttr, ModuleOp, f64

import xweave
from xweave.accel.vta.layers import reference_conv2d_int8, reference_dense_int8
from xweave.context import make_context, parse_module
from xweave.dialects import graph
from xweave.dialects.interpreters import interpret, make_interpreter
from xweave.errors import InputError
from xweave.passes.quantize import (
    CALIBRATION_ATTR,
    GraphQuantizePass,
    Int8Layer,
    QuantizationError,
    calibrate,
    choose_exponents,
    exponent_for,
    int8_layer_functions,
    read_int8_layer,
)

CONV_MODEL = """
func.func @main(%x: tensor<1x4x8x8xf32>) -> tensor<1x3xf32>
    attributes {xweave.input_names = ["x"], xweave.output_names = ["y"]} {
  %w = graph.constant dense<0.0> : tensor<8x4x3x3xf32>
  %b = graph.constant dense<0.0> : tensor<8xf32>
  %c = graph.conv2d %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>,
       dilations = array<i64: 1, 1>, groups = 1 : i64}
       : (tensor<1x4x8x8xf32>, tensor<8x4x3x3xf32>, tensor<8xf32>) -> tensor<1x8x8x8xf32>
  %r = graph.relu %c : tensor<1x8x8x8xf32>
  %w2 = graph.constant dense<0.0> : tensor<8x8x3x3xf32>
  %c2 = graph.conv2d %r, %w2 {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>,
        dilations = array<i64: 1, 1>, groups = 1 : i64}
        : (tensor<1x8x8x8xf32>, tensor<8x8x3x3xf32>) -> tensor<1x8x4x4xf32>
  %r2 = graph.relu %c2 : tensor<1x8x4x4xf32>
  %g = graph.global_avg_pool2d %r2 : tensor<1x8x4x4xf32> -> tensor<1x8x1x1xf32>
  %f = graph.reshape %g : tensor<1x8x1x1xf32> -> tensor<1x8xf32>
  %w3 = graph.constant dense<0.0> : tensor<3x8xf32>
  %b3 = graph.constant dense<0.0> : tensor<3xf32>
  %d = graph.dense %f, %w3, %b3 : (tensor<1x8xf32>, tensor<3x8xf32>, tensor<3xf32>) -> tensor<1x3xf32>
  func.return %d : tensor<1x3xf32>
}
"""


def conv_model(seed=0) -> ModuleOp:
    """CONV_MODEL with random weights."""
    rng = np.random.default_rng(seed)
    module = parse_module(CONV_MODEL)
    main = next(iter(module.ops))
    for op in list(main.body.block.ops):
        if isinstance(op, graph.ConstantOp):
            shape = op.result.type.get_shape()
            scale = np.sqrt(2 / np.prod(shape[1:])) if len(shape) > 1 else 0.2
            new = graph.ConstantOp.from_array("p", (rng.standard_normal(shape) * scale)
                                              .astype(np.float32))
            main.body.block.insert_op_before(new, op)
            op.result.replace_all_uses_with(new.result)
            main.body.block.erase_op(op)
    module.verify()
    return module


def inputs(n, seed):
    return np.random.default_rng(seed).standard_normal((n, 1, 4, 8, 8)).astype(np.float32)


def test_exponents_are_the_finest_power_of_two_that_fits():
    for absmax in (0.01, 0.5, 1.0, 3.7, 127.0, 128.0, 1000.0):
        e = exponent_for(absmax)
        assert absmax * 2.0**e <= 127 < absmax * 2.0 ** (e + 1)
    assert exponent_for(0.0) == 0 and exponent_for(float("nan")) == 0
    q = choose_exponents(1.5, 0.25, 10.0)
    assert (q.input_exponent, q.weight_exponent, q.output_exponent, q.shift) == (6, 8, 3, 11)
    # An output much finer than the accumulator: no left shift, the output keeps 2^-(a+b).
    q = choose_exponents(100.0, 100.0, 0.001)
    assert q.shift == 0 and q.output_exponent == q.input_exponent + q.weight_exponent


def quantized_conv_model(seed=0):
    module = conv_model(seed)
    calibrate(module, {"x": inputs(32, seed=1)})
    float_module = module.clone()
    GraphQuantizePass().apply(make_context(), module)
    module.verify()
    return float_module, module


def test_calibrate_annotates_layers_with_observed_ranges():
    module = conv_model()
    x = inputs(3, seed=2)
    assert calibrate(module, {"x": x}) == 3
    ops = [op for op in next(iter(module.ops)).body.block.ops if CALIBRATION_ATTR in op.attributes]
    assert [op.name for op in ops] == ["graph.conv2d", "graph.conv2d", "graph.dense"]
    first = ops[0].attributes[CALIBRATION_ATTR].data
    assert first["input_absmax"].value.data == pytest.approx(np.abs(x).max())
    # The output range is measured after the fused relu: the second conv's input range.
    second = ops[1].attributes[CALIBRATION_ATTR].data
    assert first["output_absmax"].value.data == second["input_absmax"].value.data > 0


def test_calibration_samples_are_checked():
    module = conv_model()
    with pytest.raises(InputError, match=r"calibration input 'x': expected shape \[1, 4, 8, 8\]"):
        calibrate(module, {"x": np.zeros((4, 8, 8), np.float32)})
    with pytest.raises(InputError, match="missing input"):
        calibrate(module, [{"y": np.zeros((1, 4, 8, 8), np.float32)}])
    with pytest.raises(InputError, match="no samples"):
        calibrate(module, [])


def test_quantized_model_is_close_to_the_float_model():
    float_module, module = quantized_conv_model()
    calls = [op for op in next(iter(module.ops)).body.block.ops if isinstance(op, func.CallOp)]
    assert [c.callee.root_reference.data for c in calls] == [
        "int8_conv2d_0", "int8_conv2d_1", "int8_dense_0"]
    # conv1 -> relu -> conv2 share their int8 tensor: only 2 quantizations in @main.
    main_ops = [op.name for op in next(iter(module.ops)).body.block.ops]
    assert main_ops.count("graph.round") == 2 and "graph.relu" not in main_ops
    # On inputs inside the calibrated ranges (held-out inputs may clip: see
    # test_vta_model.py for those), only rounding errors remain: a few output steps.
    dense = [op for op in next(iter(float_module.ops)).body.block.ops
             if isinstance(op, graph.DenseOp)][0]
    output_range = dense.attributes[CALIBRATION_ATTR].data["output_absmax"].value.data
    for x in inputs(32, seed=1)[:6]:
        (ref,) = interpret(float_module, [x])
        (y,) = interpret(module, [x])
        assert np.abs(y - ref).max() < 0.04 * output_range


@pytest.mark.parametrize("relu", [False, True])
@pytest.mark.parametrize("kind", ["conv2d", "dense"])
def test_int8_layer_function_is_the_accelerator_semantics(kind, relu):
    """The outlined function, run by the graph interpreter, equals the accelerator's numpy
    reference bit for bit (floor shift, clip, relu), including negative accumulators."""
    _, module = quantized_conv_model()
    name = {"conv2d": "int8_conv2d_0", "dense": "int8_dense_0"}[kind]
    fn = int8_layer_functions(module)[name]
    clip = next(op for op in fn.body.block.ops if isinstance(op, graph.ClipOp))
    clip.properties["min"] = FloatAttr(0.0 if relu else -128.0, f64)
    layer = read_int8_layer(fn)
    assert layer.kind == kind and layer.relu == relu and 0 <= layer.shift <= 31

    rng = np.random.default_rng(7)
    x_type, w_type, b_type = fn.function_type.inputs.data
    x = rng.integers(-128, 128, x_type.get_shape(), dtype=np.int8)
    w = rng.integers(-128, 128, w_type.get_shape(), dtype=np.int8)
    b = rng.integers(-5000, 5000, b_type.get_shape(), dtype=np.int32)
    (y,) = make_interpreter(module).call_op(name, (x, w, b))
    if kind == "conv2d":
        ref = reference_conv2d_int8(x, w, b, layer.strides, layer.pads, layer.shift, relu)
    else:
        ref = reference_dense_int8(x, w, b, layer.shift, relu)
    assert y.dtype == np.int8
    np.testing.assert_array_equal(y, ref)
    assert (y < 0).any() != relu and (y > 0).any()


def test_read_int8_layer_rejects_other_functions():
    _, module = quantized_conv_model()
    fn = int8_layer_functions(module)["int8_conv2d_0"]
    assert read_int8_layer(fn) == Int8Layer("conv2d", read_int8_layer(fn).shift, True, (1, 1),
                                            (1, 1, 1, 1))
    floor = next(op for op in fn.body.block.ops if isinstance(op, graph.FloorOp))
    fn.body.block.insert_op_after(graph.FloorOp(floor.results[0]), floor)
    with pytest.raises(QuantizationError, match="@int8_conv2d_0: not an int8 layer function"):
        read_int8_layer(fn)

    fn = int8_layer_functions(module)["int8_dense_0"]
    scale = next(op for op in fn.body.block.ops if isinstance(op, graph.ConstantOp))
    other = graph.ConstantOp.from_array("s", np.array(0.3))
    fn.body.block.insert_op_after(other, scale)
    scale.result.replace_all_uses_with(other.result)
    fn.body.block.erase_op(scale)
    with pytest.raises(QuantizationError, match="not 2\\^-shift"):
        read_int8_layer(fn)


def test_quantized_small_cnn_keeps_its_prediction():
    from pathlib import Path

    path = Path(xweave.__file__).parent / "examples" / "small_cnn.onnx"
    module = xweave.load_onnx(path)
    x = np.random.default_rng(0).standard_normal((4, 1, 3, 32, 32)).astype(np.float32)
    calibrate(module, {"data": x})
    float_module = module.clone()
    GraphQuantizePass(min_in_channels=4).apply(make_context(), module)
    fns = int8_layer_functions(module)
    assert list(fns) == ["int8_conv2d_0", "int8_dense_0"]  # the RGB conv stays float
    for xi in x:
        (ref,) = interpret(float_module, [xi])
        (y,) = interpret(module, [xi])
        assert y.argmax() == ref.argmax()
        assert np.abs(y - ref).max() < 0.1 * np.abs(ref).max()
