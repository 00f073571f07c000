"""Reading the store: file rows, counts, and what recall derives from a
reader's snapshot (``connection_cache`` and the generations that key it)."""

from __future__ import annotations

import collections
import sqlite3
import threading
from dataclasses import dataclass
from collections.abc import Iterable
from typing import TYPE_CHECKING, Callable

from ctxls.index.store.schema import FTS_TOKENIZER

if TYPE_CHECKING:
    from ctxls.index.store.database import Connection

@dataclass(frozen=True)
class FileState:
    id: int
    path: str
    size: int
    mtime_ns: int
    hash: str
    source: str
    indexed_at: int = 0  # ms: when the rows were made or last checked against the file



# (connection id, name) -> (the connection, the version it was built at, the value). The
# connection is held so its id cannot be reused by another while cached; the
# lock is for recall threads that each bring their own reader connection.
_CONNECTION_CACHES: dict[tuple[int, str], tuple[Connection, object, object]] = {}
_CONNECTION_CACHE_SIZE = 64
_CONNECTION_CACHE_LOCK = threading.Lock()


def connection_cache(conn: Connection, name: str, version: Callable[[Connection], object],
                     build: Callable[[Connection], object]):
    """What ``build(conn)`` made for this reader connection, made again when
    ``version(conn)`` (read in the reader's snapshot, so it changes in the
    transaction that changes what was built from) is no longer what it was."""
    current = version(conn)
    key = (id(conn), name)
    with _CONNECTION_CACHE_LOCK:
        cached = _CONNECTION_CACHES.get(key)
    if cached is not None and cached[0] is conn and cached[1] == current:
        return cached[2]
    value = build(conn)
    with _CONNECTION_CACHE_LOCK:
        _CONNECTION_CACHES.pop(key, None)
        while len(_CONNECTION_CACHES) >= _CONNECTION_CACHE_SIZE:
            _CONNECTION_CACHES.pop(next(iter(_CONNECTION_CACHES)))
        _CONNECTION_CACHES[key] = (conn, current, value)
    return value


def paths_generation(conn: Connection) -> str | None:
    """Changes in every transaction that adds or removes a ``files`` row
    (a file's id and path never change otherwise)."""
    row = conn.execute("SELECT value FROM meta WHERE key = 'paths_generation'").fetchone()
    return row[0] if row else None



_held_terms = threading.local()
# Non-ASCII terms' held forms kept per process, at most (then cleared).
MAX_HELD_TERMS = 65536
_held_forms: dict[str, str] = {}


def held_terms(terms: Iterable[str]) -> dict[str, str]:
    """Each of ``terms`` as the full-text tables hold it. Their unicode61
    tokenizer (schema.py) strips some diacritics (`café_total` is held as
    `cafe_total`, `länge` as `lange`; Greek's are kept), a rule of its own,
    read from SQLite here rather than imitated: a query term looked up in a
    vocabulary as written was absent. ASCII terms are held as they are; the
    others not seen before are read in one batch."""
    terms = list(dict.fromkeys(terms))
    unseen = [t for t in terms if not t.isascii() and t not in _held_forms]
    if unseen:
        conn = getattr(_held_terms, "conn", None)
        if conn is None:
            conn = _held_terms.conn = sqlite3.connect(":memory:")
            conn.execute(f'CREATE VIRTUAL TABLE t USING fts5(b, tokenize = "{FTS_TOKENIZER}")')
            conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance')")
        conn.executemany("INSERT INTO t(rowid, b) VALUES (?, ?)", enumerate(unseen, 1))
        tokens: dict[int, list[str]] = collections.defaultdict(list)
        for doc, term in conn.execute("SELECT doc, term FROM v ORDER BY doc, offset"):
            tokens[doc].append(term)
        conn.execute("DELETE FROM t")
        if len(_held_forms) + len(unseen) > MAX_HELD_TERMS:
            _held_forms.clear()
        for doc, term in enumerate(unseen, 1):
            held = tokens.get(doc, [])
            _held_forms[term] = held[0] if len(held) == 1 else term
    return {t: t if t.isascii() else _held_forms.get(t, t) for t in terms}


def held_term(term: str) -> str:
    """One term as the full-text tables hold it (``held_terms``)."""
    return held_terms([term])[term]


def fts_generation(conn: Connection, table: str) -> object:
    """Changes whenever the FTS5 ``table``'s rows do: its structure record
    (``%_data`` row 10), which FTS5 rewrites, with a write counter, in every
    transaction that changes the index. Without one (another FTS5 layout),
    the connection's data_version: any commit at all."""
    row = conn.execute(f"SELECT block FROM {table}_data WHERE id = 10").fetchone()
    if row is None:
        return ("data_version", conn.execute("PRAGMA data_version").fetchone()[0])
    return row[0]


def parse_file_terms(terms: str) -> collections.Counter:
    """A ``file_terms.terms`` value as token -> chunks holding it."""
    out: collections.Counter = collections.Counter()
    for line in terms.split("\n"):
        if line:
            token, _, count = line.rpartition(" ")
            out[token] = int(count)
    return out


def file_term_count(terms: str, token: str) -> int:
    """How many chunks hold ``token``, read from a ``file_terms.terms``
    value without parsing it whole (a query asks a handful of tokens of a
    few dozen files)."""
    start = terms.find(f"\n{token} ")
    if start < 0:
        return 0
    start += len(token) + 2
    return int(terms[start:terms.index("\n", start)])



def windowed_files(conn: sqlite3.Connection, path: str | None = None) -> dict[str, tuple[str, str | None]]:
    """Files (all, or ``path``) stored as line windows alone, path ->
    (language, why: ``ParsedFile.unparsed`` as written, None in a store from
    before it was kept). In a language the chunker reads with a grammar
    (``reads_definitions``) that means its parse was given up or set aside
    (a definitions language yields at least a ``module`` chunk): by this
    process or an earlier one."""
    rows = conn.execute(
        "SELECT path, language, unparsed FROM files WHERE (? IS NULL OR path = ?) "
        "AND EXISTS (SELECT 1 FROM chunks WHERE file_id = files.id) "
        "AND NOT EXISTS (SELECT 1 FROM chunks WHERE file_id = files.id AND symbol_kind != 'window')",
        (path, path)).fetchall()
    return {row[0]: (row[1], row[2]) for row in rows}


# Paths bound in one query (SQLite's default limit on variables is far above).
_PATHS_PER_QUERY = 500


def generated_paths(conn: sqlite3.Connection, paths: Iterable[str]) -> set[str]:
    """Those of ``paths`` whose text says a program wrote them
    (``files.generated``; paths.says_generated), looked up by path: a
    repository of many generated files costs a query only its candidates."""
    wanted = list(dict.fromkeys(paths))
    found: set[str] = set()
    for start in range(0, len(wanted), _PATHS_PER_QUERY):
        batch = wanted[start:start + _PATHS_PER_QUERY]
        found.update(row[0] for row in conn.execute(
            f"SELECT path FROM files WHERE path IN ({','.join('?' * len(batch))}) AND generated = 1",
            batch))
    return found


class Reads:
    """``Store``'s reads of file rows (on this thread's reader)."""

    def file_states(self) -> dict[str, FileState]:
        rows = self.reader().execute(
            "SELECT id, path, size, mtime_ns, hash, source, indexed_at FROM files").fetchall()
        return {r["path"]: FileState(**dict(r)) for r in rows}

    def file_state(self, path: str) -> FileState | None:
        row = self.reader().execute(
            "SELECT id, path, size, mtime_ns, hash, source, indexed_at FROM files WHERE path = ?",
            (path,)).fetchone()
        return FileState(**dict(row)) if row else None

    def read_text(self, table: str, column: str, row_id: int, max_bytes: int | None) -> str | None:
        """A text value read incrementally (blob I/O knows its size before
        reading any of it); None when it is over ``max_bytes`` or the row is
        gone (removed since it was listed)."""
        try:
            with self.reader().blobopen(table, column, row_id, readonly=True) as blob:
                if max_bytes is not None and len(blob) > max_bytes:
                    return None
                return blob.read().decode("utf-8", "replace")
        except sqlite3.OperationalError:
            return None

    def counts(self) -> dict[str, int]:
        with self.snapshot() as conn:
            return {
                "files": conn.execute("SELECT count(*) FROM files").fetchone()[0],
                "chunks": conn.execute("SELECT count(*) FROM chunks").fetchone()[0],
            }
