"""Whole models for the end-to-end benchmarks, built with onnx.helper (random weights).

    from models import build, model_path
    model = build("resnet18")                  # onnx.ModelProto, 1x3x224x224, batch 1
    path = model_path("resnet50")              # cached in bench/models/resnet50.onnx
    small = build("resnet18", image=32, width=8)   # scaled down (tests)

Standard architectures, each a function whose keyword arguments scale it down:

* `resnet18` / `resnet50` (He et al.; torchvision's v1.5: stride in the bottleneck's
  3x3): conv-BatchNormalization-Relu, basic or bottleneck blocks, global average
  pool, Gemm classifier;
* `mobilenet_v2` (Sandler et al.): inverted residual blocks, depthwise 3x3 convs,
  Relu6 as Clip(0, 6), BatchNormalization;
* `squeezenet1_1` (Iandola et al., v1.1): Fire modules (squeeze 1x1, expand 1x1 and
  3x3, Concat), MaxPool with ceil_mode, conv classifier;
* `bert_encoder`: a BERT-base-like encoder (4 layers, sequence 128, hidden 768, 12
  heads, FFN 3072) on float hidden states, with LayerNormalization (or its decomposed
  form, `layer_norm="decomposed"`) and Gelu through Erf;

and a zoo of the patterns common architectures are made of (opset 17, written as
PyTorch exports them): `mobilenet_v3_large` (squeeze-and-excitation with a hard-sigmoid
gate, hard-swish), `efficientnet_b0` (SE with a sigmoid gate, swish), `shufflenet_v2`
(channel split and shuffle, 58/116/232-channel branches), `densenet121` (dense
concatenation, pre-activation BN), `googlenet` (inception branches), `mobilenet_v1`
(depthwise-separable), `convnext_tiny` (7x7 depthwise, channels-last LayerNorm, GELU),
`vit` (patch embedding, class token, 197 tokens, pre-LN attention).

Weights are random (fixed seed) with fan-in scaling, so activations stay of order one
and numerical comparisons stay meaningful through deep models. Models use IR version 8
for onnxruntime (see the xdsl-conventions note).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

CACHE = Path(__file__).parent / "models"
"""Where `model_path` keeps the built .onnx files (gitignored)."""


class _Graph:
    """Collects nodes and initializers, with fresh names and the usual layers."""

    def __init__(self, seed: int = 0):
        self.rng = np.random.default_rng(seed)
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []
        self._count: dict[str, int] = {}

    def name(self, base: str) -> str:
        n = self._count.get(base, 0)
        self._count[base] = n + 1
        return f"{base}{n}"

    def const(self, base: str, array: np.ndarray) -> str:
        name = self.name(base)
        self.inits.append(numpy_helper.from_array(array, name))
        return name

    def node(self, op: str, inputs: list[str], **attrs) -> str:
        out = self.name(op.lower())
        self.nodes.append(helper.make_node(op, inputs, [out], name=out, **attrs))
        return out

    def weight(self, shape: tuple[int, ...], fan_in: int, gain: float = 2.0) -> np.ndarray:
        return (self.rng.standard_normal(shape) * math.sqrt(gain / fan_in)).astype(np.float32)

    # --- CNN layers -------------------------------------------------------------------

    def conv(self, x: str, cin: int, cout: int, k: int, stride: int = 1, groups: int = 1,
             bias: bool = False, pad: int | None = None) -> str:
        pad = k // 2 if pad is None else pad
        w = self.const("w", self.weight((cout, cin // groups, k, k), cin // groups * k * k))
        inputs = [x, w]
        if bias:
            inputs.append(self.const("b", (self.rng.standard_normal(cout) * 0.01).astype(np.float32)))
        return self.node("Conv", inputs, kernel_shape=[k, k], strides=[stride, stride],
                         pads=[pad] * 4, group=groups)

    def batch_norm(self, x: str, c: int) -> str:
        r = self.rng
        params = [
            r.uniform(0.5, 1.0, c), r.standard_normal(c) * 0.1,  # scale, bias
            r.standard_normal(c) * 0.1, r.uniform(0.5, 1.5, c),  # mean, var
        ]
        names = [self.const(n, p.astype(np.float32)) for n, p in zip(("gamma", "beta", "mean", "var"), params)]
        return self.node("BatchNormalization", [x, *names], epsilon=1e-5)

    def conv_bn(self, x: str, cin: int, cout: int, k: int, stride: int = 1, groups: int = 1,
                act: str | None = "relu") -> str:
        return self.act(self.batch_norm(self.conv(x, cin, cout, k, stride, groups), cout), act)

    def act(self, x: str, kind: str | None) -> str:
        """An activation as exporters write it: relu, relu6 (Clip), hardswish, swish
        (x * Sigmoid(x), PyTorch's SiLU), gelu (through Erf), or None."""
        if kind is None:
            return x
        if kind == "relu":
            return self.node("Relu", [x])
        if kind == "relu6":
            lo = self.const("zero", np.array(0.0, np.float32))
            hi = self.const("six", np.array(6.0, np.float32))
            return self.node("Clip", [x, lo, hi])
        if kind == "hardswish":
            return self.node("HardSwish", [x])
        if kind == "swish":
            return self.node("Mul", [x, self.node("Sigmoid", [x])])
        if kind == "gelu":
            return self.gelu(x)
        raise ValueError(f"unknown activation {kind!r}")

    def squeeze_excite(self, x: str, channels: int, squeeze: int, inner: str = "relu",
                       gate: str = "sigmoid") -> str:
        """Squeeze-and-excitation: global average pool, 1x1 conv, activation, 1x1 conv,
        a sigmoid or hard-sigmoid gate [N, C, 1, 1] broadcast-multiplied into `x`."""
        s = self.node("GlobalAveragePool", [x])
        s = self.act(self.conv(s, channels, squeeze, 1, bias=True), inner)
        s = self.conv(s, squeeze, channels, 1, bias=True)
        s = self.node("Sigmoid", [s]) if gate == "sigmoid" else \
            self.node("HardSigmoid", [s], alpha=1 / 6, beta=0.5)
        return self.node("Mul", [x, s])

    def classifier(self, x: str, channels: int, classes: int) -> str:
        pooled = self.node("GlobalAveragePool", [x])
        flat = self.node("Flatten", [pooled], axis=1)
        w = self.const("fc_w", self.weight((classes, channels), channels, gain=1.0))
        b = self.const("fc_b", np.zeros(classes, np.float32))
        return self.node("Gemm", [flat, w, b], transB=1)

    # --- transformer layers -----------------------------------------------------------

    def dense(self, x: str, cin: int, cout: int) -> str:
        w = self.const("w", self.weight((cin, cout), cin, gain=1.0))
        b = self.const("b", (self.rng.standard_normal(cout) * 0.02).astype(np.float32))
        return self.node("Add", [self.node("MatMul", [x, w]), b])

    def shape(self, dims: list[int]) -> str:
        return self.const("shape", np.array(dims, np.int64))

    def scalar(self, value: float) -> str:
        return self.const("c", np.array(value, np.float32))

    def layer_norm(self, x: str, hidden: int, decomposed: bool, epsilon: float = 1e-12) -> str:
        gamma = self.const("ln_g", self.rng.uniform(0.8, 1.2, hidden).astype(np.float32))
        beta = self.const("ln_b", (self.rng.standard_normal(hidden) * 0.02).astype(np.float32))
        if not decomposed:
            return self.node("LayerNormalization", [x, gamma, beta], axis=-1, epsilon=epsilon)
        mean = self.node("ReduceMean", [x], axes=[-1], keepdims=1)
        centered = self.node("Sub", [x, mean])
        var = self.node("ReduceMean", [self.node("Mul", [centered, centered])], axes=[-1], keepdims=1)
        std = self.node("Sqrt", [self.node("Add", [var, self.scalar(1e-12)])])
        return self.node("Add", [self.node("Mul", [self.node("Div", [centered, std]), gamma]), beta])

    def gelu(self, x: str) -> str:
        erf = self.node("Erf", [self.node("Mul", [x, self.scalar(1 / math.sqrt(2))])])
        half_x = self.node("Mul", [x, self.scalar(0.5)])
        return self.node("Mul", [half_x, self.node("Add", [erf, self.scalar(1.0)])])

    def model(self, name: str, inputs: list[tuple[str, list[int]]], output: str,
              opset: int) -> onnx.ModelProto:
        graph = helper.make_graph(
            self.nodes, name,
            [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs],
            [helper.make_tensor_value_info(output, TensorProto.FLOAT, None)],
            self.inits,
        )
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                                  producer_name="xweave-bench")
        model.ir_version = 8
        return onnx.shape_inference.infer_shapes(model)


# ----------------------------------------------------------------------------------
# ResNet
# ----------------------------------------------------------------------------------


def resnet(depth: int = 18, image: int = 224, width: int = 64, classes: int = 1000,
           blocks: tuple[int, ...] | None = None) -> onnx.ModelProto:
    """ResNet-18/34 (basic blocks) or -50/101 (bottlenecks); `width` is the stem's channels."""
    layouts = {18: (2, 2, 2, 2), 34: (3, 4, 6, 3), 50: (3, 4, 6, 3), 101: (3, 4, 23, 3)}
    bottleneck = depth >= 50
    blocks = blocks or layouts[depth]
    g = _Graph()
    x = g.conv_bn("data", 3, width, 7, stride=2)
    x = g.node("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    cin = width
    for stage, count in enumerate(blocks):
        planes = width * 2**stage
        cout = planes * 4 if bottleneck else planes
        for i in range(count):
            stride = 2 if stage > 0 and i == 0 else 1
            if bottleneck:
                y = g.conv_bn(x, cin, planes, 1)
                y = g.conv_bn(y, planes, planes, 3, stride)
                y = g.conv_bn(y, planes, cout, 1, act=None)
            else:
                y = g.conv_bn(x, cin, planes, 3, stride)
                y = g.conv_bn(y, planes, cout, 3, act=None)
            skip = x if stride == 1 and cin == cout else g.conv_bn(x, cin, cout, 1, stride, act=None)
            x = g.node("Relu", [g.node("Add", [y, skip])])
            cin = cout
    out = g.classifier(x, cin, classes)
    return g.model(f"resnet{depth}", [("data", [1, 3, image, image])], out, opset=13)


def resnet18(**kwargs) -> onnx.ModelProto:
    """ResNet-18 at 224x224 (kwargs: image, width, classes, blocks)."""
    return resnet(18, **kwargs)


def resnet50(**kwargs) -> onnx.ModelProto:
    """ResNet-50 at 224x224 (kwargs: image, width, classes, blocks)."""
    return resnet(50, **kwargs)


# ----------------------------------------------------------------------------------
# MobileNetV2
# ----------------------------------------------------------------------------------

MOBILENET_V2_SETTINGS = ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2),
                         (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1))
"""(expansion t, channels c, repeats n, first stride s) per stage, as in the paper."""


def _divisible(v: float, divisor: int = 8) -> int:
    """Round channels as the reference implementation does (multiples of 8, >= 90%)."""
    new = max(divisor, int(v + divisor / 2) // divisor * divisor)
    return new + divisor if new < 0.9 * v else new


def mobilenet_v2(image: int = 224, width_mult: float = 1.0, classes: int = 1000,
                 settings: tuple[tuple[int, int, int, int], ...] = MOBILENET_V2_SETTINGS,
                 ) -> onnx.ModelProto:
    """MobileNetV2 (kwargs: image, width_mult, classes, settings)."""
    g = _Graph()
    cin = _divisible(32 * width_mult)
    last = _divisible(1280 * max(1.0, width_mult))
    x = g.conv_bn("data", 3, cin, 3, stride=2, act="relu6")
    for t, c, n, s in settings:
        cout = _divisible(c * width_mult)
        for i in range(n):
            stride = s if i == 0 else 1
            hidden = cin * t
            y = x if t == 1 else g.conv_bn(x, cin, hidden, 1, act="relu6")
            y = g.conv_bn(y, hidden, hidden, 3, stride, groups=hidden, act="relu6")
            y = g.conv_bn(y, hidden, cout, 1, act=None)
            x = g.node("Add", [x, y]) if stride == 1 and cin == cout else y
            cin = cout
    x = g.conv_bn(x, cin, last, 1, act="relu6")
    out = g.classifier(x, last, classes)
    return g.model("mobilenet_v2", [("data", [1, 3, image, image])], out, opset=13)


# ----------------------------------------------------------------------------------
# SqueezeNet 1.1
# ----------------------------------------------------------------------------------

SQUEEZENET_FIRES = ((16, 64), (16, 64), "pool", (32, 128), (32, 128), "pool",
                    (48, 192), (48, 192), (64, 256), (64, 256))
"""Fire modules (squeeze, expand channels) and max pools after the stem, v1.1."""


def squeezenet1_1(image: int = 224, classes: int = 1000, width: float = 1.0,
                  fires=SQUEEZENET_FIRES) -> onnx.ModelProto:
    """SqueezeNet 1.1 (kwargs: image, classes, width: a channel multiplier, fires)."""
    g = _Graph()

    def pool(x: str) -> str:
        return g.node("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1)

    def relu_conv(x: str, cin: int, cout: int, k: int, stride: int = 1) -> str:
        return g.node("Relu", [g.conv(x, cin, cout, k, stride, bias=True, pad=k // 2 if stride == 1 else 0)])

    stem = max(8, int(64 * width))
    x = pool(relu_conv("data", 3, stem, 3, stride=2))
    cin = stem
    for fire in fires:
        if fire == "pool":
            x = pool(x)
            continue
        squeeze, expand = (max(4, int(c * width)) for c in fire)
        s = relu_conv(x, cin, squeeze, 1)
        x = g.node("Concat", [relu_conv(s, squeeze, expand, 1), relu_conv(s, squeeze, expand, 3)], axis=1)
        cin = 2 * expand
    x = g.node("Dropout", [x])
    x = relu_conv(x, cin, classes, 1)
    out = g.node("Flatten", [g.node("GlobalAveragePool", [x])], axis=1)
    return g.model("squeezenet1_1", [("data", [1, 3, image, image])], out, opset=13)


# ----------------------------------------------------------------------------------
# BERT-base-like encoder
# ----------------------------------------------------------------------------------


def bert_encoder(layers: int = 4, seq: int = 128, hidden: int = 768, heads: int = 12,
                 ffn: int = 3072, layer_norm: str = "op") -> onnx.ModelProto:
    """Post-LN transformer encoder layers on `hidden_states` [1, seq, hidden].

    `layer_norm`: "op" (LayerNormalization, opset 17) or "decomposed" (ReduceMean, Sub,
    Mul, Sqrt, Div: what exporters emit below opset 17).
    """
    if layer_norm not in ("op", "decomposed"):
        raise ValueError(f"layer_norm must be 'op' or 'decomposed', got {layer_norm!r}")
    decomposed = layer_norm == "decomposed"
    head_dim = hidden // heads
    g = _Graph()
    x = "hidden_states"
    to_heads = g.shape([1, seq, heads, head_dim])
    to_hidden = g.shape([1, seq, hidden])
    for _ in range(layers):
        def split_heads(t: str, perm: list[int]) -> str:
            return g.node("Transpose", [g.node("Reshape", [t, to_heads])], perm=perm)

        q = split_heads(g.dense(x, hidden, hidden), [0, 2, 1, 3])
        k = split_heads(g.dense(x, hidden, hidden), [0, 2, 3, 1])  # K^T
        v = split_heads(g.dense(x, hidden, hidden), [0, 2, 1, 3])
        scores = g.node("Mul", [g.node("MatMul", [q, k]), g.scalar(1 / math.sqrt(head_dim))])
        probs = g.node("Softmax", [scores], axis=-1)
        context = g.node("Transpose", [g.node("MatMul", [probs, v])], perm=[0, 2, 1, 3])
        attention = g.dense(g.node("Reshape", [context, to_hidden]), hidden, hidden)
        x = g.layer_norm(g.node("Add", [x, attention]), hidden, decomposed)
        h = g.dense(g.gelu(g.dense(x, hidden, ffn)), ffn, hidden)
        x = g.layer_norm(g.node("Add", [x, h]), hidden, decomposed)
    return g.model("bert_encoder", [("hidden_states", [1, seq, hidden])], x,
                   opset=13 if decomposed else 17)


# ----------------------------------------------------------------------------------
# MobileNetV3 and EfficientNet: inverted residuals with squeeze-and-excitation
# ----------------------------------------------------------------------------------

MOBILENET_V3_LARGE = (
    (3, 16, 16, False, "relu", 1), (3, 64, 24, False, "relu", 2), (3, 72, 24, False, "relu", 1),
    (5, 72, 40, True, "relu", 2), (5, 120, 40, True, "relu", 1), (5, 120, 40, True, "relu", 1),
    (3, 240, 80, False, "hardswish", 2), (3, 200, 80, False, "hardswish", 1),
    (3, 184, 80, False, "hardswish", 1), (3, 184, 80, False, "hardswish", 1),
    (3, 480, 112, True, "hardswish", 1), (3, 672, 112, True, "hardswish", 1),
    (5, 672, 160, True, "hardswish", 2), (5, 960, 160, True, "hardswish", 1),
    (5, 960, 160, True, "hardswish", 1))
"""(kernel, expanded channels, out channels, squeeze-excite, activation, stride) per block."""


def mobilenet_v3_large(image: int = 224, width_mult: float = 1.0, classes: int = 1000,
                       settings=MOBILENET_V3_LARGE) -> onnx.ModelProto:
    """MobileNetV3-Large (Howard et al.): hard-swish, SE with a hard-sigmoid gate."""
    g = _Graph()
    cin = _divisible(16 * width_mult)
    x = g.conv_bn("data", 3, cin, 3, stride=2, act="hardswish")
    for k, expanded, out, se, act, stride in settings:
        expanded, out = _divisible(expanded * width_mult), _divisible(out * width_mult)
        y = x if expanded == cin else g.conv_bn(x, cin, expanded, 1, act=act)
        y = g.conv_bn(y, expanded, expanded, k, stride, groups=expanded, act=act)
        if se:
            y = g.squeeze_excite(y, expanded, _divisible(expanded // 4), gate="hardsigmoid")
        y = g.conv_bn(y, expanded, out, 1, act=None)
        x = g.node("Add", [x, y]) if stride == 1 and cin == out else y
        cin = out
    last = _divisible(6 * cin)
    x = g.conv_bn(x, cin, last, 1, act="hardswish")
    x = g.node("Flatten", [g.node("GlobalAveragePool", [x])], axis=1)
    hidden = _divisible(1280 * max(1.0, width_mult))
    w1 = g.const("fc_w", g.weight((last, hidden), last, gain=1.0))
    x = g.act(g.node("Add", [g.node("MatMul", [x, w1]), g.const("fc_b", np.zeros(hidden, np.float32))]),
              "hardswish")
    w2 = g.const("fc_w", g.weight((hidden, classes), hidden, gain=1.0))
    out = g.node("Add", [g.node("MatMul", [x, w2]), g.const("fc_b", np.zeros(classes, np.float32))])
    return g.model("mobilenet_v3_large", [("data", [1, 3, image, image])], out, opset=17)


EFFICIENTNET_B0 = ((1, 3, 1, 16, 1), (6, 3, 2, 24, 2), (6, 5, 2, 40, 2), (6, 3, 2, 80, 3),
                   (6, 5, 1, 112, 3), (6, 5, 2, 192, 4), (6, 3, 1, 320, 1))
"""(expansion, kernel, first stride, out channels, repeats) per stage of MBConv blocks."""


def efficientnet_b0(image: int = 224, classes: int = 1000, width_mult: float = 1.0,
                    settings=EFFICIENTNET_B0) -> onnx.ModelProto:
    """EfficientNet-B0 (Tan & Le): MBConv blocks with SE (sigmoid gate) and swish."""
    g = _Graph()
    cin = _divisible(32 * width_mult)
    x = g.conv_bn("data", 3, cin, 3, stride=2, act="swish")
    for expansion, k, first_stride, out, repeats in settings:
        out = _divisible(out * width_mult)
        for i in range(repeats):
            stride = first_stride if i == 0 else 1
            hidden = cin * expansion
            y = x if expansion == 1 else g.conv_bn(x, cin, hidden, 1, act="swish")
            y = g.conv_bn(y, hidden, hidden, k, stride, groups=hidden, act="swish")
            y = g.squeeze_excite(y, hidden, max(1, cin // 4), inner="swish")
            y = g.conv_bn(y, hidden, out, 1, act=None)
            x = g.node("Add", [x, y]) if stride == 1 and cin == out else y
            cin = out
    last = _divisible(1280 * max(1.0, width_mult))
    x = g.conv_bn(x, cin, last, 1, act="swish")
    out = g.classifier(x, last, classes)
    return g.model("efficientnet_b0", [("data", [1, 3, image, image])], out, opset=17)


# ----------------------------------------------------------------------------------
# ShuffleNetV2: channel split and channel shuffle
# ----------------------------------------------------------------------------------


def shufflenet_v2(image: int = 224, classes: int = 1000, stages=((116, 4), (232, 8), (464, 4)),
                  stem: int = 24, last: int = 1024) -> onnx.ModelProto:
    """ShuffleNetV2 1.0x (Ma et al.): each unit splits the channels in two (Split), runs
    one half through 1x1 - depthwise 3x3 - 1x1 convs, concatenates and shuffles the
    channels (Reshape - Transpose - Reshape), as PyTorch exports it."""
    g = _Graph()
    x = g.conv_bn("data", 3, stem, 3, stride=2)
    x = g.node("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    cin, size = stem, -(-image // 4)

    def branch(t: str, c_in: int, c: int, stride: int) -> str:
        t = g.conv_bn(t, c_in, c, 1)
        t = g.conv_bn(t, c, c, 3, stride, groups=c, act=None)
        return g.conv_bn(t, c, c, 1)

    for out, repeats in stages:
        half = out // 2
        for i in range(repeats):
            if i == 0:  # stride 2: both branches see the whole input
                left = g.conv_bn(g.conv_bn(x, cin, cin, 3, 2, groups=cin, act=None), cin, half, 1)
                right = branch(x, cin, half, 2)
                size = -(-size // 2)
            else:
                split = g.const("split", np.array([half, half], np.int64))
                left, rest = g.name("split"), g.name("split")
                g.nodes.append(helper.make_node("Split", [x, split], [left, rest], axis=1,
                                                name=g.name("Split")))
                right = branch(rest, half, half, 1)
            y = g.node("Concat", [left, right], axis=1)
            y = g.node("Reshape", [y, g.shape([1, 2, half, size, size])])
            y = g.node("Transpose", [y], perm=[0, 2, 1, 3, 4])
            x = g.node("Reshape", [y, g.shape([1, out, size, size])])
            cin = out
    x = g.conv_bn(x, cin, last, 1)
    out = g.classifier(x, last, classes)
    return g.model("shufflenet_v2", [("data", [1, 3, image, image])], out, opset=17)


# ----------------------------------------------------------------------------------
# DenseNet-121: dense concatenation
# ----------------------------------------------------------------------------------


def densenet121(image: int = 224, classes: int = 1000, growth: int = 32,
                blocks=(6, 12, 24, 16), stem: int = 64, bn_size: int = 4) -> onnx.ModelProto:
    """DenseNet-121 (Huang et al.): each layer (BN - ReLU - 1x1 conv - BN - ReLU - 3x3
    conv) reads the concatenation of every earlier feature map of its block."""
    g = _Graph()
    x = g.conv_bn("data", 3, stem, 7, stride=2)
    x = g.node("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    c = stem
    for i, layers in enumerate(blocks):
        features = [x]
        for _ in range(layers):
            joined = features[0] if len(features) == 1 else g.node("Concat", features, axis=1)
            y = g.conv(g.node("Relu", [g.batch_norm(joined, c)]), c, bn_size * growth, 1)
            y = g.conv(g.act(g.batch_norm(y, bn_size * growth), "relu"), bn_size * growth, growth, 3)
            features.append(y)
            c += growth
        x = g.node("Concat", features, axis=1)
        if i < len(blocks) - 1:
            x = g.conv(g.node("Relu", [g.batch_norm(x, c)]), c, c // 2, 1)
            x = g.node("AveragePool", [x], kernel_shape=[2, 2], strides=[2, 2])
            c //= 2
    x = g.node("Relu", [g.batch_norm(x, c)])
    out = g.classifier(x, c, classes)
    return g.model("densenet121", [("data", [1, 3, image, image])], out, opset=17)


# ----------------------------------------------------------------------------------
# GoogLeNet: inception branches
# ----------------------------------------------------------------------------------

GOOGLENET_INCEPTIONS = (
    (64, 96, 128, 16, 32, 32), (128, 128, 192, 32, 96, 64), "pool",
    (192, 96, 208, 16, 48, 64), (160, 112, 224, 24, 64, 64), (128, 128, 256, 24, 64, 64),
    (112, 144, 288, 32, 64, 64), (256, 160, 320, 32, 128, 128), "pool",
    (256, 160, 320, 32, 128, 128), (384, 192, 384, 48, 128, 128))
"""Inception modules (1x1; 3x3 reduce, 3x3; 3x3 reduce, 3x3; pool projection) and pools."""


def googlenet(image: int = 224, classes: int = 1000, width: float = 1.0,
              inceptions=GOOGLENET_INCEPTIONS) -> onnx.ModelProto:
    """GoogLeNet (Szegedy et al., torchvision's BN variant): four parallel branches per
    inception module, concatenated along the channels."""
    g = _Graph()

    def ch(c: int) -> int:
        return max(4, int(c * width))

    def pool(t: str) -> str:
        return g.node("MaxPool", [t], kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1)

    x = pool(g.conv_bn("data", 3, ch(64), 7, stride=2))
    x = pool(g.conv_bn(g.conv_bn(x, ch(64), ch(64), 1), ch(64), ch(192), 3))
    cin = ch(192)
    for item in inceptions:
        if item == "pool":
            x = pool(x)
            continue
        b1, r3, b3, r5, b5, bp = (ch(c) for c in item)
        branches = [
            g.conv_bn(x, cin, b1, 1),
            g.conv_bn(g.conv_bn(x, cin, r3, 1), r3, b3, 3),
            g.conv_bn(g.conv_bn(x, cin, r5, 1), r5, b5, 3),
            g.conv_bn(g.node("MaxPool", [x], kernel_shape=[3, 3], strides=[1, 1],
                             pads=[1, 1, 1, 1], ceil_mode=1), cin, bp, 1),
        ]
        x = g.node("Concat", branches, axis=1)
        cin = b1 + b3 + b5 + bp
    out = g.classifier(x, cin, classes)
    return g.model("googlenet", [("data", [1, 3, image, image])], out, opset=17)


# ----------------------------------------------------------------------------------
# MobileNetV1: depthwise-separable convolutions
# ----------------------------------------------------------------------------------

MOBILENET_V1 = ((64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2),
                (512, 1), (512, 1), (512, 1), (512, 1), (512, 1), (1024, 2), (1024, 1))
"""(out channels, stride) of each depthwise-separable block."""


def mobilenet_v1(image: int = 224, classes: int = 1000, width_mult: float = 1.0,
                 settings=MOBILENET_V1) -> onnx.ModelProto:
    """MobileNetV1 (Howard et al.): depthwise 3x3 then pointwise 1x1, BN and ReLU each."""
    g = _Graph()
    cin = _divisible(32 * width_mult)
    x = g.conv_bn("data", 3, cin, 3, stride=2)
    for out, stride in settings:
        out = _divisible(out * width_mult)
        x = g.conv_bn(g.conv_bn(x, cin, cin, 3, stride, groups=cin), cin, out, 1)
        cin = out
    out = g.classifier(x, cin, classes)
    return g.model("mobilenet_v1", [("data", [1, 3, image, image])], out, opset=17)


# ----------------------------------------------------------------------------------
# ConvNeXt: 7x7 depthwise, channels-last LayerNorm, GELU MLP
# ----------------------------------------------------------------------------------


def convnext_tiny(image: int = 224, classes: int = 1000, depths=(3, 3, 9, 3),
                  dims=(96, 192, 384, 768)) -> onnx.ModelProto:
    """ConvNeXt-T (Liu et al., torchvision's export): patchify stem, blocks of 7x7
    depthwise conv - permute to NHWC - LayerNorm - Linear x4 - GELU - Linear - layer
    scale - permute back - residual; LayerNorm + 2x2 stride-2 conv between stages."""
    g = _Graph()

    def layer_norm_2d(t: str, c: int) -> str:
        t = g.node("Transpose", [t], perm=[0, 2, 3, 1])
        return g.node("Transpose", [g.layer_norm(t, c, False, epsilon=1e-6)], perm=[0, 3, 1, 2])

    x = layer_norm_2d(g.conv("data", 3, dims[0], 4, stride=4, bias=True, pad=0), dims[0])
    for i, (depth, dim) in enumerate(zip(depths, dims)):
        if i:
            x = g.conv(layer_norm_2d(x, dims[i - 1]), dims[i - 1], dim, 2, stride=2, bias=True, pad=0)
        for _ in range(depth):
            y = g.conv(x, dim, dim, 7, groups=dim, bias=True)
            y = g.layer_norm(g.node("Transpose", [y], perm=[0, 2, 3, 1]), dim, False, epsilon=1e-6)
            y = g.dense(g.gelu(g.dense(y, dim, 4 * dim)), 4 * dim, dim)
            y = g.node("Transpose", [y], perm=[0, 3, 1, 2])
            scale = g.const("gamma", np.full((dim, 1, 1), 0.1, np.float32))
            x = g.node("Add", [x, g.node("Mul", [y, scale])])
    x = g.node("GlobalAveragePool", [x])
    x = g.node("Flatten", [layer_norm_2d(x, dims[-1])], axis=1)
    w = g.const("fc_w", g.weight((classes, dims[-1]), dims[-1], gain=1.0))
    out = g.node("Gemm", [x, w, g.const("fc_b", np.zeros(classes, np.float32))], transB=1)
    return g.model("convnext_tiny", [("data", [1, 3, image, image])], out, opset=17)


# ----------------------------------------------------------------------------------
# Vision transformer: patch embedding, class token, pre-LN attention
# ----------------------------------------------------------------------------------


def vit(image: int = 224, patch: int = 16, hidden: int = 256, heads: int = 4, mlp: int = 1024,
        layers: int = 6, classes: int = 1000) -> onnx.ModelProto:
    """A ViT (Dosovitskiy et al.) of `(image / patch)^2 + 1` tokens (197 at 224 / 16):
    a strided conv embeds the patches, a class token is concatenated in front, position
    embeddings added, pre-LN encoder layers, the class token's LayerNorm -> classifier."""
    g = _Graph()
    tokens = (image // patch) ** 2
    seq, head_dim = tokens + 1, hidden // heads
    x = g.conv("data", 3, hidden, patch, stride=patch, bias=True, pad=0)
    x = g.node("Transpose", [g.node("Reshape", [x, g.shape([1, hidden, tokens])])], perm=[0, 2, 1])
    cls = g.const("cls", (g.rng.standard_normal((1, 1, hidden)) * 0.02).astype(np.float32))
    x = g.node("Concat", [cls, x], axis=1)
    x = g.node("Add", [x, g.const("pos", (g.rng.standard_normal((1, seq, hidden)) * 0.02)
                                  .astype(np.float32))])
    to_heads, to_hidden = g.shape([1, seq, heads, head_dim]), g.shape([1, seq, hidden])
    for _ in range(layers):
        h = g.layer_norm(x, hidden, False, epsilon=1e-6)

        def split_heads(t: str, perm: list[int]) -> str:
            return g.node("Transpose", [g.node("Reshape", [t, to_heads])], perm=perm)

        q = split_heads(g.dense(h, hidden, hidden), [0, 2, 1, 3])
        k = split_heads(g.dense(h, hidden, hidden), [0, 2, 3, 1])
        v = split_heads(g.dense(h, hidden, hidden), [0, 2, 1, 3])
        scores = g.node("Mul", [g.node("MatMul", [q, k]), g.scalar(1 / math.sqrt(head_dim))])
        context = g.node("MatMul", [g.node("Softmax", [scores], axis=-1), v])
        context = g.node("Reshape", [g.node("Transpose", [context], perm=[0, 2, 1, 3]), to_hidden])
        x = g.node("Add", [x, g.dense(context, hidden, hidden)])
        h = g.layer_norm(x, hidden, False, epsilon=1e-6)
        x = g.node("Add", [x, g.dense(g.gelu(g.dense(h, hidden, mlp)), mlp, hidden)])
    x = g.layer_norm(x, hidden, False, epsilon=1e-6)
    first = g.node("Gather", [x, g.const("index", np.array(0, np.int64))], axis=1)
    w = g.const("fc_w", g.weight((classes, hidden), hidden, gain=1.0))
    out = g.node("Gemm", [first, w, g.const("fc_b", np.zeros(classes, np.float32))], transB=1)
    return g.model("vit", [("data", [1, 3, image, image])], out, opset=17)


# ----------------------------------------------------------------------------------
# Registry and cache
# ----------------------------------------------------------------------------------

MODELS = {
    "resnet18": resnet18,
    "resnet50": resnet50,
    "mobilenet_v2": mobilenet_v2,
    "squeezenet1_1": squeezenet1_1,
    "bert_encoder": bert_encoder,
    "mobilenet_v3_large": mobilenet_v3_large,
    "efficientnet_b0": efficientnet_b0,
    "shufflenet_v2": shufflenet_v2,
    "densenet121": densenet121,
    "googlenet": googlenet,
    "mobilenet_v1": mobilenet_v1,
    "convnext_tiny": convnext_tiny,
    "vit": vit,
}
"""The benchmark models by name, full size with the defaults."""


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
"""Each architecture scaled down for the tests and the benchmarks' smoke runs (keys as
`MODELS`, plus `bert_encoder_decomposed`: build it with `build_small`)."""


def build_small(name: str) -> onnx.ModelProto:
    """Model `name` of `SMALL`, scaled down."""
    return build(name.removesuffix("_decomposed"), **SMALL[name])


def build(name: str, **kwargs) -> onnx.ModelProto:
    """Model `name` (a key of MODELS), scaled by the builder's keyword arguments."""
    if name not in MODELS:
        raise KeyError(f"unknown model {name!r} (known: {', '.join(MODELS)})")
    return MODELS[name](**kwargs)


def model_path(name: str) -> Path:
    """The full-size model's .onnx file, built on first use and cached in `CACHE`."""
    path = CACHE / f"{name}.onnx"
    if not path.exists():
        CACHE.mkdir(exist_ok=True)
        tmp = path.with_suffix(".tmp")
        onnx.save(build(name), tmp)
        tmp.replace(path)
    return path


def random_inputs(model: onnx.ModelProto, seed: int = 1) -> dict[str, np.ndarray]:
    """A float32 standard-normal array for every graph input."""
    rng = np.random.default_rng(seed)
    feeds = {}
    for value in model.graph.input:
        shape = [d.dim_value for d in value.type.tensor_type.shape.dim]
        feeds[value.name] = rng.standard_normal(shape).astype(np.float32)
    return feeds
