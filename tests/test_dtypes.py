"""The one mapping between element types and numpy dtypes."""

import numpy as np
import pytest
from xdsl.dialects.builtin import (
    BFloat16Type,
    IndexType,
    IntegerType,
    Signedness,
    TensorType,
    f16,
    f32,
    f64,
    i1,
    i8,
    i32,
    i64,
)

from xweave.dialects.dtypes import DtypeError, dtype_name, element_type, numpy_dtype

ROUND_TRIP = [
    (f16, np.float16), (f32, np.float32), (f64, np.float64), (i1, np.bool_),
    (i8, np.int8), (IntegerType(16), np.int16), (i32, np.int32), (i64, np.int64),
    (IntegerType(8, Signedness.UNSIGNED), np.uint8),
    (IntegerType(16, Signedness.UNSIGNED), np.uint16),
    (IntegerType(32, Signedness.UNSIGNED), np.uint32),
    (IntegerType(64, Signedness.UNSIGNED), np.uint64),
]


@pytest.mark.parametrize("element, dtype", ROUND_TRIP, ids=[str(e) for e, _ in ROUND_TRIP])
def test_element_types_and_dtypes_round_trip(element, dtype):
    assert numpy_dtype(element) == np.dtype(dtype)
    assert element_type(dtype) == element
    assert dtype_name(element) == np.dtype(dtype).name


def test_signed_integers_are_the_signless_ones_and_unsigned_stay_unsigned():
    assert numpy_dtype(IntegerType(32, Signedness.SIGNED)) == np.int32
    assert numpy_dtype(IntegerType(8, Signedness.UNSIGNED)) == np.uint8
    # Values past the signed range keep their value through the unsigned dtype.
    assert np.asarray([200], numpy_dtype(IntegerType(8, Signedness.UNSIGNED)))[0] == 200
    assert element_type(np.uint8) != element_type(np.int8)


def test_index_is_held_in_int64():
    assert numpy_dtype(IndexType()) == np.int64
    assert element_type(np.int64) == i64


@pytest.mark.parametrize("element", [BFloat16Type(), IntegerType(4), IntegerType(128),
                                     TensorType(f32, [2])], ids=str)
def test_types_without_a_dtype_are_errors(element):
    with pytest.raises(DtypeError, match="no numpy dtype"):
        numpy_dtype(element)


@pytest.mark.parametrize("dtype", [np.complex64, np.float128 if hasattr(np, "float128") else "V8",
                                   "U3"], ids=str)
def test_dtypes_without_an_element_type_are_errors(dtype):
    with pytest.raises(DtypeError, match="no element type"):
        element_type(dtype)


def test_the_te_stage_reads_ui8_as_uint8_and_refuses_wider_unsigned_integers():
    from xweave.errors import XweaveError
    from xweave.lowering.graph_to_te import _dtype

    assert _dtype(TensorType(f16, [2])) == "float16"
    assert _dtype(TensorType(i1, [2])) == "bool"
    assert _dtype(TensorType(IntegerType(8, Signedness.UNSIGNED), [2])) == "uint8"
    with pytest.raises(XweaveError, match="unsupported element type ui16"):
        _dtype(TensorType(IntegerType(16, Signedness.UNSIGNED), [2]))
