"""Kernels compiled in worker processes (`xweave.parallel`): the same output as a serial
build, and a failure in a worker reported as it is in this process."""

import os
import threading

import pytest
from helpers import load_bench

import xweave
import xweave.schedules as schedules
from xweave.errors import InternalCompilerError
from xweave.parallel import JOBS_ENV, compile_jobs, map_forked, workers

models = load_bench("models")
SMALL_RESNET = dict(image=32, width=8, classes=10, blocks=(1, 1))


@pytest.fixture(scope="module")
def model():
    return models.build("resnet18", **SMALL_RESNET)


def _build(model, jobs: int, monkeypatch):
    monkeypatch.setenv(JOBS_ENV, str(jobs))
    return xweave.build(model, cache=False)


def test_a_parallel_build_is_the_serial_one_byte_for_byte(model, monkeypatch):
    serial = _build(model, 1, monkeypatch)
    parallel = _build(model, 2, monkeypatch)
    kernels = [line for line in serial.llvm_ir.splitlines() if line.startswith("define")]
    assert len(kernels) >= schedules.PARALLEL_MIN_KERNELS  # (the parallel path ran)
    assert parallel.llvm_ir == serial.llvm_ir
    assert parallel.object_bytes == serial.object_bytes


def test_an_error_in_a_worker_is_raised_here(model, monkeypatch):
    apply_steps = schedules.apply_steps

    def failing(module, steps, *, skip_illegal, kernel=""):
        if kernel.startswith("dense"):
            raise ValueError(f"bad step in {kernel}")
        return apply_steps(module, steps, skip_illegal=skip_illegal, kernel=kernel)

    monkeypatch.setattr(schedules, "apply_steps", failing)  # (inherited by the workers)
    with pytest.raises(InternalCompilerError, match=r"pass 'schedule-kernels'.*"
                                                    r"ValueError: bad step in dense_0"):
        _build(model, 2, monkeypatch)


def test_a_worker_that_dies_is_an_internal_error(model, monkeypatch):
    test_process = os.getpid()

    def dying(module, steps, *, skip_illegal, kernel=""):
        assert os.getpid() != test_process, "the kernels were scheduled in this process"
        os._exit(7)

    monkeypatch.setattr(schedules, "apply_steps", dying)
    with pytest.raises(InternalCompilerError, match="a compile worker ended with exit code 7"):
        _build(model, 2, monkeypatch)


def test_other_threads_do_not_stop_the_workers():
    stop = threading.Event()
    other = threading.Thread(target=stop.wait, daemon=True)  # (as a client library's)
    other.start()
    try:
        assert workers(8, jobs=2) == 2
        assert map_forked(3, lambda i: (i, os.getpid()), jobs=2)[2][0] == 2
        assert {pid for _, pid in map_forked(4, lambda i: (i, os.getpid()), jobs=2)} \
            .isdisjoint({os.getpid()})
    finally:
        stop.set()


def test_compile_jobs(monkeypatch):
    monkeypatch.setenv(JOBS_ENV, "3")
    assert compile_jobs() == 3
    monkeypatch.delenv(JOBS_ENV)
    assert compile_jobs() == len(os.sched_getaffinity(0))
    monkeypatch.setenv(JOBS_ENV, "none")
    with pytest.raises(Exception, match="expected a number of processes"):
        compile_jobs()


@pytest.mark.parametrize("jobs", [1, 2])
def test_the_llvm_stage_lowered_unit_by_unit_is_the_stage_run_whole(model, monkeypatch, jobs):
    """convert-loop-to-llvm runs in the workers that compile each unit
    (`pipeline.compile_loop_stage`): the same LLVM IR and object as the stage run on
    the whole module, here."""
    from xweave import timing
    import xweave.pipeline as pipeline

    monkeypatch.setenv(JOBS_ENV, str(jobs))
    with timing.collect() as timer:
        units = xweave.build(model, cache=False)
    lowered = timer.root.children["llvm"].children["convert-loop-to-llvm"]
    assert lowered.count == timer.root.children["codegen"].children[
        "translate to LLVM IR"].count > 3  # (once per unit: the units' path ran)
    monkeypatch.setattr(pipeline, "compile_loop_stage", lambda *args, **kwargs: None)
    with timing.collect() as timer:
        whole = xweave.build(model, cache=False)
    assert timer.root.children["llvm"].children["convert-loop-to-llvm"].count == 1
    assert units.llvm_ir == whole.llvm_ir
    assert units.object_bytes == whole.object_bytes


def test_a_unit_that_fails_to_lower_is_reported_by_the_stage(model, monkeypatch):
    from xweave.lowering import loop_to_llvm
    from xweave.lowering.llvm_builder import LoweringError

    def failing(self, op):
        raise LoweringError(f"cannot lower @{op.sym_name.data} by itself")

    monkeypatch.setenv(JOBS_ENV, "2")
    expected = xweave.build(model, cache=False)
    monkeypatch.setattr(loop_to_llvm._ModuleLowering, "lower_alone", failing)
    # (the stage, run as a stage, lowers the module as a whole: here it succeeds)
    assert xweave.build(model, cache=False).object_bytes == expected.object_bytes


def test_two_phases_run_each_second_where_its_first_ran():
    from xweave.parallel import TwoPhases

    made: dict[int, int] = {}

    def first(i):
        made[i] = os.getpid()
        return i * i

    def second(i, shared):
        return made.pop(i) == os.getpid(), shared + i

    for jobs in (1, 2):
        with TwoPhases(6, first, second, jobs=jobs, order=[5, 4, 3, 2, 1, 0]) as phases:
            assert phases.first() == [0, 1, 4, 9, 16, 25]
            assert phases.second(100) == [(True, 100 + i) for i in range(6)]
    with TwoPhases(4, lambda i: 1 // (i - 2), second, jobs=2) as phases:
        with pytest.raises(ZeroDivisionError):
            phases.first()
    with TwoPhases(4, first, second, jobs=2) as phases:
        phases.first()  # (no second phase: the workers end)
