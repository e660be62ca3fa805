"""Elementwise ONNX operators: arithmetic, comparisons and logic, activations, casts."""

from __future__ import annotations

import numpy as np
import onnx
from xdsl.ir import SSAValue

from xweave.dialects import graph
from xweave.dialects.dtypes import element_type
from xweave.frontend.importer import Importer, element
from xweave.frontend.registry import NodeCheck, onnx_op

BINARY_OPS: dict[str, type[graph.BinaryOperation]] = {
    "Add": graph.AddOp,
    "Sub": graph.SubOp,
    "Mul": graph.MulOp,
    "Div": graph.DivOp,
    "Pow": graph.PowOp,
    "PRelu": graph.PreluOp,
}

VARIADIC_OPS: dict[str, type[graph.BinaryOperation]] = {
    "Max": graph.MaxOp,
    "Min": graph.MinOp,
    "Sum": graph.AddOp,
    "Mean": graph.AddOp,
}

COMPARE_OPS: dict[str, type[graph.CompareOperation]] = {
    "Equal": graph.EqualOp,
    "Less": graph.LessOp,
    "LessOrEqual": graph.LessEqualOp,
    "Greater": graph.GreaterOp,
    "GreaterOrEqual": graph.GreaterEqualOp,
}

LOGICAL_OPS: dict[str, type[graph.BinaryOperation]] = {
    "And": graph.AndOp,
    "Or": graph.OrOp,
    "Xor": graph.XorOp,
}

UNARY_OPS: dict[str, type[graph.UnaryOperation]] = {
    "Relu": graph.ReluOp,
    "Sigmoid": graph.SigmoidOp,
    "Tanh": graph.TanhOp,
    "Exp": graph.ExpOp,
    "Neg": graph.NegOp,
    "Sqrt": graph.SqrtOp,
    "Abs": graph.AbsOp,
    "Log": graph.LogOp,
    "Erf": graph.ErfOp,
    "Reciprocal": graph.ReciprocalOp,
    "Softplus": graph.SoftplusOp,
    "Softsign": graph.SoftsignOp,
    "Sign": graph.SignOp,
    "Floor": graph.FloorOp,
    "Ceil": graph.CeilOp,
    "Round": graph.RoundOp,
    "Sin": graph.SinOp,
    "Cos": graph.CosOp,
    "HardSwish": graph.HardSwishOp,
}

ACTIVATIONS: dict[str, tuple[type[graph.UnaryOperation], dict[str, float | str]]] = {
    "LeakyRelu": (graph.LeakyReluOp, {"alpha": 0.01}),
    "Elu": (graph.EluOp, {"alpha": 1.0}),
    "Selu": (graph.SeluOp, {"alpha": 1.67326319217681884765625,
                            "gamma": 1.05070102214813232421875}),
    "HardSigmoid": (graph.HardSigmoidOp, {"alpha": 0.2, "beta": 0.5}),
    "Gelu": (graph.GeluOp, {"approximate": "none"}),
    "Shrink": (graph.ShrinkOp, {"lambd": 0.5, "bias": 0.0}),
}
"""ONNX activation -> (graph op, its attributes with their ONNX defaults)."""


def _legacy_broadcast(imp: Importer, attrs: dict, a: str, b: str) -> SSAValue:
    """B of a binary op of opset < 7: `broadcast=1` with `axis` aligns B at axis."""
    if imp.opset < 7 and attrs.get("broadcast", 0) and "axis" in attrs:
        a_rank, b_shape = len(imp.shape(a)), imp.shape(b)
        axis = attrs["axis"] + a_rank if attrs["axis"] < 0 else attrs["axis"]
        return imp.reshaped(b, (*b_shape, *(1,) * (a_rank - axis - len(b_shape))))
    return imp.value(b)


def _prelu_slope(imp: Importer, node: onnx.NodeProto, x: str, slope: str) -> SSAValue:
    """PRelu's slope; a [C] slope applies to axis 1 (as opset < 7 and PyTorch)."""
    x_shape, s_shape = imp.shape(x), imp.shape(slope)
    if (len(s_shape) == 1 and len(x_shape) > 2 and s_shape[0] == x_shape[1]
            and s_shape[0] != x_shape[-1]):
        return imp.reshaped(slope, (s_shape[0], *(1,) * (len(x_shape) - 2)))
    return imp.data(node, slope)


@onnx_op(*BINARY_OPS)
def convert_binary(imp: Importer, node: onnx.NodeProto, attrs: dict) -> SSAValue:
    """Add, Sub, Mul (float or integer), Div, Pow, PRelu (float) of broadcast operands."""
    cls = BINARY_OPS[node.op_type]
    a, b = node.input[0], node.input[1]
    if node.op_type == "Pow" and b in imp.constants and imp.dtype(b) != np.float32:
        imp.constants[b] = imp.const_array(node, b).astype(np.float32)  # Pow(T, T1)
    kinds = "fi" if node.op_type in ("Add", "Sub", "Mul") else "f"
    lhs = imp.data(node, a, kinds)
    if node.op_type == "PRelu":
        rhs = _prelu_slope(imp, node, a, b)
    else:
        rhs = _legacy_broadcast(imp, attrs, a, b)
    if element(rhs) != element(lhs):
        raise imp.unsupported(node, f"operands of types {rhs.type} and {lhs.type}")
    return imp.emit(cls(lhs, rhs))


@onnx_op(*VARIADIC_OPS)
def convert_variadic(imp: Importer, node: onnx.NodeProto, attrs: dict) -> SSAValue:
    """Max, Min, Sum, Mean of any number of broadcast operands."""
    cls = VARIADIC_OPS[node.op_type]
    names = [n for n in node.input if n]
    result = imp.data(node, names[0], "fi" if node.op_type != "Mean" else "f")
    for name in names[1:]:
        result = imp.emit(cls(result, imp.data(node, name, "fi")))
    if node.op_type == "Mean" and len(names) > 1:
        result = imp.emit(graph.DivOp(result, imp.scalar(len(names))))
    return result


@onnx_op(*COMPARE_OPS, *LOGICAL_OPS)
def convert_compare(imp: Importer, node: onnx.NodeProto, attrs: dict) -> SSAValue:
    """Comparisons (any one operand type) and logic on bools: i1 results."""
    logical = node.op_type in LOGICAL_OPS
    cls = LOGICAL_OPS[node.op_type] if logical else COMPARE_OPS[node.op_type]
    a, b = node.input[0], node.input[1]
    lhs = imp.data(node, a, "b" if logical else "fib")
    rhs = _legacy_broadcast(imp, attrs, a, b)
    if element(rhs) != element(lhs):
        raise imp.unsupported(node, f"operands of types {lhs.type} and {rhs.type}")
    return imp.emit(cls(lhs, rhs))


@onnx_op("Not")
def convert_not(imp: Importer, node: onnx.NodeProto, attrs: dict) -> SSAValue:
    """Logical negation of bools."""
    return imp.emit(graph.NotOp(imp.data(node, node.input[0], "b")))


@onnx_op(*UNARY_OPS)
def convert_unary(imp: Importer, node: onnx.NodeProto, attrs: dict) -> SSAValue:
    """A float32 unary function without attributes."""
    return imp.emit(UNARY_OPS[node.op_type](imp.data(node, node.input[0])))


@onnx_op(*ACTIVATIONS)
def convert_activation(imp: Importer, node: onnx.NodeProto, attrs: dict) -> SSAValue:
    """An activation with attributes (their ONNX defaults where absent)."""
    cls, defaults = ACTIVATIONS[node.op_type]
    params = {k: attrs.get(k, v) for k, v in defaults.items()}
    return imp.emit(cls(imp.data(node, node.input[0]), **params))


def _evaluate_identity(imp: Importer, node: onnx.NodeProto, attrs: dict) -> list:
    return [imp.constants[node.input[0]]]


@onnx_op("Identity", evaluate=_evaluate_identity)
def convert_identity(imp: Importer, node: onnx.NodeProto, attrs: dict) -> SSAValue:
    """Its input."""
    return imp.value(node.input[0])


def _check_dropout(check: NodeCheck) -> str | None:
    return "a used mask output" if check.output_used(1) else None


@onnx_op("Dropout", check=_check_dropout, constant_inputs=(1, 2),
         constant_reason="a non-constant ratio or training_mode")
def convert_dropout(imp: Importer, node: onnx.NodeProto, attrs: dict) -> SSAValue:
    """Its input (inference mode)."""
    training = imp.optional_const(node, 2)
    if training is not None and bool(training.reshape(-1)[0]):
        raise imp.unsupported(node, "training_mode=1")
    return imp.value(node.input[0])  # inference mode


@onnx_op("Clip", constant_inputs=(1, 2), constant_reason="non-constant min/max")
def convert_clip(imp: Importer, node: onnx.NodeProto, attrs: dict) -> SSAValue:
    """Clip to bounds given as attributes (opset < 11) or constant inputs."""
    low, high = attrs.get("min", -np.inf), attrs.get("max", np.inf)  # opset < 11
    if (lo := imp.optional_const(node, 1)) is not None:
        low = float(lo.reshape(-1)[0])
    if (hi := imp.optional_const(node, 2)) is not None:
        high = float(hi.reshape(-1)[0])
    return imp.emit(graph.ClipOp(imp.data(node, node.input[0]), low, high))


@onnx_op("Where")
def convert_where(imp: Importer, node: onnx.NodeProto, attrs: dict) -> SSAValue:
    """Select by a bool condition between two operands of one element type."""
    cond = imp.data(node, node.input[0], "b")
    x = imp.data(node, node.input[1], "fib")
    y = imp.data(node, node.input[2], "fib")
    if element(x) != element(y):
        raise imp.unsupported(node, f"operands of types {x.type} and {y.type}")
    return imp.emit(graph.WhereOp(cond, x, y))


def _cast_to(imp: Importer, node: onnx.NodeProto, name: str, target: np.dtype) -> SSAValue:
    source = imp.dtype(name)
    if source == target:
        return imp.value(name)
    kinds = (np.float32, np.int64, np.int32, np.bool_, np.uint8, np.int8)
    if target not in kinds or source not in kinds:
        raise imp.unsupported(node, f"a cast from {source} to {target} of run-time data")
    return imp.emit(graph.CastOp(imp.value(name), element_type(target)))


@onnx_op("Cast")
def convert_cast(imp: Importer, node: onnx.NodeProto, attrs: dict) -> SSAValue:
    """A cast between float32, int64, int32, uint8, int8 and bool (a float out of an
    integer type's range has no defined result, as in ONNX)."""
    target = np.dtype(onnx.helper.tensor_dtype_to_np_dtype(attrs["to"]))
    return _cast_to(imp, node, node.input[0], target)


def _evaluate_cast_like(imp: Importer, node: onnx.NodeProto, attrs: dict) -> list:
    return [np.asarray(imp.constants[node.input[0]]).astype(imp.dtype(node.input[1]))]


@onnx_op("CastLike", evaluate=_evaluate_cast_like, import_time_inputs=(0,))
def convert_cast_like(imp: Importer, node: onnx.NodeProto, attrs: dict) -> SSAValue:
    """A cast to the element type of the second input (whose type alone is read)."""
    return _cast_to(imp, node, node.input[0], imp.dtype(node.input[1]))
