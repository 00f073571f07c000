"""The multi-language code-search query set (issue 11), built from the corpora's sources.

Definitions are read with tree-sitter (the grammars the chunker uses). Three
query kinds per corpus:

* ``symbol``: a definition's bare name (``ConsoleRenderable``, ``parse_args``)
  → that definition. Only names defined once in the corpus (tests included;
  definitions written inside macros, which tree-sitter does not parse, are
  counted from the text: ``struct|fn|class|func|def|… NAME``),
  of at least :data:`MIN_SYMBOL_CHARS` characters; the names mentioned most
  often across the corpus are taken first (the hard cases: many chunks match),
  half types (class, struct, trait, interface, enum, type) and half callables.
* ``description``: the first sentence of a definition's doc comment (Python
  docstring, Rust ``///``, Go ``//`` before a declaration, Javadoc / JSDoc /
  TSDoc ``/** */``, a C comment right before a definition) → that definition.
  At least :data:`MIN_QUERY_WORDS` words, a body of at least
  :data:`MIN_BODY_LINES` lines, no test code, and a sentence no other
  definition of the corpus has. A sentence that starts with the name itself
  (Go's convention: ``Open opens the store …``) loses that first word
  (``Opens the store …``); the share of queries still naming their target is
  reported (:func:`names_target_share`).
* ``concept``: a "how does X work" question → several places, scored with
  NDCG@10 over graded targets. Two sources: (1) a module or package doc
  (Python module docstring, Go ``// Package x``, Rust ``//!``, a JS/TS file
  comment with ``@fileoverview``/``@module``, Java ``package-info.java``, a C
  file's leading comment): its first sentence → the largest top-level
  definitions of that file (for package docs: of that folder), at most
  :data:`MAX_CONCEPT_TARGETS`, grade 1; (2) a documented type with at least
  :data:`MIN_MEMBERS` members (methods in its body; Go methods with it as
  receiver in the folder; Rust methods of ``impl`` blocks for it in the file):
  its doc's first sentence → the type (grade 2) and its largest members
  (grade 1). In C a struct's members are the functions of its folder whose
  first parameter is a pointer to it. Such types' docs serve (c) only, not (b).

Every doc comment used by a query (sampled or not) is removed from the indexed
copy: its lines are blanked, never deleted, so every other line keeps its
number (a Python body left empty gets ``pass``). Only comments that have
their lines to themselves are used.

Targets are ``(path, line, grade)`` with ``line`` the 0-based row of the
definition's name. A hit finds a target when it is in the target's file and
its line range contains that row (so any chunk holding the definition's head
counts, however chunking packs it). The split (dev/test) is the corpus's.

The set is cached under ``bench/.cache/codesearch/set-V/``: ``ID.json`` (the
queries) next to ``ID/`` (the stripped tree), rebuilt when
:data:`SET_VERSION` changes.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import re
import shutil
import tempfile
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ctxls.index.languages import language_for_path, parser_for
from ctxls.index.paths import path_class

from codesearch_corpora import CODE_CORPORA, CodeCorpus, corpus_tree
from corpora import CACHE_DIR, make_own_repo
from dataset import first_sentence

# Bump when the selection rules change: cached sets of another version are rebuilt.
SET_VERSION = 4
SET_DIR = CACHE_DIR / "codesearch" / f"set-{SET_VERSION}"
MIN_QUERY_WORDS = 4
MIN_CONCEPT_WORDS = 5
MIN_BODY_LINES = 3
MIN_SYMBOL_CHARS = 4
MIN_MEMBERS = 3
MAX_CONCEPT_TARGETS = 5
MAX_QUERIES = {"symbol": 40, "description": 60, "concept": 30}
QUERY_KINDS = tuple(MAX_QUERIES)

TYPE_KINDS = frozenset({"class", "struct", "trait", "interface", "enum", "type", "union"})


@dataclass(frozen=True)
class Target:
    path: str
    line: int  # 0-based row of the definition's name
    grade: int
    symbol: str


@dataclass(frozen=True)
class CodeQuery:
    id: str  # corpus:kind:n
    corpus: str
    language: str
    split: str
    kind: str  # symbol | description | concept
    query: str
    targets: tuple[Target, ...]


@dataclass
class CodeSet:
    corpus: CodeCorpus
    tree: Path  # the stripped copy to index
    queries: list[CodeQuery]
    candidates: dict[str, int]  # kind -> eligible before sampling


@dataclass
class Definition:
    path: str
    name: str
    kind: str  # function | method | class | struct | trait | interface | enum | type | union
    name_row: int
    start_row: int
    end_row: int
    top_level: bool
    owner: str | None = None  # the type a method belongs to (body, receiver or impl)
    doc: tuple[int, int] | None = None  # rows of its doc comment (inclusive)
    doc_text: str = ""
    python_doc_alone: bool = False  # the docstring is the body's only statement
    body_indent: str = ""


@dataclass
class FileDoc:
    path: str
    rows: tuple[int, int]
    text: str
    package: bool  # a package doc: its targets are the folder's, not the file's


@dataclass
class _FileFacts:
    definitions: list[Definition] = field(default_factory=list)
    file_doc: FileDoc | None = None


def _hash(text: str) -> int:
    return int.from_bytes(hashlib.sha1(text.encode()).digest()[:8], "big")


_TEST_PARTS = frozenset({"test", "tests", "__tests__", "testing", "testdata", "testutil",
                         "benches", "examples", "example", "fixtures", "mock", "mocks"})


def is_test_path(path: str) -> bool:
    parts = path.lower().split("/")
    name = parts[-1]
    return (any(p in _TEST_PARTS for p in parts[:-1]) or name.startswith(("test_", "mock"))
            or name.endswith(("_test.go", "_test.py", ".test.ts", ".spec.ts", ".test.js",
                              ".spec.js", "test.java"))
            or name in ("test.rs", "tests.rs")
            or (name.startswith("test") and name.endswith(".java")))


# -- doc comment text -------------------------------------------------------------

_INLINE_TAG = re.compile(r"\{@(?:code|link|linkplain|literal|value)\s+([^}]*)\}")
_HTML_TAG = re.compile(r"</?[a-zA-Z][^>]*>")
_MD_LINK = re.compile(r"\[([^\]]+)\]\([^)]*\)")
_INTRA_LINK = re.compile(r"\[([^\]]+)\](?!\()")
_BAD_START = ("deprecated", "todo", "fixme", "xxx", "copyright", "spdx", "see ", "note:",
              "@", "#", "-", "|", "http", "nolint", "go:")


def comment_lines(raw_lines: list[str]) -> list[str]:
    """A comment's lines with their markers (``/**``, ``*``, ``///``, ``//!``,
    ``//``, ``*/``) removed."""
    out = []
    for line in raw_lines:
        s = line.strip()
        for marker in ("/**", "/*!", "/*"):
            if s.startswith(marker):
                s = s[len(marker):]
                break
        if s.endswith("*/"):
            s = s[:-2]
        s = s.strip()
        for marker in ("///", "//!", "//", "*"):
            if s.startswith(marker):
                s = s[len(marker):]
                break
        out.append(s.strip())
    return out


def comment_text(raw_lines: list[str]) -> str:
    """The prose of a comment's lines: markers removed (``comment_lines``),
    Javadoc/JSDoc block tags (``@param`` …) cut off."""
    out = []
    for s in comment_lines(raw_lines):
        if s.startswith("@") and not s.startswith("@{"):
            break  # the block tags: the description is over
        out.append(s)
    return "\n".join(out).strip()


def clean_sentence(text: str) -> str:
    """A doc's first sentence as a person would type it."""
    sentence = first_sentence(text)
    sentence = _INLINE_TAG.sub(r"\1", sentence)
    sentence = _HTML_TAG.sub("", sentence)
    sentence = _MD_LINK.sub(r"\1", sentence)
    sentence = _INTRA_LINK.sub(r"\1", sentence)
    return " ".join(sentence.replace("`", "").split())


def without_leading_name(sentence: str, name: str) -> str:
    """Go's (and some others') convention starts a doc with the name it documents
    ("Open opens the store …"); a person describing the code would not know it."""
    head, _, rest = sentence.partition(" ")
    if head.strip("`*") != name or not rest:
        return sentence
    return rest[0].upper() + rest[1:]


def usable_sentence(sentence: str, min_words: int) -> bool:
    low = sentence.lower()
    if len(sentence.split()) < min_words or low.startswith(_BAD_START):
        return False
    if any(word in low for word in ("copyright", "license", "all rights reserved")):
        return False
    letters = sum(ch.isalpha() for ch in sentence)
    return letters >= 0.6 * len(sentence)


# -- definitions, per language ---------------------------------------------------

_DEF_TYPES: dict[str, dict[str, str]] = {
    "python": {"function_definition": "function", "class_definition": "class"},
    "javascript": {"function_declaration": "function", "generator_function_declaration": "function",
                   "class_declaration": "class", "method_definition": "method"},
    "go": {"function_declaration": "function", "method_declaration": "method", "type_spec": "type"},
    "rust": {"function_item": "function", "struct_item": "struct", "enum_item": "enum",
             "trait_item": "trait", "type_item": "type", "union_item": "union"},
    "java": {"class_declaration": "class", "interface_declaration": "interface",
             "enum_declaration": "enum", "record_declaration": "class",
             "annotation_type_declaration": "interface", "method_declaration": "method"},
    "c": {"function_definition": "function", "struct_specifier": "struct",
          "enum_specifier": "enum", "union_specifier": "union", "type_definition": "type"},
}
_DEF_TYPES["typescript"] = {**_DEF_TYPES["javascript"], "interface_declaration": "interface",
                            "type_alias_declaration": "type", "enum_declaration": "enum",
                            "abstract_class_declaration": "class"}
_COMMENTS = frozenset({"comment", "line_comment", "block_comment"})
_FUNCTION_VALUES = frozenset({"arrow_function", "function_expression", "function",
                              "generator_function"})


def _c_name(node):
    """The identifier a C declarator declares (through pointers, arrays, parentheses)."""
    while node is not None and node.type not in ("identifier", "type_identifier", "field_identifier"):
        node = node.child_by_field_name("declarator")
    return node


def _name_node(language: str, node):
    if language == "c":
        if node.type == "function_definition":
            return _c_name(node.child_by_field_name("declarator"))
        if node.type == "type_definition":
            declarators = node.children_by_field_name("declarator")
            return _c_name(declarators[-1]) if declarators else None
        if node.child_by_field_name("body") is None:
            return None  # `struct x *p;` is a use, not a definition
        if node.parent is not None and node.parent.type == "type_definition":
            return None  # `typedef struct x {…} y;` defines y (one definition, one doc)
        return node.child_by_field_name("name")
    return node.child_by_field_name("name")


def _kind_of(language: str, node, kind: str) -> str:
    if language == "go" and node.type == "type_spec":
        inner = node.child_by_field_name("type")
        return {"struct_type": "struct", "interface_type": "interface"}.get(
            inner.type if inner else "", "type")
    return kind


def _c_owner(node) -> str | None:
    """C's methods: the struct a function takes a pointer to as its first parameter."""
    declarator = node.child_by_field_name("declarator")
    while declarator is not None and declarator.type != "function_declarator":
        declarator = declarator.child_by_field_name("declarator")
    params = declarator.child_by_field_name("parameters") if declarator is not None else None
    first = params.named_children[0] if params is not None and params.named_child_count else None
    if first is None or first.type != "parameter_declaration":
        return None
    pointer = first.child_by_field_name("declarator")
    typ = first.child_by_field_name("type")
    if pointer is None or pointer.type != "pointer_declarator" or typ is None:
        return None
    if typ.type == "struct_specifier":
        typ = typ.child_by_field_name("name")
    return typ.text.decode("utf-8", "replace") if typ is not None and typ.type == "type_identifier" else None


def _owner(language: str, node, source: bytes) -> str | None:
    """The type a method belongs to."""
    if language == "go" and node.type == "method_declaration":
        receiver = node.child_by_field_name("receiver")
        names = re.findall(r"\*?\s*([A-Za-z_]\w*)\s*(?:\[[^\]]*\])?\s*\)\s*$",
                           receiver.text.decode("utf-8", "replace")) if receiver else []
        return names[0] if names else None
    if language == "c":
        return _c_owner(node) if node.type == "function_definition" else None
    parent = node.parent
    while parent is not None:
        if language == "rust" and parent.type == "impl_item":
            typ = parent.child_by_field_name("type")
            text = typ.text.decode("utf-8", "replace") if typ else ""
            match = re.match(r"&?\s*(?:[\w:]+::)?([A-Za-z_]\w*)", text)
            return match.group(1) if match else None
        if parent.type in ("class_definition", "class_declaration", "abstract_class_declaration",
                           "interface_declaration", "enum_declaration", "record_declaration",
                           "trait_item"):
            name = parent.child_by_field_name("name")
            return name.text.decode("utf-8", "replace") if name else None
        parent = parent.parent
    return None


def _anchor(language: str, node):
    """The node doc comments sit right before (a wrapper of the definition)."""
    parent = node.parent
    if language == "python" and parent is not None and parent.type == "decorated_definition":
        return parent
    if language in ("javascript", "typescript"):
        if node.type == "variable_declarator" and parent is not None:
            node, parent = parent, parent.parent
        if parent is not None and parent.type == "export_statement":
            return parent
    if language == "go" and node.type == "type_spec" and parent is not None \
            and parent.type == "type_declaration" and parent.named_child_count == 1:
        return parent
    if language == "c" and parent is not None and parent.type == "type_definition":
        return parent
    return node


def _end_row(node) -> int:
    """The last row a node is on (a Rust line comment ends at column 0 of the next row)."""
    end = node.end_point
    return end.row - 1 if end.column == 0 and end.row > node.start_point.row else end.row


def _alone(lines: list[str], start, end) -> bool:
    """Does a node spanning points start..end have its lines to itself?"""
    if end.column == 0 and end.row > start.row:
        return not lines[start.row].encode("utf-8", "replace")[:start.column].strip()
    # Tree-sitter columns count bytes.
    return (not lines[start.row].encode("utf-8", "replace")[:start.column].strip()
            and not lines[end.row].encode("utf-8", "replace")[end.column:].strip())


def _doc_comment(language: str, anchor, lines: list[str]) -> tuple[int, int] | None:
    """Rows of the doc comment right above ``anchor`` (None if it has none usable)."""
    comments = []
    sibling = anchor.prev_named_sibling
    below = anchor.start_point.row
    while sibling is not None:
        if language == "rust" and sibling.type == "attribute_item":
            below = sibling.start_point.row
            sibling = sibling.prev_named_sibling
            continue
        if sibling.type not in _COMMENTS or _end_row(sibling) < below - 1:
            break
        if _end_row(sibling) >= below:  # on the same line as what follows
            return None
        comments.append(sibling)
        below = sibling.start_point.row
        if language in ("java", "javascript", "typescript", "c") and \
                lines[sibling.start_point.row].lstrip().startswith("/*"):
            break  # one block comment is the doc
        sibling = sibling.prev_named_sibling
    if not comments:
        return None
    first, last = comments[-1], comments[0]
    if not all(_alone(lines, c.start_point, c.end_point) for c in comments):
        return None
    heads = [lines[c.start_point.row].lstrip() for c in comments]
    if language == "rust" and not all(h.startswith("///") and not h.startswith("////") for h in heads):
        return None
    if language in ("java", "javascript", "typescript") and not heads[0].startswith("/**"):
        return None
    if language == "go" and not all(h.startswith("//") for h in heads):
        return None
    if language == "c" and len(comments) > 1 and not all(h.startswith("//") for h in heads):
        return None
    return first.start_point.row, _end_row(last)


def _python_docstring(node, lines: list[str]):
    """(rows, text, alone, indent) of a Python definition's or module's docstring, or None."""
    body = node.child_by_field_name("body") if node.type != "module" else node
    if body is None:
        return None
    statements = [c for c in body.named_children if c.type != "comment"]
    if not statements:
        return None
    expr = statements[0]
    # This grammar gives a docstring as a bare `string` statement; older ones wrap it.
    if expr.type == "expression_statement" and expr.named_child_count == 1:
        expr = expr.named_children[0]
    if expr.type != "string":
        return None
    if not _alone(lines, expr.start_point, expr.end_point):
        return None
    raw = expr.text.decode("utf-8", "replace")
    match = re.match(r"^[rRuU]?(\"\"\"|'''|\"|')(.*)\1$", raw, re.S)
    if not match:
        return None
    text = inspect.cleandoc(match.group(2))
    indent = lines[expr.start_point.row][:expr.start_point.column]
    return (expr.start_point.row, expr.end_point.row), text, len(statements) == 1, indent


def _file_doc(language: str, path: str, root, lines: list[str]) -> FileDoc | None:
    """A module or package doc comment of this file."""
    if language == "python":
        found = _python_docstring(root, lines)
        return FileDoc(path, found[0], found[1], False) if found else None
    children = [c for c in root.named_children]
    if language == "go":
        for child in children:
            if child.type == "package_clause":
                rows = _doc_comment("go", child, lines)
                if rows:
                    text = comment_text(lines[rows[0]:rows[1] + 1])
                    if text.startswith("Package "):
                        return FileDoc(path, rows, text, True)
                return None
        return None
    if language == "rust":
        rows = []
        for child in children:
            if child.type != "line_comment":
                break
            if lines[child.start_point.row].lstrip().startswith("//!"):
                rows.append(child.start_point.row)
            elif rows:
                break
        if not rows or rows != list(range(rows[0], rows[-1] + 1)):
            return None
        package = path.endswith(("/mod.rs", "/lib.rs")) or path in ("lib.rs", "src/lib.rs")
        return FileDoc(path, (rows[0], rows[-1]), comment_text(lines[rows[0]:rows[-1] + 1]), package)
    first = children[0] if children else None
    if first is None or first.type not in _COMMENTS or not _alone(lines, first.start_point, first.end_point):
        return None
    raw = lines[first.start_point.row:_end_row(first) + 1]
    rows = (first.start_point.row, _end_row(first))
    if language in ("javascript", "typescript"):
        joined = "\n".join(raw)
        tag = re.search(r"@(?:fileoverview|file|module|overview)\b\s*(.*)", joined, re.S)
        if not tag:
            return None
        return FileDoc(path, rows, comment_text(tag.group(1).split("\n")), False)
    if language == "java":
        if not path.endswith("package-info.java"):
            return None
        for child in children:
            if child.type == "package_declaration":
                rows2 = _doc_comment("java", child, lines)
                if rows2:
                    return FileDoc(path, rows2, comment_text(lines[rows2[0]:rows2[1] + 1]), True)
        return None
    if language == "c":
        # A file's leading comment, when it is not attached to the first definition.
        nxt = first.next_named_sibling
        if nxt is not None and nxt.start_point.row <= _end_row(first) + 1:
            return None
        return FileDoc(path, rows, comment_text(raw), False)
    return None


def read_file(language: str, path: str, text: str) -> _FileFacts:
    """The definitions (with their doc comments) and the file doc of one file."""
    lines = text.split("\n")
    tree = parser_for(language).parse(text.encode("utf-8", "replace"))
    facts = _FileFacts()
    types = _DEF_TYPES[language]
    stack = [tree.root_node]
    while stack:
        node = stack.pop()
        kind = types.get(node.type)
        if kind is None and node.type == "variable_declarator" and language in ("javascript", "typescript"):
            value = node.child_by_field_name("value")
            if value is not None and value.type in _FUNCTION_VALUES:
                kind = "function"
        name = _name_node(language, node) if kind else None
        if kind and name is not None:
            kind = _kind_of(language, node, kind)
            owner = _owner(language, node, b"")
            if kind == "function" and owner is not None:
                kind = "method"
            definition = Definition(
                path=path, name=name.text.decode("utf-8", "replace"), kind=kind,
                name_row=name.start_point.row, start_row=node.start_point.row,
                end_row=node.end_point.row, top_level=_top_level(node), owner=owner)
            if language == "python":
                found = _python_docstring(node, lines)
                if found:
                    definition.doc, definition.doc_text, definition.python_doc_alone, \
                        definition.body_indent = found
            else:
                rows = _doc_comment(language, _anchor(language, node), lines)
                if rows:
                    definition.doc = rows
                    definition.doc_text = comment_text(lines[rows[0]:rows[1] + 1])
            facts.definitions.append(definition)
        stack.extend(reversed(node.named_children))
    facts.file_doc = _file_doc(language, path, tree.root_node, lines)
    facts.definitions.sort(key=lambda d: (d.start_row, d.name_row))
    return facts


_CONTAINERS = frozenset({"module", "program", "source_file", "translation_unit", "export_statement",
                         "decorated_definition", "type_declaration", "lexical_declaration",
                         "variable_declaration", "type_definition", "declaration_list",
                         "preproc_if", "preproc_ifdef", "preproc_else", "impl_item"})


def _top_level(node) -> bool:
    parent = node.parent
    while parent is not None and parent.type in _CONTAINERS:
        if parent.parent is None:
            return True
        parent = parent.parent
    return parent is None


# -- building the set ---------------------------------------------------------------

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# A definition written out in any of the languages: it also finds those tree-sitter
# cannot see (inside a macro call such as Rust's `cfg_xxx! { pub struct ... }`).
_DEFINED_IN_TEXT = re.compile(r"\b(?:struct|enum|trait|union|type|fn|class|interface|def|record"
                              r"|func(?:\s*\([^)]*\))?)\s+([A-Za-z_]\w*)")


def _body_lines(d: Definition) -> int:
    lines = d.end_row - d.start_row + 1
    if d.doc and d.start_row <= d.doc[0] <= d.end_row:
        lines -= d.doc[1] - d.doc[0] + 1
    return lines


def _blank(lines: list[str], rows: tuple[int, int], python_alone: bool = False, indent: str = "") -> None:
    for row in range(rows[0], rows[1] + 1):
        lines[row] = ""
    if python_alone:
        lines[rows[0]] = indent + "pass"


def _first_party(path: str) -> bool:
    """Not vendored (or generated), a locale table or a declaration stub, by
    the product's own classifier (the classes whose penalties the path-class
    set measures)."""
    kind = path_class(path)
    return not (kind.vendored or kind.stub or kind.locale)


def _comment_blocks(lines: list[str]):
    """(first row, last row) of each run of comment lines (``/** … */``,
    ``//``, ``#``) of a file: the doc comments a parser may not attach to a
    declaration (a ``.d.ts`` method signature's)."""
    start = None
    for row, line in enumerate([*lines, ""]):
        s = line.strip()
        if s.startswith(("/*", "*", "//", "#")) and (start is not None or not s.startswith("*")):
            start = row if start is None else start
            continue
        if start is not None:
            yield start, row - 1
            start = None


def _strip_copies(files, facts, candidates, first_party, strip) -> None:
    """Blank, in the files outside the gold's side (``first_party``: that
    side), every doc comment whose first sentence is a query's: the query's
    own doc is blanked in its target (set 4's rule), and a stub or a build
    copy that kept the same sentence would win on a match the target was denied."""
    texts = {t.lower() for kind in ("description", "concept") for t, _ in candidates[kind]}

    def used(text: str, name: str = "") -> bool:
        sentence = clean_sentence(text)
        return sentence.lower() in texts or without_leading_name(sentence, name).lower() in texts
    for path, f in facts.items():
        if first_party(path):
            continue
        for d in f.definitions:
            if d.doc is not None and used(d.doc_text, d.name):
                strip[path].append((d.doc, d.python_doc_alone, d.body_indent))
        if f.file_doc is not None and used(f.file_doc.text):
            strip[path].append((f.file_doc.rows, False, ""))
        if not path.endswith(".py"):
            lines = files[path].split("\n")
            for rows in _comment_blocks(lines):
                if used(comment_text(lines[rows[0]:rows[1] + 1])):
                    strip[path].append((rows, False, ""))


def build_queries(corpus: CodeCorpus, files: dict[str, str]) -> tuple[list[CodeQuery], dict[str, str], dict[str, int]]:
    """(queries, stripped texts of the edited files, candidates per kind) of one corpus.

    ``files``: repo-relative path -> text of every file of the corpus."""
    facts: dict[str, _FileFacts] = {}
    for path, text in sorted(files.items()):
        language = language_for_path(path)
        if language == "tsx":
            language = "typescript"
        if language not in _DEF_TYPES or "\r" in text:
            continue
        facts[path] = read_file(language, path, text)
    definitions = [d for f in facts.values() for d in f.definitions]
    if not corpus.competitors:
        first_party = lambda path: True  # noqa: E731
    elif corpus.gold == "penalized":  # the penalized files' own definitions are the gold
        first_party = lambda path: not _first_party(path)  # noqa: E731
    else:
        first_party = _first_party
    # A penalized-gold query never asks for a name first-party code also
    # defines (a stub's declaration of the implemented function, a build copy):
    # there the first-party definition is as good an answer.
    shadowed = ({d.name for d in definitions if _first_party(d.path)}
                if corpus.competitors and corpus.gold == "penalized" else set())
    source_defs = [d for d in definitions if not is_test_path(d.path) and "test" not in d.name.lower()
                   and first_party(d.path) and d.name not in shadowed]
    # With competitors, a name is unique among the first-party definitions: a
    # stub's or a vendored copy's namesake is what the penalties are about.
    defined = Counter(d.name for d in definitions if first_party(d.path))
    written: Counter[str] = Counter()
    for path, text in files.items():
        if first_party(path):
            written.update(_DEFINED_IN_TEXT.findall(text))
    for name, count in written.items():
        defined[name] = max(defined[name], count)
    mentions: Counter[str] = Counter()
    for text in files.values():
        mentions.update(_WORD.findall(text))

    def target(d: Definition, grade: int = 1) -> Target:
        symbol = f"{d.owner}.{d.name}" if d.owner else d.name
        return Target(d.path, d.name_row, grade, symbol)

    members: dict[tuple[str, str], list[Definition]] = defaultdict(list)
    for d in source_defs:
        if d.owner is None or d.kind != "method":
            continue
        # Go methods (and C functions taking a struct pointer first) belong to a type
        # of their folder; others to a type of their file.
        scope = d.path.rsplit("/", 1)[0] if corpus.language in ("go", "c") else d.path
        members[scope, d.owner].append(d)

    def members_of(d: Definition) -> list[Definition]:
        scope = d.path.rsplit("/", 1)[0] if corpus.language in ("go", "c") else d.path
        return [m for m in members.get((scope, d.name), []) if m is not d]

    strip: dict[str, list[tuple[tuple[int, int], bool, str]]] = defaultdict(list)
    candidates: dict[str, list[tuple[str, tuple[Target, ...]]]] = {k: [] for k in QUERY_KINDS}

    # (c) concepts from module / package docs.
    for path, f in facts.items():
        doc = f.file_doc
        if doc is None or is_test_path(path) or not first_party(path):
            continue
        sentence = clean_sentence(doc.text)
        if not usable_sentence(sentence, MIN_CONCEPT_WORDS):
            continue
        folder = path.rsplit("/", 1)[0] if "/" in path else ""
        pool = [d for d in source_defs if d.top_level and (
            (d.path.rsplit("/", 1)[0] if "/" in d.path else "") == folder if doc.package else d.path == path)]
        pool.sort(key=lambda d: (-(d.end_row - d.start_row), d.path, d.name_row))
        if len(pool) < 2:
            continue
        candidates["concept"].append((sentence, tuple(target(d) for d in pool[:MAX_CONCEPT_TARGETS])))
        strip[path].append((doc.rows, False, ""))

    # (c) concepts from documented types with members, (b) descriptions from the rest.
    for d in source_defs:
        if d.doc is None:
            continue
        own = members_of(d) if d.kind in TYPE_KINDS else []
        if len(own) >= MIN_MEMBERS:
            sentence = clean_sentence(d.doc_text)
            if not usable_sentence(sentence, MIN_CONCEPT_WORDS):
                continue
            own.sort(key=lambda m: (-(m.end_row - m.start_row), m.name_row))
            targets = (target(d, 2), *(target(m) for m in own[:MAX_CONCEPT_TARGETS - 1]))
            candidates["concept"].append((sentence, targets))
            strip[d.path].append((d.doc, d.python_doc_alone, d.body_indent))
            continue
        sentence = without_leading_name(clean_sentence(d.doc_text), d.name)
        if not usable_sentence(sentence, MIN_QUERY_WORDS) or _body_lines(d) < MIN_BODY_LINES:
            continue
        if d.name.startswith("__") and d.name.endswith("__"):
            continue
        candidates["description"].append((sentence, (target(d),)))
        strip[d.path].append((d.doc, d.python_doc_alone, d.body_indent))

    # (a) symbols.
    for d in source_defs:
        if defined[d.name] == 1 and len(d.name) >= MIN_SYMBOL_CHARS and not d.name.startswith("_"):
            candidates["symbol"].append((d.name, (target(d),)))

    if corpus.competitors:
        _strip_copies(files, facts, candidates, first_party, strip)

    queries: list[CodeQuery] = []
    counts: dict[str, int] = {}
    for kind in QUERY_KINDS:
        # A text several candidates share names none of them.
        uses = Counter(text.lower() for text, _ in candidates[kind])
        unique = [(t, ts) for t, ts in candidates[kind] if uses[t.lower()] == 1]
        counts[kind] = len(unique)
        if kind == "symbol":
            kinds_of = {(d.path, d.name_row): d.kind for d in source_defs}
            types = [c for c in unique if kinds_of[c[1][0].path, c[1][0].line] in TYPE_KINDS]
            callables = [c for c in unique if c not in types]
            by_mentions = lambda c: (-mentions[c[0]], _hash(c[0]))  # noqa: E731
            half = MAX_QUERIES[kind] // 2
            types.sort(key=by_mentions)
            callables.sort(key=by_mentions)
            picked = types[:half] + callables[:MAX_QUERIES[kind] - min(half, len(types))]
            picked = picked[:MAX_QUERIES[kind]]
        else:
            picked = sorted(unique, key=lambda c: _hash(f"{corpus.id}\n{c[0]}"))[:MAX_QUERIES[kind]]
        for n, (text, targets) in enumerate(picked):
            queries.append(CodeQuery(f"{corpus.name}:{kind}:{n}", corpus.id, corpus.language,
                                     corpus.split, kind, text, targets))

    stripped: dict[str, str] = {}
    for path, edits in strip.items():
        lines = files[path].split("\n")
        for rows, alone, indent in edits:
            _blank(lines, rows, alone, indent)
        stripped[path] = "\n".join(lines)
    return queries, stripped, counts


def names_target_share(queries: list[CodeQuery]) -> float:
    """Share of description queries whose text contains their target's own name."""
    described = [q for q in queries if q.kind == "description"]
    named = [q for q in described
             if re.search(rf"\b{re.escape(q.targets[0].symbol.rsplit('.', 1)[-1])}\b", q.query)]
    return len(named) / len(described) if described else 0.0


def _read_tree(tree: Path) -> dict[str, str]:
    files = {}
    for path in sorted(tree.rglob("*")):
        rel = path.relative_to(tree).as_posix()
        if path.is_file() and not rel.startswith(".git/"):
            files[rel] = path.read_bytes().decode("utf-8", errors="replace")
    return files


def _json_path(corpus: CodeCorpus) -> Path:
    return SET_DIR / f"{corpus.id}.json"


def _load(data: dict, corpus: CodeCorpus) -> CodeSet:
    queries = [CodeQuery(**{**q, "targets": tuple(Target(**t) for t in q["targets"])})
               for q in data["queries"]]
    return CodeSet(corpus, SET_DIR / corpus.id, queries, data["candidates"])


def build_set(corpus: CodeCorpus) -> CodeSet:
    """The query set and stripped tree of ``corpus`` (built once, then read from the cache)."""
    cached = _json_path(corpus)
    if cached.is_file() and (SET_DIR / corpus.id).is_dir():
        data = json.loads(cached.read_text(encoding="utf-8"))
        if data.get("version") == SET_VERSION:
            return _load(data, corpus)
    source = corpus_tree(corpus)
    files = _read_tree(source)
    if corpus.competitors:
        # Line ends made LF (pendulum's sdist is CRLF, which the reader skips):
        # every file is rewritten in the copy, the tokens unchanged.
        files = {rel: text.replace("\r\n", "\n") for rel, text in files.items()}
    queries, stripped, counts = build_queries(corpus, files)
    if corpus.competitors:
        stripped = {**{rel: text for rel, text in files.items()
                       if (source / rel).read_bytes().count(b"\r\n")}, **stripped}
    tree = SET_DIR / corpus.id
    if tree.exists():
        shutil.rmtree(tree)
    SET_DIR.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=SET_DIR) as tmp:
        copy = Path(tmp) / corpus.id
        shutil.copytree(source, copy, ignore=shutil.ignore_patterns(".git"))
        for rel, text in stripped.items():
            (copy / rel).write_bytes(text.encode("utf-8", errors="surrogateescape"))
        copy.rename(tree)
    make_own_repo(tree)
    data = {"version": SET_VERSION, "corpus": corpus.id, "candidates": counts,
            "queries": [asdict(q) for q in queries]}
    cached.write_text(json.dumps(data, indent=1), encoding="utf-8")
    return _load(data, corpus)


if __name__ == "__main__":
    for c in CODE_CORPORA:
        s = build_set(c)
        by_kind = Counter(q.kind for q in s.queries)
        print(f"{c.language:11} {c.split:4} {c.id:24} " + " ".join(
            f"{k} {by_kind[k]}/{s.candidates[k]}" for k in QUERY_KINDS)
            + f"  names-in-description {names_target_share(s.queries):.0%}")
