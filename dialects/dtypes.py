"""Element types <-> numpy dtypes: the one mapping every layer uses.

* floats: `f16`, `f32`, `f64` <-> `float16`, `float32`, `float64` (bf16 and the other
  float types have no numpy dtype);
* integers of 8, 16, 32 and 64 bits: signless and signed `iN` <-> `intN` (MLIR's
  arithmetic reads signless integers as two's complement), unsigned `uiN` <-> `uintN`;
* `i1` <-> `bool` (a truth value, whatever its signedness);
* `index` -> `int64` (what the interpreters and the parameter storage hold it in; the
  inverse of `int64` is `i64`).
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects.builtin import (
    Float16Type,
    Float32Type,
    Float64Type,
    IndexType,
    IntegerType,
    Signedness,
    f16,
    f32,
    f64,
    i1,
)
from xdsl.ir import Attribute

_FLOATS: dict[type, np.dtype] = {
    Float16Type: np.dtype(np.float16),
    Float32Type: np.dtype(np.float32),
    Float64Type: np.dtype(np.float64),
}
_INTEGER_WIDTHS = (8, 16, 32, 64)


class DtypeError(ValueError):
    """An element type without a numpy dtype, or a dtype without an element type."""


def numpy_dtype(element_type: Attribute) -> np.dtype:
    """The numpy dtype holding values of a builtin element type (or `index`)."""
    if type(element_type) in _FLOATS:
        return _FLOATS[type(element_type)]
    if isinstance(element_type, IndexType):
        return np.dtype(np.int64)
    if isinstance(element_type, IntegerType):
        width = element_type.width.data
        if width == 1:
            return np.dtype(np.bool_)
        if width in _INTEGER_WIDTHS:
            unsigned = element_type.signedness.data == Signedness.UNSIGNED
            return np.dtype(f"{'u' if unsigned else 'i'}{width // 8}")
    raise DtypeError(f"no numpy dtype for element type {element_type}")


def element_type(dtype: np.dtype | type | str) -> Attribute:
    """The builtin element type of a numpy dtype (ints are signless, uints unsigned)."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return i1
    if dtype.kind == "f" and dtype.itemsize in (2, 4, 8):
        return {2: f16, 4: f32, 8: f64}[dtype.itemsize]
    if dtype.kind in "iu" and dtype.itemsize * 8 in _INTEGER_WIDTHS:
        signedness = Signedness.UNSIGNED if dtype.kind == "u" else Signedness.SIGNLESS
        return IntegerType(dtype.itemsize * 8, signedness)
    raise DtypeError(f"no element type for numpy dtype {dtype}")


def dtype_name(element_type: Attribute) -> str:
    """The numpy name of an element type's dtype: `float32`, `uint8`, `bool`, ..."""
    return numpy_dtype(element_type).name


def value_type(element: Attribute) -> Attribute:
    """The type of a scalar value read from a tensor or buffer of `element`.

    Unsigned integers (`ui8`) are storage types: the values read from them are signless
    integers of the same width (`i8`), as `arith` computes on signless integers only;
    the ops that care tell unsigned from signed (`arith.extui`, `cmpi ult`, `maxui`).
    Every other element type is its own value type.
    """
    if isinstance(element, IntegerType) and element.signedness.data != Signedness.SIGNLESS:
        return IntegerType(element.width.data)
    return element


def is_unsigned(element: Attribute) -> bool:
    """Whether `element` is an unsigned integer type (`ui8`, ...)."""
    return isinstance(element, IntegerType) and element.signedness.data == Signedness.UNSIGNED


def integer_range(element: Attribute) -> tuple[int, int]:
    """The least and greatest value of an integer type (signless ones read as signed):
    (-128, 127) for `i8`, (0, 255) for `ui8`."""
    assert isinstance(element, IntegerType)
    width = element.width.data
    if is_unsigned(element):
        return 0, (1 << width) - 1
    return -(1 << (width - 1)), (1 << (width - 1)) - 1


def narrowest(values: np.ndarray) -> np.ndarray:
    """Integer `values` in the narrowest of int8, int16 and int32 that holds them."""
    for dtype in (np.int8, np.int16):
        info = np.iinfo(dtype)
        if values.size == 0 or (values.min() >= info.min and values.max() <= info.max):
            return values.astype(dtype)
    return values.astype(np.int64).astype(np.int32)
