"""The vta ISA: hardware config, binary encoding (bit positions of TVM's default VTA),
decoding, disassembly, and the dialect's Python-side round trips."""

import io
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from xdsl.printer import Printer

from xweave.accel.vta.config import DEFAULT, HardwareConfig
from xweave.accel.vta.encoding import (
    decode_instruction,
    decode_program,
    decode_uop,
    disassemble,
    encode_instruction,
    encode_program,
    encode_uop,
    layouts,
)
from xweave.context import parse_module
from xweave.accel.vta import dialect as vta

# --------------------------------------------------------------------------------------
# Strategies: every field over its full range for the default config
# --------------------------------------------------------------------------------------


def bits(n: int):
    return st.integers(0, (1 << n) - 1)


deps = st.sets(st.sampled_from(["pop_prev", "pop_next", "push_prev", "push_next"])).map(sorted)

loads = st.builds(
    vta.LoadOp,
    st.sampled_from(list(vta.LoadOp.LOADABLE)),
    bits(16), bits(32), bits(16), bits(16), bits(16),
    bits(4), bits(4), bits(4), bits(4),
    deps=deps,
)  # fmt: skip
stores = st.builds(vta.StoreOp, bits(16), bits(32), bits(16), bits(16), bits(16), deps=deps)
gemms = st.builds(
    vta.GemmOp,
    bits(13), bits(14), bits(14), bits(14),
    bits(11), bits(11), bits(11), bits(11), bits(10), bits(10),
    reset=st.booleans(), deps=deps,
)  # fmt: skip
alus = st.builds(
    vta.AluOp,
    st.sampled_from(list(vta.AluOpcode)),
    bits(13), bits(14), bits(14), bits(14),
    bits(11), bits(11), bits(11), bits(11),
    imm=st.none() | st.integers(-(1 << 15), (1 << 15) - 1),
    reset=st.booleans(), deps=deps,
)  # fmt: skip
finishes = st.builds(vta.FinishOp, deps=deps)
instructions = st.one_of(loads, stores, gemms, alus, finishes)
uops = st.builds(vta.UopOp, bits(11), bits(11), bits(10))


def same(a, b) -> bool:
    # Clones: is_structurally_equivalent also compares parents, and ours live in different modules.
    return str(a) == str(b) and a.clone().is_structurally_equivalent(b.clone())


@settings(max_examples=300, deadline=None)
@given(instructions)
def test_instruction_roundtrip(op):
    data = encode_instruction(op)
    assert len(data) == 16
    back = decode_instruction(data)
    assert same(op, back), (str(op), str(back))
    assert encode_instruction(back) == data


@settings(max_examples=200, deadline=None)
@given(uops)
def test_uop_roundtrip(op):
    data = encode_uop(op)
    assert len(data) == 4
    assert same(decode_uop(data), op)


@settings(max_examples=50, deadline=None)
@given(st.lists(instructions, max_size=12), st.lists(uops, max_size=12))
def test_program_roundtrip(insns, uop_list):
    program = vta.ProgramOp(insns, uop_list or None, sym_name="p")
    insn_bytes, uop_bytes = encode_program(program)
    assert len(insn_bytes) == 16 * len(insns) and len(uop_bytes) == 4 * len(uop_list)
    assert same(decode_program(insn_bytes, uop_bytes, sym_name="p"), program)


# --------------------------------------------------------------------------------------
# Exact bit positions (tvm-facts.md §3.3), hand-computed
# --------------------------------------------------------------------------------------


def as_int(data: bytes) -> int:
    return int.from_bytes(data, "little")


def test_load_bit_positions():
    op = vta.LoadOp("inp", 5, 0x12345678, 3, 7, 9, 1, 2, 3, 4, deps=["pop_next", "push_next"])
    expected = (
        0  # opcode LOAD
        | 1 << 4 | 1 << 6  # pop_next, push_next
        | 2 << 7  # memory_type INP
        | 5 << 10  # sram_base [25:10]
        | 0x12345678 << 26  # dram_base [57:26]
        | 3 << 64 | 7 << 80 | 9 << 96  # y_size, x_size, x_stride
        | 1 << 112 | 2 << 116 | 3 << 120 | 4 << 124  # y_pad_0, y_pad_1, x_pad_0, x_pad_1
    )  # fmt: skip
    assert as_int(encode_instruction(op)) == expected


def test_store_and_finish_bit_positions():
    op = vta.StoreOp(sram_base=0xFFFF, dram_base=0xFFFFFFFF, y_size=1, x_size=2, x_stride=3,
                 deps=["pop_prev", "push_prev"])  # fmt: skip
    expected = 1 | 1 << 3 | 1 << 5 | 4 << 7 | 0xFFFF << 10 | 0xFFFFFFFF << 26 | 1 << 64 | 2 << 80 | 3 << 96
    assert as_int(encode_instruction(op)) == expected
    assert as_int(encode_instruction(vta.FinishOp())) == 3
    assert encode_instruction(vta.FinishOp(deps=["push_prev"])) == bytes([0x23]) + bytes(15)


def test_gemm_bit_positions():
    op = vta.GemmOp(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, reset=True, deps=["pop_prev"])
    expected = (
        2 | 1 << 3 | 1 << 7  # opcode GEMM, pop_prev, reset_reg
        | 1 << 8 | 2 << 21 | 3 << 35 | 4 << 49  # uop_bgn, uop_end, iter_out, iter_in
        | 5 << 64 | 6 << 75 | 7 << 86 | 8 << 97 | 9 << 108 | 10 << 118  # factors
    )  # fmt: skip
    assert as_int(encode_instruction(op)) == expected
    # The top field is the last 10 bits of the 128.
    top = vta.GemmOp(0, 1, wgt_factor_in=1023)
    assert as_int(encode_instruction(top)) >> 118 == 1023


def test_alu_bit_positions():
    op = vta.AluOp("shr", 0, 1, 1, 1, 1, 2, 3, 4, imm=-2)
    expected = (
        4 | 0 << 8 | 1 << 21 | 1 << 35 | 1 << 49
        | 1 << 64 | 2 << 75 | 3 << 86 | 4 << 97
        | 3 << 108 | 1 << 111 | 0xFFFE << 112  # alu_opcode SHR, use_imm, imm = -2 (two's complement)
    )  # fmt: skip
    assert as_int(encode_instruction(op)) == expected
    no_imm = vta.AluOp("max", 0, 1)
    assert (as_int(encode_instruction(no_imm)) >> 108) & 0xF == 1  # MAX, use_imm clear


def test_uop_bit_positions():
    assert as_int(encode_uop(vta.UopOp(1, 2, 3))) == 1 | 2 << 11 | 3 << 22
    assert encode_uop(vta.UopOp(2047, 0, 1023)) == (2047 | 1023 << 22).to_bytes(4, "little")


def test_default_layout_matches_tvm():
    lay = layouts(DEFAULT)
    pos = {name: (f.hi, f.lo) for name, f in ((f.name, f) for f in lay["mem"].fields)}
    assert pos["memory_type"] == (9, 7) and pos["dram_base"] == (57, 26)
    assert pos["y_size"] == (79, 64) and pos["x_pad_1"] == (127, 124)
    gemm = {f.name: (f.hi, f.lo) for f in lay["gemm"].fields}
    assert gemm["uop_bgn"] == (20, 8) and gemm["uop_end"] == (34, 21)
    assert gemm["iter_in"] == (62, 49) and gemm["dst_factor_out"] == (74, 64)
    assert gemm["wgt_factor_out"] == (117, 108)
    alu = {f.name: (f.hi, f.lo) for f in lay["alu"].fields}
    assert alu["alu_opcode"] == (110, 108) and alu["use_imm"] == (111, 111)
    assert alu["imm"] == (127, 112) and lay["alu"]["imm"].signed
    uop = {f.name: (f.hi, f.lo) for f in lay["uop"].fields}
    assert uop == {"dst_idx": (10, 0), "src_idx": (21, 11), "wgt_idx": (31, 22)}


# --------------------------------------------------------------------------------------
# Programs, disassembly
# --------------------------------------------------------------------------------------

PROGRAM = """\
vta.program @relu {
  vta.uop_buffer {
    vta.uop 0, 0, 0
    vta.uop 1, 1, 0
  }
  vta.load uop sram 0 dram 0 y 1 x 2 stride 2
  vta.load acc sram 0 dram 64 y 1 x 2 stride 2 deps(pop_next)
  vta.alu max uop[0:2] iter(1, 1) dst(0, 0) src(0, 0) imm 0 deps(push_next)
  vta.store out sram 0 dram 32 y 1 x 2 stride 2 deps(pop_prev, push_prev)
  vta.finish
}
"""


def parse_program() -> vta.ProgramOp:
    module = parse_module(PROGRAM)
    program = module.body.block.first_op
    assert isinstance(program, vta.ProgramOp)
    return program


def test_program_encode_decode():
    program = parse_program()
    insn_bytes, uop_bytes = encode_program(program)
    assert len(insn_bytes) == 5 * 16 and uop_bytes == bytes.fromhex("00000000 01080000")
    back = decode_program(insn_bytes, uop_bytes, sym_name="relu")
    back.verify()
    assert same(back, program)
    assert str(back) + "\n" == PROGRAM
    # Without a uop segment, no vta.uop_buffer is made.
    assert decode_program(b"").uop_buffer is None


def test_disassemble():
    insn_bytes, uop_bytes = encode_program(parse_program())
    text = disassemble(insn_bytes, uop_bytes)
    lines = text.splitlines()
    assert lines[0] == "; instructions (5)"
    assert lines[1].startswith("0x0000:  00000000 00000000 01000200 02000000  vta.load uop sram 0 dram 0")
    assert lines[1].endswith("; compute")
    assert lines[3].split("  ;")[0].rstrip() == (
        "0x0020:  44004000 08000200 00000000 00900000  "
        "vta.alu max uop[0:2] iter(1, 1) dst(0, 0) src(0, 0) imm 0 deps(push_next)"
    )
    assert lines[4].endswith("; store") and lines[4].startswith("0x0030:")
    assert lines[5].startswith("0x0040:  03000000") and "vta.finish" in lines[5]
    assert lines[6:] == [
        "; uops (2)",
        "0x0000:  00000000  vta.uop 0, 0, 0",
        "0x0004:  01080000  vta.uop 1, 1, 0",
    ]
    assert disassemble(b"") == "; instructions (0)\n"


def test_generic_roundtrip_in_python():
    program = parse_program()
    out = io.StringIO()
    Printer(stream=out, print_generic_format=True).print_op(program)
    again = parse_module(out.getvalue()).body.block.first_op
    assert same(again, program)


def test_python_accessors():
    program = parse_program()
    load, acc, alu, store, finish = program.instructions
    assert program.uop_buffer is not None and program.uop_buffer.num_uops == 2
    assert [op.stage for op in program.instructions] == ["compute", "compute", "compute", "store", "compute"]
    assert vta.LoadOp("inp", 0, 0, 1, 1, 1).stage == "load"
    assert acc.mem == vta.MemoryType.ACC and acc.deps == ("pop_next",)
    assert acc.fields()["dram_base"] == 64 and acc.pads == (0, 0, 0, 0)
    assert alu.op == vta.AluOpcode.MAX and alu.use_imm and alu.imm_value == 0
    assert store.field("dram_base") == 32
    with pytest.raises(KeyError):
        store.field("y_pad_0")
    with pytest.raises(ValueError, match="unknown dependency flag"):
        vta.FinishOp(deps=["pop_later"])


# --------------------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------------------


def insn_word(value: int) -> bytes:
    return value.to_bytes(16, "little")


@pytest.mark.parametrize("opcode", [5, 6, 7])
def test_unknown_opcode_names_offset(opcode):
    good = encode_instruction(vta.FinishOp())
    with pytest.raises(ValueError, match=rf"unknown opcode {opcode} .*offset 0x20"):
        decode_program(good + good + insn_word(opcode))
    with pytest.raises(ValueError, match="offset 0x20"):
        disassemble(good + good + insn_word(opcode))


def test_bad_memory_types():
    with pytest.raises(ValueError, match=r"unknown memory type 5 in the LOAD at offset 0x0"):
        decode_instruction(insn_word(5 << 7))
    with pytest.raises(ValueError, match="unknown memory type 7 in the STORE"):
        decode_instruction(insn_word(1 | 7 << 7))
    with pytest.raises(ValueError, match="memory type out is not valid for LOAD at offset 0x10"):
        decode_instruction(insn_word(4 << 7), offset=16)
    with pytest.raises(ValueError, match="memory type inp is not valid for STORE"):
        decode_instruction(insn_word(1 | 2 << 7))
    with pytest.raises(ValueError, match="has padding"):
        decode_instruction(insn_word(1 | 4 << 7 | 1 << 124))


def test_bad_alu_opcode():
    with pytest.raises(ValueError, match="unknown ALU opcode 6 in the ALU at offset 0x0"):
        decode_instruction(insn_word(4 | 6 << 108))


def test_bad_lengths():
    with pytest.raises(ValueError, match="an instruction is 16 bytes, got 15"):
        decode_instruction(bytes(15))
    with pytest.raises(ValueError, match="not a multiple of the 16-byte"):
        decode_program(bytes(17))
    with pytest.raises(ValueError, match="not a multiple of the 4-byte"):
        decode_program(b"", bytes(6))
    with pytest.raises(ValueError, match="a micro-op is 4 bytes"):
        decode_uop(bytes(3))


def test_unused_bits_are_ignored():
    # bits 58..63 of LOAD, and imm without use_imm
    assert same(decode_instruction(insn_word(2 << 7 | 1 << 60)), vta.LoadOp("inp", 0, 0, 0, 0, 0))
    assert decode_instruction(insn_word(4 | 5 << 112)).imm is None


def test_encode_rejects_out_of_range_fields():
    with pytest.raises(ValueError, match=r"vta.load: sram_base = 65536 does not fit in 16 bits"):
        encode_instruction(vta.LoadOp("inp", 65536, 0, 1, 1, 1))
    with pytest.raises(ValueError, match="imm = 40000 does not fit in 16 signed bits"):
        encode_instruction(vta.AluOp("add", 0, 1, imm=40000))
    with pytest.raises(ValueError, match="dst_idx = 2048 does not fit in 11 bits"):
        encode_uop(vta.UopOp(2048, 0, 0))
    with pytest.raises(TypeError, match="not a vta instruction"):
        encode_instruction(vta.UopOp(0, 0, 0))
    with pytest.raises(ValueError, match="cannot encode vta.uop inside a vta.program"):
        encode_program(vta.ProgramOp([vta.UopOp(0, 0, 0)]))


# --------------------------------------------------------------------------------------
# Hardware config
# --------------------------------------------------------------------------------------


def test_default_config_derived_values():
    c = DEFAULT
    assert (c.inp_elem_bytes, c.wgt_elem_bytes, c.acc_elem_bytes, c.out_elem_bytes) == (16, 256, 64, 16)
    assert (c.uop_elem_bytes, c.insn_bytes) == (4, 16)
    assert (c.uop_depth, c.inp_depth, c.wgt_depth, c.acc_depth, c.out_depth) == (8192, 2048, 1024, 2048, 2048)
    assert (c.log_uop_depth, c.log_inp_depth, c.log_wgt_depth, c.log_acc_depth) == (13, 11, 10, 11)
    assert (c.uop_bgn_bits, c.uop_end_bits, c.uop_src_bits, c.shr_arg_bits) == (13, 14, 11, 5)
    assert c.macs_per_cycle == 256


def test_config_dict_and_json_roundtrip():
    custom = DEFAULT.replace(block_in=32, dram_bytes_per_cycle=16)
    assert HardwareConfig.from_dict(custom.to_dict()) == custom
    assert HardwareConfig.from_json(custom.to_json()) == custom
    assert json.loads(DEFAULT.to_json())["wgt_buffer_bytes"] == 256 * 1024
    assert HardwareConfig.from_dict({}) == DEFAULT


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"bogus": 1}, "unknown HardwareConfig field"),
        ({"block_in": 12}, "must be a power of two"),
        ({"inp_buffer_bytes": 0}, "must be a power of two"),
        ({"dram_latency_cycles": -1}, "non-negative"),
        ({"clock_mhz": 0}, "must be positive"),
        ({"block_in": 1, "inp_bits": 4}, "not whole bytes"),
        ({"acc_buffer_bytes": 1 << 24}, "micro-op indices need"),
    ],
)
def test_config_errors(changes, message):
    with pytest.raises(ValueError, match=message):
        HardwareConfig.from_dict(changes)


def test_field_widths_follow_the_config():
    # Half the input scratchpad: 1024 inputs, 10-bit inp indices, so GEMM's src factors
    # narrow and the weight factors move down.
    small = DEFAULT.replace(inp_buffer_bytes=16 * 1024)
    assert small.log_inp_depth == 10
    gemm = {f.name: (f.hi, f.lo) for f in layouts(small)["gemm"].fields}
    assert gemm["src_factor_out"] == (95, 86) and gemm["src_factor_in"] == (105, 96)
    assert gemm["wgt_factor_out"] == (115, 106) and gemm["wgt_factor_in"] == (125, 116)
    op = vta.GemmOp(0, 1, src_factor_in=1000, wgt_factor_in=7)
    assert same(decode_instruction(encode_instruction(op, small), small), op)
    with pytest.raises(ValueError, match="src_factor_in = 1500 does not fit in 10 bits"):
        encode_instruction(vta.GemmOp(0, 1, src_factor_in=1500), small)
    # A 64 KiB uop scratchpad needs 14/15-bit uop_bgn/uop_end: iter_in no longer fits the
    # low word, and the GEMM format overflows 128 bits.
    with pytest.raises(ValueError, match="GEMM format needs 148 bits with this HardwareConfig"):
        layouts(DEFAULT.replace(uop_buffer_bytes=64 * 1024))


# --------------------------------------------------------------------------------------
# Verifiers (Python side; verify.mlir has one case per message)
# --------------------------------------------------------------------------------------


def test_valid_program_verifies():
    parse_program().verify()
    # The example in the dialect's module docstring.
    import textwrap

    import xweave.accel.vta.dialect as vta

    example = vta.__doc__.split("in execution order:\n\n")[1].split("\n\n")[0]
    module = parse_module(textwrap.dedent(example))
    program = module.body.block.first_op
    assert isinstance(program, vta.ProgramOp) and len(program.instructions) == 9
    vta.ProgramOp([vta.FinishOp()], vta.UopBufferOp([(0, 0, 0)])).verify()


def test_verifier_rejects():
    from xdsl.utils.exceptions import VerifyException

    with pytest.raises(VerifyException, match="FINISH may not pop"):
        vta.FinishOp(deps=["pop_next"]).verify()
    with pytest.raises(VerifyException, match="uop_end \\(3\\) must be greater than uop_bgn \\(3\\)"):
        vta.GemmOp(3, 3).verify()
    with pytest.raises(VerifyException, match="reads uop addresses up to 3"):
        vta.ProgramOp([vta.LoadOp("uop", 0, 1, 1, 2, 2)], vta.UopBufferOp([(0, 0, 0), (1, 1, 0)])).verify()
