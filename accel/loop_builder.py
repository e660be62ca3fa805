"""Writing an accelerator kernel's schedule as loop IR by hand (part of the designer API).

An accelerator's kernels are loop nests over its tiles whose innermost nests
`tensorize` then replaces by intrinsic calls (VTA's conv2d in `accel/vta/conv_schedule.py`,
gemm8x8's dense layer in `examples/gemm8x8/dense.py`). `LoopBuilder` appends ops at the
innermost open block and turns index expressions into affine maps:

    b = LoopBuilder(kernel_body)
    m = b.loop(mb, "dense.m")                  # open a loop.for; its induction variable
    b.store(b.load(x, [m, [(2, ko), kv], i, k]), buf, [kv, i, k])
    b.close()                                  # back to the enclosing block

An index is an int, an SSA value, an `AffineExpr` over the access's values, a dict
{value or 1: coefficient} (a linear form; key 1 is the constant), or a list of parts
(ints, values and (coefficient, value) pairs) that add up.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.ir import Block, Operation, SSAValue
from xdsl.ir.affine import AffineExpr, AffineMap

from xweave.dialects import loop

__all__ = ["LoopBuilder", "linear"]


def linear(*terms) -> dict:
    """A linear form {SSAValue | 1: coefficient} from terms: ints, values,
    (coefficient, value-or-linear-form) pairs and other linear forms."""
    out: dict = {}
    for t in terms:
        if isinstance(t, int):
            out[1] = out.get(1, 0) + t
        elif isinstance(t, tuple):
            coef, v = t
            if isinstance(v, dict):
                for k, c in v.items():
                    out[k] = out.get(k, 0) + coef * c
            else:
                out[v] = out.get(v, 0) + coef
        elif isinstance(t, dict):
            for k, c in t.items():
                out[k] = out.get(k, 0) + c
        else:
            out[t] = out.get(t, 0) + 1
    return out


class LoopBuilder:
    """Appends loop IR at the innermost open block (before its `loop.yield`, if any)."""

    def __init__(self, block: Block | None = None):
        self.blocks: list[Block] = [block] if block is not None else []

    def add(self, op: Operation) -> Operation:
        block = self.blocks[-1]
        if isinstance(block.last_op, loop.YieldOp):
            block.insert_op_before(op, block.last_op)
        else:
            block.add_op(op)
        return op

    def open(self, block: Block) -> None:
        """Append the following ops to `block` (until `close`)."""
        self.blocks.append(block)

    def close(self, n: int = 1) -> None:
        """Leave the `n` innermost open blocks."""
        del self.blocks[-n:]

    def for_(self, extent: int, name: str | None = None,
             kind: loop.ForKind = loop.ForKind.SERIAL) -> loop.ForOp:
        """Add `loop.for` over [0, extent) without opening it."""
        op = loop.ForOp(0, extent, 1, kind, name=name)
        self.add(op)
        return op

    def loop(self, extent: int, name: str | None = None,
             kind: loop.ForKind = loop.ForKind.SERIAL) -> SSAValue:
        """Add `loop.for` over [0, extent) and open its body; returns its induction variable."""
        op = self.for_(extent, name, kind)
        self.open(op.body.block)
        return op.induction_var

    def maps(self, indices: Sequence[Sequence]) -> tuple[list[SSAValue], list[AffineMap]]:
        """The values the indices of several accesses use (in order of appearance) and
        one affine map over them per access."""
        forms = [[_form(e) for e in index] for index in indices]
        values: list[SSAValue] = []
        for index in forms:
            for e in index:
                for k in (e if isinstance(e, dict) else {e: 1} if isinstance(e, SSAValue) else {}):
                    if k != 1 and k not in values:
                        values.append(k)
        return values, [AffineMap(len(values), 0, tuple(_expr(e, values) for e in index))
                        for index in forms]

    def access(self, index: Sequence) -> tuple[list[SSAValue], AffineMap]:
        """`maps` of one access."""
        values, (amap,) = self.maps([index])
        return values, amap

    def load(self, buffer: SSAValue, index: Sequence) -> SSAValue:
        values, amap = self.access(index)
        return self.add(loop.LoadOp(buffer, values, amap)).results[0]

    def store(self, value: SSAValue, buffer: SSAValue, index: Sequence) -> None:
        values, amap = self.access(index)
        self.add(loop.StoreOp(value, buffer, values, amap))


def _form(e):
    """A list of parts as a linear form; anything else as it is."""
    return linear(*e) if isinstance(e, list) else e


def _expr(e, values: list[SSAValue]) -> AffineExpr:
    if isinstance(e, int):
        return AffineExpr.constant(e)
    if isinstance(e, SSAValue):
        return AffineExpr.dimension(values.index(e))
    if isinstance(e, AffineExpr):
        return e
    expr = AffineExpr.constant(e.get(1, 0))
    for k, c in e.items():
        if k != 1 and c:
            expr = expr + AffineExpr.dimension(values.index(k)) * c
    return expr
