"""Convolution and dense-layer ops: conv2d, conv2d_nchwc, conv_transpose2d, dense, matmul."""

from __future__ import annotations

import abc
from collections.abc import Sequence

from xdsl.dialects.builtin import IntegerAttr, IntegerType, TensorType, i32, i64
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import (
    base,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    result_def,
)

from xweave.dialects.dtypes import integer_range
from xweave.dialects.graph.base import (
    GraphOperation,
    LhsRhsOperation,
    PatternKind,
    pattern_kind_def,
)
from xweave.dialects.graph.properties import i64_array, i64_array_prop, int_prop
from xweave.dialects.graph.shapes import (
    conv_transpose2d_output_shape,
    matmul_output_shape,
    window2d_output_size,
)
from xweave.dialects.graph.tensors import element_type_of, shape_of, tensor_type


def is_integer_layer(op: GraphOperation) -> bool:
    """Whether a conv2d/dense/matmul computes on integers (accumulating in i32)."""
    return isinstance(element_type_of(op.operands[0]), IntegerType)


def _verify_integer_layer(op: GraphOperation, data: SSAValue, weight: SSAValue,
                          bias: SSAValue | None) -> None:
    """An integer layer: integer operands of any width (each converted to i32 exactly:
    ui8 zero-extended, i8 sign-extended), an i32 bias and an i32 result."""
    op._expect_element("input", data, "integer")
    op._expect_element("weight", weight, "integer")
    for what, value in (("bias", bias), ("result", op.results[0])):
        if value is not None and element_type_of(value) != i32:
            raise op._fail(f"expected an i32 {what} for integer operands but got {value.type}")


class _WeightedOp(GraphOperation, abc.ABC):
    """input, weight and an optional bias (conv2d, dense): outputs that absorb
    elementwise ops. Float operands have one element type throughout; integer operands
    (quantized layers) accumulate in i32 (`_verify_integer_layer`)."""

    pattern_kind = pattern_kind_def(PatternKind.OUT_ELEMWISE_FUSABLE)

    input = operand_def(TensorType)
    weight = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    result = result_def(TensorType)

    assembly_format = (
        "$input `,` $weight (`,` $bias^)? attr-dict `:` functional-type(operands, results)"
    )

    def _build(self, input: SSAValue, weight: SSAValue, bias: SSAValue | None,
               result_type: Attribute, properties: dict[str, Attribute] | None = None) -> None:
        super().__init__(
            operands=[input, weight, [] if bias is None else [bias]],
            result_types=[result_type],
            properties=properties or {},
        )

    def verify_element_types(self) -> None:
        if is_integer_layer(self):
            _verify_integer_layer(self, self.input, self.weight, self.bias)
        else:
            super().verify_element_types()

    def _expect_bias(self, shape: tuple[int, ...]) -> None:
        if self.bias is not None and shape_of(self.bias) != shape:
            raise self._fail(
                f"expected bias shape [{', '.join(map(str, shape))}] but got {list(shape_of(self.bias))}"
            )


class _WindowOp(_WeightedOp, abc.ABC):
    """A weighted op sliding a window over the image: strides, pads, dilations, groups."""

    strides = i64_array_prop()
    pads = i64_array_prop()
    dilations = i64_array_prop()
    groups = int_prop()

    @staticmethod
    def _window_properties(strides: Sequence[int], pads: Sequence[int], dilations: Sequence[int],
                           groups: int, **extra: Attribute) -> dict[str, Attribute]:
        """The properties in printing order: the window, then `extra`, then groups."""
        return {
            "strides": i64_array(strides),
            "pads": i64_array(pads),
            "dilations": i64_array(dilations),
            **extra,
            "groups": IntegerAttr(groups, i64),
        }

    def __init__(
        self,
        input: SSAValue,
        weight: SSAValue,
        bias: SSAValue | None = None,
        *,
        strides: Sequence[int] = (1, 1),
        pads: Sequence[int] = (0, 0, 0, 0),
        dilations: Sequence[int] = (1, 1),
        groups: int = 1,
        result_type: Attribute | None = None,
        pad_value: int | None = None,
        **extra: Sequence[int],
    ):
        """`extra`: the op's further window properties (conv_transpose2d's output_padding);
        `pad_value`: what an integer convolution pads its input with (its zero point)."""
        if result_type is None:
            shape = self.output_shape(
                shape_of(input), shape_of(weight), strides, pads, dilations, groups, **extra
            )
            integer = isinstance(element_type_of(input), IntegerType)
            result_type = tensor_type(i32 if integer else element_type_of(input), shape)
        extra_properties = {name: i64_array(values) for name, values in extra.items()}
        if pad_value is not None:
            extra_properties["pad_value"] = IntegerAttr(int(pad_value), i64)
        self._build(input, weight, bias, result_type,
                    self._window_properties(strides, pads, dilations, groups, **extra_properties))

    @staticmethod
    @abc.abstractmethod
    def output_shape(input_shape: Sequence[int], weight_shape: Sequence[int],
                     strides: Sequence[int], pads: Sequence[int], dilations: Sequence[int],
                     groups: int, **extra: Sequence[int]) -> tuple[int, ...]:
        """The result shape of the op on these shapes and window properties."""

    def _verify_window(self, input_rank: int, weight_rank: int):
        """Check the ranks and the window properties; returns (strides, pads, dilations, groups)."""
        self._expect_rank("input", self.input, input_rank)
        self._expect_rank("weight", self.weight, weight_rank)
        strides, pads = self.strides.get_values(), self.pads.get_values()
        dilations, groups = self.dilations.get_values(), self.groups.value.data
        self._expect_len("strides", strides, 2, 1)
        self._expect_len("pads", pads, 4, 0)
        self._expect_len("dilations", dilations, 2, 1)
        return strides, pads, dilations, groups

    @property
    def input_pad_value(self) -> int:
        """What the input is padded with: `pad_value` (integer convolutions), else 0."""
        value = self.properties.get("pad_value")
        return value.value.data if isinstance(value, IntegerAttr) else 0

    def _verify_pad_value(self) -> None:
        """`pad_value` only on an integer convolution, inside its input's range."""
        value = self.properties.get("pad_value")
        if value is None:
            return
        if not is_integer_layer(self):
            raise self._fail("pad_value is only for integer convolutions (a float one pads with 0)")
        lo, hi = integer_range(element_type_of(self.input))
        if not lo <= value.value.data <= hi:
            raise self._fail(f"pad_value {value.value.data} is not a value of "
                             f"{element_type_of(self.input)}")

    def _expect_window_result(self, window: tuple, what: str, **extra: Sequence[int]) -> None:
        """The result has the op's `output_shape` for `window` (from `_verify_window`) and
        `extra`, which must not be empty (`what` opens that error)."""
        expected = self.output_shape(shape_of(self.input), shape_of(self.weight), *window, **extra)
        if min(expected) < 1:
            raise self._fail(f"{what}output shape would be {list(expected)}")
        self._expect_result_shape(expected)


@irdl_op_definition
class Conv2dOp(_WindowOp):
    """2-D convolution, NCHW data, OIHW weights, optional bias [O], grouped and dilated.

    On integers (a quantized layer) it sums products in i32 and pads its input with
    `pad_value` (the input's zero point; 0 if absent)."""

    name = "graph.conv2d"

    pad_value = opt_prop_def(IntegerAttr.constr(type=base(IntegerType)))

    @staticmethod
    def output_shape(input_shape, weight_shape, strides, pads, dilations, groups, **extra):
        plane = window2d_output_size(input_shape[2:4], weight_shape[2:4], strides, pads, dilations)
        return (input_shape[0], weight_shape[0], *plane)

    def verify_shapes(self) -> None:
        window = self._verify_window(4, 4)
        groups = window[3]
        if groups < 1:
            raise self._fail(f"expected groups >= 1 but got {groups}")
        (_, channels, _, _), (out_channels, group_channels, _, _) = (
            shape_of(self.input),
            shape_of(self.weight),
        )
        if channels != group_channels * groups:
            raise self._fail(
                f"input has {channels} channels but weight expects "
                f"{group_channels} x {groups} groups = {group_channels * groups}"
            )
        if out_channels % groups:
            raise self._fail(f"{out_channels} output channels are not divisible by {groups} groups")
        self._expect_bias((out_channels,))
        self._verify_pad_value()
        self._expect_window_result(window, "kernel does not fit: ")


@irdl_op_definition
class Conv2dNchwcOp(_WindowOp):
    """2-D convolution on channel-blocked data (made by `graph-alter-layout`).

    data [N][C/ci][H][W][ci] (layout NCHW<ci>c), weight [O/co][C/ci][KH][KW][ci][co]
    (OIHW<ci>i<co>o), optional bias [O/co][co]; result [N][O/co][OH][OW][co].
    groups is 1; or the channel count for a depthwise convolution (O = C, ci = co):
    its weight is [C/co][1][KH][KW][1][co] (OIHW1i<co>o, one input channel per group);
    or the number of channel blocks, one group per block (O = C, ci = co): weight
    [C/co][1][KH][KW][ci][co], output block b reading input block b only (a grouped
    convolution whose groups are narrower than a block has zeros between them).
    Integer operands as for graph.conv2d (i32 sums, padded with `pad_value`).
    """

    name = "graph.conv2d_nchwc"

    pad_value = opt_prop_def(IntegerAttr.constr(type=base(IntegerType)))

    @staticmethod
    def output_shape(input_shape, weight_shape, strides, pads, dilations, groups, **extra):
        plane = window2d_output_size(input_shape[2:4], weight_shape[2:4], strides, pads, dilations)
        return (input_shape[0], weight_shape[0], *plane, weight_shape[5])

    def verify_shapes(self) -> None:
        window = self._verify_window(5, 6)
        groups = window[3]
        (_, cb, _, _, ci), (ob, wcb, _, _, wci, co) = shape_of(self.input), shape_of(self.weight)
        channels = cb * ci
        if groups == 1:
            if (wcb, wci) != (cb, ci):
                raise self._fail(
                    f"weight blocks input channels as [{wcb}][..][{wci}] but the input has [{cb}][..][{ci}]"
                )
        elif groups == channels:
            if (wcb, wci) != (1, 1) or co != ci or ob * co != channels:
                raise self._fail(
                    f"depthwise ({groups} groups) expects weight [{channels // ci}][1][KH][KW][1][{ci}] "
                    f"but got {list(shape_of(self.weight))}"
                )
        elif groups == cb:
            if (wcb, wci) != (1, ci) or co != ci or ob != cb:
                raise self._fail(
                    f"one group per channel block ({groups} groups) expects weight "
                    f"[{cb}][1][KH][KW][{ci}][{ci}] but got {list(shape_of(self.weight))}"
                )
        else:
            raise self._fail(f"expected groups 1, {cb} (one per channel block) or {channels} "
                             f"(depthwise) but got {groups}")
        self._expect_bias((ob, co))
        self._verify_pad_value()
        self._expect_window_result(window, "kernel does not fit: ")


@irdl_op_definition
class DenseOp(_WeightedOp):
    """Fully connected layer: x [M, K], w [N, K], optional b [N] -> x @ w.T + b."""

    name = "graph.dense"

    def __init__(
        self,
        input: SSAValue,
        weight: SSAValue,
        bias: SSAValue | None = None,
        *,
        result_type: Attribute | None = None,
    ):
        if result_type is None:
            shape = (shape_of(input)[0], shape_of(weight)[0])
            element = element_type_of(input)
            result_type = tensor_type(i32 if isinstance(element, IntegerType) else element, shape)
        self._build(input, weight, bias, result_type)

    def verify_shapes(self) -> None:
        self._expect_rank("input", self.input, 2)
        self._expect_rank("weight", self.weight, 2)
        (m, k), (n, wk) = shape_of(self.input), shape_of(self.weight)
        if k != wk:
            raise self._fail(f"input has K = {k} but weight has K = {wk}")
        self._expect_bias((n,))
        self._expect_result_shape((m, n))


@irdl_op_definition
class MatmulOp(LhsRhsOperation):
    """numpy matmul of rank >= 2 tensors, broadcasting the batch dimensions; integer
    operands accumulate in i32 (as graph.dense's)."""

    name = "graph.matmul"
    pattern_kind = pattern_kind_def(PatternKind.OUT_ELEMWISE_FUSABLE)

    def __init__(self, lhs: SSAValue, rhs: SSAValue, result_type: Attribute | None = None):
        if result_type is None:
            shape = matmul_output_shape(shape_of(lhs), shape_of(rhs))
            assert shape is not None, "graph.matmul: incompatible operand shapes"
            element = element_type_of(lhs)
            result_type = tensor_type(i32 if isinstance(element, IntegerType) else element, shape)
        super().__init__(operands=[lhs, rhs], result_types=[result_type])

    def verify_element_types(self) -> None:
        if is_integer_layer(self):
            _verify_integer_layer(self, self.lhs, self.rhs, None)
        else:
            super().verify_element_types()

    def verify_shapes(self) -> None:
        a, b = shape_of(self.lhs), shape_of(self.rhs)
        if len(a) < 2 or len(b) < 2:
            raise self._fail(f"expected operands of rank >= 2 but got ranks {len(a)} and {len(b)}")
        if a[-1] != b[-2]:
            raise self._fail(f"contracting dimensions differ: {list(a)} x {list(b)}")
        expected = matmul_output_shape(a, b)
        if expected is None:
            raise self._fail(f"batch dimensions of {list(a)} and {list(b)} do not broadcast")
        self._expect_result_shape(expected)


@irdl_op_definition
class ConvTranspose2dOp(_WindowOp):
    """2-D transposed convolution, NCHW data, weights [C, O/groups, KH, KW], bias [O]."""

    name = "graph.conv_transpose2d"

    output_padding = i64_array_prop()

    def __init__(self, input: SSAValue, weight: SSAValue, bias: SSAValue | None = None, *,
                 output_padding: Sequence[int] = (0, 0), **window):
        """`window`: strides, pads, dilations, groups, result_type as for conv2d."""
        super().__init__(input, weight, bias, output_padding=output_padding, **window)

    @staticmethod
    def output_shape(input_shape, weight_shape, strides, pads, dilations, groups, **extra):
        return conv_transpose2d_output_shape(
            input_shape, weight_shape, strides, pads, dilations, extra["output_padding"], groups
        )

    def verify_shapes(self) -> None:
        window = self._verify_window(4, 4)
        groups = window[3]
        output_padding = self.output_padding.get_values()
        self._expect_len("output_padding", output_padding, 2, 0)
        if groups < 1:
            raise self._fail(f"expected groups >= 1 but got {groups}")
        channels, weight_channels = shape_of(self.input)[1], shape_of(self.weight)[0]
        if channels != weight_channels:
            raise self._fail(f"input has {channels} channels but weight has {weight_channels}")
        if channels % groups:
            raise self._fail(f"{channels} input channels are not divisible by {groups} groups")
        out_channels = shape_of(self.weight)[1] * groups
        self._expect_bias((out_channels,))
        self._expect_window_result(window, "", output_padding=output_padding)
