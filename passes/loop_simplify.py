"""loop-simplify: clean loop nests up after scheduling, so the emitted LLVM is clean.

Repeated until nothing changes, on every function (or on `kernel` only):

* index arithmetic is folded into the access maps (`loop_utils.fold_access_maps`);
* loops of extent 1 disappear (the induction variable becomes the constant lower
  bound), loops of extent 0 are erased;
* access maps are simplified with the loop ranges: linear terms are collected,
  `(4*a + b) floordiv 4` becomes `a` and `(4*a + b) mod 4` becomes `b` when `0 <= b < 4`,
  `c * (e floordiv c) + e mod c` becomes `e`, terms with a single value become constants;
* guards are decided: an `i1` built with `arith.cmpi` of affine index expressions (and
  `andi`/`ori`/`xori` of those) that is provably true or false over the ranges of the
  enclosing loops is replaced by a constant, and an `scf.if` (or `arith.select`) on such
  a condition is replaced by the branch taken;
* buffers that are unused or only ever written (`loop.alloc`s whose every use is a
  `loop.store` into them) are erased with their stores;
* dead pure ops, empty loops and unused `loop.alloc`s are dropped (dead code elimination);
* constants move into the region of the one op that holds all their uses (so that nests
  stay perfect).

The range reasoning is `loop_analysis`'s.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, func, scf
from xdsl.dialects.builtin import IndexType, IntegerAttr, IntegerType, ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass

from xweave.dialects import loop
from xweave.passes.loop_analysis import simplify_access, truth_value
from xweave.passes.loop_utils import erase_dead_ops, fold_access_map, kernels, walk_list

# --- rewrites ---------------------------------------------------------------------------


def _insert_before(ops: Sequence[Operation], anchor: Operation) -> None:
    block = anchor.parent_block()
    assert block is not None
    block.insert_ops_before(list(ops), anchor)


def remove_trivial_loops(root: Operation) -> bool:
    """Inline loops of extent 1 (the induction variable becomes a constant), erase
    loops of extent 0."""
    trivial = [op for op in walk_list(root) if isinstance(op, loop.ForOp) and op.extent <= 1]
    for for_op in reversed(trivial):  # inner loops first: each is still in place
        if for_op.extent == 1:
            const = arith.ConstantOp(IntegerAttr(for_op.lb.value.data, IndexType()))
            _insert_before([const], for_op)
            for_op.induction_var.replace_all_uses_with(const.result)
            body = [op for op in for_op.body.block.ops if not isinstance(op, loop.YieldOp)]
            for op in body:
                op.detach()
            _insert_before(body, for_op)
        for_op.detach()
        for_op.erase()
    return bool(trivial)


def _bool_constant(value: bool, anchor: Operation) -> SSAValue:
    const = arith.ConstantOp(IntegerAttr(int(value), IntegerType(1)))
    _insert_before([const], anchor)
    return const.result


def _inline_branch(if_op: scf.IfOp, taken: bool) -> None:
    region = if_op.true_region if taken else if_op.false_region
    if region.blocks:
        block = region.block
        terminator = block.last_op
        values = list(terminator.operands) if isinstance(terminator, scf.YieldOp) else []
        body = [op for op in block.ops if op is not terminator]
        for op in body:
            op.detach()
        _insert_before(body, if_op)
        for result, value in zip(if_op.results, values):
            result.replace_all_uses_with(value)
    if_op.detach()
    if_op.erase()


def simplify_conditions(root: Operation) -> bool:
    """Decide comparisons, boolean ops, `scf.if` and `arith.select` that are constant
    over the loop ranges."""
    changed = False
    inlined = False  # (only inlining a branch erases ops: until then all are in place)
    for op in walk_list(root):
        if inlined and not root.is_ancestor(op):  # inside a branch erased earlier
            continue
        if isinstance(op, scf.IfOp):
            taken = truth_value(op.cond)
            if taken is not None:
                _inline_branch(op, taken)
                changed = inlined = True
        elif isinstance(op, arith.SelectOp) and isinstance(op.cond.type, IntegerType):
            taken = truth_value(op.cond)
            if taken is not None:
                op.result.replace_all_uses_with(op.lhs if taken else op.rhs)
                changed = True
        elif isinstance(op, arith.CmpiOp) and op.result.uses:
            known = truth_value(op.result)
            if known is not None:
                op.result.replace_all_uses_with(_bool_constant(known, op))
                changed = True
        elif isinstance(op, arith.AndIOp | arith.OrIOp) and op.result.uses:
            if op.result.type != IntegerType(1):
                continue
            a, b = truth_value(op.lhs), truth_value(op.rhs)
            neutral = isinstance(op, arith.AndIOp)  # x and true == x; x or false == x
            if a is neutral:
                op.result.replace_all_uses_with(op.rhs)
                changed = True
            elif b is neutral:
                op.result.replace_all_uses_with(op.lhs)
                changed = True
    return changed


def remove_write_only_buffers(root: Operation) -> bool:
    """Erase `loop.alloc` buffers that are unused or only ever stored to (with those
    stores)."""
    changed = False
    for alloc in [op for op in walk_list(root) if isinstance(op, loop.AllocOp)]:
        uses = list(alloc.memref.uses)
        if not all(
            isinstance(u.operation, loop.StoreOp) and u.index == 1 for u in uses
        ):
            continue
        for use in uses:
            store = use.operation
            store.detach()
            store.erase()
        alloc.detach()
        alloc.erase()
        changed = True
    return changed


def sink_constants(root: Operation) -> bool:
    """Move each `arith.constant` into the region of the one op that holds all its uses,
    as deep as possible, so that constants left by unrolling or by removing a loop do not
    sit between nested loops (which keeps nests perfect)."""
    changed = False
    work = [op for op in walk_list(root) if isinstance(op, arith.ConstantOp)]
    while work:
        const = work.pop()
        block = const.parent_block()
        users = [use.operation for use in const.result.uses]
        if block is None or not users:
            continue
        holders = {block.find_ancestor_op_in_block(user) for user in users}
        if len(holders) != 1:
            continue
        (holder,) = holders
        if holder is None or holder in users or not holder.regions:
            continue
        regions = {id(_region_holding(user, holder)): _region_holding(user, holder)
                   for user in users}
        if len(regions) != 1:
            continue
        (region,) = regions.values()
        if region is None or len(region.blocks) != 1 or region.block.first_op is None:
            continue
        const.detach()
        region.block.insert_op_before(const, region.block.first_op)
        work.append(const)
        changed = True
    return changed


def _region_holding(op: Operation, holder: Operation):
    """The region of `holder` that contains `op`."""
    while (parent := op.parent_op()) is not holder:
        if parent is None:
            return None
        op = parent
    return op.parent_region()


def simplify_function(function: func.FuncOp, max_rounds: int = 10) -> None:
    """Apply every simplification to `function` until nothing changes."""
    for _ in range(max_rounds):
        changed = remove_trivial_loops(function)
        for op in walk_list(function):
            if isinstance(op, loop.LoadOp | loop.StoreOp | loop.PrefetchOp):
                changed |= fold_access_map(op)
                changed |= simplify_access(op)
        changed |= simplify_conditions(function)
        changed |= remove_write_only_buffers(function)
        changed |= erase_dead_ops(function)
        changed |= sink_constants(function)
        if not changed:
            return


@dataclass(frozen=True)
class LoopSimplifyPass(ModulePass):
    """Clean loop nests up: fold and simplify access maps, remove extent-1 loops and
    provably true/false guards, drop dead code, empty loops and unused buffers."""

    name = "loop-simplify"

    kernel: str | None = None
    """Only simplify this kernel (default: every function of the module)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.kernel is not None:
            functions = kernels(op, self.kernel, self.name)
        else:
            functions = [f for f in op.ops if isinstance(f, func.FuncOp) and not f.is_declaration]
        for function in functions:
            simplify_function(function)
