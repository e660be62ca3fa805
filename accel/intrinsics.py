"""Tensor-intrinsic declarations: the `te` computations hardware instructions perform.

These builders return `(output, inputs)` pairs of `xweave.te` tensors that an
accelerator passes to `TensorIntrinsic` (see `xweave.accel.api`). They describe *what*
an instruction computes on its small operand tiles; `tensorize` matches loop nests
against them (same reduction, index pattern and dtypes).
"""

from __future__ import annotations

from xweave import te

__all__ = ["copy_decl", "fill_zero_decl", "gemm_decl"]


def gemm_decl(
    batch: int, block_in: int, block_out: int, in_dtype: str = "int8", acc_dtype: str = "int32",
    *, names: tuple[str, str, str] = ("acc", "inp", "wgt"),
) -> tuple[te.Tensor, tuple[te.Tensor, te.Tensor]]:
    """acc[b, o] = sum_k cast(inp[b, k]) * cast(wgt[o, k]): a (batch x block_in) .
    (block_out x block_in)^T product accumulated at `acc_dtype` (VTA's GEMM core)."""
    acc_name, inp_name, wgt_name = names
    inp = te.placeholder((batch, block_in), in_dtype, name=inp_name)
    wgt = te.placeholder((block_out, block_in), in_dtype, name=wgt_name)
    k = te.reduce_axis(block_in, name="k")
    out = te.compute(
        (batch, block_out),
        lambda b, o: te.sum(te.cast(inp[b, k], acc_dtype) * te.cast(wgt[o, k], acc_dtype), axis=k),
        name=acc_name,
    )
    return out, (inp, wgt)


def fill_zero_decl(shape: tuple[int, ...], dtype: str = "int32", name: str = "acc") -> te.Tensor:
    """out[...] = 0 (a reset of an accumulator tile)."""
    return te.compute(shape, lambda *i: te.const(0, dtype), name=name)


def copy_decl(
    shape: tuple[int, ...], dtype: str, *, names: tuple[str, str] = ("dst", "src"),
    cast_to: str | None = None,
) -> tuple[te.Tensor, tuple[te.Tensor]]:
    """dst[...] = src[...] (a DMA copy between memory scopes); with `cast_to`, each
    element is converted on the way (e.g. int32 accumulators stored as int8)."""
    src = te.placeholder(shape, dtype, name=names[1])
    if cast_to is None:
        dst = te.compute(shape, lambda *i: src[i], name=names[0])
    else:
        dst = te.compute(shape, lambda *i: te.cast(src[i], cast_to), name=names[0])
    return dst, (src,)
