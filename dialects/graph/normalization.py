"""Softmax, reductions and normalization layers."""

from __future__ import annotations

import abc
from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import IntegerAttr, IntegerType, StringAttr, TensorType, i1, i64
from xdsl.ir import SSAValue
from xdsl.irdl import (
    VarConstraint,
    base,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    prop_def,
    result_def,
)

from xweave.dialects.graph.base import (
    GraphOperation,
    PatternKind,
    TensorToTensorOperation,
    check_axis,
    pattern_kind_def,
)
from xweave.dialects.graph.properties import f64_attr, f64_prop, i64_array, i64_array_prop, int_prop
from xweave.dialects.graph.shapes import broadcast_shape, reduce_output_shape
from xweave.dialects.graph.tensors import element_type_of, shape_of


class _SoftmaxOperation(GraphOperation, abc.ABC):
    """Along one axis; the result type equals the operand type."""

    pattern_kind = pattern_kind_def(PatternKind.OUT_ELEMWISE_FUSABLE)

    T: ClassVar = VarConstraint("T", base(TensorType))
    input = operand_def(T)
    result = result_def(T)
    axis = int_prop()

    assembly_format = "$input attr-dict `:` type($result)"

    def __init__(self, input: SSAValue, axis: int):
        super().__init__(
            operands=[input], result_types=[input.type], properties={"axis": IntegerAttr(axis, i64)}
        )

    def verify_shapes(self) -> None:
        self._expect_element("input", self.input, "float")
        check_axis(self, self.axis.value.data, len(shape_of(self.input)))


@irdl_op_definition
class SoftmaxOp(_SoftmaxOperation):
    """exp(x - max) / sum(exp(x - max)) along `axis` (numerically stable)."""

    name = "graph.softmax"


@irdl_op_definition
class LogSoftmaxOp(_SoftmaxOperation):
    """x - max - log(sum(exp(x - max))) along `axis` (numerically stable)."""

    name = "graph.log_softmax"


REDUCE_KINDS = ("sum", "mean", "max", "min", "prod")


@irdl_op_definition
class ReduceOp(TensorToTensorOperation):
    """Reduce `axes` (sorted, non-negative) by `kind`; `keepdims` keeps them as 1s.
    Integers reduce too, by every kind but mean (a sum wraps as the type's adds do)."""

    name = "graph.reduce"
    pattern_kind = pattern_kind_def(PatternKind.REDUCTION)

    kind = prop_def(StringAttr)
    axes = i64_array_prop()
    keepdims = int_prop()

    def __init__(self, input: SSAValue, kind: str, axes: Sequence[int], keepdims: bool):
        axes = sorted(int(a) for a in axes)
        shape = reduce_output_shape(shape_of(input), axes, keepdims)
        self._build(input, shape, kind=StringAttr(kind), axes=i64_array(axes),
                    keepdims=IntegerAttr(int(keepdims), i1))

    def verify_shapes(self) -> None:
        if self.kind.data not in REDUCE_KINDS:
            raise self._fail(f"kind must be one of {list(REDUCE_KINDS)} but got '{self.kind.data}'")
        if self.kind.data == "mean" or not isinstance(element_type_of(self.input), IntegerType):
            self._expect_element("input", self.input, "float")
        rank, axes = len(shape_of(self.input)), list(self.axes.get_values())
        if not axes:
            raise self._fail("expected at least one axis")
        if axes != sorted(set(axes)) or axes[0] < 0 or axes[-1] >= rank:
            raise self._fail(f"axes {axes} must be sorted, unique and within rank {rank}")
        keep = bool(self.keepdims.value.data)
        self._expect_result_shape(reduce_output_shape(shape_of(self.input), axes, keep))


@irdl_op_definition
class BatchNormOp(GraphOperation):
    """Inference batch normalization over axis 1 (channels):
    (x - mean) / sqrt(variance + epsilon) * scale + bias, parameters of shape [C]."""

    name = "graph.batch_norm"
    pattern_kind = pattern_kind_def(PatternKind.BROADCAST)

    input = operand_def(TensorType)
    scale = operand_def(TensorType)
    bias = operand_def(TensorType)
    mean = operand_def(TensorType)
    variance = operand_def(TensorType)
    result = result_def(TensorType)
    epsilon = f64_prop()

    assembly_format = (
        "$input `,` $scale `,` $bias `,` $mean `,` $variance attr-dict `:` "
        "functional-type(operands, results)"
    )

    def __init__(self, input, scale, bias, mean, variance, epsilon: float = 1e-5):
        super().__init__(
            operands=[input, scale, bias, mean, variance],
            result_types=[input.type],
            properties={"epsilon": f64_attr(epsilon)},
        )

    def verify_shapes(self) -> None:
        self._expect_element("input", self.input, "float")
        shape = shape_of(self.input)
        if len(shape) < 2:
            raise self._fail(f"expected input of rank >= 2 but got {self.input.type}")
        for what in ("scale", "bias", "mean", "variance"):
            got = shape_of(getattr(self, what))
            if got != (shape[1],):
                raise self._fail(f"expected {what} shape [{shape[1]}] but got {list(got)}")
        self._expect_result_shape(shape)


@irdl_op_definition
class LayerNormOp(GraphOperation):
    """Normalize over the dimensions from `axis` on (mean 0, variance 1, with epsilon),
    then * scale (+ bias); scale and bias broadcast against the input."""

    name = "graph.layer_norm"
    pattern_kind = pattern_kind_def(PatternKind.OUT_ELEMWISE_FUSABLE)

    input = operand_def(TensorType)
    scale = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    result = result_def(TensorType)
    axis = int_prop()
    epsilon = f64_prop()

    assembly_format = (
        "$input `,` $scale (`,` $bias^)? attr-dict `:` functional-type(operands, results)"
    )

    def __init__(self, input, scale, bias=None, *, axis: int = -1, epsilon: float = 1e-5):
        super().__init__(
            operands=[input, scale, [] if bias is None else [bias]],
            result_types=[input.type],
            properties={"axis": IntegerAttr(axis, i64), "epsilon": f64_attr(epsilon)},
        )

    def verify_shapes(self) -> None:
        self._expect_element("input", self.input, "float")
        shape = shape_of(self.input)
        check_axis(self, self.axis.value.data, len(shape))
        for what in ("scale", "bias"):
            value = getattr(self, what)
            if value is not None and broadcast_shape(shape_of(value), shape) != shape:
                raise self._fail(
                    f"{what} shape {list(shape_of(value))} does not broadcast to {list(shape)}"
                )
        self._expect_result_shape(shape)


@irdl_op_definition
class LrnOp(GraphOperation):
    """Local response normalization across channels (axis 1), as ONNX LRN:
    x / (bias + alpha / size * sum of x^2 over `size` neighbouring channels) ^ beta."""

    name = "graph.lrn"
    pattern_kind = pattern_kind_def(PatternKind.OUT_ELEMWISE_FUSABLE)

    T: ClassVar = VarConstraint("T", base(TensorType))
    input = operand_def(T)
    result = result_def(T)
    size = int_prop()
    alpha = f64_prop()
    beta = f64_prop()
    bias = f64_prop()

    assembly_format = "$input attr-dict `:` type($result)"

    def __init__(self, input: SSAValue, size: int, alpha: float = 1e-4, beta: float = 0.75,
                 bias: float = 1.0):
        super().__init__(
            operands=[input],
            result_types=[input.type],
            properties={"size": IntegerAttr(size, i64), "alpha": f64_attr(alpha),
                        "beta": f64_attr(beta), "bias": f64_attr(bias)},
        )

    def verify_shapes(self) -> None:
        self._expect_element("input", self.input, "float")
        if len(shape_of(self.input)) < 2:
            raise self._fail(f"expected input of rank >= 2 but got {self.input.type}")
        if self.size.value.data < 1:
            raise self._fail(f"expected size >= 1 but got {self.size.value.data}")
