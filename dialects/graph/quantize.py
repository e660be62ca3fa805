"""Quantization ops: quantize (float -> 8-bit), dequantize (integer -> float) and
requantize (an int32 accumulator -> 8-bit), with onnxruntime's arithmetic.

Scales and zero points are operands that broadcast to the input (numpy rules): a
scalar per tensor, `[1, C, 1, 1]` per channel of an NCHW tensor, the input's own shape
for blocked scales. The zero point has the scale's shape and the 8-bit type of the
quantized values (`i8` or `ui8`):

```mlir
%q = graph.quantize %x, %s, %zp : (tensor<1x8xf32>, tensor<f32>, tensor<ui8>) -> tensor<1x8xui8>
%y = graph.dequantize %q, %s, %zp : (tensor<1x8xui8>, tensor<f32>, tensor<ui8>) -> tensor<1x8xf32>
%r = graph.requantize %acc, %m, %zp : (tensor<1x8xi32>, tensor<1x8xf32>, tensor<ui8>) -> tensor<1x8xui8>
```

Rounding is to nearest, ties to even, in float32; saturation clamps to the result
type's range (onnxruntime's MLAS computes exactly this: `x / scale`, not a product
with the reciprocal; `float(acc) * multiplier` for a requantization).
"""

from __future__ import annotations

import abc

from xdsl.dialects.builtin import Float32Type, IntegerType, TensorType, i32
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import irdl_op_definition, operand_def, result_def

from xweave.dialects.graph.base import GraphOperation, PatternKind, pattern_kind_def
from xweave.dialects.graph.shapes import broadcast_shape
from xweave.dialects.graph.tensors import element_type_of, shape_of, tensor_type


def is_quantized_type(element: Attribute) -> bool:
    """Whether `element` is a type quantized values have: `i8` or `ui8`."""
    return isinstance(element, IntegerType) and element.width.data == 8


class _QuantizationOperation(GraphOperation, abc.ABC):
    """input, scale and zero point (broadcast to the input), one result of the input's
    shape."""

    pattern_kind = pattern_kind_def(PatternKind.BROADCAST)

    input = operand_def(TensorType)
    scale = operand_def(TensorType)
    zero_point = operand_def(TensorType)
    result = result_def(TensorType)

    assembly_format = (
        "$input `,` $scale `,` $zero_point attr-dict `:` functional-type(operands, results)"
    )

    def __init__(self, input: SSAValue, scale: SSAValue, zero_point: SSAValue,
                 result_type: Attribute | None = None):
        if result_type is None:
            result_type = tensor_type(self._result_element(zero_point), shape_of(input))
        super().__init__(operands=[input, scale, zero_point], result_types=[result_type])

    @abc.abstractmethod
    def _result_element(self, zero_point: SSAValue) -> Attribute:
        """The result's element type, built from the operands."""

    @property
    def quantized(self) -> SSAValue:
        """The quantized value (the result of quantize/requantize, the input of dequantize)."""
        return self.results[0]

    def _expect_scale(self) -> None:
        if not isinstance(element_type_of(self.scale), Float32Type):
            raise self._fail(f"expected a scale of f32 elements but got {self.scale.type}")

    def _expect_zero_point(self, quantized: SSAValue, allow_i32: bool = False) -> None:
        zp, q = element_type_of(self.zero_point), element_type_of(quantized)
        if not (is_quantized_type(zp) or (allow_i32 and zp == i32)):
            allowed = "i8, ui8 or i32" if allow_i32 else "i8 or ui8"
            raise self._fail(f"expected a zero point of {allowed} elements but got "
                             f"{self.zero_point.type}")
        if zp != q:
            raise self._fail(f"the zero point {self.zero_point.type} and the quantized values "
                             f"{quantized.type} have different element types")

    def verify_shapes(self) -> None:
        shape, scale = shape_of(self.input), shape_of(self.scale)
        if shape_of(self.zero_point) != scale:
            raise self._fail(f"the zero point's shape {list(shape_of(self.zero_point))} "
                             f"differs from the scale's {list(scale)}")
        if len(scale) > len(shape) or broadcast_shape(shape, scale) != shape:
            raise self._fail(f"the scale's shape {list(scale)} does not broadcast to the "
                             f"input's {list(shape)}")
        self._expect_result_shape(shape)


@irdl_op_definition
class QuantizeOp(_QuantizationOperation):
    """saturate(round_half_even(input / scale) + zero_point): f32 -> i8 or ui8 (the
    zero point's type), ONNX's QuantizeLinear."""

    name = "graph.quantize"

    def _result_element(self, zero_point: SSAValue) -> Attribute:
        return element_type_of(zero_point)

    def verify_element_types(self) -> None:
        if not isinstance(element_type_of(self.input), Float32Type):
            raise self._fail(f"expected an input of f32 elements but got {self.input.type}")
        self._expect_scale()
        self._expect_zero_point(self.result)


@irdl_op_definition
class DequantizeOp(_QuantizationOperation):
    """(input - zero_point) * scale: i8, ui8 or i32 -> f32, ONNX's DequantizeLinear."""

    name = "graph.dequantize"

    def _result_element(self, zero_point: SSAValue) -> Attribute:
        return Float32Type()

    @property
    def quantized(self) -> SSAValue:
        return self.input

    def verify_element_types(self) -> None:
        self._expect_scale()
        self._expect_zero_point(self.input, allow_i32=True)
        if not isinstance(element_type_of(self.result), Float32Type):
            raise self._fail(f"expected a result of f32 elements but got {self.result.type}")


@irdl_op_definition
class RequantizeOp(_QuantizationOperation):
    """saturate(round_half_even(f32(input) * scale) + zero_point): an i32 accumulator
    -> i8 or ui8 (the zero point's type). The scale is the multiplier from the
    accumulator's scale to the result's (x_scale * w_scale / y_scale); this is the
    epilogue of an integer convolution or matmul (onnxruntime's QLinearConv)."""

    name = "graph.requantize"

    def _result_element(self, zero_point: SSAValue) -> Attribute:
        return element_type_of(zero_point)

    def verify_element_types(self) -> None:
        if element_type_of(self.input) != i32:
            raise self._fail(f"expected an input of i32 elements but got {self.input.type}")
        self._expect_scale()
        self._expect_zero_point(self.result)
