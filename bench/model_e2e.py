"""Whole models, batch 1: xweave (default schedules) vs onnxruntime, same process.

    python bench/model_e2e.py                                # every model, 1 and 2 threads
    python bench/model_e2e.py --models resnet18 --threads 1
    python bench/model_e2e.py --models resnet50 --fuse both  # the fusion ablation
    python bench/model_e2e.py --layout nchw                  # every conv in NCHW
    python bench/model_e2e.py --no-winograd                  # no Winograd convs
    python bench/model_e2e.py --targets "llvm;llvm -mcpu=znver3" # one build per target, same rounds
    python bench/model_e2e.py --smoke                        # SMOKE_MODELS scaled down (tests)

One JSON line per (model, threads, fusion setting):
`{"model", "threads", "fuse", "layout", "xweave_ms", "ort_ms", "ratio", "compile_s", "peak_bytes",
"max_rel_err", "smoke"}`. `ratio` is xweave's speed relative to onnxruntime (ort_ms /
xweave_ms: above 1, xweave is faster); times are medians over `--rounds` alternating
rounds (xweave, then onnxruntime) of the median of `--repeat` runs each. With
`--fuse both`, the fused record also carries `fusion_speedup` (unfused ms / fused ms).
A model that fails to compile gets a record with `error` (the exception) instead.

Both run through their Python API (`module.run(**feeds)`, `session.run(None, feeds)`),
on the same random input; `max_rel_err` compares the outputs. Models come from
`models.py` (random weights, cached in bench/models/). Threads:
xweave's are set per loaded module (`set_num_threads`), onnxruntime's per session
(`intra_op_num_threads`, one inter-op thread), so one compilation serves every
thread count.
"""

from __future__ import annotations

import argparse
import inspect
import statistics
import time

from common import emit, log, machine, median_time, parse_targets, set_threads


PAUSE_S = 0.02
"""Seconds between timing rounds: libgomp's and onnxruntime's idle threads stop spinning."""
SMOKE_MODELS = ("resnet18",)
"""The models a `--smoke` run times by default (scaled down: `models.SMALL`)."""


def fuse_supported() -> bool:
    """`xweave.build(..., fuse=...)` exists (the fusion ablation needs it)."""
    from xweave import driver

    return "fuse" in inspect.signature(driver.build).parameters


def ort_session(path, threads: int):
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def compile_model(path, fuse: bool, layout: str = "nchwc", winograd: bool = True,
                  target: str | None = None):
    """(module, seconds) for `xweave.build`, with fusion on or off, NCHW or NCHW16c convs,
    with or without the winograd stage, for `target` (default: the default target)."""
    import xweave

    options = {} if fuse else {"fuse": False}
    if target is not None:
        options["target"] = target
    options["layout"] = layout == "nchwc"
    if not winograd:
        options["winograd"] = False
    start = time.perf_counter()
    module = xweave.build(path, **options)
    return module, time.perf_counter() - start


def max_rel_err(got, expected) -> float:
    import numpy as np

    worst = 0.0
    for g, e in zip(got, expected, strict=True):
        scale = max(float(np.abs(e).max()), 1e-30)
        worst = max(worst, float(np.abs(g - e).max()) / scale)
    return worst


def bench_model(name: str, threads_list: list[int], fuse_modes: list[bool], repeat: int,
                layout: str = "nchwc", winograd: bool = True, rounds: int = 7,
                targets: list[str] | None = None, smoke: bool = False) -> list[dict]:
    """Time model `name` (with `smoke`, scaled down) against onnxruntime; returns the
    records it emitted."""
    import onnx

    import models
    from xweave.runtime.threads import set_num_threads

    path = models.model_file(name, smoke)
    feeds = models.random_inputs(onnx.load(str(path), load_external_data=False))

    targets = targets or [None]
    emitted: list[dict] = []
    compiled = {}
    for target in targets:
        for fuse in fuse_modes:
            try:
                compiled[fuse, target] = compile_model(path, fuse, layout, winograd, target)
            except Exception as e:  # noqa: BLE001 - reported, the other models still run
                emitted.append({"model": name, "fuse": fuse, "target": target,
                                "error": f"{type(e).__name__}: {e}"})
                emit(emitted[-1])
                log(f"{name} (fuse={'on' if fuse else 'off'}, {target}): compilation failed: "
                    f"{type(e).__name__}: {e}")
    for threads in threads_list:
        # Alternating rounds (xweave, then onnxruntime, a pause after each so that idle
        # threads stop spinning), medians over the rounds: a shared VM's speed drifts
        # within and between processes, and rounds spread the drift over both.
        session = ort_session(path, threads)
        expected = session.run(None, feeds)
        samples: dict = {fuse: [] for fuse in compiled}
        ort_samples = []
        got = {}
        for fuse, (module, _) in compiled.items():
            set_num_threads(module, threads)
            got[fuse] = module.run(**feeds)
        for r in range(rounds):
            # The builds' order alternates too: the build timed first in a round is
            # favoured.
            builds = list(compiled.items())
            for fuse, (module, _) in builds if r % 2 == 0 else builds[::-1]:
                samples[fuse].append(median_time(lambda: module.run(**feeds), repeat))
                time.sleep(PAUSE_S)
            ort_samples.append(median_time(lambda: session.run(None, feeds), repeat))
            time.sleep(PAUSE_S)
        del session
        ort_s = statistics.median(ort_samples)
        timed = {fuse: (got[fuse], statistics.median(samples[fuse])) for fuse in compiled}
        records = []
        for key, (module, compile_s) in compiled.items():
            fuse, target = key
            got, xw_s = timed[key]
            record = {
                "model": name, "threads": threads, "fuse": fuse, "layout": layout,
                "target": target or str(module.target),
                "winograd": winograd,
                "xweave_ms": round(xw_s * 1e3, 3), "ort_ms": round(ort_s * 1e3, 3),
                "ratio": round(ort_s / xw_s, 3), "compile_s": round(compile_s, 1),
                "peak_bytes": module.peak_memory_bytes,
                "max_rel_err": float(f"{max_rel_err(got, expected):.3g}"), "smoke": smoke,
                **machine(),
            }
            records.append(record)
        for record in records:
            unfused = next((r for r in records if not r["fuse"] and r["target"] == record["target"]),
                           None)
            if record["fuse"] and unfused is not None:
                record["fusion_speedup"] = round(unfused["xweave_ms"] / record["xweave_ms"], 3)
            emit(record)
            emitted.append(record)
            log(f"{name:14s} [{record['target']}] threads={threads} fuse={'on ' if record['fuse'] else 'off'} "
                f"xweave {record['xweave_ms']:9.2f} ms  ort {record['ort_ms']:9.2f} ms  "
                f"ratio {record['ratio']:.2f}x  compile {record['compile_s']:.1f} s  "
                f"peak {(record['peak_bytes'] or 0) / 2**20:.1f} MiB  err {record['max_rel_err']:.1e}")
    return emitted


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", help="comma-separated names (default: all)")
    parser.add_argument("--threads", default="1,2", help="comma-separated thread counts")
    parser.add_argument("--fuse", choices=("on", "off", "both"), default="on",
                        help="operator fusion: on (default), off, or both (the ablation)")
    parser.add_argument("--repeat", type=int,
                        help="timed runs per round (a median; default 7, 1 with --smoke)")
    parser.add_argument("--rounds", type=int,
                        help="alternating rounds of xweave and onnxruntime (medians over them; "
                        "default 7, 1 with --smoke)")
    parser.add_argument("--layout", choices=("nchw", "nchwc"), default="nchwc",
                        help="conv data layout: nchwc (the default build) or nchw (xweave.build(layout=False))")
    parser.add_argument("--no-winograd", action="store_true",
                        help="build without the winograd stage (xweave.build(winograd=False))")
    parser.add_argument("--targets", help="';'-separated targets to build each model for "
                        "(default: XWEAVE_TARGET, else the host), timed in the same rounds")
    parser.add_argument("--smoke", action="store_true",
                        help="the models scaled down (models.SMALL; default: "
                        f"{','.join(SMOKE_MODELS)}), one round of one run: checks that the "
                        "script works (tests), not a figure")
    args = parser.parse_args(argv)
    if args.repeat is None:
        args.repeat = 1 if args.smoke else 7
    if args.rounds is None:
        args.rounds = 1 if args.smoke else 7
    threads_list = [int(t) for t in args.threads.split(",")]
    set_threads(max(threads_list))

    import models

    names = args.models.split(",") if args.models else \
        list(SMOKE_MODELS if args.smoke else models.MODELS)
    unknown = [n for n in names if n not in models.MODELS]
    if unknown:
        parser.error(f"unknown model(s) {', '.join(unknown)} (known: {', '.join(models.MODELS)})")
    fuse_modes = {"on": [True], "off": [False], "both": [True, False]}[args.fuse]
    if False in fuse_modes and not fuse_supported():
        log("xweave.build has no `fuse` option yet: the fusion-off measurements are skipped")
        fuse_modes = [f for f in fuse_modes if f] or []
        if not fuse_modes:
            return
    log(f"machine: {machine()}")
    for name in names:
        bench_model(name, threads_list, fuse_modes, args.repeat, args.layout, not args.no_winograd,
                    args.rounds, parse_targets(args.targets) if args.targets else None,
                    smoke=args.smoke)


if __name__ == "__main__":
    main()
