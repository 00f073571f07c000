"""What the impact analysis reads from the index: definitions by name or
qualified symbol, the symbol spans of a file, and an import resolver over the
indexed paths. Read-only; every query goes through the store's per-thread
reader."""

from __future__ import annotations

import posixpath
import sqlite3
import threading
import weakref
from dataclasses import dataclass

from ctxls.index.chunker import chunk_file
from ctxls.index.engine import Engine
from ctxls.index.imports import ImportResolver
from ctxls.index.model import ImportRef, content_hash

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

    @property
    def name(self) -> str:
        return self.symbol.rsplit(".", 1)[-1]

    @property
    def container(self) -> str | None:
        """The class (type, namespace) it is a member of, last segment only."""
        head, dot, _ = self.symbol.rpartition(".")
        return head.rsplit(".", 1)[-1] if dot else None

    @property
    def key(self) -> tuple[str, str]:
        return self.path, self.symbol


@dataclass(frozen=True)
class SymbolSpan:
    symbol: str
    symbol_kind: str
    start_line: int
    end_line: int


_DEFINITIONS_SQL = (
    "SELECT f.path, f.language, s.symbol, s.symbol_kind, min(s.start_line) AS start_line, "
    "max(s.end_line) AS end_line FROM symbols s JOIN files f ON f.id = s.file_id "
    "WHERE s.name = ? GROUP BY f.path, s.symbol ORDER BY f.path, start_line")


def definitions_named(conn: sqlite3.Connection, name: str) -> list[Definition]:
    """Every indexed definition whose last segment is exactly ``name``."""
    rows = conn.execute(_DEFINITIONS_SQL, (name.lower(),)).fetchall()
    return [Definition(r["path"], r["symbol"], r["symbol_kind"], r["language"], r["start_line"],
                       r["end_line"]) for r in rows if r["symbol"].rsplit(".", 1)[-1] == name]


def module_name(path: str) -> str:
    """`pkg/session.py` -> `pkg.session`; `web/index.ts` -> `web`."""
    stem = posixpath.splitext(path)[0]
    for suffix in ("/__init__", "/index"):
        stem = stem.removesuffix(suffix)
    return stem.replace("/", ".")


def find_definitions(conn: sqlite3.Connection, query: str, path: str | None = None) -> list[Definition]:
    """Definitions a symbol query names: `request`, `Session.request`, or one
    qualified by its module (`pkg.session.Session.request`); only those in
    ``path`` when given."""
    candidates = definitions_named(conn, query.rsplit(".", 1)[-1])
    if path is not None:
        candidates = [d for d in candidates if d.path == path]
    by_symbol = [d for d in candidates if d.symbol == query or d.symbol.endswith("." + query)]
    if by_symbol:
        return by_symbol
    qualified = [(f"{module_name(d.path)}.{d.symbol}", d) for d in candidates]
    return [d for full, d in qualified if full == query or full.endswith("." + query)]


def file_spans(engine: Engine, path: str, text: str) -> list[SymbolSpan]:
    """The symbols of a file's current text: from the index when it indexed
    exactly this text, else from the chunker (an edit not indexed yet)."""
    conn = engine.store.reader()
    row = conn.execute("SELECT id, hash FROM files WHERE path = ?", (path,)).fetchone()
    if row is not None and row["hash"] == content_hash(text):
        rows = conn.execute(
            "SELECT symbol, symbol_kind, min(start_line) AS s, max(end_line) AS e FROM symbols "
            "WHERE file_id = ? GROUP BY symbol ORDER BY s", (row["id"],)).fetchall()
        return [SymbolSpan(r["symbol"], r["symbol_kind"], r["s"], r["e"]) for r in rows]
    merged: dict[str, SymbolSpan] = {}
    for definition in chunk_file(path, text).symbols:
        known = merged.get(definition.symbol)
        merged[definition.symbol] = SymbolSpan(
            definition.symbol, definition.symbol_kind,
            min(definition.start_line, known.start_line) if known else definition.start_line,
            max(definition.end_line, known.end_line) if known else definition.end_line)
    return sorted(merged.values(), key=lambda span: span.start_line)


def importers_of(conn: sqlite3.Connection, paths: set[str]) -> set[str]:
    """Indexed files with an import resolved to one of ``paths``."""
    if not paths:
        return set()
    marks = ",".join("?" * len(paths))
    rows = conn.execute(f"SELECT DISTINCT f.path FROM imports i JOIN files f ON f.id = i.file_id "
                        f"WHERE i.target IN ({marks})", tuple(paths)).fetchall()
    return {r[0] for r in rows}


def imports_of(conn: sqlite3.Connection, path: str) -> set[str]:
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
