"""The benchmark models (bench/models.py), scaled down: xweave agrees with onnxruntime."""


import numpy as np
import onnx
import onnxruntime as ort
import pytest

import xweave

from helpers import load_bench

models = load_bench("models")

SMALL = models.SMALL


@pytest.mark.parametrize("name", sorted(SMALL))
def test_small_model_matches_onnxruntime(name):
    model = models.build_small(name)
    onnx.checker.check_model(model)
    feeds = models.random_inputs(model)
    expected = ort.InferenceSession(model.SerializeToString(),
                                    providers=["CPUExecutionProvider"]).run(None, feeds)
    module = xweave.build(model)
    got = module.run(**feeds)
    for g, e in zip(got, expected, strict=True):
        assert g.shape == e.shape
        scale = float(np.abs(e).max())
        np.testing.assert_allclose(g, e, rtol=1e-3, atol=1e-4 * scale)
    assert module.peak_memory_bytes > 0


def test_full_size_shapes():
    """The full-size models are the standard architectures: parameters and shapes."""
    expected_params = {  # millions, as published (ResNet-50: 25.6, MobileNetV2: 3.5)
        "resnet18": 11.7, "resnet50": 25.6, "mobilenet_v2": 3.5, "squeezenet1_1": 1.24,
        "mobilenet_v3_large": 5.48, "efficientnet_b0": 5.29, "shufflenet_v2": 2.28,
        "densenet121": 7.98, "googlenet": 6.62, "mobilenet_v1": 4.2, "convnext_tiny": 28.6,
    }
    for name, millions in expected_params.items():
        model = models.build(name)
        count = sum(int(np.prod(t.dims)) for t in model.graph.initializer
                    if t.data_type == onnx.TensorProto.FLOAT)
        assert abs(count / 1e6 - millions) / millions < 0.03, (name, count)
        (out,) = model.graph.output
        assert [d.dim_value for d in out.type.tensor_type.shape.dim] == [1, 1000]


def test_unknown_model_and_bad_option():
    with pytest.raises(KeyError, match="unknown model 'vgg'"):
        models.build("vgg")
    with pytest.raises(ValueError, match="layer_norm"):
        models.build("bert_encoder", layer_norm="fused")
