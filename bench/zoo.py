"""The zoo of architectures against onnxruntime, 1 and 2 threads, with per-kernel
profiles of the slowest ones.

    python bench/zoo.py                              # every model of models.py, 1 and 2 threads
    python bench/zoo.py --models vit,shufflenet_v2 --threads 1 --rounds 5
    python bench/zoo.py --profile-below 0.8          # profiles of models under 0.8x
    PYTHONPATH=/path/to/other/checkout python bench/zoo.py --label before
    python bench/zoo.py --smoke                      # model_e2e's SMOKE_MODELS scaled down (tests)

Each model is timed as `model_e2e.py` times it (alternating rounds of xweave and
onnxruntime, medians; one JSON record per model and thread count, `ratio` =
onnxruntime ms / xweave ms), then a `zoo_geomean` record per thread count (geomean
and lowest ratio). Models whose ratio is below --profile-below get a profiling build
and a `zoo_profile` record of their --top kernels (ms per call, share, GFLOP/s).
`--label` tags the summary and profile records: to compare two builds, run this script once per build
(e.g. another checkout first on PYTHONPATH) and compare the ratios, each measured
against onnxruntime in its own process.
"""

from __future__ import annotations

import argparse
import math
import sys

from common import emit, log, machine, set_threads


def profile_model(name: str, threads: int, top: int, smoke: bool = False) -> dict:
    """The `top` kernels of a profiling build of model `name` (with `smoke`, scaled down,
    one profiled run) by time."""
    import onnx

    import models
    import xweave
    from xweave.runtime.threads import set_num_threads

    path = models.model_file(name, smoke)
    feeds = models.random_inputs(onnx.load(str(path), load_external_data=False))
    module = xweave.build(path, profile=True)
    set_num_threads(module, threads)
    profile = module.profile(repeat=1 if smoke else 10, **feeds)
    rows = [{"kernel": r.kernel, "calls": r.calls, "ms": round(r.median_ms, 3),
             "percent": round(r.percent, 1),
             "gflops": None if r.gflops is None else round(r.gflops, 1)}
            for r in profile.by_kernel[:top]]
    return {"bench": "zoo_profile", "model": name, "threads": threads, "kernels": rows}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", help="comma-separated names (default: all of models.py)")
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--rounds", type=int,
                        help="alternating rounds of xweave and onnxruntime (default 5, "
                        "1 with --smoke)")
    parser.add_argument("--repeat", type=int,
                        help="timed runs per round (a median; default 5, 1 with --smoke)")
    parser.add_argument("--profile-below", type=float, default=0.0,
                        help="profile the models whose 1-thread ratio is below this")
    parser.add_argument("--top", type=int, default=8, help="kernels per profile")
    parser.add_argument("--label", default="", help="a tag for every record (e.g. before/after)")
    parser.add_argument("--smoke", action="store_true",
                        help="the models scaled down (models.SMALL; default: model_e2e's "
                        "SMOKE_MODELS), one round of one run: checks that the script works "
                        "(tests), not a figure")
    args = parser.parse_args(argv)
    if args.rounds is None:
        args.rounds = 1 if args.smoke else 5
    if args.repeat is None:
        args.repeat = 1 if args.smoke else 5
    threads_list = [int(t) for t in args.threads.split(",")]
    set_threads(max(threads_list))

    import models
    from model_e2e import SMOKE_MODELS, bench_model

    names = args.models.split(",") if args.models else \
        list(SMOKE_MODELS if args.smoke else models.MODELS)
    log(f"machine: {machine()}")
    ratios: dict[int, dict[str, float]] = {t: {} for t in threads_list}
    for name in names:
        for record in bench_model(name, threads_list, [True], args.repeat, rounds=args.rounds,
                                  smoke=args.smoke):
            if "ratio" in record:
                ratios[record["threads"]][name] = record["ratio"]
    for threads, by_model in ratios.items():
        if by_model:
            values = list(by_model.values())
            worst = min(by_model, key=by_model.get)
            emit({"bench": "zoo_geomean", "label": args.label, "threads": threads,
                  "models": len(values),
                  "geomean": round(math.exp(sum(map(math.log, values)) / len(values)), 3),
                  "min": round(by_model[worst], 3), "min_model": worst, "smoke": args.smoke,
                  **machine()})
    slow = [n for n, r in ratios.get(threads_list[0], {}).items() if r < args.profile_below]
    for name in slow:
        emit({**profile_model(name, threads_list[0], args.top, args.smoke), "label": args.label,
              "smoke": args.smoke})


if __name__ == "__main__":
    sys.exit(main())
