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
from pathlib import Path

from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass, PassPipeline

from xweave.context import make_context, print_module
from xweave.errors import InternalCompilerError, XweaveError


@dataclass(frozen=True)
class Stage:
    """A named point in the pipeline and the pass that produces it."""

    name: str
    passes: tuple[ModulePass, ...]


def llvm_stages(tuning_records: str | None = None, fuse: bool = True,
                layout: bool = True, profile: bool = False,
                winograd: bool = True, any_target_records: bool = False) -> list[Stage]:
    """The stages from a graph-dialect module to an llvm-dialect module
    (`tuning_records`: a records file whose best schedules replace the defaults;
    `fuse=False` leaves out operator fusion, one kernel per graph op; `layout=False`
    leaves out the layout stage: every conv stays NCHW; `profile=True` times every
    kernel call of @main, see `passes.profile_kernels`; `winograd=False` leaves out the
    winograd stage; `any_target_records=True` also applies records tuned for another
    target)."""
    from xdsl.transforms.dead_code_elimination import DeadCodeElimination

    from xweave.lowering.graph_to_te import ConvertGraphToTePass
    from xweave.lowering.loop_to_llvm import ConvertLoopToLLVMPass
    from xweave.lowering.te_to_loop import ConvertTeToLoopPass
    from xweave.passes.graph_alter_layout import GraphAlterLayoutPass
    from xweave.passes.graph_cse import GraphCsePass
    from xweave.passes.graph_fold_constants import GraphFoldConstantsPass
    from xweave.passes.graph_fuse import GraphFusePass
    from xweave.passes.graph_simplify_inference import GraphSimplifyInferencePass
    from xweave.passes.graph_winograd import GraphWinogradPass
    from xweave.passes.loop_fold_packs import LoopFoldConstantPacksPass
    from xweave.passes.memory_plan import PlanMemoryPass
    from xweave.schedules import ScheduleKernelsPass

    stages = [
        # 0. Graph-level optimization: ops on constants are evaluated at compile time,
        #    batch norms and per-channel affine ops fold into conv/dense weights, no-op
        #    reshapes/transposes/casts vanish, equal constants and subexpressions merge,
        #    and what is left unused is erased.
        Stage("graph-opt", (GraphFoldConstantsPass(), GraphSimplifyInferencePass(),
                            GraphCsePass(), DeadCodeElimination())),
        # 0a. Convolutions, their epilogues and pools run on channel-blocked NCHW16c
        #     data (weights transformed at compile time); transforms back to NCHW only
        #     where a consumer needs it.
        Stage("layout", (GraphAlterLayoutPass(), GraphFoldConstantsPass(), DeadCodeElimination())),
        # 0a'. Blocked 3x3 stride-1 convolutions with large outputs become Winograd
        #      F(4x4, 3x3): input transform, batched products with weights transformed
        #      at compile time, output transform (taking the conv's epilogue when fused).
        Stage("winograd", (GraphWinogradPass(), DeadCodeElimination())),
        # 0b. Operator fusion (the paper's rules): conv2d/dense take their elementwise
        #     epilogues, injective chains and reductions their injective inputs, each
        #     group a graph.fused op.
        Stage("fused", (GraphFusePass(),)),
        # 1. Every graph op (or fused group) becomes a call of a kernel written in
        #    tensor expressions.
        Stage("te", (ConvertGraphToTePass(),)),
        # 2. Tensor expressions become naive loop nests over buffers (bufferization).
        Stage("loop", (ConvertTeToLoopPass(),)),
        # 3. Each kernel is scheduled: its template's pipeline of loop rewrites
        #    (tiling, packing, register blocking, vectorizing, parallel loops); the
        #    packing of constant weights then happens once, at compile time.
        Stage("scheduled", (ScheduleKernelsPass(tuning_records, any_target_records), LoopFoldConstantPacksPass())),
        # 4. @main's intermediate buffers share one arena where their lifetimes allow
        #    (static memory planning; the runtime binds the arena once per instance).
        Stage("planned", (PlanMemoryPass(),)),
        # 5. Loops, buffers and scalar/vector math become the llvm dialect.
        Stage("llvm", (ConvertLoopToLLVMPass(),)),
    ]
    if profile:
        from xweave.passes.profile_kernels import CountKernelFlopsPass, ProfileKernelsPass

        stages = [Stage(s.name, s.passes + {"loop": (CountKernelFlopsPass(),),
                                            "planned": (ProfileKernelsPass(),)}.get(s.name, ()))
                  for s in stages]
    return [s for s in stages if (fuse or s.name != "fused") and (layout or s.name != "layout")
            and (winograd or s.name != "winograd")]


def pass_pipeline_spec(stages: list[Stage]) -> str:
    """The `-p` argument of xweave-opt that replays `stages`."""
    return ",".join(str(p) for stage in stages for p in stage.passes)


def lower_to_llvm(
    module: ModuleOp,
    on_stage: Callable[[str, ModuleOp], None] | None = None,
    tuning_records: str | None = None,
    fuse: bool = True,
    layout: bool = True,
    profile: bool = False,
    winograd: bool = True,
    any_target_records: bool = False,
) -> ModuleOp:
    """Lower a graph-dialect `module` in place to the llvm dialect.

    `on_stage(name, module)` is called with the input ("graph") and after every stage,
    e.g. to dump the IR or to interpret a stage and compare it with the one before.

    A pass that fails unexpectedly (anything but an `XweaveError`, which the input
    causes) raises `InternalCompilerError` naming the stage, the pass and the kernel,
    after writing a reproducer: the IR before that pass, replayed by the `xweave-opt`
    command the message gives (see `write_reproducer`).
    """
    ctx = make_context()
    original = module.clone()  # the graph stage is small: kept to rebuild a reproducer
    stages = llvm_stages(tuning_records, fuse, layout, profile, winograd, any_target_records)
    if on_stage:
        on_stage("graph", module)
    for number, stage in enumerate(stages):
        for index, pass_ in enumerate(stage.passes):
            try:
                pass_.apply(ctx, module)
                if index == len(stage.passes) - 1:
                    module.verify()
            except XweaveError:
                raise
            except Exception as e:
                raise _crash(original, stages[:number] + [Stage(stage.name, stage.passes[:index])],
                             stage.name, pass_, e) from e
        if on_stage:
            on_stage(stage.name, module)
    return module


CRASH_DIR_ENV = "XWEAVE_CRASH_DIR"
"""Where reproducers of internal compiler errors are written (default: a new
temporary directory per crash)."""


def _crash(original: ModuleOp, done: list[Stage], stage: str, pass_: ModulePass,
           error: Exception) -> InternalCompilerError:
    """The error to raise for `pass_` failing with `error`, its reproducer written."""
    from xweave.schedules import ScheduleStepError

    where = [f"stage '{stage}'", f"pass '{pass_.name}'"]
    cause: BaseException = error
    if isinstance(error, ScheduleStepError):
        where += [f"kernel '{error.kernel}'", f"step '{error.step}'"]
        cause = error.__cause__ or error
    elif getattr(pass_, "kernel", None):
        where.append(f"kernel '{pass_.kernel}'")
    message = f"internal error in {', '.join(where)}: {type(cause).__name__}: {cause}"
    try:
        path = write_reproducer(original, done, pass_, error)
    except Exception as e:  # the report must not hide the first failure
        return InternalCompilerError(f"{message} (no reproducer: {type(e).__name__}: {e})")
    return InternalCompilerError(
        f"{message}; reproducer: {path} (replay: xweave-opt {path} -p '{pass_}')")


def write_reproducer(original: ModuleOp, done: list[Stage], pass_: ModulePass,
                     error: BaseException) -> Path:
    """Write the module as it was before `pass_` (the `done` stages applied again to a
    copy of `original`: the pipeline is deterministic) with the `xweave-opt` command
    that replays the failure in a header comment, and the traceback beside it."""
    import os
    import tempfile
    import traceback

    module = original.clone()
    PassPipeline(tuple(p for stage in done for p in stage.passes)).apply(make_context(), module)
    base = os.environ.get(CRASH_DIR_ENV)
    folder = Path(base) if base else Path(tempfile.mkdtemp(prefix="xweave-crash-"))
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "reproducer.mlir"
    replayed = pass_pipeline_spec(done)
    (folder / "traceback.txt").write_text("".join(traceback.format_exception(error)))
    path.write_text(
        f"// xweave internal error reproducer: the IR before pass '{pass_.name}'.\n"
        f"// Replay: xweave-opt {path} -p '{pass_}'\n"
        f"// (passes applied before it: {replayed or 'none'})\n"
        + print_module(module))
    return path
