"""Fused groups of graph ops (made by the `graph-fuse` pass)."""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Attribute, Region, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    region_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import (
    HasParent,
    IsolatedFromAbove,
    IsTerminator,
    Pure,
    RecursiveMemoryEffect,
)
from xdsl.utils.exceptions import VerifyException

from xweave.dialects.graph.base import GraphOperation, PatternKind, pattern_kind_def
from xweave.dialects.graph.constants import ConstantOp


class _FusedPatternKind(property):
    """OPAQUE on the class; on an instance, the kind of the group's master op (the
    hardest to fuse), which is what decides how the group may grow further."""

    def __init__(self):
        super().__init__(lambda op: op.master_kind())

    def __get__(self, obj: object, objtype: type | None = None) -> PatternKind:  # pyright: ignore
        return PatternKind.OPAQUE if obj is None else obj.master_kind()  # pyright: ignore


def _expect_equal_types(what: str, values: Sequence[SSAValue], other: str,
                        expected: Sequence[SSAValue]) -> None:
    """`values` have the types of `expected` (`what`, `other`: their names in the error)."""
    got, want = [v.type for v in values], [v.type for v in expected]
    if got != want:
        raise VerifyException(
            f"graph.fused: {what} types ({', '.join(map(str, got))}) must equal "
            f"the {other} types ({', '.join(map(str, want))})"
        )


@irdl_op_definition
class FusedOp(IRDLOperation):
    """A group of graph ops fused into one kernel (see the `graph-fuse` pass).

    The single-block region's arguments stand for the operands, so the body reads
    nothing from above; `graph.yield` gives the results. Constants stay outside:

    ```mlir
    %y = graph.fused (%a = %x, %b = %w) : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>)
         -> tensor<1x4x8x8xf32> {
      %c = graph.conv2d %a, %b {...} : (...) -> tensor<1x4x8x8xf32>
      %r = graph.relu %c : tensor<1x4x8x8xf32>
      graph.yield %r : tensor<1x4x8x8xf32>
    }
    ```
    """

    name = "graph.fused"
    pattern_kind = _FusedPatternKind()  # pyright: ignore[reportAssignmentType]

    inputs = var_operand_def(TensorType)
    outputs = var_result_def(TensorType)
    body = region_def("single_block")

    traits = traits_def(IsolatedFromAbove(), RecursiveMemoryEffect())

    def __init__(self, inputs: Sequence[SSAValue], result_types: Sequence[Attribute], body: Region):
        super().__init__(operands=[inputs], result_types=[result_types], regions=[body])

    def master_kind(self) -> PatternKind:
        """The largest pattern kind of the ops inside."""
        kinds = [op.pattern_kind for op in self.body.block.ops if not isinstance(op, YieldOp)]
        return max(kinds, default=PatternKind.OPAQUE)

    def verify_(self) -> None:
        block = self.body.block
        _expect_equal_types("block argument", block.args, "operand", self.inputs)
        terminator = block.last_op
        if not isinstance(terminator, YieldOp):
            raise VerifyException("graph.fused: the body must end in graph.yield")
        _expect_equal_types("yielded", terminator.values, "result", self.outputs)
        if not self.outputs:
            raise VerifyException("graph.fused: expected at least one result")
        for value in terminator.values:
            if value.owner is block:
                raise VerifyException(
                    "graph.fused: a yielded value must be computed inside the group, "
                    "not be one of its arguments"
                )
        for op in block.ops:
            if isinstance(op, YieldOp):
                continue
            if isinstance(op, FusedOp):
                raise VerifyException("graph.fused: groups cannot be nested")
            if isinstance(op, ConstantOp):
                raise VerifyException(
                    "graph.fused: graph.constant must stay outside the group (pass it as an operand)"
                )
            if not isinstance(op, GraphOperation):
                raise VerifyException(f"graph.fused: only graph ops may be fused, found {op.name}")

    def print(self, printer: Printer):
        printer.print_string(" (")
        printer.print_list(
            zip(self.body.block.args, self.inputs, strict=True),
            lambda pair: (
                printer.print_ssa_value(pair[0]),
                printer.print_string(" = "),
                printer.print_ssa_value(pair[1]),
            ),
        )
        printer.print_string(") : ")
        printer.print_operation_type(self)
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=False)
        if self.attributes:
            printer.print_op_attributes(self.attributes, print_keyword=True)

    @classmethod
    def parse(cls, parser: Parser) -> FusedOp:
        def assignment():
            arg = parser.parse_argument(expect_type=False)
            parser.parse_punctuation("=")
            return arg, parser.parse_unresolved_operand()

        pairs = parser.parse_comma_separated_list(parser.Delimiter.PAREN, assignment)
        parser.parse_punctuation(":")
        start = parser.pos
        function_type = parser.parse_function_type()
        types = function_type.inputs.data
        if len(pairs) != len(types):
            parser.raise_error(
                f"graph.fused binds {len(pairs)} arguments but its type lists {len(types)} operands",
                start,
                parser.pos,
            )
        args = [arg.resolve(t) for (arg, _), t in zip(pairs, types)]
        operands = [parser.resolve_operand(o, t) for (_, o), t in zip(pairs, types)]
        body = parser.parse_region(args)
        op = cls(operands, function_type.outputs.data, body)
        attrs = parser.parse_optional_attr_dict_with_keyword()
        if attrs is not None:
            op.attributes |= attrs.data
        return op


@irdl_op_definition
class YieldOp(IRDLOperation):
    """The results of a `graph.fused` group."""

    name = "graph.yield"
    pattern_kind = pattern_kind_def(PatternKind.OPAQUE)

    values = var_operand_def(TensorType)

    traits = traits_def(IsTerminator(), HasParent(FusedOp), Pure())
    assembly_format = "attr-dict ($values^ `:` type($values))?"

    def __init__(self, *values: SSAValue):
        super().__init__(operands=[values])
