"""ResNet-18 conv layers C2-C12 (int8) on the simulated VTA: latency hiding figures.

For each layer and at most 1 (serialized), 2 and 4 virtual threads (the schedule may
use fewer when smaller tiles cost more DRAM traffic than the overlap gains; reported as
`threads_used`): simulated cycles, compute
utilization (GEMM core busy / total cycles) and its ceiling for the program (the GEMM
share of the compute module's busy time: what perfect load/store overlap would give),
the gain over the serialized program,
bit-exactness against numpy, and the wall time of numpy's reference beside the
simulation (the simulator is a model, not a speed claim). Optionally a roofline-style
plot: utilization-weighted attained GOPS vs arithmetic intensity (MACs per DRAM byte),
with the compute peak and the DRAM-bandwidth roof of the default config.

    python bench/vta_layers.py [--layers C2,C6] [--threads 1,2,4] [--plot vta_roofline.png]
    python bench/vta_layers.py --smoke    # C2 and C5 scaled down (tests)

Prints one JSON line per (layer, threads).
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import common  # before numpy: removes the OpenBLAS overrides
import numpy as np

from xweave.accel.vta.config import DEFAULT
from xweave.accel.vta.layers import conv2d_int8, plan_conv2d, reference_conv2d_int8

# name: (H=W, IC, OC, K, stride), "SAME" padding (tvm-facts, Table 2 of the paper)
LAYERS = {
    "C2": (56, 64, 64, 3, 1), "C3": (56, 64, 64, 1, 1), "C4": (56, 64, 128, 3, 2),
    "C5": (56, 64, 128, 1, 2), "C6": (28, 128, 128, 3, 1), "C7": (28, 128, 256, 3, 2),
    "C8": (28, 128, 256, 1, 2), "C9": (14, 256, 256, 3, 1), "C10": (14, 256, 512, 3, 2),
    "C11": (14, 256, 512, 1, 2), "C12": (7, 512, 512, 3, 1),
}  # fmt: skip
SMOKE_LAYERS = ("C2", "C5")
"""The layers a `--smoke` run simulates by default: a 3x3 and a strided 1x1."""


def smoke_layer(spec):
    """Layer `spec` scaled down for a `--smoke` run: at most 8x8 pixels, 16 input and 32
    output channels (two GEMM blocks: a 3x3 layer still splits into 2 virtual threads),
    its kernel and stride kept."""
    hw, ic, oc, k, s = spec
    return (min(hw, 8), min(ic, 16), min(oc, 32), k, s)


def run_layer(name: str, threads: list[int], seed: int = 0, smoke: bool = False) -> list[dict]:
    hw, ic, oc, k, s = smoke_layer(LAYERS[name]) if smoke else LAYERS[name]
    pad = k // 2
    rng = np.random.default_rng(seed)
    data = rng.integers(-128, 128, (1, ic, hw, hw)).astype(np.int8)
    weight = rng.integers(-128, 128, (oc, ic, k, k)).astype(np.int8)
    bias = rng.integers(-(1 << 16), 1 << 16, oc).astype(np.int32)
    shift = 12
    t0 = time.perf_counter()
    ref = reference_conv2d_int8(data, weight, bias, s, pad, shift, True)
    numpy_s = time.perf_counter() - t0
    rows, base = [], None
    for t in threads:
        t0 = time.perf_counter()
        out, rep = conv2d_int8(data, weight, bias, s, pad, shift, True, virtual_threads=t)
        wall = time.perf_counter() - t0
        if base is None:
            base = rep.total_cycles
        b = rep.bytes_moved
        dram = b["inp"] + b["wgt"] + b["acc"] + b["uop"] + b["out"]
        plan = plan_conv2d(data.shape, weight.shape, True, s, pad, shift, True, virtual_threads=t)
        rows.append({
            "layer": name, "shape": f"{hw}x{hw} {ic}->{oc} k{k} s{s}", "vthreads": t,
            "threads_used": plan.threads, "tile": f"tob{plan.tob} toh{plan.toh} tcb{plan.tcb}",
            "cycles": rep.total_cycles, "utilization": round(rep.compute_utilization, 4),
            "speedup_vs_serialized": round(base / rep.total_cycles, 3),
            "gops_at_clock": round(rep.gops, 2), "macs": rep.mac_count, "dram_bytes": dram,
            "intensity_macs_per_byte": round(rep.mac_count / dram, 2),
            # The best this program can reach if loads and stores hid completely: the
            # GEMM share of the compute module's own busy time (the rest is the
            # accumulator reset, the ALU epilogue and instruction overheads).
            "compute_ceiling": round(rep.gemm_counter / rep.busy_cycles["compute"], 4),
            "of_ceiling": round(rep.compute_utilization * rep.busy_cycles["compute"] / rep.gemm_counter, 4),
            "bit_exact": bool(np.array_equal(out, ref)),
            "busy": rep.busy_cycles, "sim_wall_s": round(wall, 2), "numpy_ref_s": round(numpy_s, 3),
            **common.machine(),
        })
        print(json.dumps(rows[-1]), flush=True)
    return rows


def plot(rows: list[dict], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    c = DEFAULT
    peak = 2 * c.macs_per_cycle * c.clock_mhz * 1e6 / 1e9  # GOPS
    bw = c.dram_bytes_per_cycle * c.clock_mhz * 1e6 / 1e9  # GB/s
    fig, ax = plt.subplots(figsize=(7, 4.5))
    xs = np.logspace(0, 3, 200)
    ax.plot(xs, np.minimum(peak, 2 * xs * bw), "k-", lw=1, label="roofline (peak / DRAM)")
    markers = {1: ("o", "serialized"), 2: ("s", "2 virtual threads"), 4: ("^", "4 virtual threads")}
    for t, (m, label) in markers.items():
        pts = [r for r in rows if r["vthreads"] == t]
        if pts:
            ax.scatter([r["intensity_macs_per_byte"] for r in pts], [r["gops_at_clock"] for r in pts],
                       marker=m, label=label)
    for r in rows:
        if r["vthreads"] == 1:
            ax.annotate(r["layer"], (r["intensity_macs_per_byte"], r["gops_at_clock"]), fontsize=7,
                        xytext=(3, -9), textcoords="offset points")
    ax.set_xscale("log")
    ax.set_xlabel("arithmetic intensity (MACs per DRAM byte)")
    ax.set_ylabel(f"attained GOPS at {c.clock_mhz:g} MHz")
    ax.set_title("ResNet-18 C2-C12 int8 on the simulated VTA (1x16x16)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--layers", help="comma-separated names (default: all; "
                   f"{','.join(SMOKE_LAYERS)} with --smoke)")
    p.add_argument("--threads", default="1,2,4", help="virtual thread counts")
    p.add_argument("--plot", default=None, help="write a roofline-style PNG here")
    p.add_argument("--smoke", action="store_true",
                   help="the layers scaled down to 8x8 pixels and 16 channels: checks that "
                   "the script works (tests), not a figure")
    a = p.parse_args(argv)
    threads = [int(t) for t in a.threads.split(",")]
    layers = a.layers.split(",") if a.layers else list(SMOKE_LAYERS if a.smoke else LAYERS)
    rows = []
    for name in layers:
        rows.extend(run_layer(name, threads, smoke=a.smoke))
    if a.plot:
        plot(rows, a.plot)
        print(json.dumps({"plot": a.plot}))
    return 0 if all(r["bit_exact"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
