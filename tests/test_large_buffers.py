"""Buffers past 2 and 4 GiB: i64 offsets everywhere (the lowering's filecheck test is
`filecheck/lowering/loop-to-llvm-large-offsets.mlir`), compile-time work that never
allocates the arena, and one clear error when an arena does not fit the machine.
(bench/large_buffers.py runs a whole model with a buffer past 4 GiB.)"""

import ctypes
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import xweave
from xweave.context import parse_module
from xweave.errors import ModelError
from xweave.lowering.loop_to_llvm import lower_module
from xweave.runtime.arena import ArenaError, allocate_arena, available_memory
from xweave.lowering.llvm_codegen import compile_llvm
from xweave.runtime.jit import load_object

BIN = Path(sys.executable).parent
GIB = 2**30

ARENA_BYTES = 5 * GIB + 4096
STORE_AT = 9 * GIB // 2          # a view at 4.5 GiB: past 2^32 bytes
ELEMENT = (5 * GIB) // 4 - 8     # an f32 element index past 2^30 (byte offset past 2^32)

PROGRAM = f"""
"memref.global"() <{{sym_name = "xweave_arena", type = memref<{ARENA_BYTES}xi8>, initial_value, sym_visibility = "private"}}> : () -> ()
func.func @main(%x: memref<8xf32>, %y: memref<8xf32>) {{
  %arena = memref.get_global @xweave_arena : memref<{ARENA_BYTES}xi8>
  %far = loop.view %arena[{STORE_AT}] : memref<{ARENA_BYTES}xi8> to memref<8xf32>
  %all = loop.view %arena[0] : memref<{ARENA_BYTES}xi8> to memref<{ARENA_BYTES // 4}xf32>
  loop.for "i" %i = 0 to 8 {{
    %v = loop.load %x[%i] : memref<8xf32>
    loop.store %v, %far[%i] : memref<8xf32>
    %w = loop.load %all[%i + {ELEMENT}] : memref<{ARENA_BYTES // 4}xf32>
    loop.store %w, %y[%i] : memref<8xf32>
  }}
  func.return
}}
"""


def test_offsets_past_4gib_address_the_right_bytes():
    """Only the touched pages of the (lazily mapped) arena take memory."""
    module = parse_module(PROGRAM)
    lower_module(module)
    engine = load_object(compile_llvm(module).object_bytes)
    main = engine.get_function("main", [ctypes.c_void_p] * 3)
    try:
        arena = allocate_arena(ARENA_BYTES)
    except ArenaError:
        pytest.skip("not 5 GiB of address space free")
    x = np.arange(1, 9, dtype=np.float32)
    y = np.zeros(8, np.float32)
    arena[ELEMENT * 4:(ELEMENT + 8) * 4] = np.arange(10, 18, dtype=np.float32).view(np.uint8)
    main(x.ctypes.data, y.ctypes.data, arena.ctypes.data)
    np.testing.assert_array_equal(arena[STORE_AT:STORE_AT + 32].view(np.float32), x)
    np.testing.assert_array_equal(y, np.arange(10, 18, dtype=np.float32))


def _expanded_model(side: int):
    """x (one value) expanded to side x side floats, then reduced: one unfused
    intermediate buffer of side^2 floats, alive beside its Relu's result."""
    shape = numpy_helper.from_array(np.array([1, 1, side, side], np.int64), "shape")
    axes = numpy_helper.from_array(np.array([1, 2, 3], np.int64), "axes")
    nodes = [helper.make_node("Expand", ["x", "shape"], ["e"]),
             helper.make_node("Relu", ["e"], ["r"]),
             helper.make_node("ReduceMax", ["r", "axes"], ["y"], keepdims=0)]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 1, 1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])], [shape, axes])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 8
    return model


def _physical_memory() -> int:
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def test_a_tensor_larger_than_the_machine_is_refused_at_import():
    """A 1 TiB intermediate could never be allocated: refused before any pass works in
    proportion to it, naming the node and the tensor."""
    with pytest.raises(ModelError, match=r"output 'e' of shape \[1, 1, 1048576, 1048576\] "
                                         r"is too large: .* this machine's memory holds"):
        xweave.load_onnx(_expanded_model(1 << 20))


def test_a_model_whose_arena_does_not_fit_compiles_and_refuses_to_run(tmp_path):
    """Two buffers of 60% of this machine's memory each, alive at once: each fits, the
    arena does not. Compiling never allocates the arena (it asked for a zero-filled copy
    of it); running it is one error naming what is needed and what is available."""
    side = int((0.6 * _physical_memory() / 4) ** 0.5)
    module = xweave.build(_expanded_model(side), fuse=False)
    need = module.peak_memory_bytes
    assert need >= 2 * side * side * 4
    memory = available_memory()
    assert memory is not None and memory[0] < need
    with pytest.raises(ArenaError, match=rf"need an arena of {need / GIB:.1f} GiB .* available \("):
        module.run(x=np.ones((1, 1, 1, 1), np.float32))
    module.export(tmp_path / "huge.xwm")
    proc = subprocess.run([str(BIN / "xweave"), "run", str(tmp_path / "huge.xwm"),
                           "--fill-mode", "ones"], capture_output=True, text=True, timeout=300)
    assert proc.returncode > 0 and "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and f"{need / GIB:.1f} GiB" in lines[0], proc.stderr
