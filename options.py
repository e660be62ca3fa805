"""What decides how a model is compiled (`CompileOptions`), in a module of its own: the
driver keys the compile cache by it before, and on a cache hit without, loading the
compiler."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from xweave.errors import XweaveError
from xweave.target import Target

SCHEDULE_MODES = ("default", "model", "measure")
"""How a build chooses each kernel's schedule: its template's default configuration,
the shipped ranking model's best, or the fastest measured on this machine (see
`autotune.select`)."""

SCHEDULE_ENV = "XWEAVE_SCHEDULE"
"""Environment variable: the schedule mode of builds that name none (default: default)."""

def schedule_mode(mode: str | None) -> str:
    """`mode` (None: `$XWEAVE_SCHEDULE`, else "default"), refused unless a known mode."""
    if mode is None:
        mode = os.environ.get(SCHEDULE_ENV, "").strip() or "default"
    if mode not in SCHEDULE_MODES:
        raise XweaveError(f"unknown schedule mode '{mode}' (known: {', '.join(SCHEDULE_MODES)})")
    return mode


DUMP_ELIDE_LARGER_THAN = 1024
"""`--dump-ir` files leave out resource blobs (weights) of more bytes than this by
default (`--elide-resources-larger-than`; 0 keeps them all)."""


@dataclass(frozen=True)
class CompileOptions:
    """Everything that decides how a model is compiled, in one object that travels from
    the driver to the tuner, the dumps and the accelerators.

    `target`: what code is generated for (None: the module's own `xweave.target`, else
    the default target); `fuse=False` leaves out operator fusion (one kernel per graph
    op); `layout=False` leaves out the layout stage (every conv stays NCHW);
    `winograd=False` leaves out the winograd stage; `profile=True` times every kernel
    call of @main (`passes.profile_kernels`); `tuning_records`: a records file whose
    best schedules replace the defaults, `any_target_records=True` also applies records
    tuned for another target; `accelerator`: the options of an accelerator target
    (e.g. VTA's `config`, `virtual_threads`, `min_in_channels`, `calibration`);
    `schedule`: how each kernel's schedule is chosen (`SCHEDULE_MODES`, see
    `autotune.select`).
    """

    target: Target | None = None
    fuse: bool = True
    layout: bool = True
    winograd: bool = True
    profile: bool = False
    tuning_records: str | None = None
    any_target_records: bool = False
    accelerator: Mapping[str, Any] = field(default_factory=dict)
    schedule: str = "default"

    def replace(self, **changes: Any) -> CompileOptions:
        """A copy with `changes` (`dataclasses.replace`)."""
        return dataclasses.replace(self, **changes)
