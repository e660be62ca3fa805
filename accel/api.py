"""The designer API: how a hardware designer plugs a new accelerator into xweave.

An `Accelerator` bundles everything xweave needs to target a device; nothing in the
core passes is specific to one accelerator:

* `config` — the hardware configuration (any object; VTA uses `HardwareConfig`);
* `dialect` — its ISA as an xDSL `Dialect` (ops that print, parse, verify);
* `intrinsics` — its tensor intrinsics (`TensorIntrinsic`): each one is *declared* as a
  `xweave.te` computation over small tensors (what the instruction computes) and comes
  with a *lowering* (how one call becomes ISA ops). `tensorize{intrinsic=...}` matches
  loop nests against the declaration and replaces them by `loop.intrinsic` calls;
* `scopes` — the memory scopes of its scratchpads (`#loop.scope<vta.inp>` ...);
* `stages` — the modules that run concurrently and synchronize through dependency
  tokens (`virtual-threads` inserts `loop.dep_push/pop` between them);
* `lower` — the lowering rule: a `func.func` in loop form (intrinsic calls, dependency
  ops, scratchpad buffers) -> a `LoweredProgram` (ISA program + DRAM layout of args);
* `simulate` — the simulator hook: `(program, dram) -> (outputs, report)`;
* `passes` — its own passes (e.g. a lowering to its ISA), offered by `xweave-opt`
  next to the built-in ones.

Register it once with `register_accelerator(acc)`; `get_accelerator(name)` and
`find_intrinsic("acc.intrinsic")` are how passes find it. From the command line,
`xweave-opt --load-plugin MODULE` imports the module that registers it; its dialect
and passes are then available like xweave's own. VTA is registered through this
API too (`xweave.accel.vta.plugin`, imported by `xweave.plugins` when `vta` is first
named); `accel/README.md` walks through a worked example, and `accel/offload.py` is the
model-level half (running the layers of a whole model).

The helpers `unrolled_calls` and `IntrinsicCall` are the shared machinery a lowering
rule uses: they walk a loop nest with concrete induction values and hand each
intrinsic call over with the element offsets of its operands.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from xdsl.dialects import func
from xdsl.dialects.builtin import MemRefType
from xdsl.ir import Dialect, Operation, SSAValue
from xdsl.passes import ModulePass

from xweave import te
from xweave.accel.registry import ACCELERATORS, AcceleratorError
from xweave.dialects import loop

__all__ = [
    "Accelerator",
    "AcceleratorError",
    "DepEvent",
    "IntrinsicCall",
    "LoweredProgram",
    "TensorIntrinsic",
    "find_intrinsic",
    "get_accelerator",
    "list_accelerators",
    "register_accelerator",
    "registered_accelerators",
    "unrolled_calls",
]


# --------------------------------------------------------------------------------------
# Tensor intrinsics
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TensorIntrinsic:
    """One hardware tensor instruction, declared by what it computes.

    `output` is a `te.compute` over the `inputs` placeholders (e.g. a 1x16 . 16x16^T
    int8 -> int32 product); `scopes` maps each tensor's name (inputs and output) to the
    memory scope its operand must live in; `stage` is the module that executes it;
    `lower(call, emitter)` turns one concrete call into ISA ops through the
    accelerator's own emitter object. `accumulate` says the call adds into its output
    (`out += f(...)`, the "update" form) rather than overwriting it. `window` and
    `pads` describe copy intrinsics (DMA loads/stores between memory scopes).
    """

    name: str
    output: te.Tensor
    inputs: tuple[te.Tensor, ...]
    scopes: Mapping[str, str]
    stage: str
    lower: Callable[[IntrinsicCall, Any], None]
    accumulate: bool = False
    doc: str = ""
    window: int = 0
    """For a copy (DMA) intrinsic: how many loops around the declared element axes one
    call may cover: 2 for a strided rows x columns window, 0 for one tile."""
    pads: bool = False
    """The copy zero-fills reads outside the source buffer (DMA padding), so a nest
    whose body is `in-bounds ? src[...] : 0` still matches."""

    def __post_init__(self) -> None:
        if self.output.is_placeholder:
            raise AcceleratorError(f"intrinsic {self.name!r}: the output must be a te.compute")
        names = [t.name for t in (*self.inputs, self.output)]
        missing = [n for n in names if n not in self.scopes]
        if missing:
            raise AcceleratorError(
                f"intrinsic {self.name!r}: no memory scope for tensor(s) {', '.join(map(str, missing))}"
            )

    @property
    def operand_names(self) -> tuple[str, ...]:
        """Operand order of a `loop.intrinsic` call: the output first, then the inputs."""
        return (self.output.name, *(t.name for t in self.inputs))  # type: ignore[return-value]


# --------------------------------------------------------------------------------------
# Accelerators and their registry
# --------------------------------------------------------------------------------------


@dataclass
class LoweredProgram:
    """What a lowering rule returns: the ISA program and where each kernel argument
    lives in the accelerator's DRAM (`layout[arg_index]`, accelerator-defined)."""

    program: Operation
    layout: dict[int, Any] = field(default_factory=dict)
    info: dict[str, Any] = field(default_factory=dict)


@dataclass
class Accelerator:
    """A tensor accelerator as xweave sees it; see the module docstring."""

    name: str
    config: Any
    dialect: Dialect
    intrinsics: dict[str, TensorIntrinsic]
    scopes: dict[str, str]
    stages: tuple[str, ...]
    lower: Callable[..., LoweredProgram]
    simulate: Callable[..., tuple[Any, Any]]
    doc: str = ""
    passes: tuple[type[ModulePass], ...] = ()

    def __post_init__(self) -> None:
        for name, intr in self.intrinsics.items():
            if not name.startswith(self.name + "."):
                raise AcceleratorError(
                    f"intrinsic {name!r} of accelerator {self.name!r} must be named '{self.name}.<name>'"
                )
            if intr.stage not in self.stages:
                raise AcceleratorError(
                    f"intrinsic {name!r} runs on stage {intr.stage!r}, not one of {self.stages}"
                )
            for scope in intr.scopes.values():
                if scope != "global" and scope not in self.scopes:
                    raise AcceleratorError(f"intrinsic {name!r} uses unknown scope {scope!r}")

    def intrinsic(self, name: str) -> TensorIntrinsic:
        """Intrinsic `name` (qualified `acc.x` or short `x`)."""
        key = name if name.startswith(self.name + ".") else f"{self.name}.{name}"
        try:
            return self.intrinsics[key]
        except KeyError:
            raise AcceleratorError(
                f"accelerator {self.name!r} has no intrinsic {name!r}; it has "
                f"{', '.join(sorted(self.intrinsics)) or 'none'}"
            ) from None


def register_accelerator(acc: Accelerator, *, replace: bool = False) -> Accelerator:
    """Make `acc` known by its name (to `tensorize`, `virtual-threads`, lowering)."""
    return ACCELERATORS.register(acc.name, acc, replace)


def get_accelerator(name: str) -> Accelerator:
    """The registered accelerator `name` (built-in ones are loaded on demand)."""
    return ACCELERATORS.get(name)


def list_accelerators() -> list[str]:
    """The accelerators: registered, or built in (loaded on first use)."""
    return ACCELERATORS.names()


def registered_accelerators() -> list[Accelerator]:
    """The accelerators registered so far (built-in ones only once loaded)."""
    return ACCELERATORS.registered()


def find_intrinsic(qualified: str) -> tuple[Accelerator, TensorIntrinsic]:
    """(accelerator, intrinsic) for a name like `vta.gemm`."""
    acc_name, _, short = qualified.partition(".")
    if not short:
        raise AcceleratorError(
            f"intrinsic name {qualified!r} must be qualified by its accelerator, e.g. 'vta.gemm'"
        )
    acc = get_accelerator(acc_name)
    return acc, acc.intrinsic(qualified)


# --------------------------------------------------------------------------------------
# Helpers for lowering rules: walking loop nests with concrete indices
# --------------------------------------------------------------------------------------


@dataclass
class IntrinsicCall:
    """One executed `loop.intrinsic` with concrete operand offsets.

    `offsets[i]` is the index tuple operand i starts at (the access map evaluated at
    the current induction values); `buffers[i]` the SSA buffer, `types[i]` its memref
    type; `attrs` the call's static attributes as Python values.
    """

    intrinsic: TensorIntrinsic
    op: Operation
    buffers: tuple[SSAValue, ...]
    types: tuple[MemRefType, ...]
    offsets: tuple[tuple[int, ...], ...]
    attrs: dict[str, Any]
    env: Mapping[SSAValue, int]


@dataclass
class DepEvent:
    """One executed `loop.dep_push` / `loop.dep_pop` between two stages."""

    kind: str  # "push" or "pop"
    src: str
    dst: str
    op: Operation


def unrolled_calls(
    ops: Sequence[Operation] | Iterator[Operation],
    acc: Accelerator,
    env: dict[SSAValue, int] | None = None,
    fold: Callable[[loop.ForOp, dict[SSAValue, int]], bool] | None = None,
) -> Iterator[IntrinsicCall | DepEvent]:
    """Walk `ops` in execution order with every `loop.for` unrolled; yield an
    `IntrinsicCall` per intrinsic call and a `DepEvent` per dependency op.

    A lowering rule that can emit a whole loop as a hardware loop passes `fold`: it is
    asked first at each `loop.for` (with the induction values of the loops around it)
    and, where it returns True, has emitted the loop itself, which is then skipped."""
    env = {} if env is None else env
    for op in ops:
        if isinstance(op, loop.ForOp):
            if fold is not None and fold(op, env):
                continue
            for value in op.range:
                env[op.induction_var] = value
                yield from unrolled_calls(op.body.block.ops, acc, env, fold)
            env.pop(op.induction_var, None)
        elif isinstance(op, loop.IntrinsicOp):
            yield make_call(op, acc, env)
        elif isinstance(op, loop.DepPushOp | loop.DepPopOp):
            kind = "push" if isinstance(op, loop.DepPushOp) else "pop"
            yield DepEvent(kind, op.src_stage, op.dst_stage, op)
        elif isinstance(op, loop.YieldOp | loop.AllocOp | func.ReturnOp):
            continue
        else:
            raise AcceleratorError(
                f"{acc.name} lowering: unexpected op {op.name} in an accelerator loop nest "
                "(expected loop.for, loop.intrinsic, loop.dep_push/pop, loop.alloc)"
            )


def make_call(op: Operation, acc: Accelerator, env: Mapping[SSAValue, int]) -> IntrinsicCall:
    """The `IntrinsicCall` of `loop.intrinsic` op `op` at induction values `env`."""
    assert isinstance(op, loop.IntrinsicOp)
    intr = acc.intrinsic(op.callee_name)
    try:
        values = tuple(env[v] for v in op.indices)
    except KeyError:
        raise AcceleratorError(
            f"{op.callee}: an index operand is not a loop induction variable in scope"
        ) from None
    offsets = tuple(tuple(m.eval(values, ())) for m in op.operand_maps)
    return IntrinsicCall(
        intrinsic=intr,
        op=op,
        buffers=tuple(op.buffers),
        types=tuple(b.type for b in op.buffers),  # type: ignore[misc]
        offsets=offsets,
        attrs=op.static_attrs,
        env=env,
    )
