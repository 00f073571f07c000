"""A CodeSearchNet-style retrieval set built from the benchmark corpora.

For each corpus, Python functions and methods with a docstring whose first
sentence has at least :data:`MIN_QUERY_WORDS` words become queries: the
docstring is removed from a copy of the corpus, and the first sentence must
find its function in that copy.

* Docstring lines are blanked, not deleted, so every other line keeps its
  number; a body left empty gets ``pass``. Each edited file must still parse.
* Only functions the chunker gives a symbol of their own are targets: those
  at module or class level, also inside ``if``/``try`` blocks (which the
  chunker walks through). Their symbol is the qualified name the chunker
  uses (``Outer.Inner.method``).
* As in CodeSearchNet, dunder methods, names containing "test" and functions
  shorter than :data:`MIN_BODY_LINES` lines (docstring excluded) are left out,
  and so are sentences shared by several functions (ambiguous).
* At most :data:`MAX_QUERIES_PER_CORPUS` queries per corpus, sampled by a hash;
  the dev/test split is by a hash of the target, so it is stable across runs.

:func:`build_dataset` returns the set and caches it under
``bench/.cache/dataset/``: ``NAME-VER.json`` (the queries) next to ``NAME-VER/``
(the stripped tree, to be indexed).
"""

from __future__ import annotations

import ast
import hashlib
import json
import re
import shutil
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

from corpora import CACHE_DIR, corpus_id, corpus_path, make_own_repo

DATASET_DIR = CACHE_DIR / "dataset"
# Bump when the selection rules change: cached sets of another version are rebuilt.
DATASET_VERSION = 1
MIN_QUERY_WORDS = 4
MIN_BODY_LINES = 3
MAX_QUERIES_PER_CORPUS = 1500

_SENTENCE_END = re.compile(r"[.!?](?=\s|$)")
# Compound statements whose bodies the chunker walks as if at the enclosing level.
_TRANSPARENT = (ast.If, ast.Try, ast.TryStar)


@dataclass(frozen=True)
class Query:
    target: str  # "path::symbol"
    path: str  # repo-relative
    symbol: str  # as the chunker names it
    start_line: int  # 0-based, inclusive: the function (decorators excluded)
    end_line: int
    query: str  # the docstring's first sentence
    docstring: str  # the whole removed docstring (cleaned), for other uses
    split: str  # "dev" | "test"


@dataclass
class Dataset:
    corpus: str  # NAME-VER
    tree: Path  # the stripped copy to index
    queries: list[Query]
    candidates: int  # queries before sampling down to MAX_QUERIES_PER_CORPUS

    def split(self, name: str) -> list[Query]:
        return [q for q in self.queries if q.split == name]


def _hash(text: str) -> int:
    return int.from_bytes(hashlib.sha1(text.encode()).digest()[:8], "big")


def first_sentence(docstring: str) -> str:
    """The first sentence of the first paragraph, on one line."""
    paragraph = docstring.strip().split("\n\n", 1)[0]
    flat = " ".join(paragraph.split())
    end = _SENTENCE_END.search(flat)
    return flat[:end.end()] if end else flat


def _defs(body: list[ast.stmt], scope: tuple[str, ...]):
    """(qualified name, FunctionDef) of the functions the chunker gives a symbol."""
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield ".".join((*scope, node.name)), node
        elif isinstance(node, ast.ClassDef):
            yield from _defs(node.body, (*scope, node.name))
        elif isinstance(node, _TRANSPARENT):
            blocks = [node.body, node.orelse, getattr(node, "finalbody", [])]
            blocks += [handler.body for handler in getattr(node, "handlers", [])]
            for block in blocks:
                yield from _defs(block, scope)


def _eligible(symbol: str, node: ast.FunctionDef | ast.AsyncFunctionDef,
              doc: ast.Expr, sentence: str) -> bool:
    name = node.name
    if name.startswith("__") and name.endswith("__"):
        return False
    if "test" in symbol.lower() or len(sentence.split()) < MIN_QUERY_WORDS:
        return False
    doc_lines = doc.end_lineno - doc.lineno + 1
    return node.end_lineno - node.lineno + 1 - doc_lines >= MIN_BODY_LINES


def _strip_file(text: str) -> tuple[str, list[tuple[str, ast.FunctionDef, str]]]:
    """The file with eligible docstrings blanked, and (symbol, node, docstring)
    for each. Files that do not parse, or would not after the edit, are kept as they are."""
    if "\r" in text:  # ast and str.split("\n") would disagree on line numbers
        return text, []
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return text, []
    lines = text.split("\n")
    found = []
    for symbol, node in _defs(tree.body, ()):
        first = node.body[0]
        if not (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)):
            continue
        docstring = ast.get_docstring(node, clean=True) or ""
        sentence = first_sentence(docstring)
        if not _eligible(symbol, node, first, sentence):
            continue
        # Only docstrings that have their lines to themselves can be blanked.
        head = lines[first.lineno - 1].encode()[:first.col_offset]
        tail = lines[first.end_lineno - 1].encode()[first.end_col_offset:].strip()
        if head.strip() or (tail and not tail.startswith(b"#")):
            continue
        indent = head.decode()
        for row in range(first.lineno - 1, first.end_lineno):
            lines[row] = ""
        if len(node.body) == 1:
            lines[first.lineno - 1] = indent + "pass"
        found.append((symbol, node, docstring))
    if not found:
        return text, []
    stripped = "\n".join(lines)
    try:
        ast.parse(stripped)
    except SyntaxError:
        return text, []
    return stripped, found


def _build(name: str) -> Dataset:
    source = corpus_path(name)
    cid = corpus_id(name)
    candidates: list[Query] = []
    edited: dict[str, str] = {}
    for file in sorted(source.rglob("*.py")):
        rel = file.relative_to(source).as_posix()
        if rel.startswith(".git/"):
            continue
        text = file.read_bytes().decode("utf-8", errors="replace")
        stripped, found = _strip_file(text)
        if not found:
            continue
        edited[rel] = stripped
        for symbol, node, docstring in found:
            target = f"{rel}::{symbol}"
            candidates.append(Query(
                target=target, path=rel, symbol=symbol, start_line=node.lineno - 1,
                end_line=node.end_lineno - 1, query=first_sentence(docstring),
                docstring=docstring, split="dev" if _hash(target) % 2 == 0 else "test"))
    # A sentence several functions share cannot name one of them.
    uses: dict[str, int] = {}
    for q in candidates:
        key = q.query.lower()
        uses[key] = uses.get(key, 0) + 1
    unique = [q for q in candidates if uses[q.query.lower()] == 1]
    sampled = sorted(unique, key=lambda q: _hash(f"{q.target}\n{q.query}"))[:MAX_QUERIES_PER_CORPUS]
    sampled.sort(key=lambda q: (q.path, q.start_line))

    tree = DATASET_DIR / cid
    if tree.exists():
        shutil.rmtree(tree)
    DATASET_DIR.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=DATASET_DIR) as tmp:
        copy = Path(tmp) / cid
        shutil.copytree(source, copy, ignore=shutil.ignore_patterns(".git"))
        # Every eligible docstring goes, sampled or not: none may leak the answer.
        for rel, text in edited.items():
            (copy / rel).write_text(text, encoding="utf-8")
        copy.rename(tree)
    make_own_repo(tree)
    return Dataset(cid, tree, sampled, len(unique))


def _json_path(name: str) -> Path:
    return DATASET_DIR / f"{corpus_id(name)}.json"


def build_dataset(name: str) -> Dataset:
    """The retrieval set of corpus ``name`` (built once, then read from the cache)."""
    cached = _json_path(name)
    if cached.is_file():
        data = json.loads(cached.read_text(encoding="utf-8"))
        tree = DATASET_DIR / data["corpus"]
        if data.get("version") == DATASET_VERSION and tree.is_dir():
            return Dataset(data["corpus"], tree, [Query(**q) for q in data["queries"]],
                           data["candidates"])
    dataset = _build(name)
    cached.write_text(json.dumps({
        "version": DATASET_VERSION, "corpus": dataset.corpus,
        "tree": dataset.tree.relative_to(DATASET_DIR).as_posix(),
        "candidates": dataset.candidates,
        "queries": [asdict(q) for q in dataset.queries]}, indent=1), encoding="utf-8")
    return dataset


if __name__ == "__main__":
    from corpora import QUALITY_CORPORA

    for corpus in QUALITY_CORPORA:
        ds = build_dataset(corpus)
        print(f"{ds.corpus}: {len(ds.queries)} queries ({len(ds.split('dev'))} dev, "
              f"{len(ds.split('test'))} test) of {ds.candidates}; tree {ds.tree}")
