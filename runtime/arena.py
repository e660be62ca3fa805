"""The memory the runtime binds to a module's arena (`plan-memory`), on huge pages.

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
from pathlib import Path

import numpy as np

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


def allocate_arena(nbytes: int) -> np.ndarray:
    """An uninitialized (zero-filled) byte array of `nbytes` for an arena, page-aligned,
    and 2 MB-aligned on advised huge pages when it spans at least one huge page and
    the system allows them. The array keeps its mapping alive."""
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
