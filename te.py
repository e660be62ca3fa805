"""Tensor expressions in Python, after TVM's `te`: the one way to define compute.

Users (and xweave's own operator library, `xweave.operators`) describe each tensor
as a function of its indices; `create_kernel` turns the tensors into a te-stage
`func.func` holding one `te.compute` per stage:

```python
from xweave import te
A = te.placeholder((M, K), "float32", name="A")
B = te.placeholder((K, N), "float32", name="B")
bias = te.placeholder((N,), "float32", name="bias")
k = te.reduce_axis(K, name="k")
C = te.compute((M, N), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="matmul")
D = te.compute((M, N), lambda i, j: te.max(C[i, j] + bias[j], 0.0), name="relu")
func = te.create_kernel("dense_relu", [A, B, bias], [D])   # -> func.func, verified
```

Index expressions (`index` dtype) support `+ - * // %` and comparisons; `//` floors,
`%` is the truncated remainder (`arith.remsi`; Python's `%` for non-negative indices).
Value expressions support `+ - * /`, unary `-`, comparisons, `max`/`min`, the math
functions below, `if_then_else` (lazy: becomes `te.if`) and `cast`. Python numbers
take the dtype of the expression they meet. A reduction (`sum`, `reduce_max`,
`reduce_min`, `prod`) may only be the whole body of a compute, as in TVM.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from xdsl.dialects import arith, func, math
from xdsl.dialects.builtin import (
    AnyFloat,
    Float16Type,
    Float32Type,
    Float64Type,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    Signedness,
    TensorType,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue

from xweave.dialects import loop
from xweave.dialects import te as te_dialect
from xweave.dialects.dtypes import value_type

__all__ = [
    "Expr", "ReduceAxis", "Tensor", "Var",
    "abs", "all", "any", "cast", "ceil", "compute", "const", "cos", "create_kernel", "erf",
    "exp", "floor", "if_then_else", "log", "log1p", "max", "max_reduce", "min", "min_reduce",
    "placeholder", "pow", "prod", "reduce_axis", "reduce_max", "reduce_min", "round",
    "select", "sigmoid", "sin", "sqrt", "sum", "tanh",
]

_builtin_max, _builtin_min, _builtin_all = max, min, all  # shadowed below, as in TVM

DTYPES: dict[str, Attribute] = {
    "float16": Float16Type(), "float32": Float32Type(), "float64": Float64Type(),
    "int8": IntegerType(8), "int16": IntegerType(16), "int32": IntegerType(32),
    "int64": IntegerType(64), "bool": IntegerType(1), "index": IndexType(),
    "uint8": IntegerType(8, Signedness.UNSIGNED),
}
"""The dtypes expressions may have, and the element types of their tensors (the
scalar values of an unsigned dtype are signless integers: `_scalar_type`)."""


def _unsigned(dtype: str) -> bool:
    return dtype.startswith("uint")


def _scalar_type(dtype: str) -> Attribute:
    """The MLIR type of a scalar value of `dtype` (`i8` for uint8)."""
    return value_type(DTYPES[dtype])


def _kind(dtype: str) -> str:
    """'float', 'int', 'index' or 'bool'."""
    if dtype in ("index", "bool"):
        return dtype
    return "float" if dtype.startswith("float") else "int"


def _check_dtype(dtype) -> str:
    dtype = str(dtype)
    if dtype not in DTYPES:
        raise TypeError(f"unsupported dtype {dtype!r}; expected one of {list(DTYPES)}")
    return dtype


# --- expressions -------------------------------------------------------------------


class Expr:
    """A scalar expression of the indices of a compute; build it with operators."""

    dtype: str

    def __add__(self, other): return _binary("+", self, other)
    def __radd__(self, other): return _binary("+", other, self)
    def __sub__(self, other): return _binary("-", self, other)
    def __rsub__(self, other): return _binary("-", other, self)
    def __mul__(self, other): return _binary("*", self, other)
    def __rmul__(self, other): return _binary("*", other, self)
    def __truediv__(self, other): return _binary("/", self, other)
    def __rtruediv__(self, other): return _binary("/", other, self)
    def __floordiv__(self, other): return _binary("//", self, other)
    def __rfloordiv__(self, other): return _binary("//", other, self)
    def __mod__(self, other): return _binary("%", self, other)
    def __rmod__(self, other): return _binary("%", other, self)
    def __neg__(self): return _unary("neg", self)
    def __lt__(self, other): return _compare("<", self, other)
    def __le__(self, other): return _compare("<=", self, other)
    def __gt__(self, other): return _compare(">", self, other)
    def __ge__(self, other): return _compare(">=", self, other)
    def __eq__(self, other): return _compare("==", self, other)  # type: ignore[override]
    def __ne__(self, other): return _compare("!=", self, other)  # type: ignore[override]

    __hash__ = object.__hash__

    def __bool__(self):
        raise TypeError(
            "a te expression has no Python truth value: use te.all / te.any for "
            "conditions and te.if_then_else instead of `if`/`and`/`or`"
        )

    def astype(self, dtype: str) -> Expr:
        """This expression converted to `dtype`."""
        return cast(self, dtype)


@dataclass(eq=False)
class Const(Expr):
    """A literal."""

    value: int | float | bool
    dtype: str


@dataclass(eq=False)
class Var(Expr):
    """A spatial index variable of a compute (the arguments of its lambda)."""

    name: str
    dtype: str = field(default="index", init=False)


@dataclass(eq=False)
class ReduceAxis(Var):
    """A reduction index variable over `range(extent)`; made by `reduce_axis`."""

    extent: int = 0


@dataclass(eq=False)
class Binary(Expr):
    """`lhs op rhs` for op in + - * / // % max min pow."""

    op: str
    lhs: Expr
    rhs: Expr
    dtype: str


@dataclass(eq=False)
class Compare(Expr):
    """`lhs op rhs` for op in < <= > >= == !=; a bool."""

    op: str
    lhs: Expr
    rhs: Expr
    dtype: str = field(default="bool", init=False)


@dataclass(eq=False)
class Logical(Expr):
    """The conjunction ("and") or disjunction ("or") of conditions."""

    op: str
    args: tuple[Expr, ...]
    dtype: str = field(default="bool", init=False)


@dataclass(eq=False)
class Unary(Expr):
    """`fn(arg)` for fn in neg exp log tanh sqrt abs erf floor ceil round sin cos log1p."""

    fn: str
    arg: Expr
    dtype: str


@dataclass(eq=False)
class Cast(Expr):
    """`value` converted to `dtype`."""

    value: Expr
    dtype: str


@dataclass(eq=False)
class Read(Expr):
    """One element of a tensor."""

    tensor: Tensor
    indices: tuple[Expr, ...]
    dtype: str


@dataclass(eq=False)
class IfThenElse(Expr):
    """`then` where `cond` holds, else `otherwise`; only one side is evaluated."""

    cond: Expr
    then: Expr
    otherwise: Expr
    dtype: str


@dataclass(eq=False)
class Select(IfThenElse):
    """`then` where `cond` holds, else `otherwise`; both sides are evaluated (so their
    terms are shared with the rest of the expression)."""


@dataclass(eq=False)
class Reduce(Expr):
    """`value` combined over `axes` by `reducer`; only as a whole compute body."""

    reducer: str
    value: Expr
    axes: tuple[ReduceAxis, ...]
    dtype: str


def const(value: int | float | bool, dtype: str | None = None) -> Const:
    """A literal; the dtype defaults to float32, int32 or bool after Python's type."""
    if dtype is None:
        dtype = ("bool" if isinstance(value, bool)
                 else "int32" if isinstance(value, int) else "float32")
    dtype = _check_dtype(dtype)
    kind = _kind(dtype)
    if kind in ("int", "index") and not float(value).is_integer():
        raise TypeError(f"{value!r} is not an integer ({dtype})")
    value = float(value) if kind == "float" else bool(value) if kind == "bool" else int(value)
    return Const(value, dtype)


def _wrap(value, like: str | None = None) -> Expr:
    """`value` as an expression; Python numbers take the dtype `like` if given."""
    if isinstance(value, Expr):
        return value
    if isinstance(value, Tensor):
        raise TypeError(f"tensor {value.name!r} used as a scalar: index it, {value.name}[...]")
    if isinstance(value, bool | int | float) or hasattr(value, "item"):  # numpy scalars
        return const(value.item() if hasattr(value, "item") else value, like)
    raise TypeError(f"cannot use {type(value).__name__} {value!r} in a te expression")


def _pair(a, b) -> tuple[Expr, Expr]:
    """Both operands as expressions of one dtype (literals adopt the other side's)."""
    a = _wrap(a, b.dtype if isinstance(b, Expr) else None)
    b = _wrap(b, a.dtype)
    if a.dtype != b.dtype:
        raise TypeError(f"operands have different dtypes {a.dtype} and {b.dtype}; use te.cast")
    return a, b


def _fold(op: str, x, y):
    """Python evaluation of an integer operator with the semantics of its arith op."""
    match op:
        case "+":
            return x + y
        case "-":
            return x - y
        case "*":
            return x * y
        case "//":
            return x // y if y else None
        case "%":
            return x - y * int(x / y) if y else None  # remsi: the sign of the dividend
        case "max":
            return _builtin_max(x, y)
        case "min":
            return _builtin_min(x, y)


def _binary(op: str, a, b) -> Expr:
    a, b = _pair(a, b)
    kind = _kind(a.dtype)
    if op == "/" and kind != "float":
        raise TypeError(f"'/' needs float operands, got {a.dtype}; use // for indices")
    if op in ("//", "%") and kind not in ("int", "index"):
        raise TypeError(f"'{op}' needs integer or index operands, got {a.dtype}")
    if op == "pow" and kind != "float":
        raise TypeError(f"pow needs float operands, got {a.dtype}")
    if kind == "bool":
        raise TypeError(f"'{op}' on conditions: use te.all / te.any")
    if kind in ("int", "index"):  # keep index arithmetic free of trivial ops
        ca = a.value if isinstance(a, Const) else None
        cb = b.value if isinstance(b, Const) else None
        if ca is not None and cb is not None and (folded := _fold(op, ca, cb)) is not None:
            return Const(folded, a.dtype)
        if (op in ("+", "-") and cb == 0) or (op in ("*", "//") and cb == 1):
            return a
        if (op == "+" and ca == 0) or (op == "*" and ca == 1):
            return b
        if op == "*" and 0 in (ca, cb) or op == "%" and cb == 1:
            return Const(0, a.dtype)
    return Binary(op, a, b, a.dtype)


def _compare(op: str, a, b) -> Expr:
    a, b = _pair(a, b)
    if isinstance(a, Const) and isinstance(b, Const):
        x, y = a.value, b.value
        return Const({"<": x < y, "<=": x <= y, ">": x > y, ">=": x >= y,
                      "==": x == y, "!=": x != y}[op], "bool")
    return Compare(op, a, b)


def _unary(fn: str, x) -> Expr:
    x = _wrap(x, "float32")
    if _unsigned(x.dtype) and fn in ("neg", "abs"):
        raise TypeError(f"{fn} of an unsigned {x.dtype} expression; use te.cast")
    if fn != "neg" and fn != "abs" and _kind(x.dtype) != "float":
        raise TypeError(f"{fn} needs a float operand, got {x.dtype}; use te.cast")
    if _kind(x.dtype) == "bool":
        raise TypeError(f"{fn} of a condition")
    return Unary(fn, x, x.dtype)


def _condition(cond) -> Expr:
    cond = _wrap(cond, "bool")
    if cond.dtype != "bool":
        raise TypeError(f"a condition must be a comparison, got a {cond.dtype} expression")
    return cond


def _logical(op: str, conds) -> Expr:
    absorbing = op == "or"  # the value that decides: True for or, False for and
    args = []
    for c in map(_condition, conds):
        if isinstance(c, Const):
            if c.value == absorbing:
                return Const(absorbing, "bool")
        else:
            args.append(c)
    if not args:
        return Const(not absorbing, "bool")
    return args[0] if len(args) == 1 else Logical(op, tuple(args))


def all(*conds) -> Expr:  # noqa: A001
    """The conjunction of conditions: te.all(i >= 1, i < n + 1)."""
    return _logical("and", conds)


def any(*conds) -> Expr:  # noqa: A001
    """The disjunction of conditions."""
    return _logical("or", conds)


def if_then_else(cond, then, otherwise) -> Expr:
    """`then` where `cond` holds, else `otherwise`; lazy, so padded reads are safe."""
    cond = _condition(cond)
    if isinstance(otherwise, float) and not isinstance(then, Expr):
        then = _wrap(then, "float32")  # if_then_else(c, 1, 0.0) is float32
    then, otherwise = _pair(then, otherwise)
    if isinstance(cond, Const):
        return then if cond.value else otherwise
    return IfThenElse(cond, then, otherwise, then.dtype)


def select(cond, then, otherwise) -> Expr:
    """Like `if_then_else`, but eager (`arith.select`): both sides are computed, once,
    outside any branch; for cheap sides whose terms recur elsewhere in the body."""
    cond = _condition(cond)
    then, otherwise = _pair(then, otherwise)
    if isinstance(cond, Const):
        return then if cond.value else otherwise
    return Select(cond, then, otherwise, then.dtype)


def cast(value, dtype: str) -> Expr:
    """`value` converted to `dtype` (floats truncate toward zero when made integers)."""
    dtype = _check_dtype(dtype)
    value = _wrap(value, dtype)
    if value.dtype == dtype:
        return value
    if isinstance(value, Const) and _kind(dtype) != "bool" and _kind(value.dtype) != "float":
        return const(value.value, dtype)
    return Cast(value, dtype)


def _math_function(name: str, doc: str) -> Callable[..., Expr]:
    """The te function `name(x)`: the math op `name` of one float expression."""

    def function(x) -> Expr:
        return _unary(name, x)

    function.__name__ = function.__qualname__ = name
    function.__doc__ = doc
    return function


exp = _math_function("exp", "e ** x.")
log = _math_function("log", "The natural logarithm.")
log1p = _math_function("log1p", "log(1 + x), accurate for small x.")
tanh = _math_function("tanh", "The hyperbolic tangent.")
sqrt = _math_function("sqrt", "The square root.")
erf = _math_function("erf", "The error function.")
floor = _math_function("floor", "Round toward -inf.")
ceil = _math_function("ceil", "Round toward +inf.")
round = _math_function(  # noqa: A001
    "round", "Round to the nearest integer, halves to even (IEEE roundeven, ONNX Round)."
)
sin = _math_function("sin", "The sine.")
cos = _math_function("cos", "The cosine.")
abs = _math_function("abs", "The absolute value.")  # noqa: A001


def sigmoid(x) -> Expr:
    """1 / (1 + exp(-x))."""
    x = _wrap(x, "float32")
    return 1.0 / (1.0 + exp(-x))


def pow(x, y) -> Expr:  # noqa: A001
    """x ** y (floats)."""
    return _binary("pow", x, y)


def _axes(axis) -> tuple[ReduceAxis, ...]:
    axes = tuple(axis) if isinstance(axis, list | tuple) else (axis,)
    if not axes or not _builtin_all(isinstance(a, ReduceAxis) for a in axes):
        raise TypeError("axis must be a te.reduce_axis or a list of them")
    if len({id(a) for a in axes}) != len(axes):
        raise ValueError("a reduce axis is listed twice")
    return axes


def _reduce(reducer: str, value, axis) -> Reduce:
    value = _wrap(value, "float32")
    return Reduce(reducer, value, _axes(axis), value.dtype)


def sum(value, axis) -> Reduce:  # noqa: A001
    """The sum of `value` over reduce axis (or axes) `axis`."""
    return _reduce("sum", value, axis)


def prod(value, axis) -> Reduce:
    """The product of `value` over `axis`."""
    return _reduce("prod", value, axis)


def reduce_max(value, axis) -> Reduce:
    """The maximum of `value` over `axis`."""
    return _reduce("max", value, axis)


def reduce_min(value, axis) -> Reduce:
    """The minimum of `value` over `axis`."""
    return _reduce("min", value, axis)


max_reduce, min_reduce = reduce_max, reduce_min


def _binary_or_reduce(fn: str, a, b, axis) -> Expr:
    """The elementwise `fn` of `a` and `b`, or `a` reduced by `fn` over `axis`."""
    if axis is None:
        return _binary(fn, a, b)
    if b is not None:
        raise TypeError(f"te.{fn} takes either two operands or one operand and an axis")
    return _reduce(fn, a, axis)


def max(a, b=None, axis=None) -> Expr:  # noqa: A001
    """Elementwise maximum `te.max(a, b)`, or a reduction `te.max(a, axis=k)` as in TVM."""
    return _binary_or_reduce("max", a, b, axis)


def min(a, b=None, axis=None) -> Expr:  # noqa: A001
    """Elementwise minimum `te.min(a, b)`, or a reduction `te.min(a, axis=k)`."""
    return _binary_or_reduce("min", a, b, axis)


def reduce_axis(extent: int | tuple[int, int], name: str = "rv") -> ReduceAxis:
    """A reduction variable over range(extent) (or a (0, extent) pair, as in TVM)."""
    if isinstance(extent, tuple):
        start, stop = extent
        if start != 0:
            raise ValueError("reduce axes start at 0")
        extent = stop
    extent = int(extent)
    if extent <= 0:
        raise ValueError(f"reduce axis {name!r} must have a positive extent, got {extent}")
    return ReduceAxis(name, extent)


# --- tensors -------------------------------------------------------------------------


@dataclass(eq=False)
class _Stage:
    """How a computed tensor is defined: its body over its index variables."""

    axes: tuple[Var, ...]
    body: Expr  # the yielded value (inside the reduction, if any)
    reducer: str | None
    reduce_axes: tuple[ReduceAxis, ...]


@dataclass(eq=False)
class Tensor:
    """A placeholder (kernel argument) or a computed tensor; index it to read it."""

    shape: tuple[int, ...]
    dtype: str
    name: str | None
    stage: _Stage | None = None  # None for placeholders

    @property
    def ndim(self) -> int:
        """The rank."""
        return len(self.shape)

    @property
    def is_placeholder(self) -> bool:
        """Whether this tensor is a kernel input."""
        return self.stage is None

    def __getitem__(self, indices) -> Expr:
        if not isinstance(indices, tuple | list):
            indices = (indices,)
        if len(indices) != self.ndim:
            raise IndexError(
                f"tensor {self.name!r} of rank {self.ndim} indexed with {len(indices)} indices"
            )
        exprs = tuple(_wrap(i, "index") for i in indices)
        for i in exprs:
            if i.dtype != "index":
                raise TypeError(f"tensor {self.name!r} indexed with a {i.dtype} expression")
        return Read(self, exprs, self.dtype)

    def __repr__(self) -> str:
        kind = "placeholder" if self.is_placeholder else "compute"
        return f"Tensor({self.name!r}, {kind}, shape={self.shape}, dtype={self.dtype})"


def _shape(shape) -> tuple[int, ...]:
    shape = (shape,) if isinstance(shape, int) else tuple(int(e) for e in shape)
    if not _builtin_all(e > 0 for e in shape):
        raise ValueError(f"extents must be positive, got {shape}")
    return shape


def placeholder(shape: Sequence[int], dtype: str = "float32", name: str = "placeholder") -> Tensor:
    """A kernel input of the given shape and dtype."""
    return Tensor(_shape(shape), _check_dtype(dtype), name)


def _nodes(expr: Expr):
    """Every node of an expression DAG, once each."""
    seen: set[int] = set()
    stack = [expr]
    while stack:
        e = stack.pop()
        if id(e) in seen:
            continue
        seen.add(id(e))
        yield e
        stack.extend(_children(e))


def _children(e: Expr) -> tuple[Expr, ...]:
    match e:
        case Binary() | Compare():
            return (e.lhs, e.rhs)
        case Logical():
            return e.args
        case Unary():
            return (e.arg,)
        case Cast():
            return (e.value,)
        case Read():
            return e.indices
        case IfThenElse():
            return (e.cond, e.then, e.otherwise)
        case Reduce():
            return (e.value,)
    return ()


def compute(
    shape: Sequence[int], fcompute: Callable[..., object], name: str | None = None
) -> Tensor:
    """The tensor whose element at (i, j, ...) is fcompute(i, j, ...).

    `name` tags the stage (`te.compute`'s `name`, what schedules key on).
    """
    shape = _shape(shape)
    params = list(inspect.signature(fcompute).parameters.values())
    named = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    rest = [p.name for p in params if p.kind == p.VAR_POSITIONAL]
    if len(named) == len(params):
        names = named
        if len(names) != len(shape):
            raise TypeError(f"fcompute takes {len(names)} indices for a rank-{len(shape)} compute")
    elif named and rest and len(named) + len(rest) == len(params) and len(named) <= len(shape):
        # lambda n, c, y, x, *b: the named indices keep their names, the rest b0, b1...
        names = named + [f"{rest[0]}{d}" for d in range(len(shape) - len(named))]
    else:
        names = [f"i{d}" for d in range(len(shape))]
    axes = tuple(Var(n) for n in names)
    value = _wrap(fcompute(*axes), "float32")
    reducer, reduce_axes = None, ()
    if isinstance(value, Reduce):
        reducer, reduce_axes, value = value.reducer, value.axes, value.value
    own = {id(v) for v in axes + reduce_axes}
    for node in _nodes(value):
        if isinstance(node, Reduce):
            raise ValueError("a reduction must be the whole body of a compute (as in TVM)")
        if isinstance(node, Var) and id(node) not in own:
            what = "reduce axis" if isinstance(node, ReduceAxis) else "index variable"
            raise ValueError(f"{what} {node.name!r} is not an index of this compute"
                             + (" (reduce over it)" if isinstance(node, ReduceAxis) else ""))
    stage = _Stage(axes, value, reducer, reduce_axes)
    return Tensor(shape, value.dtype, name, stage)


# --- IR emission ---------------------------------------------------------------------


def _hint(name: str | None, default: str) -> str:
    """A valid SSA name hint made from a user name."""
    hint = re.sub(r"[^\w$.-]", "_", name or default)
    return hint if re.match(r"[A-Za-z_$.-]", hint) else f"_{hint}"


_CMPI = {"<": "slt", "<=": "sle", ">": "sgt", ">=": "sge", "==": "eq", "!=": "ne"}
_CMPF = {"<": "olt", "<=": "ole", ">": "ogt", ">=": "oge", "==": "oeq", "!=": "une"}
_FLOAT_BINARY = {"+": arith.AddfOp, "-": arith.SubfOp, "*": arith.MulfOp, "/": arith.DivfOp,
                 "max": arith.MaximumfOp, "min": arith.MinimumfOp, "pow": math.PowFOp}
_INT_BINARY = {"+": arith.AddiOp, "-": arith.SubiOp, "*": arith.MuliOp,
               "//": arith.FloorDivSIOp, "%": arith.RemSIOp,
               "max": arith.MaxSIOp, "min": arith.MinSIOp}
_UINT_BINARY = {**_INT_BINARY, "//": arith.DivUIOp, "%": arith.RemUIOp,
                "max": arith.MaxUIOp, "min": arith.MinUIOp}
_CMPUI = {"<": "ult", "<=": "ule", ">": "ugt", ">=": "uge", "==": "eq", "!=": "ne"}
_FLOAT_UNARY = {"neg": arith.NegfOp, "exp": math.ExpOp, "log": math.LogOp,
                "tanh": math.TanhOp, "sqrt": math.SqrtOp, "abs": math.AbsFOp,
                "erf": math.ErfOp, "floor": math.FloorOp, "ceil": math.CeilOp,
                "round": math.RoundEvenOp, "log1p": math.Log1pOp, "sin": math.SinOp,
                "cos": math.CosOp}


class _BodyBuilder:
    """Emits the body of one te.compute: scalar ops, with one op per distinct value."""

    def __init__(self, stage: _Stage, tensors: dict[Tensor, SSAValue]):
        index = IndexType()
        variables = stage.axes + stage.reduce_axes
        self.block = Block(arg_types=[index] * len(variables))
        for arg, var in zip(self.block.args, variables):
            arg.name_hint = _hint(var.name, "i")
        self.tensors = tensors
        self.constants: dict[tuple, SSAValue] = {}
        self.constant_ops: list[Operation] = []
        self.keys: dict[int, int] = {}  # id(expr) -> structural key
        self.interned: dict[tuple, int] = {}
        self.scopes: list[dict[int, SSAValue]] = [
            {self._key(v): a for v, a in zip(variables, self.block.args)}
        ]
        self.current = self.block
        value = self.emit(stage.body)
        self.block.add_op(te_dialect.YieldOp(value))
        if self.constant_ops:  # constants first: they dominate every branch
            self.block.insert_ops_before(self.constant_ops, self.block.first_op)

    def _add(self, op: Operation) -> SSAValue:
        self.current.add_op(op)
        return op.results[0]

    def _constant(self, value, dtype: str) -> SSAValue:
        key = (repr(value), dtype)
        if key not in self.constants:
            typ = _scalar_type(dtype)
            if isinstance(typ, AnyFloat):
                op, hint = arith.ConstantOp(FloatAttr(value, typ)), "cst"
            else:  # MLIR's names: %c1 for index, %c1_i32 for i32, %true for i1
                if _unsigned(dtype):  # the bits of an unsigned value, as signless
                    value = (int(value) + (1 << (typ.width.data - 1))) % (1 << typ.width.data) \
                        - (1 << (typ.width.data - 1))
                op, hint = arith.ConstantOp(IntegerAttr(int(value), typ)), f"c{int(value)}"
                if dtype == "bool":
                    hint = "true" if value else "false"
                elif dtype != "index":
                    hint += f"_i{typ.width.data}"
            op.result.name_hint = hint
            self.constant_ops.append(op)
            self.constants[key] = op.result
        return self.constants[key]

    def _key(self, e: Expr) -> int:
        """A number shared by structurally equal expressions (so they emit once)."""
        if id(e) not in self.keys:
            match e:
                case Const():
                    head = ("const", repr(e.value), e.dtype)
                case Var():
                    head = ("var", id(e))
                case Read():
                    head = ("read", id(e.tensor))
                case _:
                    head = (type(e).__name__, getattr(e, "op", getattr(e, "fn", "")), e.dtype)
            key = head + tuple(self._key(c) for c in _children(e))
            self.keys[id(e)] = self.interned.setdefault(key, len(self.interned))
        return self.keys[id(e)]

    def emit(self, e: Expr) -> SSAValue:
        """The SSA value of `e`, emitting its ops once per scope."""
        key = self._key(e)
        for scope in reversed(self.scopes):
            if key in scope:
                return scope[key]
        value = self._emit(e)
        self.scopes[-1][key] = value
        return value

    def _branch(self, e: Expr) -> Region:
        block, outer = Block(), self.current
        self.current = block
        self.scopes.append({})
        block.add_op(te_dialect.YieldOp(self.emit(e)))
        self.scopes.pop()
        self.current = outer
        return Region(block)

    def _emit(self, e: Expr) -> SSAValue:
        match e:
            case Const():
                return self._constant(e.value, e.dtype)
            case Read():
                tensor = self.tensors[e.tensor]
                return self._add(te_dialect.ExtractOp(tensor, [self.emit(i) for i in e.indices]))
            case Binary():
                lhs, rhs = self.emit(e.lhs), self.emit(e.rhs)
                table = (_FLOAT_BINARY if _kind(e.dtype) == "float" else
                         _UINT_BINARY if _unsigned(e.dtype) else _INT_BINARY)
                return self._add(table[e.op](lhs, rhs))
            case Compare():
                lhs, rhs = self.emit(e.lhs), self.emit(e.rhs)
                if _kind(e.lhs.dtype) == "float":
                    return self._add(arith.CmpfOp(lhs, rhs, _CMPF[e.op]))
                predicates = _CMPUI if _unsigned(e.lhs.dtype) else _CMPI
                return self._add(arith.CmpiOp(lhs, rhs, predicates[e.op]))
            case Logical():
                values = [self.emit(a) for a in e.args]
                op = arith.AndIOp if e.op == "and" else arith.OrIOp
                result = values[0]
                for v in values[1:]:
                    result = self._add(op(result, v))
                return result
            case Unary():
                if _kind(e.dtype) == "float":
                    return self._add(_FLOAT_UNARY[e.fn](self.emit(e.arg)))
                x = self.emit(e.arg)
                negated = self._add(arith.SubiOp(self._constant(0, e.dtype), x))
                return negated if e.fn == "neg" else self._add(arith.MaxSIOp(x, negated))
            case Select():
                cond, then, otherwise = self.emit(e.cond), self.emit(e.then), self.emit(e.otherwise)
                return self._add(arith.SelectOp(cond, then, otherwise))
            case IfThenElse():
                cond = self.emit(e.cond)
                then, otherwise = self._branch(e.then), self._branch(e.otherwise)
                return self._add(te_dialect.IfOp(cond, _scalar_type(e.dtype), then, otherwise))
            case Cast():
                return self._cast(self.emit(e.value), e.value.dtype, e.dtype)
        raise TypeError(f"cannot emit {e!r}")

    def _cast(self, x: SSAValue, src: str, dst: str) -> SSAValue:
        s, d, typ = _kind(src), _kind(dst), _scalar_type(dst)
        if s == "bool":
            return self._add(arith.SelectOp(x, self._constant(1, dst), self._constant(0, dst)))
        if d == "bool":
            zero = self._constant(0, src)
            if s == "float":
                return self._add(arith.CmpfOp(x, zero, "une"))
            return self._add(arith.CmpiOp(x, zero, "ne"))
        if s == "index":  # through i64
            x = self._add(arith.IndexCastOp(x, IntegerType(64)))
            return x if dst == "int64" else self._cast(x, "int64", dst)
        if d == "index":
            if src != "int64":
                x = self._cast(x, src, "int64")
            return self._add(arith.IndexCastOp(x, typ))
        if s == "float" and d == "float":
            wider = typ.bitwidth > DTYPES[src].bitwidth
            return self._add((arith.ExtFOp if wider else arith.TruncFOp)(x, typ))
        if s == "int" and d == "int":
            width, src_width = typ.width.data, DTYPES[src].width.data
            if width == src_width:  # int8 <-> uint8: the same bits
                return x
            if width < src_width:
                return self._add(arith.TruncIOp(x, typ))
            return self._add((arith.ExtUIOp if _unsigned(src) else arith.ExtSIOp)(x, typ))
        if d == "float":
            return self._add((arith.UIToFPOp if _unsigned(src) else arith.SIToFPOp)(x, typ))
        return self._add((arith.FPToUIOp if _unsigned(dst) else arith.FPToSIOp)(x, typ))


def _stages(outputs: Sequence[Tensor]) -> list[Tensor]:
    """Computed tensors reachable from `outputs`, dependencies first."""
    order: list[Tensor] = []
    state: dict[int, str] = {}

    def visit(t: Tensor) -> None:
        if t.is_placeholder or state.get(id(t)) == "done":
            return
        if state.get(id(t)) == "active":
            raise ValueError(f"tensor {t.name!r} depends on itself")
        state[id(t)] = "active"
        for node in _nodes(t.stage.body):
            if isinstance(node, Read):
                visit(node.tensor)
        state[id(t)] = "done"
        order.append(t)

    for t in outputs:
        visit(t)
    return order


def _tensor_type(t: Tensor) -> TensorType:
    return TensorType(DTYPES[t.dtype], t.shape)


def create_kernel(name: str, inputs: Sequence[Tensor], outputs: Sequence[Tensor]) -> func.FuncOp:
    """`func.func @name(inputs...) -> (outputs...)` with one te.compute per stage."""
    inputs, outputs = list(inputs), list(outputs)
    if not _builtin_all(isinstance(t, Tensor) for t in inputs + outputs):
        raise TypeError("create_kernel takes lists of te tensors")
    if not _builtin_all(t.is_placeholder for t in inputs):
        raise ValueError("kernel inputs must be placeholders")
    if len({id(t) for t in inputs}) != len(inputs):
        raise ValueError("a placeholder is listed twice among the kernel inputs")
    block = Block(arg_types=[_tensor_type(t) for t in inputs])
    values: dict[Tensor, SSAValue] = {}
    for arg, t in zip(block.args, inputs):
        arg.name_hint = _hint(t.name, "arg")
        values[t] = arg
    for t in outputs:
        if t.is_placeholder and t not in values:
            raise ValueError(f"output placeholder {t.name!r} is not a kernel input")
    for t in _stages(outputs):
        for node in _nodes(t.stage.body):
            if isinstance(node, Read) and node.tensor not in values:
                raise ValueError(
                    f"placeholder {node.tensor.name!r} (read by {t.name!r}) is not a kernel input"
                )
        body = _BodyBuilder(t.stage, values).block
        op = te_dialect.ComputeOp(
            _tensor_type(t),
            body,
            reduce_shape=[a.extent for a in t.stage.reduce_axes],
            reducer=t.stage.reducer,
            name=t.name,
        )
        op.result.name_hint = _hint(t.name, "T")
        block.add_op(op)
        values[t] = op.result
    block.add_op(func.ReturnOp(*(values[t] for t in outputs)))
    kernel = func.FuncOp(
        name, ([_tensor_type(t) for t in inputs], [_tensor_type(t) for t in outputs]), Region(block)
    )
    loop.mark_kernel(kernel)
    kernel.verify()
    return kernel
