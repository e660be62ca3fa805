"""Writes examples/small_cnn.onnx: a small CNN (conv/relu/pool/conv/relu/gap/gemm) with
fixed random weights, the model README's main job compiles and runs."""

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def small_cnn() -> onnx.ModelProto:
    rng = np.random.default_rng(0)

    def weight(name, *shape):
        return numpy_helper.from_array((rng.standard_normal(shape) * 0.1).astype(np.float32), name)

    nodes = [
        helper.make_node("Conv", ["data", "conv1_w", "conv1_b"], ["c1"], name="conv1",
                         kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        helper.make_node("MaxPool", ["r1"], ["p1"], name="pool1", kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Conv", ["p1", "conv2_w", "conv2_b"], ["c2"], name="conv2",
                         kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[2, 2]),
        helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
        helper.make_node("GlobalAveragePool", ["r2"], ["g"], name="gap"),
        helper.make_node("Flatten", ["g"], ["f"], name="flatten", axis=1),
        helper.make_node("Gemm", ["f", "fc_w", "fc_b"], ["logits"], name="fc", transB=1),
    ]
    graph = helper.make_graph(
        nodes, "small_cnn",
        [helper.make_tensor_value_info("data", TensorProto.FLOAT, [1, 3, 32, 32])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, 10])],
        initializer=[weight("conv1_w", 16, 3, 3, 3), weight("conv1_b", 16),
                     weight("conv2_w", 32, 16, 3, 3), weight("conv2_b", 32),
                     weight("fc_w", 10, 32), weight("fc_b", 10)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8  # onnxruntime 1.3x cannot read onnx 1.23's default IR version
    onnx.checker.check_model(model)
    return model


if __name__ == "__main__":
    path = Path(__file__).with_name("small_cnn.onnx")
    onnx.save(small_cnn(), path)
    print(f"wrote {path}")
