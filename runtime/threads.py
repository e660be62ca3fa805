"""How many threads the `parallel` loops of compiled code use, and how idle threads wait.

A `parallel` loop is lowered to `GOMP_parallel(worker, data, nthreads, 0)` (libgomp's
thread pool: a region costs a few µs, against 100+ µs for spawning pthreads or waking
Python threads). `nthreads` is read, at every region, from the global
`xweave_num_threads` (an `i32` defined in the object itself), so changing the thread
count never recompiles: the runtime writes the global of each loaded instance, the same
way parameters are bound through the object's own pointer table.

* default: every core this process may run on (`os.sched_getaffinity`);
* `XWEAVE_NUM_THREADS=N` in the environment (read when an object is loaded), like
  TVM_NUM_THREADS / OMP_NUM_THREADS;
* `xweave.build(..., threads=N)`, or `set_num_threads(module_or_engine, N)` at any time.

The code never asks for more threads than the loop has iterations, and runs the loop
body directly (no region at all) when that leaves a single thread. 0 in the global
means "libgomp's default" (what an object linked into a shared library starts with).

Idle workers: after a region, libgomp's workers spin before they sleep, and so does
the calling thread at the region's closing barrier: `GOMP_SPINCOUNT` iterations, 300,000
by default (about 5 ms of a core here), unless `OMP_WAIT_POLICY=passive`. Measured with
`bench/parallel_overhead.py` on the 2-core development VM:

* the default spin burns about 4.5 ms of a second core after *every* call (CPU time
  taken from Python threads, other processes, the autotuner's measurements); and when
  the other core is busy, a region waits until the spin gives up (the worker cannot
  run while the caller spins): 7 ms for an empty region;
* `passive`: no burnt CPU, but every region pays a futex wake-up of the workers;
* a short spin (1000, about 60 µs) looked as cheap as spinning for back-to-back
  regions in that benchmark, but not in whole models: on this VM a sleeping worker
  is slow to wake (its vCPU halts), and ResNet-18 on 2 threads took 26-33 ms with
  it against 18-22 ms with libgomp's 300,000 (`bench/model_e2e.py`, bench/HISTORY.md;
  onnxruntime spins by default too).

So `configure_openmp` (called when `xweave.runtime.jit` is imported, before libgomp
is loaded) sets `GOMP_SPINCOUNT` to `DEFAULT_SPINCOUNT` (libgomp's own default, made
explicit for child processes), unless the user set `OMP_WAIT_POLICY` or
`GOMP_SPINCOUNT`: `OMP_WAIT_POLICY=passive` gives the CPU back at once, at a wake-up
per region. The variable stays in `os.environ`: child processes inherit it. libgomp
reads it once: if another library loaded libgomp first (lightgbm does), its setting
stays.

Busy cores: a parallel region ends when its last thread does, and libgomp's region
has every thread of its team do a fixed share. When another process keeps a core
busy, a worker waits for that core (the scheduler shares it in slices of ms), and the
region, the call and every caller with it wait too: with one core of the development
VM busy, 2 threads took 2.4-48 ms at the 99th percentile where 1 thread took 0.06-0.14
ms, whatever the wait policy (`bench/contention.py`). No spin count helps: the
worker is not there to be waited for. So `CompiledModule.run` caps its thread count by
the cores no one else is using (`ThreadGovernor`): every `CHECK_SECONDS` at most, it
reads the number of runnable tasks of the machine (`/proc/loadavg`), takes away those
of the call itself (the caller and its team's workers, which spin between regions),
and uses at most the cores left, at least 1. A single sample catching a passing task
does not lower the cap (the larger of the last two samples counts). Other calls of
this process running at the same time count as busy cores too, so concurrent callers
share the cores instead of stacking teams on them. The cap only ever lowers the
thread count asked for (`set_num_threads`); where /proc/loadavg does not exist it is
every core.
"""

from __future__ import annotations

import ctypes
import os
import time

from xweave.errors import XweaveError
from xweave.runtime.abi import NUM_THREADS_GLOBAL


NUM_THREADS_ENV = "XWEAVE_NUM_THREADS"
"""Environment variable giving the default thread count of loaded objects."""

DEFAULT_SPINCOUNT = "300000"
"""`GOMP_SPINCOUNT` set before libgomp loads (unless the user chose a wait policy): idle
workers (and the caller at a region's end) spin a few ms, across the gaps between the
kernels of a model call, then sleep."""


def available_cores() -> int:
    """The number of cores this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def default_num_threads() -> int:
    """`XWEAVE_NUM_THREADS` if set, else every available core."""
    text = os.environ.get(NUM_THREADS_ENV, "").strip()
    if not text:
        return available_cores()
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise XweaveError(
            f"{NUM_THREADS_ENV}={text!r}: expected a positive number of threads"
        )
    return value


_configured = False


def configure_openmp() -> None:
    """Choose libgomp's wait policy before it is loaded (it reads the environment once).

    Does nothing if the user set `OMP_WAIT_POLICY` or `GOMP_SPINCOUNT`, or after the
    first call. Has no effect if libgomp was already loaded by someone else.
    """
    global _configured
    if _configured:
        return
    _configured = True
    if "OMP_WAIT_POLICY" not in os.environ and "GOMP_SPINCOUNT" not in os.environ:
        os.environ["GOMP_SPINCOUNT"] = DEFAULT_SPINCOUNT


def _engine_of(target):
    engine = target if hasattr(target, "address") else getattr(target, "_engine", None)
    if engine is None or not hasattr(engine, "address"):  # a CompiledModule holds its Engine
        raise XweaveError(f"cannot set the threads of {type(target).__name__}")
    return engine


def check_num_threads(n: object) -> None:
    """An error unless `n` is a positive integer."""
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise XweaveError(f"threads must be a positive integer, got {n!r}")


def set_num_threads(target, n: int) -> None:
    """Use `n` threads in the parallel loops of a loaded `Engine` or `CompiledModule`.

    Takes effect at the next call; nothing is recompiled. Code without parallel loops
    ignores it.
    """
    check_num_threads(n)
    if hasattr(target, "_xweave_set_threads"):  # a library's (runtime.library)
        target._xweave_set_threads(n)
        return
    engine = _engine_of(target)
    address = engine.address(NUM_THREADS_GLOBAL)
    if address:
        ctypes.c_int32.from_address(address).value = n
    engine._num_threads = n


def get_num_threads(target) -> int:
    """The thread count a loaded `Engine` or `CompiledModule` was given (a
    `CompiledModule` call may use fewer on a busy machine: `ThreadGovernor`)."""
    if hasattr(target, "_xweave_set_threads"):  # a library's (runtime.library)
        return target.num_threads
    engine = _engine_of(target)
    if getattr(engine, "_num_threads", None):
        return engine._num_threads
    address = engine.address(NUM_THREADS_GLOBAL)
    if address:
        return ctypes.c_int32.from_address(address).value
    return getattr(engine, "_num_threads", 1)


CHECK_SECONDS = 0.01
"""How often (at most) `ThreadGovernor.cap` samples the machine's runnable tasks."""


class ThreadGovernor:
    """The thread count that does not oversubscribe the machine right now (see the
    module's docstring). One per process (`GOVERNOR`); cheap between samples."""

    def __init__(self, loadavg: str = "/proc/loadavg"):
        self.next_check = 0.0
        """`time.perf_counter()` after which `cap` samples again."""
        self._cores = available_cores()
        self._online = os.cpu_count() or self._cores
        self._cap = self._last = self._cores
        try:
            self._fd: int | None = os.open(loadavg, os.O_RDONLY)
        except OSError:
            self._fd = None
            self.next_check = float("inf")

    def cap(self, team: int) -> int:
        """At most this many threads for the next call of a caller whose last call
        ran `team` threads (its own runnable tasks, not someone else's)."""
        now = time.perf_counter()
        if now < self.next_check or self._fd is None:
            return self._cap
        self.next_check = now + CHECK_SECONDS
        try:
            running = int(os.pread(self._fd, 128, 0).split()[3].split(b"/")[0])
        except (OSError, ValueError, IndexError):
            return self._cap
        sample = max(1, min(self._cores, self._online - running + team))
        self._cap, self._last = max(sample, self._last), sample
        return self._cap


GOVERNOR = ThreadGovernor()
