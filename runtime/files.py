"""Module files (zip archives): written so that a failure never leaves a half-written
one behind, and their arrays read in place."""

from __future__ import annotations

import contextlib
import errno
import io
import json
import math
import mmap
import os
import struct
import tempfile
import time
import zipfile
from collections.abc import Iterator, Mapping
from pathlib import Path

import numpy as np


@contextlib.contextmanager
def replacing(path: Path, mode: int) -> Iterator[Path]:
    """A temporary file beside `path` for the block to write, renamed over `path` when
    the block ends (an existing file is replaced whole or not at all) with the
    permissions `mode` less the umask (`mkstemp` would leave 0600); removed if the
    block raises."""
    fd, tmp = tempfile.mkstemp(dir=path.parent if str(path.parent) else ".",
                               prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        yield Path(tmp)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, mode & ~umask)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def write_zip_atomically(path: str | os.PathLike, manifest: Mapping[str, object],
                         members: Mapping[str, bytes]) -> None:
    """Write `manifest.json` and `members` into the zip file `path`, by `replacing` it."""
    with replacing(Path(path), 0o666) as tmp, open(tmp, "wb") as f, \
            zipfile.ZipFile(f, "w") as zf:
        zf.writestr("manifest.json", json.dumps(manifest, indent=2))
        for name, data in members.items():
            _write_aligned(zf, name, data)


ALIGNMENT = 64
"""Members' data (and so the arrays of an .npz member written by `npz_bytes`) start at
multiples of this many bytes in a module file: `read_arrays` maps them in place."""


def npz_bytes(arrays: Mapping[str, np.ndarray]) -> bytes:
    """`arrays` as `np.savez` writes them, with each array's data aligned to `ALIGNMENT`
    within the archive (numpy pads .npy headers to 64 bytes)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        for name, array in arrays.items():
            member = io.BytesIO()
            np.lib.format.write_array(member, np.asanyarray(array), allow_pickle=False)
            _write_aligned(zf, f"{name}.npy", member.getvalue())
    return buffer.getvalue()


def _write_aligned(zf: zipfile.ZipFile, name: str, data: bytes) -> None:
    """A stored member whose data starts at a multiple of `ALIGNMENT` in the archive:
    padded by an extra field of the local header (as Android's zipalign pads), which
    readers skip."""
    info = zipfile.ZipInfo(name, date_time=time.localtime(time.time())[:6])
    info.compress_type = zipfile.ZIP_STORED
    start = zf.fp.tell() + 30 + len(name.encode()) + 4  # (after the field's own header)
    padding = -start % ALIGNMENT
    info.extra = struct.pack("<HH", ZIPALIGN_FIELD, padding) + bytes(padding)
    zf.writestr(info, data)


ZIPALIGN_FIELD = 0xD935
"""The id of the padding extra field (zipalign's)."""


def read_arrays(path: Path, zf: zipfile.ZipFile, name: str) -> dict[str, np.ndarray]:
    """The arrays of the `.npz` member `name` of the module file `path` (open as `zf`).

    A member stored uncompressed (as `write_zip_atomically` and `np.savez` store
    them) is not read: its arrays are read-only views of the file mapped in memory
    (pages are read when the code first touches them, and shared between processes),
    copied only when misaligned for their element type. The archive's CRCs are not
    checked on this path: the caller checks the values (a module's parameters against
    the SHA-256 its code carries). Raises what zipfile, numpy and struct raise for a
    damaged member.
    """
    info = zf.getinfo(name)
    if info.compress_type != zipfile.ZIP_STORED:
        with np.load(io.BytesIO(zf.read(name)), allow_pickle=False) as npz:
            return {key: npz[key] for key in npz.files}
    with open(path, "rb") as f:
        mapped = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    view = memoryview(mapped)
    start = _data_offset(view, info)
    inner = _Window(view[start:start + info.file_size])
    arrays = {}
    with zipfile.ZipFile(inner) as npz:
        for member in npz.infolist():
            if member.compress_type != zipfile.ZIP_STORED or not member.filename.endswith(".npy"):
                raise ValueError(f"member {member.filename!r} is not a stored .npy")
            inner.seek(_data_offset(inner.view, member))
            version = np.lib.format.read_magic(inner)
            shape, fortran, dtype = (np.lib.format.read_array_header_1_0(inner) if version == (1, 0)
                                     else np.lib.format.read_array_header_2_0(inner))
            if dtype.hasobject:
                raise ValueError(f"member {member.filename!r} holds Python objects")
            count = math.prod(shape)
            offset = start + inner.tell()
            if offset + count * dtype.itemsize > start + member.header_offset + \
                    _local_header_size(inner.view, member) + member.file_size:
                raise ValueError(f"member {member.filename!r} is shorter than its array")
            array = np.frombuffer(mapped, dtype, count, offset)
            if offset % dtype.alignment:
                array = array.copy()
            arrays[member.filename[:-len(".npy")]] = \
                array.reshape(shape, order="F" if fortran else "C")
    return arrays


def _local_header_size(view: memoryview, info: zipfile.ZipInfo) -> int:
    """The size of a member's local file header (30 bytes, then its name and extra field,
    whose lengths may differ from the central directory's)."""
    header = bytes(view[info.header_offset:info.header_offset + 30])
    if len(header) < 30 or header[:4] != b"PK\x03\x04":
        raise ValueError(f"no local file header for member {info.filename!r}")
    name_length, extra_length = struct.unpack("<HH", header[26:30])
    return 30 + name_length + extra_length


def _data_offset(view: memoryview, info: zipfile.ZipInfo) -> int:
    """Where a member's data starts in the archive `view`."""
    offset = info.header_offset + _local_header_size(view, info)
    if offset + info.file_size > len(view):
        raise ValueError(f"member {info.filename!r} runs past the end of the archive")
    return offset


class _Window(io.RawIOBase):
    """A read-only, seekable file over a memoryview (an archive inside an archive)."""

    def __init__(self, view: memoryview):
        self.view = view
        self.position = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.position

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self.position, io.SEEK_END: len(self.view)}[whence]
        if base + offset < 0:  # (OSError, as a file raises: zipfile probes before the start)
            raise OSError(errno.EINVAL, "negative seek position")
        self.position = base + offset
        return self.position

    def readinto(self, buffer) -> int:
        data = self.view[self.position:self.position + len(buffer)]
        buffer[:len(data)] = data
        self.position += len(data)
        return len(data)
