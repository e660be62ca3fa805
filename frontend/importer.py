"""The state of one ONNX import: tensor names -> SSA values, known constants, shapes.

`Importer.convert` imports one node through its declared converter (`registry.OPS`),
`Importer.fold` evaluates one at import time (its declared evaluator, else ONNX's
reference implementation); the converters (`xweave.frontend.ops`) build graph ops
through the helpers here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import onnx
from xdsl.dialects.builtin import i1
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.utils.exceptions import VerifyException

from xweave.dialects import graph
from xweave.dialects.dtypes import numpy_dtype
from xweave.errors import ModelError, UnsupportedOpsError
from xweave.frontend.onnx_checks import check_size, node_label, runtime_element_limit
from xweave.frontend.registry import OPS
from xweave.frontend.support import attributes, short_label, unsupported_error


def normalize_axes(axes: Sequence[int], rank: int, node: onnx.NodeProto) -> list[int]:
    """`axes` of a rank-`rank` tensor made non-negative (a ModelError if out of range)."""
    result = []
    for a in axes:
        a = int(a)
        if not -rank <= a < max(rank, 1):
            raise ModelError(f"{node.op_type} '{node.name}': axis {a} is out of range for rank {rank}")
        result.append(a + rank if a < 0 else a)
    return result


def element(value: SSAValue) -> Attribute:
    """The element type of a tensor value."""
    return value.type.element_type  # pyright: ignore[reportAttributeAccessIssue]


def evaluate_reference(node: onnx.NodeProto, inputs: list[np.ndarray | None], opset: int) -> list:
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



@dataclass
class Importer:
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
        """Verify `op` (a ModelError naming the node otherwise), append it, return its result."""
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
        """A new graph.constant named `name` holding `array`."""
        return self.emit(graph.ConstantOp.from_array(name, array))

    def value(self, name: str) -> SSAValue:
        """The SSA value of ONNX tensor `name`; constants are emitted on first use."""
        if name not in self.values:
            if name not in self.constants:
                raise ModelError(f"tensor '{name}' is used before it is defined")
            array = np.asarray(self.constants[name])
            if array.dtype not in (np.float32, np.int64, np.int32, np.bool_, np.int8, np.uint8):
                raise ModelError(
                    f"constant '{name}' has dtype {array.dtype}; only float32 data, "
                    "int8/uint8 quantized data (and int32/int64/bool indices and "
                    "conditions) is supported"
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
        """The numpy element type of tensor `name`."""
        if name in self.values:
            return numpy_dtype(self.values[name].type.element_type)  # pyright: ignore
        return np.asarray(self.constants[name]).dtype

    def shape(self, name: str) -> tuple[int, ...]:
        """The static shape of tensor `name`."""
        if name in self.values:
            return self.values[name].type.get_shape()  # pyright: ignore[reportAttributeAccessIssue]
        if name in self.constants:
            return tuple(np.shape(self.constants[name]))
        raise ModelError(f"tensor '{name}' is used before it is defined")

    def const_array(self, node: onnx.NodeProto, name: str) -> np.ndarray:
        """The value of tensor `name`, which must be known at import time."""
        if name not in self.constants:
            raise ModelError(f"{node.op_type} '{node.name}': input '{name}' must be a constant")
        return np.asarray(self.constants[name])

    def optional_const(self, node: onnx.NodeProto, i: int) -> np.ndarray | None:
        """Input i as a constant array, None if absent."""
        if len(node.input) > i and node.input[i]:
            return self.const_array(node, node.input[i])
        return None

    def unsupported(self, node: onnx.NodeProto, reason: str) -> UnsupportedOpsError:
        """The error for `node` unsupported because of `reason` (for the converter to raise)."""
        return unsupported_error({f"{node.op_type} with {reason}": [short_label(node, self.index)]})

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
        """`value` reshaped to `shape` (itself if it has that shape)."""
        if tuple(self.shape_of_value(value)) == tuple(shape):
            return value
        return self.emit(graph.ReshapeOp(value, shape))

    @staticmethod
    def shape_of_value(value: SSAValue) -> tuple[int, ...]:
        """The shape of a tensor value."""
        return value.type.get_shape()  # pyright: ignore[reportAttributeAccessIssue]

    def scalar(self, value: float) -> SSAValue:
        """A float32 scalar constant."""
        return self.constant("scalar", np.float32(value))

    def axes(self, node: onnx.NodeProto, attrs: dict, input_from: int) -> list[int] | None:
        """`axes` as an attribute (opset < input_from) or input 1; None if absent."""
        if self.opset >= input_from:
            array = self.optional_const(node, 1)
            return None if array is None else [int(a) for a in array.reshape(-1)]
        return list(attrs["axes"]) if "axes" in attrs else None

    # ---- driving ---------------------------------------------------------------------

    def fold(self, node: onnx.NodeProto) -> None:
        """Evaluate a node whose inputs are known, at import time."""
        attrs = attributes(node)
        op = node.op_type
        declared = OPS.get(op)
        if declared is not None and declared.evaluate is not None:
            outputs = declared.evaluate(self, node, attrs)
        else:
            for out in node.output:
                if out in self.onnx_shapes:
                    check_size(self.source, f"{self.label}: output '{out}'", self.onnx_shapes[out],
                               runtime_element_limit())
            inputs = [np.asarray(self.constants[n]) if n else None for n in node.input]
            try:
                outputs = evaluate_reference(node, inputs, self.opset)
            except Exception as e:
                raise unsupported_error({
                    f"{op} (import-time evaluation failed: {type(e).__name__}: {e})":
                        [short_label(node, self.index)]
                }) from e
        for name, array in zip(node.output, outputs):
            if name:
                self.constants[name] = np.asarray(array)

    def convert(self, node: onnx.NodeProto) -> None:
        """Import a node through its declared converter; ONNX's inferred shapes, where
        known, cross-check the results."""
        attrs = attributes(node)
        op = node.op_type
        convert = OPS[op].convert
        assert convert is not None  # the support check refused it otherwise
        for name in node.input:
            if name in self.values and 0 in self.shape(name):
                raise self.unsupported(node, f"an empty input ('{name}' of shape "
                                             f"{list(self.shape(name))})")
        results = convert(self, node, attrs)
        if not isinstance(results, list):
            results = [results]
        for out, result in zip(node.output, results):
            if not out:
                continue
            expected, got = self.onnx_shapes.get(out), self.shape_of_value(result)
            check_size(self.source, f"{self.label}: output '{out}'", got,
                       runtime_element_limit())
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
