"""virtual-threads: latency hiding for decoupled accelerators (the paper's Sec. 4.4).

An accelerator's stages (VTA: load, compute, store) run concurrently and only wait for
each other through dependency tokens. This pass makes a kernel of intrinsic calls
correct and overlapped:

1. **Tokens.** In the body of each `vthread` loop (or, without one, the whole kernel,
   which then runs serialized) every maximal run of same-stage steps is a *scope*. For
   each buffer a scope touches, the most recent conflicting access (write/read,
   read/write, write/write; cyclically, since the body repeats) is found; if it is on
   another stage, a `loop.dep_push src -> dst` follows that scope and a
   `loop.dep_pop src -> dst` precedes this one. Tokens that the first iteration needs
   (loop-carried links) are primed before the outermost loop and drained after it.
2. **Interleaving.** The `vthread` loop of extent T is replaced by T copies of each scope
   (with the thread index substituted), interleaved scope by scope
   (`ld_t0, ld_t1, ex_t0, ex_t1, st_t0, st_t1`), inside the loops that hold them. As
   every copy carries its own tokens, the load of thread 1 overlaps the compute of
   thread 0 (the pattern of seed 003). Threads must use disjoint buffer regions (the
   schedule indexes its scratchpads by the thread index).

Only calls of the given accelerator's intrinsics are synchronized; stages come from
the intrinsics' declarations.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import cast

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation, SSAValue
from xdsl.ir.affine import AffineExpr, AffineMap
from xdsl.passes import ModulePass

from xweave.accel.api import Accelerator, AcceleratorError, get_accelerator
from xweave.dialects import loop

__all__ = ["VirtualThreadsPass", "insert_virtual_threads"]


class VirtualThreadError(AcceleratorError):
    """The kernel cannot be synchronized or interleaved as written."""


@dataclass
class _Scope:
    units: list[Operation]
    stage: str
    path: tuple[loop.ForOp, ...]
    reads: set[SSAValue] = field(default_factory=set)
    writes: set[SSAValue] = field(default_factory=set)
    pos: int = 0

    @property
    def execs(self) -> int:
        n = 1
        for lp in self.path:
            n *= lp.extent
        return n


class _Analysis:
    def __init__(self, acc: Accelerator):
        self.acc = acc
        self._stage_cache: dict[int, str | None] = {}

    def stages(self, op: Operation) -> set[str]:
        out: set[str] = set()
        for o in op.walk():
            if isinstance(o, loop.IntrinsicOp):
                out.add(self.acc.intrinsic(o.callee_name).stage)
            elif isinstance(o, loop.DepPushOp | loop.DepPopOp):
                raise VirtualThreadError(
                    f"virtual-threads: the kernel already has dependency tokens ({o.name}); "
                    "run the pass once, on a kernel without them"
                )
        return out

    def effects(self, op: Operation) -> tuple[set[SSAValue], set[SSAValue]]:
        reads: set[SSAValue] = set()
        writes: set[SSAValue] = set()
        for o in op.walk():
            if isinstance(o, loop.IntrinsicOp):
                intr = self.acc.intrinsic(o.callee_name)
                bufs = list(o.buffers)
                writes.add(bufs[0])
                reads.update(bufs[1:])
                if intr.accumulate:
                    reads.add(bufs[0])
            elif isinstance(o, loop.LoadOp):
                reads.add(o.memref)
            elif isinstance(o, loop.StoreOp):
                writes.add(o.memref)
        return reads, writes

    def scopes(self, block: Block, path: tuple[loop.ForOp, ...] = ()) -> list[_Scope]:
        """The scopes of `block` in program order (recursing into mixed-stage loops)."""
        out: list[_Scope] = []
        current: _Scope | None = None
        for op in block.ops:
            if isinstance(op, loop.YieldOp | loop.AllocOp | func.ReturnOp):
                continue
            st = self.stages(op)
            if not st:
                if isinstance(op, loop.ForOp):
                    continue
                raise VirtualThreadError(f"virtual-threads: unexpected {op.name} between intrinsic calls")
            if len(st) > 1:
                if not isinstance(op, loop.ForOp):
                    raise VirtualThreadError(f"virtual-threads: {op.name} spans stages {sorted(st)}")
                current = None
                out.extend(self.scopes(op.body.block, (*path, op)))
                continue
            (stage,) = st
            if current is None or current.stage != stage:
                current = _Scope([], stage, path)
                out.append(current)
            current.units.append(op)
            r, w = self.effects(op)
            current.reads |= r
            current.writes |= w
        for i, s in enumerate(out):
            s.pos = i
        return out


def _links(scopes: list[_Scope]) -> list[tuple[_Scope, _Scope, bool]]:
    """(producer, consumer, cyclic) for every token the scopes need."""
    links: dict[tuple[int, int], bool] = {}
    n = len(scopes)
    def conflict(a: _Scope, b: _Scope, buf: SSAValue) -> bool:
        return (buf in a.writes) or (buf in a.reads and buf in b.writes)

    for b in scopes:
        for buf in b.reads | b.writes:
            first = None
            for k in range(1, n + 1):
                a = scopes[(b.pos - k) % n]
                if conflict(a, b, buf):
                    first = a
                    break
            if first is None:
                continue
            # In later iterations of a loop around b, a conflicting step after b in that
            # loop is more recent than `first` if `first` lies outside the loop.
            for lp in b.path:
                if any(x is lp for x in first.path):
                    continue
                later = [a for a in scopes[b.pos + 1:] if any(x is lp for x in a.path) and conflict(a, b, buf)]
                if later and not (first.stage == b.stage == later[-1].stage):
                    raise VirtualThreadError(
                        f"virtual-threads: a {b.stage} step in loop {lp.name_str or '?'!r} waits for a "
                        f"{first.stage} step before the loop in its first iteration but for a "
                        f"{later[-1].stage} step of the previous iteration later; split the loop"
                    )
            if first.stage != b.stage:
                links[(first.pos, b.pos)] = first.pos >= b.pos
    out = []
    for (ia, ib), cyclic in sorted(links.items()):
        a, b = scopes[ia], scopes[ib]
        if a.execs != b.execs and not cyclic:
            # Producer and consumer repeat differently: sync at the loop that separates
            # them (push after the producer's loop, or pop before the consumer's loop).
            common = 0
            while common < min(len(a.path), len(b.path)) and a.path[common] is b.path[common]:
                common += 1
            a2, b2 = a, b
            if len(a.path) > common:
                a2 = _Scope([a.path[common]], a.stage, a.path[:common], pos=a.pos)
            if len(b.path) > common:
                b2 = _Scope([b.path[common]], b.stage, b.path[:common], pos=b.pos)
            a, b = a2, b2
        if a.execs != b.execs:
            raise VirtualThreadError(
                f"virtual-threads: a {a.stage} step that runs {a.execs} times per thread feeds a "
                f"{b.stage} step that runs {b.execs} times; the tokens between them would not "
                "balance (restructure the loops so producer and consumer repeat together)"
            )
        out.append((a, b, cyclic))
    return out


def _subst_map(m: AffineMap, indices: list[SSAValue], v: SSAValue, t: int) -> tuple[AffineMap, list[SSAValue]]:
    if v not in indices:
        return m, indices
    keep = [x for x in indices if x is not v]
    repl = [AffineExpr.constant(t) if x is v else AffineExpr.dimension(keep.index(x)) for x in indices]
    return AffineMap(len(keep), 0, tuple(e.replace_dims_and_symbols(repl, ()) for e in m.results)), keep


def _substitute(op: Operation, v: SSAValue, t: int) -> Operation:
    """Replace thread index `v` by constant `t` in every access inside `op`; returns `op`
    or, if `op` itself was an access, its replacement."""
    if isinstance(op, loop.IntrinsicOp | loop.LoadOp | loop.StoreOp):
        holder = Block([op])
        _substitute_nested(op, v, t)
        new = holder.first_op
        assert new is not None
        new.detach()
        return new
    _substitute_nested(op, v, t)
    return op


def _substitute_nested(op: Operation, v: SSAValue, t: int) -> None:
    for o in list(op.walk()):
        if isinstance(o, loop.IntrinsicOp) and v in o.indices:
            idx = list(o.indices)
            maps, keep = [], idx
            for m in o.operand_maps:
                nm, keep = _subst_map(m, idx, v, t)
                maps.append(nm)
            new = loop.IntrinsicOp(o.callee_name, list(o.buffers), keep, maps, o.params)
            new.attributes |= o.attributes
            o.parent_block().insert_op_before(new, o)  # type: ignore[union-attr]
            o.detach()
            o.erase()
        elif isinstance(o, loop.LoadOp | loop.StoreOp) and v in o.indices:
            nm, keep = _subst_map(o.map.data, list(o.indices), v, t)
            if isinstance(o, loop.LoadOp):
                new = loop.LoadOp(o.memref, keep, nm, o.result.type)
                o.result.replace_all_uses_with(new.result)
            else:
                new = loop.StoreOp(o.value, o.memref, keep, nm)
            o.parent_block().insert_op_before(new, o)  # type: ignore[union-attr]
            o.detach()
            o.erase()


def _replicate(block: Block, scopes: list[_Scope], pre: dict[int, list[Operation]],
               post: dict[int, list[Operation]], v: SSAValue | None, threads: int) -> list[Operation]:
    """New ops for `block`: each scope (with its tokens) once per thread, interleaved."""
    by_first = {id(s.units[0]): s for s in scopes}
    out: list[Operation] = []
    ops = [o for o in block.ops if not isinstance(o, loop.YieldOp | loop.AllocOp | func.ReturnOp)]
    i = 0
    while i < len(ops):
        op = ops[i]
        s = by_first.get(id(op))
        if s is not None:
            group = [*pre.get(id(s.units[0]), []), *s.units, *post.get(id(s.units[-1]), [])]
            for t in range(threads):
                for g in group:
                    c = g.clone()
                    if v is not None:
                        c = _substitute(c, v, t)
                    out.append(c)
            i += len(s.units)
            continue
        if isinstance(op, loop.ForOp) and any(isinstance(o, loop.IntrinsicOp) for o in op.walk()):
            new = loop.ForOp(op.lb, op.ub, op.step, op.kind, None, op.loop_name)
            new.attributes |= op.attributes
            inner = _replicate(op.body.block, scopes, pre, post, v, threads)
            op.induction_var.replace_all_uses_with(new.induction_var)
            new.add_ops(inner)
            # Tokens hoisted to this loop (producer/consumer repeating differently).
            out.extend(d.clone() for d in pre.get(id(op), []) for _ in range(threads))
            out.append(new)
            out.extend(d.clone() for d in post.get(id(op), []) for _ in range(threads))
        elif not isinstance(op, loop.ForOp):
            c = op.clone()
            if v is not None:
                c = _substitute(c, v, 0)
            out.append(c)
        i += 1
    return out


def insert_virtual_threads(f: func.FuncOp, acc: Accelerator) -> int:
    """Apply the pass to one kernel; returns how many vthread loops were lowered."""
    an = _Analysis(acc)
    vloops = [o for o in f.walk() if isinstance(o, loop.ForOp) and o.kind.data == loop.ForKind.VTHREAD]
    top = f.body.block
    if not vloops:  # serialized: the whole kernel is one thread
        regions: list[tuple[Block, loop.ForOp | None]] = [(top, None)]
    else:
        for lp in vloops:
            if any(isinstance(o, loop.ForOp) and o.kind.data == loop.ForKind.VTHREAD and o is not lp for o in lp.walk()):
                raise VirtualThreadError("virtual-threads: nested vthread loops are not supported")
        regions = [(lp.body.block, lp) for lp in vloops]
    for block, lp in regions:
        scopes = an.scopes(block)
        if not scopes:
            continue
        links = _links(scopes)
        pre: dict[int, list[Operation]] = {}
        post: dict[int, list[Operation]] = {}
        for a, b, _ in links:
            post.setdefault(id(a.units[-1]), []).append(loop.DepPushOp(a.stage, b.stage))
            pre.setdefault(id(b.units[0]), []).append(loop.DepPopOp(a.stage, b.stage))
        threads = lp.extent if lp is not None else 1
        v = lp.induction_var if lp is not None else None
        new_ops = _replicate(block, scopes, pre, post, v, threads)
        cyclic = [(a, b) for a, b, c in links if c]
        if lp is None:
            body_ops = [o for o in top.ops if not isinstance(o, func.ReturnOp | loop.AllocOp)]
            allocs = [o for o in top.ops if isinstance(o, loop.AllocOp)]
            ret = top.last_op
            for o in body_ops:
                o.detach()
                o.erase(safe_erase=False)
            anchor = ret
            first_ops = [loop.DepPushOp(a.stage, b.stage) for a, b in cyclic]
            last_ops = [loop.DepPopOp(a.stage, b.stage) for a, b in cyclic]
            top.insert_ops_before([*first_ops, *new_ops, *last_ops], anchor)  # type: ignore[arg-type]
            _ = allocs
            continue
        # Replace the vthread loop by the interleaved copies.
        parent = lp.parent_block()
        assert parent is not None
        parent.insert_ops_before(new_ops, lp)
        lp.detach()
        lp.erase(safe_erase=False)
        # Prime/drain loop-carried tokens around the outermost enclosing loop.
        outer: Operation = new_ops[0] if new_ops else parent.last_op  # type: ignore[assignment]
        while outer.parent_block() is not top:
            outer = cast(Operation, outer.parent_op())
        top.insert_ops_before([loop.DepPushOp(a.stage, b.stage) for a, b in cyclic for _ in range(threads)], outer)
        top.insert_ops_after([loop.DepPopOp(a.stage, b.stage) for a, b in cyclic for _ in range(threads)], outer)
    return len(vloops)


@dataclass(frozen=True)
class VirtualThreadsPass(ModulePass):
    """Insert dependency tokens between accelerator stages and interleave `vthread`
    loops into overlapping instruction streams (see the module docstring)."""

    name = "virtual-threads"

    accelerator: str = "vta"
    """Whose intrinsics (and stages) to synchronize."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        acc = get_accelerator(self.accelerator)
        prefix = acc.name + "."
        for f in list(op.walk()):
            if isinstance(f, func.FuncOp) and any(
                isinstance(o, loop.IntrinsicOp) and o.callee_name.startswith(prefix) for o in f.walk()
            ):
                insert_virtual_threads(f, acc)
