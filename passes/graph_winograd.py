"""graph-winograd: 3x3 stride-1 convolutions as Winograd F(m x m, 3x3) (Lavin & Gray).

Each eligible `graph.conv2d` or `graph.conv2d_nchwc` (3x3 kernel, stride 1, dilation 1,
groups 1, constant weight and bias, at least `min-channels` input and output channels)
becomes

    V = graph.winograd_input_transform(data)    B^T d B per tile   [a*a][P][C/c][c]
    M = graph.winograd_matmul(V, U)                                 [a*a][P][K]
    Y = graph.winograd_output_transform(M)      A^T M A per tile   the conv's result
    (+ the bias, a broadcast add that fuses into the output transform's kernel)

with a = m + 2, P the output tiles of m x m pixels and U = G g G^T, the weights in
the Winograd domain, computed here with numpy (a constant). The transform matrices
are `xweave.winograd.winograd_matrices` (Cook-Toom); the transforms compile them in
as constants. A tile of m = 4 does 4x fewer multiplies than the direct
convolution, m = 2 2.25x fewer, at some fp32 accuracy (m <= 4 is kept to ~1e-5).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.utils.exceptions import PassFailedException

from xweave.dialects import graph, loop
from xweave.dialects.graph.constants import constant_operand
from xweave.dialects.graph.nn import is_integer_layer
from xweave.dialects.graph.winograd import MAX_TILE
from xweave.winograd import winograd_matrices

def transformed_weight(weight: np.ndarray, tile: int) -> np.ndarray:
    """U = G g G^T of OIHW 3x3 weights [K][C][3][3], as [a*a][C][K]."""
    _, g, _ = winograd_matrices(tile)
    u = np.einsum("ik,ockl,jl->ijco", g, weight.astype(np.float64), g)
    a = tile + 2
    return u.reshape(a * a, *u.shape[2:])


def _const(name: str, array: np.ndarray, before: Operation) -> SSAValue:
    op = graph.ConstantOp.from_array(name, np.ascontiguousarray(array, dtype=np.float32))
    Rewriter.insert_op(op, InsertPoint.before(before))
    return op.result


def _shape(value: SSAValue) -> tuple[int, ...]:
    assert isinstance(value.type, TensorType)
    return tuple(value.type.get_shape())


@dataclass(frozen=True)
class GraphWinogradPass(ModulePass):
    """Rewrite 3x3 stride-1 convolutions (NCHW<k>c, or NCHW too with `nchw`; groups 1,
    constant weights, >= `min-channels` channels in and out) as Winograd
    F(`tile` x `tile`, 3x3)."""

    name = "graph-winograd"

    tile: int = 4
    min_channels: int = 16
    min_pixels: int = 784
    """Smallest output (OH * OW) rewritten. Below it the products are small matmuls
    over weights (a/3)^2 times larger than the conv's, and lose. Measured per conv
    in chains of blocked convs (1 thread, profiled kernels, rewrite forced with
    min-pixels=1), direct vs F(4x4): 56x56 64->64 4.4 vs 1.4 ms, 28x28 128->128 3.1
    vs 1.0 ms, 14x14 256->256 4.1 vs 4.6 ms, 7x7 512->512 worse still (F(2x2) lost
    everywhere to F(4x4) or direct). `bench/conv2d.py --winograd` A/Bs the default."""
    nchw: bool = False
    """Also rewrite NCHW convs (their transforms have no channel lanes to vectorize:
    slower than the direct conv, see bench/conv2d.py)."""

    def eligible(self, conv: Operation) -> bool:
        if not (isinstance(conv, graph.Conv2dNchwcOp) or (self.nchw and isinstance(conv, graph.Conv2dOp))):
            return False
        if is_integer_layer(conv):  # exact integer sums: no transform of the data
            return False
        weight = constant_operand(conv.weight)
        if weight is None or (conv.bias is not None and constant_operand(conv.bias) is None):
            return False
        shape = _shape(conv.weight)
        kh, kw = shape[2], shape[3]
        channels = shape[1] * (shape[4] if len(shape) == 6 else 1)
        out_channels = shape[0] * (shape[5] if len(shape) == 6 else 1)
        out = _shape(conv.results[0])
        return ((kh, kw) == (3, 3) and tuple(conv.strides.get_values()) == (1, 1)
                and out[2] * out[3] >= self.min_pixels
                and tuple(conv.dilations.get_values()) == (1, 1) and conv.groups.value.data == 1
                and min(channels, out_channels) >= self.min_channels)

    def rewrite(self, conv: graph.Conv2dOp | graph.Conv2dNchwcOp) -> None:
        m, a = self.tile, self.tile + 2
        weight = constant_operand(conv.weight)
        assert weight is not None
        if weight.ndim == 6:  # [K/co][C/ci][3][3][ci][co] -> OIHW
            kb, cb, _, _, ci, co = weight.shape
            weight = weight.transpose(0, 5, 1, 4, 2, 3).reshape(kb * co, cb * ci, 3, 3)
            blocks = (cb, ci)
        else:
            blocks = (weight.shape[1], 1)
        u = transformed_weight(weight, m)  # [a*a][C][K]
        u = u.reshape(a * a, *blocks, u.shape[-1])
        base = conv.results[0].name_hint or "conv"
        v = graph.WinogradInputTransformOp(conv.input, m, conv.pads.get_values())
        Rewriter.insert_op(v, InsertPoint.before(conv))
        product = graph.WinogradMatmulOp(v.result, _const(f"{base}_winograd_u", u, conv))
        Rewriter.insert_op(product, InsertPoint.before(conv))
        out = graph.WinogradOutputTransformOp(product.result, m, conv.results[0].type)
        Rewriter.insert_op(out, InsertPoint.before(conv))
        result = out.result
        bias = constant_operand(conv.bias)
        if bias is not None:
            shape = (bias.shape[0], 1, 1) if bias.ndim == 1 else (bias.shape[0], 1, 1, bias.shape[1])
            add = graph.AddOp(result, _const(f"{base}_bias", bias.reshape(shape), conv))
            Rewriter.insert_op(add, InsertPoint.before(conv))
            result = add.result
        conv.results[0].replace_all_uses_with(result)
        Rewriter.erase_op(conv)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if not 1 <= self.tile <= MAX_TILE:
            raise PassFailedException(f"graph-winograd: tile must be 1 to {MAX_TILE}, got {self.tile}")
        if ctx.get_optional_dialect("builtin") is None:
            ctx.load_registered_dialect("builtin")  # so that new weight blobs get printed
        for function in op.ops:
            if isinstance(function, func.FuncOp) and not loop.is_kernel(function):
                for conv in [o for o in function.walk() if self.eligible(o)]:
                    self.rewrite(conv)
