"""The xDSL context that knows every dialect xweave reads and writes."""

import functools
import io
from collections.abc import Callable

from xdsl.context import Context
import numpy as np
from xdsl.dialects.builtin import AnyFloat, Builtin
from xdsl.parser import AttrParser
from xdsl.ir import Dialect
from xdsl.printer import Printer
from xdsl.universe import Universe

# Importing `dialects.resources` installs the resource-blob store that keeps weights
# intact when the same handle is parsed twice in one process.
from xweave.dialects.resources import eliding_resources
from xweave import plugins
from xweave.accel.registry import ACCELERATORS
from xweave.diagnostics import parse_ir
from xweave.dialects import get_all_dialects


def _read_hex_float_elements() -> None:
    """Make xDSL 0.74 read a hex integer among the elements of a float `dense<...>` as
    the float's bit pattern, as MLIR does and as xDSL prints non-finite values
    (`dense<0xFF800000> : vector<16xf32>`, a splat of -inf); it read the integer's
    value (4.29e9) instead."""
    element = AttrParser._TensorLiteralElement
    if getattr(element, "_xweave_hex_floats", False):
        return
    to_type = element.to_type

    def read(self, parser, type):
        if (isinstance(type, AnyFloat) and type.bitwidth in (16, 32, 64)
                and isinstance(self.value, int) and not isinstance(self.value, bool)
                and self.span.text.lower().startswith("0x")):
            bits = np.array(self.value, f"uint{type.bitwidth}")
            return float(bits.view(f"float{type.bitwidth}"))
        return to_type(self, parser, type)

    element.to_type = read
    element._xweave_hex_floats = True


_read_hex_float_elements()


def all_dialects() -> dict[str, Callable[[], Dialect]]:
    """xweave's dialects and the accelerators' (built-in ones imported when first used),
    keyed by name."""
    found = dict(get_all_dialects())
    for accelerator, plugin in plugins.BUILTIN.items():
        for name in plugin.dialects:
            found[name] = lambda a=accelerator: ACCELERATORS.get(a).dialect
    for acc in ACCELERATORS.registered():
        found[acc.dialect.name] = lambda d=acc.dialect: d
    return found


@functools.cache
def upstream() -> Universe:
    """xDSL's dialects, passes and targets, and those of the installed packages that
    extend it (their `xdsl.universe` entry points), read once per process: reading the
    packages' metadata costs more than the rest of a small kernel's schedule, and 16 ms
    of `xweave-opt`'s start-up each time."""
    return Universe.get_multiverse()


def make_context() -> Context:
    """A context with xDSL's upstream dialects (builtin, arith, func, llvm, ...), xweave's
    and the accelerators'."""
    ctx = Context()
    for name, factory in upstream().all_dialects.items():
        ctx.register_dialect(name, factory)
    for name, factory in all_dialects().items():
        ctx.register_dialect(name, factory)
    return ctx


def parse_module(text: str | bytes, name: str = "<string>"):
    """Parse textual IR into a verified `builtin.module` (errors say file:line:col)."""
    return parse_ir(make_context(), text, name)


def print_module(module, elide_resources_larger_than: int = 0) -> str:
    """The module as text, exactly as `xweave-opt` prints it (dialect resources included;
    blobs of more than `elide_resources_larger_than` bytes elided, see
    `dialects.resources.eliding_resources`)."""
    stream = io.StringIO()
    with eliding_resources(elide_resources_larger_than):
        printer = Printer(stream=stream)
        printer.print_op(module)
        printer.print_metadata([Builtin])
    print("\n", file=stream)
    return stream.getvalue()
