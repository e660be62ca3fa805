"""Tuning a whole model: every kernel with a choice to make, one task after another.

```python
from xweave.autotune.tune_model import tune_model
results = tune_model("model.onnx", "model.jsonl", trials=64, tuner="lgbm")
module = xweave.build("model.onnx", tuning_records="model.jsonl")
```

This is what `xweave tune MODEL` runs. Each task first measures its default schedule
(a `baseline` record: compiling with the records uses a tuned schedule only where it
beat that measurement by `records.MIN_GAIN`), then `trials` points in total per task.
The records file is appended to and resumed from: running the same command again
after an interruption measures only what is missing.

Last, the model check (`check_in_model`, local runs): a kernel timed alone finds its
operands in cache, inside the model they come from the kernel before or from memory,
and a schedule that wins alone can lose there (ResNet-18, one thread: kernels tuned
10-40% faster alone, the tuned model 13% slower). The model is built with and without
the tuned schedules, profiled kernel by kernel in alternating runs, and a
`model_check` line per tuned workload records both times: compiling keeps the default
schedule of a kernel that is not `MIN_GAIN` faster inside the model.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import tempfile
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from xweave.autotune.kernel_tasks import extract_tasks
from xweave.autotune.measure import LocalBuilder, LocalRunner
from xweave.autotune.search import TUNERS
from xweave.autotune.tune import format_ms, plot_curves, throughput, tune
from xweave.errors import XweaveError
from xweave.log import NOTE
from xweave.records import (
    MIN_GAIN,
    MODEL_CHECK,
    RecordWriter,
    is_ok,
    load_many,
    load_model_checks,
    load_records,
    read_records,
    same_target,
    target_info,
    task_target,
    xweave_version,
)
from xweave.runtime.threads import NUM_THREADS_ENV, check_num_threads
from xweave.target import as_target

if TYPE_CHECKING:
    from xweave.pipeline import CompileOptions

# The compiler is imported inside the functions that compile, by design: measurement
# workers import `xweave.autotune` (this module too) and compile nothing.

RUNNERS = ("local", "cluster")

logger = logging.getLogger(__name__)


class TuneError(XweaveError):
    """Bad options or files for `xweave tune`."""


def check_records_file(path: str | os.PathLike, must_exist: bool = False) -> None:
    """Refuse a records path that is a directory, or an existing file none of whose
    lines is a tuning record (appending to it would damage someone else's file)."""
    p = Path(path)
    if p.is_dir():
        raise TuneError(f"{path}: is a directory, expected a tuning-records file")
    if not p.exists():
        if must_exist:
            raise TuneError(f"{path}: no such tuning-records file")
        return
    try:
        records, skipped = read_records(p)
    except OSError as e:
        raise TuneError(f"{path}: cannot read ({e})") from None
    if not records and skipped:
        raise TuneError(f"{path}: not a tuning-records file (none of its {len(skipped)} "
                        f"line(s) is a record; first: {skipped[0].message})")


def _measurers(runner: str, address: str | None, builders: int | None, timeout: float,
               target_label: str | None):
    if runner == "local":
        return (LocalBuilder(n_parallel=builders, timeout=timeout),
                LocalRunner(timeout=timeout))
    if runner == "cluster":
        if not address:
            raise TuneError("--runner cluster needs --address HOST:PORT")
        try:  # lazy by design: the cluster runner needs the optional `distributed`
            from xweave.autotune.cluster import ClusterBuilder, ClusterRunner
        except ImportError as e:
            raise TuneError(f"the cluster runner is not available ({e})") from None
        return (ClusterBuilder(address, timeout=timeout, n_parallel=builders or None),
                ClusterRunner(address, target_label, timeout=timeout))
    raise TuneError(f"unknown runner '{runner}' (expected one of: {', '.join(RUNNERS)})")


def tune_model(
    model: Any,
    records_path: str | os.PathLike,
    trials: int = 64,
    tuner: str = "lgbm",
    early_stopping: int | None = None,
    seed: int | None = 0,
    target: Any = None,
    threads: int | None = None,
    input_shapes: dict[str, tuple[int, ...]] | None = None,
    runner: str = "local",
    address: str | None = None,
    target_label: str | None = None,
    builders: int | None = None,
    timeout: float = 30.0,
    max_tasks: int | None = None,
    transfer: bool = False,
    progress: bool = True,
    fuse: bool = True,
    layout: bool = True,
    winograd: bool = True,
) -> list[Any]:
    """Tune every task of `model` (see `kernel_tasks.extract_tasks`), appending to
    `records_path`; returns one `TuneResult` per task.

    The kernels tuned are those `xweave.build` compiles with the same `target`,
    `fuse`, `layout` and `winograd` (one `pipeline.CompileOptions`); compile with the
    same choices for the records to apply.

    `trials` is per task (resumed records count); `threads` sets the threads of the
    measured code (`XWEAVE_NUM_THREADS` in the runner); `builders` the build
    processes (default: every core); `max_tasks` tunes only the first (most
    expensive) tasks. `runner="cluster"` builds and measures on the Dask cluster at
    `address` (`autotune.cluster`), on workers advertising `target_label` (default:
    this machine's label). `progress`: a progress bar on stderr (when a terminal).
    What it does is logged to `xweave.autotune.tune_model` (a line per task at INFO,
    each task's result at `log.NOTE`).
    """
    from xweave.pipeline import CompileOptions, offload_target  # lazy: see the note above

    target = as_target(target)
    if not target.is_cpu:
        try:
            offload_target(target.kind)
        except XweaveError as e:
            raise TuneError(str(e)) from None
    elif not target.on_host_arch and runner == "local":
        raise TuneError(f"target '{target}' is for {target.arch}: the local runner measures "
                        "on this machine, which is not; tune on a machine of that architecture "
                        "(or with --runner cluster on workers of that architecture)")
    if tuner not in TUNERS:
        raise TuneError(f"unknown tuner '{tuner}' (expected one of: {', '.join(TUNERS)})")
    if trials < 1:
        raise TuneError(f"--trials must be at least 1 (got {trials})")
    if early_stopping is not None and early_stopping < 1:
        raise TuneError(f"--early-stopping must be at least 1 (got {early_stopping})")
    if threads is not None:
        check_num_threads(threads)
    check_records_file(records_path)

    options = CompileOptions(target if target.is_cpu else None, fuse=fuse, layout=layout,
                             winograd=winograd)
    tasks = extract_tasks(model, input_shapes, options=options)
    if max_tasks is not None:
        tasks = tasks[:max_tasks]
    if not tasks:
        logger.log(NOTE, "nothing to tune: no kernel of the model has a schedule choice")
        return []
    logger.log(NOTE, "%d task(s) to tune for '%s', %d trials each, tuner %s, records %s",
               len(tasks), tasks[0].target, trials, tuner, records_path)
    saved_threads = os.environ.get(NUM_THREADS_ENV)
    if threads is not None:
        os.environ[NUM_THREADS_ENV] = str(threads)  # read by the runner's loaded code
    builder, run = _measurers(runner, address, builders, timeout, target_label)
    results = []
    try:
        for i, task in enumerate(tasks, start=1):
            work = (f"{task.bytes_moved / 1e6:.3g} MB moved" if task.moves_data
                    else f"{task.flops / 1e6:.3g} MFLOP")
            logger.info("task %d/%d: %s (called %dx, %s, %d points: %s)", i, len(tasks),
                        task.workload_key, task.weight, work, task.space.size,
                        ", ".join(f"{k}[{len(v)}]" for k, v in task.knobs.items()))
            result = tune(task, tuner=tuner, trials=trials, early_stopping=early_stopping,
                          seed=seed, records_path=records_path, progress=progress,
                          builder=builder, runner=run, transfer=transfer,
                          initial_points=[task.default_point()],
                          label=f"{i}/{len(tasks)} {task.workload_key.split('#')[0]}")
            results.append(result)
            default = _default_gflops(task, records_path,
                                      task_target(task, getattr(run, "target_info", None)))
            failed = sum(v for k, v in result.errors.items() if k)
            kept = default and result.best_gflops < default * (1 + MIN_GAIN)
            logger.log(NOTE, "%s", f"{i}/{len(tasks)} {task.workload_key.split('#')[0]}: "
                f"best {result.best_throughput}"
                + (f" (default schedule {throughput(task, default)})" if default else "")
                + (f"; compile keeps the default (less than {MIN_GAIN:.0%} faster)"
                   if kept else "")
                + f" after {result.trials} new + {result.resumed} resumed trials, "
                  f"{failed} error(s); stopped: {result.stop_reason}")
        if runner == "local" and target.is_cpu:
            check_in_model(model, records_path, threads, input_shapes, options=options)
    finally:
        builder.close()
        run.close()
        if threads is not None:
            if saved_threads is None:
                os.environ.pop(NUM_THREADS_ENV, None)
            else:
                os.environ[NUM_THREADS_ENV] = saved_threads
    return results


def check_in_model(model: Any, records_path: str | os.PathLike, threads: int | None = None,
                   input_shapes: dict[str, tuple[int, ...]] | None = None, rounds: int = 5,
                   repeat: int = 10, options: CompileOptions | None = None) -> dict[str, tuple[float, float]]:
    """Time every tuned kernel inside the model (built with `options`: its target,
    default the default target, and its fuse, layout and winograd choices) against its
    default schedule and append a `model_check` record per tuned workload; returns
    workload key -> (tuned ms, default ms), summed over the kernel's calls (medians of
    `rounds` alternating profiles of `repeat` runs each)."""
    from xweave.driver import build  # lazy: see the note above
    from xweave.pipeline import CompileOptions
    from xweave.schedules.tuned import tuned_schedules

    options = options or CompileOptions()
    target = str(options.target) if options.target is not None else None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        records = load_records(records_path)
    # The candidates as measured (earlier checks set aside), in a file of their own.
    with tempfile.TemporaryDirectory() as tmp:
        measured = Path(tmp) / "measured.jsonl"
        with RecordWriter(measured, fsync=False) as w:
            for r in records:
                w.write({k: v for k, v in r.items() if not k.startswith("_")})
        best = tuned_schedules(measured, target).best
        checked = load_model_checks(records_path)
        todo = {key for key, record in best.items()
                if not _up_to_date(checked.get(key), record, threads, target)}
        if not todo:  # a resumed run with nothing new: nothing to append
            if best:
                logger.log(NOTE, "model check: the %d tuned kernel(s) were already timed "
                           "inside the model", len(best))
            return {}
        logger.info("model check: timing %d tuned kernel(s) inside the model", len(best))
        # Uncached: which kernels took a record (`applied`) is learnt while compiling.
        build_options = {"input_shapes": input_shapes, "threads": threads, "profile": True,
                         "target": target, "fuse": options.fuse, "layout": options.layout,
                         "winograd": options.winograd, "cache": False}
        default = build(model, **build_options)
        with warnings.catch_warnings(record=True) as caught, _quiet("xweave.schedules"):
            warnings.simplefilter("always", RuntimeWarning)
            tuned = build(model, tuning_records=measured, **build_options)
        lines = {str(i): str(r["_line"]) for i, r in enumerate(records, start=1)}
        for w in caught:  # about the records: name the user's file and line
            text = re.sub(rf"^{re.escape(str(measured))}:(\d+):",
                          lambda m: f"{records_path}:{lines.get(m.group(1), '?')}:",
                          str(w.message))
            warnings.warn(text, w.category, stacklevel=2)
        applied = dict(tuned_schedules(measured, target).applied)  # kernel name -> workload
    rng = np.random.default_rng(0)
    feeds = {s.name: rng.standard_normal(s.shape).astype(s.dtype) for s in default.inputs}
    samples: dict[str, dict[str, list[float]]] = {"default": {}, "tuned": {}}
    for _ in range(rounds):
        for name, module in (("default", default), ("tuned", tuned)):
            for row in module.profile(repeat=repeat, **feeds).by_kernel:
                samples[name].setdefault(row.kernel, []).append(row.median_ms)
    times: dict[str, list[float]] = {}
    for kernel, key in applied.items():
        if kernel in samples["tuned"] and kernel in samples["default"]:
            pair = times.setdefault(key, [0.0, 0.0])
            pair[0] += float(np.median(samples["tuned"][kernel]))
            pair[1] += float(np.median(samples["default"][kernel]))
    faster = 0
    with RecordWriter(records_path) as w:
        for key, (tuned_ms, default_ms) in times.items():
            if key not in todo:
                continue
            w.write({"kind": MODEL_CHECK, "workload": key, "schedule": best[key]["schedule"],
                     "tuned_ms": round(tuned_ms, 6), "default_ms": round(default_ms, 6),
                     "threads": threads, "target": target_info(target), "timestamp": time.time(),
                     "version": xweave_version()})
            faster += tuned_ms * (1 + MIN_GAIN) <= default_ms
    total_default = sum(d for _, d in times.values())
    total_kept = sum(min(t, d) if t * (1 + MIN_GAIN) <= d else d for t, d in times.values())
    logger.log(NOTE, "model check: %d of %d tuned kernel(s) at least %.0f%% faster inside the "
               "model (compile keeps the default schedule of the others); their time %s -> "
               "%s per run", faster, len(times), 100 * MIN_GAIN, format_ms(total_default),
               format_ms(total_kept))
    return {k: (t, d) for k, (t, d) in times.items()}


@contextlib.contextmanager
def _quiet(name: str) -> Iterator[None]:
    """Logger `name` says only warnings and errors within the block (what a build with
    a temporary records file reports is not the user's business)."""
    log = logging.getLogger(name)
    saved = log.level
    log.setLevel(logging.WARNING)
    try:
        yield
    finally:
        log.setLevel(saved)


def _up_to_date(check: dict | None, record: dict, threads: int | None, target) -> bool:
    """Whether a model check already timed this record's schedule here, for `target`."""
    return (check is not None and check["schedule"] == record["schedule"]
            and check.get("threads") == threads and check.get("target") == target_info(target))


def _default_gflops(task, records_path, target: dict | None = None) -> float:
    """GFLOP/s of the default schedule of `task` in the records (0 if not measured)."""
    point = task.default_point()
    if point is None:
        return 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        records = load_records(records_path)
    values = [r["result"]["gflops"] for r in records if r["workload"] == task.workload_key
              and tuple(r["point"]) == tuple(point) and same_target(r, target) and is_ok(r)]
    return max(values, default=0.0)


def plot_records(paths: list[str], out_png: str | os.PathLike) -> dict:
    """`tune.plot_curves` with clear errors for missing files or matplotlib."""
    for p in paths:
        check_records_file(p, must_exist=True)
    if not load_many(paths):
        raise TuneError(f"{', '.join(paths)}: no tuning records to plot")
    try:  # lazy by design: plots need the optional matplotlib
        import matplotlib  # noqa: F401
    except ImportError:
        raise TuneError("plotting needs matplotlib, xweave's 'plot' extra: "
                        "pip install 'xweave[plot]'") from None
    return plot_curves(paths, out_png)


__all__ = ["RUNNERS", "TuneError", "check_in_model", "check_records_file", "plot_records",
           "tune_model"]
