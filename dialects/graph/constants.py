"""`graph.constant`: a constant tensor, inline or a `dense_resource` weight blob."""

from __future__ import annotations

import hashlib
import re
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
from xdsl.ir import Attribute, SSAValue
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
from xweave.dialects.resources import (
    Blob,
    attach,
    blob_of,
    resource_array,
    resource_store,
)
from xweave.dialects.graph.tensors import tensor_type

INLINE_LIMIT = 16
"""Constants with at most this many elements are printed inline as `dense<...>`."""


def _resource_handle(name: str, array: np.ndarray) -> str:
    """A valid, process-unique handle: sanitized name + short content hash."""
    safe = re.sub(r"[^A-Za-z0-9_]", "_", name) or "const"
    if not (safe[0].isalpha() or safe[0] == "_"):
        safe = "c_" + safe
    digest = hashlib.blake2b(digest_size=4)
    digest.update(f"{array.dtype.str}{array.shape}".encode())
    digest.update(memoryview(array).cast("B"))
    return f"{safe}_{digest.hexdigest()}"


def constant_operand(value: SSAValue | None) -> np.ndarray | None:
    """`constant_value` of the op defining `value` if it is a `graph.constant`, else None
    (also for an absent operand)."""
    if value is not None and isinstance(value.owner, ConstantOp):
        return constant_value(value.owner)
    return None


def constant_value(op: ConstantOp) -> np.ndarray:
    """The value of a `graph.constant` as a read-only numpy array of its type (a view of
    the weights, no copy)."""
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
    try:
        return resource_array(value, dtype, shape)
    except ValueError as e:
        raise VerifyException(f"graph.constant: {e}") from None


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
        key, blob = resource_store().register(_resource_handle(name, array), Blob.of_array(array))
        return ConstantOp(attach(DenseResourceAttr.from_params(key, typ), blob))

    def fold(self) -> tuple[Attribute, ...]:
        return (self.value,)

    def verify_shapes(self) -> None:
        # Only the blob's size is checked: verifying costs the same for 1 KB and 100 MB.
        if isinstance(self.value, DenseResourceAttr):
            key = self.value.resource_handle.data
            blob = blob_of(self.value)
            if blob is None:
                raise self._fail(f"no data for dense_resource<{key}>")
            if blob.elided:
                return  # printed without its data: valid, but it cannot be evaluated
            typ = self.result.type
            assert isinstance(typ, TensorType)
            nbytes = prod(typ.get_shape()) * numpy_dtype(typ.element_type).itemsize
            if blob.nbytes != nbytes:
                raise self._fail(
                    f"dense_resource<{key}> holds {blob.nbytes} bytes but {typ} needs {nbytes}"
                )
