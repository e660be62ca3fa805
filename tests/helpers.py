"""Builders and runners shared by several test files (`from helpers import ...`;
on `sys.path` through pyproject's pytest `pythonpath`)."""

from __future__ import annotations

import contextlib
import importlib.util
import io
import sys
import time
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from xdsl.passes import PassPipeline
from xdsl.utils.exceptions import PassFailedException

from xweave import te
from xweave.cli import main
from xweave.context import make_context
from xweave.passes import get_all_passes

BENCH = Path(__file__).resolve().parents[1] / "bench"


def onnx_model(nodes, inputs, outputs, initializers=None, opset=13, infer_shapes=True):
    """A float32 ONNX model of `nodes`: `inputs` are (name, shape) pairs (a dim may be a
    name), `outputs` names (shapes left open), `initializers` {name: array}; with
    `infer_shapes`, passed through onnx's shape inference."""
    graph = helper.make_graph(
        nodes, "test",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in outputs],
        initializer=[numpy_helper.from_array(v, k) for k, v in (initializers or {}).items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8 if opset < 18 else 9
    return onnx.shape_inference.infer_shapes(model) if infer_shapes else model


MATMUL_LOOPS = """
func.func @matmul(%A: memref<5x7xf32>, %B: memref<7x9xf32>, %C: memref<5x9xf32>) attributes {xweave.kernel} {
  %zero = arith.constant 0.0 : f32
  loop.for "mm_init.i" %i0 = 0 to 5 {
    loop.for "mm_init.j" %j0 = 0 to 9 {
      loop.store %zero, %C[%i0, %j0] : memref<5x9xf32>
    }
  }
  loop.for "mm.i" %i = 0 to 5 {
    loop.for "mm.j" %j = 0 to 9 {
      loop.for "mm.k" %k = 0 to 7 unrolled {
        %a = loop.load %A[%i, %k] : memref<5x7xf32>
        %b = loop.load %B[%k, %j] : memref<7x9xf32>
        %c = loop.load %C[%i, %j] : memref<5x9xf32>
        %p = arith.mulf %a, %b : f32
        %s = arith.addf %c, %p : f32
        loop.store %s, %C[%i, %j] : memref<5x9xf32>
      }
    }
  }
  func.return
}
"""
"""C = A @ B (A 5x7, B 7x9) as a loop-stage kernel: a named init nest, then the update
nest with the reduction loop unrolled."""


def assert_refused_untouched(passes, module, match: str) -> None:
    """`passes` (a pass or a pipeline) fail on `module` with an error matching `match`
    and leave it as it was."""
    before = str(module)
    with pytest.raises(PassFailedException, match=match):
        passes.apply(make_context(), module)
    assert str(module) == before


def dense_bias_relu(m: int, k: int, n: int):
    """relu(A @ B + bias) in te, A [m, k], B [k, n]: (inputs [A, B, bias], outputs [relu])."""
    A = te.placeholder((m, k), "float32", name="A")
    B = te.placeholder((k, n), "float32", name="B")
    bias = te.placeholder((n,), "float32", name="bias")
    rk = te.reduce_axis(k, name="k")
    C = te.compute((m, n), lambda i, j: te.sum(A[i, rk] * B[rk, j], axis=rk), name="matmul")
    D = te.compute((m, n), lambda i, j: te.max(C[i, j] + bias[j], 0.0), name="relu")
    return [A, B, bias], [D]


def small_conv_model():
    """One 3x3 convolution, 4 -> 8 channels on 8x8 (one tuning task of a few points)."""
    rng = np.random.default_rng(0)
    graph = helper.make_graph(
        [helper.make_node("Conv", ["x", "w"], ["y"], name="conv", kernel_shape=[3, 3],
                          pads=[1, 1, 1, 1])], "m",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 8, 8])],
        initializer=[numpy_helper.from_array(
            rng.standard_normal((8, 4, 3, 3)).astype(np.float32), "w")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)


def schedule(module, spec: str):
    """A copy of `module` with the pass pipeline `spec` (`xweave-opt -p`'s syntax)
    applied, verified."""
    scheduled = module.clone()
    PassPipeline.parse_spec(get_all_passes(), spec).apply(make_context(), scheduled)
    scheduled.verify()
    return scheduled


def run_cli(*args, entry=main) -> tuple[int, str, str]:
    """A CLI (`xweave`, or the `entry` given) in this process, without an interpreter
    start-up: exit code, stdout, stderr."""
    out, err = io.StringIO(), io.StringIO()
    code = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            entry([str(a) for a in args])
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else 1
    return code, out.getvalue(), err.getvalue()


def wait_for_lines(proc, path: Path, count: int, timeout: float = 300.0) -> None:
    """Wait until the file `path` holds `count` lines (e.g. tuning records) or the
    process `proc` writing it has ended, at most `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        if path.exists() and path.read_text().count("\n") >= count:
            return
        time.sleep(0.05)


def load_bench(name: str):
    """The benchmark script bench/<name>.py as a module (its `main` not run), so that
    tests check its helpers and share its tables; bench/ goes on `sys.path` for the
    scripts' `from common import ...`."""
    if f"xweave_bench_{name}" in sys.modules:
        return sys.modules[f"xweave_bench_{name}"]
    if str(BENCH) not in sys.path:
        sys.path.insert(0, str(BENCH))
    spec = importlib.util.spec_from_file_location(f"xweave_bench_{name}", BENCH / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module
