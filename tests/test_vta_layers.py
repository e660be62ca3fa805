"""Int8 conv2d / dense layers compiled to VTA programs: bit-exact against numpy, with
1, 2 and 4 virtual threads, and latency hiding that actually pays off."""

import numpy as np
import pytest

from xweave.accel.vta.conv_schedule import LayerTooLargeError, build_conv_kernel, choose_plan
from xweave.accel.vta.layers import (
    conv2d_int8,
    dense_int8,
    reference_conv2d_int8,
    reference_dense_int8,
)


def _rand(rng, shape, lo=-128, hi=128, dtype=np.int8):
    return rng.integers(lo, hi, shape).astype(dtype)


CONV_CASES = [
    # (N, C, H, W, O, K, stride, pads, bias, shift, relu)
    (1, 16, 6, 6, 16, 3, 1, 1, True, 8, True),
    (1, 20, 7, 5, 18, 3, 2, 1, True, 9, False),  # channels not multiples of 16 -> padded
    (2, 8, 5, 6, 24, 1, 1, 0, False, 6, True),  # 1x1, batch 2
    (1, 32, 9, 9, 32, 3, 2, (1, 0, 2, 1), True, 10, True),  # asymmetric pads
    (1, 16, 4, 4, 8, 2, 1, 0, False, 0, False),  # no shift: clipping only
]


@pytest.mark.parametrize("threads", [1, 2, 4])
@pytest.mark.parametrize("case", CONV_CASES, ids=lambda c: "x".join(map(str, c[:6])) + f"_s{c[6]}")
def test_conv2d_bit_exact(case, threads):
    n, c, h, w, o, k, s, pads, bias, shift, relu = case
    rng = np.random.default_rng(hash(case) % 2**32)
    data, weight = _rand(rng, (n, c, h, w)), _rand(rng, (o, c, k, k))
    b = rng.integers(-20000, 20000, o).astype(np.int32) if bias else None
    out, report = conv2d_int8(data, weight, b, s, pads, shift, relu, virtual_threads=threads)
    ref = reference_conv2d_int8(data, weight, b, s, pads, shift, relu)
    assert out.dtype == np.int8 and out.shape == ref.shape
    np.testing.assert_array_equal(out, ref)
    assert report.unfinished == () and report.gemm_counter > 0
    assert 0 < report.compute_utilization <= 1


@pytest.mark.parametrize("threads", [1, 2])
def test_dense_bit_exact(threads):
    rng = np.random.default_rng(7)
    data, weight = _rand(rng, (5, 40)), _rand(rng, (24, 40))
    bias = rng.integers(-3000, 3000, 24).astype(np.int32)
    out, report = dense_int8(data, weight, bias, 7, False, virtual_threads=threads)
    np.testing.assert_array_equal(out, reference_dense_int8(data, weight, bias, 7, False))
    assert report.gemm_counter == 5 * 3 * 2  # N x K/16 x M/16 tensor products


def test_reference_semantics():
    # acc = 300 + 5 = 305; 305 >> 1 = 152 -> clipped to 127; -305 >> 1 = -153 -> -128; relu -> 0
    data = np.array([[[[10]], [[-10]]]], np.int8)  # 1 x 2 x 1 x 1
    weight = np.array([[[[30]], [[0]]], [[[-30]], [[0]]]], np.int8)  # 2 x 2 x 1 x 1
    bias = np.array([5, -5], np.int32)
    assert reference_conv2d_int8(data, weight, bias, 1, 0, 1, False).ravel().tolist() == [127, -128]
    assert reference_conv2d_int8(data, weight, bias, 1, 0, 1, True).ravel().tolist() == [127, 0]
    assert reference_conv2d_int8(data, weight, None, 1, 0, 3, False).ravel().tolist() == [37, -38]


def test_virtual_threads_hide_latency():
    """Same layer: two threads overlap loads with compute, so fewer cycles, higher utilization."""
    rng = np.random.default_rng(3)
    data, weight = _rand(rng, (1, 64, 14, 14)), _rand(rng, (64, 64, 3, 3))
    _, r1 = conv2d_int8(data, weight, None, 1, 1, 8, True, virtual_threads=1)
    _, r2 = conv2d_int8(data, weight, None, 1, 1, 8, True, virtual_threads=2)
    assert r1.gemm_counter == r2.gemm_counter == 14 * 14 * 4 * 4 * 9
    assert r2.total_cycles < 0.95 * r1.total_cycles
    assert r2.compute_utilization > r1.compute_utilization
    # Serialized: the load module never runs while compute does; overlapped it does.
    assert r1.stall_cycles["compute"] > r2.stall_cycles["compute"]


def test_bad_inputs():
    d = np.zeros((1, 16, 4, 4), np.int8)
    with pytest.raises(ValueError, match="must be int8"):
        conv2d_int8(d.astype(np.float32), np.zeros((16, 16, 1, 1), np.int8), None)
    with pytest.raises(ValueError, match="channels"):
        conv2d_int8(d, np.zeros((16, 8, 1, 1), np.int8), None)
    with pytest.raises(LayerTooLargeError, match="scratchpads"):
        choose_plan(1, 1, 4, 3000, 1, 3, 3, (1, 1), (1, 1, 1, 1), False, 0, False, 1)


def test_schedule_is_tensorizable_loop_ir():
    """The schedule is plain loop IR (copies with padding guards, a scalar GEMM); every
    DMA and GEMM call of the program comes from tensorize, with the window it derives."""
    from xdsl.context import Context

    from xweave.accel.vta.layers import TENSORIZE_STEPS
    from xweave.dialects import loop
    from xweave.passes.tensorize import TensorizePass

    plan = choose_plan(1, 2, 5, 5, 1, 3, 3, (1, 1), (1, 1, 1, 1), True, 4, True, 2)
    module = build_conv_kernel(plan)
    module.verify()
    text = str(module)
    assert '"gemm.b"' in text and "vthread" in text and "scf.if" in text
    assert not any(name in text for name in ('"vta.load_', '"vta.store"', '"vta.gemm"', '"vta.fill_zero"'))
    for intrinsic, name in TENSORIZE_STEPS:
        TensorizePass(intrinsic=intrinsic, loop=name).apply(Context(), module)
    module.verify()
    calls = {o.callee_name: o.static_attrs for o in module.walk() if isinstance(o, loop.IntrinsicOp)}
    assert not any(isinstance(o, loop.LoadOp | loop.StoreOp) for o in module.walk())
    p = plan
    assert calls["vta.load_inp"] == {"rows": p.rows_in, "cols": p.cols_in, "row_dim": 2, "pad": True}
    assert calls["vta.load_wgt"] == {"rows": p.tob, "cols": p.tcb * 9, "row_dim": 0}
    assert calls["vta.load_acc"] == {"rows": 1, "cols": p.tob}
    assert calls["vta.store"] == {"rows": p.tob, "cols": p.toh * p.ow, "row_dim": 1}
    assert "vta.gemm" in calls and "vta.fill_zero" in calls


def test_four_thread_plan_is_bit_exact():
    """A layer where the schedule really uses 4 interleaved threads."""
    from xweave.accel.vta.layers import plan_conv2d

    rng = np.random.default_rng(11)
    data, weight = _rand(rng, (1, 32, 12, 12)), _rand(rng, (32, 32, 3, 3))
    bias = rng.integers(-9000, 9000, 32).astype(np.int32)
    plan = plan_conv2d(data.shape, weight.shape, True, 1, 1, 9, False, virtual_threads=4)
    assert plan.threads == 4
    out, report = conv2d_int8(data, weight, bias, 1, 1, 9, False, virtual_threads=4)
    np.testing.assert_array_equal(out, reference_conv2d_int8(data, weight, bias, 1, 1, 9, False))
    _, serial = conv2d_int8(data, weight, bias, 1, 1, 9, False, virtual_threads=1)
    assert report.total_cycles < serial.total_cycles


def test_a_program_for_another_config_records_it_and_runs_bit_exact():
    """A smaller VTA (8 KiB of weights) gets a program that records its config, verifies
    against it (not the default) and computes the same layer."""
    from xweave.accel.vta.config import DEFAULT
    from xweave.accel.vta.dialect import CONFIG_ATTR, config_of
    from xweave.accel.vta.layers import compile_conv2d, plan_conv2d

    small = DEFAULT.replace(wgt_buffer_bytes=8 * 1024)
    rng = np.random.default_rng(3)
    x = rng.integers(-128, 128, (1, 16, 6, 6), dtype=np.int8)
    w = rng.integers(-128, 128, (32, 16, 3, 3), dtype=np.int8)
    b = rng.integers(-1000, 1000, 32, dtype=np.int32)
    y, _ = conv2d_int8(x, w, b, pads=1, shift=8, config=small)
    np.testing.assert_array_equal(y, reference_conv2d_int8(x, w, b, pads=1, shift=8))
    plan = plan_conv2d(x.shape, w.shape, True, pads=1, shift=8, config=small)
    program = compile_conv2d(plan, small).program
    assert CONFIG_ATTR in program.attributes and config_of(program) == small
    program.verify()
    assert CONFIG_ATTR not in compile_conv2d(plan_conv2d(x.shape, w.shape, True, pads=1, shift=8),
                                             DEFAULT).program.attributes
