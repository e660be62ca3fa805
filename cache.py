"""The compile cache: a model compiled once loads from disk the next time it is built.

`xweave.build` keys each build by everything that decides its result (`compile_key`)
and keeps the compiled module as an exported module file (`CompiledModule.export` /
`HeteroModule.export`, read back with `runtime.load.load_module`) named by that key:

    <cache dir>/<sha256 of the key>.xwm

The cache dir is `platformdirs.user_cache_dir("xweave")` (`~/.cache/xweave` on Linux),
or `XWEAVE_CACHE_DIR`. `XWEAVE_CACHE=0`, `xweave.build(..., cache=False)` and `xweave
compile/run --no-cache` compile from scratch and write nothing; builds that dump their
IR always do. Entries are written atomically (a concurrent build never reads half an
entry) and checked when loaded (the module file's SHA-256s): a damaged entry is
discarded with a `CacheWarning` and the model compiled again. Beyond
`XWEAVE_CACHE_SIZE` bytes (default 2 GiB; `500M`, `4G` accepted) the least recently
used entries are evicted. A build that warned is not cached (a later hit would not
repeat the warning), nor is code this CPU cannot run (`load_module` refuses it).
`xweave cache info` / `xweave cache clear` show and empty the cache.
"""

from __future__ import annotations

import dataclasses
import functools
import contextlib
import hashlib
import mmap
import json
import logging
import os
import sys
import time
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import llvmlite
import llvmlite.binding as llvm
import numpy as np

from xweave import plugins, timing
from xweave.runtime.load import load_module
from xweave.target import Target, TargetError, as_target, machine_model

if TYPE_CHECKING:
    from xweave.pipeline import CompileOptions

log = logging.getLogger(__name__)

CACHE_DIR_ENV = "XWEAVE_CACHE_DIR"
"""Environment variable naming the cache directory (default: the user cache dir)."""

CACHE_ENV = "XWEAVE_CACHE"
"""Environment variable turning the cache off (`0`, `off`, `false`, `no`)."""

CACHE_SIZE_ENV = "XWEAVE_CACHE_SIZE"
"""Environment variable bounding the cache's size in bytes (`K`, `M`, `G` suffixes)."""

DEFAULT_SIZE = 2 << 30
"""The size limit when `XWEAVE_CACHE_SIZE` is not set: 2 GiB."""

ENTRY_SUFFIX = ".xwm"


class CacheWarning(UserWarning):
    """Something went wrong with the compile cache; the build compiled instead."""


class Uncacheable(Exception):
    """A build the cache cannot key safely (an option it does not know how to hash)."""


@dataclass
class CacheStats:
    """What the cache did in this process (for tests and `xweave cache info`)."""

    hits: int = 0
    misses: int = 0
    stores: int = 0
    discarded: int = 0


stats = CacheStats()


def enabled() -> bool:
    """Whether the cache is on (`XWEAVE_CACHE` is not `0`/`off`/`false`/`no`)."""
    return os.environ.get(CACHE_ENV, "1").strip().lower() not in ("0", "off", "false", "no")


def cache_dir() -> Path:
    """Where the entries live: `XWEAVE_CACHE_DIR`, else the user cache dir."""
    given = os.environ.get(CACHE_DIR_ENV, "").strip()
    if given:
        return Path(given).expanduser()
    import platformdirs  # lazy: only a build that caches needs it

    return Path(platformdirs.user_cache_dir("xweave"))


def size_limit() -> int:
    """The cache's size bound in bytes (`XWEAVE_CACHE_SIZE`, else `DEFAULT_SIZE`)."""
    text = os.environ.get(CACHE_SIZE_ENV, "").strip()
    if not text:
        return DEFAULT_SIZE
    scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:].upper(), 1)
    try:
        return int(float(text.rstrip("kKmMgGbB") if scale > 1 else text) * scale)
    except ValueError:
        warnings.warn(f"{CACHE_SIZE_ENV}={text!r}: expected a size in bytes such as "
                      f"2147483648, 500M or 2G; using {DEFAULT_SIZE >> 30}G", CacheWarning,
                      stacklevel=2)
        return DEFAULT_SIZE


# --------------------------------------------------------------------------------------
# The key
# --------------------------------------------------------------------------------------


def compile_key(model: Any, input_shapes: Mapping[str, tuple[int, ...]] | None,
                options: CompileOptions) -> str:
    """The SHA-256 (hex) naming the compiled result of `model` built with `options`.

    What goes in:
    * the model's content: an ONNX file's bytes and those of its external data files,
      an `onnx.ModelProto`'s serialization, a `.mlir` file's bytes, or a `ModuleOp`'s
      printed text; and `input_shapes`;
    * every field of `CompileOptions`: the target resolved (CPU name and features) with
      its machine model (cache sizes, the `XWEAVE_VECTOR_REGISTERS` override), for an
      accelerator its name and the host CPU's model (its CPU segments run there); fuse,
      layout, winograd, profile, any_target_records; the tuning records file's content;
      the accelerator options (arrays and files named by content);
    * the versions of xweave (and a fingerprint of its source files: path, size and
      mtime of each, so that an edited source tree misses), xDSL, llvmlite and its LLVM,
      onnx, numpy and Python.

    Threads are not in it: the thread count is set when code is loaded. Raises
    `Uncacheable` for anything it cannot hash faithfully (an unknown option type, a
    model it cannot read, an accelerator that is not built in): such builds are
    not cached rather than risk sharing a key.
    """
    described = {
        "versions": _versions(),
        "model": _model_digest(model),
        "input_shapes": _canonical(dict(input_shapes or {}), "input_shapes"),
        "options": _options(options),
    }
    text = json.dumps(described, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def _versions() -> dict[str, Any]:
    # `xweave.__version__`, read from the package already imported (importing the
    # package here would count as importing the driver, which sits above the cache).
    return {"xweave": sys.modules["xweave"].__version__, **_library_versions()}


@functools.cache
def _library_versions() -> dict[str, Any]:
    return {"source": _source_fingerprint(),
            "xdsl": _version("xdsl"), "llvmlite": llvmlite.__version__,
            "llvm": list(llvm.llvm_version_info), "onnx": _version("onnx"),
            "numpy": np.__version__, "python": list(sys.version_info[:3])}


def _version(package: str) -> str:
    try:
        return version(package)
    except PackageNotFoundError:
        return "unknown"


def _source_fingerprint() -> str:
    """A digest of the path, size and mtime of every Python file of the xweave package."""
    root = Path(__file__).resolve().parent  # the package root
    h = hashlib.sha256()
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if (Path(folder) / d / "__init__.py").is_file())
        for name in sorted(f for f in files if f.endswith(".py")):
            path = Path(folder) / name
            st = path.stat()
            h.update(f"{path.relative_to(root)}:{st.st_size}:{st.st_mtime_ns}\n".encode())
    return h.hexdigest()


def _file_digest(path: str | os.PathLike) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def _mapped(f) -> mmap.mmap | contextlib.nullcontext:
    """The open file `f` mapped read-only (an empty file, which cannot be mapped: b"")."""
    if os.fstat(f.fileno()).st_size == 0:
        return contextlib.nullcontext(b"")
    return mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)


def _model_digest(model: Any) -> dict[str, Any]:
    # (lazy imports: a cache hit of a model file loads neither onnx nor the compiler; an
    # in-memory model brings its library along)
    if not isinstance(model, str | os.PathLike):
        from xdsl.dialects.builtin import ModuleOp

        if isinstance(model, ModuleOp):
            from xweave.context import print_module

            return {"ir": hashlib.sha256(print_module(model).encode()).hexdigest()}
        import onnx

        if isinstance(model, onnx.ModelProto):
            if _external_data(model):
                raise Uncacheable("an in-memory ONNX model with external data")
            data = model.SerializeToString(deterministic=True)
            return {"onnx": hashlib.sha256(data).hexdigest()}
        raise Uncacheable(f"a model given as {type(model).__name__}")
    path = Path(model)
    try:
        if path.suffix == ".mlir":
            return {"mlir": _file_digest(path)}
        with open(path, "rb") as f, _mapped(f) as data:  # (hashed in place, not copied)
            # Parsing a large model costs more than the rest of a cache hit: only a file
            # that holds an external data entry's key (`location`, a protobuf string) is.
            external = _external_data(_parse_onnx(bytes(data))) \
                if data.find(b"\x0a\x08location") >= 0 else []
            digest = hashlib.sha256(data).hexdigest()
        return {"onnx": digest,
                "external": {name: _file_digest(path.parent / name) for name in external}}
    except Exception as e:  # unreadable: the build reports it, uncached
        raise Uncacheable(f"{path}: {type(e).__name__}") from e


def _parse_onnx(data: bytes):
    import onnx  # lazy: as above

    return onnx.load_model_from_string(data)


def _external_data(model) -> list[str]:
    """The files an ONNX model's tensors keep their data in."""
    from onnx.external_data_helper import _get_all_tensors, uses_external_data  # lazy: as above

    return sorted({entry.value for tensor in _get_all_tensors(model)
                   if uses_external_data(tensor)
                   for entry in tensor.external_data if entry.key == "location"})


def _options(options: CompileOptions) -> dict[str, Any]:
    """Every field of `options`, canonical (see `compile_key`)."""
    described: dict[str, Any] = {}
    for f in dataclasses.fields(options):
        value = getattr(options, f.name)
        if f.name == "target":
            described[f.name] = _target(as_target(value))
        elif f.name == "tuning_records":
            described[f.name] = None if value is None else _file_digest(value)
        elif f.name == "accelerator":
            described[f.name] = _canonical(dict(value), "accelerator", files=True)
        else:
            described[f.name] = _canonical(value, f.name)
    return described


def _target(target: Target) -> dict[str, Any]:
    if target.is_cpu:
        return {"cpu": str(target.resolve()), "machine": _canonical(machine_model(target), "target")}
    if target.kind not in plugins.BUILTIN:  # a plug-in's code is not versioned with ours
        raise Uncacheable(f"target '{target.kind}' is not built in")
    return {"accelerator": target.kind,
            "host": _canonical(machine_model(as_target("llvm")), "target")}


def _canonical(value: Any, where: str, files: bool = False) -> Any:
    """`value` as JSON that differs whenever the value does: arrays and bytes by
    digest, dataclasses by type and fields, strings naming a file by its content
    (`files=True`); `Uncacheable` for anything else."""
    if value is None or isinstance(value, bool | int | float):
        return value
    if isinstance(value, str | os.PathLike):
        if files and os.path.isfile(value):
            return {"file": os.fspath(value), "sha256": _file_digest(value)}
        if isinstance(value, str):
            return value
        return {"path": os.fspath(value)}
    if isinstance(value, bytes):
        return {"bytes": hashlib.sha256(value).hexdigest()}
    if isinstance(value, np.ndarray | np.generic):
        array = np.ascontiguousarray(value)
        return {"array": [array.dtype.str, list(array.shape)],
                "sha256": hashlib.sha256(array.tobytes()).hexdigest()}
    if isinstance(value, set | frozenset):  # in an order that does not vary by process
        return {"set": sorted((_canonical(v, where, files) for v in value),
                              key=lambda v: json.dumps(v, sort_keys=True))}
    if isinstance(value, list | tuple):
        return [_canonical(v, f"{where}[{i}]", files) for i, v in enumerate(value)]
    if isinstance(value, Mapping):
        if not all(isinstance(k, str) for k in value):
            raise Uncacheable(f"{where}: a mapping with non-string keys")
        return {k: _canonical(v, f"{where}.{k}", files) for k, v in value.items()}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        kind = type(value)
        return {"dataclass": f"{kind.__module__}.{kind.__qualname__}",
                "fields": {f.name: _canonical(getattr(value, f.name), f"{where}.{f.name}", files)
                           for f in dataclasses.fields(value)}}
    raise Uncacheable(f"{where}: cannot key a {type(value).__name__}")


# --------------------------------------------------------------------------------------
# Entries
# --------------------------------------------------------------------------------------


Built = TypeVar("Built")


def cached_build(key: str | None, compile: Callable[[], Built]) -> Built:
    """The module of entry `key` if the cache holds a sound one, else `compile()`,
    stored under `key` (None: compile, and store nothing)."""
    if key is None:
        return compile()
    path = cache_dir() / f"{key}{ENTRY_SUFFIX}"
    with timing.scope("cache lookup"):
        hit = _load(path)
    if hit is not None:
        stats.hits += 1
        log.info("compile cache: loaded %s", path)
        return hit  # type: ignore[return-value]
    stats.misses += 1
    caught: list[warnings.WarningMessage] = []
    try:
        with warnings.catch_warnings(record=True) as caught:
            compiled = compile()
    finally:  # shown as they would have been; a build that warned is not cached
        for w in caught:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    if not caught and _runnable(compiled):
        with timing.scope("cache store"):
            _store(path, compiled)
    return compiled


def _load(path: Path):
    if not path.is_file():
        return None
    try:
        module = load_module(path)
    except FileNotFoundError:  # evicted by another process meanwhile
        return None
    except TargetError:  # sound, but for features this CPU lacks (a cache shared by hosts)
        return None
    except Exception as e:  # noqa: BLE001 - an entry is only a cache: any fault means compile
        stats.discarded += 1
        warnings.warn(f"compile cache: discarding damaged entry {path} ({e}); compiling again",
                      CacheWarning, stacklevel=4)
        path.unlink(missing_ok=True)
        return None
    try:
        os.utime(path)  # recently used: evicted last
    except OSError:
        pass
    return module


def _runnable(compiled) -> bool:
    return all(m.runnable for m in getattr(compiled, "cpu_modules", [compiled]))


def _store(path: Path, compiled) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        compiled.export(path)  # atomic: written beside, then renamed
    except OSError as e:
        warnings.warn(f"compile cache: cannot write {path} ({e}); not cached", CacheWarning,
                      stacklevel=4)
        return
    stats.stores += 1
    log.info("compile cache: stored %s", path)
    evict(size_limit())


def entries(folder: Path | None = None) -> list[tuple[Path, os.stat_result]]:
    """The cache's entries with their stats, least recently used first."""
    folder = folder or cache_dir()
    found = []
    for path in folder.glob(f"*{ENTRY_SUFFIX}") if folder.is_dir() else ():
        try:
            found.append((path, path.stat()))
        except FileNotFoundError:
            continue
    return sorted(found, key=lambda e: e[1].st_mtime_ns)


def evict(limit: int) -> int:
    """Delete the least recently used entries until the cache holds at most `limit`
    bytes; the number deleted."""
    found = entries()
    total = sum(st.st_size for _, st in found)
    removed = 0
    for path, st in found:
        if total <= limit:
            break
        path.unlink(missing_ok=True)
        total -= st.st_size
        removed += 1
    return removed


STALE_SECONDS = 3600
"""Age after which a temporary file is taken for one an interrupted write left behind
(a younger one may be an entry another process is writing)."""


def clear() -> int:
    """Delete every entry (and temporary files left by interrupted writes); how many
    entries there were."""
    found = entries()
    for path, _ in found:
        path.unlink(missing_ok=True)
    folder = cache_dir()
    for tmp in folder.glob("*.tmp") if folder.is_dir() else ():
        try:
            if time.time() - tmp.stat().st_mtime > STALE_SECONDS:
                tmp.unlink()
        except FileNotFoundError:
            pass
    return len(found)


def info() -> str:
    """The cache's path, entry count, size and limit, one per line."""
    found = entries()
    size = sum(st.st_size for _, st in found)
    state = "on" if enabled() else f"off ({CACHE_ENV}={os.environ.get(CACHE_ENV)})"
    return (f"path: {cache_dir()}\nentries: {len(found)}\nsize: {_size(size)}\n"
            f"limit: {_size(size_limit())}\nstate: {state}")


def _size(n: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"


def key_for(model: Any, input_shapes: Mapping[str, tuple[int, ...]] | None,
            options: CompileOptions) -> str | None:
    """`compile_key`, or None when the build is not to be cached (it cannot be keyed)."""
    try:
        return compile_key(model, input_shapes, options)
    except Uncacheable as e:
        log.info("compile cache: not caching this build (%s)", e)
        return None


__all__ = ["CacheWarning", "cache_dir", "cached_build", "clear",
           "compile_key", "enabled", "evict", "info", "key_for", "size_limit", "stats"]
