"""Incremental text edits as LSP defines them, for the daemon's open buffers
and for the proxy's copy of an editor's documents.

pygls's own ``TextDocument.apply_change`` diverged from the editor's text in
three ways: it splits lines with ``str.splitlines`` (a form feed, U+2028,
U+0085 … end a line there, while LSP lines end only at ``\\n``, ``\\r\\n``,
``\\r``), so every edit after such a character landed on the wrong line; it
clamps a character past the end of the last line to one before its end
(LSP: "defaults back to the line length"); and it drops an edit whose range
is inverted without a word. Here a range is checked first: an inverted one,
or one starting or ending past the line after the last, is refused
(:class:`EditOutOfRange`), since the editor and this copy then disagree
about the text and any edit applied to it would be applied to the wrong text.
"""

from __future__ import annotations

import re

from lsprotocol import types

# LSP's line ends (TextDocuments, "Position"): nothing else ends a line.
_LINE_BREAK = re.compile(r"\r\n|\r|\n")


class EditOutOfRange(ValueError):
    """An edit's range that names no place in the text: inverted, or past its end."""


def _line_bounds(text: str) -> list[tuple[int, int]]:
    """(start, end) offsets of each line's text, its line break excluded."""
    bounds, start = [], 0
    for match in _LINE_BREAK.finditer(text):
        bounds.append((start, match.start()))
        start = match.end()
    bounds.append((start, len(text)))
    return bounds


def _units(char: str, encoding: str) -> int:
    if encoding == types.PositionEncodingKind.Utf8:
        return len(char.encode("utf-8", "surrogatepass"))
    if encoding == types.PositionEncodingKind.Utf32:
        return 1
    return 2 if ord(char) > 0xFFFF else 1


def _offset(text: str, bounds: list[tuple[int, int]], position: types.Position,
            encoding: str) -> int:
    if position.line >= len(bounds):
        # The line just after the last (an end position some clients send for
        # a text without a final line break) is the end of the text.
        return len(text)
    start, end = bounds[position.line]
    if encoding == types.PositionEncodingKind.Utf32 or text.isascii():
        return min(start + position.character, end)  # past the line: its length (LSP)
    units = 0
    for offset in range(start, end):
        if units >= position.character:
            return offset
        units += _units(text[offset], encoding)
    return end


def apply_edit(text: str, edit_range: types.Range, new_text: str,
               encoding: str = types.PositionEncodingKind.Utf16) -> str:
    """``text`` with ``edit_range`` (in ``encoding``'s code units) replaced by ``new_text``."""
    start, end = edit_range.start, edit_range.end
    if (start.line, start.character) > (end.line, end.character):
        raise EditOutOfRange(f"the range is inverted (starts at {start.line}:{start.character}, "
                             f"ends at {end.line}:{end.character})")
    bounds = _line_bounds(text)
    if end.line > len(bounds):
        raise EditOutOfRange(f"the range ends at line {end.line}, past the end of the text "
                             f"({len(bounds)} lines)")
    return (text[:_offset(text, bounds, start, encoding)] + new_text
            + text[_offset(text, bounds, end, encoding):])
