"""The demand log: which results were recalled or fetched, and how often.

Each recall hit appends (path, kind, symbol, "recall", ts); a ``get`` appends a
weaker "fetch". Appends are buffered and written by a background thread, so a
recall never waits for a write lock (the store's, held by a cold index between
batches, or a round trip to PostgreSQL); every read of the log flushes first.
A file's demand goes to the local store; a memory row's goes where memory
lives (``MemoryStore.append_demand``), carrying the row's scope, so one
tenant's recalls never count for another's row of the same id.

From it come the curation queues: agent-written facts recalled often enough
for a person to confirm or forget (``review_candidates``), and agent episodes
recalled often within the episode window, worth promoting to facts
(``promotion_candidates``).
"""

from __future__ import annotations

import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from ctxls.index.errors import InvalidParams, MemoryUnavailable
from ctxls.index.memory.model import DAY_MS, DEFAULT_EPISODE_WINDOW_DAYS, Candidate, MemoryStore
from ctxls.index.scopes import Scope
from ctxls.index.store import Store, now_ms

log = logging.getLogger(__name__)

DEFAULT_REVIEW_THRESHOLD = 5
DEFAULT_PROMOTION_THRESHOLD = 10
# A file's demand rows (scope NULL) only the export reads: the newest this
# many are kept, trimmed each time this many more were written. Kept whole,
# they grew ~1 KB per recall and get for as long as the daemon served.
MAX_FILE_DEMAND_ROWS = 20_000
FILE_DEMAND_TRIM_EVERY = 1_000

__all__ = ["Candidate", "Demand", "DemandLog", "DEFAULT_PROMOTION_THRESHOLD",
           "DEFAULT_REVIEW_THRESHOLD"]


@dataclass(frozen=True)
class Demand:
    path: str  # a file path or a memory id
    kind: str
    symbol: str | None
    scope: str | None  # a memory row's scope; None for a file


class DemandLog:
    def __init__(self, store: Store, memory: MemoryStore):
        self.store = store
        self.memory = memory
        self._pending: list[tuple] = []
        self._lock = threading.Lock()
        self._flush_lock = threading.Lock()
        self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ctxls-demand")
        self._file_rows_untrimmed = FILE_DEMAND_TRIM_EVERY  # trimmed at the first write

    def record(self, entries: list[Demand], action: str) -> None:
        """Append these entries (written shortly, in the background)."""
        if not entries:
            return
        ts = now_ms()
        with self._lock:
            first = not self._pending
            self._pending.extend((d.path, d.kind, d.symbol, action, d.scope, ts) for d in entries)
        if first:
            self._writer.submit(self._flush_in_background)

    def _flush_in_background(self) -> None:
        try:
            self.flush()
        except MemoryUnavailable as exc:  # demand is a hint: losing some never fails a request
            log.warning("demand log not written: %s", exc.message)

    def flush(self) -> None:
        # Whole flushes are serialised: a reader's flush (_candidates) returns
        # only once rows a background flush already took are written too.
        with self._flush_lock:
            with self._lock:
                rows, self._pending = self._pending, []
            files = [r for r in rows if r[4] is None]
            memory = [r for r in rows if r[4] is not None]
            if files:
                self._file_rows_untrimmed += len(files)
                with self.store.write() as conn:
                    conn.executemany("INSERT INTO demand(path, kind, symbol, action, scope, ts) "
                                     "VALUES (?, ?, ?, ?, ?, ?)", files)
                    if self._file_rows_untrimmed >= FILE_DEMAND_TRIM_EVERY:
                        self._file_rows_untrimmed = 0
                        conn.execute(
                            "DELETE FROM demand WHERE scope IS NULL AND id <= (SELECT id FROM demand "
                            "WHERE scope IS NULL ORDER BY id DESC LIMIT 1 OFFSET ?)",
                            (MAX_FILE_DEMAND_ROWS,))
            if memory:
                self.memory.append_demand(memory)

    def close(self) -> None:
        self._writer.shutdown(wait=True)
        try:
            self.flush()
        except MemoryUnavailable as exc:
            log.warning("demand log not written: %s", exc.message)

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
        return self.memory.candidates(kind, scope, threshold, since, now_ms())
