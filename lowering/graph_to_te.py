"""convert-graph-to-te: every graph op becomes a call of a tensor-expression kernel.

Kernels are defined by the operator library (`xweave.operators.nn`) with the TE
builder. Ops with equal type, attributes and operand types share one kernel.
`graph.constant` stays in `@main`: constants are bufferized by `convert-te-to-loop`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    DenseArrayBase,
    FloatAttr,
    IntegerAttr,
    ModuleOp,
    TensorType,
)
from xdsl.ir import Attribute, Operation
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter

from xweave import te
from xweave.errors import XweaveError
from xweave.operators import nn


def _python_value(attr: Attribute):
    if isinstance(attr, DenseArrayBase):
        return tuple(attr.get_values())
    if isinstance(attr, IntegerAttr):
        return int(attr.value.data)
    if isinstance(attr, FloatAttr):
        return float(attr.value.data)
    return attr


def _props(op: Operation) -> dict:
    return {name: _python_value(value) for name, value in op.properties.items()}


def _out_shape(op: Operation) -> tuple[int, ...]:
    return tuple(op.results[0].type.get_shape())


# Each entry builds the kernel's output from placeholders for the op's operands.
Builder = Callable[[Operation, list[te.Tensor]], te.Tensor]


def _conv2d(op, args):
    p = _props(op)
    bias = args[2] if len(args) > 2 else None
    return nn.conv2d(args[0], args[1], bias, _out_shape(op), p["strides"], p["pads"],
                     p["dilations"], p["groups"])


def _max_pool(op, args):
    p = _props(op)
    return nn.max_pool2d(args[0], _out_shape(op), p["kernel"], p["strides"], p["pads"],
                         p["dilations"])


def _avg_pool(op, args):
    p = _props(op)
    return nn.avg_pool2d(args[0], _out_shape(op), p["kernel"], p["strides"], p["pads"],
                         bool(p["count_include_pad"]))


BUILDERS: dict[str, Builder] = {
    "graph.conv2d": _conv2d,
    "graph.dense": lambda op, a: nn.dense(a[0], a[1], a[2] if len(a) > 2 else None),
    "graph.matmul": lambda op, a: nn.matmul(a[0], a[1], _out_shape(op)),
    "graph.clip": lambda op, a: nn.clip(a[0], _props(op)["min"], _props(op)["max"]),
    "graph.max_pool2d": _max_pool,
    "graph.avg_pool2d": _avg_pool,
    "graph.global_avg_pool2d": lambda op, a: nn.global_pool(a[0], "avg"),
    "graph.global_max_pool2d": lambda op, a: nn.global_pool(a[0], "max"),
    "graph.reshape": lambda op, a: nn.reshape(a[0], _out_shape(op)),
    "graph.transpose": lambda op, a: nn.transpose(a[0], _props(op)["perm"]),
}
for _name, _fn in nn.BINARY.items():
    BUILDERS[f"graph.{_name}"] = (
        lambda fn, name: lambda op, a: nn.broadcast_binary(a[0], a[1], _out_shape(op), fn, name)
    )(_fn, _name)
for _name, _fn in nn.UNARY.items():
    BUILDERS[f"graph.{_name}"] = (lambda fn, name: lambda op, a: nn.unary(a[0], fn, name))(_fn, _name)


def _dtype(tensor_type: TensorType) -> str:
    return {"f32": "float32", "f64": "float64"}.get(str(tensor_type.get_element_type()), "float32")


@dataclass
class _KernelTable:
    """Kernels created so far, keyed by what makes two graph ops compute the same."""

    module: ModuleOp
    by_key: dict[str, str]
    counts: dict[str, int]

    def kernel_for(self, op: Operation) -> str:
        key = f"{op.name}{sorted((k, str(v)) for k, v in op.properties.items())}" \
              f"{[str(o.type) for o in op.operands]}{[str(r.type) for r in op.results]}"
        if key in self.by_key:
            return self.by_key[key]
        builder = BUILDERS.get(op.name)
        if builder is None:
            raise XweaveError(f"convert-graph-to-te: no compute definition for {op.name}")
        base = op.name.removeprefix("graph.")
        name = f"{base}_{self.counts.get(base, 0)}"
        self.counts[base] = self.counts.get(base, 0) + 1
        placeholders = [
            te.placeholder(tuple(o.type.get_shape()), _dtype(o.type), name=f"arg{i}")
            for i, o in enumerate(op.operands)
        ]
        kernel = te.create_kernel(name, placeholders, [builder(op, placeholders)])
        self.module.body.block.add_op(kernel)
        self.by_key[key] = name
        return name


@dataclass(frozen=True)
class ConvertGraphToTePass(ModulePass):
    """Lower every graph op (but constants) to a call of a te kernel."""

    name = "convert-graph-to-te"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        table = _KernelTable(op, {}, {})
        graph_funcs = [f for f in op.ops if isinstance(f, func.FuncOp) and "xweave.kernel" not in f.attributes]
        for function in graph_funcs:
            for inner in list(function.walk()):
                if not inner.name.startswith("graph.") or inner.name == "graph.constant":
                    continue
                kernel = table.kernel_for(inner)
                call = func.CallOp(kernel, list(inner.operands), [r.type for r in inner.results])
                Rewriter.replace_op(inner, call)
