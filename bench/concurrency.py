"""One module called from several threads at once: correctness and throughput.

    python bench/concurrency.py                                # both parts
    python bench/concurrency.py --part correctness --calls 1000
    python bench/concurrency.py --part throughput --model resnet18 --rounds 5
    python bench/concurrency.py --smoke                        # a few calls (tests)

* correctness: `--callers` threads x `--calls` calls each of one loaded module (the
  example CNN), every call on its own input, compared with a single-threaded run of
  the same inputs: `wrong` counts the calls whose output differs in any bit (both
  with the default thread count and with 1 thread per call);
* throughput: `--model` (bench/models.py; resnet18 by default), calls per second
  with 1 and with 2 callers, each doing `--per-caller` calls, in alternating rounds
  (medians): once with 1 thread per call (a server's setting: parallelism across
  requests) and once with the default thread count (the runtime caps each call's
  threads by the free cores, and concurrent callers count as busy ones).
  `speedup` is the 2-caller throughput over the 1-caller throughput, `overlap_2_callers`
  the share of the time a call runs during which the other caller's runs too (1:
  nothing serializes them; the speedup then depends on free cores: compare the load
  average); onnxruntime's `session.run` on the same model is measured the same way.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from common import emit, log, machine

PAUSE_S = 0.05


def call_inputs(module, count: int) -> list[dict]:
    """`count` random inputs of `module` (seeded), one per call."""
    import numpy as np

    rng = np.random.default_rng(0)
    return [{s.name: rng.standard_normal(s.shape).astype(s.dtype) for s in module.inputs}
            for _ in range(count)]


def wrong_results(module, inputs, reference, callers: int) -> int:
    """How many calls of `module`, one per input of `inputs`, made from `callers` threads
    at once, give an output that differs in any bit from `reference` (the outputs of
    one call at a time)."""
    import numpy as np

    def part(k: int) -> int:
        wrong = 0
        for i in range(k, len(inputs), callers):
            out = module.run(**inputs[i])
            wrong += any(not np.array_equal(a, b) for a, b in zip(out, reference[i]))
        return wrong

    with ThreadPoolExecutor(callers) as pool:
        return sum(pool.map(part, range(callers)))


def correctness(callers: int, calls: int, smoke: bool = False) -> None:
    import onnx

    import xweave
    from xweave.runtime.threads import available_cores, set_num_threads

    module = xweave.build(onnx.load(Path(__file__).resolve().parents[1] / "examples" / "small_cnn.onnx"))
    inputs = call_inputs(module, callers * calls)
    for threads in sorted({1, available_cores()}):
        set_num_threads(module, threads)
        reference = [module.run(**x) for x in inputs]
        start = time.perf_counter()
        wrong = wrong_results(module, inputs, reference, callers)
        emit({"part": "correctness", "model": "small_cnn", "threads_per_call": threads,
              "callers": callers, "calls": callers * calls, "wrong": wrong,
              "seconds": time.perf_counter() - start, "smoke": smoke, **machine()})


def _throughput(run, callers: int, per_caller: int) -> tuple[float, float]:
    """(calls per second, overlap) of `callers` threads each calling `run` `per_caller`
    times; overlap: the share of the time some call runs during which 2 or more do
    (1.0: the calls never wait for each other, 0: they are serialized)."""
    spans: list[tuple[float, float]] = []

    def part(_):
        for _ in range(per_caller):
            begin = time.perf_counter()
            run()
            spans.append((begin, time.perf_counter()))

    start = time.perf_counter()
    with ThreadPoolExecutor(callers) as pool:
        list(pool.map(part, range(callers)))
    rate = callers * per_caller / (time.perf_counter() - start)
    events = sorted([(b, 1) for b, _ in spans] + [(e, -1) for _, e in spans])
    busy = both = 0.0
    inflight, last = 0, events[0][0]
    for t, step in events:
        busy += (t - last) * (inflight >= 1)
        both += (t - last) * (inflight >= 2)
        inflight, last = inflight + step, t
    return rate, both / busy if busy else 0.0


def throughput(name: str, per_caller: int, rounds: int, smoke: bool = False) -> None:
    import onnx
    import onnxruntime as ort

    import models
    import xweave
    from xweave.runtime.threads import available_cores, set_num_threads

    path = models.model_file(name, smoke)
    feeds = models.random_inputs(onnx.load(str(path), load_external_data=False))
    module = xweave.build(path)
    for threads in sorted({1, available_cores()}):
        set_num_threads(module, threads)
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        runners = {"xweave": lambda: module.run(**feeds),
                   "onnxruntime": lambda: session.run(None, feeds)}
        for runner in runners.values():
            runner()
            runner()
        samples = {(k, c): [] for k in runners for c in (1, 2)}
        overlaps = {k: [] for k in runners}
        for r in range(rounds):
            order = [(k, c) for k in runners for c in (1, 2)]
            for key in (order if r % 2 == 0 else order[::-1]):
                time.sleep(PAUSE_S)
                rate, overlap = _throughput(runners[key[0]], key[1], per_caller)
                samples[key].append(rate)
                if key[1] == 2:
                    overlaps[key[0]].append(overlap)
            log(f"threads {threads} round {r}: " + ", ".join(
                f"{k}x{c} {v[-1]:.1f}/s" for (k, c), v in samples.items()))
        for runner in runners:
            one = statistics.median(samples[(runner, 1)])
            two = statistics.median(samples[(runner, 2)])
            emit({"part": "throughput", "model": name, "runtime": runner,
                  "threads_per_call": threads, "calls_per_s_1_caller": one,
                  "calls_per_s_2_callers": two, "speedup": two / one,
                  "overlap_2_callers": statistics.median(overlaps[runner]),
                  "load_before": os.getloadavg()[0],
                  "rounds": rounds, "per_caller": per_caller, "smoke": smoke, **machine()})


SMOKE = {"callers": 2, "calls": 2, "per_caller": 2, "rounds": 1}
"""The counts of a `--smoke` run (each taken unless given)."""
DEFAULTS = {"callers": 4, "calls": 1000, "per_caller": 20, "rounds": 5}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--part", choices=("correctness", "throughput", "both"), default="both")
    parser.add_argument("--callers", type=int, help="threads calling at once (correctness; "
                        "default 4)")
    parser.add_argument("--calls", type=int, help="calls per caller (correctness; default 1000)")
    parser.add_argument("--model", default="resnet18", help="a model of bench/models.py "
                        "(throughput)")
    parser.add_argument("--per-caller", type=int,
                        help="calls per caller and round (throughput; default 20)")
    parser.add_argument("--rounds", type=int, help="alternating rounds (throughput; default 5)")
    parser.add_argument("--smoke", action="store_true",
                        help="SMOKE's counts and the model scaled down (models.SMALL): checks "
                        "that the script works (tests), not a figure")
    args = parser.parse_args(argv)
    for key, value in {**DEFAULTS, **(SMOKE if args.smoke else {})}.items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    if args.part in ("correctness", "both"):
        correctness(args.callers, args.calls, args.smoke)
    if args.part in ("throughput", "both"):
        throughput(args.model, args.per_caller, args.rounds, args.smoke)


if __name__ == "__main__":
    main()
