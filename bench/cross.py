"""Every architecture of models.py at its test size, compiled for another architecture
(aarch64 by default) and run under qemu-user from the C example
(examples/c/run_model.c), against onnxruntime on this machine.

    python bench/cross.py [--models a,b] [--target T] [--threads N]
    python bench/cross.py --target "llvm -mtriple=riscv64-linux-gnu -mattr=+v"

Not a timing (an emulated run says nothing of an ARM core's speed): one JSON line per
model with the largest error relative to the output's scale (max |xweave - ort| /
max |ort|), whether it is within TOLERANCE, the compile seconds and the emulated run's
seconds. Needs the cross C compiler with the target's libc headers and qemu-user
(Debian: gcc-aarch64-linux-gnu, libc6-dev-arm64-cross, qemu-user; for riscv64
gcc-riscv64-linux-gnu, libc6-dev-riscv64-cross); says which is missing. The tests run
it on one small model per architecture (`check_models`).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from common import emit, log, machine

DEFAULT_TARGET = "llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a72"
TOLERANCE = 1e-4
"""Largest error allowed, relative to the largest magnitude of the reference output."""
RUN_MODEL = Path(__file__).resolve().parents[1] / "examples" / "c" / "run_model.c"


@dataclass(frozen=True)
class Emulation:
    """How to build and run a program for another architecture on this machine."""

    cc: list[str]
    qemu: str
    sysroot: Path
    cpu: str | None = None
    """qemu's -cpu (RISC-V: the V extension is not in its default CPU)."""

    def command(self, program: Path, *args: str) -> list[str]:
        """The command line running `program` with `args` under emulation."""
        cpu = ["-cpu", self.cpu] if self.cpu else []
        return [self.qemu, *cpu, "-L", str(self.sysroot), str(program), *args]


def emulation(target: str = DEFAULT_TARGET) -> Emulation | str:
    """The cross compiler, qemu-user and the target's libraries for `target`, or why
    they are not all there (a sentence naming the Debian package)."""
    from xweave.runtime.toolchain import ToolchainError, c_compiler, gnu_triple
    from xweave.target import Target

    parsed = Target.parse(target)
    triple, arch = parsed.llvm_triple, parsed.arch
    try:
        cc = c_compiler(triple)
    except ToolchainError as e:
        return str(e)
    qemu = shutil.which(f"qemu-{arch}") or shutil.which(f"qemu-{arch}-static")
    if qemu is None:
        return f"no qemu-{arch} on the PATH (Debian/Ubuntu: apt-get install qemu-user)"
    sysroot = Path("/usr") / gnu_triple(triple)
    if not (sysroot / "lib").is_dir():
        return f"no {arch} libraries in {sysroot} (Debian/Ubuntu: apt-get install {cc[0]})"
    probe = subprocess.run([*cc, "-x", "c", "-fsyntax-only", "-"], input="#include <stdio.h>\n",
                           capture_output=True, text=True)
    if probe.returncode != 0:
        package = {"aarch64": "libc6-dev-arm64-cross", "riscv64": "libc6-dev-riscv64-cross"}
        return (f"{cc[0]} has no C library headers (Debian/Ubuntu: apt-get install "
                f"{package.get(arch, 'the libc6-dev cross package')})")
    cpu = "rv64,v=true,vlen=128,elen=64,vext_spec=v1.0" if "v" in parsed.features else None
    return Emulation(cc, qemu, sysroot, cpu)


def build_runner(emu: Emulation, directory: Path) -> Path:
    """examples/c/run_model.c compiled with the cross compiler."""
    import xweave

    program = directory / "run_model"
    subprocess.run([*emu.cc, "-O2", "-I", str(xweave.include_dir()), str(RUN_MODEL), "-o",
                    str(program)], check=True, capture_output=True, text=True)
    return program


def check_model(name: str, model, target: str, emu: Emulation, runner: Path,
                directory: Path, threads: int = 1) -> dict:
    """Compile `model` for `target`, run its library under emulation from the C example,
    and compare its first output with onnxruntime's on this machine."""
    import numpy as np
    import onnxruntime as ort

    import models
    import xweave

    feeds = models.random_inputs(model)
    expected = ort.InferenceSession(model.SerializeToString(),
                                    providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    start = time.perf_counter()
    module = xweave.build(model, target=target)
    library = directory / f"{name}.so"
    module.export_library(library)
    compile_s = time.perf_counter() - start
    paths = []
    for i, spec in enumerate(module.inputs):
        paths.append(str(directory / f"{name}_in{i}.npy"))
        np.save(paths[-1], feeds[spec.name])
    out = directory / f"{name}_out.npy"
    start = time.perf_counter()
    proc = subprocess.run(emu.command(runner, str(library), *paths, "-o", str(out),
                                      "--threads", str(threads)),
                          capture_output=True, text=True, timeout=1800)
    run_s = time.perf_counter() - start
    record = {"model": name, "target": target, "compile_s": round(compile_s, 2),
              "emulated_run_s": round(run_s, 2)}
    if proc.returncode != 0:
        return {**record, "ok": False, "error": proc.stderr.strip()[-500:]}
    got = np.load(out)
    if got.shape != expected.shape:
        return {**record, "ok": False, "error": f"shape {got.shape}, expected {expected.shape}"}
    scale = float(np.abs(expected).max()) or 1.0
    error = float(np.abs(got.astype(np.float64) - expected).max()) / scale
    return {**record, "max_rel_err": error, "ok": error <= TOLERANCE}


def check_models(names: list[str], target: str = DEFAULT_TARGET, threads: int = 1
                 ) -> list[dict] | str:
    """`check_model` for each model of `names` (keys of `models.SMALL`), or why
    the tools are missing."""
    import models

    emu = emulation(target)
    if isinstance(emu, str):
        return emu
    records = []
    with tempfile.TemporaryDirectory(prefix="xweave-cross-") as tmp:
        directory = Path(tmp)
        runner = build_runner(emu, directory)
        for name in names:
            records.append(check_model(name, models.build_small(name), target, emu,
                                       runner, directory, threads))
    return records


def main() -> None:
    """The command line (see the module's docstring)."""
    import models

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", help="comma-separated names of models.SMALL "
                        "(default: all)")
    parser.add_argument("--target", default=DEFAULT_TARGET,
                        help=f"the cross target (default: {DEFAULT_TARGET!r})")
    parser.add_argument("--threads", type=int, default=2,
                        help="threads of the emulated run (default: 2)")
    args = parser.parse_args()
    names = args.models.split(",") if args.models else list(models.SMALL)
    unknown = [n for n in names if n not in models.SMALL]
    if unknown:
        parser.error(f"unknown model(s) {', '.join(unknown)} (known: "
                     f"{', '.join(models.SMALL)})")
    log(f"machine: {machine()}")
    emu = emulation(args.target)
    if isinstance(emu, str):
        raise SystemExit(f"cross: {emu}")
    failed = 0
    with tempfile.TemporaryDirectory(prefix="xweave-cross-") as tmp:
        directory = Path(tmp)
        runner = build_runner(emu, directory)
        for name in names:
            record = check_model(name, models.build_small(name), args.target, emu, runner,
                                 directory, args.threads)
            emit(record)
            failed += not record["ok"]
            log(f"{name:24s} {'ok  ' if record['ok'] else 'FAIL'} "
                f"err {record.get('max_rel_err', float('nan')):.1e}  compile "
                f"{record['compile_s']:.1f} s  emulated run {record['emulated_run_s']:.1f} s"
                + (f"  {record['error']}" if "error" in record else ""))
    log(f"{len(names) - failed} of {len(names)} models within {TOLERANCE:g} of onnxruntime")


if __name__ == "__main__":
    main()
