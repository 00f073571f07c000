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

from ctxls.index.discovery import is_utf8
from ctxls.index.embed_text import memory_embedding_text
from ctxls.index.errors import EngineError, InvalidParams, TooLarge
from ctxls.index.memory.model import (MAX_WRITE_BYTES, MEMORY_KINDS, UPLOAD_MODES, check_choice,
                                      check_count, check_key, check_meta, check_ms, check_new_key,
                                      check_text)
from ctxls.index.model import content_hash
from ctxls.index.scopes import named_scope
from ctxls.index.vocabulary import AUTHORS

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


# Each record type's values under the store's column names, in EXPORT_FIELDS'
# order: the checks of values name them so.
_COLUMN_NAMES = {
    "memory": ("scope", "key", "part", "kind", "author", "format", "symbol", "start_line",
               "end_line", "text", "meta", "session", "created_at", "occurred_at", "expires_at"),
    "upload": ("scope", "key", "filename", "mode", "base64"),
    "demand": ("path", "kind", "symbol", "action", "scope", "ts"),
}
# What a demand row records: a recall hit, or a get ("fetch").
DEMAND_ACTIONS = ("recall", "fetch")
# A row's part and lines (PostgreSQL's integer).
MAX_LINE = (1 << 31) - 1


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
    """Every record, checked before anything is written (InvalidParams names
    the line): its fields' JSON types, then its values as the verb that
    writes such a row checks them, and no row or upload given twice."""
    records = []
    first_line: dict[tuple, int] = {}  # a row's (or upload's) identity -> where it was given
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
        try:
            _check_values(record)
        except InvalidParams as exc:  # named as the file's field, not as a column
            problem = exc.message.removeprefix(f"invalid param {exc.param!r}: ")
            field = dict(zip(_COLUMN_NAMES[record["type"]],
                             (name for name, _ in fields))).get(exc.param, exc.param)
            raise InvalidParams(f"line {number}", f"field {field!r}: {problem}") from exc
        except EngineError as exc:
            raise InvalidParams(f"line {number}", exc.message) from exc
        identity = stored_identity(record)
        if identity is not None:
            if identity in first_line:
                raise InvalidParams(f"line {number}", f"{described(record)} is given again "
                                    f"(first on line {first_line[identity]})")
            first_line[identity] = number
        records.append(record)
    return records


def stored_identity(record: dict) -> tuple | None:
    """What a store holds one of: a row per (scope, id, part), an upload per
    (scope, id); None for a demand row."""
    if record["type"] == "memory":
        return ("memory", record["scope"], record["id"], record["part"])
    if record["type"] == "upload":
        return ("upload", record["scope"], record["id"])
    return None


def described(record: dict) -> str:
    what = f"part {record['part']} of" if record["type"] == "memory" else "the upload of"
    return f"{what} id {record['id']!r} in scope {record['scope']!r}"


def already_stored(record: dict) -> InvalidParams:
    """The refusal of an import holding a row or upload the store already has
    (both backends): an import adds, it never replaces."""
    return InvalidParams("id", f"{described(record)} is already stored; nothing was imported")


def _check_values(record: dict) -> None:
    """A record's values, as the verb that writes such a row checks them:
    the store holds nothing ``remember``, ``ingest`` or a recall would not.
    InvalidParams names a store column (``_COLUMN_NAMES``)."""
    v = dict(zip(_COLUMN_NAMES[record["type"]], _columns(record)))
    for column, value in v.items():
        if isinstance(value, str) and ("\0" in value or not is_utf8(value)):
            raise InvalidParams(column, "must not contain NUL characters or unpaired surrogates")
    named_scope(v["scope"])
    if record["type"] == "memory":
        check_new_key("key", v["key"])
        check_choice("kind", v["kind"], MEMORY_KINDS)
        check_choice("author", v["author"], AUTHORS)
        check_new_key("format", v["format"])
        for column in ("part", "start_line", "end_line"):
            check_count(column, v[column], 0, MAX_LINE)
        if v["kind"] != "doc" and v["part"] != 0:
            raise InvalidParams("part", "must be 0 for a fact or an episode (only an ingested "
                                        "document has parts)")
        check_text(v["text"], may_be_blank=v["kind"] == "doc")
        for column in ("created_at", "occurred_at", "expires_at"):
            check_ms(column, v[column])
    elif record["type"] == "upload":
        check_new_key("key", v["key"])
        check_new_key("filename", v["filename"])
        check_choice("mode", v["mode"], UPLOAD_MODES)
        try:
            data = base64.b64decode(v["base64"], validate=True)
        except (binascii.Error, ValueError) as exc:
            raise InvalidParams("base64", f"is not valid: {exc}") from exc
        if len(data) > MAX_WRITE_BYTES:
            raise TooLarge("upload", MAX_WRITE_BYTES)
    else:
        check_key("path", v["path"])
        check_choice("kind", v["kind"], MEMORY_KINDS)
        check_choice("action", v["action"], DEMAND_ACTIONS)
        check_ms("ts", v["ts"])


def _check_meta_text(number: int, text: str) -> None:
    """A row's stored meta must be what ``remember`` would have stored: every
    read parses it, so one bad row would fail every answer that holds it."""
    try:
        # NaN and Infinity are no JSON (Python's reader takes them): refused as such.
        meta = json.loads(text, parse_constant=_not_json)
    except (ValueError, RecursionError) as exc:
        raise InvalidParams(f"line {number}", f"meta is not JSON: {exc}") from exc
    try:
        check_meta(meta)
    except InvalidParams as exc:  # named by its place in the meta, as remember names it
        problem = exc.message.removeprefix(f"invalid param {exc.param!r}: ")
        raise InvalidParams(f"line {number}", f"field 'meta': {exc.param} {problem}") from exc
    except EngineError as exc:
        raise InvalidParams(f"line {number}", f"{exc.message}") from exc


def _not_json(constant: str):
    raise ValueError(f"{constant} is not a JSON value")
