"""Every benchmark script runs in a smoke mode (tiny shapes, one round, no timing
asserted), so that a changed signature or a crash fails here, not in the next figures."""

import json
import subprocess
import sys
from pathlib import Path

from helpers import load_bench

BENCH = Path(__file__).resolve().parents[1] / "bench"


def records_of(stdout: str) -> list[dict]:
    """The JSON records a benchmark printed (one object per line)."""
    return [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]


def run_script(name: str, *args: str, timeout: float = 900) -> list[dict]:
    """Run bench/<name>.py with `args` in a process of its own (for the scripts that set
    thread counts in the environment); its JSON records."""
    proc = subprocess.run([sys.executable, str(BENCH / f"{name}.py"), *args],
                          capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    return records_of(proc.stdout)


def run_main(capsys, name: str, *args: str) -> list[dict]:
    """Run bench/<name>.py's `main` with `args` in this process; its JSON records."""
    capsys.readouterr()
    code = load_bench(name).main(list(args))
    assert code in (None, 0), code
    return records_of(capsys.readouterr().out)


def test_compile_time():
    (record,) = run_script("compile_time", "--smoke", "--models", "resnet18")
    assert record["model"] == "resnet18" and record["smoke"]
    assert record["kernels"] >= 5
    for stage in ("import", "graph-opt", "te", "loop", "scheduled", "planned", "llvm", "codegen"):
        assert stage in record["stages"], record["stages"]
    assert 0 < record["peak_rss_mb"] < 4096 and record["cpu"]


def test_peak(capsys):
    peak = load_bench("peak")
    records = run_main(capsys, "peak", "--smoke")
    cpus = records[0]["cpus"]
    assert sorted((r["threads"], r["lanes"]) for r in records) == \
        [(t, n) for t in sorted({1, cpus}) for n in peak.host_lanes()]
    for record in records:
        assert record["bench"] == "fma_peak" and record["cpu"]
        assert str(record["chains"]) in record["sweep"]
        assert record["gflops"] > 0 and all(g > 0 for g in record["sweep"].values())
