"""BlockedReduction's register block over two pixel axes (`tile_rows_outer`): a y x x
block of output pixels for convs whose width has no row count that fits the
registers (14x14: 2x2 pixels x 16 channels instead of 7 x 8; not for 1x1 convs, which
reuse no input across pixel rows: 5 x 16 on packed rows). The choice, and the
compiled kernels against numpy for blocks that divide the image or not, with and
without an epilogue on the tile.

Ragged row tiles (7x7 and 13x13 outputs: 4 x 16 and 5 x 16 instead of 7 x 8 and a
spilling 13 x 8): the last tile computes whole, on a padded input grown to cover its
reads or on rows packed into whole tiles; only its write-back (and epilogue) is
guarded. Every step of their default schedules applies, no guard is left inside the
reduction, and the kernels match numpy."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.dialects import func

from xweave import te
from xweave.kernel import build_kernel, lower_kernel_to_loop
from xweave.operators import nn
from xweave.schedules import analyse, apply_steps, template_for
from xweave.schedules.templates import DEFAULT_BLOCK_REGISTERS, lanes_of, vectors_in

RNG = np.random.default_rng(12)


def nchwc_conv(size, in_blocks, out_blocks, k, stride, pad, epilogue):
    """A conv2d_nchwc on blocks of 16 channels (bias + relu epilogue if asked)."""
    data = te.placeholder((1, in_blocks, size, size, 16), "float32", name="data")
    weight = te.placeholder((out_blocks, in_blocks, k, k, 16, 16), "float32", name="weight")
    out_size = (size + 2 * pad - k) // stride + 1
    shape = (1, out_blocks, out_size, out_size, 16)
    inputs = [data, weight]
    bias = None
    if epilogue:
        bias = te.placeholder((out_blocks, 16), "float32", name="bias")
        inputs.append(bias)
    out = nn.conv2d_nchwc(data, weight, bias, shape, (stride, stride), (pad,) * 4, (1, 1), 1)
    if epilogue:
        conv = out
        out = te.compute(shape, lambda *i: te.max(conv[i], 0.0), name="relu")
    return inputs, out


def reference(x, w, b, stride, pad):
    n, cb, h, _, ci = x.shape
    ob, _, k, _, _, co = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad), (0, 0)))
    out = (h + 2 * pad - k) // stride + 1
    y = np.zeros((n, ob, out, out, co), np.float32)
    for ry in range(k):
        for rx in range(k):
            window = xp[:, :, ry:ry + stride * out:stride, rx:rx + stride * out:stride, :]
            y += np.einsum("ncyxi,ocip->noyxp", window, w[:, :, ry, rx])
    if b is not None:
        y = np.maximum(y + b[None, :, None, None, :], 0)
    return y


def check_conv_kernel(inputs, out, steps, size, k, stride, pad, epilogue):
    """The conv of `nchwc_conv(size, 2, 2, k, stride, pad, epilogue)` compiled with the
    schedule `steps`, run on random data and checked against numpy; the kernel."""
    kernel = build_kernel("conv", inputs, [out], schedule=",".join(steps))
    x = RNG.standard_normal((1, 2, size, size, 16)).astype(np.float32)
    w = (RNG.standard_normal((2, 2, k, k, 16, 16)) * 0.1).astype(np.float32)
    b = RNG.standard_normal((2, 16)).astype(np.float32) if epilogue else None
    out_size = (size + 2 * pad - k) // stride + 1
    result = np.full((1, 2, out_size, out_size, 16), np.nan, np.float32)
    kernel(*([x, w] + ([b] if epilogue else [])), out=[result])
    np.testing.assert_allclose(result, reference(x, w, b, stride, pad), rtol=1e-4, atol=1e-4)
    return kernel


def kernel_info(inputs, out):
    module = lower_kernel_to_loop("conv", inputs, [out])
    kernel = next(f for f in module.ops if isinstance(f, func.FuncOp))
    info = analyse(kernel)
    return info, template_for(info)


@pytest.mark.parametrize("size, outer, rows, cols", [
    (14, 2, 2, 16),   # no row count dividing 14 fits 16 columns: a 2x2 pixel block
    (56, 1, 4, 16),   # 4 pixels of a row already fill the FMA units: unchanged
    (7, 1, 4, 16),    # 7 is prime: a ragged 4 x 16 (7 x 8 loads as much as it FMAs)
    (13, 1, 5, 16),   # 13 x 8 spills: a ragged 5 x 16
    (27, 1, 9, 8),    # 9 x 8 divides and does as well as a ragged 4 x 16
])
def test_default_register_block(size, outer, rows, cols):
    inputs, out = nchwc_conv(size, 2, 2, 3, 1, 1, epilogue=True)
    info, template = kernel_info(inputs, out)
    config = template.default_config(info)
    assert template.name == "blocked-reduction"
    assert (config["tile_rows_outer"], config["tile_rows"], config["tile_cols"]) == (outer, rows, cols)
    assert config["tile_rows_outer"] in template.knobs(info)["tile_rows_outer"]


@pytest.mark.parametrize("size, rows", [(14, 5), (7, 4), (28, 4)])
def test_pointwise_convs_block_rows_alone(size, rows):
    """A 1x1 conv reuses no input across pixel rows: no 2x2 block at 14x14, but a
    ragged 5 x 16 reading packed row panels; the kernel matches numpy."""
    inputs, out = nchwc_conv(size, 2, 2, 1, 1, 0, epilogue=True)
    info, template = kernel_info(inputs, out)
    config = template.default_config(info)
    assert (config["tile_rows_outer"], config["tile_rows"], config["tile_cols"]) == (1, rows, 16)
    assert len(template.knobs(info)["tile_rows_outer"]) > 1  # the tuner may still try them
    steps = template.pipeline(info, config)
    if size % rows:
        assert any(s.startswith("loop-pack{buffer=0") for s in steps), steps
    check_conv_kernel(inputs, out, steps, size, 1, 1, 0, epilogue=True)


def test_no_outer_rows_for_matmuls():
    """The batch of a batch matmul changes the column vectors: no block across it."""
    A = te.placeholder((4, 14, 32), "float32", name="A")
    B = te.placeholder((4, 32, 16), "float32", name="B")
    r = te.reduce_axis(32, name="k")
    C = te.compute((4, 14, 16), lambda b, i, j: te.sum(A[b, i, r] * B[b, r, j], axis=r),
                   name="bmm")
    info, template = kernel_info([A, B], C)
    assert template.knobs(info)["tile_rows_outer"] == [1]
    assert template.default_config(info)["tile_rows_outer"] == 1


@pytest.mark.parametrize("size, stride, pad, k, outer, rows, epilogue", [
    (14, 1, 1, 3, 2, 2, True),    # the default block of a 14x14 ResNet layer
    (14, 1, 1, 3, 2, 2, False),   # the output itself is the tile (cache-write)
    (14, 2, 1, 3, 7, 1, True),    # strided to 7x7, a column of 7 pixels
    (9, 1, 0, 1, 3, 3, True),     # 1x1 conv, 3x3 pixel blocks
    (10, 1, 1, 3, 5, 2, False),   # 5x2 pixels, no epilogue
    (12, 1, 1, 3, 3, 4, True),    # 3x4 pixels
])
def test_pixel_blocks_compute_the_conv(size, stride, pad, k, outer, rows, epilogue):
    inputs, out = nchwc_conv(size, 2, 2, k, stride, pad, epilogue)
    info, template = kernel_info(inputs, out)
    config = {**template.default_config(info), "tile_rows_outer": outer, "tile_rows": rows,
              "tile_cols": 16}
    steps = template.pipeline(info, config)
    y = info.stages[-1].spatial[2][0]  # the output's rows, split by `outer`
    assert any(s.startswith(f'loop-split{{loop="{y}" factor={outer}') for s in steps)
    kernel = check_conv_kernel(inputs, out, steps, size, k, stride, pad, epilogue)
    # the register block stays in vector registers: 8-lane FMAs on the local tile
    assert "vector.fma" in kernel.loop_ir


def test_no_ragged_rows_through_a_window_on_an_argument():
    """A valid 3x3 conv reads its input argument through the window: a ragged last tile
    would read past its end, so the rows divide the image (9 -> 7: 7 x 8)."""
    inputs, out = nchwc_conv(9, 2, 2, 3, 1, 0, epilogue=True)
    info, template = kernel_info(inputs, out)
    config = template.default_config(info)
    assert (config["tile_rows"], config["tile_cols"]) == (7, 8)


def _reduction_guards(kernel_ir: str) -> int:
    """`scf.if`s inside or around a reduction loop (`.rc`) of the printed kernel."""
    depth, loops, guards, count = 0, [], [], 0
    for line in kernel_ir.splitlines():
        text = line.strip()
        if text.startswith("loop.for") and ".rc" in text.split()[1]:
            count += len(guards)  # a guard around the reduction
            guards.clear()
            loops.append(depth)
        if text.startswith("scf.if"):
            if loops:
                count += 1  # a guard in the reduction
            else:
                guards.append(depth)
        depth += text.count("{") - text.count("}")
        while loops and depth <= loops[-1]:
            loops.pop()
        while guards and depth <= guards[-1]:
            guards.pop()
    return count


@pytest.mark.parametrize("size, stride, pad, k, epilogue", [
    (7, 1, 1, 3, True),     # ResNet-18 layer4 3x3 (C12)
    (7, 1, 1, 3, False),    # no epilogue: cache-write, loop-unguard grows the padding
    (14, 2, 1, 3, True),    # layer4's strided 3x3 (C10), 14 -> 7
    (7, 1, 0, 1, True),     # ResNet-50 layer4 1x1: rows packed into whole tiles
    (13, 1, 1, 3, True),    # SqueezeNet fire expand 3x3
    (13, 1, 0, 1, False),   # SqueezeNet squeeze/expand 1x1
])
def test_ragged_tiles_compute_whole(size, stride, pad, k, epilogue):
    inputs, out = nchwc_conv(size, 2, 2, k, stride, pad, epilogue)
    info, template = kernel_info(inputs, out)
    config = template.default_config(info)
    out_size = (size + 2 * pad - k) // stride + 1
    assert out_size % config["tile_rows"] and config["tile_cols"] == 16
    steps = template.pipeline(info, config)
    module = lower_kernel_to_loop("conv", inputs, [out])
    assert apply_steps(module, steps, skip_illegal=True) == steps  # nothing skipped
    assert _reduction_guards(str(module)) == 0
    check_conv_kernel(inputs, out, steps, size, k, stride, pad, epilogue)


def test_reduction_guards_counts_guards_in_the_reduction():
    """The check above can fail: the old schedule (guarded compute-at) leaves guards."""
    inputs, out = nchwc_conv(7, 2, 2, 3, 1, 1, epilogue=True)
    info, template = kernel_info(inputs, out)
    config = {**template.default_config(info), "tile_rows": 4, "tile_cols": 16}
    steps = [s.replace(" overcompute=true", "") for s in template.pipeline(info, config)]
    module = lower_kernel_to_loop("conv", inputs, [out])
    applied = apply_steps(module, steps, skip_illegal=True)
    assert len(applied) < len(steps)  # the reorder of the guarded nest is refused
    assert _reduction_guards(str(module)) > 0


# --- the register file: 16 or 32 vector registers ------------------------------------
# The machine model's `vector_registers` (16 ymm registers on an AVX2 CPU, 32 with
# AVX-512; `XWEAVE_VECTOR_REGISTERS` overrides it). Default blocks stay within
# DEFAULT_BLOCK_REGISTERS whatever the file; the tuner's space admits blocks up to the
# file, and those larger blocks compute the conv.


@pytest.fixture
def registers(monkeypatch):
    """Set the register count the templates see."""
    def use(count: str):
        monkeypatch.setenv("XWEAVE_VECTOR_REGISTERS", count)
    return use


@pytest.mark.parametrize("size", [56, 28, 14, 7])
def test_default_blocks_do_not_depend_on_the_register_file(registers, size):
    inputs, out = nchwc_conv(size, 2, 2, 3, 1, 1, epilogue=True)
    configs = []
    for count in ("16", "32"):
        registers(count)
        info, template = kernel_info(inputs, out)
        config = template.default_config(info)
        vectors = vectors_in(config["tile_cols"], lanes_of(info, config))
        block = config["tile_rows_outer"] * config["tile_rows"] * vectors
        assert block + vectors + 1 <= DEFAULT_BLOCK_REGISTERS
        assert template.valid(info, config)
        configs.append(config)
    assert configs[0] == configs[1]


def test_a_roomy_register_file_takes_one_vector_of_13_rows(registers):
    """13 rows of one vector (15 registers) spill on a 16-register file, where a ragged
    5 x 16 is taken; 32 registers hold them, and the block computes the conv."""
    inputs, out = nchwc_conv(13, 2, 2, 3, 1, 1, epilogue=True)
    blocks = {}
    for count in ("16", "32"):
        registers(count)
        info, template = kernel_info(inputs, out)
        config = template.default_config(info)
        blocks[count] = (config["tile_rows_outer"], config["tile_rows"], config["tile_cols"])
    assert blocks == {"16": (1, 5, 16), "32": (1, 13, 8)}
    kernel = build_kernel("conv", inputs, [out], schedule=",".join(template.pipeline(info, config)))
    x = RNG.standard_normal((1, 2, 13, 13, 16)).astype(np.float32)
    w = (RNG.standard_normal((2, 2, 3, 3, 16, 16)) * 0.1).astype(np.float32)
    b = RNG.standard_normal((2, 16)).astype(np.float32)
    result = np.full((1, 2, 13, 13, 16), np.nan, np.float32)
    kernel(x, w, b, out=[result])
    np.testing.assert_allclose(result, reference(x, w, b, 1, 1), rtol=1e-4, atol=1e-4)


def test_the_space_admits_larger_blocks_with_more_registers(registers):
    inputs, out = nchwc_conv(14, 2, 2, 3, 1, 1, epilogue=True)
    registers("16")
    info, template = kernel_info(inputs, out)
    knobs = template.knobs(info)
    wide = {**template.default_config(info), "tile_rows_outer": 1, "tile_rows": 14,
            "tile_cols": 16}  # 28 accumulators + 2 column vectors + a broadcast
    assert not template.valid(info, wide)
    registers("32")
    info, template = kernel_info(inputs, out)  # the machine model is read at analysis
    assert template.valid(info, wide)
    assert template.knobs(info) == knobs  # same knobs: records stay comparable


@pytest.mark.parametrize("size, stride, pad, k, epilogue, rows", [
    (14, 1, 1, 3, True, 7),     # 7 x 16 with bias + relu on the tile
    (7, 1, 1, 3, False, 7),     # a whole 7-pixel row, cache-written
    (13, 1, 0, 1, True, 7),     # a ragged 7 x 16 (13 = 7 + 6) on packed rows
    (14, 1, 1, 3, False, 14),   # 28 accumulators
])
def test_blocks_beyond_16_registers_compute_the_conv(registers, size, stride, pad, k,
                                                     epilogue, rows):
    registers("32")
    inputs, out = nchwc_conv(size, 2, 2, k, stride, pad, epilogue)
    info, template = kernel_info(inputs, out)
    config = {**template.default_config(info), "tile_rows_outer": 1, "tile_rows": rows,
              "tile_cols": 16}
    assert template.valid(info, config)
    steps = template.pipeline(info, config)
    check_conv_kernel(inputs, out, steps, size, k, stride, pad, epilogue)
