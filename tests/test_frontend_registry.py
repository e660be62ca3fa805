"""The ONNX operator registry is the single source of what the frontend imports: each
declared operator's converter, support check and input roles decide the outcome."""

import dataclasses

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from xweave.errors import ModelError, UnsupportedOpsError
from xweave.frontend.onnx import SUPPORTED_OPS, load_onnx
from xweave.frontend.registry import OPS, OnnxOp, onnx_op, register


def _model(nodes, inputs, outputs, initializers=None, opset=13):
    graph = helper.make_graph(
        nodes, "registry",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs.items()],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in outputs],
        [numpy_helper.from_array(v, k) for k, v in (initializers or {}).items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


@pytest.fixture
def declare(monkeypatch):
    """Replace (or add) a declaration for one test: `declare(OnnxOp(...))`."""

    def replace(op: OnnxOp) -> None:
        monkeypatch.setitem(OPS, op.name, op)

    return replace


def test_every_supported_op_has_a_converter():
    assert SUPPORTED_OPS == {name for name, op in OPS.items() if op.supported}
    for name in SUPPORTED_OPS:
        op = OPS[name]
        assert op.name == name
        if op.convert is None:  # only ever evaluated at import time
            assert op.always_import_time and callable(op.evaluate), name
        else:
            assert callable(op.convert), name
    # Every declared operator is a default-domain ONNX operator with inputs where its
    # roles say so.
    for name, op in OPS.items():
        schema = onnx.defs.get_schema(name)
        roles = (*op.shape_inputs, *op.constant_inputs, *(op.import_time_inputs or ()))
        assert all(i < schema.max_input for i in roles), name


def test_a_declared_operator_is_declared_once():
    with pytest.raises(ValueError, match="Relu is declared twice"):
        register(OnnxOp("Relu", convert=OPS["Relu"].convert))
    with pytest.raises(ValueError, match="Clip is declared twice"):
        onnx_op("Clip")(OPS["Clip"].convert)
    with pytest.raises(ValueError, match="constant_reason"):
        OnnxOp("Clip", constant_inputs=(1,))


def test_a_check_that_rejects_is_one_line_naming_node_and_op(declare):
    model = _model([helper.make_node("Relu", ["x"], ["r"], name="relu_1"),
                    helper.make_node("Relu", ["r"], ["y"])], {"x": [2, 3]}, ["y"])
    load_onnx(model)  # supported as declared
    declare(dataclasses.replace(
        OPS["Relu"], check=lambda c: f"a rejected rank {c.rank(0)}" if c.opset == 13 else None))
    with pytest.raises(UnsupportedOpsError) as info:
        load_onnx(model)
    message = str(info.value)
    assert message == ("unsupported ONNX operators: Relu with a rejected rank 2 "
                       "(nodes: relu_1, #1 (-> y))")
    assert "\n" not in message
    assert info.value.ops == {"Relu with a rejected rank 2": ["relu_1", "#1 (-> y)"]}


def test_a_declared_check_decides_on_attributes_and_used_outputs():
    pool = helper.make_node("MaxPool", ["x"], ["y"], name="pool", kernel_shape=[2, 2],
                            storage_order=1)
    with pytest.raises(UnsupportedOpsError, match=r"^unsupported ONNX operators: MaxPool with "
                                                  r"storage_order=1 \(nodes: pool\)$"):
        load_onnx(_model([pool], {"x": [1, 1, 4, 4]}, ["y"]))
    dropout = helper.make_node("Dropout", ["x"], ["y", "mask"], name="drop")
    with pytest.raises(UnsupportedOpsError,
                       match=r"Dropout with a used mask output \(nodes: drop\)"):
        load_onnx(_model([dropout], {"x": [2, 2]}, ["y", "mask"]))
    load_onnx(_model([dropout], {"x": [2, 2]}, ["y"]))  # mask unused: supported


def test_constant_inputs_must_be_known(declare):
    clip = helper.make_node("Clip", ["x", "lo"], ["y"], name="clip")
    with pytest.raises(UnsupportedOpsError,
                       match=r"Clip with non-constant min/max \(nodes: clip\)"):
        load_onnx(_model([clip], {"x": [4], "lo": []}, ["y"]))
    load_onnx(_model([clip], {"x": [4]}, ["y"], {"lo": np.float32(0)}))
    # The declaration alone decides: without the role, a run-time bound is not refused
    # by the support check (the converter then asks for a constant).
    declare(dataclasses.replace(OPS["Clip"], constant_inputs=(), constant_reason=""))
    with pytest.raises(ModelError, match="input 'lo' must be a constant"):
        load_onnx(_model([clip], {"x": [4], "lo": []}, ["y"]))


def test_shape_inputs_must_be_known_at_import(declare):
    tile = helper.make_node("Tile", ["x", "reps"], ["y"], name="tile")
    model = _model([helper.make_node("Cast", ["r"], ["reps"], to=TensorProto.INT64), tile],
                   {"x": [2, 3], "r": [2]}, ["y"])
    with pytest.raises(ModelError, match=r"the shape of tensor 'y' \(output of Tile 'tile'\) "
                                         r"cannot be inferred statically: its input 'reps'"):
        load_onnx(model)
    declare(dataclasses.replace(OPS["Tile"], shape_inputs=()))
    with pytest.raises(ModelError, match="input 'reps' must be a constant"):
        load_onnx(model)


def test_import_time_only_operators():
    # ConstantOfShape is declared (evaluated at import time) but has no converter: on a
    # run-time shape it is unsupported, and it is not in SUPPORTED_OPS.
    assert "ConstantOfShape" in OPS and "ConstantOfShape" not in SUPPORTED_OPS
    assert {"Constant", "Shape", "Size"} <= SUPPORTED_OPS
    node = helper.make_node("ConstantOfShape", ["s"], ["y"], name="fill")
    model = _model([helper.make_node("Cast", ["x"], ["s"], to=TensorProto.INT64), node],
                   {"x": [2]}, ["y"])
    with pytest.raises(UnsupportedOpsError, match=r"ConstantOfShape \(nodes: fill\)"):
        load_onnx(model)
