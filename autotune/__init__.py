"""Auto-tuning, after AutoTVM: search spaces, itervar features, a LightGBM ranking
cost model, tuners, isolated measurement, records and the tuning loop.

```python
from xweave.autotune import make_task, tune
task = make_task("matmul_ir", M=64, N=64, K=64)
result = tune(task, tuner="lgbm", trials=100, records_path="matmul.jsonl")
```

Modules: `space` (knobs, points), `task` (the Task protocol, templates), `features`
(itervar features of loop IR, documented in `FEATURES.md`), `cost_model`
(`RankingCostModel`), `search` (tuners), `measure` (builders/runners, error codes),
`records` (JSON-lines logs), `tune` (the loop, curves); `matmul_task` (a real task
needing no schedule passes) and `synthetic` (tasks with known answers).
"""

from xweave.autotune.cost_model import (
    KnobFeatures,
    RankingCostModel,
    rank_labels,
    spearman,
)
from xweave.autotune.measure import (
    BuildResult,
    InlineRunner,
    LocalBuilder,
    LocalRunner,
    MeasureErrorNo,
    MeasureResult,
    SimulatedRunner,
    measure_points,
)
from xweave.autotune.records import (
    RecordWarning,
    RecordWriter,
    best_per_workload,
    load_records,
    pick_best,
)
from xweave.autotune.search import (
    GATuner,
    GridTuner,
    ModelBasedTuner,
    RandomTuner,
    SimulatedAnnealingOptimizer,
    Tuner,
    make_tuner,
)
from xweave.autotune.space import (
    Knob,
    Point,
    Space,
    split_candidates,
)
from xweave.autotune.task import (
    Candidate,
    InstantiationError,
    JitCandidate,
    KernelTask,
    SimulatedCandidate,
    TEMPLATES,
    Task,
    TemplateTask,
    WrongAnswerError,
    make_task,
    register_template,
    task_from_spec,
)
from xweave.autotune.tune import (
    TuneResult,
    plot_curves,
    tune,
)

__all__ = [
    "TEMPLATES", "BuildResult", "Candidate", "GATuner", "GridTuner", "InlineRunner",
    "InstantiationError", "JitCandidate", "KernelTask", "Knob", "KnobFeatures",
    "LocalBuilder", "LocalRunner", "MeasureErrorNo", "MeasureResult", "ModelBasedTuner",
    "Point", "RandomTuner", "RankingCostModel", "RecordWarning", "RecordWriter",
    "SimulatedAnnealingOptimizer", "SimulatedCandidate", "SimulatedRunner", "Space", "Task",
    "TemplateTask", "TuneResult", "Tuner", "WrongAnswerError", "best_per_workload",
    "load_records", "make_task", "make_tuner", "measure_points", "pick_best", "plot_curves",
    "rank_labels", "register_template", "spearman", "split_candidates", "task_from_spec",
    "tune",
]
