"""What a loop kind's lowering sees of the function (and module) being lowered.

`loop_to_llvm.FOR_LOWERINGS` maps every loop kind to a function `(LoopLowering,
loop.ForOp) -> None` (`ForLowering`): `llvm_loops` lowers serial loops, `llvm_parallel`
outlines parallel ones. They build blocks through this interface, which
`loop_to_llvm.FunctionLowering` implements; it is defined here, below all three, so
that the loop kinds never import the pass that calls them.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Protocol

from xdsl.dialects import func, llvm
from xdsl.ir import Block, Operation, SSAValue

from xweave.dialects import loop
from xweave.lowering.llvm_addressing import AddressBuilder


class ModuleLowering(Protocol):
    """The module being lowered, as a loop kind's lowering uses it."""

    parallel_count: dict[str, int]
    """Parallel loops outlined so far, per function (to name the next one)."""
    aliased_args: set[tuple[str, int]]
    """(function, argument) pairs some call passes a buffer also passed elsewhere."""
    uses_threads: bool
    """Whether some function reads the thread-count global (then defined)."""

    def unique_symbol(self, base: str) -> str:
        """`base`, or `base` with a suffix, unused in the module."""
        ...

    def add_function(self, op: llvm.FuncOp) -> None:
        """Add a function built while lowering another (an outlined loop body)."""
        ...


class LoopLowering(AddressBuilder, ABC):
    """A function being lowered, as a loop kind's lowering uses it: the builder
    (`emit`, `const`, `new_block`, `place`, `map`, `get`, ...) and what follows."""

    module: ModuleLowering
    func: func.FuncOp
    """The function being lowered."""
    ftype: llvm.LLVMFunctionType
    state_args: dict[str, SSAValue]
    """Call-state global -> the argument holding this call's copy."""
    in_parallel_region: bool
    """Building the body of a parallel loop: nested parallel loops run serially."""

    @abstractmethod
    def lower_ops(self, block: Block) -> Operation | None:
        """Lower every op of `block`; return its structured terminator, not lowered."""

    @abstractmethod
    def emit_counted_loop(self, lb: int, ub: int, step: int, body: Callable[[SSAValue], None],
                          llvm_unroll: bool = True) -> None:
        """`for iv in range(lb, ub, step): body(iv)` with constant bounds."""

    @abstractmethod
    def emit_dynamic_loop(self, begin: SSAValue, end: SSAValue,
                          body: Callable[[SSAValue], None]) -> None:
        """`for t in range(begin, end): body(t)` with bounds known at run time only."""

    @abstractmethod
    def emit_frees(self) -> None:
        """Free the heap buffers of the function (before a return)."""

    @abstractmethod
    def adopt_constant(self, lowered: SSAValue) -> SSAValue:
        """A copy, in this function's prologue, of a constant of another function."""


ForLowering = Callable[[LoopLowering, loop.ForOp], None]
"""The lowering of one loop kind."""
