"""Tuning records: one JSON object per line, appended and fsync'd per measurement.

A record (`RECORD_VERSION` 1):

```json
{"workload": "matmul_ir(K=64, M=64, N=64)",
 "task": {"template": "matmul_ir", "args": {"M": 64, "N": 64, "K": 64}},
 "target": {"cpu": "znver3", "features_hash": "3f1c0a9e5b7d2c44", "target": "llvm -mcpu=znver3"},
 "schedule": "loop-split{loop=matmul.i factor=16},...",
 "point": [3, 5, 1, 402, 0, 1],
 "config": {"tile_i": [4, 16], ...},
 "result": {"costs": [1.31e-05, ...], "gflops": 40.1, "error_no": 0, "error_msg": "",
            "build_s": 0.061, "run_s": 0.12, "number": 1531},
 "tuner": "lgbm", "trial": 17, "timestamp": 1763821234.5, "version": "xweave 0.1.0"}
```

`target` names the CPU the record was timed on (LLVM's name and a hash of its feature
string) and the resolved target its code was compiled for (`xweave.target`: the
task's module's `xweave.target`). Records of one target are not applied to another
(`same_target`, `schedules.tuned`).

`RecordWriter` appends one line per measurement, flushes and fsyncs it, so a killed
tuning run (even `kill -9`) loses no completed record; if the file ends in a partial
line (the process died mid-write), the next writer starts a new line first so the
damage stays confined to that one line. `load_records` skips unparsable or incomplete
lines, lines with a non-finite number (NaN, Infinity) and records whose workload key is
not the one their task describes (a garbled line), each with one `RecordWarning`
naming the line number; `RecordWriter` refuses to write a non-finite number.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import platform
import time
import warnings
from collections.abc import Callable, Iterable, Sequence
from importlib.metadata import version
from pathlib import Path
from typing import Any

from xweave.errors import XweaveError
from xweave.target import CPUS, TargetError, _host_cpu, as_target

RECORD_VERSION = 1

MIN_GAIN = 0.03
"""How much faster (relative) than the measured default schedule a tuned record must be
to replace it."""


class RecordWarning(UserWarning):
    """A line of a records file was skipped."""


class TuningRecordsError(XweaveError):
    """A tuning-records file that cannot be used (missing, unreadable, no records)."""


def check_records_file(path: str | os.PathLike) -> Path:
    """`path`, if it names a file; else a `TuningRecordsError` saying what it is."""
    p = Path(path)
    if not p.exists():
        raise TuningRecordsError(f"tuning records {path}: no such file")
    if not p.is_file():
        raise TuningRecordsError(f"tuning records {path}: not a file")
    return p


@functools.cache
def xweave_version() -> str:
    try:
        return f"xweave {version('xweave')}"
    except Exception:
        return "xweave unknown"


def target_info(target: Any = None) -> dict[str, str]:
    """The host CPU (LLVM's name), a hash of its feature string, and the resolved
    `target` code is compiled for (a `Target` or its text; default: the default target)."""
    return {**_host_info(), "target": _resolved(str(target) if target is not None else None)}


@functools.cache
def _host_info() -> dict[str, str]:
    try:
        cpu, _, features = _host_cpu()
    except Exception:
        cpu, features = platform.processor() or platform.machine(), ""
    return {"cpu": cpu, "features_hash": hashlib.sha256(features.encode()).hexdigest()[:16]}


@functools.cache
def _resolved(text: str | None) -> str:
    return str(as_target(text).resolve())


def record_target(record: dict) -> str:
    """The resolved target a record's code was compiled for. Records written before
    targets were recorded were compiled for the CPU they were timed on."""
    target = record.get("target") or {}
    if target.get("target"):
        return target["target"]
    cpu = target.get("cpu", "")
    try:
        return _resolved(f"llvm -mcpu={cpu}") if cpu in CPUS else f"llvm -mcpu={cpu}"
    except TargetError:
        return f"llvm -mcpu={cpu}"


def _jsonable(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (bool, int, float, str)) or value is None:
        return value
    if hasattr(value, "item"):  # numpy scalars
        return value.item()
    return str(value)


def _finite(x: float) -> float:
    x = float(x)
    return x if x == x and abs(x) != float("inf") else 0.0


def make_record(task: Any, point: Sequence[int], result: Any, tuner: str = "",
                trial: int = 0) -> dict:
    """The record of one measurement (`result`: a `measure.MeasureResult`)."""
    try:
        schedule = getattr(result, "schedule", None) or task.schedule(tuple(point))
    except Exception as e:  # the record is still useful without it
        schedule = f"<schedule failed: {e}>"
    try:
        config = _jsonable(task.space.config(tuple(point)))
    except Exception:
        config = {}
    spec = task.spec() if hasattr(task, "spec") else None
    return {
        "workload": task.workload_key,
        "task": _jsonable(spec),
        "target": task_target(task, getattr(result, "target", None)),  # timed where, for what
        "schedule": schedule,
        "point": [int(p) for p in point],
        "config": config,
        "result": {
            "costs": [_finite(c) for c in result.costs],
            "gflops": _finite(result.gflops),
            "error_no": int(result.error_no),
            "error_msg": str(result.error_msg)[:4000],
            "build_s": round(float(result.build_time), 6),
            "run_s": round(float(result.run_time), 6),
            "number": int(getattr(result, "number", 0)),
        },
        "tuner": tuner,
        "trial": int(trial),
        "timestamp": float(getattr(result, "timestamp", 0.0) or time.time()),
        "version": xweave_version(),
        "record_version": RECORD_VERSION,
    }


class RecordWriter:
    """Appends records to a file, one line each, durable before `write` returns."""

    def __init__(self, path: str | os.PathLike, fsync: bool = True):
        self.path = Path(path)
        self.fsync = fsync
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._file = open(self.path, "a+b")
        self._file.seek(0, os.SEEK_END)
        if self._file.tell() > 0:
            self._file.seek(-1, os.SEEK_END)
            if self._file.read(1) != b"\n":  # a line cut short by a crash
                self._file.write(b"\n")
                self._sync()

    def write(self, record: dict) -> None:
        try:
            line = json.dumps(record, separators=(",", ":"), allow_nan=False) + "\n"
        except ValueError:
            raise ValueError(f"{self.path}: refusing to write a record of "
                             f"{record.get('workload', '?')!r} with a non-finite number "
                             f"(NaN or infinity)") from None
        self._file.write(line.encode())
        self._sync()

    def _sync(self) -> None:
        self._file.flush()
        if self.fsync:
            os.fsync(self._file.fileno())

    def close(self) -> None:
        if not self._file.closed:
            self._file.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _valid(record: Any) -> bool:
    return (
        isinstance(record, dict)
        and isinstance(record.get("workload"), str)
        and isinstance(record.get("point"), list)
        and all(isinstance(p, int) for p in record["point"])
        and isinstance(record.get("result"), dict)
        and isinstance(record["result"].get("error_no"), int)
        and isinstance(record["result"].get("gflops"), (int, float))
        and isinstance(record.get("schedule", ""), str)
        and isinstance(record.get("target", {}), dict)
    )


WORKLOAD_KEYS: dict[str, Callable[[dict], str]] = {"schedule": lambda args: args["key"]}
"""Task template -> the workload key of a task's arguments: how `load_records` tells a
garbled record. A schedule task's key is one of its arguments; the tuner's templates
add theirs when registered (`autotune.task.register_template`)."""


def _describes_its_workload(record: dict) -> bool:
    """Whether the record's task (when it has one) is the workload it is filed under:
    a line garbled into another valid JSON object would make a workload of its own."""
    spec = record.get("task")
    if spec is None:
        return True
    if not (isinstance(spec, dict) and isinstance(spec.get("template"), str)
            and isinstance(spec.get("args", {}), dict)):
        return False
    key_of = WORKLOAD_KEYS.get(spec["template"])
    if key_of is None:  # a template not available here: nothing to compare with
        return True
    try:
        return key_of(spec.get("args", {})) == record["workload"]
    except (KeyError, TypeError, ValueError):
        return False


def _refuse_non_finite(token: str) -> float:
    raise ValueError(f"a non-finite number ({token})")


def _finite_float(text: str) -> float:
    value = float(text)
    if value != value or abs(value) == float("inf"):
        raise ValueError(f"a non-finite number ({text})")
    return value


def _parse_line(text: str) -> Any:
    """A JSON value without NaN or infinities (Python's json reads them)."""
    return json.loads(text, parse_constant=_refuse_non_finite, parse_float=_finite_float)


MODEL_CHECK = "model_check"
"""The `kind` of a line that is not a measurement but a verdict of `xweave tune`'s
model check: a tuned kernel's time inside the model against its default schedule's
(see `tune_model.check_in_model`). `load_records` leaves them out."""


def load_records(path: str | os.PathLike) -> list[dict]:
    """Every valid record of a file (a missing file has none); bad lines are skipped
    with a `RecordWarning` naming their line number; model checks are left out
    (`load_model_checks`)."""
    path = Path(path)
    if not path.exists():
        return []
    records = []
    with open(path, "rb") as f:
        for number, raw in enumerate(f, start=1):
            text = raw.decode("utf-8", errors="replace").strip()
            if not text:
                continue
            try:
                record = _parse_line(text)
            except json.JSONDecodeError as e:
                warnings.warn(f"{path}:{number}: skipping a corrupt or truncated record "
                              f"({e.msg})", RecordWarning, stacklevel=2)
                continue
            except ValueError as e:
                warnings.warn(f"{path}:{number}: skipping a record with {e}", RecordWarning,
                              stacklevel=2)
                continue
            if isinstance(record, dict) and record.get("kind") == MODEL_CHECK:
                continue
            if not _valid(record):
                warnings.warn(f"{path}:{number}: skipping a line that is not a tuning record",
                              RecordWarning, stacklevel=2)
                continue
            if not _describes_its_workload(record):
                warnings.warn(f"{path}:{number}: skipping a garbled record: its task does not "
                              f"describe its workload {record['workload']!r}", RecordWarning,
                              stacklevel=2)
                continue
            record["_line"] = number
            records.append(record)
    return records


def read_records(path: str | os.PathLike) -> tuple[list[dict], list[warnings.WarningMessage]]:
    """The records of a file, and the `RecordWarning`s about the lines `load_records`
    skipped, caught so that the caller can judge the file (other warnings pass on);
    raises OSError when the file cannot be read."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", RecordWarning)
        records = load_records(path)
    skipped = [w for w in caught if issubclass(w.category, RecordWarning)]
    for w in caught:
        if not issubclass(w.category, RecordWarning):
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return records, skipped


def load_model_checks(path: str | os.PathLike) -> dict[str, dict]:
    """Workload key -> its latest model check in the file (bad lines are ignored:
    `load_records` warns about them)."""
    checks: dict[str, dict] = {}
    path = Path(path)
    if not path.exists():
        return checks
    with open(path, "rb") as f:
        for raw in f:
            try:
                record = _parse_line(raw.decode("utf-8", errors="replace"))
            except ValueError:  # (JSONDecodeError is one)
                continue
            if (isinstance(record, dict) and record.get("kind") == MODEL_CHECK
                    and isinstance(record.get("workload"), str)
                    and isinstance(record.get("schedule"), str)
                    and all(isinstance(record.get(k), (int, float))
                            for k in ("default_ms", "tuned_ms"))):
                checks[record["workload"]] = record
    return checks


def load_many(sources: str | os.PathLike | Iterable[Any]) -> list[dict]:
    """Records from a path, a list of paths, or records already loaded."""
    if isinstance(sources, (str, os.PathLike)):
        return load_records(sources)
    out: list[dict] = []
    for s in sources:
        if isinstance(s, dict):
            out.append(s)
        else:
            out.extend(load_records(s))
    return out


def is_ok(record: dict) -> bool:
    return record["result"]["error_no"] == 0 and record["result"]["gflops"] > 0


def best_per_workload(records: Iterable[dict]) -> dict[str, dict]:
    """The fastest successful record of each workload (by GFLOP/s)."""
    best: dict[str, dict] = {}
    for r in records:
        if not is_ok(r):
            continue
        key = r["workload"]
        if key not in best or r["result"]["gflops"] > best[key]["result"]["gflops"]:
            best[key] = r
    return best


def pick_best(in_path: str | os.PathLike, out_path: str | os.PathLike) -> dict[str, dict]:
    """Write the best record of each workload of `in_path` to `out_path` (AutoTVM's
    `record.pick_best`)."""
    best = best_per_workload(load_records(in_path))
    with RecordWriter(out_path) as w:
        for r in best.values():
            w.write({k: v for k, v in r.items() if not k.startswith("_")})
    return best


def task_target(task: Any, timed: dict | None = None) -> dict[str, str]:
    """The `target` a record of `task` has when timed on `timed` (a `target_info`;
    default: this CPU): the task's compilation target (its module's `xweave.target`)."""
    return {**(timed or target_info()),
            "target": target_info(getattr(task, "target", None))["target"]}


def same_target(record: dict, target: dict | None = None) -> bool:
    """Whether a record was measured on the CPU of `target` (same name and feature
    hash) for the same compilation target (default: `target_info()`, this CPU and the
    default target)."""
    target = target or target_info()
    timed = record.get("target") or {}
    return (timed.get("cpu") == target.get("cpu")
            and timed.get("features_hash") == target.get("features_hash")
            and record_target(record) == (target.get("target") or target_info()["target"]))
