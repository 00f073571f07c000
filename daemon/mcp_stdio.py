"""`ctxls mcp`'s wire: the Model Context Protocol's stdio transport (one
JSON-RPC 2.0 message a line) and its lifecycle, on the standard library alone
(and ctxls's cancel token and message bound, which are too).

The official SDK took 5 s of an agent's start to import (it and pydantic);
the protocol a tool server speaks is small: ``initialize`` (version
negotiation), ``ping``, ``tools/list``, ``tools/call`` and notifications
(``notifications/cancelled`` drops the answer of a request still running,
and stops its work: a call not started is never run, a running one's cancel
token is cancelled).
Every request gets an answer, also one that cannot be read: -32700 for a
line that is not JSON, -32600 for one that is not a request, -32602 naming
the bad param for a request whose params are unusable, an unknown tool or a
cursor (none is ever handed out); a malformed notification or a response
gets none, as JSON-RPC 2.0 says. A line over MAX_MESSAGE_BYTES (the bound of
the LSP transports) is read away in pieces, none of it kept, and answered
-32700. A batch (a JSON array of messages) is
answered with an array of its requests' answers where the negotiated
version has batches (2024-11-05, 2025-03-26), and refused with -32600 where
it does not (2025-06-18 removed them). Tool calls run
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
from typing import Any, BinaryIO, Callable, Iterator

from ctxls.daemon.framing import MAX_MESSAGE_BYTES, OversizedMessage
from ctxls.daemon.request_values import first_invalid
from ctxls.index.cancel import CancelToken

# Newest first: an unknown requested version is answered with the newest.
PROTOCOL_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")

# The versions whose messages may come as a JSON-RPC batch: 2025-03-26 says
# servers MUST take them, 2024-11-05 that messages follow JSON-RPC 2.0, whose
# servers answer them; 2025-06-18 removed them.
BATCH_VERSIONS = ("2025-03-26", "2024-11-05")

PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS = -32700, -32600, -32601, -32602
# Tool calls running at once, as many as the daemon's read lane; more wait.
CALL_THREADS = 4


class UnknownTool(Exception):
    """What ``call_tool`` raises for a name no tool has: a protocol error
    (-32602), as MCP lists unknown tools, not a tool result."""


def screen(line: str) -> tuple[dict | list | None, dict | None]:
    """(the message to handle, the error to answer): one of them, or neither
    for a blank line, a malformed notification or a response. A batch comes
    back as its list, unscreened: whether it is taken depends on the version."""
    if not line.strip():
        return None, None
    try:
        message: Any = json.loads(line)
    except (ValueError, RecursionError) as exc:  # not JSON, too deep, a 5,000-digit number
        return None, error_reply(None, PARSE_ERROR, f"parse error: {exc}")
    if isinstance(message, list):
        return message, None
    return screen_message(message)


def screen_message(message: Any) -> tuple[dict | None, dict | None]:
    """``screen`` for one decoded message (a line's, or a batch's item)."""
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


def result_reply(msg_id: str | int, result: dict) -> dict:
    return {"jsonrpc": "2.0", "id": msg_id, "result": result}


# Where a request's answer goes: the wire, or its batch's array; None: the
# request gets no answer (it was cancelled).
Answer = Callable[[dict | None], None]


class BatchAnswers:
    """The answers of one batch's requests, sent as one array once the last
    is in; a cancelled call adds no entry, and no request no array."""

    def __init__(self, send: Callable[[list], None], expected: int):
        self._send, self._left, self._answers = send, expected, []
        self._lock = threading.Lock()

    def add(self, answer: dict | None) -> None:
        with self._lock:
            if answer is not None:
                self._answers.append(answer)
            self._left -= 1
            complete = self._left == 0
        if complete and self._answers:
            self._send(self._answers)


class McpStdioServer:
    """One agent on stdin/stdout. ``list_tools()`` gives the tools' JSON
    descriptions; ``call_tool(name, arguments, token)`` a ``tools/call``
    result (errors inside it; it raises only UnknownTool), stopping early
    once ``token`` (a ``CancelToken``) is cancelled."""

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
        self._running: dict[str | int, tuple[Future, CancelToken, Answer]] = {}
        self._calls = ThreadPoolExecutor(CALL_THREADS, thread_name_prefix="ctxls-mcp-call")
        self._cancelled: set[str | int] = set()
        self._lock = threading.Lock()
        # What the last initialize agreed on (None before one): it decides on batches.
        self.protocol_version: str | None = None

    def run(self) -> None:
        """Serve until stdin ends; calls still running then finish and answer."""
        self._out = os.fdopen(os.dup(1), "wb")
        os.dup2(2, 1)  # a stray print (ours or a child's) goes to stderr, not into the wire
        for raw in _wire_stdin():
            if isinstance(raw, OversizedMessage):  # unparsed: its id cannot be known
                self.send(error_reply(None, PARSE_ERROR,
                                      f"parse error: {raw}; it was read away unparsed"))
            else:
                self.receive(raw.decode("utf-8", "replace"))
        with self._lock:
            running = [future for future, _, _ in self._running.values()]
        wait(running)
        self._calls.shutdown(wait=True)

    def receive(self, line: str) -> None:
        """One line of the wire: a message, a batch, or what cannot be read."""
        message, reply = screen(line)
        if isinstance(message, list):
            self.handle_batch(message)
        elif reply is not None:
            self.send(reply)
        elif message is not None:
            self.handle(message)

    def handle_batch(self, batch: list) -> None:
        """A JSON-RPC batch: its requests' answers as one array (none when it
        holds only notifications), where the negotiated version has batches."""
        if self.protocol_version not in BATCH_VERSIONS:
            when = (f"in MCP {self.protocol_version}" if self.protocol_version
                    else "before initialize")
            self.send(error_reply(None, INVALID_REQUEST,
                                  f"invalid request: batches are not supported {when} "
                                  f"(MCP {' and '.join(BATCH_VERSIONS)} have them)"))
            return
        if not batch:
            self.send(error_reply(None, INVALID_REQUEST, "invalid request: an empty batch"))
            return
        screened = [screen_message(item) for item in batch]
        # Counted before any is handled: a call may answer before the next is read.
        answers = BatchAnswers(self.send, sum(reply is not None or (message is not None
                                                                    and "id" in message)
                                              for message, reply in screened))
        for message, reply in screened:
            if reply is not None:
                answers.add(reply)
            elif message is None:
                continue
            elif message["method"] == "initialize" and "id" in message:
                answers.add(error_reply(message["id"], INVALID_REQUEST,
                                        "invalid request: initialize must not be part of a batch"))
            else:
                self.handle(message, answers.add)

    def handle(self, message: dict, answer: Answer | None = None) -> None:
        """One message; a request's answer goes to ``answer`` (default: the wire)."""
        answer = answer or self._answer_alone
        method, msg_id = message["method"], message.get("id")
        params = message.get("params") or {}
        if "id" not in message:
            request_id = params.get("requestId")
            if method == "notifications/cancelled" and isinstance(request_id, (str, int)):
                with self._lock:
                    future, token, answered = self._running.get(request_id, (None, None, None))
                    if future is None:
                        return
                    never_run = future.cancel()  # still waiting for a thread: never run
                    if never_run:
                        del self._running[request_id]
                    else:
                        self._cancelled.add(request_id)
                # Outside the lock: the token may write to the daemon, a batch's last answer
                # sends the batch's array.
                if never_run:
                    answered(None)
                else:
                    token.cancel()
            elif method == "notifications/initialized" and self.on_initialized is not None:
                started, self.on_initialized = self.on_initialized, None
                started()
            return  # any notification: nothing to answer
        if method == "tools/call":
            token = CancelToken()
            with self._lock:  # registered before it can end and unregister itself
                self._running[msg_id] = (
                    self._calls.submit(self._call, msg_id, params, token, answer), token, answer)
        elif method == "initialize":
            answer(result_reply(msg_id, self.initialize(params)))
        elif method == "ping":
            answer(result_reply(msg_id, {}))
        elif method == "tools/list":
            if params.get("cursor") is not None:  # one page holds every tool: no cursor is ours
                answer(error_reply(msg_id, INVALID_PARAMS, "invalid param 'params.cursor': this "
                                   "server hands out no cursors (tools/list answers every tool)"))
            else:
                answer(result_reply(msg_id, {"tools": self.list_tools()}))
        else:
            answer(error_reply(msg_id, METHOD_NOT_FOUND, f"method not found: {method}"))

    def initialize(self, params: dict) -> dict:
        requested = params.get("protocolVersion")
        version = requested if requested in PROTOCOL_VERSIONS else PROTOCOL_VERSIONS[0]
        self.protocol_version = version
        return {"protocolVersion": version, "capabilities": {"tools": {"listChanged": False}},
                "serverInfo": self.info, "instructions": self.instructions}

    def _call(self, msg_id: str | int, params: dict, token: CancelToken, answer: Answer) -> None:
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
            try:
                result, error = self.call_tool(name, arguments or {}, token), None
            except UnknownTool:
                result = None
                error = error_reply(msg_id, INVALID_PARAMS,
                                    f"unknown tool: {name!r} (invalid param 'params.name'; "
                                    "tools/list names the tools)")
        with self._lock:
            self._running.pop(msg_id, None)
            cancelled = msg_id in self._cancelled
            self._cancelled.discard(msg_id)
        # The agent gave up on a cancelled call: no answer, as the protocol says.
        answer(None if cancelled else error if error is not None else result_reply(msg_id, result))

    def _answer_alone(self, reply: dict | None) -> None:
        """The answer of a request that came alone: on the wire, if any."""
        if reply is not None:
            self.send(reply)

    def send(self, message: dict | list) -> None:
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


def _wire_stdin() -> Iterator[bytes | OversizedMessage]:
    """stdin's lines (``wire_lines``), read from a descriptor of its own; fd 0
    then reads the null device, so a child process never reads the agent's
    messages."""
    wire = os.dup(0)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    with os.fdopen(wire, "rb") as stream:
        yield from wire_lines(stream)


# What one read of a line's rest holds while it is read away.
READ_AWAY_PIECE = 1 << 20


def wire_lines(stream: BinaryIO, bound: int = MAX_MESSAGE_BYTES
               ) -> Iterator[bytes | OversizedMessage]:
    """``stream``'s lines, each at most ``bound`` bytes before its line end;
    a longer one comes as the OversizedMessage saying its length, read away
    in pieces of READ_AWAY_PIECE and none of it kept, so at most ``bound``
    bytes are held whatever the line's length (a line was read whole: one of
    200 MiB took the process from 20 MiB to 811 MiB, and was served)."""
    while True:
        line = stream.readline(bound + 2)  # a message of the bound, and its "\r\n"
        if not line:
            return
        if line.endswith(b"\n") or len(line) < bound + 2:  # the whole line (the last may lack "\n")
            length = len(line.rstrip(b"\r\n"))
            if length <= bound:
                yield line
                continue
        else:
            length = len(line)
            line = b""  # held no longer while the rest is read away
            while piece := stream.readline(READ_AWAY_PIECE):
                if piece.endswith(b"\n"):
                    length += len(piece.rstrip(b"\r\n"))
                    break
                length += len(piece)
        yield OversizedMessage(length)
