"""Elementwise and broadcast compute definitions: math, activations, logic,
comparisons, `where` and casts (numpy broadcasting throughout)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from math import pi, sqrt

from xweave import te


def broadcast_index(tensor, out_shape: Sequence[int], idx) -> list:
    """Index `tensor` (numpy-broadcast to `out_shape`) at output index `idx`.

    `tensor` only needs a `shape` (a te tensor, or anything shaped like one).
    """
    offset = len(out_shape) - len(tensor.shape)
    return [0 if extent == 1 and out_shape[offset + d] != 1 else idx[offset + d]
            for d, extent in enumerate(tensor.shape)]


def broadcast_binary(a: te.Tensor, b: te.Tensor, out_shape: Sequence[int], fn, name: str):
    """`fn(a, b)` elementwise with numpy broadcasting."""
    return te.compute(
        tuple(out_shape),
        lambda *i: fn(a[broadcast_index(a, out_shape, i)], b[broadcast_index(b, out_shape, i)]),
        name=name,
    )


def unary(x: te.Tensor, fn, name: str):
    """`fn(x)` elementwise."""
    return te.compute(x.shape, lambda *i: fn(x[i]), name=name)


def clip(x: te.Tensor, lo: float, hi: float):
    """Clamp every element into [lo, hi]."""
    return te.compute(x.shape, lambda *i: te.min(te.max(x[i], lo), hi), name="clip")


def _sign(x):
    return te.if_then_else(x > 0.0, 1.0, te.if_then_else(x < 0.0, -1.0, 0.0))


def _elu(x, alpha: float):
    # Branch-free: max(x, 0) + alpha * (exp(min(x, 0)) - 1).
    return te.max(x, 0.0) + alpha * (te.exp(te.min(x, 0.0)) - 1.0)


def _gelu(x, approximate: str):
    if approximate == "tanh":
        inner = sqrt(2 / pi) * (x + 0.044715 * (x * x * x))
        return 0.5 * x * (1.0 + te.tanh(inner))
    return 0.5 * x * (1.0 + te.erf(x * (1 / sqrt(2))))


BINARY: dict[str, Callable] = {
    "add": lambda x, y: x + y,
    "sub": lambda x, y: x - y,
    "mul": lambda x, y: x * y,
    "div": lambda x, y: x / y,
    "max": lambda x, y: te.max(x, y),
    "min": lambda x, y: te.min(x, y),
    "pow": lambda x, y: te.pow(x, y),
    "prelu": lambda x, s: te.max(x, 0.0) + s * te.min(x, 0.0),
    "and": lambda x, y: te.all(x, y),
    "or": lambda x, y: te.any(x, y),
    "xor": lambda x, y: x != y,
    "equal": lambda x, y: x == y,
    "less": lambda x, y: x < y,
    "less_equal": lambda x, y: x <= y,
    "greater": lambda x, y: x > y,
    "greater_equal": lambda x, y: x >= y,
}
"""Broadcast binary ops by graph op name (without the `graph.` prefix)."""

UNARY: dict[str, Callable] = {
    "relu": lambda x: te.max(x, 0.0),
    "sigmoid": lambda x: te.sigmoid(x),
    "tanh": lambda x: te.tanh(x),
    "exp": lambda x: te.exp(x),
    "neg": lambda x: -x,
    "sqrt": lambda x: te.sqrt(x),
    "abs": lambda x: te.abs(x),
    "log": lambda x: te.log(x),
    "erf": lambda x: te.erf(x),
    "reciprocal": lambda x: 1.0 / x,
    # log(1 + exp(x)) without overflow: max(x, 0) + log1p(exp(-|x|)).
    "softplus": lambda x: te.max(x, 0.0) + te.log1p(te.exp(-te.abs(x))),
    "softsign": lambda x: x / (1.0 + te.abs(x)),
    "sign": _sign,
    "floor": lambda x: te.floor(x),
    "ceil": lambda x: te.ceil(x),
    "round": lambda x: te.round(x),
    "sin": lambda x: te.sin(x),
    "cos": lambda x: te.cos(x),
    "hard_swish": lambda x: x * te.max(te.min(x * (1 / 6) + 0.5, 1.0), 0.0),
    "not": lambda x: x == False,  # noqa: E712  (an i1 comparison, not Python's)
}
"""Parameterless elementwise ops by graph op name."""

PARAMETRIC_UNARY: dict[str, Callable[..., Callable]] = {
    "leaky_relu": lambda alpha: lambda x: te.max(x, 0.0) + alpha * te.min(x, 0.0),
    "elu": lambda alpha: lambda x: _elu(x, alpha),
    "selu": lambda alpha, gamma: lambda x: gamma * _elu(x, alpha),
    "hard_sigmoid": lambda alpha, beta: lambda x: te.max(te.min(alpha * x + beta, 1.0), 0.0),
    "gelu": lambda approximate: lambda x: _gelu(x, approximate),
    "shrink": lambda lambd, bias: lambda x: te.if_then_else(
        x > lambd, x - bias, te.if_then_else(x < -lambd, x + bias, 0.0)),
}
"""Elementwise ops with parameters: name -> (**params -> fn)."""


def where(cond: te.Tensor, x: te.Tensor, y: te.Tensor, out_shape: Sequence[int]):
    """x where cond holds, else y (all three broadcast)."""
    out_shape = tuple(out_shape)
    return te.compute(
        out_shape,
        lambda *i: te.if_then_else(
            cond[broadcast_index(cond, out_shape, i)],
            x[broadcast_index(x, out_shape, i)],
            y[broadcast_index(y, out_shape, i)],
        ),
        name="where",
    )


def cast(x: te.Tensor, dtype: str):
    """Every element converted to `dtype` (floats truncate to ints; non-zero is true)."""
    return te.compute(x.shape, lambda *i: te.cast(x[i], dtype), name="cast")
