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
is, the work is done here, one after the other. Other Python threads may run while the
workers fork: LLVM's lock is held across the fork, so that none of them is inside LLVM
then (the workers translate and optimize LLVM modules).
"""

from __future__ import annotations

import contextlib
import gc
import multiprocessing
import multiprocessing.connection
import os
import pickle
import sys
import threading
import traceback
import warnings
from collections.abc import Callable, Iterator, Sequence
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
    work is done in this process: also in a daemon process, which may have no
    children)."""
    jobs = min(compile_jobs() if jobs is None else jobs, count)
    daemon = multiprocessing.current_process().daemon
    return jobs if jobs > 1 and not daemon and _can_fork() else 1


@contextlib.contextmanager
def _llvm_held() -> Iterator[None]:
    """Hold llvmlite's lock (every call into LLVM takes it): a worker forked meanwhile
    cannot inherit LLVM halfway through a call made by another thread."""
    from llvmlite.binding import ffi  # (only a build that forks needs LLVM loaded here)

    lock = getattr(ffi.lib, "_lock", None)
    with lock if lock is not None else contextlib.nullcontext():
        yield


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
        with warnings.catch_warnings(), _llvm_held():
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


class TwoPhases:
    """`[first(i) for i in range(count)]`, then, given a value computed from those
    (`shared`), `[second(i, shared) for i in range(count)]`, in forked workers: each
    worker runs `second` for the items it ran `first` for, in the same process, so
    that what `first` made there (kept by the work functions) is there for `second`.

        with TwoPhases(len(units), lower, compile) as phases:
            reports = phases.first()        # every first(i), pickled back
            objects = phases.second(merge(reports))   # `shared` sent to every worker

    The workers fork when it is entered; in this process when one worker is all there
    would be (`workers`). Leaving it without `second` (an error, a change of plan)
    ends the workers."""

    def __init__(self, count: int, first: Callable[[int], Value],
                 second: Callable[[int, Any], Any], jobs: int | None = None,
                 order: Sequence[int] | None = None):
        self.count = count
        self._first, self._second = first, second
        self._jobs = workers(count, jobs)
        self._order = list(range(count)) if order is None else list(order)
        self._pipes: list = []
        self._commands: list = []
        self._processes: list = []

    def __enter__(self) -> TwoPhases:
        if self._jobs <= 1:
            return self
        context = multiprocessing.get_context("fork")
        counter = context.Value("i", 0)
        gc.freeze()
        try:
            with warnings.catch_warnings(), _llvm_held():
                warnings.filterwarnings("ignore", message=".*fork", category=DeprecationWarning)
                for _ in range(self._jobs):
                    receive, send = context.Pipe(duplex=False)
                    command_in, command_out = context.Pipe(duplex=False)
                    process = context.Process(
                        target=_two_phase_worker, daemon=True,
                        args=(self._order, self._first, self._second, counter, send,
                              command_in))
                    process.start()
                    send.close()
                    command_in.close()
                    self._pipes.append(receive)
                    self._commands.append(command_out)
                    self._processes.append(process)
        finally:
            gc.unfreeze()
        return self

    def first(self) -> list[Value]:
        if self._jobs <= 1:
            return [self._first(i) for i in range(self.count)]
        results: dict[int, Any] = {}
        _collect(self.count, self._pipes, self._processes, results)
        return [results[i] for i in range(self.count)]

    def second(self, shared: Any) -> list[Any]:
        if self._jobs <= 1:
            return [self._second(i, shared) for i in range(self.count)]
        payload = _deep_dumps(shared)
        for command in self._commands:
            command.send_bytes(payload)
        results: dict[int, Any] = {}
        _collect(self.count, self._pipes, self._processes, results)
        return [results[i] for i in range(self.count)]

    def __exit__(self, *exc_info) -> None:
        for command in self._commands:
            command.close()  # (a worker still waiting for `shared` ends)
        for process in self._processes:
            if process.is_alive():  # (done with its items, or they are not needed)
                process.kill()
            process.join()
        for pipe in self._pipes:
            pipe.close()


def _two_phase_worker(order: list[int], first: Callable, second: Callable, counter, send,
                      commands) -> None:
    """A forked worker of `TwoPhases`: `first` for items taken by the shared counter,
    then, once `shared` arrives, `second` for the same items."""
    try:
        mine = []
        for index in _taken(order, counter):
            if not _run_and_send(send, index, first, index):
                return
            mine.append(index)
        try:
            shared = pickle.loads(commands.recv_bytes())
        except EOFError:  # the parent needs no second phase
            return
        for index in mine:
            if not _run_and_send(send, index, second, index, shared):
                return
    finally:
        send.close()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)


def _run_and_send(send, index: int, work: Callable, *args) -> bool:
    try:
        with timing.collect(fresh=True) as timer:
            value = work(*args)
        send.send(("done", index, _deep_dumps((value, timer.root))))
        return True
    except BaseException as e:  # noqa: BLE001 - reported to the parent
        send.send(("error", index, _picklable(e)))
        return False


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


def _taken(order: list[int], counter) -> Iterator[int]:
    """The items of `order` this worker takes, one at a time, by the shared counter."""
    while True:
        with counter.get_lock():
            taken = counter.value
            counter.value += 1
        if taken >= len(order):
            return
        yield order[taken]


def _worker(order: list[int], work: Callable, counter, send) -> None:
    """A forked worker: take indices by the shared counter, send each value back."""
    try:
        for index in _taken(order, counter):
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
