"""Targets: what code is generated for, and the machine model every schedule reads.

A target is written as tvmc writes it:

    llvm                                   the CPU this process runs on (the default)
    llvm -mcpu=znver3                      a named CPU (LLVM's names)
    llvm -mcpu=znver4 -mattr=-avx512f      a named CPU with features added or removed
    llvm -mcpu=znver4 -mprefer-vector-width=256
                                           schedules use 8-lane vectors on an AVX-512 CPU
    llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a72
                                           another architecture (cross-compiling: the
                                           code is exported as a shared library)

`Target.parse` reads that text and `str(target)` writes it back. `Target.resolve()`
makes every choice explicit: the host's name, and the vector features that matter to
code generation (`VECTOR_FEATURES`) added or removed against the named CPU's defaults,
so a resolved target names the same machine on any host. The triple (`-mtriple`) says
the architecture: given, or implied by a CPU of the table (`cortex-a72` is an aarch64
core), else the host's; a resolved target keeps a triple it was given. The driver records the
resolved target on the module (`xweave.target`), every later stage reads it from there
(`target_of`), and dumps replay with `xweave-opt` on another machine unchanged.

`MachineModel` is what schedules, the tuner's spaces and the code generator read: f32
lanes of the vectors schedules use, vector registers, FMA throughput and latency, cache
sizes, extensions (x86-64: SSE/AVX2/AVX-512; aarch64: 4-lane NEON vectors in 32
registers; riscv64: the V extension's 128-bit vectors). A named CPU takes its figures from `CPUS`; the host takes its cache
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
"""The LLVM features x86-64 code generation and the machine model depend on. A module
records these; loading it on a CPU that lacks one of them is refused."""

ARCH_FEATURES: dict[str, tuple[str, ...]] = {
    "x86_64": VECTOR_FEATURES,
    "aarch64": ("neon", "fullfp16", "dotprod", "i8mm", "bf16", "sve"),
    "riscv64": ("v", "zvfh"),
}
"""The features that matter, per architecture (`VECTOR_FEATURES` for x86-64)."""

DEFAULT_TRIPLES = {
    "x86_64": "x86_64-unknown-linux-gnu",
    "aarch64": "aarch64-unknown-linux-gnu",
    "riscv64": "riscv64-unknown-linux-gnu",
}
"""The triple of an architecture named only through its CPU (`-mcpu=cortex-a72`)."""

_ARCH_ALIASES = {"amd64": "x86_64", "arm64": "aarch64"}

_REQUIRES = {
    "avx": ("sse4.2",), "avx2": ("avx",), "fma": ("avx",), "f16c": ("avx",),
    "avx512f": ("avx2", "fma", "f16c"), "avxvnni": ("avx2",),
    **{f: ("avx512f",) for f in ("avx512vl", "avx512bw", "avx512dq", "avx512cd",
                                 "avx512vnni", "avx512bf16")},
    "avx512fp16": ("avx512bw", "avx512vl", "avx512dq"),
    **{f: ("neon",) for f in ("fullfp16", "dotprod", "i8mm", "bf16")},
    "sve": ("fullfp16",),
    "zvfh": ("v",),
}
"""What each feature needs: adding one adds these, removing one removes what needs it
(as LLVM does: `-mattr=-avx512f` leaves no AVX-512 extension)."""

_V2 = ("sse4.2",)
_V3 = _V2 + ("avx", "avx2", "fma", "f16c")
_V4 = _V3 + ("avx512f", "avx512vl", "avx512bw", "avx512dq", "avx512cd")
_SPR = _V4 + ("avx512vnni", "avx512bf16", "avx512fp16", "avxvnni")
_ZEN4 = _V4 + ("avx512vnni", "avx512bf16")
_A64 = ("neon",)
_A64_2 = ("neon", "fullfp16", "dotprod")
_RV64GC = "+m,+a,+f,+d,+c"  # what Linux distributions build for (the lp64d ABI)

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
    """(On CPUs with narrower vectors: FMAs of their full width per cycle.)"""
    fma_per_cycle_512: int = 0
    fma_latency: int = 4
    l1_bytes: int = 32 * KIB
    l2_bytes: int = 512 * KIB
    l3_bytes: int = 8 * MIB
    arch: str = "x86_64"
    llvm_features: str = ""
    """LLVM features every target machine for this CPU gets (RISC-V's base extensions)."""
    abi: str = ""
    """LLVM's ABI name for this CPU's code ("" : the triple's default)."""


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
    # aarch64: 128-bit NEON vectors in 32 registers
    "generic": CpuInfo(_A64, 2, 0, 4, 32 * KIB, 512 * KIB, 1 * MIB, arch="aarch64"),
    "cortex-a53": CpuInfo(_A64, 1, 0, 4, 32 * KIB, 512 * KIB, 512 * KIB, arch="aarch64"),
    "cortex-a55": CpuInfo(_A64_2, 1, 0, 4, 32 * KIB, 256 * KIB, 1 * MIB, arch="aarch64"),
    "cortex-a72": CpuInfo(_A64, 2, 0, 7, 32 * KIB, 1 * MIB, 1 * MIB, arch="aarch64"),
    "cortex-a76": CpuInfo(_A64_2, 2, 0, 4, 64 * KIB, 512 * KIB, 2 * MIB, arch="aarch64"),
    "neoverse-n1": CpuInfo(_A64_2, 2, 0, 4, 64 * KIB, 1 * MIB, 32 * MIB, arch="aarch64"),
    # riscv64: RV64GC, and 128-bit vectors where the V extension is there (-mattr=+v)
    "generic-rv64": CpuInfo((), 1, 0, 4, 32 * KIB, 512 * KIB, 2 * MIB, arch="riscv64",
                            llvm_features=_RV64GC, abi="lp64d"),
}
"""CPUs known by name, with sensible defaults for a core of each (caches of a common
part; a host's own caches are read from the OS instead). Schedules use 16-lane vectors
on every AVX-512 CPU, Zen 4 included: its 512-bit FMAs run as two halves (the flops of
two ymm ones), but 16-lane code needs half the instructions, loads and broadcasts and
measured faster there (bench/HISTORY.md, issue 18); `-mprefer-vector-width=256` gives
8-lane code. Other architectures' CPUs say so (`arch`).

`generic` and `generic-rv64` are what a triple of aarch64 or riscv64 without `-mcpu`
compiles for."""

DEFAULT_CPUS = {"x86_64": "x86-64", "aarch64": "generic", "riscv64": "generic-rv64"}
"""The CPU of a target that names another architecture's triple but no CPU."""

_UNKNOWN_CPU = CpuInfo(())


def arch_of_triple(triple: str) -> str:
    """The architecture of an LLVM triple (`aarch64-linux-gnu` -> `aarch64`)."""
    arch = triple.split("-", 1)[0].lower()
    return _ARCH_ALIASES.get(arch, arch)


@dataclass(frozen=True)
class Target:
    """A target as the user wrote it (`llvm [-mtriple=T] -mcpu=NAME -mattr=+f1,-f2`),
    or resolved.

    `cpu=None` is the host (or, with a triple of another architecture, that
    architecture's `DEFAULT_CPUS` entry). `mattr` keeps the user's `+f`/`-f` items in
    order. `triple=None`: the CPU's architecture, else the host's.
    """

    kind: str = "llvm"
    cpu: str | None = None
    mattr: tuple[str, ...] = ()
    prefer_vector_width: int | None = None
    triple: str | None = None

    @staticmethod
    def parse(text: str) -> Target:
        """Read `llvm [-mtriple=T] [-mcpu=NAME] [-mattr=+a,-b] [-mprefer-vector-width=N]`
        (or an accelerator's name); raise `TargetError` naming what is wrong."""
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
        cpu, mattr, width, triple = None, [], None, None
        for option in options:
            key, eq, value = option.partition("=")
            if not eq or not value:
                raise TargetError(f"target {text!r}: cannot read option {option!r} "
                                  "(expected -mtriple=T, -mcpu=NAME, -mattr=+f1,-f2 or "
                                  "-mprefer-vector-width=N)")
            if key == "-mcpu":
                cpu = None if value == "native" else value
            elif key == "-mtriple":
                if arch_of_triple(value) not in ARCH_FEATURES:
                    raise TargetError(f"target {text!r}: unsupported architecture "
                                      f"'{arch_of_triple(value)}' (xweave generates code "
                                      f"for {', '.join(ARCH_FEATURES)})")
                triple = value
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
                                  "-mtriple, -mcpu, -mattr or -mprefer-vector-width)")
        target = Target(kind, cpu, tuple(mattr), width, triple)
        arch = target.arch
        if cpu is not None and cpu in CPUS and CPUS[cpu].arch != arch:
            raise TargetError(f"target {text!r}: '{cpu}' is an {CPUS[cpu].arch} CPU, "
                              f"not one for {arch} ({triple})")
        explicit = {item[1:] for item in mattr} >= set(ARCH_FEATURES[arch])
        host = _host_cpu()[0] if arch == host_arch() else None
        if cpu is not None and cpu not in CPUS and cpu != host and not explicit:
            known = sorted(n for n, info in CPUS.items() if info.arch == arch)
            raise TargetError(f"target {text!r}: unknown CPU '{cpu}' (known: "
                              f"{', '.join(known)}"
                              + (f", or this host's '{host}')" if host else ")"))
        return target

    def __str__(self) -> str:
        words = [self.kind]
        if self.triple is not None:
            words.append(f"-mtriple={self.triple}")
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

    @property
    def arch(self) -> str:
        """The architecture code is generated for: the triple's, else the named CPU's,
        else this host's."""
        if self.triple is not None:
            return arch_of_triple(self.triple)
        if self.cpu in CPUS:
            return CPUS[self.cpu].arch
        return host_arch()

    @property
    def llvm_triple(self) -> str:
        """The LLVM triple: the one given, else the host's for its architecture, else
        the architecture's `DEFAULT_TRIPLES` entry."""
        if self.triple is not None:
            return self.triple
        if self.arch == host_arch():
            return llvm.get_process_triple()
        return DEFAULT_TRIPLES[self.arch]

    @property
    def on_host_arch(self) -> bool:
        """Whether this machine's architecture runs the code (its CPU features aside)."""
        return self.arch == host_arch()

    def _cpu_name(self) -> str:
        if self.cpu is not None:
            return self.cpu
        return _host_cpu()[0] if self.on_host_arch else DEFAULT_CPUS[self.arch]

    def resolve(self) -> Target:
        """The same machine described explicitly: the host's CPU name instead of `None`,
        and `mattr` reduced to the features of its architecture (`ARCH_FEATURES`) that
        differ from the CPU's defaults. A triple given stays."""
        if not self.is_cpu:
            return self
        name = self._cpu_name()
        features = self.features
        names = ARCH_FEATURES[self.arch]
        if name in CPUS:
            defaults = set(CPUS[name].features)
            mattr = [f"+{f}" for f in names if f in features and f not in defaults]
            mattr += [f"-{f}" for f in names if f not in features and f in defaults]
        else:  # a CPU the table does not know (a new host): every feature explicit
            mattr = [("+" if f in features else "-") + f for f in names]
        return Target(self.kind, name, tuple(mattr), self.prefer_vector_width, self.triple)

    @functools.cached_property
    def features(self) -> frozenset[str]:
        """The features of its architecture (`ARCH_FEATURES`) this target has."""
        name = self._cpu_name()
        if self.cpu is not None and name in CPUS:
            base = set(CPUS[name].features)
        elif self.on_host_arch:  # the host (by default or by a name the table does not know)
            base = set(_host_cpu()[1])
        else:  # another architecture's default CPU, or one the table does not know
            base = set(_info(name).features)
        for item in self.mattr:
            if item[0] == "+":
                base |= _with_requirements(item[1:])
            else:
                base -= {f for f in base if item[1:] in _with_requirements(f)}
        return frozenset(f for f in base if f in ARCH_FEATURES[self.arch])

    def llvm_cpu_and_features(self) -> tuple[str, str]:
        """The CPU name and feature string to create LLVM's target machine with."""
        if self.cpu is None and self.on_host_arch:
            return _host_cpu()[0], _host_cpu()[2]
        name = self._cpu_name()
        base = _info(name).llvm_features if name in CPUS else ""
        return name, ",".join(f for f in (base, *self.mattr) if f)

    @property
    def llvm_abi(self) -> str:
        """LLVM's ABI name for the code ("": the triple's default)."""
        return _info(self._cpu_name()).abi

    def missing_on_host(self) -> list[str]:
        """The features this target's code may use that this machine lacks (for a
        target of another architecture: that architecture, which it lacks whole)."""
        if not self.on_host_arch:
            return [self.arch]
        host = set(_host_cpu()[1])
        return [f for f in ARCH_FEATURES[self.arch] if f in self.features and f not in host]


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
    names = ARCH_FEATURES.get(host_arch(), ())
    present = frozenset(f for f in names if feature_map.get(f))
    return name, present, feature_map.flatten()


@functools.cache
def host_arch() -> str:
    """The architecture this process runs on (`x86_64`, `aarch64`, ...)."""
    return arch_of_triple(llvm.get_process_triple())


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
    narrower), 256 with AVX, else 128 (SSE, NEON, RISC-V V)."""
    vector_registers: int
    """Architectural vector registers: 32 with AVX-512 (AVX-512VL encodes ymm16-31 too),
    16 with SSE/AVX; 32 on aarch64 and riscv64."""
    fma_per_cycle: int
    """Vector FMA instructions of `vector_bits` a core starts per cycle."""
    fma_latency: int
    """Cycles from an FMA's operands to its result."""
    l1_bytes: int
    l2_bytes: int
    l3_bytes: int
    extensions: frozenset[str] = field(default_factory=frozenset)
    """The features beyond plain vectors: fma, avx512vnni, avx512bf16, dotprod, ..."""
    arch: str = "x86_64"
    """The architecture (`x86_64`, `aarch64`, `riscv64`)."""

    @property
    def lanes(self) -> int:
        """f32 lanes of the vectors schedules use (4, 8 or 16)."""
        return self.vector_bits // 32

    @property
    def legal_lanes(self) -> tuple[int, ...]:
        """Every f32 vector width the target can run, narrowest first (a tuner's choice)."""
        if self.arch != "x86_64":
            return (4,)
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
    arch = target.arch
    if arch == "x86_64":
        widest = 512 if "avx512f" in features else 256 if "avx" in features else 128
        registers = 32 if "avx512f" in features else 16
    else:  # NEON, RISC-V V (at its minimum VLEN): 128-bit vectors, 32 registers
        widest, registers = 128, 32
    bits = min(widest, target.prefer_vector_width or widest)
    l1, l2, l3 = info.l1_bytes, info.l2_bytes, info.l3_bytes
    if target.on_host_arch and target.cpu == _host_cpu()[0] and not target.mattr:
        l1, l2, l3 = _host_caches() or (l1, l2, l3)
    rate = info.fma_per_cycle_512 if bits == 512 else info.fma_per_cycle_256
    if bits == 512 and rate == 0:  # a CPU the table does not know: half the 256-bit rate
        rate = max(1, info.fma_per_cycle_256 // 2)
    return MachineModel(
        cpu=target.cpu, features=features, vector_bits=bits, vector_registers=registers,
        fma_per_cycle=max(1, rate), fma_latency=info.fma_latency,
        l1_bytes=l1, l2_bytes=l2, l3_bytes=l3,
        extensions=frozenset(f for f in features
                             if f not in ("sse4.2", "avx", "avx2", "neon", "v")),
        arch=arch,
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
