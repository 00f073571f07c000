"""One daemon, many clients: the shared socket, the CLI through it, and the
MCP bridge driven by the official SDK's stdio client."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from mcp import StdioServerParameters
from mcp.client.session import ClientSession
from mcp.client.stdio import stdio_client

from ctxls.daemon.client import DaemonClient, RemoteError
from ctxls.daemon.framing import frame
from ctxls.daemon.mcp_bridge import Bridge
from ctxls.index.cancel import CancelToken

from conftest import serve

CTXLS = [sys.executable, "-m", "ctxls.daemon.cli"]


def cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([*CTXLS, *args], capture_output=True, text=True, timeout=120, cwd=cwd)


async def test_cli_through_the_socket_sees_the_editors_unsaved_buffer(repo: Path):
    async with serve(repo) as s:
        await s.wait_indexed()
        sock = repo / ".ctxls" / "daemon.sock"
        assert sock.exists()
        text = (repo / "pkg/retry.py").read_text()
        s.open("pkg/retry.py", text)
        s.replace("pkg/retry.py", text.replace("retry_upload", "only_in_the_buffer"), version=2)

        async def visible():
            out = await asyncio.to_thread(cli, "recall", "only_in_the_buffer", "--root", str(repo),
                                          "--kind", "code", "--json")
            hits = json.loads(out.stdout)["hits"]
            return hits and hits[0]["chunk"]["symbol"] == "only_in_the_buffer"

        assert await s.wait_for(visible, timeout=20, interval=0.2)
        status = json.loads((await asyncio.to_thread(cli, "status", str(repo), "--json")).stdout)
        assert status["buffers"] == 1  # answered by the daemon, which holds the buffer
        index = json.loads((await asyncio.to_thread(cli, "index", str(repo), "--json")).stdout)
        assert index["via"] == "daemon"
        # From a subfolder, without --root: the repository's daemon answers.
        nested = await asyncio.to_thread(cli, "status", "--json", cwd=repo / "pkg")
        assert json.loads(nested.stdout)["via"] == "daemon"
        assert "daemon   running" in (await asyncio.to_thread(cli, "status", cwd=repo / "pkg")).stdout


async def test_status_is_ready_only_once_every_chunk_has_a_vector(repo: Path):
    async with serve(repo, {"embeddings": True}) as s:
        seen: list[dict] = []

        async def ready():
            seen.append(await s.request("ctxls/status"))
            return seen[-1]["ready"]

        assert await s.wait_for(ready, timeout=180, interval=0.05)
        for status in seen:
            assert status["ready"] == (status["state"] == "ready")
            # Never "nothing pending" while work remains.
            assert status["ready"] or status["pending"] > 0 or status["state"] == "indexing"
        assert seen[-1]["pending"] == 0 and seen[-1]["vectors"] > 0
        recall = await s.request("ctxls/recall", {"query": "send prepared", "kind": "code"})
        assert (recall["partial"], recall["mode"]) == (False, "hybrid")
        assert "partialReason" not in recall
        # With vectors, assemble abstains on a question about another domain.
        off = await s.request("ctxls/assemble", {"query": "protein folding molecular dynamics "
                                                 "simulation", "budgetTokens": 500})
        assert off["abstained"] and off["stats"]["note"].startswith("off-topic:")
        on = await s.request("ctxls/assemble", {"query": "send a prepared request over the wire",
                                                "budgetTokens": 500})
        assert not on["abstained"] and on["citations"][0]["path"] == "pkg/session.py"


async def test_two_socket_clients_at_once_get_consistent_answers(repo: Path):
    async with serve(repo) as s:
        await s.wait_indexed()
        sock = repo / ".ctxls" / "daemon.sock"

        def ask(query: str) -> list:
            client = DaemonClient.connect(sock)
            assert client is not None
            try:
                return [client.request("ctxls/recall", {"query": query, "kind": "code"})["hits"]
                        for _ in range(20)]
            finally:
                client.close()

        first, second = await asyncio.gather(asyncio.to_thread(ask, "send prepared request"),
                                             asyncio.to_thread(ask, "send prepared request"))
        answers = first + second
        assert all(a == answers[0] for a in answers)
        assert answers[0][0]["chunk"]["symbol"] == "send_prepared"

        client = DaemonClient.connect(sock)
        try:
            try:
                client.request("ctxls/recall", {"query": 3})
                raise AssertionError("bad params were accepted")
            except RemoteError as exc:
                assert (exc.code, exc.data) == (-32602, {"param": "query"})
            # The connection and the daemon survive the error.
            assert client.request("ctxls/status", {})["files"] == 5
        finally:
            client.close()


def test_a_killed_daemons_socket_is_replaced_by_the_next_start(repo: Path):
    def start():
        proc = subprocess.Popen([*CTXLS, "serve", "--root", str(repo), "--socket"],
                                stderr=subprocess.PIPE, text=True)
        line = ""
        while "until interrupted" not in line:
            line = proc.stderr.readline()
            assert line, "daemon exited early"
        return proc

    first = start()
    sock = repo / ".ctxls" / "daemon.sock"
    first.send_signal(signal.SIGKILL)
    first.wait(timeout=10)
    assert sock.exists()  # a dead daemon's leftover
    assert DaemonClient.connect(sock) is None  # detected as stale: nobody answers
    # Without a daemon the CLI opens the store itself.
    assert json.loads(cli("status", str(repo), "--json").stdout)["files"] == 5

    second = start()
    try:
        client = DaemonClient.connect(sock)
        assert client is not None
        assert client.request("ctxls/status", {})["files"] == 5
        client.close()
    finally:
        second.terminate()
        second.wait(timeout=10)
    assert not sock.exists()  # a clean stop removes it


def test_a_daemon_that_binds_while_another_looks_keeps_its_socket(tmp_path: Path):
    """Two daemons starting together: the second looked (nothing there), the
    first bound, then the second bound with asyncio's start_unix_server,
    which removes a socket file first: the first ran on, unreachable,
    writing the store. Looking and binding now hold a lock, and the bind
    never replaces a file: the later one sees the live socket and steps back."""
    from ctxls.daemon.socket_server import SocketServer, bind_lock

    path = tmp_path / ".ctxls" / "daemon.sock"
    path.parent.mkdir(mode=0o700)

    async def race() -> bool:
        first = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        lock = bind_lock(path)  # the first daemon between its look and its bind
        second = SocketServer(None, path)
        starting = asyncio.create_task(second.start())
        await asyncio.sleep(0.2)  # the second daemon starts meanwhile
        first.bind(str(path))
        first.listen()
        os.close(lock)
        try:
            took_over = await starting
            second.close()
            client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            client.connect(str(path))  # still the first daemon's
            first.settimeout(5)
            first.accept()[0].close()
            client.close()
            return took_over
        finally:
            first.close()

    assert asyncio.run(race()) is False
    assert path.exists()  # the second one's close() removed nothing it did not bind


# A file whose indexing takes long enough (hundreds of ms) that a request
# sent without waiting for it is answered before it lands.
BIG_FILE = "".join(f"def func_{i}(a, b):\n    x = a + b * {i}\n    return x - {i}\n\n\n"
                   for i in range(6000))
# Longer than the editors' debounce (20 ms) and than a didChange's trip through a proxy.
DEBOUNCE_OVER_S = 0.15


def socket_recall_top(sock: Path, name: str) -> str | None:
    """The top code hit's symbol for ``name``, asked as the CLI asks (the shared socket)."""
    client = DaemonClient.connect(sock)
    assert client is not None
    try:
        hits = client.request("ctxls/recall", {"query": name, "kind": "code", "n": 1})["hits"]
    finally:
        client.close()
    return hits[0]["chunk"]["symbol"] if hits else None


async def lsp_recall_top(editor, name: str) -> str | None:
    hits = (await editor.request("ctxls/recall", {"query": name, "kind": "code", "n": 1}))["hits"]
    return hits[0]["chunk"]["symbol"] if hits else None


async def test_a_socket_request_answers_with_the_edit_whose_debounce_is_over(repo: Path):
    """`ctxls recall` (the shared socket) 100 ms after an editor's edit
    (debounce 20 ms) answered from the text before it: only the LSP path
    waited for the buffers whose debounce is over."""
    (repo / "pkg/big.py").write_text(BIG_FILE)
    async with serve(repo, {"debounceMs": 20}) as editor:
        await editor.wait_indexed()
        sock = repo / ".ctxls" / "daemon.sock"
        editor.open("pkg/big.py", BIG_FILE)
        await lsp_recall_top(editor, "func_1500")  # the open's indexing is done
        for version, name in enumerate(["typed_name_0", "typed_name_1"], start=2):
            editor.replace("pkg/big.py", BIG_FILE.replace("def func_1500(", f"def {name}("),
                           version=version)
            await asyncio.sleep(DEBOUNCE_OVER_S)
            assert await asyncio.to_thread(socket_recall_top, sock, name) == name


async def test_a_request_answers_with_another_editors_edit_whose_debounce_is_over(repo: Path):
    """A request waited only for its own server's buffers: an edit typed in
    a second editor (a proxied session of the daemon) was missed by the
    CLI's recall and by the first editor's, after its debounce was over."""
    (repo / "pkg/big.py").write_text(BIG_FILE)
    async with serve(repo, {"debounceMs": 20}) as owner:
        await owner.wait_indexed()
        sock = repo / ".ctxls" / "daemon.sock"
        async with serve(repo, {"debounceMs": 20}) as second:  # finds it live: a proxy
            await second.wait_indexed()
            second.open("pkg/big.py", BIG_FILE)
            await lsp_recall_top(second, "func_1500")  # the open's indexing is done
            second.replace("pkg/big.py", BIG_FILE.replace("def func_1500(", "def typed_name_0("),
                           version=2)
            await asyncio.sleep(DEBOUNCE_OVER_S)
            assert await asyncio.to_thread(socket_recall_top, sock, "typed_name_0") == "typed_name_0"
            second.replace("pkg/big.py", BIG_FILE.replace("def func_1500(", "def typed_name_1("),
                           version=3)
            await asyncio.sleep(DEBOUNCE_OVER_S)
            assert await lsp_recall_top(owner, "typed_name_1") == "typed_name_1"


class SlowDaemon:
    """A stand-in for the daemon's socket that answers each connection's
    requests in turn, as a connection is answered: `slow` when released (or
    cancelled: -32800), anything else at once (with its method)."""

    def __init__(self, path: Path):
        self.release = threading.Event()
        self.cancelled: list[int] = []
        self.connections = 0
        path.parent.mkdir(parents=True, exist_ok=True)
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._listener.bind(str(path))
        self._listener.listen()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        reader = conn.makefile("rb")
        while True:
            length = None
            while (line := reader.readline().strip()):
                name, _, value = line.decode().partition(":")
                length = int(value) if name.lower() == "content-length" else length
            if length is None:
                return
            message = json.loads(reader.read(length))
            if message["method"] == "$/cancelRequest":
                self.cancelled.append(message["params"]["id"])
                self.release.set()
            elif message["method"] == "slow":  # answered from a thread: this one reads on
                threading.Thread(target=self._slow, args=(conn, message["id"]), daemon=True).start()
            elif "id" in message:
                conn.sendall(frame({"jsonrpc": "2.0", "id": message["id"],
                                    "result": {"method": message["method"]}}))

    def _slow(self, conn: socket.socket, msg_id: int) -> None:
        self.release.wait(30)
        conn.sendall(frame({"jsonrpc": "2.0", "id": msg_id, "error": {
            "code": -32800, "message": "request cancelled"}} if msg_id in self.cancelled
            else {"jsonrpc": "2.0", "id": msg_id, "result": {"method": "slow"}}))

    def close(self) -> None:
        self.release.set()
        self._listener.close()


def test_an_agents_quick_call_does_not_wait_behind_its_slow_one(tmp_path: Path):
    """MCP tool calls run on a pool of threads, but the bridge sent them all
    on one daemon connection under one lock: a recall waited for an impact
    on a hot name to end. Each thread now has its own connection; and a
    request may run as long as the daemon works (the client's 30 s socket
    timeout took a long one for a lost daemon and sent it again)."""
    root = tmp_path / "repo"
    daemon = SlowDaemon(root / ".ctxls" / "daemon.sock")
    bridge = Bridge(root, use_daemon=True)
    try:
        slow = ThreadPoolExecutor(1).submit(bridge.call, "slow", {})
        time.sleep(0.2)  # the slow call is on its way
        quick = ThreadPoolExecutor(1).submit(bridge.call, "ctxls/status", {})
        assert quick.result(timeout=10) == {"method": "ctxls/status"}
        assert not slow.done()
        daemon.release.set()
        assert slow.result(timeout=10) == {"method": "slow"}
        assert daemon.connections == 2
        assert all(c._sock.gettimeout() is None for c in bridge._opened()._connections)
    finally:
        bridge.close()
        daemon.close()


def test_an_agents_cancelled_call_is_cancelled_in_the_daemon(tmp_path: Path):
    """The call's token cancelled sends `$/cancelRequest` for it on its
    connection: the daemon stops the work, and the call ends at once."""
    root = tmp_path / "repo"
    daemon = SlowDaemon(root / ".ctxls" / "daemon.sock")
    bridge = Bridge(root, use_daemon=True)
    token = CancelToken()
    try:
        def slow_call():
            with bridge.serving(token):
                return bridge.call("slow", {})

        slow = ThreadPoolExecutor(1).submit(slow_call)
        time.sleep(0.2)
        token.cancel()
        with pytest.raises(RemoteError) as raised:
            slow.result(timeout=10)
        assert raised.value.code == -32800 and daemon.cancelled == [1]
    finally:
        bridge.close()
        daemon.close()


async def test_mcp_stdio_client_lists_tools_and_calls_recall_impact_remember(repo: Path):
    params = StdioServerParameters(command=sys.executable,
                                   args=["-m", "ctxls.daemon.cli", "mcp", "--root", str(repo)],
                                   env={**os.environ, "CTXLS_LOG": "ERROR"})
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            tools = {t.name: t for t in (await session.list_tools()).tools}
            assert set(tools) == {"recall", "locate", "get", "impact", "remember", "forget",
                                  "recent_activity", "recent_memory", "assemble", "knowledge",
                                  "status", "find_symbol", "outline", "related"}
            undescribed = [f"{name}.{param}" for name, tool in tools.items()
                           for param, schema in tool.input_schema["properties"].items()
                           if not schema.get("description")]
            assert undescribed == []
            assert "StalePointer" in tools["get"].description
            assert tools["forget"].annotations.destructive_hint is True
            assert tools["recall"].annotations.read_only_hint is True
            assert tools["remember"].annotations.read_only_hint is False
            assert all(t.output_schema and t.output_schema["type"] == "object"
                       and "text" in t.output_schema["properties"] for t in tools.values())
            assert "hits" in tools["recall"].output_schema["properties"]

            # No daemon runs: this process hosts the engine, indexing and embedding.
            async def state() -> dict:
                return (await session.call_tool("status", {"format": "json"})).structured_content

            deadline = asyncio.get_running_loop().time() + 180
            while not (await state())["ready"]:
                assert asyncio.get_running_loop().time() < deadline, await state()
                await asyncio.sleep(0.2)
            text = (await session.call_tool("status", {})).content[0].text
            assert "state    ready" in text and "hosts the engine" in text

            recall = await session.call_tool("recall", {"query": "send prepared", "kind": "code"})
            # The SDK client checks each answer against the tool's outputSchema: text format
            # carries its text there too, json format the protocol's JSON.
            assert not recall.is_error
            assert recall.structured_content == {"text": recall.content[0].text}
            lines = recall.content[0].text.splitlines()
            assert "pkg/session.py:16-18  send_prepared" in lines[1]  # 1-based, one line a hit
            assert "partial" not in recall.content[0].text
            full = await session.call_tool("recall", {"query": "send prepared", "kind": "code",
                                                      "format": "json"})
            hit = full.structured_content["hits"][0]
            assert hit["chunk"] == {"symbol": "send_prepared", "startLine": 15, "endLine": 17}
            assert "body" not in hit and full.structured_content["partial"] is False

            got = await session.call_tool("get", {"id": "pkg/session.py", "start_line": 16,
                                                  "end_line": 16})
            assert got.content[0].text.endswith("\ndef send_prepared(method, url, timeout):")
            missing = await session.call_tool("get", {"id": "pkg/nosuch.py"})
            assert missing.content[0].text.startswith("not found: pkg/nosuch.py")

            impact = await session.call_tool("impact", {"symbol": "Session.request"})
            assert not impact.is_error
            assert "1 confirmed caller," in impact.content[0].text
            assert "caller  pkg/retry.py:6" in impact.content[0].text
            structured = await session.call_tool("impact", {"symbol": "Session.request",
                                                            "format": "json"})
            callers = structured.structured_content["callers"]
            assert [c["path"] for c in callers if c["confirmed"]] == ["pkg/retry.py"]
            unknown = await session.call_tool("impact", {"symbol": "no_such_function"})
            assert unknown.content[0].text.startswith("not found: no_such_function")

            wrote = await session.call_tool("remember", {"id": "deploy-note",
                                                         "text": "the deploy needs FOO_URL set"})
            assert wrote.content[0].text == "remembered fact deploy-note: the deploy needs FOO_URL set"
            wrote = await session.call_tool("remember", {"id": "deploy-note", "format": "json",
                                                         "text": "the deploy needs FOO_URL set"})
            assert wrote.structured_content["text"] == "the deploy needs FOO_URL set"
            assert wrote.structured_content["provenance"] == "agent"
            found = await session.call_tool("recall", {"query": "deploy FOO_URL", "kind": "fact"})
            assert "deploy-note  the deploy needs FOO_URL set" in found.content[0].text

            for bad, param in (({"query": "x", "n": 0}, "n"), ({"query": "  "}, "query"),
                               ({"query": "x", "n": "many"}, "n")):
                error = await session.call_tool("recall", bad)
                text = error.content[0].text
                assert error.is_error and text.startswith(f"ctxls error -32602: invalid param '{param}'")
                assert "pydantic" not in text and "http" not in text


# What a CLI verb answered by the daemon must not load: importing them costs
# about a second of CPU, paid on every call of an agent driving the CLI.
HEAVY_MODULES = ("lsprotocol.types", "pygls", "numpy", "onnxruntime", "tree_sitter", "ctxls.index.engine",
                 # and nothing that costs a thin client tens of milliseconds
                 "asyncio", "logging", "pathspec", "dataclasses", "ctxls.index.discovery")
LOADED_AFTER = (
    "import atexit, sys\n"
    f"atexit.register(lambda: print('LOADED', [m for m in {HEAVY_MODULES!r} if m in sys.modules], "
    "file=sys.stderr))\n"
    "from ctxls.daemon.cli import main\n"
    "sys.exit(main(sys.argv[1:]))\n")


async def test_a_verb_the_daemon_answers_loads_neither_the_engine_nor_the_lsp_types(repo: Path):
    async with serve(repo) as s:
        await s.wait_indexed()
        for verb in (["recall", "retry_upload"], ["status"], ["impact", "retry_upload"],
                     ["locate", "retry_upload fails"], ["get", "pkg/retry.py"]):
            done = await asyncio.to_thread(
                subprocess.run, [sys.executable, "-c", LOADED_AFTER, *verb, "--root", str(repo), "--json"],
                capture_output=True, text=True, timeout=120)
            assert done.returncode == 0, done.stderr
            assert json.loads(done.stdout)["via"] == "daemon" if verb == ["status"] else done.stdout
            assert "LOADED []" in done.stderr, (verb, done.stderr)


async def test_a_verb_answers_the_same_through_the_daemon_as_in_process(repo: Path):
    """The thin path (the daemon's answer, formatted here) prints byte for byte
    what the full path (the engine opened in this process) prints."""
    async with serve(repo) as s:
        await s.wait_indexed()
        for verb in (["recall", "send prepared", "--mode", "lexical"],
                     ["recall", "send prepared", "--mode", "lexical", "--vimgrep"],
                     ["recall", "retry", "--mode", "lexical", "--body", "--kind", "code"],
                     ["impact", "Session.request"], ["get", "pkg/retry.py", "--start-line", "2"],
                     ["locate", "retry_upload raises TimeoutError"]):
            thin, full = [await asyncio.to_thread(cli, *verb, "--root", str(repo), *extra)
                          for extra in ([], ["--no-daemon"])]
            assert thin.returncode == full.returncode == 0, (verb, thin.stderr, full.stderr)
            assert thin.stdout == full.stdout and thin.stdout.strip(), verb


def test_a_hosted_mcp_server_indexes_before_the_first_tool_call(repo: Path):
    """Without a daemon, `ctxls mcp` opened (and started indexing) the
    repository at the agent's first tool call, which then waited for the
    first pass or answered "index not ready"; the agent's edits before it
    were taken into that first pass, not the edit log. It opens once the
    handshake is done (`notifications/initialized`)."""
    import sqlite3
    import subprocess

    process = subprocess.Popen([sys.executable, "-m", "ctxls.daemon.cli", "mcp", "--root", str(repo)],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                               env={**os.environ, "CTXLS_LOG": "ERROR"})
    try:
        process.stdin.write(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"}}}).encode() + b"\n")
        process.stdin.flush()
        assert json.loads(process.stdout.readline())["id"] == 1
        process.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        process.stdin.flush()
        db = repo / ".ctxls" / "index.db"

        def files_indexed() -> int:
            try:
                with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
                    return conn.execute("SELECT count(*) FROM files").fetchone()[0]
            except sqlite3.Error:
                return 0

        deadline = time.monotonic() + 60  # no tool call yet: only the server's own start
        while files_indexed() < 5 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert files_indexed() == 5
    finally:
        process.stdin.close()
        process.wait(timeout=30)


async def test_mcp_tools_declare_their_bounds_name_their_own_params_and_take_their_own_uris(
        repo: Path):
    """What an agent's client reads in a schema is what the tool enforces; an
    error names a parameter the tool has; a NUL is a tool error; the `uri` an
    answer gives is taken back where a path goes; a location id with lines of
    its own, or a path the index does not hold, says so."""
    params = StdioServerParameters(command=sys.executable,
                                   args=["-m", "ctxls.daemon.cli", "mcp", "--root", str(repo),
                                         "--no-daemon"],
                                   env={**os.environ, "CTXLS_LOG": "ERROR"})
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            tools = {t.name: t for t in (await session.list_tools()).tools}

            async def text(name: str, arguments: dict) -> tuple[bool, str]:
                result = await session.call_tool(name, arguments)
                return bool(result.is_error), result.content[0].text

            recall_n = tools["recall"].input_schema["properties"]["n"]
            assert (recall_n["minimum"], recall_n["maximum"]) == (1, 200)
            assert tools["recall"].input_schema["properties"]["query"]["maxLength"] == 10_000
            assert tools["recent_activity"].input_schema["properties"]["days"]["exclusiveMinimum"] == 0
            assert (await text("recall", {"query": "send", "n": 200}))[0] is False
            assert (await text("recall", {"query": "send", "n": 201}))[0] is True

            failed, said = await text("find_symbol", {"name": "send", "n": 5000})
            assert failed and "invalid param 'n'" in said and "limit" not in said
            failed, said = await text("find_symbol", {"name": ""})
            assert failed and "invalid param 'name'" in said and "query" not in said
            failed, said = await text("forget", {"kind": "episode"})
            assert failed and "'by'" in said and "by" in tools["forget"].input_schema["properties"]
            assert await text("forget", {"kind": "episode", "by": "agent"}) == (False, "removed 0")

            failed, said = await text("recall", {"query": "send\u0000prepared"})
            assert failed and said.startswith("ctxls error -32602") and "NUL" in said

            hit = (await session.call_tool("recall", {"query": "send_prepared", "kind": "code",
                                                      "format": "json"})).structured_content["hits"][0]
            failed, said = await text("outline", {"path": hit["uri"]})
            assert not failed and "send_prepared" in said
            failed, said = await text("get", {"id": hit["uri"], "start_line": 16, "end_line": 16})
            assert not failed and "def send_prepared" in said
            assert await text("outline", {"path": "pkg/no_such_file.py"}) == (
                False, "not indexed: pkg/no_such_file.py (no such file, or one ctxls does not "
                       "index: a folder, binary, ignored or too large; `status` lists what was skipped)")
            failed, said = await text("get", {"id": "pkg/session.py:16-18", "start_line": 1})
            assert failed and "names its lines already" in said and "start_line" in said


# -- one daemon, one set of index options -------------------------------------------

VENDORED = "def vendoredthing():\n    return 1\n"


def with_vendored_file(repo: Path) -> Path:
    (repo / "vendor").mkdir()
    (repo / "vendor" / "lib.py").write_text(VENDORED)
    return repo


async def vendored_hits(editor) -> list[str]:
    hits = (await editor.request("ctxls/recall", {"query": "vendoredthing", "kind": "code"}))["hits"]
    return [hit["path"] for hit in hits if hit["path"].startswith("vendor/")]


def options_warnings(editor) -> list[str]:
    return [m.message for m in editor.client.messages if "not applied" in m.message]


async def test_a_takeover_daemon_indexes_with_the_options_of_the_editor_that_started_it(repo: Path):
    """The daemon a proxy starts when the owner exits ran `serve --root
    --socket` with the defaults: the editor's exclude and embeddings false
    stopped applying (vendor/ indexed and recalled, embeddings on) and
    nobody was told. It now gets the editor's initializationOptions."""
    from contextlib import AsyncExitStack

    from ctxls.daemon.socket_server import socket_owner_pid

    with_vendored_file(repo)
    options = {"exclude": ["vendor/**"], "embeddings": False}
    sock = repo / ".ctxls" / "daemon.sock"
    async with AsyncExitStack() as owner_editor:
        owner = await owner_editor.enter_async_context(serve(repo, options))
        await owner.wait_indexed()
        first_daemon = socket_owner_pid(sock)
        async with serve(repo, options) as editor:  # a proxy to the owner
            await editor.wait_indexed()
            before = await editor.request("ctxls/status")
            assert await vendored_hits(editor) == []
            await owner_editor.aclose()  # the owner's editor quits: the proxy takes over

            async def taken_over():
                if socket_owner_pid(sock) in (None, first_daemon):
                    return False
                try:
                    return (await editor.request("ctxls/status"))["complete"]
                except Exception:  # lost with the old owner, or the new one still starting
                    return False

            assert await editor.wait_for(taken_over, timeout=120, interval=0.5)
            after = await editor.request("ctxls/status")
            assert after["files"] == before["files"]
            assert after["embeddings"]["enabled"] is False
            assert await vendored_hits(editor) == []
            assert options_warnings(editor) == []  # its own options: nothing to tell


async def test_an_editor_whose_index_options_the_shared_daemon_does_not_apply_is_told(repo: Path):
    """A second editor's exclude (any index option) was silently ignored by
    the daemon it was proxied to, and its initialize set the shared folders'
    options: a third editor was then checked against the second's. Each
    editor is told which of its index options are not applied (the
    daemon's stay); per-session options (debounceMs) are its own."""
    with_vendored_file(repo)
    async with serve(repo, {"exclude": ["vendor/**"]}) as owner:
        await owner.wait_indexed()
        async with serve(repo, {"debounceMs": 20}) as second:
            await second.wait_indexed()
            [warning] = options_warnings(second)
            assert warning.startswith("ctxls: the ctxls daemon already serving this repository (PID ")
            assert 'exclude [] (it uses ["vendor/**"])' in warning
            assert "debounceMs" not in warning and "close the other editors" in warning
            assert await vendored_hits(second) == []  # the daemon's exclude serves it
            async with serve(repo, {"exclude": ["vendor/**"]}) as third:
                await third.wait_indexed()
                assert options_warnings(third) == []  # checked against the daemon's, not the second's
        assert options_warnings(owner) == []


def test_a_takeover_daemon_takes_only_its_editors_index_options(monkeypatch: pytest.MonkeyPatch):
    """The editor's initializationOptions reach the daemon its proxy starts
    in the environment; only the index options become the daemon's (owner
    stays per session), a memoryUrl is never shown in a warning (it may hold
    a password), and unreadable JSON leaves the defaults."""
    from ctxls.daemon.options import (TAKEOVER_OPTIONS_ENV, InitOptions, unapplied_index_options,
                                      with_takeover_options)

    secret_url = "postgresql://me:s3cret@db/team"
    monkeypatch.setenv(TAKEOVER_OPTIONS_ENV, json.dumps({
        "exclude": ["vendor/**"], "embeddings": False, "owner": "alice", "memoryUrl": secret_url}))
    daemons = with_takeover_options(InitOptions())
    assert (daemons.exclude, daemons.embeddings, daemons.memoryUrl) == (("vendor/**",), False, secret_url)
    assert daemons.owner is None
    unapplied = unapplied_index_options(InitOptions(memoryUrl=None), daemons)
    assert unapplied == ['exclude [] (it uses ["vendor/**"])', "embeddings true (it uses false)",
                         "memoryUrl none (it uses another database)"]
    monkeypatch.setenv(TAKEOVER_OPTIONS_ENV, "{not json")
    assert with_takeover_options(InitOptions(memoryUrl=None)) == InitOptions(memoryUrl=None)
