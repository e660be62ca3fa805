"""The VTA simulator: bit-exact functional semantics (vs numpy) and the timed
load/compute/store model with dependency tokens, on hand-built `vta` programs."""

import numpy as np
import pytest

from xweave.accel.vta.config import DEFAULT
from xweave.accel.vta.encoding import encode_instruction, encode_program
from xweave.accel.vta.dram import (
    DeadlockError,
    DecodeError,
    Dram,
    DramOutOfRangeError,
    MissingFinishError,
    ScratchpadOutOfRangeError,
    SimulatorError,
    TokenQueueOverflowError,
    pack_acc,
    pack_inp,
    pack_wgt,
    unpack_out,
)
from xweave.accel.vta.simulator import Simulator, instruction_cycles, simulate
from xweave.accel.vta.timeline import plot_timeline
from xweave.accel.vta.dialect import AluOp, FinishOp, GemmOp, LoadOp, ProgramOp, StoreOp

RNG = np.random.default_rng(0)
STAGES = {"load": 1, "compute": 2, "store": 3}


def rand_i8(*shape):
    return RNG.integers(-128, 128, size=shape, dtype=np.int64).astype(np.int8)


# --------------------------------------------------------------------------------------
# A tiny instruction-stream builder after VTA's runtime (runtime.cc InsnQueue): pops are
# attached to the next instruction of the popping stage, a push goes on the stage's last
# instruction when that is the latest one emitted, else on a sync no-op.
# --------------------------------------------------------------------------------------


class Stream:
    def __init__(self):
        self.insns = []  # [make(deps) -> op, stage, deps]
        self.pending = {s: set() for s in STAGES}

    def emit(self, stage, make):
        deps, self.pending[stage] = self.pending[stage], set()
        self.insns.append([make, stage, deps])

    def load(self, mem, *args, **kw):
        stage = "load" if mem in ("inp", "wgt") else "compute"
        self.emit(stage, lambda deps: LoadOp(mem, *args, **kw, deps=deps))

    def store(self, *args):
        self.emit("store", lambda deps: StoreOp(*args, deps=deps))

    def gemm(self, *args, **kw):
        self.emit("compute", lambda deps: GemmOp(*args, **kw, deps=deps))

    def alu(self, *args, **kw):
        self.emit("compute", lambda deps: AluOp(*args, **kw, deps=deps))

    def finish(self):
        self.emit("compute", lambda deps: FinishOp(deps=deps))

    def noop(self, stage):
        if stage == "store":
            self.emit(stage, lambda deps: StoreOp(0, 0, 0, 0, 0, deps=deps))
        else:
            self.emit(stage, lambda deps: LoadOp("inp" if stage == "load" else "uop", 0, 0, 0, 0, 0, deps=deps))

    def pop(self, frm, to):
        self.pending[to].add("pop_prev" if STAGES[frm] < STAGES[to] else "pop_next")

    def push(self, frm, to):
        if self.pending[frm]:
            self.noop(frm)
        flag = "push_next" if STAGES[frm] < STAGES[to] else "push_prev"
        if self.insns and self.insns[-1][1] == frm and flag not in self.insns[-1][2]:
            self.insns[-1][2].add(flag)
        else:
            self.noop(frm)
            self.insns[-1][2].add(flag)

    def program(self, uops):
        ops = [make(sorted(deps)) for make, _, deps in self.insns]
        program = ProgramOp(ops, uops, sym_name="p")
        program.verify()
        return program


# --------------------------------------------------------------------------------------
# A 1x16 . 16x16 GEMM tile
# --------------------------------------------------------------------------------------


def test_single_gemm_tile_bit_exact_and_timed():
    x, w = rand_i8(1, 16), rand_i8(16, 16)
    dram = Dram()
    X = dram.place("x", pack_inp(x), "inp")
    W = dram.place("w", pack_wgt(w), "wgt")
    O = dram.alloc("o", "out", (1, 1, 1, 16))
    program = ProgramOp(
        [
            LoadOp("uop", 0, 0, 1, 1, 1),
            GemmOp(0, 1, reset=True),
            LoadOp("wgt", 0, W.addr, 1, 1, 1),
            LoadOp("inp", 0, X.addr, 1, 1, 1, deps=["push_next"]),
            GemmOp(0, 1, deps=["pop_prev", "push_next"]),
            StoreOp(0, O.addr, 1, 1, 1, deps=["pop_prev", "push_prev"]),
            LoadOp("uop", 0, 0, 0, 0, 0, deps=["pop_next"]),
            FinishOp(),
        ],
        [(0, 0, 0)],
    )
    program.verify()
    sim = Simulator(program, dram)
    report = sim.run()
    ref = x.astype(np.int64) @ w.T.astype(np.int64)
    np.testing.assert_array_equal(sim.scratchpad("acc")[0], ref.astype(np.int32))
    np.testing.assert_array_equal(unpack_out(dram.read("o")), ref.astype(np.int8))  # low 8 bits
    assert O.nbytes == 16 and O.num_elements == 1

    # Timing by hand (default config): uop load 2+64+1+2 = 69, reset gemm 2+4+1 = 7 (compute
    # 0..76); wgt load 2+64+32+2 = 100, inp load 2+64+2+2 = 70 (load 0..170); gemm 170..177;
    # store 2+64+2+2 = 70 (177..247); sync 247..249; finish 249..251.
    c = DEFAULT
    assert instruction_cycles(program.instructions[2], c) == 100
    assert report.total_cycles == 251
    assert report.busy_cycles == {"load": 170, "compute": 69 + 7 + 7 + 2 + 2, "store": 70}
    assert report.stall_cycles["compute"] == 170 - 76 + 247 - 177
    assert [(e.index, e.start, e.end) for e in report.timeline if e.module == "load"] == [(2, 0, 100), (3, 100, 170)]
    assert report.gemm_counter == 1 and report.alu_counter == 0
    assert report.compute_utilization == pytest.approx(1 / 251)
    assert report.bytes_moved == {"inp": 16, "wgt": 256, "acc": 0, "uop": 4, "out": 16}
    assert report.instruction_counts == {
        "load.uop": 1, "gemm.reset": 1, "load.wgt": 1, "load.inp": 1, "gemm": 1,
        "store": 1, "sync": 1, "finish": 1,
    }  # fmt: skip
    assert report.profiler_status()["wgt_load_nbytes"] == 256
    assert report.unfinished == () and report.warnings == ()
    assert "total cycles" in report.summary()

    # The binary path gives the same run.
    insn_bytes, uop_bytes = encode_program(program)
    dram2 = Dram()
    dram2.place("x", pack_inp(x), "inp")
    dram2.place("w", pack_wgt(w), "wgt")
    dram2.alloc("o", "out", (1, 1, 1, 16))
    again = simulate((insn_bytes, uop_bytes), dram2)
    assert again.to_dict() == report.to_dict()
    assert dram2.tobytes() == dram.tobytes()


# --------------------------------------------------------------------------------------
# A tiled dense layer + requantization, serialized or double-buffered
# --------------------------------------------------------------------------------------


def dense_program(M, K, N, shift, dram, *, threads, bias):
    """y = clip((x . w^T + b) >> shift, -128, 127) as int8, one 16-wide output block per
    tile; `threads` virtual threads use disjoint scratchpad halves (double buffering)."""
    KB, NB = K // 16, N // 16
    X, W, O = dram.addr("x"), dram.addr("w"), dram.addr("y")
    s = Stream()
    uops = []
    for t in range(threads):
        uops += [(t * M, t * M * KB, t * KB), (t * M, t * M, 0)]  # gemm uop, alu uop
    s.load("uop", 0, 0, 1, len(uops), len(uops))
    for nb in range(NB):
        t = nb % threads
        inp_base, wgt_base, acc_base = t * M * KB, t * KB, t * M
        g, a = 2 * t, 2 * t + 1
        # load module: wait until compute has freed this thread's buffers
        if nb >= threads:
            s.pop("compute", "load")
        s.load("inp", inp_base, X, M, KB, KB)
        s.load("wgt", wgt_base, W + nb * KB, 1, KB, KB)
        s.push("load", "compute")
        # compute module
        s.pop("load", "compute")
        if nb >= threads:
            s.pop("store", "compute")
        if bias:  # broadcast the bias block to all M rows with a stride-0 LOAD ACC
            s.load("acc", acc_base, dram.addr("b") + nb, M, 1, 0)
        else:
            s.gemm(g, g + 1, M, 1, 1, 0, reset=True)
        s.gemm(g, g + 1, M, KB, 1, 0, KB, 1, 0, 1)
        s.alu("shr", a, a + 1, M, 1, 1, 0, 1, 0, imm=shift)
        s.alu("min", a, a + 1, M, 1, 1, 0, 1, 0, imm=127)
        s.alu("max", a, a + 1, M, 1, 1, 0, 1, 0, imm=-128)
        if nb < NB - threads:
            s.push("compute", "load")
        s.push("compute", "store")
        # store module
        s.pop("compute", "store")
        s.store(acc_base, O + nb, M, 1, NB)
        s.push("store", "compute")
    for _ in range(min(threads, NB)):  # wait for the last stores before FINISH
        s.pop("store", "compute")
        s.noop("compute")
    s.finish()
    return s.program(uops)


def dense_setup(M, K, N, *, bias):
    x, w = rand_i8(M, K), rand_i8(N, K)
    b = RNG.integers(-5000, 5000, size=(1, N)).astype(np.int32)
    dram = Dram()
    dram.place("x", pack_inp(x), "inp")
    dram.place("w", pack_wgt(w), "wgt")
    if bias:
        dram.place("b", pack_acc(b), "acc")
    dram.alloc("y", "out", (M, N // 16, 1, 16))
    acc = x.astype(np.int64) @ w.T.astype(np.int64) + (b if bias else 0)
    return dram, acc.astype(np.int32)


def requantize(acc, shift):
    return np.clip(acc >> shift, -128, 127).astype(np.int8)


@pytest.mark.parametrize("bias", [False, True])
def test_tiled_dense_requantize_bit_exact(bias):
    M, K, N, shift = 1, 64, 32, 5
    dram, acc = dense_setup(M, K, N, bias=bias)
    program = dense_program(M, K, N, shift, dram, threads=1, bias=bias)
    report = simulate(program, dram)
    np.testing.assert_array_equal(unpack_out(dram.read("y")), requantize(acc, shift))
    assert report.instruction_counts["load.inp"] == 2 and report.instruction_counts["store"] == 2
    assert report.instruction_counts["gemm"] == 2 and report.gemm_counter == 2 * M * 4
    assert report.alu_counter == 2 * 3 * M
    assert report.bytes_moved["wgt"] == 2 * 4 * 256 and report.bytes_moved["out"] == 2 * 16
    assert report.bytes_moved["acc"] == (2 * 64 if bias else 0)
    assert report.unfinished == ()
    # Every dependency token was popped exactly once it had been pushed: no module ran a
    # popping instruction before the matching producer finished.
    by_index = {e.index: e for e in report.timeline}
    ops = program.instructions
    stores = [by_index[i] for i, op in enumerate(ops) if isinstance(op, StoreOp) and op.field("x_size")]
    alus = [by_index[i] for i, op in enumerate(ops) if isinstance(op, AluOp) and op.op == "max"]
    for alu, store in zip(alus, stores):
        assert store.start >= alu.end


def test_double_buffering_overlaps_and_agrees():
    M, K, N, shift = 16, 64, 128, 6
    dram, acc = dense_setup(M, K, N, bias=True)
    results = {}
    for threads in (1, 2):
        d = dram.copy()
        program = dense_program(M, K, N, shift, d, threads=threads, bias=True)
        report = simulate(program, d)
        np.testing.assert_array_equal(unpack_out(d.read("y")), requantize(acc, shift))
        results[threads] = (report, d.read("y"))
    serial, overlapped = results[1][0], results[2][0]
    np.testing.assert_array_equal(results[1][1], results[2][1])
    assert serial.gemm_counter == overlapped.gemm_counter == (N // 16) * M * (K // 16)
    assert overlapped.total_cycles < serial.total_cycles
    assert overlapped.compute_utilization > serial.compute_utilization
    # The overlapped run loads while it computes: some load instruction runs concurrently
    # with some gemm.
    loads = [e for e in overlapped.timeline if e.kind in ("load.inp", "load.wgt")]
    gemms = [e for e in overlapped.timeline if e.kind == "gemm"]
    assert any(l.start < g.end and g.start < l.end for l in loads for g in gemms)
    assert max(overlapped.max_tokens.values()) <= overlapped.token_queue_depth
    # Modules never run two instructions at once, and run their queue in program order.
    for report in (serial, overlapped):
        for m in ("load", "compute", "store"):
            entries = [e for e in report.timeline if e.module == m]
            assert [e.index for e in entries] == sorted(e.index for e in entries)
            assert all(a.end <= b.start for a, b in zip(entries, entries[1:]))
            assert sum(e.duration for e in entries) == report.busy_cycles[m]


# --------------------------------------------------------------------------------------
# LOAD padding and strides, STORE strides
# --------------------------------------------------------------------------------------


def test_load_padding_and_strides():
    src = rand_i8(4, 5, 1, 16)  # 4 rows of 5 inp elements in DRAM
    dram = Dram()
    region = dram.place("a", src, "inp")
    # rows 1..2, elements 1..3 of each, with 1 zero row above, 2 below, 2 zero elements
    # before and 1 after each row: a 5 x 6 block at sram 7.
    program = ProgramOp(
        [LoadOp("inp", 7, region.addr + 5 + 1, 2, 3, 5, 1, 2, 2, 1), LoadOp("uop", 0, 0, 0, 0, 0), FinishOp()]
    )
    sim = Simulator(program, dram)
    sim.run()
    sram = sim.scratchpad("inp")
    expected = np.zeros((5, 6, 1, 16), np.int8)
    expected[1:3, 2:5] = src[1:3, 1:4]
    np.testing.assert_array_equal(sram[7 : 7 + 30].reshape(5, 6, 1, 16), expected)
    assert not sram[:7].any() and not sram[37:].any()


def test_store_truncates_and_strides():
    acc = RNG.integers(-(2**31), 2**31, size=(6, 1, 16), dtype=np.int64).astype(np.int32)
    dram = Dram()
    A = dram.place("acc", acc, "acc")
    O = dram.alloc("o", "out", (3, 4, 1, 16))  # 3 rows of 4 out elements
    program = ProgramOp(
        [
            LoadOp("acc", 0, A.addr, 1, 6, 6, deps=["push_next"]),
            StoreOp(0, O.addr + 1, 3, 2, 4, deps=["pop_prev", "push_prev"]),
            LoadOp("uop", 0, 0, 0, 0, 0, deps=["pop_next"]),
            FinishOp(),
        ]
    )
    simulate(program, dram)
    out = dram.read("o")
    expected = np.zeros((3, 4, 1, 16), np.int8)
    expected[:, 1:3] = acc.reshape(3, 2, 1, 16).astype(np.int8)  # low 8 bits, no saturation
    np.testing.assert_array_equal(out, expected)


def test_dram_wrap_works_in_place():
    buf = bytearray(256)
    dram = Dram.wrap(buf)
    acc = np.arange(16, dtype=np.int32).reshape(1, 1, 16) - 3
    dram.place("a", acc, "acc", addr=1)  # bytes 64..128
    dram.alloc("o", "out", 1, addr=10)  # bytes 160..176
    # acc[5] <- DRAM acc element 1; DRAM out element 10 <- acc[5], narrowed
    program = ProgramOp(
        [
            LoadOp("acc", 5, 1, 1, 1, 1, deps=["push_next"]),
            StoreOp(5, 10, 1, 1, 1, deps=["pop_prev", "push_prev"]),
            LoadOp("uop", 0, 0, 0, 0, 0, deps=["pop_next"]),
            FinishOp(),
        ]
    )
    simulate(program, dram)
    assert bytes(buf[160:176]) == (np.arange(16) - 3).astype(np.int8).tobytes()
    # a bare bytearray works too (addresses by hand)
    raw = bytearray(buf)
    raw[160:176] = bytes(16)
    simulate(program, raw)
    assert raw == buf
    with pytest.raises(ValueError, match="too small"):
        dram.alloc("big", "wgt", 1)


# --------------------------------------------------------------------------------------
# ALU semantics
# --------------------------------------------------------------------------------------

I32 = 2**32


def wrap32(v):
    v %= I32
    return v - I32 if v >= 2**31 else v


def ref_alu(op, a, b):
    a, b = int(a), int(b)
    if op == "min":
        return min(a, b)
    if op == "max":
        return max(a, b)
    if op == "add":
        return wrap32(a + b)
    if op == "mul":
        return wrap32(a * b)
    return a >> (b & 31) if b >= 0 else wrap32(a << ((-b) & 31))  # shr


def run_alu(acc, *alus, uops):
    dram = Dram()
    A = dram.place("acc", acc, "acc")
    n = acc.shape[0]
    program = ProgramOp(
        [LoadOp("uop", 0, 0, 1, len(uops), len(uops)), LoadOp("acc", 0, A.addr, 1, n, n), *alus, FinishOp()],
        uops,
    )
    sim = Simulator(program, dram)
    sim.run()
    return sim.scratchpad("acc")[:n]


@pytest.mark.parametrize("op", ["min", "max", "add", "mul", "shr"])
@pytest.mark.parametrize("use_imm", [True, False])
def test_alu_ops_bit_exact(op, use_imm):
    acc = RNG.integers(-(2**31), 2**31, size=(8, 1, 16), dtype=np.int64).astype(np.int32)
    if op == "shr" and not use_imm:
        acc[4:] = RNG.integers(-40, 40, size=(4, 1, 16))  # shift amounts, some beyond +-31
    imm = {"min": -7, "max": 100, "add": -32768, "mul": -128, "shr": -3}[op] if use_imm else None
    # dst rows 0..3 (iter_out 4), src rows 4..7
    alu = AluOp(op, 0, 1, 4, 1, 1, 0, 1, 0, imm=imm)
    got = run_alu(acc, alu, uops=[(0, 4, 0)])
    expected = acc.astype(np.int64).copy()
    for r in range(4):
        for lane in range(16):
            b = imm if use_imm else acc[4 + r, 0, lane]
            expected[r, 0, lane] = ref_alu(op, acc[r, 0, lane], b)
    np.testing.assert_array_equal(got, expected.astype(np.int32))


def test_alu_in_order_semantics_with_hazards():
    acc = RNG.integers(-1000, 1000, size=(10, 1, 16)).astype(np.int32)
    # prefix sum: acc[1+j] += acc[j] for j in 0..8 (each step reads the previous result)
    prefix = AluOp("add", 0, 1, 1, 9, 0, 1, 0, 1)
    # max-reduce rows 1..9 into row 0: the same dst every step
    pool = AluOp("max", 1, 2, 1, 9, 0, 0, 0, 1)
    got = run_alu(acc, prefix, pool, uops=[(1, 0, 0), (0, 1, 0)])
    expected = np.cumsum(acc.astype(np.int64), axis=0)
    expected[0] = expected.max(axis=0)
    np.testing.assert_array_equal(got, expected.astype(np.int32))
    # reset zeroes the walk
    got = run_alu(acc, AluOp("add", 0, 1, 3, 1, 2, 0, 0, 0, imm=1, reset=True), uops=[(1, 0, 0)])
    assert not got[[1, 3, 5]].any() and (got[[0, 2, 4]] == acc[[0, 2, 4]]).all()


def test_gemm_wraps_int32():
    # acc starts at INT32_MAX; adding a positive product wraps around (no saturation).
    dram = Dram()
    acc0 = np.full((1, 1, 16), 2**31 - 1, np.int32)
    A = dram.place("acc", acc0, "acc")
    X = dram.place("x", np.full((1, 1, 16), 127, np.int8), "inp")
    W = dram.place("w", np.full((1, 16, 16), -128, np.int8), "wgt")
    program = ProgramOp(
        [
            LoadOp("inp", 0, X.addr, 1, 1, 1),
            LoadOp("wgt", 0, W.addr, 1, 1, 1, deps=["push_next"]),
            LoadOp("uop", 0, 0, 1, 1, 1),
            LoadOp("acc", 0, A.addr, 1, 1, 1),
            GemmOp(0, 1, iter_out=3, deps=["pop_prev"]),  # the same product three times
            FinishOp(),
        ],
        [(0, 0, 0)],
    )
    sim = Simulator(program, dram)
    sim.run()
    expected = np.int64(2**31 - 1) + 3 * 16 * 127 * -128
    assert (sim.scratchpad("acc")[0] == np.int64(expected).astype(np.int32)).all()


# --------------------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------------------


def test_deadlock_names_blocked_modules_and_queues():
    program = ProgramOp(
        [
            LoadOp("uop", 0, 0, 0, 0, 0, deps=["pop_prev"]),  # nobody pushes load->compute
            StoreOp(0, 0, 0, 0, 0, deps=["pop_prev"]),
            FinishOp(),
        ]
    )
    with pytest.raises(DeadlockError) as info:
        simulate(program)
    err = info.value
    assert err.blocked == {"compute": (0, ("load->compute",)), "store": (1, ("compute->store",))}
    msg = str(err)
    assert "deadlock at cycle 0" in msg and "load: done" in msg
    assert "compute: instruction #0 at 0x0000 (vta.load uop sram 0 dram 0 y 0 x 0 stride 0 deps(pop_prev))" in msg
    assert "waits on load->compute" in msg and "waits on compute->store" in msg
    assert isinstance(err, SimulatorError) and err.index == 0


def test_scratchpad_out_of_range():
    program = ProgramOp([LoadOp("inp", 2040, 0, 1, 16, 16), FinishOp()])  # encodable, unverifiable
    dram = Dram()
    dram.alloc("x", "inp", 16)
    with pytest.raises(ScratchpadOutOfRangeError, match=r"instruction #0 at 0x0000 \(vta.load inp sram 2040.*\): "
                       r"writes inp scratchpad elements \[2040, 2056\).*depth 2048"):  # fmt: skip
        simulate(program, dram)
    # a GEMM walk that leaves the accumulator
    program = ProgramOp(
        [LoadOp("uop", 0, 0, 1, 1, 1), GemmOp(0, 1, iter_out=3, dst_factor_out=1000), FinishOp()],
        [(100, 0, 0)],
    )
    with pytest.raises(ScratchpadOutOfRangeError, match=r"instruction #1 .*vta.gemm.*reaches acc index 2100"):
        simulate(program)


def test_dram_out_of_range():
    dram = Dram(1024)
    with pytest.raises(DramOutOfRangeError, match=r"instruction #0 .*reads wgt elements \[4, 5\) = bytes "
                       r"\[1024, 1280\) of a 1024-byte DRAM"):  # fmt: skip
        simulate(ProgramOp([LoadOp("wgt", 0, 4, 1, 1, 1), FinishOp()]), dram)
    with pytest.raises(DramOutOfRangeError, match=r"reads micro-ops \[1, 3\) of the uop segment, which holds 2"):
        simulate(ProgramOp([LoadOp("uop", 0, 1, 1, 2, 2), FinishOp()], [(0, 0, 0), (1, 1, 0)]), dram)
    with pytest.raises(DramOutOfRangeError, match="writes out elements"):
        simulate(ProgramOp([StoreOp(0, 64, 1, 1, 1), FinishOp()]), dram)


def test_token_queue_overflow():
    sync_push = LoadOp("inp", 0, 0, 0, 0, 0, deps=["push_next"])
    program = ProgramOp(
        [sync_push.clone(), sync_push.clone(), sync_push.clone(), GemmOp(0, 1, iter_out=500), FinishOp()]
    )
    with pytest.raises(TokenQueueOverflowError, match=r"instruction #2 at 0x0020 .*pushes a token into "
                       r"load->compute, which already holds 2 \(the token queue depth is 2\).*cycle 6"):  # fmt: skip
        simulate(program, token_queue_depth=2)
    report = simulate(program)  # depth 8 is enough; the tokens are simply left over
    assert report.max_tokens["load->compute"] == 3


def test_missing_finish_and_bad_binaries():
    with pytest.raises(MissingFinishError, match="no FINISH instruction"):
        simulate(ProgramOp([LoadOp("uop", 0, 0, 0, 0, 0)]))
    finish = encode_instruction(FinishOp())
    with pytest.raises(DecodeError, match=r"instruction #1 at 0x0010: cannot decode: unknown opcode 7"):
        simulate(finish + (7).to_bytes(16, "little"))
    with pytest.raises(DecodeError, match="not a multiple of 16"):
        simulate(finish + b"\0")


def test_unfinished_work_is_reported():
    # FINISH does not wait for the store: the report says so.
    program = ProgramOp([StoreOp(0, 0, 1, 1, 1), FinishOp()])
    dram = Dram()
    dram.alloc("o", "out", 1)
    report = simulate(program, dram)
    assert report.unfinished == (0,) and "had not completed" in report.warnings[0]


def test_execute_false_only_times():
    M, K, N = 1, 64, 32
    dram, _ = dense_setup(M, K, N, bias=False)
    program = dense_program(M, K, N, 4, dram, threads=1, bias=False)
    timed = simulate(program, dram, execute=False)
    assert not dram.read("y").any()
    assert timed.to_dict() == simulate(program, dram).to_dict()


# --------------------------------------------------------------------------------------
# Timeline plot
# --------------------------------------------------------------------------------------


def test_plot_timeline(tmp_path):
    pytest.importorskip("matplotlib")
    M, K, N = 4, 32, 64
    dram, _ = dense_setup(M, K, N, bias=True)
    report = simulate(dense_program(M, K, N, 3, dram, threads=2, bias=True), dram)
    path = plot_timeline(report, tmp_path / "timeline.png")
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 2000
