"""Per-kernel profiling builds: `count-kernel-flops` and `profile-kernels`.

`profile-kernels` (after `plan-memory`, before `convert-loop-to-llvm`) wraps every call
of a kernel in `@main` between two reads of the monotonic clock and adds the elapsed
nanoseconds to that call's slot of a zero-initialized `i64` global:

```mlir
memref.global "private" @xweave_profile : memref<N x i64> = uninitialized
func.func @xweave_profile_clock() -> i64      // clock_gettime(CLOCK_MONOTONIC): ns
func.func @main(...) attributes {xweave.profile_kernels = ["conv_0", ...],
                                 xweave.profile_flops = [115605504, ...]} {
  %t0 = func.call @xweave_profile_clock() : () -> i64
  func.call @conv_0(...)
  %t1 = func.call @xweave_profile_clock() : () -> i64
  %dt = arith.subi %t1, %t0 : i64
  %slots = memref.get_global @xweave_profile : memref<Nxi64>
  %sum = arith.addi (loop.load %slots[i]), %dt : i64
  loop.store %sum, %slots[i] : memref<Nxi64>
```

The global is call state like the arena (an uninitialized, writable global, passed to
@main by `convert-loop-to-llvm`): each call counts in its own counters, which the
runtime zeroes before a profiled run and reads after (`xweave.runtime.profile`). Calls of functions that are not kernels, the kernels
themselves and every other function are left alone. A normal build never runs this pass.

`count-kernel-flops` (on the unscheduled loop stage, where loop nests are still the
plain te computations: no tiles, tails or guards) records each kernel's float
operations as the module attribute `xweave.kernel_flops = {kernel: count}`: every float
arithmetic op counted once per execution (times the vector lanes), an fma twice.
`profile-kernels` copies the counts of the wrapped kernels into `xweave.profile_flops`
(0: unknown), so the profile reports GFLOP/s.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, func, memref
from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    FunctionType,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    StringAttr,
    UnitAttr,
    VectorType,
    AnyFloat,
    i32,
    i64,
)
from xdsl.ir import Operation
from xdsl.ir.affine import AffineMap
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.traits import SymbolTable
from xdsl.utils.exceptions import PassFailedException

from xweave.dialects import loop
from xweave.runtime.abi import PROFILE_GLOBAL
CLOCK_FUNCTION = "xweave_profile_clock"
"""The function returning the monotonic clock in nanoseconds."""
KERNELS_ATTR = "xweave.profile_kernels"
"""@main attribute: the callee of each counter slot, in call order."""
FLOPS_ATTR = "xweave.profile_flops"
"""@main attribute: the float ops of each slot's kernel (0: unknown)."""
KERNEL_FLOPS_ATTR = "xweave.kernel_flops"
"""Module attribute written by `count-kernel-flops`: {kernel name: float ops}."""

_CLOCK_MONOTONIC = 1  # Linux


# ----------------------------------------------------------------------------------
# count-kernel-flops
# ----------------------------------------------------------------------------------


def _float_ops(op: Operation) -> int:
    """Float operations done by one execution of `op` (0 for non-float ops)."""
    if not op.results or op.dialect_name() not in ("arith", "math", "vector"):
        return 0
    t = op.results[0].type
    element = t.get_element_type() if isinstance(t, VectorType) else t
    if not isinstance(element, AnyFloat):
        return 0
    if op.name in ("arith.constant", "arith.select", "vector.broadcast", "vector.load",
                   "vector.extract", "vector.insert", "vector.splat", "vector.shuffle") \
            or "cast" in op.name or op.name.startswith(("arith.ext", "arith.trunc")):
        return 0
    lanes = math.prod(t.get_shape()) if isinstance(t, VectorType) else 1
    per_lane = 2 if op.name in ("math.fma", "vector.fma") else 1
    return lanes * per_lane


def kernel_flops(kernel: func.FuncOp) -> int:
    """Float operations of one call of `kernel`: each op times its loops' trip counts."""
    total = 0
    for op in kernel.walk():
        count = _float_ops(op)
        if not count:
            continue
        parent = op.parent_op()
        while parent is not None and parent is not kernel:
            if isinstance(parent, loop.ForOp):
                count *= parent.extent
            parent = parent.parent_op()
        total += count
    return total


def _kernels(module: ModuleOp) -> dict[str, func.FuncOp]:
    return {
        f.sym_name.data: f
        for f in module.ops
        if loop.is_kernel(f)
    }


@dataclass(frozen=True)
class CountKernelFlopsPass(ModulePass):
    """Record each kernel's float operations as the module attribute
    `xweave.kernel_flops` (run on unscheduled kernels; used by profiling builds)."""

    name = "count-kernel-flops"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        counts = {name: kernel_flops(k) for name, k in _kernels(op).items()}
        op.attributes[KERNEL_FLOPS_ATTR] = DictionaryAttr(
            {name: IntegerAttr(n, i64) for name, n in counts.items() if n}
        )


# ----------------------------------------------------------------------------------
# profile-kernels
# ----------------------------------------------------------------------------------


def _clock_functions() -> list[func.FuncOp]:
    """`clock_gettime` (declared) and `@xweave_profile_clock() -> i64` (ns) around it."""
    # struct timespec {time_t tv_sec; long tv_nsec}, on the stack
    timespec = MemRefType(i64, [2], memory_space=loop.LOCAL_SCOPE)
    declaration = func.FuncOp.external("clock_gettime", [i32, timespec], [i32])
    clock = func.FuncOp(CLOCK_FUNCTION, FunctionType.from_lists([], [i64]))
    block = clock.body.block
    ts = loop.AllocOp(timespec)
    ts.memref.name_hint = "ts"
    which = arith.ConstantOp(IntegerAttr(_CLOCK_MONOTONIC, i32))
    call = func.CallOp("clock_gettime", [which, ts], [i32])
    seconds = loop.LoadOp(ts, [], _constant_map(0))
    nanos = loop.LoadOp(ts, [], _constant_map(1))
    scale = arith.ConstantOp(IntegerAttr(1_000_000_000, i64))
    product = arith.MuliOp(seconds, scale)
    total = arith.AddiOp(product, nanos)
    block.add_ops([ts, which, call, seconds, nanos, scale, product, total,
                   func.ReturnOp(total)])
    return [declaration, clock]


def _constant_map(index: int) -> AffineMap:
    return AffineMap.constant_map(index)


@dataclass(frozen=True)
class ProfileKernelsPass(ModulePass):
    """Wrap each kernel call of @main in reads of the monotonic clock, accumulating the
    nanoseconds per call into the global `@xweave_profile` (profiling builds only)."""

    name = "profile-kernels"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for symbol in (PROFILE_GLOBAL, CLOCK_FUNCTION):
            if SymbolTable.lookup_symbol(op, symbol) is not None:
                raise PassFailedException(
                    f"profile-kernels: the module already has a symbol @{symbol}; "
                    "it was instrumented before"
                )
        main = SymbolTable.lookup_symbol(op, "main")
        if not isinstance(main, func.FuncOp) or main.is_declaration:
            raise PassFailedException("profile-kernels: the module has no @main function")
        kernels = _kernels(op)
        calls = [
            c for c in main.walk()
            if isinstance(c, func.CallOp) and c.callee.root_reference.data in kernels
        ]
        flops_attr = op.attributes.get(KERNEL_FLOPS_ATTR)
        known = flops_attr.data if isinstance(flops_attr, DictionaryAttr) else {}
        names = [c.callee.root_reference.data for c in calls]
        flops = [known[n].value.data if isinstance(known.get(n), IntegerAttr) else 0
                 for n in names]
        main.attributes[KERNELS_ATTR] = ArrayAttr([StringAttr(n) for n in names])
        main.attributes[FLOPS_ATTR] = ArrayAttr([IntegerAttr(f, i64) for f in flops])
        if not calls:
            return

        slots_type = MemRefType(i64, [len(calls)])
        first_function = next(o for o in op.ops if isinstance(o, func.FuncOp))
        Rewriter.insert_op(
            [memref.GlobalOp.get(StringAttr(PROFILE_GLOBAL), slots_type, UnitAttr(),
                                 alignment=IntegerAttr(64, i64)),
             *_clock_functions()],
            InsertPoint.before(first_function),
        )
        for slot, call in enumerate(calls):
            start = func.CallOp(CLOCK_FUNCTION, [], [i64])
            start.results[0].name_hint = "t0"
            Rewriter.insert_op(start, InsertPoint.before(call))
            end = func.CallOp(CLOCK_FUNCTION, [], [i64])
            end.results[0].name_hint = "t1"
            elapsed = arith.SubiOp(end, start)
            elapsed.result.name_hint = "dt"
            slots = memref.GetGlobalOp(PROFILE_GLOBAL, slots_type)
            slots.memref.name_hint = "slots"
            before = loop.LoadOp(slots, [], _constant_map(slot))
            after = arith.AddiOp(before, elapsed)
            store = loop.StoreOp(after, slots, [], _constant_map(slot))
            Rewriter.insert_op([end, elapsed, slots, before, after, store],
                               InsertPoint.after(call))
