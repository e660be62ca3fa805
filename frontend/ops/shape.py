"""ONNX operators of layout and data movement: reshapes, transposes, concatenation,
slicing, gathering, padding, tiling.

The shapes, axes and pads they take as inputs must be known at import time
(`shape_inputs`); a constant Gather along one axis with evenly spaced indices is a slice.
"""

from __future__ import annotations

from collections.abc import Sequence
from math import prod

import numpy as np
import onnx
from xdsl.ir import SSAValue

from xweave.dialects import graph
from xweave.dialects.graph.shapes import broadcast_shape, gather_output_shape
from xweave.errors import ModelError
from xweave.frontend.importer import Importer, element, normalize_axes
from xweave.frontend.registry import NodeCheck, onnx_op


@onnx_op("Flatten")
def convert_flatten(imp: Importer, node: onnx.NodeProto, attrs: dict) -> SSAValue:
    """A reshape to 2-D at `axis`."""
    shape = imp.shape(node.input[0])
    axis = attrs.get("axis", 1)
    axis = axis + len(shape) if axis < 0 else axis
    return imp.reshaped(node.input[0], (prod(shape[:axis]), prod(shape[axis:])))


@onnx_op("Reshape", shape_inputs=(1,))
def convert_reshape(imp: Importer, node: onnx.NodeProto, attrs: dict) -> SSAValue:
    """A reshape to a constant shape (0 copies a dimension, -1 is inferred)."""
    shape = imp.shape(node.input[0])
    if imp.opset < 5:
        spec = [int(d) for d in attrs["shape"]]
    else:
        spec = [int(d) for d in imp.const_array(node, node.input[1]).reshape(-1)]
    keep_zero = attrs.get("allowzero", 0)  # opset 14: 0 means a zero-size dimension
    target = [shape[i] if d == 0 and not keep_zero else d for i, d in enumerate(spec)]
    if target.count(-1) > 1:
        raise ModelError(f"Reshape '{node.name}': more than one -1 in shape {spec}")
    if -1 in target:
        known = prod(d for d in target if d != -1)
        target[target.index(-1)] = prod(shape) // known if known else 0
    if prod(target) != prod(shape):
        raise ModelError(f"Reshape '{node.name}': cannot reshape {list(shape)} to {spec}")
    return imp.reshaped(node.input[0], target)


@onnx_op("Squeeze", shape_inputs=(1,))
def convert_squeeze(imp: Importer, node: onnx.NodeProto, attrs: dict) -> SSAValue:
    """A reshape dropping the given unit axes (all unit axes if none)."""
    shape = imp.shape(node.input[0])
    axes = imp.axes(node, attrs, 13)
    if axes is None:
        axes = [d for d, e in enumerate(shape) if e == 1]
    axes = normalize_axes(axes, len(shape), node)
    return imp.reshaped(node.input[0], [e for d, e in enumerate(shape) if d not in axes])


@onnx_op("Unsqueeze", shape_inputs=(1,))
def convert_unsqueeze(imp: Importer, node: onnx.NodeProto, attrs: dict) -> SSAValue:
    """A reshape inserting unit axes."""
    shape = list(imp.shape(node.input[0]))
    axes = imp.axes(node, attrs, 13) or []
    for a in sorted(normalize_axes(axes, len(shape) + len(axes), node)):
        shape.insert(a, 1)
    return imp.reshaped(node.input[0], shape)


@onnx_op("Transpose")
def convert_transpose(imp: Importer, node: onnx.NodeProto, attrs: dict) -> SSAValue:
    """graph.transpose (reversed axes by default; none for the identity)."""
    rank = len(imp.shape(node.input[0]))
    perm = list(attrs.get("perm", range(rank - 1, -1, -1)))
    if perm == list(range(rank)):
        return imp.value(node.input[0])
    return imp.emit(graph.TransposeOp(imp.value(node.input[0]), perm))


@onnx_op("Concat")
def convert_concat(imp: Importer, node: onnx.NodeProto, attrs: dict) -> SSAValue:
    """graph.concat of the non-empty inputs."""
    names = [n for n in node.input if n]
    rank = len(imp.shape(names[0]))
    (axis,) = normalize_axes([attrs.get("axis", 1 if imp.opset < 4 else 0)], rank, node)
    names = [n for n in names if imp.shape(n)[axis] > 0]
    if not names:
        raise imp.unsupported(node, "an empty result (every input is empty)")
    values = [imp.value(n) for n in names]
    if len({element(v) for v in values}) > 1:
        raise imp.unsupported(node, "inputs of different element types")
    return values[0] if len(values) == 1 else imp.emit(graph.ConcatOp(values, axis))


def _slice(imp: Importer, value: SSAValue, ranges: Sequence[range]) -> SSAValue:
    """`value` restricted to one range of indices per dimension."""
    shape = imp.shape_of_value(value)
    if all(r == range(e) for r, e in zip(ranges, shape)):
        return value
    if any(len(r) == 0 for r in ranges):
        raise imp.unsupported(imp.node, f"an empty result (a slice of {list(shape)})")
    return imp.emit(graph.SliceOp(value, [r.start for r in ranges], [r.step for r in ranges],
                                   [len(r) for r in ranges]))


@onnx_op("Slice", shape_inputs=(1, 2, 3, 4))
def convert_slice(imp: Importer, node: onnx.NodeProto, attrs: dict) -> SSAValue:
    """graph.slice by constant starts, ends, axes and steps (attributes before opset 10)."""
    shape = imp.shape(node.input[0])
    if imp.opset < 10:
        starts, ends = attrs["starts"], attrs["ends"]
        axes, steps = attrs.get("axes"), None
    else:
        starts = imp.const_array(node, node.input[1]).reshape(-1).tolist()
        ends = imp.const_array(node, node.input[2]).reshape(-1).tolist()
        axes_array, steps_array = imp.optional_const(node, 3), imp.optional_const(node, 4)
        axes = None if axes_array is None else axes_array.reshape(-1).tolist()
        steps = None if steps_array is None else steps_array.reshape(-1).tolist()
    axes = list(range(len(starts))) if axes is None else normalize_axes(axes, len(shape), node)
    steps = steps or [1] * len(starts)
    ranges = [range(e) for e in shape]
    for axis, start, end, step in zip(axes, starts, ends, steps):
        ranges[axis] = range(shape[axis])[slice(int(start), int(end), int(step))]
    return _slice(imp, imp.value(node.input[0]), ranges)


@onnx_op("Split", shape_inputs=(1,))
def convert_split(imp: Importer, node: onnx.NodeProto, attrs: dict) -> list[SSAValue]:
    """One slice per output, by constant sizes or in equal parts."""
    shape = imp.shape(node.input[0])
    (axis,) = normalize_axes([attrs.get("axis", 0)], len(shape), node)
    outputs = len(node.output)
    if imp.opset >= 13:
        array = imp.optional_const(node, 1)
        sizes = None if array is None else [int(s) for s in array.reshape(-1)]
    else:
        sizes = list(attrs["split"]) if "split" in attrs else None
        if sizes is None and len(node.input) > 1 and node.input[1]:  # opset 2-12 input form
            sizes = [int(s) for s in imp.const_array(node, node.input[1]).reshape(-1)]
    if sizes is None:
        chunk = -(-shape[axis] // outputs)
        sizes = [chunk] * (outputs - 1) + [shape[axis] - chunk * (outputs - 1)]
    if sum(sizes) != shape[axis] or len(sizes) != outputs:
        raise ModelError(f"Split '{node.name}': sizes {sizes} do not split {shape[axis]}")
    value, results, start = imp.value(node.input[0]), [], 0
    for size in sizes:
        ranges = [range(e) for e in shape]
        ranges[axis] = range(start, start + size)
        results.append(_slice(imp, value, ranges))
        start += size
    return results


@onnx_op("Gather")
def convert_gather(imp: Importer, node: onnx.NodeProto, attrs: dict) -> SSAValue:
    """A slice for constant evenly spaced indices along one axis, graph.gather otherwise."""
    data, indices = node.input[0], node.input[1]
    shape = imp.shape(data)
    (axis,) = normalize_axes([attrs.get("axis", 0)], len(shape), node)
    if indices in imp.constants:
        idx = imp.const_array(node, indices).astype(np.int64)
        idx = np.where(idx < 0, idx + shape[axis], idx)
        if idx.min(initial=0) < 0 or idx.max(initial=0) >= shape[axis]:
            raise ModelError(f"Gather '{node.name}': indices out of range for {shape[axis]}")
        steps = np.diff(idx.reshape(-1))
        if idx.ndim <= 1 and idx.size and (idx.size == 1 or (steps == steps[0]).all() and steps[0]):
            step = int(steps[0]) if idx.size > 1 else 1
            ranges = [range(e) for e in shape]
            ranges[axis] = range(int(idx.reshape(-1)[0]), int(idx.reshape(-1)[-1]) + step, step)
            sliced = _slice(imp, imp.value(data), ranges)
            out = gather_output_shape(shape, idx.shape, axis)
            return imp.reshape(sliced, out)
        imp.constants[indices] = idx
    index_value = imp.data(node, indices, "i")
    return imp.emit(graph.GatherOp(imp.value(data), index_value, axis))


def _check_pad(check: NodeCheck) -> str | None:
    mode = check.attrs.get("mode", "constant")
    return f"mode '{mode}'" if mode not in graph.PAD_MODES else None


@onnx_op("Pad", check=_check_pad, shape_inputs=(1, 3), constant_inputs=(2,),
         constant_reason="a non-constant pad value")
def convert_pad(imp: Importer, node: onnx.NodeProto, attrs: dict) -> SSAValue:
    """graph.pad by constant pads (negative pads crop)."""
    x = node.input[0]
    shape = imp.shape(x)
    rank = len(shape)
    mode = attrs.get("mode", "constant")
    if imp.opset < 11:
        pads = list(attrs.get("pads", attrs.get("paddings", [0] * 2 * rank)))
        value = float(attrs.get("value", 0.0))
    else:
        pads = [int(p) for p in imp.const_array(node, node.input[1]).reshape(-1)]
        constant_value = imp.optional_const(node, 2)
        value = 0.0 if constant_value is None else float(constant_value.reshape(-1)[0])
        axes_array = imp.optional_const(node, 3)
        if axes_array is not None:
            axes = normalize_axes(axes_array.reshape(-1).tolist(), rank, node)
            full = [0] * 2 * rank
            for i, a in enumerate(axes):
                full[a], full[a + rank] = pads[i], pads[i + len(axes)]
            pads = full
    result = imp.data(node, x)
    if any(p > 0 for p in pads):
        grow = [max(p, 0) for p in pads]
        result = imp.emit(graph.PadOp(result, grow, mode, value))
    if any(p < 0 for p in pads):  # negative pads crop
        padded = imp.shape_of_value(result)
        ranges = [range(-min(pads[d], 0), padded[d] + min(pads[d + rank], 0))
                  for d in range(rank)]
        result = _slice(imp, result, ranges)
    return result


@onnx_op("Tile", shape_inputs=(1,))
def convert_tile(imp: Importer, node: onnx.NodeProto, attrs: dict) -> SSAValue:
    """graph.tile by constant repeats."""
    repeats = [int(r) for r in imp.const_array(node, node.input[1]).reshape(-1)]
    x = imp.value(node.input[0])
    if all(r == 1 for r in repeats):
        return x
    return imp.emit(graph.TileOp(x, repeats))


@onnx_op("Expand", shape_inputs=(1,))
def convert_expand(imp: Importer, node: onnx.NodeProto, attrs: dict) -> SSAValue:
    """graph.broadcast_to a constant shape."""
    target = [int(d) for d in imp.const_array(node, node.input[1]).reshape(-1)]
    shape = broadcast_shape(imp.shape(node.input[0]), target)
    if shape is None:
        raise ModelError(f"Expand '{node.name}': cannot broadcast "
                         f"{list(imp.shape(node.input[0]))} to {target}")
    x = imp.value(node.input[0])
    if shape == imp.shape_of_value(x):
        return x
    return imp.emit(graph.BroadcastToOp(x, shape))


@onnx_op("DepthToSpace")
def convert_depth_to_space(imp: Importer, node: onnx.NodeProto, attrs: dict) -> SSAValue:
    """Reshape, transpose, reshape (DCR or CRD order)."""
    n, c, h, w = imp.shape(node.input[0])
    b = attrs["blocksize"]
    x = imp.value(node.input[0])
    if attrs.get("mode", "DCR") == "DCR":
        t = imp.emit(graph.TransposeOp(imp.reshape(x, (n, b, b, c // b**2, h, w)),
                                        (0, 3, 4, 1, 5, 2)))
    else:
        t = imp.emit(graph.TransposeOp(imp.reshape(x, (n, c // b**2, b, b, h, w)),
                                        (0, 1, 4, 2, 5, 3)))
    return imp.reshape(t, (n, c // b**2, h * b, w * b))


@onnx_op("SpaceToDepth")
def convert_space_to_depth(imp: Importer, node: onnx.NodeProto, attrs: dict) -> SSAValue:
    """Reshape, transpose, reshape."""
    n, c, h, w = imp.shape(node.input[0])
    b = attrs["blocksize"]
    x = imp.reshape(imp.value(node.input[0]), (n, c, h // b, b, w // b, b))
    perm = (0, 3, 5, 1, 2, 4) if attrs.get("mode", "DCR") == "DCR" else (0, 1, 3, 5, 2, 4)
    t = imp.emit(graph.TransposeOp(x, perm))
    return imp.reshape(t, (n, c * b * b, h // b, w // b))
