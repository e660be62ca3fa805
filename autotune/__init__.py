"""Auto-tuning, after AutoTVM: search spaces, itervar features, a LightGBM ranking
cost model, tuners, isolated measurement, records and the tuning loop.

```python
from xweave.autotune import make_task, tune
task = make_task("matmul_ir", M=64, N=64, K=64)
result = tune(task, tuner="lgbm", trials=100, records_path="matmul.jsonl")
```

A model's kernels, tuned over their schedule templates' knobs, and compiled with the
best records:

```python
from xweave.autotune import extract_tasks, tune_model
tasks = extract_tasks("model.onnx")      # one ScheduleTask per kernel with choices
tune_model("model.onnx", "model.jsonl", trials=64)       # = `xweave tune`
module = xweave.build("model.onnx", tuning_records="model.jsonl")
```

Modules: `space` (knobs, points), `task` (the Task protocol, templates), `features`
(itervar features of loop IR, documented in `FEATURES.md`), `cost_model`
(`RankingCostModel`), `search` (tuners), `measure` (builders/runners, error codes),
`tune` (the loop, curves); `kernel_tasks` (tasks from the schedule templates, task
extraction), `templates` (every template by name), `tune_model` (a whole model:
`xweave tune`); `matmul_task` (a real task needing no schedule passes) and `synthetic`
(tasks with known answers). The records files the tuner writes and the compiler reads
are `xweave.records`; the best record per kernel, for compiling, `schedules.tuned`;
workload keys, `schedules.workload`.
"""

from xweave.autotune.cost_model import (
    KnobFeatures,
    RankingCostModel,
    rank_labels,
    spearman,
)
from xweave.autotune.kernel_tasks import ScheduleTask, extract_tasks
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
    register_template,
)
from xweave.autotune.templates import make_task, task_from_spec
from xweave.autotune.tune import (
    TuneResult,
    plot_curves,
    tune,
)
from xweave.autotune.tune_model import tune_model
from xweave.records import (
    RecordWarning,
    RecordWriter,
    best_per_workload,
    load_records,
    pick_best,
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
    "tune", "ScheduleTask", "extract_tasks", "tune_model",
]
