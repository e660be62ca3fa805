"""loop-fold-constant-packs: pack constant weights at compile time, not at every call.

`loop-pack` makes a kernel copy an argument into a packed layout at its start (conv
weights OIHW -> [O/16][I][H][W][16], ...). When every call of the kernel passes a
constant (`loop.get_global` of a `loop.global` with a value) for that argument, the
copy is wasted work on every run: this pass computes the packed array once, stores
it as a new `loop.global` (`@<name>_packed_<hash>`), makes the kernel take the packed
buffer as that argument and deletes the packing stage — what TVM's `alter_op_layout`
with constant weights and onnxruntime's pre-packing at session creation do.

Kernels shared by several calls stay shared: each call site gets its own packed
global. A packed argument with a call that passes a non-constant (the second operand
of a matmul of two activations) is left alone; so is a global without a value.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import cast

import numpy as np
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    UnitAttr,
    DenseArrayBase,
    DictionaryAttr,
    FunctionType,
    IntegerAttr,
    MemRefType,
    ModuleOp,
)
from xdsl.ir import SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from xweave.dialects import graph, loop
from xweave.dialects.dtypes import numpy_dtype
from xweave.dialects.graph.constants import constant_value
from xweave.passes.loop_pack import PACK_ATTR, pack_array, packed_shape


def global_array(op: loop.GlobalOp) -> np.ndarray:
    """The value of a `loop.global` as an array of its buffer type."""
    memref = cast(MemRefType, op.type)
    value = constant_value(graph.ConstantOp(op.initial_value))
    return np.broadcast_to(value, tuple(memref.get_shape())).astype(
        numpy_dtype(memref.get_element_type()), copy=False)


def _packing_stage(kernel: func.FuncOp, alloc: loop.AllocOp, arg: SSAValue) -> loop.ForOp | None:
    """The nest copying `arg` into `alloc`, if it is `arg`'s only user: a top-level
    nest, or one placed inside a consumer's loop (a panel packed right before its
    use, `loop-compute-at`); the nest is the outermost loop of the storing stage."""
    nests = set()
    for use in alloc.memref.uses:
        if not isinstance(use.operation, loop.StoreOp):
            continue
        nest = use.operation.parent_op()
        while nest is not None and not isinstance(nest, loop.ForOp):
            nest = nest.parent_op()
        if nest is None or nest.name_str is None:
            return None
        stage = nest.name_str.split(".", 1)[0]
        while (isinstance(nest.parent_op(), loop.ForOp) and nest.parent_op().name_str
               and nest.parent_op().name_str.split(".", 1)[0] == stage):
            nest = nest.parent_op()
        nests.add(nest)
    if len(nests) != 1:
        return None
    nest = nests.pop()
    if any(not nest.is_ancestor(use.operation) for use in arg.uses):
        return None
    return nest


def pack_spec(alloc: loop.AllocOp) -> tuple[int, list[tuple[int, int]], list[int]]:
    """(argument index, [(split dim, factor)], order) of a `loop-pack` buffer."""
    spec = cast(DictionaryAttr, alloc.attributes[PACK_ATTR]).data
    index = cast(IntegerAttr, spec["argument"]).value.data
    splits = list(zip(cast(DenseArrayBase, spec["split_dim"]).get_values(),
                      cast(DenseArrayBase, spec["factor"]).get_values()))
    return index, splits, list(cast(DenseArrayBase, spec["order"]).get_values())


def receive_packed(kernel: func.FuncOp, alloc: loop.AllocOp, nest: loop.ForOp) -> None:
    """Make `kernel` take the packed buffer of `alloc` in place of the argument its
    packing stage `nest` copies from; the stage and the buffer are deleted (the
    callers must now pass the packed array)."""
    index, _, _ = pack_spec(alloc)
    arg = kernel.body.block.args[index]
    packed_type = cast(MemRefType, alloc.memref.type)
    packed_type = MemRefType(packed_type.get_element_type(), packed_type.get_shape())
    nest.detach()
    nest.erase()
    name = arg.name_hint
    arg = Rewriter.replace_value_with_new_type(arg, packed_type)
    arg.name_hint = name
    alloc.memref.replace_all_uses_with(arg)
    Rewriter.erase_op(alloc)
    inputs = [a.type for a in kernel.body.block.args]
    kernel.function_type = FunctionType.from_lists(inputs, list(kernel.function_type.outputs))


def receive_packed_arguments(kernel: func.FuncOp, arguments: set[int]
                             ) -> list[tuple[int, list[tuple[int, int]], list[int]]]:
    """`receive_packed` for every packed buffer of one of `arguments` (indices) that
    is the argument's only use; returns their `pack_spec`s. A tuning candidate of a
    kernel whose weights the model passes as constants is timed this way: without
    the per-call packing that `loop-fold-constant-packs` removes from the model."""
    done = []
    for alloc in [a for a in kernel.body.block.ops
                  if isinstance(a, loop.AllocOp) and PACK_ATTR in a.attributes]:
        spec = pack_spec(alloc)
        if spec[0] not in arguments:
            continue
        nest = _packing_stage(kernel, alloc, kernel.body.block.args[spec[0]])
        if nest is not None:
            receive_packed(kernel, alloc, nest)
            done.append(spec)
    return done


SCHEDULED_ATTR = "xweave.scheduled"
"""Unit attribute of a module whose schedules are final: `loop-fold-constant-packs`,
the last pass of the scheduled stage, sets it (packs folded at compile time follow the
schedule, which must not change after); `pipeline.stage_of` reads it."""


@dataclass(frozen=True)
class LoopFoldConstantPacksPass(ModulePass):
    """Replace the packing stage of constant kernel arguments by packed constants, and
    mark the module `xweave.scheduled` (its schedules are final)."""

    name = "loop-fold-constant-packs"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        op.attributes[SCHEDULED_ATTR] = UnitAttr()
        globals_ = {g.sym_name.data: g for g in op.ops if isinstance(g, loop.GlobalOp)}
        calls: dict[str, list[func.CallOp]] = {}
        for call in op.walk():
            if isinstance(call, func.CallOp):
                calls.setdefault(call.callee.root_reference.data, []).append(call)
        kernels = [f for f in op.ops if loop.is_kernel(f)]
        folded = False
        for kernel in kernels:
            for alloc in [a for a in kernel.body.block.ops
                          if isinstance(a, loop.AllocOp) and PACK_ATTR in a.attributes]:
                folded |= self._fold(op, kernel, alloc, calls.get(kernel.sym_name.data, []),
                                     globals_)
        if folded:
            # Once, not after every fold (each a walk of the whole module): a global no
            # longer used stays unused, as folds only add uses of packed globals.
            self._drop_unused_globals(op, globals_)

    def _fold(self, module: ModuleOp, kernel: func.FuncOp, alloc: loop.AllocOp,
              calls: list[func.CallOp], globals_: dict[str, loop.GlobalOp]) -> bool:
        """Fold one packing stage; whether it did."""
        index, splits, order = pack_spec(alloc)
        arg = kernel.body.block.args[index]
        nest = _packing_stage(kernel, alloc, arg)
        if nest is None or not calls:
            return False
        shape = packed_shape(list(cast(MemRefType, arg.type).get_shape()), splits)
        if [shape[d] for d in order] != list(cast(MemRefType, alloc.memref.type).get_shape()):
            return False  # it packs another packed copy of the argument (a chain): left at run time
        sources = []
        for call in calls:
            producer = call.arguments[index].owner
            if not isinstance(producer, loop.GetGlobalOp):
                return False
            source = globals_.get(producer.global_name.root_reference.data)
            if source is None or source.initial_value is None:
                return False
            sources.append((call, producer, source))
        packed_type = cast(MemRefType, alloc.memref.type)
        packed_type = MemRefType(packed_type.get_element_type(), packed_type.get_shape())
        for call, producer, source in sources:
            packed = self._packed_global(module, source, splits, order, packed_type, globals_)
            getter = loop.GetGlobalOp(packed.sym_name.data, packed_type)
            Rewriter.insert_op(getter, InsertPoint.before(call))
            call.operands = [*call.operands[:index], getter.results[0], *call.operands[index + 1:]]
            if not producer.results[0].uses:
                Rewriter.erase_op(producer)
        receive_packed(kernel, alloc, nest)
        return True

    @staticmethod
    def _packed_global(module: ModuleOp, source: loop.GlobalOp, splits, order,
                       packed_type: MemRefType, globals_: dict[str, loop.GlobalOp]) -> loop.GlobalOp:
        layout = hashlib.blake2b(f"{splits}{order}".encode(), digest_size=3).hexdigest()
        name = f"{source.sym_name.data}_packed_{layout}"
        if name in globals_:
            return globals_[name]
        array = pack_array(global_array(source), splits, order)
        value = graph.ConstantOp.from_array(name, array).value
        packed = loop.GlobalOp(name, packed_type, value)
        Rewriter.insert_op(packed, InsertPoint.after(source))
        globals_[name] = packed
        return packed

    @staticmethod
    def _drop_unused_globals(module: ModuleOp, globals_: dict[str, loop.GlobalOp]) -> None:
        used = {g.global_name.root_reference.data for g in module.walk()
                if isinstance(g, loop.GetGlobalOp)}
        for name, op in list(globals_.items()):
            if name not in used:
                Rewriter.erase_op(op)
                del globals_[name]


__all__ = ["LoopFoldConstantPacksPass", "global_array", "pack_spec", "receive_packed",
           "receive_packed_arguments"]
