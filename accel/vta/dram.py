"""The VTA simulator's memories and errors: DRAM as one flat byte space (`Dram`), the
blocked layouts the DMA moves (`pack_inp`/`pack_wgt`/`pack_acc`/`unpack_out`), and what
a simulated run can raise. See `simulator.py` for the semantics."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from xweave.accel.vta.config import DEFAULT, HardwareConfig
from xweave.accel.vta.dialect import MemoryType
from xweave.errors import XweaveError

INT_DTYPES = {8: "<i1", 16: "<i2", 32: "<i4", 64: "<i8"}
"""numpy dtype of a little-endian signed integer of each width in bits."""


# --------------------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------------------


class SimulatorError(XweaveError):
    """Base of the simulator's errors. When one instruction is at fault, `index` is its
    position in the instruction stream and `disassembly` its text; the message names both."""

    def __init__(
        self,
        what: str,
        *,
        index: int | None = None,
        disassembly: str | None = None,
        cycle: int | None = None,
    ):
        self.what = what
        self.index = index
        self.disassembly = disassembly
        self.cycle = cycle
        if index is not None:
            where = f"instruction #{index} at {index * 16:#06x}"
            if disassembly:
                where += f" ({disassembly})"
            message = f"{where}: {what}"
        else:
            message = what
        if cycle is not None and index is not None:
            message += f" [cycle {cycle}]"
        super().__init__(message)


class DecodeError(SimulatorError):
    """The instruction stream or uop segment is not a valid binary program."""


class UnsupportedConfigError(SimulatorError):
    """The hardware config uses a data width the simulator cannot represent."""


class MissingFinishError(SimulatorError):
    """The program has no FINISH instruction, so it would never signal completion."""


class DeadlockError(SimulatorError):
    """No module can make progress: each one with instructions left waits on an empty token
    queue. `blocked` maps each such module to (instruction index, queues it waits on)."""

    def __init__(self, what: str, *, blocked: Mapping[str, tuple[int, tuple[str, ...]]], **kw: Any):
        self.blocked = dict(blocked)
        super().__init__(what, **kw)


class ScratchpadOutOfRangeError(SimulatorError):
    """An instruction addresses scratchpad elements beyond the scratchpad's depth."""


class DramOutOfRangeError(SimulatorError):
    """A LOAD/STORE addresses bytes outside the DRAM (or micro-ops outside the uop segment)."""


class TokenQueueOverflowError(SimulatorError):
    """An instruction pushes a token into a dependency queue that is already full."""


# --------------------------------------------------------------------------------------
# Data layout helpers
# --------------------------------------------------------------------------------------


def _dtype(bits: int) -> np.dtype:
    return np.dtype(INT_DTYPES[bits])


def element_shape(mem: str, config: HardwareConfig) -> tuple[int, ...]:
    c = config
    return {
        "inp": (c.batch, c.block_in),
        "wgt": (c.block_out, c.block_in),
        "acc": (c.batch, c.block_out),
        "out": (c.batch, c.block_out),
        "uop": (),
    }[mem]


def memory_dtype(mem: str, config: HardwareConfig) -> np.dtype:
    if mem == "uop":
        return np.dtype("<u4")
    bits = {"inp": config.inp_bits, "wgt": config.wgt_bits, "acc": config.acc_bits, "out": config.out_bits}
    return _dtype(bits[mem])


def _block(a: np.ndarray, rb: int, cb: int, what: str, dtype: np.dtype) -> np.ndarray:
    a = np.asarray(a)
    if a.ndim != 2:
        raise ValueError(f"{what}: expected a 2-D matrix, got shape {a.shape}")
    rows, cols = a.shape
    if rows % rb or cols % cb:
        raise ValueError(f"{what}: shape {a.shape} is not a multiple of the ({rb}, {cb}) block")
    out = a.reshape(rows // rb, rb, cols // cb, cb).transpose(0, 2, 1, 3)
    return np.ascontiguousarray(_checked_cast(out, dtype, what))


def _checked_cast(a: np.ndarray, dtype: np.dtype, what: str) -> np.ndarray:
    a = np.asarray(a)
    if a.dtype == dtype:
        return a
    if not np.issubdtype(a.dtype, np.integer):
        raise ValueError(f"{what}: expected integers, got dtype {a.dtype}")
    info = np.iinfo(dtype)
    if a.size and (a.min() < info.min or a.max() > info.max):
        raise ValueError(f"{what}: values outside [{info.min}, {info.max}] do not fit {dtype.name}")
    return a.astype(dtype)


def pack_inp(x: np.ndarray, config: HardwareConfig = DEFAULT) -> np.ndarray:
    """(M, K) activations -> blocked (M/BATCH, K/BLOCK_IN, BATCH, BLOCK_IN): input element
    (m, kb) is at element address m*(K/BLOCK_IN) + kb from the array's start."""
    return _block(x, config.batch, config.block_in, "pack_inp", memory_dtype("inp", config))


def pack_wgt(w: np.ndarray, config: HardwareConfig = DEFAULT) -> np.ndarray:
    """(N, K) weights (out-major, y = x . w^T) -> (N/BLOCK_OUT, K/BLOCK_IN, BLOCK_OUT, BLOCK_IN):
    weight element (nb, kb) is at element address nb*(K/BLOCK_IN) + kb."""
    return _block(w, config.block_out, config.block_in, "pack_wgt", memory_dtype("wgt", config))


def pack_acc(a: np.ndarray, config: HardwareConfig = DEFAULT) -> np.ndarray:
    """(M, N) accumulators (e.g. a bias row) -> (M/BATCH, N/BLOCK_OUT, BATCH, BLOCK_OUT)."""
    return _block(a, config.batch, config.block_out, "pack_acc", memory_dtype("acc", config))


def _unblock(a: np.ndarray, what: str) -> np.ndarray:
    a = np.asarray(a)
    if a.ndim != 4:
        raise ValueError(f"{what}: expected a blocked 4-D array, got shape {a.shape}")
    rb_n, cb_n, rb, cb = a.shape
    return a.transpose(0, 2, 1, 3).reshape(rb_n * rb, cb_n * cb)


def unpack_out(o: np.ndarray, config: HardwareConfig = DEFAULT) -> np.ndarray:
    """Blocked (M/BATCH, N/BLOCK_OUT, BATCH, BLOCK_OUT) outputs -> the (M, N) matrix."""
    return _unblock(o, "unpack_out")


def unpack_acc(a: np.ndarray, config: HardwareConfig = DEFAULT) -> np.ndarray:
    """Inverse of `pack_acc`."""
    return _unblock(a, "unpack_acc")


# --------------------------------------------------------------------------------------
# DRAM
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DramRegion:
    """A named block of DRAM holding an array of `mem` elements."""

    name: str
    mem: str
    byte_offset: int
    shape: tuple[int, ...]
    dtype: np.dtype
    elem_bytes: int

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize

    @property
    def addr(self) -> int:
        """The region's start as a `dram_base`: in elements of its memory type."""
        return self.byte_offset // self.elem_bytes

    @property
    def num_elements(self) -> int:
        """Size in elements of its memory type."""
        return self.nbytes // self.elem_bytes


class Dram:
    """A flat, byte-addressed, little-endian DRAM image with named regions.

    `Dram()` grows as arrays are placed; `Dram(size)` is fixed; `Dram.wrap(buffer)` works in
    place on a caller's bytearray (or writable buffer). `place` writes an array at an address
    aligned to its memory type's element (and to 64 bytes) and returns its `DramRegion`,
    whose `addr` is what a LOAD/STORE's `dram_base` takes; `read` returns the array back.
    """

    ALIGN = 64

    def __init__(self, size: int | None = None, config: HardwareConfig = DEFAULT):
        self.config = config
        self._growable = size is None
        self._buf = np.zeros(size or 0, dtype=np.uint8)
        self._top = 0
        self.regions: dict[str, DramRegion] = {}

    @classmethod
    def wrap(cls, buffer: bytearray | memoryview | np.ndarray, config: HardwareConfig = DEFAULT) -> Dram:
        """A DRAM backed by (sharing memory with) a writable caller buffer; fixed size."""
        dram = cls(0, config)
        arr = np.frombuffer(buffer, dtype=np.uint8) if not isinstance(buffer, np.ndarray) else buffer
        if arr.dtype != np.uint8 or arr.ndim != 1:
            arr = arr.reshape(-1).view(np.uint8)
        if not arr.flags.writeable:
            raise ValueError("Dram.wrap needs a writable buffer (e.g. a bytearray)")
        dram._buf = arr
        return dram

    def copy(self) -> Dram:
        """An independent copy (same regions, same bytes; a wrapped buffer is copied too)."""
        new = Dram(None if self._growable else self.size, self.config)
        new._buf = self._buf.copy()
        new._top, new.regions = self._top, dict(self.regions)
        return new

    # --- raw bytes --------------------------------------------------------------------
    @property
    def size(self) -> int:
        return int(self._buf.size)

    @property
    def data(self) -> np.ndarray:
        """The whole image as a uint8 array (a view: writes go to DRAM)."""
        return self._buf

    def tobytes(self) -> bytes:
        return self._buf.tobytes()

    def _ensure(self, end: int) -> None:
        if end <= self.size:
            return
        if not self._growable:
            raise ValueError(f"DRAM of {self.size} bytes is too small: need {end} bytes")
        new = np.zeros(max(end, 2 * self.size), dtype=np.uint8)
        new[: self.size] = self._buf
        self._buf = new

    # --- regions ------------------------------------------------------------------------
    def _check_mem(self, mem: str | MemoryType) -> str:
        mem = str(mem)
        if mem not in ("inp", "wgt", "acc", "out"):
            raise ValueError(
                f"DRAM regions hold inp, wgt, acc or out elements, not {mem!r} "
                "(micro-ops come from the program's uop segment)"
            )
        return mem

    def alloc(self, name: str, mem: str | MemoryType, shape: int | tuple[int, ...], *, addr: int | None = None) -> DramRegion:
        """Reserve a zeroed region for an array of `shape` (an int = that many elements of
        `mem`, shaped (count, *element shape)), at element address `addr` or the next free one."""
        mem = self._check_mem(mem)
        dtype = memory_dtype(mem, self.config)
        if isinstance(shape, int):
            shape = (shape, *element_shape(mem, self.config))
        return self._place(name, mem, np.zeros(shape, dtype), addr)

    def place(self, name: str, array: np.ndarray, mem: str | MemoryType, *, addr: int | None = None) -> DramRegion:
        """Write `array` (cast, range-checked, to the memory type's dtype) as region `name`."""
        mem = self._check_mem(mem)
        dtype = memory_dtype(mem, self.config)
        return self._place(name, mem, _checked_cast(array, dtype, f"Dram.place({name!r})"), addr)

    def _place(self, name: str, mem: str, array: np.ndarray, addr: int | None) -> DramRegion:
        elem = self.config.elem_bytes(mem)
        nbytes = array.nbytes
        if nbytes % elem:
            raise ValueError(
                f"Dram.place({name!r}): {nbytes} bytes is not a whole number of {elem}-byte "
                f"{mem} elements"
            )
        if addr is None:
            align = max(elem, self.ALIGN)
            offset = -(-self._top // align) * align
        else:
            offset = addr * elem
        self._ensure(offset + nbytes)
        region = DramRegion(name, mem, offset, tuple(array.shape), array.dtype, elem)
        self.regions[name] = region
        self._top = max(self._top, offset + nbytes)
        self.write(region, array)
        return region

    def region(self, name: str | DramRegion) -> DramRegion:
        if isinstance(name, DramRegion):
            return name
        try:
            return self.regions[name]
        except KeyError:
            raise KeyError(f"no DRAM region {name!r}; regions: {', '.join(self.regions) or 'none'}") from None

    def addr(self, name: str) -> int:
        """`dram_base` of region `name`."""
        return self.region(name).addr

    def write(self, name: str | DramRegion, array: np.ndarray) -> None:
        r = self.region(name)
        data = np.ascontiguousarray(_checked_cast(np.broadcast_to(array, r.shape), r.dtype, f"Dram.write({r.name!r})"))
        self._buf[r.byte_offset : r.byte_offset + r.nbytes] = data.view(np.uint8).reshape(-1)

    def read(self, name: str | DramRegion) -> np.ndarray:
        """A copy of region `name` with the shape and dtype it was placed with."""
        r = self.region(name)
        raw = self._buf[r.byte_offset : r.byte_offset + r.nbytes]
        return raw.view(r.dtype).reshape(r.shape).copy()

    __getitem__ = read

    def read_elements(self, mem: str | MemoryType, addr: int, count: int) -> np.ndarray:
        """`count` elements of `mem` from element address `addr`, shaped (count, *element)."""
        mem = self._check_mem(mem)
        elem = self.config.elem_bytes(mem)
        lo, hi = addr * elem, (addr + count) * elem
        if hi > self.size:
            raise ValueError(f"elements [{addr}, {addr + count}) of {mem} exceed the {self.size}-byte DRAM")
        shape = (count, *element_shape(mem, self.config))
        return self._buf[lo:hi].view(memory_dtype(mem, self.config)).reshape(shape).copy()
