"""Shared helpers for the benchmarks: thread settings, timing, JSON-lines output.

Benchmarks print one JSON object per measurement and never assert on time. Set the
thread count before numpy/onnxruntime start their pools: run a benchmark once per
thread count (each script takes --threads and sets the environment itself).

Importing this module in a benchmark script's process (not in a test that imports a
script) removes `OPENBLAS_CORETYPE` and `OPENBLAS_L2_SIZE` from its environment
(numpy must not be imported before it): a machine may set them
to make OpenBLAS run another CPU's kernels (Haswell's AVX2 kernel on an AVX-512 CPU),
and the benchmarks compare against OpenBLAS's own kernel for this CPU. Every record
names the CPU (LLVM's host name) and the OpenBLAS kernel that ran (`machine()`).
"""

from __future__ import annotations

import json
import os
import platform
import sys
import time

OPENBLAS_OVERRIDES = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
"""Environment variables that make OpenBLAS use another CPU's kernels or cache size."""


def _benchmark_process() -> bool:
    """Whether this process runs a script of bench/ (not a test importing one)."""
    main = getattr(sys.modules.get("__main__"), "__file__", None) or ""
    return bool(main) and os.path.dirname(os.path.abspath(main)) == os.path.dirname(
        os.path.abspath(__file__))


REMOVED_OVERRIDES = ({var: os.environ.pop(var) for var in OPENBLAS_OVERRIDES
                      if var in os.environ} if _benchmark_process() else {})
if "numpy" in sys.modules and REMOVED_OVERRIDES:  # pragma: no cover - a misuse
    print(f"warning: numpy was imported before bench/common.py: {REMOVED_OVERRIDES} still "
          "apply to OpenBLAS", file=sys.stderr)


def set_threads(threads: int) -> None:
    """Make numpy (OpenBLAS), onnxruntime and xweave use `threads` threads.

    Must run before numpy is imported."""
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "XWEAVE_NUM_THREADS"):
        os.environ[var] = str(threads)


def per_call_times(fn, *args, repeat: int = 7, min_seconds: float = 0.05,
                   max_number: int = 1 << 16) -> list[float]:
    """Seconds per call of `fn(*args)` in each of `repeat` timed runs; a run makes as
    many calls (up to `max_number`) as take `min_seconds`, after a warm-up call."""
    fn(*args)
    number = 1
    while True:
        start = time.perf_counter()
        for _ in range(number):
            fn(*args)
        if time.perf_counter() - start >= min_seconds or number >= max_number:
            break
        number *= 2
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            fn(*args)
        samples.append((time.perf_counter() - start) / number)
    return samples


def median_time(fn, repeat: int = 7, min_seconds: float = 0.05) -> float:
    """Median seconds per call over `repeat` timed runs, each long enough to be stable."""
    samples = sorted(per_call_times(fn, repeat=repeat, min_seconds=min_seconds))
    return samples[len(samples) // 2]


WARM_SECONDS = 0.5
# Every block of `interleaved_times` runs its function for WARM_SECONDS first, so that
# the previous block's library has stopped spinning: OpenBLAS's worker threads spin for
# up to 2^28 cycles after a call, and a kernel timed while they spin runs slower on 2
# threads (a shorter warm-up was not enough). The order of the blocks alternates
# between rounds.
QUIET_WAIT_SECONDS = 300.0
QUIET_SHARE = 0.02


def _others_cpu_seconds() -> float:
    """CPU seconds used by the whole machine minus this process, so far."""
    with open("/proc/stat") as f:
        ticks = [int(v) for v in f.readline().split()[1:9]]
    busy = (sum(ticks) - ticks[3] - ticks[4]) / os.sysconf("SC_CLK_TCK")
    return busy - sum(os.times()[:2])


def interleaved_times(fns, rounds: int, min_seconds: float = 0.05, quiet: bool = False,
                      warm_seconds: float = WARM_SECONDS) -> list[list[float]]:
    """Seconds per call of each function, `rounds` samples each, taken in turn (with
    `quiet`, only rounds the rest of the machine left alone; maybe fewer), each block
    after `warm_seconds` of calls (a `--smoke` run: 0)."""
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
            warm = time.perf_counter() + warm_seconds
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


def openblas_kernel() -> str | None:
    """The kernel OpenBLAS runs in this process (threadpoolctl's `architecture`, e.g.
    'SkylakeX' for its AVX-512 kernels, 'Haswell' for AVX2), once numpy is imported;
    None without numpy or threadpoolctl (the `bench` extra)."""
    if "numpy" not in sys.modules:
        return None
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return None
    kernels = [pool.get("architecture") for pool in threadpool_info()
               if pool.get("internal_api") == "openblas"]
    return ",".join(sorted({k for k in kernels if k})) or None


def machine() -> dict:
    """What every figure names: the CPU (LLVM's host name), its cores, the OpenBLAS
    kernel, and the OpenBLAS overrides this process removed."""
    info = {"python": platform.python_version(), "cpus": os.cpu_count()}
    try:
        import llvmlite.binding as llvm

        info["cpu"] = llvm.get_host_cpu_name()
    except Exception:  # pragma: no cover - informational only
        pass
    kernel = openblas_kernel()
    if kernel is not None:
        info["openblas"] = kernel
    if REMOVED_OVERRIDES:
        info["removed_env"] = ",".join(f"{k}={v}" for k, v in REMOVED_OVERRIDES.items())
    return info


def parse_targets(text: str | None) -> list[str]:
    """`--targets 'llvm;llvm -mprefer-vector-width=256;llvm -mcpu=znver3'` as a list
    (default: the default target only, `XWEAVE_TARGET` or the host)."""
    if not text:
        return [os.environ.get("XWEAVE_TARGET", "").strip() or "llvm"]
    return [t.strip() for t in text.split(";") if t.strip()]


def add_targets_option(parser, unit: str) -> None:
    """A benchmark's `--targets` option (read by `targets_of`); `unit`: what is built."""
    parser.add_argument("--targets", help=f"';'-separated targets to build each {unit} for "
                        "(default: XWEAVE_TARGET, else the host); with several, all are timed "
                        "in the same rounds (--interleave, default 5)")


def targets_of(args) -> list[str]:
    """A benchmark's `--targets` as a list (`parse_targets`); with several, and no
    `--interleave`, 5 interleaved rounds, so that all targets are timed in the same rounds."""
    targets = parse_targets(args.targets)
    if len(targets) > 1 and not args.interleave:
        args.interleave = 5
    return targets


def emit(record: dict) -> None:
    print(json.dumps(record), flush=True)


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)
