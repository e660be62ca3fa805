"""`graph.constant` and the weight blob store behind its `dense_resource` values."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from math import prod
from typing import ClassVar

import numpy as np
from xdsl.dialects.builtin import (
    BytesAttr,
    DenseIntOrFPElementsAttr,
    DenseResourceAttr,
    TensorType,
)
from xdsl.interfaces import HasFolderInterface
from xdsl.ir import Attribute
from xdsl.irdl import (
    ParamAttrConstraint,
    VarConstraint,
    base,
    irdl_op_definition,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.traits import ConstantLike, Pure
from xdsl.utils.exceptions import VerifyException

from xweave.dialects.dtypes import element_type, numpy_dtype
from xweave.dialects.graph.base import GraphOperation, PatternKind, pattern_kind_def
from xweave.dialects.graph.resources import ELIDED, resource_data, resource_store
from xweave.dialects.graph.tensors import tensor_type

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
        typ = tensor_type(element_type(array.dtype), array.shape)
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
