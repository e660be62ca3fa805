"""Vector arithmetic the upstream dialects lack: conversions of vectors, and the
integer dot products of quantized kernels.

* `loop.convert`: arith's conversions (extsi, extui, trunci, sitofp, uitofp, fptosi,
  fptoui, extf, truncf) on a scalar or on each lane of a 1-D vector (xDSL's arith casts
  take scalars only); loop-vectorize makes them of vectorized casts:

      %w = loop.convert extui %v : vector<8xi8> to vector<8xi32>

  fptosi/fptoui saturate (a float beyond the result's range gives its bound, NaN
  gives 0), as LLVM's `fptosi.sat` does.

* `loop.dot`: each i32 lane of `acc` plus the dot product of `a` (G unsigned 8-bit
  values, or signed 16-bit ones with 16-bit `b`, the same for every lane) with the
  lane's G consecutive elements of `b` (signed, 8 or 16 bits):

      %r = loop.dot %acc, %a, %b : vector<8xi32>, vector<4xi8>, vector<32xi8>
      // r[i] = acc[i] + sum_j zext(a[j]) * sext(b[4 i + j])   (exact, wrapping i32)

  The x86 dot-product instructions: G = 4 with int8 b is `vpdpbusd` (VNNI); G = 2 with
  int16 b is `vpmaddwd` (its `a` best already int16: one broadcast load). Without VNNI, the int8 form is `vpmaddubsw` + `vpmaddwd`,
  whose 16-bit sums of two products saturate beyond +-32767: only for `b` within
  +-64 (the op's `narrow` unit attribute says so); otherwise it is computed exactly by
  16-bit products (slower), and schedules give such kernels int16 weights instead.
"""

from __future__ import annotations

from xdsl.dialects.builtin import AnyFloat, IntegerType, StringAttr, UnitAttr, VectorType, i32
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

CONVERSIONS = ("extsi", "extui", "trunci", "sitofp", "uitofp", "fptosi", "fptoui",
               "extf", "truncf")
"""The kinds of `loop.convert` (arith's conversion ops of the same names)."""


def _scalar(t: Attribute) -> Attribute:
    return t.element_type if isinstance(t, VectorType) else t


def _lanes(t: Attribute) -> int | None:
    return t.get_shape()[0] if isinstance(t, VectorType) else None


def _width(t: Attribute) -> int:
    return t.width.data if isinstance(t, IntegerType) else t.bitwidth  # pyright: ignore


@irdl_op_definition
class ConvertOp(IRDLOperation):
    """An arith conversion of a scalar or of every lane of a 1-D vector (see the module
    docstring): `loop.convert <kind> %x : T1 to T2`."""

    name = "loop.convert"

    kind = prop_def(StringAttr)
    input = operand_def()
    result = result_def()

    traits = traits_def(Pure())

    def __init__(self, kind: str, input: SSAValue, result_type: Attribute):
        super().__init__(operands=[input], result_types=[result_type],
                         properties={"kind": StringAttr(kind)})

    def verify_(self) -> None:
        kind = self.kind.data
        if kind not in CONVERSIONS:
            raise VerifyException(f"loop.convert: unknown kind '{kind}' (expected one of "
                                  f"{', '.join(CONVERSIONS)})")
        source, target = self.input.type, self.result.type
        for t in (source, target):
            if isinstance(t, VectorType) and t.get_num_dims() != 1:
                raise VerifyException(f"loop.convert: {t} is not a 1-D vector")
        if _lanes(source) != _lanes(target):
            raise VerifyException(f"loop.convert: {source} and {target} differ in shape")
        s, d = _scalar(source), _scalar(target)
        integer_in = kind in ("extsi", "extui", "trunci", "sitofp", "uitofp")
        integer_out = kind in ("extsi", "extui", "trunci", "fptosi", "fptoui")
        ok = (isinstance(s, IntegerType) if integer_in else isinstance(s, AnyFloat)) and (
            isinstance(d, IntegerType) if integer_out else isinstance(d, AnyFloat))
        if ok and kind in ("extsi", "extui", "extf"):
            ok = _width(d) > _width(s)
        if ok and kind in ("trunci", "truncf"):
            ok = _width(d) < _width(s)
        if not ok:
            raise VerifyException(f"loop.convert: {kind} cannot convert {source} to {target}")

    @classmethod
    def parse(cls, parser: Parser) -> ConvertOp:
        kind = parser.parse_identifier()
        value = parser.parse_unresolved_operand()
        attributes = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        source = parser.parse_type()
        parser.parse_keyword("to")
        target = parser.parse_type()
        op = cls(kind, parser.resolve_operand(value, source), target)
        op.attributes |= attributes
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(f" {self.kind.data} ")
        printer.print_ssa_value(self.input)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.input.type)
        printer.print_string(" to ")
        printer.print_attribute(self.result.type)


@irdl_op_definition
class DotOp(IRDLOperation):
    """acc + per-lane dot products of unsigned 8-bit `a` (broadcast) with groups of
    signed `b` (see the module docstring):
    `loop.dot %acc, %a, %b : vector<Nxi32>, vector<Gxi8>, vector<(N*G)xiB>`."""

    name = "loop.dot"

    acc = operand_def(VectorType)
    a = operand_def(VectorType)
    b = operand_def(VectorType)
    result = result_def(VectorType)
    narrow = opt_prop_def(UnitAttr)
    """b lies within +-64 (a 16-bit sum of two u8 x s8 products cannot saturate)."""

    traits = traits_def(Pure())

    def __init__(self, acc: SSAValue, a: SSAValue, b: SSAValue, narrow: bool = False):
        super().__init__(operands=[acc, a, b], result_types=[acc.type],
                         properties={"narrow": UnitAttr()} if narrow else {})

    @property
    def group(self) -> int:
        """G: the elements of `b` (and of `a`) each lane sums over."""
        return self.a.type.get_shape()[0]  # pyright: ignore[reportAttributeAccessIssue]

    @property
    def lanes(self) -> int:
        return self.acc.type.get_shape()[0]  # pyright: ignore[reportAttributeAccessIssue]

    def verify_(self) -> None:
        acc, a, b = (v.type for v in (self.acc, self.a, self.b))
        for what, t in (("acc", acc), ("a", a), ("b", b)):
            if t.get_num_dims() != 1:  # pyright: ignore[reportAttributeAccessIssue]
                raise VerifyException(f"loop.dot: {what} {t} is not a 1-D vector")
        if acc.element_type != i32 or self.result.type != acc:  # pyright: ignore
            raise VerifyException(f"loop.dot: expected i32 lanes in acc and result, got {acc} "
                                  f"and {self.result.type}")
        element = b.element_type  # pyright: ignore
        if element not in (IntegerType(8), IntegerType(16)):
            raise VerifyException(f"loop.dot: b must hold 8- or 16-bit values, got {b}")
        if a.element_type not in (IntegerType(8), element):  # pyright: ignore
            raise VerifyException(f"loop.dot: a must hold 8-bit values (or 16-bit ones, with "
                                  f"16-bit b), got {a}")
        if b.get_shape()[0] != self.lanes * self.group:  # pyright: ignore
            raise VerifyException(
                f"loop.dot: b {b} must hold {self.group} values per lane of {acc} "
                f"({self.lanes * self.group})")
        if self.narrow is not None and element != IntegerType(8):
            raise VerifyException("loop.dot: narrow applies to 8-bit b only")

    @classmethod
    def parse(cls, parser: Parser) -> DotOp:
        operands = [parser.parse_unresolved_operand()]
        for _ in range(2):
            parser.parse_punctuation(",")
            operands.append(parser.parse_unresolved_operand())
        attributes = dict(parser.parse_optional_attr_dict())
        narrow = attributes.pop("narrow", None) is not None
        parser.parse_punctuation(":")
        types = [parser.parse_type()]
        for _ in range(2):
            parser.parse_punctuation(",")
            types.append(parser.parse_type())
        acc, a, b = (parser.resolve_operand(o, t) for o, t in zip(operands, types))
        op = cls(acc, a, b, narrow)
        op.attributes |= attributes
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_list((self.acc, self.a, self.b), printer.print_ssa_value)
        attributes: dict[str, Attribute] = {}
        if self.narrow is not None:
            attributes["narrow"] = UnitAttr()
        printer.print_op_attributes(attributes | self.attributes)
        printer.print_string(" : ")
        printer.print_list((self.acc.type, self.a.type, self.b.type), printer.print_attribute)


__all__ = ["CONVERSIONS", "ConvertOp", "DotOp"]
