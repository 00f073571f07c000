"""Split a file into retrievable chunks.

* Code in a tree-sitter language: one chunk per definition (function, method,
  class, struct, …) with a qualified symbol name, plus "module" chunks for the
  lines no definition covers. A class-like container's own chunk is its header
  (first line through the line before its first member chunk); its members
  get their own chunks.
* Markdown: one chunk per heading section.
* Anything else: overlapping line windows.

Chunking never fails: unknown languages and failures of the parser itself
fall back to line windows, and syntax errors are worked around by re-parsing
from the next top-level line (see ``_symbol_spans``).

Lines are split on "\\n" only (the row model of tree-sitter), with one
trailing "\\r" dropped per line; ``split_lines`` is the reference, and every
chunk satisfies ``chunk.text == "\\n".join(split_lines(text)[start:end + 1])``.
Lines are 0-based and inclusive.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import NamedTuple

from tree_sitter import Node, Parser, Tree

from .imports import extract_imports
from .definition_table import TABLES, LanguageTable, classify as classify_by_table
from .languages import COMPONENT_LANGUAGES, chunk_kind_for_path, language_for_path, parse, parser_for, script_view
from .model import Chunk, ParsedFile, SymbolDef, content_hash

MAX_CHUNK_LINES = 150
OVERLAP_LINES = 20
WINDOW_LINES = 60
WINDOW_OVERLAP_LINES = 10
# Re-parsing after syntax errors stops once it has parsed this many times the
# file's size: a bound on the cost of badly broken (or misdetected) files.
REPARSE_BUDGET = 2


# Bytes a file's macro bodies may still be parsed again (_rust_macro_items);
# per thread, since files are chunked on several.
_reparse_budget = threading.local()


# What a file not in a programming language is read as: prose by its headings,
# anything else in line windows.
PLAIN_LANGUAGES = frozenset({"text", "markdown"})


def reads_definitions(language: str | None) -> bool:
    """Whether the chunker reads ``language``'s definitions (else: line windows)."""
    return language in _GRAMMARS or language in COMPONENT_LANGUAGES or language == "markdown"


def split_lines(text: str) -> list[str]:
    """The file's lines as the chunker numbers them: split on "\\n", one
    trailing "\\r" removed per line, no empty last line for a final newline."""
    lines = text.split("\n")
    if len(lines) > 1 and not lines[-1]:
        lines.pop()
    if "\r" in text:
        lines = [line[:-1] if line.endswith("\r") else line for line in lines]
    return lines


def chunk_file(path: str, text: str) -> ParsedFile:
    """Chunks, definitions and imports of one file, chunks packed to reading
    size (see ``_pack``). Never raises for any ``str`` input."""
    return _chunk(path, text, pack=True)


def definition_chunks(path: str, text: str) -> ParsedFile:
    """As ``chunk_file`` but unpacked: one chunk per definition (a container's
    header alone), per residue run, per Markdown section. What the reading of
    a file into definitions is, before packing; the tests' tables and the
    bench's before/after share of tiny chunks use it."""
    return _chunk(path, text, pack=False)


def _chunk(path: str, text: str, pack: bool) -> ParsedFile:
    lines = split_lines(text)
    _reparse_budget.left = REPARSE_BUDGET * len(text)
    kind = chunk_kind_for_path(path)
    language = language_for_path(path, text)
    finish = (lambda pieces: _pack(lines, pieces)) if pack else (lambda pieces: pieces)
    if language == "markdown":
        return ParsedFile(language, _build_chunks(lines, finish(_markdown_sections(lines)),
                                                  language, kind))
    # A component's definitions are its <script>'s, read on a copy of the
    # file with everything else blanked (rows kept).
    grammar_language, read_lines = (language, lines)
    if language in COMPONENT_LANGUAGES:
        grammar_language, script = script_view("\n".join(lines))
        read_lines = split_lines(script)
    if language is None or grammar_language not in _GRAMMARS:
        # No definitions table: line windows, still named by their language.
        named = language or "text"
        return ParsedFile(named, _window_chunks(lines, named, kind))
    try:
        source = "\n".join(read_lines).encode("utf-8", "replace")  # "replace": lone surrogates
        if grammar_language in TABLES:
            source += b"\n"  # indentation grammars (F#) end a declaration at a newline
        grammar = _GRAMMARS[grammar_language]
        spans, tree = _symbol_spans(grammar, parser_for(grammar_language), read_lines, source,
                                    parse(grammar_language, source, path))
        if tree.root_node.has_error and grammar_language in ("c", "cpp"):
            spans = _c_first_branch_spans(grammar, parser_for(grammar_language), lines, spans)
        imports = extract_imports(grammar_language, tree)
    except Exception:  # a grammar or binding failure must not cost the file its chunks
        return ParsedFile(language, _window_chunks(lines, language, kind))
    pieces = sorted([*spans, *_residue(lines, spans)], key=lambda piece: (piece.start, piece.end))
    symbols = [SymbolDef(span.symbol, span.symbol_kind, span.start, span.end,
                         content_hash("\n".join(lines[span.start:span.end + 1])),
                         span.line if span.line >= 0 else span.start, max(span.end, span.body_end))
               for span in spans if span.symbol]
    return ParsedFile(language, _build_chunks(lines, finish(pieces), language, kind), imports,
                      symbols)


class _Piece(NamedTuple):
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


def _build_chunks(lines: list[str], pieces: list[_Piece], language: str, kind: str) -> list[Chunk]:
    chunks = []
    for piece in pieces:
        trimmed = _trim_blank_edges(lines, piece.start, piece.end)
        if trimmed is None:
            continue
        names = piece.names or ((piece.symbol,) if piece.symbol else ())
        for start, end in _parts(*trimmed, MAX_CHUNK_LINES, OVERLAP_LINES):
            text = "\n".join(lines[start : end + 1])
            chunks.append(Chunk(piece.symbol, piece.symbol_kind, kind, language, start, end, text,
                                names=names))
    chunks.sort(key=lambda chunk: (chunk.start_line, chunk.end_line))
    return chunks


# --- Packing ------------------------------------------------------------------
#
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


def _pack(lines: list[str], pieces: list[_Piece]) -> list[_Piece]:
    """``pieces`` (sorted, disjoint) joined into reading-sized pieces:

    1. a container's header takes its members in order while they fit
       (a class with its fields and short methods reads as one);
    2. runs of tiny pieces (at most TINY_LINES lines) join each other;
    3. runs of short definitions (at most SHORT_CHARS each) of one scope
       join each other (an impl's ten three-line accessors read as one);
    4. a tiny piece still alone joins the smaller neighbour it fits with.
    """
    sized = [(piece, size) for piece in pieces if (size := _size(lines, piece))[0]]
    groups: list[list[tuple[_Piece, tuple[int, int]]]] = []
    index = 0
    while index < len(sized):
        group = [sized[index]]
        head = sized[index][0]
        index += 1
        container = head.body_end > head.end
        while index < len(sized):
            piece, (piece_lines, piece_chars) = sized[index]
            chars = sum(size[1] for _, size in group) + piece_chars
            if chars > PACK_CHARS:
                break
            inside = container and piece.start <= head.body_end
            tiny_run = all(size[0] <= TINY_LINES for _, size in group) and piece_lines <= TINY_LINES
            short_run = (piece_chars <= SHORT_CHARS and _scope(piece) is not None
                         and all(size[1] <= SHORT_CHARS and _scope(member) == _scope(piece)
                                 for member, size in group))
            if not (inside or tiny_run or short_run):
                break
            group.append(sized[index])
            index += 1
        groups.append(group)
    merged = _absorb_tiny(lines, groups)
    return [_joined([piece for piece, _ in group]) for group in merged]


def _scope(piece: _Piece) -> str | None:
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
    trimmed = _trim_blank_edges(lines, group[0][0].start, group[-1][0].end)
    count = trimmed[1] - trimmed[0] + 1 if trimmed else 0
    return count, sum(size[1] for _, size in group)


def _size(lines: list[str], piece: _Piece) -> tuple[int, int]:
    """(non-blank-edged line count, characters) of a piece; (0, 0) if blank."""
    trimmed = _trim_blank_edges(lines, piece.start, piece.end)
    if trimmed is None:
        return 0, 0
    start, end = trimmed
    return end - start + 1, sum(len(line) + 1 for line in lines[start:end + 1])


def _joined(pieces: list[_Piece]) -> _Piece:
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
    return _Piece(pieces[0].start, pieces[-1].end, lead.symbol if lead else None,
                  lead.symbol_kind if lead else pieces[0].symbol_kind, pieces[-1].end, names)


def _window_chunks(lines: list[str], language: str, kind: str) -> list[Chunk]:
    chunks: list[Chunk] = []
    for window_start, window_end in _parts(0, len(lines) - 1, WINDOW_LINES, WINDOW_OVERLAP_LINES):
        trimmed = _trim_blank_edges(lines, window_start, window_end)
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


def _trim_blank_edges(lines: list[str], start: int, end: int) -> tuple[int, int] | None:
    while start <= end and not lines[start].strip():
        start += 1
    while end >= start and not lines[end].strip():
        end -= 1
    return (start, end) if start <= end else None


# Lines that only close something (`}`, `});`, Ruby's `end`): a run of them
# left between definitions is not worth a chunk of its own.
_CLOSING_LINE = re.compile(r"[\s)\]};,]*(?:end)?[\s;]*")


def _residue(lines: list[str], spans: list[_Piece]) -> list[_Piece]:
    """Module chunks: maximal runs of lines outside every symbol span."""
    runs = []
    next_row = 0
    for span in sorted(spans, key=lambda span: span.start):
        if span.start > next_row:
            runs.append((next_row, span.start - 1))
        next_row = max(next_row, span.end + 1)
    if next_row < len(lines):
        runs.append((next_row, len(lines) - 1))
    return [
        _Piece(start, end, None, "module")
        for start, end in runs
        if any(not _CLOSING_LINE.fullmatch(line) for line in lines[start : end + 1])
    ]


# --- Markdown ---------------------------------------------------------------

_ATX_HEADING = re.compile(r" {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*")
_SETEXT_UNDERLINE = re.compile(r" {0,3}(=+|-+)[ \t]*")
# Markup inside a heading, reduced to the words a reader sees: an image's
# alt text, a link's text, no tags. A README's `# <img alt="chi" src=...>`
# would otherwise title every section with a URL, and the symbol column
# (weighted 32 in BM25) would match the URL's words.
_HEADING_MARKUP = (
    (re.compile(r"<img\b[^>]*?\balt\s*=\s*[\"']([^\"']*)[\"'][^>]*>", re.IGNORECASE), r" \1 "),
    (re.compile(r"<[^>]*>"), " "),
    (re.compile(r"!\[([^\]]*)\]\([^)]*\)"), r"\1"),
    (re.compile(r"\[([^\]]*)\]\([^)]*\)"), r"\1"),
)


def _heading_text(title: str) -> str:
    for pattern, replacement in _HEADING_MARKUP:
        title = pattern.sub(replacement, title)
    return " ".join(title.split())
_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})")
# Lines that open a block other than a paragraph, so cannot be setext heading text.
_NOT_PARAGRAPH = re.compile(r" {4}| {0,3}(?:[>#|<]|[-*+](?:[ \t]|$)|\d{1,9}[.)](?:[ \t]|$)|(?:[-*_][ \t]*){3,}$)")


def _markdown_sections(lines: list[str]) -> list[_Piece]:
    headings = _markdown_headings(lines)
    pieces = []
    if not headings or headings[0][0] > 0:
        preamble_end = headings[0][0] - 1 if headings else len(lines) - 1
        pieces.append(_Piece(0, preamble_end, None, "section"))
    path: list[tuple[int, str]] = []  # (level, title) of the enclosing headings
    for index, (row, level, title) in enumerate(headings):
        while path and path[-1][0] >= level:
            path.pop()
        path.append((level, title))
        end = headings[index + 1][0] - 1 if index + 1 < len(headings) else len(lines) - 1
        symbol = " > ".join(title for _, title in path if title) or None
        pieces.append(_Piece(row, end, symbol, "section"))
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


# --- Definitions ------------------------------------------------------------


class _Decl(NamedTuple):
    """What a syntax node defines."""

    kind: str  # symbol_kind; "function" becomes "method" directly inside a type
    name: tuple[str, ...]  # relative to the enclosing scope; C++ `A::f` is (A, f)
    members: Node | None = None  # body of a container whose members get their own chunks
    is_type: bool = True  # functions directly inside the container are methods


@dataclass(frozen=True)
class _Grammar:
    classify: Callable[[Node], _Decl | None]
    # Nodes attached to the definition right below them: comments, decorators, attributes.
    leading: frozenset[str]
    # Non-definitions whose children are walked as if they were siblings
    # (preprocessor conditionals, `if TYPE_CHECKING:` blocks, extern "C" {}).
    transparent: frozenset[str] = frozenset()
    # Nodes that finish the definition before them (Dart: a body after its signature).
    continued_by: frozenset[str] = frozenset()
    # Consecutive clauses of one function are one definition (Haskell, Erlang, Elixir).
    joins_clauses: bool = False


def _symbol_spans(grammar: _Grammar, parser: Parser, lines: list[str], source: bytes,
                  tree: Tree) -> tuple[list[_Piece], Tree]:
    """Symbol spans of the file and its parse ``tree`` (of ``source``).

    tree-sitter recovers from most syntax errors locally, but an unbalanced
    bracket makes one broken node swallow the definitions after it. When that
    happens (see ``_swallowed_row``), only the spans ending before the first
    swallowed top-level line are kept and parsing restarts there.
    """
    spans: list[_Piece] = []
    root = tree.root_node
    offset = 0  # row of `lines` where the current tree's row 0 is
    budget = REPARSE_BUDGET * len(source)
    while True:
        found: list[_Piece] = []
        _collect(grammar, root.named_children, (), False, found)
        if offset:
            found = [piece._replace(start=piece.start + offset, end=piece.end + offset,
                                    body_end=piece.body_end + offset if piece.body_end >= 0 else -1,
                                    line=piece.line + offset if piece.line >= 0 else -1)
                     for piece in found]
        restart = _swallowed_row(grammar, root.children, lines, offset) if root.has_error else None
        rest = "\n".join(lines[restart:]).encode("utf-8", "replace") if restart is not None else b""
        if restart is None or len(rest) > budget:
            spans.extend(found)
            return spans, tree
        spans.extend(span for span in found if span.end < restart)
        budget -= len(rest)
        offset = restart
        root = parser.parse(rest).root_node


_PREPROC_CONDITIONAL = re.compile(r"\s*#\s*(if|ifdef|ifndef|elif|elifdef|elifndef|else|endif)\b")


def _c_first_branch_spans(grammar: _Grammar, parser: Parser, lines: list[str],
                          spans: list[_Piece]) -> list[_Piece]:
    """C code often splits a statement across `#ifdef` branches (`if(a) {`
    in one, `if(b) {` in the other, one `}`), which tree-sitter cannot
    parse: the function around it became residue (curl's `bindlocal`, 260
    lines). The file is parsed again as the preprocessor would see it with
    every condition's first branch taken (the directives and the other
    branches blanked, rows kept), and the reading that finds more lines
    inside definitions wins."""
    kept: list[str] = []
    skipping: list[bool] = []  # per open conditional: is the current branch blanked?
    for line in lines:
        match = _PREPROC_CONDITIONAL.match(line)
        directive = match.group(1) if match else None
        if directive in ("if", "ifdef", "ifndef"):
            skipping.append(False)
        elif directive in ("elif", "elifdef", "elifndef", "else") and skipping:
            skipping[-1] = True
        elif directive == "endif" and skipping:
            skipping.pop()
        blank = directive is not None or any(skipping)
        kept.append("" if blank else line)
    source = "\n".join(kept).encode("utf-8", "replace")
    alternative, _ = _symbol_spans(grammar, parser, kept, source, parser.parse(source))

    def covered(pieces: list[_Piece]) -> int:
        return len({row for piece in pieces for row in range(piece.start, max(piece.end, piece.body_end) + 1)})
    return alternative if covered(alternative) > covered(spans) else spans


def _swallowed_row(grammar: _Grammar, nodes: list[Node], lines: list[str], offset: int) -> int | None:
    """The first top-level line (one starting in column 0) inside a broken
    node, counting from the node's first error.

    Include guards, `extern "C"` and namespaces legitimately hold column-0
    lines, so their children are checked instead of them.
    """
    for node in nodes:
        if not node.has_error:
            continue
        if node.type in grammar.transparent:
            swallowed = _swallowed_row(grammar, node.children, lines, offset)
        elif (decl := grammar.classify(node)) is not None and decl.members is not None and not decl.is_type:
            swallowed = _swallowed_row(grammar, decl.members.children, lines, offset)
        else:
            first_inner_row = offset + max(_first_error_row(node), node.start_point.row + 1)
            swallowed = _next_top_level_row(lines, first_inner_row)
            if swallowed is not None and offset + _last_row(node) < swallowed:
                swallowed = None
        if swallowed is not None:
            return swallowed
    return None


def _first_error_row(node: Node) -> int:
    while True:
        erroneous = next((child for child in node.children if child.has_error), None)
        if erroneous is None:
            return node.start_point.row
        node = erroneous


def _next_top_level_row(lines: list[str], first: int) -> int | None:
    for row in range(first, len(lines)):
        line = lines[row]
        if line and not line[0].isspace() and line[0] not in ")]}":
            return row
    return None


def _last_row(node: Node) -> int:
    # A node that ends with its line's newline ends at column 0 of the next row.
    end = node.end_point
    if end.column == 0 and end.row > node.start_point.row:
        return end.row - 1
    return end.row


def _collect(
    grammar: _Grammar,
    nodes: list[Node],
    scope: tuple[str, ...],
    in_type: bool,
    spans: list[_Piece],
    leading_start: int = -1,
    leading_end: int = -1,
) -> None:
    """Append the symbol spans defined by ``nodes`` (siblings) to ``spans``.

    ``leading_start``..``leading_end`` are the rows of the comments and
    attributes right above ``nodes[0]``, when they are its parent's siblings.
    """
    previous_end = -1  # last row of the previous sibling that is not leading
    for index, node in enumerate(nodes):
        start = node.start_point.row
        end = _last_row(node)
        if index + 1 < len(nodes) and nodes[index + 1].type in grammar.continued_by:
            end = max(end, _last_row(nodes[index + 1]))
        if node.type in grammar.leading:
            if leading_start >= 0 and start <= leading_end + 1:
                leading_end = end
            elif start > previous_end:
                leading_start, leading_end = start, end
            else:  # a trailing comment on the previous sibling's last line
                leading_start = -1
            continue
        decl = grammar.classify(node)
        if decl is not None:
            first = leading_start if leading_start >= 0 and leading_end >= start - 1 else start
            name = (*scope, *decl.name)
            symbol = ".".join(name)
            kind = "method" if decl.kind == "function" and in_type else decl.kind
            if decl.members is None:
                clause_of = spans[-1] if grammar.joins_clauses and spans else None
                if clause_of is not None and (clause_of.symbol, clause_of.symbol_kind) == (symbol, kind) \
                        and clause_of.body_end < 0 and clause_of.end < first:
                    spans[-1] = clause_of._replace(end=end)
                else:
                    spans.append(_Piece(first, end, symbol, kind, line=_name_row(node, decl.name)))
            else:
                members: list[_Piece] = []
                _collect(grammar, decl.members.named_children, name, decl.is_type, members)
                header_end = min(member.start for member in members) - 1 if members else end
                if symbol:  # an anonymous holder (`module.exports = {…}`) leaves its lines to residue
                    spans.append(_Piece(first, max(first, header_end), symbol, kind, end,
                                        line=_name_row(node, decl.name)))
                spans.extend(members)
        elif node.type in grammar.transparent or node.is_error:
            _collect(grammar, node.named_children, scope, in_type, spans, leading_start, leading_end)
        previous_end = end
        leading_start = -1


# Subtrees that come before a definition's name without being it: Python and
# TypeScript decorators, Java and Kotlin annotations, Rust and C# attributes.
_BEFORE_NAME = ("decorator", "annotation", "attribute", "comment")
# A definition's name is found among its first this many nodes (pre-order).
_NAME_SEARCH_NODES = 200


def _name_row(node: Node, name: tuple[str, ...]) -> int:
    """The row of the definition's name in ``node`` (its first occurrence in
    pre-order outside decorators, annotations, attributes and comments):
    what a pointer to the definition names, not the decorator or comment its
    range starts with. The node's first row when the name is not found
    (names made up by the chunker, such as a macro's)."""
    wanted = name[-1].encode() if name and name[-1] else None
    stack = [node]
    seen = 0
    while wanted is not None and stack and seen < _NAME_SEARCH_NODES:
        current = stack.pop()
        seen += 1
        if any(word in current.type for word in _BEFORE_NAME):
            continue
        if current.child_count == 0 or current.type.endswith(("identifier", "name")):
            if current.text == wanted:
                return current.start_point.row
            if current.child_count == 0:
                continue
        stack.extend(reversed(current.children))
    return node.start_point.row


def _text(node: Node | None) -> str:
    return (node.text or b"").decode("utf-8", "replace") if node is not None else ""


def _named(node: Node, kind: str, members: Node | None = None, is_type: bool = True) -> _Decl | None:
    name = _text(node.child_by_field_name("name"))
    return _Decl(kind, (name,), members, is_type) if name else None


def _container(node: Node, kind: str, is_type: bool = True) -> _Decl | None:
    return _named(node, kind, node.child_by_field_name("body"), is_type)


# Python


def _python_decl(node: Node) -> _Decl | None:
    node_type = node.type
    if node_type == "function_definition":
        return _named(node, "function")
    if node_type == "class_definition":
        return _container(node, "class")
    if node_type == "decorated_definition":
        definition = node.child_by_field_name("definition")
        return _python_decl(definition) if definition is not None else None
    if node_type == "type_alias_statement":  # `type JsonValue = …` (3.12)
        name = node.child_by_field_name("left")
        return _Decl("type", (_text(name),)) if name is not None and _text(name).isidentifier() else None
    if node_type == "assignment":
        return _python_type_assignment(node)
    if node_type == "expression_statement" and node.named_child_count == 1:  # older grammars wrap it
        return _python_type_assignment(node.named_child(0))
    return None


# Calls that make a type out of an assignment: `Point = namedtuple(…)`,
# `UserId = NewType(…)`, `Color = Enum("Color", …)`. Not `T = TypeVar("T")`:
# a type parameter is not what anyone searches for, and one at the top of a
# module only cut its residue in two.
_PYTHON_TYPE_FACTORIES = {"namedtuple": "class", "NamedTuple": "class", "TypedDict": "class",
                          "Enum": "enum", "IntEnum": "enum", "StrEnum": "enum", "Flag": "enum",
                          "IntFlag": "enum", "NewType": "type", "TypeAliasType": "type"}


def _python_type_assignment(node: Node) -> _Decl | None:
    """A module's type made by an assignment: annotated `TypeAlias`, or
    built by one of ``_PYTHON_TYPE_FACTORIES`` (pydantic's `JsonValue:
    TypeAlias = …`, a `namedtuple`): code that names the type asks for it."""
    if node.type != "assignment":
        return None
    left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
    if left is None or left.type != "identifier":
        return None
    annotation = node.child_by_field_name("type")
    if annotation is not None and _text(annotation).rsplit(".", 1)[-1] == "TypeAlias":
        return _Decl("type", (_text(left),))
    if right is not None and right.type == "call":
        factory = _text(right.child_by_field_name("function")).rsplit(".", 1)[-1]
        if factory in _PYTHON_TYPE_FACTORIES:
            return _Decl(_PYTHON_TYPE_FACTORIES[factory], (_text(left),))
    return None


# JavaScript / TypeScript

_JS_FUNCTIONS = frozenset(
    {
        "function_declaration",
        "generator_function_declaration",
        "function_signature",
        "method_definition",
        "method_signature",
        "abstract_method_signature",
    }
)
_JS_FUNCTION_VALUES = frozenset({"arrow_function", "function_expression", "function", "generator_function"})
_JS_LEAF_TYPES = {"interface_declaration": "interface", "type_alias_declaration": "type", "enum_declaration": "enum"}


def _js_decl(node: Node) -> _Decl | None:
    node_type = node.type
    if node_type in _JS_FUNCTIONS:
        return _named(node, "function")
    if node_type in ("class_declaration", "abstract_class_declaration"):
        return _container(node, "class")
    if node_type in _JS_LEAF_TYPES:
        return _named(node, _JS_LEAF_TYPES[node_type])
    if node_type in ("lexical_declaration", "variable_declaration"):
        return _js_variable_decl(node)
    if node_type in ("public_field_definition", "field_definition"):
        # Class fields holding arrow functions are methods in all but syntax.
        value = node.child_by_field_name("value")
        name = node.child_by_field_name("name") or node.child_by_field_name("property")
        if value is not None and value.type in _JS_FUNCTION_VALUES and name is not None:
            return _Decl("function", (_text(name),))
        return None
    if node_type == "export_statement":
        declaration = node.child_by_field_name("declaration")
        if declaration is not None:
            found = _js_decl(declaration)
            if found is None and declaration.type in ("lexical_declaration", "variable_declaration"):
                found = _js_exported_constant(declaration)
            return found
        value = node.child_by_field_name("value")  # export default <expression>
        function = _js_unwrapped(value) if value is not None else None
        if function is not None and function.type in _JS_FUNCTION_VALUES:
            return _Decl("function", (_text(function.child_by_field_name("name")) or "default",))
        if value is not None and value.type == "class":
            return _Decl("class", (_text(value.child_by_field_name("name")) or "default",), value.child_by_field_name("body"))
        members = _js_default_object(value) if value is not None else None
        # `export default { setup() {…} }` (vitest's environments): like
        # `module.exports = {…}`, its functions are the module's own.
        return _Decl("namespace", (), members, is_type=False) if members is not None else None
    if node_type in ("expression_statement", "ambient_declaration"):
        # `namespace X {}` parses as an expression; `declare …` wraps a declaration.
        inner = node.named_child(0)
        return _js_decl(inner) if inner is not None else None
    if node_type == "assignment_expression":
        return _js_assignment_decl(node)
    if node_type == "pair":  # `{ key: function () {…} }`, `{ key: () => … }`, a member of an object below
        key, value = node.child_by_field_name("key"), node.child_by_field_name("value")
        name = _text(key).strip("'\"`") if key is not None else ""
        if not name or value is None:
            return None
        if value.type in _JS_FUNCTION_VALUES:
            return _Decl("function", (name,))
        # `methods: { toggle() {…} }` (a Vue component's options): an object of functions.
        if value.type == "object" and any(_js_decl(member) is not None for member in value.named_children):
            return _Decl("object", (name,), value, is_type=False)
        return None
    if node_type in ("internal_module", "module"):
        name = _text(node.child_by_field_name("name")).strip("'\"")
        body = node.child_by_field_name("body")
        return _Decl("namespace", (name,), body, is_type=False) if name else None
    return None


# CommonJS exports name nothing of their own: `module.exports.parse = …` defines `parse`.
_JS_EXPORT_PREFIXES = (("module", "exports"), ("exports",))


def _js_default_object(value: Node) -> Node | None:
    """The object literal an `export default` exports, through the type
    syntax around it: `<Environment>{…}`, `{…} satisfies T`, `({…} as T)`."""
    for _ in range(3):
        if value.type == "object":
            return value
        if value.type == "type_assertion":
            inner = [child for child in value.named_children if child.type != "type_arguments"]
        elif value.type in ("parenthesized_expression", "as_expression", "satisfies_expression"):
            inner = value.named_children[:1]
        else:
            return None
        if not inner:
            return None
        value = inner[0]
    return value if value.type == "object" else None


def _js_object_literal(value: Node) -> Node | None:
    """The object of `{…}` or `Object.freeze({…})` (a namespace of functions)."""
    if value.type == "object":
        return value
    if value.type == "call_expression" and _text(value.child_by_field_name("function")) == "Object.freeze":
        arguments = value.child_by_field_name("arguments")
        first = arguments.named_child(0) if arguments is not None and arguments.named_child_count else None
        return first if first is not None and first.type == "object" else None
    return None


def _js_target_parts(target: Node) -> tuple[str, ...]:
    """An assignment target's name, `prototype` and the CommonJS export
    prefix left out: `module.exports.parse` -> (parse,), `exports` -> ()."""
    parts = tuple(part for part in _text(target).split(".") if part != "prototype")
    for prefix in _JS_EXPORT_PREFIXES:
        if parts[:len(prefix)] == prefix:
            return parts[len(prefix):]
    return parts


def _js_assignment_decl(node: Node) -> _Decl | None:
    """CommonJS and prototype style: `Router.prototype.use = function use(…) {…}`
    defines `Router.use`, `exports.parse = (…) => …` defines `parse`, and
    `module.exports = {…}` holds functions as an object's members. A chained
    `res.header = res.set = function header(…)` (express's aliases) is named
    by its first target, an export by the first target that names something
    (`exports = module.exports = internals.Server = class {…}`, hapi's style,
    defines `internals.Server`)."""
    left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
    targets = [left]
    while right is not None and right.type == "assignment_expression":
        targets.append(right.child_by_field_name("left"))
        right = right.child_by_field_name("right")
    if right is None or any(t is None or t.type not in ("member_expression", "identifier") for t in targets):
        return None
    named = [_js_target_parts(target) for target in targets]
    parts = next((p for p in named if p), ())
    if not parts and right.type in ("class", *_JS_FUNCTION_VALUES):
        # `module.exports = class ConfigCommentParser {…}`: named by itself.
        name = _text(right.child_by_field_name("name"))
        if not name:
            return None
        if right.type == "class":
            return _Decl("class", (name,), right.child_by_field_name("body"))
        return _Decl("function", (name,))
    if not parts or not all(part.isidentifier() or part.startswith("$") for part in parts):
        members = _js_object_literal(right)
        # `module.exports = {…}`: its functions are the module's own.
        return _Decl("namespace", (), members, is_type=False) if members is not None and not parts else None
    if right.type in _JS_FUNCTION_VALUES:
        return _Decl("function", parts)
    if right.type == "class":
        return _Decl("class", parts, right.child_by_field_name("body"))
    members = _js_object_literal(right)
    return _Decl("object", parts, members) if members is not None else None


def _js_unwrapped(value: Node, depth: int = 3) -> Node:
    """The function a value wraps, or the value: `supported && function http(…) {…}`
    (axios's adapters), `(async (config) => {…})`, `memo((props) => …)`,
    `$constructor("Name", (inst, def) => {…})` (zod's schemas)."""
    while depth > 0 and value.type not in _JS_FUNCTION_VALUES:
        depth -= 1
        if value.type in ("parenthesized_expression", "binary_expression", "as_expression",
                          "satisfies_expression"):
            candidates = [value.named_children[-1]] if value.named_children else []
        elif value.type == "call_expression":
            arguments = value.child_by_field_name("arguments")
            candidates = [a for a in (arguments.named_children if arguments is not None else [])
                          if a.type in _JS_FUNCTION_VALUES or a.type == "parenthesized_expression"][-1:]
        else:
            candidates = []
        if not candidates:
            return value
        value = candidates[0]
    return value


def _js_variable_decl(node: Node) -> _Decl | None:
    """`const f = () => …` is a function, `const C = class {…}` a class,
    `const fixer = Object.freeze({ remove() {…} })` an object of methods."""
    for declarator in node.named_children:
        if declarator.type != "variable_declarator":
            continue
        name = declarator.child_by_field_name("name")
        value = declarator.child_by_field_name("value")
        if name is None or value is None or name.type != "identifier":
            continue
        if _js_unwrapped(value).type in _JS_FUNCTION_VALUES:
            return _Decl("function", (_text(name),))
        if value.type == "class":
            return _Decl("class", (_text(name),), value.child_by_field_name("body"))
        members = _js_object_literal(value)
        if members is not None and any(_js_decl(member) is not None for member in members.named_children):
            return _Decl("object", (_text(name),), members)
    return None


# Values an exported constant is built from: a factory's result
# (`export const safeParse = _safeParse(ZodRealError)`, mobx's
# `export const action = createActionFactory(false)`), an alias
# (`export const router = t.router`), an instance (`new AsyncScheduler(…)`).
_JS_BUILT_VALUES = frozenset({"call_expression", "member_expression", "new_expression", "identifier",
                              "as_expression", "satisfies_expression", "await_expression"})


def _js_exported_constant(node: Node) -> _Decl | None:
    """`export const NAME = <call, alias or instance>`: the module's API
    names it, so a query for NAME should find this line. Only exported ones:
    a module's private `const x = require('y')` names an import, not a
    definition. With a function type annotation it is a function."""
    for declarator in node.named_children:
        if declarator.type != "variable_declarator":
            continue
        name = declarator.child_by_field_name("name")
        value = declarator.child_by_field_name("value")
        if name is None or value is None or name.type != "identifier" or value.type not in _JS_BUILT_VALUES:
            continue
        annotation = declarator.child_by_field_name("type")
        annotated = annotation.named_child(0) if annotation is not None and annotation.named_child_count else None
        kind = "function" if annotated is not None and annotated.type == "function_type" else "constant"
        return _Decl(kind, (_text(name),))
    return None


# Go

_GO_TYPE_KINDS = {"struct_type": "struct", "interface_type": "interface"}


def _go_decl(node: Node) -> _Decl | None:
    node_type = node.type
    if node_type == "function_declaration":
        return _named(node, "function")
    if node_type == "method_declaration":
        name = _text(node.child_by_field_name("name"))
        receiver = _go_receiver_type(node.child_by_field_name("receiver"))
        return _Decl("method", (receiver, name) if receiver else (name,)) if name else None
    if node_type == "type_declaration":
        # A single `type X …` is one chunk with its keyword; the specs of a
        # grouped `type ( … )` are chunked one by one (see transparent).
        specs = [child for child in node.named_children if child.type in ("type_spec", "type_alias")]
        return _go_decl(specs[0]) if len(specs) == 1 else None
    if node_type in ("type_spec", "type_alias"):
        type_node = node.child_by_field_name("type")
        return _named(node, _GO_TYPE_KINDS.get(type_node.type if type_node is not None else "", "type"))
    return None


def _go_receiver_type(receiver: Node | None) -> str:
    """`(s *Server)` and `(g Gen[T])` -> Server, Gen."""
    parameter = receiver.named_child(0) if receiver is not None else None
    type_node = parameter.child_by_field_name("type") if parameter is not None else None
    while type_node is not None and type_node.type in ("pointer_type", "generic_type", "parenthesized_type"):
        type_node = type_node.child_by_field_name("type") or type_node.named_child(0)
    return _text(type_node)


# Rust

_RUST_LEAF_KINDS = {
    "function_item": "function",
    "function_signature_item": "function",
    "struct_item": "struct",
    "union_item": "union",
    "enum_item": "enum",
    "type_item": "type",
    "macro_definition": "macro",
    "const_item": "constant",
    "static_item": "constant",
}


def _rust_decl(node: Node) -> _Decl | None:
    node_type = node.type
    if node_type in _RUST_LEAF_KINDS:
        return _named(node, _RUST_LEAF_KINDS[node_type])
    if node_type == "trait_item":
        return _container(node, "trait")
    if node_type == "impl_item":
        type_name = _rust_type_name(node.child_by_field_name("type"))
        return _Decl("impl", (type_name,), node.child_by_field_name("body")) if type_name else None
    if node_type == "mod_item":
        return _container(node, "namespace", is_type=False)
    if node_type == "macro_invocation":
        return _rust_macro_items(node)
    return None


# An item keyword at the start of a line: the token tree may hold items. The
# line's indent is `[ \t]*`: `\s*` under MULTILINE runs across every blank line
# after each line start (quadratic in a body of blank lines).
_RUST_ITEM_LINE = re.compile(rb"^[ \t]*(?:pub(?:\([^)]*\))?\s+)?(?:async\s+|unsafe\s+|const\s+)*"
                             rb"(?:fn|struct|enum|trait|impl|mod|type|union)\b", re.MULTILINE)


def _rust_macro_items(node: Node) -> _Decl | None:
    """`cfg_rt! { pub fn spawn_blocking(…) {…} }`: crates gate whole groups of
    items behind such macros (tokio does it in most files), and tree-sitter
    leaves a macro's body an unparsed token tree, so those items were one
    anonymous residue chunk. The body is parsed again as items, padded so its
    rows are the file's, and its items are collected like a module's; a body
    that is not valid items (`bitflags!`, `thread_local!`) stays residue."""
    body = node.named_children[-1] if node.named_children else None
    if body is None or body.type != "token_tree" or body.end_point.row - body.start_point.row < 2:
        return None
    inner = (body.text or b"")[1:-1]
    if not _RUST_ITEM_LINE.search(inner):
        return None
    padded = b"\n" * body.start_point.row + b" " * (body.start_point.column + 1) + inner
    # Nested macros parse their bodies again and again: a file's re-parses
    # are capped at REPARSE_BUDGET times its size (800 nested levels took 1 s).
    budget = getattr(_reparse_budget, "left", 0)
    if len(padded) > budget:
        return None
    _reparse_budget.left = budget - len(padded)
    root = parser_for("rust").parse(padded).root_node
    if root.has_error:
        return None
    return _Decl("macro", (), root, is_type=False)


def _rust_type_name(type_node: Node | None) -> str:
    """`Point<T>`, `fmt::Point`, `&Point` -> Point."""
    while type_node is not None and type_node.type in ("generic_type", "scoped_type_identifier", "reference_type"):
        field = "name" if type_node.type == "scoped_type_identifier" else "type"
        type_node = type_node.child_by_field_name(field)
    return _text(type_node)


# Java

_JAVA_CONTAINER_KINDS = {
    "class_declaration": "class",
    "record_declaration": "class",
    "interface_declaration": "interface",
    "annotation_type_declaration": "interface",
    "enum_declaration": "enum",
}
_JAVA_FUNCTIONS = frozenset({"method_declaration", "constructor_declaration", "compact_constructor_declaration"})


def _java_decl(node: Node) -> _Decl | None:
    node_type = node.type
    if node_type in _JAVA_FUNCTIONS:
        return _named(node, "function")
    if node_type in _JAVA_CONTAINER_KINDS:
        return _container(node, _JAVA_CONTAINER_KINDS[node_type])
    return None


# C / C++

_C_SPECIFIER_KINDS = {
    "struct_specifier": "struct",
    "union_specifier": "union",
    "enum_specifier": "enum",
    "class_specifier": "class",
}


def _c_decl(node: Node) -> _Decl | None:
    return _c_family_decl(node, cpp=False)


def _cpp_decl(node: Node) -> _Decl | None:
    node_type = node.type
    if node_type == "namespace_definition":
        name = _text(node.child_by_field_name("name"))  # anonymous namespaces are transparent
        return _Decl("namespace", tuple(name.split("::")), node.child_by_field_name("body"), False) if name else None
    if node_type == "template_declaration":
        inner = node.named_children[-1] if node.named_child_count else None
        return _cpp_decl(inner) if inner is not None and inner.type != "template_parameter_list" else None
    return _c_family_decl(node, cpp=True)


def _c_family_decl(node: Node, cpp: bool) -> _Decl | None:
    node_type = node.type
    if node_type == "function_definition":
        name = _c_function_name(node.child_by_field_name("declarator"))
        if not name:
            return None
        return _Decl("method" if len(name) > 1 else "function", name)
    if node_type == "preproc_function_def":
        return _named(node, "macro")
    if node_type in _C_SPECIFIER_KINDS:
        return _c_type_decl(node, None, cpp)
    if node_type in ("type_definition", "declaration", "field_declaration"):
        # `typedef struct {…} Vec;`, `struct S {…} instance;`, a nested struct field.
        specifier = node.child_by_field_name("type")
        alias = _c_declared_name(node.child_by_field_name("declarator")) \
            if node_type == "type_definition" else None
        if specifier is not None and specifier.type in _C_SPECIFIER_KINDS:
            declared = _c_type_decl(specifier, alias, cpp)
            if declared is not None or alias is None:
                return declared
        if alias:  # `typedef long long mstime_t;`, `typedef void (*handler)(int);`
            return _Decl("typedef", (alias,))
    return None


def _c_declared_name(declarator: Node | None) -> str | None:
    """The name a declarator declares: `(*handler)(int)` -> handler, `name_t[16]` -> name_t."""
    while declarator is not None:
        if declarator.type in ("type_identifier", "identifier", "primitive_type"):
            return _text(declarator) or None
        inner = declarator.child_by_field_name("declarator")
        if inner is None and declarator.type == "parenthesized_declarator" and declarator.named_child_count:
            inner = declarator.named_children[0]
        declarator = inner
    return None


def _c_type_decl(specifier: Node, alias: str | None, cpp: bool) -> _Decl | None:
    body = specifier.child_by_field_name("body")
    if body is None:  # a forward declaration or a use, not a definition
        return None
    # A typedef's name first: it is the one the code writes (`robj`, not `redisObject`).
    name = alias or _text(specifier.child_by_field_name("name"))
    if not name:
        return None
    kind = _C_SPECIFIER_KINDS[specifier.type]
    has_members = cpp and kind != "enum"
    return _Decl(kind, tuple(name.split("::")), body if has_members else None)


def _c_function_name(declarator: Node | None) -> tuple[str, ...]:
    """`*foo(int)` -> (foo,); `Shape<T>::area() const` -> (Shape, area)."""
    while declarator is not None:
        inner = declarator.child_by_field_name("declarator")
        if inner is None:
            break
        declarator = inner
    return _cpp_name_parts(declarator)


def _cpp_name_parts(node: Node | None) -> tuple[str, ...]:
    """The components of a possibly qualified name, without template arguments."""
    if node is None:
        return ()
    if node.type == "qualified_identifier":
        return (*_cpp_name_parts(node.child_by_field_name("scope")), *_cpp_name_parts(node.child_by_field_name("name")))
    if node.type in ("template_type", "template_function"):
        return _cpp_name_parts(node.child_by_field_name("name"))
    name = "".join(_text(node).split())
    return (name,) if name else ()


# Ruby


def _ruby_decl(node: Node) -> _Decl | None:
    node_type = node.type
    if node_type in ("method", "singleton_method"):
        return _named(node, "function")
    if node_type in ("class", "module"):
        name = _text(node.child_by_field_name("name"))
        if not name:
            return None
        kind = "class" if node_type == "class" else "namespace"
        # Members are walked from the class node itself: a comment above the
        # first member is the class's child, not a sibling inside its body.
        return _Decl(kind, tuple(name.split("::")), node)
    return None


# PHP

_PHP_CONTAINER_KINDS = {
    "class_declaration": "class",
    "interface_declaration": "interface",
    "trait_declaration": "trait",
    "enum_declaration": "enum",
}


def _php_decl(node: Node) -> _Decl | None:
    node_type = node.type
    if node_type in ("function_definition", "method_declaration"):
        return _named(node, "function")
    if node_type in _PHP_CONTAINER_KINDS:
        return _container(node, _PHP_CONTAINER_KINDS[node_type])
    return None


_C_TRANSPARENT = frozenset(
    {"preproc_if", "preproc_ifdef", "preproc_else", "preproc_elif", "preproc_elifdef", "linkage_specification", "declaration_list"}
)
_JS_GRAMMAR = _Grammar(_js_decl, leading=frozenset({"comment", "decorator"}))

_GRAMMARS: dict[str, _Grammar] = {
    "python": _Grammar(
        _python_decl,
        leading=frozenset({"comment"}),
        transparent=frozenset(
            {"if_statement", "elif_clause", "else_clause", "try_statement", "except_clause", "finally_clause", "block"}
        ),
    ),
    "javascript": _JS_GRAMMAR,
    "typescript": _JS_GRAMMAR,
    "tsx": _JS_GRAMMAR,
    "go": _Grammar(_go_decl, leading=frozenset({"comment"}), transparent=frozenset({"type_declaration"})),
    "rust": _Grammar(_rust_decl, leading=frozenset({"line_comment", "block_comment", "attribute_item"})),
    "java": _Grammar(
        _java_decl, leading=frozenset({"line_comment", "block_comment"}), transparent=frozenset({"enum_body_declarations"})
    ),
    "c": _Grammar(_c_decl, leading=frozenset({"comment"}), transparent=_C_TRANSPARENT),
    "cpp": _Grammar(_cpp_decl, leading=frozenset({"comment"}), transparent=_C_TRANSPARENT | {"namespace_definition"}),
    "ruby": _Grammar(_ruby_decl, leading=frozenset({"comment"}), transparent=frozenset({"singleton_class", "body_statement"})),
    "php": _Grammar(
        _php_decl, leading=frozenset({"comment"}), transparent=frozenset({"namespace_definition", "compound_statement"})
    ),
}


def _table_grammar(table: LanguageTable, fallback: Callable[[Node], _Decl | None] | None = None) -> _Grammar:
    """A grammar read by its row of ``definition_table`` (``fallback`` for
    what the row leaves: Objective-C's C functions and structs)."""
    def classify(node: Node) -> _Decl | None:
        found = classify_by_table(table, node)
        if found is not None:
            return _Decl(*found)
        return fallback(node) if fallback is not None else None
    return _Grammar(classify, table.leading, table.transparent, table.continued_by, table.joins_clauses)


for _language, _table in TABLES.items():
    _GRAMMARS[_language] = _table_grammar(_table, _c_decl if _language == "objc" else None)
