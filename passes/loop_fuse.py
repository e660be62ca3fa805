"""loop-fuse: fuse two directly nested loops into one (TVM's `fuse`).

`loop-fuse{outer="conv2d.n" inner="conv2d.o"}` needs `conv2d.o` to be the only op in
the body of `conv2d.n`; both become one loop `conv2d.n.o.fused` of extent
`ext(n) * ext(o)` whose variable `f` gives `n = f floordiv ext(o)` and
`o = f mod ext(o)` (folded into the access maps). The name is `<outer>.<inner
axis>.fused`, where the inner axis is the inner loop's name without the stage prefix
it shares with the outer one (`conv2d.`); `fused-name=` overrides it. The iteration order
does not change, so fusing is always legal. Loops with a lower bound or step are
normalized. The fused loop keeps the kind of the two loops if they have the same kind,
else it is serial.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.ir.affine import AffineExpr
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import PassFailedException

from xweave.dialects import loop
from xweave.passes.loop_utils import (
    body_ops,
    enclosing_function,
    find_loops,
    fold_access_maps,
    replace_induction_var,
)


def default_fused_name(outer: str, inner: str) -> str:
    """`conv2d.n` + `conv2d.o` -> `conv2d.n.o.fused`; other stages keep full names."""
    stage = outer.split(".", 1)[0] + "."
    axis = inner[len(stage):] if inner.startswith(stage) and "." in outer else inner
    return f"{outer}.{axis}.fused"


def fuse_loops(outer: loop.ForOp, inner: loop.ForOp, name: str | None = None) -> loop.ForOp:
    """Fuse `inner` (the only op of `outer`'s body) into `outer`; returns the new loop.
    Access maps are left to the caller to fold (`fold_access_maps`)."""
    outer_extent, inner_extent = outer.extent, inner.extent
    kind = outer.kind if outer.kind == inner.kind else loop.ForKind.SERIAL
    if name is None:
        name = default_fused_name(outer.name_str or "loop", inner.name_str or "loop")
    fused = loop.ForOp(0, outer_extent * inner_extent, kind=kind, name=name)
    outer_hint = outer.induction_var.name_hint or "i"
    inner_hint = inner.induction_var.name_hint or "j"
    fused.induction_var.name_hint = f"{outer_hint}_{inner_hint}_fused"
    ops = body_ops(inner)
    for op in ops:
        op.detach()
    fused.add_ops(ops)
    block = fused.body.block
    f = AffineExpr.dimension(0)
    if inner_extent == 1:
        outer_index, inner_index = f, AffineExpr.constant(0)
    elif outer_extent == 1:
        outer_index, inner_index = AffineExpr.constant(0), f
    elif outer_extent * inner_extent == 0:
        outer_index = inner_index = AffineExpr.constant(0)  # never executed
    else:
        outer_index, inner_index = f // inner_extent, f % inner_extent
    for old, index in ((outer, outer_index), (inner, inner_index)):
        lb, step = old.lb.value.data, old.step.value.data
        replace_induction_var(old.induction_var, index * step + lb, [fused.induction_var], block)
    parent = outer.parent_block()
    assert parent is not None
    parent.insert_op_before(fused, outer)
    outer.detach()
    outer.erase()
    return fused


def _describe(op: Operation) -> str:
    if isinstance(op, loop.ForOp):
        return f"loop '{op.name_str}'" if op.name_str else "an unnamed loop.for"
    return "a guard (scf.if)" if op.name == "scf.if" else f"'{op.name}'"


def _check_directly_nested(outer: loop.ForOp, inner_name: str) -> loop.ForOp:
    """The loop `inner_name` if it is the only op of `outer`'s body, else an error."""
    ops = body_ops(outer)
    if len(ops) == 1 and isinstance(ops[0], loop.ForOp) and ops[0].name_str == inner_name:
        return ops[0]
    inside = any(isinstance(op, loop.ForOp) and op.name_str == inner_name
                 for op in outer.walk() if op is not outer)
    if not inside:
        raise PassFailedException(
            f"loop-fuse: no loop named '{inner_name}' inside loop '{outer.name_str}'"
        )
    others = [op for op in ops if not (isinstance(op, loop.ForOp) and op.name_str == inner_name)]
    guards = [op for op in others if op.name == "scf.if"]
    problem = f"loop-fuse: loop '{inner_name}' must be the only op in the body of loop " \
              f"'{outer.name_str}'"
    if not others:
        raise PassFailedException(f"{problem}, but the body holds {len(ops)} copies of it")
    raise PassFailedException(f"{problem}, but {_describe((guards or others)[0])} is there too")


@dataclass(frozen=True)
class LoopFusePass(ModulePass):
    """Fuse loop `inner`, the only op in the body of loop `outer`, with it into one
    loop `<outer>.<inner axis>.fused`."""

    name = "loop-fuse"

    outer: str
    """The name of the outer loop."""
    inner: str
    """The name of the inner loop, directly nested in the outer one."""
    fused_name: str | None = None
    """The name of the fused loop (default: `<outer>.<inner axis>.fused`)."""
    kernel: str | None = None
    """Only fuse in this kernel (default: every kernel having the loops)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        found = find_loops(op, self.outer, self.kernel, self.name)
        pairs = [(outer, _check_directly_nested(outer, self.inner)) for outer in found]
        functions: list[Operation] = []
        for outer, inner in pairs:
            function = enclosing_function(outer)
            fuse_loops(outer, inner, self.fused_name)
            if function not in functions:
                functions.append(function)
        for function in functions:
            fold_access_maps(function)
