"""The LightGBM ranking cost model (and a knob-only baseline).

A cost model only has to *order* candidates, so it is trained as a ranker
(runtime-facts §6): `lgb.train` with `objective="lambdarank"`, one query group per
workload, and integer relevance labels. Labels are per-group rank-quantile buckets of
the measured GFLOP/s: the failed candidates of a group get 0, the others get
`1 + rank * (LEVELS - 1) // n_ok` (1 for the slowest, `LEVELS` - 1 = 31 for the
fastest bucket), and `label_gain = list(range(32))` keeps the gains linear and bounded.
Records of other workloads (transfer learning, warm start) simply come as more groups.

```python
model = RankingCostModel(seed=0)
model.fit(X, gflops, groups)          # groups: one workload key per row
scores = model.predict(X_new)         # higher = predicted faster
spearman(scores, true_gflops)
```

`KnobFeatures` turns points into the knob-only baseline's features (their candidate
indices), for comparison with the itervar features of `features.py`.
"""

from __future__ import annotations

import warnings
from collections.abc import Hashable, Sequence

import numpy as np

from xweave.autotune.space import Point, Space

LEVELS = 32
"""Relevance levels 0..31 (0 = failed); `label_gain` has one entry per level."""

MAX_GROUP_ROWS = 256
"""Bigger groups are split (randomly) into query groups of at most this many rows."""

DEFAULT_PARAMS = {
    "objective": "lambdarank",
    "label_gain": list(range(LEVELS)),
    "lambdarank_truncation_level": 256,
    "learning_rate": 0.1,
    "num_leaves": 15,
    "min_data_in_leaf": 2,
    "min_sum_hessian_in_leaf": 1e-3,
    "feature_fraction": 0.9,
    "bagging_fraction": 0.9,
    "bagging_freq": 1,
    "verbose": -1,
    "deterministic": True,
    "force_row_wise": True,
}


def rank_labels(gflops: Sequence[float], groups: Sequence[Hashable],
                levels: int = LEVELS) -> np.ndarray:
    """Integer relevance labels: per-group rank quantiles of GFLOP/s (0 = failed).

    Within a group the `n_ok` successful rows (gflops > 0) are ranked ascending
    (ties share the lowest rank) and get `1 + rank * (levels - 1) // n_ok`.
    """
    y = np.asarray(gflops, dtype=np.float64)
    g = np.asarray([str(x) for x in groups])
    labels = np.zeros(len(y), dtype=np.int32)
    for key in np.unique(g):
        rows = np.nonzero(g == key)[0]
        ok = rows[y[rows] > 0]
        if len(ok) == 0:
            continue
        values = y[ok]
        ranks = np.searchsorted(np.sort(values), values, side="left")
        labels[ok] = 1 + ranks * (levels - 1) // len(ok)
    return labels


def spearman(a: Sequence[float], b: Sequence[float]) -> float:
    """Spearman rank correlation (average ranks for ties); 0 when undefined."""
    ra, rb = _average_ranks(np.asarray(a, float)), _average_ranks(np.asarray(b, float))
    if len(ra) < 2 or ra.std() == 0 or rb.std() == 0:
        return 0.0
    return float(np.corrcoef(ra, rb)[0, 1])


def _average_ranks(x: np.ndarray) -> np.ndarray:
    order = np.argsort(x, kind="mergesort")
    ranks = np.empty(len(x), dtype=np.float64)
    ranks[order] = np.arange(len(x), dtype=np.float64)
    _, inverse, counts = np.unique(x, return_inverse=True, return_counts=True)
    sums = np.bincount(inverse, weights=ranks)
    return sums[inverse] / counts[inverse]


class RankingCostModel:
    """LightGBM lambdarank over feature rows, one query group per workload."""

    def __init__(self, num_boost_round: int = 100, params: dict | None = None,
                 seed: int = 0, num_threads: int | None = None):
        self.num_boost_round = num_boost_round
        self.params = dict(DEFAULT_PARAMS)
        self.params["seed"] = seed
        self.params["num_threads"] = num_threads or 1
        if params:
            self.params.update(params)
        self.seed = seed
        self.booster = None
        self.num_features: int | None = None

    @property
    def fitted(self) -> bool:
        return self.booster is not None

    def fit(self, X: np.ndarray, gflops: Sequence[float],
            groups: Sequence[Hashable] | None = None) -> RankingCostModel:
        """Train from scratch on all rows (`groups`: one workload key per row)."""
        import lightgbm as lgb  # lazy by design: only training loads LightGBM (workers never)

        X = np.asarray(X, dtype=np.float32)
        if X.ndim != 2 or len(X) != len(gflops):
            raise ValueError(f"X has shape {X.shape}, expected ({len(gflops)}, n_features)")
        if groups is None:
            groups = ["_"] * len(X)
        labels = rank_labels(gflops, groups)
        order, sizes = _query_groups(groups, np.random.default_rng(self.seed))
        dataset = lgb.Dataset(X[order], label=labels[order], group=sizes,
                              free_raw_data=True, params={"verbose": -1})
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self.booster = lgb.train(self.params, dataset, num_boost_round=self.num_boost_round)
        self.num_features = X.shape[1]
        return self

    def save(self) -> str:
        """The fitted model as LightGBM's text (`load` reads it back)."""
        if self.booster is None:
            raise ValueError("the model is not fitted")
        return self.booster.model_to_string()

    @classmethod
    def load(cls, text: str) -> RankingCostModel:
        """A fitted model from `save`'s text."""
        import lightgbm as lgb  # lazy by design: only a model in use loads LightGBM

        model = cls()
        model.booster = lgb.Booster(model_str=text)
        model.num_features = model.booster.num_feature()
        return model

    def predict(self, X: np.ndarray) -> np.ndarray:
        """Scores (higher = predicted faster); zeros before the first `fit`."""
        X = np.asarray(X, dtype=np.float32)
        if self.booster is None:
            return np.zeros(len(X))
        if len(X) == 0:
            return np.zeros(0)
        return self.booster.predict(X, num_threads=self.params["num_threads"])


def _query_groups(groups: Sequence[Hashable], rng: np.random.Generator
                  ) -> tuple[np.ndarray, list[int]]:
    """Row order making each group contiguous, and the group sizes (big groups split)."""
    keys = np.asarray([str(x) for x in groups])
    order: list[np.ndarray] = []
    sizes: list[int] = []
    for key in dict.fromkeys(keys):  # first-appearance order
        rows = np.nonzero(keys == key)[0]
        if len(rows) > MAX_GROUP_ROWS:
            rows = rng.permutation(rows)
            parts = -(-len(rows) // MAX_GROUP_ROWS)
            for chunk in np.array_split(rows, parts):
                order.append(chunk)
                sizes.append(len(chunk))
        else:
            order.append(rows)
            sizes.append(len(rows))
    return np.concatenate(order) if order else np.zeros(0, dtype=int), sizes


class KnobFeatures:
    """The knob-only baseline's features: a point's candidate indices, as floats."""

    def __init__(self, space: Space):
        self.space = space

    def __call__(self, points: Sequence[Point]) -> np.ndarray:
        return np.asarray(points, dtype=np.float32).reshape(len(points), len(self.space.knobs))
