"""A model as one shared library with a C API (`native/xweave.h`): the export step.

    module.export_library("model.so")          # kernels, weights, call plan, signature, runtime

`export_library` links, with the target's C compiler (`runtime.toolchain`):

* the model's object code, as `CompiledModule` holds it (PIC): its kernels, @main, its
  `xweave_entry` (@main through one argument array), its ABI description
  (`xweave_abi`, JSON), its parameter table, names and sizes, `xweave_num_threads`;
* `weights.s`, written here: the parameters' bytes (`.incbin` of one file, each
  parameter 64-byte aligned, in the order of the ABI's parameter list) with their
  offsets, and the note `.note.xweave` (the C API version, the triple, the resolved
  target and its features), which a loader reads before mapping the file;
* `native/xweave_runtime.c`, the runtime (the same source for every model and
  architecture): it reads the ABI description, binds the parameter table to the
  weights, checks the CPU's features and every call's buffers, keeps a pool of call
  states, and exports the one table `xweave_library` that `xweave.h`'s functions call
  through.

Only `xweave_library` is exported (a version script makes every other symbol local,
so that @main never meets a program's `main`); the library needs libc, libm and
libgomp (parallel loops), nothing of Python. Export is atomic: the linker writes a
temporary file beside the destination, renamed over it once complete.
`runtime.library.LibraryModule` runs such a library in this process.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from xweave.errors import ModelError
from xweave.runtime.elf import NOTE_NAME, NOTE_TYPE, note_descriptor
from xweave.runtime.files import replacing
from xweave.runtime.toolchain import ToolchainError, c_compiler

NATIVE_DIR = Path(__file__).resolve().parent / "native"
"""Where `xweave.h` and the runtime's C source are (`xweave include-dir`)."""

C_ABI_VERSION = 1
"""`XWEAVE_ABI_VERSION` of `native/xweave.h`: the C API a library exports."""

LIBRARY_MAGIC = 0x6C777878
"""`XWEAVE_LIBRARY_MAGIC` of `native/xweave.h`."""

WEIGHT_ALIGNMENT = 64
"""Byte alignment of every parameter in a library's weights."""


def include_dir() -> Path:
    """The directory holding `xweave.h` (for `cc -I`)."""
    return NATIVE_DIR


# ------------------------------------------------------------------------------------
# Export
# ------------------------------------------------------------------------------------


def export_library(path: str | os.PathLike, object_bytes: bytes,
                   params: Mapping[str, np.ndarray], abi: Mapping[str, object],
                   cc: str | None = None) -> None:
    """Link a model's object (`CompiledModule.object_bytes`, whose ABI description is
    `abi`), its parameters and the C runtime into the shared library `path` (see the
    module's docstring). `cc` names the C compiler (default: `runtime.toolchain`'s
    choice for the ABI's triple). A `ToolchainError` if no compiler is found or
    linking fails; `path` is then left as it was."""
    path = Path(path)
    target = abi["target"]
    assert isinstance(target, Mapping)
    triple = str(target["triple"])
    compiler = c_compiler(triple, cc)
    names = [str(p["name"]) for p in abi["params"]]  # type: ignore[index, union-attr]
    missing = [n for n in names if n not in params]
    if missing:
        raise ModelError(f"export_library: no value for parameter(s) {', '.join(missing)}")
    with tempfile.TemporaryDirectory(prefix="xweave-library-") as tmp:
        work = Path(tmp)
        (work / "module.o").write_bytes(object_bytes)
        offsets = _write_weights(work / "weights.bin", [params[n] for n in names])
        note = note_descriptor(C_ABI_VERSION, triple, str(target["cpu"]),
                               ",".join(target.get("features", [])))
        (work / "weights.s").write_text(_weights_assembly(work / "weights.bin", offsets, note))
        (work / "exports.map").write_text("{ global: xweave_library; local: *; };\n")
        with replacing(path, 0o777) as partial:
            _link(compiler, work, partial, _needs_gomp(object_bytes))


def _write_weights(path: Path, arrays: list[np.ndarray]) -> list[int]:
    """Write the arrays one after the other, each WEIGHT_ALIGNMENT-aligned; their
    offsets and, last, the total size."""
    offsets = []
    position = 0
    with open(path, "wb") as f:
        for array in arrays:
            pad = -position % WEIGHT_ALIGNMENT
            f.write(b"\0" * pad)
            position += pad
            offsets.append(position)
            data = np.ascontiguousarray(array).reshape(-1).view(np.uint8)
            f.write(data.data)
            position += data.nbytes
    offsets.append(position)
    return offsets


def _weights_assembly(weights: Path, offsets: list[int], note: bytes) -> str:
    """The assembly (GNU as, any architecture) of the weights, their offsets and the note."""
    def symbol(name: str) -> str:
        return f"\t.globl {name}\n\t.hidden {name}\n\t.type {name}, %object\n{name}:\n"

    def data(directive: str, values: list[int]) -> str:
        return "".join(f"\t{directive} {', '.join(map(str, values[i:i + 16]))}\n"
                       for i in range(0, len(values), 16))

    padded = note + b"\0" * (-len(note) % 4)
    return "".join([
        f'\t.section .rodata.xweave_weights,"a",%progbits\n\t.balign {WEIGHT_ALIGNMENT}\n',
        symbol("xweave_weights"), f'\t.incbin "{_quoted(weights)}"\n\t.byte 0\n',
        '\t.section .rodata.xweave_offsets,"a",%progbits\n\t.balign 8\n',
        symbol("xweave_weights_offsets"), data(".quad", offsets),
        symbol("xweave_weights_count"), f"\t.quad {len(offsets) - 1}\n",
        '\t.section .note.xweave,"a",%note\n\t.balign 4\n',
        f"\t.long {len(NOTE_NAME) + 1}, {len(note)}, {NOTE_TYPE}\n",
        f'\t.asciz "{NOTE_NAME.decode()}"\n\t.balign 4\n', data(".byte", list(padded)),
        '\t.section .note.GNU-stack,"",%progbits\n',
    ])


def _quoted(path: Path) -> str:
    """`path` inside an assembler string."""
    return str(path).replace("\\", "\\\\").replace('"', '\\"')


def _needs_gomp(object_bytes: bytes) -> bool:
    return b"GOMP_parallel\0" in object_bytes or b"omp_get_thread_num\0" in object_bytes


def _link(compiler: list[str], work: Path, output: Path, gomp: bool) -> None:
    command = [
        *compiler, "-shared", "-fPIC", "-O2", "-std=gnu11", "-fvisibility=hidden",
        "-I", str(NATIVE_DIR), "-o", str(output),
        str(work / "module.o"), str(work / "weights.s"), str(NATIVE_DIR / "xweave_runtime.c"),
        f"-Wl,--version-script={work / 'exports.map'}", "-Wl,-z,now", "-Wl,-z,noexecstack",
        "-Wl,--no-undefined", "-Wl,--as-needed",
        *(["-lgomp"] if gomp else []), "-lm", "-lpthread",
    ]
    try:
        proc = subprocess.run(command, capture_output=True, text=True, timeout=900)
    except OSError as e:
        raise ToolchainError(f"cannot run {compiler[0]}: {e.strerror or e}") from None
    except subprocess.TimeoutExpired:
        raise ToolchainError(f"{compiler[0]} did not finish linking in 900 s") from None
    if proc.returncode != 0:
        lines = [line for line in proc.stderr.splitlines() if "error" in line.lower()]
        first = (lines or proc.stderr.strip().splitlines() or ["(no message)"])[0]
        raise ToolchainError(f"linking the library with {compiler[0]} failed: {first.strip()}")
