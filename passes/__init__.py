"""Every xweave pass (rewrites in `passes/`, conversions in `lowering/`), by name.

Keys are kept in alphabetical order; each getter imports its module lazily so
that `xweave-opt --help` stays fast.
"""

from collections.abc import Callable

from xdsl.passes import ModulePass


def get_all_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    """Every xweave pass, keyed by its command-line name."""

    def convert_graph_to_te():
        from xweave.lowering.graph_to_te import ConvertGraphToTePass

        return ConvertGraphToTePass

    def convert_loop_to_llvm():
        from xweave.lowering.loop_to_llvm import ConvertLoopToLLVMPass

        return ConvertLoopToLLVMPass

    def convert_te_to_loop():
        from xweave.lowering.te_to_loop import ConvertTeToLoopPass

        return ConvertTeToLoopPass

    return {
        "convert-graph-to-te": convert_graph_to_te,
        "convert-loop-to-llvm": convert_loop_to_llvm,
        "convert-te-to-loop": convert_te_to_loop,
    }
