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
