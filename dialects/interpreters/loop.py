"""Reference semantics of the loop stage, on numpy arrays.

Buffers (memrefs) are numpy arrays, written in place; `index` values are Python ints;
scalars are numpy scalars of their exact type (so f32 code computes in f32), vectors
1-D numpy arrays. Besides the `loop` dialect (globals included, whose `dense` or
`dense_resource` values become read-only arrays) this covers what the loop stage uses
beyond xDSL's interpreters: `memref.get_global`, `vector` and `math` ops, and the
`arith` ops that xDSL's interpreter lacks or that fail on numpy values.
`make_interpreter` registers these with `override=True`.
"""

from __future__ import annotations

import math as pymath
from collections.abc import Callable
from typing import Any

import numpy as np
from xdsl.dialects import arith, math, memref, vector
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    Signedness,
    DenseResourceAttr,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    SymbolRefAttr,
    VectorType,
)
from xdsl.interpreter import (
    Interpreter,
    InterpreterFunctions,
    OpImplResult,
    PythonValues,
    ReturnedValues,
    TerminatorValue,
    impl,
    impl_terminator,
    register_impls,
)
from xdsl.interpreters.arith import ArithFunctions
from xdsl.ir import Attribute, Operation
from xdsl.ir.affine import (
    AffineBinaryOpExpr,
    AffineBinaryOpKind,
    AffineConstantExpr,
    AffineDimExpr,
    AffineExpr,
    AffineMap,
    AffineSymExpr,
)
from xdsl.traits import SymbolTable
from xdsl.utils.exceptions import InterpretationError

from xweave.dialects import loop
from xweave.dialects.dtypes import numpy_dtype
from xweave.dialects.resources import resource_array
from xweave.dialects.interpreters.numpy_ops import FLOAT_FUNCTIONS, MATH_FUNCTIONS

def _cast(value: Any, type: Attribute) -> Any:
    """`value` as a value of `type`: numpy array for vectors, int for index, else numpy scalar."""
    if isinstance(type, VectorType):
        return np.asarray(value).astype(numpy_dtype(type.element_type))
    if isinstance(type, IndexType):
        return int(value)
    return np.asarray(value).astype(numpy_dtype(type))[()]  # wraps like a C cast


def _is_vector(*values: Any) -> bool:
    return any(isinstance(v, np.ndarray) for v in values)


def _elementwise(fn: Callable[..., Any]):
    """An implementation applying numpy `fn` to the operands, cast to the result type."""

    def run(self, interpreter: Interpreter, op: Operation, args: PythonValues):
        with np.errstate(all="ignore"):  # inf/nan results are values, not errors
            return (_cast(fn(*args), op.results[0].type),)

    return run


def _fused(a: Any, b: Any, c: Any) -> Any:
    """a * b + c with a single rounding (computed in f64, then cast by the caller)."""
    return np.asarray(a, np.float64) * b + np.asarray(c, np.float64)


def _unsigned(value: Any, type: Attribute) -> Any:
    """An integer (or vector of them) of `type` reinterpreted as unsigned."""
    if isinstance(type, VectorType):
        type = type.element_type
    assert isinstance(type, IntegerType)
    return np.asarray(value).astype(f"uint{max(8, type.width.data)}")


def _int_op(upstream: Callable[..., OpImplResult], vector_fn: Callable[..., Any] | None = None):
    """xDSL's scalar integer op on Python ints; `vector_fn` (numpy) on vectors."""

    def run(self, interpreter: Interpreter, op: Operation, args: PythonValues):
        if not _is_vector(*args):
            return upstream(self, interpreter, op, tuple(int(a) for a in args)).values
        if vector_fn is None:
            raise InterpretationError(f"{op.name} on vectors is not implemented")
        with np.errstate(all="ignore"):
            return (_cast(vector_fn(*args), op.results[0].type),)

    return run


_CMPF = {
    0: lambda a, b, o: np.zeros_like(o),  # false
    1: lambda a, b, o: (a == b) & o,  # oeq
    2: lambda a, b, o: (a > b) & o,  # ogt
    3: lambda a, b, o: (a >= b) & o,  # oge
    4: lambda a, b, o: (a < b) & o,  # olt
    5: lambda a, b, o: (a <= b) & o,  # ole
    6: lambda a, b, o: (a != b) & o,  # one
    7: lambda a, b, o: o,  # ord
    8: lambda a, b, o: (a == b) | ~o,  # ueq
    9: lambda a, b, o: (a > b) | ~o,  # ugt
    10: lambda a, b, o: (a >= b) | ~o,  # uge
    11: lambda a, b, o: (a < b) | ~o,  # ult
    12: lambda a, b, o: (a <= b) | ~o,  # ule
    13: lambda a, b, o: (a != b) | ~o,  # une
    14: lambda a, b, o: ~o,  # uno
    15: lambda a, b, o: np.ones_like(o),  # true
}

_REDUCTIONS: dict[str, Callable[[np.ndarray], Any]] = {
    "add": np.sum,
    "mul": np.prod,
    "maxnumf": np.nanmax,
    "minnumf": np.nanmin,
    "maximumf": np.max,
    "minimumf": np.min,
    "maxsi": np.max,
    "minsi": np.min,
    "maxui": np.max,
    "minui": np.min,
    "and": np.bitwise_and.reduce,
    "or": np.bitwise_or.reduce,
    "xor": np.bitwise_xor.reduce,
}

_COMBINE: dict[str, Callable[[Any, Any], Any]] = {
    "add": np.add,
    "mul": np.multiply,
    "maxnumf": np.fmax,
    "minnumf": np.fmin,
    "maximumf": np.maximum,
    "minimumf": np.minimum,
    "maxsi": np.maximum,
    "minsi": np.minimum,
    "maxui": np.maximum,
    "minui": np.minimum,
    "and": np.bitwise_and,
    "or": np.bitwise_or,
    "xor": np.bitwise_xor,
}


def _resource_array(attr: DenseResourceAttr) -> np.ndarray:
    """The values of a `dense_resource` blob."""
    element_type = attr.type.get_element_type()
    storage = np.dtype(element_type.format)  # little-endian struct format, e.g. "<f"
    try:
        values = resource_array(attr, storage, attr.type.get_shape())
    except ValueError as e:
        raise InterpretationError(str(e)) from None
    return values.astype(numpy_dtype(element_type))


def _dense_array(attr: DenseIntOrFPElementsAttr) -> np.ndarray:
    """The values of a `dense<...>` attribute, splats expanded."""
    element_type = attr.get_element_type()
    values = np.frombuffer(attr.data.data, np.dtype(element_type.format))
    values = values.astype(numpy_dtype(element_type))
    shape = attr.get_shape()
    if values.size == 1:
        return np.full(shape, values[0])
    return values.reshape(shape)


NUMPY_FUNCTIONS: dict[type[Operation], Callable[..., Any]] = {
    vector.FMAOp: _fused,
    math.FmaOp: _fused,
    **MATH_FUNCTIONS,
    **FLOAT_FUNCTIONS,
    # conversions: the cast to the result type, after rounding or reinterpreting
    arith.SIToFPOp: lambda x: x,
    arith.ExtFOp: lambda x: x,
    arith.TruncFOp: lambda x: x,
    arith.FPToSIOp: np.trunc,
    arith.FPToUIOp: np.trunc,
    arith.ExtSIOp: lambda x: x,
    arith.TruncIOp: lambda x: x,
    # integers that need no Python ints
    arith.CeilDivSIOp: lambda a, b: -(-a // b),
    arith.MaxSIOp: np.maximum,
    arith.MinSIOp: np.minimum,
}
"""Ops computed by one numpy function of their operands, cast to the result type."""

INTEGER_FUNCTIONS: dict[
    type[Operation], tuple[Callable[..., OpImplResult], Callable[..., Any] | None]
] = {
    arith.AddiOp: (ArithFunctions.run_addi, np.add),
    arith.SubiOp: (ArithFunctions.run_subi, np.subtract),
    arith.MuliOp: (ArithFunctions.run_muli, np.multiply),
    arith.AndIOp: (ArithFunctions.run_andi, np.bitwise_and),
    arith.OrIOp: (ArithFunctions.run_ori, np.bitwise_or),
    arith.XOrIOp: (ArithFunctions.run_xori, np.bitwise_xor),
    arith.ShLIOp: (ArithFunctions.run_shlsi, np.left_shift),
    arith.ShRSIOp: (ArithFunctions.run_shrsi, np.right_shift),
    arith.DivSIOp: (ArithFunctions.run_divsi, None),
    arith.RemSIOp: (ArithFunctions.run_remsi, None),
    arith.FloorDivSIOp: (ArithFunctions.run_floordivsi, None),
    arith.CmpiOp: (ArithFunctions.run_cmpi, None),
    arith.IndexCastOp: (ArithFunctions.run_indexcast, None),
}
"""arith integer ops: xDSL's scalar implementation (which needs Python ints), and the
numpy function for vectors (None: scalars only)."""


class LoopFunctions(InterpreterFunctions):
    """The loop stage on numpy arrays (see the module docstring); the ops of
    `NUMPY_FUNCTIONS` and `INTEGER_FUNCTIONS` are registered below the class."""

    def __init__(self) -> None:
        self._globals: dict[Operation, np.ndarray] = {}
        self._accesses: dict[Operation, _Access] = {}

    def _access(self, op: loop.LoadOp | loop.StoreOp) -> _Access:
        access = self._accesses.get(op)
        if access is None:
            access = self._accesses[op] = _Access(op)
        return access

    # ---- loop -------------------------------------------------------------------

    @impl(loop.ForOp)
    def run_for(self, interpreter: Interpreter, op: loop.ForOp, args: PythonValues):
        for i in op.range:
            interpreter.run_ssacfg_region(op.body, (i,), "loop.for")
        return ()

    @impl_terminator(loop.YieldOp)
    def run_yield(
        self, interpreter: Interpreter, op: loop.YieldOp, args: PythonValues
    ) -> tuple[TerminatorValue, PythonValues]:
        return ReturnedValues(()), ()

    @impl(loop.AllocOp)
    def run_alloc(self, interpreter: Interpreter, op: loop.AllocOp, args: PythonValues):
        memref_type = op.memref.type
        assert isinstance(memref_type, MemRefType)
        dtype = numpy_dtype(memref_type.get_element_type())
        return (np.zeros(memref_type.get_shape(), dtype),)

    @impl(loop.ViewOp)
    def run_view(self, interpreter: Interpreter, op: loop.ViewOp, args: PythonValues):
        (source,) = args
        result_type = op.result.type
        assert isinstance(result_type, MemRefType)
        dtype = numpy_dtype(result_type.get_element_type())
        nbytes = loop.buffer_bytes(result_type)
        raw = source[op.offset : op.offset + nbytes]
        return (raw.view(dtype).reshape(result_type.get_shape()),)

    @impl(loop.LoadOp)
    def run_load(self, interpreter: Interpreter, op: loop.LoadOp, args: PythonValues):
        buffer, *indices = args
        access = self._access(op)
        value = buffer[access.where(buffer, indices)]
        return (value.reshape(-1).copy() if access.vector_type is not None else value,)

    @impl(loop.StoreOp)
    def run_store(self, interpreter: Interpreter, op: loop.StoreOp, args: PythonValues):
        value, buffer, *indices = args
        access = self._access(op)
        where = access.where(buffer, indices)
        buffer[where] = np.reshape(value, buffer[where].shape) if access.vector_type else value
        return ()

    @impl(loop.PrefetchOp)
    def run_prefetch(self, interpreter: Interpreter, op: loop.PrefetchOp, args: PythonValues):
        return ()  # a cache hint

    # ---- constants: loop.global / memref.global ----------------------------------

    @impl(loop.GetGlobalOp)
    def run_get_global(
        self, interpreter: Interpreter, op: loop.GetGlobalOp, args: PythonValues
    ):
        return (self._global(op, op.global_name),)

    @impl(memref.GetGlobalOp)
    def run_memref_get_global(
        self, interpreter: Interpreter, op: memref.GetGlobalOp, args: PythonValues
    ):
        return (self._global(op, op.name_),)

    def _global(self, op: Operation, name: SymbolRefAttr) -> np.ndarray:
        """The (cached, shared) buffer of the global `name`; read-only if constant."""
        global_op = SymbolTable.lookup_symbol(op, name)
        if not isinstance(global_op, loop.GlobalOp | memref.GlobalOp):
            raise InterpretationError(f"{op.name}: {name} is not a global")
        if global_op not in self._globals:
            initial = global_op.initial_value
            if isinstance(initial, DenseIntOrFPElementsAttr):
                array = _dense_array(initial)
            elif isinstance(initial, DenseResourceAttr):
                array = _resource_array(initial)
            elif isinstance(global_op, memref.GlobalOp) and global_op.constant is None:
                # `= uninitialized`: writable storage (e.g. plan-memory's arena)
                array = np.zeros(
                    global_op.type.get_shape(), numpy_dtype(global_op.type.get_element_type())
                )
            else:
                raise InterpretationError(f"global {name} has no dense initial value")
            array = array.reshape(global_op.type.get_shape())
            if isinstance(global_op, loop.GlobalOp) or global_op.constant is not None:
                array.flags.writeable = False
            self._globals[global_op] = array
        return self._globals[global_op]

    # ---- vector -----------------------------------------------------------------

    @impl(vector.BroadcastOp)
    def run_broadcast(
        self, interpreter: Interpreter, op: vector.BroadcastOp, args: PythonValues
    ):
        result_type = op.vector.type
        dtype = numpy_dtype(result_type.element_type)
        return (np.broadcast_to(np.asarray(args[0], dtype), result_type.get_shape()).copy(),)


    @impl(vector.ReductionOp)
    def run_reduction(
        self, interpreter: Interpreter, op: vector.ReductionOp, args: PythonValues
    ):
        kind = op.kind.data
        if kind not in _REDUCTIONS:
            raise InterpretationError(f"vector.reduction <{kind}> is not implemented")
        with np.errstate(all="ignore"):
            result = _REDUCTIONS[kind](args[0])
            if len(args) == 2:  # the accumulator
                result = _COMBINE[kind](args[1], result)
        return (_cast(result, op.dest.type),)

    @impl(vector.ExtractOp)
    def run_extract(self, interpreter: Interpreter, op: vector.ExtractOp, args: PythonValues):
        source, *dynamic = args
        positions = iter(dynamic)
        index = tuple(
            int(next(positions)) if not isinstance(p, int) else p
            for p in op.get_mixed_position()
        )
        value = source[index]
        return (value.copy() if isinstance(value, np.ndarray) else value,)

    # ---- arith: constants, selects and conversions on numpy values ----------------

    @impl(arith.ConstantOp)
    def run_constant(self, interpreter: Interpreter, op: arith.ConstantOp, args: PythonValues):
        value = op.value
        if isinstance(value, IntegerAttr):
            return (value.value.data,)
        if isinstance(value, FloatAttr):
            return (_cast(value.value.data, op.result.type),)
        if isinstance(value, DenseIntOrFPElementsAttr):
            return (_dense_array(value),)
        raise InterpretationError(f"arith.constant {value} is not implemented")

    @impl(arith.CmpfOp)
    def run_cmpf(self, interpreter: Interpreter, op: arith.CmpfOp, args: PythonValues):
        lhs, rhs = args
        ordered = ~(np.isnan(lhs) | np.isnan(rhs))
        result = _CMPF[op.predicate.value.data](lhs, rhs, ordered)
        return (result if _is_vector(lhs, rhs) else bool(result),)

    @impl(arith.SelectOp)
    def run_select(self, interpreter: Interpreter, op: arith.SelectOp, args: PythonValues):
        cond, lhs, rhs = args
        if isinstance(cond, np.ndarray):
            return (np.where(cond, lhs, rhs),)
        return (lhs if cond else rhs,)

    @impl(arith.UIToFPOp)
    def run_uitofp(self, interpreter: Interpreter, op: arith.UIToFPOp, args: PythonValues):
        return (_cast(_unsigned(args[0], op.input.type), op.result.type),)

    @impl(arith.ExtUIOp)
    def run_extui(self, interpreter: Interpreter, op: arith.ExtUIOp, args: PythonValues):
        return (_cast(_unsigned(args[0], op.input.type), op.result.type),)

    @impl(arith.MaxUIOp)
    def run_maxui(self, interpreter: Interpreter, op: arith.MaxUIOp, args: PythonValues):
        a, b = (_unsigned(v, op.lhs.type) for v in args)
        return (_cast(np.maximum(a, b), op.result.type),)

    @impl(arith.MinUIOp)
    def run_minui(self, interpreter: Interpreter, op: arith.MinUIOp, args: PythonValues):
        a, b = (_unsigned(v, op.lhs.type) for v in args)
        return (_cast(np.minimum(a, b), op.result.type),)


def _saturated(value: Any, type: Attribute) -> Any:
    """A float (or floats) converted to the integer `type`, saturating (NaN: 0)."""
    element = type.element_type if isinstance(type, VectorType) else type
    info = np.iinfo(numpy_dtype(element))
    clean = np.nan_to_num(np.trunc(np.asarray(value, np.float64)), nan=0.0)
    return _cast(np.clip(clean, info.min, info.max), type)


@register_impls
class LoopVectorMathFunctions(InterpreterFunctions):
    """`loop.convert` and `loop.dot` (dialects/loop/vector_math.py)."""

    @impl(loop.ConvertOp)
    def run_convert(self, interpreter: Interpreter, op: loop.ConvertOp, args: PythonValues):
        (value,), kind, target = args, op.kind.data, op.result.type
        if kind in ("extui", "uitofp"):
            value = _unsigned(value, op.input.type)
        if kind == "fptoui":
            unsigned = target.element_type if isinstance(target, VectorType) else target
            info_type = IntegerType(unsigned.width.data, Signedness.UNSIGNED)  # pyright: ignore
            bits = _saturated(value, VectorType(info_type, target.get_shape())  # pyright: ignore
                              if isinstance(target, VectorType) else info_type)
            return (_cast(bits, target),)
        if kind == "fptosi":
            return (_saturated(value, target),)
        with np.errstate(all="ignore"):
            return (_cast(value, target),)

    @impl(loop.DotOp)
    def run_dot(self, interpreter: Interpreter, op: loop.DotOp, args: PythonValues):
        acc, a, b = args
        group = op.group
        a_values = _unsigned(a, op.a.type) if op.a.type.element_type.width.data == 8 else a  # pyright: ignore
        products = (np.asarray(a_values).astype(np.int64)
                    * np.asarray(b).astype(np.int64).reshape(op.lanes, group))
        total = np.asarray(acc).astype(np.int64) + products.sum(axis=1)
        return (_cast(total, op.result.type),)


for _op_type, _fn in NUMPY_FUNCTIONS.items():
    _name = f"run_{_op_type.name.replace('.', '_')}"
    setattr(LoopFunctions, _name, impl(_op_type)(_elementwise(_fn)))
for _op_type, (_upstream, _vector_fn) in INTEGER_FUNCTIONS.items():
    _name = f"run_{_op_type.name.replace('.', '_')}"
    setattr(LoopFunctions, _name, impl(_op_type)(_int_op(_upstream, _vector_fn)))
register_impls(LoopFunctions)


class _Access:
    """A load or store as the interpreter runs it, many times: its affine map compiled
    into one Python function (`_affine_map_function`) and its vector length read once."""

    def __init__(self, op: loop.LoadOp | loop.StoreOp):
        self.op = op
        self.vector_type = op.vector_type
        self.length = self.vector_type.get_shape()[0] if self.vector_type is not None else 1
        self.map = _affine_map_function(op.map.data)

    def where(self, buffer: np.ndarray, indices: list[Any]) -> tuple:
        """The numpy index of the element (or vector slice), checked against the bounds."""
        op, length = self.op, self.length
        where = self.map([int(i) for i in indices])
        if where and length > buffer.shape[-1]:  # whole rows of the last dimension
            rows = length // buffer.shape[-1]
            ends = [i + 1 for i in where[:-2]] + [where[-2] + rows, buffer.shape[-1]]
            if any(i < 0 for i in where) or any(e > d for e, d in zip(ends, buffer.shape)):
                raise InterpretationError(
                    f"{op.name}: rows {where[-2]}..{where[-2] + rows - 1} of a buffer of shape "
                    f"{list(buffer.shape)} are out of bounds")
            return (*where[:-2], slice(where[-2], where[-2] + rows), slice(None))
        ends = [i + 1 for i in where[:-1]] + [where[-1] + length] if where else []
        if any(i < 0 for i in where) or any(e > d for e, d in zip(ends, buffer.shape)):
            extent = f" (+{length} lanes)" if self.vector_type is not None else ""
            raise InterpretationError(
                f"{op.name}: index {list(where)}{extent} is out of bounds of a buffer of "
                f"shape {list(buffer.shape)}"
            )
        if self.vector_type is None:
            return where
        return (*where[:-1], slice(where[-1], where[-1] + length))


_BINARY = {
    AffineBinaryOpKind.Add: "({} + {})",
    AffineBinaryOpKind.Mul: "({} * {})",
    AffineBinaryOpKind.Mod: "({} % {})",
    AffineBinaryOpKind.FloorDiv: "({} // {})",
    AffineBinaryOpKind.CeilDiv: "(-(-{} // {}))",
}


def _affine_map_function(amap: AffineMap) -> Callable[[list[int]], tuple[int, ...]]:
    """`amap.eval(dims, symbols)` as a function of `dims + symbols`, compiled from Python
    source once (xDSL's `eval` walks the expression trees at every call: most of the
    time of interpreting a loop nest)."""

    def source(expr: AffineExpr) -> str:
        if isinstance(expr, AffineConstantExpr):
            return str(int(expr.value))
        if isinstance(expr, AffineDimExpr):
            return f"v[{expr.position}]"
        if isinstance(expr, AffineSymExpr):
            return f"v[{amap.num_dims + expr.position}]"
        assert isinstance(expr, AffineBinaryOpExpr)
        return _BINARY[expr.kind].format(source(expr.lhs), source(expr.rhs))

    results = "".join(f"{source(e)}, " for e in amap.results)
    return eval(f"lambda v: ({results})")  # noqa: S307  (our own expression text)
