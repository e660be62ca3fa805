"""graph-alter-layout: convolutions on channel-blocked NCHW<k>c data (the CPU layout).

Each `graph.conv2d` whose output channels split into blocks of `block` (else of a
tail block, else of 8) becomes a `graph.conv2d_nchwc` when its input is blocked already or its result
reaches another such conv (alone between NCHW ops, two transforms cost more than the
blocked conv saves): its input in NCHW<ci>c (ci: the producer's block, or
`block`/8 when it divides the channels, or all of them, e.g. the first conv's 3), its
weight through a `graph.layout_transform` to OIHW<ci>i<co>o (a constant, so
graph-fold-constants transforms it at compile time) and its bias reshaped to
[O/co][co]. Depthwise convs keep their producer's block. Other grouped convs with
as many output as input channels per group (ResNeXt's, RegNet's) and constant weights
run one group per block (`groups` = the blocks): a block holding several groups gets
weights with zeros between them (folded at compile time), so the conv is the blocked
dense conv restricted to one input block, vectorized over the block's output
channels; others stay NCHW, and so does a last conv (feeding no other) whose output
channels only split into blocks of 8 while its input comes in another block. A register block of output
channels is then contiguous in memory, and so are the elementwise epilogues fused
into the conv. The tail blocks depend on the target's vector width (the machine model
of the module's `xweave.target`): with 16-lane vectors, channels that 16 does not
divide take blocks of 24, 40 or 56 (whole vectors and an 8-lane tail: 24 channels run
as one zmm and one ymm vector per pixel, not three ymm vectors); with 8 lanes, none.

Integer convolutions (quantized models) are blocked alike (even alone between NCHW ops:
their dot products need contiguous input channels), their `pad_value` kept, and
the quantization ops (quantize, dequantize, requantize) count as broadcast ops.

The blocked layout flows on through elementwise and broadcast ops (per-channel
operands such as [C, 1, 1] become [C/k, 1, 1, k], so numpy broadcasting still
holds), pools (their `layout` property) and concats along the channel axis whose
inputs are all blocked alike. Every other consumer (reshape, dense, the function's
results, ...) reads the tensor through a `graph.layout_transform` back to NCHW;
a transform back and forth cancels, and the conversions nobody reads are erased.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, StringAttr, TensorType
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import InsertPoint, Rewriter

from xweave.dialects import graph, loop
from xweave.dialects.graph.constants import constant_value
from xweave.dialects.graph.nn import is_integer_layer
from xweave.target import machine_model, target_of
from xweave.layout import transform_shape

_ELEMENTWISE = (graph.UnaryOperation, graph.BinaryOperation, graph.QuantizeOp,
                graph.DequantizeOp, graph.RequantizeOp)
_POOLS = (graph.MaxPool2dOp, graph.AvgPool2dOp, graph.GlobalAvgPool2dOp, graph.GlobalMaxPool2dOp)


def _shape(value: SSAValue) -> tuple[int, ...]:
    assert isinstance(value.type, TensorType)
    return tuple(value.type.get_shape())


def _nchwc(block: int) -> str:
    return f"NCHW{block}c"


def tail_blocks(lanes: int) -> tuple[int, ...]:
    """Channel blocks tried after the preferred one on `lanes`-wide vectors: whole
    vectors and an 8-lane tail (24, 40, 56 at 16 lanes; none at 8)."""
    return tuple(range(lanes + 8, 4 * lanes, 16)) if lanes > 8 else ()


@dataclass
class _Rewrite:
    """One function's walk: which NCHW values also exist blocked, and as what."""

    block: int
    lanes: int = 8
    blocked: dict[SSAValue, SSAValue] = field(default_factory=dict)

    @property
    def blocks(self) -> tuple[int, ...]:
        """Channel blocks in order of preference."""
        return (self.block, *tail_blocks(self.lanes), 8)

    def blocked_of(self, value: SSAValue) -> SSAValue | None:
        """The blocked tensor `value` (NCHW) was converted from, if any."""
        if value in self.blocked:
            return self.blocked[value]
        owner = value.owner
        if (isinstance(owner, graph.LayoutTransformOp) and owner.dst_layout.data == "NCHW"
                and owner.src_layout.data.startswith("NCHW") and len(_shape(owner.input)) == 5):
            return owner.input
        return None

    def out_block(self, channels: int) -> int | None:
        return next((b for b in self.blocks if channels % b == 0), None)

    def in_block(self, channels: int) -> int:
        return next((b for b in self.blocks if channels % b == 0), channels)

    # --- building ---------------------------------------------------------------------

    def _insert(self, new: Operation, before: Operation) -> SSAValue:
        Rewriter.insert_op(new, InsertPoint.before(before))
        return new.results[0]

    def _replace(self, old: Operation, new: Operation) -> None:
        """Put blocked `new` in place of `old`; `old`'s users read it converted back to NCHW."""
        Rewriter.insert_op(new, InsertPoint.before(old))
        result = new.results[0]
        layout = _nchwc(_shape(result)[4])
        back = graph.LayoutTransformOp(result, layout, "NCHW")
        Rewriter.insert_op(back, InsertPoint.after(new))
        old.results[0].replace_all_uses_with(back.result)
        Rewriter.erase_op(old)
        self.blocked[back.result] = result

    def blockable(self, value: SSAValue, block: int, channels: int) -> bool:
        """Whether `to_blocked` can convert `value`."""
        source = self.blocked_of(value)
        if source is not None:
            return _shape(source)[4] == block
        shape = _shape(value)
        full = (1,) * (4 - len(shape)) + shape
        return len(shape) <= 4 and (full[1] == 1 or (full[1] == channels and channels > 1))

    def to_blocked(self, value: SSAValue, block: int, channels: int, at: Operation) -> SSAValue:
        """`value`, an operand of an elementwise op on [N, `channels`, H, W] (and
        `blockable`), as an operand of the same op on NCHW<block>c data."""
        source = self.blocked_of(value)
        if source is not None:
            return source
        shape = _shape(value)
        full = (1,) * (4 - len(shape)) + shape
        if full[1] == channels and channels > 1:
            lead = 4 - len(shape)
            if lead:
                value = self._insert(graph.ReshapeOp(value, full), at)
            value = self._insert(graph.LayoutTransformOp(value, "NCHW", _nchwc(block)), at)
            if lead:
                value = self._insert(graph.ReshapeOp(value, _shape(value)[lead:]), at)
            return value
        if full[1] == 1:
            if all(d == 1 for d in shape):
                return value  # broadcasts to anything
            return self._insert(graph.ReshapeOp(value, (*shape, 1)), at)
        raise AssertionError("not blockable")

    # --- the rules --------------------------------------------------------------------

    def blockable_conv(self, op: Operation) -> bool:
        if not isinstance(op, graph.Conv2dOp):
            return False
        out_channels, channels = _shape(op.weight)[0], _shape(op.input)[1]
        groups = op.groups.value.data
        return self.out_block(out_channels) is not None and (
            groups == 1 or groups == channels == out_channels
            or self.group_block(op) is not None)

    def group_block(self, op: graph.Conv2dOp) -> int | None:
        """For a grouped convolution (as many output as input channels per group, more
        than one, constant weights) the channel block it runs in, one group per block
        after its weights are padded with zeros between the groups a block holds (a
        group of 8 channels in 16-channel blocks: twice the multiply-adds, against
        NCHW loops that vectorize poorly); None if it cannot."""
        groups = op.groups.value.data
        out_channels, per_group = _shape(op.weight)[:2]
        channels = _shape(op.input)[1]
        if groups == 1 or per_group == 1 or channels != out_channels \
                or out_channels // groups != per_group \
                or not isinstance(op.weight.owner, graph.ConstantOp):
            return None
        source = self.blocked_of(op.input)
        choices = [_shape(source)[4]] if source is not None else self.blocks
        return next((b for b in choices if b % per_group == 0 and channels % b == 0), None)

    def feeds_a_conv(self, value: SSAValue) -> bool:
        """Whether `value` reaches a blockable conv through ops that keep the blocked
        layout (elementwise, pools, concats)."""
        seen, todo = set(), [value]
        while todo:
            for use in todo.pop().uses:
                user = use.operation
                if self.blockable_conv(user) and use.index == 0:
                    return True
                if user in seen or len(user.results) != 1 or len(_shape(user.results[0])) != 4:
                    continue
                if isinstance(user, _ELEMENTWISE + _POOLS + (graph.ConcatOp,)):
                    seen.add(user)
                    todo.append(user.results[0])
        return False

    def conv2d(self, op: graph.Conv2dOp) -> None:
        if not self.blockable_conv(op):
            return
        out_channels, _, _, _ = _shape(op.weight)
        channels = _shape(op.input)[1]
        groups = op.groups.value.data
        co = self.out_block(out_channels)
        assert co is not None
        source = self.blocked_of(op.input)
        feeds = self.feeds_a_conv(op.result)
        grouped = groups not in (1, channels) and self.group_block(op) is not None
        if source is None and not feeds and not grouped and not is_integer_layer(op):
            # Alone between NCHW producer and consumers, the conv would pay two
            # transforms for a blocked output nobody else reads (a grouped conv's NCHW
            # loops vectorize so poorly that it pays them anyway, and an integer conv
            # has its dot-product instructions only on blocked input channels).
            return
        if source is not None and _shape(source)[4] != co and co != self.block and not feeds:
            # A last conv that would narrow the block to the fallback (SqueezeNet's
            # 512->1000 classifier, 8-lane register blocks) gains less from blocking
            # than the transform of its input costs: it stays NCHW.
            return
        weight = op.weight
        if groups == 1:
            ci = _shape(source)[4] if source is not None else self.in_block(channels)
            weight_layout = f"OIHW{ci}i{co}o"
        elif groups == channels == out_channels:  # depthwise
            ci = co = _shape(source)[4] if source is not None else co
            weight_layout = f"OIHW1i{co}o"
        else:  # one group per block: zeros between the groups a block holds
            block = self.group_block(op)
            assert block is not None
            ci = co = block
            weight_layout = f"OIHW{ci}i{co}o"
            weight = self._insert(_block_diagonal(op, block), op)
            groups = channels // block
        data = source if source is not None else self._insert(
            graph.LayoutTransformOp(op.input, "NCHW", _nchwc(ci)), op)
        weight = self._insert(graph.LayoutTransformOp(weight, "OIHW", weight_layout), op)
        bias = None
        if op.bias is not None:
            bias = self._insert(graph.ReshapeOp(op.bias, (out_channels // co, co)), op)
        pad_value = op.input_pad_value if "pad_value" in op.properties else None
        new = graph.Conv2dNchwcOp(
            data, weight, bias,
            strides=op.strides.get_values(), pads=op.pads.get_values(),
            dilations=op.dilations.get_values(), groups=groups, pad_value=pad_value,
        )
        new.attributes.update(op.attributes)
        self._replace(op, new)

    def elementwise(self, op: Operation) -> None:
        (result,) = op.results
        shape = _shape(result)
        sources = [self.blocked_of(v) for v in op.operands]
        blocks = {_shape(s)[4] for s in sources if s is not None}
        if len(shape) != 4 or len(blocks) != 1:
            return
        (block,) = blocks
        if not all(self.blockable(v, block, shape[1]) for v in op.operands):
            return
        operands = [self.to_blocked(v, block, shape[1], op) for v in op.operands]
        result_type = TensorType(result.type.element_type, transform_shape(shape, "NCHW", _nchwc(block)))  # pyright: ignore
        new = type(op).create(operands=operands, result_types=[result_type],
                              properties=dict(op.properties), attributes=dict(op.attributes))
        self._replace(op, new)

    def pool(self, op: Operation) -> None:
        source = self.blocked_of(op.operands[0])
        if source is None or op.properties["layout"] != StringAttr("NCHW"):
            return
        layout = _nchwc(_shape(source)[4])
        shape = transform_shape(_shape(op.results[0]), "NCHW", layout)
        properties = dict(op.properties) | {"layout": StringAttr(layout)}
        # in the op definition's order, which the printer keeps: a module printed after
        # this pass reads the same as one printed after replaying it on a parsed module
        order = list(type(op).get_irdl_definition().properties)
        properties = dict(sorted(properties.items(), key=lambda kv: order.index(kv[0])
                                 if kv[0] in order else len(order)))
        new = type(op).create(operands=[source],
                              result_types=[TensorType(op.results[0].type.element_type, shape)],  # pyright: ignore
                              properties=properties, attributes=dict(op.attributes))
        self._replace(op, new)

    def concat(self, op: graph.ConcatOp) -> None:
        sources = [self.blocked_of(v) for v in op.inputs]
        if (op.axis.value.data % 4 != 1 or len(_shape(op.result)) != 4
                or any(s is None for s in sources)
                or len({_shape(s)[4] for s in sources}) != 1):  # pyright: ignore
            return
        self._replace(op, graph.ConcatOp(sources, 1))  # pyright: ignore

    def run(self, function: func.FuncOp) -> None:
        for op in list(function.body.walk()):
            if isinstance(op.parent_op(), graph.FusedOp):
                continue
            if isinstance(op, graph.Conv2dOp):
                self.conv2d(op)
            elif isinstance(op, _ELEMENTWISE):
                self.elementwise(op)
            elif isinstance(op, _POOLS):
                self.pool(op)
            elif isinstance(op, graph.ConcatOp):
                self.concat(op)


class CancelLayoutTransforms(RewritePattern):
    """A transform to the layout a value came from is that value; a transform of a
    transform is one transform; a transform to the same layout is nothing."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.LayoutTransformOp, rewriter: PatternRewriter) -> None:
        if op.src_layout == op.dst_layout:
            rewriter.replace(op, [], [op.input])
            return
        inner = op.input.owner
        if not isinstance(inner, graph.LayoutTransformOp):
            return
        if inner.src_layout == op.dst_layout:
            rewriter.replace(op, [], [inner.input])
        else:
            rewriter.replace(op, graph.LayoutTransformOp(
                inner.input, inner.src_layout.data, op.dst_layout.data))


@dataclass(frozen=True)
class GraphAlterLayoutPass(ModulePass):
    """Run convolutions, their elementwise epilogues and pools on NCHW<k>c data."""

    name = "graph-alter-layout"

    block: int = 16
    """The preferred channel block (then the target's `tail_blocks`, then 8)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        target = target_of(op)
        lanes = machine_model(target).lanes if target.is_cpu else 8
        for function in op.ops:
            if isinstance(function, func.FuncOp) and not loop.is_kernel(function):
                _Rewrite(self.block, lanes).run(function)
        PatternRewriteWalker(GreedyRewritePatternApplier([CancelLayoutTransforms()])).rewrite_module(op)
        # The conversions back to NCHW that no consumer needed.
        for transform in reversed(list(op.walk())):
            if isinstance(transform, graph.LayoutTransformOp) and not transform.result.uses:
                Rewriter.erase_op(transform)


def _block_diagonal(op: graph.Conv2dOp, block: int) -> graph.ConstantOp:
    """The weights of grouped `op` ([O][O/groups][KH][KW]) as one group per channel
    block ([O][block][KH][KW]): each output channel's weights at its group's input
    channels within its block, zeros elsewhere."""
    w = constant_value(op.weight.owner)  # pyright: ignore[reportArgumentType]
    out_channels, per_group = w.shape[:2]
    wide = np.zeros((out_channels, block, *w.shape[2:]), w.dtype)
    for o in range(out_channels):
        first = (o // per_group) * per_group - (o // block) * block  # its group, in the block
        wide[o, first:first + per_group] = w[o]
    return graph.ConstantOp.from_array(f"{op.weight.name_hint or 'w'}_block_diagonal", wide)
