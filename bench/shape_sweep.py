"""Shape cliffs: each shape beside the nearest one whose dimensions are multiples of 16,
and beside numpy (matmul) or onnxruntime (conv), all in the same alternating rounds.

    python bench/shape_sweep.py                      # matmuls and convs, 1 thread
    python bench/shape_sweep.py --part matmul --rounds 5
    python bench/shape_sweep.py --part conv --channels 58,116 --sizes 28
    python bench/shape_sweep.py --smoke              # one tiny shape of each part (tests)

Matmul: M x 768 x 768 (C = A @ B, B a constant of the kernel's arguments) for M in
MATMUL_M (primes such as 13, 97, 197 among them), each with the nearest multiple of 16.
Conv: 1x1 and 3x3 (stride 1, same padding) C -> C convs, batch 1, on CONV_SIZES
images, for C in CONV_CHANNELS, each with the nearest multiple of 16 (a lone conv
stays NCHW; within a network the layout stage blocks its channels).

One JSON line per shape: GFLOP/s of xweave and of the reference for the shape and for
its multiple-of-16 neighbour, `cliff` = xweave's GFLOP/s at the shape / at the
neighbour (the issue's target: >= 0.8), `<reference>_cliff` the same for the reference
(below 0.8 for both: the shape's arithmetic intensity, not a schedule falling back), and
`ratio` = reference time / xweave time.
Medians over --rounds; every record names the CPU.
"""

from __future__ import annotations

import argparse
import sys

from common import WARM_SECONDS, emit, interleaved_times, log, machine, set_threads

MATMUL_M = (1, 7, 13, 31, 48, 97, 127, 197, 257, 383, 509, 512)
MATMUL_KN = 768
CONV_CHANNELS = (3, 24, 40, 58, 96, 116, 232, 1000)
CONV_SIZES = (56, 14)
SMOKE = {"m": (7,), "kn": 32, "channels": (3,), "sizes": (8,), "kernels": (1,)}
"""A `--smoke` run's shapes: a 7x32x32 matmul and a 1x1 3-channel conv on 8x8, each
beside its multiple-of-16 neighbour."""


def nearest16(n: int) -> int:
    """The nearest multiple of 16 (at least 16; upwards on ties)."""
    return max(16, 16 * ((n + 8) // 16))


def matmul_kernel(m: int, k: int, n: int):
    from xweave import build_kernel, te

    a = te.placeholder((m, k), "float32", name="A")
    b = te.placeholder((k, n), "float32", name="B")
    r = te.reduce_axis(k, name="k")
    c = te.compute((m, n), lambda i, j: te.sum(a[i, r] * b[r, j], axis=r), name="matmul")
    return build_kernel("matmul", [a, b], [c], schedule="default")


def sweep_matmul(ms, rounds: int, kn: int = MATMUL_KN,
                 warm_seconds: float = WARM_SECONDS) -> None:
    import numpy as np

    rng = np.random.default_rng(0)
    k = n = kn
    for m in ms:
        shapes = [m] if nearest16(m) == m else [m, nearest16(m)]
        fns, gflop = [], []
        for mm in shapes:
            a = rng.standard_normal((mm, k), dtype=np.float32)
            b = rng.standard_normal((k, n), dtype=np.float32)
            out = np.empty((mm, n), np.float32)
            kernel = matmul_kernel(mm, k, n)
            np.testing.assert_allclose(kernel(a, b, out=[out]), a @ b, rtol=1e-3, atol=1e-2)
            fns += [lambda kn=kernel, a=a, b=b, o=out: kn(a, b, out=[o]),
                    lambda a=a, b=b, o=out: np.matmul(a, b, out=o)]
            gflop.append(2.0 * mm * k * n / 1e9)
        times = interleaved_times(fns, rounds, warm_seconds=warm_seconds)
        _report("matmul", f"{m}x{k}x{n}", f"{shapes[-1]}x{k}x{n}", gflop, times, "numpy")


def conv_model(size: int, channels: int, k: int):
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    w = (rng.standard_normal((channels, channels, k, k)) / np.sqrt(channels * k * k)).astype(np.float32)
    node = helper.make_node("Conv", ["x", "w"], ["y"], kernel_shape=[k, k], pads=[k // 2] * 4)
    graph = helper.make_graph(
        [node], "conv", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, channels, size, size])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        initializer=[numpy_helper.from_array(w, "w")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model


def sweep_conv(channels, sizes, kernels, rounds: int, threads: int,
               warm_seconds: float = WARM_SECONDS) -> None:
    import numpy as np
    import onnxruntime as ort

    import xweave

    for k in kernels:
        for size in sizes:
            for c in channels:
                if c * c * k * k * size * size > 2e9:
                    continue  # 3x3 1000 -> 1000 on 56x56: 28 GFLOP, not a layer anyone runs
                shapes = [c] if nearest16(c) == c else [c, nearest16(c)]
                fns, gflop = [], []
                for cc in shapes:
                    model = conv_model(size, cc, k)
                    options = ort.SessionOptions()
                    options.intra_op_num_threads = threads
                    options.inter_op_num_threads = 1
                    session = ort.InferenceSession(model.SerializeToString(), options,
                                                   providers=["CPUExecutionProvider"])
                    module = xweave.build(model, threads=threads)
                    x = np.random.default_rng(1).standard_normal((1, cc, size, size), dtype=np.float32)
                    np.testing.assert_allclose(module.run(x=x)[0], session.run(None, {"x": x})[0],
                                               rtol=1e-3, atol=1e-3)
                    fns += [lambda m=module, x=x: m.run(x=x),
                            lambda s=session, x=x: s.run(None, {"x": x})]
                    gflop.append(2.0 * cc * cc * k * k * size * size / 1e9)
                times = interleaved_times(fns, rounds, warm_seconds=warm_seconds)
                _report(f"conv{k}x{k}", f"{size}x{size} {c}->{c}",
                        f"{size}x{size} {shapes[-1]}->{shapes[-1]}", gflop, times, "onnxruntime")


def _report(kind: str, shape: str, neighbour: str, gflop, times, reference: str) -> None:
    import numpy as np

    med = [float(np.median(t)) for t in times]
    record = {"bench": "shape_sweep", "kind": kind, "shape": shape,
              "xweave_gflops": round(gflop[0] / med[0], 1),
              f"{reference}_gflops": round(gflop[0] / med[1], 1),
              "ratio": round(med[1] / med[0], 3), "rounds": len(times[0])}
    if len(gflop) > 1:
        record.update({"neighbour": neighbour,
                       "neighbour_xweave_gflops": round(gflop[1] / med[2], 1),
                       f"neighbour_{reference}_gflops": round(gflop[1] / med[3], 1),
                       "neighbour_ratio": round(med[3] / med[2], 3),
                       "cliff": round((gflop[0] / med[0]) / (gflop[1] / med[2]), 3),
                       f"{reference}_cliff": round((gflop[0] / med[1]) / (gflop[1] / med[3]), 3)})
    emit({**record, **machine()})
    log(f"{kind} {shape}: xweave {record['xweave_gflops']} GFLOP/s, {reference} "
        f"{record[f'{reference}_gflops']}, ratio {record['ratio']}"
        + (f"; {neighbour}: xweave {record['neighbour_xweave_gflops']}, cliff {record['cliff']}"
           if len(gflop) > 1 else ""))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--part", choices=("all", "matmul", "conv"), default="all")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--rounds", type=int, help="alternating rounds (default 5, 1 with --smoke)")
    parser.add_argument("--m", help="comma-separated matmul row counts (default: MATMUL_M)")
    parser.add_argument("--channels", help="comma-separated conv channels (default: CONV_CHANNELS)")
    parser.add_argument("--sizes", help="comma-separated conv image sizes (default: CONV_SIZES)")
    parser.add_argument("--kernels", help="conv kernel sizes (default: 1,3)")
    parser.add_argument("--smoke", action="store_true",
                        help="the shapes of SMOKE (unless given), one round without warm-up: "
                        "checks that the script works (tests), not a figure")
    args = parser.parse_args(argv)
    set_threads(args.threads)
    log(f"machine: {machine()}")
    ints = lambda text, default: [int(v) for v in text.split(",")] if text else list(default)  # noqa: E731
    rounds = args.rounds or (1 if args.smoke else 5)
    warm = 0.0 if args.smoke else WARM_SECONDS
    smoke = SMOKE if args.smoke else {}
    if args.part in ("all", "matmul"):
        sweep_matmul(ints(args.m, smoke.get("m", MATMUL_M)), rounds,
                     smoke.get("kn", MATMUL_KN), warm)
    if args.part in ("all", "conv"):
        sweep_conv(ints(args.channels, smoke.get("channels", CONV_CHANNELS)),
                   ints(args.sizes, smoke.get("sizes", CONV_SIZES)),
                   ints(args.kernels, smoke.get("kernels", (1, 3))), rounds, args.threads, warm)


if __name__ == "__main__":
    sys.exit(main())
