"""Work on the kernels of a module in parallel, on the cores a build may use.

    results = map_kernels(kernels, work)     # work(kernel) -> value, kernel rewritten in place
    values = map_forked(len(units), lambda i: compile(units[i]))

Each item is worked on in a forked copy of this process (the module is there already:
nothing is sent but the item's index), and its value comes back pickled with the
worker's timing; `map_kernels` also sends the rewritten kernel back, to replace the
original in its module. Workers take items one at a time from a shared counter, in the
order given (largest first), so that the cores stay busy. The work must depend on
nothing but its item (and what every worker inherited), so that the result is the same
as the serial one: the tests compare the two byte for byte.

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


def workers(count: int, jobs: int | None = None) -> int:
    """How many forked workers `map_forked` would use for `count` items (1: none, the
    work is done in this process)."""
    jobs = min(compile_jobs() if jobs is None else jobs, count)
    daemon = multiprocessing.current_process().daemon  # (a daemon may have no children)
    return 1 if jobs <= 1 or not _can_fork() or daemon else jobs


def map_forked(count: int, work: Callable[[int], Value], jobs: int | None = None,
               order: Sequence[int] | None = None) -> list[Value]:
    """`[work(i) for i in range(count)]`, run in forked workers (`workers(count, jobs)`
    of them, taking the indices in `order`), each value pickled back; in this process
    when one worker is all there would be. An exception raised by `work` is raised here,
    as it was raised there."""
    jobs = workers(count, jobs)
    if jobs <= 1:
        return [work(i) for i in range(count)]
    order = list(range(count)) if order is None else list(order)
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
                process = context.Process(target=_worker, args=(order, work, counter, send),
                                          daemon=True)
                process.start()
                send.close()
                pipes.append(receive)
                processes.append(process)
    finally:
        gc.unfreeze()
    results: dict[int, Any] = {}
    try:
        _collect(count, pipes, processes, results)
    finally:
        for process in processes:
            if process.is_alive():
                process.kill()
            process.join()
        for pipe in pipes:
            pipe.close()
    return [results[i] for i in range(count)]


def map_kernels(kernels: Sequence[Operation], work: Callable[[Operation], Value],
                jobs: int | None = None, cost: Callable[[Operation], int] | None = None
                ) -> list[Value]:
    """`[work(k) for k in kernels]`, each kernel (a symbol of a module: a function)
    rewritten in place, or replaced by a symbol of the same name, in forked workers
    (`map_forked`); `cost` orders the work (largest first). The rewritten kernels come
    back pickled and take the place of the originals."""
    if workers(len(kernels), jobs) <= 1:
        return [work(kernel) for kernel in kernels]

    def remote(index: int) -> tuple[Operation, Value]:
        kernel = kernels[index]
        module, name = kernel.parent_op(), kernel.sym_name.data
        value = work(kernel)
        # (the work may have replaced the op: it is the module's symbol `name`)
        kernel = next(op for op in module.ops if getattr(op, "sym_name", None) is not None
                      and op.sym_name.data == name)
        kernel.detach()  # pickled alone, not with its module
        return kernel, value

    order = sorted(range(len(kernels)), key=lambda i: -cost(kernels[i])) if cost else None
    results = map_forked(len(kernels), remote, jobs, order)
    for original, (kernel, _) in zip(kernels, results):
        block = original.parent_block()
        assert block is not None
        block.insert_op_before(kernel, original)
        block.detach_op(original)
        original.erase(safe_erase=False)
    return [value for _, value in results]


def _collect(count: int, pipes: list, processes: list, results: dict[int, Any]) -> None:
    """Receive every value from the workers (and merge their timing)."""
    open_pipes = dict(zip(pipes, processes))
    while len(results) < count:
        if not open_pipes:
            missing = count - len(results)
            raise WorkerError(f"the compile workers ended with {missing} item(s) not done")
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
            value, seconds = pickle.loads(payload)
            timing.merge(seconds)
            results[index] = value


def _worker(order: list[int], work: Callable, counter, send) -> None:
    """A forked worker: take indices by the shared counter, send each value back."""
    try:
        while True:
            with counter.get_lock():
                taken = counter.value
                counter.value += 1
            if taken >= len(order):
                break
            index = order[taken]
            try:
                with timing.collect(fresh=True) as timer:
                    value = work(index)
                send.send(("done", index, _deep_dumps((value, timer.root))))
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
