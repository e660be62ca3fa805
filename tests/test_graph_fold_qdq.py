"""graph-fold-qdq on a model quantized by `xweave quantize` (onnxruntime's
quantize_static: QDQ, per-channel int8 weights, int8 activations), and the command.

The fold must not change a single output (graph interpreter before and after), turn
every convolution and the classifier into integer layers, and the compiled model must
equal onnxruntime's int8 session exactly (`session.x64quantprecision=1`: onnxruntime's
default u8 x s8 kernels on AVX2 saturate 16-bit pair sums; see test_quantized_ops.py).
"""

from __future__ import annotations

import builtins

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from helpers import load_bench, run_cli

import xweave
from xweave.context import make_context
from xweave.dialects.interpreters import make_interpreter
from xweave.passes.graph_fold_qdq import GraphFoldQdqPass
from xweave.quantizer import MissingExtraError, quantize_model


@pytest.fixture(scope="module")
def quantized(tmp_path_factory):
    """A small ResNet-18 (16x16 images, 4-channel stem, 10 classes) quantized on four
    random samples: (path, a random input)."""
    models = load_bench("models")
    tmp = tmp_path_factory.mktemp("qdq")
    float_path = tmp / "resnet.onnx"
    onnx.save(models.resnet18(image=16, width=4, classes=10), float_path)
    rng = np.random.default_rng(0)
    np.savez(tmp / "calibration.npz", data=rng.standard_normal((4, 1, 3, 16, 16)).astype(np.float32))
    path = quantize_model(float_path, tmp / "calibration.npz", tmp / "resnet.int8.onnx")
    return path, rng.standard_normal((1, 3, 16, 16)).astype(np.float32)


def _interpret(module, x):
    return make_interpreter(module).call_op("main", (x,))


def test_the_fold_leaves_every_output_unchanged_and_leaves_no_float_layer(quantized):
    path, x = quantized
    module = xweave.load_onnx(path)
    before = _interpret(module, x)
    GraphFoldQdqPass().apply(make_context(), module)
    module.verify()
    after = _interpret(module, x)
    for a, b in zip(before, after):
        np.testing.assert_array_equal(a, b)
    layers = [op for op in module.walk() if op.name in ("graph.conv2d", "graph.dense")]
    assert layers and all(str(op.results[0].type).endswith("xi32>") for op in layers)
    activations = [op for op in module.walk() if op.name == "graph.quantize"]
    assert all("xui8>" in str(op.results[0].type) for op in activations)


def test_the_compiled_model_equals_onnxruntime_int8_exactly(quantized):
    path, x = quantized
    options = ort.SessionOptions()
    options.add_session_config_entry("session.x64quantprecision", "1")
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    (expected,) = session.run(None, {"data": x})
    (got,) = xweave.build(path).run(data=x)
    np.testing.assert_array_equal(got, expected)


def test_xweave_quantize_writes_a_qdq_model_and_refuses_bad_calibration(tmp_path):
    models = load_bench("models")
    model = tmp_path / "small.onnx"
    onnx.save(models.resnet18(image=8, width=4, classes=4, blocks=(1,)), model)
    good = tmp_path / "good.npz"
    np.savez(good, data=np.ones((1, 3, 8, 8), np.float32))
    code, out, err = run_cli("quantize", model, "--calibration", good, "-o", tmp_path / "q.onnx")
    assert code == 0, err
    ops = {n.op_type for n in onnx.load(tmp_path / "q.onnx").graph.node}
    assert {"QuantizeLinear", "DequantizeLinear", "Conv"} <= ops
    bad = tmp_path / "bad.npz"
    np.savez(bad, data=np.ones((3, 8, 8), np.float32))
    code, out, err = run_cli("quantize", model, "--calibration", bad, "-o", tmp_path / "b.onnx")
    assert code != 0 and len(err.strip().splitlines()) == 1
    assert "calibration input 'data': expected shape [1, 3, 8, 8]" in err
    assert not (tmp_path / "b.onnx").exists()


def test_quantizing_without_onnxruntime_names_the_extra(monkeypatch, tmp_path):
    real_import = builtins.__import__

    def no_onnxruntime(name, *args, **kwargs):
        if name.startswith("onnxruntime"):
            raise ImportError(f"No module named '{name}'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_onnxruntime)
    with pytest.raises(MissingExtraError, match=r"pip install 'xweave\[quantize\]'"):
        quantize_model(tmp_path / "m.onnx", {}, tmp_path / "q.onnx")
    code, _, err = run_cli("quantize", tmp_path / "m.onnx", "--calibration", tmp_path / "c.npz",
                           "-o", tmp_path / "q.onnx")
    assert code != 0 and len(err.strip().splitlines()) == 1 and "xweave[quantize]" in err
