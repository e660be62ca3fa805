"""Targets: what code is generated for, and the machine model every schedule reads.

A target is written as tvmc writes it:

    llvm                                   the CPU this process runs on (the default)
    llvm -mcpu=znver3                      a named CPU (LLVM's names)
    llvm -mcpu=znver4 -mattr=-avx512f      a named CPU with features added or removed
    llvm -mcpu=znver4 -mprefer-vector-width=256
                                           schedules use 8-lane vectors on an AVX-512 CPU

`Target.parse` reads that text and `str(target)` writes it back. `Target.resolve()`
makes every choice explicit: the host's name, and the vector features that matter to
code generation (`VECTOR_FEATURES`) added or removed against the named CPU's defaults,
so a resolved target names the same machine on any host. The driver records the
resolved target on the module (`xweave.target`), every later stage reads it from there
(`target_of`), and dumps replay with `xweave-opt` on another machine unchanged.

`MachineModel` is what schedules, the tuner's spaces and the code generator read: f32
lanes of the vectors schedules use, vector registers, FMA throughput and latency, cache
sizes, extensions. A named CPU takes its figures from `CPUS`; the host takes its cache
sizes from the operating system. `XWEAVE_VECTOR_REGISTERS=16|32` overrides the register
count (to reproduce a schedule sized for another register file).
"""

from __future__ import annotations

import functools
import os
import shlex
from dataclasses import dataclass, field, replace
from pathlib import Path

import llvmlite.binding as llvm

from xweave.errors import XweaveError

TARGET_ATTR = "xweave.target"
"""The `builtin.module` attribute holding the resolved target (a string)."""

TARGET_ENV = "XWEAVE_TARGET"
"""Environment variable giving the default target (else the host)."""

REGISTERS_ENV = "XWEAVE_VECTOR_REGISTERS"
"""Environment variable overriding the vector register count of the machine model."""

CPU_KINDS = ("llvm",)
"""Target kinds that generate CPU code; other kinds name accelerators (`vta`, ...)."""

VECTOR_FEATURES = (
    "sse4.2", "avx", "avx2", "fma", "f16c",
    "avx512f", "avx512vl", "avx512bw", "avx512dq", "avx512cd",
    "avx512vnni", "avx512bf16", "avx512fp16", "avxvnni",
)
"""The LLVM features code generation and the machine model depend on. A module records
these; loading it on a CPU that lacks one of them is refused."""

_REQUIRES = {
    "avx": ("sse4.2",), "avx2": ("avx",), "fma": ("avx",), "f16c": ("avx",),
    "avx512f": ("avx2", "fma", "f16c"), "avxvnni": ("avx2",),
    **{f: ("avx512f",) for f in ("avx512vl", "avx512bw", "avx512dq", "avx512cd",
                                 "avx512vnni", "avx512bf16")},
    "avx512fp16": ("avx512bw", "avx512vl", "avx512dq"),
}
"""What each feature needs: adding one adds these, removing one removes what needs it
(as LLVM does: `-mattr=-avx512f` leaves no AVX-512 extension)."""

_V2 = ("sse4.2",)
_V3 = _V2 + ("avx", "avx2", "fma", "f16c")
_V4 = _V3 + ("avx512f", "avx512vl", "avx512bw", "avx512dq", "avx512cd")
_SPR = _V4 + ("avx512vnni", "avx512bf16", "avx512fp16", "avxvnni")
_ZEN4 = _V4 + ("avx512vnni", "avx512bf16")

KIB, MIB = 1024, 1024 * 1024


class TargetError(XweaveError):
    """A target description that cannot be read or does not fit this machine."""


@dataclass(frozen=True)
class CpuInfo:
    """What a named CPU has: its vector features and the figures of one core.

    `fma_per_cycle` counts vector FMA instructions a core starts per cycle at 256 and at
    512 bits (Zen 4 runs 512-bit FMAs as two halves: one per cycle, the same flops as two
    256-bit ones; Zen 5 and server Intel cores start two full-width ones)."""

    features: tuple[str, ...]
    fma_per_cycle_256: int = 2
    fma_per_cycle_512: int = 0
    fma_latency: int = 4
    l1_bytes: int = 32 * KIB
    l2_bytes: int = 512 * KIB
    l3_bytes: int = 8 * MIB


CPUS: dict[str, CpuInfo] = {
    "x86-64": CpuInfo((), 1, 0, 5, l2_bytes=256 * KIB),
    "x86-64-v2": CpuInfo(_V2, 1, 0, 5, l2_bytes=256 * KIB),
    "x86-64-v3": CpuInfo(_V3, 2, 0, 4, l2_bytes=256 * KIB),
    "x86-64-v4": CpuInfo(_V4, 2, 1, 4, l2_bytes=1 * MIB),
    "haswell": CpuInfo(_V3, 2, 0, 5, l2_bytes=256 * KIB),
    "broadwell": CpuInfo(_V3, 2, 0, 5, l2_bytes=256 * KIB),
    "skylake": CpuInfo(_V3, 2, 0, 4, l2_bytes=256 * KIB),
    "alderlake": CpuInfo(_V3 + ("avxvnni",), 2, 0, 4, 48 * KIB, 1280 * KIB, 30 * MIB),
    "raptorlake": CpuInfo(_V3 + ("avxvnni",), 2, 0, 4, 48 * KIB, 2 * MIB, 36 * MIB),
    "meteorlake": CpuInfo(_V3 + ("avxvnni",), 2, 0, 4, 48 * KIB, 2 * MIB, 24 * MIB),
    "skylake-avx512": CpuInfo(_V4, 2, 2, 4, 32 * KIB, 1 * MIB, 32 * MIB),
    "cascadelake": CpuInfo(_V4 + ("avx512vnni",), 2, 2, 4, 32 * KIB, 1 * MIB, 32 * MIB),
    "cooperlake": CpuInfo(_V4 + ("avx512vnni", "avx512bf16"), 2, 2, 4, 32 * KIB, 1 * MIB, 32 * MIB),
    "icelake-client": CpuInfo(_V4 + ("avx512vnni",), 2, 1, 4, 48 * KIB, 512 * KIB, 8 * MIB),
    "icelake-server": CpuInfo(_V4 + ("avx512vnni",), 2, 2, 4, 48 * KIB, 1280 * KIB, 48 * MIB),
    "tigerlake": CpuInfo(_V4 + ("avx512vnni",), 2, 1, 4, 48 * KIB, 1280 * KIB, 12 * MIB),
    "sapphirerapids": CpuInfo(_SPR, 2, 2, 4, 48 * KIB, 2 * MIB, 64 * MIB),
    "emeraldrapids": CpuInfo(_SPR, 2, 2, 4, 48 * KIB, 2 * MIB, 128 * MIB),
    "graniterapids": CpuInfo(_SPR, 2, 2, 4, 48 * KIB, 2 * MIB, 128 * MIB),
    "znver1": CpuInfo(_V3, 1, 0, 5, 32 * KIB, 512 * KIB, 8 * MIB),
    "znver2": CpuInfo(_V3, 2, 0, 5, 32 * KIB, 512 * KIB, 16 * MIB),
    "znver3": CpuInfo(_V3, 2, 0, 4, 32 * KIB, 512 * KIB, 32 * MIB),
    "znver4": CpuInfo(_ZEN4, 2, 1, 4, 32 * KIB, 1 * MIB, 32 * MIB),
    "znver5": CpuInfo(_ZEN4 + ("avxvnni",), 2, 2, 4, 48 * KIB, 1 * MIB, 32 * MIB),
}
"""CPUs known by name, with sensible defaults for a core of each (caches of a common
part; a host's own caches are read from the OS instead). Schedules use 16-lane vectors
on every AVX-512 CPU, Zen 4 included: its 512-bit FMAs run as two halves (the flops of
two ymm ones), but 16-lane code needs half the instructions, loads and broadcasts and
measured faster there (bench/HISTORY.md, issue 18); `-mprefer-vector-width=256` gives
8-lane code."""

_UNKNOWN_CPU = CpuInfo(())


@dataclass(frozen=True)
class Target:
    """A target as the user wrote it (`llvm -mcpu=NAME -mattr=+f1,-f2`), or resolved.

    `cpu=None` is the host. `mattr` keeps the user's `+f`/`-f` items in order.
    """

    kind: str = "llvm"
    cpu: str | None = None
    mattr: tuple[str, ...] = ()
    prefer_vector_width: int | None = None

    @staticmethod
    def parse(text: str) -> Target:
        """Read `llvm [-mcpu=NAME] [-mattr=+a,-b] [-mprefer-vector-width=N]` (or an
        accelerator's name); raise `TargetError` naming what is wrong."""
        try:
            words = shlex.split(text)
        except ValueError as e:
            raise TargetError(f"target {text!r}: {e}") from None
        if not words:
            raise TargetError("empty target (expected e.g. 'llvm' or 'llvm -mcpu=znver4')")
        kind, options = words[0], words[1:]
        if kind not in CPU_KINDS:
            if options:
                raise TargetError(f"target {text!r}: options are for CPU targets "
                                  f"({', '.join(CPU_KINDS)}), not '{kind}'")
            return Target(kind)
        cpu, mattr, width = None, [], None
        for option in options:
            key, eq, value = option.partition("=")
            if not eq or not value:
                raise TargetError(f"target {text!r}: cannot read option {option!r} "
                                  "(expected -mcpu=NAME, -mattr=+f1,-f2 or -mprefer-vector-width=N)")
            if key == "-mcpu":
                cpu = None if value == "native" else value
            elif key == "-mattr":
                for item in value.split(","):
                    if len(item) < 2 or item[0] not in "+-":
                        raise TargetError(f"target {text!r}: -mattr item {item!r} must be "
                                          "+FEATURE or -FEATURE")
                    mattr.append(item)
            elif key == "-mprefer-vector-width":
                if value not in ("128", "256", "512"):
                    raise TargetError(f"target {text!r}: -mprefer-vector-width must be "
                                      f"128, 256 or 512, not {value!r}")
                width = int(value)
            else:
                raise TargetError(f"target {text!r}: unknown option {key!r} (expected "
                                  "-mcpu, -mattr or -mprefer-vector-width)")
        explicit = {item[1:] for item in mattr} >= set(VECTOR_FEATURES)
        if cpu is not None and cpu not in CPUS and cpu != _host_cpu()[0] and not explicit:
            raise TargetError(f"target {text!r}: unknown CPU '{cpu}' (known: "
                              f"{', '.join(sorted(CPUS))}, or this host's "
                              f"'{_host_cpu()[0]}')")
        return Target(kind, cpu, tuple(mattr), width)

    def __str__(self) -> str:
        words = [self.kind]
        if self.cpu is not None:
            words.append(f"-mcpu={self.cpu}")
        if self.mattr:
            words.append("-mattr=" + ",".join(self.mattr))
        if self.prefer_vector_width is not None:
            words.append(f"-mprefer-vector-width={self.prefer_vector_width}")
        return " ".join(words)

    @property
    def is_cpu(self) -> bool:
        return self.kind in CPU_KINDS

    def resolve(self) -> Target:
        """The same machine described explicitly: the host's CPU name instead of `None`,
        and `mattr` reduced to the `VECTOR_FEATURES` that differ from the CPU's defaults."""
        if not self.is_cpu:
            return self
        name = self.cpu if self.cpu is not None else _host_cpu()[0]
        features = self.features
        if name in CPUS:
            defaults = set(CPUS[name].features)
            mattr = [f"+{f}" for f in VECTOR_FEATURES if f in features and f not in defaults]
            mattr += [f"-{f}" for f in VECTOR_FEATURES if f not in features and f in defaults]
        else:  # a CPU the table does not know (a new host): every feature explicit
            mattr = [("+" if f in features else "-") + f for f in VECTOR_FEATURES]
        return Target(self.kind, name, tuple(mattr), self.prefer_vector_width)

    @functools.cached_property
    def features(self) -> frozenset[str]:
        """The `VECTOR_FEATURES` this target has."""
        if self.cpu in CPUS:
            base = set(CPUS[self.cpu].features)
        else:  # the host (by default or by a name the table does not know)
            base = set(_host_cpu()[1])
        for item in self.mattr:
            if item[0] == "+":
                base |= _with_requirements(item[1:])
            else:
                base -= {f for f in base if item[1:] in _with_requirements(f)}
        return frozenset(f for f in base if f in VECTOR_FEATURES)

    def llvm_cpu_and_features(self) -> tuple[str, str]:
        """The CPU name and feature string to create LLVM's target machine with."""
        if self.cpu is None:
            return _host_cpu()[0], _host_cpu()[2]
        return self.cpu, ",".join(self.mattr)

    def missing_on_host(self) -> list[str]:
        """The features this target's code may use that this machine lacks."""
        host = set(_host_cpu()[1])
        return [f for f in VECTOR_FEATURES if f in self.features and f not in host]


def _with_requirements(feature: str) -> set[str]:
    """`feature` and everything it needs, transitively."""
    found, todo = set(), [feature]
    while todo:
        f = todo.pop()
        if f not in found:
            found.add(f)
            todo.extend(_REQUIRES.get(f, ()))
    return found


def _info(cpu: str) -> CpuInfo:
    return CPUS.get(cpu, _UNKNOWN_CPU)


@functools.cache
def _host_cpu() -> tuple[str, frozenset[str], str]:
    """LLVM's name of this CPU, its vector features, and its whole feature string."""
    name = llvm.get_host_cpu_name()
    try:
        feature_map = llvm.get_host_cpu_features()
    except RuntimeError:  # LLVM has no feature list for this host: the name's defaults
        return name, frozenset(_info(name).features), ""
    present = frozenset(f for f in VECTOR_FEATURES if feature_map.get(f))
    return name, present, feature_map.flatten()


def host_cpu_name() -> str:
    """LLVM's name of the CPU this process runs on (what every benchmark figure names)."""
    return _host_cpu()[0]


def default_target() -> Target:
    """`XWEAVE_TARGET` if set, else the host."""
    text = os.environ.get(TARGET_ENV, "").strip()
    return Target.parse(text) if text else Target()


def as_target(target: Target | str | None) -> Target:
    """A `Target` from a `Target`, its text, or None (the default target)."""
    if target is None:
        return default_target()
    if isinstance(target, Target):
        return target
    return Target.parse(target)


# ----------------------------------------------------------------------------------
# The target of a module
# ----------------------------------------------------------------------------------


# (xDSL is imported lazily below: loading a compiled module, a compile-cache hit, reads
# targets but no IR, and should not take the time to import xDSL; whoever has an op
# has imported it already.)


def set_target(module, target: Target) -> None:
    """Record the resolved `target` on a `builtin.module`."""
    from xdsl.dialects.builtin import StringAttr

    module.attributes[TARGET_ATTR] = StringAttr(str(target.resolve()))


def target_of(op) -> Target:
    """The target recorded on the module holding `op` (or `op` itself, a module);
    the default target when there is none."""
    from xdsl.dialects.builtin import ModuleOp, StringAttr

    while op is not None and not (isinstance(op, ModuleOp) and TARGET_ATTR in op.attributes):
        op = op.parent_op()
    if op is None:
        return default_target()
    attr = op.attributes[TARGET_ATTR]
    if not isinstance(attr, StringAttr):
        raise TargetError(f"'{TARGET_ATTR}' must be a string, got {attr}")
    return Target.parse(attr.data)


# ----------------------------------------------------------------------------------
# The machine model
# ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class MachineModel:
    """The figures of one core of the target that schedules size their code for."""

    cpu: str
    features: frozenset[str]
    vector_bits: int
    """Width of the vectors schedules use: 512 with AVX-512 (unless the target prefers
    narrower), 256 with AVX, else 128."""
    vector_registers: int
    """Architectural vector registers: 32 with AVX-512 (AVX-512VL encodes ymm16-31 too), else 16."""
    fma_per_cycle: int
    """Vector FMA instructions of `vector_bits` a core starts per cycle."""
    fma_latency: int
    """Cycles from an FMA's operands to its result."""
    l1_bytes: int
    l2_bytes: int
    l3_bytes: int
    extensions: frozenset[str] = field(default_factory=frozenset)
    """The features beyond plain vectors: fma, avx512vnni, avx512bf16, ..."""

    @property
    def lanes(self) -> int:
        """f32 lanes of the vectors schedules use (4, 8 or 16)."""
        return self.vector_bits // 32

    @property
    def legal_lanes(self) -> tuple[int, ...]:
        """Every f32 vector width the target can run, narrowest first (a tuner's choice)."""
        widest = 16 if "avx512f" in self.features else 8 if "avx" in self.features else 4
        return tuple(n for n in (4, 8, 16) if n <= widest)

    @property
    def accumulators_to_hide_latency(self) -> int:
        """Independent FMA chains needed to keep the FMA units busy."""
        return max(1, self.fma_per_cycle * self.fma_latency)

    def with_lanes(self, lanes: int) -> MachineModel:
        """The same machine with schedules using `lanes`-wide vectors."""
        if lanes not in self.legal_lanes:
            raise TargetError(f"{lanes}-lane vectors are not legal on {self.cpu} "
                              f"(legal: {', '.join(map(str, self.legal_lanes))})")
        info = _info(self.cpu)
        rate = info.fma_per_cycle_512 if lanes == 16 else info.fma_per_cycle_256 or 1
        return replace(self, vector_bits=32 * lanes, fma_per_cycle=max(1, rate))


def machine_model(target: Target | str | None = None) -> MachineModel:
    """The machine model of `target` (default: the default target), with the
    `XWEAVE_VECTOR_REGISTERS` override applied."""
    model = _machine_model(as_target(target).resolve())
    forced = os.environ.get(REGISTERS_ENV)
    if forced is None:
        return model
    if forced not in ("16", "32"):
        raise TargetError(f"{REGISTERS_ENV}={forced!r}: expected 16 or 32")
    return replace(model, vector_registers=int(forced))


@functools.cache
def _machine_model(target: Target) -> MachineModel:
    if not target.is_cpu:
        raise TargetError(f"'{target.kind}' is not a CPU target: it has no machine model")
    assert target.cpu is not None
    info = _info(target.cpu)
    features = target.features
    widest = 512 if "avx512f" in features else 256 if "avx" in features else 128
    bits = min(widest, target.prefer_vector_width or widest)
    registers = 32 if "avx512f" in features else 16
    l1, l2, l3 = info.l1_bytes, info.l2_bytes, info.l3_bytes
    if target.cpu == _host_cpu()[0] and not target.mattr:
        l1, l2, l3 = _host_caches() or (l1, l2, l3)
    rate = info.fma_per_cycle_512 if bits == 512 else info.fma_per_cycle_256
    if bits == 512 and rate == 0:  # a CPU the table does not know: half the 256-bit rate
        rate = max(1, info.fma_per_cycle_256 // 2)
    return MachineModel(
        cpu=target.cpu, features=features, vector_bits=bits, vector_registers=registers,
        fma_per_cycle=max(1, rate), fma_latency=info.fma_latency,
        l1_bytes=l1, l2_bytes=l2, l3_bytes=l3,
        extensions=frozenset(f for f in features if f not in ("sse4.2", "avx", "avx2")),
    )


_CACHE_DIR = Path("/sys/devices/system/cpu/cpu0/cache")


@functools.cache
def _host_caches() -> tuple[int, int, int] | None:
    """This machine's L1 data, L2 and L3 sizes in bytes (Linux sysfs), or None."""
    sizes: dict[int, int] = {}
    try:
        for index in sorted(_CACHE_DIR.glob("index*")):
            kind = (index / "type").read_text().strip()
            if kind not in ("Data", "Unified"):
                continue
            level = int((index / "level").read_text())
            text = (index / "size").read_text().strip()
            scale = {"K": KIB, "M": MIB}.get(text[-1:], 1)
            sizes[level] = int(text.rstrip("KM")) * scale
    except (OSError, ValueError):
        return None
    if not all(level in sizes for level in (1, 2)):
        return None
    return sizes[1], sizes[2], sizes.get(3, sizes[2])
