"""Itervar features of a scheduled kernel, read from its `loop`-dialect IR.

After AutoTVM's `feature_type="itervar"` (tvm-facts §2.8), adapted to the loop dialect:
every `loop.for` is an itervar with its extent, nest depth, kind and products of
extents; float ops are counted on the innermost loop enclosing them; every
`loop.load`/`loop.store` is a buffer access whose strides, footprint (bytes touched)
and reuse are computed at every enclosing loop level from its affine map and the
buffer's row-major layout. The result is a fixed-length vector (`NUM_FEATURES`
floats; `feature_names()` names each one); `autotune/FEATURES.md` documents every
feature.

```python
info = analyze(kernel)          # a func.func of the loop dialect
info.loops[0].extent, info.accesses[0].strides
vec = itervar_features(kernel)  # np.ndarray of NUM_FEATURES float32
```
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import cast

import numpy as np
from xdsl.dialects import arith, func, math as math_dialect, vector
from xdsl.dialects.builtin import (
    AnyFloat,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    NoneAttr,
    VectorType,
)
from xdsl.ir import Block, BlockArgument, Operation, SSAValue

from xweave.dialects import loop

LOOP_KINDS = ("serial", "parallel", "vectorized", "unrolled", "vthread")
"""The loop kinds, in the order of the one-hot features."""

OP_CLASSES = ("add", "mul", "div", "fma", "other")
"""The float-op counters, in feature order."""

MAX_LOOPS = 16
"""Loop slots in the vector (padded with zeros / truncated)."""
MAX_LOOP_ACCESSES = 5
"""Access slots per loop slot."""
MAX_ACCESSES = 6
"""Slots of the per-access section."""

GLOBAL_FEATURES = (
    "total_flops", "total_bytes", "arith_intensity", "num_loops", "max_depth",
    "num_nests", *(f"num_{k}_loops" for k in LOOP_KINDS), "total_accesses",
    "max_vector_lanes",
)
LOOP_ACCESS_FEATURES = ("stride", "bytes", "reuse")
LOOP_FEATURES = (
    "present", "extent", "depth", "topdown", "bottomup",
    *(f"kind_{k}" for k in LOOP_KINDS), *(f"{c}_ct" for c in OP_CLASSES),
    *(f"acc{a}_{f}" for a in range(MAX_LOOP_ACCESSES) for f in LOOP_ACCESS_FEATURES),
)
ACCESS_FEATURES = (
    "present", "is_store", "elem_bytes", "lanes", "inner_stride", "bytes", "reuse",
    "local_scope", "depth",
)

_RAW = {"num_loops", "max_depth", "num_nests", *(f"num_{k}_loops" for k in LOOP_KINDS),
        "present", "depth", *(f"kind_{k}" for k in LOOP_KINDS), "is_store", "elem_bytes",
        "local_scope"}
"""Features kept raw; every other feature is log-transformed (`slog`)."""


def feature_names() -> list[str]:
    """The name of every entry of the feature vector, in order."""
    names = [f"g.{n}" for n in GLOBAL_FEATURES]
    names += [f"loop{i}.{n}" for i in range(MAX_LOOPS) for n in LOOP_FEATURES]
    names += [f"access{i}.{n}" for i in range(MAX_ACCESSES) for n in ACCESS_FEATURES]
    return names


NUM_FEATURES = len(GLOBAL_FEATURES) + MAX_LOOPS * len(LOOP_FEATURES) + MAX_ACCESSES * len(ACCESS_FEATURES)


def slog(x: float) -> float:
    """AutoTVM's transform: log2(x + 1) for x >= 0, -log2(1 - x) for x < 0."""
    return math.log2(x + 1.0) if x >= 0 else -math.log2(1.0 - x)


# ----------------------------------------------------------------------------------
# Analysis
# ----------------------------------------------------------------------------------


@dataclass
class LoopInfo:
    """One `loop.for` (an itervar)."""

    name: str
    extent: int
    kind: str
    depth: int
    """Number of enclosing loops (0 for the outermost loop of a nest)."""
    nest: int
    """Position of its top-level nest in the function."""
    position: int
    """Pre-order position among all loops of the function."""
    topdown: int
    """Product of the extents of the enclosing loops and this one (body executions)."""
    bottomup: int = 1
    """This extent times the largest bottom-up product of the loops directly inside."""
    ops: dict[str, int] = field(default_factory=lambda: dict.fromkeys(OP_CLASSES, 0))
    """Float ops (times vector lanes) whose innermost enclosing loop is this one."""
    accesses: list[int] = field(default_factory=list)
    """Indices (into `ProgramInfo.accesses`) of the accesses inside this loop."""
    parent: int | None = None
    children: list[int] = field(default_factory=list)
    lb: int = 0
    step: int = 1
    var: SSAValue | None = field(default=None, repr=False)


@dataclass
class AccessInfo:
    """One `loop.load` / `loop.store`, seen from each of its enclosing loops."""

    buffer: int
    """Number of the buffer: arguments first, then allocs/globals in order of appearance."""
    buffer_name: str
    ordinal: int
    """How many accesses to the same buffer precede this one (AutoTVM's `name_k`)."""
    is_store: bool
    elem_bytes: int
    lanes: int
    """Vector width of the access (1 for scalars)."""
    local: bool
    """The buffer lives in `#loop.scope<local>` (or any non-global scope)."""
    shape: tuple[int, ...]
    loops: list[int]
    """Enclosing loops, outermost first."""
    strides: list[float]
    """Change of the linear element offset per iteration of each enclosing loop
    (averaged over the loop when it only moves the address every few iterations)."""
    depends: list[bool]
    """Whether each enclosing loop moves the address at all."""
    footprint: list[int]
    """Distinct elements touched (bounding box) by one execution of each enclosing loop."""
    executions: list[int]
    """Number of times the access executes in one execution of each enclosing loop."""

    def bytes_at(self, level: int) -> int:
        return self.footprint[level] * self.elem_bytes

    def reuse_at(self, level: int) -> float:
        return self.executions[level] * self.lanes / max(1, self.footprint[level])

    @property
    def inner_stride(self) -> float:
        """Stride of the innermost enclosing loop (0 outside loops)."""
        return self.strides[-1] if self.strides else 0


@dataclass
class ProgramInfo:
    """What `analyze` finds in one kernel."""

    loops: list[LoopInfo]
    accesses: list[AccessInfo]
    top_ops: dict[str, int]
    """Float ops outside any loop."""
    nest_flops: list[float]
    """Dynamic float ops of each top-level nest (in function order)."""

    @property
    def flops(self) -> float:
        return sum(self.nest_flops) + _flops(self.top_ops)

    @property
    def bytes(self) -> int:
        """Sum over buffers of the largest outermost-level footprint of their accesses."""
        per_buffer: dict[int, int] = {}
        for a in self.accesses:
            b = a.bytes_at(0) if a.loops else a.elem_bytes * a.lanes
            per_buffer[a.buffer] = max(per_buffer.get(a.buffer, 0), b)
        return sum(per_buffer.values())


def _flops(ops: dict[str, int]) -> float:
    return sum(ops.values()) + ops["fma"]  # an fma is two flops


class _Unknown(Exception):
    pass


def _op_class(op: Operation) -> str | None:
    """The float-op counter of `op`, or None for non-float / non-arithmetic ops."""
    if not op.results:
        return None
    t = op.results[0].type
    elem = t.element_type if isinstance(t, VectorType) else t
    if isinstance(op, (math_dialect.FmaOp, vector.FMAOp)):
        return "fma"
    if not isinstance(elem, AnyFloat):
        return None
    if isinstance(op, (arith.AddfOp, arith.SubfOp)):
        return "add"
    if isinstance(op, arith.MulfOp):
        return "mul"
    if isinstance(op, arith.DivfOp) or op.name == "arith.remf":
        return "div"
    if op.name.startswith("math.") or op.name in (
        "arith.maximumf", "arith.minimumf", "arith.maxnumf", "arith.minnumf", "arith.negf",
    ):
        return "other"
    return None


def _lanes(t) -> int:
    return math.prod(t.get_shape()) if isinstance(t, VectorType) else 1


class _Analyzer:
    def __init__(self, kernel: func.FuncOp):
        self.kernel = kernel
        self.loops: list[LoopInfo] = []
        self.accesses: list[AccessInfo] = []
        self.top_ops = dict.fromkeys(OP_CLASSES, 0)
        self.buffers: dict[SSAValue, int] = {}
        self.buffer_names: list[str] = []
        self.ordinals: dict[int, int] = {}
        self.loop_of_var: dict[SSAValue, int] = {}
        for i, arg in enumerate(kernel.body.block.args):
            if isinstance(arg.type, MemRefType):
                self._buffer(arg, arg.name_hint or f"arg{i}")

    def _buffer(self, value: SSAValue, name: str | None = None) -> int:
        if value not in self.buffers:
            self.buffers[value] = len(self.buffer_names)
            self.buffer_names.append(name or value.name_hint or f"buf{len(self.buffer_names)}")
        return self.buffers[value]

    def run(self) -> ProgramInfo:
        nest_flops: list[float] = []
        for op in self.kernel.body.block.ops:
            if isinstance(op, loop.ForOp):
                first = len(self.loops)
                self._visit_op(op, [], len(nest_flops))
                nest = self.loops[first:]
                nest_flops.append(sum(_flops(l.ops) * l.topdown for l in nest))
            else:
                self._visit_op(op, [], len(nest_flops))
        return ProgramInfo(self.loops, self.accesses, self.top_ops, nest_flops)

    def _visit_block(self, block: Block, stack: list[int], nest: int) -> None:
        for op in block.ops:
            self._visit_op(op, stack, nest)

    def _visit_op(self, op: Operation, stack: list[int], nest: int) -> None:
        if isinstance(op, loop.ForOp):
            self._visit_for(op, stack, nest)
            return
        if isinstance(op, loop.AllocOp) or op.name in ("loop.get_global", "memref.get_global"):
            self._buffer(op.results[0])
        elif isinstance(op, (loop.LoadOp, loop.StoreOp)):
            self._access(op, stack)
        else:
            cls = _op_class(op)
            if cls is not None:
                counts = self.loops[stack[-1]].ops if stack else self.top_ops
                counts[cls] += _lanes(op.results[0].type)
        for region in op.regions:
            for block in region.blocks:
                self._visit_block(block, stack, nest)

    def _visit_for(self, op: loop.ForOp, stack: list[int], nest: int) -> None:
        parent = stack[-1] if stack else None
        extent = op.extent
        info = LoopInfo(
            name=op.name_str or f"loop{len(self.loops)}",
            extent=extent,
            kind=str(op.kind.data),
            depth=len(stack),
            nest=nest,
            position=len(self.loops),
            topdown=(self.loops[parent].topdown if parent is not None else 1) * extent,
            parent=parent,
            lb=op.lb.value.data,
            step=op.step.value.data,
            var=op.induction_var,
        )
        index = len(self.loops)
        self.loops.append(info)
        self.loop_of_var[op.induction_var] = index
        if parent is not None:
            self.loops[parent].children.append(index)
        self._visit_block(op.body.block, stack + [index], nest)
        inner = max((self.loops[c].bottomup for c in info.children), default=1)
        info.bottomup = extent * inner

    # --- accesses -----------------------------------------------------------------------

    def _access(self, op: loop.LoadOp | loop.StoreOp, stack: list[int]) -> None:
        memref_type = cast(MemRefType, op.memref.type)
        shape = tuple(memref_type.get_shape())
        buffer = self._buffer(op.memref)
        ordinal = self.ordinals.get(buffer, 0)
        self.ordinals[buffer] = ordinal + 1
        is_store = isinstance(op, loop.StoreOp)
        value_type = op.value.type if is_store else op.result.type
        lanes = _lanes(value_type)
        elem = memref_type.get_element_type()
        elem_bytes = max(1, getattr(elem, "bitwidth", 32) // 8)
        space = memref_type.memory_space
        local = not isinstance(space, NoneAttr) and getattr(space, "data", "global") != "global"
        row_strides = [math.prod(shape[d + 1:]) for d in range(len(shape))]

        base_env = {self.loops[i].var: self.loops[i].lb for i in stack}
        affine_map = op.map.data

        def dims_at(env) -> tuple[int, ...]:
            values = [_eval_index(v, env) for v in op.indices]
            return affine_map.eval(values[: affine_map.num_dims], values[affine_map.num_dims:])

        strides: list[float] = []
        depends: list[bool] = []
        deltas: list[list[float]] = []
        try:
            base = dims_at(base_env)
            for i in stack:
                l = self.loops[i]
                env = dict(base_env)
                env[l.var] = l.lb + l.step
                moved = dims_at(env)
                delta: list[float] = [m - b for m, b in zip(moved, base)]
                stride = sum(d * s for d, s in zip(delta, row_strides))
                dep = moved != base
                if l.extent > 2:
                    # A dimension that does not move on the first step may still move
                    # later (floordiv): use its average step over the loop instead.
                    env[l.var] = l.lb + l.step * (l.extent - 1)
                    last = dims_at(env)
                    for d, (x, b) in enumerate(zip(last, base)):
                        if delta[d] == 0 and x != b:
                            delta[d] = (x - b) / (l.extent - 1)
                            dep = True
                    if stride == 0 and dep:
                        stride = sum(d * s for d, s in zip(delta, row_strides))
                strides.append(stride)
                depends.append(dep)
                deltas.append(delta)
        except _Unknown:
            strides, depends, deltas = [], [], []
            used = _loop_vars_used(op.indices)
            for i in stack:
                dep = self.loops[i].var in used
                strides.append(1 if dep else 0)
                depends.append(dep)
                deltas.append([1 if dep else 0] * len(shape))

        # footprint / executions at each level, innermost first
        footprint: list[int] = [0] * len(stack)
        executions: list[int] = [0] * len(stack)
        for level in range(len(stack)):
            inner = stack[level:]
            execs = math.prod(self.loops[i].extent for i in inner)
            box = 1
            for d in range(len(shape)):
                span = 1 + sum(
                    abs(deltas[level + j][d]) * (self.loops[i].extent - 1)
                    for j, i in enumerate(inner)
                )
                if d == len(shape) - 1:
                    span += lanes - 1
                box *= max(1, min(int(round(span)), shape[d]))
            footprint[level] = box
            executions[level] = execs
        info = AccessInfo(
            buffer=buffer,
            buffer_name=self.buffer_names[buffer],
            ordinal=ordinal,
            is_store=is_store,
            elem_bytes=elem_bytes,
            lanes=lanes,
            local=local,
            shape=shape,
            loops=list(stack),
            strides=strides,
            depends=depends,
            footprint=footprint,
            executions=executions,
        )
        index = len(self.accesses)
        self.accesses.append(info)
        for i in stack:
            self.loops[i].accesses.append(index)


def _eval_index(value: SSAValue, env: dict[SSAValue, int]) -> int:
    """The value of an `index` SSA value given the loop variables (raise _Unknown)."""
    if value in env:
        return env[value]
    if isinstance(value, BlockArgument):
        raise _Unknown
    op = value.owner
    if isinstance(op, arith.ConstantOp) and isinstance(op.value, IntegerAttr):
        return op.value.value.data
    if isinstance(op, arith.IndexCastOp):
        return _eval_index(op.input, env)
    binary = {
        arith.AddiOp: lambda a, b: a + b,
        arith.SubiOp: lambda a, b: a - b,
        arith.MuliOp: lambda a, b: a * b,
        arith.FloorDivSIOp: lambda a, b: a // b if b else 0,
        arith.DivSIOp: lambda a, b: int(a / b) if b else 0,
        arith.DivUIOp: lambda a, b: a // b if b else 0,
        arith.RemSIOp: lambda a, b: a - b * int(a / b) if b else 0,
        arith.RemUIOp: lambda a, b: a % b if b else 0,
        arith.MaxSIOp: max,
        arith.MinSIOp: min,
    }
    fn = binary.get(type(op))
    if fn is None:
        raise _Unknown
    return fn(_eval_index(op.operands[0], env), _eval_index(op.operands[1], env))


def _loop_vars_used(values: Sequence[SSAValue]) -> set[SSAValue]:
    """Loop induction variables that `values` depend on (through any ops)."""
    seen: set[SSAValue] = set()
    out: set[SSAValue] = set()
    work = list(values)
    while work:
        v = work.pop()
        if v in seen:
            continue
        seen.add(v)
        if isinstance(v, BlockArgument):
            if isinstance(v.block.parent_op(), loop.ForOp):
                out.add(v)
            continue
        work.extend(v.owner.operands)
    return out


def kernel_of(ir: func.FuncOp | ModuleOp) -> func.FuncOp:
    """The kernel to featurize: the function itself, or the module's only
    `xweave.kernel` function (else its only function with a body)."""
    if isinstance(ir, func.FuncOp):
        return ir
    funcs = [op for op in ir.ops if isinstance(op, func.FuncOp) and not op.is_declaration]
    kernels = [f for f in funcs if "xweave.kernel" in f.attributes]
    chosen = kernels or funcs
    if len(chosen) != 1:
        raise ValueError(f"expected one kernel in the module, found {len(chosen)}")
    return chosen[0]


def analyze(ir: func.FuncOp | ModuleOp) -> ProgramInfo:
    """Loops, float-op counts and buffer accesses of a loop-stage kernel."""
    return _Analyzer(kernel_of(ir)).run()


# ----------------------------------------------------------------------------------
# The fixed-length vector
# ----------------------------------------------------------------------------------


def loop_order(info: ProgramInfo) -> list[int]:
    """Loops in feature order: nests by decreasing dynamic flops (ties: position),
    loops of a nest in pre-order (outer to inner)."""
    nests = sorted(range(len(info.nest_flops)), key=lambda n: (-info.nest_flops[n], n))
    rank = {n: r for r, n in enumerate(nests)}
    return sorted(range(len(info.loops)), key=lambda i: (rank[info.loops[i].nest], i))


def access_order(info: ProgramInfo, indices: Sequence[int] | None = None) -> list[int]:
    """Accesses in feature order: by nest rank, then buffer number, then ordinal."""
    nests = sorted(range(len(info.nest_flops)), key=lambda n: (-info.nest_flops[n], n))
    rank = {n: r for r, n in enumerate(nests)}

    def nest_of(a: AccessInfo) -> int:
        return rank[info.loops[a.loops[0]].nest] if a.loops else len(rank)

    chosen = range(len(info.accesses)) if indices is None else indices
    return sorted(chosen, key=lambda i: (nest_of(info.accesses[i]), info.accesses[i].buffer,
                                         info.accesses[i].ordinal, i))


def features_of_info(info: ProgramInfo) -> np.ndarray:
    """The feature vector of an analyzed kernel (see `feature_names`)."""
    out: list[float] = []
    flops = info.flops
    nbytes = info.bytes
    kinds = [l.kind for l in info.loops]
    total_accesses = sum(
        (a.executions[0] if a.loops else 1) * a.lanes for a in info.accesses
    )
    g = {
        "total_flops": flops,
        "total_bytes": nbytes,
        "arith_intensity": flops / nbytes if nbytes else 0.0,
        "num_loops": len(info.loops),
        "max_depth": max((l.depth + 1 for l in info.loops), default=0),
        "num_nests": len(info.nest_flops),
        **{f"num_{k}_loops": kinds.count(k) for k in LOOP_KINDS},
        "total_accesses": total_accesses,
        "max_vector_lanes": max((a.lanes for a in info.accesses), default=1),
    }
    out += [_transform(n, g[n]) for n in GLOBAL_FEATURES]

    order = loop_order(info)[:MAX_LOOPS]
    for i in order:
        l = info.loops[i]
        values = {
            "present": 1, "extent": l.extent, "depth": l.depth, "topdown": l.topdown,
            "bottomup": l.bottomup,
            **{f"kind_{k}": int(l.kind == k) for k in LOOP_KINDS},
            **{f"{c}_ct": l.ops[c] for c in OP_CLASSES},
        }
        row = [_transform(n, values[n]) for n in LOOP_FEATURES[: -MAX_LOOP_ACCESSES * 3]]
        accesses = access_order(info, l.accesses)[:MAX_LOOP_ACCESSES]
        for a_index in accesses:
            a = info.accesses[a_index]
            level = a.loops.index(i)
            row += [slog(a.strides[level]), slog(a.bytes_at(level)), slog(a.reuse_at(level))]
        row += [0.0] * (3 * (MAX_LOOP_ACCESSES - len(accesses)))
        out += row
    out += [0.0] * (len(LOOP_FEATURES) * (MAX_LOOPS - len(order)))

    accesses = access_order(info)[:MAX_ACCESSES]
    for a_index in accesses:
        a = info.accesses[a_index]
        values = {
            "present": 1, "is_store": int(a.is_store), "elem_bytes": a.elem_bytes,
            "lanes": a.lanes, "inner_stride": a.inner_stride,
            "bytes": a.bytes_at(0) if a.loops else a.elem_bytes * a.lanes,
            "reuse": a.reuse_at(0) if a.loops else 1.0,
            "local_scope": int(a.local), "depth": len(a.loops),
        }
        out += [_transform(n, values[n]) for n in ACCESS_FEATURES]
    out += [0.0] * (len(ACCESS_FEATURES) * (MAX_ACCESSES - len(accesses)))
    vec = np.asarray(out, dtype=np.float32)
    assert vec.shape == (NUM_FEATURES,), (vec.shape, NUM_FEATURES)
    return vec


def _transform(name: str, value: float) -> float:
    return float(value) if name in _RAW else slog(float(value))


def itervar_features(ir: func.FuncOp | ModuleOp) -> np.ndarray:
    """The fixed-length itervar feature vector of a loop-stage kernel."""
    return features_of_info(analyze(ir))
