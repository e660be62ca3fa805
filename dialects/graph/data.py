"""Data-movement ops: reshape, layout, transpose, concat, slice, pad, tile, broadcast, gather."""

from __future__ import annotations

import abc
from collections.abc import Sequence
from math import prod

from xdsl.dialects.builtin import IntegerAttr, StringAttr, TensorType, i64
from xdsl.ir import SSAValue
from xdsl.irdl import irdl_op_definition, operand_def, prop_def, result_def, var_operand_def

from xweave.dialects.graph.base import (
    GraphOperation,
    PatternKind,
    TensorToTensorOperation,
    check_axis,
    pattern_kind_def,
)
from xweave.dialects.graph.properties import f64_attr, f64_prop, i64_array, i64_array_prop, int_prop
from xweave.dialects.graph.shapes import broadcast_shape, gather_output_shape
from xweave.dialects.graph.tensors import element_type_of, shape_of, tensor_type
from xweave.layout import transform_shape


class _InjectiveOperation(TensorToTensorOperation, abc.ABC):
    """One input, one result whose every element is one input element."""

    pattern_kind = pattern_kind_def(PatternKind.INJECTIVE)


# --------------------------------------------------------------------------------------
# Layout
# --------------------------------------------------------------------------------------


@irdl_op_definition
class ReshapeOp(_InjectiveOperation):
    """Row-major reshape to the result type (same number of elements)."""

    name = "graph.reshape"

    def __init__(self, input: SSAValue, shape: Sequence[int]):
        self._build(input, shape)

    def verify_shapes(self) -> None:
        a, b = shape_of(self.input), shape_of(self.result)
        if prod(a) != prod(b):
            raise self._fail(
                f"cannot reshape {list(a)} ({prod(a)} elements) to {list(b)} ({prod(b)} elements)"
            )


@irdl_op_definition
class LayoutTransformOp(_InjectiveOperation):
    """The same tensor in another layout (`src_layout` to `dst_layout`, strings such as
    "NCHW", "NCHW16c", "OIHW16i16o"; rules in xweave.layout): pure data movement."""

    name = "graph.layout_transform"

    src_layout = prop_def(StringAttr)
    dst_layout = prop_def(StringAttr)

    def __init__(self, input: SSAValue, src_layout: str, dst_layout: str):
        shape = transform_shape(shape_of(input), src_layout, dst_layout)
        self._build(input, shape, src_layout=StringAttr(src_layout),
                    dst_layout=StringAttr(dst_layout))

    def verify_shapes(self) -> None:
        try:
            expected = transform_shape(shape_of(self.input), self.src_layout.data, self.dst_layout.data)
        except ValueError as e:
            raise self._fail(str(e)) from None
        self._expect_result_shape(expected)


@irdl_op_definition
class TransposeOp(_InjectiveOperation):
    """Permute dimensions: result.shape[i] = input.shape[perm[i]]."""

    name = "graph.transpose"

    perm = i64_array_prop()

    def __init__(self, input: SSAValue, perm: Sequence[int]):
        self._build(input, [shape_of(input)[p] for p in perm], perm=i64_array(perm))

    def verify_shapes(self) -> None:
        a, perm = shape_of(self.input), self.perm.get_values()
        if sorted(perm) != list(range(len(a))):
            raise self._fail(f"perm {list(perm)} is not a permutation of {len(a)} dimensions")
        self._expect_result_shape([a[p] for p in perm])


# --------------------------------------------------------------------------------------
# Data movement
# --------------------------------------------------------------------------------------


@irdl_op_definition
class ConcatOp(GraphOperation):
    """Join tensors along `axis` (every other dimension equal)."""

    name = "graph.concat"
    pattern_kind = pattern_kind_def(PatternKind.INJECTIVE)

    inputs = var_operand_def(TensorType)
    result = result_def(TensorType)
    axis = int_prop()

    assembly_format = "$inputs attr-dict `:` functional-type($inputs, $result)"

    def __init__(self, inputs: Sequence[SSAValue], axis: int):
        shape = list(shape_of(inputs[0]))
        shape[axis] = sum(shape_of(v)[axis] for v in inputs)
        super().__init__(
            operands=[list(inputs)],
            result_types=[tensor_type(element_type_of(inputs[0]), shape)],
            properties={"axis": IntegerAttr(axis, i64)},
        )

    def verify_shapes(self) -> None:
        if not self.inputs:
            raise self._fail("expected at least one input")
        shapes = [shape_of(v) for v in self.inputs]
        rank, axis = len(shapes[0]), self.axis.value.data
        check_axis(self, axis, rank)
        for s in shapes:
            if len(s) != rank or any(a != b for d, (a, b) in enumerate(zip(s, shapes[0])) if d != axis):
                raise self._fail(
                    f"input shapes {[list(s) for s in shapes]} differ outside axis {axis}"
                )
        expected = list(shapes[0])
        expected[axis] = sum(s[axis] for s in shapes)
        self._expect_result_shape(expected)


@irdl_op_definition
class SliceOp(_InjectiveOperation):
    """result[i] = input[starts + i * steps] in every dimension (steps may be negative);
    the result type gives the extents."""

    name = "graph.slice"

    starts = i64_array_prop()
    steps = i64_array_prop()

    def __init__(self, input: SSAValue, starts: Sequence[int], steps: Sequence[int],
                 sizes: Sequence[int]):
        self._build(input, sizes, starts=i64_array(starts), steps=i64_array(steps))

    def verify_shapes(self) -> None:
        shape, sizes = shape_of(self.input), shape_of(self.result)
        starts, steps = self.starts.get_values(), self.steps.get_values()
        if not len(starts) == len(steps) == len(sizes) == len(shape):
            raise self._fail(
                f"expected {len(shape)} starts, steps and result dimensions but got "
                f"{list(starts)}, {list(steps)} and {list(sizes)}"
            )
        for d, (extent, start, step, size) in enumerate(zip(shape, starts, steps, sizes)):
            if step == 0:
                raise self._fail(f"step of dimension {d} is 0")
            last = start + (size - 1) * step
            if size > 0 and not (0 <= start < extent and 0 <= last < extent):
                raise self._fail(
                    f"dimension {d}: {size} elements from {start} by {step} leave [0, {extent})"
                )


PAD_MODES = ("constant", "reflect", "edge")


@irdl_op_definition
class PadOp(_InjectiveOperation):
    """Pad every dimension by pads [begin..., end...] (non-negative): with `value`
    (mode constant), mirrored without the edge (reflect) or repeating the edge (edge)."""

    name = "graph.pad"

    pads = i64_array_prop()
    mode = prop_def(StringAttr)
    value = f64_prop()

    def __init__(self, input: SSAValue, pads: Sequence[int], mode: str = "constant",
                 value: float = 0.0):
        shape = shape_of(input)
        rank = len(shape)
        out = [e + pads[d] + pads[d + rank] for d, e in enumerate(shape)]
        self._build(input, out, pads=i64_array(pads), mode=StringAttr(mode), value=f64_attr(value))

    def verify_shapes(self) -> None:
        shape = shape_of(self.input)
        rank, pads = len(shape), self.pads.get_values()
        self._expect_len("pads", pads, 2 * rank, 0)
        mode = self.mode.data
        if mode not in PAD_MODES:
            raise self._fail(f"mode must be one of {list(PAD_MODES)} but got '{mode}'")
        if mode == "reflect":
            for d, e in enumerate(shape):
                if max(pads[d], pads[d + rank]) >= e:
                    raise self._fail(
                        f"reflect pads {list(pads)} must be smaller than the dimensions {list(shape)}"
                    )
        self._expect_result_shape([e + pads[d] + pads[d + rank] for d, e in enumerate(shape)])


@irdl_op_definition
class TileOp(_InjectiveOperation):
    """Repeat the input `repeats[d]` times along every dimension d."""

    name = "graph.tile"

    repeats = i64_array_prop()

    def __init__(self, input: SSAValue, repeats: Sequence[int]):
        shape = [e * r for e, r in zip(shape_of(input), repeats)]
        self._build(input, shape, repeats=i64_array(repeats))

    def verify_shapes(self) -> None:
        shape = shape_of(self.input)
        repeats = self.repeats.get_values()
        self._expect_len("repeats", repeats, len(shape), 1)
        self._expect_result_shape([e * r for e, r in zip(shape, repeats)])


@irdl_op_definition
class BroadcastToOp(_InjectiveOperation):
    """numpy.broadcast_to the result type's shape."""

    name = "graph.broadcast_to"
    pattern_kind = pattern_kind_def(PatternKind.BROADCAST)

    def __init__(self, input: SSAValue, shape: Sequence[int]):
        self._build(input, shape)

    def verify_shapes(self) -> None:
        a, b = shape_of(self.input), shape_of(self.result)
        if broadcast_shape(a, b) != b:
            raise self._fail(f"cannot broadcast {list(a)} to {list(b)}")


@irdl_op_definition
class GatherOp(GraphOperation):
    """numpy.take(input, indices, axis): indices (integers) may be negative, counting
    from the end; out-of-range indices are clamped."""

    name = "graph.gather"
    pattern_kind = pattern_kind_def(PatternKind.INJECTIVE)

    input = operand_def(TensorType)
    indices = operand_def(TensorType)
    result = result_def(TensorType)
    axis = int_prop()

    assembly_format = "$input `,` $indices attr-dict `:` functional-type(operands, results)"

    def __init__(self, input: SSAValue, indices: SSAValue, axis: int):
        shape = gather_output_shape(shape_of(input), shape_of(indices), axis)
        super().__init__(
            operands=[input, indices],
            result_types=[tensor_type(element_type_of(input), shape)],
            properties={"axis": IntegerAttr(axis, i64)},
        )

    def verify_element_types(self) -> None:
        self._expect_one_element_type([self.input, self.result])
        self._expect_element("indices", self.indices, "integer")

    def verify_shapes(self) -> None:
        shape, axis = shape_of(self.input), self.axis.value.data
        check_axis(self, axis, len(shape))
        self._expect_result_shape(gather_output_shape(shape, shape_of(self.indices), axis))
