"""Work on the kernels of a module in parallel, on the cores a build may use.

    results = map_kernels(kernels, work)     # work(kernel) -> value, kernel rewritten in place

Each kernel is rewritten by `work` in a forked copy of this process (the module is
there already: nothing is sent but the kernel's index), and comes back pickled with
`work`'s value and the worker's timing, replacing the original in its module. Workers
take kernels one at a time from a shared counter, largest first, so that the cores stay
busy. `work` must depend on nothing but its kernel (and what every worker inherited), so
that the result is the same as the serial one: the tests compare the two byte for byte.

Forking needs no start-up and shares the compiler's memory copy-on-write; where a
platform cannot fork, or one core (`XWEAVE_COMPILE_JOBS=1`) or one kernel is all there
is, the kernels are rewritten here, one after the other.
"""

from __future__ import annotations

import gc
import multiprocessing
import multiprocessing.connection
import os
import pickle
import sys
import threading
import traceback
import warnings
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from xdsl.ir import Operation

from xweave import timing
from xweave.errors import XweaveError

JOBS_ENV = "XWEAVE_COMPILE_JOBS"
"""Environment variable: how many processes compile kernels (default: every core this
process may run on; 1: none, everything in this process)."""

Value = TypeVar("Value")


class WorkerError(RuntimeError):
    """A compile worker ended without a result (killed, out of memory, a crash): an
    internal error, reported with the stage and pass that ran it."""


def compile_jobs() -> int:
    """How many processes may compile kernels at once (`JOBS_ENV`, else the cores)."""
    given = os.environ.get(JOBS_ENV)
    if given:
        try:
            jobs = int(given)
        except ValueError:
            raise XweaveError(f"${JOBS_ENV}={given!r}: expected a number of processes") from None
        if jobs < 1:
            raise XweaveError(f"${JOBS_ENV}={given}: expected at least 1")
        return jobs
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def _can_fork() -> bool:
    return "fork" in multiprocessing.get_all_start_methods()


def map_kernels(kernels: Sequence[Operation], work: Callable[[Operation], Value],
                jobs: int | None = None, cost: Callable[[Operation], int] | None = None
                ) -> list[Value]:
    """`[work(k) for k in kernels]`, each kernel (a symbol of a module: a function)
    rewritten in place, or replaced by a symbol of the same name, on up to `jobs`
    processes (default `compile_jobs()`); `cost` orders the work (largest first).
    An exception raised by `work` is raised here, as it was raised there."""
    jobs = min(compile_jobs() if jobs is None else jobs, len(kernels))
    daemon = multiprocessing.current_process().daemon  # (a daemon may have no children)
    if jobs <= 1 or not _can_fork() or daemon:
        return [work(kernel) for kernel in kernels]
    order = sorted(range(len(kernels)), key=lambda i: -cost(kernels[i])) if cost \
        else list(range(len(kernels)))
    context = multiprocessing.get_context("fork")
    counter = context.Value("i", 0)
    pipes, processes = [], []
    gc.freeze()  # the children's collector leaves the inherited objects (and pages) alone
    try:
        with warnings.catch_warnings():
            # A parent with threads (libgomp's, after running a model) is warned about
            # on 3.12+: the workers run Python only, never the code those threads run.
            warnings.filterwarnings("ignore", message=".*fork", category=DeprecationWarning)
            for _ in range(jobs):
                receive, send = context.Pipe(duplex=False)
                process = context.Process(target=_worker, args=(kernels, order, work, counter,
                                                                send), daemon=True)
                process.start()
                send.close()
                pipes.append(receive)
                processes.append(process)
    finally:
        gc.unfreeze()
    results: dict[int, Value] = {}
    try:
        _collect(kernels, pipes, processes, results)
    finally:
        for process in processes:
            if process.is_alive():
                process.kill()
            process.join()
        for pipe in pipes:
            pipe.close()
    return [results[i] for i in range(len(kernels))]


def _collect(kernels: Sequence[Operation], pipes: list, processes: list,
             results: dict[int, Any]) -> None:
    """Receive every kernel from the workers and put it in place of the original."""
    open_pipes = dict(zip(pipes, processes))
    while len(results) < len(kernels):
        if not open_pipes:
            missing = len(kernels) - len(results)
            raise WorkerError(f"the compile workers ended with {missing} kernel(s) not done")
        for pipe in multiprocessing.connection.wait(list(open_pipes)):
            try:
                message = pipe.recv()
            except EOFError:
                process = open_pipes.pop(pipe)
                process.join()
                if process.exitcode:
                    raise WorkerError(f"a compile worker ended with exit code "
                                      f"{process.exitcode} (out of memory?)") from None
                continue
            kind, index, payload = message
            if kind == "error":
                raise _error_from(payload)
            kernel, value, seconds = pickle.loads(payload)
            original = kernels[index]
            block = original.parent_block()
            assert block is not None
            block.insert_op_before(kernel, original)
            block.detach_op(original)
            original.erase(safe_erase=False)
            timing.merge(seconds)
            results[index] = value


def _worker(kernels: Sequence[Operation], order: list[int], work: Callable,
            counter, send) -> None:
    """A forked worker: take kernels by the shared counter, rewrite, send each back."""
    try:
        while True:
            with counter.get_lock():
                taken = counter.value
                counter.value += 1
            if taken >= len(order):
                break
            index = order[taken]
            kernel = kernels[index]
            module, name = kernel.parent_op(), kernel.sym_name.data
            try:
                with timing.collect(fresh=True) as timer:
                    value = work(kernel)
                # (the work may have replaced the op: it is the module's symbol `name`)
                kernel = next(op for op in module.ops if getattr(op, "sym_name", None)
                              is not None and op.sym_name.data == name)
                kernel.detach()  # pickled alone, not with its module
                send.send(("done", index, _deep_dumps((kernel, value, timer.root))))
            except BaseException as e:  # noqa: BLE001 - reported to the parent
                send.send(("error", index, _picklable(e)))
                break
    finally:
        send.close()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)  # no atexit handlers, no flushing of the parent's inherited buffers


def _deep_dumps(obj: object) -> bytes:
    """`pickle.dumps(obj)` for IR: the pickler recurses along the chains of ops and
    uses (one level per op of a long block), so it runs on a thread with a large stack
    and a recursion limit to match (unpickling does not recurse)."""
    result: list[bytes] = []
    errors: list[BaseException] = []

    def dump() -> None:
        try:
            result.append(pickle.dumps(obj, pickle.HIGHEST_PROTOCOL))
        except BaseException as e:  # noqa: BLE001 - raised below, in the calling thread
            errors.append(e)

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 1_000_000))
    threading.stack_size(1 << 30)  # virtual: only the pages the recursion touches are used
    thread = threading.Thread(target=dump)
    thread.start()
    thread.join()
    if errors:
        raise errors[0]
    return result[0]


def _picklable(error: BaseException) -> bytes:
    """`error`, pickled, or if it cannot be, its type, message and traceback as text."""
    try:
        data = pickle.dumps(error)
        pickle.loads(data)
        return data
    except Exception:  # noqa: BLE001
        text = "".join(traceback.format_exception(error))
        return pickle.dumps(RuntimeError(f"{type(error).__name__}: {error}\n{text}"))


def _error_from(payload: bytes) -> BaseException:
    return pickle.loads(payload)
