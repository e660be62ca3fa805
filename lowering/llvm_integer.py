"""`loop.convert` and `loop.dot` -> llvm dialect: vector conversions and the integer
dot products of quantized kernels, for `convert-loop-to-llvm`.

`loop.dot` becomes the dot-product instruction of the target's machine model (the
module's `xweave.target`), through LLVM's x86 intrinsics:

| form | VNNI (avx512vnni, avxvnni) | AVX2 / AVX-512BW without VNNI |
|---|---|---|
| G=4, int8 b | `vpdpbusd` | `narrow`: `vpmaddubsw` + `vpmaddwd` by ones; else exact 16-bit products |
| G=2, int16 b | `vpmaddwd` | `vpmaddwd` |

(`vpmaddubsw` adds two u8 x s8 products in saturating 16-bit arithmetic: exact only for
|b| <= 64, which a `narrow` dot asserts.) 4, 8 or 16 i32 lanes: the 128-, 256- and
512-bit forms. Other targets get the exact sum as plain LLVM vector IR.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache

from xdsl.dialects import llvm
from xdsl.dialects.builtin import DenseArrayBase, IntegerType, ModuleOp, VectorType, f32, i32
from xdsl.ir import Operation, SSAValue

from xweave.dialects import loop
from xweave.lowering.llvm_builder import (
    FunctionBuilder,
    bit_width,
    convert_type,
    element_type,
    intrinsic_suffix,
)
from xweave.lowering.llvm_scalar import Handler, call_intrinsic, call_overloaded, splat
from xweave.target import MachineModel, machine_model, target_of

INTEGER_LOWERINGS: dict[type[Operation], Handler] = {}
"""Source op class -> handler (as `llvm_scalar.SCALAR_LOWERINGS`)."""

i16 = IntegerType(16)
i8 = IntegerType(8)

# (lanes of i32) -> intrinsic names
_VPDPBUSD = {4: "llvm.x86.avx512.vpdpbusd.128", 8: "llvm.x86.avx512.vpdpbusd.256",
             16: "llvm.x86.avx512.vpdpbusd.512"}
_PMADDUBSW = {4: "llvm.x86.ssse3.pmadd.ub.sw.128", 8: "llvm.x86.avx2.pmadd.ub.sw",
              16: "llvm.x86.avx512.pmaddubs.w.512"}
_PMADDWD = {4: "llvm.x86.sse2.pmadd.wd", 8: "llvm.x86.avx2.pmadd.wd",
            16: "llvm.x86.avx512.pmaddw.d.512"}


def _register(*op_types: type[Operation]):
    def decorate(handler: Handler) -> Handler:
        for op_type in op_types:
            INTEGER_LOWERINGS[op_type] = handler
        return handler

    return decorate


@cache
def _machine(target_text: str) -> MachineModel:
    return machine_model(target_text)


def machine_of(op: Operation) -> MachineModel:
    """The machine model of the module holding `op`."""
    top = op
    while top.parent_op() is not None:
        top = top.parent_op()  # pyright: ignore[reportAssignmentType]
    assert isinstance(top, ModuleOp)
    return _machine(str(target_of(top)))


def has_vnni(machine: MachineModel, lanes: int) -> bool:
    """Whether `vpdpbusd` of `lanes` i32 lanes exists on the machine."""
    features = machine.features
    if lanes == 16:
        return "avx512vnni" in features
    return "avxvnni" in features or {"avx512vnni", "avx512vl"} <= features


def _has_lanes(machine: MachineModel, lanes: int) -> bool:
    """Whether the x86 integer multiply-adds of `lanes` i32 lanes exist."""
    features = machine.features
    return {4: "ssse3" in features or "avx2" in features, 8: "avx2" in features,
            16: "avx512bw" in features}.get(lanes, False)


# --- loop.convert -----------------------------------------------------------------------


@_register(loop.ConvertOp)
def _convert(b: FunctionBuilder, op: loop.ConvertOp) -> Sequence[SSAValue]:
    value, t = b.get(op.input), convert_type(op.result.type)
    kind = op.kind.data
    if kind == "extsi":
        return [b.emit1(llvm.SExtOp(value, t))]
    if kind == "extui":
        return [b.emit1(llvm.ZExtOp(value, t))]
    if kind == "trunci":
        return [b.emit1(llvm.TruncOp(value, t))]
    if kind == "sitofp":
        return [b.emit1(llvm.SIToFPOp(value, t))]
    if kind == "uitofp":  # exact through a signed integer twice as wide (at least i32)
        width = max(32, 2 * bit_width(value.type))
        wide = IntegerType(width)
        wide_t = VectorType(wide, value.type.get_shape()) if isinstance(value.type, VectorType) else wide  # pyright: ignore
        return [b.emit1(llvm.SIToFPOp(b.emit1(llvm.ZExtOp(value, wide_t)), t))]
    if (kind in ("fptosi", "fptoui") and bit_width(t) < 32 and isinstance(t, VectorType)
            and element_type(value.type) == f32):
        return [_narrow_from_float(b, value, t, unsigned=kind == "fptoui")]
    if kind in ("fptosi", "fptoui"):  # saturating, as arith's lowering (llvm_scalar)
        name = f"llvm.{kind}.sat.{intrinsic_suffix(t)}.{intrinsic_suffix(value.type)}"
        return [_call(b, name, [value], t)]
    if kind == "extf":
        return [b.emit1(llvm.FPExtOp(value, t))]
    return [b.emit1(llvm.FPTruncOp(value, t))]


_MAGIC, _MAGIC_BITS = 12582912.0, 0x4B400000
"""1.5 * 2^23 and its bits: an integral float of magnitude below 2^22 plus it holds the
integer in the low mantissa bits."""


def _narrow_from_float(b: FunctionBuilder, value: SSAValue, t, unsigned: bool) -> SSAValue:
    """`fpto[su]i.sat` from f32 to 8 or 16 bits in vector registers (LLVM's lowering of
    the `.sat` intrinsics has no x86 vector form: it converts lane by lane, which made
    the requantize epilogue of a quantized conv cost as much as its products).

    The value is clamped to the narrow type's range by minnum/maxnum against constants
    (one `vmaxps`/`vminps` each; they give the constant for NaN), truncated toward zero,
    and converted exactly through the magic number. NaN must give 0: the low bound for
    unsigned types; for signed ones the mean of the clamp done in both orders, which is
    the clamped value itself but (lo + hi) / 2 = -0.5 for NaN."""
    width = bit_width(t)
    ft = value.type
    lo, hi = (0, (1 << width) - 1) if unsigned else (-(1 << (width - 1)), (1 << (width - 1)) - 1)
    low, high = b.const(float(lo), ft), b.const(float(hi), ft)

    def clamp(first: str, bound: SSAValue, second: str, other: SSAValue) -> SSAValue:
        inner = call_overloaded(b, first, [value, bound], ft)
        return call_overloaded(b, second, [inner, other], ft)

    x = clamp("llvm.maxnum", low, "llvm.minnum", high)  # NaN -> lo
    if not unsigned:
        y = clamp("llvm.minnum", high, "llvm.maxnum", low)  # NaN -> hi
        x = b.emit1(llvm.FMulOp(b.emit1(llvm.FAddOp(x, y)), b.const(0.5, ft)))
    x = call_overloaded(b, "llvm.trunc", [x], ft)
    wide = VectorType(i32, ft.get_shape())  # pyright: ignore[reportAttributeAccessIssue]
    shifted = b.emit1(llvm.BitcastOp(b.emit1(llvm.FAddOp(x, b.const(_MAGIC, ft))), wide))
    integer = b.emit1(llvm.SubOp(shifted, b.const(_MAGIC_BITS, wide)))
    return b.emit1(llvm.TruncOp(integer, t))


# --- loop.dot ---------------------------------------------------------------------------


def _bitcast(b: FunctionBuilder, value: SSAValue, t) -> SSAValue:
    return value if value.type == t else b.emit1(llvm.BitcastOp(value, t))


def _broadcast_group(b: FunctionBuilder, a: SSAValue, lanes: int) -> SSAValue:
    """The G elements of `a` (G * width = 32 bits) repeated in every i32 lane."""
    word = _bitcast(b, a, i32)
    return splat(b, word, VectorType(i32, [lanes]))


def _call(b: FunctionBuilder, name: str, args: list[SSAValue], t) -> SSAValue:
    result = call_intrinsic(b, name, args, t)
    assert result is not None
    return result


def _exact(b: FunctionBuilder, op: loop.DotOp, acc: SSAValue, a: SSAValue, w: SSAValue) -> SSAValue:
    """The dot product in plain LLVM vector IR: products in i32, summed per group."""
    n, g = op.lanes, op.group
    wide = VectorType(i32, [n * g])
    extend = llvm.ZExtOp if element_type(a.type) == i8 else llvm.SExtOp
    group = b.emit1(extend(a, VectorType(i32, [g])))
    spread = b.emit1(llvm.ShuffleVectorOp(group, group, DenseArrayBase.from_list(
        i32, [j for _ in range(n) for j in range(g)]), wide))
    products = b.emit1(llvm.MulOp(spread, b.emit1(llvm.SExtOp(w, wide))))
    total = acc
    for j in range(g):
        part = b.emit1(llvm.ShuffleVectorOp(products, products, DenseArrayBase.from_list(
            i32, [i * g + j for i in range(n)]), VectorType(i32, [n])))
        total = b.emit1(llvm.AddOp(total, part))
    return total


@_register(loop.DotOp)
def _dot(b: FunctionBuilder, op: loop.DotOp) -> Sequence[SSAValue]:
    acc, a, w = b.get(op.acc), b.get(op.a), b.get(op.b)
    n, g = op.lanes, op.group
    machine = machine_of(op)
    lanes_i32 = VectorType(i32, [n])
    element = element_type(w.type)
    if g == 4 and element == i8 and has_vnni(machine, n):
        words = _bitcast(b, w, lanes_i32)
        return [_call(b, _VPDPBUSD[n], [acc, _broadcast_group(b, a, n), words], lanes_i32)]
    if not _has_lanes(machine, n):
        return [_exact(b, op, acc, a, w)]
    pairs = VectorType(i16, [2 * n])
    if g == 4 and element == i8 and op.narrow is not None:
        bytes_t = VectorType(i8, [4 * n])
        a_bytes = _bitcast(b, _broadcast_group(b, a, n), bytes_t)
        sums = _call(b, _PMADDUBSW[n], [a_bytes, w], pairs)  # u8 x s8, pairs summed in i16
        ones = b.const(1, pairs)
        return [b.emit1(llvm.AddOp(acc, _call(b, _PMADDWD[n], [sums, ones], lanes_i32)))]
    if g == 2 and element == i16:
        a_pair = a if element_type(a.type) == i16 else b.emit1(llvm.ZExtOp(a, VectorType(i16, [2])))
        a_words = _bitcast(b, _broadcast_group(b, a_pair, n), pairs)
        return [b.emit1(llvm.AddOp(acc, _call(b, _PMADDWD[n], [a_words, w], lanes_i32)))]
    return [_exact(b, op, acc, a, w)]


__all__ = ["INTEGER_LOWERINGS", "has_vnni", "machine_of"]
