"""Shared helpers for the benchmarks: thread settings, timing, JSON-lines output.

Benchmarks print one JSON object per measurement and never assert on time. Set the
thread count before numpy/onnxruntime start their pools: run a benchmark once per
thread count (each script takes --threads and sets the environment itself).
"""

from __future__ import annotations

import json
import os
import platform
import sys
import time


def set_threads(threads: int) -> None:
    """Make numpy (OpenBLAS), onnxruntime and xweave use `threads` threads.

    Must run before numpy is imported."""
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "XWEAVE_NUM_THREADS"):
        os.environ[var] = str(threads)


def median_time(fn, repeat: int = 7, min_seconds: float = 0.05) -> float:
    """Median seconds per call over `repeat` timed runs, each long enough to be stable."""
    fn()  # warm-up
    number = 1
    while True:
        start = time.perf_counter()
        for _ in range(number):
            fn()
        if time.perf_counter() - start >= min_seconds or number >= 1 << 16:
            break
        number *= 2
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        samples.append((time.perf_counter() - start) / number)
    samples.sort()
    return samples[len(samples) // 2]


WARM_SECONDS = 0.5
# Every block of `interleaved_times` runs its function for WARM_SECONDS first, so that
# the previous block's library has stopped spinning: OpenBLAS's worker threads spin for
# up to 2^28 cycles after a call. With a 0.1 s warm-up, the same xweave kernel timed
# right after numpy's block ran 20% slower on 2 threads than after another xweave
# block (512^3); with 0.4 s, equal. The order of the blocks alternates between rounds.
QUIET_WAIT_SECONDS = 300.0
QUIET_SHARE = 0.02


def _others_cpu_seconds() -> float:
    """CPU seconds used by the whole machine minus this process, so far."""
    with open("/proc/stat") as f:
        ticks = [int(v) for v in f.readline().split()[1:9]]
    busy = (sum(ticks) - ticks[3] - ticks[4]) / os.sysconf("SC_CLK_TCK")
    return busy - sum(os.times()[:2])


def interleaved_times(fns, rounds: int, min_seconds: float = 0.05,
                      quiet: bool = False) -> list[list[float]]:
    """Seconds per call of each function, `rounds` samples each, taken in turn (with
    `quiet`, only rounds the rest of the machine left alone; maybe fewer)."""
    number = 1
    for fn in fns:
        fn()
        start = time.perf_counter()
        fn()
        number = max(number, int(min_seconds / max(time.perf_counter() - start, 1e-9)))
    samples: list[list[float]] = [[] for _ in fns]
    deadline = time.perf_counter() + QUIET_WAIT_SECONDS
    while len(samples[0]) < rounds:
        others, begin = _others_cpu_seconds() if quiet else 0.0, time.perf_counter()
        times = [0.0] * len(fns)
        order = range(len(fns)) if len(samples[0]) % 2 == 0 else reversed(range(len(fns)))
        for i in order:
            fn = fns[i]
            warm = time.perf_counter() + WARM_SECONDS
            while time.perf_counter() < warm:
                fn()
            start = time.perf_counter()
            for _ in range(number):
                fn()
            times[i] = (time.perf_counter() - start) / number
        if quiet:
            cores = os.cpu_count() or 1
            share = (_others_cpu_seconds() - others) / ((time.perf_counter() - begin) * cores)
            if share >= QUIET_SHARE:
                if time.perf_counter() > deadline:
                    break
                continue
        for out, t in zip(samples, times):
            out.append(t)
    return samples


def machine() -> dict:
    info = {"python": platform.python_version(), "cpus": os.cpu_count()}
    try:
        import llvmlite.binding as llvm

        info["cpu"] = llvm.get_host_cpu_name()
    except Exception:  # pragma: no cover - informational only
        pass
    return info


def emit(record: dict) -> None:
    print(json.dumps(record), flush=True)


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)
