"""Bad IR text: clear errors, quickly, from `xweave-opt` and the Python API."""

import os
import re
import subprocess
import sys
import time

import pytest
from xdsl.utils.exceptions import ParseError, VerifyException

from xweave.context import parse_module

OPT = os.path.join(os.path.dirname(sys.executable), "xweave-opt")


def opt(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([OPT, *args], input=stdin, capture_output=True, timeout=60)


@pytest.mark.parametrize("length", [30, 2000, 200_000])
def test_unterminated_string_literal_fails_fast(length):
    # A dump cut inside a resource blob: the lexer must not backtrack exponentially.
    text = '"test.op"() {a = "' + "0A" * (length // 2)
    start = time.perf_counter()
    with pytest.raises(ParseError, match="closing string literal"):
        parse_module(text)
    assert time.perf_counter() - start < 5  # a generous bound for a hang


def test_escapes_still_lex():
    module = parse_module('"test.op"() {a = "x\\"y\\n\\\\z\\41"} : () -> ()')
    assert module.ops.first.attributes["a"].data == 'x"y\n\\zA'


def test_cut_dump_through_the_cli(tmp_path):
    path = tmp_path / "cut.mlir"
    path.write_text('"test.op"() {a = "' + "ab" * 40)
    r = opt(str(path))
    assert r.returncode == 1
    err = r.stderr.decode()
    assert "Traceback" not in err and f"{path}:1:18" in err
    assert "End of file reached before closing string literal" in err


def test_non_utf8_names_the_file_and_position(tmp_path):
    path = tmp_path / "bad.mlir"
    path.write_bytes(b'"test.op"() {a = "\xf9"} : () -> ()\n')
    r = opt(str(path))
    err = r.stderr.decode()
    assert r.returncode == 1 and "Traceback" not in err
    assert f"{path}:1:19" in err and "invalid UTF-8 (byte 0xf9)" in err
    with pytest.raises(ParseError, match=r"invalid UTF-8 \(byte 0xf9\)"):
        parse_module(path.read_bytes(), str(path))


def test_unprintable_float_attribute_is_a_located_error(tmp_path):
    path = tmp_path / "f80.mlir"
    path.write_text('"test.op"() {a = 1.0 : f80} : () -> ()\n')
    r = opt(str(path))
    err = r.stderr.decode()
    assert r.returncode == 1 and "Traceback" not in err
    assert err.strip() == (f"{path}:1:1: error: 'test.op' op: float attributes of type f80 "
                           "are not supported")
    with pytest.raises(VerifyException, match="f80 are not supported"):
        parse_module(path.read_text(), str(path))


@pytest.mark.parametrize("pipeline, expected", [
    (",,,", "error: -p ',,,': column 1: Expected pass name here"),
    ("loop-split{loop=", "error: -p 'loop-split{loop=': column 17: Unknown argument value"),
])
def test_malformed_pipeline_is_one_line(pipeline, expected):
    r = opt("-p", pipeline, stdin=b"")
    err = r.stderr.decode()
    assert r.returncode == 1 and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1 and err.startswith(expected)


def test_loop_bound_beyond_i64_is_a_parse_error():
    r = opt(stdin=b"loop.for %i = 9223372036854775808 to 3 {\n}\n")
    err = r.stderr.decode()
    assert r.returncode == 1 and "Traceback" not in err
    assert "stdin:1:15" in err and "does not fit in a 64-bit integer" in err


def test_directory_as_input():
    r = opt(os.path.dirname(OPT))
    err = r.stderr.decode()
    assert r.returncode == 1 and "Traceback" not in err and "Is a directory" in err


@pytest.mark.parametrize("text, message", [
    # Literals xDSL's attribute constructors refuse with ValueError or struct.error.
    ('"test.op"() {a = 18446744073709551616 : i64} : () -> ()', "invalid value: Integer value 18446744073709551616 is out of range"),
    ('"test.op"() {a = array<i32: 0, -9223372036854775809>} : () -> ()',
     "is out of range for type i32"),
    # A GEP constant index equal to the dynamic-index marker: the printer would fail.
    ("%p = \"test.op\"() : () -> !llvm.ptr\n"
     "%q = llvm.getelementptr %p[-2147483648] : (!llvm.ptr) -> !llvm.ptr, f32",
     "1 dynamic index marker(s) in rawConstantIndices but 0 index operand(s)"),
])
def test_values_xdsl_refuses_are_located_errors(tmp_path, text, message):
    path = tmp_path / "v.mlir"
    path.write_text(text + "\n")
    with pytest.raises((ParseError, VerifyException), match=re.escape(message)):
        parse_module(text, str(path))
    r = opt(str(path))
    err = r.stderr.decode()
    assert r.returncode == 1 and "Traceback" not in err and message in err
    assert err.startswith(f"{path}:")
