"""Measures this machine's FP32 FMA peak with a generated kernel, at each vector width
the CPU runs (8 lanes: ymm; 16 lanes: zmm, with AVX-512), on 1 thread and on every
core. The other benchmarks report their figures as a fraction of the best.

    python bench/peak.py     # JSON lines: {"bench": "fma_peak", "threads": 1, "lanes": 16,
                             #              "chains": 16, "gflops": ..., "cpu": ...}
    python bench/peak.py --smoke   # short loops, one round (tests): not a figure

On x86 it measures the integer dot products of quantized kernels the same way, 1
thread, as multiply-adds per second beside the FMA's (`dot_peak` records, `gmacs`;
`fma` is the FP32 FMA at 2 flops a multiply-add): `vpmaddwd` (int16 pairs, the exact
form `loop.dot` uses without VNNI), `vpmaddubsw` + `vpmaddwd` by ones (u8 x s8, whose
16-bit pair sums saturate: onnxruntime's default int8 kernels on such CPUs) and
`vpdpbusd` (VNNI) where the CPU has it. Their ratio to `fma` bounds what int8 can gain
over float32 on the machine.

A loop of independent FMA chains saturates the FMA pipes only with at least pipes x
latency chains in flight (Zen 3/4: 2 x 4 at 256 bits; Zen 5: 2 full-width pipes at
512 bits): each width is timed with a sweep of chain counts that fit its register
file, and the best is its peak; the widths and chain counts are timed in turn, in
alternating rounds. Zen 4 runs a 512-bit FMA as two halves, so both widths
peak alike there; Zen 5 and server Intel cores double the flops at 16 lanes.
"""

from __future__ import annotations

import argparse
import ctypes
import functools
import os
import threading
import time

from common import emit, machine

CHAINS = (8, 12, 16, 24)
"""Independent FMA chains tried per width (those that fit the registers, with two to spare)."""
ITERATIONS = 10_000_000
"""Loop iterations of one timed run (each runs `chains` FMAs of one vector width)."""
SMOKE_ITERATIONS = 10_000
"""Loop iterations of a `--smoke` run: the kernels compile and run, the figure means nothing."""


DOT_FORMS = {
    # form: (multiply-adds per i32 lane of a step, {i32 lanes: intrinsics of a step})
    "vpmaddwd": (2, {8: ("llvm.x86.avx2.pmadd.wd",), 16: ("llvm.x86.avx512.pmaddw.d.512",)}),
    "vpmaddubsw": (4, {8: ("llvm.x86.avx2.pmadd.ub.sw", "llvm.x86.avx2.pmadd.wd"),
                       16: ("llvm.x86.avx512.pmaddubs.w.512", "llvm.x86.avx512.pmaddw.d.512")}),
    "vpdpbusd": (4, {8: ("llvm.x86.avx512.vpdpbusd.256",), 16: ("llvm.x86.avx512.vpdpbusd.512",)}),
}
"""The integer dot products measured beside the FMA (x86 only)."""


def _step(b, module, form: str, lanes: int, acc):
    """One chain's step: the FMA, or `acc + dot(acc's bytes, weights)` (the data is
    the accumulator itself, so that nothing is hoisted out of the loop)."""
    import llvmlite.ir as ir

    i8, i16, i32 = ir.IntType(8), ir.IntType(16), ir.IntType(32)
    words, pairs, quads = (ir.VectorType(i32, lanes), ir.VectorType(i16, 2 * lanes),
                           ir.VectorType(i8, 4 * lanes))

    def call(name, args, result):
        fn = module.globals.get(name) or ir.Function(
            module, ir.FunctionType(result, [a.type for a in args]), name)
        return b.call(fn, args)

    if form == "fma":
        vec = acc.type
        return call(f"llvm.fma.v{lanes}f32", [acc, ir.Constant(vec, [1.0000001] * lanes),
                                              ir.Constant(vec, [1e-7] * lanes)], vec)
    names = DOT_FORMS[form][1][lanes]
    if form == "vpmaddwd":
        return b.add(acc, call(names[0], [b.bitcast(acc, pairs), ir.Constant(pairs, [3] * 2 * lanes)], words))
    if form == "vpmaddubsw":
        sums = call(names[0], [b.bitcast(acc, quads), ir.Constant(quads, [3] * 4 * lanes)], pairs)
        return b.add(acc, call(names[1], [sums, ir.Constant(pairs, [1] * 2 * lanes)], words))
    return call(names[0], [acc, acc, ir.Constant(words, [0x03030303] * lanes)], words)


@functools.cache
def _kernel(lanes: int, chains: int, form: str = "fma"):
    import llvmlite.ir as ir

    from xweave.lowering.llvm_codegen import compile_llvm

    from xweave.runtime.jit import load_object

    vec = ir.VectorType(ir.FloatType() if form == "fma" else ir.IntType(32), lanes)
    i64 = ir.IntType(64)
    module = ir.Module("peak")
    fn = ir.Function(module, ir.FunctionType(vec.element, [i64]), "fma_loop")
    entry = fn.append_basic_block("entry")
    body = fn.append_basic_block("body")
    done = fn.append_basic_block("done")
    b = ir.IRBuilder(entry)
    b.branch(body)
    b.position_at_start(body)
    i = b.phi(i64)
    accs = [b.phi(vec) for _ in range(chains)]
    new = [_step(b, module, form, lanes, acc) for acc in accs]
    nxt = b.add(i, ir.Constant(i64, 1))
    i.add_incoming(ir.Constant(i64, 0), entry)
    i.add_incoming(nxt, body)
    for k, (acc, n) in enumerate(zip(accs, new)):
        acc.add_incoming(ir.Constant(vec, [float(k) if form == "fma" else k] * lanes), entry)
        acc.add_incoming(n, body)
    b.cbranch(b.icmp_signed("<", nxt, fn.args[0]), body, done)
    b.position_at_start(done)
    total = new[0]
    for n in new[1:]:
        total = b.fadd(total, n) if form == "fma" else b.add(total, n)
    b.ret(b.extract_element(total, ir.Constant(ir.IntType(32), 0)))
    bits = 32 * lanes
    compiled = compile_llvm(str(module), target=f"llvm -mprefer-vector-width={bits}")
    engine = load_object(compiled.object_bytes, {})
    restype = ctypes.c_float if form == "fma" else ctypes.c_int32
    return engine, engine.get_function("fma_loop", [ctypes.c_int64], restype)


def host_lanes() -> list[int]:
    """The f32 vector widths of 8 lanes or more that this CPU runs."""
    from xweave.target import machine_model

    return [n for n in machine_model("llvm").legal_lanes if n >= 8]


def dot_forms(lanes: int) -> list[str]:
    """The integer dot products of `lanes` i32 lanes this CPU runs (none off x86)."""
    from xweave.target import machine_model

    machine = machine_model("llvm")
    features = machine.features
    if machine.arch != "x86_64" or "avx2" not in features \
            or (lanes == 16 and "avx512bw" not in features):
        return []
    vnni = "avx512vnni" in features if lanes == 16 else (
        "avxvnni" in features or {"avx512vnni", "avx512vl"} <= features)
    return ["vpmaddwd", "vpmaddubsw"] + (["vpdpbusd"] if vnni else [])


def dot_sweep(iterations: int = ITERATIONS, repeat: int = 5) -> dict[tuple[str, int], float]:
    """Best 10^9 multiply-adds/s of the FMA and of each integer dot product, on 1
    thread, at every width and chain count (the best chain count kept), in rounds
    that visit them all in turn."""
    configs = [(form, lanes, chains) for lanes in host_lanes()
               for form in ["fma", *dot_forms(lanes)] for chains in _chain_counts(lanes)]
    best: dict[tuple[str, int], float] = {}
    for r in range(repeat):
        for form, lanes, chains in configs if r % 2 == 0 else configs[::-1]:
            _, fn = _kernel(lanes, chains, form)
            start = time.perf_counter()
            fn(iterations)
            per_step = 1 if form == "fma" else DOT_FORMS[form][0]
            rate = iterations * chains * lanes * per_step / (time.perf_counter() - start) / 1e9
            best[form, lanes] = max(best.get((form, lanes), 0.0), rate)
    return best


def _chain_counts(lanes: int) -> list[int]:
    from xweave.target import machine_model

    registers = machine_model("llvm").vector_registers
    return [n for n in CHAINS if n + 2 <= registers]


def _once(threads: int, lanes: int, chains: int, iterations: int) -> float:
    """GFLOP/s of one run of `threads` concurrent FMA loops (ctypes releases the GIL)."""
    _, fn = _kernel(lanes, chains)
    flops = iterations * chains * lanes * 2 * threads
    workers = [threading.Thread(target=fn, args=(iterations,)) for _ in range(threads)]
    start = time.perf_counter()
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    return flops / (time.perf_counter() - start) / 1e9


def sweep(threads: int, iterations: int = ITERATIONS,
          repeat: int = 5) -> dict[tuple[int, int], float]:
    """Best GFLOP/s of every (lanes, chains) this CPU runs, over `repeat` rounds that
    visit them all in turn (alternating order), so a busy neighbour hits all alike."""
    configs = [(lanes, chains) for lanes in host_lanes() for chains in _chain_counts(lanes)]
    best: dict[tuple[int, int], float] = {}
    for r in range(repeat):
        for config in configs if r % 2 == 0 else configs[::-1]:
            best[config] = max(best.get(config, 0.0), _once(threads, *config, iterations))
    return best


def measure(threads: int, lanes: int = 8, chains: int = 12,
            iterations: int = ITERATIONS, repeat: int = 5) -> float:
    """Best GFLOP/s of `threads` concurrent FMA loops of one width and chain count."""
    return max(_once(threads, lanes, chains, iterations) for _ in range(repeat))


@functools.cache
def peak_gflops(threads: int, smoke: bool = False) -> float:
    """The best GFLOP/s of any width (what fractions of peak are relative to); with
    `smoke`, from short loops in one round (a benchmark's `--smoke` run: no figure)."""
    if smoke:
        return max(sweep(threads, iterations=SMOKE_ITERATIONS, repeat=1).values())
    return max(sweep(threads, repeat=3).values())


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--smoke", action="store_true",
                        help=f"{SMOKE_ITERATIONS} iterations per run and one round instead of "
                        f"{ITERATIONS} and 5: checks that the kernels build and run (tests), "
                        "not a figure")
    args = parser.parse_args(argv)
    iterations, repeat = (SMOKE_ITERATIONS, 1) if args.smoke else (ITERATIONS, 5)
    for threads in sorted({1, os.cpu_count() or 1}):
        results = sweep(threads, iterations, repeat)
        for lanes in host_lanes():
            runs = {chains: round(g, 1) for (n, chains), g in results.items() if n == lanes}
            best = max(runs, key=runs.__getitem__)
            emit({"bench": "fma_peak", "threads": threads, "lanes": lanes, "chains": best,
                  "gflops": runs[best], "sweep": runs, **machine()})
    dots = dot_sweep(iterations, repeat)
    for lanes in host_lanes():
        forms = {form: round(g, 1) for (form, n), g in dots.items() if n == lanes}
        if len(forms) > 1:
            emit({"bench": "dot_peak", "threads": 1, "lanes": lanes, "gmacs": forms,
                  "vs_fma": {f: round(g / forms["fma"], 2) for f, g in forms.items() if f != "fma"},
                  **machine()})


if __name__ == "__main__":
    main()
