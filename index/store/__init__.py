"""The SQLite store: on-disk format, versioning, crash behaviour. The only
part of ctxls that imports ``sqlite3`` (tests/test_layers.py): the rest
names a connection ``Connection`` and catches the library's errors
(``ctxls.index.errors.StoreError`` and its kinds), never SQLite's.

Modules: ``schema`` (layout, versions, migrations), ``database`` (``Store``:
opening, connections, transactions, read snapshots), ``reads``, ``writes``,
``recovery`` (damage, quarantine, carrying rows over), ``records`` (damage
inside records, which quick_check does not read), ``failures`` (what a
SQLite error means, as the library's error).

Format (docs/architecture.md, "Store format", says the same in prose):

- One SQLite file (default ``<root>/.ctxls/index.db``) in WAL mode. Every
  change of one file's rows (its ``files`` row, chunks, FTS rows and import
  edges) is one transaction, so a crash leaves each file either wholly old or
  wholly new; an interrupted cold index resumes where it stopped because
  finished files pass the (mtime, size) fast path next time.
- ``meta`` is a key/value table every version can read. It holds
  ``schema_version`` (table layout) and ``index_stamp`` (chunker and
  tokenizer versions: what file-sourced rows were derived with), and
  ``paths_generation``, renewed whenever a ``files`` row comes or goes.
- File-sourced tables (``files``, ``chunks``, ``symbols``, ``fts_*``,
  ``imports``, ``file_terms``) are derived data: on a stamp or schema
  mismatch they are dropped and rebuilt from the repository. The ``edits``
  log is history, not derivable, and is kept across rebuilds, as are
  ``vectors``, ``fast_vectors`` and the written memory (``memory``, ``memory_files``, their
  ``fts_memory_*`` tables, ``demand``, ``stash``).
- Opening a store of an older layout upgrades it in place: new tables are
  created, and file rows are rebuilt only when a version in
  ``_REBUILDS_FILE_ROWS`` lies between the two.
- A store written by a newer schema than this code knows is never modified:
  opening it raises :class:`StoreVersionError`.
- Opening tells "not ours / corrupt" from "cannot open now". An error that
  says "not now" (I/O, full disk, permissions, locked, read-only) moves
  nothing: the store stays unavailable (:class:`StoreUnavailable`, -32006, on
  every access) and every access after ``RETRY_S`` tries again. A ``dbPath``
  that is a folder, not SQLite, or another application's SQLite file is
  refused the same way and never touched. Only a file that is ours (the
  ``APPLICATION_ID`` in its header, or our ``meta`` table) and that SQLite
  proves corrupt is moved aside (``index.db.repairing-<ms>``); a new store
  is created, the written rows that can still be read (``CARRIED_TABLES``)
  are carried into it, and only then is the file renamed
  ``index.db.corrupt-<ms>``. A ``repairing-`` file left by a process killed
  in between is carried by the next open (a trusted one; another is
  quarantined).
- A store that opens but is damaged (``PRAGMA quick_check`` on open, when a
  query meets corruption, and before a forced pass) is handled like a corrupt
  one: moved aside, rebuilt, its readable written rows carried in
  (``repair`` says so).
- The same checks read every TEXT value (``records``): a value that is not
  UTF-8 (a flipped byte inside a record, which quick_check does not see)
  failed every query reading it. In a file's rows it drops that file's rows
  (the next pass indexes it again); in a vector or demand row, that row; in
  written rows it is the whole store's damage (moved aside, as above). A
  query meeting one makes the store suspect like any corruption, and a
  file's rewrite that meets one writes the file's rows anew.
- An empty (0-byte) store file is replaced by a new store, and ``repair``
  says so.
- A new store is sealed in its first commit, and opening, creating,
  quarantining and repairing hold a lock on the store's folder (``flock``),
  so no process sees another's store half made.
- A store without this user's seal (``index/trust.py``: one that came with
  the checkout, was copied from elsewhere or made by another user) is moved
  aside whole as ``index.db.quarantined-<ms>``; its written rows are served
  nowhere until ``import_quarantined`` (``ctxls trust-memory``).
- A write that fails for the store's sake (full disk, read-only, I/O) raises
  :class:`WriteFailed` (-32007): nothing was committed.
"""

from ctxls.index.store.database import FOLD_SQL, Connection, Row, Store, read_snapshot
from ctxls.index.store.failures import StoreVersionError, storage_reason, store_error
from ctxls.index.store.reads import (FileState, connection_cache, file_term_count, fts_generation,
                                     generated_paths, held_term, held_terms, parse_file_terms, paths_generation,
                                     windowed_files)
from ctxls.index.store.recovery import CARRIED_TABLES, QUARANTINE_LABEL
from ctxls.index.store.schema import (APPLICATION_ID, CHUNKER_VERSION, FTS_TABLE_BY_KIND, INDEX_COMPLETE_KEY,
                                      INDEX_STAMP,
                                      MEMORY_FTS_TABLE_BY_KIND, MEMORY_TEXT_VERSION, SCHEMA_VERSION,
                                      TOKENIZER_VERSION, VECTOR_TABLES)
from ctxls.index.store.writes import FileRecord, now_ms

__all__ = ["APPLICATION_ID", "CARRIED_TABLES", "CHUNKER_VERSION", "Connection", "FOLD_SQL", "FTS_TABLE_BY_KIND",
           "FileRecord", "FileState", "INDEX_COMPLETE_KEY", "INDEX_STAMP", "MEMORY_FTS_TABLE_BY_KIND", "MEMORY_TEXT_VERSION",
           "QUARANTINE_LABEL",
           "Row", "SCHEMA_VERSION", "Store", "StoreVersionError", "TOKENIZER_VERSION",
           "VECTOR_TABLES", "connection_cache", "file_term_count", "fts_generation", "generated_paths",
           "held_term", "held_terms",
           "now_ms", "parse_file_terms", "paths_generation", "read_snapshot", "storage_reason",
           "store_error", "windowed_files"]
