"""`parallel` loops -> libgomp's thread pool, for `convert-loop-to-llvm`.

A `loop.for ... parallel` in function `@k` becomes two internal functions and a call:

```
llvm.func internal @k_parallel0_body(%a: !llvm.ptr {llvm.noalias}, ..., %begin: i64, %end: i64)
    // for t in [begin, end): iv = lb + t * step; <the loop body>
llvm.func internal @k_parallel0(%data: !llvm.ptr)
    // loads the captured values from %data; this thread's contiguous chunk of the
    // iteration range: [tid * n / nth, (tid + 1) * n / nth), from omp_get_thread_num()
    // and omp_get_num_threads(); calls @k_parallel0_body
// in @k, where the loop was:
    %nt = min(load @xweave_num_threads, n)
    if %nt == 1: call @k_parallel0_body(captured..., 0, n)       // no region at all
    else:        store the captured values into a stack block %data;
                 llvm.call @GOMP_parallel(@k_parallel0, %data, %nt, 0)
```

The captured values are every value used in the loop and defined outside it (buffers,
outer induction variables, scalars), constants excepted (rebuilt in the body). The
body takes them as arguments, not through the block, so that pointers keep what the
kernel knew of them: `noalias` (kernel arguments that have it, and buffers allocated
by the kernel) and `dereferenceable`. LLVM inlines the body into the worker and turns
`noalias` arguments into scoped alias metadata.

`xweave_num_threads` is an `i32` global defined in the object (0 initially, meaning
libgomp's default); the runtime sets it per loaded instance (`runtime/threads.py`).
Loops nested in a parallel loop are lowered serially (only the outermost runs in
parallel), and so is a parallel loop of a single iteration.
"""

from __future__ import annotations

from xdsl.dialects import func, llvm
from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    IntegerAttr,
    MemRefType,
    UnitAttr,
    VectorType,
    i8,
    i32,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue

from xweave.dialects import loop
from xweave.lowering.llvm_builder import NSW, PTR, byte_size, element_type, num_elements
from xweave.lowering.llvm_loop_lowering import LoopLowering
from xweave.lowering.llvm_loops import lower_serial_for
from xweave.lowering.llvm_params import get_global_name, is_get_global
from xweave.runtime.abi import NUM_THREADS_GLOBAL

OUTLINED_ATTR = "xweave.outlined"
"""Marks the functions made from parallel loop bodies."""

_VOID = llvm.LLVMVoidType()
_GOMP_PARALLEL = llvm.LLVMFunctionType([PTR, PTR, i32, i32], _VOID)
_OMP_QUERY = llvm.LLVMFunctionType([], i32)
_WORKER = llvm.LLVMFunctionType([PTR], _VOID)


def _icmp(name: str) -> IntegerAttr:
    return IntegerAttr(llvm.ICmpPredicateFlag(name).to_int(), i64)


def lower_parallel_for(fl: LoopLowering, op: loop.ForOp) -> None:
    """The iterations on libgomp's threads (serially when nested in a parallel loop)."""
    if fl.in_parallel_region or op.extent <= 1:
        lower_serial_for(fl, op)
        return
    _ParallelLoop(fl, op).lower()


def _defined_outside(value: SSAValue, op: Operation) -> bool:
    owner = value.owner
    defining = owner.parent_op() if isinstance(owner, Block) else owner
    return defining is None or not op.is_ancestor(defining)


class _ParallelLoop:
    def __init__(self, fl: LoopLowering, op: loop.ForOp):
        self.fl = fl
        self.op = op
        index = fl.module.parallel_count.get(fl.func.sym_name.data, 0)
        fl.module.parallel_count[fl.func.sym_name.data] = index + 1
        base = f"{fl.func.sym_name.data}_parallel{index}"
        self.worker_name = fl.module.unique_symbol(base)
        self.body_name = fl.module.unique_symbol(base + "_body")

    # --- what the body uses from outside ----------------------------------------------

    def captures(
        self,
    ) -> tuple[list[SSAValue], dict[SSAValue, int], list[SSAValue], dict[str, int]]:
        """(lowered values passed, source value -> argument index, source constants,
        call-state global read inside the loop -> argument index)."""
        passed: list[SSAValue] = []
        position: dict[SSAValue, int] = {}
        by_lowered: dict[SSAValue, int] = {}
        constants: list[SSAValue] = []
        state: dict[str, int] = {}
        for inner in self.op.walk():
            if inner is self.op:
                continue
            for name in self.call_state_read(inner):
                lowered = self.fl.state_args[name]
                if lowered not in by_lowered:
                    by_lowered[lowered] = len(passed)
                    passed.append(lowered)
                state[name] = by_lowered[lowered]
            for value in inner.operands:
                if value in position or value in constants or not _defined_outside(value, self.op):
                    continue
                lowered = self.fl.get(value)
                if isinstance(lowered.owner, llvm.ConstantOp):
                    constants.append(value)
                    continue
                if lowered not in by_lowered:
                    by_lowered[lowered] = len(passed)
                    passed.append(lowered)
                position[value] = by_lowered[lowered]
        return passed, position, constants, state

    def call_state_read(self, op: Operation) -> tuple[str, ...]:
        """The call state `op` reads: a `get_global` of it, or a call of a function using it."""
        module = self.fl.module
        if is_get_global(op) and get_global_name(op) in module.call_state:
            return (get_global_name(op),)
        if isinstance(op, func.CallOp):
            return module.state_of.get(op.callee.root_reference.data, ())
        return ()

    def pointer_attrs(self, passed: list[SSAValue], position: dict[SSAValue, int]) -> list[dict]:
        """`noalias`/`dereferenceable` of each pointer argument of the body."""
        attrs: list[dict[str, Attribute]] = [{} for _ in passed]
        fl = self.fl
        name = fl.func.sym_name.data
        entry_args = list(fl.func.body.blocks.first.args) if fl.func.body.blocks else []
        sources: dict[int, list[SSAValue]] = {}
        for value, i in position.items():
            sources.setdefault(i, []).append(value)
        for i, values in sources.items():
            if not isinstance(values[0].type, MemRefType):
                continue
            t = values[0].type
            nbytes = num_elements(t) * byte_size(t.get_element_type())
            attrs[i]["llvm.dereferenceable"] = IntegerAttr(nbytes, i64)
            value = values[0]
            distinct = False
            if len(values) == 1 and value in entry_args:
                k = entry_args.index(value)
                distinct = name != "main" and (name, k) not in fl.module.aliased_args
            elif len(values) == 1 and isinstance(value.owner, loop.AllocOp):
                distinct = True  # a fresh allocation of this function
            if distinct:
                attrs[i]["llvm.noalias"] = UnitAttr()
        return attrs

    # --- the pieces ---------------------------------------------------------------------

    def lower(self) -> None:
        fl, op = self.fl, self.op
        passed, position, constants, state = self.captures()
        types = [v.type for v in passed]
        arg_attrs = self.pointer_attrs(passed, position)
        self.build_body(types, position, constants, arg_attrs, state)
        layout, nbytes = _layout(types)
        self.build_worker(types, layout)

        n = op.extent
        fl.module.uses_threads = True
        requested = fl.emit1(
            llvm.LoadOp(fl.emit1(llvm.AddressOfOp(NUM_THREADS_GLOBAL, PTR)), i32, alignment=4)
        )
        extent = fl.const(min(n, 2**31 - 1), i32)  # the thread count is an i32
        fewer = fl.emit1(llvm.ICmpOp(requested, extent, _icmp("ult")))
        nthreads = fl.emit1(llvm.SelectOp(fewer, requested, extent))
        single = fl.emit1(llvm.ICmpOp(nthreads, fl.const(1, i32), _icmp("eq")))
        serial, threaded, join = fl.new_block(), fl.new_block(), fl.new_block()
        fl.emit(llvm.CondBrOp(single, serial, [], threaded, []))

        fl.place(serial)
        fl.emit(llvm.CallOp(self.body_name, *passed, fl.const(0), fl.const(n)))
        fl.emit(llvm.BrOp(join))

        fl.place(threaded)
        data = fl.in_entry(llvm.AllocaOp(fl.const(max(1, -(-nbytes // 8))), i64, 32)).results[0]
        for value, (offset, align) in zip(passed, layout):
            fl.emit(llvm.StoreOp(value, _slot(fl, data, offset), alignment=align))
        worker = fl.emit1(llvm.AddressOfOp(self.worker_name, PTR))
        flags = fl.const(0, i32)
        fl.call_external("GOMP_parallel", _GOMP_PARALLEL, [worker, data, nthreads, flags])
        fl.emit(llvm.BrOp(join))
        fl.place(join)

    def build_body(
        self,
        types: list[Attribute],
        position: dict[SSAValue, int],
        constants: list[SSAValue],
        arg_attrs: list[dict],
        state: dict[str, int],
    ) -> None:
        """`@<k>_parallel<i>_body(captured..., begin, end)`: iterations [begin, end)."""
        fl, op = self.fl, self.op
        body = type(fl)(fl.module, fl.func, llvm.LLVMFunctionType([*types, i64, i64], _VOID))
        body.in_parallel_region = True
        body.buffer_alignment = fl.buffer_alignment
        args = body.entry.args
        body.state_args = {name: args[i] for name, i in state.items()}
        for value, i in position.items():
            body.map(value, args[i])
        for value in constants:
            body.map(value, body.adopt_constant(fl.get(value)))
        lb, step = op.lb.value.data, op.step.value.data

        def iteration(t: SSAValue) -> None:
            iv = t
            if step != 1:
                iv = body.emit1(llvm.MulOp(iv, body.const(step), overflow=NSW))
            if lb != 0:
                iv = body.emit1(llvm.AddOp(iv, body.const(lb), overflow=NSW))
            body.map(op.induction_var, iv)
            body.lower_ops(op.body.block)

        body.emit_dynamic_loop(args[-2], args[-1], iteration)
        body.emit_frees()
        body.emit(llvm.ReturnOp(None))
        attrs = ArrayAttr([DictionaryAttr(a) for a in arg_attrs] + [DictionaryAttr({})] * 2)
        fl.module.add_function(
            llvm.FuncOp(
                self.body_name,
                body.ftype,
                linkage=llvm.LinkageAttr("internal"),
                body=body.finish(),
                other_props={"arg_attrs": attrs} if any(arg_attrs) else None,
                extra_attrs={OUTLINED_ATTR: UnitAttr()},
            )
        )

    def build_worker(self, types: list[Attribute], layout: list[tuple[int, int]]) -> None:
        """`@<k>_parallel<i>(data)`: this thread's chunk of the iterations."""
        fl, n = self.fl, self.op.extent
        w = type(fl)(fl.module, fl.func, _WORKER)
        w.in_parallel_region = True
        data = w.entry.args[0]
        values = [
            w.emit1(llvm.LoadOp(_slot(w, data, offset), t, alignment=align))
            for t, (offset, align) in zip(types, layout)
        ]
        tid = w.call_external("omp_get_thread_num", _OMP_QUERY, [])
        nth = w.call_external("omp_get_num_threads", _OMP_QUERY, [])
        tid, nth = w.emit1(llvm.SExtOp(tid, i64)), w.emit1(llvm.SExtOp(nth, i64))
        count = w.const(n)
        begin = w.emit1(llvm.SDivOp(w.emit1(llvm.MulOp(tid, count, overflow=NSW)), nth))
        next_tid = w.emit1(llvm.AddOp(tid, w.const(1), overflow=NSW))
        end = w.emit1(llvm.SDivOp(w.emit1(llvm.MulOp(next_tid, count, overflow=NSW)), nth))
        w.emit(llvm.CallOp(self.body_name, *values, begin, end))
        w.emit(llvm.ReturnOp(None))
        fl.module.add_function(
            llvm.FuncOp(
                self.worker_name,
                _WORKER,
                linkage=llvm.LinkageAttr("internal"),
                body=w.finish(),
                extra_attrs={OUTLINED_ATTR: UnitAttr()},
            )
        )


def _size_and_align(t: Attribute) -> tuple[int, int]:
    if isinstance(t, llvm.LLVMPointerType):
        return 8, 8
    size = byte_size(element_type(t))
    if isinstance(t, VectorType):
        size *= t.get_shape()[0]
    align = 1
    while align < size and align < 32:
        align *= 2
    return size, align


def _layout(types: list[Attribute]) -> tuple[list[tuple[int, int]], int]:
    """(byte offset, alignment) of each captured value in the argument block; its size."""
    layout, offset = [], 0
    for t in types:
        size, align = _size_and_align(t)
        offset = -(-offset // align) * align
        layout.append((offset, align))
        offset += size
    return layout, offset


def _slot(b, data: SSAValue, offset: int) -> SSAValue:
    if offset == 0:
        return data
    return b.emit1(llvm.GEPOp(data, [offset], i8, inbounds=True))


def num_threads_global() -> llvm.GlobalOp:
    """The definition of `xweave_num_threads` (0: libgomp's default until the runtime sets it)."""
    return llvm.GlobalOp(
        i32, NUM_THREADS_GLOBAL, "external", value=IntegerAttr(0, i32), alignment=4
    )


def is_outlined(op: Operation) -> bool:
    return isinstance(op, llvm.FuncOp) and OUTLINED_ATTR in op.attributes


__all__ = ["lower_parallel_for", "num_threads_global", "NUM_THREADS_GLOBAL", "is_outlined"]
