"""The VTA-like accelerator, registered through the designer API (`xweave.accel.api`).

Intrinsics (operands: the output first, then the inputs, as declared):

* `vta.gemm(acc, inp, wgt)` — acc[b, o] += sum_k inp[b, k] * wgt[o, k] (int8 -> int32);
* `vta.fill_zero(acc)` — acc = 0 (a GEMM reset);
* `vta.alu(dst, src)` / `vta.alu_imm(dst)` — dst = op(dst, src | imm), `params {op, imm}`
  with op in min, max, add, shr, mul;
* `vta.load_inp / load_wgt / load_acc(scratch, global)` — DMA a window of `rows` x `cols`
  elements (`row_dim`: which global dim rows step along; `pad`: zero-fill outside);
* `vta.store(global, acc)` — DMA accumulators (narrowed to int8) back to DRAM.

The DMA intrinsics are copies (`copy_decl`) with `window=2`: `tensorize` matches a plain
copy nest (rows, columns, then the element axes; loads may guard reads with the
in-bounds test, which the DMA's zero padding implements) and derives the call's
`rows`, `cols`, `row_dim` and `pad`.

The four kernel intrinsics fold into GEMM/ALU micro-kernels; see
`xweave.accel.vta.lowering`. `accelerator.py` registers the accelerator.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from xweave import te
from xweave.accel.api import Accelerator, LoweredProgram, TensorIntrinsic
from xweave.accel.intrinsics import copy_decl, fill_zero_decl, gemm_decl
from xweave.accel.vta.config import DEFAULT, HardwareConfig
from xweave.accel.vta.dialect import VTA
from xweave.accel.vta.lowering import (
    ConvertLoopToVTAPass,
    lower_dma,
    lower_function,
    lower_kernel_call,
)
from xweave.accel.vta.dram import Dram
from xweave.accel.vta.simulator import simulate

__all__ = ["VTA_ACCELERATOR", "make_vta_accelerator", "simulate_lowered"]

SCOPES = {
    "vta.inp": "input scratchpad (BATCH x BLOCK_IN int8 elements)",
    "vta.wgt": "weight scratchpad (BLOCK_OUT x BLOCK_IN int8 elements)",
    "vta.acc": "accumulator scratchpad (BATCH x BLOCK_OUT int32 elements)",
}


def make_intrinsics(c: HardwareConfig) -> dict[str, TensorIntrinsic]:
    acc_t, (inp_t, wgt_t) = gemm_decl(c.batch, c.block_in, c.block_out)
    intr = [
        TensorIntrinsic("vta.gemm", acc_t, (inp_t, wgt_t),
                        {"acc": "vta.acc", "inp": "vta.inp", "wgt": "vta.wgt"}, "compute",
                        lower_kernel_call, accumulate=True, doc="acc += inp . wgt^T"),
        TensorIntrinsic("vta.fill_zero", fill_zero_decl((c.batch, c.block_out)), (),
                        {"acc": "vta.acc"}, "compute", lower_kernel_call, doc="acc = 0"),
    ]
    src = te.placeholder((c.batch, c.block_out), "int32", name="src")
    alu_out = te.compute((c.batch, c.block_out), lambda b, o: src[b, o], name="dst")
    intr.append(TensorIntrinsic("vta.alu", alu_out, (src,), {"dst": "vta.acc", "src": "vta.acc"},
                                "compute", lower_kernel_call, accumulate=True,
                                doc="dst = op(dst, src), op = params.op"))
    imm_out = fill_zero_decl((c.batch, c.block_out), name="dst")
    intr.append(TensorIntrinsic("vta.alu_imm", imm_out, (), {"dst": "vta.acc"}, "compute",
                                lower_kernel_call, accumulate=True, doc="dst = op(dst, params.imm)"))
    for mem, stage, shape, dtype in (
        ("inp", "load", (c.batch, c.block_in), "int8"),
        ("wgt", "load", (c.block_out, c.block_in), "int8"),
        ("acc", "compute", (c.batch, c.block_out), "int32"),
    ):
        dst, (srcg,) = copy_decl(shape, dtype)
        intr.append(TensorIntrinsic(f"vta.load_{mem}", dst, (srcg,), {"dst": f"vta.{mem}", "src": "global"},
                                    stage, lower_dma, doc=f"DMA DRAM -> {mem} scratchpad",
                                    window=2, pads=True))
    out, (acc_in,) = copy_decl((c.batch, c.block_out), "int32", names=("dst", "src"), cast_to="int8")
    intr.append(TensorIntrinsic("vta.store", out, (acc_in,), {"dst": "global", "src": "vta.acc"},
                                "store", lower_dma, doc="DMA acc (narrowed to int8) -> DRAM", window=2))
    return {i.name: i for i in intr}


def simulate_lowered(
    lowered: LoweredProgram, inputs: dict[int, np.ndarray], config: HardwareConfig = DEFAULT, **kw: Any
) -> tuple[dict[int, np.ndarray], Any]:
    """The simulator hook: place `inputs` (arg index -> array shaped like the arg) in a
    fresh DRAM, run the program, return every `out` argument and the `SimReport`."""
    dram = Dram(config=config)
    for i, slot in sorted(lowered.layout.items(), key=lambda kv: kv[1].addr):
        shape = slot.shape
        count = int(np.prod(shape[:-2], dtype=np.int64))
        if i in inputs:
            arr = np.asarray(inputs[i]).reshape(count, *shape[-2:])
            dram.place(f"arg{i}", arr, slot.mem, addr=slot.addr)
        else:
            dram.alloc(f"arg{i}", slot.mem, count, addr=slot.addr)
    report = simulate(lowered.program, dram, config, **kw)
    outputs = {
        i: dram.read(f"arg{i}").reshape(slot.shape)
        for i, slot in lowered.layout.items()
        if slot.mem == "out"
    }
    return outputs, report


def make_vta_accelerator(config: HardwareConfig = DEFAULT) -> Accelerator:
    return Accelerator(
        name="vta",
        config=config,
        dialect=VTA,
        intrinsics=make_intrinsics(config),
        scopes=dict(SCOPES),
        stages=("load", "compute", "store"),
        lower=lower_function,
        simulate=lambda lowered, inputs, **kw: simulate_lowered(lowered, inputs, config, **kw),
        doc="VTA-like GEMM accelerator (TVM's VTA ISA)",
        passes=(ConvertLoopToVTAPass,),
    )


VTA_ACCELERATOR = make_vta_accelerator()
