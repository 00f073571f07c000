"""Team memory in PostgreSQL with pgvector (``memoryUrl``).

Every daemon of a team points at one database; each request is one
transaction on a pooled connection, so a write is visible to every other
daemon as soon as it is acknowledged (acknowledged after COMMIT). A read is
one round trip (``_read``: its tenancy and statements as one query); a
hybrid recall makes two, the first while its query is being embedded.

Tables (``SCHEMA_VERSION``; ``ctxls_memory_meta`` holds ``schema_version``,
``text_search_config`` and, once a daemon with embeddings has written,
``vector_model``): ``ctxls_memory`` (one row per fact, episode, doc or
ingested segment; ``tsv`` its full text as the SQLite backend's terms,
``embedding`` its vector),
``ctxls_memory_files`` (uploads, byte-exact) and ``ctxls_demand``.

Tenancy, twice: every query filters on the request's scope as the SQLite
backend does, and row-level security (forced, so the tables' owner is
fenced too) admits only rows of the scopes the transaction names with
``set_config(..., true)`` (transaction-local, like ``SET LOCAL``):
``ctxls.visible`` (a JSON array of readable scopes; ``@global`` is always
readable), ``ctxls.home`` (the one scope writes may touch) or ``ctxls.all``
= ``on`` (a daemon without owner, purge, export and import). A connection
that names nothing reads only ``@global`` and writes nothing. The trust
model (docs/architecture.md): RLS guards against a query that forgets its
fence, not against a hostile process holding the role's password.

Vectors: the same model as the local semantic tier, written with the row.
The first writer with embeddings records the model (name, dimension,
embedding-text version) and builds an HNSW index over ``embedding::vector(D)``;
a daemon with another model is refused: it writes no vectors and recalls
lexically, and says so once. Imported rows come without vectors;
``embed_missing`` (run by ``ctxls memory import``) embeds them afterwards, and
a daemon with the team's model fills in any row still without one in the
background (``start_embedding``: rows another daemon wrote with embeddings off).

Faults: a connection is awaited at most ``POOL_WAIT_S`` and a statement runs
at most ``STATEMENT_TIMEOUT_MS``; then the verb fails with MemoryUnavailable
(-32010) and nothing is acknowledged. A server that answers nothing at all (a
frozen host, a network partition: TCP keeps the connection open, so no socket
error comes) is bounded on this side too (``_guarded_connection_class``). The
pool reconnects in the background; while the database is known to be down, a
verb fails at once and the database is asked again at most every
``PROBE_EVERY_S`` (``_raw``). A database this ctxls cannot use (a newer schema,
no pgvector) fails the verbs with -32010 too, saying what to do.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import TYPE_CHECKING, Callable, Iterator

from ctxls.index.embed_text import memory_embedding_text
from ctxls.index.embeddings import is_builtin_model
from ctxls.index.errors import EngineError, MemoryUnavailable, redact_credentials
from ctxls.index.memory.lexemes import fts_lexemes
from ctxls.index.memory.model import (ANN_NOMINEES, MEMORY_DENSE_WEIGHT, MEMORY_FUSION_POOL,
                                      INLINE_TEXT_BYTES, MEMORY_KINDS, Candidate, Forget, KnownFact,
                                      MemoryRow, Page, TextReader, Write, memory_row,
                                      own_row_wins_sql, row_columns, write_order_sql)
from ctxls.index.memory.transfer import (already_stored, demand_record, demand_values,
                                         memory_record, memory_values, stored_identity,
                                         upload_record, upload_values)
from ctxls.index.model import content_hash
from ctxls.index.priority import TRANSFORMER_NICENESS, set_thread_niceness
from ctxls.index.ranking import fused_scores
from ctxls.index.scopes import Scope
from ctxls.index.semantic import unfingerprinted
from ctxls.index.tokenize import expand_tokens, memory_index_text

if TYPE_CHECKING:
    from ctxls.index.semantic import SemanticIndex

log = logging.getLogger(__name__)

# Bump when the layout changes; add the step to _MIGRATIONS; say what changed.
# 1: ctxls_memory, ctxls_memory_files, ctxls_demand with row-level security.
# 2: one partial full-text index per kind instead of one over all rows (recall
#    always names its kind: no bitmap AND with the (kind, scope) B-tree).
# 3: the full-text indexes without a pending list (fastupdate off): each query
#    scanned the up to 4 MB of entries not yet merged, ~25 ms at 1M facts
#    whatever it matched, until a vacuum merged them (docs/decisions.md, "Team memory on PostgreSQL").
# 4: tsv holds the SQLite backend's terms (lexemes.fts_lexemes: FTS5's Porter
#    stems, case and accents folded, no stop words, long words' stand-ins),
#    built in Python and stored verbatim, instead of the `english` text search
#    configuration's: a query of stop words ("who") or without an accent
#    ("cafe") found rows on SQLite and none here. Every row's tsv is rebuilt.
SCHEMA_VERSION = 4
# What tsv holds, recorded in ctxls_memory_meta: no text search configuration
# reads it (a tsvector and a tsquery are built from lexemes.fts_lexemes).
TEXT_SEARCH_CONFIG = "ctxls-fts5-porter-unicode61"
# A memory row's columns; the full-text vector weighs symbol (A) over key (B) over text.
_TSV_SQL = "setweight(%s::tsvector, 'A') || setweight(%s::tsvector, 'B') || %s::tsvector"
_INSERT_MEMORY = (
    "INSERT INTO ctxls_memory(scope, key, part, kind, author, format, symbol, "
    "start_line, end_line, text, meta, session, created_at, occurred_at, "
    "expires_at, embed_hash, tsv, embedding) VALUES (%s, %s, %s, %s, %s, %s, %s, "
    f"%s, %s, %s, %s, %s, %s, %s, %s, %s, {_TSV_SQL}, %s::vector)")
# A tsvector holds a position up to this and at most this many positions a lexeme.
MAX_TSV_POSITION = 16383
MAX_TSV_POSITIONS = 256
# PostgreSQL holds a tsvector to 1 MB ("string is too long for tsvector"):
# full text reads at most this much of a row's text (its index tokens, UTF-8)
# and of its heading path. A tsvector takes at most about three bytes per byte
# read (short distinct words), so the two and the id stay under the cap; get
# returns the whole text whatever its size (docs/protocol.md, "Team memory").
FULL_TEXT_BYTES = 256 * 1024
FULL_TEXT_SYMBOL_BYTES = 16 * 1024
POOL_WAIT_S = 5.0
# Status asks whether the database answers: at most this often, waiting at most
# PROBE_WAIT_S, so an outage costs a status call little.
PROBE_EVERY_S = 2.0
PROBE_WAIT_S = 1.0
RECALL_WORK_MEM = "16MB"
# Rows embedded per transaction by embed_missing (a few seconds of model time here).
EMBED_BATCH = 64
# The daemon's background filling (start_embedding): rows a batch, small so
# that a batch never holds a core long; and the wait once none is left.
FILL_BATCH = 16
FILL_IDLE_S = 30.0
CONNECT_TIMEOUT_S = 3
STATEMENT_TIMEOUT_MS = 10_000
# The client's own deadline for the server's answer to a statement: a server
# that answers cancels a slow statement itself first (STATEMENT_TIMEOUT_MS);
# one that answers nothing is given up this much later. The pool's check of a
# connection on checkout is given CONNECT_TIMEOUT_S.
ANSWER_WITHIN_S = STATEMENT_TIMEOUT_MS / 1000 + 1.0
POOL_MAX = 8
# pg_advisory_xact_lock keys: one migration at a time across daemons, and one
# memory write (remember, ingest, forget, purge, import) at a time: taken first
# in the write's transaction and held to its COMMIT, so that (scope, id)'s
# delete-then-upsert is never interleaved with another writer's, and row ids
# (enumerate's order) are handed out in commit order. A write transaction is
# a few ms (its vectors are computed before it); see docs/decisions.md.
MIGRATE_LOCK = 0x6374786C_0001
WRITE_LOCK = 0x6374786C_0002
# Rows whose tsv migration 4 rebuilds per statement.
REBUILD_BATCH = 500
# Row-level security lets the planner run a query's own condition before the
# policy's only when it is LEAKPROOF; `tsv @@ query` (ts_match_vq) is not
# marked so by PostgreSQL, and without it every recall reads all the tenant's
# rows of the kind instead of the full-text index. Marking it takes a
# superuser, once per database (docs/architecture.md, "Roles").
FULL_TEXT_MATCH = "ts_match_vq(tsvector, tsquery)"
FULL_TEXT_SCAN_WARNING = (
    f"team memory: {FULL_TEXT_MATCH} is not LEAKPROOF in this database, so row-level security "
    "keeps PostgreSQL from the full-text index and every lexical recall reads all of a "
    f"tenant's rows; a superuser should run ALTER FUNCTION {FULL_TEXT_MATCH} LEAKPROOF there "
    "(docs/architecture.md, Team memory)")
# ts_rank weights {D, C, B, A}: body, -, id, heading path, as the SQLite
# backend's BM25 column weights (1, 4, 32), scaled to ts_rank's 0..1.
RANK_WEIGHTS = "{0.03125, 0, 0.125, 1}"
# A list read carries a text up to INLINE_TEXT_BYTES (octet_length reads no
# TOASTed value); a longer one is read on demand (MemoryRow.text_within).
INLINE_TEXT_SQL = f"CASE WHEN octet_length(m.text) <= {INLINE_TEXT_BYTES} THEN m.text END"
ROW_COLUMNS = row_columns(INLINE_TEXT_SQL)

_VISIBLE = ("(scope = '@global' OR current_setting('ctxls.all', true) = 'on' OR "
            "coalesce(nullif(current_setting('ctxls.visible', true), '')::jsonb, '[]'::jsonb) "
            "@> to_jsonb(scope))")
# The tenancy of one transaction (transaction-local, like SET LOCAL).
_SET_FENCE = ("SELECT set_config('ctxls.all', %s, true), set_config('ctxls.visible', %s, true), "
              "set_config('ctxls.home', %s, true)")
_OWNED = ("(current_setting('ctxls.all', true) = 'on' OR "
          "scope = nullif(current_setting('ctxls.home', true), ''))")


def _fenced(table: str) -> str:
    return (f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY;\n"
            f"ALTER TABLE {table} FORCE ROW LEVEL SECURITY;\n"
            f"CREATE POLICY {table}_read ON {table} FOR SELECT USING {_VISIBLE};\n"
            f"CREATE POLICY {table}_insert ON {table} FOR INSERT WITH CHECK {_OWNED};\n"
            f"CREATE POLICY {table}_update ON {table} FOR UPDATE USING {_OWNED} WITH CHECK {_OWNED};\n"
            f"CREATE POLICY {table}_delete ON {table} FOR DELETE USING {_OWNED};\n")


_MIGRATIONS = {
    1: f"""
CREATE TABLE ctxls_memory (
    id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,  -- write order; kept by an upsert
    scope text NOT NULL,
    key text NOT NULL,
    part integer NOT NULL,
    kind text NOT NULL,
    author text NOT NULL,
    format text NOT NULL,
    symbol text,
    start_line integer NOT NULL,
    end_line integer NOT NULL,
    text text NOT NULL,
    meta text,                          -- the caller's JSON object, verbatim
    session text,
    created_at bigint NOT NULL,
    occurred_at bigint NOT NULL,
    expires_at bigint,
    embed_hash text NOT NULL,
    tsv tsvector NOT NULL,              -- heading path (A), id (B), text (D), expanded tokens
    embedding vector,                   -- of ctxls_memory_meta.vector_model; NULL: none
    UNIQUE (scope, key, part)
);
CREATE INDEX ctxls_memory_tsv ON ctxls_memory USING gin (tsv);
CREATE INDEX ctxls_memory_kind ON ctxls_memory (kind, scope);
CREATE INDEX ctxls_memory_recent ON ctxls_memory (kind, occurred_at);
CREATE INDEX ctxls_memory_key ON ctxls_memory (key);
CREATE INDEX ctxls_memory_expires ON ctxls_memory (expires_at) WHERE expires_at IS NOT NULL;
CREATE TABLE ctxls_memory_files (
    scope text NOT NULL,
    key text NOT NULL,
    filename text NOT NULL,
    mode text NOT NULL,
    data bytea NOT NULL,
    PRIMARY KEY (scope, key)
);
CREATE TABLE ctxls_demand (
    id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    path text NOT NULL,
    kind text NOT NULL,
    symbol text,
    action text NOT NULL,
    scope text NOT NULL,
    ts bigint NOT NULL
);
CREATE INDEX ctxls_demand_path ON ctxls_demand (path, kind, action);
{_fenced("ctxls_memory")}{_fenced("ctxls_memory_files")}{_fenced("ctxls_demand")}
""",
    2: "DROP INDEX IF EXISTS ctxls_memory_tsv;\n" + "".join(
        f"CREATE INDEX ctxls_memory_tsv_{kind} ON ctxls_memory USING gin (tsv) WHERE kind = '{kind}';\n"
        for kind in MEMORY_KINDS),
    3: "".join(f"ALTER INDEX ctxls_memory_tsv_{kind} SET (fastupdate = off);\n"
               f"SELECT gin_clean_pending_list('ctxls_memory_tsv_{kind}'::regclass);\n"
               for kind in MEMORY_KINDS),
    4: lambda conn: _rebuild_full_text(conn),
}


def _rebuild_full_text(conn) -> None:
    """Migration 4: every row's tsv from its symbol, id and text (the
    tokenizing is Python's, so no SQL statement can do it), in id order."""
    conn.execute("SELECT set_config('ctxls.all', 'on', true)")  # every tenant's rows
    after = 0
    while True:
        rows = conn.execute(
            f"SELECT id, key, left(symbol, {FULL_TEXT_SYMBOL_BYTES}), left(text, {FULL_TEXT_BYTES}) "
            "FROM ctxls_memory WHERE id > %s ORDER BY id LIMIT %s", (after, REBUILD_BATCH)).fetchall()
        if not rows:
            break
        with conn.cursor() as cur:
            cur.executemany(f"UPDATE ctxls_memory SET tsv = {_TSV_SQL} WHERE id = %s",
                            [(*_tsv_parts(symbol, key, text), row_id)
                             for row_id, key, symbol, text in rows])
        after = rows[-1][0]
    conn.execute("SELECT set_config('ctxls.all', '', true)")


class MemorySchemaError(MemoryUnavailable):
    """The memory database was written by a newer ctxls; it is left untouched
    (-32010: memory is unavailable to this ctxls until it is upgraded)."""

    def __init__(self, version: int):
        super().__init__(f"memory database has schema {version}; this ctxls reads up to "
                         f"{SCHEMA_VERSION}: upgrade ctxls (a newer one migrated the database)")


def _vector_literal(vector) -> str:
    return "[" + ",".join(f"{float(x):.7g}" for x in vector) + "]"


def _kind_literal(kind: str) -> str:
    """A kind as an SQL literal: known kinds only (a partial index per kind
    serves a literal, never a parameter of a generic plan)."""
    if kind not in MEMORY_KINDS:
        raise ValueError(f"unknown memory kind {kind!r}")
    return f"'{kind}'"


def _full_text(text: str | None, limit: int = FULL_TEXT_BYTES) -> str:
    """A tsvector literal of ``text``'s terms (``fts_lexemes`` of its index
    tokens, with long words' stand-ins: ``memory_index_text``) from the
    start, at most ``limit`` bytes of tokens."""
    kept, size = [], 0
    # A character is a byte or more: the first ``limit`` of them hold the bytes read.
    for token in expand_tokens(memory_index_text((text or "")[:limit])):
        size += len(token.encode("utf-8")) + 1
        if size > limit:
            break
        kept.append(token)
    return _tsvector_literal(fts_lexemes(kept))


def _quoted_lexeme(lexeme: str) -> str:
    return "'" + lexeme.replace("\\", "\\\\").replace("'", "''") + "'"


def _tsvector_literal(lexemes: list[str]) -> str:
    """``lexemes`` as a tsvector's text, verbatim (no configuration reads
    it), each at its place (1-based; PostgreSQL keeps MAX_TSV_POSITIONS of a
    lexeme's, up to MAX_TSV_POSITION)."""
    positions: dict[str, list[int]] = {}
    for place, lexeme in enumerate(lexemes, 1):
        kept = positions.setdefault(lexeme, [])
        place = min(place, MAX_TSV_POSITION)
        if len(kept) < MAX_TSV_POSITIONS and (not kept or kept[-1] != place):
            kept.append(place)
    return " ".join(f"{_quoted_lexeme(lexeme)}:{','.join(map(str, places))}"
                    for lexeme, places in positions.items())


def _tsv_parts(symbol: str | None, key: str, text: str | None) -> tuple[str, str, str]:
    """The three tsvector literals of a row (_TSV_SQL): heading path, id, text."""
    return (_full_text(symbol, FULL_TEXT_SYMBOL_BYTES),
            _tsvector_literal(fts_lexemes(expand_tokens(key))), _full_text(text))


def _first_line(exc: Exception) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


def _term_tsquery(term: str) -> str | None:
    """One query term as a tsquery's text: its FTS5 terms (a term unicode61
    splits is a phrase, as FTS5 reads a quoted string); None when it has none."""
    lexemes = fts_lexemes([term])
    if not lexemes:
        return None
    return "(" + " <-> ".join(_quoted_lexeme(lexeme) for lexeme in lexemes) + ")"


_GUARDED_CONNECTIONS: dict[type, type] = {}


def _guarded_connection_class(psycopg) -> type:
    """psycopg's Connection that gives up waiting for the server's answer
    (a statement, a commit, the pool's check) after ``answer_within`` seconds
    (None: unbounded, for a migration): it closes the connection, which the
    pool then replaces, and raises ``ServerSilent`` (an OperationalError).
    A server that answers cancels a slow statement itself (statement_timeout);
    this bounds one that answers nothing (a frozen host, a partition), where
    TCP keeps the connection open and no socket error ever comes."""
    if psycopg not in _GUARDED_CONNECTIONS:
        class ServerSilent(psycopg.OperationalError):
            pass

        class GuardedConnection(psycopg.Connection):
            answer_within: float | None = ANSWER_WITHIN_S

            def wait(self, gen, *args, **kwargs):
                if self.answer_within is None:
                    return super().wait(gen, *args, **kwargs)
                return super().wait(self._answered(gen, self.answer_within), *args, **kwargs)

            def _answered(self, gen, within: float):
                # psycopg's wait sends a falsy "nothing ready" every 0.1 s while it waits.
                deadline = time.monotonic() + within
                try:
                    state = next(gen)
                    while True:
                        ready = yield state
                        if not ready and time.monotonic() > deadline:
                            gen.close()
                            self.pgconn.finish()
                            raise ServerSilent(f"the server did not answer within {within:g} s")
                        state = gen.send(ready)
                except StopIteration as done:
                    return done.value

        GuardedConnection.ServerSilent = ServerSilent
        _GUARDED_CONNECTIONS[psycopg] = GuardedConnection
    return _GUARDED_CONNECTIONS[psycopg]


@contextmanager
def _answer_within(conn, seconds: float | None) -> Iterator:
    """``conn``'s wait for the server bounded by ``seconds`` meanwhile (None: unbounded)."""
    before = conn.answer_within
    conn.answer_within = seconds
    try:
        yield conn
    finally:
        conn.answer_within = before


def _check_answers(conn) -> None:
    """The pool's check on checkout (one round trip), bounded by CONNECT_TIMEOUT_S."""
    from psycopg_pool import ConnectionPool

    with _answer_within(conn, CONNECT_TIMEOUT_S):
        ConnectionPool.check_connection(conn)


_RECORDING_POOLS: dict[type, type] = {}


def _recording_pool_class(pool_class: type) -> type:
    """``pool_class`` that keeps its last failed connection attempt's error
    (``last_error``; None once one succeeds): psycopg_pool only logs it, and
    its PoolTimeout says no more than that the wait ran out."""
    if pool_class not in _RECORDING_POOLS:
        class RecordingPool(pool_class):
            last_error: Exception | None = None

            def _connect(self, *args, **kwargs):
                try:
                    conn = super()._connect(*args, **kwargs)
                except Exception as exc:
                    self.last_error = exc
                    raise
                self.last_error = None
                return conn

        _RECORDING_POOLS[pool_class] = RecordingPool
    return _RECORDING_POOLS[pool_class]


class PostgresMemoryStore:
    kind = "postgresql"

    def __init__(self, url: str, warn: Callable[[str], None] | None = None,
                 semantic: "SemanticIndex | None" = None, migrate: bool = True):
        """Opens the pool without waiting: a database that is down now fails
        the memory verbs (MemoryUnavailable), not the daemon's start."""
        import psycopg
        from psycopg_pool import ConnectionPool

        self._psycopg = psycopg
        self.url = url
        self.semantic = semantic
        self._warn = warn or log.warning
        self._migrate_on_open = migrate
        self._ready = False
        self._ready_lock = threading.Lock()
        self._model_warned = False
        self._dim: int | None = None
        self._probe_lock = threading.Lock()
        self._probed: tuple[float, MemoryUnavailable | None] | None = None
        self._closing = threading.Event()
        self._filler: threading.Thread | None = None  # start_embedding's
        self._connection_class = _guarded_connection_class(psycopg)
        self.pool = _recording_pool_class(ConnectionPool)(
            url, min_size=1, max_size=POOL_MAX, open=False, timeout=POOL_WAIT_S,
            connection_class=self._connection_class,
            kwargs={"connect_timeout": CONNECT_TIMEOUT_S,
                    "options": f"-c statement_timeout={STATEMENT_TIMEOUT_MS}",
                    "application_name": "ctxls", "autocommit": True},
            check=_check_answers, reconnect_timeout=POOL_WAIT_S * 6,
            name="ctxls-memory")
        self.pool.open(wait=False)
        # A hybrid recall reads its full text here while its query is embedded.
        self._overlap = ThreadPoolExecutor(max_workers=POOL_MAX, thread_name_prefix="ctxls-memory")

    def describe(self) -> dict:
        return {"backend": self.kind, "schema_version": SCHEMA_VERSION}

    def unavailable(self) -> MemoryUnavailable | None:
        """Why the database does not answer now, None when it does (one round
        trip at most every PROBE_EVERY_S, waiting at most PROBE_WAIT_S)."""
        with self._probe_lock:
            if self._probed is not None and time.monotonic() - self._probed[0] < PROBE_EVERY_S:
                return self._probed[1]
            try:
                with self._connection(PROBE_WAIT_S) as conn:
                    conn.execute("SELECT 1")
                error = None
            except MemoryUnavailable as exc:
                error = exc
            self._probed = (time.monotonic(), error)
            return error

    def close(self) -> None:
        self._closing.set()
        if self._filler is not None:
            self._filler.join(timeout=30)
        self._overlap.shutdown(wait=True)
        self.pool.close()

    # -- connections, transactions and the tenant fence -------------------------

    @staticmethod
    def _fence_settings(scope: Scope | None, home: str | None) -> tuple[str, str, str]:
        """ctxls.all, ctxls.visible and ctxls.home for ``scope``'s readable scopes
        (and home), or ``home`` alone (a write), or neither: everything."""
        if scope is not None and not scope.unrestricted:
            return ("off", json.dumps(list(scope.visible)), scope.home)
        if home is not None:
            return ("off", json.dumps([home]), home)
        return ("on", "[]", "")

    @contextmanager
    def _tx(self, scope: Scope | None = None, home: str | None = None) -> Iterator:
        """One transaction naming its tenancy (``_fence_settings``)."""
        self._ensure_schema()
        with self._raw() as conn:
            with conn.transaction():
                conn.execute(_SET_FENCE, self._fence_settings(scope, home))
                yield conn

    @contextmanager
    def _write_tx(self, home: str | None = None) -> Iterator:
        """A transaction that changes memory rows: WRITE_LOCK first, held to
        its end, so memory writes commit one at a time across daemons."""
        with self._tx(home=home) as conn:
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (WRITE_LOCK,))
            yield conn

    def _read(self, scope: Scope, statements: list[tuple[str, list]]) -> list[list[tuple]]:
        """Each statement's rows, read under ``scope``'s fence in one round trip:
        the fence's settings and the statements go as one multi-statement query,
        which PostgreSQL runs as one implicit transaction, so the
        transaction-local settings hold for every statement after them and end
        with it (a test checks the pooled connection keeps none). Parameters are
        bound client-side (psycopg's ClientCursor) since the extended protocol
        takes one statement per message; kinds go in as literals, so a partial
        index per kind always applies."""
        self._ensure_schema()
        script = ";\n".join([_SET_FENCE, *(sql for sql, _ in statements)])
        args = [*self._fence_settings(scope, None), *(a for _, more in statements for a in more)]
        with self._raw() as conn:
            with self._psycopg.ClientCursor(conn) as cur:
                cur.execute(script, args)
                results = []
                while cur.nextset():  # the first result is the settings' row
                    results.append(cur.fetchall())
        return results

    def _ensure_schema(self) -> None:
        if self._ready:
            return
        with self._ready_lock:
            if not self._ready:
                if self._migrate_on_open:
                    self.migrate()
                else:
                    self._check_version()
                if not self.full_text_index_usable():
                    self._warn(FULL_TEXT_SCAN_WARNING)
                self._ready = True

    @contextmanager
    def _raw(self, wait_s: float = POOL_WAIT_S) -> Iterator:
        """A pooled connection (autocommit: a transaction is always explicit, or
        one multi-statement query), as MemoryUnavailable when there is none.
        While the database is known to be down, MemoryUnavailable at once:
        ``unavailable`` asks it again at most every PROBE_EVERY_S (waiting at
        most PROBE_WAIT_S), not every request the pool's whole wait."""
        known = self._probed
        if known is not None and known[1] is not None:
            down = self.unavailable()
            if down is not None:
                raise MemoryUnavailable(down.problem) from down
        with self._connection(wait_s) as conn:
            yield conn

    @contextmanager
    def _connection(self, wait_s: float) -> Iterator:
        """``_raw``'s connection, without the known outage's shortcut; an
        outage it meets is recorded for ``unavailable`` (and ``_raw``)."""
        from psycopg_pool import PoolTimeout

        try:
            with self.pool.connection(timeout=wait_s) as conn:
                yield conn
        except PoolTimeout as exc:
            # The pool only logs why it cannot connect (a database or role that
            # does not exist, a wrong password): the answer names it too.
            cause = getattr(self.pool, "last_error", None)
            why = f": {self._masked(_first_line(cause))}" if cause is not None else ""
            error = MemoryUnavailable(f"no connection within {wait_s:g} s ({exc}){why}")
            self._probed = (time.monotonic(), error)
            raise error from exc
        except self._connection_class.ServerSilent as exc:
            error = MemoryUnavailable(_first_line(exc))
            self._probed = (time.monotonic(), error)
            raise error from exc
        except (self._psycopg.errors.ProgramLimitExceeded, self._psycopg.DataError) as exc:
            # A value over one of PostgreSQL's own limits, or one it cannot
            # hold: the database is up, and the request failed, as a
            # statement's own failure (-32603).
            raise EngineError(f"team memory refused the statement, nothing was written: "
                              f"{_first_line(exc)}", {"backend": "postgresql"}) from exc
        except self._psycopg.OperationalError as exc:
            raise MemoryUnavailable(_first_line(exc)) from exc

    def _masked(self, text: str) -> str:
        """``text`` with memoryUrl's password masked (libpq may quote the URL),
        also where libpq cannot parse the URL (`[::1/ctxls`: no password it reads)."""
        try:
            password = self._psycopg.conninfo.conninfo_to_dict(self.url).get("password")
        except self._psycopg.ProgrammingError:
            password = None
        return redact_credentials(text.replace(password, "***") if password else text)

    def _version(self, conn) -> int:
        exists = conn.execute("SELECT to_regclass('ctxls_memory_meta') IS NOT NULL").fetchone()[0]
        if not exists:
            return 0
        row = conn.execute("SELECT value FROM ctxls_memory_meta WHERE key = 'schema_version'"
                           ).fetchone()
        return int(row[0]) if row else 0

    def _check_version(self) -> int:
        with self._raw() as conn:
            version = self._version(conn)
        if version > SCHEMA_VERSION:
            raise MemorySchemaError(version)
        if version < SCHEMA_VERSION:
            raise MemoryUnavailable(f"memory database has schema {version}, this ctxls needs "
                                    f"{SCHEMA_VERSION}: run `ctxls memory migrate`")
        return version

    def migrate(self, target: int = SCHEMA_VERSION) -> tuple[int, int]:
        """Bring the database to ``target`` (SCHEMA_VERSION; an older one only
        to test a migration), all steps in one transaction, one migrating
        daemon at a time; refuse a newer one. Returns (from, to)."""
        with self._raw() as conn:
            with conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATE_LOCK,))
                # Building an index over the rows already there may take long: unbounded.
                conn.execute("SET LOCAL statement_timeout = 0")
                before = self._version(conn)
                if before > SCHEMA_VERSION:
                    raise MemorySchemaError(before)
                if before < target:
                    self._create_vector_extension(conn)
                    conn.execute("CREATE TABLE IF NOT EXISTS ctxls_memory_meta "
                                 "(key text PRIMARY KEY, value text NOT NULL)")
                    with _answer_within(conn, None):  # as statement_timeout
                        for version in range(before + 1, target + 1):
                            step = _MIGRATIONS[version]
                            step(conn) if callable(step) else conn.execute(step)
                    conn.execute(
                        "INSERT INTO ctxls_memory_meta(key, value) VALUES ('schema_version', %s), "
                        "('text_search_config', %s) ON CONFLICT (key) DO UPDATE SET value = "
                        "excluded.value", (str(target), TEXT_SEARCH_CONFIG))
        return before, max(before, target)

    def _create_vector_extension(self, conn) -> None:
        """pgvector in the database, or MemoryUnavailable saying who must add it."""
        errors = self._psycopg.errors
        try:
            with conn.transaction():  # a savepoint: the failure is reported, not the aborted transaction
                conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        except errors.InsufficientPrivilege as exc:
            raise MemoryUnavailable(
                "the database lacks the pgvector extension and this role may not create it: a "
                "superuser should run CREATE EXTENSION vector in it once (docs/architecture.md, "
                f"Team memory, Roles) ({_first_line(exc)})") from exc
        except (errors.FeatureNotSupported, errors.UndefinedFile) as exc:
            raise MemoryUnavailable(
                "the PostgreSQL server has no pgvector extension installed: install pgvector on "
                f"the server, then a superuser runs CREATE EXTENSION vector ({_first_line(exc)})"
            ) from exc

    def full_text_index_usable(self) -> bool:
        """Whether recall under row-level security can use the full-text index
        (FULL_TEXT_MATCH is LEAKPROOF here)."""
        with self._raw() as conn:
            return conn.execute("SELECT proleakproof FROM pg_proc WHERE oid = %s::regprocedure",
                                (FULL_TEXT_MATCH,)).fetchone()[0]

    # -- vectors -----------------------------------------------------------------

    def _vector_dim(self) -> int | None:
        """The dimension memory vectors have here, when this daemon's model is
        the one recorded (recording it, and building the HNSW index, if none is)."""
        semantic = self.semantic
        if semantic is None or semantic.failed is not None or not semantic.ensure_loaded():
            return None
        if self._dim is not None:
            return self._dim
        stamp = semantic.model_stamp()
        dim = semantic.embedder.dim
        with self._tx() as conn:
            row = conn.execute("SELECT value FROM ctxls_memory_meta WHERE key = 'vector_model'"
                               ).fetchone()
            if row is None:
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATE_LOCK,))
                # Building the index over rows already there may take long: once, unbounded.
                conn.execute("SET LOCAL statement_timeout = 0")
                conn.execute("INSERT INTO ctxls_memory_meta(key, value) VALUES ('vector_model', %s) "
                             "ON CONFLICT (key) DO NOTHING", (stamp,))
                with _answer_within(conn, None):  # as statement_timeout
                    conn.execute(f"CREATE INDEX IF NOT EXISTS ctxls_memory_embedding ON ctxls_memory "
                                 f"USING hnsw ((embedding::vector({dim})) vector_cosine_ops)")
                row = conn.execute("SELECT value FROM ctxls_memory_meta WHERE key = 'vector_model'"
                                   ).fetchone()
            elif row[0] == unfingerprinted(stamp):
                conn.execute("UPDATE ctxls_memory_meta SET value = %s WHERE key = 'vector_model' "
                             "AND value = %s", (stamp, row[0]))
                row = (stamp,)
        if row[0] != stamp:
            if not self._model_warned:
                self._model_warned = True
                # A team that embedded with a built-in model (the default before
                # it changed) keeps its vectors by selecting that model by name.
                recorded = row[0].split("/", 1)[0]
                hint = (f"; the option embedModel: \"{recorded}\" uses them"
                        if is_builtin_model(recorded) else "")
                self._warn(f"team memory holds vectors of {row[0]}, this daemon embeds with "
                           f"{stamp}: memory is recalled and written without vectors here{hint}")
            return None
        self._dim = dim
        return dim

    def _embeddings(self, write: Write) -> list[str | None]:
        dim = self._vector_dim()
        if dim is None:
            return [None] * len(write.segments)
        vectors = self.semantic.embedder.embed(
            [memory_embedding_text(s.symbol, s.text) for s in write.segments])
        return [_vector_literal(v) for v in vectors]

    def embed_missing(self, progress: Callable[[int], None] | None = None) -> int:
        """Give every row without a vector one of this daemon's model (rows
        imported, or written while no model was loaded), in id order, a batch
        per transaction; returns how many. Nothing without a model, or when
        the database records another one (_vector_dim says so once)."""
        done, after = 0, 0
        while (batch := self._embed_batch(after, EMBED_BATCH)) is not None:
            done += batch[0]
            after = batch[1]
            if progress is not None:
                progress(done)
        return done

    def _embed_batch(self, after: int, size: int) -> tuple[int, int] | None:
        """Embed up to ``size`` rows without a vector past row id ``after``:
        (how many, the last id looked at), or None when there are none (or
        no model of the team's here)."""
        if self._vector_dim() is None:
            return None
        with self._tx() as conn:
            rows = conn.execute(
                "SELECT id, embed_hash, symbol, text FROM ctxls_memory WHERE embedding IS NULL "
                "AND id > %s ORDER BY id LIMIT %s", (after, size)).fetchall()
        if not rows:
            return None
        vectors = self.semantic.embedder.embed(
            [memory_embedding_text(symbol, text) for _, _, symbol, text in rows])
        with self._tx() as conn:
            with conn.cursor() as cur:
                # Only if the row still says what was embedded: a row rewritten
                # meanwhile got its own vector (or none) from its writer.
                cur.executemany(
                    "UPDATE ctxls_memory SET embedding = %s::vector WHERE id = %s AND "
                    "embed_hash = %s AND embedding IS NULL",
                    [(_vector_literal(v), row_id, embed_hash)
                     for (row_id, embed_hash, _, _), v in zip(rows, vectors)])
        return len(rows), rows[-1][0]

    def start_embedding(self) -> None:
        """Fill in, in the background, the vectors of rows written without
        one (by a daemon with embeddings off, or while the database was
        unreachable): else no daemon ever gave them one, and recall by
        meaning never found them. The daemon's (where its embedding worker
        fills the SQLite store's rows); a no-op without a model."""
        if self.semantic is None or self._filler is not None or self._closing.is_set():
            return
        self._filler = threading.Thread(target=self._fill_vectors, name="ctxls-memory-embed",
                                        daemon=True)
        self._filler.start()

    def _fill_vectors(self) -> None:
        """``start_embedding``'s thread: small batches in id order, then a
        wait of FILL_IDLE_S and a look from the start again (an upsert
        without a vector keeps its row id, behind where the last look ended)."""
        set_thread_niceness(TRANSFORMER_NICENESS)  # a request keeps a core
        after = 0
        while not self._closing.is_set():
            try:
                batch = self._embed_batch(after, FILL_BATCH)
            except EngineError as exc:
                # Down (the pool reconnects meanwhile), or a schema requests report.
                log.debug("team memory vectors not filled in now: %s", exc)
                batch = None
            except Exception:  # the daemon outlives it; tried again after the wait
                log.exception("filling in team memory vectors failed")
                batch = None
            if batch is None:
                after = 0
                self._closing.wait(FILL_IDLE_S)
            else:
                after = batch[1]

    # -- writes ------------------------------------------------------------------

    def write(self, write: Write) -> list[int]:
        embeddings = self._embeddings(write)  # before the transaction: it holds no lock meanwhile
        with self._write_tx(home=write.scope) as conn:
            if write.prune_episodes_before is not None:  # the writing scope's own (the fence)
                self._delete(conn, "scope = %s AND kind = 'episode' AND occurred_at < %s",
                             [write.scope, write.prune_episodes_before])
            self._delete(conn, "scope = %s AND key = %s AND part >= %s",
                         [write.scope, write.key, len(write.segments)])
            ids = []
            for part, (segment, embedding) in enumerate(zip(write.segments, embeddings)):
                (row_id,) = conn.execute(
                    _INSERT_MEMORY + " "
                    "ON CONFLICT (scope, key, part) DO UPDATE SET kind = excluded.kind, "
                    "author = excluded.author, format = excluded.format, symbol = excluded.symbol, "
                    "start_line = excluded.start_line, end_line = excluded.end_line, "
                    "text = excluded.text, meta = excluded.meta, session = excluded.session, "
                    "created_at = excluded.created_at, occurred_at = excluded.occurred_at, "
                    "expires_at = excluded.expires_at, embed_hash = excluded.embed_hash, "
                    "tsv = excluded.tsv, embedding = excluded.embedding RETURNING id",
                    (write.scope, write.key, part, write.kind, write.author, write.format,
                     segment.symbol, segment.start_line, segment.end_line, segment.text,
                     write.meta_json, write.session, write.created_at, write.occurred_at,
                     write.expires_at,
                     content_hash(memory_embedding_text(segment.symbol, segment.text)),
                     *_tsv_parts(segment.symbol, write.key, segment.text),
                     embedding)).fetchone()
                ids.append(row_id)
            if write.upload is None:
                conn.execute("DELETE FROM ctxls_memory_files WHERE scope = %s AND key = %s",
                             (write.scope, write.key))
            else:
                conn.execute(
                    "INSERT INTO ctxls_memory_files(scope, key, filename, mode, data) "
                    "VALUES (%s, %s, %s, %s, %s) ON CONFLICT (scope, key) DO UPDATE SET "
                    "filename = excluded.filename, mode = excluded.mode, data = excluded.data",
                    (write.scope, write.key, write.upload.filename, write.upload.mode,
                     write.upload.data))
        return ids

    @staticmethod
    def _delete(conn, where: str, args: list) -> int:
        """Remove the rows matching ``where`` (row-level security narrows it to
        what the transaction owns) and their uploads; how many ids went."""
        gone = conn.execute(f"DELETE FROM ctxls_memory WHERE {where} RETURNING scope, key, kind",
                            args).fetchall()
        keys = sorted({(scope, key) for scope, key, _ in gone})
        if keys:
            # A row's demand goes with it (as in the SQLite store).
            kinds = sorted(set(gone))
            conn.execute(
                "DELETE FROM ctxls_demand d USING unnest(%s::text[], %s::text[], %s::text[]) "
                "AS g(scope, key, kind) WHERE d.scope = g.scope AND d.path = g.key "
                "AND d.kind = g.kind AND NOT EXISTS (SELECT 1 FROM ctxls_memory m "
                "WHERE m.scope = d.scope AND m.key = d.path AND m.kind = d.kind)",
                ([s for s, _, _ in kinds], [k for _, k, _ in kinds], [t for _, _, t in kinds]))
            conn.execute(
                "DELETE FROM ctxls_memory_files f USING unnest(%s::text[], %s::text[]) AS g(scope, key) "
                "WHERE f.scope = g.scope AND f.key = g.key AND NOT EXISTS "
                "(SELECT 1 FROM ctxls_memory m WHERE m.scope = f.scope AND m.key = f.key)",
                ([s for s, _ in keys], [k for _, k in keys]))
        return len(keys)

    def forget(self, what: Forget) -> int:
        conditions, args = ["true"], []
        for condition, value in (("scope = %s", what.owned), ("key = %s", what.key),
                                 ("kind = %s", what.kind), ("author = %s", what.author)):
            if value is not None:
                conditions.append(condition)
                args.append(value)
        if what.key_prefix is not None:
            conditions.append("left(key, %s) = %s")
            args += [len(what.key_prefix), what.key_prefix]
        with self._write_tx(home=what.owned) as conn:
            return self._delete(conn, " AND ".join(conditions), args)

    def purge(self, now: int) -> int:
        with self._write_tx() as conn:  # one purge at a time: the others find nothing left
            return self._delete(conn, "expires_at IS NOT NULL AND expires_at <= %s", [now])

    # -- reads -------------------------------------------------------------------

    @staticmethod
    def _fence(scope: Scope, now: int, scope_index: bool = True) -> tuple[str, list]:
        """The query's own fence (row-level security is the second), with
        the shadowing every read applies (``own_row_wins_sql``).
        ``scope_index=False`` spells the scope test so that no B-tree on scope
        can serve it: beside the full-text index the planner would AND in the
        half of the table a tenant owns (a 500k-row bitmap, 300-450 ms at 1M
        facts, and a lossy one), where filtering the matches costs nothing extra."""
        clause, args = "(m.expires_at IS NULL OR m.expires_at > %s)", [now]
        if not scope.unrestricted:
            clause += (" AND m.scope = ANY(%s)" if scope_index else
                       " AND array_position(%s::text[], m.scope) IS NOT NULL")
            args.append(list(scope.visible))
        shadowed, shadow_args = own_row_wins_sql(scope, now, "ctxls_memory", "%s")
        return clause + shadowed, args + shadow_args

    def lexical_statement(self, kinds: list[str], terms: list[str], limit: int, scope: Scope,
                          now: int) -> tuple[str, list]:
        """The full-text half of a recall, every kind in one statement: per
        kind, the best ``limit`` rows matching any term, with ts_rank and how
        many of the terms each row matches. Ranked first, the rest computed for
        those rows only: a common word matches thousands of rows. (Their
        cosines, a vector read each, come afterwards for these rows only.)"""
        fence, fence_args = self._fence(scope, now, scope_index=False)
        # Terms without an FTS5 term match nothing there either (they count
        # against coverage all the same: SQLite's coverage counts them too).
        queries = [q for q in map(_term_tsquery, terms) if q is not None] or ["''"]
        coverage_sql = " + ".join("(m.tsv @@ %s::tsquery)::int" for _ in queries)
        best = " UNION ALL ".join(
            f"(SELECT m.id, ts_rank('{RANK_WEIGHTS}', m.tsv, query.q) AS score FROM ctxls_memory m, "
            "(SELECT %s::tsquery AS q) query "
            f"WHERE m.kind = {_kind_literal(kind)} AND m.tsv @@ query.q AND {fence} "
            "ORDER BY score DESC, m.id LIMIT %s)" for kind in kinds)
        return (f"SELECT {ROW_COLUMNS}, top.score, {coverage_sql} "
                f"FROM ({best}) top JOIN ctxls_memory m ON m.id = top.id",
                [*queries, *[a for _ in kinds for a in (" | ".join(queries), *fence_args, limit)]])

    def nearest_statement(self, kinds: list[str], k: int, scope: Scope, now: int, dim: int,
                          vector: str) -> tuple[str, list]:
        """The meaning half: per kind, the ``k`` rows nearest ``vector`` (HNSW)."""
        fence, fence_args = self._fence(scope, now)
        distance = f"m.embedding::vector({dim}) <=> %s::vector({dim})"
        return (" UNION ALL ".join(
            f"(SELECT {ROW_COLUMNS}, 1 - ({distance}) FROM ctxls_memory m "
            f"WHERE m.kind = {_kind_literal(kind)} AND m.embedding IS NOT NULL AND {fence} "
            f"ORDER BY {distance} LIMIT %s)" for kind in kinds),
            [a for _ in kinds for a in (vector, *fence_args, vector, k)])

    def search(self, kinds: list[str], query: str, terms: list[str], n: int, scope: Scope,
               now: int, semantic: "SemanticIndex | None",
               dense_only: bool) -> dict[str, list[MemoryRow]]:
        dim = self._vector_dim() if semantic is not None else None
        # work_mem: a common word's matches (tens of thousands of rows at 1M facts)
        # in an exact bitmap, not a lossy one rechecked row by row (~25 % of that
        # query); pgvector 0.8's iterative scan: keep walking the HNSW graph until
        # enough rows pass the filters.
        settings = (f"SELECT set_config('work_mem', '{RECALL_WORK_MEM}', true), "
                    "set_config('hnsw.iterative_scan', 'relaxed_order', true)", [])
        full_text = None
        if not dense_only and terms:
            # With a model, the full text is read while the query is embedded (the
            # embedding alone is 12-100 ms here), its cosines afterwards.
            statement = self.lexical_statement(kinds, terms, n if dim is None else
                                               max(n, MEMORY_FUSION_POOL), scope, now)
            full_text = (self._overlap.submit(self._read, scope, [settings, statement])
                         if dim is not None else self._read(scope, [settings, statement]))
        vector = _vector_literal(semantic.query_vector(query)) if dim is not None else None
        if dim is not None and vector is None and dense_only:
            return {kind: [] for kind in kinds}
        matched = (full_text.result() if dim is not None else full_text)[1] if full_text else []
        rows: dict[int, tuple] = {}
        # Per kind, as a recall ranks each kind only against itself (fusion scales by the best).
        lexical: dict[str, dict[int, float]] = {kind: {} for kind in kinds}
        coverage: dict[str, dict[int, float]] = {kind: {} for kind in kinds}
        dense: dict[str, dict[int, float | None]] = {kind: {} for kind in kinds}
        for r in matched:
            rows[r[0]] = r
            lexical[r[4]][r[0]] = float(r[16])
            coverage[r[4]][r[0]] = r[17] / len(terms)
        if vector is not None:
            cosines, nearest = self._read(scope, [
                (f"SELECT m.id, m.kind, 1 - (m.embedding::vector({dim}) <=> %s::vector({dim})) "
                 "FROM ctxls_memory m WHERE m.id = ANY(%s)", [vector, list(rows)]),
                settings,
                self.nearest_statement(kinds, max(n, ANN_NOMINEES) if dense_only else ANN_NOMINEES,
                                       scope, now, dim, vector)])[0::2]
            for row_id, kind, cosine in cosines:
                dense[kind][row_id] = float(cosine) if cosine is not None else None
            for r in nearest:
                rows.setdefault(r[0], r)
                dense[r[4]][r[0]] = float(r[16])
        found = {}
        for kind in kinds:
            scores = lexical[kind] if vector is None else fused_scores(
                lexical[kind], dense[kind], MEMORY_DENSE_WEIGHT, dense_only, coverage[kind],
                fusion="linear")
            found[kind] = sorted((self._row(rows[rid], score) for rid, score in scores.items()),
                                 key=lambda r: (-r.score, r.key, r.part))[:n]
            for row in found[kind]:
                row.cosine = dense[kind].get(row.row_id)
                row.coverage = coverage[kind].get(row.row_id, 0.0)
        return found

    def recent(self, scope: Scope, kinds: list[str], n: int, session: str | None,
               now: int) -> list[MemoryRow]:
        fence, args = self._fence(scope, now)
        newest = f"SELECT {ROW_COLUMNS} FROM ctxls_memory m WHERE m.kind = %s AND m.part = 0 AND {fence} "
        order = "ORDER BY m.occurred_at DESC, m.id DESC LIMIT %s"
        statements = []  # (this session's?, statement)
        for kind in kinds:
            statements.append((False, (newest + order, [kind, *args, n])))
            if kind == "episode" and session is not None:
                statements.append((True, (newest + "AND m.session = %s " + order,
                                          [kind, *args, session, n])))
        found: dict[int, tuple[bool, MemoryRow]] = {}
        for (this_session, _), rows in zip(statements, self._read(scope, [s for _, s in statements])):
            for r in rows:
                found[r[0]] = (this_session, self._row(r))
        ranked = sorted(found.values(), key=lambda e: (not e[0], -e[1].occurred_at, -e[1].row_id))
        return [row for _, row in ranked[:n]]

    def enumerate(self, scope: Scope, kind: str, offset: int, limit: int, now: int) -> Page:
        fence, args = self._fence(scope, now)
        where = f"WHERE m.kind = %s AND {fence}"
        order, order_args = write_order_sql(scope, now, "ctxls_memory", "%s")
        counted, found = self._read(scope, [
            (f"SELECT count(*) FROM ctxls_memory m {where}", [kind, *args]),
            (f"SELECT {ROW_COLUMNS} FROM ctxls_memory m {where} ORDER BY {order} "
             "LIMIT %s OFFSET %s", [kind, *args, *order_args, limit, offset])])
        total = counted[0][0]
        rows = [self._row(r) for r in found]
        end = offset + len(rows)
        return Page(rows, total, offset, end if rows and end < total else None)

    def count(self, scope: Scope, kinds: list[str], now: int) -> int:
        fence, args = self._fence(scope, now)
        (counted,) = self._read(scope, [(f"SELECT count(*) FROM ctxls_memory m WHERE m.part = 0 "
                                         f"AND m.kind = ANY(%s) AND {fence}", [kinds, *args])])
        return counted[0][0]

    def first_row(self, key: str, scope: Scope, now: int) -> MemoryRow | None:
        fence, args = self._fence(scope, now)
        (found,) = self._read(scope, [(
            f"SELECT {ROW_COLUMNS} FROM ctxls_memory m WHERE m.key = %s AND m.part = 0 AND "
            f"{fence} ORDER BY (m.scope = %s) DESC, m.id LIMIT 1", [key, *args, scope.home])])
        return self._row(found[0]) if found else None

    def _row(self, r, score: float = 0.0) -> MemoryRow:
        return memory_row(r, score, None if r[10] is not None else self._text_reader(r[1], r[0]))

    def _text_reader(self, scope: str, row_id: int) -> TextReader:
        """Reads one row's text under its own scope's fence (the row was already
        found visible to the request)."""
        def read(max_bytes: int | None) -> str | None:
            (found,) = self._read(Scope(home=scope, visible=(scope,)), [(
                "SELECT CASE WHEN %s::bigint IS NULL OR octet_length(m.text) <= %s::bigint "
                "THEN m.text END FROM ctxls_memory m WHERE m.id = %s", [max_bytes, max_bytes, row_id])])
            return found[0][0] if found else None
        return read

    def upload(self, scope: str, key: str) -> tuple[str, bytes] | None:
        (found,) = self._read(Scope(home=scope, visible=(scope,)), [(
            "SELECT mode, data FROM ctxls_memory_files WHERE scope = %s AND key = %s",
            [scope, key])])
        return (found[0][0], bytes(found[0][1])) if found else None

    def segments(self, scope: str, key: str) -> list[MemoryRow]:
        (found,) = self._read(Scope(home=scope, visible=(scope,)), [(
            f"SELECT {ROW_COLUMNS} FROM ctxls_memory m WHERE m.scope = %s AND m.key = %s "
            "ORDER BY m.part", [scope, key])])
        return [self._row(r) for r in found]

    # -- the demand log and what it feeds ----------------------------------------

    def append_demand(self, rows: list[tuple]) -> None:
        by_scope: dict[str, list[tuple]] = {}
        for row in rows:
            by_scope.setdefault(row[4], []).append(row)
        for scope, entries in by_scope.items():  # each scope's rows under its own fence
            with self._tx(home=scope) as conn:
                with conn.cursor() as cur:
                    cur.executemany("INSERT INTO ctxls_demand(path, kind, symbol, action, scope, ts) "
                                    "VALUES (%s, %s, %s, %s, %s, %s)", entries)

    def candidates(self, kind: str, scope: Scope, threshold: int, since: int,
                   now: int) -> list[Candidate]:
        fence, args = self._fence(scope, now)
        (rows,) = self._read(scope, [(
            "SELECT m.key, count(*) AS hits FROM ctxls_memory m JOIN ctxls_demand d "
            "ON d.path = m.key AND d.scope = m.scope AND d.kind = m.kind AND d.action = 'recall' "
            f"WHERE m.kind = %s AND m.part = 0 AND m.author = 'agent' AND {fence} AND d.ts >= %s "
            "GROUP BY m.id, m.key HAVING count(*) >= %s ORDER BY hits DESC, m.key",
            [kind, *args, since, threshold])])
        return [Candidate(path=r[0], hits=r[1]) for r in rows]

    def known_facts(self, scope: Scope, now: int) -> list[KnownFact]:
        fence, args = self._fence(scope, now)
        (rows,) = self._read(scope, [(
            f"SELECT m.key, m.scope, m.author, m.id, {INLINE_TEXT_SQL}, m.meta, m.created_at, "
            "(SELECT count(*) FROM ctxls_demand d WHERE d.path = m.key AND d.kind = 'fact' "
            " AND d.action = 'recall' AND d.scope = m.scope) AS recalls "
            f"FROM ctxls_memory m WHERE m.kind = 'fact' AND m.part = 0 AND {fence}", args)])
        return [KnownFact(key, row_scope, author, text, json.loads(meta_json) if meta_json else None,
                          created_at, recalls,
                          None if text is not None else self._text_reader(row_scope, row_id))
                for key, row_scope, author, row_id, text, meta_json, created_at, recalls in rows]

    # -- export and import ---------------------------------------------------------

    def export_records(self) -> Iterator[dict]:
        with self._tx() as conn:
            memory = conn.execute(
                "SELECT scope, key, part, kind, author, format, symbol, start_line, end_line, "
                "text, meta, session, created_at, occurred_at, expires_at FROM ctxls_memory "
                "ORDER BY id").fetchall()
            uploads = conn.execute("SELECT scope, key, filename, mode, data FROM ctxls_memory_files "
                                   "ORDER BY scope COLLATE \"C\", key COLLATE \"C\"").fetchall()
            demand = conn.execute("SELECT path, kind, symbol, action, scope, ts FROM ctxls_demand "
                                  "ORDER BY id").fetchall()
        yield from (memory_record(r) for r in memory)
        yield from (upload_record(r) for r in uploads)
        yield from (demand_record(r) for r in demand)

    def import_records(self, records: list[dict]) -> int:
        """Rows go in without vectors (one bulk transaction, no model needed):
        embed_missing() gives them theirs."""
        with self._write_tx() as conn:
            held = self._held(conn, records)
            if held is not None:
                raise already_stored(held)
            with conn.cursor() as cur:
                cur.executemany(
                    _INSERT_MEMORY,
                    [(*memory_values(r), *_tsv_parts(r["symbol"], r["id"], r["text"]), None)
                     for r in records if r["type"] == "memory"])
                cur.executemany("INSERT INTO ctxls_memory_files(scope, key, filename, mode, data) "
                                "VALUES (%s, %s, %s, %s, %s)",
                                [upload_values(r) for r in records if r["type"] == "upload"])
                cur.executemany("INSERT INTO ctxls_demand(path, kind, symbol, action, scope, ts) "
                                "VALUES (%s, %s, %s, %s, %s, %s)",
                                [demand_values(r) for r in records if r["type"] == "demand"])
        return len(records)

    @staticmethod
    def _held(conn, records: list[dict]) -> dict | None:
        """The first record whose row or upload the database already holds."""
        identities = {stored_identity(r): r for r in records if stored_identity(r) is not None}
        rows = [i for i in identities if i[0] == "memory"]
        uploads = [i for i in identities if i[0] == "upload"]
        found = conn.execute(
            "(SELECT 'memory', m.scope, m.key, m.part FROM ctxls_memory m JOIN "
            "unnest(%s::text[], %s::text[], %s::int[]) AS g(scope, key, part) "
            "ON m.scope = g.scope AND m.key = g.key AND m.part = g.part LIMIT 1) UNION ALL "
            "(SELECT 'upload', f.scope, f.key, NULL FROM ctxls_memory_files f JOIN "
            "unnest(%s::text[], %s::text[]) AS g(scope, key) "
            "ON f.scope = g.scope AND f.key = g.key LIMIT 1)",
            ([i[1] for i in rows], [i[2] for i in rows], [i[3] for i in rows],
             [i[1] for i in uploads], [i[2] for i in uploads])).fetchone()
        if found is None:
            return None
        return identities[tuple(found) if found[0] == "memory" else tuple(found[:3])]


__all__ = ["MemorySchemaError", "PostgresMemoryStore", "SCHEMA_VERSION"]
