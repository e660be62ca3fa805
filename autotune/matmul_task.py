"""A real, measurable tuning task that needs no schedule passes: a tiled matmul
whose loop IR is generated directly for each point.

`C[M, N] = A[M, K] @ B[K, N]` (float32), as a zero-fill nest and a 6-deep update nest.
Knobs (template `matmul_ir`):

* `tile_i`, `tile_j`, `tile_k`: 2-way splits of M, N, K (`matmul.i.outer/inner`, ...);
* `order`: the order of the six loops (any permutation: 720 candidates);
* `vec`: 1 (scalar), 4 or 8: the innermost loop, when it is `matmul.j.inner`, steps by
  `vec` lanes with vector loads/stores of B and C and a `vector.fma`;
* `unroll`: replicate the body of the innermost loop (at most 16 copies).

Invalid points (vectorizing a loop that is not `j.inner` or whose extent is not a
multiple of the width; unrolling more than 16 copies) are excluded by the space's
constraints. The IR is built op by op (about 1 ms); a build (lower + LLVM O3) takes
50-150 ms.
"""

from __future__ import annotations


import numpy as np

from xweave.autotune.space import Point, Space
from xweave.autotune.task import InstantiationError, KernelTask, register_template

MAX_UNROLL = 16


def matmul_space(M: int, N: int, K: int) -> Space:
    space = Space()
    space.split("tile_i", M, parts=2)
    space.split("tile_j", N, parts=2)
    space.split("tile_k", K, parts=2)
    space.reorder("order", ["io", "jo", "ko", "ii", "ji", "ki"])
    space.knob("vec", [1, 4, 8])
    space.knob("unroll", [False, True])
    space.constrain(_valid)
    return space


def _valid(c: dict) -> bool:
    vec = c["vec"]
    if vec > 1 and (c["order"][-1] != "ji" or c["tile_j"][1] % vec):
        return False
    if c["unroll"] and _extents(c)[c["order"][-1]] // (vec if c["order"][-1] == "ji" else 1) \
            > MAX_UNROLL:
        return False
    return True


def _extents(c: dict) -> dict[str, int]:
    """Extent of each of the six loops of a configuration."""
    (io, ii), (jo, ji), (ko, ki) = c["tile_i"], c["tile_j"], c["tile_k"]
    return {"io": io, "ii": ii, "jo": jo, "ji": ji, "ko": ko, "ki": ki}


_NAMES = {"io": "i.outer", "ii": "i.inner", "jo": "j.outer", "ji": "j.inner",
          "ko": "k.outer", "ki": "k.inner"}


def matmul_kernel(M: int, N: int, K: int, config: dict):
    """The scheduled loop-stage kernel (a `func.func`, built op by op: no parsing)."""
    from xdsl.dialects import arith, func, vector  # lazy: as in `task`, workers build nothing
    from xdsl.dialects.builtin import (
        AffineMapAttr, FloatAttr, MemRefType, UnitAttr, VectorType, f32,
    )
    from xdsl.ir import Block, Region
    from xdsl.ir.affine import AffineExpr, AffineMap

    from xweave.dialects import loop

    fi, fj, fk = config["tile_i"][1], config["tile_j"][1], config["tile_k"][1]
    vec, unroll = config["vec"], config["unroll"]
    extents = {"io": M // fi, "ii": fi, "jo": N // fj, "ji": fj, "ko": K // fk, "ki": fk}
    coeff = {"io": fi, "ii": 1, "jo": fj, "ji": 1, "ko": fk, "ki": 1}
    order = list(config["order"])
    a_t, b_t, c_t = MemRefType(f32, [M, K]), MemRefType(f32, [K, N]), MemRefType(f32, [M, N])
    block = Block(arg_types=[a_t, b_t, c_t])
    A, B, C = block.args
    for arg, name in zip(block.args, "ABC"):
        arg.name_hint = name
    zero = arith.ConstantOp(FloatAttr(0.0, f32))
    zero.result.name_hint = "zero"
    block.add_op(zero)

    init_i = loop.ForOp(0, M, name="matmul_init.i")
    init_j = loop.ForOp(0, N, name="matmul_init.j")
    init_j.add_ops([loop.StoreOp(zero, C, [init_i.induction_var, init_j.induction_var])])
    init_i.add_ops([init_j])
    block.add_op(init_i)

    loops = order[:-1] if unroll else order
    fors = {}
    for var in loops:
        step = vec if var == "ji" else 1
        kind = loop.ForKind.VECTORIZED if var == "ji" and vec > 1 else loop.ForKind.SERIAL
        fors[var] = loop.ForOp(0, extents[var], step, kind, name=f"matmul.{_NAMES[var]}")
        fors[var].induction_var.name_hint = var
    vt = VectorType(f32, [vec])

    def access(dims: list[tuple[str, str]], env: dict[str, int]):
        """Operands and map of `[outer * f + inner + const, ...]`."""
        operands, exprs = [], []
        for outer, inner in dims:
            e = AffineExpr.constant(0)
            for var in (outer, inner):
                if var in env:
                    e = e + AffineExpr.constant(env[var] * coeff[var])
                else:
                    operands.append(fors[var].induction_var)
                    e = e + AffineExpr.dimension(len(operands) - 1) * coeff[var]
            exprs.append(e)
        return operands, AffineMapAttr(AffineMap(len(operands), 0, tuple(exprs)))

    def body(env: dict[str, int]) -> list:
        ops = []
        a = loop.LoadOp(A, *access([("io", "ii"), ("ko", "ki")], env))
        ops.append(a)
        b_ops, b_map = access([("ko", "ki"), ("jo", "ji")], env)
        c_ops, c_map = access([("io", "ii"), ("jo", "ji")], env)
        if vec > 1:
            b = loop.LoadOp(B, b_ops, b_map, vt)
            c = loop.LoadOp(C, c_ops, c_map, vt)
            av = vector.BroadcastOp(a, vt)
            s = vector.FMAOp(av, b, c)
            ops += [b, c, av, s]
        else:
            b = loop.LoadOp(B, b_ops, b_map)
            c = loop.LoadOp(C, c_ops, c_map)
            p = arith.MulfOp(a, b)
            s = arith.AddfOp(c, p)
            ops += [b, c, p, s]
        ops.append(loop.StoreOp(s, C, c_ops, c_map))
        return ops

    if unroll:
        var = order[-1]
        step = vec if var == "ji" else 1
        ops = [op for value in range(0, extents[var], step) for op in body({var: value})]
    else:
        ops = body({})
    innermost = fors[loops[-1]]
    innermost.add_ops(ops)
    for outer, inner in zip(reversed(loops[:-1]), reversed(loops[1:])):
        fors[outer].add_ops([fors[inner]])
    block.add_op(fors[loops[0]])
    block.add_op(func.ReturnOp())
    kernel = func.FuncOp("matmul", ([a_t, b_t, c_t], []), Region(block))
    kernel.attributes["xweave.kernel"] = UnitAttr()
    return kernel


def matmul_ir(M: int, N: int, K: int, config: dict):
    """The scheduled kernel in a `builtin.module`."""
    from xdsl.dialects.builtin import ModuleOp  # lazy: as in `task`, workers build nothing

    return ModuleOp([matmul_kernel(M, N, K, config)])


@register_template("matmul_ir")
class MatmulTask(KernelTask):
    """`C = A @ B` with tiling, loop order, vectorization and unrolling knobs."""

    def __init__(self, M: int = 64, N: int = 64, K: int = 64):
        super().__init__(M=int(M), N=int(N), K=int(K))
        self.flops = 2.0 * M * N * K

    def define_space(self) -> Space:
        return matmul_space(self.args["M"], self.args["N"], self.args["K"])

    def schedule(self, point: Point) -> str:
        """The equivalent pipeline of loop rewrites (informational: the IR is generated
        directly, so this names what the passes would do)."""
        c = self.space.config(point)
        parts = [f'loop-split{{loop="matmul.{ax}" factor={c[f"tile_{ax}"][1]}}}'
                 for ax in ("i", "j", "k")]
        order = ",".join(f'"matmul.{_NAMES[v]}"' for v in c["order"])
        parts.append(f"loop-reorder{{order={order}}}")
        if c["vec"] > 1:
            parts.append(f'loop-split{{loop="matmul.j.inner" factor={c["vec"]}}}')
            parts.append('loop-vectorize{loop="matmul.j.inner.inner"}')
        if c["unroll"]:
            innermost = _NAMES[c["order"][-1]] + (".outer" if c["vec"] > 1 else "")
            parts.append(f'loop-unroll{{loop="matmul.{innermost}"}}')
        return ",".join(parts)

    def loop_ir(self, point: Point):
        if not self.space.is_valid(point):
            raise InstantiationError(f"invalid point {tuple(point)}")
        a = self.args
        return matmul_ir(a["M"], a["N"], a["K"], self.space.config(point))

    def input_specs(self):
        a = self.args
        return [((a["M"], a["K"]), "float32"), ((a["K"], a["N"]), "float32")]

    def reference(self, inputs: list[np.ndarray]) -> list[np.ndarray]:
        a, b = inputs
        return [a.astype(np.float64) @ b.astype(np.float64)]


def naive_point(task: MatmulTask) -> Point:
    """The untiled i-j-k order, scalar, not unrolled (the baseline schedule)."""
    a = task.args
    return task.space.point_of({
        "tile_i": (a["M"], 1), "tile_j": (a["N"], 1), "tile_k": (a["K"], 1),
        "order": ("io", "jo", "ko", "ii", "ji", "ki"), "vec": 1, "unroll": False,
    })


__all__ = ["MatmulTask", "matmul_ir", "matmul_kernel", "matmul_space", "naive_point"]
