"""The whole compilation pipeline, every stage in order (read top to bottom).

This is xweave's analogue of Halide's `Lower.cpp`: one place that shows how a model
goes from the graph dialect to machine code. Each stage is an ordinary xDSL pass, so
`xweave-opt model.mlir -p <the passes below, comma-separated>` replays the same
lowering one printable stage at a time, and `xweave compile --dump-ir DIR` writes the
module after every stage.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass, PassPipeline

from xweave.context import make_context


@dataclass(frozen=True)
class Stage:
    """A named point in the pipeline and the pass that produces it."""

    name: str
    passes: tuple[ModulePass, ...]


def llvm_stages() -> list[Stage]:
    """The stages from a graph-dialect module to an llvm-dialect module."""
    from xweave.lowering.graph_to_te import ConvertGraphToTePass
    from xweave.lowering.loop_to_llvm import ConvertLoopToLLVMPass
    from xweave.lowering.te_to_loop import ConvertTeToLoopPass
    from xweave.schedules import ScheduleKernelsPass

    return [
        # 1. Every graph op becomes a call of a kernel written in tensor expressions.
        Stage("te", (ConvertGraphToTePass(),)),
        # 2. Tensor expressions become naive loop nests over buffers (bufferization).
        Stage("loop", (ConvertTeToLoopPass(),)),
        # 3. Each kernel is scheduled: its template's pipeline of loop rewrites
        #    (tiling, packing, register blocking, vectorizing, parallel loops).
        Stage("scheduled", (ScheduleKernelsPass(),)),
        # 4. Loops, buffers and scalar/vector math become the llvm dialect.
        Stage("llvm", (ConvertLoopToLLVMPass(),)),
    ]


def pass_pipeline_spec(stages: list[Stage]) -> str:
    """The `-p` argument of xweave-opt that replays `stages`."""
    return ",".join(str(p) for stage in stages for p in stage.passes)


def lower_to_llvm(
    module: ModuleOp,
    on_stage: Callable[[str, ModuleOp], None] | None = None,
) -> ModuleOp:
    """Lower a graph-dialect `module` in place to the llvm dialect.

    `on_stage(name, module)` is called with the input ("graph") and after every stage,
    e.g. to dump the IR or to interpret a stage and compare it with the one before.
    """
    ctx = make_context()
    if on_stage:
        on_stage("graph", module)
    for stage in llvm_stages():
        PassPipeline(stage.passes).apply(ctx, module)
        module.verify()
        if on_stage:
            on_stage(stage.name, module)
    return module
