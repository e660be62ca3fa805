"""loop-prefetch: fetch a register tile's write-back lines while its reduction runs.

`loop-prefetch{loop="matmul.k"}` inserts, in front of every loop named `loop`, one
`loop.prefetch` per cache line that the ops after that loop in its block (the tile's
write-back and any fused epilogue) load from non-local buffers, when the line's
address is known before the loop. The reduction takes thousands of cycles; the
write-back then finds its lines in cache instead of waiting on misses at every tile.

Why it matters: a matmul's output tile is rows x 16 columns of a row-major result, so
its lines are one row apart and the hardware prefetcher does not follow them. A
fused residual add loads such lines at the end of every tile; measured in BERT's
128x768x768 attention-output kernel, those loads cost 10% of the kernel before this
pass. Stores are left to the store buffer (prefetching the output lines for writing
measured 2-4% slower on BERT's 3072-wide kernels), and so are loads inside loops or
conditionals after the reduction (a write-back nest not unrolled, a guarded ragged
tile).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import MemRefType, ModuleOp
from xdsl.ir import OpResult, Operation
from xdsl.ir.affine import AffineBinaryOpExpr, AffineBinaryOpKind, AffineConstantExpr, AffineExpr
from xdsl.passes import ModulePass

from xweave.dialects import loop
from xweave.passes.loop_utils import find_loops

CACHE_LINE_BYTES = 64


def _split_constant(expr: AffineExpr) -> tuple[AffineExpr | None, int]:
    """(expr - c, c) for the constant term c of a sum (the whole expr if constant)."""
    if isinstance(expr, AffineConstantExpr):
        return None, expr.value
    if isinstance(expr, AffineBinaryOpExpr) and expr.kind == AffineBinaryOpKind.Add \
            and isinstance(expr.rhs, AffineConstantExpr):
        return expr.lhs, expr.rhs.value
    return expr, 0


def _line_key(op: loop.LoadOp) -> tuple:
    """Accesses with equal keys touch the same cache line (the last index's constant
    offset in whole lines; the rest of the address must match exactly)."""
    memref_type = op.memref.type
    assert isinstance(memref_type, MemRefType)
    per_line = max(1, CACHE_LINE_BYTES // loop.element_bytes(memref_type.get_element_type()))
    results = op.map.data.results
    if not results:  # a rank-0 buffer: one element
        return (op.memref,)
    rest, offset = _split_constant(results[-1])
    return (op.memref, tuple(op.indices), results[:-1], rest, offset // per_line)


def prefetch_write_back(for_op: loop.ForOp) -> list[loop.PrefetchOp]:
    """Insert in front of `for_op` one prefetch per line that the ops after it in its
    block load (loads nested in loops or conditionals are left alone: their addresses
    may not be known, or not be in bounds, before the loop)."""
    block = for_op.parent_block()
    assert block is not None
    following: list[Operation] = []
    op = for_op.next_op
    while op is not None:
        following.append(op)
        op = op.next_op
    after = set(following)
    lines: dict[tuple, loop.LoadOp] = {}
    for o in following:
        if not isinstance(o, loop.LoadOp) or loop.scope_of(o.memref.type) == loop.LOCAL_SCOPE:
            continue
        if all(not isinstance(v, OpResult) or v.op not in after for v in o.indices):
            lines.setdefault(_line_key(o), o)
    prefetches = [loop.PrefetchOp(o.memref, list(o.indices), o.map) for o in lines.values()]
    block.insert_ops_before(prefetches, for_op)
    return prefetches


@dataclass(frozen=True)
class LoopPrefetchPass(ModulePass):
    """Prefetch, in front of loop `loop`, the lines its block's write-back touches."""

    name = "loop-prefetch"

    loop: str
    """The name of the reduction loop of the register tile."""
    kernel: str | None = None
    """Only in this kernel (default: every kernel having the loop)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        found = find_loops(op, self.loop, self.kernel, self.name)
        for for_op in found:
            prefetch_write_back(for_op)
