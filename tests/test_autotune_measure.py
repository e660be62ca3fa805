"""Measurement isolation: crashing, hanging and wrong candidates get their error codes,
and tuning goes on."""

import numpy as np

from xweave.autotune import (
    InlineRunner,
    LocalBuilder,
    LocalRunner,
    MeasureErrorNo,
    load_records,
    make_task,
    tune,
)
from xweave.autotune.matmul_task import naive_point
from xweave.autotune.measure import time_candidate
from xweave.autotune.synthetic import BEHAVIORS

EXPECTED = {
    "ok": MeasureErrorNo.NO_ERROR,
    "segfault": MeasureErrorNo.RUNTIME_DEVICE,
    "hang": MeasureErrorNo.RUN_TIMEOUT,
    "wrong": MeasureErrorNo.WRONG_ANSWER,
    "raise": MeasureErrorNo.RUNTIME_DEVICE,
    "build_error": MeasureErrorNo.COMPILE_HOST,
    "build_hang": MeasureErrorNo.BUILD_TIMEOUT,
    "invalid": MeasureErrorNo.INSTANTIATION_ERROR,
    "build_crash": MeasureErrorNo.COMPILE_HOST,
}


def test_faulty_candidates_are_isolated_with_error_codes(tmp_path):
    task = make_task("synthetic_faulty")
    assert set(BEHAVIORS) == set(EXPECTED)
    path = tmp_path / "faulty.jsonl"
    builder = LocalBuilder(n_parallel=2, timeout=1.0)
    runner = LocalRunner(timeout=1.5, min_repeat_ms=2, repeat=3)
    try:
        # the grid visits every behavior in order; "ok" comes first, and once more after
        # the crashes and timeouts (the processes were restarted)
        result = tune(task, tuner="grid", trials=len(BEHAVIORS), records_path=path,
                      builder=builder, runner=runner, progress=False)
        again = runner.run(task, builder.build(task, [task.point("ok")]))
    finally:
        builder.close()
        runner.close()
    assert result.trials == len(BEHAVIORS)
    records = load_records(path)
    got = {r["config"]["behavior"]: r["result"]["error_no"] for r in records}
    assert got == {b: int(code) for b, code in EXPECTED.items()}
    messages = {r["config"]["behavior"]: r["result"]["error_msg"] for r in records}
    assert "SIGSEGV" in messages["segfault"] and "SIGSEGV" in messages["build_crash"]
    assert "timed out" in messages["hang"] and "timed out" in messages["build_hang"]
    assert "reference" in messages["wrong"]
    ok = next(r for r in records if r["config"]["behavior"] == "ok")
    assert ok["result"]["gflops"] > 0 and len(ok["result"]["costs"]) == 1  # 3 repeats - min - max
    assert again[0].ok and again[0].gflops > 0
    assert result.best_config == {"behavior": "ok"}
    assert result.errors[0] == 1 and sum(result.errors.values()) == len(BEHAVIORS)


def test_real_candidate_timing_and_check():
    task = make_task("matmul_ir", M=32, N=32, K=32)
    point = naive_point(task)
    candidate = task.build(point)
    assert candidate.features is not None and candidate.features.shape[0] > 100
    timing = time_candidate(candidate, repeat=4, min_repeat_ms=5)
    assert timing.error_no == 0 and len(timing.costs) == 2 and timing.number >= 1
    assert timing.number > 1  # raised until a repeat lasts about min_repeat_ms
    np.testing.assert_allclose(candidate.outputs()[0],
                               task.reference(candidate._arrays[:2])[0], rtol=1e-4, atol=1e-4)
    (res,) = InlineRunner(min_repeat_ms=2, repeat=3).run(task, [
        LocalBuilder(n_parallel=0).build(task, [point])[0]])
    assert res.ok and res.gflops > 0.1
