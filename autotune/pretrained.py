"""The schedule ranking model shipped with xweave, and how it is trained.

The model (`data/schedule_ranker.txt`, LightGBM's text) ranks a kernel's schedule
configurations from `config_features`, which include the machine model: it is trained
on the tuning records of every CPU the project has measured, kept in the repository as
data (`data/records/<cpu>.jsonl.gz`, each record naming its CPU), so that one model
serves all of them and others by their figures. A new machine adds its records:

    xweave tune MODEL.onnx --tuner random --trials 24 -o records.jsonl   # on that machine
    python -m xweave.autotune.pretrained --add records.jsonl            # keep them, retrain

`shipped_ranker()` loads the model (once per process).
"""

from __future__ import annotations

import argparse
import functools
import gzip
import json
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

from xweave.autotune.config_features import config_features
from xweave.autotune.cost_model import RankingCostModel
from xweave.autotune.kernel_tasks import ScheduleTask
from xweave.autotune.templates import task_from_spec
from xweave.records import is_ok, load_records

DATA = Path(__file__).parent / "data"
RECORDS = DATA / "records"
"""The training records, one gzip'd JSON-lines file per CPU."""
MODEL = DATA / "schedule_ranker.txt"

NUM_BOOST_ROUND = 200


@functools.cache
def shipped_ranker() -> RankingCostModel:
    """The ranking model shipped with xweave."""
    return RankingCostModel.load(MODEL.read_text())


def training_records(folder: Path = RECORDS) -> list[dict]:
    """Every record of the shipped training data."""
    records: list[dict] = []
    for path in sorted(folder.glob("*.jsonl.gz")):
        with gzip.open(path, "rt") as f:
            records += [json.loads(line) for line in f if line.strip()]
    return records


def rows(records: Iterable[dict]) -> tuple[np.ndarray, list[float], list[str]]:
    """Features, GFLOP/s and query group (workload and CPU) of every schedule record
    whose kernel is known (the first record of a workload carries its kernel, `task`)."""
    records = list(records)
    tasks: dict[str, ScheduleTask] = {}
    for r in records:
        spec = r.get("task")
        if r["workload"] not in tasks and spec and spec.get("template") == "schedule":
            tasks[r["workload"]] = task_from_spec(spec)
    X, gflops, groups = [], [], []
    for r in records:
        task = tasks.get(r["workload"])
        if task is None or not r.get("config"):
            continue
        X.append(config_features(task.info, task.schedule_template.name, r["config"]))
        gflops.append(r["result"]["gflops"] if is_ok(r) else 0.0)
        groups.append(f"{r['workload']}@{(r.get('target') or {}).get('cpu', '?')}")
    return np.array(X), gflops, groups


def train(records: Iterable[dict], seed: int = 0) -> RankingCostModel:
    """A ranking model trained on `records`."""
    X, gflops, groups = rows(records)
    return RankingCostModel(num_boost_round=NUM_BOOST_ROUND, seed=seed).fit(X, gflops, groups)


def slim(records: Sequence[dict]) -> list[dict]:
    """`records` with the kernel (`task`) kept on the first record of each workload only,
    and what training does not read dropped."""
    seen: set[str] = set()
    out = []
    for r in records:
        keep = {k: r[k] for k in ("workload", "target", "config", "result", "schedule",
                                  "tuner", "baseline") if k in r}
        if r["workload"] not in seen and r.get("task"):
            keep["task"] = r["task"]
            seen.add(r["workload"])
        out.append(keep)
    return out


def add(paths: Sequence[str], folder: Path = RECORDS) -> None:
    """Add the records of `paths` to the training data (one file per CPU)."""
    by_cpu: dict[str, list[dict]] = {}
    for path in paths:
        for r in load_records(path):
            by_cpu.setdefault((r.get("target") or {}).get("cpu", "unknown"), []).append(r)
    folder.mkdir(parents=True, exist_ok=True)
    for cpu, records in by_cpu.items():
        path = folder / f"{cpu}.jsonl.gz"
        old = []
        if path.exists():
            with gzip.open(path, "rt") as f:
                old = [json.loads(line) for line in f if line.strip()]
        with gzip.open(path, "wt") as f:
            for r in slim(old + records):
                f.write(json.dumps(r, separators=(",", ":")) + "\n")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Train the shipped schedule ranking model "
                                     "on the training records (data/records/)")
    parser.add_argument("--add", nargs="*", default=[], metavar="RECORDS",
                        help="tuning-records files to add to the training data first")
    args = parser.parse_args(argv)
    if args.add:
        add(args.add)
    records = training_records()
    model = train(records)
    MODEL.write_text(model.save())
    print(f"trained on {len(records)} records; wrote {MODEL}")


if __name__ == "__main__":
    main()
