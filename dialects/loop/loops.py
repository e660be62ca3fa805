"""`loop.for` and its terminator `loop.yield`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

from xdsl.dialects.builtin import I64, IndexType, IntegerAttr, StringAttr, i64
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    lazy_traits_def,
    opt_prop_def,
    prop_def,
    region_def,
    traits_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.rewriter import InsertPoint
from xdsl.traits import (
    HasParent,
    IsTerminator,
    Pure,
    RecursiveMemoryEffect,
    SingleBlockImplicitTerminator,
    ensure_terminator,
)
from xdsl.utils.exceptions import VerifyException

from xweave.dialects.loop.attributes import ForKind, ForKindAttr, INT64_MAX, i64_attr, parse_i64


@irdl_op_definition
class YieldOp(IRDLOperation):
    """Terminates the body of a `loop.for` (implicit in the custom syntax)."""

    name = "loop.yield"

    assembly_format = "attr-dict"

    traits = lazy_traits_def(lambda: (IsTerminator(), HasParent(ForOp), Pure()))


@irdl_op_definition
class ForOp(IRDLOperation):
    """`loop.for "name" %i = lb to ub step s kind { ... }`: a loop with constant bounds.

    The optional name (`<stage>.<axis>`, e.g. `conv2d.rc`) is how schedules address a
    loop: `loop-split{loop="conv2d.rc" factor=4}` (quoted: pipeline values with dots
    must be) makes `conv2d.rc.outer` and
    `conv2d.rc.inner`, as TVM names split axes.
    """

    name = "loop.for"

    lb = prop_def(IntegerAttr[I64])
    """First value of the induction variable."""
    ub = prop_def(IntegerAttr[I64])
    """Exclusive upper bound of the induction variable."""
    step = prop_def(IntegerAttr[I64], default_value=IntegerAttr(1, i64))
    """Increment of the induction variable (positive)."""
    kind = prop_def(ForKindAttr, default_value=ForKindAttr(ForKind.SERIAL))
    """How the iterations are executed."""
    loop_name = opt_prop_def(StringAttr, prop_name="name")
    """The name schedules address this loop by."""

    body = region_def("single_block")
    """One block, whose only argument is the `index` induction variable."""

    traits = traits_def(SingleBlockImplicitTerminator(YieldOp), RecursiveMemoryEffect())

    def __init__(
        self,
        lb: int | IntegerAttr,
        ub: int | IntegerAttr,
        step: int | IntegerAttr = 1,
        kind: ForKind | ForKindAttr = ForKind.SERIAL,
        body: Region | Block | None = None,
        name: str | StringAttr | None = None,
    ):
        """Build a loop; without `body`, an empty body with the induction variable."""
        if body is None:
            body = Block(arg_types=[IndexType()])
        properties = {
            "lb": i64_attr(lb),
            "ub": i64_attr(ub),
            "step": i64_attr(step),
            "kind": kind if isinstance(kind, ForKindAttr) else ForKindAttr(kind),
        }
        if name is not None:
            properties["name"] = StringAttr(name) if isinstance(name, str) else name
        super().__init__(
            properties=properties,
            regions=[[body] if isinstance(body, Block) else body],
        )
        ensure_terminator(self, self.get_trait(SingleBlockImplicitTerminator))

    @property
    def name_str(self) -> str | None:
        """The loop's name, if it has one."""
        return self.loop_name.data if self.loop_name is not None else None

    @property
    def induction_var(self) -> SSAValue:
        """The `index` block argument."""
        return self.body.block.args[0]

    @property
    def range(self) -> range:
        """The values taken by the induction variable."""
        return range(self.lb.value.data, self.ub.value.data, self.step.value.data)

    @property
    def extent(self) -> int:
        """The trip count."""
        return len(self.range)

    @property
    def insertion_point(self) -> InsertPoint:
        """The end of the body, just before the terminator."""
        return InsertPoint.before(cast(Operation, self.body.block.last_op))

    def add_ops(self, ops: Sequence[Operation]) -> None:
        """Append `ops` to the body, before the terminator."""
        self.body.block.insert_ops_before(ops, cast(Operation, self.body.block.last_op))

    def verify_(self) -> None:
        lb, ub, step = self.lb.value.data, self.ub.value.data, self.step.value.data
        if step <= 0:
            raise VerifyException(f"step must be positive, got {step}")
        if lb > ub:
            raise VerifyException(f"lower bound {lb} exceeds upper bound {ub}")
        # Generated code counts in i64: the trip length and the step past the last
        # iteration must not overflow.
        if ub - lb > INT64_MAX or ub - 1 + step > INT64_MAX:
            raise VerifyException(
                f"bounds {lb} to {ub} step {step} overflow a 64-bit induction variable"
            )
        args = self.body.block.args
        if len(args) != 1 or not isinstance(args[0].type, IndexType):
            types = ", ".join(str(a.type) for a in args)
            raise VerifyException(
                f"body must have exactly one block argument, the index induction "
                f"variable; got ({types})"
            )

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        if self.loop_name is not None:
            printer.print_string_literal(self.loop_name.data)
            printer.print_string(" ")
        printer.print_ssa_value(self.induction_var)
        printer.print_string(f" = {self.lb.value.data} to {self.ub.value.data}")
        if self.step.value.data != 1:
            printer.print_string(f" step {self.step.value.data}")
        if self.kind.data != ForKind.SERIAL:
            printer.print_string(f" {self.kind.data}")
        printer.print_string(" ")
        printer.print_region(
            self.body, print_entry_block_args=False, print_block_terminators=False
        )
        printer.print_op_attributes(self.attributes)

    @classmethod
    def parse(cls, parser: Parser) -> ForOp:
        name = parser.parse_optional_str_literal()
        indvar = parser.parse_argument(expect_type=False)
        parser.parse_punctuation("=")
        lb = parse_i64(parser, "lower bound")
        parser.parse_keyword("to")
        ub = parse_i64(parser, "upper bound")
        step = 1
        if parser.parse_optional_keyword("step") is not None:
            step = parse_i64(parser, "step")
        kind = parser.parse_optional_str_enum(ForKind) or ForKind.SERIAL
        body = parser.parse_region((indvar.resolve(IndexType()),))
        op = cls(lb, ub, step, kind, body, name)
        op.attributes |= parser.parse_optional_attr_dict()
        return op
