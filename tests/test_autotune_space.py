"""Search spaces: split candidates, mixed-radix indexing, sampling, walks, neighbors."""

import math
import pickle
import random

import pytest

from xweave.autotune.space import Space, divisors, split_candidates
from xweave.autotune.templates import make_task


def test_split_candidates_factors_and_power2():
    assert split_candidates(12, 2) == [(12, 1), (6, 2), (4, 3), (3, 4), (2, 6), (1, 12)]
    three = split_candidates(8, 3)
    assert all(math.prod(c) == 8 for c in three)
    assert len(three) == 10 and len(set(three)) == 10  # ordered factorizations of 2^3 in 3
    assert split_candidates(64, 2, max_factor=8) == [(64, 1), (32, 2), (16, 4), (8, 8)]
    p2 = split_candidates(10, 2, policy="power2")
    assert p2 == [(10, 1), (5, 2), (3, 4), (2, 8)]  # tails allowed: outer = ceil(10 / inner)
    assert divisors(36) == [1, 2, 3, 4, 6, 9, 12, 18, 36]
    with pytest.raises(ValueError):
        split_candidates(8, 2, policy="bogus")


def make_space() -> Space:
    s = Space()
    s.split("tile", 16, parts=2)             # 5 candidates
    s.reorder("order", ["i", "j", "k"])      # 6
    s.annotate("ann", ["a", "b"])            # 9
    s.knob("unroll", [False, True])          # 2
    return s


def test_mixed_radix_round_trip_is_lexicographic():
    s = make_space()
    assert s.dims == (5, 6, 9, 2) and s.size == 540
    points = [s.index_to_point(i) for i in range(s.size)]
    assert points == sorted(points)                       # the last knob varies fastest
    assert all(s.point_to_index(p) == i for i, p in enumerate(points))
    assert s.index_to_point(1) == (0, 0, 0, 1)
    config = s.config((2, 1, 4, 1))
    assert config == {"tile": (4, 4), "order": ("i", "k", "j"), "ann": ("unroll", "unroll"),
                      "unroll": True}
    assert s.point_of(config) == (2, 1, 4, 1)
    with pytest.raises(IndexError):
        s.index_to_point(540)
    with pytest.raises(ValueError):
        s.config((5, 0, 0, 0))


def test_constraints_sampling_without_replacement_and_walks():
    s = make_space()
    s.constrain(lambda c: not (c["unroll"] and c["tile"][1] > 4))
    valid = list(s)
    assert len(valid) == 540 - 2 * 6 * 9  # unroll with inner 8 or 16 is invalid
    rng = random.Random(1)
    sample = s.sample(100, rng)
    assert len(sample) == 100 and len(set(sample)) == 100 and all(s.is_valid(p) for p in sample)
    rest = s.sample(1000, rng, exclude=set(sample))       # drains the space
    assert len(rest) == len(valid) - 100 and not set(rest) & set(sample)
    assert s.sample(5, rng, exclude=set(valid)) == []
    p = valid[7]
    for _ in range(50):
        q = s.random_walk(p, rng)
        assert q != p and s.is_valid(q)
        assert sum(a != b for a, b in zip(p, q)) == 1
    for q in s.neighbors(p):
        assert s.is_valid(q) and sum(abs(a - b) for a, b in zip(p, q)) == 1
    assert len(s.neighbors(p, full=True)) >= len(s.neighbors(p))


def test_large_space_is_lazy():
    s = Space()
    for i in range(8):
        s.split(f"t{i}", 64, parts=2)   # 7 each: 7^8 = 5.7e6 points
    s.knob("k", list(range(20)))       # 1.15e8 points in all
    assert s.size == 7 ** 8 * 20
    rng = random.Random(0)
    pts = s.sample(1000, rng)
    assert len(set(pts)) == 1000
    i = s.point_to_index(pts[0])
    assert s.index_to_point(i) == pts[0]


def test_task_spaces_and_pickling():
    task = make_task("matmul_ir", M=32, N=32, K=16)
    assert task.workload_key == "matmul_ir(K=16, M=32, N=32)"
    assert task.space.size == 6 * 6 * 5 * 720 * 3 * 2
    clone = pickle.loads(pickle.dumps(task))   # rebuilt from (template, args)
    assert clone.workload_key == task.workload_key and clone.space.dims == task.space.dims
    assert task.spec() == {"template": "matmul_ir", "args": {"M": 32, "N": 32, "K": 16}}
