"""A functional (bit-exact) and timed simulator of the VTA-like accelerator.

What runs is always the *binary* program: a `vta.program` op is encoded first (with
`encode_program`), and the instruction stream and uop segment are decoded back, so the
simulator checks the encoder as a side effect and also accepts images from elsewhere.

**Memories.** DRAM is one flat, little-endian byte space (`Dram`). A LOAD/STORE's
`dram_base` and `x_stride` count elements of its memory type, so byte address =
`dram_base * elem_bytes(mem)`: 16 B for `inp` (BATCH x BLOCK_IN int8), 256 B for `wgt`
(BLOCK_OUT x BLOCK_IN int8), 64 B for `acc` (BATCH x BLOCK_OUT int32) and 16 B for `out`
(BATCH x BLOCK_OUT int8) with the default config. Micro-ops are loaded from the program's
*uop segment* (as the `vta` dialect defines it, micro-op `i` sits at uop address `i`), a
4-byte-per-address space of its own. `Dram` places named numpy arrays at aligned addresses
and reads them back; `pack_inp`/`pack_wgt`/`pack_acc`/`unpack_out` convert plain matrices
to and from the blocked layouts the DMA moves.

**Functional semantics** (TVM's fsim, tvm-facts §3.4), vectorised with numpy:

* LOAD: `y_size` rows of `x_size` elements, row `r` from element `dram_base + r*x_stride`,
  written to the scratchpad from `sram_base` with `x_pad_0`/`x_pad_1` zero elements around
  each row and `y_pad_0`/`y_pad_1` zero rows before/after. `x_size == 0` is a token-only
  no-op. UOP loads copy micro-op words from the uop segment.
* STORE: `y_size * x_size` accumulators from `sram_base`, each lane truncated to `out_bits`
  (low bits, no saturation), to DRAM rows `x_stride` elements apart.
* GEMM: the two-level walk `for i < iter_out, j < iter_in, u in [uop_bgn, uop_end)` with
  `dst = uop.dst + i*dst_factor_out + j*dst_factor_in` (likewise src/wgt) does
  `acc[dst] += inp[src] . wgt[wgt]^T` (wrapping at `acc_bits`); with `reset`, it zeroes
  `acc[dst]` over the same walk.
* ALU: the same walk without weights: `acc[dst] = op(acc[dst], imm or acc[src])` lane-wise
  (MIN, MAX, ADD, MUL wrap at `acc_bits`; SHR is arithmetic, a negative amount shifts left,
  and the amount is taken modulo `acc_bits` like the hardware's `log2(acc_bits)`-bit shifter;
  with `reset`, the walk's accumulators are zeroed). Points of the walk are applied in order:
  a whole chunk at once when no point reads or overwrites what an earlier one wrote, else
  in hazard-free runs.
* FINISH ends the run.

**Timed model.** Three modules (load, compute, store), each executing its own queue in
program order; fetch is ideal (every instruction is routed to its queue at cycle 0:
STORE -> store, LOAD of inp/wgt -> load, everything else -> compute). Four token queues
(load->compute, compute->load, compute->store, store->compute) hold at most
`token_queue_depth` tokens (default 8, the depth of the HLS VTA's dependency FIFOs). An
instruction starts when its module is free and every queue it pops holds a token (the pops
happen at the start), and pushes its tokens when it completes. Durations, in accelerator
cycles, from the `HardwareConfig` (`instruction_cycles`):

    every instruction        insn_overhead_cycles (2) +
    LOAD / STORE (x_size>0)  dram_latency_cycles (64) + ceil(bytes / dram_bytes_per_cycle (8))
                             + y_size * dma_row_overhead_cycles (2),
                             bytes = y_size * x_size * elem_bytes  (padding is free)
    GEMM (incl. reset)       gemm_pipeline_cycles (4) + iter_out*iter_in*#uops * gemm_cycles_per_uop (1)
    ALU                      alu_pipeline_cycles (4) + iter_out*iter_in*#uops * alu_cycles_per_uop (2)
    FINISH, sync no-ops      nothing more

The simulation is event driven (it jumps from one completion to the next) and stops when
FINISH completes; `total_cycles` is that time. Compute utilization is the fraction of the
GEMM core's peak: `gemm_counter / total_cycles`, where `gemm_counter` (as in VTA's
profiler) counts the tensor products of non-reset GEMMs and the core does one
BATCH x BLOCK_IN x BLOCK_OUT product per cycle.

    >>> from xweave.accel.vta.dialect import ProgramOp, FinishOp
    >>> simulate(ProgramOp([FinishOp()])).total_cycles
    2
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from xweave.accel.vta.config import DEFAULT, HardwareConfig
from xweave.accel.vta.dialect import (
    AluOp,
    AluOpcode,
    FinishOp,
    GemmOp,
    LoadOp,
    MemoryType,
    ProgramOp,
    StoreOp,
    VTAInstruction,
)
from xweave.accel.vta.dram import (
    DeadlockError,
    DecodeError,
    Dram,
    DramOutOfRangeError,
    MissingFinishError,
    ScratchpadOutOfRangeError,
    SimulatorError,
    TokenQueueOverflowError,
    UnsupportedConfigError,
    INT_DTYPES,
    element_shape,
    memory_dtype,
)
from xweave.accel.vta.encoding import decode_instruction, encode_program, layouts
from xweave.accel.vta.report import (
    DEFAULT_TOKEN_QUEUE_DEPTH,
    MODULES,
    TOKEN_QUEUES,
    SimReport,
    TimelineEntry,
)

__all__ = ["Simulator", "instruction_cycles", "simulate"]

# Which queue each flag pops/pushes, per module ("prev"/"next" are relative to the
# module's place in load -> compute -> store). Flags missing here mean nothing to the
# module (the hardware ignores them; the simulator records a warning).
_POPS: dict[str, dict[str, str]] = {
    "load": {"pop_next": "compute->load"},
    "compute": {"pop_prev": "load->compute", "pop_next": "store->compute"},
    "store": {"pop_prev": "compute->store"},
}
_PUSHES: dict[str, dict[str, str]] = {
    "load": {"push_next": "load->compute"},
    "compute": {"push_prev": "compute->load", "push_next": "compute->store"},
    "store": {"push_prev": "store->compute"},
}

_WALK_CHUNK = 1 << 15  # walk points processed per numpy batch


# --------------------------------------------------------------------------------------
# Instruction timing
# --------------------------------------------------------------------------------------


def _dma_bytes(op: VTAInstruction, config: HardwareConfig) -> int:
    assert isinstance(op, (LoadOp, StoreOp))
    return op.field("y_size") * op.field("x_size") * config.elem_bytes(str(op.mem))


def instruction_cycles(op: VTAInstruction, config: HardwareConfig = DEFAULT) -> int:
    """Cycles `op` occupies its module (see the module docstring for the formulas)."""
    c = config
    cycles = c.insn_overhead_cycles
    if isinstance(op, (LoadOp, StoreOp)):
        if op.field("x_size") == 0:
            return cycles
        nbytes = _dma_bytes(op, c)
        return (
            cycles
            + c.dram_latency_cycles
            + -(-nbytes // c.dram_bytes_per_cycle)
            + op.field("y_size") * c.dma_row_overhead_cycles
        )
    if isinstance(op, (GemmOp, AluOp)):
        f = op.fields()
        points = f["iter_out"] * f["iter_in"] * max(0, f["uop_end"] - f["uop_bgn"])
        if isinstance(op, GemmOp):
            return cycles + c.gemm_pipeline_cycles + points * c.gemm_cycles_per_uop
        return cycles + c.alu_pipeline_cycles + points * c.alu_cycles_per_uop
    return cycles


# --------------------------------------------------------------------------------------
# The simulator
# --------------------------------------------------------------------------------------


@dataclass
class _Insn:
    index: int
    op: VTAInstruction
    module: str
    kind: str
    pops: tuple[str, ...]
    pushes: tuple[str, ...]
    cycles: int
    f: dict[str, int] = field(default_factory=dict)

    @property
    def text(self) -> str:
        return str(self.op).strip()


def _kind(op: VTAInstruction) -> str:
    if isinstance(op, (LoadOp, StoreOp)):
        if op.field("x_size") == 0:
            return "sync"
        return "store" if isinstance(op, StoreOp) else f"load.{op.mem}"
    if isinstance(op, GemmOp):
        return "gemm.reset" if op.is_reset else "gemm"
    if isinstance(op, AluOp):
        return "alu.reset" if op.is_reset else f"alu.{op.op}"
    return "finish"


class Simulator:
    """Runs one binary VTA program against a DRAM image.

    `program` is a `vta.program` op (encoded first), an `(instructions, uops)` pair of
    byte strings, or the instruction bytes alone (with `uops=`). `dram` (a `Dram`, or a flat
    writable buffer such as a bytearray) is modified in place (STOREs write it). After `run()`, the scratchpads stay readable (`scratchpad("acc")`).
    With `execute=False` only the timing and counters are computed (like VTA's profiler
    debug mode), nothing is read or written.
    """

    def __init__(
        self,
        program: ProgramOp | tuple[bytes, bytes] | bytes,
        dram: Dram | bytearray | None = None,
        config: HardwareConfig = DEFAULT,
        *,
        uops: bytes | None = None,
        token_queue_depth: int = DEFAULT_TOKEN_QUEUE_DEPTH,
        execute: bool = True,
    ):
        self.config = config
        if isinstance(program, ProgramOp):
            if uops is not None:
                raise TypeError("uops= is only for a binary program; a vta.program carries its own")
            insn_bytes, uop_bytes = encode_program(program, config)
        elif isinstance(program, tuple):
            insn_bytes, uop_bytes = program
        else:
            insn_bytes, uop_bytes = bytes(program), bytes(uops or b"")
        self.insn_bytes, self.uop_bytes = bytes(insn_bytes), bytes(uop_bytes)
        if token_queue_depth < 1:
            raise ValueError(f"token_queue_depth must be >= 1, got {token_queue_depth}")
        self.token_queue_depth = token_queue_depth
        self.execute = execute
        if dram is None:
            dram = Dram(config=config)
        elif not isinstance(dram, Dram):  # one flat writable buffer, used in place
            dram = Dram.wrap(dram, config)
        self.dram = dram
        if self.dram.config != config:
            raise ValueError("the Dram was made for a different HardwareConfig")
        for name, bits in (("inp_bits", config.inp_bits), ("wgt_bits", config.wgt_bits),
                           ("acc_bits", config.acc_bits), ("out_bits", config.out_bits)):  # fmt: skip
            if bits not in INT_DTYPES:
                raise UnsupportedConfigError(
                    f"the simulator supports 8/16/32/64-bit data, but the config has {name} = {bits}"
                )
        self.insns = self._decode()
        self._uop_lay = layouts(config)["uop"]
        self._uop_segment = self._decode_uop_segment()
        self._reset_state()

    # --- decoding ------------------------------------------------------------------------
    def _decode(self) -> list[_Insn]:
        size = self.config.insn_bytes
        if len(self.insn_bytes) % size:
            raise DecodeError(
                f"the instruction stream is {len(self.insn_bytes)} bytes, not a multiple of {size}"
            )
        insns = []
        for index in range(len(self.insn_bytes) // size):
            chunk = self.insn_bytes[index * size : (index + 1) * size]
            try:
                op = decode_instruction(chunk, self.config, offset=index * size)
            except ValueError as e:
                raise DecodeError(f"cannot decode: {e}", index=index) from None
            module = op.stage
            flags = op.deps
            pops = tuple(_POPS[module][f] for f in flags if f in _POPS[module])
            pushes = tuple(_PUSHES[module][f] for f in flags if f in _PUSHES[module])
            insn = _Insn(index, op, module, _kind(op), pops, pushes, instruction_cycles(op, self.config))
            if not isinstance(op, FinishOp):
                insn.f = op.fields()
            insns.append(insn)
        if not any(isinstance(i.op, FinishOp) for i in insns):
            raise MissingFinishError(
                f"the program has no FINISH instruction ({len(insns)} instructions), so the "
                "accelerator would never signal completion; end it with vta.finish"
            )
        return insns

    def _decode_uop_segment(self) -> np.ndarray:
        size = self.config.uop_bits // 8
        if len(self.uop_bytes) % size:
            raise DecodeError(f"the uop segment is {len(self.uop_bytes)} bytes, not a multiple of {size}")
        return np.frombuffer(self.uop_bytes, dtype="<u4").copy()

    # --- state -----------------------------------------------------------------------------
    def _reset_state(self) -> None:
        c = self.config
        self.sram: dict[str, np.ndarray] = {
            "uop": np.zeros(c.uop_depth, dtype="<u4"),
            **{
                mem: np.zeros((c.depth(mem), *element_shape(mem, c)), dtype=memory_dtype(mem, c))
                for mem in ("inp", "wgt", "acc")
            },
        }

    def scratchpad(self, mem: str | MemoryType) -> np.ndarray:
        """Scratchpad `mem` (uop words, or (depth, *element shape) tensors); a live view."""
        return self.sram[str(mem)]

    def decoded_uops(self, bgn: int = 0, end: int | None = None) -> list[tuple[int, int, int]]:
        """(dst, src, wgt) of uop scratchpad slots [bgn, end)."""
        d, s, w = self._uop_fields(self.sram["uop"][bgn:end])
        return list(zip(d.tolist(), s.tolist(), w.tolist()))

    def _uop_fields(self, words: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        lay = self._uop_lay
        w = words.astype(np.int64)
        return tuple((w >> f.lo) & f.mask for f in (lay["dst_idx"], lay["src_idx"], lay["wgt_idx"]))  # type: ignore[return-value]

    # --- functional execution -------------------------------------------------------------
    def _err(self, cls: type[SimulatorError], insn: _Insn, what: str) -> SimulatorError:
        return cls(what, index=insn.index, disassembly=insn.text, cycle=getattr(self, "_now", None))

    def _exec(self, insn: _Insn) -> None:
        op = insn.op
        if isinstance(op, LoadOp):
            self._load(insn)
        elif isinstance(op, StoreOp):
            self._store(insn)
        elif isinstance(op, GemmOp):
            self._gemm(insn)
        elif isinstance(op, AluOp):
            self._alu(insn)

    def _row_indices(self, insn: _Insn, base: int, units: int) -> np.ndarray:
        """(y, x*units) flat indices of the 2-D strided block in a space of `units`-sized items."""
        f = insn.f
        rows = (base + np.arange(f["y_size"], dtype=np.int64) * f["x_stride"]) * units
        return rows[:, None] + np.arange(f["x_size"] * units, dtype=np.int64)[None, :]

    def _dram_span(self, insn: _Insn) -> tuple[int, int]:
        f = insn.f
        if f["y_size"] == 0:
            return f["dram_base"], f["dram_base"]
        return f["dram_base"], f["dram_base"] + (f["y_size"] - 1) * f["x_stride"] + f["x_size"]

    def _dram_bytes(self, insn: _Insn, mem: str, verb: str) -> np.ndarray:
        """The DRAM bytes (rows x bytes) a LOAD or STORE of `mem` elements reads or writes
        (`verb`); a DramOutOfRangeError if they leave the DRAM."""
        lo, hi = self._dram_span(insn)
        elem = self.config.elem_bytes(mem)
        if hi * elem > self.dram.size:
            raise self._err(
                DramOutOfRangeError, insn,
                f"{verb} {mem} elements [{lo}, {hi}) = bytes [{lo * elem}, {hi * elem}) "
                f"of a {self.dram.size}-byte DRAM",
            )  # fmt: skip
        return self._row_indices(insn, insn.f["dram_base"], elem)

    def _load(self, insn: _Insn) -> None:
        f, c = insn.f, self.config
        if f["x_size"] == 0:
            return
        mem = str(insn.op.mem)  # type: ignore[union-attr]
        y0, y1, x0, x1 = (f[k] for k in ("y_pad_0", "y_pad_1", "x_pad_0", "x_pad_1"))
        rows, cols = f["y_size"] + y0 + y1, f["x_size"] + x0 + x1
        depth = c.depth(mem)
        base = f["sram_base"]
        if base + rows * cols > depth:
            raise self._err(
                ScratchpadOutOfRangeError, insn,
                f"writes {mem} scratchpad elements [{base}, {base + rows * cols}) "
                f"({rows} rows x {cols} elements incl. padding), beyond its depth {depth}",
            )  # fmt: skip
        shape = element_shape(mem, c)
        if mem == "uop":
            lo, hi = self._dram_span(insn)
            n = len(self._uop_segment)
            if hi > n:
                raise self._err(
                    DramOutOfRangeError, insn,
                    f"reads micro-ops [{lo}, {hi}) of the uop segment, which holds {n}",
                )  # fmt: skip
            data = self._uop_segment[self._row_indices(insn, f["dram_base"], 1)]
        else:
            raw = self.dram.data[self._dram_bytes(insn, mem, "reads")]
            data = np.ascontiguousarray(raw).view(memory_dtype(mem, c)).reshape(f["y_size"], f["x_size"], *shape)
        block = np.zeros((rows, cols, *shape), dtype=self.sram[mem].dtype)
        block[y0 : y0 + f["y_size"], x0 : x0 + f["x_size"]] = data
        self.sram[mem][base : base + rows * cols] = block.reshape(rows * cols, *shape)

    def _store(self, insn: _Insn) -> None:
        f, c = insn.f, self.config
        if f["x_size"] == 0:
            return
        count = f["y_size"] * f["x_size"]
        base, depth = f["sram_base"], c.acc_depth
        if base + count > depth:
            raise self._err(
                ScratchpadOutOfRangeError, insn,
                f"reads accumulators [{base}, {base + count}), beyond the acc scratchpad depth {depth}",
            )  # fmt: skip
        idx = self._dram_bytes(insn, "out", "writes")
        out = self.sram["acc"][base : base + count].astype(memory_dtype("out", c))  # wraps: low bits
        self.dram.data[idx] = out.view(np.uint8).reshape(idx.shape)

    def _walk_setup(self, insn: _Insn, src_mem: str | None, with_wgt: bool):
        """Check the walk's ranges; return the uop fields and the loop extents/factors."""
        f, c = insn.f, self.config
        bgn, end = f["uop_bgn"], f["uop_end"]
        if end > c.uop_depth:
            raise self._err(
                ScratchpadOutOfRangeError, insn,
                f"uses micro-op slots [{bgn}, {end}), beyond the uop scratchpad depth {c.uop_depth}",
            )  # fmt: skip
        if end <= bgn or f["iter_out"] == 0 or f["iter_in"] == 0:
            return None
        d, s, w = self._uop_fields(self.sram["uop"][bgn:end])
        io, ii = f["iter_out"] - 1, f["iter_in"] - 1
        checks = [("dst", d, "dst_factor", "acc")]
        if src_mem is not None:  # a reset reads nothing
            checks.append(("src", s, "src_factor", src_mem))
        if with_wgt:
            checks.append(("wgt", w, "wgt_factor", "wgt"))
        for name, vals, fac, mem in checks:
            top = int(vals.max()) + io * f[f"{fac}_out"] + ii * f[f"{fac}_in"]
            if top >= c.depth(mem):
                u = bgn + int(np.argmax(vals))
                raise self._err(
                    ScratchpadOutOfRangeError, insn,
                    f"its walk reaches {mem} index {top} (micro-op slot {u}: {name} {int(vals.max())}"
                    f" + {io}*{f[f'{fac}_out']} + {ii}*{f[f'{fac}_in']}), beyond the {mem} "
                    f"scratchpad depth {c.depth(mem)}",
                )  # fmt: skip
        return d, s, w

    def _walk_chunks(self, insn: _Insn, uops, names: Iterable[tuple[str, int]]):
        """Yield, per chunk of outer iterations, flat index arrays in walk order (i, j, u)."""
        f = insn.f
        n = len(uops[0])
        per_outer = f["iter_in"] * n
        step = max(1, _WALK_CHUNK // per_outer)
        j = np.arange(f["iter_in"], dtype=np.int64)[None, :, None]
        for i0 in range(0, f["iter_out"], step):
            i = np.arange(i0, min(i0 + step, f["iter_out"]), dtype=np.int64)[:, None, None]
            yield [
                (uops[k][None, None, :] + i * f[f"{fac}_out"] + j * f[f"{fac}_in"]).reshape(-1)
                for fac, k in names
            ]

    def _gemm(self, insn: _Insn) -> None:
        reset = insn.op.is_reset  # type: ignore[union-attr]
        uops = self._walk_setup(insn, None if reset else "inp", with_wgt=not reset)
        if uops is None:
            return
        acc, acc_dtype = self.sram["acc"], self.sram["acc"].dtype
        if reset:
            for (dst,) in self._walk_chunks(insn, uops, [("dst_factor", 0)]):
                acc[dst] = 0
            return
        inp, wgt = self.sram["inp"], self.sram["wgt"]
        exact_f64 = self.config.inp_bits + self.config.wgt_bits - 2 + math.log2(self.config.block_in) <= 52
        for dst, src, wi in self._walk_chunks(
            insn, uops, [("dst_factor", 0), ("src_factor", 1), ("wgt_factor", 2)]
        ):
            if exact_f64:  # every partial sum is an integer below 2**53: BLAS-exact
                a = inp[src].astype(np.float64)
                b = wgt[wi].astype(np.float64)
                prod = np.matmul(a, b.transpose(0, 2, 1)).astype(np.int64)
            else:
                prod = np.matmul(inp[src].astype(np.int64), wgt[wi].astype(np.int64).transpose(0, 2, 1))
            _accumulate(acc, dst, prod, acc_dtype)

    def _alu(self, insn: _Insn) -> None:
        op: AluOp = insn.op  # type: ignore[assignment]
        uops = self._walk_setup(insn, None if op.is_reset or op.use_imm else "acc", with_wgt=False)
        if uops is None:
            return
        acc = self.sram["acc"]
        if op.is_reset:
            for (dst,) in self._walk_chunks(insn, uops, [("dst_factor", 0)]):
                acc[dst] = 0
            return
        imm = op.imm_value
        fn = _alu_function(op.op, self.config.shr_arg_bits)
        for dst, src in self._walk_chunks(insn, uops, [("dst_factor", 0), ("src_factor", 1)]):
            for lo, hi in _hazard_free_runs(dst, None if imm is not None else src, acc.shape[0]):
                d = dst[lo:hi]
                a = acc[d].astype(np.int64)
                b = np.int64(imm) if imm is not None else acc[src[lo:hi]].astype(np.int64)
                acc[d] = fn(a, b).astype(acc.dtype)

    # --- the timed event loop ---------------------------------------------------------------
    def run(self) -> SimReport:
        """Run to FINISH; returns the report. Raises a `SimulatorError` subclass on failure."""
        self._reset_state()
        depth = self.token_queue_depth
        queues = {m: deque(i for i in self.insns if i.module == m) for m in MODULES}
        tokens = dict.fromkeys(TOKEN_QUEUES, 0)
        max_tokens = dict.fromkeys(TOKEN_QUEUES, 0)
        running: dict[str, _Insn | None] = dict.fromkeys(MODULES)
        free_at = dict.fromkeys(MODULES, 0)
        busy = dict.fromkeys(MODULES, 0)
        stall = dict.fromkeys(MODULES, 0)
        counts: dict[str, int] = {}
        mod_counts = dict.fromkeys(MODULES, 0)
        moved = dict.fromkeys(("inp", "wgt", "acc", "uop", "out"), 0)
        gemm_counter = alu_counter = 0
        timeline: list[TimelineEntry] = []
        events: list[tuple[int, int, str]] = []
        warnings: list[str] = []
        for insn in self.insns:
            ignored = [fl for fl in insn.op.deps if fl not in _POPS[insn.module] and fl not in _PUSHES[insn.module]]
            if ignored:
                warnings.append(
                    f"instruction #{insn.index} ({insn.text}): {', '.join(ignored)} mean(s) nothing "
                    f"in the {insn.module} module and are ignored"
                )
        now = 0
        self._now = 0
        finish_end: int | None = None
        try:
            while True:
                # Start every instruction that can start now (pops never enable each other).
                for m in MODULES:
                    if running[m] is not None or not queues[m]:
                        continue
                    insn = queues[m][0]
                    if any(tokens[q] == 0 for q in insn.pops):
                        continue
                    queues[m].popleft()
                    for q in insn.pops:
                        tokens[q] -= 1
                    if self.execute:
                        self._exec(insn)
                    end = now + insn.cycles
                    running[m] = insn
                    heapq.heappush(events, (end, insn.index, m))
                    timeline.append(TimelineEntry(insn.index, m, insn.kind, now, end, insn.text))
                    stall[m] += now - free_at[m]
                    busy[m] += insn.cycles
                    counts[insn.kind] = counts.get(insn.kind, 0) + 1
                    mod_counts[m] += 1
                    if isinstance(insn.op, (LoadOp, StoreOp)):
                        moved[str(insn.op.mem)] += _dma_bytes(insn.op, self.config)
                    elif isinstance(insn.op, (GemmOp, AluOp)) and not insn.op.is_reset:
                        f = insn.f
                        pts = f["iter_out"] * f["iter_in"] * max(0, f["uop_end"] - f["uop_bgn"])
                        if isinstance(insn.op, GemmOp):
                            gemm_counter += pts
                        else:
                            alu_counter += pts
                if not events:
                    raise self._deadlock(queues, tokens, now)
                # Complete everything that ends at the next event time.
                now = events[0][0]
                self._now = now
                while events and events[0][0] == now:
                    _, _, m = heapq.heappop(events)
                    insn = running[m]
                    assert insn is not None
                    running[m] = None
                    free_at[m] = now
                    for q in insn.pushes:
                        if tokens[q] >= depth:
                            raise self._err(
                                TokenQueueOverflowError, insn,
                                f"pushes a token into {q}, which already holds {tokens[q]} "
                                f"(the token queue depth is {depth}); the consumer must pop "
                                "before more tokens are pushed",
                            )  # fmt: skip
                        tokens[q] += 1
                        max_tokens[q] = max(max_tokens[q], tokens[q])
                    if isinstance(insn.op, FinishOp):
                        finish_end = now
                if finish_end is not None:
                    break
        finally:
            self._now = None
        unfinished = sorted(
            [i.index for m in MODULES for i in queues[m]] + [i.index for i in running.values() if i is not None]
        )
        if unfinished:
            warnings.append(
                f"{len(unfinished)} instruction(s) had not completed when FINISH completed "
                f"(first: #{unfinished[0]}); FINISH should wait for them through tokens"
            )
        return SimReport(
            config=self.config,
            total_cycles=finish_end,
            busy_cycles=busy,
            stall_cycles=stall,
            instruction_counts=counts,
            module_instruction_counts=mod_counts,
            bytes_moved=moved,
            gemm_counter=gemm_counter,
            alu_counter=alu_counter,
            timeline=timeline,
            token_queue_depth=depth,
            max_tokens=max_tokens,
            unfinished=tuple(unfinished),
            warnings=tuple(warnings),
        )

    def _deadlock(self, queues, tokens, now: int) -> DeadlockError:
        blocked: dict[str, tuple[int, tuple[str, ...]]] = {}
        lines = []
        for m in MODULES:
            if not queues[m]:
                lines.append(f"  {m}: done (no instructions left)")
                continue
            insn = queues[m][0]
            waits = tuple(q for q in insn.pops if tokens[q] == 0)
            blocked[m] = (insn.index, waits)
            lines.append(
                f"  {m}: instruction #{insn.index} at {insn.index * 16:#06x} ({insn.text}) "
                f"waits on {' and '.join(waits)} (empty)"
            )
        first = min(blocked.values())[0] if blocked else len(self.insns) - 1
        insn = self.insns[first]
        what = (
            f"deadlock at cycle {now}: every module with instructions left is blocked on an "
            "empty token queue\n" + "\n".join(lines)
        )
        err = DeadlockError(what, blocked=blocked)
        err.index, err.disassembly, err.cycle = insn.index, insn.text, now
        return err


def _accumulate(acc: np.ndarray, dst: np.ndarray, prod: np.ndarray, dtype: np.dtype) -> None:
    """acc[dst] += prod (wrapping), summing the contributions of repeated dst indices."""
    order = np.argsort(dst, kind="stable")
    sd = dst[order]
    if sd.size > 1 and not (sd[1:] != sd[:-1]).all():
        starts = np.flatnonzero(np.r_[True, sd[1:] != sd[:-1]])
        sums = np.add.reduceat(prod[order], starts, axis=0)
        dst = sd[starts]
    else:
        sums = prod
    # Wrapping int64 sums keep their residue mod 2**acc_bits; astype truncates to it.
    acc[dst] = (acc[dst].astype(np.int64) + sums).astype(dtype)


def _hazard_free_runs(dst: np.ndarray, src: np.ndarray | None, depth: int):
    """Split walk points into consecutive runs that can be applied at once: within a run no
    accumulator is written twice, and none is read after an earlier point wrote it."""
    n = len(dst)
    if len(np.unique(dst)) == n:
        if src is None:
            yield 0, n
            return
        written_at = np.full(depth, n, dtype=np.int64)
        written_at[dst] = np.arange(n)  # dst is unique: one write per index
        if not (written_at[src] < np.arange(n)).any():
            yield 0, n
            return
    start, seen = 0, set()
    dl = dst.tolist()
    sl = src.tolist() if src is not None else None
    for q in range(n):
        d = dl[q]
        if d in seen or (sl is not None and sl[q] in seen):
            yield start, q
            start, seen = q, set()
        seen.add(d)
    yield start, n


def _alu_function(opcode: AluOpcode, shr_bits: int):
    mask = (1 << shr_bits) - 1
    if opcode == AluOpcode.MIN:
        return np.minimum
    if opcode == AluOpcode.MAX:
        return np.maximum
    if opcode == AluOpcode.ADD:
        return np.add
    if opcode == AluOpcode.MUL:
        return np.multiply

    def shr(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        b = np.asarray(b, dtype=np.int64)
        right = np.right_shift(a, b & mask)
        left = np.left_shift(a, (-b) & mask)
        return np.where(b >= 0, right, left)

    return shr


def simulate(
    program: ProgramOp | tuple[bytes, bytes] | bytes,
    dram: Dram | bytearray | None = None,
    config: HardwareConfig = DEFAULT,
    **kwargs: Any,
) -> SimReport:
    """Run `program` on `dram` (modified in place) and return the report; see `Simulator`."""
    return Simulator(program, dram, config, **kwargs).run()

