"""graph-widen-weights: int8 weights of integer layers become int16 on CPUs without VNNI.

The dot product of uint8 data and int8 weights is one instruction with VNNI
(`vpdpbusd`, exact). Without it (AVX2, AVX-512 before Cascade Lake) the int8 form is
`vpmaddubsw`, whose sums of two products saturate at 16 bits (255 * 127 * 2 > 32767),
so weights beyond +-64 would give wrong sums; onnxruntime's `x64quantprecision` mode
converts such weights to uint8 for the same reason. Here every constant int8 weight of
an integer conv2d / conv2d_nchwc / dense becomes int16: the kernels then multiply-add
pairs with `vpmaddwd` (exact, as many multiplies per product), and `IntegerDot` picks
that form from the weights' type.

On a target with VNNI (the module's `xweave.target`, at its vector width) the pass
changes nothing; `force=true` widens anyway (to test or compare the two forms).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import IntegerType, ModuleOp
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from xweave.dialects import graph
from xweave.dialects.graph.constants import constant_value
from xweave.dialects.graph.nn import is_integer_layer
from xweave.dialects.graph.tensors import element_type_of
from xweave.passes.graph_fold_constants import constant_name
from xweave.target import MachineModel, machine_model, target_of

_LAYERS = (graph.Conv2dOp, graph.Conv2dNchwcOp, graph.DenseOp)


def has_vnni(machine: MachineModel) -> bool:
    """Whether the machine has `vpdpbusd` at the vector width its schedules use."""
    features = machine.features
    if machine.lanes == 16:
        return "avx512vnni" in features
    return "avxvnni" in features or {"avx512vnni", "avx512vl"} <= features


@dataclass(frozen=True)
class GraphWidenWeightsPass(ModulePass):
    """Constant int8 weights of integer layers -> int16 where the target lacks VNNI."""

    name = "graph-widen-weights"

    force: bool = False
    """Widen whatever the target."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        target = target_of(op)
        if not self.force and (not target.is_cpu or has_vnni(machine_model(target))):
            return
        widened: dict[graph.ConstantOp, graph.ConstantOp] = {}
        for layer in [o for o in op.walk() if isinstance(o, _LAYERS)]:
            if not is_integer_layer(layer):
                continue
            source = layer.weight.owner  # pyright: ignore[reportAttributeAccessIssue]
            if (not isinstance(source, graph.ConstantOp)
                    or element_type_of(source.result) != IntegerType(8)):
                continue
            if source not in widened:
                new = graph.ConstantOp.from_array(constant_name(source, "i16"),
                                                  constant_value(source).astype(np.int16))
                new.result.name_hint = source.result.name_hint
                Rewriter.insert_op(new, InsertPoint.after(source))
                widened[source] = new
            operands = list(layer.operands)
            operands[1] = widened[source].result
            layer.operands = operands
        for source in widened:
            if not source.result.uses:
                Rewriter.erase_op(source)


__all__ = ["GraphWidenWeightsPass", "has_vnni"]
