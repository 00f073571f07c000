"""`ctxls mcp`: the Model Context Protocol on stdio, for coding agents.

Each tool is one protocol request (docs/protocol.md) sent through
``EngineAccess``: to the running daemon when there is one (so the agent sees
the editor's unsaved buffers), else to an engine hosted in this process, which
indexes in the background and runs its embedding worker like a daemon would.
Errors come back as tool errors whose text starts ``ctxls error CODE:``, never
as a dead server.

Results are compact text by default (one line per hit, 1-based lines, the way
an agent reads grep output); ``format: "json"`` returns the protocol's JSON
(0-based fields) as structured content instead.
"""

from __future__ import annotations

import difflib
import json
import threading
from pathlib import Path
from typing import Annotated, Any, Literal

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field, ValidationError

from ctxls import __version__
from ctxls.daemon.formatting import (PLAIN, body_line, format_hits_human, human_locate,
                                     impact_lines, outline_text, past_end_text, similar_text,
                                     status_lines, symbols_text, weak_note)
from ctxls.daemon.client import EngineAccess
from ctxls.daemon.mcp_stdio import serve_stdio
from ctxls.index.errors import EngineError, InvalidParams

# Parameter types the tools share (the protocol's kinds and modes).
RecallKind = Literal["code", "doc", "config", "fact", "episode"]
RecallMode = Literal["hybrid", "lexical", "semantic"]
WrittenKind = Literal["fact", "episode", "doc"]

Scope = Annotated[str | None, Field(description=(
    "The memory tenant: its rows plus the shared tier. Leave it out unless you were given one."))]
Format = Annotated[Literal["text", "json"], Field(description=(
    "text (default): compact, one line per hit, 1-based lines. json: the protocol's full JSON "
    "(0-based startLine/endLine) as structured content."))]
Kind = Annotated[RecallKind | None, Field(description=(
    "Only this kind: code, doc (repository docs and written documents), fact or episode. "
    "Default: all kinds, grouped."))]
Mode = Annotated[RecallMode | None, Field(description=(
    "Ranking: hybrid (default: keywords and meaning), lexical (keywords only) or semantic "
    "(meaning only)."))]

READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True,
                            open_world_hint=False)

INSTRUCTIONS = """ctxls answers questions about the repository it serves: where code,
docs and written facts about a topic are (recall), which files an issue or
stack trace points at (locate), the exact current text of a
file or line range (get), what calls a symbol and how risky a change is (impact),
what was edited lately (recent_activity), and a token-budgeted context block
with citations (assemble). Facts you learn can be written down (remember) and
found again later by meaning. Answers are compact text with 1-based inclusive
line numbers (`path:16-18`), which is also what `get` takes; `format: "json"`
gives the protocol's JSON, whose startLine/endLine fields are 0-based."""


class Bridge:
    """The engine access behind the tools, re-opened if the daemon goes away.
    Without a daemon the engine is hosted here: indexed in the background, with
    its embedding worker, so answers say `partial` until vectors exist."""

    def __init__(self, root: Path, use_daemon: bool):
        self.root = root
        self.use_daemon = use_daemon
        self._access: EngineAccess | None = None
        self._lock = threading.Lock()

    def call(self, method: str, params: dict[str, Any]) -> Any:
        params = {k: v for k, v in params.items() if v is not None}
        with self._lock:
            for attempt in (1, 2):
                if self._access is None:
                    self._access = EngineAccess(self.root, use_daemon=self.use_daemon,
                                                refresh=False)
                    if self._access.via == "local":
                        self._access.host()
                try:
                    return self._access.request(method, params)
                except (ConnectionError, OSError):
                    # The daemon stopped: next attempt uses a new daemon or hosts the engine.
                    self._access = None
                    if attempt == 2:
                        raise
                except EngineError as exc:
                    # A ToolError's text reaches the agent; the code says what to fix.
                    raise ToolError(error_text(exc.code, exc.message)) from exc
        raise AssertionError("unreachable")

    @property
    def via(self) -> str:
        return self._access.via if self._access is not None else "local"

    def close(self) -> None:
        if self._access is not None:
            self._access.close()


def error_text(code: int, message: str) -> str:
    return f"ctxls error {code}: {message}"


def unknown_argument_error(name: str, known: list[str]) -> str:
    """-32602 naming an argument no tool parameter has, and the one meant.
    The SDK ignored such arguments: `assemble {budget: 600}` (the CLI's flag
    name) ran with the default budget and said nothing."""
    close = [k for k in known if k.startswith(name) or name.startswith(k)]
    close = close or difflib.get_close_matches(name, known, n=1, cutoff=0.6)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    return error_text(InvalidParams.code, f"unknown argument {name!r}{hint} "
                                          f"(this tool takes: {', '.join(known)})")


class CtxlsMCP(MCPServer):
    """Tool errors in the documented form: ``ctxls error CODE: message``, also
    for arguments the schema rejects (no pydantic text or links); every input
    schema is closed (``additionalProperties: false``) and enforced."""

    async def list_tools(self):
        tools = await super().list_tools()
        for tool in tools:
            tool.input_schema["additionalProperties"] = False
        return tools

    async def call_tool(self, name, arguments, context=None):
        tool = self._tool_manager.get_tool(name)
        if tool is not None and isinstance(arguments, dict):
            known = list(tool.parameters.get("properties", {}))
            for argument in arguments:
                if argument not in known:
                    raise ToolError(unknown_argument_error(argument, known))
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(cause, ValidationError):
                first = cause.errors()[0]
                param = ".".join(str(p) for p in first["loc"]) or "arguments"
                problem = first["msg"][:1].lower() + first["msg"][1:]
                raise ToolError(error_text(InvalidParams.code,
                                           f"invalid param {param!r}: {problem}")) from None
            text = str(exc)
            marker = text.find("ctxls error ")
            if marker > 0:  # the SDK prefixes "Error executing tool NAME: "
                raise ToolError(text[marker:]) from None
            if marker < 0 and text.startswith("Unknown tool"):
                raise ToolError(error_text(-32601, f"unknown tool {name!r}; list_tools "
                                           "names the tools")) from None
            raise


def answer(result: Any, fmt: str, text: str) -> CallToolResult:
    """``text`` in text format; the protocol's JSON (structured) in json format."""
    if fmt == "json":
        structured = result if isinstance(result, dict) else {"result": result}
        return CallToolResult(content=[TextContent(type="text", text=json.dumps(
            result, ensure_ascii=False, separators=(",", ":")))], structured_content=structured)
    return CallToolResult(content=[TextContent(type="text", text=text)])


def _partial_line(result: dict) -> str:
    if not result.get("partial"):
        return ""
    return f"\n(partial: {result.get('partialReason') or 'indexing is still running'})"


def recall_text(result: dict, kind: str | None, bodies: bool) -> str:
    groups = result.get("groups") or {kind: result.get("hits", [])}
    if not any(groups.values()):
        return "no hits" + _partial_line(result)
    return format_hits_human(groups, PLAIN, bodies=bodies) + weak_note(result) + _partial_line(result)


def build_mcp(bridge: Bridge) -> MCPServer:
    mcp = CtxlsMCP(name="ctxls", version=__version__, instructions=INSTRUCTIONS)

    @mcp.tool(
        title="Find code, docs or facts about a topic",
        annotations=READ_ONLY, structured_output=False, description=(
        "Find where code, docs, facts or episodes about a topic are. Use before reading or "
        "editing code you have not located yet; natural-language questions and identifiers both "
        "work. One line per hit: score, path:start-end (1-based, inclusive) and symbol; a fact "
        "shows its text. `(partial: why)` ends the answer while the index or its vectors are "
        "incomplete. Fails on an empty query or unknown kind (ctxls error -32602)."))
    def recall(query: Annotated[str, Field(description="What to look for: words, a question or "
                                                       "an identifier. Must not be empty.")],
               kind: Kind = None,
               n: Annotated[int, Field(description="Hits per kind, 1-200.")] = 10,
               body: Annotated[bool, Field(description="Also return each hit's text.")] = False,
               scope: Scope = None, mode: Mode = None,
               format: Format = "text") -> CallToolResult:
        result = bridge.call("ctxls/recall", {"query": query, "kind": kind, "n": n,
                                              "body": body or format == "text",
                                              "scope": scope, "mode": mode})
        if format == "json" and not body:
            for hits in (result.get("groups") or {"": result.get("hits", [])}).values():
                for hit in hits:
                    hit.pop("body", None)
        return answer(result, format, recall_text(result, kind, body))

    @mcp.tool(
        title="Locate the files a bug report points at",
        annotations=READ_ONLY, structured_output=False, description=(
        "Given a bug report, an issue or a stack trace (paste it whole), find the files most "
        "likely to need changing, best first. Each file comes with a score, `why` it was chosen "
        "(a traceback frame in the repository, a symbol the text names defined there, a path or "
        "module it mentions, an error message raised there, an import step, text similarity) and "
        "its best chunks as 1-based inclusive line ranges. Test and doc files are demoted unless "
        "`include_tests`. Use it first when handed an issue; then `get` the chunks. Fails on "
        "empty text (ctxls error -32602)."))
    def locate(text: Annotated[str, Field(description="The issue, bug report or stack trace, "
                                                      "whole.")],
               n: Annotated[int, Field(description="At most this many files.")] = 10,
               include_tests: Annotated[bool, Field(description=(
                   "Do not demote test and documentation files."))] = False,
               format: Format = "text") -> CallToolResult:
        result = bridge.call("ctxls/locate", {"text": text, "n": n, "includeTests": include_tests})
        return answer(result, format, human_locate(result))

    @mcp.tool(
        title="Read a file, a line range or a memory",
        annotations=READ_ONLY, structured_output=False, description=(
        "Read the current text of an indexed file (the editor's unsaved buffer if open), a line "
        "range of it, or a written memory by id. Use after recall to read exactly the lines it "
        "pointed at. Answers check their files first, so a range from the latest recall, locate "
        "or impact is current; a range kept from before the file changed fails with ctxls error "
        "-32002 StalePointer: get the file without lines, or recall again (its ranges are "
        "current). A path outside the repository fails with -32004; an unknown id answers "
        "`not found: ID`; before the first index completes, -32011 says how far it is."))
    def get(id: Annotated[str, Field(description=(
                "A repository-relative file path (as recall prints it) or a memory id."))],
            start_line: Annotated[int | None, Field(ge=1, description=(
                "First line to return, 1-based (as recall prints it)."))] = None,
            end_line: Annotated[int | None, Field(ge=1, description=(
                "Last line to return, 1-based and inclusive."))] = None,
            scope: Scope = None, format: Format = "text") -> CallToolResult:
        item = bridge.call("ctxls/get", {
            "id": id, "startLine": start_line - 1 if start_line else None,
            "endLine": end_line - 1 if end_line else None, "scope": scope})
        if item is None:
            text = (f"not found: {id} is neither an indexed file nor a written memory "
                    "(recall to find the right path)")
        elif past_end_text(item):
            text = f"not found: {past_end_text(item)}"
        else:
            meta = item.get("meta") or {}
            lines = ""
            if "startLine" in meta:
                lines = f" lines {meta['startLine'] + 1}-{meta['endLine'] + 1}"
            total = f" of {meta['lines']}" if "lines" in meta else ""
            text = f"{item['id']}{lines}{total}:\n{item.get('text') or ''}"
        return answer(item, format, text)

    @mcp.tool(
        title="Callers, callees and change risk of a symbol",
        annotations=READ_ONLY, structured_output=False, description=(
        "Before changing a function, method or class: who calls it (confirmed call sites), what "
        "it calls, and a change-risk bucket with hedges that say why the answer may be "
        "incomplete. Accepts qualified names like `Session.request`. Answers `not found: SYMBOL` "
        "when it is defined nowhere; fails with ctxls error -32001 when ripgrep cannot run."))
    def impact(symbol: Annotated[str, Field(description=(
                   "A function, method or class name, optionally qualified (Session.request)."))],
               n: Annotated[int, Field(ge=1, description=(
                   "List at most this many callers and callees (text format)."))] = 20,
               format: Format = "text") -> CallToolResult:
        result = bridge.call("ctxls/impact", {"symbol": symbol})
        if result is None:
            text = f"not found: {symbol} is not defined anywhere in the index"
        else:
            text = "\n".join(impact_lines(result, n, PLAIN))
        return answer(result, format, text)

    @mcp.tool(
        title="Write down a fact, episode or document",
        structured_output=False, annotations=ToolAnnotations(
        read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False),
        description=(
            "Write down a fact, an episode (something that happened) or a document so that you "
            "or another agent can recall it later by meaning. The same id in the same scope "
            "replaces the earlier text. Answers with what was stored. Fails with ctxls error "
            "-32602 on a missing id/text or unknown kind, and -32003 when the daemon requires a "
            "scope."))
    def remember(id: Annotated[str, Field(description=(
                     "A short stable name for it, like `deploy-needs-foo-url`."))],
                 text: Annotated[str, Field(description="What to remember.")],
                 kind: Annotated[WrittenKind, Field(description=(
                     "fact (default), episode (something that happened) or doc."))] = "fact",
                 scope: Scope = None,
                 meta: Annotated[dict[str, Any] | None, Field(description=(
                     "A JSON object stored with it, e.g. {\"pinned\": true} or "
                     "{\"anchor\": \"path/to/file.py\"}."))] = None,
                 format: Format = "text") -> CallToolResult:
        bridge.call("ctxls/remember", {"id": id, "text": text, "kind": kind, "by": "agent",
                                       "scope": scope, "meta": meta})
        stored = bridge.call("ctxls/get", {"id": id, "scope": scope, "log": False})
        stored_kind = (stored or {}).get("kind", kind)
        return answer(stored, format, f"remembered {stored_kind} {id}: {' '.join(text.split())}")

    @mcp.tool(
        title="Remove written memory",
        structured_output=False, annotations=ToolAnnotations(
        read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False),
        description=(
            "Remove written memory: one id, every id with a prefix, or all of a kind in a scope. "
            "Indexed files are never removed. Answers how many ids were removed."))
    def forget(id: Annotated[str | None, Field(description="The id to remove.")] = None,
               id_prefix: Annotated[str | None, Field(description=(
                   "Remove every id starting with this."))] = None,
               kind: Annotated[WrittenKind | None, Field(description=(
                   "Only this kind (with a scope, or with an id or prefix)."))] = None,
               scope: Scope = None, format: Format = "text") -> CallToolResult:
        result = bridge.call("ctxls/forget", {"id": id, "idPrefix": id_prefix, "kind": kind,
                                              "scope": scope})
        return answer(result, format, f"removed {result['removed']}")

    @mcp.tool(
        title="What was edited recently",
        annotations=READ_ONLY, structured_output=False, description=(
        "What was being worked on: the functions and files edited recently, newest first, with "
        "edit counts and who made the latest edit: (editor) for an editor's buffer, unsaved "
        "changes included, (disk) for a file written on disk (an agent, a formatter, a new "
        "file). Use at the start of a session to pick up where the user or agent left off."))
    def recent_activity(days: Annotated[float, Field(description="How far back, in days.")] = 7,
                        limit: Annotated[int, Field(description="At most this many rows.")] = 20,
                        format: Format = "text") -> CallToolResult:
        result = bridge.call("ctxls/recentActivity", {"days": days, "limit": limit})
        text = "\n".join(f"{i['id']}  {i.get('symbol') or '(module)'}  {i['edits']} edits"
                         + (f" ({i['origin']})" if i.get("origin") else "")
                         for i in result.get("items", [])) or "no recent edits"
        return answer(result, format, text)

    @mcp.tool(
        title="The newest written memory",
        annotations=READ_ONLY, structured_output=False, description=(
        "The newest written facts or episodes, without a query (recall needs one). Use to see "
        "what was recorded lately."))
    def recent_memory(kind: Annotated[Literal["fact", "episode"] | None, Field(description=(
                          "Only facts or only episodes (default both, and documents)."))] = None,
                      scope: Scope = None,
                      n: Annotated[int, Field(description="At most this many, 1-200.")] = 10,
                      body: Annotated[bool, Field(description="Include each text.")] = True,
                      format: Format = "text") -> CallToolResult:
        result = bridge.call("ctxls/recentMemory", {"kind": kind, "scope": scope, "n": n,
                                                    "body": body})
        text = "\n".join(f"{i['kind']} {i['path']}: {body_line(i, None)}".rstrip(": ")
                         for i in result.get("items", [])) or "nothing written yet"
        return answer(result, format, text)

    @mcp.tool(
        title="Context for a question within a token budget",
        annotations=READ_ONLY, structured_output=False, description=(
        "The best context for a question that fits a token budget: whole chunks, best first, "
        "each under a numbered citation header `[n] path:start-end symbol` (1-based lines); "
        "cite them as [n]. `(abstained: why)` means nothing relevant was found (the question "
        "may be about something this repository does not contain); `(weak: ...)` means little "
        "was found."))
    def assemble(query: Annotated[str, Field(description="The question to gather context for.")],
                 budget_tokens: Annotated[int, Field(description=(
                     "At most this many tokens of context, 1-200000."))] = 2000,
                 kind: Kind = None,
                 min_score: Annotated[float | None, Field(description=(
                     "Abstain when the top hit scores lower (compare with mode semantic)."))] = None,
                 mode: Mode = None, scope: Scope = None,
                 format: Format = "text") -> CallToolResult:
        result = bridge.call("ctxls/assemble", {"query": query, "budgetTokens": budget_tokens,
                                                "kind": kind, "minScore": min_score, "mode": mode,
                                                "scope": scope})
        note = (result.get("stats") or {}).get("note")
        if result.get("abstained"):
            text = f"(abstained: {note or 'nothing relevant found'})"
        else:
            text = result.get("context", "") + (f"\n(weak: {note})" if result.get("weak") and note
                                                 else "")
        return answer(result, format, text + _partial_line(result))

    @mcp.tool(
        title="The facts to keep in mind",
        annotations=READ_ONLY, structured_output=False, description=(
        "The facts an agent should always keep in mind (pinned first, then human-written, then "
        "most recalled) as one stable text block within a character budget; good for a system "
        "prompt. Facts whose anchored code changed are marked stale."))
    def knowledge(budget_chars: Annotated[int, Field(description=(
                      "At most this many characters, 1-200000."))] = 2000,
                  scope: Scope = None, format: Format = "text") -> CallToolResult:
        result = bridge.call("ctxls/knowledge", {"budgetChars": budget_chars, "scope": scope})
        # block is null both when no fact is written and when none fits the budget.
        return answer(result, format, result.get("block")
                      or f"no written fact fits in {budget_chars} characters (or none is written)")

    @mcp.tool(
        title="Index health and progress",
        annotations=READ_ONLY, structured_output=False, description=(
        "Index health: files, chunks, vectors, pending work and `state` (indexing, embedding, "
        "idle or ready: wait for ready before trusting ranking by meaning), the embedding "
        "model, the repository root and the store path."))
    def status(format: Format = "text") -> CallToolResult:
        result = bridge.call("ctxls/status", {})
        return answer(result, format, status_lines(result, bridge.via, PLAIN))

    @mcp.tool(
        title="Find definitions by name",
        annotations=READ_ONLY, structured_output=False, description=(
        "Find where a function, method, class or other definition is, by its name: exact, "
        "prefix, substring or fuzzy (the letters in order: `gsn` finds `get_session_name`), "
        "closest first. One line per definition: path:line (1-based, the line of its name), "
        "kind, qualified name, its whole line range and how the name matched. Faster and more "
        "exact than recall when you know the name. Answers `no definitions found` when none "
        "matches."))
    def find_symbol(name: Annotated[str, Field(description=(
                        "A name or a qualified tail (request, Session.request); any case."))],
                    match: Annotated[Literal["exact", "prefix", "substring", "fuzzy"], Field(
                        description="The loosest match allowed.")] = "fuzzy",
                    kind: Annotated[list[str] | None, Field(description=(
                        "Only these kinds (function, method, class, interface, struct, …)."))] = None,
                    n: Annotated[int, Field(ge=1, le=1000, description="At most this many.")] = 50,
                    format: Format = "text") -> CallToolResult:
        result = bridge.call("ctxls/symbols", {"query": name, "match": match, "kind": kind,
                                               "limit": n})
        return answer(result, format, symbols_text(result))

    @mcp.tool(
        title="A file's outline",
        annotations=READ_ONLY, structured_output=False, description=(
        "The definitions of one file, nested (methods under their class), each with the line "
        "of its name and its whole line range (1-based): to see what a file holds before "
        "reading it, or to pick the lines to `get`."))
    def outline(path: Annotated[str, Field(description=(
                    "A repository-relative file path (as recall prints it)."))],
                format: Format = "text") -> CallToolResult:
        result = bridge.call("ctxls/outline", {"path": path})
        return answer(result, format, outline_text(result))

    @mcp.tool(
        title="Code like the code at a location",
        annotations=READ_ONLY, structured_output=False, description=(
        "Find code like the code at path:line (other implementations, similar handlers, code "
        "to keep consistent with it): the chunks nearest to the one holding that line, by "
        "meaning when it has a vector, else by its identifiers; never that chunk itself. One "
        "line per hit as recall prints them."))
    def related(path: Annotated[str, Field(description="A repository-relative file path.")],
                line: Annotated[int, Field(ge=1, description="A line of it, 1-based.")],
                n: Annotated[int, Field(ge=1, le=100, description="At most this many.")] = 10,
                format: Format = "text") -> CallToolResult:
        result = bridge.call("ctxls/similar", {"path": path, "line": line - 1, "n": n})
        return answer(result, format, similar_text(result))

    return mcp


def run_mcp(root: Path, use_daemon: bool = True) -> int:
    bridge = Bridge(root, use_daemon)
    try:
        anyio.run(serve_stdio, build_mcp(bridge))
    finally:
        bridge.close()
    return 0
