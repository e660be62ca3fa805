"""graph-calibrate and graph-quantize: symmetric int8 quantization of conv2d/dense layers.

Quantization happens in two steps, both on the graph dialect:

1. `calibrate` (the `graph-calibrate{inputs=FILE.npz}` pass) runs the float model on
   sample inputs with the graph interpreter and records, on every conv2d/dense layer, the
   largest magnitude of its input and of its output (after a `graph.relu` that is the
   output's only user, which the int8 layer absorbs):

       graph.conv2d ... {xweave.calibration = {input_absmax = 2.5 : f64,
                                               output_absmax = 4.0 : f64}}

2. `graph-quantize` rewrites every calibrated layer into an int8 layer. Scales are powers
   of two (x = xq * 2^-e), as VTA's shift-only requantization needs: activations use one
   scale per tensor from the calibration, weights one scale per tensor from their values,
   the bias becomes int32 at the accumulator's scale, and the requantization to the
   output's scale is an arithmetic right shift. The rounding of that shift is folded into
   the bias (+2^(shift-1)), so `acc >> shift` rounds half up. The layer becomes a call of
   an outlined function whose body states the int8 semantics exactly in graph ops (the
   numpy emulation the accelerator must match bit for bit):

       %xq = <quantize: x * 2^a, round, clip to [-128, 127], cast to i8>
       %yq = func.call @int8_conv2d_0(%xq, %wq, %bq)
       %y  = <dequantize: cast to f32, * 2^-c>

       func.func private @int8_conv2d_0(%x: i8 tensor, %w: i8 tensor, %b: i32 tensor)
           -> i8 tensor attributes {xweave.int8_layer = "conv2d"} {
         acc = conv2d(cast<i32>(x), cast<i32>(w), b)       // int32 accumulation
         y   = cast<i8>(clip(floor(cast<f64>(acc) * 2^-shift), lo, 127))   // acc >> shift
       }                                                    // lo = 0 with a fused relu

   Consecutive int8 layers share the tensor between them when nothing else reads it, so
   no dequantize/quantize pair is left in between. `read_int8_layer` recovers the layer
   (kind, strides, pads, shift, relu) from such a function, for the accelerator back-ends.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseResourceAttr,
    DictionaryAttr,
    FloatAttr,
    FunctionType,
    ModuleOp,
    StringAttr,
    SymbolRefAttr,
    TensorType,
    f32,
    f64,
    i8,
    i32,
)
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from xweave.dialects import graph
from xweave.dialects.dtypes import numpy_dtype
from xweave.dialects.graph.constants import constant_value
from xweave.dialects.interpreters import make_interpreter
from xweave.errors import XweaveError
from xweave.quantizer import calibration_samples

CALIBRATION_ATTR = "xweave.calibration"
"""On a conv2d/dense op: {input_absmax, output_absmax} measured on sample inputs."""

LAYER_ATTR = "xweave.int8_layer"
"""On an outlined int8 layer function: its kind, "conv2d" or "dense"."""

QMAX = 127


class QuantizationError(XweaveError):
    """A model, a calibration file or an int8 layer function that quantization cannot use."""


# --------------------------------------------------------------------------------------
# Which layers, and their calibration
# --------------------------------------------------------------------------------------


def _main(module: ModuleOp) -> func.FuncOp:
    for op in module.ops:
        if isinstance(op, func.FuncOp) and op.sym_name.data == "main":
            return op
    raise QuantizationError("the module has no @main function")


def fused_relu(op: Operation) -> graph.ReluOp | None:
    """The relu an int8 layer absorbs: the only user of `op`'s result."""
    uses = list(op.results[0].uses)
    if len(uses) == 1 and isinstance(uses[0].operation, graph.ReluOp):
        return uses[0].operation
    return None


def quantizable(op: Operation, min_in_channels: int = 1) -> bool:
    """A float conv2d (ungrouped, undilated) or dense layer with constant weights
    (and bias) and at least `min_in_channels` input channels / features."""
    if not isinstance(op, graph.Conv2dOp | graph.DenseOp):
        return False
    if op.input.type.element_type != f32:  # pyright: ignore[reportAttributeAccessIssue]
        return False
    if not isinstance(op.weight.owner, graph.ConstantOp):
        return False
    if op.bias is not None and not isinstance(op.bias.owner, graph.ConstantOp):
        return False
    if isinstance(op, graph.Conv2dOp):
        if op.groups.value.data != 1 or tuple(op.dilations.get_values()) != (1, 1):
            return False
    channels = op.input.type.get_shape()[1]  # pyright: ignore[reportAttributeAccessIssue]
    return channels >= min_in_channels


def load_samples(source, module: ModuleOp) -> list[dict[str, np.ndarray]]:
    """Calibration samples for `module`'s inputs from a .npz path, a {name: array} dict
    or a list of dicts (`quantizer.calibration_samples`: an array with one more leading
    dimension than the model's input holds several samples)."""
    inputs = _input_specs(_main(module))
    return calibration_samples(source, {name: (shape, dtype) for name, shape, dtype in inputs})


def _input_specs(main: func.FuncOp) -> list[tuple[str, tuple[int, ...], np.dtype]]:
    """(name, shape, dtype) of each model input (names from `xweave.input_names`)."""
    names = main.attributes.get("xweave.input_names")
    types = main.function_type.inputs.data
    if isinstance(names, ArrayAttr):
        labels = [n.data for n in names.data if isinstance(n, StringAttr)]
    else:
        labels = [f"input{i}" for i in range(len(types))]
    return [(name, tuple(t.get_shape()), numpy_dtype(t.get_element_type()))  # pyright: ignore
            for name, t in zip(labels, types)]


def observe(module: ModuleOp, values: list[SSAValue], samples: list[dict[str, np.ndarray]],
            ) -> list[float]:
    """The largest |x| each of `values` (of @main) takes over `samples`, by interpreting a
    copy of the module whose @main also returns them."""
    main = _main(module)
    index = {v: i for i, v in enumerate(_main_values(main))}
    copy = module.clone()
    copy_main = _main(copy)
    copy_values = _main_values(copy_main)
    observed = [copy_values[index[v]] for v in values]
    ret = copy_main.body.block.last_op
    assert isinstance(ret, func.ReturnOp)
    Rewriter.replace_op(ret, func.ReturnOp(*ret.operands, *observed))
    copy_main.function_type = FunctionType.from_lists(
        copy_main.function_type.inputs.data,
        [*copy_main.function_type.outputs.data, *(v.type for v in observed)])
    names = [name for name, _, _ in _input_specs(main)]
    interpreter = make_interpreter(copy)
    absmax = [0.0] * len(values)
    n_out = len(main.function_type.outputs.data)
    for sample in samples:
        results = interpreter.call_op("main", tuple(sample[n] for n in names))
        for i, r in enumerate(results[n_out:]):
            absmax[i] = max(absmax[i], float(np.max(np.abs(r))) if np.size(r) else 0.0)
    return absmax


def _main_values(main: func.FuncOp) -> list[SSAValue]:
    values: list[SSAValue] = list(main.body.block.args)
    for op in main.body.block.ops:
        values.extend(op.results)
    return values


def calibrate(module: ModuleOp, samples, min_in_channels: int = 1) -> int:
    """Annotate every quantizable layer of @main with the ranges seen on `samples`
    (see `load_samples`); returns the number of layers annotated."""
    samples = load_samples(samples, module)
    layers = [op for op in _main(module).body.block.ops if quantizable(op, min_in_channels)]
    watched: list[SSAValue] = []
    for op in layers:
        relu = fused_relu(op)
        watched += [op.operands[0], (relu or op).results[0]]
    absmax = observe(module, watched, samples)
    for i, op in enumerate(layers):
        op.attributes[CALIBRATION_ATTR] = DictionaryAttr({
            "input_absmax": FloatAttr(absmax[2 * i], f64),
            "output_absmax": FloatAttr(absmax[2 * i + 1], f64),
        })
    return len(layers)


@dataclass(frozen=True)
class GraphCalibratePass(ModulePass):
    """Record input/output ranges of conv2d/dense layers, measured on sample inputs."""

    name = "graph-calibrate"

    inputs: str = ""
    """An .npz file with one array per model input (a leading extra dimension = samples)."""
    min_in_channels: int = 1
    """Layers with fewer input channels (features) are not calibrated."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if not self.inputs:
            raise QuantizationError("graph-calibrate needs inputs=FILE.npz")
        calibrate(op, self.inputs, self.min_in_channels)


# --------------------------------------------------------------------------------------
# Power-of-two scales
# --------------------------------------------------------------------------------------


def exponent_for(absmax: float, qmax: int = QMAX) -> int:
    """The largest e with absmax * 2^e <= qmax: the value's scale is 2^-e."""
    if not absmax > 0 or not math.isfinite(absmax):
        return 0
    return math.floor(math.log2(qmax / absmax))


def quantize_array(x: np.ndarray, exponent: int, dtype=np.int8, bound: int = QMAX) -> np.ndarray:
    """round(x * 2^exponent), clipped to [-bound, bound] (numpy rounds half to even)."""
    return np.clip(np.round(np.ldexp(x.astype(np.float64), exponent)), -bound, bound).astype(dtype)


# --------------------------------------------------------------------------------------
# The rewrite
# --------------------------------------------------------------------------------------


def _tensor(element, shape) -> TensorType:
    return TensorType(element, tuple(shape))


def _shape(value: SSAValue) -> tuple[int, ...]:
    return tuple(value.type.get_shape())  # pyright: ignore[reportAttributeAccessIssue]


def _weight_name(value: SSAValue, suffix: str) -> str:
    """A readable resource name for a rewritten weight: the original's, minus its hash."""
    const = value.owner
    if isinstance(const, graph.ConstantOp) and isinstance(const.value, DenseResourceAttr):
        return f"{const.value.resource_handle.data.rsplit('_', 1)[0]}_{suffix}"
    return f"weight_{suffix}"


def _scalar(name: str, value: float, dtype=np.float32) -> graph.ConstantOp:
    return graph.ConstantOp.from_array(name, np.array(value, dtype))


def quantize_ops(x: SSAValue, exponent: int) -> list[Operation]:
    """x (f32) -> clip(round(x * 2^exponent), -128, 127) as i8."""
    scale = _scalar("scale", 2.0 ** exponent)
    mul = graph.MulOp(x, scale.result)
    rnd = graph.RoundOp(mul.results[0])
    clip = graph.ClipOp(rnd.results[0], -128, 127)
    cast = graph.CastOp(clip.results[0], i8)
    return [scale, mul, rnd, clip, cast]


def dequantize_ops(q: SSAValue, exponent: int) -> list[Operation]:
    """q (i8) -> f32(q) * 2^-exponent."""
    cast = graph.CastOp(q, f32)
    scale = _scalar("scale", 2.0 ** -exponent)
    return [cast, scale, graph.MulOp(cast.results[0], scale.result)]


def int8_layer_function(name: str, layer: graph.Conv2dOp | graph.DenseOp, x_type: TensorType,
                        w_type: TensorType, b_type: TensorType, shift: int, relu: bool
                        ) -> func.FuncOp:
    """The outlined int8 layer: int32 accumulation, then clip(acc >> shift) to int8."""
    out_shape = _shape(layer.results[0])
    block = Block(arg_types=[x_type, w_type, b_type])
    x, w, b = block.args
    ops: list[Operation] = [graph.CastOp(x, i32), graph.CastOp(w, i32)]
    xi, wi = ops[0].results[0], ops[1].results[0]
    if isinstance(layer, graph.Conv2dOp):
        acc = graph.Conv2dOp(xi, wi, b, strides=layer.strides.get_values(),
                             pads=layer.pads.get_values(), result_type=_tensor(i32, out_shape))
    else:
        acc = graph.DenseOp(xi, wi, b, result_type=_tensor(i32, out_shape))
    as_f64 = graph.CastOp(acc.results[0], f64)
    scale = _scalar("shift", 2.0 ** -shift, np.float64)
    mul = graph.MulOp(as_f64.results[0], scale.result)
    floor = graph.FloorOp(mul.results[0])
    clip = graph.ClipOp(floor.results[0], 0 if relu else -128, 127)
    out = graph.CastOp(clip.results[0], i8)
    ops += [acc, as_f64, scale, mul, floor, clip, out, func.ReturnOp(out.results[0])]
    block.add_ops(ops)
    fn = func.FuncOp(name, ([x_type, w_type, b_type], [out.results[0].type]), Region(block),
                     visibility="private")
    fn.attributes[LAYER_ATTR] = StringAttr("conv2d" if isinstance(layer, graph.Conv2dOp)
                                           else "dense")
    return fn


@dataclass(frozen=True)
class QuantizedLayer:
    """The scales chosen for one layer (exponents e: scale = 2^-e)."""

    input_exponent: int
    weight_exponent: int
    output_exponent: int
    shift: int


def choose_exponents(input_absmax: float, weight_absmax: float, output_absmax: float
                     ) -> QuantizedLayer:
    """Power-of-two scales for a layer; the accumulator's exponent is a + b and the
    output's is a + b - shift, with 0 <= shift <= 31."""
    a, b = exponent_for(input_absmax), exponent_for(weight_absmax)
    c = exponent_for(output_absmax)
    shift = min(max(a + b - c, 0), 31)
    return QuantizedLayer(a, b, a + b - shift, shift)


def _calibration(op: Operation) -> tuple[float, float]:
    attr = op.attributes[CALIBRATION_ATTR]
    if not isinstance(attr, DictionaryAttr):
        raise QuantizationError(f"{op.name}: {CALIBRATION_ATTR} must be a dictionary")
    values = []
    for key in ("input_absmax", "output_absmax"):
        v = attr.data.get(key)
        if not isinstance(v, FloatAttr):
            raise QuantizationError(f"{op.name}: {CALIBRATION_ATTR} needs a float '{key}'")
        values.append(float(v.value.data))
    return values[0], values[1]


class _Quantizer:
    """Rewrites the calibrated layers of one module, remembering the int8 tensors it made
    so that a layer reading another's output reuses its int8 form."""

    def __init__(self, module: ModuleOp):
        self.module = module
        self.int8_of: dict[SSAValue, tuple[SSAValue, int]] = {}
        self.dequantize_ops: list[Operation] = []
        self.taken = {op.sym_name.data for op in module.ops if isinstance(op, func.FuncOp)}

    def _fresh(self, base: str) -> str:
        i = 0
        while f"{base}_{i}" in self.taken:
            i += 1
        self.taken.add(f"{base}_{i}")
        return f"{base}_{i}"

    def rewrite(self, op: graph.Conv2dOp | graph.DenseOp) -> None:
        input_absmax, output_absmax = _calibration(op)
        w = constant_value(op.weight.owner)  # pyright: ignore[reportArgumentType]
        bias = (constant_value(op.bias.owner)  # pyright: ignore[reportArgumentType]
                if op.bias is not None else np.zeros(_shape(op.weight)[0], np.float32))
        q = choose_exponents(input_absmax, float(np.max(np.abs(w))) if w.size else 0.0,
                             output_absmax)
        relu = fused_relu(op)
        before = InsertPoint.before(op)

        reuse = self.int8_of.get(op.input)
        if reuse is not None and reuse[1] == q.input_exponent:
            xq = reuse[0]
        else:
            ops = quantize_ops(op.input, q.input_exponent)
            Rewriter.insert_op(ops, before)
            xq = ops[-1].results[0]

        acc_exponent = q.input_exponent + q.weight_exponent
        bq = np.round(np.ldexp(bias.astype(np.float64), acc_exponent))
        if q.shift:
            bq += 2.0 ** (q.shift - 1)  # acc >> shift then rounds half up
        if np.max(np.abs(bq), initial=0) > 2**31 - 1:
            raise QuantizationError(f"{op.name}: the bias does not fit int32 at scale "
                                    f"2^-{acc_exponent}")
        wq = graph.ConstantOp.from_array(_weight_name(op.weight, "q"),
                                         quantize_array(w, q.weight_exponent))
        bc = graph.ConstantOp.from_array(
            _weight_name(op.bias, "q") if op.bias is not None else "qbias", bq.astype(np.int32))
        kind = "conv2d" if isinstance(op, graph.Conv2dOp) else "dense"
        fn = int8_layer_function(self._fresh(f"int8_{kind}"), op, xq.type, wq.result.type,
                                 bc.result.type, q.shift, relu is not None)
        self.module.body.block.add_op(fn)
        call = func.CallOp(SymbolRefAttr(fn.sym_name), [xq, wq.result, bc.result],
                           [fn.function_type.outputs.data[0]])
        deq = dequantize_ops(call.res[0], q.output_exponent)
        Rewriter.insert_op([wq, bc, call, *deq], before)
        self.dequantize_ops.extend(deq)
        out = (relu or op).results[0]
        out.replace_all_uses_with(deq[-1].results[0])
        self.int8_of[deq[-1].results[0]] = (call.res[0], q.output_exponent)
        if relu is not None:
            Rewriter.erase_op(relu)
        weight_ops = [v.owner for v in op.operands[1:]]
        Rewriter.erase_op(op)
        for c in weight_ops:
            if isinstance(c, graph.ConstantOp) and not c.result.uses:
                Rewriter.erase_op(c)

    def cleanup(self) -> None:
        """Drop the dequantize ops whose float result nobody reads (an int8 tensor passed
        straight to the next int8 layer)."""
        for op in reversed(self.dequantize_ops):
            if not op.results[0].uses:
                Rewriter.erase_op(op)


@dataclass(frozen=True)
class GraphQuantizePass(ModulePass):
    """Rewrite calibrated conv2d/dense layers into int8 layers with power-of-two scales."""

    name = "graph-quantize"

    min_in_channels: int = 1
    """Layers with fewer input channels (features) stay in float (e.g. 4 keeps an RGB
    input conv on the CPU)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        # The quantized weights are resource blobs: the printer needs builtin loaded.
        if ("builtin" in ctx.registered_dialect_names
                and all(d.name != "builtin" for d in ctx.loaded_dialects)):
            ctx.load_registered_dialect("builtin")
        quantizer = _Quantizer(op)
        for layer in list(_main(op).body.block.ops):
            if CALIBRATION_ATTR in layer.attributes and quantizable(layer, self.min_in_channels):
                quantizer.rewrite(layer)  # pyright: ignore[reportArgumentType]
        quantizer.cleanup()


# --------------------------------------------------------------------------------------
# Reading an int8 layer back (for the accelerator back-ends)
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Int8Layer:
    """An outlined int8 layer, as an accelerator runs it (`acc >> shift`, clip, relu)."""

    kind: str
    """"conv2d" or "dense"."""
    shift: int
    relu: bool
    strides: tuple[int, int] = (1, 1)
    pads: tuple[int, int, int, int] = (0, 0, 0, 0)
    """(top, left, bottom, right), as graph.conv2d's pads."""


def int8_layer_functions(module: ModuleOp) -> dict[str, func.FuncOp]:
    """The outlined int8 layer functions of `module`, by symbol name."""
    return {op.sym_name.data: op for op in module.ops
            if isinstance(op, func.FuncOp) and LAYER_ATTR in op.attributes}


def read_int8_layer(fn: func.FuncOp) -> Int8Layer:
    """Check that `fn` is exactly the int8 layer form `graph-quantize` writes and read its
    parameters; anything else is a QuantizationError naming the function."""

    def fail(what: str) -> QuantizationError:
        return QuantizationError(f"@{fn.sym_name.data}: not an int8 layer function ({what})")

    ops = list(fn.body.block.ops)
    kinds = [type(o) for o in ops]
    expected_tail = [graph.CastOp, graph.ConstantOp, graph.MulOp, graph.FloorOp, graph.ClipOp,
                     graph.CastOp, func.ReturnOp]
    if len(ops) != 10 or kinds[:2] != [graph.CastOp, graph.CastOp] or kinds[3:] != expected_tail:
        raise fail("unexpected ops " + ", ".join(o.name for o in ops))
    x, w, b = (list(fn.body.block.args) + [None] * 3)[:3]
    cx, cw, acc, f, scale, mul, floor, clip, out, ret = ops
    if len(fn.body.block.args) != 3 or cx.operands[0] is not x or cw.operands[0] is not w:
        raise fail("the arguments must be the int8 input, weight and int32 bias")
    for v, element in ((x, i8), (w, i8), (b, i32), (out.results[0], i8)):
        if v.type.element_type != element:  # pyright: ignore
            raise fail(f"expected {element} but got {v.type}")  # pyright: ignore
    if isinstance(acc, graph.Conv2dOp):
        kind = "conv2d"
        if acc.groups.value.data != 1 or tuple(acc.dilations.get_values()) != (1, 1):
            raise fail("grouped or dilated conv2d")
    elif isinstance(acc, graph.DenseOp):
        kind = "dense"
    else:
        raise fail(f"expected graph.conv2d or graph.dense but got {acc.name}")
    if acc.operands[:2] != (cx.results[0], cw.results[0]) or acc.bias is not b:
        raise fail("the accumulation must read the cast input, weight and the bias")
    chain = [(f, acc), (mul, f), (floor, mul), (clip, floor), (out, clip), (ret, out)]
    if any(user.operands[0] is not prev.results[0] for user, prev in chain):
        raise fail("the requantization ops must form one chain")
    if mul.operands[1] is not scale.results[0]:  # pyright: ignore
        raise fail("the accumulator must be scaled by a constant")
    s = float(constant_value(scale))  # pyright: ignore[reportArgumentType]
    shift = -math.log2(s) if s > 0 else -1
    if shift != int(shift) or not 0 <= shift <= 31:
        raise fail(f"the scale {s} is not 2^-shift with 0 <= shift <= 31")
    lo, hi = clip.min.value.data, clip.max.value.data  # pyright: ignore
    if (lo, hi) not in ((-128.0, 127.0), (0.0, 127.0)):
        raise fail(f"clip bounds must be [-128, 127] or [0, 127], got [{lo}, {hi}]")
    if kind == "conv2d":
        return Int8Layer(kind, int(shift), lo == 0.0, tuple(acc.strides.get_values()),  # pyright: ignore
                         tuple(acc.pads.get_values()))  # pyright: ignore
    return Int8Layer(kind, int(shift), lo == 0.0)


__all__ = [
    "CALIBRATION_ATTR",
    "LAYER_ATTR",
    "GraphCalibratePass",
    "GraphQuantizePass",
    "Int8Layer",
    "QuantizationError",
    "calibrate",
    "choose_exponents",
    "read_int8_layer",
]
