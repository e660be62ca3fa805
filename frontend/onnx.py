"""ONNX -> graph dialect.

`load_onnx` reads a model (file or `onnx.ModelProto`), binds symbolic input
dimensions, runs ONNX shape inference, checks that every operator is supported (one
`UnsupportedOpsError` listing them all), and builds a verified graph-stage module:

    func.func @main(<graph inputs in ONNX order>) -> (<graph outputs in order>)
        attributes {xweave.input_names = [...], xweave.output_names = [...]}

Initializers and `Constant` nodes become `graph.constant` (named after the ONNX tensor)
where they are used as data; shape-like constants (Reshape's shape, Clip's bounds) are
read at import time instead.
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
from xdsl.dialects.builtin import ArrayAttr, ModuleOp, StringAttr, TensorType, f32
from xdsl.ir import Block, Operation, Region, SSAValue

from xweave.dialects import graph
from xweave.errors import ModelError, UnsupportedOpsError

__all__ = ["load_onnx", "SUPPORTED_OPS"]

_BINARY_OPS: dict[str, type[graph.BinaryOperation]] = {
    "Add": graph.AddOp,
    "Sub": graph.SubOp,
    "Mul": graph.MulOp,
    "Div": graph.DivOp,
    "Max": graph.MaxOp,
    "Min": graph.MinOp,
    "Pow": graph.PowOp,
}

_UNARY_OPS: dict[str, type[graph.UnaryOperation]] = {
    "Relu": graph.ReluOp,
    "Sigmoid": graph.SigmoidOp,
    "Tanh": graph.TanhOp,
    "Exp": graph.ExpOp,
    "Neg": graph.NegOp,
    "Sqrt": graph.SqrtOp,
    "Abs": graph.AbsOp,
}


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
# Support check (before any conversion)
# --------------------------------------------------------------------------------------


def _check_node(
    node: onnx.NodeProto, attrs: dict, constants: set[str], ranks: dict[str, int], used: set[str]
) -> str | None:
    """Why this node cannot be imported, or None."""
    op = node.op_type

    def rank(i: int) -> int | None:
        return ranks.get(node.input[i]) if len(node.input) > i else None

    if op == "Conv":
        r = rank(1)
        if r is not None and r != 4:
            return f"{r - 2}-D convolution (only 2-D)"
    elif op in ("MaxPool", "AveragePool"):
        if len(attrs.get("kernel_shape", ())) != 2:
            return f"{len(attrs.get('kernel_shape', ()))}-D pooling (only 2-D)"
        if op == "MaxPool" and attrs.get("storage_order", 0) != 0:
            return "storage_order=1"
        if op == "MaxPool" and len(node.output) > 1 and node.output[1]:
            return "the Indices output"
        if op == "AveragePool" and any(d != 1 for d in attrs.get("dilations", ())):
            return "dilated average pooling"
    elif op in ("GlobalAveragePool", "GlobalMaxPool"):
        r = rank(0)
        if r is not None and r != 4:
            return f"{r - 2}-D global pooling (only 2-D)"
    elif op == "Clip":
        bounds = [n for n in node.input[1:] if n]
        if any(n not in constants for n in bounds):
            return "non-constant min/max"
    elif op == "Reshape":
        if len(node.input) < 2 or node.input[1] not in constants:
            return "a non-constant shape"
    elif op == "Dropout":
        if len(node.output) > 1 and node.output[1] in used:
            return "a used mask output"
    elif op == "MatMul":
        if rank(0) is not None and rank(1) is not None and min(rank(0), rank(1)) < 1:
            return "scalar operands"
    return None


def _unsupported(
    nodes: Sequence[onnx.NodeProto], constants: set[str], ranks: dict[str, int], used: set[str]
) -> dict[str, list[str]]:
    """{unsupported op type (and why): [node labels]}; ranks may be empty (not inferred)."""
    problems: dict[str, list[str]] = {}
    for index, node in enumerate(nodes):
        label = _node_label(node, index)
        key = node.op_type if node.domain in ("", "ai.onnx") else f"{node.domain}.{node.op_type}"
        if key not in SUPPORTED_OPS:
            problems.setdefault(key, []).append(label)
            continue
        reason = _check_node(node, _attributes(node), constants, ranks, used)
        if reason is not None:
            problems.setdefault(f"{key} with {reason}", []).append(label)
    return problems


def _unsupported_error(problems: dict[str, list[str]]) -> UnsupportedOpsError:
    listing = "; ".join(f"{op} (nodes: {', '.join(labels)})" for op, labels in problems.items())
    error = UnsupportedOpsError(f"unsupported ONNX operators: {listing}")
    error.ops = problems  # pyright: ignore[reportAttributeAccessIssue]
    return error


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


@dataclass
class _Importer:
    """State of one conversion: ONNX names -> SSA values, known constants, shapes.

    Result shapes come from the graph ops' own shape rules; ONNX's inferred shapes
    cross-check them. The one known disagreement: with ceil_mode, ONNX shape inference
    may keep a last window that starts in the end padding, which onnxruntime (and the
    graph dialect) drop; from there on the graph's shapes are followed.
    """

    onnx_shapes: dict[str, tuple[int, ...]]
    constants: dict[str, np.ndarray]
    block: Block
    values: dict[str, SSAValue] = field(default_factory=dict)
    diverged: set[str] = field(default_factory=set)

    def emit(self, op: Operation) -> SSAValue:
        self.block.add_op(op)
        return op.results[0]

    def constant(self, name: str, array: np.ndarray) -> SSAValue:
        return self.emit(graph.ConstantOp.from_array(name, array))

    def value(self, name: str) -> SSAValue:
        """The SSA value of ONNX tensor `name`; constants are emitted on first use."""
        if name not in self.values:
            array = self.constants[name]
            if array.dtype != np.float32:
                raise ModelError(
                    f"constant '{name}' has dtype {array.dtype}; only float32 data is supported"
                )
            self.values[name] = self.constant(name, array)
        return self.values[name]

    def shape(self, name: str) -> tuple[int, ...]:
        if name in self.values:
            return self.values[name].type.get_shape()  # pyright: ignore[reportAttributeAccessIssue]
        if name in self.constants:
            return tuple(self.constants[name].shape)
        return self.onnx_shapes[name]

    def const_array(self, node: onnx.NodeProto, name: str) -> np.ndarray:
        if name not in self.constants:
            raise ModelError(f"{node.op_type} '{node.name}': input '{name}' must be a constant")
        return self.constants[name]

    def convert(self, node: onnx.NodeProto) -> None:
        attrs = _attributes(node)
        handler: Callable[[onnx.NodeProto, dict], SSAValue]
        if node.op_type in _BINARY_OPS:
            handler = self.op_binary
        elif node.op_type in _UNARY_OPS:
            handler = self.op_unary
        else:
            handler = getattr(self, f"op_{node.op_type}")
        result = handler(node, attrs)
        out = node.output[0]
        expected, got = self.onnx_shapes.get(out), self.shape_of_value(result)
        if expected is not None and got != expected:
            pooled = node.op_type in ("MaxPool", "AveragePool") and attrs.get("ceil_mode", 0)
            if not pooled and not self.diverged.intersection(node.input):
                raise ModelError(
                    f"{node.op_type} '{node.name}': ONNX infers shape {list(expected)} for "
                    f"'{out}' but xweave computes {list(got)}"
                )
            self.diverged.add(out)
        self.values[out] = result

    @staticmethod
    def shape_of_value(value: SSAValue) -> tuple[int, ...]:
        return value.type.get_shape()  # pyright: ignore[reportAttributeAccessIssue]

    # ---- one method per ONNX operator ------------------------------------------------

    def op_binary(self, node: onnx.NodeProto, attrs: dict) -> SSAValue:
        cls = _BINARY_OPS[node.op_type]
        names = list(node.input)
        if node.op_type == "Pow" and names[1] in self.constants:
            exponent = self.constants[names[1]]
            if exponent.dtype != np.float32:  # opset 12+: Pow(T, T1) with integer T1
                self.constants[names[1]] = exponent.astype(np.float32)
        result = self.value(names[0])
        for name in names[1:]:  # Max and Min are variadic
            result = self.emit(cls(result, self.value(name)))
        return result

    def op_unary(self, node: onnx.NodeProto, attrs: dict) -> SSAValue:
        return self.emit(_UNARY_OPS[node.op_type](self.value(node.input[0])))

    def op_Identity(self, node: onnx.NodeProto, attrs: dict) -> SSAValue:
        return self.value(node.input[0])

    op_Dropout = op_Identity  # inference mode

    def op_Clip(self, node: onnx.NodeProto, attrs: dict) -> SSAValue:
        low, high = attrs.get("min", -np.inf), attrs.get("max", np.inf)  # opset < 11
        if len(node.input) > 1 and node.input[1]:
            low = float(self.const_array(node, node.input[1]).reshape(-1)[0])
        if len(node.input) > 2 and node.input[2]:
            high = float(self.const_array(node, node.input[2]).reshape(-1)[0])
        return self.emit(graph.ClipOp(self.value(node.input[0]), low, high))

    def op_Conv(self, node: onnx.NodeProto, attrs: dict) -> SSAValue:
        x, w = node.input[0], node.input[1]
        kernel = self.shape(w)[2:]
        strides, pads, dilations = _window_attrs(attrs, self.shape(x)[2:], kernel)
        bias = self.value(node.input[2]) if len(node.input) > 2 and node.input[2] else None
        op = graph.Conv2dOp(
            self.value(x), self.value(w), bias,
            strides=strides, pads=pads, dilations=dilations, groups=attrs.get("group", 1),
        )  # fmt: skip
        return self.emit(op)

    def _pool(self, node: onnx.NodeProto, attrs: dict, dilate: bool):
        kernel = list(attrs["kernel_shape"])
        sizes = self.shape(node.input[0])[2:]
        strides, pads, dilations = _window_attrs(attrs, sizes, kernel, dilate)
        return kernel, strides, pads, dilations, bool(attrs.get("ceil_mode", 0))

    def op_MaxPool(self, node: onnx.NodeProto, attrs: dict) -> SSAValue:
        kernel, strides, pads, dilations, ceil_mode = self._pool(node, attrs, True)
        x = self.value(node.input[0])
        return self.emit(graph.MaxPool2dOp(x, kernel, strides, pads, dilations, ceil_mode))

    def op_AveragePool(self, node: onnx.NodeProto, attrs: dict) -> SSAValue:
        kernel, strides, pads, _, ceil_mode = self._pool(node, attrs, False)
        x = self.value(node.input[0])
        include_pad = bool(attrs.get("count_include_pad", 0))
        return self.emit(graph.AvgPool2dOp(x, kernel, strides, pads, ceil_mode, include_pad))

    def op_GlobalAveragePool(self, node: onnx.NodeProto, attrs: dict) -> SSAValue:
        return self.emit(graph.GlobalAvgPool2dOp(self.value(node.input[0])))

    def op_GlobalMaxPool(self, node: onnx.NodeProto, attrs: dict) -> SSAValue:
        return self.emit(graph.GlobalMaxPool2dOp(self.value(node.input[0])))

    def op_Flatten(self, node: onnx.NodeProto, attrs: dict) -> SSAValue:
        shape = self.shape(node.input[0])
        axis = attrs.get("axis", 1)
        axis = axis + len(shape) if axis < 0 else axis
        target = (prod(shape[:axis]), prod(shape[axis:]))
        return self.emit(graph.ReshapeOp(self.value(node.input[0]), target))

    def op_Reshape(self, node: onnx.NodeProto, attrs: dict) -> SSAValue:
        shape = self.shape(node.input[0])
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
        return self.emit(graph.ReshapeOp(self.value(node.input[0]), target))

    def op_Transpose(self, node: onnx.NodeProto, attrs: dict) -> SSAValue:
        rank = len(self.shape(node.input[0]))
        perm = list(attrs.get("perm", range(rank - 1, -1, -1)))
        return self.emit(graph.TransposeOp(self.value(node.input[0]), perm))

    def op_MatMul(self, node: onnx.NodeProto, attrs: dict) -> SSAValue:
        """numpy matmul; 1-D operands get a unit dimension added, then dropped."""
        a, b = self.value(node.input[0]), self.value(node.input[1])
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
        a = self.value(node.input[0])
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
            b = self.value(b_name)
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


SUPPORTED_OPS: frozenset[str] = frozenset(
    {name[3:] for name in dir(_Importer) if name.startswith("op_")} - {"binary", "unary"}
    | set(_BINARY_OPS)
    | set(_UNARY_OPS)
    | {"Constant"}
)
"""ONNX operator types (default domain) that `load_onnx` imports."""


# --------------------------------------------------------------------------------------
# Entry point
# --------------------------------------------------------------------------------------


def load_onnx(
    path_or_model: str | Path | onnx.ModelProto,
    input_shapes: dict[str, tuple[int, ...]] | None = None,
) -> ModuleOp:
    """Import an ONNX model as a verified graph-stage module with `func.func @main`.

    `input_shapes` binds symbolic (or unknown) input dimensions, e.g. {"data": (1, 3, 224, 224)}.
    Raises ModelError (unreadable file, non-float32 inputs, shapes that cannot be
    inferred) or UnsupportedOpsError (listing every unsupported operator and node).
    """
    model, source = _read_model(path_or_model)
    original = model.graph
    initializers = {t.name for t in original.initializer}
    inputs = [v for v in original.input if v.name not in initializers]

    # Operators first, before anything else is checked or converted.
    constant_names = initializers | {
        n.output[0] for n in original.node if n.op_type == "Constant" and n.domain in ("", "ai.onnx")
    }
    used = {n for node in original.node for n in node.input if n} | {v.name for v in original.output}
    if _unsupported(original.node, constant_names, {}, used):
        ranks = _ranks(_inferred_or_none(model, strict=False) or model)  # best effort
        raise _unsupported_error(_unsupported(original.node, constant_names, ranks, used))

    for v in (*inputs, *original.output):
        elem = v.type.tensor_type.elem_type
        if elem not in (onnx.TensorProto.FLOAT, onnx.TensorProto.UNDEFINED):
            kind = "input" if v in inputs else "output"
            raise ModelError(
                f"{source}: {kind} '{v.name}' has element type "
                f"{onnx.TensorProto.DataType.Name(elem)}; xweave supports float32 models only"
            )

    # Bind input shapes on a copy, then infer every value's shape.
    model_copy = onnx.ModelProto()
    model_copy.CopyFrom(model)
    copy_inputs = [v for v in model_copy.graph.input if v.name not in initializers]
    _bind_input_shapes(model_copy, copy_inputs, dict(input_shapes or {}))
    try:
        inferred = onnx.shape_inference.infer_shapes(model_copy, strict_mode=True, data_prop=True)
    except Exception as e:
        raise ModelError(f"{source}: ONNX shape inference failed: {e}") from e
    g = inferred.graph
    if problems := _unsupported(g.node, constant_names, _ranks(inferred), used):
        raise _unsupported_error(problems)  # unsupported ranks (1-D conv, ...)

    dims: dict[str, list[int | str | None] | None] = {}
    for v in (*g.input, *g.value_info, *g.output):
        if (d := _dims(v)) is not None or v.name not in dims:
            dims[v.name] = d

    constants: dict[str, np.ndarray] = {t.name: numpy_helper.to_array(t) for t in g.initializer}
    for node in g.node:
        if node.op_type == "Constant" and node.domain in ("", "ai.onnx"):
            constants[node.output[0]] = _constant_node_value(node)
    for name, array in constants.items():
        dims[name] = list(array.shape)

    # Every tensor the conversion reads must have a static shape.
    producers = {o: node for node in g.node for o in node.output if o}
    shapes: dict[str, tuple[int, ...]] = {}
    for name in [v.name for v in inputs] + list(producers):
        d = dims.get(name)
        if d is None or not all(isinstance(x, int) and x >= 0 for x in d):
            if name in producers and name not in used:
                continue  # nobody reads it
            node = producers.get(name)
            shown = "unknown rank" if d is None else "[" + ", ".join(map(str, d)) + "]"
            shown = shown.replace("None", "?")
            if node is None:
                where, hint = "model input", "bind it with input_shapes={...}"
            else:
                where = f"output of {node.op_type} '{node.name}'"
                hint = "bind the symbolic input dimensions with input_shapes={...}"
            raise ModelError(
                f"{source}: the shape of tensor '{name}' ({where}) cannot be inferred "
                f"statically: {shown}; {hint}"
            )
        shapes[name] = tuple(d)  # pyright: ignore[reportArgumentType]
    shapes.update({name: tuple(a.shape) for name, a in constants.items()})

    block = Block(arg_types=[TensorType(f32, shapes[v.name]) for v in inputs])
    importer = _Importer(shapes, constants, block)
    importer.values.update({v.name: arg for v, arg in zip(inputs, block.args)})
    for node in g.node:
        if node.op_type != "Constant" and node.output[0] in used:
            importer.convert(node)

    results = [importer.value(v.name) for v in g.output]
    block.add_op(func.ReturnOp(*results))
    main = func.FuncOp(
        "main", ([a.type for a in block.args], [r.type for r in results]), Region(block)
    )
    main.attributes["xweave.input_names"] = ArrayAttr([StringAttr(v.name) for v in inputs])
    main.attributes["xweave.output_names"] = ArrayAttr([StringAttr(v.name) for v in g.output])
    module = ModuleOp([main])
    module.verify()
    return module
