"""Python values of builtin attributes (`dialects.attributes.python_value`)."""

from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    FloatAttr,
    IntegerAttr,
    StringAttr,
    TypeAttribute,
    UnitAttr,
    f32,
    i64,
)

from xweave.dialects.attributes import python_value


def test_builtin_attributes_become_python_values():
    assert python_value(IntegerAttr(7, i64)) == 7 and type(python_value(IntegerAttr(7, i64))) is int
    assert python_value(FloatAttr(0.5, f32)) == 0.5
    assert python_value(StringAttr("relu")) == "relu"
    assert python_value(UnitAttr()) is True
    assert python_value(DenseArrayBase.from_list(i64, [1, 2, 3])) == (1, 2, 3)
    nested = ArrayAttr([IntegerAttr(1, i64), ArrayAttr([StringAttr("a"), UnitAttr()])])
    assert python_value(nested) == (1, ("a", True))


def test_other_attributes_stay_as_they_are():
    assert python_value(f32) is f32 and isinstance(python_value(f32), TypeAttribute)
