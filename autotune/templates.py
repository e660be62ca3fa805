"""The tuning templates by name: the built-in ones (`schedule`: a kernel of a model over
its schedule template's knobs; `matmul_ir`; the synthetic tasks) and any registered
with `task.register_template`, and how a task is made from a name and arguments."""

from __future__ import annotations

import xweave.autotune.kernel_tasks  # noqa: F401  (registers "schedule")
import xweave.autotune.matmul_task  # noqa: F401  (registers "matmul_ir")
import xweave.autotune.synthetic  # noqa: F401  (registers the synthetic tasks)
from xweave.autotune.task import TEMPLATES, Task


def make_task(template: str, **args) -> Task:
    """The task of a registered template for the given workload arguments."""
    if template not in TEMPLATES:
        raise KeyError(f"no tuning template {template!r}; registered: {sorted(TEMPLATES)}")
    return TEMPLATES[template](**args)


def task_from_spec(spec: dict) -> Task:
    """Rebuild a task from `task.spec()` (as stored in records)."""
    return make_task(spec["template"], **spec.get("args", {}))
