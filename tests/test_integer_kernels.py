"""Integer kernels at the loop stage (loop.dot, loop.convert): compiled for the host and
run, compared with numpy and with the loop interpreter, on each x86 path the host has
(the paths the host lacks are skipped here; tests/filecheck/lowering/loop-to-llvm-dot.mlir
shows their code for pinned machine models)."""

import llvmlite.binding as llvm_binding
import numpy as np
import pytest

from xweave.context import parse_module
from xweave.dialects.interpreters import interpret
from xweave.lowering.llvm_codegen import compile_llvm
from xweave.lowering.loop_to_llvm import extract_params, lower_module
from xweave.runtime.jit import load_object

HOST = llvm_binding.get_host_cpu_features()
HOST_CPU = llvm_binding.get_host_cpu_name()


def needs(*features: str):
    missing = [f for f in features if not HOST.get(f, False)]
    return pytest.mark.skipif(bool(missing), reason=f"the host lacks {', '.join(missing)}")


def run_compiled(text: str, name: str, *arrays: np.ndarray) -> None:
    module = parse_module(text)
    params = extract_params(module)
    lower_module(module)
    engine = load_object(compile_llvm(module).object_bytes, params)
    engine.get_function(name)(*arrays)


def run_interpreted(text: str, name: str, *arrays: np.ndarray) -> None:
    interpret(parse_module(text), arrays, entry=name)


DOT = """
builtin.module attributes {{xweave.target = "llvm -mcpu={cpu}"}} {{
  func.func @dot(%acc: memref<8xi32>, %a: memref<{g}x{a}>, %b: memref<{n}x{b}>) attributes {{xweave.kernel}} {{
    %v = loop.load %acc[0] : memref<8xi32> -> vector<8xi32>
    %x = loop.load %a[0] : memref<{g}x{a}> -> vector<{g}x{av}>
    %y = loop.load %b[0] : memref<{n}x{b}> -> vector<{n}x{b}>
    %r = loop.dot %v, %x, %y {attrs}: vector<8xi32>, vector<{g}x{av}>, vector<{n}x{b}>
    loop.store %r, %acc[0] : memref<8xi32>, vector<8xi32>
    func.return
  }}
}}
"""

# (group, data type, weight type, narrow, the weights' range)
FORMS = {
    "u8 x s8": (4, "ui8", "i8", False, (-128, 127)),
    "u8 x s8 narrow": (4, "ui8", "i8", True, (-64, 64)),
    "u8 x s16": (2, "ui8", "i16", False, (-32768, 32767)),
    "s16 x s16": (2, "i16", "i16", False, (-32768, 32767)),
}
NUMPY = {"ui8": np.uint8, "i8": np.int8, "i16": np.int16}


def dot_case(form: str, cpu: str = "znver3", seed: int = 0):
    g, a_type, b_type, narrow, (lo, hi) = FORMS[form]
    rng = np.random.default_rng(seed)
    a_lo, a_hi = (0, 255) if a_type == "ui8" else (-32768, 32767)
    a = rng.integers(a_lo, a_hi + 1, g).astype(NUMPY[a_type])
    b = rng.integers(lo, hi + 1, 8 * g).astype(NUMPY[b_type])
    # the saturating edges: the largest data against the largest weights of either sign
    a[0] = a_hi
    b[:g] = hi
    b[g:2 * g] = lo
    a[1] = a_hi
    acc = rng.integers(-1000, 1000, 8).astype(np.int32)
    expected = (acc.astype(np.int64) + (a.astype(np.int64) * b.astype(np.int64).reshape(8, g)).sum(1))
    expected = expected.astype(np.int32)  # wrapping, as the i32 lanes do
    text = DOT.format(cpu=cpu, g=g, a=a_type, av="i8" if a_type == "ui8" else a_type,
                      n=8 * g, b=b_type, attrs="{narrow} " if narrow else "")
    return text, acc, a, b, expected


@pytest.mark.parametrize("form", sorted(FORMS))
def test_dot_interpreted(form):
    text, acc, a, b, expected = dot_case(form)
    run_interpreted(text, "dot", acc, a, b)
    np.testing.assert_array_equal(acc, expected)


@needs("avx2")
@pytest.mark.parametrize("form", sorted(FORMS))
def test_dot_avx2(form):
    """Zen 3's model (AVX2, no VNNI): vpmaddwd, vpmaddubsw for narrow weights, exact
    16-bit products for the others."""
    for seed in range(3):
        text, acc, a, b, expected = dot_case(form, "znver3", seed)
        run_compiled(text, "dot", acc, a, b)
        np.testing.assert_array_equal(acc, expected)


@needs("avx512vnni", "avx512vl")
@pytest.mark.parametrize("form", sorted(FORMS))
def test_dot_vnni(form):
    """Ice Lake server's model: vpdpbusd."""
    text, acc, a, b, expected = dot_case(form, "icelake-server")
    run_compiled(text, "dot", acc, a, b)
    np.testing.assert_array_equal(acc, expected)


CONVERT = """
builtin.module attributes {xweave.target = "llvm -mcpu=CPU"} {
  func.func @convert(%x: memref<16xf32>, %u: memref<16xui8>, %s: memref<16xi8>, %w: memref<16xi16>) attributes {xweave.kernel} {
    loop.for %i = 0 to 2 {
      %v = loop.load %x[%i * 8] : memref<16xf32> -> vector<8xf32>
      %a = loop.convert fptoui %v : vector<8xf32> to vector<8xi8>
      loop.store %a, %u[%i * 8] : memref<16xui8>, vector<8xi8>
      %b = loop.convert fptosi %v : vector<8xf32> to vector<8xi8>
      loop.store %b, %s[%i * 8] : memref<16xi8>, vector<8xi8>
      %c = loop.convert fptosi %v : vector<8xf32> to vector<8xi16>
      loop.store %c, %w[%i * 8] : memref<16xi16>, vector<8xi16>
    }
    func.return
  }
}
"""

EDGES = np.array([np.nan, np.inf, -np.inf, 1e10, -1e10, 255.9, 256.0, -0.9, 0.9, 127.9,
                  -128.9, -129.0, 40000.0, -40000.0, 3.5, -3.5], np.float32)


def saturated(x: np.ndarray, dtype) -> np.ndarray:
    info = np.iinfo(dtype)
    return np.clip(np.nan_to_num(np.trunc(x.astype(np.float64)), nan=0.0), info.min, info.max).astype(dtype)


@pytest.mark.parametrize("run", [run_interpreted, pytest.param(run_compiled, marks=needs("avx2"))],
                         ids=["interpreted", "compiled"])
def test_narrow_conversions_saturate_and_give_zero_for_nan(run):
    """Vector f32 -> 8/16-bit conversions (compiled without LLVM's lane-by-lane `.sat`):
    truncated toward zero, saturated, NaN to 0, as the interpreter and numpy say."""
    u, s, w = np.zeros(16, np.uint8), np.zeros(16, np.int8), np.zeros(16, np.int16)
    run(CONVERT.replace("CPU", "znver3"), "convert", EDGES.copy(), u, s, w)
    np.testing.assert_array_equal(u, saturated(EDGES, np.uint8))
    np.testing.assert_array_equal(s, saturated(EDGES, np.int8))
    np.testing.assert_array_equal(w, saturated(EDGES, np.int16))


def _qlinear_conv_model():
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    w = rng.integers(-127, 128, (32, 32, 3, 3)).astype(np.int8)
    inits = {"xs": np.float32(0.02), "xz": np.array(3, np.uint8), "w": w,
             "ws": np.full(32, 0.01, np.float32), "wz": np.zeros(32, np.int8),
             "ys": np.float32(0.5), "yz": np.array(100, np.uint8),
             "b": rng.integers(-500, 500, 32).astype(np.int32)}
    # two convs: the blocked layout (NCHW16c) pays for its transforms
    nodes = [helper.make_node("QLinearConv", [x, "xs", "xz", "w", "ws", "wz", "xs", "xz", "b"],
                              [y], pads=[1, 1, 1, 1]) for x, y in (("x", "h"), ("h", "y"))]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.UINT8, [1, 32, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.UINT8, None)],
        [numpy_helper.from_array(v, k) for k, v in inits.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


@pytest.mark.parametrize("cpu, group, weights", [("znver3", 2, "i16"), ("icelake-server", 4, "i8")])
def test_integer_dot_template_schedules_quantized_convs(cpu, group, weights):
    """The quantized conv's kernel gets IntegerDot: weights packed in dot groups (int16
    pairs without VNNI, int8 quadruples with it), the reduction split by the group, and
    loop-dot in place of the vectorization of the register block's lanes."""
    from xdsl.dialects import func

    import xweave
    from xweave import pipeline
    from xweave.dialects import loop
    from xweave.schedules import analyse, default_schedule, template_for

    module = xweave.load_onnx(_qlinear_conv_model())
    options = pipeline.CompileOptions(target=xweave.target.as_target(f"llvm -mcpu={cpu}"))
    pipeline.lower(module, options, until="loop")
    kernel = next(k for k in module.ops if isinstance(k, func.FuncOp) and loop.is_kernel(k)
                  and "conv2d_nchwc" in k.sym_name.data)
    assert template_for(analyse(kernel)).name == "integer-dot"
    assert f"x{weights}>" in str(kernel.function_type)
    steps = default_schedule(kernel)
    assert any(s.startswith("loop-split{") and f"factor={group} " in s and ".rb\"" in s
               for s in steps), steps
    assert any(s.startswith("loop-dot{") for s in steps)
    assert not any(s.startswith("loop-vectorize{") and "conv2d_nchwc.b" in s
                   and "_init" not in s for s in steps)


def test_tuning_tasks_give_quantized_kernels_arrays_of_their_types():
    from xdsl.dialects.builtin import IntegerType, Signedness

    from xweave.autotune.task import _dtype_of

    assert _dtype_of(IntegerType(8, Signedness.UNSIGNED)) == "uint8"
    assert _dtype_of(IntegerType(8)) == "int8"
    assert _dtype_of(IntegerType(32)) == "int32"
