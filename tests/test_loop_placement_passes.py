"""loop-inline / loop-compute-at / loop-cache-write / loop-pack on real kernels.

Every scheduled kernel is run by the loop-stage interpreter and as native code and
compared with the unscheduled kernel (interpreter): placement and layout changes must
not change what a model computes. The target schedules are TVM's x86 ones: a
dense+bias+relu kernel with a 6x16 register-blocked accumulator and packed weights, and
a conv2d+bias+relu kernel computed per output-channel block x row tile.

Fused kernels (what graph-level fusion will hand the scheduler) are built from the
ONNX model's graph ops with convert-graph-to-te's own operator builders, as one kernel.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from onnx import helper
from xdsl.dialects import func
from xdsl.dialects.builtin import MemRefType, ModuleOp
from xdsl.passes import PassPipeline
from xdsl.utils.exceptions import PassFailedException

import xweave
from xweave import te
from xweave.context import make_context
from xweave.dialects import loop
from xweave.dialects.interpreters import interpret, make_interpreter
from xweave.lowering.graph_to_te import BUILDERS, ConvertGraphToTePass
from xweave.lowering.loop_to_llvm import extract_params, lower_module
from xweave.lowering.te_to_loop import ConvertTeToLoopPass
from xweave.passes import get_all_passes
from xweave.passes.loop_regions import restore_on_failure
from xweave.lowering.llvm_codegen import compile_llvm
from xweave.runtime.jit import load_object

from helpers import assert_refused_untouched, onnx_model, schedule

RNG = np.random.default_rng(3)

# --- models -------------------------------------------------------------------------------


def weights(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def gemm_relu(m=12, n=32, k=8, relu=True):
    """Gemm (transB) + bias [+ Relu]: stages dense (i, j, reduce k), bias_add, relu (i0, i1)."""
    nodes = [helper.make_node("Gemm", ["x", "w", "b"], ["g" if relu else "y"], transB=1)]
    if relu:
        nodes.append(helper.make_node("Relu", ["g"], ["y"]))
    return onnx_model(nodes, [("x", [m, k])], ["y"], {"w": weights(n, k), "b": weights(n)})


def conv_relu(c=3, o=8, h=8, w=8, pads=(1, 1, 1, 1), bias=True, relu=True):
    """Conv [+ bias] [+ Relu]: stages pad, conv2d (n, o, y, x, rc, ry, rx), bias_add, relu."""
    inputs = ["x", "w", "b"] if bias else ["x", "w"]
    nodes = [helper.make_node("Conv", inputs, ["c" if relu else "y"], kernel_shape=[3, 3],
                              pads=list(pads))]
    if relu:
        nodes.append(helper.make_node("Relu", ["c"], ["y"]))
    init = {"w": weights(o, c, 3, 3)}
    if bias:
        init["b"] = weights(o)
    return onnx_model(nodes, [("x", [1, c, h, w])], ["y"], init)


def transpose_reshape_relu():
    nodes = [helper.make_node("Transpose", ["x"], ["t"], perm=[1, 0]),
             helper.make_node("Reshape", ["t", "s"], ["r"]),
             helper.make_node("Relu", ["r"], ["y"])]
    return onnx_model(nodes, [("x", [4, 6])], ["y"], {"s": np.array([3, 8], np.int64)})


# --- kernels and harness ------------------------------------------------------------------


class Kernel:
    """One fused kernel (a module holding just it) with argument values."""

    def __init__(self, model, name: str = "fused"):
        graph_module = xweave.load_onnx(model)
        main = next(f for f in graph_module.ops if isinstance(f, func.FuncOp))
        interpreter = make_interpreter(graph_module)
        values, placeholders, self.inputs = {}, [], []

        def placeholder(value, array):
            p = te.placeholder(tuple(value.type.get_shape()), "float32",
                               name=f"arg{len(placeholders)}")
            placeholders.append(p)
            self.inputs.append(array)
            values[value] = p

        arrays = {a: RNG.standard_normal(a.type.get_shape()).astype(np.float32)
                  for a in main.body.block.args}
        outputs = []
        for op in main.body.block.ops:
            if op.name == "graph.constant":
                arrays[op.results[0]] = np.asarray(interpreter.run_op(op, ())[0])
            elif op.name.startswith("graph."):
                for o in op.operands:  # arguments in order of first use, as the pipeline's
                    if o not in values and arrays[o].dtype == np.float32:
                        placeholder(o, arrays[o])
                values[op.results[0]] = BUILDERS[op.name](op, [values.get(o) for o in op.operands])
            elif isinstance(op, func.ReturnOp):
                outputs = [values[v] for v in op.operands]
        self.name = name
        self.module = ModuleOp([te.create_kernel(name, placeholders, outputs)])
        ConvertTeToLoopPass().apply(make_context(), self.module)
        self.out_shapes = [tuple(o.shape) for o in outputs]
        self.expected = self.run_interpreter(self.module)

    def run_interpreter(self, module):
        outs = [np.full(s, np.nan, np.float32) for s in self.out_shapes]
        interpret(module, [*self.inputs, *outs], entry=self.name)
        return outs

    def run_native(self, module):
        lowered = module.clone()
        lower_module(lowered)
        outs = [np.full(s, np.nan, np.float32) for s in self.out_shapes]
        load_object(compile_llvm(lowered).object_bytes).get_function(self.name)(
            *self.inputs, *outs)
        return outs

    def check(self, spec: str, native: bool = True) -> ModuleOp:
        scheduled = schedule(self.module, spec)
        runs = [self.run_interpreter(scheduled)]
        if native:
            runs.append(self.run_native(scheduled))
        for outs in runs:
            for got, want in zip(outs, self.expected):
                np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
        return scheduled


def check_pipeline(model, spec: str) -> ModuleOp:
    """The whole model (the pipeline's per-op kernels and @main), scheduled with `spec`,
    run by the interpreter and natively against the unscheduled interpreter run."""
    module = xweave.load_onnx(model)
    PassPipeline((ConvertGraphToTePass(), ConvertTeToLoopPass())).apply(make_context(), module)
    main = next(f for f in module.ops if isinstance(f, func.FuncOp) and f.sym_name.data == "main")
    n_in = len(model.graph.input)
    inputs = [RNG.standard_normal(t.get_shape()).astype(np.float32)
              for t in main.function_type.inputs.data[:n_in]]
    out_types = main.function_type.inputs.data[n_in:]

    def outputs():
        return [np.full(t.get_shape(), np.nan, np.float32) for t in out_types]

    expected = outputs()
    interpret(module, [*inputs, *expected])
    scheduled = schedule(module, spec)
    got = outputs()
    interpret(scheduled, [*inputs, *got])
    lowered = scheduled.clone()
    params = extract_params(lowered)
    lower_module(lowered)
    native = outputs()
    compile_llvm(lowered).load(params).get_function("main")(*inputs, *native)
    for a, b, want in zip(got, native, expected):
        np.testing.assert_allclose(a, want, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(b, want, rtol=1e-5, atol=1e-5)
    return scheduled


def kernel_func(module: ModuleOp, name: str | None = None) -> func.FuncOp:
    return next(f for f in module.ops if isinstance(f, func.FuncOp)
                and "xweave.kernel" in f.attributes and (name is None or f.sym_name.data == name))


def loops(module: ModuleOp) -> dict[str, loop.ForOp]:
    return {op.name_str: op for op in module.walk() if isinstance(op, loop.ForOp)}


def allocs(root) -> list[MemRefType]:
    return [op.memref.type for op in root.walk() if isinstance(op, loop.AllocOp)]


def index_loops(access) -> list[str]:
    """The loop each index of `access` is (its map's results must be plain dims)."""
    operands = list(access.indices)
    return [operands[e.position].owner.parent_op().name_str for e in access.map.data.results]


def scope_name(t: MemRefType) -> str:
    return loop.scope_of(t).data


# --- the target schedules -----------------------------------------------------------------

DENSE_TVM = (
    'loop-inline{stage=bias_add},'
    'loop-split{loop="relu.i0" factor=6 guard=innermost},'
    'loop-split{loop="relu.i1" factor=16 guard=innermost},'
    'loop-reorder{order="relu.i1.outer","relu.i0.inner"},'
    'loop-compute-at{stage=dense at="relu.i1.outer" scope=local},'
    'loop-pack{buffer=1 split_dim=0 factor=16}'
)
DENSE_MICROKERNEL = (  # the accumulator in registers: k outermost, the 6x16 tile unrolled
    ',loop-reorder{order="dense.k","dense.i","dense.j"},loop-unroll{loop="dense.i"},'
    'loop-unroll{loop="dense.j"},loop-unroll{loop="dense_init.i"},'
    'loop-unroll{loop="dense_init.j"},loop-simplify'
)

DENSE_VECTORIZED = (
    ',loop-reorder{order="dense.k","dense.i","dense.j"},loop-unroll{loop="dense.i"},'
    'loop-vectorize{loop="dense.j"},loop-unroll{loop="dense_init.i"},'
    'loop-vectorize{loop="dense_init.j"},loop-vectorize{loop="relu.i1.inner"},loop-simplify'
)


def test_dense_bias_relu_tvm_schedule():
    kernel = Kernel(gemm_relu(12, 32, 2))
    scheduled = kernel.check(DENSE_TVM)
    found = loops(scheduled)
    # bias_add is inlined into relu, dense computed per (i.o, j.o) tile of relu.
    assert not any(n.startswith("bias_add") for n in found)
    at = found["relu.i1.outer"]
    assert found["dense.k"] in list(at.walk()) and found["dense_init.j"] in list(at.walk())
    assert (found["dense.i"].extent, found["dense.j"].extent) == (6, 16)
    # the accumulator: a 6x16 local buffer allocated inside the tile loop
    tile = allocs(at)
    assert [(t.get_shape(), scope_name(t)) for t in tile] == [((6, 16), "local")]
    # the packed weights [N/16][K][16], read as [j.o, k, j.i]
    fn = kernel_func(scheduled)
    assert [(t.get_shape(), scope_name(t)) for t in allocs(fn) if t not in tile] == \
        [((2, 2, 16), "global")]
    reads = [op for op in fn.walk() if isinstance(op, loop.LoadOp)
             and op.memref.type.get_shape() == (2, 2, 16) and found["dense.k"].is_ancestor(op)]
    assert len(reads) == 1
    assert index_loops(reads[0]) == ["relu.i1.outer", "dense.k", "dense.j"]
    # the microkernel: every access of the accumulator has constant indices (what lets
    # LLVM keep the 6x16 tile in registers)
    scheduled = kernel.check(DENSE_TVM + DENSE_MICROKERNEL)
    relu_tile = loops(scheduled)["relu.i0.inner"]
    tile_accesses = [op for op in scheduled.walk() if isinstance(op, loop.LoadOp | loop.StoreOp)
                     and scope_name(op.memref.type) == "local" and not relu_tile.is_ancestor(op)]
    assert len(tile_accesses) == 3 * 6 * 16
    assert all(not op.indices for op in tile_accesses)
    # ... or with the 16 columns as one vector: 6 vector accumulators
    vectorized = kernel.check(DENSE_TVM + DENSE_VECTORIZED)
    fmas = [op for op in loops(vectorized)["dense.k"].walk() if op.name == "vector.fma"]
    assert len(fmas) == 6


def test_dense_bias_relu_non_dividing_tiles():
    # 10 x 20 tiled by 6 x 16: the last tiles stick out; dense is guarded, w padded.
    kernel = Kernel(gemm_relu(10, 20, 2))
    scheduled = kernel.check(DENSE_TVM)
    fn = kernel_func(scheduled)
    assert ((2, 2, 16), "global") in [(t.get_shape(), scope_name(t)) for t in allocs(fn)]
    assert any(op.name == "scf.if" for op in loops(scheduled)["dense.j"].walk())
    kernel.check(DENSE_TVM.replace("scope=local", "scope=keep"))


CONV_TVM = (
    'loop-inline{stage=bias_add},'
    'loop-split{loop="relu.i1" factor=4 guard=innermost},'
    'loop-split{loop="relu.i2" factor=2 guard=innermost},'
    'loop-reorder{order="relu.i2.outer","relu.i1.inner"},'
    'loop-compute-at{stage=conv2d at="relu.i2.outer" scope=local}'
)


@pytest.mark.parametrize("pad", [
    'loop-inline{stage=pad}',
    'loop-compute-at{stage=pad at="conv2d.y" scope=local}',
    'loop-compute-at{stage=pad at="relu.i2.outer"}',
])
def test_conv_bias_relu_tvm_schedule(pad):
    kernel = Kernel(conv_relu(1, 8, 4, 3))
    scheduled = kernel.check(CONV_TVM + "," + pad)
    found = loops(scheduled)
    at = found["relu.i2.outer"]
    assert (4, 2, 3) == tuple(found[n].extent for n in ("conv2d.o", "conv2d.y", "conv2d.x"))
    shapes = {(t.get_shape(), scope_name(t)) for t in allocs(at)}
    assert ((1, 4, 2, 3), "local") in shapes
    if "inline" in pad:
        assert not any(n.startswith("pad") for n in found)
    elif "conv2d.y" in pad:  # the three padded input rows of one output row
        assert ((1, 1, 3, 5), "local") in shapes
    else:  # four rows for a tile of two, the buffer kept whole
        assert found["pad.i2"].extent == 4 and found["pad.i3"].extent == 5


def test_conv_non_dividing_tiles_and_reverse_order():
    # 6 channels by 4, 7 rows by 2; pad placed before conv is moved (it moves along).
    kernel = Kernel(conv_relu(1, 6, 3, 2, pads=(1, 0, 1, 2)))
    kernel.check(CONV_TVM + ',loop-inline{stage=pad}')
    kernel.check('loop-compute-at{stage=pad at="conv2d.y" scope=local},' + CONV_TVM)


def test_conv_cache_write_of_the_output():
    # conv2d writes the kernel output: cache-write it per channel block x row tile.
    spec = ('loop-split{loop="conv2d.o" factor=4 guard=innermost},'
            'loop-split{loop="conv2d.y" factor=2 guard=innermost},'
            'loop-reorder{order="conv2d.y.outer","conv2d.o.inner"},'
            'loop-cache-write{stage=conv2d at="conv2d.y.outer"}')
    for shape in [(1, 8, 4, 2), (1, 6, 3, 2)]:
        kernel = Kernel(conv_relu(*shape, bias=False, relu=False))
        scheduled = kernel.check(spec + ',loop-inline{stage=pad}')
        found = loops(scheduled)
        at = found["conv2d.y.outer"]
        assert [(t.get_shape(), scope_name(t)) for t in allocs(at)] == \
            [((1, 4, 2, shape[3]), "local")]
        body = [op for op in at.body.block.ops if isinstance(op, loop.ForOp)]
        assert [b.name_str for b in body] == ["conv2d_init.n", "conv2d.o.inner", "conv2d_write.n"]
        assert [found[f"conv2d_write.{a}"].extent for a in "noyx"] == [1, 4, 2, shape[3]]
    # the write-back is a nest of its own: unroll / simplify target it by name
    kernel.check(spec + ',loop-unroll{loop="conv2d_write.o"},loop-simplify')


@pytest.mark.parametrize("order", ["0,2,3,1", "3,2,1,0"])
def test_tiles_in_another_dimension_order(order):
    # The register block of a conv vectorized over channels is stored channels-last.
    kernel = Kernel(conv_relu(1, 8, 4, 3, bias=False, relu=False))
    spec = ('loop-split{loop="conv2d.o" factor=4 guard=innermost},'
            'loop-split{loop="conv2d.y" factor=2 guard=innermost},'
            'loop-reorder{order="conv2d.y.outer","conv2d.o.inner"},'
            f'loop-cache-write{{stage=conv2d at="conv2d.y.outer" order={order}}},'
            'loop-inline{stage=pad}')
    scheduled = kernel.check(spec)
    box = [1, 4, 2, 3]
    expected = tuple(box[int(d)] for d in order.split(","))
    assert [t.get_shape() for t in allocs(loops(scheduled)["conv2d.y.outer"])] == [expected]
    fused = Kernel(conv_relu(1, 8, 4, 3))
    fused.check(CONV_TVM.replace("scope=local", f"scope=local order={order}")
                + ",loop-inline{stage=pad}")


def test_cache_write_of_an_injective_stage():
    kernel = Kernel(conv_relu(1, 2, 5, 3))
    scheduled = kernel.check('loop-split{loop="relu.i2" factor=2 guard=innermost},'
                             'loop-cache-write{stage=relu at="relu.i2.outer"}')
    assert [f"relu_write.i{d}" in loops(scheduled) for d in range(4)] == [True] * 4


# --- the pipeline's own kernels (with @main) --------------------------------------------------


def test_pipeline_dense_kernel_compute_at_bias():
    scheduled = check_pipeline(gemm_relu(7, 20, 5, relu=False),
                               'loop-split{loop="bias_add.j" factor=8 guard=innermost},'
                               'loop-compute-at{stage=dense at="bias_add.j.outer" scope=local '
                               'kernel=dense_0},loop-pack{buffer=1 split_dim=0 factor=8 '
                               'kernel=dense_0}')
    at = loops(scheduled)["bias_add.j.outer"]
    assert [t.get_shape() for t in allocs(at)] == [(1, 8)]


def test_pipeline_conv_inline_pad_and_pack():
    check_pipeline(conv_relu(1, 3, 3, 3, pads=(2, 1, 0, 1)),
                   'loop-inline{stage=pad},loop-pack{buffer="arg1" split_dim=0 factor=2 '
                   'kernel=conv2d_0},loop-pack{buffer=0 split_dim=1 factor=2 kernel=conv2d_0}')


def test_inline_transpose_and_reshape():
    kernel = Kernel(transpose_reshape_relu())
    scheduled = kernel.check('loop-inline{stage=reshape},loop-inline{stage=transpose}')
    fn = kernel_func(scheduled)
    assert allocs(fn) == []
    (read,) = [op for op in fn.walk() if isinstance(op, loop.LoadOp)]
    assert str(read.map.data) == "(d0, d1) -> ((d1 mod 4), ((d0 * 2) + (d1 floordiv 4)))"


def test_pack_layouts():
    kernel = Kernel(conv_relu(3, 6, 2, 2))
    # OIHW -> [O/4][I][H][W][4] (6 = 4 + 2: zero padding), and a two-dim split
    for spec, shape in [('loop-pack{buffer=1 split_dim=0 factor=4}', (2, 3, 3, 3, 4)),
                        ('loop-pack{buffer="arg1" split_dim=1,0 factor=2,4}', (2, 2, 3, 3, 2, 4)),
                        ('loop-pack{buffer=0 split_dim=1 factor=3}', (1, 1, 2, 2, 3)),
                        # the split-off lanes first: [3][N][I/3][H][W]
                        ('loop-pack{buffer=0 split_dim=1 factor=3 order=4,0,1,2,3}',
                         (3, 1, 1, 2, 2))]:
        scheduled = kernel.check(spec, native="1,0" in spec)
        assert shape in [t.get_shape() for t in allocs(kernel_func(scheduled))]
        names = [n for n in loops(scheduled) if n.startswith("arg")]
        first = ".i1.inner" if "order" in spec else ".i0.outer" if (
            "split_dim=0" in spec or "1,0" in spec) else ".i0"
        assert names[0].endswith(first)


# --- refusals: a clear error and the IR untouched ---------------------------------------------

ERRORS = [
    ('loop-inline{stage=nope}', "no stage 'nope'"),
    ('loop-inline{stage=dense}', "reduction"),
    ('loop-inline{stage=relu}', "kernel argument"),
    ('loop-compute-at{stage=dense at="relu.i0"}', "also read outside 'relu.i0'"),
    ('loop-inline{stage=bias_add},loop-compute-at{stage=dense at="relu.nope"}',
     "no loop named 'relu.nope'"),
    ('loop-compute-at{stage=bias_add at="dense.k"}', "must come after"),
    ('loop-compute-at{stage=bias_add at="bias_add.j"}', "loop of the stage itself"),
    ('loop-compute-at{stage=relu at="relu.i1"}', "loop of the stage itself"),
    ('loop-inline{stage=bias_add},loop-split{loop="dense.j" factor=2},'
     'loop-compute-at{stage=dense at="relu.i0"}', "one whole, unsplit loop"),
    ('loop-inline{stage=bias_add},loop-compute-at{stage=dense at="relu.i0" scope="bad scope"}',
     "invalid memory scope"),
    ('loop-cache-write{stage=relu at="dense.i"}', "must be a loop of the stage"),
    ('loop-split{loop="dense.k" factor=2},loop-reorder{order="dense.k.outer","dense.i"},'
     'loop-cache-write{stage=dense at="dense.k.outer"}', "does not move the written region"),
    ('loop-cache-write{stage=dense at="dense.k"}', "does not move the written region"),
    ('loop-pack{buffer=3 split_dim=0 factor=4}', "used by loop.store"),
    ('loop-pack{buffer=7 split_dim=0 factor=4}', "no argument 7"),
    ('loop-pack{buffer="w" split_dim=0 factor=4}', "no argument 'w'"),
    ('loop-pack{buffer=1 split_dim=2 factor=4}', "no dimension 2"),
    ('loop-pack{buffer=1 split_dim=0,1 factor=4}', "one factor per split"),
    ('loop-pack{buffer=1 split_dim=0,0 factor=4,2}', "split twice"),
    ('loop-pack{buffer=1 split_dim=0 factor=0}', "not positive"),
    ('loop-pack{buffer=1 split_dim=0 factor=4 order=0,1}', "not a permutation"),
]


@pytest.fixture(scope="module")
def dense_kernel():
    return Kernel(gemm_relu(4, 8, 3))


@pytest.mark.parametrize("spec, message", ERRORS, ids=[m for _, m in ERRORS])
def test_refusals_leave_the_ir_untouched(dense_kernel, spec, message):
    *prefix, last = spec.split(",loop-")
    module = dense_kernel.module.clone()
    if prefix:
        module = schedule(module, ",loop-".join(prefix))
        last = "loop-" + last
    pipeline = PassPipeline.parse_spec(get_all_passes(), last)
    assert_refused_untouched(pipeline, module, message.replace("(", r"\("))


def test_every_kernel_is_checked_before_any_is_rewritten(dense_kernel):
    # Two kernels with stage dense; in the second, 'relu.i0' was split away.
    module = schedule(dense_kernel.module, 'loop-inline{stage=bias_add}')
    other = kernel_func(module).clone()
    other.sym_name = type(other.sym_name)("other")
    module.body.block.add_op(other)
    module = schedule(module, 'loop-split{loop="relu.i0" factor=2 kernel=other}')
    pipeline = PassPipeline.parse_spec(get_all_passes(), 'loop-compute-at{stage=dense at="relu.i0"}')
    assert_refused_untouched(pipeline, module, "no loop named 'relu.i0' in kernel 'other'")
    scheduled = schedule(module, 'loop-compute-at{stage=dense at="relu.i0" kernel=fused}')
    assert str(kernel_func(scheduled, "other")) == str(kernel_func(module, "other"))


def test_a_failure_midway_restores_the_kernel(dense_kernel):
    module = dense_kernel.module.clone()
    before = str(module)
    fn = kernel_func(module)
    with pytest.raises(PassFailedException, match="internal error.*boom"):
        with restore_on_failure([fn]):
            next(op for op in fn.walk() if isinstance(op, loop.ForOp)).detach()
            raise ValueError("boom")
    assert str(module) == before
    module.verify()


# --- random shapes and tiles ------------------------------------------------------------------


@settings(max_examples=6, deadline=None, suppress_health_check=list(HealthCheck))
@given(m=st.integers(1, 7), n=st.integers(1, 9), k=st.integers(1, 4),
       ti=st.integers(1, 4), tj=st.integers(1, 5), local_scope=st.booleans(),
       pack=st.booleans())
def test_random_dense_tiles(m, n, k, ti, tj, local_scope, pack):
    spec = DENSE_TVM.replace("factor=6", f"factor={ti}").replace("factor=16", f"factor={tj}")
    if not local_scope:
        spec = spec.replace("scope=local", "scope=keep")
    if not pack:
        spec = spec.rsplit(",loop-pack", 1)[0]
    Kernel(gemm_relu(m, n, k)).check(spec, native=pack)


@settings(max_examples=4, deadline=None, suppress_health_check=list(HealthCheck))
@given(o=st.integers(1, 4), h=st.integers(1, 4), w=st.integers(1, 3),
       to=st.integers(1, 3), ty=st.integers(1, 3), cache_write=st.booleans())
def test_random_conv_tiles(o, h, w, to, ty, cache_write):
    if cache_write:
        kernel = Kernel(conv_relu(1, o, h, w, bias=False, relu=False))
        spec = (f'loop-split{{loop="conv2d.o" factor={to} guard=innermost}},'
                f'loop-split{{loop="conv2d.y" factor={ty} guard=innermost}},'
                'loop-reorder{order="conv2d.y.outer","conv2d.o.inner"},'
                'loop-cache-write{stage=conv2d at="conv2d.y.outer"},'
                'loop-compute-at{stage=pad at="conv2d.y.inner" scope=local}')
    else:
        kernel = Kernel(conv_relu(1, o, h, w))
        spec = (CONV_TVM.replace("factor=4", f"factor={to}").replace("factor=2", f"factor={ty}")
                + ',loop-compute-at{stage=pad at="conv2d.y" scope=local}')
    kernel.check(spec, native=cache_write)


# --- cache-write with the reduction split around the tile (accumulate) -------------------


def matmul_model(m, k, n):
    return onnx_model([helper.make_node("MatMul", ["x", "w"], ["y"])], [("x", [m, k])], ["y"],
                      {"w": weights(k, n)})


@pytest.mark.parametrize("order", ["0,1", "1,0"])
def test_cache_write_accumulate_with_k_blocking(order):
    # GotoBLAS order: k.outer > i0.outer > i1.outer (the tile) > k.inner; 7 rows by 3
    # (ragged, guarded), 10 = 2 x 5 reduction steps.
    kernel = Kernel(matmul_model(7, 10, 12))
    spec = ('loop-split{loop="matmul.i0" factor=3 guard=innermost},'
            'loop-split{loop="matmul.i1" factor=4},loop-split{loop="matmul.k" factor=5},'
            'loop-reorder{order="matmul.k.outer","matmul.i0.outer","matmul.i1.outer",'
            '"matmul.k.inner","matmul.i0.inner","matmul.i1.inner"},'
            f'loop-cache-write{{stage=matmul at="matmul.i1.outer" accumulate=true order={order}}}')
    scheduled = kernel.check(spec)
    found = loops(scheduled)
    at = found["matmul.i1.outer"]
    body = [op.name_str for op in at.body.block.ops if isinstance(op, loop.ForOp)]
    assert body == ["matmul_read.i0", "matmul.k.inner", "matmul_write.i0"]
    assert found["matmul_init.i0"].extent == 7  # the init still zeroes the whole output
    # and on threads: the column tiles are independent within one k.outer step
    kernel.check(spec + ',loop-parallel{loop="matmul.i1.outer"},loop-simplify')
