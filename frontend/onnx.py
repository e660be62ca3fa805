"""ONNX -> graph dialect.

`load_onnx` reads a model (file or `onnx.ModelProto`), binds symbolic input
dimensions, checks that every operator is supported (one `UnsupportedOpsError`
listing them all), and builds a verified graph-stage module:

    func.func @main(<graph inputs in ONNX order>) -> (<graph outputs in order>)
        attributes {xweave.input_names = [...], xweave.output_names = [...]}

Constant evaluation: a node whose inputs are all constants (initializers, `Constant`
nodes, earlier folded nodes), and every `Shape`/`Size` (input shapes are static), is
evaluated at import time with numpy (ONNX's reference implementation), so the
Shape -> Gather -> Unsqueeze -> Concat -> Reshape chains of exported PyTorch/Keras
models, `ConstantOfShape`, casts of shape tensors, ... become constants. Constants
become `graph.constant` (named after the ONNX tensor) only where a graph op uses them
as data; int64/bool tensors that only feed shapes never reach the compiled model.

Result shapes come from the graph ops' own shape rules; ONNX's inferred shapes, where
known, cross-check them. Attribute-vs-input forms of every opset from 9 to 21 (and the
legacy broadcast of opset < 7) are handled per operator below.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from math import ceil, prod
from pathlib import Path

import numpy as np
import onnx
from onnx import numpy_helper
from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, ModuleOp, StringAttr, TensorType, i1
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.utils.exceptions import VerifyException

from xweave.dialects import graph
from xweave.dialects.dtypes import element_type, numpy_dtype
from xweave.dialects.graph.shapes import broadcast_shape, gather_output_shape
from xweave.errors import ModelError, UnsupportedOpsError, XweaveError
from xweave.frontend.onnx_checks import (
    MAX_RUNTIME_ELEMENTS,
    check_model,
    check_size,
    check_ranks,
    check_window,
    default_opset,
    initializer_arrays,
    node_label,
)

__all__ = ["load_onnx", "SUPPORTED_OPS"]

_BINARY_OPS: dict[str, type[graph.BinaryOperation]] = {
    "Add": graph.AddOp,
    "Sub": graph.SubOp,
    "Mul": graph.MulOp,
    "Div": graph.DivOp,
    "Pow": graph.PowOp,
    "PRelu": graph.PreluOp,
}

_VARIADIC_OPS: dict[str, type[graph.BinaryOperation]] = {
    "Max": graph.MaxOp,
    "Min": graph.MinOp,
    "Sum": graph.AddOp,
    "Mean": graph.AddOp,
}

_COMPARE_OPS: dict[str, type[graph.CompareOperation]] = {
    "Equal": graph.EqualOp,
    "Less": graph.LessOp,
    "LessOrEqual": graph.LessEqualOp,
    "Greater": graph.GreaterOp,
    "GreaterOrEqual": graph.GreaterEqualOp,
}

_LOGICAL_OPS: dict[str, type[graph.BinaryOperation]] = {
    "And": graph.AndOp,
    "Or": graph.OrOp,
    "Xor": graph.XorOp,
}

_UNARY_OPS: dict[str, type[graph.UnaryOperation]] = {
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

_ACTIVATIONS: dict[str, tuple[type[graph.UnaryOperation], dict[str, float | str]]] = {
    "LeakyRelu": (graph.LeakyReluOp, {"alpha": 0.01}),
    "Elu": (graph.EluOp, {"alpha": 1.0}),
    "Selu": (graph.SeluOp, {"alpha": 1.67326319217681884765625,
                            "gamma": 1.05070102214813232421875}),
    "HardSigmoid": (graph.HardSigmoidOp, {"alpha": 0.2, "beta": 0.5}),
    "Gelu": (graph.GeluOp, {"approximate": "none"}),
    "Shrink": (graph.ShrinkOp, {"lambd": 0.5, "bias": 0.0}),
}
"""ONNX activation -> (graph op, its attributes with their ONNX defaults)."""

_REDUCE_OPS = {
    "ReduceSum": "sum", "ReduceMean": "mean", "ReduceMax": "max", "ReduceMin": "min",
    "ReduceProd": "prod", "ReduceL1": "l1", "ReduceL2": "l2", "ReduceSumSquare": "sum_square",
    "ReduceLogSum": "log_sum", "ReduceLogSumExp": "log_sum_exp",
}

_REDUCE_AXES_INPUT_OPSET = {"ReduceSum": 13}
"""The opset from which a reduction takes its axes as an input (18 for the others)."""

_NONDETERMINISTIC = {"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike",
                     "Bernoulli", "Multinomial"}
"""Never evaluated at import time."""

_SHAPE_INPUTS: dict[str, tuple[int, ...]] = {
    "Reshape": (1,), "Expand": (1,), "Tile": (1,), "Slice": (1, 2, 3, 4), "Split": (1,),
    "Squeeze": (1,), "Unsqueeze": (1,), "Pad": (1, 3), **{op: (1,) for op in _REDUCE_OPS},
}
"""Inputs that decide an output's shape: they must be known at import time. (Operators
such as ConstantOfShape, Range or NonZero are only ever evaluated at import time: on
run-time data they are unsupported.)"""

_VALUE_INPUTS: dict[str, tuple[tuple[int, ...], str]] = {
    "Clip": ((1, 2), "non-constant min/max"),
    "Pad": ((2,), "a non-constant pad value"),
    "Dropout": ((1, 2), "a non-constant ratio or training_mode"),
}
"""Inputs read at import time (not shapes): non-constant ones are unsupported."""


# --------------------------------------------------------------------------------------
# Reading the model
# --------------------------------------------------------------------------------------


def _read_model(path_or_model: str | Path | onnx.ModelProto) -> tuple[onnx.ModelProto, str]:
    if isinstance(path_or_model, onnx.ModelProto):
        return path_or_model, f"model '{path_or_model.graph.name or '<unnamed>'}'"
    path = Path(path_or_model)
    if not path.is_file():
        raise ModelError(f"{path}: no such model file")
    try:
        model = onnx.load(str(path))
    except Exception as e:  # protobuf DecodeError, external data errors, ...
        raise ModelError(f"{path}: not a readable ONNX model ({type(e).__name__}: {e})") from e
    if not model.HasField("graph") or not model.graph.output:
        raise ModelError(f"{path}: not a readable ONNX model (no graph outputs)")
    return model, str(path)


def _attributes(node: onnx.NodeProto) -> dict[str, object]:
    attrs = {}
    for a in node.attribute:
        value = onnx.helper.get_attribute_value(a)
        attrs[a.name] = value.decode() if isinstance(value, bytes) else value
    return attrs


def _node_label(node: onnx.NodeProto, index: int) -> str:
    return node.name or f"#{index} (-> {', '.join(o for o in node.output if o) or '?'})"


def _dims(value_info: onnx.ValueInfoProto) -> list[int | str | None] | None:
    """Dims of a value_info: ints, symbolic names, None for unknown; None if unranked."""
    t = value_info.type.tensor_type
    if not t.HasField("shape"):
        return None
    dims: list[int | str | None] = []
    for d in t.shape.dim:
        if d.HasField("dim_value"):
            dims.append(d.dim_value)
        elif d.HasField("dim_param"):
            dims.append(d.dim_param)
        else:
            dims.append(None)
    return dims


def _bind_input_shapes(
    model: onnx.ModelProto,
    inputs: list[onnx.ValueInfoProto],
    input_shapes: dict[str, tuple[int, ...]],
) -> None:
    """Write `input_shapes` into the (copied) model's input declarations."""
    by_name = {v.name: v for v in inputs}
    unknown = sorted(set(input_shapes) - set(by_name))
    if unknown:
        raise ModelError(
            f"input_shapes names unknown inputs {unknown}; the model's inputs are "
            f"{list(by_name)}"
        )
    for name, shape in input_shapes.items():
        declared = _dims(by_name[name])
        shape = tuple(int(d) for d in shape)
        if declared is not None:
            if len(declared) != len(shape):
                raise ModelError(
                    f"input '{name}': input_shapes gives rank {len(shape)} {list(shape)} "
                    f"but the model declares rank {len(declared)}"
                )
            for i, (d, s) in enumerate(zip(declared, shape)):
                if isinstance(d, int) and d != s:
                    raise ModelError(
                        f"input '{name}': input_shapes gives {s} for dimension {i} "
                        f"but the model fixes it to {d}"
                    )
        tensor_type = by_name[name].type.tensor_type
        tensor_type.ClearField("shape")
        for s in shape:
            tensor_type.shape.dim.add().dim_value = s


def _inferred_or_none(model: onnx.ModelProto, strict: bool) -> onnx.ModelProto | None:
    try:
        return onnx.shape_inference.infer_shapes(model, strict_mode=strict)
    except Exception:
        return None


def _ranks(model: onnx.ModelProto) -> dict[str, int]:
    """Ranks of every tensor whose rank is known (after shape inference)."""
    g = model.graph
    ranks = {v.name: len(d) for v in (*g.input, *g.value_info, *g.output) if (d := _dims(v)) is not None}
    ranks.update({t.name: len(t.dims) for t in g.initializer})
    return ranks


def _constant_node_value(node: onnx.NodeProto) -> np.ndarray:
    a = node.attribute[0]
    value = onnx.helper.get_attribute_value(a)
    if a.name in ("value", "sparse_value"):
        if a.name == "sparse_value":
            raise ModelError(f"Constant '{node.name}': sparse constants are not supported")
        return numpy_helper.to_array(value)
    dtypes = {"value_float": np.float32, "value_floats": np.float32, "value_int": np.int64}
    return np.asarray(value, dtype=dtypes.get(a.name, np.int64 if "int" in a.name else None))


# --------------------------------------------------------------------------------------
# Import-time evaluation and the support check (before any conversion)
# --------------------------------------------------------------------------------------


def _is_default_domain(node: onnx.NodeProto) -> bool:
    return node.domain in ("", "ai.onnx")


def _has_subgraph(node: onnx.NodeProto) -> bool:
    return any(a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS)
               for a in node.attribute)


def _plan(nodes: Sequence[onnx.NodeProto], constants: set[str]) -> tuple[set[int], set[str]]:
    """(indices of the nodes evaluated at import time, every tensor known then)."""
    known = set(constants)
    folded: set[int] = set()
    for index, node in enumerate(nodes):
        if not _is_default_domain(node) or node.op_type in _NONDETERMINISTIC or _has_subgraph(node):
            continue
        inputs = [n for n in node.input if n]
        if node.op_type == "CastLike":  # needs only the second input's (static) type
            inputs = inputs[:1]
        if (node.op_type in ("Constant", "Shape", "Size")
                or (inputs and all(n in known for n in inputs))):
            folded.add(index)
            known.update(o for o in node.output if o)
    return folded, known


def _check_node(
    node: onnx.NodeProto, attrs: dict, known: set[str], ranks: dict[str, int], used: set[str],
    opset: int,
) -> str | None:
    """Why this node (converted to graph ops) cannot be imported, or None."""
    op = node.op_type

    def rank(i: int) -> int | None:
        return ranks.get(node.input[i]) if len(node.input) > i else None

    def output_used(i: int) -> bool:
        return len(node.output) > i and node.output[i] in used

    for indices, reason in [_VALUE_INPUTS[op]] if op in _VALUE_INPUTS else []:
        if any(len(node.input) > i and node.input[i] and node.input[i] not in known
               for i in indices):
            return reason
    if op in ("Conv", "ConvTranspose"):
        r = rank(1)
        if r is not None and r not in (3, 4):
            return f"{r - 2}-D convolution (only 1-D and 2-D)"
        if op == "ConvTranspose" and r is None and len(attrs.get("kernel_shape", (1,))) > 2:
            return f"{len(attrs['kernel_shape'])}-D convolution (only 1-D and 2-D)"
    elif op in ("MaxPool", "AveragePool"):
        if len(attrs.get("kernel_shape", ())) not in (1, 2):
            return f"{len(attrs.get('kernel_shape', ()))}-D pooling (only 1-D and 2-D)"
        if op == "MaxPool" and attrs.get("storage_order", 0) != 0:
            return "storage_order=1"
        if op == "MaxPool" and output_used(1):
            return "the Indices output"
        if op == "AveragePool" and any(d != 1 for d in attrs.get("dilations", ())):
            return "dilated average pooling"
    elif op == "Dropout":
        if output_used(1):
            return "a used mask output"
    elif op == "MatMul":
        if rank(0) is not None and rank(1) is not None and min(rank(0), rank(1)) < 1:
            return "scalar operands"
    elif op == "BatchNormalization":
        if any(output_used(i) for i in range(1, len(node.output))):
            return "training outputs (running or saved statistics)"
        if attrs.get("training_mode", 0):
            return "training_mode=1"
        if opset < 9 and attrs.get("spatial", 1) == 0:
            return "spatial=0"
    elif op == "LayerNormalization":
        if output_used(1) or output_used(2):
            return "the Mean/InvStdDev outputs"
    elif op == "Pad":
        if attrs.get("mode", "constant") not in graph.PAD_MODES:
            return f"mode '{attrs['mode']}'"
    elif op == "LRN":
        if rank(0) is not None and rank(0) < 3:
            return "an input of rank < 3"
    return None


def _unsupported(
    nodes: Sequence[onnx.NodeProto], folded: set[int], known: set[str], ranks: dict[str, int],
    used: set[str], opset: int,
) -> dict[str, list[str]]:
    """{unsupported op type (and why): [node labels]}; ranks may be empty (not inferred)."""
    problems: dict[str, list[str]] = {}
    for index, node in enumerate(nodes):
        if index in folded:
            continue
        label = _node_label(node, index)
        key = node.op_type if _is_default_domain(node) else f"{node.domain}.{node.op_type}"
        if key not in SUPPORTED_OPS:
            problems.setdefault(key, []).append(label)
            continue
        reason = _check_node(node, _attributes(node), known, ranks, used, opset)
        if reason is not None:
            problems.setdefault(f"{key} with {reason}", []).append(label)
    return problems


def _unsupported_error(problems: dict[str, list[str]]) -> UnsupportedOpsError:
    listing = "; ".join(f"{op} (nodes: {', '.join(labels)})" for op, labels in problems.items())
    error = UnsupportedOpsError(f"unsupported ONNX operators: {listing}")
    error.ops = problems  # pyright: ignore[reportAttributeAccessIssue]
    return error


def _check_shape_inputs(
    nodes: Sequence[onnx.NodeProto], folded: set[int], known: set[str], used: set[str],
    source: str,
) -> None:
    """A ModelError naming the first tensor whose shape depends on run-time data."""
    for index, node in enumerate(nodes):
        if index in folded or not any(o in used for o in node.output if o):
            continue
        for i in _SHAPE_INPUTS.get(node.op_type, ()):
            if len(node.input) > i and node.input[i] and node.input[i] not in known:
                raise ModelError(
                    f"{source}: the shape of tensor '{node.output[0]}' (output of "
                    f"{node.op_type} '{_node_label(node, index)}') cannot be inferred "
                    f"statically: its input '{node.input[i]}' is computed at run time"
                )


def _evaluate(node: onnx.NodeProto, inputs: list[np.ndarray | None], opset: int) -> list:
    """The outputs of `node` on constant inputs, by ONNX's reference implementation."""
    from onnx.reference import ReferenceEvaluator

    feeds = {n: v for n, v in zip(node.input, inputs) if n}
    # A one-node model: the evaluator honours a model's opset (not a bare node's).
    untyped = onnx.TypeProto()
    graph_proto = onnx.helper.make_graph(
        [node], "fold", [onnx.helper.make_value_info(n, untyped) for n in feeds],
        [onnx.helper.make_value_info(o, untyped) for o in node.output if o])
    model = onnx.helper.make_model(graph_proto, opset_imports=[onnx.helper.make_opsetid("", opset)])
    return list(ReferenceEvaluator(model).run(None, feeds))


# --------------------------------------------------------------------------------------
# Conversion
# --------------------------------------------------------------------------------------


def _same_pads(
    sizes: Sequence[int], kernel: Sequence[int], strides: Sequence[int],
    dilations: Sequence[int], mode: str,
) -> list[int]:
    """Explicit [begin..., end...] pads for auto_pad SAME_UPPER / SAME_LOWER."""
    begins, ends = [], []
    for size, k, s, d in zip(sizes, kernel, strides, dilations):
        total = max(0, (ceil(size / s) - 1) * s + d * (k - 1) + 1 - size)
        small, large = total // 2, total - total // 2
        begins.append(small if mode == "SAME_UPPER" else large)
        ends.append(large if mode == "SAME_UPPER" else small)
    return begins + ends


def _window_attrs(
    attrs: dict, sizes: Sequence[int], kernel: Sequence[int], dilate: bool = True
) -> tuple[list[int], list[int], list[int]]:
    """(strides, pads [top, left, bottom, right], dilations) of a conv/pool node."""
    strides = list(attrs.get("strides", [1, 1]))
    dilations = list(attrs.get("dilations", [1, 1])) if dilate else [1, 1]
    auto_pad = attrs.get("auto_pad", "NOTSET")
    if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        pads = _same_pads(sizes, kernel, strides, dilations, auto_pad)
    elif auto_pad == "VALID":
        pads = [0, 0, 0, 0]
    else:
        pads = list(attrs.get("pads", [0, 0, 0, 0]))
    return strides, pads, dilations


def _lift_1d(attrs: dict) -> dict:
    """The attributes of a 1-D conv/pool as those of the 2-D op on [N, C, 1, L] data."""
    lifted = dict(attrs)
    for key in ("kernel_shape", "strides", "dilations", "output_padding", "output_shape"):
        if key in attrs:
            lifted[key] = [1, *attrs[key]]
    if "pads" in attrs:
        lifted["pads"] = [0, attrs["pads"][0], 0, attrs["pads"][1]]
    return lifted


def _normalize_axes(axes: Sequence[int], rank: int, node: onnx.NodeProto) -> list[int]:
    result = []
    for a in axes:
        a = int(a)
        if not -rank <= a < max(rank, 1):
            raise ModelError(f"{node.op_type} '{node.name}': axis {a} is out of range for rank {rank}")
        result.append(a + rank if a < 0 else a)
    return result


@dataclass
class _Importer:
    """State of one conversion: ONNX names -> SSA values, known constants, shapes.

    Result shapes come from the graph ops' own shape rules; ONNX's inferred shapes
    (where static) cross-check them. The one known disagreement: with ceil_mode, ONNX
    shape inference may keep a last window that starts in the end padding, which
    onnxruntime (and the graph dialect) drop; from there on the graph's shapes are
    followed.
    """

    onnx_shapes: dict[str, tuple[int, ...]]
    constants: dict[str, np.ndarray]
    block: Block
    opset: int
    source: str = "model"
    values: dict[str, SSAValue] = field(default_factory=dict)
    diverged: set[str] = field(default_factory=set)
    index: int = 0
    node: onnx.NodeProto = field(default_factory=onnx.NodeProto)  # being converted

    # ---- values, constants and shapes --------------------------------------------------

    def emit(self, op: Operation) -> SSAValue:
        try:
            op.verify()
        except VerifyException as e:
            raise ModelError(f"{self.source}: {self.label}: {e}") from None
        self.block.add_op(op)
        return op.results[0]

    def input_shapes(self) -> str:
        """The shapes of the node's inputs, for errors."""
        shown = []
        for name in self.node.input:
            if name in self.values or name in self.constants:
                shown.append(f"'{name}' {list(self.shape(name))}")
        return "inputs: " + (", ".join(shown) or "none known")

    @property
    def label(self) -> str:
        """The node being imported, as errors name it."""
        return node_label(self.node, self.index)

    def constant(self, name: str, array: np.ndarray) -> SSAValue:
        return self.emit(graph.ConstantOp.from_array(name, array))

    def value(self, name: str) -> SSAValue:
        """The SSA value of ONNX tensor `name`; constants are emitted on first use."""
        if name not in self.values:
            if name not in self.constants:
                raise ModelError(f"tensor '{name}' is used before it is defined")
            array = np.asarray(self.constants[name])
            if array.dtype not in (np.float32, np.int64, np.int32, np.bool_):
                raise ModelError(
                    f"constant '{name}' has dtype {array.dtype}; only float32 data (and "
                    "int32/int64/bool indices and conditions) is supported"
                )
            if array.size == 0:
                raise self.unsupported(self.node, f"an empty tensor ('{name}' of shape "
                                                  f"{list(array.shape)})")
            if array.dtype == np.bool_:
                # convert-loop-to-llvm has no parameter storage for i1: bool constants are
                # stored as i8 and cast (a constant-folding pass may fold this back).
                stored = self.constant(name, array.astype(np.int8))
                self.values[name] = self.emit(graph.CastOp(stored, i1))
            else:
                self.values[name] = self.constant(name, array)
        return self.values[name]

    def dtype(self, name: str) -> np.dtype:
        if name in self.values:
            return numpy_dtype(self.values[name].type.element_type)  # pyright: ignore
        return np.asarray(self.constants[name]).dtype

    def shape(self, name: str) -> tuple[int, ...]:
        if name in self.values:
            return self.values[name].type.get_shape()  # pyright: ignore[reportAttributeAccessIssue]
        if name in self.constants:
            return tuple(np.shape(self.constants[name]))
        raise ModelError(f"tensor '{name}' is used before it is defined")

    def const_array(self, node: onnx.NodeProto, name: str) -> np.ndarray:
        if name not in self.constants:
            raise ModelError(f"{node.op_type} '{node.name}': input '{name}' must be a constant")
        return np.asarray(self.constants[name])

    def optional_const(self, node: onnx.NodeProto, i: int) -> np.ndarray | None:
        """Input i as a constant array, None if absent."""
        if len(node.input) > i and node.input[i]:
            return self.const_array(node, node.input[i])
        return None

    def unsupported(self, node: onnx.NodeProto, reason: str) -> UnsupportedOpsError:
        return _unsupported_error({f"{node.op_type} with {reason}": [_node_label(node, self.index)]})

    def data(self, node: onnx.NodeProto, name: str, kinds: str = "f") -> SSAValue:
        """The value of `name`, whose dtype kind must be in `kinds` (f, i, b)."""
        dtype = self.dtype(name)
        if dtype.kind not in kinds or (dtype.kind == "f" and dtype != np.float32):
            raise self.unsupported(node, f"{dtype} data ('{name}')")
        return self.value(name)

    def reshaped(self, name: str, shape: Sequence[int]) -> SSAValue:
        """Tensor `name` reshaped (a new constant when it is one)."""
        shape = tuple(int(d) for d in shape)
        if name in self.constants:
            array = np.asarray(self.constants[name]).reshape(shape)
            return self.constant(name, np.ascontiguousarray(array))
        return self.reshape(self.value(name), shape)

    def reshape(self, value: SSAValue, shape: Sequence[int]) -> SSAValue:
        if tuple(self.shape_of_value(value)) == tuple(shape):
            return value
        return self.emit(graph.ReshapeOp(value, shape))

    @staticmethod
    def shape_of_value(value: SSAValue) -> tuple[int, ...]:
        return value.type.get_shape()  # pyright: ignore[reportAttributeAccessIssue]

    def scalar(self, value: float) -> SSAValue:
        return self.constant("scalar", np.float32(value))

    # ---- driving ---------------------------------------------------------------------

    def fold(self, node: onnx.NodeProto) -> None:
        """Evaluate a node whose inputs are known, at import time."""
        attrs = _attributes(node)
        op = node.op_type
        if op == "Constant":
            outputs = [_constant_node_value(node)]
        elif op == "ConstantOfShape":  # common (weights of exported "light" models): fast path
            value = attrs.get("value")
            fill = numpy_helper.to_array(value).reshape(-1) if value is not None else \
                np.zeros(1, np.float32)
            shape = [int(d) for d in np.asarray(self.constants[node.input[0]]).reshape(-1)]
            if any(d < 0 for d in shape):
                raise ModelError(f"{self.source}: {self.label}: negative dimension in "
                                 f"shape {shape}")
            check_size(self.source, f"{self.label}: output '{node.output[0]}'", shape)
            outputs = [np.full(shape, fill[0], dtype=fill.dtype)]
        elif op == "Identity":
            outputs = [self.constants[node.input[0]]]
        elif op == "CastLike":
            outputs = [np.asarray(self.constants[node.input[0]]).astype(self.dtype(node.input[1]))]
        elif op in ("Shape", "Size"):
            shape = self.shape(node.input[0])
            if op == "Size":
                outputs = [np.array(prod(shape), np.int64)]
            else:
                start, end = attrs.get("start", 0), attrs.get("end", len(shape))
                outputs = [np.array(shape[start:end] if "end" in attrs else shape[start:],
                                    np.int64)]
        else:
            for out in node.output:
                if out in self.onnx_shapes:
                    check_size(self.source, f"{self.label}: output '{out}'", self.onnx_shapes[out],
                               MAX_RUNTIME_ELEMENTS)
            inputs = [np.asarray(self.constants[n]) if n else None for n in node.input]
            try:
                outputs = _evaluate(node, inputs, self.opset)
            except Exception as e:
                raise _unsupported_error({
                    f"{op} (import-time evaluation failed: {type(e).__name__}: {e})":
                        [_node_label(node, self.index)]
                }) from e
        for name, array in zip(node.output, outputs):
            if name:
                self.constants[name] = np.asarray(array)

    def convert(self, node: onnx.NodeProto) -> None:
        attrs = _attributes(node)
        op = node.op_type
        handler: Callable[[onnx.NodeProto, dict], SSAValue | list[SSAValue]]
        if op in _BINARY_OPS:
            handler = self.op_binary
        elif op in _VARIADIC_OPS:
            handler = self.op_variadic
        elif op in _COMPARE_OPS or op in _LOGICAL_OPS:
            handler = self.op_compare
        elif op in _UNARY_OPS:
            handler = self.op_unary
        elif op in _ACTIVATIONS:
            handler = self.op_activation
        elif op in _REDUCE_OPS:
            handler = self.op_reduce
        else:
            handler = getattr(self, f"op_{op}")
        for name in node.input:
            if name in self.values and 0 in self.shape(name):
                raise self.unsupported(node, f"an empty input ('{name}' of shape "
                                             f"{list(self.shape(name))})")
        results = handler(node, attrs)
        if not isinstance(results, list):
            results = [results]
        for out, result in zip(node.output, results):
            if not out:
                continue
            expected, got = self.onnx_shapes.get(out), self.shape_of_value(result)
            check_size(self.source, f"{self.label}: output '{out}'", got, MAX_RUNTIME_ELEMENTS)
            if 0 in got:
                raise self.unsupported(node, f"an empty result ('{out}' of shape {list(got)})")
            if expected is not None and got != expected:
                pooled = op in ("MaxPool", "AveragePool") and attrs.get("ceil_mode", 0)
                if not pooled and not self.diverged.intersection(node.input):
                    raise ModelError(
                        f"{op} '{node.name}': ONNX infers shape {list(expected)} for "
                        f"'{out}' but xweave computes {list(got)}"
                    )
                self.diverged.add(out)
            self.values[out] = result

    # ---- elementwise -----------------------------------------------------------------

    def _legacy_broadcast(self, node: onnx.NodeProto, attrs: dict, a: str, b: str) -> SSAValue:
        """B of a binary op of opset < 7: `broadcast=1` with `axis` aligns B at axis."""
        if self.opset < 7 and attrs.get("broadcast", 0) and "axis" in attrs:
            a_rank, b_shape = len(self.shape(a)), self.shape(b)
            axis = attrs["axis"] + a_rank if attrs["axis"] < 0 else attrs["axis"]
            return self.reshaped(b, (*b_shape, *(1,) * (a_rank - axis - len(b_shape))))
        return self.value(b)

    def op_binary(self, node: onnx.NodeProto, attrs: dict) -> SSAValue:
        cls = _BINARY_OPS[node.op_type]
        a, b = node.input[0], node.input[1]
        if node.op_type == "Pow" and b in self.constants and self.dtype(b) != np.float32:
            self.constants[b] = self.const_array(node, b).astype(np.float32)  # Pow(T, T1)
        kinds = "fi" if node.op_type in ("Add", "Sub", "Mul") else "f"
        lhs = self.data(node, a, kinds)
        if node.op_type == "PRelu":
            rhs = self._prelu_slope(node, a, b)
        else:
            rhs = self._legacy_broadcast(node, attrs, a, b)
        if _element(rhs) != _element(lhs):
            raise self.unsupported(node, f"operands of types {rhs.type} and {lhs.type}")
        return self.emit(cls(lhs, rhs))

    def _prelu_slope(self, node: onnx.NodeProto, x: str, slope: str) -> SSAValue:
        """PRelu's slope; a [C] slope applies to axis 1 (as opset < 7 and PyTorch)."""
        x_shape, s_shape = self.shape(x), self.shape(slope)
        if (len(s_shape) == 1 and len(x_shape) > 2 and s_shape[0] == x_shape[1]
                and s_shape[0] != x_shape[-1]):
            return self.reshaped(slope, (s_shape[0], *(1,) * (len(x_shape) - 2)))
        return self.data(node, slope)

    def op_variadic(self, node: onnx.NodeProto, attrs: dict) -> SSAValue:
        """Max, Min, Sum, Mean of any number of broadcast operands."""
        cls = _VARIADIC_OPS[node.op_type]
        names = [n for n in node.input if n]
        result = self.data(node, names[0], "fi" if node.op_type != "Mean" else "f")
        for name in names[1:]:
            result = self.emit(cls(result, self.data(node, name, "fi")))
        if node.op_type == "Mean" and len(names) > 1:
            result = self.emit(graph.DivOp(result, self.scalar(len(names))))
        return result

    def op_compare(self, node: onnx.NodeProto, attrs: dict) -> SSAValue:
        """Comparisons (any one operand type) and logic on bools: i1 results."""
        logical = node.op_type in _LOGICAL_OPS
        cls = _LOGICAL_OPS[node.op_type] if logical else _COMPARE_OPS[node.op_type]
        a, b = node.input[0], node.input[1]
        lhs = self.data(node, a, "b" if logical else "fib")
        rhs = self._legacy_broadcast(node, attrs, a, b)
        if _element(rhs) != _element(lhs):
            raise self.unsupported(node, f"operands of types {lhs.type} and {rhs.type}")
        return self.emit(cls(lhs, rhs))

    def op_Not(self, node: onnx.NodeProto, attrs: dict) -> SSAValue:
        return self.emit(graph.NotOp(self.data(node, node.input[0], "b")))

    def op_unary(self, node: onnx.NodeProto, attrs: dict) -> SSAValue:
        return self.emit(_UNARY_OPS[node.op_type](self.data(node, node.input[0])))

    def op_activation(self, node: onnx.NodeProto, attrs: dict) -> SSAValue:
        cls, defaults = _ACTIVATIONS[node.op_type]
        params = {k: attrs.get(k, v) for k, v in defaults.items()}
        return self.emit(cls(self.data(node, node.input[0]), **params))

    def op_Identity(self, node: onnx.NodeProto, attrs: dict) -> SSAValue:
        return self.value(node.input[0])

    def op_Dropout(self, node: onnx.NodeProto, attrs: dict) -> SSAValue:
        training = self.optional_const(node, 2)
        if training is not None and bool(training.reshape(-1)[0]):
            raise self.unsupported(node, "training_mode=1")
        return self.value(node.input[0])  # inference mode

    def op_Clip(self, node: onnx.NodeProto, attrs: dict) -> SSAValue:
        low, high = attrs.get("min", -np.inf), attrs.get("max", np.inf)  # opset < 11
        if (lo := self.optional_const(node, 1)) is not None:
            low = float(lo.reshape(-1)[0])
        if (hi := self.optional_const(node, 2)) is not None:
            high = float(hi.reshape(-1)[0])
        return self.emit(graph.ClipOp(self.data(node, node.input[0]), low, high))

    def op_Where(self, node: onnx.NodeProto, attrs: dict) -> SSAValue:
        cond = self.data(node, node.input[0], "b")
        x = self.data(node, node.input[1], "fib")
        y = self.data(node, node.input[2], "fib")
        if _element(x) != _element(y):
            raise self.unsupported(node, f"operands of types {x.type} and {y.type}")
        return self.emit(graph.WhereOp(cond, x, y))

    def _cast_to(self, node: onnx.NodeProto, name: str, target: np.dtype) -> SSAValue:
        source = self.dtype(name)
        if source == target:
            return self.value(name)
        if target not in (np.float32, np.int64, np.int32, np.bool_) or (
                source not in (np.float32, np.int64, np.int32, np.bool_)):
            raise self.unsupported(node, f"a cast from {source} to {target} of run-time data")
        return self.emit(graph.CastOp(self.value(name), element_type(target)))

    def op_Cast(self, node: onnx.NodeProto, attrs: dict) -> SSAValue:
        target = np.dtype(onnx.helper.tensor_dtype_to_np_dtype(attrs["to"]))
        return self._cast_to(node, node.input[0], target)

    def op_CastLike(self, node: onnx.NodeProto, attrs: dict) -> SSAValue:
        return self._cast_to(node, node.input[0], self.dtype(node.input[1]))

    # ---- convolution and pooling ---------------------------------------------------------

    def _as_2d(self, name: str) -> SSAValue:
        """[N, C, L] data (or [O, C, K] weights) as [N, C, 1, L]."""
        n, c, length = self.shape(name)
        return self.reshaped(name, (n, c, 1, length))

    def _from_2d(self, value: SSAValue) -> SSAValue:
        n, c, _, length = self.shape_of_value(value)
        return self.reshape(value, (n, c, length))

    def _check_conv(self, x: str, w: str, attrs: dict) -> None:
        w_shape = self.shape(w)
        check_ranks(self.source, self.label, self.shape(x), w_shape, len(w_shape) - 2)
        if "kernel_shape" in attrs and list(attrs["kernel_shape"]) != list(w_shape[2:]):
            raise ModelError(f"{self.source}: {self.label}: attribute kernel_shape "
                             f"{list(attrs['kernel_shape'])} differs from the weights' "
                             f"spatial shape {list(w_shape[2:])}")

    def op_Conv(self, node: onnx.NodeProto, attrs: dict) -> SSAValue:
        x, w = node.input[0], node.input[1]
        self._check_conv(x, w, attrs)
        one_d = len(self.shape(w)) == 3
        if one_d:
            attrs = _lift_1d(attrs)
            xv, wv = self._as_2d(x), self._as_2d(w)
        else:
            xv, wv = self.data(node, x), self.data(node, w)
        kernel = self.shape_of_value(wv)[2:]
        strides, pads, dilations = _window_attrs(attrs, self.shape_of_value(xv)[2:], kernel)
        w_shape = self.shape_of_value(wv)
        check_window(self.source, self.label, self.shape_of_value(xv), kernel, strides, pads,
                     dilations, outer=self.shape_of_value(xv)[0] * w_shape[0],
                     per_tap=w_shape[1])
        bias = self.value(node.input[2]) if len(node.input) > 2 and node.input[2] else None
        y = self.emit(graph.Conv2dOp(
            xv, wv, bias, strides=strides, pads=pads, dilations=dilations,
            groups=attrs.get("group", 1),
        ))  # fmt: skip
        return self._from_2d(y) if one_d else y

    def op_ConvTranspose(self, node: onnx.NodeProto, attrs: dict) -> SSAValue:
        x, w = node.input[0], node.input[1]
        self._check_conv(x, w, attrs)
        one_d = len(self.shape(w)) == 3
        if one_d:
            attrs = _lift_1d(attrs)
            xv, wv = self._as_2d(x), self._as_2d(w)
        else:
            xv, wv = self.data(node, x), self.data(node, w)
        sizes = self.shape_of_value(xv)[2:]
        kernel = self.shape_of_value(wv)[2:]
        strides = list(attrs.get("strides", [1, 1]))
        dilations = list(attrs.get("dilations", [1, 1]))
        output_padding = list(attrs.get("output_padding", [0, 0]))
        auto_pad = attrs.get("auto_pad", "NOTSET")
        output_shape = attrs.get("output_shape")
        if output_shape is None and auto_pad in ("SAME_UPPER", "SAME_LOWER"):
            output_shape = [s * st for s, st in zip(sizes, strides)]
        if output_shape is not None:
            output_shape = list(output_shape)[-2:]
            begins, ends = [], []
            for i in range(2):
                total = (strides[i] * (sizes[i] - 1) + output_padding[i]
                         + (kernel[i] - 1) * dilations[i] + 1 - output_shape[i])
                if total < 0:
                    output_padding[i] -= total
                    total = 0
                small, large = total // 2, total - total // 2
                upper = auto_pad != "SAME_LOWER"
                begins.append(small if upper else large)
                ends.append(large if upper else small)
            pads = begins + ends
        elif auto_pad == "VALID":
            pads = [0, 0, 0, 0]
        else:
            pads = list(attrs.get("pads", [0, 0, 0, 0]))
        bias = self.value(node.input[2]) if len(node.input) > 2 and node.input[2] else None
        y = self.emit(graph.ConvTranspose2dOp(
            xv, wv, bias, strides=strides, pads=pads, dilations=dilations,
            output_padding=output_padding, groups=attrs.get("group", 1),
        ))  # fmt: skip
        return self._from_2d(y) if one_d else y

    def _pool(self, node: onnx.NodeProto, attrs: dict, make: Callable) -> SSAValue:
        check_ranks(self.source, self.label, self.shape(node.input[0]), None,
                    len(attrs["kernel_shape"]))
        one_d = len(attrs["kernel_shape"]) == 1
        if one_d:
            attrs = _lift_1d(attrs)
            x = self._as_2d(node.input[0])
        else:
            x = self.data(node, node.input[0])
        kernel = list(attrs["kernel_shape"])
        dilate = node.op_type == "MaxPool"
        strides, pads, dilations = _window_attrs(attrs, self.shape_of_value(x)[2:], kernel, dilate)
        check_window(self.source, self.label, self.shape_of_value(x), kernel, strides, pads,
                     dilations, outer=prod(self.shape_of_value(x)[:2]))
        y = self.emit(make(x, kernel, strides, pads, dilations, bool(attrs.get("ceil_mode", 0))))
        return self._from_2d(y) if one_d else y

    def op_MaxPool(self, node: onnx.NodeProto, attrs: dict) -> SSAValue:
        return self._pool(node, attrs, graph.MaxPool2dOp)

    def op_AveragePool(self, node: onnx.NodeProto, attrs: dict) -> SSAValue:
        include_pad = bool(attrs.get("count_include_pad", 0))
        return self._pool(node, attrs, lambda x, k, s, p, _d, c: graph.AvgPool2dOp(
            x, k, s, p, c, include_pad))

    def _global_pool(self, node: onnx.NodeProto, cls, kind: str) -> SSAValue:
        x = self.data(node, node.input[0])
        rank = len(self.shape_of_value(x))
        if rank == 4:
            return self.emit(cls(x))
        return self.emit(graph.ReduceOp(x, kind, range(2, rank), True))

    def op_GlobalAveragePool(self, node: onnx.NodeProto, attrs: dict) -> SSAValue:
        return self._global_pool(node, graph.GlobalAvgPool2dOp, "mean")

    def op_GlobalMaxPool(self, node: onnx.NodeProto, attrs: dict) -> SSAValue:
        return self._global_pool(node, graph.GlobalMaxPool2dOp, "max")

    # ---- normalization, softmax, reductions ------------------------------------------

    def op_BatchNormalization(self, node: onnx.NodeProto, attrs: dict) -> SSAValue:
        x, scale, bias, mean, var = (self.data(node, n) for n in node.input[:5])
        return self.emit(graph.BatchNormOp(x, scale, bias, mean, var, attrs.get("epsilon", 1e-5)))

    def _channel_param(self, name: str, rank: int) -> SSAValue:
        """A [C] parameter shaped [C, 1, ...] to broadcast along axis 1 of rank-`rank` data."""
        (c,) = self.shape(name)
        return self.reshaped(name, (c, *(1,) * (rank - 2)))

    def op_InstanceNormalization(self, node: onnx.NodeProto, attrs: dict) -> SSAValue:
        """Layer normalization over the spatial axes, with per-channel scale and bias."""
        x = self.data(node, node.input[0])
        rank = len(self.shape_of_value(x))
        scale = self._channel_param(node.input[1], rank)
        bias = self._channel_param(node.input[2], rank)
        return self.emit(graph.LayerNormOp(x, scale, bias, axis=2,
                                           epsilon=attrs.get("epsilon", 1e-5)))

    def op_LayerNormalization(self, node: onnx.NodeProto, attrs: dict) -> SSAValue:
        x = self.data(node, node.input[0])
        rank = len(self.shape_of_value(x))
        (axis,) = _normalize_axes([attrs.get("axis", -1)], rank, node)
        scale = self.data(node, node.input[1])
        bias = self.data(node, node.input[2]) if len(node.input) > 2 and node.input[2] else None
        return self.emit(graph.LayerNormOp(x, scale, bias, axis=axis,
                                           epsilon=attrs.get("epsilon", 1e-5)))

    def op_GroupNormalization(self, node: onnx.NodeProto, attrs: dict) -> SSAValue:
        """Layer normalization of [N, G, C/G * spatial], then per-channel scale and bias
        (opset 18 gives them per group, opset 21 per channel)."""
        x = self.data(node, node.input[0])
        shape = self.shape_of_value(x)
        groups = attrs["num_groups"]
        grouped = self.reshape(x, (shape[0], groups, prod(shape[1:]) // groups))
        one = self.constant("one", np.ones((1,), np.float32))
        y = self.emit(graph.LayerNormOp(grouped, one, None, axis=2,
                                        epsilon=attrs.get("epsilon", 1e-5)))
        y = self.reshape(y, shape)
        params = []
        for name in node.input[1:3]:
            (size,) = self.shape(name)
            if size != shape[1]:  # per group: repeat for each channel of the group
                array = np.repeat(self.const_array(node, name), shape[1] // size)
                params.append(self.constant(name, array.astype(np.float32).reshape(
                    (shape[1], *(1,) * (len(shape) - 2)))))
            else:
                params.append(self._channel_param(name, len(shape)))
        return self.emit(graph.AddOp(self.emit(graph.MulOp(y, params[0])), params[1]))

    def op_LRN(self, node: onnx.NodeProto, attrs: dict) -> SSAValue:
        return self.emit(graph.LrnOp(self.data(node, node.input[0]), attrs["size"],
                                     attrs.get("alpha", 1e-4), attrs.get("beta", 0.75),
                                     attrs.get("bias", 1.0)))

    def _softmax(self, node: onnx.NodeProto, attrs: dict, cls) -> SSAValue:
        x = self.data(node, node.input[0])
        shape = self.shape_of_value(x)
        rank = len(shape)
        (axis,) = _normalize_axes([attrs.get("axis", 1 if self.opset < 13 else -1)], rank, node)
        if self.opset >= 13 or axis == rank - 1:
            return self.emit(cls(x, axis))
        # opset < 13: the input is coerced to 2-D [prod(before axis), prod(from axis)].
        flat = self.reshape(x, (prod(shape[:axis]), prod(shape[axis:])))
        return self.reshape(self.emit(cls(flat, 1)), shape)

    def op_Softmax(self, node: onnx.NodeProto, attrs: dict) -> SSAValue:
        return self._softmax(node, attrs, graph.SoftmaxOp)

    def op_LogSoftmax(self, node: onnx.NodeProto, attrs: dict) -> SSAValue:
        return self._softmax(node, attrs, graph.LogSoftmaxOp)

    def _axes(self, node: onnx.NodeProto, attrs: dict, input_from: int) -> list[int] | None:
        """`axes` as an attribute (opset < input_from) or input 1; None if absent."""
        if self.opset >= input_from:
            array = self.optional_const(node, 1)
            return None if array is None else [int(a) for a in array.reshape(-1)]
        return list(attrs["axes"]) if "axes" in attrs else None

    def op_reduce(self, node: onnx.NodeProto, attrs: dict) -> SSAValue:
        kind = _REDUCE_OPS[node.op_type]
        x = self.data(node, node.input[0])
        rank = len(self.shape_of_value(x))
        axes = self._axes(node, attrs, _REDUCE_AXES_INPUT_OPSET.get(node.op_type, 18))
        keep = bool(attrs.get("keepdims", 1))
        if not axes:
            if attrs.get("noop_with_empty_axes", 0):
                return x
            axes = list(range(rank))
        axes = sorted(set(_normalize_axes(axes, rank, node)))
        if rank == 0:
            return x

        def reduce(value: SSAValue, how: str, keepdims: bool = keep) -> SSAValue:
            return self.emit(graph.ReduceOp(value, how, axes, keepdims))

        if kind in graph.REDUCE_KINDS:
            return reduce(x, kind)
        if kind == "l1":
            return reduce(self.emit(graph.AbsOp(x)), "sum")
        if kind in ("l2", "sum_square"):
            total = reduce(self.emit(graph.MulOp(x, x)), "sum")
            return self.emit(graph.SqrtOp(total)) if kind == "l2" else total
        if kind == "log_sum":
            return self.emit(graph.LogOp(reduce(x, "sum")))
        # log_sum_exp, stable: m + log(sum(exp(x - m))) with m the maximum.
        peak = reduce(x, "max", True)
        total = reduce(self.emit(graph.ExpOp(self.emit(graph.SubOp(x, peak)))), "sum")
        peak = self.reshape(peak, self.shape_of_value(total))
        return self.emit(graph.AddOp(self.emit(graph.LogOp(total)), peak))

    # ---- dense -------------------------------------------------------------------------

    def op_MatMul(self, node: onnx.NodeProto, attrs: dict) -> SSAValue:
        """numpy matmul; 1-D operands get a unit dimension added, then dropped."""
        a, b = self.data(node, node.input[0]), self.data(node, node.input[1])
        a_shape, b_shape = self.shape(node.input[0]), self.shape(node.input[1])
        if len(a_shape) == 1:
            a = self.emit(graph.ReshapeOp(a, (1, *a_shape)))
        if len(b_shape) == 1:
            b = self.emit(graph.ReshapeOp(b, (*b_shape, 1)))
        y = self.emit(graph.MatmulOp(a, b))
        if len(a_shape) > 1 and len(b_shape) > 1:
            return y
        shape = list(self.shape_of_value(y))
        if len(b_shape) == 1:
            shape.pop(-1)
        if len(a_shape) == 1:
            shape.pop(-1 if len(b_shape) == 1 else -2)
        return self.emit(graph.ReshapeOp(y, shape))

    def op_Gemm(self, node: onnx.NodeProto, attrs: dict) -> SSAValue:
        """alpha * A' @ B' + beta * C; a constant B becomes graph.dense's [N, K] weight."""
        alpha, beta = float(attrs.get("alpha", 1.0)), float(attrs.get("beta", 1.0))
        b_name = node.input[1]
        c_name = node.input[2] if len(node.input) > 2 and node.input[2] else None
        a = self.data(node, node.input[0])
        if attrs.get("transA", 0):
            a = self.emit(graph.TransposeOp(a, (1, 0)))
        addend: SSAValue | None = None  # beta * C when it is not a bias vector

        if b_name in self.constants:
            w = self.constants[b_name].astype(np.float32)
            w = np.ascontiguousarray(w if attrs.get("transB", 0) else w.T) * np.float32(alpha)
            n = w.shape[0]
            bias = None
            if c_name in self.constants:
                c = self.constants[c_name].astype(np.float32) * np.float32(beta)
                if c.size in (1, n) and (c.ndim == 0 or c.shape[-1] == c.size):  # a row
                    bias = self.constant(c_name, np.broadcast_to(c.reshape(-1), (n,)).copy())
                else:
                    addend = self.constant(c_name, c)
            elif c_name is not None:
                addend = self._scaled(self.value(c_name), beta, "beta")
            y = self.emit(graph.DenseOp(a, self.constant(b_name, w), bias))
        else:
            b = self.data(node, b_name)
            if attrs.get("transB", 0):
                b = self.emit(graph.TransposeOp(b, (1, 0)))
            y = self._scaled(self.emit(graph.MatmulOp(a, b)), alpha, "alpha")
            if c_name is not None:
                addend = self._scaled(self.value(c_name), beta, "beta")
        return y if addend is None else self.emit(graph.AddOp(y, addend))

    def _scaled(self, value: SSAValue, factor: float, name: str) -> SSAValue:
        if factor == 1.0:
            return value
        return self.emit(graph.MulOp(value, self.constant(name, np.float32(factor))))

    # ---- layout and data movement --------------------------------------------------------

    def op_Flatten(self, node: onnx.NodeProto, attrs: dict) -> SSAValue:
        shape = self.shape(node.input[0])
        axis = attrs.get("axis", 1)
        axis = axis + len(shape) if axis < 0 else axis
        return self.reshaped(node.input[0], (prod(shape[:axis]), prod(shape[axis:])))

    def op_Reshape(self, node: onnx.NodeProto, attrs: dict) -> SSAValue:
        shape = self.shape(node.input[0])
        if self.opset < 5:
            spec = [int(d) for d in attrs["shape"]]
        else:
            spec = [int(d) for d in self.const_array(node, node.input[1]).reshape(-1)]
        keep_zero = attrs.get("allowzero", 0)  # opset 14: 0 means a zero-size dimension
        target = [shape[i] if d == 0 and not keep_zero else d for i, d in enumerate(spec)]
        if target.count(-1) > 1:
            raise ModelError(f"Reshape '{node.name}': more than one -1 in shape {spec}")
        if -1 in target:
            known = prod(d for d in target if d != -1)
            target[target.index(-1)] = prod(shape) // known if known else 0
        if prod(target) != prod(shape):
            raise ModelError(f"Reshape '{node.name}': cannot reshape {list(shape)} to {spec}")
        return self.reshaped(node.input[0], target)

    def op_Squeeze(self, node: onnx.NodeProto, attrs: dict) -> SSAValue:
        shape = self.shape(node.input[0])
        axes = self._axes(node, attrs, 13)
        if axes is None:
            axes = [d for d, e in enumerate(shape) if e == 1]
        axes = _normalize_axes(axes, len(shape), node)
        return self.reshaped(node.input[0], [e for d, e in enumerate(shape) if d not in axes])

    def op_Unsqueeze(self, node: onnx.NodeProto, attrs: dict) -> SSAValue:
        shape = list(self.shape(node.input[0]))
        axes = self._axes(node, attrs, 13) or []
        for a in sorted(_normalize_axes(axes, len(shape) + len(axes), node)):
            shape.insert(a, 1)
        return self.reshaped(node.input[0], shape)

    def op_Transpose(self, node: onnx.NodeProto, attrs: dict) -> SSAValue:
        rank = len(self.shape(node.input[0]))
        perm = list(attrs.get("perm", range(rank - 1, -1, -1)))
        if perm == list(range(rank)):
            return self.value(node.input[0])
        return self.emit(graph.TransposeOp(self.value(node.input[0]), perm))

    def op_Concat(self, node: onnx.NodeProto, attrs: dict) -> SSAValue:
        names = [n for n in node.input if n]
        rank = len(self.shape(names[0]))
        (axis,) = _normalize_axes([attrs.get("axis", 1 if self.opset < 4 else 0)], rank, node)
        names = [n for n in names if self.shape(n)[axis] > 0]
        if not names:
            raise self.unsupported(node, "an empty result (every input is empty)")
        values = [self.value(n) for n in names]
        if len({_element(v) for v in values}) > 1:
            raise self.unsupported(node, "inputs of different element types")
        return values[0] if len(values) == 1 else self.emit(graph.ConcatOp(values, axis))

    def _slice(self, value: SSAValue, ranges: Sequence[range]) -> SSAValue:
        """`value` restricted to one range of indices per dimension."""
        shape = self.shape_of_value(value)
        if all(r == range(e) for r, e in zip(ranges, shape)):
            return value
        if any(len(r) == 0 for r in ranges):
            raise self.unsupported(self.node, f"an empty result (a slice of {list(shape)})")
        return self.emit(graph.SliceOp(value, [r.start for r in ranges], [r.step for r in ranges],
                                       [len(r) for r in ranges]))

    def op_Slice(self, node: onnx.NodeProto, attrs: dict) -> SSAValue:
        shape = self.shape(node.input[0])
        if self.opset < 10:
            starts, ends = attrs["starts"], attrs["ends"]
            axes, steps = attrs.get("axes"), None
        else:
            starts = self.const_array(node, node.input[1]).reshape(-1).tolist()
            ends = self.const_array(node, node.input[2]).reshape(-1).tolist()
            axes_array, steps_array = self.optional_const(node, 3), self.optional_const(node, 4)
            axes = None if axes_array is None else axes_array.reshape(-1).tolist()
            steps = None if steps_array is None else steps_array.reshape(-1).tolist()
        axes = list(range(len(starts))) if axes is None else _normalize_axes(axes, len(shape), node)
        steps = steps or [1] * len(starts)
        ranges = [range(e) for e in shape]
        for axis, start, end, step in zip(axes, starts, ends, steps):
            ranges[axis] = range(shape[axis])[slice(int(start), int(end), int(step))]
        return self._slice(self.value(node.input[0]), ranges)

    def op_Split(self, node: onnx.NodeProto, attrs: dict) -> list[SSAValue]:
        shape = self.shape(node.input[0])
        (axis,) = _normalize_axes([attrs.get("axis", 0)], len(shape), node)
        outputs = len(node.output)
        if self.opset >= 13:
            array = self.optional_const(node, 1)
            sizes = None if array is None else [int(s) for s in array.reshape(-1)]
        else:
            sizes = list(attrs["split"]) if "split" in attrs else None
            if sizes is None and len(node.input) > 1 and node.input[1]:  # opset 2-12 input form
                sizes = [int(s) for s in self.const_array(node, node.input[1]).reshape(-1)]
        if sizes is None:
            chunk = -(-shape[axis] // outputs)
            sizes = [chunk] * (outputs - 1) + [shape[axis] - chunk * (outputs - 1)]
        if sum(sizes) != shape[axis] or len(sizes) != outputs:
            raise ModelError(f"Split '{node.name}': sizes {sizes} do not split {shape[axis]}")
        value, results, start = self.value(node.input[0]), [], 0
        for size in sizes:
            ranges = [range(e) for e in shape]
            ranges[axis] = range(start, start + size)
            results.append(self._slice(value, ranges))
            start += size
        return results

    def op_Gather(self, node: onnx.NodeProto, attrs: dict) -> SSAValue:
        data, indices = node.input[0], node.input[1]
        shape = self.shape(data)
        (axis,) = _normalize_axes([attrs.get("axis", 0)], len(shape), node)
        if indices in self.constants:
            idx = self.const_array(node, indices).astype(np.int64)
            idx = np.where(idx < 0, idx + shape[axis], idx)
            if idx.min(initial=0) < 0 or idx.max(initial=0) >= shape[axis]:
                raise ModelError(f"Gather '{node.name}': indices out of range for {shape[axis]}")
            steps = np.diff(idx.reshape(-1))
            if idx.ndim <= 1 and idx.size and (idx.size == 1 or (steps == steps[0]).all() and steps[0]):
                step = int(steps[0]) if idx.size > 1 else 1
                ranges = [range(e) for e in shape]
                ranges[axis] = range(int(idx.reshape(-1)[0]), int(idx.reshape(-1)[-1]) + step, step)
                sliced = self._slice(self.value(data), ranges)
                out = gather_output_shape(shape, idx.shape, axis)
                return self.reshape(sliced, out)
            self.constants[indices] = idx
        index_value = self.data(node, indices, "i")
        return self.emit(graph.GatherOp(self.value(data), index_value, axis))

    def op_Pad(self, node: onnx.NodeProto, attrs: dict) -> SSAValue:
        x = node.input[0]
        shape = self.shape(x)
        rank = len(shape)
        mode = attrs.get("mode", "constant")
        if self.opset < 11:
            pads = list(attrs.get("pads", attrs.get("paddings", [0] * 2 * rank)))
            value = float(attrs.get("value", 0.0))
        else:
            pads = [int(p) for p in self.const_array(node, node.input[1]).reshape(-1)]
            constant_value = self.optional_const(node, 2)
            value = 0.0 if constant_value is None else float(constant_value.reshape(-1)[0])
            axes_array = self.optional_const(node, 3)
            if axes_array is not None:
                axes = _normalize_axes(axes_array.reshape(-1).tolist(), rank, node)
                full = [0] * 2 * rank
                for i, a in enumerate(axes):
                    full[a], full[a + rank] = pads[i], pads[i + len(axes)]
                pads = full
        result = self.data(node, x)
        if any(p > 0 for p in pads):
            grow = [max(p, 0) for p in pads]
            result = self.emit(graph.PadOp(result, grow, mode, value))
        if any(p < 0 for p in pads):  # negative pads crop
            padded = self.shape_of_value(result)
            ranges = [range(-min(pads[d], 0), padded[d] + min(pads[d + rank], 0))
                      for d in range(rank)]
            result = self._slice(result, ranges)
        return result

    def op_Tile(self, node: onnx.NodeProto, attrs: dict) -> SSAValue:
        repeats = [int(r) for r in self.const_array(node, node.input[1]).reshape(-1)]
        x = self.value(node.input[0])
        if all(r == 1 for r in repeats):
            return x
        return self.emit(graph.TileOp(x, repeats))

    def op_Expand(self, node: onnx.NodeProto, attrs: dict) -> SSAValue:
        target = [int(d) for d in self.const_array(node, node.input[1]).reshape(-1)]
        shape = broadcast_shape(self.shape(node.input[0]), target)
        if shape is None:
            raise ModelError(f"Expand '{node.name}': cannot broadcast "
                             f"{list(self.shape(node.input[0]))} to {target}")
        x = self.value(node.input[0])
        if shape == self.shape_of_value(x):
            return x
        return self.emit(graph.BroadcastToOp(x, shape))

    def op_DepthToSpace(self, node: onnx.NodeProto, attrs: dict) -> SSAValue:
        n, c, h, w = self.shape(node.input[0])
        b = attrs["blocksize"]
        x = self.value(node.input[0])
        if attrs.get("mode", "DCR") == "DCR":
            t = self.emit(graph.TransposeOp(self.reshape(x, (n, b, b, c // b**2, h, w)),
                                            (0, 3, 4, 1, 5, 2)))
        else:
            t = self.emit(graph.TransposeOp(self.reshape(x, (n, c // b**2, b, b, h, w)),
                                            (0, 1, 4, 2, 5, 3)))
        return self.reshape(t, (n, c // b**2, h * b, w * b))

    def op_SpaceToDepth(self, node: onnx.NodeProto, attrs: dict) -> SSAValue:
        n, c, h, w = self.shape(node.input[0])
        b = attrs["blocksize"]
        x = self.reshape(self.value(node.input[0]), (n, c, h // b, b, w // b, b))
        perm = (0, 3, 5, 1, 2, 4) if attrs.get("mode", "DCR") == "DCR" else (0, 1, 3, 5, 2, 4)
        t = self.emit(graph.TransposeOp(x, perm))
        return self.reshape(t, (n, c * b * b, h // b, w // b))


def _element(value: SSAValue) -> Attribute:
    return value.type.element_type  # pyright: ignore[reportAttributeAccessIssue]


_IMPORT_TIME_OPS = frozenset({"Constant", "Shape", "Size"})
"""Operators always evaluated at import time (input shapes are static)."""

SUPPORTED_OPS: frozenset[str] = frozenset(
    {name[3:] for name in dir(_Importer) if name.startswith("op_")}
    - {"binary", "variadic", "compare", "unary", "activation", "reduce"}
    | set(_BINARY_OPS) | set(_VARIADIC_OPS) | set(_COMPARE_OPS) | set(_LOGICAL_OPS)
    | set(_UNARY_OPS) | set(_ACTIVATIONS) | set(_REDUCE_OPS) | _IMPORT_TIME_OPS
)
"""ONNX operator types (default domain) that `load_onnx` imports. Any other default-
domain operator is also accepted where all its inputs are known at import time (it is
then evaluated by ONNX's reference implementation)."""


# --------------------------------------------------------------------------------------
# Entry point
# --------------------------------------------------------------------------------------

_DATA_DTYPES = (onnx.TensorProto.FLOAT, onnx.TensorProto.INT64, onnx.TensorProto.INT32)
"""Element types of model inputs and outputs: float32 data, int64/int32 indices."""


def _infer_shapes(model: onnx.ModelProto) -> onnx.ModelProto:
    """ONNX shape inference, as strict as it succeeds (only a cross-check here)."""
    for kwargs in (dict(strict_mode=True, data_prop=True), dict(strict_mode=False)):
        try:
            return onnx.shape_inference.infer_shapes(model, **kwargs)
        except Exception:
            continue
    return model


def load_onnx(
    path_or_model: str | Path | onnx.ModelProto,
    input_shapes: dict[str, tuple[int, ...]] | None = None,
) -> ModuleOp:
    """Import an ONNX model as a verified graph-stage module with `func.func @main`.

    `input_shapes` binds symbolic (or unknown) input dimensions, e.g. {"data": (1, 3, 224, 224)}.
    Raises ModelError (unreadable file, a malformed model: see `onnx_checks`, inputs/
    outputs other than float32 or int64/int32, shapes that cannot be inferred, tensors
    too large) or UnsupportedOpsError (listing every unsupported operator and node).
    """
    model, source = _read_model(path_or_model)
    check_model(model, source)
    opset = default_opset(model)
    assert opset is not None  # check_model requires it
    original = model.graph
    initializers = {t.name for t in original.initializer}
    inputs = [v for v in original.input if v.name not in initializers]
    used = {n for node in original.node for n in node.input if n} | {v.name for v in original.output}

    # Operators first, before anything else is checked or converted.
    constant_names = initializers | {
        n.output[0] for n in original.node if n.op_type == "Constant" and _is_default_domain(n)
    }
    folded, known = _plan(original.node, constant_names)
    if _unsupported(original.node, folded, known, {}, used, opset):
        ranks = _ranks(_inferred_or_none(model, strict=False) or model)  # best effort
        raise _unsupported_error(_unsupported(original.node, folded, known, ranks, used, opset))

    for v in (*inputs, *original.output):
        elem = v.type.tensor_type.elem_type
        if elem not in (*_DATA_DTYPES, onnx.TensorProto.UNDEFINED) or not v.type.HasField("tensor_type"):
            kind = "input" if v in inputs else "output"
            name = onnx.TensorProto.DataType.Name(elem) if v.type.HasField("tensor_type") else \
                v.type.WhichOneof("value")
            raise ModelError(
                f"{source}: {kind} '{v.name}' has element type {name}; xweave supports "
                "float32 models only (with int64/int32 index inputs)"
            )

    # Bind input shapes on a copy, then infer every value's shape (a cross-check).
    model_copy = onnx.ModelProto()
    model_copy.CopyFrom(model)
    copy_inputs = [v for v in model_copy.graph.input if v.name not in initializers]
    _bind_input_shapes(model_copy, copy_inputs, dict(input_shapes or {}))
    inferred = _infer_shapes(model_copy)
    g = inferred.graph
    folded, known = _plan(g.node, constant_names)
    if problems := _unsupported(g.node, folded, known, _ranks(inferred), used, opset):
        raise _unsupported_error(problems)  # unsupported ranks (3-D conv, ...)

    onnx_shapes: dict[str, tuple[int, ...]] = {}
    for v in (*g.value_info, *g.output):
        d = _dims(v)
        if d is not None and all(isinstance(x, int) and x > 0 for x in d):
            onnx_shapes[v.name] = tuple(d)  # pyright: ignore[reportArgumentType]

    # Every model input needs a static shape.
    input_types = []
    for v in copy_inputs:
        d = _dims(v)
        if d is None or not all(isinstance(x, int) and x >= 0 for x in d):
            shown = "unknown rank" if d is None else "[" + ", ".join(map(str, d)) + "]"
            raise ModelError(
                f"{source}: the shape of tensor '{v.name}' (model input) cannot be inferred "
                f"statically: {shown.replace('None', '?')}; bind it with input_shapes={{...}}"
            )
        dtype = onnx.helper.tensor_dtype_to_np_dtype(v.type.tensor_type.elem_type or 1)
        input_types.append(TensorType(element_type(np.dtype(dtype)), d))
    _check_shape_inputs(g.node, folded, known, used, source)

    constants: dict[str, np.ndarray] = initializer_arrays(inferred, source)
    block = Block(arg_types=input_types)
    importer = _Importer(onnx_shapes, constants, block, opset, source)
    importer.values.update({v.name: arg for v, arg in zip(inputs, block.args)})
    for index, node in enumerate(g.node):
        if not any(o in used for o in node.output if o):
            continue
        importer.index, importer.node = index, node
        try:
            if index in folded:
                importer.fold(node)
            else:
                importer.convert(node)
        except XweaveError:
            raise
        except (ValueError, IndexError, KeyError, TypeError, ZeroDivisionError, OverflowError,
                AssertionError, MemoryError) as e:
            # A malformed node the checks above let through: still one line naming it.
            raise ModelError(f"{source}: {importer.label}: cannot be imported "
                             f"({str(e) or type(e).__name__}); {importer.input_shapes()}") from e

    results = []
    for v in g.output:
        result = importer.value(v.name)
        declared = v.type.tensor_type.elem_type
        if declared and _element(result) != element_type(
                np.dtype(onnx.helper.tensor_dtype_to_np_dtype(declared))):
            raise ModelError(f"{source}: output '{v.name}' is declared "
                             f"{onnx.TensorProto.DataType.Name(declared)} but computes {result.type}")
        results.append(result)
    block.add_op(func.ReturnOp(*results))
    main = func.FuncOp(
        "main", ([a.type for a in block.args], [r.type for r in results]), Region(block)
    )
    main.attributes["xweave.input_names"] = ArrayAttr([StringAttr(v.name) for v in inputs])
    main.attributes["xweave.output_names"] = ArrayAttr([StringAttr(v.name) for v in g.output])
    module = ModuleOp([main])
    module.verify()
    return module
