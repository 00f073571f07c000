"""Agent context: `ctxls/assemble` (recall, then pack a token budget) and
`ctxls/knowledge` (the always-on facts block)."""

from __future__ import annotations

import logging

from ctxls.daemon import wire
from ctxls.daemon.memory_handlers import memory_engine
from ctxls.daemon.app import CtxlsServer, rpc
from ctxls.daemon.uris import as_local
from ctxls.index.assemble import (assemble, candidates_from_hits, failed, off_topic, record_call,
                                  with_written)
from ctxls.index.engine import FILE_KINDS
from ctxls.index.errors import EngineError, InvalidParams, OutsideRoot
from ctxls.index.knowledge import DEFAULT_BUDGET_CHARS, knowledge_block
from ctxls.index.vocabulary import MAX_BUDGET_CHARS, MAX_BUDGET_TOKENS
from ctxls.index.store import now_ms

log = logging.getLogger(__name__)

# Hits recalled per kind before packing: more than any budget usually takes.
ASSEMBLE_POOL = 40


@rpc("ctxls/assemble")
def assemble_request(ls: CtxlsServer, params: wire.Params) -> dict:
    query = params.str("query", required=True)
    budget = params.int("budgetTokens")
    if budget is None or not 1 <= budget <= MAX_BUDGET_TOKENS:
        raise InvalidParams("budgetTokens", f"must be an integer from 1 to {MAX_BUDGET_TOKENS}")
    kinds, _ = params.kinds()
    min_score = params.number("minScore")
    mode = params.str("mode") or "hybrid"
    scope = ls.request_scope(params, "ctxls/assemble")
    engine = memory_engine(ls)
    counter = engine.token_counter()
    result = None
    try:
        result = ls.recall(query, kinds, ASSEMBLE_POOL, True, mode, scope, True)
        assembled = assemble(candidates_from_hits(result.hits_by_kind), budget, min_score, counter,
                             lambda c: ls.whole_text(c.path) if c.is_file else c.text,
                             off_topic_note=off_topic_note(ls, query, kinds, result.hits_by_kind),
                             by_cosine=mode == "semantic")
    except EngineError:
        raise  # the caller's mistake: a proper error, not a failover
    except Exception as exc:  # the retrieval path failed: answer honestly, never crash
        log.exception("assemble failed over")
        assembled = failed(counter.name, exc)
    try:
        record_call(engine.store, assembled, budget, now_ms())
    except Exception:  # the store may be what failed; the answer still goes out
        log.warning("could not record assemble statistics", exc_info=True)
    return wire.assemble_json(assembled) | (wire.partial_json(result) if result else {})


def off_topic_note(ls: CtxlsServer, query: str, kinds: list[str] | None,
                   hits_by_kind: dict) -> str | None:
    """Why the repository is not about ``query`` (assemble then abstains), or
    None. Asked only when files are searched: memory answers for itself.
    The written memory recalled (``hits_by_kind``) counts as the repository's
    own: a fact that answers the question makes it on topic."""
    if kinds is not None and not set(FILE_KINDS) & set(kinds):
        return None
    written = [hit for hits in hits_by_kind.values() for hit in hits if hit.uri is None]
    # Off-topic only when it is so in every workspace (each judged in its own
    # model's cosines), by the words of the file kinds searched (a word only
    # in the config files searched is on topic).
    reasons = [off_topic(with_written(engine.topicality(query, kinds=kinds), written))
               for engine in ls.workspaces.all()]
    return reasons[0] if reasons and all(reasons) else None


@rpc("ctxls/knowledge")
def knowledge_request(ls: CtxlsServer, params: wire.Params) -> dict:
    budget = params.int("budgetChars", DEFAULT_BUDGET_CHARS)
    if not 1 <= budget <= MAX_BUDGET_CHARS:
        raise InvalidParams("budgetChars", f"must be an integer from 1 to {MAX_BUDGET_CHARS}")
    scope = ls.request_scope(params, "ctxls/knowledge")
    engine = memory_engine(ls)
    def repo_path(anchor: str) -> str | None:
        try:
            return engine.relative(as_local(anchor))
        except OutsideRoot:  # no file of this folder: it matches no edit
            return None

    # The anchored files are checked on disk first: an edit made a moment ago
    # marks its facts stale before the watcher's batch is in.
    result = knowledge_block(engine.memory, engine.store, scope, now_ms(), repo_path, budget,
                             refresh=engine.refresh_stale)
    return {"block": result.block, "facts": result.facts}
