"""Schedules chosen per machine (`xweave.build(..., schedule=...)`, autotune/select.py):
a fake timer's fastest candidate is kept in the machine's database and read back, a
damaged or concurrently written database never breaks a build, the model mode is
deterministic, and the shipped ranking model ranks recorded candidates in order."""

import json
import math
import multiprocessing
import warnings

import numpy as np
import pytest
from helpers import onnx_model, run_cli
from onnx import helper

import xweave
from xweave.autotune import select
from xweave.autotune.database import ScheduleDatabase
from xweave.autotune.measure import BuildResult, MeasureResult
from xweave.autotune.pretrained import rows, shipped_ranker, training_records
from xweave.autotune.cost_model import spearman
from xweave.errors import XweaveError
from xweave.records import RecordWarning

RNG = np.random.default_rng(0)


class FakeTimer:
    """Builds nothing; 'measures' a candidate as faster the more rows its register block
    has (the default's block is never the largest): a ranking with a known answer."""

    def __init__(self):
        self.timed = 0

    def build(self, task, points):
        return [BuildResult(tuple(p), None) for p in points]

    def run(self, task, builds):
        results = []
        for b in builds:
            self.timed += 1
            config = task.config(b.point)
            gflops = float(config.get("tile_rows", 1) * config.get("tile_rows_outer", 1))
            results.append(MeasureResult(b.point, [1.0 / gflops], gflops))
        return results

    def close(self):
        pass


@pytest.fixture
def fake_timer(monkeypatch):
    timer = FakeTimer()
    monkeypatch.setattr(select, "measuring_tools", lambda: (timer, timer))
    return timer


def _conv_model():
    """A 3x3 convolution, 16 -> 32 channels on 14x14: a register-blocked kernel whose
    space holds larger row blocks than the default's."""
    w = np.random.default_rng(1).standard_normal((32, 16, 3, 3)).astype(np.float32)
    nodes = [helper.make_node("Conv", ["x", "w"], ["y"], name="conv", pads=[1, 1, 1, 1])]
    return onnx_model(nodes, [("x", [1, 16, 14, 14])], ["y"], {"w": w})


def _x():
    return RNG.standard_normal((1, 16, 14, 14)).astype(np.float32)


def test_measure_mode_keeps_the_fastest_and_reads_it_back(fake_timer, tmp_path):
    model = _conv_model()
    default = xweave.build(model, cache=False)
    measured = xweave.build(model, schedule="measure", cache=False, dump_ir=tmp_path / "ir")
    assert fake_timer.timed >= select.CANDIDATES  # the default and the proposals
    db = ScheduleDatabase.for_host()
    records = db.all_records()
    assert sum(1 for r in records if r.get("baseline")) >= 1
    (chosen,) = [json.loads(line) for line in (tmp_path / "ir" / "schedules.jsonl").open()]
    best = max((r for r in records if r["workload"] == chosen["workload"]),
               key=lambda r: r["result"]["gflops"])
    assert chosen["config"] == best["config"] and not best.get("baseline")
    scheduled = (tmp_path / "ir" / "07-scheduled.mlir").read_text()
    assert "schedules.jsonl" in scheduled.splitlines()[1]  # replays with xweave-opt
    x = _x()
    np.testing.assert_allclose(measured.run(x=x)[0], default.run(x=x)[0], rtol=1e-4, atol=1e-4)

    # The next build of the kernel, in any model, measures nothing and chooses the same.
    timed = fake_timer.timed
    again = xweave.build(model, schedule="measure", cache=False, dump_ir=tmp_path / "again")
    assert fake_timer.timed == timed
    assert (tmp_path / "again" / "schedules.jsonl").read_text() == \
        (tmp_path / "ir" / "schedules.jsonl").read_text()
    np.testing.assert_array_equal(again.run(x=x)[0], measured.run(x=x)[0])


def test_a_damaged_database_is_discarded_with_a_warning(fake_timer):
    db = ScheduleDatabase.for_host()
    db.path.parent.mkdir(parents=True, exist_ok=True)
    db.path.write_text('{"workload": "cut short", "res\n\x00\x01 not json\n')
    with pytest.warns(RecordWarning, match="damaged line"):
        module = xweave.build(_conv_model(), schedule="measure", cache=False)
    assert module.run(x=_x())[0].shape == (1, 32, 14, 14)
    assert fake_timer.timed >= select.CANDIDATES
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RecordWarning)
        assert any(r.get("baseline") for r in db.all_records())


class SlowFakeTimer(FakeTimer):
    """FakeTimer taking what real candidates take on a fake clock: 1 s to build each
    (one compile job), 0.1 s to time it."""

    def __init__(self):
        super().__init__()
        self.clock = 0.0
        self.tasks = []

    def build(self, task, points):
        self.clock += 1.0 * len(points)
        return [BuildResult(tuple(p), None, build_time=1.0) for p in points]

    def run(self, task, builds):
        self.clock += 0.1 * len(builds)
        self.tasks.append(task.workload_key)
        return [MeasureResult(r.point, r.costs, r.gflops, build_time=1.0, run_time=0.1)
                for r in super().run(task, builds)]


def test_measuring_takes_the_heaviest_kernels_first_within_its_budget(monkeypatch):
    """With candidates that cost what real ones do, a build measures the kernels with
    the most work first and stops at its budget (about its own compile time); the next
    build measures the next ones, and builds of a kernel already measured time nothing."""
    from xweave.autotune.kernel_tasks import extract_tasks

    timer = SlowFakeTimer()
    monkeypatch.setattr(select, "measuring_tools", lambda: (timer, timer))
    monkeypatch.setattr(select, "compile_jobs", lambda: 1)
    monkeypatch.setattr(select, "_clock", lambda: timer.clock)
    rng = np.random.default_rng(2)
    channels = [8, 16, 32, 8, 24]
    nodes, inits = [], {}
    for i, (a, b) in enumerate(zip(channels, channels[1:])):
        inits[f"w{i}"] = rng.standard_normal((b, a, 3, 3)).astype(np.float32)
        nodes.append(helper.make_node("Conv", [f"h{i}" if i else "x", f"w{i}"], [f"h{i + 1}"],
                                      pads=[1, 1, 1, 1]))
    model = onnx_model(nodes, [("x", [1, 8, 8, 8])], [f"h{len(nodes)}"], inits)
    tasks = extract_tasks(model)
    heaviest = [t.workload_key for t in sorted(tasks, key=lambda t: -t.flops * t.weight)]
    # each measured kernel costs 4 builds of 1 s + 4 runs of 0.1 s; the budget is one
    # build per kernel of the model
    per_build = math.ceil(len(tasks) / (select.CANDIDATES * (1.0 + 0.1)))
    xweave.build(model, schedule="measure", cache=False)
    assert timer.tasks == heaviest[:per_build] and per_build < len(tasks)
    xweave.build(model, schedule="measure", cache=False)
    assert timer.tasks == heaviest[:2 * per_build]


class SpikyFakeTimer(FakeTimer):
    """FakeTimer whose candidates with the most rows each had one run that waited for
    the core (10x its time): slower on average, fastest run for run."""

    def run(self, task, builds):
        results = super().run(task, builds)
        top = max(r.gflops for r in results)
        out = []
        for r in results:
            costs = [r.costs[0] * 0.5, r.costs[0] * 0.5, r.costs[0] * 10] if r.gflops == top \
                else [r.costs[0]] * 3
            out.append(MeasureResult(r.point, costs, task.flops / (sum(costs) / 3) / 1e9))
        return out


def test_measure_mode_compares_candidates_by_their_fastest_run(monkeypatch, tmp_path):
    timer = SpikyFakeTimer()
    monkeypatch.setattr(select, "measuring_tools", lambda: (timer, timer))
    xweave.build(_conv_model(), schedule="measure", cache=False, dump_ir=tmp_path / "ir")
    (chosen,) = [json.loads(line) for line in (tmp_path / "ir" / "schedules.jsonl").open()]
    records = [r for r in ScheduleDatabase.for_host().all_records()
               if r["workload"] == chosen["workload"]]
    assert chosen["result"]["costs"] == min((r["result"]["costs"] for r in records), key=min)
    assert chosen["result"]["gflops"] < max(r["result"]["gflops"] for r in records)


def _append(path: str, worker: int) -> None:
    db = ScheduleDatabase(path)
    for i in range(50):
        db.add([{"workload": f"w{worker}-{i}", "schedule": "x" * 3000, "config": {},
                 "target": {"cpu": "test"}, "point": [0],
                 "result": {"costs": [1.0], "gflops": 1.0, "error_no": 0, "error_msg": ""}}])


def test_concurrent_writers_never_interleave_lines(tmp_path):
    path = str(tmp_path / "db.jsonl")
    context = multiprocessing.get_context("fork")
    workers = [context.Process(target=_append, args=(path, w)) for w in range(4)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    with warnings.catch_warnings():
        warnings.simplefilter("error", RecordWarning)
        records = ScheduleDatabase(path).all_records()
    assert len(records) == 200 and len({r["workload"] for r in records}) == 200


def test_model_mode_is_deterministic(tmp_path):
    model = _conv_model()
    first = xweave.build(model, schedule="model", cache=False)
    second = xweave.build(model, schedule="model", cache=False)
    assert first.llvm_ir == second.llvm_ir
    x = _x()
    np.testing.assert_allclose(first.run(x=x)[0],
                               xweave.build(model, cache=False).run(x=x)[0], rtol=1e-4, atol=1e-4)


def test_the_shipped_ranker_orders_recorded_candidates():
    """On the training records of one kernel, the shipped model's ranking follows the
    measured speeds."""
    records = training_records()
    workloads: dict[str, list] = {}
    for r in records:
        workloads.setdefault(r["workload"], []).append(r)
    name, group = max(workloads.items(), key=lambda kv: len(kv[1]))
    X, gflops, _ = rows(group)
    assert len(X) >= 8
    assert spearman(shipped_ranker().predict(X), gflops) > 0.5, name


def test_modes_on_the_command_line(tmp_path):
    code, _, err = run_cli("compile", "x.onnx", "--schedule", "fastest", "-o", tmp_path / "m")
    assert code != 0 and "invalid choice: 'fastest'" in err
    with pytest.raises(XweaveError, match="unknown schedule mode 'fastest'"):
        xweave.build(_conv_model(), schedule="fastest")
    with pytest.raises(XweaveError, match="give one of them"):
        xweave.build(_conv_model(), schedule="model", tuning_records=tmp_path / "r.jsonl")


def test_a_script_without_a_main_guard_measures(tmp_path):
    """Measuring workers are spawned processes, which re-run the parent's script unless
    told otherwise: a script calling `xweave.build(schedule="measure")` at its top
    level built again in every worker and measured nothing (tracebacks, a 3x slower
    build). Its candidates are timed and kept now."""
    import os
    import subprocess
    import sys

    onnx_path = tmp_path / "conv.onnx"
    onnx_path.write_bytes(_conv_model().SerializeToString())
    script = tmp_path / "script.py"
    script.write_text("import xweave\n"
                      f"xweave.build({str(onnx_path)!r}, schedule='measure', cache=False)\n"
                      "print('built')\n")
    env = dict(os.environ, XWEAVE_CACHE_DIR=str(tmp_path / "cache"))
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          env=env, timeout=600)
    assert done.returncode == 0 and done.stdout.strip() == "built", done.stderr[-2000:]
    assert "Traceback" not in done.stderr, done.stderr[-2000:]
    (db,) = (tmp_path / "cache" / "schedules").glob("*.jsonl")
    records = [json.loads(line) for line in db.read_text().splitlines()]
    assert records and all(r["result"]["error_no"] == 0 for r in records)
