"""Packing: tiny and short pieces joined with their neighbours into
reading-sized ones (``chunker.chunk_file``; ``definition_chunks`` skips it)."""

from __future__ import annotations

from .pieces import Piece, trim_blank_edges

# A 1-2-line chunk (a class header cut from its methods, a one-line Rust
# `impl`, a TypeScript overload or type alias, a comment left between two
# methods) is rarely what anyone wants to read, yet it ranks well: BM25
# favours short rows. Packing joins such pieces with their neighbours up to
# PACK_CHARS (semble's measured sweet spot is about 1,500 characters); long
# definitions stay as they are (split by MAX_CHUNK_LINES).

PACK_CHARS = 1500
TINY_LINES = 2
# Residue shorter than this is tiny whatever its line count (`}` and a macro's
# opening line, a blank line between).
TINY_CHARS = 80
# A definition this short is packed with its short siblings (400 on the
# code-search dev set: 250 and 700 gave description NDCG@10 0.485 and 0.513
# against 0.506, the larger by making every chunk a bundle).
SHORT_CHARS = 400


def pack(lines: list[str], pieces: list[Piece]) -> list[Piece]:
    """``pieces`` (sorted, disjoint) joined into reading-sized pieces:

    1. a container's header takes its members in order while they fit
       (a class with its fields and short methods reads as one), and never
       joins the pieces before it (a header joins what it introduces);
    2. runs of tiny pieces (at most TINY_LINES lines) join each other;
    3. runs of short definitions (at most SHORT_CHARS each) of one scope
       join each other (an impl's ten three-line accessors read as one);
    4. a tiny piece still alone joins the smaller neighbour it fits with.
    """
    sized = [(piece, size) for piece in pieces if (size := _size(lines, piece))[0]]
    groups: list[list[tuple[Piece, tuple[int, int]]]] = []
    index = 0
    while index < len(sized):
        group = [sized[index]]
        head, (head_lines, head_chars) = sized[index]
        index += 1
        container = head.body_end > head.end
        # The group's totals, kept as it grows (summed anew per piece, a file
        # of 100,000 one-line headings took 18 million steps to pack).
        chars = head_chars
        all_tiny = head_lines <= TINY_LINES
        # The scope every member shares while all are short definitions, else None.
        short_scope = _scope(head) if head_chars <= SHORT_CHARS else None
        while index < len(sized):
            piece, (piece_lines, piece_chars) = sized[index]
            if chars + piece_chars > PACK_CHARS:
                break
            inside = container and piece.start <= head.body_end
            if not inside and piece.body_end > piece.end:
                # Another container's header leads a group of its own (rule
                # 1): joined to what comes before, its members fell into the
                # next group and its hit was a lone header.
                break
            tiny_run = all_tiny and piece_lines <= TINY_LINES
            scope = _scope(piece)
            short_run = piece_chars <= SHORT_CHARS and scope is not None and short_scope == scope
            if not (inside or tiny_run or short_run):
                break
            group.append(sized[index])
            index += 1
            chars += piece_chars
            all_tiny = all_tiny and piece_lines <= TINY_LINES
            if not (piece_chars <= SHORT_CHARS and scope == short_scope):
                short_scope = None
        groups.append(group)
    merged = _absorb_tiny(lines, groups)
    return [_joined([piece for piece, _ in group]) for group in merged]


def _scope(piece: Piece) -> str | None:
    """The container a definition belongs to ("" at the top level); None for
    residue and text, which are never a short definition's sibling."""
    if not piece.symbol or piece.symbol_kind in ("module", "window", "section"):
        return None
    return piece.symbol.rpartition(".")[0]


def _absorb_tiny(lines: list[str], groups: list[list]) -> list[list]:
    """Rule 4: a group that is still one tiny piece joins a neighbour."""
    out: list[list] = []
    index = 0
    while index < len(groups):
        group = groups[index]
        lines_, chars = _group_size(lines, group)
        if lines_ <= TINY_LINES or (chars <= TINY_CHARS and not any(piece.symbol for piece, _ in group)):
            # A header (a container's, a heading's) introduces what follows it.
            head = group[0][0]
            leads = head.body_end > head.end or head.symbol_kind == "section"
            after = groups[index + 1] if index + 1 < len(groups) else None
            # A header with nothing after it (a small module type closing the file) joins what is before.
            before = out[-1] if out and (not leads or after is None) else None
            # A header joins what it introduces whatever the size (a long
            # first member is split later, the header staying with its start).
            neighbours = [g for g in (before, after) if g is not None]
            options = [g for g in neighbours
                       if _group_size(lines, g)[1] + chars <= PACK_CHARS or (leads and g is after)]
            # Between two long neighbours (a macro's opening line between two
            # large definitions) a tiny piece still joins one: a 1-2-line
            # chunk is never worth a hit of its own.
            options = options or neighbours
            if options:
                target = min(options, key=lambda g: _group_size(lines, g)[1])
                if target is before:
                    before.extend(group)
                else:
                    groups[index + 1] = group + after
                index += 1
                continue
        out.append(group)
        index += 1
    return out


def _group_size(lines: list[str], group: list) -> tuple[int, int]:
    """(lines from the first non-blank to the last, characters) of a group."""
    trimmed = trim_blank_edges(lines, group[0][0].start, group[-1][0].end)
    count = trimmed[1] - trimmed[0] + 1 if trimmed else 0
    return count, sum(size[1] for _, size in group)


def _size(lines: list[str], piece: Piece) -> tuple[int, int]:
    """(non-blank-edged line count, characters) of a piece; (0, 0) if blank."""
    trimmed = trim_blank_edges(lines, piece.start, piece.end)
    if trimmed is None:
        return 0, 0
    start, end = trimmed
    return end - start + 1, sum(len(line) + 1 for line in lines[start:end + 1])


def _joined(pieces: list[Piece]) -> Piece:
    """One piece for a group: named after its first definition (a container
    first, since its header leads its group), or its largest one."""
    if len(pieces) == 1:
        return pieces[0]
    named = [piece for piece in pieces if piece.symbol]
    lead = None
    if named:
        lead = named[0] if named[0].body_end > named[0].end or named[0] is pieces[0] \
            else max(named, key=lambda piece: piece.end - piece.start)
    names = tuple(name for piece in pieces for name in (piece.names or ((piece.symbol,) if piece.symbol else ())))
    return Piece(pieces[0].start, pieces[-1].end, lead.symbol if lead else None,
                 lead.symbol_kind if lead else pieces[0].symbol_kind, pieces[-1].end, names)
