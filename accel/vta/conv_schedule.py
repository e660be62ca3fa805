"""The VTA schedule of an int8 conv2d layer (dense is a 1x1 conv): tile plan + loop IR.

The layer runs in packed layouts: data NCHW[16]c (`N x C/16 x H x W x 1 x 16` int8
elements), weights OIHW[16o][16i] (`O/16 x C/16 x KH x KW x 16 x 16`), bias
`O/16 x 1 x 16` int32, output `N x O/16 x OH x OW x 1 x 16` int8. No im2col: each
output tile (`tob` channel blocks x `toh` rows x the whole width) accumulates over
input-channel chunks (`tcb` blocks) whose input rows (with the conv's zero padding done
by the DMA) and weights are loaded into the scratchpads; the GEMM micro-kernel walks
rows x columns (the hardware loop) over the (channel block, kh, kw) micro-ops.

`build_conv_kernel` emits the schedule as `loop` IR: DMA steps as plain copy nests
(`load_inp/load_wgt/load_bias/store.r/c/b/e`, the conv padding as an in-bounds guard),
the reset and the GEMM as scalar nests (`reset.b/o`, `gemm.b/o/k`), all of which
`tensorize` turns into VTA intrinsic calls (`layers.TENSORIZE_STEPS`); the ALU
epilogue as `vta.alu(_imm)` calls; and the tiles of one thread group under a `vthread` loop (the
`virtual-threads` pass interleaves them and inserts the dependency tokens). Every
thread owns 1/T of each scratchpad.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import cast

from xdsl.dialects import affine, arith, func, scf
from xdsl.dialects.builtin import (
    AffineMapAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    ModuleOp,
    StringAttr,
    UnitAttr,
    i64,
)
from xdsl.ir import Block, Region, SSAValue
from xdsl.ir.affine import AffineExpr, AffineMap

from xweave.accel.loop_builder import LoopBuilder, linear
from xweave.accel.vta.config import DEFAULT, HardwareConfig
from xweave.dialects import loop
from xweave.errors import XweaveError

__all__ = ["ConvPlan", "LayerTooLargeError", "build_conv_kernel", "choose_plan"]


class LayerTooLargeError(XweaveError):
    """No tiling of the layer fits the accelerator's scratchpads."""


@dataclass(frozen=True)
class ConvPlan:
    n: int
    cb: int  # input channel blocks
    h: int
    w: int
    ob: int  # output channel blocks
    kh: int
    kw: int
    sh: int
    sw: int
    pt: int
    pl: int
    pb: int
    pr: int
    tob: int
    toh: int
    tcb: int
    threads: int
    has_bias: bool
    shift: int
    relu: bool

    @property
    def oh(self) -> int:
        return (self.h + self.pt + self.pb - self.kh) // self.sh + 1

    @property
    def ow(self) -> int:
        return (self.w + self.pl + self.pr - self.kw) // self.sw + 1

    @property
    def rows_in(self) -> int:
        return (self.toh - 1) * self.sh + self.kh

    @property
    def cols_in(self) -> int:
        return (self.ow - 1) * self.sw + self.kw

    @property
    def n_tiles(self) -> int:
        return (self.ob // self.tob) * (self.oh // self.toh)

    @property
    def inp_size(self) -> int:
        return self.tcb * self.rows_in * self.cols_in

    @property
    def wgt_size(self) -> int:
        return self.tob * self.tcb * self.kh * self.kw

    @property
    def acc_size(self) -> int:
        return self.tob * self.toh * self.ow + (self.tob if self.has_bias else 0)

    @property
    def alu_ops(self) -> list[tuple[str, int | None]]:
        ops: list[tuple[str, int | None]] = []
        if self.has_bias:
            ops.append(("add", None))
        if self.shift:
            ops.append(("shr", self.shift))
        ops.append(("min", 127))
        ops.append(("max", 0 if self.relu else -128))
        return ops

    def fits(self, c: HardwareConfig) -> bool:
        t = self.threads
        return (
            t * self.inp_size <= c.inp_depth
            and t * self.wgt_size <= c.wgt_depth
            and t * self.acc_size <= c.acc_depth
            and self.n_tiles % t == 0
            and max(self.pt, self.pb, self.pl, self.pr) < 16
        )

    def estimate_cycles(self, c: HardwareConfig) -> float:
        """Cycles of the run by a chunk-level model of the three in-order modules and
        their tokens (for choosing tiles; the simulator has the real count)."""
        def dma(rows: int, elems: int, elem_bytes: int) -> float:
            return (c.insn_overhead_cycles + c.dram_latency_cycles
                    + rows * elems * elem_bytes / c.dram_bytes_per_cycle + rows * c.dma_row_overhead_cycles)

        kk = self.kh * self.kw
        ncc = self.cb // self.tcb
        pts = self.tob * self.toh * self.ow
        reset = 6 + pts + (dma(1, self.tob, c.acc_elem_bytes) if self.has_bias else 0)
        gemm = 6 + pts * self.tcb * kk
        alu = len(self.alu_ops) * (6 + 2 * pts)
        load = self.tcb * dma(self.rows_in, self.cols_in, c.inp_elem_bytes) + dma(self.tob, self.tcb * kk, c.wgt_elem_bytes)
        store = dma(self.tob, self.toh * self.ow, c.out_elem_bytes)
        t_n = self.threads
        ld = cp = st = 0.0
        buf_free = [0.0] * t_n
        acc_free = [0.0] * t_n
        ready = [0.0] * t_n
        for _ in range(self.n * self.n_tiles // t_n):
            for t in range(t_n):
                cp = max(cp, acc_free[t]) + reset
            for _ in range(ncc):
                for t in range(t_n):
                    ld = max(ld, buf_free[t]) + load
                    ready[t] = ld
                for t in range(t_n):
                    cp = max(cp, ready[t]) + gemm
                    buf_free[t] = cp
            done = []
            for t in range(t_n):
                cp += alu
                done.append(cp)
            for t in range(t_n):
                st = max(st, done[t]) + store
                acc_free[t] = st
        return max(ld, cp, st)


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def choose_plan(
    n: int, cb: int, h: int, w: int, ob: int, kh: int, kw: int, strides: tuple[int, int],
    pads: tuple[int, int, int, int], has_bias: bool, shift: int, relu: bool,
    threads: int, config: HardwareConfig = DEFAULT,
) -> ConvPlan:
    """The tiling and thread count (at most `threads` virtual threads) with the lowest
    estimated cycle count that fits the scratchpads. More threads split the scratchpads
    into smaller tiles; when that costs more DRAM traffic than the overlap gains (small
    1x1 layers), fewer threads win."""
    pt, pl, pb, pr = pads
    oh = (h + pt + pb - kh) // strides[0] + 1
    best = None
    for t in range(threads, 0, -1):
        for tob, toh, tcb in itertools.product(_divisors(ob), _divisors(oh), _divisors(cb)):
            p = ConvPlan(n, cb, h, w, ob, kh, kw, strides[0], strides[1], pt, pl, pb, pr,
                         tob, toh, tcb, t, has_bias, shift, relu)
            if not p.fits(config):
                continue
            cost = p.estimate_cycles(config)
            if best is None or cost < best[0]:
                best = (cost, p)
    if best is not None:
        return best[1]
    raise LayerTooLargeError(
        f"conv2d with {cb * 16} input channels, {h}x{w} input, {kh}x{kw} kernel: even one "
        "output row of one channel block does not fit the accelerator's scratchpads"
    )


# --------------------------------------------------------------------------------------
# Loop IR
# --------------------------------------------------------------------------------------

def build_conv_kernel(plan: ConvPlan, config: HardwareConfig = DEFAULT, *, tensorized: bool = False,
                      name: str = "conv2d") -> ModuleOp:
    """The schedule of `plan` as a module holding one kernel `func.func @name(data,
    weight, [bias,] out)`; see the module docstring."""
    p, c = plan, config
    i8, i32 = IntegerType(8), IntegerType(32)
    kk = p.kh * p.kw
    data_t = MemRefType(i8, [p.n, p.cb, p.h, p.w, c.batch, c.block_in])
    wgt_t = MemRefType(i8, [p.ob, p.cb, p.kh, p.kw, c.block_out, c.block_in])
    bias_t = MemRefType(i32, [p.ob, c.batch, c.block_out])
    out_t = MemRefType(i8, [p.n, p.ob, p.oh, p.ow, c.batch, c.block_out])
    arg_types = [data_t, wgt_t] + ([bias_t] if p.has_bias else []) + [out_t]
    body = Block(arg_types=arg_types)
    args = list(body.args)
    data, weight = args[0], args[1]
    bias = args[2] if p.has_bias else None
    out = args[-1]
    for a, nm in zip(args, ["data", "weight"] + (["bias"] if p.has_bias else []) + ["out"]):
        a.name_hint = nm
    em = LoopBuilder(body)
    scope = lambda s: loop.ScopeAttr(f"vta.{s}")  # noqa: E731
    inp_s = em.add(loop.AllocOp(MemRefType(i8, [c.inp_depth, c.batch, c.block_in], memory_space=scope("inp")))).memref
    wgt_s = em.add(loop.AllocOp(MemRefType(i8, [c.wgt_depth, c.block_out, c.block_in], memory_space=scope("wgt")))).memref
    acc_s = em.add(loop.AllocOp(MemRefType(i32, [c.acc_depth, c.batch, c.block_out], memory_space=scope("acc")))).memref
    inp_s.name_hint, wgt_s.name_hint, acc_s.name_hint = "inp", "wgt_buf", "acc"

    def nest(loop_op):
        em.open(loop_op.body.block)
        return loop_op.induction_var

    def close(k: int = 1):
        for _ in range(k):
            em.close()

    n_h = p.oh // p.toh
    n_v = nest(em.for_(p.n, "conv.n"))
    tt = nest(em.for_(p.n_tiles // p.threads, "conv.tile"))
    v = nest(em.for_(p.threads, "conv.vthread", loop.ForKind.VTHREAD))
    # tile = tt*T + v; output block tile = tile // n_h, row tile = tile % n_h
    tile = AffineExpr.dimension(0) * p.threads + AffineExpr.dimension(1)
    ot_e, ht_e = tile // n_h, tile % n_h

    def ht_at(d):
        return d("ht")

    def acc_at(*terms):
        return [linear(*terms), 0, 0]

    ibase, wbase, abase = (linear((s, v)) for s in (p.inp_size, p.wgt_size, p.acc_size))
    bias_slot = linear(abase, p.tob * p.toh * p.ow)

    def call(callee, accesses, params=None):
        _call_with_tiles(em, callee, accesses, params, tt, v, ot_e, ht_e)

    def copy(prefix: str, extents: tuple[int, ...], dst, src, narrow: bool = False, guard=None):
        """A plain copy nest `prefix.r/c` (window) x `prefix.b/e` (element) that
        `tensorize` turns into a DMA intrinsic; `dst`/`src` give (buffer, leading
        index entries) for window indices (r, c); `guard(r, c)` the in-bounds test of
        a padded read, as (entry, size) pairs."""
        wv = [nest(em.for_(e, f"{prefix}.{nm}")) for e, nm in zip(extents, "rc"[2 - len(extents):])]
        (sbuf, sidx), (dbuf, didx) = src(*wv), dst(*wv)
        elem_shape = cast(MemRefType, sbuf.type).get_shape()[-2:]
        bv = nest(em.for_(elem_shape[0], f"{prefix}.b"))
        ev = nest(em.for_(elem_shape[1], f"{prefix}.e"))
        load = loop.LoadOp(sbuf, *_resolve(em, [sidx + [bv, ev]], tt, v, ot_e, ht_e, single=True))
        if guard is None:
            value = em.add(load).result
        else:
            value = _padded(em, load, guard(*wv), tt, v, ot_e, ht_e)
        if narrow:
            value = em.add(arith.TruncIOp(value, IntegerType(8))).result
        em.add(loop.StoreOp(value, dbuf, *_resolve(em, [didx + [bv, ev]], tt, v, ot_e, ht_e, single=True)))
        close(len(extents) + 2)

    if p.has_bias:
        copy("load_bias", (p.tob,), lambda c: (acc_s, [linear(bias_slot, c)]),
             lambda c: (bias, [_tile_plus("ot", p.tob, 0, c)]))
    r = nest(em.for_(p.toh, "reset.r"))
    col = nest(em.for_(p.ow, "reset.c"))
    a = nest(em.for_(p.tob, "reset.a"))
    _scalar_reset(em, c, acc_s, linear(abase, (p.toh * p.ow, a), (p.ow, r), col))
    close(3)

    cc = nest(em.for_(p.cb // p.tcb, "conv.rc"))
    ci = nest(em.for_(p.tcb, "load.ci"))
    copy("load_inp", (p.rows_in, p.cols_in),
         lambda r, c: (inp_s, [linear(ibase, (p.rows_in * p.cols_in, ci), (p.cols_in, r), c)]),
         lambda r, c: (data, [n_v, linear((p.tcb, cc), ci), _tile_plus("ht", p.toh * p.sh, -p.pt, r), linear(-p.pl, c)]),
         guard=lambda r, c: [(_tile_plus("ht", p.toh * p.sh, -p.pt, r), p.h), (linear(-p.pl, c), p.w)])
    close()

    def wgt_cols(cc_v, c):  # window column c -> (channel block, ky, kx) of the weights
        if kk == 1:
            return [linear((p.tcb, cc_v), c), 0, 0]
        return [lambda d: d(cc_v) * p.tcb + d(c) // kk,
                lambda d: (d(c) // p.kw) % p.kh, lambda d: d(c) % p.kw]

    copy("load_wgt", (p.tob, p.tcb * kk), lambda r, c: (wgt_s, [linear(wbase, (p.tcb * kk, r), c)]),
         lambda r, c: (weight, [_tile_plus("ot", p.tob, 0, r), *wgt_cols(cc, c)]))
    r = nest(em.for_(p.toh, "gemm.r"))
    col = nest(em.for_(p.ow, "gemm.c"))
    a = nest(em.for_(p.tob, "gemm.a"))
    ci = nest(em.for_(p.tcb, "gemm.ci"))
    ky = nest(em.for_(p.kh, "gemm.kh"))
    kx = nest(em.for_(p.kw, "gemm.kw"))
    dst = linear(abase, (p.toh * p.ow, a), (p.ow, r), col)
    src = linear(ibase, (p.rows_in * p.cols_in, ci), (p.sh * p.cols_in, r), (p.cols_in, ky), (p.sw, col), kx)
    wsrc = linear(wbase, (p.tcb * kk, a), (kk, ci), (p.kw, ky), kx)
    if tensorized:
        call("vta.gemm", [(acc_s, acc_at(dst)), (inp_s, acc_at(src)), (wgt_s, acc_at(wsrc))])
    else:
        _scalar_gemm(em, c, acc_s, inp_s, wgt_s, dst, src, wsrc, v)
    close(7)

    for op_name, imm in p.alu_ops:
        r = nest(em.for_(p.toh, f"alu.{op_name}.r"))
        col = nest(em.for_(p.ow, f"alu.{op_name}.c"))
        a = nest(em.for_(p.tob, f"alu.{op_name}.a"))
        d = linear(abase, (p.toh * p.ow, a), (p.ow, r), col)
        if imm is None:
            call("vta.alu", [(acc_s, acc_at(d)), (acc_s, acc_at(bias_slot, a))], {"op": op_name})
        else:
            call("vta.alu_imm", [(acc_s, acc_at(d))], {"op": op_name, "imm": imm})
        close(3)
    copy("store", (p.tob, p.toh * p.ow), lambda r, c: (
        out, [n_v, _tile_plus("ot", p.tob, 0, r), lambda d: ht_at(d) * p.toh + d(c) // p.ow, lambda d: d(c) % p.ow]),
        lambda r, c: (acc_s, [linear(abase, (p.toh * p.ow, r), c)]), narrow=True)
    close(3)
    body.add_op(func.ReturnOp())
    f = func.FuncOp(name, (arg_types, []), Region(body))
    return ModuleOp([f])


def _tile_plus(which: str, scale: int, off: int, extra) -> object:
    """The index entry `which * scale + off + extra` (`which`: "ot" or "ht", the output
    block / row tile, affine in the tile loop and the thread index)."""
    return lambda d: d(which) * scale + off + _entry(extra, d)


def _entry(e, d) -> AffineExpr:
    """An index entry as an AffineExpr; `d(key)` gives the expression of a value or tile key."""
    if isinstance(e, int):
        return AffineExpr.constant(e)
    if isinstance(e, SSAValue):
        return d(e)
    if isinstance(e, tuple) and isinstance(e[0], str):
        which, scale, *off = e
        return d(which) * scale + (off[0] if off else 0)
    if isinstance(e, dict):
        expr = AffineExpr.constant(e.get(1, 0))
        for k, coef in e.items():
            if k != 1 and coef:
                expr = expr + d(k) * coef
        return expr
    if callable(e):
        return e(d)
    raise TypeError(f"bad index entry {e!r}")


def _resolve(em: LoopBuilder, accesses: list[list], tt, v, ot_e, ht_e, single: bool = False):
    """(values, maps) of index entry lists: the tile keys are affine in (tt, v); values
    no map uses are dropped. With `single`, (values, the one map)."""
    values: list[SSAValue] = [tt, v]

    def d(key) -> AffineExpr:
        if key == "ot":
            return ot_e
        if key == "ht":
            return ht_e
        if key not in values:
            values.append(key)
        return AffineExpr.dimension(values.index(key))

    exprs = [[_entry(e, d) for e in idx] for idx in accesses]
    maps = [AffineMap(len(values), 0, tuple(x)) for x in exprs]
    keep = sorted({i for m in maps for x in m.results for i in x.used_dims()})
    remap = [AffineExpr.dimension(keep.index(i)) if i in keep else AffineExpr.constant(0) for i in range(len(values))]
    maps = [AffineMap(len(keep), 0, tuple(x.replace_dims_and_symbols(remap, ()) for x in m.results)) for m in maps]
    vals = [values[i] for i in keep]
    return (vals, maps[0]) if single else (vals, maps)


def _padded(em: LoopBuilder, load: loop.LoadOp, guards, tt, v, ot_e, ht_e) -> SSAValue:
    """`0 <= g < size for every (g, size) in guards ? load : 0` (a lazily padded read)."""
    conds = []
    for entry, size in guards:
        vals, m = _resolve(em, [[entry]], tt, v, ot_e, ht_e, single=True)
        idx = em.add(affine.ApplyOp(vals, AffineMapAttr(m))).result
        zero = em.add(arith.ConstantOp(IntegerAttr(0, IndexType()))).result
        bound = em.add(arith.ConstantOp(IntegerAttr(size, IndexType()))).result
        conds.append(em.add(arith.CmpiOp(idx, zero, "sge")).result)
        conds.append(em.add(arith.CmpiOp(idx, bound, "slt")).result)
    cond = conds[0]
    for other in conds[1:]:
        cond = em.add(arith.AndIOp(cond, other)).result
    et = cast(MemRefType, load.memref.type).get_element_type()
    zero_el = arith.ConstantOp(IntegerAttr(0, et))
    return em.add(scf.IfOp(cond, [et], [load, scf.YieldOp(load.result)], [zero_el, scf.YieldOp(zero_el.result)])).results[0]


def _call_with_tiles(em: LoopBuilder, callee, accesses, params, tt, v, ot_e, ht_e) -> None:
    """`loop.intrinsic callee(...)`, where index entries may use the tile keys "ot"/"ht"."""
    vals, maps = _resolve(em, [idx for _, idx in accesses], tt, v, ot_e, ht_e)
    attrs = None
    if params:
        attrs = {}
        for k, val in params.items():
            if val is True:
                attrs[k] = UnitAttr()
            elif isinstance(val, str):
                attrs[k] = StringAttr(val)
            else:
                attrs[k] = IntegerAttr(val, i64)
    em.add(loop.IntrinsicOp(callee, [b for b, _ in accesses], vals, maps, attrs))


def _scalar_reset(em: LoopBuilder, c: HardwareConfig, acc_s, dst) -> None:
    """acc[dst, b, o] = 0 as plain loops (`tensorize` makes it `vta.fill_zero`)."""
    lb = em.add(loop.ForOp(0, c.batch, 1, loop.ForKind.SERIAL, name="reset.b"))
    em.open(lb.body.block)
    lo = em.for_(c.block_out, "reset.o")
    em.open(lo.body.block)
    zero = em.add(arith.ConstantOp(IntegerAttr(0, IntegerType(32)))).result
    values, (m,) = em.maps([[dst, lb.induction_var, lo.induction_var]])
    em.add(loop.StoreOp(zero, acc_s, values, m))
    em.close()
    em.close()


def _scalar_gemm(em: LoopBuilder, c: HardwareConfig, acc_s, inp_s, wgt_s, dst, src, wsrc, v) -> None:
    """acc[dst, b, o] += ext(inp[src, b, k]) * ext(wgt[wsrc, o, k]) as plain loops."""
    b = em.blocks
    lb = em.for_(c.batch, "gemm.b")
    b.append(lb.body.block)
    lo = em.for_(c.block_out, "gemm.o")
    b.append(lo.body.block)
    lk = em.for_(c.block_in, "gemm.k")
    b.append(lk.body.block)
    bv, ov, kv = lb.induction_var, lo.induction_var, lk.induction_var
    i32 = IntegerType(32)

    def load(buf, first, second, third):
        values, (m,) = em.maps([[first, second, third]])
        return em.add(loop.LoadOp(buf, values, m)).result

    x = load(acc_s, dst, bv, ov)
    a = load(inp_s, src, bv, kv)
    w = load(wgt_s, wsrc, ov, kv)
    ae = em.add(arith.ExtSIOp(a, i32)).result
    we = em.add(arith.ExtSIOp(w, i32)).result
    prod = em.add(arith.MuliOp(ae, we)).result
    s = em.add(arith.AddiOp(x, prod)).result
    values, (m,) = em.maps([[dst, bv, ov]])
    em.add(loop.StoreOp(s, acc_s, values, m))
    b.pop()
    b.pop()
    b.pop()
