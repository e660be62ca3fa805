"""Model parameters (weights) across the loop -> llvm boundary.

A loop-stage module holds its constants as globals (`memref.global`, or the loop
dialect's own global op) whose value is a `dense<...>` attribute or a
`dense_resource<key>` blob in the module's `dialect_resources` section.
`convert-loop-to-llvm` turns each into an *external declaration*
`llvm.mlir.global external @xweave_param_<name>` with no initializer: the data never
goes through LLVM IR. The values are taken out of the loop-stage module, before the
conversion, with `extract_params(module) -> {name: ndarray}`; the runtime
(`xweave.runtime.jit.load_object`) binds each array to its symbol at load time.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from xdsl.dialects.builtin import (
    BytesAttr,
    DenseIntOrFPElementsAttr,
    DenseResourceAttr,
    MemRefType,
    ModuleOp,
    StringAttr,
    SymbolRefAttr,
    TensorType,
)
from xdsl.ir import Attribute, Operation

from xweave.dialects import dtypes
from xweave.dialects.resources import blob_of, resource_array
from xweave.lowering.llvm_builder import LoweringError, num_elements
from xweave.passes.loop_utils import walk_list
from xweave.runtime.abi import PARAM_PREFIX


GLOBAL_OP_NAMES = ("memref.global", "loop.global")
GET_GLOBAL_OP_NAMES = ("memref.get_global", "loop.get_global")


def param_symbol(name: str) -> str:
    """The llvm-stage symbol of the parameter global `name`."""
    return PARAM_PREFIX + name


def is_global(op: Operation) -> bool:
    return op.name in GLOBAL_OP_NAMES


def is_get_global(op: Operation) -> bool:
    return op.name in GET_GLOBAL_OP_NAMES


def global_name(op: Operation) -> str:
    """The symbol name of a global op."""
    name = op.properties.get("sym_name") or op.attributes.get("sym_name")
    if not isinstance(name, StringAttr):
        raise LoweringError(f"convert-loop-to-llvm: '{op.name}' without a sym_name")
    return name.data


def global_type(op: Operation) -> MemRefType:
    """The memref type of a global op."""
    for key in ("type", "global_type"):
        t = op.properties.get(key) or op.attributes.get(key)
        if isinstance(t, MemRefType):
            return t
    for t in (*op.properties.values(), *op.attributes.values()):
        if isinstance(t, MemRefType):
            return t
    raise LoweringError(f"convert-loop-to-llvm: global '{global_name(op)}' has no memref type")


def global_value(op: Operation) -> Attribute | None:
    """The initial value (dense or dense_resource) of a global op, None if uninitialized."""
    for key in ("initial_value", "value"):
        v = op.properties.get(key) or op.attributes.get(key)
        if isinstance(v, DenseIntOrFPElementsAttr | DenseResourceAttr):
            return v
    for v in (*op.properties.values(), *op.attributes.values()):
        if isinstance(v, DenseIntOrFPElementsAttr | DenseResourceAttr):
            return v
    return None


def is_constant_global(op: Operation) -> bool:
    """A global the code never writes (`loop.global`, or `memref.global ... constant`)."""
    return op.name == "loop.global" or "constant" in op.properties


def is_call_state(op: Operation) -> bool:
    """An uninitialized, writable global: memory a call uses and no call keeps (the
    arena of `plan-memory`, a profiling build's counters). Each call gets its own:
    the lowering passes it to @main as an argument (see `loop_to_llvm`), so calls
    from several threads never share it, and it is not a parameter."""
    return is_global(op) and global_value(op) is None and not is_constant_global(op)


def call_state_uses(functions: Sequence[Operation], state: Sequence[str]) -> dict[str, tuple[str, ...]]:
    """Function name -> the call-state globals (`state`, in that order) it reads, by a
    `get_global` or through the functions it calls."""
    uses: dict[str, set[str]] = {}
    callees: dict[str, set[str]] = {}
    for function in functions:
        name = function.sym_name.data  # pyright: ignore[reportAttributeAccessIssue]
        uses[name], callees[name] = set(), set()
        for op in walk_list(function):
            if is_get_global(op) and get_global_name(op) in state:
                uses[name].add(get_global_name(op))
            elif op.name == "func.call":
                callees[name].add(op.callee.root_reference.data)  # pyright: ignore
    changed = True
    while changed:
        changed = False
        for name, called in callees.items():
            for callee in called:
                new = uses.get(callee, set()) - uses[name]
                if new:
                    uses[name] |= new
                    changed = True
    return {name: tuple(s for s in state if s in used) for name, used in uses.items()}


def get_global_name(op: Operation) -> str:
    """The global referenced by a get_global op."""
    for v in (*op.properties.values(), *op.attributes.values()):
        if isinstance(v, SymbolRefAttr):
            return v.root_reference.data
    raise LoweringError(f"convert-loop-to-llvm: '{op.name}' without a symbol reference")


def numpy_dtype(element: Attribute) -> np.dtype:
    """The numpy dtype storing elements of an MLIR element type (little-endian)."""
    try:
        dtype = dtypes.numpy_dtype(element)
    except dtypes.DtypeError:
        dtype = None
    if dtype is None or dtype == np.bool_:
        raise LoweringError(f"convert-loop-to-llvm: no parameter storage for element type {element}")
    return dtype.newbyteorder("<")


def decode(value: Attribute, memref_type: MemRefType, name: str = "?") -> np.ndarray:
    """The contents of a dense or dense_resource attribute as an array of the memref's shape."""
    dtype = numpy_dtype(memref_type.get_element_type())
    shape = tuple(memref_type.get_shape())
    count = num_elements(memref_type)
    if isinstance(value, DenseIntOrFPElementsAttr):
        flat = np.frombuffer(value.data.data, dtype=dtype)
    elif isinstance(value, DenseResourceAttr):
        blob = blob_of(value)
        if blob is None:
            raise LoweringError(f"dense_resource<{value.resource_handle.data}>: no such "
                                "blob in the module's dialect_resources")
        if blob.nbytes % dtype.itemsize:
            raise LoweringError(f"parameter '{name}': {blob.nbytes} bytes stored, not a "
                                f"whole number of {dtype} elements")
        flat = resource_array(value, dtype, (blob.nbytes // dtype.itemsize,))
    else:
        raise LoweringError(f"parameter '{name}': unsupported initial value {value}")
    if flat.size == 1 and count != 1:
        return np.full(shape, flat[0], dtype=dtype)
    if flat.size != count:
        raise LoweringError(
            f"parameter '{name}': {flat.size} elements of {dtype} stored, "
            f"{count} expected for {memref_type}"
        )
    return flat.reshape(shape)


PARAM_VALUE_ATTR = "xweave.value"
"""Attribute of an llvm-stage parameter global: the value of the global it lowers."""


def param_value(op: Operation) -> Attribute:
    """The value of a (non call-state) global op; an uninitialized one is all zeros."""
    value = global_value(op)
    if value is not None:
        return value
    memref_type = global_type(op)
    zero = np.zeros((), numpy_dtype(memref_type.get_element_type()))
    return DenseIntOrFPElementsAttr(
        TensorType(memref_type.get_element_type(), memref_type.get_shape()),
        BytesAttr(zero.tobytes()))


def extract_params(module: ModuleOp) -> dict[str, np.ndarray]:
    """Every global's value, by global name: call on the loop-stage module, or the
    llvm-stage one (whose parameter globals carry their value as `PARAM_VALUE_ATTR`).

    Keys are the globals' names (the llvm-stage symbol is `xweave_param_<name>`).
    An uninitialized constant global gets a zero-filled array; call state (the arena,
    `is_call_state`) is no parameter and is left out. Arrays may be read-only views
    of the IR's storage.
    """
    params: dict[str, np.ndarray] = {}
    for op in module.ops:
        if op.name == "llvm.mlir.global" and PARAM_VALUE_ATTR in op.attributes:
            value = op.attributes[PARAM_VALUE_ATTR]
            assert isinstance(value, DenseIntOrFPElementsAttr | DenseResourceAttr)
            name = op.sym_name.data[len(PARAM_PREFIX):]  # pyright: ignore[reportAttributeAccessIssue]
            shaped = value.type
            params[name] = decode(value, MemRefType(shaped.get_element_type(), shaped.get_shape()), name)
            continue
        if not is_global(op) or is_call_state(op):
            continue
        name, memref_type = global_name(op), global_type(op)
        value = global_value(op)
        if value is None:
            params[name] = np.zeros(
                tuple(memref_type.get_shape()), numpy_dtype(memref_type.get_element_type())
            )
        else:
            params[name] = decode(value, memref_type, name)
    return params
