"""Machine code loaded into this process (llvmlite MCJIT), and the target machines.

    engine = load_object(object_bytes, params)     # an object of `lowering.llvm_codegen`
    main = engine.get_function("main", [ctypes.c_void_p] * 3)

Parameters are bound through a per-object pointer table, not through symbols: the
object defines `xweave_param_table` (an array of pointers its code loads from) and the
entries' names (`xweave_param_names`) and byte sizes (`xweave_param_nbytes`);
`load_object` fills the table of the freshly loaded copy with the arrays' addresses.
`llvm.add_symbol` would instead bind a process-wide name: two models with a parameter of the same name, or one model loaded
twice with different weights, would share it. With the table each loaded instance has
its own bindings, and the object describes its parameters by itself.

Every other undefined symbol of the object (libm functions, `aligned_alloc`/`free`,
`memset`, ...) is resolved before the object is finalized, from the `symbols` given to
`load_object` or from the process; one that resolves nowhere raises
`UnresolvedSymbolError` naming it (MCJIT would silently leave the relocation unapplied
and the first call would crash). libgomp (`GOMP_parallel`, `omp_*`: parallel loops) is
loaded on demand, once, and never unloaded.

The thread count of parallel loops is bound the same way as parameters: the object
defines an `i32` global `xweave_num_threads`; `load_object` sets each loaded copy's to
`runtime.threads.default_num_threads()` (`XWEAVE_NUM_THREADS`, else every core) and
`Engine.num_threads` changes it later, without recompiling.

A model's object also describes its own calling convention (`xweave_abi`, a JSON object:
inputs, outputs, call state, parameters, the target it was compiled for; see
`runtime.module`): `Engine.abi()` reads it back from the loaded code, so a loader checks
what it was told against what the code was built for, before calling it.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import json
import os
import struct
import threading
from collections.abc import Mapping, Sequence

import llvmlite.binding as llvm_binding
import numpy as np

from xweave.errors import XweaveError
from xweave.runtime.abi import (
    ABI_GLOBAL,
    ABI_NBYTES,
    NUM_THREADS_GLOBAL,
    PARAM_COUNT,
    PARAM_NAMES,
    PARAM_NBYTES,
    PARAM_PREFIX,
    PARAM_TABLE,
)
from xweave.runtime.elf import MACHINES, host_machine_arch
from xweave.runtime.threads import (
    configure_openmp,
    default_num_threads,
    get_num_threads,
    set_num_threads,
)
from xweave.target import Target, TargetError

configure_openmp()  # before anything (lightgbm, ...) loads libgomp: it reads this once

_FALLBACK_LIBRARIES = {"": ("m",), "GOMP_": ("gomp",), "omp_": ("gomp",)}
"""Libraries loaded on demand when undefined symbols with these prefixes are not found."""


class JITError(XweaveError):
    """Compiling or loading machine code failed."""


class UnresolvedSymbolError(JITError):
    """The object calls or reads symbols that exist nowhere in the process."""

    def __init__(self, missing: Sequence[str]):
        self.missing = list(missing)
        super().__init__(
            "cannot load compiled code: unresolved external symbol(s) "
            + ", ".join(f"'{s}'" for s in self.missing)
            + " (not in the symbols given to load_object, nor in any library of the process)"
        )


# ----------------------------------------------------------------------------------
# Target machine
# ----------------------------------------------------------------------------------

_init_lock = threading.Lock()
_initialized: set[str] = set()


def _initialize(every_target: bool = False) -> None:
    with _init_lock:
        if "native" not in _initialized:
            # (llvmlite >= 0.44: no llvm.initialize(); the native target is enough)
            llvm_binding.initialize_native_target()
            llvm_binding.initialize_native_asmprinter()
            _initialized.add("native")
        if every_target and "all" not in _initialized:  # cross-compiling
            llvm_binding.initialize_all_targets()
            llvm_binding.initialize_all_asmprinters()
            _initialized.add("all")


def target_description(target: Target) -> dict[str, object]:
    """What code compiled for `target` needs, as the ABI records it: the LLVM triple,
    the resolved target (`llvm [-mtriple=T] -mcpu=NAME -mattr=...`) and the features of
    its architecture the code may use (`target.ARCH_FEATURES`)."""
    resolved = target.resolve()
    return {"triple": resolved.llvm_triple, "cpu": str(resolved),
            "features": sorted(resolved.features)}


def missing_cpu_features(description: Mapping[str, object]) -> list[str]:
    """The vector features the code of a `target_description` may use that this CPU
    lacks: code compiled for it could stop on an illegal instruction here (code for
    another architecture: that architecture)."""
    cpu = description.get("cpu")
    if not isinstance(cpu, str):
        raise TargetError(f"the ABI's target is malformed ({cpu!r:.60})")
    return Target.parse(cpu).missing_on_host()


NO_GATHERS = ("+prefer-no-gather", "+prefer-no-scatter")
"""LLVM tuning flags keeping its own vectorizers from gathers and scatters: schedules
never need them, and the strided copies LLVM made of them (transposes) ran up to 10x
slower on Zen 4 than scalar or 8-lane code (bench/HISTORY.md, issue 18)."""


def _create_target_machine(reloc: str, target: Target | None = None) -> llvm_binding.TargetMachine:
    """A new target machine for `target` (default: this host, with all its features)."""
    target = target or Target()
    cross = target.triple is not None or not target.on_host_arch
    _initialize(every_target=cross)
    try:
        llvm_target = (llvm_binding.Target.from_triple(target.llvm_triple) if cross
                       else llvm_binding.Target.from_default_triple())
    except RuntimeError as e:
        raise TargetError(f"LLVM cannot generate code for '{target.llvm_triple}': "
                          f"{str(e).strip()}") from None
    cpu, features = target.llvm_cpu_and_features()
    tuning = NO_GATHERS if target.arch == "x86_64" else ()
    return llvm_target.create_target_machine(
        cpu=cpu,
        features=",".join(f for f in (features, *tuning) if f),
        opt=3,
        reloc=reloc,
        codemodel="default" if reloc == "pic" else "jitdefault",
        abiname=target.llvm_abi,
    )


def target_machine(target: Target, reloc: str = "pic") -> llvm_binding.TargetMachine:
    """The (cached) target machine for a CPU target, at O3.

    Use it to optimize and emit code only: an MCJIT engine takes ownership of the
    target machine it is created with, so engines get their own (`load_object`).
    """
    return _cached_target_machine(target.resolve(), reloc)


def host_target_machine(reloc: str = "pic") -> llvm_binding.TargetMachine:
    """The (cached) target machine for this CPU and its features, at O3."""
    return _cached_target_machine(None, reloc)


@functools.cache
def _cached_target_machine(target: Target | None, reloc: str) -> llvm_binding.TargetMachine:
    return _create_target_machine(reloc, target)


# ----------------------------------------------------------------------------------
# Loading
# ----------------------------------------------------------------------------------


class Engine:
    """Machine code loaded in this process (an MCJIT engine) with its parameters bound.

    Keeps the engine, the object bytes and the parameter arrays alive; functions from
    `get_function` keep the engine alive in turn.
    """

    def __init__(self, engine, target_machine, object_bytes: bytes, keep: list[object]):
        self._engine = engine
        self._target_machine = target_machine
        self._object_bytes = object_bytes
        self._keep = keep

    @property
    def num_threads(self) -> int:
        """Threads used by the parallel loops of this instance (see `runtime.threads`)."""
        return get_num_threads(self)

    @num_threads.setter
    def num_threads(self, n: int) -> None:
        set_num_threads(self, n)

    def address(self, name: str) -> int:
        """The address of a function or global of the object (0 if absent)."""
        return self._engine.get_global_value_address(name) or 0

    def abi(self) -> dict | None:
        """The ABI description stored by `compile_llvm(module, abi)` (None: none stored)."""
        size = self.address(ABI_NBYTES)
        data = self.address(ABI_GLOBAL)
        if not size or not data:
            return None
        raw = ctypes.string_at(data, ctypes.c_int64.from_address(size).value)
        try:
            abi = json.loads(raw)
        except (ValueError, UnicodeDecodeError):
            raise JITError("the object's ABI description is not valid JSON") from None
        if not isinstance(abi, dict):
            raise JITError("the object's ABI description is not a JSON object")
        return abi

    def get_function(
        self,
        name: str,
        argtypes: Sequence[type] | None = None,
        restype: type | None = None,
    ):
        """A ctypes callable for function `name`.

        `argtypes` are ctypes types; None makes every argument a pointer (`c_void_p`),
        and then numpy arrays may be passed directly.
        """
        address = self._engine.get_function_address(name)
        if not address:
            raise JITError(f"no function '{name}' in the compiled code")
        if argtypes is not None:
            fn = ctypes.CFUNCTYPE(restype, *argtypes)(address)
            fn._xweave_engine = self  # keep the code alive as long as the function
            return fn
        return _PointerFunction(self, address, restype)


class _PointerFunction:
    """A function whose arguments are all pointers: numpy arrays, ints or None."""

    def __init__(self, engine: Engine, address: int, restype: type | None):
        self._engine = engine
        self._address = address
        self._restype = restype
        self._by_arity: dict[int, object] = {}

    def __call__(self, *args):
        fn = self._by_arity.get(len(args))
        if fn is None:
            fn = ctypes.CFUNCTYPE(self._restype, *[ctypes.c_void_p] * len(args))(self._address)
            self._by_arity[len(args)] = fn
        return fn(*[data_address(a) if isinstance(a, np.ndarray) else a for a in args])


_load_lock = threading.Lock()


def load_object(obj_bytes: bytes, symbols: Mapping[str, object] | None = None) -> Engine:
    """Load an object made by `compile_llvm` and bind its parameters and external symbols.

    `symbols` maps names to numpy arrays or addresses (ints). Parameters are looked up
    by their name or by their symbol (`xweave_param_<name>`); an array must have the
    parameter's byte size (it is kept alive by the engine). Any other entry binds an
    undefined symbol of the object (e.g. a replacement for a libm function).
    """
    symbols = dict(symbols or {})
    undefined = _undefined_symbols(obj_bytes)
    externals = {n: symbols[n] for n in undefined if n in symbols}
    missing = [n for n in undefined if n not in externals and not _in_process(n)]
    if missing:
        raise UnresolvedSymbolError(missing)

    keep: list[object] = [obj_bytes]
    with _load_lock:
        for name, value in externals.items():
            llvm_binding.add_symbol(name, _address_of(value, name, keep))
        tm = _create_target_machine("pic")
        engine = llvm_binding.create_mcjit_compiler(llvm_binding.parse_assembly(""), tm)
        object_file = llvm_binding.ObjectFileRef.from_data(obj_bytes)
        keep.append(object_file)
        engine.add_object_file(object_file)
        engine.finalize_object()
    result = Engine(engine, tm, obj_bytes, keep)
    _bind_params(result, symbols, keep)
    if result.address(NUM_THREADS_GLOBAL):
        result.num_threads = default_num_threads()
    return result


def _bind_params(engine: Engine, symbols: Mapping[str, object], keep: list[object]) -> None:
    count_address = engine.address(PARAM_COUNT)
    count = ctypes.c_int64.from_address(count_address).value if count_address else 0
    if count == 0:
        return
    names_address = engine.address(PARAM_NAMES)
    names: list[str] = []
    offset = 0
    while len(names) < count:
        raw = ctypes.string_at(names_address + offset)
        names.append(raw.decode())
        offset += len(raw) + 1
    nbytes = (ctypes.c_int64 * count).from_address(engine.address(PARAM_NBYTES))
    table = (ctypes.c_void_p * count).from_address(engine.address(PARAM_TABLE))

    missing = [n for n in names if n not in symbols and PARAM_PREFIX + n not in symbols]
    if missing:
        raise JITError(
            "cannot load compiled code: no value for parameter(s) "
            + ", ".join(f"'{n}'" for n in missing)
        )
    for i, name in enumerate(names):
        value = symbols[name] if name in symbols else symbols[PARAM_PREFIX + name]
        table[i] = _address_of(value, name, keep, expected_nbytes=nbytes[i])


def data_address(array: np.ndarray) -> int:
    """The address of a C-contiguous array's first byte: `array.ctypes.data`, at a third
    of its cost for a writable array (it is most of a small kernel's call overhead)."""
    try:
        return ctypes.addressof(ctypes.c_char.from_buffer(array))
    except (TypeError, ValueError, BufferError):  # read-only, empty or not contiguous
        return array.ctypes.data


def _address_of(
    value: object, name: str, keep: list[object], expected_nbytes: int | None = None
) -> int:
    """The address bound to `name`: a numpy array's data (kept alive) or an int."""
    if isinstance(value, np.ndarray):
        array = np.ascontiguousarray(value)
        if expected_nbytes is not None and array.nbytes != expected_nbytes:
            raise JITError(
                f"parameter '{name}': the array has {array.nbytes} bytes ({array.dtype}, "
                f"shape {list(array.shape)}), the code expects {expected_nbytes}"
            )
        keep.append(array)
        return array.ctypes.data
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise JITError(
        f"symbol '{name}': expected a numpy array or an address, got {type(value).__name__}"
    )


_loaded_libraries: list[ctypes.CDLL] = []


@functools.cache
def _load_library(short_name: str) -> bool:
    """Make a library's symbols visible to the JIT (libm, libgomp), for good.

    The library is first opened with `RTLD_NODELETE`: LLVM closes the libraries it
    loaded when the process exits (a static destructor), and libgomp's idle workers may
    still be spinning in its code then, which would crash the exiting process.
    """
    if short_name == "gomp":
        configure_openmp()  # libgomp reads its wait policy from the environment once
    path = ctypes.util.find_library(short_name)
    if path is None:
        return False
    try:
        mode = os.RTLD_GLOBAL | getattr(os, "RTLD_NODELETE", 0)
        _loaded_libraries.append(ctypes.CDLL(path, mode=mode))
        llvm_binding.load_library_permanently(path)
    except (OSError, RuntimeError):
        return False
    return True


def _in_process(name: str) -> bool:
    if llvm_binding.address_of_symbol(name):
        return True
    for prefix, libraries in _FALLBACK_LIBRARIES.items():
        if name.startswith(prefix):
            for library in libraries:
                if _load_library(library) and llvm_binding.address_of_symbol(name):
                    return True
    return False


# --- ELF ----------------------------------------------------------------------------

_SHT_SYMTAB = 2
_STB_WEAK = 2
_IGNORED_UNDEFINED = ("_GLOBAL_OFFSET_TABLE_",)


def _undefined_symbols(data: bytes) -> list[str]:
    """Names of the undefined, non-weak symbols of an ELF64 little-endian object for
    this machine (a `JITError` for anything else, before LLVM sees it: LLVM ends the
    process on a malformed object)."""
    if data[:4] != b"\x7fELF":
        raise JITError("not an ELF object file")
    if data[4] != 2 or data[5] != 1:
        raise JITError("only 64-bit little-endian ELF objects are supported")
    try:
        return _elf_undefined(data)
    except (struct.error, IndexError, ValueError, UnicodeDecodeError):
        raise JITError("malformed ELF object file") from None


def _elf_undefined(data: bytes) -> list[str]:

    machine = struct.unpack_from("<H", data, 0x12)[0]
    arch = MACHINES.get(machine, f"ELF machine {machine}")
    if arch != host_machine_arch():
        raise JITError(f"the object is for {arch}, not this {host_machine_arch()}")
    shoff = struct.unpack_from("<Q", data, 0x28)[0]
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
    sections = [
        struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)
    ]
    names: list[str] = []
    for _, sh_type, _, _, offset, size, link, _, _, entsize in sections:
        if sh_type != _SHT_SYMTAB:
            continue
        str_offset, str_size = sections[link][4], sections[link][5]
        strtab = data[str_offset:str_offset + str_size]
        for st_name, st_info, _, st_shndx, _, _ in struct.iter_unpack(
            "<IBBHQQ", data[offset:offset + size]
        ):
            if st_shndx != 0 or st_name == 0 or st_info >> 4 == _STB_WEAK:
                continue
            name = strtab[st_name:strtab.index(b"\0", st_name)].decode()
            if name not in _IGNORED_UNDEFINED:
                names.append(name)
    return names

