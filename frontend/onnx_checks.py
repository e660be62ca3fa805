"""Checks of an ONNX model before it is imported: one clear error per malformed model.

`check_model` refuses what ONNX itself (the spec, `onnx.checker`, onnxruntime) refuses,
with a `ModelError` naming the model, the node (name and op type), the attribute or
input, and the problem:

* IR version and opset imports in the range this onnx release knows;
* graph inputs and outputs with an element type;
* the graph in topological order (the spec requires it), without cycles, every input
  defined, every tensor produced once, every graph output computed;
* each node of a known operator against its schema (`onnx.checker.check_node`: input
  and output counts, attribute names and types) and the values of the attributes of
  windowed operators (conv, pooling: `auto_pad`, strides, dilations, pads, kernel);
* initializers whose data matches their declared shape (`onnx.checker.check_tensor`);
* sizes: no constant (initializer, folded value) of more than `MAX_ELEMENTS` elements,
  allocated at import, and no run-time tensor (model input, node output) of more
  float32 elements than this machine's memory holds (`runtime_element_limit`): such a
  tensor could never be allocated, and a model file of a few hundred bytes claiming one
  must not make the compiler work in proportion to it. Below that, a model compiles, and
  a run that does not fit is one `ArenaError` (the arena is allocated per call).

`onnx.checker.check_model` itself is not used: it also requires a shape on every graph
input and output, which ONNX Runtime does not and many exported models lack; its node
and tensor checks are (`check_node`, `check_tensor`).

`check_ranks`, `check_window` (conv and pooling nodes, once their input shapes are known) and
`check_size` (every imported tensor) are used by the importer.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from math import prod

import onnx
from onnx import checker, defs, numpy_helper

from xweave.errors import ModelError

MAX_ELEMENTS = 2**31 - 1
"""The most elements one constant may have (8 GiB of float32): it is allocated at import."""

MAX_RUNTIME_ELEMENTS = 2**40
"""The most elements one run-time tensor may have on any machine (4 TiB of float32)."""


def runtime_element_limit() -> int:
    """The most elements one run-time tensor may have here: as many float32 as this
    machine's physical memory holds, and at most `MAX_RUNTIME_ELEMENTS`."""
    try:
        memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # not a POSIX system
        return MAX_RUNTIME_ELEMENTS
    return min(MAX_RUNTIME_ELEMENTS, max(memory, 1) // 4)

MAX_WINDOW_WORK = 2**38
"""The most multiply-adds (conv) or window steps (pooling) one windowed node may take:
far above any real layer's 10^9-10^10, far below a kernel of 2^31 taps that would run
for hours."""

MIN_IR_VERSION = 3
"""The first IR version with opset imports (onnxruntime's minimum)."""

AUTO_PAD = ("NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID")

WINDOW_OPS = frozenset({"Conv", "ConvTranspose", "MaxPool", "AveragePool", "LpPool"})
"""Operators with kernel_shape / strides / dilations / pads attributes."""


def node_label(node: onnx.NodeProto, index: int) -> str:
    """How errors name a node: `'name' (OpType)`, or its index and outputs if unnamed."""
    name = node.name or f"#{index} -> {', '.join(o for o in node.output if o) or '?'}"
    return f"node '{name}' ({node.op_type})"


def _fail(source: str, message: str) -> ModelError:
    return ModelError(f"{source}: {message}")


def _one_line(error: Exception) -> str:
    return " ".join(str(error).split())


def default_opset(model: onnx.ModelProto) -> int | None:
    """The version of the default (ai.onnx) operator set the model imports, or None."""
    for o in model.opset_import:
        if o.domain in ("", "ai.onnx"):
            return o.version
    return None


def check_model(model: onnx.ModelProto, source: str) -> None:
    """Refuse a malformed model with a `ModelError` (see the module docstring)."""
    _check_versions(model, source)
    graph = model.graph
    _check_value_types(graph, source)
    _check_initializers(model, source)
    _check_order(graph, source)
    context = checker.C.CheckerContext()
    context.ir_version = model.ir_version
    context.opset_imports = {("" if o.domain == "ai.onnx" else o.domain): o.version
                             for o in model.opset_import}
    for index, node in enumerate(graph.node):
        _check_node(node, index, context, source)


def _check_versions(model: onnx.ModelProto, source: str) -> None:
    if not MIN_IR_VERSION <= model.ir_version <= onnx.IR_VERSION:
        raise _fail(source, f"IR version {model.ir_version} is not supported (expected "
                            f"{MIN_IR_VERSION} to {onnx.IR_VERSION})")
    latest = defs.onnx_opset_version()
    opset = default_opset(model)
    if opset is None:
        raise _fail(source, "the model imports no version of the default ONNX operator set "
                            "(opset_import has no entry for domain '')")
    seen = set()
    for o in model.opset_import:
        domain = o.domain or "ai.onnx"
        if domain in seen:
            raise _fail(source, f"opset_import lists domain '{o.domain}' twice")
        seen.add(domain)
        high = latest if domain == "ai.onnx" else None
        if o.version < 1 or (high is not None and o.version > high):
            expected = f"1 to {high}" if high is not None else "at least 1"
            raise _fail(source, f"opset version {o.version} of domain '{o.domain}' is not "
                                f"supported (expected {expected})")


def _check_value_types(graph: onnx.GraphProto, source: str) -> None:
    initializers = {t.name for t in graph.initializer}
    for kind, values in (("input", graph.input), ("output", graph.output)):
        for v in values:
            if kind == "input" and v.name in initializers:
                continue
            if not v.name:
                raise _fail(source, f"a graph {kind} has no name")
            if v.type.HasField("tensor_type"):
                t = v.type.tensor_type
                if t.elem_type == onnx.TensorProto.UNDEFINED:
                    raise _fail(source, f"graph {kind} '{v.name}' has no element type "
                                        "(UNDEFINED)")
                if t.elem_type not in onnx.TensorProto.DataType.values():
                    raise _fail(source, f"graph {kind} '{v.name}' has an unknown element "
                                        f"type {t.elem_type}")
                if kind == "input" and t.HasField("shape"):
                    dims = [d.dim_value for d in t.shape.dim if d.HasField("dim_value")]
                    if any(d < 0 for d in dims):
                        raise _fail(source, f"graph input '{v.name}' has a negative "
                                            f"dimension {min(dims)}")
                    if len(dims) == len(t.shape.dim):
                        check_size(source, f"graph input '{v.name}'", dims,
                                   runtime_element_limit())


def _check_initializers(model: onnx.ModelProto, source: str) -> None:
    context = checker.C.CheckerContext()
    context.ir_version = model.ir_version
    for t in model.graph.initializer:
        if any(d < 0 for d in t.dims):
            raise _fail(source, f"initializer '{t.name}' has a negative dimension "
                                f"{list(t.dims)}")
        check_size(source, f"initializer '{t.name}'", t.dims)
        if t.data_type == onnx.TensorProto.UNDEFINED:
            raise _fail(source, f"initializer '{t.name}' has no element type (UNDEFINED)")
        if t.data_type not in onnx.TensorProto.DataType.values():
            raise _fail(source, f"initializer '{t.name}' has an unknown element type "
                                f"{t.data_type}")
        try:
            checker.check_tensor(t, context)
        except checker.ValidationError as e:
            raise _fail(source, f"initializer '{t.name}': {_one_line(e)}") from None


def initializer_arrays(model: onnx.ModelProto, source: str) -> dict:
    """The initializers as numpy arrays; data that does not match the declared shape
    (more of it than the shape holds, say) is a `ModelError` naming the initializer."""
    arrays = {}
    for t in model.graph.initializer:
        try:
            arrays[t.name] = numpy_helper.to_array(t)
        except (ValueError, TypeError) as e:
            raise _fail(source, f"initializer '{t.name}': its data does not match its shape "
                                f"{list(t.dims)} ({_one_line(e)})") from None
    return arrays


def _check_order(graph: onnx.GraphProto, source: str) -> None:
    """Every node input defined by an earlier node, a graph input or an initializer."""
    defined = {v.name for v in graph.input} | {t.name for t in graph.initializer}
    producer: dict[str, int] = {}
    for index, node in enumerate(graph.node):
        for out in node.output:
            if not out:
                continue
            if out in producer or out in defined:
                first = (node_label(graph.node[producer[out]], producer[out])
                         if out in producer else "a graph input or initializer")
                raise _fail(source, f"{node_label(node, index)}: output '{out}' is already "
                                    f"produced by {first} (every tensor is produced once)")
            producer[out] = index
    available = set(defined)
    for index, node in enumerate(graph.node):
        for slot, name in enumerate(node.input):
            if not name or name in available:
                continue
            label = node_label(node, index)
            if name not in producer:
                raise _fail(source, f"{label}: input {slot} '{name}' is not defined (no "
                                    "graph input, initializer or node output has that name)")
            cycle = _cycle(graph, producer, index)
            if cycle is not None:
                raise _fail(source, f"{label}: the graph has a cycle: "
                                    + " -> ".join(cycle))
            later = producer[name]
            raise _fail(source, f"{label}: input {slot} '{name}' is produced by a later "
                                f"{node_label(graph.node[later], later)}: the nodes are not "
                                "in topological order, as ONNX requires")
        available.update(o for o in node.output if o)
    for v in graph.output:
        if v.name not in available:
            raise _fail(source, f"graph output '{v.name}' is not computed by any node")


def _cycle(graph: onnx.GraphProto, producer: dict[str, int], start: int) -> list[str] | None:
    """Node labels around a cycle through node `start`, or None."""
    path: list[int] = []
    on_path: set[int] = set()
    done: set[int] = set()

    def visit(index: int) -> list[int] | None:
        if index in on_path:
            return path[path.index(index):] + [index]
        if index in done:
            return None
        path.append(index)
        on_path.add(index)
        for name in graph.node[index].input:
            if name in producer and (found := visit(producer[name])) is not None:
                return found
        path.pop()
        on_path.discard(index)
        done.add(index)
        return None

    found = visit(start)
    return None if found is None else [node_label(graph.node[i], i) for i in found]


def _check_node(node: onnx.NodeProto, index: int, context, source: str) -> None:
    label = node_label(node, index)
    domain = "" if node.domain == "ai.onnx" else node.domain
    version = context.opset_imports.get(domain)
    if version is None:
        raise _fail(source, f"{label}: domain '{node.domain}' is not in the model's "
                            "opset_import")
    if not defs.has(node.op_type, domain):
        return  # an unknown operator: reported with every unsupported one
    try:
        schema = defs.get_schema(node.op_type, version, domain)
    except defs.SchemaError:
        return  # not defined at this opset: reported as unsupported too
    if not schema.deprecated:  # (the checker refuses deprecated operators outright)
        try:
            checker.check_node(node, context)
        except checker.ValidationError as e:
            raise _fail(source, f"{label}: {_one_line(e)}") from None
    if node.op_type in WINDOW_OPS and domain == "":
        _check_window_attributes(node, label, source)


def _attribute(node: onnx.NodeProto, name: str):
    for a in node.attribute:
        if a.name == name:
            value = onnx.helper.get_attribute_value(a)
            return value.decode(errors="replace") if isinstance(value, bytes) else value
    return None


def _check_window_attributes(node: onnx.NodeProto, label: str, source: str) -> None:
    auto_pad = _attribute(node, "auto_pad")
    if auto_pad is not None and auto_pad not in AUTO_PAD:
        raise _fail(source, f"{label}: attribute auto_pad is '{auto_pad}' (expected one of "
                            f"{', '.join(AUTO_PAD)})")
    kernel = _attribute(node, "kernel_shape")
    spatial = len(kernel) if kernel is not None else None
    for name, low in (("kernel_shape", 1), ("strides", 1), ("dilations", 1), ("pads", 0),
                      ("output_padding", 0)):
        values = _attribute(node, name)
        if values is None:
            continue
        values = list(values)
        if any(v < low for v in values):
            raise _fail(source, f"{label}: attribute {name} is {values} (every value must "
                                f"be at least {low})")
        length = None if spatial is None else (2 * spatial if name == "pads" else spatial)
        if name == "pads" and len(values) % 2:
            raise _fail(source, f"{label}: attribute pads is {values}: expected a begin and "
                                "an end per spatial axis (an even count)")
        if length is not None and len(values) != length:
            raise _fail(source, f"{label}: attribute {name} is {values}: expected {length} "
                                f"values for the {spatial}-D kernel_shape {list(kernel)}")
    group = _attribute(node, "group")
    if group is not None and group < 1:
        raise _fail(source, f"{label}: attribute group is {group} (expected at least 1)")


def check_size(source: str, what: str, shape: Sequence[int],
               limit: int = MAX_ELEMENTS) -> None:
    """Refuse a tensor of more than `limit` elements before anything allocates it."""
    count = prod(int(d) for d in shape)
    if count > limit:
        why = (", as many float32 as this machine's memory holds"
               if limit == runtime_element_limit() < MAX_RUNTIME_ELEMENTS else "")
        raise _fail(source, f"{what} of shape {list(shape)} is too large: {count} elements "
                            f"(at most {limit}{why})")


def check_ranks(source: str, label: str, data: Sequence[int], weight: Sequence[int] | None,
                spatial: int) -> None:
    """The data (and weights) of a conv/pool node with `spatial` window axes."""
    if len(data) != 2 + spatial:
        raise _fail(source, f"{label}: input 0 has rank {len(data)} {list(data)}; a "
                            f"{spatial}-D window needs rank {2 + spatial}")
    if weight is not None and len(weight) != len(data):
        raise _fail(source, f"{label}: input 1 (weights) has rank {len(weight)} "
                            f"{list(weight)} but the data has rank {len(data)}")


def check_window(source: str, label: str, data: Sequence[int], kernel: Sequence[int],
                 strides: Sequence[int], pads: Sequence[int], dilations: Sequence[int],
                 outer: int = 1, per_tap: int = 1) -> None:
    """A (dilated) kernel that fits the padded input of a conv/pool node (pads: begins,
    then ends), and at most `MAX_WINDOW_WORK` window taps in all: `outer` (batch x
    output channels) x output positions x kernel taps x `per_tap` (input channels per
    group)."""
    n = len(kernel)
    if len(strides) != n or len(dilations) != n or len(pads) != 2 * n:
        raise _fail(source, f"{label}: strides {list(strides)}, dilations {list(dilations)} "
                            f"and pads {list(pads)} do not match the {n}-D kernel")
    sizes = list(data[2:])
    for axis in range(n):
        span = dilations[axis] * (kernel[axis] - 1) + 1
        room = sizes[axis] + pads[axis] + pads[axis + n]
        if span > room:
            raise _fail(source, f"{label}: the kernel {list(kernel)} (dilations "
                                f"{list(dilations)}) is larger than the input {sizes} padded "
                                f"by pads {list(pads)} (spatial axis {axis}: {span} > {room})")
    positions = prod((sizes[a] + pads[a] + pads[a + n] - dilations[a] * (kernel[a] - 1) - 1)
                     // strides[a] + 1 for a in range(n))
    work = outer * positions * prod(kernel) * per_tap
    if work > MAX_WINDOW_WORK:
        raise _fail(source, f"{label}: too large: the kernel {list(kernel)} over the input "
                            f"{sizes} (pads {list(pads)}, strides {list(strides)}) takes {work} "
                            f"window steps (at most {MAX_WINDOW_WORK})")
