"""Reference semantics of the te dialect, vectorised with numpy.

A `te.compute` body is evaluated once over its whole index domain: each block
argument is bound to a broadcastable `np.arange` grid (reduce axes included), the
scalar ops of the body run elementwise on arrays (the numpy table below), and the
result is reduced along the reduce axes. `te.extract` gathers with clamped indices
and `te.if` selects with `np.where`: clamping makes the untaken branch safe to
evaluate. Very large domains are evaluated in slabs of the spatial domain.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from xdsl.dialects import arith, math
from xdsl.dialects.builtin import TensorType
from xdsl.interpreter import (
    Interpreter,
    InterpreterFunctions,
    PythonValues,
    ReturnedValues,
    TerminatorValue,
    impl,
    impl_terminator,
    register_impls,
)
from xdsl.interpreters.shaped_array import ShapedArray
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.utils.exceptions import InterpretationError

from xweave.dialects import dtypes, te
from xweave.dialects.interpreters.numpy_ops import FLOAT_FUNCTIONS, MATH_FUNCTIONS

MAX_DOMAIN_ELEMENTS = 1 << 22
"""Domains larger than this are evaluated in slabs, to bound memory."""


def numpy_dtype(typ: Attribute) -> np.dtype:
    """The numpy dtype holding values of a scalar MLIR type."""
    try:
        return dtypes.numpy_dtype(typ)
    except dtypes.DtypeError as error:
        raise InterpretationError(f"te interpreter: {error}") from None


def as_array(value) -> np.ndarray:
    """A tensor value as a numpy array."""
    if isinstance(value, ShapedArray):
        return np.asarray(value.data).reshape(value.shape)
    return np.asarray(value)


# --- numpy implementations of the scalar ops a body may hold ---------------------


def _divsi(a, b):
    """Division rounding toward zero (C semantics)."""
    q = np.abs(a) // np.abs(b)
    return np.where((a < 0) != (b < 0), -q, q)


def _cmpi(predicate: int, a, b):
    if predicate >= 6:  # unsigned
        a, b = np.asarray(a).astype(np.uint64), np.asarray(b).astype(np.uint64)
    compare = (np.equal, np.not_equal, np.less, np.less_equal, np.greater, np.greater_equal)
    return compare[predicate if predicate < 6 else predicate - 4](a, b)


def _cmpf(predicate: int, a, b):
    unordered = np.isnan(a) | np.isnan(b)
    if predicate in (0, 15):
        return np.full(np.broadcast(a, b).shape, predicate == 15)
    if predicate == 7:
        return ~unordered
    if predicate == 14:
        return unordered
    compare = (None, np.equal, np.greater, np.greater_equal, np.less, np.less_equal,
               np.not_equal)[(predicate - 1) % 7 + 1]
    if predicate < 8:  # ordered
        return compare(a, b) & ~unordered
    return compare(a, b) | unordered


_FUNCTIONS: dict[type[Operation], Callable] = {
    **MATH_FUNCTIONS,
    **FLOAT_FUNCTIONS,
    arith.AddiOp: np.add, arith.SubiOp: np.subtract, arith.MuliOp: np.multiply,
    arith.DivSIOp: _divsi,
    arith.FloorDivSIOp: np.floor_divide, arith.CeilDivSIOp: lambda a, b: -(-a // b),
    arith.RemSIOp: np.fmod,
    arith.MaxSIOp: np.maximum, arith.MinSIOp: np.minimum,
    arith.AndIOp: np.bitwise_and, arith.OrIOp: np.bitwise_or, arith.XOrIOp: np.bitwise_xor,
    arith.ShLIOp: np.left_shift, arith.ShRSIOp: np.right_shift,
}
"""The body ops computed by one numpy function of their operands."""

_CASTS = (
    arith.IndexCastOp, arith.ExtSIOp, arith.ExtUIOp, arith.TruncIOp, arith.SIToFPOp,
    arith.UIToFPOp, arith.FPToSIOp, arith.FPToUIOp, arith.ExtFOp, arith.TruncFOp,
)


def _unsigned(value, typ: Attribute):
    """A signless integer (array) of type `typ`, its bits read as unsigned."""
    return np.asarray(value).astype(numpy_dtype(typ)).view(f"u{numpy_dtype(typ).itemsize}")


_UNSIGNED_FUNCTIONS: dict[type[Operation], Callable] = {
    arith.ExtUIOp: lambda a: a, arith.UIToFPOp: lambda a: a,
    arith.MaxUIOp: np.maximum, arith.MinUIOp: np.minimum,
    arith.DivUIOp: np.floor_divide, arith.RemUIOp: np.remainder,
}
"""Ops reading their integer operands as unsigned (then cast to the result type)."""


def _run_scalar_op(op: Operation, args: list):
    """One body op applied elementwise to (broadcastable) numpy operands."""
    if type(op) in _UNSIGNED_FUNCTIONS:
        unsigned = [_unsigned(a, v.type) for a, v in zip(args, op.operands)]
        return _UNSIGNED_FUNCTIONS[type(op)](*unsigned)
    if type(op) in _FUNCTIONS:
        return _FUNCTIONS[type(op)](*args)
    if isinstance(op, _CASTS):
        return args[0]  # the conversion is the cast to the result dtype
    if isinstance(op, arith.ConstantOp):
        return op.value.value.data
    if isinstance(op, arith.SelectOp):
        return np.where(*args)
    if isinstance(op, arith.CmpiOp):
        return _cmpi(op.predicate.value.data, *args)
    if isinstance(op, arith.CmpfOp):
        return _cmpf(op.predicate.value.data, *args)
    if isinstance(op, math.FmaOp):
        return args[0] * args[1] + args[2]
    raise InterpretationError(f"te interpreter: {op.name} is not supported in a te body")


class _BodyEvaluator:
    """Evaluates a te body over arrays; values from outside come from `lookup`."""

    def __init__(self, lookup: Callable[[SSAValue], object]):
        self.lookup = lookup
        self.env: dict[SSAValue, object] = {}

    def get(self, value: SSAValue):
        return self.env[value] if value in self.env else self.lookup(value)

    def run_block(self, block: Block):
        """The value the block yields."""
        for op in block.ops:
            if isinstance(op, te.YieldOp):
                return self.get(op.value)
            if isinstance(op, te.IfOp):
                cond = self.get(op.cond)
                then = self.run_block(op.then_region.block)
                otherwise = self.run_block(op.else_region.block)
                result = np.where(cond, then, otherwise)
            elif isinstance(op, te.ExtractOp):
                tensor = as_array(self.get(op.tensor))
                indices = tuple(
                    np.clip(self.get(i), 0, extent - 1)
                    for i, extent in zip(op.indices, tensor.shape)
                )
                result = tensor[indices]
            else:
                result = _run_scalar_op(op, [self.get(v) for v in op.operands])
            (res,) = op.results
            self.env[res] = np.asarray(result).astype(numpy_dtype(res.type), copy=False)
        raise InterpretationError("te interpreter: block without te.yield")


_REDUCE = {
    te.Reducer.SUM: np.add, te.Reducer.MAX: np.maximum,
    te.Reducer.MIN: np.minimum, te.Reducer.PROD: np.multiply,
}


def _evaluate(op: te.ComputeOp, lookup, ranges: list[tuple[int, int]]) -> np.ndarray:
    """The values of `op` over the spatial box `ranges` (whole reduce domain)."""
    reduce_extents = op.reduce_extents
    widths = [hi - lo for lo, hi in ranges]
    extents = widths + list(reduce_extents)
    if np.prod(extents) > MAX_DOMAIN_ELEMENTS and max(widths, default=1) > 1:
        axis = widths.index(max(widths))  # split the widest spatial range in two
        lo, hi = ranges[axis]
        halves = [ranges[:axis] + [r] + ranges[axis + 1:] for r in ((lo, (lo + hi) // 2),
                                                                    ((lo + hi) // 2, hi))]
        return np.concatenate([_evaluate(op, lookup, h) for h in halves], axis=axis)
    rank = len(extents)
    grids = [
        np.arange(lo, hi, dtype=np.int64).reshape([1] * d + [hi - lo] + [1] * (rank - d - 1))
        for d, (lo, hi) in enumerate(ranges + [(0, e) for e in reduce_extents])
    ]
    evaluator = _BodyEvaluator(lookup)
    evaluator.env.update(zip(op.body.block.args, grids))
    with np.errstate(all="ignore"):  # the untaken side of a te.if may divide by zero
        values = np.broadcast_to(evaluator.run_block(op.body.block), extents)
    result_type = op.result.type
    assert isinstance(result_type, TensorType)
    dtype = numpy_dtype(result_type.element_type)
    if op.reducer is not None:
        axes = tuple(range(len(ranges), rank))
        if dtype.kind in "iu":  # (signless values of an unsigned result: its bits)
            values = values.astype(dtype)
        values = _REDUCE[op.reducer.data].reduce(values, axis=axes, dtype=dtype)
    return np.array(values, dtype=dtype)


def evaluate_compute(op: te.ComputeOp, lookup: Callable[[SSAValue], object]) -> np.ndarray:
    """The tensor a `te.compute` defines; `lookup` gives values defined outside it."""
    return _evaluate(op, lookup, [(0, e) for e in op.spatial_shape])


@register_impls
class TeFunctions(InterpreterFunctions):
    """numpy implementations of the te ops."""

    @impl(te.ComputeOp)
    def run_compute(
        self, interpreter: Interpreter, op: te.ComputeOp, args: PythonValues
    ) -> PythonValues:
        return (evaluate_compute(op, lambda v: interpreter.get_values((v,))[0]),)

    # The ops below only run on their own outside a te.compute (one scalar at a time).

    @impl(te.ExtractOp)
    def run_extract(
        self, interpreter: Interpreter, op: te.ExtractOp, args: PythonValues
    ) -> PythonValues:
        tensor, *indices = args
        return (as_array(tensor)[tuple(indices)],)

    @impl(te.IfOp)
    def run_if(self, interpreter: Interpreter, op: te.IfOp, args: PythonValues) -> PythonValues:
        region = op.then_region if args[0] else op.else_region
        return interpreter.run_ssacfg_region(region, (), "te.if")

    @impl_terminator(te.YieldOp)
    def run_yield(
        self, interpreter: Interpreter, op: te.YieldOp, args: PythonValues
    ) -> tuple[TerminatorValue, PythonValues]:
        return ReturnedValues(args), ()
