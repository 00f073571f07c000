"""What no request may carry, on any transport, checked on the standard
library alone (the MCP bridge checks each line before it loads anything)."""

from __future__ import annotations

import math
from typing import Any

# SQLite's INTEGER: every integer param must fit, wherever it ends up.
MIN_INT, MAX_INT = -(1 << 63), (1 << 63) - 1


def first_invalid(value: Any, path: str = "") -> tuple[str, str] | None:
    """(param path, problem) of the first value no request may carry: a string
    with NUL or an unpaired surrogate, an integer outside SQLite's 64-bit range,
    a number that is not finite. Walks any nesting without recursion."""
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
