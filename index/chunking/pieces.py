"""Line ranges (``Piece``) to chunks: a piece longer than MAX_CHUNK_LINES
is cut into overlapping parts, blank edges trimmed; files without
definitions become line windows; lines outside every definition become
"module" residue pieces, except runs of closing lines (a class's last `}`
or `end`), which end the chunk before them. Every line but blank ones is
in some chunk."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import NamedTuple

from ..model import Chunk

MAX_CHUNK_LINES = 150
OVERLAP_LINES = 20
WINDOW_LINES = 60
WINDOW_OVERLAP_LINES = 10


class Piece(NamedTuple):
    """A line range that becomes one chunk (or several, if too long)."""

    start: int
    end: int
    symbol: str | None
    symbol_kind: str
    # Last line of the whole definition: past ``end`` for a container, whose
    # piece is its header and whose members are pieces of their own.
    body_end: int = -1
    names: tuple[str, ...] = ()
    # The definition's own line (its name's: `def`, `class`, `fn`, …), past
    # the comments, decorators and attributes ``start`` includes.
    line: int = -1
    # A declaration only (spans.Decl.declaration), until the file's spans are complete.
    declaration: bool = False
    # Its clauses' arity (spans.Decl.arity): a clause of another arity is another function.
    arity: int | None = None


def build_chunks(lines: list[str], pieces: list[Piece], language: str, kind: str) -> list[Chunk]:
    chunks = []
    for piece in _with_closing_lines(lines, sorted(pieces, key=lambda piece: (piece.start, piece.end))):
        trimmed = trim_blank_edges(lines, piece.start, piece.end)
        if trimmed is None:
            continue
        names = piece.names or ((piece.symbol,) if piece.symbol else ())
        for start, end in _parts(*trimmed, MAX_CHUNK_LINES, OVERLAP_LINES):
            text = "\n".join(lines[start : end + 1])
            chunks.append(Chunk(piece.symbol, piece.symbol_kind, kind, language, start, end, text,
                                names=names))
    chunks.sort(key=lambda chunk: (chunk.start_line, chunk.end_line))
    return chunks


def window_chunks(lines: list[str], language: str, kind: str) -> list[Chunk]:
    chunks: list[Chunk] = []
    for window_start, window_end in _parts(0, len(lines) - 1, WINDOW_LINES, WINDOW_OVERLAP_LINES):
        trimmed = trim_blank_edges(lines, window_start, window_end)
        # Long blank stretches can leave a window inside its predecessor.
        if trimmed is None or (chunks and trimmed[1] <= chunks[-1].end_line):
            continue
        start, end = trimmed
        text = "\n".join(lines[start : end + 1])
        chunks.append(Chunk(None, "window", kind, language, start, end, text))
    return chunks


def _parts(start: int, end: int, size: int, overlap: int) -> Iterator[tuple[int, int]]:
    """[start, end] cut into ranges of at most ``size`` lines, consecutive
    ranges sharing ``overlap`` lines."""
    while True:
        last = min(end, start + size - 1)
        yield start, last
        if last >= end:
            return
        start = last + 1 - overlap


def trim_blank_edges(lines: list[str], start: int, end: int) -> tuple[int, int] | None:
    while start <= end and not lines[start].strip():
        start += 1
    while end >= start and not lines[end].strip():
        end -= 1
    return (start, end) if start <= end else None


# Lines that only close something (`}`, `});`, Ruby's `end`): a run of them
# left between definitions is not worth a chunk of its own; it ends the chunk
# before it (the one of the definition it closes). The first run is
# possessive: both runs take spaces, and sharing a long run of them was
# quadratic in it (a line of 64,000 spaces and `x`: 10 s).
_CLOSING_LINE = re.compile(r"[\s)\]};,]*+(?:end)?[\s;]*")


def _with_closing_lines(lines: list[str], pieces: list[Piece]) -> list[Piece]:
    """``pieces`` (sorted, disjoint), each stretched over the lines after it
    that no piece holds when those are closing lines (``residue`` leaves
    them out): a container's `}` or `end` ends its last member's chunk, so
    its last chunk reaches its ``body_end``. Such lines before the first
    piece (a fragment opening with `});`) start that piece."""
    stretched = []
    for index, piece in enumerate(pieces):
        start, end = piece.start, piece.end
        if index == 0 and start > 0 and _only_closing(lines[:start]):
            start = 0
        following = pieces[index + 1].start if index + 1 < len(pieces) else len(lines)
        if following > end + 1 and _only_closing(lines[end + 1 : following]):
            end = following - 1
        stretched.append(piece if (start, end) == (piece.start, piece.end)
                         else piece._replace(start=start, end=end))
    return stretched


def _only_closing(lines: list[str]) -> bool:
    return all(_CLOSING_LINE.fullmatch(line) for line in lines)


def residue(lines: list[str], spans: list[Piece]) -> list[Piece]:
    """Module chunks: maximal runs of lines outside every symbol span, but
    for runs of closing lines only (``build_chunks`` gives those to the
    chunk before them)."""
    runs = []
    next_row = 0
    for span in sorted(spans, key=lambda span: span.start):
        if span.start > next_row:
            runs.append((next_row, span.start - 1))
        next_row = max(next_row, span.end + 1)
    if next_row < len(lines):
        runs.append((next_row, len(lines) - 1))
    return [
        Piece(start, end, None, "module")
        for start, end in runs
        if any(not _CLOSING_LINE.fullmatch(line) for line in lines[start : end + 1])
    ]
