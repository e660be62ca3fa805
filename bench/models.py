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
  form, `layer_norm="decomposed"`) and Gelu through Erf.

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
        y = self.batch_norm(self.conv(x, cin, cout, k, stride, groups), cout)
        if act == "relu":
            return self.node("Relu", [y])
        if act == "relu6":
            lo = self.const("zero", np.array(0.0, np.float32))
            hi = self.const("six", np.array(6.0, np.float32))
            return self.node("Clip", [y, lo, hi])
        return y

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

    def layer_norm(self, x: str, hidden: int, decomposed: bool) -> str:
        gamma = self.const("ln_g", self.rng.uniform(0.8, 1.2, hidden).astype(np.float32))
        beta = self.const("ln_b", (self.rng.standard_normal(hidden) * 0.02).astype(np.float32))
        if not decomposed:
            return self.node("LayerNormalization", [x, gamma, beta], axis=-1, epsilon=1e-12)
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
# Registry and cache
# ----------------------------------------------------------------------------------

MODELS = {
    "resnet18": resnet18,
    "resnet50": resnet50,
    "mobilenet_v2": mobilenet_v2,
    "squeezenet1_1": squeezenet1_1,
    "bert_encoder": bert_encoder,
}
"""The benchmark models by name, full size with the defaults."""


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
