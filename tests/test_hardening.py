"""Hardening end to end (issue 15): store failures, durability, file modes,
malformed requests — through the real `ctxls serve` process."""

from __future__ import annotations

import asyncio
import fcntl
import json
import os
import queue
import resource
import socket
import sqlite3
import stat
import subprocess
import sys
import termios
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from conftest import serve
from rawrpc import RawConnection, StdioDaemon, frame, socket_connection
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


# -- every request gets an answer ------------------------------------------------

BAD_STANDARD_PARAMS = [
    ("textDocument/documentSymbol", {}),
    ("textDocument/prepareCallHierarchy", {"textDocument": 5, "position": {"line": 0}}),
    ("textDocument/codeLens", None),
    ("workspace/symbol", {}),
    ("callHierarchy/incomingCalls", {"item": {"name": 1}}),
]
MALFORMED_BODIES = [b"[]", b"5", b'"x"', b"{}", b'{"jsonrpc": "2.0"}', b"[1, 2]",
                    b'{"jsonrpc": "2.0", "id": {"a": 1}, "method": "ctxls/status"}',
                    b'{"jsonrpc": "2.0", "id": [1], "method": "ctxls/status"}',
                    b'{"jsonrpc": "2.0", "id": true, "method": "ctxls/status"}']


def test_invalid_params_on_standard_methods_are_answered_with_32602(stdio_daemon):
    conn = stdio_daemon.conn
    for n, (method, params) in enumerate(BAD_STANDARD_PARAMS):
        reply = conn.request(method, params, n)
        assert reply["error"]["code"] == -32602, (method, reply)
        assert reply["error"]["data"]["param"]
    reply = conn.request("textDocument/documentSymbol", {}, "named")
    assert reply["error"]["data"] == {"param": "textDocument"}
    reply = conn.request("textDocument/prepareCallHierarchy", {"textDocument": 5}, "nested")
    assert reply["error"]["data"] == {"param": "textDocument.uri"}
    assert conn.request("ctxls/status", {}, "alive")["result"]["files"] == 5


def check_malformed_frames(conn) -> None:
    for body in MALFORMED_BODIES:
        conn.send_body(body)
        reply = conn.reply()
        assert reply["jsonrpc"] == "2.0" and reply["id"] is None, body
        assert reply["error"]["code"] == -32600, (body, reply)
    conn.send_body(b'{"jsonrpc": "2.0", "id": 1, "method": ')
    reply = conn.reply()
    assert (reply["id"], reply["error"]["code"]) == (None, -32700)
    conn.send_body(b"\xff\xfe not utf-8")
    assert conn.reply()["error"]["code"] == -32700
    # The connection is still served.
    assert conn.request("ctxls/status", {}, 99)["result"]["files"] == 5


def test_malformed_frames_are_answered_on_stdio(stdio_daemon):
    check_malformed_frames(stdio_daemon.conn)
    assert stdio_daemon.alive()


def test_malformed_frames_are_answered_on_the_socket(stdio_daemon, repo: Path):
    conn, sock = socket_connection(repo / ".ctxls" / "daemon.sock")
    try:
        check_malformed_frames(conn)
    finally:
        sock.close()
    assert stdio_daemon.alive()


def _status_body(msg_id: str) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": msg_id, "method": "ctxls/status",
                       "params": {}}).encode()


# Header blocks no transport can frame a body by, each with the body sent
# after it; a well-formed request follows each.
UNREADABLE_HEADER_BLOCKS = [
    ("conflicting, the body's length first",
     lambda body: b"Content-Length: %d\r\nContent-Length: 5\r\n\r\n" % len(body) + body),
    ("conflicting, the body's length last",
     lambda body: b"Content-Length: 5\r\nContent-Length: %d\r\n\r\n" % len(body) + body),
    ("not a number", lambda body: b"Content-Length: 5_0\r\n\r\n" + body),
    ("zero", lambda body: b"Content-Length: 0\r\n\r\n" + body),
    ("missing", lambda body: b"Content-Type: application/vscode-jsonrpc\r\n\r\n" + body),
    ("100-KB line", lambda body: b"X-Junk: " + b"j" * 100_000 + b"\r\n\r\n" + body),
]


@pytest.mark.parametrize("transport", ["stdio", "socket"])
def test_header_blocks_are_read_by_one_rule_on_stdio_and_the_socket(stdio_daemon, repo: Path,
                                                                     transport: str):
    """Two Content-Length headers: stdio took the first, the socket the last,
    so the same bytes were answered differently; on the socket an unreadable
    block ended the connection, the request after it lost. Both read headers
    with framing.HeaderBlock now: one value repeated is that value;
    conflicting values, like a missing or unusable one, answer -32700, the
    block's body is skipped, and the next request is answered."""
    if transport == "stdio":
        conn, sock = stdio_daemon.conn, None
    else:
        conn, sock = socket_connection(repo / ".ctxls" / "daemon.sock")
    try:
        for name, block in UNREADABLE_HEADER_BLOCKS:
            conn._write(block(_status_body(f"lost-{name}")) + frame(_status_body(f"after-{name}")))
            first = conn.reply(timeout=30)
            assert (first["id"], first["error"]["code"]) == (None, -32700), (name, first)
            assert "result" in conn.reply_to(f"after-{name}", timeout=30), name
        body = _status_body("repeated")
        conn._write(b"Content-Length: %d\r\ncontent-length:  %d\r\n\r\n" % (len(body), len(body))
                    + body)
        assert "result" in conn.reply(timeout=30)
        assert conn.replies.empty()  # nothing answered for a skipped body
    finally:
        if sock is not None:
            sock.close()
    assert stdio_daemon.alive()


async def test_a_buffer_over_the_size_bound_is_left_out_and_recall_still_answers(repo: Path):
    big = "def huge_buffer_marker():\n    pass\n" + "x = 1\n" * 400_000  # ~2.4 MB
    async with serve(repo) as s:
        await s.wait_indexed()
        s.open("pkg/retry.py", big)
        await s.wait_for(_skipped(s, "pkg/retry.py"), timeout=30)
        status = await s.request("ctxls/status")
        assert {"path": "pkg/retry.py", "reason": "too large"} in status["skipped"]["files"]
        hits = (await s.request("ctxls/recall", {"query": "huge_buffer_marker", "kind": "code"}))["hits"]
        assert all(h["path"] != "pkg/retry.py" for h in hits)
        # Still the buffer's own: its disk text is not indexed in its place.
        assert not (await s.request("ctxls/recall", {"query": "retry_upload", "kind": "code"}))["hits"]
        found = (await s.request("ctxls/recall", {"query": "send prepared", "kind": "code"}))["hits"]
        assert found[0]["path"] == "pkg/session.py"
        # Incremental edits to it are not applied (each would re-split 2.4 MB
        # on the event loop); a full-text change that makes it small is indexed.
        s.client.text_document_did_change(types.DidChangeTextDocumentParams(
            types.VersionedTextDocumentIdentifier(uri=s.uri("pkg/retry.py"), version=2),
            [types.TextDocumentContentChangePartial(
                range=types.Range(types.Position(0, 0), types.Position(0, 0)), text="# edit\n")]))
        s.replace("pkg/retry.py", "def small_again():\n    pass\n", version=3)

        async def small_indexed():
            hits = (await s.request("ctxls/recall", {"query": "small_again", "kind": "code"}))["hits"]
            return hits and hits[0]["path"] == "pkg/retry.py"

        assert await s.wait_for(small_indexed, timeout=30)


def _edit(s, rel: str, version: int, start: tuple[int, int], end: tuple[int, int],
          text: str) -> None:
    s.client.text_document_did_change(types.DidChangeTextDocumentParams(
        types.VersionedTextDocumentIdentifier(uri=s.uri(rel), version=version),
        [types.TextDocumentContentChangePartial(
            range=types.Range(types.Position(*start), types.Position(*end)), text=text)]))


def _buffer_text(s, rel: str):
    async def read() -> str:
        item = await s.request("ctxls/get", {"id": rel})
        return item["text"] if item and item["provenance"] == "buffer" else None
    return read


async def test_edits_follow_lsp_lines_and_a_range_naming_no_place_loses_sync_openly(repo: Path):
    """pygls split lines where Python does (a form feed, U+2028), so an edit
    below one landed a line off; it put a character past the last line's end
    one before that end; and it dropped an inverted range without a word. In
    each case the buffer silently differed from the editor's text."""
    text = "def first_fn():\n    pass\n\x0c\n# see\u2028below\ndef second_fn():\n    return 1"
    async with serve(repo) as s:
        await s.wait_indexed()
        s.open("pkg/barrier.py", "def barrier_fn():\n    pass\n")
        s.open("pkg/retry.py", text)
        _edit(s, "pkg/retry.py", 2, (4, 4), (4, 13), "renamed_fn")  # LSP line 4: def second_fn
        _edit(s, "pkg/retry.py", 3, (5, 99), (5, 99), " + 1")  # past the line: at its end
        expected = text.replace("second_fn", "renamed_fn") + " + 1"
        assert await s.wait_for(_buffer_text(s, "pkg/retry.py")) is not None
        assert await s.wait_for(lambda: _equal(_buffer_text(s, "pkg/retry.py"), expected))

        _edit(s, "pkg/retry.py", 4, (5, 4), (0, 0), "x")  # inverted
        _edit(s, "pkg/retry.py", 5, (0, 4), (0, 12), "lost_edit_fn")  # on a text now unknown
        # Its edits and this one are debounced alike: once recall finds this
        # one, both have reached the index.
        s.replace("pkg/barrier.py", "def barrier_marker_fn():\n    pass\n", version=2)

        async def barrier_indexed():
            hits = (await s.request("ctxls/recall", {"query": "barrier_marker_fn",
                                                     "kind": "code"}))["hits"]
            return hits and hits[0]["path"] == "pkg/barrier.py"

        assert await s.wait_for(barrier_indexed, timeout=30)
        assert await _buffer_text(s, "pkg/retry.py")() == expected  # the last good text
        warnings = [m.message for m in s.client.messages if "out of sync" in m.message]
        assert len(warnings) == 1 and "inverted" in warnings[0]

        # A full text brings the editor's text back; edits apply again.
        s.replace("pkg/retry.py", "def resynced_fn():\n    pass\n", version=6)
        _edit(s, "pkg/retry.py", 7, (0, 4), (0, 15), "again_fn")
        assert await s.wait_for(lambda: _equal(_buffer_text(s, "pkg/retry.py"),
                                               "def again_fn():\n    pass\n"))
        _edit(s, "pkg/retry.py", 8, (9, 0), (9, 0), "x")  # past the last line: out of sync again
        assert await s.wait_for(lambda: _warned(s, "past the end of the text"))


async def _equal(read, expected: str) -> bool:
    return await read() == expected


async def _warned(s, words: str) -> bool:
    return any(words in m.message for m in s.client.messages)


def _skipped(s, path: str):
    async def check() -> bool:
        status = await s.request("ctxls/status")
        return any(f["path"] == path for f in status["skipped"]["files"])
    return check


# -- validation at the wire --------------------------------------------------------

BAD_VALUES = [
    ("ctxls/remember", {"id": "a\x00b", "text": "t"}, "id"),
    ("ctxls/remember", {"id": "\ud800", "text": "t"}, "id"),
    ("ctxls/remember", {"id": "ok", "text": "t", "occurredAt": 2 ** 64}, "occurredAt"),
    ("ctxls/remember", {"id": "ok", "text": "t", "meta": {"note": "x\udc00"}}, "meta.note"),
    ("ctxls/recall", {"query": "session\x00"}, "query"),
    ("ctxls/recall", {"query": "session", "n": float("inf")}, "n"),
    ("ctxls/recall", {"query": "session", "n": float("nan")}, "n"),
    ("ctxls/recall", {"query": "session", "n": 1e308}, "n"),
    ("ctxls/recall", {"query": "session", "scope": "\ud83d"}, "scope"),
    ("ctxls/get", {"id": "pkg/\x00session.py"}, "id"),
    ("ctxls/recentActivity", {"since": 2 ** 63}, "since"),
    ("ctxls/recentActivity", {"days": float("inf")}, "days"),
    ("ctxls/recentActivity", {"days": 1e308}, "days"),
    ("ctxls/forget", {"idPrefix": "\udfff"}, "idPrefix"),
    ("ctxls/ingest", {"filename": "a\x00.md", "text": "# x"}, "filename"),
    ("ctxls/stash", {"id": "s", "text": "\x00"}, "text"),
    ("ctxls/index", {"paths": ["ok", "b\x00ad"]}, "paths.1"),
    ("workspace/symbol", {"query": "\ud800"}, "query"),
    ("textDocument/documentSymbol", {"textDocument": {"uri": "file:///a\x00"}}, "textDocument.uri"),
]


def check_bad_values(conn, methods_prefix: str = "") -> None:
    for n, (method, params, param) in enumerate(BAD_VALUES):
        if not method.startswith(methods_prefix):
            continue
        reply = conn.request(method, params, n)
        assert "error" in reply, (method, params, reply)
        assert reply["error"]["code"] == -32602, (method, params, reply)
        assert reply["error"]["data"] == {"param": param}, (method, params, reply)
    # Nothing was written by any of them.
    assert conn.request("ctxls/count", {}, "count")["result"]["count"] == 0


def test_bad_values_are_32602_with_the_param_on_stdio(stdio_daemon):
    check_bad_values(stdio_daemon.conn)
    assert stdio_daemon.alive()


def test_bad_values_are_32602_with_the_param_on_the_socket(stdio_daemon, repo: Path):
    conn, sock = socket_connection(repo / ".ctxls" / "daemon.sock")
    try:
        check_bad_values(conn, "ctxls/")  # the socket serves the custom methods only
        deep = b'{"jsonrpc": "2.0", "id": 5, "method": "ctxls/status", "params": ' + b"[" * 100_000
        conn.send_body(deep + b"]" * 100_000 + b"}")
        assert conn.reply()["error"]["code"] in (-32700, -32602)
        assert conn.request("ctxls/status", {}, "alive")["result"]["files"] == 5
    finally:
        sock.close()


# -- the ANN cache file (issue 38, item 1) ----------------------------------------

def _embedded_store(root: Path) -> tuple[Path, int]:
    """Index and embed ``root`` in this process; the vectors file it leaves
    behind, and the vectors' dimension."""
    engine = Engine(root, EngineOptions(embeddings=True))
    engine.index()
    assert engine.embed_pending() > 0
    engine.close()
    vectors = engine.semantic.vector_path
    assert vectors.stat().st_size > 0
    return vectors, engine.semantic.embedder.dim


def _recall_under_a_memory_cap(root: Path, env: dict) -> subprocess.CompletedProcess:
    """`ctxls recall --no-daemon` in a fresh process that may not grow past 3 GiB."""
    def cap():
        resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))

    return subprocess.run([sys.executable, "-m", "ctxls.daemon.cli", "recall", "send a prepared request",
                           "--root", str(root), "--no-daemon", "--json", "--mode", "hybrid", "--kind", "code"],
                          capture_output=True, text=True, timeout=300, env=env, preexec_fn=cap)


@pytest.mark.parametrize("damage", ["garbage in the second half", "truncated", "another user's file"])
def test_a_damaged_vectors_file_is_rebuilt_not_loaded(repo: Path, tmp_path: Path, monkeypatch, damage: str):
    from ctxls.index import ann_file

    monkeypatch.setenv("CTXLS_STATE_DIR", str(tmp_path / "state"))
    vectors, dim = _embedded_store(repo)
    if damage == "garbage in the second half":
        with open(vectors, "r+b") as f:
            f.seek(vectors.stat().st_size // 2)
            f.write(os.urandom(64 * 1024))
    elif damage == "truncated":
        os.truncate(vectors, vectors.stat().st_size * 2 // 3)
    else:  # a well-formed file whose MAC another user's key made: a planted or foreign cache
        payload = ann_file.read(vectors, dim)
        monkeypatch.setenv("CTXLS_STATE_DIR", str(tmp_path / "other-user-state"))
        assert ann_file.write(vectors, payload, dim, 0)
        monkeypatch.setenv("CTXLS_STATE_DIR", str(tmp_path / "state"))
    for _ in range(2):  # and again: the rebuilt file is loaded as it is, not rebuilt for ever
        got = _recall_under_a_memory_cap(repo, dict(os.environ))
        assert got.returncode == 0, got.stderr[-2000:]
        answer = json.loads(got.stdout)
        assert answer["mode"] == "hybrid" and not answer["partial"]
        assert answer["hits"][0]["chunk"]["symbol"] == "send_prepared"
    engine = Engine(repo, EngineOptions(embeddings=True))
    try:
        engine.semantic.ensure_loaded()
        assert engine.semantic.rebuilt_reason is None  # the rewritten file verifies
        assert ann_file.read(vectors, engine.semantic.embedder.dim)
        assert len(engine.semantic._ann) == engine.status()["vectors"] > 0
    finally:
        engine.close()


def test_status_says_why_the_vectors_file_was_rebuilt(repo: Path):
    vectors, _ = _embedded_store(repo)
    vectors.write_bytes(b"\0" * 4096)
    engine = Engine(repo, EngineOptions(embeddings=True))
    try:
        engine.semantic.ensure_loaded()
        assert "not a ctxls ANN file" in engine.status()["embeddings"]["ann_rebuilt"]
        assert len(engine.semantic._ann) == engine.status()["vectors"] > 0
    finally:
        engine.close()


# -- a client that does not read its answers (docs/decisions.md, "stdout is
# written by a thread of its own") ------------------------------------------------

BIG_LINES = 5000  # big.py: ~220 KB, so ten answers of it are far more than a pipe or socket holds


@pytest.fixture
def big_file_daemon(tmp_path: Path):
    root = tmp_path / "big"
    root.mkdir()
    (root / "big.py").write_text("".join(f"value_{i} = {i}  # a line of padding text\n"
                                         for i in range(BIG_LINES)))
    daemon = StdioDaemon(root)
    try:
        assert daemon.wait_indexed()["complete"]
        yield daemon, root
    finally:
        daemon.conn.reading.set()
        daemon.close()


def _get_big(msg_id) -> dict:
    return {"jsonrpc": "2.0", "id": msg_id, "method": "ctxls/get", "params": {"id": "big.py"}}


def _written_within(write, seconds: float = 60.0) -> bool:
    """Whether ``write`` (a client's blocking writes) returned in time: it
    cannot while the daemon has stopped reading."""
    done = threading.Event()

    def run():
        write()
        done.set()

    threading.Thread(target=run, daemon=True).start()
    return done.wait(seconds)


def _blocked_on(fd: int, at_least: int) -> None:
    """Wait until at least ``at_least`` bytes the client has not read lie in
    ``fd`` and no more come: the daemon's answers wait for this client."""
    deadline = time.monotonic() + 60
    previous = -1
    while True:
        unread = bytearray(4)
        fcntl.ioctl(fd, termios.FIONREAD, unread)
        waiting = int.from_bytes(unread, sys.byteorder)
        if waiting >= at_least and waiting == previous:
            return
        assert time.monotonic() < deadline, f"only {waiting} bytes came"
        previous = waiting
        time.sleep(0.5)


def _answers(conn, ids: set, timeout: float = 60.0) -> dict:
    got = {}
    while not ids <= got.keys():
        reply = conn.reply(timeout)
        got[reply.get("id")] = reply
    return got


def test_a_stdio_client_that_stops_reading_does_not_stall_the_socket(big_file_daemon):
    """An editor that stops reading (suspended, busy) once held the daemon's
    event loop in its stdout write: every socket client waited for it."""
    daemon, root = big_file_daemon
    daemon.conn.reading.clear()
    ids = {f"get-{n}" for n in range(10)}
    for msg_id in sorted(ids):
        daemon.conn.send(_get_big(msg_id))
    _blocked_on(daemon.process.stdout.fileno(), 60_000)  # the pipe is full
    conn, sock = socket_connection(root / ".ctxls" / "daemon.sock")
    try:
        assert conn.request("ctxls/status", {}, "meanwhile", timeout=30)["result"]["complete"]
    finally:
        sock.close()
    daemon.conn.reading.set()
    answers = _answers(daemon.conn, ids)
    text = (root / "big.py").read_text()
    assert all(answers[msg_id]["result"]["text"] == text for msg_id in ids)  # whole, none lost


def test_a_stdio_client_that_writes_before_it_reads_gets_every_answer(big_file_daemon):
    """Requests with large answers, and whole-text edits, written before any
    answer is read: the daemon reads on while its answers wait for the
    client (it stopped reading stdin while it waited to write, and the
    client's write waited for it: neither moved again)."""
    daemon, root = big_file_daemon
    uri = (root / "big.py").as_uri()
    text = (root / "big.py").read_text()
    daemon.conn.send({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {
        "uri": uri, "languageId": "python", "version": 1, "text": text}}})
    daemon.conn.reading.clear()
    ids = {f"get-{n}" for n in range(10)}
    for msg_id in sorted(ids):
        daemon.conn.send(_get_big(msg_id))
    _blocked_on(daemon.process.stdout.fileno(), 60_000)

    def write():
        for version in range(2, 12):
            daemon.conn.send({"jsonrpc": "2.0", "method": "textDocument/didChange", "params": {
                "textDocument": {"uri": uri, "version": version},
                "contentChanges": [{"text": text + f"\n# edit {version}\n"}]}})

    assert _written_within(write)
    daemon.conn.reading.set()
    answers = _answers(daemon.conn, ids)
    assert all(answers[msg_id]["result"]["text"].startswith(text) for msg_id in ids)
    assert daemon.alive()


def test_a_socket_client_that_writes_before_it_reads_gets_every_answer(big_file_daemon):
    """On the socket the replies to bodies that are not JSON were written
    from the reading loop, which waited for the client to read them."""
    daemon, root = big_file_daemon
    conn, sock = socket_connection(root / ".ctxls" / "daemon.sock")
    try:
        conn.reading.clear()
        ids = {n for n in range(10)}
        not_json = b"not json " * 20_000  # ~180 KB, answered -32700

        for msg_id in sorted(ids):
            conn.send(_get_big(msg_id))
        _blocked_on(sock.fileno(), 100_000)

        def write():
            for _ in range(20):
                conn.send_body(not_json)

        assert _written_within(write)
        conn.reading.set()
        answers = _answers(conn, ids | {None})
        assert answers[None]["error"]["code"] == -32700
        text = (root / "big.py").read_text()
        assert all(answers[msg_id]["result"]["text"] == text for msg_id in ids)
        assert conn.request("ctxls/status", {}, "after", timeout=30)["result"]["complete"]
    finally:
        sock.close()


# A daemon whose ctxls/status prints to stdout and runs a child that writes to
# its stdout and reads a byte of its stdin.
NOISY_DAEMON = """import os, sys
from ctxls.daemon.app import CtxlsServer
quiet_status = CtxlsServer.status
def noisy_status(self):
    print("a stray print", flush=True)
    os.system("echo a child writes to its stdout; head -c 1 >/dev/null")
    return quiet_status(self)
CtxlsServer.status = noisy_status
from ctxls.daemon.cli import main
sys.exit(main(["serve"]))
"""


def test_stray_output_and_children_never_touch_the_stdio_wire(tmp_path: Path):
    """What the process or a child writes to stdout goes to stderr, and a
    child reading stdin reads nothing of the editor's: every frame on the
    wire is the daemon's, every message the editor's (ctxls mcp keeps its
    wire the same way)."""
    root = tmp_path / "repo"
    root.mkdir()
    (root / "a.py").write_text("def f():\n    return 1\n")
    stderr = tmp_path / "stderr.txt"
    with open(stderr, "wb") as err:
        process = subprocess.Popen([sys.executable, "-c", NOISY_DAEMON], stdin=subprocess.PIPE,
                                   stdout=subprocess.PIPE, stderr=err)
    frames: queue.Queue = queue.Queue()

    def read_frames():
        while True:
            header = process.stdout.readline()
            if not header:
                return
            frames.put(header)
            if header.startswith(b"Content-Length: "):
                while process.stdout.readline().strip():
                    pass
                frames.put(json.loads(process.stdout.read(int(header.split(b":")[1]))))

    threading.Thread(target=read_frames, daemon=True).start()

    def send(*messages: dict) -> None:
        for message in messages:
            body = json.dumps(message).encode()
            process.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        process.stdin.flush()

    def answers(ids: set) -> None:
        while ids:
            header = frames.get(timeout=30)
            assert header.startswith(b"Content-Length: "), header  # the wire holds frames only
            message = frames.get(timeout=30)
            if "id" in message and "method" not in message:
                assert "result" in message, message
                ids.discard(message["id"])

    uri = root.as_uri()
    try:
        send({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {
                  "processId": None, "rootUri": uri, "capabilities": {},
                  "workspaceFolders": [{"uri": uri, "name": "repo"}],
                  "initializationOptions": {"embeddings": False}}},
             {"jsonrpc": "2.0", "method": "initialized", "params": {}},
             *({"jsonrpc": "2.0", "id": n, "method": "ctxls/status", "params": {}} for n in range(3)))
        answers({"init", 0, 1, 2})
        send({"jsonrpc": "2.0", "id": "bye", "method": "shutdown", "params": None},
             {"jsonrpc": "2.0", "method": "exit"})
        answers({"bye"})
        assert process.wait(timeout=30) == 0
    finally:
        process.kill()
    logged = stderr.read_text()
    assert "a stray print" in logged and "a child writes to its stdout" in logged


def test_a_request_cancelled_as_soon_as_it_is_sent_is_answered(stdio_daemon, repo: Path):
    """A `$/cancelRequest` read right after its request cancelled the task
    before it ran, and nothing answered: an agent's MCP server, waiting for
    those answers, hung with every call thread stuck. Each gets -32800."""
    conn, sock = socket_connection(repo / ".ctxls" / "daemon.sock")
    try:
        frames = b""
        for n, (method, params) in enumerate([("ctxls/recall", {"query": "retry upload"}),
                                              ("ctxls/status", {}), ("ctxls/symbols", {"query": "x"}),
                                              ("ctxls/get", {"id": "pkg/retry.py"})]):
            for message in ({"jsonrpc": "2.0", "id": n, "method": method, "params": params},
                            {"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": n}}):
                body = json.dumps(message).encode()
                frames += b"Content-Length: %d\r\n\r\n" % len(body) + body
        sock.sendall(frames)  # each cancel read in the same pass as its request
        answers = [conn.reply_to(n, timeout=20) for n in range(4)]
        assert all(a.get("error", {}).get("code") == -32800 or "result" in a for a in answers)
        assert sum(a.get("error", {}).get("code") == -32800 for a in answers) >= 1
        assert "result" in conn.request("ctxls/status", {}, "after", timeout=20)
    finally:
        sock.close()


# -- LSP conformance (probe of 2026-12-07) ------------------------------------------


def test_a_cancel_while_its_answer_waits_for_the_client_gets_no_second_answer(big_file_daemon):
    """On the socket, a `$/cancelRequest` for a request whose answer was
    already written, and waited for the client to read it, answered it again
    with -32800: one request, two answers. Each request gets one answer."""
    daemon, root = big_file_daemon
    conn, sock = socket_connection(root / ".ctxls" / "daemon.sock")
    try:
        conn.reading.clear()
        ids = set(range(5))
        for msg_id in sorted(ids):
            conn.send(_get_big(msg_id))
        _blocked_on(sock.fileno(), 100_000)  # the answer written last waits for this client
        for msg_id in sorted(ids):
            conn.send({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": msg_id}})
        conn.send({"jsonrpc": "2.0", "id": "after", "method": "ctxls/status", "params": {}})
        conn.reading.set()
        answers = [conn.reply(60)]
        while answers[-1].get("id") != "after":
            answers.append(conn.reply(60))
        per_id = Counter(answer.get("id") for answer in answers)
        assert all(per_id[msg_id] == 1 for msg_id in ids), [
            (a.get("id"), "result" if "result" in a else a["error"]["code"]) for a in answers]
        text = (root / "big.py").read_text()
        assert all(a["result"]["text"] == text for a in answers if "result" in a and a["id"] in ids)
    finally:
        sock.close()


def test_standard_messages_with_another_json_type_are_refused_not_coerced(stdio_daemon, repo: Path):
    """A string or number field of a standard LSP message holding another JSON
    type was converted with str()/int(): a didOpen whose text was null made
    the buffer "None", a didChange's list its printed form, and requests
    with `"uri": 5`, `"query": null` or `"line": "4"` were answered as if
    valid. Such notifications are dropped (the buffer keeps its text) and
    such requests answer -32602 naming the field."""
    conn = stdio_daemon.conn
    rel = "pkg/retry.py"
    uri = (repo / rel).resolve().as_uri()
    on_disk = (repo / rel).read_text()

    def buffer_text() -> str:
        return conn.request("ctxls/get", {"id": rel}, "get")["result"]["text"]

    for text in (None, 5, ["def a(): pass"]):
        conn.send({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {
            "uri": uri, "languageId": "python", "version": 1, "text": text}}})
        assert buffer_text() == on_disk, text
    opened = "def opened_text():\n    pass\n"
    conn.send({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {
        "uri": uri, "languageId": "python", "version": 1, "text": opened}}})
    for version, text in enumerate((None, ["def a(): pass"], {"a": 1}, 7), start=2):
        conn.send({"jsonrpc": "2.0", "method": "textDocument/didChange", "params": {
            "textDocument": {"uri": uri, "version": version}, "contentChanges": [{"text": text}]}})
        assert buffer_text() == opened, text
    for n, (method, params, param) in enumerate([
            ("textDocument/documentSymbol", {"textDocument": {"uri": 5}}, "textDocument.uri"),
            ("workspace/symbol", {"query": None}, "query"),
            ("workspace/symbol", {"query": ["retry"]}, "query"),
            ("textDocument/prepareCallHierarchy",
             {"textDocument": {"uri": uri}, "position": {"line": "0", "character": 4}}, "position.line"),
            ("textDocument/prepareCallHierarchy",
             {"textDocument": {"uri": uri}, "position": {"line": 0, "character": True}},
             "position.character")]):
        reply = conn.request(method, params, n)
        assert reply.get("error", {}).get("code") == -32602, (method, params, reply)
        assert reply["error"]["data"] == {"param": param}, (method, params, reply)
    # "jsonrpc" must be the string "2.0" (the number 2.0 was printed into it).
    conn.send_body(b'{"jsonrpc": 2.0, "id": "number", "method": "workspace/symbol", '
                   b'"params": {"query": "retry"}}')
    assert conn.reply_to("number")["error"]["code"] == -32600
    # A whole number written as a float is still a line, as in the custom params.
    reply = conn.request("textDocument/prepareCallHierarchy",
                         {"textDocument": {"uri": uri}, "position": {"line": 0.0, "character": 4}}, "float")
    assert "result" in reply, reply
    assert stdio_daemon.alive()


def test_a_request_without_params_is_answered_as_with_null_params(repo: Path):
    """JSON-RPC lets a request leave `params` out; on stdio every such request
    answered -32602 "params", whatever its method, before the checks that
    do not depend on params: an unknown method, a request before initialize
    or after shutdown now answer -32601, -32002 and -32600, and
    `ctxls/status` answers, as on the socket."""
    process = subprocess.Popen([sys.executable, "-m", "ctxls.daemon.cli", "serve"],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL, cwd=repo)

    def write(data: bytes) -> None:
        process.stdin.write(data)
        process.stdin.flush()

    def code(reply: dict):
        return reply["error"]["code"] if "error" in reply else "result"

    try:
        conn = RawConnection(process.stdout, write)

        def without_params(method: str, msg_id: str) -> dict:
            conn.send({"jsonrpc": "2.0", "id": msg_id, "method": method})
            return conn.reply_to(msg_id)

        assert code(without_params("ctxls/status", "early")) == -32002
        uri = repo.resolve().as_uri()
        assert "result" in conn.request("initialize", {
            "processId": None, "rootUri": uri, "capabilities": {},
            "initializationOptions": {"embeddings": False}}, "init")
        conn.send({"jsonrpc": "2.0", "method": "initialized"})  # a notification without params
        assert code(without_params("ctxls/nope", "unknown")) == -32601
        assert code(without_params("textDocument/nope", "unknown-standard")) == -32601
        assert "files" in without_params("ctxls/status", "status")["result"]
        reply = without_params("textDocument/documentSymbol", "needs-params")  # LSP requires them
        assert (code(reply), reply["error"]["data"]) == (-32602, {"param": "params"})
        assert code(without_params("shutdown", "bye")) == "result"
        assert code(without_params("ctxls/status", "late")) == -32600
        conn.send({"jsonrpc": "2.0", "method": "exit"})
        assert process.wait(timeout=30) == 0
    finally:
        process.kill()
        process.wait()


def test_requests_after_shutdown_on_the_socket_answer_32600(stdio_daemon, repo: Path):
    """LSP: after `shutdown` only `exit`; a request answers InvalidRequest,
    as over stdio. A socket connection that sent `shutdown` had its later
    requests served; the connection's end (`exit`) and the daemon's other
    connections are as before."""
    conn, sock = socket_connection(repo / ".ctxls" / "daemon.sock")
    other, other_sock = socket_connection(repo / ".ctxls" / "daemon.sock")
    with sock, other_sock:
        assert conn.request("shutdown", None, "bye")["result"] is None
        conn.send({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": "x"}})
        late = conn.request("ctxls/count", {}, "late")
        assert late["error"]["code"] == -32600 and "shutdown" in late["error"]["message"]
        assert conn.request("ctxls/status", {}, "later")["error"]["code"] == -32600
        assert other.request("ctxls/count", {}, "other")["result"] == {"count": 0}
        conn.send({"jsonrpc": "2.0", "method": "exit"})
        assert conn.closed.wait(timeout=30)
    assert stdio_daemon.alive()
    assert stdio_daemon.conn.request("ctxls/count", {}, "editor")["result"] == {"count": 0}


def serve_tcp(repo: Path) -> tuple[subprocess.Popen, int]:
    """`ctxls serve --tcp PORT` started in ``repo`` on a free port."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen([sys.executable, "-m", "ctxls.daemon.cli", "serve", "--tcp", str(port)],
                               stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, cwd=repo)
    return process, port


def test_tcp_reads_frames_as_stdio_does(repo: Path):
    """`ctxls serve --tcp` read with pygls's own reader: an unusable
    Content-Length was ignored (no -32700), a header block without one went
    unanswered, and a header line over 64 KiB ended the connection, the
    requests after it lost. It now reads as stdio does."""
    process, port = serve_tcp(repo)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                sock = socket.create_connection(("127.0.0.1", port))
                break
            except OSError:
                assert time.monotonic() < deadline and process.poll() is None, "never listened"
                time.sleep(0.1)
        with sock:
            conn = RawConnection(sock.makefile("rb"), sock.sendall)
            uri = repo.resolve().as_uri()
            assert "result" in conn.request("initialize", {
                "processId": None, "rootUri": uri, "capabilities": {},
                "workspaceFolders": [{"uri": uri, "name": "repo"}],
                "initializationOptions": {"embeddings": False}}, "init")
            conn.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
            status = json.dumps({"jsonrpc": "2.0", "id": "x", "method": "ctxls/status",
                                 "params": {}}).encode()
            for name, header in [("not-a-number", b"Content-Length: zz\r\n\r\n"),
                                 ("zero", b"Content-Length: 0\r\n\r\n"),
                                 ("missing", b"Content-Type: application/vscode-jsonrpc\r\n\r\n"),
                                 ("100-KB-line", b"X-Junk: " + b"j" * 100_000 + b"\r\n\r\n")]:
                conn._write(header + frame(status.replace(b'"x"', b'"after-%s"' % name.encode())))
                first = conn.reply(timeout=30)
                assert (first["id"], first["error"]["code"]) == (None, -32700), (name, first)
                assert "result" in conn.reply_to(f"after-{name}", timeout=30), name
            for n in range(600):  # check_malformed_frames counts the indexed files
                if conn.request("ctxls/status", {}, f"wait-{n}")["result"]["complete"]:
                    break
                time.sleep(0.1)
            check_malformed_frames(conn)
            assert "result" in conn.request("shutdown", None, "bye")
            conn.send({"jsonrpc": "2.0", "method": "exit"})
            assert process.wait(timeout=30) == 0
    finally:
        process.kill()
        process.wait()


def test_tcp_exit_without_shutdown_exits_1(repo: Path):
    """LSP: `exit` without `shutdown` ends the server with status 1, as
    stdio's does; `serve --tcp` exited 0 whatever came before."""
    process, port = serve_tcp(repo)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                sock = socket.create_connection(("127.0.0.1", port))
                break
            except OSError:
                assert time.monotonic() < deadline and process.poll() is None, "never listened"
                time.sleep(0.1)
        with sock:
            conn = RawConnection(sock.makefile("rb"), sock.sendall)
            assert "result" in conn.request("initialize", {
                "processId": None, "rootUri": repo.resolve().as_uri(), "capabilities": {},
                "initializationOptions": {"embeddings": False}}, "init")
            conn.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
            assert "result" in conn.request("ctxls/status", {}, "status")
            conn.send({"jsonrpc": "2.0", "method": "exit"})
            assert process.wait(timeout=30) == 1
    finally:
        process.kill()
        process.wait()


# -- what is in the way of the socket ----------------------------------------------

async def test_a_folder_where_the_socket_goes_is_named_with_what_to_do(repo: Path):
    """A folder at daemon.sock: the headless daemon died with only
    "ctxls: …/daemon.sock: Is a directory" (the stale-file removal was
    unguarded). It now says what is in the way and what to do; an editor's
    daemon serves on without the socket."""
    sock = repo / ".ctxls" / "daemon.sock"
    sock.mkdir(parents=True)
    headless = await asyncio.to_thread(
        subprocess.run, [sys.executable, "-m", "ctxls.daemon.cli", "serve", "--root", str(repo),
                         "--socket"], capture_output=True, text=True, timeout=120,
        stdin=subprocess.DEVNULL)
    assert headless.returncode == 1
    assert f"not listening on {sock}: a folder is in the way" in headless.stderr
    assert "move it away and start the daemon again" in headless.stderr
    assert f"ctxls: {sock}: Is a directory" not in headless.stderr
    assert sock.is_dir()  # left as it was
    async with serve(repo, {"socket": True}) as editor:
        await editor.wait_indexed()
        assert (await editor.request("ctxls/status"))["files"] == 5
        assert sock.is_dir()


def test_a_file_at_the_socket_path_that_cannot_be_removed_is_named(tmp_path: Path, monkeypatch, caplog):
    """An undeletable file there (immutable, another user's in a sticky
    folder) raised PermissionError out of SocketServer.start."""
    import errno

    from ctxls.daemon.socket_server import SocketServer

    path = tmp_path / "daemon.sock"
    path.write_text("")
    remove = Path.unlink

    def immutable_there(self: Path, missing_ok: bool = False) -> None:
        if self == path:  # what chattr +i gives, on any filesystem
            raise PermissionError(errno.EPERM, "Operation not permitted", str(self))
        remove(self, missing_ok)

    monkeypatch.setattr(Path, "unlink", immutable_there)
    assert asyncio.run(SocketServer(None, path).start()) is False
    assert (f"not listening on {path}: a file that cannot be removed is in the way "
            "(Operation not permitted)") in caplog.text
    assert path.is_file()


# -- `serve --tcp` serves its own user only --------------------------------------

OTHER_UID = 65534  # nobody


def another_user_connects(port: int, message: bytes) -> tuple[int, Any]:
    """A child process that, as ``nobody``, connects to 127.0.0.1:PORT,
    sends ``message`` and reads until the connection ends: its pid and a
    pipe where it writes "connected\\n", then all it was sent back."""
    import traceback

    reading, writing = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(reading)
            os.setgroups([])
            os.setgid(OTHER_UID)
            os.setuid(OTHER_UID)
            with socket.create_connection(("127.0.0.1", port), timeout=60) as conn:
                os.write(writing, b"connected\n")
                conn.sendall(message)
                answer = b""
                try:
                    while chunk := conn.recv(65536):
                        answer += chunk
                except OSError:  # reset: closed with our message unread
                    pass
            os.write(writing, answer)
        except BaseException:
            traceback.print_exc()
        finally:
            os._exit(0)
    os.close(writing)
    return pid, os.fdopen(reading, "rb")


def test_the_tcp_peer_is_known_by_its_user(monkeypatch):
    """/proc/net/tcp's row of the client's own socket names its user; where
    no row can be read, the connection is refused."""
    from ctxls.daemon import socket_server
    from ctxls.daemon.socket_server import refuse_tcp_peer, tcp_peer_uid

    with socket.create_server(("127.0.0.1", 0)) as listener:
        port = listener.getsockname()[1]
        with socket.create_connection(("127.0.0.1", port)) as mine:
            accepted, _ = listener.accept()
            with accepted:
                assert tcp_peer_uid(accepted) == os.geteuid()
                assert not refuse_tcp_peer(accepted)
                with monkeypatch.context() as no_proc:
                    no_proc.setattr(socket_server, "PROC_NET_TCP", (Path("/nonexistent/tcp"),))
                    assert tcp_peer_uid(accepted) is None
                    assert refuse_tcp_peer(accepted)  # fail closed
            mine.sendall(b"x")
        if os.geteuid() == 0:  # only root can be another user
            pid, pipe = another_user_connects(port, b"")
            with pipe:
                assert pipe.readline() == b"connected\n"
                accepted, _ = listener.accept()
                with accepted:
                    assert tcp_peer_uid(accepted) == OTHER_UID
                    assert refuse_tcp_peer(accepted)
                pipe.read()
            os.waitpid(pid, 0)


def test_tcp_closes_another_users_connection_unread_and_serves_its_own(repo: Path):
    """Any local user could connect to `serve --tcp PORT`, initialize on a
    folder only the daemon's user may read and get its files (and write its
    memory). Another user's connection is now closed unread; the daemon's
    own user is served next."""
    process, port = serve_tcp(repo)
    listening = f":{port:04X} 00000000:0000 0A"  # its row in /proc/net/tcp, state LISTEN
    try:
        deadline = time.monotonic() + 60
        while listening not in Path("/proc/net/tcp").read_text():  # connecting would be served
            assert time.monotonic() < deadline and process.poll() is None, "never listened"
            time.sleep(0.1)
        uri = repo.resolve().as_uri()
        initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "processId": None, "rootUri": uri, "capabilities": {},
            "workspaceFolders": [{"uri": uri, "name": "repo"}],
            "initializationOptions": {"embeddings": False}}}
        if os.geteuid() == 0:  # only root can be another user
            pid, pipe = another_user_connects(port, frame(json.dumps(initialize).encode()))
            with pipe:
                assert pipe.readline() == b"connected\n"
                assert pipe.read() == b""  # closed, nothing answered
            os.waitpid(pid, 0)
        with socket.create_connection(("127.0.0.1", port)) as sock:
            conn = RawConnection(sock.makefile("rb"), sock.sendall)
            assert "result" in conn.request("initialize", initialize["params"], "init")
            conn.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
            assert "result" in conn.request("shutdown", None, "bye")
            conn.send({"jsonrpc": "2.0", "method": "exit"})
            assert process.wait(timeout=30) == 0
    finally:
        process.kill()
        process.wait()
