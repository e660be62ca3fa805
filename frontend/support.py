"""Which nodes of an ONNX graph can be imported, decided before any conversion.

`plan` finds the nodes evaluated at import time (all their inputs known); `unsupported`
lists every other node whose operator is not declared in the registry, or whose
declaration rejects it (its `check`, its constant inputs); `check_shape_inputs` refuses
a shape that depends on run-time data.
"""

from __future__ import annotations

from collections.abc import Sequence

import onnx

from xweave.errors import ModelError, UnsupportedOpsError
from xweave.frontend.registry import OPS, NodeCheck

NONDETERMINISTIC = frozenset({"RandomNormal", "RandomUniform", "RandomNormalLike",
                              "RandomUniformLike", "Bernoulli", "Multinomial"})
"""Never evaluated at import time."""


def attributes(node: onnx.NodeProto) -> dict[str, object]:
    """The node's attributes by name (strings decoded)."""
    attrs = {}
    for a in node.attribute:
        value = onnx.helper.get_attribute_value(a)
        attrs[a.name] = value.decode() if isinstance(value, bytes) else value
    return attrs


def short_label(node: onnx.NodeProto, index: int) -> str:
    """How lists of unsupported nodes name a node: its name, or its index and outputs."""
    return node.name or f"#{index} (-> {', '.join(o for o in node.output if o) or '?'})"


def is_default_domain(node: onnx.NodeProto) -> bool:
    return node.domain in ("", "ai.onnx")


def _has_subgraph(node: onnx.NodeProto) -> bool:
    return any(a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS)
               for a in node.attribute)


def plan(nodes: Sequence[onnx.NodeProto], constants: set[str]) -> tuple[set[int], set[str]]:
    """(indices of the nodes evaluated at import time, every tensor known then)."""
    known = set(constants)
    folded: set[int] = set()
    for index, node in enumerate(nodes):
        if not is_default_domain(node) or node.op_type in NONDETERMINISTIC or _has_subgraph(node):
            continue
        declared = OPS.get(node.op_type)
        if declared is not None and not declared.fold:
            continue
        if declared is None or declared.import_time_inputs is None:
            inputs = [n for n in node.input if n]
        else:
            inputs = [node.input[i] for i in declared.import_time_inputs
                      if len(node.input) > i and node.input[i]]
        if ((declared is not None and declared.always_import_time)
                or (inputs and all(n in known for n in inputs))):
            folded.add(index)
            known.update(o for o in node.output if o)
    return folded, known


def unsupported(
    nodes: Sequence[onnx.NodeProto], folded: set[int], known: set[str], ranks: dict[str, int],
    used: set[str], opset: int,
) -> dict[str, list[str]]:
    """{unsupported op type (and why): [node labels]}; ranks may be empty (not inferred)."""
    problems: dict[str, list[str]] = {}
    for index, node in enumerate(nodes):
        if index in folded:
            continue
        label = short_label(node, index)
        key = node.op_type if is_default_domain(node) else f"{node.domain}.{node.op_type}"
        declared = OPS.get(key) if is_default_domain(node) else None
        if declared is None or not declared.supported:
            problems.setdefault(key, []).append(label)
            continue
        check = NodeCheck(node, attributes(node), known, ranks, used, opset)
        if (reason := declared.reason_unsupported(check)) is not None:
            problems.setdefault(f"{key} with {reason}", []).append(label)
    return problems


def unsupported_error(problems: dict[str, list[str]]) -> UnsupportedOpsError:
    """One error listing every unsupported operator (and why) with its nodes."""
    listing = "; ".join(f"{op} (nodes: {', '.join(labels)})" for op, labels in problems.items())
    error = UnsupportedOpsError(f"unsupported ONNX operators: {listing}")
    error.ops = problems  # pyright: ignore[reportAttributeAccessIssue]
    return error


def check_shape_inputs(
    nodes: Sequence[onnx.NodeProto], folded: set[int], known: set[str], used: set[str],
    source: str,
) -> None:
    """A ModelError naming the first tensor whose shape depends on run-time data."""
    for index, node in enumerate(nodes):
        if index in folded or not any(o in used for o in node.output if o):
            continue
        declared = OPS.get(node.op_type) if is_default_domain(node) else None
        for i in declared.shape_inputs if declared is not None else ():
            if len(node.input) > i and node.input[i] and node.input[i] not in known:
                raise ModelError(
                    f"{source}: the shape of tensor '{node.output[0]}' (output of "
                    f"{node.op_type} '{short_label(node, index)}') cannot be inferred "
                    f"statically: its input '{node.input[i]}' is computed at run time"
                )
