"""The VTA-like accelerator's hardware configuration (after TVM's `vta_config.json`).

A `HardwareConfig` fixes the GEMM core shape, the data widths, the scratchpad sizes and
the parameters of the timing model. Everything else is derived from it: element
("tensor register") sizes, scratchpad depths, and the index widths that the ISA's
fields follow (`log2(depth)` bits each; see `accel/vta/encoding.py`). The default
matches TVM's default VTA (HW_VER 0.0.2): a 1x16x16 int8 GEMM core with int32
accumulators, 32 KiB micro-op / 32 KiB input / 256 KiB weight / 128 KiB accumulator
scratchpads.

The config round-trips through a plain dict (and so JSON):

    >>> HardwareConfig.from_dict(DEFAULT.to_dict()) == DEFAULT
    True
    >>> HardwareConfig.from_dict({"block_in": 32}).inp_depth
    1024
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from typing import Any, ClassVar

#: The scratchpads, by the names the ISA's memory-type field uses. `out` is the view of
#: the accumulator scratchpad that STORE reads (each int32 lane narrowed to out_bits).
MEMORIES = ("uop", "wgt", "inp", "acc", "out")


def _is_pow2(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


def _log2(n: int) -> int:
    return n.bit_length() - 1


class _PerMemory:
    """A read-only attribute of a config that is one of its per-scratchpad methods applied
    to one scratchpad, e.g. `inp_depth` = `depth("inp")`."""

    def __init__(self, method: str, mem: str):
        self.method, self.mem = method, mem
        self.__doc__ = f'`{method}("{mem}")`.'

    def __get__(self, config: HardwareConfig | None, owner: type | None = None) -> int:
        if config is None:
            return self  # type: ignore[return-value]  # looked up on the class (docs, help)
        return getattr(config, self.method)(self.mem)


@dataclass(frozen=True)
class HardwareConfig:
    """One accelerator instance: GEMM shape, widths, scratchpads and timing parameters."""

    # --- compute core: (batch x block_in) . (block_in x block_out)^T per cycle ----------
    batch: int = 1
    block_in: int = 16
    block_out: int = 16

    # --- data widths in bits ---------------------------------------------------------
    inp_bits: int = 8
    wgt_bits: int = 8
    acc_bits: int = 32
    out_bits: int = 8

    # --- scratchpad sizes in bytes ------------------------------------------------------
    uop_buffer_bytes: int = 32 * 1024
    inp_buffer_bytes: int = 32 * 1024
    wgt_buffer_bytes: int = 256 * 1024
    acc_buffer_bytes: int = 128 * 1024

    # --- timing model (cycles of the accelerator clock) ----------------------------------
    clock_mhz: float = 200.0
    """Accelerator clock; the paper's PYNQ prototype runs at 200 MHz. Converts cycles to time."""
    dram_bytes_per_cycle: int = 8
    """DMA bandwidth: one 64-bit AXI beat per cycle (the Zynq HP port of the PYNQ board)."""
    dram_latency_cycles: int = 64
    """Cycles from issuing a DMA request to its first data beat, paid once per LOAD/STORE."""
    dma_row_overhead_cycles: int = 2
    """Extra cycles per 2-D row of a LOAD/STORE (each row is a separate burst)."""
    insn_overhead_cycles: int = 2
    """Dequeue + decode cost every instruction pays in its module (incl. token pops/pushes)."""
    gemm_pipeline_cycles: int = 4
    """Pipeline fill/drain of the GEMM core, paid once per GEMM instruction."""
    gemm_cycles_per_uop: int = 1
    """Initiation interval of the GEMM core: one micro-op (one tensor product) per cycle."""
    alu_pipeline_cycles: int = 4
    """Pipeline fill/drain of the tensor ALU, paid once per ALU instruction."""
    alu_cycles_per_uop: int = 2
    """Initiation interval of the tensor ALU: it reads two accumulator tensors per uop."""

    # --- ISA constants (TVM's hw_spec.h; fixed by the instruction format, not the config) --
    insn_bits: ClassVar[int] = 128
    uop_bits: ClassVar[int] = 32
    opcode_bits: ClassVar[int] = 3
    memory_type_bits: ClassVar[int] = 3
    alu_opcode_bits: ClassVar[int] = 3
    loop_iter_bits: ClassVar[int] = 14
    sram_addr_bits: ClassVar[int] = 16
    dram_addr_bits: ClassVar[int] = 32
    size_bits: ClassVar[int] = 16
    stride_bits: ClassVar[int] = 16
    pad_bits: ClassVar[int] = 4
    alu_imm_bits: ClassVar[int] = 16
    mul_arg_bits: ClassVar[int] = 8

    _POW2_FIELDS: ClassVar[tuple[str, ...]] = (
        "batch", "block_in", "block_out", "inp_bits", "wgt_bits", "acc_bits", "out_bits",
        "uop_buffer_bytes", "inp_buffer_bytes", "wgt_buffer_bytes", "acc_buffer_bytes",
    )

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ValueError(f"HardwareConfig.{f.name} must be a number, got {value!r}")
            if f.name in self._POW2_FIELDS and not (isinstance(value, int) and _is_pow2(value)):
                raise ValueError(f"HardwareConfig.{f.name} must be a power of two, got {value!r}")
            if f.name.endswith("_cycles") and value < 0:
                raise ValueError(f"HardwareConfig.{f.name} must be non-negative, got {value!r}")
            if not f.name.endswith("_cycles") and value <= 0:
                raise ValueError(f"HardwareConfig.{f.name} must be positive, got {value!r}")
        for mem in ("inp", "wgt", "acc", "out"):
            if self.elem_bits(mem) % 8:
                raise ValueError(f"a {mem} element of {self.elem_bits(mem)} bits is not whole bytes")
        for mem in ("uop", "inp", "wgt", "acc"):
            if getattr(self, f"{mem}_buffer_bytes") < self.elem_bytes(mem):
                raise ValueError(f"the {mem} scratchpad is smaller than one {mem} element")
        used = self.uop_dst_bits + self.uop_src_bits + self.uop_wgt_bits
        if used > self.uop_bits:
            raise ValueError(
                f"micro-op indices need {used} bits (dst {self.uop_dst_bits}, src "
                f"{self.uop_src_bits}, wgt {self.uop_wgt_bits}), more than {self.uop_bits}"
            )

    # --- element ("tensor register") sizes ---------------------------------------------
    def elem_bits(self, mem: str) -> int:
        """Bits of one element of scratchpad `mem` (one of MEMORIES)."""
        if mem == "uop":
            return self.uop_bits
        if mem == "inp":
            return self.batch * self.block_in * self.inp_bits
        if mem == "wgt":
            return self.block_out * self.block_in * self.wgt_bits
        if mem == "acc":
            return self.batch * self.block_out * self.acc_bits
        if mem == "out":
            return self.batch * self.block_out * self.out_bits
        raise ValueError(f"unknown memory {mem!r}; expected one of {', '.join(MEMORIES)}")

    def elem_bytes(self, mem: str) -> int:
        """Bytes of one element of scratchpad `mem`; DRAM addresses of `mem` count these."""
        return self.elem_bits(mem) // 8

    def depth(self, mem: str) -> int:
        """Elements scratchpad `mem` holds (`out` shares the accumulator's depth)."""
        if mem == "out":
            mem = "acc"
        if mem not in MEMORIES:
            raise ValueError(f"unknown memory {mem!r}; expected one of {', '.join(MEMORIES)}")
        return getattr(self, f"{mem}_buffer_bytes") // self.elem_bytes(mem)

    def index_bits(self, mem: str) -> int:
        """Bits of an index into scratchpad `mem`: log2 of its depth."""
        return _log2(self.depth(mem))

    # Shorthands: `inp_elem_bytes` is `elem_bytes("inp")`, `acc_depth` is `depth("acc")`,
    # `log_wgt_depth` (an index field's width) is `index_bits("wgt")`.
    uop_elem_bytes = _PerMemory("elem_bytes", "uop")
    inp_elem_bytes = _PerMemory("elem_bytes", "inp")
    wgt_elem_bytes = _PerMemory("elem_bytes", "wgt")
    acc_elem_bytes = _PerMemory("elem_bytes", "acc")
    out_elem_bytes = _PerMemory("elem_bytes", "out")
    uop_depth = _PerMemory("depth", "uop")
    inp_depth = _PerMemory("depth", "inp")
    wgt_depth = _PerMemory("depth", "wgt")
    acc_depth = _PerMemory("depth", "acc")
    out_depth = _PerMemory("depth", "out")
    log_uop_depth = _PerMemory("index_bits", "uop")
    log_inp_depth = _PerMemory("index_bits", "inp")
    log_wgt_depth = _PerMemory("index_bits", "wgt")
    log_acc_depth = _PerMemory("index_bits", "acc")

    @property
    def insn_bytes(self) -> int:
        return self.insn_bits // 8

    # --- ISA field widths that follow the config ------------------------------------------
    @property
    def uop_bgn_bits(self) -> int:
        """GEMM/ALU `uop_bgn`: an index into the micro-op scratchpad."""
        return self.log_uop_depth

    @property
    def uop_end_bits(self) -> int:
        """GEMM/ALU `uop_end` is exclusive, so it needs one more bit (it may equal the depth)."""
        return self.log_uop_depth + 1

    @property
    def uop_dst_bits(self) -> int:
        """Micro-op destination: an accumulator index."""
        return self.log_acc_depth

    @property
    def uop_src_bits(self) -> int:
        """Micro-op source: an input index (GEMM) or accumulator index (ALU)."""
        return max(self.log_inp_depth, self.log_acc_depth)

    @property
    def uop_wgt_bits(self) -> int:
        """Micro-op weight: a weight index."""
        return self.log_wgt_depth

    @property
    def shr_arg_bits(self) -> int:
        """Signed width of the SHR amount: log2 of the accumulator width (5 for int32)."""
        return _log2(self.acc_bits)

    @property
    def macs_per_cycle(self) -> int:
        """Multiply-accumulates the GEMM core does per cycle (256 by default)."""
        return self.batch * self.block_in * self.block_out

    # --- (de)serialization --------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """The configurable fields as a plain (JSON-able) dict."""
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> HardwareConfig:
        """Build a config from a dict; missing fields take their defaults."""
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(
                f"unknown HardwareConfig field(s): {', '.join(unknown)}; "
                f"known fields: {', '.join(sorted(known))}"
            )
        return cls(**data)

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    @classmethod
    def from_json(cls, text: str) -> HardwareConfig:
        data = json.loads(text)
        if not isinstance(data, dict):
            raise ValueError("a HardwareConfig JSON document must be an object")
        return cls.from_dict(data)

    def replace(self, **changes: Any) -> HardwareConfig:
        """A copy with some fields changed."""
        return dataclasses.replace(self, **changes)


DEFAULT = HardwareConfig()
"""TVM's default VTA configuration (1x16x16 int8 GEMM, int32 accumulators)."""
