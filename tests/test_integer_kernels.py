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
    w = rng.integers(-127, 128, (16, 16, 3, 3)).astype(np.int8)
    inits = {"xs": np.float32(0.02), "xz": np.array(3, np.uint8), "w": w,
             "ws": np.full(16, 0.01, np.float32), "wz": np.zeros(16, np.int8),
             "ys": np.float32(0.5), "yz": np.array(100, np.uint8),
             "b": rng.integers(-500, 500, 16).astype(np.int32)}
    # two convs: the blocked layout (NCHW16c) pays for its transforms
    nodes = [helper.make_node("QLinearConv", [x, "xs", "xz", "w", "ws", "wz", "xs", "xz", "b"],
                              [y], pads=[1, 1, 1, 1]) for x, y in (("x", "h"), ("h", "y"))]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.UINT8, [1, 16, 8, 8])],
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


DOT_NEST = """
func.func @dense(%x: memref<3x8xui8>, %w: memref<2x8x4xi8>, %w16: memref<4x8x2xi16>, %out: memref<3x8xi32>, %out16: memref<3x8xi32>) attributes {xweave.kernel} {
  loop.for "d.i" %i = 0 to 3 {
    loop.for "d.k" %k = 0 to 2 {
      loop.for "d.j" %j = 0 to 8 {
        loop.for "d.g" %g = 0 to 4 {
          %a = loop.load %x[%i, %k * 4 + %g] : memref<3x8xui8>
          %b = loop.load %w[%k, %j, %g] : memref<2x8x4xi8>
          %c = loop.load %out[%i, %j] : memref<3x8xi32>
          %ae = arith.extui %a : i8 to i32
          %be = arith.extsi %b : i8 to i32
          %p = arith.muli %ae, %be : i32
          %s = arith.addi %c, %p : i32
          loop.store %s, %out[%i, %j] : memref<3x8xi32>
        }
      }
    }
    loop.for "e.k" %k = 0 to 4 {
      loop.for "e.j" %j = 0 to 8 {
        loop.for "e.g" %g = 0 to 2 {
          %a = loop.load %x[%i, %k * 2 + %g] : memref<3x8xui8>
          %b = loop.load %w16[%k, %j, %g] : memref<4x8x2xi16>
          %c = loop.load %out16[%i, %j] : memref<3x8xi32>
          %ae = arith.extui %a : i8 to i32
          %be = arith.extsi %b : i16 to i32
          %p = arith.muli %be, %ae : i32
          %s = arith.addi %p, %c : i32
          loop.store %s, %out16[%i, %j] : memref<3x8xi32>
        }
      }
    }
  }
  func.return
}
"""


@pytest.mark.parametrize("lanes", [8, 4])
def test_loop_dot_keeps_the_results(lanes):
    """loop-dot on both nests (8 lanes: one dot each; 4: two), interpreted before and
    after, and compiled after (u8 x s8 and u8 x s16, extreme values), against numpy."""
    from xdsl.passes import PassPipeline

    from xweave.context import make_context
    from xweave.passes import get_all_passes

    rng = np.random.default_rng(3)
    x = rng.integers(0, 256, (3, 8)).astype(np.uint8)
    x[0] = 255
    w = rng.integers(-128, 128, (2, 8, 4)).astype(np.int8)
    w[:, 0] = 127
    w16 = rng.integers(-32768, 32768, (4, 8, 2)).astype(np.int16)
    w16[:, 1] = -32768
    expected = x.astype(np.int64) @ w.transpose(0, 2, 1).reshape(8, 8).astype(np.int64)
    expected16 = x.astype(np.int64) @ w16.transpose(0, 2, 1).reshape(8, 8).astype(np.int64)

    def run(module_text: str, runner):
        out, out16 = np.zeros((3, 8), np.int32), np.zeros((3, 8), np.int32)
        runner(module_text, "dense", x, w, w16, out, out16)
        return out, out16

    text = 'builtin.module attributes {xweave.target = "llvm -mcpu=znver3"} {' + DOT_NEST + "}"
    module = parse_module(text)
    for loop_name in ("d.j", "e.j"):
        PassPipeline.parse_spec(get_all_passes(), f'loop-dot{{loop="{loop_name}" lanes={lanes}}}'
                                ).apply(make_context(), module)
    after = str(module)
    assert after.count("loop.dot") == (2 if lanes == 8 else 4)
    for source in (text, after):
        out, out16 = run(source, run_interpreted)
        np.testing.assert_array_equal(out, expected)
        np.testing.assert_array_equal(out16, expected16.astype(np.int32))
    if HOST.get("avx2", False):
        out, out16 = run(after, run_compiled)
        np.testing.assert_array_equal(out, expected)
        np.testing.assert_array_equal(out16, expected16.astype(np.int32))


def test_graph_widen_weights_keeps_the_results():
    """The int16 weights compute what the int8 ones did (graph interpreter, before and
    after the pass; the compiled form is checked against onnxruntime by
    tests/test_quantized_ops.py, on Zen 3 where the pass applies)."""
    from xdsl.passes import PassPipeline

    import xweave
    from xweave import pipeline
    from xweave.context import make_context
    from xweave.passes import get_all_passes

    module = xweave.load_onnx(_qlinear_conv_model())
    options = pipeline.CompileOptions(target=xweave.target.as_target("llvm -mcpu=icelake-server"))
    pipeline.lower(module, options, until="graph-opt")
    x = np.random.default_rng(5).integers(0, 256, (1, 16, 8, 8)).astype(np.uint8)
    (before,) = interpret(module, [x])
    text = str(module)
    PassPipeline.parse_spec(get_all_passes(), "graph-widen-weights{force=true}").apply(
        make_context(), module)
    assert str(module) != text and "xi16>" in str(module)
    (after,) = interpret(module, [x])
    np.testing.assert_array_equal(after, before)


def test_tuning_measures_a_quantized_conv_with_scalar_arguments(tmp_path):
    """The tuner's candidates take the kernel's arrays as the kernel declares them,
    0-d ones included (a fused DequantizeLinear's scale and zero point): a candidate
    builds, runs and computes what the unscheduled kernel computes."""
    import onnx
    from onnx import TensorProto, helper

    from xweave.autotune.kernel_tasks import extract_tasks

    model = _qlinear_conv_model()
    graph = model.graph
    graph.node.append(helper.make_node("DequantizeLinear", ["y", "ys", "yz"], ["f"]))
    del graph.output[:]
    graph.output.append(helper.make_tensor_value_info("f", TensorProto.FLOAT, None))
    path = tmp_path / "qdq.onnx"
    onnx.save(model, path)
    task = next(t for t in extract_tasks(path) if "conv2d" in t.workload_key
                and any(shape == () for shape, _ in t.input_specs()))
    candidate = task.build(task.default_point())
    candidate.setup()
    candidate.run()
    candidate.check()
    assert candidate.outputs()[0].dtype == np.float32


def test_integer_dot_row_tiles_are_whole_unless_the_input_is_padded(tmp_path):
    """A quantized dense reads its data in place: only row tiles dividing the rows are
    in its space (a ragged one guarded every load, the dot refused it and the tile ran
    scalar), and each builds with the dot. A quantized conv at 7x7 reads a padded input
    grown to whole tiles: its default ragged 4-row tile is a point of its space."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    from xweave.autotune.kernel_tasks import extract_tasks

    rng = np.random.default_rng(1)
    inits = {"as": np.float32(0.05), "az": np.array(7, np.uint8),
             "b": rng.integers(-127, 128, (64, 32)).astype(np.int8),
             "bs": np.float32(0.01), "bz": np.array(0, np.int8),
             "ys": np.float32(0.3), "yz": np.array(90, np.uint8)}
    graph = helper.make_graph(
        [helper.make_node("QLinearMatMul", ["a", "as", "az", "b", "bs", "bz", "ys", "yz"], ["y"])],
        "g", [helper.make_tensor_value_info("a", TensorProto.UINT8, [12, 64])],
        [helper.make_tensor_value_info("y", TensorProto.UINT8, None)],
        [numpy_helper.from_array(v, k) for k, v in inits.items()])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]),
              tmp_path / "qmm.onnx")
    (task,) = [t for t in extract_tasks(tmp_path / "qmm.onnx")
               if t.schedule_template.name == "integer-dot"]
    rows = task.knobs["tile_rows"]
    assert rows and all(12 % r == 0 for r in rows) and max(rows) == 12
    config = dict(task.schedule_template.default_config(task.info), tile_rows=max(rows),
                  tile_cols=8)
    point = task.space.point_of({k: config[k] for k in task.knobs})
    assert any(s.startswith("loop-dot{") for s in task.schedule(point).split("},"))
    candidate = task.build(point)
    candidate.setup()
    candidate.run()
    candidate.check()

    conv = _seven_by_seven_qconv(tmp_path / "qconv.onnx")
    (task,) = [t for t in extract_tasks(conv) if t.schedule_template.name == "integer-dot"]
    default = task.schedule_template.default_config(task.info)
    assert 7 % default["tile_rows"] != 0
    assert task.schedule_template.valid(task.info, default)
    assert task.space.point_of({k: default[k] for k in task.knobs}) == task.default_point()


def _seven_by_seven_qconv(path):
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(2)
    inits = {"xs": np.float32(0.02), "xz": np.array(3, np.uint8),
             "w": rng.integers(-127, 128, (64, 64, 3, 3)).astype(np.int8),
             "ws": np.full(64, 0.01, np.float32), "wz": np.zeros(64, np.int8),
             "ys": np.float32(0.5), "yz": np.array(100, np.uint8)}
    nodes = [helper.make_node("QLinearConv", [x, "xs", "xz", "w", "ws", "wz", "xs", "xz"], [y],
                              pads=[1, 1, 1, 1]) for x, y in (("x", "h"), ("h", "y"))]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.UINT8, [1, 64, 7, 7])],
        [helper.make_tensor_value_info("y", TensorProto.UINT8, None)],
        [numpy_helper.from_array(v, k) for k, v in inits.items()])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)
    return path
