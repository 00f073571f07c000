"""Hostile input found by the attacker sweeps (issue 15; each sweep's report is
in the history, `git show 98206f9:BENCHMARKS.md`, "Attacker sweep, fifth
session" and "Hardening, seventh session"): each test is one finding, through
the real `ctxls serve` process (raw JSON-RPC over stdio and the shared socket),
the real `ctxls` command, or the engine where a finding shows only inside.
Every probe must get an answer, leave the daemon serving, read nothing outside
the root and lose nothing stored."""

from __future__ import annotations

import json
import os
import pickle
import queue
import signal
import sqlite3
import struct
import subprocess
import sys
import threading
import time
import tracemalloc
from pathlib import Path

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from ctxls.daemon import wire
from ctxls.daemon.request_values import first_invalid
from ctxls.index import discovery
from ctxls.index.assemble import candidates_from_hits
from ctxls.index.chunk_worker import ChunkWorker
from ctxls.impact.analysis import analyze
from ctxls.index.engine import Engine, EngineOptions
from ctxls.index.knowledge import knowledge_block
from ctxls.index.memory.model import MAX_WRITE_BYTES
from ctxls.index.model import UNPARSED_HAZARD
from ctxls.index.scopes import EVERYTHING
from ctxls.index.store import now_ms

from conftest import SAMPLE_FILES, write_tree
from rawrpc import RawConnection, StdioDaemon, frame, socket_connection
from test_symlinks import MARKER, plant_links

CTXLS = [sys.executable, "-m", "ctxls.daemon.cli"]


def serve_process() -> tuple[subprocess.Popen, RawConnection]:
    """`ctxls serve` on stdio, and a raw connection to it (the caller kills it)."""
    process = subprocess.Popen([*CTXLS, "serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL)

    def write(data: bytes) -> None:
        process.stdin.write(data)
        process.stdin.flush()

    return process, RawConnection(process.stdout, write)


def notify(conn, method: str, params: dict) -> None:
    conn.send({"jsonrpc": "2.0", "method": method, "params": params})


def until(ask, timeout: float = 15.0):
    """Ask again until the answer is truthy (notifications are handled in the
    background): the first truthy answer, else the last one."""
    deadline = time.monotonic() + timeout
    while True:
        answer = ask()
        if answer or time.monotonic() > deadline:
            return answer
        time.sleep(0.05)


def code_hits(conn, query: str) -> list[str]:
    """The paths ctxls/recall finds for ``query`` among code."""
    reply = conn.request("ctxls/recall", {"query": query, "kind": "code"}, f"hits-{query}")
    return [h["path"] for h in reply["result"]["hits"]]


def no_outside_byte(reply: dict) -> None:
    dumped = json.dumps(reply)
    assert MARKER not in dumped and "root:x:0:0" not in dumped, reply


# -- files outside every folder are never read --------------------------------------

def test_a_save_or_close_naming_a_file_outside_every_folder_never_reads_it(tmp_path: Path,
                                                                             repo: Path):
    """The buffers-only engine behind files outside every folder has "/" as
    its root: a didSave of a file it never had open made it read that file
    from disk and serve it (recall, documentSymbol), through a path outside
    the root or a link out of it."""
    outside = plant_links(tmp_path, repo)
    daemon = StdioDaemon(repo)
    try:
        daemon.wait_indexed()
        conn = daemon.conn
        uris = [(outside / "secret.py").as_uri(), (repo / "lib.py").as_uri(),
                (repo / "vendor" / "secret.py").as_uri(), (outside / "secret.md").as_uri()]
        for uri in uris:
            notify(conn, "textDocument/didClose", {"textDocument": {"uri": uri}})
            notify(conn, "textDocument/didSave", {"textDocument": {"uri": uri}})
        # A buffer outside every folder is still served from its own text; once
        # it is, the events sent before it have been handled too.
        outside_doc = tmp_path / "elsewhere.py"
        notify(conn, "textDocument/didOpen", {"textDocument": {
            "uri": outside_doc.as_uri(), "languageId": "python", "version": 1,
            "text": "def loose_buffer_marker():\n    pass\n"}})
        assert until(lambda: code_hits(conn, "loose_buffer_marker")) == [
            str(outside_doc.resolve())[1:]]
        for n, query in enumerate((f"{MARKER}_fn token", "deploy FOO_URL")):
            reply = conn.request("ctxls/recall", {"query": query, "body": True}, n)
            assert "result" in reply, reply
            no_outside_byte(reply)
        for n, uri in enumerate(uris):
            reply = conn.request("textDocument/documentSymbol", {"textDocument": {"uri": uri}},
                                 f"symbols-{n}")
            assert reply["result"] is None, reply
        assert daemon.alive()
    finally:
        daemon.close()


def test_uris_naming_no_file_answer_null_not_an_internal_error(stdio_daemon, repo: Path):
    """A percent-encoded NUL in a URI reached os calls ("embedded null byte",
    -32603); a Windows drive path was taken as relative to the root."""
    conn = stdio_daemon.conn
    root_uri = repo.resolve().as_uri()
    for n, uri in enumerate([f"{root_uri}/pkg/sess%00ion.py", "file:///C:/Windows/win.ini",
                             "file:///c%3A/x/y.py"]):
        doc = {"textDocument": {"uri": uri}}
        at = {"textDocument": {"uri": uri}, "position": {"line": 0, "character": 0}}
        item = {"name": "x", "kind": 12, "uri": uri, "data": {"symbol": "send_prepared"},
                "range": {"start": {"line": 0, "character": 0}, "end": {"line": 1, "character": 0}},
                "selectionRange": {"start": {"line": 0, "character": 0},
                                   "end": {"line": 1, "character": 0}}}
        for method, params in (("textDocument/documentSymbol", doc),
                               ("textDocument/codeLens", doc),
                               ("textDocument/prepareCallHierarchy", at),
                               ("ctxls/impact", at),
                               ("callHierarchy/incomingCalls", {"item": item})):
            reply = conn.request(method, params, f"{method}-{n}")
            assert reply.get("result") is None, (method, uri, reply)
        lens = conn.request("codeLens/resolve", {
            "range": item["range"], "data": {"uri": uri, "symbol": "send_prepared"}}, f"lens-{n}")
        assert lens["error"]["code"] == -32602, (uri, lens)
        notify(conn, "textDocument/didSave", doc)
        notify(conn, "textDocument/didOpen", {"textDocument": {
            "uri": uri, "languageId": "python", "version": 1, "text": "def f():\n    pass\n"}})
    assert code_hits(conn, "send_prepared")[0] == "pkg/session.py"
    assert not (repo / "c:").exists()


def test_a_symbol_longer_than_any_name_is_refused_before_it_is_kept(stdio_daemon, repo: Path):
    """A code lens's `data.symbol` comes back from the client and keys the
    cached lens titles: megabyte symbols held a megabyte per cached title
    (4,096 of them). Every impact entry point refuses a symbol over the name
    bound; one at the bound is still answered."""
    conn = stdio_daemon.conn
    uri = (repo / "pkg" / "session.py").resolve().as_uri()
    span = {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 1}}
    long_name, at_bound = "a" * 1001, "a" * 1000
    impact = conn.request("ctxls/impact", {"symbol": long_name}, "impact-long")
    assert impact["error"]["code"] == -32602 and "1000" in impact["error"]["message"], impact
    assert conn.request("ctxls/impact", {"symbol": at_bound}, "impact-bound")["result"] is None
    lens = conn.request("codeLens/resolve", {"range": span, "data": {"uri": uri, "symbol": long_name}},
                        "lens-long")
    assert lens["error"]["code"] == -32602, lens
    resolved = conn.request("codeLens/resolve", {"range": span, "data": {"uri": uri, "symbol": at_bound}},
                            "lens-bound")
    assert resolved["result"]["command"]["title"].startswith("definition gone"), resolved
    item = {"name": "x", "kind": 12, "uri": uri, "range": span, "selectionRange": span,
            "data": {"symbol": long_name}}
    for method in ("callHierarchy/incomingCalls", "callHierarchy/outgoingCalls"):
        reply = conn.request(method, {"item": item}, method)
        assert reply["error"]["code"] == -32602, (method, reply)


def test_a_workspace_folder_that_does_not_exist_is_not_created(stdio_daemon, tmp_path: Path):
    missing = tmp_path / "never" / "made"
    notify(stdio_daemon.conn, "workspace/didChangeWorkspaceFolders", {"event": {
        "added": [{"uri": missing.as_uri(), "name": "made"}], "removed": []}})
    status = stdio_daemon.conn.request("ctxls/status", {}, "status")["result"]
    assert status["files"] == 5 and "folders" not in status
    assert not (tmp_path / "never").exists()


async def test_the_filesystem_root_or_a_bare_home_folder_is_refused_as_a_workspace(
        tmp_path: Path, monkeypatch):
    """Opened on `/`, the daemon created `/.ctxls` and walked every disk,
    /proc and /sys; on a home folder, every cache in it. Both are refused
    with a message (a home folder that is a repository is indexed), and so
    is `--root` naming them on the command line."""
    from conftest import serve

    home = tmp_path / "home"
    write_tree(home, {"notes.py": "def home_fn():\n    pass\n"})
    monkeypatch.setenv("HOME", str(home))
    store_before = Path("/.ctxls").exists()
    async with serve(Path("/")) as s:
        status = await s.request("ctxls/status")
        assert status["files"] == 0 and status["root"] == "" and status["complete"]
        with pytest.raises(JsonRpcException) as refused:  # no folder's store to keep it in
            await s.request("ctxls/remember", {"id": "k", "text": "kept"})
        assert refused.value.code == -32007 and "no workspace folder" in refused.value.message
        s.client.workspace_did_change_workspace_folders(types.DidChangeWorkspaceFoldersParams(
            types.WorkspaceFoldersChangeEvent(
                added=[types.WorkspaceFolder(home.as_uri(), "home")], removed=[])))
        assert (await s.request("ctxls/status"))["files"] == 0
        texts = [m.message for m in s.client.messages]
        assert any("/ is the filesystem root; not indexed" in t for t in texts), texts
        assert any(f"{home} is the home folder" in t for t in texts), texts
    assert Path("/.ctxls").exists() == store_before and not (home / ".ctxls").exists()
    for root in ("/", str(home)):
        refused = subprocess.run([*CTXLS, "index", "--root", root], capture_output=True,
                                 text=True, timeout=60)
        assert refused.returncode == 2 and "not indexed" in refused.stderr, refused.stderr
    subprocess.run(["git", "init", "-q", str(home)], check=True)
    indexed = subprocess.run([*CTXLS, "index", "--root", str(home)], capture_output=True,
                             text=True, timeout=120)
    assert indexed.returncode == 0, indexed.stderr


def test_workspace_folders_beyond_the_open_file_limit_are_refused_not_fatal(tmp_path: Path,
                                                                          repo: Path):
    """Each folder's engine keeps about 12 descriptors open: with a limit of
    256, adding 60 folders exhausted them, and the folder already open then
    answered every request -32006 (its store could not open a connection)."""
    import resource

    extra = []
    for i in range(60):
        folder = tmp_path / f"extra{i}"
        write_tree(folder, {"m.py": f"def extra_fn_{i}():\n    return {i}\n"})
        extra.append({"uri": folder.as_uri(), "name": folder.name})
    daemon = StdioDaemon(repo, preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE,
                                                                     (256, 256)))
    try:
        daemon.wait_indexed()
        notify(daemon.conn, "workspace/didChangeWorkspaceFolders",
               {"event": {"added": extra, "removed": []}})

        def grown() -> dict | None:
            status = daemon.conn.request("ctxls/status", {}, "grown")["result"]
            return status if len(status.get("folders", [])) > 1 and status["complete"] else None

        status = until(grown)
        assert status and "storeError" not in status, status
        assert len(status["folders"]) == (256 - 128) * 3 // 4 // 16  # the first and 5 others
        assert code_hits(daemon.conn, "send_prepared")[0] == "pkg/session.py"
        assert daemon.conn.request("ctxls/remember", {"id": "k", "text": "kept"}, "r")["result"] == {}
    finally:
        daemon.close()


def test_socket_connections_beyond_their_share_of_open_files_are_refused(repo: Path):
    """Each held socket connection costs a descriptor: 300 of them, with a
    limit of 256, starved the daemon (the folder's store could not open a
    connection; accept() spun on EMFILE). Past a quarter of the limit a new
    connection gets a -32000 answer and is closed; stdio and the held
    connections keep serving."""
    import resource
    import socket

    daemon = StdioDaemon(repo, {"socket": True}, preexec_fn=lambda: resource.setrlimit(
        resource.RLIMIT_NOFILE, (256, 256)))
    held = []
    try:
        daemon.wait_indexed()
        path = str(repo / ".ctxls" / "daemon.sock")
        for _ in range(300):
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.settimeout(10)
            try:
                sock.connect(path)
            except OSError:  # the backlog is full for a moment: not a held connection
                sock.close()
                continue
            held.append(sock)

        def one_more_connection():
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.settimeout(30)
            try:
                sock.connect(path)
            except OSError:  # until the daemon has taken the queued ones
                sock.close()
                return None
            return sock

        one_more = until(one_more_connection, timeout=60)
        held.append(one_more)
        answer = RawConnection(one_more.makefile("rb"), one_more.sendall).reply()
        assert answer["id"] is None and answer["error"]["code"] == -32000, answer
        assert code_hits(daemon.conn, "send_prepared")[0] == "pkg/session.py"
        forced = daemon.conn.request("ctxls/index", {"force": True}, "force")
        assert forced["result"]["files"] == 5, forced
        assert daemon.conn.request("ctxls/remember", {"id": "k", "text": "t"}, "r")["result"] == {}
        for sock in held:
            sock.close()
        conn, sock = until(lambda: _connected(repo))
        assert "result" in conn.request("ctxls/status", {}, "after"), "no connection after"
        sock.close()
    finally:
        for sock in held:
            sock.close()
        daemon.close()


def _connected(repo: Path):
    """A socket connection the daemon serves (None while it still refuses them)."""
    conn, sock = socket_connection(repo / ".ctxls" / "daemon.sock")
    reply = conn.request("ctxls/status", {}, "probe")
    if "result" in reply:
        return conn, sock
    sock.close()
    return None


@pytest.mark.parametrize("pattern", ["**/[z-a]", "\\", "!"])
def test_an_exclude_glob_git_cannot_read_is_reported_not_fatal_to_the_folder(repo: Path,
                                                                            pattern: str):
    """pathspec raised on it while the folder's engine was made: the folder
    was silently never indexed, and status (no folder) lacked `complete`."""
    daemon = StdioDaemon(repo, {"exclude": [pattern]})
    try:
        status = daemon.wait_indexed()
        assert status["complete"] and status["files"] == 5, status
    finally:
        daemon.close()


# -- symlink loops -------------------------------------------------------------------

@pytest.mark.parametrize("git", [True, False])
def test_a_symlink_loop_is_skipped_and_the_rest_is_indexed(tmp_path: Path, git: bool):
    """Path.resolve raises on a loop: a.py -> b.py -> a.py failed every
    indexing pass (nothing indexed at all) and get/node answered -32603."""
    root = tmp_path / "looped"
    root.mkdir()
    write_tree(root, SAMPLE_FILES)
    (root / "a.py").symlink_to("b.py")
    (root / "b.py").symlink_to("a.py")
    (root / "self.md").symlink_to("self.md")
    (root / "round").symlink_to("trip", target_is_directory=True)
    (root / "trip").symlink_to("round", target_is_directory=True)
    if git:
        subprocess.run(["git", "init", "-q", str(root)], check=True)
    daemon = StdioDaemon(root)
    try:
        status = daemon.wait_indexed()
        assert status["complete"] and "indexError" not in status, status
        assert status["files"] == 5
        skipped = {f["path"]: f["reason"] for f in status["skipped"]["files"]}
        assert skipped["a.py"] == skipped["b.py"] == skipped["self.md"] == "symlink loop"
        for n, (method, item_id) in enumerate([("ctxls/get", "a.py"), ("ctxls/node", "b.py"),
                                               ("ctxls/get", "round/x.py"),
                                               ("ctxls/related", "self.md")]):
            reply = daemon.conn.request(method, {"id": item_id}, n)
            assert reply["error"]["code"] == -32004, (method, reply)
        forced = daemon.conn.request("ctxls/index", {"force": True}, "force")["result"]
        assert forced["files"] == 5
    finally:
        daemon.close()


@pytest.mark.parametrize("git", [True, False])
def test_file_names_that_are_not_utf8_are_skipped_and_the_rest_is_indexed(tmp_path: Path,
                                                                          git: bool):
    """Python reads such a name with surrogate escapes, which SQLite cannot
    store: one `caf\\xe9.py` failed every indexing pass (nothing indexed), and
    impact answered -32603 when rg found a use in one."""
    root = tmp_path / "names"
    root.mkdir()
    write_tree(root, SAMPLE_FILES)
    raw = os.fsencode(root)
    for name, text in ((b"/caf\xe9.py", "def latin_fn():\n    return 2\n"),
                       (b"/d\xfe", None), (b"/d\xfe/m.py", "from pkg.session import Session\n"
                                                      "Session().send_prepared(1)\n")):
        if text is None:
            os.mkdir(raw + name)
        else:
            with open(raw + name, "w") as fh:
                fh.write(text)
    if git:
        subprocess.run(["git", "init", "-q", str(root)], check=True)
    daemon = StdioDaemon(root)
    try:
        status = daemon.wait_indexed()
        assert status["complete"] and "indexError" not in status, status
        assert status["files"] == len(SAMPLE_FILES)
        skipped = {f["path"]: f["reason"] for f in status["skipped"]["files"]}
        assert skipped == {"caf\ufffd.py": "name not UTF-8", "d\ufffd/m.py": "name not UTF-8"}
        impact = daemon.conn.request("ctxls/impact", {"symbol": "send_prepared"}, "impact")
        assert impact["result"]["definitions"][0]["path"] == "pkg/session.py", impact
        assert all(is_utf8(c["path"]) for c in impact["result"]["callers"])
    finally:
        daemon.close()


@pytest.mark.parametrize("git", [True, False])
def test_file_names_with_a_line_break_are_skipped_so_no_answer_prints_a_forged_line(
        tmp_path: Path, git: bool):
    """Answers' text prints one path per line (the CLI on a pipe, which is
    how agents read it, and the MCP tools' text). A file named
    "evil\\n    99.999  secrets.py:1-3  steal.py" forged a hit there, and in
    impact a caller. Such a name is now skipped, in a pass, a watcher
    batch and impact's sweep alike, and listed escaped."""
    root = tmp_path / "names"
    write_tree(root, SAMPLE_FILES)
    forged = "evil\n    99.999  secrets.py:1-3  steal.py"
    (root / forged).write_text("from pkg.session import Session\n\n\n"
                               "def forged_entry():\n    return Session().send_prepared(1)\n")
    if git:
        subprocess.run(["git", "init", "-q", str(root)], check=True)
    engine = Engine(root, EngineOptions(embeddings=False))
    try:
        stats = engine.index()
        assert (stats.files, stats.skipped) == (len(SAMPLE_FILES), 1)
        assert engine.indexer.skipped == {
            "evil\\u000a    99.999  secrets.py:1-3  steal.py": "name holds a control character"}
        assert engine.symbols("forged_entry", "exact") == []
        callers = analyze(engine, "send_prepared").callers
        assert callers and all("\n" not in c.path for c in callers)
        # `ctxls status` says what was left out, by reason (it said nothing).
        from ctxls.daemon import wire
        from ctxls.daemon.formatting import left_out_line
        assert left_out_line(wire.status_json(engine.status())) \
            == "  skipped  1: name holds a control character 1\n"
        # One written later, seen by the watcher (or an editor's event): skipped too.
        (root / "late\u2028name.py").write_text("def late_forged():\n    pass\n")
        engine.files_changed_on_disk(["late\u2028name.py"])
        assert engine.symbols("late_forged", "exact") == []
    finally:
        engine.close()


def is_utf8(text: str) -> bool:
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace") == text


# -- JSON-RPC: every request gets an answer ----------------------------------------

def test_every_request_gets_an_answer_whatever_its_envelope(stdio_daemon):
    conn = stdio_daemon.conn
    for n, method in enumerate([5, None, ["ctxls/status"]]):
        reply = conn.request(method, {}, f"method-{n}")
        assert reply["error"]["code"] == -32600, reply
    # "$/" methods are notifications; a request of one is MethodNotFound (LSP), not silence.
    for n, method in enumerate(["$/cancelRequest", "$/setTrace", "$/anything"]):
        reply = conn.request(method, {"id": "x", "value": "off"}, f"dollar-{n}")
        assert reply["error"]["code"] == -32601, reply
    # More digits than Python turns into an int: a parse error, not a dropped request.
    conn.send_body(b'{"jsonrpc": "2.0", "id": "digits", "method": "ctxls/recall", '
                   b'"params": {"query": "x", "n": ' + b"1" * 5000 + b"}}")
    reply = conn.reply()
    assert (reply["id"], reply["error"]["code"]) == (None, -32700)
    assert conn.request("ctxls/count", {}, "alive")["result"] == {"count": 0}


def test_requests_after_shutdown_are_refused_not_ignored(repo: Path):
    daemon = StdioDaemon(repo)
    try:
        daemon.wait_indexed()
        assert daemon.conn.request("shutdown", None, "down")["result"] is None
        reply = daemon.conn.request("ctxls/status", {}, "after", timeout=10)
        assert reply["error"]["code"] == -32600 and "shutting down" in reply["error"]["message"]
    finally:
        daemon.close()


@pytest.mark.parametrize("first", [b"5", b'"x"', b"[" * 100_000 + b"]" * 100_000,
                                   b'{"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": 5}',
                                   b'{"jsonrpc": "2.0", "id": 0, "method": "initialize", '
                                   b'"params": {"capabilities": {}, "workspaceFolders": 5}}'])
def test_any_first_message_is_answered_and_the_server_lives(repo: Path, first: bytes):
    """`ctxls serve` reads the first message itself (to proxy to a running
    daemon): JSON that was not an object, non-object params or folders, or
    nesting too deep killed the process with a traceback, unanswered."""
    process, conn = serve_process()
    try:
        conn.send_body(first)
        assert conn.reply()["error"]["code"] in (-32600, -32602, -32700)
        uri = repo.resolve().as_uri()
        # A folder URI with a NUL names no folder: initialized, serving, nothing indexed.
        answer = conn.request("initialize", {"processId": None, "capabilities": {},
                                             "rootUri": f"{uri}/%00",
                                             "initializationOptions": {"embeddings": False}}, 1)
        assert "capabilities" in answer["result"]
        conn.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
        status = conn.request("ctxls/status", {}, "status")["result"]
        assert status["files"] == 0 and status["root"] == ""
        assert process.poll() is None
    finally:
        process.kill()
        process.wait()


def test_a_message_over_the_size_bound_is_read_away_and_answered(repo: Path):
    """A Content-Length of a terabyte killed `ctxls serve` (MemoryError: the
    body was to be read whole), unanswered; one over the 64 MiB bound,
    first or later, is now read away in pieces and answered -32700."""
    process, conn = serve_process()
    oversized = (64 << 20) + 1
    try:
        conn.send_body(b" " * oversized)
        first = conn.reply()
        assert first["id"] is None and first["error"]["code"] == -32700
        assert f"{oversized} bytes is over the 64 MiB bound" in first["error"]["message"]
        answer = conn.request("initialize", {"processId": None, "capabilities": {},
                                             "rootUri": repo.resolve().as_uri(),
                                             "initializationOptions": {"embeddings": False}}, 1)
        assert "capabilities" in answer["result"]
        conn.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
        conn.send_body(b" " * oversized)
        assert conn.reply()["error"]["code"] == -32700
        assert "root" in conn.request("ctxls/status", {}, "status")["result"]
        assert process.poll() is None
    finally:
        process.kill()
        process.wait()


def oversized_bodies(uri: str) -> tuple[bytes, bytes]:
    """A didOpen over the 64 MiB bound (its uri before the text, as Neovim
    may send it) and a request whose id comes after its params."""
    text = b"y" * ((64 << 20) + 1)
    did_open = (b'{"jsonrpc":"2.0","method":"textDocument/didOpen","params":{"textDocument":'
                b'{"uri":"%s","languageId":"sql","version":1,"text":"%s"}}}' % (uri.encode(), text))
    request = b'{"jsonrpc":"2.0","method":"ctxls/locate","params":{"text":"%s"},"id":"big"}' % text
    return did_open, request


def test_an_oversized_notification_gets_no_reply_and_a_request_its_own_id(stdio_daemon, repo: Path):
    """A message over the 64 MiB bound was answered -32700 with a null id,
    even a notification (Neovim's didOpen of a 66 MiB file): Neovim's client
    rejects that reply with a Lua error on screen, and a request never got
    the error under its own id. Now, on stdio, through an editor's proxy and
    on the socket alike: a notification gets no reply (a didOpen's file is
    said too large to index from the editor), a request its id's error, and
    the stream goes on."""
    uri = f"{repo.resolve().as_uri()}/dump.sql"
    did_open, request = oversized_bodies(uri)
    stdio_daemon.wait_indexed()
    proxy, proxied = serve_process()  # the daemon's socket has an owner: this one proxies
    try:
        answer = proxied.request("initialize", {
            "processId": None, "rootUri": repo.resolve().as_uri(), "capabilities": {},
            "initializationOptions": {"embeddings": False}}, "init")
        assert "capabilities" in answer["result"]
        proxied.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
        for conn in (stdio_daemon.conn, proxied):
            conn.send_body(did_open)
            conn.send_body(request)
            reply = conn.reply(timeout=60)
            assert reply["id"] == "big" and reply["error"]["code"] == -32600, reply
            assert "over the 64 MiB bound" in reply["error"]["message"]
            shown = [note for note in iter_queue(conn.notifications)
                     if note["method"] == "window/showMessage"]
            assert any(f"{uri} is too large to index" in note["params"]["message"] for note in shown)
            assert "root" in conn.request("ctxls/status", {}, "after")["result"]
            assert conn.replies.empty()  # nothing answered the notification
        assert stdio_daemon.alive() and proxy.poll() is None
        sock_conn, sock = socket_connection(repo / ".ctxls" / "daemon.sock")
        try:
            sock_conn.send_body(request)
            reply = sock_conn.reply(timeout=60)
            assert reply["id"] == "big" and reply["error"]["code"] == -32600, reply
            assert "root" in sock_conn.request("ctxls/status", {}, "after")["result"]
        finally:
            sock.close()
    finally:
        proxy.kill()
        proxy.wait()


def iter_queue(q):
    """What ``q`` holds now, taken out."""
    items = []
    while not q.empty():
        items.append(q.get_nowait())
    return items


def test_an_editor_proxied_to_the_daemon_survives_malformed_messages(stdio_daemon, repo: Path):
    """A second editor's `ctxls serve` proxies to the running daemon: a body
    it could not parse, JSON that was not an object or a list as an id ended
    the proxy (the editor's language server) at once."""
    sock = repo / ".ctxls" / "daemon.sock"
    for _ in range(100):
        if sock.exists():
            break
        time.sleep(0.05)
    process, conn = serve_process()
    try:
        uri = repo.resolve().as_uri()
        answer = conn.request("initialize", {
            "processId": None, "rootUri": uri, "capabilities": {},
            "workspaceFolders": [{"uri": uri, "name": "repo"}]}, "init")
        assert "capabilities" in answer["result"]
        conn.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
        for body, code in ((b"5", -32600), (b"{bad", -32700), (b"[" * 100_000 + b"]" * 100_000, -32700),
                           (b'{"jsonrpc": "2.0", "id": [1], "method": "ctxls/status"}', -32600),
                           (b'{"jsonrpc": "2.0", "id": 7, "method": 5}', -32600)):
            conn.send_body(body)
            assert conn.reply()["error"]["code"] == code, body[:40]
        status = conn.request("ctxls/status", {}, "status")["result"]
        assert status["files"] == 5 and process.poll() is None
        # It was a proxy: the owner's socket has this session's open buffer.
        conn.send({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {
            "uri": f"{uri}/pkg/proxied.py", "languageId": "python", "version": 1,
            "text": "def proxied_marker():\n    pass\n"}}})
        assert until(lambda: code_hits(stdio_daemon.conn, "proxied_marker")) == ["pkg/proxied.py"]
    finally:
        process.kill()
        process.wait()


# -- written memory: what is stored can always be served ----------------------------

def nested(depth: int) -> dict:
    meta: dict = {"leaf": 1}
    for _ in range(depth - 1):
        meta = {"a": meta}
    return meta


def test_meta_is_bounded_so_that_its_answers_can_be_sent(stdio_daemon):
    """A meta nested 900 deep was stored; every answer holding it (get,
    recall) then failed to encode and went out as a -32700 with id null: the
    client never got its answer."""
    conn = stdio_daemon.conn
    too_deep = conn.request("ctxls/remember", {"id": "deep", "text": "a deep fact",
                                               "meta": nested(65)}, "deep")
    assert too_deep["error"]["code"] == -32602 and too_deep["error"]["data"] == {"param": "meta"}
    too_big = conn.request("ctxls/remember", {"id": "big", "text": "a big fact",
                                              "meta": {"blob": "x" * 70_000}}, "big")
    assert too_big["error"]["code"] == -32005 and too_big["error"]["data"] == {"limit": 65536}
    ingest = conn.request("ctxls/ingest", {"filename": "n.md", "text": "# N\n\nnotes",
                                           "meta": nested(100)}, "ingest")
    assert ingest["error"]["data"] == {"param": "meta"}
    assert conn.request("ctxls/count", {}, "count")["result"] == {"count": 0}
    assert conn.request("ctxls/remember", {"id": "ok", "text": "a fact at the bound",
                                           "meta": nested(64)}, "ok")["result"] == {}
    got = conn.request("ctxls/get", {"id": "ok"}, "get")["result"]
    assert got["meta"] == nested(64)
    hits = conn.request("ctxls/recall", {"query": "fact bound", "kind": "fact"},
                        "recall")["result"]["hits"]
    assert hits[0]["meta"] == nested(64)


def test_answers_carry_at_most_16_mib_of_bodies_and_page_past_it(stdio_daemon):
    """Each row within its 10 MiB bound, an answer was not: recentMemory,
    enumerate and recall with bodies sent every row whole (200 rows at the
    bound made a 2 GB answer). Three 6 MiB facts: the first two bodies fit
    the answer's 16 MiB, the third is left out and says so; get reads it,
    and enumerate's page ends before it so that nextOffset reads it whole."""
    conn = stdio_daemon.conn
    line = "x" * 70 + "\n"
    texts = {f"big{i}": f"bulky fact {i}\n" + line * (6 * 1024 * 1024 // len(line))
             for i in range(3)}
    for key, text in texts.items():
        assert conn.request("ctxls/remember", {"id": key, "text": text}, key)["result"] == {}

    recent = conn.request("ctxls/recentMemory", {"n": 200, "body": True}, "recent")["result"]
    assert recent["truncated"] is True
    bodies = {item["path"]: item["body"] for item in recent["items"]}
    assert len(bodies) == 3 and list(bodies.values()).count(None) == 1
    left_out = next(item for item in recent["items"] if item["body"] is None)
    assert left_out["truncated"] is True
    assert all(bodies[k] == texts[k] for k in bodies if bodies[k] is not None)
    got = conn.request("ctxls/get", {"id": left_out["path"]}, "get")["result"]
    assert got["text"] == texts[left_out["path"]]

    hits = conn.request("ctxls/recall", {"query": "bulky fact", "kind": "fact", "n": 200,
                                         "body": True}, "recall")["result"]
    assert hits["truncated"] is True and len(hits["hits"]) == 3
    assert [h.get("truncated", False) for h in hits["hits"]] == [False, False, True]
    assert "truncated" not in conn.request("ctxls/recall", {"query": "bulky fact", "kind": "fact"},
                                           "no-body")["result"]

    first = conn.request("ctxls/enumerate", {"kind": "fact", "body": True}, "page1")["result"]
    assert first["truncated"] is True and first["total"] == 3
    assert [i["path"] for i in first["items"]] == ["big0", "big1"] and first["nextOffset"] == 2
    rest = conn.request("ctxls/enumerate", {"kind": "fact", "body": True, "offset": 2},
                        "page2")["result"]
    assert [i["body"] for i in rest["items"]] == [texts["big2"]] and rest["nextOffset"] is None
    assert "truncated" not in rest
    # The CLI's and the MCP bridge's text says why a text is missing.
    from ctxls.daemon.formatting import BODY_LEFT_OUT, format_hits_human
    assert BODY_LEFT_OUT in format_hits_human({"fact": hits["hits"]}, bodies=True)


def test_a_hit_on_a_one_line_dump_is_shown_cut_in_text_answers(tmp_path: Path):
    """A SQL dump or data file on one 900 KB line: the CLI's and the MCP
    bridge's text printed the whole line for its hit (more than an agent's
    tool answer may hold). Text answers cut such a line and say how much is
    left out; the JSON answer keeps it whole."""
    from ctxls.daemon.formatting import MAX_SHOWN_LINE_CHARS, format_hits_human, format_hits_vimgrep
    values = ",".join(f"({i},'user{i}@example.com')" for i in range(30000))
    write_tree(tmp_path, {"dump.sql": f"INSERT INTO users (id, email) VALUES {values};\n",
                          "app.py": "def load_users():\n    return 'user39999'\n"})
    engine = Engine(tmp_path, EngineOptions())
    try:
        engine.index()
        result = wire.recall_json(engine.recall("users email", ["code"], body=True, mode="lexical"), False)
    finally:
        engine.close()
    hits = result["groups"]["code"]
    dump = next(h for h in hits if h["path"] == "dump.sql")
    assert len(dump["body"]) > 800_000  # the protocol's answer is the text as it is
    text = format_hits_human({"code": hits}, bodies=True)
    assert len(text) < 4 * MAX_SHOWN_LINE_CHARS and "more characters]" in text and "def load_users" in text
    assert all(len(line) < MAX_SHOWN_LINE_CHARS + 300 for line in format_hits_vimgrep({"code": hits}).split("\n"))


def test_a_daemon_without_folders_refuses_to_write_memory_it_would_lose(tmp_path: Path):
    """Without a workspace folder, memory went to the throw-away store of
    buffers outside every folder: `remember` answered {} (an editor said
    "remembered") and the fact was gone after a restart. Writes are refused,
    saying why; reads find nothing, and an id is never read as a path."""
    process = subprocess.Popen([*CTXLS, "serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL, cwd=tmp_path)

    def write(data: bytes) -> None:
        process.stdin.write(data)
        process.stdin.flush()

    conn = RawConnection(process.stdout, write)
    try:
        assert "result" in conn.request("initialize", {
            "processId": None, "rootUri": None, "capabilities": {},
            "initializationOptions": {"embeddings": False}}, "init")
        conn.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
        for msg_id, method, params in (
                ("remember", "ctxls/remember", {"id": "k", "text": "a folderless fact"}),
                ("ingest", "ctxls/ingest", {"filename": "notes.md", "text": "# Notes\n"}),
                ("stash", "ctxls/stash", {"id": "log", "text": "parked"})):
            answer = conn.request(method, params, msg_id)
            assert answer.get("error", {}).get("code") == -32007, answer
            assert answer["error"]["data"]["reason"] == "no_folder"
            assert "no workspace folder is open" in answer["error"]["message"]
        found = conn.request("ctxls/recall", {"query": "folderless fact", "kind": "fact"}, "recall")
        assert found["result"]["hits"] == []
        assert conn.request("ctxls/get", {"id": "/etc/passwd"}, "passwd")["result"] is None
    finally:
        process.kill()
        process.wait()


def test_an_answer_that_cannot_be_encoded_still_answers_its_request(stdio_daemon, repo: Path):
    """A row stored before the bound (by an older ctxls) with a meta too deep
    for pygls to encode: its get answers -32603 for that id (it went out as a
    -32700 with id null); the socket's plain encoder sends it as is."""
    conn = stdio_daemon.conn
    assert conn.request("ctxls/remember", {"id": "old", "text": "an old fact"}, "w")["result"] == {}
    with sqlite3.connect(repo / ".ctxls" / "index.db") as db:
        db.execute("UPDATE memory SET meta = ? WHERE key = 'old'",
                   ('{"a":' * 900 + "1" + "}" * 900,))
    reply = conn.request("ctxls/get", {"id": "old"}, "get-old")
    assert reply["error"]["code"] == -32603 and "encoded" in reply["error"]["message"]
    sock_conn, sock = socket_connection(repo / ".ctxls" / "daemon.sock")
    try:
        reply = sock_conn.request("ctxls/get", {"id": "old"}, "sock-old")
        assert reply["result"]["text"] == "an old fact"
        assert sock_conn.request("ctxls/count", {}, "sock-count")["result"] == {"count": 1}
    finally:
        sock.close()
    assert conn.request("ctxls/count", {}, "count")["result"] == {"count": 1}


def test_an_internal_errors_traceback_reaches_a_client_only_under_ctxls_debug(
        monkeypatch: pytest.MonkeyPatch):
    """pygls answers a handler's unexpected exception with its traceback in
    the error's data; the daemon's converter (what every LSP message is
    encoded with) leaves it out unless CTXLS_DEBUG is set."""
    from lsprotocol.types import ResponseErrorMessage
    from pygls.exceptions import JsonRpcInternalError

    from ctxls.daemon.app import lsp_converter

    try:
        {}["missing"]
    except KeyError:
        error = JsonRpcInternalError.of(sys.exc_info()).to_response_error()
    message = ResponseErrorMessage(id=7, error=error)
    monkeypatch.delenv("CTXLS_DEBUG", raising=False)
    assert json.loads(json.dumps(lsp_converter().unstructure(message))) == {
        "jsonrpc": "2.0", "id": 7, "error": {"code": -32603, "message": "KeyError: 'missing'"}}
    monkeypatch.setenv("CTXLS_DEBUG", "1")
    debug = lsp_converter().unstructure(message)
    assert any("missing" in frame for frame in debug["error"]["data"]["traceback"])


# -- what a file or buffer holds -----------------------------------------------------

def test_document_symbols_of_deeply_nested_classes_are_answered(stdio_daemon, repo: Path):
    """400 nested classes gave an outline nested 400 deep: it could not be
    encoded and the request got no answer. Nesting stops at 32 levels; the
    deeper symbols are listed at the 32nd."""
    source = "".join("    " * i + f"class C{i}:\n" for i in range(400)) + "    " * 400 + "pass\n"
    (repo / "nested.py").write_text(source)
    conn = stdio_daemon.conn
    assert conn.request("ctxls/index", {"paths": ["nested.py"]}, "index")["result"]["added"] == 1
    reply = conn.request("textDocument/documentSymbol",
                         {"textDocument": {"uri": (repo / "nested.py").resolve().as_uri()}}, "outline")
    level, names = reply["result"], []
    while level:
        names.append(level[0]["name"])
        deepest = level
        level = level[0]["children"]
    assert names[:2] == ["C0", "C1"] and len(names) == 32
    assert [s["name"] for s in deepest][:3] == ["C31", "C32", "C33"] and len(deepest) == 369


def test_a_file_grown_past_the_size_bound_is_not_read_whole(stdio_daemon, repo: Path):
    """An indexed file that grows past 1 MiB (a log being written) was read
    whole by every get and assemble: a 300 MB file gave a 315 MB answer."""
    with open(repo / "README.md", "a", encoding="utf-8") as grown:
        grown.write(("x" * 1023 + "\n") * 2048)  # 2 MiB more
    conn = stdio_daemon.conn
    assert conn.request("ctxls/get", {"id": "README.md"}, "get")["result"] is None
    assembled = conn.request("ctxls/assemble", {"query": "deploy script FOO_URL",
                                                "budgetTokens": 500}, "assemble")["result"]
    # Followed on disk (issue 34): past the bound, the file leaves the index as
    # discovery would leave it out, so nothing of it is read into an answer.
    assert "README.md" not in assembled["context"] and assembled["stats"]["originalTokens"] < 1000
    skipped = conn.request("ctxls/status", {}, "status")["result"]["skipped"]["files"]
    assert {"path": "README.md", "reason": "too large"} in skipped
    assert conn.request("ctxls/get", {"id": "pkg/session.py"}, "other")["result"]["text"]


def test_a_recall_query_is_bounded(stdio_daemon):
    """200,000 distinct terms kept a worker thread busy for minutes (FTS5's
    cost grows with the square of the OR-ed terms)."""
    conn = stdio_daemon.conn
    many = " ".join(f"t{i}" for i in range(200_000))
    for n, method in enumerate(["ctxls/recall", "ctxls/assemble"]):
        reply = conn.request(method, {"query": many, "budgetTokens": 1000}, f"long-{n}")
        assert reply["error"]["code"] == -32602 and reply["error"]["data"] == {"param": "query"}
    at_bound = ("send prepared " * 1000)[:10_000]
    hits = conn.request("ctxls/recall", {"query": at_bound, "kind": "code"}, "bound")
    assert hits["result"]["hits"][0]["path"] == "pkg/session.py"


def test_a_client_that_never_answers_progress_creation_still_gets_its_index(repo: Path):
    """A client that says it shows work-done progress but never answers
    `window/workDoneProgress/create`: the first index waited for that answer
    for good (status "indexing", every recall -32011). Now the bar is given
    up after PROGRESS_CREATE_S and the index goes on without it."""
    daemon = StdioDaemon(repo, capabilities={"window": {"workDoneProgress": True}},
                         answers_requests=False)
    try:
        status = daemon.wait_indexed(timeout=60)
        assert status["complete"] and status["files"] == len(SAMPLE_FILES), status
        answer = daemon.conn.request("ctxls/recall", {"query": "session", "kind": "code"}, "r")
        assert answer["result"]["hits"], answer
    finally:
        daemon.close()


def test_what_no_request_may_carry_is_named_where_it_is():
    """Values and keys at any depth; a key's message says what it holds (it
    said "has a key that does not contain unpaired surrogates")."""
    assert first_invalid({"meta": {"a": [1, {"b": "x\ud800"}]}}) == \
        ("meta.a.1.b", "must not contain unpaired surrogates")
    assert first_invalid({"meta": {"k\0": 1}}) == ("meta.k\0", "has a key that contains NUL characters")
    assert first_invalid({"meta": {"\udfff": 1}})[1] == "has a key that contains unpaired surrogates"
    assert first_invalid({"n": 1 << 63}) == ("n", "is outside the 64-bit integer range")
    assert first_invalid({"x": float("nan")}) == ("x", "must be a finite number")
    assert first_invalid({"ok": ["text", 1, 2.5, None, True, {"k": "v"}]}) is None


def test_buffer_text_with_lone_surrogates_or_nul_follows_the_file_rules(stdio_daemon, repo: Path):
    """A lone surrogate (JSON can carry one in didOpen text; SQLite cannot
    store it) failed the buffer's indexing silently: the edit was lost. A NUL
    made a buffer "binary", yet it was indexed (a file with one is skipped)."""
    conn = stdio_daemon.conn

    def open_raw(rel: str, text_json: str) -> None:
        uri = (repo / rel).resolve().as_uri()
        conn.send_body(('{"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": '
                        '{"textDocument": {"uri": "%s", "languageId": "python", "version": 1, '
                        '"text": "%s"}}}' % (uri, text_json)).encode())

    open_raw("pkg/retry.py", r"def lone_\ud800_surrogate_marker():\n    return '\udfff'\n")
    open_raw("pkg/blob.py", r"def nul_buffer_marker():\n    return '\u0000'\n")
    assert until(lambda: code_hits(conn, "surrogate_marker")) == ["pkg/retry.py"]
    text = conn.request("ctxls/get", {"id": "pkg/retry.py"}, "get")["result"]["text"]
    assert text == "def lone_\ufffd_surrogate_marker():\n    return '\ufffd'\n"

    def skipped() -> list[dict]:
        return conn.request("ctxls/status", {}, "status")["result"]["skipped"]["files"]

    assert {"path": "pkg/blob.py", "reason": "binary"} in until(
        lambda: [f for f in skipped() if f["path"] == "pkg/blob.py"])
    assert "pkg/blob.py" not in code_hits(conn, "nul_buffer_marker")


def test_node_and_related_refuse_an_empty_id(stdio_daemon):
    for n, method in enumerate(["ctxls/node", "ctxls/related"]):
        reply = stdio_daemon.conn.request(method, {"id": ""}, n)
        assert (reply["error"]["code"], reply["error"]["data"]) == (-32602, {"param": "id"})


# -- the command line ---------------------------------------------------------------

def cli(*args: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([*CTXLS, *args], capture_output=True, text=True, timeout=300, **kwargs)


def test_the_command_line_with_stdin_or_stdout_closed(repo: Path):
    """A closed stdin or stdout (`<&-`, `>&-`) ended locate, serve, mcp and
    every output verb with a traceback."""
    assert cli("index", "--root", str(repo)).returncode == 0
    root = ["--root", str(repo)]

    def closed(stream: int, *args: str) -> subprocess.CompletedProcess:
        # The child starts with that descriptor closed, as after `<&-` or `>&-`.
        def close_it():
            os.close(stream)
        kwargs = {"stdin": subprocess.DEVNULL} if stream == 1 else {}
        return subprocess.run([*CTXLS, *args], stdout=None if stream == 1 else subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, timeout=300,
                              preexec_fn=close_it, **kwargs)

    for args in (["locate", *root], ["serve"], ["mcp", *root]):
        done = closed(0, *args)
        assert done.returncode == 2 and "Traceback" not in done.stderr, (args, done.stderr)
        assert "closed" in done.stderr
    for args in (["recall", "send_prepared", *root], ["status", *root, "--json"]):
        done = closed(1, *args)
        assert done.returncode == 141 and done.stderr == "", (args, done.stderr)
    mcp = closed(1, "mcp", *root)
    assert mcp.returncode == 2 and "stdout is closed" in mcp.stderr


def test_the_command_line_refuses_meta_too_deep_to_read(repo: Path, tmp_path: Path):
    assert cli("index", "--root", str(repo)).returncode == 0
    deep = '{"a":' * 3000 + "1" + "}" * 3000
    meta = cli("remember", "k", "text", "--meta", deep, "--root", str(repo))
    assert meta.returncode == 2 and "Traceback" not in meta.stderr and "--meta" in meta.stderr
    db = str(repo / ".ctxls" / "index.db")
    row = {"type": "memory", "scope": "@global", "id": "x", "part": 0, "kind": "fact",
           "by": "human", "format": "text", "symbol": None, "startLine": 0, "endLine": 0,
           "text": "t", "meta": None, "session": None, "createdAt": 1, "occurredAt": 1,
           "expiresAt": None}
    for line in (deep, json.dumps(row | {"meta": "{not json"}),
                 json.dumps(row | {"meta": json.dumps(nested(100))})):
        imported = cli("memory", "import", "--db", db, input=line + "\n")
        assert imported.returncode == 2 and "Traceback" not in imported.stderr, imported.stderr
        assert "line 1" in imported.stderr
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT count(*) FROM memory").fetchone()[0] == 0


# -- the MCP bridge ------------------------------------------------------------------

async def test_mcp_errors_all_say_ctxls_error(repo: Path):
    """A tool's failure is a `ctxls error CODE:` tool result; an unknown tool
    is the protocol error -32602, as the MCP spec lists it."""
    from mcp import StdioServerParameters
    from mcp.shared.exceptions import MCPError
    from mcp.client.session import ClientSession
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(command=sys.executable,
                                   args=[*CTXLS[1:], "mcp", "--root", str(repo), "--no-daemon"],
                                   env={**os.environ, "CTXLS_LOG": "ERROR"})
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            with pytest.raises(MCPError) as unknown:
                await session.call_tool("drop_tables", {})
            assert unknown.value.code == -32602 and "'drop_tables'" in unknown.value.message
            long = await session.call_tool("recall", {"query": "x " * 6000})
            assert long.is_error and long.content[0].text.startswith(
                "ctxls error -32602: invalid param 'query': must be at most 10000 characters")
            status = await session.call_tool("status", {"format": "json"})
            assert not status.is_error
            # An argument no parameter has is refused by name, never ignored.
            budget = await session.call_tool("assemble", {"query": "session", "budget": 600})
            assert budget.is_error and budget.content[0].text.startswith(
                "ctxls error -32602: unknown argument 'budget'; did you mean 'budget_tokens'?")
            typo = await session.call_tool("get", {"id": "pkg/retry.py", "endline": 2})
            assert typo.is_error and "unknown argument 'endline'; did you mean 'end_line'?" \
                in typo.content[0].text
            # The engine's errors name the parameter as the agent typed it.
            budget = await session.call_tool("assemble", {"query": "session", "budget_tokens": 0})
            assert budget.is_error and budget.content[0].text.startswith(
                "ctxls error -32602: invalid param 'budget_tokens'")
            backwards = await session.call_tool("get", {"id": "pkg/retry.py", "start_line": 5,
                                                        "end_line": 2})
            assert "invalid param 'end_line': must not be before start_line" \
                in backwards.content[0].text
            # Past a file's end is said, never an empty answer; the count is an editor's.
            last = len((repo / "pkg/retry.py").read_text().splitlines())
            at_end = await session.call_tool("get", {"id": "pkg/retry.py", "start_line": last})
            assert at_end.content[0].text.startswith(f"pkg/retry.py lines {last}-{last} of {last}:")
            after = await session.call_tool("get", {"id": "pkg/retry.py", "start_line": last + 1})
            assert after.content[0].text == f"not found: pkg/retry.py ends before line {last + 1}"
            typed = await session.call_tool("recall", {"query": "x", "n": "many"})
            assert typed.content[0].text == ("ctxls error -32602: invalid param 'n': must be an "
                                             "integer")
            tools = (await session.list_tools()).tools
            assert tools and all(t.input_schema.get("additionalProperties") is False for t in tools)
            assert all(t.title for t in tools)


def test_the_mcp_bridge_answers_every_request_it_cannot_read(repo: Path):
    """The SDK's stdio transport dropped a line it could not read without a
    word: not JSON, a batch, params that are a list or hold a lone surrogate,
    an id of null or 1.5 (read as a notification). The agent waited forever
    for those requests' answers."""
    process = subprocess.Popen([*CTXLS, "mcp", "--root", str(repo), "--no-daemon"],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL, env={**os.environ, "CTXLS_LOG": "ERROR"})

    lines: queue.Queue[bytes] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in process.stdout],
                     daemon=True).start()

    def ask(raw: bytes) -> dict:
        process.stdin.write(raw + b"\n")
        process.stdin.flush()
        return json.loads(lines.get(timeout=30))  # queue.Empty: no answer

    try:
        init = ask(json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "probe", "version": "1"}}}).encode())
        assert "result" in init, init
        process.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        call = b'{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":%s}'
        for raw, msg_id, code, words in [
                (b"not json", None, -32700, "parse error"),
                (b'{"jsonrpc":"2.0","id":1,"method":"tools/list"} and more', None, -32700, "parse"),
                (b'[{"jsonrpc":"2.0","id":2,"method":"tools/list"}]', None, -32600, "batches"),
                (b'{"jsonrpc":"2.0","id":null,"method":"tools/list"}', None, -32600, "id must"),
                (b'{"jsonrpc":"2.0","id":1.5,"method":"tools/list"}', None, -32600, "id must"),
                (b'{"jsonrpc":"1.0","id":3,"method":"tools/list"}', 3, -32600, "2.0"),
                (call % (b"4", b"[1,2]"), 4, -32602, "params must be an object"),
                (call % (b'"five"', b'{"name":"re\\ud800call","arguments":{}}'), "five",
                 -32602, "'params.name': must not contain unpaired surrogates")]:
            reply = ask(raw)
            assert reply["id"] == msg_id and reply["error"]["code"] == code, (raw, reply)
            assert words in reply["error"]["message"], (raw, reply)
        # A tool's arguments are the tool's to refuse: a tool error the agent reads.
        reply = ask(call % (b"55", b'{"name":"recall","arguments":{"query":"\\ud800"}}'))
        assert reply["result"]["isError"] is True, reply
        assert reply["result"]["content"][0]["text"].startswith(
            "ctxls error -32602: invalid param 'query': must not contain unpaired surrogates")
        process.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/nope","params":[1]}\n')
        process.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/cancelled",'
                            b'"params":{"requestId":[1]}}\n')
        tools = ask(b'{"jsonrpc":"2.0","id":6,"method":"tools/list"}')
        assert tools["id"] == 6 and any(t["name"] == "recall" for t in tools["result"]["tools"])
        assert ask(b'{"jsonrpc":"2.0","id":7,"method":"ping"}') == {"jsonrpc": "2.0", "id": 7,
                                                                    "result": {}}
        unknown = ask(b'{"jsonrpc":"2.0","id":8,"method":"resources/read","params":{}}')
        assert unknown["error"]["code"] == -32601 and "resources/read" in unknown["error"]["message"]
        # A version this server does not speak is answered with the newest it does.
        newest = ask(json.dumps({"jsonrpc": "2.0", "id": 9, "method": "initialize", "params": {
            "protocolVersion": "1999-01-01", "capabilities": {},
            "clientInfo": {"name": "probe", "version": "1"}}}).encode())
        assert newest["result"]["protocolVersion"] == "2025-11-25"
        assert init["result"]["protocolVersion"] == "2025-06-18"
    finally:
        process.kill()
        process.wait()


MiB = 1024 * 1024


def peak_bytes(fn) -> tuple[object, int]:
    """``fn()`` and the most memory Python held for it at once."""
    tracemalloc.start()
    try:
        result = fn()
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.fixture(params=["sqlite", "postgresql"])
def memory_engine(request, tmp_path: Path):
    root = tmp_path / "root"
    write_tree(root, SAMPLE_FILES)
    url = (request.getfixturevalue("pg_server").fresh_database()
           if request.param == "postgresql" else None)
    engine = Engine(root, EngineOptions(db_path=str(tmp_path / "index.db"), memory_url=url))
    yield engine
    engine.close()


def test_memory_answers_read_no_more_of_huge_rows_than_they_can_carry(memory_engine: Engine):
    """Rows were read whole from the store before the answer's 16 MiB body
    bound applied: four facts at 9 MiB (each within its 10 MiB bound) made
    every recall, recentMemory, enumerate, assemble and knowledge block hold
    36 MiB of text, bodies asked for or not (200 such rows: 2 GB). Now a row's
    text is read only when the answer takes it: the first body (9 MiB; the
    second does not fit what is left), and none without bodies."""
    engine = memory_engine
    line = "y" * 70 + "\n"
    texts = {f"huge{i}": f"towering fact {i}\n" + line * ((MAX_WRITE_BYTES - MiB) // len(line))
             for i in range(4)}
    for key, text in texts.items():
        engine.memory.remember(EVERYTHING, key, text)

    def recall(body: bool):
        return wire.recall_json(engine.recall("towering fact", ["fact"], 200, body, log=False),
                                flat=True)

    answer, peak = peak_bytes(lambda: recall(True))
    assert [h.get("truncated", False) for h in answer["hits"]] == [False, True, True, True]
    assert answer["hits"][0]["body"] == texts[answer["hits"][0]["path"]]
    assert peak < 27 * MiB, peak  # one 9 MiB text (and its bytes), not four
    answer, peak = peak_bytes(lambda: recall(False))
    assert len(answer["hits"]) == 4 and peak < 2 * MiB, peak

    rows, peak = peak_bytes(lambda: wire.memory_items_json(
        engine.memory.recent(EVERYTHING, ["fact"], 200), True))
    assert [i["body"] is None for i in rows["items"]] == [False, True, True, True]
    assert rows["truncated"] is True and peak < 27 * MiB, peak
    page, peak = peak_bytes(lambda: wire.page_json(
        engine.memory.enumerate(EVERYTHING, "fact", 0, 1000), True))
    assert [i["path"] for i in page["items"]] == ["huge0"] and page["nextOffset"] == 1
    assert page["items"][0]["body"] == texts["huge0"] and peak < 27 * MiB, peak
    page, peak = peak_bytes(lambda: wire.page_json(
        engine.memory.enumerate(EVERYTHING, "fact", 0, 1000), False))
    assert len(page["items"]) == 4 and peak < 2 * MiB, peak

    # Assemble reads texts while they stay within the bound; the knowledge
    # block only those that could fit its budget (none of these).
    candidates, peak = peak_bytes(lambda: candidates_from_hits(
        engine.recall("towering fact", ["fact"], 200, True, log=False).hits_by_kind))
    assert [c.path for c in candidates] == [answer["hits"][0]["path"]] and peak < 27 * MiB, peak
    engine.memory.remember(EVERYTHING, "small", "a small fact beside them")
    block, peak = peak_bytes(lambda: knowledge_block(engine.memory, engine.store, EVERYTHING,
                                                     now_ms(), engine.relative))
    assert block.facts == 1 and "a small fact beside them" in block.block
    assert peak < 2 * MiB, peak
    # get still reads a row whole.
    assert engine.get("huge3").text == texts["huge3"]


@pytest.mark.parametrize("name", ["%FF%FE.py", "%C0%AF%C0%AF.py", "%ED%A0%80%ED%A0%80.py",
                                  "a%2Fb.py", "a%2fb.py"])
def test_a_uri_whose_escapes_name_no_file_touches_no_other_file(tmp_path: Path, name: str):
    """pygls decodes percent-escapes that are not UTF-8 to U+FFFD and `%2F`
    to a separator: `%FF%FE.py` (and an overlong or surrogate encoding)
    named the file `\\ufffd\\ufffd.py`, `a%2Fb.py` the file `a/b.py`, so an
    editor's buffer under such a URI replaced that other file's text in the
    index and its outline was served. Such a URI names no file: null, and
    the files keep their text."""
    root = tmp_path / "root"
    write_tree(root, {"\ufffd\ufffd.py": "def replacement_named():\n    return 1\n",
                      "a/b.py": "def slash_named():\n    return 2\n"})
    daemon = StdioDaemon(root)
    try:
        daemon.wait_indexed()
        conn = daemon.conn
        uri = f"{root.resolve().as_uri()}/{name}"
        outline = conn.request("textDocument/documentSymbol", {"textDocument": {"uri": uri}}, "ds")
        assert outline["result"] is None, outline
        conn.send({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {
            "uri": uri, "languageId": "python", "version": 1,
            "text": "def smuggled_in():\n    pass\n"}}})
        impact = conn.request("ctxls/impact", {"textDocument": {"uri": uri},
                                               "position": {"line": 0, "character": 5}}, "impact")
        assert impact["result"] is None, impact
        hits = conn.request("ctxls/recall", {"query": "smuggled_in replacement_named slash_named",
                                             "kind": "code"}, "recall")["result"]["hits"]
        assert sorted(h["chunk"]["symbol"] for h in hits) == ["replacement_named", "slash_named"]
        assert daemon.alive()
    finally:
        daemon.close()


def test_a_file_uri_names_a_local_file_only_on_localhost(tmp_path: Path):
    """RFC 8089: `file://localhost/x` is `file:///x`, and a file of another
    host is none of this machine's. Both were read as the local path
    `//HOST/x` (that is `/HOST/x`): a workspace folder given as
    `file://localhost/…` was "not a folder" and never indexed, and
    `file://HOST/…` could name a local file it does not mean."""
    from ctxls.daemon.uris import local_path

    root = tmp_path / "root"
    write_tree(root, {"mod.py": "def on_localhost():\n    return 1\n"})
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    path = root.resolve()
    assert local_path(f"file://localhost{path}") == str(path)
    assert local_path(f"file://LocalHost{path}/mod.py") == str(path / "mod.py")
    assert local_path(f"file://fileserver{path}/mod.py") is None
    daemon = StdioDaemon(root, folder_uri=f"file://localhost{path}")
    try:
        assert daemon.wait_indexed()["files"] == 1
        found = daemon.conn.request("workspace/symbol", {"query": "on_localhost"}, "ws")["result"]
        assert [s["location"]["uri"] for s in found] == [(path / "mod.py").as_uri()]
        elsewhere = f"file://fileserver{path}/mod.py"  # another host's file of that path
        outline = daemon.conn.request("textDocument/documentSymbol",
                                      {"textDocument": {"uri": elsewhere}}, "ds")
        assert outline["result"] is None, outline
    finally:
        daemon.close()


STATUS = b'{"jsonrpc": "2.0", "id": "%s", "method": "ctxls/status", "params": {}}'


def status_frame(msg_id: str) -> bytes:
    return frame(STATUS % msg_id.encode())


def test_a_header_pygls_could_not_read_no_longer_swallows_the_next_request(repo: Path):
    """pygls matched only `Content-Length: N\\r\\n`: a header block without a
    usable one (missing, negative, 0, spaced, LF line ends), or a body longer
    than its Content-Length, was answered nothing, and pygls took the next
    message's header for its own, so that request went unanswered too. Now
    headers are read as the shared socket reads them, an unusable one is
    answered -32700, and what follows it is skipped up to the next
    Content-Length header: each next request is answered."""
    body = STATUS % b"lost"
    broken = {
        "no-length": b"Content-Type: application/vscode-jsonrpc\r\n\r\n" + body,
        "negative": b"Content-Length: -5\r\n\r\n" + body,
        "zero": b"Content-Length: 0\r\n\r\n",
        "not-a-number": b"Content-Length: 12abc\r\n\r\n" + body,
        "short": b"Content-Length: 10\r\n\r\n" + body,
        "pretty-body-without-length": b"X-Note: 1\r\n\r\n{\n  \"jsonrpc\": \"2.0\",\n  \"id\": 1\n}\n",
        "header-line-of-1-MB": b"X-Junk: " + b"j" * (1 << 20) + b"\r\n\r\n" + body,
    }
    lenient = {  # what the socket reads: now read on stdio too
        "spaced": b"Content-Length:   %d  \r\n\r\n",
        "lf-only": b"Content-Length: %d\n\n",
        "lower-case": b"content-length: %d\r\n\r\n",
    }
    daemon = StdioDaemon(repo)
    try:
        conn = daemon.conn
        for name, data in broken.items():
            conn._write(data + status_frame(f"after-{name}"))
            first = conn.reply(timeout=30)
            assert first["id"] is None and first["error"]["code"] == -32700, (name, first)
            after = conn.reply_to(f"after-{name}", timeout=30)
            assert "result" in after, (name, after)
        for name, header in lenient.items():
            request = STATUS % name.encode()
            conn._write(header % len(request) + request)
            assert "result" in conn.reply_to(name, timeout=30), name
        assert daemon.alive()
    finally:
        daemon.close()


def test_notifications_sent_as_requests_and_requests_before_initialize_are_answered(repo: Path):
    """A notification method with an id (`initialized`, `didOpen`, `exit`)
    was run and never answered: the client waited forever. Requests before
    `initialize` were served against no folder (a remember acknowledged into
    the session-only store, lost); LSP wants -32002. A second `initialize` is
    refused (-32600)."""
    process = subprocess.Popen([sys.executable, "-m", "ctxls.daemon.cli", "serve"],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL, cwd=repo)

    def write(data: bytes) -> None:
        process.stdin.write(data)
        process.stdin.flush()

    try:
        conn = RawConnection(process.stdout, write)
        for method, params in [("ctxls/remember", {"id": "early", "text": "before initialize"}),
                               ("ctxls/status", {}), ("shutdown", None)]:
            reply = conn.request(method, params, method)
            assert reply["error"]["code"] == -32002, reply
        assert process.poll() is None
    finally:
        process.kill()
        process.wait()

    daemon = StdioDaemon(repo)
    try:
        conn = daemon.conn
        uri = (repo / "pkg" / "retry.py").as_uri()
        for method, params in [("initialized", {}), ("exit", None),
                               ("textDocument/didOpen", {"textDocument": {
                                   "uri": uri, "languageId": "python", "version": 1,
                                   "text": "def opened_by_a_request():\n    pass\n"}})]:
            reply = conn.request(method, params, method)
            assert reply["error"]["code"] == -32600 and "notification" in reply["error"]["message"]
        assert daemon.alive()  # exit with an id was not run
        assert conn.request("ctxls/count", {}, "count")["result"] == {"count": 0}
        # A second initialize (LSP: sent once) replaced the folders and options.
        other = repo.parent / "other"
        write_tree(other, {"x.py": "def other_root():\n    pass\n"})
        again = conn.request("initialize", {"processId": None, "rootUri": other.as_uri(),
                                            "capabilities": {},
                                            "initializationOptions": {"owner": "mallory"}}, "again")
        assert again["error"]["code"] == -32600 and "already" in again["error"]["message"]
        status = daemon.wait_indexed()
        assert status["root"] == str(repo.resolve()) and status["files"] == len(SAMPLE_FILES)
    finally:
        daemon.close()


def test_notifications_before_initialize_are_dropped(repo: Path):
    """LSP: before `initialize` notifications are dropped, `exit` excepted.
    They were run: each failed for want of a workspace, and the editor got an
    error dialog "Error in server: RuntimeError: The workspace is not
    available" for each."""
    process = subprocess.Popen([sys.executable, "-m", "ctxls.daemon.cli", "serve"],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL, cwd=repo)

    def write(data: bytes) -> None:
        process.stdin.write(data)
        process.stdin.flush()

    try:
        conn = RawConnection(process.stdout, write)
        uri = (repo / "pkg" / "early.py").as_uri()
        for method, params in [
                ("textDocument/didOpen", {"textDocument": {
                    "uri": uri, "languageId": "python", "version": 1,
                    "text": "def opened_too_early():\n    pass\n"}}),
                ("initialized", {}),
                ("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2},
                                            "contentChanges": [{"text": "x"}]}),
                ("workspace/didChangeWorkspaceFolders", {"event": {"added": [], "removed": []}})]:
            conn.send({"jsonrpc": "2.0", "method": method, "params": params})
        answer = conn.request("initialize", {"processId": None, "rootUri": repo.as_uri(),
                                             "capabilities": {},
                                             "initializationOptions": {"embeddings": False}}, "init")
        assert "result" in answer, answer
        conn.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
        for attempt in range(300):
            status = conn.request("ctxls/status", {}, f"status-{attempt}")["result"]
            if status["complete"] and not status["indexing"]:
                break
            time.sleep(0.1)
        assert status["files"] == len(SAMPLE_FILES)
        # The early didOpen was not taken: no buffer holds its text.
        found = conn.request("workspace/symbol", {"query": "opened_too_early"}, "symbols")
        assert found["result"] == []
        errors = []
        while not conn.notifications.empty():
            message = conn.notifications.get()
            if message.get("method") == "window/showMessage":
                errors.append(message["params"]["message"])
        assert errors == []
    finally:
        process.kill()
        process.wait()
    # `exit` still ends a server never initialized (status 1: no shutdown).
    process = subprocess.Popen([sys.executable, "-m", "ctxls.daemon.cli", "serve"],
                               stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, cwd=repo)
    process.stdin.write(frame(json.dumps({"jsonrpc": "2.0", "method": "exit"}).encode()))
    process.stdin.flush()
    assert process.wait(timeout=30) == 1


def test_a_folder_swapped_for_a_link_out_after_the_check_is_not_followed(tmp_path: Path,
                                                                          monkeypatch):
    """read_file checked that a path is where its file really is, then
    opened `root/path` whole with O_NOFOLLOW, which guards the last step
    only: a folder swapped for a link out of the root between the check and
    the open (a race a process writing the repository can run in a loop) was
    followed, and the file outside was read. The race is won here on
    purpose, right after the check."""
    root, outside = tmp_path / "root", tmp_path / "outside"
    write_tree(root, {"pkg/mod.py": "def inside():\n    pass\n"})
    write_tree(outside, {"mod.py": "SECRET = 'outside the root'\n"})
    checked = discovery.relative_path

    def check_then_swap(where: Path, path: str):
        answer = checked(where, path)
        (root / "pkg").rename(tmp_path / "pkg-moved")
        (root / "pkg").symlink_to(outside, target_is_directory=True)
        return answer

    monkeypatch.setattr(discovery, "relative_path", check_then_swap)
    read = discovery.read_file(root, "pkg/mod.py", 1 << 20)
    assert isinstance(read, discovery.Skipped), read
    assert read.reason.startswith("unreadable")
    monkeypatch.undo()
    # Unswapped, a nested file is read as before.
    (root / "pkg").unlink()
    (tmp_path / "pkg-moved").rename(root / "pkg")
    data, _ = discovery.read_file(root, "pkg/mod.py", 1 << 20)
    assert data == b"def inside():\n    pass\n"


@pytest.mark.parametrize("params", [{"id": [1]}, {"id": {"a": 1}}, [1], "x"])
def test_a_cancel_of_any_shape_on_the_socket_keeps_the_connection_and_its_answers(repo: Path,
                                                                                   params):
    """On the shared socket a `$/cancelRequest` whose id is a list or an
    object, or whose params are not an object, raised in the connection's
    loop: the connection was dropped, and with it the answers of the
    requests in flight on it and of every request after it."""
    daemon = StdioDaemon(repo)
    try:
        daemon.wait_indexed()
        conn, sock = socket_connection(repo / ".ctxls" / "daemon.sock")
        try:
            conn.send({"jsonrpc": "2.0", "id": "pass", "method": "ctxls/index",
                       "params": {"force": True}})
            conn.send({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": params})
            conn.send({"jsonrpc": "2.0", "id": "after", "method": "ctxls/status", "params": {}})
            replies = [conn.reply(timeout=60) for _ in range(2)]
            assert sorted(r["id"] for r in replies) == ["after", "pass"]
            assert all("result" in r for r in replies), replies
        finally:
            sock.close()
    finally:
        daemon.close()


@pytest.mark.parametrize("git", [True, False])
def test_a_tree_a_thousand_folders_deep_is_indexed(tmp_path: Path, git: bool):
    """A folder 1,500 levels deep (3,000 characters of path, within
    PATH_MAX): resolving folders recursed once per level (and, outside git,
    so did Python 3.11's os.walk), so every indexing pass failed with a
    RecursionError and nothing at all was indexed."""
    root = tmp_path / "root"
    deep = "a/" * 1500 + "deep.py"
    write_tree(root, {"top.py": "def top_level():\n    pass\n"})
    folder = os.open(root, os.O_RDONLY)
    for _ in range(1500):  # made one level at a time: pathlib and os.makedirs recurse too
        os.mkdir("a", dir_fd=folder)
        inner = os.open("a", os.O_RDONLY, dir_fd=folder)
        os.close(folder)
        folder = inner
    fd = os.open("deep.py", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=folder)
    os.write(fd, b"def deepest_definition():\n    pass\n")
    os.close(fd)
    os.close(folder)
    if git:
        subprocess.run(["git", "init", "-q", str(root)], check=True)
    daemon = StdioDaemon(root)
    try:
        status = daemon.wait_indexed()
        assert status["files"] == 2 and "indexError" not in status, status
        conn = daemon.conn
        hits = conn.request("ctxls/recall", {"query": "deepest_definition", "kind": "code"},
                            "recall")["result"]["hits"]
        assert hits[0]["path"] == deep
        assert conn.request("ctxls/get", {"id": deep}, "get")["result"]["text"].startswith(
            "def deepest_definition")
    finally:
        daemon.close()
        # Removed bottom-up here: pytest's own clean-up of old temporary folders
        # (shutil.rmtree) recurses once per level and would fail on it later.
        path = str(root) + "/a" * 1500
        os.unlink(path + "/deep.py")
        for _ in range(1500):
            os.rmdir(path)
            path = os.path.dirname(path)


def test_the_mcp_knowledge_tool_does_not_say_no_fact_is_written_when_none_fits(repo: Path):
    """The knowledge block is null both when no fact is written and when
    none fits the budget; the MCP tool said "no facts written yet" for both,
    so an agent with a fact longer than its budget was told it had none."""
    process = subprocess.Popen([sys.executable, "-m", "ctxls.daemon.cli", "mcp", "--root",
                                str(repo), "--no-daemon"], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                               env={**os.environ, "CTXLS_LOG": "ERROR"})
    lines: queue.Queue[bytes] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in process.stdout],
                     daemon=True).start()

    def ask(message: dict) -> dict:
        process.stdin.write(json.dumps(message).encode() + b"\n")
        process.stdin.flush()
        return json.loads(lines.get(timeout=60))

    def tool(msg_id: int, name: str, arguments: dict) -> str:
        reply = ask({"jsonrpc": "2.0", "id": msg_id, "method": "tools/call",
                     "params": {"name": name, "arguments": arguments}})
        return reply["result"]["content"][0]["text"]

    try:
        assert "result" in ask({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "probe", "version": "1"}}})
        process.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        tool(1, "remember", {"id": "long", "text": "a fact of many words " * 20})
        text = tool(2, "knowledge", {"budget_chars": 60})
        assert "fits in 60 characters" in text and "written yet" not in text, text
        assert "a fact of many words" in tool(3, "knowledge", {"budget_chars": 2000})
    finally:
        process.kill()
        process.wait()
def test_the_mcp_bridge_answers_initialize_without_loading_an_sdk_or_the_engine(repo: Path):
    """`ctxls mcp` spent 5 s of an agent's start importing the MCP SDK and
    pydantic; it speaks the protocol itself, and loads the engine once the
    handshake is done (`notifications/initialized`), not before."""
    process = subprocess.Popen([sys.executable, "-X", "importtime", *CTXLS[1:], "mcp", "--root",
                                str(repo), "--no-daemon"], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        process.stdin.write(json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                                        "params": {"protocolVersion": "2025-06-18",
                                                   "capabilities": {},
                                                   "clientInfo": {"name": "p", "version": "1"}}})
                            .encode() + b"\n" + b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}\n')
        process.stdin.flush()
        assert json.loads(process.stdout.readline())["result"]["serverInfo"]["name"] == "ctxls"
        assert len(json.loads(process.stdout.readline())["result"]["tools"]) == 14
        process.stdin.close()
        imported = {line.rsplit("|", 1)[-1].strip()
                    for line in process.stderr.read().decode().splitlines() if "|" in line}
    finally:
        process.kill()
        process.wait()
    assert "json" in imported  # the import log was read
    loaded = sorted(m for m in imported if m.split(".")[0] in
                    ("mcp", "pydantic", "pydantic_core", "anyio", "numpy", "lsprotocol", "pygls")
                    or m == "ctxls.index.engine")
    assert loaded == []


def test_a_file_that_crashes_its_grammar_is_read_as_windows_and_the_daemon_lives(tmp_path: Path):
    """tree-sitter-kotlin hangs inside one parse step on a class name and
    many annotation lines and dies of SIGSEGV at 100,000 (300 KB, within the
    size bound): indexing it took the daemon down. Chunking now runs in a
    worker process with a deadline; a text it died or hung on is read as line
    windows and never parsed in the daemon (impact's sweep reads it too)."""
    hostile = "class A\n" + "@A\n" * 100_000 + "constructor(\n fun f( { top_level_helper()\n"
    write_tree(tmp_path, {"top.py": "def top_level_helper():\n    pass\n\n\ntop_level_helper()\n",
                          "Hostile.kt": hostile})
    daemon = StdioDaemon(tmp_path)
    try:
        status = daemon.wait_indexed(timeout=120)
        assert status["complete"] and status["files"] == 2 and "indexError" not in status, status
        # The parse hangs before it crashes: on a loaded machine the deadline
        # may end it first. Either way it is read as windows, never in the daemon.
        reason = status["unparsed"]["files"][0]["reason"] if status["unparsed"]["files"] else None
        assert reason in ("parser hung or crashed", "parse deadline"), status["unparsed"]
        assert status["unparsed"] == {"count": 1, "reasons": {reason: 1},
                                      "files": [{"path": "Hostile.kt", "reason": reason}]}
        conn = daemon.conn
        assert code_hits(conn, "top_level_helper")[0] == "top.py"
        lines = conn.request("ctxls/get", {"id": "Hostile.kt", "startLine": 100_000,
                                           "endLine": 100_003}, "get")["result"]["text"]
        assert "constructor(" in lines
        impact = conn.request("ctxls/impact", {"symbol": "top_level_helper"}, "impact")["result"]
        assert impact["mentionKinds"]["text"] == 1, impact["mentionKinds"]  # Hostile.kt's, unparsed
        assert daemon.process.poll() is None
    finally:
        daemon.close()


def test_an_mcp_call_the_agent_cancels_stops_or_never_runs():
    """`notifications/cancelled` only dropped the answer: the work ran on,
    holding one of the few call threads. Now a running call's token is
    cancelled and a call still waiting for a thread never runs."""
    import io

    from ctxls.daemon.mcp_stdio import CALL_THREADS, McpStdioServer

    release = threading.Event()
    started: list[str] = []
    seen_cancelled: dict[str, bool] = {}

    def call_tool(name, arguments, token):
        started.append(name)
        release.wait(10)
        seen_cancelled[name] = token.cancelled
        return {"content": [{"type": "text", "text": name}]}

    server = McpStdioServer("probe", "0", "", lambda: [], call_tool)
    server._out = io.BytesIO()
    for n in range(CALL_THREADS + 1):  # the last one waits for a thread
        server.handle({"jsonrpc": "2.0", "id": n, "method": "tools/call",
                       "params": {"name": f"call{n}", "arguments": {}}})
    deadline = time.monotonic() + 10
    while len(started) < CALL_THREADS and time.monotonic() < deadline:
        time.sleep(0.01)
    for n in (0, CALL_THREADS):
        server.handle({"jsonrpc": "2.0", "method": "notifications/cancelled",
                       "params": {"requestId": n}})
    release.set()
    server._calls.shutdown(wait=True)
    answered = sorted(json.loads(line)["id"] for line in server._out.getvalue().splitlines())
    assert answered == list(range(1, CALL_THREADS))
    assert f"call{CALL_THREADS}" not in started  # cancelled while queued: never ran
    assert seen_cancelled == {"call0": True} | {f"call{n}": False for n in range(1, CALL_THREADS)}


def test_mcp_tool_calls_share_a_few_threads(tmp_path: Path):
    """A thread per tool call opened a store connection per call (~20 ms, two
    file descriptors each until the store closed): calls run on a pool of
    CALL_THREADS threads, and every one is answered."""
    import io

    from ctxls.daemon.mcp_stdio import CALL_THREADS, McpStdioServer

    threads: list[int] = []
    server = McpStdioServer("probe", "0", "", lambda: [],
                            lambda name, arguments, token: threads.append(threading.get_ident()) or {
                                "content": [{"type": "text", "text": name}]})
    server._out = io.BytesIO()
    for msg_id in range(40):
        server.handle({"jsonrpc": "2.0", "id": msg_id, "method": "tools/call",
                       "params": {"name": "recall", "arguments": {}}})
    server._calls.shutdown(wait=True)
    answers = [json.loads(line) for line in server._out.getvalue().splitlines()]
    assert sorted(answer["id"] for answer in answers) == list(range(40))
    assert len(threads) == 40 and len(set(threads)) <= CALL_THREADS


def test_status_says_which_files_were_read_without_their_definitions():
    """`ctxls status` printed nothing of `unparsed`: files whose parser
    crashed or ran out of time lost their definitions without a word."""
    from ctxls.daemon.formatting import left_out_line
    status = {"skipped": {"count": 0, "files": []},
              "unparsed": {"count": 3, "files": [{"path": "a.py", "reason": "parser hung or crashed"},
                                                 {"path": "b.py", "reason": "parser hung or crashed"},
                                                 {"path": "c.d", "reason": "parse deadline"}]}}
    assert left_out_line(status) == "  unparsed 3: parser hung or crashed 2, parse deadline 1\n"


def test_a_manifest_nested_past_the_parsers_recursion_names_no_package(tmp_path: Path):
    """A package.json or Cargo.toml nested deeper than Python's recursion
    limit made every `locate` whose trace named a node_modules (or Cargo
    registry) copy fail with an internal error: json.loads and tomllib.loads
    raise RecursionError, not ValueError. Such a manifest names no package,
    like any other it cannot read; the trace is still located."""
    from ctxls.index.locate_signals import Signals

    root = tmp_path / "repo"
    write_tree(root, {
        "web/package.json": "[" * 100_000 + "]" * 100_000,
        "web/src/index.js": 'function handleUpload(req) {\n  throw new Error("upload failed");\n}\n'
                            "module.exports = { handleUpload };\n",
        "crate/Cargo.toml": "a = " + "[" * 100_000 + "]" * 100_000 + "\n",
        "crate/src/main.rs": 'fn parse_config() -> u32 {\n    panic!("bad config");\n}\n'
                             "fn main() { parse_config(); }\n",
    })
    signals = Signals(root=root)
    assert signals._package_name("web") is None and signals._crate_name("crate") is None
    engine = Engine(root, EngineOptions())
    try:
        engine.cold_index()
        node = engine.locate("Error: upload failed\n"
                             "    at handleUpload (/app/node_modules/mypkg/src/index.js:2:9)\n", 5)
        rust = engine.locate("thread 'main' panicked at 'bad config', /root/.cargo/registry/src/"
                             "index.crates.io-6f17d22bba15001f/mycrate-0.1.0/src/main.rs:2:5\n", 5)
    finally:
        engine.close()
    assert "web/src/index.js" in [found.path for found in node]
    assert isinstance(rust, list)


class _ChildReadingNothing(ChunkWorker):
    """A worker whose child takes the first request's length and then reads
    nothing more (what a child stuck for minutes on a hostile file does)."""

    @staticmethod
    def _child_command(boot: str) -> list[str]:
        return [sys.executable, "-c", "import sys, time; sys.stdin.buffer.read(4); time.sleep(3600)"]


def test_the_chunk_workers_deadline_holds_when_the_child_reads_no_more_of_its_pipe(tmp_path: Path):
    """The indexer wrote each file to the child under the worker's lock: a
    child stuck on a file (300,000 nested `[`: minutes in the imports query)
    left the next file (past the pipe's 64 KiB) unwritten, the caller
    blocked in the write, and the deadline, checked only while waiting for
    a reply, never fired: the pass ran for as long as the child did. Both
    files are given up at the deadline now and read as line windows."""
    worker = _ChildReadingNothing(deadline_s=1.0)
    stuck = "def stuck_on_this_one():\n    return 1\n"
    large = "def f_large_after_it():\n    return 1\n" * 5_000  # 185 KB: past the pipe's buffer
    results: list = []

    def chunk_both() -> None:
        tickets = [worker.submit("stuck.py", stuck), worker.submit("large.py", large)]
        results.extend(ticket.result() for ticket in tickets)

    chunking = threading.Thread(target=chunk_both, daemon=True)
    chunking.start()
    chunking.join(timeout=120)
    blocked = chunking.is_alive()
    try:
        while chunking.is_alive():  # blocked in the write: a killed child lets it go on
            process = worker._process
            if process is not None:
                process.kill()
            chunking.join(timeout=1)
    finally:
        worker.close()
    assert not blocked
    assert [parsed.unparsed for parsed in results] == [UNPARSED_HAZARD, UNPARSED_HAZARD]
    assert worker.restarts == 2


def test_a_chunk_worker_child_still_on_a_file_past_the_deadline_ends_itself(tmp_path: Path):
    """A daemon killed while its chunk worker read a hostile file (the
    imports query is quadratic in nesting: 500,000 `[` take minutes) left
    the child running for all that time with nobody to read its answer: it
    read its stdin's end only after the file. The child now ends itself a
    margin past the deadline, of its own CPU time, whoever waits."""
    paths = [entry for entry in sys.path if os.path.isabs(entry)]
    child = subprocess.Popen(
        [sys.executable, "-I", "-c", f"import sys; sys.path[:] = {paths!r}; "
         "from ctxls.index.chunk_worker import _serve; _serve(1 << 40, 1.0)"],
        stdin=subprocess.PIPE, stdout=subprocess.DEVNULL)
    try:
        request = pickle.dumps(("a.py", "x = " + "[" * 500_000 + "\n"))
        child.stdin.write(struct.pack("<I", len(request)) + request)
        child.stdin.flush()  # and left open, as a parent killed meanwhile leaves it
        code = child.wait(timeout=120)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert code == -signal.SIGPROF
