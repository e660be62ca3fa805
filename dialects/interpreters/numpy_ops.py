"""numpy functions for the scalar ops of xDSL's `math` and `arith` dialects.

The te and loop interpreters both evaluate these ops by one numpy function of the
operands (elementwise, so scalars and arrays alike); the result is cast to the op's
result type by the caller.
"""

from __future__ import annotations

import math as pymath
from collections.abc import Callable
from typing import Any

import numpy as np
from xdsl.dialects import arith, math
from xdsl.ir import Operation

erf = np.vectorize(pymath.erf, otypes=[np.float64])
"""The error function, elementwise (numpy has none)."""


def round_half_away(x: Any) -> Any:
    """math.round: to the nearest integer, halfway cases away from zero."""
    return np.sign(x) * np.floor(np.abs(x) + 0.5)


MATH_FUNCTIONS: dict[type[Operation], Callable[..., Any]] = {
    math.AbsFOp: np.abs,
    math.AbsIOp: np.abs,
    math.AtanOp: np.arctan,
    math.Atan2Op: np.arctan2,
    math.CeilOp: np.ceil,
    math.CopySignOp: np.copysign,
    math.CosOp: np.cos,
    math.CoshOp: np.cosh,
    math.ErfOp: erf,
    math.ExpOp: np.exp,
    math.Exp2Op: np.exp2,
    math.ExpM1Op: np.expm1,
    math.FloorOp: np.floor,
    math.LogOp: np.log,
    math.Log10Op: np.log10,
    math.Log1pOp: np.log1p,
    math.Log2Op: np.log2,
    math.PowFOp: np.power,
    math.RoundOp: round_half_away,
    math.RoundEvenOp: np.rint,
    math.RsqrtOp: lambda x: 1 / np.sqrt(x),
    math.SinOp: np.sin,
    math.SinhOp: np.sinh,
    math.SqrtOp: np.sqrt,
    math.TanOp: np.tan,
    math.TanhOp: np.tanh,
    math.TruncOp: np.trunc,
}
"""The `math` ops of one numpy function (math.fma is left to each interpreter)."""

FLOAT_FUNCTIONS: dict[type[Operation], Callable[..., Any]] = {
    arith.AddfOp: np.add,
    arith.SubfOp: np.subtract,
    arith.MulfOp: np.multiply,
    arith.DivfOp: np.divide,
    arith.NegfOp: np.negative,
    arith.MaximumfOp: np.maximum,
    arith.MinimumfOp: np.minimum,
    arith.MaxnumfOp: np.fmax,
    arith.MinnumfOp: np.fmin,
}
"""The floating-point `arith` ops of one numpy function."""
