"""Definitions by name, a file's outline and code like a location's
(docs/protocol.md): ``ctxls/symbols``, ``ctxls/outline``, ``ctxls/similar``
(``ctxls/related`` is the import graph's), and the LSP's
``workspace/symbol`` and ``textDocument/documentSymbol``, all answered by
the engine's symbol functions (index/symbols.py). Thin: check params, one
engine call per folder, convert."""

from __future__ import annotations

from lsprotocol import types

from ctxls.daemon import wire
from ctxls.daemon.app import SYMBOL_KINDS, CtxlsServer, feature, rpc
from ctxls.daemon.uris import as_local
from ctxls.daemon.workspaces import one_per_place
from ctxls.impact.index_view import index_refusal
from ctxls.index.engine import Engine, written_location
from ctxls.index.errors import InvalidParams, OutsideRoot
from ctxls.index.symbols import MATCHES, Definition, flatten

# workspace/symbol answers at most this many definitions.
WORKSPACE_SYMBOLS_N = 100


# -- custom requests --------------------------------------------------------------------------

@rpc("ctxls/symbols")
def symbols(ls: CtxlsServer, params: wire.Params) -> dict:
    query = params.str("query", required=True)
    match = params.str("match") or "fuzzy"
    kind = params.raw.get("kind")
    kinds = [kind] if isinstance(kind, str) else params.str_list("kind")
    limit = params.int("limit", 50)
    found: list[tuple[Engine, Definition]] = []
    reasons: list[str] = []
    for engine in ls.workspaces.all():
        found += [(engine, d) for d in engine.symbols(query, match, kinds, limit)]
        # Asked after the answer (it tried again to write what the store
        # refused): a refusal, or a pass still running (a checkout's).
        reason = engine.partial_reason()
        if reason is not None and reason not in reasons:
            reasons.append(reason)
    # Several folders: the closer match first, each folder's order kept within it.
    found.sort(key=lambda ed: MATCHES.index(ed[1].match))
    found = one_per_place(found, _symbol_place)
    return {"symbols": [wire.symbol_json(d, engine.uri_for) for engine, d in found[:limit]]} \
        | partial_fields(reasons)


def partial_fields(reasons: list[str]) -> dict:
    """`partial` and, when it is, `partialReason`, as recall's answers say them
    (the reasons of several folders joined)."""
    return {"partial": bool(reasons)} | ({"partialReason": "; ".join(reasons)} if reasons else {})


def _symbol_place(found: tuple[Engine, Definition]) -> tuple[str, int, str]:
    engine, definition = found
    return engine.uri_for(definition.path), definition.line, definition.symbol


@rpc("ctxls/outline")
def outline(ls: CtxlsServer, params: wire.Params) -> dict:
    engine, path = file_target(ls, params)
    symbols = [wire.symbol_json(d, engine.uri_for) for d in engine.outline(path)]
    # The store refused the file's latest text: its older rows are left out,
    # so the index holds no definitions of the file as it is now.
    refused = index_refusal(engine, path)
    # Nothing found: a file without definitions, or none the index holds.
    indexed = refused is None and (bool(symbols) or engine.store.file_state(path) is not None)
    return {"path": path, "uri": engine.uri_for(path), "symbols": symbols, "indexed": indexed} \
        | partial_fields([refused[1]] if refused is not None else [])


@rpc("ctxls/similar")
def similar(ls: CtxlsServer, params: wire.Params) -> dict:
    engine, path = file_target(ls, params)
    line = params.int("line")
    if line is None:
        raise InvalidParams("line", "is required (0-based)")
    origin, hits, mode = engine.similar(path, line, params.int("n", 10))
    return wire.similar_json(origin, hits, mode)


def file_target(ls: CtxlsServer, params: wire.Params) -> tuple[Engine, str]:
    """The folder and repo-relative path a request's ``uri`` or ``path``
    (repo-relative in some folder, or absolute; a place as answers print it,
    ``path:16-18``, names its file) names: the folder that has the file
    indexed, else the first whose root holds it."""
    uri, path = params.str("uri"), params.str("path")
    path = as_local(path) if path is not None else None
    if (uri is None) == (path is None):
        raise InvalidParams("path", "give the file as path or as uri (one of them)")
    if uri is not None:
        target = ls.workspaces.folder_for_uri(uri)
        if target is None:
            raise OutsideRoot(uri)
        return target
    inside = _folders_holding(ls, path)
    if not inside:
        raise OutsideRoot(path)
    indexed = next((t for t in inside if t[0].store.file_state(t[1]) is not None), None)
    if indexed is None and (located := written_location(path)) is not None:
        # `pkg/core.py:16-18`, as answers print a place: the file it names.
        indexed = next((t for t in _folders_holding(ls, located[0])
                        if t[0].store.file_state(t[1]) is not None), None)
    return indexed or inside[0]


def _folders_holding(ls: CtxlsServer, path: str) -> list[tuple[Engine, str]]:
    """Each folder whose root holds ``path``, with the path relative to it."""
    inside: list[tuple[Engine, str]] = []
    for engine in ls.workspaces.all() or [ls.workspaces.loose]:
        try:
            inside.append((engine, engine.relative(path)))
        except OutsideRoot:
            continue
    return inside


# -- the LSP's symbol requests ------------------------------------------------------------------

def whole_lines(start_line: int, end_line: int, ends: dict[int, int]) -> types.Range:
    """The LSP range of lines ``start_line``..``end_line``, whole
    (``wire.whole_lines_end``; ``ends``: Engine.line_ends of the file)."""
    return types.Range(types.Position(start_line, 0),
                       types.Position(*wire.whole_lines_end(end_line, ends)))


def _name_range(definition: Definition) -> types.Range:
    return types.Range(types.Position(definition.line, 0), types.Position(definition.line, 0))


def _document_symbol(definition: Definition, ends: dict[int, int]) -> types.DocumentSymbol:
    """``definition`` with its children (at most symbols.MAX_OUTLINE_DEPTH deep)."""
    return types.DocumentSymbol(
        name=definition.name, detail=definition.symbol,
        kind=SYMBOL_KINDS.get(definition.kind, types.SymbolKind.Variable),
        range=whole_lines(definition.start_line, definition.end_line, ends),
        selection_range=_name_range(definition),
        children=[_document_symbol(child, ends) for child in definition.children])


@feature(types.TEXT_DOCUMENT_DOCUMENT_SYMBOL)
def on_document_symbol(ls: CtxlsServer, params: types.DocumentSymbolParams):
    target = ls.engine_for(params.text_document.uri)
    if target is None:
        return None
    engine, path = target
    tree = engine.outline(path)
    ends = engine.line_ends(path, [d.end_line for d in flatten(tree)])
    return [_document_symbol(definition, ends) for definition in tree] or None


@feature(types.WORKSPACE_SYMBOL)
def on_workspace_symbol(ls: CtxlsServer, params: types.WorkspaceSymbolParams):
    if not params.query.strip():
        return []  # every definition of the workspace is no answer to nothing
    # An engine error (the first index still running, a query too long) is
    # answered with its code by the router.
    found = [(engine, d) for engine in ls.workspaces.all()
             for d in engine.symbols(params.query, "fuzzy", None, WORKSPACE_SYMBOLS_N)]
    return [types.SymbolInformation(
                name=definition.name, kind=SYMBOL_KINDS.get(definition.kind, types.SymbolKind.Variable),
                location=types.Location(engine.uri_for(definition.path), whole_lines(
                    definition.start_line, definition.end_line,
                    engine.line_ends(definition.path, [definition.end_line]))),
                container_name=definition.container or definition.path)
            for engine, definition in one_per_place(found, _symbol_place)]
