"""The gemm8x8 unit's hardware configuration."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Gemm8x8Config:
    """An 8x8 int8 GEMM unit with int32 accumulators (the TVM talk's `gemm8x8`).

    Operands live in tiles of 8x8 elements: `buf_slots` int8 tiles in the operand buffer,
    `acc_slots` int32 tiles in the accumulator. One `gemm_add` multiplies two operand
    tiles (acc += a . b^T, 512 MACs) in `gemm_cycles`; a DMA moves `dram_bytes_per_cycle`
    after `dram_latency_cycles`. The DMA engine and the core run concurrently, ordered
    only by the tiles instructions read and write.
    """

    tile: int = 8
    buf_slots: int = 8
    acc_slots: int = 4
    dram_bytes: int = 1 << 24
    dram_bytes_per_cycle: int = 16
    dram_latency_cycles: int = 8
    gemm_cycles: int = 8
    fill_cycles: int = 1

    @property
    def int8_tile_bytes(self) -> int:
        return self.tile * self.tile

    @property
    def int32_tile_bytes(self) -> int:
        return 4 * self.tile * self.tile


DEFAULT = Gemm8x8Config()
