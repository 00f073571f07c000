"""The names and bounds requests take, for every shell that lists or
checks them (the CLI's choices, the MCP tools' enums and schema bounds, the
wire's checks) without importing the engine: the MCP bridge reads them
before any engine loads. The engine enforces the bounds."""

import math
from typing import Any

# What recall ranks: chunks of files (code, doc, config) and written memory
# (fact, episode; direct docs rank with file docs).
RECALL_KINDS = ("code", "doc", "config", "fact", "episode")
# How recall ranks: BM25 and cosine fused, BM25 only, cosine only.
RECALL_MODES = ("hybrid", "lexical", "semantic")
# Who wrote a memory row.
AUTHORS = ("human", "agent")

# -- bounds -------------------------------------------------------------------
MAX_RECALL_N = 200
# A recall (or assemble) query's length: FTS5's cost grows with the square of
# the terms OR-ed together (20,000 distinct terms: 4 s; 200,000: minutes of a
# worker thread). An issue or a log pasted whole is for locate.
MAX_QUERY_CHARS = 10_000
MAX_LOCATE_N = 100
# Longer texts are cut here (an issue with a whole log pasted in): the head
# holds the title and the report, a traceback's innermost frames are at its end.
MAX_LOCATE_CHARS = 40_000


def locate_text_kept(text: str) -> str:
    """What locate reads of ``text``: past MAX_LOCATE_CHARS its first and
    last halves, a newline between (a client cuts before sending, the
    engine again, which leaves a cut text as it is)."""
    if len(text) <= MAX_LOCATE_CHARS:
        return text
    half = MAX_LOCATE_CHARS // 2
    return text[:half] + "\n" + text[-half:]
# recentActivity looks back at most this many days (a bound keeps the cutoff an integer).
MAX_DAYS = 1_000_000
# Rows recentActivity lists at most.
MAX_RECENT_ITEMS = 1000
MAX_SYMBOLS_N = 1000
MAX_NAME_CHARS = 1000
MAX_RELATED_N = 100
# A memory id (and id prefix); rows a memory list or recall returns at most.
MAX_ID_CHARS = 1024
MAX_MEMORY_N = 200
MAX_BUDGET_CHARS = 200_000
MAX_BUDGET_TOKENS = 200_000
# A memory scope's name (a tenant), in characters.
MAX_SCOPE_CHARS = 256
# remember and ingest: bytes of the text or upload (UTF-8).
MAX_WRITE_BYTES = 10 * 1024 * 1024
# A memory row's meta: nesting levels and bytes of its JSON text (UTF-8).
MAX_META_DEPTH = 64
MAX_META_BYTES = 64 * 1024

# -- what no value may be ------------------------------------------------------
# SQLite's INTEGER: every integer param must fit, wherever it ends up.
MIN_INT, MAX_INT = -(1 << 63), (1 << 63) - 1


def first_invalid(value: Any, path: str = "") -> tuple[str, str] | None:
    """(param path, problem) of the first value no request may carry, and no
    store may hold (a row's meta, whether remembered or imported): a string
    with NUL or an unpaired surrogate, an integer outside SQLite's 64-bit
    range, a number that is not finite (no JSON answer could carry it).
    Walks any nesting without recursion."""
    stack: list[tuple[str, Any]] = [(path, value)]
    while stack:
        where, item = stack.pop()
        if isinstance(item, str):
            problem = _string_problem(item)
            if problem:
                return where or "params", f"must not contain {problem}"
        elif isinstance(item, bool) or item is None:
            continue
        elif isinstance(item, int):
            if not MIN_INT <= item <= MAX_INT:
                return where or "params", "is outside the 64-bit integer range"
        elif isinstance(item, float):
            if not math.isfinite(item):
                return where or "params", "must be a finite number"
        elif isinstance(item, dict):
            for key, child in reversed(list(item.items())):
                child_path = f"{where}.{key}" if where else str(key)
                problem = _string_problem(key) if isinstance(key, str) else None
                if problem:
                    return child_path, f"has a key that contains {problem}"
                stack.append((child_path, child))
        elif isinstance(item, list):
            stack.extend((f"{where}.{i}" if where else str(i), child)
                         for i, child in reversed(list(enumerate(item))))
    return None


def _string_problem(text: str) -> str | None:
    """What a string holds that no store or answer can carry, or None."""
    if "\0" in text:
        return "NUL characters"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "unpaired surrogates"
    return None
