"""The edit log: which definitions changed, when and by whom (the editor's
buffer or the disk); recent activity reads it, and so does the knowledge
block ("edited since").

A daemon runs for weeks and logs every buffer update, so the log is kept
bounded by merging: a day after they were made, one item's edits (path,
symbol, kind, origin) of one UTC day become one row, and after 30 days those
of one 30-day span do. The row kept is the latest, with ``times`` the number
of edits it stands for, so an item's latest time and origin never change and
its count changes only where a window's edge cuts a merged span.
"""

from __future__ import annotations

import time

from ctxls.index.model import ParsedFile
from ctxls.index.store import Connection

DAY_MS = 86_400_000
# Edits younger than this stay one row each (a checkout's re-dating, see
# Engine.log_git_writes, touches only the last seconds).
MERGE_AFTER_MS = DAY_MS
# Beyond this age, spans of this length merge.
LONG_SPAN_AFTER_MS = 30 * DAY_MS
LONG_SPAN_MS = 30 * DAY_MS
# How often a logging process merges (a scan of the log's rows older than a
# day: a few ms once merged).
MERGE_INTERVAL_S = 3600.0


def log_changed_symbols(conn: Connection, path: str, parsed: ParsedFile, ts: int,
                        origin: str) -> None:
    """One row per definition whose (symbol, lines) changed, appeared or
    disappeared in this update; for what no definition covers (a Markdown
    section, module residue, a line window) the chunk's symbol, or None.
    ``origin``: "editor" (a buffer's text) or "disk" (a file's)."""
    old_defs = set(conn.execute(
        "SELECT s.symbol, s.hash FROM symbols s JOIN files f ON f.id = s.file_id WHERE f.path = ?",
        (path,)).fetchall())
    old_chunks = conn.execute(
        "SELECT c.symbol, c.kind, c.hash FROM chunks c JOIN files f ON f.id = c.file_id "
        "WHERE f.path = ?", (path,)).fetchall()
    kind = parsed.chunks[0].kind if parsed.chunks else (old_chunks[0]["kind"] if old_chunks else "code")
    new_defs = {(d.symbol, d.hash) for d in parsed.symbols}
    changed: set[str | None] = {symbol for symbol, _ in new_defs ^ {tuple(r) for r in old_defs}}
    def_names = {symbol for symbol, _ in new_defs} | {r[0] for r in old_defs}
    chunk_diff = ({(c.symbol, c.hash) for c in parsed.chunks}
                  ^ {(r["symbol"], r["hash"]) for r in old_chunks})
    for symbol, _ in chunk_diff:
        if symbol not in def_names:
            changed.add(symbol)
        elif not changed:  # residue packed with a definition
            changed.add(None)
    conn.executemany("INSERT INTO edits(path, symbol, kind, ts, origin) VALUES (?, ?, ?, ?, ?)",
                     [(path, symbol, kind, ts, origin)
                      for symbol in sorted(changed, key=lambda s: s or "")])


def merge_old_edits(conn: Connection, now: int) -> int:
    """Merge the rows older than MERGE_AFTER_MS as the module says; returns
    how many rows went."""
    rows = conn.execute(
        "SELECT id, keep, total FROM ("
        " SELECT id, count(*) OVER span AS rows_in_span,"
        "  first_value(id) OVER span AS keep, sum(coalesce(times, 1)) OVER span AS total"
        " FROM (SELECT *, CASE WHEN ts < ? THEN -1 - ts / ? ELSE ts / ? END AS span_key"
        "       FROM edits WHERE ts < ?)"
        " WINDOW span AS (PARTITION BY path, symbol, kind, origin, span_key"
        "  ORDER BY ts DESC, id DESC ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING))"
        " WHERE rows_in_span > 1",
        (now - LONG_SPAN_AFTER_MS, LONG_SPAN_MS, DAY_MS, now - MERGE_AFTER_MS)).fetchall()
    kept = {(row[1], row[2]) for row in rows}
    gone = [(row[0],) for row in rows if row[0] != row[1]]
    conn.executemany("UPDATE edits SET times = ? WHERE id = ?", [(total, keep) for keep, total in kept])
    conn.executemany("DELETE FROM edits WHERE id = ?", gone)
    return len(gone)


class EditLogMerger:
    """When a logging process last merged: it merges on its first log and
    then at most every MERGE_INTERVAL_S, inside the logging transaction."""

    def __init__(self) -> None:
        self._last = float("-inf")

    def merge_if_due(self, conn: Connection, now: int) -> None:
        if time.monotonic() - self._last >= MERGE_INTERVAL_S:
            merge_old_edits(conn, now)
            self._last = time.monotonic()
