"""ONNX -> graph dialect.

`load_onnx` reads a model (file or `onnx.ModelProto`), binds symbolic input
dimensions, checks that every operator is supported (one `UnsupportedOpsError`
listing them all), and builds a verified graph-stage module:

    func.func @main(<graph inputs in ONNX order>) -> (<graph outputs in order>)
        attributes {xweave.input_names = [...], xweave.output_names = [...]}

Constant evaluation: a node whose inputs are all constants (initializers, `Constant`
nodes, earlier folded nodes), and every `Shape`/`Size` (input shapes are static), is
evaluated at import time with numpy (ONNX's reference implementation), so the
Shape -> Gather -> Unsqueeze -> Concat -> Reshape chains of exported PyTorch/Keras
models, `ConstantOfShape`, casts of shape tensors, ... become constants. Constants
become `graph.constant` (named after the ONNX tensor) only where a graph op uses them
as data; int64/bool tensors that only feed shapes never reach the compiled model.

Result shapes come from the graph ops' own shape rules; ONNX's inferred shapes, where
known, cross-check them. Attribute-vs-input forms of every opset from 9 to 21 (and the
legacy broadcast of opset < 7) are handled per operator.

Each operator is declared once, with its converter, the checks that decide its support
and the roles of its inputs, in `xweave.frontend.registry` (filled by
`xweave.frontend.ops`); `support` decides what can be imported, `importer` holds the
state of one conversion.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, ModuleOp, StringAttr, TensorType
from xdsl.ir import Block, Region

from xweave.dialects.dtypes import element_type
from xweave.errors import ModelError, XweaveError
from xweave.frontend import ops  # noqa: F401  (declares every operator in the registry)
from xweave.frontend.importer import Importer, element
from xweave.frontend.onnx_checks import check_model, default_opset, initializer_arrays
from xweave.frontend.registry import OPS
from xweave.frontend.support import (
    check_shape_inputs,
    is_default_domain,
    plan,
    unsupported,
    unsupported_error,
)

__all__ = ["load_onnx", "SUPPORTED_OPS"]

SUPPORTED_OPS: frozenset[str] = frozenset(name for name, op in OPS.items() if op.supported)
"""ONNX operator types (default domain) that `load_onnx` imports: those declared in the
registry with a converter (or always evaluated at import time). Any other default-
domain operator is also accepted where all its inputs are known at import time (it is
then evaluated by ONNX's reference implementation)."""


# --------------------------------------------------------------------------------------
# Reading the model
# --------------------------------------------------------------------------------------


def _read_model(path_or_model: str | Path | onnx.ModelProto) -> tuple[onnx.ModelProto, str]:
    if isinstance(path_or_model, onnx.ModelProto):
        return path_or_model, f"model '{path_or_model.graph.name or '<unnamed>'}'"
    path = Path(path_or_model)
    if not path.is_file():
        raise ModelError(f"{path}: no such model file")
    try:
        model = onnx.load(str(path))
    except Exception as e:  # protobuf DecodeError, external data errors, ...
        raise ModelError(f"{path}: not a readable ONNX model ({type(e).__name__}: {e})") from e
    if not model.HasField("graph") or not model.graph.output:
        raise ModelError(f"{path}: not a readable ONNX model (no graph outputs)")
    return model, str(path)


def _dims(value_info: onnx.ValueInfoProto) -> list[int | str | None] | None:
    """Dims of a value_info: ints, symbolic names, None for unknown; None if unranked."""
    t = value_info.type.tensor_type
    if not t.HasField("shape"):
        return None
    dims: list[int | str | None] = []
    for d in t.shape.dim:
        if d.HasField("dim_value"):
            dims.append(d.dim_value)
        elif d.HasField("dim_param"):
            dims.append(d.dim_param)
        else:
            dims.append(None)
    return dims


def _bind_input_shapes(
    model: onnx.ModelProto,
    inputs: list[onnx.ValueInfoProto],
    input_shapes: dict[str, tuple[int, ...]],
) -> None:
    """Write `input_shapes` into the (copied) model's input declarations."""
    by_name = {v.name: v for v in inputs}
    unknown = sorted(set(input_shapes) - set(by_name))
    if unknown:
        raise ModelError(
            f"input_shapes names unknown inputs {unknown}; the model's inputs are "
            f"{list(by_name)}"
        )
    for name, shape in input_shapes.items():
        declared = _dims(by_name[name])
        shape = tuple(int(d) for d in shape)
        if declared is not None:
            if len(declared) != len(shape):
                raise ModelError(
                    f"input '{name}': input_shapes gives rank {len(shape)} {list(shape)} "
                    f"but the model declares rank {len(declared)}"
                )
            for i, (d, s) in enumerate(zip(declared, shape)):
                if isinstance(d, int) and d != s:
                    raise ModelError(
                        f"input '{name}': input_shapes gives {s} for dimension {i} "
                        f"but the model fixes it to {d}"
                    )
        tensor_type = by_name[name].type.tensor_type
        tensor_type.ClearField("shape")
        for s in shape:
            tensor_type.shape.dim.add().dim_value = s


def _inferred_or_none(model: onnx.ModelProto, strict: bool) -> onnx.ModelProto | None:
    try:
        return onnx.shape_inference.infer_shapes(model, strict_mode=strict)
    except Exception:
        return None


def _ranks(model: onnx.ModelProto) -> dict[str, int]:
    """Ranks of every tensor whose rank is known (after shape inference)."""
    g = model.graph
    ranks = {v.name: len(d) for v in (*g.input, *g.value_info, *g.output) if (d := _dims(v)) is not None}
    ranks.update({t.name: len(t.dims) for t in g.initializer})
    return ranks


# --------------------------------------------------------------------------------------
# Entry point
# --------------------------------------------------------------------------------------

_DATA_DTYPES = (onnx.TensorProto.FLOAT, onnx.TensorProto.INT64, onnx.TensorProto.INT32,
                onnx.TensorProto.UINT8, onnx.TensorProto.INT8)
"""Element types of model inputs and outputs: float32 data, uint8/int8 quantized data,
int64/int32 indices (and int32 accumulators)."""


def _infer_shapes(model: onnx.ModelProto) -> onnx.ModelProto:
    """ONNX shape inference, as strict as it succeeds (only a cross-check here)."""
    for kwargs in (dict(strict_mode=True, data_prop=True), dict(strict_mode=False)):
        try:
            return onnx.shape_inference.infer_shapes(model, **kwargs)
        except Exception:
            continue
    return model


def load_onnx(
    path_or_model: str | Path | onnx.ModelProto,
    input_shapes: dict[str, tuple[int, ...]] | None = None,
) -> ModuleOp:
    """Import an ONNX model as a verified graph-stage module with `func.func @main`.

    `input_shapes` binds symbolic (or unknown) input dimensions, e.g. {"data": (1, 3, 224, 224)}.
    Raises ModelError (unreadable file, a malformed model: see `onnx_checks`, inputs/
    outputs other than float32, uint8/int8 or int64/int32, shapes that cannot be inferred, tensors
    too large) or UnsupportedOpsError (listing every unsupported operator and node).
    """
    model, source = _read_model(path_or_model)
    check_model(model, source)
    opset = default_opset(model)
    assert opset is not None  # check_model requires it
    original = model.graph
    initializers = {t.name for t in original.initializer}
    inputs = [v for v in original.input if v.name not in initializers]
    used = {n for node in original.node for n in node.input if n} | {v.name for v in original.output}

    # Operators first, before anything else is checked or converted.
    constant_names = initializers | {
        n.output[0] for n in original.node if n.op_type == "Constant" and is_default_domain(n)
    }
    folded, known = plan(original.node, constant_names)
    if unsupported(original.node, folded, known, {}, used, opset):
        ranks = _ranks(_inferred_or_none(model, strict=False) or model)  # best effort
        raise unsupported_error(unsupported(original.node, folded, known, ranks, used, opset))

    for v in (*inputs, *original.output):
        elem = v.type.tensor_type.elem_type
        if elem not in (*_DATA_DTYPES, onnx.TensorProto.UNDEFINED) or not v.type.HasField("tensor_type"):
            kind = "input" if v in inputs else "output"
            name = onnx.TensorProto.DataType.Name(elem) if v.type.HasField("tensor_type") else \
                v.type.WhichOneof("value")
            raise ModelError(
                f"{source}: {kind} '{v.name}' has element type {name}; xweave supports "
                "float32 models (with int64/int32 index inputs) and uint8/int8 quantized data only"
            )

    # Bind input shapes on a copy, then infer every value's shape (a cross-check).
    model_copy = onnx.ModelProto()
    model_copy.CopyFrom(model)
    copy_inputs = [v for v in model_copy.graph.input if v.name not in initializers]
    _bind_input_shapes(model_copy, copy_inputs, dict(input_shapes or {}))
    inferred = _infer_shapes(model_copy)
    g = inferred.graph
    folded, known = plan(g.node, constant_names)
    if problems := unsupported(g.node, folded, known, _ranks(inferred), used, opset):
        raise unsupported_error(problems)  # unsupported ranks (3-D conv, ...)

    onnx_shapes: dict[str, tuple[int, ...]] = {}
    for v in (*g.value_info, *g.output):
        d = _dims(v)
        if d is not None and all(isinstance(x, int) and x > 0 for x in d):
            onnx_shapes[v.name] = tuple(d)  # pyright: ignore[reportArgumentType]

    # Every model input needs a static shape.
    input_types = []
    for v in copy_inputs:
        d = _dims(v)
        if d is None or not all(isinstance(x, int) and x >= 0 for x in d):
            shown = "unknown rank" if d is None else "[" + ", ".join(map(str, d)) + "]"
            raise ModelError(
                f"{source}: the shape of tensor '{v.name}' (model input) cannot be inferred "
                f"statically: {shown.replace('None', '?')}; bind it with input_shapes={{...}}"
            )
        dtype = onnx.helper.tensor_dtype_to_np_dtype(v.type.tensor_type.elem_type or 1)
        input_types.append(TensorType(element_type(np.dtype(dtype)), d))
    check_shape_inputs(g.node, folded, known, used, source)

    constants: dict[str, np.ndarray] = initializer_arrays(inferred, source)
    block = Block(arg_types=input_types)
    importer = Importer(onnx_shapes, constants, block, opset, source)
    importer.values.update({v.name: arg for v, arg in zip(inputs, block.args)})
    for index, node in enumerate(g.node):
        if not any(o in used for o in node.output if o):
            continue
        importer.index, importer.node = index, node
        try:
            if index in folded:
                importer.fold(node)
            else:
                importer.convert(node)
        except XweaveError:
            raise
        except (ValueError, IndexError, KeyError, TypeError, ZeroDivisionError, OverflowError,
                AssertionError, MemoryError) as e:
            # A malformed node the checks above let through: still one line naming it.
            raise ModelError(f"{source}: {importer.label}: cannot be imported "
                             f"({str(e) or type(e).__name__}); {importer.input_shapes()}") from e

    results = []
    for v in g.output:
        result = importer.value(v.name)
        declared = v.type.tensor_type.elem_type
        if declared and element(result) != element_type(
                np.dtype(onnx.helper.tensor_dtype_to_np_dtype(declared))):
            raise ModelError(f"{source}: output '{v.name}' is declared "
                             f"{onnx.TensorProto.DataType.Name(declared)} but computes {result.type}")
        results.append(result)
    block.add_op(func.ReturnOp(*results))
    main = func.FuncOp(
        "main", ([a.type for a in block.args], [r.type for r in results]), Region(block)
    )
    main.attributes["xweave.input_names"] = ArrayAttr([StringAttr(v.name) for v in inputs])
    main.attributes["xweave.output_names"] = ArrayAttr([StringAttr(v.name) for v in g.output])
    module = ModuleOp([main])
    module.verify()
    return module
