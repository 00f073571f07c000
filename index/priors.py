"""Ranking priors: what a code-search user wants besides the text match.

Each prior is one small function with its constants beside it and a comment
on why; ``rerank`` applies them to a query's scored candidates (BM25 or
hybrid, any positive scale) and picks the top ``n``:

1. path priors (multiplicative): tests, examples, compatibility copies,
   vendored or generated code, ``.d.ts`` stubs, re-export barrels and
   localized message tables rank below the code they test, copy, re-export
   or translate, unless the query asks for them ("the test for ...");
2. chunk priors: a 1-2-line chunk is rarely what anyone wants, and module
   residue (imports, a file's doc header) is evidence for its file but is
   shown after the file's code;
3. a definition boost (additive, a share of the best score): for a query
   that names a symbol, the chunk that defines it first (a class before its
   methods, a trait before its ``impl``s), found in the symbol table even
   when the text match missed it; identifiers embedded in a sentence get
   half of it, shared among the files that define them;
4. a file-name boost for sentence queries whose words name the file or its
   folder;
5. per-file saturation while selecting: each further hit from a file that
   already has one is worth less, so one file cannot fill the list.

The constants were chosen on the multi-language dev set (bench/codesearch.py,
docs/decisions.md, "Chunk packing and ranking priors"); docs/architecture.md lists them.
"""

from __future__ import annotations

import functools
import posixpath
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

from ctxls.index.paths import is_example_path, is_generated_path, is_test_path, is_vendored_path
from ctxls.index.store import Connection, connection_cache, paths_generation
from ctxls.index.tokenize import FILE_NAME_STOPWORDS

if TYPE_CHECKING:
    from ctxls.index.ranking import ScoredChunk


@dataclass(frozen=True)
class PriorConfig:
    # Multiplicative path penalties (1.0 = off).
    test_penalty: float = 0.3
    example_penalty: float = 0.3
    compat_penalty: float = 0.3
    vendored_penalty: float = 0.3
    # Re-export barrels (`__init__.py`, `index.ts`, `mod.rs`): often only
    # re-exports, but Rust's `mod.rs` and many `__init__.py` hold real code,
    # which a header no longer outranks (module_after_code). 0.7 over 0.5:
    # files set 0.830 -> 0.831, set 4 by file test 0.849 -> 0.856 (1.0: the
    # files set loses 0.002, rayon 0.917 -> 0.905; docs/decisions.md, "Barrel files × 0.7").
    barrel_penalty: float = 0.7
    stub_penalty: float = 0.7
    # Localized message tables (zod's `locales/en.ts`, date libraries'
    # `locale/`): every message again in forty languages, a flood for any
    # question about messages or errors.
    locale_penalty: float = 0.5
    # A 1-2-line chunk in a file that has more to offer.
    tiny_penalty: float = 0.5
    # Module residue (imports, a module's doc header, constants) names what
    # the file is about: it counts in full for its file's place, but within
    # the file the best code chunk is shown in its place (_module_after_code).
    # A 0.7 penalty on it instead lost 0.008 on every file-scored set, held-out
    # projects included, and 0.002-0.005 by chunk (docs/decisions.md, "Module residue places its file").
    module_after_code: bool = True
    # Additive boosts, as shares of the best candidate's score.
    definition_boost: float = 3.0
    embedded_share: float = 0.5  # identifiers inside a sentence
    word_share: float = 0.5  # a one-word lower-case query: a word, or a name
    file_name_boost: float = 0.5
    # Sentence queries: the whole file's BM25 (ranking.file_bm25), scaled to
    # the best candidate file's, added to each candidate file's best chunk
    # after the path priors (as a share of the best score then).
    file_text_boost: float = 0.2
    # Per-file saturation: hits of one file beyond the threshold-th are
    # multiplied by decay ** (count - threshold + 1), so the list names more
    # places. On the hand-written, file-scored set (eleven projects) 1 / 0.5
    # scores 0.770 / 0.787 lexical / hybrid against 0.749 / 0.765 for the
    # former 3 / 0.7; the generated set scored by chunk loses 0.044 (its
    # several-target queries often live in one file), by file it gains 0.005.
    # The independent evaluation scores files.
    saturation_threshold: int = 1
    saturation_decay: float = 0.5
    # File coherence: a file with several matching chunks is more likely the
    # place; its best chunk gains this share of the best score, scaled by the
    # file's summed candidate score against the top file's.
    coherence_boost: float = 0.5
    # Files named by a sentence query's words whose chunks join the candidates
    # even when the text match ranked none of them high (``BooleanUtils.java``
    # for "boolean conversion helpers"): at most this many files.
    named_files: int = 5
    # How many definitions of a named symbol are fetched from the symbol table.
    max_definitions: int = 20
    # The definition boost's share for a shorter namesake of the same symbol in
    # the same file (a TypeScript overload signature beside its implementation).
    signature_share: float = 0.5
    # A type named inside a sentence ("Returns whether the JoinSet is empty")
    # lends this share of its boost to its members' chunks (`JoinSet.is_empty`),
    # so the sentence's other words choose among the type and its methods; with
    # the type alone boosted, its definition outranked the method described
    # (set 4 by chunk, hybrid: dev 0.588 -> 0.598, test 0.626 -> 0.634).
    member_share: float = 1.0


NO_PRIORS = PriorConfig(test_penalty=1.0, example_penalty=1.0, compat_penalty=1.0, locale_penalty=1.0,
                        vendored_penalty=1.0, barrel_penalty=1.0, stub_penalty=1.0,
                        tiny_penalty=1.0, module_after_code=False, definition_boost=0.0,
                        file_name_boost=0.0, file_text_boost=0.0, coherence_boost=0.0, named_files=0,
                        saturation_decay=1.0)


# --- the query -----------------------------------------------------------------

# A query that is one symbol: qualified (a.b, A::b, a->b, A#b), or an
# identifier with a capital, an underscore or a digit after its first
# character, or a leading underscore. A plain lowercase word ("session") may be
# a word or a name: it gets the embedded share.
_SYMBOL_QUERY = re.compile(
    r"[A-Za-z_$][\w$]*(?:(?:::|->|[.#\\])[A-Za-z_$][\w$]*)+(?:\(\))?"
    r"|_[\w$]*(?:\(\))?"
    r"|[A-Za-z$][\w$]*[A-Z_0-9][\w$]*(?:\(\))?"
    r"|[A-Z][\w$]*(?:\(\))?")
_PLAIN_WORD = re.compile(r"[a-z][a-z0-9]*")
# Identifiers inside a sentence: CamelCase, camelCase, snake_case, dotted.
_EMBEDDED_SYMBOL = re.compile(
    r"(?<![\w.])(?:"
    r"[A-Za-z_][\w]*(?:(?:::|\.)[A-Za-z_]\w*)+"
    r"|[A-Z][a-z0-9]+[A-Z]\w*"
    r"|[a-z][a-z0-9]*[A-Z]\w*"
    r"|[a-z][a-z0-9]*_\w+"
    r")(?![\w])")
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9]+")

_TEST_WORDS = frozenset({"test", "tests", "testing", "spec", "specs", "fixture", "fixtures",
                         "mock", "mocks", "unittest", "benchmark", "benchmarks"})
_EXAMPLE_WORDS = frozenset({"example", "examples", "demo", "demos", "sample", "samples",
                            "tutorial"})
_LOCALE_WORDS = frozenset({"locale", "locales", "translation", "translations", "translate",
                           "language", "languages", "i18n", "l10n", "localization", "localized"})
_COMPAT_WORDS = frozenset({"compat", "compatibility", "legacy", "deprecated", "old", "v1",
                           "backport", "shim"})


@dataclass(frozen=True)
class QueryShape:
    symbol: str | None  # the whole query, when it is one symbol
    word: str | None  # the whole query, when it is one lower-case word
    embedded: tuple[str, ...]  # identifiers inside a sentence
    words: frozenset[str]  # content words as written (camelCase kept), for file-name matches
    wants_tests: bool
    wants_examples: bool
    wants_compat: bool
    wants_locales: bool


@functools.lru_cache(maxsize=256)
def query_shape(query: str) -> QueryShape:
    text = query.strip()
    found = _WORD.findall(text)
    words = {word.lower() for word in found}
    symbol = text.removesuffix("()") if _SYMBOL_QUERY.fullmatch(text) else None
    word = text if symbol is None and _PLAIN_WORD.fullmatch(text) else None
    embedded: tuple[str, ...] = ()
    if symbol is None and word is None:
        embedded = tuple(dict.fromkeys(_EMBEDDED_SYMBOL.findall(text)))
    return QueryShape(symbol, word, embedded,
                      frozenset(w for w in dict.fromkeys(found) if w.lower() not in FILE_NAME_STOPWORDS),
                      bool(words & _TEST_WORDS), bool(words & _EXAMPLE_WORDS),
                      bool(words & _COMPAT_WORDS), bool(words & _LOCALE_WORDS))


# --- path priors -----------------------------------------------------------------

_COMPAT_DIR = re.compile(r"(?:^|/)(?:_?compat|legacy|deprecated|backports?|old|obsolete)(?:/|$)"
                         r"|(?:^|/)[^/]*_(?:compat|legacy|deprecated)(?:\.[^/]*)?$")
_LOCALE_DIR = re.compile(r"(?:^|/)(?:locales?|translations?|l10n)(?:/|$)")
_VERSION_DIR = re.compile(r"(?:^|/)v(\d+)(?=/)")
_BARRELS = frozenset({"__init__.py", "index.ts", "index.js", "index.mjs", "index.tsx",
                      "package-info.java", "mod.rs", "lib.rs", "doc.go"})


class _PathClass(NamedTuple):
    test: bool
    example: bool
    compat: bool
    vendored: bool
    stub: bool
    barrel: bool
    locale: bool


@functools.lru_cache(maxsize=16384)
def _path_class(path: str) -> _PathClass:
    """What a path is, once per path (recall meets the same paths again and again)."""
    return _PathClass(is_test_path(path), is_example_path(path),
                      _COMPAT_DIR.search(path) is not None,
                      is_vendored_path(path) or is_generated_path(path),
                      path.endswith(".d.ts"), posixpath.basename(path) in _BARRELS,
                      _LOCALE_DIR.search(path) is not None)


def _path_prior(path: str, shape: QueryShape, newer_version: bool, config: PriorConfig) -> float:
    kind = _path_class(path)
    prior = 1.0
    if kind.test and not shape.wants_tests:
        prior *= config.test_penalty
    if kind.example and not shape.wants_examples:
        prior *= config.example_penalty
    if (kind.compat or newer_version) and not shape.wants_compat:
        prior *= config.compat_penalty
    if kind.vendored:
        prior *= config.vendored_penalty
    if kind.stub:
        prior *= config.stub_penalty
    if kind.barrel:
        prior *= config.barrel_penalty
    if kind.locale and not shape.wants_locales:
        prior *= config.locale_penalty
    return prior


def _superseded_paths(paths: set[str], indexed: Callable[[], dict[str, int]]) -> set[str]:
    """Paths under a ``vN/`` folder that an older major version kept beside
    the current code: a sibling ``vM/`` (M > N) is also among ``paths``
    (zod's ``v3/`` beside ``v4/``), or the same file exists outside the
    version folder among ``indexed()``'s paths (pydantic's
    ``pydantic/v1/main.py`` beside ``pydantic/main.py``); ``indexed`` is
    asked only when a path has such a folder."""
    newest: dict[str, int] = {}
    located: dict[str, tuple[str, int]] = {}
    copies: set[str] = set()
    known: dict[str, int] | None = None  # indexed(), once
    for path in paths:
        for match in _VERSION_DIR.finditer(path):
            prefix, version = path[:match.start()], int(match.group(1))
            newest[prefix] = max(newest.get(prefix, -1), version)
            located[path] = (prefix, version)
            outside = f"{prefix}/{path[match.end() + 1:]}" if prefix else path[match.end() + 1:]
            known = indexed() if known is None else known
            if outside in known:
                copies.add(path)
    return copies | {path for path, (prefix, version) in located.items() if version < newest[prefix]}


# --- boosts ------------------------------------------------------------------------

_TYPE_KINDS = frozenset({"class", "struct", "trait", "interface", "enum", "type", "union",
                         "protocol", "record", "module", "namespace", "object", "typedef"})
_IMPL_KINDS = frozenset({"impl", "extension"})


def _definition_tier(symbol: str, symbol_kind: str, asked: str) -> float:
    """How well a definition answers a query naming ``asked``: 1 for the exact
    (qualified) name in its case, less for a case-insensitive match, an
    ``impl`` block or a member of a type whose name matched."""
    last = symbol.rsplit(".", 1)[-1]
    asked_last = re.split(r"::|->|[.#\\]", asked)[-1]
    qualified = "." in asked or "::" in asked or "->" in asked or "#" in asked
    if qualified:
        normal = re.sub(r"::|->|#|\\", ".", asked)
        tier = 1.0 if symbol == normal or symbol.endswith("." + normal) else 0.5
    else:
        tier = 1.0
    if last != asked_last:
        tier *= 0.6  # same name, other case: `session()` for `Session`
    if symbol_kind in _IMPL_KINDS:
        tier *= 0.4
    elif symbol_kind not in _TYPE_KINDS and asked_last[:1].isupper():
        tier *= 0.8  # a capitalised name is more often a type than a function
        segments = symbol.split(".")
        if len(segments) > 1 and segments[-2] == last:
            tier *= 0.5  # a constructor (`Validate.Validate`): the class was asked for
    return tier


def _definitions(conn: Connection, kind: str, name: str, limit: int
                 ) -> list[tuple[int, str, str]]:
    """(chunk id, symbol, symbol kind) of the chunks holding a definition named
    ``name`` (the last segment, any case)."""
    last = re.split(r"::|->|[.#\\]", name)[-1].lower()
    return conn.execute(
        "SELECT c.id, s.symbol, s.symbol_kind, s.file_id, s.end_line - s.start_line FROM symbols s "
        "JOIN chunks c ON c.file_id = s.file_id AND c.start_line <= s.start_line "
        "AND s.start_line <= c.end_line "
        "WHERE s.name = ? AND c.kind = ? GROUP BY s.file_id, s.symbol, s.start_line LIMIT ?",
        (last, kind, limit)).fetchall()


def _member_chunks(conn: Connection, kind: str, file_id: int, symbol: str) -> list[int]:
    """The chunks of ``kind`` holding a definition of a member of the type
    ``symbol`` in its file (`JoinSet.is_empty` for `JoinSet`)."""
    prefix = symbol + "."
    return [row[0] for row in conn.execute(
        "SELECT DISTINCT c.id FROM symbols s JOIN chunks c ON c.file_id = s.file_id "
        "AND c.start_line <= s.start_line AND s.start_line <= c.end_line "
        "WHERE s.file_id = ? AND substr(s.symbol, 1, ?) = ? AND c.kind = ?",
        (file_id, len(prefix), prefix, kind))]


@functools.lru_cache(maxsize=16384)
def _path_words(path: str) -> frozenset[str]:
    """The words of a file's stem and its folder's name (3+ letters, lower case)."""
    stem = posixpath.splitext(posixpath.basename(path))[0]
    folder = posixpath.basename(posixpath.dirname(path))
    words = set()
    for part in (stem, folder):
        for piece in re.split(r"[^A-Za-z0-9]+|(?<=[a-z0-9])(?=[A-Z])", part):
            if len(piece) > 2:
                words.add(piece.lower())
    return frozenset(words)


_CAMEL_PART = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")


@functools.lru_cache(maxsize=4096)
def _word_forms(word: str) -> frozenset[str]:
    """A query word and, for a camelCase one, its parts of 3+ letters
    (``toString`` names ``ToStringBuilder.java`` through ``string``)."""
    parts = {part.lower() for part in _CAMEL_PART.findall(word) if len(part) > 2}
    return frozenset({word.lower(), *parts})


class _PathWordIndex:
    """Every indexed file's path words (stem and folder), inverted: the files
    a query word names are found by lookups, not by a scan of all paths."""

    def __init__(self, rows: list[tuple[int, str]]) -> None:
        self.exact: dict[str, set[int]] = {}
        # The first four letters of each 4+-letter word -> {word: files}, for
        # files_naming's shared-prefix rule.
        self.by_prefix: dict[str, dict[str, set[int]]] = {}
        self.size: dict[int, int] = {}
        self.ids: dict[str, int] = {}
        # One recall asks twice (named_files, then the file-name boost).
        self._counts: dict[frozenset[str], dict[int, int]] = {}
        for file_id, path in rows:
            self.ids[path] = file_id
            parts = _path_words(path)
            self.size[file_id] = len(parts)
            for part in parts:
                self.exact.setdefault(part, set()).add(file_id)
                if len(part) >= 4:
                    self.by_prefix.setdefault(part[:4], {}).setdefault(part, set()).add(file_id)

    def files_naming(self, word: str) -> set[int]:
        """The files whose path words the query word names: equal, or sharing a
        prefix of 4+ letters (``dependency`` / ``dependencies``)."""
        files: set[int] = set()
        for form in _word_forms(word):
            files |= self.exact.get(form, set())
            if len(form) >= 4:
                for part, ids in self.by_prefix.get(form[:4], {}).items():
                    if part.startswith(form) or form.startswith(part):
                        files |= ids
        return files

    def name_counts(self, words: frozenset[str]) -> dict[int, int]:
        """file id -> how many of ``words`` name it (files naming none are absent)."""
        counts = self._counts.get(words)
        if counts is None:
            counts = {}
            for word in words:
                for file_id in self.files_naming(word):
                    counts[file_id] = counts.get(file_id, 0) + 1
            if len(self._counts) >= 64:
                self._counts.clear()
            self._counts[words] = counts
        return counts


def _path_index(conn: Connection) -> _PathWordIndex:
    """The connection's _PathWordIndex, rebuilt when a file was added or
    removed since it was built (not after every commit: an edit, a new vector
    or the demand log leave every path as it was)."""
    return connection_cache(conn, "path words", paths_generation, lambda c: _PathWordIndex(
        c.execute("SELECT id, path FROM files").fetchall()))


def named_files(conn: Connection, query: str, config: PriorConfig) -> list[int]:
    """Ids of the files a sentence query names best: those whose stem or
    folder words name the most query words (at least one), fewer words in the
    name first, at most ``config.named_files``; none for a symbol query,
    which the definition boost serves."""
    shape = query_shape(query)
    if config.named_files <= 0 or shape.symbol or shape.word or not shape.words:
        return []
    index = _path_index(conn)
    named = index.name_counts(shape.words)
    ranked = sorted(named, key=lambda file_id: (-named[file_id], index.size[file_id], file_id))
    return ranked[:config.named_files]


# --- the whole ------------------------------------------------------------------------

def rerank(conn: Connection, kind: str, query: str, hits: list["ScoredChunk"], n: int,
           config: PriorConfig, fetch_rows, file_scores=None) -> list["ScoredChunk"]:
    """The best ``n`` of ``hits`` after the priors. ``fetch_rows(ids)`` turns
    chunk ids found through the symbol table into ScoredChunks (score 0);
    ``file_scores(paths)`` gives whole files' text scores (path -> score)."""
    if not hits and config.definition_boost <= 0:
        return []
    shape = query_shape(query)
    best = max((hit.score for hit in hits), default=0.0) or 1.0
    by_id = {hit.chunk_id: hit for hit in hits}
    named = [shape.symbol or shape.word] if shape.symbol or shape.word else list(shape.embedded)
    if config.definition_boost > 0 and named:
        share = 1.0 if shape.symbol else config.word_share if shape.word else config.embedded_share
        unit = best * config.definition_boost * share
        boosts: dict[int, float] = {}
        for name in named:
            found = _definitions(conn, kind, name, config.max_definitions)
            # Several definitions of one symbol in one file are overloads or a
            # declaration and its definition: the longest has the body.
            longest: dict[tuple[int, str], int] = {}
            for _, symbol, _, file_id, span in found:
                longest[(file_id, symbol)] = max(longest.get((file_id, symbol), 0), span)
            # A name inside a sentence is weaker evidence the more files define
            # it ("toString builder for …" names twenty `toString`s, none of
            # them the place): its boost is shared among those files.
            defining_files = len({file_id for file_id, _ in longest})
            share_of_name = 1.0 / max(1, defining_files) if shape.embedded else 1.0
            for chunk_id, symbol, symbol_kind, file_id, span in found:
                tier = _definition_tier(symbol, symbol_kind, name) * share_of_name
                if span < longest[(file_id, symbol)]:
                    tier *= config.signature_share
                boosts[chunk_id] = max(tier, boosts.get(chunk_id, 0.0))
                if shape.embedded and config.member_share > 0 and symbol_kind in _TYPE_KINDS:
                    # Only members the text match found: the others hold none of
                    # the sentence's other words (fetching them changed no
                    # ranking of either set, for up to 58 rows a query on django).
                    for member in _member_chunks(conn, kind, file_id, symbol):
                        if member in by_id:
                            boosts[member] = max(tier * config.member_share, boosts.get(member, 0.0))
        missing = [cid for cid in boosts if cid not in by_id]
        for hit in fetch_rows(missing):
            by_id[hit.chunk_id] = hit
        # A file named after the symbol is its home (`session.py` for Session).
        homes = {re.split(r"::|->|[.#\\]", name)[-1].lower().replace("_", "") for name in named}
        for chunk_id, tier in boosts.items():
            if chunk_id in by_id:
                hit = by_id[chunk_id]
                stem = posixpath.splitext(posixpath.basename(hit.path))[0].replace("_", "").lower()
                hit.score += unit * tier * (1.5 if stem in homes else 1.0)
    if config.file_name_boost > 0 and shape.symbol is None and shape.word is None and shape.words:
        unit = best * config.file_name_boost
        index = _path_index(conn)
        named = index.name_counts(shape.words)
        for hit in by_id.values():
            count = named.get(index.ids.get(hit.path, -1), 0)
            if count:
                hit.score += unit * count / len(shape.words)
    if config.coherence_boost > 0 and by_id:
        _boost_coherent_files(list(by_id.values()), best * config.coherence_boost)
    superseded = _superseded_paths({hit.path for hit in by_id.values()}, lambda: _path_index(conn).ids)
    priors: dict[str, float] = {}
    for hit in by_id.values():
        if hit.path not in priors:
            priors[hit.path] = _path_prior(hit.path, shape, hit.path in superseded, config)
        hit.score *= priors[hit.path]
        if hit.end_line - hit.start_line < 2 and hit.symbol_kind != "window":
            hit.score *= config.tiny_penalty
    if config.file_text_boost > 0 and file_scores is not None and by_id \
            and shape.symbol is None and shape.word is None:
        _boost_files_by_text(list(by_id.values()), file_scores, priors, config.file_text_boost)
    if config.module_after_code:
        _module_after_code(list(by_id.values()))
    return _saturated_top(list(by_id.values()), n, config)


def _module_after_code(hits: list["ScoredChunk"]) -> None:
    """Within each file, its best code chunk takes the place of module residue
    that scored above it (the two swap scores): the header is evidence for
    the file, the code is what to show first."""
    best_module: dict[str, "ScoredChunk"] = {}
    best_code: dict[str, "ScoredChunk"] = {}
    for hit in hits:
        best = best_module if hit.symbol_kind == "module" else best_code
        if hit.path not in best or hit.score > best[hit.path].score:
            best[hit.path] = hit
    for path, module in best_module.items():
        code = best_code.get(path)
        if code is not None and module.score > code.score:
            module.score, code.score = code.score, module.score


def _best_of_each_file(hits: list["ScoredChunk"]) -> dict[str, "ScoredChunk"]:
    file_best: dict[str, "ScoredChunk"] = {}
    for hit in hits:
        if hit.path not in file_best or hit.score > file_best[hit.path].score:
            file_best[hit.path] = hit
    return file_best


# How many leading files file_text_boost reads the whole text of: 15, 20, 30
# or all of them rank the files set the same.
FILE_TEXT_CANDIDATES = 20


def _boost_files_by_text(hits: list["ScoredChunk"], file_scores, priors: dict[str, float],
                         share: float) -> None:
    """Each file's best chunk gains ``share`` of the best score, scaled by
    the whole file's text score times its path prior against the best such
    product. After the priors: the files set gained 0.012 hybrid this way,
    0.006 when added before them."""
    file_best = _best_of_each_file(hits)
    # Only the leading files can reach the list (the share is a fifth of the
    # best score); each file read costs a few hundredths of a millisecond.
    leaders = sorted(file_best, key=lambda path: -file_best[path].score)[:FILE_TEXT_CANDIDATES]
    scores = {path: priors[path] * score for path, score in file_scores(set(leaders)).items()}
    top = max(scores.values(), default=0.0)
    if top > 0:
        unit = share * max(hit.score for hit in hits) / top
        for path, hit in file_best.items():
            hit.score += unit * scores.get(path, 0.0)


def _boost_coherent_files(hits: list["ScoredChunk"], unit: float) -> None:
    file_sum: dict[str, float] = {}
    for hit in hits:
        file_sum[hit.path] = file_sum.get(hit.path, 0.0) + hit.score
    file_best = _best_of_each_file(hits)
    top = max(file_sum.values()) or 1.0
    for path, hit in file_best.items():
        hit.score += unit * file_sum[path] / top


def _long_definitions(hits: list["ScoredChunk"]) -> dict[int, int]:
    """id(hit) -> the first line of the run of overlapping hits of its file it
    belongs to. Chunks of one file overlap only when they are windows of one
    long definition (chunker.MAX_CHUNK_LINES), so a run is one definition."""
    run_of: dict[int, int] = {}
    run_start = run_end = -1
    path = None
    for hit in sorted(hits, key=lambda h: (h.path, h.start_line)):
        if hit.path != path or hit.start_line > run_end:
            path, run_start, run_end = hit.path, hit.start_line, hit.end_line
        run_end = max(run_end, hit.end_line)
        run_of[id(hit)] = run_start
    return run_of


def _saturated_top(hits: list["ScoredChunk"], n: int, config: PriorConfig) -> list["ScoredChunk"]:
    """Greedy top ``n`` with per-file saturation. Decay only lowers scores and
    candidates come in descending order, so once ``n`` are held a candidate
    that cannot beat the weakest ends the scan."""
    definition = _long_definitions(hits)
    hits.sort(key=lambda h: (-h.score, h.path, h.start_line))
    taken: list["ScoredChunk"] = []
    listed: set[tuple[str, int]] = set()
    per_file: dict[str, int] = {}
    floor = float("-inf")
    for hit in hits:
        if len(taken) >= n and hit.score < floor:
            break
        # A long definition's best window stands for it.
        if (hit.path, definition[id(hit)]) in listed:
            continue
        listed.add((hit.path, definition[id(hit)]))
        seen = per_file.get(hit.path, 0)
        if seen >= config.saturation_threshold:
            hit.score *= config.saturation_decay ** (seen - config.saturation_threshold + 1)
        per_file[hit.path] = seen + 1
        taken.append(hit)
        if len(taken) >= n:
            floor = sorted((h.score for h in taken), reverse=True)[n - 1]
    taken.sort(key=lambda h: (-h.score, h.path, h.start_line))
    return taken[:n]
