"""xweave: an end-to-end optimizing compiler for deep learning on xDSL.

The public Python API:

* `load_onnx(path)` -> the model as a graph-dialect `builtin.module`
* `build(module_or_path, target=None)` -> a compiled module (target: "llvm", this
  CPU; "llvm -mcpu=NAME -mattr=..." another; "vta"; see `xweave.target`); `module.run(**inputs)`
  returns the outputs as a list of numpy arrays
* `load_module(path)` -> a module exported with `module.export(path)`, or a shared
  library written by `module.export_library(path)` (run through its C API)
* `include_dir()` -> the directory of `xweave.h`, the C API of those libraries
* `build_kernel(name, inputs, outputs, schedule)` -> a custom operator written with
  `xweave.te`, compiled into a function called on numpy arrays
"""

import logging
from importlib.metadata import PackageNotFoundError, version

from xweave.errors import InputError, ModelError, UnsupportedOpsError, XweaveError

try:
    __version__ = version("xweave")
except PackageNotFoundError:  # imported from a source tree that was never installed
    __version__ = "0+unknown"

# Silent unless the program configures logging (the CLIs do: `xweave.log.cli_logging`).
logging.getLogger(__name__).addHandler(logging.NullHandler())

# The functions below import the compiler when first called, by design: `import xweave`
# stays fast (a tenth of a second, against two for the compiler) for scripts that only
# load and run exported modules.

__all__ = [
    "__version__",
    "InputError",
    "ModelError",
    "UnsupportedOpsError",
    "XweaveError",
    "build",
    "build_kernel",
    "include_dir",
    "load_module",
    "load_onnx",
]


def load_onnx(path, input_shapes=None):
    """Import an ONNX model (path or `onnx.ModelProto`) as a graph-dialect module."""
    from xweave.frontend.onnx import load_onnx as _load

    return _load(path, input_shapes=input_shapes)


def build(module_or_path, target=None, schedule=None, **options):
    """Compile a graph-dialect module (or an ONNX file) into a runnable module
    (`schedule`: "default", "model" or "measure", see `xweave.autotune.select`)."""
    from xweave.driver import build as _build
    from xweave.options import schedule_mode

    chooser = None
    if schedule_mode(schedule) != "default":
        from xweave.autotune.select import choose_schedules as chooser
    return _build(module_or_path, target=target, schedule=schedule, choose_schedules=chooser,
                  **options)


def build_kernel(name, inputs, outputs, schedule="default", target=None):
    """Compile a tensor-expression computation (see `xweave.te`) into a callable."""
    from xweave.kernel import build_kernel as _build_kernel

    return _build_kernel(name, inputs, outputs, schedule, target)


def load_module(path, threads=None):
    """Load a module written by `CompiledModule.export` (or a shared library written by
    `export_library`), without recompiling (`threads`: threads of its parallel loops;
    default every core)."""
    from xweave.runtime.load import load_module as _load

    return _load(path, threads=threads)


def include_dir():
    """The directory holding `xweave.h`, the C API of model libraries (`cc -I`)."""
    from xweave.runtime.library_export import include_dir as _include_dir

    return _include_dir()
