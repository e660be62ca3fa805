"""The simulator hook of the gemm8x8 unit: functional (bit-exact int8/int32) and timed.

Timing: a DMA engine (load_tile, load_acc, store_tile) and the core (fill_zero,
gemm_add) each execute their instructions in program order; an instruction also waits
for the tiles it reads or overwrites to be done by earlier instructions (a scoreboard),
so loads into a free slot overlap the core's work on another.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from xweave.accel.api import AcceleratorError, LoweredProgram

from . import isa
from .config import DEFAULT, Gemm8x8Config


class Gemm8x8SimulatorError(AcceleratorError):
    """A program the unit cannot run (a DRAM access outside the image, a bad slot)."""


@dataclass
class Gemm8x8Report:
    """What a run measured (cycles of the unit's clock)."""

    total_cycles: int
    busy_cycles: dict[str, int]
    instruction_counts: dict[str, int]
    gemm_count: int
    config: Gemm8x8Config = field(default=DEFAULT)

    @property
    def compute_utilization(self) -> float:
        """GEMM cycles over total cycles: the fraction of the core's peak achieved."""
        return self.gemm_count * self.config.gemm_cycles / self.total_cycles if self.total_cycles else 0.0


@dataclass(frozen=True)
class DramSlot:
    """Where a kernel argument lives in DRAM: byte address, tiled shape, dtype."""

    addr: int
    shape: tuple[int, ...]
    dtype: str
    output: bool

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape)) * np.dtype(self.dtype).itemsize


def run_program(program: isa.ProgramOp, dram: np.ndarray, config: Gemm8x8Config = DEFAULT
                ) -> Gemm8x8Report:
    """Execute `program` on the byte array `dram` in place."""
    t = config.tile
    buf = np.zeros((config.buf_slots, t, t), np.int8)
    acc = np.zeros((config.acc_slots, t, t), np.int32)
    free = {"dma": 0, "core": 0}
    busy = {"dma": 0, "core": 0}
    ready: dict[tuple[str, int], int] = {}
    counts: dict[str, int] = {}
    gemms = 0

    def dram_view(addr: int, nbytes: int, dtype, where: str) -> np.ndarray:
        if addr < 0 or addr + nbytes > dram.size:
            raise Gemm8x8SimulatorError(f"{where}: DRAM bytes [{addr}, {addr + nbytes}) outside "
                                        f"the {dram.size}-byte image")
        return dram[addr:addr + nbytes].view(dtype).reshape(t, t)

    def slot(kind: str, index: int, where: str) -> tuple[str, int]:
        limit = config.buf_slots if kind == "buf" else config.acc_slots
        if not 0 <= index < limit:
            raise Gemm8x8SimulatorError(f"{where}: {kind} slot {index} out of range [0, {limit})")
        return (kind, index)

    for i, op in enumerate(program.body.block.ops):
        where = f"instruction {i} ({op.name})"
        counts[op.name] = counts.get(op.name, 0) + 1
        if isinstance(op, isa.LoadTileOp):
            unit, touched = "dma", [slot("buf", op.field("buf"), where)]
            buf[op.field("buf")] = dram_view(op.field("dram"), t * t, np.int8, where)
            cost = config.dram_latency_cycles + -(-t * t // config.dram_bytes_per_cycle)
        elif isinstance(op, isa.LoadAccOp):
            unit, touched = "dma", [slot("acc", op.field("acc"), where)]
            acc[op.field("acc")] = dram_view(op.field("dram"), 4 * t * t, np.int32, where)
            cost = config.dram_latency_cycles + -(-4 * t * t // config.dram_bytes_per_cycle)
        elif isinstance(op, isa.StoreTileOp):
            unit, touched = "dma", [slot("acc", op.field("acc"), where)]
            dram_view(op.field("dram"), 4 * t * t, np.int32, where)[...] = acc[op.field("acc")]
            cost = config.dram_latency_cycles + -(-4 * t * t // config.dram_bytes_per_cycle)
        elif isinstance(op, isa.FillZeroOp):
            unit, touched = "core", [slot("acc", op.field("acc"), where)]
            acc[op.field("acc")] = 0
            cost = config.fill_cycles
        elif isinstance(op, isa.GemmAddOp):
            unit = "core"
            touched = [slot("acc", op.field("acc"), where), slot("buf", op.field("a"), where),
                       slot("buf", op.field("b"), where)]
            a = buf[op.field("a")].astype(np.int32)
            b = buf[op.field("b")].astype(np.int32)
            acc[op.field("acc")] += a @ b.T
            cost = config.gemm_cycles
            gemms += 1
        else:
            raise Gemm8x8SimulatorError(f"{where}: not a gemm8x8 instruction")
        start = max([free[unit], *(ready.get(s, 0) for s in touched)])
        end = start + cost
        free[unit] = end
        busy[unit] += cost
        for s in touched:
            ready[s] = end
    total = max(free.values())
    return Gemm8x8Report(total, busy, counts, gemms, config)


def simulate(lowered: LoweredProgram, inputs: dict[int, np.ndarray], config: Gemm8x8Config = DEFAULT
             ) -> tuple[dict[int, np.ndarray], Gemm8x8Report]:
    """The simulator hook: place each input argument (index -> array in the argument's
    tiled shape) in DRAM, run, return every output argument and the report."""
    layout: dict[int, DramSlot] = lowered.layout
    size = max((s.addr + s.nbytes for s in layout.values()), default=0)
    if size > config.dram_bytes:
        raise Gemm8x8SimulatorError(f"the arguments need {size} bytes of DRAM, the unit has "
                                    f"{config.dram_bytes}")
    dram = np.zeros(size, np.uint8)
    for i, s in layout.items():
        if i in inputs:
            array = np.ascontiguousarray(inputs[i], dtype=s.dtype)
            if array.shape != s.shape:
                raise Gemm8x8SimulatorError(f"argument {i}: expected shape {list(s.shape)}, "
                                            f"got {list(array.shape)}")
            dram[s.addr:s.addr + s.nbytes] = array.reshape(-1).view(np.uint8)
        elif not s.output:
            raise Gemm8x8SimulatorError(f"argument {i}: no input given")
    report = run_program(lowered.program, dram, config)  # pyright: ignore[reportArgumentType]
    outputs = {i: dram[s.addr:s.addr + s.nbytes].view(s.dtype).reshape(s.shape).copy()
               for i, s in layout.items() if s.output}
    return outputs, report
