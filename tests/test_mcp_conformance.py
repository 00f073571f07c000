"""`ctxls mcp` against the Model Context Protocol's own rules (a conformance
probe's findings): an unknown tool is a protocol error, the tools'
annotations and input schemas say what the tools do and refuse, batches are
taken where the negotiated version has them, and a cursor never handed out
is refused."""

from __future__ import annotations

import collections
import io
import json
import os
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from ctxls.daemon.formatting import MAX_SHOWN_LINE_CHARS, in_caller_names
from ctxls.daemon.mcp_bridge import (KIND, SCOPE, TOOL_OF_METHOD, TOOLS_BY_NAME, Bridge,
                                     call_tool)
from ctxls.daemon.mcp_stdio import CALL_THREADS, McpStdioServer
from ctxls.daemon.request_values import MAX_INT
from ctxls.index.errors import InvalidParams
from ctxls.index.scopes import named_scope
from ctxls.index.vocabulary import (MAX_META_BYTES, MAX_META_DEPTH, MAX_SCOPE_CHARS,
                                    MAX_WRITE_BYTES, RECALL_KINDS)

CTXLS = [sys.executable, "-m", "ctxls.daemon.cli"]


def initialize(msg_id: int | str, version: str) -> dict:
    return {"jsonrpc": "2.0", "id": msg_id, "method": "initialize", "params": {
        "protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "probe",
                                                                     "version": "1"}}}


def tool_call(msg_id: int | str, name: str, arguments: dict | None = None) -> dict:
    return {"jsonrpc": "2.0", "id": msg_id, "method": "tools/call",
            "params": {"name": name, "arguments": arguments or {}}}


def echo_tool(name: str, arguments: dict, token) -> dict:
    return {"content": [{"type": "text", "text": name}]}


def served(version: str | None, call=echo_tool) -> McpStdioServer:
    """A server writing to memory, ``version`` negotiated (None: no initialize yet)."""
    server = McpStdioServer("probe", "0", "", lambda: [{"name": "echo"}], call)
    server._out = io.BytesIO()
    if version is not None:
        server.receive(json.dumps(initialize("init", version)))
        server._out = io.BytesIO()
    return server


def written(server: McpStdioServer) -> list:
    """What the server wrote, one decoded message a line, once its calls are done."""
    server._calls.shutdown(wait=True)
    return [json.loads(line) for line in server._out.getvalue().splitlines()]


class McpProcess:
    """`ctxls mcp --no-daemon` on a repository, spoken to a line at a time."""

    def __init__(self, root: Path):
        self.process = subprocess.Popen([*CTXLS, "mcp", "--root", str(root), "--no-daemon"],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=subprocess.DEVNULL,
                                        env={**os.environ, "CTXLS_LOG": "ERROR"})
        self.lines: queue.Queue[bytes] = queue.Queue()
        threading.Thread(target=lambda: [self.lines.put(line) for line in self.process.stdout],
                         daemon=True).start()

    def send(self, message: dict | list) -> None:
        self.process.stdin.write(json.dumps(message).encode() + b"\n")
        self.process.stdin.flush()

    def next(self) -> dict | list:
        return json.loads(self.lines.get(timeout=120))  # queue.Empty: no answer came

    def start(self, version: str) -> dict:
        self.send(initialize(0, version))
        answer = self.next()
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return answer

    def close(self) -> None:
        self.process.kill()
        self.process.wait()


# -- unknown tools ---------------------------------------------------------------------

def test_an_unknown_tool_is_a_protocol_error_not_a_tool_result(tmp_path: Path):
    """MCP's tools "Error Handling" lists an unknown tool among the protocol
    errors (-32602); it was answered as a tool result with isError, naming
    `list_tools`, a method no protocol has."""
    bridge = Bridge(tmp_path, use_daemon=False)  # never opened: no tool runs
    server = served("2025-06-18", lambda name, arguments, token:
                    call_tool(bridge, name, arguments, token))
    server.handle(tool_call(1, "no_such_tool"))
    (answer,) = written(server)
    assert "result" not in answer, answer
    assert answer["id"] == 1 and answer["error"]["code"] == -32602
    message = answer["error"]["message"]
    assert "unknown tool" in message and "'no_such_tool'" in message
    assert "tools/list" in message and "list_tools" not in message


# -- annotations -----------------------------------------------------------------------

def test_remember_is_annotated_as_the_overwrite_it_is():
    """remember replaces an id's earlier text, yet said destructiveHint false
    ("only additive updates"), so a client could approve it unasked; and a
    repeat re-dates the row (recent_memory's order), so it is not idempotent."""
    remember = TOOLS_BY_NAME["remember"].describe()["annotations"]
    assert remember["readOnlyHint"] is False
    assert remember["destructiveHint"] is True and remember["idempotentHint"] is False
    forget = TOOLS_BY_NAME["forget"].describe()["annotations"]
    assert forget["destructiveHint"] is True and forget["idempotentHint"] is True
    # Only the two writes may destroy anything.
    assert {name for name, tool in TOOLS_BY_NAME.items()
            if tool.describe()["annotations"]["destructiveHint"]} == {"remember", "forget"}


# -- input schemas ---------------------------------------------------------------------

def test_the_schema_bounds_are_the_engines_own_constants():
    """The scope's bound lived in index/scopes.py only, so no schema said it;
    remember's text bound (bytes) was said nowhere; recall's kind listed
    config in its enum but not in its description."""
    assert (SCOPE.schema["minLength"], SCOPE.schema["maxLength"]) == (1, MAX_SCOPE_CHARS)
    named_scope("s" * MAX_SCOPE_CHARS)
    for refused in ("", "s" * (MAX_SCOPE_CHARS + 1)):
        with pytest.raises(InvalidParams):
            named_scope(refused)
    from ctxls.index.errors import TooLarge
    from ctxls.index.memory.model import check_text

    check_text("é" * (MAX_WRITE_BYTES // 2))
    with pytest.raises(TooLarge):  # the bound the schema states is the one a write enforces
        check_text("é" * (MAX_WRITE_BYTES // 2) + "x")
    text = TOOLS_BY_NAME["remember"].describe()["inputSchema"]["properties"]["text"]
    # maxLength counts characters: the byte bound is its loose side, the description exact.
    assert text["maxLength"] == MAX_WRITE_BYTES
    assert f"{MAX_WRITE_BYTES:,} bytes" in text["description"]
    assert KIND.schema["enum"] == list(RECALL_KINDS)
    assert all(kind in KIND.schema["description"] for kind in RECALL_KINDS)
    impact_n = TOOLS_BY_NAME["impact"].describe()["inputSchema"]["properties"]["n"]
    assert (impact_n["minimum"], impact_n["maximum"]) == (1, MAX_INT)


def test_an_argument_the_schema_takes_is_never_refused_on_a_bound(repo: Path):
    """Each tool's input schema promised the bounds the tool enforces, yet a
    300-character or empty scope, an empty or blank query, name or text, and
    an impact n past 64 bits were valid by the schema and refused by the tool.
    Now the schema takes exactly what the tool takes, at every such bound."""
    scope_cap = "s" * MAX_SCOPE_CHARS
    cases = [("recall", {"query": "session", "scope": scope_cap}),
             ("recall", {"query": "session", "scope": scope_cap + "s"}),
             ("recall", {"query": "session", "scope": ""}),
             ("knowledge", {"scope": "s" * 300}),
             ("remember", {"id": "note", "text": "t", "scope": scope_cap + "s"}),
             ("remember", {"id": "note", "text": "t", "scope": scope_cap}),
             ("recall", {"query": ""}), ("recall", {"query": " \n\t"}),
             ("assemble", {"query": " "}), ("locate", {"text": "\n"}),
             ("find_symbol", {"name": ""}), ("find_symbol", {"name": "  "}),
             ("impact", {"symbol": " "}),
             ("impact", {"symbol": "Session", "n": MAX_INT}),
             ("impact", {"symbol": "Session", "n": MAX_INT + 1}),
             ("remember", {"id": "note", "text": ""}), ("remember", {"id": "note", "text": "  "}),
             ("remember", {"id": "", "text": "t"}),
             ("forget", {"id": ""}), ("forget", {"id_prefix": ""}), ("forget", {"id": "note"}),
             ("get", {"id": ""}), ("get", {"id": "pkg/session.py", "start_line": MAX_INT}),
             ("get", {"id": "pkg/session.py", "start_line": MAX_INT + 1})]
    mcp = McpProcess(repo)
    try:
        mcp.start("2025-06-18")
        mcp.send({"jsonrpc": "2.0", "id": "list", "method": "tools/list"})
        schemas = {tool["name"]: tool["inputSchema"] for tool in mcp.next()["result"]["tools"]}
        disagreements = []
        for msg_id, (name, arguments) in enumerate(cases, 1):
            mcp.send(tool_call(msg_id, name, arguments))
            answer = mcp.next()
            assert answer["id"] == msg_id, answer
            said = answer["result"]["content"][0]["text"]
            refused = bool(answer["result"].get("isError")) and said.startswith(
                "ctxls error -32602")
            if Draft202012Validator(schemas[name]).is_valid(arguments) == refused:
                shown = {key: str(value)[:12] for key, value in arguments.items()}
                disagreements.append((name, shown, said[:80]))
        assert disagreements == []
    finally:
        mcp.close()


# -- batches ---------------------------------------------------------------------------

@pytest.mark.parametrize("version", ["2025-03-26", "2024-11-05"])
def test_a_batch_is_answered_with_an_array_where_the_version_has_batches(version: str):
    """2025-03-26 says a server MUST take JSON-RPC batches (2024-11-05 that
    messages follow JSON-RPC 2.0, which has them); every batch was refused.
    Each request gets its entry (an unreadable item an error, an initialize
    one too: it may not be batched); a notification none."""
    server = served(version)
    server.receive(json.dumps([
        {"jsonrpc": "2.0", "id": 1, "method": "ping"},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        tool_call(3, "echo"),
        7,
        initialize(4, version)]))
    (answers,) = written(server)
    assert isinstance(answers, list) and len(answers) == 5
    by_id = {answer["id"]: answer for answer in answers}
    assert by_id[1]["result"] == {} and by_id[2]["result"] == {"tools": [{"name": "echo"}]}
    assert by_id[3]["result"]["content"][0]["text"] == "echo"
    assert by_id[None]["error"]["code"] == -32600
    assert by_id[4]["error"]["code"] == -32600 and "batch" in by_id[4]["error"]["message"]


def test_a_batch_of_notifications_gets_no_answer_and_an_empty_one_an_error():
    server = served("2025-03-26")
    server.receive('[{"jsonrpc":"2.0","method":"notifications/initialized"}]')
    server.receive("[]")
    (empty,) = written(server)  # the notifications' batch wrote nothing
    assert empty["id"] is None and empty["error"]["code"] == -32600


@pytest.mark.parametrize("version", ["2025-06-18", "2025-11-25", None])
def test_a_batch_is_refused_where_the_version_has_none(version: str | None):
    """2025-06-18 removed batches; before initialize no version says either."""
    server = served(version)
    server.receive('[{"jsonrpc":"2.0","id":1,"method":"ping"}]')
    (refusal,) = written(server)
    assert isinstance(refusal, dict) and refusal["id"] is None
    assert refusal["error"]["code"] == -32600 and "batches" in refusal["error"]["message"]


def test_a_call_cancelled_in_a_batch_leaves_no_entry_and_the_rest_are_sent():
    """A batch's array goes once its last request is answered: a call the
    agent cancels (running, or still waiting for a thread) is answered by
    no entry, so the array still goes."""
    release = threading.Event()
    started: list[str] = []

    def blocking_tool(name: str, arguments: dict, token) -> dict:
        started.append(name)
        release.wait(30)
        return echo_tool(name, arguments, token)

    server = served("2025-03-26", blocking_tool)
    server.receive(json.dumps([tool_call(n, f"call{n}") for n in range(CALL_THREADS + 1)]))
    deadline = time.monotonic() + 30
    while len(started) < CALL_THREADS and time.monotonic() < deadline:
        time.sleep(0.01)
    for n in (0, CALL_THREADS):  # one running, one waiting for a thread
        server.handle({"jsonrpc": "2.0", "method": "notifications/cancelled",
                       "params": {"requestId": n}})
    release.set()
    (answers,) = written(server)
    assert sorted(answer["id"] for answer in answers) == list(range(1, CALL_THREADS))


def test_the_server_answers_a_batch_after_negotiating_2025_03_26(repo: Path):
    """End to end: `ctxls mcp` takes a batch under 2025-03-26 (an unknown
    tool and a cursor in it refused by their entries), and refuses one
    after the client negotiates 2025-06-18 instead."""
    mcp = McpProcess(repo)
    try:
        assert mcp.start("2025-03-26")["result"]["protocolVersion"] == "2025-03-26"
        mcp.send([{"jsonrpc": "2.0", "id": "ping", "method": "ping"},
                  tool_call("unknown", "no_such_tool"),
                  {"jsonrpc": "2.0", "id": "page", "method": "tools/list",
                   "params": {"cursor": "never-issued"}},
                  {"jsonrpc": "2.0", "method": "notifications/cancelled",
                   "params": {"requestId": "nothing-running"}}])
        answers = {answer["id"]: answer for answer in mcp.next()}
        assert set(answers) == {"ping", "unknown", "page"}
        assert answers["ping"]["result"] == {}
        assert answers["unknown"]["error"]["code"] == -32602
        assert answers["page"]["error"]["code"] == -32602
        assert mcp.start("2025-06-18")["result"]["protocolVersion"] == "2025-06-18"
        mcp.send([{"jsonrpc": "2.0", "id": "ping", "method": "ping"}])
        assert mcp.next()["error"]["code"] == -32600
    finally:
        mcp.close()


# -- pagination ------------------------------------------------------------------------

def test_tools_list_refuses_a_cursor_it_never_handed_out():
    """Pagination: an invalid cursor SHOULD be -32602. This server hands out
    none (one page holds every tool), so any cursor is invalid; it was
    ignored and the first page answered."""
    server = served("2025-06-18")
    server.handle({"jsonrpc": "2.0", "id": 1, "method": "tools/list",
                   "params": {"cursor": "bogus"}})
    server.handle({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}})
    server.handle({"jsonrpc": "2.0", "id": 3, "method": "tools/list"})
    bogus, empty, bare = written(server)
    assert bogus["id"] == 1 and bogus["error"]["code"] == -32602
    assert "cursor" in bogus["error"]["message"]
    assert empty["result"] == bare["result"] == {"tools": [{"name": "echo"}]}


def test_remembers_meta_states_the_bounds_a_write_enforces():
    """remember's meta was refused past 64 KiB of JSON or 64 levels of
    nesting, and its schema said neither (JSON Schema has no keyword for
    them: the description states them, from the constants the check uses)."""
    from ctxls.index.errors import TooLarge
    from ctxls.index.memory.model import check_meta

    meta = TOOLS_BY_NAME["remember"].describe()["inputSchema"]["properties"]["meta"]
    assert f"{MAX_META_BYTES:,} bytes" in meta["description"]
    assert f"nested at most {MAX_META_DEPTH} levels" in meta["description"]
    fits = {"note": "x" * (MAX_META_BYTES - len('{"note":""}'))}
    assert len(check_meta(fits).encode()) == MAX_META_BYTES
    with pytest.raises(TooLarge):
        check_meta({"note": fits["note"] + "x"})
    nested: dict = {}
    for _ in range(MAX_META_DEPTH - 1):
        nested = {"a": nested}
    check_meta(nested)
    with pytest.raises(InvalidParams):
        check_meta({"a": nested})


# -- text answers: bounded, and as the agent names things -----------------------------

class CannedBridge(Bridge):
    """A bridge answering each protocol method from ``answers`` (a value, or
    an EngineError to raise), recording the methods asked; it opens nothing."""

    def __init__(self, answers: dict):
        super().__init__(Path("."), use_daemon=False)
        self.answers, self.asked = answers, []

    def call(self, method: str, params: dict):
        self.asked.append(method)
        answer = self.answers[method]
        if isinstance(answer, Exception):
            raise answer
        return answer


def tool_text(bridge, name: str, arguments: dict) -> str:
    result = call_tool(bridge, name, arguments)
    (content,) = result["content"]
    return ("[isError] " if result.get("isError") else "") + content["text"]


def test_a_megabyte_of_written_text_is_shown_cut_saying_how_much_is_left_out():
    """One 2 MB document made recent_memory's text answer 2 MB (each row's
    whole text), and remember echoed the whole text it stored: more than an
    agent's tool answer may hold. Both show it as recall's bodies are shown,
    cut at MAX_SHOWN_LINE_CHARS with the count of characters left out; the
    JSON answer keeps the whole text."""
    big = "nightly backup log line " * 90000
    row = {"path": "backup-log", "kind": "doc", "format": "text", "score": 0.0,
           "chunk": {"symbol": None, "startLine": 0, "endLine": 0}, "body": big}
    stored = {"id": "backup-log", "kind": "doc", "text": big, "meta": {}}
    bridge = CannedBridge({"ctxls/recentMemory": {"items": [row, row | {"path": "note",
                                                                         "kind": "fact",
                                                                         "body": "short"}]},
                           "ctxls/remember": {"item": stored}})
    flat = " ".join(big.split())
    left_out = f"… [{len(flat) - MAX_SHOWN_LINE_CHARS:,} more characters]"

    recent = tool_text(bridge, "recent_memory", {})
    assert recent.splitlines() == [f"doc backup-log: {flat[:MAX_SHOWN_LINE_CHARS]}{left_out}",
                                   "fact note: short"]
    as_json = call_tool(bridge, "recent_memory", {"format": "json"})["structuredContent"]
    assert as_json["items"][0]["body"] == big

    wrote = tool_text(bridge, "remember", {"id": "backup-log", "kind": "doc", "text": big})
    assert wrote == f"remembered doc backup-log: {flat[:MAX_SHOWN_LINE_CHARS]}{left_out}"
    scoped = tool_text(bridge, "remember", {"id": "backup-log", "kind": "doc", "text": big,
                                            "scope": "team-a"})
    assert scoped.startswith("remembered doc backup-log in scope team-a: nightly backup")
    assert tool_text(bridge, "remember", {"id": "n", "text": "the deploy\n needs  FOO_URL"}) \
        == "remembered doc n: the deploy needs FOO_URL"  # short: whole, on one line
    assert call_tool(bridge, "remember", {"id": "backup-log", "text": big, "format": "json"}
                     )["structuredContent"]["text"] == big


def test_recent_memory_keeps_a_trailing_colon_of_an_id_or_a_text():
    """recent_memory's lines were stripped of ': ' characters at their end,
    which took the ':' of a text ending `run:` and, without bodies, of an id
    `todo:` (the id shown then was one `get` did not find)."""
    def row(key: str, body: str | None) -> dict:
        return {"path": key, "kind": "fact", "format": "text", "score": 0.0,
                "chunk": {"symbol": None, "startLine": 0, "endLine": 0}} | (
            {"body": body} if body is not None else {})

    with_bodies = CannedBridge({"ctxls/recentMemory": {"items": [
        row("release-steps", "Before a release, run:"), row("todo:", "an id ending in a colon")]}})
    assert tool_text(with_bodies, "recent_memory", {}).splitlines() == [
        "fact release-steps: Before a release, run:", "fact todo:: an id ending in a colon"]
    without = CannedBridge({"ctxls/recentMemory": {"items": [row("todo:", None),
                                                             row("release-steps", None)]}})
    assert tool_text(without, "recent_memory", {"body": False}).splitlines() == [
        "fact todo:", "fact release-steps"]


def test_engine_texts_name_the_tool_and_parameter_the_agent_uses():
    """recall's over-long query error said `use ctxls/locate` (the tool is
    locate) and assemble's abstention `under minScore 50` (the parameter is
    min_score): the protocol's names, where the bridge renamed only the
    fields of errors."""
    too_long = InvalidParams("query", "must be at most 10000 characters (for an issue or a log "
                                      "pasted whole, use ctxls/locate)")
    bridge = CannedBridge({"ctxls/recall": too_long, "ctxls/assemble": {
        "context": "", "citations": [], "abstained": True, "weak": True,
        "stats": {"note": "top score 1.8 is under minScore 50"}}})
    assert tool_text(bridge, "recall", {"query": "price"}) == (
        "[isError] ctxls error -32602: invalid param 'query': must be at most 10000 characters "
        "(for an issue or a log pasted whole, use locate)")
    abstained = call_tool(bridge, "assemble", {"query": "parse price", "min_score": 50})
    assert abstained["content"][0]["text"] == "(abstained: top score 1.8 is under min_score 50)"
    # The JSON is the protocol's answer: its note keeps the protocol's names.
    assert call_tool(bridge, "assemble", {"query": "p", "min_score": 50, "format": "json"}
                     )["structuredContent"]["stats"]["note"].endswith("under minScore 50")
    # A name is renamed whole, never inside a longer word or path.
    assert in_caller_names("minScores in pkg/ctxls/locate.py; see ctxls/locateAll",
                           TOOLS_BY_NAME["assemble"].caller_names) \
        == "minScores in pkg/ctxls/locate.py; see ctxls/locateAll"


def test_each_tool_sends_the_method_its_name_stands_for():
    """TOOL_OF_METHOD (a method in an engine's text -> the tool to name)
    is each tool's declared method: the one it sends first."""
    required = {"recall": {"query": "q"}, "locate": {"text": "t"}, "get": {"id": "a.py"},
                "impact": {"symbol": "f"}, "remember": {"id": "i", "text": "t"},
                "assemble": {"query": "q"}, "find_symbol": {"name": "f"},
                "outline": {"path": "a.py"}, "related": {"path": "a.py", "line": 1}}
    stop = InvalidParams("n", "stop here")
    for tool in TOOLS_BY_NAME.values():
        bridge = CannedBridge(collections.defaultdict(lambda: stop))
        call_tool(bridge, tool.name, required.get(tool.name, {}))
        assert bridge.asked[:1] == [tool.method], tool.name
    assert TOOL_OF_METHOD["ctxls/symbols"] == "find_symbol"
    assert TOOL_OF_METHOD["ctxls/similar"] == "related"
    assert len(TOOL_OF_METHOD) == len(TOOLS_BY_NAME)


# -- a clean exit ----------------------------------------------------------------------

def test_a_hosting_mcp_server_exits_quietly_with_a_client_on_its_socket(repo: Path):
    """Hosting the engine (no daemon ran), `ctxls mcp` whose stdin closed
    exited 0 but wrote asyncio's "Task was destroyed but it is pending!"
    (the socket's serving task) and, with another client on its socket,
    "Exception ignored in <coroutine SocketServer._serve>" ("Event loop is
    closed") to stderr, which agents' clients show as the server failing.
    Its tasks are now ended before the loop stops; the client on the socket
    reads the end of its connection."""
    from ctxls.daemon.client import DaemonClient, default_socket

    for attempt in range(3):  # the destroyed task was reported on most exits, not all
        mcp = subprocess.Popen([*CTXLS, "mcp", "--root", str(repo)], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               env={**os.environ, "CTXLS_LOG": "ERROR"})
        try:
            mcp.stdin.write((json.dumps(initialize(0, "2025-06-18")) + "\n").encode())
            mcp.stdin.write(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
            mcp.stdin.write((json.dumps(tool_call(1, "status")) + "\n").encode())
            mcp.stdin.flush()
            mcp.stdout.readline()  # initialize's answer
            status = json.loads(mcp.stdout.readline())["result"]["content"][0]["text"]
            assert "this process hosts the engine" in status, status
            other = DaemonClient.connect(default_socket(repo))  # a second agent, say
            assert other is not None
            assert other.request("ctxls/status", {})["root"] == str(repo.resolve())
            mcp.stdin.close()
            stderr = mcp.stderr.read().decode()
            assert mcp.wait(timeout=120) == 0
            with pytest.raises(ConnectionError):
                other.request("ctxls/status", {})  # its connection was ended, not left hanging
            other.close()
            assert stderr == "", stderr
        finally:
            if mcp.poll() is None:
                mcp.kill()
                mcp.wait()


# -- the message bound on stdin ----------------------------------------------------------

class OneLongLine:
    """A stream of one line of ``length`` bytes, then ``rest``, made as it is
    read; ``most`` is the longest piece one read handed out (what a reader
    holds of the line at once)."""

    def __init__(self, length: int, rest: bytes):
        self.left, self.ended, self.rest, self.most = length, False, io.BytesIO(rest), 0

    def readline(self, size: int) -> bytes:
        if self.left:
            piece = b"x" * min(size, self.left)
            self.left -= len(piece)
            if not self.left and len(piece) < size:
                piece, self.ended = piece + b"\n", True
        elif not self.ended:
            piece, self.ended = b"\n", True
        else:
            piece = self.rest.readline(size)
        self.most = max(self.most, len(piece))
        return piece


def test_a_line_over_the_message_bound_is_read_away_in_pieces_none_kept():
    """`ctxls mcp` read a stdin line of any length whole (a 200 MiB line: 20
    -> 811 MiB, and served); the LSP transports bound a message at 64 MiB. A
    line over the bound now comes as its length, read away in pieces: what is
    held at once stays within the bound, whatever the line's length; a line
    of the bound itself, with "\\n" or "\\r\\n", is a message."""
    from ctxls.daemon.framing import OversizedMessage
    from ctxls.daemon.mcp_stdio import READ_AWAY_PIECE, wire_lines

    bound = 1000
    stream = OneLongLine(50 * READ_AWAY_PIECE, b'{"next": 1}\n')
    first, second = wire_lines(stream, bound)
    assert isinstance(first, OversizedMessage) and first.length == 50 * READ_AWAY_PIECE
    assert second == b'{"next": 1}\n'
    assert stream.most <= max(bound + 2, READ_AWAY_PIECE)
    at_bound = b"y" * bound
    lines = list(wire_lines(io.BytesIO(at_bound + b"\n" + at_bound + b"\r\n" + at_bound + b"z\n"
                                       + at_bound + b"zz"), bound))
    assert lines[:2] == [at_bound + b"\n", at_bound + b"\r\n"]
    assert [line.length for line in lines[2:]] == [bound + 1, bound + 2]


def test_a_line_over_64_mib_is_answered_parse_error_and_the_next_is_served(repo: Path):
    """After initialize, a ping padded past 64 MiB was read whole and answered
    {"result": {}}: it is now answered -32700 with id null, as the LSP
    transports answer an over-bound body, and the next line is served."""
    from ctxls.daemon.framing import MAX_MESSAGE_BYTES

    mcp = McpProcess(repo)
    try:
        mcp.start("2025-06-18")
        head = b'{"jsonrpc": "2.0", "id": 2, "method": "ping", "params": {"pad": "'
        mcp.process.stdin.write(head)
        piece = b"a" * (1 << 20)
        for _ in range(MAX_MESSAGE_BYTES // len(piece)):
            mcp.process.stdin.write(piece)
        mcp.process.stdin.write(b'"}}\n')
        mcp.send({"jsonrpc": "2.0", "id": 3, "method": "ping"})
        refused = mcp.next()
        assert refused["id"] is None and refused["error"]["code"] == -32700, refused
        length = len(head) + MAX_MESSAGE_BYTES + 3
        assert f"a message of {length} bytes is over the 64 MiB bound" \
            in refused["error"]["message"]
        assert mcp.next() == {"jsonrpc": "2.0", "id": 3, "result": {}}
    finally:
        mcp.close()


def test_a_daemon_backed_tool_call_over_the_message_bound_is_answered_not_lost(repo: Path):
    """Through a running daemon, a 70 MiB locate text or recall query was
    sent as one message over the daemon's 64 MiB bound: the daemon ended the
    connection and the tool said "-32603: lost the daemon: Broken pipe". The
    locate text is now cut as the engine cuts it (answered as without a
    daemon), and the recall is refused before it is sent, naming the param."""
    subprocess.run([*CTXLS, "index", "--root", str(repo)], check=True, capture_output=True)
    daemon = subprocess.Popen([*CTXLS, "serve", "--root", str(repo), "--socket"],
                              stderr=subprocess.PIPE, text=True)
    bridge = Bridge(repo, use_daemon=True)
    try:
        said = ""
        while "until interrupted" not in said:
            line = daemon.stderr.readline()
            assert line, "daemon exited: " + said
            said += line
        threading.Thread(target=daemon.stderr.read, daemon=True).start()
        located = call_tool(bridge, "locate", {"text": "send_prepared failed\n"
                                                       + "word " * ((70 << 20) // 5)})
        assert not located.get("isError"), located
        assert bridge._access.via == "daemon"
        assert "pkg/session.py" in located["content"][0]["text"]
        recalled = call_tool(bridge, "recall", {"query": "q" * (70 << 20)})
        text = recalled["content"][0]["text"]
        assert recalled["isError"] and text.startswith("ctxls error -32602: invalid param "
                                                       "'query': the request is "), text
        assert "over the 64 MiB bound" in text and "lost the daemon" not in text
    finally:
        bridge.close()
        daemon.terminate()
        daemon.wait(60)


def test_a_parameter_after_a_slash_is_named_as_the_caller_types_it():
    """get's error said `the path 'm.py' with start_line/endLine` (MCP) and
    `--start-line/endLine` (CLI): the name after the slash was left as the
    protocol spells it, as if it were part of a path. A slash between two
    parameters is no path; a path's or a method's names stay as written."""
    from ctxls.daemon.cli_verbs import options_of_fields
    from ctxls.index.errors import StalePointer

    named = InvalidParams("startLine", "'m.py:1-2' names its lines already: give it alone, "
                                       "or the path 'm.py' with startLine/endLine")
    assert tool_text(CannedBridge({"ctxls/get": named}), "get",
                     {"id": "m.py:1-2", "start_line": 1}).endswith(
        "invalid param 'start_line': 'm.py:1-2' names its lines already: give it alone, "
        "or the path 'm.py' with start_line/end_line")
    stale = tool_text(CannedBridge({"ctxls/get": StalePointer("m.py")}), "get",
                      {"id": "m.py", "start_line": 1, "end_line": 2})
    assert "get it without start_line/end_line for its current text" in stale, stale
    assert in_caller_names(named.message, options_of_fields("get")).endswith(
        "the path 'm.py' with --start-line/--end-line")
    # After a slash that is not between parameters, nothing is renamed.
    kept = "see pkg/startLine/endLine.py, ctxls/endLine and x/endLine"
    assert in_caller_names(kept, TOOLS_BY_NAME["get"].caller_names) == kept
    assert in_caller_names(kept, options_of_fields("get")) == kept


def test_an_assembled_context_says_why_it_is_thin_without_a_blank_line_first():
    """assemble with no chunk fitting its budget answered
    '\\n(weak: no hit fits in 5 tokens)': the empty context, then the note on a
    line of its own. The note alone when the context is empty; after the
    context when there is one."""
    def assembled(context: str, note: str) -> dict:
        return {"context": context, "citations": [], "abstained": False, "weak": True,
                "stats": {"chunks": 1 if context else 0, "note": note}}

    nothing_fits = CannedBridge({"ctxls/assemble": assembled("", "no hit fits in 5 tokens")})
    assert tool_text(nothing_fits, "assemble", {"query": "q", "budget_tokens": 5}) \
        == "(weak: no hit fits in 5 tokens)"
    one_chunk = CannedBridge({"ctxls/assemble": assembled(
        "[1] a.py:1-2 f\ndef f():\n    pass\n", "only one relevant chunk was found: coverage may be thin")})
    assert tool_text(one_chunk, "assemble", {"query": "q"}) == (
        "[1] a.py:1-2 f\ndef f():\n    pass\n\n"
        "(weak: only one relevant chunk was found: coverage may be thin)")
