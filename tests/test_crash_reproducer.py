"""An internal error during compilation names the stage, pass and kernel, and writes a
reproducer: the IR before the failing pass, which `xweave-opt -p <that pass>` replays.
The failures are injected by replacing a pass's `apply` (in a subprocess for the CLI)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import xweave
from xweave.context import parse_module
from xweave.errors import InternalCompilerError
from xweave.passes.loop_pack import LoopPackPass
from xweave.passes.memory_plan import PlanMemoryPass

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "small_cnn.onnx"


def _explode(self, ctx, op):
    raise RuntimeError("injected failure")


def build_failing_in(pass_class, monkeypatch, crash_dir) -> str:
    """The internal error's message when building the example with `pass_class`
    failing, its reproducer written into `crash_dir`."""
    monkeypatch.setenv("XWEAVE_CRASH_DIR", str(crash_dir))
    monkeypatch.setattr(pass_class, "apply", _explode)
    with pytest.raises(InternalCompilerError) as info:
        xweave.build(EXAMPLE)
    return str(info.value)


def test_a_failing_pass_is_named_with_its_stage_and_a_reproducer(monkeypatch, tmp_path):
    message = build_failing_in(PlanMemoryPass, monkeypatch, tmp_path)
    assert "stage 'planned', pass 'plan-memory'" in message
    assert "RuntimeError: injected failure" in message
    reproducer = tmp_path / "reproducer.mlir"
    assert f"reproducer: {reproducer}" in message
    assert f"xweave-opt {reproducer} -p 'plan-memory'" in message
    text = reproducer.read_text()
    assert text.startswith("// xweave internal error reproducer: the IR before pass 'plan-memory'")
    module = parse_module(text)  # the scheduled stage: kernels, no arena yet
    assert "loop.for" in text and "xweave_arena" not in text
    assert module.attributes["xweave.target"].data == "llvm -mcpu=znver3"
    assert "injected failure" in (tmp_path / "traceback.txt").read_text()


def test_a_failing_schedule_step_names_the_kernel_and_the_step(monkeypatch, tmp_path):
    message = build_failing_in(LoopPackPass, monkeypatch, tmp_path)
    assert "stage 'scheduled', pass 'schedule-kernels', kernel '" in message
    assert "step 'loop-pack{" in message
    text = (tmp_path / "reproducer.mlir").read_text()
    assert "// Replay: xweave-opt" in text and "-p 'schedule-kernels'" in text
    monkeypatch.undo()  # the replay, without the injected failure, schedules the kernels
    replay = subprocess.run([str(Path(sys.executable).parent / "xweave-opt"),
                             str(tmp_path / "reproducer.mlir"), "-p", "schedule-kernels"],
                            capture_output=True, text=True)
    assert replay.returncode == 0, replay.stderr
    assert "loop.alloc" in replay.stdout and "xweave.pack" in replay.stdout


def test_user_errors_are_not_internal_errors(tmp_path):
    with pytest.raises(xweave.XweaveError) as info:
        xweave.build(EXAMPLE, tuning_records=tmp_path / "missing.jsonl")
    assert not isinstance(info.value, InternalCompilerError)


def test_the_cli_prints_one_line_and_the_reproducer(tmp_path):
    script = (
        "import sys; from xweave.passes.memory_plan import PlanMemoryPass\n"
        "def explode(self, ctx, op): raise RuntimeError('injected failure')\n"
        "PlanMemoryPass.apply = explode\n"
        "from xweave.cli import main; main(sys.argv[1:])\n")
    run = subprocess.run(
        [sys.executable, "-c", script, "compile", str(EXAMPLE), "-o", str(tmp_path / "m.xwm")],
        capture_output=True, text=True, env={**os.environ, "XWEAVE_CRASH_DIR": str(tmp_path)})
    assert run.returncode == 3
    assert "Traceback" not in run.stderr and run.stderr.count("\n") == 1
    assert run.stderr.startswith("xweave compile: error: internal error in stage 'planned'")
    assert str(tmp_path / "reproducer.mlir") in run.stderr
    assert not (tmp_path / "m.xwm").exists()
