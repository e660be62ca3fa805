"""Each kernel's schedule chosen for the machine at hand: the build's schedule modes.

    module = xweave.build("model.onnx", schedule="measure")    # or "model", "default"

* `default`: every kernel gets its template's default configuration, the heuristic
  sized from the machine model (the build of before, and what `xweave tune` starts
  from).
* `model`: the shipped ranking model (`pretrained.py`, LightGBM over `config_features`,
  machine figures included) ranks the candidates of each kernel's tuning space, the
  default among them, and the best ranked is used: deterministic, no code is run, so it
  suits cross-compiling and reproducible builds.
* `measure`: the default and the model's best `CANDIDATES - 1` proposals are timed on
  this machine (compiled and run in worker processes, briefly) and the fastest is used,
  a proposal only when at least `records.MIN_GAIN` faster than the default, so a build
  only gets faster. The measurements go into this machine's schedule database
  (`database.py`), so each distinct kernel is measured once per machine, whatever
  model it is in; later builds read them back. This is what cuDNN's benchmark mode and
  `torch.compile(mode="max-autotune")` do, with the ranking model deciding what to time.
  A build measures within a budget (`MEASURING_BUDGET`): the kernels with the most
  work first (flops x calls, as Ansor's task scheduler weighs tasks), until the time
  spent compiling and timing candidates reaches what compiling the model's kernels
  once costs (estimated from the candidates' own build times); the rest keep their
  defaults, and the next build of a model with them measures the next ones.

A mode's choices reach the compiler as a records file of one record per kernel
(`choose_schedules`), which `schedule-kernels{tuning-records=...}` applies as it applies
`xweave tune`'s: one schedule language, one reader. `xweave.build` passes
`choose_schedules` to the driver, which calls it on the loop stage of a build that the
compile cache does not hold (see `driver.build`).
"""

from __future__ import annotations

import logging
import random
import time
import zlib
from collections.abc import Sequence
from pathlib import Path

from xdsl.dialects.builtin import ModuleOp

from xweave.autotune.config_features import config_features
from xweave.autotune.kernel_tasks import ScheduleTask, extract_tasks
from xweave.autotune.measure import LocalBuilder, LocalRunner
from xweave.autotune.pretrained import shipped_ranker
from xweave.autotune.database import ScheduleDatabase
from xweave.autotune.space import Point
from xweave.log import NOTE
from xweave.options import CompileOptions, schedule_mode
from xweave.parallel import compile_jobs
from xweave.records import MIN_GAIN, RecordWriter, is_ok, make_record
from xweave.timing import scope as timing_scope

logger = logging.getLogger(__name__)

CANDIDATES = 4
"""Schedules timed per kernel in `measure` mode: the default and the model's best."""

MEASURING_BUDGET = 1.0
"""What one build may spend measuring, as a multiple of the estimated time of compiling
its distinct kernels once (so a measuring build takes about twice a plain one): each
measured kernel costs CANDIDATES builds, so a first build measures about a quarter of
a model's kernels, the heaviest."""

PROPOSALS = 256
"""Points of a kernel's space the ranking model scores (the default's neighbours, then
random ones)."""


def _seed(task: ScheduleTask) -> int:
    return zlib.crc32(task.workload_key.encode())


def _ranked(task: ScheduleTask) -> list[tuple[float, int, Point]]:
    """Points of the kernel's space (the default, its neighbours, then random ones: up
    to PROPOSALS) with the shipped ranking model's scores, best first (the default
    first among equals; deterministic for a kernel and model)."""
    default = task.default_point()
    space = task.space
    pool: list[Point] = [default] if default is not None else []
    if default is not None:
        pool += [p for p in space.neighbors(default) if space.is_valid(p)]
    pool = list(dict.fromkeys(pool))[:PROPOSALS]
    pool += space.sample(PROPOSALS - len(pool), random.Random(_seed(task)), exclude=set(pool))
    if not pool:
        return []
    template = task.schedule_template.name
    scores = shipped_ranker().predict(
        [config_features(task.info, template, task.config(p)) for p in pool])
    return sorted(((float(s), i, p) for i, (s, p) in enumerate(zip(scores, pool))),
                  key=lambda t: (-t[0], t[1]))


def proposals(task: ScheduleTask, count: int) -> list[Point]:
    """The default point first, then the `count - 1` other points the shipped ranking
    model scores highest."""
    default = task.default_point()
    others = [p for _, _, p in _ranked(task) if p != default]
    return ([default] if default is not None else []) + others[: count - (default is not None)]


def model_choice(task: ScheduleTask) -> Point | None:
    """The point the shipped ranking model scores highest (the default on ties)."""
    ranked = _ranked(task)
    return ranked[0][2] if ranked else None


def _schedule_file(records: Sequence[dict], folder: Path) -> Path:
    """The chosen records, one per kernel, as a records file in `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "schedules.jsonl"
    path.unlink(missing_ok=True)
    with RecordWriter(path, fsync=False) as writer:
        for record in sorted(records, key=lambda r: r["workload"]):
            writer.write(record)
    return path


def choose_schedules(module: ModuleOp, options: CompileOptions, mode: str,
                     folder: Path) -> Path | None:
    """Choose the schedule of every kernel of the loop-stage `module` as `mode` says;
    the records file (in `folder`) that `schedule-kernels` applies, or None when every
    kernel keeps its default."""
    if schedule_mode(mode) == "default":
        return None
    with timing_scope(f"choose schedules ({mode})"):
        started = _clock()
        tasks = extract_tasks(None, module=module, options=options)
        if not tasks:
            return None
        if mode == "model":
            chosen = [_predicted(task, model_choice(task)) for task in tasks]
        else:
            chosen = _measured(tasks, _clock() - started)
        chosen = [r for r in chosen if r is not None]
        return _schedule_file(chosen, folder) if chosen else None


def _predicted(task: ScheduleTask, best: Point | None) -> dict | None:
    """The record of the model's choice (not a measurement: `predicted`), or None when
    it is the default."""
    if best is None or best == task.default_point():
        return None
    record = make_record(task, best, _Prediction(), tuner="model")
    record["predicted"] = True
    return record


class _Prediction:
    """What `make_record` reads of a measurement, for a choice that was not measured."""

    costs = (1.0,)
    gflops = 1.0
    error_no = 0
    error_msg = ""
    build_time = 0.0
    run_time = 0.0
    number = 0


def _measured(tasks: Sequence[ScheduleTask], spent: float = 0.0) -> list[dict | None]:
    """Measure the proposals of the kernels this machine's database does not know yet
    (within the budget, of which `spent` seconds went into finding the kernels), then
    choose from the database."""
    db = ScheduleDatabase.for_host()
    target = tasks[0].target
    known = {r["workload"] for r in db.records([t.workload_key for t in tasks], target)
             if r.get("baseline")}
    todo = sorted((t for t in tasks if t.workload_key not in known),
                  key=lambda t: -t.flops * t.weight)
    if todo:
        builder, runner = measuring_tools()
        budget = _Budget(len(tasks), compile_jobs(), spent)
        measured_count = 0
        try:
            for task in todo:
                if measured_count and budget.spent():
                    break
                start = _clock()
                with timing_scope("measure"):
                    points = proposals(task, CANDIDATES)
                    results = runner.run(task, builder.build(task, points))
                budget.charge(_clock() - start, results)
                measured_count += 1
                records = []
                for point, result in zip(points, results):
                    record = make_record(task, point, result, tuner="measure")
                    if point == points[0]:
                        record["baseline"] = True  # the default: what a choice must beat
                    records.append(record)
                if records and is_ok(records[0]):
                    db.add(records)
                else:  # the default itself failed: the measuring, not the kernel; not kept
                    logger.warning("measuring %s failed (%s): it keeps its default schedule",
                                   task.workload_key.split("#")[0],
                                   records[0]["result"]["error_msg"] if records else "no result")
        finally:
            builder.close()
            runner.close()
        left = len(todo) - measured_count
        logger.log(NOTE, "measured %d candidate schedules of %d kernel(s) on this machine "
                   "(kept in %s)%s", CANDIDATES * measured_count, measured_count, db.path,
                   f"; {left} lighter kernel(s) keep their defaults until a later build "
                   "measures them" if left else "")
    measured = db.records([t.workload_key for t in tasks], target)
    return [_fastest(task, [r for r in measured if r["workload"] == task.workload_key])
            for task in tasks]


class _Budget:
    """The measuring a build may do (`MEASURING_BUDGET`): the wall time spent finding
    the kernels, choosing, compiling and timing candidates, against the build's own
    compilation, estimated from the candidates' compile times (in the workers: what
    compiling the kernel once costs here) times the build's distinct kernels, over the
    compile jobs."""

    def __init__(self, kernels: int, jobs: int, spent: float = 0.0):
        self.kernels = kernels
        self.jobs = max(1, jobs)
        self.build_times: list[float] = []
        self.spent_seconds = spent

    def charge(self, seconds: float, results: Sequence) -> None:
        self.spent_seconds += seconds
        self.build_times += [r.build_time for r in results if r.build_time > 0]

    def spent(self) -> bool:
        if not self.build_times:
            return True  # nothing compiled: measuring does not work here
        mean_build = sum(self.build_times) / len(self.build_times)
        return self.spent_seconds >= MEASURING_BUDGET * self.kernels * mean_build / self.jobs


_clock = time.perf_counter
"""The clock the budget reads (tests advance a fake one)."""


def measuring_tools() -> tuple[LocalBuilder, LocalRunner]:
    """The builder (worker processes, one per core) and the runner (a process of its
    own, a short measurement) that time candidates; tests swap in a fake timer."""
    return LocalBuilder(n_parallel=compile_jobs()), LocalRunner(repeat=3, min_repeat_ms=5.0)


def _fastest(task: ScheduleTask, records: list[dict]) -> dict | None:
    """The fastest measured schedule of `task`, if at least MIN_GAIN faster than its
    default's (None: the default stays). Candidates are compared by their fastest run,
    not their mean: a measurement is short, and on a shared machine one run that waited
    for the core would otherwise decide."""
    timed = [r for r in records if is_ok(r) and r["result"].get("costs")]
    if not timed:
        return None

    def fastest_run(record: dict) -> float:
        return min(record["result"]["costs"])

    best = min(timed, key=fastest_run)
    baselines = [fastest_run(r) for r in timed if r.get("baseline")]
    if best.get("baseline") or (baselines and fastest_run(best) * (1 + MIN_GAIN) > min(baselines)):
        return None
    return best
