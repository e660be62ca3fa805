"""Fuzzing (seeded, bounded): mutated IR and malformed ONNX models end in a result or a
clear error, never a crash, a traceback or a hang. `bench/fuzz.py` runs more cases."""

import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from helpers import load_bench

fuzz = load_bench("fuzz")


@pytest.fixture(scope="module")
def dumps(tmp_path_factory):
    directory = tmp_path_factory.mktemp("dump")
    return fuzz.dump_ir(directory)


def assert_clean(outcomes, minimum_errors):
    bad = [o for o in outcomes if o.kind in ("crash", "hang")]
    assert not bad, "\n".join(f"{o.kind}: {o.case}: {o.detail}" for o in bad[:20])
    counts = fuzz.summary(outcomes)
    # The mutations must mostly be caught (a fuzzer whose cases all pass tests nothing).
    assert counts["error"] >= minimum_errors, counts


def test_the_generators_are_deterministic(dumps):
    first = [(n, t) for n, _, t in fuzz.ir_cases(dumps, 20, seed=3)]
    assert first == [(n, t) for n, _, t in fuzz.ir_cases(dumps, 20, seed=3)]
    a = [(n, m.SerializeToString()) for n, m in fuzz.onnx_cases(20, seed=3)]
    assert a == [(n, m.SerializeToString()) for n, m in fuzz.onnx_cases(20, seed=3)]


def test_mutated_ir(dumps, tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        outcomes = fuzz.fuzz_ir(dumps, 150, seed=0, workdir=tmp_path, compile_every=25)
    assert len(outcomes) >= 300
    assert_clean(outcomes, minimum_errors=80)


def test_malformed_onnx():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        outcomes = fuzz.fuzz_onnx(300, seed=0, run_every=15)
    assert len(outcomes) == 300
    assert_clean(outcomes, minimum_errors=150)


def test_through_the_installed_commands(dumps, tmp_path):
    outcomes = fuzz.fuzz_cli(dumps, 8, seed=0, workdir=tmp_path)
    assert len(outcomes) == 8
    assert_clean(outcomes, minimum_errors=2)


def test_a_crash_is_counted():
    outcome = fuzz.run_case("boom", lambda: {}["missing"])
    assert outcome.kind == "crash" and "KeyError" in outcome.detail
    assert fuzz.run_case("slow", lambda: __import__("time").sleep(5), limit=0.2).kind == "hang"


_PEAK = """
import resource, sys
sys.path.insert(0, {bench!r})
import fuzz, xweave
from xweave.errors import XweaveError
name, model = list(fuzz.onnx_cases(76, 0))[75]
model.graph.input[0].type.tensor_type.shape.dim[0].dim_value = {rows}
try:
    xweave.build(model, cache=False)
    print("built")
except XweaveError as e:
    print("error:", e)
# This process's own peak: VmHWM. (ru_maxrss keeps the peak of the process that forked
# it across exec: the test process's, once the suite has grown it past 1 GB.)
try:
    with open("/proc/self/status") as f:
        print(next(int(line.split()[1]) for line in f if line.startswith("VmHWM:")) * 1024)
except (OSError, StopIteration):
    print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)
"""


@pytest.mark.parametrize("rows", [2**31, 2**26])
def test_a_model_claiming_huge_dims_needs_bounded_memory(rows):
    """Fuzz case 75 (a 297-byte Gemm whose input claims [rows, 8]): refused up front when
    the machine cannot hold the tensor, compiled otherwise; the process never holds more
    than 1 GB either way (it once grew to 14.6 GB in loop-parallel)."""
    bench = str(Path(__file__).resolve().parents[1] / "bench")
    proc = subprocess.run([sys.executable, "-c", _PEAK.format(bench=bench, rows=rows)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    result, peak = proc.stdout.strip().splitlines()[-2:]
    if rows == 2**31:
        assert "is too large" in result and "graph input 'a'" in result, result
    assert result == "built" or result.startswith("error:"), result
    assert int(peak) < 2**30, (result, int(peak) / 2**20)
