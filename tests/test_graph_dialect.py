"""The graph dialect: builders, printing/parsing (incl. weight blobs), verifiers, and
the reference interpreter against hand-written numpy."""

import io
import itertools
import os
import subprocess
import sys

import numpy as np
import pytest
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType, f32
from xdsl.interpreter import Interpreter
from xdsl.interpreters import arith, builtin
from xdsl.interpreters import func as func_interp
from xdsl.ir import Block, Region
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from xweave.context import parse_module
from xweave.dialects import graph
from xweave.dialects.graph import ConstantOp, PatternKind
from xweave.dialects.graph.constants import constant_value
from xweave.dialects.graph.shapes import window2d_output_size, window_output_size
from xweave.dialects.interpreters.graph import GraphFunctions
from xweave.context import print_module

rng = np.random.default_rng(0)


def rand(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def build(arg_shapes, body):
    """A module with `func.func @main(args) -> results` where body(block args) -> results."""
    block = Block(arg_types=[TensorType(f32, s) for s in arg_shapes])
    ops_before = []

    def emit(op):
        ops_before.append(op)
        return op.results[0]

    results = body(emit, *block.args)
    results = results if isinstance(results, (list, tuple)) else [results]
    block.add_ops([*ops_before, func.ReturnOp(*results)])
    main = func.FuncOp(
        "main", ([a.type for a in block.args], [r.type for r in results]), Region(block)
    )
    module = ModuleOp([main])
    module.verify()
    return module


def run(module, *inputs):
    interpreter = Interpreter(module)
    for impls in (
        arith.ArithFunctions(),
        builtin.BuiltinFunctions(),
        func_interp.FuncFunctions(),
        GraphFunctions(),
    ):
        interpreter.register_implementations(impls)
    return interpreter.call_op("main", inputs)


def run_one(arg_shapes, body, *inputs):
    (result,) = run(build(arg_shapes, body), *inputs)
    return result


def generic(module) -> str:
    stream = io.StringIO()
    printer = Printer(stream=stream, print_generic_format=True)
    printer.print_op(module)
    from xdsl.dialects.builtin import Builtin

    printer.print_metadata([Builtin])
    return stream.getvalue()


# --------------------------------------------------------------------------------------
# Printing and parsing
# --------------------------------------------------------------------------------------


def every_op_module(weight):
    def body(emit, x, v, r):
        w = emit(ConstantOp.from_array("conv.w", weight))
        b = emit(ConstantOp.from_array("conv.b", np.arange(4, dtype=np.float32)))
        y = emit(graph.Conv2dOp(x, w, b, pads=(1, 1, 1, 1), groups=2))
        emit(graph.Conv2dOp(x, w, strides=(2, 2), dilations=(2, 2), groups=2))
        dw = emit(ConstantOp.from_array("dw", np.ones((5, 3), np.float32)))
        emit(graph.DenseOp(v, dw, emit(ConstantOp.from_array("db", np.ones(5, np.float32)))))
        emit(graph.DenseOp(v, dw))
        emit(graph.MatmulOp(v, emit(graph.TransposeOp(dw, (1, 0)))))
        for cls in (graph.AddOp, graph.SubOp, graph.MulOp, graph.DivOp, graph.MaxOp,
                    graph.MinOp, graph.PowOp):  # fmt: skip
            emit(cls(v, r))
        for cls in (graph.SigmoidOp, graph.TanhOp, graph.ExpOp, graph.NegOp, graph.SqrtOp,
                    graph.AbsOp):  # fmt: skip
            emit(cls(v))
        emit(graph.ClipOp(v, 0.0, 6.0))
        emit(graph.ClipOp(v))  # unbounded: prints infinities
        relu = emit(graph.ReluOp(y))
        emit(graph.MaxPool2dOp(relu, (3, 3), (2, 2), (1, 1, 1, 1), ceil_mode=True))
        emit(graph.AvgPool2dOp(relu, (2, 2), (3, 3), ceil_mode=True, count_include_pad=True))
        emit(graph.GlobalMaxPool2dOp(relu))
        gap = emit(graph.GlobalAvgPool2dOp(relu))
        return emit(graph.ReshapeOp(gap, (1, 4)))

    return build([(1, 4, 8, 8), (2, 3), (3,)], body)


def test_print_parse_print_is_identical_custom_and_generic():
    weight = rand(4, 2, 3, 3)
    module = every_op_module(weight)
    text = print_module(module)
    assert "dense_resource<conv_w_" in text and "dialect_resources" in text
    assert "graph.conv2d %0, %3, %4 {strides = array<i64: 1, 1>" in text

    reparsed = parse_module(text)  # same process: the blob store already holds the handle
    assert print_module(reparsed) == text
    assert reparsed.is_structurally_equivalent(module)
    constants = [op for op in reparsed.walk() if isinstance(op, ConstantOp)]
    np.testing.assert_array_equal(constant_value(constants[0]), weight)

    generic_text = generic(module)
    assert '"graph.conv2d"(' in generic_text
    from_generic = parse_module(generic_text)
    assert generic(from_generic) == generic_text
    assert print_module(from_generic) == text


def test_roundtrip_through_xweave_opt_keeps_the_weights(tmp_path):
    weight = rand(4, 2, 3, 3)
    path = tmp_path / "m.mlir"
    path.write_text(print_module(every_op_module(weight)))
    opt = os.path.join(os.path.dirname(sys.executable), "xweave-opt")
    generic_text = subprocess.run(
        [opt, str(path), "--print-op-generic"], capture_output=True, text=True, check=True
    ).stdout
    custom = subprocess.run(
        [opt], input=generic_text, capture_output=True, text=True, check=True
    ).stdout
    assert custom.strip() == path.read_text().strip()
    module = parse_module(custom)
    (w, *_) = [op for op in module.walk() if isinstance(op, ConstantOp)]
    np.testing.assert_array_equal(constant_value(w), weight)


def test_from_array_inlines_small_and_names_blobs_uniquely():
    small = ConstantOp.from_array("b", np.array([1.5, -2.0], np.float32))
    assert "dense<[1.500000e+00, -2.000000e+00]>" in str(small)
    a, b = rand(4, 5), rand(4, 5)
    ca, ca2, cb = (ConstantOp.from_array("conv1.w:0", x) for x in (a, a, b))
    handle = ca.value.resource_handle.data
    assert handle.startswith("conv1_w_0_") and handle.isidentifier()
    assert ca2.value.resource_handle.data == handle  # same content, same blob
    assert cb.value.resource_handle.data != handle  # same name, other data
    assert ConstantOp.from_array("0-x", a).value.resource_handle.data.startswith("c_0_x_")
    np.testing.assert_array_equal(constant_value(ca), a)
    np.testing.assert_array_equal(constant_value(cb), b)
    with pytest.raises(ValueError):
        constant_value(ca)[0, 0] = 1.0  # read-only


@pytest.mark.parametrize(
    "array",
    [
        np.float32(2.5),
        np.arange(6, dtype=np.float64).reshape(2, 3),
        np.arange(40, dtype=np.float16),
        np.array([1, -2, 3], np.int64),
        np.arange(30, dtype=np.int32).reshape(5, 6),
        np.arange(20, dtype=np.uint8),
        np.array([True, False, True]),
        np.full((2, 2), 7.0, np.float32),
    ],
    ids=lambda a: f"{a.dtype}{list(np.shape(a))}",
)
def test_constant_value_dtypes_and_reparse(array):
    op = ConstantOp.from_array("c", array)
    op.verify()
    value = constant_value(op)
    assert value.dtype == np.asarray(array).dtype and value.shape == np.shape(array)
    np.testing.assert_array_equal(value, array)
    reparsed = parse_module(print_module(ModuleOp([op.clone()])))
    np.testing.assert_array_equal(constant_value(next(iter(reparsed.body.block.ops))), array)


def test_splat_dense_constant():
    module = parse_module("%c = graph.constant dense<2.0> : tensor<2x3xf32>")
    np.testing.assert_array_equal(constant_value(module.body.block.first_op), np.full((2, 3), 2.0))


def test_large_weights_are_fast():
    weight = rand(256, 256, 3, 3)  # 2.4 MB
    op = ConstantOp.from_array("big", weight)
    text = print_module(ModuleOp([op]))
    assert len(text) > 2 * weight.nbytes
    np.testing.assert_array_equal(constant_value(parse_module(text).body.block.first_op), weight)


def test_pattern_kinds():
    assert PatternKind.ELEMWISE < PatternKind.BROADCAST < PatternKind.INJECTIVE
    assert PatternKind.INJECTIVE < PatternKind.REDUCTION < PatternKind.OUT_ELEMWISE_FUSABLE
    assert PatternKind.OUT_ELEMWISE_FUSABLE < PatternKind.OPAQUE
    expected = {
        graph.ConstantOp: PatternKind.OPAQUE,
        graph.Conv2dOp: PatternKind.OUT_ELEMWISE_FUSABLE,
        graph.DenseOp: PatternKind.OUT_ELEMWISE_FUSABLE,
        graph.MatmulOp: PatternKind.OUT_ELEMWISE_FUSABLE,
        graph.AddOp: PatternKind.BROADCAST,
        graph.PowOp: PatternKind.BROADCAST,
        graph.ReluOp: PatternKind.ELEMWISE,
        graph.ClipOp: PatternKind.ELEMWISE,
        graph.MaxPool2dOp: PatternKind.OUT_ELEMWISE_FUSABLE,
        graph.AvgPool2dOp: PatternKind.OUT_ELEMWISE_FUSABLE,
        graph.GlobalAvgPool2dOp: PatternKind.REDUCTION,
        graph.GlobalMaxPool2dOp: PatternKind.REDUCTION,
        graph.ReshapeOp: PatternKind.INJECTIVE,
        graph.TransposeOp: PatternKind.INJECTIVE,
    }
    for cls, kind in expected.items():
        assert cls.pattern_kind is kind, cls
    assert all(isinstance(op.pattern_kind, PatternKind) for op in graph.Graph.operations)
    op = graph.ReluOp(graph.ConstantOp.from_array("x", np.ones(2, np.float32)).result)
    assert op.pattern_kind is PatternKind.ELEMWISE  # also on instances


def test_pattern_kinds_of_the_onnx_frontend_ops():
    """Elementwise math is ELEMWISE, comparisons/where/batch_norm BROADCAST, data movement
    INJECTIVE, reduce REDUCTION; softmax, layer_norm, LRN and conv_transpose2d end in an
    elementwise stage that can absorb what follows (OUT_ELEMWISE_FUSABLE)."""
    kinds = {
        PatternKind.ELEMWISE: [graph.LogOp, graph.ErfOp, graph.GeluOp, graph.LeakyReluOp,
                               graph.HardSwishOp, graph.ShrinkOp, graph.NotOp, graph.CastOp],
        PatternKind.BROADCAST: [graph.PreluOp, graph.LessOp, graph.EqualOp, graph.AndOp,
                                graph.WhereOp, graph.BatchNormOp, graph.BroadcastToOp],
        PatternKind.INJECTIVE: [graph.ConcatOp, graph.SliceOp, graph.PadOp, graph.TileOp,
                                graph.GatherOp],
        PatternKind.REDUCTION: [graph.ReduceOp],
        PatternKind.OUT_ELEMWISE_FUSABLE: [graph.SoftmaxOp, graph.LogSoftmaxOp,
                                           graph.LayerNormOp, graph.LrnOp,
                                           graph.ConvTranspose2dOp],
    }
    for kind, classes in kinds.items():
        for cls in classes:
            assert cls.pattern_kind is kind, cls


def test_activation_parameters_by_position_keyword_or_default():
    """Parameters come in `PARAMETERS` order or by name; more of them, or others, are a
    TypeError as for any Python call."""
    x = Block(arg_types=[TensorType(f32, (2, 3))]).args[0]
    assert graph.SeluOp(x, 1.5).alpha.value.data == 1.5
    assert graph.SeluOp(x, gamma=2.0).gamma.value.data == 2.0
    assert graph.SeluOp(x).alpha.value.data == graph.SeluOp.PARAMETERS["alpha"]
    with pytest.raises(TypeError, match="SeluOp takes the parameters"):
        graph.SeluOp(x, 1.0, 2.0, 3.0)
    with pytest.raises(TypeError, match=r"\['beta'\]"):
        graph.LeakyReluOp(x, beta=0.5)
    with pytest.raises(TypeError):
        graph.LogOp(x, 1.0)


def test_verifier_messages_name_op_and_shapes():
    def body(emit, x):
        w = emit(ConstantOp.from_array("w", rand(4, 3, 3, 3)))
        return emit(graph.Conv2dOp(x, w, pads=(1, 1, 1, 1), result_type=TensorType(f32, (1, 4, 9, 9))))

    with pytest.raises(VerifyException, match=r"graph\.conv2d: expected result shape \[1, 4, 8, 8\] but got \[1, 4, 9, 9\]"):
        build([(1, 3, 8, 8)], body)


# --------------------------------------------------------------------------------------
# Interpreter vs hand-written numpy
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "cls, ref",
    [
        (graph.ReluOp, lambda x: np.maximum(x, 0)),
        (graph.SigmoidOp, lambda x: 1 / (1 + np.exp(-x.astype(np.float64)))),
        (graph.TanhOp, np.tanh),
        (graph.ExpOp, np.exp),
        (graph.NegOp, lambda x: -x),
        (graph.SqrtOp, lambda x: np.sqrt(np.abs(x))),
        (graph.AbsOp, np.abs),
    ],
)
def test_unary(cls, ref):
    x = rand(2, 3, 4)
    if cls is graph.SqrtOp:
        x = np.abs(x)
    y = run_one([x.shape], lambda emit, a: emit(cls(a)), x)
    assert y.dtype == np.float32
    np.testing.assert_allclose(y, ref(x), rtol=1e-6)


def test_sigmoid_extremes_do_not_overflow():
    x = np.array([-1000.0, -20.0, 0.0, 20.0, 1000.0], np.float32)
    with np.errstate(all="raise"):
        y = run_one([x.shape], lambda emit, a: emit(graph.SigmoidOp(a)), x)
    np.testing.assert_allclose(y, [0.0, 2.0611537e-09, 0.5, 1.0, 1.0], rtol=1e-6)


@pytest.mark.parametrize(
    "cls, ref",
    [
        (graph.AddOp, np.add),
        (graph.SubOp, np.subtract),
        (graph.MulOp, np.multiply),
        (graph.DivOp, np.divide),
        (graph.MaxOp, np.maximum),
        (graph.MinOp, np.minimum),
        (graph.PowOp, np.power),
    ],
)
@pytest.mark.parametrize("shapes", [((2, 3), (2, 3)), ((2, 1, 4), (3, 1)), ((4,), (2, 3, 4))])
def test_binary_broadcasting(cls, ref, shapes):
    a, b = rand(*shapes[0]), rand(*shapes[1])
    if cls is graph.PowOp:
        a = np.abs(a) + 0.5
    y = run_one(shapes, lambda emit, x, z: emit(cls(x, z)), a, b)
    assert y.shape == np.broadcast_shapes(*shapes)
    np.testing.assert_allclose(y, ref(a, b), rtol=1e-6)


def test_clip():
    x = rand(3, 4) * 10
    y = run_one([x.shape], lambda emit, a: emit(graph.ClipOp(a, -1.0, 6.0)), x)
    np.testing.assert_array_equal(y, np.clip(x, -1, 6))
    y = run_one([x.shape], lambda emit, a: emit(graph.ClipOp(a, 2.0, 1.0)), x)
    np.testing.assert_array_equal(y, np.full_like(x, 1.0))  # min > max: all max (ONNX)


@pytest.mark.parametrize("with_bias", [False, True])
def test_dense(with_bias):
    x, w, b = rand(3, 5), rand(4, 5), rand(4)

    def body(emit, a):
        bias = emit(ConstantOp.from_array("b", b)) if with_bias else None
        return emit(graph.DenseOp(a, emit(ConstantOp.from_array("w", w)), bias))

    y = run_one([x.shape], body, x)
    np.testing.assert_allclose(y, x @ w.T + (b if with_bias else 0), rtol=1e-5)


@pytest.mark.parametrize("shapes", [((3, 4), (4, 5)), ((2, 3, 4), (4, 5)), ((2, 1, 3, 4), (5, 4, 2))])
def test_matmul_batch_broadcast(shapes):
    a, b = rand(*shapes[0]), rand(*shapes[1])
    y = run_one(shapes, lambda emit, x, z: emit(graph.MatmulOp(x, z)), a, b)
    np.testing.assert_allclose(y, np.matmul(a, b), rtol=1e-5, atol=1e-6)


def test_reshape_transpose():
    x = rand(2, 3, 4)
    y = run_one([x.shape], lambda emit, a: emit(graph.ReshapeOp(a, (4, 6))), x)
    np.testing.assert_array_equal(y, x.reshape(4, 6))
    y = run_one([x.shape], lambda emit, a: emit(graph.TransposeOp(a, (2, 0, 1))), x)
    np.testing.assert_array_equal(y, x.transpose(2, 0, 1))


def test_global_pools():
    x = rand(2, 3, 5, 4)
    y = run_one([x.shape], lambda emit, a: emit(graph.GlobalAvgPool2dOp(a)), x)
    np.testing.assert_allclose(y, x.mean(axis=(2, 3), keepdims=True), rtol=1e-6)
    y = run_one([x.shape], lambda emit, a: emit(graph.GlobalMaxPool2dOp(a)), x)
    np.testing.assert_array_equal(y, x.max(axis=(2, 3), keepdims=True))


def naive_conv2d(x, w, b, strides, pads, dilations, groups):
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])))
    oh = (h + pads[0] + pads[2] - dilations[0] * (kh - 1) - 1) // strides[0] + 1
    ow = (wd + pads[1] + pads[3] - dilations[1] * (kw - 1) - 1) // strides[1] + 1
    y = np.zeros((n, o, oh, ow), np.float64)
    og = o // groups
    for f, i, j in itertools.product(range(o), range(oh), range(ow)):
        g = f // og
        for ky, kx in itertools.product(range(kh), range(kw)):
            patch = xp[:, g * cg : (g + 1) * cg, i * strides[0] + ky * dilations[0],
                       j * strides[1] + kx * dilations[1]]  # fmt: skip
            y[:, f, i, j] += patch @ w[f, :, ky, kx]
    return y + (0 if b is None else b.reshape(1, o, 1, 1))


@pytest.mark.parametrize(
    "strides, pads, dilations, groups, bias",
    [
        ((1, 1), (0, 0, 0, 0), (1, 1), 1, False),
        ((1, 1), (1, 1, 1, 1), (1, 1), 1, True),
        ((2, 1), (1, 0, 2, 1), (1, 1), 2, True),
        ((1, 2), (2, 2, 2, 2), (2, 1), 4, False),
        ((3, 3), (1, 2, 0, 1), (2, 2), 1, True),
    ],
)
def test_conv2d_matches_naive_loops(strides, pads, dilations, groups, bias):
    x, w, b = rand(2, 4, 9, 8), rand(8, 4 // groups, 3, 2), rand(8)

    def body(emit, a):
        wv = emit(ConstantOp.from_array("w", w))
        bv = emit(ConstantOp.from_array("b", b)) if bias else None
        return emit(graph.Conv2dOp(a, wv, bv, strides=strides, pads=pads, dilations=dilations, groups=groups))

    y = run_one([x.shape], body, x)
    ref = naive_conv2d(x, w, b if bias else None, strides, pads, dilations, groups)
    np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-5)


def naive_pool(x, kernel, strides, pads, dilations, ceil_mode, kind, count_include_pad=False):
    n, c, h, w = x.shape
    out = (n, c, *window2d_output_size((h, w), kernel, strides, pads, dilations, ceil_mode))
    y = np.zeros(out, np.float64)
    for i, j in itertools.product(range(out[2]), range(out[3])):
        values, padded = [], 0
        for ky, kx in itertools.product(range(kernel[0]), range(kernel[1])):
            r = i * strides[0] - pads[0] + ky * dilations[0]
            s = j * strides[1] - pads[1] + kx * dilations[1]
            if 0 <= r < h and 0 <= s < w:
                values.append(x[:, :, r, s])
            elif -pads[0] <= r < h + pads[2] and -pads[1] <= s < w + pads[3]:
                padded += 1  # explicit padding (not the extra ceil_mode area)
        if kind == "max":
            y[:, :, i, j] = np.max(values, axis=0)
        else:
            y[:, :, i, j] = np.sum(values, axis=0) / (len(values) + (padded if count_include_pad else 0))
    return y


@pytest.mark.parametrize(
    "kernel, strides, pads, dilations, ceil_mode",
    [
        ((2, 2), (2, 2), (0, 0, 0, 0), (1, 1), False),
        ((3, 3), (2, 2), (1, 1, 1, 1), (1, 1), False),
        ((3, 3), (2, 2), (0, 0, 0, 0), (1, 1), True),
        ((3, 2), (2, 3), (1, 0, 1, 1), (2, 1), True),
    ],
)
def test_max_pool2d_matches_naive_loops(kernel, strides, pads, dilations, ceil_mode):
    x = rand(1, 3, 8, 9)
    y = run_one([x.shape], lambda emit, a: emit(graph.MaxPool2dOp(a, kernel, strides, pads, dilations, ceil_mode)), x)
    np.testing.assert_array_equal(y, naive_pool(x, kernel, strides, pads, dilations, ceil_mode, "max"))


@pytest.mark.parametrize("count_include_pad", [False, True])
@pytest.mark.parametrize(
    "kernel, strides, pads, ceil_mode",
    [
        ((2, 2), (2, 2), (0, 0, 0, 0), False),
        ((3, 3), (1, 1), (1, 1, 1, 1), False),
        ((3, 3), (2, 2), (1, 1, 0, 0), True),
        ((2, 3), (3, 2), (1, 0, 1, 2), True),
    ],
)
def test_avg_pool2d_matches_naive_loops(kernel, strides, pads, ceil_mode, count_include_pad):
    x = rand(1, 3, 8, 9)
    op = lambda emit, a: emit(graph.AvgPool2dOp(a, kernel, strides, pads, ceil_mode, count_include_pad))  # noqa: E731
    y = run_one([x.shape], op, x)
    ref = naive_pool(x, kernel, strides, pads, (1, 1), ceil_mode, "avg", count_include_pad)
    np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-6)


def test_window_output_size_ceil_mode_drops_windows_starting_in_padding():
    # 5 wide, kernel 2, stride 2, no pads: floor -> 2, ceil -> 3 (last window half-empty)
    assert window_output_size(5, 2, 2, 0, 0) == 2
    assert window_output_size(5, 2, 2, 0, 0, ceil_mode=True) == 3
    # 5 wide, pad 1 at both ends, kernel 2, stride 3: ceil -> 3 would start in the padding
    assert window_output_size(5, 2, 3, 1, 1, ceil_mode=True) == 2


def test_conv2d_resnet_size_is_fast():
    import time

    x, w = rand(1, 64, 56, 56), rand(64, 64, 3, 3)

    def body(emit, a):
        return emit(graph.Conv2dOp(a, emit(ConstantOp.from_array("w", w)), pads=(1, 1, 1, 1)))

    module = build([x.shape], body)
    start = time.perf_counter()
    (y,) = run(module, x)
    assert time.perf_counter() - start < 2.0
    assert y.shape == (1, 64, 56, 56)


def test_interpret_entry_point_runs_graph_modules():
    from xweave.dialects.interpreters import interpret

    x = rand(1, 4, 8, 8)
    module = every_op_module(rand(4, 2, 3, 3))
    (y,) = interpret(module, [x, rand(2, 3), rand(3)])
    (ref,) = run(module, x, rand(2, 3), rand(3))
    np.testing.assert_array_equal(y, ref)
