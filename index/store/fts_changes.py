"""Which rows of the file-kind FTS5 tables each commit of this process
changed, keyed by the table's ``fts_generation`` before and after it: what
lets a cache derived from an FTS table (index/postings.py) follow the index
by re-reading only those rows.

A commit is recorded only when no other connection committed between its
start and the generations read after it (``PRAGMA data_version``): then
"before → after" is this commit's change and nothing else's. A commit of
another process, or a table rebuilt on open (``opened``), leaves no record:
a reader finding no chain of records from what it has to what it sees
starts again from the table itself.
"""

from __future__ import annotations

import collections
import threading

# Commits remembered per database and table (oldest dropped first).
MAX_COMMITS = 1024


class _Journal:
    def __init__(self) -> None:
        self.epoch = 0
        # table -> generation before a commit -> (generation after it, rowids it wrote or dropped)
        self.commits: dict[str, collections.OrderedDict[object, tuple[object, frozenset[int]]]] = {}


_JOURNALS: dict[str, _Journal] = {}
_LOCK = threading.Lock()


def _journal(database: str) -> _Journal:
    journal = _JOURNALS.get(database)
    if journal is None:
        journal = _JOURNALS[database] = _Journal()
    return journal


def opened(database: str) -> None:
    """The store file ``database`` was (re)opened: its tables may have been
    rebuilt without a record, so every cache of them starts again."""
    with _LOCK:
        journal = _journal(database)
        journal.epoch += 1
        journal.commits.clear()


def epoch(database: str) -> int:
    """Bumped by ``opened``: a cache of another epoch is dropped."""
    with _LOCK:
        return _journal(database).epoch


def record(database: str, table: str, before: object, after: object, rowids: set[int]) -> None:
    """One commit took ``table`` from generation ``before`` to ``after``,
    writing or dropping exactly ``rowids``."""
    if before == after:
        return
    with _LOCK:
        commits = _journal(database).commits.setdefault(table, collections.OrderedDict())
        commits[before] = (after, frozenset(rowids))
        while len(commits) > MAX_COMMITS:
            commits.popitem(last=False)


def rows_changed(database: str, table: str, start: object, end: object) -> set[int] | None:
    """The rowids the commits from generation ``start`` to ``end`` wrote or
    dropped, or None when there is no recorded chain between them."""
    changed: set[int] = set()
    with _LOCK:
        commits = _journal(database).commits.get(table, {})
        at = start
        for _ in range(len(commits)):
            if at == end:
                return changed
            step = commits.get(at)
            if step is None:
                return None
            at, rowids = step
            changed |= rowids
        return changed if at == end else None
