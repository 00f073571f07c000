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

Text in any script: letters and digits of every script make words (text is
NFKC-normalised and case-folded, so NFC, NFD and full-width forms agree), split
as ASCII is (``_``, camelCase where the script has case, digits); a run of a
script written without spaces (Han, Hiragana, Katakana, Hangul, Thai) gives
its overlapping character bigrams (one character alone: itself), so a CJK
query meets a CJK comment. Only ASCII words are stemmed. Pure-ASCII text
takes the ASCII path unchanged (tokenizes exactly as before Unicode words).
"""

from __future__ import annotations

import hashlib
import re
import threading
import unicodedata
from functools import cache, lru_cache

import snowballstemmer

# An identifier, optionally chained by '.', '/', '::' or '\' (dotted names,
# paths, C++/Rust/PHP scopes). Hyphens are left out: in prose they join words.
_COMPOUND = re.compile(r"[A-Za-z0-9_]+(?:(?:\.|/|::|\\)[A-Za-z0-9_]+)*")
_PART_SPLIT = re.compile(r"\.|/|::|\\")
# camelCase / PascalCase / ACRONYMWord / digits boundaries inside one word.
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")
# Runs of scripts written without spaces (Han with its radicals and iteration
# marks, Hiragana, Katakana, Hangul, Thai): indexed as character bigrams.
NO_SPACE_SCRIPTS = ("\u0e00-\u0e7f\u1100-\u11ff\u2e80-\u2fdf\u3005-\u3007\u3021-\u3029\u3031-\u3035"
                    "\u3038-\u303c\u3041-\u309f\u30a1-\u30fa\u30fc-\u30ff\u3130-\u318f\u31f0-\u31ff"
                    "\u3400-\u4dbf\u4e00-\u9fff\ua960-\ua97f\uac00-\ud7ff\uf900-\ufaff"
                    "\U00020000-\U0003ffff")
_NO_SPACE_CHAR = re.compile(f"[{NO_SPACE_SCRIPTS}]")
_NON_ASCII = re.compile(r"[^\x00-\x7f]")
# The parts of a non-ASCII word, read on its characters' classes (_char_classes):
# A upper/title case, a lower case, o a letter of a script without case,
# c a letter of a script without spaces, 0 a digit. The ASCII rule (_CAMEL)
# plus caseless runs.
_CLASS_PARTS = re.compile(r"A+(?=Aa)|A?a+|A+|0+|c+|o+")

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
    """A compound's tokens: joined whole, then each word's. A compound with
    non-ASCII letters is case-folded and its words read by
    _unicode_word_tokens; an ASCII one exactly as before."""
    ascii_only = compound.isascii()
    out: list[str] = []
    words = [w for w in _PART_SPLIT.split(compound) if w]
    if len(words) > 1:
        joined = "_".join(w.lower() if ascii_only else w.casefold() for w in words)
        if len(joined) <= MAX_TOKEN_CHARS:
            out.append(joined)
    word_tokens = _ascii_word_tokens if ascii_only else _unicode_word_tokens
    for word in words:
        out.extend(word_tokens(word))
    return tuple(out)


@cache
def _unicode_compound() -> re.Pattern[str]:
    """_COMPOUND for text in any script: a word is letters, digits and ``_``
    of any script, with the combining marks among them (Devanagari's vowel
    signs, Thai's); built on the first non-ASCII text. Only the marks of
    the BMP (read from unicodedata, as ranges): a class reaching past it is
    a list the matcher walks for every space, and the full-text tokenizer
    splits words at marks anyway."""
    ranges: list[list[int]] = []
    for code in range(0x300, 0x10000):
        if unicodedata.category(chr(code))[0] == "M":
            if ranges and ranges[-1][1] == code - 1:
                ranges[-1][1] = code
            else:
                ranges.append([code, code])
    marks = "".join(f"{re.escape(chr(low))}-{re.escape(chr(high))}" for low, high in ranges)
    word = rf"\w[\w{marks}]*"
    return re.compile(rf"{word}(?:(?:\.|/|::|\\){word})*")


def _char_classes(word: str) -> str:
    """``word``'s characters as their classes (see _CLASS_PARTS); a combining
    mark takes its letter's class (lower case after a capital)."""
    classes = []
    for char in word:
        if _NO_SPACE_CHAR.match(char):
            classes.append("c")
        elif char.isdigit():
            classes.append("0")
        elif char.isupper() or char.istitle():
            classes.append("A")
        elif char.islower():
            classes.append("a")
        elif char.isalpha() or char.isnumeric():
            classes.append("o")
        elif unicodedata.category(char)[0] == "M" and classes:
            previous = classes[-1]
            classes.append("a" if previous == "A" else previous)
        else:
            classes.append("-")  # a mark opening the word: part of no word
    return "".join(classes)


def _unicode_word_parts(word: str) -> list[tuple[str, bool]]:
    """A non-ASCII word's parts, case-folded, each with whether it is a
    bigram (or a lone character) of a script without spaces."""
    parts: list[tuple[str, bool]] = []
    for piece in word.split("_"):
        # Marks in a script without spaces (Thai vowel signs) are left out of
        # its bigrams: the full-text tokenizer splits words at marks.
        piece = "".join(char for char in piece if not (
            _NO_SPACE_CHAR.match(char) and unicodedata.category(char)[0] == "M"))
        classes = _char_classes(piece)
        for found in _CLASS_PARTS.finditer(classes):
            if found.group(0)[0] == "c":
                run = piece[found.start():found.end()]
                parts.extend(((run[i:i + 2], True) for i in range(len(run) - 1)) if len(run) > 1
                             else [(run, True)])
            else:
                parts.append((piece[found.start():found.end()].casefold(), False))
    return parts


def _unicode_word_tokens(word: str) -> list[str]:
    """One word of a non-ASCII compound: as _compound_tokens reads an ASCII
    word (the word whole when it has several parts, then its parts), stems
    for ASCII parts only. A word over MAX_TOKEN_CHARS still gives its bigrams:
    a long run without spaces is a sentence, not a hash."""
    if word.isascii():
        return _ascii_word_tokens(word)
    if len(word) > MAX_TOKEN_CHARS and not _NO_SPACE_CHAR.search(word):
        return []
    parts = _unicode_word_parts(word)
    if len(word) > MAX_TOKEN_CHARS:
        return [part for part, no_space in parts if no_space]
    folded = word.casefold()
    stems = [stem(part) if part.isascii() else part for part, _ in parts]
    if len(parts) > 1 or (parts and parts[0][0] != folded):
        return [folded, *stems]
    return stems


def _ascii_word_tokens(word: str) -> list[str]:
    if len(word) > MAX_TOKEN_CHARS:
        return []
    lowered = word.lower()
    parts = _word_parts(word)
    if len(parts) > 1 or (parts and parts[0] != lowered):
        return [lowered, *(stem(part) for part in parts)]
    return [stem(lowered)]


def expand_tokens(text: str) -> list[str]:
    """All index tokens of ``text``: compound identifiers whole (lower-cased),
    followed by their words' stems."""
    out: list[str] = []
    if text.isascii():
        _add_ascii_tokens(text, 0, len(text), out)
        return out
    position, size = 0, len(text)
    while position < size:
        found = _NON_ASCII.search(text, position)
        if found is None:
            _add_ascii_tokens(text, position, size, out)
            break
        # Lines holding non-ASCII text take the Unicode path, the ASCII lines
        # around them the ASCII one (a compound never spans lines; a source
        # file's one `©` leaves the rest of it on the fast path).
        newline = text.rfind("\n", position, found.start())
        start = newline + 1 if newline >= 0 else position
        _add_ascii_tokens(text, position, start, out)
        end = text.find("\n", found.end())
        while end >= 0:
            following = _NON_ASCII.search(text, end)
            if following is None or text.find("\n", end + 1, following.start()) >= 0:
                break
            end = text.find("\n", following.end())
        end = size if end < 0 else end
        for compound in _unicode_compound().findall(unicodedata.normalize("NFKC", text[start:end])):
            out.extend(_compound_tokens(compound))
        position = end
    return out


def _add_ascii_tokens(text: str, start: int, end: int, out: list[str]) -> None:
    for compound in _COMPOUND.findall(text, start, end):
        out.extend(_compound_tokens(compound))


# A run of word characters that may hold a word over MAX_TOKEN_CHARS (its cheap pre-test).
_LONG_RUN = re.compile(r"\w{%d,}" % (MAX_TOKEN_CHARS + 1))
_LETTERS = "abcdefghijklmnopqrstuvwxyz"
LONG_WORD_PREFIX = "longword"


def long_words(text: str) -> list[str]:
    """The words of ``text`` that expand_tokens leaves out as too long
    (over MAX_TOKEN_CHARS: a digest, a long generated name), folded as
    names are compared, in order. Runs of a script without spaces are not
    among them (they give their bigrams)."""
    if not _LONG_RUN.search(text):
        return []
    found: list[str] = []
    compounds = (_COMPOUND.findall(text) if text.isascii()
                 else _unicode_compound().findall(unicodedata.normalize("NFKC", text)))
    for compound in compounds:
        for word in _PART_SPLIT.split(compound):
            if len(word) > MAX_TOKEN_CHARS and not _NO_SPACE_CHAR.search(word):
                found.append(fold(word))
    return found


def long_word_stand_in(word: str) -> str:
    """One index token standing for a long word (``long_words``): a fixed
    prefix and 20 letters of the word's digest (94 bits), lower-case letters
    only so that expand() keeps it one token. Written memory indexes and
    queries it (file recall does not), so a fact is found by its digest."""
    digest = int.from_bytes(hashlib.blake2b(word.encode("utf-8", "surrogatepass"),
                                            digest_size=12).digest(), "big")
    letters = []
    for _ in range(20):
        digest, index = divmod(digest, 26)
        letters.append(_LETTERS[index])
    return LONG_WORD_PREFIX + "".join(letters)


def memory_index_text(text: str) -> str:
    """What memory's full text reads of a row's text (both backends): a
    stand-in token for each word expand() leaves out as too long (a digest,
    a long name; file recall leaves them out), then the text. First, so
    that a cap on what is read never drops them."""
    stand_ins = " ".join(long_word_stand_in(word) for word in long_words(text))
    return f"{stand_ins}\n{text}" if stand_ins else text


def fold(text: str) -> str:
    """``text`` as names are compared: NFKC-normalised and case-folded (NFC,
    NFD and full-width forms of one name agree); plain ``lower()`` for ASCII."""
    return text.lower() if text.isascii() else unicodedata.normalize("NFKC", text).casefold()


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
