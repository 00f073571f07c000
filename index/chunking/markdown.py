"""Markdown read as one piece per heading section (ATX and setext headings
outside code fences and YAML front matter), named by its heading path."""

from __future__ import annotations

import re

from ..linear_re import LinearPattern
from .pieces import Piece

# RE2 (linear, the same groups): the lazy title before an optional closing
# run of `#` was quadratic in a heading line of spaces (32,000: 7 s).
_ATX_HEADING = LinearPattern(r" {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*")
_SETEXT_UNDERLINE = re.compile(r" {0,3}(=+|-+)[ \t]*")
# Markup inside a heading, reduced to the words a reader sees: an image's
# alt text, a link's text, no tags. A README's `# <img alt="chi" src=...>`
# would otherwise title every section with a URL, and the symbol column
# (weighted 32 in BM25) would match the URL's words.
# RE2 (linear_re), linear in the heading: Python's engine tried every `![` or `<` of a
# heading that never closes it to the heading's end (64 KiB of `![`: 13 s).
_HEADING_MARKUP = (
    (LinearPattern(r"(?i)<img\b[^>]*?\balt\s*=\s*[\"']([^\"']*)[\"'][^>]*>"), r" \1 "),
    (LinearPattern(r"<[^>]*>"), " "),
    (LinearPattern(r"!\[([^\]]*)\]\([^)]*\)"), r"\1"),
    (LinearPattern(r"\[([^\]]*)\]\([^)]*\)"), r"\1"),
    # Pandoc's, Quarto's, R Markdown's and MkDocs' heading attributes (`##
    # Methods {#sec-methods .unnumbered}`, `{-}`, `{: #id }`): an anchor, no words.
    (LinearPattern(r"[ \t]*\{[ \t]*[#.:-][^{}]*\}[ \t]*$"), ""),
)


def _heading_text(title: str) -> str:
    for pattern, replacement in _HEADING_MARKUP:
        title = pattern.sub(replacement, title)
    return " ".join(title.split())
_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})")
# Lines that open a block other than a paragraph, so cannot be setext heading text.
_NOT_PARAGRAPH = re.compile(r" {4}| {0,3}(?:[>#|<]|[-*+](?:[ \t]|$)|\d{1,9}[.)](?:[ \t]|$)|(?:[-*_][ \t]*){3,}$)")


def markdown_sections(lines: list[str]) -> list[Piece]:
    headings = _markdown_headings(lines)
    pieces = []
    if not headings or headings[0][0] > 0:
        preamble_end = headings[0][0] - 1 if headings else len(lines) - 1
        pieces.append(Piece(0, preamble_end, None, "section"))
    path: list[tuple[int, str]] = []  # (level, title) of the enclosing headings
    for index, (row, level, title) in enumerate(headings):
        while path and path[-1][0] >= level:
            path.pop()
        path.append((level, title))
        end = headings[index + 1][0] - 1 if index + 1 < len(headings) else len(lines) - 1
        symbol = " > ".join(title for _, title in path if title) or None
        pieces.append(Piece(row, end, symbol, "section"))
    return pieces


def _markdown_headings(lines: list[str]) -> list[tuple[int, int, str]]:
    """(first row, level, title) of every ATX and setext heading outside code
    fences and YAML front matter."""
    headings: list[tuple[int, int, str]] = []
    fence = ""  # the opening fence while inside a fenced code block
    paragraph_start = -1  # first row of the current run of plain paragraph lines
    row = _front_matter_end(lines) + 1
    while row < len(lines):
        line = lines[row]
        fence_match = _FENCE.match(line)
        if fence:
            if fence_match and fence_match.group(1)[0] == fence[0] and len(fence_match.group(1)) >= len(fence):
                fence = ""
        elif fence_match:
            fence = fence_match.group(1)
            paragraph_start = -1
        elif atx := _ATX_HEADING.fullmatch(line):
            headings.append((row, len(atx.group(1)), _heading_text(atx.group(2) or "")))
            paragraph_start = -1
        elif paragraph_start >= 0 and (setext := _SETEXT_UNDERLINE.fullmatch(line)):
            title = _heading_text(" ".join(lines[paragraph_start:row]))
            headings.append((paragraph_start, 1 if setext.group(1)[0] == "=" else 2, title))
            paragraph_start = -1
        elif not line.strip() or _NOT_PARAGRAPH.match(line):
            paragraph_start = -1
        elif paragraph_start < 0:
            paragraph_start = row
        row += 1
    return headings


def _front_matter_end(lines: list[str]) -> int:
    """Row of the line closing a leading ``---`` YAML block, or -1."""
    if lines[0].rstrip() != "---":
        return -1
    for row in range(1, len(lines)):
        if lines[row].rstrip() in ("---", "..."):
            return row
    return -1
