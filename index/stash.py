"""The stash: parked payloads (a long tool output, a build log) addressable
only by exact id. Never indexed, never recalled, not scoped: whoever holds
the id may peek at it or evict it."""

from __future__ import annotations

from dataclasses import dataclass

from ctxls.index.errors import InvalidParams, TooLarge
from ctxls.index.store import Store, now_ms

MAX_STASH_BYTES = 16 * 1024 * 1024
MAX_STASH_ID_CHARS = 1024
# peek shows this many characters from each end; a longer text's middle is elided.
PEEK_CHARS = 1024


@dataclass
class Peek:
    id: str
    bytes: int
    head: str
    tail: str
    created_at: int
    truncated: bool  # the middle was elided


def _check_id(stash_id: str) -> None:
    if not isinstance(stash_id, str) or not stash_id or len(stash_id) > MAX_STASH_ID_CHARS:
        raise InvalidParams("id", f"must be a non-empty string of at most {MAX_STASH_ID_CHARS} "
                                  "characters")


class Stash:
    def __init__(self, store: Store):
        self.store = store

    def put(self, stash_id: str, text: str) -> None:
        """Park ``text`` under ``stash_id`` (replacing what was there)."""
        _check_id(stash_id)
        if not isinstance(text, str):
            raise InvalidParams("text", "must be a string")
        size = len(text.encode("utf-8", "surrogatepass"))
        if size > MAX_STASH_BYTES:
            raise TooLarge("stash", MAX_STASH_BYTES)
        with self.store.write(durable=True) as conn:
            conn.execute("INSERT INTO stash(id, text, bytes, created_at) VALUES (?, ?, ?, ?) "
                         "ON CONFLICT(id) DO UPDATE SET text = excluded.text, "
                         "bytes = excluded.bytes, created_at = excluded.created_at",
                         (stash_id, text, size, now_ms()))

    def peek(self, stash_id: str) -> Peek | None:
        _check_id(stash_id)
        conn = self.store.reader()
        row = conn.execute(
            "SELECT bytes, created_at, length(text) FROM stash WHERE id = ?", (stash_id,)).fetchone()
        if row is None:
            return None
        size, created_at, chars = row
        truncated = chars > 2 * PEEK_CHARS
        # substr() reads only the ends: a 16 MiB payload is never loaded whole.
        head, tail = conn.execute(
            "SELECT substr(text, 1, ?), CASE WHEN ? THEN substr(text, -?) ELSE '' END "
            "FROM stash WHERE id = ?",
            (PEEK_CHARS if truncated else chars, truncated, PEEK_CHARS, stash_id)).fetchone()
        return Peek(id=stash_id, bytes=size, head=head, tail=tail, created_at=created_at,
                    truncated=truncated)

    def evict(self, stash_id: str | None = None, older_than: int | None = None,
              max_count: int | None = None) -> int:
        """Remove by id, everything stashed before ``older_than`` (ms), and/or
        all but the newest ``max_count``. Returns how many were removed."""
        if stash_id is not None:
            _check_id(stash_id)
        if older_than is not None and (isinstance(older_than, bool) or older_than < 0):
            raise InvalidParams("olderThan", "must be a non-negative timestamp in ms")
        if max_count is not None and (isinstance(max_count, bool) or max_count < 0):
            raise InvalidParams("maxCount", "must be a non-negative integer")
        if stash_id is None and older_than is None and max_count is None:
            raise InvalidParams("id", "evict needs id, olderThan or maxCount")
        removed = 0
        with self.store.write(durable=True) as conn:
            if stash_id is not None:
                removed += conn.execute("DELETE FROM stash WHERE id = ?", (stash_id,)).rowcount
            if older_than is not None:
                removed += conn.execute("DELETE FROM stash WHERE created_at < ?",
                                        (older_than,)).rowcount
            if max_count is not None:
                removed += conn.execute(
                    "DELETE FROM stash WHERE id NOT IN "
                    "(SELECT id FROM stash ORDER BY created_at DESC, rowid DESC LIMIT ?)",
                    (max_count,)).rowcount
        return removed
