"""Every benchmark script runs in its smoke mode (`--smoke`: tiny shapes or the scaled-down
models of bench/models.py, one round, no timing asserted), so that a changed signature
or a crash fails here, not in the next figures. Each test checks the records the script
prints: their keys, names and sane values.

The scripts that set thread counts in the environment (`common.set_threads`) run in a
process of their own; the others run their `main` in this process (`load_bench`), which
saves an interpreter start-up and the compiler's import each."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import load_bench

BENCH = Path(__file__).resolve().parents[1] / "bench"


@pytest.fixture(scope="module")
def _bench_cache_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("bench-compile-cache")


@pytest.fixture
def shared_cache(_bench_cache_dir, monkeypatch):
    """One compile cache for the smoke runs of this file (not one per test, as
    conftest.py gives): several scripts build the same scaled-down model, and what is
    under test here is the scripts, not the compiler."""
    monkeypatch.setenv("XWEAVE_CACHE_DIR", str(_bench_cache_dir))


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
    fma = [r for r in records if r["bench"] == "fma_peak"]
    cpus = fma[0]["cpus"]
    assert sorted((r["threads"], r["lanes"]) for r in fma) == \
        [(t, n) for t in sorted({1, cpus}) for n in peak.host_lanes()]
    for record in fma:
        assert record["cpu"] and str(record["chains"]) in record["sweep"]
        assert record["gflops"] > 0 and all(g > 0 for g in record["sweep"].values())
    # the integer dot products beside the FMA, at each width that has any (x86)
    dots = [r for r in records if r["bench"] == "dot_peak"]
    assert len(dots) + len(fma) == len(records)
    assert sorted(r["lanes"] for r in dots) == [n for n in peak.host_lanes() if peak.dot_forms(n)]
    for record in dots:
        assert set(record["gmacs"]) == {"fma", *peak.dot_forms(record["lanes"])}
        assert all(g > 0 for g in record["gmacs"].values()) and set(record["vs_fma"]) \
            == set(peak.dot_forms(record["lanes"]))


def test_conv2d():
    records = run_script("conv2d", "--smoke", "--threads", "1")
    layers = [r for r in records if r["bench"] == "conv2d"]
    assert [r["layer"] for r in layers] == ["C2", "D2"]
    assert [r["shape"] for r in layers] == ["8x8 16->16 k3 s1 p1 g1", "8x8 16->16 k3 s2 p1 g16"]
    for record in layers:
        assert record["threads"] == 1 and record["lanes"] >= 8 and record["cpu"]
        assert record["xweave_ms"] > 0 and record["onnxruntime_ms"] > 0
        assert record["ratio_vs_onnxruntime"] > 0 and record["xweave_peak_fraction"] >= 0
    means = {r["group"]: r for r in records if r["bench"] == "conv2d_geomean"}
    assert set(means) == {"resnet", "depthwise"}
    assert all(r["layers"] == 1 and r["ratio_vs_onnxruntime"] > 0 for r in means.values())


def test_matmul():
    records = run_script("matmul", "--smoke", "--threads", "1")
    assert [r["shape"] for r in records] == ["32x32x32", "1x32x40"]
    for record in records:
        assert record["bench"] == "matmul" and record["threads"] == 1 and record["cpu"]
        assert record["ratio_vs_numpy"] > 0 and record["peak_gflops"] > 0


def check_model_records(records, model, threads):
    """`model_e2e.bench_model`'s records of `model`, one per thread count."""
    assert [(r["model"], r["threads"]) for r in records] == [(model, t) for t in threads]
    for record in records:
        assert "error" not in record, record
        assert record["fuse"] is True and record["smoke"] is True and record["cpu"]
        assert record["xweave_ms"] > 0 and record["ort_ms"] > 0 and record["ratio"] > 0
        assert record["peak_bytes"] > 0 and record["max_rel_err"] < 1e-4


def test_model_e2e(shared_cache):
    records = run_script("model_e2e", "--smoke", "--threads", "1,2")
    check_model_records(records, "resnet18", [1, 2])


def test_zoo(shared_cache):
    records = run_script("zoo", "--smoke", "--threads", "1", "--profile-below", "1e9",
                         "--top", "3", "--label", "smoke-test")
    check_model_records([r for r in records if "bench" not in r], "resnet18", [1])
    (mean,) = [r for r in records if r.get("bench") == "zoo_geomean"]
    assert mean["models"] == 1 and mean["min_model"] == "resnet18" and mean["geomean"] > 0
    assert mean["label"] == "smoke-test" and mean["cpu"]
    (profile,) = [r for r in records if r.get("bench") == "zoo_profile"]
    assert profile["model"] == "resnet18" and len(profile["kernels"]) == 3
    assert all(k["calls"] >= 1 and k["ms"] >= 0 for k in profile["kernels"])
    assert 0 < sum(k["percent"] for k in profile["kernels"]) <= 100.1


def test_op_overhead():
    *chains, summary = run_script("op_overhead", "--smoke", "--threads", "1")
    assert [r["ops"] for r in chains] == [1, 2]
    for record in chains:
        assert record["kernels"] == record["ops"] and record["threads"] == 1 and record["cpu"]
        assert record["run_us"] > 0 and record["call_us"] > 0 and record["ort_us"] > 0
    assert summary["summary"] == "per_op" and summary["cpu"]
    assert {"xweave_per_op_us", "ort_per_op_us", "python_call_us"} <= set(summary)


def test_parallel_overhead():
    records = run_script("parallel_overhead", "--smoke")
    assert {r["policy"] for r in records} == {"default"}
    measured = {(r["measurement"], r["threads"]) for r in records}
    assert measured == {("serial_call", 1), ("tiny_kernel_serial", 1)} | {
        (m, t) for m in ("empty_region", "tiny_kernel", "after_gap", "idle_cpu") for t in (1, 2)}
    for record in records:
        assert record["cpu"] and record["repeat"] == 1
        assert record.get("us_per_call", 1) > 0 and record.get("cpu_us_in_20ms", 0) >= 0


def test_shape_sweep():
    matmul, conv = run_script("shape_sweep", "--smoke")
    assert (matmul["kind"], matmul["shape"], matmul["neighbour"]) == \
        ("matmul", "7x32x32", "16x32x32")
    assert (conv["kind"], conv["shape"], conv["neighbour"]) == ("conv1x1", "8x8 3->3", "8x8 16->16")
    for record, reference in ((matmul, "numpy"), (conv, "onnxruntime")):
        assert record["bench"] == "shape_sweep" and record["rounds"] == 1 and record["cpu"]
        assert record["ratio"] > 0 and record["neighbour_ratio"] > 0
        assert record["cliff"] >= 0 and record[f"{reference}_cliff"] >= 0  # 3 of 16 channels: small


def test_tune_conv(tmp_path):
    layer, mean = run_script("tune_conv", "--smoke", "--builders", "0", "--out-dir", str(tmp_path))
    assert (layer["bench"], layer["layer"], layer["shape"]) == \
        ("tune_conv", "C5", "8x8 16->16 k1 s2 p0")
    assert layer["trials"] == 1 and layer["cpu"]
    assert layer["best_gflops"] > 0 and layer["default_gflops"] > 0
    assert layer["ratio_vs_onnxruntime"] > 0 and layer["ratio_vs_default"] > 0
    assert isinstance(layer["meets_paper_target"], bool)
    for tuner in ("lgbm", "ga", "random"):
        run = layer[tuner]
        assert run["errors"] == 0 and run["best_gflops"] > 0, run
        assert len(run["remeasured_best_gflops"]) == len(run["trials_to_95pct"]) == 1
        assert (tmp_path / f"C5-{tuner}-s0.jsonl").read_text().count("\n") == 1
    assert mean["bench"] == "tune_conv_geomean" and mean["layers"] == ["C5"]
    assert mean["ratio_vs_onnxruntime"] > 0
    assert mean["layers_meeting_paper_target"] in ("0/1", "1/1")
    assert (tmp_path / "curves.png").stat().st_size > 0


def test_tuned_model(shared_cache, tmp_path):
    from xweave.autotune.kernel_tasks import extract_tasks
    from xweave.records import target_info

    # A record for the most expensive kernel of the small model, a schedule other than
    # its default, with made-up figures: the tuned build must take it.
    models = load_bench("models")
    tasks = extract_tasks(models.build_small("resnet18"))
    task = max((t for t in tasks if t.is_reduction), key=lambda t: t.flops)
    default = task.default_point()
    point = next(p for p in task.space if task.schedule(p) != task.schedule(default))
    record = {"workload": task.workload_key, "task": task.spec(), "target": target_info(),
              "schedule": task.schedule(point), "point": list(point), "config": {},
              "result": {"costs": [1e-3], "gflops": 9.0, "error_no": 0, "error_msg": "",
                         "build_s": 0.1, "run_s": 0.1, "number": 1},
              "tuner": "test", "trial": 1, "timestamp": 0.0, "version": "test"}
    records = tmp_path / "records.jsonl"
    records.write_text(json.dumps(record) + "\n")
    (result,) = run_script("tuned_model", "--smoke", "--model", "resnet18", "--records",
                           str(records), "--threads", "1")
    assert result["model"] == "resnet18" and result["threads"] == 1 and result["smoke"]
    assert result["kernels_tuned"] >= 1 and result["cpu"]
    assert result["untuned_ms"] > 0 and result["tuned_ms"] > 0 and result["ort_ms"] > 0
    assert result["ratio_untuned"] > 0 and result["ratio_tuned"] > 0
    assert result["tuning_speedup"] > 0 and result["max_rel_err"] < 1e-4


def test_cluster_throughput(capsys):
    records = run_main(capsys, "cluster_throughput", "--smoke")
    assert [(r["mode"], r["phase"]) for r in records] == [
        ("local", "measure"), ("local", "tune"), ("cluster", "measure"), ("cluster", "tune")]
    for record in records:
        assert record["bench"] == "cluster_throughput" and record["workers"] == 1
        assert record["measurements"] == 2 and record["errors"] == 0, record
        assert record["per_second"] > 0 and record["size"] == 8 and record["cpu"]
    assert all(r["best_gflops"] > 0 for r in records if r["phase"] == "tune")


def test_compile_cache(capsys):
    (record,) = run_main(capsys, "compile_cache", "--smoke")
    assert record["model"] == "small_cnn" and record["smoke"] and record["cpu"]
    assert record["outputs_equal"] is True and record["entry_bytes"] > 0
    assert record["compile_s"] > 0 and record["hit_s"] > 0 and record["speedup"] > 0


def test_concurrency(capsys, shared_cache):
    records = run_main(capsys, "concurrency", "--smoke")
    correct = [r for r in records if r["part"] == "correctness"]
    assert correct and all(r["wrong"] == 0 and r["calls"] == 4 and r["cpu"] for r in correct)
    assert correct[0]["threads_per_call"] == 1
    rates = [r for r in records if r["part"] == "throughput"]
    assert {r["runtime"] for r in rates} == {"xweave", "onnxruntime"}
    assert {r["threads_per_call"] for r in rates} == {r["threads_per_call"] for r in correct}
    for record in rates:
        assert record["model"] == "resnet18" and record["smoke"] and record["cpu"]
        assert record["calls_per_s_1_caller"] > 0 and record["calls_per_s_2_callers"] > 0
        assert record["speedup"] > 0 and 0 <= record["overlap_2_callers"] <= 1


def test_contention(capsys, shared_cache):
    *blocks, ratios = run_main(capsys, "contention", "--smoke")
    assert blocks[0]["threads"] == 1 and len(blocks) in (1, 2)  # 1 and every core
    for block in blocks:
        assert block["model"] == "small_cnn" and block["calls"] == 5 and block["busy"] == 1
        assert 0 < block["median_ms"] <= block["p99_ms"] <= block["max_ms"] <= block["total_ms"]
        assert block["cpu"]
    assert ratios["p99_ratio"] > 0 and ratios["total_ratio"] > 0 and ratios["cpu"]


def test_large_buffers(capsys):
    (record,) = run_main(capsys, "large_buffers", "--smoke")
    assert record["size"] == 16 and record["intermediate_bytes"] == 4 * 64 * 16 * 16
    assert record["peak_memory_bytes"] >= record["intermediate_bytes"]
    assert record["finite"] and record["max_rel_err"] < 1e-5 and record["cpu"]


def test_fuzz(capsys):
    # --cli 0: the installed executables are fuzzed by tests/test_fuzz.py already.
    (record,) = run_main(capsys, "fuzz", "--smoke", "--cli", "0")
    assert record["seed"] == 0 and record["cli"]["cases"] == 0
    assert record["ir"]["cases"] >= 4 and record["onnx"]["cases"] == 4
    for part in ("ir", "onnx"):
        counts = record[part]
        assert counts["crash"] == counts["hang"] == 0, record
        assert counts["ok"] + counts["error"] == counts["cases"]


def test_vta_layers(capsys, tmp_path):
    plot = tmp_path / "roofline.png"
    *rows, written = run_main(capsys, "vta_layers", "--smoke", "--plot", str(plot))
    assert [(r["layer"], r["vthreads"]) for r in rows] == \
        [(layer, t) for layer in ("C2", "C5") for t in (1, 2, 4)]
    assert rows[0]["shape"] == "8x8 16->32 k3 s1" and rows[3]["shape"] == "8x8 16->32 k1 s2"
    for row in rows:
        assert row["bit_exact"] and row["cycles"] > 0 and row["cpu"]
        assert 0 < row["utilization"] <= row["compute_ceiling"] <= 1
        assert row["speedup_vs_serialized"] > 0 and row["threads_used"] <= row["vthreads"]
    assert max(r["threads_used"] for r in rows) == 2  # latency hiding did split a layer
    assert written == {"plot": str(plot)} and plot.stat().st_size > 0
