"""A model library (`runtime.library_export.export_library`) run in this process through
its C API (`native/xweave.h`), with ctypes:

    same = xweave.load_module("model.so")      # a `LibraryModule`

`LibraryModule` makes the checks `xweave_open` makes (a whole ELF shared library for
this machine, whose `.note.xweave` says this C API version), loads the library
(`ctypes.CDLL`), and calls through its `xweave_library` table: open, the signature,
run with caller-owned buffers (numpy arrays), threads, close.
"""

from __future__ import annotations

import ctypes
import mmap
import os
import threading
import time
import weakref
from pathlib import Path

import numpy as np

from xweave.errors import InputError, ModelError
from xweave.runtime.arena import ArenaError
from xweave.runtime.elf import ElfError, LibraryNote, host_machine_arch, read_library
from xweave.runtime.library_export import C_ABI_VERSION, LIBRARY_MAGIC
from xweave.runtime.module import DTYPES, TensorSpec, check_inputs, feeds_and_outputs
from xweave.runtime.threads import check_num_threads
from xweave.target import Target, TargetError

ELF_MAGIC = b"\x7fELF"


# ------------------------------------------------------------------------------------
# The C API through ctypes
# ------------------------------------------------------------------------------------

_STATUS_NAMES = {0: "OK", 1: "INVALID_ARGUMENT", 2: "IO", 3: "NOT_A_MODEL",
                 4: "WRONG_TARGET", 5: "ABI_VERSION", 6: "OUT_OF_MEMORY", 7: "INTERNAL"}
_DTYPE_CODES = {name: i + 1 for i, name in enumerate(
    ("float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "bool"))}
assert set(_DTYPE_CODES) == set(DTYPES)


class _Error(ctypes.Structure):
    _fields_ = [("code", ctypes.c_int), ("message", ctypes.c_char * 512)]


class _TensorInfo(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("dtype", ctypes.c_int), ("ndim", ctypes.c_int32),
                ("shape", ctypes.POINTER(ctypes.c_int64)), ("nbytes", ctypes.c_size_t)]


class _Tensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("nbytes", ctypes.c_size_t), ("dtype", ctypes.c_int)]


class _TargetInfo(ctypes.Structure):
    _fields_ = [("triple", ctypes.c_char_p), ("target", ctypes.c_char_p),
                ("features", ctypes.c_char_p), ("peak_memory_bytes", ctypes.c_int64)]


_P = ctypes.c_void_p
_ERR = ctypes.POINTER(_Error)
_INFO = ctypes.CFUNCTYPE(ctypes.c_int, _P, ctypes.c_size_t, ctypes.POINTER(_TensorInfo), _ERR)


class _Library(ctypes.Structure):
    """`xweave_library` of xweave.h."""

    _fields_ = [
        ("magic", ctypes.c_uint32), ("abi_version", ctypes.c_uint32),
        ("size", ctypes.c_uint32), ("reserved", ctypes.c_uint32),
        ("open", ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(_P), _ERR)),
        ("close", ctypes.CFUNCTYPE(None, _P)),
        ("num_inputs", ctypes.CFUNCTYPE(ctypes.c_size_t, _P)),
        ("num_outputs", ctypes.CFUNCTYPE(ctypes.c_size_t, _P)),
        ("input_info", _INFO),
        ("output_info", _INFO),
        ("run", ctypes.CFUNCTYPE(ctypes.c_int, _P, ctypes.POINTER(_Tensor), ctypes.c_size_t,
                                 ctypes.POINTER(_Tensor), ctypes.c_size_t, _ERR)),
        ("set_num_threads", ctypes.CFUNCTYPE(ctypes.c_int, _P, ctypes.c_int, _ERR)),
        ("num_threads", ctypes.CFUNCTYPE(ctypes.c_int, _P)),
        ("target_info", ctypes.CFUNCTYPE(ctypes.c_int, _P, ctypes.POINTER(_TargetInfo), _ERR)),
    ]


def is_library(path: str | os.PathLike) -> bool:
    """Whether `path` is an ELF file (a library of `export_library`, by its magic)."""
    try:
        with open(path, "rb") as f:
            return f.read(4) == ELF_MAGIC
    except OSError:
        return False


def read_library_note(path: str | os.PathLike) -> tuple[str, LibraryNote]:
    """The architecture and the xweave note of a library file, after checking it is a
    whole ELF shared library (a `ModelError` naming what is wrong)."""
    try:
        with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
            header, note = read_library(data)  # type: ignore[arg-type]
    except (ElfError, ValueError) as e:
        raise ModelError(f"{path}: not a model library ({e})") from None
    if note is None:
        raise ModelError(f"{path}: not an xweave model library (no xweave note)")
    return header.arch, note


def _check_status(status: int, error: _Error, where: str = "") -> None:
    if status == 0:
        return
    message = (where + error.message.decode(errors="replace")) or _STATUS_NAMES.get(status, "")
    if status == 1:
        raise InputError(message)
    if status == 4:
        raise TargetError(message)
    if status == 6:
        raise ArenaError(message)
    raise ModelError(message)


class LibraryModule:
    """A model library (`export_library`) opened in this process through its C API:
    `run`, `benchmark`, threads, as `CompiledModule` (and as safe from many threads:
    each call has its own call state, from the library's pool)."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        machine, note = read_library_note(self.path)
        if machine != host_machine_arch():
            raise TargetError(f"{self.path}: the model was compiled for {note.triple} "
                              f"('{note.target}'), this machine is {host_machine_arch()}: "
                              "run it there")
        if note.abi_version != C_ABI_VERSION:
            raise ModelError(f"{self.path}: the library has xweave ABI version "
                             f"{note.abi_version}, this xweave reads version {C_ABI_VERSION}")
        try:
            self._cdll = ctypes.CDLL(str(self.path.resolve()),
                                     mode=os.RTLD_NOW | os.RTLD_LOCAL)
            table = _Library.in_dll(self._cdll, "xweave_library")
        except (OSError, ValueError) as e:
            raise ModelError(f"{self.path}: cannot load the library ({e})") from None
        if (table.magic != LIBRARY_MAGIC or table.abi_version != C_ABI_VERSION
                or table.size < ctypes.sizeof(_Library)):
            raise ModelError(f"{self.path}: the library's table is not of xweave ABI version "
                             f"{C_ABI_VERSION}")
        self._table = table
        self._run_fn = table.run
        self._local = threading.local()
        state = _P()
        error = _Error()
        _check_status(table.open(ctypes.byref(state), ctypes.byref(error)), error, f"{self.path}: ")
        self._state = state
        self._finalizer = weakref.finalize(self, table.close, state)
        self.inputs = self._specs(table.num_inputs(state), table.input_info)
        self.outputs = self._specs(table.num_outputs(state), table.output_info)
        info = _TargetInfo()
        _check_status(table.target_info(state, ctypes.byref(info), ctypes.byref(error)), error)
        self.target = Target.parse(info.target.decode())
        """The CPU target the code was generated for."""
        self.triple = info.triple.decode()
        self.features = tuple(f for f in info.features.decode().split(",") if f)
        self.peak_memory_bytes = info.peak_memory_bytes if info.peak_memory_bytes >= 0 else None
        self.profile_slots = None
        self._codes = [_DTYPE_CODES[s.dtype] for s in self.inputs + self.outputs]

    def _specs(self, count: int, info_of) -> list[TensorSpec]:
        specs = []
        error = _Error()
        for i in range(count):
            info = _TensorInfo()
            _check_status(info_of(self._state, i, ctypes.byref(info), ctypes.byref(error)), error)
            dtype = next(n for n, c in _DTYPE_CODES.items() if c == info.dtype)
            specs.append(TensorSpec(info.name.decode(), tuple(info.shape[:info.ndim]), dtype))
        return specs

    runnable = True
    llvm_ir = ""
    assembly = ""

    def close(self) -> None:
        """Close the model (no call may be running); also done when it is collected."""
        self._finalizer()

    # --- threads -------------------------------------------------------------------

    @property
    def num_threads(self) -> int:
        """Threads of the parallel loops of later calls."""
        return self._table.num_threads(self._state)

    @num_threads.setter
    def num_threads(self, n: int) -> None:
        check_num_threads(n)
        error = _Error()
        _check_status(self._table.set_num_threads(self._state, n, ctypes.byref(error)), error)

    def _xweave_set_threads(self, n: int) -> None:  # runtime.threads.set_num_threads
        self.num_threads = n

    # --- running -------------------------------------------------------------------

    def _call(self, arrays: list[np.ndarray], outputs: list[np.ndarray]) -> None:
        # Each calling thread reuses its own argument structures (only the addresses change).
        args = getattr(self._local, "args", None)
        if args is None:
            n_in, n_out = len(self.inputs), len(self.outputs)
            tensors_in = (_Tensor * max(1, n_in))()
            tensors_out = (_Tensor * max(1, n_out))()
            for tensor, spec, code in zip([*tensors_in[:n_in], *tensors_out[:n_out]],
                                          self.inputs + self.outputs, self._codes):
                tensor.nbytes = int(np.prod(spec.shape, dtype=np.int64)) * np.dtype(spec.dtype).itemsize
                tensor.dtype = code
            error = _Error()
            args = self._local.args = (tensors_in, tensors_out, error, (
                self._state, tensors_in, n_in, tensors_out, n_out, ctypes.byref(error)))
        tensors_in, tensors_out, error, call = args
        for tensor, array in zip(tensors_in, arrays):
            tensor.data = array.ctypes.data
        for tensor, array in zip(tensors_out, outputs):
            tensor.data = array.ctypes.data
        status = self._run_fn(*call)
        if status:
            _check_status(status, error)

    def run(self, *args, **inputs: np.ndarray) -> list[np.ndarray]:
        """Run the model (the forms of `CompiledModule.run`): one C call of
        `xweave_run` with the inputs' and new outputs' buffers."""
        feeds, chosen = feeds_and_outputs(args, inputs, self.outputs)
        arrays = check_inputs(self.inputs, feeds)
        outputs = [np.empty(spec.shape, spec.dtype) for spec in self.outputs]
        self._call(arrays, outputs)
        return outputs if chosen is None else [outputs[i] for i in chosen]

    def benchmark(self, inputs: dict[str, np.ndarray], repeat: int = 10,
                  number: int = 1) -> np.ndarray:
        """Seconds per run for `repeat` measurements of `number` runs each (after a warm-up)."""
        arrays = check_inputs(self.inputs, inputs)
        outputs = [np.empty(spec.shape, spec.dtype) for spec in self.outputs]
        self._call(arrays, outputs)
        times = []
        for _ in range(repeat):
            start = time.perf_counter()
            for _ in range(number):
                self._call(arrays, outputs)
            times.append((time.perf_counter() - start) / number)
        return np.array(times)

    def export(self, path: str | os.PathLike) -> None:
        """Not possible: the library's object code and weights are linked together."""
        raise ModelError(f"{path}: a model library cannot be written as a module file; "
                         f"compile the model again (or copy {self.path})")

