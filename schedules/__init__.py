"""Schedule templates: for every kernel, a pipeline of loop rewrites and its search space.

A template looks at a loop-stage kernel (its stages, loop names and extents), declares
the knobs a tuner may vary (split factors, what to vectorize/unroll/parallelize), and
turns a configuration of those knobs into a pipeline of loop passes — the same text
`xweave-opt -p` takes. `default_config` is the heuristic configuration an untuned build
uses (as TVM's fallback configurations are).

The `schedule-kernels` pass applies a schedule to every kernel of a module.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass, PassPipeline
from xdsl.utils.exceptions import PassFailedException

from xweave.schedules.analysis import KernelInfo, analyse
from xweave.schedules.templates import TEMPLATES, Template
from xweave.schedules.winograd import WinogradTransform

SPECIFIC: list[Template] = [WinogradTransform()]
"""Templates of particular kernels, tried before the general `TEMPLATES`."""


def template_for(info: KernelInfo) -> Template:
    """The first template that applies to the kernel (the generic ones come last)."""
    return next(t for t in SPECIFIC + TEMPLATES if t.applies(info))


def default_schedule(kernel: func.FuncOp) -> list[str]:
    """The default pipeline (one pass spec per step) for a loop-stage kernel."""
    info = analyse(kernel)
    if not info.stages:  # e.g. a rank-0 copy: nothing to schedule
        return []
    template = template_for(info)
    return template.pipeline(info, template.default_config(info))


def apply_steps(module: ModuleOp, steps: list[str], *, skip_illegal: bool) -> list[str]:
    """Apply pass specs one by one; returns the steps that were applied.

    With `skip_illegal`, a step the pass refuses (PassFailedException: e.g. a loop
    whose accesses cannot be vectorized) is skipped; the passes check legality, the
    template only proposes. Every schedule pass leaves the IR untouched when it
    refuses, so no snapshot is needed. Without `skip_illegal`, the refusal propagates.
    """
    from xweave.context import make_context
    from xweave.passes import get_all_passes

    ctx = make_context()
    applied = []
    for spec in steps:
        try:
            PassPipeline.parse_spec(get_all_passes(), spec).apply(ctx, module)
        except PassFailedException:
            if not skip_illegal:
                raise
            continue
        applied.append(spec)
    return applied


@dataclass(frozen=True)
class ScheduleKernelsPass(ModulePass):
    """Apply every kernel's default schedule (the untuned build), or with
    `tuning-records=FILE` the best recorded schedule of each kernel that has one."""

    name = "schedule-kernels"

    tuning_records: str | None = None

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        tuned = None
        if self.tuning_records:
            from xweave.autotune.dispatch import tuned_schedules

            tuned = tuned_schedules(self.tuning_records)
        for kernel in [f for f in op.ops if isinstance(f, func.FuncOp) and "xweave.kernel" in f.attributes]:
            steps = tuned.steps_for(kernel) if tuned is not None else None
            if steps is None:
                apply_steps(op, default_schedule(kernel), skip_illegal=True)
            else:
                assert tuned is not None
                tuned.report_refused(kernel, steps, apply_steps(op, steps, skip_illegal=True))
