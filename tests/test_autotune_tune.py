"""The tuning loop end to end: a real JIT-compiled task, early stopping, curves."""

import fcntl
import io
import os
import pty
import re
import struct
import sys
import termios
import threading

from xweave.autotune import (
    LocalBuilder,
    LocalRunner,
    ModelBasedTuner,
    load_records,
    make_task,
    plot_curves,
    tune,
)


def test_real_matmul_tunes_end_to_end(tmp_path):
    task = make_task("matmul_ir", M=32, N=32, K=32)
    path = tmp_path / "matmul.jsonl"
    tuner = ModelBasedTuner(task, min_train=4, refit_min=4, rerank_budget_s=0.3, seed=0)
    builder = LocalBuilder(n_parallel=2, timeout=30)
    runner = LocalRunner(min_repeat_ms=5, repeat=3, timeout=30)
    try:
        result = tune(task, tuner=tuner, trials=10, records_path=path, builder=builder,
                      runner=runner, progress=True)
    finally:
        builder.close()
        runner.close()
    records = load_records(path)
    assert len(records) == 10 and result.trials == 10
    assert all(r["result"]["error_no"] == 0 for r in records), \
        [r["result"]["error_msg"] for r in records]
    assert result.best_gflops == max(r["result"]["gflops"] for r in records) > 0
    assert result.best_schedule.startswith('loop-split{loop="matmul.i" factor=')
    assert tuner.fits >= 1 and tuner.feature_type == "itervar"
    assert len(tuner._feature_cache) >= 10  # features of measured points came from the builds
    assert result.curve == sorted(result.curve) and len(result.curve) == 10
    per = result.seconds_per_trial
    assert {"total", "build", "measure", "tuner", "records", "other"} <= set(per)
    assert per["build"] > 0 and per["measure"] > 0
    assert "GFLOP/s" in result.summary()


def test_early_stopping_and_curves(tmp_path):
    task = make_task("synthetic_smooth", seed=5)
    paths = {}
    for name in ("random", "lgbm", "ga"):
        paths[name] = tmp_path / f"{name}.jsonl"
        options = {"features": "knob"} if name == "lgbm" else None
        result = tune(task, tuner=name, trials=120, seed=0, records_path=paths[name],
                      progress=False, tuner_options=options)
        assert result.trials == 120
    stopped = tune(task, tuner="grid", trials=5000, early_stopping=50,
                   records_path=tmp_path / "grid.jsonl", progress=False)
    assert stopped.stop_reason.startswith("early stopping") and stopped.trials < 5000
    out = tmp_path / "curves.png"
    curves = plot_curves(list(paths.values()), out)
    assert out.exists() and out.stat().st_size > 1000
    by_tuner = curves[task.workload_key]
    assert set(by_tuner) == {"random", "lgbm", "ga"}
    for values in by_tuner.values():
        assert len(values) == 120 and values == sorted(values)
    assert by_tuner["lgbm"][-1] >= by_tuner["random"][-1]


def test_the_initial_points_are_measured_first_and_marked_baseline(tmp_path):
    task = make_task("synthetic_smooth", seed=5)
    start = next(iter(task.space))
    path = tmp_path / "records.jsonl"
    tune(task, tuner="random", trials=4, seed=0, records_path=path, progress=False,
         initial_points=[start])
    records = load_records(path)
    assert [r.get("baseline", False) for r in records] == [True, False, False, False]
    assert tuple(records[0]["point"]) == tuple(start)


class _Terminal(io.StringIO):
    """Says it is a terminal (of no known size)."""

    def isatty(self):
        return True


def _run_in_terminal(columns: int, fn) -> str:
    """What `fn()` writes to sys.stderr when that is a pseudo-terminal `columns` wide."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
    out = []
    reader = threading.Thread(target=lambda: out.append(_read_all(master)), daemon=True)
    reader.start()
    saved = sys.stderr
    with open(slave, "w", encoding="utf-8", closefd=True) as terminal:
        sys.stderr = terminal
        try:
            fn()
        finally:
            sys.stderr = saved
    reader.join(timeout=30)
    os.close(master)
    return out[0].decode("utf-8", "replace")


def _read_all(fd: int) -> bytes:
    data = b""
    while True:
        try:
            chunk = os.read(fd, 4096)
        except OSError:  # the terminal's other end was closed
            return data
        if not chunk:
            return data
        data += chunk


def test_progress_fits_the_terminal_and_is_off_elsewhere(monkeypatch):
    task = make_task("synthetic_smooth", seed=5)
    label = "a label long enough to overflow any terminal " * 4
    for columns in (80, 120):
        text = _run_in_terminal(columns, lambda: tune(task, tuner="random", trials=20, seed=0,
                                                      progress=True, label=label))
        lines = [line for line in re.split("[\r\n]", text) if line.strip()]
        assert lines and max(len(line) for line in lines) < columns, lines
        assert "20/20" in lines[-1] and "errors 0" in lines[-1], lines[-1]
    # Not a terminal (a log file, CI), or not wanted (`xweave tune -q`): no bar.
    for stream, progress in ((io.StringIO(), True), (_Terminal(), False)):
        monkeypatch.setattr(sys, "stderr", stream)
        tune(task, tuner="random", trials=5, seed=0, progress=progress)
        assert stream.getvalue() == ""
