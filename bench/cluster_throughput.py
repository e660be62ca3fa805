"""Measurements per second through a Dask cluster on this machine, with 1 and 2 workers.

    python bench/cluster_throughput.py [--workers 1,2] [--candidates 16] [--trials 16]
    python bench/cluster_throughput.py --smoke    # 1 worker, 2 tiny candidates (tests)

A scheduler runs in this process; every worker (`start_worker`, one thread, advertising
this host's target label) runs on this machine. For each worker count:

* `measure`: the same pre-built matmul candidates (`--size`, default 32^3, random
  schedules) timed by `ClusterRunner.run` once the workers are warm (runner processes
  started), i.e. measurements per second of the runners alone;
* `tune`: `tune(..., tuner="random")` with `ClusterBuilder` + `ClusterRunner`, batches
  of 2 per worker: trials (build + measure) per second, the end-to-end rate.

The same two figures for `LocalBuilder`/`LocalRunner` (mode `local`) are the reference.
Prints one JSON object per figure (stdout) and a readable line (stderr); never asserts.
Timings use `LocalRunner`'s defaults (5 repeats of at least 20 ms) unless changed. On a
2-core machine two measuring workers share the cores with the builders and with each
other, so their timings are less trustworthy than one worker's (see the figures'
`load` field: the 1-minute load average at the start).
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time

from common import emit, log, machine


def _figure(mode: str, workers: int, phase: str, count: int, seconds: float, errors: int,
            load: float, **extra) -> None:
    record = {"bench": "cluster_throughput", "mode": mode, "workers": workers, "phase": phase,
              "measurements": count, "seconds": round(seconds, 3),
              "per_second": round(count / seconds, 3) if seconds > 0 else None,
              "errors": errors, "load": round(load, 2), **machine(), **extra}
    emit(record)
    log(f"{mode:7s} workers={workers} {phase:7s} {count} in {seconds:6.2f} s = "
        f"{record['per_second']} /s (errors {errors}, load {load:.1f})")


def _runs(args, task, points, builds, builder, runner, mode, workers):
    load = os.getloadavg()[0]
    runner.run(task, builds[: max(2, workers)])  # warm-up: runner processes start
    start = time.perf_counter()
    results = runner.run(task, builds)
    seconds = time.perf_counter() - start
    _figure(mode, workers, "measure", len(results), seconds,
            sum(1 for r in results if r.error_no), load, size=args.size)
    from xweave.autotune import tune

    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        result = tune(task, tuner="random", trials=args.trials, seed=args.seed + workers,
                      batch_size=2 * workers, builder=builder, runner=runner, progress=False,
                      records_path=os.path.join(tmp, "records.jsonl"))
        seconds = time.perf_counter() - start
    _figure(mode, workers, "tune", result.trials, seconds,
            sum(v for k, v in result.errors.items() if k), load, size=args.size,
            best_gflops=round(result.best_gflops, 2))


SMOKE = {"workers": "1", "candidates": 2, "trials": 2, "size": 8, "min_repeat_ms": 1.0,
         "repeat": 1}
"""The settings of a `--smoke` run (each taken unless given)."""
DEFAULTS = {"workers": "1,2", "candidates": 16, "trials": 16, "size": 32, "min_repeat_ms": 20.0,
            "repeat": 5}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workers", help="comma-separated worker counts (default 1,2)")
    parser.add_argument("--candidates", type=int,
                        help="pre-built candidates timed by `measure` (default 16)")
    parser.add_argument("--trials", type=int, help="trials of `tune` (default 16)")
    parser.add_argument("--size", type=int, help="the matmul's M = N = K (default 32)")
    parser.add_argument("--min-repeat-ms", type=float,
                        help="shortest timed run of a measurement (default 20)")
    parser.add_argument("--repeat", type=int, help="timed runs per measurement (default 5)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-local", action="store_true", help="skip the local reference")
    parser.add_argument("--smoke", action="store_true",
                        help="SMOKE's settings (1 worker, 2 candidates and trials of an 8^3 "
                        "matmul, one short run each): checks that the script works (tests), "
                        "not a figure")
    args = parser.parse_args(argv)
    for key, value in {**DEFAULTS, **(SMOKE if args.smoke else {})}.items():
        if getattr(args, key) is None:
            setattr(args, key, value)

    from xweave.autotune import LocalBuilder, LocalRunner, make_task
    from xweave.autotune.cluster import (
        ClusterBuilder,
        ClusterRunner,
        default_target_label,
        start_scheduler,
        start_worker,
    )

    n = args.size
    task = make_task("matmul_ir", M=n, N=n, K=n)
    points = task.space.sample(args.candidates, random.Random(args.seed), exclude=set())
    options = dict(min_repeat_ms=args.min_repeat_ms, repeat=args.repeat, timeout=60)
    builds = LocalBuilder(n_parallel=0).build(task, points)
    label = default_target_label()

    if not args.no_local:
        builder, runner = LocalBuilder(n_parallel=1, timeout=60), LocalRunner(**options)
        try:
            _runs(args, task, points, builds, builder, runner, "local", 1)
        finally:
            builder.close()
            runner.close()

    for count in [int(w) for w in args.workers.split(",")]:
        scheduler = start_scheduler()
        procs = [start_worker(scheduler.scheduler_address, label, name=f"bench-{i}")
                 for i in range(count)]
        try:
            builder = ClusterBuilder(scheduler.scheduler_address, timeout=60)
            runner = ClusterRunner(scheduler.scheduler_address, target=label, **options)
            deadline = time.monotonic() + 120
            while runner.n_workers < count and time.monotonic() < deadline:
                time.sleep(0.2)
            builder.n_parallel = count
            builder.build(task, points[: 2 * count])  # warm-up: builder processes start
            _runs(args, task, points, builds, builder, runner, "cluster", count)
            builder.close()
            runner.close()
        finally:
            for p in procs:
                p.terminate()
            for p in procs:
                p.wait(timeout=30)
            scheduler.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
