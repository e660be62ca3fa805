"""xweave-opt's driver semantics, as mlir-opt users expect them: `--verify-diagnostics`
checks `expected-error` annotations and fails on any mismatch, diagnostics name file
lines (not lines of a `--split-input-file` chunk), `-t llvm` translates the llvm stage,
and `--help` lists xweave's passes with a line each and their options."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import llvmlite.binding as llvm_binding
import pytest

OPT = str(Path(sys.executable).parent / "xweave-opt")
EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "small_cnn.onnx"

BAD_STEP = '''"loop.for"() <{lb = 0 : i64, ub = 64 : i64, step = 0 : i64}> ({
^bb0(%i: index):
  "loop.yield"() : () -> ()
}) : () -> ()
'''
GOOD = "func.func @f() {\n  func.return\n}\n"


def opt(path: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([OPT, str(path), *args], capture_output=True, text=True, timeout=120)


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "input.mlir"
    path.write_text(text)
    return path


def test_a_met_expectation_passes(tmp_path):
    path = write(tmp_path, GOOD + "\n// -----\n\n// expected-error @+1 {{step must be positive}}\n"
                 + BAD_STEP)
    run = opt(path, "--split-input-file", "--verify-diagnostics")
    assert run.returncode == 0, run.stderr
    assert "input.mlir:8:1: error: 'loop.for' op: step must be positive" in run.stdout


@pytest.mark.parametrize("annotation, failure", [
    ("// expected-error @+1 {{a message it does not give}}\n",
     'input.mlir:5: error: expected error "a message it does not give" (at line 6) was not produced'),
    ("// expected-error @+2 {{step must be positive}}\n",
     'input.mlir:5: error: expected error "step must be positive" (at line 7) was not produced'),
])
def test_a_mismatch_fails_and_names_the_file_line(tmp_path, annotation, failure):
    path = write(tmp_path, GOOD + "// -----\n" + annotation + BAD_STEP)
    run = opt(path, "--split-input-file", "--verify-diagnostics")
    assert run.returncode == 1
    assert failure in run.stderr
    assert "input.mlir:6:1: error: unexpected error: 'loop.for' op: step must be" in run.stderr
    assert "Traceback" not in run.stderr


def test_an_expectation_with_no_error_fails(tmp_path):
    path = write(tmp_path, "// expected-error @+1 {{never}}\n" + GOOD)
    run = opt(path, "--verify-diagnostics")
    assert run.returncode == 1
    assert 'input.mlir:1: error: expected error "never" (at line 2) was not produced' in run.stderr


def test_an_unexpected_error_in_an_annotated_file_fails(tmp_path):
    path = write(tmp_path, "// expected-error @below {{step must be positive}}\n" + BAD_STEP
                 + "\n// -----\n" + BAD_STEP)
    run = opt(path, "--split-input-file", "--verify-diagnostics")
    assert run.returncode == 1
    assert "input.mlir:8:1: error: unexpected error: 'loop.for' op" in run.stderr


def test_an_unannotated_file_prints_diagnostics_at_file_lines(tmp_path):
    """Without annotations: xdsl-opt's behaviour (print, exit 0, for filecheck), with
    the line counted in the whole file."""
    path = write(tmp_path, GOOD + "\n// -----\n\n" + BAD_STEP)
    run = opt(path, "--split-input-file", "--verify-diagnostics")
    assert run.returncode == 0, run.stderr
    assert "input.mlir:7:1: error: 'loop.for' op: step must be positive" in run.stdout


def test_errors_without_verify_diagnostics_name_file_lines(tmp_path):
    path = write(tmp_path, GOOD + "\n// -----\n\n" + BAD_STEP)
    run = opt(path, "--split-input-file")
    assert run.returncode == 1 and "input.mlir:7:1: error:" in run.stderr


def test_t_llvm_translates_the_llvm_stage(tmp_path):
    dump = tmp_path / "ir"
    subprocess.run([str(Path(OPT).parent / "xweave"), "compile", str(EXAMPLE), "-o",
                    str(tmp_path / "m.xwm"), "--dump-ir", str(dump)], check=True,
                   capture_output=True)
    (llvm_stage,) = dump.glob("*-llvm.mlir")
    run = opt(llvm_stage, "-t", "llvm")
    assert run.returncode == 0, run.stderr
    assert "define void @main(" in run.stdout or "define void @\"main\"(" in run.stdout
    llvm_binding.parse_assembly(run.stdout).verify()  # valid LLVM IR


def test_help_lists_xweave_passes_with_a_line_and_options():
    run = subprocess.run([OPT, "--help"], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0
    listing = run.stdout.split("xweave passes", 1)[1]
    assert "\n  loop-split: Split loop `loop`" in listing
    assert "options: loop=(required) factor=none nparts=none" in listing
    assert "convert-arith-to-riscv" not in listing  # xDSL's own passes: accepted, not listed
    assert "convert-arith-to-riscv" not in run.stdout.split("xweave passes", 1)[0]


def test_versions():
    import xweave

    assert xweave.__version__ and xweave.__version__[0].isdigit()
    run = subprocess.run([str(Path(OPT).parent / "xweave"), "--version"], capture_output=True,
                         text=True, timeout=60)
    assert run.returncode == 0 and run.stdout.strip() == f"xweave {xweave.__version__}"
    run = subprocess.run([OPT, "--version"], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0 and run.stdout.startswith(f"xweave-opt {xweave.__version__} (xdsl ")
