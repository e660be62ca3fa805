"""Whole models on the VTA-like accelerator: the `vta` target of `xweave.build`.

VTA registers itself as a `pipeline.OffloadTarget` (see `accel/offload.py` for the
machinery every accelerator shares): its stages are the CPU pipeline's graph-opt (batch
norms fold into the conv weights first) and `quantized` (calibrate, then quantize the
layers VTA takes, `vta_supports`: an ungrouped conv2d with at least `min_in_channels`
input channels, so an RGB input conv stays on the CPU, or a dense layer); its partition
makes a `VtaLayer` of every int8 layer, run on the simulator. `compile_for_vta` runs
those stages and the partition alone (no CPU code), for inspection and tests.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation

from xweave.accel.offload import OffloadPlan, QuantizeLayersPass, partition
from xweave.accel.vta import layers
from xweave.accel.vta.config import DEFAULT, HardwareConfig
from xweave.passes.quantize import Int8Layer, QuantizationError, quantizable
from xweave.pipeline import CompileOptions, OffloadTarget, Stage, lower, stages_until
from xweave.target import as_target

ACCELERATOR = "vta"


# --------------------------------------------------------------------------------------
# The accelerator step
# --------------------------------------------------------------------------------------


@dataclass
class VtaLayer:
    """One int8 conv2d/dense layer offloaded to the accelerator, ready to run."""

    name: str
    layer: Int8Layer
    weight: np.ndarray
    """int8, OIHW (conv2d) or [M, K] (dense)."""
    bias: np.ndarray
    """int32 [O]."""
    config: HardwareConfig = DEFAULT
    virtual_threads: int = 2

    accelerator = ACCELERATOR

    def run(self, x: np.ndarray) -> tuple[np.ndarray, Any]:
        """Simulate the layer on `x` (int8) -> (int8 output, the simulator's SimReport)."""
        lay = self.layer
        if lay.kind == "conv2d":
            return layers.conv2d_int8(x, self.weight, self.bias, lay.strides, lay.pads,
                                      lay.shift, lay.relu, config=self.config,
                                      virtual_threads=self.virtual_threads)
        return layers.dense_int8(x, self.weight, self.bias, lay.shift, lay.relu,
                                 config=self.config, virtual_threads=self.virtual_threads)

    def reference(self, x: np.ndarray) -> np.ndarray:
        """The numpy int8 emulation of the layer (what `run` must match bit for bit)."""
        lay = self.layer
        if lay.kind == "conv2d":
            return layers.reference_conv2d_int8(x, self.weight, self.bias, lay.strides,
                                                lay.pads, lay.shift, lay.relu)
        return layers.reference_dense_int8(x, self.weight, self.bias, lay.shift, lay.relu)

    def listing(self, input_shape: tuple[int, ...]) -> str:
        """The accelerator program `run` executes on an input of `input_shape`,
        disassembled (what `--dump-ir` writes per layer)."""
        lay = self.layer
        bias = self.bias is not None
        if lay.kind == "conv2d":
            return layers.conv2d_listing(input_shape, self.weight.shape, bias, lay.strides,
                                         lay.pads, lay.shift, lay.relu, self.config,
                                         self.virtual_threads)
        n, k = input_shape  # a dense layer runs as a 1x1 conv whose width is the batch
        return layers.conv2d_listing((1, k, 1, n), (*self.weight.shape, 1, 1), bias, 1, 0,
                                     lay.shift, lay.relu, self.config, self.virtual_threads)

    def describe(self) -> str:
        lay = self.layer
        w = "x".join(map(str, self.weight.shape))
        extra = f" strides {list(lay.strides)} pads {list(lay.pads)}" if lay.kind == "conv2d" else ""
        return f"{lay.kind} w {w}{extra} shift {lay.shift}{' relu' if lay.relu else ''}"

    # --- export / load ----------------------------------------------------------------

    def to_json(self) -> dict[str, Any]:
        lay = self.layer
        return {"name": self.name, "kind": lay.kind, "shift": lay.shift, "relu": lay.relu,
                "strides": list(lay.strides), "pads": list(lay.pads),
                "config": self.config.to_dict(), "virtual_threads": self.virtual_threads}

    def arrays(self) -> dict[str, np.ndarray]:
        return {"weight": self.weight, "bias": self.bias}

    @staticmethod
    def from_json(d: dict[str, Any], arrays: dict[str, np.ndarray]) -> VtaLayer:
        layer = Int8Layer(d["kind"], int(d["shift"]), bool(d["relu"]), tuple(d["strides"]),
                          tuple(d["pads"]))
        return VtaLayer(d["name"], layer, arrays["weight"], arrays["bias"],
                        HardwareConfig.from_dict(d["config"]), int(d["virtual_threads"]))


def vta_supports(op: Operation, config: HardwareConfig = DEFAULT, min_in_channels: int = 4
                 ) -> bool:
    """Whether the accelerator takes this float layer once quantized."""
    return quantizable(op, min_in_channels)


# --------------------------------------------------------------------------------------
# The target
# --------------------------------------------------------------------------------------

OPTIONS = ("calibration", "config", "virtual_threads", "min_in_channels")
"""What `xweave.build(..., target="vta", **options)` takes (`CompileOptions.accelerator`)."""


def _settings(options: CompileOptions) -> tuple[HardwareConfig, int, int]:
    given = options.accelerator
    config = given.get("config", DEFAULT)
    virtual_threads = given.get("virtual_threads", 2)
    if not isinstance(config, HardwareConfig):
        raise QuantizationError(f"config must be a HardwareConfig, got {type(config).__name__}")
    if not isinstance(virtual_threads, int) or virtual_threads < 1:
        raise QuantizationError(f"virtual_threads must be an int >= 1, got {virtual_threads!r}")
    return config, virtual_threads, given.get("min_in_channels", 4)


def vta_stages(options: CompileOptions) -> list[Stage]:
    """The CPU pipeline's graph-opt, then `quantized`: the layers VTA takes in int8."""
    config, _, min_in_channels = _settings(options)
    if options.accelerator.get("calibration") is None:
        raise QuantizationError("target vta needs calibration inputs (--calibration FILE.npz)")
    quantize = QuantizeLayersPass(options.accelerator["calibration"], min_in_channels,
                                  lambda op: vta_supports(op, config, min_in_channels))
    return [*stages_until(options.replace(target=None), "graph-opt"),
            Stage("quantized", (quantize,))]


def vta_partition(module: ModuleOp, options: CompileOptions) -> OffloadPlan:
    """Every int8 layer of the quantized `module` a `VtaLayer`, the rest CPU segments."""
    config, virtual_threads, _ = _settings(options)
    return partition(module, ACCELERATOR, lambda name, layer, weight, bias: VtaLayer(
        name, layer, weight, bias, config, virtual_threads))


VTA_TARGET = OffloadTarget(ACCELERATOR, vta_stages, vta_partition, OPTIONS,
                           "int8 conv2d/dense layers on the simulated VTA-like accelerator")


def compile_for_vta(module: ModuleOp, calibration, **options: Any) -> OffloadPlan:
    """VTA's stages and partition of the float graph `module` (rewritten in place), with
    `options` of `OPTIONS` (config, virtual_threads, min_in_channels): the plan
    `xweave.build(..., target="vta")` compiles, without compiling it."""
    compile_options = CompileOptions(as_target(ACCELERATOR),
                                     accelerator={"calibration": calibration, **options})
    VTA_TARGET.check_options(compile_options)
    return vta_partition(lower(module, compile_options), compile_options)
