"""Writing file rows (inside the caller's write transaction): a file's
files row, chunks, FTS rows, symbols, imports and term counts, and the
vectors nothing embeds any more."""

from __future__ import annotations

import collections
import logging
import sqlite3
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ctxls.index.embed_text import embedding_hash
from ctxls.index.model import Chunk, ImportRef, SymbolDef, split_symbol
from ctxls.index.query import name_key
from ctxls.index.store.failures import detail, undecodable
from ctxls.index.store.reads import parse_file_terms
from ctxls.index.store.records import delete_file_rows
from ctxls.index.store.schema import (FTS_TABLE_BY_KIND, MEMORY_FTS_TABLE_BY_KIND, VECTOR_TABLES,
                                      _unreferenced, new_paths_generation)
from ctxls.index.tokenize import expand, expand_tokens, fold, memory_index_text

if TYPE_CHECKING:
    from ctxls.index.store.database import Connection

log = logging.getLogger(__name__)

@dataclass(frozen=True)
class FileRecord:
    path: str
    language: str
    size: int
    mtime_ns: int
    hash: str
    source: str
    unparsed: str | None = None  # ParsedFile.unparsed
    generated: bool = False  # its text says a program wrote it (paths.says_generated)




# Beyond this many changed tokens (a file rewritten, not edited), one parse
# and rewrite of the row is cheaper than editing it token by token.
_IN_PLACE_TERM_EDITS = 64


def _update_file_terms(conn: Connection, file_id: int, kind: str, chunk_change: int,
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
    return fold(split_symbol(symbol)[1])  # compared as names are (any case, NFC or NFD)



class FileRows:
    """``Store``'s writes of file rows and of memory's FTS rows."""

    def delete_file(self, conn: Connection, path: str) -> bool:
        row = conn.execute("SELECT id FROM files WHERE path = ?", (path,)).fetchone()
        if row is None:
            return False
        self._files_touched = True
        old_hashes = self._delete_file_rows(conn, row[0])
        conn.execute("DELETE FROM files WHERE id = ?", (row[0],))
        new_paths_generation(conn)
        self.drop_orphan_vectors(conn, old_hashes)
        return True

    def _delete_file_rows(self, conn: Connection, file_id: int) -> list[str]:
        """Drop a file's chunks, FTS rows and imports; return its embed hashes."""
        old_hashes = [r[0] for r in conn.execute(
            "SELECT DISTINCT embed_hash FROM chunks WHERE file_id = ?", (file_id,))]
        delete_file_rows(conn, file_id, self.fts_rows_changing)
        return old_hashes

    def drop_orphan_vectors(self, conn: Connection, hashes: list[str]) -> None:
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

    def put_file(self, conn: Connection, record: FileRecord, chunks: list[Chunk],
                 imports: list[tuple[ImportRef, str | None]],
                 symbols: list[SymbolDef] = (), rewrite: bool = False) -> int:
        """Replace one file's rows (inside the caller's write transaction).

        Chunks whose (hash, symbol, kind) survived keep their rows, FTS rows
        and vectors; only their line range is updated. So an edit to one
        function rewrites one chunk, whatever the file's size: the didChange
        path stays fast on large files. ``rewrite`` (a forced pass) writes
        every row from the text at hand, reusing none: a row damaged in a way
        no check can see (a byte changed, still UTF-8, its hash column not)
        is replaced too. Vectors stay: they are keyed by what is embedded.

        Old rows that cannot be read (a damaged byte in a chunk's text or the
        file's term counts) are dropped and the file written whole, as a new
        one: its rows are derived from the text at hand. The store is then
        suspect (its next access checks it whole).
        """
        conn.execute("SAVEPOINT put_file")
        try:
            if rewrite:
                self._drop_file_rows(conn, record.path)
            file_id = self._put_file_rows(conn, record, chunks, imports, symbols)
        except sqlite3.Error as exc:
            if not undecodable(exc):
                raise  # the caller's transaction is rolled back whole
            conn.execute("ROLLBACK TO put_file")
            log.error("index store %s: the rows of %s are damaged (%s); writing them anew",
                      self.db_path, record.path, detail(exc))
            self.suspect(f"damaged rows of {record.path}: {detail(exc)}")
            self._drop_file_rows(conn, record.path)
            file_id = self._put_file_rows(conn, record, chunks, imports, symbols)
        conn.execute("RELEASE put_file")
        return file_id

    def _drop_file_rows(self, conn: Connection, path: str) -> None:
        """A file's rows gone (not its ``files`` row), reading none of their text."""
        row = conn.execute("SELECT id FROM files WHERE path = ?", (path,)).fetchone()
        if row is not None:
            delete_file_rows(conn, row[0], self.fts_rows_changing)

    def _put_file_rows(self, conn: Connection, record: FileRecord, chunks: list[Chunk],
                       imports: list[tuple[ImportRef, str | None]],
                       symbols: list[SymbolDef]) -> int:
        self._files_touched = True
        row = conn.execute("SELECT id FROM files WHERE path = ?", (record.path,)).fetchone()
        old: dict[tuple, list[tuple[int, int, int, str]]] = {}
        if row is not None:
            file_id = row[0]
            conn.execute(
                "UPDATE files SET language=?, size=?, mtime_ns=?, hash=?, source=?, indexed_at=?, "
                "unparsed=?, generated=? WHERE id=?",
                (record.language, record.size, record.mtime_ns, record.hash, record.source,
                 now_ms(), record.unparsed, int(record.generated), file_id))
            for cid, chash, symbol, kind, start, end, embed in conn.execute(
                    "SELECT id, hash, symbol, kind, start_line, end_line, embed_hash FROM chunks "
                    "WHERE file_id = ? ORDER BY start_line", (file_id,)):
                old.setdefault((chash, symbol, kind), []).append((cid, start, end, embed))
            conn.execute("DELETE FROM imports WHERE file_id = ?", (file_id,))
            conn.execute("DELETE FROM symbols WHERE file_id = ?", (file_id,))
        else:
            file_id = conn.execute(
                "INSERT INTO files(path, language, size, mtime_ns, hash, source, indexed_at, unparsed, "
                "generated) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (record.path, record.language, record.size, record.mtime_ns, record.hash,
                 record.source, now_ms(), record.unparsed, int(record.generated))).lastrowid
            new_paths_generation(conn)
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
            self.fts_rows_changing(conn, table, (chunk_id,))
            conn.execute(
                f"INSERT INTO {table}(rowid, symbol, path, body) VALUES (?, ?, ?, ?)",
                (chunk_id, expand(" ".join(chunk.names)), path_tokens, " ".join(body)))
            term_changes[chunk.kind].update(set(body))
            chunk_changes[chunk.kind] += 1
        gone = [(cid, kind, embed) for (_, _, kind), rows in old.items() for cid, _, _, embed in rows]
        for cid, kind, _ in gone:
            table = FTS_TABLE_BY_KIND.get(kind, "fts_code")
            self.fts_rows_changing(conn, table, (cid,))
            conn.execute(f"DELETE FROM {table} WHERE rowid = ?", (cid,))
            (text,) = conn.execute("SELECT text FROM chunks WHERE id = ?", (cid,)).fetchone()
            term_changes[kind].subtract(set(expand_tokens(text)))
            chunk_changes[kind] -= 1
            conn.execute("DELETE FROM chunks WHERE id = ?", (cid,))
        for kind, changes in term_changes.items():
            _update_file_terms(conn, file_id, kind, chunk_changes[kind], changes)
        conn.executemany(
            "INSERT INTO symbols(file_id, symbol, name, name_key, symbol_kind, start_line, end_line, "
            "hash, line, body_end) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [(file_id, d.symbol, _symbol_name(d.symbol), name_key(split_symbol(d.symbol)[1]),
              d.symbol_kind, d.start_line, d.end_line, d.hash, d.line, d.body_end) for d in symbols])
        conn.executemany(
            "INSERT INTO imports(file_id, spec, line, target) VALUES (?, ?, ?, ?)",
            [(file_id, ref.spec, ref.line, target) for ref, target in imports])
        self.drop_orphan_vectors(conn, sorted({embed for _, _, embed in gone}))
        return file_id

    @staticmethod
    def put_memory_text(conn: Connection, row_id: int, kind: str, key: str,
                        symbol: str | None, text: str) -> None:
        """The FTS row of a written memory row (rowid = memory id): its
        text with long words' stand-ins (``memory_index_text``)."""
        conn.execute(f"INSERT INTO {MEMORY_FTS_TABLE_BY_KIND[kind]}(rowid, symbol, path, body) "
                     "VALUES (?, ?, ?, ?)",
                     (row_id, expand(symbol or ""), expand(key), expand(memory_index_text(text))))

