"""Elementwise ops: arithmetic, math, activations, logic, comparisons, where and cast."""

from __future__ import annotations

import abc
from typing import ClassVar

from xdsl.dialects.builtin import StringAttr, TensorType, i1
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    VarConstraint,
    base,
    irdl_op_definition,
    operand_def,
    prop_def,
    result_def,
)

from xweave.dialects.graph.base import (
    GraphOperation,
    LhsRhsOperation,
    PatternKind,
    TensorToTensorOperation,
    pattern_kind_def,
)
from xweave.dialects.graph.properties import f64_attr, f64_prop
from xweave.dialects.graph.shapes import broadcast_shape
from xweave.dialects.graph.tensors import element_type_of, shape_of, tensor_type

# --------------------------------------------------------------------------------------
# Elementwise families
# --------------------------------------------------------------------------------------


class BinaryOperation(LhsRhsOperation, abc.ABC):
    """Elementwise binary op with numpy broadcasting; result type = broadcast shape."""

    pattern_kind = pattern_kind_def(PatternKind.BROADCAST)

    def __init__(self, lhs: SSAValue, rhs: SSAValue, result_type: Attribute | None = None):
        if result_type is None:
            shape = broadcast_shape(shape_of(lhs), shape_of(rhs))
            assert shape is not None, f"{self.name}: operand shapes do not broadcast"
            result_type = tensor_type(self._result_element(lhs), shape)
        super().__init__(operands=[lhs, rhs], result_types=[result_type])

    def _result_element(self, lhs: SSAValue) -> Attribute:
        """The element type of a result built from the operands."""
        return element_type_of(lhs)

    def verify_shapes(self) -> None:
        a, b = shape_of(self.lhs), shape_of(self.rhs)
        expected = broadcast_shape(a, b)
        if expected is None:
            raise self._fail(f"operand shapes {list(a)} and {list(b)} are not broadcast-compatible")
        self._expect_result_shape(expected)


@irdl_op_definition
class AddOp(BinaryOperation):
    """lhs + rhs."""

    name = "graph.add"


@irdl_op_definition
class SubOp(BinaryOperation):
    """lhs - rhs."""

    name = "graph.sub"


@irdl_op_definition
class MulOp(BinaryOperation):
    """lhs * rhs."""

    name = "graph.mul"


@irdl_op_definition
class DivOp(BinaryOperation):
    """lhs / rhs."""

    name = "graph.div"


@irdl_op_definition
class MaxOp(BinaryOperation):
    """Elementwise maximum."""

    name = "graph.max"


@irdl_op_definition
class MinOp(BinaryOperation):
    """Elementwise minimum."""

    name = "graph.min"


@irdl_op_definition
class PowOp(BinaryOperation):
    """lhs ** rhs."""

    name = "graph.pow"


class UnaryOperation(GraphOperation, abc.ABC):
    """Elementwise unary op; the result type equals the operand type."""

    pattern_kind = pattern_kind_def(PatternKind.ELEMWISE)

    T: ClassVar = VarConstraint("T", base(TensorType))
    input = operand_def(T)
    result = result_def(T)

    assembly_format = "$input attr-dict `:` type($result)"

    def __init__(self, input: SSAValue):
        super().__init__(operands=[input], result_types=[input.type])


@irdl_op_definition
class ReluOp(UnaryOperation):
    """max(x, 0)."""

    name = "graph.relu"


@irdl_op_definition
class SigmoidOp(UnaryOperation):
    """1 / (1 + exp(-x))."""

    name = "graph.sigmoid"


@irdl_op_definition
class TanhOp(UnaryOperation):
    """tanh(x)."""

    name = "graph.tanh"


@irdl_op_definition
class ExpOp(UnaryOperation):
    """exp(x)."""

    name = "graph.exp"


@irdl_op_definition
class NegOp(UnaryOperation):
    """-x."""

    name = "graph.neg"


@irdl_op_definition
class SqrtOp(UnaryOperation):
    """sqrt(x)."""

    name = "graph.sqrt"


@irdl_op_definition
class AbsOp(UnaryOperation):
    """|x|."""

    name = "graph.abs"


@irdl_op_definition
class ClipOp(UnaryOperation):
    """min(max(x, min), max) (as ONNX: all elements become max if min > max)."""

    name = "graph.clip"

    min = f64_prop()
    max = f64_prop()

    def __init__(self, input: SSAValue, min: float = float("-inf"), max: float = float("inf")):
        IRDLOperation.__init__(
            self,
            operands=[input],
            result_types=[input.type],
            properties={"min": f64_attr(min), "max": f64_attr(max)},
        )


# --------------------------------------------------------------------------------------
# More elementwise ops: math, activations with parameters, logic, comparisons
# --------------------------------------------------------------------------------------


class _FloatUnaryOperation(UnaryOperation, abc.ABC):
    """A unary op on floats, with float (or string) parameters held as properties."""

    PARAMETERS: ClassVar[dict[str, float | str]] = {}
    """The op's parameters with their default values, in printing order."""

    def __init__(self, input: SSAValue, *args: float | str, **params: float | str):
        """Parameters may be given in the order of `PARAMETERS` or as keywords."""
        unknown = [k for k in params if k not in self.PARAMETERS]
        if len(args) > len(self.PARAMETERS) or unknown:
            raise TypeError(f"{type(self).__name__} takes the parameters "
                            f"{list(self.PARAMETERS)}, got {len(args)} positional and {unknown}")
        values = {**self.PARAMETERS, **dict(zip(self.PARAMETERS, args)), **params}
        props: dict[str, Attribute] = {
            k: StringAttr(v) if isinstance(v, str) else f64_attr(v) for k, v in values.items()
        }
        IRDLOperation.__init__(self, operands=[input], result_types=[input.type], properties=props)

    def verify_shapes(self) -> None:
        self._expect_element("input", self.input, "float")


@irdl_op_definition
class LogOp(_FloatUnaryOperation):
    """The natural logarithm."""

    name = "graph.log"


@irdl_op_definition
class ErfOp(_FloatUnaryOperation):
    """The error function."""

    name = "graph.erf"


@irdl_op_definition
class ReciprocalOp(_FloatUnaryOperation):
    """1 / x."""

    name = "graph.reciprocal"


@irdl_op_definition
class SoftplusOp(_FloatUnaryOperation):
    """log(1 + exp(x)), computed as max(x, 0) + log(1 + exp(-|x|)) (never overflows)."""

    name = "graph.softplus"


@irdl_op_definition
class SoftsignOp(_FloatUnaryOperation):
    """x / (1 + |x|)."""

    name = "graph.softsign"


@irdl_op_definition
class SignOp(_FloatUnaryOperation):
    """-1, 0 or 1 after the sign of x."""

    name = "graph.sign"


@irdl_op_definition
class FloorOp(_FloatUnaryOperation):
    """Round toward -inf."""

    name = "graph.floor"


@irdl_op_definition
class CeilOp(_FloatUnaryOperation):
    """Round toward +inf."""

    name = "graph.ceil"


@irdl_op_definition
class RoundOp(_FloatUnaryOperation):
    """Round half to even (ONNX Round)."""

    name = "graph.round"


@irdl_op_definition
class SinOp(_FloatUnaryOperation):
    """sin(x)."""

    name = "graph.sin"


@irdl_op_definition
class CosOp(_FloatUnaryOperation):
    """cos(x)."""

    name = "graph.cos"


@irdl_op_definition
class HardSwishOp(_FloatUnaryOperation):
    """x * max(0, min(1, x / 6 + 1/2))."""

    name = "graph.hard_swish"


@irdl_op_definition
class LeakyReluOp(_FloatUnaryOperation):
    """x if x >= 0 else alpha * x."""

    name = "graph.leaky_relu"

    alpha = f64_prop()
    PARAMETERS: ClassVar = {"alpha": 0.01}


@irdl_op_definition
class EluOp(_FloatUnaryOperation):
    """x if x > 0 else alpha * (exp(x) - 1)."""

    name = "graph.elu"

    alpha = f64_prop()
    PARAMETERS: ClassVar = {"alpha": 1.0}


@irdl_op_definition
class SeluOp(_FloatUnaryOperation):
    """gamma * (x if x > 0 else alpha * (exp(x) - 1))."""

    name = "graph.selu"

    alpha = f64_prop()
    gamma = f64_prop()
    PARAMETERS: ClassVar = {"alpha": 1.67326319217681884765625, "gamma": 1.05070102214813232421875}


@irdl_op_definition
class HardSigmoidOp(_FloatUnaryOperation):
    """max(0, min(1, alpha * x + beta))."""

    name = "graph.hard_sigmoid"

    alpha = f64_prop()
    beta = f64_prop()
    PARAMETERS: ClassVar = {"alpha": 0.2, "beta": 0.5}


@irdl_op_definition
class ShrinkOp(_FloatUnaryOperation):
    """x - bias if x > lambd, x + bias if x < -lambd, else 0."""

    name = "graph.shrink"

    lambd = f64_prop()
    bias = f64_prop()
    PARAMETERS: ClassVar = {"lambd": 0.5, "bias": 0.0}


GELU_APPROXIMATIONS = ("none", "tanh")


@irdl_op_definition
class GeluOp(_FloatUnaryOperation):
    """x * Phi(x), Phi by erf (approximate = "none") or by tanh (approximate = "tanh")."""

    name = "graph.gelu"

    approximate = prop_def(StringAttr)
    PARAMETERS: ClassVar = {"approximate": "none"}

    def verify_shapes(self) -> None:
        super().verify_shapes()
        if self.approximate.data not in GELU_APPROXIMATIONS:
            raise self._fail(
                f"approximate must be one of {list(GELU_APPROXIMATIONS)} but got "
                f"'{self.approximate.data}'"
            )


@irdl_op_definition
class PreluOp(BinaryOperation):
    """lhs if lhs >= 0 else rhs * lhs (rhs: the slope, broadcast to lhs)."""

    name = "graph.prelu"

    def verify_shapes(self) -> None:
        super().verify_shapes()
        if shape_of(self.result) != shape_of(self.lhs):
            raise self._fail(
                f"slope shape {list(shape_of(self.rhs))} must broadcast to the input shape "
                f"{list(shape_of(self.lhs))}"
            )


@irdl_op_definition
class NotOp(UnaryOperation):
    """Logical negation of i1 tensors."""

    name = "graph.not"

    def verify_shapes(self) -> None:
        self._expect_element("input", self.input, "bool")


class _LogicalOperation(BinaryOperation, abc.ABC):
    """Elementwise logic on i1 tensors, with broadcasting."""

    def verify_shapes(self) -> None:
        self._expect_element("lhs", self.lhs, "bool")
        super().verify_shapes()


@irdl_op_definition
class AndOp(_LogicalOperation):
    """lhs and rhs."""

    name = "graph.and"


@irdl_op_definition
class OrOp(_LogicalOperation):
    """lhs or rhs."""

    name = "graph.or"


@irdl_op_definition
class XorOp(_LogicalOperation):
    """lhs xor rhs."""

    name = "graph.xor"


class CompareOperation(BinaryOperation, abc.ABC):
    """Elementwise comparison with broadcasting: operands of one type, an i1 result."""

    def _result_element(self, lhs: SSAValue) -> Attribute:
        return i1

    def verify_element_types(self) -> None:
        self._expect_one_element_type([self.lhs, self.rhs])
        self._expect_element("result", self.result, "bool")


@irdl_op_definition
class EqualOp(CompareOperation):
    """lhs == rhs."""

    name = "graph.equal"


@irdl_op_definition
class LessOp(CompareOperation):
    """lhs < rhs."""

    name = "graph.less"


@irdl_op_definition
class LessEqualOp(CompareOperation):
    """lhs <= rhs."""

    name = "graph.less_equal"


@irdl_op_definition
class GreaterOp(CompareOperation):
    """lhs > rhs."""

    name = "graph.greater"


@irdl_op_definition
class GreaterEqualOp(CompareOperation):
    """lhs >= rhs."""

    name = "graph.greater_equal"


@irdl_op_definition
class WhereOp(GraphOperation):
    """cond ? lhs : rhs elementwise, the three operands broadcast together."""

    name = "graph.where"
    pattern_kind = pattern_kind_def(PatternKind.BROADCAST)

    cond = operand_def(TensorType)
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)

    assembly_format = (
        "$cond `,` $lhs `,` $rhs attr-dict `:` functional-type(operands, results)"
    )

    def __init__(self, cond: SSAValue, lhs: SSAValue, rhs: SSAValue):
        shape = broadcast_shape(shape_of(cond), shape_of(lhs), shape_of(rhs))
        assert shape is not None, "graph.where: operand shapes do not broadcast"
        super().__init__(
            operands=[cond, lhs, rhs], result_types=[tensor_type(element_type_of(lhs), shape)]
        )

    def verify_element_types(self) -> None:
        self._expect_element("cond", self.cond, "bool")
        self._expect_one_element_type([self.lhs, self.rhs, self.result])

    def verify_shapes(self) -> None:
        shapes = [shape_of(v) for v in (self.cond, self.lhs, self.rhs)]
        expected = broadcast_shape(*shapes)
        if expected is None:
            raise self._fail(f"operand shapes {[list(s) for s in shapes]} are not broadcast-compatible")
        self._expect_result_shape(expected)


@irdl_op_definition
class CastOp(TensorToTensorOperation):
    """Elementwise conversion to the result's element type (floats truncate to ints,
    non-zero is true)."""

    name = "graph.cast"
    pattern_kind = pattern_kind_def(PatternKind.ELEMWISE)

    def __init__(self, input: SSAValue, element_type: Attribute):
        super().__init__(operands=[input], result_types=[tensor_type(element_type, shape_of(input))])

    def verify_element_types(self) -> None:
        pass

    def verify_shapes(self) -> None:
        self._expect_result_shape(shape_of(self.input))
