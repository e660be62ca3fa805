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
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Generic, TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class BuiltinPlugin:
    """Where a built-in accelerator registers itself, and what it provides by name (so
    that `xweave-opt` can offer its dialect and passes before importing it)."""

    module: str
    dialects: tuple[str, ...] = ()
    passes: tuple[str, ...] = ()
    parts: Mapping[str, str] = field(default_factory=dict)
    """Modules that register the items of one registry alone, by its kind: an
    "accelerator" (what `xweave-opt`'s passes and dialects need) without the model-level
    target and the compiler that imports (a second of every `xweave-opt` start-up)."""


BUILTIN: dict[str, BuiltinPlugin] = {
    "vta": BuiltinPlugin("xweave.accel.vta.plugin", dialects=("vta",),
                         passes=("convert-loop-to-vta",),
                         parts={"accelerator": "xweave.accel.vta.accelerator"}),
}


def load(name: str, kind: str | None = None) -> bool:
    """Import the built-in plug-in `name` (it registers itself), or only its part that
    registers the items of `kind` if it has one; False if there is none."""
    plugin = BUILTIN.get(name)
    if plugin is None:
        return False
    # lazy by design: a plug-in is loaded by name
    importlib.import_module(plugin.parts.get(kind or "", plugin.module))
    return True


class Registry(Generic[T]):
    """Plug-ins' items by name: those registered, and those of the built-in plug-ins
    (imported when their name is first looked up)."""

    def __init__(self, kind: str, error: type[Exception], served_elsewhere: str = ""):
        self.kind = kind
        """What an item is ("accelerator"), for messages."""
        self.error = error
        """The exception raised for a name taken twice or unknown."""
        self.served_elsewhere = served_elsewhere
        """Names valid where this registry is asked but not held in it ("llvm"), listed
        first among the known ones in the error for an unknown name."""
        self._items: dict[str, T] = {}

    def register(self, name: str, item: T, replace: bool = False) -> T:
        """Make `item` known as `name`; another item of that name is an error unless
        `replace`."""
        if name in self._items and not replace and self._items[name] is not item:
            raise self.error(f"{self.kind} '{name}' is already registered")
        self._items[name] = item
        return item

    def lookup(self, name: str) -> T | None:
        """The item `name` (a built-in plug-in's is imported first), or None."""
        if name not in self._items:
            load(name, self.kind)
        return self._items.get(name)

    def get(self, name: str) -> T:
        """The item `name` (see `lookup`); an unknown name is an error listing the known."""
        item = self.lookup(name)
        if item is None:
            known = ", ".join(n for n in (self.served_elsewhere, *self.names()) if n)
            raise self.error(f"unknown {self.kind} '{name}' (known: {known}; a plug-in "
                             "registers its own when imported)")
        return item

    def registered(self) -> list[T]:
        """The items registered so far (a built-in plug-in's only once loaded)."""
        return list(self._items.values())

    def names(self) -> list[str]:
        """Every name: registered, or of a built-in plug-in (loaded on first use)."""
        return sorted(set(self._items) | set(BUILTIN))
