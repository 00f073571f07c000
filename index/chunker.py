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
from the next top-level line (see ``chunking/spans.py``).

Lines are split on "\\n" only (the row model of tree-sitter), with one
trailing "\\r" dropped per line; a lone "\\r" is a "\\n" in the text already
(``discovery.decode_text``, ``Engine.set_buffer``), so these are the lines
an editor numbers. ``split_lines`` is the reference, and every
chunk satisfies ``chunk.text == "\\n".join(split_lines(text)[start:end + 1])``.
Lines are 0-based and inclusive.
"""

from __future__ import annotations

from .chunking.grammars import GRAMMARS
from .chunking.markdown import markdown_sections
from .chunking.packing import pack
from .chunking.pieces import build_chunks, residue, window_chunks
from .chunking.spans import REPARSE_BUDGET, REREADINGS, reparse_budget, reread_spans, symbol_spans
from .definition_table import TABLES
from .imports import extract_imports
from .languages import (COMPONENT_LANGUAGES, NOTEBOOK_LANGUAGE, ParseAbandoned, chunk_kind_for_path,
                        hazard, language_for_path, notebook_view, parse, parse_deadline, parse_view, parser_for,
                        script_view)
from .model import UNPARSED_DEADLINE, UNPARSED_HAZARD, ParsedFile, SymbolDef, content_hash

# What a file not in a programming language is read as: prose by its headings,
# anything else in line windows.
PLAIN_LANGUAGES = frozenset({"text", "markdown"})


def reads_definitions(language: str | None) -> bool:
    """Whether the chunker reads ``language``'s definitions (else: line windows)."""
    return (language in GRAMMARS or language in COMPONENT_LANGUAGES
            or language in (NOTEBOOK_LANGUAGE, "markdown"))


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
    size (see ``chunking/packing.py``). Never raises for any ``str`` input."""
    return _chunk(path, text, packed=True)


def definition_chunks(path: str, text: str) -> ParsedFile:
    """As ``chunk_file`` but unpacked: one chunk per definition (a container's
    header alone), per residue run, per Markdown section. What the reading of
    a file into definitions is, before packing; the tests' tables and the
    bench's before/after share of tiny chunks use it."""
    return _chunk(path, text, packed=False)


def window_file(path: str, text: str, unparsed: str = UNPARSED_HAZARD) -> ParsedFile:
    """``path``'s text as line windows, without parsing: what a file whose
    parse was abandoned, or crashed or hung the chunk worker, is read as."""
    language = language_for_path(path, text) or "text"
    lines = split_lines(notebook_view(text)[1] if language == NOTEBOOK_LANGUAGE else text)
    return ParsedFile(language, window_chunks(lines, language, chunk_kind_for_path(path)),
                      unparsed=unparsed)


def _chunk(path: str, text: str, packed: bool) -> ParsedFile:
    lines = split_lines(text)
    reparse_budget.left = REPARSE_BUDGET * len(text)
    kind = chunk_kind_for_path(path)
    language = language_for_path(path, text)
    finish = (lambda pieces: pack(lines, pieces)) if packed else (lambda pieces: pieces)
    if language == "markdown":
        return ParsedFile(language, build_chunks(lines, finish(markdown_sections(lines)),
                                                 language, kind))
    # A component's definitions are its <script>'s, read on a copy of the
    # file with everything else blanked (rows kept).
    grammar_language, read_lines = (language, lines)
    if language in COMPONENT_LANGUAGES:
        grammar_language, script = script_view("\n".join(lines))
        read_lines = split_lines(script)
    elif language == NOTEBOOK_LANGUAGE:
        # A notebook's rows are JSON: its chunks are the view's rows (the
        # cells' code and text), never its outputs.
        grammar_language, cells = notebook_view("\n".join(lines))
        lines = read_lines = split_lines(cells)
    if language is None or grammar_language not in GRAMMARS:
        # No definitions table: line windows, still named by their language.
        named = language or "text"
        return ParsedFile(named, window_chunks(lines, named, kind))
    known_hazard = hazard(text)
    if known_hazard is not None:
        return window_file(path, text, known_hazard)
    try:
        source = "\n".join(read_lines).encode("utf-8", "replace")  # "replace": lone surrogates
        if grammar_language in TABLES:
            source += b"\n"  # indentation grammars (F#) end a declaration at a newline
        grammar = GRAMMARS[grammar_language]
        with parse_deadline():  # one for the file's parses and re-parses together
            spans, tree = symbol_spans(grammar, parser_for(grammar_language), read_lines, source,
                                       parse(grammar_language, parse_view(grammar_language, source),
                                             path))
            if tree.root_node.has_error and grammar_language in REREADINGS:
                spans = reread_spans(grammar, parser_for(grammar_language), lines, spans,
                                     REREADINGS[grammar_language])
        imports = extract_imports(grammar_language, tree)
    except ParseAbandoned:
        return window_file(path, text, UNPARSED_DEADLINE)
    except Exception:  # a grammar or binding failure must not cost the file its chunks
        return ParsedFile(language, window_chunks(lines, language, kind))
    pieces = sorted([*spans, *residue(lines, spans)], key=lambda piece: (piece.start, piece.end))
    symbols = [SymbolDef(span.symbol, span.symbol_kind, span.start, span.end,
                         content_hash("\n".join(lines[span.start:span.end + 1])),
                         span.line if span.line >= 0 else span.start, max(span.end, span.body_end))
               for span in spans if span.symbol]
    return ParsedFile(language, build_chunks(lines, finish(pieces), language, kind), imports,
                      symbols)
