"""The accelerators known by name: those registered (`accel.api.register_accelerator`,
by a plug-in when imported) and the built-in ones (`xweave.plugins`, imported when first
named).

The designer API (`accel.api`) is how accelerators are described and registered; this
registry is kept apart from it so that what only asks which accelerators there are, and
for one by name (the dialects and passes `xweave-opt` offers, `context.all_dialects`,
`registry.all_passes`), does not import that API and the tensor expressions it is written
in. Its items are `accel.api.Accelerator`s (not named here: that module imports this one).
"""

from __future__ import annotations

from typing import Any

from xweave import plugins
from xweave.errors import XweaveError


class AcceleratorError(XweaveError):
    """An accelerator, intrinsic or lowering rule was misused (names what and where)."""


ACCELERATORS: plugins.Registry[Any] = plugins.Registry("accelerator", AcceleratorError)
"""Every `accel.api.Accelerator` by name."""
