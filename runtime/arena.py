"""The memory of a call's arena (`plan-memory`), on huge pages, and the pool of them.

A big matmul packs both operands into the arena (two 16 MB panels at 2048³): on 4 KB
pages they take 8,000 TLB entries, more than Zen 3's L2 TLB holds (2,048), and every
new page of a panel walks the page tables. On 2 MB transparent huge pages they take 16.
Linux gives an anonymous mapping huge pages when the system's policy is `always`, or
`madvise` and the range was `madvise(MADV_HUGEPAGE)`d, and only for the 2 MB-aligned
parts of the range. So `allocate_arena` maps arenas of at least one huge page
privately (a shared mapping would be shmem, with its own, usually `never`, policy),
2 MB-aligned, and advises huge pages; on systems without THP (policy `never`, no
`MADV_HUGEPAGE`, not Linux) it is a plain page-aligned mapping.

numpy advises huge pages for its own big arrays (the user's inputs and outputs) the
same way, but does not align them; the arena is ours to place.
"""

from __future__ import annotations

import functools
import mmap
import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from xweave.errors import XweaveError

HUGE_PAGE_BYTES = 2 * 1024 * 1024
"""The x86-64 PMD huge page (`/sys/kernel/mm/transparent_hugepage/hpage_pmd_size`)."""

_THP_ENABLED = Path("/sys/kernel/mm/transparent_hugepage/enabled")


@functools.cache
def huge_page_policy() -> str:
    """The system's transparent huge page policy: `always`, `madvise` or `never`
    (`never` also where the kernel has no THP or this is not Linux)."""
    try:
        text = _THP_ENABLED.read_text()
    except OSError:
        return "never"
    chosen = re.search(r"\[(\w+)\]", text)
    return chosen.group(1) if chosen else "never"


def huge_pages_possible() -> bool:
    """Whether `allocate_arena` can get huge pages on this system."""
    return huge_page_policy() in ("always", "madvise") and hasattr(mmap, "MADV_HUGEPAGE")


class ArenaError(XweaveError):
    """A call's memory (its arena) does not fit in this machine's memory."""


_MEMINFO = Path("/proc/meminfo")


def available_memory() -> tuple[int, int] | None:
    """(bytes a process can still get: MemAvailable + SwapFree, MemTotal) from
    /proc/meminfo; None where that file does not exist."""
    try:
        fields = dict(line.split(":", 1) for line in _MEMINFO.read_text().splitlines()
                      if ":" in line)
        kib = {k: int(v.split()[0]) for k, v in fields.items()
               if k in ("MemAvailable", "SwapFree", "MemTotal")}
        return (kib["MemAvailable"] + kib.get("SwapFree", 0)) * 1024, kib["MemTotal"] * 1024
    except (OSError, ValueError, KeyError, IndexError):
        return None


def _gib(n: int) -> str:
    return f"{n / 2**30:.1f} GiB"


def check_fits(nbytes: int) -> None:
    """An `ArenaError` (one line: needed and available) if `nbytes` cannot fit in the
    memory this machine has free: every byte of an arena is written during a call, and
    Linux would rather kill the process then than refuse the mapping now."""
    memory = available_memory()
    if memory is not None and nbytes > memory[0]:
        raise ArenaError(
            f"the model's intermediate buffers need an arena of {_gib(nbytes)} ({nbytes} bytes) "
            f"per call, more than this machine has available ({_gib(memory[0])} free of "
            f"{_gib(memory[1])})"
        )


def allocate_arena(nbytes: int) -> np.ndarray:
    """An uninitialized (zero-filled) byte array of `nbytes` for an arena, page-aligned,
    and 2 MB-aligned on advised huge pages when it spans at least one huge page and
    the system allows them. The array keeps its mapping alive. An `ArenaError` if the
    machine has not that much memory free."""
    if nbytes >= HUGE_PAGE_BYTES:
        check_fits(nbytes)
    try:
        return _allocate(nbytes)
    except (OSError, MemoryError, OverflowError):
        check_fits(nbytes)
        raise ArenaError(f"cannot map an arena of {_gib(nbytes)} ({nbytes} bytes)") from None


class CallState:
    """The memory of one call in flight: a buffer per call-state global (the arena,
    a profiling build's counters), and their addresses in argument order."""

    __slots__ = ("buffers", "pointers")

    def __init__(self, buffers: Sequence[np.ndarray]):
        self.buffers = tuple(buffers)
        self.pointers = tuple(b.ctypes.data for b in self.buffers)


class CallStatePool:
    """Call states for concurrent calls of one loaded module: `take` one for a call,
    `give` it back after. A call takes an idle one, or a new one when every state is
    in use, so the pool holds as many as calls ever ran at once (one, for a caller
    that never overlaps its calls). `list.pop`/`append` are atomic: no lock."""

    def __init__(self, sizes: Sequence[int]):
        self.sizes = tuple(sizes)
        self._idle: list[CallState] = []

    def take(self) -> CallState:
        try:
            return self._idle.pop()
        except IndexError:
            return CallState([allocate_arena(n) for n in self.sizes])

    def give(self, state: CallState) -> None:
        self._idle.append(state)

    @property
    def idle(self) -> int:
        """Call states allocated and not in use now."""
        return len(self._idle)


def _allocate(nbytes: int) -> np.ndarray:
    if nbytes < HUGE_PAGE_BYTES or not huge_pages_possible():
        return np.frombuffer(_private_map(max(nbytes, 1)), np.uint8, count=nbytes)
    # Over-map by a huge page and start at the first 2 MB boundary. (Recent kernels
    # align big anonymous mappings themselves; this does not rely on it.)
    rounded = -(-nbytes // HUGE_PAGE_BYTES) * HUGE_PAGE_BYTES
    mapping = _private_map(rounded + HUGE_PAGE_BYTES)
    whole = np.frombuffer(mapping, np.uint8)
    start = -whole.ctypes.data % HUGE_PAGE_BYTES
    try:
        mapping.madvise(mmap.MADV_HUGEPAGE, start, rounded)
    except OSError:
        pass  # e.g. a kernel built without THP: small pages then
    return whole[start:start + nbytes]


def _private_map(nbytes: int) -> mmap.mmap:
    flags = getattr(mmap, "MAP_PRIVATE", 0) | getattr(mmap, "MAP_ANONYMOUS", 0)
    return mmap.mmap(-1, nbytes, flags=flags) if flags else mmap.mmap(-1, nbytes)


def huge_page_bytes(array: np.ndarray) -> int:
    """Bytes of the mapping(s) holding `array` that are backed by huge pages right now
    (`AnonHugePages` of /proc/self/smaps; 0 where that file does not exist)."""
    first = array.ctypes.data
    last = first + max(array.nbytes, 1)
    total = 0
    inside = False
    try:
        lines = Path("/proc/self/smaps").read_text().splitlines()
    except OSError:
        return 0
    for line in lines:
        head = re.match(r"([0-9a-f]+)-([0-9a-f]+) ", line)
        if head:
            inside = int(head.group(1), 16) < last and first < int(head.group(2), 16)
        elif inside and line.startswith("AnonHugePages:"):
            total += int(line.split()[1]) * 1024
    return total
