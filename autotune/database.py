"""The schedule database: what builds measured on this machine, kept per machine.

Builds that choose schedules by measuring (`xweave.build(..., schedule="measure")`)
time a few candidates of each distinct kernel once per machine and append the
measurements here, in the tuning records' format (`xweave.records`: one schedule
language, one reader), so that a kernel is measured once per machine, whatever model it
appears in. One file per machine, named by the CPU and a hash of its features, beside
the compile cache (`$XWEAVE_CACHE_DIR/schedules/`):

    db = ScheduleDatabase.for_host()
    db.records(workloads, target)          # what was measured for these kernels
    db.add(records)                        # appended under a lock, bounded

Appends and compaction hold an exclusive lock on `<file>.lock`, so concurrent builds
never interleave lines; a reader needs no lock (an entry cut short or damaged is
skipped with a warning, never read). Past `MAX_RECORDS` lines the file is compacted to
the records that can still matter: per workload and target, the default schedule's
measurement and the fastest.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import tempfile
import warnings
from collections.abc import Iterable
from contextlib import contextmanager
from pathlib import Path

from xweave.cache import cache_dir
from xweave.records import (
    RecordWarning,
    RecordWriter,
    best_per_workload,
    read_records,
    record_target,
    target_info,
)

MAX_RECORDS = 20_000
"""Lines a database file may hold before it is compacted."""


class ScheduleDatabase:
    """The measurements of one machine (a records file), see the module docstring."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)

    @classmethod
    def for_host(cls) -> ScheduleDatabase:
        """The database of the CPU this process runs on."""
        host = target_info()
        name = f"{host['cpu']}-{host['features_hash']}.jsonl"
        return cls(cache_dir() / "schedules" / name)

    @contextmanager
    def _locked(self):
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path.with_suffix(".lock"), "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def all_records(self) -> list[dict]:
        """Every readable record (damaged lines skipped, with a warning naming them)."""
        if not self.path.exists():
            return []
        try:
            records, skipped = read_records(self.path)
        except OSError as e:
            warnings.warn(f"schedule database {self.path}: cannot read it ({e}); "
                          "measuring again", RecordWarning, stacklevel=2)
            return []
        if skipped:
            warnings.warn(f"schedule database {self.path}: {len(skipped)} damaged line(s) "
                          f"skipped (the first: {skipped[0].message})", RecordWarning,
                          stacklevel=2)
        return records

    def records(self, workloads: Iterable[str], target: str) -> list[dict]:
        """The records of `workloads` measured on this machine for `target` (resolved)."""
        wanted = set(workloads)
        host = target_info(target)
        return [r for r in self.all_records() if r.get("workload") in wanted
                and record_target(r) == host["target"]
                and (r.get("target") or {}).get("cpu") == host["cpu"]
                and (r.get("target") or {}).get("features_hash") == host["features_hash"]]

    def add(self, records: Iterable[dict]) -> None:
        """Append `records` (without their kernel text: the workload key names it)."""
        records = [{k: v for k, v in r.items() if k != "task" and not k.startswith("_")}
                   for r in records]
        if not records:
            return
        with self._locked():
            with RecordWriter(self.path, fsync=False) as writer:
                for record in records:
                    writer.write(record)
            self._compact_if_large()

    def _compact_if_large(self) -> None:
        with open(self.path, "rb") as f:
            lines = sum(1 for _ in f)
        if lines <= MAX_RECORDS:
            return
        kept: list[dict] = []
        by_target: dict[str, list[dict]] = {}
        for record in self.all_records():
            by_target.setdefault(record_target(record), []).append(record)
        for group in by_target.values():
            kept += best_per_workload(group).values()
            kept += best_per_workload(r for r in group if r.get("baseline")).values()
        unique = {json.dumps(r, sort_keys=True): r for r in kept}
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, suffix=".tmp")
        try:
            with os.fdopen(fd, "w") as f:
                for record in unique.values():
                    f.write(json.dumps(record, separators=(",", ":")) + "\n")
            os.replace(tmp, self.path)
        except BaseException:
            os.unlink(tmp)
            raise

    def digest(self, workloads: Iterable[str], target: str) -> str:
        """A digest of what the database says about `workloads` (a cache key part)."""
        lines = sorted(json.dumps([r["workload"], r.get("schedule"), r["result"]["gflops"]])
                       for r in self.records(workloads, target))
        return hashlib.sha256("\n".join(lines).encode()).hexdigest()
