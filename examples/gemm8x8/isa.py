"""The `gemm8x8` dialect: the instruction set of the 8x8 GEMM unit.

A program is one `gemm8x8.program` holding the instruction stream in order:

    gemm8x8.program {
      gemm8x8.load_acc acc[0], dram[512]      // bias tile (int32) -> accumulator slot 0
      gemm8x8.load_tile buf[0], dram[0]       // int8 tile at DRAM byte 0 -> operand slot 0
      gemm8x8.load_tile buf[2], dram[64]
      gemm8x8.gemm_add acc[0], buf[0], buf[2] // acc[0] += buf[0] . buf[2]^T
      gemm8x8.store_tile dram[768], acc[0]    // int32 tile -> DRAM
    }

`gemm8x8.fill_zero acc[S]` clears an accumulator tile. DRAM addresses are byte
addresses, aligned to the tile they move (64 bytes for int8, 256 for int32); slots index
tiles. Verifiers check both against the default `Gemm8x8Config`.
"""

from __future__ import annotations

import abc
from typing import ClassVar

from xdsl.dialects.builtin import I64, IntegerAttr
from xdsl.ir import Block, Dialect, Region
from xdsl.irdl import IRDLOperation, irdl_op_definition, prop_def, region_def, traits_def
from xdsl.traits import NoTerminator
from xdsl.utils.exceptions import VerifyException

from .config import DEFAULT


class Instruction(IRDLOperation, abc.ABC):
    """Base of the instructions: integer fields, each a slot or a DRAM address."""

    SLOTS: ClassVar[dict[str, str]] = {}
    """Field -> "buf" or "acc": which scratchpad the field indexes."""
    DRAM_ALIGN: ClassVar[int] = 0
    """Alignment of the `dram` field (0: no such field)."""

    def field(self, name: str) -> int:
        return self.properties[name].value.data  # pyright: ignore[reportAttributeAccessIssue]

    def verify_(self) -> None:
        limits = {"buf": DEFAULT.buf_slots, "acc": DEFAULT.acc_slots}
        for name, kind in self.SLOTS.items():
            if not 0 <= self.field(name) < limits[kind]:
                raise VerifyException(f"{self.name}: {kind} slot {self.field(name)} out of range "
                                      f"[0, {limits[kind]})")
        if self.DRAM_ALIGN:
            addr = self.field("dram")
            if addr < 0 or addr % self.DRAM_ALIGN:
                raise VerifyException(f"{self.name}: DRAM address {addr} must be a non-negative "
                                      f"multiple of {self.DRAM_ALIGN}")


@irdl_op_definition
class LoadTileOp(Instruction):
    """DMA one int8 tile from DRAM into an operand buffer slot."""

    name = "gemm8x8.load_tile"
    buf = prop_def(IntegerAttr[I64])
    dram = prop_def(IntegerAttr[I64])
    SLOTS: ClassVar[dict[str, str]] = {"buf": "buf"}
    DRAM_ALIGN: ClassVar[int] = DEFAULT.int8_tile_bytes
    assembly_format = "`buf` `[` $buf `]` `,` `dram` `[` $dram `]` attr-dict"

    def __init__(self, buf: int, dram: int):
        super().__init__(properties={"buf": IntegerAttr(buf, 64), "dram": IntegerAttr(dram, 64)})


@irdl_op_definition
class LoadAccOp(Instruction):
    """DMA one int32 tile from DRAM into an accumulator slot (e.g. a bias)."""

    name = "gemm8x8.load_acc"
    acc = prop_def(IntegerAttr[I64])
    dram = prop_def(IntegerAttr[I64])
    SLOTS: ClassVar[dict[str, str]] = {"acc": "acc"}
    DRAM_ALIGN: ClassVar[int] = DEFAULT.int32_tile_bytes
    assembly_format = "`acc` `[` $acc `]` `,` `dram` `[` $dram `]` attr-dict"

    def __init__(self, acc: int, dram: int):
        super().__init__(properties={"acc": IntegerAttr(acc, 64), "dram": IntegerAttr(dram, 64)})


@irdl_op_definition
class FillZeroOp(Instruction):
    """Clear an accumulator slot."""

    name = "gemm8x8.fill_zero"
    acc = prop_def(IntegerAttr[I64])
    SLOTS: ClassVar[dict[str, str]] = {"acc": "acc"}
    assembly_format = "`acc` `[` $acc `]` attr-dict"

    def __init__(self, acc: int):
        super().__init__(properties={"acc": IntegerAttr(acc, 64)})


@irdl_op_definition
class GemmAddOp(Instruction):
    """acc[S] += buf[A] . buf[B]^T (int8 x int8 -> int32), the fused GEMM-add."""

    name = "gemm8x8.gemm_add"
    acc = prop_def(IntegerAttr[I64])
    a = prop_def(IntegerAttr[I64])
    b = prop_def(IntegerAttr[I64])
    SLOTS: ClassVar[dict[str, str]] = {"acc": "acc", "a": "buf", "b": "buf"}
    assembly_format = "`acc` `[` $acc `]` `,` `buf` `[` $a `]` `,` `buf` `[` $b `]` attr-dict"

    def __init__(self, acc: int, a: int, b: int):
        super().__init__(properties={"acc": IntegerAttr(acc, 64), "a": IntegerAttr(a, 64),
                                     "b": IntegerAttr(b, 64)})


@irdl_op_definition
class StoreTileOp(Instruction):
    """DMA an accumulator slot (int32) to DRAM."""

    name = "gemm8x8.store_tile"
    dram = prop_def(IntegerAttr[I64])
    acc = prop_def(IntegerAttr[I64])
    SLOTS: ClassVar[dict[str, str]] = {"acc": "acc"}
    DRAM_ALIGN: ClassVar[int] = DEFAULT.int32_tile_bytes
    assembly_format = "`dram` `[` $dram `]` `,` `acc` `[` $acc `]` attr-dict"

    def __init__(self, dram: int, acc: int):
        super().__init__(properties={"dram": IntegerAttr(dram, 64), "acc": IntegerAttr(acc, 64)})


@irdl_op_definition
class ProgramOp(IRDLOperation):
    """A whole program: the instructions in execution order."""

    name = "gemm8x8.program"
    body = region_def("single_block")
    traits = traits_def(NoTerminator())
    assembly_format = "$body attr-dict"

    def __init__(self, instructions: list[Instruction]):
        super().__init__(regions=[Region(Block(instructions))])

    def verify_(self) -> None:
        for op in self.body.block.ops:
            if not isinstance(op, Instruction):
                raise VerifyException(f"gemm8x8.program: {op.name} is not a gemm8x8 instruction")


Gemm8x8 = Dialect("gemm8x8", [LoadTileOp, LoadAccOp, FillZeroOp, GemmAddOp, StoreTileOp, ProgramOp])
