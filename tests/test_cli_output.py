"""What the CLIs and the library say, and where: logging levels (-v, -q, silent as a
library), warnings as one line, tune's units and times, tune-plot's files and figures,
which kernels a build with tuning records tuned, and where threads are chosen."""

import logging
import subprocess
import sys
from pathlib import Path

import onnx
import pytest
from onnx import TensorProto, helper

import xweave
from xweave.cli import opt_main

from helpers import run_cli

BIN = Path(sys.executable).parent


@pytest.fixture(scope="module")
def transpose(tmp_path_factory):
    """A model whose one kernel only moves data, and the records of `xweave tune -v` on
    it (its stdout and stderr)."""
    tmp = tmp_path_factory.mktemp("transpose")
    graph = helper.make_graph(
        [helper.make_node("Transpose", ["x"], ["y"], name="t", perm=[1, 0])], "m",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [64, 48])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [48, 64])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    path, records = tmp / "t.onnx", tmp / "t.jsonl"
    onnx.save(model, path)
    r = subprocess.run([str(BIN / "xweave"), "tune", str(path), "-o", str(records), "--trials",
                        "4", "--builders", "0", "--threads", "1", "-v"],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    return path, records, r.stdout, r.stderr


def test_tune_reports_data_movement_in_gb_per_s_and_small_times_in_us(transpose):
    _, _, stdout, stderr = transpose
    # The summary table (stdout) and each task's result line (stderr): bytes moved per
    # second, not the FLOP/s of a kernel without arithmetic.
    assert "GB/s" in stdout and "GFLOP/s" not in stdout, stdout
    assert "GFLOP/s" not in stderr and "MB moved" in stderr, stderr
    (check,) = [line for line in stderr.splitlines() if line.startswith("model check: ") and
                "per run" in line] or [""]
    if check:  # a tuned schedule was kept: its time inside the model, to 3 digits
        assert "0.00 -> 0.00 ms" not in check and ("µs" in check or "ms" in check), check
    # Without a terminal, no progress bar: the lines are logging's, one per event.
    assert "\r" not in stderr and "%|" not in stderr


def test_the_library_logs_and_says_nothing_unless_asked(transpose, capfd, caplog):
    path, records, _, _ = transpose
    xweave.build(path, tuning_records=records, cache=False)  # the report comes from compiling
    assert capfd.readouterr().err == ""  # no print, no handler of its own
    caplog.set_level(logging.INFO, logger="xweave")
    xweave.build(path, tuning_records=records, cache=False)  # the report comes from compiling
    assert capfd.readouterr().err == ""
    by_logger = {(r.name, r.getMessage()) for r in caplog.records}
    assert any(name == "xweave.schedules" and msg.endswith("of 1 kernels tuned")
               for name, msg in by_logger), by_logger
    assert any(name == "xweave.schedules" and "transpose(64x48xf32 -> 48x64xf32)" in msg
               for name, msg in by_logger), by_logger
    assert all(r.name.startswith("xweave.") for r in caplog.records)


def test_compile_with_records_says_which_kernels_were_tuned(transpose, tmp_path):
    path, records, _, _ = transpose
    out = tmp_path / "m.so"
    code, stdout, stderr = run_cli("compile", path, "--tuning-records", records, "-o", out)
    assert code == 0, stderr
    # The default level: one summary line; -v: one line per kernel; -q: nothing.
    (summary,) = stderr.splitlines()
    assert summary.startswith(f"{records}: ") and summary.endswith(" of 1 kernels tuned")
    assert stdout == f"wrote {out}\n"
    code, _, stderr = run_cli("compile", path, "--tuning-records", records, "-o", out, "-v",
                          "--no-cache")
    lines = stderr.splitlines()
    assert len(lines) == 2 and lines[-1] == summary, lines
    assert "transpose(64x48xf32 -> 48x64xf32)): " in lines[0]
    assert lines[0].endswith(("tuned schedule", ")")), lines[0]  # tuned, or why not
    code, _, stderr = run_cli("compile", path, "--tuning-records", records, "-o", out, "-q",
                          "--no-cache")
    assert code == 0 and stderr == ""


def test_warnings_are_one_line_each_and_quiet_hides_them(transpose, tmp_path):
    path, records, _, _ = transpose
    damaged = tmp_path / "damaged.jsonl"
    damaged.write_text(records.read_text() + "{not json\n")
    code, _, stderr = run_cli("compile", path, "--tuning-records", damaged, "-o", tmp_path / "m.so")
    assert code == 0, stderr
    warning = [line for line in stderr.splitlines() if line.startswith("warning: ")]
    assert len(warning) == 1 and f"{damaged}:" in warning[0], stderr
    assert "Warning:" not in stderr and ".py:" not in stderr  # no category, no source line
    code, _, stderr = run_cli("compile", path, "--tuning-records", damaged, "-o",
                          tmp_path / "m.so", "-q")
    assert code == 0 and stderr == ""


def test_xweave_opt_takes_verbose_and_quiet(transpose, tmp_path):
    path, records, _, _ = transpose
    run_cli("compile", path, "-o", tmp_path / "m.so", "--dump-ir", tmp_path / "ir")
    (loop,) = (tmp_path / "ir").glob("*-loop.mlir")
    spec = f"schedule-kernels{{tuning-records=\"{records}\"}}"
    code, stdout, stderr = run_cli("-v", loop, "-p", spec, entry=opt_main)
    assert code == 0 and "func.func" in stdout, stderr
    assert "kernels tuned" in stderr and "transpose(64x48xf32" in stderr, stderr
    code, _, stderr = run_cli("-q", loop, "-p", spec, entry=opt_main)
    assert code == 0 and stderr == ""
    code, stdout, _ = run_cli("--version", entry=opt_main)
    assert code == 0 and stdout.startswith("xweave-opt ")


def test_tune_and_tune_plot_outputs_are_unambiguous(transpose, tmp_path, monkeypatch):
    path, records, _, _ = transpose
    for args, match in (
            (("tune", path, "-o", tmp_path / "curves.png"), "xweave tune-plot"),
            (("tune-plot", records, "-o", tmp_path / "x.jsonl"), "expected an image file"),
            (("tune-plot", records, "-o", tmp_path / "no" / "c.png"), "no such directory"),
            (("tune-plot", tmp_path / "missing.jsonl", "-o", tmp_path / "c.png"),
             "no such tuning-records file"),
            (("tune", "--plot", records, "-o", tmp_path / "c.png"), "unrecognized arguments")):
        code, _, stderr = run_cli(*args)
        assert code != 0 and match in stderr, stderr
        assert len(stderr.strip().splitlines()) <= 3 and "Traceback" not in stderr
        assert not (tmp_path / "curves.png").exists() and not (tmp_path / "x.jsonl").exists()
    from matplotlib.figure import Figure

    figures = []
    save = Figure.savefig
    monkeypatch.setattr(Figure, "savefig",
                        lambda fig, *a, **k: (figures.append(fig), save(fig, *a, **k))[1])
    code, stdout, stderr = run_cli("tune-plot", records, "-o", tmp_path / "c.png")
    assert code == 0 and (tmp_path / "c.png").stat().st_size > 1000, stderr
    assert stdout == f"wrote {tmp_path / 'c.png'} (1 workload(s))\n"
    (fig,) = figures  # a kernel that only moves data: its curve in GB/s
    assert [ax.get_ylabel() for ax in fig.axes if ax.get_visible()] == ["best GB/s so far"]
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # the `plot` extra not installed
    code, _, stderr = run_cli("tune-plot", records, "-o", tmp_path / "d.png")
    assert code != 0 and "'plot' extra" in stderr and len(stderr.splitlines()) == 1, stderr


def test_tuning_curves_have_whole_trials_and_whole_titles(tmp_path, monkeypatch):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from xweave.autotune import load_records, make_task, plot_curves, tune

    figures = []
    save = Figure.savefig
    monkeypatch.setattr(Figure, "savefig",
                        lambda fig, *a, **k: (figures.append(fig), save(fig, *a, **k))[1])
    task = make_task("synthetic_smooth", seed=5)
    tune(task, tuner="random", trials=3, seed=0, records_path=tmp_path / "r.jsonl",
         progress=False)
    long_key = "a workload key far longer than a panel is wide " * 3
    plot_curves([dict(r, workload=long_key) for r in load_records(tmp_path / "r.jsonl")],
                tmp_path / "c.png")
    (fig,) = figures
    renderer = FigureCanvasAgg(fig).get_renderer()  # (pyplot closed the figure)
    inside = fig.bbox.expanded(1.0, 1.0)
    for ax in fig.axes:
        ticks = [t for t in ax.get_xticks() if 1 <= t <= 3]
        assert ticks and all(float(t).is_integer() for t in ticks), ticks
        title = ax.title.get_window_extent(renderer)
        assert inside.x0 <= title.x0 and title.x1 <= inside.x1, (title, inside)


def test_compile_help_says_where_threads_are_chosen():
    code, stdout, _ = run_cli("compile", "--help")
    assert code == 0 and "There is no --threads" in " ".join(stdout.split())
    code, stdout, _ = run_cli("tune", "--help")
    assert "--threads N" in stdout
