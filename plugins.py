"""Accelerators shipped with xweave, loaded on first use by name.

An accelerator is a plug-in: one module that, when imported, registers everything it
brings — its kernel-level `accel.api.Accelerator` (dialect, intrinsics, lowering,
simulator), its model-level `pipeline.OffloadTarget` and its layer loader
(`runtime.hetero.register_layer_loader`). A plug-in outside xweave is imported by its
user (`import examples.gemm8x8`, `xweave-opt --load-plugin`); the built-in ones below are
imported when a registry is first asked for their name, so that naming `vta` works
without importing it and the core never imports an accelerator.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass


@dataclass(frozen=True)
class BuiltinPlugin:
    """Where a built-in accelerator registers itself, and what it provides by name (so
    that `xweave-opt` can offer its dialect and passes before importing it)."""

    module: str
    dialects: tuple[str, ...] = ()
    passes: tuple[str, ...] = ()


BUILTIN: dict[str, BuiltinPlugin] = {
    "vta": BuiltinPlugin("xweave.accel.vta.plugin", dialects=("vta",),
                         passes=("convert-loop-to-vta",)),
}


def load(name: str) -> bool:
    """Import the built-in plug-in `name` (it registers itself); False if there is none."""
    plugin = BUILTIN.get(name)
    if plugin is None:
        return False
    importlib.import_module(plugin.module)  # lazy by design: a plug-in is loaded by name
    return True
