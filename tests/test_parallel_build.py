"""Kernels compiled in worker processes (`xweave.parallel`): the same output as a serial
build, and a failure in a worker reported as it is in this process."""

import os

import pytest
from helpers import load_bench

import xweave
import xweave.schedules as schedules
from xweave.errors import InternalCompilerError
from xweave.parallel import JOBS_ENV, compile_jobs

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
    def dying(module, steps, *, skip_illegal, kernel=""):
        os._exit(7)

    monkeypatch.setattr(schedules, "apply_steps", dying)
    with pytest.raises(InternalCompilerError, match="a compile worker ended with exit code 7"):
        _build(model, 2, monkeypatch)


def test_compile_jobs(monkeypatch):
    monkeypatch.setenv(JOBS_ENV, "3")
    assert compile_jobs() == 3
    monkeypatch.delenv(JOBS_ENV)
    assert compile_jobs() == len(os.sched_getaffinity(0))
    monkeypatch.setenv(JOBS_ENV, "none")
    with pytest.raises(Exception, match="expected a number of processes"):
        compile_jobs()
