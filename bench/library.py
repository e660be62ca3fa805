"""A model library (`export_library`) run from C against the same build's `module.run`
from Python: time per run at each thread count, the time the C program takes to open
the library and make its first call, and the size of the library's runtime part.

    python bench/library.py [--models resnet18,mobilenet_v2] [--threads 1,2] [--rounds 15] [--repeat 10]

For each model (full size, models.py; `small_cnn`: the main job's example) the build is
exported as a library; examples/c/run_model.c (compiled with the system's C compiler)
runs it with `--repeat N --threads T` in a fresh process per round, and the same
process times `module.run(**feeds)` N times; the two alternate in order from round to
round. Figures are medians over rounds (each round's figure a median of N runs);
`c_over_python` is the median of the rounds' ratios (each of two figures taken one after
the other), < 1 when C is faster. `open_first_ms` is xweave_open plus the first
xweave_run in the fresh process (libgomp's threads start there; the file is in the page
cache), the median and the best (`open_first_best_ms`) of the rounds. `runtime_bytes` is the library's size less its weights and the kernels' object
code and data: what the C runtime and the linking add. The C output is checked equal to
module.run's. Never asserts on time.
"""

from __future__ import annotations

import argparse
import re
import statistics
import struct
import subprocess
import tempfile
import time
from pathlib import Path

from common import emit, log, machine, set_threads

ROOT = Path(__file__).resolve().parents[1]
RUN_MODEL = ROOT / "examples" / "c" / "run_model.c"
SMALL_CNN = ROOT / "examples" / "small_cnn.onnx"
_TIMES = re.compile(r"open ([\d.]+) ms, first run ([\d.]+) ms, median ([\d.]+) ms")


def build_runner(directory: Path) -> Path:
    """examples/c/run_model.c compiled with this machine's C compiler."""
    import xweave
    from xweave.runtime.toolchain import c_compiler
    from xweave.target import Target

    program = directory / "run_model"
    subprocess.run([*c_compiler(Target().llvm_triple), "-O2", "-I", str(xweave.include_dir()),
                    str(RUN_MODEL), "-o", str(program)], check=True, capture_output=True)
    return program


def allocated_bytes(object_bytes: bytes) -> int:
    """Bytes of an ELF object's sections that take space in a loaded library (code,
    data, read-only data; not .bss)."""
    shoff = struct.unpack_from("<Q", object_bytes, 0x28)[0]
    shentsize, shnum = struct.unpack_from("<HH", object_bytes, 0x3A)
    total = 0
    for i in range(shnum):
        _, sh_type, flags, _, _, size, _, _, _, _ = struct.unpack_from(
            "<IIQQQQIIQQ", object_bytes, shoff + i * shentsize)
        if flags & 2 and sh_type != 8:  # SHF_ALLOC, not SHT_NOBITS
            total += size
    return total


def weights_bytes(params: dict) -> int:
    """Bytes of the weights in a library (each parameter 64-byte aligned)."""
    total = 0
    for array in params.values():
        total += -total % 64 + array.nbytes
    return total


def model_of(name: str):
    """The ONNX file of `name`: the main job's example, or a full-size models.py model."""
    import models

    return SMALL_CNN if name == "small_cnn" else models.model_path(name)


def bench_model(name: str, threads_list: list[int], rounds: int, repeat: int,
                directory: Path, runner: Path) -> list[dict]:
    """The records of one model (one per thread count)."""
    import numpy as np
    import onnx

    import models
    import xweave
    from xweave.runtime.threads import set_num_threads

    path = model_of(name)
    feeds = models.random_inputs(onnx.load(path))
    start = time.perf_counter()
    module = xweave.build(path)
    compile_s = time.perf_counter() - start
    library = directory / f"{name}.so"
    start = time.perf_counter()
    module.export_library(library)
    export_s = time.perf_counter() - start
    inputs = []
    for i, spec in enumerate(module.inputs):
        inputs.append(str(directory / f"{name}_in{i}.npy"))
        np.save(inputs[-1], feeds[spec.name])
    out = directory / f"{name}_out.npy"
    size = library.stat().st_size
    runtime = size - weights_bytes(module.params) - allocated_bytes(module.object_bytes)
    records = []
    for threads in threads_list:
        set_num_threads(module, threads)
        python_ms, c_ms, open_first_ms = [], [], []
        same = True
        for r in range(rounds):
            def from_python() -> None:
                times = []
                for _ in range(repeat + 1):
                    begin = time.perf_counter()
                    module.run(**feeds)
                    times.append(time.perf_counter() - begin)
                python_ms.append(statistics.median(times[1:]) * 1e3)

            def from_c() -> None:
                nonlocal same
                proc = subprocess.run([str(runner), str(library), *inputs, "-o", str(out),
                                       "--repeat", str(repeat), "--threads", str(threads)],
                                      capture_output=True, text=True, check=True)
                opened, first, median = map(float, _TIMES.search(proc.stdout).groups())
                c_ms.append(median)
                open_first_ms.append(opened + first)
                same = same and bool(np.array_equal(np.load(out), module.run(**feeds)[0]))

            for step in ((from_python, from_c) if r % 2 == 0 else (from_c, from_python)):
                step()
        python, c = statistics.median(python_ms), statistics.median(c_ms)
        ratio = statistics.median(b / a for a, b in zip(python_ms, c_ms))
        with open("/proc/loadavg") as f:
            load = f.read().split()[0]
        records.append({
            "model": name, "threads": threads, "python_ms": round(python, 3),
            "c_ms": round(c, 3), "c_over_python": round(ratio, 3),
            "open_first_ms": round(statistics.median(open_first_ms), 2),
            "open_first_best_ms": round(min(open_first_ms), 2),
            "same_output": same, "library_bytes": size, "runtime_bytes": runtime,
            "compile_s": round(compile_s, 1), "export_s": round(export_s, 2),
            "rounds": rounds, "repeat": repeat, "load": load, **machine(),
        })
    return records


def run(names: list[str], threads_list: list[int], rounds: int, repeat: int) -> list[dict]:
    """Every record of `names` (see the module's docstring), logged as it comes."""
    records = []
    with tempfile.TemporaryDirectory(prefix="xweave-library-bench-") as tmp:
        directory = Path(tmp)
        runner = build_runner(directory)
        for name in names:
            for record in bench_model(name, threads_list, rounds, repeat, directory, runner):
                emit(record)
                records.append(record)
                log(f"{name:14s} threads={record['threads']} python {record['python_ms']:8.3f} ms"
                    f"  C {record['c_ms']:8.3f} ms  C/python {record['c_over_python']:.3f}  "
                    f"open+first call {record['open_first_ms']:7.2f} ms (best "
                    f"{record['open_first_best_ms']:.2f})  runtime "
                    f"{record['runtime_bytes'] / 1024:.1f} KiB  same {record['same_output']}")
    return records


def main() -> None:
    """The command line (see the module's docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", default="resnet18,mobilenet_v2,small_cnn",
                        help="comma-separated names of models.py, or small_cnn")
    parser.add_argument("--threads", default="1,2", help="comma-separated thread counts")
    parser.add_argument("--rounds", type=int, default=15, help="alternating rounds (medians)")
    parser.add_argument("--repeat", type=int, default=10, help="timed runs per round")
    args = parser.parse_args()
    threads_list = [int(t) for t in args.threads.split(",")]
    set_threads(max(threads_list))
    log(f"machine: {machine()}")
    run(args.models.split(","), threads_list, args.rounds, args.repeat)


if __name__ == "__main__":
    main()
