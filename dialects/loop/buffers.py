"""Buffers: `loop.alloc`, `loop.global`, `loop.get_global`, `loop.view`, and their sizes."""

from __future__ import annotations

from typing import cast

from xdsl.dialects.builtin import (
    I64,
    DenseIntOrFPElementsAttr,
    DenseResourceAttr,
    FixedBitwidthType,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    NoneAttr,
    ShapedType,
    StringAttr,
    SymbolNameConstraint,
    SymbolRefAttr,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.traits import (
    MemoryAllocEffect,
    NoMemoryEffect,
    SymbolOpInterface,
    SymbolTable,
    SymbolUserOpInterface,
)
from xdsl.utils.exceptions import VerifyException

from xweave.dialects.loop.attributes import INT64_MAX, i64_attr, scope_of


def element_bytes(element_type: Attribute) -> int:
    """Bytes one buffer element takes in memory (i1 takes a byte, index 8)."""
    if isinstance(element_type, IndexType):
        return 8
    if isinstance(element_type, FixedBitwidthType):
        return element_type.size
    raise ValueError(f"no memory size for element type {element_type}")


def buffer_bytes(memref_type: MemRefType) -> int:
    """Bytes of a static, row-major buffer."""
    count = 1
    for dim in memref_type.get_shape():
        count *= dim
    return count * element_bytes(memref_type.get_element_type())




def _check_buffer_size(memref_type: MemRefType) -> None:
    """A static buffer must be addressable with 64-bit byte offsets."""
    try:
        size = buffer_bytes(memref_type)
    except ValueError:  # an element type without a memory size: nothing to overflow
        return
    if size > INT64_MAX:
        raise VerifyException(f"buffer {memref_type} is too large: {size} bytes")




@irdl_op_definition
class AllocOp(IRDLOperation):
    """`loop.alloc : memref<6x16xf32, #loop.scope<local>>`: a new buffer of static shape."""

    name = "loop.alloc"

    memref = result_def(MemRefType)
    alignment = opt_prop_def(IntegerAttr[I64])
    """Alignment of the buffer's start, in bytes."""

    assembly_format = "(`align` $alignment^)? attr-dict `:` type($memref)"

    traits = traits_def(MemoryAllocEffect())

    def __init__(self, memref_type: MemRefType, alignment: int | None = None):
        super().__init__(
            result_types=[memref_type],
            properties={} if alignment is None else {"alignment": i64_attr(alignment)},
        )

    def verify_(self) -> None:
        memref_type = cast(MemRefType, self.memref.type)
        if any(dim < 0 for dim in memref_type.get_shape()):
            raise VerifyException(f"buffer {memref_type} must have a static shape")
        _check_buffer_size(memref_type)
        if self.alignment is not None:
            align = self.alignment.value.data
            if align <= 0 or align & (align - 1):
                raise VerifyException(
                    f"alignment must be a positive power of two, got {align}"
                )


class _GetGlobalSymbolUser(SymbolUserOpInterface):
    """A `loop.get_global` names a `loop.global` of the same type."""

    def verify(self, op: Operation) -> None:
        assert isinstance(op, GetGlobalOp)
        anchor = op.parent_op()
        while anchor is not None and not anchor.has_trait(SymbolTable):
            anchor = anchor.parent_op()
        if anchor is None:  # not inside a module yet
            return
        global_op = SymbolTable.lookup_symbol(op, op.global_name)
        if not isinstance(global_op, GlobalOp):
            raise VerifyException(f"no loop.global named {op.global_name}")
        if global_op.type != op.memref.type:
            raise VerifyException(
                f"result type {op.memref.type} does not match the type {global_op.type} "
                f"of {op.global_name}"
            )


@irdl_op_definition
class GlobalOp(IRDLOperation):
    """`loop.global @w : memref<4x3xf32> = dense_resource<w>`: a constant buffer (weights)."""

    name = "loop.global"

    sym_name = prop_def(SymbolNameConstraint())
    type = prop_def(MemRefType)
    """The buffer's type."""
    initial_value = prop_def(DenseIntOrFPElementsAttr | DenseResourceAttr)
    """Its contents: `dense<...>`, or a blob of the module's `dialect_resources`."""

    assembly_format = "$sym_name `:` $type `=` $initial_value attr-dict"

    traits = traits_def(SymbolOpInterface())

    def __init__(
        self,
        name: str | StringAttr,
        type: MemRefType,
        initial_value: DenseIntOrFPElementsAttr | DenseResourceAttr,
    ):
        super().__init__(
            properties={
                "sym_name": StringAttr(name) if isinstance(name, str) else name,
                "type": type,
                "initial_value": initial_value,
            }
        )

    def verify_(self) -> None:
        value_type = cast(ShapedType, self.initial_value.type)
        memref_type = cast(MemRefType, self.type)
        if (
            value_type.get_shape() != memref_type.get_shape()
            or value_type.get_element_type() != memref_type.get_element_type()
        ):
            raise VerifyException(
                f"initial value of type {value_type} does not fit {memref_type}"
            )


@irdl_op_definition
class GetGlobalOp(IRDLOperation):
    """`%w = loop.get_global @w : memref<4x3xf32>`: the buffer of a `loop.global`."""

    name = "loop.get_global"

    global_name = prop_def(SymbolRefAttr, prop_name="name")
    """The `loop.global` read."""
    memref = result_def(MemRefType)

    assembly_format = "$name `:` type($memref) attr-dict"

    traits = traits_def(NoMemoryEffect(), _GetGlobalSymbolUser())

    def __init__(self, name: str | SymbolRefAttr, memref_type: MemRefType):
        super().__init__(
            result_types=[memref_type],
            properties={"name": SymbolRefAttr(name) if isinstance(name, str) else name},
        )


@irdl_op_definition
class ViewOp(IRDLOperation):
    """`%v = loop.view %arena[4096] : memref<8192xi8> to memref<4x8xf32>`: a typed buffer
    at a constant byte offset inside a 1-D `i8` buffer.

    `plan-memory` turns the intermediate buffers of `@main` into views of one arena, so
    buffers whose lifetimes do not overlap share memory. The view is row-major and lies
    wholly inside its source; both are in the same memory scope.
    """

    name = "loop.view"

    source = operand_def(MemRefType)
    """The byte buffer (`memref<Nxi8>`)."""
    byte_offset = prop_def(IntegerAttr[I64], prop_name="offset")
    """Where the view starts in the source, in bytes."""
    result = result_def(MemRefType)

    assembly_format = (
        "$source `[` $offset `]` attr-dict `:` type($source) `to` type($result)"
    )

    traits = traits_def(NoMemoryEffect())

    def __init__(self, source: SSAValue | Operation, offset: int, result_type: MemRefType):
        super().__init__(
            operands=[source], result_types=[result_type], properties={"offset": i64_attr(offset)}
        )

    @property
    def offset(self) -> int:
        """The byte offset."""
        return self.byte_offset.value.data

    def verify_(self) -> None:
        source = cast(MemRefType, self.source.type)
        result = cast(MemRefType, self.result.type)
        if (
            source.get_num_dims() != 1
            or source.get_element_type() != IntegerType(8)
            or source.get_shape()[0] < 0
            or not isinstance(source.layout, NoneAttr)
        ):
            raise VerifyException(
                f"source must be a static 1-D buffer of i8 (memref<Nxi8>), got {source}"
            )
        if any(dim < 0 for dim in result.get_shape()) or not isinstance(result.layout, NoneAttr):
            raise VerifyException(f"result {result} must have a static shape and no layout")
        if scope_of(source) != scope_of(result):
            raise VerifyException(
                f"result scope {scope_of(result).data} differs from the source scope "
                f"{scope_of(source).data}"
            )
        try:
            offset, size = self.offset, buffer_bytes(result)
            element = element_bytes(result.get_element_type())
        except ValueError as e:
            raise VerifyException(str(e)) from None
        if offset < 0 or offset % element:
            raise VerifyException(
                f"offset {offset} must be a non-negative multiple of the element size {element}"
            )
        if offset + size > source.get_shape()[0]:
            raise VerifyException(
                f"the view [{offset}, {offset + size}) does not fit in the "
                f"{source.get_shape()[0]} bytes of the source"
            )


