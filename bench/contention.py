"""Call times with another process keeping one core busy: default threads vs one.

    python bench/contention.py                         # the example CNN, 3000 calls a block
    python bench/contention.py --model resnet18 --calls 200
    python bench/contention.py --busy 0                # the quiet machine, for comparison
    python bench/contention.py --smoke                 # 5 calls a block, one round (tests)

A busy loop (`--busy` processes, each `while True: pass`, not pinned) runs for the
whole measurement. Calls of one module are timed one by one (`time.perf_counter`
around `module.run`) in blocks of `--calls`, alternating between 1 thread and the
default thread count (`--threads`, default: every core), for `--rounds` rounds.
One JSON line per thread count: the medians over rounds of the block's median, 99th
percentile, maximum and total (ms), and the count of calls over 1 ms; then a line with
the ratios default/1 of p99 and total (lower is better; 1 means no cost of
parallelism under contention).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

from common import emit, log, machine


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="small_cnn", help="small_cnn or a bench/models.py name")
    parser.add_argument("--calls", type=int, help="calls a block (default 3000, 5 with --smoke)")
    parser.add_argument("--rounds", type=int, help="rounds (default 5, 1 with --smoke)")
    parser.add_argument("--busy", type=int, default=1, help="busy-loop processes")
    parser.add_argument("--threads", type=int, default=0, help="default threads (0: every core)")
    parser.add_argument("--smoke", action="store_true",
                        help="few calls, one round, a bench/models.py model scaled down "
                        "(models.SMALL): checks that the script works (tests), not a figure")
    args = parser.parse_args(argv)
    if args.calls is None:
        args.calls = 5 if args.smoke else 3000
    if args.rounds is None:
        args.rounds = 1 if args.smoke else 5

    import numpy as np

    import xweave
    from xweave.runtime.threads import available_cores, set_num_threads

    if args.model == "small_cnn":
        model = Path(__file__).resolve().parents[1] / "examples" / "small_cnn.onnx"
        import onnx

        model = onnx.load(model)
    else:
        import models

        model = models.build_small(args.model) if args.smoke else models.build(args.model)
    module = xweave.build(model)
    rng = np.random.default_rng(0)
    feeds = {s.name: rng.standard_normal(s.shape).astype(s.dtype) for s in module.inputs}
    default = args.threads or available_cores()
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
            for _ in range(args.busy)]
    try:
        time.sleep(0.5)
        stats: dict[int, list[dict]] = {1: [], default: []}
        for r in range(args.rounds):
            order = (1, default) if r % 2 == 0 else (default, 1)
            for threads in order:
                set_num_threads(module, threads)
                for _ in range(20):
                    module.run(**feeds)
                times = np.empty(args.calls)
                for i in range(args.calls):
                    start = time.perf_counter()
                    module.run(**feeds)
                    times[i] = time.perf_counter() - start
                times *= 1e3
                stats[threads].append({
                    "median_ms": float(np.median(times)), "p99_ms": float(np.percentile(times, 99)),
                    "max_ms": float(times.max()), "total_ms": float(times.sum()),
                    "over_1ms": int((times > 1).sum())})
                log(f"round {r} threads {threads}: {stats[threads][-1]}")
    finally:
        for p in busy:
            p.kill()
            p.wait()
    summary = {}
    for threads, rows in stats.items():
        summary[threads] = {k: statistics.median(row[k] for row in rows) for k in rows[0]}
        emit({"model": args.model, "threads": threads, "busy": args.busy, "calls": args.calls,
              "rounds": args.rounds, **summary[threads], "smoke": args.smoke, **machine()})
    emit({"model": args.model, "busy": args.busy,
          "p99_ratio": summary[default]["p99_ms"] / summary[1]["p99_ms"],
          "total_ratio": summary[default]["total_ms"] / summary[1]["total_ms"],
          "smoke": args.smoke, **machine()})


if __name__ == "__main__":
    main()
