"""Shared machinery of the loop rewrite passes (schedules).

The convention every pass follows: a rewrite that changes what an induction variable
stands for (split, fuse, unroll, ...) materializes the new index value with `arith`
ops and replaces the old variable's uses; `fold_access_maps` then folds that index
arithmetic back into the affine maps of `loop.load`/`loop.store`, so accesses stay
plain affine functions of loop variables (what schedules and cost features analyse).
"""

from __future__ import annotations

from collections.abc import Iterator

from xdsl.dialects import arith, func
from xdsl.dialects.builtin import IndexType, IntegerAttr, ModuleOp
from xdsl.ir import Block, Operation, SSAValue
from xdsl.ir.affine import AffineBinaryOpExpr, AffineBinaryOpKind, AffineConstantExpr, AffineDimExpr, AffineExpr
from xdsl.traits import is_side_effect_free
from xdsl.transforms.dead_code_elimination import is_trivially_dead
from xdsl.utils.exceptions import PassFailedException

from xweave.dialects import loop
from xweave.dialects.loop.access import used_dims


def _failure(what: str | None, message: str) -> PassFailedException:
    return PassFailedException(f"{what}: {message}" if what else message)


def kernels(module: ModuleOp, kernel: str | None = None,
            what: str | None = None) -> list[func.FuncOp]:
    """The kernel functions of `module`, or just `kernel` (an error naming the pass
    `what` if there is no such kernel)."""
    found = [f for f in module.ops if loop.is_kernel(f)
             and (kernel is None or f.sym_name.data == kernel)]
    if kernel is not None and not found:
        raise _failure(what, f"no kernel named '{kernel}'")
    return found


def walk_list(root: Operation) -> list[Operation]:
    """`list(root.walk())`: `root` and every op nested in it, in the same order, without
    xDSL's generators (one per op, region and block on the way down, each yielding every
    op below it again: most of the time of a walk of a deep loop nest)."""
    found: list[Operation] = []
    _walk_into(root, found)
    return found


def _walk_into(op: Operation, found: list[Operation]) -> None:
    found.append(op)
    for region in op.regions:
        block = region.first_block
        while block is not None:
            child = block.first_op
            while child is not None:
                _walk_into(child, found)
                child = child.next_op
            block = block.next_block


def loops_named(root: Operation, name: str) -> list[loop.ForOp]:
    """Every `loop.for` under `root` whose name is `name`."""
    return [op for op in walk_list(root) if isinstance(op, loop.ForOp) and op.name_str == name]


def find_loops(module: ModuleOp, name: str, kernel: str | None = None,
               what: str | None = None) -> list[loop.ForOp]:
    """The loops named `name` in every kernel (or in `kernel`); an error naming the pass
    `what` if there is none."""
    found = [f for k in kernels(module, kernel, what) for f in loops_named(k, name)]
    if not found:
        where = f"kernel '{kernel}'" if kernel else "any kernel"
        raise _failure(what, f"no loop named '{name}' in {where}")
    return found


def enclosing_function(op: Operation) -> Operation:
    """The top-level op (function) of the module that contains `op`."""
    while (parent := op.parent_op()) is not None and not isinstance(parent, ModuleOp):
        op = parent
    return op


def enclosing_loops(op: Operation) -> list[loop.ForOp]:
    """The loops around `op`, outermost first."""
    loops = []
    block = op.parent  # (op -> block -> region -> op, without the accessor calls: hot)
    while block is not None and (region := block.parent) is not None \
            and (parent := region.parent) is not None:
        if isinstance(parent, loop.ForOp):
            loops.append(parent)
        block = parent.parent
    return loops[::-1]


def perfect_nest(outer: loop.ForOp) -> list[loop.ForOp]:
    """`outer` and the loops perfectly nested in it (each the only op of its parent)."""
    nest = [outer]
    while True:
        ops = [op for op in nest[-1].body.block.ops if not isinstance(op, loop.YieldOp)]
        if len(ops) != 1 or not isinstance(ops[0], loop.ForOp):
            return nest
        nest.append(ops[0])


def body_ops(for_op: loop.ForOp) -> list[Operation]:
    """The ops of a loop body, without the terminator."""
    return [op for op in for_op.body.block.ops if not isinstance(op, loop.YieldOp)]


# --- affine index arithmetic ---------------------------------------------------------


def constant_index(value: SSAValue) -> int | None:
    """The value of an integer `arith.constant`, else None."""
    op = value.owner
    if isinstance(op, arith.ConstantOp) and isinstance(op.value, IntegerAttr):
        return op.value.value.data
    return None


def affine_of(value: SSAValue, dims: dict[SSAValue, int]) -> AffineExpr | None:
    """`value` as an affine expression of the variables in `dims`, if it is one."""
    if value in dims:
        return AffineExpr.dimension(dims[value])
    const = constant_index(value)
    if const is not None:
        return AffineExpr.constant(const)
    op = value.owner
    if not isinstance(op, (arith.AddiOp, arith.SubiOp, arith.MuliOp, arith.FloorDivSIOp,
                           arith.DivSIOp, arith.RemSIOp)):
        return None
    lhs, rhs = affine_of(op.lhs, dims), affine_of(op.rhs, dims)
    if lhs is None or rhs is None:
        return None
    if isinstance(op, arith.AddiOp):
        return lhs + rhs
    if isinstance(op, arith.SubiOp):
        return lhs - rhs
    rconst = constant_index(op.rhs)
    if isinstance(op, arith.MuliOp):
        lconst = constant_index(op.lhs)
        if rconst is not None:
            return lhs * rconst
        return rhs * lconst if lconst is not None else None
    # Division and remainder of non-negative indices by a positive constant.
    if rconst is None or rconst <= 0:
        return None
    return lhs % rconst if isinstance(op, arith.RemSIOp) else lhs // rconst


def materialize(expr: AffineExpr, operands: list[SSAValue]) -> tuple[list[Operation], SSAValue]:
    """`arith` ops computing `expr` (whose dims index `operands`), and the result value."""
    ops: list[Operation] = []

    def emit(e: AffineExpr) -> SSAValue:
        if isinstance(e, AffineDimExpr):
            return operands[e.position]
        if isinstance(e, AffineConstantExpr):
            c = arith.ConstantOp(IntegerAttr(e.value, IndexType()))
            ops.append(c)
            return c.result
        assert isinstance(e, AffineBinaryOpExpr), f"unsupported affine expression {e}"
        lhs, rhs = emit(e.lhs), emit(e.rhs)
        op_class = {
            AffineBinaryOpKind.Add: arith.AddiOp,
            AffineBinaryOpKind.Mul: arith.MuliOp,
            AffineBinaryOpKind.FloorDiv: arith.FloorDivSIOp,
            AffineBinaryOpKind.Mod: arith.RemSIOp,
            AffineBinaryOpKind.CeilDiv: arith.CeilDivSIOp,
        }[e.kind]
        op = op_class(lhs, rhs)
        ops.append(op)
        return op.result

    return ops, emit(expr)


def fold_access_map(op: loop.LoadOp | loop.StoreOp | loop.PrefetchOp) -> bool:
    """Rewrite `op`'s map over the enclosing loop variables when its index operands are
    affine in them. Returns True if the op changed."""
    ivs = [f.induction_var for f in enclosing_loops(op)]
    dims = {v: i for i, v in enumerate(ivs)}
    operands = list(op.indices)
    amap = op.map.data
    positions = [dims.get(v) for v in operands]
    if None not in positions and all(a < b for a, b in zip(positions, positions[1:])) \
            and len(used_dims(amap)) == amap.num_dims:
        return False  # already over distinct loop variables in nest order, all used
    exprs = [affine_of(v, dims) for v in operands]
    if any(e is None for e in exprs):
        return False
    composed = amap.replace_dims_and_symbols(exprs, [], len(ivs), 0)
    return op.set_access(ivs, composed, compact=True)


def fold_access_maps(root: Operation, erase_dead: bool = True) -> None:
    """Fold index arithmetic into every access map under `root` (itself included),
    then drop dead ops (unless `erase_dead` is False)."""
    for op in walk_list(root):
        if isinstance(op, (loop.LoadOp, loop.StoreOp, loop.PrefetchOp)):
            fold_access_map(op)
    if erase_dead:
        erase_dead_ops(root)


def erase_dead_ops(root: Operation) -> bool:
    """Erase the ops under `root` whose results are unused and that have no other
    effect (index arithmetic, loads, constants), and loops left empty; returns
    whether anything was erased.

    One backward walk: users are visited before what they use, so chains die
    together. xDSL's `region_dce` computes the same for these IRs but asks every loop
    for the effects of its whole body on every sweep, quadratic in the kernel size
    (it was most of a tuning candidate's build time)."""
    changed = False
    for op in reversed(walk_list(root)):
        if op is root or op.parent is None:
            continue
        if isinstance(op, loop.ForOp):
            dead = all(isinstance(o, loop.YieldOp) for o in op.body.block.ops)
        elif op.regions or any(r.first_use is not None for r in op.results):
            dead = False  # (most ops: used; `is_trivially_dead` would ask no more)
        else:
            dead = is_trivially_dead(op)
        if dead:
            op.detach()
            op.erase()
            changed = True
    return changed


def replace_induction_var(old: SSAValue, expr: AffineExpr, operands: list[SSAValue],
                          block: Block) -> None:
    """Make every use of `old` use `expr(operands)` instead, computed at the top of
    `block` (which must dominate all uses)."""
    ops, value = materialize(expr, operands)
    if ops:
        first = block.first_op
        if first is None:
            block.add_ops(ops)
        else:
            block.insert_ops_before(ops, first)
    old.replace_all_uses_with(value)


def walk_loops(root: Operation) -> Iterator[loop.ForOp]:
    """Every loop under `root`, outer before inner."""
    for op in root.walk():
        if isinstance(op, loop.ForOp):
            yield op


def side_effect_free(op: Operation) -> bool:
    """Whether `op` has no memory effects; xDSL 0.74's `arith.extsi` lacks the Pure
    trait its sibling conversions have, and is pure all the same."""
    return isinstance(op, arith.ExtSIOp) or is_side_effect_free(op)
