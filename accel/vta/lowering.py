"""convert-loop-to-vta: accelerator loop nests -> a `vta.program` (instructions + micro-ops).

Input: a `func.func` in VTA form, as `tensorize` and `virtual-threads` leave it: loops,
`loop.intrinsic` calls of VTA intrinsics on scratchpad buffers (`#loop.scope<vta.*>`)
and on global buffers (the kernel arguments, in DRAM), and `loop.dep_push/pop`.

* Loops run at compile time (they are unrolled into the instruction stream), except
  *micro-kernel loops*: a loop nest whose calls are all the same GEMM / reset / ALU
  intrinsic becomes ONE instruction. Its outer two loops become the hardware loop
  (`iter_out`, `iter_in`, with index factors measured from the calls), everything inside
  is unrolled into micro-ops (as TVM's FoldUopLoop does). A micro-kernel is loaded into
  the uop scratchpad once and reused while it stays resident.
* DMA intrinsics become LOAD/STORE: a 2-D window (`rows` x `cols` elements) of a global
  buffer; with `pad`, coordinates outside the buffer are read as zeros (LOAD padding).
* `loop.dep_push src -> dst` sets the push flag of the last instruction of stage `src`
  (or adds a token-only no-op there); `loop.dep_pop` sets the pop flag of the next
  instruction of stage `dst` (TVM's VTADepPush/VTADepPop).
* The program ends by waiting for the load and store modules, then FINISH.

Kernel arguments are laid out in DRAM one after the other (`LoweredProgram.layout`):
an argument whose trailing dims are one scratchpad element (1x16 int8 -> inp, or out if
something is stored to it; 16x16 int8 -> wgt; 1x16 int32 -> acc) is an array of those
elements, row-major over its leading dims.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from xdsl.context import Context
from xdsl.dialects import builtin, func
from xdsl.dialects.builtin import IntegerType, MemRefType, ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass

from xweave.accel.api import (
    Accelerator,
    AcceleratorError,
    IntrinsicCall,
    LoweredProgram,
    get_accelerator,
    unrolled_calls,
)
from xweave.accel.vta.config import DEFAULT, HardwareConfig
from xweave.dialects import loop
from xweave.accel.vta import dialect as isa

__all__ = ["ConvertLoopToVTAPass", "DramSlot", "VTAProgramBuilder", "lower_function"]

_STAGE_ORDER = {"load": 0, "compute": 1, "store": 2}


@dataclass(frozen=True)
class DramSlot:
    """Where one kernel argument lives: `count` elements of `mem` from element `addr`."""

    mem: str
    addr: int
    shape: tuple[int, ...]
    dtype: str

    def byte_offset(self, config: HardwareConfig) -> int:
        return self.addr * config.elem_bytes(self.mem)


@dataclass
class _Rec:
    kind: type
    args: dict[str, Any]
    stage: str
    deps: set[str] = field(default_factory=set)


class VTAProgramBuilder:
    """Accumulates instructions and micro-kernels; `build()` makes the `vta.program`."""

    def __init__(self, config: HardwareConfig = DEFAULT):
        self.config = config
        self.recs: list[_Rec] = []
        self.segment: list[tuple[int, int, int]] = []
        self._seg_index: dict[tuple, int] = {}
        self._resident: dict[tuple, int] = {}
        self._next_slot = 0
        self._pending: dict[str, list[str]] = {s: [] for s in _STAGE_ORDER}
        self._last: dict[str, int] = {}

    # --- instructions and tokens ---------------------------------------------------------
    def emit(self, kind: type, stage: str, **args: Any) -> _Rec:
        deps: set[str] = set()
        pending = self._pending[stage]
        while pending:
            src = pending[0]
            flag = "pop_prev" if _STAGE_ORDER[src] < _STAGE_ORDER[stage] else "pop_next"
            if flag in deps:  # a second token from the same queue: wait in a no-op first
                self._emit_rec(self._sync_rec(stage, deps))
                deps = set()
            deps.add(flag)
            pending.pop(0)
        rec = _Rec(kind, args, stage, deps)
        self._emit_rec(rec)
        return rec

    def _emit_rec(self, rec: _Rec) -> None:
        self._last[rec.stage] = len(self.recs)
        self.recs.append(rec)

    def _sync_rec(self, stage: str, deps: set[str]) -> _Rec:
        if stage == "load":
            return _Rec(isa.LoadOp, _sync_args("inp"), stage, deps)
        if stage == "compute":
            return _Rec(isa.LoadOp, _sync_args("uop"), stage, deps)
        return _Rec(isa.StoreOp, dict(sram_base=0, dram_base=0, y_size=0, x_size=0, x_stride=0), stage, deps)

    def sync(self, stage: str) -> None:
        """A token-only no-op on `stage` (takes the pending pops)."""
        rec = self._sync_rec(stage, set())
        self.emit(rec.kind, stage, **rec.args)

    def push(self, src: str, dst: str) -> None:
        flag = "push_next" if _STAGE_ORDER[dst] > _STAGE_ORDER[src] else "push_prev"
        last = self._last.get(src)
        if last is None or flag in self.recs[last].deps or self.recs[last].kind is isa.FinishOp:
            self.sync(src)
            last = self._last[src]
        self.recs[last].deps.add(flag)

    def pop(self, src: str, dst: str) -> None:
        self._pending[dst].append(src)

    # --- micro-kernels -----------------------------------------------------------------------
    def kernel(
        self, kind: tuple, uops: Sequence[tuple[int, int, int]], iter_out: int, iter_in: int,
        factors: dict[str, int],
    ) -> None:
        """One GEMM/ALU instruction running micro-ops `uops` (loaded if not resident)."""
        key = tuple(uops)
        depth = self.config.uop_depth
        if len(key) > depth:
            raise AcceleratorError(f"a micro-kernel of {len(key)} micro-ops exceeds the uop scratchpad ({depth})")
        bgn = self._resident.get(key)
        if bgn is None:
            if self._next_slot + len(key) > depth:  # evict everything, start over
                self._resident.clear()
                self._next_slot = 0
            seg = self._seg_index.get(key)
            if seg is None:
                seg = self._seg_index[key] = len(self.segment)
                self.segment.extend(key)
            bgn = self._next_slot
            self.emit(isa.LoadOp, "compute", memory_type="uop", sram_base=bgn, dram_base=seg,
                      y_size=1, x_size=len(key), x_stride=len(key))
            self._resident[key] = bgn
            self._next_slot += len(key)
        common = dict(uop_bgn=bgn, uop_end=bgn + len(key), iter_out=iter_out, iter_in=iter_in,
                      dst_factor_out=factors.get("dst_out", 0), dst_factor_in=factors.get("dst_in", 0),
                      src_factor_out=factors.get("src_out", 0), src_factor_in=factors.get("src_in", 0))
        if kind[0] == "gemm":
            self.emit(isa.GemmOp, "compute", **common, wgt_factor_out=factors.get("wgt_out", 0),
                      wgt_factor_in=factors.get("wgt_in", 0))
        elif kind[0] == "reset":
            self.emit(isa.GemmOp, "compute", **common, reset=True)
        else:
            _, opcode, imm = kind
            self.emit(isa.AluOp, "compute", alu_opcode=opcode, imm=imm, **common)

    # --- the end -------------------------------------------------------------------------------
    def finish(self) -> None:
        """Wait for the load and store modules, then FINISH."""
        for stage in ("load", "store"):
            if stage in self._last or self._pending[stage]:
                self.push(stage, "compute")
                self.pop(stage, "compute")
        for stage in ("load", "store"):
            if self._pending[stage]:  # pops nobody consumed: let the module take them
                self.sync(stage)
        if self._pending["compute"]:
            self.sync("compute")
        self.emit(isa.FinishOp, "compute")

    def build(self, name: str | None = None) -> isa.ProgramOp:
        insns = []
        for rec in self.recs:
            deps = sorted(rec.deps)
            if rec.kind is isa.FinishOp:
                insns.append(isa.FinishOp(deps=deps))
            else:
                insns.append(rec.kind(**rec.args, deps=deps))
        program = isa.ProgramOp(insns, self.segment or None, sym_name=name)
        if self.config != DEFAULT:  # the verifiers check the fields against it
            program.attributes[isa.CONFIG_ATTR] = isa.config_attr(self.config)
        return program


def _sync_args(mem: str) -> dict[str, Any]:
    return dict(memory_type=mem, sram_base=0, dram_base=0, y_size=0, x_size=0, x_stride=0)


# --------------------------------------------------------------------------------------
# Intrinsic lowerings (used by the VTA accelerator's TensorIntrinsics)
# --------------------------------------------------------------------------------------


class VTALowering:
    """The emitter handed to VTA intrinsic lowerings: the builder plus DRAM layout."""

    def __init__(self, config: HardwareConfig, slots: dict[SSAValue, DramSlot]):
        self.config = config
        self.builder = VTAProgramBuilder(config)
        self.slots = slots

    def slot(self, buffer: SSAValue, what: str) -> DramSlot:
        try:
            return self.slots[buffer]
        except KeyError:
            raise AcceleratorError(f"{what}: operand is not a kernel argument (a DRAM buffer)") from None


def _element_rank(mem: str) -> int:
    return 2  # every VTA element is a 2-D tile (batch x block, block x block)


def lower_dma(call: IntrinsicCall, em: VTALowering) -> None:
    """vta.load_* / vta.store: a 2-D window between a scratchpad and a DRAM buffer."""
    name = call.intrinsic.name
    storing = name == "vta.store"
    glob, scratch = (0, 1) if storing else (1, 0)
    a = call.attrs
    rows, cols = int(a.get("rows", 1)), int(a["cols"])
    gtype = call.types[glob]
    slot = em.slot(call.buffers[glob], name)
    outer = gtype.get_shape()[: -_element_rank(slot.mem)]
    start = list(call.offsets[glob][: len(outer)])
    row_dim = int(a.get("row_dim", len(outer) - 2 if len(outer) >= 2 else 0))
    strides = [1] * len(outer)
    for d in range(len(outer) - 2, -1, -1):
        strides[d] = strides[d + 1] * outer[d + 1]
    y0 = y1 = x0 = x1 = 0
    if a.get("pad"):
        if storing:
            raise AcceleratorError("vta.store takes no padding")
        last = len(outer) - 1
        lo_r, hi_r = start[row_dim], start[row_dim] + rows
        y0, y1 = max(0, -lo_r), max(0, hi_r - outer[row_dim])
        lo_c, hi_c = start[last], start[last] + cols
        x0, x1 = max(0, -lo_c), max(0, hi_c - outer[last])
        start[row_dim] = max(lo_r, 0)
        start[last] = max(lo_c, 0)
        if max(y0, y1, x0, x1) >= 1 << em.config.pad_bits:
            raise AcceleratorError(f"{name}: padding ({y0}, {y1}, {x0}, {x1}) exceeds the DMA's 4-bit pad fields")
    y_size, x_size = max(0, rows - y0 - y1), max(0, cols - x0 - x1)
    if y_size == 0 or x_size == 0:  # the whole window is padding: write zeros some other way
        raise AcceleratorError(f"{name}: the window lies entirely outside the buffer")
    for d, v in enumerate(start):
        if not 0 <= v < max(outer[d], 1):
            raise AcceleratorError(f"{name}: window start {tuple(start)} is outside {tuple(outer)}")
    dram = slot.addr + sum(s * v for s, v in zip(strides, start))
    sram = call.offsets[scratch][0]
    stride = strides[row_dim] if rows > 1 else x_size
    if storing:
        em.builder.emit(isa.StoreOp, "store", sram_base=sram, dram_base=dram, y_size=y_size,
                        x_size=x_size, x_stride=stride)
    else:
        mem = scope_mem(call.types[scratch])
        stage = "load" if mem in ("inp", "wgt") else "compute"
        em.builder.emit(isa.LoadOp, stage, memory_type=mem, sram_base=sram, dram_base=dram,
                        y_size=y_size, x_size=x_size, x_stride=stride, y_pad_0=y0, y_pad_1=y1,
                        x_pad_0=x0, x_pad_1=x1)


def kernel_uop(call: IntrinsicCall) -> tuple[tuple, tuple[int, int, int]]:
    """(kernel kind, micro-op) of a GEMM / reset / ALU intrinsic call."""
    name = call.intrinsic.name
    first = [off[0] for off in call.offsets]
    if name == "vta.gemm":
        return ("gemm",), (first[0], first[1], first[2])
    if name == "vta.fill_zero":
        return ("reset",), (first[0], 0, 0)
    if name == "vta.alu":
        return ("alu", str(call.attrs["op"]), None), (first[0], first[1], 0)
    if name == "vta.alu_imm":
        return ("alu", str(call.attrs["op"]), int(call.attrs["imm"])), (first[0], 0, 0)
    raise AcceleratorError(f"{name} is not a micro-kernel intrinsic")


def lower_kernel_call(call: IntrinsicCall, em: VTALowering) -> None:
    """A kernel intrinsic outside any foldable loop: a one-micro-op instruction."""
    kind, uop = kernel_uop(call)
    em.builder.kernel(kind, [uop], 1, 1, {})


KERNEL_INTRINSICS = frozenset({"vta.gemm", "vta.fill_zero", "vta.alu", "vta.alu_imm"})


def scope_mem(t: MemRefType) -> str:
    scope = loop.scope_of(t).data
    if not scope.startswith("vta."):
        raise AcceleratorError(f"buffer {t} is not in a VTA scratchpad scope (vta.inp/wgt/acc)")
    return scope[4:]


# --------------------------------------------------------------------------------------
# The walk
# --------------------------------------------------------------------------------------


def _leaves(op: Operation):
    for o in op.walk():
        if isinstance(o, loop.IntrinsicOp | loop.DepPushOp | loop.DepPopOp):
            yield o


def _kernel_signature(for_op: loop.ForOp) -> tuple | None:
    """(callee, params) shared by every call in the nest if it is a micro-kernel nest."""
    sig = None
    for o in _leaves(for_op):
        if not isinstance(o, loop.IntrinsicOp) or o.callee_name not in KERNEL_INTRINSICS:
            return None
        s = (o.callee_name, str(o.params))
        if sig is None:
            sig = s
        elif s != sig:
            return None
    return sig


class _Walker:
    def __init__(self, acc: Accelerator, em: VTALowering):
        self.acc = acc
        self.em = em
        self._sig_cache: dict[int, tuple | None] = {}

    def run(self, ops, env: dict[SSAValue, int]) -> None:
        for event in unrolled_calls(ops, self.acc, env, fold=self._fold):
            if isinstance(event, IntrinsicCall):
                event.intrinsic.lower(event, self.em)
            elif event.kind == "push":
                self.em.builder.push(event.src, event.dst)
            else:
                self.em.builder.pop(event.src, event.dst)

    def _sig(self, op: loop.ForOp):
        key = id(op)
        if key not in self._sig_cache:
            self._sig_cache[key] = _kernel_signature(op)
        return self._sig_cache[key]

    def _uops(self, ops, env) -> tuple[tuple | None, list[tuple[int, int, int]]]:
        kind, uops = None, []
        for call in unrolled_calls(ops, self.acc, env):
            assert isinstance(call, IntrinsicCall)  # a micro-kernel nest holds only calls
            kind, uop = kernel_uop(call)
            uops.append(uop)
        return kind, uops

    def _fold(self, outer: loop.ForOp, env: dict[SSAValue, int]) -> bool:
        """Emit `outer` as one micro-kernel instruction; False if it is not a micro-kernel
        nest or its calls are not affine in the two hardware loops (then it is unrolled)."""
        if self._sig(outer) is None:
            return False
        if outer.extent == 0:
            return True
        body = [o for o in outer.body.block.ops if not isinstance(o, loop.YieldOp)]
        inner = body[0] if len(body) == 1 and isinstance(body[0], loop.ForOp) and body[0].extent > 0 else None
        rest = inner.body.block.ops if inner is not None else outer.body.block.ops
        env[outer.induction_var] = outer.range.start
        if inner is not None:
            env[inner.induction_var] = inner.range.start
        kind, base = self._uops(list(rest), env)
        factors: dict[str, int] = {}
        ok = True
        for var, n, suffix, loop_op in (
            (outer.induction_var, outer.extent, "out", outer),
            (inner.induction_var if inner is not None else None, inner.extent if inner is not None else 1, "in", inner),
        ):
            if var is None or n == 1:
                continue
            env[var] = loop_op.range.start + loop_op.range.step
            _, moved = self._uops(list(rest), env)
            env[var] = loop_op.range.start
            diffs = {tuple(m - b for m, b in zip(mu, bu)) for mu, bu in zip(moved, base)}
            if len(diffs) != 1:
                ok = False
                break
            (d,) = diffs
            if min(d) < 0:
                ok = False
                break
            factors[f"dst_{suffix}"], factors[f"src_{suffix}"], factors[f"wgt_{suffix}"] = d
        env.pop(outer.induction_var, None)
        if inner is not None:
            env.pop(inner.induction_var, None)
        if not ok:
            return False
        assert kind is not None
        iter_out = outer.extent
        iter_in = inner.extent if inner is not None else 1
        self.em.builder.kernel(kind, base, iter_out, iter_in, factors)
        return True


def _arg_slots(f: func.FuncOp, config: HardwareConfig) -> dict[SSAValue, DramSlot]:
    stored = {o.buffers[0] for o in f.walk() if isinstance(o, loop.IntrinsicOp) and o.callee_name == "vta.store"}
    slots: dict[SSAValue, DramSlot] = {}
    byte_top = 0
    for arg in f.body.block.args:
        t = arg.type
        if not isinstance(t, MemRefType):
            raise AcceleratorError(f"@{f.sym_name.data}: argument of type {t} is not a buffer")
        shape = tuple(t.get_shape())
        et = t.get_element_type()
        width = et.width.data if isinstance(et, IntegerType) else 0
        tail = shape[-2:]
        c = config
        if tail == (c.batch, c.block_in) and width == c.inp_bits and arg not in stored:
            mem = "inp"
        elif tail == (c.batch, c.block_out) and width == c.out_bits and arg in stored:
            mem = "out"
        elif tail == (c.block_out, c.block_in) and width == c.wgt_bits:
            mem = "wgt"
        elif tail == (c.batch, c.block_out) and width == c.acc_bits:
            mem = "acc"
        else:
            raise AcceleratorError(
                f"@{f.sym_name.data}: argument {t} is not an array of VTA elements "
                f"(trailing dims {c.batch}x{c.block_in} / {c.block_out}x{c.block_in} int8, "
                f"{c.batch}x{c.block_out} int32)"
            )
        elem = c.elem_bytes(mem)
        align = 256
        byte_top = -(-byte_top // align) * align
        count = 1
        for d in shape[:-2]:
            count *= d
        slots[arg] = DramSlot(mem, byte_top // elem, shape, f"i{width}")
        byte_top += count * elem
    return slots


def lower_function(f: func.FuncOp, acc: Accelerator, config: HardwareConfig | None = None) -> LoweredProgram:
    """The VTA lowering rule: one kernel function -> program + DRAM layout of its args."""
    config = config or acc.config
    slots = _arg_slots(f, config)
    em = VTALowering(config, slots)
    _Walker(acc, em).run(f.body.block.ops, {})
    em.builder.finish()
    program = em.builder.build(f.sym_name.data)
    layout = {i: slots[a] for i, a in enumerate(f.body.block.args)}
    return LoweredProgram(program, layout, {"instructions": len(em.builder.recs), "uops": len(em.builder.segment)})


@dataclass(frozen=True)
class ConvertLoopToVTAPass(ModulePass):
    """Replace each accelerator kernel (a func.func calling VTA intrinsics) by a
    `vta.program` of the same name; other functions are left alone."""

    name = "convert-loop-to-vta"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        acc = get_accelerator("vta")
        for f in list(op.ops):
            if not isinstance(f, func.FuncOp):
                continue
            if not any(isinstance(o, loop.IntrinsicOp) and o.callee_name.startswith("vta.") for o in f.walk()):
                continue
            lowered = lower_function(f, acc)
            program = cast(isa.ProgramOp, lowered.program)
            program.attributes["xweave.dram_layout"] = builtin.ArrayAttr(
                [builtin.StringAttr(f"{s.mem}@{s.addr}:{'x'.join(map(str, s.shape))}") for s in lowered.layout.values()]
            )
            op.body.block.insert_op_before(program, f)
            f.detach()
            f.erase()


__all__ += ["KERNEL_INTRINSICS", "VTALowering", "kernel_uop", "lower_dma", "lower_kernel_call", "scope_mem"]
