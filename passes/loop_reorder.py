"""loop-reorder: permute the loops of a perfect nest (TVM's `reorder`).

`loop-reorder{order="conv2d.rc","conv2d.y"}` on the nest `n, o, y, x, rc, ry, rx`
gives `n, o, rc, x, y, ry, rx`: the named loops take the positions the named loops
occupied, in the given order; the loops in between keep theirs. A loop keeps its
bounds, kind and name; only its position changes. (Names contain dots, so they are
quoted in a pipeline; `order="a.i,a.j"` works too.)

Legality: the named loops must lie in one perfect nest (from the outermost named loop
down to the innermost one, each loop the only op of its parent; the innermost named
loop's body may hold anything). A guard (`scf.if`) or any other op between them is
rejected, naming that op. Then, for every buffer written inside the nest:

* accesses at one index (the same affine expressions of the same values) that both
  load and store are the update of a reduction (`acc[i, j] = acc[i, j] + ...`): its
  iterations only combine through a commutative reducer, so any order gives the same
  result (up to floating-point rounding);
* an index only stored to must depend on every loop of the nest (of extent > 1),
  otherwise several iterations write the same element and the last one wins;
* two different indices must provably never meet: in some dimension they differ by a
  constant that the gcd of their (identical) coefficients does not divide, as the
  copies of an unrolled loop (`2*i` and `2*i + 1`). Otherwise the nest is rejected.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.ir.affine import AffineExpr
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import PassFailedException

from xweave.dialects import loop
from xweave.passes.loop_analysis import Linear
from xweave.passes.loop_utils import body_ops, enclosing_loops, fold_access_maps, kernels


def _describe(op: Operation) -> str:
    if isinstance(op, loop.ForOp):
        return f"loop '{op.name_str}'" if op.name_str else "an unnamed loop.for"
    if op.name == "scf.if":
        return "a guard (scf.if)"
    return f"'{op.name}'"


def _nest_chain(top: loop.ForOp, names: tuple[str, ...]) -> list[loop.ForOp]:
    """The loops from `top` down to the innermost loop named in `names`, checking that
    they form a perfect nest; raise a PassFailedException naming what is in the way."""
    chain = [top]
    wanted = set(names)
    found = {top.name_str}
    while not wanted <= found:
        current = chain[-1]
        ops = body_ops(current)
        if len(ops) != 1 or not isinstance(ops[0], loop.ForOp):
            missing = sorted(wanted - found)
            below = [op for op in current.walk() if isinstance(op, loop.ForOp)
                     and op.name_str in wanted - found]
            if not below:
                raise PassFailedException(
                    f"loop-reorder: loop '{missing[0]}' is not nested inside loop "
                    f"'{top.name_str}', so they are not in one perfect nest"
                )
            guards = [op for op in ops if op.name == "scf.if"]
            others = [op for op in ops if not isinstance(op, loop.ForOp)]
            problem = f"loops {', '.join(repr(n) for n in names)} are not in one perfect nest"
            if guards or others:
                raise PassFailedException(
                    f"loop-reorder: {problem}: {_describe((guards or others)[0])} in the body "
                    f"of loop '{current.name_str}' stands between it and loop '{missing[0]}'"
                )
            raise PassFailedException(
                f"loop-reorder: {problem}: the body of loop '{current.name_str}' holds "
                f"{len(ops)} loops ({', '.join(_describe(op) for op in ops)})"
            )
        inner = ops[0]
        assert isinstance(inner, loop.ForOp)
        if inner.name_str in found and inner.name_str in wanted:
            raise PassFailedException(f"loop-reorder: loop '{inner.name_str}' is nested in itself")
        chain.append(inner)
        found.add(inner.name_str)
    return chain


def _global_exprs(op: loop.LoadOp | loop.StoreOp, numbering: dict[SSAValue, int]):
    """The access's index expressions over one dim per distinct SSA value (`numbering`)."""
    dims = [AffineExpr.dimension(numbering.setdefault(v, len(numbering))) for v in op.indices]
    return tuple(r.replace_dims_and_symbols(dims, []) for r in op.map.data.results)


def _may_conflict(a: tuple[AffineExpr, ...], b: tuple[AffineExpr, ...]) -> bool:
    """Whether two different index tuples may name the same element: not when, in some
    dimension, they have the same linear terms and a constant difference that the
    gcd of those terms' coefficients does not divide (e.g. `2*i` and `2*i + 1`)."""
    for ea, eb in zip(a, b):
        la, lb = Linear.of(ea), Linear.of(eb)
        ta = la.terms
        if ta != lb.terms:
            return True  # different shapes: assume they may meet
        diff = lb.const - la.const
        g = math.gcd(*ta.values()) if ta else 0
        if diff and (g == 0 or diff % g):
            return False
    return True


def check_reorderable(chain: list[loop.ForOp]) -> None:
    """Reject reordering `chain` when iterations of the nest may depend on each other
    other than through the update of a reduction: see the module docstring."""
    varying = {f.induction_var for f in chain if f.extent > 1}
    numbering: dict[SSAValue, int] = {}
    accesses: dict[SSAValue, dict[tuple, set[str]]] = {}
    for op in chain[-1].walk():
        if isinstance(op, loop.LoadOp | loop.StoreOp):
            key = _global_exprs(op, numbering)
            kinds = accesses.setdefault(op.memref, {}).setdefault(key, set())
            kinds.add("store" if isinstance(op, loop.StoreOp) else "load")
    varying_dims = {numbering[v] for v in varying if v in numbering}
    top = chain[0].name_str
    for buffer, keys in accesses.items():
        if not any("store" in kinds for kinds in keys.values()):
            continue
        name = f"%{buffer.name_hint}" if buffer.name_hint else "a buffer"
        for key, kinds in keys.items():
            used = {d for e in key for d in e.used_dims()}
            if kinds == {"store"} and not varying_dims <= used:
                raise PassFailedException(
                    f"loop-reorder: several iterations of the nest of loop '{top}' store to "
                    f"the same element of {name} (the last one wins); reordering could "
                    "change the result"
                )
        for (ka, kinds_a), (kb, kinds_b) in itertools.combinations(keys.items(), 2):
            if "store" in kinds_a | kinds_b and _may_conflict(ka, kb):
                raise PassFailedException(
                    f"loop-reorder: {name} is written and accessed at different indices "
                    f"inside the nest of loop '{top}', so its iterations may depend on "
                    "each other; reordering could change the result"
                )


def reorder_nest(chain: list[loop.ForOp], order: tuple[str, ...]) -> loop.ForOp:
    """Permute the named loops of the perfect nest `chain` (outermost first) into
    `order`; returns the new outermost loop."""
    positions = [i for i, f in enumerate(chain) if f.name_str in order]
    by_name = {f.name_str: f for f in chain}
    headers = list(chain)
    for position, name in zip(positions, order):
        headers[position] = by_name[name]
    new_loops = []
    for header in headers:
        new = loop.ForOp(header.lb, header.ub, header.step, header.kind, name=header.loop_name)
        new.attributes |= header.attributes
        new.induction_var.name_hint = header.induction_var.name_hint
        new_loops.append(new)
    for outer, inner in zip(new_loops, new_loops[1:]):
        outer.add_ops([inner])
    ops = body_ops(chain[-1])
    for op in ops:
        op.detach()
    new_loops[-1].add_ops(ops)
    for header, new in zip(headers, new_loops):
        header.induction_var.replace_all_uses_with(new.induction_var)
    top = chain[0]
    parent = top.parent_block()
    assert parent is not None
    parent.insert_op_before(new_loops[0], top)
    top.detach()
    top.erase()
    return new_loops[0]


def _normalize_order(order: tuple[str, ...]) -> tuple[str, ...]:
    names = tuple(n.strip() for item in order for n in item.split(",") if n.strip())
    if len(names) < 1:
        raise PassFailedException("loop-reorder: `order` names no loop")
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise PassFailedException(f"loop-reorder: loop '{duplicates[0]}' appears twice in `order`")
    return names


@dataclass(frozen=True)
class LoopReorderPass(ModulePass):
    """Permute the loops named in `order` (all in one perfect nest) into that order."""

    name = "loop-reorder"

    order: tuple[str, ...]
    """The loop names in their new order, outermost first."""
    kernel: str | None = None
    """Only reorder in this kernel (default: every kernel having the loops)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        order = _normalize_order(self.order)
        wanted = set(order)
        any_found = False
        functions = kernels(op, self.kernel, self.name)
        for function in functions:
            named = [f for f in function.walk() if isinstance(f, loop.ForOp)
                     and f.name_str in wanted]
            if not named:
                continue
            present = {f.name_str for f in named}
            if present != wanted:
                missing = sorted(wanted - present)[0]
                raise PassFailedException(
                    f"loop-reorder: kernel '{function.sym_name.data}' has no loop named "
                    f"'{missing}' (it has {', '.join(sorted(present))})"
                )
            any_found = True
            tops = [f for f in named
                    if not any(p.name_str in wanted for p in enclosing_loops(f))]
            chains = [_nest_chain(top, order) for top in tops]
            for chain in chains:
                check_reorderable(chain)
            for chain in chains:
                reorder_nest(chain, order)
            fold_access_maps(function)
        if not any_found:
            where = f"kernel '{self.kernel}'" if self.kernel else "any kernel"
            raise PassFailedException(f"loop-reorder: no loop named '{order[0]}' in {where}")
