"""The protocol's JSON shapes (docs/protocol.md), in one place.

Params come in as plain dicts and are checked here (-32602 names the param);
engine results go out as plain dicts. The daemon, the CLI's ``--json`` and the
MCP bridge all use these functions, so every client sees the same shapes.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from ctxls.index.demand import Candidate
from ctxls.index.engine import (ActivityItem, BodyBudget, Hit, IndexStats, Item, RecallResult,
                                memory_hit)
from ctxls.daemon.request_values import MAX_INT, MIN_INT, first_invalid
from ctxls.index.errors import EngineError, InvalidParams
from ctxls.index.vocabulary import RECALL_KINDS
from ctxls.index.graph import FileNode, Related
from ctxls.index.locate import LocatedFile
from ctxls.index.memory import IngestResult, MemoryNode, MemoryRow, Page
from ctxls.index.stash import Peek
from ctxls.index import symbols as symbol_table

_MISSING = object()
class Params:
    """Typed access to a request's params object."""

    def __init__(self, raw: Any):
        if raw is None or raw == []:
            raw = {}  # some clients (Neovim's vim.json) encode an empty object as []
        if not isinstance(raw, dict):
            raise InvalidParams("params", "must be an object")
        invalid = first_invalid(raw)
        if invalid is not None:
            raise InvalidParams(*invalid)
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
        if (isinstance(value, bool) or not isinstance(value, (int, float))
                or (isinstance(value, float) and not value.is_integer())
                or not MIN_INT <= value <= MAX_INT):
            raise InvalidParams(name, "must be an integer (64-bit)")
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

    def object(self, name: str) -> dict | None:
        value = self._get(name, False)
        if value is not None and not isinstance(value, dict):
            raise InvalidParams(name, "must be an object")
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
        raise InvalidParams("kind", f"must be one of {', '.join(RECALL_KINDS)} or a non-empty list of them")


def lsp_range(start_line: int, end_line: int, end_character: int) -> dict:
    return {"start": {"line": start_line, "character": 0},
            "end": {"line": end_line, "character": end_character}}


def hit_json(hit: Hit, budget: BodyBudget) -> dict:
    out: dict[str, Any] = {
        "path": hit.path,
        "kind": hit.kind,
        "format": hit.format,
        "score": hit.score,
        "chunk": {"symbol": hit.symbol, "startLine": hit.start_line, "endLine": hit.end_line},
    }
    if hit.calibrated is not None:
        out["calibrated"] = hit.calibrated
    if hit.uri is not None:  # written memory is not a file: no uri, no range
        out["uri"] = hit.uri
        out["range"] = lsp_range(hit.start_line, hit.end_line, hit.end_character)
    if hit.wants_body:
        out["body"] = budget.take(hit)
        if out["body"] is None:  # fetch it with ctxls/get
            out["truncated"] = True
    if hit.meta is not None:
        out["meta"] = hit.meta
    if hit.definitions is not None:
        out["definitions"] = [{"symbol": d.symbol, "kind": d.kind, "startLine": d.start_line,
                               "endLine": d.end_line, "line": d.line} for d in hit.definitions]
    if hit.why is not None:
        out["why"] = [{"feature": c.feature, "value": round(c.value, 6),
                       "contribution": round(c.contribution, 6)} for c in hit.why]
    return out


def located_json(located: LocatedFile, uri_for: Callable[[str], str]) -> dict:
    return {
        "path": located.path,
        "uri": uri_for(located.path),
        "score": located.score,
        "signals": located.signals,
        "why": [{"signal": r.signal, "detail": r.detail}
                | ({"line": r.line} if r.line is not None else {}) for r in located.reasons],
        "chunks": [{"symbol": c.symbol, "startLine": c.start_line, "endLine": c.end_line,
                    "range": lsp_range(c.start_line, c.end_line, c.end_character)}
                   for c in located.chunks],
        "contributions": [{"feature": c.feature, "value": c.value, "contribution": c.contribution}
                          for c in located.why],
    }


def partial_json(result: RecallResult) -> dict:
    """`partial`, its `partialReason` when set, and the ranking `mode` actually used."""
    out: dict[str, Any] = {"partial": result.partial, "mode": result.mode}
    if result.partial_reason:
        out["partialReason"] = result.partial_reason
    return out


def truncated_json(budget: BodyBudget) -> dict:
    return {"truncated": True} if budget.cut else {}


def recall_json(result: RecallResult, flat: bool) -> dict:
    budget = BodyBudget()
    if flat:
        (hits,) = result.hits_by_kind.values()
        out = {"hits": [hit_json(h, budget) for h in hits]}
    else:
        out = {"groups": {k: [hit_json(h, budget) for h in hits]
                          for k, hits in result.hits_by_kind.items()}}
    weak = {"weak": True, "weakReason": result.weak_reason} if result.weak_reason else {}
    return out | partial_json(result) | weak | truncated_json(budget)


def item_json(item: Item | None) -> dict | None:
    if item is None:
        return None
    meta = item.meta
    if item.lines_given is not None:
        meta = meta | {"startLine": item.lines_given[0], "endLine": item.lines_given[1]}
    out = {"id": item.id, "kind": item.kind, "format": item.format, "source": item.source,
           "provenance": item.provenance, "occurredAt": item.occurred_at, "text": item.text,
           "meta": meta}
    if item.source == "direct":
        out.update(createdAt=item.created_at, expiresAt=item.expires_at)
        if item.encoding is not None:
            out["encoding"] = item.encoding
    return out


def index_stats_json(stats: IndexStats) -> dict:
    return asdict(stats)


def activity_json(items: list[tuple[ActivityItem, str]]) -> dict:
    """Each (item, its file's URI): in a multi-root workspace the same
    repo-relative id can be a file of several folders."""
    return {"items": [{"id": a.id, "uri": uri, "symbol": a.symbol, "kind": a.kind,
                       "lastEditedAt": a.last_edited_at, "edits": a.edits, "origin": a.origin}
                      for a, uri in items]}


def symbol_json(definition: symbol_table.Definition, uri_for: Callable[[str], str]) -> dict:
    """A definition of ctxls/symbols and ctxls/outline (outline: with its
    nested ``children``)."""
    out = {"symbol": definition.symbol, "name": definition.name, "container": definition.container,
           "kind": definition.kind, "path": definition.path, "uri": uri_for(definition.path),
           "startLine": definition.start_line, "endLine": definition.end_line,
           "line": definition.line}
    if definition.match is not None:
        out |= {"match": definition.match, "score": definition.score}
    if definition.children:
        out["children"] = [symbol_json(child, uri_for) for child in definition.children]
    return out


def similar_json(origin: Hit | None, hits: list[Hit], mode: str) -> dict:
    budget = BodyBudget()
    return {"origin": hit_json(origin, budget) if origin is not None else None,
            "hits": [hit_json(hit, budget) for hit in hits], "mode": mode}


# -- written memory (issue 5) ---------------------------------------------------

def memory_item_json(row: MemoryRow, body: bool, budget: BodyBudget) -> dict:
    """recentMemory and enumerate items: a Hit plus when it was written and happened."""
    return hit_json(memory_hit(row, body), budget) | {"createdAt": row.created_at,
                                                      "occurredAt": row.occurred_at}


def memory_items_json(rows: list[MemoryRow], body: bool) -> dict:
    budget = BodyBudget()
    items = [memory_item_json(r, body, budget) for r in rows]
    return {"items": items} | truncated_json(budget)


def page_json(page: Page, body: bool) -> dict:
    """A page ends before the first row whose body no longer fits the answer:
    ``nextOffset`` continues from that row, so paging reads every body whole."""
    budget = BodyBudget()
    items = []
    for row in page.rows:
        item = memory_item_json(row, body, budget)
        if budget.cut:
            break
        items.append(item)
    next_offset = page.offset + len(items) if budget.cut else page.next_offset
    return {"items": items, "total": page.total, "offset": page.offset,
            "nextOffset": next_offset} | truncated_json(budget)


def peek_json(peek: Peek | None) -> dict | None:
    if peek is None:
        return None
    return {"id": peek.id, "bytes": peek.bytes, "head": peek.head, "tail": peek.tail,
            "createdAt": peek.created_at, "truncated": peek.truncated}


def ingest_json(result: IngestResult) -> dict:
    return {"id": result.key, "kind": "doc", "format": result.format, "mode": result.mode,
            "chunks": result.segments}


def candidates_json(candidates: list[Candidate]) -> dict:
    return {"items": [{"path": c.path, "hits": c.hits} for c in candidates]}


def related_json(items: list[Related], truncated: bool) -> dict:
    return {"items": [{"path": r.path, "hops": r.hops, "dir": r.dir} for r in items],
            "truncated": truncated}


def node_json(node: FileNode | MemoryNode | None) -> dict | None:
    if node is None:
        return None
    if isinstance(node, MemoryNode):
        row = node.row
        return {"path": row.key, "kind": row.kind, "format": row.format, "source": "direct",
                "chunks": [{"symbol": s.symbol, "startLine": s.start_line, "endLine": s.end_line}
                           for s in node.segments],
                "importsOut": 0, "importsIn": 0}
    return {"path": node.path, "kind": node.kind, "format": node.format, "source": "file",
            "chunks": [{"symbol": c.symbol, "symbolKind": c.symbol_kind, "startLine": c.start_line,
                        "endLine": c.end_line} for c in node.chunks],
            "importsOut": node.imports_out, "importsIn": node.imports_in}


# -- impact (issue 4) -----------------------------------------------------------

if TYPE_CHECKING:
    from collections.abc import Callable

    from ctxls.impact.analysis import Impact
    from ctxls.impact.index_view import Definition
    from ctxls.impact.syntax import Span

    LineEnds = Callable[[str, list[int]], dict[int, int]]  # Engine.line_ends


def impact_params(params: Params) -> tuple[str | None, str | None, int | None, int | None]:
    """(symbol, uri, line, character) of a ctxls/impact request: a symbol
    (with an optional textDocument: the file it is asked from), or a
    textDocument and a position."""
    symbol = params.str("symbol")
    document, position = params.object("textDocument"), params.object("position")
    if symbol is not None and not symbol.strip():
        raise InvalidParams("symbol", "must be a non-empty string")
    if symbol is None and document is None and position is None:
        raise InvalidParams("symbol", "is required (or textDocument and position)")
    uri = document.get("uri") if document is not None else None
    if (document is not None or symbol is None) and (not isinstance(uri, str) or not uri):
        raise InvalidParams("textDocument", "must be an object with a uri")
    if symbol is not None:
        return symbol, uri, None, None
    if position is None:
        raise InvalidParams("position", "is required with textDocument")
    line, character = position.get("line"), position.get("character")
    for value in (line, character):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise InvalidParams("position", "line and character must be non-negative integers")
    return None, uri, line, character


def span_json(span: Span) -> dict:
    return {"start": {"line": span.start_line, "character": span.start_character},
            "end": {"line": span.end_line, "character": span.end_character}}


def whole_lines_end(end_line: int, ends: dict[int, int]) -> tuple[int, int]:
    """(line, character) where an LSP range of whole lines ending with
    ``end_line`` ends: at that line's end (``ends``: Engine.line_ends), as a
    hit's range does. The start of the next line, where it ended until
    2026-12-07, is no place in a text without a final line break; it stays
    only for a line the index does not hold."""
    return (end_line, ends[end_line]) if end_line in ends else (end_line + 1, 0)


def definition_json(definition: Definition, uri_for: Callable[[str], str],
                    line_ends: LineEnds) -> dict:
    """A Location: the definition's whole lines (``whole_lines_end``);
    ``selectionRange``: its name, where known (below decorators and comments)."""
    end_line, end_character = whole_lines_end(
        definition.end_line, line_ends(definition.path, [definition.end_line]))
    out = {"path": definition.path, "uri": uri_for(definition.path),
           "range": {"start": {"line": definition.start_line, "character": 0},
                     "end": {"line": end_line, "character": end_character}},
           "symbol": definition.symbol, "symbolKind": definition.symbol_kind}
    if definition.name_span is not None:
        out["selectionRange"] = span_json(definition.name_span)
    return out


def callers_summary(confirmed: int, unconfirmed: int) -> str:
    """"3 callers (+5 unconfirmed)": confirmed callers first, the code lens's words."""
    text = f"{confirmed} caller{'' if confirmed == 1 else 's'}"
    return text + (f" (+{unconfirmed} unconfirmed)" if unconfirmed else "")


def impact_summary(impact: Impact) -> str:
    """"3 callers (+5 unconfirmed) · 56 mentions": the one wording of an
    impact's counts, shown as is by VS Code and Neovim."""
    mentions = impact.mentions
    return (f"{callers_summary(impact.confirmed, impact.unconfirmed)} · "
            f"{mentions} mention{'' if mentions == 1 else 's'}")


def impact_json(impact: Impact, uri_for: Callable[[str], str], line_ends: LineEnds) -> dict:
    out = {
        "symbol": impact.symbol,
        "summary": impact_summary(impact),
        "definitions": [definition_json(d, uri_for, line_ends) for d in impact.definitions],
        "callers": callers_json(impact.callers, uri_for),
        "callees": [{"symbol": c.symbol,
                     "definitions": [definition_json(d, uri_for, line_ends) for d in c.definitions],
                     "ranges": [span_json(s) for s in c.call_sites]} for c in impact.callees],
        "refCount": impact.ref_count,
        "confirmed": impact.confirmed,
        "unconfirmed": impact.unconfirmed,
        "unconfirmedReasons": impact.unconfirmed_reasons,
        "unconfirmedOmitted": impact.unconfirmed_omitted,
        "mentions": impact.mentions,
        "mentionKinds": impact.mention_kinds,
        "risk": impact.risk,
        "hedges": impact.hedges,
        "complexity": impact.complexity,
        "definitionsMatched": impact.definitions_matched,
        "partial": impact.partial,
        "unchecked": {"files": impact.unchecked_files, "lines": impact.unchecked_lines},
        "elapsedMs": impact.elapsed_ms,
    }
    if impact.per_definition:
        out["perDefinition"] = [{
            "definition": definition_json(a.definition, uri_for, line_ends),
            "callers": callers_json(a.callers, uri_for),
            "confirmed": a.confirmed,
            "unconfirmed": a.unconfirmed,
            "unconfirmedReasons": a.unconfirmed_reasons,
            "unconfirmedOmitted": a.unconfirmed_omitted,
            "risk": a.risk,
            "hedges": a.hedges,
        } for a in impact.per_definition]
    return out


def callers_json(callers: list, uri_for: Callable[[str], str]) -> list[dict]:
    """Confirmed callers first, then unconfirmed ones with their ``reason``."""
    out = []
    for c in callers:
        caller = {"path": c.path, "uri": uri_for(c.path), "range": span_json(c.span),
                  "symbol": c.symbol, "confirmed": c.confirmed, "kind": c.kind}
        if not c.confirmed:
            caller["reason"] = c.reason or "unknown"
        out.append(caller)
    return out


def assemble_json(assembled) -> dict:
    """An ``assemble.Assembled`` as ctxls/assemble answers it: citation [n]
    is block n."""
    citations = [{"n": n, "path": b.path,
                  "chunk": {"symbol": b.symbol, "startLine": b.start_line, "endLine": b.end_line},
                  "score": b.score} for n, b in enumerate(assembled.blocks, 1)]
    counts = assembled.stats
    stats = {"originalTokens": counts.original_tokens, "reducedTokens": counts.reduced_tokens,
             "savedTokens": counts.saved_tokens, "pctReduced": counts.pct_reduced,
             "chunks": counts.chunks, "tokenizer": counts.tokenizer, "failover": counts.failover}
    if counts.error is not None:
        stats["error"] = counts.error
    if assembled.note:
        stats["note"] = assembled.note
    return {"context": assembled.context, "citations": citations, "stats": stats,
            "weak": assembled.weak, "abstained": assembled.abstained}


# The protocol's names of the status fields the library names in Python.
STATUS_KEYS = {"db_path": "dbPath", "store_error": "storeError", "index_error": "indexError",
               "memory_error": "memoryError", "without_grammar": "withoutGrammar",
               "serving_text": "servingText", "moved_to": "movedTo",
               "editor_events_skipped": "editorEventsSkipped", "ann_rebuilt": "annRebuilt",
               "schema_version": "schemaVersion",
               # the assemble aggregate (assemble.aggregate)
               "saved_tokens": "savedTokens", "budget_tokens": "budgetTokens",
               "reduced_tokens": "reducedTokens"}


def status_json(status: Any) -> Any:
    """A status (``Engine.status``, ``CtxlsServer.status``) as ctxls/status
    answers it: its fields in the protocol's spelling, at any depth, and each
    error as the JSON-RPC error it answers with."""
    if isinstance(status, EngineError):
        return error_json(status)
    if isinstance(status, dict):
        return {STATUS_KEYS.get(key, key): status_json(value) for key, value in status.items()}
    if isinstance(status, list):
        return [status_json(value) for value in status]
    return status


def error_json(exc: EngineError) -> dict:
    """An engine error as the JSON-RPC error it answers with."""
    return {"code": exc.code, "message": exc.message, "data": exc.data}
