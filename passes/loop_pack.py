"""loop-pack: change the data layout of a kernel argument into a packed buffer.

```
loop-pack{buffer=1 split_dim=0 factor=16}              # dense weights [N][K] -> [N/16][K][16]
loop-pack{buffer="w" split_dim=0 factor=16}            # conv weights OIHW -> [O/16][I][H][W][16]
loop-pack{buffer="data" split_dim=1 factor=8}          # NCHW -> NCHW[8]c = [N][C/8][H][W][8]
loop-pack{buffer="w" split_dim=1,0 factor=4,16}        # OIHW -> [O/16][I/4][H][W][4][16]
loop-pack{buffer="B" split_dim=1 factor=16 order=1,0,2} # matmul B [K][N] -> [N/16][K][16]
```

Option grammar: `buffer` names the kernel argument, by position (`buffer=1`) or by
SSA name (`buffer="w"`, the `%w` of the printed kernel). The new layout is a list of
splits: `split_dim=d_1,...,d_k factor=f_1,...,f_k` splits dimension `d_i` (numbered
in the original layout; distinct) into an outer dimension of size ceil(size/f_i) that
stays in place and an inner dimension of size `f_i` appended at the end, in the order
given. Element `[..., x_d, ...]` is stored at `[..., x_d floordiv f, ..., x_d mod f]`.
`parallel=true` runs the packing stage's outermost loop of more than one iteration
on all threads.
`order=p_1,...,p_n` then permutes the dimensions of that packed layout (dimension `i`
of the result is dimension `p_i` of the split layout), e.g. to make each panel of a
matmul's B contiguous: B is read panel after panel, not row after row.

At the start of the kernel, a packing stage `<name>_pack` (loops
`<name>_pack.i<d>.outer`, `<name>_pack.i<d>`, `<name>_pack.i<d>.inner`, in packed order,
so writes are sequential) copies the argument into a new buffer of the packed shape
(a `loop.alloc` in global memory; the padding of a non-dividing factor is filled with
zeros, never read). Every load of the argument then reads the packed buffer through
the composed access map, simplified with the loop ranges (after `loop-split` of the
reading loop by the same factor, `(j.o * 16 + j.i) floordiv 16` reads `j.o`).

Refused (PassFailedException, IR untouched): an unknown kernel or argument; an
argument that is written, or read with vector loads (pack before vectorizing); bad
split dims or factors. Without `kernel`, every kernel having the argument is packed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import cast

import numpy as np
from xdsl.dialects import func, scf
from xdsl.dialects.builtin import (
    DenseArrayBase,
    DictionaryAttr,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    i64,
)
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.ir.affine import AffineDimExpr, AffineExpr, AffineMap
from xdsl.utils.exceptions import PassFailedException

from xweave.dialects import loop
from xweave.passes.loop_analysis import simplify_access
from xweave.passes.loop_regions import (
    PlannedLoopPass,
    bounds_condition,
    dimension_order,
    element_zero,
    nest_of,
)
from xweave.passes.loop_utils import kernels


PACK_ATTR = "xweave.pack"
"""On a packed buffer's `loop.alloc`: which argument it packs and how (`argument`,
`split_dim`, `factor`, `order`), so a later pass can pack constant arguments at
compile time (`loop-fold-constant-packs`)."""


def pack_array(array: np.ndarray, splits: list[tuple[int, int]], order: list[int]) -> np.ndarray:
    """`array` in the packed layout (numpy's version of the packing stage)."""
    padded = np.pad(array, [(0, -(-n // dict(splits)[d]) * dict(splits)[d] - n)
                            if d in dict(splits) else (0, 0) for d, n in enumerate(array.shape)])
    shape: list[int] = []
    position = {}  # original dim -> position of its outer (or whole) part after reshape
    inner = {}
    for d, n in enumerate(padded.shape):
        position[d] = len(shape)
        if d in dict(splits):
            f = dict(splits)[d]
            shape += [n // f, f]
            inner[d] = position[d] + 1
        else:
            shape.append(n)
    split_layout = [position[d] for d in range(array.ndim)] + [inner[d] for d, _ in splits]
    reshaped = padded.reshape(shape).transpose(split_layout)
    return np.ascontiguousarray(reshaped.transpose(order))


def packed_shape(shape: list[int], splits: list[tuple[int, int]]) -> list[int]:
    """The shape after the `(dim, factor)` splits."""
    new = list(shape)
    for d, f in splits:
        new[d] = -(-shape[d] // f)
    return new + [f for _, f in splits]


def packed_exprs(exprs: list[AffineExpr], splits: list[tuple[int, int]]) -> list[AffineExpr]:
    """Where the element at index `exprs` lives in the packed buffer."""
    new = list(exprs)
    for d, f in splits:
        new[d] = exprs[d] // f
    return new + [exprs[d] % f for d, f in splits]


@dataclass(frozen=True)
class LoopPackPass(PlannedLoopPass):
    """Copy kernel argument `buffer` into a packed layout at the kernel start and make
    every load read the packed copy (see the module docstring for the grammar)."""

    name = "loop-pack"

    buffer: int | str
    split_dim: tuple[int, ...]
    factor: tuple[int, ...]
    order: tuple[int, ...] = ()
    parallel: bool = False
    kernel: str | None = None

    def targets(self, module: ModuleOp) -> list[func.FuncOp]:
        targets = [k for k in kernels(module, self.kernel) if self._argument(k) is not None]
        if not targets:
            where = f"kernel '{self.kernel}'" if self.kernel else "any kernel"
            raise PassFailedException(f"loop-pack: no argument {self.buffer!r} in {where}")
        return targets

    def _argument(self, kernel: func.FuncOp) -> tuple[int, SSAValue] | None:
        args = kernel.body.block.args
        key = self.buffer
        if isinstance(key, str):
            key = key.removeprefix("%")
            if key.isdigit():
                key = int(key)
        if isinstance(key, int):
            return (key, args[key]) if 0 <= key < len(args) else None
        found = [(i, a) for i, a in enumerate(args) if a.name_hint == key]
        return found[0] if found else None

    def plan(self, kernel: func.FuncOp) -> Callable[[], None]:
        index, arg = cast(tuple[int, SSAValue], self._argument(kernel))
        what = f"loop-pack of argument {self.buffer!r} of '{kernel.sym_name.data}'"
        if not isinstance(arg.type, MemRefType):
            raise PassFailedException(f"{what}: not a buffer")
        arg_type = cast(MemRefType, arg.type)
        shape = list(arg_type.get_shape())
        if len(self.split_dim) != len(self.factor) or not self.split_dim:
            raise PassFailedException(f"{what}: give one factor per split dimension")
        if len(set(self.split_dim)) != len(self.split_dim):
            raise PassFailedException(f"{what}: a dimension is split twice")
        for d, f in zip(self.split_dim, self.factor):
            if not 0 <= d < len(shape):
                raise PassFailedException(f"{what}: no dimension {d} in {arg_type}")
            if f <= 0:
                raise PassFailedException(f"{what}: factor {f} is not positive")
        splits = list(zip(self.split_dim, self.factor))
        order = dimension_order(self.order, len(shape) + len(splits), what)
        loads: list[loop.LoadOp] = []
        for use in arg.uses:
            user = use.operation
            if not isinstance(user, loop.LoadOp) or use.index != 0:
                raise PassFailedException(f"{what}: the argument is used by {user.name} "
                                          "(only read-only buffers can be packed)")
            if user.vector_type is not None:
                raise PassFailedException(f"{what}: the argument is read with vector "
                                          "loads; pack before vectorizing")
            loads.append(user)
        new_shape = [packed_shape(shape, splits)[d] for d in order]
        new_type = MemRefType(arg_type.get_element_type(), new_shape)
        hint = arg.name_hint or f"arg{index}"

        def run() -> None:
            packed = loop.AllocOp(new_type)
            packed.memref.name_hint = f"{hint}_packed"
            packed.attributes[PACK_ATTR] = DictionaryAttr({
                "argument": IntegerAttr(index, 64),
                "split_dim": DenseArrayBase.from_list(i64, [d for d, _ in splits]),
                "factor": DenseArrayBase.from_list(i64, [f for _, f in splits]),
                "order": DenseArrayBase.from_list(i64, order)})
            fors = self._packing_nest(arg, packed.memref, shape, splits, order,
                                      f"{hint}_pack")
            nest = fors[0]
            if self.parallel:  # every iteration writes its own slice of the copy
                # The first loop that has more than one iteration: a batch of 1 leads
                # many packed layouts (1x128x768 activations).
                outer = next((f for f in fors if f.ub.value.data - f.lb.value.data > 1), nest)
                outer.properties["kind"] = loop.ForKindAttr(loop.ForKind.PARALLEL)
            block = kernel.body.block
            block.insert_ops_before([packed, nest], cast(Operation, block.first_op))
            for load in loads:
                amap = load.map.data
                split_results = packed_exprs(list(amap.results), splits)
                results = [split_results[d] for d in order]
                load.set_access(list(load.indices), AffineMap(
                    amap.num_dims, amap.num_symbols, tuple(results)), packed.memref)
                simplify_access(load, fold_dims=False)

        return run

    @staticmethod
    def _packing_nest(src: SSAValue, dst: SSAValue, shape: list[int],
                      splits: list[tuple[int, int]], order: list[int],
                      stage: str) -> list[loop.ForOp]:
        """`dst[packed(x)] = src[x]` over the packed shape (zeros in the padding); the
        loops (a perfect nest, outermost first) run in the packed buffer's order, so
        the writes are sequential."""
        split = dict(splits)
        axes = [f"i{d}.outer" if d in split else f"i{d}" for d in range(len(shape))]
        axes += [f"i{d}.inner" for d, _ in splits]
        extents = packed_shape(shape, splits)
        fors = nest_of([extents[d] for d in order], [f"{stage}.{axes[d]}" for d in order])
        for f, d in zip(fors, order):
            f.induction_var.name_hint = axes[d].replace(".", "_")
        ivs = [f.induction_var for f in fors]
        # Loop `i` walks dimension order[i] of the split layout.
        position = {d: i for i, d in enumerate(order)}
        dim = [AffineDimExpr(position[d]) for d in range(len(extents))]
        rank = len(shape)
        source = [dim[d] for d in range(rank)]
        for k, (d, f) in enumerate(splits):
            source[d] = dim[d] * f + dim[rank + k]
        source_map = AffineMap(len(ivs), 0, tuple(source))
        ragged = [(source[d], shape[d]) for d, f in splits if shape[d] % f]
        load = loop.LoadOp(src, ivs, source_map)
        if not ragged:
            body_ops: list[Operation] = [load]
            value = load.result
        else:
            cond_ops, cond = bounds_condition(
                [(expr, size, False, True) for expr, size in ragged], ivs)
            zero = element_zero(cast(MemRefType, src.type))
            element = cast(MemRefType, src.type).get_element_type()
            select = scf.IfOp(cond, [element],
                              Region(Block([load, scf.YieldOp(load.result)])),
                              Region(Block([zero, scf.YieldOp(zero.result)])))
            body_ops = [*cond_ops, select]
            value = select.results[0]
        fors[-1].add_ops([*body_ops, loop.StoreOp(value, dst, ivs)])
        return fors
