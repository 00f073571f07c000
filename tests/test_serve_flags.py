"""`ctxls serve` under the command lines LSP clients really use: the flags
vscode-languageclient appends, and exiting when the editor's process dies."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from conftest import serve

CTXLS = [sys.executable, "-m", "ctxls.daemon.cli"]


def frame(message: dict) -> bytes:
    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


async def test_stdio_and_client_process_id_flags_are_accepted(repo: Path):
    # Exactly what vscode-languageclient runs for a command with transport stdio.
    async with serve(repo, args=("--stdio", "--clientProcessId=%d" % 1)) as s:
        await s.wait_indexed()
        recall = await s.request("ctxls/recall", {"query": "send_prepared", "kind": "code"})
        assert recall["hits"][0]["chunk"]["symbol"] == "send_prepared"
    async with serve(repo, args=("--clientProcessId", "1")) as s:
        status = await s.request("ctxls/status")
        assert status["root"] == str(repo.resolve())


def test_node_ipc_is_refused_with_a_clear_error():
    out = subprocess.run([*CTXLS, "serve", "--node-ipc"], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 2
    assert "--node-ipc is not supported" in out.stderr and "stdio" in out.stderr


def test_bad_client_process_id_is_a_usage_error():
    out = subprocess.run([*CTXLS, "serve", "--clientProcessId=editor"], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 2
    assert "--clientProcessId" in out.stderr


def _start_editor_stand_in() -> subprocess.Popen:
    return subprocess.Popen(["sleep", "300"])


def _exits_after_editor_dies(server: subprocess.Popen, editor: subprocess.Popen) -> int:
    """Kill the stand-in editor while the server's stdin stays open (as when a
    grandchild holds the pipe): only the process watch can end the server."""
    try:
        assert server.poll() is None, "the server exited before its client did"
        editor.kill()
        editor.wait()
        return server.wait(timeout=30)
    finally:
        if server.poll() is None:
            server.kill()
        server.stdin.close()


def test_server_exits_when_the_command_line_client_process_dies(repo: Path):
    editor = _start_editor_stand_in()
    server = subprocess.Popen([*CTXLS, "serve", "--stdio", f"--clientProcessId={editor.pid}"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, cwd=repo)
    # Not yet initialized: nothing but the watch is running.
    assert _exits_after_editor_dies(server, editor) == 0


def test_server_exits_when_the_initialize_process_id_dies_and_frees_the_socket(repo: Path):
    editor = _start_editor_stand_in()
    server = subprocess.Popen([*CTXLS, "serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE)
    root = repo.resolve().as_uri()
    server.stdin.write(frame({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "processId": editor.pid, "rootUri": root, "capabilities": {},
        "workspaceFolders": [{"uri": root, "name": "repo"}],
        "initializationOptions": {"embeddings": False}}}))
    server.stdin.write(frame({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
    server.stdin.flush()
    # The initialize answer, then wait for the shared socket: the server is serving.
    header = server.stdout.readline()
    assert header.startswith(b"Content-Length")
    sock = repo / ".ctxls" / "daemon.sock"
    for _ in range(300):
        if sock.exists():
            break
        time.sleep(0.1)
    assert sock.exists()
    assert _exits_after_editor_dies(server, editor) == 0
    assert not sock.exists()  # the next editor's server can own the repository
