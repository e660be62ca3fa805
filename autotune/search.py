"""Tuners: which points to measure next. One interface, four strategies.

```python
tuner = ModelBasedTuner(task, seed=0)          # or RandomTuner / GridTuner / GATuner
while tuner.has_next():
    points = tuner.next_batch(8)                # never a point handed out before
    tuner.update(points, results)               # GFLOP/s floats or MeasureResults (0 = failed)
```

* `RandomTuner`: uniformly random valid points, without replacement.
* `GridTuner`: valid points in index order.
* `GATuner`: a genetic algorithm without a model (AutoTVM's): a population of points,
  fitness = GFLOP/s, elites kept, roulette-wheel parents, one-point crossover over
  the knobs, per-knob mutation; invalid or already measured children are redrawn.
* `ModelBasedTuner`: a `RankingCostModel` (LightGBM lambdarank) on itervar features
  (or any feature function), refit as measurements arrive (after `min_train` points,
  then every time the data grew by `max(refit_min, n / refit_fraction)`), and a
  `SimulatedAnnealingOptimizer` whose parallel chains walk the space guided by the
  predicted scores; chains persist across refits. A batch is the top predicted
  unvisited points plus an `epsilon` share of uniformly random ones. When features are
  expensive (e.g. each needs the scheduled IR), the annealing runs on a cheap knob-only
  proxy model and its `rerank` x `plan_size` best points are re-ranked with the real
  model — those already featurized plus as many new ones as `rerank_budget_s` seconds
  of feature extraction allow (`sa_features="auto"` decides from the measured feature
  cost).

Every tuner keeps `visited` (points handed out, measured or pending), `xs`/`ys`
(measured points and GFLOP/s) and `best_point`/`best_gflops`.
"""

from __future__ import annotations

import heapq
import random
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from xweave.autotune.cost_model import KnobFeatures, RankingCostModel
from xweave.autotune.space import Point, Space


def _gflops_of(result: Any) -> float:
    """GFLOP/s of a result: a number, or an object with `gflops` (0 if it failed)."""
    if isinstance(result, (int, float)):
        return max(0.0, float(result))
    if getattr(result, "error_no", 0):
        return 0.0
    return max(0.0, float(getattr(result, "gflops", 0.0)))


class Tuner(ABC):
    """Base class: bookkeeping of visited points and results."""

    name = "tuner"

    def __init__(self, task_or_space: Any, seed: int | None = 0):
        self.task = None if isinstance(task_or_space, Space) else task_or_space
        self.space: Space = task_or_space if isinstance(task_or_space, Space) \
            else task_or_space.space
        self.rng = random.Random(seed)
        self.seed = seed
        self.visited: set[Point] = set()
        self.xs: list[Point] = []
        self.ys: list[float] = []
        self.best_point: Point | None = None
        self.best_gflops = 0.0
        self._exhausted = False

    def has_next(self) -> bool:
        """False once the space is known to be exhausted."""
        if self._exhausted:
            return False
        if self.space.size <= 2_000_000 and not self.space.constraints:
            return len(self.visited) < self.space.size
        return True

    @abstractmethod
    def _propose(self, n: int) -> list[Point]:
        """Up to `n` points not in `visited` (the base class marks them visited)."""

    def next_batch(self, n: int) -> list[Point]:
        """Up to `n` distinct valid points never handed out before."""
        batch: list[Point] = []
        for p in self._propose(n):
            p = tuple(p)
            if p not in self.visited and len(batch) < n:
                self.visited.add(p)
                batch.append(p)
        if len(batch) < n:
            extra = self.space.sample(n - len(batch), self.rng, exclude=self.visited)
            for p in extra:
                self.visited.add(p)
                batch.append(p)
            if not extra and not batch:
                self._exhausted = True
        return batch

    def update(self, points: Sequence[Point], results: Sequence[Any]) -> None:
        """Record measurements (GFLOP/s numbers, or objects with `gflops`/`error_no`)."""
        for p, r in zip(points, results):
            p = tuple(p)
            y = _gflops_of(r)
            self.visited.add(p)
            self.xs.append(p)
            self.ys.append(y)
            if y > self.best_gflops:
                self.best_gflops, self.best_point = y, p
        self._updated(points)

    def _updated(self, points: Sequence[Point]) -> None:
        pass


class RandomTuner(Tuner):
    """Uniformly random valid points without replacement."""

    name = "random"

    def _propose(self, n: int) -> list[Point]:
        return self.space.sample(n, self.rng, exclude=self.visited)


class GridTuner(Tuner):
    """Valid points in index order (the last knob varies fastest)."""

    name = "grid"

    def __init__(self, task_or_space: Any, seed: int | None = 0):
        super().__init__(task_or_space, seed)
        self._iter = iter(self.space)

    def _propose(self, n: int) -> list[Point]:
        out = []
        for p in self._iter:
            if p not in self.visited:
                out.append(p)
                if len(out) == n:
                    break
        if not out:
            self._exhausted = True
        return out

    def next_batch(self, n: int) -> list[Point]:
        batch = []
        for p in self._propose(n):
            self.visited.add(p)
            batch.append(p)
        return batch


class GATuner(Tuner):
    """Genetic algorithm over knob vectors (no model), after AutoTVM's GATuner."""

    name = "ga"

    def __init__(self, task_or_space: Any, pop_size: int = 64, elite_num: int = 3,
                 mutation_prob: float = 0.1, seed: int | None = 0):
        super().__init__(task_or_space, seed)
        self.pop_size = max(2, min(pop_size, self.space.size))
        self.elite_num = min(elite_num, self.pop_size)
        self.mutation_prob = mutation_prob
        self.scores: dict[Point, float] = {}
        self.population = self.space.sample(self.pop_size, self.rng)
        self._cursor = 0

    def _propose(self, n: int) -> list[Point]:
        out: list[Point] = []
        while len(out) < n:
            while self._cursor < len(self.population) and len(out) < n:
                p = self.population[self._cursor]
                self._cursor += 1
                if p not in self.visited:
                    out.append(p)
            if len(out) == n:
                break
            if any(p not in self.scores for p in self.population) or out:
                break  # the generation is not fully measured yet: wait for update()
            self._next_generation()
            if not self.population:
                break
        return out

    def _updated(self, points: Sequence[Point]) -> None:
        for p, y in zip(self.xs[-len(points):], self.ys[-len(points):]):
            self.scores[p] = y

    def _next_generation(self) -> None:
        scored = sorted(self.scores.items(), key=lambda kv: -kv[1])
        genes = [p for p, _ in scored[: self.pop_size]]
        fitness = np.array([s for _, s in scored[: self.pop_size]], dtype=float)
        elites = genes[: self.elite_num]
        probs = fitness + 1e-8
        probs = probs / probs.sum()
        nprng = np.random.default_rng(self.rng.randrange(2**32))
        children: list[Point] = []
        seen = set()
        tries = 0
        while len(children) < self.pop_size - len(elites) and tries < 20 * self.pop_size:
            tries += 1
            i, j = nprng.choice(len(genes), size=2, p=probs)
            a, b = genes[i], genes[j]
            cut = self.rng.randrange(1, len(a)) if len(a) > 1 else 0
            child = list(a[:cut] + b[cut:])
            for k, d in enumerate(self.space.dims):
                if d > 1 and self.rng.random() < self.mutation_prob:
                    child[k] = self.rng.randrange(d)
            c = tuple(child)
            if c in self.visited or c in seen or not self.space.is_valid(c):
                continue
            seen.add(c)
            children.append(c)
        missing = self.pop_size - len(elites) - len(children)
        if missing > 0:
            children += self.space.sample(missing, self.rng, exclude=self.visited | seen)
        self.population = elites + children
        self._cursor = 0


# ----------------------------------------------------------------------------------
# Simulated annealing over model scores
# ----------------------------------------------------------------------------------


class SimulatedAnnealingOptimizer:
    """Parallel annealing chains that maximize a score function over the space.

    Each iteration every chain proposes `space.random_walk` (one knob changed); the
    move is accepted with probability min(1, exp(delta / (T * scale))) where `scale`
    is the spread of the chains' scores and T cools linearly from `temp[0]` to
    `temp[1]`. The best `num` points seen that are not excluded are returned. With
    `persistent=True` the chains continue from where they stopped on the next call
    (the cost model has changed in between).
    """

    def __init__(self, space: Space, n_chains: int = 64, n_iter: int = 150,
                 temp: tuple[float, float] = (1.0, 0.0), early_stop: int = 30,
                 persistent: bool = True, rng: random.Random | None = None):
        self.space = space
        self.n_chains = max(1, n_chains)
        self.n_iter = n_iter
        self.temp = temp
        self.early_stop = early_stop
        self.persistent = persistent
        self.rng = rng or random.Random(0)
        self.chains: list[Point] = []
        self.evaluations = 0

    def find_maximums(self, score_fn: Callable[[list[Point]], np.ndarray], num: int,
                      exclude: set[Point], seeds: Sequence[Point] = ()) -> list[Point]:
        """Up to `num` points not in `exclude`, best predicted first."""
        chains = list(self.chains) if self.persistent and self.chains else []
        seeds = [tuple(s) for s in seeds][: self.n_chains]
        if seeds:  # restart a few chains from good measured points
            kept = [c for c in chains if c not in seeds][: self.n_chains - len(seeds)]
            chains = kept + seeds
        if len(chains) < self.n_chains:
            chains += self.space.sample(self.n_chains - len(chains), self.rng)
        chains = chains[: self.n_chains]
        if not chains:
            return []
        cache: dict[Point, float] = {}

        def score(points: list[Point]) -> np.ndarray:
            new = [p for p in dict.fromkeys(points) if p not in cache]
            if new:
                values = np.asarray(score_fn(new), dtype=float)
                self.evaluations += len(new)
                cache.update(zip(new, values))
            return np.array([cache[p] for p in points])

        scores = score(chains)
        heap: list[tuple[float, Point]] = []
        in_heap: set[Point] = set()

        def push(p: Point, s: float) -> bool:
            if p in exclude or p in in_heap:
                return False
            if len(heap) < num:
                heapq.heappush(heap, (s, p))
                in_heap.add(p)
                return True
            if s > heap[0][0]:
                _, old = heapq.heapreplace(heap, (s, p))
                in_heap.discard(old)
                in_heap.add(p)
                return True
            return False

        for p, s in zip(chains, scores):
            push(p, s)
        t0, t1 = self.temp
        cool = (t0 - t1) / (self.n_iter + 1)
        t = t0
        stale = 0
        nprng = np.random.default_rng(self.rng.randrange(2**32))
        for _ in range(self.n_iter):
            proposals = self.space.random_walks(chains, nprng)
            new_scores = score(proposals)
            changed = False
            for p, s in zip(proposals, new_scores):
                changed |= push(p, s)
            finite = new_scores[np.isfinite(new_scores)]
            spread = float(np.std(finite)) if len(finite) > 1 else 0.0
            with np.errstate(invalid="ignore"):
                delta = (new_scores - scores) / ((spread or 1.0) * max(t, 1e-5))
                accept = np.exp(np.minimum(delta, 0.0)) > nprng.random(len(chains))
            chains = [q if a else p for p, q, a in zip(chains, proposals, accept)]
            scores = np.where(accept, new_scores, scores)
            t -= cool
            stale = 0 if changed else stale + 1
            if stale >= self.early_stop:
                break
        self.chains = chains
        return [p for _, p in sorted(heap, key=lambda sp: -sp[0])]


# ----------------------------------------------------------------------------------
# The model-based tuner
# ----------------------------------------------------------------------------------


class ModelBasedTuner(Tuner):
    """LightGBM ranking model + simulated annealing (AutoTVM's XGBTuner, re-done).

    `features`: "itervar" (`task.features(point)`, e.g. itervar features of the
    scheduled IR), "knob" (candidate indices), a callable `points -> 2-D array`, or
    "auto" (itervar when the task has a `features` method, else knob). A point whose
    features cannot be computed (e.g. its schedule does not apply) is never planned.
    """

    name = "lgbm"

    def __init__(self, task_or_space: Any, features: str | Callable = "auto",
                 plan_size: int = 64, epsilon: float = 0.05, min_train: int = 16,
                 refit_min: int = 8, refit_fraction: int = 8,
                 n_chains: int = 64, n_iter: int = 150, sa_features: str = "auto",
                 rerank: int = 4, sa_budget_s: float = 5.0, rerank_budget_s: float = 1.0,
                 model: RankingCostModel | None = None, seed: int | None = 0):
        super().__init__(task_or_space, seed)
        self.plan_size = plan_size
        self.epsilon = epsilon
        self.min_train = min_train
        self.refit_min = refit_min
        self.refit_fraction = refit_fraction
        self.rerank = rerank
        self.sa_budget_s = sa_budget_s
        self.rerank_budget_s = rerank_budget_s
        self.sa_features = sa_features
        self.model = model or RankingCostModel(seed=seed or 0)
        self.proxy_model = RankingCostModel(seed=seed or 0)
        self.knob_features = KnobFeatures(self.space)
        self.optimizer = SimulatedAnnealingOptimizer(
            self.space, n_chains=n_chains, n_iter=n_iter,
            rng=random.Random(self.rng.randrange(2**32)))
        if features == "auto":
            features = "itervar" if hasattr(self.task, "features") else "knob"
        if callable(features):
            self._featurize_batch: Callable[[list[Point]], np.ndarray] = features
            self.feature_type = getattr(features, "__name__", "custom")
        elif features == "knob":
            self._featurize_batch = self.knob_features
            self.feature_type = "knob"
        elif features == "itervar":
            if self.task is None or not hasattr(self.task, "features"):
                raise ValueError("features='itervar' needs a task with a features(point) method")
            self._featurize_batch = self._task_features
            self.feature_type = "itervar"
        else:
            raise ValueError(f"unknown features {features!r}: 'itervar', 'knob' or a callable")
        self._feature_cache: dict[Point, np.ndarray] = {}
        self.unfeaturizable: set[Point] = set()
        self._feature_seconds = 0.0
        self._feature_count = 0
        self.history: list[tuple[np.ndarray, float, str]] = []
        """Transfer rows: (features, gflops, group) of other workloads."""
        self.plan: list[Point] = []
        self.fits = 0
        self._fitted_at = 0
        self.timing = {"fit": 0.0, "search": 0.0, "features": 0.0}

    # --- features -------------------------------------------------------------------

    def _task_features(self, points: list[Point]) -> list[np.ndarray | None]:
        rows: list[np.ndarray | None] = []
        for p in points:
            try:
                rows.append(np.asarray(self.task.features(p), dtype=np.float32))
            except Exception:  # e.g. a schedule that does not apply: never plan it
                rows.append(None)
        return rows

    def featurize(self, points: Sequence[Point]) -> np.ndarray:
        """Feature rows of `points` (cached per point)."""
        points = [tuple(p) for p in points]
        new = [p for p in dict.fromkeys(points) if p not in self._feature_cache]
        if new:
            start = time.perf_counter()
            rows = self._featurize_batch(new)
            elapsed = time.perf_counter() - start
            self._feature_seconds += elapsed
            self._feature_count += len(new)
            self.timing["features"] += elapsed
            width = next((len(r) for r in rows if r is not None), None)
            if width is None and self._feature_cache:
                width = len(next(iter(self._feature_cache.values())))
            for p, row in zip(new, rows):
                if row is None:
                    self.unfeaturizable.add(p)
                    row = np.zeros(width or 1, dtype=np.float32)
                self._feature_cache[p] = np.asarray(row, dtype=np.float32)
            if len(self._feature_cache) > 200_000:
                self._feature_cache.clear()
        if not points:
            return np.zeros((0, 0), dtype=np.float32)
        return np.stack([self._feature_cache[p] for p in points])

    def _predict(self, points: Sequence[Point]) -> np.ndarray:
        """Model scores; -inf for points whose features failed."""
        scores = np.asarray(self.model.predict(self.featurize(points)), dtype=float)
        if self.unfeaturizable:
            bad = np.fromiter((p in self.unfeaturizable for p in points), bool, len(points))
            scores[bad] = -np.inf
        return scores

    @property
    def seconds_per_feature(self) -> float:
        return self._feature_seconds / self._feature_count if self._feature_count else 0.0

    def _use_proxy(self) -> bool:
        if self.sa_features == "model" or self.feature_type == "knob":
            return False
        if self.sa_features == "knob":
            return True
        if self._feature_count < 3:  # time a few (cached for later) to know the cost
            self.featurize(self.space.sample(3, self.rng, exclude=set(self._feature_cache)))
        estimate = self.seconds_per_feature * self.optimizer.n_chains * self.optimizer.n_iter
        return estimate > self.sa_budget_s

    # --- transfer ---------------------------------------------------------------------

    def add_history(self, rows: np.ndarray, gflops: Sequence[float], group: str) -> None:
        """Add measurements of another workload (feature rows already computed) as
        their own ranking group, used by every later fit (transfer / warm start)."""
        for row, y in zip(np.asarray(rows, dtype=np.float32), gflops):
            self.history.append((row, float(y), str(group)))

    def add_history_task(self, task: Any, points: Sequence[Point],
                         gflops: Sequence[float]) -> None:
        """`add_history` for points of another task, featurized with that task."""
        if not points:
            return
        if self.feature_type == "itervar":
            rows = np.stack([task.features(tuple(p)) for p in points])
        elif self.feature_type == "knob":
            rows = KnobFeatures(task.space)(list(points))
        else:
            rows = self._featurize_batch(list(points))
        self.add_history(rows, gflops, task.workload_key)

    # --- the loop ---------------------------------------------------------------------

    def _propose(self, n: int) -> list[Point]:
        if not self.model.fitted and not self.plan and len(self.history) >= self.min_train:
            self._refit()  # warm start from other workloads
        out: list[Point] = []
        while len(out) < n:
            if self.plan and self.rng.random() >= self.epsilon:
                p = self.plan.pop(0)
                if p in self.visited or p in out:
                    continue
                out.append(p)
            else:
                sample = self.space.sample(1, self.rng, exclude=self.visited | set(out))
                if not sample:
                    break
                out.append(sample[0])
        return out

    def update(self, points: Sequence[Point], results: Sequence[Any]) -> None:
        for p, r in zip(points, results):  # features computed by the builder, if any
            row = getattr(r, "features", None)
            if row is not None and self.feature_type == "itervar":
                self._feature_cache.setdefault(tuple(p), np.asarray(row, dtype=np.float32))
        super().update(points, results)

    def _updated(self, points: Sequence[Point]) -> None:
        n = len(self.xs)
        if n < self.min_train:
            return
        due = max(self.refit_min, n // self.refit_fraction)
        if self.fits == 0 or n - self._fitted_at >= due:
            self._refit()

    def _refit(self) -> None:
        start = time.perf_counter()
        X = self.featurize(self.xs) if self.xs else np.zeros((0, 0), np.float32)
        ys = list(self.ys)
        groups = ["self"] * len(ys)
        if self.history:
            width = self.history[0][0].shape[0]
            if X.shape[0] == 0 or X.shape[1] == width:
                hist = np.stack([h[0] for h in self.history])
                X = hist if X.shape[0] == 0 else np.concatenate([X, hist])
                ys += [h[1] for h in self.history]
                groups += [h[2] for h in self.history]
        if len(ys) == 0 or max(ys) <= 0:
            return
        self.model.fit(X, ys, groups)
        use_proxy = self._use_proxy()
        if use_proxy and self.xs:
            self.proxy_model.fit(self.knob_features(self.xs), self.ys)
        self.fits += 1
        self._fitted_at = len(self.xs)
        fitted = time.perf_counter()
        self.timing["fit"] += fitted - start

        seeds = [self.xs[i] for i in np.argsort(self.ys)[::-1][:max(1, self.optimizer.n_chains // 8)]] \
            if self.xs else []
        if use_proxy and self.proxy_model.fitted:
            wide = self.optimizer.find_maximums(
                lambda pts: self.proxy_model.predict(self.knob_features(pts)),
                self.plan_size * self.rerank, self.visited, seeds)
            # Re-rank with the real model: points already featurized, plus as many new
            # ones (in proxy order) as `rerank_budget_s` allows.
            budget = max(1, int(self.rerank_budget_s / max(self.seconds_per_feature, 1e-6)))
            chosen, rest = [], []
            for p in wide:
                if p in self._feature_cache:
                    chosen.append(p)
                elif budget > 0:
                    chosen.append(p)
                    budget -= 1
                else:
                    rest.append(p)
            scores = self._predict(chosen) if chosen else np.zeros(0)
            order = np.argsort(-scores, kind="stable")
            ranked = [chosen[i] for i in order if np.isfinite(scores[i])]
            self.plan = (ranked + rest)[: self.plan_size]
        else:
            plan = self.optimizer.find_maximums(self._predict, self.plan_size, self.visited,
                                                seeds)
            self.plan = [p for p in plan if p not in self.unfeaturizable]
        self.timing["search"] += time.perf_counter() - fitted


TUNERS: dict[str, type[Tuner]] = {
    "lgbm": ModelBasedTuner,
    "ga": GATuner,
    "random": RandomTuner,
    "grid": GridTuner,
}


def make_tuner(name: str, task_or_space: Any, seed: int | None = 0, **options) -> Tuner:
    """A tuner by name: 'lgbm', 'ga', 'random' or 'grid'."""
    if name not in TUNERS:
        raise ValueError(f"unknown tuner {name!r}; expected one of {sorted(TUNERS)}")
    return TUNERS[name](task_or_space, seed=seed, **options)
