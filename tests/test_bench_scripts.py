"""Every benchmark script runs in a smoke mode (tiny shapes, one round, no timing
asserted), so that a changed signature or a crash fails here, not in the next figures."""

import json
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1] / "bench"


def run_script(name: str, *args: str, timeout: float = 900) -> list[dict]:
    """Run bench/<name>.py with `args`; its JSON records (stdout, one per line)."""
    proc = subprocess.run([sys.executable, str(BENCH / f"{name}.py"), *args],
                          capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    return [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]


def test_compile_time():
    (record,) = run_script("compile_time", "--smoke", "--models", "resnet18")
    assert record["model"] == "resnet18" and record["smoke"]
    assert record["kernels"] >= 5
    for stage in ("import", "graph-opt", "te", "loop", "scheduled", "planned", "llvm", "codegen"):
        assert stage in record["stages"], record["stages"]
    assert 0 < record["peak_rss_mb"] < 4096 and record["cpu"]
