"""The knowledge block: the facts an agent should always see, as one stable,
budgeted text (for a cached system-prompt prefix).

Order: pinned facts (``meta.pinned``) first, then human-written before
agent-written, then the most recalled, then by id — so the same store state
always renders the same bytes. A fact whose ``meta.anchor`` (a path, or
``{"path", "symbol"}``) was edited after the fact was written is marked
stale. "Edited" means a row in the edit log: edits made while no daemon ran
and then picked up by a cold or forced pass are not seen.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from ctxls.index.memory import visible_sql
from ctxls.index.scopes import Scope
from ctxls.index.store import Store

DEFAULT_BUDGET_CHARS = 2000
MAX_BUDGET_CHARS = 200_000
HEADER = "Known facts (ctxls):"


@dataclass(frozen=True)
class KnowledgeBlock:
    block: str | None
    facts: int


def _anchor(meta: dict | None) -> tuple[str, str | None] | None:
    anchor = (meta or {}).get("anchor")
    if isinstance(anchor, str) and anchor:
        return anchor, None
    if isinstance(anchor, dict) and isinstance(anchor.get("path"), str) and anchor["path"]:
        symbol = anchor.get("symbol")
        return anchor["path"], symbol if isinstance(symbol, str) and symbol else None
    return None


def _is_stale(store: Store, anchor: tuple[str, str | None], written_at: int) -> bool:
    path, symbol = anchor
    sql = "SELECT 1 FROM edits WHERE path = ? AND ts > ?"
    args: list = [path, written_at]
    if symbol is not None:
        sql += " AND symbol = ?"
        args.append(symbol)
    return store.reader().execute(sql + " LIMIT 1", args).fetchone() is not None


def knowledge_block(store: Store, scope: Scope, now: int,
                    budget_chars: int = DEFAULT_BUDGET_CHARS) -> KnowledgeBlock:
    visible, args = visible_sql(scope, now)
    rows = store.reader().execute(
        f"SELECT m.key, m.scope, m.author, m.text, m.meta, m.created_at, "
        f"(SELECT count(*) FROM demand d WHERE d.path = m.key AND d.kind = 'fact' "
        f" AND d.action = 'recall' AND d.scope = m.scope) AS recalls "
        f"FROM memory m WHERE m.kind = 'fact' AND m.part = 0 AND {visible}", args).fetchall()
    facts = []
    for key, row_scope, author, text, meta_json, created_at, recalls in rows:
        meta = json.loads(meta_json) if meta_json else None
        pinned = bool(isinstance(meta, dict) and meta.get("pinned"))
        anchor = _anchor(meta if isinstance(meta, dict) else None)
        stale = anchor is not None and _is_stale(store, anchor, created_at)
        facts.append(((not pinned, author != "human", -recalls, key, row_scope),
                      key, " ".join(text.split()), anchor, stale))
    facts.sort(key=lambda f: f[0])
    lines: list[str] = []
    used = len(HEADER)
    for _, key, text, anchor, stale in facts:
        line = f"- [{key}] {text}"
        if stale:
            where = anchor[0] + (f" {anchor[1]}" if anchor[1] else "")
            line += f" (stale: {where} changed since this was written)"
        if used + 1 + len(line) <= budget_chars:
            lines.append(line)
            used += 1 + len(line)
    if not lines:
        return KnowledgeBlock(None, 0)
    return KnowledgeBlock("\n".join([HEADER, *lines]), len(lines))
