"""`ctxls mcp`: the Model Context Protocol on stdio, for coding agents.

Each tool is one protocol request (docs/protocol.md) sent through
``EngineAccess``: to the running daemon when there is one (so the agent sees
the editor's unsaved buffers), else to an engine hosted in this process, which
indexes in the background and runs its embedding worker like a daemon would.
Errors come back as tool errors whose text starts ``ctxls error CODE:``, never
as a dead server; only a tool name no tool has is a protocol error (-32602),
as MCP has it.

A tool is one entry of ``TOOLS``: its name, title, description, parameters
(each with its JSON schema and description) and the function that runs it;
``mcp_stdio`` speaks the protocol. Arguments are checked against the closed
schema before anything runs: an unknown one is an error naming it (and the
parameter meant), a wrong type names the parameter as the agent typed it,
and so do the engine's own errors and notes (``budget_tokens``, never the
protocol's ``budgetTokens``; the tool ``locate``, never ``ctxls/locate``).

Results are compact text by default (one line per hit, 1-based lines, the way
an agent reads grep output); ``format: "json"`` returns the protocol's JSON
(0-based fields) as structured content instead.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable

from ctxls import __version__
from ctxls.daemon.client import TAKEOVER_ATTEMPTS, TAKEOVER_RETRY_S, DaemonNotAnswering, EngineAccess
from ctxls.daemon.formatting import (MAX_SHOWN_LINE_CHARS, PLAIN, assemble_text, body_line,
                                     format_hits_human, human_locate, impact_lines, in_caller_names,
                                     not_defined_text,
                                     outline_text, partial_note, past_end_text, shown_flat,
                                     similar_text, status_lines, symbols_text, weak_note)
from ctxls.daemon.mcp_stdio import McpStdioServer, UnknownTool
from ctxls.daemon.request_values import MAX_INT, MIN_INT, first_invalid
from ctxls.index.cancel import CancelToken
from ctxls.index.errors import EngineError, InvalidParams
from ctxls.index.scopes import GLOBAL, RESERVED_PREFIX
from ctxls.index.vocabulary import (AUTHORS, MAX_BUDGET_CHARS, MAX_BUDGET_TOKENS, MAX_DAYS,
                                    MAX_ID_CHARS, MAX_LOCATE_N, MAX_MEMORY_N, MAX_META_BYTES,
                                    MAX_META_DEPTH, MAX_NAME_CHARS, MAX_QUERY_CHARS, MAX_RECALL_N,
                                    MAX_RECENT_ITEMS, MAX_RELATED_N, MAX_SCOPE_CHARS,
                                    MAX_SYMBOLS_N, MAX_WRITE_BYTES, RECALL_KINDS, RECALL_MODES)

log = logging.getLogger(__name__)

INSTRUCTIONS = """ctxls answers questions about the repository it serves: where code,
docs and written facts about a topic are (recall), which files an issue or
stack trace points at (locate), the exact current text of a
file or line range (get), what calls a symbol and how risky a change is (impact),
what was edited lately (recent_activity), and a token-budgeted context block
with citations (assemble). Facts you learn can be written down (remember) and
found again later by meaning. Answers are compact text with 1-based inclusive
line numbers (`path:16-18`), which is also what `get` takes; `format: "json"`
gives the protocol's JSON, whose startLine/endLine fields are 0-based."""


class ToolError(Exception):
    """What a tool answers as an error: ``ctxls error CODE: message``."""

    def __init__(self, code: int, message: str):
        super().__init__(message)
        self.text = error_text(code, message)


class Bridge:
    """The engine access behind the tools, re-opened if the daemon goes away.
    Without a daemon the engine is hosted here: indexed in the background, with
    its embedding worker, so answers say `partial` until vectors exist; and
    this process is then the daemon, on the shared socket (``EngineAccess.host``).
    Calls run at once (the pool's threads): only opening the access is one at
    a time."""

    def __init__(self, root: Path, use_daemon: bool):
        self.root = root
        self.use_daemon = use_daemon
        self._access: EngineAccess | None = None
        self._lock = threading.Lock()
        self._call_here = threading.local()  # the cancel token of the tool call this thread runs

    @contextmanager
    def serving(self, token: CancelToken | None):
        """The block is one tool call: its requests stop when ``token`` is cancelled."""
        self._call_here.token = token
        try:
            yield
        finally:
            self._call_here.token = None

    def call(self, method: str, params: dict[str, Any]) -> Any:
        params = {k: v for k, v in params.items() if v is not None}
        token = getattr(self._call_here, "token", None)
        for attempt in range(1, TAKEOVER_ATTEMPTS + 1):
            access = self._opened()
            try:
                return access.request(method, params, token)
            except (ConnectionError, OSError) as exc:
                if access.via != "daemon":  # an error of the work itself, in this process
                    raise
                # The daemon stopped. The next attempt waits for the takeover
                # lock, so it uses the daemon an editor's proxy starts, or,
                # with nobody taking over, hosts the engine and becomes the
                # daemon those proxies replay their buffers to.
                with self._lock:
                    lost = self._access is access
                    if lost:
                        self._access = None
                if lost:
                    access.close()  # its connections lead to the daemon that stopped
                # One that stopped answering still holds the store: nobody
                # takes over, and asking again would only wait as long again.
                if attempt == TAKEOVER_ATTEMPTS or isinstance(exc, DaemonNotAnswering):
                    raise
                time.sleep(TAKEOVER_RETRY_S)
        raise AssertionError("unreachable")

    def _opened(self) -> EngineAccess:
        with self._lock:
            if self._access is None:
                access = EngineAccess(self.root, use_daemon=self.use_daemon, refresh=False)
                if access.via == "local":
                    access.host()  # raising (a daemon that does not answer): the next call looks again
                self._access = access
            return self._access

    def open_soon(self) -> threading.Thread:
        """Open the access now, in the background (once the handshake is
        done, which it must not slow down): without a daemon the index is
        then built while the agent gets going, not from its first tool call
        (which waited for it, or answered "index not ready"). A failure here
        is the first call's to report: it opens again."""
        def open_access() -> None:
            try:
                self._opened()
            except Exception:
                log.debug("opening %s ahead of the first call failed", self.root, exc_info=True)

        thread = threading.Thread(target=open_access, name="ctxls-mcp-open", daemon=True)
        thread.start()
        return thread

    @property
    def via(self) -> str:
        return self._access.via if self._access is not None else "local"

    def close(self) -> None:
        if self._access is not None:
            self._access.close()


def error_text(code: int, message: str) -> str:
    return f"ctxls error {code}: {message}"


# -- parameters ---------------------------------------------------------------------

class Param:
    """One tool parameter: its name as the agent types it, its JSON schema
    (``type``, ``enum``, ``minimum``, ``default``) and what it is."""

    def __init__(self, name: str, json_type: str, description: str, required: bool = False,
                 default: Any = None, enum: tuple[str, ...] | None = None,
                 minimum: int | None = None, maximum: int | None = None,
                 max_length: int | None = None, positive: bool = False,
                 non_empty: bool = False, not_blank: bool = False):
        """``minimum``, ``maximum``, ``max_length``, ``positive`` (> 0),
        ``non_empty`` (a string of a character or more) and ``not_blank`` (one
        that is not only whitespace) say in the schema the bounds the engine
        enforces (its constants), so that an agent's client can check a call
        before making it. An integer is at most 64 bits wide wherever it goes
        (request_values), so that is its range unless a narrower one is given."""
        self.name, self.json_type, self.required, self.default = name, json_type, required, default
        self.enum, self.minimum = enum, minimum
        if json_type == "integer":
            minimum = MIN_INT if minimum is None and not positive else minimum
            maximum = MAX_INT if maximum is None else maximum
        self.schema: dict[str, Any] = {"type": json_type, "description": description}
        if json_type == "array":
            self.schema["items"] = {"type": "string"}
        if enum is not None:
            self.schema["enum"] = list(enum)
        if minimum is not None:
            self.schema["minimum"] = minimum
        if maximum is not None:
            self.schema["maximum"] = maximum
        if positive:
            self.schema["exclusiveMinimum"] = 0
        if non_empty or not_blank:
            self.schema["minLength"] = 1
        if not_blank:
            self.schema["pattern"] = r"\S"  # unanchored: a non-whitespace character somewhere
        if max_length is not None:
            self.schema["maxLength"] = max_length
        if default is not None:
            self.schema["default"] = default

    def read(self, value: Any) -> Any:
        """``value`` as this parameter's type (a number or a boolean may come
        as a string, as agents send them), or ToolError naming the parameter."""
        if value is None:  # null: as if left out
            if self.required:
                self.refuse("is required")
            return self.default
        read = _READERS[self.json_type](value)
        if read is _INVALID:
            self.refuse(f"must be {_TYPE_WORDS[self.json_type]}")
        if self.enum is not None and read not in self.enum:
            self.refuse(f"must be one of {', '.join(self.enum)}")
        if self.minimum is not None and read < self.minimum:
            self.refuse(f"must be {self.minimum} or more")
        return read

    def refuse(self, problem: str) -> None:
        raise ToolError(InvalidParams.code, f"invalid param {self.name!r}: {problem}")


_INVALID = object()
_TYPE_WORDS = {"string": "a string", "integer": "an integer", "number": "a number",
               "boolean": "true or false", "object": "a JSON object",
               "array": "a list of strings (or one string)"}


def _integer(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            return _INVALID
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value if isinstance(value, int) and not isinstance(value, bool) else _INVALID


def _number(value: Any) -> Any:
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            return _INVALID
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value \
            or value in (float("inf"), float("-inf")):
        return _INVALID
    return value


def _boolean(value: Any) -> Any:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    return _INVALID


_READERS: dict[str, Callable[[Any], Any]] = {
    "string": lambda v: v if isinstance(v, str) else _INVALID,
    "integer": _integer, "number": _number, "boolean": _boolean,
    "object": lambda v: v if isinstance(v, dict) else _INVALID,
    # A list of strings; one string is a list of one (as agents often send it).
    "array": lambda v: ([v] if isinstance(v, str) else v
                        if isinstance(v, list) and all(isinstance(i, str) for i in v) else _INVALID)}

# Parameters several tools share.
SCOPE = Param("scope", "string", "The memory tenant: its rows plus the shared tier. Leave it out "
                                 f"unless you were given one. 1-{MAX_SCOPE_CHARS} characters; "
                                 f"names starting with {RESERVED_PREFIX} are reserved "
                                 f"({GLOBAL}: the shared tier alone).",
              non_empty=True, max_length=MAX_SCOPE_CHARS)
FORMAT = Param("format", "string", "text (default): compact, one line per hit, 1-based lines. "
                                   "json: the protocol's full JSON (0-based startLine/endLine) as "
                                   "structured content.", default="text", enum=("text", "json"))
KIND = Param("kind", "string", "Only this kind: code, doc (repository docs and written "
                               "documents), config (configuration files), fact or episode. "
                               "Default: all kinds, grouped.",
             enum=RECALL_KINDS)
MODE = Param("mode", "string", "Ranking: hybrid (default: keywords and meaning), lexical "
                               "(keywords only) or semantic (meaning only).", enum=RECALL_MODES)


def unknown_argument_error(name: str, known: list[str]) -> ToolError:
    """-32602 naming an argument no tool parameter has, and the one meant:
    `assemble {budget: 600}` (the CLI's flag name) must not run with the
    default budget and say nothing."""
    import difflib

    close = [k for k in known if k.startswith(name) or name.startswith(k)]
    close = close or difflib.get_close_matches(name, known, n=1, cutoff=0.6)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    return ToolError(InvalidParams.code, f"unknown argument {name!r}{hint} "
                                         f"(this tool takes: {', '.join(known)})")


# -- tools --------------------------------------------------------------------------

class Tool:
    """One MCP tool. ``run(bridge, args)`` gets every parameter by name (a
    left-out one as its default, or None) and returns ``answer(...)``.
    ``result`` describes the top-level fields of its JSON answer (format json)."""

    def __init__(self, name: str, title: str, description: str, params: tuple[Param, ...],
                 run: Callable[[Bridge, dict[str, Any]], dict], result: dict[str, str],
                 writes: bool = False, destructive: bool = False, idempotent: bool = True,
                 renamed: dict[str, str] | None = None, method: str | None = None):
        """``destructive``: a write that may replace or remove what is there
        (the protocol's hint; false says "only additive updates").
        ``idempotent``: the same call again changes nothing more.
        ``renamed``: the protocol fields ``run`` fills from a parameter of
        another name (find_symbol's ``name`` is the protocol's ``query``).
        ``method``: the protocol request it sends, when not ``ctxls/`` and its
        name in camelCase (find_symbol sends ``ctxls/symbols``)."""
        self.name, self.title, self.description = name, title, description
        self.method = method or f"ctxls/{camel_case(name)}"
        self.params = {param.name: param for param in params}
        # The protocol's field -> this tool's parameter, for the engine's errors.
        self.field_names = {camel_case(name): name for name in self.params if "_" in name} \
            | (renamed or {})
        self.run, self.result = run, result
        self.annotations = {"readOnlyHint": not writes, "destructiveHint": destructive,
                            "idempotentHint": idempotent, "openWorldHint": False}

    @property
    def caller_names(self) -> dict[str, str]:
        """What the agent calls the protocol's names in an engine's message or
        note: this tool's parameters, and every tool (by its method)."""
        return self.field_names | TOOL_OF_METHOD

    def describe(self) -> dict:
        return {"name": self.name, "title": self.title, "description": self.description,
                "inputSchema": {
                    "type": "object", "additionalProperties": False,
                    "properties": {name: p.schema for name, p in self.params.items()},
                    "required": [name for name, p in self.params.items() if p.required]},
                "outputSchema": {
                    "type": "object",
                    "description": "format json: the protocol's answer (docs/protocol.md, 0-based "
                                   "lines), or {\"result\": null} when there is none; format "
                                   "text: {\"text\": the compact answer}",
                    "properties": {"text": {"type": "string", "description": "format text: the "
                                            "answer as the text content says it"}}
                    | {field: {"description": what} for field, what in self.result.items()}},
                "annotations": self.annotations}

    def call(self, bridge: Bridge, arguments: dict[str, Any]) -> dict:
        for name in arguments:
            if name not in self.params:
                raise unknown_argument_error(name, list(self.params))
        if (invalid := first_invalid(arguments)) is not None:
            raise ToolError(-32602, f"invalid param {invalid[0]!r}: {invalid[1]}")
        args = {name: param.read(arguments.get(name)) for name, param in self.params.items()}
        try:
            return self.run(bridge, args)
        except EngineError as exc:
            raise ToolError(exc.code, in_caller_names(exc.message, self.caller_names)) from exc


def camel_case(name: str) -> str:
    """A tool parameter as the protocol spells it: ``budget_tokens`` is ``budgetTokens``."""
    first, *rest = name.split("_")
    return first + "".join(part.title() for part in rest)


def answer(result: Any, fmt: str, text: str) -> dict:
    """``text`` in text format; the protocol's JSON (structured) in json format."""
    if fmt == "json":
        structured = result if isinstance(result, dict) else {"result": result}
        return {"content": [{"type": "text", "text": json.dumps(
            result, ensure_ascii=False, separators=(",", ":"))}], "structuredContent": structured}
    return {"content": [{"type": "text", "text": text}], "structuredContent": {"text": text}}


def recall_text(result: dict, kind: str | None, bodies: bool) -> str:
    groups = result.get("groups") or {kind: result.get("hits", [])}
    if not any(groups.values()):
        return "no hits" + partial_note(result)
    return format_hits_human(groups, PLAIN, bodies=bodies) + weak_note(result) + partial_note(result)


def recall(bridge: Bridge, a: dict) -> dict:
    result = bridge.call("ctxls/recall", {"query": a["query"], "kind": a["kind"], "n": a["n"],
                                          "body": a["body"] or a["format"] == "text",
                                          "scope": a["scope"], "mode": a["mode"]})
    if a["format"] == "json" and not a["body"]:
        for hits in (result.get("groups") or {"": result.get("hits", [])}).values():
            for hit in hits:
                hit.pop("body", None)
    return answer(result, a["format"], recall_text(result, a["kind"], a["body"]))


def locate(bridge: Bridge, a: dict) -> dict:
    result = bridge.call("ctxls/locate", {"text": a["text"], "n": a["n"],
                                          "includeTests": a["include_tests"]})
    return answer(result, a["format"], human_locate(result))


def get(bridge: Bridge, a: dict) -> dict:
    start, end = a["start_line"], a["end_line"]
    item = bridge.call("ctxls/get", {"id": a["id"], "startLine": start - 1 if start else None,
                                     "endLine": end - 1 if end else None, "scope": a["scope"]})
    if item is None:
        text = (f"not found: {a['id']} is neither an indexed file nor a written memory "
                "(recall to find the right path)")
    elif past_end_text(item):
        text = f"not found: {past_end_text(item)}"
    else:
        meta = item.get("meta") or {}
        lines = f" lines {meta['startLine'] + 1}-{meta['endLine'] + 1}" if "startLine" in meta else ""
        total = f" of {meta['lines']}" if "lines" in meta else ""
        text = f"{item['id']}{lines}{total}:\n{item.get('text') or ''}"
    return answer(item, a["format"], text)


def impact(bridge: Bridge, a: dict) -> dict:
    result = bridge.call("ctxls/impact", {"symbol": a["symbol"]})
    if result is None:
        text = f"not found: {not_defined_text(a['symbol'], bridge.call('ctxls/status', {}))}"
    else:
        text = "\n".join(impact_lines(result, a["n"], PLAIN))
    return answer(result, a["format"], text)


def remember(bridge: Bridge, a: dict) -> dict:
    # echo: the row written, not what ctxls/get answers for its id (an
    # indexed file's path answers the file).
    stored = bridge.call("ctxls/remember", {"id": a["id"], "text": a["text"], "kind": a["kind"],
                                            "by": "agent", "scope": a["scope"], "meta": a["meta"],
                                            "echo": True}).get("item")
    stored_kind = (stored or {}).get("kind", a["kind"])
    in_scope = f" in scope {a['scope']}" if a["scope"] is not None else ""
    # The text shown cut as recent_memory shows it: a 10 MiB write echoed whole
    # made a 10 MB answer. The cut says how much is left out; the JSON keeps it all.
    return answer(stored, a["format"],
                  f"remembered {stored_kind} {a['id']}{in_scope}: {shown_flat(a['text'])}")


def forget(bridge: Bridge, a: dict) -> dict:
    result = bridge.call("ctxls/forget", {"id": a["id"], "idPrefix": a["id_prefix"],
                                          "kind": a["kind"], "by": a["by"], "scope": a["scope"]})
    return answer(result, a["format"], f"removed {result['removed']}")


def recent_activity(bridge: Bridge, a: dict) -> dict:
    result = bridge.call("ctxls/recentActivity", {"days": a["days"], "limit": a["limit"]})
    text = "\n".join(f"{i['id']}  {i.get('symbol') or '(module)'}  {i['edits']} edits"
                     + (f" ({i['origin']})" if i.get("origin") else "")
                     for i in result.get("items", [])) or "no recent edits"
    return answer(result, a["format"], text)


def recent_memory(bridge: Bridge, a: dict) -> dict:
    result = bridge.call("ctxls/recentMemory", {"kind": a["kind"], "scope": a["scope"],
                                                "n": a["n"], "body": a["body"]})
    text = "\n".join(written_row_line(i) for i in result.get("items", [])) or "nothing written yet"
    return answer(result, a["format"], text)


def written_row_line(item: dict) -> str:
    """`KIND ID: its text` (cut past MAX_SHOWN_LINE_CHARS, saying so), or
    `KIND ID` when asked without bodies; the id and text are shown as written,
    a trailing `:` of either kept."""
    head = f"{item['kind']} {item['path']}"
    return f"{head}: {body_line(item, None)}" if "body" in item else head


def assemble(bridge: Bridge, a: dict) -> dict:
    result = bridge.call("ctxls/assemble", {"query": a["query"], "budgetTokens": a["budget_tokens"],
                                            "kind": a["kind"], "minScore": a["min_score"],
                                            "mode": a["mode"], "scope": a["scope"]})
    return answer(result, a["format"], assemble_text(result, TOOLS_BY_NAME["assemble"].caller_names))


def knowledge(bridge: Bridge, a: dict) -> dict:
    result = bridge.call("ctxls/knowledge", {"budgetChars": a["budget_chars"], "scope": a["scope"]})
    # block is null both when no fact is written and when none fits the budget.
    return answer(result, a["format"], result.get("block") or (
        f"no written fact fits in {a['budget_chars']} characters (or none is written)"))


def status(bridge: Bridge, a: dict) -> dict:
    result = bridge.call("ctxls/status", {})
    return answer(result, a["format"], status_lines(result, bridge.via, PLAIN))


def find_symbol(bridge: Bridge, a: dict) -> dict:
    result = bridge.call("ctxls/symbols", {"query": a["name"], "match": a["match"],
                                           "kind": a["kind"], "limit": a["n"]})
    return answer(result, a["format"], symbols_text(result))


def outline(bridge: Bridge, a: dict) -> dict:
    result = bridge.call("ctxls/outline", {"path": a["path"]})
    return answer(result, a["format"], outline_text(result))


def related(bridge: Bridge, a: dict) -> dict:
    result = bridge.call("ctxls/similar", {"path": a["path"], "line": a["line"] - 1, "n": a["n"]})
    return answer(result, a["format"], similar_text(result))


WRITTEN_KINDS = ("fact", "episode", "doc")
PARTIAL_FIELDS = {"partial": "true while the index or its vectors are incomplete",
                  "partialReason": "why the answer is partial"}

TOOLS = (
    Tool("recall", "Find code, docs or facts about a topic", (
        "Find where code, docs, facts or episodes about a topic are. Use before reading or "
        "editing code you have not located yet; natural-language questions and identifiers both "
        "work. One line per hit: score, path:start-end (1-based, inclusive) and symbol; a fact "
        "shows its text. `(partial: why)` ends the answer while the index or its vectors are "
        "incomplete. Fails on an empty query or unknown kind (ctxls error -32602)."),
        (Param("query", "string", "What to look for: words, a question or an identifier. Must "
                                  "not be empty.", required=True, max_length=MAX_QUERY_CHARS,
               not_blank=True),
         KIND, Param("n", "integer", "Hits per kind, 1-200.", default=10, minimum=1,
                          maximum=MAX_RECALL_N),
         Param("body", "boolean", "Also return each hit's text.", default=False),
         SCOPE, MODE, FORMAT),
        recall, {"hits": "the hits, best first (with kind)", "groups": "the hits by kind "
                 "(without kind)", "weak": "true when every hit is probably unrelated",
                 "weakReason": "why the hits are weak"} | PARTIAL_FIELDS),
    Tool("locate", "Locate the files a bug report points at", (
        "Given a bug report, an issue or a stack trace (paste it whole), find the files most "
        "likely to need changing, best first. Each file comes with a score, `why` it was chosen "
        "(a traceback frame in the repository, a symbol the text names defined there, a path or "
        "module it mentions, an error message raised there, an import step, text similarity) and "
        "its best chunks as 1-based inclusive line ranges. Test and doc files are demoted unless "
        "`include_tests`. Use it first when handed an issue; then `get` the chunks. Fails on "
        "empty text (ctxls error -32602)."),
        (Param("text", "string", "The issue, bug report or stack trace, whole (past 40,000 "
                                 "characters its first and last 20,000 are read).", required=True,
               not_blank=True),
         Param("n", "integer", "At most this many files.", default=10, minimum=1,
               maximum=MAX_LOCATE_N),
         Param("include_tests", "boolean", "Do not demote test and documentation files.",
               default=False),
         FORMAT),
        locate, {"files": "the files, best first, each with score, why and chunks"}
        | PARTIAL_FIELDS),
    Tool("get", "Read a file, a line range or a memory", (
        "Read the current text of an indexed file (the editor's unsaved buffer if open), a line "
        "range of it, or a written memory by id. Use after recall to read exactly the lines it "
        "pointed at. Answers check their files first, so a range from the latest recall, locate "
        "or impact is current; a range kept from before the file changed fails with ctxls error "
        "-32002 StalePointer: get the file without lines, or recall again (its ranges are "
        "current). A path outside the repository fails with -32004; an unknown id answers "
        "`not found: ID`; before the first index completes, -32011 says how far it is."),
        (Param("id", "string", "A repository-relative file path (as recall prints it) or a "
                               "memory id; a location as answers print it "
                               "(`pkg/core.py:16-18`) gives those lines.", required=True,
               non_empty=True),
         Param("start_line", "integer", "First line to return, 1-based (as recall prints it).",
               minimum=1),
         Param("end_line", "integer", "Last line to return, 1-based and inclusive.", minimum=1),
         SCOPE, FORMAT),
        get, {"id": "the path or memory id", "text": "the text", "kind": "code, doc, config, "
              "fact, episode", "meta": "startLine, endLine (0-based) and lines of a file", 
              "result": "null: no such file or memory"}),
    Tool("impact", "Callers, callees and change risk of a symbol", (
        "Before changing a function, method or class: who calls it (confirmed call sites), what "
        "it calls, and a change-risk bucket with hedges that say why the answer may be "
        "incomplete. Accepts qualified names like `Session.request`. Answers `not found: SYMBOL` "
        "when it is defined nowhere; fails with ctxls error -32001 when ripgrep cannot run."),
        (Param("symbol", "string", "A function, method or class name, optionally qualified "
                                   "(Session.request).", required=True, max_length=MAX_NAME_CHARS,
               not_blank=True),
         Param("n", "integer", "List at most this many callers and callees (text format).",
               default=20, minimum=1),
         FORMAT),
        impact, {"symbol": "the symbol", "risk": "the change-risk bucket",
                 "callers": "call sites (confirmed or not)", "callees": "what it calls",
                 "hedges": "why the answer may be incomplete",
                 "result": "null: the symbol is defined nowhere"}),
    Tool("remember", "Write down a fact, episode or document", (
        "Write down a fact, an episode (something that happened) or a document so that you or "
        "another agent can recall it later by meaning. The same id in the same scope replaces "
        "the earlier text. Answers with what was stored (its text on one line, cut past "
        f"{MAX_SHOWN_LINE_CHARS} characters). Fails with ctxls error -32602 on a "
        "missing id/text or unknown kind, and -32003 when the daemon requires a scope."),
        (Param("id", "string", "A short stable name for it, like `deploy-needs-foo-url`, on "
                               "one line (no control characters).",
               required=True, max_length=MAX_ID_CHARS, non_empty=True),
         # maxLength counts characters, the bound bytes: it is the bound's loose side.
         Param("text", "string", f"What to remember: at most {MAX_WRITE_BYTES:,} bytes as "
                                 f"UTF-8 ({MAX_WRITE_BYTES >> 20} MiB).", required=True,
               not_blank=True, max_length=MAX_WRITE_BYTES),
         Param("kind", "string", "fact (default), episode (something that happened) or doc.",
               default="fact", enum=WRITTEN_KINDS),
         SCOPE,
         # JSON Schema has no keyword for either bound: the description states them.
         Param("meta", "object", "A JSON object stored with it, e.g. {\"pinned\": true} or "
                                 "{\"anchor\": \"path/to/file.py\"}: at most "
                                 f"{MAX_META_BYTES:,} bytes of JSON as UTF-8 "
                                 f"({MAX_META_BYTES >> 10} KiB), nested at most {MAX_META_DEPTH} "
                                 "levels deep."),
         FORMAT),
        remember, {"id": "its id", "text": "what was stored", "kind": "fact, episode or doc",
                   "provenance": "who wrote it (agent)"},
        # The same id replaces its text; a repeat re-dates the row (recent_memory's order,
        # an episode's time).
        writes=True, destructive=True, idempotent=False),
    Tool("forget", "Remove written memory", (
        "Remove written memory: one id, every id with a prefix, or all of a kind in a scope. "
        "Indexed files are never removed. Answers how many ids were removed."),
        (Param("id", "string", "The id to remove.", max_length=MAX_ID_CHARS, non_empty=True),
         Param("id_prefix", "string", "Remove every id starting with this.",
               max_length=MAX_ID_CHARS, non_empty=True),
         Param("kind", "string", "Only this kind (with a scope, with by, or with an id or "
                                 "prefix).", enum=WRITTEN_KINDS),
         Param("by", "string", "Only what this author wrote (human or agent).", enum=AUTHORS),
         SCOPE, FORMAT),
        forget, {"removed": "how many ids were removed"}, writes=True, destructive=True),
    Tool("recent_activity", "What was edited recently", (
        "What was being worked on: the functions and files edited recently, newest first, with "
        "edit counts and who made the latest edit: (editor) for an editor's buffer, unsaved "
        "changes included, (disk) for a file written on disk (an agent, a formatter, a new "
        "file). Use at the start of a session to pick up where the user or agent left off."),
        (Param("days", "number", "How far back, in days.", default=7, positive=True,
               maximum=MAX_DAYS),
         Param("limit", "integer", "At most this many rows.", default=20, minimum=1,
               maximum=MAX_RECENT_ITEMS),
         FORMAT),
        recent_activity, {"items": "the edited files and functions, newest first"}),
    Tool("recent_memory", "The newest written memory", (
        "The newest written facts or episodes, without a query (recall needs one). Use to see "
        "what was recorded lately."),
        (Param("kind", "string", "Only facts or only episodes (default both, and documents).",
               enum=("fact", "episode")),
         SCOPE, Param("n", "integer", "At most this many, 1-200.", default=10, minimum=1,
                      maximum=MAX_MEMORY_N),
         Param("body", "boolean", "Include each text, on one line (past "
                                  f"{MAX_SHOWN_LINE_CHARS} characters cut, saying how many are "
                                  "left out: get the id for all of it).", default=True),
         FORMAT),
        recent_memory, {"items": "the written rows, newest first"}),
    Tool("assemble", "Context for a question within a token budget", (
        "The best context for a question that fits a token budget: whole chunks, best first, "
        "each under a numbered citation header `[n] path:start-end symbol` (1-based lines); "
        "cite them as [n]. `(abstained: why)` means nothing relevant was found (the question "
        "may be about something this repository does not contain); `(weak: ...)` means little "
        "was found."),
        (Param("query", "string", "The question to gather context for.", required=True,
               max_length=MAX_QUERY_CHARS, not_blank=True),
         Param("budget_tokens", "integer", "At most this many tokens of context, 1-200000.",
               default=2000, minimum=1, maximum=MAX_BUDGET_TOKENS),
         KIND,
         Param("min_score", "number", "Abstain when the top hit scores lower (compare with mode "
                                      "semantic)."),
         MODE, SCOPE, FORMAT),
        assemble, {"context": "the cited context block", "citations": "what each [n] cites",
                   "abstained": "true when nothing relevant was found",
                   "stats": "counts, and a note saying why it abstained or is weak"}
        | PARTIAL_FIELDS),
    Tool("knowledge", "The facts to keep in mind", (
        "The facts an agent should always keep in mind (pinned first, then human-written, then "
        "most recalled) as one stable text block within a character budget; good for a system "
        "prompt. Facts whose anchored code changed are marked stale."),
        (Param("budget_chars", "integer", "At most this many characters, 1-200000.",
               default=2000, minimum=1, maximum=MAX_BUDGET_CHARS),
         SCOPE, FORMAT),
        knowledge, {"block": "the text block, or null when no fact fits or none is written"}),
    Tool("status", "Index health and progress", (
        "Index health: files, chunks, vectors, pending work and `state` (indexing, embedding, "
        "idle or ready: wait for ready before trusting ranking by meaning), the embedding "
        "model, the repository root and the store path."),
        (FORMAT,),
        status, {"state": "indexing, embedding, idle or ready", "ready": "true once every "
                 "chunk has a vector", "files": "indexed files", "chunks": "indexed chunks",
                 "root": "the repository", "dbPath": "the store"}),
    Tool("find_symbol", "Find definitions by name", (
        "Find where a function, method, class or other definition is, by its name: exact, "
        "prefix, substring or fuzzy (the letters in order: `gsn` finds `get_session_name`), "
        "closest first. One line per definition: path:line (1-based, the line of its name), "
        "kind, qualified name, its whole line range and how the name matched. Faster and more "
        "exact than recall when you know the name. Answers `no definitions found` when none "
        "matches."),
        (Param("name", "string", "A name or a qualified tail (request, Session.request); any "
                                 "case.", required=True, max_length=MAX_NAME_CHARS,
               not_blank=True),
         Param("match", "string", "The loosest match allowed.", default="fuzzy",
               enum=("exact", "prefix", "substring", "fuzzy")),
         Param("kind", "array", "Only these kinds (function, method, class, interface, struct, "
                                "…)."),
         Param("n", "integer", "At most this many.", default=50, minimum=1,
               maximum=MAX_SYMBOLS_N),
         FORMAT),
        find_symbol, {"symbols": "the definitions, closest match first: path, line (0-based, "
                      "its name's), startLine/endLine, kind, symbol, match"},
        renamed={"query": "name", "limit": "n"}, method="ctxls/symbols"),
    Tool("outline", "A file's outline", (
        "The definitions of one file, nested (methods under their class), each with the line "
        "of its name and its whole line range (1-based): to see what a file holds before "
        "reading it, or to pick the lines to `get`."),
        (Param("path", "string", "A repository-relative file path (as recall prints it).",
               required=True),
         FORMAT),
        outline, {"path": "the file", "uri": "its URI", "symbols": "its definitions, nested "
                  "(children)"}),
    Tool("related", "Code like the code at a location", (
        "Find code like the code at path:line (other implementations, similar handlers, code "
        "to keep consistent with it): the chunks nearest to the one holding that line, by "
        "meaning when it has a vector, else by its identifiers; never that chunk itself. One "
        "line per hit as recall prints them."),
        (Param("path", "string", "A repository-relative file path.", required=True),
         Param("line", "integer", "A line of it, 1-based.", required=True, minimum=1),
         Param("n", "integer", "At most this many.", default=10, minimum=1,
               maximum=MAX_RELATED_N),
         FORMAT),
        related, {"origin": "the chunk at the line", "hits": "the code like it, nearest first",
                  "mode": "semantic (its vector) or lexical (its identifiers)"},
        method="ctxls/similar"),
)
TOOLS_BY_NAME = {tool.name: tool for tool in TOOLS}
# The protocol's methods as the agent knows them: an engine's text that says
# "use ctxls/locate" means the tool locate.
TOOL_OF_METHOD = {tool.method: tool.name for tool in TOOLS}


def call_tool(bridge: Bridge, name: str, arguments: dict, token: CancelToken | None = None) -> dict:
    """A ``tools/call`` result; every failure is a tool error ``ctxls error CODE: ...``,
    but for a name no tool has: UnknownTool, which the wire answers as a protocol
    error (-32602). ``token`` cancelled (the agent's ``notifications/cancelled``)
    stops the work."""
    tool = TOOLS_BY_NAME.get(name)
    if tool is None:
        raise UnknownTool(name)
    try:
        with bridge.serving(token):
            return tool.call(bridge, arguments)
    except ToolError as exc:
        text = exc.text
    except DaemonNotAnswering as exc:  # it says which process, and what to do
        text = error_text(-32603, str(exc))
    except (ConnectionError, OSError) as exc:
        text = error_text(-32603, f"lost the daemon: {exc}")
    except Exception as exc:  # a bug must not end the agent's session
        log.exception("tool %s failed", name)
        text = error_text(-32603, f"internal error: {type(exc).__name__}: {exc}")
    return {"content": [{"type": "text", "text": text}], "isError": True}


def run_mcp(root: Path, use_daemon: bool = True) -> int:
    bridge = Bridge(root, use_daemon)
    server = McpStdioServer("ctxls", __version__, INSTRUCTIONS,
                            lambda: [tool.describe() for tool in TOOLS],
                            lambda name, arguments, token: call_tool(bridge, name, arguments, token),
                            on_initialized=bridge.open_soon)
    try:
        server.run()
    finally:
        bridge.close()
    return 0
