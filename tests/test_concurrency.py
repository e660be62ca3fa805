"""One loaded module called from several threads at once (as onnxruntime's `run` is):
every call has its own arena and profiling counters (call state, passed to @main), so
results are those of a single-threaded run. (bench/concurrency.py runs 4 x 1000 calls
and measures the throughput.)"""

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

import xweave
from xweave.runtime.threads import set_num_threads

from helpers import load_bench

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "small_cnn.onnx"
concurrency = load_bench("concurrency")  # its inputs and check of concurrent calls
THREADS = 4
CALLS = 100
"""Calls per thread: each call has its own input, so calls sharing an arena would mix
one call's intermediate results into another's output."""


@pytest.fixture(scope="module")
def cnn():
    return xweave.build(EXAMPLE)


@pytest.mark.parametrize("threads", [1, 2])
def test_concurrent_calls_give_single_threaded_results(cnn, threads):
    set_num_threads(cnn, threads)
    assert cnn.peak_memory_bytes  # the intermediate buffers live in an arena
    inputs = concurrency.call_inputs(cnn, THREADS * CALLS)
    reference = [cnn.run(**x) for x in inputs]  # one call at a time
    assert concurrency.wrong_results(cnn, inputs, reference, THREADS) == 0


def test_concurrent_calls_of_a_loaded_module(cnn, tmp_path):
    cnn.export(tmp_path / "cnn.xwm")
    loaded = xweave.load_module(tmp_path / "cnn.xwm")
    inputs = concurrency.call_inputs(loaded, THREADS * 25)
    reference = [cnn.run(**x) for x in inputs]
    assert concurrency.wrong_results(loaded, inputs, reference, THREADS) == 0


def test_the_pool_grows_to_the_calls_in_flight_only(cnn):
    """A caller that never overlaps its calls uses one arena; concurrent callers get
    their own (never more than the calls in flight)."""
    module = xweave.build(EXAMPLE)
    x = concurrency.call_inputs(module, 1)[0]
    for _ in range(5):
        module.run(**x)
    assert module._pool.idle == 1
    with ThreadPoolExecutor(THREADS) as pool:
        list(pool.map(lambda _: module.run(**x), range(THREADS * 20)))
    assert 1 <= module._pool.idle <= THREADS


def test_the_governor_caps_threads_by_the_free_cores(tmp_path):
    """Runnable tasks of the machine minus the caller's own team: the cores left. A
    single sample does not lower the cap (a passing task); two in a row do."""
    from xweave.runtime.threads import ThreadGovernor

    loadavg = tmp_path / "loadavg"
    loadavg.write_text("0.00 0.00 0.00 1/100 1\n")
    governor = ThreadGovernor(str(loadavg))
    governor._cores = governor._online = governor._cap = governor._last = 4

    def cap(running: int, team: int) -> int:
        loadavg.write_text(f"0.50 0.40 0.30 {running}/100 1\n")
        governor.next_check = 0.0
        return governor.cap(team)

    assert cap(1, 1) == 4    # the caller alone
    assert cap(4, 4) == 4    # the caller and its 3 workers
    assert cap(6, 4) == 4    # 2 other tasks, once: maybe passing
    assert cap(6, 4) == 2    # ... and again: 2 cores left
    assert cap(9, 2) == 2
    assert cap(9, 2) == 1    # busier than the machine: 1 thread, never 0
    assert cap(2, 1) == 3    # one other task left: back up at once
    governor.next_check = float("inf")
    loadavg.write_text("0.50 0.40 0.30 1/100 1\n")
    assert governor.cap(1) == 3  # between samples, the last cap


def test_run_lowers_the_thread_count_on_a_busy_machine_only(cnn, monkeypatch):
    from xweave.runtime import threads

    set_num_threads(cnn, 2)
    x = concurrency.call_inputs(cnn, 1)[0]
    expected = cnn.run(**x)
    monkeypatch.setattr(threads.GOVERNOR, "cap", lambda team: 1)
    monkeypatch.setattr(threads.GOVERNOR, "next_check", 0.0)
    out = cnn.run(**x)
    assert cnn._team is not None and cnn._team.value == 1
    assert threads.get_num_threads(cnn) == 2  # what was asked for stays
    assert all(np.array_equal(a, b) for a, b in zip(out, expected))
    monkeypatch.setattr(threads.GOVERNOR, "cap", lambda team: 8)
    cnn.run(**x)
    assert cnn._team.value == 2  # never more than asked for


def test_a_custom_kernel_with_temporaries_called_from_threads():
    """build_kernel's arena (packed operands) is per call too."""
    from xweave import te

    m = k_extent = n = 128
    A = te.placeholder((m, k_extent), "float32", name="A")
    B = te.placeholder((k_extent, n), "float32", name="B")
    k = te.reduce_axis(k_extent, name="k")
    C = te.compute((m, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="matmul")
    kernel = xweave.build_kernel("matmul", [A, B], [C], schedule="default")
    assert kernel.arena is not None  # the packed operands live in an arena
    rng = np.random.default_rng(2)
    pairs = [(rng.standard_normal((m, k_extent), dtype=np.float32),
              rng.standard_normal((k_extent, n), dtype=np.float32)) for _ in range(64)]
    reference = [kernel(a, b) for a, b in pairs]
    with ThreadPoolExecutor(THREADS) as pool:
        results = list(pool.map(lambda ab: kernel(*ab), pairs))
    assert all(np.array_equal(r, e) for r, e in zip(results, reference))
    np.testing.assert_allclose(reference[0], pairs[0][0] @ pairs[0][1], rtol=1e-4, atol=1e-3)
