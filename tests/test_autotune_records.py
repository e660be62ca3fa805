"""Tuning records: durable appends, corrupt lines skipped, resume, kill -9 safety."""

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from xweave.autotune import (
    RandomTuner,
    RecordWarning,
    RecordWriter,
    best_per_workload,
    load_records,
    make_task,
    pick_best,
    tune,
)
from xweave.autotune.measure import MeasureResult
from xweave.records import make_record, target_info


def record(task, point, gflops, error_no=0):
    res = MeasureResult(tuple(point), [1e-3] if gflops else [], gflops, error_no,
                        "" if not error_no else "boom", 0.01, 0.02, 1.0)
    return make_record(task, point, res, tuner="test", trial=1)


def test_record_fields_and_best_per_workload(tmp_path):
    a = make_task("synthetic_smooth", seed=0)
    b = make_task("synthetic_smooth", seed=1)
    path = tmp_path / "log.jsonl"
    with RecordWriter(path) as w:
        w.write(record(a, (1, 2, 3, 4), 10.0))
        w.write(record(a, (2, 2, 3, 4), 30.0))
        w.write(record(a, (3, 2, 3, 4), 0.0, error_no=4))
        w.write(record(b, (1, 1, 1, 1), 5.0))
    recs = load_records(path)
    assert len(recs) == 4
    r = recs[0]
    assert r["workload"] == a.workload_key and r["task"] == a.spec()
    assert r["target"] == target_info() and set(r["target"]) == {"cpu", "features_hash", "target"}
    assert r["schedule"] == a.schedule((1, 2, 3, 4)) and r["point"] == [1, 2, 3, 4]
    assert r["config"] == {"x0": 1, "x1": 2, "x2": 3, "x3": 4}
    assert r["result"]["costs"] == [1e-3] and r["result"]["gflops"] == 10.0
    assert r["version"].startswith("xweave ") and r["timestamp"] == 1.0
    assert recs[2]["result"]["error_no"] == 4 and recs[2]["result"]["error_msg"] == "boom"
    best = best_per_workload(recs)
    assert best[a.workload_key]["point"] == [2, 2, 3, 4]
    assert best[b.workload_key]["result"]["gflops"] == 5.0
    out = tmp_path / "best.jsonl"
    pick_best(path, out)
    assert len(load_records(out)) == 2


def test_corrupt_and_truncated_lines_are_skipped_with_line_numbers(tmp_path):
    task = make_task("synthetic_smooth", seed=0)
    path = tmp_path / "log.jsonl"
    good = json.dumps(record(task, (0, 0, 0, 0), 1.0))
    path.write_text(good + "\n" + "{not json at all\n" + good + "\n"
                    + '{"workload": "x"}\n' + good[: len(good) // 2])  # cut mid-line
    with pytest.warns(RecordWarning) as caught:
        recs = load_records(path)
    assert len(recs) == 2
    messages = [str(w.message) for w in caught]
    assert any(":2:" in m for m in messages) and any(":4:" in m for m in messages)
    assert any(":5:" in m and "truncated" in m for m in messages)
    # a new writer starts on a fresh line: the next record is intact
    with RecordWriter(path) as w:
        w.write(record(task, (1, 1, 1, 1), 2.0))
    with pytest.warns(RecordWarning):
        recs = load_records(path)
    assert [r["point"] for r in recs][-1] == [1, 1, 1, 1] and len(recs) == 3


def test_resume_never_remeasures(tmp_path):
    task = make_task("synthetic_smooth", seed=3)
    path = tmp_path / "log.jsonl"
    first = tune(task, tuner="random", trials=30, seed=0, records_path=path, progress=False)
    assert first.trials == 30 and first.resumed == 0
    second = tune(task, tuner="lgbm", trials=50, seed=1, records_path=path, progress=False,
                  tuner_options={"features": "knob"})
    assert second.resumed == 30 and second.trials == 20
    points = [tuple(r["point"]) for r in load_records(path)]
    assert len(points) == 50 and len(set(points)) == 50
    assert second.best_gflops >= first.best_gflops
    done = tune(task, tuner="random", trials=50, records_path=path, progress=False)
    assert done.trials == 0 and done.resumed == 50
    assert done.best_gflops == second.best_gflops and len(done.curve) == 50


def test_resuming_a_finished_run_fits_no_model(tmp_path):
    """A run whose records already hold the budget returns without training the
    tuner (an lgbm tuner would featurize every recorded point first)."""
    task = make_task("synthetic_smooth", seed=3)
    path = tmp_path / "log.jsonl"
    tune(task, tuner="random", trials=20, seed=0, records_path=path, progress=False)

    class NoModel(RandomTuner):
        def update(self, points, results):
            raise AssertionError("a finished run updated its tuner")

    done = tune(task, tuner=NoModel(task), trials=20, records_path=path, progress=False)
    assert done.trials == 0 and done.resumed == 20 and done.best_gflops > 0


KILL_SCRIPT = textwrap.dedent("""
    import sys
    from xweave.autotune import make_task, tune, SimulatedRunner

    def report(result, record):
        print("done", record["trial"], *record["point"], flush=True)

    if __name__ == "__main__":
        task = make_task("synthetic_smooth", seed=4)
        tune(task, tuner="random", trials=100000, seed=0, records_path=sys.argv[1],
             runner=SimulatedRunner(delay=0.002), batch_size=4, progress=False,
             callbacks=[report])
""")


def test_kill_9_loses_no_completed_record(tmp_path):
    path = tmp_path / "log.jsonl"
    script = tmp_path / "tune_forever.py"
    script.write_text(KILL_SCRIPT)
    proc = subprocess.Popen([sys.executable, str(script), str(path)], stdout=subprocess.PIPE,
                            text=True)
    reported = []
    deadline = time.monotonic() + 60
    try:
        for line in proc.stdout:
            reported.append(tuple(int(x) for x in line.split()[2:]))
            if len(reported) >= 40 or time.monotonic() > deadline:
                break
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
        proc.stdout.close()
    assert proc.returncode == -signal.SIGKILL
    assert len(reported) >= 40
    with_warnings = load_records(path)  # a line cut by the kill would only warn
    recorded = [tuple(r["point"]) for r in with_warnings]
    assert set(reported) <= set(recorded)  # every reported record reached the disk
    assert len(recorded) == len(set(recorded))
    task = make_task("synthetic_smooth", seed=4)
    total = len(recorded) + 25
    resumed = tune(task, tuner="random", trials=total, seed=1, records_path=path,
                   progress=False)
    assert resumed.resumed == len(recorded) and resumed.trials == 25
    final = [tuple(r["point"]) for r in load_records(path)]
    assert len(final) == total and len(set(final)) == total
