"""Memory as JSON lines (``ctxls memory export|import``), one record a line,
the same from either backend, so memory moves between them both ways and a
round trip gives back the same lines.

- ``{"type": "memory", scope, id, part, kind, by, format, symbol, startLine,
  endLine, text, meta, session, createdAt, occurredAt, expiresAt}``: one row
  (a segment of an ingested document is one row); ``meta`` is the caller's
  JSON object as the text it was stored as, so nothing is re-serialised.
- ``{"type": "upload", scope, id, filename, mode, base64}``: an ingested file, byte-exact.
- ``{"type": "demand", path, kind, symbol, action, scope, ts}``: a memory row's recall or fetch.

Row ids and vectors are not exported: ids are the store's own (their order,
write order, is kept), and vectors are derived (docs/protocol.md says when an
imported row gets one).
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Iterable, Iterator

from ctxls.index.embed_text import memory_embedding_text
from ctxls.index.errors import EngineError, InvalidParams
from ctxls.index.memory.model import check_meta
from ctxls.index.model import content_hash

# The export file's format: per record type, its fields in the order of the
# store's columns, with their JSON types. The names are the file's (camelCase,
# as ctxls has always written them): a file is data at rest that any later
# ctxls must import, so they never change (tests/test_layers.py permits them
# here, and only here).
EXPORT_FIELDS: dict[str, tuple[tuple[str, type | tuple[type, ...]], ...]] = {
    "memory": (("scope", str), ("id", str), ("part", int), ("kind", str), ("by", str), ("format", str),
               ("symbol", (str, type(None))), ("startLine", int), ("endLine", int), ("text", str),
               ("meta", (str, type(None))), ("session", (str, type(None))), ("createdAt", int),
               ("occurredAt", int), ("expiresAt", (int, type(None)))),
    "upload": (("scope", str), ("id", str), ("filename", str), ("mode", str), ("base64", str)),
    "demand": (("path", str), ("kind", str), ("symbol", (str, type(None))), ("action", str),
               ("scope", str), ("ts", int)),
}


def _record(record_type: str, columns) -> dict:
    names = [name for name, _ in EXPORT_FIELDS[record_type]]
    return {"type": record_type, **dict(zip(names, columns))}


def _columns(record: dict) -> tuple:
    return tuple(record[name] for name, _ in EXPORT_FIELDS[record["type"]])


def memory_record(r) -> dict:
    """A memory row (the store's columns in insert order) as an export record."""
    return _record("memory", r)


def upload_record(r) -> dict:
    *columns, data = r
    return _record("upload", (*columns, base64.b64encode(bytes(data)).decode("ascii")))


def demand_record(r) -> dict:
    return _record("demand", r)


def memory_values(record: dict) -> tuple:
    """The memory row's columns in insert order, ending with its embed_hash."""
    return (*_columns(record), content_hash(memory_embedding_text(record["symbol"], record["text"])))


def upload_values(record: dict) -> tuple:
    *columns, data = _columns(record)
    return (*columns, base64.b64decode(data, validate=True))


def demand_values(record: dict) -> tuple:
    return _columns(record)


def write_lines(records: Iterable[dict]) -> Iterator[str]:
    for record in records:
        yield json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n"


def read_lines(lines: Iterable[str]) -> list[dict]:
    """Every record, checked before anything is written (InvalidParams names the line)."""
    records = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except (ValueError, RecursionError) as exc:  # not JSON, or nested too deep to read
            raise InvalidParams(f"line {number}", f"is not JSON: {exc}") from exc
        fields = EXPORT_FIELDS.get(record.get("type")) if isinstance(record, dict) else None
        if fields is None:
            raise InvalidParams(f"line {number}", f"type must be one of {', '.join(EXPORT_FIELDS)}")
        for name, kind in fields:
            value = record.get(name)
            if name not in record or not isinstance(value, kind) or isinstance(value, bool):
                raise InvalidParams(f"line {number}", f"field {name!r} is missing or mistyped")
        if record["type"] == "memory" and record["meta"] is not None:
            _check_meta_text(number, record["meta"])
        if record["type"] == "upload":
            try:
                base64.b64decode(record["base64"], validate=True)
            except (binascii.Error, ValueError) as exc:
                raise InvalidParams(f"line {number}", f"base64 is not valid: {exc}") from exc
        records.append(record)
    return records


def _check_meta_text(number: int, text: str) -> None:
    """A row's stored meta must be what ``remember`` would have stored: every
    read parses it, so one bad row would fail every answer that holds it."""
    try:
        meta = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise InvalidParams(f"line {number}", f"meta is not JSON: {exc}") from exc
    try:
        check_meta(meta)
    except EngineError as exc:
        raise InvalidParams(f"line {number}", f"{exc.message}") from exc
