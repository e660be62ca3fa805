"""Dense/matmul FP32: xweave (default schedule) vs numpy `@` (OpenBLAS), same process.

    python bench/matmul.py --threads 1     # JSON lines, one per shape
    python bench/matmul.py --threads 2
    python bench/matmul.py --threads 1 --interleave 9   # on a shared machine, see below
    python bench/matmul.py --interleave 7 --targets "llvm;llvm -mcpu=znver3"   # one kernel per target
    python bench/matmul.py --smoke         # SMOKE_SHAPES, one short run each (tests)

numpy runs OpenBLAS's own kernel for this CPU (bench/common.py removes
OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE from this process); each record names it.

Shapes: square N = 256, 512, 1024, 2048 and the ResNet/BERT shapes MxKxN =
1x512x1000, 128x768x768, 128x768x3072. C = A @ B with A [M, K], B [K, N].

`--interleave N` times N rounds, each a block of xweave calls and a block of numpy
calls, in alternating order (each block after a warm-up of WARM_SECONDS, so that the other library's idle
threads have stopped spinning), and reports the medians and the median of the
per-round ratios: a change of load during the run then hits both sides alike.
With `--quiet`, a round is kept only if other processes used under 2% of the cores
during it (from /proc/stat; Linux), for at most QUIET_WAIT_SECONDS per shape: on a
shared machine a busy neighbour slows a 2-thread run by far more than its share
(OpenBLAS's threads wait for each other).
"""

from __future__ import annotations

import argparse
import sys

from common import (QUIET_WAIT_SECONDS, add_targets_option, emit, interleaved_times, log,
                    machine, median_time, set_threads, targets_of)

SHAPES = [(256, 256, 256), (512, 512, 512), (1024, 1024, 1024), (2048, 2048, 2048),
          (1, 512, 1000), (128, 768, 768), (128, 768, 3072)]
SMOKE_SHAPES = [(32, 32, 32), (1, 32, 40)]
"""A square matmul and a matrix-vector product, tiny: the shapes of a `--smoke` run."""


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--shapes", help="MxKxN,... (default: all)")
    parser.add_argument("--interleave", type=int, default=0, metavar="ROUNDS",
                        help="alternate xweave and numpy for ROUNDS rounds (see above)")
    parser.add_argument("--quiet", action="store_true",
                        help="with --interleave: keep only rounds the rest of the machine left alone")
    add_targets_option(parser, "kernel")
    parser.add_argument("--smoke", action="store_true",
                        help="SMOKE_SHAPES (unless --shapes), one timed run each: checks that "
                        "the script works (tests), not a figure")
    args = parser.parse_args(argv)
    targets = targets_of(args)
    set_threads(args.threads)

    import numpy as np

    from peak import peak_gflops
    from xweave import build_kernel, te

    shapes = [tuple(map(int, s.split("x"))) for s in args.shapes.split(",")] if args.shapes \
        else SMOKE_SHAPES if args.smoke else SHAPES
    peak = peak_gflops(args.threads, smoke=args.smoke)
    repeat = 1 if args.smoke else 7
    rng = np.random.default_rng(0)
    for m, k_extent, n in shapes:
        A = te.placeholder((m, k_extent), "float32", name="A")
        B = te.placeholder((k_extent, n), "float32", name="B")
        k = te.reduce_axis(k_extent, name="k")
        C = te.compute((m, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="matmul")
        kernels = [build_kernel("matmul", [A, B], [C], schedule="default", target=t) for t in targets]
        a = rng.standard_normal((m, k_extent), dtype=np.float32)
        b = rng.standard_normal((k_extent, n), dtype=np.float32)
        out = np.empty((m, n), np.float32)
        for kernel in kernels:
            got = kernel(a, b, out=[out])
            np.testing.assert_allclose(got, a @ b, rtol=1e-3, atol=1e-3 * np.sqrt(k_extent))
        flops = 2.0 * m * n * k_extent
        if args.interleave:
            *xws, nps = interleaved_times([*(lambda kn=kn: kn(a, b, out=[out]) for kn in kernels),
                                           lambda: np.matmul(a, b, out=out)], args.interleave,
                                          quiet=args.quiet)
            if not nps:
                log(f"matmul {m}x{k_extent}x{n}: no quiet round in {QUIET_WAIT_SECONDS:.0f} s")
                continue
            t_np = float(np.median(nps))
        else:
            xws = [[median_time(lambda: kernels[0](a, b, out=[out]), repeat)]]
            t_np = median_time(lambda: np.matmul(a, b, out=out), repeat)
        for target, xw in zip(targets, xws):
            emit_record(args, target, (m, k_extent, n), flops, peak, xw, nps if args.interleave else None, t_np)


def emit_record(args, target, shape, flops, peak, xw, nps, t_np) -> None:
    """One shape's record for one target."""
    import numpy as np

    m, k_extent, n = shape
    t_xw = float(np.median(xw))
    record = {
        "bench": "matmul", "shape": f"{m}x{k_extent}x{n}", "threads": args.threads,
        "target": target,
        "xweave_gflops": round(flops / t_xw / 1e9, 1), "numpy_gflops": round(flops / t_np / 1e9, 1),
        "ratio_vs_numpy": round(t_np / t_xw, 3),
        "xweave_peak_fraction": round(flops / t_xw / 1e9 / peak, 3),
        "numpy_peak_fraction": round(flops / t_np / 1e9 / peak, 3),
        "peak_gflops": round(peak, 1), **machine(),
    }
    if nps is not None:
        record.update({"rounds": len(xw), "median_round_ratio": round(
            float(np.median(np.array(nps) / np.array(xw))), 3)})
    emit(record)
    log(f"matmul {record['shape']} [{target}]: xweave {record['xweave_gflops']} GFLOP/s, "
        f"numpy {record['numpy_gflops']}, ratio {record['ratio_vs_numpy']}"
        + (f" (per round {record['median_round_ratio']})" if args.interleave else ""))


if __name__ == "__main__":
    sys.exit(main())
