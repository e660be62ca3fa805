"""Whole models on the gemm8x8 unit: their dense layers offloaded, the rest on the CPU.

    import gemm8x8                     # registers the unit, its target and its layers
    module = xweave.build("mlp.onnx", target="gemm8x8", calibration=samples)
    outputs = module.run(x=x)          # CPU segments and simulated dense layers, in order

The target is the accelerator API's model-level half (`pipeline.OffloadTarget`, the
shared machinery of `xweave.accel.offload`): its stages are the CPU pipeline's
graph-opt and `quantized` (calibrate on `calibration`, then quantize the dense layers
with at least `min_in_channels` features into int8 layer calls); its partition makes a
`Gemm8x8DenseLayer` of every int8 layer. The unit computes a layer's int32
accumulations (x . w^T + bias, `dense.dense`); the requantization of the int8 layer
(an arithmetic shift, a clip to int8, the fused relu) runs on the host after it, as
the unit has no ALU.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from xdsl.dialects.builtin import ModuleOp

from xweave.accel.offload import OffloadPlan, QuantizeLayersPass, partition
from xweave.dialects import graph
from xweave.passes.quantize import Int8Layer
from xweave.pipeline import CompileOptions, OffloadTarget, Stage, register_target, stages_until
from xweave.runtime.hetero import register_layer_loader

from .accelerator import NAME
from .dense import dense


def requantize(acc: np.ndarray, shift: int, relu: bool) -> np.ndarray:
    """An int8 layer's output from its int32 accumulations: `acc >> shift`, clipped to
    int8, then max(., 0) if the layer took a relu."""
    out = np.clip(acc >> shift, -128, 127)
    return (np.maximum(out, 0) if relu else out).astype(np.int8)


@dataclass
class Gemm8x8DenseLayer:
    """One int8 dense layer offloaded to the unit, ready to run."""

    name: str
    layer: Int8Layer
    weight: np.ndarray
    """int8 [M, K]."""
    bias: np.ndarray
    """int32 [M]."""

    def run(self, x: np.ndarray) -> tuple[np.ndarray, Any]:
        """Simulate the layer on int8 `x` [N, K] -> (int8 [N, M] output, the unit's report)."""
        acc, report = dense(x, self.weight, self.bias)
        return requantize(acc, self.layer.shift, self.layer.relu), report

    def reference(self, x: np.ndarray) -> np.ndarray:
        """The numpy int8 emulation of the layer (what `run` must match bit for bit)."""
        acc = x.astype(np.int32) @ self.weight.astype(np.int32).T + self.bias
        return requantize(acc, self.layer.shift, self.layer.relu)

    def describe(self) -> str:
        w = "x".join(map(str, self.weight.shape))
        return f"dense w {w} shift {self.layer.shift}{' relu' if self.layer.relu else ''}"

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "shift": self.layer.shift, "relu": self.layer.relu}

    def arrays(self) -> dict[str, np.ndarray]:
        return {"weight": self.weight, "bias": self.bias}

    @staticmethod
    def from_json(d: dict[str, Any], arrays: dict[str, np.ndarray]) -> Gemm8x8DenseLayer:
        return Gemm8x8DenseLayer(d["name"], Int8Layer("dense", int(d["shift"]), bool(d["relu"])),
                                 arrays["weight"], arrays["bias"])


def stages(options: CompileOptions) -> list[Stage]:
    """The CPU pipeline's graph-opt, then `quantized`: the dense layers in int8."""
    quantize = QuantizeLayersPass(options.accelerator.get("calibration"),
                                  options.accelerator.get("min_in_channels", 4),
                                  lambda op: isinstance(op, graph.DenseOp))
    return [*stages_until(options.replace(target=None), "graph-opt"), Stage("quantized", (quantize,))]


def cut(module: ModuleOp, options: CompileOptions) -> OffloadPlan:
    """Every int8 dense layer of the quantized `module` on the unit, the rest on the CPU."""
    return partition(module, NAME, lambda name, layer, weight, bias: Gemm8x8DenseLayer(
        name, layer, weight, bias))


GEMM8X8_TARGET = register_target(OffloadTarget(
    NAME, stages, cut, options=("calibration", "min_in_channels"),
    doc="int8 dense layers on the simulated 8x8 GEMM unit"))
register_layer_loader(NAME, Gemm8x8DenseLayer)
