"""From an llvm-dialect module to machine code in this process (llvmlite MCJIT).

    compiled = compile_llvm(module)            # optimize (O3, host CPU) and emit a PIC object
    engine = load_object(compiled.object_bytes, extract_params(loop_stage_module))
    main = engine.get_function("main", [ctypes.c_void_p] * 3)

`compile_llvm` converts the xDSL llvm dialect to LLVM IR (`_convert_module`), runs
LLVM's new pass manager at O3 for the module's target CPU and features (`xweave.target`,
see `xweave.target`; loop and SLP vectorization on), and keeps the optimized IR, the object bytes and (lazily) the
assembly. The object is position independent, so the same bytes load in this process,
load in a fresh one, or link into a shared library.

Parameters are bound through a per-object pointer table, not through symbols:
`compile_llvm` turns every `llvm.mlir.global external @xweave_param_<name>` into an
entry of `xweave_param_table` (an array of pointers defined in the object; code loads
the pointer from it) and records the entries' names (`xweave_param_names`) and byte
sizes (`xweave_param_nbytes`) in the object. `load_object` fills the table of the
freshly loaded copy with the arrays' addresses. `llvm.add_symbol` would instead bind a
process-wide name: two models with a parameter of the same name, or one model loaded
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

A model's object also describes its own calling convention: `compile_llvm(module, abi)`
stores `abi` (a JSON object: inputs, outputs, call state, parameters...; see
`runtime.module`) with the target it was compiled for (`"target": {triple, cpu,
features}`) as the constant global `xweave_abi` (`xweave_abi_nbytes` long), and
`Engine.abi()` reads it back from the loaded code, so a loader checks what it was told
against what the code was built for, before calling it.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import json
import os
import re
import struct
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import llvmlite.binding as llvm_binding
import llvmlite.ir as llvm_ir
import numpy as np
from xdsl.dialects import llvm
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.rewriter import Rewriter

from xweave.errors import XweaveError
from xweave.lowering.llvm_params import PARAM_PREFIX
from xweave.lowering.loop_to_llvm import NO_LLVM_UNROLL
from xweave.runtime.threads import (
    NUM_THREADS_GLOBAL,
    configure_openmp,
    default_num_threads,
    get_num_threads,
    set_num_threads,
)
from xweave.target import Target, TargetError, as_target, target_of

PARAM_TABLE = "xweave_param_table"
PARAM_NAMES = "xweave_param_names"
PARAM_NBYTES = "xweave_param_nbytes"
PARAM_COUNT = "xweave_param_count"
ABI_GLOBAL = "xweave_abi"
ABI_NBYTES = "xweave_abi_nbytes"

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
_initialized = False


def _initialize() -> None:
    global _initialized
    with _init_lock:
        if not _initialized:
            # (llvmlite >= 0.44: no llvm.initialize(); the native target is enough)
            llvm_binding.initialize_native_target()
            llvm_binding.initialize_native_asmprinter()
            _initialized = True


def target_description(target: Target) -> dict[str, str]:
    """What code compiled for `target` needs: the triple and the resolved target
    (`llvm -mcpu=NAME -mattr=...`), as the ABI records it."""
    return {"triple": llvm_binding.get_default_triple(), "cpu": str(target.resolve())}


def missing_cpu_features(description: Mapping[str, object]) -> list[str]:
    """The vector features the code of a `target_description` may use that this CPU
    lacks: code compiled for it could stop on an illegal instruction here."""
    cpu = description.get("cpu")
    if not isinstance(cpu, str):
        raise TargetError(f"the ABI's target is malformed ({cpu!r:.60})")
    return Target.parse(cpu).missing_on_host()


NO_GATHERS = ("+prefer-no-gather", "+prefer-no-scatter")
"""LLVM tuning flags keeping its own vectorizers from gathers and scatters: schedules
never need them, and the strided copies LLVM made of them (transposes) ran up to 10x
slower on Zen 4 than scalar or 8-lane code (bench/README, issue 18)."""


def _create_target_machine(reloc: str, target: Target | None = None) -> llvm_binding.TargetMachine:
    """A new target machine for `target` (default: this host, with all its features)."""
    _initialize()
    cpu, features = (target or Target()).llvm_cpu_and_features()
    return llvm_binding.Target.from_default_triple().create_target_machine(
        cpu=cpu,
        features=",".join(f for f in (features, *NO_GATHERS) if f),
        opt=3,
        reloc=reloc,
        codemodel="default" if reloc == "pic" else "jitdefault",
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
# Compilation
# ----------------------------------------------------------------------------------


@dataclass
class CompiledObject:
    """The result of `compile_llvm`: machine code for this CPU and what it came from."""

    object_bytes: bytes
    """A relocatable, position-independent ELF object."""
    llvm_ir: str
    """The LLVM IR after O3."""
    param_names: tuple[str, ...]
    """Names of the parameters (without prefix), in the order of the object's table."""
    target: Target = field(default_factory=Target)
    """The (resolved) CPU target the code was generated for."""
    _assembly: str | None = field(default=None, repr=False)

    @property
    def assembly(self) -> str:
        """The optimized module as assembly (generated on first access)."""
        if self._assembly is None:
            module = llvm_binding.parse_assembly(self.llvm_ir)
            self._assembly = target_machine(self.target).emit_assembly(module)
        return self._assembly

    def load(self, symbols: Mapping[str, object] | None = None) -> Engine:
        """`load_object(self.object_bytes, symbols)`."""
        return load_object(self.object_bytes, symbols)


def compile_llvm(module: ModuleOp | str, abi: Mapping[str, object] | None = None,
                 target: Target | str | None = None) -> CompiledObject:
    """Optimize an llvm-dialect module (or its text, or LLVM IR text) for a CPU target:
    `target` if given, else the module's (`xweave.target`), else the default target.

    Only `llvm.func` and `llvm.mlir.global` may be at the top level. The module is not
    modified. `abi` (JSON-serializable) is stored in the object with the target
    description, for `Engine.abi()`.
    """
    param_names: tuple[str, ...] = ()
    if isinstance(module, str) and _is_llvm_ir_text(module):
        if abi is not None:
            raise JITError("compile_llvm: an ABI description needs an llvm-dialect module")
        text = module
        resolved = as_target(target).resolve()
        tm = target_machine(resolved)
    else:
        if isinstance(module, str):
            from xweave.context import parse_module

            module = parse_module(module)
        resolved = (as_target(target) if target is not None else target_of(module)).resolve()
        tm = target_machine(resolved)
        ir_module, param_names = _to_llvm_ir(module, tm)
        if abi is not None:
            _add_abi(ir_module, {**abi, "target": target_description(resolved)})
        text = _with_vector_width(_with_loop_ids(str(ir_module)), resolved)
    try:
        mod = llvm_binding.parse_assembly(text)
        mod.triple = tm.triple
        mod.data_layout = str(tm.target_data)
        mod.verify()
    except RuntimeError as e:
        raise JITError(f"LLVM rejected the generated IR: {e}") from None
    _optimize(mod, tm)
    optimized = str(mod)
    object_bytes = tm.emit_object(mod)
    return CompiledObject(object_bytes, optimized, param_names, resolved)


def translate_to_llvm_ir(module: ModuleOp) -> str:
    """The LLVM IR of an llvm-dialect module, before optimization (what `compile_llvm`
    hands to LLVM, `mlir-translate --mlir-to-llvmir`'s counterpart; `xweave-opt -t llvm`)."""
    resolved = target_of(module).resolve()
    ir_module, _ = _to_llvm_ir(module, target_machine(resolved))
    return _with_vector_width(_with_loop_ids(str(ir_module)), resolved)


def _is_llvm_ir_text(text: str) -> bool:
    return "llvm.func" not in text and ("define " in text or "declare " in text)


def _optimize(mod: llvm_binding.ModuleRef, tm: llvm_binding.TargetMachine) -> None:
    pto = llvm_binding.create_pipeline_tuning_options(speed_level=3)
    pto.loop_vectorization = True
    pto.slp_vectorization = True  # off by default even at O3
    pb = llvm_binding.create_pass_builder(tm, pto)
    mpm = pb.getModulePassManager()
    mpm.run(mod, pb)


def _to_llvm_ir(
    module: ModuleOp, tm: llvm_binding.TargetMachine
) -> tuple[llvm_ir.Module, tuple[str, ...]]:
    """`convert_module`, with parameter globals turned into a pointer table."""
    params: dict[str, tuple[int, llvm.GlobalOp]] = {}
    for op in module.ops:
        if (
            isinstance(op, llvm.GlobalOp)
            and op.sym_name.data.startswith(PARAM_PREFIX)
            and op.value is None
            and op.linkage.linkage.data == "external"
        ):
            params[op.sym_name.data] = (len(params), op)

    ops: list[Operation] = []
    for op in module.ops:
        if op.name == "llvm.mlir.global" and op.sym_name.data in params:
            continue
        if isinstance(op, llvm.FuncOp) and params and _uses_params(op, params):
            op = _with_param_table(op, params)
        ops.append(op)
    if params:
        table_type = llvm.LLVMArrayType(len(params), llvm.LLVMPointerType())
        ops.insert(0, llvm.GlobalOp(table_type, PARAM_TABLE, "external"))

    try:
        ir_module = _convert_module(ops, tm)
    except NotImplementedError as e:
        raise JITError(f"cannot translate to LLVM IR: {e}") from None

    for fn in ir_module.functions:
        if not fn.is_declaration:
            fn.attributes.add("nounwind")

    names = tuple(name[len(PARAM_PREFIX):] for name in params)
    _add_param_metadata(ir_module, params, tm)
    return ir_module, names


def _convert_module(ops: Sequence[Operation], tm: llvm_binding.TargetMachine) -> llvm_ir.Module:
    """xDSL's `convert_module` (0.74), with two fixes for what our lowering emits:

    * `llvm.alloca` yields an *opaque* pointer. llvmlite types an alloca's result as a
      typed pointer (`float*`) and then refuses any store of another type through it
      (a `vector<8xf32>` store into a local `f32` buffer, a `ptr` into a parallel
      loop's argument block), although LLVM itself has only opaque pointers;
    * a function's linkage is kept (`internal` for outlined parallel loop bodies), which
      `convert_module` drops; an `external` global with a value is a definition
      (`convert_module` prints `external global i32 0`, which LLVM rejects).
    """
    from xdsl.backend.llvm.convert import _convert_global, _declare_func
    from xdsl.backend.llvm.convert_op import convert_op
    from xdsl.backend.llvm.convert_type import convert_type

    ir_module = llvm_ir.Module()
    ir_module.triple = tm.triple
    ir_module.data_layout = str(tm.target_data)
    functions: list[llvm.FuncOp] = []
    for op in ops:
        if isinstance(op, llvm.GlobalOp):
            _convert_global(op, ir_module)
            if op.value is not None and op.linkage.linkage.data == "external":
                ir_module.get_global(op.sym_name.data).linkage = ""  # a definition
        elif isinstance(op, llvm.FuncOp):
            functions.append(op)
        else:
            raise NotImplementedError(f"Conversion not implemented for op: {op.name}")
    for op in functions:
        _declare_func(op, ir_module)
        linkage = op.linkage.linkage.data if op.linkage is not None else "external"
        if op.body.blocks and linkage not in ("external", ""):
            ir_module.get_global(op.sym_name.data).linkage = linkage
    for op in functions:
        if not op.body.blocks:
            continue
        fn = ir_module.get_global(op.sym_name.data)
        block_map: dict = {}
        val_map: dict = {}
        for i, block in enumerate(op.body.blocks):
            block_map[block] = fn.append_basic_block(name=block.name_hint or "")
            if i == 0:
                val_map.update(zip(block.args, fn.args))
        for i, block in enumerate(op.body.blocks):
            if i and block.args:
                builder = llvm_ir.IRBuilder(block_map[block])
                for arg in block.args:
                    val_map[arg] = builder.phi(convert_type(arg.type))
        for block in op.body.blocks:
            builder = llvm_ir.IRBuilder(block_map[block])
            if block_map[block].instructions:
                builder.position_after(block_map[block].instructions[-1])
            for inner in block.ops:
                convert_op(inner, builder, val_map, block_map)
                if isinstance(inner, llvm.AllocaOp):
                    val_map[inner.results[0]].type = llvm_ir.PointerType()
                if NO_LLVM_UNROLL in inner.attributes:
                    _mark_no_unroll(ir_module, block_map[block].terminator)
    return ir_module


_LOOP_ID = "xweave.loop."
_UNROLL_DISABLE = "llvm.loop.unroll.disable"


def _mark_no_unroll(ir_module: llvm_ir.Module, branch: llvm_ir.Instruction) -> None:
    """Give a loop's back edge `!llvm.loop` metadata saying "do not unroll".

    A loop ID must be a distinct node whose first operand is itself, which llvmlite
    cannot build: the branch gets a placeholder node, made a loop ID by
    `_with_loop_ids` on the module's text."""
    n = len(ir_module.metadata)  # unique per module
    disable = ir_module.add_metadata([llvm_ir.MetaDataString(ir_module, _UNROLL_DISABLE)])
    placeholder = ir_module.add_metadata(
        [llvm_ir.MetaDataString(ir_module, f"{_LOOP_ID}{n}"), disable])
    branch.set_metadata("llvm.loop", placeholder)


AUTO_VECTOR_BITS = 256
"""Widest vectors LLVM may use in a function whose code has no wider ones of its own
(the loops schedules leave scalar: transposes, reductions along the contiguous axis).
With 512-bit vectors legal there, LLVM turned BERT's head transposes into AVX-512
gathers and scatters (slow on Zen 4: the transposes ran 10x slower, the softmax 3.5x;
bench/README, issue 18)."""

_VECTOR_TYPE = re.compile(r"<(\d+) x (float|double|half|bfloat|i64|i32|i16|i8)>")
_ELEMENT_BITS = {"float": 32, "double": 64, "half": 16, "bfloat": 16,
                 "i64": 64, "i32": 32, "i16": 16, "i8": 8}


def _with_vector_width(text: str, target: Target) -> str:
    """Each defined function with LLVM's `prefer-vector-width` (AUTO_VECTOR_BITS at
    most) and `min-legal-vector-width`: the widest vector its own code uses, up to the
    machine model's width (the schedules' 512-bit vectors stay zmm registers, on Intel
    AVX-512 cores too, which otherwise prefer 256; functions without them get no zmm
    code from LLVM)."""
    from xweave.target import machine_model

    if not target.is_cpu:
        return text
    bits = machine_model(target).vector_bits
    prefer = min(bits, AUTO_VECTOR_BITS)

    def attributes(m: re.Match) -> str:
        end = m.string.find("\n}\n", m.end())
        body = m.string[m.end():end if end >= 0 else len(m.string)]
        widest = max((int(n) * _ELEMENT_BITS[t] for n, t in _VECTOR_TYPE.findall(body)),
                     default=0)
        legal = bits if widest > prefer else prefer
        return (f'{m.group(1)} "prefer-vector-width"="{prefer}" '
                f'"min-legal-vector-width"="{legal}"{m.group(2)}')

    return re.sub(r"^(define .*\)[^{]*?)(\s*\{)$", attributes, text, flags=re.MULTILINE)


def _with_loop_ids(text: str) -> str:
    """`!5 = !{ !"xweave.loop.0", !4 }` -> `!5 = distinct !{ !5, !4 }` (see `_mark_no_unroll`)."""
    return re.sub(rf'^(!\d+) = !{{ ?!"{re.escape(_LOOP_ID)}\d+", (!\d+) ?}}$',
                  r"\1 = distinct !{ \1, \2 }", text, flags=re.MULTILINE)


def _uses_params(op: llvm.FuncOp, params: Mapping[str, object]) -> bool:
    return any(
        isinstance(o, llvm.AddressOfOp) and o.global_name.root_reference.data in params
        for o in op.walk()
    )


def _with_param_table(
    op: llvm.FuncOp, params: Mapping[str, tuple[int, llvm.GlobalOp]]
) -> llvm.FuncOp:
    """A copy of `op` reading parameter addresses from the table: `load (table + i)`."""
    ptr = llvm.LLVMPointerType()
    copy = op.clone()
    for o in list(copy.walk()):
        if not isinstance(o, llvm.AddressOfOp):
            continue
        name = o.global_name.root_reference.data
        if name not in params:
            continue
        index = params[name][0]
        table = llvm.AddressOfOp(PARAM_TABLE, ptr)
        slot = llvm.GEPOp(table, [index], ptr, inbounds=True)
        load = llvm.LoadOp(slot, ptr, alignment=8)
        Rewriter.replace_op(o, [table, slot, load], [load.dereferenced_value])
    return copy


def _add_param_metadata(
    ir_module: llvm_ir.Module,
    params: Mapping[str, tuple[int, llvm.GlobalOp]],
    tm: llvm_binding.TargetMachine,
) -> None:
    """Define the table (zero-filled) and the names/sizes of its entries."""
    from xdsl.backend.llvm.convert_type import convert_type

    count = llvm_ir.GlobalVariable(ir_module, llvm_ir.IntType(64), PARAM_COUNT)
    count.initializer = llvm_ir.Constant(llvm_ir.IntType(64), len(params))
    count.global_constant = True
    if not params:
        return
    table = ir_module.get_global(PARAM_TABLE)
    table.linkage = ""  # a definition now (convert_module made it an external declaration)
    table.initializer = llvm_ir.Constant(table.value_type, None)
    table.align = 8

    data = b"".join(name[len(PARAM_PREFIX):].encode() + b"\0" for name in params)
    names_type = llvm_ir.ArrayType(llvm_ir.IntType(8), len(data))
    names = llvm_ir.GlobalVariable(ir_module, names_type, PARAM_NAMES)
    names.initializer = llvm_ir.Constant(names_type, bytearray(data))
    names.global_constant = True

    target_data = tm.target_data
    sizes = [convert_type(op.global_type).get_abi_size(target_data) for _, op in params.values()]
    sizes_type = llvm_ir.ArrayType(llvm_ir.IntType(64), len(sizes))
    nbytes = llvm_ir.GlobalVariable(ir_module, sizes_type, PARAM_NBYTES)
    nbytes.initializer = llvm_ir.Constant(sizes_type, sizes)
    nbytes.global_constant = True


def _add_abi(ir_module: llvm_ir.Module, abi: Mapping[str, object]) -> None:
    """`xweave_abi`: the ABI as JSON bytes; `xweave_abi_nbytes`: their count."""
    data = json.dumps(abi, sort_keys=True, separators=(",", ":")).encode()
    data_type = llvm_ir.ArrayType(llvm_ir.IntType(8), len(data))
    text = llvm_ir.GlobalVariable(ir_module, data_type, ABI_GLOBAL)
    text.initializer = llvm_ir.Constant(data_type, bytearray(data))
    text.global_constant = True
    size = llvm_ir.GlobalVariable(ir_module, llvm_ir.IntType(64), ABI_NBYTES)
    size.initializer = llvm_ir.Constant(llvm_ir.IntType(64), len(data))
    size.global_constant = True


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
        return fn(*[a.ctypes.data if isinstance(a, np.ndarray) else a for a in args])


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


_ELF_MACHINES = {"x86_64": 62, "aarch64": 183}


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
    import platform

    machine = struct.unpack_from("<H", data, 0x12)[0]
    expected = _ELF_MACHINES.get(platform.machine())
    if expected is not None and machine != expected:
        raise JITError(f"the object is for ELF machine {machine}, not this {platform.machine()}")
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

