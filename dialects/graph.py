"""The `graph` dialect: whole-tensor deep-learning operators with static shapes.

This is the first IR stage (see docs/architecture.md): the ONNX frontend produces
`graph` ops on builtin `tensor<...>` values inside `func.func @main`, and
`convert-graph-to-te` lowers every op except `graph.constant` to tensor expressions.

Every op class carries `pattern_kind` (TVM's operator pattern) so that fusion can
decide what may be grouped. Static data (strides, pads, ...) lives in properties,
written in the attribute dictionary:

```mlir
%w = graph.constant dense_resource<conv1_w_1a2b3c4d> : tensor<4x3x3x3xf32>
%y = graph.conv2d %x, %w {dilations = array<i64: 1, 1>, groups = 1 : i64,
                          pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>}
     : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32>
%r = graph.relu %y : tensor<1x4x8x8xf32>
```

Weights are `dense_resource` blobs kept in the builtin dialect's resource store and
printed in the module's `{-# dialect_resources: {builtin: {...}} #-}` section, so the
text form round-trips on its own (`ConstantOp.from_array`, `constant_value`).

Data is float32; a few ops also carry other element types: comparisons produce `i1`
tensors, which `graph.where`, `graph.not`/`and`/`or`/`xor` consume; `graph.gather`
takes integer indices; `graph.cast` converts between element types. Every other op has
one element type for its operands and results.
"""

from __future__ import annotations

import abc
import hashlib
import re
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from enum import IntEnum
from math import prod
from typing import ClassVar

import numpy as np
from xdsl.dialect_interfaces.op_asm import OpAsmDialectInterface
from xdsl.dialects.builtin import (
    Builtin,
    BytesAttr,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    DenseResourceAttr,
    Float16Type,
    Float32Type,
    Float64Type,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    Signedness,
    StringAttr,
    TensorType,
    f16,
    f32,
    f64,
    i1,
    i64,
)
from xdsl.interfaces import HasFolderInterface
from xdsl.ir import Attribute, Dialect, Region, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    ParamAttrConstraint,
    ParsePropInAttrDict,
    VarConstraint,
    base,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import (
    ConstantLike,
    HasParent,
    IsolatedFromAbove,
    IsTerminator,
    Pure,
    RecursiveMemoryEffect,
)
from xdsl.utils.exceptions import VerifyException

from xweave.errors import ElidedResourceError
from xweave.layout import transform_shape

# --------------------------------------------------------------------------------------
# Operator patterns (TVM's OpPatternKind, same order and values)
# --------------------------------------------------------------------------------------


class PatternKind(IntEnum):
    """How an operator's outputs depend on its inputs; larger is harder to fuse."""

    ELEMWISE = 0
    """out[i] = f(in[i]) with identical shapes."""
    BROADCAST = 1
    """Elementwise with numpy broadcasting of the inputs."""
    INJECTIVE = 2
    """Each output element reads one input element (reshape, transpose, ...)."""
    REDUCTION = 3
    """Commutative reduction over some axes (global pools, sums)."""
    OUT_ELEMWISE_FUSABLE = 4
    """Complex op (conv2d, dense, pools) whose output can absorb elementwise ops."""
    OPAQUE = 8
    """Not fusable (constants, anything unknown)."""


class _PatternKindDef(property):
    """An op class's PatternKind, readable on the class and on its instances.

    xDSL only accepts UPPER_CASE ClassVars on op definitions, but lets properties
    through; this property also answers on the class (`Conv2dOp.pattern_kind`).
    """

    def __init__(self, kind: PatternKind):
        super().__init__(lambda _op: kind)
        self.kind = kind

    def __get__(self, obj: object, objtype: type | None = None) -> PatternKind:  # pyright: ignore
        return self.kind


def pattern_kind_def(kind: PatternKind) -> PatternKind:
    """Declare `pattern_kind` on a graph op class: `pattern_kind = pattern_kind_def(K)`."""
    return _PatternKindDef(kind)  # pyright: ignore[reportReturnType]


# --------------------------------------------------------------------------------------
# Shape helpers (shared by verifiers, builders, the interpreter and the frontend)
# --------------------------------------------------------------------------------------


def broadcast_shape(*shapes: Sequence[int]) -> tuple[int, ...] | None:
    """numpy's broadcast of `shapes`, or None if they are incompatible."""
    try:
        return tuple(np.broadcast_shapes(*(tuple(s) for s in shapes)))
    except ValueError:
        return None


def window_output_size(
    size: int,
    kernel: int,
    stride: int,
    pad_begin: int,
    pad_end: int,
    dilation: int = 1,
    ceil_mode: bool = False,
) -> int:
    """Output length of a sliding window (ONNX conv/pool formula, incl. ceil_mode).

    With ceil_mode a last window that would start inside the end padding is dropped
    (ONNX, onnxruntime and PyTorch agree on this).
    """
    span = dilation * (kernel - 1) + 1
    room = size + pad_begin + pad_end - span
    if not ceil_mode:
        return room // stride + 1
    out = -(-room // stride) + 1
    if (out - 1) * stride >= size + pad_begin:
        out -= 1
    return out


def conv2d_output_shape(
    input_shape: Sequence[int],
    weight_shape: Sequence[int],
    strides: Sequence[int],
    pads: Sequence[int],
    dilations: Sequence[int],
) -> tuple[int, ...]:
    """[N, O, OH, OW] of an NCHW x OIHW convolution (pads: top, left, bottom, right)."""
    n, _, h, w = input_shape
    o, _, kh, kw = weight_shape
    oh = window_output_size(h, kh, strides[0], pads[0], pads[2], dilations[0])
    ow = window_output_size(w, kw, strides[1], pads[1], pads[3], dilations[1])
    return (n, o, oh, ow)


def pool2d_output_shape(
    input_shape: Sequence[int],
    kernel: Sequence[int],
    strides: Sequence[int],
    pads: Sequence[int],
    dilations: Sequence[int] = (1, 1),
    ceil_mode: bool = False,
) -> tuple[int, ...]:
    """[N, C, OH, OW] of a 2-D pool on NCHW data (pads: top, left, bottom, right)."""
    n, c, h, w = input_shape
    oh = window_output_size(h, kernel[0], strides[0], pads[0], pads[2], dilations[0], ceil_mode)
    ow = window_output_size(w, kernel[1], strides[1], pads[1], pads[3], dilations[1], ceil_mode)
    return (n, c, oh, ow)


def matmul_output_shape(a: Sequence[int], b: Sequence[int]) -> tuple[int, ...] | None:
    """numpy matmul's result shape for rank >= 2 operands, or None if incompatible."""
    if len(a) < 2 or len(b) < 2 or a[-1] != b[-2]:
        return None
    batch = broadcast_shape(a[:-2], b[:-2])
    if batch is None:
        return None
    return (*batch, a[-2], b[-1])


def reduce_output_shape(
    shape: Sequence[int], axes: Sequence[int], keepdims: bool
) -> tuple[int, ...]:
    """Shape after reducing `axes` (non-negative) of `shape`."""
    if keepdims:
        return tuple(1 if d in axes else e for d, e in enumerate(shape))
    return tuple(e for d, e in enumerate(shape) if d not in axes)


def conv_transpose2d_output_shape(
    input_shape: Sequence[int],
    weight_shape: Sequence[int],
    strides: Sequence[int],
    pads: Sequence[int],
    dilations: Sequence[int],
    output_padding: Sequence[int],
    groups: int,
) -> tuple[int, ...]:
    """[N, O, OH, OW] of a transposed convolution (weight [C, O/groups, KH, KW])."""
    n, _, h, w = input_shape
    _, og, kh, kw = weight_shape
    sizes = []
    for i, (size, k) in enumerate(((h, kh), (w, kw))):
        sizes.append(strides[i] * (size - 1) + output_padding[i] + dilations[i] * (k - 1) + 1
                     - pads[i] - pads[i + 2])
    return (n, og * groups, *sizes)


def gather_output_shape(
    data: Sequence[int], indices: Sequence[int], axis: int
) -> tuple[int, ...]:
    """numpy.take's result shape."""
    return (*data[:axis], *indices, *data[axis + 1 :])


def _i64_array(values: Sequence[int]) -> DenseArrayBase:
    return DenseArrayBase.from_list(i64, [int(v) for v in values])


def _shape(value: SSAValue | Attribute) -> tuple[int, ...]:
    typ = value.type if isinstance(value, SSAValue) else value
    assert isinstance(typ, TensorType)
    return typ.get_shape()


def _tensor(element_type: Attribute, shape: Sequence[int]) -> TensorType:
    return TensorType(element_type, [int(d) for d in shape])


def _element(value: SSAValue) -> Attribute:
    typ = value.type
    assert isinstance(typ, TensorType)
    return typ.element_type


# --------------------------------------------------------------------------------------
# Element types <-> numpy dtypes
# --------------------------------------------------------------------------------------


def numpy_dtype(element_type: Attribute) -> np.dtype:
    """The numpy dtype holding values of a builtin element type."""
    if isinstance(element_type, Float32Type):
        return np.dtype(np.float32)
    if isinstance(element_type, Float64Type):
        return np.dtype(np.float64)
    if isinstance(element_type, Float16Type):
        return np.dtype(np.float16)
    if isinstance(element_type, IntegerType):
        width = element_type.width.data
        if width == 1:
            return np.dtype(np.bool_)
        if width in (8, 16, 32, 64):
            unsigned = element_type.signedness.data == Signedness.UNSIGNED
            return np.dtype(f"{'u' if unsigned else 'i'}{width // 8}")
    raise ValueError(f"no numpy dtype for element type {element_type}")


def element_type_of(dtype: np.dtype) -> Attribute:
    """The builtin element type for a numpy dtype (ints are signless, uints unsigned)."""
    dtype = np.dtype(dtype)
    if dtype == np.float32:
        return f32
    if dtype == np.float64:
        return f64
    if dtype == np.float16:
        return f16
    if dtype == np.bool_:
        return i1
    if dtype.kind == "i":
        return IntegerType(dtype.itemsize * 8)
    if dtype.kind == "u":
        return IntegerType(dtype.itemsize * 8, Signedness.UNSIGNED)
    raise ValueError(f"unsupported constant dtype {dtype}")


# --------------------------------------------------------------------------------------
# The weight blob store
# --------------------------------------------------------------------------------------


class _ResourceStore(OpAsmDialectInterface):
    """The builtin dialect's blob store, with parse-stable handles.

    xDSL 0.74's store renames a handle that already exists when it is parsed again
    (`w` -> `w_0`) but stores the blob under yet another name, so a module printed and
    re-parsed in the same process loses its weights. Here equal handles denote the same
    resource (as in one MLIR context); `ConstantOp.from_array` keeps handles unique by
    hashing the content into them.
    """

    def declare_resource(self, key: str) -> str:
        self._blob_storage.setdefault(key, "")
        return key

    def parse_resource(self, key: str, val: str) -> None:
        # An elided blob (`ELIDED`) never replaces data already known under its handle.
        if val == ELIDED:
            if key not in self._blob_storage:
                raise KeyError(f"Resource with key {key} wasn't declared")
            if not self._blob_storage[key]:
                self._blob_storage[key] = ELIDED
            return
        super().parse_resource(key, val)

    def build_resources(self, keys: Iterable[str]) -> dict[str, str]:
        resources = super().build_resources(keys)
        limit = _ELIDE_LARGER_THAN.get()
        if limit:
            resources = {k: ELIDED if (len(v) - 10) // 2 > limit else v
                         for k, v in resources.items()}
        return resources


ELIDED = "__elided__"
"""What a printed `dialect_resources` entry holds in place of a blob left out."""

_ELIDE_LARGER_THAN: ContextVar[int] = ContextVar("elide_resources_larger_than", default=0)


@contextmanager
def eliding_resources(larger_than: int) -> Iterator[None]:
    """While active, modules are printed with every resource blob of more than
    `larger_than` bytes replaced by `ELIDED` (0: every blob printed), as MLIR's
    `--mlir-elide-resource-strings-if-larger`. Such IR parses and verifies, but what
    needs the values (compiling, running, folding it) fails with `ElidedResourceError`."""
    token = _ELIDE_LARGER_THAN.set(max(0, larger_than))
    try:
        yield
    finally:
        _ELIDE_LARGER_THAN.reset(token)


def resource_data(key: str) -> str | None:
    """The hex blob stored under `key` (None: no such resource); raises
    `ElidedResourceError` if the IR it was parsed from had it elided."""
    blob = resource_store().lookup(key)
    if blob == ELIDED:
        raise ElidedResourceError(
            f"dense_resource<{key}>: its data was elided when this IR was written (blobs "
            "larger than --elide-resources-larger-than BYTES are left out, by default in "
            "--dump-ir files); write it again with --elide-resources-larger-than 0 to keep "
            "the weights")
    return blob


def resource_store() -> OpAsmDialectInterface:
    """The builtin dialect's blob store, made parse-stable (installed on import)."""
    store = Builtin.get_interface(OpAsmDialectInterface)
    if store is None or not isinstance(store, _ResourceStore):
        fixed = _ResourceStore()
        if store is not None:
            fixed._blob_storage = store._blob_storage  # keep blobs already known
            Builtin._interfaces.remove(store)
        Builtin._interfaces.append(fixed)
        store = fixed
    return store


resource_store()

_ARRAY_CACHE: dict[str, tuple[str, np.ndarray]] = {}
"""handle -> (blob string, decoded read-only array), to decode each blob once."""

INLINE_LIMIT = 16
"""Constants with at most this many elements are printed inline as `dense<...>`."""


_HEX_BLOB = re.compile(r"0x(?:[0-9A-Fa-f]{2})*")


def _encode_blob(array: np.ndarray) -> str:
    # MLIR's blob encoding: "0x", the alignment as little-endian u32, then the bytes.
    alignment = max(array.dtype.itemsize, 1).to_bytes(4, "little")
    return "0x" + (alignment + array.tobytes()).hex().upper()


def _decode_blob(blob: str, dtype: np.dtype, shape: Sequence[int]) -> np.ndarray:
    array = np.frombuffer(bytes.fromhex(blob[10:]), dtype=dtype).reshape(shape)
    array.flags.writeable = False
    return array


def _resource_handle(name: str, array: np.ndarray) -> str:
    """A valid, process-unique handle: sanitized name + short content hash."""
    safe = re.sub(r"[^A-Za-z0-9_]", "_", name) or "const"
    if not (safe[0].isalpha() or safe[0] == "_"):
        safe = "c_" + safe
    digest = hashlib.blake2b(digest_size=4)
    digest.update(f"{array.dtype.str}{array.shape}".encode())
    digest.update(array.tobytes())
    return f"{safe}_{digest.hexdigest()}"


def _register_blob(name: str, array: np.ndarray) -> str:
    store = resource_store()
    base_key = key = _resource_handle(name, array)
    blob = _encode_blob(array)
    counter = 0
    while (existing := store.lookup(key)) and existing not in (blob, ELIDED):
        counter += 1  # a hash collision: keep both
        key = f"{base_key}_{counter}"
    if not existing or existing == ELIDED:
        store.declare_resource(key)
        store.parse_resource(key, blob)
    readonly = array.copy()
    readonly.flags.writeable = False
    _ARRAY_CACHE[key] = (store.lookup(key) or blob, readonly)
    return key


def constant_value(op: ConstantOp) -> np.ndarray:
    """The value of a `graph.constant` as a read-only numpy array of its type."""
    typ = op.result.type
    assert isinstance(typ, TensorType)
    dtype, shape = numpy_dtype(typ.element_type), typ.get_shape()
    value = op.value
    if isinstance(value, DenseIntOrFPElementsAttr):
        data = value.data.data
        count = prod(shape)
        if len(data) == dtype.itemsize and count != 1:  # splat
            data = data * count
        array = np.frombuffer(data, dtype=dtype).reshape(shape)
        array.flags.writeable = False
        return array
    key = value.resource_handle.data
    blob = resource_data(key)
    if not blob:
        raise VerifyException(
            f"graph.constant: no data for dense_resource<{key}> (missing from the "
            "module's dialect_resources section)"
        )
    cached = _ARRAY_CACHE.get(key)
    if cached is not None and cached[0] is blob and cached[1].shape == tuple(shape):
        return cached[1]
    array = _decode_blob(blob, dtype, shape)
    _ARRAY_CACHE[key] = (blob, array)
    return array


# --------------------------------------------------------------------------------------
# Base classes
# --------------------------------------------------------------------------------------


class GraphOperation(IRDLOperation, abc.ABC):
    """Base of every graph op: static tensor shapes, one element type throughout (ops
    with other rules override `verify_element_types`)."""

    pattern_kind = pattern_kind_def(PatternKind.OPAQUE)

    traits = traits_def(Pure())
    irdl_options = (ParsePropInAttrDict(),)

    def verify_(self) -> None:
        types = [v.type for v in (*self.operands, *self.results)]
        for typ in types:  # all TensorType, by the operand/result constraints
            if any(d < 0 for d in typ.get_shape()):  # pyright: ignore[reportAttributeAccessIssue]
                raise self._fail(f"expected a static shape but got {typ}")
        self.verify_element_types()
        self.verify_shapes()

    def verify_element_types(self) -> None:
        """Element type rules; by default one element type for operands and results."""
        self._expect_one_element_type([*self.operands, *self.results])

    def _expect_one_element_type(self, values: Sequence[SSAValue]) -> None:
        elements = {_element(v) for v in values}
        if len(elements) > 1:
            names = ", ".join(sorted(str(e) for e in elements))
            raise self._fail(f"expected one element type but got {names}")

    def _expect_element(self, what: str, value: SSAValue, allowed: str) -> None:
        """`allowed`: "float", "integer" (i8..i64, not i1) or "bool" (i1)."""
        element = _element(value)
        ok = {
            "float": isinstance(element, Float16Type | Float32Type | Float64Type),
            "integer": isinstance(element, IntegerType) and element.width.data > 1,
            "bool": element == i1,
        }[allowed]
        if not ok:
            raise self._fail(f"expected {what} of {allowed} elements but got {value.type}")

    def verify_shapes(self) -> None:
        """Op-specific checks; shapes are static and element types follow the op's rule."""

    def _fail(self, message: str) -> VerifyException:
        return VerifyException(f"{self.name}: {message}")

    def _expect_result_shape(self, expected: Sequence[int]) -> None:
        got = _shape(self.results[0])
        if tuple(expected) != got:
            raise self._fail(f"expected result shape {list(expected)} but got {list(got)}")

    def _expect_rank(self, what: str, value: SSAValue, rank: int) -> None:
        if len(_shape(value)) != rank:
            raise self._fail(f"expected {what} of rank {rank} but got {value.type}")

    def _expect_len(self, prop: str, values: Sequence[int], length: int, minimum: int) -> None:
        if len(values) != length:
            raise self._fail(f"expected {length} values in {prop} but got {list(values)}")
        if any(v < minimum for v in values):
            raise self._fail(f"expected {prop} >= {minimum} but got {list(values)}")


@irdl_op_definition
class ConstantOp(GraphOperation, HasFolderInterface):
    """A constant tensor: inline `dense<...>` or a `dense_resource<...>` weight blob."""

    name = "graph.constant"
    pattern_kind = pattern_kind_def(PatternKind.OPAQUE)

    T: ClassVar = VarConstraint("T", base(TensorType))
    value = prop_def(
        ParamAttrConstraint(DenseIntOrFPElementsAttr, (T, base(BytesAttr)))
        | ParamAttrConstraint(DenseResourceAttr, (base(Attribute), T))
    )
    result = result_def(T)

    traits = traits_def(Pure(), ConstantLike())
    assembly_format = "$value attr-dict"

    def __init__(self, value: DenseIntOrFPElementsAttr | DenseResourceAttr):
        super().__init__(result_types=[value.type], properties={"value": value})

    @staticmethod
    def from_array(name: str, array: np.ndarray) -> ConstantOp:
        """A constant holding `array`: inline if small, else a named resource blob."""
        array = np.asarray(array)  # (ascontiguousarray would make 0-d arrays 1-d)
        array = np.require(array.astype(array.dtype.newbyteorder("<"), copy=False), requirements="C")
        typ = _tensor(element_type_of(array.dtype), array.shape)
        if array.size <= INLINE_LIMIT:
            return ConstantOp(DenseIntOrFPElementsAttr(typ, BytesAttr(array.tobytes())))
        return ConstantOp(DenseResourceAttr.from_params(_register_blob(name, array), typ))

    def fold(self) -> tuple[Attribute, ...]:
        return (self.value,)

    def verify_shapes(self) -> None:
        if isinstance(self.value, DenseResourceAttr):
            key = self.value.resource_handle.data
            blob = resource_store().lookup(key)
            if not blob:
                raise self._fail(f"no data for dense_resource<{key}>")
            if blob == ELIDED:
                return  # printed without its data: valid, but it cannot be evaluated
            if not _HEX_BLOB.fullmatch(blob):
                raise self._fail(f"dense_resource<{key}> is not a hex blob (0x and hex digits)")
            typ = self.result.type
            assert isinstance(typ, TensorType)
            nbytes = prod(typ.get_shape()) * numpy_dtype(typ.element_type).itemsize
            if len(blob) != 10 + 2 * nbytes:
                raise self._fail(
                    f"dense_resource<{key}> holds {(len(blob) - 10) // 2} bytes but "
                    f"{typ} needs {nbytes}"
                )


class _WeightedOp(GraphOperation, abc.ABC):
    """input, weight and an optional bias (conv2d, dense)."""

    input = operand_def(TensorType)
    weight = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    result = result_def(TensorType)

    assembly_format = (
        "$input `,` $weight (`,` $bias^)? attr-dict `:` functional-type(operands, results)"
    )


@irdl_op_definition
class Conv2dOp(_WeightedOp):
    """2-D convolution, NCHW data, OIHW weights, optional bias [O], grouped and dilated."""

    name = "graph.conv2d"
    pattern_kind = pattern_kind_def(PatternKind.OUT_ELEMWISE_FUSABLE)

    strides = prop_def(DenseArrayBase.constr(i64))
    pads = prop_def(DenseArrayBase.constr(i64))
    dilations = prop_def(DenseArrayBase.constr(i64))
    groups = prop_def(IntegerAttr.constr(type=base(IntegerType)))

    def __init__(
        self,
        input: SSAValue,
        weight: SSAValue,
        bias: SSAValue | None = None,
        *,
        strides: Sequence[int] = (1, 1),
        pads: Sequence[int] = (0, 0, 0, 0),
        dilations: Sequence[int] = (1, 1),
        groups: int = 1,
        result_type: Attribute | None = None,
    ):
        if result_type is None:
            shape = conv2d_output_shape(_shape(input), _shape(weight), strides, pads, dilations)
            result_type = _tensor(input.type.element_type, shape)  # pyright: ignore
        super().__init__(
            operands=[input, weight, [] if bias is None else [bias]],
            result_types=[result_type],
            properties={
                "strides": _i64_array(strides),
                "pads": _i64_array(pads),
                "dilations": _i64_array(dilations),
                "groups": IntegerAttr(groups, i64),
            },
        )

    def verify_shapes(self) -> None:
        self._expect_rank("input", self.input, 4)
        self._expect_rank("weight", self.weight, 4)
        strides, pads = self.strides.get_values(), self.pads.get_values()
        dilations, groups = self.dilations.get_values(), self.groups.value.data
        self._expect_len("strides", strides, 2, 1)
        self._expect_len("pads", pads, 4, 0)
        self._expect_len("dilations", dilations, 2, 1)
        if groups < 1:
            raise self._fail(f"expected groups >= 1 but got {groups}")
        (_, channels, _, _), (out_channels, group_channels, _, _) = (
            _shape(self.input),
            _shape(self.weight),
        )
        if channels != group_channels * groups:
            raise self._fail(
                f"input has {channels} channels but weight expects "
                f"{group_channels} x {groups} groups = {group_channels * groups}"
            )
        if out_channels % groups:
            raise self._fail(f"{out_channels} output channels are not divisible by {groups} groups")
        if self.bias is not None and _shape(self.bias) != (out_channels,):
            raise self._fail(f"expected bias shape [{out_channels}] but got {list(_shape(self.bias))}")
        expected = conv2d_output_shape(_shape(self.input), _shape(self.weight), strides, pads, dilations)
        if min(expected) < 1:
            raise self._fail(f"kernel does not fit: output shape would be {list(expected)}")
        self._expect_result_shape(expected)


def conv2d_nchwc_output_shape(
    input_shape: Sequence[int],
    weight_shape: Sequence[int],
    strides: Sequence[int],
    pads: Sequence[int],
    dilations: Sequence[int],
) -> tuple[int, ...]:
    """[N, O/co, OH, OW, co] of a channel-blocked convolution (see `Conv2dNchwcOp`)."""
    n, _, h, w, _ = input_shape
    blocks, _, kh, kw, _, co = weight_shape
    _, _, oh, ow = conv2d_output_shape((n, 0, h, w), (0, 0, kh, kw), strides, pads, dilations)
    return (n, blocks, oh, ow, co)


@irdl_op_definition
class Conv2dNchwcOp(_WeightedOp):
    """2-D convolution on channel-blocked data (made by `graph-alter-layout`).

    data [N][C/ci][H][W][ci] (layout NCHW<ci>c), weight [O/co][C/ci][KH][KW][ci][co]
    (OIHW<ci>i<co>o), optional bias [O/co][co]; result [N][O/co][OH][OW][co].
    groups is 1, or the channel count for a depthwise convolution (O = C, ci = co):
    its weight is [C/co][1][KH][KW][1][co] (OIHW1i<co>o, one input channel per group).
    """

    name = "graph.conv2d_nchwc"
    pattern_kind = pattern_kind_def(PatternKind.OUT_ELEMWISE_FUSABLE)

    strides = prop_def(DenseArrayBase.constr(i64))
    pads = prop_def(DenseArrayBase.constr(i64))
    dilations = prop_def(DenseArrayBase.constr(i64))
    groups = prop_def(IntegerAttr.constr(type=base(IntegerType)))

    def __init__(
        self,
        input: SSAValue,
        weight: SSAValue,
        bias: SSAValue | None = None,
        *,
        strides: Sequence[int] = (1, 1),
        pads: Sequence[int] = (0, 0, 0, 0),
        dilations: Sequence[int] = (1, 1),
        groups: int = 1,
    ):
        shape = conv2d_nchwc_output_shape(_shape(input), _shape(weight), strides, pads, dilations)
        super().__init__(
            operands=[input, weight, [] if bias is None else [bias]],
            result_types=[_tensor(_element(input), shape)],
            properties={
                "strides": _i64_array(strides),
                "pads": _i64_array(pads),
                "dilations": _i64_array(dilations),
                "groups": IntegerAttr(groups, i64),
            },
        )

    def verify_shapes(self) -> None:
        self._expect_rank("input", self.input, 5)
        self._expect_rank("weight", self.weight, 6)
        strides, pads = self.strides.get_values(), self.pads.get_values()
        dilations, groups = self.dilations.get_values(), self.groups.value.data
        self._expect_len("strides", strides, 2, 1)
        self._expect_len("pads", pads, 4, 0)
        self._expect_len("dilations", dilations, 2, 1)
        (_, cb, _, _, ci), (ob, wcb, _, _, wci, co) = _shape(self.input), _shape(self.weight)
        channels = cb * ci
        if groups == 1:
            if (wcb, wci) != (cb, ci):
                raise self._fail(
                    f"weight blocks input channels as [{wcb}][..][{wci}] but the input has [{cb}][..][{ci}]"
                )
        elif groups == channels:
            if (wcb, wci) != (1, 1) or co != ci or ob * co != channels:
                raise self._fail(
                    f"depthwise ({groups} groups) expects weight [{channels // ci}][1][KH][KW][1][{ci}] "
                    f"but got {list(_shape(self.weight))}"
                )
        else:
            raise self._fail(f"expected groups 1 or {channels} (depthwise) but got {groups}")
        if self.bias is not None and _shape(self.bias) != (ob, co):
            raise self._fail(f"expected bias shape [{ob}, {co}] but got {list(_shape(self.bias))}")
        expected = conv2d_nchwc_output_shape(
            _shape(self.input), _shape(self.weight), strides, pads, dilations
        )
        if min(expected) < 1:
            raise self._fail(f"kernel does not fit: output shape would be {list(expected)}")
        self._expect_result_shape(expected)


@irdl_op_definition
class DenseOp(_WeightedOp):
    """Fully connected layer: x [M, K], w [N, K], optional b [N] -> x @ w.T + b."""

    name = "graph.dense"
    pattern_kind = pattern_kind_def(PatternKind.OUT_ELEMWISE_FUSABLE)

    def __init__(
        self,
        input: SSAValue,
        weight: SSAValue,
        bias: SSAValue | None = None,
        *,
        result_type: Attribute | None = None,
    ):
        if result_type is None:
            shape = (_shape(input)[0], _shape(weight)[0])
            result_type = _tensor(input.type.element_type, shape)  # pyright: ignore
        super().__init__(
            operands=[input, weight, [] if bias is None else [bias]], result_types=[result_type]
        )

    def verify_shapes(self) -> None:
        self._expect_rank("input", self.input, 2)
        self._expect_rank("weight", self.weight, 2)
        (m, k), (n, wk) = _shape(self.input), _shape(self.weight)
        if k != wk:
            raise self._fail(f"input has K = {k} but weight has K = {wk}")
        if self.bias is not None and _shape(self.bias) != (n,):
            raise self._fail(f"expected bias shape [{n}] but got {list(_shape(self.bias))}")
        self._expect_result_shape((m, n))


@irdl_op_definition
class MatmulOp(GraphOperation):
    """numpy matmul of rank >= 2 tensors, broadcasting the batch dimensions."""

    name = "graph.matmul"
    pattern_kind = pattern_kind_def(PatternKind.OUT_ELEMWISE_FUSABLE)

    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)

    assembly_format = "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)"

    def __init__(self, lhs: SSAValue, rhs: SSAValue, result_type: Attribute | None = None):
        if result_type is None:
            shape = matmul_output_shape(_shape(lhs), _shape(rhs))
            assert shape is not None, "graph.matmul: incompatible operand shapes"
            result_type = _tensor(lhs.type.element_type, shape)  # pyright: ignore
        super().__init__(operands=[lhs, rhs], result_types=[result_type])

    def verify_shapes(self) -> None:
        a, b = _shape(self.lhs), _shape(self.rhs)
        if len(a) < 2 or len(b) < 2:
            raise self._fail(f"expected operands of rank >= 2 but got ranks {len(a)} and {len(b)}")
        if a[-1] != b[-2]:
            raise self._fail(f"contracting dimensions differ: {list(a)} x {list(b)}")
        expected = matmul_output_shape(a, b)
        if expected is None:
            raise self._fail(f"batch dimensions of {list(a)} and {list(b)} do not broadcast")
        self._expect_result_shape(expected)


# --------------------------------------------------------------------------------------
# Elementwise families
# --------------------------------------------------------------------------------------


class BinaryOperation(GraphOperation, abc.ABC):
    """Elementwise binary op with numpy broadcasting; result type = broadcast shape."""

    pattern_kind = pattern_kind_def(PatternKind.BROADCAST)

    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)

    assembly_format = "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)"

    def __init__(self, lhs: SSAValue, rhs: SSAValue, result_type: Attribute | None = None):
        if result_type is None:
            shape = broadcast_shape(_shape(lhs), _shape(rhs))
            assert shape is not None, f"{self.name}: operand shapes do not broadcast"
            result_type = _tensor(lhs.type.element_type, shape)  # pyright: ignore
        super().__init__(operands=[lhs, rhs], result_types=[result_type])

    def verify_shapes(self) -> None:
        a, b = _shape(self.lhs), _shape(self.rhs)
        expected = broadcast_shape(a, b)
        if expected is None:
            raise self._fail(f"operand shapes {list(a)} and {list(b)} are not broadcast-compatible")
        self._expect_result_shape(expected)


@irdl_op_definition
class AddOp(BinaryOperation):
    """lhs + rhs."""

    name = "graph.add"


@irdl_op_definition
class SubOp(BinaryOperation):
    """lhs - rhs."""

    name = "graph.sub"


@irdl_op_definition
class MulOp(BinaryOperation):
    """lhs * rhs."""

    name = "graph.mul"


@irdl_op_definition
class DivOp(BinaryOperation):
    """lhs / rhs."""

    name = "graph.div"


@irdl_op_definition
class MaxOp(BinaryOperation):
    """Elementwise maximum."""

    name = "graph.max"


@irdl_op_definition
class MinOp(BinaryOperation):
    """Elementwise minimum."""

    name = "graph.min"


@irdl_op_definition
class PowOp(BinaryOperation):
    """lhs ** rhs."""

    name = "graph.pow"


class UnaryOperation(GraphOperation, abc.ABC):
    """Elementwise unary op; the result type equals the operand type."""

    pattern_kind = pattern_kind_def(PatternKind.ELEMWISE)

    T: ClassVar = VarConstraint("T", base(TensorType))
    input = operand_def(T)
    result = result_def(T)

    assembly_format = "$input attr-dict `:` type($result)"

    def __init__(self, input: SSAValue):
        super().__init__(operands=[input], result_types=[input.type])


@irdl_op_definition
class ReluOp(UnaryOperation):
    """max(x, 0)."""

    name = "graph.relu"


@irdl_op_definition
class SigmoidOp(UnaryOperation):
    """1 / (1 + exp(-x))."""

    name = "graph.sigmoid"


@irdl_op_definition
class TanhOp(UnaryOperation):
    """tanh(x)."""

    name = "graph.tanh"


@irdl_op_definition
class ExpOp(UnaryOperation):
    """exp(x)."""

    name = "graph.exp"


@irdl_op_definition
class NegOp(UnaryOperation):
    """-x."""

    name = "graph.neg"


@irdl_op_definition
class SqrtOp(UnaryOperation):
    """sqrt(x)."""

    name = "graph.sqrt"


@irdl_op_definition
class AbsOp(UnaryOperation):
    """|x|."""

    name = "graph.abs"


@irdl_op_definition
class ClipOp(UnaryOperation):
    """min(max(x, min), max) (as ONNX: all elements become max if min > max)."""

    name = "graph.clip"

    min = prop_def(FloatAttr.constr(base(Float64Type)))
    max = prop_def(FloatAttr.constr(base(Float64Type)))

    def __init__(self, input: SSAValue, min: float = float("-inf"), max: float = float("inf")):
        IRDLOperation.__init__(
            self,
            operands=[input],
            result_types=[input.type],
            properties={"min": FloatAttr(float(min), f64), "max": FloatAttr(float(max), f64)},
        )


# --------------------------------------------------------------------------------------
# Pools
# --------------------------------------------------------------------------------------


class _NCHWOperation(GraphOperation, abc.ABC):
    """One input, one result of a computed shape, in layout `layout`: "NCHW" (the
    default) or channel-blocked "NCHW<k>c" ([N][C/k][H][W][k], see xweave.layout)."""

    input = operand_def(TensorType)
    result = result_def(TensorType)
    layout = prop_def(StringAttr, default_value=StringAttr("NCHW"))

    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"

    def expected_shape(self) -> tuple[int, ...]:
        raise NotImplementedError

    def channel_block(self) -> int:
        """k of an "NCHW<k>c" layout, 0 for "NCHW"."""
        text = self.layout.data
        match = re.fullmatch(r"NCHW(\d+)c", text)
        if text != "NCHW" and (match is None or int(match.group(1)) < 1):
            raise self._fail(f'expected layout "NCHW" or "NCHW<k>c" but got "{text}"')
        return int(match.group(1)) if match else 0

    def nchw_shape(self) -> tuple[int, ...]:
        """The input shape as [N, C-blocks, H, W] (the block dimension dropped)."""
        block = self.channel_block()
        self._expect_rank("input", self.input, 5 if block else 4)
        shape = _shape(self.input)
        if block and shape[4] != block:
            raise self._fail(f"layout {self.layout.data} needs a last dimension of {block} but got {self.input.type}")
        return shape[:4]

    def blocked_shape(self, nchw: Sequence[int]) -> tuple[int, ...]:
        """`nchw` (from `nchw_shape`) with the channel block appended again."""
        block = self.channel_block()
        return (*nchw, block) if block else tuple(nchw)

    def verify_shapes(self) -> None:
        self._expect_result_shape(self.expected_shape())


class _WindowPoolOperation(_NCHWOperation, abc.ABC):
    """max_pool2d / avg_pool2d: a kernel window slid with strides over padded input."""

    pattern_kind = pattern_kind_def(PatternKind.OUT_ELEMWISE_FUSABLE)

    kernel = prop_def(DenseArrayBase.constr(i64))
    strides = prop_def(DenseArrayBase.constr(i64))
    pads = prop_def(DenseArrayBase.constr(i64))
    ceil_mode = prop_def(IntegerAttr.constr(type=base(IntegerType)))

    def window_dilations(self) -> tuple[int, ...]:
        return (1, 1)

    def expected_shape(self) -> tuple[int, ...]:
        kernel, strides = self.kernel.get_values(), self.strides.get_values()
        pads, dilations = self.pads.get_values(), self.window_dilations()
        self._expect_len("kernel", kernel, 2, 1)
        self._expect_len("strides", strides, 2, 1)
        self._expect_len("pads", pads, 4, 0)
        self._expect_len("dilations", dilations, 2, 1)
        span = [d * (k - 1) + 1 for k, d in zip(kernel, dilations)]
        if pads[0] >= span[0] or pads[2] >= span[0] or pads[1] >= span[1] or pads[3] >= span[1]:
            raise self._fail(f"pads {list(pads)} must be smaller than the window {span}")
        shape = pool2d_output_shape(
            self.nchw_shape(), kernel, strides, pads, dilations, bool(self.ceil_mode.value.data)
        )
        if min(shape) < 1:
            raise self._fail(f"window does not fit: output shape would be {list(shape)}")
        return self.blocked_shape(shape)


def _pool_props(kernel, strides, pads, ceil_mode, layout) -> dict[str, Attribute]:
    return {
        "kernel": _i64_array(kernel),
        "strides": _i64_array(strides),
        "pads": _i64_array(pads),
        "ceil_mode": IntegerAttr(int(ceil_mode), i1),
        "layout": StringAttr(layout),
    }


def _pool_result(input: SSAValue, *args) -> TensorType:
    shape = _shape(input)
    block = shape[4:]  # NCHW<k>c: the channel block comes back at the end
    return _tensor(input.type.element_type, (*pool2d_output_shape(shape[:4], *args), *block))  # pyright: ignore


@irdl_op_definition
class MaxPool2dOp(_WindowPoolOperation):
    """2-D max pooling on NCHW; padding never wins (it counts as -inf)."""

    name = "graph.max_pool2d"

    dilations = prop_def(DenseArrayBase.constr(i64))

    def __init__(
        self,
        input: SSAValue,
        kernel: Sequence[int],
        strides: Sequence[int] = (1, 1),
        pads: Sequence[int] = (0, 0, 0, 0),
        dilations: Sequence[int] = (1, 1),
        ceil_mode: bool = False,
        result_type: Attribute | None = None,
        layout: str = "NCHW",
    ):
        if result_type is None:
            result_type = _pool_result(input, kernel, strides, pads, dilations, ceil_mode)
        props = _pool_props(kernel, strides, pads, ceil_mode, layout)
        props["dilations"] = _i64_array(dilations)
        super().__init__(operands=[input], result_types=[result_type], properties=props)

    def window_dilations(self) -> tuple[int, ...]:
        return self.dilations.get_values()


@irdl_op_definition
class AvgPool2dOp(_WindowPoolOperation):
    """2-D average pooling on NCHW; count_include_pad divides by the padded window."""

    name = "graph.avg_pool2d"

    count_include_pad = prop_def(IntegerAttr.constr(type=base(IntegerType)))

    def __init__(
        self,
        input: SSAValue,
        kernel: Sequence[int],
        strides: Sequence[int] = (1, 1),
        pads: Sequence[int] = (0, 0, 0, 0),
        ceil_mode: bool = False,
        count_include_pad: bool = False,
        result_type: Attribute | None = None,
        layout: str = "NCHW",
    ):
        if result_type is None:
            result_type = _pool_result(input, kernel, strides, pads, (1, 1), ceil_mode)
        props = _pool_props(kernel, strides, pads, ceil_mode, layout)
        props["count_include_pad"] = IntegerAttr(int(count_include_pad), i1)
        super().__init__(operands=[input], result_types=[result_type], properties=props)


class _GlobalPoolOperation(_NCHWOperation, abc.ABC):
    """Reduce H and W of NCHW data to 1x1."""

    pattern_kind = pattern_kind_def(PatternKind.REDUCTION)

    def __init__(self, input: SSAValue, layout: str = "NCHW"):
        n, c, _, _, *block = _shape(input)
        result = _tensor(input.type.element_type, (n, c, 1, 1, *block))  # pyright: ignore
        super().__init__(operands=[input], result_types=[result], properties={"layout": StringAttr(layout)})

    def expected_shape(self) -> tuple[int, ...]:
        n, c, _, _ = self.nchw_shape()
        return self.blocked_shape((n, c, 1, 1))


@irdl_op_definition
class GlobalAvgPool2dOp(_GlobalPoolOperation):
    """Mean over H and W: [N, C, H, W] -> [N, C, 1, 1]."""

    name = "graph.global_avg_pool2d"


@irdl_op_definition
class GlobalMaxPool2dOp(_GlobalPoolOperation):
    """Maximum over H and W: [N, C, H, W] -> [N, C, 1, 1]."""

    name = "graph.global_max_pool2d"


# --------------------------------------------------------------------------------------
# Layout
# --------------------------------------------------------------------------------------


@irdl_op_definition
class ReshapeOp(GraphOperation):
    """Row-major reshape to the result type (same number of elements)."""

    name = "graph.reshape"
    pattern_kind = pattern_kind_def(PatternKind.INJECTIVE)

    input = operand_def(TensorType)
    result = result_def(TensorType)

    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"

    def __init__(self, input: SSAValue, shape: Sequence[int]):
        super().__init__(operands=[input], result_types=[_tensor(input.type.element_type, shape)])  # pyright: ignore

    def verify_shapes(self) -> None:
        a, b = _shape(self.input), _shape(self.result)
        if prod(a) != prod(b):
            raise self._fail(
                f"cannot reshape {list(a)} ({prod(a)} elements) to {list(b)} ({prod(b)} elements)"
            )


@irdl_op_definition
class LayoutTransformOp(GraphOperation):
    """The same tensor in another layout (`src_layout` to `dst_layout`, strings such as
    "NCHW", "NCHW16c", "OIHW16i16o"; rules in xweave.layout): pure data movement."""

    name = "graph.layout_transform"
    pattern_kind = pattern_kind_def(PatternKind.INJECTIVE)

    input = operand_def(TensorType)
    result = result_def(TensorType)
    src_layout = prop_def(StringAttr)
    dst_layout = prop_def(StringAttr)

    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"

    def __init__(self, input: SSAValue, src_layout: str, dst_layout: str):
        shape = transform_shape(_shape(input), src_layout, dst_layout)
        super().__init__(
            operands=[input],
            result_types=[_tensor(_element(input), shape)],
            properties={"src_layout": StringAttr(src_layout), "dst_layout": StringAttr(dst_layout)},
        )

    def verify_shapes(self) -> None:
        try:
            expected = transform_shape(_shape(self.input), self.src_layout.data, self.dst_layout.data)
        except ValueError as e:
            raise self._fail(str(e)) from None
        self._expect_result_shape(expected)


@irdl_op_definition
class TransposeOp(GraphOperation):
    """Permute dimensions: result.shape[i] = input.shape[perm[i]]."""

    name = "graph.transpose"
    pattern_kind = pattern_kind_def(PatternKind.INJECTIVE)

    input = operand_def(TensorType)
    result = result_def(TensorType)
    perm = prop_def(DenseArrayBase.constr(i64))

    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"

    def __init__(self, input: SSAValue, perm: Sequence[int]):
        shape = [_shape(input)[p] for p in perm]
        super().__init__(
            operands=[input],
            result_types=[_tensor(input.type.element_type, shape)],  # pyright: ignore
            properties={"perm": _i64_array(perm)},
        )

    def verify_shapes(self) -> None:
        a, perm = _shape(self.input), self.perm.get_values()
        if sorted(perm) != list(range(len(a))):
            raise self._fail(f"perm {list(perm)} is not a permutation of {len(a)} dimensions")
        self._expect_result_shape([a[p] for p in perm])


# --------------------------------------------------------------------------------------
# More elementwise ops: math, activations with parameters, logic, comparisons
# --------------------------------------------------------------------------------------


def _f64(value: float) -> FloatAttr:
    return FloatAttr(float(value), f64)


def _f64_prop():
    return prop_def(FloatAttr.constr(base(Float64Type)))


class _FloatUnaryOperation(UnaryOperation, abc.ABC):
    """A unary op on floats, with float parameters (properties) given as keywords."""

    def __init__(self, input: SSAValue, **params: float | str):
        props: dict[str, Attribute] = {
            k: StringAttr(v) if isinstance(v, str) else _f64(v) for k, v in params.items()
        }
        IRDLOperation.__init__(self, operands=[input], result_types=[input.type], properties=props)

    def verify_shapes(self) -> None:
        self._expect_element("input", self.input, "float")


@irdl_op_definition
class LogOp(_FloatUnaryOperation):
    """The natural logarithm."""

    name = "graph.log"


@irdl_op_definition
class ErfOp(_FloatUnaryOperation):
    """The error function."""

    name = "graph.erf"


@irdl_op_definition
class ReciprocalOp(_FloatUnaryOperation):
    """1 / x."""

    name = "graph.reciprocal"


@irdl_op_definition
class SoftplusOp(_FloatUnaryOperation):
    """log(1 + exp(x)), computed as max(x, 0) + log(1 + exp(-|x|)) (never overflows)."""

    name = "graph.softplus"


@irdl_op_definition
class SoftsignOp(_FloatUnaryOperation):
    """x / (1 + |x|)."""

    name = "graph.softsign"


@irdl_op_definition
class SignOp(_FloatUnaryOperation):
    """-1, 0 or 1 after the sign of x."""

    name = "graph.sign"


@irdl_op_definition
class FloorOp(_FloatUnaryOperation):
    """Round toward -inf."""

    name = "graph.floor"


@irdl_op_definition
class CeilOp(_FloatUnaryOperation):
    """Round toward +inf."""

    name = "graph.ceil"


@irdl_op_definition
class RoundOp(_FloatUnaryOperation):
    """Round half to even (ONNX Round)."""

    name = "graph.round"


@irdl_op_definition
class SinOp(_FloatUnaryOperation):
    """sin(x)."""

    name = "graph.sin"


@irdl_op_definition
class CosOp(_FloatUnaryOperation):
    """cos(x)."""

    name = "graph.cos"


@irdl_op_definition
class HardSwishOp(_FloatUnaryOperation):
    """x * max(0, min(1, x / 6 + 1/2))."""

    name = "graph.hard_swish"


@irdl_op_definition
class LeakyReluOp(_FloatUnaryOperation):
    """x if x >= 0 else alpha * x."""

    name = "graph.leaky_relu"

    alpha = _f64_prop()

    def __init__(self, input: SSAValue, alpha: float = 0.01):
        super().__init__(input, alpha=alpha)


@irdl_op_definition
class EluOp(_FloatUnaryOperation):
    """x if x > 0 else alpha * (exp(x) - 1)."""

    name = "graph.elu"

    alpha = _f64_prop()

    def __init__(self, input: SSAValue, alpha: float = 1.0):
        super().__init__(input, alpha=alpha)


@irdl_op_definition
class SeluOp(_FloatUnaryOperation):
    """gamma * (x if x > 0 else alpha * (exp(x) - 1))."""

    name = "graph.selu"

    alpha = _f64_prop()
    gamma = _f64_prop()

    def __init__(self, input: SSAValue, alpha: float = 1.67326319217681884765625,
                 gamma: float = 1.05070102214813232421875):
        super().__init__(input, alpha=alpha, gamma=gamma)


@irdl_op_definition
class HardSigmoidOp(_FloatUnaryOperation):
    """max(0, min(1, alpha * x + beta))."""

    name = "graph.hard_sigmoid"

    alpha = _f64_prop()
    beta = _f64_prop()

    def __init__(self, input: SSAValue, alpha: float = 0.2, beta: float = 0.5):
        super().__init__(input, alpha=alpha, beta=beta)


@irdl_op_definition
class ShrinkOp(_FloatUnaryOperation):
    """x - bias if x > lambd, x + bias if x < -lambd, else 0."""

    name = "graph.shrink"

    lambd = _f64_prop()
    bias = _f64_prop()

    def __init__(self, input: SSAValue, lambd: float = 0.5, bias: float = 0.0):
        super().__init__(input, lambd=lambd, bias=bias)


GELU_APPROXIMATIONS = ("none", "tanh")


@irdl_op_definition
class GeluOp(_FloatUnaryOperation):
    """x * Phi(x), Phi by erf (approximate = "none") or by tanh (approximate = "tanh")."""

    name = "graph.gelu"

    approximate = prop_def(StringAttr)

    def __init__(self, input: SSAValue, approximate: str = "none"):
        super().__init__(input, approximate=approximate)

    def verify_shapes(self) -> None:
        super().verify_shapes()
        if self.approximate.data not in GELU_APPROXIMATIONS:
            raise self._fail(
                f"approximate must be one of {list(GELU_APPROXIMATIONS)} but got "
                f"'{self.approximate.data}'"
            )


@irdl_op_definition
class PreluOp(BinaryOperation):
    """lhs if lhs >= 0 else rhs * lhs (rhs: the slope, broadcast to lhs)."""

    name = "graph.prelu"

    def verify_shapes(self) -> None:
        super().verify_shapes()
        if _shape(self.result) != _shape(self.lhs):
            raise self._fail(
                f"slope shape {list(_shape(self.rhs))} must broadcast to the input shape "
                f"{list(_shape(self.lhs))}"
            )


@irdl_op_definition
class NotOp(UnaryOperation):
    """Logical negation of i1 tensors."""

    name = "graph.not"

    def verify_shapes(self) -> None:
        self._expect_element("input", self.input, "bool")


class _LogicalOperation(BinaryOperation, abc.ABC):
    """Elementwise logic on i1 tensors, with broadcasting."""

    def verify_shapes(self) -> None:
        self._expect_element("lhs", self.lhs, "bool")
        super().verify_shapes()


@irdl_op_definition
class AndOp(_LogicalOperation):
    """lhs and rhs."""

    name = "graph.and"


@irdl_op_definition
class OrOp(_LogicalOperation):
    """lhs or rhs."""

    name = "graph.or"


@irdl_op_definition
class XorOp(_LogicalOperation):
    """lhs xor rhs."""

    name = "graph.xor"


class CompareOperation(BinaryOperation, abc.ABC):
    """Elementwise comparison with broadcasting: operands of one type, an i1 result."""

    def __init__(self, lhs: SSAValue, rhs: SSAValue, result_type: Attribute | None = None):
        if result_type is None:
            shape = broadcast_shape(_shape(lhs), _shape(rhs))
            assert shape is not None, f"{self.name}: operand shapes do not broadcast"
            result_type = _tensor(i1, shape)
        super().__init__(lhs, rhs, result_type)

    def verify_element_types(self) -> None:
        self._expect_one_element_type([self.lhs, self.rhs])
        self._expect_element("result", self.result, "bool")


@irdl_op_definition
class EqualOp(CompareOperation):
    """lhs == rhs."""

    name = "graph.equal"


@irdl_op_definition
class LessOp(CompareOperation):
    """lhs < rhs."""

    name = "graph.less"


@irdl_op_definition
class LessEqualOp(CompareOperation):
    """lhs <= rhs."""

    name = "graph.less_equal"


@irdl_op_definition
class GreaterOp(CompareOperation):
    """lhs > rhs."""

    name = "graph.greater"


@irdl_op_definition
class GreaterEqualOp(CompareOperation):
    """lhs >= rhs."""

    name = "graph.greater_equal"


@irdl_op_definition
class WhereOp(GraphOperation):
    """cond ? lhs : rhs elementwise, the three operands broadcast together."""

    name = "graph.where"
    pattern_kind = pattern_kind_def(PatternKind.BROADCAST)

    cond = operand_def(TensorType)
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)

    assembly_format = (
        "$cond `,` $lhs `,` $rhs attr-dict `:` functional-type(operands, results)"
    )

    def __init__(self, cond: SSAValue, lhs: SSAValue, rhs: SSAValue):
        shape = broadcast_shape(_shape(cond), _shape(lhs), _shape(rhs))
        assert shape is not None, "graph.where: operand shapes do not broadcast"
        super().__init__(
            operands=[cond, lhs, rhs], result_types=[_tensor(_element(lhs), shape)]
        )

    def verify_element_types(self) -> None:
        self._expect_element("cond", self.cond, "bool")
        self._expect_one_element_type([self.lhs, self.rhs, self.result])

    def verify_shapes(self) -> None:
        shapes = [_shape(v) for v in (self.cond, self.lhs, self.rhs)]
        expected = broadcast_shape(*shapes)
        if expected is None:
            raise self._fail(f"operand shapes {[list(s) for s in shapes]} are not broadcast-compatible")
        self._expect_result_shape(expected)


@irdl_op_definition
class CastOp(GraphOperation):
    """Elementwise conversion to the result's element type (floats truncate to ints,
    non-zero is true)."""

    name = "graph.cast"
    pattern_kind = pattern_kind_def(PatternKind.ELEMWISE)

    input = operand_def(TensorType)
    result = result_def(TensorType)

    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"

    def __init__(self, input: SSAValue, element_type: Attribute):
        super().__init__(operands=[input], result_types=[_tensor(element_type, _shape(input))])

    def verify_element_types(self) -> None:
        pass

    def verify_shapes(self) -> None:
        self._expect_result_shape(_shape(self.input))


# --------------------------------------------------------------------------------------
# Normalization, softmax, reductions
# --------------------------------------------------------------------------------------


def _check_axis(op: GraphOperation, axis: int, rank: int) -> None:
    if not 0 <= axis < rank:
        raise op._fail(f"axis {axis} is out of range for rank {rank}")


class _SoftmaxOperation(GraphOperation, abc.ABC):
    """Along one axis; the result type equals the operand type."""

    pattern_kind = pattern_kind_def(PatternKind.OUT_ELEMWISE_FUSABLE)

    T: ClassVar = VarConstraint("T", base(TensorType))
    input = operand_def(T)
    result = result_def(T)
    axis = prop_def(IntegerAttr.constr(type=base(IntegerType)))

    assembly_format = "$input attr-dict `:` type($result)"

    def __init__(self, input: SSAValue, axis: int):
        super().__init__(
            operands=[input], result_types=[input.type], properties={"axis": IntegerAttr(axis, i64)}
        )

    def verify_shapes(self) -> None:
        self._expect_element("input", self.input, "float")
        _check_axis(self, self.axis.value.data, len(_shape(self.input)))


@irdl_op_definition
class SoftmaxOp(_SoftmaxOperation):
    """exp(x - max) / sum(exp(x - max)) along `axis` (numerically stable)."""

    name = "graph.softmax"


@irdl_op_definition
class LogSoftmaxOp(_SoftmaxOperation):
    """x - max - log(sum(exp(x - max))) along `axis` (numerically stable)."""

    name = "graph.log_softmax"


REDUCE_KINDS = ("sum", "mean", "max", "min", "prod")


@irdl_op_definition
class ReduceOp(GraphOperation):
    """Reduce `axes` (sorted, non-negative) by `kind`; `keepdims` keeps them as 1s."""

    name = "graph.reduce"
    pattern_kind = pattern_kind_def(PatternKind.REDUCTION)

    input = operand_def(TensorType)
    result = result_def(TensorType)
    kind = prop_def(StringAttr)
    axes = prop_def(DenseArrayBase.constr(i64))
    keepdims = prop_def(IntegerAttr.constr(type=base(IntegerType)))

    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"

    def __init__(self, input: SSAValue, kind: str, axes: Sequence[int], keepdims: bool):
        axes = sorted(int(a) for a in axes)
        shape = reduce_output_shape(_shape(input), axes, keepdims)
        super().__init__(
            operands=[input],
            result_types=[_tensor(_element(input), shape)],
            properties={
                "kind": StringAttr(kind),
                "axes": _i64_array(axes),
                "keepdims": IntegerAttr(int(keepdims), i1),
            },
        )

    def verify_shapes(self) -> None:
        self._expect_element("input", self.input, "float")
        if self.kind.data not in REDUCE_KINDS:
            raise self._fail(f"kind must be one of {list(REDUCE_KINDS)} but got '{self.kind.data}'")
        rank, axes = len(_shape(self.input)), list(self.axes.get_values())
        if not axes:
            raise self._fail("expected at least one axis")
        if axes != sorted(set(axes)) or axes[0] < 0 or axes[-1] >= rank:
            raise self._fail(f"axes {axes} must be sorted, unique and within rank {rank}")
        keep = bool(self.keepdims.value.data)
        self._expect_result_shape(reduce_output_shape(_shape(self.input), axes, keep))


@irdl_op_definition
class BatchNormOp(GraphOperation):
    """Inference batch normalization over axis 1 (channels):
    (x - mean) / sqrt(variance + epsilon) * scale + bias, parameters of shape [C]."""

    name = "graph.batch_norm"
    pattern_kind = pattern_kind_def(PatternKind.BROADCAST)

    input = operand_def(TensorType)
    scale = operand_def(TensorType)
    bias = operand_def(TensorType)
    mean = operand_def(TensorType)
    variance = operand_def(TensorType)
    result = result_def(TensorType)
    epsilon = _f64_prop()

    assembly_format = (
        "$input `,` $scale `,` $bias `,` $mean `,` $variance attr-dict `:` "
        "functional-type(operands, results)"
    )

    def __init__(self, input, scale, bias, mean, variance, epsilon: float = 1e-5):
        super().__init__(
            operands=[input, scale, bias, mean, variance],
            result_types=[input.type],
            properties={"epsilon": _f64(epsilon)},
        )

    def verify_shapes(self) -> None:
        self._expect_element("input", self.input, "float")
        shape = _shape(self.input)
        if len(shape) < 2:
            raise self._fail(f"expected input of rank >= 2 but got {self.input.type}")
        for what in ("scale", "bias", "mean", "variance"):
            got = _shape(getattr(self, what))
            if got != (shape[1],):
                raise self._fail(f"expected {what} shape [{shape[1]}] but got {list(got)}")
        self._expect_result_shape(shape)


@irdl_op_definition
class LayerNormOp(GraphOperation):
    """Normalize over the dimensions from `axis` on (mean 0, variance 1, with epsilon),
    then * scale (+ bias); scale and bias broadcast against the input."""

    name = "graph.layer_norm"
    pattern_kind = pattern_kind_def(PatternKind.OUT_ELEMWISE_FUSABLE)

    input = operand_def(TensorType)
    scale = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    result = result_def(TensorType)
    axis = prop_def(IntegerAttr.constr(type=base(IntegerType)))
    epsilon = _f64_prop()

    assembly_format = (
        "$input `,` $scale (`,` $bias^)? attr-dict `:` functional-type(operands, results)"
    )

    def __init__(self, input, scale, bias=None, *, axis: int = -1, epsilon: float = 1e-5):
        super().__init__(
            operands=[input, scale, [] if bias is None else [bias]],
            result_types=[input.type],
            properties={"axis": IntegerAttr(axis, i64), "epsilon": _f64(epsilon)},
        )

    def verify_shapes(self) -> None:
        self._expect_element("input", self.input, "float")
        shape = _shape(self.input)
        _check_axis(self, self.axis.value.data, len(shape))
        for what in ("scale", "bias"):
            value = getattr(self, what)
            if value is not None and broadcast_shape(_shape(value), shape) != shape:
                raise self._fail(
                    f"{what} shape {list(_shape(value))} does not broadcast to {list(shape)}"
                )
        self._expect_result_shape(shape)


@irdl_op_definition
class LrnOp(GraphOperation):
    """Local response normalization across channels (axis 1), as ONNX LRN:
    x / (bias + alpha / size * sum of x^2 over `size` neighbouring channels) ^ beta."""

    name = "graph.lrn"
    pattern_kind = pattern_kind_def(PatternKind.OUT_ELEMWISE_FUSABLE)

    T: ClassVar = VarConstraint("T", base(TensorType))
    input = operand_def(T)
    result = result_def(T)
    size = prop_def(IntegerAttr.constr(type=base(IntegerType)))
    alpha = _f64_prop()
    beta = _f64_prop()
    bias = _f64_prop()

    assembly_format = "$input attr-dict `:` type($result)"

    def __init__(self, input: SSAValue, size: int, alpha: float = 1e-4, beta: float = 0.75,
                 bias: float = 1.0):
        super().__init__(
            operands=[input],
            result_types=[input.type],
            properties={"size": IntegerAttr(size, i64), "alpha": _f64(alpha),
                        "beta": _f64(beta), "bias": _f64(bias)},
        )

    def verify_shapes(self) -> None:
        self._expect_element("input", self.input, "float")
        if len(_shape(self.input)) < 2:
            raise self._fail(f"expected input of rank >= 2 but got {self.input.type}")
        if self.size.value.data < 1:
            raise self._fail(f"expected size >= 1 but got {self.size.value.data}")


@irdl_op_definition
class ConvTranspose2dOp(_WeightedOp):
    """2-D transposed convolution, NCHW data, weights [C, O/groups, KH, KW], bias [O]."""

    name = "graph.conv_transpose2d"
    pattern_kind = pattern_kind_def(PatternKind.OUT_ELEMWISE_FUSABLE)

    strides = prop_def(DenseArrayBase.constr(i64))
    pads = prop_def(DenseArrayBase.constr(i64))
    dilations = prop_def(DenseArrayBase.constr(i64))
    output_padding = prop_def(DenseArrayBase.constr(i64))
    groups = prop_def(IntegerAttr.constr(type=base(IntegerType)))

    def __init__(
        self,
        input: SSAValue,
        weight: SSAValue,
        bias: SSAValue | None = None,
        *,
        strides: Sequence[int] = (1, 1),
        pads: Sequence[int] = (0, 0, 0, 0),
        dilations: Sequence[int] = (1, 1),
        output_padding: Sequence[int] = (0, 0),
        groups: int = 1,
    ):
        shape = conv_transpose2d_output_shape(
            _shape(input), _shape(weight), strides, pads, dilations, output_padding, groups
        )
        super().__init__(
            operands=[input, weight, [] if bias is None else [bias]],
            result_types=[_tensor(_element(input), shape)],
            properties={
                "strides": _i64_array(strides),
                "pads": _i64_array(pads),
                "dilations": _i64_array(dilations),
                "output_padding": _i64_array(output_padding),
                "groups": IntegerAttr(groups, i64),
            },
        )

    def verify_shapes(self) -> None:
        self._expect_rank("input", self.input, 4)
        self._expect_rank("weight", self.weight, 4)
        strides, pads = self.strides.get_values(), self.pads.get_values()
        dilations, output_padding = self.dilations.get_values(), self.output_padding.get_values()
        groups = self.groups.value.data
        self._expect_len("strides", strides, 2, 1)
        self._expect_len("pads", pads, 4, 0)
        self._expect_len("dilations", dilations, 2, 1)
        self._expect_len("output_padding", output_padding, 2, 0)
        if groups < 1:
            raise self._fail(f"expected groups >= 1 but got {groups}")
        channels, weight_channels = _shape(self.input)[1], _shape(self.weight)[0]
        if channels != weight_channels:
            raise self._fail(f"input has {channels} channels but weight has {weight_channels}")
        if channels % groups:
            raise self._fail(f"{channels} input channels are not divisible by {groups} groups")
        out_channels = _shape(self.weight)[1] * groups
        if self.bias is not None and _shape(self.bias) != (out_channels,):
            raise self._fail(f"expected bias shape [{out_channels}] but got {list(_shape(self.bias))}")
        expected = conv_transpose2d_output_shape(
            _shape(self.input), _shape(self.weight), strides, pads, dilations, output_padding,
            groups,
        )
        if min(expected) < 1:
            raise self._fail(f"output shape would be {list(expected)}")
        self._expect_result_shape(expected)


# --------------------------------------------------------------------------------------
# Data movement
# --------------------------------------------------------------------------------------


class _ReshapeLikeOperation(GraphOperation, abc.ABC):
    """One input, one result whose shape follows from the properties."""

    pattern_kind = pattern_kind_def(PatternKind.INJECTIVE)

    input = operand_def(TensorType)
    result = result_def(TensorType)

    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"


@irdl_op_definition
class ConcatOp(GraphOperation):
    """Join tensors along `axis` (every other dimension equal)."""

    name = "graph.concat"
    pattern_kind = pattern_kind_def(PatternKind.INJECTIVE)

    inputs = var_operand_def(TensorType)
    result = result_def(TensorType)
    axis = prop_def(IntegerAttr.constr(type=base(IntegerType)))

    assembly_format = "$inputs attr-dict `:` functional-type($inputs, $result)"

    def __init__(self, inputs: Sequence[SSAValue], axis: int):
        shape = list(_shape(inputs[0]))
        shape[axis] = sum(_shape(v)[axis] for v in inputs)
        super().__init__(
            operands=[list(inputs)],
            result_types=[_tensor(_element(inputs[0]), shape)],
            properties={"axis": IntegerAttr(axis, i64)},
        )

    def verify_shapes(self) -> None:
        if not self.inputs:
            raise self._fail("expected at least one input")
        shapes = [_shape(v) for v in self.inputs]
        rank, axis = len(shapes[0]), self.axis.value.data
        _check_axis(self, axis, rank)
        for s in shapes:
            if len(s) != rank or any(a != b for d, (a, b) in enumerate(zip(s, shapes[0])) if d != axis):
                raise self._fail(
                    f"input shapes {[list(s) for s in shapes]} differ outside axis {axis}"
                )
        expected = list(shapes[0])
        expected[axis] = sum(s[axis] for s in shapes)
        self._expect_result_shape(expected)


@irdl_op_definition
class SliceOp(_ReshapeLikeOperation):
    """result[i] = input[starts + i * steps] in every dimension (steps may be negative);
    the result type gives the extents."""

    name = "graph.slice"

    starts = prop_def(DenseArrayBase.constr(i64))
    steps = prop_def(DenseArrayBase.constr(i64))

    def __init__(self, input: SSAValue, starts: Sequence[int], steps: Sequence[int],
                 sizes: Sequence[int]):
        super().__init__(
            operands=[input],
            result_types=[_tensor(_element(input), sizes)],
            properties={"starts": _i64_array(starts), "steps": _i64_array(steps)},
        )

    def verify_shapes(self) -> None:
        shape, sizes = _shape(self.input), _shape(self.result)
        starts, steps = self.starts.get_values(), self.steps.get_values()
        if not len(starts) == len(steps) == len(sizes) == len(shape):
            raise self._fail(
                f"expected {len(shape)} starts, steps and result dimensions but got "
                f"{list(starts)}, {list(steps)} and {list(sizes)}"
            )
        for d, (extent, start, step, size) in enumerate(zip(shape, starts, steps, sizes)):
            if step == 0:
                raise self._fail(f"step of dimension {d} is 0")
            last = start + (size - 1) * step
            if size > 0 and not (0 <= start < extent and 0 <= last < extent):
                raise self._fail(
                    f"dimension {d}: {size} elements from {start} by {step} leave [0, {extent})"
                )


PAD_MODES = ("constant", "reflect", "edge")


@irdl_op_definition
class PadOp(_ReshapeLikeOperation):
    """Pad every dimension by pads [begin..., end...] (non-negative): with `value`
    (mode constant), mirrored without the edge (reflect) or repeating the edge (edge)."""

    name = "graph.pad"

    pads = prop_def(DenseArrayBase.constr(i64))
    mode = prop_def(StringAttr)
    value = _f64_prop()

    def __init__(self, input: SSAValue, pads: Sequence[int], mode: str = "constant",
                 value: float = 0.0):
        shape = _shape(input)
        rank = len(shape)
        out = [e + pads[d] + pads[d + rank] for d, e in enumerate(shape)]
        super().__init__(
            operands=[input],
            result_types=[_tensor(_element(input), out)],
            properties={"pads": _i64_array(pads), "mode": StringAttr(mode), "value": _f64(value)},
        )

    def verify_shapes(self) -> None:
        shape = _shape(self.input)
        rank, pads = len(shape), self.pads.get_values()
        self._expect_len("pads", pads, 2 * rank, 0)
        mode = self.mode.data
        if mode not in PAD_MODES:
            raise self._fail(f"mode must be one of {list(PAD_MODES)} but got '{mode}'")
        if mode == "reflect":
            for d, e in enumerate(shape):
                if max(pads[d], pads[d + rank]) >= e:
                    raise self._fail(
                        f"reflect pads {list(pads)} must be smaller than the dimensions {list(shape)}"
                    )
        self._expect_result_shape([e + pads[d] + pads[d + rank] for d, e in enumerate(shape)])


@irdl_op_definition
class TileOp(_ReshapeLikeOperation):
    """Repeat the input `repeats[d]` times along every dimension d."""

    name = "graph.tile"

    repeats = prop_def(DenseArrayBase.constr(i64))

    def __init__(self, input: SSAValue, repeats: Sequence[int]):
        shape = [e * r for e, r in zip(_shape(input), repeats)]
        super().__init__(
            operands=[input],
            result_types=[_tensor(_element(input), shape)],
            properties={"repeats": _i64_array(repeats)},
        )

    def verify_shapes(self) -> None:
        shape = _shape(self.input)
        repeats = self.repeats.get_values()
        self._expect_len("repeats", repeats, len(shape), 1)
        self._expect_result_shape([e * r for e, r in zip(shape, repeats)])


@irdl_op_definition
class BroadcastToOp(_ReshapeLikeOperation):
    """numpy.broadcast_to the result type's shape."""

    name = "graph.broadcast_to"
    pattern_kind = pattern_kind_def(PatternKind.BROADCAST)

    def __init__(self, input: SSAValue, shape: Sequence[int]):
        super().__init__(operands=[input], result_types=[_tensor(_element(input), shape)])

    def verify_shapes(self) -> None:
        a, b = _shape(self.input), _shape(self.result)
        if broadcast_shape(a, b) != b:
            raise self._fail(f"cannot broadcast {list(a)} to {list(b)}")


@irdl_op_definition
class GatherOp(GraphOperation):
    """numpy.take(input, indices, axis): indices (integers) may be negative, counting
    from the end; out-of-range indices are clamped."""

    name = "graph.gather"
    pattern_kind = pattern_kind_def(PatternKind.INJECTIVE)

    input = operand_def(TensorType)
    indices = operand_def(TensorType)
    result = result_def(TensorType)
    axis = prop_def(IntegerAttr.constr(type=base(IntegerType)))

    assembly_format = "$input `,` $indices attr-dict `:` functional-type(operands, results)"

    def __init__(self, input: SSAValue, indices: SSAValue, axis: int):
        shape = gather_output_shape(_shape(input), _shape(indices), axis)
        super().__init__(
            operands=[input, indices],
            result_types=[_tensor(_element(input), shape)],
            properties={"axis": IntegerAttr(axis, i64)},
        )

    def verify_element_types(self) -> None:
        self._expect_one_element_type([self.input, self.result])
        self._expect_element("indices", self.indices, "integer")

    def verify_shapes(self) -> None:
        shape, axis = _shape(self.input), self.axis.value.data
        _check_axis(self, axis, len(shape))
        self._expect_result_shape(gather_output_shape(shape, _shape(self.indices), axis))


# --------------------------------------------------------------------------------------
# Fused groups (made by the graph-fuse pass)
# --------------------------------------------------------------------------------------


class _FusedPatternKind(property):
    """OPAQUE on the class; on an instance, the kind of the group's master op (the
    hardest to fuse), which is what decides how the group may grow further."""

    def __init__(self):
        super().__init__(lambda op: op.master_kind())

    def __get__(self, obj: object, objtype: type | None = None) -> PatternKind:  # pyright: ignore
        return PatternKind.OPAQUE if obj is None else obj.master_kind()  # pyright: ignore


@irdl_op_definition
class FusedOp(IRDLOperation):
    """A group of graph ops fused into one kernel (see the `graph-fuse` pass).

    The single-block region's arguments stand for the operands, so the body reads
    nothing from above; `graph.yield` gives the results. Constants stay outside:

    ```mlir
    %y = graph.fused (%a = %x, %b = %w) : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>)
         -> tensor<1x4x8x8xf32> {
      %c = graph.conv2d %a, %b {...} : (...) -> tensor<1x4x8x8xf32>
      %r = graph.relu %c : tensor<1x4x8x8xf32>
      graph.yield %r : tensor<1x4x8x8xf32>
    }
    ```
    """

    name = "graph.fused"
    pattern_kind = _FusedPatternKind()  # pyright: ignore[reportAssignmentType]

    inputs = var_operand_def(TensorType)
    outputs = var_result_def(TensorType)
    body = region_def("single_block")

    traits = traits_def(IsolatedFromAbove(), RecursiveMemoryEffect())

    def __init__(self, inputs: Sequence[SSAValue], result_types: Sequence[Attribute], body: Region):
        super().__init__(operands=[inputs], result_types=[result_types], regions=[body])

    def master_kind(self) -> PatternKind:
        """The largest pattern kind of the ops inside."""
        kinds = [op.pattern_kind for op in self.body.block.ops if not isinstance(op, YieldOp)]
        return max(kinds, default=PatternKind.OPAQUE)

    def verify_(self) -> None:
        block = self.body.block
        args = [a.type for a in block.args]
        operands = [o.type for o in self.inputs]
        if args != operands:
            raise VerifyException(
                f"graph.fused: block argument types ({', '.join(map(str, args))}) must equal "
                f"the operand types ({', '.join(map(str, operands))})"
            )
        terminator = block.last_op
        if not isinstance(terminator, YieldOp):
            raise VerifyException("graph.fused: the body must end in graph.yield")
        yielded = [v.type for v in terminator.values]
        results = [r.type for r in self.outputs]
        if yielded != results:
            raise VerifyException(
                f"graph.fused: yielded types ({', '.join(map(str, yielded))}) must equal "
                f"the result types ({', '.join(map(str, results))})"
            )
        if not results:
            raise VerifyException("graph.fused: expected at least one result")
        for value in terminator.values:
            if value.owner is block:
                raise VerifyException(
                    "graph.fused: a yielded value must be computed inside the group, "
                    "not be one of its arguments"
                )
        for op in block.ops:
            if isinstance(op, YieldOp):
                continue
            if isinstance(op, FusedOp):
                raise VerifyException("graph.fused: groups cannot be nested")
            if isinstance(op, ConstantOp):
                raise VerifyException(
                    "graph.fused: graph.constant must stay outside the group (pass it as an operand)"
                )
            if not isinstance(op, GraphOperation):
                raise VerifyException(f"graph.fused: only graph ops may be fused, found {op.name}")

    def print(self, printer: Printer):
        printer.print_string(" (")
        printer.print_list(
            zip(self.body.block.args, self.inputs, strict=True),
            lambda pair: (
                printer.print_ssa_value(pair[0]),
                printer.print_string(" = "),
                printer.print_ssa_value(pair[1]),
            ),
        )
        printer.print_string(") : ")
        printer.print_operation_type(self)
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=False)
        if self.attributes:
            printer.print_op_attributes(self.attributes, print_keyword=True)

    @classmethod
    def parse(cls, parser: Parser) -> FusedOp:
        def assignment():
            arg = parser.parse_argument(expect_type=False)
            parser.parse_punctuation("=")
            return arg, parser.parse_unresolved_operand()

        pairs = parser.parse_comma_separated_list(parser.Delimiter.PAREN, assignment)
        parser.parse_punctuation(":")
        start = parser.pos
        function_type = parser.parse_function_type()
        types = function_type.inputs.data
        if len(pairs) != len(types):
            parser.raise_error(
                f"graph.fused binds {len(pairs)} arguments but its type lists {len(types)} operands",
                start,
                parser.pos,
            )
        args = [arg.resolve(t) for (arg, _), t in zip(pairs, types)]
        operands = [parser.resolve_operand(o, t) for (_, o), t in zip(pairs, types)]
        body = parser.parse_region(args)
        op = cls(operands, function_type.outputs.data, body)
        attrs = parser.parse_optional_attr_dict_with_keyword()
        if attrs is not None:
            op.attributes |= attrs.data
        return op


@irdl_op_definition
class YieldOp(IRDLOperation):
    """The results of a `graph.fused` group."""

    name = "graph.yield"
    pattern_kind = pattern_kind_def(PatternKind.OPAQUE)

    values = var_operand_def(TensorType)

    traits = traits_def(IsTerminator(), HasParent(FusedOp), Pure())
    assembly_format = "attr-dict ($values^ `:` type($values))?"

    def __init__(self, *values: SSAValue):
        super().__init__(operands=[values])



# --------------------------------------------------------------------------------------
# Winograd convolution (made by `graph-winograd`)
# --------------------------------------------------------------------------------------


MAX_TILE = 4
"""Larger Winograd tiles need the points +-1/2 and lose fp32 accuracy fast."""


def winograd_tiles(height: int, width: int, tile: int) -> tuple[int, int]:
    """Output tiles of `tile` x `tile` pixels covering a height x width output."""
    return -(-height // tile), -(-width // tile)


def _data_blocks(shape: Sequence[int]) -> tuple[int, int, int, int, int]:
    """(N, C/blk, H, W, blk) of NCHW (blk 1) or NCHW<blk>c data."""
    if len(shape) == 4:
        n, c, h, w = shape
        return n, c, h, w, 1
    n, cb, h, w, blk = shape
    return n, cb, h, w, blk


@irdl_op_definition
class WinogradInputTransformOp(GraphOperation):
    """Winograd F(m x m, 3x3) input transform: B^T d B of each (a x a) tile d of the
    zero-padded data (a = m + 2, tiles m apart; B^T from `xweave.winograd`), point
    (u, v) at index u * a + v.

    data [N][C][H][W] or [N][C/c][H][W][c] -> [a*a][P][C/c][c] (c = 1 for NCHW),
    P = N * ceil(OH/m) * ceil(OW/m) tiles of the 3x3 convolution's OH x OW output.
    """

    name = "graph.winograd_input_transform"
    # each input pixel is read by up to 36 tiles' points: a producer fused into it
    # would be recomputed as often
    pattern_kind = pattern_kind_def(PatternKind.OPAQUE)

    input = operand_def(TensorType)
    result = result_def(TensorType)
    tile = prop_def(IntegerAttr.constr(type=base(IntegerType)))
    pads = prop_def(DenseArrayBase.constr(i64))

    assembly_format = "$input attr-dict `:` functional-type(operands, results)"

    def __init__(self, input: SSAValue, tile: int, pads: Sequence[int]):
        n, cb, h, w, blk = _data_blocks(_shape(input))
        th, tw = winograd_tiles(h + pads[0] + pads[2] - 2, w + pads[1] + pads[3] - 2, tile)
        a = tile + 2
        super().__init__(
            operands=[input],
            result_types=[_tensor(_element(input), (a * a, n * th * tw, cb, blk))],
            properties={"tile": IntegerAttr(tile, i64), "pads": _i64_array(pads)},
        )

    def verify_shapes(self) -> None:
        tile, pads = self.tile.value.data, self.pads.get_values()
        if not 1 <= tile <= MAX_TILE:
            raise self._fail(f"expected tile 1 to {MAX_TILE} but got {tile}")
        self._expect_len("pads", pads, 4, 0)
        shape = _shape(self.input)
        if len(shape) not in (4, 5):
            raise self._fail(f"expected input of rank 4 or 5 but got {self.input.type}")
        n, cb, h, w, blk = _data_blocks(shape)
        oh, ow = h + pads[0] + pads[2] - 2, w + pads[1] + pads[3] - 2
        if min(oh, ow) < 1:
            raise self._fail(f"a 3x3 window does not fit the padded {h}x{w} input")
        a = tile + 2
        th, tw = winograd_tiles(oh, ow, tile)
        self._expect_result_shape((a * a, n * th * tw, cb, blk))


@irdl_op_definition
class WinogradMatmulOp(GraphOperation):
    """The Winograd domain products: for each of the a*a points b,
    out[b][p][k] = sum over channels (cb, c) of input[b][p][cb][c] * weight[b][cb][c][k]."""

    name = "graph.winograd_matmul"
    pattern_kind = pattern_kind_def(PatternKind.OUT_ELEMWISE_FUSABLE)

    input = operand_def(TensorType)
    weight = operand_def(TensorType)
    result = result_def(TensorType)

    assembly_format = "$input `,` $weight attr-dict `:` functional-type(operands, results)"

    def __init__(self, input: SSAValue, weight: SSAValue):
        points, tiles, _, _ = _shape(input)
        super().__init__(operands=[input, weight],
                         result_types=[_tensor(_element(input), (points, tiles, _shape(weight)[3]))])

    def verify_shapes(self) -> None:
        self._expect_rank("input", self.input, 4)
        self._expect_rank("weight", self.weight, 4)
        (points, tiles, cb, blk), (wpoints, wcb, wblk, k) = _shape(self.input), _shape(self.weight)
        if (wpoints, wcb, wblk) != (points, cb, blk):
            raise self._fail(f"weight {list(_shape(self.weight))} does not match input "
                             f"{list(_shape(self.input))} (expected [{points}, {cb}, {blk}, K])")
        self._expect_result_shape((points, tiles, k))


@irdl_op_definition
class WinogradOutputTransformOp(GraphOperation):
    """Winograd F(m x m, 3x3) output transform: input [a*a][P][K] (a = m + 2), each
    tile's a x a points M give its m x m output pixels A^T M A (A^T from
    `xweave.winograd`); the result, NCHW [N][K][OH][OW] or NCHW<k>c [N][K/k][OH][OW][k],
    keeps the pixels inside OH x OW (tiles are numbered n, row, column)."""

    name = "graph.winograd_output_transform"
    pattern_kind = pattern_kind_def(PatternKind.OUT_ELEMWISE_FUSABLE)

    input = operand_def(TensorType)
    result = result_def(TensorType)
    tile = prop_def(IntegerAttr.constr(type=base(IntegerType)))

    assembly_format = "$input attr-dict `:` functional-type(operands, results)"

    def __init__(self, input: SSAValue, tile: int, result_type: Attribute):
        super().__init__(operands=[input], result_types=[result_type],
                         properties={"tile": IntegerAttr(tile, i64)})

    def verify_shapes(self) -> None:
        tile = self.tile.value.data
        if not 1 <= tile <= MAX_TILE:
            raise self._fail(f"expected tile 1 to {MAX_TILE} but got {tile}")
        self._expect_rank("input", self.input, 3)
        a = tile + 2
        out = _shape(self.result)
        if len(out) not in (4, 5):
            raise self._fail(f"expected a result of rank 4 or 5 but got {self.result.type}")
        n, kb, oh, ow, blk = _data_blocks(out)
        th, tw = winograd_tiles(oh, ow, tile)
        expected = (a * a, n * th * tw, kb * blk)
        if _shape(self.input) != expected:
            raise self._fail(f"expected input shape {list(expected)} for result "
                             f"{list(out)} but got {list(_shape(self.input))}")


Graph = Dialect(
    "graph",
    [
        ConstantOp,
        Conv2dOp,
        Conv2dNchwcOp,
        LayoutTransformOp,
        DenseOp,
        MatmulOp,
        AddOp,
        SubOp,
        MulOp,
        DivOp,
        MaxOp,
        MinOp,
        PowOp,
        ReluOp,
        SigmoidOp,
        TanhOp,
        ExpOp,
        NegOp,
        SqrtOp,
        AbsOp,
        ClipOp,
        MaxPool2dOp,
        AvgPool2dOp,
        GlobalAvgPool2dOp,
        GlobalMaxPool2dOp,
        ReshapeOp,
        TransposeOp,
        LogOp,
        ErfOp,
        ReciprocalOp,
        SoftplusOp,
        SoftsignOp,
        SignOp,
        FloorOp,
        CeilOp,
        RoundOp,
        SinOp,
        CosOp,
        HardSwishOp,
        LeakyReluOp,
        EluOp,
        SeluOp,
        HardSigmoidOp,
        ShrinkOp,
        GeluOp,
        PreluOp,
        NotOp,
        AndOp,
        OrOp,
        XorOp,
        EqualOp,
        LessOp,
        LessEqualOp,
        GreaterOp,
        GreaterEqualOp,
        WhereOp,
        CastOp,
        SoftmaxOp,
        LogSoftmaxOp,
        ReduceOp,
        BatchNormOp,
        LayerNormOp,
        LrnOp,
        ConvTranspose2dOp,
        ConcatOp,
        SliceOp,
        PadOp,
        TileOp,
        BroadcastToOp,
        GatherOp,
        FusedOp,
        YieldOp,
        WinogradInputTransformOp,
        WinogradMatmulOp,
        WinogradOutputTransformOp,
    ],
    [],
)
