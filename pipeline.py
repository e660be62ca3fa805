"""The whole compilation pipeline, every stage in order, for every target (read top to bottom).

This is xweave's analogue of Halide's `Lower.cpp`: one place that shows how a model
goes from the graph dialect to machine code. Each stage is a list of ordinary xDSL
passes, so `xweave-opt model.mlir -p <pass_spec(stages)>` replays the same lowering one
printable stage at a time, and `xweave compile --dump-ir DIR` writes the module after
every stage.

Everything that compiles asks this module for its stages instead of assembling them:

    options = CompileOptions(target=as_target("llvm"), fuse=False)
    stages(options)                         # every stage of the build, in order
    stages_until(options, "loop")           # up to and including "loop" (the tuner's input)
    stages_between(options, "loop", "planned")   # after "loop", through "planned"
    pass_spec(stages(options))              # the `xweave-opt -p` text of a stage list
    lower(module, options, until="loop")    # apply them, in place
    compile_model(module, options)          # a model, compiled and loaded
    compile_kernel(module, "matmul")        # one scheduled loop kernel, compiled

A CPU build (target `llvm ...`) runs `cpu_stages`. An accelerator that runs part of a
model (`OffloadTarget`, registered with `register_target`) has graph stages of its own
up to the point where it cuts the model (`partition`) into layers it runs and CPU
segments, which are compiled through `cpu_stages` like any model.
"""

from __future__ import annotations

import gc
import os
import re
import shlex
import tempfile
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import numpy as np
from xdsl.dialects import func, llvm
from xdsl.dialects.builtin import (
    ArrayAttr,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    StringAttr,
    TensorType,
)
from xdsl.passes import ModulePass, PassPipeline
from xdsl.transforms.dead_code_elimination import DeadCodeElimination

from xweave import plugins, timing
from xweave.accel.offload import CpuSegment, OffloadPlan
from xweave.context import make_context, print_module
from xweave.dialects.dtypes import DtypeError, dtype_name
from xweave.errors import InternalCompilerError, ModelError, XweaveError
from xweave.lowering.graph_to_te import ConvertGraphToTePass
from xweave.lowering.llvm_codegen import (
    CompiledObject,
    abi_from,
    abi_of,
    compile_llvm,
    compile_loop_module,
)
from xweave.lowering.llvm_params import extract_params
from xweave.lowering.loop_to_llvm import ARG_TYPES_ATTR, ConvertLoopToLLVMPass, lower_module
from xweave.lowering.te_to_loop import ConvertTeToLoopPass
from xweave.passes.graph_alter_layout import GraphAlterLayoutPass
from xweave.passes.graph_cse import GraphCsePass
from xweave.passes.graph_fold_constants import GraphFoldConstantsPass
from xweave.passes.graph_fold_qdq import GraphFoldQdqPass
from xweave.passes.graph_fuse import GraphFusePass
from xweave.passes.graph_simplify_inference import GraphSimplifyInferencePass
from xweave.passes.graph_widen_weights import GraphWidenWeightsPass
from xweave.passes.graph_winograd import GraphWinogradPass
from xweave.passes.loop_fold_packs import SCHEDULED_ATTR, LoopFoldConstantPacksPass
from xweave.passes.memory_plan import PEAK_ATTR, PlanMemoryPass
from xweave.passes.profile_kernels import CountKernelFlopsPass, ProfileKernelsPass
from xweave.runtime.abi import ARENA
from xweave.runtime.hetero import AcceleratorStep as RunAcceleratorStep
from xweave.runtime.hetero import CpuStep, HeteroModule
from xweave.runtime.module import CompiledModule, TensorSpec
from xweave.schedules import ScheduleKernelsPass, ScheduleStepError
from xweave.options import DUMP_ELIDE_LARGER_THAN, CompileOptions
from xweave.target import as_target, set_target


@dataclass(frozen=True)
class Stage:
    """A named point in the pipeline and the passes that produce it."""

    name: str
    passes: tuple[ModulePass, ...]
    verified: bool = True
    """Whether a build verifies the module after the stage (`lower(verify_each=True)`
    verifies after every pass of every stage)."""


def accelerator_of(options: CompileOptions) -> OffloadTarget | None:
    """The accelerator target the options name (None: a CPU target)."""
    if options.target is None or options.target.is_cpu:
        return None
    return offload_target(options.target.kind)


# --------------------------------------------------------------------------------------
# The stages
# --------------------------------------------------------------------------------------


def cpu_stages(options: CompileOptions) -> list[Stage]:
    """The stages from a graph-dialect module to an llvm-dialect module for a CPU."""
    stages = [
        # 0. Graph-level optimization: QDQ patterns of a quantized model become integer
        #    operators (requantize epilogues), ops on constants are evaluated at compile
        #    time, batch norms and per-channel affine ops fold into conv/dense weights,
        #    no-op reshapes/transposes/casts vanish, equal constants and subexpressions
        #    merge, and what is left unused is erased.
        Stage("graph-opt", (GraphFoldQdqPass(), GraphFoldConstantsPass(),
                            GraphSimplifyInferencePass(), GraphCsePass(),
                            DeadCodeElimination())),
        # 0a. Convolutions, their epilogues and pools run on channel-blocked NCHW16c
        #     data (weights transformed at compile time); transforms back to NCHW only
        #     where a consumer needs it.
        #     Integer layers (quantized models) take int16 weights where the target
        #     has no VNNI dot product (vpmaddwd instead of the saturating vpmaddubsw).
        Stage("layout", (GraphAlterLayoutPass(), GraphFoldConstantsPass(),
                         GraphWidenWeightsPass(), DeadCodeElimination())),
        # 0a'. Blocked 3x3 stride-1 convolutions with large outputs become Winograd
        #      F(4x4, 3x3): input transform, batched products with weights transformed
        #      at compile time, output transform (taking the conv's epilogue when fused).
        Stage("winograd", (GraphWinogradPass(), DeadCodeElimination())),
        # 0b. Operator fusion (the paper's rules): conv2d/dense take their elementwise
        #     epilogues, injective chains and reductions their injective inputs, each
        #     group a graph.fused op.
        Stage("fused", (GraphFusePass(),)),
        # 1. Every graph op (or fused group) becomes a call of a kernel written in
        #    tensor expressions; ops that compute the same (repeated layers) call one
        #    kernel, so each distinct kernel is compiled once.
        Stage("te", (ConvertGraphToTePass(),)),
        # 2. Tensor expressions become naive loop nests over buffers (bufferization);
        #    a profiling build counts each kernel's float operations here.
        Stage("loop", (ConvertTeToLoopPass(),
                       *((CountKernelFlopsPass(),) if options.profile else ()))),
        # 3. Each kernel is scheduled: its template's pipeline of loop rewrites
        #    (tiling, packing, register blocking, vectorizing, parallel loops); the
        #    packing of constant weights then happens once, at compile time.
        Stage("scheduled", (ScheduleKernelsPass(options.tuning_records,
                                                options.any_target_records),
                            LoopFoldConstantPacksPass())),
        # 4. @main's intermediate buffers share one arena where their lifetimes allow
        #    (static memory planning; the runtime binds the arena once per instance); a
        #    profiling build times every kernel call.
        Stage("planned", (PlanMemoryPass(),
                          *((ProfileKernelsPass(),) if options.profile else ()))),
        # 5. Loops, buffers and scalar/vector math become the llvm dialect (verified by
        #    LLVM when it reads the module: xDSL's verifier would walk the largest
        #    module of the build a second time). A build without dumps lowers each
        #    function in the worker that compiles it (`compile_loop_stage`).
        Stage("llvm", (ConvertLoopToLLVMPass(),), verified=False),
    ]
    left_out = {name for name, on in (("fused", options.fuse), ("layout", options.layout),
                                      ("winograd", options.winograd)) if not on}
    return [s for s in stages if s.name not in left_out]


def stages(options: CompileOptions | None = None) -> list[Stage]:
    """Every stage of a build with `options`, in order: `cpu_stages`, or for an
    accelerator target the graph stages before it partitions the model."""
    options = options or CompileOptions()
    accelerator = accelerator_of(options)
    return accelerator.stages(options) if accelerator is not None else cpu_stages(options)


INPUT = "graph"
"""The name of the pipeline's input (the graph-dialect module before any stage)."""


def stage_names(options: CompileOptions | None = None) -> list[str]:
    """`INPUT`, then the name of every stage of `stages(options)`."""
    return [INPUT, *(s.name for s in stages(options))]


def stages_between(options: CompileOptions | None = None, start: str | None = None,
                   stop: str | None = None) -> list[Stage]:
    """The stages after `start` (exclusive; None or "graph": from the input) through
    `stop` (inclusive; None: to the end)."""
    names = stage_names(options)
    for what, name in (("start", start), ("stop", stop)):
        if name is not None and name not in names:
            raise XweaveError(f"no stage '{name}' ({what}) in this pipeline; its stages are "
                              + ", ".join(names))
    first = names.index(start) if start is not None else 0
    last = names.index(stop) if stop is not None else len(names) - 1
    if last < first:
        raise XweaveError(f"stage '{stop}' comes before stage '{start}'")
    return stages(options)[first:last]


def stages_until(options: CompileOptions | None, stop: str) -> list[Stage]:
    """The stages from the input through `stop` (inclusive)."""
    return stages_between(options, None, stop)


def pass_spec(stage_list: list[Stage], *, explicit: bool = False) -> str:
    """The `-p` argument of xweave-opt that replays `stage_list` (`explicit`: every
    option of every pass spelled out, defaults included)."""
    return ",".join(str(p.spec(include_default=explicit)) for stage in stage_list
                    for p in stage.passes)


# --------------------------------------------------------------------------------------
# Stage dumps, and IR given at any stage
# --------------------------------------------------------------------------------------


_HEADER = re.compile(r"// xweave \S+: stage '([\w-]+)'")


def dump_header(stage: str, previous: str | None, stage_list: list[Stage]) -> str:
    """The comment a `--dump-ir` file starts with: the stage, and the `xweave-opt`
    command that produced it from the `previous` dump (`stage_list`: the stages run)."""
    try:  # (as `xweave.__version__`, which the pipeline may not import: it is above it)
        release = version("xweave")
    except PackageNotFoundError:
        release = "0+unknown"
    head = f"// xweave {release}: stage '{stage}'"
    if previous is None:
        return head + (" (the pipeline's input)" if stage == INPUT else "") + "\n"
    spec = pass_spec(stage_list, explicit=True)
    return (head + f", produced from {previous} by:\n"
            f"// xweave-opt {previous} -p {shlex.quote(spec)}\n")


def dump_stage(dump_dir: Path, stage: str, number: int, previous: str | None,
               stage_list: list[Stage], module: ModuleOp, elide_larger_than: int) -> str:
    """Write `NN-<stage>.mlir` (`dump_header`, then the module) into `dump_dir`;
    returns the file name."""
    dump_dir.mkdir(parents=True, exist_ok=True)
    name = f"{number:02d}-{stage}.mlir"
    (dump_dir / name).write_text(dump_header(stage, previous, stage_list)
                                 + print_module(module, elide_larger_than))
    return name


_GRAPH_LEVEL = ("graph-opt", "layout", "winograd", "fused")
_ORDER = (INPUT, *_GRAPH_LEVEL, "te", "loop", "scheduled", "planned", "llvm")
"""Every stage a CPU build can run, in order (`cpu_stages` with every option on)."""


def stage_of(module: ModuleOp, text: str | None = None) -> str:
    """The last stage of a CPU build the IR `module` has been through, told by its
    dialects and markers; the header of its text (`dump_header`) only chooses among the
    graph-level stages the ops allow. Raises `XweaveError` for IR of no such stage."""
    dialects: set[str] = set()
    ops: set[str] = set()
    for op in module.walk():
        ops.add(op.name)
        dialects.add(op.name.split(".")[0])
    main = next((op for op in module.ops if getattr(op, "sym_name", None) is not None
                 and op.sym_name.data == "main"), None)  # pyright: ignore[reportAttributeAccessIssue]
    accepted = ("accepted: " + ", ".join(_ORDER) + " (graph, te, loop or llvm dialect "
                "modules with a @main)")
    if main is None:
        raise XweaveError("the IR is at no stage of the pipeline: it has no @main function; "
                          + accepted)
    if "llvm.func" in ops:
        if {"graph", "te", "loop"} & dialects or "func.func" in ops:
            raise XweaveError("the IR is at no stage of the pipeline: it mixes the llvm "
                              "dialect with higher-level functions; " + accepted)
        return "llvm"
    if "loop" in dialects:
        if PEAK_ATTR in module.attributes:
            return "planned"
        return "scheduled" if SCHEDULED_ATTR in module.attributes else "loop"
    if "te" in dialects:
        return "te"
    if "graph" in dialects or isinstance(main, func.FuncOp) and all(
            isinstance(t, TensorType) for t in (*main.function_type.inputs.data,
                                                *main.function_type.outputs.data)):
        found = ("fused" if "graph.fused" in ops else
                 "layout" if "graph.layout_transform" in ops else INPUT)
        hint = _HEADER.match(text or "")
        told = hint.group(1) if hint else None
        # graph.fused ops tell fusion; a later graph stage only the header (skipping a
        # graph stage keeps the program right, rerunning one changes nothing).
        if told in _GRAPH_LEVEL and told != "fused" and _ORDER.index(told) > _ORDER.index(found):
            return told
        return found
    raise XweaveError("the IR is at no stage of the pipeline: it has no graph, te, loop "
                      f"or llvm ops (dialects: {', '.join(sorted(dialects))}); " + accepted)


def start_in(options: CompileOptions, stage: str) -> str:
    """The stage of `stages(options)` to continue from, for IR at `stage` (a stage of
    `stage_of`): itself, or the last stage before it that these options run."""
    names = stage_names(options)
    if stage in names:
        return stage
    if accelerator_of(options) is not None:
        raise XweaveError(f"the IR is at stage '{stage}', but target "
                          f"'{accelerator_of(options).name}' compiles from the graph stage only")
    return max((n for n in names if _ORDER.index(n) < _ORDER.index(stage)), key=_ORDER.index)


GC_YOUNG_THRESHOLD = 50_000
"""While compiling, Python's collector looks at new objects once this many have been
allocated (its default, 700, is for programs that keep few objects: a compiler
allocates millions of IR objects and keeps most, and the collector's sweeps took a
tenth of a build)."""


@contextmanager
def fewer_collections() -> Iterator[None]:
    """Run the code inside (or the decorated function) with the cyclic garbage
    collector's thresholds raised to `GC_YOUNG_THRESHOLD` (never lowered), then put
    them back."""
    old = gc.get_threshold()
    gc.set_threshold(max(old[0], GC_YOUNG_THRESHOLD), max(old[1], 20), max(old[2], 100))
    try:
        yield
    finally:
        gc.set_threshold(*old)


VERIFY_EACH_ENV = "XWEAVE_VERIFY_EACH"
"""Set to 1, builds verify the IR after every pass (the tests do)."""


@fewer_collections()
def lower(
    module: ModuleOp,
    options: CompileOptions | None = None,
    *,
    start: str | None = None,
    until: str | None = None,
    on_stage: Callable[[str, ModuleOp], None] | None = None,
    verify_each: bool | None = None,
) -> ModuleOp:
    """Apply the stages after `start` through `until` (see `stages_between`) to
    `module` in place; from the input, the module first records `options.target`.

    `on_stage(name, module)` is called with the input ("graph", when starting there) and
    after every stage, e.g. to dump the IR or to interpret a stage and compare it with
    the one before.

    The module is verified after every stage (`verify_each`: after every pass; None:
    as `$XWEAVE_VERIFY_EACH` says, off unless it is 1), and each stage and pass is timed
    when a `timing` collector is active.

    A pass that fails unexpectedly (anything but an `XweaveError` or an `OSError`, which
    the input causes: a calibration or records file that cannot be read) raises `InternalCompilerError` naming the stage, the pass and the kernel,
    after writing a reproducer: the IR before that pass, replayed by the `xweave-opt`
    command the message gives (see `write_reproducer`).
    """
    options = options or CompileOptions()
    if verify_each is None:
        verify_each = os.environ.get(VERIFY_EACH_ENV) == "1"
    selected = stages_between(options, start, until)
    names = stage_names(options)
    if start in (None, INPUT) or ("scheduled" in names
                                  and names.index(start) < names.index("scheduled")):
        # (code already scheduled stays for the target it was scheduled for)
        if options.target is not None and options.target.is_cpu:
            set_target(module, options.target)
    if start in (None, INPUT) and on_stage:
        on_stage(INPUT, module)
    ctx = make_context()
    original = module.clone()  # kept to rebuild a reproducer
    for number, stage in enumerate(selected):
        with timing.scope(stage.name):
            for index, pass_ in enumerate(stage.passes):
                try:
                    with timing.scope(pass_.name):
                        pass_.apply(ctx, module)
                    if verify_each or (stage.verified and index == len(stage.passes) - 1):
                        with timing.scope("verify"):
                            module.verify()
                except (XweaveError, OSError):  # the input's fault (an OSError: a file it names)
                    raise
                except Exception as e:
                    raise _crash(original, selected[:number] + [Stage(stage.name, stage.passes[:index])],
                                 stage.name, pass_, e) from e
        if on_stage:
            on_stage(stage.name, module)
    return module


# --------------------------------------------------------------------------------------
# Compiling a model
# --------------------------------------------------------------------------------------


def _numpy_dtype(element_type) -> str:
    try:
        return dtype_name(element_type)
    except DtypeError:
        raise ModelError(f"unsupported element type {element_type}") from None


def signature_of(module: ModuleOp) -> tuple[list[TensorSpec], list[TensorSpec]]:
    """Inputs and outputs of `@main` in a module of any stage (graph and te: tensor
    arguments and results; loop: memref arguments, the inputs then the outputs; llvm:
    those memref types, kept in `xweave.arg_types`)."""
    main = next(
        (op for op in module.ops if isinstance(op, func.FuncOp | llvm.FuncOp)
         and op.sym_name.data == "main"),
        None,
    )
    if main is None:
        raise ModelError("the module has no @main function")
    arg_types = main.attributes.get(ARG_TYPES_ATTR)
    buffers = (list(arg_types.data) if isinstance(arg_types, ArrayAttr) else
               list(main.function_type.inputs.data) if isinstance(main, func.FuncOp) else [])
    if isinstance(main, llvm.FuncOp) or any(isinstance(t, MemRefType) for t in buffers):
        named = [main.attributes.get(a) for a in ("xweave.input_names", "xweave.output_names")]
        if not all(isinstance(n, ArrayAttr) for n in named):
            raise ModelError("@main takes buffers but has no xweave.input_names and "
                             "xweave.output_names to tell its inputs from its outputs")
        n_in = len(named[0].data)  # pyright: ignore[reportAttributeAccessIssue]
        ins, outs = buffers[:n_in], buffers[n_in:]
    else:
        ins, outs = main.function_type.inputs.data, main.function_type.outputs.data

    def names(attr: str, count: int, prefix: str) -> list[str]:
        value = main.attributes.get(attr)
        if isinstance(value, ArrayAttr):
            return [s.data for s in value.data if isinstance(s, StringAttr)]
        return [f"{prefix}{i}" for i in range(count)]

    specs = []
    for types, attr, prefix in ((ins, "xweave.input_names", "input"), (outs, "xweave.output_names", "output")):
        specs.append([
            TensorSpec(name, tuple(t.get_shape()), _numpy_dtype(t.get_element_type()))
            for name, t in zip(names(attr, len(types), prefix), types)
            if isinstance(t, TensorType | MemRefType)
        ])
    return specs[0], specs[1]



def compile_model(module: ModuleOp, options: CompileOptions | None = None,
                  dump_dir: Path | None = None, *, start: str | None = None,
                  elide_larger_than: int = DUMP_ELIDE_LARGER_THAN,
                  verify_each: bool | None = None) -> CompiledModule | HeteroModule:
    """Compile `module` (rewritten in place) with `options` and load it: a graph-dialect
    module, or with `start` IR of that stage of `stages(options)` (see `stage_of`,
    `start_in`), which continues the pipeline from there.

    `dump_dir` receives the module after every stage (`NN-<stage>.mlir`, each starting
    with the `xweave-opt` command that produced it from the one before; blobs larger
    than `elide_larger_than` bytes elided), then the optimized LLVM IR and the
    assembly; for an accelerator target, its own dumps and a folder per CPU segment
    (`cpuNN/`).
    """
    options = options or CompileOptions()
    accelerator = accelerator_of(options)
    if accelerator is not None:
        if start not in (None, INPUT):
            start_in(options, start)  # raises: accelerators start from the graph stage
        return _compile_offloaded(module, options, accelerator, dump_dir, elide_larger_than,
                                  verify_each)
    signature = signature_of(module)
    names = stage_names(options)
    weights_stage = names[names.index("llvm") - 1]  # the last loop stage has the weights
    params = extract_params(module) if start == "llvm" else {}
    previous: str | None = None
    given = start not in (None, INPUT)

    def on_stage(name: str, stage_module: ModuleOp) -> None:
        nonlocal params, previous
        if name == weights_stage:
            params = extract_params(stage_module)
        if dump_dir is not None:
            done = stages_between(options, names[names.index(name) - 1], name) if previous else []
            previous = dump_stage(dump_dir, name, names.index(name), previous, done,
                                  stage_module, elide_larger_than)

    if given:
        assert start is not None
        on_stage(start, module)
    loaded = None
    last = stages(options)[-1]
    if (dump_dir is None and start != "llvm" and last.name == "llvm"
            and [type(p) for p in last.passes] == [ConvertLoopToLLVMPass]):
        # The llvm stage in the workers that compile each unit (the loop stage left
        # as it is: on a refusal or an error, the stage runs here as below).
        lower(module, options, start=start, until=weights_stage, on_stage=on_stage,
              verify_each=verify_each)
        start = weights_stage
        loaded = compile_loop_stage(module, params, signature, verify_each)
    if loaded is None:
        lower(module, options, start=start, on_stage=on_stage, verify_each=verify_each)
        loaded = compile_lowered(module, params, signature)
    if dump_dir is not None:
        (dump_dir / f"{len(names):02d}-optimized.ll").write_text(loaded.llvm_ir)
        (dump_dir / f"{len(names) + 1:02d}-assembly.s").write_text(loaded.assembly)
    return loaded


@fewer_collections()
def compile_lowered(module: ModuleOp, params: dict[str, np.ndarray],
                    signature: tuple[list[TensorSpec], list[TensorSpec]]) -> CompiledModule:
    """An llvm-dialect model (`lower`ed; `params`: the weights its last loop stage
    held) compiled for its target CPU, with its ABI description, and loaded."""
    with timing.scope("codegen"):
        compiled = compile_llvm(module, abi_of(module, params, signature))
    with timing.scope("load"):
        return CompiledModule(compiled.object_bytes, params, compiled, verify_params=False)


@fewer_collections()
def compile_loop_stage(module: ModuleOp, params: dict[str, np.ndarray],
                       signature: tuple[list[TensorSpec], list[TensorSpec]],
                       verify_each: bool | None = None) -> CompiledModule | None:
    """`lower` through the llvm stage and `compile_lowered`, from the last loop stage,
    each unit lowered where it is compiled (`compile_loop_module`), the module left
    as it is. None if that does not apply to `module`, or lowering it failed (the llvm
    stage then runs as a stage, which reports the failure)."""
    if verify_each is None:
        verify_each = os.environ.get(VERIFY_EACH_ENV) == "1"
    compiled = compile_loop_module(
        module, lambda main, attributes: abi_from(main, attributes, params, signature),
        verify_each)
    if compiled is None:
        return None
    with timing.scope("load"):
        return CompiledModule(compiled.object_bytes, params, compiled, verify_params=False)


def _compile_offloaded(module: ModuleOp, options: CompileOptions, accelerator: OffloadTarget,
                       dump_dir: Path | None, elide_larger_than: int,
                       verify_each: bool | None) -> HeteroModule:
    """The accelerator's stages, its partition, then every CPU segment compiled for the
    CPU with the same options (see `OffloadTarget`)."""
    accelerator.check_options(options)
    inputs, outputs = signature_of(module)
    lower(module, options, verify_each=verify_each)
    with timing.scope("partition"):
        plan = accelerator.partition(module, options)
    if dump_dir is not None:
        dump_dir.mkdir(parents=True, exist_ok=True)
        dump_stage(dump_dir, accelerator.stages(options)[-1].name, 0, None, [], module,
                   elide_larger_than)
        (dump_dir / "01-offload-plan.txt").write_text(plan.summary() + "\n")
    cpu = options.replace(target=as_target("llvm"), accelerator={})
    steps: list[CpuStep | RunAcceleratorStep] = []
    for i, step in enumerate(plan.steps):
        if isinstance(step, CpuSegment):
            sub = dump_dir / f"cpu{i:02d}" if dump_dir is not None else None
            with timing.scope(f"cpu segment {i}"):
                compiled = compile_model(step.module, cpu, sub, elide_larger_than=elide_larger_than,
                                         verify_each=verify_each)
            assert isinstance(compiled, CompiledModule)
            steps.append(CpuStep(compiled, step.inputs, step.outputs))
        else:
            steps.append(step)  # a plan's accelerator step is the step a HeteroModule runs
            if dump_dir is not None and hasattr(step.layer, "listing"):
                folder = dump_dir / accelerator.name
                folder.mkdir(exist_ok=True)
                (folder / f"layer{i:02d}.isa.txt").write_text(
                    f"; {step.layer.name}: {step.layer.describe()}, input "
                    f"{'x'.join(map(str, step.input_shape))}\n"
                    + step.layer.listing(step.input_shape))
    return HeteroModule(steps, inputs, outputs, plan.inputs, plan.outputs, accelerator.name)


# --------------------------------------------------------------------------------------
# Compiling one kernel
# --------------------------------------------------------------------------------------


@dataclass
class CompiledKernel:
    """One loop kernel as machine code: its constants (`params`) and the bytes of the
    arena its temporaries live in (passed as the kernel's last argument; 0: none)."""

    name: str
    compiled: CompiledObject
    params: dict[str, np.ndarray]
    arena_bytes: int


@fewer_collections()
def compile_kernel(module: ModuleOp, name: str, plan_memory: bool = True) -> CompiledKernel:
    """Compile the scheduled loop kernel `name` of `module` (rewritten in place) for the
    module's target: its top-level temporaries planned into one arena (`plan-memory`;
    `plan_memory=False` keeps them allocated in the call), lowered to the llvm dialect
    and compiled. `xweave.runtime.kernel.LoadedKernel` loads the result."""
    arena_bytes = 0
    if plan_memory:
        PlanMemoryPass(function=name).apply(make_context(), module)
        peak = module.attributes.get(PEAK_ATTR)
        arena_bytes = peak.value.data if isinstance(peak, IntegerAttr) else 0
    params = extract_params(module)
    params.pop(ARENA, None)  # per call: the loader allocates it
    lower_module(module)
    return CompiledKernel(name, compile_llvm(module), params, arena_bytes)


# --------------------------------------------------------------------------------------
# Accelerator targets
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class OffloadTarget:
    """An accelerator that runs some layers of a model, the rest running on the CPU.

    `stages(options)`: its graph-level stages, ending where the model is cut (e.g.
    graph-opt, then quantization); `partition(module, options)`: the cut, an
    `accel.offload.OffloadPlan` whose CPU segments are compiled with `cpu_stages` and
    whose accelerator steps hold layer objects (`run(x) -> (y, report)`, see
    `runtime.hetero`); `options`: the keywords of `CompileOptions.accelerator` it
    takes (its stages say which it cannot do without).
    """

    name: str
    stages: Callable[[CompileOptions], list[Stage]]
    partition: Callable[[ModuleOp, CompileOptions], OffloadPlan]
    options: tuple[str, ...] = ()
    doc: str = ""

    def check_options(self, options: CompileOptions) -> None:
        unknown = [k for k in options.accelerator if k not in self.options]
        if unknown:
            raise XweaveError(f"target '{self.name}' takes no option(s) {', '.join(unknown)}"
                              f" (it takes: {', '.join(self.options) or 'none'})")


_TARGETS: plugins.Registry[OffloadTarget] = plugins.Registry(
    "target", XweaveError, served_elsewhere="llvm [-mcpu=NAME -mattr=+f,-g]")


def register_target(target: OffloadTarget, *, replace: bool = False) -> OffloadTarget:
    """Make `xweave.build(..., target=target.name)` compile for this accelerator."""
    return _TARGETS.register(target.name, target, replace)


def offload_target(name: str) -> OffloadTarget:
    """The registered accelerator target `name` (built-in ones are loaded on demand)."""
    return _TARGETS.get(name)


def target_names() -> list[str]:
    """The accelerator targets: registered, or built in (loaded on first use)."""
    return _TARGETS.names()


# --------------------------------------------------------------------------------------
# Crash reproducers
# --------------------------------------------------------------------------------------


CRASH_DIR_ENV = "XWEAVE_CRASH_DIR"
"""Where reproducers of internal compiler errors are written (default: a new
temporary directory per crash)."""


def _crash(original: ModuleOp, done: list[Stage], stage: str, pass_: ModulePass,
           error: Exception) -> InternalCompilerError:
    """The error to raise for `pass_` failing with `error`, its reproducer written."""
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
    module = original.clone()
    PassPipeline(tuple(p for stage in done for p in stage.passes)).apply(make_context(), module)
    base = os.environ.get(CRASH_DIR_ENV)
    folder = Path(base) if base else Path(tempfile.mkdtemp(prefix="xweave-crash-"))
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "reproducer.mlir"
    replayed = pass_spec(done)
    (folder / "traceback.txt").write_text("".join(traceback.format_exception(error)))
    path.write_text(
        f"// xweave internal error reproducer: the IR before pass '{pass_.name}'.\n"
        f"// Replay: xweave-opt {path} -p '{pass_}'\n"
        f"// (passes applied before it: {replayed or 'none'})\n"
        + print_module(module))
    return path
