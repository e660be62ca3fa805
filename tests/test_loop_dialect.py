"""The loop dialect: construction, custom syntax, verifiers and interpreter semantics."""

from io import StringIO

import numpy as np
import pytest
from xdsl.builder import Builder, ImplicitBuilder
from xdsl.dialects import arith, func, vector
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    FloatAttr,
    IndexType,
    MemRefType,
    ModuleOp,
    TensorType,
    VectorType,
    f32,
    i32,
)
from xdsl.ir import Block, Region
from xdsl.ir.affine import AffineExpr, AffineMap
from xdsl.printer import Printer
from xdsl.utils.exceptions import InterpretationError, VerifyException
from xdsl.utils.test_value import create_ssa_value

from xweave.context import parse_module
from xweave.dialects.interpreters import interpret
from xweave.dialects.loop import (
    GLOBAL_SCOPE,
    LOCAL_SCOPE,
    AllocOp,
    ForKind,
    ForKindAttr,
    ForOp,
    GetGlobalOp,
    GlobalOp,
    LoadOp,
    ScopeAttr,
    StoreOp,
    YieldOp,
    mark_kernel,
    scope_of,
)

from helpers import MATMUL_LOOPS

RNG = np.random.default_rng(0)


def kernel(name: str, arg_types: list, build) -> ModuleOp:
    """A module with `func.func @name(args)` whose body `build(*args)` fills."""
    block = Block(arg_types=arg_types)
    with ImplicitBuilder(block):
        build(*block.args)
        func.ReturnOp()
    fn = func.FuncOp(name, (arg_types, []), Region(block))
    return ModuleOp([fn])


def nest(*extents: int) -> list[ForOp]:
    """Perfectly nested serial loops `0 to e`, created at the current implicit builder."""
    loops = [ForOp(0, extents[0])]
    for extent in extents[1:]:
        with body(loops[-1]):
            loops.append(ForOp(0, extent))
    return loops


def body(loop: ForOp):
    """An implicit builder adding ops at the end of a loop body."""
    return ImplicitBuilder(Builder(loop.insertion_point))


def assert_same_ir(a: ModuleOp, b: ModuleOp):
    assert a.is_structurally_equivalent(b), f"{a}\n!=\n{b}"


def generic(op) -> str:
    out = StringIO()
    Printer(stream=out, print_generic_format=True).print_op(op)
    return out.getvalue()


# ---- matmul: C = A @ B -------------------------------------------------------------

MATMUL = MATMUL_LOOPS


def build_matmul() -> ModuleOp:
    types = [MemRefType(f32, s) for s in ([5, 7], [7, 9], [5, 9])]

    def build(A, B, C):
        zero = arith.ConstantOp(FloatAttr(0.0, f32))
        init_i = ForOp(0, 5, name="mm_init.i")
        with body(init_i):
            init_j = ForOp(0, 9, name="mm_init.j")
        with body(init_j):
            StoreOp(zero, C, [init_i.induction_var, init_j.induction_var])
        i_loop = ForOp(0, 5, name="mm.i")
        with body(i_loop):
            j_loop = ForOp(0, 9, name="mm.j")
        with body(j_loop):
            k_loop = ForOp(0, 7, kind=ForKind.UNROLLED, name="mm.k")
        i, j, k = i_loop.induction_var, j_loop.induction_var, k_loop.induction_var
        with body(k_loop):
            a = LoadOp(A, [i, k])
            b = LoadOp(B, [k, j])
            c = LoadOp(C, [i, j])
            p = arith.MulfOp(a, b)
            s = arith.AddfOp(c, p)
            StoreOp(s, C, [i, j])

    module = kernel("matmul", types, build)
    mark_kernel(module.ops.first)
    return module


def test_matmul_python_and_text_agree_with_numpy():
    text, built = parse_module(MATMUL), build_matmul()
    built.verify()
    assert_same_ir(text, built)
    A = RNG.standard_normal((5, 7), dtype=np.float32)
    B = RNG.standard_normal((7, 9), dtype=np.float32)
    for module in (text, built):
        C = np.full((5, 9), np.nan, np.float32)
        assert interpret(module, [A, B, C], "matmul") == ()
        assert C.dtype == np.float32
        np.testing.assert_allclose(C, A @ B, rtol=1e-5, atol=1e-6)


# ---- conv2d with a local padded buffer --------------------------------------------

CONV = """
func.func @conv(%X: memref<2x5x5xf32>, %W: memref<3x2x3x3xf32>, %Y: memref<3x5x5xf32>) {
  %zero = arith.constant 0.000000e+00 : f32
  %pad = loop.alloc : memref<2x7x7xf32, #loop.scope<local>>
  loop.for %c = 0 to 2 {
    loop.for %h = 0 to 7 {
      loop.for %w = 0 to 7 {
        loop.store %zero, %pad[%c, %h, %w] : memref<2x7x7xf32, #loop.scope<local>>
      }
    }
  }
  loop.for %c = 0 to 2 {
    loop.for %h = 0 to 5 {
      loop.for %w = 0 to 5 {
        %x = loop.load %X[%c, %h, %w] : memref<2x5x5xf32>
        loop.store %x, %pad[%c, %h + 1, %w + 1] : memref<2x7x7xf32, #loop.scope<local>>
      }
    }
  }
  loop.for %f = 0 to 3 {
    loop.for %y = 0 to 5 {
      loop.for %x = 0 to 5 {
        loop.store %zero, %Y[%f, %y, %x] : memref<3x5x5xf32>
        loop.for %c = 0 to 2 {
          loop.for %ky = 0 to 3 {
            loop.for %kx = 0 to 3 {
              %a = loop.load %pad[%c, %y + %ky, %x + %kx] : memref<2x7x7xf32, #loop.scope<local>>
              %b = loop.load %W[%f, %c, %ky, %kx] : memref<3x2x3x3xf32>
              %acc = loop.load %Y[%f, %y, %x] : memref<3x5x5xf32>
              %p = arith.mulf %a, %b : f32
              %s = arith.addf %acc, %p : f32
              loop.store %s, %Y[%f, %y, %x] : memref<3x5x5xf32>
            }
          }
        }
      }
    }
  }
  func.return
}
"""


def build_conv() -> ModuleOp:
    types = [MemRefType(f32, s) for s in ([2, 5, 5], [3, 2, 3, 3], [3, 5, 5])]
    pad_type = MemRefType(f32, [2, 7, 7], memory_space=LOCAL_SCOPE)
    d0, d1, d2, d3, d4 = (AffineExpr.dimension(i) for i in range(5))

    def build(X, W, Y):
        zero = arith.ConstantOp(FloatAttr(0.0, f32))
        pad = AllocOp(pad_type)
        loops = nest(2, 7, 7)
        with body(loops[-1]):
            StoreOp(zero, pad, [lp.induction_var for lp in loops])
        loops = nest(2, 5, 5)
        c, h, w = (lp.induction_var for lp in loops)
        with body(loops[-1]):
            x = LoadOp(X, [c, h, w])
            StoreOp(x, pad, [c, h, w], AffineMap(3, 0, (d0, d1 + 1, d2 + 1)))
        out = nest(3, 5, 5)
        f, y, x = (lp.induction_var for lp in out)
        with body(out[-1]):
            StoreOp(zero, Y, [f, y, x])
            red = nest(2, 3, 3)
        c, ky, kx = (lp.induction_var for lp in red)
        with body(red[-1]):
            a = LoadOp(pad, [c, y, ky, x, kx], AffineMap(5, 0, (d0, d1 + d2, d3 + d4)))
            b = LoadOp(W, [f, c, ky, kx])
            acc = LoadOp(Y, [f, y, x])
            s = arith.AddfOp(acc, arith.MulfOp(a, b))
            StoreOp(s, Y, [f, y, x])

    return kernel("conv", types, build)


def conv_reference(X: np.ndarray, W: np.ndarray) -> np.ndarray:
    padded = np.pad(X, ((0, 0), (1, 1), (1, 1)))
    out = np.zeros((W.shape[0], 5, 5), np.float32)
    for ky in range(3):
        for kx in range(3):
            window = padded[:, ky : ky + 5, kx : kx + 5]
            out += np.einsum("chw,fc->fhw", window, W[:, :, ky, kx])
    return out


def test_conv_with_local_padded_buffer_python_and_text_agree_with_numpy():
    text, built = parse_module(CONV), build_conv()
    built.verify()
    assert_same_ir(text, built)
    X = RNG.standard_normal((2, 5, 5), dtype=np.float32)
    W = RNG.standard_normal((3, 2, 3, 3), dtype=np.float32)
    for module in (text, built):
        Y = np.zeros((3, 5, 5), np.float32)
        interpret(module, [X, W, Y], "conv")
        np.testing.assert_allclose(Y, conv_reference(X, W), rtol=1e-5, atol=1e-5)


# ---- vectors ----------------------------------------------------------------------

VECTOR_MATMUL = """
func.func @vmatmul(%A: memref<3x4xf32>, %B: memref<4x16xf32>, %C: memref<3x16xf32>) {
  %zero = arith.constant dense<0.000000e+00> : vector<8xf32>
  loop.for %i = 0 to 3 {
    loop.for %j = 0 to 16 step 8 vectorized {
      loop.store %zero, %C[%i, %j] : memref<3x16xf32>, vector<8xf32>
      loop.for %k = 0 to 4 unrolled {
        %a = loop.load %A[%i, %k] : memref<3x4xf32>
        %av = vector.broadcast %a : f32 to vector<8xf32>
        %b = loop.load %B[%k, %j] : memref<4x16xf32> -> vector<8xf32>
        %c = loop.load %C[%i, %j] : memref<3x16xf32> -> vector<8xf32>
        %s = vector.fma %av, %b, %c : vector<8xf32>
        loop.store %s, %C[%i, %j] : memref<3x16xf32>, vector<8xf32>
      }
    }
  }
  func.return
}

func.func @row_stats(%A: memref<2x8xf32>, %sum: memref<2xf32>, %max: memref<2xf32>,
                     %relu: memref<2x8xf32>) {
  %zero = arith.constant 0.000000e+00 : f32
  %zeros = vector.broadcast %zero : f32 to vector<8xf32>
  loop.for %i = 0 to 2 {
    %v = loop.load %A[%i, 0] : memref<2x8xf32> -> vector<8xf32>
    %s = vector.reduction <add>, %v : vector<8xf32> into f32
    %m = vector.reduction <maximumf>, %v, %zero : vector<8xf32> into f32
    %r = arith.maximumf %v, %zeros : vector<8xf32>
    %any = arith.cmpf ogt, %m, %zero : f32
    %r2 = arith.select %any, %r, %zeros : vector<8xf32>
    scf.if %any {
      loop.store %r2, %relu[%i, 0] : memref<2x8xf32>, vector<8xf32>
    }
    loop.store %s, %sum[%i] : memref<2xf32>
    loop.store %m, %max[%i] : memref<2xf32>
  }
  func.return
}
"""


def test_vector_load_store_fma():
    module = parse_module(VECTOR_MATMUL)
    A = RNG.standard_normal((3, 4), dtype=np.float32)
    B = RNG.standard_normal((4, 16), dtype=np.float32)
    C = np.zeros((3, 16), np.float32)
    interpret(module, [A, B, C], "vmatmul")
    np.testing.assert_allclose(C, A @ B, rtol=1e-5, atol=1e-6)


def test_vector_reduction_select_and_scf_if():
    module = parse_module(VECTOR_MATMUL)
    A = RNG.standard_normal((2, 8), dtype=np.float32)
    A[1] = -np.abs(A[1])  # an all-negative row: its max is the accumulator, 0
    sums, maxes = np.zeros(2, np.float32), np.zeros(2, np.float32)
    relu = np.full((2, 8), -1.0, np.float32)
    interpret(module, [A, sums, maxes, relu], "row_stats")
    np.testing.assert_allclose(sums, A.sum(axis=1), rtol=1e-5)
    np.testing.assert_array_equal(maxes, np.maximum(A.max(axis=1), 0))
    np.testing.assert_array_equal(relu[0], np.maximum(A[0], 0))
    np.testing.assert_array_equal(relu[1], -1)  # scf.if skipped the all-negative row


def test_vector_ops_built_in_python():
    mem = MemRefType(f32, [2, 16])
    vec = VectorType(f32, [8])

    def build(A, B):
        loop_ = ForOp(0, 16, 8, ForKind.VECTORIZED)
        j = loop_.induction_var
        with body(loop_):
            row1 = AffineMap(1, 0, (AffineExpr.constant(1), AffineExpr.dimension(0)))
            row0 = AffineMap(1, 0, (AffineExpr.constant(0), AffineExpr.dimension(0)))
            v = LoadOp(A, [j], row1, vec)
            StoreOp(vector.FMAOp(v, v, v), B, [j], row0)

    module = kernel("square_plus", [mem, mem], build)
    module.verify()
    assert "loop.load %0[1, %2] : memref<2x16xf32> -> vector<8xf32>" in str(module)
    assert "loop.store %4, %1[0, %2] : memref<2x16xf32>, vector<8xf32>" in str(module)
    A = RNG.standard_normal((2, 16), dtype=np.float32)
    B = np.zeros_like(A)
    interpret(module, [A, B], "square_plus")
    a = A[1].astype(np.float64)  # fma rounds once: compare with the exact a * a + a
    np.testing.assert_allclose(B[0], a * a + a, rtol=1e-6)
    np.testing.assert_array_equal(B[1], 0)


# ---- scalar math, globals ---------------------------------------------------------

MATH = """
loop.global @bias : memref<4xf32> = dense<[1.0, -2.0, 0.5, 0.25]> : tensor<4xf32>
loop.global @scale : memref<4xf32> = dense_resource<loop_test_scale> : tensor<4xf32>
func.func @act(%X: memref<4xf32>, %Y: memref<6x4xf32>) {
  %bias = loop.get_global @bias : memref<4xf32>
  %scale = loop.get_global @scale : memref<4xf32>
  loop.for %i = 0 to 4 {
    %x = loop.load %X[%i] : memref<4xf32>
    %b = loop.load %bias[%i] : memref<4xf32>
    %s = loop.load %scale[%i] : memref<4xf32>
    %e = math.exp %x : f32
    %t = math.tanh %x : f32
    %a = math.absf %x : f32
    %q = math.sqrt %a : f32
    %r = math.erf %x : f32
    %f = math.fma %x, %s, %b : f32
    %d = arith.divf %x, %s : f32
    loop.store %e, %Y[0, %i] : memref<6x4xf32>
    loop.store %t, %Y[1, %i] : memref<6x4xf32>
    loop.store %q, %Y[2, %i] : memref<6x4xf32>
    loop.store %r, %Y[3, %i] : memref<6x4xf32>
    loop.store %f, %Y[4, %i] : memref<6x4xf32>
    loop.store %d, %Y[5, %i] : memref<6x4xf32>
  }
  func.return
}

{-#
  dialect_resources: {
    builtin: {
      loop_test_scale: "0x040000000000803F000000400000003F00000041"
    }
  }
#-}
"""


def test_math_and_globals():
    from math import erf

    module = parse_module(MATH)
    X = np.array([0.5, -1.0, 2.0, -0.25], np.float32)
    Y = np.zeros((6, 4), np.float32)
    interpret(module, [X, Y], "act")
    bias = np.array([1.0, -2.0, 0.5, 0.25], np.float32)
    scale = np.array([1.0, 2.0, 0.5, 8.0], np.float32)
    expected = [
        np.exp(X), np.tanh(X), np.sqrt(np.abs(X)), [erf(x) for x in X], X * scale + bias, X / scale
    ]
    np.testing.assert_allclose(Y, np.array(expected, np.float32), rtol=1e-6)


def test_memref_global_and_read_only_constants():
    module = parse_module("""
    "memref.global"() <{sym_name = "w", sym_visibility = "private", type = memref<2xi32>,
                        initial_value = dense<[7, -3]> : tensor<2xi32>, constant}> : () -> ()
    loop.global @k : memref<2xi32> = dense<5> : tensor<2xi32>
    func.func @copy(%out: memref<2xi32>) {
      %w = memref.get_global @w : memref<2xi32>
      %k = loop.get_global @k : memref<2xi32>
      loop.for %i = 0 to 2 {
        %a = loop.load %w[%i] : memref<2xi32>
        %b = loop.load %k[%i] : memref<2xi32>
        %s = arith.addi %a, %b : i32
        loop.store %s, %out[%i] : memref<2xi32>
      }
      func.return
    }
    func.func @clobber() {
      %k = loop.get_global @k : memref<2xi32>
      %c = arith.constant 1 : i32
      %i = arith.constant 0 : index
      loop.store %c, %k[%i] : memref<2xi32>
      func.return
    }
    """)
    out = np.zeros(2, np.int32)
    interpret(module, [out], "copy")
    np.testing.assert_array_equal(out, [12, 2])
    with pytest.raises(ValueError, match="read-only"):
        interpret(module, [], "clobber")


def test_out_of_bounds_access_is_an_error():
    module = parse_module("""
    func.func @oob(%A: memref<4x8xf32>) {
      %z = arith.constant 0.000000e+00 : f32
      loop.for %i = 0 to 4 {
        loop.store %z, %A[%i + 1, 0] : memref<4x8xf32>
      }
      func.return
    }
    func.func @voob(%A: memref<4x8xf32>) {
      %i = arith.constant 4 : index
      %v = loop.load %A[0, %i] : memref<4x8xf32> -> vector<8xf32>
      func.return
    }
    """)
    A = np.zeros((4, 8), np.float32)
    with pytest.raises(InterpretationError, match=r"index \[4, 0\] is out of bounds"):
        interpret(module, [A], "oob")
    with pytest.raises(InterpretationError, match=r"index \[0, 4\] \(\+8 lanes\)"):
        interpret(module, [A], "voob")


# ---- construction, accessors, syntax ----------------------------------------------


def test_for_constructor_and_accessors():
    loop_ = ForOp(2, 11, 3, ForKind.UNROLLED)
    assert isinstance(loop_.induction_var.type, IndexType)
    assert loop_.range == range(2, 11, 3) and loop_.extent == 3
    assert loop_.kind == ForKindAttr(ForKind.UNROLLED)
    assert isinstance(loop_.body.block.last_op, YieldOp)  # the implicit terminator
    inner = ForOp(0, 4)
    loop_.add_ops([inner])
    assert list(loop_.body.block.ops) == [inner, loop_.body.block.last_op]
    loop_.verify()
    assert str(loop_) == (
        "loop.for %0 = 2 to 11 step 3 unrolled {\n  loop.for %1 = 0 to 4 {\n  }\n}"
    )
    assert ForOp(0, 0).extent == 0


def test_scopes():
    local = MemRefType(f32, [4], memory_space=LOCAL_SCOPE)
    assert scope_of(local) == ScopeAttr("local")
    assert scope_of(MemRefType(f32, [4])) == GLOBAL_SCOPE
    assert ScopeAttr("vta.inp").data == "vta.inp"
    assert str(AllocOp(local, alignment=32)) == (
        "%0 = loop.alloc align 32 : memref<4xf32, #loop.scope<local>>"
    )
    for bad in ("", "two words", "1x", "a..b"):
        with pytest.raises(VerifyException, match="invalid memory scope"):
            ScopeAttr(bad)


def test_round_trip_in_python():
    for text in (MATMUL, CONV, VECTOR_MATMUL, MATH):
        module = parse_module(text)
        assert_same_ir(parse_module(str(module)), module)
        assert_same_ir(parse_module(generic(module)), module)


def test_affine_syntax():
    module = parse_module("""
    func.func @f(%A: memref<16x16xf32>, %i: index, %j: index) {
      %a = loop.load %A[%i * 2 + %j - 1, 15 - %j] : memref<16x16xf32>
      %b = loop.load %A[%i floordiv 2, (%i + %j) mod 4] : memref<16x16xf32>
      loop.store %a, %A[%j, %i * 4] : memref<16x16xf32>
      func.return
    }
    """)
    loads = [op for op in module.walk() if isinstance(op, LoadOp)]
    # Parsed maps are over dims, one per distinct index operand in order of appearance.
    assert str(loads[0].map.data) == "(d0, d1) -> ((((d0 * 2) + d1) + -1), ((d1 * -1) + 15))"
    assert [a.name_hint for a in loads[0].indices] == ["i", "j"]
    text = str(module)
    assert "%A[%i * 2 + %j - 1, 15 - %j]" in text
    assert "%A[%i floordiv 2, (%i + %j) mod 4]" in text
    assert "loop.store %a, %A[%j, %i * 4] : memref<16x16xf32>" in text


# ---- verifiers --------------------------------------------------------------------

MEM = MemRefType(f32, [4, 16])


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: ForOp(0, 8, step=0), "step must be positive, got 0"),
        (lambda: ForOp(8, 4), "lower bound 8 exceeds upper bound 4"),
        (
            lambda: ForOp(0, 4, body=Block(arg_types=[i32])),
            r"exactly one block argument, the index induction variable; got \(i32\)",
        ),
        (lambda: AllocOp(MemRefType(f32, [-1, 4])), "must have a static shape"),
        (lambda: AllocOp(MEM, alignment=12), "power of two, got 12"),
        (
            lambda: LoadOp(create_ssa_value(MEM), [create_ssa_value(IndexType())]),
            r"expected 2 index operands .* got 1",
        ),
        (
            lambda: LoadOp(
                create_ssa_value(MEM), [create_ssa_value(IndexType())], AffineMap.identity(1)
            ),
            "has 1 results, but the memref has rank 2",
        ),
        (
            lambda: LoadOp(create_ssa_value(MEM), [], AffineMap.point_map(0, 0), i32),
            "result type i32 must be the element type f32 or a 1-D vector of it",
        ),
        (
            lambda: LoadOp(
                create_ssa_value(MEM), [], AffineMap.point_map(0, 0), VectorType(f32, [24])
            ),
            "vector length 24 exceeds the last dimension 16",
        ),
        (
            lambda: StoreOp(
                create_ssa_value(VectorType(f32, [2, 8])),
                create_ssa_value(MEM),
                [],
                AffineMap.point_map(0, 0),
            ),
            r"value type vector<2x8xf32> must be the element type f32",
        ),
        (
            lambda: GlobalOp(
                "w",
                MEM,
                DenseIntOrFPElementsAttr.from_list(TensorType(f32, [4]), [0.0]),
            ),
            r"initial value of type tensor<4xf32> does not fit memref<4x16xf32>",
        ),
    ],
)
def test_verifier_errors(make, message):
    with pytest.raises(VerifyException, match=message):
        make().verify()


def test_a_vector_access_may_span_whole_rows():
    """A packed weight panel: two whole rows of a [4][16] buffer, from index 0."""
    LoadOp(create_ssa_value(MEM), [], AffineMap.point_map(2, 0), VectorType(f32, [32])).verify()
    with pytest.raises(VerifyException, match="must start at index 0"):
        LoadOp(create_ssa_value(MEM), [], AffineMap.point_map(0, 8),
               VectorType(f32, [32])).verify()
    with pytest.raises(VerifyException, match="out of bounds"):
        LoadOp(create_ssa_value(MEM), [], AffineMap.point_map(3, 0),
               VectorType(f32, [32])).verify()


def test_get_global_must_name_a_global_of_its_type():
    with pytest.raises(VerifyException, match="no loop.global named @nope"):
        parse_module("%w = loop.get_global @nope : memref<4xf32>")
    with pytest.raises(VerifyException, match="does not match the type memref<2xf32> of @g"):
        parse_module("""
        loop.global @g : memref<2xf32> = dense<0.0> : tensor<2xf32>
        %w = loop.get_global @g : memref<4xf32>
        """)
    assert GetGlobalOp("g", MEM).global_name.root_reference.data == "g"


def test_values_are_typed_numpy_scalars():
    """f32 arithmetic stays in f32; index values stay Python ints."""
    def build(out):
        loop_ = ForOp(0, 1)
        with body(loop_):
            one, three = (arith.ConstantOp(FloatAttr(v, f32)) for v in (1.0, 3.0))
            third = arith.DivfOp(one, three)
            StoreOp(third, out, [loop_.induction_var])

    module = kernel("third", [MemRefType(f32, [1])], build)
    out = np.zeros(1, np.float32)
    interpret(module, [out], "third")
    assert out[0] == np.float32(1) / np.float32(3)

