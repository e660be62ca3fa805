"""VTA as a plug-in: imported (by `xweave.plugins`) when `vta` is first named as a
target, it registers the kernel-level accelerator (`accelerator.py`, imported alone
where only the accelerator is named: `accel.api`: dialect, intrinsics, lowering,
simulator), the model-level target (`pipeline.OffloadTarget`: `xweave.build(...,
target="vta")`) and the loader of its layers in exported modules."""

from xweave.accel.vta import accelerator  # noqa: F401  (registers the accelerator)
from xweave.accel.vta.offload import VTA_TARGET, VtaLayer
from xweave.pipeline import register_target
from xweave.runtime.hetero import register_layer_loader

register_target(VTA_TARGET)
register_layer_loader(VTA_TARGET.name, VtaLayer)
