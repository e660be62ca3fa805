"""The verdicts of bench/tune_conv.py (the paper's tuner comparison) from trials-to-95%."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent.parent / "bench"))
import tune_conv  # noqa: E402


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
