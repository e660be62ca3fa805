"""loop-dot{loop=NAME kernel=K lanes=N narrow=false}: integer dot products of a
quantized kernel's register block become `loop.dot` (vpdpbusd / vpmaddwd).

The loop named `loop` (the lanes: output channels or columns, extent N) must hold
exactly one loop of G = 2 or 4 iterations (the dot's group, an input-channel or K
step split off the reduction) whose body is the integer multiply-add of the
reduction:

```mlir
loop.for "conv.b" %j = 0 to 8 {                // N lanes
  loop.for "conv.rb.inner" %k = 0 to 4 {       // G
    %x = loop.load %in[.., %r * 4 + %k] : memref<..xui8>          // u8 (or i16), along k only
    %w = loop.load %wp[.., %r, %j, %k] : memref<..x8x4xi8>        // [lanes][G] (or [lanes * G])
    %c = loop.load %acc[.., %j] : memref<..xi32>                  // along j only
    %p = arith.muli (arith.extui %x), (arith.extsi %w) : i32
    loop.store (arith.addi %c, %p), %acc[.., %j]
  }
}
```

becomes, per `lanes`-wide group of the N lanes (N a multiple of `lanes`, or 4 or 8
lanes below it), vector loads of the accumulators, of the G data values and of the
lanes' G weights each (whole rows of a packed `[..][lanes][G]` panel, or a merged
`[..][lanes * G]` one), one `loop.dot` and the store of the accumulators. `lanes` is
the target's i32 lanes by default (8 with AVX2, 16 with AVX-512); `narrow=true` says
the weights are within +-64, so that a target without VNNI may use `vpmaddubsw` (see
`loop.dot`).

The data may be int16 with int16 weights (widened once, for `vpmaddwd`).

Refused, naming what differs, with the IR untouched: another body, signed 8-bit data, a
weight that is not an 8- or 16-bit integer, accesses that do not follow the lanes and
the group as above, a lane count that is not a multiple of `lanes` (nor 4 or 8).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith
from xdsl.dialects.builtin import IntegerType, ModuleOp, Signedness, VectorType, i32
from xdsl.ir import Operation, SSAValue
from xdsl.ir.affine import AffineDimExpr, AffineMap
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import PassFailedException

from xweave.dialects import loop
from xweave.dialects.dtypes import value_type
from xweave.passes.loop_analysis import Linear, iv_range, simplify_map
from xweave.passes.loop_utils import find_loops
from xweave.passes.loop_vectorize import _lane_map
from xweave.target import machine_model, target_of


class _Refused(Exception):
    """Why a loop cannot become `loop.dot` (reported as the pass's failure)."""


def _coefficients(op: loop.LoadOp | loop.StoreOp, j: SSAValue, k: SSAValue
                  ) -> list[tuple[int, int]] | None:
    """Per result of the access map, the coefficients of j and k (None: non-linear)."""
    dims_j = {i for i, v in enumerate(op.indices) if v is j}
    dims_k = {i for i, v in enumerate(op.indices) if v is k}
    out = []
    # read over the indices' ranges: a panel packed before its loops were split indexes
    # `(k_outer * 2 + k_inner) floordiv 2` until loop-simplify runs
    amap = simplify_map(op.map.data, [iv_range(v) for v in op.indices], fold_dims=False)
    for expr in amap.results:
        form = Linear.of(expr)
        cj = ck = 0
        for atom, c in form.terms.items():
            if not atom.used_dims() & (dims_j | dims_k):
                continue
            if not isinstance(atom, AffineDimExpr):
                return None
            if atom.position in dims_j:
                cj += c
            else:
                ck += c
        out.append((cj, ck))
    return out


def _expect(ok: bool, why: str) -> None:
    if not ok:
        raise _Refused(why)


@dataclass
class _Dot:
    """One matched lanes x group nest and how to rewrite it."""

    lanes_loop: loop.ForOp
    group_loop: loop.ForOp
    data: loop.LoadOp
    weight: loop.LoadOp
    acc: loop.LoadOp
    store: loop.StoreOp

    @staticmethod
    def match(j_loop: loop.ForOp) -> _Dot:
        _expect(j_loop.lb.value.data == 0 and j_loop.step.value.data == 1,
                "the lanes loop must run from 0 by steps of 1")
        inner = [op for op in j_loop.body.block.ops if not isinstance(op, loop.YieldOp)]
        _expect(len(inner) == 1 and isinstance(inner[0], loop.ForOp),
                "the lanes loop must hold exactly one loop (the group)")
        k_loop = inner[0]
        assert isinstance(k_loop, loop.ForOp)
        _expect(k_loop.lb.value.data == 0 and k_loop.step.value.data == 1
                and k_loop.extent in (2, 4), "the group loop must run 2 or 4 steps from 0")
        body = [op for op in k_loop.body.block.ops if not isinstance(op, loop.YieldOp)]
        stores = [op for op in body if isinstance(op, loop.StoreOp)]
        _expect(len(stores) == 1 and len(body) == 8,
                "the group's body must be an integer multiply-add (3 loads, 2 casts, "
                "muli, addi, store)")
        store = stores[0]
        add = store.value.owner
        _expect(isinstance(add, arith.AddiOp) and add.result.type == i32,
                "the stored value must be an i32 addi")
        assert isinstance(add, arith.AddiOp)
        acc = product = None
        for x, y in ((add.lhs, add.rhs), (add.rhs, add.lhs)):
            if (isinstance(x.owner, loop.LoadOp) and x.owner.memref is store.memref
                    and x.owner.map == store.map and list(x.owner.indices) == list(store.indices)):
                acc, product = x.owner, y.owner
        _expect(acc is not None, "the addi must add to the value loaded from the stored address")
        _expect(isinstance(product, arith.MuliOp), "the addend must be an arith.muli")
        assert isinstance(product, arith.MuliOp)
        casts = [v.owner for v in (product.lhs, product.rhs)]
        _expect(all(isinstance(c, arith.ExtUIOp | arith.ExtSIOp) for c in casts),
                "the product must be of two extended (extui/extsi) loads")
        loads = [c.input.owner for c in casts]  # pyright: ignore[reportAttributeAccessIssue]
        _expect(all(isinstance(x, loop.LoadOp) for x in loads), "the extended values must be loaded")
        j = j_loop.induction_var
        varying = [any(v is j for v in x.indices) for x in loads]  # pyright: ignore
        _expect(varying.count(True) == 1, "exactly one factor (the weight) must follow the lanes")
        d_cast, w_cast = (casts[1], casts[0]) if varying[0] else (casts[0], casts[1])
        d_load, w_load = d_cast.input.owner, w_cast.input.owner  # pyright: ignore
        assert isinstance(d_load, loop.LoadOp) and isinstance(w_load, loop.LoadOp)
        w_element = w_load.memref.type.get_element_type()  # pyright: ignore
        _expect(w_element in (IntegerType(8), IntegerType(16)) and isinstance(w_cast, arith.ExtSIOp),
                f"the weight must be i8 or i16, sign-extended, not {w_element}")
        d_element = d_load.memref.type.get_element_type()  # pyright: ignore
        byte = (d_element == IntegerType(8, Signedness.UNSIGNED) and isinstance(d_cast, arith.ExtUIOp))
        word = (d_element == IntegerType(16) and w_element == IntegerType(16))
        _expect(byte or word, f"the data must be ui8 (zero-extended), or i16 with i16 weights, "
                              f"not {d_element}")
        dot = _Dot(j_loop, k_loop, d_load, w_load, acc, store)
        dot.check_accesses()
        return dot

    @property
    def group(self) -> int:
        return self.group_loop.extent

    def check_accesses(self) -> None:
        j, k = self.lanes_loop.induction_var, self.group_loop.induction_var
        g = self.group
        for op, what in ((self.acc, "accumulator load"), (self.store, "accumulator store")):
            c = _coefficients(op, j, k)
            _expect(c is not None and c[-1] == (1, 0) and all(x == (0, 0) for x in c[:-1]),
                    f"the {what} must follow the lanes along its last dimension only")
        c = _coefficients(self.data, j, k)
        _expect(c is not None and c[-1] == (0, 1) and all(x == (0, 0) for x in c[:-1]),
                "the data load must follow the group along its last dimension only")
        c = _coefficients(self.weight, j, k)
        shape = self.weight.memref.type.get_shape()  # pyright: ignore
        rows = (c is not None and len(c) >= 2 and c[-1] == (0, 1) and c[-2] == (1, 0)
                and shape[-1] == g and all(x == (0, 0) for x in c[:-2]))
        merged = c is not None and c[-1] == (g, 1) and all(x == (0, 0) for x in c[:-1])
        _expect(rows or merged, "the weight load must read the lanes' groups consecutively "
                f"([..][lanes][{g}], or [..][lanes * {g}])")

    def rewrite(self, lanes: int, narrow: bool) -> None:
        j, k = self.lanes_loop.induction_var, self.group_loop.induction_var
        n, g = self.lanes_loop.extent, self.group
        groups = [(start, lanes) for start in range(0, n, lanes)] if n % lanes == 0 else [(0, n)]
        new: list[Operation] = []
        data_map, data_indices = _fixed(self.data, {k: 0})
        d_element = value_type(self.data.memref.type.get_element_type())  # pyright: ignore
        data = loop.LoadOp(self.data.memref, data_indices, data_map, VectorType(d_element, [g]))
        new.append(data)
        w_element = self.weight.memref.type.get_element_type()  # pyright: ignore
        for start, width in groups:
            fixed = {j: start, k: 0}
            acc_map, acc_indices = _fixed(self.acc, fixed)
            acc = loop.LoadOp(self.acc.memref, acc_indices, acc_map, VectorType(i32, [width]))
            w_map, w_indices = _fixed(self.weight, fixed)
            weight = loop.LoadOp(self.weight.memref, w_indices, w_map,
                                 VectorType(w_element, [width * g]))
            dot = loop.DotOp(acc.result, data.result, weight.result,
                             narrow=narrow and w_element == IntegerType(8))
            s_map, s_indices = _fixed(self.store, fixed)
            store = loop.StoreOp(dot.result, self.store.memref, s_indices, s_map)
            new += [acc, weight, dot, store]
        block = self.lanes_loop.parent_block()
        assert block is not None
        block.insert_ops_before(new, self.lanes_loop)
        self.lanes_loop.detach()
        self.lanes_loop.erase()


def _fixed(op: loop.LoadOp | loop.StoreOp, values: dict[SSAValue, int]
           ) -> tuple[AffineMap, list[SSAValue]]:
    """`op`'s access with the induction variables in `values` fixed to constants."""
    amap, indices = op.map.data, list(op.indices)
    for iv, value in values.items():
        amap, indices = _lane_map(amap, indices, iv, value)
    return simplify_map(amap, [iv_range(v) for v in indices], fold_dims=False), indices


@dataclass(frozen=True)
class LoopDotPass(ModulePass):
    """Make the register block's integer multiply-adds `loop.dot` (module docstring)."""

    name = "loop-dot"

    loop: str
    kernel: str | None = None
    lanes: int = 0
    """i32 lanes of a dot (4, 8 or 16); 0: the target's vector width."""
    narrow: bool = False
    """The int8 weights lie within +-64 (vpmaddubsw may be used without VNNI)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.lanes not in (0, 4, 8, 16):
            raise PassFailedException(f"loop-dot: lanes={self.lanes} (expected 4, 8 or 16)")
        lanes = self.lanes or machine_model(target_of(op)).lanes
        dots = []
        for for_op in find_loops(op, self.loop, self.kernel, self.name):
            try:
                dot = _Dot.match(for_op)
                n = for_op.extent
                _expect(n % lanes == 0 or (n < lanes and n in (4, 8)),
                        f"{n} lanes are not a multiple of {lanes} (nor 4 or 8)")
            except _Refused as e:
                raise PassFailedException(f"loop-dot: cannot rewrite loop '{self.loop}': {e}") from None
            dots.append(dot)
        for dot in dots:
            dot.rewrite(lanes, self.narrow)


__all__ = ["LoopDotPass"]
