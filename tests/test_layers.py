"""The layers of xweave only point down, and no module imports itself through others.

The contracts are pyproject.toml's `[tool.importlinter]` (a layered contract, forbidden
pairs, no cycle within a package); function-local imports count as imports, so a lazy
import hides nothing. The whole module graph is also checked for cycles here."""

import io
from contextlib import redirect_stdout
from pathlib import Path

import grimp
from importlinter.cli import lint_imports

ROOT = Path(__file__).resolve().parent.parent


def test_import_contracts_are_kept():
    out = io.StringIO()
    with redirect_stdout(out):
        code = lint_imports(config_filename=str(ROOT / "pyproject.toml"), no_cache=True,
                            no_logo=True)
    assert code == 0, out.getvalue()


def import_cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for imported in graph.find_modules_directly_imported_by(module):
            if imported not in index:
                visit(imported)
                low[module] = min(low[module], low[imported])
            elif imported in on_stack:
                low[module] = min(low[module], index[imported])
        if low[module] == index[module]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == module:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for module in sorted(graph.modules):
        if module not in index:
            visit(module)
    return cycles


def test_no_module_imports_itself_through_others():
    graph = grimp.build_graph("xweave", exclude_type_checking_imports=True, cache_dir=None)
    assert import_cycles(graph) == []


def test_not_even_type_annotations_import_in_a_circle():
    """An import under `if TYPE_CHECKING:` is still a dependency of the design (the loop
    kinds' lowerings once named the pass that calls them so): none closes a circle."""
    graph = grimp.build_graph("xweave", exclude_type_checking_imports=False, cache_dir=None)
    assert import_cycles(graph) == []


def test_the_cycle_check_finds_a_cycle():
    graph = grimp.ImportGraph()
    for a, b in (("p.a", "p.b"), ("p.b", "p.c"), ("p.c", "p.a"), ("p.c", "p.d")):
        graph.add_import(importer=a, imported=b)
    assert import_cycles(graph) == [["p.a", "p.b", "p.c"]]
