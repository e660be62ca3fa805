"""Binary encoding of the `vta` dialect: 128-bit instructions and 32-bit micro-ops.

The layouts follow TVM's `hw_spec.h`: fields are C bit-fields packed from bit 0 into
little-endian 64-bit words, and a field that would straddle a word boundary starts at the
next word (hence the unused bits 58..63 of LOAD/STORE). Index-sized fields take their width
from the `HardwareConfig` (`log2` of a scratchpad depth), so with `DEFAULT` the positions
are exactly those of TVM's default VTA:

    LOAD/STORE  opcode[2:0] deps[6:3] memory_type[9:7] sram_base[25:10] dram_base[57:26]
                y_size[79:64] x_size[95:80] x_stride[111:96] y_pad_0[115:112] y_pad_1[119:116]
                x_pad_0[123:120] x_pad_1[127:124]
    GEMM        opcode deps reset_reg[7] uop_bgn[20:8] uop_end[34:21] iter_out[48:35]
                iter_in[62:49] dst_factor_out[74:64] dst_factor_in[85:75]
                src_factor_out[96:86] src_factor_in[107:97] wgt_factor_out[117:108]
                wgt_factor_in[127:118]
    ALU         as GEMM up to src_factor_in, then alu_opcode[110:108] use_imm[111] imm[127:112]
    FINISH      opcode deps (everything else zero)
    uop         dst_idx[10:0] src_idx[21:11] wgt_idx[31:22]

A program encodes to two images: the instruction stream (16 bytes per instruction, in
order) and the uop segment (4 bytes per `vta.uop` of its `vta.uop_buffer`).

Decoding is strict about what the IR cannot represent (unknown opcodes, memory types and
ALU opcodes, a STORE with padding) and names the byte offset of the bad instruction.
Unused bits (e.g. 58..63 of a LOAD, `imm` when `use_imm` is clear) are ignored.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from xdsl.ir import Operation

from xweave.accel.vta.config import DEFAULT, HardwareConfig
from xweave.accel.vta.dialect import (
    ALU_OPCODE_CODES,
    DEP_FLAGS,
    MEMORY_TYPE_CODES,
    AluOp,
    FinishOp,
    GemmOp,
    IntegerFieldsOp,
    LoadOp,
    MemoryType,
    ProgramOp,
    StoreOp,
    UopBufferOp,
    UopOp,
    VTAInstruction,
)

__all__ = [
    "Field",
    "Layout",
    "decode_instruction",
    "decode_program",
    "decode_uop",
    "disassemble",
    "encode_instruction",
    "encode_program",
    "encode_uop",
    "layouts",
]

_MEMORY_TYPES = {code: mem for mem, code in MEMORY_TYPE_CODES.items()}
_ALU_OPCODES = {code: op for op, code in ALU_OPCODE_CODES.items()}
_OPCODES: dict[int, type[VTAInstruction]] = {
    cls.OPCODE: cls for cls in (LoadOp, StoreOp, GemmOp, FinishOp, AluOp)
}


# --------------------------------------------------------------------------------------
# Bit layouts
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Field:
    """One bit-field: bits [lo, lo + width) of the word, two's complement if signed."""

    name: str
    lo: int
    width: int
    signed: bool = False

    @property
    def hi(self) -> int:
        """The highest bit (inclusive), as in `[hi:lo]` notation."""
        return self.lo + self.width - 1

    @property
    def mask(self) -> int:
        return (1 << self.width) - 1


@dataclass(frozen=True)
class Layout:
    """A packed bit-field layout of one instruction (or micro-op) format."""

    name: str
    bits: int
    fields: tuple[Field, ...]

    def __getitem__(self, name: str) -> Field:
        for f in self.fields:
            if f.name == name:
                return f
        raise KeyError(f"{self.name} has no field {name!r}")

    def pack(self, values: Mapping[str, int], what: str = "") -> int:
        """Pack field values (missing ones are 0) into an integer; values must fit."""
        word = 0
        for f in self.fields:
            value = values.get(f.name, 0)
            if f.signed:
                lo, hi = -(1 << (f.width - 1)), (1 << (f.width - 1)) - 1
            else:
                lo, hi = 0, f.mask
            if not lo <= value <= hi:
                raise ValueError(
                    f"cannot encode {what or self.name}: {f.name} = {value} does not fit in "
                    f"{f.width}{' signed' if f.signed else ''} bits ({lo}..{hi})"
                )
            word |= (value & f.mask) << f.lo
        return word

    def unpack(self, word: int) -> dict[str, int]:
        """Extract every field (sign-extending signed ones)."""
        values = {}
        for f in self.fields:
            value = (word >> f.lo) & f.mask
            if f.signed and value >> (f.width - 1):
                value -= 1 << f.width
            values[f.name] = value
        return values


def _c_bitfields(name: str, spec: Sequence[tuple[str, int] | tuple[str, int, bool]], bits: int) -> Layout:
    """Lay fields out like a C compiler packs `uint64_t` bit-fields (no straddling words)."""
    fields = []
    pos = 0
    for entry in spec:
        fname, width = entry[0], entry[1]
        signed = bool(entry[2]) if len(entry) > 2 else False
        if width > 64:
            raise ValueError(f"{name}: field {fname} is wider than 64 bits")
        if pos % 64 + width > 64:
            pos = (pos // 64 + 1) * 64
        fields.append(Field(fname, pos, width, signed))
        pos += width
    if pos > bits:
        raise ValueError(
            f"the {name} format needs {pos} bits with this HardwareConfig, more than {bits}"
        )
    return Layout(name, bits, tuple(fields))


@functools.cache
def layouts(config: HardwareConfig = DEFAULT) -> dict[str, Layout]:
    """The five formats for `config`: "mem" (LOAD/STORE), "gemm", "alu", "finish", "uop".

    The integer fields and their widths come from the ops' field tables (`FIELDS`), so
    the encoder and the verifiers agree on them; this adds the fields the encoder derives
    from the op (opcode, flags, enums, the immediate)."""
    c = config

    def widths(op: type[IntegerFieldsOp], suffix: str = "") -> list[tuple[str, int]]:
        return [(f.name + suffix, f.bits(c)) for f in op.FIELDS]

    common = [("opcode", c.opcode_bits), *((flag, 1) for flag in DEP_FLAGS)]
    mem = [*common, ("memory_type", c.memory_type_bits), *widths(LoadOp)]
    gemm = [*common, ("reset_reg", 1), *widths(GemmOp)]
    alu = [
        *common, ("reset_reg", 1), *widths(AluOp),
        ("alu_opcode", c.alu_opcode_bits), ("use_imm", 1), ("imm", c.alu_imm_bits, True),
    ]  # fmt: skip
    return {
        "mem": _c_bitfields("LOAD/STORE", mem, c.insn_bits),
        "gemm": _c_bitfields("GEMM", gemm, c.insn_bits),
        "alu": _c_bitfields("ALU", alu, c.insn_bits),
        "finish": _c_bitfields("FINISH", common, c.insn_bits),
        "uop": _c_bitfields("micro-op", widths(UopOp, "_idx"), c.uop_bits),
    }


def _layout_of(op: VTAInstruction, config: HardwareConfig) -> Layout:
    key = {LoadOp: "mem", StoreOp: "mem", GemmOp: "gemm", AluOp: "alu", FinishOp: "finish"}
    return layouts(config)[key[type(op)]]


# --------------------------------------------------------------------------------------
# Instructions
# --------------------------------------------------------------------------------------


def _isa_values(op: VTAInstruction) -> dict[str, int]:
    """The op's ISA field values (ints), keyed by layout field name."""
    values = {"opcode": op.OPCODE, **{flag: int(flag in op.deps) for flag in DEP_FLAGS}}
    values.update(op.fields())
    if isinstance(op, (LoadOp, StoreOp)):
        values["memory_type"] = MEMORY_TYPE_CODES[op.mem]
    if isinstance(op, (GemmOp, AluOp)):
        values["reset_reg"] = int(op.is_reset)
    if isinstance(op, AluOp):
        values["alu_opcode"] = ALU_OPCODE_CODES[op.op]
        values["use_imm"] = int(op.use_imm)
        values["imm"] = op.imm_value or 0
    return values


def encode_instruction(op: Operation, config: HardwareConfig = DEFAULT) -> bytes:
    """The 16 little-endian bytes of one instruction op."""
    if not isinstance(op, VTAInstruction):
        raise TypeError(f"not a vta instruction: {op.name}")
    word = _layout_of(op, config).pack(_isa_values(op), op.name)
    return word.to_bytes(config.insn_bytes, "little")


def _where(offset: int) -> str:
    return f"at offset {offset:#x}"


def decode_instruction(
    data: bytes, config: HardwareConfig = DEFAULT, *, offset: int = 0
) -> VTAInstruction:
    """The instruction op encoded by 16 bytes; `offset` only serves error messages."""
    if len(data) != config.insn_bytes:
        raise ValueError(
            f"an instruction is {config.insn_bytes} bytes, got {len(data)} {_where(offset)}"
        )
    word = int.from_bytes(data, "little")
    opcode = word & ((1 << config.opcode_bits) - 1)
    cls = _OPCODES.get(opcode)
    if cls is None:
        raise ValueError(f"unknown opcode {opcode} in the instruction {_where(offset)}")
    lay = layouts(config)
    deps = [flag for flag in DEP_FLAGS if (word >> lay["finish"][flag].lo) & 1]

    if cls is FinishOp:
        return FinishOp(deps=deps)

    if cls in (LoadOp, StoreOp):
        v = lay["mem"].unpack(word)
        mem = _MEMORY_TYPES.get(v["memory_type"])
        kind = "LOAD" if cls is LoadOp else "STORE"
        if mem is None:
            raise ValueError(
                f"unknown memory type {v['memory_type']} in the {kind} {_where(offset)}"
            )
        fields = {name: v[name] for name in cls.INT_FIELDS}
        if cls is LoadOp:
            if mem not in LoadOp.LOADABLE:
                raise ValueError(f"memory type {mem} is not valid for LOAD {_where(offset)}")
            return LoadOp(mem, **fields, deps=deps)
        if mem != MemoryType.OUT:
            raise ValueError(f"memory type {mem} is not valid for STORE {_where(offset)}")
        if any(v[p] for p in ("y_pad_0", "y_pad_1", "x_pad_0", "x_pad_1")):
            raise ValueError(f"STORE {_where(offset)} has padding, which STORE does not support")
        return StoreOp(**fields, deps=deps)

    if cls is GemmOp:
        v = lay["gemm"].unpack(word)
        fields = {name: v[name] for name in GemmOp.INT_FIELDS}
        return GemmOp(**fields, reset=bool(v["reset_reg"]), deps=deps)

    v = lay["alu"].unpack(word)
    alu_op = _ALU_OPCODES.get(v["alu_opcode"])
    if alu_op is None:
        raise ValueError(f"unknown ALU opcode {v['alu_opcode']} in the ALU {_where(offset)}")
    fields = {name: v[name] for name in AluOp.INT_FIELDS}
    imm = v["imm"] if v["use_imm"] else None
    return AluOp(alu_op, **fields, imm=imm, reset=bool(v["reset_reg"]), deps=deps)


# --------------------------------------------------------------------------------------
# Micro-ops
# --------------------------------------------------------------------------------------


def encode_uop(op: UopOp, config: HardwareConfig = DEFAULT) -> bytes:
    """The 4 little-endian bytes of one micro-op."""
    values = {f"{name}_idx": value for name, value in op.fields().items()}
    word = layouts(config)["uop"].pack(values, "vta.uop")
    return word.to_bytes(config.uop_bits // 8, "little")


def decode_uop(data: bytes, config: HardwareConfig = DEFAULT, *, offset: int = 0) -> UopOp:
    """The micro-op encoded by 4 bytes."""
    size = config.uop_bits // 8
    if len(data) != size:
        raise ValueError(f"a micro-op is {size} bytes, got {len(data)} {_where(offset)}")
    v = layouts(config)["uop"].unpack(int.from_bytes(data, "little"))
    return UopOp(**{name: v[f"{name}_idx"] for name in UopOp.INT_FIELDS})


# --------------------------------------------------------------------------------------
# Programs
# --------------------------------------------------------------------------------------


def encode_program(program: ProgramOp, config: HardwareConfig = DEFAULT) -> tuple[bytes, bytes]:
    """(instruction stream, uop segment) of a `vta.program`. Verify the program first:
    encoding only checks that every field fits its bits."""
    insns = bytearray()
    uops = bytearray()
    for op in program.body.block.ops:
        if isinstance(op, UopBufferOp):
            for uop in op.body.block.ops:
                if not isinstance(uop, UopOp):
                    raise ValueError(f"vta.uop_buffer holds {uop.name}, not a vta.uop")
                uops += encode_uop(uop, config)
        elif isinstance(op, VTAInstruction):
            insns += encode_instruction(op, config)
        else:
            raise ValueError(f"cannot encode {op.name} inside a vta.program")
    return bytes(insns), bytes(uops)


def _chunks(data: bytes, size: int, what: str):
    if len(data) % size:
        raise ValueError(
            f"the {what} is {len(data)} bytes, not a multiple of the {size}-byte {what} word"
        )
    for offset in range(0, len(data), size):
        yield offset, data[offset : offset + size]


def decode_program(
    insn_bytes: bytes,
    uop_bytes: bytes = b"",
    config: HardwareConfig = DEFAULT,
    *,
    sym_name: str | None = None,
) -> ProgramOp:
    """Rebuild a `vta.program` from its two images (with a `vta.uop_buffer` iff uop_bytes)."""
    insns = [
        decode_instruction(chunk, config, offset=off)
        for off, chunk in _chunks(insn_bytes, config.insn_bytes, "instruction stream")
    ]
    uops = None
    if uop_bytes:
        uops = UopBufferOp(
            [
                decode_uop(chunk, config, offset=off)
                for off, chunk in _chunks(uop_bytes, config.uop_bits // 8, "uop segment")
            ]
        )
    return ProgramOp(insns, uops, sym_name=sym_name)


def _op_text(op: Operation) -> str:
    return str(op).strip()


def _hex_words(data: bytes) -> str:
    return " ".join(data[i : i + 4].hex() for i in range(0, len(data), 4))


def disassemble(insn_bytes: bytes, uop_bytes: bytes = b"", config: HardwareConfig = DEFAULT) -> str:
    """An objdump-like listing: one line per instruction (and micro-op) with its byte offset,
    its bytes in memory order, its IR text and the module that executes it."""
    lines = [f"; instructions ({len(insn_bytes) // config.insn_bytes})"]
    rows = []
    for off, chunk in _chunks(insn_bytes, config.insn_bytes, "instruction stream"):
        op = decode_instruction(chunk, config, offset=off)
        rows.append((f"{off:#06x}:  {_hex_words(chunk)}  {_op_text(op)}", op.stage))
    width = max((len(text) for text, _ in rows), default=0)
    lines += [f"{text:<{width}}  ; {stage}" for text, stage in rows]
    if uop_bytes:
        size = config.uop_bits // 8
        lines.append(f"; uops ({len(uop_bytes) // size})")
        for off, chunk in _chunks(uop_bytes, size, "uop segment"):
            uop = decode_uop(chunk, config, offset=off)
            lines.append(f"{off:#06x}:  {_hex_words(chunk)}  {_op_text(uop)}")
    return "\n".join(lines) + "\n"
