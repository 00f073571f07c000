"""`ctxls mcp`: the Model Context Protocol on stdio, for coding agents.

Each tool is one protocol request (docs/protocol.md) sent through
``EngineAccess``: to the running daemon when there is one (so the agent sees
the editor's unsaved buffers), else to an engine in this process. Errors come
back as tool errors carrying the protocol's code, never as a dead server.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any, Literal

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from ctxls import __version__
from ctxls.daemon.client import EngineAccess
from ctxls.index.errors import EngineError

# Parameter types the tools share (the protocol's kinds and modes).
RecallKind = Literal["code", "doc", "fact", "episode"]
RecallMode = Literal["hybrid", "lexical", "semantic"]
WrittenKind = Literal["fact", "episode", "doc"]

INSTRUCTIONS = """ctxls answers questions about the repository it serves: where code,
docs and written facts about a topic are (recall), which files an issue or
stack trace points at (locate), the exact current text of a
file or line range (get), what calls a symbol and how risky a change is (impact),
what was edited lately (recent_activity), and a token-budgeted context block
with citations (assemble). Facts you learn can be written down (remember) and
found again later by meaning. Line numbers are 0-based and inclusive."""


class Bridge:
    """The engine access behind the tools, re-opened if the daemon goes away."""

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
                    self._access = EngineAccess(self.root, use_daemon=self.use_daemon)
                try:
                    return self._access.request(method, params)
                except (ConnectionError, OSError):
                    # The daemon stopped: next attempt uses a new daemon or the store.
                    self._access = None
                    if attempt == 2:
                        raise
                except EngineError as exc:
                    # A ToolError's text reaches the agent; the code says what to fix.
                    raise ToolError(f"ctxls error {exc.code}: {exc.message}") from exc
        raise AssertionError("unreachable")

    def close(self) -> None:
        if self._access is not None:
            self._access.close()


def build_mcp(bridge: Bridge) -> MCPServer:
    mcp = MCPServer(name="ctxls", version=__version__, instructions=INSTRUCTIONS)

    @mcp.tool(description=(
        "Find where code, docs, facts or episodes about a topic are. Use before reading or "
        "editing code you have not located yet; natural-language questions and identifiers both "
        "work. Returns hits grouped by kind (or a flat list when `kind` is one string) with path, "
        "0-based inclusive line range, symbol and score; `partial: true` while the repository is "
        "still being indexed. Fails on an empty query or unknown kind (error -32602)."))
    def recall(query: str, kind: RecallKind | None = None,
               n: int = 10, body: bool = False, scope: str | None = None,
               mode: RecallMode | None = None) -> dict[str, Any]:
        return bridge.call("ctxls/recall", {"query": query, "kind": kind, "n": n, "body": body,
                                            "scope": scope, "mode": mode})

    @mcp.tool(description=(
        "Given a bug report, an issue or a stack trace (paste it whole), find the files most "
        "likely to need changing, best first. Each file comes with a score, `why` it was chosen "
        "(a traceback frame in the repository, a symbol the text names defined there, a path or "
        "module it mentions, an error message raised there, an import step, text similarity) and "
        "its best chunks as 0-based inclusive line ranges. Test and doc files are demoted unless "
        "`include_tests`. Use it first when handed an issue; then `get` the chunks. Fails on "
        "empty text (error -32602)."))
    def locate(text: str, n: int = 10, include_tests: bool = False) -> dict[str, Any]:
        return bridge.call("ctxls/locate", {"text": text, "n": n, "includeTests": include_tests})

    @mcp.tool(description=(
        "Read the current text of an indexed file (the editor's unsaved buffer if open), a line "
        "range of it, or a written memory by id. Use after recall to read exactly the lines it "
        "pointed at. A line range on a file changed since it was indexed fails with -32002 "
        "StalePointer (recall again); a path outside the repository fails with -32004; an "
        "unknown id returns null."))
    def get(id: str, start_line: int | None = None, end_line: int | None = None,
            scope: str | None = None) -> dict[str, Any] | None:
        return bridge.call("ctxls/get", {"id": id, "startLine": start_line, "endLine": end_line,
                                         "scope": scope})

    @mcp.tool(description=(
        "Before changing a function, method or class: who calls it (confirmed call sites with "
        "exact ranges), what it calls, and a change-risk bucket with hedges that say why the "
        "answer may be incomplete. Accepts qualified names like `Session.request`. Returns null "
        "when the symbol is defined nowhere; fails with -32001 when ripgrep cannot run."))
    def impact(symbol: str) -> dict[str, Any] | None:
        return bridge.call("ctxls/impact", {"symbol": symbol})

    @mcp.tool(description=(
        "Write down a fact, an episode (something that happened) or a document so that you or "
        "another agent can recall it later by meaning. The same id in the same scope replaces "
        "the earlier text. Fails with -32602 on a missing id/text or unknown kind, and -32003 "
        "when the daemon requires a scope."))
    def remember(id: str, text: str, kind: WrittenKind = "fact",
                 scope: str | None = None, meta: dict[str, Any] | None = None) -> dict[str, Any]:
        return bridge.call("ctxls/remember", {"id": id, "text": text, "kind": kind, "by": "agent",
                                              "scope": scope, "meta": meta})

    @mcp.tool(description=(
        "Remove written memory: one id, every id with a prefix, or all of a kind in a scope. "
        "Indexed files are never removed. Returns how many rows were removed."))
    def forget(id: str | None = None, id_prefix: str | None = None,
               kind: WrittenKind | None = None,
               scope: str | None = None) -> dict[str, Any]:
        return bridge.call("ctxls/forget", {"id": id, "idPrefix": id_prefix, "kind": kind,
                                            "scope": scope})

    @mcp.tool(description=(
        "What was being worked on: the functions and files edited recently (including unsaved "
        "editor changes), newest first, with edit counts. Use at the start of a session to pick "
        "up where the user left off."))
    def recent_activity(days: float = 7, limit: int = 20) -> dict[str, Any]:
        return bridge.call("ctxls/recentActivity", {"days": days, "limit": limit})

    @mcp.tool(description=(
        "The newest written facts or episodes, without a query (recall needs one). Use to see "
        "what was recorded lately."))
    def recent_memory(kind: Literal["fact", "episode"] | None = None, scope: str | None = None,
                      n: int = 10, body: bool = True) -> dict[str, Any]:
        return bridge.call("ctxls/recentMemory", {"kind": kind, "scope": scope, "n": n,
                                                  "body": body})

    @mcp.tool(description=(
        "The best context for a question that fits a token budget: whole chunks, best first, "
        "each under a numbered citation header; cite them as [n]. `abstained: true` with an empty "
        "context means nothing relevant was found; `weak: true` means little was found."))
    def assemble(query: str, budget_tokens: int = 2000,
                 kind: RecallKind | None = None,
                 min_score: float | None = None,
                 mode: RecallMode | None = None,
                 scope: str | None = None) -> dict[str, Any]:
        return bridge.call("ctxls/assemble", {"query": query, "budgetTokens": budget_tokens,
                                              "kind": kind, "minScore": min_score, "mode": mode,
                                              "scope": scope})

    @mcp.tool(description=(
        "The facts an agent should always keep in mind (pinned first, then human-written, then "
        "most recalled) as one stable text block within a character budget; good for a system "
        "prompt. Facts whose anchored code changed are marked stale."))
    def knowledge(budget_chars: int = 2000, scope: str | None = None) -> dict[str, Any]:
        return bridge.call("ctxls/knowledge", {"budgetChars": budget_chars, "scope": scope})

    @mcp.tool(description=(
        "Index health: files, chunks, vectors, pending work, whether indexing is running, the "
        "embedding model, the repository root and the store path."))
    def status() -> dict[str, Any]:
        return bridge.call("ctxls/status", {})

    return mcp


def run_mcp(root: Path, use_daemon: bool = True) -> int:
    bridge = Bridge(root, use_daemon)
    try:
        build_mcp(bridge).run("stdio")
    finally:
        bridge.close()
    return 0
