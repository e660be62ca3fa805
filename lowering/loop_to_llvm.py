"""convert-loop-to-llvm: the loop stage -> the llvm dialect (only `llvm.func`/`llvm.mlir.global`).

Each `func.func` is rebuilt as an `llvm.func` in one walk (see `llvm_builder`):

* types: memref -> `!llvm.ptr` (static shapes, row-major, bare pointers), index -> i64;
* `loop.load`/`loop.store` (and `memref`/`vector` load/store): the affine map is
  expanded into one i64 linear offset (strides from the static shape) and a
  `llvm.getelementptr inbounds`; vector accesses load/store `vector<N x T>`, aligned
  as far as the buffer's start and the offset prove it (`access_alignment`: buffers
  allocated by the function start 64- or 32-byte aligned; arguments and parameters
  only at the element's alignment), scalar accesses at the element's alignment;
* `loop.for`: blocks and branches (a rotated loop: the body, then increment, compare
  and branch back). `FOR_LOWERINGS` maps every loop kind to its lowering: `parallel`
  loops are outlined and run on libgomp's thread pool (`llvm_parallel`: the body
  becomes an internal function, a worker runs each thread's chunk, the kernel calls
  `GOMP_parallel`; the thread count is the object's `xweave_num_threads` global, set
  by the runtime); every other kind is serial (`loop-vectorize`/`loop-unroll` have
  already rewritten the loops they handle);
* `scf.if` (with results) and `scf.for` (with iteration values) become blocks too;
* `loop.view` (a buffer inside a byte buffer): a byte `getelementptr`;
* `loop.alloc`: `#loop.scope<local>` -> `llvm.alloca` in the entry block (above
  `LOCAL_STACK_LIMIT` bytes, heap instead, so a big buffer cannot overflow a thread's
  stack); global scope -> `aligned_alloc(64, ...)` where the alloc is (hoisted to the
  entry block if it sits inside a loop or branch), `free` before every return;
* float ops carry the `contract` fast-math flag only (FMA fusion, never `reassoc`:
  reductions keep the program's order, so results match the interpreter;
  `vector.reduction <add>` is LLVM's ordered `vector.reduce.fadd`);
* globals (weights) -> `llvm.mlir.global external @xweave_param_<name>` without an
  initializer (values: `llvm_params.extract_params`, bound by the runtime);
  `get_global` -> `llvm.mlir.addressof`; call state (uninitialized writable globals:
  the arena, profiling counters) -> trailing `!llvm.ptr` arguments of every function
  reading it (itself or through calls), so each call of @main brings its own
  (`CALL_STATE_ATTR` lists them on @main);
* kernel arguments get `llvm.noalias` unless some call passes the same buffer twice,
  and `llvm.dereferenceable(<bytes>)`; `@main` keeps external linkage and its
  `xweave.*` attributes (`xweave.input_names`, `xweave.output_names`).

Ops already in the llvm dialect are left alone (top level) or copied (inside a function).
Every function of the module keeps external linkage, so kernels can be called on their
own from the runtime and tests; the functions made from parallel loops are internal.

A loop kind's lowering is a function `(LoopLowering, loop.ForOp) -> None` (`llvm_loop_lowering`); it has
`emit_counted_loop`, `lower_ops` (the body), `map` (the induction variable), and
`module.add_function` to add a function it builds (e.g. an outlined parallel body).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import cast

from xdsl.context import Context
from xdsl.dialects import builtin, cf, func, llvm, memref, scf, vector
from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    StringAttr,
    UnitAttr,
    i32,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass

from xweave.dialects import loop
from xweave.lowering.llvm_addressing import UNBOUNDED, access_parts, pow2
from xweave.lowering.llvm_builder import (
    NSW,
    PTR,
    LoweringError,
    byte_size,
    convert_type,
    llvm_array_type,
    load_op,
    num_elements,
    store_op,
    unsupported,
)
from xweave.lowering.llvm_loop_lowering import ForLowering, LoopLowering
from xweave.lowering.llvm_loops import NO_LLVM_UNROLL, lower_serial_for
from xweave.lowering.llvm_params import (
    call_state_uses,
    extract_params,
    get_global_name,
    global_name,
    global_type,
    is_call_state,
    is_get_global,
    is_global,
    PARAM_VALUE_ATTR,
    param_symbol,
    param_value,
)
from xweave.lowering.llvm_parallel import lower_parallel_for, num_threads_global
from xweave.lowering.llvm_integer import INTEGER_LOWERINGS
from xweave.lowering.llvm_scalar import SCALAR_LOWERINGS
from xweave.passes.loop_utils import walk_list

__all__ = [
    "FOR_LOWERINGS",
    "ConvertLoopToLLVMPass",
    "extract_params",
    "lower_module",
]

ARG_TYPES_ATTR = "xweave.arg_types"
"""Attribute of the lowered @main: the memref types of its loop-stage arguments (the
model's inputs, then its outputs), which its `!llvm.ptr` arguments no longer say."""

CALL_STATE_ATTR = "xweave.call_state"
"""Attribute of the lowered @main: `[{name, nbytes}, ...]`, the call state (`is_call_state`)
it takes after its inputs and outputs, one `!llvm.ptr` each, in order."""

GLOBAL_ALIGNMENT = 64
"""Alignment (bytes) of heap buffers."""

LOCAL_ALIGNMENT = 32
"""Default alignment (bytes) of stack buffers: one AVX register."""

LOCAL_STACK_LIMIT = 512 * 1024
"""Local buffers larger than this (bytes) go to the heap instead of the stack."""

_NSW_NUW = IntegerAttr(llvm.OverflowAttr(
    [llvm.OverflowFlag.NO_SIGNED_WRAP, llvm.OverflowFlag.NO_UNSIGNED_WRAP]).to_int(), 32)
_SLT = IntegerAttr(llvm.ICmpPredicateFlag.SLT.to_int(), i64)

_ALIGNED_ALLOC = llvm.LLVMFunctionType([i64, i64], PTR)
_FREE = llvm.LLVMFunctionType([PTR], llvm.LLVMVoidType())


# ----------------------------------------------------------------------------------
# The pass
# ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class ConvertLoopToLLVMPass(ModulePass):
    """Lower a loop-stage module to the llvm dialect (only llvm.func / llvm.mlir.global left).

    Take the parameter values out first with `extract_params(module)`: the globals
    become external declarations without data.
    """

    name = "convert-loop-to-llvm"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        lower_module(op)


def lower_module(module: ModuleOp) -> None:
    """Rewrite `module` (loop stage) in place into the llvm dialect."""
    _ModuleLowering(module).run()


# ----------------------------------------------------------------------------------
# Loops: one lowering per kind
# ----------------------------------------------------------------------------------

FOR_LOWERINGS: dict[loop.ForKind, ForLowering] = {
    loop.ForKind.SERIAL: lower_serial_for,
    # The body outlined, run on libgomp's thread pool (see llvm_parallel).
    loop.ForKind.PARALLEL: lower_parallel_for,
    # `loop-vectorize`/`loop-unroll` already rewrote such loops into vector ops or
    # copies of the body; a kind left by hand is serial (LLVM vectorizes and unrolls
    # constant trip-count loops itself).
    loop.ForKind.VECTORIZED: lower_serial_for,
    loop.ForKind.UNROLLED: lower_serial_for,
    loop.ForKind.VTHREAD: lower_serial_for,
}
"""How each kind of `loop.for` is lowered; replace an entry to change a kind's lowering."""


# ----------------------------------------------------------------------------------
# Module level
# ----------------------------------------------------------------------------------


@dataclass
class FunctionAlone:
    """One function lowered by itself (`_ModuleLowering.lower_alone`)."""

    function: llvm.FuncOp
    new_functions: list[llvm.FuncOp]
    """The functions its lowering made (outlined parallel loops), in order."""
    externals: list[tuple[str, llvm.LLVMFunctionType]]
    """The external functions it calls, in the order of their first calls."""
    uses_threads: bool


class _ModuleLowering:
    def __init__(self, module: ModuleOp):
        self.module = module
        self.externals: dict[str, llvm.LLVMFunctionType] = {}
        self.globals: dict[str, MemRefType] = {}
        self.call_state: dict[str, MemRefType] = {}
        """The globals each call gets its own copy of (`is_call_state`), in module order."""
        self.state_of: dict[str, tuple[str, ...]] = {}
        """Function -> the call state it uses, itself or through its calls: its
        trailing `!llvm.ptr` arguments, in the order of `call_state`."""
        self.aliased_args: set[tuple[str, int]] = set()
        self.new_functions: list[llvm.FuncOp] = []
        """Functions made by the lowering itself (e.g. outlined loop bodies), appended last."""
        self.parallel_count: dict[str, int] = {}
        """Parallel loops outlined so far, per function."""
        self.uses_threads = False
        """Some parallel loop reads the thread-count global."""
        self._symbols: set[str] = set()
        self.renamed = False
        """`unique_symbol` gave some name a suffix (its base was taken)."""
        self.signatures: dict[str, llvm.LLVMFunctionType] = {}

    def unique_symbol(self, base: str) -> str:
        """`base`, or `base_<n>`: a name no function of the module has."""
        name, n = base, 0
        while name in self._symbols:
            n += 1
            name = f"{base}_{n}"
        self.renamed |= n > 0
        self._symbols.add(name)
        return name

    def add_function(self, op: llvm.FuncOp) -> None:
        """Add a function built during the lowering (a parallel loop's worker, ...)."""
        self.new_functions.append(op)

    def prepare(self) -> list[Operation]:
        """What every function's lowering reads of the module (its symbols, globals,
        call state, signatures, aliased arguments); the module's ops."""
        module = self.module
        ops = list(module.ops)
        self._symbols = {
            op.sym_name.data
            for op in ops
            if isinstance(op, func.FuncOp | llvm.FuncOp | llvm.GlobalOp)
        }
        for op in ops:
            if is_global(op):
                self.globals[global_name(op)] = global_type(op)
                if is_call_state(op):
                    self.call_state[global_name(op)] = global_type(op)
        functions = [op for op in ops if isinstance(op, func.FuncOp)]
        self.state_of = call_state_uses(functions, list(self.call_state))
        self.signatures = {
            f.sym_name.data: _signature(f, len(self.state_of[f.sym_name.data])) for f in functions
        }
        self._find_aliased_args(functions)
        return ops

    def run(self) -> None:
        module = self.module
        ops = self.prepare()

        # Build everything first: on an error the module is left untouched.
        replacements: list[tuple[Operation, Operation | None]] = []
        for op in ops:
            if is_global(op) and is_call_state(op):
                replacements.append((op, None))  # an argument now
            elif is_global(op):
                replacements.append((op, self._lower_global(op)))
            elif isinstance(op, func.FuncOp):
                new = self._lower_function(op, self.signatures[op.sym_name.data])
                replacements.append((op, new))
            elif not isinstance(op, llvm.FuncOp | llvm.GlobalOp):
                raise unsupported(op, "at module level")

        block = module.body.block
        for op, new in replacements:
            if new is not None:
                block.insert_op_before(new, op)
            op.detach()
            op.erase(safe_erase=False)

        block.add_ops(self.new_functions)
        existing = {
            op.sym_name.data for op in block.ops if isinstance(op, llvm.FuncOp | llvm.GlobalOp)
        }
        if self.uses_threads and num_threads_global().sym_name.data not in existing:
            block.add_op(num_threads_global())
        for name, ftype in self.externals.items():
            if name not in existing:
                block.add_op(llvm.FuncOp(name, ftype, linkage=llvm.LinkageAttr("external")))

    def lower_alone(self, op: func.FuncOp) -> FunctionAlone:
        """`op` lowered by itself (after `prepare`), with what its lowering added to the
        module: the functions it made, the external functions it calls in the order of
        their first calls, whether it reads the thread count."""
        self.externals, self.new_functions, self.uses_threads = {}, [], False
        lowered = self._lower_function(op, self.signatures[op.sym_name.data])
        return FunctionAlone(lowered, self.new_functions, list(self.externals.items()),
                             self.uses_threads)

    def _lower_global(self, op: Operation) -> llvm.GlobalOp:
        name = global_name(op)
        # loop.global holds constants (weights); memref.global says so with `constant`
        constant = op.name == "loop.global" or "constant" in op.properties
        lowered = llvm.GlobalOp(
            llvm_array_type(self.globals[name]),
            param_symbol(name),
            "external",
            constant=True if constant else None,
        )
        # The value rides along (LLVM IR never sees it), so that an llvm-stage module
        # still holds its weights: `extract_params` reads them back.
        lowered.attributes[PARAM_VALUE_ATTR] = param_value(op)
        return lowered

    def state_args_of_call(self, callee: str, fl: FunctionLowering) -> list[SSAValue]:
        """The caller's call-state arguments a call of `callee` passes on."""
        return [fl.state_args[s] for s in self.state_of.get(callee, ())]

    def _find_aliased_args(self, functions: Sequence[func.FuncOp]) -> None:
        """(callee, arg index) pairs that some call binds to a buffer also passed elsewhere."""

        def root(value: SSAValue) -> tuple[object, int, int]:
            """The underlying buffer of `value` and the byte range `value` covers in it."""
            owner = value.owner
            if isinstance(owner, loop.ViewOp):
                base, start, _ = root(owner.source)
                size = loop.buffer_bytes(cast(MemRefType, value.type))
                return base, start + owner.offset, start + owner.offset + size
            if isinstance(owner, Operation) and is_get_global(owner):
                return ("global", get_global_name(owner)), 0, UNBOUNDED
            return value, 0, UNBOUNDED

        for function in functions:
            for op in walk_list(function):
                if not isinstance(op, func.CallOp):
                    continue
                callee = op.callee.root_reference.data
                ranges = [
                    (i, root(arg))
                    for i, arg in enumerate(op.arguments)
                    if isinstance(arg.type, MemRefType)
                ]
                for n, (i, (base, start, end)) in enumerate(ranges):
                    for j, (other, other_start, other_end) in ranges[n + 1:]:
                        if base == other and start < other_end and other_start < end:
                            self.aliased_args.update(((callee, i), (callee, j)))

    def _lower_function(self, op: func.FuncOp, ftype: llvm.LLVMFunctionType) -> llvm.FuncOp:
        name = op.sym_name.data
        attributes = {k: v for k, v in op.attributes.items() if k.startswith("xweave.")}
        arg_attrs = None
        state = self.state_of[name]
        if name != "main":
            arg_attrs = self._kernel_arg_attrs(name, op.function_type.inputs.data, state)
        else:
            attributes[ARG_TYPES_ATTR] = ArrayAttr(op.function_type.inputs.data)
            if state:
                attributes[CALL_STATE_ATTR] = ArrayAttr([
                    DictionaryAttr({"name": StringAttr(s),
                                    "nbytes": IntegerAttr(loop.buffer_bytes(self.call_state[s]), i64)})
                    for s in state])
        body = None
        if not op.is_declaration:
            try:
                fl = FunctionLowering(self, op, ftype)
                fl.state_args = dict(zip(state, fl.entry.args[len(fl.entry.args) - len(state):]))
                body = fl.lower()
            except LoweringError as e:
                raise LoweringError(f"{e} (in @{name})") from None
        return llvm.FuncOp(
            name,
            ftype,
            linkage=llvm.LinkageAttr("external"),
            body=body,
            other_props={"arg_attrs": arg_attrs} if arg_attrs is not None else None,
            extra_attrs=attributes,
        )

    def _kernel_arg_attrs(
        self, name: str, inputs: Sequence[Attribute], state: Sequence[str]
    ) -> ArrayAttr | None:
        dicts = []
        for i, t in enumerate(inputs):
            entries: dict[str, Attribute] = {}
            if isinstance(t, MemRefType):
                if (name, i) not in self.aliased_args:
                    entries["llvm.noalias"] = UnitAttr()
                nbytes = num_elements(t) * byte_size(t.get_element_type())
                entries["llvm.dereferenceable"] = IntegerAttr(nbytes, i64)
            dicts.append(DictionaryAttr(entries))
        for s in state:
            nbytes = loop.buffer_bytes(self.call_state[s])
            dicts.append(DictionaryAttr({"llvm.dereferenceable": IntegerAttr(nbytes, i64)}))
        if not any(d.data for d in dicts):
            return None
        return ArrayAttr(dicts)


def _signature(op: func.FuncOp, call_state: int = 0) -> llvm.LLVMFunctionType:
    """The function's type; `call_state` more pointers after its own arguments."""
    inputs = [convert_type(t) for t in op.function_type.inputs.data] + [PTR] * call_state
    outputs = op.function_type.outputs.data
    if len(outputs) > 1:
        raise unsupported(op, f"@{op.sym_name.data} returns {len(outputs)} values")
    output = convert_type(outputs[0]) if outputs else llvm.LLVMVoidType()
    return llvm.LLVMFunctionType(inputs, output)


# ----------------------------------------------------------------------------------
# Function level
# ----------------------------------------------------------------------------------


class FunctionLowering(LoopLowering):
    """Builds the `llvm.func` body of one `func.func` (`LoopLowering`: what the loop
    kinds' lowerings use of it)."""

    def __init__(self, module: _ModuleLowering, op: func.FuncOp, ftype: llvm.LLVMFunctionType):
        super().__init__(ftype.inputs.data, module.externals)
        self.module = module
        self.func = op
        self.ftype = ftype
        self.state_args: dict[str, SSAValue] = {}
        """Call-state global -> the argument holding this call's copy."""
        self.in_parallel_region = False
        """Building the body of a parallel loop: nested parallel loops run serially."""
        self.heap_buffers: list[SSAValue] = []
        """Buffers to free before every return."""
        self.block_map: dict[Block, Block] = {}
        """Source block -> lowered block, for functions made of several blocks (cf)."""
        self.handlers: dict[type[Operation], Callable[[Operation], None]] = {
            loop.ForOp: self.lower_for,
            loop.AllocOp: self.lower_alloc,
            loop.ViewOp: self.lower_view,
            loop.LoadOp: self.lower_load,
            loop.StoreOp: self.lower_store,
            loop.PrefetchOp: self.lower_prefetch,
            memref.LoadOp: self.lower_load,
            memref.StoreOp: self.lower_store,
            vector.LoadOp: self.lower_load,
            vector.StoreOp: self.lower_store,
            memref.AllocOp: self.lower_alloc,
            memref.AllocaOp: self.lower_alloc,
            memref.DeallocOp: self.lower_dealloc,
            scf.IfOp: self.lower_if,
            scf.ForOp: self.lower_scf_for,
            func.CallOp: self.lower_call,
            func.ReturnOp: self.lower_return,
            cf.BranchOp: self.lower_branch,
            cf.ConditionalBranchOp: self.lower_branch,
            builtin.UnrealizedConversionCastOp: self.lower_cast,
        }

    def lower(self) -> Region:
        """The body of the `llvm.func`."""
        blocks = list(self.func.body.blocks)
        self.block_map[blocks[0]] = self.entry
        for block in blocks[1:]:
            self.block_map[block] = self.new_block([convert_type(a.type) for a in block.args])
        for block, new in self.block_map.items():
            for arg, new_arg in zip(block.args, new.args):
                self.map(arg, new_arg)
        for i, block in enumerate(blocks):
            if i:
                self.place(self.block_map[block])
            terminator = self.lower_ops(block)
            if terminator is not None:
                raise unsupported(terminator, "outside of its structured parent")
        return self.finish()

    # --- dispatch -------------------------------------------------------------------

    def lower_ops(self, block: Block) -> Operation | None:
        """Lower every op of `block`; return its structured terminator (yield), not lowered."""
        for op in block.ops:
            if isinstance(op, loop.YieldOp | scf.YieldOp):
                return op
            self.lower_op(op)
        return None

    def lower_op(self, op: Operation) -> None:
        handler = self.handlers.get(type(op))
        if handler is not None:
            handler(op)
            return
        scalar = SCALAR_LOWERINGS.get(type(op)) or INTEGER_LOWERINGS.get(type(op))
        if scalar is not None:
            for result, value in zip(op.results, scalar(self, op), strict=True):
                self.map(result, value)
            return
        if is_get_global(op):
            self.lower_get_global(op)
            return
        if op.dialect_name() == "llvm" and not op.regions and not op.successors:
            self.emit(op.clone_without_regions(value_mapper=self.values))
            return
        raise unsupported(op)

    # --- loops ----------------------------------------------------------------------

    def emit_counted_loop(
        self, lb: int, ub: int, step: int, body: Callable[[SSAValue], None],
        llvm_unroll: bool = True,
    ) -> None:
        """`for iv in range(lb, ub, step): body(iv)` with constant bounds, as blocks.

        Emitted rotated (the trip count is known to be positive): the body block takes
        the induction variable as argument and ends with the increment, the compare
        and the branch back. One iteration needs no loop at all. `llvm_unroll=False`
        marks the branch back `NO_LLVM_UNROLL`.
        """
        extent = len(range(lb, ub, step))
        if extent == 0:
            return
        if extent == 1:
            body(self.const(lb))
            return
        header = self.new_block([i64])
        self.emit(llvm.BrOp(header, self.const(lb)))
        self.place(header)
        iv = header.args[0]
        body(iv)
        nxt = self.emit1(llvm.AddOp(iv, self.const(step), overflow=_NSW_NUW))
        more = self.emit1(llvm.ICmpOp(nxt, self.const(ub), _SLT))
        exit_block = self.new_block()
        back = llvm.CondBrOp(more, header, [nxt], exit_block, [])
        if not llvm_unroll:
            back.attributes[NO_LLVM_UNROLL] = UnitAttr()
        self.emit(back)
        self.place(exit_block)

    def emit_dynamic_loop(
        self, begin: SSAValue, end: SSAValue, body: Callable[[SSAValue], None]
    ) -> None:
        """`for t in range(begin, end): body(t)` with i64 bounds known at run time only."""
        check = self.new_block([i64])
        loop_block = self.new_block([i64])
        exit_block = self.new_block()
        self.emit(llvm.BrOp(check, begin))
        self.place(check)
        more = self.emit1(llvm.ICmpOp(check.args[0], end, _SLT))
        self.emit(llvm.CondBrOp(more, loop_block, [check.args[0]], exit_block, []))
        self.place(loop_block)
        t = loop_block.args[0]
        body(t)
        self.emit(llvm.BrOp(check, self.emit1(llvm.AddOp(t, self.const(1), overflow=_NSW_NUW))))
        self.place(exit_block)

    def lower_for(self, op: loop.ForOp) -> None:
        FOR_LOWERINGS.get(op.kind.data, lower_serial_for)(self, op)

    def lower_scf_for(self, op: scf.ForOp) -> None:
        lb, ub, step = self.get(op.lb), self.get(op.ub), self.get(op.step)
        inits = [self.get(v) for v in op.iter_args]
        header = self.new_block([lb.type, *(v.type for v in inits)])
        body = self.new_block()
        exit_block = self.new_block()
        self.emit(llvm.BrOp(header, lb, *inits))
        self.place(header)
        more = self.emit1(llvm.ICmpOp(header.args[0], ub, _SLT))
        self.emit(llvm.CondBrOp(more, body, [], exit_block, []))
        self.place(body)
        for arg, value in zip(op.body.block.args, header.args):
            self.map(arg, value)
        yield_op = self.lower_ops(op.body.block)
        carried = [self.get(v) for v in yield_op.operands] if yield_op is not None else []
        nxt = self.emit1(llvm.AddOp(header.args[0], step, overflow=NSW))
        self.emit(llvm.BrOp(header, nxt, *carried))
        self.place(exit_block)
        for result, value in zip(op.results, header.args[1:]):
            self.map(result, value)

    # --- conditionals and branches ---------------------------------------------------

    def lower_if(self, op: scf.IfOp) -> None:
        cond = self.get(op.cond)
        result_types = [convert_type(r.type) for r in op.results]
        then_block = self.new_block()
        join = self.new_block(result_types)
        has_else = bool(op.false_region.blocks)
        else_block = self.new_block() if has_else else join
        self.emit(llvm.CondBrOp(cond, then_block, [], else_block, []))
        for region, block in ((op.true_region, then_block), (op.false_region, else_block)):
            if not region.blocks:
                continue
            self.place(block)
            yield_op = self.lower_ops(region.block)
            values = [self.get(v) for v in yield_op.operands] if yield_op is not None else []
            self.emit(llvm.BrOp(join, *values))
        self.place(join)
        for result, value in zip(op.results, join.args):
            self.map(result, value)

    def lower_branch(self, op: Operation) -> None:
        if isinstance(op, cf.BranchOp):
            args = [self.get(v) for v in op.arguments]
            self.emit(llvm.BrOp(self.block_map[op.successor], *args))
            return
        op = cast(cf.ConditionalBranchOp, op)
        self.emit(
            llvm.CondBrOp(
                self.get(op.cond),
                self.block_map[op.then_block],
                [self.get(v) for v in op.then_arguments],
                self.block_map[op.else_block],
                [self.get(v) for v in op.else_arguments],
            )
        )

    # --- memory ---------------------------------------------------------------------

    def lower_alloc(self, op: Operation) -> None:
        t = cast(MemRefType, op.results[0].type)
        element = convert_type(t.get_element_type())
        count = num_elements(t)
        nbytes = count * byte_size(element)
        requested = op.properties.get("alignment")
        align = requested.value.data if isinstance(requested, IntegerAttr) else None
        on_stack = isinstance(op, memref.AllocaOp)
        if isinstance(op, loop.AllocOp):
            scope = loop.scope_of(t).data
            if scope not in ("global", "local"):
                raise unsupported(op, f"memory scope '{scope}' has no CPU lowering")
            on_stack = scope == "local" and nbytes <= LOCAL_STACK_LIMIT
        if on_stack:
            alloca = llvm.AllocaOp(self.const(count), element, align or LOCAL_ALIGNMENT)
            self.in_entry(alloca)
            self.map(op.results[0], alloca.results[0])
            self.buffer_alignment[op.results[0]] = align or LOCAL_ALIGNMENT
            return
        align = max(align or 1, GLOBAL_ALIGNMENT)
        self.map(op.results[0], self.emit_heap_alloc(op, nbytes, align))
        self.buffer_alignment[op.results[0]] = align

    def lower_view(self, op: loop.ViewOp) -> None:
        """`getelementptr i8, source, offset`; aligned as far as the source and offset prove."""
        source = self.get(op.source)
        self.map(op.result, self.byte_offset(source, op.offset))
        known = self.buffer_alignment.get(op.source)
        if known is not None:
            self.buffer_alignment[op.result] = min(known, pow2(op.offset))

    def emit_heap_alloc(self, op: Operation, nbytes: int, align: int) -> SSAValue:
        """`aligned_alloc(align, nbytes rounded up)`, freed at every return.

        At the alloc's place when it is in the function's top-level block; hoisted
        into the entry block otherwise (inside a loop it would allocate every time).
        """
        size = -(-max(nbytes, 1) // align) * align
        args = [self.const(align), self.const(size)]
        call = llvm.CallOp("aligned_alloc", *args, return_type=PTR)
        self.externals.setdefault("aligned_alloc", _ALIGNED_ALLOC)
        self.externals.setdefault("free", _FREE)
        if op.parent_block() is self.func.body.blocks.first:
            self.emit(call)
        else:
            self.in_entry(call)
        self.heap_buffers.append(call.results[0])
        return call.results[0]

    def lower_dealloc(self, op: memref.DeallocOp) -> None:
        ptr = self.get(op.memref)
        if ptr in self.heap_buffers:
            self.heap_buffers.remove(ptr)
            self.call_external("free", _FREE, [ptr])

    def lower_get_global(self, op: Operation) -> None:
        name = get_global_name(op)
        if name in self.module.call_state:
            self.map(op.results[0], self.state_args[name])
            return
        if name not in self.module.globals:
            raise unsupported(op, f"unknown global @{name}")
        self.map(op.results[0], self.emit1(llvm.AddressOfOp(param_symbol(name), PTR)))

    def lower_load(self, op: Operation) -> None:
        base, indices, amap = access_parts(op)
        t = convert_type(op.results[0].type)
        ptr = self.address(base, indices, amap)
        align = self.access_alignment(base, indices, amap, t)
        self.map(op.results[0], self.emit1(load_op(ptr, t, align)))

    def lower_prefetch(self, op: loop.PrefetchOp) -> None:
        base, indices, amap = access_parts(op)
        ptr = self.address(base, indices, amap)
        # (address, write, locality 3 = keep in all levels, data cache)
        args = [ptr, self.const(int(op.is_write), i32), self.const(3, i32), self.const(1, i32)]
        self.emit(llvm.CallIntrinsicOp("llvm.prefetch.p0", args, []))

    def lower_store(self, op: Operation) -> None:
        base, indices, amap = access_parts(op)
        value = self.get(op.operands[0])
        ptr = self.address(base, indices, amap)
        align = self.access_alignment(base, indices, amap, value.type)
        self.emit(store_op(value, ptr, align))

    # --- calls, returns, casts ------------------------------------------------------

    def lower_call(self, op: func.CallOp) -> None:
        if len(op.results) > 1:
            raise unsupported(op, "more than one result")
        t = convert_type(op.results[0].type) if op.results else None
        callee = op.callee.root_reference.data
        state = self.module.state_args_of_call(callee, self)
        call = self.emit(llvm.CallOp(callee, *self.operands(op), *state, return_type=t))
        if op.results:
            self.map(op.results[0], call.results[0])

    def emit_frees(self) -> None:
        """Free the heap buffers of the function (before a return)."""
        for ptr in self.heap_buffers:
            self.call_external("free", _FREE, [ptr])

    def adopt_constant(self, lowered: SSAValue) -> SSAValue:
        """A copy, in this function's prologue, of a constant of another function."""
        op = cast(llvm.ConstantOp, lowered.owner).clone()
        self._constant_ops.append(op)
        return op.results[0]

    def lower_return(self, op: func.ReturnOp) -> None:
        self.emit_frees()
        values = self.operands(op)
        self.emit(llvm.ReturnOp(values[0] if values else None))

    def lower_cast(self, op: builtin.UnrealizedConversionCastOp) -> None:
        if len(op.inputs) != 1 or len(op.outputs) != 1:
            raise unsupported(op, "only 1:1 casts")
        value = self.get(op.inputs[0])
        if value.type != convert_type(op.outputs[0].type):
            raise unsupported(op, f"from {op.inputs[0].type} to {op.outputs[0].type}")
        self.map(op.outputs[0], value)
