"""
The `loop` dialect: explicit loop nests over buffers, where schedules happen.

Loops have constant bounds and a kind (how the loop is executed), buffers are builtin
`memref`s whose memory space is a `#loop.scope<...>`, and every buffer access is an
affine map of `index` values, so tiling, reordering, vectorizing, unrolling,
parallelizing, packing and compute-at are rewrites of bounds and affine maps:

```mlir
%acc = loop.alloc : memref<4x16xf32, #loop.scope<local>>
loop.for %i = 0 to 64 step 4 parallel {
  loop.for %k = 0 to 3 {
    %a = loop.load %A[%i * 2 + %k, %j] : memref<136x16xf32>
    %v = loop.load %B[%k, %j] : memref<3x64xf32> -> vector<8xf32>
    loop.store %v, %C[%i, %j] : memref<64x64xf32>, vector<8xf32>
  }
}
```

Loops carry no values: accumulation goes through memory (LLVM promotes small local
buffers to registers). Scalar math is `arith`/`math`, conditionals `scf.if`, and
vectors use the `vector` dialect.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import ClassVar, cast

from xdsl.dialects import func
from xdsl.dialects.builtin import (
    I64,
    AffineMapAttr,
    ArrayAttr,
    DictionaryAttr,
    UnitAttr,
    DenseIntOrFPElementsAttr,
    DenseResourceAttr,
    FixedBitwidthType,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    NoneAttr,
    ShapedType,
    StringAttr,
    SymbolNameConstraint,
    SymbolRefAttr,
    VectorType,
    i64,
)
from xdsl.dialects.utils import EnumAttribute
from xdsl.ir import Attribute, Block, Dialect, Operation, ParametrizedAttribute, Region, SSAValue
from xdsl.ir.affine import (
    AffineBinaryOpExpr,
    AffineBinaryOpKind,
    AffineConstantExpr,
    AffineDimExpr,
    AffineExpr,
    AffineMap,
    AffineSymExpr,
)
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
    irdl_attr_definition,
    irdl_op_definition,
    lazy_traits_def,
    operand_def,
    opt_prop_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.parser import AttrParser, Parser
from xdsl.printer import Printer
from xdsl.rewriter import InsertPoint
from xdsl.traits import (
    HasParent,
    IsTerminator,
    MemoryAllocEffect,
    MemoryReadEffect,
    MemoryWriteEffect,
    NoMemoryEffect,
    Pure,
    RecursiveMemoryEffect,
    SingleBlockImplicitTerminator,
    SymbolOpInterface,
    SymbolTable,
    SymbolUserOpInterface,
    ensure_terminator,
)
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.str_enum import StrEnum

KERNEL_ATTR = "xweave.kernel"
"""The unit attribute that marks a `func.func` as a kernel (from the te stage on)."""


def is_kernel(op: Operation) -> bool:
    """Whether `op` is a kernel: a `func.func` marked `xweave.kernel`."""
    return isinstance(op, func.FuncOp) and KERNEL_ATTR in op.attributes


def mark_kernel(function: func.FuncOp) -> None:
    """Mark `function` as a kernel."""
    function.attributes[KERNEL_ATTR] = UnitAttr()


# ----------------------------------------------------------------------------------
# Attributes
# ----------------------------------------------------------------------------------


class ForKind(StrEnum):
    """How the iterations of a `loop.for` are executed."""

    SERIAL = "serial"
    """One after the other, in order (the default)."""
    PARALLEL = "parallel"
    """Independent iterations, spread over threads."""
    VECTORIZED = "vectorized"
    """Independent iterations, executed as the lanes of SIMD instructions."""
    UNROLLED = "unrolled"
    """Serial, with the body replicated once per iteration."""
    VTHREAD = "vthread"
    """Virtual threads: interleaved instruction streams for latency hiding."""


@irdl_attr_definition
class ForKindAttr(EnumAttribute[ForKind]):
    """The kind of a `loop.for`: `#loop.kind<parallel>`."""

    name = "loop.kind"

    @classmethod
    def parse_parameter(cls, parser: AttrParser) -> ForKind:
        with parser.in_angle_brackets():
            return super().parse_parameter(parser)

    def print_parameter(self, printer: Printer) -> None:
        with printer.in_angle_brackets():
            super().print_parameter(printer)


_SCOPE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z0-9_]+)*")


@irdl_attr_definition
class ScopeAttr(ParametrizedAttribute):
    """A memory scope, the memory space of a buffer: `#loop.scope<local>`."""

    name = "loop.scope"

    scope: StringAttr
    """`global` (main memory), `local` (thread-private), or an accelerator scratchpad."""

    def __init__(self, scope: str | StringAttr):
        super().__init__(StringAttr(scope) if isinstance(scope, str) else scope)

    @property
    def data(self) -> str:
        """The scope's name."""
        return self.scope.data

    def verify(self) -> None:
        if not _SCOPE_NAME.fullmatch(self.scope.data):
            raise VerifyException(
                f"invalid memory scope {self.scope.data!r}: expected an identifier "
                "such as 'global', 'local' or 'vta.inp'"
            )

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        with parser.in_angle_brackets():
            return (StringAttr(parser.parse_identifier(" for memory scope")),)

    def print_parameters(self, printer: Printer) -> None:
        with printer.in_angle_brackets():
            printer.print_string(self.scope.data)


GLOBAL_SCOPE = ScopeAttr("global")
"""Main memory; a memref without memory space is global too."""
LOCAL_SCOPE = ScopeAttr("local")
"""Memory private to one thread (stack/registers)."""


def scope_of(memref_type: MemRefType) -> ScopeAttr:
    """The memory scope of a buffer type (no memory space means global)."""
    space = memref_type.memory_space
    if isinstance(space, NoneAttr):
        return GLOBAL_SCOPE
    if not isinstance(space, ScopeAttr):
        raise ValueError(f"memory space {space} of {memref_type} is not a #loop.scope")
    return space


# ----------------------------------------------------------------------------------
# Loops
# ----------------------------------------------------------------------------------


@irdl_op_definition
class YieldOp(IRDLOperation):
    """Terminates the body of a `loop.for` (implicit in the custom syntax)."""

    name = "loop.yield"

    assembly_format = "attr-dict"

    traits = lazy_traits_def(lambda: (IsTerminator(), HasParent(ForOp), Pure()))


@irdl_op_definition
class ForOp(IRDLOperation):
    """`loop.for "name" %i = lb to ub step s kind { ... }`: a loop with constant bounds.

    The optional name (`<stage>.<axis>`, e.g. `conv2d.rc`) is how schedules address a
    loop: `loop-split{loop="conv2d.rc" factor=4}` (quoted: pipeline values with dots
    must be) makes `conv2d.rc.outer` and
    `conv2d.rc.inner`, as TVM names split axes.
    """

    name = "loop.for"

    lb = prop_def(IntegerAttr[I64])
    """First value of the induction variable."""
    ub = prop_def(IntegerAttr[I64])
    """Exclusive upper bound of the induction variable."""
    step = prop_def(IntegerAttr[I64], default_value=IntegerAttr(1, i64))
    """Increment of the induction variable (positive)."""
    kind = prop_def(ForKindAttr, default_value=ForKindAttr(ForKind.SERIAL))
    """How the iterations are executed."""
    loop_name = opt_prop_def(StringAttr, prop_name="name")
    """The name schedules address this loop by."""

    body = region_def("single_block")
    """One block, whose only argument is the `index` induction variable."""

    traits = traits_def(SingleBlockImplicitTerminator(YieldOp), RecursiveMemoryEffect())

    def __init__(
        self,
        lb: int | IntegerAttr,
        ub: int | IntegerAttr,
        step: int | IntegerAttr = 1,
        kind: ForKind | ForKindAttr = ForKind.SERIAL,
        body: Region | Block | None = None,
        name: str | StringAttr | None = None,
    ):
        """Build a loop; without `body`, an empty body with the induction variable."""
        if body is None:
            body = Block(arg_types=[IndexType()])
        properties = {
            "lb": _i64(lb),
            "ub": _i64(ub),
            "step": _i64(step),
            "kind": kind if isinstance(kind, ForKindAttr) else ForKindAttr(kind),
        }
        if name is not None:
            properties["name"] = StringAttr(name) if isinstance(name, str) else name
        super().__init__(
            properties=properties,
            regions=[[body] if isinstance(body, Block) else body],
        )
        ensure_terminator(self, self.get_trait(SingleBlockImplicitTerminator))

    @property
    def name_str(self) -> str | None:
        """The loop's name, if it has one."""
        return self.loop_name.data if self.loop_name is not None else None

    @property
    def induction_var(self) -> SSAValue:
        """The `index` block argument."""
        return self.body.block.args[0]

    @property
    def range(self) -> range:
        """The values taken by the induction variable."""
        return range(self.lb.value.data, self.ub.value.data, self.step.value.data)

    @property
    def extent(self) -> int:
        """The trip count."""
        return len(self.range)

    @property
    def insertion_point(self) -> InsertPoint:
        """The end of the body, just before the terminator."""
        return InsertPoint.before(cast(Operation, self.body.block.last_op))

    def add_ops(self, ops: Sequence[Operation]) -> None:
        """Append `ops` to the body, before the terminator."""
        self.body.block.insert_ops_before(ops, cast(Operation, self.body.block.last_op))

    def verify_(self) -> None:
        lb, ub, step = self.lb.value.data, self.ub.value.data, self.step.value.data
        if step <= 0:
            raise VerifyException(f"step must be positive, got {step}")
        if lb > ub:
            raise VerifyException(f"lower bound {lb} exceeds upper bound {ub}")
        # Generated code counts in i64: the trip length and the step past the last
        # iteration must not overflow.
        if ub - lb > INT64_MAX or ub - 1 + step > INT64_MAX:
            raise VerifyException(
                f"bounds {lb} to {ub} step {step} overflow a 64-bit induction variable"
            )
        args = self.body.block.args
        if len(args) != 1 or not isinstance(args[0].type, IndexType):
            types = ", ".join(str(a.type) for a in args)
            raise VerifyException(
                f"body must have exactly one block argument, the index induction "
                f"variable; got ({types})"
            )

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        if self.loop_name is not None:
            printer.print_string_literal(self.loop_name.data)
            printer.print_string(" ")
        printer.print_ssa_value(self.induction_var)
        printer.print_string(f" = {self.lb.value.data} to {self.ub.value.data}")
        if self.step.value.data != 1:
            printer.print_string(f" step {self.step.value.data}")
        if self.kind.data != ForKind.SERIAL:
            printer.print_string(f" {self.kind.data}")
        printer.print_string(" ")
        printer.print_region(
            self.body, print_entry_block_args=False, print_block_terminators=False
        )
        printer.print_op_attributes(self.attributes)

    @classmethod
    def parse(cls, parser: Parser) -> ForOp:
        name = parser.parse_optional_str_literal()
        indvar = parser.parse_argument(expect_type=False)
        parser.parse_punctuation("=")
        lb = _parse_i64(parser, "lower bound")
        parser.parse_keyword("to")
        ub = _parse_i64(parser, "upper bound")
        step = 1
        if parser.parse_optional_keyword("step") is not None:
            step = _parse_i64(parser, "step")
        kind = parser.parse_optional_str_enum(ForKind) or ForKind.SERIAL
        body = parser.parse_region((indvar.resolve(IndexType()),))
        op = cls(lb, ub, step, kind, body, name)
        op.attributes |= parser.parse_optional_attr_dict()
        return op


def _i64(value: int | IntegerAttr) -> IntegerAttr:
    return value if isinstance(value, IntegerAttr) else IntegerAttr(value, i64)


INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def _parse_i64(parser: Parser, what: str) -> int:
    """An integer literal that must fit in i64 (an i64 property would wrap it around)."""
    pos = parser.pos
    value = parser.parse_integer(allow_boolean=False, context_msg=f" as {what}")
    if not INT64_MIN <= value <= INT64_MAX:
        parser.raise_error(f"{what} {value} does not fit in a 64-bit integer", pos, parser.pos)
    return value


def _check_buffer_size(memref_type: MemRefType) -> None:
    """A static buffer must be addressable with 64-bit byte offsets."""
    try:
        size = buffer_bytes(memref_type)
    except ValueError:  # an element type without a memory size: nothing to overflow
        return
    if size > INT64_MAX:
        raise VerifyException(f"buffer {memref_type} is too large: {size} bytes")


# ----------------------------------------------------------------------------------
# Buffers
# ----------------------------------------------------------------------------------


@irdl_op_definition
class AllocOp(IRDLOperation):
    """`loop.alloc : memref<6x16xf32, #loop.scope<local>>`: a new buffer of static shape."""

    name = "loop.alloc"

    memref = result_def(MemRefType)
    alignment = opt_prop_def(IntegerAttr[I64])
    """Alignment of the buffer's start, in bytes."""

    assembly_format = "(`align` $alignment^)? attr-dict `:` type($memref)"

    traits = traits_def(MemoryAllocEffect())

    def __init__(self, memref_type: MemRefType, alignment: int | None = None):
        super().__init__(
            result_types=[memref_type],
            properties={} if alignment is None else {"alignment": _i64(alignment)},
        )

    def verify_(self) -> None:
        memref_type = cast(MemRefType, self.memref.type)
        if any(dim < 0 for dim in memref_type.get_shape()):
            raise VerifyException(f"buffer {memref_type} must have a static shape")
        _check_buffer_size(memref_type)
        if self.alignment is not None:
            align = self.alignment.value.data
            if align <= 0 or align & (align - 1):
                raise VerifyException(
                    f"alignment must be a positive power of two, got {align}"
                )


class _GetGlobalSymbolUser(SymbolUserOpInterface):
    """A `loop.get_global` names a `loop.global` of the same type."""

    def verify(self, op: Operation) -> None:
        assert isinstance(op, GetGlobalOp)
        anchor = op.parent_op()
        while anchor is not None and not anchor.has_trait(SymbolTable):
            anchor = anchor.parent_op()
        if anchor is None:  # not inside a module yet
            return
        global_op = SymbolTable.lookup_symbol(op, op.global_name)
        if not isinstance(global_op, GlobalOp):
            raise VerifyException(f"no loop.global named {op.global_name}")
        if global_op.type != op.memref.type:
            raise VerifyException(
                f"result type {op.memref.type} does not match the type {global_op.type} "
                f"of {op.global_name}"
            )


@irdl_op_definition
class GlobalOp(IRDLOperation):
    """`loop.global @w : memref<4x3xf32> = dense_resource<w>`: a constant buffer (weights)."""

    name = "loop.global"

    sym_name = prop_def(SymbolNameConstraint())
    type = prop_def(MemRefType)
    """The buffer's type."""
    initial_value = prop_def(DenseIntOrFPElementsAttr | DenseResourceAttr)
    """Its contents: `dense<...>`, or a blob of the module's `dialect_resources`."""

    assembly_format = "$sym_name `:` $type `=` $initial_value attr-dict"

    traits = traits_def(SymbolOpInterface())

    def __init__(
        self,
        name: str | StringAttr,
        type: MemRefType,
        initial_value: DenseIntOrFPElementsAttr | DenseResourceAttr,
    ):
        super().__init__(
            properties={
                "sym_name": StringAttr(name) if isinstance(name, str) else name,
                "type": type,
                "initial_value": initial_value,
            }
        )

    def verify_(self) -> None:
        value_type = cast(ShapedType, self.initial_value.type)
        memref_type = cast(MemRefType, self.type)
        if (
            value_type.get_shape() != memref_type.get_shape()
            or value_type.get_element_type() != memref_type.get_element_type()
        ):
            raise VerifyException(
                f"initial value of type {value_type} does not fit {memref_type}"
            )


@irdl_op_definition
class GetGlobalOp(IRDLOperation):
    """`%w = loop.get_global @w : memref<4x3xf32>`: the buffer of a `loop.global`."""

    name = "loop.get_global"

    global_name = prop_def(SymbolRefAttr, prop_name="name")
    """The `loop.global` read."""
    memref = result_def(MemRefType)

    assembly_format = "$name `:` type($memref) attr-dict"

    traits = traits_def(NoMemoryEffect(), _GetGlobalSymbolUser())

    def __init__(self, name: str | SymbolRefAttr, memref_type: MemRefType):
        super().__init__(
            result_types=[memref_type],
            properties={"name": SymbolRefAttr(name) if isinstance(name, str) else name},
        )


def _verify_access(
    op: LoadOp | StoreOp | PrefetchOp, memref_type: MemRefType, access_type: Attribute, what: str
) -> None:
    """The checks shared by loads and stores; `what` names the accessed value."""
    affine_map = op.map.data
    num_operands = affine_map.num_dims + affine_map.num_symbols
    if len(op.indices) != num_operands:
        raise VerifyException(
            f"expected {num_operands} index operands for map {affine_map} "
            f"({affine_map.num_dims} dims + {affine_map.num_symbols} symbols), "
            f"got {len(op.indices)}"
        )
    rank = memref_type.get_num_dims()
    if len(affine_map.results) != rank:
        raise VerifyException(
            f"map {affine_map} has {len(affine_map.results)} results, "
            f"but the memref has rank {rank}"
        )
    element_type = memref_type.get_element_type()
    if isinstance(access_type, VectorType):
        if access_type.element_type != element_type or access_type.get_num_dims() != 1:
            raise VerifyException(
                f"{what} type {access_type} must be the element type "
                f"{element_type} or a 1-D vector of it"
            )
        if rank == 0:
            raise VerifyException(f"a vector {what} needs a memref of rank >= 1")
        length, last_dim = access_type.get_shape()[0], memref_type.get_shape()[-1]
        if length > last_dim:
            raise VerifyException(
                f"vector length {length} exceeds the last dimension {last_dim} "
                f"of {memref_type}"
            )
    elif access_type != element_type:
        raise VerifyException(
            f"{what} type {access_type} must be the element type "
            f"{element_type} or a 1-D vector of it"
        )
    length = access_type.get_shape()[0] if isinstance(access_type, VectorType) else 1
    _verify_constant_indices(affine_map, memref_type, length, what)


def _verify_constant_indices(
    affine_map: AffineMap, memref_type: MemRefType, length: int = 1, what: str = "access"
) -> None:
    """Constant indices must lie inside the buffer (`length` elements along the last
    dimension from there, for a vector access)."""
    shape = memref_type.get_shape()
    for dim, (expr, size) in enumerate(zip(affine_map.results, shape)):
        if not isinstance(expr, AffineConstantExpr) or size < 0:
            continue
        extent = length if dim == len(shape) - 1 else 1
        if not 0 <= expr.value <= size - extent:
            raise VerifyException(
                f"constant index {expr.value} of dimension {dim} is out of bounds for "
                f"{memref_type}" + (f" (a {what} of {extent} elements)" if extent > 1 else "")
            )


def _identity_map(memref: SSAValue, map: AffineMap | AffineMapAttr | None) -> AffineMapAttr:
    if isinstance(map, AffineMapAttr):
        return map
    if map is None:
        map = AffineMap.identity(cast(MemRefType, memref.type).get_num_dims())
    return AffineMapAttr(map)


class MemoryAccess:
    """Rewriting of the affine access of `loop.load`, `loop.store` and `loop.prefetch`:
    the buffer, the index operands and the map, changed together."""

    def set_access(self, indices: Sequence[SSAValue], amap: AffineMap,
                   memref: SSAValue | None = None, compact: bool = False) -> bool:
        """Access `memref[amap(indices)]` (the same buffer by default). With `compact`,
        the dims no result uses are dropped (with their operands) and the others
        renumbered in order; returns whether the op changed."""
        memref = self.memref if memref is None else memref
        indices = list(indices)
        if compact and amap.num_symbols == 0:
            used = sorted({d for r in amap.results for d in r.used_dims()})
            if len(used) < amap.num_dims:
                remap = {d: AffineExpr.dimension(i) for i, d in enumerate(used)}
                dims = [remap.get(d, AffineExpr.constant(0)) for d in range(amap.num_dims)]
                amap = amap.replace_dims_and_symbols(dims, [], len(used), 0)
                indices = [indices[d] for d in used]
        if memref is self.memref and amap == self.map.data and indices == list(self.indices):
            return False
        head = list(self.operands[: len(self.operands) - len(self.indices) - 1])
        self.operands = [*head, memref, *indices]
        self.properties["map"] = AffineMapAttr(amap)
        return True

    def rebase(self, memref: SSAValue, offsets: Sequence[AffineExpr],
               fixed: Sequence[SSAValue]) -> None:
        """Access `memref[e - offsets]` instead of `buffer[e]`, where `offsets` are affine
        in the values `fixed` (which must be visible here)."""
        amap = self.map.data
        n = amap.num_dims
        shift = [AffineExpr.dimension(n + i) for i in range(len(fixed))]
        results = tuple(e - off.replace_dims_and_symbols(shift, [])
                        for e, off in zip(amap.results, offsets, strict=True))
        self.set_access([*self.indices, *fixed], AffineMap(n + len(fixed), 0, results), memref)

    def permute(self, order: Sequence[int]) -> None:
        """Index dimension `order[i]` of the old layout as dimension `i` of the new one."""
        amap = self.map.data
        results = tuple(amap.results[d] for d in order)
        self.set_access(list(self.indices), AffineMap(amap.num_dims, amap.num_symbols, results))


@irdl_op_definition
class LoadOp(MemoryAccess, IRDLOperation):
    """`%v = loop.load %A[%i * 2 + %k, %j] : memref<…>`: read an element (or a vector)."""

    name = "loop.load"

    memref = operand_def(MemRefType)
    indices = var_operand_def(IndexType)
    """The map's operands: its dimensions, then its symbols."""
    result = result_def()
    """The element, or a 1-D vector of consecutive elements along the last dimension."""
    map = prop_def(AffineMapAttr)
    """From the index operands to one index per memref dimension."""

    traits = traits_def(MemoryReadEffect())

    def __init__(
        self,
        memref: SSAValue | Operation,
        indices: Sequence[SSAValue | Operation],
        map: AffineMap | AffineMapAttr | None = None,
        result_type: Attribute | None = None,
    ):
        """Read `memref[map(indices)]`; `map` defaults to the identity."""
        memref = SSAValue.get(memref)
        if result_type is None:
            result_type = cast(MemRefType, memref.type).get_element_type()
        super().__init__(
            operands=[memref, indices],
            result_types=[result_type],
            properties={"map": _identity_map(memref, map)},
        )

    @property
    def vector_type(self) -> VectorType | None:
        """The result type if this is a vector load."""
        return self.result.type if isinstance(self.result.type, VectorType) else None

    def verify_(self) -> None:
        _verify_access(self, cast(MemRefType, self.memref.type), self.result.type, "result")

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        _print_access(printer, self)
        if self.vector_type is not None:
            printer.print_string(" -> ")
            printer.print_attribute(self.result.type)

    @classmethod
    def parse(cls, parser: Parser) -> LoadOp:
        memref, map, indices, attributes = _parse_access(parser)
        result_type = None
        if parser.parse_optional_punctuation("->") is not None:
            result_type = parser.parse_type()
        op = cls(memref, indices, map, result_type)
        op.attributes |= attributes
        return op


@irdl_op_definition
class StoreOp(MemoryAccess, IRDLOperation):
    """`loop.store %v, %A[%i, %j] : memref<…>`: write an element (or a vector)."""

    name = "loop.store"

    value = operand_def()
    """The element, or a 1-D vector of consecutive elements along the last dimension."""
    memref = operand_def(MemRefType)
    indices = var_operand_def(IndexType)
    """The map's operands: its dimensions, then its symbols."""
    map = prop_def(AffineMapAttr)
    """From the index operands to one index per memref dimension."""

    traits = traits_def(MemoryWriteEffect())

    def __init__(
        self,
        value: SSAValue | Operation,
        memref: SSAValue | Operation,
        indices: Sequence[SSAValue | Operation],
        map: AffineMap | AffineMapAttr | None = None,
    ):
        """Write `value` to `memref[map(indices)]`; `map` defaults to the identity."""
        memref = SSAValue.get(memref)
        super().__init__(
            operands=[value, memref, indices],
            properties={"map": _identity_map(memref, map)},
        )

    @property
    def vector_type(self) -> VectorType | None:
        """The stored value's type if this is a vector store."""
        return self.value.type if isinstance(self.value.type, VectorType) else None

    def verify_(self) -> None:
        _verify_access(self, cast(MemRefType, self.memref.type), self.value.type, "value")

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_ssa_value(self.value)
        printer.print_string(", ")
        _print_access(printer, self)
        if self.vector_type is not None:
            printer.print_string(", ")
            printer.print_attribute(self.value.type)

    @classmethod
    def parse(cls, parser: Parser) -> StoreOp:
        value = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        memref, map, indices, attributes = _parse_access(parser)
        value_type = cast(MemRefType, memref.type).get_element_type()
        if parser.parse_optional_punctuation(",") is not None:
            value_type = parser.parse_type()
        op = cls(parser.resolve_operand(value, value_type), memref, indices, map)
        op.attributes |= attributes
        return op


@irdl_op_definition
class PrefetchOp(MemoryAccess, IRDLOperation):
    """`loop.prefetch write %A[%i, %j] : memref<…>`: a hint that the cache line holding
    the element will soon be read (or, with `write`, written); no effect on values.

    Lowered to `llvm.prefetch` (into all cache levels). `loop-prefetch` puts these in
    front of a register tile's reduction for the lines its write-back touches.
    """

    name = "loop.prefetch"

    memref = operand_def(MemRefType)
    indices = var_operand_def(IndexType)
    """The map's operands: its dimensions, then its symbols."""
    map = prop_def(AffineMapAttr)
    """From the index operands to one index per memref dimension."""
    write = opt_prop_def(UnitAttr)
    """The line will be written (fetched for ownership)."""

    def __init__(
        self,
        memref: SSAValue | Operation,
        indices: Sequence[SSAValue | Operation],
        map: AffineMap | AffineMapAttr | None = None,
        write: bool = False,
    ):
        memref = SSAValue.get(memref)
        properties: dict[str, Attribute] = {"map": _identity_map(memref, map)}
        if write:
            properties["write"] = UnitAttr()
        super().__init__(operands=[memref, indices], properties=properties)

    @property
    def is_write(self) -> bool:
        return self.write is not None

    def verify_(self) -> None:
        element_type = cast(MemRefType, self.memref.type).get_element_type()
        _verify_access(self, cast(MemRefType, self.memref.type), element_type, "element")

    def print(self, printer: Printer) -> None:
        printer.print_string(" write " if self.is_write else " ")
        _print_access(printer, self)

    @classmethod
    def parse(cls, parser: Parser) -> PrefetchOp:
        write = parser.parse_optional_keyword("write") is not None
        memref, map, indices, attributes = _parse_access(parser)
        op = cls(memref, indices, map, write)
        op.attributes |= attributes
        return op


# ----------------------------------------------------------------------------------
# Custom syntax of buffer accesses: `%A[%i * 2 + %k - 1, %j] {attrs} : memref<...>`
# ----------------------------------------------------------------------------------


def _parse_access(
    parser: Parser,
) -> tuple[SSAValue, AffineMap, Sequence[SSAValue], dict[str, Attribute]]:
    """Parse `%A[exprs] {attrs}? : memref-type`; the map's operands become its dims."""
    memref = parser.parse_unresolved_operand()
    symbol_map, indices = parser.parse_affine_map_of_ssa_ids()
    attributes = parser.parse_optional_attr_dict()
    parser.parse_punctuation(":")
    pos = parser.pos
    memref_type = parser.parse_type()
    if not isinstance(memref_type, MemRefType):
        parser.raise_error(f"expected a memref type, got {memref_type}", pos)
    dims = [AffineExpr.dimension(i) for i in range(symbol_map.num_symbols)]
    affine_map = AffineMap(
        len(dims), 0, tuple(e.replace_dims_and_symbols((), dims) for e in symbol_map.results)
    )
    return parser.resolve_operand(memref, memref_type), affine_map, indices, attributes


def _print_access(printer: Printer, op: LoadOp | StoreOp | PrefetchOp) -> None:
    affine_map = op.map.data
    printer.print_ssa_value(op.memref)
    with printer.in_square_brackets():
        printer.print_list(
            affine_map.results,
            lambda e: _print_expr(printer, e, op.indices, affine_map.num_dims),
        )
    printer.print_op_attributes(op.attributes)
    printer.print_string(" : ")
    printer.print_attribute(op.memref.type)


_PRECEDENCE = {
    AffineBinaryOpKind.Add: 10,
    AffineBinaryOpKind.Mul: 20,
    AffineBinaryOpKind.Mod: 20,
    AffineBinaryOpKind.FloorDiv: 20,
    AffineBinaryOpKind.CeilDiv: 20,
}


def _negated(expr: AffineExpr) -> AffineExpr | None:
    """`e` if `expr` is `-c` (c > 0), `e * -1` or `e * -c`, to print `a - e`."""
    match expr:
        case AffineConstantExpr(value=v) if v < 0:
            return AffineConstantExpr(-v)
        case AffineBinaryOpExpr(
            kind=AffineBinaryOpKind.Mul, lhs=lhs, rhs=AffineConstantExpr(value=v)
        ) if v < 0:
            return lhs if v == -1 else AffineBinaryOpExpr(
                AffineBinaryOpKind.Mul, lhs, AffineConstantExpr(-v)
            )
    return None


def _print_expr(
    printer: Printer,
    expr: AffineExpr,
    operands: Sequence[SSAValue],
    num_dims: int,
    min_prec: int = 0,
) -> None:
    """Print an affine expression with SSA names for dims and symbols, as MLIR does."""
    match expr:
        case AffineConstantExpr(value=value):
            printer.print_string(str(value))
        case AffineDimExpr(position=position) if position < len(operands):
            printer.print_ssa_value(operands[position])
        case AffineSymExpr(position=position) if num_dims + position < len(operands):
            printer.print_ssa_value(operands[num_dims + position])
        case AffineDimExpr() | AffineSymExpr():
            printer.print_string(f"<<missing operand {expr}>>")  # only in invalid IR
        case AffineBinaryOpExpr(kind=kind, lhs=lhs, rhs=rhs):
            prec = _PRECEDENCE[kind]
            parens = prec < min_prec
            if parens:
                printer.print_string("(")
            if (
                kind == AffineBinaryOpKind.Add
                and isinstance(rhs, AffineConstantExpr)
                and rhs.value >= 0
                and (negated := _negated(lhs)) is not None
            ):  # `e * -1 + c` reads `c - e`
                printer.print_string(f"{rhs.value} - ")
                _print_expr(printer, negated, operands, num_dims, prec + 1)
            elif kind == AffineBinaryOpKind.Add and (negated := _negated(rhs)) is not None:
                _print_expr(printer, lhs, operands, num_dims, prec)
                printer.print_string(" - ")  # `e + -c` reads `e - c`
                _print_expr(printer, negated, operands, num_dims, prec + 1)
            else:
                _print_expr(printer, lhs, operands, num_dims, prec)
                printer.print_string(f" {kind.get_token()} ")
                right_prec = prec if kind == AffineBinaryOpKind.Add else prec + 1
                _print_expr(printer, rhs, operands, num_dims, right_prec)
            if parens:
                printer.print_string(")")
        case _:
            raise ValueError(f"unexpected affine expression {expr}")


# ----------------------------------------------------------------------------------
# Views: typed buffers inside one byte buffer (memory planning)
# ----------------------------------------------------------------------------------


def element_bytes(element_type: Attribute) -> int:
    """Bytes one buffer element takes in memory (i1 takes a byte, index 8)."""
    if isinstance(element_type, IndexType):
        return 8
    if isinstance(element_type, FixedBitwidthType):
        return element_type.size
    raise ValueError(f"no memory size for element type {element_type}")


def buffer_bytes(memref_type: MemRefType) -> int:
    """Bytes of a static, row-major buffer."""
    count = 1
    for dim in memref_type.get_shape():
        count *= dim
    return count * element_bytes(memref_type.get_element_type())


@irdl_op_definition
class ViewOp(IRDLOperation):
    """`%v = loop.view %arena[4096] : memref<8192xi8> to memref<4x8xf32>`: a typed buffer
    at a constant byte offset inside a 1-D `i8` buffer.

    `plan-memory` turns the intermediate buffers of `@main` into views of one arena, so
    buffers whose lifetimes do not overlap share memory. The view is row-major and lies
    wholly inside its source; both are in the same memory scope.
    """

    name = "loop.view"

    source = operand_def(MemRefType)
    """The byte buffer (`memref<Nxi8>`)."""
    byte_offset = prop_def(IntegerAttr[I64], prop_name="offset")
    """Where the view starts in the source, in bytes."""
    result = result_def(MemRefType)

    assembly_format = (
        "$source `[` $offset `]` attr-dict `:` type($source) `to` type($result)"
    )

    traits = traits_def(NoMemoryEffect())

    def __init__(self, source: SSAValue | Operation, offset: int, result_type: MemRefType):
        super().__init__(
            operands=[source], result_types=[result_type], properties={"offset": _i64(offset)}
        )

    @property
    def offset(self) -> int:
        """The byte offset."""
        return self.byte_offset.value.data

    def verify_(self) -> None:
        source = cast(MemRefType, self.source.type)
        result = cast(MemRefType, self.result.type)
        if (
            source.get_num_dims() != 1
            or source.get_element_type() != IntegerType(8)
            or source.get_shape()[0] < 0
            or not isinstance(source.layout, NoneAttr)
        ):
            raise VerifyException(
                f"source must be a static 1-D buffer of i8 (memref<Nxi8>), got {source}"
            )
        if any(dim < 0 for dim in result.get_shape()) or not isinstance(result.layout, NoneAttr):
            raise VerifyException(f"result {result} must have a static shape and no layout")
        if scope_of(source) != scope_of(result):
            raise VerifyException(
                f"result scope {scope_of(result).data} differs from the source scope "
                f"{scope_of(source).data}"
            )
        try:
            offset, size = self.offset, buffer_bytes(result)
            element = element_bytes(result.get_element_type())
        except ValueError as e:
            raise VerifyException(str(e)) from None
        if offset < 0 or offset % element:
            raise VerifyException(
                f"offset {offset} must be a non-negative multiple of the element size {element}"
            )
        if offset + size > source.get_shape()[0]:
            raise VerifyException(
                f"the view [{offset}, {offset + size}) does not fit in the "
                f"{source.get_shape()[0]} bytes of the source"
            )


# ----------------------------------------------------------------------------------
# Accelerator code: tensor intrinsic calls and dependency tokens
# ----------------------------------------------------------------------------------


def _param_value(attr: Attribute):
    """A `loop.intrinsic` parameter as a Python value."""
    if isinstance(attr, IntegerAttr):
        return attr.value.data
    if isinstance(attr, StringAttr):
        return attr.data
    if isinstance(attr, UnitAttr):
        return True
    if isinstance(attr, ArrayAttr):
        return tuple(_param_value(a) for a in attr.data)
    return attr


@irdl_op_definition
class IntrinsicOp(IRDLOperation):
    """`loop.intrinsic "vta.gemm"(%acc[%i, 0, 0], %inp[...], %wgt[...]) : ...`: one call of
    a declared tensor intrinsic (see `xweave.accel.api`), made by `tensorize`.

    Each operand is a buffer with an affine access: the index at which the intrinsic's
    tensor starts in it. `params` holds static arguments (sizes, opcodes, ...)."""

    name = "loop.intrinsic"

    callee = prop_def(StringAttr)
    """The qualified intrinsic name, `<accelerator>.<intrinsic>`."""
    buffers = var_operand_def(MemRefType)
    """The intrinsic's tensors: its output first, then its inputs (as declared)."""
    indices = var_operand_def(IndexType)
    """The operands of every access map (shared)."""
    maps = prop_def(ArrayAttr[AffineMapAttr])
    """One map per buffer, from `indices` to the buffer's start index."""
    params = opt_prop_def(DictionaryAttr)
    """Static arguments of the call."""

    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    def __init__(
        self,
        callee: str,
        buffers: Sequence[SSAValue | Operation],
        indices: Sequence[SSAValue | Operation],
        maps: Sequence[AffineMap | AffineMapAttr],
        params: dict[str, Attribute] | DictionaryAttr | None = None,
    ):
        props: dict[str, Attribute] = {
            "callee": StringAttr(callee),
            "maps": ArrayAttr([m if isinstance(m, AffineMapAttr) else AffineMapAttr(m) for m in maps]),
        }
        if params:
            props["params"] = params if isinstance(params, DictionaryAttr) else DictionaryAttr(params)
        super().__init__(operands=[buffers, indices], properties=props)

    @property
    def callee_name(self) -> str:
        return self.callee.data

    @property
    def operand_maps(self) -> list[AffineMap]:
        return [m.data for m in self.maps.data]

    @property
    def static_attrs(self) -> dict[str, object]:
        """`params` as Python values (ints, strings, True for unit, tuples)."""
        if self.params is None:
            return {}
        return {k: _param_value(v) for k, v in self.params.data.items()}

    def verify_(self) -> None:
        if not re.fullmatch(r"[A-Za-z_][\w]*\.[A-Za-z_][\w.]*", self.callee.data):
            raise VerifyException(
                f"intrinsic name {self.callee.data!r} must be qualified: '<accelerator>.<name>'"
            )
        maps = self.operand_maps
        if len(maps) != len(self.buffers):
            raise VerifyException(f"{len(self.buffers)} buffers but {len(maps)} access maps")
        for i, (buffer, m) in enumerate(zip(self.buffers, maps)):
            rank = cast(MemRefType, buffer.type).get_num_dims()
            if m.num_dims + m.num_symbols != len(self.indices):
                raise VerifyException(
                    f"access map {i} takes {m.num_dims + m.num_symbols} operands, "
                    f"but the call has {len(self.indices)} indices"
                )
            if len(m.results) != rank:
                raise VerifyException(
                    f"access map {i} has {len(m.results)} results, but buffer {i} has rank {rank}"
                )

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_string_literal(self.callee.data)
        printer.print_string("(")
        for i, (buffer, m) in enumerate(zip(self.buffers, self.operand_maps)):
            if i:
                printer.print_string(", ")
            printer.print_ssa_value(buffer)
            with printer.in_square_brackets():
                printer.print_list(
                    m.results, lambda e: _print_expr(printer, e, self.indices, m.num_dims)
                )
        printer.print_string(")")
        if self.params is not None:
            printer.print_string(" params ")
            printer.print_attribute(self.params)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_list(self.buffers, lambda b: printer.print_attribute(b.type))

    @classmethod
    def parse(cls, parser: Parser) -> IntrinsicOp:
        callee = parser.parse_str_literal(" (the intrinsic name)")
        accesses: list[tuple[object, AffineMap, Sequence[SSAValue]]] = []

        def one() -> None:
            buffer = parser.parse_unresolved_operand()
            symbol_map, idx = parser.parse_affine_map_of_ssa_ids()
            accesses.append((buffer, symbol_map, idx))

        parser.parse_comma_separated_list(parser.Delimiter.PAREN, one)
        params = None
        if parser.parse_optional_keyword("params") is not None:
            pos = parser.pos
            params = parser.parse_attribute()
            if not isinstance(params, DictionaryAttr):
                parser.raise_error("expected a dictionary after 'params'", pos)
        attributes = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        types = parser.parse_comma_separated_list(parser.Delimiter.NONE, parser.parse_type)
        if len(types) != len(accesses):
            parser.raise_error(f"expected {len(accesses)} buffer types, got {len(types)}")
        indices: list[SSAValue] = []
        maps: list[AffineMap] = []
        for _, symbol_map, idx in accesses:
            dims = []
            for value in idx:
                if value not in indices:
                    indices.append(value)
            dims = [AffineExpr.dimension(indices.index(v)) for v in idx]
            maps.append(
                AffineMap(0, 0, tuple(e.replace_dims_and_symbols((), dims) for e in symbol_map.results))
            )
        maps = [AffineMap(len(indices), 0, m.results) for m in maps]
        buffers = [parser.resolve_operand(b, t) for (b, _, _), t in zip(accesses, types)]
        op = cls(callee, buffers, indices, maps, params)
        op.attributes |= attributes
        return op


_STAGE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class _DepOp(IRDLOperation):
    """Shared part of `loop.dep_push` / `loop.dep_pop`."""

    src = prop_def(StringAttr)
    """The producing stage (module), e.g. `load`."""
    dst = prop_def(StringAttr)
    """The consuming stage, e.g. `compute`."""

    assembly_format = "$src `->` $dst attr-dict"

    def __init__(self, src: str, dst: str):
        super().__init__(properties={"src": StringAttr(src), "dst": StringAttr(dst)})

    @property
    def src_stage(self) -> str:
        return self.src.data

    @property
    def dst_stage(self) -> str:
        return self.dst.data

    def verify_(self) -> None:
        for what, value in (("source", self.src.data), ("destination", self.dst.data)):
            if not _STAGE_NAME.fullmatch(value):
                raise VerifyException(f"invalid {what} stage name {value!r}")
        if self.src.data == self.dst.data:
            raise VerifyException(
                f"a dependency token goes between two different stages, got {self.src.data!r} twice"
            )


@irdl_op_definition
class DepPushOp(_DepOp):
    """`loop.dep_push "load" -> "compute"`: once the preceding work of stage `src` is done,
    send one token to stage `dst` (latency hiding; inserted by `virtual-threads`)."""

    name = "loop.dep_push"


@irdl_op_definition
class DepPopOp(_DepOp):
    """`loop.dep_pop "load" -> "compute"`: stage `dst` waits for one token from `src`
    before its following work."""

    name = "loop.dep_pop"


Loop = Dialect(
    "loop",
    [ForOp, YieldOp, AllocOp, GlobalOp, GetGlobalOp, LoadOp, StoreOp, PrefetchOp, ViewOp,
     IntrinsicOp, DepPushOp, DepPopOp],
    [ForKindAttr, ScopeAttr],
)
