"""runtime/jit.py: compile llvm-dialect modules for the host CPU, load, bind parameters, call."""

import ctypes
import re
import shutil
import subprocess
import sys
import textwrap

import llvmlite.binding as llvm_binding
import numpy as np
import pytest

from xweave.context import parse_module
from xweave.lowering.loop_to_llvm import extract_params, lower_module
from xweave.lowering.llvm_codegen import compile_llvm
from xweave.runtime.jit import (
    JITError,
    UnresolvedSymbolError,
    host_target_machine,
    load_object,
)


def lower(text: str):
    module = parse_module(text)
    params = extract_params(module)
    lower_module(module)
    return module, params


def scale_model(n: int, weight: str = "dense<0.0>") -> str:
    """@main(x, y): y = x * w + 1 with a weight global `w` of n floats."""
    return f"""
func.func @scale(%x: memref<{n}xf32>, %w: memref<{n}xf32>, %y: memref<{n}xf32>) attributes {{xweave.kernel}} {{
  %one = arith.constant 1.0 : f32
  loop.for %i = 0 to {n} {{
    %a = loop.load %x[%i] : memref<{n}xf32>
    %b = loop.load %w[%i] : memref<{n}xf32>
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %p, %one : f32
    loop.store %s, %y[%i] : memref<{n}xf32>
  }}
  func.return
}}
func.func @main(%x: memref<{n}xf32>, %y: memref<{n}xf32>) {{
  %w = "memref.get_global"() <{{name = @w}}> : () -> memref<{n}xf32>
  func.call @scale(%x, %w, %y) : (memref<{n}xf32>, memref<{n}xf32>, memref<{n}xf32>) -> ()
  func.return
}}
"memref.global"() <{{sym_name = "w", sym_visibility = "private", type = memref<{n}xf32>, initial_value = {weight} : tensor<{n}xf32>, constant}}> : () -> ()
"""


@pytest.fixture(scope="module")
def scale64():
    module, params = lower(scale_model(64, "dense<2.0>"))
    return compile_llvm(module), params


def run_main(engine, x: np.ndarray) -> np.ndarray:
    y = np.full_like(x, np.nan)
    engine.get_function("main", [ctypes.c_void_p, ctypes.c_void_p])(x.ctypes.data, y.ctypes.data)
    return y


def test_host_target_machine():
    tm = host_target_machine()
    assert tm is host_target_machine("pic")
    assert tm.triple == llvm_binding.get_process_triple() or "x86_64" in tm.triple


def test_compile_artifacts(scale64):
    compiled, params = scale64
    assert compiled.object_bytes[:4] == b"\x7fELF"
    assert "define void @main(" in compiled.llvm_ir
    assert "@xweave_param_table" in compiled.llvm_ir
    assert compiled.param_names == ("w",)
    assert re.search(r"^main:", compiled.assembly, re.MULTILINE)
    x = np.arange(64, dtype=np.float32)
    np.testing.assert_array_equal(run_main(compiled.load(params), x), x * 2 + 1)


def test_compile_from_text():
    compiled = compile_llvm("""
llvm.func @twice(%x: f64) -> f64 {
  %y = llvm.fadd %x, %x : f64
  llvm.return %y : f64
}
""")
    twice = load_object(compiled.object_bytes).get_function(
        "twice", [ctypes.c_double], ctypes.c_double
    )
    assert twice(1.25) == 2.5


def test_contract_loop_becomes_vector_fma():
    """A mul + add loop becomes 8- or 16-lane FMAs (ymm; zmm where LLVM picks AVX-512)."""
    module, _ = lower("""
func.func @axpy(%x: memref<1024xf32>, %y: memref<1024xf32>) attributes {xweave.kernel} {
  %a = arith.constant 3.0 : f32
  loop.for %i = 0 to 1024 {
    %v = loop.load %x[%i] : memref<1024xf32>
    %w = loop.load %y[%i] : memref<1024xf32>
    %p = arith.mulf %a, %v : f32
    %s = arith.addf %p, %w : f32
    loop.store %s, %y[%i] : memref<1024xf32>
  }
  func.return
}
""")
    compiled = compile_llvm(module)
    if not llvm_binding.get_host_cpu_features().get("fma", False):
        pytest.skip("this CPU has no FMA")
    assert re.search(r"vfmadd\d+ps\s+[^\n]*%[yz]mm", compiled.assembly), compiled.assembly
    x = np.arange(1024, dtype=np.float32)
    y = np.ones(1024, np.float32)
    load_object(compiled.object_bytes).get_function("axpy")(x, y)
    np.testing.assert_allclose(y, 3 * x + 1, rtol=1e-6)


def test_two_loaded_instances_have_their_own_parameters(scale64):
    compiled, _ = scale64
    x = np.arange(64, dtype=np.float32)
    a = compiled.load({"w": np.full(64, 3.0, np.float32)})
    b = compiled.load({"xweave_param_w": np.full(64, -1.0, np.float32)})
    # another model with a parameter of the same name, loaded in the same process
    other_module, other_params = lower(scale_model(8, "dense<5.0>"))
    c = compile_llvm(other_module).load(other_params)
    np.testing.assert_array_equal(run_main(a, x), 3 * x + 1)
    np.testing.assert_array_equal(run_main(b, x), 1 - x)
    np.testing.assert_array_equal(run_main(c, x[:8]), 5 * x[:8] + 1)
    np.testing.assert_array_equal(run_main(a, x), 3 * x + 1)


def test_parameter_errors(scale64):
    compiled, _ = scale64
    with pytest.raises(JITError, match="no value for parameter.*'w'"):
        compiled.load({})
    with pytest.raises(JITError, match="parameter 'w'.*128 bytes.*expects 256"):
        compiled.load({"w": np.zeros(32, np.float32)})


def test_unknown_function(scale64):
    compiled, params = scale64
    with pytest.raises(JITError, match="no function 'nope'"):
        compiled.load(params).get_function("nope")


MISSING = """
llvm.func @xweave_test_{name}(f32) -> f32
llvm.func @call_it(%x: f32) -> f32 {{
  %y = llvm.call @xweave_test_{name}(%x) : (f32) -> f32
  llvm.return %y : f32
}}
"""


def test_missing_external_symbol_is_a_clear_error():
    compiled = compile_llvm(MISSING.format(name="missing_fn"))
    with pytest.raises(UnresolvedSymbolError, match="'xweave_test_missing_fn'"):
        load_object(compiled.object_bytes)


def test_external_symbol_given_by_the_caller():
    compiled = compile_llvm(MISSING.format(name="callback"))
    callback = ctypes.CFUNCTYPE(ctypes.c_float, ctypes.c_float)(lambda v: v * 10)
    address = ctypes.cast(callback, ctypes.c_void_p).value
    engine = load_object(compiled.object_bytes, {"xweave_test_callback": address})
    call_it = engine.get_function("call_it", [ctypes.c_float], ctypes.c_float)
    assert call_it(1.5) == 15.0


def test_missing_symbol_does_not_crash_a_fresh_process():
    compiled = compile_llvm(MISSING.format(name="absent"))
    script = textwrap.dedent("""
        import sys
        from xweave.runtime.jit import UnresolvedSymbolError, load_object
        try:
            load_object(sys.stdin.buffer.read())
        except UnresolvedSymbolError as e:
            print("error:", e)
    """)
    proc = subprocess.run(
        [sys.executable, "-c", script], input=compiled.object_bytes, capture_output=True
    )
    assert proc.returncode == 0, proc.stderr.decode()
    assert b"'xweave_test_absent'" in proc.stdout


def test_exported_object_reloads_in_a_fresh_process(tmp_path, scale64):
    compiled, _ = scale64
    (tmp_path / "model.o").write_bytes(compiled.object_bytes)
    np.savez(tmp_path / "params.npz", w=np.linspace(-1, 1, 64, dtype=np.float32))
    script = textwrap.dedent("""
        import sys
        import numpy as np
        from pathlib import Path
        from xweave.runtime.jit import load_object

        d = Path(sys.argv[1])
        params = dict(np.load(d / "params.npz"))
        engine = load_object((d / "model.o").read_bytes(), params)
        x = np.arange(64, dtype=np.float32)
        y = np.empty_like(x)
        engine.get_function("main")(x, y)
        np.save(d / "y.npy", y)
    """)
    proc = subprocess.run([sys.executable, "-c", script, str(tmp_path)], capture_output=True)
    assert proc.returncode == 0, proc.stderr.decode()
    x = np.arange(64, dtype=np.float32)
    np.testing.assert_allclose(
        np.load(tmp_path / "y.npy"), x * np.linspace(-1, 1, 64, dtype=np.float32) + 1, rtol=1e-6
    )


@pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler to link with")
def test_pic_object_links_into_a_shared_library(tmp_path, scale64):
    compiled, _ = scale64
    (tmp_path / "model.o").write_bytes(compiled.object_bytes)
    subprocess.run(
        ["cc", "-shared", "-o", str(tmp_path / "model.so"), str(tmp_path / "model.o"), "-lm"],
        check=True,
    )
    lib = ctypes.CDLL(str(tmp_path / "model.so"))
    weights = np.full(64, 4.0, np.float32)
    (ctypes.c_void_p * 1).in_dll(lib, "xweave_param_table")[0] = weights.ctypes.data
    x = np.arange(64, dtype=np.float32)
    y = np.empty_like(x)
    lib.main(ctypes.c_void_p(x.ctypes.data), ctypes.c_void_p(y.ctypes.data))
    np.testing.assert_array_equal(y, 4 * x + 1)


def test_target_machine_is_the_host_cpu():
    from xweave.target import Target

    assert Target().llvm_cpu_and_features() == (
        llvm_binding.get_host_cpu_name(), llvm_binding.get_host_cpu_features().flatten())


def test_vector_store_through_a_stack_buffer():
    """llvmlite types an alloca `float*` and refuses other stores through it; the
    conversion makes allocas opaque pointers, as they are in LLVM."""
    module, _ = lower("""
func.func @k(%x: memref<16xf32>) attributes {xweave.kernel} {
  %t = loop.alloc : memref<16xf32, #loop.scope<local>>
  %v = loop.load %x[0] : memref<16xf32> -> vector<8xf32>
  loop.store %v, %t[8] : memref<16xf32, #loop.scope<local>>, vector<8xf32>
  %w = loop.load %t[8] : memref<16xf32, #loop.scope<local>> -> vector<8xf32>
  loop.store %w, %x[8] : memref<16xf32>, vector<8xf32>
  func.return
}
""")
    x = np.arange(16, dtype=np.float32)
    load_object(compile_llvm(module).object_bytes).get_function("k")(x)
    np.testing.assert_array_equal(x, np.tile(np.arange(8, dtype=np.float32), 2))


def test_outlined_functions_are_internal_and_the_thread_global_defined():
    module, _ = lower("""
func.func @k(%x: memref<64xf32>) attributes {xweave.kernel} {
  loop.for %i = 0 to 64 parallel {
    %v = loop.load %x[%i] : memref<64xf32>
    %w = arith.addf %v, %v : f32
    loop.store %w, %x[%i] : memref<64xf32>
  }
  func.return
}
""")
    compiled = compile_llvm(module)
    ir = compiled.llvm_ir
    assert re.search(r"define internal [^\n]*@k_parallel0\(", ir)
    assert re.search(r"^@xweave_num_threads = [^\n]*global i32 0", ir, re.MULTILINE)
    assert re.search(r"call void @GOMP_parallel\(ptr nonnull @k_parallel0", ir)
    engine = compiled.load()
    for n in (1, 2):
        engine.num_threads = n
        x = np.arange(64, dtype=np.float32)
        engine.get_function("k")(x)
        np.testing.assert_array_equal(x, 2 * np.arange(64, dtype=np.float32))


def _register_block_kernel(rows: int) -> str:
    """@k(X: 64 x rows, W: 64 x 8, Y: rows x 8): Y = X^T W, one loop over k whose
    body is a register block of `rows` vector FMAs."""
    body = []
    for r in range(rows):
        body.append(f"""
    %x{r} = loop.load %X[%k, {r}] : memref<64x{rows}xf32>
    %b{r} = vector.broadcast %x{r} : f32 to vector<8xf32>
    %a{r} = loop.load %acc[{r}, 0] : memref<{rows}x8xf32, #loop.scope<local>> -> vector<8xf32>
    %f{r} = vector.fma %b{r}, %w, %a{r} : vector<8xf32>
    loop.store %f{r}, %acc[{r}, 0] : memref<{rows}x8xf32, #loop.scope<local>>, vector<8xf32>""")
    init = "".join(f"""
  loop.store %zero, %acc[{r}, 0] : memref<{rows}x8xf32, #loop.scope<local>>, vector<8xf32>"""
                   for r in range(rows))
    out = "".join(f"""
  %o{r} = loop.load %acc[{r}, 0] : memref<{rows}x8xf32, #loop.scope<local>> -> vector<8xf32>
  loop.store %o{r}, %Y[{r}, 0] : memref<{rows}x8xf32>, vector<8xf32>""" for r in range(rows))
    return f"""
func.func @k(%X: memref<64x{rows}xf32>, %W: memref<64x8xf32>, %Y: memref<{rows}x8xf32>) attributes {{xweave.kernel}} {{
  %acc = loop.alloc : memref<{rows}x8xf32, #loop.scope<local>>
  %z = arith.constant 0.0 : f32
  %zero = vector.broadcast %z : f32 to vector<8xf32>{init}
  loop.for %k = 0 to 64 {{
    %w = loop.load %W[%k, 0] : memref<64x8xf32> -> vector<8xf32>{"".join(body)}
  }}{out}
  func.return
}}
"""


def test_register_block_step_is_not_unrolled_by_llvm():
    """A loop of 13 accumulating FMAs keeps them in registers: LLVM is told not to
    unroll it (`!llvm.loop` with unroll.disable on a distinct self-referencing ID),
    so the optimized loop holds the 13 FMAs once; the result is unchanged."""
    module, _ = lower(_register_block_kernel(13))
    compiled = compile_llvm(module)
    ir = compiled.llvm_ir
    loop_id = re.search(r"!llvm\.loop (!\d+)", ir)
    assert loop_id, "the register-block loop lost its metadata"
    node = re.search(rf"^{loop_id.group(1)} = distinct !\{{{loop_id.group(1)}, (!\d+)\}}", ir,
                     re.MULTILINE)
    assert node and f'{node.group(1)} = !{{!"llvm.loop.unroll.disable"}}' in ir
    assert len(re.findall(r"call [^\n]*@llvm\.fma\.v8f32", ir)) == 13
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 13), dtype=np.float32)
    w = rng.standard_normal((64, 8), dtype=np.float32)
    y = np.zeros((13, 8), dtype=np.float32)
    compiled.load().get_function("k")(x, w, y)
    np.testing.assert_allclose(y, x.T @ w, rtol=1e-4, atol=1e-4)


def test_smaller_register_block_keeps_llvm_unrolling():
    module, _ = lower(_register_block_kernel(12))
    ir = compile_llvm(module).llvm_ir
    assert "llvm.loop.unroll.disable" not in ir
    assert len(re.findall(r"call [^\n]*@llvm\.fma\.v8f32", ir)) > 12  # LLVM unrolled it
