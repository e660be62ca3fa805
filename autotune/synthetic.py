"""Synthetic tasks: known objectives and misbehaving candidates, for tests and demos.

* `synthetic_smooth` (`SmoothTask`): a few integer knobs and a smooth, unimodal
  GFLOP/s surface with interactions; the optimum is known (`best_point()`); nothing
  runs (`SimulatedCandidate`, use `SimulatedRunner`).
* `synthetic_matmul` (`StructuredMatmulTask`): the search space and loop IR of the
  real `matmul_ir` task, with an analytic performance model in place of measurement
  (innermost strides, vector width, tile footprint vs. L1, loop overhead, unrolling);
  its itervar features come from the generated IR, so a cost model on IR features can
  be compared with the knob-only baseline.
* `synthetic_faulty` (`FaultyTask`): one knob choosing how a candidate behaves — ok, a
  segfault, a hang, a wrong answer, an exception while running, a build error, a hung
  build, an invalid config — to exercise the error codes of `measure`.
"""

from __future__ import annotations

import ctypes
import hashlib
import math
import time

import numpy as np

from xweave.autotune.matmul_task import MatmulTask, _extents
from xweave.autotune.space import Point, Space
from xweave.autotune.task import (
    Candidate,
    InstantiationError,
    SimulatedCandidate,
    TemplateTask,
    WrongAnswerError,
    register_template,
)


def _noise(key: str, seed: int, amplitude: float) -> float:
    """A deterministic pseudo-random factor in [1 - amplitude, 1 + amplitude]."""
    h = hashlib.sha256(f"{seed}:{key}".encode()).digest()
    u = int.from_bytes(h[:8], "little") / 2**64
    return 1.0 + amplitude * (2 * u - 1)


@register_template("synthetic_smooth")
class SmoothTask(TemplateTask):
    """GFLOP/s = 100 * exp(-sum of scaled squared distances to a hidden optimum) with a
    pairwise interaction, times a small deterministic noise; unique maximum."""

    simulated = True

    def __init__(self, dims: tuple[int, ...] | list[int] = (16, 16, 8, 6), seed: int = 0,
                 noise: float = 0.02):
        super().__init__(dims=[int(d) for d in dims], seed=int(seed), noise=float(noise))
        self.flops = 1e9
        rng = np.random.default_rng(seed)
        self.center = [int(rng.integers(1, d - 1)) if d > 2 else 0 for d in self.args["dims"]]

    def define_space(self) -> Space:
        space = Space()
        for i, d in enumerate(self.args["dims"]):
            space.knob(f"x{i}", list(range(d)))
        return space

    def gflops(self, point: Point) -> float:
        dims = self.args["dims"]
        z = [(p - c) / max(1.0, d / 4) for p, c, d in zip(point, self.center, dims)]
        energy = sum(v * v for v in z)
        if len(z) >= 2:
            energy += 0.5 * (z[0] - z[1]) ** 2
        value = 100.0 * math.exp(-0.5 * energy)
        if tuple(point) != tuple(self.best_point()):
            value *= _noise(str(tuple(point)), self.args["seed"], self.args["noise"])
            value = min(value, 99.0)  # the optimum stays unique despite the noise
        return value

    def best_point(self) -> Point:
        return tuple(self.center)

    def schedule(self, point: Point) -> str:
        return ",".join(f"knob{{x{i}={v}}}" for i, v in enumerate(point))

    def build(self, point: Point) -> Candidate:
        return SimulatedCandidate(self.flops / (self.gflops(point) * 1e9))

    def features(self, point: Point) -> np.ndarray:
        return np.asarray(point, dtype=np.float32)

    def reference(self, inputs):
        return []


@register_template("synthetic_matmul")
class StructuredMatmulTask(MatmulTask):
    """`matmul_ir`'s space and IR with an analytic cost instead of a measurement."""

    simulated = True

    def __init__(self, M: int = 64, N: int = 64, K: int = 64, seed: int = 0):
        TemplateTask.__init__(self, M=int(M), N=int(N), K=int(K), seed=int(seed))
        self.flops = 2.0 * M * N * K

    def gflops(self, point: Point) -> float:
        c = self.space.config(point)
        N, K = self.args["N"], self.args["K"]
        ext = _extents(c)
        order = c["order"]
        # (buffer row stride per dim) and which loops index which dim, with coefficients.
        coeff = {"io": ext["ii"], "ii": 1, "jo": ext["ji"], "ji": 1, "ko": ext["ki"], "ki": 1}
        dims = {"A": (("i", K), ("k", 1)), "B": (("k", N), ("j", 1)), "C": (("i", N), ("j", 1))}

        def stride(buf: str, var: str) -> int:
            return sum(coeff[var] * row for d, row in dims[buf] if var[0] == d)

        def footprint(loops) -> int:
            total = 0
            for buf, ds in dims.items():
                box = 1
                for d, _ in ds:
                    span = 1 + sum(coeff[v] * (ext[v] - 1) for v in loops if v[0] == d)
                    box *= span
                total += 4 * box
            return total

        innermost = order[-1]
        stride_cost = 0.0
        for buf in "ABC":
            s = stride(buf, innermost)
            stride_cost += 0.0 if s == 0 else 0.15 if s == 1 else 1.0 if s <= 16 else 1.5
        speed = 8.0 / (1.0 + stride_cost)
        inner_extent = ext[innermost] // (c["vec"] if innermost == "ji" else 1)
        if innermost == "ji":
            speed *= c["vec"] ** 0.8
        speed *= inner_extent / (inner_extent + 2.0)  # loop overhead
        if c["unroll"]:
            speed *= 1.25
        # Working sets of the innermost loops against a 32 KiB L1 and a 512 KiB L2.
        speed /= 1.0 + max(0.0, footprint(order[-3:]) / 32768 - 1.0)
        speed /= 1.0 + 0.5 * max(0.0, footprint(order[-4:]) / 524288 - 1.0)
        # C stays in registers across the reduction when a k loop is just outside.
        if order[-2][0] == "k" and innermost[0] != "k" and stride("C", innermost) <= 1:
            speed *= 1.3
        return speed * _noise(str(tuple(point)), self.args["seed"], 0.03)

    def build(self, point: Point) -> Candidate:
        if not self.space.is_valid(point):
            raise InstantiationError(f"invalid point {tuple(point)}")
        return SimulatedCandidate(self.flops / (self.gflops(point) * 1e9))


BEHAVIORS = ("ok", "segfault", "hang", "wrong", "raise", "build_error", "build_hang",
             "invalid", "build_crash")


class FaultyCandidate(Candidate):
    """Computes `out = 2 * x` when it behaves (see `BEHAVIORS`)."""

    def __init__(self, task, behavior: str, n: int):
        self.task = task
        self.behavior = behavior
        self.n = n

    def setup(self) -> None:
        self.x = np.arange(self.n, dtype=np.float32)
        self.out = np.full(self.n, np.nan, np.float32)

    def run(self) -> None:
        if self.behavior == "segfault":
            ctypes.string_at(0)  # reads address 0: SIGSEGV
        elif self.behavior == "hang":
            time.sleep(3600)
        elif self.behavior == "raise":
            raise RuntimeError("the kernel failed")
        factor = 3.0 if self.behavior == "wrong" else 2.0
        np.multiply(self.x, factor, out=self.out)

    def check(self) -> None:
        (expected,) = self.task.reference([self.x])
        if not np.allclose(self.out, expected):
            raise WrongAnswerError("output differs from the reference")


@register_template("synthetic_faulty")
class FaultyTask(TemplateTask):
    """A one-knob task whose candidates misbehave on purpose."""

    def __init__(self, n: int = 1024):
        super().__init__(n=int(n))
        self.flops = float(n)

    def define_space(self) -> Space:
        space = Space()
        space.knob("behavior", BEHAVIORS)
        return space

    def point(self, behavior: str) -> Point:
        return (BEHAVIORS.index(behavior),)

    def schedule(self, point: Point) -> str:
        return f"behave{{{BEHAVIORS[point[0]]}}}"

    def build(self, point: Point) -> Candidate:
        behavior = BEHAVIORS[point[0]]
        if behavior == "build_error":
            raise RuntimeError("the compiler failed")
        if behavior == "build_hang":
            time.sleep(3600)
        if behavior == "invalid":
            raise InstantiationError("invalid configuration")
        if behavior == "build_crash":
            ctypes.string_at(0)
        return FaultyCandidate(self, behavior, self.args["n"])

    def reference(self, inputs):
        return [inputs[0] * 2.0]
