"""A compiled model: machine code, parameters and signature; run, export, load."""

from __future__ import annotations

import ctypes
import io
import json
import os
import tempfile
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, IntegerAttr, ModuleOp, StringAttr, TensorType

from xweave.errors import InputError, ModelError
from xweave.runtime.profile import (
    PROFILE_GLOBAL,
    Profile,
    ProfileError,
    ProfileSlot,
    run_profile,
    slots_of,
)
from xweave.target import Target, TargetError, host_cpu_name

FORMAT_VERSION = 1


@dataclass(frozen=True)
class TensorSpec:
    """Name, static shape and dtype of a model input or output."""

    name: str
    shape: tuple[int, ...]
    dtype: str

    def to_json(self) -> dict:
        return {"name": self.name, "shape": list(self.shape), "dtype": self.dtype}

    @staticmethod
    def from_json(d: dict) -> TensorSpec:
        return TensorSpec(d["name"], tuple(d["shape"]), d["dtype"])


def _numpy_dtype(element_type) -> str:
    from xdsl.dialects.builtin import Float32Type, Float64Type, IntegerType

    if isinstance(element_type, Float32Type):
        return "float32"
    if isinstance(element_type, Float64Type):
        return "float64"
    if isinstance(element_type, IntegerType):
        width = element_type.width.data
        return "bool" if width == 1 else f"int{width}"
    raise ModelError(f"unsupported element type {element_type}")


def signature_of(module: ModuleOp) -> tuple[list[TensorSpec], list[TensorSpec]]:
    """Inputs and outputs of `@main` in a graph-stage module."""
    main = next(
        (op for op in module.ops if isinstance(op, func.FuncOp) and op.sym_name.data == "main"),
        None,
    )
    if main is None:
        raise ModelError("the module has no @main function")

    def names(attr: str, count: int, prefix: str) -> list[str]:
        value = main.attributes.get(attr)
        if isinstance(value, ArrayAttr):
            return [s.data for s in value.data if isinstance(s, StringAttr)]
        return [f"{prefix}{i}" for i in range(count)]

    ins = main.function_type.inputs.data
    outs = main.function_type.outputs.data
    specs = []
    for types, attr, prefix in ((ins, "xweave.input_names", "input"), (outs, "xweave.output_names", "output")):
        specs.append([
            TensorSpec(name, tuple(t.get_shape()), _numpy_dtype(t.get_element_type()))
            for name, t in zip(names(attr, len(types), prefix), types)
            if isinstance(t, TensorType)
        ])
    return specs[0], specs[1]


class CompiledModule:
    """A model compiled for the CPU: call `run(**inputs)`, `export(path)`.

    The intermediate buffers of one instance live in one arena of `peak_memory_bytes`
    (see `plan-memory`), allocated when the instance is created: calls of one instance
    must not overlap (run them from one thread at a time, or load one per thread).
    """

    def __init__(self, object_bytes: bytes, params: dict[str, np.ndarray],
                 inputs: list[TensorSpec], outputs: list[TensorSpec], compiled=None,
                 peak_memory_bytes: int | None = None,
                 profile_slots: tuple[ProfileSlot, ...] | None = None,
                 target: Target | None = None):
        from xweave.passes.memory_plan import ARENA
        from xweave.runtime.arena import allocate_arena
        from xweave.runtime.jit import load_object

        self.target = (target or Target()).resolve()
        """The CPU target the code was generated for."""
        self.object_bytes = object_bytes
        # not weights: the arena and a profiling build's counters (one of each per instance)
        self.params = {k: v for k, v in params.items() if k not in (ARENA, PROFILE_GLOBAL)}
        self.inputs = inputs
        self.outputs = outputs
        self.peak_memory_bytes = peak_memory_bytes
        """Bytes of the arena holding the intermediate buffers (None: not planned)."""
        self._compiled = compiled  # the CompiledObject, when built in this process
        symbols = dict(self.params)
        self.arena = allocate_arena(peak_memory_bytes) if peak_memory_bytes else None
        """The memory bound to the arena (on huge pages if big enough; see runtime.arena)."""
        if self.arena is not None:
            symbols[ARENA] = self.arena
        self.profile_slots = profile_slots
        """The timed kernel calls of a profiling build (None: a normal build)."""
        self._profile_counters = None
        if profile_slots:
            self._profile_counters = np.zeros(len(profile_slots), np.int64)
            symbols[PROFILE_GLOBAL] = self._profile_counters
        self._engine = None
        missing = self.target.missing_on_host()
        if missing:  # code for another machine: it can be exported, not run here
            self._not_runnable = (
                f"the module was compiled for '{self.target}', and this CPU "
                f"('{host_cpu_name()}') lacks {', '.join(missing)}")
            self._main = self._refuse
            return
        self._engine = load_object(object_bytes, symbols)
        self._main = self._engine.get_function(
            "main", [ctypes.c_void_p] * (len(inputs) + len(outputs))
        )

    @property
    def runnable(self) -> bool:
        """Whether this CPU can run the code (it has every feature of the target)."""
        return self._engine is not None

    def _refuse(self, *args) -> None:
        raise TargetError(self._not_runnable)

    @staticmethod
    def from_llvm_module(module: ModuleOp, params: dict[str, np.ndarray],
                         signature: tuple[list[TensorSpec], list[TensorSpec]]) -> CompiledModule:
        """Optimize and compile an llvm-dialect module for its target CPU."""
        from xweave.passes.memory_plan import PEAK_ATTR
        from xweave.runtime.jit import compile_llvm

        compiled = compile_llvm(module)
        peak = module.attributes.get(PEAK_ATTR)
        main = next((op for op in module.ops if getattr(op, "sym_name", None) is not None
                     and op.sym_name.data == "main"), None)
        return CompiledModule(compiled.object_bytes, params, signature[0], signature[1], compiled,
                              peak.value.data if isinstance(peak, IntegerAttr) else None,
                              slots_of(main.attributes) if main is not None else None,
                              compiled.target)

    @property
    def llvm_ir(self) -> str:
        """The optimized LLVM IR (only for a module built in this process)."""
        return self._compiled.llvm_ir if self._compiled else ""

    @property
    def assembly(self) -> str:
        """The generated assembly (only for a module built in this process)."""
        return self._compiled.assembly if self._compiled else ""

    # --- running -----------------------------------------------------------------

    def _check_inputs(self, inputs: dict[str, np.ndarray]) -> list[np.ndarray]:
        expected = {spec.name: spec for spec in self.inputs}
        missing = [n for n in expected if n not in inputs]
        extra = [n for n in inputs if n not in expected]
        if missing or extra:
            parts = []
            if missing:
                parts.append("missing input(s): " + ", ".join(
                    f"'{n}' (expected shape {list(expected[n].shape)}, dtype {expected[n].dtype})"
                    for n in missing))
            if extra:
                parts.append("unknown input(s): " + ", ".join(f"'{n}'" for n in extra)
                             + f" (the model's inputs are: {', '.join(expected)})")
            raise InputError("; ".join(parts))
        arrays = []
        for spec in self.inputs:
            value = inputs[spec.name]
            array = np.asarray(value)
            if array.dtype != np.dtype(spec.dtype):
                raise InputError(f"input '{spec.name}': expected dtype {spec.dtype}, got {array.dtype}")
            if tuple(array.shape) != spec.shape:
                raise InputError(f"input '{spec.name}': expected shape {list(spec.shape)}, "
                                 f"got {list(array.shape)}")
            arrays.append(np.ascontiguousarray(array))
        return arrays

    def run(self, **inputs: np.ndarray) -> list[np.ndarray]:
        """Run the model; inputs by ONNX input name, outputs in ONNX order."""
        arrays = self._check_inputs(inputs)
        outputs = [np.empty(spec.shape, spec.dtype) for spec in self.outputs]
        self._main(*[a.ctypes.data for a in arrays], *[o.ctypes.data for o in outputs])
        return outputs

    def benchmark(self, inputs: dict[str, np.ndarray], repeat: int = 10,
                  number: int = 1) -> np.ndarray:
        """Seconds per run for `repeat` measurements of `number` runs each (after a warm-up)."""
        arrays = self._check_inputs(inputs)
        outputs = [np.empty(spec.shape, spec.dtype) for spec in self.outputs]
        args = [a.ctypes.data for a in arrays] + [o.ctypes.data for o in outputs]
        self._main(*args)
        times = []
        for _ in range(repeat):
            start = time.perf_counter()
            for _ in range(number):
                self._main(*args)
            times.append((time.perf_counter() - start) / number)
        return np.array(times)

    def profile(self, repeat: int = 10, **inputs: np.ndarray) -> Profile:
        """Time every kernel call over `repeat` runs (after a warm-up); a profiling build
        only (`xweave.build(..., profile=True)`). `print(profile.table())` shows it."""
        if self._profile_counters is None or self.profile_slots is None:
            raise ProfileError("this module was built without profiling: build it with "
                               "xweave.build(..., profile=True) (or `xweave compile --profile`)")
        arrays = self._check_inputs(inputs)
        outputs = [np.empty(spec.shape, spec.dtype) for spec in self.outputs]
        args = [a.ctypes.data for a in arrays] + [o.ctypes.data for o in outputs]
        return run_profile(lambda: self._main(*args), self._profile_counters,
                           self.profile_slots, repeat)

    # --- export / load --------------------------------------------------------------

    def export(self, path: str | os.PathLike) -> None:
        """Write one file (object code, parameters, manifest) that `load_module` reads.

        The file is written to a temporary name and renamed, so an existing module at
        `path` is never left half-written.
        """
        path = Path(path)
        manifest = {
            "format": "xweave-module",
            "version": FORMAT_VERSION,
            "target": "llvm",
            "cpu": str(self.target),
            "inputs": [s.to_json() for s in self.inputs],
            "outputs": [s.to_json() for s in self.outputs],
            "peak_memory_bytes": self.peak_memory_bytes,
        }
        if self.profile_slots is not None:
            manifest["profile"] = [s.to_json() for s in self.profile_slots]
        params = io.BytesIO()
        np.savez(params, **self.params)
        fd, tmp = tempfile.mkstemp(dir=path.parent if str(path.parent) else ".", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as f, zipfile.ZipFile(f, "w") as zf:
                zf.writestr("manifest.json", json.dumps(manifest, indent=2))
                zf.writestr("module.o", self.object_bytes)
                zf.writestr("params.npz", params.getvalue())
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise


def load_module(path: str | os.PathLike) -> CompiledModule:
    """Load a module written by `CompiledModule.export` (no recompilation)."""
    path = Path(path)
    try:
        with zipfile.ZipFile(path) as zf:
            manifest = json.loads(zf.read("manifest.json"))
            if manifest.get("target", "llvm") != "llvm":  # CPU + accelerator
                from xweave.runtime.hetero import load_hetero

                return load_hetero(path, zf, manifest)  # pyright: ignore[reportReturnType]
            object_bytes = zf.read("module.o")
            with np.load(io.BytesIO(zf.read("params.npz"))) as npz:
                params = {k: npz[k] for k in npz.files}
    except FileNotFoundError:
        raise
    except (zipfile.BadZipFile, KeyError, ValueError, json.JSONDecodeError) as e:
        raise ModelError(f"{path}: not an xweave module ({e})") from None
    if manifest.get("format") != "xweave-module" or manifest.get("version") != FORMAT_VERSION:
        raise ModelError(f"{path}: unsupported module format {manifest.get('format')!r} "
                         f"version {manifest.get('version')!r}")
    target = Target.parse(manifest["cpu"]) if "cpu" in manifest else Target()
    missing = target.missing_on_host()
    if missing:
        raise TargetError(f"{path}: compiled for '{target}'; this CPU ('{host_cpu_name()}') "
                          f"lacks {', '.join(missing)}: compile it again with --target llvm "
                          "(or for a CPU without these features)")
    return CompiledModule(
        object_bytes, params,
        [TensorSpec.from_json(d) for d in manifest["inputs"]],
        [TensorSpec.from_json(d) for d in manifest["outputs"]],
        peak_memory_bytes=manifest.get("peak_memory_bytes"),
        profile_slots=(tuple(ProfileSlot.from_json(d) for d in manifest["profile"])
                       if manifest.get("profile") is not None else None),
        target=target,
    )
