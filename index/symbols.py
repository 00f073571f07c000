"""Definitions by name, a file's outline, code related to a location, and the
definitions a chunk holds: all read from the symbol table (``symbols``: one
row per definition the chunker found, whatever chunk packing put it in), so
they work alike for every language the chunker reads.

Pointers name a definition's own lines: ``start_line`` (its leading comments
and decorators included) through ``end_line`` (the last row of the whole
definition, a container's members included), and ``line``, the row of its
name (`def`, `class`, `fn` …).
"""

from __future__ import annotations

import functools
import re
import unicodedata
from dataclasses import dataclass, field, replace
from typing import Iterable

import numpy as np

from ctxls.index.errors import InvalidParams
from ctxls.index.model import line_end_character, split_symbol
from ctxls.index.paths import is_test_path
from ctxls.index.ranking import RankingConfig, ScoredChunk, _chunks_by_id, _scored, bm25_scores
from ctxls.index.recall_features import declared_modules
from ctxls.index.semantic import SemanticIndex
from ctxls.index.store import FOLD_SQL, FTS_TABLE_BY_KIND, Connection
from ctxls.index.query import dotted_name, name_key, names_definition, query_shape
from ctxls.index.tokenize import fold, query_terms
from ctxls.index.vocabulary import MAX_NAME_CHARS, MAX_RELATED_N, MAX_SYMBOLS_N

# How a name query matches a definition, the closest first.
MATCHES = ("exact", "prefix", "substring", "fuzzy")
SCORE_BY_MATCH = {"exact": 1.0, "prefix": 0.75, "substring": 0.5, "fuzzy": 0.25}
# Related code by words: at most this many of the chunk's distinct identifiers.
RELATED_TERMS = 64

_COLUMNS = ("f.path, s.symbol, s.symbol_kind, s.start_line, s.line, s.body_end")


@dataclass
class Definition:
    symbol: str  # qualified: Session.request
    kind: str  # function | method | class | …
    path: str
    start_line: int  # first row, leading comments and decorators included
    end_line: int  # last row of the whole definition
    line: int  # the row of its name
    match: str | None = None  # how a name query matched it (MATCHES)
    score: float = 0.0
    children: list["Definition"] = field(default_factory=list)  # outline only

    @property
    def name(self) -> str:
        return split_symbol(self.symbol)[1]

    @property
    def container(self) -> str | None:
        return split_symbol(self.symbol)[0]


def name_as_written(text: str) -> str:
    """A name as a person or an agent writes it: trimmed, and a call's
    ``()`` dropped (``Session.request()`` is ``Session.request``)."""
    name = text.strip()
    if name.endswith("()"):
        name = name[:-2].rstrip() or name
    return name


def _definition(row) -> Definition:
    return Definition(row[1], row[2], row[0], row[3], row[5], row[4])


# -- definitions by name ------------------------------------------------------------------------

def find_definitions(conn: Connection, query: str, match: str = "fuzzy",
                     kinds: list[str] | None = None, limit: int = 50) -> list[Definition]:
    """Definitions named like ``query`` (a name or a qualified tail,
    ``Session.request``; any case), matched at most as loosely as ``match``
    (exact < prefix < substring < fuzzy, fuzzy being the name's letters in
    order: ``gsn`` finds ``get_session_name``), best first: the closer
    match, a name of the query's own case, code outside tests, the shorter
    name, then path and line."""
    if match not in MATCHES:
        raise InvalidParams("match", f"must be one of {', '.join(MATCHES)}")
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_SYMBOLS_N:
        raise InvalidParams("limit", f"must be an integer from 1 to {MAX_SYMBOLS_N}")
    written = name_as_written(query) if isinstance(query, str) else ""
    if not written:
        raise InvalidParams("query", "must be a non-empty string")
    if len(written) > MAX_NAME_CHARS:
        raise InvalidParams("query", f"must be a name of at most {MAX_NAME_CHARS} characters")
    # `A::b`, `A#b` as `a.b`, as recall reads them (asked_names).
    written = dotted_name(written)
    needle = fold(written)
    if kinds is not None and not all(isinstance(kind, str) for kind in kinds):
        raise InvalidParams("kind", "must be a kind or a list of kinds (function, class, …)")
    allowed = MATCHES[:MATCHES.index(match) + 1]
    kind_sql, kind_args = "", []
    if kinds:
        kind_sql = f" AND s.symbol_kind IN ({','.join('?' * len(kinds))})"
        kind_args = list(kinds)
    escaped = _like_escaped(needle)
    qualified = "." in needle
    # The name column is the last segment, lower-cased; a dotted query is
    # matched against the qualified symbol's tail. SQLite's lower() and LIKE
    # fold ASCII only: a needle in another script is compared with names
    # folded as it is (tokenize.fold: any case, NFC or NFD alike).
    name, symbol = "s.name", "lower(s.symbol)"
    if not needle.isascii():
        name, symbol = _folded("s.name"), _folded("s.symbol")
    if qualified:
        exact = f"({symbol} = ? OR {symbol} LIKE ? ESCAPE '\\')"
        exact_args = [needle, "%." + escaped]
        prefix = f"({symbol} LIKE ? ESCAPE '\\' OR {symbol} LIKE ? ESCAPE '\\')"
        prefix_args = [escaped + "%", "%." + escaped + "%"]
    else:
        exact, exact_args = f"{name} = ?", [needle]
        prefix, prefix_args = f"{name} LIKE ? ESCAPE '\\'", [escaped + "%"]
    tiers = [("exact", exact, exact_args), ("prefix", prefix, prefix_args),
             ("substring", f"instr({symbol}, ?) > 0", [needle])]
    found: dict[tuple[str, str, int], Definition] = {}
    for tier, condition, args in tiers:
        if tier not in allowed:
            break
        rows = conn.execute(
            f"SELECT {_COLUMNS} FROM symbols s JOIN files f ON f.id = s.file_id "
            f"WHERE {condition}{kind_sql} ORDER BY length(s.symbol), f.path, s.start_line LIMIT ?",
            [*args, *kind_args, limit * 4]).fetchall()
        _add(found, rows, tier)
        if tier == "exact":
            _add(found, _named_across_styles(conn, written, kind_sql, kind_args, limit * 4), tier)
    if "fuzzy" in allowed and len(found) < limit and not qualified:
        # The name's letters in order, the first one first: `g%s%n%`.
        pattern = "%".join(_like_escaped(letter) for letter in needle) + "%"
        rows = conn.execute(
            f"SELECT {_COLUMNS} FROM symbols s JOIN files f ON f.id = s.file_id "
            f"WHERE {name} LIKE ? ESCAPE '\\'{kind_sql} ORDER BY length(s.symbol), f.path, "
            "s.start_line LIMIT ?", [pattern, *kind_args, limit * 4]).fetchall()
        _add(found, rows, "fuzzy")
    as_written = unicodedata.normalize("NFKC", written)
    last = needle.rsplit(".", 1)[-1]
    ranked = sorted(found.values(), key=lambda d: (
        MATCHES.index(d.match), fold(d.name) != last,  # another case style after
        as_written not in {unicodedata.normalize("NFKC", n) for n in (d.name, d.symbol)},
        is_test_path(d.path), len(d.symbol), d.path, d.start_line))
    return ranked[:limit]


def _named_across_styles(conn: Connection, written: str, kind_sql: str, kind_args: list[str],
                         limit: int) -> list:
    """Rows of the definitions ``written`` (dotted) names in another case
    style (`build_cache_key` for `buildCacheKey`) or qualified by their
    module (`util.Constrain`): query.names_definition."""
    rows = conn.execute(
        f"SELECT {_COLUMNS} FROM symbols s JOIN files f ON f.id = s.file_id "
        f"WHERE s.name_key = ?{kind_sql} ORDER BY length(s.symbol), f.path, s.start_line LIMIT ?",
        [name_key(written.rsplit(".", 1)[-1]), *kind_args, limit]).fetchall()
    modules = declared_modules(conn)
    return [row for row in rows
            if names_definition(written, row[1], functools.partial(modules, row[0]))]


def _folded(column: str) -> str:
    """SQL for ``column`` as tokenize.fold gives it: SQLite's lower() for an
    ASCII value (the same), the Python function only for the others."""
    return (f"CASE WHEN {column} GLOB '*[^' || char(1) || '-' || char(127) || ']*' "
            f"THEN {FOLD_SQL}({column}) ELSE lower({column}) END")


def _add(found: dict, rows, match: str) -> None:
    for row in rows:
        definition = _definition(row)
        definition.match, definition.score = match, SCORE_BY_MATCH[match]
        found.setdefault((definition.path, definition.symbol, definition.start_line), definition)


def _like_escaped(text: str) -> str:
    """``text`` matched literally by LIKE … ESCAPE '\\'."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


# -- a file's outline ---------------------------------------------------------------------------

# An outline nests at most this deep; deeper definitions are listed beside
# the deepest (400 nested classes could not be encoded as JSON).
MAX_OUTLINE_DEPTH = 32


def outline(conn: Connection, path: str) -> list[Definition]:
    """``path``'s definitions as a tree: a definition is the child of the
    innermost one whose lines hold it and whose name is its container (a
    C++ `A::f` defined outside its class stays at the top level, where it
    is written; `function b` after `function a` on a's last line is a's
    sibling: rows hold lines, not columns), at most MAX_OUTLINE_DEPTH deep."""
    rows = conn.execute(
        f"SELECT {_COLUMNS} FROM symbols s JOIN files f ON f.id = s.file_id WHERE f.path = ? "
        "ORDER BY s.start_line, s.body_end DESC", (path,)).fetchall()
    roots: list[Definition] = []
    open_: list[Definition] = []  # the definitions holding the current row, outermost first
    for row in rows:
        definition = _definition(row)
        while open_ and open_[-1].end_line < definition.start_line:
            open_.pop()
        container = definition.container
        holder = next((depth for depth in range(len(open_), 0, -1) if open_[depth - 1].symbol == container), 0)
        holder = min(holder, MAX_OUTLINE_DEPTH - 1)
        (open_[holder - 1].children if holder else roots).append(definition)
        open_.append(definition)
    return roots


def flatten(tree: list[Definition]) -> list[Definition]:
    """An outline's definitions in file order."""
    out: list[Definition] = []
    for definition in tree:
        out.append(definition)
        out.extend(flatten(definition.children))
    return out


# -- the definitions a chunk holds ----------------------------------------------------------------

def definitions_in(conn: Connection, path: str, start_line: int, end_line: int) -> list[Definition]:
    """The definitions whose name row lies in ``start_line``..``end_line``
    of ``path``, in file order."""
    rows = conn.execute(
        f"SELECT {_COLUMNS} FROM symbols s JOIN files f ON f.id = s.file_id "
        "WHERE f.path = ? AND s.line BETWEEN ? AND ? ORDER BY s.line, s.start_line",
        (path, start_line, end_line)).fetchall()
    return [_definition(row) for row in rows]


def innermost_at(conn: Connection, path: str, line: int) -> Definition | None:
    """The smallest definition of ``path`` whose lines hold ``line``."""
    row = conn.execute(
        f"SELECT {_COLUMNS} FROM symbols s JOIN files f ON f.id = s.file_id "
        "WHERE f.path = ? AND s.start_line <= ? AND s.body_end >= ? "
        "ORDER BY s.body_end - s.start_line, s.start_line DESC LIMIT 1", (path, line, line)).fetchone()
    return _definition(row) if row is not None else None


def clipped(conn: Connection, path: str, start_line: int, end_line: int,
            definition: Definition) -> tuple[int, int, int | None]:
    """``definition``'s lines within ``start_line``..``end_line`` (a chunk's)
    of ``path``, and the length of the last (an LSP range's end; None when no
    chunk holds it)."""
    start, end = max(start_line, definition.start_line), min(end_line, definition.end_line)
    return start, end, line_ends(conn, path, [end]).get(end)


def line_ends(conn: Connection, path: str, lines: Iterable[int]) -> dict[int, int]:
    """Where an LSP range ending with each of ``path``'s ``lines`` ends (its
    length, ``line_end_character``), for the lines a chunk holds."""
    wanted, ends = set(lines), {}
    for line in sorted(wanted):
        if line in ends:
            continue
        row = conn.execute(
            "SELECT c.text, c.start_line FROM chunks c JOIN files f ON f.id = c.file_id "
            "WHERE f.path = ? AND c.start_line <= ? AND c.end_line >= ? LIMIT 1",
            (path, line, line)).fetchone()
        if row is None:
            continue
        text, first = row
        # The chunk's other asked lines come with it.
        for offset, chunk_line in enumerate(text.split("\n")):
            if first + offset in wanted:
                ends.setdefault(first + offset, line_end_character(chunk_line))
    return ends


_NAME_TOKEN = re.compile(r"[A-Za-z_$][\w$]*(?:(?:\.|::)[A-Za-z_$][\w$]*)*")
# One word holding a symbol (`operator==`, `~Matrix`, `#secret`, `<=>`), not
# a path: a name only when a definition of the hit is named it exactly.
_SYMBOLIC_NAME = re.compile(r"[^\s/\\]*[^\w\s./\\][^\s/\\]*")


def asked_names(query: str) -> set[str]:
    """The code name a recall query asks for, dotted (query.dotted_name): the
    whole query when it is one name (``parse``, ``Session.request``,
    ``fn spawn``, ``shop.main/parse-version``); a sentence names nothing, even
    with code-shaped words in it: narrowing a hit to the definition it
    mentions lost the one it describes (set 4 test by chunk: hybrid -0.007,
    every drop a description or concept query; docs/decisions.md, "Hits
    narrowed to the definition a query names"). One word with a symbol in
    it, which query_shape calls no name (``operator==``, ``~Matrix``,
    ``#secret``), is asked as written, and so is one query_shape reads as a
    call (``operator()``): named_definition narrows to it only when a
    definition is named it."""
    name = query_shape(query).identifier
    names = {dotted_name(name)} if name else set()
    written = query.strip()
    if _SYMBOLIC_NAME.fullmatch(written):  # as written too: `operator()` is no call of `operator`
        names.add(dotted_name(written))
    return names


def named_definition(definitions: list[Definition], names: set[str],
                     conn: Connection) -> Definition | None:
    """The one of ``definitions`` a query names (its qualified name or its
    name, in its case, else in any case; else in another case style,
    `build_cache_key` for `buildCacheKey`; or qualified by its module,
    `util.Constrain`: query.names_definition, the module names read from
    ``conn``). Several of one name (a TypeScript function's overload
    signatures and its implementation, a property's getter and setter) are
    one definition spanning them all: the first's name line, the last's end.
    Names that differ only in case are different definitions (Java's
    `builder()` and its `Builder` class, Solidity's `transfer` and its
    `Transfer` event): the one written as asked is the one named."""
    modules = declared_modules(conn)
    named: list[Definition] = []
    for key in (str, fold, name_key):  # the name as written before its other cases and styles
        named = [definition for definition in definitions
                 if any(names_definition(name, definition.symbol,
                                         functools.partial(modules, definition.path), key)
                        for name in names)]
        if named:
            break
    if not named:
        return None
    return replace(named[0], start_line=min(d.start_line for d in named),
                   end_line=max(d.end_line for d in named))


# -- related code -------------------------------------------------------------------------------

@dataclass
class Related:
    origin: ScoredChunk  # the chunk at the location asked about
    chunks: list[ScoredChunk]
    mode: str  # "semantic" (by its vector) or "lexical" (by its identifiers)


def chunk_at(conn: Connection, path: str, line: int) -> ScoredChunk | None:
    """The smallest chunk of ``path`` holding ``line``."""
    row = conn.execute(
        "SELECT c.id FROM chunks c JOIN files f ON f.id = c.file_id WHERE f.path = ? "
        "AND c.start_line <= ? AND c.end_line >= ? ORDER BY c.end_line - c.start_line LIMIT 1",
        (path, line, line)).fetchone()
    if row is None:
        return None
    return _scored(_chunks_by_id(conn, [row[0]])[row[0]], 1.0)


def related(conn: Connection, origin: ScoredChunk, n: int, config: RankingConfig,
            semantic: SemanticIndex | None) -> Related:
    """The ``n`` chunks of ``origin``'s kind nearest to it: by its vector
    where it has one, else by BM25 of its identifiers; never itself nor a
    chunk overlapping it."""
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= MAX_RELATED_N:
        raise InvalidParams("n", f"must be an integer from 1 to {MAX_RELATED_N}")
    pool = n * 3 + 10
    scores: dict[int, float] = {}
    mode = "lexical"
    vector = _vector_of(conn, semantic, origin.embed_hash) if semantic is not None else None
    if vector is not None:
        mode = "semantic"
        nearest = dict(semantic.nearest(vector, pool * 2))
        if nearest:
            ids = list(nearest)
            for chunk_id, vector_id in conn.execute(
                    f"SELECT c.id, v.id FROM {semantic.table} v JOIN chunks c ON c.embed_hash = v.text_hash "
                    f"WHERE c.kind = ? AND v.id IN ({','.join('?' * len(ids))})", [origin.kind, *ids]):
                scores[chunk_id] = max(scores.get(chunk_id, -1.0), nearest[vector_id])
    else:
        words = list(dict.fromkeys(_NAME_TOKEN.findall(origin.text)))[:RELATED_TERMS]
        terms = query_terms(" ".join(words))
        table = FTS_TABLE_BY_KIND.get(origin.kind)
        if terms and table is not None:
            raw = bm25_scores(conn, table, terms, config, limit=pool)
            best = max(raw.values(), default=0.0)
            scores = {cid: score / best for cid, score in raw.items()} if best > 0 else {}
    rows = _chunks_by_id(conn, [cid for cid in scores if cid != origin.chunk_id])
    chunks = [_scored(row, scores[cid]) for cid, row in rows.items()]
    chunks = [c for c in chunks if not (c.path == origin.path and c.start_line <= origin.end_line
                                        and origin.start_line <= c.end_line)]
    chunks.sort(key=lambda c: (-c.score, c.path, c.start_line))
    return Related(origin, chunks[:n], mode)


def _vector_of(conn: Connection, semantic: SemanticIndex, embed_hash: str) -> np.ndarray | None:
    row = conn.execute(f"SELECT vec FROM {semantic.table} WHERE text_hash = ?", (embed_hash,)).fetchone()
    return np.frombuffer(row[0], dtype=np.float16).astype(np.float32) if row is not None else None
