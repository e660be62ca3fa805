"""Tensor types of graph values: their shapes and element types."""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Attribute, SSAValue


def shape_of(value: SSAValue | Attribute) -> tuple[int, ...]:
    """The shape of a tensor value (or of a tensor type)."""
    typ = value.type if isinstance(value, SSAValue) else value
    assert isinstance(typ, TensorType)
    return typ.get_shape()


def element_type_of(value: SSAValue) -> Attribute:
    """The element type of a tensor value."""
    typ = value.type
    assert isinstance(typ, TensorType)
    return typ.element_type


def tensor_type(element_type: Attribute, shape: Sequence[int]) -> TensorType:
    """`tensor<shape x element_type>`."""
    return TensorType(element_type, [int(d) for d in shape])
