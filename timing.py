"""Where a build spends its time: a tree of wall times per stage and per pass, in the
spirit of MLIR's `--mlir-timing`.

    with timing.collect() as timer:        # what runs inside is timed
        with timing.scope("graph-opt"):    # nested scopes make the tree
            ...
        timing.add("kernels", 0.25)        # a time measured elsewhere (a worker)
    print(timer.report())

Scopes cost almost nothing when no timer collects (`scope` checks one context
variable), so the compiler marks its stages and passes unconditionally. Work done in
worker processes (`xweave.parallel`) is timed there and `merge`d: its parts are summed
over the workers, so they may add up to more than the wall time of the step holding them.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field


@dataclass
class TimingNode:
    """One named step: its total wall time, how often it ran, and its parts in order."""

    name: str
    seconds: float = 0.0
    count: int = 0
    children: dict[str, TimingNode] = field(default_factory=dict)

    def child(self, name: str) -> TimingNode:
        node = self.children.get(name)
        if node is None:
            node = self.children[name] = TimingNode(name)
        return node

    def as_dict(self) -> dict:
        """`{"name", "seconds", "count", "children": [...]}` (JSON-ready)."""
        return {"name": self.name, "seconds": round(self.seconds, 6), "count": self.count,
                "children": [c.as_dict() for c in self.children.values()]}


class Timer:
    """A tree of `TimingNode`s filled by `scope` and `add` while it collects."""

    def __init__(self) -> None:
        self.root = TimingNode("total")
        self._start = time.perf_counter()
        self._stack = [self.root]

    def finish(self) -> None:
        self.root.seconds = time.perf_counter() - self._start
        self.root.count = 1

    def report(self, title: str = "xweave timing report") -> str:
        """The tree as text: wall time, share of the total, count (when more than one),
        name, indented by depth; parts of a step in the order they first ran."""
        total = self.root.seconds or sum(c.seconds for c in self.root.children.values())
        lines = ["===" + "-" * 72 + "===", f"  {title}".center(78),
                 "===" + "-" * 72 + "===",
                 f"  Total wall time: {total:.4f} s", "",
                 "   ----Wall Time----   ----Count----  ----Name----"]

        def walk(node: TimingNode, depth: int) -> None:
            share = 100.0 * node.seconds / total if total else 0.0
            count = f"{node.count:>9}" if node.count > 1 else " " * 9
            lines.append(f"   {node.seconds:9.4f} ({share:5.1f}%)  {count}    "
                         f"{'  ' * depth}{node.name}")
            for child in node.children.values():
                walk(child, depth + 1)

        for child in self.root.children.values():
            walk(child, 0)
        lines.append(f"   {total:9.4f} (100.0%)               total")
        return "\n".join(lines)


_CURRENT: ContextVar[Timer | None] = ContextVar("xweave_timer", default=None)


@contextmanager
def collect(fresh: bool = False) -> Iterator[Timer]:
    """Time everything run inside (nested `collect`s share the outer timer, unless
    `fresh`: a worker process times its own part, to `merge` into the parent's)."""
    outer = _CURRENT.get()
    if outer is not None and not fresh:
        yield outer
        return
    timer = Timer()
    token = _CURRENT.set(timer)
    try:
        yield timer
    finally:
        _CURRENT.reset(token)
        timer.finish()


def active() -> bool:
    """Whether a timer collects (to skip measuring what nobody reads)."""
    return _CURRENT.get() is not None


@contextmanager
def scope(name: str) -> Iterator[None]:
    """Time the code inside as step `name` under the enclosing step."""
    timer = _CURRENT.get()
    if timer is None:
        yield
        return
    node = timer._stack[-1].child(name)
    timer._stack.append(node)
    start = time.perf_counter()
    try:
        yield
    finally:
        node.seconds += time.perf_counter() - start
        node.count += 1
        timer._stack.pop()


def add(name: str, seconds: float, count: int = 1) -> None:
    """Add `seconds` (measured elsewhere, e.g. in a worker process) to step `name`
    under the enclosing step."""
    timer = _CURRENT.get()
    if timer is not None:
        node = timer._stack[-1].child(name)
        node.seconds += seconds
        node.count += count


def merge(tree: TimingNode) -> None:
    """Add the steps of `tree` (another timer's root, e.g. a worker's) under the
    enclosing step."""
    timer = _CURRENT.get()
    if timer is None:
        return

    def add_into(node: TimingNode, parts: TimingNode) -> None:
        for part in parts.children.values():
            into = node.child(part.name)
            into.seconds += part.seconds
            into.count += part.count
            add_into(into, part)

    add_into(timer._stack[-1], tree)
