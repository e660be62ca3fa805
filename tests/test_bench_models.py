"""The benchmark models (bench/models.py), scaled down: xweave agrees with onnxruntime."""


import numpy as np
import onnx
import onnxruntime as ort
import pytest

import xweave

from helpers import load_bench

models = load_bench("models")

# Same architectures, small: tiny images, few channels, the first stages only. Each
# keeps what makes the architecture (downsampling shortcut, bottleneck, inverted
# residual with and without expansion, Fire module with MaxPool ceil_mode, attention).
SMALL = {
    "resnet18": dict(image=32, width=8, classes=10, blocks=(1, 1)),
    "resnet50": dict(image=32, width=4, classes=10, blocks=(1, 1)),
    "mobilenet_v2": dict(image=32, width_mult=0.25, classes=10,
                         settings=((1, 16, 1, 1), (6, 24, 2, 2))),
    "squeezenet1_1": dict(image=40, width=0.125, classes=10, fires=((16, 64), "pool", (32, 128))),
    "bert_encoder": dict(layers=1, seq=8, hidden=32, heads=4, ffn=64),
    "bert_encoder_decomposed": dict(layers=1, seq=8, hidden=32, heads=4, ffn=64,
                                    layer_norm="decomposed"),
    # The zoo of architecture patterns. SE blocks of 480 and 288 channels: their 1x1
    # convs on 1x1 pixels read the weights along both register-block axes.
    "mobilenet_v3_large": dict(image=32, classes=10, settings=(
        (3, 16, 16, False, "relu", 1), (5, 72, 40, True, "relu", 2),
        (3, 480, 112, True, "hardswish", 1))),
    "efficientnet_b0": dict(image=32, classes=10, settings=((1, 3, 1, 16, 1), (6, 3, 2, 48, 2))),
    "shufflenet_v2": dict(image=32, classes=10, stages=((58, 2), (116, 2)), last=64),
    "densenet121": dict(image=32, classes=10, blocks=(2, 2), growth=8, stem=16, bn_size=2),
    "googlenet": dict(image=32, classes=10, width=0.25, inceptions=(
        (64, 96, 128, 16, 32, 32), "pool", (192, 96, 208, 16, 48, 64))),
    "mobilenet_v1": dict(image=32, classes=10, width_mult=0.25,
                         settings=((64, 1), (128, 2), (128, 1))),
    "convnext_tiny": dict(image=32, classes=10, depths=(1, 1), dims=(16, 32)),
    "vit": dict(image=32, patch=8, hidden=32, heads=4, mlp=64, layers=1, classes=10),  # 17 tokens
}


@pytest.mark.parametrize("name", sorted(SMALL))
def test_small_model_matches_onnxruntime(name):
    builder = name.removesuffix("_decomposed")
    model = models.build(builder, **SMALL[name])
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
