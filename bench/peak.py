"""Measures this machine's FP32 FMA peak with a generated kernel (many independent
ymm FMA chains), on 1 thread and on every core. The other benchmarks report their
figures as a fraction of it.

    python bench/peak.py            # JSON lines: {"bench": "fma_peak", "threads": 1, "gflops": ...}
"""

from __future__ import annotations

import ctypes
import os
import threading
import time

from common import emit, machine

ACCUMULATORS = 12  # independent chains: enough to cover FMA latency x throughput
LANES = 8  # <8 x float> = one ymm register


def _kernel():
    import llvmlite.ir as ir

    from xweave.runtime.jit import compile_llvm, load_object

    f32 = ir.FloatType()
    vec = ir.VectorType(f32, LANES)
    i64 = ir.IntType(64)
    module = ir.Module("peak")
    fma = ir.Function(module, ir.FunctionType(vec, [vec, vec, vec]), "llvm.fma.v8f32")
    fn = ir.Function(module, ir.FunctionType(f32, [i64]), "fma_loop")
    entry = fn.append_basic_block("entry")
    body = fn.append_basic_block("body")
    done = fn.append_basic_block("done")
    b = ir.IRBuilder(entry)
    a = ir.Constant(vec, [1.0000001] * LANES)
    c = ir.Constant(vec, [1e-7] * LANES)
    b.branch(body)
    b.position_at_start(body)
    i = b.phi(i64)
    accs = [b.phi(vec) for _ in range(ACCUMULATORS)]
    new = [b.call(fma, [acc, a, c]) for acc in accs]
    nxt = b.add(i, ir.Constant(i64, 1))
    i.add_incoming(ir.Constant(i64, 0), entry)
    i.add_incoming(nxt, body)
    for k, (acc, n) in enumerate(zip(accs, new)):
        acc.add_incoming(ir.Constant(vec, [float(k)] * LANES), entry)
        acc.add_incoming(n, body)
    b.cbranch(b.icmp_signed("<", nxt, fn.args[0]), body, done)
    b.position_at_start(done)
    total = new[0]
    for n in new[1:]:
        total = b.fadd(total, n)
    b.ret(b.extract_element(total, ir.Constant(ir.IntType(32), 0)))
    compiled = compile_llvm(str(module))
    engine = load_object(compiled.object_bytes, {})
    return engine, engine.get_function("fma_loop", [ctypes.c_int64], ctypes.c_float)


def measure(threads: int, iterations: int = 20_000_000, repeat: int = 5) -> float:
    """Best GFLOP/s of `threads` concurrent FMA loops (ctypes releases the GIL)."""
    engine, fn = _kernel()
    flops = iterations * ACCUMULATORS * LANES * 2 * threads
    best = 0.0
    for _ in range(repeat):
        workers = [threading.Thread(target=fn, args=(iterations,)) for _ in range(threads)]
        start = time.perf_counter()
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        best = max(best, flops / (time.perf_counter() - start) / 1e9)
    return best


def peak_gflops(threads: int) -> float:
    return measure(threads)


if __name__ == "__main__":
    for threads in sorted({1, os.cpu_count() or 1}):
        emit({"bench": "fma_peak", "threads": threads, "gflops": round(measure(threads), 1),
              **machine()})
