"""Tuning through a real Dask cluster on loopback: a scheduler in this process and two
worker processes advertising distinct targets; one is killed during a tuning run."""

import os
import signal
import subprocess
import threading
import time

import pytest

distributed = pytest.importorskip("distributed")
psutil = pytest.importorskip("psutil")  # installed with distributed

from xweave.autotune import (  # noqa: E402
    MeasureErrorNo,
    load_records,
    make_task,
    tune,
)
from xweave.autotune.cluster import (  # noqa: E402
    ClusterBuilder,
    ClusterError,
    ClusterRunner,
    default_target_label,
    main,
    start_scheduler,
    start_worker,
    target_resource,
)
from xweave.autotune.matmul_task import naive_point  # noqa: E402
from xweave.records import target_info as local_target  # noqa: E402
from xweave.autotune.synthetic import BEHAVIORS  # noqa: E402

A, B = "xw-test-a", "xw-test-b"
OPTIONS = dict(min_repeat_ms=2, repeat=3, timeout=30)  # one runner process per worker
BUILD_TIMEOUT = 30


def _workers(client, resource=None):
    info = client.scheduler_info(n_workers=-1)["workers"]
    return {a: w for a, w in info.items()
            if resource is None or w.get("resources", {}).get(resource)}


def _wait(predicate, timeout, what):
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out waiting for {what}")
        time.sleep(0.1)


def _stop(proc):
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)


@pytest.fixture(scope="module")
def cluster():
    scheduler = start_scheduler()
    address = scheduler.scheduler_address
    procs = {A: start_worker(address, A, name="wa"), B: start_worker(address, B, name="wb")}
    client = distributed.Client(address, set_as_default=False)
    try:
        _wait(lambda: len(_workers(client)) == 2, 90, "two workers")
        yield address, client, procs
    finally:
        client.close()
        for p in procs.values():
            _stop(p)
        scheduler.close()


def test_target_labels():
    label = default_target_label()
    assert label.startswith("llvm-") and len(label) > len("llvm-")
    assert target_resource(label) == f"target:{label}"
    assert target_resource("target:vta-sim") == "target:vta-sim"
    with pytest.raises(ClusterError, match="bad target label"):
        target_resource("a=1")


def test_label_command(capsys):
    assert main(["label"]) == 0
    assert capsys.readouterr().out.strip() == default_target_label()


EXPECTED = {
    "ok": MeasureErrorNo.NO_ERROR,
    "segfault": MeasureErrorNo.RUNTIME_DEVICE,
    "wrong": MeasureErrorNo.WRONG_ANSWER,
    "raise": MeasureErrorNo.RUNTIME_DEVICE,
    "build_error": MeasureErrorNo.COMPILE_HOST,
    "invalid": MeasureErrorNo.INSTANTIATION_ERROR,
    "build_crash": MeasureErrorNo.COMPILE_HOST,
}


def test_faulty_candidates_keep_their_error_codes_and_workers_survive(cluster):
    address, client, _ = cluster
    task = make_task("synthetic_faulty")
    pids = client.run(os.getpid)
    points = [task.point(b) for b in EXPECTED]
    with ClusterBuilder(address, timeout=BUILD_TIMEOUT) as builder, \
            ClusterRunner(address, target=A, **OPTIONS) as runner:
        assert builder.n_parallel == 2 and runner.n_workers == 1
        builds = builder.build(task, points)
        results = runner.run(task, builds)
    got = {BEHAVIORS[r.point[0]]: r.error_no for r in results}
    assert got == {b: int(c) for b, c in EXPECTED.items()}, [r.error_msg for r in results]
    assert "SIGSEGV" in results[1].error_msg
    # measured only where target A is advertised; the crashes stayed in their processes
    (a_worker,) = _workers(client, target_resource(A))
    measured = {r.worker for r in results if hasattr(r, "worker")}
    assert measured == {a_worker}
    assert {b.worker for b in builds if hasattr(b, "worker")} <= set(pids)
    assert client.run(os.getpid) == pids


def test_unknown_target_and_unreachable_scheduler_are_clear_errors(cluster):
    address, _, _ = cluster
    with pytest.raises(ClusterError, match=rf"advertises target:nowhere.*target:{A}"):
        ClusterRunner(address, target="nowhere", wait_for_workers=0.5)
    with pytest.raises(ClusterError, match="cannot reach the Dask scheduler"):
        ClusterBuilder("tcp://127.0.0.1:9", connect_timeout=1)


def test_real_candidates_are_built_anywhere_and_timed_on_their_target(cluster):
    """JIT-compiled matmul schedules: built on the workers, checked against the
    reference and timed on the worker of target A, which reports its own target.
    (Their speeds are not compared with a local run: on a loaded 2-core machine
    timings of microseconds are noise; the simulated run below compares exactly.)"""
    address, client, _ = cluster
    task = make_task("matmul_ir", M=32, N=32, K=32)
    points = [naive_point(task), task.space.point_of({
        "tile_i": (4, 8), "tile_j": (4, 8), "tile_k": (32, 1),
        "order": ("ko", "jo", "io", "ii", "ki", "ji"), "vec": 8, "unroll": True})]
    with ClusterBuilder(address, timeout=BUILD_TIMEOUT) as builder, \
            ClusterRunner(address, target=A, **OPTIONS) as runner:
        builds = builder.build(task, points)
        results = runner.run(task, builds)
        assert runner.target_info == local_target()
    assert all(r.ok and r.gflops > 0 and r.number >= 1 for r in results), \
        [r.error_msg for r in results]
    assert all(b.features is not None for b in builds)  # features travel with the build
    (a_worker,) = _workers(client, target_resource(A))
    assert {r.worker for r in results} == {a_worker}
    assert all(r.target == local_target() for r in results)


def _points(records):
    return [tuple(r["point"]) for r in records]


def test_tune_through_the_cluster_survives_a_killed_worker(cluster, tmp_path):
    """The same tuner and seed locally and on the cluster measure the same points and
    write records with the same keys and values (the task's costs are simulated, each
    measurement lasting 0.25 s); the worker of target A is killed mid-measurement,
    restarted by its nanny, and the candidate it held is measured again there."""
    address, client, procs = cluster
    task = make_task("synthetic_matmul", M=32, N=32, K=32)
    trials = 16
    local_path, cluster_path = tmp_path / "local.jsonl", tmp_path / "cluster.jsonl"
    tune(task, tuner="random", trials=trials, seed=3, batch_size=2, progress=False,
         records_path=local_path)

    resource = target_resource(A)
    (old_address,) = _workers(client, resource)
    old_pid = client.run(os.getpid, workers=[old_address])[old_address]
    assert old_pid in [p.pid for p in psutil.Process(procs[A].pid).children()]
    written = []
    killed = threading.Event()

    def kill_mid_measurement():
        _wait(lambda: len(written) >= 4, 120, "four records")
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            keys = client.processing(workers=[old_address]).get(old_address, [])
            if any(str(k).startswith("xweave-measure") for k in keys):
                time.sleep(0.05)  # into the measurement
                os.kill(old_pid, signal.SIGKILL)  # the worker process under our nanny
                killed.set()
                return
            time.sleep(0.02)

    killer = threading.Thread(target=kill_mid_measurement, daemon=True)
    killer.start()
    with ClusterBuilder(address) as builder, \
            ClusterRunner(address, target=A, grace=60, simulated_delay=0.25) as runner:
        result = tune(task, tuner="random", trials=trials, seed=3, batch_size=2,
                      progress=False, records_path=cluster_path, builder=builder,
                      runner=runner, callbacks=[lambda res, rec: written.append(rec)])
        again = tune(task, tuner="random", trials=trials, seed=3, batch_size=2,
                     progress=False, records_path=cluster_path, builder=builder,
                     runner=runner)
    assert again.trials == 0 and again.resumed == trials  # resumes on the workers' target
    killer.join(timeout=5)
    assert killed.is_set(), "no measurement was seen on the worker to kill"

    local, remote = load_records(local_path), load_records(cluster_path)
    assert len(remote) == trials and result.trials == trials
    assert _points(remote) == _points(local)
    assert [set(r) for r in remote] == [set(r) for r in local]
    assert [set(r["result"]) for r in remote] == [set(r["result"]) for r in local]
    assert [r["target"] for r in remote] == [r["target"] for r in local]
    # the candidate in flight was retried once on the restarted worker, or recorded
    errors = [r["result"] for r in remote if r["result"]["error_no"]]
    assert len(errors) <= 1 and all(e["error_no"] in (MeasureErrorNo.RUNTIME_DEVICE,
                                                      MeasureErrorNo.RUN_TIMEOUT)
                                    for e in errors), errors
    same = [(lr["result"]["gflops"], rr["result"]["gflops"]) for lr, rr in zip(local, remote)
            if rr["result"]["error_no"] == 0]
    assert len(same) >= trials - 1 and all(x == y > 0 for x, y in same)
    (new_address,) = _workers(client, resource)
    assert new_address != old_address
    assert client.run(os.getpid, workers=[new_address])[new_address] != old_pid
    where = {m.worker for m in result.results if hasattr(m, "worker")}
    assert where == {old_address, new_address}  # never on the worker of target B


def test_lost_workers_and_a_lost_scheduler():
    """A worker without a nanny dies, leaving no worker for its target: after `grace`
    seconds the candidates waiting for it are recorded as RUN_TIMEOUT. Then the
    scheduler goes away during a run: a `ClusterError`, not a hang."""
    scheduler = start_scheduler()
    address = scheduler.scheduler_address
    resource = target_resource("xw-test-c")
    proc = start_worker(address, "xw-test-c", name="wc", nanny=False)
    client = distributed.Client(address, set_as_default=False)
    try:
        _wait(lambda: _workers(client, resource), 90, "worker wc")
        task = make_task("synthetic_smooth")
        with ClusterBuilder(address) as builder, \
                ClusterRunner(address, target="xw-test-c", grace=1.0) as runner:
            builds = builder.build(task, [task.best_point()])
            assert builds[0].error_no == 0
            proc.kill()
            proc.wait(timeout=10)
            _wait(lambda: not _workers(client, resource), 30, "worker wc to leave")
            start = time.monotonic()
            (res,) = runner.run(task, builds)
            assert res.error_no == MeasureErrorNo.RUN_TIMEOUT
            assert "no worker advertising target:xw-test-c" in res.error_msg
            assert time.monotonic() - start < 15
            runner.grace = 600
            client.close()
            threading.Timer(1.0, scheduler.close).start()
            start = time.monotonic()
            with pytest.raises(ClusterError, match="lost the connection to the scheduler"):
                runner.run(task, builds)
            assert time.monotonic() - start < 30
    finally:
        client.close()
        _stop(proc)
        scheduler.close()


def test_xweave_tune_cli_through_the_cluster(cluster, tmp_path):
    """`xweave tune --runner cluster` writes the same records as a local run would."""
    import sys

    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    address, _, _ = cluster
    weight = np.random.default_rng(0).standard_normal((8, 4, 3, 3)).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("Conv", ["x", "w"], ["y"], kernel_shape=[3, 3], pads=[1, 1, 1, 1])],
        "m", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 8, 8])],
        initializer=[numpy_helper.from_array(weight, "w")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    path = tmp_path / "conv.onnx"
    onnx.save(model, path)
    out = tmp_path / "records.jsonl"
    xweave_bin = os.path.join(os.path.dirname(sys.executable), "xweave")
    r = subprocess.run([xweave_bin, "tune", str(path), "--trials", "3", "--tuner", "random",
                        "--runner", "cluster", "--address", address, "--target-label", A,
                        "-o", str(out)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    records = load_records(out)
    assert records and all(rec["result"]["error_no"] == 0 for rec in records)
    assert {"workload", "schedule", "result", "target"} <= set(records[0])
    bad = subprocess.run([xweave_bin, "tune", str(path), "--trials", "1", "--runner", "cluster",
                          "-o", str(tmp_path / "x.jsonl")], capture_output=True, text=True,
                         timeout=120)
    assert bad.returncode != 0 and "--address" in bad.stderr and "Traceback" not in bad.stderr
