"""xweave's dialects, registered lazily by name (as xDSL's own registry does)."""

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

    def get_vta():
        from xweave.dialects.vta import VTA

        return VTA

    return {
        "graph": get_graph,
        "loop": get_loop,
        "te": get_te,
        "vta": get_vta,
    }
