"""`arith`, `math` and `vector` (register-level) ops -> llvm dialect, for `convert-loop-to-llvm`.

Every handler takes the `FunctionBuilder` and the source op, emits llvm ops at the
insertion point and returns the lowered results. `SCALAR_LOWERINGS` maps op classes to
handlers; `loop_to_llvm` dispatches through it.

What `xdsl.backend.llvm.convert_module` (xDSL 0.74) cannot translate, and how it is
worked around here:

* no `fptosi`/`fptoui`/`uitofp` ops: saturating `llvm.fptosi.sat`/`llvm.fptoui.sat`
  intrinsics (same results wherever the conversion is defined), `uitofp` via `zext` +
  `sitofp`;
* no `extractelement`: `shufflevector` to a one-lane vector, then `bitcast` to the scalar;
* `llvm.fcmp` and `llvm.select` only take scalar conditions (so does xDSL's `arith`:
  `cmpi`/`cmpf` yield `i1`, `select` takes an `i1`), so nothing more is needed there;
* fast-math flags on `llvm.intr.fma`/`call_intrinsic` raise: those ops carry none (an
  explicit FMA needs no `contract`);
* math functions without a dedicated llvm op use `llvm.call_intrinsic` (`llvm.tanh`,
  `llvm.maximum`, ...) where LLVM 22 has an intrinsic, else a call of the libm function
  (`log1pf`, ...), declared as an external `llvm.func` and resolved at load time; float32
  `exp` and `erf` are inline polynomials instead (LLVM would call libm once per lane).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from math import factorial

from xdsl.dialects import arith, llvm, math, vector
from xdsl.dialects.builtin import (
    AnyFloat,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    VectorType,
    i1,
    i32,
    i64,
)
from xdsl.ir import Attribute, Operation, SSAValue

from xweave.lowering.llvm_builder import (
    CONTRACT,
    FunctionBuilder,
    bit_width,
    convert_type,
    element_type,
    intrinsic_suffix,
    unsupported,
    vector_width,
)

Handler = Callable[[FunctionBuilder, Operation], Sequence[SSAValue]]

SCALAR_LOWERINGS: dict[type[Operation], Handler] = {}
"""Source op class -> handler emitting its llvm-dialect equivalent."""


def _register(*op_types: type[Operation]):
    def decorate(handler: Handler) -> Handler:
        for op_type in op_types:
            SCALAR_LOWERINGS[op_type] = handler
        return handler

    return decorate


def result_type(op: Operation, i: int = 0) -> Attribute:
    return convert_type(op.results[i].type)


# --- helpers shared with loop_to_llvm -----------------------------------------------


def call_intrinsic(
    b: FunctionBuilder, name: str, args: Sequence[SSAValue], t: Attribute | None
) -> SSAValue | None:
    """`llvm.call_intrinsic "name"(args)`; `name` already carries its overload suffix."""
    op = b.emit(llvm.CallIntrinsicOp(name, list(args), [] if t is None else [t]))
    return op.results[0] if t is not None else None


def call_overloaded(b: FunctionBuilder, name: str, args: Sequence[SSAValue],
                    t: Attribute) -> SSAValue:
    """`name` overloaded on its result type `t` (`llvm.exp` on `vector<8xf32>` calls
    `llvm.exp.v8f32`)."""
    return call_intrinsic(b, f"{name}.{intrinsic_suffix(t)}", args, t)


def extract_lane(b: FunctionBuilder, vec: SSAValue, lane: int) -> SSAValue:
    """Lane `lane` of a 1-D vector, as a scalar (shufflevector + bitcast)."""
    scalar = element_type(vec.type)
    one = b.emit1(
        llvm.ShuffleVectorOp(
            vec, vec, DenseArrayBase.from_list(i32, [lane]), VectorType(scalar, [1])
        )
    )
    return b.emit1(llvm.BitcastOp(one, scalar))


def insert_lane(b: FunctionBuilder, vec: SSAValue, value: SSAValue, lane: int) -> SSAValue:
    return b.emit1(llvm.InsertElementOp(vec, value, b.const(lane, i64)))


def splat(b: FunctionBuilder, scalar: SSAValue, t: VectorType) -> SSAValue:
    """A vector of type `t` with every lane `scalar` (constants fold to a constant)."""
    owner = scalar.owner
    if isinstance(owner, llvm.ConstantOp) and isinstance(owner.value, IntegerAttr | FloatAttr):
        return b.const(owner.value.value.data, t)
    undef = b.emit1(llvm.UndefOp(t))
    first = insert_lane(b, undef, scalar, 0)
    lanes = vector_width(t)
    return b.emit1(
        llvm.ShuffleVectorOp(first, first, DenseArrayBase.from_list(i32, [0] * lanes), t)
    )


def scalarize(
    b: FunctionBuilder,
    operands: Sequence[SSAValue],
    t: Attribute,
    lane_fn: Callable[[list[SSAValue]], SSAValue],
) -> SSAValue:
    """Apply `lane_fn` lane by lane when `t` is a vector (directly for scalars)."""
    lanes = vector_width(t)
    if lanes is None:
        return lane_fn(list(operands))
    result = b.emit1(llvm.UndefOp(t))
    for lane in range(lanes):
        args = [
            extract_lane(b, v, lane) if isinstance(v.type, VectorType) else v for v in operands
        ]
        result = insert_lane(b, result, lane_fn(args), lane)
    return result


def _overflow(op: Operation) -> llvm.OverflowAttr:
    flags = op.properties.get("overflowFlags")
    names = {f.value for f in flags.data} if flags is not None else set()
    return llvm.OverflowAttr([llvm.OverflowFlag(n) for n in sorted(names)])


# --- arith --------------------------------------------------------------------------


@_register(arith.ConstantOp)
def _constant(b: FunctionBuilder, op: arith.ConstantOp) -> Sequence[SSAValue]:
    value, t = op.value, result_type(op)
    if isinstance(value, IntegerAttr | FloatAttr) and not isinstance(t, VectorType):
        return [b.const(value.value.data, t)]
    if isinstance(value, DenseIntOrFPElementsAttr) and isinstance(t, VectorType):
        return [b.dense_const(value)]
    raise unsupported(op, f"constant {value} of type {op.result.type}")


_INT_BINOPS: dict[type[Operation], type[Operation]] = {
    arith.AddiOp: llvm.AddOp,
    arith.SubiOp: llvm.SubOp,
    arith.MuliOp: llvm.MulOp,
    arith.ShLIOp: llvm.ShlOp,
    arith.DivSIOp: llvm.SDivOp,
    arith.DivUIOp: llvm.UDivOp,
    arith.RemSIOp: llvm.SRemOp,
    arith.RemUIOp: llvm.URemOp,
    arith.AndIOp: llvm.AndOp,
    arith.OrIOp: llvm.OrOp,
    arith.XOrIOp: llvm.XOrOp,
    arith.ShRUIOp: llvm.LShrOp,
    arith.ShRSIOp: llvm.AShrOp,
}
_WITH_OVERFLOW = (arith.AddiOp, arith.SubiOp, arith.MuliOp, arith.ShLIOp)


@_register(*_INT_BINOPS)
def _int_binop(b: FunctionBuilder, op: Operation) -> Sequence[SSAValue]:
    lhs, rhs = b.operands(op)
    cls = _INT_BINOPS[type(op)]
    if isinstance(op, _WITH_OVERFLOW):
        return [b.emit1(cls(lhs, rhs, overflow=_overflow(op)))]
    return [b.emit1(cls(lhs, rhs))]


_FLOAT_BINOPS: dict[type[Operation], type[Operation]] = {
    arith.AddfOp: llvm.FAddOp,
    arith.SubfOp: llvm.FSubOp,
    arith.MulfOp: llvm.FMulOp,
    arith.DivfOp: llvm.FDivOp,
}


@_register(*_FLOAT_BINOPS)
def _float_binop(b: FunctionBuilder, op: Operation) -> Sequence[SSAValue]:
    lhs, rhs = b.operands(op)
    return [b.emit1(_FLOAT_BINOPS[type(op)](lhs, rhs, CONTRACT))]


@_register(arith.NegfOp)
def _negf(b: FunctionBuilder, op: arith.NegfOp) -> Sequence[SSAValue]:
    return [b.emit1(llvm.FNegOp(b.get(op.operand), CONTRACT))]


def _scalar_operands(b: FunctionBuilder, op: Operation) -> list[SSAValue]:
    """The operands of a division that is lowered for scalars only."""
    operands = b.operands(op)
    if isinstance(operands[0].type, VectorType):
        raise unsupported(op, "vector operands")
    return operands


def _div_parts(b: FunctionBuilder, lhs: SSAValue, rhs: SSAValue):
    q = b.emit1(llvm.SDivOp(lhs, rhs))
    r = b.emit1(llvm.SRemOp(lhs, rhs))
    zero = b.const(0, lhs.type)
    r_nonzero = b.emit1(llvm.ICmpOp(r, zero, _icmp("ne")))
    # sign(r) != sign(rhs)  <=>  (r ^ rhs) < 0
    signs_differ = b.emit1(
        llvm.ICmpOp(b.emit1(llvm.XOrOp(r, rhs)), zero, _icmp("slt"))
    )
    return q, r_nonzero, signs_differ


@_register(arith.FloorDivSIOp)
def _floordivsi(b: FunctionBuilder, op: Operation) -> Sequence[SSAValue]:
    lhs, rhs = _scalar_operands(b, op)
    q, r_nonzero, signs_differ = _div_parts(b, lhs, rhs)
    adjust = b.emit1(llvm.AndOp(r_nonzero, signs_differ))
    # q - 1 when the remainder is non-zero and its sign differs from the divisor's
    return [b.emit1(llvm.SubOp(q, b.emit1(llvm.ZExtOp(adjust, lhs.type))))]


@_register(arith.CeilDivSIOp)
def _ceildivsi(b: FunctionBuilder, op: Operation) -> Sequence[SSAValue]:
    lhs, rhs = _scalar_operands(b, op)
    q, r_nonzero, signs_differ = _div_parts(b, lhs, rhs)
    same = b.emit1(llvm.XOrOp(signs_differ, b.const(1, i1)))
    adjust = b.emit1(llvm.AndOp(r_nonzero, same))
    return [b.emit1(llvm.AddOp(q, b.emit1(llvm.ZExtOp(adjust, lhs.type))))]


@_register(arith.CeilDivUIOp)
def _ceildivui(b: FunctionBuilder, op: Operation) -> Sequence[SSAValue]:
    lhs, rhs = _scalar_operands(b, op)
    q = b.emit1(llvm.UDivOp(lhs, rhs))
    r = b.emit1(llvm.URemOp(lhs, rhs))
    nonzero = b.emit1(llvm.ICmpOp(r, b.const(0, lhs.type), _icmp("ne")))
    return [b.emit1(llvm.AddOp(q, b.emit1(llvm.ZExtOp(nonzero, lhs.type))))]


def _icmp(name: str) -> IntegerAttr:
    return IntegerAttr(llvm.ICmpPredicateFlag(name).to_int(), i64)


@_register(arith.CmpiOp)
def _cmpi(b: FunctionBuilder, op: arith.CmpiOp) -> Sequence[SSAValue]:
    lhs, rhs = b.operands(op)
    # arith and llvm number the integer predicates identically (eq, ne, slt, ..., uge)
    return [b.emit1(llvm.ICmpOp(lhs, rhs, IntegerAttr(op.predicate.value.data, i64)))]


@_register(arith.CmpfOp)
def _cmpf(b: FunctionBuilder, op: arith.CmpfOp) -> Sequence[SSAValue]:
    lhs, rhs = b.operands(op)
    predicate = op.predicate.value.data  # arith and llvm share the order false, oeq, ..., true
    if predicate in (0, 15):  # false, true: llvm.fcmp cannot print them
        return [b.const(predicate == 15, i1)]
    return [b.emit1(llvm.FCmpOp(lhs, rhs, IntegerAttr(predicate, i64)))]


@_register(arith.SelectOp)
def _select(b: FunctionBuilder, op: arith.SelectOp) -> Sequence[SSAValue]:
    return [b.emit1(llvm.SelectOp(*b.operands(op)))]


def _int_resize(b: FunctionBuilder, value: SSAValue, t: Attribute, signed: bool) -> SSAValue:
    src, dst = bit_width(value.type), bit_width(t)
    if src == dst:
        return value
    if src > dst:
        return b.emit1(llvm.TruncOp(value, t))
    return b.emit1((llvm.SExtOp if signed else llvm.ZExtOp)(value, t))


@_register(arith.IndexCastOp, arith.ExtSIOp, arith.TruncIOp)
def _sext_or_trunc(b: FunctionBuilder, op: Operation) -> Sequence[SSAValue]:
    return [_int_resize(b, b.get(op.operands[0]), result_type(op), signed=True)]


@_register(arith.ExtUIOp)
def _zext(b: FunctionBuilder, op: Operation) -> Sequence[SSAValue]:
    return [_int_resize(b, b.get(op.operands[0]), result_type(op), signed=False)]


_CASTS: dict[type[Operation], type[Operation]] = {
    arith.SIToFPOp: llvm.SIToFPOp,
    arith.ExtFOp: llvm.FPExtOp,
    arith.TruncFOp: llvm.FPTruncOp,
    arith.BitcastOp: llvm.BitcastOp,
    vector.BitcastOp: llvm.BitcastOp,
}


@_register(*_CASTS)
def _cast(b: FunctionBuilder, op: Operation) -> Sequence[SSAValue]:
    return [b.emit1(_CASTS[type(op)](b.get(op.operands[0]), result_type(op)))]


@_register(arith.UIToFPOp)
def _uitofp(b: FunctionBuilder, op: Operation) -> Sequence[SSAValue]:
    value, t = b.get(op.operands[0]), result_type(op)
    if bit_width(value.type) >= 64:
        raise unsupported(op, "64-bit unsigned source")
    wide = VectorType(i64, value.type.get_shape()) if isinstance(value.type, VectorType) else i64
    return [b.emit1(llvm.SIToFPOp(b.emit1(llvm.ZExtOp(value, wide)), t))]


@_register(arith.FPToSIOp, arith.FPToUIOp)
def _fptoi(b: FunctionBuilder, op: Operation) -> Sequence[SSAValue]:
    value, t = b.get(op.operands[0]), result_type(op)
    kind = "fptosi" if isinstance(op, arith.FPToSIOp) else "fptoui"
    name = f"llvm.{kind}.sat.{intrinsic_suffix(t)}.{intrinsic_suffix(value.type)}"
    return [call_intrinsic(b, name, [value], t)]


# --- math ---------------------------------------------------------------------------

# Ops that are one call of an LLVM intrinsic on their operands, always through the name
# overloaded on the result type (`llvm.exp.f32`, `llvm.exp.v8f32`): xDSL's dedicated ops
# (llvm.FExpOp, ...) print one unmangled declaration, so a module using both a scalar and
# a vector exp failed in LLVM ("Type of #1 arg mismatch").
_INTRINSICS: dict[type[Operation], str] = {
    arith.MaximumfOp: "llvm.maximum",
    arith.MinimumfOp: "llvm.minimum",
    arith.MaxnumfOp: "llvm.maxnum",
    arith.MinnumfOp: "llvm.minnum",
    arith.MaxSIOp: "llvm.smax",
    arith.MinSIOp: "llvm.smin",
    arith.MaxUIOp: "llvm.umax",
    arith.MinUIOp: "llvm.umin",
    math.CopySignOp: "llvm.copysign",
    math.PowFOp: "llvm.pow",
    math.Atan2Op: "llvm.atan2",
    math.ExpOp: "llvm.exp",
    math.Exp2Op: "llvm.exp2",
    math.LogOp: "llvm.log",
    math.Log2Op: "llvm.log2",
    math.SqrtOp: "llvm.sqrt",
    math.AbsFOp: "llvm.fabs",
    math.FloorOp: "llvm.floor",
    math.CeilOp: "llvm.ceil",
    math.SinOp: "llvm.sin",
    math.CosOp: "llvm.cos",
    math.TanhOp: "llvm.tanh",
    math.TanOp: "llvm.tan",
    math.SinhOp: "llvm.sinh",
    math.CoshOp: "llvm.cosh",
    math.AsinOp: "llvm.asin",
    math.AcosOp: "llvm.acos",
    math.AtanOp: "llvm.atan",
    math.Log10Op: "llvm.log10",
    math.RoundOp: "llvm.round",
    math.RoundEvenOp: "llvm.roundeven",
    math.TruncOp: "llvm.trunc",
    math.CtPopOp: "llvm.ctpop",
    math.AbsIOp: "llvm.abs",
    math.CountLeadingZerosOp: "llvm.ctlz",
    math.CountTrailingZerosOp: "llvm.cttz",
}
# These take an i1 flag after the operand: false, so that INT_MIN / zero input is not
# poison (defined results, as in arith).
_WITH_POISON_FLAG = (math.AbsIOp, math.CountLeadingZerosOp, math.CountTrailingZerosOp)


@_register(*(op for op in _INTRINSICS if op is not math.ExpOp))
def _intrinsic(b: FunctionBuilder, op: Operation) -> Sequence[SSAValue]:
    args = b.operands(op)
    if isinstance(op, _WITH_POISON_FLAG):
        args = [*args, b.const(0, i1)]
    return [call_overloaded(b, _INTRINSICS[type(op)], args, result_type(op))]


# erf(x) = x P(x^2) / Q(x^2) on [-4, 4] (beyond, erf is 1 to float32 precision), both of
# degree 5: a rational least-squares fit (linearized, reweighted by 1/Q) made for
# xweave; max error 3.2e-7 (abs and rel) when evaluated in float32. It keeps erf in
# vector registers: libm's erff, called lane by lane, made the GELU epilogue of BERT's
# FFN matmul cost more than the matmul itself.
_ERF_P = (1.128379160362843, 0.18965933064058074, 0.05263305250395475,
          0.003730488172425995, 0.000283496093367145, 2.0466107800154454e-06)
_ERF_Q = (1.0, 0.5014141330333263, 0.1137852615834116, 0.01489743093439931,
          0.0011530395974695146, 3.798679104955599e-05)
_ERF_CLAMP = 4.0


def _horner(b: FunctionBuilder, coefficients: Sequence[float], x: SSAValue,
            t: Attribute) -> SSAValue:
    """sum(c[k] x^k) by Horner's rule with fused multiply-adds."""
    acc = b.const(coefficients[-1], t)
    for c in reversed(coefficients[:-1]):
        acc = b.emit1(llvm.FMAOp(acc, x, b.const(c, t)))
    return acc


def _is_f32(t: Attribute) -> bool:
    """Whether `t` is float32 or a vector of it (what the inline polynomials are for)."""
    scalar = element_type(t)
    return isinstance(scalar, AnyFloat) and scalar.bitwidth == 32


def _clamp(b: FunctionBuilder, x: SSAValue, lo: float, hi: float, t: Attribute) -> SSAValue:
    """`x` clamped to [lo, hi]; minimum/maximum (not minnum/maxnum) so that NaN stays NaN."""
    x = call_overloaded(b, "llvm.minimum", [x, b.const(hi, t)], t)
    return call_overloaded(b, "llvm.maximum", [x, b.const(lo, t)], t)


@_register(math.ErfOp)
def _erf(b: FunctionBuilder, op: math.ErfOp) -> Sequence[SSAValue]:
    t = result_type(op)
    if not _is_f32(t):
        return _libm_unary(b, op)  # float64: libm's erf (no float32 polynomial is enough)
    (x,) = b.operands(op)
    x = _clamp(b, x, -_ERF_CLAMP, _ERF_CLAMP, t)
    s = b.emit1(llvm.FMulOp(x, x, CONTRACT))
    numerator = b.emit1(llvm.FMulOp(x, _horner(b, _ERF_P, s, t), CONTRACT))
    return [b.emit1(llvm.FDivOp(numerator, _horner(b, _ERF_Q, s, t), CONTRACT))]


# exp(x) = 2^n e^r, n = round(x / ln 2), r = x - n ln 2 (ln 2 split in a short high
# part and a low part, so n ln2_hi is exact), e^r by its Taylor series to r^7 (|r| <=
# ln 2 / 2: error below 1e-8 before rounding), 2^n built in the exponent bits. As for
# erf: LLVM expands a vector llvm.exp into one libm call per lane.
_EXP_TAYLOR = tuple(1.0 / factorial(k) for k in range(8))
_EXP_LN2_HI, _EXP_LN2_LO = 0.693359375, -2.12194440054690583e-4
# Clamped to where the result has already rounded to 0 / overflowed to inf (so 0 and
# inf come out right without a select).
_EXP_MIN, _EXP_MAX = -104.0, 89.0
_EXP_ROUND_MAGIC, _EXP_ROUND_MAGIC_BITS = 12582912.0, 0x4B400000  # 1.5 * 2^23 and its bits


@_register(math.ExpOp)
def _exp(b: FunctionBuilder, op: math.ExpOp) -> Sequence[SSAValue]:
    t = result_type(op)
    if not _is_f32(t):
        return _intrinsic(b, op)
    lanes = vector_width(t)
    int_t = i32 if lanes is None else VectorType(i32, [lanes])
    (x,) = b.operands(op)
    x = _clamp(b, x, _EXP_MIN, _EXP_MAX, t)
    n = call_overloaded(b, "llvm.roundeven",
                        [b.emit1(llvm.FMulOp(x, b.const(1.4426950408889634, t), CONTRACT))], t)
    r = b.emit1(llvm.FMAOp(n, b.const(-_EXP_LN2_HI, t), x))
    r = b.emit1(llvm.FMAOp(n, b.const(-_EXP_LN2_LO, t), r))
    # 2^n as 2^h 2^(n-h), h = n >> 1: both factors are normal numbers over the whole
    # clamped range, and the second product rounds into the subnormals as exp should.
    # n, an integer in [-151, 129] after the clamp, as i32: n + 1.5 * 2^23 holds n in its
    # low mantissa bits (llvm.fptosi.sat has no x86 vector form: LLVM converts it lane by
    # lane with compares and cmovs, which made a vector exp cost as much as 16 scalar ones).
    shifted = b.emit1(llvm.FAddOp(n, b.const(_EXP_ROUND_MAGIC, t)))
    k = b.emit1(llvm.SubOp(b.emit1(llvm.BitcastOp(shifted, int_t)),
                           b.const(_EXP_ROUND_MAGIC_BITS, int_t)))
    half = b.emit1(llvm.AShrOp(k, b.const(1, int_t)))
    result = _horner(b, _EXP_TAYLOR, r, t)
    for e in (half, b.emit1(llvm.SubOp(k, half))):
        bits = b.emit1(llvm.ShlOp(b.emit1(llvm.AddOp(e, b.const(127, int_t))),
                                  b.const(23, int_t)))
        result = b.emit1(llvm.FMulOp(result, b.emit1(llvm.BitcastOp(bits, t)), CONTRACT))
    return [result]


_LIBM_UNARY: dict[type[Operation], str] = {
    math.ErfOp: "erf",
    math.AsinhOp: "asinh",
    math.AcoshOp: "acosh",
    math.AtanhOp: "atanh",
    math.ExpM1Op: "expm1",
    math.Log1pOp: "log1p",
    math.CbrtOp: "cbrt",
}


@_register(*(op for op in _LIBM_UNARY if op is not math.ErfOp))
def _libm_unary(b: FunctionBuilder, op: Operation) -> Sequence[SSAValue]:
    t = result_type(op)
    scalar = element_type(t)
    if not isinstance(scalar, AnyFloat) or scalar.bitwidth not in (32, 64):
        raise unsupported(op, f"type {t}")
    name = _LIBM_UNARY[type(op)] + ("f" if scalar.bitwidth == 32 else "")
    ftype = llvm.LLVMFunctionType([scalar], scalar)
    return [
        scalarize(b, b.operands(op), t, lambda a: b.call_external(name, ftype, a))
    ]


@_register(math.RsqrtOp)
def _rsqrt(b: FunctionBuilder, op: Operation) -> Sequence[SSAValue]:
    t = result_type(op)
    root = call_overloaded(b, "llvm.sqrt", b.operands(op), t)
    return [b.emit1(llvm.FDivOp(b.const(1.0, t), root, CONTRACT))]


@_register(math.FPowIOp)
def _fpowi(b: FunctionBuilder, op: Operation) -> Sequence[SSAValue]:
    base, exponent = b.operands(op)
    t = result_type(op)
    lanes = vector_width(exponent.type)
    ftype = element_type(t) if lanes is None else VectorType(element_type(t), [lanes])
    as_float = b.emit1(llvm.SIToFPOp(exponent, ftype))
    if lanes is None and isinstance(t, VectorType):
        as_float = splat(b, as_float, t)
    return [call_overloaded(b, "llvm.pow", [base, as_float], t)]


@_register(math.FmaOp, vector.FMAOp)
def _fma(b: FunctionBuilder, op: Operation) -> Sequence[SSAValue]:
    a, x, c = b.operands(op)
    return [b.emit1(llvm.FMAOp(a, x, c))]


# --- vector (register-level) ----------------------------------------------------------


@_register(vector.BroadcastOp)
def _broadcast(b: FunctionBuilder, op: vector.BroadcastOp) -> Sequence[SSAValue]:
    source, t = b.get(op.source), result_type(op)
    if isinstance(source.type, VectorType):
        if source.type == t:
            return [source]
        if vector_width(source.type) != 1:
            raise unsupported(op, f"broadcast of {op.source.type} to {op.vector.type}")
        mask = DenseArrayBase.from_list(i32, [0] * vector_width(t))
        return [b.emit1(llvm.ShuffleVectorOp(source, source, mask, t))]
    return [splat(b, source, t)]


@_register(vector.ExtractOp)
def _extract(b: FunctionBuilder, op: vector.ExtractOp) -> Sequence[SSAValue]:
    position = op.get_mixed_position()
    if len(position) != 1 or not isinstance(position[0], int):
        raise unsupported(op, "only a static position in a 1-D vector")
    return [extract_lane(b, b.get(op.vector), position[0])]


@_register(vector.InsertOp)
def _insert(b: FunctionBuilder, op: vector.InsertOp) -> Sequence[SSAValue]:
    position = op.get_mixed_position()
    if len(position) != 1 or not isinstance(position[0], int):
        raise unsupported(op, "only a static position in a 1-D vector")
    source, dest = b.get(op.source), b.get(op.dest)
    if isinstance(source.type, VectorType):
        raise unsupported(op, "inserting a vector")
    return [insert_lane(b, dest, source, position[0])]


_FLOAT_REDUCE_INTRINSIC = {
    "maxnumf": ("llvm.vector.reduce.fmax", "llvm.maxnum"),
    "minnumf": ("llvm.vector.reduce.fmin", "llvm.minnum"),
    "maximumf": ("llvm.vector.reduce.fmaximum", "llvm.maximum"),
    "minimumf": ("llvm.vector.reduce.fminimum", "llvm.minimum"),
}
_INT_REDUCE = {
    "add": ("llvm.vector.reduce.add", llvm.AddOp),
    "mul": ("llvm.vector.reduce.mul", llvm.MulOp),
    "and": ("llvm.vector.reduce.and", llvm.AndOp),
    "or": ("llvm.vector.reduce.or", llvm.OrOp),
    "xor": ("llvm.vector.reduce.xor", llvm.XOrOp),
    "maxsi": ("llvm.vector.reduce.smax", "llvm.smax"),
    "minsi": ("llvm.vector.reduce.smin", "llvm.smin"),
    "maxui": ("llvm.vector.reduce.umax", "llvm.umax"),
    "minui": ("llvm.vector.reduce.umin", "llvm.umin"),
}


@_register(vector.ReductionOp)
def _reduction(b: FunctionBuilder, op: vector.ReductionOp) -> Sequence[SSAValue]:
    vec = b.get(op.vector)
    acc = b.get(op.acc) if op.acc is not None else None
    t = result_type(op)
    kind = op.kind.data.value
    suffix = intrinsic_suffix(vec.type)
    if isinstance(t, AnyFloat):
        # In order (no reassoc): the reduction's semantics are kept exactly.
        if kind == "add":
            start = acc if acc is not None else b.const(-0.0, t)
            return [b.emit1(llvm.VectorReduceFAddOp(start, vec))]
        if kind == "mul":
            start = acc if acc is not None else b.const(1.0, t)
            return [b.emit1(llvm.VectorReduceFMulOp(start, vec))]
        if kind not in _FLOAT_REDUCE_INTRINSIC:
            raise unsupported(op, f"kind {kind} on floats")
        reduce_name, combine_name = _FLOAT_REDUCE_INTRINSIC[kind]
        reduced = call_intrinsic(b, f"{reduce_name}.{suffix}", [vec], t)
        if acc is None:
            return [reduced]
        return [call_overloaded(b, combine_name, [reduced, acc], t)]
    if not isinstance(t, IntegerType) or kind not in _INT_REDUCE:
        raise unsupported(op, f"kind {kind} on {t}")
    reduce_name, combine = _INT_REDUCE[kind]
    reduced = call_intrinsic(b, f"{reduce_name}.{suffix}", [vec], t)
    if acc is None:
        return [reduced]
    if isinstance(combine, str):
        return [call_overloaded(b, combine, [reduced, acc], t)]
    return [b.emit1(combine(reduced, acc))]

