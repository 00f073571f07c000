"""What the impact analysis reads from the index: definitions by name or
qualified symbol, the symbol spans of a file, an import resolver over the
indexed paths, and where a word can be (the sweep's scope). Read-only; every
query goes through the store's per-thread reader."""

from __future__ import annotations

import functools
from collections import Counter
import os
import posixpath
import re
import threading
import weakref
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ctxls.index.chunk_worker import chunk_guarded
from ctxls.index.discovery import STORE_DIR_NAME, ignored_paths
from ctxls.index.engine import Engine
from ctxls.index.errors import EngineError
from ctxls.index.imports import ImportResolver
from ctxls.index.model import ImportRef, content_hash, split_symbol
from ctxls.index.query import names_definition, rust_crate_path
from ctxls.index.recall_features import declared_modules
from ctxls.index.store import FTS_TABLE_BY_KIND, Connection
from ctxls.index.tokenize import MAX_TOKEN_CHARS, expand_tokens, fold

from .ripgrep import Scope

if TYPE_CHECKING:
    from .syntax import Span

# Chunk symbol kinds that name a type: a receiver naming one is a class.
CLASS_KINDS = frozenset({"class", "struct", "interface", "trait", "enum", "type", "union"})


@dataclass(frozen=True)
class Definition:
    """A symbol as the index knows it; lines 0-based inclusive (split parts merged)."""

    path: str
    symbol: str  # qualified: `Session.request`
    symbol_kind: str
    language: str
    start_line: int
    end_line: int
    # Where its name is declared (`f` of `def f`), below any decorator or
    # comment its lines start with; set on the definitions an impact answers.
    name_span: Span | None = field(default=None, compare=False)
    # Which of its file's same-named callables it is (Java's `Cart(int)` after
    # `Cart()`: 1): an overload is a definition of its own (``overloads``).
    overload: int = 0

    @property
    def name(self) -> str:
        return split_symbol(self.symbol)[1]

    @property
    def container(self) -> str | None:
        """The class (type, namespace) it is a member of, last segment only."""
        head = split_symbol(self.symbol)[0]
        return split_symbol(head)[1] if head is not None else None

    @property
    def key(self) -> tuple:
        """(path, symbol), and for an overload after the first its number."""
        return (self.path, self.symbol, self.overload) if self.overload else (self.path, self.symbol)


@dataclass(frozen=True)
class SymbolSpan:
    symbol: str
    symbol_kind: str
    start_line: int
    end_line: int


_DEFINITIONS_SQL = (
    "SELECT f.path, f.language, s.symbol, s.symbol_kind, s.start_line, s.end_line "
    "FROM symbols s JOIN files f ON f.id = s.file_id WHERE s.name = ? ORDER BY f.path, s.start_line")

# Callables of one name in one scope that are one definition: a later
# `def`/`function` rebinds the name, and Python's `@overload` stubs,
# TypeScript's signatures and a property's getter and setter are one
# binding. Elsewhere same-named functions in one file are overloads (Java,
# C#, C++, Kotlin, Swift; Erlang's `take/1` and `take/2`), each with its
# own lines, callees and callers.
_ONE_BINDING_LANGUAGES = frozenset({"python", "javascript", "typescript", "tsx", "vue", "svelte"})
_CALLABLE_KINDS = frozenset({"function", "method"})


def overloads(language: str, symbol_kind: str) -> bool:
    """Whether same-named rows of this kind in one file are separate definitions."""
    return symbol_kind in _CALLABLE_KINDS and language not in _ONE_BINDING_LANGUAGES


def definitions_named(conn: Connection, name: str) -> list[Definition]:
    """Every indexed definition whose last segment is exactly ``name``: the
    rows of one (file, symbol) merged (a type's `impl` blocks, a getter and
    its setter), except overloads (``overloads``), numbered in line order."""
    merged: dict[tuple[str, str, int], Definition] = {}
    seen: Counter[tuple[str, str]] = Counter()  # overloads so far, by (path, symbol)
    for r in conn.execute(_DEFINITIONS_SQL, (fold(name),)).fetchall():
        if split_symbol(r["symbol"])[1] != name:
            continue
        path, symbol = r["path"], r["symbol"]
        overload = 0
        if overloads(r["language"], r["symbol_kind"]):
            overload = seen[(path, symbol)]
            seen[(path, symbol)] += 1
        known = merged.get((path, symbol, overload))
        merged[(path, symbol, overload)] = Definition(
            path, symbol, r["symbol_kind"], r["language"], known.start_line if known else r["start_line"],
            max(known.end_line, r["end_line"]) if known else r["end_line"], overload=overload)
    return sorted(merged.values(), key=lambda d: (d.path, d.start_line))


def index_refusal(engine: Engine, path: str | None = None) -> tuple[EngineError, str] | None:
    """Why ``engine``'s index may lack definitions it should hold: the store
    refused a pass or an edit (a full disk, a read-only store). (the refusal,
    recall's ``partialReason`` for it), or None. The refusal is the one
    ``ctxls/status`` reports (the failed pass's, else the last refused
    edit's); with ``path``, only a refusal of that file's latest text counts
    (its rows are left out of answers: Engine.fresh_answer)."""
    refusal = engine.index_refusal(path)
    if refusal is None:
        return None
    reason = engine.partial_reason()
    return refusal, reason or f"the index could not be updated ({refusal})"


def module_name(path: str) -> str:
    """`pkg/session.py` -> `pkg.session`; `web/index.ts` -> `web`."""
    stem = posixpath.splitext(path)[0]
    for suffix in ("/__init__", "/index"):
        stem = stem.removesuffix(suffix)
    return stem.replace("/", ".")


# Languages whose module is the package, its directory (Java's
# `com/other/Strings.java` holds `com.other.Strings`, Go's `api/local.go`
# `api.UseLocal`), not the file.
_PACKAGE_MODULE_SUFFIXES = (".java", ".kt", ".kts", ".scala", ".cs", ".groovy", ".go")


def module_names(path: str) -> list[str]:
    """The names a definition's module goes by in a qualified query: the
    file's (``module_name``); a Rust file's module path (`src/util/mod.rs`
    -> `src.util` and `crate.util`, `src/lib.rs` -> `crate`); a Java, Kotlin,
    Scala, C# or Go file's package directory (`com/other`)."""
    names = [module_name(path)]
    stem = posixpath.splitext(path)[0]
    if path.endswith(".rs"):
        names.append(stem.removesuffix("/mod").replace("/", "."))
        folders, _, file_stem = stem.rpartition("/")
        crate_path = rust_crate_path(tuple(part for part in folders.split("/") if part), file_stem)
        if crate_path is not None:
            names.append(".".join(crate_path))
    elif path.endswith(_PACKAGE_MODULE_SUFFIXES):
        names.append(posixpath.dirname(path).replace("/", "."))
    return list(dict.fromkeys(name for name in names if name))


def qualified_names(definition: Definition) -> list[str]:
    """``definition``'s symbol qualified by each of its module's names."""
    return [f"{module}.{definition.symbol}" for module in module_names(definition.path)]


def find_definitions(conn: Connection, query: str, path: str | None = None) -> list[Definition]:
    """Definitions a symbol query names: `request`, `Session.request`, or one
    qualified by its module (`pkg.session.Session.request`, `crate.util.parse`,
    `com.other.Strings.pad`: ``module_names``; Go's `yaml.Marshal` by its
    `package` clause); only those in ``path`` when given."""
    candidates = definitions_named(conn, split_symbol(query)[1])
    if path is not None:
        candidates = [d for d in candidates if d.path == path]
    by_symbol = [d for d in candidates if d.symbol == query or d.symbol.endswith("." + query)]
    if by_symbol:
        return by_symbol
    # Where the module is the package, also the package its file declares
    # (Go's `package yaml` in `go-yaml/`, or in a file at the root), as
    # `symbols` reads it (query.names_definition); the symbol itself exact.
    packages = declared_modules(conn)
    return [d for d in candidates
            if any(full == query or full.endswith("." + query) for full in qualified_names(d))
            or (d.path.endswith(_PACKAGE_MODULE_SUFFIXES)
                and names_definition(query, d.symbol, functools.partial(packages, d.path), key=str))]


def file_rows(engine: Engine, path: str, text: str) -> tuple[str, list[SymbolSpan]]:
    """The language and the symbol rows of a file's current text, in line
    order: from the index when it indexed exactly this text, else from the
    chunker (an edit not indexed yet)."""
    conn = engine.store.reader()
    row = conn.execute("SELECT id, hash, language FROM files WHERE path = ?", (path,)).fetchone()
    if row is not None and row["hash"] == content_hash(text):
        return row["language"], [SymbolSpan(r["symbol"], r["symbol_kind"], r["start_line"], r["end_line"])
                                 for r in conn.execute(
            "SELECT symbol, symbol_kind, start_line, end_line FROM symbols WHERE file_id = ? "
            "ORDER BY start_line", (row["id"],))]
    parsed = chunk_guarded(path, text)
    return parsed.language, [SymbolSpan(d.symbol, d.symbol_kind, d.start_line, d.end_line) for d in parsed.symbols]


def merged_spans(language: str, rows: list[SymbolSpan]) -> list[SymbolSpan]:
    """``rows`` (``file_rows``') with the rows of one symbol merged as
    ``definitions_named`` merges them."""
    merged: dict[tuple[str, int], SymbolSpan] = {}
    seen: Counter[str] = Counter()  # overloads so far, by symbol
    for symbol, kind, start, end in ((r.symbol, r.symbol_kind, r.start_line, r.end_line) for r in rows):
        key = (symbol, 0)
        if overloads(language, kind):
            key = (symbol, seen[symbol])
            seen[symbol] += 1
        known = merged.get(key)
        merged[key] = SymbolSpan(symbol, kind, min(start, known.start_line) if known else start,
                                 max(end, known.end_line) if known else end)
    return sorted(merged.values(), key=lambda span: span.start_line)


def importers_of(conn: Connection, paths: set[str]) -> set[str]:
    """Indexed files with an import resolved to one of ``paths``."""
    if not paths:
        return set()
    marks = ",".join("?" * len(paths))
    rows = conn.execute(f"SELECT DISTINCT f.path FROM imports i JOIN files f ON f.id = i.file_id "
                        f"WHERE i.target IN ({marks})", tuple(paths)).fetchall()
    return {r[0] for r in rows}


def imports_of(conn: Connection, path: str) -> set[str]:
    """Indexed files that ``path``'s imports resolve to."""
    rows = conn.execute("SELECT DISTINCT i.target FROM imports i JOIN files f ON f.id = i.file_id "
                        "WHERE f.path = ? AND i.target IS NOT NULL", (path,)).fetchall()
    return {r[0] for r in rows}


@dataclass(frozen=True)
class Imports:
    """Import specs to indexed files. Discovery indexes a symlink inside the
    root under its target's path only; an import through the link's path
    (``from pkg.compat import f`` with ``pkg/compat.py -> ../shared/compat.py``)
    resolves to that target, the file the index and the sweep know."""

    resolver: ImportResolver
    links: dict[str, str]  # link path -> indexed target path

    def resolve(self, importer: str, spec: str, language: str) -> str | None:
        found = self.resolver.resolve(importer, ImportRef(spec, 0), language)
        found = self.links.get(found, found) if found is not None else None
        return found if found != importer else None


# Indexer.skipped's reason for a link inside the root (discovery._alias_reason).
_LINK_REASON = "symlink to "
_resolvers: weakref.WeakKeyDictionary[Engine, tuple[tuple, Imports]] = weakref.WeakKeyDictionary()
_resolvers_lock = threading.Lock()


def import_resolver(engine: Engine) -> Imports:
    """Imports over the indexed paths and the links to them, rebuilt only
    when the set of files changed (a new file always gets a new row id)."""
    conn = engine.store.reader()
    skipped = dict(engine.indexer.skipped)
    key = (*conn.execute("SELECT count(*), max(id) FROM files").fetchone(), len(skipped))
    with _resolvers_lock:
        cached = _resolvers.get(engine)
        if cached is not None and cached[0] == key:
            return cached[1]
    paths = [r[0] for r in conn.execute("SELECT path FROM files")]
    indexed = set(paths)
    links = {link: reason.removeprefix(_LINK_REASON) for link, reason in skipped.items()
             if reason.startswith(_LINK_REASON) and reason.removeprefix(_LINK_REASON) in indexed}
    imports = Imports(ImportResolver(paths + list(links)), links)
    with _resolvers_lock:
        _resolvers[engine] = (key, imports)
    return imports


# A word the FTS tables hold as a token of its own wherever rg -w finds it:
# `tokenize.expand` gives every ASCII identifier up to MAX_TOKEN_CHARS the
# same first token wherever it stands (lower-cased, or its stem when it is one
# plain word), whatever compound it is part of. Anything else (`$el`, `café`)
# is swept on the whole tree.
_FTS_WORD = re.compile(r"[A-Za-z0-9_]+")
# A folder's mtime may lag the wall clock by a kernel tick: compare with slack.
_MTIME_SLACK_NS = 1_000_000_000


@dataclass(frozen=True)
class _IndexedFiles:
    """The files table as of one version: what the scope check compares the disk with."""

    on_disk: list[tuple[str, int, int]]  # (path, mtime_ns, size) of rows read from disk
    from_buffers: frozenset[str]  # rows of an editor's text: its file may say otherwise
    paths: frozenset[str]
    folders: frozenset[str]  # every folder holding an indexed file, and their parents ("" the root)


_indexed: weakref.WeakKeyDictionary[Engine, tuple[tuple, _IndexedFiles]] = weakref.WeakKeyDictionary()
# (folder, mtime_ns) -> (files, folders) in it the index does not hold and git does not ignore.
_unlisted: weakref.WeakKeyDictionary[Engine, dict[tuple[str, int], tuple[list[str], list[str]]]] = \
    weakref.WeakKeyDictionary()


def sweep_scope(engine: Engine, word: str) -> Scope | None:
    """Where ``word`` can occur as a whole word, or None: sweep the whole tree.

    The files whose indexed chunks hold the word as a token, plus what the
    index cannot vouch for: files whose size or mtime differ from their row
    (edited, not re-indexed yet), files whose row holds an editor buffer's
    text, and files and folders that appeared, not ignored, in folders
    changed since the last whole pass listed the tree.
    None when the word is not a token the FTS tables keep, or when there is
    no complete index listed by a whole pass of this process (still indexing,
    or served from the store as it was)."""
    if not _FTS_WORD.fullmatch(word) or len(word) > MAX_TOKEN_CHARS:
        return None
    listed_ns = engine.listed_ns
    if listed_ns is None or not engine.cold_index_done or engine.indexing:
        return None
    # The word as the index spells it: a lone word by its stem ("running" is
    # held as "run"), a compound whole and lower-cased.
    tokens = expand_tokens(word)
    if not tokens:
        return None
    conn = engine.store.reader()
    indexed = _indexed_files(engine, conn)
    union = " UNION ".join(f"SELECT rowid FROM {table} WHERE {table} MATCH :q"
                           for table in sorted(set(FTS_TABLE_BY_KIND.values())))
    files = {r[0] for r in conn.execute(
        f"SELECT DISTINCT f.path FROM chunks c JOIN files f ON f.id = c.file_id WHERE c.id IN ({union})",
        {"q": f'body : "{tokens[0]}"'})}
    # A row indexed from a buffer: read the file (the sweep searches an open
    # buffer instead, a closed one's file may not be re-indexed yet).
    files |= indexed.from_buffers
    root = f"{engine.root}{os.sep}"
    for path, mtime_ns, size in indexed.on_disk:
        try:
            st = os.lstat(root + path)
        except OSError:  # gone: nothing to read
            continue
        if st.st_mtime_ns != mtime_ns or st.st_size != size:
            files.add(path)
    new_files, new_folders = _unlisted_since(engine, indexed, listed_ns - _MTIME_SLACK_NS)
    return Scope(sorted(files | set(new_files)), new_folders)


def _indexed_files(engine: Engine, conn: Connection) -> _IndexedFiles:
    """The files table, re-read only when a row was added, removed or rewritten."""
    key = tuple(conn.execute("SELECT count(*), max(id), max(indexed_at) FROM files").fetchone())
    cached = _indexed.get(engine)
    if cached is not None and cached[0] == key:
        return cached[1]
    rows = conn.execute("SELECT path, mtime_ns, size, source FROM files").fetchall()
    folders = {""}
    for path, *_ in rows:
        folder = posixpath.dirname(path)
        while folder not in folders:
            folders.add(folder)
            folder = posixpath.dirname(folder)
    indexed = _IndexedFiles([(p, m, s) for p, m, s, source in rows if source == "disk"],
                            frozenset(p for p, _, _, source in rows if source != "disk"),
                            frozenset(r[0] for r in rows), frozenset(folders))
    _indexed[engine] = (key, indexed)
    return indexed


def _unlisted_since(engine: Engine, indexed: _IndexedFiles, since_ns: int) -> tuple[list[str], list[str]]:
    """Files and folders, in the index's folders changed since ``since_ns``,
    that the index does not hold (new since it listed them): the files the
    index would take, the folders that hold no indexed file. Not followed:
    symlinks (discovery indexes their targets), ignored paths (git's rules)."""
    seen = _unlisted.setdefault(engine, {})
    if len(seen) > 10_000:  # folders rewritten again and again (atomic saves)
        seen.clear()
    root = f"{engine.root}{os.sep}"
    new_files: list[str] = []
    new_folders: list[str] = []
    for folder in sorted(indexed.folders):
        try:
            mtime_ns = os.lstat(root + folder if folder else engine.root).st_mtime_ns
        except OSError:
            continue
        if mtime_ns < since_ns:
            continue
        if (folder, mtime_ns) not in seen:
            seen[(folder, mtime_ns)] = _unlisted_in(engine, indexed, folder)
        files, folders = seen[(folder, mtime_ns)]
        # Indexed since (a watched-file event): the row's stat check covers it now.
        new_files += [p for p in files if p not in indexed.paths]
        new_folders += [p for p in folders if p not in indexed.folders]
    return new_files, new_folders


def _unlisted_in(engine: Engine, indexed: _IndexedFiles, folder: str) -> tuple[list[str], list[str]]:
    files, folders = [], []
    try:
        with os.scandir(engine.root / folder) as entries:
            for entry in entries:
                path = f"{folder}/{entry.name}" if folder else entry.name
                if entry.name in (".git", STORE_DIR_NAME) or entry.is_symlink():
                    continue
                if entry.is_dir(follow_symlinks=False):
                    if path not in indexed.folders:
                        folders.append(path)
                elif path not in indexed.paths and path not in engine.indexer.skipped \
                        and engine.indexer.wanted(path):
                    files.append(path)
    except OSError:
        return [], []
    ignored = ignored_paths(engine.root, files + folders)
    return [p for p in files if p not in ignored], [p for p in folders if p not in ignored]
