"""VTA as a plug-in: imported (by `xweave.plugins`) when `vta` is first named, it
registers the kernel-level accelerator (`accel.api`: dialect, intrinsics, lowering,
simulator), the model-level target (`pipeline.OffloadTarget`: `xweave.build(...,
target="vta")`) and the loader of its layers in exported modules."""

from xweave.accel.api import register_accelerator
from xweave.accel.vta.offload import VTA_TARGET, VtaLayer
from xweave.accel.vta.target import VTA_ACCELERATOR
from xweave.pipeline import register_target
from xweave.runtime.hetero import register_layer_loader

register_accelerator(VTA_ACCELERATOR)
register_target(VTA_TARGET)
register_layer_loader(VTA_TARGET.name, VtaLayer)
