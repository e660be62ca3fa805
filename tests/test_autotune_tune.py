"""The tuning loop end to end: a real JIT-compiled task, early stopping, curves."""

from xweave.autotune import (
    LocalBuilder,
    LocalRunner,
    ModelBasedTuner,
    load_records,
    make_task,
    plot_curves,
    tune,
)


def test_real_matmul_tunes_end_to_end(tmp_path, capsys):
    task = make_task("matmul_ir", M=32, N=32, K=32)
    path = tmp_path / "matmul.jsonl"
    tuner = ModelBasedTuner(task, min_train=4, refit_min=4, rerank_budget_s=0.3, seed=0)
    builder = LocalBuilder(n_parallel=2, timeout=30)
    runner = LocalRunner(min_repeat_ms=5, repeat=3, timeout=30)
    try:
        result = tune(task, tuner=tuner, trials=10, records_path=path, builder=builder,
                      runner=runner, progress=True)
    finally:
        builder.close()
        runner.close()
    records = load_records(path)
    assert len(records) == 10 and result.trials == 10
    assert all(r["result"]["error_no"] == 0 for r in records), \
        [r["result"]["error_msg"] for r in records]
    assert result.best_gflops == max(r["result"]["gflops"] for r in records) > 0
    assert result.best_schedule.startswith('loop-split{loop="matmul.i" factor=')
    assert tuner.fits >= 1 and tuner.feature_type == "itervar"
    assert len(tuner._feature_cache) >= 10  # features of measured points came from the builds
    assert result.curve == sorted(result.curve) and len(result.curve) == 10
    per = result.seconds_per_trial
    assert {"total", "build", "measure", "tuner", "records", "other"} <= set(per)
    assert per["build"] > 0 and per["measure"] > 0
    print(result.summary())
    err = capsys.readouterr().err
    assert "10/10 trials" in err and "GFLOP/s" in err


def test_early_stopping_and_curves(tmp_path):
    task = make_task("synthetic_smooth", seed=5)
    paths = {}
    for name in ("random", "lgbm", "ga"):
        paths[name] = tmp_path / f"{name}.jsonl"
        options = {"features": "knob"} if name == "lgbm" else None
        result = tune(task, tuner=name, trials=120, seed=0, records_path=paths[name],
                      progress=False, tuner_options=options)
        assert result.trials == 120
    stopped = tune(task, tuner="grid", trials=5000, early_stopping=50,
                   records_path=tmp_path / "grid.jsonl", progress=False)
    assert stopped.stop_reason.startswith("early stopping") and stopped.trials < 5000
    out = tmp_path / "curves.png"
    curves = plot_curves(list(paths.values()), out)
    assert out.exists() and out.stat().st_size > 1000
    by_tuner = curves[task.workload_key]
    assert set(by_tuner) == {"random", "lgbm", "ga"}
    for values in by_tuner.values():
        assert len(values) == 120 and values == sorted(values)
    assert by_tuner["lgbm"][-1] >= by_tuner["random"][-1]


def test_the_initial_points_are_measured_first_and_marked_baseline(tmp_path):
    task = make_task("synthetic_smooth", seed=5)
    start = next(iter(task.space))
    path = tmp_path / "records.jsonl"
    tune(task, tuner="random", trials=4, seed=0, records_path=path, progress=False,
         initial_points=[start])
    records = load_records(path)
    assert [r.get("baseline", False) for r in records] == [True, False, False, False]
    assert tuple(records[0]["point"]) == tuple(start)
