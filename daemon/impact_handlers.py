"""LSP features of the impact engine (docs/protocol.md): ``ctxls/impact``,
call hierarchy and code lenses. Thin: check params, make one call into
``ctxls.impact.analysis`` (in the lane daemon/router.py gives it), convert.

Call hierarchy items and lenses carry ``data: {"symbol"}``; with the item's
URI that names one definition, so the follow-up requests (incoming, outgoing,
resolve) analyse exactly it. Files outside every workspace folder have no
workspace to search: they get no items, lenses or impact.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from pathlib import Path

from lsprotocol import types

from ctxls.daemon import wire
from ctxls.daemon.app import SYMBOL_KINDS, CtxlsServer, feature, rpc
from ctxls.daemon.symbol_handlers import partial_fields, whole_lines
from ctxls.impact import analysis
from ctxls.impact.analysis import DefinitionSite, Impact
from ctxls.impact.callers import Caller
from ctxls.impact.index_view import index_refusal
from ctxls.impact.syntax import Span
from ctxls.index.engine import Engine
from ctxls.index.errors import InvalidParams

log = logging.getLogger(__name__)

# The client command a resolved lens runs; its argument is {uri, symbol}.
SHOW_IMPACT_COMMAND = "ctxls.showImpact"
# A lens resolved while its folder's first index runs.
INDEXING_LENS_TITLE = "indexing…"
# Lens titles by (folder, symbol, file) with the store's files_version they
# were computed at. Every editor sharing the daemon gets the same title for a
# definition (each analysis is time-bounded: two could differ under load), and
# resolving again (scrolling, a refresh) costs no sweep until some file changes.
_lens_titles: OrderedDict[tuple[Path, str, str], tuple[int, str]] = OrderedDict()
_lens_titles_lock = threading.Lock()
LENS_TITLES_KEPT = 4096


@rpc("ctxls/impact")
def impact(ls: CtxlsServer, params: wire.Params) -> dict | None:
    symbol, uri, line, character = wire.impact_params(params)
    if symbol is not None:
        # The folder of the file it is asked from first; then the first that defines it.
        asked_from = workspace_file(ls, uri) if uri is not None else None
        engines = ls.workspaces.all()
        if asked_from is not None:
            engines = [asked_from[0]] + [e for e in engines if e is not asked_from[0]]
        for engine in engines:
            context = asked_from[1] if asked_from is not None and engine is asked_from[0] else None
            found = analysis.analyze(engine, symbol, context=context)
            if found is not None:
                return impact_answer(found, engine)
        # null says "not defined": never while an index could not be written.
        unknown = analysis.unknown_definitions(engines, symbol)
        if unknown is not None:
            raise unknown
        return None
    target = workspace_file(ls, uri or "")
    if target is None:
        return None
    engine, path = target
    found = analysis.analyze(engine, path=path, line=line, character=character)
    return impact_answer(found, engine) if found is not None else None


def impact_answer(found: Impact, engine: Engine) -> dict:
    """The Impact JSON, with recall's `partialReason` when the index could not be written."""
    out = wire.impact_json(found, engine.uri_for, engine.line_ends)
    if found.partial_reason is not None:
        out |= partial_fields([found.partial_reason])
    return out


def workspace_file(ls: CtxlsServer, uri: str) -> tuple[Engine, str] | None:
    target = ls.engine_for(uri)
    if target is None or ls.workspaces.is_loose(target[0]):
        return None
    return target


def _range(span: Span) -> types.Range:
    return types.Range(types.Position(span.start_line, span.start_character),
                       types.Position(span.end_line, span.end_character))


def _item(engine: Engine, site: DefinitionSite) -> types.CallHierarchyItem:
    definition = site.definition
    return types.CallHierarchyItem(
        name=definition.name, kind=SYMBOL_KINDS.get(definition.symbol_kind, types.SymbolKind.Function),
        detail=f"{definition.symbol} · {definition.path}", uri=engine.uri_for(definition.path),
        range=whole_lines(definition.start_line, definition.end_line,
                          engine.line_ends(definition.path, [definition.end_line])),
        selection_range=_range(site.name_span), data={"symbol": definition.symbol})


def _caller_item(engine: Engine, callers: list[Caller]) -> types.CallHierarchyItem:
    """The symbol holding some calls; module-level calls get the file as caller."""
    first = callers[0]
    if first.symbol is None or first.symbol_lines is None:
        last_line = max(c.span.end_line for c in callers)
        return types.CallHierarchyItem(
            name=first.path.rsplit("/", 1)[-1], kind=types.SymbolKind.File, detail=first.path,
            uri=engine.uri_for(first.path),
            range=whole_lines(0, last_line, engine.line_ends(first.path, [last_line])),
            selection_range=_range(first.span))
    start, end = first.symbol_lines
    return types.CallHierarchyItem(
        name=first.symbol.rsplit(".", 1)[-1],
        kind=SYMBOL_KINDS.get(first.symbol_kind or "", types.SymbolKind.Function),
        detail=f"{first.symbol} · {first.path}", uri=engine.uri_for(first.path),
        range=whole_lines(start, end, engine.line_ends(first.path, [end])),
        selection_range=_range(first.span), data={"symbol": first.symbol})


def _item_target(ls: CtxlsServer, item: types.CallHierarchyItem) -> tuple[Engine, str, str] | None:
    data = item.data if isinstance(item.data, dict) else {}
    symbol = data.get("symbol")
    target = workspace_file(ls, item.uri)
    if not isinstance(symbol, str) or target is None:
        return None
    return target[0], target[1], symbol


@feature(types.TEXT_DOCUMENT_PREPARE_CALL_HIERARCHY)
def prepare_call_hierarchy(ls: CtxlsServer, params: types.CallHierarchyPrepareParams):
    target = workspace_file(ls, params.text_document.uri)
    if target is None:
        return None
    engine, path = target
    sites = analysis.definitions_at(engine, path, params.position.line, params.position.character)
    return [_item(engine, site) for site in sites] or None


@feature(types.CALL_HIERARCHY_INCOMING_CALLS)
def incoming_calls(ls: CtxlsServer, params: types.CallHierarchyIncomingCallsParams):
    target = _item_target(ls, params.item)
    if target is None:
        return None
    engine, path, symbol = target
    found: Impact | None = analysis.analyze(engine, symbol, path)
    if found is None:
        return []
    by_caller: dict[tuple[str, str | None], list[Caller]] = {}
    for caller in found.callers:
        by_caller.setdefault((caller.path, caller.symbol), []).append(caller)
    return [types.CallHierarchyIncomingCall(from_=_caller_item(engine, callers),
                                            from_ranges=[_range(c.span) for c in callers])
            for callers in by_caller.values()]


@feature(types.CALL_HIERARCHY_OUTGOING_CALLS)
def outgoing_calls(ls: CtxlsServer, params: types.CallHierarchyOutgoingCallsParams):
    target = _item_target(ls, params.item)
    if target is None:
        return None
    engine, path, symbol = target
    calls = analysis.outgoing_calls(engine, symbol, path)
    return [types.CallHierarchyOutgoingCall(to=_item(engine, site),
                                            from_ranges=[_range(s) for s in sites])
            for site, sites in calls]


@feature(types.TEXT_DOCUMENT_CODE_LENS, types.CodeLensOptions(resolve_provider=True))
def code_lens(ls: CtxlsServer, params: types.CodeLensParams):
    """One unresolved lens per definition: opening a file costs no search."""
    uri = params.text_document.uri
    target = workspace_file(ls, uri)
    if target is None:
        return None
    sites = analysis.definitions_in(target[0], target[1])
    return [types.CodeLens(range=_range(site.name_span),
                           data={"uri": uri, "symbol": site.definition.symbol}) for site in sites]


@feature(types.CODE_LENS_RESOLVE)
def resolve_code_lens(ls: CtxlsServer, lens: types.CodeLens) -> types.CodeLens:
    data = lens.data if isinstance(lens.data, dict) else {}
    uri, symbol = data.get("uri"), data.get("symbol")
    target = workspace_file(ls, uri) if isinstance(uri, str) else None
    if target is None or not isinstance(symbol, str):
        raise InvalidParams("data", "not a ctxls code lens")
    engine, path = target
    if engine.cold_index_done:
        key, version = (engine.root, symbol, path), engine.store.files_version
        with _lens_titles_lock:
            cached = _lens_titles.get(key)
        if cached is not None and cached[0] == version:
            title = cached[1]
        else:
            found: Impact | None = analysis.analyze(engine, symbol, path)
            title = lens_title(found, index_refusal(engine, path) is not None)
            with _lens_titles_lock:  # resolved in the read pool's threads
                _lens_titles[key] = (version, title)
                _lens_titles.move_to_end(key)
                while len(_lens_titles) > LENS_TITLES_KEPT:
                    _lens_titles.popitem(last=False)
    else:
        # A count now would be of the files indexed so far (and stay on screen:
        # clients keep a resolved lens), and each analysis is a sweep of the
        # repository competing with the indexer. The lenses are refreshed when
        # the first index ends (CtxlsServer.cold_index, report_joined).
        title = INDEXING_LENS_TITLE
    lens.command = types.Command(title=title, command=SHOW_IMPACT_COMMAND,
                                 arguments=[{"uri": uri, "symbol": symbol}])
    return lens


def lens_title(found: Impact | None, file_unwritten: bool = False) -> str:
    """"3 callers · risk med": confirmed callers; unconfirmed ones apart ("+5
    unconfirmed"); "· partial" when files were left unchecked or the index
    could not be written, as the impact answer says (the same analysis: the
    same counts). ``file_unwritten``: the store refused the file's latest
    text, so its definitions are not in the index (not gone)."""
    if found is None and file_unwritten:
        return "not indexed: the index could not take this file's text · partial"
    if found is None:
        return "definition gone · re-open the file"
    title = f"{wire.callers_summary(found.confirmed, found.unconfirmed)} · risk {found.risk}"
    return f"{title} · partial" if found.partial else title
