"""Incremental text edits as LSP defines them, for the daemon's open buffers
and for the proxy's copy of an editor's documents.

pygls's own ``TextDocument.apply_change`` diverged from the editor's text in
three ways: it splits lines with ``str.splitlines`` (a form feed, U+2028,
U+0085 … end a line there, while LSP lines end only at ``\\n``, ``\\r\\n``,
``\\r``), so every edit after such a character landed on the wrong line; it
clamps a character past the end of the last line to one before its end
(LSP: "defaults back to the line length"); and it drops an edit whose range
is inverted without a word. Here a range is checked first: an inverted one,
or one ending past the line after the last, is refused
(:class:`EditOutOfRange`), since the editor and this copy then disagree
about the text and any edit applied to it would be applied to the wrong text.

:func:`apply_changes` applies one ``didChange``'s content changes, for both.

One notification may carry thousands of edits (a replace-all): re-splitting
the whole text for each made 20,000 edits of a 900 KB buffer stall the event
loop for minutes. :class:`EditedText` splits the text into lines once per
notification, replaces only the lines each edit touches, and joins once.
"""

from __future__ import annotations

import re
from typing import Callable, Iterable

from lsprotocol import types

# LSP's line ends (TextDocuments, "Position"): nothing else ends a line
# (str.splitlines also ends one at \v, \f, \x1c, U+0085, U+2028 …). The
# pattern matches the breaks only: one matching whole lines
# (`[^\r\n]*(?:\r\n|\r|\n)`) rescanned a final line without a break
# from each of its characters, and a 60 KB one held the event loop for minutes.
LINE_BREAK = re.compile(r"\r\n?|\n")


class EditOutOfRange(ValueError):
    """An edit's range that names no place in the text: inverted, or past its end."""


def _split(text: str) -> list[str]:
    """LSP lines, each with its line break; the last (maybe "") has none."""
    lines, start = [], 0
    for line_break in LINE_BREAK.finditer(text):
        lines.append(text[start:line_break.end()])
        start = line_break.end()
    lines.append(text[start:])
    return lines


def _content_length(line: str) -> int:
    """A line's length without its line break."""
    if line.endswith("\r\n"):
        return len(line) - 2
    return len(line) - 1 if line.endswith(("\r", "\n")) else len(line)


def _column(content: str, units: int, encoding: str) -> int:
    """The index in ``content`` of a column given in ``encoding``'s code units;
    past the end of the line it is the line's length (LSP)."""
    if encoding == types.PositionEncodingKind.Utf32 or content.isascii():
        return min(units, len(content))
    counted = 0
    for index, char in enumerate(content):
        if counted >= units:
            return index
        if encoding == types.PositionEncodingKind.Utf8:
            counted += len(char.encode("utf-8", "surrogatepass"))
        else:
            counted += 2 if ord(char) > 0xFFFF else 1
    return len(content)


class EditedText:
    """A text taking incremental edits in order (``replace``), kept as lines."""

    def __init__(self, text: str, encoding: str = types.PositionEncodingKind.Utf16):
        self.lines = _split(text)
        self.encoding = encoding

    def _place(self, position: types.Position) -> tuple[int, int]:
        """(line index, index in that line) of a position."""
        if position.line >= len(self.lines):
            # The line just after the last (an end some clients send for a text
            # without a final line break) is the end of the text.
            return len(self.lines) - 1, len(self.lines[-1])
        line = self.lines[position.line]
        return position.line, _column(line[:_content_length(line)], position.character,
                                      self.encoding)

    def replace(self, edit_range: types.Range, new_text: str) -> None:
        start, end = edit_range.start, edit_range.end
        if (start.line, start.character) > (end.line, end.character):
            raise EditOutOfRange(f"the range is inverted (starts at {start.line}:"
                                 f"{start.character}, ends at {end.line}:{end.character})")
        if end.line > len(self.lines):
            raise EditOutOfRange(f"the range ends at line {end.line}, past the end of the text "
                                 f"({len(self.lines)} lines)")
        (first, column), (last, end_column) = self._place(start), self._place(end)
        lines = self.lines
        merged = lines[first][:column] + new_text + lines[last][end_column:]
        if first > 0 and merged.startswith("\n") and lines[first - 1].endswith("\r"):
            first -= 1  # "\r" + "\n" is one line break: the lines join
            merged = lines[first] + merged
        replacement = _split(merged)
        if last < len(lines) - 1:
            replacement.pop()  # "": merged ends with the line break of `last`
        lines[first:last + 1] = replacement

    def text(self) -> str:
        return "".join(self.lines)


def apply_changes(text: str, changes: Iterable[tuple[types.Range | None, str]], encoding: str,
                  editable: Callable[[str], bool] = lambda text: True
                  ) -> tuple[str | None, EditOutOfRange | None]:
    """``text`` after one ``didChange``'s content changes in order, each a
    (range, new text) pair, a None range replacing the whole text; None when
    none applied. An incremental edit applies only to a text ``editable``
    accepts (the daemon's bound on a buffer's size) and, after one out of range
    (returned, the edits before it kept), not until a whole text comes."""
    edited: EditedText | None = None
    applied, problem = False, None
    for edit_range, new_text in changes:
        if edit_range is None:
            text, edited, applied, problem = new_text, None, True, None
            continue
        if problem is not None or (edited is None and not editable(text)):
            continue
        if edited is None:
            edited = EditedText(text, encoding)
        try:
            edited.replace(edit_range, new_text)
            applied = True
        except EditOutOfRange as exc:
            problem = exc
    if not applied:
        return None, problem
    return (edited.text() if edited is not None else text), problem
