"""`xweave-opt`: xDSL's `xdsl-opt` driver with xweave's dialects, passes and output
targets, `--load-plugin` and mlir-opt's `--verify-diagnostics` checks (`cli.opt_main`
runs it).

Start-up matters here: the lit suite starts `xweave-opt` hundreds of times. Dialects and
passes are registered by name with factories (`context.all_dialects`,
`registry.all_passes`), so that a run imports only those its input and pipeline name;
the LLVM code generator is imported by the `-t llvm` / `-t asm` targets that use it.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import importlib.util
import io
import os
import sys
import textwrap
from collections.abc import Callable

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import PassPipeline
from xdsl.utils.exceptions import DiagnosticException, ParseError
from xdsl.xdsl_opt_main import xDSLOptMain

from xweave import __version__, timing
from xweave.context import all_dialects, upstream
from xweave.diagnostics import check_diagnostic, expected_diagnostics, parse_ir
from xweave.dialects.resources import eliding_resources
from xweave.errors import XweaveError
from xweave.log import add_verbosity_options
from xweave.registry import all_passes


class XweaveOptMain(xDSLOptMain):
    """xdsl-opt with every xweave dialect and pass registered."""

    version_format = f"xweave-opt {__version__} (xdsl {{xdsl_version}})"

    # xDSL's three registrations each read the installed packages' entry points (16 ms
    # of every start-up each): here they read them once (`context.upstream`).

    def register_all_dialects(self):
        for name, factory in upstream().all_dialects.items():
            self.ctx.register_dialect(name, factory)
        for name, factory in all_dialects().items():
            if name not in self.ctx.registered_dialect_names:
                self.ctx.register_dialect(name, factory)
        # Loaded from the start: xDSL prints resource blobs (weights a pass creates) only
        # for loaded dialects, and a module of implicit `builtin` ops loads none.
        self.ctx.get_dialect("builtin")

    def register_all_frontends(self):
        super().register_all_frontends()

        def parse_mlir(io):
            return parse_ir(self.ctx, io.read(), self.get_input_name(),
                            allow_implicit_module=not self.args.no_implicit_module,
                            verify=not self.args.disable_verify,
                            line_offset=self._line_offset)

        self.available_frontends["mlir"] = parse_mlir

    _line_offset = 0

    def parse_chunk(self, chunk, file_extension, offset=0):
        # Locations count lines of the whole file, not of a --split-input-file chunk.
        self._line_offset = offset
        with timing.scope("parse"):
            return super().parse_chunk(chunk, file_extension, offset)

    def register_all_targets(self):
        for name, factory in upstream().all_targets.items():
            self.available_targets.setdefault(name, factory)

        # (the code generator is imported by the targets that use it, not at start-up)
        def llvm_ir(module, output):
            from xweave.lowering.llvm_codegen import translate_to_llvm_ir

            output.write(translate_to_llvm_ir(module))

        def assembly(module, output):
            # the optimized code for the module's target (`xweave.target`), whatever the host
            from xweave.lowering.llvm_codegen import compile_llvm

            output.write(compile_llvm(module).assembly)

        self.available_targets["llvm"] = llvm_ir
        self.available_targets["asm"] = assembly

    def _run(self):
        """xdsl-opt's driver; with `--verify-diagnostics`, a file holding
        `// expected-error {{...}}` annotations is checked as mlir-opt checks it: every
        error must be expected and every expectation met, or the run fails (exit 1)
        naming each mismatch by file line. Without annotations, diagnostics are printed
        for filecheck, as xdsl-opt does."""
        if not self.args.verify_diagnostics:
            return super().run()
        chunks, file_extension = self.prepare_input()
        texts = []
        for chunk, offset in chunks:
            texts.append((chunk.read(), offset))
            chunk.close()
        expected = [expected_diagnostics(data.decode("utf-8", "replace"), offset)
                    for data, offset in texts]
        annotated = any(expected)
        output = self.prepare_output()
        failures: list[str] = []
        try:
            for i, ((data, offset), wanted) in enumerate(zip(texts, expected)):
                if i:
                    output.write("// -----\n")
                produced = None
                try:
                    module = self.parse_chunk(io.BytesIO(data), file_extension, offset)
                    if module is not None:
                        self.apply_passes(module)
                        output.write(self.output_resulting_program(module))
                except ParseError as e:
                    e.span = dataclasses.replace(e.span, line_offset=offset)
                    if not (annotated or self.args.parsing_diagnostics):
                        raise
                    produced = str(e)
                except DiagnosticException as e:
                    produced = "\n".join([str(e), *getattr(e, "__notes__", [])])
                output.flush()
                if produced is not None:
                    print(produced)
                if annotated:
                    failures += check_diagnostic(wanted, produced, self.get_input_name())
        finally:
            if output is not sys.stdout:
                output.close()
        for failure in failures:
            print(failure, file=sys.stderr)
        if failures:
            sys.exit(1)

    def run(self):
        if self.args.print_pipeline:
            print(",".join(str(p.spec(include_default=True)) for p in self.pipeline.passes))
            return None
        if not self.args.timing:
            return self._run()
        with timing.collect() as timer:
            self._run()
        print(timer.report(), file=sys.stderr)
        return None

    def setup_pipeline(self):
        """xdsl-opt's pipeline, verifying after every pass (`--verify-each`, the default,
        as mlir-opt) or once after the last, each pass and verification timed."""
        super().setup_pipeline()
        self.pipeline = _OptPipeline(
            self.pipeline.passes, verify_each=self.args.verify_each,
            verify=not self.args.disable_verify,
            between=self.output_resulting_program if self.args.print_between_passes else None)

    def output_resulting_program(self, prog):
        with eliding_resources(self.args.elide_resources_larger_than), timing.scope("print"):
            return super().output_resulting_program(prog)

    def register_all_passes(self):
        for name, factory in upstream().all_passes.items():
            self.register_pass(name, factory)
        for name, factory in all_passes().items():
            self.register_pass(name, factory)

    def register_all_arguments(self, arg_parser: argparse.ArgumentParser):
        super().register_all_arguments(arg_parser)
        # Consumed by opt_main before parsing (plugins must register first); declared
        # here for --help.
        passes = next(a for a in arg_parser._actions if a.dest == "passes")
        passes.help = ("comma-separated pass pipeline, e.g. 'loop-split{loop=\"k.i\" factor=8}'"
                       "; xweave's passes are listed below, xDSL's upstream passes "
                       "(canonicalize, dce, ...) are accepted too")
        arg_parser.formatter_class = argparse.RawDescriptionHelpFormatter
        plain_help = arg_parser.format_help
        arg_parser.format_help = lambda: plain_help() + "\n" + _passes_help()
        # -v is --verbose here, as in `xweave`; the version stays --version.
        version = arg_parser._option_string_actions.pop("-v")
        version.option_strings.remove("-v")
        add_verbosity_options(arg_parser)
        arg_parser.add_argument(
            "--print-pipeline", action="store_true",
            help="print the pipeline -p resolves to, every option of every pass spelled "
                 "out (as mlir-opt's --dump-pass-pipeline), and exit")
        arg_parser.add_argument(
            "--elide-resources-larger-than", type=int, default=0, metavar="BYTES",
            help="print resource blobs (weights) of more than BYTES bytes as \"__elided__\" "
                 "(default: 0, every blob printed); such IR parses, but compiling or "
                 "running it fails naming the elided blob")
        arg_parser.add_argument(
            "--verify-each", type=_boolean, nargs="?", const=True, default=True,
            metavar="BOOL",
            help="verify the IR after every pass (default: true, as mlir-opt); "
                 "--verify-each=false verifies once, after the last pass")
        arg_parser.add_argument(
            "--timing", action="store_true",
            help="print the wall time of every pass and verification on stderr (as "
                 "mlir-opt's --mlir-timing)")
        arg_parser.add_argument(
            "--load-plugin", metavar="MODULE", action="append", default=[],
            help="import MODULE (a module name or a .py file) first, e.g. one that "
                 "registers an accelerator: its dialect and passes become available; "
                 "may be repeated")


@dataclasses.dataclass(frozen=True)
class _OptPipeline(PassPipeline):
    """The passes of `xweave-opt -p`, each timed (`xweave.timing`), the module verified
    after each (`verify_each`) or after the last, and printed between passes by
    `between` (`--print-between-passes`)."""

    verify_each: bool = True
    verify: bool = True
    between: Callable[[ModuleOp], str] | None = None

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for index, pass_ in enumerate(self.passes):
            with timing.scope(pass_.name):
                pass_.apply(ctx, op)
            last = index == len(self.passes) - 1
            if self.verify and (self.verify_each or last):
                with timing.scope("verify"):
                    op.verify()
            if self.between is not None and not last:
                print(f"IR after {pass_.name}:")
                print(self.between(op), end="\n\n\n")


def _boolean(text: str) -> bool:
    if text.lower() in ("true", "1", "on"):
        return True
    if text.lower() in ("false", "0", "off"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got '{text}'")


def _passes_help() -> str:
    """xweave's passes, one line each (the docstring's first sentence), and their options."""
    lines = ["xweave passes (-p NAME{option=value ...}):"]
    for name, factory in sorted(all_passes().items()):
        cls = factory()
        doc = " ".join((cls.__doc__ or "").split())
        summary = doc.split(". ")[0].rstrip(".")
        lines += textwrap.wrap(f"{name}: {summary}", 88, initial_indent="  ",
                               subsequent_indent="      ")
        options = [f"{f.name.replace('_', '-')}={_default(f)}" for f in dataclasses.fields(cls)]
        if options:
            lines += textwrap.wrap("options: " + " ".join(options), 88,
                                   initial_indent="      ", subsequent_indent="        ")
    return "\n".join(lines) + "\n"


def _default(field) -> str:
    if field.default is not dataclasses.MISSING:
        return "none" if field.default is None else str(field.default).lower() \
            if isinstance(field.default, bool) else str(field.default)
    if field.default_factory is not dataclasses.MISSING:
        return str(field.default_factory())
    return "(required)"


def load_plugins(args: list[str]) -> list[str]:
    """Import the plugins named by `--load-plugin P` / `--load-plugin=P` in `args`
    (P: a module importable from the working directory or PYTHONPATH, as `python -m`
    finds it, or the path of a .py file); returns the other arguments."""
    rest, plugins = [], []
    it = iter(args)
    for arg in it:
        if arg == "--load-plugin":
            plugins.append(next(it, ""))
        elif arg.startswith("--load-plugin="):
            plugins.append(arg.split("=", 1)[1])
        else:
            rest.append(arg)
    if plugins and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    for plugin in plugins:
        try:
            if plugin.endswith(".py"):
                spec = importlib.util.spec_from_file_location(
                    os.path.basename(plugin)[:-3], plugin)
                if spec is None or spec.loader is None or not os.path.isfile(plugin):
                    raise ImportError(f"no such file {plugin}")
                module = importlib.util.module_from_spec(spec)
                sys.modules[spec.name] = module
                spec.loader.exec_module(module)
            else:
                importlib.import_module(plugin)
        except ImportError as e:
            raise PluginError(f"--load-plugin {plugin!r}: cannot import it ({e})") from None
    return rest


class PluginError(XweaveError):
    """A --load-plugin module could not be imported."""
