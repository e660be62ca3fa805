"""A model whose intermediate buffer passes 4 GiB, checked against numpy.

    python bench/large_buffers.py                 # 1x3x4160x4160: a 4.4 GB intermediate
    python bench/large_buffers.py --size 3000     # smaller (past 2 GiB only)
    python bench/large_buffers.py --smoke         # 16x16: the same checks, nothing large (tests)

conv 3x3 (3 -> 64 channels, pad 1) + relu, then conv 1x1 (64 -> 4): the 64-channel
intermediate (4 bytes x 64 x size^2: 4.43 GB at 4160) lives in the arena, so its last
rows sit past 4 GiB. The output's first, middle and last rows are compared with numpy
(computed on the matching input rows only). Prints one JSON line: the arena's size,
the compile and run times, and the worst relative error over the checked rows. Needs
about 6 GB of free memory at the default size.
"""

from __future__ import annotations

import argparse
import time

from common import emit, log, machine


def model(size: int, mid: int = 64, out: int = 4):
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    w1 = rng.standard_normal((mid, 3, 3, 3)).astype(np.float32) / 5
    b1 = rng.standard_normal(mid).astype(np.float32) / 10
    w2 = rng.standard_normal((out, mid, 1, 1)).astype(np.float32) / 8
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("Conv", ["r1", "w2"], ["y"])]
    graph = helper.make_graph(
        nodes, "big", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, size, size])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, out, size, size])],
        [numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(b1, "b1"),
         numpy_helper.from_array(w2, "w2")])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    return m, (w1, b1, w2)


def reference_rows(x, weights, r0: int, r1: int):
    """The model's output rows [r0, r1) in numpy (float64), from input rows r0-1..r1."""
    import numpy as np

    w1, b1, w2 = weights
    size = x.shape[3]
    lo, hi = max(r0 - 1, 0), min(r1 + 1, size)
    band = np.zeros((3, r1 - r0 + 2, size + 2))
    band[:, lo - (r0 - 1):hi - (r0 - 1), 1:-1] = x[0, :, lo:hi]
    acc = np.zeros((w1.shape[0], r1 - r0, size))
    for dy in range(3):
        for dx in range(3):
            acc += np.einsum("oc,chw->ohw", w1[:, :, dy, dx],
                             band[:, dy:dy + r1 - r0, dx:dx + size])
    hidden = np.maximum(acc + b1[:, None, None], 0)
    return np.einsum("oc,chw->ohw", w2[:, :, 0, 0], hidden)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", type=int, help="image height and width (default 4160, 16 "
                        "with --smoke)")
    parser.add_argument("--rows", type=int, default=4, help="rows checked at each place")
    parser.add_argument("--smoke", action="store_true",
                        help="a 16x16 image: checks that the script works (tests), passes "
                        "no 4 GiB")
    args = parser.parse_args(argv)
    if args.size is None:
        args.size = 16 if args.smoke else 4160

    import numpy as np

    import xweave

    onnx_model, weights = model(args.size)
    start = time.perf_counter()
    module = xweave.build(onnx_model)
    compile_s = time.perf_counter() - start
    log(f"arena {module.peak_memory_bytes / 2**30:.2f} GiB, compiled in {compile_s:.1f} s")
    x = np.random.default_rng(1).standard_normal((1, 3, args.size, args.size)).astype(np.float32)
    start = time.perf_counter()
    (y,) = module.run(x=x)
    run_s = time.perf_counter() - start
    worst = 0.0
    n = args.size
    for r0 in (0, n // 2, n - args.rows):
        expected = reference_rows(x, weights, r0, r0 + args.rows)
        got = y[0, :, r0:r0 + args.rows]
        worst = max(worst, float(np.abs(got - expected).max() / np.abs(expected).max()))
    emit({"size": args.size, "peak_memory_bytes": module.peak_memory_bytes,
          "intermediate_bytes": 4 * 64 * n * n, "compile_s": compile_s, "run_s": run_s,
          "max_rel_err": worst, "finite": bool(np.isfinite(y).all()), **machine()})


if __name__ == "__main__":
    main()
