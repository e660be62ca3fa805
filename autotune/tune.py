"""The tuning loop: propose, build, measure, record, learn; and tuning curves.

```python
from xweave.autotune import make_task, tune, plot_curves
task = make_task("matmul_ir", M=64, N=64, K=64)
result = tune(task, tuner="lgbm", trials=200, early_stopping=100, seed=0,
              records_path="matmul.jsonl")
print(result.summary())          # best GFLOP/s, schedule, time per trial by phase
plot_curves(["matmul.jsonl"], "curves.png")
```

Given an existing records file, `tune` resumes: the records of this workload measured
on this CPU are fed to the tuner first (they count towards `trials` and are never
measured again), so re-running the same command after a crash finishes the job.
With `transfer=True` the model-based tuner also learns from the file's records of
other workloads (as their own ranking groups).
"""

from __future__ import annotations

import math
import os
import sys
import textwrap
import time
import warnings
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from tqdm import tqdm

from xweave.autotune.measure import (
    LocalBuilder,
    LocalRunner,
    MeasureErrorNo,
    MeasureResult,
    SimulatedRunner,
)
from xweave.records import (
    RecordWriter,
    _jsonable,
    is_ok,
    load_many,
    load_records,
    make_record,
    same_target,
    task_target,
)
from xweave.autotune.search import ModelBasedTuner, Tuner, make_tuner
from xweave.autotune.space import Point
from xweave.autotune.templates import task_from_spec


@dataclass
class TuneResult:
    """What a `tune` call did and found."""

    workload: str
    tuner: str
    best_point: Point | None
    best_gflops: float
    best_schedule: str
    best_config: dict
    trials: int
    """Measurements made by this call."""
    resumed: int
    """Records of this workload loaded from the records file (not re-measured)."""
    errors: Counter = field(default_factory=Counter)
    """Error number -> count, for this call's measurements."""
    results: list[MeasureResult] = field(default_factory=list)
    curve: list[float] = field(default_factory=list)
    """Best GFLOP/s so far after each trial (resumed records first)."""
    timing: dict[str, float] = field(default_factory=dict)
    """Seconds: total, build, measure, tuner, records, other (this call)."""
    stop_reason: str = ""
    best_throughput: str = ""
    """`best_gflops` as `throughput` words it (GB/s for a kernel that only moves data)."""

    @property
    def seconds_per_trial(self) -> dict[str, float]:
        n = max(1, self.trials)
        return {k: v / n for k, v in self.timing.items()}

    def summary(self) -> str:
        per = self.seconds_per_trial
        errors = ", ".join(f"{MeasureErrorNo(k).name}: {v}" for k, v in sorted(self.errors.items())
                           if k) or "none"
        return "\n".join([
            f"{self.workload} [{self.tuner}]: best {self.best_throughput} after "
            f"{self.trials} new trials (+{self.resumed} resumed); stopped: {self.stop_reason}",
            f"  best schedule: {self.best_schedule}",
            f"  errors: {errors}",
            "  time per trial: " + ", ".join(
                f"{k} {1000 * per[k]:.1f} ms" for k in
                ("total", "build", "measure", "tuner", "records", "other") if k in per),
        ])


def throughput(task: Any, gflops: float) -> str:
    """`gflops` measured on `task` as a reader wants it: GFLOP/s, or GB/s (bytes read
    and written per second) for a kernel that only moves data (`task.moves_data`)."""
    if getattr(task, "moves_data", False) and task.flops:
        return f"{gflops * task.bytes_moved / task.flops:.2f} GB/s"
    return f"{gflops:.2f} GFLOP/s"


def format_ms(ms: float) -> str:
    """A time in milliseconds to three significant digits, in µs below 0.1 ms."""
    if ms < 0.1:
        return f"{ms * 1e3:.3g} µs"
    return f"{ms:.0f} ms" if ms >= 1000 else f"{ms:.3g} ms"


class _Progress:
    """tqdm's bar on stderr, fitted to the terminal's width; off when stderr is not a
    terminal or `enabled` is False."""

    def __init__(self, total: int, label: str, enabled: bool, task: Any, initial: int = 0):
        self.task = task
        self._bar = tqdm(total=total, initial=initial, file=sys.stderr, dynamic_ncols=True,
                         disable=None if enabled else True,
                         bar_format="{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} "
                                    "[{elapsed}<{remaining}{postfix}]")
        # tqdm cuts a line at the terminal's edge: shorten the label, not the counts.
        room = max(8, (getattr(self._bar, "ncols", None) or 80) - 64)
        self._bar.set_description_str(label if len(label) <= room else label[:room - 1] + "…",
                                      refresh=False)

    def update(self, n: int, best: float, errors: int) -> None:
        self._bar.set_postfix_str(f"best {throughput(self.task, best)}, errors {errors}",
                                  refresh=False)
        self._bar.update(n)

    def close(self) -> None:
        self._bar.close()


def _default_measurers(task: Any, builder, runner):
    simulated = getattr(task, "simulated", False)
    own = []
    if builder is None:
        builder = LocalBuilder(n_parallel=0 if simulated else None)
        own.append(builder)
    if runner is None:
        runner = SimulatedRunner() if simulated else LocalRunner()
        own.append(runner)
    return builder, runner, own


def _load_transfer(tuner: ModelBasedTuner, records: list[dict], own_key: str,
                   target: dict | None = None) -> int:
    """Feed other workloads' successful records of `target` (a `records.target_info`)
    to the tuner; returns rows added."""
    by_workload: dict[str, list[dict]] = {}
    for r in records:
        if r["workload"] != own_key and r.get("task") and same_target(r, target):
            by_workload.setdefault(r["workload"], []).append(r)
    added = 0
    for key, rs in by_workload.items():
        try:
            other = task_from_spec(rs[0]["task"])
            tuner.add_history_task(other, [tuple(r["point"]) for r in rs],
                                   [r["result"]["gflops"] if is_ok(r) else 0.0 for r in rs])
            added += len(rs)
        except Exception:
            continue  # a template that is not available here, or features that differ
    return added


def tune(
    task: Any,
    tuner: str | Tuner = "lgbm",
    trials: int = 100,
    early_stopping: int | None = None,
    seed: int | None = 0,
    records_path: str | os.PathLike | None = None,
    progress: bool = True,
    builder: Any = None,
    runner: Any = None,
    batch_size: int | None = None,
    tuner_options: dict | None = None,
    transfer: bool = False,
    callbacks: Sequence[Callable[[MeasureResult, dict], None]] = (),
    initial_points: Sequence[Point] = (),
    label: str | None = None,
) -> TuneResult:
    """Tune `task` for up to `trials` measurements (resumed records included).

    `tuner`: "lgbm" (model-based), "ga", "random", "grid", or a `Tuner`.
    `early_stopping`: stop after that many trials without a new best.
    `builder`/`runner`: default `LocalBuilder()` and `LocalRunner()` (or an in-process
    builder and `SimulatedRunner` for tasks with `simulated = True`).
    `batch_size`: points per round (default: the builder's parallelism, at least 1;
    8 for simulated tasks). Each measurement is appended to `records_path` (flushed and
    fsync'd) and passed to every `callbacks(result, record)`.
    `initial_points` (e.g. the default schedule) are measured first unless recorded;
    their records carry `"baseline": true`.
    `label` names the progress bar (default: tuner and workload).
    """
    t_start = time.perf_counter()
    timing = dict.fromkeys(("build", "measure", "tuner", "records"), 0.0)
    if isinstance(tuner, str):
        tuner_name = tuner
        tuner = make_tuner(tuner, task, seed=seed, **(tuner_options or {}))
    else:
        tuner_name = getattr(tuner, "name", type(tuner).__name__)
    key = task.workload_key

    # Resume: never re-measure what the records already hold for this workload here.
    prior: list[dict] = []
    writer = None
    if records_path is not None:
        all_records = load_records(records_path)
        here = task_target(task, getattr(runner, "target_info", None))
        prior = [r for r in all_records if r["workload"] == key and same_target(r, here)]
        if transfer and isinstance(tuner, ModelBasedTuner):
            _load_transfer(tuner, all_records, key, here)
        writer = RecordWriter(records_path)
    curve: list[float] = []
    best = 0.0
    best_point: Point | None = None
    seen: set[Point] = set()
    prior_points, prior_gflops = [], []
    skipped = 0
    for r in prior:
        p = tuple(r["point"])
        if p in seen:
            continue
        try:
            task.space.check_point(p)
            # Same indices, other candidates: the template's space changed since.
            if r.get("config") and r["config"] != _jsonable(task.space.config(p)):
                raise ValueError
        except ValueError:  # recorded for another version of the template
            skipped += 1
            continue
        seen.add(p)
        g = r["result"]["gflops"] if is_ok(r) else 0.0
        prior_points.append(p)
        prior_gflops.append(g)
        if g > best:
            best, best_point = g, p
        curve.append(best)
    if skipped:
        warnings.warn(f"{records_path}: {skipped} record(s) of {key} do not fit the current "
                      "search space and were ignored", RuntimeWarning, stacklevel=2)
    t0 = time.perf_counter()
    if prior_points and len(prior_points) < trials:  # (a finished run needs no model)
        tuner.update(prior_points, prior_gflops)
    timing["tuner"] += time.perf_counter() - t0

    builder, runner, own = _default_measurers(task, builder, runner)
    if batch_size is None:
        batch_size = 8 if getattr(task, "simulated", False) else \
            max(1, getattr(builder, "n_parallel", 1) or 1)
    progress_bar = _Progress(trials, label or f"{tuner_name} {key}", progress, task,
                             initial=len(prior_points))
    baseline = {tuple(p) for p in initial_points if p is not None}
    first = [tuple(p) for p in dict.fromkeys(tuple(p) for p in initial_points if p is not None)
             if tuple(p) not in seen]
    results: list[MeasureResult] = []
    errors: Counter = Counter()
    since_best = 0
    trial = len(prior_points)
    stop_reason = "trials"
    try:
        while trial < trials:
            if not tuner.has_next():
                stop_reason = "space exhausted"
                break
            t0 = time.perf_counter()
            want = min(batch_size, trials - trial)
            batch, first = first[:want], first[want:]
            tuner.visited.update(batch)
            if len(batch) < want:
                batch += tuner.next_batch(want - len(batch))
            timing["tuner"] += time.perf_counter() - t0
            if not batch:
                stop_reason = "space exhausted"
                break
            t0 = time.perf_counter()
            builds = builder.build(task, batch)
            t1 = time.perf_counter()
            measured = runner.run(task, builds)
            t2 = time.perf_counter()
            for b, res in zip(builds, measured):  # the schedule the builder applied
                if getattr(b, "schedule", None) and not getattr(res, "schedule", None):
                    res.schedule = b.schedule
            timing["build"] += t1 - t0
            timing["measure"] += t2 - t1
            improved_in_batch = False
            for res in measured:
                trial += 1
                errors[int(res.error_no)] += 1
                record = make_record(task, res.point, res, tuner_name, trial)
                if tuple(res.point) in baseline:
                    record["baseline"] = True  # what a tuned schedule must beat (schedules.tuned)
                if writer is not None:
                    writer.write(record)
                for cb in callbacks:
                    cb(res, record)
                results.append(res)
                g = res.gflops if res.ok else 0.0
                if g > best:
                    best, best_point = g, tuple(res.point)
                    since_best = 0
                    improved_in_batch = True
                else:
                    since_best += 1
                curve.append(best)
            failed = sum(v for k, v in errors.items() if k)
            progress_bar.update(len(measured), best, failed)
            timing["records"] += time.perf_counter() - t2
            t0 = time.perf_counter()
            tuner.update([r.point for r in measured], measured)
            timing["tuner"] += time.perf_counter() - t0
            if early_stopping is not None and since_best >= early_stopping \
                    and not improved_in_batch:
                stop_reason = f"early stopping ({early_stopping} trials without improvement)"
                break
    finally:
        progress_bar.close()
        if writer is not None:
            writer.close()
        for m in own:
            m.close()
    timing["total"] = time.perf_counter() - t_start
    timing["other"] = max(0.0, timing["total"] - sum(
        timing[k] for k in ("build", "measure", "tuner", "records")))
    if best_point is not None:
        best_schedule = task.schedule(best_point)
        best_config = task.space.config(best_point)
    else:
        best_schedule, best_config = "", {}
    return TuneResult(key, tuner_name, best_point, best, best_schedule, best_config,
                      len(results), len(prior_points), errors, results, curve, timing,
                      stop_reason, throughput(task, best))


# ----------------------------------------------------------------------------------
# Tuning curves
# ----------------------------------------------------------------------------------


def best_so_far_curves(records: Iterable[dict]) -> dict[str, dict[str, list[float]]]:
    """workload -> series label -> best GFLOP/s after each trial.

    A series is one tuner in one records file (the file's name is added to the label
    when several files hold the same tuner); trials in record order.
    """
    series: dict[tuple[str, str, str], list[float]] = {}
    for r in records:
        source = str(r.get("_source", ""))
        k = (r["workload"], r.get("tuner") or "?", source)
        values = series.setdefault(k, [])
        g = r["result"]["gflops"] if is_ok(r) else 0.0
        values.append(max(g, values[-1] if values else 0.0))
    sources_per_tuner: dict[tuple[str, str], set[str]] = {}
    for w, t, s in series:
        sources_per_tuner.setdefault((w, t), set()).add(s)
    out: dict[str, dict[str, list[float]]] = {}
    for (w, t, s), values in series.items():
        label = t if len(sources_per_tuner[(w, t)]) == 1 or not s else f"{t} ({s})"
        out.setdefault(w, {})[label] = values
    return out


def _units(records: list[dict]) -> dict[str, tuple[str, float]]:
    """Workload -> ("GB/s", GB/s per recorded GFLOP/s) for the workloads whose kernels
    only move data (their task, rebuilt from the records, says so)."""
    units = {}
    for r in records:
        if r["workload"] in units or not r.get("task"):
            continue
        units[r["workload"]] = ("GFLOP/s", 1.0)
        try:
            task = task_from_spec(r["task"])
            if getattr(task, "moves_data", False) and task.flops:
                units[r["workload"]] = ("GB/s", task.bytes_moved / task.flops)
        except Exception:  # a template not available here: plotted as recorded
            continue
    return units


def plot_curves(sources: str | os.PathLike | Iterable[Any], out_png: str | os.PathLike,
                title: str | None = None) -> dict[str, dict[str, list[float]]]:
    """Plot best-so-far GFLOP/s vs. trials for every tuner (one panel per workload).

    `sources`: a records path, a list of paths, or records. Returns the curves.
    """
    import matplotlib  # lazy by design: plots need the optional matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    if isinstance(sources, (str, os.PathLike)):
        sources = [sources]
    records: list[dict] = []
    for s in sources:
        if isinstance(s, dict):
            records.append(s)
        else:
            for r in load_many([s]):
                r["_source"] = os.path.basename(str(s))
                records.append(r)
    curves = best_so_far_curves(records)
    units = _units(records)
    n = max(1, len(curves))
    cols = min(n, 2)
    rows = math.ceil(n / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(6.4 * cols, 4.2 * rows), squeeze=False)
    for ax, (workload, by_label) in zip(axes.flat, sorted(curves.items())):
        unit, scale = units.get(workload, ("GFLOP/s", 1.0))
        for label, values in sorted(by_label.items()):
            ax.plot(range(1, len(values) + 1), [v * scale for v in values], label=label,
                    linewidth=1.6)
        # Workload keys are long: wrapped, not clipped at the panel's edge.
        ax.set_title("\n".join(textwrap.wrap(workload, 70)), fontsize=9)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_xlabel("trials")
        ax.set_ylabel(f"best {unit} so far")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    for ax in list(axes.flat)[len(curves):]:
        ax.set_visible(False)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(out_png, dpi=110)
    plt.close(fig)
    return curves
