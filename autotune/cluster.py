"""Building and measuring candidates on a cluster, through Dask distributed.

A tuning cluster is a Dask scheduler plus workers. A worker that may time candidates
advertises its target as a Dask resource `target:<label>` with amount 1 (e.g.
`target:llvm-znver3-avx2` for a CPU, `target:vta-sim` for the simulator), so the
scheduler gives it at most one measurement at a time:

```sh
python -m xweave.autotune.cluster scheduler --port 8786         # once
python -m xweave.autotune.cluster worker tcp://HEAD:8786        # per machine/board
```

(the second is `dask worker ADDR --nthreads 1 --resources "target:LABEL=1"` with
`DASK_DISTRIBUTED__WORKER__DAEMON=False`; see `worker_command`). Then

```python
tune(task, builder=ClusterBuilder("tcp://HEAD:8786"),
     runner=ClusterRunner("tcp://HEAD:8786", target=default_target_label()))
```

* `ClusterBuilder(address)` builds each point on any worker, `ClusterRunner(address,
  target)` times each candidate on a worker advertising the target; both have the
  interface of `LocalBuilder`/`LocalRunner` and return the same results, so `tune`
  writes the same records. On a worker, builds and measurements run in that worker's
  own `LocalBuilder`/`LocalRunner` processes: a candidate that crashes, hangs or
  computes a wrong answer gets the same error code as locally, and the worker lives on.
* A worker that dies (killed, machine lost) while holding a candidate: the scheduler
  reschedules the candidate on another worker with the label, up to its
  `allowed-failures` setting (the `scheduler` command and `start_scheduler` set 1:
  one retry); then the candidate is recorded as RUNTIME_DEVICE. When no worker
  advertises the target for `grace` seconds, the waiting candidates are recorded as
  RUN_TIMEOUT. Either way the tuning run goes on.
* Every `MeasureResult` from a worker carries `worker` (its address) and `target`
  (`records.target_info()` there), which `make_record` writes as the record's target.
"""

from __future__ import annotations

import argparse
import functools
import multiprocessing
import os
import re
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Sequence
from typing import Any

import llvmlite.binding as llvm

from xweave.autotune.measure import (
    BuildResult,
    LocalBuilder,
    LocalRunner,
    MeasureErrorNo,
    MeasureResult,
    SimulatedRunner,
)
from xweave.autotune.space import Point
from xweave.errors import XweaveError
from xweave.records import target_info

RESOURCE_PREFIX = "target:"
_LABEL = re.compile(r"^[A-Za-z0-9_.+\-:]+$")


class ClusterError(XweaveError):
    """The cluster cannot be reached, or has no worker for the requested target."""


def _import_distributed():
    try:  # lazy by design: the optional `distributed`
        import distributed
    except ImportError:
        raise ClusterError("tuning on a cluster needs Dask distributed: "
                           "pip install 'xweave[cluster]'") from None
    return distributed


# ----------------------------------------------------------------------------------
# Target labels
# ----------------------------------------------------------------------------------

_KEY_FEATURES = (("avx512f", "avx512"), ("avx2", "avx2"), ("avx", "avx"),
                 ("sse4.2", "sse4.2"), ("sve", "sve"), ("neon", "neon"))
"""The widest vector extension names the label (the first present wins)."""


@functools.cache
def default_target_label() -> str:
    """This host's label: `llvm-<LLVM CPU name>[-<widest vector extension>]`."""
    cpu = llvm.get_host_cpu_name() or "generic"
    try:
        enabled = {k for k, v in llvm.get_host_cpu_features().items() if v}
    except RuntimeError:
        enabled = set()
    for feature, name in _KEY_FEATURES:
        if feature in enabled:
            return f"llvm-{cpu}-{name}"
    return f"llvm-{cpu}"


def target_resource(label: str) -> str:
    """The Dask resource name of a target label (`target:<label>`)."""
    if label.startswith(RESOURCE_PREFIX):
        label = label[len(RESOURCE_PREFIX):]
    if not label or not _LABEL.match(label):
        raise ClusterError(f"bad target label {label!r}: use letters, digits and _ . + - :")
    return RESOURCE_PREFIX + label


# ----------------------------------------------------------------------------------
# Starting a scheduler and workers
# ----------------------------------------------------------------------------------

WORKER_ENV = {"DASK_DISTRIBUTED__WORKER__DAEMON": "False"}
"""Workers must not be daemon processes: they start builder and runner processes."""

SCHEDULER_ENV = {"DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES": "1"}
"""A candidate whose worker dies is retried once, then recorded as an error."""


def worker_command(address: str, target: str | None = None, *, nthreads: int = 1,
                   name: str | None = None, nanny: bool = True) -> list[str]:
    """The command line of a worker (run it with `WORKER_ENV` in its environment).

    `target=None` advertises no target: the worker only builds. Measuring workers keep
    `nthreads=1` so that no build overlaps their measurements.
    """
    cmd = [sys.executable, "-m", "distributed.cli.dask_worker", address,
           "--nthreads", str(nthreads), "--nworkers", "1", "--no-dashboard"]
    if target:
        cmd += ["--resources", f"{target_resource(target)}=1"]
    if name:
        cmd += ["--name", name]
    if not nanny:
        cmd.append("--no-nanny")
    return cmd


def start_worker(address: str, target: str | None = "auto", *, nthreads: int = 1,
                 name: str | None = None, nanny: bool = True, log=None) -> subprocess.Popen:
    """Start a worker process connected to `address`; returns its `Popen` (with
    `nanny=True`, the nanny, which restarts the worker process if it dies). `target="auto"`: this host's
    `default_target_label()`; None: a build-only worker. `log`: where its output goes
    (default: discarded)."""
    if target == "auto":
        target = default_target_label()
    env = dict(os.environ, **WORKER_ENV)
    out = subprocess.DEVNULL if log is None else log
    return subprocess.Popen(worker_command(address, target, nthreads=nthreads, name=name,
                                           nanny=nanny),
                            env=env, stdout=out, stderr=subprocess.STDOUT if log else out,
                            stdin=subprocess.DEVNULL)


def start_scheduler(host: str = "127.0.0.1", port: int = 0, allowed_failures: int = 1):
    """A scheduler in this process (tests, benchmarks, a one-machine farm); returns a
    `distributed.LocalCluster` without workers (`.scheduler_address`, `.close()`)."""
    distributed = _import_distributed()
    import dask  # lazy by design: comes with the optional `distributed`

    with dask.config.set({"distributed.scheduler.allowed-failures": allowed_failures}):
        # no dashboard; its HTTP server (health, metrics) listens on `host` only
        return distributed.LocalCluster(n_workers=0, processes=False, protocol="tcp://",
                                        host=host, scheduler_port=port,
                                        dashboard_address=f"{host}:0",
                                        scheduler_kwargs={"dashboard": False})


# ----------------------------------------------------------------------------------
# What runs on the workers
# ----------------------------------------------------------------------------------

_local = threading.local()
_run_lock = threading.Lock()
_runner: list[Any] = [None, None]  # [options, LocalRunner]


def _check_worker_process() -> None:
    if multiprocessing.current_process().daemon:
        raise ClusterError("this Dask worker is a daemon process and cannot start builder or "
                           "runner processes: start it with DASK_DISTRIBUTED__WORKER__DAEMON="
                           "False (or --no-nanny)")


def _worker_address() -> str:
    try:  # lazy by design: the optional `distributed`
        from distributed import get_worker

        return get_worker().address
    except Exception:
        return ""


def _build_on_worker(task, point: Point, timeout: float) -> BuildResult:
    """On a worker: build one point in this thread's builder process (in this
    process for simulated tasks, as `tune` does locally)."""
    if getattr(task, "simulated", False):
        (result,) = LocalBuilder(n_parallel=0).build(task, [point])
        result.worker = _worker_address()
        return result
    _check_worker_process()
    builder = getattr(_local, "builder", None)
    if builder is None or builder.timeout != timeout:
        if builder is not None:
            builder.close()
        builder = _local.builder = LocalBuilder(n_parallel=1, timeout=timeout)
    (result,) = builder.build(task, [point])
    result.worker = _worker_address()
    return result


def _measure_on_worker(task, build: BuildResult, options: dict,
                       simulated_delay: float = 0.0) -> MeasureResult:
    """On a worker: time one candidate in this worker's runner process (one at a time,
    whatever the worker's resources say)."""
    with _run_lock:
        if getattr(task, "simulated", False):
            (result,) = SimulatedRunner(simulated_delay).run(task, [build])
        else:
            _check_worker_process()
            if _runner[0] != options:
                if _runner[1] is not None:
                    _runner[1].close()
                _runner[:] = [dict(options), LocalRunner(**options)]
            (result,) = _runner[1].run(task, [build])
    result.worker = _worker_address()
    result.target = target_info()
    return result


# ----------------------------------------------------------------------------------
# The client side
# ----------------------------------------------------------------------------------


class _ClusterClient:
    """A Dask client on `address` (a scheduler address or a `distributed.Client`)."""

    def __init__(self, address: Any, connect_timeout: float):
        distributed = _import_distributed()
        self._distributed = distributed
        if isinstance(address, distributed.Client):
            self.client, self._own = address, False
        else:
            try:
                self.client = distributed.Client(address, timeout=connect_timeout,
                                                 set_as_default=False)
            except (OSError, TimeoutError) as e:
                raise ClusterError(f"cannot reach the Dask scheduler at {address}: "
                                   f"{e}") from None
            self._own = True
        self.address = self.client.scheduler.address

    def workers(self, resource: str | None = None, timeout: float = 30.0) -> dict[str, dict]:
        """Address -> info of the workers (advertising `resource`, if given)."""
        self._check_connected()
        try:
            info = self.client.sync(self.client.scheduler.identity, n_workers=-1,
                                    callback_timeout=timeout).get("workers", {})
        except Exception as e:
            raise ClusterError(f"cannot query the scheduler at {self.address}: "
                               f"{type(e).__name__}: {e}") from None
        if resource is None:
            return dict(info)
        return {a: w for a, w in info.items() if w.get("resources", {}).get(resource, 0) >= 1}

    def _check_connected(self) -> None:
        if self.client.status != "running":  # reconnecting, or gave up
            raise ClusterError(f"lost the connection to the scheduler at {self.address}")

    def wait_for_workers(self, resource: str | None, timeout: float) -> dict[str, dict]:
        deadline = time.monotonic() + timeout
        while True:
            found = self.workers(resource)
            if found or time.monotonic() >= deadline:
                return found
            time.sleep(0.2)

    def _collect(self, futures: dict, resource: str | None, grace: float,
                 on_result, on_error) -> None:
        """Wait for `futures` (future -> index), calling `on_result(i, value)` or
        `on_error(i, code, message)`; gives up on the waiting ones after `grace` seconds
        without a worker that can run them."""
        dd = self._distributed
        pending = set(futures)
        orphaned_since = None
        last_check = time.monotonic()
        while pending:
            done = {f for f in pending if f.done()}
            pending -= done
            if not done:
                time.sleep(0.01)  # polling: `distributed.wait` wants a default client
            for f in done:
                i = futures[f]
                if f.status == "finished":
                    on_result(i, f.result())
                    continue
                if f.status == "error":
                    e = f.exception()
                    if isinstance(e, dd.KilledWorker):
                        on_error(i, MeasureErrorNo.RUNTIME_DEVICE, _killed_message(e))
                    else:
                        on_error(i, MeasureErrorNo.UNKNOWN_ERROR, f"{type(e).__name__}: {e}")
                    continue
                self._check_connected()
                on_error(i, MeasureErrorNo.UNKNOWN_ERROR, f"the cluster dropped the job "
                         f"({f.status})")
            if not pending or done:
                orphaned_since = None
                continue
            if time.monotonic() - last_check < 1.0:
                continue
            last_check = time.monotonic()
            try:
                present = bool(self.workers(resource, timeout=5.0))
            except ClusterError:
                self._check_connected()
                continue  # a slow scheduler: look again later
            if present:
                orphaned_since = None
            elif orphaned_since is None:
                orphaned_since = time.monotonic()
            elif time.monotonic() - orphaned_since >= grace:
                what = f"advertising {resource}" if resource else "at all"
                for f in pending:
                    f.cancel()
                    on_error(futures[f], MeasureErrorNo.RUN_TIMEOUT,
                             f"no worker {what} for {grace:.0f} s (cluster {self.address})")
                pending = set()

    def close(self) -> None:
        if self._own:
            self.client.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _killed_message(e) -> str:
    worker = getattr(getattr(e, "last_worker", None), "address", "?")
    tries = getattr(e, "allowed_failures", 0) + 1
    return f"{tries} worker(s) died while holding this candidate (the last: {worker})"


class ClusterBuilder(_ClusterClient):
    """Builds points on the workers of a Dask cluster (`LocalBuilder`'s interface).

    Each point is built on some worker, in that worker's builder process, with
    `timeout` seconds per build. `n_parallel` (the batch size `tune` uses by
    default) is the cluster's thread count when it was connected, unless given.
    `resources`: Dask resources a builder must have (default: any worker builds).
    """

    def __init__(self, address: Any, timeout: float = 10.0, n_parallel: int | None = None,
                 resources: dict[str, float] | None = None, grace: float = 60.0,
                 connect_timeout: float = 30.0, wait_for_workers: float = 30.0):
        super().__init__(address, connect_timeout)
        self.timeout = timeout
        self.resources = resources
        self.grace = grace
        workers = self.wait_for_workers(None, wait_for_workers)
        if not workers:
            self.close()
            raise ClusterError(f"the Dask cluster at {self.address} has no worker")
        self.n_parallel = n_parallel or sum(int(w.get("nthreads", 1)) for w in workers.values())

    def build(self, task, points: Sequence[Point]) -> list[BuildResult]:
        results: list[BuildResult | None] = [None] * len(points)
        futures = {}
        for i, p in enumerate(points):
            f = self.client.submit(_build_on_worker, task, tuple(p), self.timeout,
                                   key=f"xweave-build-{uuid.uuid4().hex}", pure=False,
                                   resources=self.resources)
            futures[f] = i

        def ok(i, value):
            results[i] = value

        def error(i, code, message):
            if code == MeasureErrorNo.RUNTIME_DEVICE:
                code = MeasureErrorNo.COMPILE_HOST  # a builder died, not a device
            elif code == MeasureErrorNo.RUN_TIMEOUT:
                code = MeasureErrorNo.BUILD_TIMEOUT
            results[i] = BuildResult(tuple(points[i]), None, code, f"build: {message}")

        resource = next(iter(self.resources), None) if self.resources else None
        self._collect(futures, resource, self.grace, ok, error)
        return results  # type: ignore[return-value]


class ClusterRunner(_ClusterClient):
    """Times candidates on the cluster's workers advertising `target`
    (`LocalRunner`'s interface and options).

    A worker advertises a target with the Dask resource `target:<label>` = 1, so it
    runs one measurement at a time; several such workers measure in parallel. Raises
    `ClusterError` if no worker advertises the target within `wait_for_workers`
    seconds. `target_info` is the records' target of those workers.
    `simulated_delay`: seconds a simulated task's measurement lasts (tests, benchmarks).
    """

    def __init__(self, address: Any, target: str | None = None, *, number: int | None = None,
                 repeat: int = 5, min_repeat_ms: float = 20.0, warmup: int = 1,
                 timeout: float = 10.0, check: bool = True, cooldown: float = 0.0,
                 grace: float = 60.0, connect_timeout: float = 30.0,
                 wait_for_workers: float = 30.0, simulated_delay: float = 0.0):
        self.target = target or default_target_label()
        self.resource = target_resource(self.target)
        super().__init__(address, connect_timeout)
        self.simulated_delay = simulated_delay
        self.options = dict(number=number, repeat=repeat, min_repeat_ms=min_repeat_ms,
                            warmup=warmup, timeout=timeout, check=check, cooldown=cooldown)
        self.grace = grace
        workers = self.wait_for_workers(self.resource, wait_for_workers)
        if not workers:
            others = sorted({r for w in self.workers().values() for r in w.get("resources", {})
                             if r.startswith(RESOURCE_PREFIX)})
            self.close()
            raise ClusterError(
                f"no worker of the Dask cluster at {self.address} advertises {self.resource} "
                f"(advertised: {', '.join(others) or 'none'}); start one with: "
                f"python -m xweave.autotune.cluster worker {self.address} --target "
                f"{self.target}")
        try:
            self.target_info = self.client.run(target_info, workers=[next(iter(workers))])
            self.target_info = next(iter(self.target_info.values()))
        except Exception:  # the worker left meanwhile: records will say per result
            self.target_info = None

    @property
    def n_workers(self) -> int:
        """Workers currently advertising the target."""
        return len(self.workers(self.resource))

    def run(self, task, builds: Sequence[BuildResult]) -> list[MeasureResult]:
        results: list[MeasureResult | None] = [None] * len(builds)
        futures = {}
        for i, b in enumerate(builds):
            if b.error_no or b.candidate is None:
                results[i] = MeasureResult(b.point, [], 0.0, b.error_no or 8, b.error_msg,
                                           b.build_time, 0.0, time.time())
                continue
            f = self.client.submit(_measure_on_worker, task, b, self.options,
                                   self.simulated_delay, pure=False,
                                   key=f"xweave-measure-{uuid.uuid4().hex}",
                                   resources={self.resource: 1})
            futures[f] = i

        def ok(i, value):
            results[i] = value

        def error(i, code, message):
            b = builds[i]
            results[i] = MeasureResult(b.point, [], 0.0, code, f"run: {message}",
                                       b.build_time, 0.0, time.time())

        self._collect(futures, self.resource, self.grace, ok, error)
        return results  # type: ignore[return-value]


# ----------------------------------------------------------------------------------
# python -m xweave.autotune.cluster {scheduler,worker,label}
# ----------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:

    parser = argparse.ArgumentParser(prog="python -m xweave.autotune.cluster",
                                     description="Run a Dask scheduler or worker for tuning.")
    sub = parser.add_subparsers(dest="command", required=True)
    s = sub.add_parser("scheduler", help="a scheduler that retries a lost candidate once")
    s.add_argument("--host", default="")
    s.add_argument("--port", type=int, default=8786)
    s.add_argument("--http", default="127.0.0.1:8787",
                   help="where the scheduler's HTTP server (health, metrics) listens")
    w = sub.add_parser("worker", help="a worker advertising a target")
    w.add_argument("address")
    w.add_argument("--target", default="auto",
                   help="target label (default: this host's); 'none': build only")
    w.add_argument("--nthreads", type=int, default=1)
    w.add_argument("--name")
    sub.add_parser("label", help="print this host's target label")
    args = parser.parse_args(argv)
    if args.command == "label":
        print(default_target_label())
        return 0
    _import_distributed()
    if args.command == "scheduler":
        cmd = [sys.executable, "-m", "distributed.cli.dask_scheduler", "--port", str(args.port),
               "--no-dashboard", "--dashboard-address", args.http]
        if args.host:
            cmd += ["--host", args.host]
        env = dict(os.environ, **SCHEDULER_ENV)
    else:
        target = {"auto": default_target_label(), "none": None}.get(args.target, args.target)
        cmd = worker_command(args.address, target, nthreads=args.nthreads, name=args.name)
        env = dict(os.environ, **WORKER_ENV)
    os.execve(cmd[0], cmd, env)
    return 0  # not reached


if __name__ == "__main__":
    try:
        sys.exit(main())
    except XweaveError as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(e.exit_code)


__all__ = ["ClusterBuilder", "ClusterError", "ClusterRunner", "default_target_label",
           "start_scheduler", "start_worker", "target_resource", "worker_command"]
