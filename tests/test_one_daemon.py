"""One daemon per repository, with real processes: an editor's `ctxls serve`
that finds a live daemon proxies its LSP stream to it, every client sees every
unsaved buffer, a buffer closed unsaved (or a vanished editor) falls back to
disk, and a proxy survives its owner's exit without losing its buffers. An
agent's `ctxls mcp` that hosts the engine is that daemon; one attached to a
daemon that exits joins the next."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
import time
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import AsyncIterator, Iterator

import pytest
from lsprotocol import types
from mcp import StdioServerParameters
from mcp.client.session import ClientSession
from mcp.client.stdio import stdio_client

from ctxls.daemon.client import DaemonClient
from ctxls.daemon.socket_server import socket_is_live, socket_owner_pid

from conftest import serve
from rawrpc import StdioDaemon

CTXLS = [sys.executable, "-m", "ctxls.daemon.cli"]
MARKER = "only_in_the_buffer"


@contextmanager
def headless_owner(repo: Path) -> Iterator[subprocess.Popen]:
    """`make run`'s daemon: `ctxls serve --root REPO --socket`."""
    proc = subprocess.Popen([*CTXLS, "serve", "--root", str(repo), "--socket"],
                            stderr=subprocess.PIPE, text=True)
    killer = threading.Timer(120, proc.kill)  # never hang CI
    killer.start()
    try:
        said_until_serving(proc)
        yield proc
    finally:
        killer.cancel()
        if proc.poll() is None:
            proc.terminate()
        proc.wait(timeout=30)


def said_until_serving(proc: subprocess.Popen) -> str:
    """A headless daemon's stderr up to its "serving … until interrupted" line."""
    lines = []
    while "until interrupted" not in "".join(lines):
        line = proc.stderr.readline()
        assert line, "daemon exited: " + "".join(lines)
        lines.append(line)
    return "".join(lines)


def socket_of(repo: Path) -> Path:
    return repo / ".ctxls" / "daemon.sock"


def owner_recall(repo: Path, query: str) -> list[str]:
    """Code symbols for `query`, answered by whichever daemon owns the socket
    (what the CLI and the MCP bridge see)."""
    client = DaemonClient.connect(socket_of(repo))
    if client is None:
        return []
    try:
        hits = client.request("ctxls/recall", {"query": query, "kind": "code", "mode": "lexical"})
    except (ConnectionError, OSError):
        return []
    finally:
        client.close()
    return [(h.get("chunk") or {}).get("symbol") for h in hits["hits"]]


async def sees(repo: Path, symbol: str, query: str = MARKER) -> bool:
    return symbol in await asyncio.to_thread(owner_recall, repo, query)


async def gone(repo: Path, symbol: str, query: str = MARKER) -> bool:
    return not await sees(repo, symbol, query)


def edited_retry(repo: Path) -> str:
    return (repo / "pkg/retry.py").read_text().replace("retry_upload", MARKER)


async def test_editor_proxies_to_the_running_daemon_and_shares_its_unsaved_buffer(repo: Path):
    with headless_owner(repo) as owner:
        async with serve(repo) as s:
            await s.wait_indexed()  # progress comes through the proxy
            s.open("pkg/retry.py")
            s.replace("pkg/retry.py", edited_retry(repo), version=2)
            # The CLI's daemon (the owner) sees the editor's unsaved text.
            assert await s.wait_for(lambda: sees(repo, MARKER), timeout=20, interval=0.2)
            status = await asyncio.to_thread(lambda: DaemonClient.connect(socket_of(repo))
                                             .request("ctxls/status", {}))
            assert status["buffers"] == 1
            # LSP features answer through the proxy, from the owner's index.
            recall = await s.request("ctxls/recall", {"query": MARKER, "kind": "code"})
            assert recall["hits"][0]["chunk"]["symbol"] == MARKER
            lenses = await s.client.text_document_code_lens_async(types.CodeLensParams(
                types.TextDocumentIdentifier(uri=s.uri("pkg/session.py"))))
            assert any(lens.range.start.line == 15 for lens in lenses)  # send_prepared
            # Closed without saving: the owner drops the unsaved text.
            s.close("pkg/retry.py")
            assert await s.wait_for(lambda: gone(repo, MARKER), timeout=20, interval=0.2)
            assert await sees(repo, "retry_upload", "retry_upload")
        assert owner.poll() is None  # the editor leaving never ends the owner


async def test_a_vanished_editor_s_buffers_fall_back_to_disk(repo: Path):
    with headless_owner(repo):
        async with serve(repo) as s:
            await s.wait_indexed()
            s.open("pkg/retry.py")
            s.replace("pkg/retry.py", edited_retry(repo), version=2)
            assert await s.wait_for(lambda: sees(repo, MARKER), timeout=20, interval=0.2)
            # The editor quits without closing the buffer (`:qa!`).
        assert await _eventually_gone(repo)
        assert await sees(repo, "retry_upload", "retry_upload")


async def _eventually_gone(repo: Path) -> bool:
    for _ in range(100):
        if await gone(repo, MARKER):
            return True
        await asyncio.sleep(0.2)
    return False


async def test_two_editors_share_one_daemon(repo: Path):
    async with serve(repo) as first:  # owns the socket, in process
        await first.wait_indexed()
        async with serve(repo) as second:  # finds it live: a proxy
            await second.wait_indexed()
            second.open("pkg/retry.py")
            second.replace("pkg/retry.py", edited_retry(repo), version=2)

            async def first_sees():
                hits = (await first.request("ctxls/recall", {"query": MARKER, "kind": "code"}))["hits"]
                return hits and hits[0]["chunk"]["symbol"] == MARKER

            assert await first.wait_for(first_sees, timeout=20, interval=0.2)
            second.close("pkg/retry.py")

            async def first_lost_it():
                hits = (await first.request("ctxls/recall", {"query": MARKER, "kind": "code"}))["hits"]
                return not any(h["chunk"]["symbol"] == MARKER for h in hits)

            assert await first.wait_for(first_lost_it, timeout=20, interval=0.2)


async def test_a_multi_root_window_never_writes_the_store_another_daemon_owns(repo: Path, tmp_path: Path):
    """A second window opening a multi-root workspace that includes a served
    repository (multi-root is not proxied) opened a second writer on its
    store: its first pass rewrote from disk the rows that held the first
    window's unsaved text. That folder is now refused there, saying why."""
    other = tmp_path / "other"
    other.mkdir()
    (other / "tools.py").write_text("def other_tool():\n    return 1\n")

    async with serve(repo) as first:  # owns the socket, in process
        await first.wait_indexed()
        first.open("pkg/retry.py")
        first.replace("pkg/retry.py", edited_retry(repo), version=2)

        async def first_sees() -> bool:
            hits = (await first.request("ctxls/recall", {"query": MARKER, "kind": "code"}))["hits"]
            return bool(hits) and hits[0]["chunk"]["symbol"] == MARKER

        assert await first.wait_for(first_sees, timeout=20, interval=0.2)
        assert await first.wait_for(lambda: asyncio.to_thread(socket_is_live, socket_of(repo)), timeout=20)
        async with serve(other, more_folders=(repo,)) as second:
            await second.wait_indexed()
            refused = [m.message for m in second.client.messages if str(repo.resolve()) in m.message]
            assert refused and "served by another ctxls process" in refused[0], second.client.messages
            # Its own folder is served; the other one's index keeps the unsaved text.
            tools = await second.request("ctxls/recall", {"query": "other_tool", "kind": "code"})
            assert tools["hits"][0]["chunk"]["symbol"] == "other_tool"
            status = await second.request("ctxls/status", {})
            assert [Path(f["root"]) for f in status.get("folders", [status])] == [other.resolve()]
            assert await first_sees()


@pytest.mark.parametrize("ending", [signal.SIGTERM, signal.SIGKILL], ids=["terminated", "killed"])
async def test_a_proxy_takes_over_when_the_owner_exits_and_keeps_its_buffers(repo: Path, ending):
    """Killed (SIGKILL), the owner's connection was reset rather than closed
    and the proxy exited ("lost the daemon: Connection reset by peer"),
    leaving its editor without a server."""
    with headless_owner(repo) as owner:
        async with serve(repo) as s:
            await s.wait_indexed()
            s.open("pkg/retry.py")
            s.replace("pkg/retry.py", edited_retry(repo), version=2)
            assert await s.wait_for(lambda: sees(repo, MARKER), timeout=20, interval=0.2)
            if ending == signal.SIGKILL:  # unread input at its death: the kernel resets
                s.replace("pkg/retry.py", edited_retry(repo), version=3)
            owner.send_signal(ending)
            await asyncio.to_thread(owner.wait, 30)
            # The proxy starts the next daemon and replays its open buffer.
            assert await s.wait_for(lambda: sees(repo, MARKER), timeout=120, interval=0.5)

            async def answered():
                try:
                    recall = await s.request("ctxls/recall", {"query": MARKER, "kind": "code"})
                except Exception:  # lost with the old owner: the client retries
                    return False
                return recall["hits"][0]["chunk"]["symbol"] == MARKER

            assert await s.wait_for(answered, timeout=30, interval=0.2)
            # Edits after the takeover reach the new owner.
            s.replace("pkg/retry.py", edited_retry(repo).replace(MARKER, "after_takeover"), version=4)
            assert await s.wait_for(lambda: sees(repo, "after_takeover", "after_takeover"),
                                    timeout=20, interval=0.2)
        # The daemon it started is bound to the proxy, which has exited with its editor.
        for _ in range(150):
            if not socket_is_live(socket_of(repo)):
                break
            await asyncio.sleep(0.2)
        assert not socket_is_live(socket_of(repo))


async def test_an_edit_made_while_the_proxy_takes_over_is_applied_once(repo: Path):
    """An incremental edit typed while the proxy replaces a gone owner is
    tracked into the buffer the replay sends whole, and was then sent too:
    the new owner applied it twice (the insertion doubled, every later
    definition's lines off)."""
    with headless_owner(repo) as owner:
        async with serve(repo) as s:
            await s.wait_indexed()
            text = (repo / "pkg/retry.py").read_text()
            s.open("pkg/retry.py", text)
            assert await s.wait_for(lambda: sees(repo, "retry_upload", "retry_upload"),
                                    timeout=20, interval=0.2)
            owner.send_signal(signal.SIGTERM)
            await asyncio.to_thread(owner.wait, 30)
            inserted = "def typed_during_the_takeover():\n    return 1\n\n\n"
            s.client.text_document_did_change(types.DidChangeTextDocumentParams(
                types.VersionedTextDocumentIdentifier(uri=s.uri("pkg/retry.py"), version=2),
                [types.TextDocumentContentChangePartial(
                    range=types.Range(types.Position(0, 0), types.Position(0, 0)), text=inserted)]))

            async def served_text():
                try:
                    return (await s.request("ctxls/get", {"id": "pkg/retry.py"}))["text"]
                except Exception:  # lost with the old owner, or the new one still starting
                    return None

            async def replayed():
                return await served_text() not in (None, text)

            assert await s.wait_for(replayed, timeout=120, interval=0.5)
            assert await served_text() == inserted + text


def test_a_socket_client_that_never_reads_holds_a_bounded_share_of_the_daemon(tmp_path: Path):
    """Each request on a socket connection became a task that computed its
    whole answer and held it until the client read: a client sending 400
    gets of a 900 KB file and reading nothing grew the daemon from 161 MB to
    946 MB. A connection now has at most MAX_IN_FLIGHT requests in flight
    and is not read past them; replies the reading loop queues itself (to
    bad bodies) end the connection past MAX_UNREAD_REPLY_BYTES."""
    import json

    from ctxls.daemon import socket_server

    running, most, release = 0, 0, None

    class Counting(socket_server.SocketServer):
        async def _result(self, method, params):
            nonlocal running, most
            running += 1
            most = max(most, running)
            await release.wait()
            running -= 1
            return {"ok": True}

    def request(n: int) -> bytes:
        body = json.dumps({"jsonrpc": "2.0", "id": n, "method": "ctxls/status", "params": {}})
        return f"Content-Length: {len(body)}\r\n\r\n{body}".encode()

    async def scenario() -> tuple[int, int, bool]:
        nonlocal release
        release = asyncio.Event()
        daemon = Counting(None, tmp_path / "d.sock")
        assert await daemon.start()
        serving = asyncio.create_task(daemon.serve_forever())
        try:
            reader, writer = await asyncio.open_unix_connection(str(tmp_path / "d.sock"))
            writer.write(b"".join(request(n) for n in range(100)))
            await writer.drain()
            await asyncio.sleep(1.0)
            held = most
            release.set()
            answers = 0
            while answers < 100:  # every request is answered once the client reads
                header = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
                await reader.readexactly(int(header.split(b":")[1]))
                answers += 1
            writer.close()
            bad, bad_writer = await asyncio.open_unix_connection(str(tmp_path / "d.sock"))
            junk = b"Content-Length: 1\r\n\r\n{"
            closed = False
            try:
                for _ in range(200_000):  # as many parse errors, none of their replies read
                    bad_writer.write(junk)
                    await asyncio.wait_for(bad_writer.drain(), 10)
            except ConnectionError:
                closed = True
            return held, answers, closed
        finally:
            serving.cancel()
            daemon.close()

    held, answers, closed = asyncio.run(scenario())
    assert held == socket_server.MAX_IN_FLIGHT and answers == 100
    assert closed  # the daemon ended the connection that read none of its replies


def _eventually(predicate, timeout: float = 20.0) -> bool:
    """Poll ``predicate`` (a plain function) until it holds or ``timeout`` passes."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)
    return True


def _open(editor: StdioDaemon, uri: str, text: str) -> None:
    editor.conn.send({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {
        "textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": text}}})


def _close(editor: StdioDaemon, uri: str) -> None:
    editor.conn.send({"jsonrpc": "2.0", "method": "textDocument/didClose", "params": {
        "textDocument": {"uri": uri}}})


def test_a_file_closed_in_one_editor_keeps_the_text_another_has_open_by_another_path(
        tmp_path: Path, repo: Path):
    """Two editors had pkg/retry.py open unsaved, one through a linked
    folder, one by its real path: when the second closed it, the daemon
    looked the other editors' buffers up by the second's URI, found none,
    and served the disk's text while the first still had its own open."""
    link = tmp_path / "linked"
    link.symlink_to(repo)
    disk = (repo / "pkg/retry.py").read_text()
    first = StdioDaemon(link, folder_uri=link.as_uri())  # owns the socket
    try:
        first.wait_indexed()
        second = StdioDaemon(repo)  # finds it live: a proxy
        try:
            second.wait_indexed()
            _open(first, f"{link.as_uri()}/pkg/retry.py", disk.replace("retry_upload", MARKER))
            assert _eventually(lambda: MARKER in owner_recall(repo, MARKER))
            _open(second, (repo / "pkg/retry.py").as_uri(),
                  disk.replace("retry_upload", "second_editors_fn"))
            assert _eventually(lambda: "second_editors_fn" in owner_recall(repo, "second_editors_fn"))
            _close(second, (repo / "pkg/retry.py").as_uri())
            # The first editor's text, still open there, is the truth again.
            assert _eventually(lambda: MARKER in owner_recall(repo, MARKER))
            assert "retry_upload" not in owner_recall(repo, "retry_upload")
        finally:
            second.close()
    finally:
        first.close()


@asynccontextmanager
async def agent(repo: Path) -> AsyncIterator[ClientSession]:
    """An agent's `ctxls mcp --root REPO` (the MCP SDK's client)."""
    params = StdioServerParameters(command=sys.executable,
                                   args=["-m", "ctxls.daemon.cli", "mcp", "--root", str(repo)],
                                   env={**os.environ, "CTXLS_LOG": "ERROR"})
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            yield session


async def until(predicate, timeout: float = 60.0) -> bool:
    """Poll an async predicate until it holds or ``timeout`` passes."""
    deadline = time.monotonic() + timeout
    while not await predicate():
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.2)
    return True


async def agent_finds(session: ClientSession, symbol: str) -> bool:
    answer = await session.call_tool("find_symbol", {"name": symbol, "match": "exact"})
    return not answer.is_error and symbol in answer.content[0].text


async def test_an_agent_that_hosts_the_engine_is_the_daemon_an_editor_started_later_joins(repo: Path):
    """`ctxls mcp` started with no daemon hosted its engine without the
    socket: the editor started next became a second daemon writing the same
    store, the agent never saw its unsaved text, and the agent's freshness
    checks wrote the disk's text over the buffer's rows for every client.
    The hosting agent now owns the socket, and the editor proxies to it."""
    async with agent(repo) as session:
        async def listening() -> bool:
            await session.call_tool("status", {})  # opened at the handshake; this waits for it
            return await asyncio.to_thread(socket_is_live, socket_of(repo))

        assert await until(listening), "the hosting agent never listened on the socket"
        async with serve(repo) as editor:  # finds the agent's socket live: a proxy
            await editor.wait_indexed()
            editor.open("pkg/retry.py")
            editor.replace("pkg/retry.py", edited_retry(repo), version=2)
            assert await editor.wait_for(lambda: agent_finds(session, MARKER), timeout=20, interval=0.2)
            await session.call_tool("outline", {"path": "pkg/retry.py"})  # checks the file's freshness
            assert await sees(repo, MARKER)  # the CLI's view: the same engine, the buffer kept
            status = await asyncio.to_thread(lambda: DaemonClient.connect(socket_of(repo))
                                             .request("ctxls/status", {}))
            assert status["buffers"] == 1


async def test_a_hosting_agents_call_answers_with_an_editors_edit_whose_debounce_is_over(repo: Path):
    """The hosting agent's own calls ran in process without waiting for the
    editors' buffers whose debounce was over (a request on its socket did):
    a call 150 ms after an editor's edit answered from the text before it."""
    from test_shared_daemon import BIG_FILE, DEBOUNCE_OVER_S

    (repo / "pkg/big.py").write_text(BIG_FILE)
    async with agent(repo) as session:
        async def listening() -> bool:
            await session.call_tool("status", {})
            return await asyncio.to_thread(socket_is_live, socket_of(repo))

        assert await until(listening), "the hosting agent never listened on the socket"
        async with serve(repo, {"debounceMs": 20}) as editor:  # a proxy to the agent
            await editor.wait_indexed()
            editor.open("pkg/big.py", BIG_FILE)
            assert await editor.wait_for(lambda: agent_finds(session, "func_1500"), timeout=20,
                                         interval=0.2)
            for version, name in enumerate(["typed_name_0", "typed_name_1"], start=2):
                editor.replace("pkg/big.py", BIG_FILE.replace("def func_1500(", f"def {name}("),
                               version=version)
                await asyncio.sleep(DEBOUNCE_OVER_S)
                assert await agent_finds(session, name)


async def test_an_agent_whose_daemon_exits_rejoins_the_editors_next_daemon(repo: Path):
    """The owner exited while an editor's proxy held an unsaved buffer and an
    agent was attached: the agent's next call found nobody listening yet and
    hosted an engine of its own for good (a second writer that never saw
    the buffer), while the proxy started the next daemon. The agent now
    waits for the takeover lock: it joins the daemon the proxy started, or,
    taking the lock first, hosts the engine on the socket the proxy then
    replays its buffer to. Either way it sees the editor's unsaved text."""
    with headless_owner(repo) as owner:
        async with serve(repo) as editor, agent(repo) as session:
            await editor.wait_indexed()
            editor.open("pkg/retry.py")
            editor.replace("pkg/retry.py", edited_retry(repo), version=2)
            assert await editor.wait_for(lambda: agent_finds(session, MARKER), timeout=20, interval=0.2)
            owner.send_signal(signal.SIGTERM)
            await asyncio.to_thread(owner.wait, 30)
            assert await editor.wait_for(lambda: agent_finds(session, MARKER), timeout=120, interval=0.5)
            assert await sees(repo, MARKER)
            # One writer: the process on the socket is the one answering the agent.
            edited = edited_retry(repo).replace(MARKER, "after_the_owner_left")
            editor.replace("pkg/retry.py", edited, version=3)
            assert await editor.wait_for(lambda: agent_finds(session, "after_the_owner_left"),
                                         timeout=20, interval=0.2)


async def test_an_agent_whose_daemon_exits_with_no_editor_left_becomes_the_daemon(repo: Path):
    """Nobody takes over (no editor's proxy): the agent hosts the engine,
    and as the daemon, on the socket, so the editor opened next joins it."""
    with headless_owner(repo) as owner:
        async with agent(repo) as session:
            assert await agent_finds(session, "retry_upload")
            owner.send_signal(signal.SIGTERM)
            await asyncio.to_thread(owner.wait, 30)
            assert await until(lambda: agent_finds(session, "retry_upload"))  # hosted here now
            assert await asyncio.to_thread(socket_is_live, socket_of(repo))
            async with serve(repo) as editor:  # a proxy to the agent
                await editor.wait_indexed()
                editor.open("pkg/retry.py")
                editor.replace("pkg/retry.py", edited_retry(repo), version=2)
                assert await editor.wait_for(lambda: agent_finds(session, MARKER), timeout=20,
                                             interval=0.2)
                assert await sees(repo, MARKER)


def agent_store_files(repo: Path) -> list[str]:
    """The files under the repository's store that its agent (`ctxls mcp
    --root REPO`, found by its command line) holds open."""
    held, agents = [], 0
    for proc in Path("/proc").iterdir():
        try:
            command = (proc / "cmdline").read_bytes().split(b"\0")
            if b"mcp" not in command or os.fsencode(repo) not in command:
                continue
            targets = [os.readlink(fd) for fd in (proc / "fd").iterdir()]
        except OSError:  # a process that ended meanwhile, or not ours to read
            continue
        agents += 1
        held += [target for target in targets if target.startswith(str(socket_of(repo).parent))]
    assert agents, "the agent's process was not found"
    return held


async def test_a_stopped_daemon_is_named_to_the_cli_and_the_agent_and_nobody_takes_its_place(
        repo: Path):
    """A daemon stopped with kill -STOP (or hung) keeps its socket, whose
    connections the kernel still accepts: `ctxls status` and an agent's tool
    call waited for it forever. Both now answer within the liveness bound
    with an error naming its PID and what to do; the agent does not open the
    store in its place (a second writer beside the daemon holding it), and
    once the daemon runs again (kill -CONT) it answers the agent again."""
    with headless_owner(repo) as owner:
        async with agent(repo) as session:
            assert await agent_finds(session, "retry_upload")  # through the daemon
            owner.send_signal(signal.SIGSTOP)
            try:
                cli = await asyncio.to_thread(
                    subprocess.run, [*CTXLS, "status", "--root", str(repo)], capture_output=True,
                    text=True, timeout=60)
                assert cli.returncode == 1, cli.stdout + cli.stderr
                assert f"(PID {owner.pid}) accepts connections but did not answer" in cli.stderr
                assert f"`kill -CONT {owner.pid}`" in cli.stderr
                # A second headless daemon says the same, not "served by PID …".
                second = await asyncio.to_thread(
                    subprocess.run, [*CTXLS, "serve", "--root", str(repo), "--socket"],
                    capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
                assert second.returncode == 1, second.stderr
                assert f"(PID {owner.pid}) accepts connections but did not answer" in second.stderr
                answer = await asyncio.wait_for(session.call_tool("status", {}), 60)
                assert answer.is_error
                assert f"(PID {owner.pid}) accepts connections but did not answer" in \
                    answer.content[0].text
                assert agent_store_files(repo) == []
            finally:
                owner.send_signal(signal.SIGCONT)
            answer = await session.call_tool("status", {})
            assert not answer.is_error and "daemon   running" in answer.content[0].text
            assert await asyncio.to_thread(socket_owner_pid, socket_of(repo)) == owner.pid
            assert agent_store_files(repo) == []


@contextmanager
def editor_serve(repo: Path) -> Iterator[tuple["RawConnection", dict]]:
    """An editor's `ctxls serve` on ``repo`` (a proxy where a daemon
    listens): its connection and the answer to its `initialize`."""
    from rawrpc import RawConnection

    editor = subprocess.Popen([sys.executable, "-m", "ctxls.daemon.cli", "serve"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL)
    try:
        def write(data: bytes) -> None:
            editor.stdin.write(data)
            editor.stdin.flush()

        conn = RawConnection(editor.stdout, write, True)
        uri = repo.resolve().as_uri()
        answer = conn.request("initialize", {
            "processId": None, "rootUri": uri, "capabilities": {},
            "workspaceFolders": [{"uri": uri, "name": repo.name}],
            "initializationOptions": {"embeddings": False}}, "init", timeout=90)
        yield conn, answer
    finally:
        editor.kill()
        editor.wait(timeout=30)


def test_an_editor_proxied_to_a_stopped_daemon_gets_its_initialize_answered(repo: Path):
    """An editor's `ctxls serve` finds the stopped daemon's socket live (the
    kernel accepts on it) and proxies to it: the editor's `initialize` waited
    forever. The proxy answers it within the liveness bound with the
    daemon's PID and what to do, and swallows a late answer."""
    with headless_owner(repo) as owner:
        owner.send_signal(signal.SIGSTOP)
        try:
            with editor_serve(repo) as (conn, answer):
                assert "error" in answer, answer
                assert f"(PID {owner.pid}) accepts connections but did not answer" in \
                    answer["error"]["message"]
        finally:
            owner.send_signal(signal.SIGCONT)


def test_an_editor_proxied_to_a_daemon_stopped_mid_session_gets_its_requests_answered(repo: Path):
    """Stopped after the editor's session began, the daemon left each of the
    editor's requests waiting until it resumed (only `initialize` was
    bounded). A request the owner leaves unanswered past the liveness bound,
    with the owner failing a liveness exchange of its own, is answered with
    the daemon's PID and what to do; once it runs again it answers again."""
    with headless_owner(repo) as owner, editor_serve(repo) as (conn, answer):
        assert "result" in answer, answer
        conn.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
        status = conn.request("ctxls/status", {}, "before", timeout=90)
        assert "result" in status, status
        owner.send_signal(signal.SIGSTOP)
        try:
            answer = conn.request("ctxls/status", {}, "stopped", timeout=90)
            assert "error" in answer, answer
            assert f"(PID {owner.pid}) accepts connections but did not answer" in \
                answer["error"]["message"]
        finally:
            owner.send_signal(signal.SIGCONT)
        conn.send({"jsonrpc": "2.0", "id": "resumed", "method": "ctxls/status", "params": {}})
        replies = [conn.reply(timeout=90)]
        while replies[-1].get("id") != "resumed":
            replies.append(conn.reply(timeout=90))
        assert "result" in replies[-1], replies
        assert [r for r in replies if r.get("id") == "stopped"] == []  # one answer per request


# `ctxls serve --root R --socket` whose first pass waits for a gate file to
# exist: the pass is held for as long as the test needs, with no timing.
GATED_FIRST_PASS = """
import sys, time
from pathlib import Path
from ctxls.index.engine import Engine
from ctxls.daemon.cli import main
held, gate = Path(sys.argv[1]), Path(sys.argv[2])
cold_index = Engine.cold_index
def gated(engine, *args, **kwargs):
    held.touch()
    while not gate.exists():
        time.sleep(0.05)
    return cold_index(engine, *args, **kwargs)
Engine.cold_index = gated
sys.exit(main(sys.argv[3:]))
"""


def test_a_headless_daemon_listens_and_says_indexing_during_its_first_pass(
        repo: Path, tmp_path: Path):
    """The headless daemon (`make run`) opened its socket only after its first
    pass: meanwhile `ctxls status` said "idle, daemon none", a CLI verb ran a
    whole pass of its own (a second writer of the store) and a `ctxls mcp`
    took the socket. It now listens first, as an editor's daemon does."""
    held, gate = tmp_path / "pass-held", tmp_path / "pass-gate"
    proc = subprocess.Popen([sys.executable, "-c", GATED_FIRST_PASS, str(held), str(gate),
                             "serve", "--root", str(repo), "--socket"],
                            stderr=subprocess.PIPE, text=True)
    killer = threading.Timer(120, proc.kill)  # never hang CI
    killer.start()
    try:
        while not held.exists():
            assert proc.poll() is None, "daemon exited: " + proc.stderr.read()
            time.sleep(0.05)
        # The first pass is held: the socket already listens, owned by this daemon.
        assert socket_is_live(socket_of(repo))
        assert socket_owner_pid(socket_of(repo)) == proc.pid
        status = subprocess.run([*CTXLS, "status", "--json", "--root", str(repo)],
                                capture_output=True, text=True, timeout=60)
        assert status.returncode == 0, status.stderr
        said = json.loads(status.stdout)
        assert (said["state"], said["via"]) == ("indexing", "daemon")
        recall = subprocess.run([*CTXLS, "recall", "send_prepared", "--root", str(repo)],
                                capture_output=True, text=True, timeout=60)
        assert recall.returncode != 0 and "index not ready" in recall.stderr, recall.stderr
        # Nobody indexed the store beside the daemon (the CLI used to, in process).
        client = DaemonClient.connect(socket_of(repo))
        try:
            assert client.request("ctxls/status", {})["files"] == 0
        finally:
            client.close()
        gate.touch()
        assert "indexed 5 files" in said_until_serving(proc)
        assert "send_prepared" in owner_recall(repo, "send_prepared")
    finally:
        killer.cancel()
        if proc.poll() is None:
            proc.terminate()
        proc.wait(timeout=30)


GATED_CALL = """
import importlib, sys, time
from pathlib import Path
from ctxls.daemon.cli import main
held, gate, target = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
module_name, _, qualified = target.partition(":")
owner_name, _, attribute = qualified.rpartition(".")
owner = importlib.import_module(module_name)
if owner_name:
    owner = getattr(owner, owner_name)
original = getattr(owner, attribute)
def gated(*args, **kwargs):
    held.touch()
    while not gate.exists():
        time.sleep(0.05)
    return original(*args, **kwargs)
setattr(owner, attribute, gated)
sys.exit(main(sys.argv[4:]))
"""

MCP_HANDSHAKE = "".join(json.dumps(message) + "\n" for message in (
    {"jsonrpc": "2.0", "id": 1, "method": "initialize",
     "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "test", "version": "0"}}},
    {"jsonrpc": "2.0", "method": "notifications/initialized"}))


@contextmanager
def gated_start(repo: Path, tmp_path: Path, target: str, verb: list[str]
                ) -> Iterator[tuple[subprocess.Popen, Path]]:
    """A daemon starting (`ctxls serve --socket` or a hosting `ctxls mcp`),
    held at its call of ``target`` ("module:Class.method") until the gate
    file yielded is made."""
    held, gate = tmp_path / "start-held", tmp_path / "start-gate"
    proc = subprocess.Popen([sys.executable, "-c", GATED_CALL, str(held), str(gate), target,
                             *verb, "--root", str(repo)], stdin=subprocess.PIPE,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "CTXLS_LOG": "ERROR"})
    killer = threading.Timer(120, proc.kill)  # never hang CI
    killer.start()
    try:
        if verb[0] == "mcp":  # it opens the engine once the handshake is done
            proc.stdin.write(MCP_HANDSHAKE)
            proc.stdin.flush()
        while not held.exists():
            assert proc.poll() is None, "daemon exited: " + proc.stderr.read()
            time.sleep(0.05)
        yield proc, gate
    finally:
        killer.cancel()
        gate.touch()
        if proc.poll() is None:
            proc.terminate()
        proc.wait(timeout=30)


@pytest.mark.parametrize("verb", [["serve", "--socket"], ["mcp"]])
def test_a_daemon_still_opening_its_engine_is_waited_for_not_stood_in_for(
        repo: Path, tmp_path: Path, verb: list[str]):
    """A hosting `ctxls mcp` or a `serve --socket` that had not listened yet
    (seconds of imports and opening the store): `ctxls status` said "has no
    index yet; create one with `ctxls index`", then opened the store in
    process beside the daemon (a second writer). A starting daemon holds the
    takeover lock until it listens; a verb waits for it and asks it."""
    from ctxls.daemon.cli_verbs import has_index
    from ctxls.daemon.client import EngineAccess

    with gated_start(repo, tmp_path, "ctxls.daemon.workspaces:Workspaces.add_folder",
                     verb) as (proc, gate):
        assert not (repo / ".ctxls" / "index.db").exists()  # the engine is not open yet
        assert has_index(repo)  # a daemon is starting: no "create one with `ctxls index`"
        opened: list[EngineAccess] = []
        asking = threading.Thread(target=lambda: opened.append(EngineAccess(repo)))
        asking.start()
        gate.touch()
        asking.join(timeout=120)
        assert opened, "the verb never reached the starting daemon"
        try:
            assert opened[0].via == "daemon"
            assert socket_owner_pid(socket_of(repo)) == proc.pid
        finally:
            opened[0].close()


def test_a_hosting_agent_listens_before_its_first_pass_starts(repo: Path, tmp_path: Path):
    """The hosting `ctxls mcp` started its first pass and the embedding worker
    before it bound the socket, which that work slowed by seconds while the
    store already existed: a CLI verb then found no daemon."""
    with gated_start(repo, tmp_path, "ctxls.daemon.app:index_in_background", ["mcp"]) as (proc, _):
        assert socket_is_live(socket_of(repo))
        assert socket_owner_pid(socket_of(repo)) == proc.pid


def _answers_recall(repo: Path, symbol: str) -> bool:
    """Whether the socket's daemon finds ``symbol`` (False while its index is not ready)."""
    from ctxls.daemon.client import RemoteError

    try:
        return symbol in owner_recall(repo, symbol)
    except RemoteError:
        return False


def test_a_daemon_whose_store_folder_is_deleted_listens_on_its_socket_again(repo: Path):
    """`git clean -fdx` (or `rm -rf .ctxls`) under a running daemon: the
    store was opened anew and re-indexed, but the socket, deleted with the
    folder, was never bound again: `ctxls status` said "daemon none", clients
    served themselves in process and a second daemon started beside it."""
    import shutil

    with headless_owner(repo) as proc:
        held = DaemonClient.connect(socket_of(repo))  # a connection made before
        try:
            shutil.rmtree(repo / ".ctxls")
            assert _eventually(lambda: socket_is_live(socket_of(repo)), 60), "socket not bound again"
            assert socket_owner_pid(socket_of(repo)) == proc.pid
            assert _eventually(lambda: _answers_recall(repo, "send_prepared"), 60)
            assert held.request("ctxls/status", {})["root"]  # served on
        finally:
            held.close()
        second = subprocess.run([*CTXLS, "serve", "--root", str(repo), "--socket"],
                                capture_output=True, text=True, timeout=120)
        assert second.returncode == 0 and "already served" in second.stderr, second.stderr
        assert proc.poll() is None


def test_a_daemon_whose_deleted_socket_another_took_stops_listening_and_leaves_it(tmp_path: Path):
    """One daemon per repository: a daemon that bound the path while ours was
    deleted keeps it; ours stops listening there (a headless one then exits),
    and closing never removes the other's socket."""
    from ctxls.daemon.socket_server import SocketServer

    path = tmp_path / "d.sock"

    async def scenario() -> tuple[bool, bool, bool]:
        first = SocketServer(None, path)
        assert await first.start()
        serving = asyncio.create_task(first.serve_forever())
        path.unlink()
        second = SocketServer(None, path)
        assert await second.start()
        try:
            kept = await asyncio.wait_for(serving, 60)
            first.close()
            return kept, socket_is_live(path), second.owns_path()
        finally:
            second.close()

    kept, live, still_the_seconds = asyncio.run(scenario())
    assert kept is False and live and still_the_seconds


class _Editor:
    """What a proxy writes to its editor (an Outbox's write), read back as messages."""

    def __init__(self) -> None:
        self.data = b""

    def write(self, data: bytes) -> None:
        self.data += data

    def messages(self) -> list[dict]:
        found, rest = [], self.data
        while rest:
            header, _, rest = rest.partition(b"\r\n\r\n")
            length = int(header.split(b":")[1])
            found.append(json.loads(rest[:length]))
            rest = rest[length:]
        return found


def test_a_proxy_answers_an_oversized_or_unreadable_owner_message_and_keeps_serving(tmp_path: Path):
    """An owner's answer over the 64 MiB a message may be (an enumerate of
    1000 rows with large metas) raised ValueError in the proxy's reader: the
    editor's `ctxls serve` exited, that request and every later one unanswered.
    The proxy reads such a message away and answers its request with an error."""
    from ctxls.daemon.framing import MAX_MESSAGE_BYTES, frame, frame_body
    from ctxls.daemon.proxy import Proxy

    async def relayed() -> list[dict]:
        editor = _Editor()
        proxy = Proxy({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {}}, tmp_path,
                      tmp_path / "daemon.sock", None, editor)
        proxy.pending = {7: "ctxls/enumerate", 8: "ctxls/count", 9: "ctxls/recall", 10: "ctxls/get"}
        proxy.shutting_down = True  # the owner's end of stream ends the relay
        proxy.owner_reader = reader = asyncio.StreamReader()
        head = b'{"jsonrpc":"2.0","id":7,"result":{"items":[{"id":8,"meta":"'
        reader.feed_data(b"Content-Length: %d\r\n\r\n" % (MAX_MESSAGE_BYTES + 1) + head
                         + b"x" * (MAX_MESSAGE_BYTES + 1 - len(head)))
        reader.feed_data(frame({"jsonrpc": "2.0", "id": 8, "result": {"count": 3}}))
        reader.feed_data(frame_body(b'{"result": {"id": 9, "hits": '))  # not JSON, and whose?
        reader.feed_data(frame({"jsonrpc": "2.0", "id": 10, "result": None}))  # swallowed: answered
        reader.feed_eof()
        await proxy.relay_owner()
        return editor.messages()

    oversized, count, *unreadable = asyncio.run(relayed())
    assert oversized["id"] == 7 and oversized["error"]["code"] == -32603
    assert "over the 64 MiB bound" in oversized["error"]["message"]
    assert count == {"jsonrpc": "2.0", "id": 8, "result": {"count": 3}}
    # No top-level id readable: every request still waiting is answered, once.
    assert sorted(m["id"] for m in unreadable) == [9, 10]
    assert all(m["error"]["code"] == -32603 for m in unreadable)


def test_an_answer_over_the_message_bound_is_sent_as_an_error_of_its_request():
    """Nothing checked an answer against the 64 MiB bound before sending it:
    its reader refused it whole. It goes out as an error naming its size."""
    from ctxls.daemon.framing import MAX_MESSAGE_BYTES, frame

    sent = frame({"jsonrpc": "2.0", "id": "r1", "result": {"items": ["x" * MAX_MESSAGE_BYTES]}})
    header, _, body = sent.partition(b"\r\n\r\n")
    answer = json.loads(body)
    assert len(body) == int(header.split(b":")[1]) < 4096
    assert answer["id"] == "r1" and answer["error"]["code"] == -32603
    assert answer["error"]["data"]["limit"] == MAX_MESSAGE_BYTES
    # Compact: no space after "," and ":" (an answer of large metas was half again its size).
    assert frame({"jsonrpc": "2.0", "id": 1, "result": {"a": [1, 2]}}).endswith(
        b'{"jsonrpc":"2.0","id":1,"result":{"a":[1,2]}}')
