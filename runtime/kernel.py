"""One compiled kernel loaded into this process: its code, its constants bound, and the
arenas its temporaries live in (`pipeline.compile_kernel` makes what it loads)."""

from __future__ import annotations

import ctypes
from collections.abc import Mapping

import numpy as np

from xweave.runtime.arena import CallStatePool
from xweave.runtime.jit import Engine, load_object


class LoadedKernel:
    """`kernel(*pointers)` calls the kernel on the addresses of its arguments (inputs,
    then outputs), adding an arena of `arena_bytes` from a pool (one per call in
    flight; allocated once, not per call) when the kernel has temporaries."""

    def __init__(self, object_bytes: bytes, name: str, num_args: int,
                 params: Mapping[str, np.ndarray] | None = None, arena_bytes: int = 0):
        self.name = name
        self.engine: Engine = load_object(object_bytes, params)
        self.pool = CallStatePool([arena_bytes] if arena_bytes else [])
        self.function = self.engine.get_function(
            name, [ctypes.c_void_p] * (num_args + len(self.pool.sizes)))
        """The raw function: the arguments' addresses, then a call state's `pointers`."""

    def __call__(self, *pointers: int) -> None:
        state = self.pool.take()
        try:
            self.function(*pointers, *state.pointers)
        finally:
            self.pool.give(state)
