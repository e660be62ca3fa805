"""A compiled model: machine code, parameters and signature; run, export, load."""

from __future__ import annotations

import ctypes
import hashlib
import json
import os
import time
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from xweave.errors import InputError, ModelError
from xweave.runtime.abi import ABI_GLOBAL, ARENA, NUM_THREADS_GLOBAL, PROFILE_GLOBAL
from xweave.runtime.arena import CallStatePool
from xweave.runtime.elf import ElfError, host_machine_arch, object_symbol, read_header
from xweave.runtime.jit import JITError, data_address, load_object, missing_cpu_features
from xweave.runtime.library_export import export_library
from xweave.runtime.profile import Profile, ProfileError, ProfileSlot, run_profile
from xweave.runtime.threads import GOVERNOR
from xweave.runtime.files import npz_bytes, read_arrays, write_zip_atomically
from xweave.target import Target, TargetError, host_cpu_name

FORMAT_VERSION = 3
"""Version of the exported file: 2 added `module_sha256` to the manifest, the ABI
description in the object code and the call state as @main's arguments (version 1's
code shared one arena among calls: it is refused, recompile the model); 3 names the
whole target in the manifest (`target`: the resolved target, `triple`, `features`;
version 2 files, which say only `"target": "llvm"`, still load)."""

READ_VERSIONS = (2, 3)
"""The versions of exported files `load_module` reads."""

ABI_VERSION = 1
"""Version of the ABI description a model's object carries (`abi_version` in it)."""

DTYPES = ("float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "bool")
"""The element types of model inputs and outputs."""


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


def feeds_and_outputs(args: tuple, inputs: Mapping[str, object], outputs: list[TensorSpec]
                      ) -> tuple[Mapping[str, object], list[int] | None]:
    """The feeds of a `run` call and the positions of the outputs asked for (None:
    all), from `run(**feeds)`, `run(feeds)` or onnxruntime's `run(output_names, feeds)`."""
    if not args:
        return inputs, None
    if inputs:
        raise InputError("run: give the inputs either as keywords or as a dict, not both")
    if len(args) == 1 and isinstance(args[0], Mapping):
        return args[0], None
    if len(args) != 2 or not isinstance(args[1], Mapping):
        raise InputError("run: expected run(name=array, ...), run({name: array}) or "
                         "run(output_names, {name: array}) (onnxruntime's form)")
    names, feeds = args
    if names is None:
        return feeds, None
    if isinstance(names, str) or not all(isinstance(n, str) for n in names):
        raise InputError(f"run: output_names must be a list of output names or None, got {names!r}")
    known = [spec.name for spec in outputs]
    unknown = [n for n in names if n not in known]
    if unknown:
        raise InputError(f"run: unknown output(s) {', '.join(repr(n) for n in unknown)} "
                         f"(the model's outputs are: {', '.join(known)})")
    return feeds, [known.index(n) for n in names]


def check_inputs(specs: list[TensorSpec], inputs: Mapping[str, object]) -> list[np.ndarray]:
    """The arrays of `inputs` in the order of `specs`, contiguous; an `InputError` naming
    every missing or unknown input, or the first of a wrong dtype or shape."""
    expected = {spec.name: spec for spec in specs}
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
    for spec in specs:
        array = np.asarray(inputs[spec.name])
        if array.dtype != np.dtype(spec.dtype):
            raise InputError(f"input '{spec.name}': expected dtype {spec.dtype}, got {array.dtype}")
        if tuple(array.shape) != spec.shape:
            raise InputError(f"input '{spec.name}': expected shape {list(spec.shape)}, "
                             f"got {list(array.shape)}")
        arrays.append(np.ascontiguousarray(array))
    return arrays


class CompiledModule:
    """A model compiled for the CPU: call `run(**inputs)`, `export(path)`.

    `run` may be called from any number of threads at once, on one instance, as
    onnxruntime's `InferenceSession.run`: the object code keeps no state between
    calls. Each call's intermediate buffers live in an arena of `peak_memory_bytes`
    (see `plan-memory`) passed to the code as an argument; arenas come from a pool of
    the instance that grows to the number of calls ever in flight at once (one arena
    for a caller that never overlaps its calls), and are allocated at the first call
    that needs one. A profiling build's counters are per call too: `profile` is safe
    from several threads as well, each call timing its own run. The thread count of
    parallel loops (`set_num_threads`) is one setting per instance, read at each call.

    The object code describes itself (`abi`: inputs, outputs, call state, parameters
    and their digest, the CPU it was compiled for); `load_module` checks an exported
    file against it before the code runs.
    """

    def __init__(self, object_bytes: bytes, params: Mapping[str, np.ndarray], compiled=None,
                 verify_params: bool = True):
        self.object_bytes = object_bytes
        self.params = dict(params)
        self._compiled = compiled  # the CompiledObject, when built in this process
        try:
            arch = read_header(object_bytes).arch
        except ElfError as e:
            raise ModelError(f"module.o: {e}") from None
        self._engine = None
        if arch == host_machine_arch():
            try:
                self._engine = load_object(object_bytes, self.params)
                abi = self._engine.abi()
            except JITError as e:
                raise ModelError(str(e)) from None
        else:  # code for another architecture: described, exported, never loaded here
            abi = _abi_in_object(object_bytes)
        if abi is None:
            raise ModelError("the object code carries no ABI description (not a model "
                             "compiled by this version of xweave)")
        self.abi = abi
        """The object's own description (see `abi_of`): what `load_module` checks."""
        spec = _parse_abi(abi)
        try:
            self.target = Target.parse(spec["target"]["cpu"])
            """The CPU target the code was generated for."""
            missing = missing_cpu_features(spec["target"])
        except TargetError as e:
            raise ModelError(f"the object's ABI description is malformed ({e})") from None
        # Loading ran none of the code: code for another CPU can be exported, not run here.
        if self._engine is None:
            self._not_runnable = (
                f"the module was compiled for {arch} ('{self.target}'), and this machine is "
                f"{host_machine_arch()}: export it as a shared library (export_library, "
                "`xweave compile -o MODEL.so`) and run it there")
        else:
            self._not_runnable = (f"the module was compiled for '{self.target}', and this CPU "
                                  f"('{host_cpu_name()}') lacks {', '.join(missing)}"
                                  if missing else None)
        if verify_params:
            _check_params(self.params, spec["params"], spec["params_sha256"])
        self.inputs: list[TensorSpec] = spec["inputs"]
        self.outputs: list[TensorSpec] = spec["outputs"]
        self.peak_memory_bytes: int | None = spec["peak_memory_bytes"]
        """Bytes of the arena holding one call's intermediate buffers (None: not planned)."""
        self.profile_slots: tuple[ProfileSlot, ...] | None = spec["profile"]
        """The timed kernel calls of a profiling build (None: a normal build)."""
        state = spec["call_state"]
        self._state_names = [name for name, _ in state]
        self._pool = CallStatePool([nbytes for _, nbytes in state])
        self._main = self._refuse
        self._team = None
        if self._engine is not None:
            main = self._engine.get_function(
                "main", [ctypes.c_void_p] * (len(self.inputs) + len(self.outputs) + len(state))
            )
            if not self._not_runnable:
                self._main = main
            address = self._engine.address(NUM_THREADS_GLOBAL)
            self._team = ctypes.c_int32.from_address(address) if address else None
        """The code's thread count, which `_govern_threads` lowers on a busy machine."""

    def _govern_threads(self) -> None:
        """The thread count asked for, capped by the cores free now (`ThreadGovernor`)."""
        team = self._team
        if team is None:
            return
        want = min(self._engine._num_threads, GOVERNOR.cap(team.value))
        if team.value != want:
            team.value = want

    @property
    def runnable(self) -> bool:
        """Whether this CPU can run the code (it has every feature of the target)."""
        return self._not_runnable is None

    def _refuse(self, *args) -> None:
        raise TargetError(self._not_runnable)

    @property
    def llvm_ir(self) -> str:
        """The optimized LLVM IR (only for a module built in this process)."""
        return self._compiled.llvm_ir if self._compiled else ""

    @property
    def assembly(self) -> str:
        """The generated assembly (only for a module built in this process)."""
        return self._compiled.assembly if self._compiled else ""

    @property
    def arena(self) -> np.ndarray | None:
        """The arena of an idle call state (allocated if none is idle), for inspection;
        None if the model has no arena."""
        if ARENA not in self._state_names:
            return None
        state = self._pool.take()
        self._pool.give(state)
        return state.buffers[self._state_names.index(ARENA)]

    # --- running -----------------------------------------------------------------

    def _check_inputs(self, inputs: Mapping[str, object]) -> list[np.ndarray]:
        return check_inputs(self.inputs, inputs)

    def run(self, *args, **inputs: np.ndarray) -> list[np.ndarray]:
        """Run the model: `run(data=x)`, `run({"data": x})`, or onnxruntime's
        `run(None, {"data": x})` / `run(["logits"], {"data": x})` (`None`: every
        output). Outputs come in the model's order or the order asked for. Safe to call
        from several threads at once."""
        feeds, chosen = feeds_and_outputs(args, inputs, self.outputs)
        arrays = self._check_inputs(feeds)
        outputs = [np.empty(spec.shape, spec.dtype) for spec in self.outputs]
        args = [data_address(a) for a in (*arrays, *outputs)]
        if self._team is not None and time.perf_counter() >= GOVERNOR.next_check:
            self._govern_threads()
        if not self._state_names:
            self._main(*args)
        else:
            state = self._pool.take()
            try:
                self._main(*args, *state.pointers)
            finally:
                self._pool.give(state)
        return outputs if chosen is None else [outputs[i] for i in chosen]

    def benchmark(self, inputs: dict[str, np.ndarray], repeat: int = 10,
                  number: int = 1) -> np.ndarray:
        """Seconds per run for `repeat` measurements of `number` runs each (after a warm-up)."""
        arrays = self._check_inputs(inputs)
        outputs = [np.empty(spec.shape, spec.dtype) for spec in self.outputs]
        self._govern_threads()
        state = self._pool.take()
        try:
            args = [data_address(a) for a in (*arrays, *outputs)]
            args += state.pointers
            self._main(*args)
            times = []
            for _ in range(repeat):
                start = time.perf_counter()
                for _ in range(number):
                    self._main(*args)
                times.append((time.perf_counter() - start) / number)
        finally:
            self._pool.give(state)
        return np.array(times)

    def profile(self, repeat: int = 10, **inputs: np.ndarray) -> Profile:
        """Time every kernel call over `repeat` runs (after a warm-up); a profiling build
        only (`xweave.build(..., profile=True)`). `print(profile.table())` shows it.
        Concurrent `profile` (and `run`) calls each count in their own counters."""
        if self.profile_slots is None:
            raise ProfileError("this module was built without profiling: build it with "
                               "xweave.build(..., profile=True) (or `xweave compile --profile`)")
        arrays = self._check_inputs(inputs)
        outputs = [np.empty(spec.shape, spec.dtype) for spec in self.outputs]
        state = self._pool.take()
        try:
            counters = state.buffers[self._state_names.index(PROFILE_GLOBAL)].view(np.int64)
            args = [data_address(a) for a in (*arrays, *outputs)]
            args += state.pointers
            return run_profile(lambda: self._main(*args), counters[:len(self.profile_slots)],
                               self.profile_slots, repeat)
        finally:
            self._pool.give(state)

    # --- export / load --------------------------------------------------------------

    def export(self, path: str | os.PathLike) -> None:
        """Write one file (object code, parameters, manifest) that `load_module` reads.

        The file is written to a temporary name and renamed, so an existing module at
        `path` is never left half-written.
        """
        path = Path(path)
        target = self.abi["target"]
        manifest = {
            "format": "xweave-module",
            "version": FORMAT_VERSION,
            "target": target["cpu"],
            "triple": target["triple"],
            "features": target["features"],
            "inputs": [s.to_json() for s in self.inputs],
            "outputs": [s.to_json() for s in self.outputs],
            "peak_memory_bytes": self.peak_memory_bytes,
            "module_sha256": hashlib.sha256(self.object_bytes).hexdigest(),
        }
        if self.profile_slots is not None:
            manifest["profile"] = [s.to_json() for s in self.profile_slots]
        write_zip_atomically(path, manifest, {"module.o": self.object_bytes,
                                              "params.npz": npz_bytes(self.params)})

    def export_library(self, path: str | os.PathLike, cc: str | None = None) -> None:
        """Write one shared library (kernels, weights, call plan, signature and the C
        runtime of `xweave.h`) that runs without Python, on the target's machine: see
        `runtime.library_export`. `cc` names the C compiler that links it
        (default: `$XWEAVE_CC`, else the system's, or the target's cross compiler)."""
        export_library(path, self.object_bytes, self.params, self.abi, cc=cc)


# --- the ABI description ---------------------------------------------------------------


def params_digest(params: Mapping[str, np.ndarray]) -> str:
    """SHA-256 of the parameters: names, dtypes, shapes and bytes, in name order."""
    h = hashlib.sha256()
    for name in sorted(params):
        array = np.ascontiguousarray(params[name])
        h.update(json.dumps([name, array.dtype.str, list(array.shape)]).encode())
        h.update(memoryview(array).cast("B"))
    return h.hexdigest()


def _abi_in_object(object_bytes: bytes) -> dict | None:
    """The ABI description an object carries, read from its bytes (code for another
    architecture is never loaded)."""
    try:
        raw = object_symbol(object_bytes, ABI_GLOBAL)
    except ElfError as e:
        raise ModelError(f"module.o: {e}") from None
    if raw is None:
        return None
    try:
        abi = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        raise ModelError("the object's ABI description is not valid JSON") from None
    if not isinstance(abi, dict):
        raise ModelError("the object's ABI description is not a JSON object")
    return abi


def _parse_abi(abi: dict) -> dict:
    try:
        if abi.get("abi_version") != ABI_VERSION:
            raise ValueError(f"ABI version {abi.get('abi_version')!r}")
        state = [(str(d["name"]), _count(d["nbytes"])) for d in abi["call_state"]]
        target = abi["target"]
        if (not isinstance(target, dict) or not isinstance(target.get("cpu"), str)
                or not isinstance(target.get("triple"), str)
                or not isinstance(target.get("features", []), list)):
            raise ValueError(f"target {target!r:.60}")
        return {
            "target": abi["target"],
            "inputs": [_tensor_spec(d, "'inputs") for d in abi["inputs"]],
            "outputs": [_tensor_spec(d, "'outputs") for d in abi["outputs"]],
            "call_state": state,
            "peak_memory_bytes": abi["peak_memory_bytes"],
            "profile": (tuple(ProfileSlot.from_json(d) for d in abi["profile"])
                        if abi["profile"] is not None else None),
            "params": {d["name"]: (tuple(d["shape"]), d["dtype"]) for d in abi["params"]},
            "params_sha256": abi["params_sha256"],
        }
    except (KeyError, TypeError, ValueError, AttributeError, ModelError) as e:
        raise ModelError(f"the object's ABI description is malformed ({e})") from None


def _check_params(params: Mapping[str, np.ndarray], expected: Mapping[str, tuple],
                  digest: str) -> None:
    """A `ModelError` naming the first parameter that differs from the compiled ones."""
    for name in sorted(set(expected) | set(params)):
        if name not in params:
            raise ModelError(f"params.npz: parameter '{name}' is missing")
        if name not in expected:
            raise ModelError(f"params.npz: parameter '{name}' is not one of the model's")
        shape, dtype = expected[name]
        array = params[name]
        if tuple(array.shape) != shape or array.dtype != np.dtype(dtype):
            raise ModelError(f"params.npz: parameter '{name}' is {list(array.shape)} "
                             f"{array.dtype}, the code was compiled for {list(shape)} {dtype}")
    if params_digest(params) != digest:
        raise ModelError("params.npz: the parameter values differ from those the code was "
                         "compiled with (SHA-256 mismatch)")


# --- reading an exported module ---------------------------------------------------------


def _count(value: object) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ValueError(f"expected a non-negative integer, got {value!r:.60}")
    return value


def _tensor_spec(d: object, where: str) -> TensorSpec:
    if not isinstance(d, dict):
        raise ModelError(f"{where}': expected an object {{name, shape, dtype}}, got {d!r:.60}")
    name, shape, dtype = d.get("name"), d.get("shape"), d.get("dtype")
    if not isinstance(name, str):
        raise ModelError(f"{where}.name': expected a string, got {name!r:.60}")
    if not isinstance(shape, list) or any(
            not isinstance(n, int) or isinstance(n, bool) or n < 0 for n in shape):
        raise ModelError(f"{where}.shape': expected a list of non-negative integers, "
                         f"got {shape!r:.60}")
    if dtype not in DTYPES:
        raise ModelError(f"{where}.dtype': expected one of {', '.join(DTYPES)}, got {dtype!r:.60}")
    return TensorSpec(name, tuple(shape), dtype)


def _manifest_specs(manifest: dict, key: str) -> list[TensorSpec]:
    value = manifest.get(key)
    if not isinstance(value, list):
        raise ModelError(f"manifest field '{key}': expected a list, got {value!r:.60}")
    return [_tensor_spec(d, f"manifest field '{key}[{i}]") for i, d in enumerate(value)]


def _check_manifest(manifest: dict, module: CompiledModule) -> None:
    """A `ModelError` naming the first manifest field that differs from the code's ABI."""
    target = module.abi["target"]
    named = ((("target", target["cpu"]), ("triple", target["triple"]),
              ("features", target.get("features")))
             if manifest.get("version") != 2 else (("target", "llvm"),))
    for key, code in named:
        if manifest.get(key) != code:
            raise ModelError(f"manifest field '{key}' does not match the compiled code "
                             f"(manifest: {_brief(manifest.get(key))}; code: {_brief(code)})")
    inputs, outputs = _manifest_specs(manifest, "inputs"), _manifest_specs(manifest, "outputs")
    peak = manifest.get("peak_memory_bytes")
    if peak is not None:
        try:
            _count(peak)
        except ValueError as e:
            raise ModelError(f"manifest field 'peak_memory_bytes': {e}") from None
    profile = manifest.get("profile")
    try:
        slots = tuple(ProfileSlot.from_json(d) for d in profile) if profile is not None else None
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise ModelError(f"manifest field 'profile': malformed ({e!r:.60})") from None
    for key, given, code in (("inputs", inputs, module.inputs), ("outputs", outputs, module.outputs),
                             ("peak_memory_bytes", peak, module.peak_memory_bytes),
                             ("profile", slots, module.profile_slots)):
        if given != code:
            raise ModelError(f"manifest field '{key}' does not match the compiled code "
                             f"(manifest: {_brief(given)}; code: {_brief(code)})")


def _brief(value: object) -> str:
    if isinstance(value, list | tuple) and value and isinstance(value[0], TensorSpec):
        value = [f"{s.name} {list(s.shape)} {s.dtype}" for s in value]
    text = repr(value)
    return text if len(text) <= 120 else text[:117] + "..."


def read_module_file(path: Path) -> tuple[zipfile.ZipFile, dict]:
    """The opened zip of an exported module and its manifest (a `ModelError` if it is not one)."""
    try:
        zf = zipfile.ZipFile(path)
    except IsADirectoryError:
        raise ModelError(f"{path}: is a directory, not an xweave module file") from None
    except zipfile.BadZipFile:
        raise ModelError(f"{path}: not an xweave module (not a zip file)") from None
    try:
        manifest = json.loads(zf.read("manifest.json"))
    except KeyError:
        zf.close()
        raise ModelError(f"{path}: not an xweave module (no manifest.json)") from None
    except Exception as e:  # a damaged archive or manifest: anything zipfile/json raise
        zf.close()
        raise ModelError(f"{path}: manifest.json cannot be read ({type(e).__name__}: {e})") from None
    if not isinstance(manifest, dict):
        zf.close()
        raise ModelError(f"{path}: manifest.json is not a JSON object")
    return zf, manifest


def load_compiled(path: Path, zf: zipfile.ZipFile, manifest: dict) -> CompiledModule:
    """The `CompiledModule` of an opened export (see `runtime.load.load_module`).

    The manifest, the object code (its SHA-256, before LLVM reads it) and the
    parameters are checked against each other and against the ABI the code carries; a
    mismatch or a damaged file is a `ModelError` naming the field or member.
    """
    _check_version(path, manifest)
    digest = manifest.get("module_sha256")
    if not isinstance(digest, str):
        raise ModelError(f"{path}: manifest field 'module_sha256': expected a string, "
                         f"got {digest!r:.60}")
    object_bytes = _member(path, zf, "module.o")
    if hashlib.sha256(object_bytes).hexdigest() != digest:
        raise ModelError(f"{path}: module.o does not match the manifest's module_sha256 "
                         "(the file was modified or truncated)")
    if "params.npz" not in zf.namelist():
        raise ModelError(f"{path}: no 'params.npz' in the module")
    try:
        params = read_arrays(path, zf, "params.npz")  # (checked by their SHA-256 below)
    except Exception as e:  # a damaged .npz: anything zipfile/numpy/struct raise
        raise ModelError(f"{path}: params.npz cannot be read ({type(e).__name__}: {e})") from None
    try:
        module = CompiledModule(object_bytes, params)
        _check_manifest(manifest, module)
    except ModelError as e:
        raise ModelError(at_path(path, str(e))) from None
    if not module.runnable:
        again = ("" if module._engine is None else ": compile it again with --target llvm "
                 "(or for a CPU without these features)")
        raise TargetError(f"{path}: {module._not_runnable}{again}")
    return module


def at_path(path: Path, message: str) -> str:
    """`message` prefixed by `path:` (once)."""
    return message if message.startswith(f"{path}:") else f"{path}: {message}"


def _check_version(path: Path, manifest: dict) -> None:
    fmt, version = manifest.get("format"), manifest.get("version")
    if fmt != "xweave-module":
        raise ModelError(f"{path}: not an xweave module (manifest format {fmt!r:.60})")
    if version == 1:
        raise ModelError(f"{path}: module format version 1 was written by an older xweave "
                         "and cannot be loaded; compile the model again")
    if version not in READ_VERSIONS or isinstance(version, bool):
        raise ModelError(f"{path}: unsupported module format version {version!r:.60} "
                         f"(this xweave reads versions {', '.join(map(str, READ_VERSIONS))})")


def _member(path: Path, zf: zipfile.ZipFile, name: str) -> bytes:
    try:
        return zf.read(name)
    except KeyError:
        raise ModelError(f"{path}: no '{name}' in the module") from None
    except Exception as e:  # a damaged archive member
        raise ModelError(f"{path}: {name} cannot be read ({type(e).__name__}: {e})") from None
