"""Test code inside a production file: the lines of a file that are tests
although its path is not a test path (index/paths.is_test_path). Rust keeps
its unit tests in the file they test, in a `#[cfg(test)] mod tests { … }`,
and marks a test function `#[test]` (`#[tokio::test]`, …). Read from the
definition table (a definition's first rows are its attributes) and the
chunks' text, so recall (recall_features) and impact can ask it alike.
"""

from __future__ import annotations

import re

from ctxls.index.store import Connection

# An attribute making the item after it test code, at the start of a row of
# the item's attributes or of its name row: `#[cfg(test)]`, `#[test]`,
# `#[tokio::test]`, `#[tokio::test(flavor = "multi_thread")]`.
_RUST_TEST_ATTRIBUTE = re.compile(
    r"\s*#\[\s*(?:cfg\s*\(\s*test\s*\)|(?:[A-Za-z_]\w*::)*test(?:\s*\([^\]]*\))?)\s*\]")
_RUST_TEST_KINDS = ("namespace", "function", "method")


def inline_test_scopes(conn: Connection, path: str) -> list[tuple[int, int]]:
    """The row ranges (0-based, inclusive) of ``path``'s test items: a Rust
    module or function whose attributes make it test code. [] for a file of
    another language, or without any."""
    if not path.endswith(".rs"):
        return []
    # Only the chunks holding such an attribute are read (LIKE, in SQLite):
    # most files have none, and a file's text is not read for nothing.
    lines: dict[int, str] = {}
    for start, text in conn.execute(
            "SELECT c.start_line, c.text FROM chunks c JOIN files f ON f.id = c.file_id "
            "WHERE f.path = ? AND c.text LIKE '%#[%test%'", (path,)):
        for offset, line in enumerate(text.split("\n")):
            lines.setdefault(start + offset, line)
    if not lines:
        return []
    rows = conn.execute(
        "SELECT s.start_line, s.line, s.body_end FROM symbols s JOIN files f ON f.id = s.file_id "
        f"WHERE f.path = ? AND s.symbol_kind IN ({','.join('?' * len(_RUST_TEST_KINDS))})"
        " ORDER BY s.start_line", (path, *_RUST_TEST_KINDS)).fetchall()
    return [(start, end) for start, line, end in rows
            if any(_RUST_TEST_ATTRIBUTE.match(lines.get(row, "")) for row in range(start, line + 1))]


def within_test_scope(scopes: list[tuple[int, int]], start_line: int, end_line: int) -> bool:
    """Whether the rows ``start_line``..``end_line`` all lie in one of ``scopes`` (inline_test_scopes)."""
    return any(start <= start_line and end_line <= end for start, end in scopes)
