"""Damage inside records, which ``PRAGMA quick_check`` does not read: a TEXT
value that is not UTF-8 (one flipped byte in a chunk's text or a file's term
counts) fails every query that reads it, for good. ``find_damage`` reads every
TEXT value of the store; rows derived from the repository are then dropped
(a pass derives them again), damage in anything else is the whole store's."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from typing import Callable, Iterable

from ctxls.index.store.failures import undecodable
from ctxls.index.store.schema import FTS_TABLE_BY_KIND, VECTOR_TABLES

# The file-sourced tables and the column naming each row's file.
FILE_ROW_TABLES = {"files": "id", "chunks": "file_id", "symbols": "file_id", "imports": "file_id",
                   "file_terms": "file_id"}
# Where FTS5 keeps the file-kind tables' text (rowid = chunk id).
_FTS_CONTENT = {f"{table}_content": table for table in FTS_TABLE_BY_KIND.values()}
# Rows that are derived but not a file's: a damaged one is deleted (a vector
# is embedded again, a demand row is one count of a tally).
DROPPABLE_TABLES = (*VECTOR_TABLES, "demand")


@dataclass
class RecordDamage:
    files: set[int] = field(default_factory=set)  # files.id whose derived rows are damaged
    fts_rows: dict[str, set[int]] = field(default_factory=dict)  # file-kind FTS table -> rowids
    droppable: dict[str, set[int]] = field(default_factory=dict)  # DROPPABLE_TABLES -> rowids
    elsewhere: list[str] = field(default_factory=list)  # "table.column" of written rows

    def __bool__(self) -> bool:
        return bool(self.files or self.fts_rows or self.droppable or self.elsewhere)

    def describe(self) -> str:
        parts = []
        if self.files or self.fts_rows:
            parts.append(f"undecodable text in the rows of {len(self.files)} file(s)"
                         + (f" and {sum(map(len, self.fts_rows.values()))} full-text row(s)"
                            if self.fts_rows else ""))
        for table, rows in self.droppable.items():
            parts.append(f"{len(rows)} undecodable {table} row(s)")
        if self.elsewhere:
            parts.append(f"undecodable text in {', '.join(self.elsewhere)}")
        return "; ".join(parts)


def find_damage(conn: sqlite3.Connection) -> RecordDamage:
    """Every TEXT value of every table that is not UTF-8, by what it belongs
    to. ``conn`` is the checker's own connection (its text factory is changed
    while a damaged table is searched). About 0.5 s for a 160 MB store."""
    damage = RecordDamage()
    tables = [r[0] for r in conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' "
        "AND sql NOT LIKE 'CREATE VIRTUAL TABLE%'")]
    for table in tables:
        columns = [r[1] for r in conn.execute(f"PRAGMA table_info(\"{table}\")")]
        # Only TEXT values are decoded (a vector or an upload is a BLOB of any bytes).
        texts = ", ".join(f"CASE WHEN typeof(\"{c}\") = 'text' THEN \"{c}\" END" for c in columns)
        try:  # sqlite3 decodes in C: a sound table costs no Python per value
            for _ in conn.execute(f"SELECT {texts} FROM \"{table}\""):
                pass
            continue
        except sqlite3.OperationalError as exc:
            if not undecodable(exc):
                raise
        conn.text_factory = bytes  # the values as stored: which rows, which columns
        try:
            _search(conn, damage, table, columns, texts)
        finally:
            conn.text_factory = str
    return damage


def _search(conn: sqlite3.Connection, damage: RecordDamage, table: str, columns: list[str],
            texts: str) -> None:
    key = FILE_ROW_TABLES.get(table) or ("id" if table in _FTS_CONTENT else "rowid")
    try:
        rows = conn.execute(f"SELECT {key}, {texts} FROM \"{table}\"")
    except sqlite3.OperationalError:  # no rowid (a table of another layout): no key to drop by
        rows = ((None, *r) for r in conn.execute(f"SELECT {texts} FROM \"{table}\""))
    for row in rows:
        for column, value in zip(columns, row[1:]):
            if value is None:
                continue
            try:
                value.decode("utf-8")
            except UnicodeDecodeError:
                _file(damage, table, column, row[0])
                break


def _file(damage: RecordDamage, table: str, column: str, key) -> None:
    if table in FILE_ROW_TABLES and key is not None:
        damage.files.add(key)
    elif table in _FTS_CONTENT and key is not None:
        damage.fts_rows.setdefault(_FTS_CONTENT[table], set()).add(key)
    elif table in DROPPABLE_TABLES and key is not None:
        damage.droppable.setdefault(table, set()).add(key)
    elif f"{table}.{column}" not in damage.elsewhere:
        damage.elsewhere.append(f"{table}.{column}")


def delete_file_rows(conn: sqlite3.Connection, file_id: int,
                     fts_rows_changing: Callable[[sqlite3.Connection, str, Iterable[int]], None]
                     | None = None) -> None:
    """Delete a file's chunks, their FTS rows, its symbols, imports and term
    counts (not its ``files`` row), reading no text: they may be damaged.
    ``fts_rows_changing``: told each FTS table's rowids before they go."""
    chunk_ids = [r[0] for r in conn.execute("SELECT id FROM chunks WHERE file_id = ?", (file_id,))]
    for table in FTS_TABLE_BY_KIND.values():  # a chunk's id is its FTS row's, in whichever table
        if fts_rows_changing is not None:
            fts_rows_changing(conn, table, chunk_ids)
        conn.execute(f"DELETE FROM {table} WHERE rowid IN (SELECT id FROM chunks WHERE file_id = ?)",
                     (file_id,))
    for table, column in FILE_ROW_TABLES.items():
        if table != "files":
            conn.execute(f"DELETE FROM {table} WHERE {column} = ?", (file_id,))


def drop_damaged(conn: sqlite3.Connection, damage: RecordDamage) -> None:
    """Delete what ``damage`` names of derived rows (inside the caller's write
    transaction): each damaged file's rows whole, so the next pass indexes it
    as a new file, and the damaged rows of tables derived otherwise."""
    files = set(damage.files)
    for table, rowids in damage.fts_rows.items():
        for rowid in rowids:
            row = conn.execute("SELECT file_id FROM chunks WHERE id = ?", (rowid,)).fetchone()
            if row is not None:
                files.add(row[0])
            else:  # a full-text row of no chunk
                conn.execute(f"DELETE FROM {table} WHERE rowid = ?", (rowid,))
    for file_id in files:
        delete_file_rows(conn, file_id)
        conn.execute("DELETE FROM files WHERE id = ?", (file_id,))
    for table in damage.fts_rows:
        # Deleting a row tokenizes its stored text again: damaged, it may not
        # take out the tokens it put in. The index is rebuilt from the text left.
        conn.execute(f"INSERT INTO {table}({table}) VALUES ('rebuild')")
    for table, rowids in damage.droppable.items():
        conn.executemany(f"DELETE FROM {table} WHERE rowid = ?", [(rowid,) for rowid in rowids])
