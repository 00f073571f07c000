"""A damaged store is repaired and keeps its written memory (issue 38): pages
overwritten under a running daemon or while none ran, a truncated file, and
the whole-file check skipped only for a file exactly as this user left it.
Through the real `ctxls` command and daemon."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

from conftest import SAMPLE_FILES
from rawrpc import StdioDaemon
from test_untrusted_repository import code_paths, ctxls, facts
from ctxls.index import trust


def corrupt_pages(db: Path, *tables: str) -> None:
    """Garbage over the root pages of ``tables`` (the header stays: the file opens)."""
    with sqlite3.connect(db) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        page_size = conn.execute("PRAGMA page_size").fetchone()[0]
        roots = [conn.execute("SELECT rootpage FROM sqlite_master WHERE name = ?", (t,)).fetchone()[0]
                 for t in tables]
    with open(db, "r+b") as fh:
        for root in roots:
            fh.seek((root - 1) * page_size)
            fh.write(b"\xde\xad\xbe\xef" * (page_size // 4))


def test_a_damaged_store_under_a_running_daemon_is_repaired_and_keeps_its_memory(repo: Path):
    """Garbage in index.db: code recall failed with -32006 for good, `index
    --force` with -32007, status started failing; the only remedy the docs gave,
    deleting .ctxls/, also deleted written memory."""
    daemon = StdioDaemon(repo, {"socket": True})
    try:
        daemon.wait_indexed()
        request = daemon.conn.request
        assert request("ctxls/remember", {"id": "deploy", "text": "deploy with make release"},
                       "w")["result"] == {}
        corrupt_pages(repo / ".ctxls" / "index.db", "chunks", "fts_code_data", "symbols")
        for n in range(20):  # whatever a request meets, every one is answered and status never fails
            recalled = request("ctxls/recall", {"query": "send prepared"}, f"r{n}")
            assert "result" in recalled or recalled["error"]["code"] == -32006, recalled
            assert "result" in request("ctxls/status", {}, f"s{n}")
        forced = ctxls("index", "--root", str(repo), "--force", "--json")
        assert forced.returncode == 0, forced.stderr
        assert json.loads(forced.stdout)["files"] == len(SAMPLE_FILES)
        status = request("ctxls/status", {}, "after")["result"]
        assert status["repaired"]["carried"]["memory"] == 1, status
        assert Path(status["repaired"]["movedTo"]).is_file()
        hits = request("ctxls/recall", {"query": "send prepared"}, "again")["result"]
        assert "pkg/session.py" in [h["path"] for h in hits["groups"]["code"]]
        assert request("ctxls/count", {}, "count")["result"]["count"] == 1
    finally:
        daemon.close()


def test_a_store_damaged_while_no_daemon_ran_is_repaired_on_open(repo: Path):
    assert ctxls("index", str(repo)).returncode == 0
    assert ctxls("remember", "deploy", "deploy with make release", "--root", str(repo)).returncode == 0
    corrupt_pages(repo / ".ctxls" / "index.db", "chunks")
    status = json.loads(ctxls("status", str(repo), "--json").stdout)
    assert status["state"] != "error" and status["repaired"]["carried"]["memory"] == 1, status
    assert code_paths(repo, "send prepared")[0] == "pkg/session.py"
    assert facts(dict(os.environ), repo, "deploy") == ["deploy with make release"]


def test_a_truncated_store_is_repaired_and_says_so(repo: Path):
    """Truncating the file lost its facts while status still said ready."""
    assert ctxls("index", str(repo)).returncode == 0
    assert ctxls("remember", "deploy", "deploy with make release", "--root", str(repo)).returncode == 0
    db = repo / ".ctxls" / "index.db"
    size = db.stat().st_size
    # Cut the file after the last page the schema or the fact's row is on (a
    # fixed share cut the schema itself once the layout moved by a column).
    with sqlite3.connect(db) as conn:
        kept = conn.execute("SELECT max(pageno) FROM dbstat "
                            "WHERE name IN ('sqlite_schema', 'memory')").fetchone()[0]
        page_size = conn.execute("PRAGMA page_size").fetchone()[0]
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
    assert kept < pages
    os.truncate(db, kept * page_size)
    status = json.loads(ctxls("status", str(repo), "--json").stdout)
    repaired = status["repaired"]
    assert repaired["carried"]["memory"] == 1 and os.path.getsize(repaired["movedTo"]) < size
    assert facts(dict(os.environ), repo, "deploy") == ["deploy with make release"]
    assert code_paths(repo, "send prepared")[0] == "pkg/session.py"


def test_the_whole_file_check_is_skipped_only_for_the_file_as_this_user_left_it(repo: Path):
    """A CLI verb without a daemon opens the store every time: the check is
    skipped when the file is exactly as this user's last process closed it,
    and runs on anything else (here: the same size, other bytes)."""
    assert ctxls("index", str(repo)).returncode == 0
    db = repo / ".ctxls" / "index.db"
    with sqlite3.connect(db) as conn:
        store_id = conn.execute("SELECT value FROM meta WHERE key = 'store_id'").fetchone()[0]
    st = db.stat()
    assert trust.unchanged_since_checked(store_id, (st.st_ino, st.st_size, st.st_mtime_ns))
    corrupt_pages(db, "chunks")
    st = db.stat()
    assert not trust.unchanged_since_checked(store_id, (st.st_ino, st.st_size, st.st_mtime_ns))
    status = json.loads(ctxls("status", str(repo), "--json").stdout)
    assert status["repaired"]["cause"] and os.path.exists(status["repaired"]["movedTo"])


def test_an_undecodable_value_no_check_saw_is_repaired_by_the_command_line(repo: Path):
    """One invalid UTF-8 byte in a chunk's text (quick_check says ok) failed
    recall, symbols and outline for good, `index --force` included, and the
    error quoted the whole damaged row."""
    assert ctxls("index", str(repo)).returncode == 0
    assert ctxls("remember", "deploy", "deploy with make release", "--root", str(repo)).returncode == 0
    db = repo / ".ctxls" / "index.db"
    with sqlite3.connect(db) as conn:
        where = ("id = (SELECT c.id FROM chunks c JOIN files f ON f.id = c.file_id "
                 "WHERE f.path = 'pkg/session.py' AND c.text LIKE '%def send_prepared%')")
        (text,) = conn.execute(f"SELECT text FROM chunks WHERE {where}").fetchone()
        damaged = bytearray(text.encode())
        damaged[len(damaged) // 2] = 0xFF
        conn.execute(f"UPDATE chunks SET text = CAST(? AS TEXT) WHERE {where}", (bytes(damaged),))
        assert conn.execute("PRAGMA quick_check").fetchall() == [("ok",)]
    forced = ctxls("index", "--root", str(repo), "--force", "--json")
    assert forced.returncode == 0, forced.stderr
    assert code_paths(repo, "send prepared")[0] == "pkg/session.py"
    assert facts(dict(os.environ), repo, "deploy") == ["deploy with make release"]


def test_a_damaged_check_record_in_the_state_folder_reads_as_no_record(repo: Path):
    """One non-ASCII byte in the state folder's checked/<store_id> (crash
    probe) failed `ctxls status` and `recall` with UnicodeDecodeError and the
    daemon at every start. A record that cannot be read as one is no record:
    the whole-file check runs, and records the file anew."""
    assert ctxls("index", str(repo)).returncode == 0
    assert ctxls("remember", "deploy", "deploy with make release", "--root", str(repo)).returncode == 0
    with sqlite3.connect(repo / ".ctxls" / "index.db") as conn:
        store_id = conn.execute("SELECT value FROM meta WHERE key = 'store_id'").fetchone()[0]
    record = trust.state_dir() / "checked" / store_id
    left = record.read_bytes()
    signature = tuple(map(int, left.split()))
    assert trust.unchanged_since_checked(store_id, signature)
    for damaged in (b"\xf1" + left[1:], left + b" " * 100_000):
        record.write_bytes(damaged)
        assert not trust.unchanged_since_checked(store_id, signature)
    record.write_bytes(b"\xf1" + left[1:])
    status = ctxls("status", str(repo), "--json")
    assert status.returncode == 0 and json.loads(status.stdout)["state"] != "error", status.stderr
    assert record.read_bytes().decode("ascii")  # recorded anew after the check
    assert facts(dict(os.environ), repo, "deploy") == ["deploy with make release"]
    record.write_bytes(b"\xf1" + left[1:])
    daemon = StdioDaemon(repo, {"socket": True})
    try:
        daemon.wait_indexed()
        assert daemon.conn.request("ctxls/count", {}, "count")["result"]["count"] == 1
    finally:
        daemon.close()


def test_a_read_only_checkout_keeps_its_own_store_not_an_empty_one_elsewhere(
        repo: Path, monkeypatch):
    """A checkout whose .ctxls holds this user's store, mounted read-only
    (crash probe): the daemon switched to a new, empty store in the state
    folder, where the written memory was not in view and new memory went,
    never to be seen once the checkout was writable again. The checkout's
    own store stays the store (refused while it cannot be written, like any
    read-only store file), whatever its writability."""
    from ctxls.daemon.client import EngineAccess, default_socket
    from ctxls.index import roots

    assert ctxls("index", str(repo)).returncode == 0
    assert ctxls("remember", "deploy", "deploy with make release", "--root", str(repo)).returncode == 0
    root, access = repo.resolve(), os.access
    # Root may write anywhere but a read-only mount: the checkout says it cannot be written.
    monkeypatch.setattr(roots.os, "access", lambda path, mode: False
                        if Path(path) in (root, root / ".ctxls") else access(path, mode))
    assert roots.store_dir(root) == root / ".ctxls"
    assert default_socket(root) == root / ".ctxls" / "daemon.sock"
    engine = EngineAccess(root, use_daemon=False)
    try:
        assert engine.request("ctxls/status", {})["dbPath"] == str(root / ".ctxls" / "index.db")
        assert engine.request("ctxls/count", {})["count"] == 1
    finally:
        engine.close()


def test_a_damaged_full_text_table_of_written_memory_is_repaired_by_the_next_command(repo: Path):
    """Written memory's full-text table lost its structure record (its pages
    and b-trees sound, so quick_check says ok): every recall failed with
    "vtable constructor failed: fts_memory_fact", run after run. The failure
    asked for a check at the process's next store access, and a command line
    call, one request a process, exited before it; the check on open did not
    open the full-text tables."""
    assert ctxls("index", str(repo)).returncode == 0
    assert ctxls("remember", "f1", "plain fact about zebras", "--root", str(repo)).returncode == 0
    db = repo / ".ctxls" / "index.db"
    with sqlite3.connect(db) as conn:
        conn.execute("DELETE FROM fts_memory_fact_data WHERE id > 1")
        assert conn.execute("PRAGMA quick_check").fetchall() == [("ok",)]
    status = json.loads(ctxls("status", str(repo), "--json").stdout)
    assert "fts_memory_fact" in status["repaired"]["cause"], status
    assert status["repaired"]["carried"]["memory"] == 1
    assert facts(dict(os.environ), repo, "zebras") == ["plain fact about zebras"]
