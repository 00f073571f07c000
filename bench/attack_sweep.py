"""Attacker sweep of the real `ctxls serve` (issue 15, BENCHMARKS.md "Attacker
sweep, fifth session"): the two mechanical probe families, re-runnable.

1. params: every custom request with each param replaced by a bad value
   (null, wrong types, negative, huge, fractional, path text, 5,000
   characters), plus an extra param and non-object params;
2. uris: every document request, ctxls/impact, get/node/related/index, and a
   didSave/didClose/watched-file event, for URIs and paths outside the root,
   through links out of it, percent-encoded and with other schemes.

The repository carries links out of its root to files holding a marker
(tests/test_symlinks.py). Every probe is time-boxed; a probe fails when it
gets no answer, -32603, or an answer holding the marker or /etc/passwd's
first line, or when the daemon died. Stored memory is checked at the end.

Usage: .venv/bin/python bench/attack_sweep.py   (prints a JSON report; exit 1 on a failure)
"""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

from conftest import SAMPLE_FILES, write_tree  # noqa: E402
from rawrpc import StdioDaemon  # noqa: E402
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
        yield "ctxls/index", {"paths": [path]}
        yield "ctxls/recall", {"query": f"{MARKER}_fn root bash deploy FOO_URL", "body": True}


def main() -> int:
    base = Path(tempfile.mkdtemp(prefix="ctxls-sweep-"))
    root = base / "repo"
    root.mkdir()
    write_tree(root, SAMPLE_FILES)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    outside = plant_links(base, root)
    daemon = StdioDaemon(root, {"socket": True})
    daemon.wait_indexed()
    conn = daemon.conn
    seeded = [conn.request("ctxls/remember", {"id": "seed", "text": "the seed fact"}, "seed"),
              conn.request("ctxls/stash", {"id": "s1", "text": "stashed"}, "s1")]
    assert all("result" in r for r in seeded), seeded
    report: dict = {"families": {}, "failures": []}
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
    alive = daemon.alive()
    seed = conn.request("ctxls/get", {"id": "seed"}, "check-seed") if alive else {}
    stash = conn.request("ctxls/peek", {"id": "s1"}, "check-stash") if alive else {}
    report["alive"] = alive
    report["memoryIntact"] = (seed.get("result") or {}).get("text") == "the seed fact"
    report["stashIntact"] = (stash.get("result") or {}).get("head") == "stashed"
    if alive:
        daemon.close()
    print(json.dumps(report, indent=2))
    ok = not report["failures"] and alive and report["memoryIntact"] and report["stashIntact"]
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
