"""Per-op overhead of a model call: chains of n tiny ops, xweave vs onnxruntime.

    python bench/op_overhead.py --threads 1
    python bench/op_overhead.py --threads 2 --ops 1,16,48
    python bench/op_overhead.py --smoke     # chains of 1 and 2 ops, one run (tests)

Model n is `y = x + c1 + c2 + ... + cn` on a 1x16 tensor, one Add node per step, so
the work is nothing and the time is the cost of running n ops. Fusion (if the build
has it) is turned off so each node stays one kernel; `kernels` counts the kernel calls
in `@main`. One JSON line per n: `run_us` (`module.run`, the Python API), `call_us`
(the compiled `main` alone, `module.benchmark`) and `ort_us` (`session.run`); the last
line gives the slopes: microseconds per extra op (`*_per_op_us`) and the fixed cost of
a call from Python (`run_us - call_us` at the smallest n).
"""

from __future__ import annotations

import argparse
import inspect
import re
import tempfile
from pathlib import Path

from common import emit, log, machine, median_time, set_threads


def chain_model(n: int, width: int = 16):
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    nodes, inits, x = [], [], "x"
    for i in range(n):
        c = numpy_helper.from_array(np.full((1, width), 0.5 + i, np.float32), f"c{i}")
        inits.append(c)
        nodes.append(helper.make_node("Add", [x, f"c{i}"], [f"a{i}"]))
        x = f"a{i}"
    graph = helper.make_graph(
        nodes, f"chain{n}", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, width])],
        [helper.make_tensor_value_info(x, TensorProto.FLOAT, [1, width])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--ops", help="chain lengths (comma-separated; default 1,16,32, "
                        "1,2 with --smoke)")
    parser.add_argument("--repeat", type=int, help="timed runs per figure (a median; "
                        "default 7, 1 with --smoke)")
    parser.add_argument("--smoke", action="store_true",
                        help="short chains, one run each: checks that the script works "
                        "(tests), not a figure")
    args = parser.parse_args(argv)
    if args.ops is None:
        args.ops = "1,2" if args.smoke else "1,16,32"
    if args.repeat is None:
        args.repeat = 1 if args.smoke else 7
    set_threads(args.threads)

    import numpy as np
    import onnxruntime as ort

    import xweave
    from xweave import driver

    options = {"threads": args.threads}
    if "fuse" in inspect.signature(driver.build).parameters:
        options["fuse"] = False
    log(f"machine: {machine()}")
    results = []
    for n in (int(v) for v in args.ops.split(",")):
        model = chain_model(n)
        x = np.random.default_rng(0).standard_normal((1, 16)).astype(np.float32)
        with tempfile.TemporaryDirectory() as dump:
            module = xweave.build(model, dump_ir=dump, **options)
            loop_stage = next(Path(dump).glob("*-loop.mlir")).read_text()
        kernels = len(re.findall(r"\bfunc\.call\b", loop_stage))
        so = ort.SessionOptions()
        so.intra_op_num_threads = args.threads
        so.inter_op_num_threads = 1
        session = ort.InferenceSession(model.SerializeToString(), so,
                                       providers=["CPUExecutionProvider"])
        (expected,) = session.run(None, {"x": x})
        (got,) = module.run(x=x)
        np.testing.assert_allclose(got, expected, rtol=1e-5)
        run_s = median_time(lambda: module.run(x=x), args.repeat)
        call_s = float(np.median(module.benchmark({"x": x}, repeat=args.repeat, number=200)))
        ort_s = median_time(lambda: session.run(None, {"x": x}), args.repeat)
        record = {"ops": n, "kernels": kernels, "threads": args.threads,
                  "run_us": round(run_s * 1e6, 2), "call_us": round(call_s * 1e6, 3),
                  "ort_us": round(ort_s * 1e6, 2), **machine()}
        results.append(record)
        emit(record)
        log(f"n={n:4d} kernels={kernels:4d}  run {record['run_us']:8.2f} us  "
            f"main {record['call_us']:8.3f} us  ort {record['ort_us']:8.2f} us")
    if len(results) >= 2:
        lo, hi = results[0], results[-1]
        extra = max(hi["kernels"] - lo["kernels"], 1)
        summary = {
            "summary": "per_op", "threads": args.threads,
            "xweave_per_op_us": round((hi["call_us"] - lo["call_us"]) / extra, 3),
            "ort_per_op_us": round((hi["ort_us"] - lo["ort_us"]) / (hi["ops"] - lo["ops"]), 3),
            "python_call_us": round(lo["run_us"] - lo["call_us"], 2), **machine(),
        }
        emit(summary)
        log(f"per op: xweave {summary['xweave_per_op_us']} us, onnxruntime "
            f"{summary['ort_per_op_us']} us; module.run() adds {summary['python_call_us']} us")


if __name__ == "__main__":
    main()
