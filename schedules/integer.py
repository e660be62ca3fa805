"""The schedule of integer contractions (quantized conv2d / dense): `IntegerDot`.

It is `BlockedReduction`'s register-blocked schedule, with the dot products of the
target: the reduction's innermost axis (a conv's input-channel lanes `rb`, a dense's
`k`) is split by the dot's group G, the weights are packed so that each output lane's
G consecutive inputs are adjacent (`[..][lanes][G]` panels, at compile time for
constant weights), G runs innermost, and `loop-dot` replaces the vectorization of the
register block's lanes:

* G = 4, int8 weights: `vpdpbusd` where the machine model has VNNI;
* G = 2, int16 weights (`graph-widen-weights` gives them to targets without VNNI,
  where `vpmaddubsw`'s 16-bit sums would saturate): `vpmaddwd`.

The data (uint8) must be contiguous along that axis (NCHW<c>c activations, or the
rows of a dense's input), so it is not packed into row panels; K blocking is off (the
whole reduction runs inside the register block). The knobs and their space are
`BlockedReduction`'s.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from xdsl.dialects.builtin import IntegerType, Signedness

from xweave.schedules.analysis import KernelInfo
from xweave.schedules.templates import BlockedReduction, lanes_of, step

_UI8 = IntegerType(8, Signedness.UNSIGNED)
_WEIGHTS = {IntegerType(8): 4, IntegerType(16): 2}
"""Weight element type -> the dot's group G."""


@dataclass(frozen=True)
class _Plan:
    """What the dot needs of a kernel: the reduction axis it splits, G, and the weight
    argument with the positions of that axis and of the lanes in it."""

    axis: str
    group: int
    weight: int
    weight_axis: int
    weight_lanes: int
    rank: int
    narrow: bool = False


class IntegerDot(BlockedReduction):
    """Register-blocked integer contractions with dot-product instructions."""

    name = "integer-dot"

    def plan(self, info: KernelInfo) -> _Plan | None:
        """The dot's plan for the kernel, or None if it is no such contraction."""
        anchor = info.anchor
        if not anchor.is_reduction or not anchor.reduce or anchor.operands != 2:
            return None
        axis, extent = anchor.reduce[-1]
        _, v = self._axes(anchor)
        lanes_axis = anchor.spatial[v][0]
        data, weight = False, None
        for arg, element, dims in anchor.operand_reads:
            uses = [d for d, loops in enumerate(dims) if loops]
            if element in (_UI8, IntegerType(16)) and dims and dims[-1] == {axis} and not any(
                    lanes_axis in loops for loops in dims):
                data = True
            elif element in _WEIGHTS and arg is not None:
                axis_dims = [d for d in uses if dims[d] == {axis}]
                lane_dims = [d for d in uses if dims[d] == {lanes_axis}]
                if len(axis_dims) == 1 and len(lane_dims) == 1:
                    weight = (arg, element, axis_dims[0], lane_dims[0], len(dims))
        if not data or weight is None:
            return None
        arg, element, weight_axis, weight_lanes, rank = weight
        group = _WEIGHTS[element]
        if extent % group:
            return None
        return _Plan(axis, group, arg, weight_axis, weight_lanes, rank)

    def applies(self, info: KernelInfo) -> bool:
        return super().applies(info) and self.plan(info) is not None

    def knobs(self, info: KernelInfo) -> dict[str, list]:
        knobs = super().knobs(info)
        # The data is read contiguously along the dot's axis: no row panels, no K
        # blocking, one reduction split (the dot's) and no unrolled reduction.
        knobs.update(pack_rows=[False], k_block=[0], m_block=[0], reduce_split=[1],
                     unroll_reduce=[False])
        if not self._ragged_rows_ok(info):
            # Whole row tiles: a ragged last one would guard every load of the
            # reduction (reading the data in place, not from panels padded to whole
            # tiles), which the dot cannot take (a 6-row tile of 128 ran scalar, 15x
            # slower).
            rows = info.anchor.spatial[self._axes(info.anchor)[0]][1]
            knobs["tile_rows"] = [r for r in knobs["tile_rows"] if rows % r == 0]
        return knobs

    def valid(self, info: KernelInfo, config: dict) -> bool:
        # Rows are never packed here: `_ragged_rows_ok` alone says whether a ragged last
        # row tile computes whole (reading a padded input grown to whole tiles), as
        # `default_config` takes it.
        return super().valid(info, dict(config, pack_rows=True))

    def _ragged_rows_ok(self, info: KernelInfo) -> bool:
        # The data is not packed into row panels: a ragged last row tile under an
        # epilogue computes whole only reading a padded input (grown by
        # loop-compute-at, its producer guarding the data), not the data itself nor
        # its int16 copy (`operators.nn.widened`: it cannot be grown past the data).
        return super()._ragged_rows_ok(info) and not any(
            s.name == "widen" for s in info.stages)

    def default_config(self, info: KernelInfo) -> dict:
        config = super().default_config(info)
        config.update(pack_rows=False, k_block=0, m_block=0, reduce_split=1, unroll_reduce=False)
        return config

    def pipeline(self, info: KernelInfo, config: dict) -> list[str]:
        plan = self.plan(info)
        assert plan is not None
        config = dict(config, pack_rows=False, k_block=0, m_block=0, reduce_split=1,
                      unroll_reduce=False)
        steps = super().pipeline(info, config)
        k = info.name
        anchor = info.anchor
        _, v = self._axes(anchor)
        lanes_axis = anchor.spatial[v][0]
        lanes = lanes_of(info, config)
        axis = plan.axis
        out: list[str] = []
        packed = False
        for spec in steps:
            if spec.startswith("loop-pack{") and _option(spec, "buffer") == str(plan.weight):
                out.append(self._weight_pack(k, plan, spec))
                packed = True
                continue
            if spec.startswith("loop-reorder{") and f'"{axis}"' in spec:
                spec = spec.replace(f'"{axis}"', f'"{axis}.outer"')
                spec = re.sub(r'(order=[^ }]*)', lambda m: m.group(1) + f',"{axis}.inner"', spec, 1)
            if spec.startswith("loop-prefetch{") and f'loop="{axis}"' in spec:
                spec = spec.replace(f'loop="{axis}"', f'loop="{axis}.outer"')
            if spec.startswith("loop-vectorize{") and (_option(spec, "loop") or "").strip(
                    '"').startswith(lanes_axis):
                spec = step("loop-dot", k, loop=_option(spec, "loop").strip('"'), lanes=lanes,  # pyright: ignore
                            **({"narrow": True} if plan.narrow else {}))
            out.append(spec)
        # The dot's split and the weight panels go before the first reorder.
        first = next(i for i, s in enumerate(out) if s.startswith("loop-reorder{"))
        extra = [] if packed else [self._weight_pack(k, plan, None)]
        extra.append(step("loop-split", k, loop=axis, factor=plan.group))
        return out[:first] + extra + out[first:]

    @staticmethod
    def _weight_pack(kernel: str, plan: _Plan, column_pack: str | None) -> str:
        """The weights in dot panels: the reduction axis split by G, its G steps last;
        `column_pack` (BlockedReduction's column panels, if it packs them) is kept."""
        rank = plan.rank
        if column_pack is None:
            return step("loop-pack", kernel, buffer=plan.weight, split_dim=[plan.weight_axis],
                        factor=[plan.group], order=list(range(rank + 1)))
        splits = [int(d) for d in _option(column_pack, "split-dim").split(",")]  # pyright: ignore
        factors = [int(f) for f in _option(column_pack, "factor").split(",")]  # pyright: ignore
        order_text = _option(column_pack, "order")
        order = ([int(o) for o in order_text.split(",")] if order_text
                 else list(range(rank + len(splits))))
        parallel = _option(column_pack, "parallel") == "true"
        return step("loop-pack", kernel, buffer=plan.weight,
                    split_dim=[*splits, plan.weight_axis], factor=[*factors, plan.group],
                    order=[*order, rank + len(splits)],
                    **({"parallel": True} if parallel else {}))


def _option(spec: str, key: str) -> str | None:
    """The text of option `key` in a pass spec (`loop-pack{buffer=1 factor=8,4 ...}`)."""
    match = re.search(rf"(?:{{| ){re.escape(key)}=(\"[^\"]*\"(?:,\"[^\"]*\")*|[^ }}]*)", spec)
    return match.group(1) if match else None


__all__ = ["IntegerDot"]
