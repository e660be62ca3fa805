"""Machine code generated per translation unit, in parallel, and merged into one object
(`lowering.object_merge`): each function's code is the one a build that emitted the
linked units once had; the merged object loads, exports as a shared library and a module
file, and comes back from the cache; cross-object references resolve; what cannot be
merged is a clear error."""

from __future__ import annotations

import ctypes
import shutil
import struct
import subprocess

import llvmlite.binding as llvm_binding
import numpy as np
import pytest
from helpers import load_bench

import xweave
from xweave.lowering.llvm_codegen import compile_llvm
from xweave.lowering.object_merge import merge_objects
from xweave.runtime.jit import JITError, load_object, target_machine

models = load_bench("models")
SMALL_RESNET = dict(image=32, width=8, classes=10, blocks=(1, 1))
CC = shutil.which("cc") or shutil.which("gcc")

_SHDR = struct.Struct("<IIQQQQIIQQ")
_SYM = struct.Struct("<IBBHQQ")


def _sections(obj: bytes) -> list[tuple]:
    shoff, = struct.unpack_from("<Q", obj, 0x28)
    shnum, shstrndx = struct.unpack_from("<HH", obj, 0x3C)
    headers = [_SHDR.unpack_from(obj, shoff + i * _SHDR.size) for i in range(shnum)]
    names = headers[shstrndx][4]
    return [(obj[names + h[0]:obj.index(b"\0", names + h[0])].decode(), *h[1:]) for h in headers]


def _cstr(obj: bytes, at: int) -> str:
    return obj[at:obj.index(b"\0", at)].decode()


def functions(obj: bytes) -> dict[str, tuple[bytes, list[tuple]]]:
    """Each defined function: its bytes, and its relocations as (offset in the function,
    type, the symbol's name, addend) -- for a section or other local symbol (a constant
    pool's `.LCPI3_0`, numbered by function), the section's name and no addend: data
    moves inside merged sections, the code does not."""
    sections = _sections(obj)
    symtab_index = next(i for i, s in enumerate(sections) if s[1] == 2)
    symtab = sections[symtab_index]
    strings = sections[symtab[6]][4]
    symbols = [_SYM.unpack_from(obj, symtab[4] + i * _SYM.size)
               for i in range(symtab[5] // _SYM.size)]

    def target(index: int) -> tuple[str, bool]:
        name, info, _, shndx, _, _ = symbols[index]
        if info >> 4 == 0 and shndx:  # STB_LOCAL, defined
            return sections[shndx][0], True
        return _cstr(obj, strings + name), False

    relocations: dict[int, list[tuple]] = {}
    for s in sections:
        if s[1] == 4:  # SHT_RELA
            for offset, info, addend in struct.iter_unpack("<QQq", obj[s[4]:s[4] + s[5]]):
                name, section = target(info >> 32)
                relocations.setdefault(s[7], []).append(
                    (offset, info & 0xFFFFFFFF, name, None if section else addend))
    found = {}
    for name, info, _, shndx, value, size in symbols:
        if info & 0xF != 2 or shndx == 0:  # defined STT_FUNC only
            continue
        start = sections[shndx][4] + value
        relocs = sorted((off - value, *rest) for off, *rest in relocations.get(shndx, [])
                        if value <= off < value + size)
        found[_cstr(obj, strings + name)] = (obj[start:start + size], relocs)
    return found


@pytest.fixture(scope="module")
def resnet():
    return xweave.build(models.build("resnet18", **SMALL_RESNET), cache=False)


def test_each_function_keeps_the_code_the_linked_module_had(resnet):
    compiled = resnet._compiled
    assert len(compiled._bitcode) > 3  # @main and several kernels: several objects merged
    linked = llvm_binding.parse_bitcode(compiled._bitcode[0])
    for other in compiled._bitcode[1:]:
        linked.link_in(llvm_binding.parse_bitcode(other))
    before = functions(target_machine(compiled.target).emit_object(linked))
    after = functions(resnet.object_bytes)
    assert sorted(after) == sorted(before)
    assert [n for n in before if after[n] != before[n]] == []


def test_a_merged_module_exports_reloads_and_comes_back_from_the_cache(resnet, tmp_path):
    assert [s[0] for s in _sections(resnet.object_bytes)].count(".text") > 1
    spec = resnet.inputs[0]
    x = {spec.name: np.random.default_rng(0).standard_normal(spec.shape).astype(np.float32)}
    expected = resnet.run(x)
    resnet.export(tmp_path / "m.xwm")
    assert np.array_equal(xweave.load_module(tmp_path / "m.xwm").run(x)[0], expected[0])
    model = models.build("resnet18", **SMALL_RESNET)
    first = xweave.build(model)
    second = xweave.build(model)  # (from the cache)
    assert second.object_bytes == first.object_bytes == resnet.object_bytes
    assert np.array_equal(second.run(x)[0], expected[0])
    if CC is not None:
        resnet.export_library(tmp_path / "m.so")
        from xweave.runtime.library import LibraryModule
        library = LibraryModule(tmp_path / "m.so")
        assert np.array_equal(library.run(x)[0], expected[0])


CALLER = """
@counter = global i32 5
@table = internal constant [4 x i32] [i32 1, i32 2, i32 3, i32 4]
declare i32 @callee(i32)
define i32 @caller(i32 %x) {
  %y = call i32 @callee(i32 %x)
  %p = getelementptr [4 x i32], ptr @table, i64 0, i32 %x
  %t = load i32, ptr %p
  %s = add i32 %y, %t
  ret i32 %s
}
"""
CALLEE = """
@counter = external global i32
@table = internal constant [4 x i32] [i32 100, i32 200, i32 300, i32 400]
define i32 @callee(i32 %x) {
  %c = load i32, ptr @counter
  %p = getelementptr [4 x i32], ptr @table, i64 0, i32 %x
  %t = load i32, ptr %p
  %s = add i32 %c, %t
  ret i32 %s
}
"""


def _two_objects() -> list[bytes]:
    return [compile_llvm(CALLER).object_bytes, compile_llvm(CALLEE).object_bytes]


def test_references_across_objects_resolve_when_loaded():
    merged = merge_objects(_two_objects())
    engine = load_object(merged)
    caller = engine.get_function("caller", [ctypes.c_int32], ctypes.c_int32)
    assert caller(2) == 5 + 300 + 3  # each object's own internal table
    assert merge_objects(_two_objects()[::-1]) != merged
    assert load_object(merge_objects(_two_objects()[::-1])).get_function(
        "caller", [ctypes.c_int32], ctypes.c_int32)(1) == 5 + 200 + 2


def _scale(name: str, factor: float) -> bytes:
    """`float name(float x) { return x * factor; }`: its factor in the object's constant
    pool, labelled `.LCPI0_0` in every such object."""
    return compile_llvm(f"""
define float @{name}(float %x) {{
  %y = fmul float %x, {factor:.1f}
  ret float %y
}}
""").object_bytes


def test_each_object_keeps_its_own_local_symbols():
    engine = load_object(merge_objects([_scale("three", 3), _scale("five", 5)]))
    assert engine.get_function("three", [ctypes.c_float], ctypes.c_float)(2.0) == 6.0
    assert engine.get_function("five", [ctypes.c_float], ctypes.c_float)(2.0) == 10.0


@pytest.mark.skipif(CC is None, reason="no C compiler (cc) on the PATH")
def test_a_merged_object_links_into_a_shared_library(tmp_path):
    (tmp_path / "m.o").write_bytes(merge_objects(_two_objects()))
    subprocess.run([CC, "-shared", str(tmp_path / "m.o"), "-o", str(tmp_path / "m.so")],
                   check=True)
    library = ctypes.CDLL(str(tmp_path / "m.so"))
    library.caller.restype = ctypes.c_int32
    assert library.caller(ctypes.c_int32(3)) == 5 + 400 + 4


def test_one_object_is_returned_as_it_is():
    only = compile_llvm(CALLER).object_bytes
    assert merge_objects([only]) is only


def test_what_cannot_be_merged_is_an_error():
    caller, callee = _two_objects()
    with pytest.raises(JITError, match="symbol 'caller' is defined by objects 0 and 1"):
        merge_objects([caller, caller])
    other = compile_llvm(CALLEE, target="llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a72")
    with pytest.raises(JITError, match="object 1 is for another machine"):
        merge_objects([caller, other.object_bytes])
    with pytest.raises(JITError, match="object 1: not an ELF file"):
        merge_objects([caller, b"not an object"])
    with pytest.raises(JITError, match="object 0 is truncated"):
        merge_objects([caller[:len(caller) - 200], callee])
