"""Accelerator code: tensor intrinsic calls and dependency tokens between stages."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import cast

from xdsl.dialects.builtin import (
    AffineMapAttr,
    ArrayAttr,
    DictionaryAttr,
    IndexType,
    MemRefType,
    StringAttr,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.ir.affine import AffineExpr, AffineMap
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
    irdl_op_definition,
    opt_prop_def,
    prop_def,
    var_operand_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from xweave.dialects.attributes import python_value
from xweave.dialects.loop.affine_syntax import print_affine_expr


@irdl_op_definition
class IntrinsicOp(IRDLOperation):
    """`loop.intrinsic "vta.gemm"(%acc[%i, 0, 0], %inp[...], %wgt[...]) : ...`: one call of
    a declared tensor intrinsic (see `xweave.accel.api`), made by `tensorize`.

    Each operand is a buffer with an affine access: the index at which the intrinsic's
    tensor starts in it. `params` holds static arguments (sizes, opcodes, ...)."""

    name = "loop.intrinsic"

    callee = prop_def(StringAttr)
    """The qualified intrinsic name, `<accelerator>.<intrinsic>`."""
    buffers = var_operand_def(MemRefType)
    """The intrinsic's tensors: its output first, then its inputs (as declared)."""
    indices = var_operand_def(IndexType)
    """The operands of every access map (shared)."""
    maps = prop_def(ArrayAttr[AffineMapAttr])
    """One map per buffer, from `indices` to the buffer's start index."""
    params = opt_prop_def(DictionaryAttr)
    """Static arguments of the call."""

    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    def __init__(
        self,
        callee: str,
        buffers: Sequence[SSAValue | Operation],
        indices: Sequence[SSAValue | Operation],
        maps: Sequence[AffineMap | AffineMapAttr],
        params: dict[str, Attribute] | DictionaryAttr | None = None,
    ):
        props: dict[str, Attribute] = {
            "callee": StringAttr(callee),
            "maps": ArrayAttr([m if isinstance(m, AffineMapAttr) else AffineMapAttr(m) for m in maps]),
        }
        if params:
            props["params"] = params if isinstance(params, DictionaryAttr) else DictionaryAttr(params)
        super().__init__(operands=[buffers, indices], properties=props)

    @property
    def callee_name(self) -> str:
        return self.callee.data

    @property
    def operand_maps(self) -> list[AffineMap]:
        return [m.data for m in self.maps.data]

    @property
    def static_attrs(self) -> dict[str, object]:
        """`params` as Python values (ints, strings, True for unit, tuples)."""
        if self.params is None:
            return {}
        return {k: python_value(v) for k, v in self.params.data.items()}

    def verify_(self) -> None:
        if not re.fullmatch(r"[A-Za-z_][\w]*\.[A-Za-z_][\w.]*", self.callee.data):
            raise VerifyException(
                f"intrinsic name {self.callee.data!r} must be qualified: '<accelerator>.<name>'"
            )
        maps = self.operand_maps
        if len(maps) != len(self.buffers):
            raise VerifyException(f"{len(self.buffers)} buffers but {len(maps)} access maps")
        for i, (buffer, m) in enumerate(zip(self.buffers, maps)):
            rank = cast(MemRefType, buffer.type).get_num_dims()
            if m.num_dims + m.num_symbols != len(self.indices):
                raise VerifyException(
                    f"access map {i} takes {m.num_dims + m.num_symbols} operands, "
                    f"but the call has {len(self.indices)} indices"
                )
            if len(m.results) != rank:
                raise VerifyException(
                    f"access map {i} has {len(m.results)} results, but buffer {i} has rank {rank}"
                )

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_string_literal(self.callee.data)
        printer.print_string("(")
        for i, (buffer, m) in enumerate(zip(self.buffers, self.operand_maps)):
            if i:
                printer.print_string(", ")
            printer.print_ssa_value(buffer)
            with printer.in_square_brackets():
                printer.print_list(
                    m.results, lambda e: print_affine_expr(printer, e, self.indices, m.num_dims)
                )
        printer.print_string(")")
        if self.params is not None:
            printer.print_string(" params ")
            printer.print_attribute(self.params)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_list(self.buffers, lambda b: printer.print_attribute(b.type))

    @classmethod
    def parse(cls, parser: Parser) -> IntrinsicOp:
        callee = parser.parse_str_literal(" (the intrinsic name)")
        accesses: list[tuple[object, AffineMap, Sequence[SSAValue]]] = []

        def one() -> None:
            buffer = parser.parse_unresolved_operand()
            symbol_map, idx = parser.parse_affine_map_of_ssa_ids()
            accesses.append((buffer, symbol_map, idx))

        parser.parse_comma_separated_list(parser.Delimiter.PAREN, one)
        params = None
        if parser.parse_optional_keyword("params") is not None:
            pos = parser.pos
            params = parser.parse_attribute()
            if not isinstance(params, DictionaryAttr):
                parser.raise_error("expected a dictionary after 'params'", pos)
        attributes = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        types = parser.parse_comma_separated_list(parser.Delimiter.NONE, parser.parse_type)
        if len(types) != len(accesses):
            parser.raise_error(f"expected {len(accesses)} buffer types, got {len(types)}")
        indices: list[SSAValue] = []
        maps: list[AffineMap] = []
        for _, symbol_map, idx in accesses:
            dims = []
            for value in idx:
                if value not in indices:
                    indices.append(value)
            dims = [AffineExpr.dimension(indices.index(v)) for v in idx]
            maps.append(
                AffineMap(0, 0, tuple(e.replace_dims_and_symbols((), dims) for e in symbol_map.results))
            )
        maps = [AffineMap(len(indices), 0, m.results) for m in maps]
        buffers = [parser.resolve_operand(b, t) for (b, _, _), t in zip(accesses, types)]
        op = cls(callee, buffers, indices, maps, params)
        op.attributes |= attributes
        return op


_STAGE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class _DepOp(IRDLOperation):
    """Shared part of `loop.dep_push` / `loop.dep_pop`."""

    src = prop_def(StringAttr)
    """The producing stage (module), e.g. `load`."""
    dst = prop_def(StringAttr)
    """The consuming stage, e.g. `compute`."""

    assembly_format = "$src `->` $dst attr-dict"

    def __init__(self, src: str, dst: str):
        super().__init__(properties={"src": StringAttr(src), "dst": StringAttr(dst)})

    @property
    def src_stage(self) -> str:
        return self.src.data

    @property
    def dst_stage(self) -> str:
        return self.dst.data

    def verify_(self) -> None:
        for what, value in (("source", self.src.data), ("destination", self.dst.data)):
            if not _STAGE_NAME.fullmatch(value):
                raise VerifyException(f"invalid {what} stage name {value!r}")
        if self.src.data == self.dst.data:
            raise VerifyException(
                f"a dependency token goes between two different stages, got {self.src.data!r} twice"
            )


@irdl_op_definition
class DepPushOp(_DepOp):
    """`loop.dep_push "load" -> "compute"`: once the preceding work of stage `src` is done,
    send one token to stage `dst` (latency hiding; inserted by `virtual-threads`)."""

    name = "loop.dep_push"


@irdl_op_definition
class DepPopOp(_DepOp):
    """`loop.dep_pop "load" -> "compute"`: stage `dst` waits for one token from `src`
    before its following work."""

    name = "loop.dep_pop"
