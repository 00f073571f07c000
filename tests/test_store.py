"""The store's on-disk format: versioning, rebuilds, crash and corruption."""

from __future__ import annotations

import logging
import os
import random
import sqlite3
import threading
import time
from pathlib import Path

import pytest

from ctxls.index import store as store_module
from ctxls.index.store import database as store_database
from ctxls.index.engine import Engine, EngineOptions
from ctxls.index.errors import StoreError, StoreUnavailable, WriteFailed
from ctxls.index.scopes import EVERYTHING
from ctxls.index.store import Store, StoreVersionError, read_snapshot
from ctxls.index.tokenize import expand_tokens

from conftest import SAMPLE_FILES, write_tree


def make_engine(root: Path, db: Path) -> Engine:
    return Engine(root, EngineOptions(db_path=str(db)))


@pytest.fixture
def plain_repo(tmp_path: Path) -> Path:
    root = tmp_path / "plain"
    root.mkdir()
    write_tree(root, SAMPLE_FILES)
    return root


def test_wal_mode_and_stamp_are_recorded(plain_repo: Path, tmp_path: Path):
    engine = make_engine(plain_repo, tmp_path / "db" / "index.db")
    engine.index()
    conn = sqlite3.connect(tmp_path / "db" / "index.db")
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    meta = dict(conn.execute("SELECT key, value FROM meta"))
    seal = {key: meta.pop(key) for key in ("store_id", "owner_uid", "store_path", "store_seal")}
    assert meta == {"schema_version": str(store_module.SCHEMA_VERSION),
                    "index_stamp": store_module.INDEX_STAMP,
                    "paths_generation": str(len(SAMPLE_FILES)),  # one per file added
                    "memory_text_version": str(store_module.MEMORY_TEXT_VERSION),
                    # A whole pass completed: a restart answers from these rows at once.
                    store_module.INDEX_COMPLETE_KEY: store_module.INDEX_STAMP}
    assert seal["store_path"] == str((tmp_path / "db" / "index.db").resolve())
    engine.close()


def test_stamp_mismatch_rebuilds_file_rows_but_keeps_the_edit_log(plain_repo: Path, tmp_path: Path):
    db = tmp_path / "index.db"
    engine = make_engine(plain_repo, db)
    engine.index()
    engine.set_buffer("pkg/retry.py", "def changed_in_buffer():\n    pass\n")
    assert engine.recent_activity()
    engine.close()
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE meta SET value = 'chunker-0/tokenizer-0' WHERE key = 'index_stamp'")

    reopened = make_engine(plain_repo, db)
    assert reopened.store.rebuilt
    assert reopened.store.counts() == {"files": 0, "chunks": 0}
    # The rows a whole pass left are gone: a restart may not answer from them.
    assert store_module.INDEX_COMPLETE_KEY not in reopened.store.meta()
    assert [a.symbol for a in reopened.recent_activity()] != []  # history survives
    stats = reopened.index()
    assert stats.added == 5
    reopened.close()


def _file_terms(engine: Engine, path: str) -> dict:
    """kind -> (chunks, token -> chunks holding it), as stored and as counted
    again from the file's chunk rows."""
    conn = engine.store.reader()
    (file_id,) = conn.execute("SELECT id FROM files WHERE path = ?", (path,)).fetchone()
    stored = {kind: (chunks, dict(store_module.parse_file_terms(terms))) for kind, chunks, terms in conn.execute(
        "SELECT kind, chunks, terms FROM file_terms WHERE file_id = ?", (file_id,))}
    counted: dict = {}
    for kind, text in conn.execute("SELECT kind, text FROM chunks WHERE file_id = ?", (file_id,)):
        chunks, tokens = counted.setdefault(kind, (0, {}))
        for token in set(expand_tokens(text)):
            tokens[token] = tokens.get(token, 0) + 1
        counted[kind] = (chunks + 1, tokens)
    return {"stored": stored, "counted": counted}


def test_file_terms_follow_a_files_chunks_through_edits_and_removal(tmp_path: Path):
    def function(name: str, word: str) -> str:
        return f"def {name}(text):\n" + f"    {word} = text.split()  # keep the {word} for the log\n" * 12 \
            + f"    return {word}\n\n\n"
    root = tmp_path / "repo"
    write_tree(root, {"a.py": function("parse", "tokens") + function("render", "pieces")
                      + function("store", "records"), "b.py": function("other", "tokens")})
    engine = make_engine(root, tmp_path / "db" / "index.db")
    engine.index()
    first = _file_terms(engine, "a.py")
    assert first["stored"] == first["counted"]
    def token(word: str) -> str:
        return expand_tokens(word)[-1]  # its stem
    assert first["stored"]["code"][1][token("tokens")] == 1 and first["stored"]["code"][1]["keep"] == 3
    # One function edited, one removed: only those chunks' rows change.
    (root / "a.py").write_text(function("parse", "tokens") + function("render", "fragments"))
    engine.index()
    edited = _file_terms(engine, "a.py")
    assert edited["stored"] == edited["counted"]
    chunks, tokens = edited["stored"]["code"]
    assert chunks < first["stored"]["code"][0]
    assert token("records") not in tokens and token("pieces") not in tokens and tokens[token("fragments")] == 1
    assert tokens["keep"] == 2
    (root / "a.py").unlink()
    engine.index()
    conn = engine.store.reader()
    assert conn.execute("SELECT count(*) FROM file_terms").fetchone()[0] == 1  # b.py's
    engine.close()


def test_file_terms_stay_exact_through_many_buffer_edits_small_and_wholesale(tmp_path: Path):
    """Small edits change a few tokens' counts in place; a rewrite changes
    hundreds and takes the whole-row path: after each, every stored count is
    the count over the file's chunks (prefix-sharing tokens included)."""
    rng = random.Random(11)
    words = ["token", "tokens", "tokenizer", "render", "renderer", "cache", "cached", "store",
             "parse", "parser", "queue", "queued", "flush", "index", "indexer"]

    def function(name: str, body_words: list[str]) -> str:
        lines = "".join(f"    {w} = {w}_{i}(text)  # {w} step\n" for i, w in enumerate(body_words))
        return f"def {name}(text):\n{lines}    return text\n\n\n"

    def source(functions: dict[str, list[str]]) -> str:
        return "".join(function(name, body) for name, body in functions.items())

    root = tmp_path / "repo"
    functions = {f"step_{i}": rng.sample(words, 5) for i in range(6)}
    write_tree(root, {"a.py": source(functions)})
    engine = make_engine(root, tmp_path / "db" / "index.db")
    engine.index()
    for edit in range(40):
        if edit % 10 == 9:  # a rewrite: every function new, with fresh words
            functions = {f"fresh_{edit}_{i}": [f"word{edit}x{j}" for j in range(12)] + rng.sample(words, 3)
                         for i in range(8)}
        elif edit % 7 == 3:  # a function added, another dropped
            functions.pop(rng.choice(sorted(functions)))
            functions[f"added_{edit}"] = rng.sample(words, 4)
        else:  # one word of one function renamed
            name = rng.choice(sorted(functions))
            body = functions[name]
            body[rng.randrange(len(body))] = rng.choice(words)
        engine.set_buffer("a.py", source(functions))
        terms = _file_terms(engine, "a.py")
        assert terms["stored"] == terms["counted"], f"edit {edit}"
    engine.close()


def test_a_schema_4_store_is_rebuilt_to_count_file_terms(plain_repo: Path, tmp_path: Path):
    db = tmp_path / "db" / "index.db"
    engine = make_engine(plain_repo, db)
    engine.index()
    engine.close()
    with sqlite3.connect(db) as conn:  # what ctxls with schema 4 left behind
        conn.execute("DROP TABLE file_terms")
        conn.execute("UPDATE meta SET value = '4' WHERE key = 'schema_version'")
    upgraded = make_engine(plain_repo, db)
    assert upgraded.store.rebuilt
    upgraded.index()
    conn = upgraded.store.reader()
    files_with_chunks = conn.execute("SELECT count(DISTINCT file_id) FROM chunks").fetchone()[0]
    assert conn.execute("SELECT count(DISTINCT file_id) FROM file_terms").fetchone()[0] == files_with_chunks > 0
    assert upgraded.store.meta()["schema_version"] == str(store_module.SCHEMA_VERSION)
    upgraded.close()


def test_a_store_from_before_files_kept_why_they_are_windows_gains_the_column(plain_repo: Path,
                                                                               tmp_path: Path):
    """``files.unparsed`` came after schema 6 as a nullable column: a store
    without it is neither rebuilt nor refused; it gains the column, NULL."""
    db = tmp_path / "db" / "index.db"
    engine = make_engine(plain_repo, db)
    engine.index()
    counts = engine.store.counts()
    engine.close()
    with sqlite3.connect(db) as conn:  # what ctxls before the column left behind
        conn.execute("ALTER TABLE files DROP COLUMN unparsed")
    upgraded = make_engine(plain_repo, db)
    assert not upgraded.store.rebuilt and upgraded.store.counts() == counts
    rows = upgraded.store.reader().execute("SELECT unparsed FROM files").fetchall()
    assert rows and {row[0] for row in rows} == {None}
    upgraded.close()


def test_newer_schema_is_refused_and_left_untouched(plain_repo: Path, tmp_path: Path):
    db = tmp_path / "index.db"
    make_engine(plain_repo, db).close()
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE meta SET value = '999' WHERE key = 'schema_version'")
    before = db.read_bytes()
    store = Store(db)
    assert isinstance(store.error, StoreVersionError) and store.error.code == -32006
    with pytest.raises(StoreVersionError):
        store.reader()
    store.close()
    assert db.read_bytes() == before


def listing(folder: Path) -> dict[str, bytes | None]:
    return {p.name: (p.read_bytes() if p.is_file() else None) for p in folder.iterdir()}


@pytest.mark.parametrize("planted", ["text", "folder", "sqlite"])
def test_a_db_path_that_is_not_ours_is_refused_and_never_touched(plain_repo: Path, tmp_path: Path,
                                                                 planted: str):
    where = tmp_path / "stores"
    where.mkdir()
    db = where / "index.db"
    if planted == "text":
        db.write_bytes(b"a user's notes, not a database\n" * 100)
    elif planted == "folder":
        db.mkdir()
        (db / "keep.txt").write_text("mine")
    else:  # another application's SQLite file
        with sqlite3.connect(db) as conn:
            conn.execute("CREATE TABLE contacts (name TEXT)")
            conn.execute("INSERT INTO contacts VALUES ('ada')")
    before = listing(where)
    engine = make_engine(plain_repo, db)
    assert engine.store.error is not None and engine.store.error.code == -32006
    assert engine.store.error.data["reason"] == {"text": "foreign", "folder": "folder",
                                                 "sqlite": "foreign"}[planted]
    with pytest.raises(StoreUnavailable):
        engine.memory.remember(EVERYTHING, "k", "a fact")
    assert engine.status()["store_error"].code == -32006
    engine.close()
    assert listing(where) == before
    if planted == "folder":
        assert (db / "keep.txt").read_text() == "mine"


class FlakyDisk:
    """sqlite3.connect failing with SQLITE_IOERR while ``failing`` (a disk
    that errors now and recovers later)."""

    def __init__(self, monkeypatch):
        self.failing = True
        real = sqlite3.connect

        def connect(*args, **kwargs):
            if self.failing:
                exc = sqlite3.OperationalError("disk I/O error")
                exc.sqlite_errorcode = 10  # SQLITE_IOERR
                raise exc
            return real(*args, **kwargs)

        monkeypatch.setattr(sqlite3, "connect", connect)
        monkeypatch.setattr(store_database, "RETRY_S", 0.0)


def test_a_transient_open_error_moves_nothing_and_the_store_comes_back(
        plain_repo: Path, tmp_path: Path, monkeypatch):
    db = tmp_path / "index.db"
    engine = make_engine(plain_repo, db)
    engine.memory.remember(EVERYTHING, "deploy", "the deploy needs FOO_URL")
    engine.close()
    before = listing(tmp_path)

    disk = FlakyDisk(monkeypatch)
    reopened = make_engine(plain_repo, db)
    error = reopened.store.error
    assert error is not None and (error.code, error.data["reason"]) == (-32006, "io")
    with pytest.raises(StoreUnavailable):
        reopened.recall("deploy FOO_URL")
    with pytest.raises(StoreUnavailable):
        reopened.memory.remember(EVERYTHING, "lost", "never acknowledged")
    status = reopened.status()
    assert status["store_error"].data["reason"] == "io" and status["files"] == 0
    assert listing(tmp_path) == before  # nothing moved aside, nothing written

    disk.failing = False  # the disk recovers: the next access reopens the same store
    assert reopened.memory.count(EVERYTHING) == 1
    assert "store_error" not in reopened.status()
    assert not any(".corrupt-" in p.name for p in tmp_path.iterdir())
    reopened.close()


def corrupt_table_page(db: Path, table: str) -> None:
    """Overwrite the root page of ``table`` with garbage (the header stays)."""
    with sqlite3.connect(db) as conn:
        page_size = conn.execute("PRAGMA page_size").fetchone()[0]
        (root,) = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = ?", (table,)).fetchone()
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    with open(db, "r+b") as fh:
        fh.seek((root - 1) * page_size)
        fh.write(b"\xde\xad\xbe\xef" * (page_size // 4))


@pytest.mark.parametrize("table", ["chunks", "meta"])
def test_our_corrupt_store_is_moved_aside_and_its_memory_carried_over(plain_repo: Path, tmp_path: Path,
                                                                      table: str):
    """Damage found on open (quick_check). With the seal unreadable (the meta
    table's page) nothing proves the rows are this user's: they wait in
    quarantine until `trust-memory` (issue 38)."""
    db = tmp_path / "index.db"
    engine = make_engine(plain_repo, db)
    engine.index()
    for n in range(300):
        engine.memory.remember(EVERYTHING, f"fact-{n}", f"fact number {n} about deploys")
    engine.stash.put("parked", "a parked payload")
    engine.close()
    corrupt_table_page(db, table)

    reopened = make_engine(plain_repo, db)
    assert reopened.store.error is None and reopened.store.rebuilt
    assert reopened.status()["repaired"]["moved_to"].startswith(str(db))
    if table == "meta":
        assert len(list(tmp_path.glob("index.db.quarantined-*[0-9]"))) == 1
        assert reopened.memory.count(EVERYTHING) == 0
        assert reopened.status()["quarantined"]["memory"] == 300
        assert reopened.trust_quarantined()["imported"]["memory"] == 300
    else:
        assert len(list(tmp_path.glob("index.db.corrupt-*[0-9]"))) == 1
    assert reopened.memory.count(EVERYTHING) == 300
    hits = reopened.recall("fact number 299", kinds=["fact"], mode="lexical").hits_by_kind["fact"]
    assert hits[0].path == "fact-299"
    assert reopened.stash.peek("parked").head == "a parked payload"
    assert reopened.index().added == 5
    reopened.close()


def test_a_quarantined_store_without_written_rows_is_not_warned_about(plain_repo: Path, tmp_path: Path,
                                                                    caplog: pytest.LogCaptureFixture):
    """A repository copied with its .ctxls/ is quarantined on first use; with
    no written memory in it there is nothing to trust, yet every CLI call
    (an engine each) warned "0 written memory rows … are quarantined"."""
    db = tmp_path / "index.db"
    engine = make_engine(plain_repo, db)
    engine.index()
    engine.close()
    corrupt_table_page(db, "meta")  # the seal unreadable: moved to quarantine
    make_engine(plain_repo, db).close()
    assert len(list(tmp_path.glob("index.db.quarantined-*[0-9]"))) == 1
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        again = make_engine(plain_repo, db)
    try:
        assert again.status()["quarantined"]["memory"] == 0
        assert not [r for r in caplog.records if "quarantined" in r.getMessage()]
    finally:
        again.close()


def test_a_corrupt_file_without_our_marker_is_refused_not_moved(plain_repo: Path, tmp_path: Path):
    db = tmp_path / "index.db"
    with sqlite3.connect(db) as conn:  # SQLite, but not provably ours
        conn.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        conn.execute("CREATE TABLE other (x)")
    corrupt_table_page(db, "meta")
    before = listing(tmp_path)
    engine = make_engine(plain_repo, db)
    assert engine.store.error is not None and engine.store.error.data["reason"] == "corrupt"
    engine.close()
    assert listing(tmp_path) == before


def test_interrupted_write_leaves_the_file_wholly_old(plain_repo: Path, tmp_path: Path):
    engine = make_engine(plain_repo, tmp_path / "index.db")
    engine.index()
    before = engine.store.reader().execute(
        "SELECT count(*) FROM chunks c JOIN files f ON f.id = c.file_id "
        "WHERE f.path = 'pkg/session.py'").fetchone()[0]
    with pytest.raises(RuntimeError):
        with engine.store.write() as conn:
            engine.store.delete_file(conn, "pkg/session.py")
            raise RuntimeError("crash mid-transaction")
    after = engine.store.reader().execute(
        "SELECT count(*) FROM chunks c JOIN files f ON f.id = c.file_id "
        "WHERE f.path = 'pkg/session.py'").fetchone()[0]
    assert before == after > 0
    engine.close()


def test_unchanged_files_are_not_rechunked_and_mtime_only_changes_are_cheap(
        plain_repo: Path, tmp_path: Path):
    engine = make_engine(plain_repo, tmp_path / "index.db")
    engine.index()
    ids = engine.store.reader().execute("SELECT id FROM chunks ORDER BY id").fetchall()
    target = plain_repo / "pkg/session.py"
    target.write_text(target.read_text())  # new mtime, same content
    stats = engine.index()
    assert (stats.updated, stats.unchanged) == (0, 5)
    assert engine.store.reader().execute("SELECT id FROM chunks ORDER BY id").fetchall() == ids
    engine.close()


def test_buffer_rows_are_reconciled_with_disk_after_a_restart(plain_repo: Path, tmp_path: Path):
    db = tmp_path / "index.db"
    engine = make_engine(plain_repo, db)
    engine.index()
    engine.set_buffer("pkg/retry.py", "def unsaved_only():\n    pass\n")
    engine.close()  # the daemon died with an unsaved buffer indexed
    reopened = make_engine(plain_repo, db)
    assert reopened.index().updated == 1
    result = reopened.recall("unsaved_only", ["code"])
    assert all(h.symbol != "unsaved_only" for h in result.hits_by_kind["code"])
    reopened.close()


def fill_the_disk(engine: Engine) -> None:
    """SQLite's own "database or disk is full" (SQLITE_FULL): the file may not grow."""
    conn = engine.store._writer
    conn.execute(f"PRAGMA max_page_count = {conn.execute('PRAGMA page_count').fetchone()[0]}")


def test_a_write_on_a_full_disk_fails_with_a_code_and_nothing_is_acknowledged(
        plain_repo: Path, tmp_path: Path):
    db = tmp_path / "index.db"
    engine = make_engine(plain_repo, db)
    engine.memory.remember(EVERYTHING, "kept", "written before the disk filled up")
    fill_the_disk(engine)
    with pytest.raises(WriteFailed) as err:
        engine.memory.remember(EVERYTHING, "big", "x " * 200_000)
    assert (err.value.code, err.value.data["reason"]) == (-32007, "full")
    engine.close()
    reopened = make_engine(plain_repo, db)
    assert reopened.memory.count(EVERYTHING) == 1
    reopened.close()


def test_a_cold_index_failing_on_a_full_disk_ends_with_indexing_false_and_the_error(
        plain_repo: Path, tmp_path: Path):
    write_tree(plain_repo, {f"gen/mod_{n}.py": f"def generated_{n}():\n    return {n}\n" * 20
                            for n in range(100)})
    engine = make_engine(plain_repo, tmp_path / "index.db")
    fill_the_disk(engine)
    with pytest.raises(WriteFailed):
        engine.cold_index()
    status = engine.status()
    assert status["indexing"] is False and status["complete"] is False
    assert status["index_error"].code == -32007
    engine.store._writer.execute("PRAGMA max_page_count = 1073741823")  # space freed
    engine.cold_index()
    assert "index_error" not in engine.status() and engine.status()["files"] == 105
    engine.close()


def free_the_disk(engine: Engine) -> None:
    engine.store._writer.execute("PRAGMA max_page_count = 1073741823")


def wait_for(condition, timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.02)
    return condition()


def test_a_first_pass_refused_by_a_full_disk_is_tried_again_and_answers_say_why(
        plain_repo: Path, tmp_path: Path, monkeypatch):
    """A daemon's first pass on a full disk failed once and for all: status
    said "error" and answers "indexing is still running" until a restart,
    although space had been freed. It is now tried again (backoff), and
    answers meanwhile say why they may miss files."""
    from ctxls.index import engine as engine_module

    monkeypatch.setattr(engine_module, "STORE_RETRY_S", 0.05)
    write_tree(plain_repo, {f"gen/mod_{n}.py": f"def generated_{n}():\n    return {n}\n" * 20
                            for n in range(100)})
    engine = make_engine(plain_repo, tmp_path / "index.db")
    warnings: list[str] = []
    engine.on_warning = warnings.append
    fill_the_disk(engine)
    result: dict = {}
    runner = threading.Thread(target=lambda: result.setdefault("stats", engine.first_pass()))
    runner.start()
    try:
        assert wait_for(lambda: engine.index_error is not None)
        assert engine.status()["state"] == "error" and not engine.cold_index_done
        reason = engine.recall("generated", ["code"], mode="lexical").partial_reason
        assert reason.startswith("the index could not be updated (nothing was written to") \
            and "full" in reason
        time.sleep(0.3)  # several refusals ...
        assert len(warnings) == 1 and "tried again" in warnings[0]  # ... one warning
        free_the_disk(engine)
        runner.join(30)
        assert result["stats"].files == 105
        status = engine.status()
        assert (status["state"], status["files"], "index_error" in status) == ("ready", 105, False)
        assert engine.recall("generated_7", ["code"], mode="lexical").partial_reason is None
    finally:
        free_the_disk(engine)
        runner.join(30)
        engine.close()


def test_a_first_pass_waiting_to_be_tried_again_goes_at_once_when_a_write_succeeds(
        plain_repo: Path, tmp_path: Path, monkeypatch):
    """Space freed and a file written (the watcher indexed it): the store takes
    writes again, so the first pass does not sit out its backoff (up to a minute)."""
    from ctxls.index import engine as engine_module

    monkeypatch.setattr(engine_module, "STORE_RETRY_S", 3600.0)
    write_tree(plain_repo, {f"gen/mod_{n}.py": f"def generated_{n}():\n    return {n}\n" * 20
                            for n in range(100)})
    engine = make_engine(plain_repo, tmp_path / "index.db")
    fill_the_disk(engine)
    runner = threading.Thread(target=engine.first_pass)
    runner.start()
    try:
        assert wait_for(lambda: engine.index_error is not None)
        free_the_disk(engine)
        write_tree(plain_repo, {"pkg/late.py": "def written_after_space_was_freed():\n    pass\n"})
        engine.files_changed_on_disk(["pkg/late.py"])
        runner.join(30)
        assert not runner.is_alive() and engine.cold_index_done
        assert engine.status()["files"] == 106
    finally:
        engine._closing.set()  # a pass still waiting stops
        runner.join(30)
        engine.close()


def test_a_cli_answer_without_a_daemon_comes_from_the_store_when_it_cannot_be_updated(
        plain_repo: Path, monkeypatch):
    """`ctxls recall` / `get` without a daemon catch the index up first; on a
    full disk that write failed and so did the question. The answer now comes
    from what the store holds, partial, saying why."""
    from ctxls.daemon.client import EngineAccess

    first = EngineAccess(plain_repo, use_daemon=False)
    first.request("ctxls/status", {})
    first.close()
    write_tree(plain_repo, {f"gen/mod_{n}.py": f"def generated_{n}():\n    return {n}\n" * 20
                            for n in range(100)})
    index = Engine.index

    def index_on_a_full_disk(engine: Engine, *args, **kwargs):
        fill_the_disk(engine)
        return index(engine, *args, **kwargs)

    monkeypatch.setattr(Engine, "index", index_on_a_full_disk)
    access = EngineAccess(plain_repo, use_daemon=False)
    try:
        answer = access.request("ctxls/recall", {"query": "retry backoff", "kinds": ["code"]})
        assert answer["partial"] is True and "could not be updated" in answer["partialReason"]
        assert any(hit["path"] == "pkg/retry.py" for hit in answer["groups"]["code"])
        item = access.request("ctxls/get", {"id": "pkg/retry.py", "startLine": 0})
        assert item["id"] == "pkg/retry.py"
        # `ctxls status` says why in its state line (it said "state error" alone).
        from ctxls.daemon.formatting import PLAIN, status_lines
        shown = status_lines(access.request("ctxls/status", {}), "local", PLAIN)
        assert "  state    error (nothing was written to " in shown and "disk is full)" in shown
    finally:
        access.close()


def test_a_store_deleted_while_open_is_created_anew_and_writes_land_in_it(
        plain_repo: Path, tmp_path: Path):
    """The written memory of the deleted store (`git clean -fdx` takes
    `.ctxls`) was lost with it; it is read through the connection still open
    on the deleted file and carried into the new store, which status says."""
    db = tmp_path / "index.db"
    engine = make_engine(plain_repo, db)
    engine.cold_index()
    engine.set_buffer("pkg/retry.py", "def only_in_the_buffer():\n    pass\n")
    engine.memory.remember(EVERYTHING, "before", "written before the store was deleted")
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)

    engine.memory.remember(EVERYTHING, "after", "written after the store was deleted")
    with sqlite3.connect(db) as conn:  # on disk, in the file at dbPath
        keys = sorted(r[0] for r in conn.execute("SELECT key FROM memory"))
    assert keys == ["after", "before"]
    repaired = engine.status()["repaired"]
    assert repaired["carried"]["memory"] == 1 and repaired["moved_to"] is None
    assert "deleted while open" in repaired["cause"]
    fact = engine.recall("written before the store was deleted", ["fact"], mode="lexical")
    assert fact.hits_by_kind["fact"][0].path == "before"
    # The files and the open buffer are indexed again into the new store.
    deadline = time.monotonic() + 60
    while not engine.cold_index_done and time.monotonic() < deadline:
        time.sleep(0.05)
    while time.monotonic() < deadline:
        hits = engine.recall("only_in_the_buffer", ["code"], mode="lexical").hits_by_kind["code"]
        if hits:
            break
        time.sleep(0.05)
    assert engine.status()["files"] == 5
    assert hits and hits[0].symbol == "only_in_the_buffer"
    # Filling the new, empty store is a first index: no file it adds is an
    # edit (the edits carried from the deleted store are the editor's own).
    assert [a for a in engine.recent_activity() if a.origin != "editor"] == []
    engine.close()


def test_a_store_replaced_by_what_cannot_be_opened_is_indexed_again_once_it_opens(
        plain_repo: Path, tmp_path: Path, monkeypatch):
    """The store file replaced under the engine by something its first
    reopen refuses (a folder here; a full disk or no descriptors left fail
    it alike) was created anew once the path was free, but the engine was
    never told: it served the new, empty store as complete (0 files, no
    hits) and never indexed the tree again. The open that succeeds tells it."""
    monkeypatch.setattr(store_database, "RETRY_S", 0.0)
    monkeypatch.setattr(store_database, "IDENTITY_CHECK_S", 0.0)
    db = tmp_path / "index.db"
    engine = make_engine(plain_repo, db)
    engine.cold_index()
    files = engine.status()["files"]
    db.rename(tmp_path / "moved-away.db")
    db.mkdir()
    with pytest.raises(StoreUnavailable, match="is a folder"):
        engine.store.meta()
    db.rmdir()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if engine.status()["files"] == files and engine.cold_index_done:
            break
        time.sleep(0.05)
    assert engine.status()["files"] == files
    hits = engine.recall("retry", ["code"], mode="lexical").hits_by_kind["code"]
    assert hits and hits[0].path == "pkg/retry.py"
    engine.close()


def test_written_memory_and_the_stash_are_synced_before_they_are_acknowledged(
        plain_repo: Path, tmp_path: Path):
    """WAL with synchronous NORMAL survives a crash of the process but a
    power loss may take back the last commits: fine for derived rows, not for
    an acknowledged remember, forget or stash. Those commit with FULL."""
    engine = make_engine(plain_repo, tmp_path / "index.db")
    engine.cold_index()
    store = engine.store
    with store.write() as conn:
        assert conn.execute("PRAGMA synchronous").fetchone()[0] == 1  # NORMAL
    with store.write(durable=True) as conn:
        assert conn.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
    with store.write() as conn:
        assert conn.execute("PRAGMA synchronous").fetchone()[0] == 1
    statements: list[str] = []
    store._writer.set_trace_callback(statements.append)
    try:
        engine.memory.remember(EVERYTHING, "k", "a fact")
        engine.memory.forget(EVERYTHING, key="k")
        engine.stash.put("s1", "stashed text")
        synced = [s for s in statements if s.startswith(("PRAGMA synchronous", "BEGIN", "COMMIT"))]
        assert synced == ["PRAGMA synchronous = FULL", "BEGIN IMMEDIATE", "COMMIT",
                          "PRAGMA synchronous = NORMAL"] * 3, synced
        statements.clear()
        (plain_repo / "pkg/retry.py").write_text("def edited():\n    pass\n")
        engine.file_changed_on_disk("pkg/retry.py")
        assert "BEGIN IMMEDIATE" in statements and "PRAGMA synchronous = FULL" not in statements
    finally:
        store._writer.set_trace_callback(None)
        engine.close()


def test_a_rebuild_of_a_deleted_store_cut_short_by_close_logs_no_failure(
        plain_repo: Path, tmp_path: Path, caplog):
    """Closing stops the rebuild's pass (Cancelled): stopped, not failed. It
    was logged as "re-indexing … into its new store failed" with a traceback."""
    db = tmp_path / "index.db"
    engine = make_engine(plain_repo, db)
    engine.cold_index()
    first_pass = engine.cold_index

    def after_close(*args, **kwargs):  # the rebuild starts its pass once close began
        engine._closing.wait(10)
        return first_pass(*args, **kwargs)

    engine.cold_index = after_close
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    engine.memory.remember(EVERYTHING, "after", "written after the store was deleted")
    rebuild = next(t for t in threading.enumerate() if t.name == "ctxls-store-rebuild")
    engine.close()
    rebuild.join(10)
    assert not rebuild.is_alive()
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []


def test_a_repository_moved_or_deleted_while_served_is_never_created_again(plain_repo: Path, tmp_path: Path):
    """The store in a repository's own `.ctxls` was created anew when it
    vanished, and with it the repository's folder: a folder moved or
    deleted while served came back holding only an empty store, where the
    next memory went (the memory written before had moved with the folder).
    Now every request says the folder is gone (-32006, nothing written)
    until it is back, and then the store it holds serves again."""
    engine = Engine(plain_repo, EngineOptions())
    try:
        engine.cold_index()
        engine.memory.remember(EVERYTHING, "before", "written before the folder moved")
        moved = tmp_path / "moved_away"
        plain_repo.rename(moved)
        time.sleep(store_database.IDENTITY_CHECK_S)
        with pytest.raises(StoreUnavailable) as refused:
            engine.memory.remember(EVERYTHING, "while_gone", "written while the folder was gone")
        assert refused.value.code == -32006 and "is gone" in refused.value.message
        with pytest.raises(StoreUnavailable):
            engine.recall("session", ["code"], mode="lexical")
        assert not plain_repo.exists()
        moved.rename(plain_repo)
        time.sleep(store_database.RETRY_S)
        engine.memory.remember(EVERYTHING, "after", "written once the folder was back")
        hits = engine.recall("written before the folder moved", ["fact"]).hits_by_kind["fact"]
        assert [h.path for h in hits][:1] == ["before"]
        assert engine.memory.count(EVERYTHING) == 2  # before and after; nothing while it was gone
    finally:
        engine.close()


def test_a_store_closed_under_a_request_is_a_store_error_not_an_internal_one(tmp_path: Path):
    # A request still running when its folder is removed meets a closed
    # connection: -32006 / -32007 with reason "closed", not -32603.
    conn = sqlite3.connect(tmp_path / "x.db")
    conn.close()
    with pytest.raises(sqlite3.ProgrammingError) as raised:
        conn.execute("SELECT 1")
    read = store_module.store_error(raised.value, "x.db", writing=False)
    write = store_module.store_error(raised.value, "x.db", writing=True)
    assert isinstance(read, StoreUnavailable) and read.reason == "closed" and read.code == -32006
    assert isinstance(write, WriteFailed) and write.reason == "closed" and write.code == -32007
    # A mistake in a statement stays what it is.
    other = sqlite3.connect(":memory:")
    with pytest.raises(sqlite3.Error) as raised:
        other.execute("SELEC 1")
    assert store_module.store_error(raised.value, "x.db", writing=False) is None


# -- one read snapshot per request -------------------------------------------------------

def memory_rows(store: Store) -> int:
    return store.reader().execute("SELECT count(*) FROM memory").fetchone()[0]


def test_a_request_reads_one_snapshot_while_another_thread_commits(plain_repo: Path, tmp_path: Path):
    """Readers ran in autocommit: a request reading twice could see two
    states. Inside read_snapshot (what the router gives every request) a
    commit made by another thread between the two reads is not seen; the
    next request sees it."""
    engine = make_engine(plain_repo, tmp_path / "index.db")
    engine.memory.remember(EVERYTHING, "first", "the first fact")
    with read_snapshot():
        before = memory_rows(engine.store)
        writer = threading.Thread(
            target=engine.memory.remember, args=(EVERYTHING, "second", "committed meanwhile"))
        writer.start()
        writer.join(timeout=30)
        assert not writer.is_alive()
        assert memory_rows(engine.store) == before == 1
        assert engine.store.counts()["files"] == 0  # a nested snapshot is the same one
    assert memory_rows(engine.store) == 2
    engine.close()


def test_a_request_sees_its_own_writes_and_a_new_round_sees_all(plain_repo: Path, tmp_path: Path):
    engine = make_engine(plain_repo, tmp_path / "index.db")
    with read_snapshot():
        assert memory_rows(engine.store) == 0
        engine.memory.remember(EVERYTHING, "mine", "written by this request")
        assert memory_rows(engine.store) == 1  # write() renewed this thread's snapshot
        other = threading.Thread(
            target=engine.memory.remember, args=(EVERYTHING, "theirs", "another thread's"))
        other.start()
        other.join(timeout=30)
        assert memory_rows(engine.store) == 1
        engine.store.renew_snapshot()  # what each round of Engine.fresh_answer does
        assert memory_rows(engine.store) == 2
    engine.close()


def test_a_get_whose_snapshot_began_before_the_first_pass_ended_sees_the_pass(plain_repo: Path,
                                                                                tmp_path: Path):
    """`get` reads memory first, which takes the request's snapshot; a first
    pass ending right after that left the file "not found" (seen in the MCP
    bridge under load): waiting for the index renews the snapshot."""
    engine = make_engine(plain_repo, tmp_path / "index.db")
    engine._first_pass_due = True
    path = next(p.relative_to(plain_repo).as_posix() for p in sorted(plain_repo.rglob("*.py")))
    with read_snapshot():
        assert engine.memory.item("no such memory", EVERYTHING) is None  # the snapshot is taken
        indexing = threading.Thread(target=engine.cold_index)
        indexing.start()
        indexing.join(timeout=60)
        assert engine.cold_index_done
        item = engine.get(path)
        assert item is not None and item.text == (plain_repo / path).read_text()
    engine.close()


def test_status_never_says_complete_with_counts_from_before_the_pass_ended(plain_repo: Path,
                                                                             tmp_path: Path,
                                                                             monkeypatch):
    """Status read the counts, then whether the first pass was complete: a
    pass ending in between gave "complete" with 0 files (seen under load)."""
    engine = make_engine(plain_repo, tmp_path / "index.db")
    counts = engine.store.counts

    def counts_as_the_pass_ends() -> dict:
        read = counts()
        engine.cold_index()  # the pass ends right after the counts were read
        return read

    monkeypatch.setattr(engine.store, "counts", counts_as_the_pass_ends)
    status = engine.status()
    assert not (status["complete"] and status["files"] == 0), status
    monkeypatch.setattr(engine.store, "counts", counts)
    assert engine.status()["complete"] and engine.status()["files"] > 0
    engine.close()


def test_a_sqlite_error_leaves_a_snapshot_as_the_librarys_error(plain_repo: Path, tmp_path: Path):
    """The daemon catches StoreError, never sqlite3.Error: a statement's own
    failure is a StoreError (-32603, reason "statement"); the snapshot ends."""
    engine = make_engine(plain_repo, tmp_path / "index.db")
    with pytest.raises(StoreError) as raised:
        with read_snapshot():
            engine.store.reader().execute("SELECT no_such_column FROM files")
    assert not isinstance(raised.value, sqlite3.Error) and isinstance(raised.value.__cause__, sqlite3.Error)
    assert raised.value.code == -32603 and raised.value.data["reason"] == "statement"
    assert not engine.store.reader().in_transaction
    engine.close()


def test_the_readers_of_threads_that_ended_are_closed(tmp_path: Path):
    """A thread per call (an agent's MCP tool calls ran so) opened a reader
    each; all stayed open until the store closed: two file descriptors a
    call, until a long session ran out of them."""
    store = Store(str(tmp_path / "index.db"))

    def open_descriptors() -> int:
        return len(list(Path("/proc/self/fd").iterdir()))

    def one_call() -> None:
        assert store.reader().execute("SELECT count(*) FROM files").fetchone()[0] == 0

    for _ in range(5):  # the first readers open the database's shared files
        thread = threading.Thread(target=one_call)
        thread.start()
        thread.join()
    before = open_descriptors()
    for _ in range(100):
        thread = threading.Thread(target=one_call)
        thread.start()
        thread.join()
    assert open_descriptors() - before <= 2  # the last call's reader, not 200 descriptors
    assert len(store._readers) <= 2
    store.close()


def test_a_repository_that_cannot_hold_its_store_is_indexed_in_the_state_folder(
        plain_repo: Path, monkeypatch):
    """A read-only checkout (a mount, an image, another user's folder) could
    not be served at all: every request answered "index store … cannot be
    used: unable to open database file". Its store, socket and log now live
    in the user's state folder, under a name of the root's path."""
    import os

    from ctxls.daemon.client import EngineAccess, default_socket
    from ctxls.index import roots

    root = plain_repo.resolve()
    access = os.access
    # Root may write anywhere but a read-only mount: the repository says it cannot be written.
    monkeypatch.setattr(roots.os, "access", lambda path, mode: False if Path(path) == root
                        else access(path, mode))
    place = roots.store_dir(root)
    assert place.parent == roots.state_dir() / "stores" and place.name.startswith("plain-")
    assert roots.store_dir(root) == place and default_socket(root) == place / "daemon.sock"
    root.chmod(0o555)
    try:
        access_ = EngineAccess(root, use_daemon=False)
        try:
            status = access_.request("ctxls/status", {})
            assert status["dbPath"] == str(place / "index.db") and status["files"] == 5
            answer = access_.request("ctxls/recall", {"query": "retry upload", "kinds": ["code"]})
            assert answer["groups"]["code"][0]["path"] == "pkg/retry.py"
            assert answer["partialReason"] is None or "could not be updated" not in answer["partialReason"]
        finally:
            access_.close()
    finally:
        root.chmod(0o755)
    assert not (root / ".ctxls").exists()
    # Writable again, the repository keeps the store made meanwhile (its
    # written memory would vanish from view otherwise) ...
    monkeypatch.setattr(roots.os, "access", access)
    assert roots.store_dir(root) == place
    # ... and one that can hold it and has no such store uses its own `.ctxls`.
    other = root.parent / "other"
    other.mkdir()
    assert roots.store_dir(other) == other / ".ctxls"


def test_a_user_without_a_home_folder_is_served(plain_repo: Path, monkeypatch):
    """A container's user with neither $HOME nor a passwd entry: `Path.home()`
    raises, and every verb died with "Could not determine home directory"
    (checking whether the root is the home folder). Without a home there is
    no state folder: the store stays in the repository and is not sealed."""
    from ctxls.daemon.client import default_socket
    from ctxls.index import roots, trust

    for name in ("CTXLS_STATE_DIR", "XDG_STATE_HOME", "HOME"):
        monkeypatch.delenv(name, raising=False)

    def no_home(cls=None):
        raise RuntimeError("Could not determine home directory.")

    monkeypatch.setenv("XDG_STATE_HOME", "relative/state")  # invalid (XDG): ignored, as no value
    monkeypatch.setattr(Path, "home", classmethod(no_home))
    monkeypatch.setattr(trust, "_key_warned", False)
    root = plain_repo.resolve()
    assert roots.too_broad_root(root) is None and roots.state_dir() is None
    assert roots.store_dir(root) == root / ".ctxls"
    assert default_socket(root) == root / ".ctxls" / "daemon.sock"
    assert trust.user_key() is None
    engine = Engine(root, EngineOptions(embeddings=False))
    try:
        assert engine.index().added == 5
        hits = engine.recall("retry upload", ["code"], mode="lexical").hits_by_kind["code"]
        assert hits[0].path == "pkg/retry.py"
    finally:
        engine.close()


def test_an_edit_the_full_disk_refused_is_left_out_said_and_written_once_space_is_freed(
        plain_repo: Path, tmp_path: Path, monkeypatch):
    """A buffer edited while the disk was full: its write failed, status said
    "ready", answers were not partial and served the file's old rows (old
    lines laid over new text) until the next edit of that file. Now its hits
    are left out, answers and status say why, and the edit is written before
    the first answer after space is freed."""
    from ctxls.index import engine as engine_module

    monkeypatch.setattr(engine_module, "STORE_RETRY_S", 0.0)
    engine = make_engine(plain_repo, tmp_path / "index.db")
    try:
        engine.index()
        fill_the_disk(engine)
        moved = "\n" * 40 + (plain_repo / "pkg/retry.py").read_text() \
            + "\n\ndef written_while_full():\n    return 1\n" + "# padding\n" * 30_000
        with pytest.raises(WriteFailed):
            engine.set_buffer("pkg/retry.py", moved)
        result = engine.recall("retry upload", ["code"], mode="lexical")
        assert result.partial and "could not take the latest text of 1 file" in result.partial_reason
        assert all(h.path != "pkg/retry.py" for h in result.hits_by_kind["code"])
        status = engine.status()
        assert status["state"] == "error" and status["index_error"].code == -32007
        free_the_disk(engine)
        found = engine.recall("written_while_full", ["code"], mode="lexical", body=True)
        assert found.partial_reason is None
        hit = found.hits_by_kind["code"][0]
        assert hit.path == "pkg/retry.py" and "def written_while_full" in hit.body
        assert hit.body == "\n".join(moved.split("\n")[hit.start_line:hit.end_line + 1])
        assert engine.status()["state"] != "error"
        # Files changed on disk while it is full: each refused one is
        # remembered (not only the first of the batch), and written later.
        fill_the_disk(engine)
        big = "# padding\n" * 30_000
        write_tree(plain_repo, {"pkg/__init__.py": "def disk_one():\n    pass\n" + big,
                                "pkg/session.py": "def disk_two():\n    pass\n" + big})
        with pytest.raises(WriteFailed):
            engine.files_changed_on_disk(["pkg/__init__.py", "pkg/session.py"])
        assert set(engine._unwritten) == {"pkg/__init__.py", "pkg/session.py"}
        free_the_disk(engine)
        engine.write_unwritten()
        assert not engine._unwritten
        hits = engine.recall("disk_two", ["code"], mode="lexical", body=True).hits_by_kind["code"]
        assert hits[0].path == "pkg/session.py" and "def disk_two():" in hits[0].body
    finally:
        free_the_disk(engine)
        engine.close()


def test_a_headless_daemon_on_a_full_disk_serves_and_indexes_once_it_can(
        plain_repo: Path, monkeypatch):
    """`ctxls serve --root R --socket` (also how an editor's proxy starts a new
    owner) exited on a full disk: its first pass raised before it listened,
    and the proxy's editor lost its server. It now serves what the index
    holds, says why, and the pass is tried again in the background."""
    from ctxls.daemon import server as server_module
    from ctxls.index import engine as engine_module

    monkeypatch.setattr(engine_module, "STORE_RETRY_S", 0.05)
    write_tree(plain_repo, {f"gen/mod_{n}.py": f"def generated_{n}():\n    return {n}\n" * 20
                            for n in range(100)})
    cold_index, filled = Engine.cold_index, []

    def first_try_on_a_full_disk(engine: Engine, *args, **kwargs):
        if not filled:
            filled.append(engine)
            fill_the_disk(engine)
        return cold_index(engine, *args, **kwargs)

    monkeypatch.setattr(Engine, "cold_index", first_try_on_a_full_disk)
    engine = server_module.prewarm(plain_repo)
    try:
        assert engine.index_error is not None and engine.index_error.code == -32007
        reason = engine.recall("generated_7", ["code"], mode="lexical").partial_reason
        assert reason.startswith("the index could not be updated (")
        free_the_disk(engine)
        assert wait_for(lambda: engine.cold_index_done and engine.index_error is None)
        assert engine.status()["files"] == 105
    finally:
        server_module.server.prewarmed.pop(engine.root, None)
        engine.close()


def test_the_state_folder_from_the_environment_is_absolute(tmp_path: Path, monkeypatch):
    """`CTXLS_STATE_DIR=~/ctxls-state` as an editor's settings pass it (not
    expanded by a shell) named a folder "~" under each process's working
    folder; a relative XDG_STATE_HOME (invalid by the XDG spec) likewise."""
    from ctxls.index import roots

    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("CTXLS_STATE_DIR", "~/ctxls-state")
    assert roots.state_dir() == tmp_path / "home" / "ctxls-state"
    monkeypatch.delenv("CTXLS_STATE_DIR")
    monkeypatch.setenv("XDG_STATE_HOME", "state")
    assert roots.state_dir() == tmp_path / "home" / ".local" / "state" / "ctxls"
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))
    assert roots.state_dir() == tmp_path / "xdg" / "ctxls"


def damage_text(db: Path, table: str, column: str, where: str) -> None:
    """One byte of a TEXT value made invalid UTF-8, as a flipped bit inside a
    record does: PRAGMA quick_check still says ok."""
    with sqlite3.connect(db) as conn:
        (value,) = conn.execute(f"SELECT {column} FROM {table} WHERE {where}").fetchone()
        damaged = bytearray(value.encode())
        damaged[len(damaged) // 2] = 0xFF
        conn.execute(f"UPDATE {table} SET {column} = CAST(? AS TEXT) WHERE {where}", (bytes(damaged),))
        assert conn.execute("PRAGMA quick_check").fetchall() == [("ok",)]


_SESSION_FILE = "file_id = (SELECT id FROM files WHERE path = 'pkg/session.py')"
DAMAGED_TEXT = {"file_terms.terms": ("file_terms", "terms", f"{_SESSION_FILE} AND kind = 'code'"),
                "chunks.text": ("chunks", "text", "id = (SELECT id FROM chunks WHERE "
                                                  f"{_SESSION_FILE} AND text LIKE '%def send_prepared%')")}


def session_recalled(engine: Engine) -> bool:
    """Code recall finds pkg/session.py; a request that meets the damage
    fails with a bounded store error (the decode error quoted the whole row)."""
    try:
        with read_snapshot():  # as the daemon's router reads: SQLite's errors become the library's
            hits = engine.recall("send prepared", ["code"], mode="lexical").hits_by_kind.get("code", [])
    except StoreUnavailable as exc:
        assert exc.data["reason"] == "corrupt" and "damaged value" in exc.message, exc.message
        assert len(exc.message) < 600
        return False
    return bool(hits) and hits[0].path == "pkg/session.py"


@pytest.mark.parametrize("damaged", sorted(DAMAGED_TEXT))
def test_an_undecodable_value_met_by_a_query_is_repaired_and_the_file_indexed_again(
        plain_repo: Path, tmp_path: Path, damaged: str):
    """One invalid UTF-8 byte in a file's rows failed every recall for good
    (a decode error was a statement's error: the store was never suspect, and
    quick_check does not read values). Now the next access finds it, drops
    that file's rows and indexes the file again; status says so."""
    db = tmp_path / "index.db"
    engine = make_engine(plain_repo, db)
    engine.index()
    damage_text(db, *DAMAGED_TEXT[damaged])
    try:
        assert wait_for(lambda: session_recalled(engine))
        assert "undecodable" in engine.status()["repaired"]["cause"]
        assert engine.status()["files"] == len(SAMPLE_FILES)
    finally:
        engine.close()


@pytest.mark.parametrize("damaged", sorted(DAMAGED_TEXT))
def test_a_forced_pass_repairs_an_undecodable_value(plain_repo: Path, tmp_path: Path, damaged: str):
    """`index --force` is the remedy that always works: it kept the damaged
    rows (their hash had not changed) and recall kept failing."""
    db = tmp_path / "index.db"
    engine = make_engine(plain_repo, db)
    engine.index()
    damage_text(db, *DAMAGED_TEXT[damaged])
    try:
        assert engine.index(force=True).files == len(SAMPLE_FILES)
        assert session_recalled(engine)
        assert "undecodable" in engine.status()["repaired"]["cause"]
    finally:
        engine.close()


def test_a_forced_pass_rewrites_a_row_damaged_in_a_way_no_check_sees(plain_repo: Path, tmp_path: Path):
    """A byte changed inside a chunk's text that still reads as UTF-8, its
    hash column unchanged, passes every check; `index --force` kept the row
    (its hash matched) and its body stayed wrong."""
    db = tmp_path / "index.db"
    engine = make_engine(plain_repo, db)
    engine.index()
    try:
        with sqlite3.connect(db) as conn:
            conn.execute(f"UPDATE chunks SET text = replace(text, 'def send_prepared', 'def send_prepareX') "
                         f"WHERE {_SESSION_FILE}")
        engine.index(force=True)
        hits = engine.recall("send prepared", ["code"], mode="lexical", body=True).hits_by_kind["code"]
        assert hits[0].path == "pkg/session.py" and "def send_prepared(" in hits[0].body
        with sqlite3.connect(db) as conn:
            assert conn.execute("SELECT count(*) FROM chunks WHERE text LIKE '%send_prepareX%'"
                                ).fetchone() == (0,)
    finally:
        engine.close()


def test_a_store_with_an_undecodable_value_is_repaired_when_opened(plain_repo: Path, tmp_path: Path):
    """A CLI verb without a daemon opens the store each time: the check on
    open reads every value too, so the first verb already answers."""
    db = tmp_path / "index.db"
    engine = make_engine(plain_repo, db)
    engine.index()
    engine.memory.remember(EVERYTHING, "deploy", "deploy with make release")
    engine.close()
    damage_text(db, *DAMAGED_TEXT["chunks.text"])
    reopened = make_engine(plain_repo, db)
    try:
        assert "undecodable" in reopened.status()["repaired"]["cause"]
        assert reopened.index().added == 1  # the damaged file's rows were dropped, the others kept
        assert session_recalled(reopened)
        assert reopened.memory.count(EVERYTHING) == 1
    finally:
        reopened.close()


def test_an_edit_to_a_file_whose_rows_are_damaged_writes_them_anew(plain_repo: Path, tmp_path: Path):
    """The rewrite of an edited file read its damaged term counts first and
    failed: symbols, outline and index failed on that file for good."""
    db = tmp_path / "index.db"
    engine = make_engine(plain_repo, db)
    engine.index()
    damage_text(db, *DAMAGED_TEXT["file_terms.terms"])
    try:
        with open(plain_repo / "pkg" / "session.py", "a") as fh:
            fh.write("\n\ndef brand_new_helper(x):\n    return x\n")
        assert engine.index(["pkg/session.py"]).updated == 1
        terms = _file_terms(engine, "pkg/session.py")
        assert terms["stored"] == terms["counted"]
        hits = engine.recall("brand_new_helper", ["code"], mode="lexical").hits_by_kind["code"]
        assert hits[0].path == "pkg/session.py"
    finally:
        engine.close()


def test_a_first_pass_failing_unexpectedly_leaves_the_daemon_serving(plain_repo: Path, monkeypatch):
    """`ctxls serve --root R --socket` exited when its first pass raised
    anything but a store refusal (a damaged row once): an unexpected
    failure fails that pass, never the daemon."""
    from ctxls.daemon import server as server_module

    def failing_pass(engine: Engine, *args, **kwargs):
        raise RuntimeError("an unexpected failure of the first pass")

    monkeypatch.setattr(Engine, "cold_index", failing_pass)
    engine = server_module.prewarm(plain_repo)
    try:
        assert engine.status()["files"] == 0
        monkeypatch.undo()
        assert engine.index().added == len(SAMPLE_FILES)
    finally:
        server_module.server.prewarmed.pop(engine.root, None)
        engine.close()


def test_a_store_cut_short_after_its_first_commit_is_sealed_not_quarantined(tmp_path: Path, monkeypatch):
    """The seal was a transaction of its own after the schema's: a process
    killed between them (or a second process looking then) left a store of
    this user without a seal, quarantined by the next open."""
    from ctxls.index.store import schema

    db = tmp_path / "index.db"
    monkeypatch.setattr(schema, "_SCHEMA", "CREATE TABLE cut_short (")  # the creation stops there
    assert Store(str(db)).error is not None
    monkeypatch.undo()
    reopened = Store(str(db))
    try:
        assert reopened.error is None and reopened.repair is None
        assert not list(tmp_path.glob("index.db.quarantined-*"))
        assert "store_id" in reopened.meta()
    finally:
        reopened.close()


def open_within_anothers_window(db: Path, inside: threading.Event) -> tuple[list[Store], Store]:
    """A store of ``db`` opened on a thread, and a second opened here once
    the first is ``inside`` its slowed step: ([the first], the second)."""
    first: list[Store] = []
    opening = threading.Thread(target=lambda: first.append(Store(str(db))))
    opening.start()
    assert inside.wait(30)
    second = Store(str(db))
    opening.join()
    return first, second


def test_a_store_opened_while_another_is_making_it_waits_and_uses_that_one(tmp_path: Path, monkeypatch):
    """Three `ctxls index --no-daemon` on a repository without a store: one
    looking between another's schema and its seal quarantined the store just
    made, and the maker failed with "no such table". Opening is exclusive
    between processes (and stores) of one folder."""
    from ctxls.index.store.recovery import Recovery

    db = tmp_path / "index.db"
    seal, making = Recovery._seal, threading.Event()

    def slow_seal(self):
        making.set()
        time.sleep(0.5)  # the window the second store opened in
        return seal(self)

    monkeypatch.setattr(Recovery, "_seal", slow_seal)
    made, second = open_within_anothers_window(db, making)
    try:
        assert second.error is None and made[0].error is None
        assert not list(tmp_path.glob("index.db.quarantined-*"))
        assert second.meta()["store_id"] == made[0].meta()["store_id"]
        with made[0].write() as conn:
            conn.execute("INSERT INTO meta(key, value) VALUES ('probe', '1')")
        assert second.meta()["probe"] == "1"
    finally:
        second.close()
        made[0].close()


def test_a_repair_cut_short_before_the_carry_is_finished_by_the_next_open(
        plain_repo: Path, tmp_path: Path, monkeypatch):
    """A process killed between moving a damaged store aside and carrying
    its written memory over stranded that memory in `index.db.corrupt-*`:
    nothing served, reported or offered it again."""
    from ctxls.index.store.recovery import Recovery

    db = tmp_path / "index.db"
    engine = make_engine(plain_repo, db)
    engine.index()
    engine.memory.remember(EVERYTHING, "deploy", "deploy with make release")
    engine.close()
    corrupt_table_page(db, "chunks")

    def killed(self, aside):
        raise KeyboardInterrupt  # the process ends right there

    monkeypatch.setattr(Recovery, "_carry_over", killed)
    with pytest.raises(KeyboardInterrupt):
        Store(str(db))
    monkeypatch.undo()
    reopened = make_engine(plain_repo, db)
    try:
        repaired = reopened.status()["repaired"]
        assert "cut short" in repaired["cause"] and repaired["carried"]["memory"] == 1, repaired
        assert reopened.memory.count(EVERYTHING) == 1
        assert not list(tmp_path.glob("index.db.repairing-*"))
        assert [p.name for p in tmp_path.glob("index.db.corrupt-*[0-9]")] == [Path(repaired["moved_to"]).name]
    finally:
        reopened.close()


def test_an_empty_store_file_is_replaced_and_said_and_a_folder_journal_named(tmp_path: Path):
    """A zero-length index.db silently became a new store; a folder in place
    of index.db-wal gave SQLite's message, which names no file."""
    db = tmp_path / "index.db"
    db.write_bytes(b"")
    store = Store(str(db))
    try:
        assert store.error is None and "empty" in store.repair["cause"]
    finally:
        store.close()
    other = tmp_path / "other.db"
    (tmp_path / "other.db-wal").mkdir()
    refused = Store(str(other))
    try:
        assert refused.error is not None and refused.error.data["reason"] == "folder"
        assert "other.db-wal" in refused.error.message
    finally:
        refused.close()


def test_two_stores_judging_one_untrusted_store_quarantine_it_once(tmp_path: Path, monkeypatch):
    """Quarantine took no lock between processes: two that judged the same
    unsealed store both moved "it" aside, the second the store the first had
    just made in its place."""
    from ctxls.index import trust

    db = tmp_path / "index.db"
    Store(str(db)).close()
    with sqlite3.connect(db) as conn:  # as a store from a checkout or an archive comes
        conn.execute("DELETE FROM meta WHERE key IN ('store_id', 'owner_uid', 'store_path', 'store_seal')")
    problem, judging = trust.problem, threading.Event()

    def slow_problem(meta, db_path):
        found = problem(meta, db_path)
        judging.set()
        time.sleep(0.3)  # the window the other store judged the same file in
        return found

    monkeypatch.setattr(trust, "problem", slow_problem)
    opened, second = open_within_anothers_window(db, judging)
    try:
        assert second.error is None and opened[0].error is None
        assert len(list(tmp_path.glob("index.db.quarantined-*[0-9]"))) == 1
        assert second.meta()["store_id"] == opened[0].meta()["store_id"]
    finally:
        second.close()
        opened[0].close()


def test_a_store_whose_folder_cannot_be_written_is_refused_as_read_only(tmp_path: Path, monkeypatch):
    """Crash probe (t_ro_checkout): a read-only checkout keeps its own store,
    refused, but the refusal said only SQLite's "unable to open database
    file" (reason cantopen). When the store's folder cannot be written it
    says so, and what to do, as reason readonly."""
    from ctxls.index.store import failures

    with pytest.raises(sqlite3.OperationalError) as raised:
        sqlite3.connect(tmp_path / "missing" / "index.db")  # SQLITE_CANTOPEN
    folder = tmp_path / "checkout" / ".ctxls"
    folder.mkdir(parents=True)
    db_path = str(folder / "index.db")
    writable = os.access
    monkeypatch.setattr(failures.os, "access",
                        lambda path, mode: mode != os.W_OK and writable(path, mode))
    refused = failures.store_error(raised.value, db_path, writing=False)
    assert isinstance(refused, StoreUnavailable) and refused.reason == "readonly"
    assert f"its folder {folder} cannot be written" in refused.message
    assert "set dbPath to a store elsewhere" in refused.message
    monkeypatch.setattr(failures.os, "access", writable)
    assert failures.store_error(raised.value, db_path, writing=False).reason == "cantopen"
