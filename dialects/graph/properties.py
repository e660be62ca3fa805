"""Properties of graph ops: their declarations and the attributes they hold."""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import (
    DenseArrayBase,
    Float64Type,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    f64,
    i64,
)
from xdsl.irdl import base, prop_def


def int_prop():
    """A property holding one integer (an axis, a size, a flag as i1)."""
    return prop_def(IntegerAttr.constr(type=base(IntegerType)))


def f64_prop():
    """A property holding one f64 (an epsilon, an activation's alpha)."""
    return prop_def(FloatAttr.constr(base(Float64Type)))


def i64_array_prop():
    """A property holding a list of integers (strides, pads, axes, a permutation)."""
    return prop_def(DenseArrayBase.constr(i64))


def f64_attr(value: float) -> FloatAttr:
    """The attribute of an `f64_prop`."""
    return FloatAttr(float(value), f64)


def i64_array(values: Sequence[int]) -> DenseArrayBase:
    """The attribute of an `i64_array_prop`."""
    return DenseArrayBase.from_list(i64, [int(v) for v in values])
