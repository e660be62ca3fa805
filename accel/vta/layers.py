"""Int8 conv2d / dense layers on the VTA-like accelerator (public entry points).

Semantics shared by the compiled path and the numpy references:

    acc = conv2d(data, weight) (+ bias), int32 accumulation
    out = clip(acc >> shift, -128, 127)   (arithmetic shift)
    out = max(out, 0) if relu
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from xdsl.context import Context

from xweave.accel.api import get_accelerator
from xweave.accel.vta.config import DEFAULT, HardwareConfig
from xweave.accel.vta.conv_schedule import build_conv_kernel, choose_plan
from xweave.accel.vta.encoding import disassemble, encode_program
from xweave.accel.vta.lowering import lower_function
from xweave.accel.vta.target import make_vta_accelerator, simulate_lowered
from xweave.passes.tensorize import TensorizePass
from xweave.passes.virtual_threads import VirtualThreadsPass

__all__ = ["conv2d_int8", "dense_int8", "plan_conv2d", "reference_conv2d_int8", "reference_dense_int8"]


def _pair(v, name: str) -> tuple[int, int]:
    if isinstance(v, int):
        return (v, v)
    v = tuple(int(x) for x in v)
    if len(v) != 2:
        raise ValueError(f"{name} must be an int or a pair, got {v!r}")
    return v


def _pads4(pads) -> tuple[int, int, int, int]:
    """(top, left, bottom, right) from an int, a (h, w) pair or an ONNX-style 4-tuple."""
    if isinstance(pads, int):
        return (pads,) * 4
    pads = tuple(int(p) for p in pads)
    if len(pads) == 2:
        return (pads[0], pads[1], pads[0], pads[1])
    if len(pads) == 4:
        return pads
    raise ValueError(f"pads must be an int, (h, w) or (top, left, bottom, right); got {pads!r}")


def _requantize(acc: np.ndarray, shift: int, relu: bool) -> np.ndarray:
    out = np.clip(acc >> shift, -128, 127)
    if relu:
        out = np.maximum(out, 0)
    return out.astype(np.int8)


def reference_conv2d_int8(
    data: np.ndarray,
    weight: np.ndarray,
    bias: np.ndarray | None,
    strides: int | Sequence[int] = 1,
    pads: int | Sequence[int] = 0,
    shift: int = 0,
    relu: bool = False,
) -> np.ndarray:
    """numpy reference: int8 NCHW conv2d, int32 accumulation, requantized to int8."""
    sh, sw = _pair(strides, "strides")
    pt, pl, pb, pr = _pads4(pads)
    n, c, h, w = data.shape
    o, c2, kh, kw = weight.shape
    if c != c2:
        raise ValueError(f"data has {c} channels but weight expects {c2}")
    x = np.pad(data.astype(np.int32), ((0, 0), (0, 0), (pt, pb), (pl, pr)))
    oh = (h + pt + pb - kh) // sh + 1
    ow = (w + pl + pr - kw) // sw + 1
    acc = np.zeros((n, o, oh, ow), dtype=np.int32)
    wt = weight.astype(np.int32)
    for i in range(kh):
        for j in range(kw):
            patch = x[:, :, i : i + sh * (oh - 1) + 1 : sh, j : j + sw * (ow - 1) + 1 : sw]
            acc += np.einsum("nchw,oc->nohw", patch, wt[:, :, i, j], dtype=np.int32)
    if bias is not None:
        acc += np.asarray(bias, dtype=np.int32)[None, :, None, None]
    return _requantize(acc, shift, relu)


def reference_dense_int8(
    data: np.ndarray, weight: np.ndarray, bias: np.ndarray | None, shift: int = 0, relu: bool = False
) -> np.ndarray:
    """numpy reference: int8 dense (data[N,K] . weight[M,K]^T), int32 accumulation, int8 out."""
    acc = data.astype(np.int32) @ weight.astype(np.int32).T
    if bias is not None:
        acc = acc + np.asarray(bias, dtype=np.int32)[None, :]
    return _requantize(acc, shift, relu)


def _blocks(n: int, block: int) -> int:
    return -(-n // block)


def pack_data(data: np.ndarray, config: HardwareConfig = DEFAULT) -> np.ndarray:
    """NCHW int8 -> N x C/16 x H x W x 1 x 16 (channels zero-padded to a block)."""
    n, c, h, w = data.shape
    cb = _blocks(c, config.block_in)
    x = np.zeros((n, cb * config.block_in, h, w), np.int8)
    x[:, :c] = data
    return np.ascontiguousarray(x.reshape(n, cb, config.block_in, h, w).transpose(0, 1, 3, 4, 2)[:, :, :, :, None, :])


def pack_weight(weight: np.ndarray, config: HardwareConfig = DEFAULT) -> np.ndarray:
    """OIHW int8 -> O/16 x I/16 x KH x KW x 16(o) x 16(i)."""
    o, c, kh, kw = weight.shape
    ob, cb = _blocks(o, config.block_out), _blocks(c, config.block_in)
    w = np.zeros((ob * config.block_out, cb * config.block_in, kh, kw), np.int8)
    w[:o, :c] = weight
    w = w.reshape(ob, config.block_out, cb, config.block_in, kh, kw)
    return np.ascontiguousarray(w.transpose(0, 2, 4, 5, 1, 3))


def compile_conv2d(plan, config: HardwareConfig = DEFAULT):
    """The compiled program of a planned layer: schedule -> tensorize -> virtual-threads
    -> convert-loop-to-vta. Returns the `LoweredProgram` (cached per plan)."""
    key = (plan, config)
    if key not in _CACHE:
        acc = get_accelerator("vta") if config == DEFAULT else make_vta_accelerator(config)
        module = build_conv_kernel(plan, config)
        ctx = Context()
        for intrinsic, name in TENSORIZE_STEPS:
            if intrinsic != "vta.load_acc" or plan.has_bias:
                TensorizePass(intrinsic=intrinsic, loop=name).apply(ctx, module)
        VirtualThreadsPass().apply(ctx, module)
        (f,) = module.ops
        _CACHE[key] = lower_function(f, acc, config)  # type: ignore[arg-type]
        if len(_CACHE) > 64:
            _CACHE.pop(next(iter(_CACHE)))
    return _CACHE[key]


_CACHE: dict = {}

TENSORIZE_STEPS = (
    ("vta.load_acc", "load_bias.c"), ("vta.fill_zero", "reset.b"), ("vta.load_inp", "load_inp.r"),
    ("vta.load_wgt", "load_wgt.r"), ("vta.gemm", "gemm.b"), ("vta.store", "store.r"),
)
"""(intrinsic, loop) pairs `tensorize` applies to the conv schedule: every DMA and
GEMM step of the program comes from a plain loop nest."""


def conv2d_int8(
    data: np.ndarray,
    weight: np.ndarray,
    bias: np.ndarray | None,
    strides: int | Sequence[int] = 1,
    pads: int | Sequence[int] = 0,
    shift: int = 0,
    relu: bool = False,
    config: HardwareConfig = DEFAULT,
    virtual_threads: int = 2,
):
    """Run an int8 conv2d layer on the simulated accelerator -> (int8 NCHW output, SimReport).

    `pads` is an int, (h, w) or (top, left, bottom, right). `virtual_threads` is the most
    virtual threads the schedule may use (1 = serialized); the tile plan and thread count
    with the lowest modeled cycle count are chosen (`plan_conv2d` shows the choice)."""
    data, weight = np.asarray(data), np.asarray(weight)
    if data.ndim != 4 or weight.ndim != 4:
        raise ValueError(f"conv2d_int8: data must be NCHW and weight OIHW, got {data.shape} and {weight.shape}")
    if data.dtype != np.int8 or weight.dtype != np.int8:
        raise ValueError(f"conv2d_int8: data and weight must be int8, got {data.dtype} and {weight.dtype}")
    n, c, h, w = data.shape
    o, c2, kh, kw = weight.shape
    if c != c2:
        raise ValueError(f"conv2d_int8: data has {c} channels but weight expects {c2}")
    if not 0 <= shift < config.acc_bits:
        raise ValueError(f"conv2d_int8: shift must be in [0, {config.acc_bits}), got {shift}")
    if virtual_threads < 1:
        raise ValueError(f"conv2d_int8: virtual_threads must be >= 1, got {virtual_threads}")
    sh, sw = _pair(strides, "strides")
    pt, pl, pb, pr = _pads4(pads)
    cb, ob = _blocks(c, config.block_in), _blocks(o, config.block_out)
    plan = choose_plan(n, cb, h, w, ob, kh, kw, (sh, sw), (pt, pl, pb, pr), bias is not None,
                       shift, relu, virtual_threads, config)
    lowered = compile_conv2d(plan, config)
    inputs = {0: pack_data(data, config), 1: pack_weight(weight, config)}
    if bias is not None:
        b = np.zeros(ob * config.block_out, np.int32)
        b[:o] = np.asarray(bias, dtype=np.int32)
        inputs[2] = b.reshape(ob, 1, config.block_out)
    outputs, report = simulate_lowered(lowered, inputs, config)
    (packed,) = outputs.values()
    # N x OB x OH x OW x 1 x 16 -> NCHW
    out = packed[:, :, :, :, 0, :].transpose(0, 1, 4, 2, 3).reshape(n, ob * config.block_out, plan.oh, plan.ow)
    return np.ascontiguousarray(out[:, :o]), report


def conv2d_listing(data_shape, weight_shape, bias: bool, strides=1, pads=0, shift=0,
                   relu=False, config: HardwareConfig = DEFAULT, virtual_threads: int = 2) -> str:
    """The program `conv2d_int8` runs for these shapes, disassembled (`encoding.disassemble`:
    one line per instruction and micro-op)."""
    plan = plan_conv2d(data_shape, weight_shape, bias, strides, pads, shift, relu, config,
                       virtual_threads)
    program = compile_conv2d(plan, config).program
    return disassemble(*encode_program(program, config), config)  # pyright: ignore[reportArgumentType]


def plan_conv2d(data_shape, weight_shape, bias: bool, strides=1, pads=0, shift=0, relu=False,
                config: HardwareConfig = DEFAULT, virtual_threads: int = 2):
    """The `ConvPlan` (tiles, threads used) `conv2d_int8` would choose for these shapes."""

    n, c, h, w = data_shape
    o, _, kh, kw = weight_shape
    return choose_plan(n, _blocks(c, config.block_in), h, w, _blocks(o, config.block_out), kh, kw,
                       _pair(strides, "strides"), _pads4(pads), bias, shift, relu, virtual_threads, config)


def dense_int8(
    data: np.ndarray,
    weight: np.ndarray,
    bias: np.ndarray | None,
    shift: int = 0,
    relu: bool = False,
    config: HardwareConfig = DEFAULT,
    virtual_threads: int = 2,
):
    """Run an int8 dense layer on the simulated accelerator -> (int8 [N, M] output, SimReport).

    A dense layer is a 1x1 conv whose width is the batch: data[N, K] is one image of K
    channels, 1 x N pixels."""
    data, weight = np.asarray(data), np.asarray(weight)
    if data.ndim != 2 or weight.ndim != 2 or data.shape[1] != weight.shape[1]:
        raise ValueError(f"dense_int8: expected data[N, K] and weight[M, K], got {data.shape} and {weight.shape}")
    img = np.ascontiguousarray(data.T[None, :, None, :])  # 1 x K x 1 x N
    out, report = conv2d_int8(img, weight[:, :, None, None], bias, 1, 0, shift, relu, config, virtual_threads)
    return np.ascontiguousarray(out[0, :, 0, :].T), report
