"""VTA's kernel-level accelerator (`accel.api`: ISA dialect, tensor intrinsics, lowering,
simulator), registered on import: all the `vta` dialect, `tensorize` and
`convert-loop-to-vta` need. `xweave.plugins` imports it when the accelerator `vta` is
first named; `plugin.py` imports it too, with the model-level rest."""

from xweave.accel.api import register_accelerator
from xweave.accel.vta.target import VTA_ACCELERATOR

register_accelerator(VTA_ACCELERATOR)
