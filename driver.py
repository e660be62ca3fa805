"""`xweave.build`: from a model (ONNX file or graph-dialect module) to a runnable module."""

from __future__ import annotations

import os
from pathlib import Path

from xdsl.dialects.builtin import ModuleOp

from xweave.errors import XweaveError
from xweave.target import Target, as_target, set_target

ACCELERATORS = ("vta",)
"""Target kinds that offload to an accelerator (the rest of the model runs on the CPU)."""


def _as_graph_module(module_or_path, input_shapes=None) -> ModuleOp:
    if isinstance(module_or_path, ModuleOp):
        return module_or_path.clone()
    if isinstance(module_or_path, (str, os.PathLike)):
        path = Path(module_or_path)
        if path.suffix == ".mlir":
            from xweave.context import parse_module

            return parse_module(path.read_bytes(), str(path))
    from xweave.frontend.onnx import load_onnx

    return load_onnx(module_or_path, input_shapes=input_shapes)


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
    **target_options,
):
    """Compile a model for `target` and load it, ready to `run`.

    `target` is a CPU target as tvmc writes it (`"llvm"`: this host; `"llvm
    -mcpu=znver3"`, `"llvm -mcpu=znver4 -mattr=-avx512f"`: another CPU, see
    `xweave.target`; default: `XWEAVE_TARGET`, else the host) or an accelerator
    (`"vta"`). Code for a CPU that lacks some of this host's features can be exported
    but not run here.

    `module_or_path` is a graph-dialect `ModuleOp`, an ONNX file or `onnx.ModelProto`,
    or a `.mlir` file of the graph stage. `dump_ir=DIR` writes every stage of the
    pipeline into DIR (`NN-<stage>.mlir`, then the optimized LLVM IR and assembly).
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

    `target="vta"` quantizes the model to int8 with ranges measured on `calibration`
    (an .npz path, {name: array} or a list of them), runs its conv2d/dense layers on the
    simulated accelerator and the rest on the CPU (see `xweave.runtime.hetero`);
    `target_options` (config=, virtual_threads=, min_in_channels=) tune that.
    """
    from xweave.context import print_module
    from xweave.pipeline import lower_to_llvm
    from xweave.runtime.module import CompiledModule, signature_of

    target = as_target(target)
    if not target.is_cpu and target.kind not in ACCELERATORS:
        raise XweaveError(f"unknown target '{target}' (available: llvm [-mcpu=NAME "
                          f"-mattr=+f,-g], {', '.join(ACCELERATORS)})")
    if threads is not None:
        from xweave.runtime.threads import check_num_threads

        check_num_threads(threads)
    if tuning_records is not None:
        from xweave.autotune.dispatch import tuned_schedules

        tuning_records = str(tuning_records)
        if target.is_cpu:  # a bad file fails before the work starts
            tuned_schedules(tuning_records, target, any_target_records)
    if profile and not target.is_cpu:
        raise XweaveError(f"profiling builds are for target 'llvm' only (got '{target}')")
    if (target_options or calibration is not None) and target.kind != "vta":
        given = [*target_options, *(["calibration"] if calibration is not None else [])]
        raise XweaveError(f"target '{target}' takes no option(s) {', '.join(given)}")
    module = _as_graph_module(module_or_path, input_shapes)
    if target.kind == "vta":
        from xweave.runtime.hetero import build_vta

        return build_vta(module, calibration, threads=threads,
                         dump_dir=Path(dump_ir) if dump_ir is not None else None,
                         fuse=fuse, tuning_records=tuning_records, **target_options)
    signature = signature_of(module)
    set_target(module, target)

    dump_dir = Path(dump_ir) if dump_ir is not None else None
    stage_index = 0
    params = {}

    def on_stage(name: str, stage_module: ModuleOp) -> None:
        nonlocal stage_index, params
        if name in ("loop", "scheduled", "planned"):  # the weights, as the last loop stage has them
            from xweave.lowering.loop_to_llvm import extract_params

            params = extract_params(stage_module)
        if dump_dir is not None:
            dump_dir.mkdir(parents=True, exist_ok=True)
            (dump_dir / f"{stage_index:02d}-{name}.mlir").write_text(print_module(stage_module))
        stage_index += 1

    lower_to_llvm(module, on_stage, tuning_records, fuse=fuse, layout=layout, profile=profile,
                  winograd=winograd, any_target_records=any_target_records)
    compiled = CompiledModule.from_llvm_module(module, params, signature)
    if threads is not None and compiled.runnable:
        from xweave.runtime.threads import set_num_threads

        set_num_threads(compiled, threads)
    if dump_dir is not None:
        (dump_dir / f"{stage_index:02d}-optimized.ll").write_text(compiled.llvm_ir)
        (dump_dir / f"{stage_index + 1:02d}-assembly.s").write_text(compiled.assembly)
    return compiled
