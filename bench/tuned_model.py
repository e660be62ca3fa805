"""A tuned build beside the untuned one and onnxruntime, same process.

    python bench/tuned_model.py --model resnet18 --records r18.jsonl --threads 1
    python bench/tuned_model.py --smoke --model resnet18 --records small.jsonl   # tests

Builds MODEL twice, with default schedules and with `tuning_records` (the best record
per kernel, applied only where it beat the measured default by `schedules.tuned.MIN_GAIN`),
then times them in `--rounds` alternating rounds (a median of `--repeat` runs each,
so a change of load hits both alike), then onnxruntime. One JSON line:
`{"model", "threads", "untuned_ms", "tuned_ms", "ort_ms", "tuning_speedup",
"ratio_untuned", "ratio_tuned", "kernels_tuned", "max_rel_err", "smoke", "cpu", ...}`; times
are medians over the rounds, ratios are onnxruntime's time over xweave's (above 1: xweave
faster). The tuned build is never taken from the compile cache: which kernels took a
record (`kernels_tuned`) is learnt while compiling.
"""

from __future__ import annotations

import argparse
import statistics

from common import emit, log, machine, median_time, set_threads


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="resnet18", help="a name of models.py")
    parser.add_argument("--records", required=True, help="tuning records (.jsonl)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--rounds", type=int,
                        help="alternating rounds (default 7, 1 with --smoke)")
    parser.add_argument("--repeat", type=int,
                        help="timed runs per round (default 5, 1 with --smoke)")
    parser.add_argument("--smoke", action="store_true",
                        help="the model scaled down (models.SMALL; records of its kernels), "
                        "one round of one run: checks that the script works (tests), not a "
                        "figure")
    args = parser.parse_args(argv)
    if args.rounds is None:
        args.rounds = 1 if args.smoke else 7
    if args.repeat is None:
        args.repeat = 1 if args.smoke else 5
    set_threads(args.threads)

    import onnx

    import models
    import xweave
    from model_e2e import max_rel_err, ort_session
    from xweave.runtime.threads import set_num_threads
    from xweave.schedules.tuned import tuned_schedules

    path = models.model_file(args.model, args.smoke)
    feeds = models.random_inputs(onnx.load(str(path), load_external_data=False))
    log(f"machine: {machine()}")
    untuned = xweave.build(path)
    tuned = xweave.build(path, tuning_records=args.records, cache=False)
    applied = len(tuned_schedules(args.records, tuned.target).applied)
    samples: dict[str, list[float]] = {"untuned": [], "tuned": []}
    for module in (untuned, tuned):
        set_num_threads(module, args.threads)
    for _ in range(args.rounds):
        for name, module in (("untuned", untuned), ("tuned", tuned)):
            samples[name].append(median_time(lambda: module.run(**feeds), args.repeat))
    got = tuned.run(**feeds)
    session = ort_session(path, args.threads)
    expected = session.run(None, feeds)
    ort_s = median_time(lambda: session.run(None, feeds), args.rounds * args.repeat)
    untuned_s = statistics.median(samples["untuned"])
    tuned_s = statistics.median(samples["tuned"])
    record = {
        "model": args.model, "threads": args.threads,
        "untuned_ms": round(untuned_s * 1e3, 3), "tuned_ms": round(tuned_s * 1e3, 3),
        "ort_ms": round(ort_s * 1e3, 3),
        "tuning_speedup": round(untuned_s / tuned_s, 3),
        "ratio_untuned": round(ort_s / untuned_s, 3), "ratio_tuned": round(ort_s / tuned_s, 3),
        "kernels_tuned": applied,
        "max_rel_err": float(f"{max_rel_err(got, expected):.3g}"), "smoke": args.smoke,
        **machine(),
    }
    emit(record)
    log(f"{args.model} threads={args.threads}: untuned {record['untuned_ms']:.2f} ms, "
        f"tuned {record['tuned_ms']:.2f} ms ({record['tuning_speedup']:.3f}x, "
        f"{applied} kernel(s) tuned), "
        f"onnxruntime {record['ort_ms']:.2f} ms; ratio to onnxruntime "
        f"{record['ratio_untuned']:.2f} -> {record['ratio_tuned']:.2f}")


if __name__ == "__main__":
    main()
