"""Per-call overhead of xweave's parallel loops (libgomp regions called from JIT code).

    python bench/parallel_overhead.py [--repeat 7] [--policies default,libgomp,passive]
    python bench/parallel_overhead.py --smoke    # the default policy, one run (tests)

Prints JSON lines, one object per measurement, and never asserts on time:

* `empty_region`: a kernel whose only loop is an empty `parallel` loop, per call (µs),
  for 1 and 2 threads. With 1 thread the compiled code skips libgomp entirely (it calls
  the loop body directly), so that row is the plain ctypes call;
* `serial_call`: the same kernel with a serial loop (the ctypes call alone), for reference;
* `tiny_kernel`: y = 2x + 1 over 64x64 floats, rows in parallel, per call (µs), 1 vs 2
  threads, and the serial kernel;
* `after_gap`: the empty region called after 1 ms of idle time (workers asleep: wake-up cost);
* `idle_cpu`: CPU time (µs) the process burns in the 20 ms after one call: idle libgomp
  workers spinning instead of sleeping (steals a core from Python).

libgomp reads its wait policy once, when it is loaded, so every policy runs in a fresh
process (`--child`): `default` is what xweave sets up (`runtime/threads.py`: `GOMP_SPINCOUNT`
made explicit unless the user chose a policy), `libgomp` is libgomp's own default
(GOMP_SPINCOUNT=300000), `passive` is OMP_WAIT_POLICY=passive, `active` spins forever.
Each figure is the median of `--repeat` runs; each run times enough calls to take
about 20 ms.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import common  # before numpy: removes the OpenBLAS overrides

POLICIES = {
    "default": {},
    "libgomp": {"GOMP_SPINCOUNT": "300000"},
    "passive": {"OMP_WAIT_POLICY": "passive"},
    "active": {"OMP_WAIT_POLICY": "active"},
}

KERNELS = """
func.func @empty_par(%y: memref<64xf32>) attributes {xweave.kernel} {
  loop.for "e.i" %i = 0 to 64 parallel {
  }
  func.return
}
func.func @empty_serial(%y: memref<64xf32>) attributes {xweave.kernel} {
  %one = arith.constant 1.0 : f32
  loop.for "e.i" %i = 0 to 1 {
    loop.store %one, %y[%i] : memref<64xf32>
  }
  func.return
}
"""
TINY_KERNEL = """func.func @NAME(%x: memref<64x64xf32>, %y: memref<64x64xf32>) attributes {xweave.kernel} {
  %two = arith.constant 2.0 : f32
  %one = arith.constant 1.0 : f32
  loop.for "t.i" %i = 0 to 64 ROWS{
    loop.for "t.j" %j = 0 to 64 {
      %v = loop.load %x[%i, %j] : memref<64x64xf32>
      %p = arith.mulf %v, %two : f32
      %s = arith.addf %p, %one : f32
      loop.store %s, %y[%i, %j] : memref<64x64xf32>
    }
  }
  func.return
}
"""
"""y = 2x + 1 over 64x64 floats: NAME is the function, ROWS the row loop's kind."""
KERNELS += "".join(TINY_KERNEL.replace("NAME", name).replace("ROWS", rows)
                   for name, rows in (("tiny_par", "parallel "), ("tiny_serial", "")))


def _per_call_us(fn, args, repeat: int) -> tuple[float, list[float]]:
    runs = [t * 1e6 for t in common.per_call_times(fn, *args, repeat=repeat, min_seconds=0.02,
                                                   max_number=1 << 20)]
    return statistics.median(runs), runs


def _after_gap_us(fn, args, repeat: int, gap_s: float = 0.001, calls: int = 50) -> float:
    samples = []
    for _ in range(repeat):
        for _ in range(calls):
            deadline = time.perf_counter() + gap_s
            while time.perf_counter() < deadline:  # busy Python work, as between kernels
                pass
            start = time.perf_counter()
            fn(*args)
            samples.append((time.perf_counter() - start) * 1e6)
    return statistics.median(samples)


def _idle_cpu_us(fn, args, repeat: int, window_s: float = 0.02) -> float:
    samples = []
    for _ in range(repeat):
        fn(*args)
        cpu0 = time.process_time()
        time.sleep(window_s)  # the main thread sleeps: CPU time here is the workers'
        samples.append((time.process_time() - cpu0) * 1e6)
    return statistics.median(samples)


def child(policy: str, repeat: int) -> None:
    import ctypes

    import numpy as np

    from xweave.context import parse_module
    from xweave.lowering.loop_to_llvm import lower_module
    from xweave.lowering.llvm_codegen import compile_llvm

    module = parse_module(KERNELS)
    lower_module(module)
    engine = compile_llvm(module).load()
    ptr = ctypes.c_void_p
    empty_par = engine.get_function("empty_par", [ptr])
    empty_serial = engine.get_function("empty_serial", [ptr])
    tiny_par = engine.get_function("tiny_par", [ptr, ptr])
    tiny_serial = engine.get_function("tiny_serial", [ptr, ptr])
    y64 = np.zeros(64, np.float32)
    x = np.random.default_rng(0).standard_normal((64, 64)).astype(np.float32)
    y = np.empty_like(x)
    one = (y64.ctypes.data,)
    two = (x.ctypes.data, y.ctypes.data)
    setting = {"policy": policy, "env": POLICIES[policy], "repeat": repeat, **common.machine()}

    def emit(**row) -> None:
        print(json.dumps({**row, **setting}), flush=True)

    median, runs = _per_call_us(empty_serial, one, repeat)
    emit(measurement="serial_call", threads=1, us_per_call=round(median, 3),
         runs=[round(r, 3) for r in runs])
    median, runs = _per_call_us(tiny_serial, two, repeat)
    emit(measurement="tiny_kernel_serial", threads=1, us_per_call=round(median, 3),
         runs=[round(r, 3) for r in runs])
    for threads in (1, 2):
        engine.num_threads = threads
        median, runs = _per_call_us(empty_par, one, repeat)
        emit(measurement="empty_region", threads=threads, us_per_call=round(median, 3),
             runs=[round(r, 3) for r in runs])
        median, runs = _per_call_us(tiny_par, two, repeat)
        np.testing.assert_allclose(y, 2 * x + 1, rtol=1e-6)  # correctness, not timing
        emit(measurement="tiny_kernel", threads=threads, us_per_call=round(median, 3),
             runs=[round(r, 3) for r in runs])
        emit(measurement="after_gap", threads=threads,
             us_per_call=round(_after_gap_us(empty_par, one, repeat), 3))
        emit(measurement="idle_cpu", threads=threads,
             cpu_us_in_20ms=round(_idle_cpu_us(empty_par, one, repeat), 1))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int,
                        help="runs per figure (a median; default 7, 1 with --smoke)")
    parser.add_argument("--policies", help="comma-separated wait policies of POLICIES "
                        "(default: all; default only with --smoke)")
    parser.add_argument("--smoke", action="store_true",
                        help="one policy, one run per figure: checks that the script works "
                        "(tests), not a figure")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.repeat is None:
        args.repeat = 1 if args.smoke else 7
    if args.policies is None:
        args.policies = "default" if args.smoke else ",".join(POLICIES)
    if args.child:
        child(args.child, args.repeat)
        return
    for policy in args.policies.split(","):
        env = {k: v for k, v in os.environ.items()
               if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "XWEAVE_NUM_THREADS")}
        env.update(POLICIES[policy])
        proc = subprocess.run(
            [sys.executable, __file__, "--child", policy, "--repeat", str(args.repeat)],
            env=env, stdout=sys.stdout, stderr=sys.stderr,
        )
        if proc.returncode:
            print(json.dumps({"policy": policy, "error": f"exit code {proc.returncode}"}),
                  flush=True)


if __name__ == "__main__":
    main()
