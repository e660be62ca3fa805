"""Search spaces: named knobs with finite candidate lists, enumerated lazily.

A *knob* is a name and a finite tuple of candidate values (split factors as tuples,
loop orders as permutations, annotations, booleans, ints, strings). A *point* is a
tuple of candidate indices, one per knob, in the order the knobs were declared; the
*space* is the product of the knobs, minus the points rejected by its validity
constraints. Spaces of 10^4 to 10^8 points are never materialized: a point maps to and
from a mixed-radix integer (the last knob varies fastest, so index order is the
lexicographic order of points), and random sampling, random walks and neighbors all
work on points directly.

```python
space = Space()
space.split("tile_j", 64, parts=2)                 # (64, 1), (32, 2), ... (1, 64)
space.reorder("order", ["i", "j", "k"])            # the 6 permutations
space.knob("unroll", [False, True])
space.constrain(lambda c: c["tile_j"][1] <= 16 or not c["unroll"])
point = space.sample(1, rng)[0]                    # e.g. (3, 5, 1)
space.config(point)                                # {'tile_j': (8, 8), 'order': ..., ...}
```

As in AutoTVM's `define_split`, a split knob's candidates are the ways to write an
extent as `parts` factors (outermost first); with `policy="factors"` the product is
exactly the extent, with `policy="power2"` the inner factors are powers of two and
the outer one is the ceiling of what remains (tails allowed).
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Callable, Hashable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

Point = tuple[int, ...]
"""One candidate index per knob, in declaration order."""

Config = dict[str, Any]
"""Knob name -> chosen value."""

KNOB_KINDS = ("split", "reorder", "annotate", "knob")


@dataclass(frozen=True)
class Knob:
    """A named choice among a finite, ordered tuple of candidate values."""

    name: str
    values: tuple[Hashable, ...]
    kind: str = "knob"
    """'split', 'reorder', 'annotate' or 'knob' (any other categorical or numeric option)."""

    def __post_init__(self) -> None:
        if not self.values:
            raise ValueError(f"knob {self.name!r} has no candidate values")
        if self.kind not in KNOB_KINDS:
            raise ValueError(f"knob kind {self.kind!r} is not one of {KNOB_KINDS}")

    def __len__(self) -> int:
        return len(self.values)

    def index(self, value: Hashable) -> int:
        """The candidate index of `value`."""
        try:
            return self.values.index(value)
        except ValueError:
            raise ValueError(f"{value!r} is not a candidate of knob {self.name!r}") from None


# ----------------------------------------------------------------------------------
# Candidate generators (define_split / define_reorder / define_annotate)
# ----------------------------------------------------------------------------------


def divisors(n: int) -> list[int]:
    """The positive divisors of `n`, ascending."""
    small = [d for d in range(1, math.isqrt(n) + 1) if n % d == 0]
    return sorted(set(small + [n // d for d in small]))


def split_candidates(
    extent: int,
    parts: int = 2,
    policy: str = "factors",
    max_factor: int | None = None,
) -> list[tuple[int, ...]]:
    """Every way to split `extent` into `parts` loop extents, outermost first.

    `factors`: the inner `parts - 1` factors are divisors and the product is exactly
    `extent` (no tail). `power2`: the inner factors are powers of two whose product is
    at most `extent`, the outer one is `ceil(extent / product)` (tails allowed).
    `max_factor` bounds every inner factor. Candidates are sorted by their inner factors
    (lexicographically, outer-inner first), so neighboring indices are similar tilings.
    """
    if extent < 1 or parts < 1:
        raise ValueError(f"cannot split extent {extent} into {parts} parts")
    if policy not in ("factors", "power2"):
        raise ValueError(f"unknown split policy {policy!r}; expected 'factors' or 'power2'")
    limit = extent if max_factor is None else max(1, min(max_factor, extent))
    if policy == "factors":
        choices = lambda rest: [d for d in divisors(rest) if d <= limit]  # noqa: E731
    else:
        choices = lambda rest: [  # noqa: E731
            1 << e for e in range(0, rest.bit_length()) if (1 << e) <= min(rest, limit)
        ]
    result: list[tuple[int, ...]] = []

    def rec(rest: int, inner: list[int]) -> None:
        if len(inner) == parts - 1:
            outer = rest if policy == "factors" else -(-extent // math.prod(inner or [1]))
            result.append((outer, *inner))
            return
        for f in choices(rest):
            rec(rest // f if policy == "factors" else max(1, rest // f), inner + [f])

    rec(extent, [])
    result.sort(key=lambda t: t[1:])
    return result


# ----------------------------------------------------------------------------------
# The space
# ----------------------------------------------------------------------------------


@dataclass
class Space:
    """The product of named knobs, with optional validity constraints."""

    knobs: list[Knob] = field(default_factory=list)
    constraints: list[Callable[[Config], bool]] = field(default_factory=list)

    # --- declaring knobs -------------------------------------------------------------

    def add(self, knob: Knob) -> Knob:
        """Append a knob (names must be unique)."""
        if any(k.name == knob.name for k in self.knobs):
            raise ValueError(f"duplicate knob name {knob.name!r}")
        self.knobs.append(knob)
        return knob

    def knob(self, name: str, values: Sequence[Hashable]) -> Knob:
        """A categorical or numeric option (AutoTVM's `define_knob`)."""
        return self.add(Knob(name, tuple(values), "knob"))

    def split(
        self,
        name: str,
        extent: int,
        parts: int = 2,
        policy: str = "factors",
        max_factor: int | None = None,
        candidates: Sequence[Sequence[int]] | None = None,
    ) -> Knob:
        """A loop split (AutoTVM's `define_split`): candidate tuples of `parts` extents.

        See `split_candidates`; `candidates` gives the list explicitly instead.
        """
        if candidates is not None:
            values = [tuple(int(f) for f in c) for c in candidates]
        else:
            values = split_candidates(extent, parts, policy, max_factor)
        return self.add(Knob(name, tuple(values), "split"))

    def reorder(
        self,
        name: str,
        axes: Sequence[str],
        policy: str = "all",
        candidates: Sequence[Sequence[str]] | None = None,
    ) -> Knob:
        """A loop order (AutoTVM's `define_reorder`): permutations of `axes`.

        `all`: every permutation; `identity`: only the given order; or explicit
        `candidates`.
        """
        if candidates is not None:
            values = [tuple(c) for c in candidates]
        elif policy == "all":
            values = list(itertools.permutations(axes))
        elif policy == "identity":
            values = [tuple(axes)]
        else:
            raise ValueError(f"unknown reorder policy {policy!r}")
        for v in values:
            if sorted(v) != sorted(axes):
                raise ValueError(f"{v} is not a permutation of {tuple(axes)}")
        return self.add(Knob(name, tuple(values), "reorder"))

    def annotate(
        self,
        name: str,
        axes: Sequence[str],
        choices: Sequence[str] = ("none", "unroll", "vec"),
    ) -> Knob:
        """Per-axis annotations (AutoTVM's `define_annotate`): one choice per axis."""
        values = list(itertools.product(choices, repeat=len(axes)))
        return self.add(Knob(name, tuple(values), "annotate"))

    def constrain(self, predicate: Callable[[Config], bool]) -> None:
        """Only points whose config satisfies `predicate` are valid (`multi_filter`)."""
        self.constraints.append(predicate)

    # --- size and indexing -------------------------------------------------------------

    @property
    def names(self) -> list[str]:
        return [k.name for k in self.knobs]

    @property
    def dims(self) -> tuple[int, ...]:
        """The number of candidates of each knob."""
        cached = self.__dict__.get("_dims")
        if cached is None or cached[0] != len(self.knobs):
            dims = tuple(len(k) for k in self.knobs)
            movable = tuple(i for i, d in enumerate(dims) if d > 1)
            cached = (len(self.knobs), dims, movable)
            self.__dict__["_dims"] = cached
        return cached[1]

    @property
    def _movable(self) -> tuple[int, ...]:
        self.dims  # noqa: B018 (refreshes the cache)
        return self.__dict__["_dims"][2]

    @property
    def size(self) -> int:
        """The number of points, valid or not (the product of `dims`)."""
        return math.prod(self.dims)

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, name: str) -> Knob:
        for k in self.knobs:
            if k.name == name:
                return k
        raise KeyError(name)

    def index_to_point(self, index: int) -> Point:
        """The point with mixed-radix number `index` (the last knob varies fastest)."""
        if not 0 <= index < self.size:
            raise IndexError(f"index {index} outside a space of {self.size} points")
        digits = []
        for d in reversed(self.dims):
            index, r = divmod(index, d)
            digits.append(r)
        return tuple(reversed(digits))

    def point_to_index(self, point: Sequence[int]) -> int:
        """The mixed-radix number of `point`."""
        self.check_point(point)
        index = 0
        for p, d in zip(point, self.dims):
            index = index * d + p
        return index

    def check_point(self, point: Sequence[int]) -> None:
        """Raise ValueError unless `point` has one in-range index per knob."""
        if len(point) != len(self.knobs):
            raise ValueError(f"point {tuple(point)} has {len(point)} indices, the space "
                             f"has {len(self.knobs)} knobs")
        for p, k in zip(point, self.knobs):
            if not 0 <= p < len(k):
                raise ValueError(f"index {p} out of range for knob {k.name!r} ({len(k)} values)")

    def config(self, point: Sequence[int]) -> Config:
        """The knob values of `point`."""
        self.check_point(point)
        return {k.name: k.values[p] for k, p in zip(self.knobs, point)}

    def point_of(self, config: Config) -> Point:
        """The point whose knob values are `config` (inverse of `config`)."""
        return tuple(k.index(config[k.name]) for k in self.knobs)

    def is_valid(self, point: Sequence[int]) -> bool:
        """Whether `point` satisfies every constraint."""
        if not self.constraints:
            return True
        config = self.config(point)
        return all(c(config) for c in self.constraints)

    def __iter__(self) -> Iterator[Point]:
        """The valid points in index order (lazily)."""
        for point in itertools.product(*(range(d) for d in self.dims)):
            if self.is_valid(point):
                yield point

    # --- random exploration -------------------------------------------------------------

    def random_point(self, rng: random.Random, max_tries: int = 1000) -> Point:
        """A uniformly random valid point (rejection sampling)."""
        for _ in range(max_tries):
            point = tuple(rng.randrange(d) for d in self.dims)
            if self.is_valid(point):
                return point
        raise RuntimeError(f"no valid point found in {max_tries} random draws; "
                           "the constraints reject (nearly) everything")

    def sample(
        self,
        n: int,
        rng: random.Random,
        exclude: set[Point] | frozenset[Point] = frozenset(),
        max_tries: int | None = None,
    ) -> list[Point]:
        """Up to `n` distinct random valid points not in `exclude` (without replacement).

        Rejection sampling; when it keeps failing (small or nearly exhausted spaces)
        and the space has at most 2 million points, the remaining valid points are
        enumerated and sampled from instead. Fewer than `n` points come back only
        when fewer remain.
        """
        out: list[Point] = []
        seen = set(exclude)
        tries = max_tries if max_tries is not None else 50 * n + 100
        while len(out) < n and tries > 0:
            tries -= 1
            point = tuple(rng.randrange(d) for d in self.dims)
            if point in seen:
                continue
            seen.add(point)
            if self.is_valid(point):
                out.append(point)
        if len(out) < n and self.size <= 2_000_000:
            rest = [p for p in self if p not in exclude and p not in out]
            rng.shuffle(rest)
            out.extend(rest[: n - len(out)])
        return out

    def random_walk(self, point: Point, rng: random.Random, max_tries: int = 100) -> Point:
        """`point` with one random knob changed to another random value, still valid.

        Returns `point` itself when no valid move was found in `max_tries` draws.
        """
        movable = self._movable
        if not movable:
            return point
        dims = self.dims
        for _ in range(max_tries):
            i = movable[int(rng.random() * len(movable))]
            v = int(rng.random() * (dims[i] - 1))
            v += v >= point[i]  # any value but the current one
            new = point[:i] + (v,) + point[i + 1:]
            if self.is_valid(new):
                return new
        return point

    def random_walks(self, points: Sequence[Point], rng: np.random.Generator) -> list[Point]:
        """`random_walk` of many points at once (vectorized; a point whose move is
        invalid gets up to 100 more tries one by one, else stays where it is)."""
        dims = np.asarray(self.dims, dtype=np.int64)
        movable = np.asarray(self._movable, dtype=np.int64)
        arr = np.asarray(points, dtype=np.int64).reshape(len(points), len(dims))
        if len(movable) == 0 or len(arr) == 0:
            return [tuple(int(v) for v in row) for row in arr]
        rows = np.arange(len(arr))
        knob = movable[rng.integers(0, len(movable), size=len(arr))]
        current = arr[rows, knob]
        value = rng.integers(0, dims[knob] - 1)
        value = value + (value >= current)
        new = arr.copy()
        new[rows, knob] = value
        out = [tuple(int(v) for v in row) for row in new.tolist()]
        if self.constraints:
            prng = random.Random(int(rng.integers(2**32)))
            for i, p in enumerate(out):
                if not self.is_valid(p):
                    out[i] = self.random_walk(tuple(int(v) for v in arr[i]), prng)
        return out

    def neighbors(self, point: Point, full: bool = False) -> list[Point]:
        """Valid points differing from `point` in one knob.

        By default the knob moves to an adjacent candidate (index +-1); with
        `full=True` it may take any other value.
        """
        out = []
        for i, d in enumerate(self.dims):
            values = range(d) if full else (point[i] - 1, point[i] + 1)
            for v in values:
                if v == point[i] or not 0 <= v < d:
                    continue
                new = point[:i] + (v,) + point[i + 1:]
                if self.is_valid(new):
                    out.append(new)
        return out

    def __repr__(self) -> str:
        knobs = ", ".join(f"{k.name}[{len(k)}]" for k in self.knobs)
        return f"Space({knobs}; {self.size} points, {len(self.constraints)} constraints)"
