"""The package's layers, enforced (issue 40): editors -> daemon -> impact ->
index; no import cycle anywhere; only the store (``ctxls.index.store``)
imports ``sqlite3``; only the daemon builds protocol JSON.

Every import counts, at module level or inside a function (a lazy import is
still a dependency at run time); only ``if TYPE_CHECKING:`` imports do not.
Everything is read from the source with ``ast``: nothing is imported. The
checks take the package's folder, so the self-checks run them on a copy
with a rule broken on purpose.
"""

from __future__ import annotations

import ast
import re
import shutil
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent
LAYERS = ["daemon", "impact", "index"]  # each may import only those after it
STORE = "ctxls.index.store"


def module_name(path: Path, package: Path = PACKAGE) -> str:
    parts = list(path.relative_to(package).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(["ctxls", *parts])


def modules(package: Path = PACKAGE) -> dict[str, Path]:
    return {module_name(p, package): p for layer in LAYERS for p in (package / layer).rglob("*.py")}


def runtime_tree(path: Path) -> ast.Module:
    """The module's syntax tree less its ``if TYPE_CHECKING:`` blocks."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and getattr(node.test, "id", getattr(node.test, "attr", "")) \
                == "TYPE_CHECKING":
            node.body = []
    return tree


def runtime_imports(name: str, path: Path, known: set[str] | None) -> set[str]:
    """The package's modules ``name`` imports at run time (``known`` None:
    every module it imports, the standard library's too)."""
    tree = runtime_tree(path)
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
    if known is None:
        return found
    return {module for module in found if module in known and module != name}


def import_graph(package: Path = PACKAGE) -> dict[str, set[str]]:
    known = modules(package)
    return {name: runtime_imports(name, path, set(known)) for name, path in known.items()}


def layer_of(module: str) -> str:
    return module.split(".")[1]


def upward_imports(graph: dict[str, set[str]]) -> list[tuple[str, str]]:
    return sorted((module, target) for module, targets in graph.items() for target in targets
                  if LAYERS.index(layer_of(target)) < LAYERS.index(layer_of(module)))


def test_a_layer_imports_only_the_layers_below_it():
    assert upward_imports(import_graph()) == []


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


# -- only the store touches sqlite3 ------------------------------------------------

def sqlite_importers(package: Path = PACKAGE) -> set[str]:
    """The modules outside the store that import ``sqlite3`` (any import of
    it or from it, lazy ones included)."""
    return {name for name, path in modules(package).items()
            if not (name == STORE or name.startswith(STORE + "."))
            and any(module.split(".")[0] == "sqlite3" for module in runtime_imports(name, path, None))}


def test_only_the_store_imports_sqlite3():
    """The rest of the package names a connection by the store's alias
    (``Connection``) and catches the library's errors (``StoreError``), never
    SQLite's: the daemon cannot depend on what the store is made of."""
    assert sqlite_importers() == set()


# -- only the daemon builds protocol JSON ---------------------------------------------

# The wire's spelling: protocol field names are camelCase (`startLine`, `dbPath`),
# the library's Python names snake_case.
PROTOCOL_KEY = re.compile(r"^[a-z]+[A-Z][A-Za-z0-9]*$")
# Protocol spelling by design: an error carries its JSON-RPC code and `data`,
# so every shell (daemon, CLI, MCP) reports it alike (docs/architecture.md).
PROTOCOL_KEYS_BY_DESIGN = {"ctxls.index.errors"}
# Data at rest, not protocol JSON: names that files and store rows were
# written with, which older and newer ctxls read alike, so they never change.
# Each module spells them in one named table and nowhere else.
FILE_FORMAT_TABLES = {
    "ctxls.index.memory.transfer": "EXPORT_FIELDS",  # the memory export's JSON lines
    "ctxls.index.assemble": "STORED_AGGREGATE_NAMES",  # the assemble aggregate's meta row
}


def protocol_keys(path: Path) -> list[tuple[int, str]]:
    """Where a module makes a dict with a protocol-spelled key: "builds
    protocol JSON" means a dict display with a camelCase string key, a
    ``dict(key=…)`` or ``.update(key=…)`` with a camelCase keyword, or
    ``d["key"] = …`` with a camelCase key."""
    found = []
    for node in ast.walk(runtime_tree(path)):
        keys: list[str] = []
        if isinstance(node, ast.Dict):
            keys = [k.value for k in node.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)]
        elif isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) \
                in ("dict", "update"):
            keys = [keyword.arg for keyword in node.keywords if keyword.arg]
        elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store) \
                and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str):
            keys = [node.slice.value]
        found += [(node.lineno, key) for key in keys if PROTOCOL_KEY.match(key)]
    return found


def protocol_json_builders(package: Path = PACKAGE) -> dict[str, list[tuple[int, str]]]:
    """The modules outside the daemon that build protocol JSON, and where."""
    return {name: keys for name, path in modules(package).items()
            if layer_of(name) != "daemon" and name not in PROTOCOL_KEYS_BY_DESIGN
            and (keys := protocol_keys(path))}


def test_only_the_daemon_builds_protocol_json():
    """index/ and impact/ answer in Python (dataclasses, snake_case); the
    daemon's wire module (daemon/wire.py) spells the protocol."""
    assert protocol_json_builders() == {}


def protocol_spelled_strings(path: Path, table: str) -> tuple[list[str], list[tuple[int, str]]]:
    """The protocol-spelled string constants of a module: those inside the
    assignment of ``table``, and (line, string) of those outside it."""
    tree = runtime_tree(path)
    inside_nodes = {id(node) for statement in tree.body
                    if isinstance(statement, (ast.Assign, ast.AnnAssign))
                    and table in [getattr(target, "id", None) for target in
                                  getattr(statement, "targets", [getattr(statement, "target", None)])]
                    for node in ast.walk(statement)}
    inside, outside = [], []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and PROTOCOL_KEY.match(node.value):
            if id(node) in inside_nodes:
                inside.append(node.value)
            else:
                outside.append((node.lineno, node.value))
    return inside, outside


@pytest.mark.parametrize("name", sorted(FILE_FORMAT_TABLES))
def test_a_file_format_spells_its_names_in_one_table(name: str):
    """A format's camelCase names live in its table (which must exist and
    hold some) and nowhere else in the module: the code between the format
    and Python works in Python names."""
    inside, outside = protocol_spelled_strings(modules()[name], FILE_FORMAT_TABLES[name])
    assert inside, f"{name} has no {FILE_FORMAT_TABLES[name]} with protocol-spelled names"
    assert outside == []


# -- the checks catch what they are for -------------------------------------------------

def package_copy(tmp_path: Path) -> Path:
    """The package's layers' sources, copied (nothing else is read)."""
    copy = tmp_path / "ctxls"
    for layer in LAYERS:
        shutil.copytree(PACKAGE / layer, copy / layer, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return copy


def plant(module: Path, code: str) -> None:
    module.write_text(module.read_text(encoding="utf-8") + "\n\n" + code + "\n", encoding="utf-8")


def test_the_checks_fail_on_a_copy_with_each_rule_broken(tmp_path: Path):
    """On a copy of the package with a lazy ``import ctxls.daemon`` inside
    index/, ``import sqlite3`` in impact/ and a camelCase key built in
    index/, each check finds exactly what was planted (and on the copy as
    it is, nothing)."""
    copy = package_copy(tmp_path)
    assert upward_imports(import_graph(copy)) == []
    assert sqlite_importers(copy) == set()
    assert protocol_json_builders(copy) == {}
    plant(copy / "index" / "graph.py", "def _planted():\n    import ctxls.daemon\n    return ctxls.daemon")
    plant(copy / "impact" / "risk.py", "import sqlite3")
    plant(copy / "index" / "paths.py", "def _planted():\n    return {'startLine': 0}")
    plant(copy / "index" / "assemble.py", "def _planted(stored):\n    return stored['savedTokens']")
    graph = import_graph(copy)
    assert upward_imports(graph) == [("ctxls.index.graph", "ctxls.daemon")]
    assert sqlite_importers(copy) == {"ctxls.impact.risk"}
    assert protocol_json_builders(copy)["ctxls.index.paths"] == [(
        len((copy / "index" / "paths.py").read_text().splitlines()), "startLine")]
    assert protocol_spelled_strings(copy / "index" / "assemble.py", FILE_FORMAT_TABLES["ctxls.index.assemble"])[1] \
        == [(len((copy / "index" / "assemble.py").read_text().splitlines()), "savedTokens")]


def test_the_checks_see_a_cycle_and_an_upward_import():
    """The two checks are not vacuous: a made-up graph with both is caught."""
    graph = {"ctxls.index.a": {"ctxls.index.b", "ctxls.daemon.c"}, "ctxls.index.b": {"ctxls.index.a"},
             "ctxls.daemon.c": set()}
    assert cycles(graph) == [["ctxls.index.a", "ctxls.index.b"]]
    graph = import_graph()
    assert "ctxls.daemon.app" in graph["ctxls.daemon.server"]  # the reader sees real imports
    assert "ctxls.daemon.server" in graph["ctxls.daemon.client"]  # lazy ones too
    assert "ctxls.index.engine" not in graph["ctxls.daemon.client"]  # TYPE_CHECKING ones not
