"""The MCP bridge's stdio transport: the SDK's, plus an answer for every
request it cannot read.

The SDK's transport drops a line that is not a valid JSON-RPC message
without a word: a request whose params are a list, or hold a lone surrogate,
or a line that is not JSON at all, never got an answer, and the agent waited
for it. Here each line is checked first, as the SDK will check it; one it
would drop is answered as JSON-RPC 2.0 says (-32700 for a body that is not
JSON, -32600 for one that is not a request, -32602 naming the bad param for
a request whose params are unusable; a malformed notification or response
gets no answer), and only lines the SDK reads are handed to it.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from io import TextIOWrapper
from typing import Any

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from mcp.types import (INVALID_PARAMS, INVALID_REQUEST, PARSE_ERROR, ErrorData, JSONRPCError,
                       jsonrpc_message_adapter)

from ctxls.daemon.wire import first_invalid


def screen(line: str) -> str | JSONRPCError | None:
    """What to do with a line: hand it to the SDK (the line), answer it (an
    error), or drop it (None: a blank line, a malformed notification or
    response, which JSON-RPC never answers)."""
    if not line.strip():
        return None
    try:
        jsonrpc_message_adapter.validate_json(line, by_name=False)
        readable = True
    except Exception:
        readable = False
    try:
        message: Any = json.loads(line)
    except (ValueError, RecursionError) as exc:  # not JSON, too deep, a 5,000-digit number
        return _error(None, PARSE_ERROR, f"parse error: {exc}")
    if isinstance(message, list):
        return _error(None, INVALID_REQUEST, "invalid request: batches are not supported")
    if not isinstance(message, dict):
        return _error(None, INVALID_REQUEST, "invalid request: not a JSON-RPC 2.0 object")
    msg_id = message.get("id")
    usable_id = isinstance(msg_id, (str, int)) and not isinstance(msg_id, bool)
    if "method" in message and "id" in message and not usable_id:
        # The SDK reads it as a notification (no answer) or drops it.
        return _error(None, INVALID_REQUEST, "invalid request: id must be a string or an integer")
    if readable:
        return line
    if "method" not in message:
        if "result" in message or "error" in message:
            return None  # a response: never answered
        return _error(msg_id if usable_id else None, INVALID_REQUEST, "invalid request: no method")
    if "id" not in message:
        return None  # a notification: never answered
    if message.get("jsonrpc") != "2.0" or not isinstance(message["method"], str):
        return _error(msg_id, INVALID_REQUEST,
                      'invalid request: needs "jsonrpc": "2.0" and a string method')
    params = message.get("params")
    invalid = first_invalid(params, "params") if isinstance(params, dict) else None
    problem = (f"invalid param {invalid[0]!r}: {invalid[1]}" if invalid is not None
               else "params must be an object")
    return _error(msg_id, INVALID_PARAMS, f"{problem} ({message['method']})")


def _error(msg_id: str | int | None, code: int, message: str) -> JSONRPCError:
    return JSONRPCError(jsonrpc="2.0", id=msg_id, error=ErrorData(code=code, message=message))


class CheckedLines:
    """The wire's lines, minus those the SDK cannot read: each of those is
    answered on ``replies`` (the transport's write stream, set once open)."""

    def __init__(self, lines: anyio.AsyncFile[str]):
        self.lines = lines
        self.replies: Any = None
        self.open = anyio.Event()

    async def __aiter__(self) -> AsyncIterator[str]:
        async for line in self.lines:
            verdict = screen(line)
            if isinstance(verdict, JSONRPCError):
                await self.open.wait()
                await self.replies.send(SessionMessage(verdict))
            elif verdict is not None:
                yield verdict


def _wire_stdin() -> anyio.AsyncFile[str]:
    """stdin on a descriptor of its own; fd 0 then reads the null device, so a
    child process never reads the agent's messages (the SDK's transport does
    the same when it opens stdin itself)."""
    wire = os.dup(0)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    return anyio.wrap_file(TextIOWrapper(os.fdopen(wire, "rb"), encoding="utf-8",
                                         errors="replace"))


async def serve_stdio(mcp: MCPServer) -> None:
    """``MCPServer.run_stdio_async`` with the checked lines."""
    lines = CheckedLines(_wire_stdin())
    async with stdio_server(stdin=lines) as (read_stream, write_stream):
        lines.replies = write_stream
        lines.open.set()
        # As run_stdio_async does; MCPServer has no public way to pass a transport's streams.
        server = mcp._lowlevel_server
        await server.run(read_stream, write_stream, server.create_initialization_options())
