"""loop-split / loop-reorder / loop-fuse / loop-unroll / loop-simplify on real kernels.

Every scheduled module is run by the loop-stage interpreter and as native code, and
compared with the unscheduled module (the interpreter) — schedules must not change
what a model computes. Hypothesis draws small convolutions and random schedules.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from onnx import helper
from xdsl.dialects import func, scf
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import PassPipeline
from xdsl.utils.exceptions import PassFailedException

import xweave
from xweave.context import make_context, parse_module
from xweave.dialects import loop
from xweave.dialects.interpreters import interpret
from xweave.lowering.graph_to_te import ConvertGraphToTePass
from xweave.lowering.loop_to_llvm import extract_params, lower_module
from xweave.lowering.te_to_loop import ConvertTeToLoopPass
from xweave.passes import get_all_passes
from xweave.passes.loop_unroll import LoopUnrollPass
from xweave.lowering.llvm_codegen import compile_llvm

from helpers import onnx_model, schedule

RNG = np.random.default_rng(7)

# --- models and harness -----------------------------------------------------------------


def weights(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def dense_model():
    """Gemm with bias: kernel stages dense (i, j, reduce k) and bias_add (i, j)."""
    node = helper.make_node("Gemm", ["x", "w", "b"], ["y"], transB=1)
    return onnx_model([node], [("x", [3, 7])], ["y"], {"w": weights(5, 7), "b": weights(5)})


def conv_model(c=2, h=5, w=6, f=2, k=3, pads=(1, 2, 1, 0), strides=(2, 1)):
    """Conv with bias, padding and stride: stages pad, conv2d (n, o, y, x, rc, ry, rx)."""
    node = helper.make_node("Conv", ["x", "w", "b"], ["y"], kernel_shape=[k, k],
                            pads=list(pads), strides=list(strides))
    return onnx_model([node], [("x", [1, c, h, w])], ["y"],
                      {"w": weights(f, c, k, k), "b": weights(f)})


def pool_model():
    """Max pooling (padded, strided) then average pooling."""
    nodes = [
        helper.make_node("MaxPool", ["x"], ["p"], kernel_shape=[3, 3], pads=[1, 1, 1, 1],
                         strides=[2, 2]),
        helper.make_node("AveragePool", ["p"], ["y"], kernel_shape=[2, 2], strides=[1, 1]),
    ]
    return onnx_model(nodes, [("x", [1, 2, 7, 7])], ["y"])


def elementwise_model():
    """Broadcast add then relu: stages add (i0, i1, i2), relu (i0, i1, i2)."""
    nodes = [helper.make_node("Add", ["x", "b"], ["s"]), helper.make_node("Relu", ["s"], ["y"])]
    return onnx_model(nodes, [("x", [2, 3, 5])], ["y"], {"b": weights(3, 1)})


def loop_stage(model) -> ModuleOp:
    module = xweave.load_onnx(model)
    PassPipeline((ConvertGraphToTePass(), ConvertTeToLoopPass())).apply(make_context(), module)
    return module


def output_buffers(module: ModuleOp, inputs) -> list[np.ndarray]:
    main = next(f for f in module.ops if isinstance(f, func.FuncOp) and f.sym_name.data == "main")
    types = main.function_type.inputs.data[len(inputs):]
    return [np.full(t.get_shape(), np.nan, np.float32) for t in types]


def run_interpreter(module: ModuleOp, inputs) -> list[np.ndarray]:
    outputs = output_buffers(module, inputs)
    interpret(module, [*inputs, *outputs])
    return outputs


def check(model, spec: str, native: bool = True) -> ModuleOp:
    """Schedule the model's loop stage with `spec`; compare interpreter and native runs
    of the scheduled module with the interpreter on the unscheduled one."""
    module = loop_stage(model)
    inputs = [RNG.standard_normal([d.dim_value for d in i.type.tensor_type.shape.dim])
              .astype(np.float32) for i in model.graph.input
              if i.name not in {t.name for t in model.graph.initializer}]
    expected = run_interpreter(module, inputs)
    scheduled = schedule(module, spec)
    for got, want in zip(run_interpreter(scheduled, inputs), expected):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    if native:
        lowered = scheduled.clone()
        params = extract_params(lowered)
        outputs = output_buffers(lowered, inputs)
        lower_module(lowered)
        engine = compile_llvm(lowered).load(params)
        engine.get_function("main")(*inputs, *outputs)
        for got, want in zip(outputs, expected):
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    return scheduled


def loop_names(module: ModuleOp, kernel: str | None = None) -> list[str]:
    return [op.name_str for f in module.ops if isinstance(f, func.FuncOp)
            and (kernel is None or f.sym_name.data == kernel)
            for op in f.walk() if isinstance(op, loop.ForOp)]


def kernel_of(module: ModuleOp, name: str) -> func.FuncOp:
    return next(f for f in module.ops if isinstance(f, func.FuncOp) and f.sym_name.data == name)


def guards(op) -> int:
    return sum(isinstance(o, scf.IfOp) for o in op.walk())


# --- schedules on real kernels ---------------------------------------------------------------

SCHEDULES = [
    # dense + bias
    (dense_model, 'loop-split{loop="dense.k" factor=3}'),
    (dense_model, 'loop-split{loop="dense.k" factor=3},loop-unroll{loop="dense.k.inner"},'
                  'loop-simplify'),
    (dense_model, 'loop-split{loop="dense.i" factor=2 guard=innermost},'
                  'loop-split{loop="dense.j" factor=2 guard=innermost},'
                  'loop-reorder{order="dense.i.outer","dense.j.outer","dense.k","dense.i.inner",'
                  '"dense.j.inner"},loop-fuse{outer="dense.i.outer" inner="dense.j.outer"},'
                  'loop-unroll{loop="dense.j.inner"},loop-simplify'),
    (dense_model, 'loop-reorder{order="dense.k,dense.i"},loop-split{loop="bias_add.j" nparts=2},'
                  'loop-fuse{outer="bias_add.i" inner="bias_add.j.outer"},loop-simplify'),
    # conv2d with padding and stride
    (conv_model, 'loop-split{loop="conv2d.y" factor=3 guard=innermost},'
                 'loop-split{loop="conv2d.x" nparts=4 guard=innermost},'
                 'loop-reorder{order="conv2d.rc","conv2d.y.outer","conv2d.x.outer"},'
                 'loop-fuse{outer="conv2d.n" inner="conv2d.o"},'
                 'loop-unroll{loop="conv2d.rx"},loop-unroll{loop="conv2d.ry"},loop-simplify'),
    (conv_model, 'loop-unroll{loop="pad.i3"},loop-unroll{loop="pad.i2"},loop-simplify'),
    (conv_model, 'loop-fuse{outer="bias_add.y" inner="bias_add.x"},'
                 'loop-split{loop="bias_add.y.x.fused" factor=5},loop-simplify'),
    (conv_model, 'loop-split{loop="conv2d.rc" factor=1},loop-reorder{order="conv2d.rx",'
                 '"conv2d.rc.inner","conv2d.n"},loop-simplify'),
    # pooling
    (pool_model, 'loop-unroll{loop="max_pool2d.rx"},loop-unroll{loop="max_pool2d.ry"},'
                 'loop-simplify'),
    (pool_model, 'loop-reorder{order="pool_sum.ry","pool_sum.c"},'
                 'loop-split{loop="avg_pool2d.xx" factor=2},loop-simplify'),
    # elementwise
    (elementwise_model, 'loop-fuse{outer="add.i0" inner="add.i1"},'
                        'loop-fuse{outer="add.i0.i1.fused" inner="add.i2"},'
                        'loop-split{loop="add.i0.i1.fused.i2.fused" factor=4},loop-simplify'),
    (elementwise_model, 'loop-split{loop="relu.i2" factor=2},loop-unroll{loop="relu.i2.inner"},'
                        'loop-reorder{order="relu.i2.outer","relu.i0"},loop-simplify'),
    # dense, its bias prefetched in front of each output's reduction (tests index this
    # list by position: new entries go at the end)
    (dense_model, 'loop-compute-at{stage="dense" at="bias_add.j" scope="local"},loop-simplify,'
                  'loop-prefetch{loop="dense.k"}'),
]


@pytest.mark.parametrize("model, spec", SCHEDULES, ids=[s for _, s in SCHEDULES])
def test_schedule_preserves_results(model, spec):
    check(model(), spec)


def test_tiled_dense_structure():
    scheduled = check(dense_model(), SCHEDULES[2][1], native=False)
    names = loop_names(scheduled, "dense_0")
    assert "dense.i.outer.j.outer.fused" in names
    assert "dense.j.inner" not in names  # unrolled
    # 3 x 5 tiled by 2 x 2 overshoots: the guards stay, innermost.
    assert guards(scheduled) > 0


def test_simplify_removes_provable_guards_and_unit_loops():
    unrolled = 'loop-unroll{loop="max_pool2d.rx"},loop-unroll{loop="max_pool2d.ry"}'
    module = loop_stage(pool_model())
    # one padding guard per window tap
    assert guards(kernel_of(schedule(module, unrolled), "max_pool2d_0")) == 9
    scheduled = check(pool_model(), SCHEDULES[8][1], native=False)
    kernel = kernel_of(scheduled, "max_pool2d_0")
    # The centre tap (y*2 + 1 - 1 in [0, 6]) is always inside: its guard is gone.
    assert guards(kernel) == 8
    assert "max_pool2d.n" not in loop_names(scheduled, "max_pool2d_0")
    assert all(i.extent > 1 for i in kernel.walk() if isinstance(i, loop.ForOp))


def test_unrolled_pad_decides_every_padding_guard():
    scheduled = check(conv_model(), SCHEDULES[5][1], native=False)
    kernel = kernel_of(scheduled, "conv2d_0")
    pad_stores = [op for op in kernel.walk() if isinstance(op, loop.StoreOp)
                  and op.memref.name_hint == "pad"]
    assert len(pad_stores) == 7 * 8
    assert all(len(op.map.data.results[2].used_dims()) == 0 for op in pad_stores)
    # Every guard had constant indices: decided. Padding rows 0 and 6 and columns 0 and
    # 1 store the constant 0 (2*8 + 5*2 stores), the others copy the input.
    assert guards(kernel) == 0
    zeros = [op for op in pad_stores if op.value.owner.name == "arith.constant"]
    assert len(zeros) == 2 * 8 + 5 * 2


# --- errors ----------------------------------------------------------------------------------


def apply(module: ModuleOp, spec: str) -> None:
    PassPipeline.parse_spec(get_all_passes(), spec).apply(make_context(), module)


ERRORS = [
    ('loop-split{loop="dense.nope" factor=2}', r"no loop named 'dense.nope' in any kernel"),
    ('loop-split{loop="dense.k" factor=2 kernel=nope}', r"no kernel named 'nope'"),
    ('loop-split{loop="dense.k"}', r"exactly one of factor and nparts"),
    ('loop-split{loop="dense.k" factor=2 nparts=2}', r"exactly one of factor and nparts"),
    ('loop-split{loop="dense.k" factor=0}', r"factor must be at least 1"),
    ('loop-unroll{loop="dense.k" max-extent=4}', r"'dense.k' has 7 iterations.*max-extent=4"),
    ('loop-reorder{order="dense.k","bias_add.i"}', r"'bias_add.i' is not nested inside loop"),
    ('loop-reorder{order="dense.k","dense_init.j"}', r"has no loop named|not nested"),
    ('loop-reorder{order="dense.k","dense.k"}', r"appears twice"),
    ('loop-fuse{outer="dense.i" inner="dense.k"}',
     r"'dense.k' must be the only op in the body of loop 'dense.i'"),
    ('loop-fuse{outer="dense.i" inner="bias_add.j"}', r"no loop named 'bias_add.j' inside"),
]


@pytest.mark.parametrize("spec, message", ERRORS, ids=[s for s, _ in ERRORS])
def test_errors(spec, message):
    module = loop_stage(dense_model())
    with pytest.raises(PassFailedException, match=message):
        apply(module, spec)


def test_reorder_across_split_guard_is_rejected_but_innermost_guard_is_not():
    module = loop_stage(dense_model())
    with pytest.raises(PassFailedException, match=r"a guard \(scf.if\) in the body of loop "
                                                  r"'dense.j.inner'"):
        apply(module.clone(), 'loop-split{loop="dense.j" factor=2},'
                              'loop-reorder{order="dense.k","dense.j.inner"}')
    apply(module, 'loop-split{loop="dense.j" factor=2 guard=innermost},'
                  'loop-reorder{order="dense.k","dense.j.inner"}')
    update = [n for n in loop_names(module, "dense_0") if n.startswith("dense.")]
    assert update == ["dense.i", "dense.j.outer", "dense.k", "dense.j.inner"]


def test_reorder_rejects_a_dependence_between_iterations():
    module = parse_module("""
func.func @scan(%a: memref<4x4xf32>, %out: memref<4x4xf32>) attributes {xweave.kernel} {
  loop.for "scan.i" %i = 1 to 4 {
    loop.for "scan.j" %j = 0 to 4 {
      %p = loop.load %out[%i - 1, %j] : memref<4x4xf32>
      %v = loop.load %a[%i, %j] : memref<4x4xf32>
      %s = arith.addf %p, %v : f32
      loop.store %s, %out[%i, %j] : memref<4x4xf32>
    }
  }
  func.return
}
""")
    with pytest.raises(PassFailedException, match=r"%out is written and accessed at "
                                                  r"different indices"):
        apply(module, 'loop-reorder{order="scan.j","scan.i"}')


# --- random schedules (hypothesis) ------------------------------------------------------------

CONV_AXES = ["n", "o", "y", "x", "rc", "ry", "rx"]


@st.composite
def conv_cases(draw):
    c, f, k = draw(st.integers(1, 2)), draw(st.integers(1, 2)), draw(st.integers(1, 3))
    stride = draw(st.integers(1, 2))
    pads = draw(st.lists(st.integers(0, k - 1), min_size=4, max_size=4))
    h = draw(st.integers(k, 4))
    w = draw(st.integers(k, 4))
    split_axis = draw(st.sampled_from(CONV_AXES))
    factor = draw(st.integers(1, 4))
    use_nparts = draw(st.booleans())
    order = draw(st.permutations(CONV_AXES))
    unroll = draw(st.sampled_from(["ry", "rx", None]))
    fuse = draw(st.booleans())
    return (c, f, k, stride, pads, h, w), (split_axis, factor, use_nparts, order, unroll, fuse)


def conv_schedule(split_axis, factor, use_nparts, order, unroll, fuse) -> str:
    size = f"nparts={factor}" if use_nparts else f"factor={factor}"
    passes = [f'loop-split{{loop="conv2d.{split_axis}" {size} guard=innermost}}']
    names = [n for a in order for n in (
        [f"conv2d.{a}.outer", f"conv2d.{a}.inner"] if a == split_axis else [f"conv2d.{a}"])]
    passes.append("loop-reorder{order=" + ",".join(f'"{n}"' for n in names) + "}")
    if unroll is not None and unroll != split_axis:
        passes.append(f'loop-unroll{{loop="conv2d.{unroll}"}}')
    if fuse:
        passes.append('loop-fuse{outer="bias_add.o" inner="bias_add.y"}')
    passes.append("loop-simplify")
    return ",".join(passes)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(conv_cases())
def test_random_conv_schedules_match_the_interpreter(case):
    (c, f, k, stride, pads, h, w), sched = case
    model = conv_model(c, h, w, f, k, pads, (stride, stride))
    check(model, conv_schedule(*sched), native=False)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(m=st.integers(1, 5), n=st.integers(1, 6), kk=st.integers(1, 6),
       fi=st.integers(1, 4), fj=st.integers(1, 7), order=st.permutations(["i", "j", "k"]),
       unroll=st.booleans())
def test_random_dense_tilings_match_the_interpreter(m, n, kk, fi, fj, order, unroll):
    node = helper.make_node("Gemm", ["x", "w", "b"], ["y"], transB=1)
    model = onnx_model([node], [("x", [m, kk])], ["y"], {"w": weights(n, kk), "b": weights(n)})
    spec = [f'loop-split{{loop="dense.i" factor={fi} guard=innermost}}',
            f'loop-split{{loop="dense.j" factor={fj} guard=innermost}}']
    outer = {"i": "dense.i.outer", "j": "dense.j.outer", "k": "dense.k"}
    spec.append("loop-reorder{order=" + ",".join(f'"{outer[a]}"' for a in order) + "}")
    if unroll and fj <= 8:
        spec.append('loop-unroll{loop="dense.j.inner"}')
    spec.append("loop-simplify")
    check(model, ",".join(spec), native=False)


def test_unroll_refuses_more_than_64_iterations_by_default():
    assert LoopUnrollPass(loop="x").max_extent == 64
    model = onnx_model([helper.make_node("Relu", ["x"], ["y"])], [("x", [65])], ["y"])
    with pytest.raises(PassFailedException, match=r"65 iterations, more than max-extent=64"):
        apply(loop_stage(model), 'loop-unroll{loop="relu.i0"}')
