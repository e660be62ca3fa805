"""plan-memory: static memory planning of the model's intermediate buffers.

After `convert-te-to-loop`, `@main` allocates one `loop.alloc` per intermediate tensor
and calls kernels in order. This pass gives each such buffer a lifetime (the top-level
ops of `@main`, in order, from its first use to its last), then packs all of them into
one byte arena, greedily by size: the largest buffer first, each at the lowest
offset (a multiple of `alignment`) where it overlaps no buffer alive at the same time.
Buffers whose lifetimes do not overlap share memory; every buffer a call uses is alive
at that call, so a kernel's inputs never alias its outputs.

```mlir
memref.global "private" @xweave_arena : memref<N x i8> = uninitialized  // one per module
func.func @main(...) {
  %arena = memref.get_global @xweave_arena : memref<Nxi8>
  %0 = loop.view %arena[0] : memref<Nxi8> to memref<1x64x56x56xf32>   // was loop.alloc
  ...
```

(xDSL prints `memref.global` in generic form.) The arena is an uninitialized, writable
global: call state, which `convert-loop-to-llvm` turns into an argument of @main (and
of the kernels that use it), so that each call brings its own and calls may run
concurrently; the runtime keeps a pool of them per loaded module. The module records `xweave.peak_memory_bytes` (the arena's size) and
`xweave.unplanned_memory_bytes` (what the buffers took separately).

A kernel's own temporaries (padded inputs, packed operands: top-level global
`loop.alloc`s of a kernel called only from @main's top level) join the arena too,
alive only at the calls of that kernel, so they share memory with every buffer not in
use there. Otherwise each call would `aligned_alloc` and `free` them: for buffers of
hundreds of KB glibc returns the pages to the system every time, and the next call
faults them in again (ResNet-50, 1 thread: about 13% of the run time).
Left alone: allocs nested in loops or branches, in other scopes than global, with a
layout, or reaching `func.return`; kernels called from anywhere else.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func, memref
from xdsl.dialects.builtin import (
    IntegerAttr,
    MemRefType,
    ModuleOp,
    NoneAttr,
    StringAttr,
    UnitAttr,
    i8,
    i64,
)
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.traits import SymbolTable
from xdsl.utils.exceptions import PassFailedException

from xweave.dialects import loop
from xweave.runtime.abi import ARENA
PEAK_ATTR = "xweave.peak_memory_bytes"
"""Module attribute: the arena's size in bytes."""
UNPLANNED_ATTR = "xweave.unplanned_memory_bytes"
"""Module attribute: the bytes the planned buffers would take, each on its own."""


@dataclass
class Buffer:
    """A buffer to place: its size, and the first and last op (index) that use it."""

    size: int
    first: int
    last: int
    alignment: int = 1
    offset: int = -1
    """Set by `plan_offsets`."""
    at: tuple[int, ...] = ()
    """A kernel temporary: alive only at these ops (the kernel's calls), not from
    `first` to `last`."""

    @property
    def spans(self) -> list[tuple[int, int]]:
        return [(i, i) for i in self.at] if self.at else [(self.first, self.last)]

    def alive_at(self, t: int) -> bool:
        return any(a <= t <= b for a, b in self.spans)

    def overlaps(self, other: Buffer) -> bool:
        """Both are alive at some op."""
        return any(a0 <= b1 and b0 <= a1 for a0, a1 in self.spans for b0, b1 in other.spans)


def _align_up(n: int, alignment: int) -> int:
    return -(-n // alignment) * alignment


def plan_offsets(buffers: Sequence[Buffer], alignment: int = 64) -> int:
    """Set every buffer's offset; return the arena size (a multiple of `alignment`).

    Greedy by size: biggest first (ties: earliest first use), each at the lowest
    aligned offset where it overlaps no already placed buffer alive at the same time.
    """
    placed: list[Buffer] = []
    arena = 0
    for buf in sorted(buffers, key=lambda b: (-b.size, b.first, b.last)):
        align = max(alignment, buf.alignment)
        size = _align_up(max(buf.size, 1), alignment)
        offset = 0
        for other in sorted((p for p in placed if p.overlaps(buf)), key=lambda p: p.offset):
            if offset + size <= other.offset:
                break  # fits in the gap before `other`
            end = other.offset + _align_up(max(other.size, 1), alignment)
            offset = max(offset, _align_up(end, align))
        buf.offset = offset
        placed.append(buf)
        arena = max(arena, offset + size)
    return arena


def live_peak(buffers: Sequence[Buffer]) -> int:
    """The most bytes alive at one op: no arena can be smaller."""
    points = {a for b in buffers for a, _ in b.spans}
    return max((sum(b.size for b in buffers if b.alive_at(t)) for t in points), default=0)


def _top_level_index(op: Operation, block: Block, index: dict[Operation, int]) -> int:
    """The position in `block` of the op of `block` that holds `op`."""
    while op.parent_block() is not block:
        parent = op.parent_op()
        assert parent is not None, "a use outside the function"
        op = parent
    return index[op]


def _lifetime(
    alloc: loop.AllocOp, block: Block, index: dict[Operation, int]
) -> tuple[int, int] | None:
    """First and last position that use the buffer (through aliases too), or None if
    it reaches a `func.return`."""
    positions: list[int] = []
    work: list[SSAValue] = [alloc.memref]
    while work:
        value = work.pop()
        for use in value.uses:
            user = use.operation
            if isinstance(user, func.ReturnOp):
                return None
            positions.append(_top_level_index(user, block, index))
            work.extend(r for r in user.results if isinstance(r.type, MemRefType))
    if not positions:
        return index[alloc], index[alloc]
    return min(positions), max(positions)


def _plannable(op: Operation) -> bool:
    if not isinstance(op, loop.AllocOp):
        return False
    t = op.memref.type
    assert isinstance(t, MemRefType)
    return (
        loop.scope_of(t) == loop.GLOBAL_SCOPE
        and isinstance(t.layout, NoneAttr)
        and all(d >= 0 for d in t.get_shape())
    )


def _buffer(alloc: loop.AllocOp, first: int, last: int, at: tuple[int, ...] = ()) -> Buffer:
    t = alloc.memref.type
    assert isinstance(t, MemRefType)
    own = alloc.alignment.value.data if alloc.alignment is not None else 1
    return Buffer(loop.buffer_bytes(t), first, last, alignment=own, at=at)


def _kernel_temporaries(
    function: func.FuncOp, module: ModuleOp, index: dict[Operation, int]
) -> list[tuple[loop.AllocOp, Buffer]]:
    """The plannable temporaries of the kernels `function` calls at its top level, each
    alive at the positions of its kernel's calls; kernels called from anywhere else
    keep theirs."""
    calls: dict[str, list[int]] = {}
    for op in module.walk():
        if isinstance(op, func.CallOp):
            callee = op.callee.root_reference.data
            calls.setdefault(callee, []).append(index.get(op, -1))
    found = []
    for name, positions in calls.items():
        kernel = SymbolTable.lookup_symbol(module, name)
        if (not isinstance(kernel, func.FuncOp) or kernel is function or kernel.is_declaration
                or -1 in positions):
            continue
        block = kernel.body.block
        own_index = {op: i for i, op in enumerate(block.ops)}
        for op in block.ops:
            if _plannable(op) and _lifetime(op, block, own_index) is not None:
                found.append((op, _buffer(op, min(positions), max(positions), tuple(positions))))
    return found


def plan_function(function: func.FuncOp, module: ModuleOp, alignment: int = 64) -> None:
    """Put the top-level global buffers of `function`, and the temporaries of the
    kernels it calls, into the module's arena."""
    block = function.body.block
    ops = list(block.ops)
    index = {op: i for i, op in enumerate(ops)}
    allocs: list[tuple[loop.AllocOp, Buffer]] = []
    for op in ops:
        if not _plannable(op):
            continue
        assert isinstance(op, loop.AllocOp)
        lifetime = _lifetime(op, block, index)
        if lifetime is None:
            continue
        allocs.append((op, _buffer(op, *lifetime)))
    allocs += _kernel_temporaries(function, module, index)
    if not allocs:
        if SymbolTable.lookup_symbol(module, ARENA) is None:
            _record(module, 0, 0)
        return
    if SymbolTable.lookup_symbol(module, ARENA) is not None:
        raise PassFailedException(
            f"plan-memory: the module already has a symbol @{ARENA}; it was planned "
            "before, and new buffers cannot be added to its arena"
        )

    buffers = [b for _, b in allocs]
    size = plan_offsets(buffers, alignment)
    arena_type = MemRefType(i8, [size])
    arena_global = memref.GlobalOp.get(
        StringAttr(ARENA), arena_type, UnitAttr(), alignment=IntegerAttr(alignment, i64)
    )
    Rewriter.insert_op(arena_global, InsertPoint.before(next(
        op for op in module.ops if isinstance(op, func.FuncOp))))
    arenas: dict[Block, memref.GetGlobalOp] = {}
    for alloc, buf in allocs:
        owner = alloc.parent_block()
        assert owner is not None
        if owner not in arenas:
            arenas[owner] = memref.GetGlobalOp(ARENA, arena_type)
            arenas[owner].memref.name_hint = "arena"
            Rewriter.insert_op(arenas[owner], InsertPoint.at_start(owner))
        view = loop.ViewOp(arenas[owner], buf.offset, alloc.memref.type)
        view.attributes.update(alloc.attributes)
        view.result.name_hint = alloc.memref.name_hint
        Rewriter.replace_op(alloc, view)
    _record(module, size, sum(b.size for b in buffers))


def _record(module: ModuleOp, peak: int, unplanned: int) -> None:
    module.attributes[PEAK_ATTR] = IntegerAttr(peak, i64)
    module.attributes[UNPLANNED_ATTR] = IntegerAttr(unplanned, i64)


@dataclass(frozen=True)
class PlanMemoryPass(ModulePass):
    """Share one arena among @main's intermediate buffers whose lifetimes do not overlap."""

    name = "plan-memory"

    function: str = "main"
    """The function whose buffers are planned (the model's entry point)."""
    alignment: int = 64
    """Every buffer starts at a multiple of this many bytes (a power of two)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.alignment <= 0 or self.alignment & (self.alignment - 1):
            raise PassFailedException(
                f"plan-memory: alignment must be a positive power of two, got {self.alignment}"
            )
        function = SymbolTable.lookup_symbol(op, self.function)
        if not isinstance(function, func.FuncOp) or function.is_declaration:
            return  # nothing to plan (e.g. a module of kernels only)
        if len(function.body.blocks) != 1:
            raise PassFailedException(
                f"plan-memory: @{self.function} must have a single block to be planned"
            )
        plan_function(function, op, self.alignment)
