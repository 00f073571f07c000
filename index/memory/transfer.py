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

_FIELDS = {
    "memory": {"scope": str, "id": str, "part": int, "kind": str, "by": str, "format": str,
               "symbol": (str, type(None)), "startLine": int, "endLine": int, "text": str,
               "meta": (str, type(None)), "session": (str, type(None)), "createdAt": int,
               "occurredAt": int, "expiresAt": (int, type(None))},
    "upload": {"scope": str, "id": str, "filename": str, "mode": str, "base64": str},
    "demand": {"path": str, "kind": str, "symbol": (str, type(None)), "action": str,
               "scope": str, "ts": int},
}


def memory_record(r) -> dict:
    (scope, key, part, kind, author, fmt, symbol, start_line, end_line, text, meta, session,
     created_at, occurred_at, expires_at) = r
    return {"type": "memory", "scope": scope, "id": key, "part": part, "kind": kind, "by": author,
            "format": fmt, "symbol": symbol, "startLine": start_line, "endLine": end_line,
            "text": text, "meta": meta, "session": session, "createdAt": created_at,
            "occurredAt": occurred_at, "expiresAt": expires_at}


def upload_record(r) -> dict:
    scope, key, filename, mode, data = r
    return {"type": "upload", "scope": scope, "id": key, "filename": filename, "mode": mode,
            "base64": base64.b64encode(bytes(data)).decode("ascii")}


def demand_record(r) -> dict:
    path, kind, symbol, action, scope, ts = r
    return {"type": "demand", "path": path, "kind": kind, "symbol": symbol, "action": action,
            "scope": scope, "ts": ts}


def memory_values(record: dict) -> tuple:
    """The memory row's columns in insert order, ending with its embed_hash."""
    return (record["scope"], record["id"], record["part"], record["kind"], record["by"],
            record["format"], record["symbol"], record["startLine"], record["endLine"],
            record["text"], record["meta"], record["session"], record["createdAt"],
            record["occurredAt"], record["expiresAt"],
            content_hash(memory_embedding_text(record["symbol"], record["text"])))


def upload_values(record: dict) -> tuple:
    return (record["scope"], record["id"], record["filename"], record["mode"],
            base64.b64decode(record["base64"], validate=True))


def demand_values(record: dict) -> tuple:
    return (record["path"], record["kind"], record["symbol"], record["action"], record["scope"],
            record["ts"])


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
        fields = _FIELDS.get(record.get("type")) if isinstance(record, dict) else None
        if fields is None:
            raise InvalidParams(f"line {number}", f"type must be one of {', '.join(_FIELDS)}")
        for name, kind in fields.items():
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
