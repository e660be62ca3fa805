"""The CPU the schedule templates size their register blocks for.

The CPU backend compiles for the host (LLVM's host CPU name and features), so the
templates size their register blocks for the host too: 8-lane f32 vectors (ymm) in all
cases, of which an AVX2 machine has 16 and an AVX-512 machine 32 (AVX-512VL encodes
ymm16-ymm31 as well). `XWEAVE_VECTOR_REGISTERS` overrides the detected count, so that a
schedule can be reproduced for another machine (and tests do not depend on the host).
"""

from __future__ import annotations

import functools
import os

from xweave.errors import XweaveError

ENV = "XWEAVE_VECTOR_REGISTERS"


@functools.cache
def vector_registers() -> int:
    """8-lane vector registers of the target CPU: 32 with AVX-512VL, else 16."""
    forced = os.environ.get(ENV)
    if forced is not None:
        if forced not in ("16", "32"):
            raise XweaveError(f"{ENV}={forced!r}: expected 16 or 32")
        return int(forced)
    import llvmlite.binding as llvm

    try:
        features = llvm.get_host_cpu_features()
    except RuntimeError:  # no feature list for this host: assume the smaller file
        return 16
    return 32 if features.get("avx512vl") else 16
