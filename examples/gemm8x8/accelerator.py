"""The gemm8x8 unit as an `xweave.accel.api.Accelerator`: intrinsics, lowering rule,
simulator hook, registered under the name "gemm8x8".

Intrinsics (operands: the output first, then the inputs):

* `gemm8x8.gemm_add(acc, a, b)` — acc[i, j] += sum_k a[i, k] * b[j, k] (int8 -> int32);
* `gemm8x8.fill_zero(acc)` — acc = 0;
* `gemm8x8.load_tile(dst, src)` / `gemm8x8.load_acc(dst, src)` — an 8x8 int8 / int32
  tile from DRAM into the operand buffer / the accumulator;
* `gemm8x8.store_tile(dst, src)` — an accumulator tile to DRAM.

The lowering rule unrolls the kernel's loops (`unrolled_calls`) and emits one
instruction per call. Kernel arguments are laid out in DRAM one after the other (256-byte
aligned); an argument's two innermost dims must be one 8x8 tile (a tiled layout such as
`MB x KB x 8 x 8`). Scratchpad buffers (`loop.alloc` in `#loop.scope<gemm8x8.buf>` or
`<gemm8x8.acc>`, shaped `S x 8 x 8`) get consecutive slots.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

import numpy as np
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import IntegerType, MemRefType, ModuleOp, StringAttr
from xdsl.ir import SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter

from xweave.accel.api import (
    Accelerator,
    AcceleratorError,
    IntrinsicCall,
    LoweredProgram,
    TensorIntrinsic,
    get_accelerator,
    register_accelerator,
    unrolled_calls,
)
from xweave.accel.intrinsics import copy_decl, fill_zero_decl, gemm_decl
from xweave.dialects import loop

from . import isa
from .config import DEFAULT, Gemm8x8Config
from .simulator import DramSlot, simulate

NAME = "gemm8x8"
BUF, ACC = f"{NAME}.buf", f"{NAME}.acc"


class _Emitter:
    """Instruction list plus where every buffer lives (DRAM addresses, slots)."""

    def __init__(self, f: func.FuncOp, config: Gemm8x8Config):
        self.config = config
        self.ops: list[isa.Instruction] = []
        self.args = list(f.body.block.args)
        stored = {op.buffers[0] for op in f.walk()
                  if isinstance(op, loop.IntrinsicOp) and op.callee_name == f"{NAME}.store_tile"}
        self.layout: dict[int, DramSlot] = {}
        addr = 0
        for i, arg in enumerate(self.args):
            t = cast(MemRefType, arg.type)
            width = cast(IntegerType, t.get_element_type()).width.data
            slot = DramSlot(addr, tuple(t.get_shape()), f"int{width}", arg in stored)
            self.layout[i] = slot
            addr += -(-slot.nbytes // 256) * 256
        self.slot_base: dict[SSAValue, int] = {}
        used = {BUF: 0, ACC: 0}
        limits = {BUF: config.buf_slots, ACC: config.acc_slots}
        for op in f.walk():
            if isinstance(op, loop.AllocOp):
                t = cast(MemRefType, op.memref.type)
                scope = loop.scope_of(t).data
                if scope not in used:
                    continue
                if tuple(t.get_shape()[1:]) != (config.tile, config.tile) or len(t.get_shape()) != 3:
                    raise AcceleratorError(f"{NAME}: scratchpad buffer {t} must be S x 8 x 8")
                self.slot_base[op.memref] = used[scope]
                used[scope] += t.get_shape()[0]
                if used[scope] > limits[scope]:
                    raise AcceleratorError(f"{NAME}: the kernel's {scope} buffers need "
                                           f"{used[scope]} tiles, the unit has {limits[scope]}")

    def dram(self, call: IntrinsicCall, operand: int) -> int:
        """Byte address of the tile operand `operand` of `call` reads or writes."""
        buffer, offset = call.buffers[operand], call.offsets[operand]
        if buffer not in self.args:
            raise AcceleratorError(f"{call.intrinsic.name}: operand {operand} is not a kernel argument")
        slot = self.layout[self.args.index(buffer)]
        t = self.config.tile
        if slot.shape[-2:] != (t, t) or tuple(offset[-2:]) != (0, 0):
            raise AcceleratorError(f"{call.intrinsic.name}: operand {operand} must be a whole "
                                   f"{t}x{t} tile of a tiled argument, got {list(slot.shape)} at "
                                   f"{list(offset)}")
        index = int(np.ravel_multi_index(tuple(offset), slot.shape))
        return slot.addr + index * np.dtype(slot.dtype).itemsize

    def slot(self, call: IntrinsicCall, operand: int) -> int:
        buffer, offset = call.buffers[operand], call.offsets[operand]
        if buffer not in self.slot_base:
            raise AcceleratorError(f"{call.intrinsic.name}: operand {operand} is not a scratchpad buffer")
        return self.slot_base[buffer] + offset[0]


def _lower_gemm_add(call: IntrinsicCall, em: _Emitter) -> None:
    em.ops.append(isa.GemmAddOp(em.slot(call, 0), em.slot(call, 1), em.slot(call, 2)))


def _lower_fill_zero(call: IntrinsicCall, em: _Emitter) -> None:
    em.ops.append(isa.FillZeroOp(em.slot(call, 0)))


def _lower_load_tile(call: IntrinsicCall, em: _Emitter) -> None:
    em.ops.append(isa.LoadTileOp(em.slot(call, 0), em.dram(call, 1)))


def _lower_load_acc(call: IntrinsicCall, em: _Emitter) -> None:
    em.ops.append(isa.LoadAccOp(em.slot(call, 0), em.dram(call, 1)))


def _lower_store_tile(call: IntrinsicCall, em: _Emitter) -> None:
    em.ops.append(isa.StoreTileOp(em.dram(call, 0), em.slot(call, 1)))


def make_intrinsics(c: Gemm8x8Config = DEFAULT) -> dict[str, TensorIntrinsic]:
    t = c.tile
    acc, (a, b) = gemm_decl(t, t, t, names=("acc", "a", "b"))
    intrinsics = [
        TensorIntrinsic(f"{NAME}.gemm_add", acc, (a, b), {"acc": ACC, "a": BUF, "b": BUF}, "core",
                        _lower_gemm_add, accumulate=True, doc="acc += a . b^T"),
        TensorIntrinsic(f"{NAME}.fill_zero", fill_zero_decl((t, t), "int32", name="acc"), (),
                        {"acc": ACC}, "core", _lower_fill_zero, doc="acc = 0"),
    ]
    for name, dtype, scopes, lower in (
        ("load_tile", "int8", {"dst": BUF, "src": "global"}, _lower_load_tile),
        ("load_acc", "int32", {"dst": ACC, "src": "global"}, _lower_load_acc),
        ("store_tile", "int32", {"dst": "global", "src": ACC}, _lower_store_tile),
    ):
        dst, (src,) = copy_decl((t, t), dtype)
        intrinsics.append(TensorIntrinsic(f"{NAME}.{name}", dst, (src,), scopes, "dma", lower))
    return {i.name: i for i in intrinsics}


def lower(f: func.FuncOp, acc: Accelerator, config: Gemm8x8Config | None = None) -> LoweredProgram:
    """The lowering rule: a tensorized kernel -> a `gemm8x8.program` and its DRAM layout."""
    em = _Emitter(f, config or acc.config)
    for event in unrolled_calls(f.body.block.ops, acc):
        if isinstance(event, IntrinsicCall):
            event.intrinsic.lower(event, em)
        else:  # a dependency token: this unit has none
            raise AcceleratorError(f"{NAME}: unexpected {event.op.name}; the unit runs one stream")
    program = isa.ProgramOp(em.ops)
    program.verify()
    return LoweredProgram(program, em.layout, {"instructions": len(em.ops)})


def make_accelerator(config: Gemm8x8Config = DEFAULT) -> Accelerator:
    return Accelerator(
        name=NAME,
        config=config,
        dialect=isa.Gemm8x8,
        intrinsics=make_intrinsics(config),
        scopes={BUF: "operand buffer (8x8 int8 tiles)", ACC: "accumulator (8x8 int32 tiles)"},
        stages=("dma", "core"),
        lower=lower,
        simulate=lambda lowered, inputs, **kw: simulate(lowered, inputs, config, **kw),
        doc="8x8 int8 GEMM unit with fill-zero and fused GEMM-add",
        passes=(ConvertLoopToGemm8x8Pass,),
    )


@dataclass(frozen=True)
class ConvertLoopToGemm8x8Pass(ModulePass):
    """Replace every kernel calling gemm8x8 intrinsics by its `gemm8x8.program`."""

    name = "convert-loop-to-gemm8x8"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        acc = get_accelerator(NAME)
        for f in list(op.ops):
            if isinstance(f, func.FuncOp) and any(
                    isinstance(o, loop.IntrinsicOp) and o.callee_name.startswith(NAME + ".")
                    for o in f.walk()):
                program = acc.lower(f, acc).program
                program.attributes["kernel"] = StringAttr(f.sym_name.data)
                Rewriter.replace_op(f, program, [])


GEMM8X8 = register_accelerator(make_accelerator())
