"""The demand log: which results were recalled or fetched, and how often.

Each recall hit appends (path, kind, symbol, "recall", ts); a ``get`` appends a
weaker "fetch". Appends are buffered and written by a background thread, so a
recall never waits for the store's write lock (held by a cold index between
batches); every read of the log flushes first.

From it come the curation queues: agent-written facts recalled often enough
for a person to confirm or forget (``review_candidates``), and agent episodes
recalled often within the episode window, worth promoting to facts
(``promotion_candidates``). A memory row's demand carries its scope, so one
tenant's recalls never count for another's row of the same id.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from ctxls.index.errors import InvalidParams
from ctxls.index.memory import DAY_MS, DEFAULT_EPISODE_WINDOW_DAYS, visible_sql
from ctxls.index.scopes import Scope
from ctxls.index.store import Store, now_ms

DEFAULT_REVIEW_THRESHOLD = 5
DEFAULT_PROMOTION_THRESHOLD = 10


@dataclass(frozen=True)
class Demand:
    path: str  # a file path or a memory id
    kind: str
    symbol: str | None
    scope: str | None  # a memory row's scope; None for a file


@dataclass
class Candidate:
    path: str
    hits: int


class DemandLog:
    def __init__(self, store: Store):
        self.store = store
        self._pending: list[tuple] = []
        self._lock = threading.Lock()
        self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ctxls-demand")

    def record(self, entries: list[Demand], action: str) -> None:
        """Append these entries (written shortly, in the background)."""
        if not entries:
            return
        ts = now_ms()
        with self._lock:
            first = not self._pending
            self._pending.extend((d.path, d.kind, d.symbol, action, d.scope, ts) for d in entries)
        if first:
            self._writer.submit(self.flush)

    def flush(self) -> None:
        with self._lock:
            rows, self._pending = self._pending, []
        if rows:
            with self.store.write() as conn:
                conn.executemany("INSERT INTO demand(path, kind, symbol, action, scope, ts) "
                                 "VALUES (?, ?, ?, ?, ?, ?)", rows)

    def close(self) -> None:
        self._writer.shutdown(wait=True)
        self.flush()

    def review_candidates(self, scope: Scope, threshold: int = DEFAULT_REVIEW_THRESHOLD
                          ) -> list[Candidate]:
        """Agent-written facts recalled at least ``threshold`` times."""
        return self._candidates("fact", scope, threshold, since=0)

    def promotion_candidates(self, scope: Scope, threshold: int = DEFAULT_PROMOTION_THRESHOLD,
                             window_days: float = DEFAULT_EPISODE_WINDOW_DAYS) -> list[Candidate]:
        """Agent episodes recalled at least ``threshold`` times within the window."""
        return self._candidates("episode", scope, threshold,
                                since=now_ms() - int(window_days * DAY_MS))

    def _candidates(self, kind: str, scope: Scope, threshold: int, since: int) -> list[Candidate]:
        if isinstance(threshold, bool) or not isinstance(threshold, int) or threshold < 1:
            raise InvalidParams("threshold", "must be a positive integer")
        self.flush()
        visible, args = visible_sql(scope, now_ms())
        rows = self.store.reader().execute(
            "SELECT m.key, count(*) AS hits FROM memory m JOIN demand d "
            "ON d.path = m.key AND d.scope = m.scope AND d.kind = m.kind AND d.action = 'recall' "
            f"WHERE m.kind = ? AND m.part = 0 AND m.author = 'agent' AND {visible} AND d.ts >= ? "
            "GROUP BY m.id HAVING hits >= ? ORDER BY hits DESC, m.key",
            [kind, *args, since, threshold]).fetchall()
        return [Candidate(path=r[0], hits=r[1]) for r in rows]
