"""Code-aware tokenization shared by indexing and querying.

SQLite's unicode61 tokenizer (with ``_`` as a token character) sees the output
of :func:`expand`: the original identifier, lower-cased, followed by its
sub-words, so ``getUserName`` matches ``getusername``, ``get``, ``user`` and
``name``; ``os.path.join`` also yields the compound ``os_path_join``. Queries go
through the same function, so both sides always agree.

Words are reduced to their English stem (Snowball), so a description's
"receives the users" meets code's ``receive_user``; a compound identifier is
kept whole (lower-cased, unstemmed) before its words' stems, so an exact name
still matches itself first. Chosen on the code-search dev set over keeping
both forms (docs/decisions.md, "English stems in the full-text index").
"""

from __future__ import annotations

import re
import threading
from functools import lru_cache

import snowballstemmer

# An identifier, optionally chained by '.', '/', '::' or '\' (dotted names,
# paths, C++/Rust/PHP scopes). Hyphens are left out: in prose they join words.
_COMPOUND = re.compile(r"[A-Za-z0-9_]+(?:(?:\.|/|::|\\)[A-Za-z0-9_]+)*")
_PART_SPLIT = re.compile(r"\.|/|::|\\")
# camelCase / PascalCase / ACRONYMWord / digits boundaries inside one word.
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")

# Tokens longer than this are hashes, base64 or minified blobs: noise.
MAX_TOKEN_CHARS = 48

# Query-side only: words that carry no meaning in a natural-language question
# about code (the one stop-word list: BM25's query terms, recall's file-name
# matches, locate's reading of a message). Documents keep them (BM25's IDF
# already discounts them there).
STOPWORDS = frozenset(
    """a an and are as at be by can do does for from how i if in is it its of on or our the
    their then this that to was we what when where which who why with you your""".split()
)
# Words a question about code uses that are code's words too (`into`,
# `has_key`, `get`, `class`): query terms, since a chunk holding them may be
# the one (with has/have/into/not dropped too, set 4's Rust lexical NDCG@10
# fell 0.005 dev, 0.008 test: `into`), but they name no file (recall's
# file-name feature).
CODE_QUESTION_WORDS = frozenset(
    "get gets set has have into not use used uses using code function method class file".split())
FILE_NAME_STOPWORDS = STOPWORDS | CODE_QUESTION_WORDS


_STEMMER = snowballstemmer.stemmer("english")
# A Snowball stemmer keeps its word in the object while it works: the indexer
# and recall threads take turns (misses only: stems are cached).
_STEMMER_LOCK = threading.Lock()


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """The Snowball stem of one lower-case word; digits and words under four
    letters unchanged (``ops``, ``str`` are names, not English)."""
    if len(word) < 4 or not word.isalpha():
        return word
    with _STEMMER_LOCK:
        return _STEMMER.stemWord(word)


# expand_tokens() yields stems: "does" arrives as "doe".
_STEMMED_STOPWORDS = STOPWORDS | {stem(w) for w in STOPWORDS}


def _word_parts(word: str) -> list[str]:
    pieces = [p for p in word.split("_") if p]
    parts: list[str] = []
    for piece in pieces:
        parts.extend(m.group(0).lower() for m in _CAMEL.finditer(piece))
    return parts


# Code repeats its identifiers: a compound's tokens are computed once. Bounded,
# since a repository's distinct identifiers are unbounded.
@lru_cache(maxsize=1 << 16)
def _compound_tokens(compound: str) -> tuple[str, ...]:
    out: list[str] = []
    words = [w for w in _PART_SPLIT.split(compound) if w]
    if len(words) > 1:
        joined = "_".join(w.lower() for w in words)
        if len(joined) <= MAX_TOKEN_CHARS:
            out.append(joined)
    for word in words:
        if len(word) > MAX_TOKEN_CHARS:
            continue
        lowered = word.lower()
        parts = _word_parts(word)
        if len(parts) > 1 or (parts and parts[0] != lowered):
            out.append(lowered)
            out.extend(stem(part) for part in parts)
        else:
            out.append(stem(lowered))
    return tuple(out)


def expand_tokens(text: str) -> list[str]:
    """All index tokens of ``text``: compound identifiers whole (lower-cased),
    followed by their words' stems."""
    out: list[str] = []
    for compound in _COMPOUND.findall(text):
        out.extend(_compound_tokens(compound))
    return out


def expand(text: str) -> str:
    """The text FTS5 indexes for ``text`` (space-separated tokens)."""
    return " ".join(expand_tokens(text))


def query_terms(query: str) -> list[str]:
    """Distinct query tokens, stopwords dropped unless nothing else is left."""
    tokens = expand_tokens(query)
    seen: dict[str, None] = {}
    for token in tokens:
        if token not in _STEMMED_STOPWORDS:
            seen.setdefault(token)
    if not seen:
        for token in tokens:
            seen.setdefault(token)
    return list(seen)


def fts_match_expression(terms: list[str]) -> str:
    """An FTS5 MATCH string OR-ing the terms, each quoted so none is syntax."""
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)
