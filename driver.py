"""`xweave.build`: from a model (ONNX file or graph-dialect module) to a runnable module,
from the compile cache when it holds one (without importing the compiler), else compiled
(`compiling.compile_fresh`)."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from contextlib import nullcontext
from pathlib import Path

from xweave import cache as compile_cache
from xweave.errors import XweaveError
from xweave.log import NOTE
from xweave.options import DUMP_ELIDE_LARGER_THAN, CompileOptions, schedule_mode
from xweave.runtime.hetero import CpuStep, HeteroModule
from xweave.runtime.module import CompiledModule
from xweave.runtime.threads import check_num_threads, set_num_threads
from xweave.target import Target, as_target
from xweave.timing import collect as timing_collect
from xweave.timing import scope as timing_scope

logger = logging.getLogger(__name__)


def build(
    module_or_path,
    target: str | Target | None = None,
    *,
    input_shapes: dict[str, tuple[int, ...]] | None = None,
    dump_ir: str | os.PathLike | None = None,
    threads: int | None = None,
    tuning_records: str | os.PathLike | None = None,
    any_target_records: bool = False,
    fuse: bool = True,
    layout: bool = True,
    winograd: bool = True,
    calibration=None,
    profile: bool = False,
    elide_resources_larger_than: int = DUMP_ELIDE_LARGER_THAN,
    cache: bool = True,
    timing: bool = False,
    verify_each: bool | None = None,
    schedule: str | None = None,
    choose_schedules: Callable | None = None,
    **target_options,
) -> CompiledModule | HeteroModule:
    """Compile a model for `target` and load it, ready to `run`.

    `target` is a CPU target as tvmc writes it (`"llvm"`: this host; `"llvm
    -mcpu=znver3"`, `"llvm -mcpu=znver4 -mattr=-avx512f"`: another CPU, see
    `xweave.target`; default: `XWEAVE_TARGET`, else the host) or an accelerator
    registered as a target (`"vta"`; see `pipeline.OffloadTarget`). Code for a CPU that
    lacks some of this host's features can be exported but not run here.

    `module_or_path` is an ONNX file or `onnx.ModelProto`, or a `ModuleOp` or `.mlir`
    file of any stage of a CPU build (e.g. a `dump_ir` file: its stage is told by its
    ops, see `pipeline.stage_of`, and the pipeline continues from there).
    `dump_ir=DIR` writes every stage of the pipeline into DIR (`NN-<stage>.mlir`, then
    the optimized LLVM IR and assembly), leaving out weight blobs larger than
    `elide_resources_larger_than` bytes (0: keep them all).
    `threads=N` runs parallel loops on N threads (default: `XWEAVE_NUM_THREADS`, else
    every core); `xweave.runtime.threads.set_num_threads` changes it later without
    recompiling. `tuning_records=FILE` schedules each kernel with the best schedule
    recorded for it by `xweave tune` for this target (the others keep their default
    schedule; kernels whose records are for another target are named in a warning,
    and `any_target_records=True` applies those too).
    `fuse=False` turns operator fusion off (one kernel per graph op: the paper's
    fusion ablation). `layout=False` keeps every convolution in NCHW (default: convs that
    feed other convs run on channel-blocked NCHW16c data, the `layout` stage).
    `winograd=False` leaves out the `winograd` stage (default: blocked 3x3 stride-1 convs
    with outputs of at least 28x28 run as Winograd F(4x4, 3x3)).
    `profile=True` makes a profiling build: every kernel call is timed, and
    `module.profile(...)` reports the time per kernel (normal builds pay nothing).
    `cache=False` compiles even when the compile cache (`xweave.cache`) holds the result,
    and stores nothing; builds with `dump_ir` never use it.
    `timing=True` times every stage and pass of the build (`--mlir-timing`'s report:
    `xweave.timing`): the report is logged (logger `xweave.driver`, level NOTE) and kept
    as the module's `compile_timing` (a `timing.Timer`). `verify_each=True` verifies the
    IR after every pass instead of after every stage (default: `$XWEAVE_VERIFY_EACH=1`).
    `schedule` chooses each kernel's schedule (`options.SCHEDULE_MODES`; default
    `$XWEAVE_SCHEDULE`, else "default"): "model" and "measure" need
    `choose_schedules(loop_module, options, mode, folder) -> records file | None`
    (`autotune.select.choose_schedules`, which `xweave.build` passes), called on the
    loop stage of a build the compile cache does not hold.

    An accelerator target takes its own options (`calibration` and `target_options`):
    `target="vta"` quantizes the model to int8 with ranges measured on `calibration`
    (an .npz path, {name: array} or a list of them), runs its conv2d/dense layers on the
    simulated accelerator and the rest on the CPU (see `accel.vta.offload`);
    `target_options` (config=, virtual_threads=, min_in_channels=) tune that. The CPU
    segments are compiled with the other options.
    """
    target = as_target(target)
    if threads is not None:
        check_num_threads(threads)
    schedule = schedule_mode(schedule)
    if tuning_records is not None:
        tuning_records = str(tuning_records)
        if schedule != "default":
            raise XweaveError(f"tuning records and schedule mode '{schedule}' both choose "
                              "the schedules: give one of them")
        if not Path(tuning_records).is_file():  # (read in full on a cache miss)
            why = "not a file" if Path(tuning_records).exists() else "no such file"
            raise XweaveError(f"tuning records {tuning_records}: {why}")
    if schedule != "default" and choose_schedules is None:
        raise XweaveError(f"schedule mode '{schedule}' needs the tuner: build with "
                          "xweave.build, which brings it")
    given = {**target_options, **({"calibration": calibration} if calibration is not None else {})}
    if target.is_cpu:
        if given:
            raise XweaveError(f"target '{target}' takes no option(s) {', '.join(given)}")
    elif profile:
        raise XweaveError(f"profiling builds are for target 'llvm' only (got '{target}')")
    options = CompileOptions(target, fuse=fuse, layout=layout, winograd=winograd,
                             profile=profile, tuning_records=tuning_records,
                             any_target_records=any_target_records, accelerator=given,
                             schedule=schedule)
    if not target.is_cpu:
        # (lazy: an accelerator is a plug-in of the compiler, which a cache hit of a
        # CPU build never loads)
        from xweave.pipeline import offload_target

        offload_target(target.kind).check_options(options)

    def compile_fresh() -> CompiledModule | HeteroModule:
        # (lazy: a cache hit loads the module without importing the compiler: a tenth
        # of the time of a hit)
        from xweave.compiling import compile_fresh

        return compile_fresh(module_or_path, options, input_shapes,
                             Path(dump_ir) if dump_ir is not None else None,
                             elide_resources_larger_than, verify_each, choose_schedules)

    with (timing_collect() if timing else nullcontext()) as timer:
        with timing_scope("cache key"):
            key = compile_cache.key_for(module_or_path, input_shapes, options) \
                if cache and dump_ir is None and compile_cache.enabled() else None
        compiled = compile_cache.cached_build(key, compile_fresh)
    if timer is not None:
        compiled.compile_timing = timer
        logger.log(NOTE, "%s", timer.report())
    if threads is not None:
        cpu = [s.module for s in compiled.steps if isinstance(s, CpuStep)] \
            if isinstance(compiled, HeteroModule) else [compiled]
        for segment in cpu:
            if segment.runnable:
                set_num_threads(segment, threads)
    return compiled
