"""The `vta` dialect: the instruction set of a VTA-like tensor accelerator.

Each instruction op mirrors one 128-bit VTA instruction field by field, so the IR *is*
the microcode; `xweave.accel.vta.encoding` turns it into bytes and back. The hardware
(see `xweave.accel.vta.config` and TVM's VTA) has four modules connected by FIFOs:

* **load** runs `vta.load` of `inp`/`wgt` (DMA from DRAM into the input/weight scratchpads);
* **compute** runs `vta.load` of `uop`/`acc`, `vta.gemm`, `vta.alu` and `vta.finish`;
* **store** runs `vta.store` (accumulator lanes narrowed to int8, then DMA to DRAM).

Modules only synchronize through dependency tokens. Every instruction carries four flags,
relative to its module's place in the load -> compute -> store pipeline: `pop_prev` /
`pop_next` wait for a token from the previous / next module before executing, and
`push_prev` / `push_next` send one after completing. They print as `deps(...)` (omitted
when none is set).

**Where micro-ops live.** GEMM and ALU instructions run a *micro-kernel*: a range
`[uop_bgn, uop_end)` of 32-bit micro-ops (`vta.uop dst, src, wgt`) in the on-chip uop
scratchpad, walked by a two-level loop (`iter(out, in)`) whose indices add affine
offsets (`dst(out, in)`, `src(...)`, `wgt(...)`) to each micro-op's fields. As on the
hardware, micro-ops reach that scratchpad by DMA: a program keeps its micro-op image in
one `vta.uop_buffer` (the program's *uop segment* in DRAM, micro-op `i` at uop address
`i`), and `vta.load uop sram S dram D ... x N` copies micro-ops `[D, D+N)` of it to
scratchpad slots `[S, S+N)`. A `uop[b:e]` range therefore names scratchpad slots, not
buffer positions. This keeps the IR a faithful image of the two binaries the encoder
produces (instruction stream and uop segment) and lets one micro-kernel be loaded once
and reused by many instructions, or evicted and reloaded.

A whole program is one `vta.program` (optionally named), holding the `vta.uop_buffer`
first and then the instruction stream in execution order:

    vta.program @matvec {
      vta.uop_buffer {
        vta.uop 0, 1, 0
        vta.uop 1, 2, 0
      }
      vta.load uop sram 0 dram 0 y 1 x 2 stride 2
      vta.gemm reset uop[0:2] iter(1, 1) dst(0, 0) src(0, 0) wgt(0, 0)
      vta.load wgt sram 0 dram 0 y 1 x 1 stride 1
      vta.load inp sram 0 dram 128 y 1 x 2 stride 2 pad(0, 0, 1, 1) deps(push_next)
      vta.gemm uop[0:2] iter(1, 1) dst(0, 0) src(0, 0) wgt(0, 0) deps(pop_prev)
      vta.alu max uop[0:2] iter(1, 1) dst(0, 0) src(0, 0) imm 0 deps(push_next)
      vta.store out sram 0 dram 0 y 1 x 2 stride 2 deps(pop_prev, push_prev)
      vta.load uop sram 0 dram 0 y 0 x 0 stride 0 deps(pop_next)
      vta.finish
    }

(acc[i] = relu(inp[1 + i] . W^T) for i in 0..1: the 2-element input row lands in slots
1..2, between zero pads. The inp load hands a token to compute (after the wgt load, as the
load module is in order), the ALU hands one to store, and the final `x 0` uop load is a
compute-side no-op that waits for the store, since FINISH may not pop.)

DRAM addresses (`dram_base`) count elements of the memory type (16 B for `inp`, 256 B for
`wgt`, 64 B for `acc`, 16 B for `out`, 4 B for `uop`). Verifiers check every field against
the widths and scratchpad depths of the default `HardwareConfig`; the encoder checks
against the config it is given.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import StringAttr, SymbolNameConstraint
from xdsl.ir import Attribute, Block, Dialect, Operation, Region
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    opt_prop_def,
    region_def,
    traits_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import IsolatedFromAbove, NoTerminator, OptionalSymbolOpInterface
from xdsl.utils.exceptions import VerifyException

from xweave.accel.vta.instructions import (
    ALU_OPCODE_CODES,
    CONFIG_ATTR,
    DEP_FLAGS,
    INSTRUCTIONS,
    MEMORY_TYPE_CODES,
    AluOp,
    AluOpcode,
    AluOpcodeAttr,
    FinishOp,
    GemmOp,
    IntegerFieldsOp,
    IsaField,
    LoadOp,
    MemoryType,
    MemoryTypeAttr,
    StoreOp,
    VTAInstruction,
    i64_attr,
    config_attr,
    config_of,
)

__all__ = [
    "ALU_OPCODE_CODES", "CONFIG_ATTR", "DEP_FLAGS", "INSTRUCTIONS", "MEMORY_TYPE_CODES", "VTA",
    "AluOp", "AluOpcode", "AluOpcodeAttr", "FinishOp", "GemmOp", "IntegerFieldsOp", "IsaField",
    "LoadOp", "MemoryType", "MemoryTypeAttr", "ProgramOp", "StoreOp", "UopBufferOp", "UopOp",
    "VTAInstruction", "config_attr", "config_of",
]


# --------------------------------------------------------------------------------------
# Micro-ops and the program container
# --------------------------------------------------------------------------------------


@irdl_op_definition
class UopOp(IntegerFieldsOp):
    """One 32-bit micro-op: base indices of the accumulator, source and weight tensors."""

    name = "vta.uop"
    FIELDS: ClassVar[tuple[IsaField, ...]] = (
        IsaField("dst", "uop_dst_bits", "Accumulator index."),
        IsaField("src", "uop_src_bits", "Input index for GEMM, accumulator index for ALU."),
        IsaField("wgt", "uop_wgt_bits", "Weight index for GEMM, unused (0) for ALU."),
    )

    def __init__(self, dst: int, src: int, wgt: int = 0):
        super().__init__(properties={"dst": i64_attr(dst), "src": i64_attr(src), "wgt": i64_attr(wgt)})

    @classmethod
    def parse(cls, parser: Parser) -> UopOp:
        dst = parser.parse_integer(allow_boolean=False)
        parser.parse_punctuation(",")
        src = parser.parse_integer(allow_boolean=False)
        parser.parse_punctuation(",")
        wgt = parser.parse_integer(allow_boolean=False)
        op = cls(dst, src, wgt)
        if (attrs := parser.parse_optional_attr_dict_with_keyword()) is not None:
            op.attributes.update(attrs.data)
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(f" {self.field('dst')}, {self.field('src')}, {self.field('wgt')}")
        printer.print_op_attributes(self.attributes, print_keyword=True)

    def verify_(self) -> None:
        self._verify_fields()


def _single_block_region(ops: Sequence[Operation]) -> Region:
    return Region(Block(ops))


@irdl_op_definition
class UopBufferOp(IRDLOperation):
    """A program's micro-op image in DRAM (its uop segment): `vta.uop` i sits at uop address i."""

    name = "vta.uop_buffer"

    body = region_def("single_block")
    traits = traits_def(NoTerminator())

    def __init__(self, uops: Sequence[UopOp | tuple[int, int, int]] = ()):
        ops = [u if isinstance(u, UopOp) else UopOp(*u) for u in uops]
        super().__init__(regions=[_single_block_region(ops)])

    @property
    def uops(self) -> list[UopOp]:
        return [op for op in self.body.block.ops if isinstance(op, UopOp)]

    @property
    def num_uops(self) -> int:
        """How many micro-ops the segment holds (its size in uop addresses)."""
        return len(self.body.block.ops)

    @classmethod
    def parse(cls, parser: Parser) -> UopBufferOp:
        attrs = parser.parse_optional_attr_dict_with_keyword()
        region = parser.parse_region()
        if not region.blocks:
            region.add_block(Block())
        op = cls.create(regions=[region], attributes=attrs.data if attrs else {})
        return op

    def print(self, printer: Printer) -> None:
        printer.print_op_attributes(self.attributes, print_keyword=True)
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=False, print_empty_block=False)

    def verify_(self) -> None:
        for op in self.body.block.ops:
            if not isinstance(op, UopOp):
                raise VerifyException(f"vta.uop_buffer may only hold vta.uop, found {op.name}")


@irdl_op_definition
class ProgramOp(IRDLOperation):
    """One accelerator program: an optional leading `vta.uop_buffer`, then the instruction stream."""

    name = "vta.program"

    sym_name = opt_prop_def(SymbolNameConstraint())
    """Optional symbol name (`vta.program @conv {...}`), so host code can refer to the program."""
    body = region_def("single_block")
    traits = traits_def(NoTerminator(), IsolatedFromAbove(), OptionalSymbolOpInterface())

    def __init__(
        self,
        instructions: Sequence[Operation] = (),
        uops: UopBufferOp | Sequence[UopOp | tuple[int, int, int]] | None = None,
        sym_name: str | None = None,
    ):
        ops: list[Operation] = []
        if uops is not None:
            ops.append(uops if isinstance(uops, UopBufferOp) else UopBufferOp(uops))
        ops.extend(instructions)
        props = {"sym_name": StringAttr(sym_name)} if sym_name is not None else {}
        super().__init__(properties=props, regions=[_single_block_region(ops)])

    @property
    def uop_buffer(self) -> UopBufferOp | None:
        first = self.body.block.first_op
        return first if isinstance(first, UopBufferOp) else None

    @property
    def instructions(self) -> list[VTAInstruction]:
        return [op for op in self.body.block.ops if isinstance(op, VTAInstruction)]

    @classmethod
    def parse(cls, parser: Parser) -> ProgramOp:
        props: dict[str, Attribute] = {}
        if (sym := parser.parse_optional_symbol_name()) is not None:
            props["sym_name"] = sym
        attrs = parser.parse_optional_attr_dict_with_keyword()
        region = parser.parse_region()
        if not region.blocks:
            region.add_block(Block())
        return cls.create(
            properties=props, regions=[region], attributes=attrs.data if attrs else {}
        )

    def print(self, printer: Printer) -> None:
        if self.sym_name is not None:
            printer.print_string(" ")
            printer.print_symbol_name(self.sym_name.data)
        printer.print_op_attributes(self.attributes, print_keyword=True)
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=False, print_empty_block=False)

    def verify_(self) -> None:
        config_of(self)  # a config the program records must be a valid one
        n_uops: int | None = None
        for i, op in enumerate(self.body.block.ops):
            if isinstance(op, UopBufferOp):
                if i != 0:
                    raise VerifyException(
                        "the vta.uop_buffer must be the first op, and there may be "
                        "only one"
                    )
                n_uops = op.num_uops
            elif not isinstance(op, VTAInstruction):
                raise VerifyException(
                    f"vta.program may only hold a vta.uop_buffer and vta instructions, found {op.name}"
                )
            elif isinstance(op, LoadOp) and op.mem == MemoryType.UOP and op.field("x_size"):
                y, x, stride = op.field("y_size"), op.field("x_size"), op.field("x_stride")
                base = op.field("dram_base")
                end = base + (y - 1) * stride + x if y else base
                if n_uops is None:
                    raise VerifyException(
                        "a vta.load of uop needs a vta.uop_buffer to load from"
                    )
                if end > n_uops:
                    raise VerifyException(
                        f"a vta.load of uop reads uop addresses up to {end}, but the "
                        f"vta.uop_buffer holds {n_uops} micro-ops"
                    )


VTA = Dialect(
    "vta",
    [ProgramOp, UopBufferOp, UopOp, LoadOp, StoreOp, GemmOp, AluOp, FinishOp],
    [MemoryTypeAttr, AluOpcodeAttr],
)
