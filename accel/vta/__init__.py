"""A VTA-like tensor accelerator: hardware config, ISA encoding (the `vta` dialect is in
`xweave.dialects.vta`)."""

from xweave.accel.vta.config import DEFAULT, HardwareConfig

__all__ = ["DEFAULT", "HardwareConfig"]
