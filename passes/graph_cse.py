"""graph-cse: common-subexpression elimination that compares constants by value.

xDSL's `cse` merges ops with equal operands and properties, but two weights with equal
contents usually carry different `dense_resource` handles (the handle is the tensor's
name plus a content hash), so it would keep both. This pass first merges the
`graph.constant`s of a block whose values are equal (same type and bytes; the first
one stays), then runs xDSL's `cse`, which merges everything computed from them.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter
from xdsl.transforms.common_subexpression_elimination import CommonSubexpressionElimination

from xweave.dialects import graph
from xweave.dialects.graph.constants import constant_value


def _merge_equal_constants(block: Block) -> None:
    """Replace every constant of `block` equal to an earlier one by the earlier one."""
    first: dict[tuple, list[graph.ConstantOp]] = {}
    for op in list(block.ops):
        if not isinstance(op, graph.ConstantOp):
            continue
        value = constant_value(op)
        digest = hashlib.blake2b(value.tobytes(), digest_size=16).digest()
        same = first.setdefault((op.result.type, digest), [])
        # Equal digests are compared in full before merging.
        kept = next((c for c in same if constant_value(c).tobytes() == value.tobytes()), None)
        if kept is None:
            same.append(op)
            continue
        op.result.replace_all_uses_with(kept.result)
        Rewriter.erase_op(op)


@dataclass(frozen=True)
class GraphCsePass(ModulePass):
    """Merge equal constants (by value) and then common subexpressions (xDSL's `cse`)."""

    name = "graph-cse"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        blocks = {c.parent_block() for c in op.walk() if isinstance(c, graph.ConstantOp)}
        for block in blocks:
            if block is not None:
                _merge_equal_constants(block)
        CommonSubexpressionElimination().apply(ctx, op)
