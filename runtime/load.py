"""`xweave.load_module`: a module file written by `export`, loaded without recompiling."""

from __future__ import annotations

import os
from pathlib import Path

from xweave.errors import ModelError
from xweave.runtime.hetero import HeteroModule, load_hetero
from xweave.runtime.library import LibraryModule, is_library
from xweave.runtime.threads import check_num_threads, set_num_threads
from xweave.runtime.module import CompiledModule, at_path, load_compiled, read_module_file


def load_module(path: str | os.PathLike, threads: int | None = None
                ) -> CompiledModule | HeteroModule | LibraryModule:
    """Load a module written by `CompiledModule.export` (a CPU module),
    `HeteroModule.export` (CPU + accelerator: the manifest's `target` names it) or
    `CompiledModule.export_library` (a shared library, told by its ELF magic: run
    through its C API, `runtime.library.LibraryModule`).

    The file is checked before anything runs (see `load_compiled`, `load_hetero`): a
    damaged or mismatched file is a `ModelError` naming the field or member. Loading
    runs no model code, but the object is machine code trusted as a shared library
    is: load modules from sources you trust. `threads=N` runs its parallel loops on N
    threads (default: `XWEAVE_NUM_THREADS`, else every core; see `set_num_threads`).
    """
    if threads is not None:
        check_num_threads(threads)
    module = _load(Path(path))
    if threads is not None:
        for cpu_module in getattr(module, "cpu_modules", [module]):
            set_num_threads(cpu_module, threads)
    return module


def _load(path: Path) -> CompiledModule | HeteroModule | LibraryModule:
    if is_library(path):
        return LibraryModule(path)
    zf, manifest = read_module_file(path)
    with zf:
        target = manifest.get("target", "llvm")
        if isinstance(target, str) and target.split(" ", 1)[0] == "llvm":
            return load_compiled(path, zf, manifest)
        try:
            return load_hetero(path, zf, manifest)
        except ModelError as e:
            raise ModelError(at_path(path, str(e))) from None
