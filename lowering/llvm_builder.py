"""Shared machinery of `convert-loop-to-llvm`: type conversion and an llvm-dialect emitter.

The lowering does not rewrite ops in place: it builds each `llvm.func` body from
scratch while walking the source function once, which is both simpler for control
flow (loops and conditionals become blocks) and much faster than pattern rewriting.

`FunctionBuilder` holds the function being built: the insertion block, the map from
source values to lowered values, and a prologue for the entry block (constants and
`llvm.alloca`s, hoisted there so that they dominate every use).
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import llvm
from xdsl.dialects.utils.fast_math import FastMathFlag
from xdsl.dialects.builtin import (
    AnyFloat,
    DenseIntOrFPElementsAttr,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    Signedness,
    VectorType,
    i1,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue

from xweave.errors import XweaveError

PTR = llvm.LLVMPointerType()
"""Every memref becomes an opaque pointer to its first element (static shapes, row-major)."""

CONTRACT = llvm.FastMathAttr([FastMathFlag.ALLOW_CONTRACT])
"""The fast-math flags of every float op: fusion into FMA only, never reassociation."""

NSW = IntegerAttr(llvm.OverflowAttr([llvm.OverflowFlag.NO_SIGNED_WRAP]).to_int(), 32)
"""The `nsw` flag of index arithmetic, as the integer attribute the ops hold (given an
`OverflowAttr`, an op converts it anew each time)."""


class LoweringError(XweaveError):
    """The module holds something `convert-loop-to-llvm` cannot lower."""


def unsupported(op: Operation, why: str = "") -> LoweringError:
    """The error for an op the lowering cannot handle, naming it."""
    detail = f": {why}" if why else ""
    return LoweringError(f"convert-loop-to-llvm: cannot lower '{op.name}'{detail}")


def convert_type(t: Attribute) -> Attribute:
    """The llvm-dialect type of a loop-stage value: index -> i64, memref -> !llvm.ptr."""
    if isinstance(t, IndexType):
        return i64
    if isinstance(t, MemRefType):
        return PTR
    if isinstance(t, IntegerType):
        if t.signedness.data != Signedness.SIGNLESS:
            return IntegerType(t.width.data)
        return t
    if isinstance(t, VectorType):
        if t.get_num_dims() != 1 or t.get_num_scalable_dims():
            raise LoweringError(
                f"convert-loop-to-llvm: only fixed 1-D vectors are supported, got {t}"
            )
        element = convert_type(t.element_type)
        return t if element == t.element_type else VectorType(element, t.get_shape())
    return t


def element_type(t: Attribute) -> Attribute:
    """The scalar type of a scalar or vector type."""
    return t.element_type if isinstance(t, VectorType) else t


def vector_width(t: Attribute) -> int | None:
    """The lane count of a vector type, None for a scalar."""
    return t.get_shape()[0] if isinstance(t, VectorType) else None


def bit_width(t: Attribute) -> int:
    """The width in bits of an integer or float scalar type (index counts as 64)."""
    t = element_type(t)
    if isinstance(t, IndexType):
        return 64
    if isinstance(t, IntegerType):
        return t.width.data
    if isinstance(t, AnyFloat):
        return t.bitwidth
    raise LoweringError(f"convert-loop-to-llvm: type {t} has no bit width")


def byte_size(t: Attribute) -> int:
    """The size in bytes of a scalar element type (i1 is stored as one byte)."""
    return max(1, (bit_width(t) + 7) // 8)


def llvm_array_type(memref_type: MemRefType) -> Attribute:
    """The nested `!llvm.array` holding a memref's elements (as MLIR lowers globals)."""
    result = convert_type(memref_type.get_element_type())
    for dim in reversed(memref_type.get_shape()):
        result = llvm.LLVMArrayType(dim, result)
    return result


def num_elements(memref_type: MemRefType) -> int:
    """The element count of a static memref."""
    n = 1
    for dim in memref_type.get_shape():
        if dim < 0:
            raise LoweringError(
                f"convert-loop-to-llvm: buffer {memref_type} must have a static shape"
            )
        n *= dim
    return n


def row_major_strides(shape: Sequence[int]) -> list[int]:
    """Element strides of a row-major (identity layout) array."""
    strides = [1] * len(shape)
    for d in range(len(shape) - 2, -1, -1):
        strides[d] = strides[d + 1] * shape[d + 1]
    return strides


def intrinsic_suffix(t: Attribute) -> str:
    """The overload suffix of an LLVM intrinsic: `f32`, `v8f32`, `i64`."""
    lanes = vector_width(t)
    scalar = element_type(t)
    if isinstance(scalar, IntegerType):
        name = f"i{scalar.width.data}"
    elif isinstance(scalar, AnyFloat):
        name = {16: "f16", 32: "f32", 64: "f64"}[scalar.bitwidth]
    else:
        raise LoweringError(f"convert-loop-to-llvm: no intrinsic overload for {t}")
    return f"v{lanes}{name}" if lanes is not None else name


class FunctionBuilder:
    """The body of one `llvm.func` under construction."""

    def __init__(
        self,
        arg_types: Sequence[Attribute],
        externals: dict[str, llvm.LLVMFunctionType] | None = None,
    ):
        self.externals = externals if externals is not None else {}
        """External functions called (libm, malloc, ...): name -> type, declared by the module."""
        self.entry = Block(arg_types=arg_types)
        self.region = Region(self.entry)
        self.block = self.entry
        """Where `emit` appends."""
        self.values: dict[SSAValue, SSAValue] = {}
        """Source value -> lowered value."""
        self._constants: dict[tuple[Attribute, str], SSAValue] = {}
        self._constant_ops: list[Operation] = []
        self._entry_ops: list[Operation] = []

    # --- values ---------------------------------------------------------------------

    def map(self, source: SSAValue, lowered: SSAValue) -> None:
        self.values[source] = lowered

    def get(self, source: SSAValue) -> SSAValue:
        """The lowered value of a source value."""
        try:
            return self.values[source]
        except KeyError:
            owner = source.owner
            name = owner.name if isinstance(owner, Operation) else "block argument"
            raise LoweringError(
                f"convert-loop-to-llvm: value defined by '{name}' was not lowered "
                "(used before its definition, or defined by an unsupported op)"
            ) from None

    def operands(self, op: Operation) -> list[SSAValue]:
        return [self.get(v) for v in op.operands]

    # --- emission -------------------------------------------------------------------

    def emit(self, op: Operation) -> Operation:
        """Append `op` to the current block."""
        self.block.add_op(op)
        return op

    def emit1(self, op: Operation) -> SSAValue:
        """Append a single-result op and return its result."""
        self.block.add_op(op)
        return op.results[0]

    def new_block(self, arg_types: Sequence[Attribute] = ()) -> Block:
        """A new block, not yet placed in the region (see `place`)."""
        return Block(arg_types=arg_types)

    def place(self, block: Block) -> Block:
        """Append `block` to the function and make it the insertion point."""
        self.region.add_block(block)
        self.block = block
        return block

    def in_entry(self, op: Operation) -> Operation:
        """Hoist `op` into the entry block (after the constants), e.g. an alloca."""
        self._entry_ops.append(op)
        return op

    def call_external(
        self, name: str, ftype: llvm.LLVMFunctionType, args: Sequence[SSAValue]
    ) -> SSAValue | None:
        """Call a C function (declared once per module as an external `llvm.func`)."""
        known = self.externals.setdefault(name, ftype)
        if known != ftype:
            raise LoweringError(
                f"convert-loop-to-llvm: external function '{name}' used with types "
                f"{known} and {ftype}"
            )
        output = ftype.output
        returns = not isinstance(output, llvm.LLVMVoidType)
        op = self.emit(llvm.CallOp(name, *args, return_type=output if returns else None))
        return op.results[0] if returns else None

    # --- constants ------------------------------------------------------------------

    def const(self, value: int | float | bool, t: Attribute = i64) -> SSAValue:
        """A scalar or splat-vector constant of (lowered) type `t`, emitted once per function."""
        t = convert_type(t)
        key = (t, repr(value))  # repr: -0.0 and 0.0 are different constants
        cached = self._constants.get(key)
        if cached is not None:
            return cached
        scalar = element_type(t)
        if isinstance(scalar, AnyFloat):
            if isinstance(t, VectorType):
                attr = DenseIntOrFPElementsAttr.from_list(t, [float(value)] * vector_width(t))
            else:
                attr = FloatAttr(float(value), scalar)
        elif isinstance(scalar, IntegerType):
            v = int(value)
            if scalar == i1:
                v = 1 if v else 0
            if isinstance(t, VectorType):
                attr = DenseIntOrFPElementsAttr.from_list(t, [v] * vector_width(t))
            else:
                attr = IntegerAttr(_signed(v, scalar.width.data), scalar)
        else:
            raise LoweringError(f"convert-loop-to-llvm: no constant of type {t}")
        op = llvm.ConstantOp(attr, t)
        self._constant_ops.append(op)
        self._constants[key] = op.result
        return op.result

    def dense_const(self, attr: DenseIntOrFPElementsAttr) -> SSAValue:
        """A vector constant from a (possibly splat) dense attribute."""
        t = convert_type(attr.get_type())
        if not isinstance(t, VectorType):
            raise LoweringError(f"convert-loop-to-llvm: dense constant of type {t}")
        values = list(attr.get_values())
        lanes = vector_width(t)
        if len(values) == 1 and lanes != 1:
            values = values * lanes
        if len(set(values)) == 1:
            return self.const(values[0], t)
        op = llvm.ConstantOp(DenseIntOrFPElementsAttr.from_list(t, values), t)
        self._constant_ops.append(op)
        return op.result

    # --- finishing ------------------------------------------------------------------

    def finish(self) -> Region:
        """Put the hoisted constants and entry ops at the start of the entry block."""
        constants = [op for op in self._constant_ops if op.results[0].uses]
        prologue = constants + self._entry_ops
        if prologue:
            first = self.entry.first_op
            if first is None:
                self.entry.add_ops(prologue)
            else:
                self.entry.insert_ops_before(prologue, first)
        self._constant_ops, self._entry_ops = [], []
        return self.region


def _signed(value: int, width: int) -> int:
    """`value` as a signed integer of `width` bits (IntegerAttr wants the signed range)."""
    if width == 1:
        return value & 1
    mask = (1 << width) - 1
    value &= mask
    return value - (1 << width) if value >> (width - 1) else value
