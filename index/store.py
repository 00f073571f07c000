"""The SQLite store: on-disk format, versioning, crash behaviour.

Format (docs/architecture.md, "Store format", says the same in prose):

- One SQLite file (default ``<root>/.ctxls/index.db``) in WAL mode. Every
  change of one file's rows (its ``files`` row, chunks, FTS rows and import
  edges) is one transaction, so a crash leaves each file either wholly old or
  wholly new; an interrupted cold index resumes where it stopped because
  finished files pass the (mtime, size) fast path next time.
- ``meta`` is a key/value table every version can read. It holds
  ``schema_version`` (table layout) and ``index_stamp`` (chunker and
  tokenizer versions: what file-sourced rows were derived with), and
  ``paths_generation``, renewed whenever a ``files`` row comes or goes.
- File-sourced tables (``files``, ``chunks``, ``symbols``, ``fts_*``,
  ``imports``, ``file_terms``) are derived data: on a stamp or schema
  mismatch they are dropped and rebuilt from the repository. The ``edits``
  log is history, not derivable, and is kept across rebuilds, as are
  ``vectors``, ``fast_vectors`` and the written memory (``memory``, ``memory_files``, their
  ``fts_memory_*`` tables, ``demand``, ``stash``).
- Opening a store of an older layout upgrades it in place: new tables are
  created, and file rows are rebuilt only when a version in
  ``_REBUILDS_FILE_ROWS`` lies between the two.
- A store written by a newer schema than this code knows is never modified:
  opening it raises :class:`StoreVersionError`.
- Opening tells "not ours / corrupt" from "cannot open now". An error that
  says "not now" (I/O, full disk, permissions, locked, read-only) moves
  nothing: the store stays unavailable (:class:`StoreUnavailable`, -32006, on
  every access) and every access after ``RETRY_S`` tries again. A ``dbPath``
  that is a folder, not SQLite, or another application's SQLite file is
  refused the same way and never touched. Only a file that is ours (the
  ``APPLICATION_ID`` in its header, or our ``meta`` table) and that SQLite
  proves corrupt is moved aside to ``index.db.corrupt-<ms>``; a new store is
  created and the written rows that can still be read (``CARRIED_TABLES``)
  are carried into it.
- A store that opens but is damaged (``PRAGMA quick_check`` on open, when a
  query meets corruption, and before a forced pass) is handled like a corrupt
  one: moved aside, rebuilt, its readable written rows carried in
  (``repair`` says so).
- A store without this user's seal (``index/trust.py``: one that came with
  the checkout, was copied from elsewhere or made by another user) is moved
  aside whole as ``index.db.quarantined-<ms>``; its written rows are served
  nowhere until ``import_quarantined`` (``ctxls trust-memory``).
- A write that fails for the store's sake (full disk, read-only, I/O) raises
  :class:`WriteFailed` (-32007): nothing was committed.
"""

from __future__ import annotations

import collections
import itertools
import logging
import os
import shutil
import sqlite3
import tempfile
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

from ctxls.index import trust
from ctxls.index.embed_text import embedding_hash
from ctxls.index.errors import EngineError, StoreUnavailable, WriteFailed
from ctxls.index.model import Chunk, ImportRef, SymbolDef
from ctxls.index.private import create_private_file, make_private_dir, restrict
from ctxls.index.tokenize import expand, expand_tokens

log = logging.getLogger(__name__)

# Bump when the table layout changes; say what changed.
# 1: files, chunks, fts_code, fts_doc, imports, edits.
# 2: chunks.embed_hash; vectors (kept across rebuilds, keyed by embedding-text hash).
# 3: written memory: memory, memory_files, fts_memory_{fact,episode,doc}, demand,
#    stash. Upgrading a 2 store only adds these tables; its file rows stay valid.
# 4: symbols (the definition table, apart from chunks, which packing joins);
#    fts_config (configuration files are a recall kind of their own).
# 5: file_terms (per file and chunk kind: how many chunks, and how many of
#    them hold each body term: ranking.file_bm25). File rows are rebuilt.
# 6: fast_vectors (the fast tier's vectors, semantic.FAST_TIER). Upgrading a 5
#    store only adds the table; its file rows stay valid.
SCHEMA_VERSION = 6
# Versions whose layout change invalidated file-derived rows: upgrading across
# one rebuilds them from the repository. Non-derived tables are never dropped;
# a version that changes one must convert it in _migrate().
_REBUILDS_FILE_ROWS = frozenset({2, 4, 5})

# Bump when the chunker or the tokenizer changes what rows they produce.
# 2: packing (no 1-2-line chunks), config kind.
# 3: C typedef names (`typedef long long mstime_t;`, a struct by its typedef name).
# 4: JavaScript assignments (`A.prototype.m = function`, `exports.f = …`) and objects of functions.
# 5: runs of short sibling definitions packed together (chunker.SHORT_CHARS).
# 6: Rust items inside item macros, C files read again with each #if's first
#    branch, JavaScript functions behind guards or calls, `module.exports =
#    class X`, chained aliases (`res.header = res.set = function …`).
# 7: Markdown headings titled by the words a reader sees (alt text, link text; no tags, no URLs);
#    JavaScript/TypeScript `export const X = <call, alias or new>` defines X;
#    Rust `const` and `static` items are definitions.
# 8: Python types made by an assignment (`X: TypeAlias = …`, `type X = …`,
#    namedtuple, NewType, Enum(…), TypedDict(…)) are definitions.
# 9: an anonymous JavaScript class or function exported through a chain of
#    assignments is named by the chain's first named target
#    (`exports = module.exports = internals.Server = class {…}`); the
#    functions of an `export default {…}` object (also `<T>{…}`,
#    `{…} satisfies T`) are definitions.
# 11: symbols.line (a definition's name row, past its decorators and comments)
#     and symbols.body_end (its whole extent): new columns of a file table,
#     which the stamp's change rebuilds.
CHUNKER_VERSION = 11
# 2: English stems of words (tokenize.stem).
TOKENIZER_VERSION = 2
INDEX_STAMP = f"chunker-{CHUNKER_VERSION}/tokenizer-{TOKENIZER_VERSION}"

# Chunk kinds with a full-text table of their own: code never competes with prose.
FTS_TABLE_BY_KIND = {"code": "fts_code", "doc": "fts_doc", "config": "fts_config"}
# Written memory, one full-text table per kind (stemmed: memory is prose).
MEMORY_FTS_TABLE_BY_KIND = {"fact": "fts_memory_fact", "episode": "fts_memory_episode",
                            "doc": "fts_memory_doc"}

_FILE_TABLES = ("files", "chunks", "symbols", "imports", "fts_code", "fts_doc", "fts_config",
                "file_terms")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS files (
    id INTEGER PRIMARY KEY,
    path TEXT NOT NULL UNIQUE,          -- repo-relative POSIX path
    language TEXT NOT NULL,
    size INTEGER NOT NULL,              -- bytes on disk (-1: from a buffer)
    mtime_ns INTEGER NOT NULL,          -- -1: from a buffer, never fast-pathed
    hash TEXT NOT NULL,                 -- content_hash of the indexed text
    source TEXT NOT NULL,               -- 'disk' | 'buffer'
    indexed_at INTEGER NOT NULL         -- ms
);
CREATE TABLE IF NOT EXISTS chunks (
    id INTEGER PRIMARY KEY,             -- also the rowid of its fts_* row
    file_id INTEGER NOT NULL REFERENCES files(id) ON DELETE CASCADE,
    symbol TEXT,
    name TEXT,                          -- last segment of symbol, lower-cased
    symbol_kind TEXT NOT NULL,
    kind TEXT NOT NULL,                 -- 'code' | 'doc'
    language TEXT NOT NULL,
    start_line INTEGER NOT NULL,
    end_line INTEGER NOT NULL,
    hash TEXT NOT NULL,
    embed_hash TEXT NOT NULL,           -- hash of embed_text.embedding_text()
    text TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS chunks_file ON chunks(file_id);
CREATE INDEX IF NOT EXISTS chunks_embed ON chunks(embed_hash);
CREATE INDEX IF NOT EXISTS chunks_name ON chunks(name);
CREATE TABLE IF NOT EXISTS symbols (
    file_id INTEGER NOT NULL REFERENCES files(id) ON DELETE CASCADE,
    symbol TEXT NOT NULL,               -- qualified: Session.request
    name TEXT NOT NULL,                 -- last segment of symbol, lower-cased
    symbol_kind TEXT NOT NULL,
    start_line INTEGER NOT NULL,        -- a container's header only (members are rows of their own)
    end_line INTEGER NOT NULL,
    hash TEXT NOT NULL,                 -- of those lines: the edit log compares it
    line INTEGER NOT NULL,              -- its name's row (past leading comments and decorators)
    body_end INTEGER NOT NULL           -- last row of the whole definition, members included
);
CREATE INDEX IF NOT EXISTS symbols_file ON symbols(file_id);
CREATE INDEX IF NOT EXISTS symbols_name ON symbols(name);
CREATE TABLE IF NOT EXISTS imports (
    file_id INTEGER NOT NULL REFERENCES files(id) ON DELETE CASCADE,
    spec TEXT NOT NULL,
    line INTEGER NOT NULL,
    target TEXT                         -- resolved repo path, or NULL
);
CREATE INDEX IF NOT EXISTS imports_file ON imports(file_id);
CREATE INDEX IF NOT EXISTS imports_target ON imports(target);
CREATE TABLE IF NOT EXISTS file_terms (
    file_id INTEGER NOT NULL,
    kind TEXT NOT NULL,                 -- the chunks' kind
    chunks INTEGER NOT NULL,            -- how many of the file's chunks are of that kind
    terms TEXT NOT NULL,                -- a line "<token> <how many chunks hold it>" per body token
    PRIMARY KEY (file_id, kind)
) WITHOUT ROWID;
CREATE VIRTUAL TABLE IF NOT EXISTS fts_code USING fts5(
    symbol, path, body, tokenize = "unicode61 tokenchars '_'");
CREATE VIRTUAL TABLE IF NOT EXISTS fts_doc USING fts5(
    symbol, path, body, tokenize = "unicode61 tokenchars '_'");
CREATE VIRTUAL TABLE IF NOT EXISTS fts_config USING fts5(
    symbol, path, body, tokenize = "unicode61 tokenchars '_'");
CREATE TABLE IF NOT EXISTS edits (
    id INTEGER PRIMARY KEY,
    path TEXT NOT NULL,
    symbol TEXT,
    kind TEXT NOT NULL,
    ts INTEGER NOT NULL,                -- ms
    origin TEXT                         -- "editor" | "disk"; NULL: logged before it was kept
);
CREATE INDEX IF NOT EXISTS edits_ts ON edits(ts);
CREATE TABLE IF NOT EXISTS vectors (
    -- AUTOINCREMENT: an id is never reused, so a queued ANN removal of a
    -- deleted vector can never hit a newer one.
    id INTEGER PRIMARY KEY AUTOINCREMENT,  -- the key in vectors.usearch
    text_hash TEXT NOT NULL UNIQUE,     -- chunks.embed_hash it embeds
    vec BLOB NOT NULL                   -- float16, L2-normalised
);
CREATE TABLE IF NOT EXISTS fast_vectors (
    -- The fast tier (semantic.FAST_TIER): another model's vectors of the
    -- chunks, the same shape; never ranked together with vectors.
    id INTEGER PRIMARY KEY AUTOINCREMENT,  -- the key in fast_vectors.usearch
    text_hash TEXT NOT NULL UNIQUE,
    vec BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS memory (
    -- Written memory (index/memory/sqlite.py). AUTOINCREMENT: an id is never reused;
    -- it is the rowid of the row's fts_memory_* row, and enumerate pages in id
    -- order (an upsert keeps its row's id).
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    scope TEXT NOT NULL,                -- a tenant, or '@global' (the shared tier)
    key TEXT NOT NULL,                  -- the caller's id
    part INTEGER NOT NULL,              -- segment of an ingested document (else 0)
    kind TEXT NOT NULL,                 -- 'fact' | 'episode' | 'doc'
    author TEXT NOT NULL,               -- 'human' | 'agent' (the protocol's "by")
    format TEXT NOT NULL,
    symbol TEXT,                        -- heading path of an ingested segment
    start_line INTEGER NOT NULL,        -- the segment's lines in the whole text
    end_line INTEGER NOT NULL,
    text TEXT NOT NULL,
    meta TEXT,                          -- the caller's JSON object, verbatim
    session TEXT,                       -- the writing daemon's session option
    created_at INTEGER NOT NULL,        -- ms: when this version was written
    occurred_at INTEGER NOT NULL,       -- ms
    expires_at INTEGER,                 -- ms: hidden from every read once passed
    embed_hash TEXT NOT NULL,           -- its vector's vectors.text_hash
    UNIQUE (scope, key, part)
);
CREATE INDEX IF NOT EXISTS memory_kind ON memory(kind, scope);
CREATE INDEX IF NOT EXISTS memory_recent ON memory(kind, occurred_at);
CREATE INDEX IF NOT EXISTS memory_key ON memory(key);
CREATE INDEX IF NOT EXISTS memory_embed ON memory(embed_hash);
CREATE INDEX IF NOT EXISTS memory_expires ON memory(expires_at) WHERE expires_at IS NOT NULL;
CREATE TABLE IF NOT EXISTS memory_files (
    scope TEXT NOT NULL,                -- an ingested upload, whole (its rows are in memory)
    key TEXT NOT NULL,
    filename TEXT NOT NULL,
    mode TEXT NOT NULL,                 -- 'chunked' | 'blob'
    data BLOB NOT NULL,                 -- byte-exact
    PRIMARY KEY (scope, key)
);
CREATE VIRTUAL TABLE IF NOT EXISTS fts_memory_fact USING fts5(
    symbol, path, body, tokenize = "porter unicode61 tokenchars '_'");
CREATE VIRTUAL TABLE IF NOT EXISTS fts_memory_episode USING fts5(
    symbol, path, body, tokenize = "porter unicode61 tokenchars '_'");
CREATE VIRTUAL TABLE IF NOT EXISTS fts_memory_doc USING fts5(
    symbol, path, body, tokenize = "porter unicode61 tokenchars '_'");
CREATE TABLE IF NOT EXISTS demand (
    id INTEGER PRIMARY KEY,
    path TEXT NOT NULL,                 -- a file path or a memory id
    kind TEXT NOT NULL,
    symbol TEXT,
    action TEXT NOT NULL,               -- 'recall' | 'fetch'
    scope TEXT,                         -- a memory row's scope; NULL for a file
    ts INTEGER NOT NULL                 -- ms
);
CREATE INDEX IF NOT EXISTS demand_path ON demand(path, kind, action);
CREATE TABLE IF NOT EXISTS stash (
    id TEXT PRIMARY KEY,
    text TEXT NOT NULL,
    bytes INTEGER NOT NULL,             -- UTF-8 size
    created_at INTEGER NOT NULL         -- ms
);
"""


# The tables of vectors, one per tier (semantic.py): each maps an embedding-text
# hash to one model's vector.
VECTOR_TABLES = ("vectors", "fast_vectors")


def _unreferenced(table: str) -> str:
    """A row of ``table`` nothing embeds: a vector is shared by chunks and memory."""
    return (f"NOT EXISTS (SELECT 1 FROM chunks c WHERE c.embed_hash = {table}.text_hash) "
            f"AND NOT EXISTS (SELECT 1 FROM memory m WHERE m.embed_hash = {table}.text_hash)")


# Written in every store's header (PRAGMA application_id, "ctls"): the marker
# that makes a damaged file provably ours.
APPLICATION_ID = 0x63746C73
# Store.files_version values (never one twice in a process).
_FILES_VERSIONS = itertools.count(1)
_SQLITE_MAGIC = b"SQLite format 3\x00"
# Seconds between attempts to open an unavailable store.
RETRY_S = 1.0
# Reads check that the store file is still the one open at most this often
# (seconds); writes check before and after every transaction.
IDENTITY_CHECK_S = 0.5
# Written rows a corrupt store's replacement inherits (nothing else is
# irreplaceable: file rows are re-derived, vectors re-embedded).
CARRIED_TABLES = ("memory", "memory_files", "stash", "edits")
# A store moved aside as not this user's own: <db>.quarantined-<ms>.
QUARANTINE_LABEL = "quarantined"
# SQLite primary result codes (sqlite3.h) meaning "not now", never "not ours".
_TRANSIENT_REASONS = {3: "permission", 5: "locked", 6: "locked", 7: "io", 8: "readonly",
                      10: "io", 13: "full", 14: "cantopen", 15: "locked", 23: "permission"}
_CORRUPT_CODES = frozenset({11, 26})  # SQLITE_CORRUPT, SQLITE_NOTADB


class StoreVersionError(StoreUnavailable):
    """The store was written by a newer ctxls; it is left untouched."""

    def __init__(self, db_path: str, detail: str):
        super().__init__(db_path, "version", detail)


def storage_reason(exc: sqlite3.Error) -> str | None:
    """What a SQLite error says about the store ("full", "io", "corrupt", …),
    or None for an error of the statement itself (a bug, a constraint)."""
    if isinstance(exc, sqlite3.ProgrammingError) and "closed database" in str(exc):
        # A request still running when its folder was removed (or the daemon
        # stops): the store is gone for it, not broken by it.
        return "closed"
    code = getattr(exc, "sqlite_errorcode", None)
    if code is None:
        return None
    primary = code & 0xFF
    if primary in _CORRUPT_CODES:
        return "corrupt"
    return _TRANSIENT_REASONS.get(primary)


def store_error(exc: sqlite3.Error, db_path: str, writing: bool) -> EngineError | None:
    """The protocol error for a storage failure, or None when ``exc`` is not one."""
    reason = storage_reason(exc)
    if reason is None:
        return None
    if writing:
        return WriteFailed(db_path, reason, str(exc))
    return StoreUnavailable(db_path, reason, str(exc))


@dataclass(frozen=True)
class FileState:
    id: int
    path: str
    size: int
    mtime_ns: int
    hash: str
    source: str


@dataclass(frozen=True)
class FileRecord:
    path: str
    language: str
    size: int
    mtime_ns: int
    hash: str
    source: str


# (connection id, name) -> (the connection, the version it was built at, the value). The
# connection is held so its id cannot be reused by another while cached; the
# lock is for recall threads that each bring their own reader connection.
_CONNECTION_CACHES: dict[tuple[int, str], tuple[sqlite3.Connection, object, object]] = {}
_CONNECTION_CACHE_SIZE = 64
_CONNECTION_CACHE_LOCK = threading.Lock()


def connection_cache(conn: sqlite3.Connection, name: str, version: Callable[[sqlite3.Connection], object],
                     build: Callable[[sqlite3.Connection], object]):
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


def paths_generation(conn: sqlite3.Connection) -> str | None:
    """Changes in every transaction that adds or removes a ``files`` row
    (a file's id and path never change otherwise)."""
    row = conn.execute("SELECT value FROM meta WHERE key = 'paths_generation'").fetchone()
    return row[0] if row else None


def _new_paths_generation(conn: sqlite3.Connection) -> None:
    conn.execute("INSERT INTO meta(key, value) VALUES ('paths_generation', '1') "
                 "ON CONFLICT(key) DO UPDATE SET value = CAST(value AS INTEGER) + 1")


def fts_generation(conn: sqlite3.Connection, table: str) -> object:
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


# Beyond this many changed tokens (a file rewritten, not edited), one parse
# and rewrite of the row is cheaper than editing it token by token.
_IN_PLACE_TERM_EDITS = 64


def _update_file_terms(conn: sqlite3.Connection, file_id: int, kind: str, chunk_change: int,
                       term_changes: collections.Counter) -> None:
    """Apply one file's chunk and term count changes of ``kind`` to its
    ``file_terms`` row (one row a file, not one a token, keeps a cold index
    of django within a second of what it cost without it).

    An edit inside one function drops the old chunk's tokens and adds the
    new one's, so most changes cancel: only the tokens whose count moved are
    edited in place, and an unchanged row is not written at all. Parsing and
    rewriting the whole row on every keystroke cost 1.5 ms on django's
    largest file, a third of the didChange budget's spread."""
    changes = {token: change for token, change in term_changes.items() if change}
    if not changes and not chunk_change:
        return
    row = conn.execute("SELECT chunks, terms FROM file_terms WHERE file_id = ? AND kind = ?",
                       (file_id, kind)).fetchone()
    chunks, terms = row if row else (0, "\n")
    chunks += chunk_change
    if chunks <= 0:
        conn.execute("DELETE FROM file_terms WHERE file_id = ? AND kind = ?", (file_id, kind))
        return
    if len(changes) > _IN_PLACE_TERM_EDITS:
        counts = parse_file_terms(terms)
        counts.update(changes)
        terms = "".join(f"\n{token} {count}" for token, count in counts.items() if count > 0) + "\n"
        changes = {}
    appended = []
    for token, change in changes.items():
        start = terms.find(f"\n{token} ")
        if start < 0:
            if change > 0:
                appended.append(f"{token} {change}\n")
            continue
        end = terms.index("\n", start + 1)
        count = int(terms[start + len(token) + 2:end]) + change
        terms = terms[:start] + (f"\n{token} {count}" if count > 0 else "") + terms[end:]
    terms += "".join(appended)
    conn.execute("INSERT OR REPLACE INTO file_terms(file_id, kind, chunks, terms) VALUES (?, ?, ?, ?)",
                 (file_id, kind, chunks, terms))


def now_ms() -> int:
    return int(time.time() * 1000)


def _symbol_name(symbol: str | None) -> str | None:
    if not symbol:
        return None
    return symbol.rsplit(".", 1)[-1].lower()


def _is_ours(header: bytes) -> bool:
    """The file header carries our application id."""
    return (header.startswith(_SQLITE_MAGIC) and len(header) >= 72
            and int.from_bytes(header[68:72], "big") == APPLICATION_ID)


def _salvage_connection(path: str, read_only: bool) -> sqlite3.Connection:
    """A connection to a damaged store file that reads what is left: with
    ``writable_schema`` SQLite skips the schema entries it cannot load (a
    truncated file's tables whose root pages are gone) instead of refusing
    every table. Nothing writes through it."""
    uri = Path(path).resolve().as_uri() + ("?mode=ro" if read_only else "")
    source = sqlite3.connect(uri, uri=True, isolation_level=None)
    source.execute("PRAGMA writable_schema = ON")
    return source


def _readable_rows(source: sqlite3.Connection, table: str, columns: list[str]) -> Iterator[tuple]:
    """``columns`` of every row of ``table`` that SQLite can still read, in
    rowid order: 256 rows at a time, one at a time after a failure, hopping
    over a damaged stretch with growing strides."""
    select = (f"SELECT rowid, {', '.join(columns)} FROM {table} "
              "WHERE rowid > ? ORDER BY rowid LIMIT ?")
    last, limit, stride = -(1 << 63), 256, 1
    while True:
        try:
            rows = source.execute(select, (last, limit)).fetchall()
        except sqlite3.Error:
            if limit > 1:
                limit = 1
                continue
            last, stride = last + stride, stride * 2
            if last >= (1 << 63) - 1 or stride > (1 << 48):
                return
            continue
        if not rows:
            return
        stride = 1
        for row in rows:
            yield tuple(row[1:])
        last = rows[-1][0]


class Store:
    """One SQLite database: a writer connection behind a lock, and one
    read connection per thread (WAL gives each reader a consistent snapshot)."""

    def __init__(self, db_path: str | os.PathLike[str] | None):
        # None: a private throw-away store (buffers outside every workspace
        # folder), a temp file so it behaves exactly like a real one (WAL).
        self._temp_dir = tempfile.mkdtemp(prefix="ctxls-") if db_path is None else None
        self.db_path = str(db_path) if db_path is not None else os.path.join(self._temp_dir, "index.db")
        self._write_lock = threading.RLock()
        self._local = threading.local()
        self._readers: list[sqlite3.Connection] = []
        self._readers_lock = threading.Lock()
        self.rebuilt = False  # True when file rows were dropped on open
        # Per vector table: ids deleted here, not yet removed from its ANN index
        # (semantic.py drains it).
        self.removed_vector_ids: dict[str, collections.deque[int]] = {
            table: collections.deque() for table in VECTOR_TABLES}
        self._writer: sqlite3.Connection | None = None
        # Renewed after each commit that changed a file's rows (put_file,
        # delete_file): what is derived from the code (code lens titles) holds
        # for one value. Unique in the process, whichever store.
        self.files_version = next(_FILES_VERSIONS)
        self._files_touched = False
        # Bumped by every (re)open: a thread's read connection of an older one is replaced.
        self._generation = 0
        self.error: StoreUnavailable | None = None  # set while the store cannot be used
        self._retry_at = 0.0
        # (st_dev, st_ino) of the file opened: a different one means it was
        # deleted or replaced under us.
        self._identity: tuple[int, int] | None = None
        self._identity_checked = 0.0
        # Called after a vanished store was created anew (its file rows are gone).
        self.on_replaced: list[Callable[[], None]] = []
        # Whether stores are sealed and checked (index/trust.py): not a throw-away one.
        self._sealed = db_path is not None
        # Where this process moved a corrupt or untrusted store (its caches beside it are stale).
        self.moved_aside: str | None = None
        self._quarantine_counts: dict[tuple[str, int, int], int] = {}
        # Set when a query met corruption: the next access checks and repairs.
        self._suspect: str | None = None
        # The last repair or quarantine of this process: status reports it.
        self.repair: dict | None = None
        with self._write_lock:
            try:
                self._open()
            except StoreUnavailable as exc:
                self._unavailable(exc)

    # -- opening -------------------------------------------------------------

    def _unavailable(self, exc: StoreUnavailable) -> None:
        if self.error is None or self.error.message != exc.message:
            log.error("%s", exc.message)
        self.error = exc
        self._retry_at = time.monotonic() + RETRY_S

    def _ready(self, verify: bool = False) -> None:
        """Return when the store can be used; else retry opening it (at most
        every RETRY_S) and raise StoreUnavailable. Also notices a store file
        deleted or replaced under us (always when ``verify``, else at most
        every IDENTITY_CHECK_S) and creates it anew: a write must never land
        in a file nobody can open again."""
        replaced = False
        if self._suspect is not None and self.error is None:
            replaced = self._check_suspect()
        if self.error is None and not replaced:
            now = time.monotonic()
            if not verify and now < self._identity_checked + IDENTITY_CHECK_S:
                return
            self._identity_checked = now
            if self._file_identity() == self._identity:
                return
            with self._write_lock:
                if self.error is None and self._file_identity() != self._identity:
                    log.warning("index store %s was deleted or replaced while open; "
                                "opening it anew", self.db_path)
                    self.error = StoreUnavailable(self.db_path, "missing", "the store file vanished")
                    self._retry_at = 0.0
                    replaced = True
        if self.error is not None:
            with self._write_lock:
                if self.error is not None and time.monotonic() >= self._retry_at:
                    moved_aside = self.moved_aside
                    try:
                        self._open()
                    except StoreUnavailable as exc:
                        self._unavailable(exc)
                    else:
                        log.warning("index store %s is available", self.db_path)
                        replaced = replaced or self.moved_aside != moved_aside
                error = self.error
        else:
            error = None
        if replaced and error is None:
            for listener in self.on_replaced:  # outside the lock: they may take their own
                listener()
        if error is not None:
            raise error.with_traceback(None)

    def _file_identity(self) -> tuple[int, int] | None:
        try:
            st = os.stat(self.db_path)
        except OSError:
            return None
        return st.st_dev, st.st_ino

    def _header(self) -> bytes:
        """The file's first 100 bytes (b"" when it does not exist yet)."""
        try:
            with open(self.db_path, "rb") as fh:
                return fh.read(100)
        except FileNotFoundError:
            return b""
        except OSError as exc:
            raise StoreUnavailable(self.db_path, "permission" if isinstance(exc, PermissionError)
                                   else "io", exc.strerror or str(exc)) from exc

    def _open(self) -> None:
        """Open (or create) the store; StoreUnavailable when it cannot be used now
        or is not ours. Moves a file aside only when it is ours and corrupt."""
        path = Path(self.db_path)
        if path.is_dir():
            raise StoreUnavailable(self.db_path, "folder",
                                   "dbPath is a folder, not a ctxls store; refusing to use it")
        header = self._header()
        if header and not header.startswith(_SQLITE_MAGIC):
            raise StoreUnavailable(self.db_path, "foreign",
                                   "dbPath is not a SQLite database; refusing to use or move it")
        try:
            make_private_dir(path.parent)
            if not header:
                create_private_file(path)
        except OSError as exc:
            raise StoreUnavailable(self.db_path, "permission" if isinstance(exc, PermissionError)
                                   else "io", exc.strerror or str(exc)) from exc
        self._uri = path.resolve().as_uri()
        if not header:
            self._set_aside_orphans()
        conn: sqlite3.Connection | None = None
        meta: dict[str, str] = {}
        try:
            conn = self._connect()
            # Before anything writes (even the journal mode): is it ours?
            tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            if conn.execute("PRAGMA application_id").fetchone()[0] != APPLICATION_ID and tables \
                    and "meta" not in tables:
                # No marker (a store from before it, or someone else's): ours
                # only if our meta table reads.
                raise StoreUnavailable(self.db_path, "foreign",
                                       "dbPath is another application's SQLite database; "
                                       "refusing to use or move it")
            if "meta" in tables:
                meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
            # Before this open writes anything (the journal mode, the stamp).
            unchanged = bool(header) and self._unchanged_since_checked(meta.get("store_id"))
            # Before anything writes: are its written rows this user's own?
            distrust = trust.problem(meta, self.db_path) if self._sealed and tables else None
            if distrust is not None:
                conn.close()
                conn = None
                self._quarantine(distrust)
                return
            self._install(conn)
            if self._sealed and meta.get("store_id") is None:
                self._seal()  # a new store, or one from before seals that git says is not the checkout's
            damage = self._damage() if header and not unchanged else None
            if damage is not None:
                conn = None  # the writer now: _repair closes it
                self._repair(damage, meta)
        except sqlite3.Error as exc:
            if conn is not None:
                conn.close()
            reason = storage_reason(exc) or "io"
            if reason != "corrupt":
                raise StoreUnavailable(self.db_path, reason, str(exc)) from exc
            if not _is_ours(header):
                raise StoreUnavailable(
                    self.db_path, "corrupt",
                    f"{exc}; it carries no ctxls marker, so it is left as it is "
                    "(move it away and ctxls builds a new store)") from exc
            self._replace_corrupt(exc, meta)
        except BaseException:
            if conn is not None:
                conn.close()
            raise

    def _set_aside_orphans(self) -> None:
        """A -wal/-shm without its database (deleted under a running daemon)
        would be replayed into the new file: move them aside first."""
        if os.path.exists(self.db_path):
            return
        stamp = now_ms()
        for suffix in ("-wal", "-shm"):
            if os.path.exists(self.db_path + suffix):
                try:
                    os.replace(self.db_path + suffix, f"{self.db_path}.orphan-{stamp}{suffix}")
                except OSError as exc:
                    raise StoreUnavailable(self.db_path, "io", f"cannot move the stale {suffix} "
                                           f"aside: {exc.strerror or exc}") from exc

    def _install(self, conn: sqlite3.Connection) -> None:
        """Make ``conn`` the writer of a freshly opened store (WAL journal) and migrate it."""
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
        old, self._writer = self._writer, conn
        if old is not None:
            old.close()
        try:
            self._migrate()
        except BaseException:
            self._writer = None
            raise
        self._generation += 1
        for suffix in ("", "-wal", "-shm"):  # a store made before modes were enforced
            restrict(self.db_path + suffix)
        self._identity = self._file_identity()
        self.error = None

    def _replace_corrupt(self, cause: sqlite3.Error | str, meta: dict[str, str]) -> None:
        """Move our corrupt store aside, create a new one, carry the written
        rows that still read, when they are this user's own (else the file is
        quarantined like any unsealed store: its rows wait for `trust-memory`)."""
        if not meta:  # the seal's rows may still read where the first look failed
            meta = dict(self._rows_of(self.db_path, "meta", ["key", "value"]))
        distrust = trust.problem(meta, self.db_path) if self._sealed else None
        if distrust is not None:
            self._quarantine(f"corrupt ({cause}), and {distrust}")
            return
        aside = self._move_aside("corrupt", f"corrupt ({cause})")
        log.error("index store %s is corrupt (%s); moved to %s and rebuilding",
                  self.db_path, cause, aside)
        self._create_anew()
        carried = self._carry_over(aside)
        self.repair = {"at": now_ms(), "cause": str(cause), "movedTo": aside, "carried": carried}
        log.warning("carried into the new store from %s: %s", aside, carried)

    def _quarantine(self, why: str) -> None:
        """Move a store whose written rows are not this user's own aside
        whole (its index and vectors were made elsewhere too) and start anew;
        `import_quarantined` carries its rows in when the user says so."""
        aside = self._move_aside(QUARANTINE_LABEL, why)
        self.repair = {"at": now_ms(), "cause": why, "movedTo": aside, "carried": {}}
        log.warning("index store %s is not trusted: %s. Moved to %s; its written memory is "
                    "quarantined (not served) until `ctxls trust-memory` imports it",
                    self.db_path, why, aside)
        self._create_anew()

    def _damage(self, fts: bool = False) -> str | None:
        """What SQLite finds wrong with the open store (quick_check: every
        page and b-tree; with ``fts`` also the full-text tables' own
        structure, which quick_check does not read), None when sound."""
        conn = self._connect()  # its own page cache: the file as it is on disk now
        try:
            found = [r[0] for r in conn.execute("PRAGMA quick_check(1)")]
            if found != ["ok"]:
                return found[0] if found else "quick_check gave no answer"
            if fts:
                for table in (*FTS_TABLE_BY_KIND.values(), *MEMORY_FTS_TABLE_BY_KIND.values()):
                    conn.execute(f"INSERT INTO {table}({table}) VALUES ('integrity-check')")
        except sqlite3.Error as exc:
            if storage_reason(exc) == "corrupt":
                return str(exc)
            raise
        finally:
            conn.close()
        return None

    def _repair(self, damage: str, meta: dict[str, str]) -> None:
        """Replace the open, damaged store (see _replace_corrupt)."""
        if self._writer is not None:
            self._writer.close()
            self._writer = None
        self._replace_corrupt(damage, meta)

    def _check_suspect(self) -> bool:
        """A query met corruption: check the store whole and repair it when
        damaged. True when it was replaced (its file rows are gone)."""
        with self._write_lock:
            cause, self._suspect = self._suspect, None
            if cause is None or self.error is not None:
                return False
            try:
                damage = self._damage(fts=True)
                if damage is None:
                    log.info("index store %s: %s, and a check finds it sound", self.db_path, cause)
                    return False
                meta = dict(self._rows_of(self.db_path, "meta", ["key", "value"]))
                self._repair(f"{cause}; {damage}" if damage != cause else cause, meta)
            except StoreUnavailable as exc:
                self._unavailable(exc)
                return False
            except sqlite3.Error as exc:  # could not check now (locked, I/O): the next corrupt error asks again
                log.warning("index store %s: %s; could not check it: %s", self.db_path, cause, exc)
                return False
            return True

    def suspect(self, cause: str) -> None:
        """A query met corruption: the next access checks the store and
        repairs it when it is damaged."""
        self._suspect = cause

    def failure(self, exc: sqlite3.Error, writing: bool) -> EngineError | None:
        """The protocol error for a storage failure met while using this store
        (None when ``exc`` is not one); corruption makes the store suspect."""
        error = store_error(exc, self.db_path, writing)
        if error is not None and storage_reason(exc) == "corrupt":
            self.suspect(str(exc))
        return error

    def verify(self) -> None:
        """Check the whole store now and repair it when damaged (a forced
        pass starts here: `index --force` is the remedy that always works)."""
        self.suspect("a forced index pass checks the store")
        self._ready()

    def _move_aside(self, label: str, why: str) -> str:
        aside = f"{self.db_path}.{label}-{now_ms()}"
        try:
            for suffix in ("", "-wal", "-shm"):
                if os.path.exists(self.db_path + suffix):
                    os.replace(self.db_path + suffix, aside + suffix)
        except OSError as exc:
            raise StoreUnavailable(self.db_path, "io", f"{why}, and cannot be moved "
                                   f"aside: {exc.strerror or exc}") from exc
        self.moved_aside = aside
        return aside

    def _create_anew(self) -> None:
        """A new, sealed store where one was moved aside."""
        self.rebuilt = True
        conn = None
        try:
            create_private_file(Path(self.db_path))
            conn = self._connect()
            self._install(conn)
            if self._sealed:
                self._seal()
        except sqlite3.Error as exc:
            if conn is not None:
                conn.close()
            raise StoreUnavailable(self.db_path, storage_reason(exc) or "io", str(exc)) from exc
        except OSError as exc:
            raise StoreUnavailable(self.db_path, "io", exc.strerror or str(exc)) from exc

    def _seal(self) -> None:
        """Mark the store as this user's, for this place (index/trust.py)."""
        seal = trust.new_seal(self.db_path)
        if seal is None:
            return
        with self._transaction() as conn:
            conn.executemany("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", seal.items())

    # -- quarantine ----------------------------------------------------------

    def quarantined(self) -> list[dict]:
        """The stores moved aside as untrusted that are still waiting, with how
        many written memory rows each holds (counted once per file version)."""
        if self._temp_dir is not None:
            return []
        folder, name = os.path.split(self.db_path)
        prefix = f"{name}.{QUARANTINE_LABEL}-"
        found = []
        try:
            names = sorted(os.listdir(folder or "."))
        except OSError:
            return []
        for entry in names:
            if not entry.startswith(prefix) or entry.endswith(("-wal", "-shm")):
                continue
            path = os.path.join(folder, entry)
            found.append({"path": path, "memory": self._quarantined_rows(path)})
        return found

    def _quarantined_rows(self, path: str) -> int:
        try:
            st = os.stat(path)
        except OSError:
            return 0
        version = (path, st.st_size, st.st_mtime_ns)
        if version not in self._quarantine_counts:
            self._quarantine_counts[version] = sum(1 for _ in self._rows_of(path, "memory", ["key"]))
        return self._quarantine_counts[version]

    @staticmethod
    def _rows_of(path: str, table: str, columns: list[str]) -> Iterator[tuple]:
        """The readable rows of a damaged or quarantined store file (read-only)."""
        try:
            source = _salvage_connection(path, read_only=True)
        except sqlite3.Error:
            return
        try:
            yield from _readable_rows(source, table, columns)
        except sqlite3.Error:
            return
        finally:
            source.close()

    def import_quarantined(self) -> dict:
        """Carry the written rows of every quarantined store into this one (the
        user vouches for them), then remove those files; rows whose (scope,
        id) this store already holds keep this store's version."""
        stores = self.quarantined()
        carried: dict[str, int] = {table: 0 for table in CARRIED_TABLES}
        for entry in stores:
            for table, count in self._carry_over(entry["path"]).items():
                carried[table] += count
            for suffix in ("", "-wal", "-shm"):
                try:
                    os.remove(entry["path"] + suffix)
                except FileNotFoundError:
                    pass
            log.warning("imported the written rows of %s on the user's word", entry["path"])
        return {"stores": [entry["path"] for entry in stores], "imported": carried}

    # -- connections -------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self._uri, uri=True, check_same_thread=False,
                               isolation_level=None, timeout=10.0)
        conn.row_factory = sqlite3.Row
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute("PRAGMA busy_timeout = 10000")
        return conn

    def _carry_over(self, aside: str) -> dict[str, int]:
        """Copy the rows of CARRIED_TABLES that can still be read from the
        file ``aside`` (corrupt, or quarantined and now vouched for) into this
        store; per table, how many."""
        carried: dict[str, int] = {}
        try:
            source = _salvage_connection(aside, read_only=False)
        except sqlite3.Error:
            return carried
        try:
            for table in CARRIED_TABLES:
                try:
                    old_columns = {r[1] for r in source.execute(f"PRAGMA table_info({table})")}
                except sqlite3.Error:
                    continue
                # A rowid key is renumbered here: the rows may join a store that has its own.
                columns = [r[1] for r in self._writer.execute(f"PRAGMA table_info({table})")
                           if r[1] in old_columns and not (r[5] == 1 and r[2].upper() == "INTEGER")]
                if not columns:
                    continue
                insert = (f"INSERT OR IGNORE INTO {table}({', '.join(columns)}) "
                          f"VALUES ({', '.join('?' * len(columns))})")
                count = 0
                with self.write() as conn:
                    for row in _readable_rows(source, table, columns):
                        try:
                            cursor = conn.execute(insert, row)
                        except sqlite3.IntegrityError:  # a damaged row: leave it behind
                            continue
                        if cursor.rowcount != 1:
                            continue
                        count += 1
                        if table == "memory":
                            values = dict(zip(columns, row))
                            self.put_memory_text(conn, cursor.lastrowid, values["kind"], values["key"],
                                                 values.get("symbol"), values["text"])
                carried[table] = count
        finally:
            source.close()
        return carried

    def reader(self) -> sqlite3.Connection:
        """This thread's read connection."""
        self._ready()
        conn = getattr(self._local, "conn", None)
        if conn is None or self._local.generation != self._generation:
            try:
                conn = self._connect()
                conn.execute("PRAGMA query_only = ON")
            except sqlite3.Error as exc:
                raise (store_error(exc, self.db_path, writing=False)
                       or StoreUnavailable(self.db_path, "io", str(exc))) from exc
            self._local.conn, self._local.generation = conn, self._generation
            with self._readers_lock:
                self._readers.append(conn)
        return conn

    @contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction; callers hold it briefly (one file or batch).
        A storage failure is WriteFailed: nothing of it was committed."""
        self._ready(verify=True)
        with self._write_lock:
            if self.error is not None:  # lost since the check above
                raise self.error.with_traceback(None)
            try:
                with self._transaction() as conn:
                    yield conn
            except sqlite3.Error as exc:
                raise self._write_error(exc) from exc
            finally:
                touched, self._files_touched = self._files_touched, False
            if touched:
                self.files_version = next(_FILES_VERSIONS)
            if self._file_identity() != self._identity:
                # Committed into a file deleted meanwhile: not durable, not acknowledged.
                raise WriteFailed(self.db_path, "missing",
                                  "the store file vanished during the write; try again")

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        conn = self._writer
        assert conn is not None
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield conn
        except BaseException:
            self._rollback(conn)
            raise
        try:
            conn.execute("COMMIT")
        except BaseException:
            self._rollback(conn)
            raise

    def _write_error(self, exc: sqlite3.Error) -> BaseException:
        """WriteFailed for a storage failure; the statement's own error otherwise."""
        return self.failure(exc, writing=True) or exc

    @staticmethod
    def _rollback(conn: sqlite3.Connection) -> None:
        if conn.in_transaction:
            try:
                conn.execute("ROLLBACK")
            except sqlite3.Error:  # the failure that got us here already says why
                pass

    def close(self) -> None:
        with self._readers_lock:
            for conn in self._readers:
                conn.close()
            self._readers.clear()
        with self._write_lock:
            store_id = None
            if self._writer is not None:
                if self._sealed and self.error is None and self._suspect is None:
                    store_id = self._store_id()
                self._writer.close()
            if store_id is not None and self._check_signature() is not None:
                trust.record_checked(store_id, self._check_signature())
        if self._temp_dir is not None:
            shutil.rmtree(self._temp_dir, ignore_errors=True)

    # -- the whole-file check's shortcut -------------------------------------

    def _store_id(self) -> str | None:
        try:
            row = self._writer.execute("SELECT value FROM meta WHERE key = 'store_id'").fetchone()
        except sqlite3.Error:
            return None
        return row[0] if row else None

    def _check_signature(self) -> tuple[int, int, int] | None:
        """(inode, size, mtime) of a store file left whole: no write-ahead log
        pending (closed by its last user), else None (check it next time)."""
        try:
            if os.path.getsize(self.db_path + "-wal") > 0:
                return None
        except OSError:
            pass
        try:
            st = os.stat(self.db_path)
        except OSError:
            return None
        return st.st_ino, st.st_size, st.st_mtime_ns

    def _unchanged_since_checked(self, store_id: str | None) -> bool:
        """This user's process closed the store last and nothing has touched
        the file since: its whole-file check would find what that process
        left, so opening skips it (a CLI verb without a daemon opens the store
        every time). Any other change (another writer, garbage, truncation)
        changes the signature and the check runs."""
        signature = self._check_signature()
        return (self._sealed and signature is not None and store_id is not None
                and trust.unchanged_since_checked(store_id, signature))

    # -- versioning --------------------------------------------------------

    def _migrate(self) -> None:
        """Bring the schema up to date (raw SQLite errors: _open() classifies them)."""
        with self._transaction() as conn:
            conn.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
            meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
            schema = int(meta.get("schema_version", SCHEMA_VERSION))
            if schema > SCHEMA_VERSION:
                raise StoreVersionError(
                    self.db_path, f"it has schema {schema}; this ctxls reads up to {SCHEMA_VERSION} "
                    "(left untouched: use a newer ctxls or another dbPath)")
            outdated = any(v in _REBUILDS_FILE_ROWS for v in range(schema + 1, SCHEMA_VERSION + 1))
            # Memory's FTS rows are expand() output too, but memory is not in the
            # repository: they are re-derived from the memory rows, never dropped.
            retokenize_memory = meta.get("index_stamp", INDEX_STAMP) != INDEX_STAMP
            if "index_stamp" in meta and (meta["index_stamp"] != INDEX_STAMP or outdated):
                log.info("index stamp %s -> %s: rebuilding file rows", meta["index_stamp"], INDEX_STAMP)
                for table in _FILE_TABLES:
                    conn.execute(f"DROP TABLE IF EXISTS {table}")
                _new_paths_generation(conn)
                self.rebuilt = True
        # After the version check: a newer store is never modified.
        with self._write_lock:
            if self._writer.execute("PRAGMA application_id").fetchone()[0] != APPLICATION_ID:
                self._writer.execute(f"PRAGMA application_id = {APPLICATION_ID}")
                # Into the file's own header now: a store damaged before the next
                # checkpoint is still provably ours.
                self._writer.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        # executescript() commits implicitly, so the DDL runs outside write().
        with self._write_lock:
            self._writer.executescript(_SCHEMA)
            # Added to the edit log after schema 5: a nullable column older code
            # ignores, so no version (nor any rebuild) is needed for it.
            if "origin" not in {r[1] for r in self._writer.execute("PRAGMA table_info(edits)")}:
                self._writer.execute("ALTER TABLE edits ADD COLUMN origin TEXT")
        with self._transaction() as conn:
            if retokenize_memory:  # in the stamp's transaction: a crash redoes it
                for table in MEMORY_FTS_TABLE_BY_KIND.values():
                    conn.execute(f"DELETE FROM {table}")
                for row in conn.execute("SELECT id, kind, key, symbol, text FROM memory").fetchall():
                    self.put_memory_text(conn, *row)
            conn.executemany(
                "INSERT INTO meta(key, value) VALUES (?, ?) "
                "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                [("schema_version", str(SCHEMA_VERSION)), ("index_stamp", INDEX_STAMP)],
            )

    def meta(self) -> dict[str, str]:
        return dict(self.reader().execute("SELECT key, value FROM meta").fetchall())

    # -- file rows ---------------------------------------------------------

    def file_states(self) -> dict[str, FileState]:
        rows = self.reader().execute(
            "SELECT id, path, size, mtime_ns, hash, source FROM files").fetchall()
        return {r["path"]: FileState(**dict(r)) for r in rows}

    def file_state(self, path: str) -> FileState | None:
        row = self.reader().execute(
            "SELECT id, path, size, mtime_ns, hash, source FROM files WHERE path = ?",
            (path,)).fetchone()
        return FileState(**dict(row)) if row else None

    def delete_file(self, conn: sqlite3.Connection, path: str) -> bool:
        row = conn.execute("SELECT id FROM files WHERE path = ?", (path,)).fetchone()
        if row is None:
            return False
        self._files_touched = True
        old_hashes = self._delete_file_rows(conn, row[0])
        conn.execute("DELETE FROM files WHERE id = ?", (row[0],))
        _new_paths_generation(conn)
        self.drop_orphan_vectors(conn, old_hashes)
        return True

    def _delete_file_rows(self, conn: sqlite3.Connection, file_id: int) -> list[str]:
        """Drop a file's chunks, FTS rows and imports; return its embed hashes."""
        old_hashes = [r[0] for r in conn.execute(
            "SELECT DISTINCT embed_hash FROM chunks WHERE file_id = ?", (file_id,))]
        for kind, table in FTS_TABLE_BY_KIND.items():
            conn.execute(
                f"DELETE FROM {table} WHERE rowid IN "
                "(SELECT id FROM chunks WHERE file_id = ? AND kind = ?)", (file_id, kind))
        conn.execute("DELETE FROM chunks WHERE file_id = ?", (file_id,))
        conn.execute("DELETE FROM symbols WHERE file_id = ?", (file_id,))
        conn.execute("DELETE FROM imports WHERE file_id = ?", (file_id,))
        conn.execute("DELETE FROM file_terms WHERE file_id = ?", (file_id,))
        return old_hashes

    def drop_orphan_vectors(self, conn: sqlite3.Connection, hashes: list[str]) -> None:
        """Vectors of these texts that no chunk or memory row embeds any more;
        their ids are queued for the ANN index."""
        if not hashes:
            return
        placeholders = ",".join("?" * len(hashes))
        for table in VECTOR_TABLES:
            orphans = [r[0] for r in conn.execute(
                f"SELECT id FROM {table} WHERE text_hash IN ({placeholders}) AND {_unreferenced(table)}",
                hashes)]
            if orphans:
                conn.executemany(f"DELETE FROM {table} WHERE id = ?", [(i,) for i in orphans])
                self.removed_vector_ids[table].extend(orphans)

    def drop_all_orphan_vectors(self) -> int:
        """After a full pass: vectors of texts that no chunk or memory row has any more."""
        orphans: dict[str, list[int]] = {}
        with self.write() as conn:
            for table in VECTOR_TABLES:
                orphans[table] = [r[0] for r in conn.execute(
                    f"SELECT id FROM {table} WHERE {_unreferenced(table)}")]
                conn.executemany(f"DELETE FROM {table} WHERE id = ?", [(i,) for i in orphans[table]])
        for table, ids in orphans.items():
            self.removed_vector_ids[table].extend(ids)
        return sum(len(ids) for ids in orphans.values())

    def put_file(self, conn: sqlite3.Connection, record: FileRecord, chunks: list[Chunk],
                 imports: list[tuple[ImportRef, str | None]],
                 symbols: list[SymbolDef] = ()) -> int:
        """Replace one file's rows (inside the caller's write transaction).

        Chunks whose (hash, symbol, kind) survived keep their rows, FTS rows
        and vectors; only their line range is updated. So an edit to one
        function rewrites one chunk, whatever the file's size: the didChange
        path stays fast on large files.
        """
        self._files_touched = True
        row = conn.execute("SELECT id FROM files WHERE path = ?", (record.path,)).fetchone()
        old: dict[tuple, list[tuple[int, int, int, str]]] = {}
        if row is not None:
            file_id = row[0]
            conn.execute(
                "UPDATE files SET language=?, size=?, mtime_ns=?, hash=?, source=?, indexed_at=? "
                "WHERE id=?",
                (record.language, record.size, record.mtime_ns, record.hash, record.source,
                 now_ms(), file_id))
            for cid, chash, symbol, kind, start, end, embed in conn.execute(
                    "SELECT id, hash, symbol, kind, start_line, end_line, embed_hash FROM chunks "
                    "WHERE file_id = ? ORDER BY start_line", (file_id,)):
                old.setdefault((chash, symbol, kind), []).append((cid, start, end, embed))
            conn.execute("DELETE FROM imports WHERE file_id = ?", (file_id,))
            conn.execute("DELETE FROM symbols WHERE file_id = ?", (file_id,))
        else:
            file_id = conn.execute(
                "INSERT INTO files(path, language, size, mtime_ns, hash, source, indexed_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                (record.path, record.language, record.size, record.mtime_ns, record.hash,
                 record.source, now_ms())).lastrowid
            _new_paths_generation(conn)
        path_tokens = expand(record.path)
        # Changes to file_terms: only the chunks written or dropped here count.
        term_changes: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
        chunk_changes: collections.Counter = collections.Counter()
        for chunk in chunks:
            reusable = old.get((chunk.hash, chunk.symbol, chunk.kind))
            if reusable:
                cid, start, end, _ = reusable.pop(0)
                if (start, end) != (chunk.start_line, chunk.end_line):
                    conn.execute("UPDATE chunks SET start_line = ?, end_line = ? WHERE id = ?",
                                 (chunk.start_line, chunk.end_line, cid))
                continue
            chunk_id = conn.execute(
                "INSERT INTO chunks(file_id, symbol, name, symbol_kind, kind, language, "
                "start_line, end_line, hash, embed_hash, text) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                (file_id, chunk.symbol, _symbol_name(chunk.symbol), chunk.symbol_kind,
                 chunk.kind, chunk.language, chunk.start_line, chunk.end_line, chunk.hash,
                 embedding_hash(record.path, chunk.symbol, chunk.text), chunk.text)).lastrowid
            table = FTS_TABLE_BY_KIND.get(chunk.kind, "fts_code")
            body = expand_tokens(chunk.text)
            conn.execute(
                f"INSERT INTO {table}(rowid, symbol, path, body) VALUES (?, ?, ?, ?)",
                (chunk_id, expand(" ".join(chunk.names)), path_tokens, " ".join(body)))
            term_changes[chunk.kind].update(set(body))
            chunk_changes[chunk.kind] += 1
        gone = [(cid, kind, embed) for (_, _, kind), rows in old.items() for cid, _, _, embed in rows]
        for cid, kind, _ in gone:
            conn.execute(f"DELETE FROM {FTS_TABLE_BY_KIND.get(kind, 'fts_code')} WHERE rowid = ?",
                         (cid,))
            (text,) = conn.execute("SELECT text FROM chunks WHERE id = ?", (cid,)).fetchone()
            term_changes[kind].subtract(set(expand_tokens(text)))
            chunk_changes[kind] -= 1
            conn.execute("DELETE FROM chunks WHERE id = ?", (cid,))
        for kind, changes in term_changes.items():
            _update_file_terms(conn, file_id, kind, chunk_changes[kind], changes)
        conn.executemany(
            "INSERT INTO symbols(file_id, symbol, name, symbol_kind, start_line, end_line, hash, "
            "line, body_end) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [(file_id, d.symbol, _symbol_name(d.symbol), d.symbol_kind, d.start_line, d.end_line,
              d.hash, d.line, d.body_end) for d in symbols])
        conn.executemany(
            "INSERT INTO imports(file_id, spec, line, target) VALUES (?, ?, ?, ?)",
            [(file_id, ref.spec, ref.line, target) for ref, target in imports])
        self.drop_orphan_vectors(conn, sorted({embed for _, _, embed in gone}))
        return file_id

    @staticmethod
    def put_memory_text(conn: sqlite3.Connection, row_id: int, kind: str, key: str,
                        symbol: str | None, text: str) -> None:
        """The FTS row of a written memory row (rowid = memory id)."""
        conn.execute(f"INSERT INTO {MEMORY_FTS_TABLE_BY_KIND[kind]}(rowid, symbol, path, body) "
                     "VALUES (?, ?, ?, ?)",
                     (row_id, expand(symbol or ""), expand(key), expand(text)))

    def counts(self) -> dict[str, int]:
        conn = self.reader()
        try:
            return {
                "files": conn.execute("SELECT count(*) FROM files").fetchone()[0],
                "chunks": conn.execute("SELECT count(*) FROM chunks").fetchone()[0],
            }
        except sqlite3.Error as exc:
            raise (self.failure(exc, writing=False) or exc) from exc
