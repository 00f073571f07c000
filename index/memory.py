"""Written memory: facts, episodes and direct documents, scoped per tenant.

Rows that people and agents write (``remember``) or upload (``ingest``) live in
the store's ``memory`` table: not derived from files, so ``ctxls/index`` and a
rebuild of the file rows never touch them. A row's key is (scope, id, part):
the same id in another scope is another row, and ``part`` numbers the
segments of an ingested document (every other row has part 0 only). An upsert
keeps its row id, so pages of ``enumerate`` (id order) never skip or repeat a
row while others write.

Full text: one stemmed FTS5 table per kind (``MEMORY_FTS_TABLE_BY_KIND``),
rowid = memory id, fed the same code-aware token expansion as file chunks.
Every read joins ``memory`` for the scope fence (:mod:`ctxls.index.scopes`) and
the expiry, so an expired row or another tenant's row never ranks, counts or
leaks. With embeddings on, each row's embedding text is hashed into
``embed_hash``; the semantic worker embeds it into the shared ``vectors``
table, and recall fuses BM25 with cosine like file recall does, plus up to
``ANN_NOMINEES`` nearest rows found by meaning alone.
"""

from __future__ import annotations

import base64
import binascii
import json
import posixpath
import sqlite3
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

from ctxls.index.chunker import chunk_file, split_lines
from ctxls.index.embed_text import MAX_EMBED_CHARS
from ctxls.index.errors import InvalidParams, TooLarge
from ctxls.index.model import content_hash
from ctxls.index.ranking import RankingConfig, bm25_scores, fused_scores
from ctxls.index.scopes import Scope
from ctxls.index.store import MEMORY_FTS_TABLE_BY_KIND, Store, now_ms
from ctxls.index.tokenize import fts_match_expression, query_terms

if TYPE_CHECKING:
    import numpy as np

    from ctxls.index.semantic import SemanticIndex

MEMORY_KINDS = ("fact", "episode", "doc")
AUTHORS = ("human", "agent")
MAX_ID_CHARS = 1024
# remember and ingest: bytes of the text or upload (UTF-8).
MAX_WRITE_BYTES = 10 * 1024 * 1024
DEFAULT_EPISODE_WINDOW_DAYS = 30.0
DAY_MS = 86_400_000
# Uploads split into searchable segments, by extension; anything else is a blob.
SEGMENTED_FORMATS = {"md": "markdown", "markdown": "markdown", "txt": "text", "log": "log",
                     "csv": "csv"}
BLOB_FORMAT = "binary"  # a blob whose filename has no extension
# Rows the ANN adds to the lexical candidates, found by meaning alone.
ANN_NOMINEES = 8
# Memory's hybrid fusion (linear) and lexical pool, as measured in BENCHMARKS.md
# "Memory"; code recall's fusion (RankingConfig) was tuned on code, not on facts.
MEMORY_DENSE_WEIGHT = 0.7
MEMORY_FUSION_POOL = 50
# Up to this many visible rows of a kind, nominees come from an exact cosine
# over all of them (cheap, and blind to how many other rows share the ANN index).
EXACT_NOMINATION_ROWS = 1024
# Beyond that the ANN neighbourhood widens until enough visible rows are in it.
ANN_SEARCH_LIMIT = 4096
MAX_PAGE = 1000
MAX_N = 200


def memory_embedding_text(symbol: str | None, text: str) -> str:
    """What gets embedded for a memory row: its text (and a segment's heading
    path), not its id, which is often an opaque key. Changing this changes
    every row's embed_hash, so old vectors are simply never used again."""
    return f"{symbol}\n{text[:MAX_EMBED_CHARS]}" if symbol else text[:MAX_EMBED_CHARS]


@dataclass
class MemoryRow:
    row_id: int
    scope: str
    key: str
    part: int
    kind: str
    author: str
    format: str
    symbol: str | None
    start_line: int
    end_line: int
    text: str
    meta: dict | None
    created_at: int
    occurred_at: int
    expires_at: int | None
    embed_hash: str
    score: float = 0.0


@dataclass
class MemoryItem:
    """A row fetched whole by its id (``ctxls/get``)."""

    row: MemoryRow
    text: str  # the whole document; base64 for a blob
    encoding: str | None  # "base64" for a blob


@dataclass
class MemoryNode:
    row: MemoryRow
    segments: list[MemoryRow]


@dataclass
class Page:
    rows: list[MemoryRow]
    total: int
    offset: int
    next_offset: int | None


@dataclass
class IngestResult:
    key: str
    format: str
    mode: str  # "chunked" | "blob"
    segments: int


@dataclass(frozen=True)
class _Segment:
    symbol: str | None
    start_line: int
    end_line: int
    text: str


_COLUMNS = ("m.id, m.scope, m.key, m.part, m.kind, m.author, m.format, m.symbol, m.start_line, "
            "m.end_line, m.text, m.meta, m.created_at, m.occurred_at, m.expires_at, m.embed_hash")


def _row(r: sqlite3.Row, score: float = 0.0) -> MemoryRow:
    return MemoryRow(row_id=r[0], scope=r[1], key=r[2], part=r[3], kind=r[4], author=r[5],
                     format=r[6], symbol=r[7], start_line=r[8], end_line=r[9], text=r[10],
                     meta=json.loads(r[11]) if r[11] is not None else None, created_at=r[12],
                     occurred_at=r[13], expires_at=r[14], embed_hash=r[15], score=score)


def visible_sql(scope: Scope, now: int, table: str = "m") -> tuple[str, list]:
    """Rows ``scope`` may read that have not expired."""
    clause, args = scope.visible_sql(f"{table}.scope")
    return f"{clause} AND ({table}.expires_at IS NULL OR {table}.expires_at > ?)", [*args, now]


def check_kinds(kinds: list[str] | None, allowed: tuple[str, ...] = MEMORY_KINDS) -> list[str]:
    if kinds is None:
        return list(allowed)
    for kind in kinds:
        if kind not in allowed:
            raise InvalidParams("kind", f"unknown kind {kind!r}; known: {', '.join(allowed)}")
    return kinds


def _check_key(name: str, key: str) -> None:
    if not isinstance(key, str) or not key or len(key) > MAX_ID_CHARS:
        raise InvalidParams(name, f"must be a non-empty string of at most {MAX_ID_CHARS} characters")


def _check_choice(name: str, value: str | None, allowed: tuple[str, ...]) -> None:
    if value is not None and value not in allowed:
        raise InvalidParams(name, f"must be one of {', '.join(allowed)}")


def _check_ms(name: str, value: int | None) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
        raise InvalidParams(name, "must be a non-negative timestamp in ms")


def _check_count(name: str, value: int, low: int, high: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise InvalidParams(name, f"must be an integer from {low} to {high}")


def _check_meta(meta: dict | None) -> str | None:
    if meta is None:
        return None
    if not isinstance(meta, dict):
        raise InvalidParams("meta", "must be an object")
    return json.dumps(meta, ensure_ascii=False, separators=(",", ":"))


def _whole_segment(text: str) -> _Segment:
    return _Segment(None, 0, max(len(split_lines(text)) - 1, 0), text)


class Memory:
    def __init__(self, store: Store, on_write: Callable[[list[int]], None] | None = None):
        """``on_write`` hears the ids of rows just written (the semantic worker
        embeds them first)."""
        self.store = store
        self.on_write = on_write
        # Defaults, not the engine's file-ranking weights: those are tuned for code.
        self.config = RankingConfig()

    # -- writes ----------------------------------------------------------------

    def remember(self, scope: Scope, key: str, text: str, kind: str = "fact", by: str = "agent",
                 occurred_at: int | None = None, meta: dict | None = None,
                 expires_at: int | None = None, session: str | None = None,
                 episode_window_days: float = DEFAULT_EPISODE_WINDOW_DAYS) -> None:
        """Write one row whole (never chunked); the same (scope, id) is replaced."""
        _check_key("id", key)
        if not isinstance(text, str) or not text.strip():
            raise InvalidParams("text", "must be a non-empty string")
        _check_choice("kind", kind, MEMORY_KINDS)
        _check_choice("by", by, AUTHORS)
        _check_ms("occurredAt", occurred_at)
        _check_ms("expiresAt", expires_at)
        meta_json = _check_meta(meta)
        if len(text.encode("utf-8", "surrogatepass")) > MAX_WRITE_BYTES:
            raise TooLarge("text", MAX_WRITE_BYTES)
        now = now_ms()
        with self.store.write() as conn:
            if kind == "episode":
                # Pruned before the write: an episode is never dropped by its own write.
                self._delete(conn, "memory.kind = 'episode' AND memory.occurred_at < ?",
                             [now - int(episode_window_days * DAY_MS)])
            conn.execute("DELETE FROM memory_files WHERE scope = ? AND key = ?", (scope.home, key))
            ids = self._replace(conn, scope.home, key, kind, by, "text", [_whole_segment(text)],
                                meta_json, occurred_at if occurred_at is not None else now,
                                expires_at, session, now)
        self._written(ids)

    def ingest(self, scope: Scope, filename: str, text: str | None = None,
               base64_data: str | None = None, key: str | None = None, by: str = "agent",
               expires_at: int | None = None, meta: dict | None = None) -> IngestResult:
        """Store an upload: Markdown and txt/log/csv as searchable doc segments,
        anything else byte-exact as a blob found by its filename. Re-ingesting
        an id replaces all of its segments."""
        _check_key("filename", filename)
        key = filename if key is None else key
        _check_key("id", key)
        _check_choice("by", by, AUTHORS)
        _check_ms("expiresAt", expires_at)
        meta_json = _check_meta(meta)
        data = self._upload_bytes(text, base64_data)
        extension = posixpath.splitext(filename.replace("\\", "/"))[1].lstrip(".").lower()
        if extension in SEGMENTED_FORMATS:
            mode, fmt = "chunked", SEGMENTED_FORMATS[extension]
            decoded = text if text is not None else data.decode("utf-8", "replace")
            segments = [_Segment(c.symbol, c.start_line, c.end_line, c.text)
                        for c in chunk_file(filename, decoded).chunks] or [_whole_segment(decoded)]
        else:
            mode, fmt = "blob", extension or BLOB_FORMAT
            segments = [_Segment(None, 0, 0, filename)]  # what recall finds a blob by
        now = now_ms()
        with self.store.write() as conn:
            ids = self._replace(conn, scope.home, key, "doc", by, fmt, segments, meta_json, now,
                                expires_at, None, now)
            conn.execute(
                "INSERT INTO memory_files(scope, key, filename, mode, data) VALUES (?, ?, ?, ?, ?) "
                "ON CONFLICT(scope, key) DO UPDATE SET filename = excluded.filename, "
                "mode = excluded.mode, data = excluded.data",
                (scope.home, key, filename, mode, data))
        self._written(ids)
        return IngestResult(key=key, format=fmt, mode=mode, segments=len(segments))

    @staticmethod
    def _upload_bytes(text: str | None, base64_data: str | None) -> bytes:
        """The upload's bytes, checked against the bound before anything is decoded or written."""
        if (text is None) == (base64_data is None):
            raise InvalidParams("text", "give exactly one of text and base64")
        if text is not None:
            data = text.encode("utf-8", "surrogatepass")
        else:
            if len(base64_data) // 4 * 3 > MAX_WRITE_BYTES + 2:  # bound the decode itself
                raise TooLarge("upload", MAX_WRITE_BYTES)
            try:
                data = base64.b64decode(base64_data, validate=True)
            except (binascii.Error, ValueError) as exc:
                raise InvalidParams("base64", f"is not valid base64: {exc}") from exc
        if len(data) > MAX_WRITE_BYTES:
            raise TooLarge("upload", MAX_WRITE_BYTES)
        return data

    def _replace(self, conn: sqlite3.Connection, scope: str, key: str, kind: str, author: str,
                 fmt: str, segments: list[_Segment], meta_json: str | None, occurred_at: int,
                 expires_at: int | None, session: str | None, now: int) -> list[int]:
        """Make (scope, key) exactly these segments; rows of kept parts keep their ids."""
        self._delete(conn, "memory.scope = ? AND memory.key = ? AND memory.part >= ?",
                     [scope, key, len(segments)])
        old = {part: (row_id, old_kind, embed_hash)
               for row_id, part, old_kind, embed_hash in conn.execute(
                   "SELECT id, part, kind, embed_hash FROM memory WHERE scope = ? AND key = ?",
                   (scope, key))}
        ids = []
        for part, segment in enumerate(segments):
            if part in old:
                row_id, old_kind, _ = old[part]
                conn.execute(f"DELETE FROM {MEMORY_FTS_TABLE_BY_KIND[old_kind]} WHERE rowid = ?",
                             (row_id,))
            (row_id,) = conn.execute(
                "INSERT INTO memory(scope, key, part, kind, author, format, symbol, start_line, "
                "end_line, text, meta, session, created_at, occurred_at, expires_at, embed_hash) "
                "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?) ON CONFLICT(scope, key, part) DO UPDATE SET "
                "kind = excluded.kind, author = excluded.author, format = excluded.format, "
                "symbol = excluded.symbol, start_line = excluded.start_line, "
                "end_line = excluded.end_line, text = excluded.text, meta = excluded.meta, "
                "session = excluded.session, created_at = excluded.created_at, "
                "occurred_at = excluded.occurred_at, expires_at = excluded.expires_at, "
                "embed_hash = excluded.embed_hash RETURNING id",
                (scope, key, part, kind, author, fmt, segment.symbol, segment.start_line,
                 segment.end_line, segment.text, meta_json, session, now, occurred_at, expires_at,
                 content_hash(memory_embedding_text(segment.symbol, segment.text)))).fetchone()
            self.store.put_memory_text(conn, row_id, kind, key, segment.symbol, segment.text)
            ids.append(row_id)
        self.store.drop_orphan_vectors(conn, [h for _, _, h in old.values()])
        return ids

    def _delete(self, conn: sqlite3.Connection, where: str, args: list) -> int:
        """Remove the memory rows matching ``where`` (columns as ``memory.x``) with
        their FTS rows, uploads and vectors; returns how many ids were removed."""
        gone = conn.execute(f"DELETE FROM memory WHERE {where} "
                            "RETURNING id, kind, scope, key, embed_hash", args).fetchall()
        for row_id, kind, _, _, _ in gone:
            conn.execute(f"DELETE FROM {MEMORY_FTS_TABLE_BY_KIND[kind]} WHERE rowid = ?", (row_id,))
        keys = {(scope, key) for _, _, scope, key, _ in gone}
        conn.executemany(
            "DELETE FROM memory_files WHERE scope = ? AND key = ? AND NOT EXISTS "
            "(SELECT 1 FROM memory m WHERE m.scope = memory_files.scope AND m.key = memory_files.key)",
            sorted(keys))
        self.store.drop_orphan_vectors(conn, sorted({h for *_, h in gone}))
        return len(keys)

    def _written(self, row_ids: list[int]) -> None:
        if self.on_write is not None and row_ids:
            self.on_write(row_ids)

    def forget(self, scope: Scope, key: str | None = None, key_prefix: str | None = None,
               kind: str | None = None, by: str | None = None, scope_given: bool = False) -> int:
        """Remove direct rows (never indexed files) by id, id prefix, kind and
        author, or everything of an explicitly given scope; only rows ``scope``
        owns (docs/protocol.md). Returns how many ids were removed."""
        for name, value in (("id", key), ("idPrefix", key_prefix)):
            if value is not None:
                _check_key(name, value)
        _check_choice("kind", kind, MEMORY_KINDS)
        _check_choice("by", by, AUTHORS)
        if key is None and key_prefix is None and not scope_given:
            if kind is None:
                raise InvalidParams("id", "forget needs id, idPrefix, scope, or kind with by")
            if by is None:
                raise InvalidParams("by", "forgetting by kind without a scope needs by as well")
        clause, args = scope.owned_sql("memory.scope")
        conditions = [clause]
        for condition, value in (("memory.key = ?", key), ("memory.kind = ?", kind),
                                 ("memory.author = ?", by)):
            if value is not None:
                conditions.append(condition)
                args.append(value)
        if key_prefix is not None:
            conditions.append("substr(memory.key, 1, ?) = ?")
            args += [len(key_prefix), key_prefix]
        with self.store.write() as conn:
            return self._delete(conn, " AND ".join(conditions), args)

    def purge(self, now: int | None = None) -> int:
        """Remove rows whose expiry has passed, with their uploads and vectors."""
        _check_ms("now", now)
        with self.store.write() as conn:
            return self._delete(conn, "memory.expires_at IS NOT NULL AND memory.expires_at <= ?",
                                [now if now is not None else now_ms()])

    # -- reads -----------------------------------------------------------------

    def search(self, kind: str, query: str, n: int, scope: Scope,
               semantic: "SemanticIndex | None" = None, dense_only: bool = False) -> list[MemoryRow]:
        """The ``n`` best rows of one kind for ``query``, ranked only against
        that kind: BM25 over its stemmed FTS table, fused with cosine similarity
        when ``semantic`` is given. A query with no usable term finds nothing."""
        table = MEMORY_FTS_TABLE_BY_KIND[kind]
        terms = query_terms(query)
        if not terms:
            return []
        conn = self.store.reader()
        now = now_ms()
        visible, visible_args = visible_sql(scope, now)
        fence = f"EXISTS (SELECT 1 FROM memory m WHERE m.id = {table}.rowid AND {visible})"
        if semantic is None:
            scores = bm25_scores(conn, table, terms, self.config, limit=n, where=fence,
                                 where_args=visible_args)
        else:
            vector = semantic.query_vector(query)
            if vector is None:
                return []
            pool = max(n, MEMORY_FUSION_POOL)
            lexical = {} if dense_only else bm25_scores(conn, table, terms, self.config, limit=pool,
                                                        where=fence, where_args=visible_args)
            # A nominee outside the lexical pool counts as no lexical match: scoring
            # it exactly (bm25_scores(also=...)) ranks every match, slower than the
            # pool's LIMIT at 100k facts; memory's benchmark was measured without it.
            nominated = self._nominate(conn, semantic, vector, kind, scope, now,
                                       max(n, ANN_NOMINEES) if dense_only else ANN_NOMINEES)
            dense: dict[int, float | None] = dict(nominated)
            dense.update(self._cosines(conn, semantic, vector,
                                       [rid for rid in lexical if rid not in nominated]))
            # Linear, not the code default: a handful of rows, min-max scaled, would
            # give any best row a perfect score (measured in BENCHMARKS.md "Memory").
            scores = fused_scores(lexical, dense, MEMORY_DENSE_WEIGHT, dense_only,
                                  self._term_coverage(conn, table, terms, list(lexical)),
                                  fusion="linear")
        rows = self._rows_by_id(conn, list(scores))
        ranked = sorted((_row(rows[rid], score) for rid, score in scores.items() if rid in rows),
                        key=lambda r: (-r.score, r.key, r.part))
        return ranked[:n]

    @staticmethod
    def _term_coverage(conn: sqlite3.Connection, table: str, terms: list[str],
                       rowids: list[int]) -> dict[int, float]:
        """The share of query terms each row matches. Fusion divides BM25 by the
        best candidate's, so without it a row sharing one incidental word with a
        paraphrase gets the whole lexical share and outranks the row that means
        the same (BENCHMARKS.md, "Memory (issue 5)")."""
        matched = dict.fromkeys(rowids, 0)
        for term in terms if rowids else ():
            # The term's whole posting list, intersected here: FTS5 would run a
            # "rowid IN (...)" filter as one lookup per candidate, which is slower.
            for (rowid,) in conn.execute(f"SELECT rowid FROM {table} WHERE {table} MATCH ?",
                                         (fts_match_expression([term]),)):
                if rowid in matched:
                    matched[rowid] += 1
        return {rowid: count / len(terms) for rowid, count in matched.items()}

    @staticmethod
    def _cosines(conn: sqlite3.Connection, semantic: "SemanticIndex", vector: "np.ndarray",
                 rowids: list[int]) -> dict[int, float | None]:
        """Row id -> exact cosine (None: not embedded yet)."""
        if not rowids:
            return {}
        hashes = dict(conn.execute(
            f"SELECT id, embed_hash FROM memory WHERE id IN ({','.join('?' * len(rowids))})",
            rowids).fetchall())
        by_hash = semantic.similarities(vector, sorted(set(hashes.values())))
        return {rid: by_hash.get(hashes.get(rid)) for rid in rowids}

    def _nominate(self, conn: sqlite3.Connection, semantic: "SemanticIndex", vector: "np.ndarray",
                  kind: str, scope: Scope, now: int, k: int) -> dict[int, float]:
        """Up to ``k`` visible rows of ``kind`` nearest to ``vector``: row id -> cosine."""
        visible, args = visible_sql(scope, now)
        rows = f"SELECT m.id FROM memory m WHERE m.kind = ? AND {visible}"
        few = conn.execute(f"SELECT count(*) FROM ({rows} LIMIT ?)",
                           [kind, *args, EXACT_NOMINATION_ROWS + 1]).fetchone()[0]
        if few <= EXACT_NOMINATION_ROWS:
            ids = [r[0] for r in conn.execute(rows, [kind, *args])]
            cosines = {rid: c for rid, c in self._cosines(conn, semantic, vector, ids).items()
                       if c is not None}
            return dict(sorted(cosines.items(), key=lambda kv: -kv[1])[:k])
        # Many rows: the shared ANN index holds chunks and other tenants' rows too,
        # so widen its neighbourhood until it holds k rows this request may see.
        size = k * 8
        while True:
            near = dict(semantic.nearest(vector, size))
            if not near:
                return {}
            # CROSS JOIN keeps SQLite's join order: from the few vector ids, not
            # from the (kind, scope) index over every row of the tenant.
            found = conn.execute(
                f"SELECT m.id, v.id FROM vectors v CROSS JOIN memory m ON m.embed_hash = v.text_hash "
                f"WHERE v.id IN ({','.join('?' * len(near))}) AND m.kind = ? AND {visible}",
                [*near, kind, *args]).fetchall()
            nominated = {row_id: near[vector_id] for row_id, vector_id in found}
            if len(nominated) >= k or len(near) < size or size >= ANN_SEARCH_LIMIT:
                return dict(sorted(nominated.items(), key=lambda kv: -kv[1])[:k])
            size *= 4

    @staticmethod
    def _rows_by_id(conn: sqlite3.Connection, ids: list[int]) -> dict[int, sqlite3.Row]:
        if not ids:
            return {}
        return {r[0]: r for r in conn.execute(
            f"SELECT {_COLUMNS} FROM memory m WHERE m.id IN ({','.join('?' * len(ids))})", ids)}

    def recent(self, scope: Scope, kinds: list[str] | None = None, n: int = 10,
               session: str | None = None) -> list[MemoryRow]:
        """Newest first (by occurredAt), this session's episodes before all else;
        one entry per id (an ingested document by its first segment)."""
        kinds = check_kinds(kinds)
        _check_count("n", n, 1, MAX_N)
        conn = self.store.reader()
        visible, args = visible_sql(scope, now_ms())
        newest = f"SELECT {_COLUMNS} FROM memory m WHERE m.kind = ? AND m.part = 0 AND {visible} "
        order = "ORDER BY m.occurred_at DESC, m.id DESC LIMIT ?"
        found: dict[int, tuple[bool, MemoryRow]] = {}
        for kind in kinds:
            for r in conn.execute(newest + order, [kind, *args, n]):
                found[r[0]] = (False, _row(r))
            if kind == "episode" and session is not None:
                for r in conn.execute(newest + "AND m.session = ? " + order, [kind, *args, session, n]):
                    found[r[0]] = (True, _row(r))
        ranked = sorted(found.values(), key=lambda e: (not e[0], -e[1].occurred_at, -e[1].row_id))
        return [row for _, row in ranked[:n]]

    def enumerate(self, scope: Scope, kind: str, offset: int = 0, limit: int = 100) -> Page:
        """Every visible row of a kind, in write order: an upsert keeps its place
        and new rows append, so following ``next_offset`` never repeats a row."""
        check_kinds([kind], ("fact", "episode"))
        _check_count("offset", offset, 0, 2**62)
        _check_count("limit", limit, 1, MAX_PAGE)
        conn = self.store.reader()
        visible, args = visible_sql(scope, now_ms())
        where = f"WHERE m.kind = ? AND {visible}"
        total = conn.execute(f"SELECT count(*) FROM memory m {where}", [kind, *args]).fetchone()[0]
        rows = [_row(r) for r in conn.execute(
            f"SELECT {_COLUMNS} FROM memory m {where} ORDER BY m.id LIMIT ? OFFSET ?",
            [kind, *args, limit, offset])]
        end = offset + len(rows)
        return Page(rows, total, offset, end if rows and end < total else None)

    def count(self, scope: Scope, kinds: list[str] | None = None) -> int:
        """Visible ids of these kinds (an ingested document counts once)."""
        kinds = check_kinds(kinds)
        visible, args = visible_sql(scope, now_ms())
        return self.store.reader().execute(
            f"SELECT count(*) FROM memory m WHERE m.part = 0 AND m.kind IN "
            f"({','.join('?' * len(kinds))}) AND {visible}", [*kinds, *args]).fetchone()[0]

    def _first_row(self, key: str, scope: Scope) -> MemoryRow | None:
        """The row ``scope`` sees under ``key``: its own before the shared tier's."""
        if not isinstance(key, str) or not key:
            return None
        visible, args = visible_sql(scope, now_ms())
        r = self.store.reader().execute(
            f"SELECT {_COLUMNS} FROM memory m WHERE m.key = ? AND m.part = 0 AND {visible} "
            "ORDER BY m.scope = ? DESC, m.id LIMIT 1", [key, *args, scope.home]).fetchone()
        return _row(r) if r is not None else None

    def item(self, key: str, scope: Scope, start_line: int | None = None,
             end_line: int | None = None) -> MemoryItem | None:
        """A visible row by id, whole (an ingested document as uploaded), or
        None: another tenant's id is indistinguishable from an unknown one."""
        row = self._first_row(key, scope)
        if row is None:
            return None
        upload = self.store.reader().execute(
            "SELECT mode, data FROM memory_files WHERE scope = ? AND key = ?",
            (row.scope, row.key)).fetchone()
        if upload is not None and upload[0] == "blob":
            if start_line is not None or end_line is not None:
                raise InvalidParams("startLine", "a blob has no lines")
            return MemoryItem(row, base64.b64encode(upload[1]).decode("ascii"), "base64")
        text = upload[1].decode("utf-8", "replace") if upload is not None else row.text
        if start_line is not None or end_line is not None:
            lines = text.split("\n")
            last = min(end_line if end_line is not None else len(lines) - 1, len(lines) - 1)
            text = "\n".join(lines[start_line or 0:last + 1])
        return MemoryItem(row, text, None)

    def node(self, key: str, scope: Scope) -> MemoryNode | None:
        row = self._first_row(key, scope)
        if row is None:
            return None
        segments = [_row(r) for r in self.store.reader().execute(
            f"SELECT {_COLUMNS} FROM memory m WHERE m.scope = ? AND m.key = ? ORDER BY m.part",
            (row.scope, row.key))]
        return MemoryNode(row, segments)
