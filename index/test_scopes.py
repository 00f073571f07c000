"""Test code inside a production file: the lines of a file that are tests
although its path is not a test path (index/paths.is_test_path). Rust keeps
its unit tests in the file they test, in a `#[cfg(test)] mod tests { … }`,
and marks a test function `#[test]` (`#[tokio::test]`, …); Zig writes
`test "name" { … }` blocks and D `unittest { … }` blocks beside the code.

One rule, :func:`is_test_item_head`, says which rows of an item's head (its
attributes and its name row) make it test code. Recall reads those rows from
the definition table and the chunks' text (:func:`inline_test_scopes`);
impact reads them off the tree (``impact.syntax.in_inline_test``).
"""

from __future__ import annotations

import re
from typing import NamedTuple

from ctxls.index.languages import language_for_path
from ctxls.index.store import Connection


class _TestItemHead(NamedTuple):
    row: re.Pattern[str]  # a head row that makes the item test code
    like: str  # SQL LIKE: the chunks that can hold such a row


_TEST_ITEM_HEADS = {
    # An attribute: `#[cfg(test)]`, `#[test]`, `#[tokio::test]`,
    # `#[tokio::test(flavor = "multi_thread")]`.
    "rust": _TestItemHead(re.compile(
        r"\s*#\[\s*(?:cfg\s*\(\s*test\s*\)|(?:[A-Za-z_]\w*\s*::\s*)*test(?:\s*\([^\]]*\))?)\s*\]"),
        "%#[%test%"),
    # `test "name" {`, `test name {` (a doctest), `test {`; not a value named test.
    "zig": _TestItemHead(re.compile(r"\s*test\s*(?:\"|\{|[A-Za-z_]\w*\s*\{)"), "%test%"),
    "d": _TestItemHead(re.compile(r"\s*unittest\b"), "%unittest%"),
}
_TEST_ITEM_KINDS = ("namespace", "function", "method")


def has_inline_tests(language: str | None) -> bool:
    """Whether ``language`` writes test items inside production files."""
    return language in _TEST_ITEM_HEADS


def is_test_item_head(language: str | None, row: str) -> bool:
    """Whether ``row``, one row of an item's head (an attribute, or the row
    naming it), makes the item test code in ``language``."""
    head = _TEST_ITEM_HEADS.get(language or "")
    return head is not None and head.row.match(row) is not None


def inline_test_scopes(conn: Connection, path: str) -> list[tuple[int, int]]:
    """The row ranges (0-based, inclusive) of ``path``'s test items: a
    module, function or block whose head makes it test code. [] for a file
    of a language without them, or without any."""
    language = language_for_path(path)
    if not has_inline_tests(language):
        return []
    # Only the chunks that can hold such a head are read (LIKE, in SQLite):
    # most files have none, and a file's text is not read for nothing.
    lines: dict[int, str] = {}
    for start, text in conn.execute(
            "SELECT c.start_line, c.text FROM chunks c JOIN files f ON f.id = c.file_id "
            "WHERE f.path = ? AND c.text LIKE ?", (path, _TEST_ITEM_HEADS[language].like)):
        for offset, line in enumerate(text.split("\n")):
            lines.setdefault(start + offset, line)
    if not lines:
        return []
    rows = conn.execute(
        "SELECT s.start_line, s.line, s.body_end FROM symbols s JOIN files f ON f.id = s.file_id "
        f"WHERE f.path = ? AND s.symbol_kind IN ({','.join('?' * len(_TEST_ITEM_KINDS))})"
        " ORDER BY s.start_line", (path, *_TEST_ITEM_KINDS)).fetchall()
    return [(start, end) for start, line, end in rows
            if any(is_test_item_head(language, lines.get(row, "")) for row in range(start, line + 1))]


def within_test_scope(scopes: list[tuple[int, int]], start_line: int, end_line: int) -> bool:
    """Whether the rows ``start_line``..``end_line`` all lie in one of ``scopes`` (inline_test_scopes)."""
    return any(start <= start_line and end_line <= end for start, end in scopes)
