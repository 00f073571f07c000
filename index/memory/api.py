"""The memory verbs: every argument is checked here, once, then one call goes
to the backend (:class:`~ctxls.index.memory.model.MemoryStore`), so both
backends refuse the same input the same way."""

from __future__ import annotations

import base64
import binascii
import posixpath
from typing import TYPE_CHECKING, Callable

from ctxls.index.chunker import chunk_file
from ctxls.index.discovery import decode_text
from ctxls.index.errors import InvalidParams, TooLarge
from ctxls.index.memory.lexemes import memory_query_terms
from ctxls.index.memory.model import (DAY_MS, DEFAULT_EPISODE_WINDOW_DAYS, MAX_PAGE,
                                      MAX_WRITE_BYTES, MEMORY_KINDS, Forget,
                                      IngestResult, KnownFact, MemoryItem, MemoryNode, MemoryRow,
                                      MemoryStore, Page, Segment, Upload, Write, check_choice,
                                      check_count, check_key, check_kinds, check_meta, check_ms,
                                      check_new_key, check_text, meta_bytes, whole_segment)
from ctxls.index.model import MAX_ANSWER_BODY_BYTES
from ctxls.index.scopes import Scope
from ctxls.index.store import now_ms
from ctxls.index.vocabulary import AUTHORS, MAX_MEMORY_N, first_invalid

if TYPE_CHECKING:
    from ctxls.index.semantic import SemanticIndex

# Uploads split into searchable segments, by extension; anything else is a blob.
SEGMENTED_FORMATS = {"md": "markdown", "markdown": "markdown", "txt": "text", "log": "log",
                     "csv": "csv"}
BLOB_FORMAT = "binary"  # a blob whose filename has no extension


def metas_within_answer(page: Page) -> Page:
    """``page`` ended before the row whose meta would take its rows' metas
    past MAX_ANSWER_BODY_BYTES (``next_offset`` continues from that row, as
    for a body that does not fit; the first row always stays, its meta being
    at most MAX_META_BYTES): a page of 1000 rows with 64 KiB metas was an
    answer over the 64 MiB a message may be, which killed the editor's proxy."""
    left = MAX_ANSWER_BODY_BYTES
    for kept, row in enumerate(page.rows):
        left -= meta_bytes(row.meta)
        if left < 0 and kept > 0:
            return Page(page.rows[:kept], page.total, page.offset, page.offset + kept)
    return page


class Memory:
    def __init__(self, backend: MemoryStore, on_write: Callable[[list[int]], None] | None = None):
        """``on_write`` hears the ids of rows just written (the SQLite backend's
        semantic worker embeds them first)."""
        self.backend = backend
        self.on_write = on_write

    # -- writes ----------------------------------------------------------------

    def remember(self, scope: Scope, key: str, text: str, kind: str = "fact", by: str = "agent",
                 occurred_at: int | None = None, meta: dict | None = None,
                 expires_at: int | None = None, session: str | None = None,
                 episode_window_days: float = DEFAULT_EPISODE_WINDOW_DAYS) -> None:
        """Write one row whole (never chunked); the same (scope, id) is replaced."""
        check_new_key("id", key)
        check_text(text)
        check_choice("kind", kind, MEMORY_KINDS)
        check_choice("by", by, AUTHORS)
        check_ms("occurredAt", occurred_at)
        check_ms("expiresAt", expires_at)
        meta_json = check_meta(meta)
        now = now_ms()
        self._written(self.backend.write(Write(
            scope.home, key, kind, by, "text", [whole_segment(text)], meta_json,
            occurred_at if occurred_at is not None else now, expires_at, session, now, None,
            now - int(episode_window_days * DAY_MS) if kind == "episode" else None)))

    def ingest(self, scope: Scope, filename: str, text: str | None = None,
               base64_data: str | None = None, key: str | None = None, by: str = "agent",
               expires_at: int | None = None, meta: dict | None = None) -> IngestResult:
        """Store an upload: Markdown and txt/log/csv as searchable doc segments,
        anything else byte-exact as a blob found by its filename. Re-ingesting
        an id replaces all of its segments."""
        check_new_key("filename", filename)
        key = filename if key is None else key
        check_new_key("id", key)
        check_choice("by", by, AUTHORS)
        check_ms("expiresAt", expires_at)
        meta_json = check_meta(meta)
        data = self._upload_bytes(text, base64_data)
        extension = posixpath.splitext(filename.replace("\\", "/"))[1].lstrip(".").lower()
        if extension in SEGMENTED_FORMATS:
            mode, fmt = "chunked", SEGMENTED_FORMATS[extension]
            # The text a file of these bytes is indexed as (a BOM dropped,
            # UTF-16 by its mark, a lone CR a line end), so headings and line
            # numbers are an editor's; `item` reads the upload the same way.
            decoded = decode_text(data)
            invalid = first_invalid(text if text is not None else decoded)
            if invalid is not None:
                # Its segments are stored as text, which no store (nor an
                # export's import) holds with NUL: refused, as remember's text is.
                raise InvalidParams("text" if text is not None else "base64",
                                    f"{filename!r} is stored as text ({fmt}), which "
                                    f"{invalid[1]}; nothing was written")
            segments = [Segment(c.symbol, c.start_line, c.end_line, c.text)
                        for c in chunk_file(filename, decoded).chunks] or [whole_segment(decoded)]
        else:
            mode, fmt = "blob", extension or BLOB_FORMAT
            segments = [Segment(None, 0, 0, filename)]  # what recall finds a blob by
        now = now_ms()
        self._written(self.backend.write(Write(
            scope.home, key, "doc", by, fmt, segments, meta_json, now, expires_at, None, now,
            Upload(filename, mode, data), None)))
        return IngestResult(key=key, format=fmt, mode=mode, segments=len(segments))

    @staticmethod
    def _upload_bytes(text: str | None, base64_data: str | None) -> bytes:
        """The upload's bytes, checked against the bound before anything is decoded or written."""
        if (text is None) == (base64_data is None):
            raise InvalidParams("text", "give exactly one of text and base64")
        if text is not None:
            data = text.encode("utf-8", "surrogatepass")
        else:
            if len(base64_data) // 4 * 3 > MAX_WRITE_BYTES + 2:  # bound the decode itself
                raise TooLarge("upload", MAX_WRITE_BYTES)
            try:
                data = base64.b64decode(base64_data, validate=True)
            except (binascii.Error, ValueError) as exc:
                raise InvalidParams("base64", f"is not valid base64: {exc}") from exc
        if len(data) > MAX_WRITE_BYTES:
            raise TooLarge("upload", MAX_WRITE_BYTES)
        return data

    def _written(self, row_ids: list[int]) -> None:
        if self.on_write is not None and row_ids:
            self.on_write(row_ids)

    def forget(self, scope: Scope, key: str | None = None, key_prefix: str | None = None,
               kind: str | None = None, by: str | None = None, scope_given: bool = False) -> int:
        """Remove direct rows (never indexed files) by id, id prefix, kind and
        author, or everything of an explicitly given scope; only rows ``scope``
        owns (docs/protocol.md). Returns how many ids were removed."""
        for name, value in (("id", key), ("idPrefix", key_prefix)):
            if value is not None:
                check_key(name, value)
        check_choice("kind", kind, MEMORY_KINDS)
        check_choice("by", by, AUTHORS)
        if key is None and key_prefix is None and not scope_given:
            if kind is None:
                raise InvalidParams("id", "forget needs id, idPrefix, scope, or kind with by")
            if by is None:
                raise InvalidParams("by", "forgetting by kind without a scope needs by as well")
        return self.backend.forget(Forget(None if scope.unrestricted else scope.home, key,
                                          key_prefix, kind, by))

    def purge(self, now: int | None = None) -> int:
        """Remove rows whose expiry has passed, with their uploads and vectors.
        ``now`` (a test's, or a caller's clock) never runs ahead of this
        process's: purge is unscoped, so a later one let any client remove
        every tenant's rows still live."""
        check_ms("now", now)
        current = now_ms()
        return self.backend.purge(current if now is None else min(now, current))

    # -- reads -----------------------------------------------------------------

    def search(self, kind: str, query: str, n: int, scope: Scope,
               semantic: "SemanticIndex | None" = None, dense_only: bool = False) -> list[MemoryRow]:
        """The ``n`` best rows of one kind for ``query`` (``search_kinds``)."""
        return self.search_kinds([kind], query, n, scope, semantic, dense_only)[kind]

    def search_kinds(self, kinds: list[str], query: str, n: int, scope: Scope,
                     semantic: "SemanticIndex | None" = None,
                     dense_only: bool = False) -> dict[str, list[MemoryRow]]:
        """Per kind, the ``n`` best rows for ``query``, each kind ranked only
        against itself: stemmed full text, fused with cosine similarity when
        ``semantic`` is given; one request to the backend for all kinds (one
        round trip on PostgreSQL). A query with no usable term finds nothing
        lexically; by meaning it still may."""
        check_kinds(kinds)
        terms = memory_query_terms(query)
        if not terms and semantic is None:
            return {kind: [] for kind in kinds}
        return self.backend.search(kinds, query, terms, n, scope, now_ms(), semantic, dense_only)

    def recent(self, scope: Scope, kinds: list[str] | None = None, n: int = 10,
               session: str | None = None) -> list[MemoryRow]:
        """Newest first (by occurredAt), this session's episodes before all else;
        one entry per id (an ingested document by its first segment)."""
        kinds = check_kinds(kinds)
        check_count("n", n, 1, MAX_MEMORY_N)
        return self.backend.recent(scope, kinds, n, session, now_ms())

    def enumerate(self, scope: Scope, kind: str, offset: int = 0, limit: int = 100) -> Page:
        """Every visible row of a kind, in write order: an upsert keeps its place
        and new rows append, so following ``next_offset`` never repeats a row."""
        check_kinds([kind], ("fact", "episode"))
        check_count("offset", offset, 0, 2**62)
        check_count("limit", limit, 1, MAX_PAGE)
        return metas_within_answer(self.backend.enumerate(scope, kind, offset, limit, now_ms()))

    def count(self, scope: Scope, kinds: list[str] | None = None) -> int:
        """Visible ids of these kinds (an ingested document counts once)."""
        return self.backend.count(scope, check_kinds(kinds), now_ms())

    def _first_row(self, key: str, scope: Scope) -> MemoryRow | None:
        """The row ``scope`` sees under ``key``: its own before the shared tier's."""
        if not isinstance(key, str) or not key:
            return None
        return self.backend.first_row(key, scope, now_ms())

    def item(self, key: str, scope: Scope, start_line: int | None = None,
             end_line: int | None = None) -> MemoryItem | None:
        """A visible row by id, whole (an ingested document as uploaded), or
        None: another tenant's id is indistinguishable from an unknown one."""
        row = self._first_row(key, scope)
        if row is None:
            return None
        upload = self.backend.upload(row.scope, row.key)
        if upload is not None and upload[0] == "blob":
            if start_line is not None or end_line is not None:
                raise InvalidParams("startLine", "a blob has no lines")
            return MemoryItem(row, base64.b64encode(upload[1]).decode("ascii"), "base64")
        text = decode_text(upload[1]) if upload is not None else row.whole_text()
        if start_line is not None or end_line is not None:
            lines = text.split("\n")
            if len(lines) > 1 and lines[-1] == "":  # a final newline ends the last line, as a file's
                lines.pop()
            if (start_line or 0) >= len(lines):
                # A file's range past its end says so (Item.meta); a memory's
                # meta is its writer's, so this says it as an error.
                raise InvalidParams("startLine", f"{key} ends before line {(start_line or 0) + 1} "
                                    f"(it has {len(lines)} line{'s' if len(lines) != 1 else ''})")
            last = min(end_line if end_line is not None else len(lines) - 1, len(lines) - 1)
            text = "\n".join(lines[start_line or 0:last + 1])
        return MemoryItem(row, text, None)

    def node(self, key: str, scope: Scope) -> MemoryNode | None:
        row = self._first_row(key, scope)
        if row is None:
            return None
        return MemoryNode(row, self.backend.segments(row.scope, row.key))

    # -- the knowledge block's input -----------------------------------------

    def known_facts(self, scope: Scope, now: int) -> list[KnownFact]:
        return self.backend.known_facts(scope, now)
