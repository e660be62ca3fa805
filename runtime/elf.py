"""Reading ELF files without loading them: what machine an object or library is for,
whether a file is whole, the xweave note of a model library, a symbol's bytes.

Everything here reads bytes only (LLVM and the dynamic loader end the process, or
fault later, on a malformed or truncated file: the checks come first). Only 64-bit
little-endian ELF is read, the format of every architecture xweave generates code
for.
"""

from __future__ import annotations

import platform
import struct
from dataclasses import dataclass

from xweave.errors import XweaveError

MACHINES = {62: "x86_64", 183: "aarch64", 243: "riscv64"}
"""ELF `e_machine` values of the architectures xweave generates code for."""

ET_REL, ET_DYN = 1, 3
PT_LOAD, PT_NOTE = 1, 4
SHT_SYMTAB = 2

NOTE_NAME = b"xweave"
"""Owner name of the note a model library describes itself with (`.note.xweave`)."""
NOTE_TYPE = 1


class ElfError(XweaveError):
    """A file that is not a whole 64-bit little-endian ELF file of the expected kind."""


@dataclass(frozen=True)
class ElfHeader:
    """The fields of an ELF64 header this module reads."""

    type: int
    machine: int
    phoff: int
    shoff: int
    phentsize: int
    phnum: int
    shentsize: int
    shnum: int

    @property
    def arch(self) -> str:
        """The architecture's name (`aarch64`), or `ELF machine N` for another one."""
        return MACHINES.get(self.machine, f"ELF machine {self.machine}")


def host_machine_arch() -> str:
    """This machine's architecture as `MACHINES` names it."""
    machine = platform.machine().lower()
    return {"amd64": "x86_64", "arm64": "aarch64"}.get(machine, machine)


def read_header(data: bytes) -> ElfHeader:
    """The header of an ELF64 little-endian file (an `ElfError` for anything else)."""
    if len(data) < 64 or data[:4] != b"\x7fELF":
        raise ElfError("not an ELF file")
    if data[4] != 2 or data[5] != 1:
        raise ElfError("not a 64-bit little-endian ELF file")
    (e_type, machine, _, _, phoff, shoff, _, _, phentsize, phnum, shentsize,
     shnum, _) = struct.unpack_from("<HHIQQQIHHHHHH", data, 16)
    return ElfHeader(e_type, machine, phoff, shoff, phentsize, phnum, shentsize, shnum)


def check_whole(header: ElfHeader, size: int, segments: list[tuple[int, int, int]]) -> None:
    """An `ElfError` unless the header tables and every loaded segment lie inside the
    `size` bytes of the file (a truncated library would fault when its pages are read)."""
    if header.phoff + header.phnum * header.phentsize > size:
        raise ElfError("the file is truncated (its program headers end past the end of the file)")
    if header.shoff + header.shnum * header.shentsize > size:
        raise ElfError("the file is truncated (its section headers end past the end of the file)")
    for kind, offset, filesz in segments:
        if offset + filesz > size:
            raise ElfError("the file is truncated (a segment ends past the end of the file)")


def program_headers(data: bytes, header: ElfHeader) -> list[tuple[int, int, int]]:
    """(p_type, p_offset, p_filesz) of every program header."""
    if header.phnum and header.phentsize < 56:
        raise ElfError("malformed ELF file (program header size)")
    result = []
    for i in range(header.phnum):
        p_type, _, offset, _, _, filesz = struct.unpack_from(
            "<IIQQQQ", data, header.phoff + i * header.phentsize)
        result.append((p_type, offset, filesz))
    return result


def notes(data: bytes, offset: int, size: int) -> list[tuple[bytes, int, bytes]]:
    """(name, type, descriptor) of the notes in `data[offset:offset + size]`."""
    found = []
    end = offset + size
    while offset + 12 <= end:
        namesz, descsz, kind = struct.unpack_from("<III", data, offset)
        name_at = offset + 12
        desc_at = name_at + (namesz + 3) // 4 * 4
        next_at = desc_at + (descsz + 3) // 4 * 4
        if next_at > end:
            raise ElfError("malformed ELF note")
        found.append((data[name_at:name_at + namesz].rstrip(b"\0"), kind,
                      data[desc_at:desc_at + descsz]))
        offset = next_at
    return found


@dataclass(frozen=True)
class LibraryNote:
    """What a model library says of itself in its `.note.xweave` (written by
    `runtime.library.export_library`): the version of its C API and its target."""

    abi_version: int
    triple: str
    target: str
    """The resolved target (`llvm -mtriple=... -mcpu=...`)."""
    features: str
    """The features its code uses, comma-separated."""


def read_library(data: bytes) -> tuple[ElfHeader, LibraryNote | None]:
    """The header and xweave note (None: no note) of a whole shared library, checked
    for truncation (an `ElfError` naming what is wrong)."""
    header = read_header(data)
    if header.type != ET_DYN:
        raise ElfError("not a shared library (ELF type %d)" % header.type)
    try:
        segments = program_headers(data, header)
        check_whole(header, len(data), segments)
        for kind, offset, filesz in segments:
            if kind != PT_NOTE:
                continue
            for name, note_type, desc in notes(data, offset, filesz):
                if name == NOTE_NAME and note_type == NOTE_TYPE:
                    return header, _library_note(desc)
    except struct.error:
        raise ElfError("malformed ELF file") from None
    return header, None


def _library_note(desc: bytes) -> LibraryNote:
    if len(desc) < 8:
        raise ElfError("malformed xweave note")
    version = struct.unpack_from("<I", desc, 0)[0]
    fields = desc[8:].split(b"\0")
    if len(fields) < 3:
        raise ElfError("malformed xweave note")
    try:
        triple, target, features = (f.decode() for f in fields[:3])
    except UnicodeDecodeError:
        raise ElfError("malformed xweave note") from None
    return LibraryNote(version, triple, target, features)


def note_descriptor(abi_version: int, triple: str, target: str, features: str) -> bytes:
    """The descriptor of the xweave note of a library (`_library_note` reads it)."""
    return struct.pack("<II", abi_version, 0) + b"\0".join(
        s.encode() for s in (triple, target, features)) + b"\0"


def object_symbol(data: bytes, name: str) -> bytes | None:
    """The bytes a defined symbol of a relocatable ELF object covers (its section's
    content at its value, its size long; None if the object defines no such symbol)."""
    header = read_header(data)
    try:
        if header.shnum and header.shentsize < 64:
            raise ElfError("malformed ELF object (section header size)")
        check_whole(header, len(data), [])
        sections = [struct.unpack_from("<IIQQQQIIQQ", data, header.shoff + i * header.shentsize)
                    for i in range(header.shnum)]
        wanted = name.encode()
        for _, sh_type, _, _, offset, size, link, _, _, _ in sections:
            if sh_type != SHT_SYMTAB or link >= len(sections):
                continue
            str_offset, str_size = sections[link][4], sections[link][5]
            strtab = data[str_offset:str_offset + str_size]
            for st_name, _, _, shndx, value, st_size in struct.iter_unpack(
                    "<IBBHQQ", data[offset:offset + size]):
                end = strtab.find(b"\0", st_name)
                if strtab[st_name:end] != wanted or shndx == 0 or shndx >= len(sections):
                    continue
                start = sections[shndx][4] + value
                if start + st_size > len(data):
                    raise ElfError("malformed ELF object (a symbol past the end of the file)")
                return data[start:start + st_size]
    except struct.error:
        raise ElfError("malformed ELF object") from None
    return None
