"""The `xweave` subcommands, in the spirit of tvmc: compile, run, tune."""

from __future__ import annotations

import argparse
import os
import sys
from contextlib import nullcontext
from pathlib import Path

import numpy as np

import xweave
from xweave import timing
from xweave.errors import InputError, XweaveError
from xweave.options import DUMP_ELIDE_LARGER_THAN, SCHEDULE_MODES


def parse_input_shapes(text: str | None) -> dict[str, tuple[int, ...]] | None:
    """`name:1x3x224x224,other:1x10` -> {"name": (1, 3, 224, 224), "other": (1, 10)}."""
    if not text:
        return None
    shapes = {}
    for item in text.split(","):
        name, sep, dims = item.rpartition(":")
        try:
            if not sep or not name:
                raise ValueError
            shapes[name] = tuple(int(d) for d in dims.split("x"))
        except ValueError:
            raise XweaveError(
                f"--input-shapes: cannot read '{item}' (expected NAME:DxDxD, e.g. data:1x3x224x224)"
            ) from None
    return shapes


def _compile(args: argparse.Namespace) -> None:
    if args.print_pipeline:
        print(_pipeline_of(args))
        if args.output is None:
            return
    elif args.output is None:
        raise XweaveError("-o/--output is required (unless --print-pipeline)")
    with timing.collect() if args.timing else nullcontext() as timer:
        _compile_to_file(args)
    if timer is not None:
        print(timer.report(), file=sys.stderr)


def _compile_to_file(args: argparse.Namespace) -> None:
    if args.compile_to:  # (lazy imports here and below: the CLI starts without the compiler)
        from xweave.context import print_module
        from xweave.compiling import lower_model
        from xweave.pipeline import dump_header

        module = lower_model(args.model, _options_of(args), args.compile_to,
                             parse_input_shapes(args.input_shapes),
                             verify_each=args.verify_each)
        with timing.scope("write"):
            Path(args.output).write_text(dump_header(args.compile_to, None, [])
                                         + print_module(module))
        print(f"wrote {args.output} (stage '{args.compile_to}')")
        return
    if Path(args.output).suffix == ".so":
        _check_library_target(args.target)
    module = xweave.build(args.model,
                          input_shapes=parse_input_shapes(args.input_shapes),
                          dump_ir=args.dump_ir, fuse=not args.no_fuse,
                          profile=args.profile,
                          layout=args.layout == "nchwc",
                          **_build_options(args),
                          tuning_records=args.tuning_records,
                          **({"any_target_records": True} if args.any_target_records else {}),
                          calibration=args.calibration,
                          elide_resources_larger_than=args.elide_resources_larger_than,
                          verify_each=args.verify_each)
    with timing.scope("export"):
        if Path(args.output).suffix == ".so":  # a shared library with the C API of xweave.h
            module.export_library(args.output)
        else:
            module.export(args.output)
    print(f"wrote {args.output}")


def _check_library_target(text: str | None) -> None:
    """Before compiling into a .so: a CPU target, and a C compiler to link it with."""
    from xweave.runtime.toolchain import c_compiler
    from xweave.target import as_target

    target = as_target(text)
    if not target.is_cpu:
        raise XweaveError(f"a module for target '{target}' cannot be a shared library "
                          "(only CPU targets, llvm, can): write a .xwm module file")
    c_compiler(target.llvm_triple)


def _pipeline_of(args: argparse.Namespace) -> str:
    """The `xweave-opt -p` pipeline `xweave compile` runs with these arguments (for an
    accelerator target: its stages up to the partition)."""
    from xweave.compiling import load_staged_model
    from xweave.pipeline import INPUT, pass_spec, stages_between, start_in

    options = _options_of(args)
    start = None
    if Path(args.model).suffix == ".mlir":  # IR of a stage: the rest of the pipeline
        stage = load_staged_model(args.model)[1]
        start = start_in(options, stage) if stage != INPUT else None
    return pass_spec(stages_between(options, start, args.compile_to), explicit=True)


def _options_of(args: argparse.Namespace):
    """The `pipeline.CompileOptions` of `xweave compile`'s arguments."""
    from xweave.pipeline import CompileOptions
    from xweave.target import as_target

    options = _build_options(args)
    for runtime_only in ("threads", "cache"):  # how a build runs or is stored, not what it lowers
        options.pop(runtime_only, None)
    if options.get("schedule", "default") != "default":
        raise XweaveError("--schedule model/measure chooses schedules while building a "
                          "module; --compile-to and --print-pipeline show the default ones")
    options = CompileOptions(as_target(options.pop("target", None)), fuse=not args.no_fuse,
                             layout=args.layout == "nchwc", profile=args.profile,
                             tuning_records=args.tuning_records,
                             any_target_records=args.any_target_records,
                             accelerator={"calibration": args.calibration}
                             if args.calibration else {}, **options)
    return options


def _build_options(args: argparse.Namespace) -> dict:
    """`winograd=`, `threads=`, `target=` and `cache=` for `xweave.build` when given on
    the command line."""
    options = {} if getattr(args, "winograd", None) is None else {"winograd": args.winograd}
    if getattr(args, "threads", None) is not None:
        options["threads"] = args.threads
    if getattr(args, "target", None) is not None:
        options["target"] = args.target
    if getattr(args, "no_cache", False):
        options["cache"] = False
    if getattr(args, "schedule", None) is not None:
        options["schedule"] = args.schedule
    return options


def _load_for_run(path: str, input_shapes, profile: bool = False, options: dict | None = None):
    options = dict(options or {})
    if Path(path).suffix in (".onnx", ".mlir"):
        return xweave.build(path, input_shapes=input_shapes, profile=profile, **options)
    return xweave.load_module(path, threads=options.get("threads"))


def _read_inputs(module, path: str | None, fill_mode: str) -> dict[str, np.ndarray]:
    if path is None:
        rng = np.random.default_rng(0)
        fill = {
            "random": lambda s: rng.standard_normal(s.shape).astype(s.dtype),
            "zeros": lambda s: np.zeros(s.shape, s.dtype),
            "ones": lambda s: np.ones(s.shape, s.dtype),
        }[fill_mode]
        return {s.name: fill(s) for s in module.inputs}
    if Path(path).is_dir():
        raise InputError(f"--inputs {path}: is a directory, expected an .npz file")
    try:
        loaded = np.load(path, allow_pickle=False)
        if not isinstance(loaded, np.lib.npyio.NpzFile):
            raise InputError(f"--inputs {path}: holds one unnamed array (.npy); expected an "
                             ".npz with one array per input name, e.g. "
                             "numpy.savez(FILE, " + ", ".join(f"{s.name}=..."
                                                              for s in module.inputs) + ")")
        with loaded as npz:
            return {k: npz[k] for k in npz.files}
    except (FileNotFoundError, InputError):
        raise
    except Exception as e:  # EOFError, zipfile.BadZipFile, zlib.error, ValueError, ...
        raise InputError(f"--inputs {path}: cannot read inputs as .npz "
                         f"({str(e) or type(e).__name__})") from None


def _output_path(path: str) -> Path:
    """Where `-o PATH` writes (numpy adds .npz to other names): refused before any work
    when it cannot be written."""
    if Path(path).is_dir() or path.endswith(("/", os.sep)):
        raise XweaveError(f"-o {path}: is a directory, expected the name of an .npz file")
    out = Path(path if path.endswith(".npz") else path + ".npz")
    if out.is_dir():
        raise XweaveError(f"-o {path}: {out} is a directory")
    if not out.parent.is_dir():
        raise XweaveError(f"-o {path}: no such directory {out.parent}")
    return out


def _check_run_counts(args: argparse.Namespace) -> None:
    for option, value, low in (("--repeat", args.repeat, 1), ("--number", args.number, 1),
                               ("--print-top", args.print_top, 0)):
        if value < low:
            raise XweaveError(f"{option} must be at least {low}, got {value}")


def _run(args: argparse.Namespace) -> None:
    _check_run_counts(args)
    output = _output_path(args.output) if args.output else None
    timeline = _image_path(args.timeline, "--timeline") if args.timeline else None
    module = _load_for_run(args.module, parse_input_shapes(args.input_shapes), args.profile,
                           _build_options(args))
    if timeline and not hasattr(module, "accelerator"):
        raise XweaveError(f"--timeline: {args.module} runs on the CPU only; timelines are of "
                          "accelerator modules (compiled with e.g. --target vta)")
    if args.profile and hasattr(module, "accelerator"):
        raise XweaveError("--profile: per-kernel profiles are for CPU (target llvm) modules; "
                          "use --print-time for the accelerator's simulated times")
    if args.profile and module.profile_slots is None:
        raise XweaveError(f"--profile: {args.module} was compiled without profiling "
                          "(compile it with `xweave compile --profile`)")
    inputs = _read_inputs(module, args.inputs, args.fill_mode)
    outputs = module.run(**inputs)
    if output is not None:
        # Written beside, then renamed: an existing file is never left half-written.
        partial = output.with_name(output.name + ".partial.npz")
        np.savez(partial, **{s.name: o for s, o in zip(module.outputs, outputs)})
        partial.replace(output)
        print(f"wrote {output}")
    for spec, out in zip(module.outputs, outputs):
        flat = out.reshape(-1)
        head = np.array2string(flat[:8], precision=5, separator=", ")
        print(f"output '{spec.name}': shape {list(out.shape)} {out.dtype}, first values {head}")
        if args.print_top:
            top = np.argsort(flat)[::-1][: args.print_top]
            print("  top: " + ", ".join(f"{i}: {flat[i]:.5f}" for i in top))
    if timeline:
        _plot_timeline(module, timeline)
        print(f"wrote {timeline}")
    if args.print_time and hasattr(module, "accelerator"):  # a CPU + accelerator module
        print(f"simulated {module.accelerator} cycles (and time at its clock) per offloaded "
              "layer:")
        print(module.profile())
    if args.profile:
        print(f"profile over {args.repeat} runs (median per kernel call):")
        print(module.profile(repeat=args.repeat, **inputs).table())
    if args.print_time:
        times_ms = module.benchmark(inputs, repeat=args.repeat, number=args.number) * 1e3
        what = ("host wall time (ms) of the CPU segments and the simulation"
                if hasattr(module, "accelerator") else "time (ms)")
        print(f"{what} over {args.repeat} runs: mean {times_ms.mean():.3f}  "
              f"median {np.median(times_ms):.3f}  max {times_ms.max():.3f}  "
              f"min {times_ms.min():.3f}  std {times_ms.std():.3f}")


def _plot_timeline(module, path: str) -> None:
    """The load / compute / store timeline of each offloaded layer of the last run."""
    layers = [(r.name, r.report) for r in module.layer_reports
              if r.report is not None and hasattr(r.report, "timeline")]
    if not layers:
        raise XweaveError(f"--timeline: the {module.accelerator} layers of this module report "
                          "no timeline")
    try:  # lazy by design: plots need the optional matplotlib
        import matplotlib  # noqa: F401
    except ImportError:
        raise XweaveError("--timeline needs matplotlib, xweave's 'plot' extra: "
                          "pip install 'xweave[plot]'") from None
    from xweave.accel.vta.timeline import plot_layer_timelines

    plot_layer_timelines(layers, path)


def _tune(args: argparse.Namespace) -> None:
    from xweave.autotune.tune_model import tune_model  # lazy: only `tune` loads the tuner

    if Path(args.output).suffix.lower() in IMAGE_SUFFIXES:
        raise XweaveError(f"-o {args.output}: `xweave tune` writes tuning records (.jsonl); "
                          "to plot records: xweave tune-plot RECORDS... -o CURVES.png")
    results = tune_model(args.model, args.output, trials=args.trials, tuner=args.tuner,
                         early_stopping=args.early_stopping, seed=args.seed,
                         target=args.target, threads=args.threads,
                         input_shapes=parse_input_shapes(args.input_shapes),
                         runner=args.runner, address=args.address,
                         target_label=args.target_label,
                         builders=args.builders, timeout=args.timeout,
                         max_tasks=args.max_tasks, transfer=args.transfer,
                         fuse=not args.no_fuse, layout=args.layout == "nchwc",
                         progress=not args.quiet,
                         **({} if args.winograd is None else {"winograd": args.winograd}))
    print(f"tuned {len(results)} kernel(s); records in {args.output}")
    for r in results:
        print(f"  {r.workload}: best {r.best_throughput}")
    same = " ".join(f for f, on in (("--no-fuse", args.no_fuse), ("--layout nchw", args.layout == "nchw"),
                                    ("--no-winograd", args.winograd is False)) if on)
    print(f"compile with: xweave compile {args.model} --tuning-records {args.output} "
          f"{same + ' ' if same else ''}-o MODULE")


IMAGE_SUFFIXES = (".png", ".svg", ".pdf")


def _image_path(path: str, option: str = "-o") -> str:
    """An image file to write (.png, .svg or .pdf, in an existing directory), refused
    before any work otherwise."""
    suffix = Path(path).suffix.lower()
    if suffix not in IMAGE_SUFFIXES:
        raise XweaveError(f"{option} {path}: expected an image file name ending in "
                          f"{', '.join(IMAGE_SUFFIXES)}")
    if Path(path).is_dir():
        raise XweaveError(f"{option} {path}: is a directory")
    if not Path(path).resolve().parent.is_dir():
        raise XweaveError(f"{option} {path}: no such directory {Path(path).parent}")
    return path


def _tune_plot(args: argparse.Namespace) -> None:
    from xweave.autotune.tune_model import plot_records  # lazy: only plots load the tuner

    curves = plot_records(args.records, _image_path(args.output))
    print(f"wrote {args.output} ({len(curves)} workload(s))")


TARGET_HELP = ("what to generate code for: 'llvm' (this CPU), 'llvm [-mtriple=T] "
               "-mcpu=NAME [-mattr=+f1,-f2] [-mprefer-vector-width=256]' (another CPU, e.g. "
               "'llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a72'), or 'vta' "
               "(default: $XWEAVE_TARGET, else this CPU)")
NO_CACHE_HELP = ("compile from scratch even if the compile cache holds this build, and "
                 "store nothing (see `xweave cache`)")
WINOGRAD_HELP = ("compute large 3x3 stride-1 convs on channel-blocked data as Winograd "
                 "F(4x4, 3x3) (the winograd stage; default: on)")

# The options several subcommands share are added by one function each, so that they
# keep one spelling, type and default everywhere; `when` qualifies the help text (e.g.
# `xweave run` builds only when given a model).


def _add_target(p: argparse.ArgumentParser, when: str = "") -> None:
    p.add_argument("--target", help=when + TARGET_HELP)


def _add_input_shapes(p: argparse.ArgumentParser, when: str = "") -> None:
    p.add_argument("--input-shapes",
                   help="bind symbolic input dims" + (when or ", e.g. data:1x3x224x224"))


def _add_winograd(p: argparse.ArgumentParser, when: str = "") -> None:
    p.add_argument("--winograd", action=argparse.BooleanOptionalAction, default=None,
                   help=WINOGRAD_HELP + when)


def _add_schedule(p: argparse.ArgumentParser, when: str = "") -> None:
    p.add_argument("--schedule", choices=SCHEDULE_MODES, default=None,
                   help="how each kernel's schedule is chosen: its template's default, the "
                   "ranking model's best (model: no code run, for cross-compiling), or the "
                   "fastest of a few candidates timed on this machine (measure: once per "
                   "kernel and machine, kept in the cache dir); default: $XWEAVE_SCHEDULE, "
                   "else default" + when)


def _add_no_cache(p: argparse.ArgumentParser, when: str = "") -> None:
    p.add_argument("--no-cache", action="store_true", help=NO_CACHE_HELP + when)


def _add_pipeline_options(p: argparse.ArgumentParser, why: str = "") -> None:
    """--no-fuse, --layout, --winograd: the pipeline's choices (`pipeline.CompileOptions`)."""
    p.add_argument("--no-fuse", action="store_true",
                   help="turn operator fusion off: one kernel per graph op" + why)
    p.add_argument("--layout", choices=("nchw", "nchwc"), default="nchwc",
                   help="data layout of convolutions: nchwc runs them on channel-blocked "
                   "NCHW16c data where a conv feeds another (default); nchw keeps NCHW" + why)
    _add_winograd(p, why)


def register(sub) -> None:
    """Add the subcommands to an argparse subparsers object."""
    p = sub.add_parser("compile", help="compile a model into a deployable module",
                       epilog="There is no --threads: the threads of the parallel loops "
                       "are chosen when the module is loaded or run (`xweave run "
                       "--threads N`, `xweave.load_module(path, threads=N)`, or "
                       "$XWEAVE_NUM_THREADS; default: every core). Tuning records are "
                       "measured with `xweave tune --threads N`: run with the same number.")
    p.add_argument("model", help="ONNX model (.onnx) or IR of any stage (.mlir, e.g. a "
                   "--dump-ir file: compiling continues from its stage)")
    _add_target(p)
    p.add_argument("-o", "--output", help="the module file to write (MODEL.so: a shared "
                   "library with the C API of xweave.h, linked with the target's C compiler, "
                   "$XWEAVE_CC to choose it; else a module file for xweave.load_module)")
    _add_input_shapes(p)
    p.add_argument("--dump-ir", metavar="DIR",
                   help="write the IR after every stage into DIR (NN-<stage>.mlir, each "
                   "headed by the xweave-opt command that produced it from the one before)")
    p.add_argument("--elide-resources-larger-than", type=int, metavar="BYTES",
                   default=DUMP_ELIDE_LARGER_THAN,
                   help="--dump-ir leaves out weight blobs of more than BYTES bytes (printed "
                   f"as \"__elided__\"; default: {DUMP_ELIDE_LARGER_THAN}); 0 keeps every "
                   "weight, so that the dumps compile and replay")
    p.add_argument("--compile-to", metavar="STAGE",
                   help="stop after STAGE (a --dump-ir stage name: graph-opt, layout, ..., "
                   "scheduled, planned, llvm) and write its IR to -o instead of a module")
    p.add_argument("--print-pipeline", action="store_true",
                   help="print the pass pipeline this compile runs (from the model's stage "
                   "through --compile-to's), as `xweave-opt -p` takes it; exit unless -o is "
                   "given too")
    p.add_argument("--profile", action="store_true",
                   help="a profiling build: `xweave run --profile` times each kernel call")
    p.add_argument("--timing", action="store_true",
                   help="print the wall time of every stage and pass of the build on stderr "
                   "(as mlir-opt's --mlir-timing)")
    p.add_argument("--verify-each", action="store_true", default=None,
                   help="verify the IR after every pass (default: after every stage, unless "
                   "$XWEAVE_VERIFY_EACH=1)")
    _add_pipeline_options(p)
    p.add_argument("--tuning-records", metavar="FILE",
                   help="records of `xweave tune`: each kernel gets its best recorded schedule "
                   "for the target")
    p.add_argument("--any-target-records", action="store_true",
                   help="with --tuning-records: also apply records tuned for another target "
                   "(CPU or features) to kernels that have none for this one")
    p.add_argument("--calibration", metavar="INPUTS.npz",
                   help="target vta: sample inputs (one array per input name, optionally "
                   "stacked along a leading axis) on which int8 ranges are measured")
    _add_schedule(p)
    _add_no_cache(p)
    p.set_defaults(func=_compile)

    p = sub.add_parser("tune", help="auto-tune the schedules of a model's kernels",
                       description="Tune every kernel of MODEL and append the measurements "
                       "to a records file (resumed when it exists). `xweave tune-plot` "
                       "draws the tuning curves of records files.")
    p.add_argument("model", help="ONNX model (.onnx) or graph-stage IR (.mlir)")
    p.add_argument("-o", "--output", required=True,
                   help="tuning-records file to append to (.jsonl)")
    _add_target(p)
    p.add_argument("--trials", type=int, default=64, help="measurements per kernel (default: 64)")
    p.add_argument("--tuner", choices=("lgbm", "ga", "random", "grid"), default="lgbm",
                   help="search strategy (default: lgbm, the LightGBM ranking model)")
    p.add_argument("--early-stopping", type=int, metavar="K",
                   help="stop a kernel after K trials without improvement")
    p.add_argument("--seed", type=int, default=0, help="random seed (default: 0)")
    p.add_argument("--threads", type=int, metavar="N",
                   help="threads of the measured kernels (default: all cores); compile the "
                   "records for, and run with, the same number")
    p.add_argument("--runner", choices=("local", "cluster"), default="local",
                   help="where candidates are built and timed (default: local)")
    p.add_argument("--address", help="scheduler address (tcp://HOST:PORT), for --runner cluster")
    p.add_argument("--target-label", help="with --runner cluster: measure on workers advertising "
                   "this label (default: this machine's, see docs/tuning-farm.md)")
    p.add_argument("--builders", type=int,
                   help="build processes (default: one per core; 0: build in this process)")
    p.add_argument("--timeout", type=float, default=30.0,
                   help="seconds allowed per build and per measurement (default: 30)")
    p.add_argument("--max-tasks", type=int, help="tune only the N most expensive kernels")
    p.add_argument("--transfer", action="store_true",
                   help="warm-start the cost model with the file's records of other kernels")
    _add_input_shapes(p)
    _add_pipeline_options(p, " (tune the kernels a build with the same options compiles)")
    p.set_defaults(func=_tune)

    p = sub.add_parser("tune-plot", help="plot tuning curves of records files",
                       description="Draw the best speed so far against trials, one curve "
                       "per tuner and records file, one panel per kernel (needs the 'plot' "
                       "extra: pip install 'xweave[plot]').")
    p.add_argument("records", nargs="+", help="tuning-records files of `xweave tune`")
    p.add_argument("-o", "--output", required=True, help="the image to write (.png, .svg or .pdf)")
    p.set_defaults(func=_tune_plot)

    p = sub.add_parser("run", help="run a compiled module (or an ONNX model, compiled first)")
    p.add_argument("module", help="module written by `xweave compile`, or an .onnx/.mlir model")
    p.add_argument("-i", "--inputs", help=".npz file with one array per input name")
    p.add_argument("--fill-mode", choices=("random", "zeros", "ones"), default="random",
                   help="inputs to use when --inputs is not given (default: random)")
    p.add_argument("-o", "--output", help=".npz file to write the outputs to")
    _add_input_shapes(p, " when given a model")
    _add_target(p, "when given a model: ")
    p.add_argument("--threads", type=int, metavar="N",
                   help="threads of the parallel loops (default: $XWEAVE_NUM_THREADS, else "
                   "every core)")
    _add_winograd(p, " (when given a model)")
    _add_schedule(p, " (when given a model)")
    _add_no_cache(p, " (when given a model)")
    p.add_argument("--print-time", action="store_true",
                   help="time the run (an accelerator module: the host's wall time of the "
                   "simulation, and the simulated cycles and time of each offloaded layer)")
    p.add_argument("--timeline", metavar="OUT.png",
                   help="an accelerator module: draw the load / compute / store timeline of "
                   "each offloaded layer of the run into OUT.png (.svg, .pdf)")
    p.add_argument("--profile", action="store_true",
                   help="time every kernel call over --repeat runs (a model is compiled with "
                   "profiling; a module must come from `xweave compile --profile`)")
    p.add_argument("--repeat", type=int, default=10, help="timed runs for --print-time")
    p.add_argument("--number", type=int, default=1, help="runs averaged per timed run")
    p.add_argument("--print-top", type=int, default=0, metavar="N",
                   help="print the N largest values of each output")
    p.set_defaults(func=_run)

    p = sub.add_parser("include-dir", help="print the directory of xweave.h (the C API of "
                       "model libraries), for `cc -I`")
    p.set_defaults(func=_include_dir)

    p = sub.add_parser("quantize", help="quantize a float ONNX model to int8 (QDQ form)",
                       description="Write an int8 copy of MODEL in ONNX's QDQ form, quantized "
                       "by onnxruntime's static quantizer (pre-processed first: shapes, "
                       "batch norms folded) with per-channel int8 weights and int8 "
                       "activations whose ranges are measured on the calibration inputs. "
                       "`xweave compile` runs the result as integer kernels. Needs the "
                       "'quantize' extra: pip install 'xweave[quantize]'.")
    p.add_argument("model", help="float32 ONNX model (.onnx)")
    p.add_argument("--calibration", metavar="INPUTS.npz", required=True,
                   help="sample inputs: one array per input name, of its shape or stacked "
                   "along a leading axis")
    p.add_argument("-o", "--output", required=True, help="the int8 model to write (.onnx)")
    p.add_argument("--per-tensor", action="store_true",
                   help="one scale per weight tensor (default: one per output channel)")
    p.set_defaults(func=_quantize)

    p = sub.add_parser("cache", help="show or empty the compile cache",
                       description="Builds are kept in the compile cache ($XWEAVE_CACHE_DIR, "
                       "else the user cache dir; off with XWEAVE_CACHE=0) and loaded from it "
                       "when the same model is built again with the same options and "
                       "versions. `info` prints its path, entries and size; `clear` "
                       "deletes every entry.")
    p.add_argument("action", choices=("info", "clear"))
    p.set_defaults(func=_cache)


def _include_dir(args: argparse.Namespace) -> None:
    print(xweave.include_dir())


def _quantize(args: argparse.Namespace) -> None:
    from xweave.quantizer import quantize_model  # lazy: onnxruntime is an optional extra

    quantize_model(args.model, args.calibration, args.output, per_channel=not args.per_tensor)
    print(f"wrote {args.output}")


def _cache(args: argparse.Namespace) -> None:
    from xweave import cache  # lazy: the other subcommands do not need it

    if args.action == "clear":
        removed = cache.clear()
        print(f"removed {removed} entr{'y' if removed == 1 else 'ies'} from {cache.cache_dir()}")
    else:
        print(cache.info())
