"""Compile time: every architecture of models.py built from scratch (no compile cache),
each in a fresh process, with the time of every stage, the peak memory of the build, and
an onnxruntime session opened on the same file.

    python bench/compile_time.py                          # every model of models.py
    python bench/compile_time.py --models resnet18,resnet50
    python bench/compile_time.py --smoke                  # the models scaled down (tests)

One JSON line per model: `{"model", "compile_s" (the build, wall time), "stages" (seconds
of each top-level step of the timing report: import, graph-opt, ..., codegen), "kernels"
(distinct kernels scheduled), "peak_rss_mb" (the build process's peak resident memory,
Python and the model's import included), "weights_mb" (the model's initializers),
"ort_session_s" (median of 3 onnxruntime sessions opened on the file, in the same
process, after the build), "jobs" (compile processes), "cpu", ...}`. Each model is built
in a process of its own so that the peak memory is that build's alone.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import emit, log, machine


def measure_one(name: str, smoke: bool) -> dict:
    """Build model `name` from scratch in this process and measure it."""
    import onnx
    import onnxruntime as ort

    import models
    import xweave
    from xweave import timing
    from xweave.parallel import compile_jobs

    with tempfile.TemporaryDirectory(prefix="xweave-compile-time-") as folder:
        if smoke:
            path = Path(folder) / f"{name}.onnx"
            onnx.save(models.build_small(name), path)
        else:
            path = models.model_path(name)
        model = onnx.load(str(path), load_external_data=False)
        weights = sum(onnx.numpy_helper.to_array(t).nbytes for t in model.graph.initializer)
        del model
        start = time.perf_counter()
        with timing.collect() as timer:
            module = xweave.build(path, cache=False)
        compile_s = time.perf_counter() - start
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        sessions = []
        for _ in range(3):
            start = time.perf_counter()
            ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
            sessions.append(time.perf_counter() - start)
    stages = {node.name: round(node.seconds, 3) for node in timer.root.children.values()}
    scheduled = timer.root.children.get("scheduled")
    schedule = scheduled.children.get("schedule-kernels") if scheduled else None
    kernels = schedule.children.get("kernels") if schedule else None
    del module
    return {"model": name, "smoke": smoke, "compile_s": round(compile_s, 3), "stages": stages,
            "kernels": kernels.count if kernels else 0,
            "peak_rss_mb": round(peak / 2**20, 1), "weights_mb": round(weights / 2**20, 1),
            "ort_session_s": round(statistics.median(sessions), 3),
            "jobs": compile_jobs(), **machine()}


def measure(name: str, smoke: bool) -> dict:
    """`measure_one` in a fresh process (a cold start; its own peak memory)."""
    proc = subprocess.run([sys.executable, __file__, "--one", name, *(["--smoke"] if smoke else [])],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{name}: the build failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    import models

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", help="comma-separated names (default: all of models.py)")
    parser.add_argument("--smoke", action="store_true",
                        help="the models scaled down (models.SMALL): a quick run, not a figure")
    parser.add_argument("--one", help=argparse.SUPPRESS)  # the child process's model
    args = parser.parse_args()
    if args.one:
        print(json.dumps(measure_one(args.one, args.smoke)))
        return
    names = args.models.split(",") if args.models else list(models.MODELS)
    for name in names:
        record = measure(name, args.smoke)
        emit(record)
        top = sorted(record["stages"].items(), key=lambda kv: -kv[1])[:3]
        log(f"{name} on {record.get('cpu')}: {record['compile_s']:.2f} s "
            f"({', '.join(f'{k} {v:.2f}' for k, v in top)}), {record['kernels']} kernels, "
            f"peak {record['peak_rss_mb']:.0f} MB for {record['weights_mb']:.0f} MB of weights, "
            f"onnxruntime session {record['ort_session_s']:.3f} s")


if __name__ == "__main__":
    os.environ.pop("XWEAVE_CACHE", None)
    main()
