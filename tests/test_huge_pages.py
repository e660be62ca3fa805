"""The runtime's arenas (model intermediates, kernel temporaries) on huge pages."""

import mmap

import numpy as np
import pytest
from onnx import TensorProto, helper

import xweave
from xweave import te
from xweave.runtime import arena as arena_mod
from xweave.runtime.arena import (
    HUGE_PAGE_BYTES,
    allocate_arena,
    huge_page_bytes,
    huge_page_policy,
    huge_pages_possible,
)

needs_thp = pytest.mark.skipif(not huge_pages_possible(),
                               reason=f"transparent huge pages: {huge_page_policy()}")
RNG = np.random.default_rng(0)


def test_small_arena_is_page_aligned_and_writable():
    a = allocate_arena(1000)
    assert a.nbytes == 1000 and a.dtype == np.uint8
    assert a.ctypes.data % mmap.PAGESIZE == 0
    a[:] = 7
    assert int(a.sum()) == 7000


@needs_thp
def test_big_arena_is_backed_by_huge_pages():
    a = allocate_arena(5 * HUGE_PAGE_BYTES + 123)
    assert a.nbytes == 5 * HUGE_PAGE_BYTES + 123
    assert a.ctypes.data % HUGE_PAGE_BYTES == 0
    a[:] = 1  # fault it in
    # Every whole huge page of it (the system has free memory: a few may be refused).
    assert huge_page_bytes(a) >= 4 * HUGE_PAGE_BYTES


@needs_thp
def test_plain_mapping_gets_no_huge_pages_under_madvise_policy():
    """What the advice is for: under `madvise`, the same mapping without it stays on
    4 KB pages (so the test above measures our advice, not the system's default)."""
    if huge_page_policy() != "madvise":
        pytest.skip("THP policy is 'always': every mapping may get huge pages")
    m = mmap.mmap(-1, 4 * HUGE_PAGE_BYTES, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    a = np.frombuffer(m, np.uint8)
    a[:] = 1
    assert huge_page_bytes(a) == 0


def test_no_huge_pages_where_the_system_has_none(monkeypatch):
    monkeypatch.setattr(arena_mod, "huge_page_policy", lambda: "never")
    a = allocate_arena(3 * HUGE_PAGE_BYTES)
    a[:] = 1
    assert a.nbytes == 3 * HUGE_PAGE_BYTES
    if huge_page_policy.__wrapped__() == "madvise":  # the real policy: nothing advised
        assert huge_page_bytes(a) == 0


def test_policy_is_read_from_sysfs():
    assert huge_page_policy() in ("always", "madvise", "never")


@needs_thp
def test_kernel_temporaries_live_in_a_huge_page_arena():
    """build_kernel plans a matmul's packed operands into an arena (once, not per call)
    that is on huge pages; the product stays right across calls."""
    m, k_extent, n = 512, 512, 512
    A = te.placeholder((m, k_extent), "float32", name="A")
    B = te.placeholder((k_extent, n), "float32", name="B")
    k = te.reduce_axis(k_extent, name="k")
    C = te.compute((m, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="matmul")
    kernel = xweave.build_kernel("matmul", [A, B], [C], schedule="default")
    assert kernel.arena is not None and kernel.arena.nbytes >= 2 * m * k_extent * 4
    assert "loop.alloc" in kernel.loop_ir  # planned after the schedule, when compiled
    for _ in range(2):
        a = RNG.standard_normal((m, k_extent), dtype=np.float32)
        b = RNG.standard_normal((k_extent, n), dtype=np.float32)
        np.testing.assert_allclose(kernel(a, b), a @ b, rtol=1e-4, atol=1e-3)
    assert huge_page_bytes(kernel.arena) >= HUGE_PAGE_BYTES


def _wide_model():
    """Relu -> Neg -> Add on 1x64x96x96 (2.25 MB per tensor): an arena of a few MB."""
    shape = [1, 64, 96, 96]
    nodes = [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Neg", ["r"], ["n"]),
             helper.make_node("Add", ["n", "x"], ["y"])]
    graph = helper.make_graph(nodes, "wide",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model


@needs_thp
def test_model_arena_on_huge_pages_also_after_export(tmp_path):
    x = RNG.standard_normal((1, 64, 96, 96)).astype(np.float32)
    expected = x - np.maximum(x, 0)
    built = xweave.build(_wide_model(), fuse=False)
    built.export(tmp_path / "wide.xwm")
    loaded = xweave.load_module(tmp_path / "wide.xwm")
    for module in (built, loaded):
        assert module.peak_memory_bytes and module.peak_memory_bytes >= HUGE_PAGE_BYTES
        np.testing.assert_allclose(module.run(x=x)[0], expected, rtol=1e-6)
        assert module.arena is not None
        assert module.arena.ctypes.data % HUGE_PAGE_BYTES == 0
        assert huge_page_bytes(module.arena) >= HUGE_PAGE_BYTES
