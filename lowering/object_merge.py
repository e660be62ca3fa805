"""Several relocatable ELF objects as one (what `ld -r` does, for the objects LLVM emits).

`compile_llvm` generates the machine code of each translation unit (@main, each kernel)
in a worker of its own (`xweave.parallel`) and merges the objects here, so that the rest
of xweave (loading, module files, shared libraries, the cache) still sees one object.

The merge copies every section of every object unchanged, as a section of its own (the
merged object may have several `.text` sections: the linker and the JIT place each
input section on its own, as they do with `-fno-unique-section-names` objects), so no
code or data moves inside its section and no relocation's offset or addend changes.
What is rewritten is only the bookkeeping: one symbol table (each object's local
symbols, then the global ones, a symbol defined in one object and referenced by
another becoming that one definition), one string table, the section indices in the
symbols and section headers, and the symbol indices in the relocations. Local symbols
whose names another object uses too (every object has its constant pool `.LCPI0_0`)
are renamed: MCJIT binds relocations against them by name. The machine
code of every function is thus byte for byte what its unit's object holds.

Only what LLVM emits for xweave's units is accepted (64-bit little-endian objects of
one machine, REL/RELA relocations, no section groups); anything else is a `JITError`.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass

from xweave.runtime.elf import ElfError, read_header
from xweave.runtime.jit import JITError

ET_REL = 1
SHT_NULL, SHT_SYMTAB, SHT_STRTAB, SHT_RELA, SHT_NOBITS, SHT_REL = 0, 2, 3, 4, 8, 9
SHT_GROUP, SHT_SYMTAB_SHNDX, SHT_DYNSYM = 17, 18, 11
SHT_LLVM_ADDRSIG = 0x6FFF4C03
"""A hint for the linker's identical-code folding, in symbol indices: dropped."""
SHF_ALLOC = 0x2
SHN_UNDEF, SHN_LORESERVE, SHN_ABS, SHN_COMMON = 0, 0xFF00, 0xFFF1, 0xFFF2
STB_LOCAL, STB_GLOBAL, STB_WEAK = 0, 1, 2
STT_SECTION, STT_FILE = 3, 4

_EHDR = struct.Struct("<16sHHIQQQIHHHHHH")
_SHDR = struct.Struct("<IIQQQQIIQQ")
_SYM = struct.Struct("<IBBHQQ")
_RELA = struct.Struct("<QQq")
_REL = struct.Struct("<QQ")


@dataclass
class _Section:
    name: bytes
    type: int
    flags: int
    addr: int
    size: int
    link: int
    info: int
    align: int
    entsize: int
    data: bytes  # empty for NOBITS


@dataclass
class _Object:
    ident: bytes
    machine: int
    version: int
    flags: int
    sections: list[_Section]
    symtab: int  # index of the symbol table section (0: none)
    strtabs: set[int]  # indices of the string tables (symbol names, section names)


def merge_objects(objects: Sequence[bytes]) -> bytes:
    """One relocatable object defining everything the `objects` define (one of them:
    returned as it is)."""
    if not objects:
        raise JITError("merge_objects: no object to merge")
    if len(objects) == 1:
        return objects[0]
    parsed = [_parse(data, i) for i, data in enumerate(objects)]
    first = parsed[0]
    for i, obj in enumerate(parsed[1:], 1):
        if (obj.ident, obj.machine, obj.flags) != (first.ident, first.machine, first.flags):
            raise JITError(f"merge_objects: object {i} is for another machine or ABI "
                           "than object 0")

    out: list[_Section] = [_Section(b"", SHT_NULL, 0, 0, 0, 0, 0, 0, 0, b"")]
    section_maps: list[dict[int, int]] = []
    kept_metadata: dict[tuple, int] = {}
    for obj in parsed:
        targets = {s.info for s in obj.sections if s.type in (SHT_REL, SHT_RELA)}
        mapping: dict[int, int] = {}
        for index, s in enumerate(obj.sections):
            if index == 0 or index == obj.symtab or index in obj.strtabs \
                    or s.type == SHT_LLVM_ADDRSIG:
                continue
            if s.type in (SHT_GROUP, SHT_SYMTAB_SHNDX, SHT_DYNSYM, SHT_SYMTAB):
                raise JITError(f"merge_objects: section '{s.name.decode(errors='replace')}' "
                               f"of type {s.type} is not supported")
            if not s.flags & SHF_ALLOC and s.type not in (SHT_REL, SHT_RELA) \
                    and index not in targets:
                # Notes and attributes (`.note.GNU-stack`): one copy of each.
                key = (s.name, s.type, s.flags, s.data)
                if key in kept_metadata:
                    mapping[index] = kept_metadata[key]
                    continue
                kept_metadata[key] = len(out)
            mapping[index] = len(out)
            out.append(_Section(s.name, s.type, s.flags, s.addr, s.size, s.link, s.info,
                                s.align, s.entsize, s.data))
        section_maps.append(mapping)
    symtab_index, strtab_index, shstrtab_index = len(out), len(out) + 1, len(out) + 2
    if shstrtab_index >= SHN_LORESERVE:
        raise JITError(f"merge_objects: {shstrtab_index + 1} sections are too many")

    # Symbols: null, every object's locals, then one entry per global name.
    names = _StringTable()
    local_syms: list[bytes] = [bytes(_SYM.size)]
    global_order: list[bytes] = []
    defined: dict[bytes, tuple[int, tuple]] = {}  # name -> (object, symbol fields)
    referenced: dict[bytes, tuple] = {}  # name -> fields of an undefined reference
    symbol_maps: list[dict[int, int | bytes]] = []
    all_symbols = [_symbols(obj) for obj in parsed]
    taken = {sym[0] for symbols in all_symbols for sym in symbols if sym[1] >> 4 != STB_LOCAL}
    local_names: set[bytes] = set()

    def unique_local(name: bytes, n: int) -> bytes:
        # MCJIT binds a relocation against a named local symbol by its name, the last
        # symbol of that name winning: each object's constant pool label `.LCPI0_0`
        # would be the last object's. Names are made unique; only names change.
        if name in local_names or name in taken:
            base, k = name + b".o%d" % n, 0
            name = base
            while name in local_names or name in taken:
                k += 1
                name = base + b".%d" % k
        local_names.add(name)
        return name

    for n, obj in enumerate(parsed):
        symbols = all_symbols[n]
        mapping_s: dict[int, int | bytes] = {}
        for index, (name, info, other, shndx, value, size) in enumerate(symbols):
            if index == 0:
                continue
            shndx = _map_section(shndx, section_maps[n], n, name)
            if info >> 4 == STB_LOCAL:
                if name and info & 0xF not in (STT_SECTION, STT_FILE):
                    name = unique_local(name, n)
                mapping_s[index] = len(local_syms)
                local_syms.append(_SYM.pack(names.add(name), info, other, shndx, value, size))
                continue
            mapping_s[index] = name
            if name not in defined and name not in referenced:
                global_order.append(name)
            fields = (info, other, shndx, value, size)
            if shndx == SHN_UNDEF:
                if name not in referenced or info >> 4 == STB_GLOBAL:
                    referenced[name] = fields
            elif name in defined:
                previous = defined[name][1]
                if not (info >> 4 == STB_WEAK or previous[0] >> 4 == STB_WEAK):
                    raise JITError(f"merge_objects: symbol '{name.decode(errors='replace')}' "
                                   f"is defined by objects {defined[name][0]} and {n}")
                if previous[0] >> 4 == STB_WEAK and info >> 4 != STB_WEAK:
                    defined[name] = (n, fields)
            else:
                defined[name] = (n, fields)
        symbol_maps.append(mapping_s)
    global_index: dict[bytes, int] = {}
    global_syms: list[bytes] = []
    for name in global_order:
        info, other, shndx, value, size = defined[name][1] if name in defined \
            else referenced[name]
        global_index[name] = len(local_syms) + len(global_syms)
        global_syms.append(_SYM.pack(names.add(name), info, other, shndx, value, size))

    # Relocations: the same entries, with the merged symbol indices.
    for n, obj in enumerate(parsed):
        resolve = {old: (new if isinstance(new, int) else global_index[new])
                   for old, new in symbol_maps[n].items()}
        for index, s in enumerate(obj.sections):
            if s.type not in (SHT_REL, SHT_RELA) or index not in section_maps[n]:
                continue
            if s.link != obj.symtab or s.info not in section_maps[n]:
                raise JITError(f"merge_objects: relocation section "
                               f"'{s.name.decode(errors='replace')}' of object {n} is malformed")
            merged = out[section_maps[n][index]]
            merged.link = symtab_index
            merged.info = section_maps[n][s.info]
            merged.data = _relocated(s, resolve, n)

    section_names = _StringTable()
    symtab = _Section(b".symtab", SHT_SYMTAB, 0, 0, 0, strtab_index, len(local_syms), 8,
                      _SYM.size, b"".join(local_syms + global_syms))
    strtab = _Section(b".strtab", SHT_STRTAB, 0, 0, 0, 0, 0, 1, 0, b"")
    shstrtab = _Section(b".shstrtab", SHT_STRTAB, 0, 0, 0, 0, 0, 1, 0, b"")
    out += [symtab, strtab, shstrtab]
    name_offsets = [section_names.add(s.name) for s in out]
    strtab.data = names.data()
    shstrtab.data = section_names.data()

    body = bytearray(_EHDR.size)
    offsets = []
    for s in out:
        if s.type == SHT_NULL:
            offsets.append(0)
            continue
        if s.type != SHT_NOBITS:
            s.size = len(s.data)
        align = max(s.align, 1)
        body += bytes(-len(body) % align)
        offsets.append(len(body))
        if s.type != SHT_NOBITS:
            body += s.data
    body += bytes(-len(body) % 8)
    shoff = len(body)
    for s, name, offset in zip(out, name_offsets, offsets):
        body += _SHDR.pack(name if s.type != SHT_NULL else 0, s.type, s.flags, s.addr,
                           offset, s.size, s.link, s.info, s.align, s.entsize)
    body[:_EHDR.size] = _EHDR.pack(first.ident, ET_REL, first.machine, first.version, 0, 0,
                                   shoff, first.flags, _EHDR.size, 0, 0, _SHDR.size,
                                   len(out), shstrtab_index)
    return bytes(body)


class _StringTable:
    def __init__(self):
        self._parts = [b"\0"]
        self._size = 1
        self._offsets: dict[bytes, int] = {b"": 0}

    def add(self, name: bytes) -> int:
        offset = self._offsets.get(name)
        if offset is None:
            offset = self._offsets[name] = self._size
            self._parts.append(name + b"\0")
            self._size += len(name) + 1
        return offset

    def data(self) -> bytes:
        return b"".join(self._parts)


def _parse(data: bytes, n: int) -> _Object:
    try:
        header = read_header(data)
    except ElfError as e:
        raise JITError(f"merge_objects: object {n}: {e}") from None
    if header.type != ET_REL or header.shentsize != _SHDR.size:
        raise JITError(f"merge_objects: object {n} is not a relocatable ELF object")
    (ident, _, machine, version, _, _, shoff, flags, _, _, _, _, shnum,
     shstrndx) = _EHDR.unpack_from(data, 0)
    if shoff + shnum * _SHDR.size > len(data) or shstrndx >= shnum:
        raise JITError(f"merge_objects: object {n} is truncated or malformed")
    headers = [_SHDR.unpack_from(data, shoff + i * _SHDR.size) for i in range(shnum)]
    sh_names = headers[shstrndx]

    def name(offset: int) -> bytes:
        start = sh_names[4] + offset
        return data[start:data.index(b"\0", start)]

    sections = []
    for (sh_name, sh_type, flags_, addr, offset, size, link, info, align,
         entsize) in headers:
        if sh_type != SHT_NOBITS and offset + size > len(data):
            raise JITError(f"merge_objects: object {n} is truncated")
        content = data[offset:offset + size] if sh_type not in (SHT_NOBITS, SHT_NULL) else b""
        sections.append(_Section(name(sh_name), sh_type, flags_, addr, size, link, info,
                                 align, entsize, content))
    symtabs = [i for i, s in enumerate(sections) if s.type == SHT_SYMTAB]
    if len(symtabs) > 1:
        raise JITError(f"merge_objects: object {n} has several symbol tables")
    symtab = symtabs[0] if symtabs else 0
    strtabs = {shstrndx} | ({sections[symtab].link} if symtab else set())
    return _Object(ident, machine, version, flags, sections, symtab, strtabs)


def _symbols(obj: _Object) -> list[tuple[bytes, int, int, int, int, int]]:
    """The object's symbols: (name, st_info, st_other, st_shndx, st_value, st_size)."""
    if not obj.symtab:
        return [(b"", 0, 0, 0, 0, 0)]
    table = obj.sections[obj.symtab]
    strings = obj.sections[table.link].data
    result = []
    for st_name, info, other, shndx, value, size in _SYM.iter_unpack(table.data):
        end = strings.index(b"\0", st_name)
        result.append((strings[st_name:end], info, other, shndx, value, size))
    return result


def _map_section(shndx: int, mapping: dict[int, int], n: int, name: bytes) -> int:
    if shndx == SHN_UNDEF or shndx in (SHN_ABS, SHN_COMMON):
        return shndx
    if shndx >= SHN_LORESERVE or shndx not in mapping:
        raise JITError(f"merge_objects: symbol '{name.decode(errors='replace')}' of object "
                       f"{n} is in section {shndx}, which cannot be merged")
    return mapping[shndx]


def _relocated(section: _Section, resolve: dict[int, int], n: int) -> bytes:
    entry = _RELA if section.type == SHT_RELA else _REL
    out = bytearray()
    for fields in entry.iter_unpack(section.data):
        offset, info = fields[0], fields[1]
        symbol = info >> 32
        if symbol:
            if symbol not in resolve:
                raise JITError(f"merge_objects: a relocation of object {n} names symbol "
                               f"{symbol}, which its symbol table lacks")
            info = (resolve[symbol] << 32) | (info & 0xFFFFFFFF)
        out += entry.pack(offset, info, *fields[2:])
    return bytes(out)
