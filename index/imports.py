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

A bare JavaScript/TypeScript spec (``@lib/cart``) resolves through the
``compilerOptions`` ``paths`` and ``baseUrl`` of the ``tsconfig.json`` (else
``jsconfig.json``) nearest above the importer inside the repository, as the
TypeScript compiler resolves it (see :class:`AliasConfig`); a resolver made
without the repository's root resolves no bare spec.
"""

from __future__ import annotations

import itertools
import json
import logging
import os
import posixpath
import re
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from tree_sitter import Node, Query, QueryCursor, Tree
from tree_sitter_language_pack import get_language

from .discovery import Skipped, decode_as_written, read_file
from .languages import parse_source, parser_for
from .model import ImportRef

log = logging.getLogger(__name__)

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
# The files of _JS_LANGUAGES, by extension: read per pass, so no language lookup.
_JS_FAMILY_EXTENSIONS = frozenset({"js", "jsx", "mjs", "cjs", "ts", "tsx", "mts", "cts", "vue", "svelte"})
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

    def __init__(self, paths: Iterable[str], root: Path | None = None) -> None:
        # What the repository's tsconfig.json files say, read from ``root``
        # (none without it) and kept until one changes.
        self._aliases = AliasConfigs(root) if root is not None else None
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
        # A file written again is passed as added: a tsconfig.json (or a file
        # one extends) read otherwise than before changes bare imports.
        configs_changed = self._aliases is not None and self._aliases.forget(set(added) | set(removed))
        added = set(added) - self._paths
        removed = set(removed) & self._paths
        if not added and not removed:
            return ImportChange(everything=configs_changed)
        paths = (self._paths | added) - removed
        change = import_change(added | removed, self._paths | added)
        if configs_changed:
            change.everything = True
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

    def alias_change(self, earlier: ImportResolver | None) -> ImportChange:
        """The stored imports this resolver, made for a pass, may resolve
        otherwise than ``earlier`` (the one before it) for what the
        tsconfig.json files say. They are not indexed, so no write tells of
        a change: each folder of a JavaScript/TypeScript file is compared
        here, its config read now against what ``earlier`` read. Without an
        earlier one that read them all (a process's first pass), any config
        may have said otherwise when the stored imports were resolved."""
        if self._aliases is None:
            return ImportChange()
        folders = {path.rpartition("/")[0] for path in self._paths
                   if path.rpartition(".")[2] in _JS_FAMILY_EXTENSIONS}
        now = {folder: self._aliases.nearest(folder) for folder in folders}
        self._aliases.read_all = True
        before = earlier._aliases if earlier is not None else None
        if before is None or not before.read_all:
            return ImportChange(everything=any(self._aliases.config_path(folder) is not None
                                               for folder in folders))
        return ImportChange(everything=any(
            before.looked_up(folder) and before.nearest(folder) != said for folder, said in now.items()))

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
        if spec.startswith("."):
            return self._probe_js(posixpath.join(posixpath.dirname(importer_path), spec))
        if self._aliases is None or not spec or spec.startswith("/"):
            return None  # a package, or no repository to read a tsconfig.json in
        config = self._aliases.nearest(posixpath.dirname(importer_path))
        if config is None:
            return None
        for target in config.targets(spec):
            found = self._probe_js(target)
            if found is not None:
                return found
        return None

    def _probe_js(self, target: str) -> str | None:
        """The file a JavaScript/TypeScript import of repo path ``target``
        names: itself, with an extension, the TypeScript source of a named
        output, or its folder's index file; none outside the repository."""
        target = posixpath.normpath(target)
        if target == ".." or target.startswith(("../", "/")):
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
    a package, or a tsconfig.json came, went or says otherwise of bare specs."""
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
    under its folder; a tsconfig.json made or removed, any bare import's."""
    change = ImportChange()
    packages = set()
    for path in changed:
        change.names |= path_names(path)
        if posixpath.basename(path) in TS_CONFIG_NAMES:
            change.everything = True  # which config is nearest, and so any bare import's file
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


# -- tsconfig.json path aliases ----------------------------------------------------

# The files whose compilerOptions say how bare specs resolve, by precedence
# in one folder (TypeScript reads a jsconfig.json only where no tsconfig is).
TS_CONFIG_NAMES = ("tsconfig.json", "jsconfig.json")
# A repository's file is data: a config over this size is not read (real
# ones are a few KB), nor an `extends` chain past this many bases.
MAX_TS_CONFIG_BYTES = 256 * 1024
MAX_EXTENDS_DEPTH = 2


@dataclass(frozen=True)
class AliasConfig:
    """What a tsconfig.json (with the bases it extends) says of bare specs:
    ``paths`` patterns (at most one ``*`` each) with their targets, tried in
    order, relative to ``base`` (``baseUrl``, else the folder of the config
    that set ``paths``); then, when ``baseUrl`` is set, the spec under it.
    Folders are repo-relative; one outside the repository makes targets that
    resolve to nothing."""
    base: str
    base_url: str | None
    paths: tuple[tuple[str, tuple[str, ...]], ...]

    def targets(self, spec: str) -> Iterator[str]:
        """The repo paths ``spec`` may name, in TypeScript's order: the
        targets of an exact pattern, else of the pattern with the longest
        prefix matching it, then the spec under ``baseUrl``."""
        pattern = _best_pattern(spec, [pattern for pattern, _ in self.paths])
        if pattern is not None:
            prefix, star, suffix = pattern.partition("*")
            for target in dict(self.paths)[pattern]:
                if star:  # an exact pattern's targets are taken as written
                    target = target.replace("*", spec[len(prefix):len(spec) - len(suffix)], 1)
                if not target.startswith("/"):
                    yield posixpath.join(self.base, target)
        if self.base_url is not None:
            yield posixpath.join(self.base_url, spec)


def _best_pattern(spec: str, patterns: list[str]) -> str | None:
    """``spec`` itself if a pattern, else the ``*`` pattern matching it with
    the longest prefix (TypeScript's matchPatternOrExact)."""
    if spec in patterns:
        return spec
    best = None
    for pattern in patterns:
        prefix, star, suffix = pattern.partition("*")
        if star and "*" not in suffix and len(spec) >= len(prefix) + len(suffix) \
                and spec.startswith(prefix) and spec.endswith(suffix) \
                and (best is None or len(prefix) > len(best.partition("*")[0])):
            best = pattern
    return best


class AliasConfigs:
    """The alias config of each folder of ``root``: that of the config file
    nearest above it, read once and kept until :meth:`forget` is told a
    file it was read from changed."""

    def __init__(self, root: Path) -> None:
        self._root = root
        self._config_of_folder: dict[str, str | None] = {}
        # Set once every listed folder's config was read (ImportResolver.alias_change).
        self.read_all = False
        # config path -> (what it says, the files it was read from)
        self._read: dict[str, tuple[AliasConfig | None, frozenset[str]]] = {}

    def looked_up(self, folder: str) -> bool:
        """Whether ``folder``'s config was looked for (and is kept)."""
        return folder in self._config_of_folder

    def nearest(self, folder: str) -> AliasConfig | None:
        config_path = self.config_path(folder)
        if config_path is None:
            return None
        if config_path not in self._read:
            self._read[config_path] = _read_alias_config(self._root, config_path)
        return self._read[config_path][0]

    def config_path(self, folder: str) -> str | None:
        """The config file nearest above ``folder``, inside the repository."""
        if folder in self._config_of_folder:
            return self._config_of_folder[folder]
        candidates = (posixpath.join(folder, name) for name in TS_CONFIG_NAMES)
        found = next((path for path in candidates if os.path.isfile(f"{self._root}/{path}")), None)
        if found is None and folder:
            found = self.config_path(posixpath.dirname(folder))
        self._config_of_folder[folder] = found
        return found

    def forget(self, changed: set[str]) -> bool:
        """``changed`` files were written, made or removed: whether what any
        folder's config says may differ from what imports were resolved by.
        A config file not read since this was made may have been read
        otherwise before (by the resolver of an earlier pass): it may."""
        named = {path for path in changed if posixpath.basename(path) in TS_CONFIG_NAMES}
        if named:
            self._config_of_folder.clear()
        differs = any(path not in self._read for path in named)
        for config_path, (said, sources) in list(self._read.items()):
            if sources & changed:
                self._read[config_path] = _read_alias_config(self._root, config_path)
                differs = differs or self._read[config_path][0] != said
        return differs


def _read_alias_config(root: Path, config_path: str) -> tuple[AliasConfig | None, frozenset[str]]:
    """What ``config_path`` says of bare specs (None: nothing, or it cannot
    be read), and the files read for it: itself and the bases it extends,
    relative ones inside the repository only, MAX_EXTENDS_DEPTH deep; a base
    named by package (``@tsconfig/node20``) is not followed."""
    sources: list[str] = []
    base_url: str | None = None
    paths: tuple[tuple[str, tuple[str, ...]], ...] | None = None
    paths_base = ""
    # Bases first, each overridden by what extends it: the chain, root last.
    chain: list[tuple[str, dict]] = []
    pending = [(config_path, 0)]
    while pending:
        path, depth = pending.pop()
        if path in sources:
            continue
        sources.append(path)
        options = _config_json(root, path)
        if options is None:
            continue
        chain.append((path, options))
        if depth < MAX_EXTENDS_DEPTH:
            extends = options.get("extends")
            bases = [extends] if isinstance(extends, str) else extends if isinstance(extends, list) else []
            # Later bases override earlier ones: popped first, read first, overridden last.
            pending.extend((base, depth + 1) for base in (
                _extended_path(root, path, name) for name in bases if isinstance(name, str))
                if base is not None)
    for path, options in reversed(chain):
        compiler = options.get("compilerOptions")
        if not isinstance(compiler, dict):
            continue
        folder = posixpath.dirname(path)
        if isinstance(compiler.get("baseUrl"), str):
            base_url = _repo_folder(posixpath.join(folder, compiler["baseUrl"]))
        if isinstance(compiler.get("paths"), dict):
            paths = tuple((pattern, tuple(t for t in targets if isinstance(t, str)))
                          for pattern, targets in compiler["paths"].items() if isinstance(targets, list))
            paths_base = folder
    if base_url is None and not paths:
        return None, frozenset(sources)
    return AliasConfig(paths_base if base_url is None else base_url, base_url, paths or ()), \
        frozenset(sources)


def _repo_folder(path: str) -> str:
    """``path`` normalised, the repository's root as ``""`` (``..``-led: outside)."""
    folder = posixpath.normpath(path)
    return "" if folder == "." else folder


def _extended_path(root: Path, config_path: str, name: str) -> str | None:
    """The repo path of the base a config at ``config_path`` extends by
    ``name``: a relative one inside the repository, as is or with ``.json``
    added (TypeScript's order); None for a package's or one outside."""
    if not name.startswith(("./", "../")):
        return None
    path = _repo_folder(posixpath.join(posixpath.dirname(config_path), name))
    if path in ("", "..") or path.startswith("../"):
        return None
    if not name.endswith(".json") and not os.path.isfile(root / path):
        path += ".json"
    return path


def _config_json(root: Path, path: str) -> dict | None:
    """The top-level object of the config file ``path``, read as data (JSON
    with comments and trailing commas, as TypeScript reads it), or None:
    gone, outside the repository by a link, over MAX_TS_CONFIG_BYTES, or no
    such object; what is wrong with it is logged, once per read."""
    read = read_file(root, path, MAX_TS_CONFIG_BYTES)
    if isinstance(read, Skipped):
        if read.reason != "vanished":
            log.info("import aliases: %s not read (%s)", path, read.reason)
        return None
    data, _ = read
    if len(data) > MAX_TS_CONFIG_BYTES:
        log.info("import aliases: %s not read (over %d bytes)", path, MAX_TS_CONFIG_BYTES)
        return None
    try:
        config = json.loads(strict_json(decode_as_written(data)))
    except (ValueError, RecursionError) as exc:
        log.info("import aliases: %s not read (not JSON: %s)", path, exc)
        return None
    return config if isinstance(config, dict) else None


# A JSON string, and a run of text holding no string, comment or comma end.
_JSON_STRING = re.compile(r'"(?:[^"\\\n]|\\.)*"')
_JSON_PLAIN = re.compile(r'[^"/,\]}]+')


def strict_json(text: str) -> str:
    """JSON with comments (``//``, ``/* */``) and trailing commas, as
    tsconfig.json is written, as strict JSON; what is not JSON otherwise
    is left for the JSON parser to refuse. One pass, linear in the text."""
    out: list[str] = []
    comma = -1  # where in ``out`` the last comma is, while only blanks follow it
    at = 0
    while at < len(text):
        char = text[at]
        if text.startswith("//", at):
            end = text.find("\n", at)
            at = len(text) if end < 0 else end
            continue
        if text.startswith("/*", at):
            end = text.find("*/", at + 2)
            if end < 0:
                raise ValueError("a comment is not closed")
            at = end + 2
            continue
        match = (_JSON_STRING if char == '"' else _JSON_PLAIN).match(text, at)
        piece = match.group() if match else char
        if char in "]}" and comma >= 0:
            out[comma] = ""
        if piece.strip():
            comma = len(out) if piece == "," else -1
        out.append(piece)
        at += len(piece)
    return "".join(out)
