"""convert-loop-to-llvm: hand-written loop-stage IR, lowered, JIT-compiled, run, compared with numpy."""

import math

import numpy as np
import pytest
from xdsl.dialects import llvm
from xdsl.dialects.builtin import ModuleOp

from xweave.context import make_context, parse_module
from xweave.dialects import loop
from xweave.lowering.llvm_builder import LoweringError
from xweave.lowering.loop_to_llvm import (
    FOR_LOWERINGS,
    LOCAL_STACK_LIMIT,
    ConvertLoopToLLVMPass,
    extract_params,
    lower_module,
)
from xweave.lowering.llvm_codegen import compile_llvm
from xweave.runtime.jit import load_object

from helpers import MATMUL_LOOPS

RTOL = 1e-5


def lower(text: str) -> tuple[ModuleOp, dict[str, np.ndarray]]:
    module = parse_module(text)
    params = extract_params(module)
    lower_module(module)
    module.verify()
    return module, params


def build(text: str):
    module, params = lower(text)
    return load_object(compile_llvm(module).object_bytes, params), module


def function(module: ModuleOp, name: str) -> llvm.FuncOp:
    return next(op for op in module.ops if isinstance(op, llvm.FuncOp) and op.sym_name.data == name)


def op_names(op) -> list[str]:
    return [o.name for o in op.walk()]


def resources(**blobs: np.ndarray) -> str:
    """A dialect_resources section holding the arrays (MLIR blob format)."""
    entries = ",\n".join(f'{k}: "0x04000000{v.tobytes().hex()}"' for k, v in blobs.items())
    return "{-#\n  dialect_resources: {\n    builtin: {\n" + entries + "\n    }\n  }\n#-}\n"


# ----------------------------------------------------------------------------------
# Kernels
# ----------------------------------------------------------------------------------

def test_naive_matmul():
    engine, module = build(MATMUL_LOOPS)
    assert {op.name for op in module.ops} == {"llvm.func"}
    rng = np.random.default_rng(1)
    a = rng.standard_normal((5, 7)).astype(np.float32)
    b = rng.standard_normal((7, 9)).astype(np.float32)
    c = np.full((5, 9), np.nan, np.float32)
    engine.get_function("matmul")(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=RTOL, atol=1e-6)


CONV = """
func.func @conv(%data: memref<1x3x8x8xf32>, %w: memref<4x3x3x3xf32>, %out: memref<1x4x8x8xf32>) attributes {xweave.kernel} {
  %pad = loop.alloc : memref<1x3x10x10xf32, #loop.scope<local>>
  %zero = arith.constant 0.0 : f32
  %c1 = arith.constant 1 : index
  %c9 = arith.constant 9 : index
  loop.for %c = 0 to 3 {
    loop.for %h = 0 to 10 {
      loop.for %x = 0 to 10 {
        %hin = arith.cmpi sge, %h, %c1 : index
        %hlt = arith.cmpi slt, %h, %c9 : index
        %xin = arith.cmpi sge, %x, %c1 : index
        %xlt = arith.cmpi slt, %x, %c9 : index
        %a = arith.andi %hin, %hlt : i1
        %b = arith.andi %xin, %xlt : i1
        %in = arith.andi %a, %b : i1
        %v = scf.if %in -> (f32) {
          %e = loop.load %data[0, %c, %h - 1, %x - 1] : memref<1x3x8x8xf32>
          scf.yield %e : f32
        } else {
          scf.yield %zero : f32
        }
        loop.store %v, %pad[0, %c, %h, %x] : memref<1x3x10x10xf32, #loop.scope<local>>
      }
    }
  }
  loop.for %f = 0 to 4 parallel {
    loop.for %y = 0 to 8 {
      loop.for %x = 0 to 8 {
        loop.store %zero, %out[0, %f, %y, %x] : memref<1x4x8x8xf32>
        loop.for %c = 0 to 3 {
          loop.for %ky = 0 to 3 unrolled {
            loop.for %kx = 0 to 3 unrolled {
              %a = loop.load %pad[0, %c, %y + %ky, %x + %kx] : memref<1x3x10x10xf32, #loop.scope<local>>
              %b = loop.load %w[%f, %c, %ky, %kx] : memref<4x3x3x3xf32>
              %acc = loop.load %out[0, %f, %y, %x] : memref<1x4x8x8xf32>
              %p = arith.mulf %a, %b : f32
              %s = arith.addf %acc, %p : f32
              loop.store %s, %out[0, %f, %y, %x] : memref<1x4x8x8xf32>
            }
          }
        }
      }
    }
  }
  func.return
}
"""

RELU = """
func.func @relu(%x: memref<1x4x8x8xf32>, %y: memref<1x4x8x8xf32>) attributes {xweave.kernel} {
  %zero = arith.constant 0.0 : f32
  loop.for %f = 0 to 4 {
    loop.for %h = 0 to 8 {
      loop.for %w = 0 to 8 {
        %v = loop.load %x[0, %f, %h, %w] : memref<1x4x8x8xf32>
        %r = arith.maximumf %v, %zero : f32
        loop.store %r, %y[0, %f, %h, %w] : memref<1x4x8x8xf32>
      }
    }
  }
  func.return
}
"""


def conv_reference(data: np.ndarray, w: np.ndarray) -> np.ndarray:
    padded = np.pad(data, ((0, 0), (0, 0), (1, 1), (1, 1)))
    out = np.zeros((1, w.shape[0], 8, 8), np.float32)
    for ky in range(3):
        for kx in range(3):
            out += np.einsum("nchw,fc->nfhw", padded[:, :, ky:ky + 8, kx:kx + 8], w[:, :, ky, kx])
    return out


def test_conv_with_padded_local_buffer():
    engine, module = build(CONV)
    conv = function(module, "conv")
    # the local buffer is a stack allocation in the entry block, not a heap buffer
    entry_ops = [op.name for op in conv.body.blocks.first.ops]
    assert "llvm.alloca" in entry_ops
    # the parallel loop over output channels: its body outlined, run by GOMP_parallel
    calls = {o.callee.root_reference.data for o in conv.walk() if isinstance(o, llvm.CallOp)}
    assert calls == {"GOMP_parallel", "conv_parallel0_body"}
    assert "aligned_alloc" not in calls
    rng = np.random.default_rng(2)
    data = rng.standard_normal((1, 3, 8, 8)).astype(np.float32)
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    out = np.full((1, 4, 8, 8), np.nan, np.float32)
    engine.get_function("conv")(data, w, out)
    np.testing.assert_allclose(out, conv_reference(data, w), rtol=RTOL, atol=1e-5)


def test_elementwise_exp_tanh_erf():
    engine, _ = build("""
func.func @elem(%X: memref<3x37xf32>, %Y: memref<3x37xf32>, %Z: memref<3x37xf32>) attributes {xweave.kernel} {
  loop.for %i = 0 to 3 {
    loop.for %j = 0 to 37 {
      %x = loop.load %X[%i, %j] : memref<3x37xf32>
      %e = math.exp %x : f32
      %t = math.tanh %x : f32
      %s = arith.addf %e, %t : f32
      loop.store %s, %Y[%i, %j] : memref<3x37xf32>
      %r = math.erf %x : f32
      %a = math.absf %x : f32
      %q = math.sqrt %a : f32
      %z = arith.subf %r, %q : f32
      loop.store %z, %Z[%i, %j] : memref<3x37xf32>
    }
  }
  func.return
}
""")
    x = np.linspace(-4, 4, 3 * 37, dtype=np.float32).reshape(3, 37)
    y, z = np.empty_like(x), np.empty_like(x)
    engine.get_function("elem")(x, y, z)
    np.testing.assert_allclose(y, np.exp(x) + np.tanh(x), rtol=RTOL, atol=1e-6)
    erf = np.vectorize(math.erf)(x.astype(np.float64))
    np.testing.assert_allclose(z, erf - np.sqrt(np.abs(x)), rtol=RTOL, atol=1e-6)


def test_vector_fma_kernel():
    engine, module = build("""
func.func @vfma(%A: memref<4x64xf32>, %B: memref<4x64xf32>, %C: memref<4x64xf32>, %S: memref<4xf32>) attributes {xweave.kernel} {
  %half = arith.constant 0.5 : f32
  %zero = arith.constant 0.0 : f32
  %h = vector.broadcast %half : f32 to vector<8xf32>
  loop.for %r = 0 to 4 {
    loop.store %zero, %S[%r] : memref<4xf32>
    loop.for %i = 0 to 64 step 8 vectorized {
      %a = loop.load %A[%r, %i] : memref<4x64xf32> -> vector<8xf32>
      %b = loop.load %B[%r, %i] : memref<4x64xf32> -> vector<8xf32>
      %c = vector.fma %a, %b, %h : vector<8xf32>
      %t = math.tanh %c : vector<8xf32>
      loop.store %t, %C[%r, %i] : memref<4x64xf32>, vector<8xf32>
      %acc = loop.load %S[%r] : memref<4xf32>
      %s = vector.reduction <add>, %c, %acc : vector<8xf32> into f32
      %l = vector.extract %c[7] : f32 from vector<8xf32>
      %s2 = arith.addf %s, %l : f32
      loop.store %s2, %S[%r] : memref<4xf32>
    }
  }
  func.return
}
""")
    names = op_names(function(module, "vfma"))
    assert "llvm.intr.fma" in names and "llvm.intr.vector.reduce.fadd" in names
    rng = np.random.default_rng(3)
    a = rng.standard_normal((4, 64)).astype(np.float32)
    b = rng.standard_normal((4, 64)).astype(np.float32)
    c, s = np.empty_like(a), np.empty(4, np.float32)
    engine.get_function("vfma")(a, b, c, s)
    fused = a * b + np.float32(0.5)
    np.testing.assert_allclose(c, np.tanh(fused), rtol=RTOL, atol=1e-6)
    chunks = fused.reshape(4, 8, 8)
    np.testing.assert_allclose(s, chunks.sum(axis=(1, 2)) + chunks[:, :, 7].sum(axis=1), rtol=1e-4)


def test_vector_math_and_reduction_ops():
    engine, _ = build("""
func.func @vec(%X: memref<16xf32>, %Y: memref<16xf32>, %O: memref<6x16xf32>, %R: memref<4xf32>, %I: memref<8xi32>) attributes {xweave.kernel} {
  %ramp = arith.constant dense<[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]> : vector<8xf32>
  %half = arith.constant dense<0.5> : vector<8xf32>
  %two = arith.constant 2 : i32
  loop.for %i = 0 to 16 step 8 {
    %x = loop.load %X[%i] : memref<16xf32> -> vector<8xf32>
    %y = loop.load %Y[%i] : memref<16xf32> -> vector<8xf32>
    %xs = loop.load %X[%i] : memref<16xf32>
    %ys = loop.load %Y[%i] : memref<16xf32>
    %gt = arith.cmpf ogt, %xs, %ys : f32
    %m = arith.select %gt, %x, %ramp : vector<8xf32>
    loop.store %m, %O[0, %i] : memref<6x16xf32>, vector<8xf32>
    %a = math.absf %x : vector<8xf32>
    %l = math.log1p %a : vector<8xf32>
    loop.store %l, %O[1, %i] : memref<6x16xf32>, vector<8xf32>
    %r = math.rsqrt %a : vector<8xf32>
    loop.store %r, %O[2, %i] : memref<6x16xf32>, vector<8xf32>
    %mx = arith.maxnumf %x, %y : vector<8xf32>
    %mn = arith.minimumf %mx, %half : vector<8xf32>
    loop.store %mn, %O[3, %i] : memref<6x16xf32>, vector<8xf32>
    %pw = math.powf %a, %half : vector<8xf32>
    loop.store %pw, %O[4, %i] : memref<6x16xf32>, vector<8xf32>
    %ng = arith.negf %x : vector<8xf32>
    %dv = arith.divf %ng, %half : vector<8xf32>
    loop.store %dv, %O[5, %i] : memref<6x16xf32>, vector<8xf32>
  }
  %x0 = loop.load %X[0] : memref<16xf32> -> vector<16xf32>
  %rmax = vector.reduction <maxnumf>, %x0 : vector<16xf32> into f32
  %rmin = vector.reduction <minimumf>, %x0 : vector<16xf32> into f32
  %rmul = vector.reduction <mul>, %x0 : vector<16xf32> into f32
  %s0 = loop.load %X[0] : memref<16xf32>
  %p0 = math.fpowi %s0, %two : f32, i32
  loop.store %rmax, %R[0] : memref<4xf32>
  loop.store %rmin, %R[1] : memref<4xf32>
  loop.store %rmul, %R[2] : memref<4xf32>
  loop.store %p0, %R[3] : memref<4xf32>
  %ints = arith.constant dense<[-3, 5, 0, 7, -1, 2, 8, -6]> : vector<8xi32>
  %ab = math.absi %ints : vector<8xi32>
  %cl = math.ctlz %ab : vector<8xi32>
  %sum = vector.reduction <add>, %ab : vector<8xi32> into i32
  %mx2 = vector.reduction <maxsi>, %ints, %two : vector<8xi32> into i32
  %b = vector.broadcast %sum : i32 to vector<8xi32>
  %c = arith.addi %cl, %b : vector<8xi32>
  %c2 = vector.insert %mx2, %c[7] : i32 into vector<8xi32>
  loop.store %c2, %I[0] : memref<8xi32>, vector<8xi32>
  func.return
}
""")
    rng = np.random.default_rng(6)
    x = rng.standard_normal(16).astype(np.float32)
    y = rng.standard_normal(16).astype(np.float32)
    o, r, i = np.zeros((6, 16), np.float32), np.zeros(4, np.float32), np.zeros(8, np.int32)
    engine.get_function("vec")(x, y, o, r, i)
    ramp = np.tile(np.arange(8, dtype=np.float32), 2)
    np.testing.assert_allclose(o[0], np.where(np.repeat(x[::8] > y[::8], 8), x, ramp))
    np.testing.assert_allclose(o[1], np.log1p(np.abs(x)), rtol=RTOL)
    np.testing.assert_allclose(o[2], 1 / np.sqrt(np.abs(x)), rtol=RTOL)
    np.testing.assert_allclose(o[3], np.minimum(np.maximum(x, y), 0.5))
    np.testing.assert_allclose(o[4], np.abs(x) ** 0.5, rtol=RTOL)
    np.testing.assert_allclose(o[5], -x / 0.5, rtol=RTOL)
    np.testing.assert_allclose(r, [x.max(), x.min(), np.prod(x), x[0] ** 2], rtol=RTOL)
    ints = np.array([-3, 5, 0, 7, -1, 2, 8, -6], np.int32)
    expected = np.array([32 - int(v).bit_length() for v in np.abs(ints)]) + np.abs(ints).sum()
    expected[7] = max(ints.max(), 2)
    np.testing.assert_array_equal(i, expected)


MAIN = CONV + RELU + """
func.func @main(%data: memref<1x3x8x8xf32>, %res: memref<1x4x8x8xf32>) attributes {xweave.input_names = ["data"], xweave.output_names = ["res"]} {
  %w = loop.get_global @conv1_w : memref<4x3x3x3xf32>
  %tmp = loop.alloc : memref<1x4x8x8xf32>
  func.call @conv(%data, %w, %tmp) : (memref<1x3x8x8xf32>, memref<4x3x3x3xf32>, memref<1x4x8x8xf32>) -> ()
  func.call @relu(%tmp, %res) : (memref<1x4x8x8xf32>, memref<1x4x8x8xf32>) -> ()
  func.return
}
loop.global @conv1_w : memref<4x3x3x3xf32> = dense_resource<conv1_w_blob> : tensor<4x3x3x3xf32>
"""


def test_main_calling_two_kernels_with_a_weight_global():
    rng = np.random.default_rng(4)
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    engine, module = build(MAIN + resources(conv1_w_blob=w))
    assert {op.name for op in module.ops} == {"llvm.func", "llvm.mlir.global"}
    main = function(module, "main")
    assert main.linkage.linkage.data == "external"
    assert [str(a.data) for a in main.attributes["xweave.input_names"].data] == ["data"]
    assert [str(a.data) for a in main.attributes["xweave.output_names"].data] == ["res"]
    weight = next(op for op in module.ops if isinstance(op, llvm.GlobalOp))
    assert weight.sym_name.data == "xweave_param_conv1_w"
    assert weight.linkage.linkage.data == "external" and weight.value is None
    assert weight.constant is not None
    # the intermediate is a 64-byte aligned heap buffer, freed before returning
    calls = [o.callee.root_reference.data for o in main.walk() if isinstance(o, llvm.CallOp)]
    assert calls == ["aligned_alloc", "conv", "relu", "free"]

    data = rng.standard_normal((1, 3, 8, 8)).astype(np.float32)
    res = np.full((1, 4, 8, 8), np.nan, np.float32)
    engine.get_function("main")(data, res)
    np.testing.assert_allclose(res, np.maximum(conv_reference(data, w), 0), rtol=RTOL, atol=1e-5)


def test_extract_params_dense_splat_and_resource():
    w = np.arange(6, dtype=np.float32).reshape(2, 3)
    module = parse_module("""
"memref.global"() <{sym_name = "a", sym_visibility = "private", type = memref<2x3xf32>, initial_value}> {value = dense_resource<blob_a> : tensor<2x3xf32>} : () -> ()
"memref.global"() <{sym_name = "b", sym_visibility = "private", type = memref<4xi32>, initial_value = dense<[1, -2, 3, 4]> : tensor<4xi32>, constant}> : () -> ()
"memref.global"() <{sym_name = "c", sym_visibility = "private", type = memref<2x2xf32>, initial_value = dense<2.5> : tensor<2x2xf32>}> : () -> ()
"memref.global"() <{sym_name = "d", sym_visibility = "private", type = memref<3xf32>, initial_value}> : () -> ()
""" + resources(blob_a=w))
    params = extract_params(module)
    np.testing.assert_array_equal(params["a"], w)
    np.testing.assert_array_equal(params["b"], np.array([1, -2, 3, 4], np.int32))
    np.testing.assert_array_equal(params["c"], np.full((2, 2), 2.5, np.float32))
    assert "d" not in params  # uninitialized and writable: call state, no parameter
    assert params["b"].dtype == np.int32


# ----------------------------------------------------------------------------------
# Lowering details
# ----------------------------------------------------------------------------------


def test_noalias_only_for_distinct_buffers():
    module, _ = lower("""
func.func @add(%a: memref<16xf32>, %b: memref<16xf32>, %c: memref<16xf32>) attributes {xweave.kernel} {
  func.return
}
func.func @main(%x: memref<16xf32>, %y: memref<16xf32>) {
  func.call @add(%x, %x, %y) : (memref<16xf32>, memref<16xf32>, memref<16xf32>) -> ()
  func.return
}
""")
    attrs = [d.data for d in function(module, "add").arg_attrs.data]
    assert ["llvm.noalias" in a for a in attrs] == [False, False, True]
    assert all(a["llvm.dereferenceable"].value.data == 64 for a in attrs)
    assert function(module, "main").arg_attrs is None


def test_global_alloc_inside_a_loop_is_hoisted_and_freed():
    engine, module = build("""
func.func @k(%x: memref<4x8xf32>, %y: memref<4x8xf32>) attributes {xweave.kernel} {
  loop.for %i = 0 to 4 {
    %t = loop.alloc : memref<8xf32>
    loop.for %j = 0 to 8 {
      %v = loop.load %x[%i, %j] : memref<4x8xf32>
      %d = arith.addf %v, %v : f32
      loop.store %d, %t[%j] : memref<8xf32>
    }
    loop.for %j = 0 to 8 {
      %v = loop.load %t[7 - %j] : memref<8xf32>
      loop.store %v, %y[%i, %j] : memref<4x8xf32>
    }
  }
  func.return
}
""")
    k = function(module, "k")
    entry = [o for o in k.body.blocks.first.ops if isinstance(o, llvm.CallOp)]
    assert [o.callee.root_reference.data for o in entry] == ["aligned_alloc"]
    calls = [o.callee.root_reference.data for o in k.walk() if isinstance(o, llvm.CallOp)]
    assert calls == ["aligned_alloc", "free"]
    x = np.arange(32, dtype=np.float32).reshape(4, 8)
    y = np.empty_like(x)
    engine.get_function("k")(x, y)
    np.testing.assert_array_equal(y, 2 * x[:, ::-1])


def test_large_local_buffer_goes_to_the_heap():
    n = LOCAL_STACK_LIMIT // 4 + 16
    module, _ = lower(f"""
func.func @k(%y: memref<{n}xf32>) attributes {{xweave.kernel}} {{
  %t = loop.alloc : memref<{n}xf32, #loop.scope<local>>
  %s = loop.alloc : memref<4xf32, #loop.scope<local>>
  func.return
}}
""")
    names = op_names(function(module, "k"))
    assert names.count("llvm.alloca") == 1 and "llvm.call" in names


def test_integer_index_and_cast_ops():
    engine, _ = build("""
func.func @ints(%A: memref<12x2xf32>, %O: memref<24x4xi32>, %F: memref<24xf32>) attributes {xweave.kernel} {
  %c3 = arith.constant 3 : index
  %c7 = arith.constant 7 : i32
  %cm4 = arith.constant -4 : i32
  loop.for %i = 0 to 24 {
    %a = loop.load %A[%i floordiv 2, %i mod 2] : memref<12x2xf32>
    %ii = arith.index_cast %i : index to i32
    %x = arith.subi %ii, %c7 : i32
    %d = arith.floordivsi %x, %cm4 : i32
    %r = arith.remsi %x, %cm4 : i32
    %cd = arith.ceildivsi %x, %cm4 : i32
    %q = arith.floordivsi %i, %c3 : index
    %qi = arith.index_cast %q : index to i32
    %neg = arith.cmpi slt, %x, %cm4 : i32
    %m = arith.maxsi %x, %cm4 : i32
    %sel = arith.select %neg, %qi, %m : i32
    loop.store %d, %O[%i, 0] : memref<24x4xi32>
    loop.store %r, %O[%i, 1] : memref<24x4xi32>
    loop.store %cd, %O[%i, 2] : memref<24x4xi32>
    loop.store %sel, %O[%i, 3] : memref<24x4xi32>
    %xf = arith.sitofp %x : i32 to f32
    %t = arith.addf %xf, %a : f32
    %ti = arith.fptosi %t : f32 to i32
    %tf = arith.sitofp %ti : i32 to f32
    loop.store %tf, %F[%i] : memref<24xf32>
  }
  func.return
}
""")
    a = (np.arange(24, dtype=np.float32) * 0.37 - 2).reshape(12, 2)
    out, f = np.zeros((24, 4), np.int32), np.zeros(24, np.float32)
    engine.get_function("ints")(a, out, f)
    for i in range(24):
        x = i - 7
        expected = [x // -4, int(math.fmod(x, -4)), -(x // 4), i // 3 if x < -4 else max(x, -4)]
        assert list(out[i]) == expected, (i, list(out[i]), expected)
    np.testing.assert_array_equal(f, np.trunc(np.arange(24, dtype=np.float32) - 7 + a.reshape(-1)))


def test_scf_for_with_iteration_values():
    engine, _ = build("""
func.func @rowsum(%x: memref<3x10xf32>, %y: memref<3xf32>) attributes {xweave.kernel} {
  %lb = arith.constant 0 : index
  %ub = arith.constant 10 : index
  %st = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  loop.for %i = 0 to 3 {
    %s = scf.for %j = %lb to %ub step %st iter_args(%acc = %zero) -> (f32) {
      %v = loop.load %x[%i, %j] : memref<3x10xf32>
      %n = arith.addf %acc, %v : f32
      scf.yield %n : f32
    }
    loop.store %s, %y[%i] : memref<3xf32>
  }
  func.return
}
""")
    x = np.random.default_rng(5).standard_normal((3, 10)).astype(np.float32)
    y = np.empty(3, np.float32)
    engine.get_function("rowsum")(x, y)
    np.testing.assert_allclose(y, x.sum(axis=1), rtol=RTOL)


def test_llvm_ops_inside_a_function_are_kept():
    engine, _ = build("""
func.func @k(%x: memref<4xf32>) attributes {xweave.kernel} {
  loop.for %i = 0 to 4 {
    %v = loop.load %x[%i] : memref<4xf32>
    %w = llvm.fneg %v : f32
    loop.store %w, %x[%i] : memref<4xf32>
  }
  func.return
}
""")
    x = np.arange(4, dtype=np.float32)
    engine.get_function("k")(x)
    np.testing.assert_array_equal(x, -np.arange(4, dtype=np.float32))


def test_every_loop_kind_has_a_lowering():
    assert set(FOR_LOWERINGS) == set(loop.ForKind)


def test_the_pass_by_name_and_an_unsupported_op():
    module = parse_module("""
func.func @k(%x: memref<4xf32>) attributes {xweave.kernel} {
  %t = loop.alloc : memref<4xf32, #loop.scope<vta.inp>>
  func.return
}
""")
    with pytest.raises(LoweringError, match="loop.alloc.*vta.inp"):
        ConvertLoopToLLVMPass().apply(make_context(), module)
    module = parse_module("""
func.func @k() {
  %v = "test.op"() : () -> f32
  func.return
}
""")
    with pytest.raises(LoweringError, match="cannot lower 'test.op'"):
        ConvertLoopToLLVMPass().apply(make_context(), module)


def test_vector_access_alignment_from_the_buffer_and_offset():
    module, _ = lower("""
func.func @k(%x: memref<4x64xf32>) attributes {xweave.kernel} {
  %t = loop.alloc : memref<4x64xf32, #loop.scope<local>>
  %h = loop.alloc : memref<4x60xf32>
  loop.for %i = 0 to 4 {
    loop.for %j = 0 to 64 step 8 {
      %v = loop.load %x[%i, %j] : memref<4x64xf32> -> vector<8xf32>
      loop.store %v, %t[%i, %j] : memref<4x64xf32, #loop.scope<local>>, vector<8xf32>
      %w = loop.load %t[%i, %j + 4] : memref<4x64xf32, #loop.scope<local>> -> vector<4xf32>
      loop.store %w, %h[%i, 4] : memref<4x60xf32>, vector<4xf32>
      %u = loop.load %h[0, %j floordiv 2] : memref<4x60xf32> -> vector<4xf32>
      loop.store %u, %h[1, 0] : memref<4x60xf32>, vector<4xf32>
      %s = loop.load %h[0, 0] : memref<4x60xf32>
      loop.store %s, %t[0, 0] : memref<4x64xf32, #loop.scope<local>>
    }
  }
  func.return
}
""")
    accesses = [
        (o.name, o.alignment.value.data)
        for o in function(module, "k").walk()
        if isinstance(o, llvm.LoadOp | llvm.StoreOp)
    ]
    assert accesses == [
        ("llvm.load", 4),    # an argument: numpy's alignment is not known
        ("llvm.store", 32),  # the stack buffer (32): rows of 256 bytes, j * 4 bytes, j % 8 == 0
        ("llvm.load", 16),   # ... + 4 floats
        ("llvm.store", 16),  # the heap buffer (64): rows of 240 bytes
        ("llvm.load", 4),    # j floordiv 2: any float
        ("llvm.store", 16),  # row 1: 240 bytes
        ("llvm.load", 4),    # scalar accesses: the element's alignment
        ("llvm.store", 4),
    ]
