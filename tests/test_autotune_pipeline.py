"""A template written the way conv2d/dense templates are: a te kernel, a space, and a
schedule as pass-pipeline text applied by `KernelTask.loop_ir`."""

import random

import numpy as np

from xweave import te
from xweave.autotune import (
    InlineRunner,
    KernelTask,
    LocalBuilder,
    Space,
    Task,
    register_template,
    tune,
)
from xweave.autotune.features import analyze


@register_template("test_dense_pipeline")
class DenseTask(KernelTask):
    """out[i, j] = sum_k A[i, k] * B[j, k]."""

    def __init__(self, M: int = 16, N: int = 32, K: int = 32):
        super().__init__(M=M, N=N, K=K)
        self.flops = 2.0 * M * N * K

    def te_kernel(self):
        M, N, K = (self.args[k] for k in "MNK")
        A = te.placeholder((M, K), "float32", name="A")
        B = te.placeholder((N, K), "float32", name="B")
        k = te.reduce_axis(K, name="k")
        C = te.compute((M, N), lambda i, j: te.sum(A[i, k] * B[j, k], axis=k), name="dense")
        return te.create_kernel("dense", [A, B], [C])

    def define_space(self) -> Space:
        space = Space()
        space.split("tile_j", self.args["N"], parts=2, max_factor=16)
        space.split("tile_k", self.args["K"], parts=2, max_factor=16)
        space.knob("inner", ["jk", "kj"])
        return space

    def schedule(self, point) -> str:
        c = self.space.config(point)
        inner = '"dense.j.inner","dense.k.inner"' if c["inner"] == "jk" \
            else '"dense.k.inner","dense.j.inner"'
        return ",".join([
            f'loop-split{{loop="dense.j" factor={c["tile_j"][1]}}}',
            f'loop-split{{loop="dense.k" factor={c["tile_k"][1]}}}',
            f'loop-reorder{{order="dense.i","dense.j.outer","dense.k.outer",{inner}}}',
        ])

    def reference(self, inputs):
        a, b = inputs
        return [a.astype(np.float64) @ b.astype(np.float64).T]


def test_pipeline_template_builds_features_and_tunes(tmp_path):
    task = DenseTask()
    assert isinstance(task, Task)
    point = task.space.point_of({"tile_j": (4, 8), "tile_k": (8, 4), "inner": "kj"})
    info = analyze(task.loop_ir(point))
    names = [l.name for l in info.loops]
    assert names[-5:] == ["dense.i", "dense.j.outer", "dense.k.outer", "dense.k.inner",
                          "dense.j.inner"]
    assert task.input_specs() == [((16, 32), "float32"), ((32, 32), "float32")]
    result = tune(task, tuner="random", trials=4, seed=0, records_path=tmp_path / "d.jsonl",
                  builder=LocalBuilder(n_parallel=0), runner=InlineRunner(min_repeat_ms=2),
                  progress=False)
    assert result.trials == 4 and not any(k for k in result.errors if k)
    assert result.best_gflops > 0
    assert result.best_schedule.startswith('loop-split{loop="dense.j"')
    assert len(task.space.sample(3, random.Random(0))) == 3
