"""Schedule templates: for every kernel, a pipeline of loop rewrites and its search space.

A template looks at a loop-stage kernel (its stages, loop names and extents), declares
the knobs a tuner may vary (split factors, what to vectorize/unroll/parallelize), and
turns a configuration of those knobs into a pipeline of loop passes — the same text
`xweave-opt -p` takes. `default_config` is the heuristic configuration an untuned build
uses (as TVM's fallback configurations are).

The `schedule-kernels` pass applies a schedule to every kernel of a module.
"""

from __future__ import annotations

import functools
import logging
import warnings
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass, PassPipeline
from xdsl.utils.exceptions import PassFailedException

from xweave import timing
from xweave.parallel import map_kernels
from xweave.context import make_context
from xweave.dialects import loop
from xweave.errors import XweaveError
from xweave.log import NOTE
from xweave.passes import get_all_passes
from xweave.schedules.analysis import KernelInfo, analyse
from xweave.schedules.integer import IntegerDot
from xweave.schedules.templates import TEMPLATES, Template
from xweave.schedules.tuned import tuned_schedules
from xweave.schedules.winograd import WinogradTransform
from xweave.schedules.workload import kernel_key
from xweave.target import target_of

logger = logging.getLogger(__name__)

SPECIFIC: list[Template] = [WinogradTransform(), IntegerDot()]
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


class ScheduleStepError(Exception):
    """A schedule step failed unexpectedly (not a refusal) on a kernel: which one, and
    the step, so that a crash report can name them (`__cause__` is the error)."""

    def __init__(self, kernel: str, step: str, error: BaseException):
        super().__init__(f"{type(error).__name__}: {error}")
        self.kernel = kernel
        self.step = step

    def __reduce__(self):  # it crosses process boundaries (the tuner's build workers)
        return _step_error, (self.kernel, self.step, str(self))


def _step_error(kernel: str, step: str, message: str) -> ScheduleStepError:
    error = ScheduleStepError(kernel, step, RuntimeError())
    error.args = (message,)
    return error


@functools.lru_cache(maxsize=4096)
def _step_pipeline(spec: str) -> PassPipeline:
    """The pipeline of one step (parsed once: pass objects are immutable)."""
    return PassPipeline.parse_spec(get_all_passes(), spec)


def apply_steps(module: ModuleOp, steps: list[str], *, skip_illegal: bool,
                kernel: str = "") -> list[str]:
    """Apply pass specs one by one; returns the steps that were applied.

    With `skip_illegal`, a step the pass refuses (PassFailedException: e.g. a loop
    whose accesses cannot be vectorized) is skipped; the passes check legality, the
    template only proposes. Every schedule pass leaves the IR untouched when it
    refuses, so no snapshot is needed. Without `skip_illegal`, the refusal propagates.
    Any other failure (a bug) raises `ScheduleStepError` naming `kernel` and the step.
    """
    ctx = make_context()
    applied = []
    for spec in steps:
        try:
            with timing.scope(spec.split("{", 1)[0]):
                _step_pipeline(spec).apply(ctx, module)
        except PassFailedException:
            if not skip_illegal:
                raise
            continue
        except XweaveError:
            raise
        except Exception as e:
            raise ScheduleStepError(kernel, spec, e) from e
        applied.append(spec)
    return applied


PARALLEL_MIN_KERNELS = 8
"""Modules with fewer kernels are scheduled in this process: forking workers costs
more than a few small kernels take."""


def schedule_kernel(kernel: func.FuncOp, steps: list[str] | None) -> list[str]:
    """Apply `steps` (None: the kernel's default schedule) to `kernel`, in place, in a
    module of its own; returns the steps applied (`apply_steps`)."""
    name = kernel.sym_name.data
    module = kernel.parent_op()
    assert isinstance(module, ModuleOp)
    if steps is None:
        try:
            steps = default_schedule(kernel)
        except XweaveError:
            raise
        except Exception as e:
            raise ScheduleStepError(name, "(choosing the schedule)", e) from e
    with timing.scope("kernels"):  # (the count of distinct kernels, and their total)
        return apply_steps(module, steps, skip_illegal=True, kernel=name)


def _cost(kernel: func.FuncOp) -> int:
    """What scheduling `kernel` is likely to take, to start the largest first."""
    return sum(1 for _ in kernel.walk())


@dataclass(frozen=True)
class ScheduleKernelsPass(ModulePass):
    """Apply every kernel's default schedule (the untuned build), or with
    `tuning-records=FILE` the best recorded schedule of each kernel that has one for
    the module's target (`any-target=true`: of any target, if it has none for this
    one). Kernels whose records are all for other targets keep their default schedule,
    with a warning naming them."""

    name = "schedule-kernels"

    tuning_records: str | None = None
    any_target: bool = False

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        tuned = None
        if self.tuning_records:
            tuned = tuned_schedules(self.tuning_records, target_of(op), self.any_target)
        skipped = {}
        n_tuned = 0
        kernels = [f for f in op.ops if loop.is_kernel(f)]
        chosen: list[list[str] | None] = []  # None: the default schedule
        for kernel in kernels:
            name = kernel.sym_name.data
            try:
                steps = tuned.steps_for(kernel) if tuned is not None else None
                if tuned is not None:
                    n_tuned += steps is not None
                    logger.info("%s (%s): %s", name, kernel_key(kernel).split("#")[0],
                                "tuned schedule" if steps is not None else
                                "default schedule (" + tuned.why_default(kernel) + ")")
            except XweaveError:
                raise
            except Exception as e:
                raise ScheduleStepError(name, "(choosing the schedule)", e) from e
            if tuned is not None and name in tuned.skipped:
                skipped[name] = tuned.skipped[name]
            chosen.append(steps)
        names = [k.sym_name.data for k in kernels]
        steps_of = dict(zip(names, chosen))
        jobs = None if len(kernels) >= PARALLEL_MIN_KERNELS else 1
        applied = map_kernels(kernels, lambda k: schedule_kernel(k, steps_of[k.sym_name.data]),
                              jobs=jobs, cost=_cost)
        if tuned is not None:
            for name, steps, done in zip(names, chosen, applied):
                if steps is not None:
                    tuned.report_refused(name, steps, done)
        if tuned is not None:
            logger.log(NOTE, "%s: %d of %d kernels tuned",
                       self.tuning_records, n_tuned, len(kernels))
        if skipped:
            targets = sorted(set(skipped.values()))
            warnings.warn(
                f"{self.tuning_records}: {len(skipped)} kernel(s) keep their default schedule: "
                f"their records are for {' / '.join(repr(t) for t in targets)}, not "
                f"'{target_of(op).resolve()}' ({', '.join(sorted(skipped))}); "
                "any_target_records=True (--any-target-records) applies them",
                RuntimeWarning, stacklevel=2)
