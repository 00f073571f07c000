"""LSP handlers for written memory, the stash, ingest and the graph views
(docs/protocol.md). Each checks its params, resolves the request's scope and
makes one call into ``ctxls.index``; ``rpc`` runs it off the event loop.

Written memory lives in the first workspace folder's store: one place, so a
tenant's rows never depend on which folder a request happens to name. A
daemon without folders has only its throw-away store, so it refuses to write
memory (nothing is acknowledged that a restart would lose) and reads find none.
"""

from __future__ import annotations

from ctxls.daemon import wire
from ctxls.daemon.app import CtxlsServer, rpc
from ctxls.index.demand import DEFAULT_PROMOTION_THRESHOLD, DEFAULT_REVIEW_THRESHOLD
from ctxls.index.engine import Engine, direct_item
from ctxls.index.errors import InvalidParams, OutsideRoot, WriteFailed


def memory_engine(ls: CtxlsServer) -> Engine:
    engines = ls.workspaces.all()
    return engines[0] if engines else ls.workspaces.loose


def writing_engine(ls: CtxlsServer) -> Engine:
    """The engine a memory or stash write goes to: the first folder's.
    Without a folder, WriteFailed: the buffers-only engine's store is gone
    at the next start, so a write there would be acknowledged and lost."""
    engines = ls.workspaces.all()
    if not engines:
        raise WriteFailed("(no workspace folder)", "no_folder",
                          "no workspace folder is open, and written memory lives in a folder's "
                          "store (open a folder, or start with --root)")
    return engines[0]


def file_folder(ls: CtxlsServer, item_id: str) -> tuple[Engine, str]:
    """The folder that indexed this file (else the first one it lies in) and
    its path there; OutsideRoot if the id escapes every folder."""
    if not item_id:
        raise InvalidParams("id", "must be a non-empty string")
    inside = []
    for engine in ls.workspaces.all():
        try:
            inside.append((engine, engine.relative(item_id)))
        except OutsideRoot:
            continue
    for engine, path in inside:
        if engine.store.file_state(path) is not None:
            return engine, path
    if not inside:
        raise OutsideRoot(item_id)
    return inside[0]


@rpc("ctxls/remember")
def remember(ls: CtxlsServer, params: wire.Params) -> dict:
    engine, scope, key = writing_engine(ls), ls.request_scope(params, "ctxls/remember"), params.str(
        "id", required=True)
    engine.memory.remember(
        scope, key, params.str("text", required=True), kind=params.str("kind") or "fact",
        by=params.str("by") or "agent", occurred_at=params.int("occurredAt"),
        meta=params.object("meta"), expires_at=params.int("expiresAt"),
        session=ls.options.session, episode_window_days=ls.options.episodeWindowDays)
    if not params.bool("echo", False):
        return {}
    # The row read back from memory itself: ctxls/get of an id that also names
    # an indexed file answers the file (null: gone already, e.g. expired).
    written = engine.memory.item(key, scope)
    return {"item": wire.item_json(direct_item(written)) if written is not None else None}


@rpc("ctxls/forget")
def forget(ls: CtxlsServer, params: wire.Params) -> dict:
    key, prefix = params.str("id"), params.str("idPrefix")
    # {kind, by} without a scope spans every tenant, whatever the owner (still fenced by strictScope).
    owner_blind = key is None and prefix is None
    removed = memory_engine(ls).memory.forget(
        ls.request_scope(params, "ctxls/forget", owner_blind), key=key, key_prefix=prefix,
        kind=params.str("kind"), by=params.str("by"), scope_given=params.str("scope") is not None)
    return {"removed": removed}


@rpc("ctxls/recentMemory")
def recent_memory(ls: CtxlsServer, params: wire.Params) -> dict:
    kinds, _ = params.kinds()
    rows = memory_engine(ls).memory.recent(
        ls.request_scope(params, "ctxls/recentMemory"), kinds, params.int("n", 10),
        session=ls.options.session)
    return wire.memory_items_json(rows, params.bool("body", False))


@rpc("ctxls/enumerate")
def enumerate_memory(ls: CtxlsServer, params: wire.Params) -> dict:
    page = memory_engine(ls).memory.enumerate(
        ls.request_scope(params, "ctxls/enumerate"), params.str("kind", required=True),
        params.int("offset", 0), params.int("limit", 100))
    return wire.page_json(page, params.bool("body", False))


@rpc("ctxls/count")
def count(ls: CtxlsServer, params: wire.Params) -> dict:
    kinds, _ = params.kinds()
    return {"count": memory_engine(ls).memory.count(ls.request_scope(params, "ctxls/count"), kinds)}


@rpc("ctxls/reviewCandidates")
def review_candidates(ls: CtxlsServer, params: wire.Params) -> dict:
    return wire.candidates_json(memory_engine(ls).demand.review_candidates(
        ls.request_scope(params, "ctxls/reviewCandidates"),
        params.int("threshold", DEFAULT_REVIEW_THRESHOLD)))


@rpc("ctxls/promotionCandidates")
def promotion_candidates(ls: CtxlsServer, params: wire.Params) -> dict:
    return wire.candidates_json(memory_engine(ls).demand.promotion_candidates(
        ls.request_scope(params, "ctxls/promotionCandidates"),
        params.int("threshold", DEFAULT_PROMOTION_THRESHOLD), ls.options.episodeWindowDays))


@rpc("ctxls/ingest")
def ingest(ls: CtxlsServer, params: wire.Params) -> dict:
    result = writing_engine(ls).memory.ingest(
        ls.request_scope(params, "ctxls/ingest"), params.str("filename", required=True),
        text=params.str("text"), base64_data=params.str("base64"), key=params.str("id"),
        by=params.str("by") or "agent", expires_at=params.int("expiresAt"),
        meta=params.object("meta"))
    return wire.ingest_json(result)


@rpc("ctxls/purge")
def purge(ls: CtxlsServer, params: wire.Params) -> dict:
    return {"removed": memory_engine(ls).memory.purge(params.int("now"))}


@rpc("ctxls/trustMemory")
def trust_memory(ls: CtxlsServer, params: wire.Params) -> dict:
    return memory_engine(ls).trust_quarantined()


@rpc("ctxls/stash")
def stash(ls: CtxlsServer, params: wire.Params) -> dict:
    writing_engine(ls).stash.put(params.str("id", required=True), params.str("text", required=True))
    return {}


@rpc("ctxls/peek")
def peek(ls: CtxlsServer, params: wire.Params) -> dict | None:
    return wire.peek_json(memory_engine(ls).stash.peek(params.str("id", required=True)))


@rpc("ctxls/evict")
def evict(ls: CtxlsServer, params: wire.Params) -> dict:
    removed = memory_engine(ls).stash.evict(params.str("id"), params.int("olderThan"),
                                            params.int("maxCount"))
    return {"removed": removed}


@rpc("ctxls/node")
def node(ls: CtxlsServer, params: wire.Params) -> dict | None:
    item_id = params.str("id", required=True)
    scope = ls.request_scope(params, "ctxls/node")
    # As in `get`: an indexed file's path names the file, whatever memory was
    # written under it, so memory is not asked (team memory may be down).
    found = None
    if not any(engine.names_indexed_file(item_id) for engine in ls.workspaces.all()):
        found = memory_engine(ls).memory.node(item_id, scope)
    if found is None:
        engine, path = file_folder(ls, item_id)
        found = engine.file_node(path)
    return wire.node_json(found)


@rpc("ctxls/related")
def related(ls: CtxlsServer, params: wire.Params) -> dict:
    engine, path = file_folder(ls, params.str("id", required=True))
    items, truncated = engine.related(path, params.str("dir") or "both", params.int("hops", 1))
    return wire.related_json(items, truncated)
