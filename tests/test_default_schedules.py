"""The default schedules on every benchmark shape (bench/matmul.py, bench/conv2d.py) at a
reduced size, and on random shapes (hypothesis): compiled code agrees with numpy /
onnxruntime, and the fast path (a vectorized register block) is really taken."""

from __future__ import annotations

import re

import numpy as np
import onnxruntime as ort
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper
from xdsl.dialects import func
from xdsl.passes import PassPipeline

import xweave
from xweave import te
from xweave.context import make_context, parse_module
from xweave.kernel import build_kernel
from xweave.pipeline import CompileOptions, cpu_stages
from xweave.schedules import analyse, template_for

from helpers import load_bench

RNG = np.random.default_rng(7)

# bench/conv2d.py's layers: (H=W, in, out, kernel, stride, pad, groups), run with the
# image 4x smaller and the channels 8x fewer (at least 8, so the channel vectors stay);
# bench/matmul.py's shapes (MxKxN), run 8x smaller.
conv2d_bench = load_bench("conv2d")
RESNET18, DEPTHWISE = conv2d_bench.RESNET18, conv2d_bench.DEPTHWISE
MATMUL = load_bench("matmul").SHAPES


def reduced(size, cin, cout, k, stride, pad, groups):
    shrink = lambda c: max(8, c // 8) if c > 3 else c  # noqa: E731
    cin_r, cout_r = shrink(cin), shrink(cout)
    return max(size // 4, k), cin_r, cout_r, k, stride, pad, cin_r if groups > 1 else 1


def conv_model(size, cin, cout, k, stride, pad, groups, bias=False, relu=False):
    weight = (RNG.standard_normal((cout, cin // groups, k, k)) * 0.1).astype(np.float32)
    inits = [numpy_helper.from_array(weight, "w")]
    inputs = ["x", "w"]
    if bias:
        inits.append(numpy_helper.from_array(RNG.standard_normal(cout).astype(np.float32), "b"))
        inputs.append("b")
    nodes = [helper.make_node("Conv", inputs, ["c" if relu else "y"], kernel_shape=[k, k],
                              strides=[stride, stride], pads=[pad] * 4, group=groups)]
    if relu:
        nodes.append(helper.make_node("Relu", ["c"], ["y"]))
    graph = helper.make_graph(nodes, "conv",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, cin, size, size])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model


def scheduled_kernels(dump_dir) -> list[func.FuncOp]:
    path = next(dump_dir.glob("*-scheduled.mlir"))
    module = parse_module(path.read_text(), str(path))
    return [f for f in module.ops if isinstance(f, func.FuncOp) and "xweave.kernel" in f.attributes]


def check_conv(tmp_path, shape, **options):
    model = conv_model(*shape, **options)
    size, cin = shape[0], shape[1]
    x = RNG.standard_normal((1, cin, size, size)).astype(np.float32)
    (expected,) = ort.InferenceSession(model.SerializeToString()).run(None, {"x": x})
    module = xweave.build(model, dump_ir=tmp_path)
    np.testing.assert_allclose(module.run(x=x)[0], expected, rtol=1e-4, atol=1e-4)
    return "\n".join(str(k) for k in scheduled_kernels(tmp_path))


def check_matmul(m, k, n):
    """An m x k x n matmul on the default schedule, checked against numpy; the kernel."""
    A = te.placeholder((m, k), "float32", name="A")
    B = te.placeholder((k, n), "float32", name="B")
    r = te.reduce_axis(k, name="k")
    C = te.compute((m, n), lambda i, j: te.sum(A[i, r] * B[r, j], axis=r), name="matmul")
    kernel = build_kernel("matmul", [A, B], [C], schedule="default")
    a = RNG.standard_normal((m, k)).astype(np.float32)
    b = RNG.standard_normal((k, n)).astype(np.float32)
    out = np.empty((m, n), np.float32)
    np.testing.assert_allclose(kernel(a, b, out=[out]), a @ b, rtol=1e-4, atol=1e-4 * np.sqrt(k))
    return kernel


@pytest.mark.parametrize("name", list(RESNET18))
def test_resnet18_layers_reduced(tmp_path, name):
    shape = reduced(*RESNET18[name])
    text = check_conv(tmp_path, shape)
    # vectorized over output channels, whatever the width or stride; the weights
    # were packed at compile time (no packing stage left in the kernel)
    assert "vector<8xf32>" in text
    assert "arg1_pack" not in text


@pytest.mark.parametrize("name", list(DEPTHWISE))
def test_depthwise_layers_reduced(tmp_path, name):
    check_conv(tmp_path, reduced(*DEPTHWISE[name]))


def test_conv_bias_relu_epilogue_on_the_register_block(tmp_path):
    text = check_conv(tmp_path, (14, 16, 32, 3, 2, 1, 1), bias=True, relu=True)
    assert "vector<8xf32>" in text


@pytest.mark.parametrize("m, k, n", MATMUL, ids=[f"{m}x{k}x{n}" for m, k, n in MATMUL])
def test_matmul_shapes_reduced(m, k, n):
    m, k, n = max(1, m // 8), max(8, k // 8), max(8, n // 8)
    kernel = check_matmul(m, k, n)
    if n % 8 == 0:
        assert "vector<8xf32>" in kernel.loop_ir


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(size=st.integers(3, 12), cin=st.integers(1, 12), cout=st.sampled_from([5, 8, 12, 16, 24]),
       k=st.sampled_from([1, 3, 5]), stride=st.integers(1, 3), pad=st.integers(0, 2),
       depthwise=st.booleans(), epilogue=st.booleans())
def test_random_convs_default_schedule(tmp_path, size, cin, cout, k, stride, pad, depthwise,
                                       epilogue):
    if size + 2 * pad < k:
        return
    groups = 1
    if depthwise:
        cin, groups = cout, cout
    check_conv(tmp_path, (size, cin, cout, k, stride, pad, groups), bias=epilogue, relu=epilogue)


@settings(max_examples=10, deadline=None)
@given(m=st.integers(1, 40), k=st.integers(1, 40), n=st.integers(1, 48))
def test_random_matmuls_default_schedule(m, k, n):
    check_matmul(m, k, n)


def conv_kernel_info():
    """The analysis of a 3x3 conv's kernel (16 -> 32 channels, 7x7) at the loop stage."""
    module = xweave.load_onnx(conv_model(7, 16, 32, 3, 1, 1, 1))
    stages = cpu_stages(CompileOptions())
    names = [s.name for s in stages]
    for stage in stages[: names.index("loop") + 1]:
        PassPipeline(stage.passes).apply(make_context(), module)
    kernel = next(f for f in module.ops if isinstance(f, func.FuncOp) and "xweave.kernel" in f.attributes
                  and "conv2d" in f.sym_name.data)
    return analyse(kernel)


def test_template_choices_for_a_conv():
    """The conv template vectorizes over output channels and blocks output pixels."""
    info = conv_kernel_info()
    template = template_for(info)
    config = template.default_config(info)
    assert template.name == "blocked-reduction"
    assert config["tile_cols"] == 16 and config["tile_rows"] > 1
    assert any(s.startswith('loop-pack{buffer=1') for s in template.pipeline(info, config))



def test_nchw_pointwise_conv_reads_its_input_from_row_panels(tmp_path):
    """A lone 1x1 conv stays NCHW (40 output channels: 8-lane blocks); its input's rows
    are the innermost dimension, each reduction step a plane away, so they are packed
    into panels of the register block's rows with the image rows outside the
    reduction: [n][y][x/rows][c][rows]."""
    kernels = check_conv(tmp_path, (13, 64, 40, 1, 1, 0, 1), bias=True, relu=True)
    pack = re.search(r"%arg0_packed = loop.alloc \{xweave.pack = \{argument = 0 : i64, "
                     r"split_dim = array<i64: 3>, factor = array<i64: (\d+)>, "
                     r"order = array<i64: ([\d, ]+)>\}\} : memref<1x13x\d+x64x\1xf32>", kernels)
    assert pack, kernels
    assert pack.group(2) == "0, 2, 3, 1, 4"

# --- GotoBLAS K blocking (k_block / m_block) -------------------------------------------------


def matmul_info(m, k, n):
    from xweave.kernel import lower_kernel_to_loop

    A = te.placeholder((m, k), "float32", name="A")
    B = te.placeholder((k, n), "float32", name="B")
    r = te.reduce_axis(k, name="k")
    C = te.compute((m, n), lambda i, j: te.sum(A[i, r] * B[r, j], axis=r), name="matmul")
    module = lower_kernel_to_loop("matmul", [A, B], [C])
    kernel = next(f for f in module.ops if isinstance(f, func.FuncOp))
    info = analyse(kernel)
    return (A, B, C), info, template_for(info)


def check_blocked_matmul(m, k, n, **overrides) -> str:
    tensors, info, template = matmul_info(m, k, n)
    config = {**template.default_config(info), **overrides}
    steps = template.pipeline(info, config)
    kernel = build_kernel("matmul", list(tensors[:2]), [tensors[2]], schedule=",".join(steps))
    a = RNG.standard_normal((m, k)).astype(np.float32)
    b = RNG.standard_normal((k, n)).astype(np.float32)
    out = np.full((m, n), np.nan, np.float32)
    np.testing.assert_allclose(kernel(a, b, out=[out]), a @ b, rtol=1e-4, atol=1e-4 * np.sqrt(k))
    return kernel.loop_ir


@pytest.mark.parametrize("m, rows, blocks", [(256, 4, 8), (250, 6, 6)])
@pytest.mark.parametrize("parallel", [True, False])
def test_matmul_k_blocking_reduced(m, rows, blocks, parallel):
    # m x 512 x 128 in k blocks of 64 and row blocks of at most 48 rows: 64 tiles of 4
    # in 8 blocks; 42 tiles of 6 (the last one ragged) in 6 blocks of 7 (an even count)
    text = check_blocked_matmul(m, 512, 128, k_block=64, m_block=48, tile_rows=rows,
                                parallel=parallel)
    blocked = f'"matmul.i.outer.outer" %i_outer_outer = 0 to {blocks}'
    for name in ('"matmul.k.outer" %k_outer = 0 to 8', '"matmul.k.inner" %k_inner = 0 to 64',
                 blocked):
        assert name in text
    # the register block is loaded from the output (vectors) at each k.outer step
    assert "= loop.load %out[" in text and "vector<8xf32>" in text
    assert (blocked + " parallel" in text) == parallel


def test_k_blocking_by_default_only_for_long_reductions():
    # K blocking once a K x 16 column panel outgrows L2 (K = 8192); before, row blocks
    # once the 2048 x K row operand outgrows 8 MB (blocks of at most 8 MB, 512 rows)
    for k, blocks in [(1024, (0, 0)), (2048, (0, 512)), (4096, (0, 512)), (8192, (256, 256))]:
        _, info, template = matmul_info(2048, k, 2048)
        config = template.default_config(info)
        assert (config["k_block"], config["m_block"]) == blocks, k
        knobs = template.knobs(info)  # the tuner's space holds the default
        assert config["k_block"] in knobs["k_block"] and config["m_block"] in knobs["m_block"]
        steps = template.pipeline(info, config)
        if k == 2048:  # 342 row tiles of 6 in 6 blocks of 57; the panels in parallel
            assert 'loop-split{loop="matmul.i.outer" factor=57 kernel="matmul"}' in steps
            assert 'loop-parallel{loop="matmul.j.outer" kernel="matmul"}' in steps
            assert 'loop-unguard{loop="matmul.k" kernel="matmul"}' in steps
            assert not any("accumulate=true" in s for s in steps)
        if blocks[0]:  # a 256 x 16 panel slice in L1, 2048 rows in 18 blocks of 19 tiles
            assert (config["k_block"], config["m_block"]) == (256, 256)
            steps = template.pipeline(info, config)
            assert 'loop-split{loop="matmul.i.outer" factor=19 kernel="matmul"}' in steps
            assert 'loop-parallel{loop="matmul.i.outer.outer" kernel="matmul"}' in steps
            assert any("accumulate=true" in s for s in steps)
            # 2048 rows in tiles of 6: the reduction drops the ragged tile's row tests
            assert 'loop-unguard{loop="matmul.k.inner" kernel="matmul"}' in steps
        assert 0 in template.knobs(info)["k_block"]
    # a default-blocked shape end to end: K = 8192, few rows and columns
    assert "matmul.k.outer" in check_blocked_matmul(14, 8192, 16)


def test_k_blocked_tile_reads_the_output_at_the_write_back():
    # loop-defer-accumulate: each visit of a tile starts from zero partial sums and adds
    # the output's value when it writes the tile back (13 rows: a ragged tile of 6)
    from xweave.dialects.interpreters import interpret
    from xweave.kernel import apply_schedule, lower_kernel_to_loop

    m, k, n = 13, 96, 16
    tensors, info, template = matmul_info(m, k, n)
    config = {**template.default_config(info), "k_block": 32, "tile_rows": 6, "parallel": False}
    steps = template.pipeline(info, config)
    assert 'loop-defer-accumulate{stage="matmul" kernel="matmul"}' in steps
    text = check_blocked_matmul(m, k, n, k_block=32, tile_rows=6, parallel=False)
    lines = text.splitlines()
    inner = next(i for i, line in enumerate(lines) if '"matmul.k.inner"' in line)
    reads = [i for i, line in enumerate(lines) if "= loop.load %out[" in line]
    assert reads and min(reads) > inner
    # loop-unguard: the ragged tile's rows are tested at the write-back only
    assert 'loop-unguard{loop="matmul.k.inner" kernel="matmul"}' in steps
    assert not any("scf.if" in line for line in lines[inner:min(reads)])
    assert any("scf.if" in line for line in lines[min(reads):])
    assert "arith.addf" in "\n".join(lines[min(reads):])
    module = lower_kernel_to_loop("matmul", list(tensors[:2]), [tensors[2]])
    apply_schedule(module, ",".join(steps))
    a = RNG.standard_normal((m, k)).astype(np.float32)
    b = RNG.standard_normal((k, n)).astype(np.float32)
    out = np.full((m, n), np.nan, np.float32)
    interpret(module, [a, b, out], entry="matmul")
    np.testing.assert_allclose(out, a @ b, rtol=1e-4, atol=1e-4 * np.sqrt(k))


def test_no_k_blocking_with_an_epilogue_or_several_reductions():
    # conv (three reductions) and dense+bias (an epilogue on the tile) keep one k loop
    info = conv_kernel_info()
    template = template_for(info)
    assert template.knobs(info)["k_block"] == [0]
    assert template.default_config(info)["k_block"] == 0


@pytest.mark.parametrize("parallel", [True, False])
def test_matmul_row_blocks_reduced(parallel):
    # k_block=0, m_block=18: 50 rows in 9 tiles of 6 (the last ragged) in 3 blocks of 3
    text = check_blocked_matmul(50, 40, 32, k_block=0, m_block=18, tile_rows=6,
                                parallel=parallel)
    assert '"matmul.i.outer.outer" %i_outer_outer = 0 to 3' in text
    assert '"matmul.k" %k = 0 to 40' in text and "matmul.k.outer" not in text
    lines = text.splitlines()
    k_loop = next(i for i, line in enumerate(lines) if '"matmul.k"' in line)
    write = next(i for i, line in enumerate(lines) if "loop.store" in line and "%out[" in line)
    assert not any("scf.if" in line for line in lines[k_loop:write])  # loop-unguard
    assert ('"matmul.j.outer" %j_outer = 0 to 2 parallel' in text) == parallel


@settings(max_examples=6, deadline=None)
@given(m=st.integers(1, 60), k=st.integers(1, 24), n=st.sampled_from([8, 16, 40]),
       m_block=st.sampled_from([6, 12, 24]), tile_rows=st.integers(1, 6),
       parallel=st.booleans())
def test_random_row_blocked_matmuls(m, k, n, m_block, tile_rows, parallel):
    check_blocked_matmul(m, k, n, k_block=0, m_block=m_block, tile_rows=tile_rows,
                         parallel=parallel)


@settings(max_examples=6, deadline=None)
@given(m=st.integers(1, 40), k_blocks=st.integers(2, 4), n=st.sampled_from([8, 16, 32, 40]),
       k_block=st.sampled_from([32, 48, 64]), m_block=st.sampled_from([0, 6, 12, 24, 64]),
       tile_rows=st.integers(1, 6), parallel=st.booleans())
def test_random_k_blocked_matmuls(m, k_blocks, n, k_block, m_block, tile_rows, parallel):
    text = check_blocked_matmul(m, k_block * k_blocks, n, k_block=k_block, m_block=m_block,
                                tile_rows=tile_rows, parallel=parallel)
    assert "matmul.k.outer" in text and "= loop.load %out[" in text


# --- parallel loops of an odd, small count are fused first (balance between threads) ---------


def test_parallel_steps_fuse_an_odd_count_down_to_the_next_busy_loop():
    from xweave.schedules.templates import parallel_steps

    assert parallel_steps("k", ["s.a", "s.b"], [4, 9]) == ['loop-parallel{loop="s.a" kernel="k"}']
    assert parallel_steps("k", ["s.a", "s.b"], [33, 9]) == ['loop-parallel{loop="s.a" kernel="k"}']
    assert parallel_steps("k", ["s.n", "s.a", "s.one", "s.b", "s.c"], [1, 3, 1, 56, 7]) == [
        'loop-fuse{outer="s.a" inner="s.one" fused-name="s.a.balanced0" kernel="k"}',
        'loop-fuse{outer="s.a.balanced0" inner="s.b" fused-name="s.a.balanced1" kernel="k"}',
        'loop-parallel{loop="s.a.balanced1" kernel="k"}',
    ]
    # nothing to fuse with: the odd loop itself
    assert parallel_steps("k", ["s.a", "s.b"], [3, 1]) == ['loop-parallel{loop="s.a" kernel="k"}']
    assert parallel_steps("k", ["s.a"], [1]) == []


def test_odd_channel_panels_run_as_one_balanced_parallel_loop(tmp_path):
    # 24 output channels in panels of 8: 3 panels, fused with the rows (3 x 14)
    text = check_conv(tmp_path, (14, 8, 24, 3, 1, 1, 1))
    loops = [line for line in text.splitlines() if "parallel" in line and "loop.for" in line]
    assert any(".balanced" in line and "to 42 parallel" in line for line in loops), loops


def test_fused_epilogue_loads_are_prefetched_before_the_reduction():
    """matmul + bias + residual: the residual's lines of each register tile are
    prefetched in front of the tile's reduction (`loop-prefetch`); results unchanged."""
    m, k, n = 24, 64, 32
    A = te.placeholder((m, k), "float32", name="A")
    B = te.placeholder((k, n), "float32", name="B")
    bias = te.placeholder((n,), "float32", name="bias")
    R = te.placeholder((m, n), "float32", name="R")
    r = te.reduce_axis(k, name="k")
    C = te.compute((m, n), lambda i, j: te.sum(A[i, r] * B[r, j], axis=r), name="matmul")
    D = te.compute((m, n), lambda i, j: C[i, j] + bias[j] + R[i, j], name="epilogue")
    kernel = build_kernel("matmul_res", [A, B, bias, R], [D], schedule="default")
    a, b = RNG.standard_normal((m, k)).astype(np.float32), RNG.standard_normal((k, n)).astype(np.float32)
    c, res = RNG.standard_normal(n).astype(np.float32), RNG.standard_normal((m, n)).astype(np.float32)
    out = np.empty((m, n), np.float32)
    np.testing.assert_allclose(kernel(a, b, c, res, out=[out]), a @ b + c + res, rtol=1e-4, atol=1e-4)
    ir = kernel.loop_ir
    prefetches = [line for line in ir.splitlines() if "loop.prefetch" in line]
    residual = [p for p in prefetches if "memref<24x32xf32>" in p]
    assert residual and all("write" not in p for p in prefetches)
    # one per row of the register tile (two vectors of 8 share a 64-byte line) ...
    rows = len({p.split("[")[1].split(",")[0] for p in residual})
    assert len(residual) == rows
    # ... in front of the reduction loop
    assert ir.index(residual[-1]) < ir.index('"matmul.k"')


@pytest.mark.parametrize("n, cols", [(1000, 40), (64, 32), (24, 24)])
def test_single_row_matmul_takes_several_column_vectors(n, cols):
    """A matrix-vector product has no rows to block: its independent accumulators are
    the column vectors of one wide tile (1000 = 25 x 40: five chains, not one; 64 as
    2 x 32: 8 vectors would need 17 registers with their operand vectors)."""
    _, info, template = matmul_info(1, 64, n)
    config = template.default_config(info)
    assert (config["tile_rows"], config["tile_cols"]) == (1, cols)
    assert check_blocked_matmul(1, 64, n).count("vector.fma") >= cols // 8


def _loops(ir: str) -> list[tuple[str, bool]]:
    """(name, parallel) of every loop of a kernel's IR, in text order."""
    return [(m.group(1), bool(m.group(2))) for m in
            re.finditer(r'loop.for "([^"]+)" %\S+ = \S+ to \S+( parallel)?', ir)]


@pytest.mark.parametrize("k_extent, n, column_blocks", [
    (512, 1000, False),   # rows of 4000 bytes: one stream, one thread
    (768, 3072, True),    # two column blocks of a page and more: in parallel
    (100, 37, False),     # ragged column tiles
])
def test_matrix_vector_products_stream_whole_rows(k_extent, n, column_blocks):
    """A 1xK @ KxN product with the matrix read in place (no panel is worth packing for
    one row) is K-blocked: each block of a few matrix rows is read whole, row after row
    (a column tile's few lines from every row, a page apart, waited for L3 each: 0.6-
    0.7x numpy at 1x512x1000 on Zen 3, 0.94x streamed), with column blocks in parallel
    only where each is at least a page of every row. Products of several rows and the
    numbers are unchanged."""
    A = te.placeholder((1, k_extent), "float32", name="A")
    B = te.placeholder((k_extent, n), "float32", name="B")
    r = te.reduce_axis(k_extent, name="k")
    C = te.compute((1, n), lambda i, j: te.sum(A[i, r] * B[r, j], axis=r), name="matmul")
    kernel = build_kernel("matmul", [A, B], [C])
    names = [name for name, _ in _loops(kernel.loop_ir)]
    assert "matmul.k.outer" in names and "matmul.k.inner" in names
    k_outer = names.index("matmul.k.outer")
    tiles = next(i for i, name in enumerate(names) if name.startswith("matmul.j.outer")
                 and i > k_outer)
    assert k_outer < tiles < names.index("matmul.k.inner")
    parallel = [name for name, p in _loops(kernel.loop_ir) if p]
    assert parallel == (["matmul.j.outer.outer"] if column_blocks else [])
    a = RNG.standard_normal((1, k_extent)).astype(np.float32)
    b = RNG.standard_normal((k_extent, n)).astype(np.float32)
    np.testing.assert_allclose(kernel(a, b), a @ b, rtol=1e-4, atol=1e-4)

    rows = te.placeholder((4, k_extent), "float32", name="A")
    C4 = te.compute((4, n), lambda i, j: te.sum(rows[i, r] * B[r, j], axis=r), name="matmul")
    assert "matmul.k.outer" not in build_kernel("matmul", [rows, B], [C4]).loop_ir
