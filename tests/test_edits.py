"""daemon/edits.py: incremental edits as LSP defines them, checked against a
plain reference (the whole text's line ends found anew for every edit)."""

from __future__ import annotations

import random
import re

import pytest
from lsprotocol import types

from ctxls.daemon.edits import EditedText, EditOutOfRange


UNITS = {"utf-8": lambda c: len(c.encode("utf-8")), "utf-16": lambda c: 2 if ord(c) > 0xFFFF else 1,
         "utf-32": lambda c: 1}


def reference_edit(text: str, start: tuple[int, int], end: tuple[int, int], new_text: str,
                   encoding: str = "utf-16") -> str:
    """LSP's rules spelled out: lines end at \\n, \\r\\n, \\r; a column (in
    ``encoding``'s code units) past a line's end is that end; a line past the
    last is the text's end."""
    bounds, begin = [], 0
    for match in re.finditer(r"\r\n|\r|\n", text):
        bounds.append((begin, match.start()))
        begin = match.end()
    bounds.append((begin, len(text)))

    def offset(line: int, character: int) -> int:
        if line >= len(bounds):
            return len(text)
        first, last = bounds[line]
        units = 0
        for index in range(first, last):
            if units >= character:
                return index
            units += UNITS[encoding](text[index])
        return last

    return text[:offset(*start)] + new_text + text[offset(*end):]


def edit(text: str, start: tuple[int, int], end: tuple[int, int], new_text: str) -> str:
    edited = EditedText(text)
    edited.replace(types.Range(types.Position(*start), types.Position(*end)), new_text)
    return edited.text()


def test_lines_end_only_where_lsp_says():
    """pygls counted a form feed and U+2028 as line ends: an edit below one
    landed a line off."""
    text = "a = 1\n\x0c\nb = 2\u2028still b\nc = 3\n"
    assert edit(text, (3, 0), (3, 1), "d") == "a = 1\n\x0c\nb = 2\u2028still b\nd = 3\n"
    assert edit("abc\r\ndef\rghi", (2, 0), (2, 3), "X") == "abc\r\ndef\rX"


def test_a_column_past_the_line_is_its_end_and_surrogate_pairs_count_two():
    assert edit("abc\ndef\nghi", (2, 99), (2, 99), "X") == "abc\ndef\nghiX"  # pygls: ghXi
    assert edit("abc\r\ndef", (0, 99), (0, 99), "X") == "abcX\r\ndef"
    assert edit("x\U0001F600y\n", (0, 3), (0, 4), "Z") == "x\U0001F600Z\n"
    assert edit("abc", (1, 0), (1, 0), "\nX") == "abc\nX"  # the line after the last: the end


@pytest.mark.parametrize("start, end", [((2, 1), (0, 1)), ((0, 5), (0, 4)), ((0, 0), (5, 0))])
def test_ranges_naming_no_place_are_refused(start, end):
    with pytest.raises(EditOutOfRange):
        edit("abc\ndef\nghi", start, end, "X")


@pytest.mark.parametrize("encoding", ["utf-16", "utf-8", "utf-32"])
def test_many_edits_match_the_reference(encoding: str):
    """Random texts with every kind of line end, and random edits (line
    ends inserted and removed, a \\r meeting a \\n), applied in order, with
    columns in each position encoding a client may negotiate."""
    rng = random.Random(7)
    pieces = ["a", "bc", "\n", "\r", "\r\n", "\x0c", "\U0001F600", "\u2028", "\xe9", " "]
    for _ in range(300):
        text = "".join(rng.choice(pieces) for _ in range(rng.randrange(0, 30)))
        edited = EditedText(text, encoding)
        for _ in range(8):
            lines = len(re.split(r"\r\n|\r|\n", text))
            start = (rng.randrange(0, lines + 1), rng.randrange(0, 6))
            end = max(start, (rng.randrange(start[0], lines + 1), rng.randrange(0, 6)))
            new_text = "".join(rng.choice(pieces) for _ in range(rng.randrange(0, 4)))
            edited.replace(types.Range(types.Position(*start), types.Position(*end)), new_text)
            text = reference_edit(text, start, end, new_text, encoding)
            assert edited.text() == text
