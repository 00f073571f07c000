"""Hardening end to end (issue 15): store failures, durability, file modes,
malformed requests — through the real `ctxls serve` process."""

from __future__ import annotations

import os
import sqlite3
import stat
from pathlib import Path

import pytest
from pygls.exceptions import JsonRpcException

from conftest import serve
from ctxls.index.engine import Engine, EngineOptions
from ctxls.index.scopes import EVERYTHING


async def test_a_folder_as_db_path_is_refused_and_every_request_says_so(repo: Path, tmp_path: Path):
    folder = tmp_path / "not-a-store"
    folder.mkdir()
    (folder / "keep.txt").write_text("mine")
    async with serve(repo, {"dbPath": str(folder)}) as s:
        status = await s.request("ctxls/status")
        assert status["storeError"]["code"] == -32006
        assert status["storeError"]["data"]["reason"] == "folder"
        for method, params in (("ctxls/remember", {"id": "k", "text": "a fact"}),
                               ("ctxls/recall", {"query": "session"}),
                               ("ctxls/get", {"id": "k"})):
            with pytest.raises(JsonRpcException) as err:
                await s.request(method, params)
            assert err.value.code == -32006, method
        assert status["indexing"] is False
    assert sorted(p.name for p in folder.iterdir()) == ["keep.txt"]


async def test_writes_after_the_store_is_deleted_land_on_disk(repo: Path):
    async with serve(repo) as s:
        await s.wait_indexed()
        db = repo / ".ctxls" / "index.db"
        for suffix in ("", "-wal", "-shm"):
            Path(f"{db}{suffix}").unlink(missing_ok=True)
        assert await s.request("ctxls/remember", {"id": "after", "text": "kept on disk"}) == {}
        forced = await s.request("ctxls/index", {"force": True})
        assert forced["files"] == 5
        with sqlite3.connect(db) as conn:
            assert [r[0] for r in conn.execute("SELECT key FROM memory")] == ["after"]
            assert conn.execute("SELECT count(*) FROM files").fetchone()[0] == 5


@pytest.fixture
def open_umask():
    """The most permissive umask: modes must not depend on it."""
    old = os.umask(0)
    try:
        yield
    finally:
        os.umask(old)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_store_folder_and_files_are_private_whatever_the_umask(repo: Path, open_umask):
    engine = Engine(repo, EngineOptions(embeddings=True))
    try:
        engine.cold_index()
        engine.memory.remember(EVERYTHING, "k", "a private fact")
        engine.embed_pending()
        store_dir = repo / ".ctxls"
        assert mode(store_dir) == 0o700
        names = sorted(p.name for p in store_dir.iterdir())
        assert {"index.db", "index.db-wal", "index.db-shm", "vectors.usearch"} <= set(names)
        for name in names:
            assert mode(store_dir / name) == 0o600, name
    finally:
        engine.close()


def test_a_store_made_before_modes_were_enforced_is_tightened(repo: Path, open_umask):
    Engine(repo, EngineOptions()).close()
    store_dir = repo / ".ctxls"
    store_dir.chmod(0o755)
    (store_dir / "index.db").chmod(0o644)
    engine = Engine(repo, EngineOptions())
    try:
        assert mode(store_dir) == 0o700 and mode(store_dir / "index.db") == 0o600
    finally:
        engine.close()


async def test_the_socket_is_private_whatever_the_umask(repo: Path, open_umask):
    async with serve(repo, {"socket": True}) as s:
        await s.wait_indexed()
        sock = repo / ".ctxls" / "daemon.sock"
        assert await s.wait_for(_exists(sock))
        assert mode(sock) == 0o600 and mode(repo / ".ctxls") == 0o700
        assert mode(repo / ".ctxls" / "index.db") == 0o600


def _exists(path: Path):
    async def check() -> bool:
        return path.exists()
    return check
