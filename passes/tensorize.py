"""tensorize: replace a loop nest by a call of a declared tensor intrinsic.

`tensorize{intrinsic="vta.gemm" loop="gemm.b"}` finds every loop named `loop`, takes the
perfect nest it starts, and checks that the nest computes exactly the intrinsic's `te`
declaration (`xweave.accel.api.TensorIntrinsic`):

* one loop per declared axis, with the declared extents (lb 0, step 1); spatial axes
  index the output, reduce axes do not;
* the body stores `out + f(...)` (a `sum` reduction, for accumulating intrinsics) or
  `f(...)` to the output, where `f` matches the declared expression operator by operator
  (`+ * - max min`, casts, reads; `+`/`*` commute) and every read's innermost indices
  are exactly the declared axes (the outer indices must not depend on the nest);
* buffer element types match the declared dtypes, and each buffer lives in the memory
  scope the intrinsic requires (e.g. `#loop.scope<vta.inp>`).

The nest becomes one `loop.intrinsic` whose operands (output first, then inputs as
declared) start where the nest's first iteration accesses them. A mismatch is an
error naming the loop and what differs; loops with other names are left alone.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import cast

from xdsl.context import Context
from xdsl.dialects import affine, arith, scf
from xdsl.dialects.builtin import IntegerAttr, IntegerType, MemRefType, ModuleOp, UnitAttr
from xdsl.ir import BlockArgument, SSAValue
from xdsl.ir.affine import AffineBinaryOpExpr, AffineBinaryOpKind, AffineConstantExpr, AffineExpr, AffineMap
from xdsl.passes import ModulePass

from xweave import te
from xweave.accel.api import AcceleratorError, TensorIntrinsic, find_intrinsic
from xweave.dialects import loop

__all__ = ["TensorizeError", "TensorizePass", "tensorize_loop"]


class TensorizeError(AcceleratorError):
    """The loop nest does not compute what the intrinsic declares."""


_TE_DTYPE_BITS = {"int8": 8, "int16": 16, "int32": 32, "int64": 64}
_INT_BINARY = {"+": arith.AddiOp, "*": arith.MuliOp, "-": arith.SubiOp, "max": arith.MaxSIOp, "min": arith.MinSIOp}
_FLOAT_BINARY = {"+": arith.AddfOp, "*": arith.MulfOp, "-": arith.SubfOp}


def _dtype_matches(t, dtype: str) -> bool:
    if dtype in _TE_DTYPE_BITS:
        return isinstance(t, IntegerType) and t.width.data == _TE_DTYPE_BITS[dtype]
    return str(t) == {"float32": "f32", "float64": "f64", "float16": "f16"}.get(dtype, dtype)


class _Matcher:
    def __init__(self, intr: TensorIntrinsic, nest: list[loop.ForOp], where: str):
        self.intr = intr
        self.nest = nest
        self.nest_vars = {lp.induction_var: lp for lp in nest}
        self.axis_of: dict[SSAValue, te.Var] = {}
        self.buffers: dict[str, loop.LoadOp | loop.StoreOp] = {}
        self.where = where

    def fail(self, why: str):
        raise TensorizeError(f"tensorize {self.intr.name} at loop {self.where!r}: {why}")

    # --- accesses -------------------------------------------------------------------------
    def access(self, acc: loop.LoadOp | loop.StoreOp, tensor: te.Tensor, indices) -> None:
        mt = cast(MemRefType, acc.memref.type)
        m = acc.map.data
        rank, nd = mt.get_num_dims(), tensor.ndim
        if rank < nd:
            self.fail(f"buffer {mt} has fewer dims than {tensor.name!r} ({nd})")
        if not _dtype_matches(mt.get_element_type(), tensor.dtype):
            self.fail(f"{tensor.name!r} is {tensor.dtype}, but the buffer holds {mt.get_element_type()}")
        scope = self.intr.scopes[tensor.name]  # type: ignore[index]
        have = loop.scope_of(mt).data
        if have != scope:
            self.fail(f"{tensor.name!r} must be in scope {scope}, but its buffer is in {have}")
        ops = list(acc.indices)
        nest_dims = {i for i, v in enumerate(ops) if v in self.nest_vars}
        for d, expr in enumerate(m.results):
            used = expr.used_dims() & nest_dims
            if d < rank - nd:
                if used:
                    self.fail(f"dim {d} of {tensor.name!r} depends on the nest's loops")
                continue
            var = indices[d - (rank - nd)]
            if not isinstance(var, te.Var):
                self.fail(f"declared index of {tensor.name!r} is not a plain axis")
            if not (isinstance(expr, type(AffineExpr.dimension(0))) and expr.position in nest_dims):
                self.fail(
                    f"dim {d} of {tensor.name!r} must be exactly a loop of the nest (axis {var.name!r}), got {expr}"
                )
            value = ops[expr.position]
            bound = self.axis_of.get(value)
            if bound is None:
                if any(x is var for x in self.axis_of.values()):
                    self.fail(f"axis {var.name!r} is indexed by two different loops")
                self.axis_of[value] = var
            elif bound is not var:
                self.fail(f"loop {self.nest_vars[value].name_str!r} indexes both {bound.name!r} and {var.name!r}")
        prev = self.buffers.get(tensor.name)  # type: ignore[arg-type]
        if prev is not None and (prev.memref is not acc.memref or prev.map != acc.map or list(prev.indices) != ops):
            self.fail(f"{tensor.name!r} is accessed in two different ways")
        self.buffers[tensor.name] = acc  # type: ignore[index]

    # --- expressions --------------------------------------------------------------------------
    def expr(self, value: SSAValue, e: te.Expr) -> None:
        op = value.owner
        if isinstance(e, te.Read):
            if not isinstance(op, loop.LoadOp):
                self.fail(f"expected a read of {e.tensor.name!r}, found {getattr(op, 'name', value)}")
            if not any(e.tensor is t for t in self.intr.inputs):
                self.fail(f"reads {e.tensor.name!r}, which is not an input")
            self.access(op, e.tensor, e.indices)
        elif isinstance(e, te.Cast):
            if not isinstance(op, arith.ExtSIOp | arith.ExtUIOp | arith.SIToFPOp | arith.TruncIOp):
                self.fail(f"expected a cast to {e.dtype}, found {getattr(op, 'name', value)}")
            if not _dtype_matches(op.results[0].type, e.dtype):
                self.fail(f"cast produces {op.results[0].type}, declared {e.dtype}")
            self.expr(op.operands[0], e.value)
        elif isinstance(e, te.Binary):
            table = _INT_BINARY if e.dtype.startswith("int") else _FLOAT_BINARY
            want = table.get(e.op)
            if want is None or not isinstance(op, want):
                self.fail(f"expected {e.op!r}, found {getattr(op, 'name', value)}")
            a, b = op.operands
            if e.op in ("+", "*", "max", "min"):
                saved = (dict(self.axis_of), dict(self.buffers))
                try:
                    self.expr(a, e.lhs)
                    self.expr(b, e.rhs)
                    return
                except TensorizeError as first:
                    self.axis_of, self.buffers = dict(saved[0]), dict(saved[1])
                    try:  # the operator commutes: try the operands swapped
                        self.expr(b, e.lhs)
                        self.expr(a, e.rhs)
                        return
                    except TensorizeError:
                        raise first from None
            self.expr(a, e.lhs)
            self.expr(b, e.rhs)
        elif isinstance(e, te.Const):
            if not isinstance(op, arith.ConstantOp) or getattr(op.value, "value", None) is None:
                self.fail(f"expected the constant {e.value}")
            if op.value.value.data != e.value:  # type: ignore[union-attr]
                self.fail(f"expected the constant {e.value}, found {op.value.value.data}")  # type: ignore[union-attr]
        else:
            self.fail(f"cannot match a {type(e).__name__} expression")

    def run(self) -> None:
        intr = self.intr
        body = [o for o in self.nest[-1].body.block.ops if not isinstance(o, loop.YieldOp)]
        stores = [o for o in body if isinstance(o, loop.StoreOp)]
        if len(stores) != 1 or body[-1] is not stores[0]:
            self.fail("the innermost body must end in its only loop.store")
        store = stores[0]
        out = intr.output
        stage = out.stage
        assert stage is not None
        value = store.value
        if intr.accumulate or stage.reducer is not None:
            add = value.owner
            want = arith.AddiOp if out.dtype.startswith("int") else arith.AddfOp
            if not isinstance(add, want):
                self.fail("expected an accumulation `out = out + ...`")
            old, new = add.operands
            if not (isinstance(old.owner, loop.LoadOp) and old.owner.memref is store.memref):
                old, new = new, old
            if not (isinstance(old.owner, loop.LoadOp) and old.owner.memref is store.memref
                    and old.owner.map == store.map and list(old.owner.indices) == list(store.indices)):
                self.fail("the accumulation must read the element it writes")
            if stage.reducer not in (None, "sum"):
                self.fail(f"the declared reduction is {stage.reducer}, the nest sums")
            value = new
        self.access(store, out, stage.axes)
        self.expr(value, stage.body)
        used = {o for o in body if o is not store}
        for o in used:
            if not isinstance(o, loop.LoadOp | arith.ExtSIOp | arith.ExtUIOp | arith.SIToFPOp | arith.TruncIOp
                              | arith.AddiOp | arith.MuliOp | arith.SubiOp | arith.AddfOp | arith.MulfOp
                              | arith.SubfOp | arith.MaxSIOp | arith.MinSIOp | arith.ConstantOp):
                self.fail(f"unexpected {o.name} in the nest")
        self.check_loops(store)

    def check_loops(self, store: loop.StoreOp) -> None:
        """Every loop of the nest is one declared axis, with the declared extent."""
        out = self.intr.output
        stage = out.stage
        assert stage is not None
        declared = list(stage.axes) + list(stage.reduce_axes)
        if len(self.nest) != len(declared):
            self.fail(f"the nest has {len(self.nest)} loops, the declaration {len(declared)} axes")
        extents = {id(v): d for v, d in zip(stage.axes, out.shape)}
        extents.update({id(r): r.extent for r in stage.reduce_axes})
        for lp in self.nest:
            var = self.axis_of.get(lp.induction_var)
            if var is None:
                self.fail(f"loop {lp.name_str!r} does not index any operand as a declared axis")
            if lp.lb.value.data != 0 or lp.step.value.data != 1 or lp.extent != extents[id(var)]:
                self.fail(
                    f"loop {lp.name_str!r} runs {lp.lb.value.data} to {lp.ub.value.data} step "
                    f"{lp.step.value.data}, axis {var.name!r} needs 0 to {extents[id(var)]}"
                )
            if any(var is a for a in stage.axes) and not any(var is a for a in store_axes(self, store)):
                self.fail(f"spatial axis {var.name!r} does not index the output")


def store_axes(m: _Matcher, store: loop.StoreOp) -> list:
    return [m.axis_of[v] for v in store.indices if v in m.axis_of]


def _nest_of(top: loop.ForOp) -> list[loop.ForOp]:
    nest = [top]
    while True:
        body = [o for o in nest[-1].body.block.ops if not isinstance(o, loop.YieldOp)]
        if len(body) == 1 and isinstance(body[0], loop.ForOp):
            nest.append(body[0])
        else:
            return nest


def tensorize_loop(top: loop.ForOp, intr: TensorIntrinsic) -> loop.IntrinsicOp:
    """Check the nest `top` starts against `intr` and replace it by a call."""
    nest = _nest_of(top)
    # The declaration may have fewer axes than the nest has loops below `top`; take as
    # many loops as it declares.
    stage = intr.output.stage
    assert stage is not None
    n = len(stage.axes) + len(stage.reduce_axes)
    if intr.window:
        return _replace(top, intr, _match_copy(top, nest, intr, n))
    if len(nest) < n:
        raise TensorizeError(
            f"tensorize {intr.name} at loop {top.name_str!r}: a perfect nest of {n} loops is needed, found {len(nest)}"
        )
    nest = nest[:n]
    m = _Matcher(intr, nest, top.name_str or "?")
    m.run()
    return _replace(top, intr, (set(m.nest_vars), [m.buffers[name] for name in intr.operand_names], None))


# --------------------------------------------------------------------------------------
# Copy (DMA) intrinsics: a strided rows x columns window of element tiles
# --------------------------------------------------------------------------------------

_COPY_BODY_OPS = (loop.LoadOp, arith.ExtSIOp, arith.TruncIOp, arith.ConstantOp, arith.AddiOp, arith.SubiOp,
                  arith.MuliOp, arith.CmpiOp, arith.AndIOp, affine.ApplyOp, scf.IfOp)
_MAX_ENUMERATED = 1 << 16


def _loop_of(value: SSAValue) -> loop.ForOp | None:
    """The `loop.for` whose induction variable `value` is, if any."""
    if isinstance(value, BlockArgument):
        parent = value.block.parent_op()
        if isinstance(parent, loop.ForOp) and parent.induction_var is value:
            return parent
    return None


def _terms(e: AffineExpr) -> list[AffineExpr]:
    if isinstance(e, AffineBinaryOpExpr) and e.kind == AffineBinaryOpKind.Add:
        return _terms(e.lhs) + _terms(e.rhs)
    return [e]


class _Index:
    """Index expressions of a copy nest as (AffineExpr, values) over loop variables."""

    def __init__(self, fail):
        self.fail = fail

    def of(self, value: SSAValue) -> tuple[AffineExpr, list[SSAValue]]:
        """`value` (an index computed from loop variables by affine arithmetic)."""
        if _loop_of(value) is not None:
            return AffineExpr.dimension(0), [value]
        op = value.owner
        if isinstance(op, arith.ConstantOp) and isinstance(op.value, IntegerAttr):
            return AffineExpr.constant(op.value.value.data), []
        if isinstance(op, affine.ApplyOp):
            m = op.map.data
            return self._combine(m.results[0], list(op.mapOperands))
        if isinstance(op, arith.AddiOp | arith.SubiOp | arith.MuliOp):
            (a, av), (b, bv) = self.of(op.lhs), self.of(op.rhs)
            vals = av + [v for v in bv if v not in av]
            b = b.replace_dims_and_symbols([AffineExpr.dimension(vals.index(v)) for v in bv], ())
            if isinstance(op, arith.AddiOp):
                return a + b, vals
            if isinstance(op, arith.SubiOp):
                return a - b, vals
            if isinstance(a, AffineConstantExpr) or isinstance(b, AffineConstantExpr):
                return a * b, vals
        self.fail(f"the pad condition is not affine in the loop variables ({getattr(op, 'name', value)})")
        raise AssertionError

    def _combine(self, e: AffineExpr, operands: list[SSAValue]) -> tuple[AffineExpr, list[SSAValue]]:
        vals: list[SSAValue] = []
        repl = []
        for v in operands:
            sub, sv = self.of(v)
            for x in sv:
                if x not in vals:
                    vals.append(x)
            repl.append(sub.replace_dims_and_symbols([AffineExpr.dimension(vals.index(x)) for x in sv], ()))
        return e.replace_dims_and_symbols(repl, ()), vals


def _holds_everywhere(pred, values: list[SSAValue], fail) -> bool:
    """`pred(point)` at every point of the loop ranges of `values` (an exact check:
    all loop bounds are constants)."""
    ranges = []
    total = 1
    for v in values:
        lp = _loop_of(v)
        if lp is None:
            fail("an index is not a loop variable")
        assert lp is not None
        ranges.append(lp.range)
        total *= max(len(lp.range), 1)
    if total > _MAX_ENUMERATED:
        fail(f"the pad condition spans {total} loop points, too many to verify")
    return all(pred(point) for point in itertools.product(*ranges))


def _match_copy(top: loop.ForOp, nest: list[loop.ForOp], intr: TensorIntrinsic, n: int):
    """Check that `nest` is a copy of a window of element tiles: up to `intr.window`
    window loops (rows, columns) around the declared element axes, the body storing
    the (cast) source element, or `in-bounds ? src : 0` when the intrinsic pads.
    Returns (nest variables, accesses, call params)."""
    where = top.name_str or "?"

    def fail(why: str):
        raise TensorizeError(f"tensorize {intr.name} at loop {where!r}: {why}")

    if not n <= len(nest) <= n + intr.window:
        fail(f"a copy nest is up to {intr.window} window loops (rows, columns) around {n} element "
             f"loops, found a perfect nest of {len(nest)}")
    window, elems = nest[: len(nest) - n], nest[len(nest) - n:]
    for lp in window:
        if lp.lb.value.data != 0 or lp.step.value.data != 1 or lp.extent < 1:
            fail(f"window loop {lp.name_str!r} must run from 0 with step 1")
    body = [o for o in elems[-1].body.block.ops if not isinstance(o, loop.YieldOp)]
    if not body or not isinstance(body[-1], loop.StoreOp) or any(isinstance(o, loop.StoreOp) for o in body[:-1]):
        fail("the innermost body must end in its only loop.store")
    for o in body:
        if not isinstance(o, (*_COPY_BODY_OPS, loop.StoreOp)):
            fail(f"unexpected {o.name} in a copy nest")
    store = cast(loop.StoreOp, body[-1])
    value, guard = store.value, None
    if isinstance(value.owner, scf.IfOp):
        guard = value.owner
        if not intr.pads:
            fail(f"the body is conditional, but {intr.name} does not pad")
        then_ops = list(guard.true_region.block.ops)
        else_ops = list(guard.false_region.block.ops) if guard.false_region.blocks else []
        zero = else_ops[-1].operands[0].owner if else_ops and else_ops[-1].operands else None
        if not (isinstance(zero, arith.ConstantOp) and getattr(zero.value, "value", None) is not None
                and zero.value.value.data == 0):  # type: ignore[union-attr]
            fail("a padded read must yield 0 outside the source (else branch)")
        if not all(isinstance(o, (*_COPY_BODY_OPS, scf.YieldOp)) for o in then_ops):
            fail("unexpected op in the padded read")
        value = then_ops[-1].operands[0]
    m = _Matcher(intr, elems, where)
    stage = intr.output.stage
    assert stage is not None
    m.access(store, intr.output, stage.axes)
    m.expr(value, stage.body)
    m.check_loops(store)
    (src_name,) = [t.name for t in intr.inputs]
    dst_acc, src_acc = m.buffers[intr.output.name], m.buffers[src_name]  # type: ignore[index]
    glob = src_acc if loop.scope_of(cast(MemRefType, src_acc.memref.type)).data == "global" else dst_acc
    scratch = dst_acc if glob is src_acc else src_acc
    if loop.scope_of(cast(MemRefType, glob.memref.type)).data != "global":
        fail("one side of a copy must be a global (DRAM) buffer")

    # Every index is a loop variable; leading dims are (outer part) + (window part).
    wvars = [lp.induction_var for lp in window]
    nd = len(stage.axes)
    for acc in (glob, scratch):
        for v in acc.indices:
            if _loop_of(v) is None:
                fail(f"index {v.name_hint or v} of {acc.memref.name_hint or 'a buffer'} is not affine in the "
                     "loop variables")
        wdims = {i for i, v in enumerate(acc.indices) if v in wvars}
        for e in acc.map.data.results:
            for t in _terms(e):
                used = t.used_dims()
                if used & wdims and used - wdims:
                    fail(f"the index {e} mixes the window loops with the loops around them")
    rows = window[-2].extent if len(window) == 2 else 1
    cols = window[-1].extent if window else 1

    def window_offsets(acc: loop.LoadOp | loop.StoreOp, r: int, c: int) -> list[int]:
        point = {v: 0 for v in acc.indices}
        if len(window) == 2:
            point[wvars[0]], point[wvars[1]] = r, c
        elif window:
            point[wvars[0]] = c
        rank = cast(MemRefType, acc.memref.type).get_num_dims()
        return list(acc.map.data.eval([point[v] for v in acc.indices], ()))[: rank - nd]

    gshape = cast(MemRefType, glob.memref.type).get_shape()[:-nd]
    strides = [1] * len(gshape)
    for d in range(len(gshape) - 2, -1, -1):
        strides[d] = strides[d + 1] * gshape[d + 1]
    row_dim = None
    if len(window) == 2:
        gdims = [i for i, v in enumerate(glob.indices) if v is wvars[0]]
        moving = [d for d, e in enumerate(glob.map.data.results[: len(gshape)]) if e.used_dims() & set(gdims)]
        if len(moving) != 1:
            fail(f"the rows of the window must step along one dim of the global buffer, not {len(moving)}")
        row_dim = moving[0]
    row_stride = strides[row_dim] if row_dim is not None else 0
    g0, s0 = window_offsets(glob, 0, 0), window_offsets(scratch, 0, 0)
    if len(s0) != 1:
        fail("the scratchpad buffer must be a 1-D array of element tiles")
    for r in range(rows):
        for c in range(cols):
            g, sp = window_offsets(glob, r, c), window_offsets(scratch, r, c)
            if sp[0] - s0[0] != r * cols + c:
                fail(f"window element ({r}, {c}) is not at scratchpad offset {r * cols + c} (rows x columns, "
                     "densely)")
            if sum(st * (a - b) for st, a, b in zip(strides, g, g0)) != r * row_stride + c:
                fail(f"window element ({r}, {c}) of the global buffer is not on a strided 2-D window "
                     "(columns contiguous, rows one stride apart)")
    params: dict = {"rows": IntegerAttr(rows, 64), "cols": IntegerAttr(cols, 64)}
    if row_dim is not None:
        params["row_dim"] = IntegerAttr(row_dim, 64)
    if guard is not None:
        _check_guard(guard, glob, gshape, row_dim, fail)
        params["pad"] = UnitAttr()
    return set(wvars) | {lp.induction_var for lp in elems}, [m.buffers[name] for name in intr.operand_names], params


def _check_guard(guard: scf.IfOp, glob: loop.LoadOp | loop.StoreOp, gshape, row_dim, fail) -> None:
    """The condition of a padded read must be exactly `0 <= idx_d < size_d` for some of
    the window's row and column dims of the source (what the DMA zero-fills)."""
    conds: list[SSAValue] = [guard.cond]
    comparisons = []
    while conds:
        c = conds.pop()
        op = c.owner
        if isinstance(op, arith.AndIOp):
            conds += [op.lhs, op.rhs]
        elif isinstance(op, arith.CmpiOp):
            comparisons.append(op)
        else:
            fail(f"the pad condition must be a conjunction of comparisons, found {getattr(op, 'name', c)}")
    ix = _Index(fail)
    allowed = {len(gshape) - 1} | ({row_dim} if row_dim is not None else set())
    gmap, gvals = glob.map.data, list(glob.indices)
    for cmp in comparisons:
        pred = {2: "slt", 3: "sle", 4: "sgt", 5: "sge"}.get(cmp.predicate.value.data)
        if pred is None:
            fail("the pad condition compares with an unsigned or equality predicate")
        (a, av), (b, bv) = ix.of(cmp.lhs), ix.of(cmp.rhs)
        vals = list(av) + [v for v in bv if v not in av] + [v for v in gvals if v not in av and v not in bv]
        at = lambda e, vs: e.replace_dims_and_symbols([AffineExpr.dimension(vals.index(v)) for v in vs], ())  # noqa: E731
        a, b = at(a, av), at(b, bv)
        # normalize to  lhs >= 0
        norm = {"sge": a - b, "sgt": a - b - 1, "sle": b - a, "slt": b - a - 1}[pred]
        idx = [at(e, gvals) for e in gmap.results[: len(gshape)]]
        for d in sorted(allowed):
            used = sorted(norm.used_dims() | idx[d].used_dims())
            pair = AffineMap(len(vals), 0, (norm, idx[d]))

            def ev(point, used=used, pair=pair):
                full = [0] * len(vals)
                for i, x in zip(used, point):
                    full[i] = x
                return pair.eval(full, ())

            sub = [vals[i] for i in used]
            if _holds_everywhere(lambda p: (lambda a, b: a == b)(*ev(p)), sub, fail) or _holds_everywhere(
                lambda p, d=d: (lambda a, b: a == gshape[d] - 1 - b)(*ev(p)), sub, fail
            ):
                break
        else:
            fail("the pad condition is not a bound of the source buffer along the window's rows or columns "
                 "(the DMA only zero-fills outside the buffer)")


def _replace(top: loop.ForOp, intr: TensorIntrinsic, match) -> loop.IntrinsicOp:
    """Replace the nest by one call; operands start where the nest's first iteration
    accesses them (the nest's loops at 0, loops around it kept as indices)."""
    nest_vars, accesses, params = match
    outer: list[SSAValue] = []
    for acc in accesses:
        for v in acc.indices:
            if v not in nest_vars and v not in outer:
                outer.append(v)
    maps = []
    for acc in accesses:
        idx = list(acc.indices)
        repl = [AffineExpr.constant(0) if v in nest_vars else AffineExpr.dimension(outer.index(v)) for v in idx]
        maps.append(AffineMap(len(outer), 0, tuple(e.replace_dims_and_symbols(repl, ()) for e in acc.map.data.results)))
    call = loop.IntrinsicOp(intr.name, [a.memref for a in accesses], outer, maps, params)
    parent = top.parent_block()
    assert parent is not None
    parent.insert_op_before(call, top)
    top.detach()
    top.erase(safe_erase=False)
    return call


@dataclass(frozen=True)
class TensorizePass(ModulePass):
    """Replace the loop nests starting at loops named `loop` by calls of `intrinsic`."""

    name = "tensorize"

    intrinsic: str
    """The qualified intrinsic, e.g. `vta.gemm`."""
    loop: str
    """The name of the outermost loop of each nest to replace."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        _, intr = find_intrinsic(self.intrinsic)
        targets = [o for o in op.walk() if isinstance(o, loop.ForOp) and o.name_str == self.loop]
        if not targets:
            raise TensorizeError(f"tensorize {self.intrinsic}: no loop named {self.loop!r}")
        for t in targets:
            tensorize_loop(t, intr)

