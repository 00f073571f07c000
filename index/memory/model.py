"""What every memory backend shares: the rows, the bounds, the checks, and
the storage interface (:class:`MemoryStore`) the two backends implement."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Iterator, Protocol

from ctxls.index.chunker import split_lines
from ctxls.index.errors import InvalidParams, MemoryUnavailable, TooLarge
from ctxls.index.paths import CONTROL_CHARACTER
from ctxls.index.scopes import GLOBAL, Scope
from ctxls.index.vocabulary import (MAX_ID_CHARS, MAX_META_BYTES, MAX_META_DEPTH, MAX_WRITE_BYTES,
                                    first_invalid)

if TYPE_CHECKING:
    from ctxls.index.semantic import SemanticIndex

MEMORY_KINDS = ("fact", "episode", "doc")
# How an ingested file is kept: searchable segments, or byte-exact only.
UPLOAD_MODES = ("chunked", "blob")
# The largest timestamp a row holds (SQLite's INTEGER, PostgreSQL's bigint).
MAX_MS = (1 << 63) - 1
DEFAULT_EPISODE_WINDOW_DAYS = 30.0
DAY_MS = 86_400_000
# Memory's hybrid fusion (linear) and lexical pool (docs/decisions.md, "Memory: term
# coverage scales the lexical share; linear fusion"); code recall's fusion
# (RankingConfig) was tuned on code, not on facts.
MEMORY_DENSE_WEIGHT = 0.7
MEMORY_FUSION_POOL = 50
# Rows the nearest-neighbour search adds to the lexical candidates, found by meaning alone.
ANN_NOMINEES = 8
MAX_PAGE = 1000
# A list read (recall, recentMemory, enumerate, node, the knowledge block)
# carries a row's text only up to this size (UTF-8 bytes, PostgreSQL; SQLite
# carries none, its rows read on demand being local); a longer one is read on
# demand, and only if what asks for it has room for it (MemoryRow.text_within):
# 200 rows at the 10 MiB bound would otherwise be 2 GB read for one answer.
INLINE_TEXT_BYTES = 64 * 1024

# Reads one row's text if it is at most that many UTF-8 bytes (None: any
# size); None when it is longer, or the row is gone.
TextReader = Callable[[int | None], "str | None"]


@dataclass
class MemoryRow:
    row_id: int
    scope: str
    key: str
    part: int
    kind: str
    author: str
    format: str
    symbol: str | None
    start_line: int
    end_line: int
    text: str | None  # None: not read yet (see INLINE_TEXT_BYTES); use text_within / whole_text
    meta: dict | None
    created_at: int
    occurred_at: int
    expires_at: int | None
    embed_hash: str
    score: float = 0.0
    # What recall's calibration reads (recall_calibration.Evidence): the
    # row's cosine with the query (None: lexical, or no vector yet) and the
    # share of the query's terms it holds.
    cosine: float | None = None
    coverage: float | None = None
    read_text: TextReader | None = field(default=None, repr=False, compare=False)

    def text_within(self, max_bytes: int | None) -> str | None:
        return text_within(self.text, self.read_text, max_bytes)

    def whole_text(self) -> str:
        """The text whatever its size (one row: ``get``); "" if the row is gone."""
        text = self.text_within(None)
        return text if text is not None else ""


@dataclass
class MemoryItem:
    """A row fetched whole by its id (``ctxls/get``)."""

    row: MemoryRow
    text: str  # the whole document; base64 for a blob
    encoding: str | None  # "base64" for a blob


@dataclass
class MemoryNode:
    row: MemoryRow
    segments: list[MemoryRow]


@dataclass
class Page:
    rows: list[MemoryRow]
    total: int
    offset: int
    next_offset: int | None


@dataclass
class IngestResult:
    key: str
    format: str
    mode: str  # "chunked" | "blob"
    segments: int


@dataclass(frozen=True)
class Segment:
    symbol: str | None
    start_line: int
    end_line: int
    text: str


@dataclass(frozen=True)
class Upload:
    """An ingested file, whole and byte-exact (its searchable rows are segments)."""

    filename: str
    mode: str  # "chunked" | "blob"
    data: bytes


@dataclass(frozen=True)
class Write:
    """One validated remember or ingest: (scope, key) becomes exactly these segments."""

    scope: str
    key: str
    kind: str
    author: str
    format: str
    segments: list[Segment]
    meta_json: str | None
    occurred_at: int
    expires_at: int | None
    session: str | None
    created_at: int
    upload: Upload | None  # None: a remember, which drops any earlier upload of the id
    # An episode write prunes the older episodes of the scope it writes to first
    # (whatever the writer reads: one writer's window never removes another
    # tenant's episodes).
    prune_episodes_before: int | None


@dataclass(frozen=True)
class Forget:
    """Which rows a forget removes (all conditions hold); ``owned``: the scope
    that may remove, None when unrestricted."""

    owned: str | None
    key: str | None
    key_prefix: str | None
    kind: str | None
    author: str | None


@dataclass(frozen=True)
class KnownFact:
    """A visible fact with its recall count (the knowledge block's input)."""

    key: str
    scope: str
    author: str
    text: str | None  # None: not read yet, as MemoryRow's
    meta: dict | None
    created_at: int
    recalls: int
    read_text: TextReader | None = field(default=None, repr=False, compare=False)

    def text_within(self, max_bytes: int | None) -> str | None:
        return text_within(self.text, self.read_text, max_bytes)


@dataclass
class Candidate:
    path: str
    hits: int


class MemoryStore(Protocol):
    """Where written memory, its demand log and its vectors live. Arguments
    are already checked (``ctxls.index.memory.api``); every read sees only
    what its scope may see, every write commits before it returns."""

    kind: str  # "sqlite" | "postgresql"

    def write(self, write: Write) -> list[int]: ...
    def forget(self, what: Forget) -> int: ...
    def purge(self, now: int) -> int: ...
    def search(self, kinds: list[str], query: str, terms: list[str], n: int, scope: Scope,
               now: int, semantic: "SemanticIndex | None",
               dense_only: bool) -> dict[str, list[MemoryRow]]: ...
    def recent(self, scope: Scope, kinds: list[str], n: int, session: str | None,
               now: int) -> list[MemoryRow]: ...
    def enumerate(self, scope: Scope, kind: str, offset: int, limit: int, now: int) -> Page: ...
    def count(self, scope: Scope, kinds: list[str], now: int) -> int: ...
    def first_row(self, key: str, scope: Scope, now: int) -> MemoryRow | None: ...
    def upload(self, scope: str, key: str) -> tuple[str, bytes] | None: ...
    def segments(self, scope: str, key: str) -> list[MemoryRow]: ...
    def append_demand(self, rows: list[tuple]) -> None: ...
    def candidates(self, kind: str, scope: Scope, threshold: int, since: int,
                   now: int) -> list[Candidate]: ...
    def known_facts(self, scope: Scope, now: int) -> list[KnownFact]: ...
    def export_records(self) -> Iterator[dict]: ...
    def import_records(self, records: list[dict]) -> int: ...
    def describe(self) -> dict: ...
    def unavailable(self) -> MemoryUnavailable | None: ...
    def close(self) -> None: ...


def check_kinds(kinds: list[str] | None, allowed: tuple[str, ...] = MEMORY_KINDS) -> list[str]:
    if kinds is None:
        return list(allowed)
    for kind in kinds:
        if kind not in allowed:
            raise InvalidParams("kind", f"unknown kind {kind!r}; known: {', '.join(allowed)}")
    return kinds


def check_key(name: str, key: str) -> None:
    if not isinstance(key, str) or not key or len(key) > MAX_ID_CHARS:
        raise InvalidParams(name, f"must be a non-empty string of at most {MAX_ID_CHARS} characters")


def check_new_key(name: str, key: str) -> None:
    """A name a write gives (an id, a filename): ``check_key``'s, on one line."""
    check_key(name, key)
    if CONTROL_CHARACTER.search(key):
        raise InvalidParams(name, "must not hold a line break or another control character "
                                  "(every text answer prints ids one per line)")


def check_choice(name: str, value: str | None, allowed: tuple[str, ...]) -> None:
    if value is not None and value not in allowed:
        raise InvalidParams(name, f"must be one of {', '.join(allowed)}")


def check_ms(name: str, value: int | None) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                              or not 0 <= value <= MAX_MS):
        raise InvalidParams(name, "must be a non-negative timestamp in ms (below 2^63)")


def check_text(text: str, may_be_blank: bool = False) -> None:
    """A row's text as a write takes it: a non-blank string (a segment of an
    ingested file may be blank) of at most MAX_WRITE_BYTES."""
    if not isinstance(text, str) or not (may_be_blank or text.strip()):
        raise InvalidParams("text", "must be a non-empty string")
    if len(text.encode("utf-8", "surrogatepass")) > MAX_WRITE_BYTES:
        raise TooLarge("text", MAX_WRITE_BYTES)


def check_count(name: str, value: int, low: int, high: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise InvalidParams(name, f"must be an integer from {low} to {high}")


def check_meta(meta: dict | None) -> str | None:
    """The stored text of a row's meta. Bounded so that every answer carrying
    it can be encoded and stays small: nesting (a JSON encoder recurses) and
    size (every hit of the row repeats it)."""
    if meta is None:
        return None
    if not isinstance(meta, dict):
        raise InvalidParams("meta", "must be an object")
    if _nesting(meta) > MAX_META_DEPTH:
        raise InvalidParams("meta", f"must not be nested deeper than {MAX_META_DEPTH} levels")
    # What a request could not carry (the wire refuses it there) no store
    # holds either: NaN or Infinity would make every answer holding the row
    # invalid JSON, an integer past 64 bits unreadable by many clients.
    invalid = first_invalid(meta, "meta")
    if invalid is not None:
        raise InvalidParams(invalid[0], invalid[1])
    text = json.dumps(meta, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    if len(text.encode("utf-8")) > MAX_META_BYTES:
        raise TooLarge("meta", MAX_META_BYTES)
    return text


def meta_bytes(meta: dict | None) -> int:
    """The UTF-8 bytes a row's meta takes in an answer (as check_meta
    measures it, and as answers are framed: compact JSON)."""
    if meta is None:
        return 0
    return len(json.dumps(meta, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass"))


def _nesting(value) -> int:
    """How deep objects and arrays nest in ``value`` (a scalar is 0), without recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else None
        if children is None:
            continue
        deepest = max(deepest, depth)
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return deepest


def text_within(text: str | None, read_text: TextReader | None,
                max_bytes: int | None) -> str | None:
    """A row's text if it is at most ``max_bytes`` (UTF-8; None: any size), else
    None; a text the row does not carry is read only then, and only if it fits."""
    if text is None:
        return read_text(max_bytes) if read_text is not None else None
    if max_bytes is not None and len(text.encode("utf-8", "surrogatepass")) > max_bytes:
        return None
    return text


def whole_segment(text: str) -> Segment:
    return Segment(None, 0, max(len(split_lines(text)) - 1, 0), text)


def memory_row(r, score: float = 0.0, read_text: TextReader | None = None) -> MemoryRow:
    """A row of ``row_columns`` (the same order in both backends); ``read_text``
    reads its text when the row does not carry it."""
    return MemoryRow(row_id=r[0], scope=r[1], key=r[2], part=r[3], kind=r[4], author=r[5],
                     format=r[6], symbol=r[7], start_line=r[8], end_line=r[9], text=r[10],
                     meta=json.loads(r[11]) if r[11] is not None else None, created_at=r[12],
                     occurred_at=r[13], expires_at=r[14], embed_hash=r[15], score=score,
                     read_text=read_text)


def own_row_wins_sql(scope: Scope, now: int, table: str, mark: str,
                     alias: str = "m") -> tuple[str, list]:
    """A WHERE fragment (``" AND ..."``, and its args; empty when nothing is
    shadowed) that every read of both backends adds to its scope fence: a
    tenant reads the shared tier's row of an id only while it holds no live
    row of that id itself (docs/protocol.md, "its own row wins"). ``table``
    is the backend's memory table, ``mark`` its parameter marker. A scope
    reading every scope, or the shared tier alone, shadows nothing."""
    if scope.unrestricted or scope.home == GLOBAL:
        return "", []
    return (f" AND NOT ({alias}.scope = {mark} AND EXISTS (SELECT 1 FROM {table} own "
            f"WHERE own.scope = {mark} AND own.key = {alias}.key AND "
            f"(own.expires_at IS NULL OR own.expires_at > {mark})))", [GLOBAL, scope.home, now])


def write_order_sql(scope: Scope, now: int, table: str, mark: str,
                    alias: str = "m") -> tuple[str, list]:
    """enumerate's ORDER BY (and its args): write order, except that a
    tenant's own row of an id the shared tier also holds (of that kind,
    live, written before it) takes the shared row's place. Writing it hides
    that shared row (``own_row_wins_sql``) and, appended, it would shift
    every later row back one: a page after it skipped a row and repeated
    this id (docs/protocol.md: an upsert of an id the tenant sees keeps its
    place). Forgetting it shows the shared row at that same place again."""
    if scope.unrestricted or scope.home == GLOBAL:
        return f"{alias}.id", []
    return (f"CASE WHEN {alias}.scope = {mark} THEN coalesce((SELECT min(shared.id) FROM {table} "
            f"shared WHERE shared.scope = {mark} AND shared.key = {alias}.key AND "
            f"shared.part = {alias}.part AND shared.kind = {alias}.kind AND shared.id < {alias}.id "
            f"AND (shared.expires_at IS NULL OR shared.expires_at > {mark})), {alias}.id) "
            f"ELSE {alias}.id END, {alias}.id", [scope.home, GLOBAL, now])


def row_columns(text_sql: str) -> str:
    """A row's columns, its text spelled by the backend (``INLINE_TEXT_BYTES``)."""
    return ("m.id, m.scope, m.key, m.part, m.kind, m.author, m.format, m.symbol, m.start_line, "
            f"m.end_line, {text_sql}, m.meta, m.created_at, m.occurred_at, m.expires_at, "
            "m.embed_hash")
