"""Tuning tasks: what is tuned (a workload and its search space) and how a point is built.

The tuner only talks to a task through the `Task` protocol:

* `workload_key: str` — the op and its shapes, e.g. `dense(M=64, N=64, K=64)`; records
  and transfer learning group measurements by it;
* `space: Space` — the knobs;
* `flops: float` — floating-point operations of one run (GFLOP/s = flops / seconds / 1e9);
* `schedule(point) -> str` — the schedule as pass-pipeline text, e.g.
  `loop-split{loop=dense.j factor=16},loop-vectorize{loop=dense.j.inner}`; it is
  written to the records;
* `build(point) -> Candidate` — compile the point into something a runner can time
  (raise `InstantiationError` for an invalid config);
* `reference(inputs) -> outputs` — the numpy ground truth a candidate's first run is
  checked against;
* optionally `features(point) -> np.ndarray` (a fixed-length vector for the cost
  model, by default the itervar features of the scheduled loop IR) and
  `spec() -> dict` (JSON, to rebuild the task from records).

Tasks cross process boundaries (builders run in worker processes), so a task must be
picklable; xDSL objects are not, so a task keeps only plain parameters and rebuilds its
IR lazily in each process. `TemplateTask` does this for you: it pickles as
`(template name, arguments)` and is rebuilt through the template registry.

Templates are registered by te tag (the `name` of the `te.compute` they schedule):

```python
@register_template("dense")
class DenseTask(KernelTask):
    def define_space(self) -> Space: ...
    def schedule(self, point) -> str: ...
    def base_module(self) -> ModuleOp: ...          # loop stage, unscheduled
    def reference(self, inputs): return [inputs[0] @ inputs[1].T]

task = make_task("dense", M=64, N=64, K=64)     # autotune.templates
```
"""

from __future__ import annotations

import importlib
import json
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import Any, Protocol, runtime_checkable

from typing import TYPE_CHECKING

import numpy as np

from xweave.autotune.space import Point, Space
from xweave.records import WORKLOAD_KEYS

if TYPE_CHECKING:
    from xdsl.dialects import func
    from xdsl.dialects.builtin import ModuleOp

# The compiler is imported inside the methods that use it, by design: a worker process
# imports a task's module to unpickle the task, and only builds need the compiler
# (`KernelTask.prepare` imports it once per worker, outside the timed builds).


class InstantiationError(Exception):
    """The point is not a valid configuration (AutoTVM error 1)."""


class WrongAnswerError(Exception):
    """The candidate computed a result that differs from the reference (error 5)."""


# ----------------------------------------------------------------------------------
# Candidates: built code, timed by a runner in its own process
# ----------------------------------------------------------------------------------


class Candidate(ABC):
    """A built point. Pickled to the runner process, which calls `setup()` once,
    `run()` for the first (checked) run, `check()`, then `run()` while timing."""

    def setup(self) -> None:
        """Load the code and allocate inputs and outputs (not timed)."""

    @abstractmethod
    def run(self) -> None:
        """One execution."""

    def check(self) -> None:
        """Raise `WrongAnswerError` if the outputs of the last run are wrong."""

    def simulated_seconds(self) -> float | None:
        """For simulated tasks only: the cost to report without running (seconds)."""
        return None


class SimulatedCandidate(Candidate):
    """A candidate whose cost is known (synthetic tasks); nothing runs."""

    def __init__(self, seconds: float):
        self.seconds = float(seconds)

    def run(self) -> None:
        pass

    def simulated_seconds(self) -> float:
        return self.seconds


_REFERENCES: dict[tuple[str, int], list[np.ndarray]] = {}
"""Reference outputs computed in this (runner) process, per (workload, input seed)."""


class JitCandidate(Candidate):
    """Machine code of one kernel (destination passing: inputs, then outputs).

    `arg_specs` are (shape, dtype) per argument; the first `num_inputs` are inputs,
    filled by `task.make_inputs(seed)`; outputs start as NaN so an unwritten element is
    caught by `check`, which compares with `task.reference` (computed once per workload
    in the runner process).
    """

    def __init__(self, task: Any, object_bytes: bytes, params: dict[str, np.ndarray],
                 entry: str, arg_specs: Sequence[tuple[tuple[int, ...], str]],
                 num_inputs: int, seed: int = 0, rtol: float = 1e-4, atol: float = 1e-4,
                 arena_bytes: int = 0):
        self.task = task
        self.object_bytes = object_bytes
        self.params = params
        self.entry = entry
        self.arg_specs = [(tuple(s), str(d)) for s, d in arg_specs]
        self.num_inputs = num_inputs
        self.seed = seed
        self.rtol, self.atol = rtol, atol
        self.arena_bytes = arena_bytes
        """Bytes of the kernel's planned temporaries (`plan-memory`), allocated at setup."""
        self.prepacked: list[tuple[int, list[tuple[int, int]], list[int]]] = []
        """(input index, splits, order) of inputs the kernel takes packed (`pack_array`)."""
        self.features = None

    def __getstate__(self):
        state = dict(self.__dict__)
        for k in ("_kernel", "_fn", "_arrays", "_ptrs", "_state", "_originals", "features"):
            state.pop(k, None)
        return state

    def setup(self) -> None:
        from xweave.passes.loop_pack import pack_array  # lazy: see the note above
        from xweave.runtime.kernel import LoadedKernel

        self._kernel = LoadedKernel(self.object_bytes, self.entry, len(self.arg_specs),
                                    self.params, getattr(self, "arena_bytes", 0))
        self._fn = self._kernel.function
        self._state = self._kernel.pool.take()  # one arena for every timed run
        inputs = [np.asarray(a, order="C") for a in self.task.make_inputs(self.seed)]
        self._originals = [a.copy() for a in inputs]
        if getattr(self, "prepacked", None):
            for index, splits, order in self.prepacked:
                inputs[index] = np.ascontiguousarray(pack_array(inputs[index], splits, order))
        specs = self.arg_specs[: self.num_inputs]
        if len(inputs) != len(specs) or any(
            a.shape != s or a.dtype != np.dtype(d) for a, (s, d) in zip(inputs, specs)
        ):
            raise ValueError("task.make_inputs does not match the kernel's input arguments")
        outputs = [np.full(s, np.nan if np.dtype(d).kind == "f" else np.iinfo(d).max, dtype=d)
                   for s, d in self.arg_specs[self.num_inputs:]]
        self._arrays = inputs + outputs
        self._ptrs = [a.ctypes.data for a in self._arrays] + list(self._state.pointers)

    def run(self) -> None:
        self._fn(*self._ptrs)

    def outputs(self) -> list[np.ndarray]:
        return self._arrays[self.num_inputs:]

    def check(self) -> None:
        key = (self.task.workload_key, self.seed)
        if key not in _REFERENCES:
            _REFERENCES.clear()  # keep one workload's reference at a time
            _REFERENCES[key] = [np.asarray(r) for r in self.task.reference(
                [a.copy() for a in self._originals])]
        for i, (got, want) in enumerate(zip(self.outputs(), _REFERENCES[key])):
            if got.shape != want.shape or not np.allclose(got, want, rtol=self.rtol,
                                                          atol=self.atol):
                err = np.nanmax(np.abs(got.astype(np.float64) - want)) if got.shape == want.shape \
                    else float("nan")
                bad = int(np.sum(~np.isclose(got, want, rtol=self.rtol, atol=self.atol))) \
                    if got.shape == want.shape else -1
                raise WrongAnswerError(
                    f"output {i} differs from the reference: {bad} of {got.size} elements "
                    f"off, max abs error {err:.3g}"
                )


# ----------------------------------------------------------------------------------
# The task protocol and the template registry
# ----------------------------------------------------------------------------------


@runtime_checkable
class Task(Protocol):
    """What a tuner needs to know about a workload (see the module docstring)."""

    workload_key: str
    space: Space
    flops: float

    def schedule(self, point: Point) -> str: ...

    def build(self, point: Point) -> Candidate: ...

    def reference(self, inputs: list[np.ndarray]) -> list[np.ndarray]: ...


TEMPLATES: dict[str, Callable[..., Task]] = {}
"""Task constructors by template name (by convention the te tag of the scheduled stage)."""


def register_template(name: str):
    """Decorator registering a task class or factory `f(**args) -> Task` under `name`."""

    def wrap(factory):
        if name in TEMPLATES and TEMPLATES[name] is not factory:
            raise ValueError(f"template {name!r} is already registered")
        TEMPLATES[name] = factory
        # how records of this template are told from garbled ones (`load_records`)
        WORKLOAD_KEYS.setdefault(name, lambda args: factory(**args).workload_key)
        if isinstance(factory, type) and issubclass(factory, TemplateTask):
            factory.template = name
        return factory

    return wrap


def workload_key(template: str, args: dict) -> str:
    """`template(k=v, ...)`, with the arguments in sorted order."""
    inner = ", ".join(f"{k}={json.dumps(v) if isinstance(v, str) else v}"
                      for k, v in sorted(args.items()))
    return f"{template}({inner})"


def _rebuild(template: str, args: dict, module: str) -> Task:
    """Unpickle a `TemplateTask`: import the module registering it (by name, as pickle
    imports a class's module), then make it."""
    if template not in TEMPLATES:
        importlib.import_module(module)
    return TEMPLATES[template](**args)


class TemplateTask:
    """Base of registered tasks: holds only its arguments, pickles as (template, args),
    and builds its space (and any IR) lazily in each process.

    Subclasses set `flops`, implement `define_space()`, `schedule(point)`,
    `build(point)` and `reference(inputs)`.
    """

    template: str = ""

    def __init__(self, **args):
        if not self.template:
            raise TypeError(f"{type(self).__name__} is not registered with @register_template")
        self.args = dict(args)
        self._space: Space | None = None
        self._cache: dict[str, Any] = {}

    def __reduce__(self):
        return (_rebuild, (self.template, self.args, type(self).__module__))

    @property
    def workload_key(self) -> str:
        return workload_key(self.template, self.args)

    def spec(self) -> dict:
        """JSON description; `task_from_spec` rebuilds the task."""
        return {"template": self.template, "args": self.args}

    @property
    def space(self) -> Space:
        if self._space is None:
            self._space = self.define_space()
        return self._space

    def define_space(self) -> Space:
        raise NotImplementedError

    def make_inputs(self, seed: int = 0) -> list[np.ndarray]:
        """Input arrays of a run (default: standard normal float32 of `input_specs()`)."""
        rng = np.random.default_rng(seed)
        return [rng.standard_normal(s).astype(d) for s, d in self.input_specs()]

    def input_specs(self) -> list[tuple[tuple[int, ...], str]]:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.workload_key}>"


class KernelTask(TemplateTask):
    """A task whose points are loop-stage kernels compiled with the JIT.

    Subclasses provide `te_kernel()` (or `base_module()`: a `builtin.module` at the
    loop stage holding one `xweave.kernel` function, unscheduled), `define_space()`,
    `schedule(point)`, `reference(inputs)` and set `flops`; the default
    `loop_ir(point)` applies the pass pipeline `schedule(point)` to a copy of it with
    the passes of `xweave.passes.get_all_passes()`. Or override `loop_ir` to generate
    the scheduled kernel directly. `build` lowers it to LLVM, compiles it, and returns
    a `JitCandidate`; `features` are the itervar features of `loop_ir` (also computed
    during `build` and returned with the build result).
    """

    num_outputs: int = 1
    features_in_build: bool = True
    """Compute the itervar features while building (returned with the build result)."""

    def te_kernel(self) -> func.FuncOp:
        """The unscheduled kernel in tensor expressions (`te.create_kernel(...)`)."""
        raise NotImplementedError

    def base_module(self) -> ModuleOp:
        """The unscheduled kernel at the loop stage: by default `te_kernel()` lowered by
        `convert-te-to-loop` (naive nests with loops named `<stage>.<axis>`)."""
        from xdsl.dialects.builtin import ModuleOp  # lazy: see the note above

        from xweave.context import make_context
        from xweave.lowering.te_to_loop import ConvertTeToLoopPass

        module = ModuleOp([self.te_kernel()])
        ConvertTeToLoopPass().apply(make_context(), module)
        return module

    def prepare(self) -> None:
        """Create the JIT's target machine (called once in each fresh worker process,
        after unpickling the task imported the compiler, so that neither is counted
        against build or run timeouts)."""
        import xweave.pipeline  # noqa: F401  (the compiler; lazy: see the note above)
        from xweave.runtime.jit import host_target_machine

        host_target_machine("pic")

    def schedule(self, point: Point) -> str:
        raise NotImplementedError

    def loop_ir(self, point: Point) -> ModuleOp:
        """The scheduled loop-stage module of `point` (a fresh module)."""
        from xdsl.passes import PassPipeline  # lazy: see the note above

        from xweave.context import make_context
        from xweave.registry import all_passes

        if "base" not in self._cache:
            self._cache["base"] = self.base_module()
        module = self._cache["base"].clone()
        text = self.schedule(point)
        if text:
            try:
                pipeline = PassPipeline.parse_spec(all_passes(), text)
            except Exception as e:
                raise InstantiationError(f"bad schedule {text!r}: {e}") from e
            pipeline.apply(make_context(), module)
        return module

    def kernel(self, module: ModuleOp) -> func.FuncOp:
        from xweave.autotune.features import kernel_of  # lazy: see the note above

        return kernel_of(module)

    def build(self, point: Point) -> JitCandidate:
        from xweave.autotune.features import itervar_features  # lazy: see the note above
        from xweave.pipeline import compile_kernel

        self.space.check_point(point)
        if not self.space.is_valid(point):
            raise InstantiationError(f"point {tuple(point)} violates the space's constraints")
        module = self.loop_ir(point)
        kernel = self.kernel(module)
        name = kernel.sym_name.data
        arg_specs = [
            (tuple(t.get_shape()), _dtype_of(t.get_element_type()))
            for t in kernel.function_type.inputs.data
        ]
        module.verify()
        features = None
        if self.features_in_build:
            features = itervar_features(kernel)  # the IR is at hand: save the tuner a rebuild
        # Temporaries (packed operands, padded inputs) in an arena allocated once, as in
        # a built model: allocated per call, they page-faulted back in on every run
        # (8,000 faults per call of a 2048^3 matmul) and the tuner timed that.
        compiled = compile_kernel(module, name)
        candidate = JitCandidate(self, compiled.compiled.object_bytes, compiled.params, name,
                                 arg_specs, len(arg_specs) - self.num_outputs,
                                 arena_bytes=compiled.arena_bytes)
        candidate.features = features
        return candidate

    def input_specs(self) -> list[tuple[tuple[int, ...], str]]:
        if "input_specs" not in self._cache:
            kernel = self.kernel(self.base_module())
            types = kernel.function_type.inputs.data[: -self.num_outputs]
            self._cache["input_specs"] = [
                (tuple(t.get_shape()), _dtype_of(t.get_element_type())) for t in types
            ]
        return self._cache["input_specs"]

    def features(self, point: Point) -> np.ndarray:
        """Itervar features of the scheduled kernel (see `autotune/FEATURES.md`)."""
        from xweave.autotune.features import itervar_features  # lazy: see the note above

        return itervar_features(self.loop_ir(point))


def _dtype_of(element_type) -> str:
    from xdsl.dialects.builtin import (  # lazy: see the note above
        Float16Type,
        Float32Type,
        Float64Type,
        IntegerType,
        Signedness,
    )

    if isinstance(element_type, Float32Type):
        return "float32"
    if isinstance(element_type, Float64Type):
        return "float64"
    if isinstance(element_type, Float16Type):
        return "float16"
    if isinstance(element_type, IntegerType):
        unsigned = element_type.signedness.data == Signedness.UNSIGNED
        return f"{'u' if unsigned else ''}int{element_type.width.data}"
    raise ValueError(f"unsupported element type {element_type}")
