"""Buffer accesses: `loop.load`, `loop.store`, `loop.prefetch`, with affine index maps."""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

from xdsl.dialects.builtin import AffineMapAttr, UnitAttr, IndexType, MemRefType, VectorType
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.ir.affine import AffineConstantExpr, AffineExpr, AffineMap
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import MemoryReadEffect, MemoryWriteEffect
from xdsl.utils.exceptions import VerifyException

from xweave.dialects.dtypes import value_type
from xweave.dialects.loop.affine_syntax import print_affine_expr


def _verify_access(
    op: LoadOp | StoreOp | PrefetchOp, memref_type: MemRefType, access_type: Attribute, what: str
) -> None:
    """The checks shared by loads and stores; `what` names the accessed value."""
    affine_map = op.map.data
    num_operands = affine_map.num_dims + affine_map.num_symbols
    if len(op.indices) != num_operands:
        raise VerifyException(
            f"expected {num_operands} index operands for map {affine_map} "
            f"({affine_map.num_dims} dims + {affine_map.num_symbols} symbols), "
            f"got {len(op.indices)}"
        )
    rank = memref_type.get_num_dims()
    if len(affine_map.results) != rank:
        raise VerifyException(
            f"map {affine_map} has {len(affine_map.results)} results, "
            f"but the memref has rank {rank}"
        )
    element_type = value_type(memref_type.get_element_type())
    if isinstance(access_type, VectorType):
        if access_type.element_type != element_type or access_type.get_num_dims() != 1:
            raise VerifyException(
                f"{what} type {access_type} must be the element type "
                f"{element_type} or a 1-D vector of it"
            )
        if rank == 0:
            raise VerifyException(f"a vector {what} needs a memref of rank >= 1")
        length, last_dim = access_type.get_shape()[0], memref_type.get_shape()[-1]
        if length > last_dim:
            _verify_rows(affine_map, memref_type, length, what)
            return
    elif access_type != element_type:
        raise VerifyException(
            f"{what} type {access_type} must be the element type "
            f"{element_type} or a 1-D vector of it"
        )
    length = access_type.get_shape()[0] if isinstance(access_type, VectorType) else 1
    _verify_constant_indices(affine_map, memref_type, length, what)


def _verify_rows(affine_map: AffineMap, memref_type: MemRefType, length: int, what: str) -> None:
    """A vector access longer than the last dimension: whole rows of it (`length` a
    multiple of its size, from its index 0), within the dimension before."""
    shape = memref_type.get_shape()
    last = shape[-1]
    rows = length // last if last > 0 else 0
    if len(shape) < 2 or last <= 0 or length % last or rows > shape[-2]:
        raise VerifyException(
            f"vector length {length} exceeds the last dimension {last} of {memref_type} "
            "and is not a number of its whole rows within the dimension before")
    lead = affine_map.results[-1]
    if not isinstance(lead, AffineConstantExpr) or lead.value != 0:
        raise VerifyException(
            f"a vector {what} of {rows} whole rows of {memref_type} must start at index 0 "
            f"of the last dimension, not {lead}")
    row = affine_map.results[-2]
    if isinstance(row, AffineConstantExpr) and not 0 <= row.value <= shape[-2] - rows:
        raise VerifyException(
            f"constant index {row.value} of dimension {len(shape) - 2} is out of bounds for "
            f"{memref_type} (a {what} of {rows} rows)")


def _verify_constant_indices(
    affine_map: AffineMap, memref_type: MemRefType, length: int = 1, what: str = "access"
) -> None:
    """Constant indices must lie inside the buffer (`length` elements along the last
    dimension from there, for a vector access)."""
    shape = memref_type.get_shape()
    for dim, (expr, size) in enumerate(zip(affine_map.results, shape)):
        if not isinstance(expr, AffineConstantExpr) or size < 0:
            continue
        extent = length if dim == len(shape) - 1 else 1
        if not 0 <= expr.value <= size - extent:
            raise VerifyException(
                f"constant index {expr.value} of dimension {dim} is out of bounds for "
                f"{memref_type}" + (f" (a {what} of {extent} elements)" if extent > 1 else "")
            )


_USED_DIMS: dict[int, tuple[AffineMap, frozenset[int]]] = {}
_USED_DIMS_LIMIT = 1 << 15


def used_dims(amap: AffineMap) -> frozenset[int]:
    """The dims the results of `amap` use. Remembered per map object (maps are
    immutable; an access's map is asked again and again: every round of loop-simplify,
    every fold of its indices), the entry holding the map so that its id stays its own."""
    entry = _USED_DIMS.get(id(amap))
    if entry is not None and entry[0] is amap:
        return entry[1]
    used = frozenset(d for r in amap.results for d in r.used_dims())
    if len(_USED_DIMS) >= _USED_DIMS_LIMIT:
        _USED_DIMS.clear()
    _USED_DIMS[id(amap)] = (amap, used)
    return used


def _identity_map(memref: SSAValue, map: AffineMap | AffineMapAttr | None) -> AffineMapAttr:
    if isinstance(map, AffineMapAttr):
        return map
    if map is None:
        map = AffineMap.identity(cast(MemRefType, memref.type).get_num_dims())
    return AffineMapAttr(map)


class MemoryAccess:
    """The affine access `memref[map(indices)]` of `loop.load`, `loop.store` and
    `loop.prefetch` (their operands after the stored value), and its rewriting: the
    buffer, the index operands and the map, changed together."""

    memref = operand_def(MemRefType)
    indices = var_operand_def(IndexType)
    """The map's operands: its dimensions, then its symbols."""
    map = prop_def(AffineMapAttr)
    """From the index operands to one index per memref dimension."""

    def set_access(self, indices: Sequence[SSAValue], amap: AffineMap,
                   memref: SSAValue | None = None, compact: bool = False) -> bool:
        """Access `memref[amap(indices)]` (the same buffer by default). With `compact`,
        the dims no result uses are dropped (with their operands) and the others
        renumbered in order; returns whether the op changed."""
        memref = self.memref if memref is None else memref
        indices = list(indices)
        if compact and amap.num_symbols == 0:
            used = sorted(used_dims(amap))
            if len(used) < amap.num_dims:
                remap = {d: AffineExpr.dimension(i) for i, d in enumerate(used)}
                dims = [remap.get(d, AffineExpr.constant(0)) for d in range(amap.num_dims)]
                amap = amap.replace_dims_and_symbols(dims, [], len(used), 0)
                indices = [indices[d] for d in used]
        if memref is self.memref and amap == self.map.data and indices == list(self.indices):
            return False
        head = list(self.operands[: len(self.operands) - len(self.indices) - 1])
        self.operands = [*head, memref, *indices]
        self.properties["map"] = AffineMapAttr(amap)
        return True

    def rebase(self, memref: SSAValue, offsets: Sequence[AffineExpr],
               fixed: Sequence[SSAValue]) -> None:
        """Access `memref[e - offsets]` instead of `buffer[e]`, where `offsets` are affine
        in the values `fixed` (which must be visible here)."""
        amap = self.map.data
        n = amap.num_dims
        shift = [AffineExpr.dimension(n + i) for i in range(len(fixed))]
        results = tuple(e - off.replace_dims_and_symbols(shift, [])
                        for e, off in zip(amap.results, offsets, strict=True))
        self.set_access([*self.indices, *fixed], AffineMap(n + len(fixed), 0, results), memref)

    def permute(self, order: Sequence[int]) -> None:
        """Index dimension `order[i]` of the old layout as dimension `i` of the new one."""
        amap = self.map.data
        results = tuple(amap.results[d] for d in order)
        self.set_access(list(self.indices), AffineMap(amap.num_dims, amap.num_symbols, results))


@irdl_op_definition
class LoadOp(MemoryAccess, IRDLOperation):
    """`%v = loop.load %A[%i * 2 + %k, %j] : memref<…>`: read an element (or a vector)."""

    name = "loop.load"

    result = result_def()
    """The element, or a 1-D vector of consecutive elements along the last dimension
    (or of whole rows of it, within the dimension before: a packed weight panel)."""

    traits = traits_def(MemoryReadEffect())

    def __init__(
        self,
        memref: SSAValue | Operation,
        indices: Sequence[SSAValue | Operation],
        map: AffineMap | AffineMapAttr | None = None,
        result_type: Attribute | None = None,
    ):
        """Read `memref[map(indices)]`; `map` defaults to the identity."""
        memref = SSAValue.get(memref)
        if result_type is None:
            result_type = value_type(cast(MemRefType, memref.type).get_element_type())
        super().__init__(
            operands=[memref, indices],
            result_types=[result_type],
            properties={"map": _identity_map(memref, map)},
        )

    @property
    def vector_type(self) -> VectorType | None:
        """The result type if this is a vector load."""
        return self.result.type if isinstance(self.result.type, VectorType) else None

    def verify_(self) -> None:
        _verify_access(self, cast(MemRefType, self.memref.type), self.result.type, "result")

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        _print_access(printer, self)
        if self.vector_type is not None:
            printer.print_string(" -> ")
            printer.print_attribute(self.result.type)

    @classmethod
    def parse(cls, parser: Parser) -> LoadOp:
        memref, map, indices, attributes = _parse_access(parser)
        result_type = None
        if parser.parse_optional_punctuation("->") is not None:
            result_type = parser.parse_type()
        op = cls(memref, indices, map, result_type)
        op.attributes |= attributes
        return op


@irdl_op_definition
class StoreOp(MemoryAccess, IRDLOperation):
    """`loop.store %v, %A[%i, %j] : memref<…>`: write an element (or a vector)."""

    name = "loop.store"

    value = operand_def()
    """The element, or a 1-D vector of consecutive elements along the last dimension."""

    traits = traits_def(MemoryWriteEffect())

    def __init__(
        self,
        value: SSAValue | Operation,
        memref: SSAValue | Operation,
        indices: Sequence[SSAValue | Operation],
        map: AffineMap | AffineMapAttr | None = None,
    ):
        """Write `value` to `memref[map(indices)]`; `map` defaults to the identity."""
        memref = SSAValue.get(memref)
        super().__init__(
            operands=[value, memref, indices],
            properties={"map": _identity_map(memref, map)},
        )

    @property
    def vector_type(self) -> VectorType | None:
        """The stored value's type if this is a vector store."""
        return self.value.type if isinstance(self.value.type, VectorType) else None

    def verify_(self) -> None:
        _verify_access(self, cast(MemRefType, self.memref.type), self.value.type, "value")

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_ssa_value(self.value)
        printer.print_string(", ")
        _print_access(printer, self)
        if self.vector_type is not None:
            printer.print_string(", ")
            printer.print_attribute(self.value.type)

    @classmethod
    def parse(cls, parser: Parser) -> StoreOp:
        value = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        memref, map, indices, attributes = _parse_access(parser)
        stored = value_type(cast(MemRefType, memref.type).get_element_type())
        if parser.parse_optional_punctuation(",") is not None:
            stored = parser.parse_type()
        op = cls(parser.resolve_operand(value, stored), memref, indices, map)
        op.attributes |= attributes
        return op


@irdl_op_definition
class PrefetchOp(MemoryAccess, IRDLOperation):
    """`loop.prefetch write %A[%i, %j] : memref<…>`: a hint that the cache line holding
    the element will soon be read (or, with `write`, written); no effect on values.

    Lowered to `llvm.prefetch` (into all cache levels). `loop-prefetch` puts these in
    front of a register tile's reduction for the lines its write-back touches.
    """

    name = "loop.prefetch"

    write = opt_prop_def(UnitAttr)
    """The line will be written (fetched for ownership)."""

    def __init__(
        self,
        memref: SSAValue | Operation,
        indices: Sequence[SSAValue | Operation],
        map: AffineMap | AffineMapAttr | None = None,
        write: bool = False,
    ):
        memref = SSAValue.get(memref)
        properties: dict[str, Attribute] = {"map": _identity_map(memref, map)}
        if write:
            properties["write"] = UnitAttr()
        super().__init__(operands=[memref, indices], properties=properties)

    @property
    def is_write(self) -> bool:
        return self.write is not None

    def verify_(self) -> None:
        element_type = value_type(cast(MemRefType, self.memref.type).get_element_type())
        _verify_access(self, cast(MemRefType, self.memref.type), element_type, "element")

    def print(self, printer: Printer) -> None:
        printer.print_string(" write " if self.is_write else " ")
        _print_access(printer, self)

    @classmethod
    def parse(cls, parser: Parser) -> PrefetchOp:
        write = parser.parse_optional_keyword("write") is not None
        memref, map, indices, attributes = _parse_access(parser)
        op = cls(memref, indices, map, write)
        op.attributes |= attributes
        return op



# ----------------------------------------------------------------------------------
# Custom syntax of buffer accesses: `%A[%i * 2 + %k - 1, %j] {attrs} : memref<...>`
# ----------------------------------------------------------------------------------


def _parse_access(
    parser: Parser,
) -> tuple[SSAValue, AffineMap, Sequence[SSAValue], dict[str, Attribute]]:
    """Parse `%A[exprs] {attrs}? : memref-type`; the map's operands become its dims."""
    memref = parser.parse_unresolved_operand()
    symbol_map, indices = parser.parse_affine_map_of_ssa_ids()
    attributes = parser.parse_optional_attr_dict()
    parser.parse_punctuation(":")
    pos = parser.pos
    memref_type = parser.parse_type()
    if not isinstance(memref_type, MemRefType):
        parser.raise_error(f"expected a memref type, got {memref_type}", pos)
    dims = [AffineExpr.dimension(i) for i in range(symbol_map.num_symbols)]
    affine_map = AffineMap(
        len(dims), 0, tuple(e.replace_dims_and_symbols((), dims) for e in symbol_map.results)
    )
    return parser.resolve_operand(memref, memref_type), affine_map, indices, attributes


def _print_access(printer: Printer, op: LoadOp | StoreOp | PrefetchOp) -> None:
    affine_map = op.map.data
    printer.print_ssa_value(op.memref)
    with printer.in_square_brackets():
        printer.print_list(
            affine_map.results,
            lambda e: print_affine_expr(printer, e, op.indices, affine_map.num_dims),
        )
    printer.print_op_attributes(op.attributes)
    printer.print_string(" : ")
    printer.print_attribute(op.memref.type)

