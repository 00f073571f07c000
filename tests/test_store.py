"""The store's on-disk format: versioning, rebuilds, crash and corruption."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from ctxls.index import store as store_module
from ctxls.index.engine import Engine, EngineOptions
from ctxls.index.store import Store, StoreVersionError

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
    assert meta == {"schema_version": str(store_module.SCHEMA_VERSION),
                    "index_stamp": store_module.INDEX_STAMP}
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
    assert [a.symbol for a in reopened.recent_activity()] != []  # history survives
    stats = reopened.index()
    assert stats.added == 5
    reopened.close()


def test_newer_schema_is_refused_and_left_untouched(plain_repo: Path, tmp_path: Path):
    db = tmp_path / "index.db"
    make_engine(plain_repo, db).close()
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE meta SET value = '999' WHERE key = 'schema_version'")
    before = db.read_bytes()
    with pytest.raises(StoreVersionError):
        Store(db)
    assert db.read_bytes() == before


def test_corrupt_store_is_moved_aside_and_rebuilt(plain_repo: Path, tmp_path: Path):
    db = tmp_path / "index.db"
    db.write_bytes(b"this is not a database" * 100)
    engine = make_engine(plain_repo, db)
    assert engine.store.rebuilt
    assert [p.name.startswith("index.db.corrupt-") for p in tmp_path.iterdir()].count(True) == 1
    assert engine.index().added == 5
    engine.close()


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
