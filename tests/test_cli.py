"""The `ctxls` command: headless verbs and the Unix-socket daemon."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
from pathlib import Path

CTXLS = [sys.executable, "-m", "ctxls.daemon.cli"]


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([*CTXLS, *args], capture_output=True, text=True, cwd=cwd, timeout=120)


def test_index_recall_status_json_and_human(repo: Path):
    indexed = run("index", str(repo), "--json")
    assert indexed.returncode == 0, indexed.stderr
    assert json.loads(indexed.stdout)["added"] == 5

    recalled = run("recall", "send prepared", "--root", str(repo), "--kind", "code", "--json")
    hits = json.loads(recalled.stdout)["hits"]
    assert hits[0]["chunk"] == {"symbol": "send_prepared", "startLine": 15, "endLine": 17}

    human = run("recall", "send prepared", "--root", str(repo))
    assert "pkg/session.py:16-18  send_prepared" in human.stdout

    status = json.loads(run("status", str(repo), "--json").stdout)
    assert status["files"] == 5 and status["root"] == str(repo.resolve())


def test_bad_usage_and_bad_root_exit_nonzero(tmp_path: Path):
    assert run("recall").returncode == 2
    missing = run("index", str(tmp_path / "nope"))
    assert missing.returncode != 0 and "not a directory" in missing.stderr


async def _rpc(reader, writer, msg_id: int, method: str, params) -> dict:
    body = json.dumps({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params}).encode()
    writer.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    await writer.drain()
    while True:
        header = await reader.readuntil(b"\r\n\r\n")
        length = int(header.split(b"Content-Length:")[1].split(b"\r\n")[0])
        message = json.loads(await reader.readexactly(length))
        if message.get("id") == msg_id and "method" not in message:
            return message


def test_serve_on_a_unix_socket_with_a_prewarmed_root(repo: Path, tmp_path: Path):
    sock = tmp_path / "d.sock"
    sock.write_text("stale file from a crashed daemon")
    proc = subprocess.Popen([*CTXLS, "serve", "--root", str(repo), "--socket", str(sock)],
                            stderr=subprocess.PIPE, text=True)
    # The daemon and this test both give up rather than hang CI.
    killer = threading.Timer(60, proc.kill)
    killer.start()
    try:
        lines = []
        while "until interrupted" not in "".join(lines):
            line = proc.stderr.readline()
            assert line, "daemon exited: " + "".join(lines)
            lines.append(line)
        assert "indexed 5 files" in "".join(lines)

        async def session():
            reader, writer = await asyncio.open_unix_connection(str(sock))
            await _rpc(reader, writer, 1, "initialize",
                       {"processId": None, "rootUri": repo.resolve().as_uri(), "capabilities": {}})
            writer.write(b'Content-Length: 52\r\n\r\n{"jsonrpc":"2.0","method":"initialized","params":{}}')
            recall = await _rpc(reader, writer, 2, "ctxls/recall",
                                {"query": "send_prepared", "kind": "code"})
            await _rpc(reader, writer, 3, "shutdown", None)
            writer.close()
            return recall

        recall = asyncio.run(session())
        assert recall["result"]["partial"] is False  # indexed before the client came
        assert recall["result"]["hits"][0]["chunk"]["symbol"] == "send_prepared"
    finally:
        killer.cancel()
        proc.terminate()
        proc.wait(timeout=10)
