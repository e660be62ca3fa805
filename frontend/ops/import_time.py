"""ONNX operators evaluated only at import time: constants and the shapes of tensors.

Constant, Shape and Size are always evaluated (input shapes are static). ConstantOfShape
is evaluated here when its shape is known (common in the weights of exported models),
faster than ONNX's reference implementation; on a run-time shape it is unsupported.
"""

from __future__ import annotations

from math import prod

import numpy as np
import onnx
from onnx import numpy_helper

from xweave.errors import ModelError
from xweave.frontend.importer import Importer
from xweave.frontend.onnx_checks import check_size
from xweave.frontend.registry import OnnxOp, register


def evaluate_constant(imp: Importer, node: onnx.NodeProto, attrs: dict) -> list:
    """The value of a Constant node, whichever of its attributes holds it."""
    a = node.attribute[0]
    value = onnx.helper.get_attribute_value(a)
    if a.name in ("value", "sparse_value"):
        if a.name == "sparse_value":
            raise ModelError(f"Constant '{node.name}': sparse constants are not supported")
        return [numpy_helper.to_array(value)]
    dtypes = {"value_float": np.float32, "value_floats": np.float32, "value_int": np.int64}
    return [np.asarray(value, dtype=dtypes.get(a.name, np.int64 if "int" in a.name else None))]


def evaluate_shape(imp: Importer, node: onnx.NodeProto, attrs: dict) -> list:
    """Shape (with its start/end attributes) or Size of a tensor."""
    shape = imp.shape(node.input[0])
    if node.op_type == "Size":
        return [np.array(prod(shape), np.int64)]
    start, end = attrs.get("start", 0), attrs.get("end", len(shape))
    return [np.array(shape[start:end] if "end" in attrs else shape[start:], np.int64)]


def evaluate_constant_of_shape(imp: Importer, node: onnx.NodeProto, attrs: dict) -> list:
    """A tensor of the given (known) shape filled with the `value` attribute (0.0)."""
    value = attrs.get("value")
    fill = numpy_helper.to_array(value).reshape(-1) if value is not None else \
        np.zeros(1, np.float32)
    shape = [int(d) for d in np.asarray(imp.constants[node.input[0]]).reshape(-1)]
    if any(d < 0 for d in shape):
        raise ModelError(f"{imp.source}: {imp.label}: negative dimension in shape {shape}")
    check_size(imp.source, f"{imp.label}: output '{node.output[0]}'", shape)
    return [np.full(shape, fill[0], dtype=fill.dtype)]


register(OnnxOp("Constant", evaluate=evaluate_constant, import_time_inputs=()))
register(OnnxOp("Shape", evaluate=evaluate_shape, import_time_inputs=()))
register(OnnxOp("Size", evaluate=evaluate_shape, import_time_inputs=()))
register(OnnxOp("ConstantOfShape", evaluate=evaluate_constant_of_shape))
