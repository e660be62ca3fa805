"""Whole models on the VTA-like accelerator: choose layers, quantize, partition.

`compile_for_vta(module, calibration)` takes a float graph-dialect model to an
`OffloadPlan`, the analogue of TVM's partitioning for an external codegen:

1. calibrate every conv2d/dense layer on the sample inputs (`passes/quantize.py`);
2. keep only the layers the accelerator takes (`vta_supports`: an ungrouped conv2d with
   at least `min_in_channels` input channels, so an RGB input conv stays on the CPU, or a
   dense layer) and rewrite them with `graph-quantize` into calls of int8 layer
   functions;
3. `partition`: walk @main in order; every int8 layer call becomes an accelerator step
   (a `VtaLayer` holding its int8 weights and int32 bias), every maximal run of other ops
   a CPU segment (a graph-dialect module of its own, compiled later through the LLVM
   pipeline). The quantize/dequantize ops at the boundaries belong to the CPU segments.

The plan names every tensor crossing a step boundary by its position in @main (`v12`);
`xweave.runtime.hetero.HeteroModule` compiles the CPU segments and runs the steps.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, ModuleOp, StringAttr
from xdsl.ir import Block, Operation, Region, SSAValue

from xweave.accel.vta.config import DEFAULT, HardwareConfig
from xweave.dialects import graph
from xweave.dialects.graph.constants import constant_value
from xweave.passes.quantize import (
    CALIBRATION_ATTR,
    GraphQuantizePass,
    Int8Layer,
    QuantizationError,
    calibrate,
    int8_layer_functions,
    quantizable,
    read_int8_layer,
)

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
        from xweave.accel.vta import layers

        lay = self.layer
        if lay.kind == "conv2d":
            return layers.conv2d_int8(x, self.weight, self.bias, lay.strides, lay.pads,
                                      lay.shift, lay.relu, config=self.config,
                                      virtual_threads=self.virtual_threads)
        return layers.dense_int8(x, self.weight, self.bias, lay.shift, lay.relu,
                                 config=self.config, virtual_threads=self.virtual_threads)

    def reference(self, x: np.ndarray) -> np.ndarray:
        """The numpy int8 emulation of the layer (what `run` must match bit for bit)."""
        from xweave.accel.vta import layers

        lay = self.layer
        if lay.kind == "conv2d":
            return layers.reference_conv2d_int8(x, self.weight, self.bias, lay.strides,
                                                lay.pads, lay.shift, lay.relu)
        return layers.reference_dense_int8(x, self.weight, self.bias, lay.shift, lay.relu)

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
# The plan
# --------------------------------------------------------------------------------------


@dataclass
class CpuSegment:
    """A run of @main's ops for the CPU: a graph-dialect module whose inputs and outputs
    are the plan's tensors `inputs` / `outputs`."""

    module: ModuleOp
    inputs: list[str]
    outputs: list[str]


@dataclass
class AcceleratorStep:
    """One offloaded layer: reads tensor `input`, writes tensor `output`."""

    layer: VtaLayer
    input: str
    output: str


@dataclass
class OffloadPlan:
    """The steps of a partitioned model, in execution order."""

    steps: list[CpuSegment | AcceleratorStep]
    inputs: list[str]
    """The tensor each model input is (in @main's order)."""
    outputs: list[str]
    """The tensor each model output is."""
    quantized: ModuleOp | None = None
    """The quantized graph module the plan was cut from (for dumps and emulation)."""
    layers: list[VtaLayer] = field(default_factory=list)

    def summary(self) -> str:
        lines = []
        for step in self.steps:
            if isinstance(step, CpuSegment):
                ops = [op.name for op in _main(step.module).body.block.ops
                       if not isinstance(op, graph.ConstantOp | func.ReturnOp)]
                lines.append(f"cpu   {', '.join(step.inputs)} -> {', '.join(step.outputs)}: "
                             + " ".join(ops))
            else:
                lines.append(f"{ACCELERATOR}   {step.input} -> {step.output}: {step.layer.name} "
                             f"({step.layer.describe()})")
        return "\n".join(lines)


def _main(module: ModuleOp) -> func.FuncOp:
    for op in module.ops:
        if isinstance(op, func.FuncOp) and op.sym_name.data == "main":
            return op
    raise QuantizationError("the module has no @main function")


def _tensor_names(main: func.FuncOp) -> dict[SSAValue, str]:
    names: dict[SSAValue, str] = {}
    for arg in main.body.block.args:
        names[arg] = f"v{len(names)}"
    for op in main.body.block.ops:
        for r in op.results:
            names[r] = f"v{len(names)}"
    return names


def _segment_module(ops: list[Operation], inputs: list[SSAValue], outputs: list[SSAValue],
                    names: dict[SSAValue, str]) -> ModuleOp:
    block = Block(arg_types=[v.type for v in inputs])
    mapping: dict[SSAValue, SSAValue] = dict(zip(inputs, block.args))
    for op in ops:
        for operand in op.operands:  # constants read by the segment, cloned in once
            if operand not in mapping and isinstance(operand.owner, graph.ConstantOp):
                block.add_op(operand.owner.clone(value_mapper=mapping))
        block.add_op(op.clone(value_mapper=mapping))
    block.add_op(func.ReturnOp(*(mapping[v] for v in outputs)))
    main = func.FuncOp("main", ([v.type for v in inputs], [v.type for v in outputs]),
                       Region(block))
    main.attributes["xweave.input_names"] = ArrayAttr([StringAttr(names[v]) for v in inputs])
    main.attributes["xweave.output_names"] = ArrayAttr([StringAttr(names[v]) for v in outputs])
    return ModuleOp([main])


def partition(module: ModuleOp, config: HardwareConfig = DEFAULT, virtual_threads: int = 2
              ) -> OffloadPlan:
    """Cut a quantized module into CPU segments and accelerator steps (see the module doc)."""
    main = _main(module)
    functions = int8_layer_functions(module)
    names = _tensor_names(main)
    ops = list(main.body.block.ops)
    ret = ops[-1]
    assert isinstance(ret, func.ReturnOp)

    def is_layer(op: Operation) -> bool:
        return isinstance(op, func.CallOp) and op.callee.root_reference.data in functions

    # Where each value is read: by op index (the return counts as the last op).
    position = {op: i for i, op in enumerate(ops)}
    runs: list[list[Operation] | Operation] = []
    for op in ops[:-1]:
        if isinstance(op, graph.ConstantOp):
            continue
        if is_layer(op):
            runs.append(op)
        elif isinstance(op, func.CallOp | func.FuncOp) or not isinstance(op, graph.GraphOperation):
            raise QuantizationError(f"@main: cannot partition '{op.name}'")
        elif runs and isinstance(runs[-1], list):
            runs[-1].append(op)
        else:
            runs.append([op])

    for v in ret.operands:
        if isinstance(v.owner, graph.ConstantOp):
            raise QuantizationError("@main returns a constant; nothing to compile for it")

    steps: list[CpuSegment | AcceleratorStep] = []
    layers: list[VtaLayer] = []
    for run in runs:
        if isinstance(run, list):
            inside = set(run)
            inputs: list[SSAValue] = []
            for op in run:
                for v in op.operands:
                    if (v.owner not in inside and not isinstance(v.owner, graph.ConstantOp)
                            and v not in inputs):
                        inputs.append(v)
            last = position[run[-1]]
            outputs = [r for op in run for r in op.results
                       if any(position[u.operation] > last for u in r.uses)]
            steps.append(CpuSegment(_segment_module(run, inputs, outputs, names),
                                    [names[v] for v in inputs], [names[v] for v in outputs]))
        else:
            callee = run.callee.root_reference.data  # pyright: ignore[reportAttributeAccessIssue]
            x, w, b = run.operands
            for what, v in (("weight", w), ("bias", b)):
                if not isinstance(v.owner, graph.ConstantOp):
                    raise QuantizationError(f"@main: the {what} of the call of @{callee} "
                                            "must be a graph.constant")
            layer = VtaLayer(callee, read_int8_layer(functions[callee]),
                             constant_value(w.owner),  # pyright: ignore[reportArgumentType]
                             constant_value(b.owner),  # pyright: ignore[reportArgumentType]
                             config, virtual_threads)
            layers.append(layer)
            steps.append(AcceleratorStep(layer, names[x], names[run.results[0]]))
    return OffloadPlan(steps, [names[a] for a in main.body.block.args],
                       [names[v] for v in ret.operands], module, layers)


def compile_for_vta(
    module: ModuleOp,
    calibration,
    *,
    config: HardwareConfig = DEFAULT,
    virtual_threads: int = 2,
    min_in_channels: int = 4,
    optimize: bool = True,
) -> OffloadPlan:
    """Optimize the float graph (the pipeline's graph-opt stage: e.g. batch norms fold into
    the conv weights first), calibrate on `calibration` (see
    `passes.quantize.load_samples`), quantize the layers the accelerator takes, and
    partition. `module` (float graph dialect) is rewritten in place."""
    from xdsl.passes import PassPipeline

    from xweave.context import make_context
    from xweave.pipeline import llvm_stages

    if calibration is None:
        raise QuantizationError("target vta needs calibration inputs (--calibration FILE.npz)")
    if not isinstance(config, HardwareConfig):
        raise QuantizationError(f"config must be a HardwareConfig, got {type(config).__name__}")
    if not isinstance(virtual_threads, int) or virtual_threads < 1:
        raise QuantizationError(f"virtual_threads must be an int >= 1, got {virtual_threads!r}")
    ctx = make_context()
    if optimize:
        for stage in llvm_stages():
            if stage.name == "graph-opt":
                PassPipeline(stage.passes).apply(ctx, module)
    calibrate(module, calibration, min_in_channels=1)
    for op in _main(module).body.block.ops:
        if CALIBRATION_ATTR in op.attributes and not vta_supports(op, config, min_in_channels):
            del op.attributes[CALIBRATION_ATTR]
    GraphQuantizePass(min_in_channels=min_in_channels).apply(ctx, module)
    module.verify()
    return partition(module, config, virtual_threads)
