"""The LightGBM ranking model and the tuners, on synthetic tasks with known answers."""

import random

import numpy as np
import pytest

from xweave.autotune import (
    GATuner,
    GridTuner,
    KnobFeatures,
    ModelBasedTuner,
    RandomTuner,
    RankingCostModel,
    make_task,
    rank_labels,
    spearman,
)


def test_rank_labels_per_group_quantiles():
    gflops = [1.0, 2.0, 3.0, 4.0, 0.0, 10.0, 10.0, 5.0]
    groups = ["a", "a", "a", "a", "a", "b", "b", "b"]
    labels = rank_labels(gflops, groups)
    assert labels.tolist() == [1, 8, 16, 24, 0, 11, 11, 1]
    assert labels.max() <= 31 and labels.dtype.kind == "i"
    assert rank_labels([5.0] * 40, ["g"] * 40).tolist() == [1] * 40
    many = rank_labels(list(range(1, 101)), ["g"] * 100)
    assert many.min() == 1 and many.max() == 31 and np.all(np.diff(many) >= 0)


def test_spearman():
    assert spearman([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert spearman([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    assert spearman([1, 1, 1], [1, 2, 3]) == 0.0


def test_lightgbm_on_ir_features_beats_knob_only_baseline():
    """Held-out Spearman on the structured matmul task (analytic cost of the loop nest)."""
    task = make_task("synthetic_matmul", M=64, N=64, K=64, seed=0)
    points = task.space.sample(240, random.Random(0))
    y = np.array([task.gflops(p) for p in points])
    ir = np.stack([task.features(p) for p in points])
    knob = KnobFeatures(task.space)(points)
    train, test = slice(0, 120), slice(120, None)
    ir_model = RankingCostModel(seed=0).fit(ir[train], y[train])
    knob_model = RankingCostModel(seed=0).fit(knob[train], y[train])
    rho_ir = spearman(ir_model.predict(ir[test]), y[test])
    rho_knob = spearman(knob_model.predict(knob[test]), y[test])
    print(f"held-out Spearman: itervar features {rho_ir:.3f}, knob-only baseline {rho_knob:.3f}")
    assert rho_ir > 0.8
    assert rho_ir > rho_knob + 0.1


def run_until(tuner, task, budget, batch=8):
    """Trials needed to measure the task's optimum (None if not within `budget`)."""
    target = task.best_point()
    n = 0
    while n < budget:
        points = tuner.next_batch(batch)
        if not points:
            break
        tuner.update(points, [task.gflops(p) for p in points])
        n += len(points)
        if target in tuner.visited:
            return n
    return None


def test_model_based_tuner_finds_the_optimum_random_search_does_not():
    budget = 160   # 1.3% of the 12288-point space
    model_hits, random_hits = 0, 0
    for seed in range(3):
        task = make_task("synthetic_smooth", seed=seed)
        assert task.space.size == 12288
        # exhaustive search confirms the known optimum
        best = max(task.space, key=task.gflops)
        assert best == task.best_point()
        found = run_until(ModelBasedTuner(task, features="knob", seed=seed), task, budget)
        model_hits += found is not None
        random_hits += run_until(RandomTuner(task, seed=seed), task, budget) is not None
    assert model_hits == 3
    assert random_hits <= 1


def test_tuners_never_repeat_points():
    task = make_task("synthetic_smooth", dims=(5, 4, 3), seed=0)
    size = task.space.size
    for tuner in (RandomTuner(task, seed=0), GridTuner(task), GATuner(task, pop_size=16),
                  ModelBasedTuner(task, features="knob", min_train=8, seed=0)):
        seen = []
        while tuner.has_next() and len(seen) < size:
            batch = tuner.next_batch(7)
            if not batch:
                break
            seen += batch
            tuner.update(batch, [task.gflops(p) for p in batch])
        assert len(seen) == len(set(seen)), type(tuner).__name__
        assert len(seen) == size, type(tuner).__name__  # the whole space, no repeats
        assert tuner.best_point == task.best_point()
    grid = GridTuner(task)
    assert grid.next_batch(3) == [(0, 0, 0), (0, 0, 1), (0, 0, 2)]


def test_ga_improves_on_its_first_generation():
    task = make_task("synthetic_smooth", seed=1)
    ga = GATuner(task, pop_size=32, seed=1)
    first = ga.next_batch(32)
    ga.update(first, [task.gflops(p) for p in first])
    first_best = ga.best_gflops
    for _ in range(6):
        batch = ga.next_batch(32)
        ga.update(batch, [task.gflops(p) for p in batch])
    assert ga.best_gflops > first_best


def test_failed_measurements_count_as_zero_and_transfer_warm_starts():
    task = make_task("synthetic_smooth", seed=2)
    other = make_task("synthetic_smooth", seed=2, noise=0.05)  # same optimum, other workload
    assert other.workload_key != task.workload_key
    history = other.space.sample(200, random.Random(5))
    tuner = ModelBasedTuner(task, features="knob", seed=0)
    tuner.add_history_task(other, history, [other.gflops(p) for p in history])
    first = tuner.next_batch(16)          # planned by a model of the other workload
    assert tuner.fits == 1
    tuner.update(first, [task.gflops(p) for p in first])
    assert tuner.best_gflops > 80         # near the optimum right away (random: ~10)

    class Failed:
        error_no, gflops = 4, 0.0

    tuner.update([tuner.next_batch(1)[0]], [Failed()])
    assert tuner.ys[-1] == 0.0
