"""The knowledge block: the facts an agent should always see, as one stable,
budgeted text (for a cached system-prompt prefix).

Order: pinned facts (``meta.pinned``) first, then human-written before
agent-written, then the most recalled, then by id — so the same store state
always renders the same bytes. A fact whose ``meta.anchor`` (a path, or
``{"path", "symbol"}``) was edited after the fact was written is marked
stale. "Edited" means a row in the edit log: edits made while no daemon ran
and then picked up by a cold or forced pass are not seen. The anchored files
are checked against the disk first (``refresh``), so an edit the watcher has
not handed over yet counts too.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ctxls.index.memory import Memory
from ctxls.index.scopes import Scope
from ctxls.index.store import Store
from ctxls.index.vocabulary import MAX_BUDGET_CHARS

DEFAULT_BUDGET_CHARS = 2000
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


def knowledge_block(memory: Memory, store: Store, scope: Scope, now: int,
                    repo_path: Callable[[str], str | None],
                    budget_chars: int = DEFAULT_BUDGET_CHARS,
                    refresh: Callable[[list[str]], object] | None = None) -> KnowledgeBlock:
    """``memory``'s facts; staleness from ``store``'s edit log (edits stay
    local), whose paths are repo-relative: an anchor is read through
    ``repo_path`` (an absolute path, `./x` or a `file:` URI names the file
    as its repo-relative path does; None: outside the repository, it
    matches no edit). ``refresh`` is given the anchored paths first, to
    index (and log) what changed on disk before the log is read
    (Engine.refresh_stale)."""
    facts = []
    for fact in memory.known_facts(scope, now):
        meta = fact.meta
        pinned = bool(isinstance(meta, dict) and meta.get("pinned"))
        anchor = _anchor(meta if isinstance(meta, dict) else None)
        if anchor is not None:
            anchor = (anchor[0], anchor[1], repo_path(anchor[0]))
        facts.append(((not pinned, fact.author != "human", -fact.recalls, fact.key, fact.scope),
                      fact, anchor))
    facts.sort(key=lambda f: f[0])
    if refresh is not None:
        refresh(list(dict.fromkeys(a[2] for _, _, a in facts if a is not None and a[2] is not None)))
    lines: list[str] = []
    used = len(HEADER)
    for _, fact, anchor in facts:
        # Read only a text that could fit what is left (a character is at most
        # 4 bytes; a longer text could fit only if it were mostly whitespace).
        text = fact.text_within(4 * max(budget_chars - used, 0))
        if text is None:
            continue
        stale = anchor is not None and anchor[2] is not None and \
            _is_stale(store, (anchor[2], anchor[1]), fact.created_at)
        line = f"- [{fact.key}] {' '.join(text.split())}"
        if stale:
            where = anchor[0] + (f" {anchor[1]}" if anchor[1] else "")
            line += f" (stale: {where} changed since this was written)"
        if used + 1 + len(line) <= budget_chars:
            lines.append(line)
            used += 1 + len(line)
    if not lines:
        return KnowledgeBlock(None, 0)
    return KnowledgeBlock("\n".join([HEADER, *lines]), len(lines))
