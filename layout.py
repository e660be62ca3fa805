"""Data layouts written as strings, after TVM's: `NCHW`, `NCHW16c`, `OIHW16i16o`.

An upper-case letter is a primal axis (the whole dimension); a lower-case letter with
a factor is a block of its primal axis, split off and placed where it is written:
`NCHW16c` is [N][C/16][H][W][16], element (n, c, h, w) at [n, c // 16, h, w, c % 16].
Two layouts with the same primal axes hold the same tensor; `transform_shape`,
`transform_array` (numpy) and `source_index` (any index arithmetic, e.g. te
expressions) convert between them. The graph dialect, its interpreter, the operator
library and the layout pass share these rules.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

_TOKEN = re.compile(r"(\d*)([A-Za-z])")


@dataclass(frozen=True)
class Layout:
    """A parsed layout: per dimension (letter, factor), factor 0 for a primal axis."""

    axes: tuple[tuple[str, int], ...]

    @staticmethod
    def parse(text: str) -> Layout:
        """Parse `text`; ValueError names what is wrong."""
        axes, pos = [], 0
        for match in _TOKEN.finditer(text):
            if match.start() != pos:
                break
            digits, letter = match.groups()
            pos = match.end()
            if letter.isupper():
                if digits:
                    raise ValueError(f"layout {text!r}: primal axis {letter} takes no factor")
                axes.append((letter, 0))
            else:
                if not digits or int(digits) < 1:
                    raise ValueError(f"layout {text!r}: block {letter} needs a factor >= 1")
                axes.append((letter, int(digits)))
        if pos != len(text) or not axes:
            raise ValueError(f"layout {text!r}: expected letters such as NCHW or NCHW16c")
        letters = [a for a, _ in axes]
        if len(set(letters)) != len(letters):
            raise ValueError(f"layout {text!r}: an axis appears twice")
        for letter, factor in axes:
            if factor and letter.upper() not in letters:
                raise ValueError(f"layout {text!r}: block {letter} has no axis {letter.upper()}")
        return Layout(tuple(axes))

    @property
    def primal(self) -> str:
        """The primal axes in order (`NCHW` for `NCHW16c`)."""
        return "".join(a for a, f in self.axes if not f)

    def is_split(self, primal: str) -> bool:
        """Whether primal axis `primal` has a block dimension (even of factor 1)."""
        return any(a == primal.lower() for a, _ in self.axes)

    def factor(self, primal: str) -> int:
        """The block factor of primal axis `primal` (1 when it is not split)."""
        return next((f for a, f in self.axes if a == primal.lower() and f), 1)

    def shape(self, extents: dict[str, int]) -> tuple[int, ...]:
        """This layout's shape for the primal extents `extents`."""
        shape = []
        for letter, factor in self.axes:
            if factor:
                shape.append(factor)
                continue
            extent, block = extents[letter], self.factor(letter)
            if extent % block:
                raise ValueError(f"axis {letter} of extent {extent} does not split into blocks of {block}")
            shape.append(extent // block)
        return tuple(shape)

    def extents(self, shape: Sequence[int]) -> dict[str, int]:
        """The primal extents of a tensor of `shape` in this layout."""
        if len(shape) != len(self.axes):
            raise ValueError(f"layout {self} has {len(self.axes)} dimensions, shape {list(shape)} has {len(shape)}")
        sizes = dict(zip((a for a, _ in self.axes), shape))
        for letter, factor in self.axes:
            if factor and sizes[letter] != factor:
                raise ValueError(f"layout {self}: block {letter} has extent {sizes[letter]}, not {factor}")
        return {a: sizes[a] * self.factor(a) for a in self.primal}

    def __str__(self) -> str:
        return "".join(f"{f}{a}" if f else a for a, f in self.axes)


def blocked(primal: str, axis: str, factor: int) -> str:
    """`primal` with `axis` split into blocks of `factor`: blocked("NCHW", "C", 16) = "NCHW16c"."""
    return f"{primal}{factor}{axis.lower()}"


def _check_pair(src: Layout, dst: Layout) -> None:
    if sorted(src.primal) != sorted(dst.primal):
        raise ValueError(f"layouts {src} and {dst} have different axes")


def transform_shape(shape: Sequence[int], src: str, dst: str) -> tuple[int, ...]:
    """The shape of a `src`-layout tensor of `shape` in layout `dst` (ValueError if none)."""
    a, b = Layout.parse(src), Layout.parse(dst)
    _check_pair(a, b)
    return b.shape(a.extents(shape))


def transform_array(array: np.ndarray, src: str, dst: str) -> np.ndarray:
    """`array` (layout `src`) in layout `dst`, C-contiguous."""
    a, b = Layout.parse(src), Layout.parse(dst)
    _check_pair(a, b)
    extents = a.extents(array.shape)
    letters = [x for x, _ in a.axes]
    # To the primal layout: every block right after its axis, then merged.
    order = []
    for p in a.primal:
        order.append(letters.index(p))
        if a.is_split(p):
            order.append(letters.index(p.lower()))
    primal = array.transpose(order).reshape([extents[p] for p in a.primal])
    # To `dst`: split every blocked axis, then permute into dst's order.
    split, labels = [], []
    for p in a.primal:
        f = b.factor(p)
        if b.is_split(p):
            split += [extents[p] // f, f]
            labels += [p, p.lower()]
        else:
            split.append(extents[p])
            labels.append(p)
    out = primal.reshape(split).transpose([labels.index(x) for x, _ in b.axes])
    return np.ascontiguousarray(out)


def source_index(index: Sequence, src: str, dst: str) -> list:
    """The `src`-layout index of the element at `index` in layout `dst` (indices may be
    ints or expressions supporting `*`, `+`, `//` and `%`)."""
    a, b = Layout.parse(src), Layout.parse(dst)
    _check_pair(a, b)
    at = {x: i for x, i in zip((x for x, _ in b.axes), index)}
    coord = {}
    for p in b.primal:
        f = b.factor(p)
        coord[p] = at[p] * f + at[p.lower()] if f > 1 else at[p]
    result = []
    for letter, factor in a.axes:
        if factor:
            result.append(coord[letter.upper()] % factor)
        else:
            f = a.factor(letter)
            result.append(coord[letter] // f if f > 1 else coord[letter])
    return result
