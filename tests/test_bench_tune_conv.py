"""The verdicts of bench/tune_conv.py (the paper's tuner comparison) from trials-to-95%."""

import pytest

from helpers import load_bench

tune_conv = load_bench("tune_conv")


def test_first_reaching_counts_trials_from_one():
    assert tune_conv.first_reaching([1.0, 2.0, 5.0, 5.0], 4.0) == 3
    assert tune_conv.first_reaching([1.0, 2.0], 4.0) is None


@pytest.mark.parametrize("reach, median", [
    ([27, 186, 17], 27),
    ([54, 80, 78], 78),
    ([186, None, 43], 186),       # one run never reached it: the slowest
    ([29, None, None], None),     # the median run never reached it
    ([5, 7], 6),
])
def test_median_trials(reach, median):
    assert tune_conv.median_trials(reach) == median


@pytest.mark.parametrize("lgbm, ga, random, met", [
    (27, None, None, True),       # neither baseline reached the mark
    (76, 153, None, True),
    (50, None, 100, True),        # exactly half of random
    (51, None, 100, False),       # more than half
    (100, 90, None, False),       # not fewer than the GA
    (None, None, None, False),    # lgbm did not reach it either
])
def test_meets_paper_target(lgbm, ga, random, met):
    assert tune_conv.meets_paper_target(lgbm, ga, random) is met


def test_remeasure_times_bests_default_and_onnxruntime_in_the_same_rounds(monkeypatch):
    from types import SimpleNamespace

    import xweave.autotune

    speed = {(0,): 50.0, (1,): 80.0, (2,): 90.0}  # default, lgbm's best, ga's best
    calls = []

    def fake_measure(task, points, builder, runner):
        calls.append(list(points))
        return [SimpleNamespace(ok=True, gflops=speed[p] + len(calls)) for p in points]

    monkeypatch.setattr(xweave.autotune, "measure_points", fake_measure)
    task = SimpleNamespace(flops=2e9)
    runs = {("lgbm", 0): SimpleNamespace(best_point=(1,)),
            ("ga", 0): SimpleNamespace(best_point=(2,)),
            ("random", 0): SimpleNamespace(best_point=None)}  # no measured point
    seconds = iter([0.04, 0.02, 0.025])  # onnxruntime: 50, 100, 80 GFLOP/s
    bests, default, ort = tune_conv.remeasure(task, runs, (0,), lambda: next(seconds),
                                              None, None, rounds=3)
    assert calls == [[(0,), (1,), (2,)], [(2,), (1,), (0,)], [(0,), (1,), (2,)]]
    assert bests == {("lgbm", 0): 82.0, ("ga", 0): 92.0}  # medians over the rounds
    assert default == 52.0 and ort == pytest.approx(80.0)
    assert tune_conv.remeasure(task, runs, (0,), lambda: 1.0, None, None, rounds=0) is None
