"""loop-vectorize and loop-parallel, and parallel loops on libgomp's threads.

Kernels are written at the loop stage (a matmul whose j loop is split by 8 by hand, an
elementwise kernel, a convolution whose innermost loop runs over output channels),
rewritten by the passes, then both interpreted and compiled; everything is compared
with numpy.
"""

import os
import re
import subprocess
import sys
import textwrap

import llvmlite.binding as llvm_binding
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from xdsl.dialects import arith

import xweave
from xweave.context import make_context, parse_module
from xweave.dialects import loop
from xweave.dialects.interpreters import interpret
from xweave.errors import XweaveError
from xweave.lowering.loop_to_llvm import extract_params, lower_module
from xweave.passes.loop_parallel import LoopParallelPass, parallel_conflict
from xweave.passes.loop_utils import find_loops
from xweave.passes import loop_vectorize
from xweave.passes.loop_vectorize import LoopVectorizePass, vectorize_conflict
from xweave.runtime import threads
from xweave.lowering.llvm_codegen import compile_llvm
from xweave.pipeline import compile_lowered
from xweave.runtime.module import TensorSpec

from helpers import assert_refused_untouched

RTOL = 1e-5
RNG = np.random.default_rng(7)


def rand(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def schedule(text: str, *passes):
    module = parse_module(text)
    ctx = make_context()
    for p in passes:
        p.apply(ctx, module)
    module.verify()
    return module


def compile_module(module):
    """Lower a copy of the loop-stage module and load it."""
    lowered = module.clone()
    params = extract_params(lowered)
    lower_module(lowered)
    compiled = compile_llvm(lowered)
    return compiled, compiled.load(params)


# ----------------------------------------------------------------------------------
# Kernels
# ----------------------------------------------------------------------------------

M, K, N = 24, 40, 48
MATMUL = f"""
func.func @matmul(%A: memref<{M}x{K}xf32>, %B: memref<{K}x{N}xf32>, %C: memref<{M}x{N}xf32>) attributes {{xweave.kernel}} {{
  loop.for "mm_init.i" %i0 = 0 to {M} {{
    loop.for "mm_init.j" %j0 = 0 to {N} {{
      %zero = arith.constant 0.0 : f32
      loop.store %zero, %C[%i0, %j0] : memref<{M}x{N}xf32>
    }}
  }}
  loop.for "mm.i" %i = 0 to {M} {{
    loop.for "mm.jo" %jo = 0 to {N // 8} {{
      loop.for "mm.k" %k = 0 to {K} {{
        loop.for "mm.ji" %ji = 0 to 8 {{
          %a = loop.load %A[%i, %k] : memref<{M}x{K}xf32>
          %b = loop.load %B[%k, %jo * 8 + %ji] : memref<{K}x{N}xf32>
          %c = loop.load %C[%i, %jo * 8 + %ji] : memref<{M}x{N}xf32>
          %p = arith.mulf %a, %b : f32
          %s = arith.addf %c, %p : f32
          loop.store %s, %C[%i, %jo * 8 + %ji] : memref<{M}x{N}xf32>
        }}
      }}
    }}
  }}
  func.return
}}
"""

ELEMWISE = """
func.func @elem(%x: memref<6x64xf32>, %b: memref<6xf32>, %y: memref<6x64xf32>) attributes {xweave.kernel} {
  %zero = arith.constant 0.0 : f32
  %half = arith.constant 0.5 : f32
  loop.for "el.i" %i = 0 to 6 {
    loop.for "el.j" %j = 0 to 64 {
      %v = loop.load %x[%i, %j] : memref<6x64xf32>
      %bias = loop.load %b[%i] : memref<6xf32>
      %s = arith.addf %v, %bias : f32
      %e = math.tanh %s : f32
      %h = arith.mulf %e, %half : f32
      %r = arith.maximumf %h, %zero : f32
      loop.store %r, %y[%i, %j] : memref<6x64xf32>
    }
  }
  func.return
}
"""

# A 3x3 convolution, HWC input and HWIO weights, the innermost loop over 16 output
# channels (contiguous in the output and the weights): vectorized, rows in parallel.
H, W, CI, CO = 10, 9, 3, 16
CONV = f"""
func.func @conv(%x: memref<{H}x{W}x{CI}xf32>, %w: memref<3x3x{CI}x{CO}xf32>, %y: memref<{H - 2}x{W - 2}x{CO}xf32>) attributes {{xweave.kernel}} {{
  %zero = arith.constant 0.0 : f32
  loop.for "cv.y" %oy = 0 to {H - 2} {{
    loop.for "cv.x" %ox = 0 to {W - 2} {{
      loop.for "cv_init.f" %f0 = 0 to {CO} {{
        loop.store %zero, %y[%oy, %ox, %f0] : memref<{H - 2}x{W - 2}x{CO}xf32>
      }}
      loop.for "cv.ky" %ky = 0 to 3 {{
        loop.for "cv.kx" %kx = 0 to 3 {{
          loop.for "cv.c" %c = 0 to {CI} {{
            loop.for "cv.f" %f = 0 to {CO} {{
              %a = loop.load %x[%oy + %ky, %ox + %kx, %c] : memref<{H}x{W}x{CI}xf32>
              %b = loop.load %w[%ky, %kx, %c, %f] : memref<3x3x{CI}x{CO}xf32>
              %acc = loop.load %y[%oy, %ox, %f] : memref<{H - 2}x{W - 2}x{CO}xf32>
              %p = arith.mulf %a, %b : f32
              %s = arith.addf %acc, %p : f32
              loop.store %s, %y[%oy, %ox, %f] : memref<{H - 2}x{W - 2}x{CO}xf32>
            }}
          }}
        }}
      }}
    }}
  }}
  func.return
}}
"""

ROWSUM = """
func.func @rowsum(%x: memref<5x32xf32>, %s: memref<5xf32>) attributes {xweave.kernel} {
  loop.for "rs.i" %i = 0 to 5 {
    %zero = arith.constant 0.0 : f32
    loop.store %zero, %s[%i] : memref<5xf32>
    loop.for "rs.j" %j = 0 to 32 {
      %v = loop.load %x[%i, %j] : memref<5x32xf32>
      %sq = arith.mulf %v, %v : f32
      %acc = loop.load %s[%i] : memref<5xf32>
      %t = arith.addf %acc, %sq : f32
      loop.store %t, %s[%i] : memref<5xf32>
    }
  }
  func.return
}
"""


def conv_reference(x, w):
    y = np.zeros((H - 2, W - 2, CO), np.float32)
    for ky in range(3):
        for kx in range(3):
            y += np.einsum("hwc,cf->hwf", x[ky:ky + H - 2, kx:kx + W - 2], w[ky, kx])
    return y


# ----------------------------------------------------------------------------------
# Numerical checks: interpreter and compiled code against numpy
# ----------------------------------------------------------------------------------


def test_matmul_vectorized_and_parallel():
    module = schedule(
        MATMUL,
        LoopVectorizePass(loop="mm.ji"),
        LoopVectorizePass(loop="mm_init.j"),
        LoopParallelPass(loop="mm.i"),
        LoopParallelPass(loop="mm_init.i"),
    )
    assert not any(f.name_str in ("mm.ji", "mm_init.j") for f in module.walk() if isinstance(f, loop.ForOp))
    names = {op.name for op in module.walk()}
    assert "vector.fma" in names and "vector.broadcast" in names
    a, b = rand(M, K), rand(K, N)
    c_interp = np.full((M, N), np.nan, np.float32)
    interpret(module, [a, b, c_interp], entry="matmul")
    np.testing.assert_allclose(c_interp, a @ b, rtol=RTOL, atol=1e-5)

    compiled, engine = compile_module(module)
    fn = engine.get_function("matmul")
    for n in (1, 2):
        engine.num_threads = n
        c = np.full((M, N), np.nan, np.float32)
        fn(a, b, c)
        np.testing.assert_allclose(c, a @ b, rtol=RTOL, atol=1e-5)
    if llvm_binding.get_host_cpu_features().get("fma", False):
        assert re.search(r"vfmadd\d+ps\s+[^\n]*%ymm", compiled.assembly)


def test_elementwise_vectorized_in_groups_and_parallel():
    module = schedule(ELEMWISE, LoopVectorizePass(loop="el.j"), LoopParallelPass(loop="el.i"))
    x, b = rand(6, 64), rand(6)
    expected = np.maximum(np.tanh(x + b[:, None]) * 0.5, 0)
    y_interp = np.empty_like(x)
    interpret(module, [x, b, y_interp], entry="elem")
    np.testing.assert_allclose(y_interp, expected, rtol=RTOL, atol=1e-6)
    _, engine = compile_module(module)
    for n in (1, 2):
        engine.num_threads = n
        y = np.full_like(x, np.nan)
        engine.get_function("elem")(x, b, y)
        np.testing.assert_allclose(y, expected, rtol=RTOL, atol=1e-6)


def test_conv_output_channels_vectorized_rows_parallel():
    module = schedule(
        CONV,
        LoopVectorizePass(loop="cv.f"),
        LoopVectorizePass(loop="cv_init.f"),
        LoopParallelPass(loop="cv.y"),
    )
    loads = [op for op in module.walk() if isinstance(op, loop.LoadOp) and op.vector_type]
    assert {str(op.vector_type) for op in loads} == {"vector<16xf32>"}
    x, w = rand(H, W, CI), rand(3, 3, CI, CO)
    expected = conv_reference(x, w)
    y_interp = np.empty((H - 2, W - 2, CO), np.float32)
    interpret(module, [x, w, y_interp], entry="conv")
    np.testing.assert_allclose(y_interp, expected, rtol=RTOL, atol=1e-5)
    _, engine = compile_module(module)
    for n in (1, 2):
        engine.num_threads = n
        y = np.full((H - 2, W - 2, CO), np.nan, np.float32)
        engine.get_function("conv")(x, w, y)
        np.testing.assert_allclose(y, expected, rtol=RTOL, atol=1e-5)


def test_vectorized_reduction_keeps_the_serial_order():
    module = schedule(ROWSUM, LoopVectorizePass(loop="rs.j"))
    reductions = [op for op in module.walk() if op.name == "vector.reduction"]
    assert len(reductions) == 4  # 32 lanes: four groups of 8, chained through %s
    x = rand(5, 32) * 100
    serial = np.empty(5, np.float32)
    interpret(parse_module(ROWSUM), [x, serial], entry="rowsum")
    _, engine = compile_module(module)
    s = np.empty(5, np.float32)
    engine.get_function("rowsum")(x, s)
    # in order, without reassociation: bit-identical to the serial loop's f32 sums
    np.testing.assert_array_equal(s, serial)
    np.testing.assert_allclose(s, (x.astype(np.float64) ** 2).sum(axis=1), rtol=RTOL)


def test_vectorized_store_into_a_local_buffer():
    """A vector store through a stack buffer (llvmlite typed allocas used to reject it)."""
    module = schedule("""
func.func @k(%x: memref<4x8xf32>, %y: memref<4x8xf32>) attributes {xweave.kernel} {
  %t = loop.alloc : memref<8xf32, #loop.scope<local>>
  loop.for "k.i" %i = 0 to 4 {
    loop.for "k.j" %j = 0 to 8 {
      %v = loop.load %x[%i, %j] : memref<4x8xf32>
      %d = arith.addf %v, %v : f32
      loop.store %d, %t[%j] : memref<8xf32, #loop.scope<local>>
    }
    loop.for "k.j2" %j2 = 0 to 8 {
      %v = loop.load %t[%j2] : memref<8xf32, #loop.scope<local>>
      loop.store %v, %y[%i, %j2] : memref<4x8xf32>
    }
  }
  func.return
}
""", LoopVectorizePass(loop="k.j"), LoopVectorizePass(loop="k.j2"))
    compiled, engine = compile_module(module)
    x = rand(4, 8)
    y = np.empty_like(x)
    engine.get_function("k")(x, y)
    np.testing.assert_array_equal(y, 2 * x)


# ----------------------------------------------------------------------------------
# Failures leave the IR untouched
# ----------------------------------------------------------------------------------


def test_rejections_leave_the_module_untouched():
    module = parse_module(MATMUL.replace("loop.load %A[%i, %k]", "loop.load %A[%ji, %k]"))
    assert_refused_untouched(LoopVectorizePass(loop="mm.ji"), module,
                             "'loop.load' uses the loop variable outside the last")
    module.verify()
    assert_refused_untouched(LoopParallelPass(loop="mm.k"), module, "loop 'mm.k'.*reduction axis")


def test_all_loops_of_the_name_or_none():
    """Two loops of the same name: the second fails; the first is not rewritten either."""
    module = parse_module("""
func.func @a(%x: memref<8xf32>, %y: memref<8xf32>) attributes {xweave.kernel} {
  loop.for "v.j" %j = 0 to 8 {
    %v = loop.load %x[%j] : memref<8xf32>
    loop.store %v, %y[%j] : memref<8xf32>
  }
  func.return
}
func.func @b(%x: memref<16xf32>, %y: memref<8xf32>) attributes {xweave.kernel} {
  loop.for "v.j" %j = 0 to 8 {
    %v = loop.load %x[%j * 2] : memref<16xf32>
    loop.store %v, %y[%j] : memref<8xf32>
  }
  func.return
}
""")
    assert_refused_untouched(LoopVectorizePass(loop="v.j"), module, "stride 2")
    LoopVectorizePass(loop="v.j", kernel="a").apply(make_context(), module)
    assert "vector<8xf32>" in str(module)


def test_conflict_queries_for_schedulers():
    module = parse_module(MATMUL)
    (ji,) = find_loops(module, "mm.ji")
    (k,) = find_loops(module, "mm.k")
    assert vectorize_conflict(ji) is None and parallel_conflict(ji) is None
    assert "reduction axis" in parallel_conflict(k)
    assert "'loop.load' uses the loop variable outside the last dimension" in vectorize_conflict(k)


# ----------------------------------------------------------------------------------
# loop-parallel is sound: a random access pattern is accepted only if no two
# iterations touch a common element (one writing it), checked by enumeration
# ----------------------------------------------------------------------------------


@st.composite
def access_patterns(draw):
    n, inner = draw(st.integers(2, 6)), draw(st.integers(1, 4))
    def expr():
        ci, ck, c0 = draw(st.integers(-3, 3)), draw(st.integers(-2, 2)), draw(st.integers(0, 12))
        kind = draw(st.sampled_from(["lin", "div", "mod"]))
        return ci, ck, c0, kind
    return n, inner, [expr() for _ in range(2)], [expr() for _ in range(2)]


def _render(e, i="%i", k="%k"):
    ci, ck, c0, kind = e
    lin = f"{i} * {ci} + {k} * {ck} + {c0 + 20}"
    return {"lin": lin, "div": f"({lin}) floordiv 3", "mod": f"({lin}) mod 4"}[kind]


def _evaluate(e, i, k):
    ci, ck, c0, kind = e
    lin = i * ci + k * ck + c0 + 20
    return {"lin": lin, "div": lin // 3, "mod": lin % 4}[kind]


@settings(max_examples=60, deadline=None)
@given(access_patterns())
def test_parallel_legality_matches_enumeration(pattern):
    n, inner, store, load = pattern
    text = f"""
func.func @k(%A: memref<64x64xf32>) attributes {{xweave.kernel}} {{
  loop.for "p.i" %i = 0 to {n} {{
    loop.for "p.k" %k = 0 to {inner} {{
      %v = loop.load %A[{_render(load[0])}, {_render(load[1])}] : memref<64x64xf32>
      loop.store %v, %A[{_render(store[0])}, {_render(store[1])}] : memref<64x64xf32>
    }}
  }}
  func.return
}}
"""
    (for_op,) = find_loops(parse_module(text), "p.i")
    accepted = parallel_conflict(for_op) is None
    writes = {i: {(_evaluate(store[0], i, k), _evaluate(store[1], i, k)) for k in range(inner)}
              for i in range(n)}
    reads = {i: {(_evaluate(load[0], i, k), _evaluate(load[1], i, k)) for k in range(inner)}
             for i in range(n)}
    conflict = any(
        writes[x] & (writes[y] | reads[y]) for x in range(n) for y in range(n) if x != y
    )
    if accepted:
        assert not conflict, text


# ----------------------------------------------------------------------------------
# Threads: the count is honoured, set without recompiling
# ----------------------------------------------------------------------------------

TEAM = """
llvm.func @omp_get_num_threads() -> i32
llvm.func @omp_get_thread_num() -> i32
func.func @team(%n: memref<64xi32>, %t: memref<64xi32>) attributes {xweave.kernel} {
  loop.for "team.i" %i = 0 to 64 parallel {
    %a = llvm.call @omp_get_num_threads() : () -> i32
    %b = llvm.call @omp_get_thread_num() : () -> i32
    loop.store %a, %n[%i] : memref<64xi32>
    loop.store %b, %t[%i] : memref<64xi32>
  }
  func.return
}
"""


@pytest.fixture(scope="module")
def team():
    module = parse_module(TEAM)
    lower_module(module)
    return compile_llvm(module)


def run_team(engine):
    n, t = np.full(64, -1, np.int32), np.full(64, -1, np.int32)
    engine.get_function("team")(n, t)
    return n, t


def test_requested_thread_count_is_the_team_size(team):
    engine = team.load()
    engine.num_threads = 2
    n, t = run_team(engine)
    assert set(n) == {2}
    # contiguous chunks: thread 0 runs iterations 0..31, thread 1 runs 32..63
    assert list(t) == [0] * 32 + [1] * 32
    engine.num_threads = 1
    n, t = run_team(engine)
    assert set(n) == {1} and set(t) == {0}  # the body called directly: no region
    engine.num_threads = 3
    assert set(run_team(engine)[0]) == {3}
    assert threads.get_num_threads(engine) == 3


def test_two_loaded_instances_have_their_own_thread_count(team):
    a, b = team.load(), team.load()
    a.num_threads, b.num_threads = 1, 2
    assert set(run_team(a)[0]) == {1}
    assert set(run_team(b)[0]) == {2}


def test_default_thread_count(monkeypatch, team):
    monkeypatch.delenv(threads.NUM_THREADS_ENV, raising=False)
    assert threads.default_num_threads() == threads.available_cores()
    assert team.load().num_threads == threads.available_cores()
    monkeypatch.setenv(threads.NUM_THREADS_ENV, "2")
    engine = team.load()
    assert engine.num_threads == 2 and set(run_team(engine)[0]) == {2}
    monkeypatch.setenv(threads.NUM_THREADS_ENV, "zero")
    with pytest.raises(XweaveError, match="XWEAVE_NUM_THREADS='zero'"):
        team.load()
    with pytest.raises(XweaveError, match="positive"):
        threads.set_num_threads(engine, 0)


SCRIPT = textwrap.dedent("""
    import sys
    import numpy as np
    from xweave.runtime.load import load_module
    from xweave.runtime.threads import get_num_threads

    module = load_module(sys.argv[1])
    rng = np.random.default_rng(0)
    a = rng.standard_normal(module.inputs[0].shape).astype(np.float32)
    b = rng.standard_normal(module.inputs[1].shape).astype(np.float32)
    (c,) = module.run(a=a, b=b)
    np.save(sys.argv[2], c)
    print(get_num_threads(module))
""")


def test_exported_parallel_module_runs_in_a_fresh_process(tmp_path):
    module = schedule(
        MATMUL + f"""
func.func @main(%a: memref<{M}x{K}xf32>, %b: memref<{K}x{N}xf32>, %c: memref<{M}x{N}xf32>) attributes {{xweave.input_names = ["a", "b"], xweave.output_names = ["c"]}} {{
  func.call @matmul(%a, %b, %c) : (memref<{M}x{K}xf32>, memref<{K}x{N}xf32>, memref<{M}x{N}xf32>) -> ()
  func.return
}}
""",
        LoopVectorizePass(loop="mm.ji"),
        LoopParallelPass(loop="mm.i"),
        LoopParallelPass(loop="mm_init.i"),
    )
    params = extract_params(module)
    lower_module(module)
    signature = (
        [TensorSpec("a", (M, K), "float32"), TensorSpec("b", (K, N), "float32")],
        [TensorSpec("c", (M, N), "float32")],
    )
    compiled = compile_lowered(module, params, signature)
    path = tmp_path / "mm.xweave"
    compiled.export(path)
    rng = np.random.default_rng(0)
    a = rng.standard_normal((M, K)).astype(np.float32)
    b = rng.standard_normal((K, N)).astype(np.float32)
    results = {}
    for n in ("1", "2"):
        env = dict(os.environ, XWEAVE_NUM_THREADS=n)
        out = tmp_path / f"c{n}.npy"
        proc = subprocess.run([sys.executable, "-c", SCRIPT, str(path), str(out)],
                              env=env, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.strip() == n
        results[n] = np.load(out)
        np.testing.assert_allclose(results[n], a @ b, rtol=RTOL, atol=1e-5)
    np.testing.assert_array_equal(results["1"], results["2"])


def test_process_exits_cleanly_while_workers_spin(tmp_path, team):
    """LLVM closes the libraries it loaded at exit; libgomp must stay mapped while its
    idle workers spin (OMP_WAIT_POLICY=active: they never sleep)."""
    (tmp_path / "team.o").write_bytes(team.object_bytes)
    script = textwrap.dedent("""
        import sys
        import numpy as np
        from xweave.runtime.jit import load_object
        engine = load_object(open(sys.argv[1], "rb").read())
        engine.num_threads = 2
        n, t = np.zeros(64, np.int32), np.zeros(64, np.int32)
        for _ in range(100):
            engine.get_function("team")(n, t)
        print(sorted(set(n.tolist())))
    """)
    env = dict(os.environ, OMP_WAIT_POLICY="active")
    proc = subprocess.run([sys.executable, "-c", script, str(tmp_path / "team.o")],
                          env=env, capture_output=True, text=True)
    assert proc.returncode == 0, (proc.returncode, proc.stderr)
    assert proc.stdout.strip() == "[2]"


def test_build_takes_a_thread_count(tmp_path):
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 8])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    compiled = xweave.build(model, threads=1)
    assert threads.get_num_threads(compiled) == 1
    x = rand(2, 8)
    np.testing.assert_array_equal(compiled.run(x=x)[0], np.maximum(x, 0))
    with pytest.raises(XweaveError, match="positive"):
        xweave.build(model, threads=0)
    del onnx


def test_an_op_without_vector_form_is_rejected_after_building(monkeypatch):
    """An op whose vector form does not verify is found while building the vector body
    (xDSL 0.74's arith.sitofp takes no vectors: here it is not mapped to loop.convert);
    the ops built so far are dropped, and the IR keeps no use of theirs."""
    conversions = dict(loop_vectorize._CONVERSIONS)
    del conversions[arith.SIToFPOp]
    monkeypatch.setattr(loop_vectorize, "_CONVERSIONS", conversions)
    module = parse_module("""
func.func @k(%x: memref<16xi32>, %z: memref<16xf32>) attributes {xweave.kernel} {
  %c3 = arith.constant 3 : i32
  loop.for "k.j" %j = 0 to 16 {
    %v = loop.load %x[%j] : memref<16xi32>
    %m = arith.muli %v, %c3 : i32
    %t = arith.sitofp %m : i32 to f32
    loop.store %t, %z[%j] : memref<16xf32>
  }
  func.return
}
""")
    assert_refused_untouched(LoopVectorizePass(loop="k.j"), module, "'arith.sitofp' has no vector form")
    module.verify()
    (c3,) = [op for op in module.walk() if op.name == "arith.constant"]
    assert len(list(c3.results[0].uses)) == 1
