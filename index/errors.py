"""Errors the engine raises for a caller's mistake or a stale view.

Each carries the JSON-RPC code of docs/protocol.md ("Errors") and its ``data``,
so every shell (daemon, CLI, MCP) reports them the same way.
"""

from __future__ import annotations

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
    code = -32002

    def __init__(self, path: str):
        super().__init__(f"{path} changed since it was indexed; re-run recall for fresh lines",
                         {"path": path})


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


class StoreUnavailable(EngineError):
    """The store cannot be opened or read now (I/O error, full disk,
    permissions, locked, or a ``dbPath`` that is not a ctxls store). Nothing
    was moved or changed; the daemon retries."""

    code = -32006

    def __init__(self, db_path: str, reason: str, detail: str):
        super().__init__(f"index store {db_path} cannot be used: {detail}",
                         {"dbPath": db_path, "reason": reason})
        self.reason = reason


class WriteFailed(EngineError):
    """A write was not made durable (full disk, read-only or vanished store):
    nothing was acknowledged."""

    code = -32007

    def __init__(self, db_path: str, reason: str, detail: str):
        super().__init__(f"nothing was written to {db_path}: {detail}",
                         {"dbPath": db_path, "reason": reason})
        self.reason = reason


class MemoryUnavailable(EngineError):
    """The memory database (``memoryUrl``) cannot be reached or answered too
    late; nothing was written. Code recall does not depend on it."""

    code = -32010

    def __init__(self, problem: str):
        super().__init__(f"team memory is unavailable: {problem}", {"backend": "postgresql"})
