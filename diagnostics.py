"""Source locations for IR read from text, so errors can say file:line:col."""

from __future__ import annotations

from xdsl.dialects.builtin import FileLineColLoc, IntAttr, ModuleOp, StringAttr
from xdsl.ir import Operation
from xdsl.parser import Parser
from xdsl.utils.exceptions import VerifyException


class LocatingParser(Parser):
    """A parser that records where each operation starts (as MLIR does by default)."""

    def parse_operation(self) -> Operation:
        start = self._current_token.span.get_location()
        op = super().parse_operation()
        if not isinstance(op.location, FileLineColLoc):
            op.location = FileLineColLoc(StringAttr(start.file), IntAttr(start.line),
                                         IntAttr(int(start.col)))
        return op


def format_location(op: Operation) -> str:
    loc = op.location
    if isinstance(loc, FileLineColLoc):
        return f"{loc.filename.data}:{loc.line.data}:{loc.column.data}"
    return "<unknown location>"


def verify_with_location(module: ModuleOp) -> None:
    """Verify `module`; on failure, raise an error naming the failing op and where it is."""
    try:
        module.verify()
    except VerifyException as error:
        for op in module.walk():
            try:
                op.verify(verify_nested_ops=False)
            except VerifyException as inner:
                raise VerifyException(
                    f"{format_location(op)}: error: '{op.name}' op: {inner}") from None
        raise error
