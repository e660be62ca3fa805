"""Dense ONNX operators: MatMul and Gemm."""

from __future__ import annotations

import numpy as np
import onnx
from xdsl.ir import SSAValue

from xweave.dialects import graph
from xweave.dialects.graph.constants import constant_value
from xweave.frontend.importer import Importer
from xweave.frontend.registry import NodeCheck, onnx_op


def _check_matmul(check: NodeCheck) -> str | None:
    a, b = check.rank(0), check.rank(1)
    return "scalar operands" if a is not None and b is not None and min(a, b) < 1 else None


@onnx_op("MatMul", check=_check_matmul)
def convert_matmul(imp: Importer, node: onnx.NodeProto, attrs: dict) -> SSAValue:
    """numpy matmul; 1-D operands get a unit dimension added, then dropped."""
    a, b = imp.data(node, node.input[0]), imp.data(node, node.input[1])
    a_shape, b_shape = imp.shape(node.input[0]), imp.shape(node.input[1])
    if len(a_shape) == 1:
        a = imp.emit(graph.ReshapeOp(a, (1, *a_shape)))
    if len(b_shape) == 1:
        b = imp.emit(graph.ReshapeOp(b, (*b_shape, 1)))
    y = imp.emit(graph.MatmulOp(a, b))
    if len(a_shape) > 1 and len(b_shape) > 1:
        return y
    shape = list(imp.shape_of_value(y))
    if len(b_shape) == 1:
        shape.pop(-1)
    if len(a_shape) == 1:
        shape.pop(-1 if len(b_shape) == 1 else -2)
    return imp.emit(graph.ReshapeOp(y, shape))


@onnx_op("Gemm")
def convert_gemm(imp: Importer, node: onnx.NodeProto, attrs: dict) -> SSAValue:
    """alpha * A' @ B' + beta * C; a constant B becomes graph.dense's [N, K] weight."""
    alpha, beta = float(attrs.get("alpha", 1.0)), float(attrs.get("beta", 1.0))
    b_name = node.input[1]
    c_name = node.input[2] if len(node.input) > 2 and node.input[2] else None
    a = imp.data(node, node.input[0])
    if attrs.get("transA", 0):
        a = imp.emit(graph.TransposeOp(a, (1, 0)))
    addend: SSAValue | None = None  # beta * C when it is not a bias vector

    dequantized = _dequantized_weight(imp, b_name, bool(attrs.get("transB", 0)))
    if dequantized is not None and alpha == 1.0:
        # Quantized weights (QDQ): graph.dense of the dequantized [N, K] constant, which
        # graph-fold-qdq turns into an integer dense.
        bias = None
        if c_name is not None and beta == 1.0 and imp.shape(c_name) == (imp.shape_of_value(
                dequantized)[0],):
            bias = imp.value(c_name)
        elif c_name is not None:
            addend = _scaled(imp, imp.value(c_name), beta, "beta")
        y = imp.emit(graph.DenseOp(a, dequantized, bias))
    elif b_name in imp.constants:
        w = imp.constants[b_name].astype(np.float32)
        w = np.ascontiguousarray(w if attrs.get("transB", 0) else w.T) * np.float32(alpha)
        n = w.shape[0]
        bias = None
        if c_name in imp.constants:
            c = imp.constants[c_name].astype(np.float32) * np.float32(beta)
            if c.size in (1, n) and (c.ndim == 0 or c.shape[-1] == c.size):  # a row
                bias = imp.constant(c_name, np.broadcast_to(c.reshape(-1), (n,)).copy())
            else:
                addend = imp.constant(c_name, c)
        elif c_name is not None:
            addend = _scaled(imp, imp.value(c_name), beta, "beta")
        y = imp.emit(graph.DenseOp(a, imp.constant(b_name, w), bias))
    else:
        b = imp.data(node, b_name)
        if attrs.get("transB", 0):
            b = imp.emit(graph.TransposeOp(b, (1, 0)))
        y = _scaled(imp, imp.emit(graph.MatmulOp(a, b)), alpha, "alpha")
        if c_name is not None:
            addend = _scaled(imp, imp.value(c_name), beta, "beta")
    return y if addend is None else imp.emit(graph.AddOp(y, addend))


def _dequantized_weight(imp: Importer, name: str, transposed: bool) -> SSAValue | None:
    """B of a Gemm as graph.dense's [N, K] weight when it is a dequantized 2-D constant
    (per tensor, or per row of [N, K]): a new dequantize of the (transposed) integers."""
    value = imp.values.get(name)
    owner = None if value is None else value.owner
    if not isinstance(owner, graph.DequantizeOp):
        return None
    q, scale, zero = (o.owner for o in owner.operands)
    if not all(isinstance(o, graph.ConstantOp) for o in (q, scale, zero)):
        return None
    qa, sa, za = (constant_value(o) for o in (q, scale, zero))  # pyright: ignore[reportArgumentType]
    if qa.ndim != 2 or sa.shape != za.shape:
        return None
    if not transposed:
        qa, sa, za = qa.T, sa.T if sa.ndim == 2 else sa, za.T if za.ndim == 2 else za
    n = qa.shape[0]
    if sa.size != 1 and sa.shape != (n, 1):
        return None
    return imp.emit(graph.DequantizeOp(imp.constant(name, np.ascontiguousarray(qa)),
                                       imp.constant(f"{name}_scale", np.array(sa)),
                                       imp.constant(f"{name}_zero_point", np.array(za))))


def _scaled(imp: Importer, value: SSAValue, factor: float, name: str) -> SSAValue:
    if factor == 1.0:
        return value
    return imp.emit(graph.MulOp(value, imp.constant(name, np.float32(factor))))
