"""The package's layers, enforced (issue 40): editors -> daemon -> impact ->
index, and no import cycle anywhere.

Every import counts, at module level or inside a function (a lazy import is
still a dependency at run time); only ``if TYPE_CHECKING:`` imports do not.
The graph is read from the source with ``ast``: nothing is imported.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent
LAYERS = ["daemon", "impact", "index"]  # each may import only those after it


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(["ctxls", *parts])


def modules() -> dict[str, Path]:
    return {module_name(p): p for layer in LAYERS for p in (PACKAGE / layer).rglob("*.py")}


def runtime_imports(name: str, path: Path, known: set[str]) -> set[str]:
    """The package's modules ``name`` imports at run time."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and getattr(node.test, "id", getattr(node.test, "attr", "")) \
                == "TYPE_CHECKING":
            node.body = []
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[:len(package.split(".")) - (node.level - 1)]
                base = ".".join(up + ([base] if base else []))
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return {module for module in found if module in known and module != name}


def import_graph() -> dict[str, set[str]]:
    known = modules()
    return {name: runtime_imports(name, path, set(known)) for name, path in known.items()}


def layer_of(module: str) -> str:
    return module.split(".")[1]


def test_a_layer_imports_only_the_layers_below_it():
    upward = sorted((module, target) for module, targets in import_graph().items()
                    for target in targets
                    if LAYERS.index(layer_of(target)) < LAYERS.index(layer_of(module)))
    assert upward == []


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_import_cycle():
    assert cycles(import_graph()) == []


def test_the_checks_see_a_cycle_and_an_upward_import():
    """The two checks are not vacuous: a made-up graph with both is caught."""
    graph = {"ctxls.index.a": {"ctxls.index.b", "ctxls.daemon.c"}, "ctxls.index.b": {"ctxls.index.a"},
             "ctxls.daemon.c": set()}
    assert cycles(graph) == [["ctxls.index.a", "ctxls.index.b"]]
    graph = import_graph()
    assert "ctxls.daemon.app" in graph["ctxls.daemon.server"]  # the reader sees real imports
    assert "ctxls.daemon.server" in graph["ctxls.daemon.client"]  # lazy ones too
    assert "ctxls.index.engine" not in graph["ctxls.daemon.client"]  # TYPE_CHECKING ones not
