"""Conv2d layers, FP32, batch 1: xweave (default schedules) vs onnxruntime, same process.

    python bench/conv2d.py --threads 1      # JSON lines, one per layer
    python bench/conv2d.py --threads 2
    python bench/conv2d.py --layers C2,C6,C9,C12 --winograd   # + Winograd vs direct, blocked
    python bench/conv2d.py --threads 2 --interleave 7   # alternating rounds (shared machine)
    python bench/conv2d.py --interleave 5 --targets "llvm;llvm -mprefer-vector-width=256;llvm -mcpu=znver3"
                                          # one build per target, all timed in the same rounds
    python bench/conv2d.py --smoke        # C2 and D2 scaled down, one short run (tests)

The twelve ResNet-18 layers of the TVM paper's Table 2 (C1-C12) and MobileNet's
depthwise 3x3 layers (D1-D9). Each layer is one ONNX Conv node with random weights.
"""

from __future__ import annotations

import argparse
import math
import sys

from common import (add_targets_option, emit, interleaved_times, log, machine, median_time,
                    set_threads, targets_of)

# name: (H=W, in channels, out channels, kernel, stride, pad, groups)
RESNET18 = {
    "C1": (224, 3, 64, 7, 2, 3, 1), "C2": (56, 64, 64, 3, 1, 1, 1), "C3": (56, 64, 64, 1, 1, 0, 1),
    "C4": (56, 64, 128, 3, 2, 1, 1), "C5": (56, 64, 128, 1, 2, 0, 1), "C6": (28, 128, 128, 3, 1, 1, 1),
    "C7": (28, 128, 256, 3, 2, 1, 1), "C8": (28, 128, 256, 1, 2, 0, 1), "C9": (14, 256, 256, 3, 1, 1, 1),
    "C10": (14, 256, 512, 3, 2, 1, 1), "C11": (14, 256, 512, 1, 2, 0, 1), "C12": (7, 512, 512, 3, 1, 1, 1),
}
DEPTHWISE = {
    "D1": (112, 32, 32, 3, 1, 1, 32), "D2": (112, 64, 64, 3, 2, 1, 64), "D3": (56, 128, 128, 3, 1, 1, 128),
    "D4": (56, 128, 128, 3, 2, 1, 128), "D5": (28, 256, 256, 3, 1, 1, 256), "D6": (28, 256, 256, 3, 2, 1, 256),
    "D7": (14, 512, 512, 3, 1, 1, 512), "D8": (14, 512, 512, 3, 2, 1, 512), "D9": (7, 1024, 1024, 3, 1, 1, 1024),
}
LAYERS = {**RESNET18, **DEPTHWISE}
SMOKE_LAYERS = ("C2", "D2")
"""The layers a `--smoke` run times by default: one of each kind."""


def smoke_layer(spec):
    """Layer `spec` scaled down for a `--smoke` run: at most 8x8 pixels and 16 channels,
    its kernel, stride, padding and kind (dense or depthwise) kept."""
    size, cin, cout, k, stride, pad, groups = spec
    small_in, small_out = min(cin, 16), min(cout, 16)
    return (min(size, 8), small_in, small_out, k, stride, pad, small_in if groups > 1 else 1)


def conv_model(size, cin, cout, k, stride, pad, groups):
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    weight = (rng.standard_normal((cout, cin // groups, k, k)) * 0.1).astype(np.float32)
    node = helper.make_node("Conv", ["x", "w"], ["y"], kernel_shape=[k, k], strides=[stride, stride],
                            pads=[pad] * 4, group=groups)
    graph = helper.make_graph([node], "conv",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, cin, size, size])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              initializer=[numpy_helper.from_array(weight, "w")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model


def chain_model(size, channels):
    """Two 3x3 stride-1 convs: the layout stage runs them on NCHW16c data, where the
    winograd stage applies (a lone conv stays NCHW)."""
    import onnx

    single = conv_model(size, channels, channels, 3, 1, 1, 1)
    graph = single.graph
    second = onnx.helper.make_node("Conv", ["y", "w"], ["z"], kernel_shape=[3, 3], pads=[1] * 4)
    graph.node.append(second)
    graph.output[0].name = "z"
    return single


def blocked_conv_ms(model, x, threads: int, target: str, winograd: bool) -> float:
    """Median ms of one blocked conv of `chain_model`: its kernels' profiled times
    (layout transforms at the ends left out), halved."""
    import numpy as np

    import xweave

    module = xweave.build(model, target=target, threads=threads, profile=True, winograd=winograd)
    profile = module.profile(repeat=20, x=x)
    slots = [i for i, s in enumerate(profile.slots) if not s.kernel.startswith("layout_transform")]
    per_run = profile.samples_ns[:, slots].sum(axis=1)
    return float(np.median(per_run)) / 2 / 1e6


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--layers", help="comma-separated names (default: all)")
    parser.add_argument("--interleave", type=int, default=0, metavar="ROUNDS",
                        help="time xweave and onnxruntime in ROUNDS alternating rounds (each "
                        "block warmed up first) and report the medians and the median "
                        "per-round ratio; default: one block each, xweave first")
    parser.add_argument("--winograd", action="store_true",
                        help="also time each 3x3 stride-1 layer on channel-blocked data (in a "
                        "chain of two) with the winograd stage off and on")
    add_targets_option(parser, "layer")
    parser.add_argument("--smoke", action="store_true",
                        help="each layer scaled down to 8x8 pixels and 16 channels (default "
                        f"layers: {','.join(SMOKE_LAYERS)}), one timed run each: checks that "
                        "the script works (tests), not a figure")
    args = parser.parse_args(argv)
    targets = targets_of(args)
    set_threads(args.threads)

    import numpy as np
    import onnxruntime as ort

    import xweave
    from peak import peak_gflops

    names = args.layers.split(",") if args.layers else list(SMOKE_LAYERS if args.smoke else LAYERS)
    peak = peak_gflops(args.threads, smoke=args.smoke)
    repeat = 1 if args.smoke else 7
    ratios = {(group, target): [] for group in ("resnet", "depthwise") for target in targets}
    for name in names:
        spec = smoke_layer(LAYERS[name]) if args.smoke else LAYERS[name]
        size, cin, cout, k, stride, pad, groups = spec
        model = conv_model(size, cin, cout, k, stride, pad, groups)
        options = ort.SessionOptions()
        options.intra_op_num_threads = args.threads
        options.inter_op_num_threads = 1
        session = ort.InferenceSession(model.SerializeToString(), options)
        x = np.random.default_rng(1).standard_normal((1, cin, size, size), dtype=np.float32)
        (expected,) = session.run(None, {"x": x})
        modules = [xweave.build(model, target=t, threads=args.threads) for t in targets]
        for module in modules:
            np.testing.assert_allclose(module.run(x=x)[0], expected, rtol=1e-3, atol=1e-3)
        out = (size + 2 * pad - k) // stride + 1
        flops = 2.0 * out * out * cout * (cin // groups) * k * k
        if args.interleave:
            *xws, orts = interleaved_times([*(lambda m=m: m.run(x=x) for m in modules),
                                            lambda: session.run(None, {"x": x})], args.interleave)
            t_xws, t_ort = [float(np.median(xw)) for xw in xws], float(np.median(orts))
        else:
            module = modules[0]
            xws = [None]
            t_xws = [float(np.median(module.benchmark({"x": x}, repeat=repeat,
                                                      number=max(1, int(0.05 / 1e-3)))))]
            t_ort = median_time(lambda: session.run(None, {"x": x}), repeat)
        for target, module, xw, t_xw in zip(targets, modules, xws, t_xws):
            report(args, name, target, module, spec, flops, peak, t_xw, t_ort, xw,
                   orts if args.interleave else None, x, ratios)
    for (group, target), values in ratios.items():
        if values:
            emit({"bench": "conv2d_geomean", "group": group, "threads": args.threads,
                  "target": target, "layers": len(values),
                  "ratio_vs_onnxruntime": round(math.exp(sum(map(math.log, values)) / len(values)), 3),
                  "min_ratio": round(min(values), 3), **machine()})


def report(args, name, target, module, spec, flops, peak, t_xw, t_ort, xw, orts, x, ratios):
    """Emit one layer's record for one target."""
    import numpy as np

    size, cin, cout, k, stride, pad, groups = spec
    record = {
        "bench": "conv2d", "layer": name, "threads": args.threads, "target": target,
        "lanes": _lanes(module.target),
        "shape": f"{size}x{size} {cin}->{cout} k{k} s{stride} p{pad} g{groups}",
        "xweave_ms": round(t_xw * 1e3, 3), "onnxruntime_ms": round(t_ort * 1e3, 3),
        "xweave_gflops": round(flops / t_xw / 1e9, 1), "onnxruntime_gflops": round(flops / t_ort / 1e9, 1),
        "ratio_vs_onnxruntime": round(t_ort / t_xw, 3),
        "xweave_peak_fraction": round(flops / t_xw / 1e9 / peak, 3),
        "onnxruntime_peak_fraction": round(flops / t_ort / 1e9 / peak, 3), **machine(),
    }
    if orts is not None:
        record.update({"rounds": len(xw), "median_round_ratio": round(
            float(np.median(np.array(orts) / np.array(xw))), 3)})
    if args.winograd and (k, stride, groups) == (3, 1, 1) and cin == cout:
        chain = chain_model(size, cin)
        direct = blocked_conv_ms(chain, x, args.threads, target, winograd=False)
        wino = blocked_conv_ms(chain, x, args.threads, target, winograd=True)
        record.update({"blocked_direct_ms": round(direct, 3), "blocked_winograd_ms": round(wino, 3),
                       "winograd_speedup": round(direct / wino, 3),
                       "winograd_ratio_vs_onnxruntime": round(t_ort * 1e3 / wino, 3)})
    ratios["depthwise" if groups > 1 else "resnet", target].append(t_ort / t_xw)
    emit(record)
    log(f"{name} {record['shape']} [{target}]: xweave {record['xweave_ms']} ms, onnxruntime "
        f"{record['onnxruntime_ms']} ms, ratio {record['ratio_vs_onnxruntime']}"
        + (f" (per round {record['median_round_ratio']})" if args.interleave else "")
        + (f"; blocked: direct {record['blocked_direct_ms']} ms, winograd "
           f"{record['blocked_winograd_ms']} ms" if "blocked_winograd_ms" in record else ""))


def _lanes(target) -> int:
    from xweave.target import machine_model

    return machine_model(target).lanes


if __name__ == "__main__":
    sys.exit(main())
