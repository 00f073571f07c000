"""Written memory in the local SQLite store (the default backend).

Rows live in the store's ``memory`` table: not derived from files, so
``ctxls/index`` and a rebuild of the file rows never touch them. A row's key
is (scope, id, part): the same id in another scope is another row, and
``part`` numbers the segments of an ingested document (every other row has
part 0 only). An upsert keeps its row id, so pages of ``enumerate`` (id
order) never skip or repeat a row while others write.

Full text: one stemmed FTS5 table per kind (``MEMORY_FTS_TABLE_BY_KIND``),
rowid = memory id, fed the same code-aware token expansion as file chunks.
Every read joins ``memory`` for the scope fence (:mod:`ctxls.index.scopes`),
the expiry and the shadowing (``own_row_wins_sql``: a tenant's own row of an
id hides the shared tier's), so an expired row, another tenant's row or a
shadowed one never ranks, counts or leaks. With embeddings on, each row's
embedding text is hashed into ``embed_hash``; the semantic worker embeds it
into the shared ``vectors`` table, and recall fuses BM25 with cosine like
file recall does, plus up to ``ANN_NOMINEES`` nearest rows found by meaning
alone.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Iterator

from ctxls.index.embed_text import memory_embedding_text
from ctxls.index.memory.transfer import (already_stored, demand_record, demand_values,
                                         memory_record, memory_values, stored_identity,
                                         upload_record, upload_values)
from ctxls.index.memory.model import (ANN_NOMINEES, MEMORY_DENSE_WEIGHT, MEMORY_FUSION_POOL,
                                      Candidate, Forget, KnownFact, MemoryRow, Page, TextReader,
                                      Write, memory_row, own_row_wins_sql, row_columns,
                                      write_order_sql)
from ctxls.index.model import content_hash
from ctxls.index.ranking import RankingConfig, bm25_scores, fused_scores
from ctxls.index.scopes import Scope
from ctxls.index.store import MEMORY_FTS_TABLE_BY_KIND, Connection, Row, Store
from ctxls.index.tokenize import fts_match_expression

if TYPE_CHECKING:
    import numpy as np

    from ctxls.index.semantic import SemanticIndex

# Up to this many visible rows of a kind, nominees come from an exact cosine
# over all of them (cheap, and blind to how many other rows share the ANN index).
EXACT_NOMINATION_ROWS = 1024
# Beyond that the ANN neighbourhood widens until enough visible rows are in it.
ANN_SEARCH_LIMIT = 4096
# No text in a list read: each is read on demand, through incremental blob
# I/O, which knows a value's size before reading any of it (MemoryRow.text_within).
_COLUMNS = row_columns("NULL")


# Whether the store holds an imported record's row or upload (transfer.stored_identity).
_HELD = {"memory": "SELECT 1 FROM memory WHERE scope = ? AND key = ? AND part = ?",
         "upload": "SELECT 1 FROM memory_files WHERE scope = ? AND key = ?"}


def visible_sql(scope: Scope, now: int, table: str = "m") -> tuple[str, list]:
    """Rows ``scope`` may read that have not expired and that no row of its
    own shadows (every read filters with this)."""
    clause, args = scope.visible_sql(f"{table}.scope")
    shadowed, shadow_args = own_row_wins_sql(scope, now, "memory", "?", table)
    return (f"{clause} AND ({table}.expires_at IS NULL OR {table}.expires_at > ?){shadowed}",
            [*args, now, *shadow_args])


class SqliteMemoryStore:
    """Memory in the workspace's own store, beside the code index."""

    kind = "sqlite"

    def __init__(self, store: Store):
        self.store = store
        # Defaults, not the engine's file-ranking weights: those are tuned for code.
        self.config = RankingConfig()

    def describe(self) -> dict:
        return {"backend": self.kind, "path": self.store.db_path}

    def unavailable(self) -> None:
        """The store's own state is status's `storeError`: nothing more here."""
        return None

    def close(self) -> None:
        """The store is the engine's: it closes it."""

    def _row(self, r, score: float = 0.0) -> MemoryRow:
        return memory_row(r, score, self._text_reader(r[0]))

    def _text_reader(self, row_id: int) -> TextReader:
        def read(max_bytes: int | None) -> str | None:
            return self.store.read_text("memory", "text", row_id, max_bytes)
        return read

    # -- writes ----------------------------------------------------------------

    def write(self, write: Write) -> list[int]:
        with self.store.write(durable=True) as conn:
            if write.prune_episodes_before is not None:
                # Pruned before the write: an episode is never dropped by its own write.
                # Only the writing scope's own (PostgreSQL's fence does the same).
                self._delete(conn, "memory.kind = 'episode' AND memory.occurred_at < ? AND "
                             "memory.scope = ?", [write.prune_episodes_before, write.scope])
            ids = self._replace(conn, write)
            if write.upload is None:
                conn.execute("DELETE FROM memory_files WHERE scope = ? AND key = ?",
                             (write.scope, write.key))
            else:
                conn.execute(
                    "INSERT INTO memory_files(scope, key, filename, mode, data) VALUES (?, ?, ?, ?, ?) "
                    "ON CONFLICT(scope, key) DO UPDATE SET filename = excluded.filename, "
                    "mode = excluded.mode, data = excluded.data",
                    (write.scope, write.key, write.upload.filename, write.upload.mode,
                     write.upload.data))
        return ids

    def _replace(self, conn: Connection, write: Write) -> list[int]:
        """Make (scope, key) exactly these segments; rows of kept parts keep their ids."""
        scope, key = write.scope, write.key
        self._delete(conn, "memory.scope = ? AND memory.key = ? AND memory.part >= ?",
                     [scope, key, len(write.segments)])
        old = {part: (row_id, old_kind, embed_hash)
               for row_id, part, old_kind, embed_hash in conn.execute(
                   "SELECT id, part, kind, embed_hash FROM memory WHERE scope = ? AND key = ?",
                   (scope, key))}
        ids = []
        for part, segment in enumerate(write.segments):
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
                (scope, key, part, write.kind, write.author, write.format, segment.symbol,
                 segment.start_line, segment.end_line, segment.text, write.meta_json,
                 write.session, write.created_at, write.occurred_at, write.expires_at,
                 content_hash(memory_embedding_text(segment.symbol, segment.text)))).fetchone()
            self.store.put_memory_text(conn, row_id, write.kind, key, segment.symbol,
                                       segment.text)
            ids.append(row_id)
        self.store.drop_orphan_vectors(conn, [h for _, _, h in old.values()])
        return ids

    def _delete(self, conn: Connection, where: str, args: list) -> int:
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
        # A row's demand goes with it: a fact written again under a forgotten
        # id starts with no recalls, and the log holds only live rows' demand.
        conn.executemany(
            "DELETE FROM demand WHERE scope = ? AND path = ? AND kind = ? AND NOT EXISTS "
            "(SELECT 1 FROM memory m WHERE m.scope = demand.scope AND m.key = demand.path "
            "AND m.kind = demand.kind)",
            sorted({(scope, key, kind) for _, kind, scope, key, _ in gone}))
        self.store.drop_orphan_vectors(conn, sorted({h for *_, h in gone}))
        return len(keys)

    def forget(self, what: Forget) -> int:
        conditions, args = ["1"], []
        for condition, value in (("memory.scope = ?", what.owned), ("memory.key = ?", what.key),
                                 ("memory.kind = ?", what.kind), ("memory.author = ?", what.author)):
            if value is not None:
                conditions.append(condition)
                args.append(value)
        if what.key_prefix is not None:
            conditions.append("substr(memory.key, 1, ?) = ?")
            args += [len(what.key_prefix), what.key_prefix]
        with self.store.write(durable=True) as conn:
            return self._delete(conn, " AND ".join(conditions), args)

    def purge(self, now: int) -> int:
        with self.store.write() as conn:
            return self._delete(conn, "memory.expires_at IS NOT NULL AND memory.expires_at <= ?",
                                [now])

    # -- reads -----------------------------------------------------------------

    def search(self, kinds: list[str], query: str, terms: list[str], n: int, scope: Scope,
               now: int, semantic: "SemanticIndex | None",
               dense_only: bool) -> dict[str, list[MemoryRow]]:
        if semantic is not None:
            # The query's embedding runs on the query pool while each kind's
            # BM25 scans here; each kind's query_vector then waits for that run.
            semantic.query_vector_soon(query)
        return {kind: self._search_kind(kind, query, terms, n, scope, now, semantic, dense_only)
                for kind in kinds}

    def _search_kind(self, kind: str, query: str, terms: list[str], n: int, scope: Scope,
                     now: int, semantic: "SemanticIndex | None",
                     dense_only: bool) -> list[MemoryRow]:
        """The ``n`` best rows of one kind for ``query``, ranked only against
        that kind: BM25 over its stemmed FTS table, fused with cosine similarity
        when ``semantic`` is given."""
        table = MEMORY_FTS_TABLE_BY_KIND[kind]
        conn = self.store.reader()
        visible, visible_args = visible_sql(scope, now)
        fence = f"EXISTS (SELECT 1 FROM memory m WHERE m.id = {table}.rowid AND {visible})"
        dense: dict[int, float | None] = {}
        if semantic is None:
            scores = bm25_scores(conn, table, terms, self.config, limit=n, where=fence,
                                 where_args=visible_args)
            coverage = self._term_coverage_of_few(conn, table, terms, list(scores))
        else:
            pool = max(n, MEMORY_FUSION_POOL)
            lexical = {} if dense_only or not terms else bm25_scores(conn, table, terms, self.config, limit=pool,
                                                        where=fence, where_args=visible_args)
            vector = semantic.query_vector(query)
            if vector is None:
                return []
            # A nominee outside the lexical pool counts as no lexical match: scoring
            # it exactly (ranking.bm25_of_ids) scans every match, slower than the
            # pool's LIMIT at 100k facts; memory's benchmark was measured without it.
            nominated = self._nominate(conn, semantic, vector, kind, scope, now,
                                       max(n, ANN_NOMINEES) if dense_only else ANN_NOMINEES)
            dense.update(nominated)
            dense.update(self._cosines(conn, semantic, vector,
                                       [rid for rid in lexical if rid not in nominated]))
            coverage = self._term_coverage(conn, table, terms, list(lexical))
            # Linear, not the code default: a handful of rows, min-max scaled, would
            # give any best row a perfect score (docs/decisions.md, "Memory: term coverage ...").
            scores = fused_scores(lexical, dense, MEMORY_DENSE_WEIGHT, dense_only, coverage,
                                  fusion="linear")
        rows = self._rows_by_id(conn, list(scores))
        ranked = sorted((self._row(rows[rid], score) for rid, score in scores.items() if rid in rows),
                        key=lambda r: (-r.score, r.key, r.part))[:n]
        for row in ranked:
            row.cosine, row.coverage = dense.get(row.row_id), coverage.get(row.row_id, 0.0)
        return ranked

    @staticmethod
    def _term_coverage(conn: Connection, table: str, terms: list[str],
                       rowids: list[int]) -> dict[int, float]:
        """The share of query terms each row matches. Fusion divides BM25 by the
        best candidate's, so without it a row sharing one incidental word with a
        paraphrase gets the whole lexical share and outranks the row that means
        the same (docs/decisions.md, "Memory: term coverage ...")."""
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
    def _term_coverage_of_few(conn: Connection, table: str, terms: list[str],
                              rowids: list[int]) -> dict[int, float]:
        """_term_coverage of the few rows a lexical recall returns (each holds
        a term): a lookup of each row in each term's postings. At 100k facts
        (bench/memory.py's synthetic set) it costs about 0.5 ms of CPU a
        recall, against about 0.4 ms p50 but more on average for scanning
        each term's whole list."""
        if len(terms) == 1:
            return dict.fromkeys(rowids, 1.0)
        if not rowids or not terms:
            return dict.fromkeys(rowids, 0.0)
        matched = dict.fromkeys(rowids, 0)
        marks = ",".join("?" * len(rowids))
        for term in terms:
            for (rowid,) in conn.execute(
                    f"SELECT rowid FROM {table} WHERE {table} MATCH ? AND rowid IN ({marks})",
                    (fts_match_expression([term]), *rowids)):
                matched[rowid] += 1
        return {rowid: count / len(terms) for rowid, count in matched.items()}

    @staticmethod
    def _cosines(conn: Connection, semantic: "SemanticIndex", vector: "np.ndarray",
                 rowids: list[int]) -> dict[int, float | None]:
        """Row id -> exact cosine (None: not embedded yet)."""
        if not rowids:
            return {}
        hashes = dict(conn.execute(
            f"SELECT id, embed_hash FROM memory WHERE id IN ({','.join('?' * len(rowids))})",
            rowids).fetchall())
        by_hash = semantic.similarities(vector, sorted(set(hashes.values())))
        return {rid: by_hash.get(hashes.get(rid)) for rid in rowids}

    def _nominate(self, conn: Connection, semantic: "SemanticIndex", vector: "np.ndarray",
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
                f"SELECT m.id, v.id FROM {semantic.table} v CROSS JOIN memory m ON m.embed_hash = v.text_hash "
                f"WHERE v.id IN ({','.join('?' * len(near))}) AND m.kind = ? AND {visible}",
                [*near, kind, *args]).fetchall()
            nominated = {row_id: near[vector_id] for row_id, vector_id in found}
            if len(nominated) >= k or len(near) < size or size >= ANN_SEARCH_LIMIT:
                return dict(sorted(nominated.items(), key=lambda kv: -kv[1])[:k])
            size *= 4

    @staticmethod
    def _rows_by_id(conn: Connection, ids: list[int]) -> dict[int, Row]:
        if not ids:
            return {}
        return {r[0]: r for r in conn.execute(
            f"SELECT {_COLUMNS} FROM memory m WHERE m.id IN ({','.join('?' * len(ids))})", ids)}

    def recent(self, scope: Scope, kinds: list[str], n: int, session: str | None,
               now: int) -> list[MemoryRow]:
        conn = self.store.reader()
        visible, args = visible_sql(scope, now)
        newest = f"SELECT {_COLUMNS} FROM memory m WHERE m.kind = ? AND m.part = 0 AND {visible} "
        order = "ORDER BY m.occurred_at DESC, m.id DESC LIMIT ?"
        found: dict[int, tuple[bool, MemoryRow]] = {}
        for kind in kinds:
            for r in conn.execute(newest + order, [kind, *args, n]):
                found[r[0]] = (False, self._row(r))
            if kind == "episode" and session is not None:
                for r in conn.execute(newest + "AND m.session = ? " + order, [kind, *args, session, n]):
                    found[r[0]] = (True, self._row(r))
        ranked = sorted(found.values(), key=lambda e: (not e[0], -e[1].occurred_at, -e[1].row_id))
        return [row for _, row in ranked[:n]]

    def enumerate(self, scope: Scope, kind: str, offset: int, limit: int, now: int) -> Page:
        conn = self.store.reader()
        visible, args = visible_sql(scope, now)
        where = f"WHERE m.kind = ? AND {visible}"
        total = conn.execute(f"SELECT count(*) FROM memory m {where}", [kind, *args]).fetchone()[0]
        order, order_args = write_order_sql(scope, now, "memory", "?")
        rows = [self._row(r) for r in conn.execute(
            f"SELECT {_COLUMNS} FROM memory m {where} ORDER BY {order} LIMIT ? OFFSET ?",
            [kind, *args, *order_args, limit, offset])]
        end = offset + len(rows)
        return Page(rows, total, offset, end if rows and end < total else None)

    def count(self, scope: Scope, kinds: list[str], now: int) -> int:
        visible, args = visible_sql(scope, now)
        return self.store.reader().execute(
            f"SELECT count(*) FROM memory m WHERE m.part = 0 AND m.kind IN "
            f"({','.join('?' * len(kinds))}) AND {visible}", [*kinds, *args]).fetchone()[0]

    def first_row(self, key: str, scope: Scope, now: int) -> MemoryRow | None:
        visible, args = visible_sql(scope, now)
        r = self.store.reader().execute(
            f"SELECT {_COLUMNS} FROM memory m WHERE m.key = ? AND m.part = 0 AND {visible} "
            "ORDER BY m.scope = ? DESC, m.id LIMIT 1", [key, *args, scope.home]).fetchone()
        return self._row(r) if r is not None else None

    def upload(self, scope: str, key: str) -> tuple[str, bytes] | None:
        row = self.store.reader().execute(
            "SELECT mode, data FROM memory_files WHERE scope = ? AND key = ?", (scope, key)).fetchone()
        return (row[0], bytes(row[1])) if row is not None else None

    def segments(self, scope: str, key: str) -> list[MemoryRow]:
        return [self._row(r) for r in self.store.reader().execute(
            f"SELECT {_COLUMNS} FROM memory m WHERE m.scope = ? AND m.key = ? ORDER BY m.part",
            (scope, key))]

    # -- the demand log and what it feeds ----------------------------------------

    def append_demand(self, rows: list[tuple]) -> None:
        with self.store.write() as conn:
            conn.executemany("INSERT INTO demand(path, kind, symbol, action, scope, ts) "
                             "VALUES (?, ?, ?, ?, ?, ?)", rows)

    def candidates(self, kind: str, scope: Scope, threshold: int, since: int,
                   now: int) -> list[Candidate]:
        visible, args = visible_sql(scope, now)
        rows = self.store.reader().execute(
            "SELECT m.key, count(*) AS hits FROM memory m JOIN demand d "
            "ON d.path = m.key AND d.scope = m.scope AND d.kind = m.kind AND d.action = 'recall' "
            f"WHERE m.kind = ? AND m.part = 0 AND m.author = 'agent' AND {visible} AND d.ts >= ? "
            "GROUP BY m.id HAVING hits >= ? ORDER BY hits DESC, m.key",
            [kind, *args, since, threshold]).fetchall()
        return [Candidate(path=r[0], hits=r[1]) for r in rows]

    def known_facts(self, scope: Scope, now: int) -> list[KnownFact]:
        visible, args = visible_sql(scope, now)
        rows = self.store.reader().execute(
            f"SELECT m.key, m.scope, m.author, m.id, m.meta, m.created_at, "
            f"(SELECT count(*) FROM demand d WHERE d.path = m.key AND d.kind = 'fact' "
            f" AND d.action = 'recall' AND d.scope = m.scope) AS recalls "
            f"FROM memory m WHERE m.kind = 'fact' AND m.part = 0 AND {visible}", args).fetchall()
        return [KnownFact(key, row_scope, author, None, json.loads(meta_json) if meta_json else None,
                          created_at, recalls, self._text_reader(row_id))
                for key, row_scope, author, row_id, meta_json, created_at, recalls in rows]

    # -- export and import (ctxls memory export|import) ------------------------

    def export_records(self) -> Iterator[dict]:
        conn = self.store.reader()
        for r in conn.execute(
                "SELECT scope, key, part, kind, author, format, symbol, start_line, end_line, text, "
                "meta, session, created_at, occurred_at, expires_at FROM memory ORDER BY id"):
            yield memory_record(r)
        for r in conn.execute("SELECT scope, key, filename, mode, data FROM memory_files "
                              "ORDER BY scope, key"):
            yield upload_record(r)
        for r in conn.execute("SELECT path, kind, symbol, action, scope, ts FROM demand "
                              "WHERE scope IS NOT NULL ORDER BY id"):
            yield demand_record(r)

    def import_records(self, records: list[dict]) -> int:
        with self.store.write(durable=True) as conn:
            for record in records:  # all checked before any is written
                identity = stored_identity(record)
                if identity is not None and conn.execute(_HELD[identity[0]],
                                                         identity[1:]).fetchone():
                    raise already_stored(record)
            for record in records:
                if record["type"] == "memory":
                    (row_id,) = conn.execute(
                        "INSERT INTO memory(scope, key, part, kind, author, format, symbol, "
                        "start_line, end_line, text, meta, session, created_at, occurred_at, "
                        "expires_at, embed_hash) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?) "
                        "RETURNING id", memory_values(record)).fetchone()
                    self.store.put_memory_text(conn, row_id, record["kind"], record["id"],
                                               record["symbol"], record["text"])
                elif record["type"] == "upload":
                    conn.execute("INSERT INTO memory_files(scope, key, filename, mode, data) "
                                 "VALUES (?, ?, ?, ?, ?)", upload_values(record))
                else:
                    conn.execute("INSERT INTO demand(path, kind, symbol, action, scope, ts) "
                                 "VALUES (?, ?, ?, ?, ?, ?)", demand_values(record))
        return len(records)
