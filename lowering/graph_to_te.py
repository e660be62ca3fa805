"""convert-graph-to-te: every graph op becomes a call of a tensor-expression kernel.

Kernels are defined by the operator library (`xweave.operators`) with the TE
builder. Ops with equal type, attributes and operand types share one kernel. A
`graph.fused` group becomes one kernel: each op's computes read the tensors of the
ops before it instead of placeholders; equal groups share one kernel.
`graph.constant` stays in `@main`: constants are bufferized by `convert-te-to-loop`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    ModuleOp,
    TensorType,
)
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter

from xweave import te
from xweave.dialects import dtypes, graph, loop
from xweave.dialects.attributes import python_value
from xweave.errors import XweaveError
from xweave.operators import nn, quantize, transform


def _props(op: Operation) -> dict:
    return {name: python_value(value) for name, value in op.properties.items()}


def _out_shape(op: Operation) -> tuple[int, ...]:
    return tuple(op.results[0].type.get_shape())


# Each entry builds the kernel's output from placeholders for the op's operands.
Builder = Callable[[Operation, list[te.Tensor]], te.Tensor]


def _convolution(kernel: Callable[..., te.Tensor]) -> Builder:
    """The builder of a convolution op: data, weight, optional bias, then the window."""

    def build(op: Operation, args: list[te.Tensor]) -> te.Tensor:
        p = _props(op)
        bias = args[2] if len(args) > 2 else None
        pad_value = {"pad_value": p["pad_value"]} if "pad_value" in p else {}
        return kernel(args[0], args[1], bias, _out_shape(op), p["strides"], p["pads"],
                      p["dilations"], p["groups"], **pad_value)

    return build


def _max_pool(op, args):
    p = _props(op)
    return nn.max_pool2d(args[0], _out_shape(op), p["kernel"], p["strides"], p["pads"],
                         p["dilations"])


def _avg_pool(op, args):
    p = _props(op)
    return nn.avg_pool2d(args[0], _out_shape(op), p["kernel"], p["strides"], p["pads"],
                         bool(p["count_include_pad"]))


def _reduce(op, args):
    p = _props(op)
    return nn.reduce(args[0], p["kind"], p["axes"], bool(p["keepdims"]), _out_shape(op))


def _layer_norm(op, args):
    p = _props(op)
    return nn.layer_norm(args[0], args[1], args[2] if len(args) > 2 else None, p["axis"],
                         p["epsilon"])


def _lrn(op, args):
    p = _props(op)
    return nn.lrn(args[0], p["size"], p["alpha"], p["beta"], p["bias"])


def _pad(op, args):
    p = _props(op)
    return transform.pad(args[0], p["pads"], p["mode"], p["value"])


def _cast(op, args):
    return nn.cast(args[0], _dtype(op.results[0].type))


def _winograd_input(op, args):
    p = _props(op)
    return nn.winograd_input_transform(args[0], p["tile"], p["pads"], _out_shape(op))


BUILDERS: dict[str, Builder] = {
    "graph.conv2d": _convolution(nn.conv2d),
    "graph.conv2d_nchwc": _convolution(nn.conv2d_nchwc),
    "graph.layout_transform": lambda op, a: nn.layout_transform(a[0], _props(op)["src_layout"],
                                                                _props(op)["dst_layout"]),
    "graph.conv_transpose2d": _convolution(nn.conv_transpose2d),
    "graph.dense": lambda op, a: nn.dense(a[0], a[1], a[2] if len(a) > 2 else None),
    "graph.matmul": lambda op, a: nn.matmul(a[0], a[1], _out_shape(op)),
    "graph.clip": lambda op, a: nn.clip(a[0], _props(op)["min"], _props(op)["max"]),
    "graph.max_pool2d": _max_pool,
    "graph.avg_pool2d": _avg_pool,
    "graph.global_avg_pool2d": lambda op, a: nn.global_pool(a[0], "avg"),
    "graph.global_max_pool2d": lambda op, a: nn.global_pool(a[0], "max"),
    "graph.reshape": lambda op, a: nn.reshape(a[0], _out_shape(op)),
    "graph.transpose": lambda op, a: nn.transpose(a[0], _props(op)["perm"]),
    "graph.where": lambda op, a: nn.where(a[0], a[1], a[2], _out_shape(op)),
    "graph.cast": _cast,
    "graph.softmax": lambda op, a: nn.softmax(a[0], _props(op)["axis"]),
    "graph.log_softmax": lambda op, a: nn.log_softmax(a[0], _props(op)["axis"]),
    "graph.reduce": _reduce,
    "graph.batch_norm": lambda op, a: nn.batch_norm(*a, _props(op)["epsilon"]),
    "graph.layer_norm": _layer_norm,
    "graph.lrn": _lrn,
    "graph.concat": lambda op, a: nn.concat(a, _props(op)["axis"], _out_shape(op)),
    "graph.slice": lambda op, a: transform.slice(a[0], _props(op)["starts"],
                                                 _props(op)["steps"], _out_shape(op)),
    "graph.pad": _pad,
    "graph.tile": lambda op, a: nn.tile(a[0], _props(op)["repeats"]),
    "graph.broadcast_to": lambda op, a: nn.broadcast_to(a[0], _out_shape(op)),
    "graph.gather": lambda op, a: nn.gather(a[0], a[1], _props(op)["axis"], _out_shape(op)),
    "graph.quantize": lambda op, a: quantize.quantize(*a, _out_shape(op)),
    "graph.dequantize": lambda op, a: quantize.dequantize(*a, _out_shape(op)),
    "graph.requantize": lambda op, a: quantize.requantize(*a, _out_shape(op)),
    "graph.winograd_input_transform": _winograd_input,
    "graph.winograd_matmul": lambda op, a: nn.winograd_matmul(a[0], a[1]),
    "graph.winograd_output_transform": lambda op, a: nn.winograd_output_transform(
        a[0], _props(op)["tile"], _out_shape(op)),
}
for _name, _fn in nn.BINARY.items():
    BUILDERS[f"graph.{_name}"] = (
        lambda fn, name: lambda op, a: nn.broadcast_binary(a[0], a[1], _out_shape(op), fn, name)
    )(_fn, _name)
for _name, _fn in nn.UNARY.items():
    BUILDERS[f"graph.{_name}"] = (lambda fn, name: lambda op, a: nn.unary(a[0], fn, name))(_fn, _name)
for _name, _make in nn.PARAMETRIC_UNARY.items():
    BUILDERS[f"graph.{_name}"] = (
        lambda make, name: lambda op, a: nn.unary(a[0], make(**_props(op)), name)
    )(_make, _name)


def _dtype(tensor_type: TensorType) -> str:
    """The te dtype of a tensor type's elements (te has no unsigned integers)."""
    element = tensor_type.get_element_type()
    try:
        name = dtypes.dtype_name(element)
    except dtypes.DtypeError:
        name = None
    if name not in te.DTYPES:
        raise XweaveError(f"convert-graph-to-te: unsupported element type {element}")
    return name


def _op_signature(op: Operation, ref: Callable[[SSAValue], str]) -> str:
    return f"{op.name}{sorted((k, str(v)) for k, v in op.properties.items())}" \
           f"{[ref(o) for o in op.operands]}{[str(r.type) for r in op.results]}"


def _signature(op: Operation) -> str:
    """What makes two ops (or two graph.fused groups, op by op) compute the same."""
    if not isinstance(op, graph.FusedOp):
        return _op_signature(op, lambda v: str(v.type))
    block = op.body.block
    names: dict[SSAValue, str] = {a: f"arg{i}:{a.type}" for i, a in enumerate(block.args)}
    parts = []
    for j, inner in enumerate(block.ops):
        parts.append(_op_signature(inner, lambda v: names[v]))
        names.update((r, f"%{j}.{k}") for k, r in enumerate(inner.results))
    return "fused" + "".join(parts)


def _builder(op: Operation) -> Builder:
    builder = BUILDERS.get(op.name)
    if builder is None:
        where = " (in a graph.fused group)" if isinstance(op.parent_op(), graph.FusedOp) else ""
        raise XweaveError(f"convert-graph-to-te: no compute definition for {op.name}{where}")
    return builder


def _fused_outputs(fused: graph.FusedOp, placeholders: list[te.Tensor]) -> list[te.Tensor]:
    """The group's te tensors: each op's compute reads the tensors of the ops before it."""
    block = fused.body.block
    values: dict[SSAValue, te.Tensor] = dict(zip(block.args, placeholders))
    for inner in list(block.ops)[:-1]:
        values[inner.results[0]] = _builder(inner)(inner, [values[o] for o in inner.operands])
    return [values[v] for v in block.last_op.operands]  # pyright: ignore[reportOptionalMemberAccess]


def _fused_base(fused: graph.FusedOp, limit: int = 48) -> str:
    """`fused_conv2d_add_relu`: the op names in order, cut at `limit` characters."""
    base = "fused"
    for inner in list(fused.body.block.ops)[:-1]:
        part = inner.name.removeprefix("graph.")
        if len(base) + len(part) + 1 > limit:
            break
        base += f"_{part}"
    return base


@dataclass
class _KernelTable:
    """Kernels created so far, keyed by what makes two graph ops (or groups) compute the same."""

    module: ModuleOp
    by_key: dict[str, str]
    counts: dict[str, int]

    def kernel_for(self, op: Operation) -> str:
        """The kernel computing graph op `op`, or all of a graph.fused group in one kernel."""
        key = _signature(op)
        if key in self.by_key:
            return self.by_key[key]
        inputs = op.body.block.args if isinstance(op, graph.FusedOp) else op.operands
        placeholders = [
            te.placeholder(tuple(o.type.get_shape()), _dtype(o.type), name=f"arg{i}")
            for i, o in enumerate(inputs)
        ]
        if isinstance(op, graph.FusedOp):
            base, outputs = _fused_base(op), _fused_outputs(op, placeholders)
        else:
            base, outputs = op.name.removeprefix("graph."), [_builder(op)(op, placeholders)]
        name = f"{base}_{self.counts.get(base, 0)}"
        self.counts[base] = self.counts.get(base, 0) + 1
        kernel = te.create_kernel(name, placeholders, outputs)
        self.module.body.block.add_op(kernel)
        self.by_key[key] = name
        return name


@dataclass(frozen=True)
class ConvertGraphToTePass(ModulePass):
    """Lower every graph op (but constants) to a call of a te kernel; a graph.fused
    group becomes one kernel holding the computes of all its ops."""

    name = "convert-graph-to-te"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        table = _KernelTable(op, {}, {})
        graph_funcs = [f for f in op.ops if isinstance(f, func.FuncOp) and not loop.is_kernel(f)]
        for function in graph_funcs:
            targets = [
                inner for inner in function.walk()
                if inner.name.startswith("graph.") and inner.name != "graph.constant"
                and not isinstance(inner.parent_op(), graph.FusedOp)  # lowered with their group
            ]
            for inner in targets:
                kernel = table.kernel_for(inner)
                call = func.CallOp(kernel, list(inner.operands), [r.type for r in inner.results])
                Rewriter.replace_op(inner, call)
