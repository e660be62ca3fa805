"""A dense layer on the gemm8x8 unit, end to end: schedule -> tensorize -> lower -> simulate.

`dense(x, w, bias)` computes y = x . w^T (+ bias), int8 x int8 -> int32, as the unit
runs it. The host packs the operands into 8x8 tiles (`MB x KB x 8 x 8`, zero-padded;
K to a multiple of 16 so that tiles alternate between two buffer halves), the schedule
(`build_dense_kernel`) is plain loop IR over those tiles, and the generic `tensorize`
pass turns each scalar nest into an intrinsic call of the unit.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from xdsl.context import Context
from xdsl.dialects import arith, func
from xdsl.dialects.builtin import IntegerType, MemRefType, ModuleOp, i32
from xdsl.ir import Block, Region

from xweave.accel.api import LoweredProgram, get_accelerator
from xweave.accel.loop_builder import LoopBuilder
from xweave.dialects import loop
from xweave.passes.tensorize import TensorizePass

from .accelerator import ACC, BUF, NAME

T = 8

#: (loop name, intrinsic) for every nest of the schedule, in tensorize order.
NESTS = (("init.i", "fill_zero"), ("bias.i", "load_acc"), ("ldx.i", "load_tile"),
         ("ldw.i", "load_tile"), ("mm.i", "gemm_add"), ("st.i", "store_tile"))


def build_dense_kernel(mb: int, nb: int, kb: int, has_bias: bool) -> ModuleOp:
    """`func.func @dense(x: MBxKBx8x8 i8, w: NBxKBx8x8 i8, [b: NBx8x8 i32], y: MBxNBx8x8 i32)`
    as scalar loop nests over 8x8 tiles (`kb` even: tile pairs use buffer halves 0/1)."""
    assert kb % 2 == 0
    i8 = IntegerType(8)
    types = [MemRefType(i8, [mb, kb, T, T]), MemRefType(i8, [nb, kb, T, T])]
    if has_bias:
        types.append(MemRefType(i32, [nb, T, T]))
    types.append(MemRefType(i32, [mb, nb, T, T]))
    body = Block(arg_types=types)
    x, w, y = body.args[0], body.args[1], body.args[-1]
    bias = body.args[2] if has_bias else None
    for arg, name in zip(body.args, ["x", "w", "b", "y"] if has_bias else ["x", "w", "y"]):
        arg.name_hint = name
    b = LoopBuilder(body)
    buf = b.add(loop.AllocOp(MemRefType(i8, [4, T, T], memory_space=loop.ScopeAttr(BUF)))).memref
    acc = b.add(loop.AllocOp(MemRefType(i32, [1, T, T], memory_space=loop.ScopeAttr(ACC)))).memref
    buf.name_hint, acc.name_hint = "buf", "acc"

    m = b.loop(mb, "dense.m")
    n = b.loop(nb, "dense.n")
    # acc = 0, or acc = the bias tile
    prefix = "bias" if has_bias else "init"
    i, j = b.loop(T, f"{prefix}.i"), b.loop(T, f"{prefix}.j")
    if bias is not None:
        b.store(b.load(bias, [n, i, j]), acc, [0, i, j])
    else:
        b.store(b.add(arith.ConstantOp.from_int_and_width(0, 32)).result, acc, [0, i, j])
    b.close(2)
    ko, kv = b.loop(kb // 2, "dense.ko"), b.loop(2, "dense.kv")
    k_tile = [(2, ko), (1, kv)]
    i, k = b.loop(T, "ldx.i"), b.loop(T, "ldx.k")
    b.store(b.load(x, [m, k_tile, i, k]), buf, [kv, i, k])
    b.close(2)
    j, k = b.loop(T, "ldw.i"), b.loop(T, "ldw.k")
    b.store(b.load(w, [n, k_tile, j, k]), buf, [[2, (1, kv)], j, k])
    b.close(2)
    i, j, k = b.loop(T, "mm.i"), b.loop(T, "mm.j"), b.loop(T, "mm.k")
    old = b.load(acc, [0, i, j])
    xa = b.add(arith.ExtSIOp(b.load(buf, [kv, i, k]), i32)).result
    wb = b.add(arith.ExtSIOp(b.load(buf, [[2, (1, kv)], j, k]), i32)).result
    prod = b.add(arith.MuliOp(xa, wb)).result
    b.store(b.add(arith.AddiOp(old, prod)).result, acc, [0, i, j])
    b.close(3)
    b.close(2)  # ko, kv
    i, j = b.loop(T, "st.i"), b.loop(T, "st.j")
    b.store(b.load(acc, [0, i, j]), y, [m, n, i, j])
    b.close(2)
    b.close(2)  # m, n
    body.add_op(func.ReturnOp())
    kernel = func.FuncOp("dense", (types, []), Region(body))
    return ModuleOp([kernel])


def tensorize(module: ModuleOp) -> ModuleOp:
    """Every scalar nest of the schedule becomes a call of the unit's intrinsic."""
    names = {lp.name_str for lp in module.walk() if isinstance(lp, loop.ForOp)}
    for nest, intrinsic in NESTS:
        if nest in names:
            TensorizePass(intrinsic=f"{NAME}.{intrinsic}", loop=nest).apply(Context(), module)
    return module


@lru_cache(maxsize=32)
def compile_dense(mb: int, nb: int, kb: int, has_bias: bool) -> LoweredProgram:
    """The program of a tiled dense layer (cached per shape)."""
    acc = get_accelerator(NAME)
    module = tensorize(build_dense_kernel(mb, nb, kb, has_bias))
    (kernel,) = module.ops
    return acc.lower(kernel, acc)


def _tiles(a: np.ndarray, rows: int, cols: int) -> np.ndarray:
    """[R, C] -> [R/8, C/8, 8, 8], zero-padded to rows x cols."""
    padded = np.zeros((rows, cols), a.dtype)
    padded[: a.shape[0], : a.shape[1]] = a
    return np.ascontiguousarray(padded.reshape(rows // T, T, cols // T, T).transpose(0, 2, 1, 3))


def dense(x: np.ndarray, w: np.ndarray, bias: np.ndarray | None = None):
    """y = x . w^T (+ bias) on the simulated unit -> (int32 [M, N], report)."""
    x, w = np.asarray(x), np.asarray(w)
    if x.dtype != np.int8 or w.dtype != np.int8 or x.ndim != 2 or w.ndim != 2 \
            or x.shape[1] != w.shape[1]:
        raise ValueError(f"dense: expected int8 x[M, K] and w[N, K], got {x.dtype} {x.shape} "
                         f"and {w.dtype} {w.shape}")
    (m, k), n = x.shape, w.shape[0]
    mb, nb, kb = -(-m // T), -(-n // T), 2 * -(-k // (2 * T))
    inputs = {0: _tiles(x, mb * T, kb * T), 1: _tiles(w, nb * T, kb * T)}
    if bias is not None:
        b = np.zeros(nb * T, np.int32)
        b[:n] = np.asarray(bias, np.int32)
        inputs[2] = np.ascontiguousarray(np.broadcast_to(b.reshape(nb, 1, T), (nb, T, T)))
    lowered = compile_dense(mb, nb, kb, bias is not None)
    acc = get_accelerator(NAME)
    outputs, report = acc.simulate(lowered, inputs)
    (tiles,) = outputs.values()
    y = tiles.transpose(0, 2, 1, 3).reshape(mb * T, nb * T)
    return np.ascontiguousarray(y[:m, :n]), report
