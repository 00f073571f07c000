"""The memory export's file format (index/memory/transfer.py) is data at
rest: a file written by an earlier ctxls imports, and exports again byte for
byte, into the SQLite backend (the PostgreSQL round trip is in
tests/test_memory_postgres.py); every line is checked before anything is
written, alike on both backends."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from ctxls.index.errors import InvalidParams
from ctxls.index.memory.model import check_meta
from ctxls.index.memory.transfer import EXPORT_FIELDS

# Written by `ctxls memory export` before the format's names moved into one
# table (commit e00ef70): a fact, an episode with meta and expiry, an ingested
# document and a binary upload, and a recall's demand row.
EARLIER_EXPORT = (
    '{"type":"memory","scope":"alice","id":"creds","part":0,"kind":"fact","by":"agent","format":"text",'
    '"symbol":null,"startLine":0,"endLine":0,"text":"alice password is secret-alice","meta":null,'
    '"session":null,"createdAt":1796330367306,"occurredAt":1796330367306,"expiresAt":null}\n'
    '{"type":"memory","scope":"alice","id":"ep","part":0,"kind":"episode","by":"human","format":"text",'
    '"symbol":null,"startLine":0,"endLine":1,"text":"ünïcödé episode\\nline two",'
    '"meta":"{\\"b\\":[1,{\\"z\\":null}]}","session":null,"createdAt":1796330367307,'
    '"occurredAt":1700000000000,"expiresAt":99999999999999}\n'
    '{"type":"memory","scope":"bob","id":"bob.md","part":0,"kind":"doc","by":"agent","format":"markdown",'
    '"symbol":"bob","startLine":0,"endLine":2,"text":"# bob\\n\\nbob notes","meta":null,"session":null,'
    '"createdAt":1796330367307,"occurredAt":1796330367307,"expiresAt":null}\n'
    '{"type":"memory","scope":"bob","id":"blob.bin","part":0,"kind":"doc","by":"agent","format":"bin",'
    '"symbol":null,"startLine":0,"endLine":0,"text":"blob.bin","meta":null,"session":null,'
    '"createdAt":1796330367308,"occurredAt":1796330367308,"expiresAt":null}\n'
    '{"type":"upload","scope":"bob","id":"blob.bin","filename":"blob.bin","mode":"blob","base64":"AAEC/w=="}\n'
    '{"type":"upload","scope":"bob","id":"bob.md","filename":"bob.md","mode":"chunked",'
    '"base64":"IyBib2IKCmJvYiBub3Rlcwo="}\n'
    '{"type":"demand","path":"creds","kind":"fact","symbol":null,"action":"recall","scope":"alice",'
    '"ts":1796330367318}\n'
)

CLI = [sys.executable, "-m", "ctxls.daemon.cli", "memory"]


def test_an_earlier_export_imports_and_exports_again_byte_for_byte(tmp_path: Path):
    db = str(tmp_path / "index.db")
    imported = subprocess.run([*CLI, "import", "--db", db], input=EARLIER_EXPORT, capture_output=True,
                              text=True, check=True)
    assert "imported 7 records" in imported.stderr
    exported = subprocess.run([*CLI, "export", "--db", db], capture_output=True, text=True, check=True)
    assert exported.stdout == EARLIER_EXPORT


def test_every_field_of_the_format_is_checked_on_import(tmp_path: Path):
    """Each named field is required: a file missing one is refused, naming
    its line, and nothing of it is written."""
    db = str(tmp_path / "index.db")
    first = json.loads(EARLIER_EXPORT.split("\n")[0])
    assert [name for name, _ in EXPORT_FIELDS["memory"]] == [key for key in first if key != "type"]
    for name in ("startLine", "createdAt", "expiresAt"):
        broken = json.dumps({key: value for key, value in first.items() if key != name})
        refused = subprocess.run([*CLI, "import", "--db", db], input=EARLIER_EXPORT + broken + "\n",
                                 capture_output=True, text=True)
        assert refused.returncode == 2 and "'line 8'" in refused.stderr, refused.stderr
        assert "is missing or mistyped" in refused.stderr
    assert subprocess.run([*CLI, "export", "--db", db], capture_output=True, text=True,
                          check=True).stdout == ""


def test_the_file_is_utf8_whatever_the_locale(tmp_path: Path):
    """Under a locale that is not UTF-8 the export was written in its
    encoding (ISO-8859-1 bytes, or a crash on a character it lacks) and the
    import decoded UTF-8 files with it (mojibake written to memory). The
    file is UTF-8 both ways; bytes that are not UTF-8 are refused whole."""
    import os

    db = str(tmp_path / "index.db")
    latin = {**os.environ, "PYTHONIOENCODING": "latin-1"}
    imported = subprocess.run([*CLI, "import", "--db", db], input=EARLIER_EXPORT.encode("utf-8"),
                              capture_output=True, env=latin, check=True)
    assert b"imported 7 records" in imported.stderr
    exported = subprocess.run([*CLI, "export", "--db", db], capture_output=True, env=latin, check=True)
    assert exported.stdout == EARLIER_EXPORT.encode("utf-8")  # "ünïcödé" as UTF-8
    ascii_only = {**os.environ, "PYTHONIOENCODING": "ascii"}
    refused = subprocess.run([*CLI, "import", "--db", str(tmp_path / "other.db")],
                             input=b'{"type":"memory","id":"caf\xe9"}\n', capture_output=True,
                             env=ascii_only)
    assert refused.returncode == 2 and b"not UTF-8" in refused.stderr and b"Traceback" not in refused.stderr
    assert subprocess.run([*CLI, "export", "--db", str(tmp_path / "other.db")],
                          capture_output=True, check=True).stdout == b""


@pytest.fixture(params=["sqlite", "postgresql"])
def import_target(request, tmp_path: Path) -> list[str]:
    """Where `ctxls memory import|export` goes: a fresh SQLite store, or a
    fresh database of the session's PostgreSQL."""
    if request.param == "sqlite":
        return ["--db", str(tmp_path / "index.db")]
    url = request.getfixturevalue("pg_server").fresh_database()
    subprocess.run([*CLI, "migrate", "--url", url], capture_output=True, check=True)  # export reads it
    return ["--url", url]


def _with(line: str, **changes) -> str:
    return json.dumps({**json.loads(line), **changes})


def test_import_checks_values_as_the_writing_verbs_do_and_writes_nothing_on_a_bad_line(
        import_target: list[str]):
    """Import checked only each field's JSON type: an unknown kind or a
    timestamp over 64 bits ended in a traceback, and a blank text, an id
    with a line break, a reserved scope or an unknown author were stored
    though remember refuses them; on PostgreSQL a NUL or a line number over
    its integer was a traceback too (memory probe). Every backend refuses
    them alike, naming the line, and writes nothing."""
    fact, episode = EARLIER_EXPORT.split("\n")[:2]
    upload = EARLIER_EXPORT.split("\n")[4]
    demand = EARLIER_EXPORT.split("\n")[6]
    other = _with(fact, id="other")
    bad_lines = {
        "kind": _with(other, kind="bogus"),
        "occurredAt": _with(other, occurredAt=2**64),
        "text": _with(other, text="  \n"),
        "id": _with(other, id="a\nb"),
        "scope": _with(other, scope="@evil"),
        "by": _with(other, by="robot"),
        "startLine": _with(other, startLine=2**40),
        "part": _with(episode, part=1),
        "mode": _with(upload, mode="bogus"),
        "action": _with(demand, action="bogus"),
        "session": _with(other, session="a\0b"),
    }
    for field, bad in bad_lines.items():
        refused = subprocess.run([*CLI, "import", *import_target], input=fact + "\n" + bad + "\n",
                                 capture_output=True, text=True)
        assert refused.returncode == 2, (field, refused.stderr)
        # The record's own field, never respelled as a CLI option (--start-line)
        assert f"invalid param 'line 2': field '{field}'" in refused.stderr, (field, refused.stderr)
        assert "Traceback" not in refused.stderr
    assert subprocess.run([*CLI, "export", *import_target], capture_output=True, text=True,
                          check=True).stdout == ""


def test_import_refuses_a_row_given_twice_or_already_stored_and_writes_nothing(
        import_target: list[str]):
    """A (scope, id, part) twice in the file, or one the store holds, was an
    IntegrityError on SQLite and a UniqueViolation traceback on PostgreSQL
    (memory probe): the same clear refusal on both, nothing written."""
    fact = EARLIER_EXPORT.split("\n")[0]
    twice = subprocess.run([*CLI, "import", *import_target],
                           input=EARLIER_EXPORT + _with(fact, text="another text") + "\n",
                           capture_output=True, text=True)
    assert twice.returncode == 2 and "Traceback" not in twice.stderr
    assert ("invalid param 'line 8': part 0 of id 'creds' in scope 'alice' is given again "
            "(first on line 1)") in twice.stderr, twice.stderr
    assert subprocess.run([*CLI, "export", *import_target], capture_output=True, text=True,
                          check=True).stdout == ""
    subprocess.run([*CLI, "import", *import_target], input=EARLIER_EXPORT, capture_output=True,
                   text=True, check=True)
    upload = EARLIER_EXPORT.split("\n")[4]
    for line, what in ((fact, "part 0 of id 'creds'"), (upload, "the upload of id 'blob.bin'")):
        again = subprocess.run([*CLI, "import", *import_target],
                               input=_with(fact, id="new-one") + "\n" + line + "\n",
                               capture_output=True, text=True)
        assert again.returncode == 2 and "Traceback" not in again.stderr
        assert f"{what} in scope" in again.stderr and "already stored; nothing was imported" in again.stderr
    assert subprocess.run([*CLI, "export", *import_target], capture_output=True, text=True,
                          check=True).stdout == EARLIER_EXPORT


def test_import_refuses_meta_values_no_json_answer_can_carry(import_target: list[str]):
    """Import read meta with Python's JSON reader, which takes NaN and
    Infinity (1e999), and checked no number: every later answer holding the
    row was invalid JSON, where remember refuses such meta (memory probe).
    Both refuse the same values now, naming where in the meta."""
    fact = EARLIER_EXPORT.split("\n")[0]
    for meta, problem in (('{"a":NaN}', "NaN is not a JSON value"),
                          ('{"a":[-Infinity]}', "-Infinity is not a JSON value"),
                          ('{"b":1e999}', "meta.b must be a finite number"),
                          ('{"c":{"d":79228162514264337593543950336}}',
                           "meta.c.d is outside the 64-bit integer range")):
        refused = subprocess.run([*CLI, "import", *import_target], input=_with(fact, meta=meta) + "\n",
                                 capture_output=True, text=True)
        assert refused.returncode == 2 and "Traceback" not in refused.stderr, refused.stderr
        assert "invalid param 'line 1'" in refused.stderr and problem in refused.stderr, refused.stderr
    assert subprocess.run([*CLI, "export", *import_target], capture_output=True, text=True,
                          check=True).stdout == ""
    # remember's own check, the one import applies (model.check_meta).
    for meta in ({"a": float("nan")}, {"b": [float("inf")]}, {"c": 2**96}):
        with pytest.raises(InvalidParams):
            check_meta(meta)


def test_an_export_reads_a_store_and_never_moves_or_makes_one(tmp_path: Path):
    """`memory export --db` of a copy of a store sealed for another place (a
    backup) quarantined it: the file moved aside, an empty store made in
    its place, nothing exported, exit 0. Of a path holding no store, it made
    one and exported nothing, exit 0."""
    db = tmp_path / "index.db"
    subprocess.run([*CLI, "import", "--db", str(db)], input=EARLIER_EXPORT, capture_output=True,
                   text=True, check=True)
    copy = tmp_path / "backup" / "copy.db"
    copy.parent.mkdir()
    copy.write_bytes(db.read_bytes())  # sealed for the first path, not this one
    refused = subprocess.run([*CLI, "export", "--db", str(copy)], capture_output=True, text=True)
    assert refused.returncode == 1 and refused.stdout == ""
    assert "sealed for another place" in refused.stderr and "left as it is" in refused.stderr
    assert [p.name for p in copy.parent.iterdir()] == ["copy.db"]
    assert copy.read_bytes() == db.read_bytes()
    missing = tmp_path / "typo.db"
    refused = subprocess.run([*CLI, "export", "--db", str(missing)], capture_output=True, text=True)
    assert refused.returncode == 1 and "no store at" in refused.stderr and not missing.exists()
    assert subprocess.run([*CLI, "export", "--db", str(db)], capture_output=True, text=True,
                          check=True).stdout == EARLIER_EXPORT
