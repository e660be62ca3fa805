"""Reading IR text safely, and source locations so errors can say file:line:col."""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    FileLineColLoc,
    FloatAttr,
    IntAttr,
    ModuleOp,
    StringAttr,
)
from xdsl.ir import Attribute, Operation
from xdsl.parser import Parser
from xdsl.parser.generic_parser import ParserState
from xdsl.utils.exceptions import ParseError, VerifyException
from xdsl.utils.lexer import Input, Span
from xdsl.utils.mlir_lexer import MLIRLexer

from xweave.dialects.resources import claim_parsed


class LinearTimeLexer(MLIRLexer):
    """xDSL's MLIR lexer with a string-literal rule that cannot backtrack.

    Upstream's rule nests `[^"...]+` inside `(...)*`: on a literal without its closing
    quote (a file cut inside a resource blob) the regex engine tries every way of
    splitting the characters between the two quantifiers, exponential in the length.
    Possessive quantifiers match the same language (the alternatives start with
    different characters) and give up at once."""

    _unescaped_characters_regex = re.compile(
        r'"(?:[^"\\\n\v\f]++|\\(?:["nt\\]|[0-9A-Fa-f]{2}))*+"'
    )


class XweaveParser(Parser):
    """The parser for every IR text xweave reads: linear-time lexing, a clear error for
    bytes that are not UTF-8, and where each operation starts recorded (as MLIR does by
    default) so verifier errors can say file:line:col."""

    def __init__(self, ctx: Context, input: str | bytes, name: str = "<unknown>",
                 line_offset: int = 0):
        super().__init__(ctx, "", name)
        self._parser_state = ParserState(LinearTimeLexer(Input(_decode(input, name), name)))
        self.line_offset = line_offset
        """Lines before this text in its file (a chunk of `--split-input-file`)."""

    def parse_module(self, allow_implicit_module: bool = True) -> ModuleOp:
        try:
            module = super().parse_module(allow_implicit_module)
            # The blobs come last in the text: hand them to the attributes naming them.
            claim_parsed(module, (key for dialect, key in self.dialect_resources
                                  if dialect == "builtin"))
            return module
        except (ValueError, OverflowError, IndexError, struct.error, VerifyException) as e:
            # A literal xDSL's attribute constructors refuse (an integer beyond its type,
            # a dense array element that does not pack), located just before where the
            # parser stopped.
            at = max(0, self._current_token.span.start - 1)
            raise ParseError(Span(at, at + 1, self.lexer.input),
                             f"invalid value: {' '.join(str(e).split()) or type(e).__name__}"
                             ) from None

    def parse_operation(self) -> Operation:
        start = self._current_token.span.get_location()
        op = super().parse_operation()
        if not isinstance(op.location, FileLineColLoc):
            op.location = FileLineColLoc(StringAttr(start.file),
                                         IntAttr(start.line + self.line_offset),
                                         IntAttr(int(start.col)))
        return op


def _decode(text: str | bytes, name: str) -> str:
    """`text` as a string; bytes that are not UTF-8 are a `ParseError` pointing at the
    first bad byte."""
    if isinstance(text, str):
        return text
    try:
        return text.decode("utf-8")
    except UnicodeDecodeError as e:
        shown = text.decode("utf-8", errors="replace")
        start = len(text[: e.start].decode("utf-8"))
        raise ParseError(
            Span(start, start + 1, Input(shown, name)),
            f"invalid UTF-8 (byte 0x{text[e.start]:02x}): IR text must be UTF-8",
        ) from None


def format_location(op: Operation) -> str:
    loc = op.location
    if isinstance(loc, FileLineColLoc):
        return f"{loc.filename.data}:{loc.line.data}:{loc.column.data}"
    return "<unknown location>"


def _op_problem(op: Operation) -> str | None:
    """What xDSL's verifiers let through but its printer or LLVM translation cannot
    take, or None."""
    if op.name == "llvm.getelementptr" and (why := _gep_problem(op)) is not None:
        return why
    for attr in (*op.properties.values(), *op.attributes.values()):
        if (why := _unprintable(attr)) is not None:
            return why
    return None


def _gep_problem(op: Operation) -> str | None:
    """Index operands and markers of an `llvm.getelementptr` that do not agree, or None."""
    # xDSL's llvm dialect is imported here, by the IR that holds its ops (it costs 60 ms
    # of every xweave-opt start-up otherwise).
    from xdsl.dialects import llvm

    if not isinstance(op, llvm.GEPOp):
        return None
    dynamic = sum(1 for i in op.rawConstantIndices.iter_values() if i == llvm.GEP_USE_SSA_VAL)
    if dynamic != len(op.ssa_indices):
        return (f"{dynamic} dynamic index marker(s) in rawConstantIndices but "
                f"{len(op.ssa_indices)} index operand(s) (a constant index must fit i32 "
                f"and not be {llvm.GEP_USE_SSA_VAL})")
    return None


def _unprintable(attr: Attribute) -> str | None:
    """Why xDSL cannot print `attr` (a float of a type it has no format for), or None."""
    if isinstance(attr, FloatAttr):
        try:
            attr.type.format  # noqa: B018  (raises for f80, f128)
        except NotImplementedError:
            return f"float attributes of type {attr.type} are not supported"
    elif isinstance(attr, ArrayAttr):
        for a in attr.data:
            if (why := _unprintable(a)) is not None:
                return why
    elif isinstance(attr, DictionaryAttr):
        for a in attr.data.values():
            if (why := _unprintable(a)) is not None:
                return why
    return None


def verify_with_location(module: ModuleOp) -> None:
    """Verify `module`; on failure, raise an error naming the failing op and where it is.
    What xDSL could not print back is refused here too."""
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
    for op in module.walk():
        if (why := _op_problem(op)) is not None:
            raise VerifyException(f"{format_location(op)}: error: '{op.name}' op: {why}")


def parse_ir(ctx: Context, text: str | bytes, name: str = "<string>",
             allow_implicit_module: bool = True, verify: bool = True,
             line_offset: int = 0) -> ModuleOp:
    """Parse IR text into a `builtin.module`, verified (errors say file:line:col;
    `line_offset`: lines of the file before `text`)."""
    module = XweaveParser(ctx, text, name, line_offset).parse_module(allow_implicit_module)
    if verify:
        verify_with_location(module)
    return module


# ----------------------------------------------------------------------------------
# Expected diagnostics (`xweave-opt --verify-diagnostics`), as mlir-opt checks them
# ----------------------------------------------------------------------------------

_EXPECTED = re.compile(
    r"//\s*expected-(error|warning|remark|note)\s*(?:@([+-]\d+|above|below|unknown))?"
    r"\s*\{\{(.*?)\}\}")
_LOCATED = re.compile(r"^(?:.*?):(\d+):(\d+)")
_LOCATED_ERROR = re.compile(r"^.*?:\d+:\d+:?\s*(?:error:\s*)?")


@dataclass
class ExpectedDiagnostic:
    """An `// expected-error @+1 {{text}}` annotation: its kind, the file line it is
    about (None: `@unknown`, a diagnostic without a location) and the text it expects."""

    kind: str
    line: int | None
    text: str
    at: int
    """The file line of the annotation itself."""
    seen: bool = False


def expected_diagnostics(text: str, line_offset: int = 0) -> list[ExpectedDiagnostic]:
    """The annotations of a chunk of IR text, with file lines (`line_offset`: lines of
    the file before the chunk). `@above` / `@below` skip other annotation lines."""
    lines = text.splitlines()
    code = [i for i, line in enumerate(lines) if not _EXPECTED.search(line)]
    found = []
    for i, line in enumerate(lines):
        for kind, where, expected in _EXPECTED.findall(line):
            if where == "unknown":
                target = None
            elif where == "above":
                target = max((c for c in code if c < i), default=i)
            elif where == "below":
                target = min((c for c in code if c > i), default=i)
            else:
                target = i + int(where or 0)
            found.append(ExpectedDiagnostic(
                kind, None if target is None else target + 1 + line_offset, expected,
                i + 1 + line_offset))
    return found


def check_diagnostic(expected: list[ExpectedDiagnostic], produced: str | None,
                     file: str) -> list[str]:
    """Match the one error a chunk produced (or None) against its annotations; returns
    the failures, each a `file:line: error: ...` line, as mlir-opt reports them. An
    error without a location matches an annotation by its text alone."""
    failures = []
    if produced is not None:
        first = produced.splitlines()[0] if produced else ""
        located = _LOCATED.match(first)
        line = int(located.group(1)) if located else None
        match = next((e for e in expected if e.kind == "error" and not e.seen
                      and (line is None or e.line == line) and e.text in produced), None)
        if match is None:
            where = f"{file}:{line}:{located.group(2)}" if located else file
            message = " ".join(_LOCATED_ERROR.sub("", produced, count=1).split())
            failures.append(f"{where}: error: unexpected error: {message}")
        else:
            match.seen = True
    for e in expected:
        if not e.seen:
            where = "unknown location" if e.line is None else f"line {e.line}"
            failures.append(f"{file}:{e.at}: error: expected {e.kind} \"{e.text}\" "
                            f"(at {where}) was not produced")
    return failures
