"""The base of every graph op: fusion pattern kinds, the shared verifier, the common operand layouts."""

from __future__ import annotations

import abc
from collections.abc import Sequence
from enum import IntEnum

from xdsl.dialects.builtin import (
    Float16Type,
    Float32Type,
    Float64Type,
    IntegerType,
    TensorType,
    i1,
)
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    ParsePropInAttrDict,
    operand_def,
    result_def,
    traits_def,
)
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from xweave.dialects.graph.tensors import element_type_of, shape_of, tensor_type

# --------------------------------------------------------------------------------------
# Operator patterns (TVM's OpPatternKind, same order and values)
# --------------------------------------------------------------------------------------


class PatternKind(IntEnum):
    """How an operator's outputs depend on its inputs; larger is harder to fuse."""

    ELEMWISE = 0
    """out[i] = f(in[i]) with identical shapes."""
    BROADCAST = 1
    """Elementwise with numpy broadcasting of the inputs."""
    INJECTIVE = 2
    """Each output element reads one input element (reshape, transpose, ...)."""
    REDUCTION = 3
    """Commutative reduction over some axes (global pools, sums)."""
    OUT_ELEMWISE_FUSABLE = 4
    """Complex op (conv2d, dense, pools) whose output can absorb elementwise ops."""
    OPAQUE = 8
    """Not fusable (constants, anything unknown)."""


class _PatternKindDef(property):
    """An op class's PatternKind, readable on the class and on its instances.

    xDSL only accepts UPPER_CASE ClassVars on op definitions, but lets properties
    through; this property also answers on the class (`Conv2dOp.pattern_kind`).
    """

    def __init__(self, kind: PatternKind):
        super().__init__(lambda _op: kind)
        self.kind = kind

    def __get__(self, obj: object, objtype: type | None = None) -> PatternKind:  # pyright: ignore
        return self.kind


def pattern_kind_def(kind: PatternKind) -> PatternKind:
    """Declare `pattern_kind` on a graph op class: `pattern_kind = pattern_kind_def(K)`."""
    return _PatternKindDef(kind)  # pyright: ignore[reportReturnType]


# --------------------------------------------------------------------------------------
# Base classes
# --------------------------------------------------------------------------------------


class GraphOperation(IRDLOperation, abc.ABC):
    """Base of every graph op: static tensor shapes, one element type throughout (ops
    with other rules override `verify_element_types`)."""

    pattern_kind = pattern_kind_def(PatternKind.OPAQUE)

    traits = traits_def(Pure())
    irdl_options = (ParsePropInAttrDict(),)

    def verify_(self) -> None:
        types = [v.type for v in (*self.operands, *self.results)]
        for typ in types:  # all TensorType, by the operand/result constraints
            if any(d < 0 for d in typ.get_shape()):  # pyright: ignore[reportAttributeAccessIssue]
                raise self._fail(f"expected a static shape but got {typ}")
        self.verify_element_types()
        self.verify_shapes()

    def verify_element_types(self) -> None:
        """Element type rules; by default one element type for operands and results."""
        self._expect_one_element_type([*self.operands, *self.results])

    def _expect_one_element_type(self, values: Sequence[SSAValue]) -> None:
        elements = {element_type_of(v) for v in values}
        if len(elements) > 1:
            names = ", ".join(sorted(str(e) for e in elements))
            raise self._fail(f"expected one element type but got {names}")

    def _expect_element(self, what: str, value: SSAValue, allowed: str) -> None:
        """`allowed`: "float", "integer" (i8..i64, not i1) or "bool" (i1)."""
        element = element_type_of(value)
        ok = {
            "float": isinstance(element, Float16Type | Float32Type | Float64Type),
            "integer": isinstance(element, IntegerType) and element.width.data > 1,
            "bool": element == i1,
        }[allowed]
        if not ok:
            raise self._fail(f"expected {what} of {allowed} elements but got {value.type}")

    def verify_shapes(self) -> None:
        """Op-specific checks; shapes are static and element types follow the op's rule."""

    def _fail(self, message: str) -> VerifyException:
        return VerifyException(f"{self.name}: {message}")

    def _expect_result_shape(self, expected: Sequence[int]) -> None:
        got = shape_of(self.results[0])
        if tuple(expected) != got:
            raise self._fail(f"expected result shape {list(expected)} but got {list(got)}")

    def _expect_rank(self, what: str, value: SSAValue, rank: int) -> None:
        if len(shape_of(value)) != rank:
            raise self._fail(f"expected {what} of rank {rank} but got {value.type}")

    def _expect_len(self, prop: str, values: Sequence[int], length: int, minimum: int) -> None:
        if len(values) != length:
            raise self._fail(f"expected {length} values in {prop} but got {list(values)}")
        if any(v < minimum for v in values):
            raise self._fail(f"expected {prop} >= {minimum} but got {list(values)}")


class TensorToTensorOperation(GraphOperation, abc.ABC):
    """One input tensor, one result tensor of the op's shape rule, both types printed:
    `graph.transpose %x {perm = ...} : tensor<2x3xf32> -> tensor<3x2xf32>`."""

    input = operand_def(TensorType)
    result = result_def(TensorType)

    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"

    def _build(self, input: SSAValue, shape: Sequence[int], **properties: Attribute) -> None:
        """Construct with a result of `shape` and input's element type."""
        result = tensor_type(element_type_of(input), shape)
        super().__init__(operands=[input], result_types=[result], properties=properties)


class LhsRhsOperation(GraphOperation, abc.ABC):
    """Two operands, lhs and rhs, and one result: `graph.add %a, %b : (...) -> ...`."""

    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)

    assembly_format = "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)"


def check_axis(op: GraphOperation, axis: int, rank: int) -> None:
    if not 0 <= axis < rank:
        raise op._fail(f"axis {axis} is out of range for rank {rank}")
