"""Every pass by name: what `xweave-opt -p`, schedules and tuning records may name.

The rewrites of `passes/`, the conversions of `lowering/`, `schedule-kernels`, and the
passes of the accelerators (built-in ones by name, imported when first used). Each
getter imports its module only when the pass is used, as xDSL's own registry does, so
that `xweave-opt` starts fast: these function-local imports are lazy by design.
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.passes import ModulePass

from xweave import plugins
from xweave.accel.registry import ACCELERATORS
from xweave.passes import get_all_passes


def _convert_graph_to_te() -> type[ModulePass]:
    from xweave.lowering.graph_to_te import ConvertGraphToTePass

    return ConvertGraphToTePass


def _convert_te_to_loop() -> type[ModulePass]:
    from xweave.lowering.te_to_loop import ConvertTeToLoopPass

    return ConvertTeToLoopPass


def _convert_loop_to_llvm() -> type[ModulePass]:
    from xweave.lowering.loop_to_llvm import ConvertLoopToLLVMPass

    return ConvertLoopToLLVMPass


def _schedule_kernels() -> type[ModulePass]:
    from xweave.schedules import ScheduleKernelsPass

    return ScheduleKernelsPass


def _accelerator_pass(accelerator: str, name: str) -> type[ModulePass]:
    return next(cls for cls in ACCELERATORS.get(accelerator).passes if cls.name == name)


def all_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    """Every pass, keyed by its command-line name (in alphabetical order)."""
    found = dict(get_all_passes())
    found.update({
        "convert-graph-to-te": _convert_graph_to_te,
        "convert-loop-to-llvm": _convert_loop_to_llvm,
        "convert-te-to-loop": _convert_te_to_loop,
        "schedule-kernels": _schedule_kernels,
    })
    for accelerator, plugin in plugins.BUILTIN.items():
        for name in plugin.passes:
            found[name] = lambda a=accelerator, n=name: _accelerator_pass(a, n)
    for acc in ACCELERATORS.registered():
        for cls in acc.passes:
            found[cls.name] = lambda c=cls: c
    return dict(sorted(found.items()))
