"""xweave's dialects, registered lazily by name (as xDSL's own registry does: these
getters' imports are lazy by design). The accelerators' dialects are theirs
(`context.all_dialects` adds them)."""

from collections.abc import Callable

from xdsl.ir import Dialect


def get_all_dialects() -> dict[str, Callable[[], Dialect]]:
    """Every xweave dialect, keyed by name, imported only when first used."""

    def get_graph():
        from xweave.dialects.graph import Graph

        return Graph

    def get_loop():
        from xweave.dialects.loop import Loop

        return Loop

    def get_te():
        from xweave.dialects.te import TE

        return TE

    return {
        "graph": get_graph,
        "loop": get_loop,
        "te": get_te,
    }
