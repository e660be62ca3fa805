"""Workloads: how a loop-stage kernel is keyed, and its schedule text replayed on another.

A kernel's *workload key* names its graph op, its argument types and a digest of its
loop IR, e.g. `conv2d(1x8x8x8xf32, 8x8x3x3xf32 -> 1x8x8x8xf32)#5d41402abc4b`: equal
convolutions share a kernel (and a key) within a model and across models. Tuning
records are filed under it, and a compiled kernel finds its tuned schedule by it
(`schedules.tuned`), retargeted to the kernel's own name (`retarget`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import re

from xdsl.dialects import func
from xdsl.dialects.builtin import MemRefType, ModuleOp
from xdsl.passes import PassPipeline
from xdsl.printer import Printer

from xweave.dialects import loop
from xweave.passes import get_all_passes
from xweave.target import set_target


def kernel_module(kernel: func.FuncOp, name: str | None = None, target=None) -> ModuleOp:
    """A `builtin.module` holding a copy of `kernel` (renamed to `name`); with `target`,
    the module records it (`xweave.target`)."""
    copy = kernel.clone()
    if name is not None:
        copy.sym_name = type(copy.sym_name)(name)
    module = ModuleOp([copy])
    if target is not None:
        set_target(module, target)
    return module


def kernel_text(kernel: func.FuncOp, name: str | None = None, target=None) -> str:
    """`kernel_module` as text."""
    return module_text(kernel_module(kernel, name, target))


def module_text(module: ModuleOp) -> str:
    """A module as text (xDSL's generic printer, as the workload digest reads it)."""
    stream = io.StringIO()
    Printer(stream=stream).print_op(module)
    return stream.getvalue()


def _type_text(t) -> str:
    if isinstance(t, MemRefType):
        return "x".join([*map(str, t.get_shape()), str(t.get_element_type())])
    return str(t)


def num_outputs(kernel: func.FuncOp) -> int:
    """Trailing arguments written by the kernel (destination passing)."""
    args = list(kernel.body.block.args)
    written = {args.index(op.memref) for op in kernel.walk()
               if isinstance(op, loop.StoreOp) and op.memref in args}
    count = 0
    while count < len(args) and len(args) - 1 - count in written:
        count += 1
    return max(count, 1)


def kernel_key(kernel: func.FuncOp) -> str:
    """The workload key of a loop-stage kernel: op name, argument types, IR digest.

    The digest is over the kernel's IR with its symbol name left out, so the same
    computation gets the same key whatever the kernel is called in a module.
    """
    op = re.sub(r"_\d+$", "", kernel.sym_name.data)
    types = [_type_text(t) for t in kernel.function_type.inputs.data]
    n_out = num_outputs(kernel)
    digest = hashlib.sha256(kernel_text(kernel, "kernel").encode()).hexdigest()[:12]
    return f"{op}({', '.join(types[:-n_out])} -> {', '.join(types[-n_out:])})#{digest}"


def retarget(steps: list[str], kernel_name: str) -> list[str]:
    """Pass specs with their `kernel` option set to `kernel_name` (a schedule recorded
    for a kernel of another name, e.g. `conv2d_0` applied to `conv2d_3`)."""
    out = []
    for spec in steps:
        for p in PassPipeline.parse_spec(get_all_passes(), spec).passes:
            if any(f.name == "kernel" for f in dataclasses.fields(p)):
                p = dataclasses.replace(p, kernel=kernel_name)
            out.append(str(p))
    return out


def split_pipeline(text: str) -> list[str]:
    """The steps of a pipeline text (one pass spec each)."""
    if not text.strip():
        return []
    return [str(p) for p in PassPipeline.parse_spec(get_all_passes(), text).passes]
