"""Written memory: facts, episodes and documents, scoped per tenant, behind
one storage interface with two backends.

- ``model``: the rows, bounds and checks both backends share, and the
  :class:`MemoryStore` interface.
- ``api``: :class:`Memory`, the verbs; every argument is checked there once.
- ``sqlite``: the default backend, in the workspace's own store.
- ``postgres``: team memory in a shared PostgreSQL with pgvector
  (``memoryUrl``), fenced per tenant by row-level security too.
- ``transfer``: JSON lines to move memory between backends.
"""

from __future__ import annotations

from ctxls.index.memory.api import Memory
from ctxls.index.memory.model import (DAY_MS, DEFAULT_EPISODE_WINDOW_DAYS, MEMORY_KINDS,
                                      IngestResult, MemoryItem, MemoryNode, MemoryRow, MemoryStore,
                                      Page)
from ctxls.index.memory.sqlite import SqliteMemoryStore

__all__ = ["DAY_MS", "DEFAULT_EPISODE_WINDOW_DAYS", "MEMORY_KINDS", "IngestResult", "Memory",
           "MemoryItem", "MemoryNode", "MemoryRow", "MemoryStore", "Page", "SqliteMemoryStore",
           "open_memory_store"]


def open_memory_store(url: str | None, store, warn=None, semantic=None) -> MemoryStore:
    """The backend ``memoryUrl`` names: PostgreSQL for ``postgresql://…``,
    else the workspace's own SQLite store."""
    if url is None:
        return SqliteMemoryStore(store)
    from ctxls.index.memory.postgres import PostgresMemoryStore  # psycopg only when asked for

    return PostgresMemoryStore(url, warn=warn, semantic=semantic)
