"""Whole models on an accelerator: quantize the layers it takes, cut the model.

The model-level half of the designer API (`accel.api` is the kernel-level half). An
accelerator that runs int8 conv2d/dense layers of a model, the rest on the CPU,
describes itself to the pipeline as a `pipeline.OffloadTarget` whose stages end with
`QuantizeLayersPass` and whose `partition` calls `partition` here with its own layer
objects:

1. `QuantizeLayersPass` calibrates every conv2d/dense layer on sample inputs
   (`passes/quantize.py`), keeps the layers the accelerator takes (its `takes`
   predicate) and rewrites them with `graph-quantize` into calls of int8 layer
   functions;
2. `partition` walks @main in order; every int8 layer call becomes an
   `AcceleratorStep` (the accelerator's layer object, made from the call's int8 weights
   and int32 bias), every maximal run of other ops a `CpuSegment` (a graph-dialect
   module of its own, compiled later through the CPU stages). The quantize/dequantize
   ops at the boundaries belong to the CPU segments.

The plan names every tensor crossing a step boundary by its position in @main (`v12`);
`runtime.hetero.HeteroModule` runs the steps. This is TVM's partitioning for an
external codegen.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, ModuleOp, StringAttr
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass

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
from xweave.runtime import hetero

MakeLayer = Callable[[str, Int8Layer, np.ndarray, np.ndarray], Any]
"""`make_layer(name, int8_layer, int8 weight, int32 bias)` -> the accelerator's layer
object (`run(x) -> (y, report)`, `describe()`, `to_json()`, `arrays()`)."""


@dataclass(frozen=True)
class QuantizeLayersPass(ModulePass):
    """Calibrate on `calibration` (see `passes.quantize.load_samples`), then quantize
    the conv2d/dense layers with at least `min_in_channels` input channels that `takes`
    accepts (default: all of them) into int8 layer calls."""

    name = "quantize-layers"

    calibration: Any = None
    min_in_channels: int = 4
    takes: Callable[[Operation], bool] | None = None

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.calibration is None:
            raise QuantizationError("quantizing for an accelerator needs calibration inputs "
                                    "(--calibration FILE.npz)")
        calibrate(op, self.calibration, min_in_channels=1)
        for layer in _main(op).body.block.ops:
            if CALIBRATION_ATTR in layer.attributes and not (
                    quantizable(layer, self.min_in_channels)
                    and (self.takes is None or self.takes(layer))):
                del layer.attributes[CALIBRATION_ATTR]
        GraphQuantizePass(min_in_channels=self.min_in_channels).apply(ctx, op)

    def __str__(self) -> str:  # its samples are arrays: no pass-spec text replays it
        return f"{self.name}{{min-in-channels={self.min_in_channels}}}"


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
class AcceleratorStep(hetero.AcceleratorStep):
    """One offloaded layer: reads tensor `input`, writes tensor `output` (the step a
    `HeteroModule` runs, plus what the plan knows of its input)."""

    input_shape: tuple[int, ...] = ()


@dataclass
class OffloadPlan:
    """The steps of a partitioned model, in execution order."""

    accelerator: str
    steps: list[CpuSegment | AcceleratorStep]
    inputs: list[str]
    """The tensor each model input is (in @main's order)."""
    outputs: list[str]
    """The tensor each model output is."""
    quantized: ModuleOp | None = None
    """The quantized graph module the plan was cut from (for dumps and emulation)."""
    layers: list[Any] = field(default_factory=list)

    def summary(self) -> str:
        lines = []
        for step in self.steps:
            if isinstance(step, CpuSegment):
                ops = [op.name for op in _main(step.module).body.block.ops
                       if not isinstance(op, graph.ConstantOp | func.ReturnOp)]
                lines.append(f"cpu   {', '.join(step.inputs)} -> {', '.join(step.outputs)}: "
                             + " ".join(ops))
            else:
                lines.append(f"{self.accelerator}   {step.input} -> {step.output}: "
                             f"{step.layer.name} ({step.layer.describe()})")
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


def partition(module: ModuleOp, accelerator: str, make_layer: MakeLayer) -> OffloadPlan:
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
    layers: list[Any] = []
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
            layer = make_layer(callee, read_int8_layer(functions[callee]),
                               constant_value(w.owner),  # pyright: ignore[reportArgumentType]
                               constant_value(b.owner))  # pyright: ignore[reportArgumentType]
            layers.append(layer)
            steps.append(AcceleratorStep(layer, names[x], names[run.results[0]],
                                         tuple(x.type.get_shape())))  # pyright: ignore
    return OffloadPlan(accelerator, steps, [names[a] for a in main.body.block.args],
                       [names[v] for v in ret.operands], module, layers)
