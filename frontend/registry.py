"""The ONNX operators the frontend imports: one declaration per operator (or family).

A declaration (`OnnxOp`) holds together everything the importer knows of an operator:

* `convert`: its converter to graph-dialect ops, `convert(importer, node, attrs)`
  returning the SSA value of each output (a value, or a list for several outputs);
* `check`: the support rules decided before anything is converted (attribute values,
  opsets, ranks, used outputs), `check(node) -> reason or None` on a `NodeCheck`; a
  reason makes the node unsupported ("<op> with <reason>");
* the roles of its inputs: `shape_inputs` decide an output's shape and must be known at
  import time (a `ModelError` otherwise); `constant_inputs` are values read at import
  time (Clip's bounds, Pad's value): a non-constant one makes the node unsupported
  with `constant_reason`;
* import-time evaluation: `evaluate(importer, node, attrs)` computes the outputs from
  constant inputs instead of ONNX's reference implementation, and `import_time_inputs`
  names the inputs that must be known for that (None: all of them; (): none, the
  operator is always evaluated at import time); `fold=False` keeps the operator as a
  graph op even on constant inputs (DequantizeLinear of quantized weights: the QDQ
  rewrite reads the integers, a later pass folds what it leaves).

Converters are declared with the `onnx_op` decorator next to their code in
`xweave.frontend.ops`; `OPS` maps each ONNX operator type (default domain) to its
declaration.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import onnx

if TYPE_CHECKING:
    from xdsl.ir import SSAValue

Converter = Callable[[Any, onnx.NodeProto, dict], "SSAValue | list[SSAValue]"]
"""`convert(importer, node, attrs)`: the graph-dialect value of each output."""

Evaluator = Callable[[Any, onnx.NodeProto, dict], list]
"""`evaluate(importer, node, attrs)`: the numpy value of each output, at import time."""


@dataclass(frozen=True)
class NodeCheck:
    """What the support check of one node may look at (before any conversion).

    `ranks` may be empty (shape inference not run yet, or failed); `known` holds the
    tensors known at import time, `used` those some node or graph output reads.
    """

    node: onnx.NodeProto
    attrs: dict
    known: set[str]
    ranks: dict[str, int]
    used: set[str]
    opset: int

    def rank(self, i: int) -> int | None:
        """The rank of input i, None if absent or unknown."""
        return self.ranks.get(self.node.input[i]) if len(self.node.input) > i else None

    def output_used(self, i: int) -> bool:
        """Whether output i exists and is read."""
        return len(self.node.output) > i and self.node.output[i] in self.used


@dataclass(frozen=True)
class OnnxOp:
    """One ONNX operator: its converter, support check and input roles (module docstring)."""

    name: str
    convert: Converter | None = None
    check: Callable[[NodeCheck], str | None] | None = None
    shape_inputs: tuple[int, ...] = ()
    constant_inputs: tuple[int, ...] = ()
    constant_reason: str = ""
    evaluate: Evaluator | None = None
    import_time_inputs: tuple[int, ...] | None = None
    fold: bool = True

    def __post_init__(self) -> None:
        if self.constant_inputs and not self.constant_reason:
            raise ValueError(f"{self.name}: constant_inputs need a constant_reason")

    @property
    def always_import_time(self) -> bool:
        """Evaluated at import time whatever its inputs (e.g. Shape: shapes are static)."""
        return self.import_time_inputs == ()

    @property
    def supported(self) -> bool:
        """Imported on run-time data: it has a converter, or never needs one."""
        return self.convert is not None or (self.always_import_time and self.evaluate is not None)

    def reason_unsupported(self, check: NodeCheck) -> str | None:
        """Why this node cannot be imported (its constant inputs, then `check`), or None."""
        node = check.node
        if any(len(node.input) > i and node.input[i] and node.input[i] not in check.known
               for i in self.constant_inputs):
            return self.constant_reason
        return self.check(check) if self.check is not None else None


OPS: dict[str, OnnxOp] = {}
"""Every declared ONNX operator (default domain), by op type."""


def register(op: OnnxOp) -> OnnxOp:
    """Declare `op`; an operator is declared once."""
    if op.name in OPS:
        raise ValueError(f"ONNX operator {op.name} is declared twice")
    OPS[op.name] = op
    return op


def onnx_op(*names: str, **declaration: Any) -> Callable[[Converter], Converter]:
    """Declare the decorated function as the converter of ONNX operators `names`, with
    the other fields of `OnnxOp` (check, shape_inputs, constant_inputs, ...)."""

    def decorate(convert: Converter) -> Converter:
        for name in names:
            register(OnnxOp(name, convert, **declaration))
        return convert

    return decorate
