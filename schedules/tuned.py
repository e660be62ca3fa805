"""Tuned schedules for compilation: the best record of each workload of a records file.

`schedule-kernels{tuning-records="FILE"}` (and `xweave.build(..., tuning_records=FILE)`,
`xweave compile --tuning-records FILE`) asks `TunedSchedules` for each kernel's
schedule: the pipeline of the fastest successful record whose workload key is the
kernel's (`schedules.workload.kernel_key`), retargeted to the kernel's name. Only records
tuned for the build's target (`records.record_target`: CPU and features) are used,
unless asked (`any_target=True`: `xweave.build(..., any_target_records=True)`,
`xweave compile --any-target-records`; then this target's records still win); of
those, records measured on this CPU win over records of other CPUs. Kernels without a
record keep their default schedule, and the kernels that had records only for another
target are named (`skipped`). Corrupt lines are skipped with a warning.

A tuned build must never be slower than the untuned one. The best of many noisy
measurements is biased upward (it wins partly by luck), and a kernel timed alone
sees warmer caches than inside a model; so where the records hold a measurement of
the default schedule (`"baseline": true`, written by `xweave tune`), a tuned
schedule replaces it only when measured at least `MIN_GAIN` faster than it; and
where `xweave tune`'s model check timed the tuned kernel inside the model
(`records.MODEL_CHECK` lines), only when it was `MIN_GAIN` faster there too.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path

from xdsl.dialects import func
from xdsl.utils.exceptions import ArgSpecParseError

from xweave.errors import XweaveError
from xweave.records import (
    MIN_GAIN,
    RecordWarning,
    best_per_workload,
    load_model_checks,
    read_records,
    record_target,
    same_target,
    target_info,
)
from xweave.schedules.workload import kernel_key, retarget, split_pipeline


class TuningRecordsError(XweaveError):
    """A tuning-records file that cannot be used (missing, unreadable, no records)."""


class TunedSchedules:
    """Workload key -> the best record's schedule steps."""

    def __init__(self, best: dict[str, dict], source: str = "",
                 kept_default: dict[str, tuple[float, float]] | None = None,
                 slower_in_model: dict[str, tuple[float, float]] | None = None,
                 other_targets: dict[str, str] | None = None):
        self.best = best
        self.source = source
        self.other_targets = other_targets or {}
        """Workload key -> the target of its records, for the workloads recorded only
        for other targets (not applied)."""
        self.skipped: dict[str, str] = {}
        """Kernel name -> the other target its records are for (the kernel keeps its
        default schedule)."""
        self.kept_default = kept_default or {}
        """Workload key -> (best tuned, default) GFLOP/s, for the workloads whose tuned
        schedules were not enough faster than the default to replace it."""
        self.slower_in_model = slower_in_model or {}
        """Workload key -> (tuned, default) ms inside the model, for the workloads whose
        best schedule the model check found not enough faster there."""
        self.applied: dict[str, str] = {}
        """Kernel name -> workload key, for the kernels given a tuned schedule."""
        self.default_fastest: set[str] = set()
        """The workloads whose default schedule measured fastest of all their records."""

    @classmethod
    def load(cls, path: str | os.PathLike, target=None, any_target: bool = False) -> TunedSchedules:
        """Read a records file (see `records.load_records`) for builds for `target` (a
        `Target` or its text; default: the default target); raise `TuningRecordsError`
        when it is missing, is a directory, or holds no tuning record at all."""
        p = Path(path)
        if not p.exists():
            raise TuningRecordsError(f"tuning records {path}: no such file")
        if not p.is_file():
            raise TuningRecordsError(f"tuning records {path}: not a file")
        try:
            records, skipped = read_records(p)
        except OSError as e:
            raise TuningRecordsError(f"tuning records {path}: cannot read ({e})") from None
        if not records:
            detail = f" ({len(skipped)} line(s) skipped; the first: {skipped[0].message})" \
                if skipped else " (the file is empty)"
            raise TuningRecordsError(f"tuning records {path}: no tuning record in the "
                                     f"file{detail}")
        for w in skipped[:5]:
            warnings.warn(str(w.message), RecordWarning, stacklevel=2)
        if len(skipped) > 5:
            warnings.warn(f"{path}: {len(skipped) - 5} more line(s) skipped", RecordWarning,
                          stacklevel=2)
        want = target_info(target)
        mine = [r for r in records if record_target(r) == want["target"]]
        here = [r for r in mine if same_target(r, want)]
        best = {**best_per_workload(r for r in mine if not same_target(r, want)),
                **best_per_workload(here)}
        others = [r for r in records if record_target(r) != want["target"]]
        if any_target:
            best = {**best_per_workload(others), **best}
        other_targets = {r["workload"]: record_target(r) for r in others
                         if r["workload"] not in best}
        defaults = best_per_workload(r for r in here if r.get("baseline"))
        kept = {}
        default_fastest = set()
        for key, default in defaults.items():
            record = best[key]
            tuned, base = record["result"]["gflops"], default["result"]["gflops"]
            if not record.get("baseline") and tuned < base * (1 + MIN_GAIN):
                kept[key] = (tuned, base)
            if record.get("baseline"):
                default_fastest.add(key)
            if record.get("baseline") or key in kept:
                del best[key]  # the kernel keeps (today's) default schedule
        # Timed alone, a kernel has its operands in cache; in the model they come from
        # the kernel before (or from memory): the model check has the last word.
        slower = {}
        for key, check in load_model_checks(p).items():
            record = best.get(key)
            if (record is not None and (not check.get("target")
                                        or record_target(check) == record_target(record)) and check["schedule"] == record["schedule"]
                    and check["tuned_ms"] * (1 + MIN_GAIN) > check["default_ms"]):
                slower[key] = (check["tuned_ms"], check["default_ms"])
                del best[key]
        schedules = cls(best, str(path), kept, slower, other_targets)
        schedules.default_fastest = default_fastest
        return schedules

    def steps_for(self, kernel: func.FuncOp) -> list[str] | None:
        """The tuned pipeline of `kernel` (one pass spec per step), or None."""
        key = kernel_key(kernel)
        record = self.best.get(key)
        if record is None:
            if key in self.other_targets:
                self.skipped[kernel.sym_name.data] = self.other_targets[key]
            return None
        name = kernel.sym_name.data
        try:
            steps = retarget(split_pipeline(record["schedule"]), name)
        except (Exception, ArgSpecParseError) as e:  # a pass or option this version lacks
            e = " ".join(str(e).split())
            warnings.warn(f"{self.source}:{record.get('_line', '?')}: cannot use the schedule "
                          f"of {key} ({e}); {name} keeps its default schedule",
                          RuntimeWarning, stacklevel=2)
            return None
        self.applied[name] = key
        return steps

    def why_default(self, kernel: func.FuncOp) -> str:
        """Why `kernel` has no tuned schedule, in a few words."""
        key = kernel_key(kernel)
        if key in self.default_fastest:
            return "the default schedule measured fastest"
        if key in self.kept_default:
            tuned, base = self.kept_default[key]
            return (f"its best tuned schedule is {tuned / base - 1:+.1%} against the default "
                    f"(less than {MIN_GAIN:.0%} faster)" if base else "not faster")
        if key in self.slower_in_model:
            tuned, base = self.slower_in_model[key]
            return (f"its tuned schedule was {base / tuned - 1:+.1%} faster inside the model "
                    f"(less than {MIN_GAIN:.0%})" if tuned else "not faster in the model")
        if key in self.other_targets:
            return f"its records are for {self.other_targets[key]!r}"
        return "no record"

    def report_refused(self, kernel: str, steps: list[str], applied: list[str]) -> None:
        """Warn (one line naming the workload) when steps of the tuned schedule of kernel
        `kernel` were refused: records hold only steps that applied when they were measured."""
        refused = [s for s in steps if s not in applied]
        if not refused:
            return
        record = self.best[self.applied[kernel]]
        warnings.warn(f"{self.source}:{record.get('_line', '?')}: {len(refused)} of "
                      f"{len(steps)} step(s) of the tuned schedule of {record['workload']} do "
                      f"not apply to {kernel} (first: {refused[0]}); the record "
                      "does not fit this kernel", RuntimeWarning, stacklevel=2)


_CACHE: dict[tuple, TunedSchedules] = {}


def tuned_schedules(path: str | os.PathLike, target=None, any_target: bool = False) -> TunedSchedules:
    """`TunedSchedules.load(path, target, any_target)`, cached while the file is unchanged."""
    p = Path(path)
    try:
        stat = p.stat()
        key = (str(p.resolve()), stat.st_mtime_ns, stat.st_size,
               target_info(target)["target"], any_target)
    except OSError:
        return TunedSchedules.load(path, target, any_target)  # raises the clear error
    if key not in _CACHE:
        if len(_CACHE) > 8:
            _CACHE.clear()
        _CACHE[key] = TunedSchedules.load(path, target, any_target)
    return _CACHE[key]


__all__ = ["MIN_GAIN", "TunedSchedules", "TuningRecordsError", "tuned_schedules"]
