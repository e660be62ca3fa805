"""The xDSL context that knows every dialect xweave reads and writes."""

from xdsl.context import Context
from xdsl.universe import Universe

from xweave.dialects import get_all_dialects


def make_context() -> Context:
    """A context with xDSL's upstream dialects (builtin, arith, func, llvm, ...) and xweave's."""
    # Importing the graph dialect installs the resource-blob store that keeps weights
    # intact when the same handle is parsed twice in one process.
    import xweave.dialects.graph  # noqa: F401

    ctx = Context()
    for name, factory in Universe.get_multiverse().all_dialects.items():
        ctx.register_dialect(name, factory)
    for name, factory in get_all_dialects().items():
        ctx.register_dialect(name, factory)
    return ctx


def parse_module(text: str | bytes, name: str = "<string>"):
    """Parse textual IR into a verified `builtin.module` (errors say file:line:col)."""
    from xweave.diagnostics import parse_ir

    return parse_ir(make_context(), text, name)


def print_module(module) -> str:
    """The module as text, exactly as `xweave-opt` prints it (dialect resources included)."""
    import io

    from xdsl.dialects.builtin import Builtin
    from xdsl.printer import Printer

    stream = io.StringIO()
    printer = Printer(stream=stream)
    printer.print_op(module)
    printer.print_metadata([Builtin])
    print("\n", file=stream)
    return stream.getvalue()
