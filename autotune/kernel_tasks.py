"""Tuning tasks from the schedule templates, and the tasks of a whole model.

A `ScheduleTask` tunes one loop-stage kernel (a `func.func` with `xweave.kernel`, not
yet scheduled) over the knobs its schedule template declares: `Template.knobs(info)`
is a dict of named candidate lists and a point picks one value of each. Its schedule
is `template.pipeline(info, config)`, applied step by step exactly as the untuned
build applies `default_config` (a step the pass refuses is skipped); the schedule
text stored in records is the list of steps that applied, so it replays with
`xweave-opt -p` on the loop stage of the model.

```python
tasks = extract_tasks("model.onnx")          # reductions first, by weight x flops
result = tune(tasks[0], tuner="lgbm", trials=64, records_path="model.jsonl",
              initial_points=[tasks[0].default_point()])
```

Tasks cross process boundaries as their kernel's IR text (compressed) and workload
key, and re-parse the kernel once per process. The *workload key* names the kernel
(its graph op), its argument types and a digest of its loop IR, e.g.
`conv2d(1x8x8x8xf32, 8x8x3x3xf32 -> 1x8x8x8xf32)#5d41402abc4b`: equal convolutions
share a kernel (and a key) within a model and across models.

Reference results: the unscheduled kernel, run by the loop interpreter when it is
tiny and otherwise compiled as it is (naive loops) — what the schedule must preserve.
"""

from __future__ import annotations

import base64
import math
import zlib
from collections.abc import Hashable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp

from xweave.autotune.space import Point, Space
from xweave.autotune.task import (
    InstantiationError,
    JitCandidate,
    KernelTask,
    _dtype_of,
    register_template,
)

if TYPE_CHECKING:
    from xweave.pipeline import CompileOptions

# As in `task`, the compiler is imported inside the functions that use it, by design:
# measurement workers import this module to unpickle tasks and run none of it.

INTERPRETER_LIMIT = 2048
"""Kernels with at most this many loop-body iterations get their reference from the
loop interpreter (about 4,000 iterations a second); bigger ones from a naive build."""


# ----------------------------------------------------------------------------------
# Kernels as task arguments
# ----------------------------------------------------------------------------------


def _pack(text: str) -> str:
    return base64.b64encode(zlib.compress(text.encode(), 9)).decode()


def _unpack(data: str) -> str:
    return zlib.decompress(base64.b64decode(data)).decode()


def _freeze(value: Any) -> Hashable:
    if isinstance(value, (list, tuple)):
        return tuple(_freeze(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((k, _freeze(v)) for k, v in value.items()))
    return value


# ----------------------------------------------------------------------------------
# The task
# ----------------------------------------------------------------------------------


@register_template("schedule")
class ScheduleTask(KernelTask):
    """One loop-stage kernel, tuned over its schedule template's knobs.

    Build with `ScheduleTask.from_kernel(kernel)`; `args` are the compressed kernel
    text (`ir`), the workload key (`key`) and the arguments the model passes as
    constants (`constants`: weights, whose packing the model does at compile time, so
    a candidate receives them packed and is timed without it). `weight` is how many
    times the model calls the kernel (not part of the workload).
    """

    def __init__(self, ir: str, key: str, constants: Sequence[int] = ()):
        super().__init__(ir=ir, key=key, constants=sorted(constants))
        self.weight = 1

    @classmethod
    def from_kernel(cls, kernel: func.FuncOp, weight: int = 1,
                    constants: Sequence[int] = (), key: str | None = None) -> ScheduleTask:
        """The task of `kernel` (`key`: its `kernel_key`, if known already)."""
        from xweave.schedules.workload import kernel_key, kernel_module, module_text  # lazy: see the note above
        from xweave.target import target_of

        # The key leaves the target out (the same kernel tuned for two targets is one
        # workload, its records told apart by their `target`); the task's module has it.
        module = kernel_module(kernel, target=target_of(kernel))
        task = cls(_pack(module_text(module)), key or kernel_key(kernel), constants)
        task.weight = weight
        task._cache["base"] = module  # what parsing its text gives, without parsing it
        return task

    @property
    def target(self) -> str:
        """The resolved target the kernel is compiled for (its module's `xweave.target`)."""
        if "target" not in self._cache:
            from xweave.target import target_of  # lazy: see the note above

            self._cache["target"] = str(target_of(self.base_module()).resolve())
        return self._cache["target"]

    @property
    def workload_key(self) -> str:
        return self.args["key"]

    # --- the kernel, parsed once per process -----------------------------------------

    def base_module(self) -> ModuleOp:
        if "base" not in self._cache:
            from xweave.context import parse_module  # lazy: see the note above

            self._cache["base"] = parse_module(_unpack(self.args["ir"]), self.workload_key)
        return self._cache["base"]

    @property
    def base_kernel(self) -> func.FuncOp:
        return self.kernel(self.base_module())

    @property
    def kernel_name(self) -> str:
        return self.base_kernel.sym_name.data

    @property
    def info(self):
        """The template's view of the kernel (`schedules.analysis.KernelInfo`)."""
        if "info" not in self._cache:
            from xweave.schedules import analyse  # lazy: see the note above

            self._cache["info"] = analyse(self.base_kernel)
        return self._cache["info"]

    @property
    def schedule_template(self):
        """The schedule template of the kernel (`schedules.template_for`)."""
        if "template" not in self._cache:
            from xweave.schedules import template_for  # lazy: see the note above

            self._cache["template"] = template_for(self.info)
        return self._cache["template"]

    @property
    def knobs(self) -> dict[str, list]:
        """The template's declared space (knob name -> candidate values)."""
        if "knobs" not in self._cache:
            self._cache["knobs"] = {k: list(v) for k, v in self.schedule_template.knobs(self.info).items()}
        return self._cache["knobs"]

    @property
    def num_outputs(self) -> int:  # type: ignore[override]
        from xweave.schedules.workload import num_outputs  # lazy: see the note above

        return num_outputs(self.base_kernel)

    @property
    def flops(self) -> float:  # type: ignore[override]
        """2 x the iterations of every reduction (a multiply-add each), else the float
        ops of the loop body."""
        if "flops" not in self._cache:
            reductions = [s for s in self.info.stages if s.is_reduction]
            if reductions:
                flops = sum(2.0 * s.work for s in reductions)
            else:
                from xweave.autotune.features import analyze  # lazy: see the note above

                flops = analyze(self.base_kernel).flops
            self._cache["flops"] = float(flops) or float(
                sum(s.work for s in self.info.stages) or 1)
        return self._cache["flops"]

    @property
    def moves_data(self) -> bool:
        """A kernel without arithmetic (a pack, unpack, transpose, pad): its speed is
        bytes moved per second, not FLOP/s (`flops` then counts iterations, which only
        the tuner's ranking uses)."""
        if "moves_data" not in self._cache:
            from xweave.autotune.features import analyze  # lazy: see the note above

            self._cache["moves_data"] = not self.is_reduction and \
                analyze(self.base_kernel).flops == 0
        return self._cache["moves_data"]

    @property
    def bytes_moved(self) -> int:
        """Bytes of every input read once and every output written once."""
        return sum(math.prod(shape) * np.dtype(dtype).itemsize
                   for shape, dtype in self.input_specs() + self.output_specs())

    @property
    def is_reduction(self) -> bool:
        return any(s.is_reduction for s in self.info.stages)

    # --- the space and the schedule --------------------------------------------------

    def define_space(self) -> Space:
        space = Space()
        for name, values in self.knobs.items():
            space.knob(name, [_freeze(v) for v in values])
        template, info, knobs = self.schedule_template, self.info, self.knobs
        space.constrain(lambda c: template.valid(
            info, {name: knobs[name][space[name].index(v)] for name, v in c.items()}))
        return space

    def config(self, point: Point) -> dict:
        """The template configuration of `point` (the template's own values)."""
        self.space.check_point(point)
        return {name: self.knobs[name][i] for name, i in zip(self.knobs, point)}

    def default_point(self) -> Point | None:
        """The point of the template's `default_config` (the untuned build), if the
        default is one of the declared candidates."""
        default = self.schedule_template.default_config(self.info)
        try:
            return self.space.point_of({k: _freeze(default[k]) for k in self.knobs})
        except (KeyError, ValueError):
            return None

    def proposed_steps(self, point: Point) -> list[str]:
        """The template's pipeline for `point` (before the passes judge legality)."""
        return list(self.schedule_template.pipeline(self.info, self.config(point)))

    def schedule(self, point: Point) -> str:
        """The steps of the pipeline that apply, comma-separated (`xweave-opt -p`)."""
        point = tuple(point)
        applied = self._cache.setdefault("applied", {})
        if point not in applied:
            self.loop_ir(point)
        return ",".join(applied[point])

    def loop_ir(self, point: Point) -> ModuleOp:
        from xweave.schedules import apply_steps  # lazy: see the note above

        point = tuple(point)
        module = self.base_module().clone()
        try:
            steps = self.proposed_steps(point)
        except (KeyError, ValueError) as e:
            raise InstantiationError(f"{self.schedule_template.name}: no pipeline for "
                                     f"{self.config(point)}: {e}") from e
        applied = apply_steps(module, steps, skip_illegal=True)
        cache = self._cache.setdefault("applied", {})
        if len(cache) > 4096:
            cache.clear()
        cache[point] = applied
        if self.args.get("constants"):
            from xweave.passes.loop_fold_packs import receive_packed_arguments  # lazy

            prepacked = receive_packed_arguments(self.kernel(module), set(self.args["constants"]))
            self._cache.setdefault("prepacked", {})[point] = prepacked
        return module

    # --- building and checking -------------------------------------------------------

    def prepare(self) -> None:
        super().prepare()
        self.base_module()

    def build(self, point: Point) -> JitCandidate:
        candidate = super().build(point)
        candidate.prepacked = self._cache.get("prepacked", {}).get(tuple(point), [])
        candidate.schedule = self.schedule(point)
        # A reordered sum of R products rounds differently: allow ~R ulps of slack.
        candidate.rtol = 1e-3
        candidate.atol = max(1e-4, 1e-6 * self._reduction_size())
        return candidate

    def _reduction_size(self) -> int:
        return max([math.prod(e for _, e in s.reduce) for s in self.info.stages
                    if s.is_reduction] or [1])

    def input_specs(self) -> list[tuple[tuple[int, ...], str]]:
        types = self.base_kernel.function_type.inputs.data
        return [(tuple(t.get_shape()), _dtype_of(t.get_element_type()))
                for t in types[: len(types) - self.num_outputs]]

    def output_specs(self) -> list[tuple[tuple[int, ...], str]]:
        types = self.base_kernel.function_type.inputs.data
        return [(tuple(t.get_shape()), _dtype_of(t.get_element_type()))
                for t in types[len(types) - self.num_outputs:]]

    def reference(self, inputs: list[np.ndarray]) -> list[np.ndarray]:
        """The outputs of the unscheduled kernel."""
        from xweave.dialects.interpreters import interpret  # lazy: see the note above
        from xweave.pipeline import compile_kernel
        from xweave.runtime.kernel import LoadedKernel

        outputs = [np.zeros(s, d) for s, d in self.output_specs()]
        iterations = sum(s.work for s in self.info.stages)
        if iterations <= INTERPRETER_LIMIT:
            interpret(self.base_module().clone(), [*inputs, *outputs], entry=self.kernel_name)
            return outputs
        arrays = [np.asarray(a, order="C") for a in inputs] + outputs
        compiled = compile_kernel(self.base_module().clone(), self.kernel_name)
        LoadedKernel(compiled.compiled.object_bytes, self.kernel_name, len(arrays),
                     compiled.params, compiled.arena_bytes)(*[a.ctypes.data for a in arrays])
        return outputs

    def __repr__(self) -> str:
        return f"<ScheduleTask {self.workload_key} x{self.weight}>"


# ----------------------------------------------------------------------------------
# A model's tasks
# ----------------------------------------------------------------------------------


def loop_stage(model, input_shapes: dict[str, tuple[int, ...]] | None = None,
               options: CompileOptions | None = None) -> ModuleOp:
    """The model lowered to the loop stage (unscheduled kernels), as `xweave.build` with
    `options` lowers it (their target, default: the default target; their fuse,
    layout and winograd choices)."""
    from xweave.compiling import load_model  # lazy: see the note above
    from xweave.pipeline import CompileOptions, lower
    from xweave.target import as_target

    options = options or CompileOptions()
    if options.target is None:
        options = options.replace(target=as_target(None))
    return lower(load_model(model, input_shapes), options, until="loop")


def constant_arguments(module: ModuleOp) -> dict[str, set[int]]:
    """Kernel name -> the argument indices every call of it passes a constant for
    (a `loop.get_global` of a global with a value)."""
    from xweave.dialects import loop  # lazy: see the note above

    valued = {g.sym_name.data for g in module.ops
              if isinstance(g, loop.GlobalOp) and g.initial_value is not None}
    found: dict[str, set[int]] = {}
    for op in module.walk():
        if isinstance(op, func.CallOp):
            here = {i for i, v in enumerate(op.arguments)
                    if isinstance(v.owner, loop.GetGlobalOp)
                    and v.owner.global_name.root_reference.data in valued}
            name = op.callee.root_reference.data
            found[name] = found[name] & here if name in found else here
    return found


def model_kernels(module: ModuleOp) -> list[tuple[func.FuncOp, int]]:
    """The kernels of a loop-stage module and how many times each is called."""
    calls: dict[str, int] = {}
    for op in module.walk():
        if isinstance(op, func.CallOp):
            callee = op.callee.root_reference.data
            calls[callee] = calls.get(callee, 0) + 1
    return [(f, calls.get(f.sym_name.data, 0)) for f in module.ops
            if isinstance(f, func.FuncOp) and "xweave.kernel" in f.attributes]


def extract_tasks(model, input_shapes: dict[str, tuple[int, ...]] | None = None,
                  module: ModuleOp | None = None,
                  options: CompileOptions | None = None) -> list[ScheduleTask]:
    """A tuning task for every kernel of `model` whose template has a choice to make,
    as `xweave.build` with `options` compiles it (`loop_stage`: for their target,
    default the default target, which each task's module records; with their fuse,
    layout and winograd choices, so the kernels tuned are the kernels built).

    `model`: an ONNX path or `ModelProto`, a graph-stage `.mlir`, or a graph module
    (or pass the loop-stage `module`). Kernels with the same workload key are one task
    (their call counts add up in `weight`). Reductions come first, then by
    `weight x flops`, most expensive first.
    """
    from xweave.schedules import analyse  # lazy: see the note above
    from xweave.schedules.workload import kernel_key

    if module is None:
        module = loop_stage(model, input_shapes, options)
    tasks: dict[str, ScheduleTask] = {}
    constants = constant_arguments(module)
    for kernel, calls in model_kernels(module):
        info = analyse(kernel)
        if not info.stages:
            continue
        key = kernel_key(kernel)
        if key in tasks:
            tasks[key].weight += max(calls, 1)
            continue
        task = ScheduleTask.from_kernel(kernel, max(calls, 1),
                                        constants.get(kernel.sym_name.data, ()), key)
        if task.space.size > 1:
            tasks[key] = task
    return sorted(tasks.values(), key=lambda t: (not t.is_reduction, -t.weight * t.flops))


__all__ = [
    "ScheduleTask",
    "extract_tasks",
    "loop_stage",
    "model_kernels",
]
