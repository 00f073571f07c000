"""Attacker sweep of the real `ctxls serve` (issue 15; `git show 98206f9:BENCHMARKS.md`, "Attacker
sweep, fifth session" and "Hardening, sixth session"): the mechanical probe
families, re-runnable.

1. params: every custom request with each param replaced by a bad value
   (null, wrong types, negative, huge, fractional, path text, 5,000
   characters), plus an extra param and non-object params;
2. uris: every document request, ctxls/impact, get/node/related/index, and a
   didSave/didClose/watched-file event, for URIs and paths outside the root,
   through links out of it, percent-encoded and with other schemes.

Sixth session (each checks its own rule, see ``sixth_session``):

3. answers: three 6 MiB facts recalled, listed and paged with bodies: every
   answer at most the 16 MiB body bound (plus its JSON), `truncated` set;
4. edits: 20,000 incremental edits of a 900 KB buffer in one didChange (a
   status must answer after them), then an inverted range (the buffer keeps
   its last good text);
5. floods: 3,000 pipelined recalls (all answered), a watched-files event of
   200,000 files, `ctxls/index` with 100,000 pathspecs (-32602);
6. names: a file whose name is not UTF-8 (skipped; the pass completes);
7. mcp: lines the MCP SDK cannot read, each refused by `ctxls mcp` (a tool's bad
   argument as a tool error, `isError`; anything else as a JSON-RPC error).

Seventh session (``seventh_session``):

8. framing: stdio header blocks pygls could not read (no, negative, 0 or
   non-numeric Content-Length, an understated one, a 1 MB header line):
   each answered -32700 and the request after it answered; lenient headers
   (spaces, LF line ends, lower case) served; notification methods sent
   with an id (-32600); a socket `$/cancelRequest` of odd shapes (the
   connection and its request in flight keep their answers);
9. escapes: URIs whose percent-escapes are not UTF-8 or hold `%2F` (null
   answers, never the file `\ufffd\ufffd.py` or `a/b.py` they decode to).

Twenty-fifth session:

10. gitconfig: the repository's ``.git/config`` names a program at
    ``core.fsmonitor``, ``core.pager``, ``diff.external``, ``gpg.program``
    and a hooks folder; none may run during the whole sweep.

The repository carries links out of its root to files holding a marker
(tests/test_symlinks.py). Every probe is time-boxed; a probe fails when it
gets no answer, -32603, or an answer holding the marker or /etc/passwd's
first line, or when the daemon died. Stored memory is checked at the end.

Usage: .venv/bin/python bench/attack_sweep.py   (prints a JSON report; exit 1 on a failure)
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

from conftest import SAMPLE_FILES, write_tree  # noqa: E402
from rawrpc import StdioDaemon, frame, socket_connection  # noqa: E402
from test_symlinks import MARKER, plant_links  # noqa: E402

TIMEOUT_S = 30.0
TEMPLATES = {
    "ctxls/status": {},
    "ctxls/index": {"paths": ["pkg"], "force": False},
    "ctxls/recall": {"query": "session", "kind": "code", "n": 5, "body": True, "scope": "t",
                     "log": True, "mode": "lexical"},
    "ctxls/get": {"id": "pkg/session.py", "startLine": 0, "endLine": 3, "scope": "t"},
    "ctxls/locate": {"text": "Session.request fails", "n": 5, "includeTests": True},
    "ctxls/impact": {"symbol": "send_prepared"},
    "ctxls/related": {"id": "pkg/session.py", "dir": "in", "hops": 2},
    "ctxls/node": {"id": "pkg/session.py"},
    "ctxls/remember": {"id": "k", "text": "t", "kind": "fact", "by": "human", "occurredAt": 1,
                       "meta": {}, "scope": "t", "expiresAt": 9999999999999},
    "ctxls/forget": {"id": "nope", "scope": "t"},
    "ctxls/recentActivity": {"days": 1, "since": 0, "limit": 5},
    "ctxls/recentMemory": {"kind": "fact", "scope": "t", "n": 5, "body": True},
    "ctxls/enumerate": {"kind": "fact", "scope": "t", "offset": 0, "limit": 5, "body": True},
    "ctxls/count": {"kind": "fact", "scope": "t"},
    "ctxls/stash": {"id": "s2", "text": "x"},
    "ctxls/peek": {"id": "s1"},
    "ctxls/evict": {"id": "nope"},
    "ctxls/reviewCandidates": {"threshold": 2, "scope": "t"},
    "ctxls/promotionCandidates": {"threshold": 2, "scope": "t"},
    "ctxls/ingest": {"filename": "a.md", "text": "# T\n\nbody", "id": "ing", "scope": "t",
                     "expiresAt": 9999999999999, "meta": {}},
    "ctxls/purge": {"now": 1},
    "ctxls/assemble": {"query": "session", "budgetTokens": 500, "kind": "code", "minScore": 0.1,
                       "mode": "lexical", "scope": "t"},
    "ctxls/knowledge": {"budgetChars": 100, "scope": "t"},
    "ctxls/symbols": {"query": "send_prepared", "match": "exact", "kind": "function", "limit": 5},
    "ctxls/outline": {"path": "pkg/session.py"},
    "ctxls/similar": {"path": "pkg/session.py", "line": 3, "n": 5},
    "ctxls/trustMemory": {},
}
BAD_VALUES = [None, "str", "", -1, 0, -(2 ** 62), 2 ** 62, 1.5, -0.0, [], [1], {}, {"a": {"b": []}},
              True, False, "../../etc/passwd", "\u202e", "a" * 5000]
NON_OBJECT_PARAMS = [[], [1, 2], "x", 5, True, None]


def param_probes():
    for method, template in TEMPLATES.items():
        yield method, template
        for name in template:
            for value in BAD_VALUES:
                yield method, template | {name: value}
        yield method, template | {"zzz": 1}
        for params in NON_OBJECT_PARAMS:
            yield method, params


def uri_probes(root: Path, outside: Path):
    base = root.as_uri()
    uris = ["file:///etc/passwd", (outside / "passwd").as_uri(), f"{base}/../outside/passwd",
            f"{base}/%2e%2e/outside/passwd", f"{base}/pkg/%2e%2e/%2e%2e/outside/passwd",
            f"file://evilhost{outside}/passwd", f"file://localhost{outside}/passwd",
            "untitled:Untitled-1", "http://example.com/x.py", "git:/repo/pkg/session.py",
            "file:///C:/Windows/win.ini", "file:///c%3A/x/y.py", "C:\\x\\y.py", f"{base}/pkg/s%00.py",
            f"{base}/pkg/a%0ab.py", f"{base}/lib.py", f"{base}/notes.txt", f"{base}/vendor/secret.py",
            f"{base}/docs/deploy.md", f"{base}/mirror/session.py", "", "file:", "file:///",
            base, f"{base}/.ctxls/index.db", f"{base}/.git/config"]
    span = {"start": {"line": 0, "character": 0}, "end": {"line": 1, "character": 0}}
    for uri in uris:
        doc = {"uri": uri}
        yield "notify", ("textDocument/didSave", {"textDocument": doc})
        yield "notify", ("textDocument/didClose", {"textDocument": doc})
        yield "notify", ("workspace/didChangeWatchedFiles", {"changes": [{"uri": uri, "type": 2}]})
        yield "textDocument/documentSymbol", {"textDocument": doc}
        yield "textDocument/codeLens", {"textDocument": doc}
        yield "textDocument/prepareCallHierarchy", {"textDocument": doc, "position": span["start"]}
        yield "ctxls/impact", {"textDocument": doc, "position": span["start"]}
        yield "ctxls/impact", {"symbol": "send_prepared", "textDocument": doc}
        yield "callHierarchy/incomingCalls", {"item": {
            "name": "x", "kind": 12, "uri": uri, "range": span, "selectionRange": span,
            "data": {"symbol": "send_prepared"}}}
        yield "codeLens/resolve", {"range": span, "data": {"uri": uri, "symbol": "send_prepared"}}
        path = uri[len("file://"):] if uri.startswith("file://") else uri
        for method in ("ctxls/get", "ctxls/node", "ctxls/related"):
            yield method, {"id": path}
        yield "ctxls/outline", {"uri": uri}
        yield "ctxls/outline", {"path": path}
        yield "ctxls/similar", {"uri": uri, "line": 0}
        yield "ctxls/similar", {"path": path, "line": 0}
        yield "ctxls/index", {"paths": [path]}
        yield "ctxls/recall", {"query": f"{MARKER}_fn root bash deploy FOO_URL", "body": True}


def timed_request(conn, method: str, params, msg_id: str, timeout: float = 600.0) -> tuple[dict, float]:
    started = time.monotonic()
    try:
        reply = conn.request(method, params, msg_id, timeout=timeout)
    except queue.Empty:
        reply = {"no answer": True}
    return reply, round(time.monotonic() - started, 2)


def sixth_session(root: Path, daemon) -> tuple[dict, list[dict]]:
    """Families 3-6 on the running daemon: (measurements, failures)."""
    conn, measured, failures = daemon.conn, {}, []

    def check(family: str, ok: bool, what: str, detail) -> None:
        if not ok:
            failures.append({"family": family, "problem": what, "detail": json.dumps(detail)[:300]})

    # 3. answers
    line = "x" * 70 + "\n"
    for i in range(3):
        text = f"bulky sweep fact {i}\n" + line * (6 * 1024 * 1024 // len(line))
        conn.request("ctxls/remember", {"id": f"bulk{i}", "text": text}, f"bulk{i}", timeout=120)
    for method, params in (("ctxls/recall", {"query": "bulky sweep fact", "kind": "fact", "n": 200,
                                              "body": True}),
                           ("ctxls/recentMemory", {"n": 200, "body": True, "kind": "fact"}),
                           ("ctxls/enumerate", {"kind": "fact", "limit": 1000, "body": True})):
        reply, seconds = timed_request(conn, method, params, f"answer-{method}")
        size = len(json.dumps(reply))
        measured[f"answer {method}"] = {"bytes": size, "seconds": seconds,
                                        "truncated": (reply.get("result") or {}).get("truncated")}
        check("answers", "result" in reply and size < 17 * 1024 * 1024
              and reply["result"].get("truncated") is True, "answer over the bound", measured)
    conn.request("ctxls/forget", {"idPrefix": "bulk"}, "bulk-forget")

    # 4. edits
    uri = (root / "pkg" / "sweep_big.py").as_uri()
    text = "x = 1\n" * 150_000
    conn.send({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {
        "uri": uri, "languageId": "python", "version": 1, "text": text}}})
    edits = [{"range": {"start": {"line": 140_000 - i % 1000, "character": 0},
                        "end": {"line": 140_000 - i % 1000, "character": 1}}, "text": "y"}
             for i in range(20_000)]
    conn.send({"jsonrpc": "2.0", "method": "textDocument/didChange", "params": {
        "textDocument": {"uri": uri, "version": 2}, "contentChanges": edits}})
    reply, seconds = timed_request(conn, "ctxls/status", {}, "after-edits")
    measured["status after 20,000 edits of a 900 KB buffer"] = seconds
    check("edits", "result" in reply, "no answer after the edits", reply)
    conn.send({"jsonrpc": "2.0", "method": "textDocument/didChange", "params": {
        "textDocument": {"uri": uri, "version": 3}, "contentChanges": [{"range": {
            "start": {"line": 5, "character": 0}, "end": {"line": 1, "character": 0}},
            "text": "lost"}]}})
    conn.send({"jsonrpc": "2.0", "method": "textDocument/didClose", "params": {
        "textDocument": {"uri": uri}}})

    # 5. floods
    started = time.monotonic()
    for i in range(3000):
        conn.send({"jsonrpc": "2.0", "id": f"flood{i}", "method": "ctxls/recall",
                   "params": {"query": "session retry", "kind": "code"}})
    answered = 0
    while answered < 3000:
        try:
            if str(conn.reply(timeout=120).get("id", "")).startswith("flood"):
                answered += 1
        except queue.Empty:
            break
    measured["3,000 pipelined recalls answered"] = {"answered": answered,
                                                    "seconds": round(time.monotonic() - started, 2)}
    check("floods", answered == 3000, "a flooded request got no answer", answered)
    conn.send({"jsonrpc": "2.0", "method": "workspace/didChangeWatchedFiles", "params": {
        "changes": [{"uri": (root / f"gone{i}.py").as_uri(), "type": 2} for i in range(200_000)]}})
    reply, seconds = timed_request(conn, "ctxls/status", {}, "after-watched")
    measured["status after a 200,000-file watched event"] = seconds
    check("floods", "result" in reply, "no answer after the watched event", reply)
    reply, seconds = timed_request(conn, "ctxls/index", {"paths": [f"p{i}" for i in range(100_000)]},
                                   "index-specs")
    measured["index with 100,000 pathspecs"] = {"seconds": seconds, "code": reply.get("error", {}).get("code")}
    check("floods", reply.get("error", {}).get("code") == -32602, "pathspecs not bounded", reply)

    # 6. names (the file was planted before the daemon started)
    status = conn.request("ctxls/status", {}, "names")["result"]
    reasons = {f["path"]: f["reason"] for f in status["skipped"]["files"]}
    check("names", status["complete"] and "indexError" not in status
          and reasons.get("caf\ufffd.py") == "name not UTF-8", "a name not UTF-8 broke the pass",
          status.get("indexError") or reasons)
    return measured, failures


MCP_LINES = [b"not json", b'{"jsonrpc":"2.0","id":1,"method":"tools/list"} more',
             b'[{"jsonrpc":"2.0","id":2,"method":"tools/list"}]', b"[]",
             b'{"jsonrpc":"2.0","id":null,"method":"tools/list"}',
             b'{"jsonrpc":"2.0","id":1.5,"method":"tools/list"}',
             b'{"jsonrpc":"2.0","id":{"a":1},"method":"tools/list"}',
             b'{"jsonrpc":"2.0","id":true,"method":"tools/list"}',
             b'{"jsonrpc":"1.0","id":3,"method":"tools/list"}', b'{"id":4,"method":"tools/list"}',
             b'{"jsonrpc":"2.0","id":5}',
             b'{"jsonrpc":"2.0","id":6,"method":"tools/call","params":[1,2]}',
             b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"recall",'
             b'"arguments":{"query":"\\ud800"}}}',
             b'{"jsonrpc":"2.0","id":8,"method":"tools/call","params":' + b"[" * 100_000
             + b"]" * 100_000 + b"}", b"\xff\xfe garbage",
             b'{"jsonrpc":"2.0","id":' + b"9" * 5000 + b',"method":"tools/list"}']


def seventh_session(root: Path, daemon) -> list[dict]:
    """Families 8-9 on the running daemon: failures."""
    conn, failures = daemon.conn, []

    def check(family: str, ok: bool, problem: str, detail) -> None:
        if not ok:
            failures.append({"family": family, "problem": problem, "detail": json.dumps(detail)[:300]})

    def reply(msg_id=None) -> dict:
        try:
            return conn.reply(timeout=TIMEOUT_S) if msg_id is None else conn.reply_to(
                msg_id, timeout=TIMEOUT_S)
        except queue.Empty:
            return {"no answer": True}

    def status(msg_id: str) -> bytes:
        return frame(b'{"jsonrpc":"2.0","id":"%s","method":"ctxls/status","params":{}}'
                     % msg_id.encode())

    body = b'{"jsonrpc":"2.0","id":"lost","method":"ctxls/status","params":{}}'
    for name, raw in [("no length", b"X-A: 1\r\n\r\n" + body),
                      ("negative", b"Content-Length: -5\r\n\r\n" + body),
                      ("zero", b"Content-Length: 0\r\n\r\n"),
                      ("not a number", b"Content-Length: 1x\r\n\r\n" + body),
                      ("understated", b"Content-Length: 10\r\n\r\n" + body),
                      ("1 MB header line", b"X-J: " + b"j" * (1 << 20) + b"\r\n\r\n" + body)]:
        conn._write(raw + status(f"after {name}"))
        first = reply()
        check("framing", first.get("error", {}).get("code") == -32700, f"{name}: no -32700", first)
        check("framing", "result" in reply(f"after {name}"), f"{name}: the next request lost", name)
    for name, header in [("spaced", b"Content-Length:  %d  \r\n\r\n"),
                         ("lf", b"Content-Length: %d\n\n"), ("lower", b"content-length: %d\r\n\r\n")]:
        request = b'{"jsonrpc":"2.0","id":"%s","method":"ctxls/status","params":{}}' % name.encode()
        conn._write(header % len(request) + request)
        check("framing", "result" in reply(name), f"{name} header not served", name)
    for method in ("initialized", "textDocument/didOpen", "exit"):
        conn.send({"jsonrpc": "2.0", "id": method, "method": method, "params": {}})
        answer = reply(method)
        check("framing", answer.get("error", {}).get("code") == -32600,
              f"{method} with an id not answered -32600", answer)
    for n, params in enumerate([{"id": [1]}, {"id": {"a": 1}}, [1], "x"]):
        sock_conn, sock = socket_connection(root / ".ctxls" / "daemon.sock")
        try:
            sock_conn.send({"jsonrpc": "2.0", "id": "pass", "method": "ctxls/index",
                            "params": {"force": True}})
            sock_conn.send({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": params})
            sock_conn.send({"jsonrpc": "2.0", "id": "after", "method": "ctxls/status", "params": {}})
            ids = []
            for _ in range(2):
                try:
                    ids.append(sock_conn.reply(timeout=TIMEOUT_S).get("id"))
                except queue.Empty:
                    break
            check("framing", sorted(ids) == ["after", "pass"], f"socket cancel {params} lost answers", ids)
        finally:
            sock.close()

    base = root.resolve().as_uri()
    for name in ("%FF%FE.py", "%C0%AF%C0%AF.py", "pkg%2Fsession.py", "pkg%2fretry.py"):
        answer = conn.request("textDocument/documentSymbol", {"textDocument": {"uri": f"{base}/{name}"}},
                              f"esc {name}", timeout=TIMEOUT_S)
        check("escapes", answer.get("result", "missing") is None, f"{name} named a file", answer)
    return failures


def mcp_sweep(root: Path) -> tuple[dict, list[dict]]:
    """Family 7: every line `ctxls mcp` gets must be answered, and it serves on."""
    process = subprocess.Popen([sys.executable, "-m", "ctxls.daemon.cli", "mcp", "--root", str(root),
                                "--no-daemon"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL, env={**os.environ, "CTXLS_LOG": "ERROR"})
    lines: queue.Queue[bytes] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(out) for out in process.stdout], daemon=True).start()
    failures = []

    def ask(raw: bytes) -> dict | None:
        process.stdin.write(raw + b"\n")
        process.stdin.flush()
        try:
            return json.loads(lines.get(timeout=TIMEOUT_S))
        except queue.Empty:
            return None

    ask(json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "sweep", "version": "1"}}}).encode())
    process.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
    for raw in MCP_LINES:
        reply = ask(raw)
        # A tool's bad argument is the tool's error (isError), any other line the wire's.
        refused = reply is not None and ("error" in reply or (reply.get("result") or {}).get("isError"))
        if not refused:
            failures.append({"family": "mcp", "problem": "no error answer", "line": raw[:80].decode(
                "utf-8", "replace"), "reply": json.dumps(reply)[:200]})
    alive = ask(b'{"jsonrpc":"2.0","id":"alive","method":"tools/list"}')
    if alive is None or "result" not in alive:
        failures.append({"family": "mcp", "problem": "the bridge stopped serving"})
    process.kill()
    process.wait()
    return {"mcp lines": len(MCP_LINES)}, failures


def plant_git_programs(base: Path, root: Path) -> Path:
    """Family 10: the repository's .git/config names a program at every key
    git may run one from (``core.fsmonitor`` runs on each ``ls-files``); the
    file that program would create, which must not exist after the sweep."""
    ran = base / "git-config-ran"
    script = base / "git-program.sh"
    script.write_text(f"#!/bin/sh\ntouch {ran}\ncat\n")
    script.chmod(0o755)
    for key in ("core.fsmonitor", "core.pager", "diff.external", "gpg.program", "core.hooksPath"):
        subprocess.run(["git", "-C", str(root), "config", key, str(script) if key != "core.hooksPath" else str(base)],
                       check=True)
    (base / "post-index-change").write_text(f"#!/bin/sh\ntouch {ran}\n")
    (base / "post-index-change").chmod(0o755)
    return ran


def main() -> int:
    base = Path(tempfile.mkdtemp(prefix="ctxls-sweep-"))
    root = base / "repo"
    root.mkdir()
    write_tree(root, SAMPLE_FILES)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    ran = plant_git_programs(base, root)
    outside = plant_links(base, root)
    with open(os.fsencode(root) + b"/caf\xe9.py", "w") as planted:  # a name not UTF-8
        planted.write("def latin_fn():\n    return 2\n")
    # What %FF%FE.py and %C0%AF%C0%AF.py decode to with U+FFFD (family 9).
    write_tree(root, {"\ufffd\ufffd.py": "def replaced_fn():\n    pass\n",
                      "\ufffd\ufffd\ufffd\ufffd.py": "def replaced_fn2():\n    pass\n"})
    daemon = StdioDaemon(root, {"socket": True})
    daemon.wait_indexed()
    conn = daemon.conn
    seeded = [conn.request("ctxls/remember", {"id": "seed", "text": "the seed fact"}, "seed"),
              conn.request("ctxls/stash", {"id": "s1", "text": "stashed"}, "s1")]
    assert all("result" in r for r in seeded), seeded
    report: dict = {"families": {}, "failures": []}
    # Every custom request the daemon serves is probed (a new one without a template fails).
    from ctxls.daemon.server import server
    report["failures"] += [{"method": method, "problem": "no probe template in TEMPLATES"}
                           for method in sorted(set(server.custom_methods) - set(TEMPLATES))]
    counter = 0
    for family, probes in (("params", param_probes()), ("uris", uri_probes(root, outside))):
        sent = 0
        for method, params in probes:
            if method == "notify":
                conn.send({"jsonrpc": "2.0", "method": params[0], "params": params[1]})
                continue
            counter += 1
            sent += 1
            try:
                reply = conn.request(method, params, f"p{counter}", timeout=TIMEOUT_S)
            except queue.Empty:
                reply = {"no answer": True}
            dumped = json.dumps(reply)
            problem = ("no answer" if "no answer" in reply
                       else "internal error" if reply.get("error", {}).get("code") == -32603
                       else "outside bytes" if MARKER in dumped or "root:x:0:0" in dumped
                       else "daemon died" if not daemon.alive() else None)
            if problem:
                report["failures"].append({"family": family, "method": method, "problem": problem,
                                           "params": json.dumps(params)[:200], "reply": dumped[:300]})
            if not daemon.alive():
                break
        report["families"][family] = sent
    if daemon.alive():
        measured, failures = sixth_session(root, daemon)
        report["sixth"] = measured
        report["failures"] += failures
    if daemon.alive():
        report["failures"] += seventh_session(root, daemon)
    measured, failures = mcp_sweep(root)
    report["sixth"] = report.get("sixth", {}) | measured
    report["failures"] += failures
    alive = daemon.alive()
    seed = conn.request("ctxls/get", {"id": "seed"}, "check-seed") if alive else {}
    stash = conn.request("ctxls/peek", {"id": "s1"}, "check-stash") if alive else {}
    report["alive"] = alive
    if ran.exists():
        report["failures"].append({"family": "gitconfig", "problem": "the repository's git config ran a program"})
    report["memoryIntact"] = (seed.get("result") or {}).get("text") == "the seed fact"
    report["stashIntact"] = (stash.get("result") or {}).get("head") == "stashed"
    if alive:
        daemon.close()
    print(json.dumps(report, indent=2))
    ok = not report["failures"] and alive and report["memoryIntact"] and report["stashIntact"]
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
