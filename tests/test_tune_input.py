"""`xweave tune` and its records under bad input: Ctrl-C, non-finite numbers, garbled
lines, resuming a finished run, records whose schedule does not apply."""

import json
import math
import os
import signal
import subprocess
import sys
import warnings
from pathlib import Path

import onnx
import pytest

import xweave
from xweave.records import (
    MODEL_CHECK,
    RecordWarning,
    RecordWriter,
    load_model_checks,
    load_records,
)
from xweave.log import NOTE, cli_logging

from helpers import small_conv_model, wait_for_lines

BIN = Path(sys.executable).parent


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    path = tmp_path_factory.mktemp("tune") / "conv.onnx"
    onnx.save(small_conv_model(), path)
    return path


def tune_args(model, records, trials=3, builders=0):
    return [str(BIN / "xweave"), "tune", str(model), "-o", str(records), "--trials",
            str(trials), "--tuner", "random", "--builders", str(builders), "--threads", "1"]


@pytest.fixture(scope="module")
def tuned(model, tmp_path_factory):
    """A finished `xweave tune` run whose model check timed a tuned kernel: (records
    path, the stderr of the run that did the model check)."""
    path = tmp_path_factory.mktemp("records") / "r.jsonl"
    r = subprocess.run(tune_args(model, path), capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    # Make one candidate the clear winner, so the resumed run has a kernel to time.
    records = [{k: v for k, v in x.items() if k != "_line"} for x in load_records(path)]
    winner = next(x for x in records if not x.get("baseline"))
    winner["result"]["gflops"] = 1e6
    path.unlink()
    with RecordWriter(path) as w:
        for x in records:
            w.write(x)
    r = subprocess.run(tune_args(model, path), capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    return path, r.stderr


def test_ctrl_c_is_one_line_exit_130_and_keeps_the_records(model, tmp_path):
    path = tmp_path / "r.jsonl"
    # A new session whose SIGINT is not ignored (as a terminal's Ctrl-C reaches the
    # whole foreground process group, builder workers included).
    proc = subprocess.Popen(tune_args(model, path, trials=40, builders=2),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        wait_for_lines(proc, path, 2)
        os.killpg(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err
    assert err.strip().splitlines()[-1] == (
        f"xweave tune: interrupted; the records measured so far are in {path} (the same "
        "command resumes)")
    text = path.read_text()
    assert text.endswith("\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error", RecordWarning)
        assert len(load_records(path)) == text.count("\n") >= 2  # every line whole


def test_resume_of_a_finished_run_appends_nothing(model, tuned):
    path, first = tuned
    assert "of 1 tuned kernel(s) at least 3% faster inside the model" in first
    before = path.read_bytes()
    r = subprocess.run(tune_args(model, path), capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    assert path.read_bytes() == before
    assert "were already timed inside the model" in r.stderr


def test_bad_lines_are_skipped_with_one_warning_each(tuned, tmp_path, capsys):
    source, _ = tuned
    records = load_records(source)
    nan = dict(records[0], result=dict(records[0]["result"], gflops=math.nan))
    garbled = dict(records[1], workload=records[1]["workload"].replace("conv", "cnov"))
    lines = [json.dumps({k: v for k, v in r.items() if k != "_line"}) for r in (nan, garbled)]
    assert "NaN" in lines[0]
    path = tmp_path / "r.jsonl"
    path.write_text(source.read_text() + "\n".join(lines) + "\n{garbage\n"
                    + '{"workload": "w", "point": [1], "result": {"error_no": 0, '
                      '"gflops": Infinity}}\n')
    n = source.read_text().count("\n")
    with pytest.warns(RecordWarning) as caught:
        kept = load_records(path)
    assert len(kept) == len(records)
    messages = sorted(str(w.message) for w in caught)
    assert messages == sorted([
        f"{path}:{n + 1}: skipping a record with a non-finite number (NaN)",
        f"{path}:{n + 2}: skipping a garbled record: its task does not describe its "
        f"workload {garbled['workload']!r}",
        f"{path}:{n + 3}: skipping a corrupt or truncated record (Expecting property name "
        "enclosed in double quotes)",
        f"{path}:{n + 4}: skipping a record with a non-finite number (Infinity)",
    ])
    # Read once per task by `xweave tune`: each bad line is still one warning there.
    with cli_logging(NOTE), warnings.catch_warnings():
        # Python's own once-per-location filter state is global to the test run:
        # "always" leaves the one-line-per-text rule to the CLI's handler, under test.
        warnings.simplefilter("always", RecordWarning)
        for _ in range(3):
            load_records(path)
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 4 and all(line.startswith("warning: ") for line in err)


def test_non_finite_numbers_are_refused_on_write(tuned, tmp_path):
    source, _ = tuned
    record = {k: v for k, v in load_records(source)[0].items() if k != "_line"}
    path = tmp_path / "r.jsonl"
    with RecordWriter(path) as w:
        with pytest.raises(ValueError, match="refusing to write a record of .* non-finite"):
            w.write(dict(record, result=dict(record["result"], gflops=math.inf)))
        w.write(record)
    assert path.read_text().count("\n") == 1
    (check,) = load_model_checks(source).values()
    assert math.isfinite(check["tuned_ms"])


def test_a_schedule_that_does_not_apply_is_reported(model, tuned, tmp_path):
    source, _ = tuned
    records = [{k: v for k, v in r.items() if k != "_line"} for r in load_records(source)]
    best = max(records, key=lambda r: r["result"]["gflops"])
    key = best["workload"]
    path = tmp_path / "r.jsonl"
    with RecordWriter(path) as w:
        for r in records:
            w.write(r)
        w.write(dict(best, point=[0] * len(best["point"]), baseline=False,
                     schedule='loop-split{loop="no.such.loop" factor=4}',
                     result=dict(best["result"], gflops=1e9)))
    assert not any(json.loads(line).get("kind") == MODEL_CHECK
                   for line in path.read_text().splitlines())
    with pytest.warns(RuntimeWarning, match=rf"{path}:{len(records) + 1}: 1 of 1 step\(s\) "
                                            rf"of the tuned schedule of {key.split('(')[0]}"):
        xweave.build(model, tuning_records=path)


def test_a_schedule_that_does_not_parse_is_reported(model, tuned, tmp_path):
    source, _ = tuned
    records = [{k: v for k, v in r.items() if k != "_line"} for r in load_records(source)]
    best = max(records, key=lambda r: r["result"]["gflops"])
    path = tmp_path / "r.jsonl"
    with RecordWriter(path) as w:
        for r in records:
            w.write(r)
        w.write(dict(best, baseline=False, schedule="loop-split{loop=",
                     result=dict(best["result"], gflops=1e9)))
    with pytest.warns(RuntimeWarning, match=r"cannot use the schedule of .*keeps its default"):
        xweave.build(model, tuning_records=path)
