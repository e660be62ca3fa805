"""From an llvm-dialect module to machine code: LLVM IR, LLVM's O3, an object file.

    compiled = compile_llvm(module)            # optimize (O3, the module's target) and emit a PIC object
    engine = compiled.load(extract_params(loop_stage_module))   # `runtime.jit.load_object`

`compile_llvm` converts the xDSL llvm dialect to LLVM IR (`_convert_module`), runs
LLVM's new pass manager at O3 for the module's target CPU and features (`xweave.target`,
see `xweave.target`; loop and SLP vectorization on), and keeps the object bytes and
(lazily) the optimized IR and the assembly. Each translation unit (@main, each kernel
with its outlined loops) is optimized and compiled to machine code in a worker of its
own, and the units' objects are merged into one (`lowering.object_merge`). The object
is position independent, so the same bytes load in this process, load in a fresh one,
or link into a shared library. A build goes one step further: `compile_loop_module`
lowers each unit from the loop stage in the worker that compiles it (the same LLVM IR
as `compile_llvm` of the lowered module, with convert-loop-to-llvm in parallel too).

Parameters are bound through a per-object pointer table, not through symbols:
`compile_llvm` turns every `llvm.mlir.global external @xweave_param_<name>` into an
entry of `xweave_param_table` (an array of pointers defined in the object; code loads
the pointer from it) and records the entries' names (`xweave_param_names`) and byte
sizes (`xweave_param_nbytes`) in the object; `runtime.jit.load_object` fills the table
of the freshly loaded copy (the names are the runtime's, `runtime.abi`).

A model's object also describes its own calling convention: `compile_llvm(module, abi)`
stores `abi` (a JSON object, `abi_of`: inputs, outputs, call state, parameters...; see
`runtime.module`) with the target it was compiled for (`"target": {triple, cpu,
features}`) as the constant global `xweave_abi` (`xweave_abi_nbytes` long), and
`Engine.abi()` reads it back from the loaded code, so a loader checks what it was told
against what the code was built for, before calling it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import llvmlite.binding as llvm_binding
import llvmlite.ir as llvm_ir
import numpy as np
from xdsl.backend.llvm.convert import _convert_global, _declare_func
from xdsl.backend.llvm.convert_op import convert_op
from xdsl.backend.llvm.convert_type import convert_type
from xdsl.dialects import func, llvm
from xdsl.dialects.builtin import ArrayAttr, IntegerAttr, ModuleOp, SymbolRefAttr
from xdsl.ir import Operation
from xdsl.rewriter import Rewriter

from xweave import timing
from xweave.parallel import TwoPhases, map_forked
from xweave.context import parse_module
from xweave.errors import ModelError
from xweave.lowering.llvm_loops import NO_LLVM_UNROLL
from xweave.lowering.object_merge import merge_objects
from xweave.lowering.llvm_params import is_call_state, is_global
from xweave.lowering.llvm_parallel import num_threads_global
from xweave.lowering.loop_to_llvm import CALL_STATE_ATTR, FunctionAlone, _ModuleLowering
from xweave.passes.loop_utils import walk_list as _walk_list
from xweave.passes.memory_plan import PEAK_ATTR
from xweave.passes.profile_kernels import FLOPS_ATTR, KERNELS_ATTR
from xweave.runtime.abi import (
    ABI_GLOBAL,
    ABI_NBYTES,
    ENTRY,
    PARAM_COUNT,
    PARAM_NAMES,
    PARAM_NBYTES,
    PARAM_PREFIX,
    PARAM_TABLE,
)
from xweave.runtime.jit import (
    Engine,
    JITError,
    load_object,
    target_description,
    target_machine,
)
from xweave.runtime.module import ABI_VERSION, TensorSpec, params_digest
from xweave.runtime.profile import ProfileSlot
from xweave.target import Target, as_target, machine_model, target_of


@dataclass
class CompiledObject:
    """The result of `compile_llvm`: machine code for this CPU and what it came from."""

    object_bytes: bytes
    """A relocatable, position-independent ELF object."""
    param_names: tuple[str, ...]
    """Names of the parameters (without prefix), in the order of the object's table."""
    target: Target = field(default_factory=Target)
    """The (resolved) CPU target the code was generated for."""
    _bitcode: tuple[bytes, ...] = field(default=(), repr=False)
    """The optimized units, as bitcode (linked into `llvm_ir` on first access)."""
    _llvm_ir: str | None = field(default=None, repr=False)
    _assembly: str | None = field(default=None, repr=False)

    @property
    def llvm_ir(self) -> str:
        """The LLVM IR after O3: the units linked into one module (made on first access)."""
        if self._llvm_ir is None:
            mod = llvm_binding.parse_bitcode(self._bitcode[0])
            for other in self._bitcode[1:]:
                mod.link_in(llvm_binding.parse_bitcode(other))
            self._llvm_ir = str(mod)
        return self._llvm_ir

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
        resolved = as_target(target).resolve()
        units = [lambda: module]
    else:
        if isinstance(module, str):
            module = parse_module(module)
        resolved = (as_target(target) if target is not None else target_of(module)).resolve()
        extra = {**abi, "target": target_description(resolved)} if abi is not None else None
        units, param_names = _units(module, resolved, extra)
    # Each unit (@main, each kernel) is translated, optimized and compiled to machine
    # code on its own, in parallel (`xweave.parallel`); the units' objects are merged
    # into one (`object_merge`: the code of every function stays what its unit's
    # object holds, as it was when the linked units were emitted as one module).
    order = sorted(range(len(units)), key=lambda i: -units[i].size) \
        if all(hasattr(u, "size") for u in units) else None
    compiled = map_forked(len(units), lambda i: _compiled_unit(units[i](), resolved),
                          order=order)
    with timing.scope("merge objects"):
        object_bytes = merge_objects([obj for _, obj in compiled])
    return CompiledObject(object_bytes, param_names, resolved,
                          _bitcode=tuple(bitcode for bitcode, _ in compiled))


def compile_loop_module(module: ModuleOp, abi: Callable[[Mapping, Mapping], dict],
                        verify: bool = False) -> CompiledObject | None:
    """`compile_llvm(lowered, abi)` of a loop-stage `module` that `lower_module` would
    lower to `lowered` (the last stage of a CPU build), each unit lowered in the worker
    that compiles it: the same LLVM IR, unit by unit, and the same object, with the
    lowering in parallel too. `abi(main_attributes, module_attributes)` is the ABI
    description (`abi_from`), from the lowered @main's attributes. `verify`:
    verify each unit's llvm-dialect functions (`--verify-each`). The module is not
    modified.

    The lowering of a function reads the module's analysis (`_ModuleLowering.prepare`,
    done here) but adds to what every unit declares: the external functions (in the
    order of their first calls in the whole module), the thread-count global. So each
    worker first lowers its units and reports what they add; then, from every report,
    translates and compiles them (`TwoPhases`). None (nothing done) for a module this
    does not handle the way `lower_module` does (no @main, functions already in the
    llvm dialect, generated names that `lower_module` would have numbered apart), or
    whose lowering fails (the llvm stage, run as a stage, then reports it).
    """
    lowering = _ModuleLowering(module)
    ops = lowering.prepare()
    functions = [op for op in ops if isinstance(op, func.FuncOp)]
    names = [f.sym_name.data for f in functions]
    bodies = [f for f in functions if not f.is_declaration]
    if "main" not in (f.sym_name.data for f in bodies) or any(
            not (isinstance(op, func.FuncOp) or is_global(op)) for op in ops):
        return None
    globals_ = [lowering._lower_global(op) for op in ops
                if is_global(op) and not is_call_state(op)]
    param_names = [g.sym_name.data for g in globals_ if g.sym_name.data.startswith(PARAM_PREFIX)
                   and g.value is None and g.linkage.linkage.data == "external"]
    resolved = target_of(module).resolve()
    # units: @main's first, then the other functions with a body, in module order
    bodies.sort(key=lambda f: f.sym_name.data != "main")
    sizes = [len(_walk_list(f)) for f in bodies]
    order = sorted(range(len(bodies)), key=lambda i: -sizes[i])
    lowered: dict[int, FunctionAlone] = {}

    def unit_module(index: int, externals: Sequence[tuple[str, llvm.LLVMFunctionType]],
                    uses_threads: bool) -> ModuleOp:
        """The unit's functions in a module whose ops are in the order of the lowered
        module's, the other functions as declarations."""
        alone, own = lowered[index], bodies[index].sym_name.data
        unit_ops: list[Operation] = []
        lowered_globals = iter(globals_)
        for op in ops:
            if is_global(op):
                if not is_call_state(op):
                    unit_ops.append(next(lowered_globals).clone())
            elif op.sym_name.data == own:
                unit_ops.append(alone.function)
            else:
                unit_ops.append(llvm.FuncOp(op.sym_name.data,
                                            lowering.signatures[op.sym_name.data],
                                            linkage=llvm.LinkageAttr("external")))
        unit_ops += alone.new_functions
        if uses_threads:
            unit_ops.append(num_threads_global())
        unit_ops += [llvm.FuncOp(name, ftype, linkage=llvm.LinkageAttr("external"))
                     for name, ftype in externals]
        return ModuleOp(unit_ops)

    def first(index: int) -> tuple:
        with timing.scope("convert-loop-to-llvm"):
            before = set(lowering._symbols)
            lowering.renamed = False
            alone = lowering.lower_alone(bodies[index])
        lowered[index] = alone
        if verify:  # (`--verify-each`: as the lowered module would be, after the pass)
            with timing.scope("verify"):
                unit = unit_module(index, alone.externals, alone.uses_threads)
                unit.verify()
                for op in [alone.function, *alone.new_functions]:
                    op.detach()
        internal = all(f.linkage is not None and f.linkage.linkage.data == "internal"
                       for f in alone.new_functions)
        main_attributes = dict(alone.function.attributes) if index == 0 else None
        return (alone.externals, alone.uses_threads, lowering.renamed or not internal,
                lowering._symbols - before, main_attributes)

    def second(index: int, shared: tuple) -> tuple[bytes, bytes]:
        externals, uses_threads, description = shared
        own = bodies[index].sym_name.data
        unit = unit_module(index, externals, uses_threads)
        del lowered[index]
        with timing.scope("translate to LLVM IR"):
            text = _translate(unit, _unit_group(unit, own), _param_globals(unit), resolved,
                              description if index == 0 else None, index == 0)
        return _compiled_unit(text, resolved)

    with TwoPhases(len(bodies), first, second, order=order) as phases:
        try:
            with timing.scope("llvm"):
                reports = phases.first()
        except Exception:  # noqa: BLE001 - the stage, run as a stage, reports it
            return None
        # What `lower_module` would have made of the reports, function by function in
        # module order: the externals in the order of their first calls, ...
        by_name = dict(zip((f.sym_name.data for f in bodies), reports))
        externals: dict[str, llvm.LLVMFunctionType] = {}
        added: set[str] = set()
        for name in names:
            if name not in by_name:
                continue
            calls, _, renamed, symbols, _ = by_name[name]
            if renamed or symbols & added:
                return None  # (`lower_module` would have numbered the names apart)
            added |= symbols
            for external, ftype in calls:
                if externals.setdefault(external, ftype) != ftype:
                    return None  # (an error: `lower_module` reports it)
        uses_threads = any(report[1] for report in reports)
        existing = set(names) | {g.sym_name.data for g in globals_} | added
        externals = {n: t for n, t in externals.items() if n not in existing}
        description = {**abi(reports[0][4], module.attributes),
                       "target": target_description(resolved)}
        with timing.scope("codegen"):
            compiled = phases.second((list(externals.items()), uses_threads, description))
            with timing.scope("merge objects"):
                object_bytes = merge_objects([obj for _, obj in compiled])
    return CompiledObject(object_bytes, tuple(n[len(PARAM_PREFIX):] for n in param_names),
                          resolved, _bitcode=tuple(bitcode for bitcode, _ in compiled))


def _unit_group(module: ModuleOp, root: str) -> list[str]:
    """`root` and the internal functions it uses, directly or not (as `_units`)."""
    functions, internal = _functions(module)
    return _group(functions, internal, root)


def _functions(module: ModuleOp) -> tuple[dict[str, llvm.FuncOp], set[str]]:
    """The module's functions by name, and the names of those defined internal."""
    functions = {op.sym_name.data: op for op in module.ops if isinstance(op, llvm.FuncOp)}
    internal = {name for name, f in functions.items() if f.body.blocks
                and f.linkage is not None and f.linkage.linkage.data == "internal"}
    return functions, internal


def _group(functions: dict[str, llvm.FuncOp], internal: set[str], root: str) -> list[str]:
    """`root` and the internal functions it uses, directly or not."""
    found, todo = [root], [root]
    while todo:
        for name in _references(functions[todo.pop()]):
            if name in internal and name not in found:
                found.append(name)
                todo.append(name)
    return found


def _compiled_unit(text: str, target: Target) -> tuple[bytes, bytes]:
    """One unit's LLVM IR, verified and optimized (O3) for `target`: its bitcode and
    its machine code (a relocatable object)."""
    tm = target_machine(target)
    try:
        with timing.scope("parse LLVM IR"):
            mod = llvm_binding.parse_assembly(text)
            mod.triple = tm.triple
            mod.data_layout = str(tm.target_data)
            mod.verify()
    except RuntimeError as e:
        raise JITError(f"LLVM rejected the generated IR: {e}") from None
    with timing.scope("LLVM O3"):
        _optimize(mod, tm)
    bitcode = mod.as_bitcode()
    with timing.scope("LLVM code generation"):
        # From the bitcode read back, not from `mod`: reading drops the order of the
        # use lists, which the code generator follows (the order of a block's
        # predecessors, ...). Read back, each function's machine code is the one the
        # units linked into one module (from their bitcode) had.
        object_bytes = tm.emit_object(llvm_binding.parse_bitcode(bitcode))
    return bitcode, object_bytes


def translate_to_llvm_ir(module: ModuleOp) -> str:
    """The LLVM IR of an llvm-dialect module, before optimization (what `compile_llvm`
    hands to LLVM, in one unit; `mlir-translate --mlir-to-llvmir`'s counterpart,
    `xweave-opt -t llvm`)."""
    return _translate(module, None, _param_globals(module), target_of(module).resolve(),
                      None, True)


def _is_llvm_ir_text(text: str) -> bool:
    return "llvm.func" not in text and ("define " in text or "declare " in text)


def _optimize(mod: llvm_binding.ModuleRef, tm: llvm_binding.TargetMachine) -> None:
    pto = llvm_binding.create_pipeline_tuning_options(speed_level=3)
    pto.loop_vectorization = True
    pto.slp_vectorization = True  # off by default even at O3
    pb = llvm_binding.create_pass_builder(tm, pto)
    mpm = pb.getModulePassManager()
    mpm.run(mod, pb)


class _Unit:
    """The LLVM IR text of some functions of a module, made when called (in a worker)."""

    def __init__(self, make: Callable[[], str], size: int):
        self.make = make
        self.size = size
        """How much IR it holds (ops), to start the largest first."""

    def __call__(self) -> str:
        with timing.scope("translate to LLVM IR"):
            return self.make()


def _units(module: ModuleOp, target: Target, abi: Mapping[str, object] | None
           ) -> tuple[list[_Unit], tuple[str, ...]]:
    """The module's translation units, @main's first (with the globals, the parameter
    table and the ABI; without a @main, the first kernel's), then one per kernel with
    the internal functions it uses (its outlined parallel loops); and the parameter
    names in the table's order."""
    params = _param_globals(module)
    functions, internal = _functions(module)
    roots = [name for name, f in functions.items() if f.body.blocks and name not in internal]
    roots.sort(key=lambda name: name != "main")
    units = []
    for index, root in enumerate(roots or [None]):
        names = _group(functions, internal, root) if root is not None else []
        size = sum(1 for name in names for _ in functions[name].walk())
        first = index == 0  # (defines the globals: @main's unit, if there is a @main)
        units.append(_Unit(lambda names=names, first=first: _translate(
            module, names, params, target, abi if first else None, first), size))
    return units, tuple(name[len(PARAM_PREFIX):] for name in params)


def _references(function: llvm.FuncOp) -> set[str]:
    """The symbols `function`'s ops name (callees, addresses taken)."""
    found = set()
    for op in _walk_list(function):
        for attr in (*op.properties.values(), *op.attributes.values()):
            if isinstance(attr, SymbolRefAttr):
                found.add(attr.root_reference.data)
    return found


def _param_globals(module: ModuleOp) -> dict[str, tuple[int, llvm.GlobalOp]]:
    """The parameter globals (bound through the table), with their table index."""
    params: dict[str, tuple[int, llvm.GlobalOp]] = {}
    for op in module.ops:
        if (
            isinstance(op, llvm.GlobalOp)
            and op.sym_name.data.startswith(PARAM_PREFIX)
            and op.value is None
            and op.linkage.linkage.data == "external"
        ):
            params[op.sym_name.data] = (len(params), op)
    return params


def _translate(module: ModuleOp, names: Sequence[str] | None,
               params: Mapping[str, tuple[int, llvm.GlobalOp]], target: Target,
               abi: Mapping[str, object] | None, main: bool) -> str:
    """The LLVM IR of the functions `names` of `module` (None: all) for `target`, with
    what they refer to declared (or, for an internal global, defined); the `main` unit
    also defines the globals, the parameter table (its names and sizes) and `abi`.
    Parameter globals become table entries."""
    tm = target_machine(target)
    ops: list[Operation] = []
    wanted = set(names) if names is not None else None
    used: set[str] = set()
    for op in module.ops:
        if isinstance(op, llvm.FuncOp) and (wanted is None or op.sym_name.data in wanted):
            if params and _uses_params(op, params):
                op = _with_param_table(op, params)
            used |= _references(op)
            ops.append(op)
    for op in module.ops:
        name = getattr(op, "sym_name", None)
        name = name.data if name is not None else None
        if isinstance(op, llvm.FuncOp) and name not in (wanted or ()) and wanted is not None:
            if name in used:  # another unit's function: declared here
                ops.append(llvm.FuncOp(name, op.function_type,
                                       linkage=llvm.LinkageAttr("external")))
        elif isinstance(op, llvm.GlobalOp) and name not in params:
            if main or (name in used and op.linkage.linkage.data != "external"):
                ops.append(op)
            elif name in used:  # defined by the main unit
                ops.append(llvm.GlobalOp(op.global_type, name, "external"))
    if params and (main or PARAM_TABLE in used or any(n in used for n in params)):
        table_type = llvm.LLVMArrayType(len(params), llvm.LLVMPointerType())
        ops.insert(0, llvm.GlobalOp(table_type, PARAM_TABLE, "external"))

    try:
        ir_module = _convert_module(ops, tm)
    except NotImplementedError as e:
        raise JITError(f"cannot translate to LLVM IR: {e}") from None
    for fn in ir_module.functions:
        if not fn.is_declaration:
            fn.attributes.add("nounwind")
    if main:
        _add_param_metadata(ir_module, params, tm)
        if abi is not None:
            _add_abi(ir_module, abi)
            _add_entry(ir_module)
    return _with_vector_width(_with_loop_ids(str(ir_module)), target)


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
bench/HISTORY.md, issue 18)."""

_VECTOR_TYPE = re.compile(r"<(\d+) x (float|double|half|bfloat|i64|i32|i16|i8)>")
_ELEMENT_BITS = {"float": 32, "double": 64, "half": 16, "bfloat": 16,
                 "i64": 64, "i32": 32, "i16": 16, "i8": 8}


def _with_vector_width(text: str, target: Target) -> str:
    """Each defined function with LLVM's `prefer-vector-width` (AUTO_VECTOR_BITS at
    most) and `min-legal-vector-width`: the widest vector its own code uses, up to the
    machine model's width (the schedules' 512-bit vectors stay zmm registers, on Intel
    AVX-512 cores too, which otherwise prefer 256; functions without them get no zmm
    code from LLVM)."""
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
        for o in _walk_list(op)
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


def _add_entry(ir_module: llvm_ir.Module) -> None:
    """`void xweave_entry(ptr args)`: `main(args[0], ..., args[n-1])` (`runtime.abi.ENTRY`)."""
    try:
        main = ir_module.get_global("main")
    except KeyError:
        return
    ptr = llvm_ir.PointerType()
    i64 = llvm_ir.IntType(64)
    entry = llvm_ir.Function(ir_module, llvm_ir.FunctionType(llvm_ir.VoidType(), [ptr]), ENTRY)
    entry.attributes.add("nounwind")
    builder = llvm_ir.IRBuilder(entry.append_basic_block())
    args = []
    for i, _ in enumerate(main.args):
        slot = builder.gep(entry.args[0], [llvm_ir.Constant(i64, i)], inbounds=True,
                           source_etype=ptr)
        args.append(builder.load(slot, typ=ptr, align=8))
    builder.call(main, args)
    builder.ret_void()


# ----------------------------------------------------------------------------------
# The ABI description of a model
# ----------------------------------------------------------------------------------


def profile_slots(attributes) -> tuple[ProfileSlot, ...] | None:
    """The profile slots recorded in @main's attributes (None: not a profiling build)."""
    kernels = attributes.get(KERNELS_ATTR)
    if kernels is None:
        return None
    flops = attributes.get(FLOPS_ATTR)
    counts = [f.value.data for f in flops.data] if flops is not None else []
    counts += [0] * (len(kernels.data) - len(counts))
    return tuple(ProfileSlot(k.data, n) for k, n in zip(kernels.data, counts))


def abi_of(module: ModuleOp, params: Mapping[str, np.ndarray],
           signature: tuple[list[TensorSpec], list[TensorSpec]]) -> dict:
    """The ABI description of a lowered (llvm-dialect) model: inputs, outputs, the call
    state @main takes after them, the arena size, a profiling build's slots, the
    parameters and their digest (`compile_llvm` adds the target)."""
    main = next((op for op in module.ops if getattr(op, "sym_name", None) is not None
                 and op.sym_name.data == "main"), None)
    if main is None:
        raise ModelError("the module has no @main function")
    return abi_from(main.attributes, module.attributes, params, signature)


def abi_from(main_attributes: Mapping, module_attributes: Mapping,
             params: Mapping[str, np.ndarray],
             signature: tuple[list[TensorSpec], list[TensorSpec]]) -> dict:
    """`abi_of` a module whose lowered @main and module have these attributes."""
    peak = module_attributes.get(PEAK_ATTR)
    state = main_attributes.get(CALL_STATE_ATTR)
    slots = profile_slots(main_attributes)
    return {
        "abi_version": ABI_VERSION,
        "inputs": [s.to_json() for s in signature[0]],
        "outputs": [s.to_json() for s in signature[1]],
        "call_state": [{"name": d.data["name"].data, "nbytes": d.data["nbytes"].value.data}
                       for d in state.data] if isinstance(state, ArrayAttr) else [],
        "peak_memory_bytes": peak.value.data if isinstance(peak, IntegerAttr) else None,
        "profile": [s.to_json() for s in slots] if slots is not None else None,
        "params": [{"name": k, "shape": list(np.shape(v)), "dtype": np.asarray(v).dtype.name}
                   for k, v in sorted(params.items())],
        "params_sha256": params_digest(params),
    }
