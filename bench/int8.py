"""int8 inference on the CPU: xweave int8 vs onnxruntime int8 vs xweave float32.

    python bench/int8.py                          # resnet50, mobilenet_v2, bert_encoder
    python bench/int8.py --models resnet50 --rounds 11
    python bench/int8.py --smoke                  # tiny models, 2 rounds (a test runs it)

The models of models.py, quantized as onnxruntime quantizes them: the CNNs by
`quantize_static` (QDQ, per-channel int8 weights, int8 activations, calibrated on
`CALIBRATION_SAMPLES` random inputs: `xweave.quantizer.quantize_model`, what
`xweave quantize` runs), BERT by `quantize_dynamic` (int8 weights, activations
quantized at run time by DynamicQuantizeLinear). Cached in bench/models/ as
<name>.int8.onnx next to the float model.

Five runners, timed in one process on 1 thread, in alternating rounds (the order flips
every round; medians over the rounds of the median of `--repeat` runs):

* `xweave_int8`: `xweave.build` of the int8 file;
* `ort_int8`: onnxruntime's session on the same file, its default x86 kernels (u8 x s8
  products summed by `vpmaddubsw`, whose 16-bit pair sums saturate on CPUs without
  VNNI: its results then differ from the operators' definition);
* `ort_int8_exact`: the same with the session option `session.x64quantprecision=1`
  (weights shifted to u8, exact u8 x u8 kernels): the reference xweave is compared with;
* `xweave_f32`, `ort_f32`: the float model.

One JSON line per model: the five medians (`*_ms`), `vs_ort_int8`,
`vs_ort_int8_exact`, `vs_xweave_f32` (how many times faster xweave int8 is), the
outputs' agreement with `ort_int8_exact` and `ort_int8` (`diff_steps`: the largest
difference in steps of the output's quantization, the scale of the last
DequantizeLinear, for a model whose output is dequantized; else `max_rel_err`, relative
to the largest output; `diff_fraction`: the share of output elements that differ), and
the machine (`machine()`: LLVM's name of the CPU, and /proc/cpuinfo's).
"""

from __future__ import annotations

import argparse
import logging
import statistics
import tempfile
import time
from pathlib import Path

from common import emit, log, machine, median_time, set_threads

MODELS = ("resnet50", "mobilenet_v2", "bert_encoder")
"""The models of the int8 targets; BERT is quantized dynamically, the CNNs statically."""

DYNAMIC = {"bert_encoder"}

SMOKE = {
    "resnet50": dict(image=32, width=4, classes=10, blocks=(2,)),
    "bert_encoder": dict(layers=1, seq=8, hidden=32, heads=4, ffn=64),
}
"""`--smoke`: tiny versions (a bottleneck with a projection shortcut and one with the
identity; one encoder layer)."""

CALIBRATION_SAMPLES = 4

RUNNERS = ("xweave_int8", "ort_int8", "ort_int8_exact", "xweave_f32", "ort_f32")

PAUSE_S = 0.02
"""Seconds between timed blocks: libgomp's and onnxruntime's idle threads stop spinning."""


def cpu_model() -> str | None:
    """The CPU's marketing name (/proc/cpuinfo), if the OS says it."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def quantized(name: str, source: Path, directory: Path) -> Path:
    """The int8 form of float model `source` (cached in `directory`)."""
    import numpy as np
    import onnx

    import models

    path = directory / f"{name}.int8.onnx"
    if path.exists():
        return path
    partial = path.with_name(path.name + ".partial")
    if name in DYNAMIC:
        from onnxruntime.quantization import QuantType, quantize_dynamic

        logging.disable(logging.WARNING)  # "consider pre-processing": BERT has no batch norms
        try:
            quantize_dynamic(str(source), str(partial), weight_type=QuantType.QInt8)
        finally:
            logging.disable(logging.NOTSET)
    else:
        from xweave.quantizer import quantize_model

        model = onnx.load(str(source))
        samples = [models.random_inputs(model, seed=100 + i) for i in range(CALIBRATION_SAMPLES)]
        calibration = {k: np.stack([s[k] for s in samples]) for k in samples[0]}
        quantize_model(source, calibration, partial)
    partial.replace(path)
    return path


def output_step(path: Path) -> float | None:
    """The scale of the DequantizeLinear producing the model's first output, if one does."""
    import onnx
    from onnx import numpy_helper

    model = onnx.load(str(path))
    output = model.graph.output[0].name
    node = next((n for n in model.graph.node if output in n.output), None)
    if node is None or node.op_type != "DequantizeLinear":
        return None
    scales = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    scale = scales.get(node.input[1])
    return float(scale.max()) if scale is not None else None


def agreement(got, expected, step: float | None) -> dict:
    """How `got` (xweave's outputs) differs from `expected` (onnxruntime's)."""
    import numpy as np

    g, e = np.asarray(got[0], np.float64), np.asarray(expected[0], np.float64)
    diff = np.abs(g - e)
    if step is not None:
        return {"diff_steps": round(float(diff.max()) / step, 2),
                "diff_fraction": round(float(np.mean(diff > step / 2)), 5)}
    scale = max(float(np.abs(e).max()), 1e-30)
    return {"max_rel_err": float(f"{float(diff.max()) / scale:.3g}"),
            "diff_fraction": round(float(np.mean(diff > 1e-5 * scale)), 5)}


def ort_session(path: Path, exact: bool = False):
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    if exact:
        options.add_session_config_entry("session.x64quantprecision", "1")
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def bench_model(name: str, source: Path, directory: Path, rounds: int, repeat: int,
                min_seconds: float = 0.05) -> dict:
    """Time model `name` (float file `source`) with every runner; returns its record."""
    import onnx

    import models
    import xweave

    int8 = quantized(name, source, directory)
    feeds = models.random_inputs(onnx.load(str(source)), seed=7)
    start = time.perf_counter()
    xweave_int8 = xweave.build(int8, threads=1)
    compile_s = time.perf_counter() - start
    xweave_f32 = xweave.build(source, threads=1)
    sessions = {"ort_int8": ort_session(int8), "ort_int8_exact": ort_session(int8, exact=True),
                "ort_f32": ort_session(source)}
    run = {"xweave_int8": lambda: xweave_int8.run(**feeds),
           "xweave_f32": lambda: xweave_f32.run(**feeds),
           **{k: (lambda s=s: s.run(None, feeds)) for k, s in sessions.items()}}
    samples: dict[str, list[float]] = {k: [] for k in RUNNERS}
    for r in range(rounds):
        for k in RUNNERS if r % 2 == 0 else RUNNERS[::-1]:
            samples[k].append(median_time(run[k], repeat, min_seconds))
            time.sleep(PAUSE_S)
    ms = {k: statistics.median(v) * 1e3 for k, v in samples.items()}
    got = run["xweave_int8"]()
    step = output_step(int8)
    record = {"model": name, "threads": 1,
              **{f"{k}_ms": round(v, 3) for k, v in ms.items()},
              "vs_ort_int8": round(ms["ort_int8"] / ms["xweave_int8"], 3),
              "vs_ort_int8_exact": round(ms["ort_int8_exact"] / ms["xweave_int8"], 3),
              "vs_xweave_f32": round(ms["xweave_f32"] / ms["xweave_int8"], 3),
              "vs_exact": agreement(got, run["ort_int8_exact"](), step),
              "vs_default": agreement(got, run["ort_int8"](), step),
              "compile_s": round(compile_s, 1), "rounds": rounds,
              **machine(), "cpu_model": cpu_model()}
    return record


def main(argv: list[str] | None = None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", help=f"comma-separated names (default: {','.join(MODELS)})")
    parser.add_argument("--rounds", type=int, default=7, help="alternating rounds (medians over them)")
    parser.add_argument("--repeat", type=int, default=5, help="timed runs per round (a median)")
    parser.add_argument("--smoke", action="store_true",
                        help="tiny models, 2 rounds of 1 run: checks that the benchmark runs")
    args = parser.parse_args(argv)
    set_threads(1)
    import models

    names = args.models.split(",") if args.models else list(SMOKE if args.smoke else MODELS)
    unknown = [n for n in names if n not in MODELS]
    if unknown:
        parser.error(f"unknown model(s) {', '.join(unknown)} (known: {', '.join(MODELS)})")
    log(f"machine: {machine()} ({cpu_model()})")
    records = []
    with tempfile.TemporaryDirectory(prefix="xweave-int8-") as tmp:
        for name in names:
            if args.smoke:
                import onnx

                source = Path(tmp) / f"{name}.onnx"
                onnx.save(models.build(name, **SMOKE[name]), source)
                record = bench_model(name, source, Path(tmp), rounds=2, repeat=1, min_seconds=0.0)
            else:
                source = models.model_path(name)
                record = bench_model(name, source, models.CACHE, args.rounds, args.repeat)
            emit(record)
            records.append(record)
            log(f"{name:14s} xweave int8 {record['xweave_int8_ms']:8.2f} ms | onnxruntime int8 "
                f"{record['ort_int8_ms']:8.2f} ms ({record['vs_ort_int8']:.2f}x), exact "
                f"{record['ort_int8_exact_ms']:8.2f} ms ({record['vs_ort_int8_exact']:.2f}x) | "
                f"xweave f32 {record['xweave_f32_ms']:8.2f} ms ({record['vs_xweave_f32']:.2f}x) | "
                f"vs exact {record['vs_exact']}")
    return records


if __name__ == "__main__":
    main()
