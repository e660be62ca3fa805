"""virtual-threads and convert-loop-to-vta preserve meaning: the filecheck kernels,
synchronized (2 threads or serialized), lowered and simulated, match numpy."""

from pathlib import Path

import numpy as np
import pytest
from xdsl.dialects import func

from xweave.accel.api import get_accelerator
from xweave.accel.vta.target import simulate_lowered
from xweave.context import make_context, parse_module
from xweave.accel.vta.lowering import lower_function
from xweave.passes.virtual_threads import VirtualThreadError, VirtualThreadsPass

KERNELS = Path(__file__).parent / "filecheck" / "passes" / "virtual-threads.mlir"


def _kernels(sync: bool = True):
    module = parse_module(KERNELS.read_text())
    if sync:
        VirtualThreadsPass().apply(make_context(), module)
    return {f.sym_name.data: f for f in module.ops if isinstance(f, func.FuncOp)}


def _expected(data, w, tile_rows):
    # out[r] = int8(wrap(max(sum_c data[row(r, c)] . w[c]^T, 0)))
    out = []
    for rows in tile_rows:
        acc = sum(data[i, 0].astype(np.int32) @ w[c].astype(np.int32).T for c, i in enumerate(rows))
        out.append(np.maximum(acc, 0).astype(np.int8))
    return np.stack(out)[:, None, :]


@pytest.mark.parametrize("name", ["two_threads", "serial"])
def test_synchronized_kernels_compute_the_right_thing(name):
    rng = np.random.default_rng(5)
    data = rng.integers(-128, 128, (8, 1, 16)).astype(np.int8)
    w = rng.integers(-128, 128, (2, 1, 16, 16)).astype(np.int8)
    f = _kernels()[name]
    lowered = lower_function(f, get_accelerator("vta"))
    outputs, report = simulate_lowered(lowered, {0: data, 1: w})
    if name == "two_threads":  # tile t, thread v -> out[2t+v], rows 4t+2v+c
        rows = [[4 * t + 2 * v + c for c in range(2)] for t in range(2) for v in range(2)]
        expected = _expected(data, w[:, 0], rows)
    else:  # @serial has no ALU: plain truncation of the accumulators
        rows = [[2 * t + c for c in range(2)] for t in range(4)]
        expected = np.stack([
            sum(data[i, 0].astype(np.int32) @ w[c, 0].astype(np.int32).T for c, i in enumerate(r)).astype(np.int8)
            for r in rows
        ])[:, None, :]
    np.testing.assert_array_equal(outputs[2], expected)
    assert report.unfinished == () and report.max_tokens["compute->load"] <= 2


def test_two_threads_overlap_loads_with_compute():
    f = _kernels()["two_threads"]
    lowered = lower_function(f, get_accelerator("vta"))
    _, report = simulate_lowered(lowered, {}, execute=False)
    loads = [e for e in report.timeline if e.module == "load" and e.kind.startswith("load.")]
    gemms = [e for e in report.timeline if e.kind == "gemm"]
    # some load runs while a GEMM of the other thread runs
    assert any(ld.start < g.end and g.start < ld.end for ld in loads for g in gemms)


def test_unsynchronized_program_is_wrong_or_racy():
    """Without the pass the modules do not wait for each other: the same kernel lowered
    without tokens stores before computing (the check that the tokens matter)."""
    rng = np.random.default_rng(5)
    data = rng.integers(1, 100, (8, 1, 16)).astype(np.int8)
    w = rng.integers(1, 100, (2, 1, 16, 16)).astype(np.int8)
    f = _kernels(sync=False)["serial"]
    good = lower_function(_kernels()["serial"], get_accelerator("vta"))
    bad = lower_function(f, get_accelerator("vta"))
    out_good, _ = simulate_lowered(good, {0: data, 1: w})
    out_bad, _ = simulate_lowered(bad, {0: data, 1: w})
    assert not np.array_equal(out_good[2], out_bad[2])


def test_unbalanced_tokens_are_rejected():
    text = """
    func.func @k(%data: memref<8x1x16xi8>, %out: memref<4x1x16xi8>) {
      %inp = loop.alloc : memref<2048x1x16xi8, #loop.scope<vta.inp>>
      %acc = loop.alloc : memref<2048x1x16xi32, #loop.scope<vta.acc>>
      %wb = loop.alloc : memref<1024x16x16xi8, #loop.scope<vta.wgt>>
      loop.for "a" %i = 0 to 2 {
        loop.intrinsic "vta.load_inp"(%inp[0, 0, 0], %data[%i, 0, 0]) params {cols = 1 : i64} : memref<2048x1x16xi8, #loop.scope<vta.inp>>, memref<8x1x16xi8>
      }
      loop.for "b" %j = 0 to 3 {
        loop.intrinsic "vta.gemm"(%acc[0, 0, 0], %inp[0, 0, 0], %wb[0, 0, 0]) : memref<2048x1x16xi32, #loop.scope<vta.acc>>, memref<2048x1x16xi8, #loop.scope<vta.inp>>, memref<1024x16x16xi8, #loop.scope<vta.wgt>>
        loop.intrinsic "vta.load_inp"(%inp[0, 0, 0], %data[%j, 0, 0]) params {cols = 1 : i64} : memref<2048x1x16xi8, #loop.scope<vta.inp>>, memref<8x1x16xi8>
      }
      func.return
    }
    """
    module = parse_module(text)
    with pytest.raises(VirtualThreadError, match="in its first iteration but for a load step"):
        VirtualThreadsPass().apply(make_context(), module)
