"""The schedule templates, most specific first.

* `BlockedReduction` — conv2d, dense, matmul, batch matmul: TVM's x86 strategy. The
  output is tiled into an MR x NR register block (NR along the output's contiguous
  axis, in vectors of the machine model's lanes: 8 with AVX2, 16 with AVX-512); the reduction runs inside the tile with the accumulator
  in a local buffer that LLVM keeps in registers; epilogue stages (bias, ...) are
  inlined and computed on the tile while it is in registers; operands read with a
  stride along the vector axis are packed into NR-wide panels; the outermost tile
  loop runs in parallel. A long single reduction writing the output is blocked as
  in GotoBLAS (`k_block`, `m_block`): blocks of rows run in parallel, each visiting
  the output once per reduction block (`loop-cache-write{accumulate=true}`).
* `Injective` — elementwise/broadcast/layout kernels: producers inlined, the
  innermost axis vectorized, the outermost parallel.
* `Generic` — anything else (pooling, softmax pieces, ...): the outer spatial loop
  parallel and the contiguous axis vectorized where the accesses allow.

A configuration is a dict of knob values; `knobs(info)` declares the candidates a tuner
may choose from, `default_config(info)` is the untuned choice. Where the target runs
both 8- and 16-lane vectors (AVX-512), the `lanes` knob chooses the width; the default
is the machine model's (`info.machine.lanes`). An axis that the width does not divide
is vectorized in chunks of full vectors and a narrower tail (`vector_chunk`).
"""

from __future__ import annotations

import itertools
from abc import ABC, abstractmethod

from xweave.schedules.analysis import KernelInfo, Stage

VECTOR_UNIT = 8
"""Lanes of the narrowest vector a schedule builds from (a ymm register; a tail of a
16-lane axis): an axis is vectorized if it is a multiple of it."""
MAX_TAIL_VECTORS = 4
"""Vectors of a chunk with a narrower tail at most (`vector_chunk`)."""


def lanes_of(info: KernelInfo, config: dict | None = None) -> int:
    """f32 lanes of the vectors a configuration uses: its `lanes` knob, else the
    machine model's."""
    return (config or {}).get("lanes") or info.machine.lanes


def width_knob(info: KernelInfo) -> dict[str, list]:
    """The `lanes` knob, where the target runs 8- and 16-lane vectors (AVX-512)."""
    legal = [n for n in info.machine.legal_lanes if n >= VECTOR_UNIT]
    return {"lanes": legal} if len(legal) > 1 else {}


def default_width(info: KernelInfo) -> dict:
    """The `lanes` knob's default value, if the template has the knob."""
    return {"lanes": info.machine.lanes} if width_knob(info) else {}


def vector_chunk(extent: int, lanes: int) -> int | None:
    """The extent of the loop that one vectorized step of an axis of `extent` covers
    at `lanes`-wide vectors: `lanes` if it divides the axis, else the multiple of
    VECTOR_UNIT (or of `lanes`, if narrower) dividing it, of at most MAX_TAIL_VECTORS
    vectors, with the most full-width vectors: loop-vectorize peels its remainder as
    a narrower vector (24 at 16 lanes: 16 + 8; 1000: chunks of 40, 16 + 16 + 8).
    None if no vector fits (an odd extent)."""
    if extent % lanes == 0:
        return lanes
    unit = min(lanes, VECTOR_UNIT)
    fits = [c for c in range(unit, MAX_TAIL_VECTORS * lanes + 1, unit) if extent % c == 0]
    if not fits:
        return None
    return max(fits, key=lambda c: ((c // lanes) / -(-c // lanes), c))


def vectors_in(cols: int, lanes: int) -> int:
    """Vector registers holding `cols` lanes (a narrower tail counts as one)."""
    return max(1, -(-cols // lanes))

DEFAULT_BLOCK_REGISTERS = 15
"""Registers a default register block uses at most (accumulators + a vector of the
packed operand per column vector + a broadcast), whatever the register file holds; the
tuner's space takes blocks up to the whole file (the machine model's
`vector_registers`: 16 ymm registers, 32 with AVX-512). Larger default blocks on Zen 4 (up to 16 accumulators in
32 registers, 1 thread, alternating rounds with these) sped up lone NCHW convs
(ResNet-18 C1-C12 against onnxruntime: geomean 0.85 -> 0.96) but not whole models
(MobileNetV2 0.91x: its NCHW16c 1x1 convs with a clip epilogue 5-10% slower; ResNet-50
0.97x; ResNet-18, SqueezeNet, BERT even). A block needing more registers than the file
spills on every reduction step, and its unrolled tile takes LLVM tens of seconds to
compile (Zen 3, 14x14 tiles of 10 x 7 x 8: build timeouts at 30 s, 9-15 GFLOP/s when
they build, against 75 for the default)."""
MAX_UNROLLED_FMAS = 256
"""Vector FMAs of an unrolled reduction loop (`unroll_reduce`) at most: the register
block times the unrolled loop's extent (larger bodies took 5-15 s to build and ran no
faster)."""
MAX_NARROW_ROWS = 12
"""Rows of a one-vector register block at most, where two vectors are possible, on a
16-register file: 13 x 8 spills there (SqueezeNet 13x13 3x3 64->256 on one thread,
interleaved: 13 x 8 0.96 ms against 0.68 for a ragged 5 x 16). Its NCHW classifier
(1000 channels: 8-column blocks only) ran 3.54 ms with a ragged 7 x 8 against 3.11 ms
for 13 x 8, so it keeps 13 x 8. A 32-register file (AVX-512) holds 13 x 16 with room
to spare: that classifier runs it 1.7x faster than a ragged 2 x 32 (bench/README.md)."""
RAGGED_BELOW = 0.9
"""With an epilogue, ragged row tiles are considered only when no dividing block scores
this well: 27x27 (SqueezeNet 3x3 32->128) runs 9 x 8 (0.90) at 0.60 ms against 0.63
for a ragged 4 x 16 (0.96); 7x7 (0.875 for 7 x 8) runs a ragged 4 x 16 15-35% faster."""
RAGGED_MAX_EXTENT = 16
"""...and only over at most this many rows (7x7, 13x13): SqueezeNet's NCHW conv1
(111 wide) ran 3.54 ms with a ragged 4 x 16 against 3.11 ms for 3 x 3 x 8."""
RAGGED_FALLBACK = 0.6
"""...unless the dividing blocks are this poor (a prime row count such as ViT's 197
tokens divides only into 1-row tiles, which run a third of the FMA rate)."""
STREAM_MIN_ROWS = 4
"""Reduction steps a matrix-vector product's K blocks take at least (`_streamed`): the
output vectors are loaded and stored once per block, around this many FMAs each."""
STREAM_MIN_BYTES = 4096
"""Contiguous bytes of each matrix row a column block of a matrix-vector product reads
at least (a page: the hardware prefetcher does not cross one)."""
ROW_BLOCK_L3_SHARE = 4
"""Below K blocking, the rows are blocked (m_block) when the row operand is bigger
than L3 / this: a block of it is re-read from L3 by every column panel, instead of the
whole operand from memory (bench/HISTORY.md: 2048^3 matmul)."""


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


BALANCED_EXTENT = 32
"""A parallel loop of fewer iterations than this, an odd number of them, leaves a thread
idle at its end (9 iterations on 2 threads: 5 and 4, a tenth of the kernel lost); it is
fused with the loops inside it first (9 x 56 iterations: 252 each)."""


def parallel_steps(k: str, loops: list[str], extents: list[int]) -> list[str]:
    """`loop-parallel` on the first loop of extent > 1 of a perfect nest (`loops`,
    outermost first). When its iterations split unevenly (an odd count below
    `BALANCED_EXTENT`), it is `loop-fuse`d first with the loops inside it, down to the
    next loop of extent > 1, and the fused loop runs in parallel."""
    busy = [i for i, e in enumerate(extents) if e > 1]
    if not busy:
        return []
    first = busy[0]
    n = extents[first]
    if not (n % 2 and n < BALANCED_EXTENT and len(busy) > 1):
        return [step("loop-parallel", k, loop=loops[first])]
    steps, name = [], loops[first]
    for i, inner in enumerate(loops[first + 1:busy[1] + 1]):
        fused = f"{loops[first]}.balanced{i}"
        steps.append(step("loop-fuse", k, outer=name, inner=inner, fused_name=fused))
        name = fused
    return steps + [step("loop-parallel", k, loop=name)]


def divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def vectorize_tile(kernel: str, names: list[str], extents: list[int], lanes: int) -> list[str]:
    """Vectorize the last loop of a tile by `lanes`-wide vectors (`vector_chunk`) and
    unroll the rest of it, so every index into a local buffer is a constant
    (registers, not memory)."""
    *outer, last = names
    *outer_extents, last_extent = extents
    steps = []
    chunk = vector_chunk(last_extent, lanes)
    if chunk is not None:
        if last_extent > chunk:
            steps.append(step("loop-split", kernel, loop=last, factor=chunk))
            steps.append(step("loop-vectorize", kernel, loop=f"{last}.inner", lanes=lanes))
            steps.append(step("loop-unroll", kernel, loop=f"{last}.outer"))
        else:
            steps.append(step("loop-vectorize", kernel, loop=last, lanes=lanes))
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

    def valid(self, info: KernelInfo, config: dict) -> bool:
        """Whether a configuration is worth building: a tuner never proposes one that
        is not (its space is constrained by it)."""
        return True


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
        return anchor.spatial[v][1] >= min(VECTOR_UNIT, info.machine.lanes)

    def _axes(self, anchor: Stage) -> tuple[int, int]:
        """Positions (in the spatial axes) of the register-block rows and vector axis.

        The vector axis is one no read slides along (a window index such as `y + ry`
        would need unaligned or strided vectors), a multiple of 8 where possible (at
        any vector width: the axes do not change with the `lanes` knob), the
        last such axis on ties: the output channels of a conv (the weights, packed,
        give contiguous vectors; the input is broadcast, whatever the stride), the
        columns of a matmul. The rows are the innermost other axis of extent > 1."""
        spatial = [n for n, _ in anchor.spatial]
        v = max(range(len(spatial)), key=lambda d: (
            spatial[d] not in anchor.windowed, anchor.spatial[d][1] % VECTOR_UNIT == 0,
            anchor.spatial[d][1] >= VECTOR_UNIT, d))
        others = [d for d in range(len(spatial)) if d != v and anchor.spatial[d][1] > 1]
        u = others[-1] if others else next(d for d in range(len(spatial)) if d != v)
        return u, v

    def _outer_rows_axis(self, anchor: Stage) -> int | None:
        """The axis whose tile multiplies the register block's rows (`tile_rows_outer`):
        the next axis of extent > 1 outside the rows, if the operand giving the column
        vectors does not depend on it either (the output rows y of a conv whose rows
        are its columns x: a 2x2 block of pixels where no row count dividing 14 fits
        the registers; not the batch of a batch matmul, whose vectors change with it)."""
        u, v = self._axes(anchor)
        names = [n for n, _ in anchor.spatial]
        outer = [d for d in range(len(names)) if d not in (u, v) and anchor.spatial[d][1] > 1]
        if not outer or outer[-1] > u:
            return None
        w = names[outer[-1]]
        for _, dims in anchor.reads:
            used = set().union(*dims) if dims else set()
            if names[v] in used and names[u] not in used and w in used:
                return None
        return outer[-1]

    def knobs(self, info: KernelInfo) -> dict[str, list]:
        anchor = info.anchor
        u, v = self._axes(anchor)
        # Columns: whole vectors of the widest legal width, or a narrower tail, up to
        # 8 vectors (and the `lanes` knob's narrower widths then fit them too).
        widest = max(width_knob(info).get("lanes", [info.machine.lanes]))
        unit = min(VECTOR_UNIT, widest)
        columns = anchor.spatial[v][1]
        nv = [n for n in range(unit, 8 * widest + 1, unit) if columns % n == 0]
        # No vector divides the axis (197, 116, 58), or only narrower ones do (232 and
        # 1000 at 16 lanes: 8-column tiles use half of each FMA): whole vectors of the
        # widest width with a ragged last column tile.
        ragged = (unit, widest, 2 * widest) if not nv else (
            (widest, 2 * widest) if columns % widest else ())
        nv += [n for n in ragged if n not in nv and n < 2 * columns]
        mu = list(range(1, min(16, anchor.spatial[u][1]) + 1))
        reduce = [n for n, _ in anchor.reduce]
        first = anchor.reduce[0][1] if anchor.reduce else 1
        w = self._outer_rows_axis(anchor)
        # (only whole tiles: a ragged one would be guarded around the pixel block)
        mw = [1] if w is None else [d for d in divisors(anchor.spatial[w][1]) if d <= 8]
        smallest_k_block = STREAM_MIN_ROWS if self._streamed(info) else 32
        return {"tile_rows": mu, "tile_cols": nv, "tile_rows_outer": mw, "parallel": [True, False],
                # the order of the reduction loops inside a tile (rc,ry,rx / ry,rx,rc...)
                "reduce_order": [",".join(p) for p in itertools.permutations(reduce)][:24],
                # split the outermost reduction loop: its outer part runs first, the
                # inner part innermost (the panel slice a tile reads stays in L1)
                "reduce_split": [f for f in divisors(first) if f <= 64],
                "unroll_reduce": [False, True], "pack_rows": [True, False],
                # GotoBLAS blocking of a single reduction (0: off): k_block reduction
                # steps per pass over the output, m_block rows per block of the other
                # operand (rounded down to whole row tiles dividing the rows)
                "k_block": [0] + ([f for f in divisors(first) if smallest_k_block <= f < first]
                                  if self._k_blockable(info) else []),
                "m_block": [0] + ([64, 128, 192, 256, 384, 512]
                                  if self._k_blockable(info) else []),
                **width_knob(info)}

    def valid(self, info: KernelInfo, config: dict) -> bool:
        """The register block fits the register file, an unrolled reduction loop
        stays under MAX_UNROLLED_FMAS, and a ragged last row tile can be computed:
        under an epilogue only whole (on packed rows, `_ragged_rows_ok`), and never
        inside a block of outer rows (it would be guarded around the block)."""
        vectors = vectors_in(config["tile_cols"], lanes_of(info, config))
        outer = config.get("tile_rows_outer", 1)
        block = outer * config["tile_rows"] * vectors
        if block + vectors + 1 > info.machine.vector_registers:
            return False
        anchor = info.anchor
        if anchor.spatial[self._axes(anchor)[0]][1] % config["tile_rows"]:
            if outer > 1:
                return False
            if _epilogue(info, anchor)[1] is not None and not (
                    config.get("pack_rows", True) and self._ragged_rows_ok(info)):
                return False
        if config.get("unroll_reduce"):
            reduce = dict(info.anchor.reduce)
            loops = self._reduce_loops(info.anchor, config)
            split = config.get("reduce_split", 1)
            unrolled = split if split > 1 else reduce[loops[-1]] if loops else 1
            return block * unrolled <= MAX_UNROLLED_FMAS
        return True

    @staticmethod
    def _k_blockable(info: KernelInfo) -> bool:
        """K blocking applies to a contraction with one reduction writing the output
        (no epilogue computed on the tile)."""
        anchor = info.anchor
        return anchor.is_output and len(anchor.reduce) == 1

    def _streamed(self, info: KernelInfo) -> bool:
        """A matrix-vector product reading its matrix in place (a single row of output,
        so no panel of the matrix is worth packing): K-blocked, it streams whole rows
        of the matrix instead of reading a column tile's few lines from every row (a
        page apart: the prefetcher does not follow, each line waits for L3)."""
        if not self._k_blockable(info):
            return False
        anchor = info.anchor
        u, v = self._axes(anchor)
        return anchor.spatial[u][1] == 1 and not self._pack_plan(
            info, anchor, v, 2 * info.machine.lanes, False)

    def default_config(self, info: KernelInfo) -> dict:
        """The register block (rows x cols outputs) that keeps the FMA units busiest:
        its accumulators, a vector of the packed operand per column vector and a
        broadcast must fit DEFAULT_BLOCK_REGISTERS; it needs the machine's
        `accumulators_to_hide_latency` independent accumulators (FMA pipes x latency:
        8 on Zen 3, 4 for zmm FMAs on Zen 4) and no more loads than FMAs per step (2
        loads a cycle); rows that do not divide the axis waste the last tile's
        overshoot, as lanes of a narrower tail vector do. At most 2 vectors of columns
        (wider panels measured slower) and a narrower tail, except for a single row (a matrix-vector
        product: its only independent accumulators are column vectors); on ties 2
        vectors, then the larger block (less memory traffic per FMA)."""
        knobs = self.knobs(info)
        anchor = info.anchor
        extent = anchor.spatial[self._axes(anchor)[0]][1]
        columns = anchor.spatial[self._axes(anchor)[1]][1]
        w = self._outer_rows_axis(anchor)
        outer_extent = anchor.spatial[w][1] if w is not None else 1
        lanes = info.machine.lanes
        chains = info.machine.accumulators_to_hide_latency

        def used(n: int, size: int) -> float:
            return n / (-(-n // size) * size)

        def score(outer: int, rows: int, cols: int) -> tuple[float, int]:
            vectors = vectors_in(cols, lanes)
            fmas, loads = outer * rows * vectors, outer * rows + vectors
            busy = min(1.0, fmas / loads, fmas / chains)
            lanes_used = cols / (vectors * lanes)
            return (round(busy * used(extent, rows) * used(outer_extent, outer) * lanes_used
                          * used(columns, cols), 2), outer * rows * cols)

        def registers(rows: int, cols: int) -> int:
            vectors = vectors_in(cols, lanes)
            return rows * vectors + vectors + 1

        def wide_enough(cols: int) -> bool:
            """At most 2 full vectors of columns, and a narrower tail (40 at 16 lanes)."""
            return cols <= 2 * lanes or (cols % lanes != 0 and cols < 3 * lanes)

        # With an epilogue, the anchor is computed at the output's tile through bound
        # inference: a ragged last tile computes whole (loop-compute-at{overcompute})
        # if its rows' reads can stay in bounds, else it would guard the whole
        # reduction (measured 5x slower) and only dividing rows are taken.
        rows_choices = knobs["tile_rows"]
        outer_choices = knobs["tile_rows_outer"]
        # A pointwise conv (1x1 windows) reuses no input across a block of pixel rows:
        # rows alone do better, reading row panels packed for a ragged last tile (14x14,
        # 1024 -> 256: 5 x 16 at 1.27x the speed of 2 x 2 x 16).
        windows = {n for n, _ in anchor.reduce if n in anchor.windowed}
        if windows and all(anchor.extent(n) == 1 for n in windows):
            outer_choices = [1]
        roomy = info.machine.vector_registers > DEFAULT_BLOCK_REGISTERS + 1  # no spill at 15
        epilogue = _epilogue(info, anchor)[1] is not None
        ragged_ok = not epilogue or self._ragged_rows_ok(info)
        if not ragged_ok:
            rows_choices = [r for r in rows_choices if extent % r == 0]
        # Rows of the outer axis too (a y x x block of pixels) only where they do
        # better than rows alone (14x14 images: 2x2x16 instead of 7x8); a ragged outer
        # tile is never chosen. On ties, columns that divide the axis (no guarded tile).
        fitting = [(score(o, r, c)[0], columns % c == 0, -abs(c - 2 * lanes), score(o, r, c)[1], -o,
                    extent % r == 0, c, r, o)
                   for o in outer_choices for r in rows_choices for c in knobs["tile_cols"]
                   if registers(o * r, c) <= DEFAULT_BLOCK_REGISTERS and (wide_enough(c) or extent == 1)
                   and outer_extent % o == 0 and (o == 1 or extent % r == 0)
                   and (c > lanes or o * r <= MAX_NARROW_ROWS or roomy
                        or 2 * lanes not in knobs["tile_cols"])]
        dividing = [f for f in fitting if f[5]]
        if epilogue and dividing and (max(dividing)[0] >= RAGGED_BELOW or (
                extent > RAGGED_MAX_EXTENT and max(dividing)[0] >= RAGGED_FALLBACK)):
            fitting = dividing
        *_, cols, rows, outer_rows = max(fitting) if fitting else (
            0, 0, 0, 0, True, knobs["tile_cols"][0], 1, 1)
        k_block, m_block = self._default_blocks(info, rows, cols)
        return {"tile_rows": rows, "tile_cols": cols, "tile_rows_outer": outer_rows,
                "parallel": worth_parallel(info),
                "reduce_order": self._default_reduce_order(info, rows * outer_rows),
                "reduce_split": 1,
                "unroll_reduce": False, "pack_rows": True,
                "k_block": k_block, "m_block": m_block, **default_width(info)}

    def _ragged_rows_ok(self, info: KernelInfo) -> bool:
        """Whether a ragged last row tile can compute whole: every kernel argument the
        anchor reads along its rows gets packed into panels padded to whole tiles
        (temporaries such as a padded input are grown by loop-compute-at instead)."""
        anchor = info.anchor
        u, v = self._axes(anchor)
        row = anchor.spatial[u][0]
        columns = {arg for arg, _ in self._pack_plan(info, anchor, v, 2 * info.machine.lanes, False)}
        packed = {arg for arg, _ in self._pack_plan(info, anchor, u, 2, False, unit_windows=True)
                  if arg not in columns}
        return all(arg in packed for arg, dims in anchor.reads
                   if any(row in loops for loops in dims))

    def _default_blocks(self, info: KernelInfo, rows: int, cols: int) -> tuple[int, int]:
        """GotoBLAS blocks: a kc x cols slice of a packed column panel fills half of L1
        (it is read by every row tile of a block), an mc x kc block of the row operand
        half of L2 (it is read by every column panel). Only when a whole panel would
        not stay in L2 (K x cols floats at least L2's size: below, the panel stays in L2
        while the row tiles stream past it, and blocking only adds passes over the
        output); below, row blocks of at most L3 / ROW_BLOCK_L3_SHARE of the row operand
        when it is bigger than that."""
        if not self._k_blockable(info):
            return 0, 0
        extent = info.anchor.reduce[0][1]
        machine = info.machine
        if self._streamed(info):
            # K blocks of a matrix-vector product: as many matrix rows as fill half of
            # L1 (the output row stays there between blocks), at least STREAM_MIN_ROWS.
            row_bytes = info.anchor.spatial[self._axes(info.anchor)[1]][1] * 4
            blocks = [f for f in self.knobs(info)["k_block"] if f]
            fitting = [f for f in blocks if f * row_bytes <= machine.l1_bytes // 2]
            return (max(fitting) if fitting else min(blocks, default=0)), 0
        row_block_bytes = machine.l3_bytes // ROW_BLOCK_L3_SHARE
        if extent * cols * 4 < machine.l2_bytes:
            # Row blocks only, once the row operand no longer stays in L3 while the
            # column panels go by (the panels are then re-read once per row block).
            rows_total = info.anchor.spatial[self._axes(info.anchor)[0]][1]
            if rows_total * extent * 4 <= row_block_bytes:
                return 0, 0
            m_blocks = [m for m in self.knobs(info)["m_block"] if m]
            return 0, max([m for m in m_blocks if m * extent * 4 <= row_block_bytes]
                          or m_blocks[:1])
        fits = [f for f in self.knobs(info)["k_block"] if f and f * cols * 4 <= machine.l1_bytes // 2]
        if not fits:
            return 0, 0
        k_block = max(fits)
        rows_in_l2 = machine.l2_bytes // 2 // (k_block * 4)
        m_blocks = [m for m in self.knobs(info)["m_block"] if m]
        return k_block, max([m for m in m_blocks if m <= rows_in_l2] or m_blocks[:1])

    def pipeline(self, info: KernelInfo, config: dict) -> list[str]:
        k = info.name
        anchor = info.anchor
        u, v = self._axes(anchor)
        rows, cols = config["tile_rows"], config["tile_cols"]
        lanes = lanes_of(info, config)
        inlined, output = _epilogue(info, anchor)
        steps = [step("loop-inline", k, stage=s.name) for s in inlined]
        # The stage whose loops carry the tiling: the output (epilogue) or the anchor.
        tiled = output or anchor
        names = [n for n, _ in tiled.spatial]
        # The register block's axes, outermost first: (outer rows,) rows, vector.
        w = self._outer_rows_axis(anchor)
        outer_rows = config.get("tile_rows_outer", 1) if w is not None else 1
        block = ([w] if outer_rows > 1 else []) + [u, v]
        sizes = ([outer_rows] if outer_rows > 1 else []) + [rows, cols]
        # A ragged last row tile is guarded around the innermost body, so the tile
        # loops stay perfectly nested (reorder, unroll); LLVM hoists the guard.
        for d, size in zip(block, sizes):
            ragged = {"guard": "innermost"} if tiled.extent(names[d]) % size else {}
            steps.append(step("loop-split", k, loop=names[d], factor=size, **ragged))
        column_packs = self._pack_plan(info, anchor, v, cols, config["parallel"])
        steps += [s for _, s in column_packs]
        if config.get("pack_rows", True):
            # A ragged row tile reads its rows from a panel padded to whole tiles, also
            # through a 1x1 window (`x + rx`, rx < 1): its reduction then runs unguarded.
            # An operand read along both axes (the weights of a conv on 1x1 pixels,
            # whose rows are output channel blocks) keeps its column panels.
            steps += [s for arg, s in self._pack_plan(
                info, anchor, u, rows, config["parallel"],
                unit_windows=bool(anchor.spatial[u][1] % rows))
                if arg not in {a for a, _ in column_packs}]
        reduce_loops = self._reduce_loops(anchor, config)
        blocks = self._blocks(info, config, rows)
        if blocks is not None:
            return steps + self._blocked_pipeline(info, config, blocks)
        split = config.get("reduce_split", 1)
        reduce_extent = dict(anchor.reduce)
        if split > 1 and reduce_loops:
            steps.append(step("loop-split", k, loop=reduce_loops[0], factor=split))
            first = reduce_loops[0]
            reduce_extent |= {f"{first}.outer": -(-reduce_extent[first] // split),
                              f"{first}.inner": split}
            reduce_loops = [f"{first}.outer", *reduce_loops[1:], f"{first}.inner"]
        tile_inner = [f"{names[d]}.inner" for d in block]
        reduce = reduce_loops if output is None else []
        # Column panels outermost: one panel of the packed operand (weights) stays in
        # cache while every row tile of the other axes streams past it.
        tile_loops = [f"{names[v]}.outer"] + [f"{n}.outer" if d in block else n
                                              for d, n in enumerate(names) if d not in (u, v)]
        tile_loops.append(f"{names[u]}.outer")
        steps.append(step("loop-reorder", k, order=tile_loops + reduce + tile_inner))
        at = f"{names[u]}.outer"
        # The register block is laid out rows x vector lanes, whatever the output layout.
        order = [d for d in range(len(names)) if d not in block] + block
        a_names = [n for n, _ in anchor.spatial]
        # A ragged last tile computes whole (past the end on the grown padded input, or
        # the packed rows); only its write-back and epilogue are guarded.
        ragged = any(tiled.extent(names[d]) % size for d, size in zip(block, sizes))
        if output is None:
            steps.append(step("loop-cache-write", k, stage=anchor.name, at=at, order=order))
            write = [f"{anchor.name}_write.{names[d].split('.', 1)[1]}" for d in block]
        else:
            steps.append(step("loop-compute-at", k, stage=anchor.name, at=at, scope="local",
                              order=order, **({"overcompute": True} if ragged else {})))
            steps.append(step("loop-reorder", k, order=reduce_loops + [a_names[d] for d in block]))
            write = tile_inner
        if output is None and reduce_loops and anchor.spatial[v][1] % cols:
            # A ragged column tile reads padded panels: its reduction runs unguarded
            # (before vectorizing, which would turn the guard into a lane-by-lane branch).
            steps.append(step("loop-unguard", k, loop=reduce_loops[-1], grow=True))
        # The register block: the reduction's innermost tile loops.
        inner = tile_inner if output is None else [a_names[d] for d in block]
        steps += vectorize_tile(k, inner, sizes, lanes)
        init = [f"{anchor.name}_init.{a_names[d].split('.', 1)[1]}" for d in block]
        steps += vectorize_tile(k, init, sizes, lanes)
        steps += vectorize_tile(k, write, sizes, lanes)
        if ragged and output is None and reduce_loops:
            steps.append(step("loop-unguard", k, loop=reduce_loops[-1], grow=True))
        if config.get("unroll_reduce") and reduce_loops:
            steps.append(step("loop-unroll", k, loop=reduce_loops[-1]))
        if config["parallel"]:
            extent = dict(tiled.spatial)
            for d, size in zip(block, sizes):
                extent[f"{names[d]}.outer"] = -(-extent[names[d]] // size)
            steps += parallel_steps(k, tile_loops, [extent[n] for n in tile_loops])
        # Stages left outside the register-blocked nest (padding, ...) run in parallel too.
        done = {anchor.name, *(s.name for s in inlined)} | ({output.name} if output else set())
        for stage in info.stages:
            if stage.name not in done:
                steps += _outer_parallel_inner_vector(
                    k, stage, {"vectorize": True, "parallel": config["parallel"]}, lanes)
        steps.append(step("loop-simplify", k))
        # The epilogue's operand lines arrive while the reduction runs: in front of the
        # outermost reduction loop that is left (after simplify, which removes loops of
        # one iteration and leaves the write-back as straight-line code).
        unrolled = reduce_loops[-1:] if config.get("unroll_reduce") else []
        kept = [n for n in reduce_loops if reduce_extent[n] > 1 and n not in unrolled]
        if kept:
            steps.append(step("loop-prefetch", k, loop=kept[0]))
        return steps


    def _blocks(self, info: KernelInfo, config: dict, rows: int) -> tuple[int, int] | None:
        """(k_block, row tiles per block) if the configuration blocks the kernel: K
        blocking (k_block > 0), or row blocks only (k_block = 0, m_block > 0)."""
        k_block = config.get("k_block", 0)
        if not self._k_blockable(info) or not (k_block or config.get("m_block")):
            return None
        extent = info.anchor.reduce[0][1]
        if k_block and (extent % k_block or k_block >= extent):
            return None
        u, _ = self._axes(info.anchor)
        tiles = -(-info.anchor.spatial[u][1] // rows)
        want = max(1, config.get("m_block", 0) // rows) if config.get("m_block") else tiles
        fits = [d for d in divisors(tiles) if d <= want]
        # The blocks run in parallel: an even count, or enough that one more is cheap.
        even = [d for d in fits if (tiles // d) % 2 == 0 or tiles // d >= 16]
        per_block = max(even or fits)
        if not k_block and per_block == tiles:
            return None
        return k_block, per_block

    def _blocked_pipeline(self, info: KernelInfo, config: dict,
                          blocks: tuple[int, int]) -> list[str]:
        """The rest of `pipeline` for GotoBLAS blocking: the reduction split by k_block,
        the row tiles grouped in blocks of `per_block`, loop order
        (batch) > row block > k.outer > column panel > row tile > k.inner > tile, and
        the register block cached with `accumulate` (partial sums added to the output
        at each k.outer step; the init nest zeroes the whole output once). Without
        k_block, only the row blocks: (batch) > row block > column panel > row tile >
        k > tile, the block of the row operand staying in L3 across the panels."""
        k = info.name
        anchor = info.anchor
        u, v = self._axes(anchor)
        rows, cols = config["tile_rows"], config["tile_cols"]
        lanes = lanes_of(info, config)
        k_block, per_block = blocks
        names = [n for n, _ in anchor.spatial]
        (reduce, _), = anchor.reduce
        steps = [step("loop-split", k, loop=reduce, factor=k_block)] if k_block else []
        k_outer = [f"{reduce}.outer"] if k_block else []
        k_inner = f"{reduce}.inner" if k_block else reduce
        rows_outer = f"{names[u]}.outer"
        tiles = -(-anchor.spatial[u][1] // rows)
        row_loops = [rows_outer]
        if per_block < tiles:
            steps.append(step("loop-split", k, loop=rows_outer, factor=per_block))
            row_loops = [f"{rows_outer}.outer", f"{rows_outer}.inner"]
        outer = [n for d, n in enumerate(names) if d not in (u, v)]
        cols_outer = f"{names[v]}.outer"
        tile_inner = [f"{names[u]}.inner", f"{names[v]}.inner"]
        column_blocks = []
        if k_block and self._streamed(info):
            # Blocks of column tiles outside k.outer, in parallel: each thread streams
            # its part of every row, and a call forks once, not once per K block.
            col_tiles = -(-anchor.spatial[v][1] // cols)
            per = next(d for d in divisors(col_tiles)
                       if d * cols * 4 >= STREAM_MIN_BYTES or d == col_tiles)
            if per < col_tiles:
                steps.append(step("loop-split", k, loop=cols_outer, factor=per))
                column_blocks = [f"{cols_outer}.outer"]
                cols_outer = f"{cols_outer}.inner"
        order = [*outer, *column_blocks, *row_loops[:-1], *k_outer, cols_outer, row_loops[-1],
                 k_inner, *tile_inner]
        steps.append(step("loop-reorder", k, order=order))
        layout = [d for d in range(len(names)) if d not in (u, v)] + [u, v]
        axes = [n.split(".", 1)[1] for n in (names[u], names[v])]
        init = [f"{anchor.name}_init.{n.split('.', 1)[1]}" for n in names]
        if k_block:
            steps.append(step("loop-cache-write", k, stage=anchor.name, at=row_loops[-1],
                              order=layout, accumulate=True))
            # The partial sums start from zero: the output is read at the write-back,
            # not in front of the reduction (its FMA chains would wait for the load).
            steps.append(step("loop-defer-accumulate", k, stage=anchor.name))
            nests = ("read", "write")
        else:  # the init nest moves into the tile and zeroes the register block
            steps.append(step("loop-cache-write", k, stage=anchor.name, at=row_loops[-1],
                              order=layout))
            nests = ("init", "write")
        if anchor.spatial[v][1] % cols:
            steps.append(step("loop-unguard", k, loop=k_inner))
        steps += vectorize_tile(k, tile_inner, [rows, cols], lanes)
        for nest in nests:
            steps += vectorize_tile(k, [f"{anchor.name}_{nest}.{a}" for a in axes], [rows, cols], lanes)
        # The init nest zeroes the whole output: vector stores along the contiguous axis.
        chunk = vector_chunk(anchor.spatial[-1][1], lanes)
        if k_block and chunk is not None:
            steps.append(step("loop-split", k, loop=init[-1], factor=chunk))
            steps.append(step("loop-vectorize", k, loop=f"{init[-1]}.inner", lanes=lanes))
        if config.get("unroll_reduce"):
            steps.append(step("loop-unroll", k, loop=k_inner))
        elif anchor.spatial[u][1] % rows:
            # A ragged last row tile: the reduction need not test each row when the row
            # operand is packed (padded to whole tiles) and the write-back is guarded;
            # LLVM does not always unswitch those tests out of the loop.
            steps.append(step("loop-unguard", k, loop=k_inner))
        if config["parallel"]:
            extent = dict(anchor.spatial)
            busy = [n for n in outer if extent[n] > 1]
            # K blocking: the row blocks in parallel (parallel column panels under
            # k.outer fork per block and step: measured 2x slower); row blocks only:
            # the column panels, so that the threads share the row block in cache.
            # (A matrix-vector product's rows too short to split run on one thread.)
            loop = (busy[0] if busy else column_blocks[0] if column_blocks else
                    None if k_block and self._streamed(info) else
                    row_loops[0] if k_block and len(row_loops) > 1 else cols_outer)
            if loop is not None:
                steps.append(step("loop-parallel", k, loop=loop))
            if k_block and anchor.spatial[0][1] > 1:
                steps.append(step("loop-parallel", k, loop=init[0]))
        for stage in info.stages:
            if stage is not anchor:
                steps += _outer_parallel_inner_vector(
                    k, stage, {"vectorize": True, "parallel": config["parallel"]}, lanes)
        steps.append(step("loop-simplify", k))
        return steps

    @staticmethod
    def _default_reduce_order(info: KernelInfo, rows: int) -> str:
        """The reduction loops in te order (TVM's rc, ry, rx, rb for a blocked conv),
        except that a blocked conv with 9+ tile rows runs its input-lane loop rb
        before rx: LLVM interleaves the 16-step rb loop of a tall tile and spills
        registers (SqueezeNet 3x3 at 27x27: 1.11 -> 0.65 ms; ~10% slower on
        short tiles)."""
        names = [n for n, _ in info.anchor.reduce]
        if len(names) == 4 and rows >= 9:
            names = [names[0], names[1], names[3], names[2]]
        return ",".join(names)

    @staticmethod
    def _reduce_loops(anchor: Stage, config: dict) -> list[str]:
        """The reduction loops in the configured order."""
        order = config.get("reduce_order")
        names = [n for n, _ in anchor.reduce]
        chosen = order.split(",") if order else names
        return chosen if sorted(chosen) == sorted(names) else names

    def _packs(self, info: KernelInfo, anchor: Stage, v: int, cols: int,
               parallel: bool, unit_windows: bool = False) -> list[str]:
        """The `loop-pack` steps of `_pack_plan`."""
        return [s for _, s in self._pack_plan(info, anchor, v, cols, parallel, unit_windows)]

    def _pack_plan(self, info: KernelInfo, anchor: Stage, v: int, cols: int,
                   parallel: bool, unit_windows: bool = False) -> list[tuple[int, str]]:
        """Pack each operand read along axis `v` (the vector axis, or the rows) into
        `cols`-wide panels laid out one after the other (dense weights [N][K] ->
        [N/16][K][16], matmul B [K][N] -> [N/16][K][16], conv weights OIHW ->
        [O/16][I][H][W][16]): the reduction then reads each panel sequentially
        instead of 16 floats per row of a wide matrix. Constant operands (weights) are packed at compile time by
        loop-fold-constant-packs; others are copied per call (on all threads), which
        pays for itself unless few rows reuse a panel: an operand already contiguous
        along the axis is then read in place (a matrix-vector product). With
        `unit_windows`, or where the axis is the operand's innermost dimension, a read
        through a window of extent 1 (`x + rx` of a 1x1 conv) counts as a read along
        the axis."""
        vector_axis = anchor.spatial[v][0]
        reduce = {name for name, _ in anchor.reduce}
        reuse = 1  # how many outputs read one panel
        for d, (_, extent) in enumerate(anchor.spatial):
            if d != v:
                reuse *= extent
        steps = []
        for arg, dims in anchor.reads:
            if unit_windows or (dims and vector_axis in dims[-1]):
                # (the rows of an NCHW 1x1 conv are its input's innermost dimension:
                # unpacked, each reduction step reads a line one image plane away)
                dims = [{n for n in loops if n == vector_axis or anchor.extent(n) > 1}
                        for loops in dims]
            uses = [d for d, loops in enumerate(dims) if vector_axis in loops]
            if (len(uses) != 1 or dims[uses[0]] != {vector_axis} or cols == 1
                    or not any(loops & reduce for loops in dims)):
                continue
            split = uses[0]
            rest = [d for d in range(len(dims)) if d != split]
            # The panel index goes after the dimensions no reduction indexes (the rows
            # of a 1x1 conv's input, so that a tile's reduction reads one contiguous
            # panel) and before the others.
            spatial = [d for d in rest if not dims[d] & reduce]
            order = spatial + [split] + [d for d in rest if dims[d] & reduce] + [len(dims)]
            if split == len(dims) - 1 and (order == list(range(len(dims) + 1)) or reuse < 16):
                continue  # already contiguous along the axis, and too little reuse to copy
            steps.append((arg, step("loop-pack", info.name, buffer=arg, split_dim=[split],
                                    factor=[cols], order=order, parallel=parallel)))
        return steps


class _ParallelVectorTemplate(Template):
    """A template whose stages are scheduled by `_outer_parallel_inner_vector`: its knobs
    are whether to vectorize, whether to parallelize and the vector width."""

    def knobs(self, info: KernelInfo) -> dict[str, list]:
        return {"vectorize": [True, False], "parallel": [True, False], **width_knob(info)}

    def default_config(self, info: KernelInfo) -> dict:
        return {"vectorize": True, "parallel": worth_parallel(info), **default_width(info)}


class Injective(_ParallelVectorTemplate):
    """Elementwise, broadcast and layout kernels."""

    name = "injective"

    def applies(self, info: KernelInfo) -> bool:
        return not any(s.is_reduction for s in info.stages)

    def pipeline(self, info: KernelInfo, config: dict) -> list[str]:
        k = info.name
        steps = [step("loop-inline", k, stage=s.name) for s in info.stages if not s.is_output]
        for out in [s for s in info.stages if s.is_output]:
            if len(info.stages) > 1 and out.spatial:
                # Inlined reshapes index through a flattened offset: `(c * 784 + x) mod 28`
                # is `x` over the loop ranges (a channel shuffle becomes a row copy).
                steps.append(step("loop-simplify-indices", k, loop=out.spatial[0][0]))
            steps += _outer_parallel_inner_vector(k, out, config, lanes_of(info, config))
        steps.append(step("loop-simplify", k))
        return steps


class Generic(_ParallelVectorTemplate):
    """Everything else: parallel outer loop, vectorized contiguous axis where legal."""

    name = "generic"

    def applies(self, info: KernelInfo) -> bool:
        return True

    def pipeline(self, info: KernelInfo, config: dict) -> list[str]:
        k = info.name
        steps = []
        for stage in info.stages:
            steps += _outer_parallel_inner_vector(k, stage, config, lanes_of(info, config))
        steps.append(step("loop-simplify", k))
        return steps


def _outer_parallel_inner_vector(k: str, stage: Stage, config: dict, lanes: int) -> list[str]:
    """The stage's contiguous axis vectorized by `lanes`-wide vectors (`vector_chunk`),
    its outer loop (or loops, `parallel_steps`) parallel, as `config` says."""
    steps = []
    spatial = [(n, e) for n, e in stage.spatial]
    if not spatial:
        return steps
    last, extent = spatial[-1]
    chunk = vector_chunk(extent, lanes) or extent
    renamed = {}  # loop name -> its outer part, for the axes that get split
    if config["vectorize"] and stage.is_reduction and _lanes_outside_reduction(stage, lanes):
        # Pooling over NCHW[x]c data, a sum over a leading axis: the contiguous axis
        # moves below the reduction loops and becomes the vector; each lane is a
        # separate reduction, kept in a register across the window.
        nests = [last] + ([f"{stage.name}_init.{last.split('.', 1)[1]}"] if stage.has_init else [])
        vectors = nests
        if extent not in (chunk, 2 * lanes):
            steps += [step("loop-split", k, loop=n, factor=chunk) for n in nests]
            vectors = [f"{n}.inner" for n in nests]
            renamed[last] = f"{last}.outer"
        steps.append(step("loop-reorder", k, order=[n for n, _ in stage.reduce] + vectors[:1]))
        steps += [step("loop-vectorize", k, loop=n, lanes=lanes) for n in vectors]
    elif config["vectorize"] and extent % chunk == 0 and chunk % min(lanes, VECTOR_UNIT) == 0 \
            and not stage.is_reduction:
        steps.append(step("loop-split", k, loop=last, factor=chunk))
        steps.append(step("loop-vectorize", k, loop=f"{last}.inner", lanes=lanes))
        renamed[last] = f"{last}.outer"
    elif config["vectorize"] and not stage.is_reduction and extent > lanes:
        # No vector divides the axis (a row of 197): whole vectors and a ragged last one
        # (loop-vectorize runs the lanes of the last, guarded one one by one).
        chunk = lanes
        steps.append(step("loop-vectorize", k, loop=last, lanes=lanes, split=chunk))
        renamed[last] = f"{last}.outer"
    elif config["vectorize"] and not stage.is_reduction and extent >= MIN_RAGGED_VECTOR:
        steps.append(step("loop-vectorize", k, loop=last, lanes=lanes))  # 7: 4 + 2 + 1
    if config["vectorize"] and stage.is_reduction and not _lanes_outside_reduction(stage, lanes):
        steps += _row_reduction(k, stage, lanes)
    if config["parallel"]:
        # the nest as it is now: a split axis is its outer part, of fewer iterations
        steps += parallel_steps(k, [renamed.get(n, n) for n, _ in spatial],
                                [-(-e // chunk) if n in renamed else e for n, e in spatial])
    return steps


MIN_RAGGED_VECTOR = 4
"""Extents from which an axis no vector divides is still vectorized (with a ragged
last vector); and reductions of at least this many elements get partial sums per lane."""


def _row_reduction(k: str, stage: Stage, lanes: int) -> list[str]:
    """A reduction along the contiguous axis (a row's sum or max: softmax, LayerNorm):
    one partial result per lane over the row, in vector registers (`loop-rfactor`, two
    chains of `lanes` from four vectors on), then one horizontal reduction per row; a
    row that no vector divides ends in a ragged, guarded vector."""
    if len(stage.reduce) != 1 or stage.windowed:
        return []
    name, extent = stage.reduce[0]
    if extent < MIN_RAGGED_VECTOR or any(
            any(name in d for d in dims[:-1]) for _, dims in stage.reads):
        return []
    width = min(extent, 2 * lanes if extent >= 4 * lanes else lanes)
    inner = f"{name}.inner"
    return [step("loop-split", k, loop=name, factor=width),
            step("loop-rfactor", k, loop=inner),
            step("loop-vectorize", k, loop=inner, lanes=lanes),
            step("loop-vectorize", k, loop=f"{inner}.rf_init", lanes=lanes),
            step("loop-vectorize", k, loop=f"{inner}.rf", lanes=lanes)]


def _lanes_outside_reduction(stage: Stage, lanes: int) -> bool:
    """Whether a reduction's last output axis can be its vector: an extent that
    vectorizes (`vector_chunk`) and that no read slides along (so each lane reads its
    own contiguous element, as the channel block of NCHW[x]c pooling does)."""
    last, extent = stage.spatial[-1]
    return vector_chunk(extent, lanes) is not None and last not in stage.windowed and all(
        dims and dims[-1] == {last} and not any(last in d for d in dims[:-1])
        for _, dims in stage.reads if any(last in d for d in dims))


TEMPLATES: list[Template] = [BlockedReduction(), Injective(), Generic()]
