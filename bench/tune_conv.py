"""The TVM paper's tuner comparison: ResNet-18 C1-C12 tuned by lgbm, ga and random.

    python bench/tune_conv.py --trials 200 --seeds 0,1,2 --threads 1
    python bench/tune_conv.py --layers C2,C5 --trials 16 --seeds 0     # a quick check
    python bench/tune_conv.py --smoke     # C5 scaled down, 1 trial per tuner (tests)

Each layer is one ONNX Conv node (`conv2d.conv_model`); its kernel is the tuning task
(`autotune.kernel_tasks.extract_tasks`). Every (layer, tuner, seed) appends to its own
records file in `--out-dir` and resumes from it, so an interrupted run continues. Per
layer (one JSON line): the default schedule's GFLOP/s, onnxruntime's, and per tuner
the best GFLOP/s found (and re-timed: every run's best point, the default point and
onnxruntime are timed again together in `--remeasure` rounds; the best of those
medians is "the best any tuner found", and the ratios come from the same rounds),
the trials needed to reach 95% of that (per seed), whether the layer meets the paper's
claim (`meets_paper_target`: lgbm's median run reaches the mark in at most half the
trials of random search's and in fewer than the GA's), and the time per trial split
into build / measure / tuner. A final line gives the geometric-mean ratio of the best
tuned layers to onnxruntime and the count of layers meeting the claim; `curves.png` in
`--out-dir` draws best-so-far GFLOP/s against trials per tuner.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import tempfile

from common import emit, log, machine, median_time, set_threads
from conv2d import RESNET18, conv_model, smoke_layer


def first_reaching(curve: list[float], target: float) -> int | None:
    """1-based trial at which a best-so-far curve reaches `target` (None: never)."""
    return next((i + 1 for i, v in enumerate(curve) if v >= target), None)


def median_trials(reach: list[int | None]) -> float | None:
    """Median over seeds of the trials to the 95% mark (None: the median run did not
    reach it within the budget; runs that never reached it count as the slowest)."""
    ranked = sorted(reach, key=lambda r: math.inf if r is None else r)
    mid = ranked[(len(ranked) - 1) // 2: len(ranked) // 2 + 1]
    return None if None in mid else statistics.mean(mid)


def meets_paper_target(lgbm: float | None, ga: float | None, random: float | None) -> bool:
    """The paper's claim for one layer: the model-guided tuner reaches the 95% mark in
    at most half the trials of random search and in fewer than the GA (median runs;
    a baseline that never reached it is beaten by any lgbm run that did)."""
    if lgbm is None:
        return False
    return (random is None or lgbm <= random / 2) and (ga is None or lgbm < ga)


def remeasure(task, runs: dict, default_point, time_onnxruntime, builder, runner,
              rounds: int) -> tuple[dict, float, float] | None:
    """Re-time every run's best point, the default point and onnxruntime together in
    `rounds` rounds (the order reversed every other round), so that all of a layer's
    figures come from one window of this shared machine. Returns ((tuner, seed) ->
    median GFLOP/s of that run's best point, the default's median GFLOP/s,
    onnxruntime's median GFLOP/s); None without rounds or best points."""
    from xweave.autotune import measure_points

    keys = [k for k, r in runs.items() if r.best_point is not None]
    if not keys or rounds < 1:
        return None
    points = list(dict.fromkeys([default_point] + [runs[k].best_point for k in keys]))
    samples: dict = {p: [] for p in points}
    ort = []
    for i in range(rounds):
        ordered = points if i % 2 == 0 else points[::-1]
        if i % 2:
            ort.append(task.flops / time_onnxruntime() / 1e9)
        for p, result in zip(ordered, measure_points(task, ordered, builder, runner)):
            samples[p].append(result.gflops if result.ok else 0.0)
        if i % 2 == 0:
            ort.append(task.flops / time_onnxruntime() / 1e9)
    bests = {k: statistics.median(samples[runs[k].best_point]) for k in keys}
    return bests, statistics.median(samples[default_point]), statistics.median(ort)


def onnxruntime_timer(model, cin: int, size: int, threads: int, repeat: int = 7):
    """A function timing one onnxruntime session of `model` (median seconds per run of
    `repeat`)."""
    import numpy as np
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    session = ort.InferenceSession(model.SerializeToString(), options)
    x = np.random.default_rng(1).standard_normal((1, cin, size, size), dtype=np.float32)
    return lambda: median_time(lambda: session.run(None, {"x": x}), repeat)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--layers", help="e.g. C1,C2 (default: all; C5 with --smoke)")
    parser.add_argument("--tuners", default="lgbm,ga,random")
    parser.add_argument("--seeds", help="comma-separated seeds, one run each (default 0,1,2; "
                        "0 with --smoke)")
    parser.add_argument("--trials", type=int,
                        help="trial budget per layer and run (default 200, 1 with --smoke)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--builders", type=int, default=None,
                        help="build processes (default: one per core)")
    parser.add_argument("--out-dir", help="where the records files and curves.png go, and "
                        "runs resume from (default: bench/out/tune_conv; with --smoke, a "
                        "temporary folder)")
    parser.add_argument("--remeasure", type=int,
                        help="rounds re-timing every run's best point with the default and "
                             "onnxruntime; the 95%% mark and the ratios come from those "
                             "medians (0: from the timings found while tuning; default 3, "
                             "1 with --smoke)")
    parser.add_argument("--smoke", action="store_true",
                        help="the layers scaled down (conv2d.smoke_layer), seed 0, 1 trial "
                        "timing one run, 1 remeasuring round: checks that the script works "
                        "(tests), not a figure")
    args = parser.parse_args(argv)
    args.layers = args.layers or ("C5" if args.smoke else ",".join(RESNET18))
    args.seeds = args.seeds or ("0" if args.smoke else "0,1,2")
    if args.trials is None:
        args.trials = 1 if args.smoke else 200
    if args.remeasure is None:
        args.remeasure = 1 if args.smoke else 3
    scratch = None
    if args.out_dir is None:
        if args.smoke:  # not bench/out: a smoke run must not resume from a real run's records
            scratch = tempfile.TemporaryDirectory(prefix="xweave-tune-conv-smoke-")
        args.out_dir = scratch.name if scratch else "bench/out/tune_conv"
    set_threads(args.threads)

    from xweave.autotune import LocalBuilder, LocalRunner, measure_points, plot_curves, tune
    from xweave.autotune.kernel_tasks import extract_tasks
    from xweave.pipeline import CompileOptions

    layers = args.layers.split(",")
    tuners = args.tuners.split(",")
    seeds = [int(s) for s in args.seeds.split(",")]
    os.makedirs(args.out_dir, exist_ok=True)
    builder = LocalBuilder(n_parallel=args.builders, timeout=60)
    runner = LocalRunner(timeout=60, **({"repeat": 1, "min_repeat_ms": 1.0} if args.smoke else {}))
    ratios, paths, met = [], [], []
    per_trial = {"build": [], "measure": [], "tuner": [], "total": []}
    try:
        for name in layers:
            spec = smoke_layer(RESNET18[name]) if args.smoke else RESNET18[name]
            size, cin, cout, k, stride, pad, groups = spec
            model = conv_model(size, cin, cout, k, stride, pad, groups)
            # The direct conv (the paper's tasks), also where a build would use Winograd.
            task = max((t for t in extract_tasks(model, options=CompileOptions(winograd=False)) if t.is_reduction),
                       key=lambda t: t.flops)
            (default,) = measure_points(task, [task.default_point()], builder, runner)
            time_onnxruntime = onnxruntime_timer(model, cin, size, args.threads,
                                                 1 if args.smoke else 7)
            ort_gflops = task.flops / time_onnxruntime() / 1e9
            default_gflops = default.gflops
            runs = {}
            for tuner in tuners:
                for seed in seeds:
                    path = os.path.join(args.out_dir, f"{name}-{tuner}-s{seed}.jsonl")
                    paths.append(path)
                    log(f"{name} {tuner} seed {seed}: {task.space.size} points, "
                        f"{args.trials} trials -> {path}")
                    result = tune(task, tuner=tuner, trials=args.trials, seed=seed,
                                  records_path=path, builder=builder, runner=runner,
                                  label=f"{name} {tuner} s{seed}")
                    runs[(tuner, seed)] = result
                    if result.trials:
                        for part in per_trial:
                            per_trial[part].append(result.timing.get(part, 0.0) / result.trials)
            best_any = max(r.best_gflops for r in runs.values())
            remeasured = {}
            again = remeasure(task, runs, task.default_point(), time_onnxruntime,
                              builder, runner, args.remeasure)
            if again:
                # The 95% mark from the re-timed best points: a single lucky timing
                # (+2-3% here) would otherwise set a mark no other run can reach. The
                # ratios from the same rounds: onnxruntime timed once, at the start,
                # swung 61-85 GFLOP/s on C1 between sessions.
                remeasured, default_gflops, ort_gflops = again
                best_any = max(remeasured.values())
            record = {
                "bench": "tune_conv", "layer": name, "threads": args.threads,
                "shape": f"{size}x{size} {cin}->{cout} k{k} s{stride} p{pad}",
                "space": task.space.size, "trials": args.trials,
                "default_gflops": round(default_gflops, 2),
                "onnxruntime_gflops": round(ort_gflops, 2),
                "best_gflops": round(best_any, 2),
                "ratio_vs_onnxruntime": round(best_any / ort_gflops, 3),
                "ratio_vs_default": round(best_any / default_gflops, 3) if default_gflops else None,
            }
            for tuner in tuners:
                mine = [runs[(tuner, s)] for s in seeds]
                reach = [first_reaching(r.curve, 0.95 * best_any) for r in mine]
                record[tuner] = {
                    "best_gflops": round(max(r.best_gflops for r in mine), 2),
                    "mean_best_gflops": round(statistics.mean(r.best_gflops for r in mine), 2),
                    "remeasured_best_gflops": [round(remeasured[(tuner, s)], 2)
                                               for s in seeds if (tuner, s) in remeasured],
                    "trials_to_95pct": reach,
                    "errors": sum(v for r in mine for e, v in r.errors.items() if e),
                    "ms_per_trial": {
                        part: round(1000 * sum(r.timing.get(part, 0.0) for r in mine)
                                    / max(1, sum(r.trials for r in mine)), 1)
                        for part in ("total", "build", "measure", "tuner")},
                }
            medians = {t: median_trials(record[t]["trials_to_95pct"]) for t in tuners}
            if {"lgbm", "ga", "random"} <= set(tuners):
                record["meets_paper_target"] = meets_paper_target(
                    medians["lgbm"], medians["ga"], medians["random"])
                met.append(record["meets_paper_target"])
            ratios.append(best_any / ort_gflops)
            emit({**record, **machine()})
            log(f"{name}: best {best_any:.1f} GFLOP/s (default {default_gflops:.1f}, "
                f"onnxruntime {ort_gflops:.1f}); trials to 95%: "
                + ", ".join(f"{t} {record[t]['trials_to_95pct']}" for t in tuners))
    finally:
        builder.close()
        runner.close()
    if ratios:
        emit({"bench": "tune_conv_geomean", "threads": args.threads, "layers": layers,
              "ratio_vs_onnxruntime": round(math.exp(sum(map(math.log, ratios)) / len(ratios)), 3),
              "layers_meeting_paper_target": f"{sum(met)}/{len(met)}" if met else None,
              "ms_per_trial": {k: round(1000 * statistics.mean(v), 1)
                               for k, v in per_trial.items() if v}})
        png = os.path.join(args.out_dir, "curves.png")
        plot_curves(paths, png, title=f"ResNet-18 conv layers, {args.threads} thread(s)")
        log(f"wrote {png}")


if __name__ == "__main__":
    sys.exit(main())
