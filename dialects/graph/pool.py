"""Pooling over NCHW (or NCHW<c>c) windows and whole planes."""

from __future__ import annotations

import abc
import re
from collections.abc import Sequence

from xdsl.dialects.builtin import IntegerAttr, StringAttr, i1
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import irdl_op_definition, prop_def

from xweave.dialects.graph.base import PatternKind, TensorToTensorOperation, pattern_kind_def
from xweave.dialects.graph.properties import i64_array, i64_array_prop, int_prop
from xweave.dialects.graph.shapes import window2d_output_size
from xweave.dialects.graph.tensors import element_type_of, shape_of, tensor_type


class _NCHWOperation(TensorToTensorOperation, abc.ABC):
    """One input, one result of a computed shape, in layout `layout`: "NCHW" (the
    default) or channel-blocked "NCHW<k>c" ([N][C/k][H][W][k], see xweave.layout)."""

    layout = prop_def(StringAttr, default_value=StringAttr("NCHW"))

    def expected_shape(self) -> tuple[int, ...]:
        raise NotImplementedError

    def channel_block(self) -> int:
        """k of an "NCHW<k>c" layout, 0 for "NCHW"."""
        text = self.layout.data
        match = re.fullmatch(r"NCHW(\d+)c", text)
        if text != "NCHW" and (match is None or int(match.group(1)) < 1):
            raise self._fail(f'expected layout "NCHW" or "NCHW<k>c" but got "{text}"')
        return int(match.group(1)) if match else 0

    def nchw_shape(self) -> tuple[int, ...]:
        """The input shape as [N, C-blocks, H, W] (the block dimension dropped)."""
        block = self.channel_block()
        self._expect_rank("input", self.input, 5 if block else 4)
        shape = shape_of(self.input)
        if block and shape[4] != block:
            raise self._fail(f"layout {self.layout.data} needs a last dimension of {block} but got {self.input.type}")
        return shape[:4]

    def blocked_shape(self, nchw: Sequence[int]) -> tuple[int, ...]:
        """`nchw` (from `nchw_shape`) with the channel block appended again."""
        block = self.channel_block()
        return (*nchw, block) if block else tuple(nchw)

    def verify_shapes(self) -> None:
        self._expect_result_shape(self.expected_shape())


class _WindowPoolOperation(_NCHWOperation, abc.ABC):
    """max_pool2d / avg_pool2d: a kernel window slid with strides over padded input."""

    pattern_kind = pattern_kind_def(PatternKind.OUT_ELEMWISE_FUSABLE)

    kernel = i64_array_prop()
    strides = i64_array_prop()
    pads = i64_array_prop()
    ceil_mode = int_prop()

    def _build_window(self, input: SSAValue, kernel: Sequence[int], strides: Sequence[int],
                      pads: Sequence[int], dilations: Sequence[int], ceil_mode: bool,
                      result_type: Attribute | None, layout: str, extra: dict[str, Attribute]
                      ) -> None:
        """Construct with the window properties, then `extra`; by default the result has
        the window's output shape."""
        if result_type is None:
            shape = shape_of(input)
            block = shape[4:]  # NCHW<k>c: the channel block comes back at the end
            plane = window2d_output_size(shape[2:4], kernel, strides, pads, dilations, ceil_mode)
            result_type = tensor_type(element_type_of(input), (*shape[:2], *plane, *block))
        properties = {
            "kernel": i64_array(kernel),
            "strides": i64_array(strides),
            "pads": i64_array(pads),
            "ceil_mode": IntegerAttr(int(ceil_mode), i1),
            "layout": StringAttr(layout),
            **extra,
        }
        super().__init__(operands=[input], result_types=[result_type], properties=properties)

    def window_dilations(self) -> tuple[int, ...]:
        return (1, 1)

    def expected_shape(self) -> tuple[int, ...]:
        kernel, strides = self.kernel.get_values(), self.strides.get_values()
        pads, dilations = self.pads.get_values(), self.window_dilations()
        self._expect_len("kernel", kernel, 2, 1)
        self._expect_len("strides", strides, 2, 1)
        self._expect_len("pads", pads, 4, 0)
        self._expect_len("dilations", dilations, 2, 1)
        span = [d * (k - 1) + 1 for k, d in zip(kernel, dilations)]
        if pads[0] >= span[0] or pads[2] >= span[0] or pads[1] >= span[1] or pads[3] >= span[1]:
            raise self._fail(f"pads {list(pads)} must be smaller than the window {span}")
        n, c, h, w = self.nchw_shape()
        plane = window2d_output_size((h, w), kernel, strides, pads, dilations, bool(self.ceil_mode.value.data))
        shape = (n, c, *plane)
        if min(shape) < 1:
            raise self._fail(f"window does not fit: output shape would be {list(shape)}")
        return self.blocked_shape(shape)


@irdl_op_definition
class MaxPool2dOp(_WindowPoolOperation):
    """2-D max pooling on NCHW; padding never wins (it counts as -inf)."""

    name = "graph.max_pool2d"

    dilations = i64_array_prop()

    def __init__(
        self,
        input: SSAValue,
        kernel: Sequence[int],
        strides: Sequence[int] = (1, 1),
        pads: Sequence[int] = (0, 0, 0, 0),
        dilations: Sequence[int] = (1, 1),
        ceil_mode: bool = False,
        result_type: Attribute | None = None,
        layout: str = "NCHW",
    ):
        self._build_window(input, kernel, strides, pads, dilations, ceil_mode, result_type, layout,
                           {"dilations": i64_array(dilations)})

    def window_dilations(self) -> tuple[int, ...]:
        return self.dilations.get_values()


@irdl_op_definition
class AvgPool2dOp(_WindowPoolOperation):
    """2-D average pooling on NCHW; count_include_pad divides by the padded window."""

    name = "graph.avg_pool2d"

    count_include_pad = int_prop()

    def __init__(
        self,
        input: SSAValue,
        kernel: Sequence[int],
        strides: Sequence[int] = (1, 1),
        pads: Sequence[int] = (0, 0, 0, 0),
        ceil_mode: bool = False,
        count_include_pad: bool = False,
        result_type: Attribute | None = None,
        layout: str = "NCHW",
    ):
        self._build_window(input, kernel, strides, pads, (1, 1), ceil_mode, result_type, layout,
                           {"count_include_pad": IntegerAttr(int(count_include_pad), i1)})


class _GlobalPoolOperation(_NCHWOperation, abc.ABC):
    """Reduce H and W of NCHW data to 1x1."""

    pattern_kind = pattern_kind_def(PatternKind.REDUCTION)

    def __init__(self, input: SSAValue, layout: str = "NCHW"):
        n, c, _, _, *block = shape_of(input)
        self._build(input, (n, c, 1, 1, *block), layout=StringAttr(layout))

    def expected_shape(self) -> tuple[int, ...]:
        n, c, _, _ = self.nchw_shape()
        return self.blocked_shape((n, c, 1, 1))


@irdl_op_definition
class GlobalAvgPool2dOp(_GlobalPoolOperation):
    """Mean over H and W: [N, C, H, W] -> [N, C, 1, 1]."""

    name = "graph.global_avg_pool2d"


@irdl_op_definition
class GlobalMaxPool2dOp(_GlobalPoolOperation):
    """Maximum over H and W: [N, C, H, W] -> [N, C, 1, 1]."""

    name = "graph.global_max_pool2d"
