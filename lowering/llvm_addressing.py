"""Addresses for convert-loop-to-llvm: an access `%buf[map(indices)]` becomes one linear
i64 offset and a `getelementptr inbounds` (`AddressBuilder.address`), with the alignment
the buffer's start and the offset prove (`access_alignment`)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import cast

from xdsl.dialects import arith, llvm, memref, vector
from xdsl.dialects.builtin import (
    AffineMapAttr,
    IntAttr,
    IntegerAttr,
    MemRefType,
    NoneAttr,
    StridedLayoutAttr,
    VectorType,
    i8,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.ir.affine import (
    AffineBinaryOpExpr,
    AffineBinaryOpKind,
    AffineConstantExpr,
    AffineDimExpr,
    AffineExpr,
    AffineMap,
    AffineSymExpr,
)

from xweave.dialects import loop
from xweave.lowering.llvm_builder import (
    NSW,
    FunctionBuilder,
    LoweringError,
    byte_size,
    convert_type,
    row_major_strides,
    unsupported,
)
from xweave.passes.loop_analysis import Linear

_SLT = IntegerAttr(llvm.ICmpPredicateFlag.SLT.to_int(), i64)


class AddressBuilder(FunctionBuilder):
    """A `FunctionBuilder` that computes the addresses and alignments of accesses."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.buffer_alignment: dict[SSAValue, int] = {}
        """Source buffer -> alignment (bytes) of its start, for buffers allocated here."""
        self._addresses: dict[tuple[object, ...], SSAValue] = {}

    def access_alignment(
        self,
        base: SSAValue,
        indices: Sequence[SSAValue],
        amap: AffineMap | None,
        access_type: Attribute,
    ) -> int:
        """The alignment (bytes) of an access: the element's, or for a vector access
        what the buffer's start alignment and the offset prove (e.g. 32 for
        `%buf[%i, %jo * 8]` of a `memref<64x64xf32>` allocated here: rows of 256 bytes,
        `jo * 8` floats = multiples of 32 bytes).

        Only buffers allocated by the function have a known start alignment (64 bytes
        on the heap, 32 on the stack); kernel arguments (numpy arrays: 16 bytes at
        best) and parameters keep the element's alignment."""
        t = cast(MemRefType, base.type)
        element = byte_size(t.get_element_type())
        known = self.buffer_alignment.get(base)
        if not isinstance(access_type, VectorType) or known is None:
            return element
        strides, offset = layout_of(t)
        if amap is None:
            amap = AffineMap.identity(len(indices))
        align = min(known, pow2(offset * element))
        for expr, stride in zip(amap.results, strides):
            align = min(align, _expr_alignment(expr, indices, amap.num_dims, stride * element))
        return max(element, min(align, 64))

    def address(
        self, base: SSAValue, indices: Sequence[SSAValue], amap: AffineMap | None
    ) -> SSAValue:
        """`&base[map(indices)]`: one linear i64 offset and a `getelementptr inbounds`."""
        t = cast(MemRefType, base.type)
        shape = t.get_shape()
        strides, offset = layout_of(t)
        operands = [self.get(v) for v in indices]
        terms: dict[SSAValue, int] = {}
        const = offset
        if amap is None:
            for value, stride in zip(operands, strides):
                terms[value] = terms.get(value, 0) + stride
        else:
            if len(amap.results) != len(shape):
                raise LoweringError(
                    f"convert-loop-to-llvm: map {amap} does not index a {t}"
                )
            for expr, stride in zip(amap.results, strides):
                const += self._linearize(expr, operands, amap.num_dims, stride, terms)
        ptr = self.get(base)
        # The same address in the same block (a load then a store of an accumulator)
        # is computed once: less IR to translate; LLVM would merge them anyway.
        key = (self.block, ptr, tuple(terms.items()), const)
        cached = self._addresses.get(key)
        if cached is not None:
            return cached
        self._addresses[key] = address = self._gep(ptr, t, self.emit_linear(terms, const))
        return address

    def _gep(self, ptr: SSAValue, t: MemRefType, offset: SSAValue | int) -> SSAValue:
        return self.gep(ptr, convert_type(t.get_element_type()), offset)

    def byte_offset(self, ptr: SSAValue, offset: int) -> SSAValue:
        """`ptr + offset` bytes."""
        return self.gep(ptr, i8, offset)

    def gep(self, ptr: SSAValue, element: Attribute, offset: SSAValue | int) -> SSAValue:
        """`getelementptr inbounds element, ptr, offset` with an i64 offset.

        A constant offset is folded into the op only when it fits its i32 constant
        indices; a larger one (a buffer past 2 GiB) is an i64 constant operand."""
        if isinstance(offset, int):
            if offset == 0:
                return ptr
            if -(2**31) <= offset < 2**31:
                return self.emit1(llvm.GEPOp(ptr, [offset], element, inbounds=True))
            offset = self.const(offset)
        return self.emit1(
            llvm.GEPOp(ptr, [llvm.GEP_USE_SSA_VAL], element, [offset], inbounds=True)
        )

    def _linearize(
        self,
        expr: AffineExpr,
        operands: Sequence[SSAValue],
        num_dims: int,
        scale: int,
        terms: dict[SSAValue, int],
    ) -> int:
        """Add `scale * expr` to `terms` (value -> coefficient); return its constant part."""
        form = Linear.of(expr)
        for atom, coef in form.terms.items():
            value = _operand(atom, operands, num_dims)
            if value is None:
                value = self._emit_expr(atom, operands, num_dims)
            if scale:
                terms[value] = terms.get(value, 0) + scale * coef
        return scale * form.const

    def _emit_expr(self, expr: AffineExpr, operands: Sequence[SSAValue], num_dims: int) -> SSAValue:
        """An affine expression as an i64 value (for the non-linear parts: div, mod, ...)."""
        match expr:
            case AffineConstantExpr(value=v):
                return self.const(v)
            case AffineDimExpr(position=p):
                return operands[p]
            case AffineSymExpr(position=p):
                return operands[num_dims + p]
            case AffineBinaryOpExpr(kind=kind, lhs=lhs, rhs=rhs):
                a = self._emit_expr(lhs, operands, num_dims)
                b = self._emit_expr(rhs, operands, num_dims)
                if kind == AffineBinaryOpKind.Add:
                    return self.emit1(llvm.AddOp(a, b, overflow=NSW))
                if kind == AffineBinaryOpKind.Mul:
                    return self.emit1(llvm.MulOp(a, b, overflow=NSW))
                # mod, floordiv, ceildiv: the divisor is a positive constant in affine maps
                q = self.emit1(llvm.SDivOp(a, b))
                r = self.emit1(llvm.SRemOp(a, b))
                negative = self.emit1(llvm.ICmpOp(r, self.const(0), _SLT))
                if kind == AffineBinaryOpKind.Mod:
                    return self.emit1(llvm.SelectOp(negative, self.emit1(llvm.AddOp(r, b)), r))
                if kind == AffineBinaryOpKind.FloorDiv:
                    one = self.emit1(llvm.ZExtOp(negative, i64))
                    return self.emit1(llvm.SubOp(q, one))
                positive = self.emit1(
                    llvm.ICmpOp(self.const(0), r, _SLT)
                )
                return self.emit1(llvm.AddOp(q, self.emit1(llvm.ZExtOp(positive, i64))))
        raise LoweringError(f"convert-loop-to-llvm: unexpected affine expression {expr}")

    def emit_linear(self, terms: dict[SSAValue, int], const: int) -> SSAValue | int:
        """`sum(coeff * value) + const` as i64 (an int when there are no terms)."""
        total: SSAValue | None = None
        for value, coeff in terms.items():
            if coeff == 0:
                continue
            term = value
            if coeff != 1:
                term = self.emit1(llvm.MulOp(value, self.const(coeff), overflow=NSW))
            total = term if total is None else self.emit1(llvm.AddOp(total, term, overflow=NSW))
        if total is None:
            return const
        if const:
            total = self.emit1(llvm.AddOp(total, self.const(const), overflow=NSW))
        return total


UNBOUNDED = 1 << 62
"""Stands for "any power of two" (the alignment of offset 0)."""


def pow2(n: int) -> int:
    """The largest power of two dividing `n` (unbounded for 0)."""
    n = abs(n)
    return n & -n if n else UNBOUNDED


def _value_alignment(value: SSAValue) -> int:
    """The largest power of two dividing every value `value` takes (1 if unknown)."""
    owner = value.owner
    if isinstance(owner, Block) and isinstance(owner.parent_op(), loop.ForOp):
        for_op = cast(loop.ForOp, owner.parent_op())
        return pow2(math.gcd(for_op.lb.value.data, for_op.step.value.data))
    if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, IntegerAttr):
        return pow2(owner.value.value.data)
    return 1


def _operand(atom: AffineExpr, operands: Sequence[SSAValue], num_dims: int) -> SSAValue | None:
    """The operand a dim or symbol stands for; None for the other atoms (div, mod, ...)."""
    match atom:
        case AffineDimExpr(position=p):
            return operands[p]
        case AffineSymExpr(position=p):
            return operands[num_dims + p]
    return None


def _expr_alignment(
    expr: AffineExpr, operands: Sequence[SSAValue], num_dims: int, scale: int
) -> int:
    """The largest power of two known to divide `scale * expr` (bytes)."""
    form = Linear.of(expr)
    align = pow2(scale * form.const)
    for atom, coef in form.terms.items():
        value = _operand(atom, operands, num_dims)
        # a div/mod is some integer: only its coefficient counts
        known = 1 if value is None else _value_alignment(value)
        align = min(align, pow2(scale * coef) * known)
    return min(align, UNBOUNDED)


def access_parts(op: Operation) -> tuple[SSAValue, Sequence[SSAValue], AffineMap | None]:
    """(memref, index operands, affine map or None for plain indices) of a load/store."""
    if isinstance(op, loop.LoadOp | loop.StoreOp | loop.PrefetchOp):
        return op.memref, op.indices, op.map.data
    if isinstance(op, memref.LoadOp | memref.StoreOp):
        return op.memref, op.indices, None
    if isinstance(op, vector.LoadOp | vector.StoreOp):
        return op.base, op.indices, None
    raise unsupported(op)


def layout_of(t: MemRefType) -> tuple[list[int], int]:
    """Element strides and offset of a memref (identity layout: row-major, offset 0)."""
    layout = t.layout
    if isinstance(layout, NoneAttr):
        return row_major_strides(t.get_shape()), 0
    if isinstance(layout, AffineMapAttr) and layout.data == AffineMap.identity(t.get_num_dims()):
        return row_major_strides(t.get_shape()), 0
    if isinstance(layout, StridedLayoutAttr):
        strides = [s.data if isinstance(s, IntAttr) else None for s in layout.strides.data]
        offset = layout.offset.data if isinstance(layout.offset, IntAttr) else None
        if None not in strides and offset is not None:
            return cast(list[int], strides), offset
    raise LoweringError(f"convert-loop-to-llvm: unsupported layout of {t}")
