"""LSP framing (``Content-Length`` headers) of the daemon socket, on the
standard library alone: the CLI and the MCP bridge import it to talk to a
running daemon without loading the engine or the LSP types (about a second
of CPU a call, which an agent calling ``ctxls recall`` in a loop pays every
time)."""

from __future__ import annotations

import json

SOCKET_NAME = "daemon.sock"


def frame(message: dict) -> bytes:
    return frame_body(json.dumps(message, ensure_ascii=False).encode("utf-8"))


def frame_body(body: bytes) -> bytes:
    return b"Content-Length: %d\r\n\r\n" % len(body) + body
