"""A VTA-like tensor accelerator, plugged into xweave through the designer API as any
accelerator is (`plugin.py` registers it): its hardware config (`config`), ISA dialect
(`dialect`) and encoding (`encoding`), the lowering of tensorized loops to its ISA
(`lowering`), the simulator (`simulator`, `timeline`), conv2d/dense layers (`layers`,
`conv_schedule`) and whole models (`offload`)."""

from xweave.accel.vta.config import DEFAULT, HardwareConfig

__all__ = ["DEFAULT", "HardwareConfig"]
