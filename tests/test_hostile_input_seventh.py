"""Hostile input, found by the seventh attacker sweep (issue 15; BENCHMARKS.md,
"Hardening, seventh session"): each test is one finding, through the real
`ctxls serve` process where that is how it shows, else through the engine."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import pytest

from ctxls.daemon import wire
from ctxls.index.assemble import candidates_from_hits
from ctxls.index.engine import Engine, EngineOptions
from ctxls.index.knowledge import knowledge_block
from ctxls.index.memory.model import MAX_WRITE_BYTES
from ctxls.index.scopes import EVERYTHING
from ctxls.index.store import now_ms

from conftest import SAMPLE_FILES, write_tree

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
                                                     now_ms()))
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
    from rawrpc import StdioDaemon

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


STATUS = b'{"jsonrpc": "2.0", "id": "%s", "method": "ctxls/status", "params": {}}'


def status_frame(msg_id: str) -> bytes:
    from rawrpc import frame

    return frame(STATUS % msg_id.encode())


def test_a_header_pygls_could_not_read_no_longer_swallows_the_next_request(repo: Path):
    """pygls matched only `Content-Length: N\\r\\n`: a header block without a
    usable one (missing, negative, 0, spaced, LF line ends), or a body longer
    than its Content-Length, was answered nothing, and pygls took the next
    message's header for its own, so that request went unanswered too. Now
    headers are read as the shared socket reads them, an unusable one is
    answered -32700, and what follows it is skipped up to the next
    Content-Length header: each next request is answered."""
    from rawrpc import StdioDaemon

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
    the session-only store, lost); LSP wants -32002."""
    import subprocess
    import sys

    from rawrpc import RawConnection, StdioDaemon

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
    finally:
        daemon.close()


def test_a_folder_swapped_for_a_link_out_after_the_check_is_not_followed(tmp_path: Path,
                                                                          monkeypatch):
    """read_file checked that a path is where its file really is, then
    opened `root/path` whole with O_NOFOLLOW, which guards the last step
    only: a folder swapped for a link out of the root between the check and
    the open (a race a process writing the repository can run in a loop) was
    followed, and the file outside was read. The race is won here on
    purpose, right after the check."""
    from ctxls.index import discovery

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
    from rawrpc import StdioDaemon, socket_connection

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
    import subprocess

    from rawrpc import StdioDaemon

    import os

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
    import json
    import os
    import queue
    import subprocess
    import sys
    import threading

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
