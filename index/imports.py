"""Import extraction (Python, JavaScript, TypeScript) and resolution of import
specs to indexed files.

Spec format (``ImportRef.spec``):

* Python ``import a.b`` -> ``a.b``.
* Python ``from M import n`` -> ``M:n``, one ref per imported name, because
  ``n`` may be a submodule (``M/n.py``) or a name defined in ``M``; the
  resolver tries the submodule first and falls back to ``M``. ``from M import
  *`` -> ``M``. Relative modules keep their dots: ``from ..x import y`` ->
  ``..x:y``, ``from . import y`` -> ``.:y``. ``from __future__`` is skipped.
* JavaScript/TypeScript: the module string as written (``./util``, ``react``)
  from ``import``, ``export … from``, ``require('x')``, ``import('x')`` and
  TypeScript's ``import x = require('x')``.
"""

from __future__ import annotations

import itertools
import posixpath
import re
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from tree_sitter import Node, Query, QueryCursor, Tree
from tree_sitter_language_pack import get_language

from .languages import parse_source, parser_for
from .model import ImportRef

_PYTHON_QUERY = "(import_statement) @import (import_from_statement) @import"

_JAVASCRIPT_QUERY = """
(import_statement source: (string) @spec)
(export_statement source: (string) @spec)
(call_expression
  function: (identifier) @function
  arguments: (arguments . (string) @spec)
  (#eq? @function "require"))
(call_expression function: (import) arguments: (arguments . (string) @spec))
"""

_QUERY_SOURCES: dict[str, str] = {
    "python": _PYTHON_QUERY,
    "javascript": _JAVASCRIPT_QUERY,
    "typescript": _JAVASCRIPT_QUERY + "(import_require_clause source: (string) @spec)",
    "tsx": _JAVASCRIPT_QUERY + "(import_require_clause source: (string) @spec)",
}

IMPORT_LANGUAGES = frozenset(_QUERY_SOURCES)
# A file's imports kept, at most, and the longest target kept: `from M import
# b, b, …` writes M once per name, and 80 KB of it (a 6,000-character M,
# 13,000 names) made a 547 MB store. No module is named by 1,000 characters,
# and no hand-written file imports 2,000 names.
MAX_IMPORTS = 2000
MAX_SPEC_CHARS = 1000

# Compiled on first use; a Query is immutable, so threads can share it.
_queries: dict[str, Query] = {}


def _query(language: str) -> Query:
    query = _queries.get(language)
    if query is None:
        query = _queries[language] = Query(get_language(language), _QUERY_SOURCES[language])  # type: ignore[arg-type]
    return query


def extract_imports(language: str, tree_or_text: Tree | str) -> list[ImportRef]:
    """The imports of a file, in source order, given its parsed tree or text.
    Languages without import support yield an empty list."""
    if language not in IMPORT_LANGUAGES:
        return []
    if isinstance(tree_or_text, str):
        tree = parse_source(parser_for(language), tree_or_text.encode("utf-8", "replace"))
    else:
        tree = tree_or_text
    captures = QueryCursor(_query(language)).captures(tree.root_node)
    if language == "python":
        statements = sorted(captures.get("import", ()), key=lambda node: node.start_byte)
        refs: Iterable[ImportRef] = (ref for statement in statements for ref in _python_refs(statement))
    else:
        strings = sorted(captures.get("spec", ()), key=lambda node: node.start_byte)
        refs = (ImportRef(_text(node)[1:-1], node.start_point.row) for node in strings
                if node.end_byte - node.start_byte <= MAX_SPEC_CHARS + 2)
    return list(itertools.islice(refs, MAX_IMPORTS))


def _text(node: Node) -> str:
    return (node.text or b"").decode("utf-8", "replace")


def _dotted(node: Node) -> str:
    return "".join(_text(node).split())


def _python_refs(statement: Node) -> Iterator[ImportRef]:
    """Refs of an `import …` or `from … import …` statement (see the module
    doc), made as they are taken; none whose target is over MAX_SPEC_CHARS."""
    names = [
        name.child_by_field_name("name") if name.type == "aliased_import" else name
        for name in statement.children_by_field_name("name")
    ]
    names = [name for name in names if name is not None]
    if statement.type == "import_statement":
        refs = (ImportRef(_dotted(name), name.start_point.row) for name in names)
    else:
        module_node = statement.child_by_field_name("module_name")
        if module_node is None:
            return
        module = _dotted(module_node)
        if not names:  # from M import *
            refs = iter([ImportRef(module, statement.start_point.row)])
        elif len(module) > MAX_SPEC_CHARS:
            return
        else:
            refs = (ImportRef(f"{module}:{_dotted(name)}", name.start_point.row) for name in names)
    yield from (ref for ref in refs if len(ref.spec) <= MAX_SPEC_CHARS)


# Vue and Svelte components import as their <script> does.
_JS_LANGUAGES = frozenset({"javascript", "typescript", "tsx", "vue", "svelte"})
_JS_EXTENSIONS = (".ts", ".tsx", ".js", ".jsx", ".mjs", ".cjs", ".d.ts")
# TypeScript's ESM resolution: `import "./x.js"` names the compiled output of x.ts.
_TS_SOURCE_FOR_OUTPUT = {".js": (".ts", ".tsx"), ".jsx": (".tsx",), ".mjs": (".mts",), ".cjs": (".cts",)}
_PYTHON_SUFFIXES = (".py", "/__init__.py", ".pyi", "/__init__.pyi")


class ImportResolver:
    """Maps import specs to indexed files (repo-relative POSIX paths).

    Python absolute modules are found by dotted-path suffix, so ``a.b`` finds
    ``src/a/b.py`` (src layout) as well as ``a/b.py``. A suffix only counts if
    it starts at an import root: the directory holding its first package must
    not itself be a package (``django/utils/log.py`` is ``django.utils.log``,
    never a top-level ``log``). When the repository root is itself a package
    (an ``__init__.py`` at the top, its name unknown), ``anyname.rest`` is also
    looked up as ``rest`` from the root.
    """

    def __init__(self, paths: Iterable[str]) -> None:
        self._build(frozenset(paths))

    def _build(self, paths: frozenset[str]) -> None:
        self._paths = paths
        self._package_dirs = {posixpath.dirname(path) for path in paths if _is_package_file(path)}
        self._root_is_package = "" in self._package_dirs
        candidates: defaultdict[str, list[str]] = defaultdict(list)
        for path in paths:
            for module in self._modules_of(path):
                candidates[module].append(path)
        self._python_modules: dict[str, tuple[str, ...]] = {
            module: _in_preference_order(paths) for module, paths in candidates.items()}

    def _modules_of(self, path: str) -> Iterator[str]:
        """The dotted names ``path`` is importable by: every suffix of its
        module path that starts at an import root (see the class doc)."""
        parts = _python_module_parts(path)
        for first in range(len(parts)):
            if first == 0 or "/".join(parts[:first]) not in self._package_dirs:
                yield ".".join(parts[first:])

    def __contains__(self, path: str) -> bool:
        return path in self._paths

    @property
    def paths(self) -> frozenset[str]:
        return self._paths

    def update(self, added: Iterable[str] = (), removed: Iterable[str] = ()) -> ImportChange:
        """Files joined or left the listing: this resolver now resolves as
        one made from the new listing would. Returns which imports may now
        resolve otherwise (:class:`ImportChange`). A package's ``__init__``
        coming or going changes the names of every module under it: the
        tables are built again then; otherwise only these files' entries move."""
        added = set(added) - self._paths
        removed = set(removed) & self._paths
        if not added and not removed:
            return ImportChange()
        paths = (self._paths | added) - removed
        change = import_change(added | removed, self._paths | added)
        if any(_is_package_file(path) for path in added | removed):
            self._build(paths)
            return change
        for path in removed:
            for module in self._modules_of(path):
                left = tuple(p for p in self._python_modules.get(module, ()) if p != path)
                if left:
                    self._python_modules[module] = left
                else:
                    self._python_modules.pop(module, None)
        for path in added:
            for module in self._modules_of(path):
                self._python_modules[module] = _in_preference_order(
                    (*self._python_modules.get(module, ()), path))
        self._paths = paths
        return change

    def resolve(self, importer_path: str, ref: ImportRef, language: str) -> str | None:
        """The indexed file ``ref`` (found in ``importer_path``) refers to, or
        None for external modules, unknown languages and self-imports."""
        if language == "python":
            resolved = self._resolve_python(importer_path, ref.spec)
        elif language in _JS_LANGUAGES:
            resolved = self._resolve_js(importer_path, ref.spec)
        else:
            return None
        return resolved if resolved != importer_path else None

    def _resolve_python(self, importer_path: str, spec: str) -> str | None:
        module, _, name = spec.partition(":")
        if module.startswith("."):
            return self._resolve_python_relative(importer_path, module, name)
        for candidate in (f"{module}.{name}", module) if name else (module,):
            found = self._find_python_module(importer_path, candidate)
            if found is not None:
                return found
        return None

    def _find_python_module(self, importer_path: str, module: str) -> str | None:
        candidates = self._python_modules.get(module, ())
        if candidates:
            # Several files share the suffix (scripts dirs, vendored copies):
            # prefer the one nearest the importer; max() keeps the first of
            # equals, so ties follow the candidate order. A namesake importer
            # (`tests/json.py` importing `json`) is nearest to itself, and
            # resolve() turns that self-reference into None.
            importer_dir = posixpath.dirname(importer_path)
            return max(candidates, key=lambda path: _shared_dir_depth(importer_dir, path))
        if self._root_is_package and "." in module:
            return self._probe_python(module.partition(".")[2].replace(".", "/"))
        return None

    def _resolve_python_relative(self, importer_path: str, module: str, name: str) -> str | None:
        rest = module.lstrip(".")
        base = posixpath.dirname(importer_path)
        for _ in range(len(module) - len(rest) - 1):
            if not base:
                return None  # more dots than directories
            base = posixpath.dirname(base)
        module_dir = posixpath.join(base, rest.replace(".", "/")) if rest else base
        if name:
            found = self._probe_python(posixpath.join(module_dir, name.replace(".", "/")))
            if found is not None:
                return found
        return self._probe_python(module_dir)

    def _probe_python(self, module_path: str) -> str | None:
        if not module_path:  # the repository root as a package
            return "__init__.py" if "__init__.py" in self._paths else None
        for suffix in _PYTHON_SUFFIXES:
            if module_path + suffix in self._paths:
                return module_path + suffix
        return None

    def _resolve_js(self, importer_path: str, spec: str) -> str | None:
        if not spec.startswith("."):
            return None  # a package (or a path alias, which needs tsconfig)
        target = posixpath.normpath(posixpath.join(posixpath.dirname(importer_path), spec))
        if target == ".." or target.startswith("../"):
            return None
        if target in self._paths:
            return target
        for extension in _JS_EXTENSIONS:
            if target + extension in self._paths:
                return target + extension
        stem, extension = posixpath.splitext(target)
        for source_extension in _TS_SOURCE_FOR_OUTPUT.get(extension, ()):
            if stem + source_extension in self._paths:
                return stem + source_extension
        for extension in _JS_EXTENSIONS:
            index = f"{target}/index{extension}"
            if index in self._paths:
                return index
        return None


def _is_package_file(path: str) -> bool:
    return posixpath.basename(path) in ("__init__.py", "__init__.pyi")


def _in_preference_order(paths: Iterable[str]) -> tuple[str, ...]:
    """A source file shadows its stub; shallower files win over deeper ones."""
    return tuple(sorted(paths, key=lambda p: (p.endswith(".pyi"), p.count("/"), p)))


# What separates the names in a spec: `pkg.mod:name`, `../lib/util.js`.
_SPEC_SEPARATORS = re.compile(r"[./:]+")
# A JavaScript folder imports as its index file, a Python package as its __init__.
_FOLDER_FILES = frozenset({"__init__", "index"})


def spec_names(spec: str) -> set[str]:
    """The names a spec is made of (``..x:y`` -> {x, y}); a path's as
    normalised (``./a/..`` names the importer's own folder: none)."""
    if "/" in spec:
        spec = posixpath.normpath(spec)
    return {name for name in _SPEC_SEPARATORS.split(spec) if name}


def path_names(path: str) -> set[str]:
    """The names a spec resolving to ``path`` holds, one at least: its file
    name up to the first dot (``util`` for ``util.test.ts``, ``c`` for
    ``c.pyi``), and its folder's name for a package's ``__init__`` or an
    ``index`` file."""
    folder, base = posixpath.split(path)
    stem = next((part for part in base.split(".") if part), base)
    names = {stem}
    if stem in _FOLDER_FILES and folder:
        names.add(posixpath.basename(folder))
    return names


@dataclass
class ImportChange:
    """Which stored imports a change of the listed files may resolve
    otherwise: those whose spec holds one of ``names`` (a spec resolves only
    to a file whose names it holds, see :func:`path_names`), those of no name
    at all (``.``, ``..``: a folder's index file), every relative Python
    import when a package's ``__init__`` came or went (``from . import x``
    falls back to it), and all of them when the root became or stopped being
    a package."""
    names: set[str] = field(default_factory=set)
    relative: bool = False
    everything: bool = False

    def __bool__(self) -> bool:
        return bool(self.names) or self.relative or self.everything

    def __or__(self, other: ImportChange) -> ImportChange:
        # No copy when one is empty: a cold pass's change names every file,
        # and each file it writes adds an empty one.
        if not other:
            return self
        if not self:
            return other
        return ImportChange(self.names | other.names, self.relative or other.relative,
                            self.everything or other.everything)

    def may_change(self, spec: str) -> bool:
        if self.everything or (self.relative and spec.startswith(".")):
            return True
        names = spec_names(spec)
        return not names or not names.isdisjoint(self.names)


def import_change(changed: Iterable[str], listing: Iterable[str]) -> ImportChange:
    """The imports that ``changed`` files (added or removed) may resolve
    otherwise; ``listing``: the files before or after, with those added. A
    package's ``__init__`` changes the module names of every Python file
    under its folder."""
    change = ImportChange()
    packages = set()
    for path in changed:
        change.names |= path_names(path)
        if _is_package_file(path):
            change.relative = True
            packages.add(posixpath.dirname(path))
    if "" in packages:
        change.everything = True
    elif packages:
        for path in listing:
            if _python_module_parts(path) and any(
                    folder in packages for folder in _folders_above(path)):
                change.names |= path_names(path)
    return change


def _folders_above(path: str) -> Iterator[str]:
    """``a/b/c.py`` -> a/b, a."""
    folder = posixpath.dirname(path)
    while folder:
        yield folder
        folder = posixpath.dirname(folder)


def _python_module_parts(path: str) -> list[str]:
    """``a/b/c.py`` -> [a, b, c]; ``a/b/__init__.py`` -> [a, b]; non-Python -> []."""
    stem, extension = posixpath.splitext(path)
    if extension not in (".py", ".pyi"):
        return []
    parts = stem.split("/")
    if parts[-1] == "__init__":
        parts.pop()
    return parts


def _shared_dir_depth(directory: str, path: str) -> int:
    """How many leading directories ``path``'s directory shares with ``directory``."""
    shared = 0
    for mine, theirs in zip(directory.split("/"), posixpath.dirname(path).split("/")):
        if mine != theirs:
            break
        shared += 1
    return shared
