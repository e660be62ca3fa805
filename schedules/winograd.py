"""The schedule of the Winograd transform kernels (`graph.winograd_input_transform`,
`graph.winograd_output_transform` with its fused epilogue).

Their te bodies pick each point's constant-coefficient sum with a `te.select` tree
over the point index (`operators.nn._choose`); unrolling the point loops makes every
index a constant, `loop-simplify` then keeps one side of each select per copy, and the
copies' shared terms (a tile's loads and row sums) are common subexpressions for
LLVM. The channel-block lanes are the vector, inside the unrolled points.
"""

from __future__ import annotations

from xdsl.dialects import func
from xdsl.dialects.builtin import MemRefType
from xdsl.ir import Block

from xweave.schedules.analysis import KernelInfo, Stage
from xweave.schedules.templates import (
    Template,
    _outer_parallel_inner_vector,
    default_width,
    lanes_of,
    parallel_steps,
    step,
    vector_chunk,
    width_knob,
    worth_parallel,
)

INPUT, OUTPUT = "winograd_input", "winograd_output"


def _output_tile(stage: Stage) -> int:
    """m of the output transform: its kernel's first argument is [(m+2)^2][P][K]."""
    owner = stage.buffer.owner
    op = owner.parent_op() if isinstance(owner, Block) else owner
    while not isinstance(op, func.FuncOp):
        op = op.parent_op()
    points = op.args[0].type
    assert isinstance(points, MemRefType)
    return round(points.get_shape()[0] ** 0.5) - 2


class WinogradTransform(Template):
    """Winograd input/output transforms: points unrolled, channel lanes vectorized,
    outer loops parallel."""

    name = "winograd-transform"

    def applies(self, info: KernelInfo) -> bool:
        return any(s.name in (INPUT, OUTPUT) for s in info.stages)

    def knobs(self, info: KernelInfo) -> dict[str, list]:
        return {"parallel": [True, False], **width_knob(info)}

    def default_config(self, info: KernelInfo) -> dict:
        return {"parallel": worth_parallel(info), **default_width(info)}

    def pipeline(self, info: KernelInfo, config: dict) -> list[str]:
        names = [s.name for s in info.stages]
        if INPUT in names:
            steps = self._input(info, config)
        else:
            steps = self._output(info, config)
        return steps + [step("loop-simplify", info.name)]

    @staticmethod
    def _input(info: KernelInfo, config: dict) -> list[str]:
        k, steps = info.name, []
        lanes = lanes_of(info, config)
        for stage in info.stages:  # the zero padding: its own nest, no guards left below
            if stage.name != INPUT:
                steps += _outer_parallel_inner_vector(k, stage, {"vectorize": True, **config}, lanes)
        main = info.stage(INPUT)
        (b, be), (p, pe), (cb, cbe), (c, ce) = main.spatial
        # the points as (u, v): unrolling v first and simplifying leaves u less to copy
        a = round(be**0.5)
        steps.append(step("loop-split", k, loop=b, factor=a))
        outer, inner = [p, cb], [f"{b}.outer", f"{b}.inner"]
        chunk = vector_chunk(ce, lanes)
        if chunk is not None:
            steps += [step("loop-split", k, loop=c, factor=chunk)]
            outer.append(f"{c}.outer")
            inner.append(f"{c}.inner")
        else:
            outer.append(c)
        steps.append(step("loop-reorder", k, order=outer + inner))
        if chunk is not None:
            steps.append(step("loop-vectorize", k, loop=f"{c}.inner", lanes=lanes))
        steps += [step("loop-unroll", k, loop=f"{b}.inner"), step("loop-simplify", k),
                  step("loop-unroll", k, loop=f"{b}.outer")]
        if config["parallel"]:
            steps += parallel_steps(k, outer, [pe, cbe, ce // chunk if chunk else ce])
        return steps

    @staticmethod
    def _output(info: KernelInfo, config: dict) -> list[str]:
        k = info.name
        lanes = lanes_of(info, config)
        tile = _output_tile(info.stage(OUTPUT))
        out = next(s for s in info.stages if s.is_output)
        steps = [step("loop-inline", k, stage=s.name) for s in info.stages if not s.is_output]
        (n, ne), (kb, kbe), (y, ye), (x, xe), *channels = out.spatial
        for axis in (y, x):
            steps.append(step("loop-split", k, loop=axis, factor=tile, guard="innermost"))
        outer = [n, kb, f"{y}.outer", f"{x}.outer"]
        inner = [f"{y}.inner", f"{x}.inner"]
        vector = None
        chunk = vector_chunk(channels[0][1], lanes) if channels else None
        if chunk is not None:
            c = channels[0][0]
            steps.append(step("loop-split", k, loop=c, factor=chunk))
            outer.append(f"{c}.outer")
            vector = f"{c}.inner"
            inner.append(vector)
        elif channels:
            outer.append(channels[0][0])
        steps.append(step("loop-reorder", k, order=outer + inner))
        if vector:
            steps.append(step("loop-vectorize", k, loop=vector, lanes=lanes))
        steps += [step("loop-unroll", k, loop=f"{x}.inner"), step("loop-simplify", k),
                  step("loop-unroll", k, loop=f"{y}.inner")]
        if config["parallel"]:
            steps += parallel_steps(k, outer[:4], [ne, kbe, -(-ye // tile), -(-xe // tile)])
        return steps
