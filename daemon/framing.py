"""LSP framing (``Content-Length`` headers) of the daemon socket, on the
standard library alone: the CLI and the MCP bridge import it to talk to a
running daemon without loading the engine or the LSP types (about a second
of CPU a call, which an agent calling ``ctxls recall`` in a loop pays every
time)."""

from __future__ import annotations

import json

SOCKET_NAME = "daemon.sock"


def frame(message: dict) -> bytes:
    text = json.dumps(message, ensure_ascii=False)
    try:
        body = text.encode("utf-8")
    except UnicodeEncodeError:
        # A lone surrogate (a request id "\ud800" is echoed back) has no UTF-8
        # form; JSON's \u escapes carry it exactly, so the peer gets its id back.
        body = json.dumps(message, ensure_ascii=True).encode("ascii")
    return frame_body(body)


def frame_body(body: bytes) -> bytes:
    return b"Content-Length: %d\r\n\r\n" % len(body) + body
