"""Winograd convolution (made by `graph-winograd`)."""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import IntegerAttr, TensorType, i64
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import irdl_op_definition, operand_def, result_def

from xweave.dialects.graph.base import GraphOperation, PatternKind, pattern_kind_def
from xweave.dialects.graph.properties import i64_array, i64_array_prop, int_prop
from xweave.dialects.graph.tensors import element_type_of, shape_of, tensor_type

MAX_TILE = 4
"""Larger Winograd tiles need the points +-1/2 and lose fp32 accuracy fast."""


def winograd_tiles(height: int, width: int, tile: int) -> tuple[int, int]:
    """Output tiles of `tile` x `tile` pixels covering a height x width output."""
    return -(-height // tile), -(-width // tile)


def _data_blocks(shape: Sequence[int]) -> tuple[int, int, int, int, int]:
    """(N, C/blk, H, W, blk) of NCHW (blk 1) or NCHW<blk>c data."""
    if len(shape) == 4:
        n, c, h, w = shape
        return n, c, h, w, 1
    n, cb, h, w, blk = shape
    return n, cb, h, w, blk


def _verified_tile(op: WinogradInputTransformOp | WinogradOutputTransformOp) -> int:
    """The op's tile size m, checked to be 1 to MAX_TILE."""
    tile = op.tile.value.data
    if not 1 <= tile <= MAX_TILE:
        raise op._fail(f"expected tile 1 to {MAX_TILE} but got {tile}")
    return tile


@irdl_op_definition
class WinogradInputTransformOp(GraphOperation):
    """Winograd F(m x m, 3x3) input transform: B^T d B of each (a x a) tile d of the
    zero-padded data (a = m + 2, tiles m apart; B^T from `xweave.winograd`), point
    (u, v) at index u * a + v.

    data [N][C][H][W] or [N][C/c][H][W][c] -> [a*a][P][C/c][c] (c = 1 for NCHW),
    P = N * ceil(OH/m) * ceil(OW/m) tiles of the 3x3 convolution's OH x OW output.
    """

    name = "graph.winograd_input_transform"
    # each input pixel is read by up to 36 tiles' points: a producer fused into it
    # would be recomputed as often
    pattern_kind = pattern_kind_def(PatternKind.OPAQUE)

    input = operand_def(TensorType)
    result = result_def(TensorType)
    tile = int_prop()
    pads = i64_array_prop()

    assembly_format = "$input attr-dict `:` functional-type(operands, results)"

    def __init__(self, input: SSAValue, tile: int, pads: Sequence[int]):
        n, cb, h, w, blk = _data_blocks(shape_of(input))
        th, tw = winograd_tiles(h + pads[0] + pads[2] - 2, w + pads[1] + pads[3] - 2, tile)
        a = tile + 2
        super().__init__(
            operands=[input],
            result_types=[tensor_type(element_type_of(input), (a * a, n * th * tw, cb, blk))],
            properties={"tile": IntegerAttr(tile, i64), "pads": i64_array(pads)},
        )

    def verify_shapes(self) -> None:
        tile, pads = _verified_tile(self), self.pads.get_values()
        self._expect_len("pads", pads, 4, 0)
        shape = shape_of(self.input)
        if len(shape) not in (4, 5):
            raise self._fail(f"expected input of rank 4 or 5 but got {self.input.type}")
        n, cb, h, w, blk = _data_blocks(shape)
        oh, ow = h + pads[0] + pads[2] - 2, w + pads[1] + pads[3] - 2
        if min(oh, ow) < 1:
            raise self._fail(f"a 3x3 window does not fit the padded {h}x{w} input")
        a = tile + 2
        th, tw = winograd_tiles(oh, ow, tile)
        self._expect_result_shape((a * a, n * th * tw, cb, blk))


@irdl_op_definition
class WinogradMatmulOp(GraphOperation):
    """The Winograd domain products: for each of the a*a points b,
    out[b][p][k] = sum over channels (cb, c) of input[b][p][cb][c] * weight[b][cb][c][k]."""

    name = "graph.winograd_matmul"
    pattern_kind = pattern_kind_def(PatternKind.OUT_ELEMWISE_FUSABLE)

    input = operand_def(TensorType)
    weight = operand_def(TensorType)
    result = result_def(TensorType)

    assembly_format = "$input `,` $weight attr-dict `:` functional-type(operands, results)"

    def __init__(self, input: SSAValue, weight: SSAValue):
        points, tiles, _, _ = shape_of(input)
        super().__init__(operands=[input, weight],
                         result_types=[tensor_type(element_type_of(input), (points, tiles, shape_of(weight)[3]))])

    def verify_shapes(self) -> None:
        self._expect_rank("input", self.input, 4)
        self._expect_rank("weight", self.weight, 4)
        (points, tiles, cb, blk), (wpoints, wcb, wblk, k) = shape_of(self.input), shape_of(self.weight)
        if (wpoints, wcb, wblk) != (points, cb, blk):
            raise self._fail(f"weight {list(shape_of(self.weight))} does not match input "
                             f"{list(shape_of(self.input))} (expected [{points}, {cb}, {blk}, K])")
        self._expect_result_shape((points, tiles, k))


@irdl_op_definition
class WinogradOutputTransformOp(GraphOperation):
    """Winograd F(m x m, 3x3) output transform: input [a*a][P][K] (a = m + 2), each
    tile's a x a points M give its m x m output pixels A^T M A (A^T from
    `xweave.winograd`); the result, NCHW [N][K][OH][OW] or NCHW<k>c [N][K/k][OH][OW][k],
    keeps the pixels inside OH x OW (tiles are numbered n, row, column)."""

    name = "graph.winograd_output_transform"
    pattern_kind = pattern_kind_def(PatternKind.OUT_ELEMWISE_FUSABLE)

    input = operand_def(TensorType)
    result = result_def(TensorType)
    tile = int_prop()

    assembly_format = "$input attr-dict `:` functional-type(operands, results)"

    def __init__(self, input: SSAValue, tile: int, result_type: Attribute):
        super().__init__(operands=[input], result_types=[result_type],
                         properties={"tile": IntegerAttr(tile, i64)})

    def verify_shapes(self) -> None:
        tile = _verified_tile(self)
        self._expect_rank("input", self.input, 3)
        a = tile + 2
        out = shape_of(self.result)
        if len(out) not in (4, 5):
            raise self._fail(f"expected a result of rank 4 or 5 but got {self.result.type}")
        n, kb, oh, ow, blk = _data_blocks(out)
        th, tw = winograd_tiles(oh, ow, tile)
        expected = (a * a, n * th * tw, kb * blk)
        if shape_of(self.input) != expected:
            raise self._fail(f"expected input shape {list(expected)} for result "
                             f"{list(out)} but got {list(shape_of(self.input))}")
