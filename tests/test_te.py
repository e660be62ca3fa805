"""The te dialect, its numpy interpreter, and the Python TE builder (`xweave.te`)."""

import io

import numpy as np
import pytest
from xdsl.dialects import func
from xdsl.dialects.builtin import IndexType, ModuleOp, TensorType, f32, f64
from xdsl.interpreter import Interpreter
from xdsl.interpreters import arith as arith_impls
from xdsl.interpreters import builtin as builtin_impls
from xdsl.interpreters import func as func_impls
from xdsl.ir import Block, Region
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from xweave import te
from xweave.context import make_context
from xweave.dialects import te as te_ops
from xweave.dialects.interpreters import interpret
from xweave.dialects.interpreters import te as te_interp

from helpers import dense_bias_relu

RNG = np.random.default_rng(0)


def rand(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def run(kernel: func.FuncOp, *inputs: np.ndarray) -> tuple:
    """Interpret a te kernel with just func/arith/builtin and te's own functions."""
    interpreter = Interpreter(ModuleOp([kernel.clone()]))
    for impls in (arith_impls.ArithFunctions(), builtin_impls.BuiltinFunctions(),
                  func_impls.FuncFunctions(), te_interp.TeFunctions()):
        interpreter.register_implementations(impls)
    return tuple(interpreter.call_op(kernel.sym_name.data, inputs))


def assert_roundtrips(op) -> None:
    """print -> parse -> print is the identity, in custom and in generic form."""
    module = ModuleOp([op.clone()])
    for generic in (False, True):
        stream = io.StringIO()
        Printer(stream=stream, print_generic_format=generic).print_op(module)
        text = stream.getvalue()
        reparsed = Parser(make_context(), text).parse_module()
        reparsed.verify()
        again = io.StringIO()
        Printer(stream=again, print_generic_format=generic).print_op(reparsed)
        assert again.getvalue() == text


# --- kernels built with te, checked against numpy ---------------------------------


def dense_relu(m=8, k=6, n=5):
    return te.create_kernel("dense_relu", *dense_bias_relu(m, k, n))


def conv2d(n=1, c=3, h=7, w=6, f=4, kh=3, kw=3, stride=2, pad=1):
    """NCHW/OIHW conv with zero padding (a lazy te.if) and a stride."""
    data = te.placeholder((n, c, h, w), name="data")
    weight = te.placeholder((f, c, kh, kw), name="weight")
    padded = te.compute(
        (n, c, h + 2 * pad, w + 2 * pad),
        lambda b, ch, y, x: te.if_then_else(
            te.all(y >= pad, y < h + pad, x >= pad, x < w + pad),
            data[b, ch, y - pad, x - pad], 0.0),
        name="pad")
    oh, ow = (h + 2 * pad - kh) // stride + 1, (w + 2 * pad - kw) // stride + 1
    rc, ry, rx = te.reduce_axis(c, "rc"), te.reduce_axis(kh, "ry"), te.reduce_axis(kw, "rx")
    out = te.compute(
        (n, f, oh, ow),
        lambda b, o, y, x: te.sum(
            padded[b, rc, y * stride + ry, x * stride + rx] * weight[o, rc, ry, rx],
            axis=[rc, ry, rx]),
        name="conv2d")
    return te.create_kernel("conv2d", [data, weight], [out])


def conv2d_ref(x, wt, stride, pad):
    x = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad))).astype(np.float64)
    n, _, h, w = x.shape
    f, _, kh, kw = wt.shape
    oh, ow = (h - kh) // stride + 1, (w - kw) // stride + 1
    out = np.zeros((n, f, oh, ow))
    for y in range(oh):
        for xx in range(ow):
            win = x[:, :, y * stride:y * stride + kh, xx * stride:xx * stride + kw]
            out[:, :, y, xx] = np.einsum("nchw,fchw->nf", win, wt)
    return out


def max_pool(n=2, c=3, h=6, w=6, k=2, stride=2):
    data = te.placeholder((n, c, h, w), name="data")
    ry, rx = te.reduce_axis(k, "ry"), te.reduce_axis(k, "rx")
    out = te.compute(
        (n, c, (h - k) // stride + 1, (w - k) // stride + 1),
        lambda b, ch, y, x: te.reduce_max(data[b, ch, y * stride + ry, x * stride + rx],
                                          axis=[ry, rx]),
        name="max_pool2d")
    return te.create_kernel("max_pool", [data], [out])


def softmax(m=4, n=10):
    x = te.placeholder((m, n), name="x")
    k1, k2 = te.reduce_axis(n, "k"), te.reduce_axis(n, "k")
    mx = te.compute((m,), lambda i: te.reduce_max(x[i, k1], axis=k1), name="max")
    e = te.compute((m, n), lambda i, j: te.exp(x[i, j] - mx[i]), name="exp")
    s = te.compute((m,), lambda i: te.sum(e[i, k2], axis=k2), name="sum")
    out = te.compute((m, n), lambda i, j: e[i, j] / s[i], name="softmax")
    return te.create_kernel("softmax", [x], [out])


def depthwise_conv(n=1, c=4, h=5, w=5, k=3):
    data = te.placeholder((n, c, h, w), name="data")
    weight = te.placeholder((c, 1, k, k), name="weight")
    ry, rx = te.reduce_axis(k, "ry"), te.reduce_axis(k, "rx")
    out = te.compute(
        (n, c, h - k + 1, w - k + 1),
        lambda b, ch, y, x: te.sum(data[b, ch, y + ry, x + rx] * weight[ch, 0, ry, rx],
                                   axis=[ry, rx]),
        name="depthwise_conv2d")
    return te.create_kernel("depthwise", [data, weight], [out])


def test_dense_relu():
    a, b, bias = rand(8, 6), rand(6, 5), rand(5)
    (out,) = run(dense_relu(), a, b, bias)
    assert out.dtype == np.float32 and out.shape == (8, 5)
    np.testing.assert_allclose(out, np.maximum(a @ b + bias, 0), rtol=1e-5, atol=1e-6)


def test_padded_strided_conv2d():
    x, wt = rand(1, 3, 7, 6), rand(4, 3, 3, 3)
    (out,) = run(conv2d(), x, wt)
    np.testing.assert_allclose(out, conv2d_ref(x, wt, 2, 1), rtol=1e-5, atol=1e-5)


def test_max_pool():
    x = rand(2, 3, 6, 6)
    (out,) = run(max_pool(), x)
    np.testing.assert_array_equal(out, x.reshape(2, 3, 3, 2, 3, 2).max(axis=(3, 5)))


def test_softmax():
    x = rand(4, 10)
    (out,) = run(softmax(), x)
    ref = np.exp(x - x.max(-1, keepdims=True))
    np.testing.assert_allclose(out, ref / ref.sum(-1, keepdims=True), rtol=1e-5)


def test_depthwise_conv():
    x, wt = rand(1, 4, 5, 5), rand(4, 1, 3, 3)
    (out,) = run(depthwise_conv(), x, wt)
    ref = np.zeros((1, 4, 3, 3))
    for y in range(3):
        for xx in range(3):
            ref[:, :, y, xx] = np.einsum("nchw,chw->nc", x[:, :, y:y + 3, xx:xx + 3], wt[:, 0])
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("make", [dense_relu, conv2d, max_pool, softmax, depthwise_conv])
def test_kernels_roundtrip(make):
    assert_roundtrips(make())


def test_reducers_and_index_arithmetic():
    x = te.placeholder((3, 8), name="x")
    r = te.reduce_axis(8, "r")
    outs = [
        te.compute((3,), lambda i: te.min(x[i, r], axis=r), name="min"),
        te.compute((3,), lambda i: te.prod(x[i, r], axis=r), name="prod"),
        te.compute((3,), lambda i: te.max(x[i, r], axis=r), name="max"),
        # reshape-like index arithmetic: // and %
        te.compute((6, 4), lambda i, j: x[(i * 4 + j) // 8, (i * 4 + j) % 8], name="reshape"),
        # a cast of an index to a value
        te.compute((3, 8), lambda i, j: x[i, j] * te.cast(j, "float32"), name="scale"),
    ]
    a = rand(3, 8)
    got = run(te.create_kernel("many", [x], outs), a)
    ref = [a.min(1), a.prod(1), a.max(1), a.reshape(6, 4), a * np.arange(8)]
    for g, e in zip(got, ref):
        np.testing.assert_allclose(g, e, rtol=1e-5)


def test_lazy_if_hides_division_by_zero():
    """The untaken branch of te.if may divide by zero: no warning, correct values."""
    t = te.compute((5,), lambda i: te.if_then_else(
        i > 0, 1.0 / te.cast(i, "float32"), 0.0), name="inv")
    (out,) = run(te.create_kernel("inv", [], [t]))
    np.testing.assert_allclose(out, [0, 1, 1 / 2, 1 / 3, 1 / 4], rtol=1e-6)


def test_select_is_eager_and_shares_terms():
    """te.select evaluates both sides outside any branch (arith.select, no te.if), so a
    term used on both sides and elsewhere is emitted once."""
    x = te.placeholder((6,), name="x")
    t = te.compute((6,), lambda i: te.select(i < 3, x[i] * 2.0, x[i] * 2.0 + 1.0) + x[i] * 2.0,
                   name="sel")
    kernel = te.create_kernel("sel", [x], [t])
    text = str(kernel)
    assert "arith.select" in text and "te.if" not in text
    assert text.count("arith.mulf") == 1 and text.count("te.extract") == 1
    a = rand(6)
    (out,) = run(kernel, a)
    np.testing.assert_allclose(out, np.where(np.arange(6) < 3, 4 * a, 4 * a + 1), rtol=1e-6)


def test_math_functions():
    x = te.placeholder((16,), name="x")
    t = te.compute((16,), lambda i: te.sigmoid(x[i]) + te.tanh(x[i]) + te.erf(x[i])
                   + te.sqrt(te.abs(x[i])) + te.log(te.abs(x[i]) + 1.0)
                   + te.pow(te.abs(x[i]), 1.5) - te.min(x[i], 0.5), name="math")
    a = rand(16)
    (out,) = run(te.create_kernel("math", [x], [t]), a)
    from math import erf
    ref = (1 / (1 + np.exp(-a)) + np.tanh(a) + np.vectorize(erf)(a) + np.sqrt(np.abs(a))
           + np.log(np.abs(a) + 1) + np.abs(a) ** 1.5 - np.minimum(a, 0.5))
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-6)


def test_large_domains_are_evaluated_in_slabs(monkeypatch):
    monkeypatch.setattr(te_interp, "MAX_DOMAIN_ELEMENTS", 50)
    x, wt = rand(1, 3, 7, 6), rand(4, 3, 3, 3)
    (out,) = run(conv2d(), x, wt)
    np.testing.assert_allclose(out, conv2d_ref(x, wt, 2, 1), rtol=1e-5, atol=1e-5)


def test_kernel_called_from_main_through_interpret():
    """A te kernel called from @main with func.call, run by xweave's `interpret`."""
    kernel = dense_relu()
    types = [a.type for a in kernel.body.block.args]
    block = Block(arg_types=types)
    call = func.CallOp("dense_relu", list(block.args), kernel.function_type.outputs.data)
    block.add_ops([call, func.ReturnOp(*call.results)])
    main = func.FuncOp("main", (types, list(kernel.function_type.outputs.data)), Region(block))
    module = ModuleOp([kernel, main])
    module.verify()
    a, b, bias = rand(8, 6), rand(6, 5), rand(5)
    (out,) = interpret(module, [a, b, bias])
    np.testing.assert_allclose(out, np.maximum(a @ b + bias, 0), rtol=1e-5, atol=1e-6)


# --- the IR the builder emits --------------------------------------------------------


def test_emitted_ir_is_clean():
    kernel = str(dense_relu(4, 3, 5))
    assert kernel.startswith(
        "func.func @dense_relu(%A: tensor<4x3xf32>, %B: tensor<3x5xf32>, "
        "%bias: tensor<5xf32>) -> tensor<4x5xf32> attributes {xweave.kernel} {")
    assert "%matmul = te.compute (%i, %j) in [4, 5] reduce sum (%k) in [3] {" in kernel
    assert '} {name = "relu"} : tensor<4x5xf32>' in kernel
    # one constant per distinct value, structurally equal reads emitted once
    x = te.placeholder((8,), name="x")
    t = te.compute((8,), lambda i: te.if_then_else(
        te.all(i >= 1, i < 7), x[i - 1] * 2.0 + x[i - 1] * 2.0, 2.0), name="t")
    body = list(te.create_kernel("k", [x], [t]).body.block.ops)[0].body.block
    names = [op.name for op in body.walk()]
    assert names.count("arith.constant") == 3  # 1, 7 and 2.0
    assert names.count("te.extract") == 1 and names.count("arith.mulf") == 1
    assert names.count("arith.subi") == 1


def test_only_reachable_stages_in_dependency_order():
    x = te.placeholder((4,), name="x")
    a = te.compute((4,), lambda i: x[i] + 1.0, name="a")
    te.compute((4,), lambda i: a[i] * 3.0, name="unused")
    b = te.compute((4,), lambda i: a[i] * 2.0, name="b")
    c = te.compute((4,), lambda i: a[i] + b[i], name="c")
    kernel = te.create_kernel("k", [x], [c])
    computes = [op for op in kernel.body.block.ops if isinstance(op, te_ops.ComputeOp)]
    assert [op.tag.data for op in computes] == ["a", "b", "c"]


def test_builder_errors():
    x = te.placeholder((4, 4), name="x")
    k = te.reduce_axis(4, "k")
    with pytest.raises(ValueError, match="whole body of a compute"):
        te.compute((4,), lambda i: te.sum(x[i, k], axis=k) + 1.0)
    with pytest.raises(ValueError, match="reduce axis 'k' is not an index of this compute"):
        te.compute((4,), lambda i: x[i, k])
    with pytest.raises(IndexError, match="rank 2 indexed with 1"):
        te.compute((4,), lambda i: x[i])
    with pytest.raises(TypeError, match="different dtypes"):
        te.compute((4,), lambda i: x[i, 0] + i)
    with pytest.raises(TypeError, match="no Python truth value"):
        te.compute((4,), lambda i: x[i, 0] if i > 1 else 0.0)
    with pytest.raises(TypeError, match="takes 1 indices for a rank-2"):
        te.compute((4, 4), lambda i: x[i, i])
    y = te.placeholder((4,), name="y")
    t = te.compute((4,), lambda i: y[i] * 2.0)
    with pytest.raises(ValueError, match="placeholder 'y' .* is not a kernel input"):
        te.create_kernel("k", [x], [t])


# --- the dialect's verifier ------------------------------------------------------------


def compute_op(shape=(4,), reduce_shape=(), reducer=None, arg_types=None,
               yield_type=f32, result_type=None):
    arg_types = arg_types or [IndexType()] * (len(shape) + len(reduce_shape))
    block = Block(arg_types=arg_types)
    from xdsl.dialects.arith import ConstantOp
    from xdsl.dialects.builtin import FloatAttr
    cst = ConstantOp(FloatAttr(0.0, yield_type))
    block.add_ops([cst, te_ops.YieldOp(cst.result)])
    return te_ops.ComputeOp(result_type or TensorType(f32, shape), block,
                            reduce_shape=reduce_shape, reducer=reducer, shape=shape)


@pytest.mark.parametrize("kwargs, message", [
    (dict(shape=(4, 0)), r"extents must be positive, got shape \[4, 0\]"),
    (dict(reduce_shape=(3,)), r"a reduction \(non-empty reduce_shape\) needs a reducer"),
    (dict(reducer="max"), "reducer 'max' given without a reduce domain"),
    (dict(result_type=TensorType(f32, (5,))), r"does not match shape \[4\]"),
    (dict(arg_types=[IndexType()] * 2), r"expected 1 block arguments \(1 spatial \+ 0 reduce\)"),
    (dict(yield_type=f64), "yielded type f64 does not match result element type f32"),
])
def test_verifier(kwargs, message):
    op = compute_op(**kwargs)
    with pytest.raises(VerifyException, match=message):
        op.verify()
    str(op)  # an invalid op still prints (in generic form where custom can't express it)


def test_reducer_identities():
    from xdsl.dialects.builtin import i1, i32
    assert te_ops.Reducer.SUM.identity(f32) == 0.0
    assert te_ops.Reducer.PROD.identity(i32) == 1
    assert te_ops.Reducer.MAX.identity(f32) == float("-inf")
    assert te_ops.Reducer.MIN.identity(i32) == 2**31 - 1
    assert te_ops.Reducer.MAX.identity(i1) == 0


def test_scalar_te_ops_outside_a_compute():
    """te.extract / te.if / te.yield also run one scalar at a time."""
    module = Parser(make_context(), """
    func.func @f(%t: tensor<3xf32>, %i: index, %c: i1) -> f32 {
      %v = te.if %c -> f32 {
        %x = te.extract %t[%i] : tensor<3xf32>
        te.yield %x : f32
      } else {
        %z = arith.constant 0.000000e+00 : f32
        te.yield %z : f32
      }
      func.return %v : f32
    }""").parse_module()
    kernel = module.body.block.first_op
    t = np.array([1.0, 2.0, 3.0], dtype=np.float32)
    assert run(kernel, t, 2, True) == (3.0,)
    assert run(kernel, t, 2, False) == (0.0,)
