"""The `xweave` subcommands, in the spirit of tvmc: compile, run."""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from xweave.errors import InputError, XweaveError


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
    import xweave

    module = xweave.build(args.model, target=args.target,
                          input_shapes=parse_input_shapes(args.input_shapes),
                          dump_ir=args.dump_ir)
    module.export(args.output)
    print(f"wrote {args.output}")


def _load_for_run(path: str, input_shapes):
    import xweave

    if Path(path).suffix in (".onnx", ".mlir"):
        return xweave.build(path, input_shapes=input_shapes)
    return xweave.load_module(path)


def _read_inputs(module, path: str | None, fill_mode: str) -> dict[str, np.ndarray]:
    if path is None:
        rng = np.random.default_rng(0)
        fill = {
            "random": lambda s: rng.standard_normal(s.shape).astype(s.dtype),
            "zeros": lambda s: np.zeros(s.shape, s.dtype),
            "ones": lambda s: np.ones(s.shape, s.dtype),
        }[fill_mode]
        return {s.name: fill(s) for s in module.inputs}
    try:
        with np.load(path) as npz:
            return {k: npz[k] for k in npz.files}
    except (ValueError, OSError) as e:
        if isinstance(e, FileNotFoundError):
            raise
        raise InputError(f"{path}: cannot read inputs as .npz ({e})") from None


def _run(args: argparse.Namespace) -> None:
    module = _load_for_run(args.module, parse_input_shapes(args.input_shapes))
    inputs = _read_inputs(module, args.inputs, args.fill_mode)
    outputs = module.run(**inputs)
    if args.output:
        np.savez(args.output, **{s.name: o for s, o in zip(module.outputs, outputs)})
        print(f"wrote {args.output}")
    for spec, out in zip(module.outputs, outputs):
        flat = out.reshape(-1)
        head = np.array2string(flat[:8], precision=5, separator=", ")
        print(f"output '{spec.name}': shape {list(out.shape)} {out.dtype}, first values {head}")
        if args.print_top:
            top = np.argsort(flat)[::-1][: args.print_top]
            print("  top: " + ", ".join(f"{i}: {flat[i]:.5f}" for i in top))
    if args.print_time:
        times_ms = module.benchmark(inputs, repeat=args.repeat, number=args.number) * 1e3
        print(f"time (ms) over {args.repeat} runs: mean {times_ms.mean():.3f}  "
              f"median {np.median(times_ms):.3f}  max {times_ms.max():.3f}  "
              f"min {times_ms.min():.3f}  std {times_ms.std():.3f}")


def register(sub) -> None:
    """Add the subcommands to an argparse subparsers object."""
    p = sub.add_parser("compile", help="compile a model into a deployable module")
    p.add_argument("model", help="ONNX model (.onnx) or graph-stage IR (.mlir)")
    p.add_argument("--target", default="llvm", help="compilation target (default: llvm)")
    p.add_argument("-o", "--output", required=True, help="the module file to write")
    p.add_argument("--input-shapes", help="bind symbolic input dims, e.g. data:1x3x224x224")
    p.add_argument("--dump-ir", metavar="DIR", help="write the IR after every stage into DIR")
    p.set_defaults(func=_compile)

    p = sub.add_parser("run", help="run a compiled module (or an ONNX model, compiled first)")
    p.add_argument("module", help="module written by `xweave compile`, or an .onnx/.mlir model")
    p.add_argument("-i", "--inputs", help=".npz file with one array per input name")
    p.add_argument("--fill-mode", choices=("random", "zeros", "ones"), default="random",
                   help="inputs to use when --inputs is not given (default: random)")
    p.add_argument("-o", "--output", help=".npz file to write the outputs to")
    p.add_argument("--input-shapes", help="bind symbolic input dims when given a model")
    p.add_argument("--print-time", action="store_true", help="time the run")
    p.add_argument("--repeat", type=int, default=10, help="timed runs for --print-time")
    p.add_argument("--number", type=int, default=1, help="runs averaged per timed run")
    p.add_argument("--print-top", type=int, default=0, metavar="N",
                   help="print the N largest values of each output")
    p.set_defaults(func=_run)
