"""Serial loops for convert-loop-to-llvm, and which ones LLVM must not unroll.

A loop kind's lowering is a function `(LoopLowering, loop.ForOp) -> None`
(`loop_to_llvm.FOR_LOWERINGS` maps each kind to one; `llvm_loop_lowering` defines the
interface): it has `emit_counted_loop`, `lower_ops` (the body), `map` (the induction
variable), and `module.add_function` to add a function it builds (e.g. an outlined
parallel body, `llvm_parallel`).
"""

from __future__ import annotations

from xdsl.dialects import vector
from xdsl.ir import SSAValue

from xweave.dialects import loop
from xweave.lowering.llvm_loop_lowering import LoopLowering


REGISTER_BLOCK_FMAS = 13
"""A serial loop whose body (nested loops aside) holds at least this many vector FMAs
is the reduction step of a register block: its back edge carries `NO_LLVM_UNROLL`,
and LLVM does not unroll it. Unrolled (by 2), LLVM hoists the next step's broadcasts
above the FMAs and the accumulators spill to the stack: SqueezeNet's 1000-class 1x1
conv (13 x 8 block, 15 of the 16 ymm registers) ran 1.3x faster without. Smaller
blocks keep the unroll (turning it off everywhere made whole models ~12% slower)."""

REGISTER_BLOCK_DOTS = 4
"""Likewise for integer register blocks (`loop.dot`): LLVM may reassociate their
integer adds, and unrolled it sums the next steps' products in trees beside the
accumulators, which then spill (a 2 x 2 x 16 int16 conv block ran 2x slower)."""

NO_LLVM_UNROLL = "xweave.no_llvm_unroll"
"""Unit attribute of an `llvm.cond_br` closing a loop LLVM must not unroll (becomes
`!llvm.loop` metadata in `llvm_codegen`)."""


def is_register_block_step(op: loop.ForOp) -> bool:
    """Whether `op`'s body is one step of a register-blocked reduction (see
    `REGISTER_BLOCK_FMAS`)."""
    fmas = sum(isinstance(o, vector.FMAOp) for o in op.body.block.ops)
    dots = sum(isinstance(o, loop.DotOp) for o in op.body.block.ops)
    return fmas >= REGISTER_BLOCK_FMAS or dots >= REGISTER_BLOCK_DOTS


def lower_serial_for(fl: LoopLowering, op: loop.ForOp) -> None:
    """The iterations one after the other, in order."""

    def body(iv: SSAValue) -> None:
        fl.map(op.induction_var, iv)
        fl.lower_ops(op.body.block)

    lb, ub, step = op.lb.value.data, op.ub.value.data, op.step.value.data
    fl.emit_counted_loop(lb, ub, step, body, llvm_unroll=not is_register_block_step(op))
