"""The schedule templates, most specific first.

* `BlockedReduction` — conv2d, dense, matmul, batch matmul: TVM's x86 strategy. The
  output is tiled into an MR x NR register block (NR along the output's contiguous
  axis, in 8-lane vectors); the reduction runs inside the tile with the accumulator
  in a local buffer that LLVM keeps in registers; epilogue stages (bias, ...) are
  inlined and computed on the tile while it is in registers; operands read with a
  stride along the vector axis are packed into NR-wide panels; the outermost tile
  loop runs in parallel.
* `Injective` — elementwise/broadcast/layout kernels: producers inlined, the
  innermost axis vectorized, the outermost parallel.
* `Generic` — anything else (pooling, softmax pieces, ...): the outer spatial loop
  parallel and the contiguous axis vectorized where the accesses allow.

A configuration is a dict of knob values; `knobs(info)` declares the candidates a tuner
may choose from, `default_config(info)` is the untuned choice.
"""

from __future__ import annotations

import itertools
from abc import ABC, abstractmethod

from xweave.dialects import loop
from xweave.schedules.analysis import KernelInfo, Stage

VECTOR = 8  # f32 lanes of an AVX2 register
MAX_REGISTERS = 15  # of the 16 ymm registers: accumulators + operand vectors + broadcast


def step(pass_name: str, kernel: str, **options) -> str:
    """One pipeline step as text, e.g. `loop-split{loop="dense.j" factor=16 kernel="k"}`."""
    parts = []
    for key, value in {**options, "kernel": kernel}.items():
        if isinstance(value, (list, tuple)):
            text = ",".join(_value(v) for v in value)
        else:
            text = _value(value)
        parts.append(f"{key.replace('_', '-')}={text}")
    return f"{pass_name}{{{' '.join(parts)}}}"


def _value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    return f'"{v}"'


PARALLEL_MIN_WORK = 1 << 15
"""Innermost iterations below which a kernel runs on one thread: waking the thread
pool (1-2 us on a quiet machine, far more when the other core is busy) costs more
than it saves (bench/op_overhead.py: 5.3 us per tiny op on 2 threads)."""


def worth_parallel(info: KernelInfo) -> bool:
    """Whether the kernel has enough work to run its outer loops in parallel."""
    return sum(stage.work for stage in info.stages) >= PARALLEL_MIN_WORK


def divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def vectorize_tile(kernel: str, names: list[str], extents: list[int]) -> list[str]:
    """Vectorize the last loop of a tile by 8-lane vectors and unroll the rest of it,
    so every index into a local buffer is a constant (registers, not memory)."""
    *outer, last = names
    *outer_extents, last_extent = extents
    steps = []
    if last_extent % VECTOR == 0:
        if last_extent > VECTOR:
            steps.append(step("loop-split", kernel, loop=last, factor=VECTOR))
            steps.append(step("loop-vectorize", kernel, loop=f"{last}.inner"))
            steps.append(step("loop-unroll", kernel, loop=f"{last}.outer"))
        else:
            steps.append(step("loop-vectorize", kernel, loop=last))
    elif last_extent <= 16:
        steps.append(step("loop-unroll", kernel, loop=last))
    for name, extent in zip(reversed(outer), reversed(outer_extents)):
        if extent <= 16:
            steps.append(step("loop-unroll", kernel, loop=name))
    return steps


class Template(ABC):
    """Turns a kernel and a configuration into a pipeline of loop rewrites."""

    name: str

    @abstractmethod
    def applies(self, info: KernelInfo) -> bool: ...

    @abstractmethod
    def knobs(self, info: KernelInfo) -> dict[str, list]: ...

    @abstractmethod
    def default_config(self, info: KernelInfo) -> dict: ...

    @abstractmethod
    def pipeline(self, info: KernelInfo, config: dict) -> list[str]: ...


def _epilogue(info: KernelInfo, anchor: Stage) -> tuple[list[Stage], Stage | None]:
    """The injective stages after `anchor` (all but the output are inlined) and the
    output stage if it is not the anchor."""
    later = info.stages[info.stages.index(anchor) + 1:]
    if anchor.is_output or not later:
        return [], None
    output = later[-1]
    if any(s.is_reduction for s in later) or len(output.spatial) != len(anchor.spatial):
        return [], None
    return later[:-1], output


class BlockedReduction(Template):
    """Register-blocked reductions (conv2d, dense, matmul, batch matmul)."""

    name = "blocked-reduction"

    def applies(self, info: KernelInfo) -> bool:
        anchor = info.anchor
        if not anchor.is_reduction or len(anchor.spatial) < 2 or anchor.operands < 2:
            return False  # register blocking pays for contractions, not for pooling
        if not anchor.is_output and _epilogue(info, anchor)[1] is None:
            return False
        _, v = self._axes(anchor)
        return anchor.spatial[v][1] >= VECTOR

    def _axes(self, anchor: Stage) -> tuple[int, int]:
        """Positions (in the spatial axes) of the register-block rows and vector axis.

        The vector axis is one no read slides along (a window index such as `y + ry`
        would need unaligned or strided vectors), a multiple of 8 where possible, the
        last such axis on ties: the output channels of a conv (the weights, packed,
        give contiguous vectors; the input is broadcast, whatever the stride), the
        columns of a matmul. The rows are the innermost other axis of extent > 1."""
        spatial = [n for n, _ in anchor.spatial]
        v = max(range(len(spatial)), key=lambda d: (
            spatial[d] not in anchor.windowed, anchor.spatial[d][1] % VECTOR == 0,
            anchor.spatial[d][1] >= VECTOR, d))
        others = [d for d in range(len(spatial)) if d != v and anchor.spatial[d][1] > 1]
        u = others[-1] if others else next(d for d in range(len(spatial)) if d != v)
        return u, v

    def knobs(self, info: KernelInfo) -> dict[str, list]:
        anchor = info.anchor
        u, v = self._axes(anchor)
        nv = [n for n in (8, 16, 24, 32) if anchor.spatial[v][1] % n == 0] or [1]
        mu = list(range(1, min(16, anchor.spatial[u][1]) + 1))
        reduce = [n for n, _ in anchor.reduce]
        first = anchor.reduce[0][1] if anchor.reduce else 1
        return {"tile_rows": mu, "tile_cols": nv, "parallel": [True, False],
                # the order of the reduction loops inside a tile (rc,ry,rx / ry,rx,rc...)
                "reduce_order": [",".join(p) for p in itertools.permutations(reduce)][:24],
                # split the outermost reduction loop: its outer part runs first, the
                # inner part innermost (the panel slice a tile reads stays in L1)
                "reduce_split": [f for f in divisors(first) if f <= 64],
                "unroll_reduce": [False, True], "pack_rows": [True, False]}

    def default_config(self, info: KernelInfo) -> dict:
        """The register block (rows x cols outputs) that keeps the FMA units busiest:
        its accumulators, a vector of the packed operand per column vector and a
        broadcast must fit the 16 ymm registers; it needs 8 independent accumulators
        (2 FMA pipes x 4 cycles latency) and no more loads than FMAs per step (2
        loads a cycle); rows that do not divide the axis waste the last tile's
        overshoot. At most 16 columns (wider panels measured slower); on ties 16,
        then the larger block (less memory traffic per FMA)."""
        knobs = self.knobs(info)
        extent = info.anchor.spatial[self._axes(info.anchor)[0]][1]

        def score(rows: int, cols: int) -> tuple[float, int]:
            vectors = max(1, cols // VECTOR)
            fmas, loads = rows * vectors, rows + vectors
            busy = min(1.0, fmas / loads, fmas / 8)
            used = extent / (-(-extent // rows) * rows)
            return round(busy * used, 2), rows * cols

        def registers(rows: int, cols: int) -> int:
            vectors = max(1, cols // VECTOR)
            return rows * vectors + vectors + 1

        # With an epilogue, the anchor is computed at the output's tile through bound
        # inference: a ragged tile guards the whole reduction (measured 5x slower).
        rows_choices = knobs["tile_rows"]
        if _epilogue(info, info.anchor)[1] is not None:
            rows_choices = [r for r in rows_choices if extent % r == 0]
        fitting = [(score(r, c)[0], -abs(c - 2 * VECTOR), score(r, c)[1], extent % r == 0, c, r)
                   for r in rows_choices for c in knobs["tile_cols"]
                   if registers(r, c) <= MAX_REGISTERS and c <= 2 * VECTOR]
        *_, cols, rows = max(fitting) if fitting else (0, 0, 0, True, knobs["tile_cols"][0], 1)
        return {"tile_rows": rows, "tile_cols": cols, "parallel": worth_parallel(info),
                "reduce_order": knobs["reduce_order"][0], "reduce_split": 1,
                "unroll_reduce": False, "pack_rows": True}

    def pipeline(self, info: KernelInfo, config: dict) -> list[str]:
        k = info.name
        anchor = info.anchor
        u, v = self._axes(anchor)
        rows, cols = config["tile_rows"], config["tile_cols"]
        inlined, output = _epilogue(info, anchor)
        steps = [step("loop-inline", k, stage=s.name) for s in inlined]
        # The stage whose loops carry the tiling: the output (epilogue) or the anchor.
        tiled = output or anchor
        names = [n for n, _ in tiled.spatial]
        # A ragged last row tile is guarded around the innermost body, so the tile
        # loops stay perfectly nested (reorder, unroll); LLVM hoists the guard.
        ragged = {"guard": "innermost"} if tiled.extent(names[u]) % rows else {}
        steps += [step("loop-split", k, loop=names[u], factor=rows, **ragged),
                  step("loop-split", k, loop=names[v], factor=cols)]
        steps += self._packs(info, anchor, v, cols, config["parallel"])
        if config.get("pack_rows", True):
            steps += self._packs(info, anchor, u, rows, config["parallel"])
        reduce_loops = self._reduce_loops(anchor, config)
        split = config.get("reduce_split", 1)
        if split > 1 and reduce_loops:
            steps.append(step("loop-split", k, loop=reduce_loops[0], factor=split))
            reduce_loops = [f"{reduce_loops[0]}.outer", *reduce_loops[1:],
                            f"{reduce_loops[0]}.inner"]
        outer = [n for d, n in enumerate(names) if d not in (u, v)]
        tile_outer = [f"{names[u]}.outer", f"{names[v]}.outer"]
        tile_inner = [f"{names[u]}.inner", f"{names[v]}.inner"]
        reduce = reduce_loops if output is None else []
        # Column panels outermost: one panel of the packed operand (weights) stays in
        # cache while every row tile of the other axes streams past it.
        tile_loops = [tile_outer[1], *outer, tile_outer[0]]
        steps.append(step("loop-reorder", k, order=tile_loops + reduce + tile_inner))
        at = tile_outer[0]
        # The register block is laid out rows x vector lanes, whatever the output layout.
        order = [d for d in range(len(names)) if d not in (u, v)] + [u, v]
        if output is None:
            steps.append(step("loop-cache-write", k, stage=anchor.name, at=at, order=order))
            write = [f"{anchor.name}_write.{n.split('.', 1)[1]}" for n in (names[u], names[v])]
        else:
            steps.append(step("loop-compute-at", k, stage=anchor.name, at=at, scope="local",
                              order=order))
            a_names = [n for n, _ in anchor.spatial]
            steps.append(step("loop-reorder", k, order=reduce_loops + [a_names[u], a_names[v]]))
            write = tile_inner
        # The register block: the reduction's innermost tile loops.
        a_names = [n for n, _ in anchor.spatial]
        inner = tile_inner if output is None else [a_names[u], a_names[v]]
        steps += vectorize_tile(k, inner, [rows, cols])
        init = [f"{anchor.name}_init.{n.split('.', 1)[1]}" for n in (a_names[u], a_names[v])]
        steps += vectorize_tile(k, init, [rows, cols])
        steps += vectorize_tile(k, write, [rows, cols])
        if config.get("unroll_reduce") and reduce_loops:
            steps.append(step("loop-unroll", k, loop=reduce_loops[-1]))
        if config["parallel"]:
            extent = dict(tiled.spatial)
            extent[tile_outer[0]] = -(-extent[names[u]] // rows)
            extent[tile_outer[1]] = -(-extent[names[v]] // cols)
            busy = [n for n in tile_loops if extent[n] > 1]
            if busy:
                steps.append(step("loop-parallel", k, loop=busy[0]))
        # Stages left outside the register-blocked nest (padding, ...) run in parallel too.
        done = {anchor.name, *(s.name for s in inlined)} | ({output.name} if output else set())
        for stage in info.stages:
            if stage.name not in done:
                steps += _outer_parallel_inner_vector(k, stage, {"vectorize": True, "parallel": config["parallel"]})
        steps.append(step("loop-simplify", k))
        return steps


    @staticmethod
    def _reduce_loops(anchor: Stage, config: dict) -> list[str]:
        """The reduction loops in the configured order."""
        order = config.get("reduce_order")
        names = [n for n, _ in anchor.reduce]
        chosen = order.split(",") if order else names
        return chosen if sorted(chosen) == sorted(names) else names

    def _packs(self, info: KernelInfo, anchor: Stage, v: int, cols: int,
               parallel: bool) -> list[str]:
        """Pack each operand read along axis `v` (the vector axis, or the rows) into
        `cols`-wide panels laid out one after the other (dense weights [N][K] ->
        [N/16][K][16], matmul B [K][N] -> [N/16][K][16], conv weights OIHW ->
        [O/16][I][H][W][16]): the reduction then reads each panel sequentially
        instead of 16 floats per row of a wide matrix. Constant operands (weights) are packed at compile time by
        loop-fold-constant-packs; others are copied per call (on all threads), which
        pays for itself unless few rows reuse a panel: an operand already contiguous
        along the axis is then read in place (a matrix-vector product)."""
        vector_axis = anchor.spatial[v][0]
        reduce = {name for name, _ in anchor.reduce}
        reuse = 1  # how many outputs read one panel
        for d, (_, extent) in enumerate(anchor.spatial):
            if d != v:
                reuse *= extent
        steps = []
        for arg, dims in anchor.reads:
            uses = [d for d, loops in enumerate(dims) if vector_axis in loops]
            if (len(uses) != 1 or dims[uses[0]] != {vector_axis} or cols == 1
                    or not any(loops & reduce for loops in dims)):
                continue
            split = uses[0]
            rest = [d for d in range(len(dims)) if d != split]
            # The panel index goes right before the first reduction-indexed dimension.
            at = next((i for i, d in enumerate(rest) if dims[d] & reduce), len(rest))
            order = rest[:at] + [split] + rest[at:] + [len(dims)]
            if split == len(dims) - 1 and (order == list(range(len(dims) + 1)) or reuse < 16):
                continue  # already contiguous along the axis, and too little reuse to copy
            steps.append(step("loop-pack", info.name, buffer=arg, split_dim=[split],
                              factor=[cols], order=order, parallel=parallel))
        return steps


class Injective(Template):
    """Elementwise, broadcast and layout kernels."""

    name = "injective"

    def applies(self, info: KernelInfo) -> bool:
        return not any(s.is_reduction for s in info.stages)

    def knobs(self, info: KernelInfo) -> dict[str, list]:
        return {"vectorize": [True, False], "parallel": [True, False]}

    def default_config(self, info: KernelInfo) -> dict:
        return {"vectorize": True, "parallel": worth_parallel(info)}

    def pipeline(self, info: KernelInfo, config: dict) -> list[str]:
        k = info.name
        steps = [step("loop-inline", k, stage=s.name) for s in info.stages if not s.is_output]
        for out in [s for s in info.stages if s.is_output]:
            steps += _outer_parallel_inner_vector(k, out, config)
        steps.append(step("loop-simplify", k))
        return steps


class Generic(Template):
    """Everything else: parallel outer loop, vectorized contiguous axis where legal."""

    name = "generic"

    def applies(self, info: KernelInfo) -> bool:
        return True

    def knobs(self, info: KernelInfo) -> dict[str, list]:
        return {"vectorize": [True, False], "parallel": [True, False]}

    def default_config(self, info: KernelInfo) -> dict:
        return {"vectorize": True, "parallel": worth_parallel(info)}

    def pipeline(self, info: KernelInfo, config: dict) -> list[str]:
        k = info.name
        steps = []
        for stage in info.stages:
            steps += _outer_parallel_inner_vector(k, stage, config)
        steps.append(step("loop-simplify", k))
        return steps


def _outer_parallel_inner_vector(k: str, stage: Stage, config: dict) -> list[str]:
    steps = []
    spatial = [(n, e) for n, e in stage.spatial]
    if not spatial:
        return steps
    last, extent = spatial[-1]
    renamed = {}  # loop name -> its outer part, for the axes that get split
    if config["vectorize"] and stage.is_reduction and _lanes_outside_reduction(stage):
        # Pooling over NCHW[x]c data, a sum over a leading axis: the contiguous axis
        # moves below the reduction loops and becomes the vector; each lane is a
        # separate reduction, kept in a register across the window.
        nests = [last] + ([f"{stage.name}_init.{last.split('.', 1)[1]}"] if stage.has_init else [])
        vectors = nests
        if extent not in (VECTOR, 2 * VECTOR):
            steps += [step("loop-split", k, loop=n, factor=VECTOR) for n in nests]
            vectors = [f"{n}.inner" for n in nests]
            renamed[last] = f"{last}.outer"
        steps.append(step("loop-reorder", k, order=[n for n, _ in stage.reduce] + vectors[:1]))
        steps += [step("loop-vectorize", k, loop=n) for n in vectors]
    elif config["vectorize"] and extent % VECTOR == 0 and not stage.is_reduction:
        steps.append(step("loop-split", k, loop=last, factor=VECTOR))
        steps.append(step("loop-vectorize", k, loop=f"{last}.inner"))
        renamed[last] = f"{last}.outer"
    if config["parallel"]:
        candidates = [n for n, e in spatial if e > 1]
        if candidates:
            steps.append(step("loop-parallel", k, loop=renamed.get(candidates[0], candidates[0])))
    return steps


def _lanes_outside_reduction(stage: Stage) -> bool:
    """Whether a reduction's last output axis can be its vector: a multiple of the
    vector width that no read slides along (so each lane reads its own contiguous
    element, as the channel block of NCHW[x]c pooling does)."""
    last, extent = stage.spatial[-1]
    return extent % VECTOR == 0 and last not in stage.windowed and all(
        dims and dims[-1] == {last} and not any(last in d for d in dims[:-1])
        for _, dims in stage.reads if any(last in d for d in dims))


TEMPLATES: list[Template] = [BlockedReduction(), Injective(), Generic()]
