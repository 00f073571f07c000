"""What a SQLite error says about the store, as the library's errors:
storage failures (full, I/O, locked, corrupt) become ``StoreUnavailable`` or
``WriteFailed`` (-32006 / -32007), any other (a statement's own) ``StoreError``.
Only the store package sees ``sqlite3``'s exceptions; everything above it
catches these."""

from __future__ import annotations

import os
import sqlite3

from ctxls.index.errors import StoreError, StoreUnavailable, WriteFailed

# SQLite primary result codes (sqlite3.h) meaning "not now", never "not ours".
_TRANSIENT_REASONS = {3: "permission", 5: "locked", 6: "locked", 7: "io", 8: "readonly",
                      10: "io", 13: "full", 14: "cantopen", 15: "locked", 23: "permission"}
_CORRUPT_CODES = frozenset({11, 26})  # SQLITE_CORRUPT, SQLITE_NOTADB
# What Python's sqlite3 raises (no result code) for a TEXT value that is not
# UTF-8: a damaged byte inside a record, which quick_check does not read.
_UNDECODABLE = "Could not decode to UTF-8"
# An error's text in a message, at most: the decode error quotes the whole value.
_DETAIL_CHARS = 300


class StoreVersionError(StoreUnavailable):
    """The store was written by a newer ctxls; it is left untouched."""

    def __init__(self, db_path: str, detail: str):
        super().__init__(db_path, "version", detail)


def storage_reason(exc: sqlite3.Error) -> str | None:
    """What a SQLite error says about the store ("full", "io", "corrupt", …),
    or None for an error of the statement itself (a bug, a constraint)."""
    if isinstance(exc, sqlite3.ProgrammingError) and "closed database" in str(exc):
        # A request still running when its folder was removed (or the daemon
        # stops): the store is gone for it, not broken by it.
        return "closed"
    code = getattr(exc, "sqlite_errorcode", None)
    if code is None:
        return "corrupt" if undecodable(exc) else None
    primary = code & 0xFF
    if primary in _CORRUPT_CODES:
        return "corrupt"
    return _TRANSIENT_REASONS.get(primary)


def undecodable(exc: BaseException) -> bool:
    """A TEXT value read was not UTF-8: the record holding it is damaged."""
    return isinstance(exc, sqlite3.Error) and str(exc).startswith(_UNDECODABLE)


def detail(exc: BaseException) -> str:
    """``exc``'s text for a message, bounded: a decode error names its column,
    never the damaged value (a whole row of text)."""
    text = str(exc)
    if undecodable(exc):
        text = text.split(" with text ", 1)[0] + " (a damaged value)"
    return text if len(text) <= _DETAIL_CHARS else text[:_DETAIL_CHARS] + "…"


def store_error(exc: sqlite3.Error, db_path: str, writing: bool) -> StoreError | None:
    """The protocol error for a storage failure, or None when ``exc`` is not one."""
    reason = storage_reason(exc)
    if reason is None:
        return None
    text = detail(exc)
    folder = os.path.dirname(db_path) or "."
    if reason == "cantopen" and os.path.isdir(folder) and not os.access(folder, os.W_OK):
        # SQLite says only "unable to open database file" when it cannot make
        # the journal beside a store it may read (a read-only checkout or mount).
        reason = "readonly"
        text = (f"its folder {folder} cannot be written (a read-only checkout or mount): "
                "make it writable, or set dbPath to a store elsewhere")
    if writing:
        return WriteFailed(db_path, reason, text)
    return StoreUnavailable(db_path, reason, text)



def translated(exc: sqlite3.Error, db_path: str, writing: bool) -> StoreError:
    """Any SQLite error as the library's: a storage failure's own kind, else
    the statement's failure (``StoreError``, -32603)."""
    return store_error(exc, db_path, writing) or StoreError(db_path, "statement", detail(exc))
