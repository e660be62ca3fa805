"""Convolution and dense-layer ops: conv2d, conv2d_nchwc, conv_transpose2d, dense, matmul."""

from __future__ import annotations

import abc
from collections.abc import Sequence

from xdsl.dialects.builtin import IntegerAttr, TensorType, i64
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import irdl_op_definition, operand_def, opt_operand_def, result_def

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


class _WeightedOp(GraphOperation, abc.ABC):
    """input, weight and an optional bias (conv2d, dense): outputs that absorb
    elementwise ops."""

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
        **extra: Sequence[int],
    ):
        """`extra`: the op's further window properties (conv_transpose2d's output_padding)."""
        if result_type is None:
            shape = self.output_shape(
                shape_of(input), shape_of(weight), strides, pads, dilations, groups, **extra
            )
            result_type = tensor_type(element_type_of(input), shape)
        extra_properties = {name: i64_array(values) for name, values in extra.items()}
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

    def _expect_window_result(self, window: tuple, what: str, **extra: Sequence[int]) -> None:
        """The result has the op's `output_shape` for `window` (from `_verify_window`) and
        `extra`, which must not be empty (`what` opens that error)."""
        expected = self.output_shape(shape_of(self.input), shape_of(self.weight), *window, **extra)
        if min(expected) < 1:
            raise self._fail(f"{what}output shape would be {list(expected)}")
        self._expect_result_shape(expected)


@irdl_op_definition
class Conv2dOp(_WindowOp):
    """2-D convolution, NCHW data, OIHW weights, optional bias [O], grouped and dilated."""

    name = "graph.conv2d"

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
    """

    name = "graph.conv2d_nchwc"

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
            result_type = tensor_type(input.type.element_type, shape)  # pyright: ignore
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
    """numpy matmul of rank >= 2 tensors, broadcasting the batch dimensions."""

    name = "graph.matmul"
    pattern_kind = pattern_kind_def(PatternKind.OUT_ELEMWISE_FUSABLE)

    def __init__(self, lhs: SSAValue, rhs: SSAValue, result_type: Attribute | None = None):
        if result_type is None:
            shape = matmul_output_shape(shape_of(lhs), shape_of(rhs))
            assert shape is not None, "graph.matmul: incompatible operand shapes"
            result_type = tensor_type(lhs.type.element_type, shape)  # pyright: ignore
        super().__init__(operands=[lhs, rhs], result_types=[result_type])

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
