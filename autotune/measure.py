"""Building and measuring candidates, isolated in worker processes.

* `LocalBuilder(n_parallel, timeout)` builds a batch of points in parallel worker
  processes: each worker receives the (picklable) task and a point, calls
  `task.build(point)` and sends back the candidate (xDSL objects never cross a process
  boundary: tasks rebuild their IR in the worker).
* `LocalRunner(...)` times ONE candidate at a time in a separate process: setup, a first
  run that is checked against the task's reference, warm-up runs, then `repeat`
  repeats of `number` runs each, `number` raised until a repeat lasts at least
  `min_repeat_ms`. A candidate that crashes the process (segfault), exceeds `timeout`
  (the process is killed) or computes a wrong result is recorded with an error code
  and the next candidate runs in a fresh process.
* `SimulatedRunner` reports the costs of `SimulatedCandidate`s without running
  anything (synthetic tasks).

Error codes are AutoTVM's (`MeasureErrorNo`). Workers start with the `spawn` method
by default (never `fork`: the tuner process has OpenMP and LLVM threads); scripts that
tune must therefore guard their entry point with `if __name__ == "__main__":`.
"""

from __future__ import annotations

import math
import multiprocessing
import multiprocessing.connection
import os
import signal
import sys
import time
import traceback
from collections.abc import Callable, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any

from xweave.autotune.space import Point
from xweave.autotune.task import Candidate, InstantiationError, WrongAnswerError


class MeasureErrorNo(IntEnum):
    """AutoTVM's measurement error numbers."""

    NO_ERROR = 0
    INSTANTIATION_ERROR = 1
    COMPILE_HOST = 2
    COMPILE_DEVICE = 3
    RUNTIME_DEVICE = 4
    WRONG_ANSWER = 5
    BUILD_TIMEOUT = 6
    RUN_TIMEOUT = 7
    UNKNOWN_ERROR = 8


@dataclass
class BuildResult:
    """The outcome of building one point."""

    point: Point
    candidate: Candidate | None
    error_no: int = 0
    error_msg: str = ""
    build_time: float = 0.0
    """Seconds spent in `task.build` (in the worker)."""
    features: Any = None
    """Cost-model features computed while building (`candidate.features`), if any."""
    schedule: str | None = None
    """The schedule as built (`candidate.schedule`), when the task reports it."""


@dataclass
class MeasureResult:
    """The outcome of building and timing one point."""

    point: Point
    costs: list[float] = field(default_factory=list)
    """Seconds per run, one entry per repeat (empty on error)."""
    gflops: float = 0.0
    """flops / mean(costs) / 1e9; 0 on error."""
    error_no: int = 0
    error_msg: str = ""
    build_time: float = 0.0
    run_time: float = 0.0
    """Wall time of the measurement (runner process: setup, check, timing, IPC)."""
    timestamp: float = 0.0
    number: int = 0
    """Runs per repeat."""
    features: Any = field(default=None, repr=False)
    """Cost-model features from the build, if the task computed them."""
    schedule: str | None = None
    """The schedule as built, when the task reports it (else `task.schedule(point)`)."""

    @property
    def ok(self) -> bool:
        return self.error_no == MeasureErrorNo.NO_ERROR

    @property
    def mean_cost(self) -> float:
        return sum(self.costs) / len(self.costs) if self.costs else math.inf


def _describe_exit(exitcode: int | None) -> str:
    if exitcode is None:
        return "still running"
    if exitcode < 0:
        try:
            return f"killed by signal {-exitcode} ({signal.Signals(-exitcode).name})"
        except ValueError:
            return f"killed by signal {-exitcode}"
    return f"exited with status {exitcode}"


def _short_error(e: BaseException) -> str:
    text = f"{type(e).__name__}: {e}"
    return text if len(text) < 2000 else text[:2000] + "..."


# ----------------------------------------------------------------------------------
# Worker processes
# ----------------------------------------------------------------------------------


def _worker_main(conn) -> None:
    """Loop in a worker: receive (fn, args), send ("ok", result) or ("error", ...)."""
    # Ctrl-C reaches the whole process group: the parent alone handles it (and stops
    # its workers), so a worker never prints a KeyboardInterrupt of its own.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})  # blocked at the start
    conn.send(("ready", os.getpid()))
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):
            return  # the parent went away
        except BaseException as e:  # a job that cannot be unpickled
            reply = ("error", _short_error(e), traceback.format_exc())
        else:
            if message is None:
                return
            fn, args = message
            try:
                reply = ("ok", fn(*args))
            except BaseException as e:
                reply = ("error", _short_error(e), traceback.format_exc())
        try:
            try:
                conn.send(reply)
            except (OSError, EOFError):
                raise
            except Exception as e:  # e.g. an unpicklable result
                conn.send(("error", _short_error(e), traceback.format_exc()))
        except (OSError, EOFError):
            return  # the parent went away (interrupted, or stopped this worker)


STARTUP_TIMEOUT = 120.0
"""Seconds a new worker may take to start, or to prepare for a task (not counted in
the per-job timeouts)."""


class _Worker:
    """One worker process (started lazily, restarted after a crash or a timeout)."""

    def __init__(self, ctx):
        self._ctx = ctx
        self.process = None
        self.conn = None
        self.job: Any = None
        self.started_at = 0.0
        self.deadline = math.inf
        self.prepared: str | None = None

    def ensure_started(self) -> None:
        if self.process is not None and self.process.is_alive():
            return
        self.stop()
        parent, child = self._ctx.Pipe(duplex=True)
        self.process = self._ctx.Process(target=_worker_main, args=(child,), daemon=True)
        # Blocked until the worker ignores it: a Ctrl-C while it starts up is the
        # parent's alone.
        mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            with _main_module_hidden():
                self.process.start()
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        child.close()
        self.conn = parent
        self.prepared = None
        try:
            if not parent.poll(STARTUP_TIMEOUT):
                raise TimeoutError(f"no sign of life in {STARTUP_TIMEOUT} s")
            parent.recv()  # ("ready", pid)
        except (EOFError, OSError, TimeoutError) as e:
            exitcode = self.process.exitcode if self.process is not None else None
            self.kill()
            raise RuntimeError(f"a worker process failed to start ({_describe_exit(exitcode)}"
                               f"; {type(e).__name__}: {e})") from None

    def submit(self, job: Any, fn: Callable, args: tuple, timeout: float | None) -> None:
        self.ensure_started()
        self.job = job
        self.started_at = time.perf_counter()
        self.deadline = self.started_at + timeout if timeout else math.inf
        self.conn.send((fn, args))

    def kill(self) -> None:
        """Kill this worker's process (ours) and forget it."""
        if self.process is not None and self.process.is_alive():
            self.process.kill()
        self.stop()

    def stop(self) -> None:
        if self.conn is not None:
            try:
                if self.process is not None and self.process.is_alive():
                    self.conn.send(None)
            except OSError:
                pass
            self.conn.close()
            self.conn = None
        if self.process is not None and self.process.pid is not None:  # (it started)
            self.process.join(timeout=2)
            if self.process.is_alive():
                self.process.kill()
                self.process.join(timeout=2)
            self.process = None
        self.job = None
        self.prepared = None


@contextmanager
def _main_module_hidden():
    """A spawned process re-runs the parent's `__main__` script (as `__mp_main__`)
    unless it cannot find it: a script calling `xweave.build(schedule="measure")` or
    `xweave tune` without an `if __name__ == "__main__":` guard would build again in
    every worker and fail to start it. The workers run xweave's code only, so they are
    started without it."""
    main = sys.modules.get("__main__")
    if main is None:
        yield
        return
    saved = {name: main.__dict__[name] for name in ("__file__", "__spec__")
             if name in main.__dict__}
    main.__dict__.pop("__file__", None)
    main.__spec__ = None  # (read as an attribute: it must exist)
    try:
        yield
    finally:
        main.__dict__.pop("__spec__", None)
        main.__dict__.update(saved)


@dataclass
class _Outcome:
    kind: str  # "ok", "error", "crash", "timeout"
    value: Any = None
    message: str = ""
    elapsed: float = 0.0


class WorkerPool:
    """A fixed number of worker processes running jobs with per-job timeouts."""

    def __init__(self, n_workers: int, start_method: str = "spawn"):
        self._ctx = multiprocessing.get_context(start_method)
        self.workers = [_Worker(self._ctx) for _ in range(max(1, n_workers))]

    def prepare(self, key: str, fn: Callable, args: tuple) -> None:
        """Make sure every worker ran `fn(*args)` once for `key` (e.g. to import what a
        task needs) before it gets timed jobs; failures are ignored."""
        pending = [w for w in self.workers if w.prepared != key]
        for w in pending:
            try:
                w.ensure_started()
                w.conn.send((fn, args))
            except Exception:
                w.kill()
        for w in pending:
            if w.conn is None:
                continue
            try:
                if not w.conn.poll(STARTUP_TIMEOUT):
                    raise TimeoutError
                w.conn.recv()
                w.prepared = key
            except Exception:
                w.kill()

    def map(self, fn: Callable, jobs: Sequence[tuple], timeout: float | None) -> list[_Outcome]:
        """Run `fn(*job)` for every job; outcomes in job order."""
        outcomes: list[_Outcome | None] = [None] * len(jobs)
        pending = list(range(len(jobs)))[::-1]
        busy: list[_Worker] = []
        while pending or busy:
            for w in self.workers:
                if not pending:
                    break
                if w.job is None:
                    i = pending.pop()
                    try:
                        w.submit(i, fn, jobs[i], timeout)
                    except Exception as e:  # the job does not pickle, or the worker died
                        outcomes[i] = _Outcome("error", message=_short_error(e))
                        w.kill()
                        continue
                    busy.append(w)
            if not busy:
                continue
            now = time.perf_counter()
            wait_for = max(0.0, min(w.deadline for w in busy) - now)
            handles = [w.conn for w in busy] + [w.process.sentinel for w in busy]
            multiprocessing.connection.wait(handles, timeout=min(wait_for, 3600))
            now = time.perf_counter()
            for w in list(busy):
                job, outcome = w.job, None
                if w.conn.poll():
                    try:
                        reply = w.conn.recv()
                    except (EOFError, OSError):
                        reply = None
                    if reply is not None:
                        if reply[0] == "ok":
                            outcome = _Outcome("ok", reply[1])
                        else:
                            outcome = _Outcome("error", message=reply[1], value=reply[2])
                if outcome is None and not w.process.is_alive():
                    w.process.join(timeout=1)
                    outcome = _Outcome("crash", message=_describe_exit(w.process.exitcode))
                    w.stop()
                if outcome is None and now >= w.deadline:
                    outcome = _Outcome("timeout", message=f"timed out after "
                                       f"{now - w.started_at:.1f} s (worker killed)")
                    w.kill()
                if outcome is not None:
                    outcome.elapsed = now - w.started_at
                    outcomes[job] = outcome
                    w.job = None
                    busy.remove(w)
        return outcomes  # type: ignore[return-value]

    def close(self) -> None:
        for w in self.workers:
            w.stop()


# ----------------------------------------------------------------------------------
# Building
# ----------------------------------------------------------------------------------


def _prepare_job(task) -> None:
    """In a fresh worker: unpickling the task imported its module; `task.prepare()`
    (optional) imports or caches whatever else builds and runs need."""
    prepare = getattr(task, "prepare", None)
    if prepare is not None:
        prepare()


def _build_job(task, point: Point) -> BuildResult:
    """In a builder worker (or inline): `task.build(point)` with its error code."""
    start = time.perf_counter()
    try:
        candidate = task.build(tuple(point))
    except InstantiationError as e:
        return BuildResult(tuple(point), None, MeasureErrorNo.INSTANTIATION_ERROR,
                           _short_error(e), time.perf_counter() - start)
    except Exception as e:
        return BuildResult(tuple(point), None, MeasureErrorNo.COMPILE_HOST,
                           _short_error(e), time.perf_counter() - start)
    return BuildResult(tuple(point), candidate, 0, "", time.perf_counter() - start,
                       getattr(candidate, "features", None),
                       getattr(candidate, "schedule", None))


class LocalBuilder:
    """Builds points in `n_parallel` worker processes (0: in this process, no timeout).

    A build that raises `InstantiationError` is error 1, any other exception (or a
    worker that dies) error 2, one that exceeds `timeout` seconds error 6.
    """

    def __init__(self, n_parallel: int | None = None, timeout: float = 10.0,
                 start_method: str = "spawn"):
        self.n_parallel = (os.cpu_count() or 1) if n_parallel is None else n_parallel
        self.timeout = timeout
        self._pool = WorkerPool(self.n_parallel, start_method) if self.n_parallel > 0 else None

    def build(self, task, points: Sequence[Point]) -> list[BuildResult]:
        if self._pool is None:
            return [_build_job(task, p) for p in points]
        self._pool.prepare(task.workload_key, _prepare_job, (task,))
        outcomes = self._pool.map(_build_job, [(task, tuple(p)) for p in points], self.timeout)
        results = []
        for p, o in zip(points, outcomes):
            if o.kind == "ok":
                results.append(o.value)
            elif o.kind == "timeout":
                results.append(BuildResult(tuple(p), None, MeasureErrorNo.BUILD_TIMEOUT,
                                           f"build {o.message}", o.elapsed))
            elif o.kind == "crash":
                results.append(BuildResult(tuple(p), None, MeasureErrorNo.COMPILE_HOST,
                                           f"builder process {o.message}", o.elapsed))
            else:
                results.append(BuildResult(tuple(p), None, MeasureErrorNo.UNKNOWN_ERROR,
                                           o.message, o.elapsed))
        return results

    def close(self) -> None:
        if self._pool is not None:
            self._pool.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


# ----------------------------------------------------------------------------------
# Running
# ----------------------------------------------------------------------------------


@dataclass
class _TimingResult:
    costs: list[float]
    number: int
    error_no: int = 0
    error_msg: str = ""


def time_candidate(candidate: Candidate, number: int | None = None, repeat: int = 5,
                   min_repeat_ms: float = 20.0, warmup: int = 1, check: bool = True,
                   max_number: int = 1_000_000) -> _TimingResult:
    """Set up, run once and check, warm up, then time `repeat` repeats of `number` runs.

    With `number=None`, `number` starts at 1 and grows until one repeat lasts at least
    `min_repeat_ms`. Costs are the mean seconds per run of each repeat; with more than
    two repeats, the fastest and slowest are dropped (as AutoTVM does).
    """
    try:
        candidate.setup()
        candidate.run()
    except Exception as e:
        return _TimingResult([], 0, MeasureErrorNo.RUNTIME_DEVICE, _short_error(e))
    if check:
        try:
            candidate.check()
        except WrongAnswerError as e:
            return _TimingResult([], 0, MeasureErrorNo.WRONG_ANSWER, _short_error(e))
        except Exception as e:
            return _TimingResult([], 0, MeasureErrorNo.RUNTIME_DEVICE, _short_error(e))
    try:
        run = candidate.run
        for _ in range(max(0, warmup - 1)):
            run()
        perf = time.perf_counter
        if number is None:
            number = 1
            while number < max_number:
                start = perf()
                for _ in range(number):
                    run()
                elapsed = perf() - start
                if elapsed * 1000 >= min_repeat_ms:
                    break
                if elapsed <= 0:
                    number *= 10
                else:
                    number = int(min(max_number, max(number * 2, math.ceil(
                        number * min_repeat_ms / 1000 / elapsed * 1.1))))
        costs = []
        for _ in range(repeat):
            start = perf()
            for _ in range(number):
                run()
            costs.append((perf() - start) / number)
    except Exception as e:
        return _TimingResult([], 0, MeasureErrorNo.RUNTIME_DEVICE, _short_error(e))
    if len(costs) > 2:
        costs = sorted(costs)[1:-1]
    return _TimingResult(costs, number)


class LocalRunner:
    """Times one candidate at a time in a separate, persistent runner process.

    A crash of the process (e.g. a segfault) is error 4 and restarts the process; a
    measurement longer than `timeout` seconds (setup, check and timing) is error 7
    (the process is killed); a wrong first run is error 5. `cooldown` seconds are
    slept between measurements.
    """

    def __init__(self, number: int | None = None, repeat: int = 5, min_repeat_ms: float = 20.0,
                 warmup: int = 1, timeout: float = 10.0, check: bool = True,
                 cooldown: float = 0.0, start_method: str = "spawn"):
        self.options = dict(number=number, repeat=repeat, min_repeat_ms=min_repeat_ms,
                            warmup=warmup, check=check)
        self.timeout = timeout
        self.cooldown = cooldown
        self._pool = WorkerPool(1, start_method)

    def run(self, task, builds: Sequence[BuildResult]) -> list[MeasureResult]:
        results = []
        for b in builds:
            if b.error_no or b.candidate is None:
                results.append(MeasureResult(b.point, [], 0.0, b.error_no or 8, b.error_msg,
                                             b.build_time, 0.0, time.time()))
                continue
            self._pool.prepare(task.workload_key, _prepare_job, (task,))
            start = time.perf_counter()
            (outcome,) = self._pool.map(time_candidate, [(b.candidate, *self._args())],
                                        self.timeout)
            wall = time.perf_counter() - start
            results.append(_to_measure_result(task, b, outcome, wall))
            if self.cooldown:
                time.sleep(self.cooldown)
        return results

    def _args(self) -> tuple:
        o = self.options
        return (o["number"], o["repeat"], o["min_repeat_ms"], o["warmup"], o["check"])

    def close(self) -> None:
        self._pool.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _to_measure_result(task, b: BuildResult, outcome: _Outcome, wall: float) -> MeasureResult:
    now = time.time()
    if outcome.kind == "ok":
        t: _TimingResult = outcome.value
        if t.error_no:
            return MeasureResult(b.point, [], 0.0, t.error_no, t.error_msg, b.build_time,
                                 wall, now)
        return MeasureResult(b.point, t.costs, _gflops(task, t.costs), 0, "", b.build_time,
                             wall, now, t.number, b.features)
    if outcome.kind == "timeout":
        return MeasureResult(b.point, [], 0.0, MeasureErrorNo.RUN_TIMEOUT,
                             f"run {outcome.message}", b.build_time, wall, now)
    if outcome.kind == "crash":
        return MeasureResult(b.point, [], 0.0, MeasureErrorNo.RUNTIME_DEVICE,
                             f"runner process {outcome.message}", b.build_time, wall, now)
    return MeasureResult(b.point, [], 0.0, MeasureErrorNo.UNKNOWN_ERROR, outcome.message,
                         b.build_time, wall, now)


def _gflops(task, costs: Sequence[float]) -> float:
    mean = sum(costs) / len(costs) if costs else 0.0
    return task.flops / mean / 1e9 if mean > 0 else 0.0


class InlineRunner:
    """Times candidates in this process (no isolation: for trusted, fast candidates)."""

    def __init__(self, **options):
        self.options = dict(number=None, repeat=5, min_repeat_ms=20.0, warmup=1, check=True)
        self.options.update(options)

    def run(self, task, builds: Sequence[BuildResult]) -> list[MeasureResult]:
        results = []
        for b in builds:
            start = time.perf_counter()
            if b.error_no or b.candidate is None:
                results.append(MeasureResult(b.point, [], 0.0, b.error_no or 8, b.error_msg,
                                             b.build_time, 0.0, time.time()))
                continue
            t = time_candidate(b.candidate, **self.options)
            outcome = _Outcome("ok", t)
            results.append(_to_measure_result(task, b, outcome, time.perf_counter() - start))
        return results

    def close(self) -> None:
        pass


class SimulatedRunner:
    """Reports `candidate.simulated_seconds()` as the cost (synthetic tasks; no timing).

    `delay` seconds are slept per candidate, to mimic measurement time.
    """

    def __init__(self, delay: float = 0.0):
        self.delay = delay

    def run(self, task, builds: Sequence[BuildResult]) -> list[MeasureResult]:
        results = []
        for b in builds:
            if self.delay:
                time.sleep(self.delay)
            if b.error_no or b.candidate is None:
                results.append(MeasureResult(b.point, [], 0.0, b.error_no or 8, b.error_msg,
                                             b.build_time, 0.0, time.time()))
                continue
            seconds = b.candidate.simulated_seconds()
            if seconds is None or not seconds > 0:
                results.append(MeasureResult(b.point, [], 0.0, MeasureErrorNo.RUNTIME_DEVICE,
                                             "candidate has no simulated cost", b.build_time,
                                             0.0, time.time()))
                continue
            results.append(MeasureResult(b.point, [seconds], _gflops(task, [seconds]), 0, "",
                                         b.build_time, self.delay, time.time(), 1,
                                         b.features))
        return results

    def close(self) -> None:
        pass


def measure_points(task, points: Sequence[Point], builder=None, runner=None) -> list[MeasureResult]:
    """Build and time `points` once (closing the default builder/runner afterwards)."""
    own_builder, own_runner = builder is None, runner is None
    builder = builder or LocalBuilder()
    runner = runner or LocalRunner()
    try:
        return runner.run(task, builder.build(task, points))
    finally:
        if own_builder:
            builder.close()
        if own_runner:
            runner.close()
