"""Errors the engine raises for a caller's mistake or a stale view.

Each carries the JSON-RPC code of docs/protocol.md ("Errors") and its ``data``,
so every shell (daemon, CLI, MCP) reports them the same way.
"""

from __future__ import annotations

import re
from typing import Any


class EngineError(Exception):
    code = -32603

    def __init__(self, message: str, data: dict[str, Any] | None = None):
        super().__init__(message)
        self.message = message
        self.data = data or {}


class InvalidParams(EngineError):
    code = -32602

    def __init__(self, param: str, problem: str):
        super().__init__(f"invalid param {param!r}: {problem}", {"param": param})
        self.param = param


class StalePointer(EngineError):
    """A line range of ``path`` asked for after it changed from the text the
    latest answer pointing into it was computed from (answers given now check
    their files first, so asking again gives current lines)."""

    code = -32002

    def __init__(self, path: str):
        super().__init__(f"{path} changed after the last answer that pointed into it, so this "
                         "line range may name other lines now: get it without startLine/endLine "
                         "for its current text, or ask recall, locate or impact again for "
                         "current ranges", {"path": path})


class OutsideRoot(EngineError):
    code = -32004

    def __init__(self, path: str):
        super().__init__(f"{path} resolves outside the workspace root", {"path": path})


class RipgrepMissing(EngineError):
    """Impact analysis cannot run ``rg``; it never answers "no callers" instead."""

    code = -32001

    def __init__(self, message: str):
        super().__init__(message, {})


class ScopeRequired(EngineError):
    code = -32003

    def __init__(self, verb: str):
        super().__init__(f"{verb} needs a scope: strictScope is on", {"verb": verb})


class TooLarge(EngineError):
    code = -32005

    def __init__(self, what: str, limit: int):
        super().__init__(f"{what} is over the {limit}-byte bound; nothing was written",
                         {"limit": limit})


class StoreError(EngineError):
    """The store failed for a reason of its own: the library's face of every
    SQLite error (only ``ctxls.index.store`` sees those). This class itself is
    a statement's own failure (a bug or a broken constraint: -32603); the
    storage failures are its kinds below. ``reason`` says which ("statement",
    "locked", "io", "full", "corrupt", …)."""

    def __init__(self, db_path: str, reason: str, detail: str, message: str | None = None):
        super().__init__(message or f"index store {db_path} failed: {detail}",
                         {"dbPath": db_path, "reason": reason})
        self.reason = reason


class StoreUnavailable(StoreError):
    """The store cannot be opened or read now (I/O error, full disk,
    permissions, locked, or a ``dbPath`` that is not a ctxls store). Nothing
    was moved or changed; the daemon retries."""

    code = -32006

    def __init__(self, db_path: str, reason: str, detail: str):
        super().__init__(db_path, reason, detail, f"index store {db_path} cannot be used: {detail}")


class WriteFailed(StoreError):
    """A write was not made durable (full disk, read-only or vanished store):
    nothing was acknowledged."""

    code = -32007

    def __init__(self, db_path: str, reason: str, detail: str):
        super().__init__(db_path, reason, detail, f"nothing was written to {db_path}: {detail}")


class MemoryUnavailable(EngineError):
    """The memory database (``memoryUrl``) cannot be reached or answered too
    late; nothing was written. Code recall does not depend on it."""

    code = -32010

    def __init__(self, problem: str):
        super().__init__(f"team memory is unavailable: {problem}", {"backend": "postgresql"})
        self.problem = problem


class RequestCancelled(EngineError):
    """The client cancelled the request (``$/cancelRequest``) and the work
    stopped at its next check (LSP's RequestCancelled)."""

    code = -32800

    def __init__(self, what: str = "request"):
        super().__init__(f"{what} cancelled by the client", {})


class IndexNotReady(EngineError):
    """The first index of a folder is still running after the request waited
    its bound: no answer is given rather than "no hits"."""

    code = -32011

    def __init__(self, root: str, done: int, total: int, retry_s: int):
        counted = f"{done} of {total} files" if total else "listing files"
        super().__init__(f"index not ready: {counted}, retry in ~{retry_s} s",
                         {"root": root, "done": done, "total": total, "retryAfterS": retry_s})


# Credentials a log line may quote: a URL's password (``scheme://user:PASS@``,
# up to the last ``@`` before a space: a password may hold quotes or ``@``)
# and a conninfo's ``password=`` (bare or quoted). libpq quotes a whole
# connection string it cannot parse, and psycopg.pool logs that message as it is.
# Every repeat is bounded, so a log line quoting a hostile file's text is
# masked in linear time (no start scans further than a few hundred characters).
_URL_PASSWORD = re.compile(r"(\b[A-Za-z][A-Za-z0-9+.-]{0,31}://[^\s:/?#@\"']{0,256}:)\S{0,256}@")
_CONNINFO_PASSWORD = re.compile(
    r"(\b(?:ssl)?password\s{0,16}=\s{0,16})(?:'(?:[^'\\]|\\.){0,256}'|[^\s&\"']{1,256})",
    re.IGNORECASE)


def redact_credentials(text: str) -> str:
    """``text`` with every password it quotes masked (``***``): log records
    (the CLI's and daemon's handlers) and team memory's error messages."""
    if "://" in text:
        text = _URL_PASSWORD.sub(r"\1***@", text)
    if "password" in text.lower():
        text = _CONNINFO_PASSWORD.sub(r"\1***", text)
    return text
