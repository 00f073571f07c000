"""A raw JSON-RPC client for `ctxls serve` (stdio) and its socket: sends any
bytes, even malformed ones, and collects every reply (what pytest-lsp cannot)."""

from __future__ import annotations

import json
import queue
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, BinaryIO


def frame(body: bytes) -> bytes:
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


class RawConnection:
    """Frames in, frames out; replies (messages with an id and no method) are
    queued, server notifications and requests to the client are dropped
    (requests get an empty result so the server never waits)."""

    def __init__(self, reader: BinaryIO, writer: Any, answers_requests: bool = True):
        """``answers_requests``: False for a client that never answers the
        server's requests (they are dropped)."""
        self._reader = reader
        self.answers_requests = answers_requests
        self._writer = writer
        self.replies: queue.Queue[dict] = queue.Queue()
        self.notifications: queue.Queue[dict] = queue.Queue()  # the server's, in order
        self.closed = threading.Event()
        # Cleared: the client stops reading (after the message it is reading).
        self.reading = threading.Event()
        self.reading.set()
        self._lock = threading.Lock()
        threading.Thread(target=self._read_loop, daemon=True).start()

    def _write(self, data: bytes) -> None:
        with self._lock:
            self._writer(data)

    def send_body(self, body: bytes) -> None:
        self._write(frame(body))

    def send(self, message: Any) -> None:
        self.send_body(json.dumps(message).encode("utf-8"))

    def _read_loop(self) -> None:
        try:
            while True:
                self.reading.wait()
                length = None
                while True:
                    line = self._reader.readline()
                    if not line:
                        return
                    line = line.strip()
                    if not line:
                        break
                    name, _, value = line.decode("ascii").partition(":")
                    if name.lower() == "content-length":
                        length = int(value)
                body = b""
                while len(body) < (length or 0):
                    chunk = self._reader.read(length - len(body))
                    if not chunk:
                        return
                    body += chunk
                message = json.loads(body)
                if "method" in message:
                    if "id" in message and self.answers_requests:  # the server asks: say yes
                        self.send({"jsonrpc": "2.0", "id": message["id"], "result": None})
                    elif "id" not in message:
                        self.notifications.put(message)
                    continue
                self.replies.put(message)
        except (OSError, ValueError):
            return
        finally:
            self.closed.set()

    def reply(self, timeout: float = 30.0) -> dict:
        return self.replies.get(timeout=timeout)

    def request(self, method: str, params: Any, msg_id: Any, timeout: float = 30.0) -> dict:
        self.send({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
        return self.reply_to(msg_id, timeout)

    def reply_to(self, msg_id: Any, timeout: float = 30.0) -> dict:
        deadline = time.monotonic() + timeout
        while True:
            message = self.replies.get(timeout=max(deadline - time.monotonic(), 0.001))
            if message.get("id") == msg_id:
                return message


class StdioDaemon:
    """`ctxls serve` over stdio, initialized on ``root``."""

    def __init__(self, root: Path, options: dict | None = None, env: dict | None = None,
                 preexec_fn=None, folder_uri: str | None = None, capabilities: dict | None = None,
                 answers_requests: bool = True):
        """``folder_uri``: the workspace folder as the client names it (a
        link's URI, say); by default ``root`` resolved. ``capabilities``: the
        client's (none by default)."""
        self.process = subprocess.Popen(
            [sys.executable, "-m", "ctxls.daemon.cli", "serve"], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, preexec_fn=preexec_fn)

        def write(data: bytes) -> None:
            self.process.stdin.write(data)
            self.process.stdin.flush()

        self.conn = RawConnection(self.process.stdout, write, answers_requests)
        opts = {"embeddings": False, "debounceMs": 20} | (options or {})
        uri = folder_uri or root.resolve().as_uri()
        answer = self.conn.request("initialize", {
            "processId": None, "rootUri": uri, "capabilities": capabilities or {},
            "workspaceFolders": [{"uri": uri, "name": root.name}],
            "initializationOptions": opts}, "init")
        assert "result" in answer, answer
        self.initialize_result = answer["result"]
        self.conn.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})

    def alive(self) -> bool:
        return self.process.poll() is None

    def wait_indexed(self, timeout: float = 60.0) -> dict:
        deadline = time.monotonic() + timeout
        n = 0
        while True:
            n += 1
            status = self.conn.request("ctxls/status", {}, f"wait-{n}")["result"]
            if status["complete"] or time.monotonic() > deadline:
                return status
            time.sleep(0.1)

    def close(self) -> None:
        try:
            self.conn.request("shutdown", None, "bye", timeout=10)
            self.conn.send({"jsonrpc": "2.0", "method": "exit"})
            self.process.wait(timeout=10)
        except Exception:
            self.process.kill()
            self.process.wait()


def socket_connection(path: Path) -> tuple[RawConnection, socket.socket]:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(str(path))
    return RawConnection(sock.makefile("rb"), sock.sendall), sock
