"""Kernels: the `func.func`s marked `xweave.kernel` (from the te stage on)."""

from __future__ import annotations

from xdsl.dialects import func
from xdsl.dialects.builtin import UnitAttr
from xdsl.ir import Operation


KERNEL_ATTR = "xweave.kernel"
"""The unit attribute that marks a `func.func` as a kernel (from the te stage on)."""


def is_kernel(op: Operation) -> bool:
    """Whether `op` is a kernel: a `func.func` marked `xweave.kernel`."""
    return isinstance(op, func.FuncOp) and KERNEL_ATTR in op.attributes


def mark_kernel(function: func.FuncOp) -> None:
    """Mark `function` as a kernel."""
    function.attributes[KERNEL_ATTR] = UnitAttr()
