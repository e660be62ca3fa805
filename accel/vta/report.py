"""What a simulated VTA run measured: cycles per module, utilization, bytes moved,
and the timeline of every instruction (drawn by `timeline.plot_timeline`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from xweave.accel.vta.config import HardwareConfig

MODULES: tuple[str, ...] = ("load", "compute", "store")
"""The three executing modules, in pipeline order."""

TOKEN_QUEUES: tuple[str, ...] = ("load->compute", "compute->load", "compute->store", "store->compute")
"""The four dependency-token FIFOs."""

DEFAULT_TOKEN_QUEUE_DEPTH = 8
"""Tokens a dependency FIFO holds (STREAM_IN_DEPTH of TVM's HLS VTA)."""


@dataclass(frozen=True)
class TimelineEntry:
    """One executed instruction: where and when it ran."""

    index: int
    module: str
    kind: str
    start: int
    end: int
    text: str

    @property
    def duration(self) -> int:
        return self.end - self.start


@dataclass
class SimReport:
    """What a run measured. Cycle counts are accelerator cycles (`config.clock_mhz`)."""

    config: HardwareConfig
    total_cycles: int
    busy_cycles: dict[str, int]
    """Cycles each module spent executing instructions."""
    stall_cycles: dict[str, int]
    """Cycles each module sat idle with an instruction waiting for tokens."""
    instruction_counts: dict[str, int]
    """Executed instructions by kind (load.inp, load.wgt, load.uop, load.acc, store, gemm,
    gemm.reset, alu.<op>, sync (x_size 0 LOAD/STORE), finish)."""
    module_instruction_counts: dict[str, int]
    bytes_moved: dict[str, int]
    """DRAM bytes moved per memory type: inp/wgt/acc/uop loaded, out stored (no padding)."""
    gemm_counter: int
    """Tensor products of non-reset GEMMs (sum of iter_out*iter_in*#uops), as VTA's profiler."""
    alu_counter: int
    """Lane-vector operations of non-reset ALU instructions (iter_out*iter_in*#uops)."""
    timeline: list[TimelineEntry]
    token_queue_depth: int
    max_tokens: dict[str, int]
    """The most tokens each queue held at once."""
    unfinished: tuple[int, ...] = ()
    """Instructions not completed when FINISH completed (a missing synchronization)."""
    warnings: tuple[str, ...] = ()

    @property
    def mac_count(self) -> int:
        return self.gemm_counter * self.config.macs_per_cycle

    @property
    def compute_utilization(self) -> float:
        """GEMM MAC-cycles over total cycles: the fraction of the GEMM core's peak achieved."""
        return self.gemm_counter / self.total_cycles if self.total_cycles else 0.0

    @property
    def module_utilization(self) -> dict[str, float]:
        t = self.total_cycles or 1
        return {m: b / t for m, b in self.busy_cycles.items()}

    @property
    def seconds(self) -> float:
        return self.total_cycles / (self.config.clock_mhz * 1e6)

    @property
    def gops(self) -> float:
        """Achieved int8 GOPS (2 ops per MAC) at the config's clock."""
        return 2 * self.mac_count / self.seconds / 1e9 if self.total_cycles else 0.0

    def profiler_status(self) -> dict[str, int]:
        """The counters of VTA's `vta.simulator.profiler_status`, plus tsim's cycle_count."""
        b = self.bytes_moved
        return {
            "inp_load_nbytes": b["inp"],
            "wgt_load_nbytes": b["wgt"],
            "acc_load_nbytes": b["acc"],
            "uop_load_nbytes": b["uop"],
            "out_store_nbytes": b["out"],
            "gemm_counter": self.gemm_counter,
            "alu_counter": self.alu_counter,
            "cycle_count": self.total_cycles,
        }

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able summary (without the timeline)."""
        return {
            "total_cycles": self.total_cycles,
            "busy_cycles": dict(self.busy_cycles),
            "stall_cycles": dict(self.stall_cycles),
            "compute_utilization": self.compute_utilization,
            "instruction_counts": dict(self.instruction_counts),
            "module_instruction_counts": dict(self.module_instruction_counts),
            "bytes_moved": dict(self.bytes_moved),
            "gemm_counter": self.gemm_counter,
            "alu_counter": self.alu_counter,
            "max_tokens": dict(self.max_tokens),
            "token_queue_depth": self.token_queue_depth,
            "unfinished": list(self.unfinished),
            "warnings": list(self.warnings),
        }

    def summary(self) -> str:
        lines = [
            f"total cycles      {self.total_cycles} ({self.seconds * 1e6:.2f} us at {self.config.clock_mhz:g} MHz)",
            f"compute util.     {self.compute_utilization:.1%} (gemm_counter {self.gemm_counter}, "
            f"alu_counter {self.alu_counter})",
        ]
        for m in MODULES:
            lines.append(
                f"{m:<8} busy {self.busy_cycles[m]:>8}  stalled {self.stall_cycles[m]:>8}  "
                f"insns {self.module_instruction_counts[m]}"
            )
        lines.append("bytes " + ", ".join(f"{k} {v}" for k, v in self.bytes_moved.items()))
        lines.extend(f"warning: {w}" for w in self.warnings)
        return "\n".join(lines)
