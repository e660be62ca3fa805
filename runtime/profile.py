"""Per-kernel profiles of a profiling build (`xweave.build(..., profile=True)`).

A profiling build's object has one `i64` nanosecond counter per kernel call of `@main`
(the global `xweave_profile`, see `passes.profile_kernels`); its @main records, per
slot, the kernel called and the kernel's float operations. `run_profile` zeroes the
counters, runs the model, reads them back, `repeat` times, and also times each whole
call, so the report shows what the kernels take and what is left outside them (the
call from Python, the instrumentation itself).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from xweave.errors import XweaveError

__all__ = ["Profile", "ProfileError", "ProfileSlot", "run_profile"]


class ProfileError(XweaveError):
    """Profiling was asked of a module that cannot give it."""


@dataclass(frozen=True)
class ProfileSlot:
    """One timed kernel call of @main: the kernel and its float operations (0: unknown)."""

    kernel: str
    flops: int = 0

    def to_json(self) -> dict:
        return {"kernel": self.kernel, "flops": self.flops}

    @staticmethod
    def from_json(d: dict) -> ProfileSlot:
        return ProfileSlot(str(d["kernel"]), int(d.get("flops", 0)))


@dataclass(frozen=True)
class KernelTime:
    """The measured time of one kernel call (or, in `by_kernel`, of every call of a kernel)."""

    index: int
    """Position in call order (in `by_kernel`: the first call's)."""
    kernel: str
    calls: int
    median_ms: float
    percent: float
    """Share of the median whole-model time."""
    flops: int
    """Float operations of all its calls (0: unknown)."""

    @property
    def gflops(self) -> float | None:
        """GFLOP/s at the median time (None when the flops are unknown)."""
        if not self.flops or self.median_ms <= 0:
            return None
        return self.flops / (self.median_ms * 1e-3) / 1e9


@dataclass(frozen=True)
class Profile:
    """Per-call kernel times of `repeat` runs (`samples_ns[run, slot]`) and whole-call times."""

    slots: tuple[ProfileSlot, ...]
    samples_ns: np.ndarray
    total_s: np.ndarray
    """Seconds of each whole call, measured from Python."""

    @property
    def total_ms(self) -> float:
        """Median time of a whole call."""
        return float(np.median(self.total_s) * 1e3)

    @property
    def kernels_ms(self) -> float:
        """Median over runs of the summed kernel times."""
        return float(np.median(self.samples_ns.sum(axis=1)) * 1e-6)

    @property
    def calls(self) -> list[KernelTime]:
        """Every kernel call, in call order."""
        medians = np.median(self.samples_ns, axis=0) * 1e-6
        total = self.total_ms
        return [
            KernelTime(i, s.kernel, 1, float(m), 100.0 * float(m) / total if total else 0.0,
                       s.flops)
            for i, (s, m) in enumerate(zip(self.slots, medians))
        ]

    @property
    def by_kernel(self) -> list[KernelTime]:
        """Calls of the same kernel summed (per run, then the median), slowest first."""
        groups: dict[str, list[int]] = {}
        for i, s in enumerate(self.slots):
            groups.setdefault(s.kernel, []).append(i)
        total = self.total_ms
        rows = []
        for name, idx in groups.items():
            m = float(np.median(self.samples_ns[:, idx].sum(axis=1)) * 1e-6)
            rows.append(KernelTime(idx[0], name, len(idx), m,
                                   100.0 * m / total if total else 0.0,
                                   sum(self.slots[i].flops for i in idx)))
        return sorted(rows, key=lambda r: -r.median_ms)

    def table(self, top: int | None = None) -> str:
        """The report: every call in order, then per kernel sorted by time."""
        lines = [f"{'#':>4}  {'kernel':<44} {'ms':>9} {'%':>6} {'GFLOP/s':>8}"]
        for r in self.calls:
            lines.append(_row(str(r.index), r))
        lines.append("")
        lines.append(f"{'calls':>5} {'kernel (sorted by time)':<44} {'ms':>9} {'%':>6} {'GFLOP/s':>8}")
        for r in self.by_kernel[:top]:
            lines.append(_row(f"{r.calls:>5}", r, width=5))
        other = self.total_ms - self.kernels_ms
        lines.append("")
        lines.append(f"kernels {self.kernels_ms:.3f} ms + outside kernels {other:.3f} ms "
                     f"= whole call {self.total_ms:.3f} ms (medians of "
                     f"{len(self.total_s)} runs)")
        return "\n".join(lines)

    def to_json(self) -> dict:
        return {
            "total_ms": self.total_ms,
            "kernels_ms": self.kernels_ms,
            "calls": [{"index": r.index, "kernel": r.kernel, "median_ms": r.median_ms,
                       "percent": r.percent, "gflops": r.gflops} for r in self.calls],
        }


def _row(first: str, r: KernelTime, width: int = 4) -> str:
    gflops = f"{r.gflops:8.2f}" if r.gflops is not None else f"{'-':>8}"
    name = r.kernel if len(r.kernel) <= 44 else r.kernel[:41] + "..."
    return f"{first:>{width}}  {name:<44} {r.median_ms:9.3f} {r.percent:6.1f} {gflops}"


def run_profile(call: Callable[[], object], counters: np.ndarray,
                slots: Sequence[ProfileSlot], repeat: int) -> Profile:
    """Run `call` once to warm up, then `repeat` times, reading `counters` after each."""
    if repeat < 1:
        raise ProfileError(f"profile: repeat must be at least 1, got {repeat}")
    call()
    samples = np.empty((repeat, len(slots)), np.int64)
    totals = np.empty(repeat)
    for r in range(repeat):
        counters.fill(0)
        start = time.perf_counter()
        call()
        totals[r] = time.perf_counter() - start
        samples[r] = counters
    return Profile(tuple(slots), samples, totals)
