"""Hardening end to end (issue 15): store failures, durability, file modes,
malformed requests — through the real `ctxls serve` process."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from pygls.exceptions import JsonRpcException

from conftest import serve


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
