"""`xweave tune` end to end: every tuner, resuming after kill -9, curves, compiling with
the records, and bad files or options."""

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest

import xweave as xweave_api
from xweave.autotune import load_records
from xweave.schedules.tuned import TunedSchedules

from helpers import small_conv_model, wait_for_lines

BIN = Path(sys.executable).parent
TUNERS = ("lgbm", "ga", "random", "grid")


def xweave(*args, **kwargs):
    return subprocess.run([str(BIN / "xweave"), *map(str, args)], capture_output=True,
                          text=True, timeout=600, **kwargs)


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    path = tmp_path_factory.mktemp("tune") / "conv.onnx"
    onnx.save(small_conv_model(), path)
    return path


@pytest.fixture(scope="module")
def tuned(model, tmp_path_factory):
    """Records of `xweave tune --trials 3` with each tuner (run side by side)."""
    out = tmp_path_factory.mktemp("records")
    procs = {
        t: subprocess.Popen([str(BIN / "xweave"), "tune", str(model), "-o", str(out / f"{t}.jsonl"),
                             "--trials", "3", "--tuner", t, "--seed", "1", "--builders", "0",
                             "--threads", "1"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for t in TUNERS
    }
    outputs = {t: p.communicate(timeout=600) for t, p in procs.items()}
    return out, {t: (procs[t].returncode, *outputs[t]) for t in TUNERS}


@pytest.mark.parametrize("tuner", TUNERS)
def test_every_tuner_tunes_through_the_cli(tuned, tuner):
    out, runs = tuned
    code, stdout, stderr = runs[tuner]
    assert code == 0, stderr
    records = load_records(out / f"{tuner}.jsonl")
    assert len(records) == 3 and {r["tuner"] for r in records} == {tuner}
    assert len({tuple(r["point"]) for r in records}) == 3
    assert all(r["result"]["error_no"] == 0 and r["result"]["gflops"] > 0 for r in records), \
        [r["result"]["error_msg"] for r in records]
    key = records[0]["workload"]
    assert key.startswith("conv2d(1x4x8x8xf32, 8x4x3x3xf32 -> 1x8x8x8xf32)#")
    # Each task's result on stderr (no progress bar: stderr is not a terminal), then
    # a summary per kernel on stdout.
    assert "3 new + 0 resumed trials, 0 error(s)" in stderr and "GFLOP/s" in stderr
    assert "default schedule" in stderr and "%|" not in stderr
    assert key in stdout and "--tuning-records" in stdout


def test_plot_and_compile_with_records(tuned, model, tmp_path):
    out, _ = tuned
    png = tmp_path / "curves.png"
    r = xweave("tune-plot", *(out / f"{t}.jsonl" for t in TUNERS), "-o", png)
    assert r.returncode == 0, r.stderr
    assert png.stat().st_size > 1000

    (workload,) = {r["workload"] for r in load_records(out / "random.jsonl")}
    r = xweave("compile", model, "--tuning-records", out / "random.jsonl", "-o",
               tmp_path / "tuned.so", "--dump-ir", tmp_path / "ir", "--elide-resources-larger-than", 0)
    assert r.returncode == 0, r.stderr
    # The stored pipeline of the record compile uses (none: the tuned schedule was not
    # MIN_GAIN faster than the default, alone or inside the model) replays with
    # xweave-opt on the loop stage and gives exactly the scheduled stage of the tuned
    # build (whose last pass packs constant weights).
    chosen = TunedSchedules.load(out / "random.jsonl").best.get(workload)
    pipeline = chosen["schedule"] if chosen else "schedule-kernels"
    (loop_file,) = (tmp_path / "ir").glob("*-loop.mlir")
    (scheduled,) = (tmp_path / "ir").glob("*-scheduled.mlir")
    replay = subprocess.run([str(BIN / "xweave-opt"), str(loop_file), "-p",
                             pipeline + ",loop-fold-constant-packs"],
                            capture_output=True, text=True, timeout=300)
    assert replay.returncode == 0, replay.stderr
    body = [line for line in scheduled.read_text().splitlines() if not line.startswith("// ")]
    assert replay.stdout.strip() == "\n".join(body).strip()
    # Same numbers as the untuned build.
    x = np.random.default_rng(2).standard_normal((1, 4, 8, 8)).astype(np.float32)
    (got,) = xweave_api.load_module(tmp_path / "tuned.so").run(x=x)
    (want,) = xweave_api.build(model).run(x=x)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_kill_9_then_resume_loses_no_record(model, tmp_path):
    path = tmp_path / "log.jsonl"
    args = [str(BIN / "xweave"), "tune", str(model), "-o", str(path), "--trials", "6",
            "--tuner", "random", "--builders", "0", "--threads", "1"]
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for_lines(proc, path, 2)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL
    before = load_records(path)
    assert 2 <= len(before) < 6
    r = subprocess.run(args, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    after = load_records(path)
    points = [tuple(x["point"]) for x in after]
    assert len(after) == 6 and len(set(points)) == 6  # nothing measured twice
    assert [json.dumps(x, sort_keys=True) for x in after[: len(before)]] == \
        [json.dumps(x, sort_keys=True) for x in before]
    assert f"+ {len(before)} resumed" in r.stderr


def test_bad_files_and_options(model, tmp_path, capsys):
    from xweave.cli import main

    def fails(*args, match):
        # In process (the CLI's own error path, without a process start per case).
        with pytest.raises(SystemExit) as exit_info:
            main([str(a) for a in args])
        assert exit_info.value.code != 0
        err = capsys.readouterr().err
        assert match in err, err
        assert "Traceback" not in err

    r = xweave("tune", model, "-o", tmp_path / "r.jsonl", "--trials", "0")
    assert r.returncode == 2 and "--trials must be at least 1" in r.stderr
    assert "Traceback" not in r.stderr

    junk = tmp_path / "notes.txt"
    junk.write_text("my notes\n")
    fails("tune", model, "-o", junk, "--trials", "2", match="not a tuning-records file")
    assert junk.read_text() == "my notes\n"  # not appended to
    fails("tune", model, "-o", tmp_path, match="is a directory")
    fails("tune", tmp_path / "missing.onnx", "-o", tmp_path / "r.jsonl", match="missing.onnx: no such")
    fails("tune", model, "-o", tmp_path / "r.jsonl", "--target", "cuda", match="unknown target")
    fails("tune", model, "-o", tmp_path / "r.jsonl", "--runner", "cluster",
          match="--address")
    fails("tune", model, "-o", tmp_path / "r.jsonl", "--tuner", "xgb", match="invalid choice")
    fails("tune", "-o", tmp_path / "r.jsonl", match="required: model")
    fails("tune-plot", tmp_path / "missing.jsonl", "-o", tmp_path / "c.png",
          match="no such tuning-records file")
    fails("compile", model, "--tuning-records", tmp_path / "missing.jsonl", "-o",
          tmp_path / "m.so", match="tuning records")
    fails("compile", model, "--tuning-records", junk, "-o", tmp_path / "m.so",
          match="no tuning record in the file")
    assert not (tmp_path / "r.jsonl").exists() and not (tmp_path / "m.so").exists()
