"""The protocol's JSON shapes (docs/protocol.md), in one place.

Params come in as plain dicts and are checked here (-32602 names the param);
engine results go out as plain dicts. The daemon, the CLI's ``--json`` and the
MCP bridge all use these functions, so every client sees the same shapes.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from ctxls.index.engine import (ALL_KINDS, ActivityItem, Hit, IndexStats, Item, RecallResult,
                                SymbolInfo)
from ctxls.index.errors import InvalidParams

_MISSING = object()


class Params:
    """Typed access to a request's params object."""

    def __init__(self, raw: Any):
        if raw is None:
            raw = {}
        if not isinstance(raw, dict):
            raise InvalidParams("params", "must be an object")
        self.raw = raw

    def _get(self, name: str, required: bool) -> Any:
        value = self.raw.get(name, _MISSING)
        if value is _MISSING or value is None:
            if required:
                raise InvalidParams(name, "is required")
            return None
        return value

    def str(self, name: str, required: bool = False) -> str | None:
        value = self._get(name, required)
        if value is not None and not isinstance(value, str):
            raise InvalidParams(name, "must be a string")
        return value

    def int(self, name: str, default: int | None = None) -> int | None:
        value = self._get(name, False)
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value != int(value):
            raise InvalidParams(name, "must be an integer")
        return int(value)

    def number(self, name: str) -> float | None:
        value = self._get(name, False)
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
            raise InvalidParams(name, "must be a number")
        return value

    def bool(self, name: str, default: bool) -> bool:
        value = self._get(name, False)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise InvalidParams(name, "must be true or false")
        return value

    def str_list(self, name: str) -> list[str] | None:
        value = self._get(name, False)
        if value is not None and not (isinstance(value, list)
                                      and all(isinstance(v, str) for v in value)):
            raise InvalidParams(name, "must be a list of strings")
        return value

    def kinds(self) -> tuple[list[str] | None, bool]:
        """(kinds to search, whether the caller asked for one flat kind)."""
        value = self._get("kind", False)
        if value is None:
            return None, False
        if isinstance(value, str):
            return [value], True
        if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
            return list(dict.fromkeys(value)), False
        raise InvalidParams("kind", f"must be one of {', '.join(ALL_KINDS)} or a non-empty list of them")


def lsp_range(start_line: int, end_line: int, end_character: int) -> dict:
    return {"start": {"line": start_line, "character": 0},
            "end": {"line": end_line, "character": end_character}}


def hit_json(hit: Hit) -> dict:
    out: dict[str, Any] = {
        "path": hit.path,
        "kind": hit.kind,
        "format": hit.format,
        "score": hit.score,
        "chunk": {"symbol": hit.symbol, "startLine": hit.start_line, "endLine": hit.end_line},
        "uri": hit.uri,
        "range": lsp_range(hit.start_line, hit.end_line, hit.end_character),
    }
    if hit.body is not None:
        out["body"] = hit.body
    return out


def recall_json(result: RecallResult, flat: bool) -> dict:
    if flat:
        (hits,) = result.hits_by_kind.values()
        return {"hits": [hit_json(h) for h in hits], "partial": result.partial}
    return {"groups": {k: [hit_json(h) for h in hits] for k, hits in result.hits_by_kind.items()},
            "partial": result.partial}


def item_json(item: Item | None) -> dict | None:
    if item is None:
        return None
    return {"id": item.id, "kind": item.kind, "format": item.format, "source": item.source,
            "provenance": item.provenance, "occurredAt": item.occurred_at, "text": item.text,
            "meta": item.meta}


def index_stats_json(stats: IndexStats) -> dict:
    return asdict(stats)


def activity_json(items: list[ActivityItem]) -> dict:
    return {"items": [{"id": a.id, "symbol": a.symbol, "kind": a.kind,
                       "lastEditedAt": a.last_edited_at, "edits": a.edits} for a in items]}


def symbol_json(symbol: SymbolInfo) -> dict:
    return {"symbol": symbol.symbol, "symbolKind": symbol.symbol_kind, "path": symbol.path,
            "uri": symbol.uri, "startLine": symbol.start_line, "endLine": symbol.end_line}
