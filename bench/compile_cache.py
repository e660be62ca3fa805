"""The compile cache: `xweave.build` of a model compiled from scratch, then again (a cache
hit), beside opening an onnxruntime session on the same file, in the same process.

    python bench/compile_cache.py                          # resnet50 and a small CNN
    python bench/compile_cache.py --models resnet50 --hits 5
    python bench/compile_cache.py --smoke                  # the small CNN, one hit (tests)

One JSON line per model: `{"model", "compile_s", "hit_s" (median of --hits cached
builds), "ort_session_s" (median of as many session openings), "speedup" (compile_s /
hit_s), "entry_bytes", "outputs_equal", "smoke", "cpu", ...}`. The cache is a fresh temporary
directory (`XWEAVE_CACHE_DIR`), removed afterwards: the user's cache is never touched.
The goal: a cached build in under a second for ResNet-50.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

from common import emit, log, machine

SMALL = "small_cnn"
"""The example model shipped with xweave (`xweave/examples/small_cnn.onnx`)."""


def model_file(name: str, smoke: bool = False) -> Path:
    """The .onnx file of `name` (`SMALL`, or a model of models.py: with `smoke`, scaled down)."""
    if name == SMALL:
        import importlib.resources

        return Path(str(importlib.resources.files("xweave.examples") / "small_cnn.onnx"))
    import models

    return models.model_file(name, smoke)


def measure(name: str, hits: int, smoke: bool = False) -> dict:
    import numpy as np
    import onnxruntime as ort

    import xweave
    from xweave import cache

    path = model_file(name, smoke)
    start = time.perf_counter()
    first = xweave.build(path)
    compile_s = time.perf_counter() - start
    assert cache.stats.stores >= 1, "the first build was not cached"
    hit_times, ort_times = [], []
    hits_before = cache.stats.hits
    for _ in range(hits):  # alternating: a cached build, then an onnxruntime session
        start = time.perf_counter()
        second = xweave.build(path)
        hit_times.append(time.perf_counter() - start)
        start = time.perf_counter()
        ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
        ort_times.append(time.perf_counter() - start)
    assert cache.stats.hits - hits_before == hits, "a second build was not a cache hit"
    rng = np.random.default_rng(0)
    feeds = {s.name: rng.standard_normal(s.shape).astype(s.dtype) for s in first.inputs}
    equal = all(np.array_equal(a, b) for a, b in zip(first.run(**feeds), second.run(**feeds)))
    hit_s = statistics.median(hit_times)
    return {"model": name, "compile_s": round(compile_s, 3), "hit_s": round(hit_s, 3),
            "ort_session_s": round(statistics.median(ort_times), 3),
            "speedup": round(compile_s / hit_s, 1),
            "entry_bytes": sum(st.st_size for _, st in cache.entries()),
            "outputs_equal": equal, "smoke": smoke, **machine()}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", help=f"comma-separated models of bench/models.py, or {SMALL} "
                        f"(default: resnet50,{SMALL}; {SMALL} with --smoke)")
    parser.add_argument("--hits", type=int,
                        help="cached builds timed per model (default 3, 1 with --smoke)")
    parser.add_argument("--smoke", action="store_true",
                        help="models of bench/models.py scaled down (models.SMALL), one cached "
                        "build: checks that the script works (tests), not a figure")
    args = parser.parse_args(argv)
    models = args.models or (SMALL if args.smoke else f"resnet50,{SMALL}")
    hits = args.hits or (1 if args.smoke else 3)
    for name in models.split(","):
        with tempfile.TemporaryDirectory(prefix="xweave-cache-bench-") as folder:
            os.environ["XWEAVE_CACHE_DIR"] = folder
            os.environ.pop("XWEAVE_CACHE", None)
            record = measure(name, hits, args.smoke)
        emit(record)
        log(f"{name} on {record.get('cpu')}: compile {record['compile_s']:.2f} s, cached "
            f"build {record['hit_s']:.3f} s ({record['speedup']}x), onnxruntime session "
            f"{record['ort_session_s']:.3f} s, entry {record['entry_bytes'] / 2**20:.1f} MiB, "
            f"outputs equal: {record['outputs_equal']}")


if __name__ == "__main__":
    main()
