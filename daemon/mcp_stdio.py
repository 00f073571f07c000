"""`ctxls mcp`'s wire: the Model Context Protocol's stdio transport (one
JSON-RPC 2.0 message a line) and its lifecycle, on the standard library alone
(and ctxls's cancel token, which is too).

The official SDK took 5 s of an agent's start to import (it and pydantic);
the protocol a tool server speaks is small: ``initialize`` (version
negotiation), ``ping``, ``tools/list``, ``tools/call`` and notifications
(``notifications/cancelled`` drops the answer of a request still running,
and stops its work: a call not started is never run, a running one's cancel
token is cancelled).
Every request gets an answer, also one that cannot be read: -32700 for a
line that is not JSON, -32600 for one that is not a request, -32602 naming
the bad param for a request whose params are unusable; a malformed
notification or a response gets none, as JSON-RPC 2.0 says. Tool calls run
on a pool of CALL_THREADS threads, so ``ping`` and cancellation are answered
while a long call runs, and a call reuses a thread's store connection and
its caches (a thread a call opened a connection each time: ~20 ms a call,
and two file descriptors a call until the store closed).
"""

from __future__ import annotations

import json
import os
import threading
from concurrent.futures import Future, ThreadPoolExecutor, wait
from typing import Any, Callable

from ctxls.daemon.request_values import first_invalid
from ctxls.index.cancel import CancelToken

# Newest first: an unknown requested version is answered with the newest.
PROTOCOL_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")

PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS = -32700, -32600, -32601, -32602
# Tool calls running at once, as many as the daemon's read lane; more wait.
CALL_THREADS = 4


def screen(line: str) -> tuple[dict | None, dict | None]:
    """(the message to handle, the error to answer): one of them, or neither
    for a blank line, a malformed notification or a response."""
    if not line.strip():
        return None, None
    try:
        message: Any = json.loads(line)
    except (ValueError, RecursionError) as exc:  # not JSON, too deep, a 5,000-digit number
        return None, error_reply(None, PARSE_ERROR, f"parse error: {exc}")
    if isinstance(message, list):
        return None, error_reply(None, INVALID_REQUEST, "invalid request: batches are not supported")
    if not isinstance(message, dict):
        return None, error_reply(None, INVALID_REQUEST, "invalid request: not a JSON-RPC 2.0 object")
    msg_id = message.get("id")
    usable_id = isinstance(msg_id, (str, int)) and not isinstance(msg_id, bool)
    if "method" not in message:
        if "result" in message or "error" in message:
            return None, None  # a response: this server asks nothing, so nothing awaits it
        return None, error_reply(msg_id if usable_id else None, INVALID_REQUEST,
                                 "invalid request: no method")
    if "id" in message and not usable_id:
        return None, error_reply(None, INVALID_REQUEST,
                                 "invalid request: id must be a string or an integer")
    if message.get("jsonrpc") != "2.0" or not isinstance(message["method"], str):
        code, problem = INVALID_REQUEST, 'invalid request: needs "jsonrpc": "2.0" and a string method'
    elif (params := message.get("params")) is not None and not isinstance(params, dict):
        code, problem = INVALID_PARAMS, f"params must be an object ({message['method']})"
    elif params and (invalid := first_invalid(protocol_part(message["method"], params),
                                              "params")) is not None:
        code, problem = INVALID_PARAMS, (f"invalid param {invalid[0]!r}: {invalid[1]} "
                                         f"({message['method']})")
    else:
        return message, None
    # A malformed notification is never answered.
    return None, error_reply(msg_id, code, problem) if "id" in message else None


def protocol_part(method: str, params: dict) -> dict:
    """The params the wire checks: a tool call's ``arguments`` are the tool's
    to refuse, as a tool error the agent reads (``isError``) like any other
    bad argument, not as a protocol error its client may only log."""
    if method == "tools/call" and "arguments" in params:
        return {key: value for key, value in params.items() if key != "arguments"}
    return params


def error_reply(msg_id: str | int | None, code: int, message: str) -> dict:
    return {"jsonrpc": "2.0", "id": msg_id, "error": {"code": code, "message": message}}


class McpStdioServer:
    """One agent on stdin/stdout. ``list_tools()`` gives the tools' JSON
    descriptions; ``call_tool(name, arguments, token)`` a ``tools/call``
    result (errors inside it, never raised), stopping early once ``token``
    (a ``CancelToken``) is cancelled."""

    def __init__(self, name: str, version: str, instructions: str,
                 list_tools: Callable[[], list[dict]],
                 call_tool: Callable[[str, dict, CancelToken], dict],
                 on_initialized: Callable[[], object] | None = None):
        """``on_initialized``: run once the client's ``notifications/initialized``
        ends the handshake (work that should not slow the handshake down)."""
        self.info = {"name": name, "version": version}
        self.on_initialized = on_initialized
        self.instructions = instructions
        self.list_tools = list_tools
        self.call_tool = call_tool
        self._out = None
        self._write_lock = threading.Lock()
        self._running: dict[str | int, tuple[Future, CancelToken]] = {}
        self._calls = ThreadPoolExecutor(CALL_THREADS, thread_name_prefix="ctxls-mcp-call")
        self._cancelled: set[str | int] = set()
        self._lock = threading.Lock()

    def run(self) -> None:
        """Serve until stdin ends; calls still running then finish and answer."""
        self._out = os.fdopen(os.dup(1), "wb")
        os.dup2(2, 1)  # a stray print (ours or a child's) goes to stderr, not into the wire
        for raw in _wire_stdin():
            message, reply = screen(raw.decode("utf-8", "replace"))
            if reply is not None:
                self.send(reply)
            elif message is not None:
                self.handle(message)
        with self._lock:
            running = [future for future, _ in self._running.values()]
        wait(running)
        self._calls.shutdown(wait=True)

    def handle(self, message: dict) -> None:
        method, msg_id = message["method"], message.get("id")
        params = message.get("params") or {}
        if "id" not in message:
            request_id = params.get("requestId")
            if method == "notifications/cancelled" and isinstance(request_id, (str, int)):
                with self._lock:
                    future, token = self._running.get(request_id, (None, None))
                    if future is None:
                        return
                    if future.cancel():  # still waiting for a thread: never run
                        del self._running[request_id]
                        return
                    self._cancelled.add(request_id)
                token.cancel()  # outside the lock: it may write to the daemon
            elif method == "notifications/initialized" and self.on_initialized is not None:
                started, self.on_initialized = self.on_initialized, None
                started()
            return  # any notification: nothing to answer
        if method == "tools/call":
            token = CancelToken()
            with self._lock:  # registered before it can end and unregister itself
                self._running[msg_id] = (self._calls.submit(self._call, msg_id, params, token), token)
        elif method == "initialize":
            self.reply(msg_id, self.initialize(params))
        elif method == "ping":
            self.reply(msg_id, {})
        elif method == "tools/list":
            self.reply(msg_id, {"tools": self.list_tools()})
        else:
            self.send(error_reply(msg_id, METHOD_NOT_FOUND, f"method not found: {method}"))

    def initialize(self, params: dict) -> dict:
        requested = params.get("protocolVersion")
        version = requested if requested in PROTOCOL_VERSIONS else PROTOCOL_VERSIONS[0]
        return {"protocolVersion": version, "capabilities": {"tools": {"listChanged": False}},
                "serverInfo": self.info, "instructions": self.instructions}

    def _call(self, msg_id: str | int, params: dict, token: CancelToken) -> None:
        name, arguments = params.get("name"), params.get("arguments")
        if not isinstance(name, str):
            result = None
            error = error_reply(msg_id, INVALID_PARAMS, "invalid param 'params.name': must be "
                                                       "a tool's name (tools/list names them)")
        elif arguments is not None and not isinstance(arguments, dict):
            result = None
            error = error_reply(msg_id, INVALID_PARAMS,
                                "invalid param 'params.arguments': must be an object")
        else:
            result, error = self.call_tool(name, arguments or {}, token), None
        with self._lock:
            self._running.pop(msg_id, None)
            if msg_id in self._cancelled:
                self._cancelled.discard(msg_id)
                return  # the agent gave up on it: no answer, as the protocol says
        if error is not None:
            self.send(error)
        else:
            self.reply(msg_id, result)

    def reply(self, msg_id: str | int, result: dict) -> None:
        self.send({"jsonrpc": "2.0", "id": msg_id, "result": result})

    def send(self, message: dict) -> None:
        try:
            line = json.dumps(message, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate (an echoed id): \u escapes carry it
            line = json.dumps(message).encode("ascii")
        with self._write_lock:
            try:
                self._out.write(line + b"\n")
                self._out.flush()
            except (BrokenPipeError, ValueError):
                pass  # the agent went away; stdin's end stops the loop


def _wire_stdin():
    """stdin's lines, read from a descriptor of its own; fd 0 then reads the
    null device, so a child process never reads the agent's messages."""
    wire = os.dup(0)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    with os.fdopen(wire, "rb") as lines:
        yield from lines
