"""Winograd F(m, 3) transform matrices (Lavin & Gray), shared by the graph pass that
rewrites convolutions, the te definitions of the transforms and the graph interpreter.

The matrices come from the Cook-Toom construction on the points 0, 1, -1, 2, -2, ...
and infinity; B^T has integer entries, so the transforms compiled from it are short
sums of the tile's values (`sparse_sum`).
"""

from __future__ import annotations

from fractions import Fraction
from functools import cache
from math import lcm

import numpy as np



def _points(count: int) -> list[Fraction]:
    """0, 1, -1, 2, -2, ...: the first `count` finite interpolation points."""
    points = [Fraction(0)]
    step = 1
    while len(points) < count:
        points += [Fraction(step), Fraction(-step)]
        step += 1
    return points[:count]


def _inverse(matrix: list[list[Fraction]]) -> list[list[Fraction]]:
    """Exact Gauss-Jordan inverse of a small nonsingular matrix."""
    n = len(matrix)
    rows = [list(row) + [Fraction(int(i == j)) for j in range(n)] for i, row in enumerate(matrix)]
    for col in range(n):
        pivot = next(r for r in range(col, n) if rows[r][col] != 0)
        rows[col], rows[pivot] = rows[pivot], rows[col]
        scale = rows[col][col]
        rows[col] = [v / scale for v in rows[col]]
        for r in range(n):
            if r != col and rows[r][col] != 0:
                factor = rows[r][col]
                rows[r] = [v - factor * p for v, p in zip(rows[r], rows[col])]
    return [row[n:] for row in rows]


@cache
def winograd_matrices(tile: int, kernel: int = 3) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(A^T [m][a], G [a][r], B^T [a][a]) of F(m, r) with a = m + r - 1, so that for a
    signal d of a values and a filter g of r, the correlation y[i] = sum_k g[k] d[i + k]
    equals A^T ((G g) * (B^T d)).

    Linear convolution evaluates both polynomials at a points (the Vandermonde rows
    [1, f, f^2, ...], infinity as the leading coefficient) and interpolates with the
    inverse V^-1; correlation is its transpose: A^T = (first m columns of V)^T,
    G = first r columns of V, B^T = V^-T. Each row of B^T is scaled to coprime
    integers, its row of G by the inverse."""
    a = tile + kernel - 1
    vandermonde = [[f**k for k in range(a)] for f in _points(a - 1)]
    vandermonde.append([Fraction(int(k == a - 1)) for k in range(a)])
    inverse = _inverse(vandermonde)
    bt = [[inverse[k][j] for k in range(a)] for j in range(a)]  # V^-T
    # at infinity, the leading coefficients: g's last tap, the signal's last value
    g = [row[:kernel] for row in vandermonde[:-1]] + [[Fraction(int(k == kernel - 1))
                                                      for k in range(kernel)]]
    at = [[vandermonde[j][i] if j < a - 1 else Fraction(int(i == tile - 1)) for j in range(a)]
          for i in range(tile)]
    for j, row in enumerate(bt):
        scale = Fraction(lcm(*(v.denominator for v in row)))
        numerators = [int(v * scale) for v in row]
        common = np.gcd.reduce([abs(v) for v in numerators if v]) if any(numerators) else 1
        scale /= int(common)
        bt[j] = [v * scale for v in row]
        g[j] = [v / scale for v in g[j]]
    as_array = lambda m: np.array([[float(v) for v in row] for row in m])  # noqa: E731
    return as_array(at), as_array(g), as_array(bt)


def sparse_sum(coefficients, values):
    """sum of c * v over the nonzero coefficients, +-1 as additions/subtractions: the
    expression a compile-time constant row of a transform makes (numbers or te exprs)."""
    total = None
    for c, v in zip(coefficients, values):
        c = float(c)
        if c == 0:
            continue
        if total is None:
            total = v if c == 1 else -v if c == -1 else c * v
        else:
            total = total + v if c == 1 else total - v if c == -1 else total + c * v
    if total is None:
        raise ValueError("sparse_sum of an all-zero row")
    return total
