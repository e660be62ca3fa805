"""Command-line tools: `xweave` (compile / run) and `xweave-opt` (the pass driver)."""

# Each entry point imports the module of its command when called (`xweave.commands`,
# `xweave.opt`), not this module: `xweave` does not load xDSL's pass driver, and
# `xweave-opt` (started hundreds of times by the lit suite) neither the compiler's
# commands nor what they import.

from __future__ import annotations

import argparse
import re
import sys

from xdsl.utils.exceptions import ArgSpecParseError, DiagnosticException, ParseError

from xweave import __version__
from xweave.errors import XweaveError
from xweave.log import add_verbosity_options, cli_logging, level_of


def _fail(message: str, code: int = 1) -> None:
    print(message.rstrip(), file=sys.stderr)
    sys.exit(code)


def _pipeline_error(error: ArgSpecParseError) -> str:
    """xDSL's multi-line pipeline syntax error as one line: the column and the problem."""
    lines = str(error).splitlines()
    where = re.fullmatch(r"pass-pipeline:\d+:(\d+)", lines[1]) if len(lines) > 4 else None
    if where is None:
        return "error: -p: " + " ".join(line.strip() for line in lines)
    return f"error: -p '{lines[2]}': column {where.group(1)}: {lines[-1].strip()}"


def opt_main(args: list[str] | None = None) -> None:
    """Entry point of `xweave-opt`: parse, run a pass pipeline, print."""
    from xweave.opt import XweaveOptMain, load_plugins  # (see the comment at the top)

    try:
        args = load_plugins(sys.argv[1:] if args is None else list(args))
        driver = XweaveOptMain(description="xweave modular optimizer driver", args=args)
        with cli_logging(level_of(driver.args.verbose, driver.args.quiet)):
            driver.run()
    except (ParseError, DiagnosticException) as e:
        # Both already say where (file:line:col) and what.
        _fail(str(e))
    except ArgSpecParseError as e:  # a BaseException upstream
        _fail(_pipeline_error(e))
    except XweaveError as e:
        _fail(f"error: {e}", e.exit_code)
    except (ValueError, KeyError, NotImplementedError) as e:
        # Bad pass names/options from xDSL's pipeline parser arrive as ValueError.
        _fail(f"error: {e or type(e).__name__}")
    except FileNotFoundError as e:
        _fail(f"error: {e.filename}: no such file")
    except OSError as e:
        _fail(f"error: {e.filename or ''}: {e.strerror or e}")
    except KeyboardInterrupt:
        _fail("interrupted", 130)


class _PrintInclude(argparse.Action):
    """`--print-include`: print where xweave.h is and exit (as `--version` does)."""

    def __init__(self, option_strings, dest, help=None):
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        import xweave

        print(xweave.include_dir())
        parser.exit()


def main(argv: list[str] | None = None) -> None:
    """Entry point of `xweave`."""
    from xweave import commands  # (see the comment at the top)

    parser = argparse.ArgumentParser(prog="xweave", description=__doc__)
    parser.add_argument("--version", action="version", version=f"xweave {__version__}")
    parser.add_argument("--print-include", action=_PrintInclude,
                        help="print the directory of xweave.h (as `xweave include-dir`) and exit")
    sub = parser.add_subparsers(dest="command", required=True)
    commands.register(sub)
    for command in sub.choices.values():
        add_verbosity_options(command)
    args = parser.parse_args(argv)
    try:
        with cli_logging(level_of(args.verbose, args.quiet)):
            args.func(args)
    except XweaveError as e:
        _fail(f"xweave {args.command}: error: {e}", e.exit_code)
    except FileNotFoundError as e:
        _fail(f"xweave {args.command}: error: {e.filename}: no such file", 2)
    except ParseError as e:
        _fail(f"xweave {args.command}: error: {e}", 2)
    except DiagnosticException as e:
        _fail(f"xweave {args.command}: error: {e}", 2)
    except KeyboardInterrupt:
        kept = (f"; the records measured so far are in {args.output} (the same command "
                "resumes)" if args.command == "tune" else "")
        _fail(f"xweave {args.command}: interrupted{kept}", 130)


if __name__ == "__main__":
    main()
