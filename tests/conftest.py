"""Pin the target every test compiles for, whatever this host is: a Zen 3 (AVX2, 16
vector registers, 8-lane vectors), the machine the schedules' expectations were written
for. Code compiled for it runs on any x86-64 host with AVX2 and FMA. Tests of other
machine models name their target themselves. Every build verifies the IR after every
pass (`XWEAVE_VERIFY_EACH=1`), not only after every stage as builds do by default.

Every test gets a compile cache of its own, empty (`XWEAVE_CACHE_DIR`), and fixtures
broader than a test one of the session's: no test writes the user's cache or loads an
entry another test (or an older build) left behind.

The tests run in parallel (pytest-xdist, pyproject's `addopts`): one worker per core
this process may use (not per physical core, as `-n auto` counts by default: a 2-vCPU CI
machine may be one core with two threads), each with its own temporary directories and
its share of the cores for the compile processes a build forks. Tests marked `early` are
started first.

Builders shared by several test files live in tests/helpers.py (on `sys.path` through
pyproject's pytest `pythonpath`)."""

import os

import pytest

os.environ["XWEAVE_TARGET"] = "llvm -mcpu=znver3"
os.environ.setdefault("XWEAVE_VERIFY_EACH", "1")  # every build verifies the IR after every pass
if int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")) > 1:
    # The workers share the cores: a build forks its share of compile processes
    # (`xweave.parallel`), not one per core in every worker (tests/test_parallel_build.py
    # names its own counts).
    _share = len(os.sched_getaffinity(0)) // int(os.environ["PYTEST_XDIST_WORKER_COUNT"])
    os.environ.setdefault("XWEAVE_COMPILE_JOBS", str(max(1, _share)))


@pytest.fixture(autouse=True, scope="session")
def _session_compile_cache(tmp_path_factory):
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("XWEAVE_CACHE_DIR", str(tmp_path_factory.mktemp("compile-cache")))
        patch.delenv("XWEAVE_CACHE", raising=False)
        yield


@pytest.fixture(autouse=True)
def _own_compile_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("XWEAVE_CACHE_DIR", str(tmp_path_factory.mktemp("compile-cache")))


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_auto_num_workers(config):
    """`-n auto`: one worker per core this process may run on ($PYTEST_XDIST_AUTO_NUM_WORKERS
    overrides; pyproject's `--maxprocesses` caps)."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None  # xdist's own hook reads it
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None


def pytest_collection_modifyitems(items):
    """Tests marked `early` first (in their order), then the rest in theirs."""
    items.sort(key=lambda item: item.get_closest_marker("early") is None)
