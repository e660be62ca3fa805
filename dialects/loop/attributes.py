"""The `loop` dialect's attributes (loop kinds, memory scopes) and its i64 properties."""

from __future__ import annotations

import re
from collections.abc import Sequence

from xdsl.dialects.builtin import IntegerAttr, MemRefType, NoneAttr, StringAttr, i64
from xdsl.dialects.utils import EnumAttribute
from xdsl.ir import Attribute, ParametrizedAttribute
from xdsl.irdl import irdl_attr_definition
from xdsl.parser import AttrParser, Parser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.str_enum import StrEnum


class ForKind(StrEnum):
    """How the iterations of a `loop.for` are executed."""

    SERIAL = "serial"
    """One after the other, in order (the default)."""
    PARALLEL = "parallel"
    """Independent iterations, spread over threads."""
    VECTORIZED = "vectorized"
    """Independent iterations, executed as the lanes of SIMD instructions."""
    UNROLLED = "unrolled"
    """Serial, with the body replicated once per iteration."""
    VTHREAD = "vthread"
    """Virtual threads: interleaved instruction streams for latency hiding."""


@irdl_attr_definition
class ForKindAttr(EnumAttribute[ForKind]):
    """The kind of a `loop.for`: `#loop.kind<parallel>`."""

    name = "loop.kind"

    @classmethod
    def parse_parameter(cls, parser: AttrParser) -> ForKind:
        with parser.in_angle_brackets():
            return super().parse_parameter(parser)

    def print_parameter(self, printer: Printer) -> None:
        with printer.in_angle_brackets():
            super().print_parameter(printer)


_SCOPE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z0-9_]+)*")


@irdl_attr_definition
class ScopeAttr(ParametrizedAttribute):
    """A memory scope, the memory space of a buffer: `#loop.scope<local>`."""

    name = "loop.scope"

    scope: StringAttr
    """`global` (main memory), `local` (thread-private), or an accelerator scratchpad."""

    def __init__(self, scope: str | StringAttr):
        super().__init__(StringAttr(scope) if isinstance(scope, str) else scope)

    @property
    def data(self) -> str:
        """The scope's name."""
        return self.scope.data

    def verify(self) -> None:
        if not _SCOPE_NAME.fullmatch(self.scope.data):
            raise VerifyException(
                f"invalid memory scope {self.scope.data!r}: expected an identifier "
                "such as 'global', 'local' or 'vta.inp'"
            )

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        with parser.in_angle_brackets():
            return (StringAttr(parser.parse_identifier(" for memory scope")),)

    def print_parameters(self, printer: Printer) -> None:
        with printer.in_angle_brackets():
            printer.print_string(self.scope.data)


GLOBAL_SCOPE = ScopeAttr("global")
"""Main memory; a memref without memory space is global too."""
LOCAL_SCOPE = ScopeAttr("local")
"""Memory private to one thread (stack/registers)."""


def scope_of(memref_type: MemRefType) -> ScopeAttr:
    """The memory scope of a buffer type (no memory space means global)."""
    space = memref_type.memory_space
    if isinstance(space, NoneAttr):
        return GLOBAL_SCOPE
    if not isinstance(space, ScopeAttr):
        raise ValueError(f"memory space {space} of {memref_type} is not a #loop.scope")
    return space


def i64_attr(value: int | IntegerAttr) -> IntegerAttr:
    return value if isinstance(value, IntegerAttr) else IntegerAttr(value, i64)


INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def parse_i64(parser: Parser, what: str) -> int:
    """An integer literal that must fit in i64 (an i64 property would wrap it around)."""
    pos = parser.pos
    value = parser.parse_integer(allow_boolean=False, context_msg=f" as {what}")
    if not INT64_MIN <= value <= INT64_MAX:
        parser.raise_error(f"{what} {value} does not fit in a 64-bit integer", pos, parser.pos)
    return value
