"""Logging: every module logs to `logging.getLogger(__name__)` (`xweave.<module>`).

The package logger has a `NullHandler`: a program that uses xweave sees nothing unless
it configures logging (real warnings still go through `warnings.warn`). The CLIs
configure it with `cli_logging` (`-v`: info, `-vv`: debug, `-q`: errors only).

Levels: DEBUG for detail, INFO for what each step did (a kernel's schedule, a task's
start), `NOTE` for the one-line summaries a command shows by default ("3 of 5 kernels
tuned"), WARNING and ERROR as usual.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import re
import sys
from collections.abc import Iterator

NOTE = 25
"""Between INFO and WARNING: a summary the CLIs show at their default verbosity."""
logging.addLevelName(NOTE, "NOTE")

# What `logging.captureWarnings` logs: warnings.formatwarning's
# "FILE:LINE: Category: message\n  source line".
_FORMATTED_WARNING = re.compile(r"^.*?:\d+: [A-Za-z_][\w.]*: (.*?)(?:\n.*)?$", re.DOTALL)


def _text(record: logging.LogRecord) -> str:
    """The record's message; a captured warning's without its file, line and category."""
    text = record.getMessage()
    if record.name == "py.warnings":
        match = _FORMATTED_WARNING.match(text)
        text = match.group(1) if match else text.strip()
    return text


class _PlainFormatter(logging.Formatter):
    """One line per record: the message, after `warning: ` / `error: ` where it is one."""

    def format(self, record: logging.LogRecord) -> str:
        text = _text(record)
        if record.levelno >= logging.ERROR:
            return f"error: {text}"
        if record.levelno >= logging.WARNING:
            return f"warning: {text}"
        if record.levelno < logging.INFO:
            return f"debug: {record.name}: {text}"
        return text


class _OncePerText(logging.Filter):
    """Show each warning's text once (a records file read once per task has one bad
    line, not one per task)."""

    def __init__(self):
        super().__init__()
        self.shown: set[str] = set()

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno != logging.WARNING:
            return True
        text = _text(record)
        if text in self.shown:
            return False
        self.shown.add(text)
        return True


def level_of(verbose: int, quiet: bool) -> int:
    """The CLI's threshold: `-q` errors only, default NOTE, `-v` INFO, `-vv` DEBUG."""
    if quiet:
        return logging.ERROR
    return (NOTE, logging.INFO)[verbose] if verbose < 2 else logging.DEBUG


def add_verbosity_options(parser: argparse.ArgumentParser) -> None:
    """-v/--verbose (repeatable) and -q/--quiet, read by `level_of`: what the library
    logs on stderr."""
    parser.add_argument("-v", "--verbose", action="count", default=0,
                        help="say more on stderr: -v what each step did, -vv debugging detail")
    parser.add_argument("-q", "--quiet", action="store_true",
                        help="only errors on stderr (no summaries, warnings or progress)")


@contextlib.contextmanager
def cli_logging(level: int) -> Iterator[None]:
    """Within the block, show the `xweave` loggers' records at `level` and above, and
    warnings (`warnings.warn`, through `logging.captureWarnings`), one line each on
    stderr; restored afterwards."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_PlainFormatter())
    handler.addFilter(_OncePerText())
    loggers = [logging.getLogger("xweave"), logging.getLogger("py.warnings")]
    saved = [(lg.level, lg.propagate, lg.disabled) for lg in loggers]
    for lg in loggers:
        lg.addHandler(handler)
        lg.setLevel(level)
        lg.propagate = False
        lg.disabled = False  # a library's logging.config call may have disabled them
    logging.captureWarnings(True)
    try:
        yield
    finally:
        logging.captureWarnings(False)
        for lg, (lvl, propagate, disabled) in zip(loggers, saved):
            lg.removeHandler(handler)
            lg.setLevel(lvl)
            lg.propagate = propagate
            lg.disabled = disabled


__all__ = ["NOTE", "cli_logging", "level_of"]
