"""Command-line tools: `xweave` (compile / run) and `xweave-opt` (the pass driver)."""

from __future__ import annotations

import argparse
import sys

from xdsl.utils.exceptions import DiagnosticException, ParseError
from xdsl.xdsl_opt_main import xDSLOptMain

from xweave.errors import XweaveError


class XweaveOptMain(xDSLOptMain):
    """xdsl-opt with every xweave dialect and pass registered."""

    def register_all_dialects(self):
        import xweave.dialects.graph  # noqa: F401  (installs the resource-blob store)

        super().register_all_dialects()
        from xweave.dialects import get_all_dialects

        for name, factory in get_all_dialects().items():
            self.ctx.register_dialect(name, factory)

    def register_all_frontends(self):
        super().register_all_frontends()
        from xweave.diagnostics import LocatingParser, verify_with_location

        def parse_mlir(io):
            module = LocatingParser(self.ctx, io.read(), self.get_input_name()).parse_module(
                not self.args.no_implicit_module)
            if not self.args.disable_verify:
                verify_with_location(module)
            return module

        self.available_frontends["mlir"] = parse_mlir

    def register_all_passes(self):
        super().register_all_passes()
        from xweave.passes import get_all_passes

        for name, factory in get_all_passes().items():
            self.register_pass(name, factory)


def _fail(message: str, code: int = 1) -> None:
    print(message.rstrip(), file=sys.stderr)
    sys.exit(code)


def opt_main(args: list[str] | None = None) -> None:
    """Entry point of `xweave-opt`: parse, run a pass pipeline, print."""
    try:
        XweaveOptMain(description="xweave modular optimizer driver", args=args).run()
    except (ParseError, DiagnosticException) as e:
        # Both already say where (file:line:col) and what.
        _fail(str(e))
    except XweaveError as e:
        _fail(f"error: {e}", e.exit_code)
    except (ValueError, KeyError, NotImplementedError) as e:
        # Bad pass names/options from xDSL's pipeline parser arrive as ValueError.
        _fail(f"error: {e}")
    except FileNotFoundError as e:
        _fail(f"error: {e.filename}: no such file")


def main(argv: list[str] | None = None) -> None:
    """Entry point of `xweave`."""
    from xweave import commands

    parser = argparse.ArgumentParser(prog="xweave", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    commands.register(sub)
    args = parser.parse_args(argv)
    try:
        args.func(args)
    except XweaveError as e:
        _fail(f"xweave {args.command}: error: {e}", e.exit_code)
    except FileNotFoundError as e:
        _fail(f"xweave {args.command}: error: {e.filename}: no such file", 2)
    except ParseError as e:
        _fail(f"xweave {args.command}: error: {e}", 2)
    except DiagnosticException as e:
        _fail(f"xweave {args.command}: error: {e}", 2)


if __name__ == "__main__":
    main()
