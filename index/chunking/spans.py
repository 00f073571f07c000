"""Definition spans of a parse tree: ``collect`` walks the top-level nodes
with a language's ``Grammar`` (what a node defines, which nodes lead or are
walked through), and ``symbol_spans`` re-parses from the next top-level line
when a syntax error swallowed the definitions after it. ``Decl`` and the
``named_decl`` helpers are what the per-language readers return."""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

from tree_sitter import Node, Parser, Tree

from ..languages import parse_source
from .pieces import Piece

# Re-parsing after syntax errors stops once it has parsed this many times the
# file's size: a bound on the cost of badly broken (or misdetected) files.
REPARSE_BUDGET = 2


# Bytes a file's macro bodies may still be parsed again (rust.py's
# _rust_macro_items); per thread, since files are chunked on several.
reparse_budget = threading.local()


class Decl(NamedTuple):
    """What a syntax node defines."""

    kind: str  # symbol_kind; "function" becomes "method" directly inside a type
    name: tuple[str, ...]  # relative to the enclosing scope; C++ `A::f` is (A, f)
    members: Node | None = None  # body of a container whose members get their own chunks
    is_type: bool = True  # functions directly inside the container are methods
    # A declaration only (a C prototype): not listed where the file defines the name.
    declaration: bool = False
    arity: int | None = None  # definition_table.Definition.arity
    scopes_rest: bool = False  # definition_table.Definition.scopes_rest


@dataclass(frozen=True)
class Grammar:
    classify: Callable[[Node], Decl | None]
    # Nodes attached to the definition right below them: comments, decorators, attributes.
    leading: frozenset[str]
    # Non-definitions whose children are walked as if they were siblings
    # (preprocessor conditionals, `if TYPE_CHECKING:` blocks, extern "C" {}).
    transparent: frozenset[str] = frozenset()
    # Nodes that finish the definition before them (Dart: a body after its signature).
    continued_by: frozenset[str] = frozenset()
    # Consecutive clauses of one function are one definition (Haskell, Erlang, Elixir).
    joins_clauses: bool = False
    # For a non-definition no node type says holds definitions (Elixir's
    # `if Code.ensure_loaded?(Jason) do defmodule … end`): the block whose
    # children are walked as if they were its siblings, or None.
    wrapped_block: Callable[[Node], Node | None] | None = None
    # Tokens that open and close a body as a pair of equal texts (SQL's `$$`
    # or `$body$` around a PL/pgSQL function): the lines between them are the
    # body's, in whatever column, so none of them is a swallowed top-level line.
    quoted_by: frozenset[str] = frozenset()
    # Openers of doc comments that document the definition right above them
    # when nothing separates the two and a blank line separates the comment
    # from what follows (odoc's rule: OCaml's `val x : t` then `(** … *)`).
    trailing_docs: tuple[bytes, ...] = ()


def symbol_spans(grammar: Grammar, parser: Parser, lines: list[str], source: bytes,
                 tree: Tree) -> tuple[list[Piece], Tree]:
    """Symbol spans of the file and its parse ``tree`` (of ``source``).

    tree-sitter recovers from most syntax errors locally, but an unbalanced
    bracket makes one broken node swallow the definitions after it. When that
    happens (see ``_swallowed_row``), only the spans ending before the first
    swallowed top-level line are kept and parsing restarts there.
    """
    spans: list[Piece] = []
    root = tree.root_node
    offset = 0  # row of `lines` where the current tree's row 0 is
    budget = REPARSE_BUDGET * len(source)
    next_top_level: list[int | None] | None = None  # made once, for a tree with errors
    while True:
        found: list[Piece] = []
        _collect(grammar, root.named_children, (), False, found)
        if offset:
            found = [piece._replace(start=piece.start + offset, end=piece.end + offset,
                                    body_end=piece.body_end + offset if piece.body_end >= 0 else -1,
                                    line=piece.line + offset if piece.line >= 0 else -1)
                     for piece in found]
        restart = None
        if root.has_error:
            next_top_level = next_top_level or _next_top_level_rows(lines)
            restart = _swallowed_row(grammar, root.children, next_top_level, offset)
        rest = "\n".join(lines[restart:]).encode("utf-8", "replace") if restart is not None else b""
        if restart is None or len(rest) > budget:
            spans.extend(found)
            return _without_declarations_defined(spans), tree
        spans.extend(span for span in found if span.end < restart)
        budget -= len(rest)
        offset = restart
        root = parse_source(parser, rest).root_node


def _without_declarations_defined(spans: list[Piece]) -> list[Piece]:
    """``spans`` less the declarations of a name the file also defines (a C
    forward declaration above its function): the definition is the one to list."""
    if not any(span.declaration for span in spans):
        return spans
    defined = {span.symbol for span in spans if not span.declaration}
    return [span for span in spans if not (span.declaration and span.symbol in defined)]


_PREPROC_CONDITIONAL = re.compile(r"\s*#\s*(if|ifdef|ifndef|elif|elifdef|elifndef|else|endif)\b")


def first_branch_lines(lines: list[str]) -> list[str]:
    """The file as the preprocessor sees it with every `#if`'s first branch
    taken: the directives and the other branches blanked, rows kept.

    C code often splits a statement across `#ifdef` branches (`if(a) {` in
    one, `if(b) {` in the other, one `}`), and C# a class's base list
    (`class Logger : ILogger` `#if FEATURE_X` `, IAsyncDisposable` `#endif`),
    which tree-sitter cannot parse: the function around it became residue
    (curl's `bindlocal`, 260 lines), the class and its methods invisible
    (Newtonsoft.Json's `JValue`, serilog's `Logger`)."""
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
    return kept


# Runs that a later part could share are possessive here and in _MACRO_LINE:
# giving spaces back one by one was quadratic in a long run of them.
_KOTLIN_CLASS_NAME_LINE = re.compile(r"\s*+(?:[\w@]++\s++)*(?:class|object)\s++\w++\s*+(?:<[^{}()]*>)?\s*$")
_KOTLIN_ANNOTATION_LINE = re.compile(r"\s*(?:@[\w.:]+(?:\([^()]*\))?\s*)+$")
_KOTLIN_CONSTRUCTOR_LINE = re.compile(r"\s*(?:(?:@[\w.:]+(?:\([^()]*\))?|[a-z]+)\s+)*constructor\s*\(")


def kotlin_constructor_lines(lines: list[str]) -> list[str]:
    """The file with each primary constructor moved up onto its class's line.

    ktfmt's style (Square's okhttp, okio, moshi, kotlinpoet) puts it below
    the class's name, `class Interceptor` / `@JvmOverloads` /
    `constructor(`, which the Kotlin grammar cannot parse: the class's
    whole body was lost. The lines from the name to `constructor(` are
    joined into the first, the rows they leave blank, so every later row
    stays where it was."""
    kept = list(lines)
    row = 0
    while row < len(kept):
        if _KOTLIN_CLASS_NAME_LINE.match(kept[row]):
            last = row + 1
            while last < len(kept) and _KOTLIN_ANNOTATION_LINE.match(kept[last]):
                last += 1
            if last < len(kept) and _KOTLIN_CONSTRUCTOR_LINE.match(kept[last]):
                kept[row] = " ".join([kept[row].rstrip(), *(line.strip() for line in kept[row + 1:last + 1])])
                kept[row + 1:last + 1] = [""] * (last - row)
                row = last
        row += 1
    return kept


# A line that is only a macro's use, no semicolon: `FMT_BEGIN_NAMESPACE`,
# `NLOHMANN_JSON_NAMESPACE_BEGIN`, `G_DEFINE_TYPE (Foo, foo, G_TYPE_OBJECT)`.
_MACRO_LINE = re.compile(r"\s*+[A-Z_][A-Z0-9_]{2,}+\s*+(?:\([^;{}]*\))?\s*$")


def preprocessed_lines(lines: list[str]) -> list[str]:
    """``first_branch_lines``, and the lines that only use a macro blanked.

    A macro that opens a namespace or decorates what follows (fmt's
    `FMT_BEGIN_NAMESPACE`, nlohmann/json's `NLOHMANN_JSON_NAMESPACE_BEGIN`)
    reads to tree-sitter as an unfinished declaration that swallows the
    definitions after it."""
    return ["" if _MACRO_LINE.match(line) else line for line in first_branch_lines(lines)]


# Another reading of a file whose parse failed, per language: its lines as
# that reading sees them, as many as the file's.
REREADINGS: dict[str, Callable[[list[str]], list[str]]] = {
    "c": preprocessed_lines, "cpp": preprocessed_lines, "objc": preprocessed_lines,
    "glsl": preprocessed_lines, "hlsl": preprocessed_lines,
    "csharp": first_branch_lines, "kotlin": kotlin_constructor_lines,
}


def reread_spans(grammar: Grammar, parser: Parser, lines: list[str], spans: list[Piece],
                 reread: Callable[[list[str]], list[str]]) -> list[Piece]:
    """``spans`` of a file whose parse failed, or those of its other reading
    (``reread``) when that finds more definitions (by name); on a tie, the
    one with more lines inside them."""
    kept = reread(lines)
    if kept == lines:
        return spans
    source = "\n".join(kept).encode("utf-8", "replace")
    alternative, _ = symbol_spans(grammar, parser, kept, source, parse_source(parser, source))

    def found(pieces: list[Piece]) -> tuple[int, int]:
        # Names, not pieces: the raw reading holds both branches' copies of a
        # function. A container's own rows are its header: a namespace whose
        # body did not parse must not count as covering the file.
        return (len({piece.symbol for piece in pieces}),
                len({row for piece in pieces for row in range(piece.start, piece.end + 1)}))
    return alternative if found(alternative) > found(spans) else spans


def _swallowed_row(grammar: Grammar, nodes: list[Node], next_top_level: list[int | None],
                   offset: int) -> int | None:
    """The first top-level line (one starting in column 0) inside a broken
    node, counting from the node's first error (``next_top_level``: from
    :func:`_next_top_level_rows`).

    Include guards, `extern "C"` and namespaces legitimately hold column-0
    lines, so their children are checked instead of them.
    """
    for node in nodes:
        if not node.has_error:
            continue
        if node.type in grammar.transparent:
            swallowed = _swallowed_row(grammar, node.children, next_top_level, offset)
        elif (decl := grammar.classify(node)) is not None and decl.members is not None and not decl.is_type:
            swallowed = _swallowed_row(grammar, decl.members.children, next_top_level, offset)
        else:
            first_inner_row = offset + max(_first_error_row(node), node.start_point.row + 1)
            swallowed = next_top_level[first_inner_row] if first_inner_row < len(next_top_level) else None
            while swallowed is not None and \
                    (close := _quoted_body_close(grammar, node, swallowed - offset)) is not None:
                after_close = offset + close + 1
                swallowed = next_top_level[after_close] if after_close < len(next_top_level) else None
            if swallowed is not None and offset + _last_row(node) < swallowed:
                swallowed = None
        if swallowed is not None:
            return swallowed
    return None


def _quoted_body_close(grammar: Grammar, node: Node, row: int) -> int | None:
    """The row of the closing token of a body inside ``node`` quoted by a
    pair of ``grammar.quoted_by`` tokens (SQL's `$$ … $$`) whose rows hold
    ``row``, or None. PL/pgSQL puts `BEGIN`, `END;` and the closing `$$` in
    column 0: an error in the body restarted the parse at them, and the
    function was lost or cut short."""
    if not grammar.quoted_by:
        return None
    current: Node | None = node
    while current is not None:
        opening: Node | None = None
        inner = None
        for child in current.children:
            if child.type in grammar.quoted_by and not child.is_missing:
                if opening is None:
                    opening = child
                elif child.text == opening.text:
                    if opening.start_point.row <= row <= child.start_point.row:
                        return child.start_point.row
                    opening = None
            elif child.child_count and child.start_point.row <= row <= child.end_point.row:
                inner = inner or child
        current = inner
    return None


def _first_error_row(node: Node) -> int:
    while True:
        erroneous = next((child for child in node.children if child.has_error), None)
        if erroneous is None:
            return node.start_point.row
        node = erroneous


# A line that closes a block with a keyword (Ruby's, Lua's, Julia's `end`,
# Erlang's `end.`, Pascal's `end;`, SQL's `END IF;`, Fortran's `end
# subroutine`): in column 0 it closes a top-level definition, as a `}` does,
# and starts none. Taken for a swallowed definition, it restarted the parse
# at the function's own `end`, and a function with any syntax error in it
# was dropped. Not `end = 5`, `end(…)`, `endpoint`.
_CLOSING_KEYWORD = re.compile(r"end(?![\w=]|\s*[=(\[])", re.IGNORECASE)


def _next_top_level_rows(lines: list[str]) -> list[int | None]:
    """For each row, the first top-level row at or after it (None: none).
    Once per file: scanning from each broken node was quadratic (a C file of
    33,000 indented lines, each its own broken node, took 36 s)."""
    rows: list[int | None] = [None] * len(lines)
    following = None
    for row in range(len(lines) - 1, -1, -1):
        line = lines[row]
        if line and not line[0].isspace() and line[0] not in ")]}" and not _CLOSING_KEYWORD.match(line):
            following = row
        rows[row] = following
    return rows


def _last_row(node: Node) -> int:
    # A node that ends with its line's newline ends at column 0 of the next row.
    end = node.end_point
    row = end.row - 1 if end.column == 0 and end.row > node.start_point.row else end.row
    # Layout grammars (Scala's indented bodies) end a node at the next token,
    # past the newlines and indentation after its own last token: its last
    # row is that token's.
    last = node
    while last.child_count:
        last = _last_child(last)
    return min(row, last.end_point.row) if last.end_byte > last.start_byte else row


def _last_child(node: Node) -> Node:
    """``node``'s last child (it has some) that is not a zero-width token (an
    automatic semicolon, a missing one)."""
    index = node.child_count - 1
    while index > 0 and node.child(index).start_byte == node.child(index).end_byte:
        index -= 1
    return node.child(index)


# A doc comment leads its definition across one blank line (commander's
# JSDoc, Javadoc, rustdoc, KDoc, OCaml, Haddock), where another comment
# does not (a section's heading, commented-out code); not at the file's
# first row, where a `/**` is a licence more often than a definition's doc.
_DOC_OPENERS = (b"/**", b"///", b"(**", b"-- |", b"{-|")


def _collect(
    grammar: Grammar,
    nodes: list[Node],
    scope: tuple[str, ...],
    in_type: bool,
    spans: list[Piece],
    leading_start: int = -1,
    leading_end: int = -1,
) -> None:
    """Append the symbol spans defined by ``nodes`` (siblings) to ``spans``.

    ``leading_start``..``leading_end`` are the rows of the comments and
    attributes right above ``nodes[0]``, when they are its parent's siblings.
    """
    previous_end = -1  # last row of the previous sibling that is not leading
    documented: int | None = None  # the index in ``spans`` of the previous sibling's definition (no members)
    leading_doc = False  # the leading run opens with a doc comment (_DOC_OPENERS)
    outer_scope = scope  # a statement namespace (Decl.scopes_rest) scopes the siblings after it
    for index, node in enumerate(nodes):
        start = node.start_point.row
        after = index + 1  # a Kotlin property's getter, then its setter
        while after < len(nodes) and nodes[after].type in grammar.continued_by:
            after += 1
        following = nodes[after] if after < len(nodes) else None
        end, closing = _closing_comments(grammar, node, following)
        for continued in nodes[index + 1:after]:
            continued_end, closing = _closing_comments(grammar, continued, following)
            end = max(end, continued_end)
        if node.type in grammar.leading:
            if documented is not None and start == spans[documented].end + 1 \
                    and (node.text or b"").lstrip().startswith(grammar.trailing_docs) \
                    and (following is None or following.start_point.row > end + 1):
                spans[documented] = spans[documented]._replace(end=end)
                previous_end, leading_start, documented = end, -1, None
                continue
            documented = None
            if leading_start >= 0 and start <= leading_end + 1:
                leading_end = end
            elif start > previous_end:
                leading_start, leading_end = start, end
                leading_doc = start > 0 and (node.text or b"").lstrip().startswith(_DOC_OPENERS)
            else:  # a trailing comment on the previous sibling's last line
                leading_start = -1
            continue
        documented = None
        decl = grammar.classify(node)
        if decl is not None:
            leads = leading_start >= 0 and (leading_end >= start - 1 or (leading_doc and leading_end == start - 2))
            first = leading_start if leads else start
            name = (*(outer_scope if decl.scopes_rest else scope), *decl.name)
            symbol = ".".join(name)
            kind = "method" if decl.kind == "function" and in_type else decl.kind
            if decl.members is None:
                clause_of = spans[-1] if grammar.joins_clauses and spans else None
                if clause_of is not None and (clause_of.symbol, clause_of.symbol_kind, clause_of.arity) \
                        == (symbol, kind, decl.arity) and clause_of.body_end < 0 and clause_of.end < first:
                    spans[-1] = clause_of._replace(end=end)
                else:
                    spans.append(Piece(first, end, symbol, kind, line=_name_row(node, decl.name),
                                       declaration=decl.declaration, arity=decl.arity))
                documented = len(spans) - 1
                if decl.scopes_rest:  # no members of its own: the siblings after it
                    scope = name
            else:
                inside = decl.members.named_children
                after_close: list[Node] = []
                if node.has_error and (close := _stray_close_row(grammar, node, decl.members)) is not None:
                    end = close
                    inside, after_close = ([child for child in inside if child.start_point.row <= close],
                                           [child for child in inside if child.start_point.row > close])
                members: list[Piece] = []
                _collect(grammar, [*_comments_before(grammar, decl.members, node), *inside],
                         name, decl.is_type, members)
                header_end = min(member.start for member in members) - 1 if members else end
                if symbol:  # an anonymous holder (`module.exports = {…}`) leaves its lines to residue
                    spans.append(Piece(first, max(first, header_end), symbol, kind, end,
                                       line=_name_row(node, decl.name)))
                spans.extend(members)
                _collect(grammar, after_close, scope, in_type, spans)
        elif node.type in grammar.transparent or node.is_error:
            _collect(grammar, node.named_children, scope, in_type, spans, leading_start, leading_end)
        elif grammar.wrapped_block is not None and (block := grammar.wrapped_block(node)) is not None:
            _collect(grammar, block.named_children, scope, in_type, spans, leading_start, leading_end)
        previous_end = end
        leading_start, leading_end = closing if closing is not None else (-1, -1)


def _stray_close_row(grammar: Grammar, node: Node, members: Node) -> int | None:
    """The row of a `}` the parser could not place (a child of an error)
    among ``members`` of the definition ``node``, at or left of the column
    ``node`` starts at, outside the members that hold members of their own:
    the definition's own closing brace, after which the parser read on as if
    the body were still open. fmt's `struct size_padding` (20 lines) took in
    the 1,800 lines after it, and each of their definitions was named as its
    member. None: there is none."""
    column = node.start_point.column
    pending = [child for child in reversed(members.children) if child.has_error]
    while pending:
        current = pending.pop()
        if current.is_error:
            for token in current.children:
                if token.type == "}" and token.start_point.column <= column:
                    return token.start_point.row
        elif (decl := grammar.classify(current)) is not None and decl.members is not None:
            continue  # its stray brace is its own (a namespace's unindented struct's)
        pending.extend(child for child in reversed(current.children) if child.has_error)
    return None


def _comments_before(grammar: Grammar, members: Node, node: Node) -> list[Node]:
    """The comments right before ``members`` (a node inside the definition
    ``node``), below its header's last row: Python's and Haskell's grammars
    put the comment above a class's first member there, before the block
    that holds the members."""
    if members == node:
        return []
    comments = []
    before = members.prev_named_sibling
    while before is not None and before.type in grammar.leading:
        comments.append(before)
        before = before.prev_named_sibling
    header_row = _last_row(before) if before is not None else node.start_point.row
    return [comment for comment in reversed(comments) if comment.start_point.row > header_row]


def _closing_comments(grammar: Grammar, node: Node, following: Node | None) -> tuple[int, tuple[int, int] | None]:
    """``node``'s last row without the comments it ends with that are not
    indented into it, and the rows of the last run of those comments, which
    lead ``following`` (None: there are none).

    Layout grammars end a node at the next token, past the comments before
    it: F#'s, Scala 3's and Nim's put the doc comment of a definition inside
    the definition before it, Kotlin's inside the `package` line or the
    imports, Haskell's inside the imports, and a broken C++ statement its
    next function's. A comment indented deeper than both ``node`` and
    ``following`` belongs to a block of ``node``'s (a loop's last word)."""
    column = max(node.start_point.column, following.start_point.column if following is not None else -1)
    first_row = node.start_point.row
    comments: list[Node] = []  # from the last one up
    current = node
    while current.child_count:
        index = current.child_count - 1
        while index >= 0:
            child = current.child(index)
            if child.start_byte < child.end_byte:
                if child.type not in grammar.leading or child.start_point.column > column \
                        or child.start_point.row <= first_row:
                    break
                comments.append(child)
            index -= 1
        if index < 0:  # a block holding nothing but those comments
            break
        current = current.child(index)
        if current.type in grammar.leading:  # one indented into the node: its own
            break
    if not comments:
        return _last_row(node), None
    code_end = min(_last_row(node), _last_row(current) if current.child_count == 0 or current.type in grammar.leading
                   else current.start_point.row)
    # A comment after code on its line is the code's.
    comments = [comment for comment in comments if comment.start_point.row > code_end]
    if not comments:
        return code_end, None
    last = first = comments[0]
    for comment in comments[1:]:
        if _last_row(comment) < first.start_point.row - 1:
            break
        first = comment
    return code_end, (first.start_point.row, _last_row(last))


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
    # Elixir's `defmodule Ecto.Changeset` is one token: the bare last part is
    # a later use (`%Changeset{}`).
    written = ".".join(name).encode()
    stack = [node]
    seen = 0
    while wanted is not None and stack and seen < _NAME_SEARCH_NODES:
        current = stack.pop()
        seen += 1
        if any(word in current.type for word in _BEFORE_NAME):
            continue
        if current.child_count == 0 or current.type.endswith(("identifier", "name")):
            if current.text in (wanted, written):
                return current.start_point.row
            if current.child_count == 0:
                continue
        stack.extend(reversed(current.children))
    return node.start_point.row


def node_text(node: Node | None) -> str:
    return (node.text or b"").decode("utf-8", "replace") if node is not None else ""


def named_decl(node: Node, kind: str, members: Node | None = None, is_type: bool = True) -> Decl | None:
    name = node_text(node.child_by_field_name("name"))
    return Decl(kind, (name,), members, is_type) if name else None


def container_decl(node: Node, kind: str, is_type: bool = True) -> Decl | None:
    return named_decl(node, kind, node.child_by_field_name("body"), is_type)


# Python
