"""`run` is called the ways users of onnxruntime call it: keywords, a dict of feeds, or
`run(output_names, feeds)` with a choice of outputs; threads are chosen on load and on
the command line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import xweave
from xweave.errors import InputError, XweaveError
from xweave.runtime.threads import get_num_threads

BIN = Path(sys.executable).parent


@pytest.fixture(scope="module")
def two_outputs():
    """y = relu(x), z = x * 2: two outputs, so a choice of outputs can be seen."""
    two = helper.make_tensor("two", TensorProto.FLOAT, [], [2.0])
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"]), helper.make_node("Mul", ["x", "two"], ["z"])],
        "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 64])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 64]),
         helper.make_tensor_value_info("z", TensorProto.FLOAT, [2, 64])], [two])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model


X = np.linspace(-2, 2, 128, dtype=np.float32).reshape(2, 64)


def test_every_calling_convention_gives_the_same_outputs(two_outputs):
    module = xweave.build(two_outputs)
    y, z = np.maximum(X, 0), X * 2
    for outputs in (module.run(x=X), module.run({"x": X}), module.run(None, {"x": X})):
        np.testing.assert_array_equal(outputs[0], y)
        np.testing.assert_array_equal(outputs[1], z)
    (only_z,) = module.run(["z"], {"x": X})
    np.testing.assert_array_equal(only_z, z)
    swapped = module.run(["z", "y"], {"x": X})
    np.testing.assert_array_equal(swapped[0], z)
    np.testing.assert_array_equal(swapped[1], y)


@pytest.mark.parametrize("call, message", [
    (lambda m: m.run(["w"], {"x": X}), r"unknown output\(s\) 'w' \(the model's outputs are: y, z\)"),
    (lambda m: m.run({"x": X}, x=X), "either as keywords or as a dict"),
    (lambda m: m.run("z", {"x": X}), "output_names must be a list"),
    (lambda m: m.run(X), r"expected run\(name=array"),
    (lambda m: m.run({"data": X}), r"missing input\(s\): 'x'"),
])
def test_bad_calls_are_clear_errors(two_outputs, call, message):
    module = xweave.build(two_outputs)
    with pytest.raises(InputError, match=message):
        call(module)


def test_threads_on_load_and_on_the_command_line(two_outputs, tmp_path):
    module = xweave.build(two_outputs)
    module.export(tmp_path / "m.xwm")
    assert get_num_threads(xweave.load_module(tmp_path / "m.xwm", threads=1)) in (0, 1)
    with pytest.raises(XweaveError, match="threads must be a positive integer"):
        xweave.load_module(tmp_path / "m.xwm", threads=0)
    onnx.save(two_outputs, tmp_path / "m.onnx")
    for target in ("m.xwm", "m.onnx"):
        run = subprocess.run([str(BIN / "xweave"), "run", str(tmp_path / target), "--threads", "1"],
                             capture_output=True, text=True, timeout=300)
        assert run.returncode == 0, run.stderr
        assert "output 'z'" in run.stdout
    bad = subprocess.run([str(BIN / "xweave"), "run", str(tmp_path / "m.xwm"), "--threads", "-2"],
                         capture_output=True, text=True, timeout=300)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
