"""The `te` dialect: tensor expressions, *what* each tensor holds, with no schedule.

A kernel at the te stage is a `func.func` whose arguments are the placeholders and
whose body is one `te.compute` per stage (see docs/architecture.md):

```mlir
%C = te.compute (%i, %j) in [64, 64] reduce sum (%k) in [32] {
  %a = te.extract %A[%i, %k] : tensor<64x32xf32>
  %b = te.extract %B[%k, %j] : tensor<32x64xf32>
  %p = arith.mulf %a, %b : f32
  te.yield %p : f32
} {name = "matmul"} : tensor<64x64xf32>
```

The body of a `te.compute` is evaluated at every point of its index domain (the
spatial indices, then the reduce indices); with a reduction the yielded values are
combined by the reducer, starting from its identity. `te.if` is a lazy conditional,
so a padded read `te.extract` in the untaken branch never happens.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from xdsl.dialects.builtin import (
    I64,
    AnyFloat,
    DenseArrayBase,
    IndexType,
    StringAttr,
    TensorType,
    i1,
    i64,
)
from xdsl.dialects.utils import EnumAttribute
from xdsl.ir import Attribute, Block, Dialect, Region, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    base,
    irdl_attr_definition,
    irdl_op_definition,
    lazy_traits_def,
    operand_def,
    opt_prop_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.parser import AttrParser, Parser
from xdsl.printer import Printer
from xdsl.traits import HasParent, IsTerminator, Pure, RecursiveMemoryEffect
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.str_enum import StrEnum

from xweave.dialects.dtypes import is_unsigned, value_type


class Reducer(StrEnum):
    """How a `te.compute` combines the values of its reduce domain."""

    SUM = "sum"
    MAX = "max"
    MIN = "min"
    PROD = "prod"

    def identity(self, element_type: Attribute) -> int | float:
        """The value the reduction starts from, for `element_type` (a scalar type, or
        an unsigned storage type such as `ui8`: its bits as a signless value)."""
        if self is Reducer.SUM:
            return 0.0 if isinstance(element_type, AnyFloat) else 0
        if self is Reducer.PROD:
            return 1.0 if isinstance(element_type, AnyFloat) else 1
        if isinstance(element_type, AnyFloat):
            return float("-inf") if self is Reducer.MAX else float("inf")
        width = 64 if isinstance(element_type, IndexType) else element_type.width.data
        if width == 1:
            return 0 if self is Reducer.MAX else 1
        if is_unsigned(element_type):  # (the bit pattern of 2^width - 1 is -1)
            return 0 if self is Reducer.MAX else -1
        return -(1 << (width - 1)) if self is Reducer.MAX else (1 << (width - 1)) - 1


@irdl_attr_definition
class ReducerAttr(EnumAttribute[Reducer]):
    """A reducer, written `#te.reducer<sum>`."""

    name = "te.reducer"

    def print_parameter(self, printer: Printer) -> None:
        with printer.in_angle_brackets():
            printer.print_string(self.data.value)

    @classmethod
    def parse_parameter(cls, parser: AttrParser) -> Reducer:
        with parser.in_angle_brackets():
            return parser.parse_str_enum(Reducer)


def _i64_array(values: Sequence[int]) -> DenseArrayBase[I64]:
    return DenseArrayBase.from_list(i64, values)


@irdl_op_definition
class ComputeOp(IRDLOperation):
    """A tensor defined elementwise by its body over an index domain, maybe reduced."""

    name = "te.compute"

    shape = prop_def(DenseArrayBase.constr(i64))
    """Extents of the spatial domain: the shape of the result."""
    reduce_shape = prop_def(DenseArrayBase.constr(i64))
    """Extents of the reduce domain (empty without a reduction)."""
    reducer = opt_prop_def(ReducerAttr)
    """How values over the reduce domain are combined; present iff there is one."""
    tag = opt_prop_def(StringAttr, prop_name="name")
    """A tag such as "conv2d" naming the stage; schedules key on it."""

    body = region_def("single_block")
    """Block arguments: spatial then reduce indices; ends in `te.yield` of a scalar."""
    result = result_def(TensorType)

    traits = traits_def(RecursiveMemoryEffect())

    def __init__(
        self,
        result_type: TensorType,
        body: Region | Block,
        *,
        reduce_shape: Sequence[int] = (),
        reducer: Reducer | str | None = None,
        name: str | None = None,
        shape: Sequence[int] | None = None,
        attributes: Mapping[str, Attribute] | None = None,
    ):
        if shape is None:
            shape = result_type.get_shape()
        super().__init__(
            result_types=[result_type],
            regions=[Region(body) if isinstance(body, Block) else body],
            properties={
                "shape": _i64_array(shape),
                "reduce_shape": _i64_array(reduce_shape),
                "reducer": None if reducer is None else ReducerAttr(Reducer(reducer)),
                "name": None if name is None else StringAttr(name),
            },
            attributes=attributes,
        )

    @property
    def spatial_shape(self) -> tuple[int, ...]:
        """The spatial extents, as Python ints."""
        return self.shape.get_values()

    @property
    def reduce_extents(self) -> tuple[int, ...]:
        """The reduce extents, as Python ints (empty without a reduction)."""
        return self.reduce_shape.get_values()

    @property
    def spatial_args(self) -> tuple[SSAValue, ...]:
        """The block arguments indexing the spatial domain."""
        return tuple(self.body.block.args[: len(self.shape)])

    @property
    def reduce_args(self) -> tuple[SSAValue, ...]:
        """The block arguments indexing the reduce domain."""
        return tuple(self.body.block.args[len(self.shape) :])

    @property
    def yield_op(self) -> YieldOp:
        """The body's terminator."""
        op = self.body.block.last_op
        assert isinstance(op, YieldOp)
        return op

    def verify_(self) -> None:
        shape, rshape = self.spatial_shape, self.reduce_extents
        if any(e <= 0 for e in shape + rshape):
            raise VerifyException(
                f"extents must be positive, got shape {list(shape)} "
                f"and reduce_shape {list(rshape)}"
            )
        if rshape and self.reducer is None:
            raise VerifyException("a reduction (non-empty reduce_shape) needs a reducer")
        if not rshape and self.reducer is not None:
            raise VerifyException(
                f"reducer '{self.reducer.data}' given without a reduce domain"
            )
        result_type = self.result.type
        assert isinstance(result_type, TensorType)
        if tuple(result_type.get_shape()) != shape:
            raise VerifyException(
                f"result type {result_type} does not match shape {list(shape)}"
            )
        args = self.body.block.args
        if len(args) != len(shape) + len(rshape):
            raise VerifyException(
                f"expected {len(shape) + len(rshape)} block arguments "
                f"({len(shape)} spatial + {len(rshape)} reduce), got {len(args)}"
            )
        for i, arg in enumerate(args):
            if not isinstance(arg.type, IndexType):
                raise VerifyException(
                    f"block argument #{i} must be of type index, got {arg.type}"
                )
        terminator = self.body.block.last_op
        if not isinstance(terminator, YieldOp):
            raise VerifyException("body must end with te.yield")
        if terminator.value.type != value_type(result_type.element_type):
            raise VerifyException(
                f"yielded type {terminator.value.type} does not match "
                f"result element type {result_type.element_type}"
            )

    # te.compute (%i, %j) in [M, N] reduce sum (%k) in [K] {...} {name = "t"} : tensor<...>
    @staticmethod
    def _parse_domain(parser: Parser) -> tuple[list[Parser.UnresolvedArgument], list[int]]:
        args = parser.parse_comma_separated_list(
            Parser.Delimiter.PAREN, lambda: parser.parse_argument(expect_type=False)
        )
        parser.parse_keyword("in")
        extents = parser.parse_comma_separated_list(
            Parser.Delimiter.SQUARE, parser.parse_integer
        )
        if len(args) != len(extents):
            parser.raise_error(
                f"expected {len(args)} extents for {len(args)} index variables, "
                f"got {len(extents)}"
            )
        return args, extents

    @classmethod
    def parse(cls, parser: Parser) -> ComputeOp:
        args, shape = cls._parse_domain(parser)
        reducer, reduce_shape = None, []
        if parser.parse_optional_keyword("reduce"):
            reducer = parser.parse_str_enum(Reducer)
            reduce_args, reduce_shape = cls._parse_domain(parser)
            args += reduce_args
        body = parser.parse_region([arg.resolve(IndexType()) for arg in args])
        pos = parser.pos
        attributes = dict(parser.parse_optional_attr_dict())
        for reserved in ("shape", "reduce_shape", "reducer"):
            if reserved in attributes:
                parser.raise_error(f"'{reserved}' is given by the custom syntax", pos)
        tag = attributes.pop("name", None)
        parser.parse_punctuation(":")
        result_type = parser.parse_type()
        return cls.create(
            result_types=[result_type],
            regions=[body],
            properties={
                "shape": _i64_array(shape),
                "reduce_shape": _i64_array(reduce_shape),
            }
            | ({} if reducer is None else {"reducer": ReducerAttr(reducer)})
            | ({} if tag is None else {"name": tag}),
            attributes=attributes,
        )

    def _has_custom_form(self) -> bool:
        """Whether the custom syntax can express this op (it may not verify)."""
        if len(self.body.blocks) != 1:
            return False
        args = self.body.block.args
        return (
            len(args) == len(self.shape) + len(self.reduce_shape)
            and all(isinstance(arg.type, IndexType) for arg in args)
            and bool(self.reduce_extents) == (self.reducer is not None)
        )

    def print(self, printer: Printer) -> None:
        if not self._has_custom_form():
            printer.print_op_with_default_format(self)
            return

        def print_domain(args: Sequence[SSAValue], extents: Sequence[int]) -> None:
            with printer.in_parens():
                printer.print_list(args, printer.print_ssa_value)
            printer.print_string(" in [")
            printer.print_list(extents, lambda e: printer.print_string(str(e)))
            printer.print_string("]")

        printer.print_string(" ")
        print_domain(self.spatial_args, self.spatial_shape)
        if self.reducer is not None:
            printer.print_string(f" reduce {self.reducer.data.value} ")
            print_domain(self.reduce_args, self.reduce_extents)
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=False)
        attributes: dict[str, Attribute] = {}
        if self.tag is not None:
            attributes["name"] = self.tag
        attributes |= self.attributes
        printer.print_op_attributes(attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.result.type)


@irdl_op_definition
class ExtractOp(IRDLOperation):
    """Read one element of a tensor (a placeholder or an earlier `te.compute`).

    The result has the tensor's element type, or for an unsigned storage type (`ui8`)
    the signless integer of its width (`dtypes.value_type`)."""

    name = "te.extract"

    tensor = operand_def(TensorType)
    indices = var_operand_def(IndexType)
    result = result_def()

    traits = traits_def(Pure())

    def __init__(self, tensor: SSAValue, indices: Sequence[SSAValue]):
        assert isinstance(tensor.type, TensorType)
        super().__init__(
            operands=[tensor, indices], result_types=[value_type(tensor.type.element_type)]
        )

    def verify_(self) -> None:
        tensor_type = self.tensor.type
        assert isinstance(tensor_type, TensorType)
        if len(self.indices) != tensor_type.get_num_dims():
            raise VerifyException(
                f"expected {tensor_type.get_num_dims()} indices for a tensor of "
                f"rank {tensor_type.get_num_dims()}, got {len(self.indices)}"
            )
        expected = value_type(tensor_type.element_type)
        if self.result.type != expected:
            raise VerifyException(
                f"result type {self.result.type} does not match the element type "
                f"{tensor_type.element_type} (expected {expected})"
            )

    # te.extract %t[%i, %j] : tensor<4x8xf32>
    @classmethod
    def parse(cls, parser: Parser) -> ExtractOp:
        tensor = parser.parse_unresolved_operand()
        indices = parser.parse_comma_separated_list(
            Parser.Delimiter.SQUARE, parser.parse_unresolved_operand
        )
        attributes = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        tensor_type = parser.parse_type()
        if not isinstance(tensor_type, TensorType):
            parser.raise_error(f"expected a tensor type, got {tensor_type}")
        op = cls(parser.resolve_operand(tensor, tensor_type),
                 [parser.resolve_operand(i, IndexType()) for i in indices])
        op.attributes |= attributes
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_ssa_value(self.tensor)
        printer.print_string("[")
        printer.print_list(self.indices, printer.print_ssa_value)
        printer.print_string("]")
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.tensor.type)


@irdl_op_definition
class IfOp(IRDLOperation):
    """A lazy conditional: only the taken branch is evaluated."""

    name = "te.if"

    cond = operand_def(i1)
    result = result_def()
    then_region = region_def("single_block")
    else_region = region_def("single_block")

    traits = traits_def(RecursiveMemoryEffect())

    assembly_format = (
        "$cond `->` type($result) $then_region `else` $else_region attr-dict"
    )

    def __init__(
        self,
        cond: SSAValue,
        result_type: Attribute,
        then_region: Region | Block,
        else_region: Region | Block,
    ):
        regions = [
            Region(r) if isinstance(r, Block) else r for r in (then_region, else_region)
        ]
        super().__init__(operands=[cond], result_types=[result_type], regions=regions)

    def verify_(self) -> None:
        for branch, region in (("then", self.then_region), ("else", self.else_region)):
            terminator = region.block.last_op
            if not isinstance(terminator, YieldOp):
                raise VerifyException(f"{branch} branch must end with te.yield")
            if terminator.value.type != self.result.type:
                raise VerifyException(
                    f"{branch} branch yields {terminator.value.type}, "
                    f"expected {self.result.type}"
                )


@irdl_op_definition
class YieldOp(IRDLOperation):
    """The scalar value of a `te.compute` body or a `te.if` branch."""

    name = "te.yield"

    value = operand_def()

    traits = lazy_traits_def(
        lambda: (IsTerminator(), HasParent(ComputeOp, IfOp), Pure())
    )

    assembly_format = "$value attr-dict `:` type($value)"

    def __init__(self, value: SSAValue):
        super().__init__(operands=[value])


TE = Dialect("te", [ComputeOp, ExtractOp, IfOp, YieldOp], [ReducerAttr])
