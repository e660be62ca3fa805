"""Neural-network ONNX operators: convolution, pooling, normalization, softmax.

1-D convolutions and pools are imported as the 2-D graph ops on [N, C, 1, L] data.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from math import ceil, prod

import numpy as np
import onnx
from xdsl.ir import SSAValue

from xweave.dialects import graph
from xweave.errors import ModelError
from xweave.frontend.importer import Importer, normalize_axes
from xweave.frontend.onnx_checks import check_ranks, check_window
from xweave.frontend.registry import NodeCheck, onnx_op


def _same_pads(
    sizes: Sequence[int], kernel: Sequence[int], strides: Sequence[int],
    dilations: Sequence[int], mode: str,
) -> list[int]:
    """Explicit [begin..., end...] pads for auto_pad SAME_UPPER / SAME_LOWER."""
    begins, ends = [], []
    for size, k, s, d in zip(sizes, kernel, strides, dilations):
        total = max(0, (ceil(size / s) - 1) * s + d * (k - 1) + 1 - size)
        small, large = total // 2, total - total // 2
        begins.append(small if mode == "SAME_UPPER" else large)
        ends.append(large if mode == "SAME_UPPER" else small)
    return begins + ends


def _window_attrs(
    attrs: dict, sizes: Sequence[int], kernel: Sequence[int], dilate: bool = True
) -> tuple[list[int], list[int], list[int]]:
    """(strides, pads [top, left, bottom, right], dilations) of a conv/pool node."""
    strides = list(attrs.get("strides", [1, 1]))
    dilations = list(attrs.get("dilations", [1, 1])) if dilate else [1, 1]
    auto_pad = attrs.get("auto_pad", "NOTSET")
    if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        pads = _same_pads(sizes, kernel, strides, dilations, auto_pad)
    elif auto_pad == "VALID":
        pads = [0, 0, 0, 0]
    else:
        pads = list(attrs.get("pads", [0, 0, 0, 0]))
    return strides, pads, dilations


def _lift_1d(attrs: dict) -> dict:
    """The attributes of a 1-D conv/pool as those of the 2-D op on [N, C, 1, L] data."""
    lifted = dict(attrs)
    for key in ("kernel_shape", "strides", "dilations", "output_padding", "output_shape"):
        if key in attrs:
            lifted[key] = [1, *attrs[key]]
    if "pads" in attrs:
        lifted["pads"] = [0, attrs["pads"][0], 0, attrs["pads"][1]]
    return lifted


def _as_2d(imp: Importer, name: str) -> SSAValue:
    """[N, C, L] data (or [O, C, K] weights) as [N, C, 1, L]."""
    n, c, length = imp.shape(name)
    return imp.reshaped(name, (n, c, 1, length))


def _from_2d(imp: Importer, value: SSAValue) -> SSAValue:
    n, c, _, length = imp.shape_of_value(value)
    return imp.reshape(value, (n, c, length))


def _check_conv(imp: Importer, x: str, w: str, attrs: dict) -> None:
    w_shape = imp.shape(w)
    check_ranks(imp.source, imp.label, imp.shape(x), w_shape, len(w_shape) - 2)
    if "kernel_shape" in attrs and list(attrs["kernel_shape"]) != list(w_shape[2:]):
        raise ModelError(f"{imp.source}: {imp.label}: attribute kernel_shape "
                         f"{list(attrs['kernel_shape'])} differs from the weights' "
                         f"spatial shape {list(w_shape[2:])}")


def _check_conv_rank(check: NodeCheck) -> str | None:
    r = check.rank(1)
    if r is not None and r not in (3, 4):
        return f"{r - 2}-D convolution (only 1-D and 2-D)"
    if (check.node.op_type == "ConvTranspose" and r is None
            and len(check.attrs.get("kernel_shape", (1,))) > 2):
        return f"{len(check.attrs['kernel_shape'])}-D convolution (only 1-D and 2-D)"
    return None


def _conv_operands(imp: Importer, node: onnx.NodeProto, attrs: dict
                   ) -> tuple[bool, dict, SSAValue, SSAValue]:
    """A (transposed) convolution's checked data and weight values, 1-D ones as 2-D
    [N, C, 1, L] (with their attributes lifted): (is 1-D, attributes, data, weight)."""
    x, w = node.input[0], node.input[1]
    _check_conv(imp, x, w, attrs)
    if len(imp.shape(w)) == 3:
        return True, _lift_1d(attrs), _as_2d(imp, x), _as_2d(imp, w)
    return False, attrs, imp.data(node, x), imp.data(node, w)


@onnx_op("Conv", check=_check_conv_rank)
def convert_conv(imp: Importer, node: onnx.NodeProto, attrs: dict) -> SSAValue:
    """graph.conv2d (1-D convolutions on [N, C, 1, L] data)."""
    one_d, attrs, xv, wv = _conv_operands(imp, node, attrs)
    kernel = imp.shape_of_value(wv)[2:]
    strides, pads, dilations = _window_attrs(attrs, imp.shape_of_value(xv)[2:], kernel)
    w_shape = imp.shape_of_value(wv)
    check_window(imp.source, imp.label, imp.shape_of_value(xv), kernel, strides, pads,
                 dilations, outer=imp.shape_of_value(xv)[0] * w_shape[0],
                 per_tap=w_shape[1])
    bias = imp.value(node.input[2]) if len(node.input) > 2 and node.input[2] else None
    y = imp.emit(graph.Conv2dOp(
        xv, wv, bias, strides=strides, pads=pads, dilations=dilations,
        groups=attrs.get("group", 1),
    ))  # fmt: skip
    return _from_2d(imp, y) if one_d else y


@onnx_op("ConvTranspose", check=_check_conv_rank)
def convert_conv_transpose(imp: Importer, node: onnx.NodeProto, attrs: dict) -> SSAValue:
    """graph.conv_transpose2d; output_shape and SAME auto_pad become explicit pads."""
    one_d, attrs, xv, wv = _conv_operands(imp, node, attrs)
    sizes = imp.shape_of_value(xv)[2:]
    kernel = imp.shape_of_value(wv)[2:]
    strides = list(attrs.get("strides", [1, 1]))
    dilations = list(attrs.get("dilations", [1, 1]))
    output_padding = list(attrs.get("output_padding", [0, 0]))
    auto_pad = attrs.get("auto_pad", "NOTSET")
    output_shape = attrs.get("output_shape")
    if output_shape is None and auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        output_shape = [s * st for s, st in zip(sizes, strides)]
    if output_shape is not None:
        output_shape = list(output_shape)[-2:]
        begins, ends = [], []
        for i in range(2):
            total = (strides[i] * (sizes[i] - 1) + output_padding[i]
                     + (kernel[i] - 1) * dilations[i] + 1 - output_shape[i])
            if total < 0:
                output_padding[i] -= total
                total = 0
            small, large = total // 2, total - total // 2
            upper = auto_pad != "SAME_LOWER"
            begins.append(small if upper else large)
            ends.append(large if upper else small)
        pads = begins + ends
    elif auto_pad == "VALID":
        pads = [0, 0, 0, 0]
    else:
        pads = list(attrs.get("pads", [0, 0, 0, 0]))
    bias = imp.value(node.input[2]) if len(node.input) > 2 and node.input[2] else None
    y = imp.emit(graph.ConvTranspose2dOp(
        xv, wv, bias, strides=strides, pads=pads, dilations=dilations,
        output_padding=output_padding, groups=attrs.get("group", 1),
    ))  # fmt: skip
    return _from_2d(imp, y) if one_d else y


def _pool(imp: Importer, node: onnx.NodeProto, attrs: dict, make: Callable) -> SSAValue:
    check_ranks(imp.source, imp.label, imp.shape(node.input[0]), None,
                len(attrs["kernel_shape"]))
    one_d = len(attrs["kernel_shape"]) == 1
    if one_d:
        attrs = _lift_1d(attrs)
        x = _as_2d(imp, node.input[0])
    else:
        x = imp.data(node, node.input[0])
    kernel = list(attrs["kernel_shape"])
    dilate = node.op_type == "MaxPool"
    strides, pads, dilations = _window_attrs(attrs, imp.shape_of_value(x)[2:], kernel, dilate)
    check_window(imp.source, imp.label, imp.shape_of_value(x), kernel, strides, pads,
                 dilations, outer=prod(imp.shape_of_value(x)[:2]))
    y = imp.emit(make(x, kernel, strides, pads, dilations, bool(attrs.get("ceil_mode", 0))))
    return _from_2d(imp, y) if one_d else y


def _check_pool(check: NodeCheck) -> str | None:
    attrs = check.attrs
    if len(attrs.get("kernel_shape", ())) not in (1, 2):
        return f"{len(attrs.get('kernel_shape', ()))}-D pooling (only 1-D and 2-D)"
    if check.node.op_type == "MaxPool":
        if attrs.get("storage_order", 0) != 0:
            return "storage_order=1"
        if check.output_used(1):
            return "the Indices output"
    elif any(d != 1 for d in attrs.get("dilations", ())):
        return "dilated average pooling"
    return None


@onnx_op("MaxPool", check=_check_pool)
def convert_max_pool(imp: Importer, node: onnx.NodeProto, attrs: dict) -> SSAValue:
    """graph.max_pool2d (1-D pools on [N, C, 1, L] data)."""
    return _pool(imp, node, attrs, graph.MaxPool2dOp)


@onnx_op("AveragePool", check=_check_pool)
def convert_average_pool(imp: Importer, node: onnx.NodeProto, attrs: dict) -> SSAValue:
    """graph.avg_pool2d, with or without the padding counted."""
    include_pad = bool(attrs.get("count_include_pad", 0))
    return _pool(imp, node, attrs, lambda x, k, s, p, _d, c: graph.AvgPool2dOp(
        x, k, s, p, c, include_pad))


def _global_pool(imp: Importer, node: onnx.NodeProto, cls, kind: str) -> SSAValue:
    x = imp.data(node, node.input[0])
    rank = len(imp.shape_of_value(x))
    if rank == 4:
        return imp.emit(cls(x))
    return imp.emit(graph.ReduceOp(x, kind, range(2, rank), True))


@onnx_op("GlobalAveragePool")
def convert_global_average_pool(imp: Importer, node: onnx.NodeProto, attrs: dict) -> SSAValue:
    """graph.global_avg_pool2d on 4-D data, a mean over the spatial axes otherwise."""
    return _global_pool(imp, node, graph.GlobalAvgPool2dOp, "mean")


@onnx_op("GlobalMaxPool")
def convert_global_max_pool(imp: Importer, node: onnx.NodeProto, attrs: dict) -> SSAValue:
    """graph.global_max_pool2d on 4-D data, a max over the spatial axes otherwise."""
    return _global_pool(imp, node, graph.GlobalMaxPool2dOp, "max")


def _check_batch_normalization(check: NodeCheck) -> str | None:
    if any(check.output_used(i) for i in range(1, len(check.node.output))):
        return "training outputs (running or saved statistics)"
    if check.attrs.get("training_mode", 0):
        return "training_mode=1"
    if check.opset < 9 and check.attrs.get("spatial", 1) == 0:
        return "spatial=0"
    return None


@onnx_op("BatchNormalization", check=_check_batch_normalization)
def convert_batch_normalization(imp: Importer, node: onnx.NodeProto, attrs: dict) -> SSAValue:
    """graph.batch_norm with the running statistics (inference)."""
    x, scale, bias, mean, var = (imp.data(node, n) for n in node.input[:5])
    return imp.emit(graph.BatchNormOp(x, scale, bias, mean, var, attrs.get("epsilon", 1e-5)))


def _channel_param(imp: Importer, name: str, rank: int) -> SSAValue:
    """A [C] parameter shaped [C, 1, ...] to broadcast along axis 1 of rank-`rank` data."""
    (c,) = imp.shape(name)
    return imp.reshaped(name, (c, *(1,) * (rank - 2)))


@onnx_op("InstanceNormalization")
def convert_instance_normalization(imp: Importer, node: onnx.NodeProto, attrs: dict) -> SSAValue:
    """Layer normalization over the spatial axes, with per-channel scale and bias."""
    x = imp.data(node, node.input[0])
    rank = len(imp.shape_of_value(x))
    scale = _channel_param(imp, node.input[1], rank)
    bias = _channel_param(imp, node.input[2], rank)
    return imp.emit(graph.LayerNormOp(x, scale, bias, axis=2,
                                       epsilon=attrs.get("epsilon", 1e-5)))


def _check_layer_normalization(check: NodeCheck) -> str | None:
    return "the Mean/InvStdDev outputs" if check.output_used(1) or check.output_used(2) else None


@onnx_op("LayerNormalization", check=_check_layer_normalization)
def convert_layer_normalization(imp: Importer, node: onnx.NodeProto, attrs: dict) -> SSAValue:
    """graph.layer_norm from `axis` on, with optional bias."""
    x = imp.data(node, node.input[0])
    rank = len(imp.shape_of_value(x))
    (axis,) = normalize_axes([attrs.get("axis", -1)], rank, node)
    scale = imp.data(node, node.input[1])
    bias = imp.data(node, node.input[2]) if len(node.input) > 2 and node.input[2] else None
    return imp.emit(graph.LayerNormOp(x, scale, bias, axis=axis,
                                       epsilon=attrs.get("epsilon", 1e-5)))


@onnx_op("GroupNormalization")
def convert_group_normalization(imp: Importer, node: onnx.NodeProto, attrs: dict) -> SSAValue:
    """Layer normalization of [N, G, C/G * spatial], then per-channel scale and bias
    (opset 18 gives them per group, opset 21 per channel)."""
    x = imp.data(node, node.input[0])
    shape = imp.shape_of_value(x)
    groups = attrs["num_groups"]
    grouped = imp.reshape(x, (shape[0], groups, prod(shape[1:]) // groups))
    one = imp.constant("one", np.ones((1,), np.float32))
    y = imp.emit(graph.LayerNormOp(grouped, one, None, axis=2,
                                    epsilon=attrs.get("epsilon", 1e-5)))
    y = imp.reshape(y, shape)
    params = []
    for name in node.input[1:3]:
        (size,) = imp.shape(name)
        if size != shape[1]:  # per group: repeat for each channel of the group
            array = np.repeat(imp.const_array(node, name), shape[1] // size)
            params.append(imp.constant(name, array.astype(np.float32).reshape(
                (shape[1], *(1,) * (len(shape) - 2)))))
        else:
            params.append(_channel_param(imp, name, len(shape)))
    return imp.emit(graph.AddOp(imp.emit(graph.MulOp(y, params[0])), params[1]))


def _check_lrn(check: NodeCheck) -> str | None:
    rank = check.rank(0)
    return "an input of rank < 3" if rank is not None and rank < 3 else None


@onnx_op("LRN", check=_check_lrn)
def convert_lrn(imp: Importer, node: onnx.NodeProto, attrs: dict) -> SSAValue:
    """graph.lrn across channels."""
    return imp.emit(graph.LrnOp(imp.data(node, node.input[0]), attrs["size"],
                                 attrs.get("alpha", 1e-4), attrs.get("beta", 0.75),
                                 attrs.get("bias", 1.0)))


def _softmax(imp: Importer, node: onnx.NodeProto, attrs: dict, cls) -> SSAValue:
    x = imp.data(node, node.input[0])
    shape = imp.shape_of_value(x)
    rank = len(shape)
    (axis,) = normalize_axes([attrs.get("axis", 1 if imp.opset < 13 else -1)], rank, node)
    if imp.opset >= 13 or axis == rank - 1:
        return imp.emit(cls(x, axis))
    # opset < 13: the input is coerced to 2-D [prod(before axis), prod(from axis)].
    flat = imp.reshape(x, (prod(shape[:axis]), prod(shape[axis:])))
    return imp.reshape(imp.emit(cls(flat, 1)), shape)


@onnx_op("Softmax")
def convert_softmax(imp: Importer, node: onnx.NodeProto, attrs: dict) -> SSAValue:
    """graph.softmax (opset < 13: over the input coerced to 2-D at `axis`)."""
    return _softmax(imp, node, attrs, graph.SoftmaxOp)


@onnx_op("LogSoftmax")
def convert_log_softmax(imp: Importer, node: onnx.NodeProto, attrs: dict) -> SSAValue:
    """graph.log_softmax (opset < 13: over the input coerced to 2-D at `axis`)."""
    return _softmax(imp, node, attrs, graph.LogSoftmaxOp)
