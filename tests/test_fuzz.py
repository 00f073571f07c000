"""Property-based fuzzing of the real daemon (issue 15): random and malformed
requests to every method, over stdio and over the shared socket.

Each run is bounded (``EXAMPLES`` per transport, derandomized so CI is
reproducible) and asserts, for every request: it is answered, never with
-32603, and no byte of a file outside the root is in the answer; and that the
daemon is alive at the end. The repository carries symlinks out of its root
(tests/test_symlinks.py) and the fuzzer aims paths and queries at them.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import SAMPLE_FILES, write_tree
from rawrpc import StdioDaemon, socket_connection
from test_symlinks import MARKER, plant_links

from ctxls.daemon.server import server

# CTXLS_FUZZ_EXAMPLES raises it for a long run (bench/results/fuzz-long_run.json).
EXAMPLES = int(os.environ.get("CTXLS_FUZZ_EXAMPLES", "200"))
STANDARD_METHODS = ["workspace/symbol", "textDocument/documentSymbol",
                    "textDocument/prepareCallHierarchy", "callHierarchy/incomingCalls",
                    "callHierarchy/outgoingCalls", "textDocument/codeLens", "codeLens/resolve"]
# Lifecycle requests end or reset the session under test: not fuzzed.
METHODS = sorted(set(server.custom_methods) | set(STANDARD_METHODS))
PARAM_NAMES = ["body", "budgetChars", "budgetTokens", "by", "days", "dir", "endLine", "expiresAt",
               "filename", "force", "hops", "id", "idPrefix", "includeTests", "kind", "limit",
               "log", "maxCount", "meta", "minScore", "mode", "n", "now", "occurredAt", "offset",
               "olderThan", "paths", "position", "query", "scope", "since", "startLine", "symbol",
               "text", "textDocument", "threshold", "base64", "item", "data", "range"]
# Paths and words aimed at the links and at the outside files' content (never
# the marker itself: a request could store it, and an answer echo it).
OUTSIDE_PATHS = ["notes.txt", "lib.py", "vendor/secret.py", "vendor/passwd", "docs/deploy.md",
                 "../outside/passwd", "mirror/session.py", "pkg/alias.py", "root token",
                 "deploy FOO_URL", "send_prepared", "Session.request", "pkg/session.py", "."]

ids = itertools.count(1)

scalars = (st.none() | st.booleans()
           | st.integers(min_value=-(1 << 70), max_value=1 << 70)
           | st.floats(allow_nan=True, allow_infinity=True)
           | st.text(max_size=40) | st.sampled_from(OUTSIDE_PATHS))
json_values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4)
                           | st.dictionaries(st.text(max_size=8), inner, max_size=4),
                           max_leaves=12)


@st.composite
def uris(draw, root: Path):
    rel = draw(st.sampled_from(OUTSIDE_PATHS))
    return draw(st.sampled_from([(root / rel).as_uri(), f"file://{root.parent}/outside/passwd",
                                 "file:///etc/passwd", draw(st.text(max_size=20))]))


# What each method needs to get past its first check: the fuzzer starts from
# these, then drops, retypes or adds params (or sends any JSON instead).
TEMPLATES = {
    "ctxls/recall": {"query": "text", "body": True, "n": 50},
    "ctxls/get": {"id": "path"},
    "ctxls/impact": {"symbol": "text"},
    "ctxls/remember": {"id": "text", "text": "text"},
    "ctxls/forget": {"id": "text"},
    "ctxls/ingest": {"filename": "path", "text": "text"},
    "ctxls/stash": {"id": "text", "text": "text"},
    "ctxls/peek": {"id": "text"},
    "ctxls/evict": {"id": "text"},
    "ctxls/node": {"id": "path"},
    "ctxls/related": {"id": "path"},
    "ctxls/assemble": {"query": "text", "budgetTokens": 2000},
    "ctxls/enumerate": {"kind": "fact", "body": True},
    "ctxls/locate": {"query": "text"},
    "ctxls/recentMemory": {"body": True},
    "workspace/symbol": {"query": "text"},
    "textDocument/documentSymbol": {"textDocument": "doc"},
    "textDocument/codeLens": {"textDocument": "doc"},
    "textDocument/prepareCallHierarchy": {"textDocument": "doc", "position": "position"},
    "callHierarchy/incomingCalls": {"item": "item"},
    "callHierarchy/outgoingCalls": {"item": "item"},
    "codeLens/resolve": {"range": "range", "data": "text"},
}


def a_range():
    return {"start": {"line": 0, "character": 0}, "end": {"line": 3, "character": 0}}


@st.composite
def params_for(draw, method: str, root: Path):
    """Plausible params for ``method`` (values aimed at the links), mutated;
    or, one time in six, any JSON at all."""
    if draw(st.integers(0, 5)) == 0:
        return draw(json_values)
    params = {}
    for name, kind in TEMPLATES.get(method, {}).items():
        if kind == "text":
            params[name] = draw(st.sampled_from(OUTSIDE_PATHS) | st.text(max_size=30))
        elif kind == "path":
            params[name] = draw(st.sampled_from(OUTSIDE_PATHS + [str(root / "notes.txt"),
                                                                 str(root.parent / "outside" / "passwd")]))
        elif kind == "doc":
            params[name] = {"uri": draw(uris(root))}
        elif kind == "position":
            params[name] = {"line": draw(st.integers(-2, 40)), "character": draw(st.integers(-2, 80))}
        elif kind == "item":
            params[name] = {"name": draw(st.sampled_from(OUTSIDE_PATHS)), "kind": 12,
                            "uri": draw(uris(root)), "range": a_range(), "selectionRange": a_range()}
        elif kind == "range":
            params[name] = a_range()
        else:
            params[name] = kind
    for name in draw(st.lists(st.sampled_from(PARAM_NAMES), max_size=3, unique=True)):
        if draw(st.booleans()) and name in params:
            del params[name]
        else:
            params[name] = draw(scalars | json_values)
    return params


# Not b"": pygls takes "Content-Length: 0" for no header at all (the socket
# answers it with -32700).
MALFORMED = (st.binary(min_size=1, max_size=60)
             | st.sampled_from([b"[]", b"5", b'"x"', b"{}", b"null", b"[{}]"])
             | st.builds(lambda i, m: json.dumps({"jsonrpc": "2.0", "id": i, "method": m}).encode(),
                         st.one_of(st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
                                   st.lists(st.integers(), max_size=2), st.booleans()),
                         st.sampled_from(METHODS)))


def assert_clean(reply: dict, what) -> None:
    dumped = json.dumps(reply)
    assert "error" in reply or "result" in reply, what
    assert reply.get("error", {}).get("code") != -32603, (what, reply)
    assert MARKER not in dumped and "root:x:0:0" not in dumped, (what, reply)
    assert "traceback" not in dumped.lower(), (what, reply)


@pytest.fixture(scope="module")
def fuzzed(tmp_path_factory):
    base = tmp_path_factory.mktemp("fuzz")
    root = base / "repo"
    root.mkdir()
    write_tree(root, SAMPLE_FILES)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    plant_links(base, root)
    daemon = StdioDaemon(root, {"socket": True})
    daemon.wait_indexed()
    yield root, daemon
    assert daemon.alive()
    assert daemon.conn.request("ctxls/status", {}, "final")["result"]["files"] == 5
    daemon.close()


def exchange(conn, root: Path, method: str, params, malformed: bytes | None) -> None:
    msg_id = next(ids)
    conn.send({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
    assert_clean(conn.reply_to(msg_id, timeout=60), (method, params))
    if malformed is not None:
        # Its answer (-32700 / -32600, id null) comes before the ping's.
        conn.send_body(malformed)
        ping = next(ids)
        conn.send({"jsonrpc": "2.0", "id": ping, "method": "ctxls/count", "params": {}})
        replies = []
        while not replies or replies[-1].get("id") != ping:
            replies.append(conn.reply(timeout=60))
        answers = replies[:-1]
        assert len(answers) == 1, (malformed, replies)
        assert answers[0]["error"]["code"] in (-32700, -32600), (malformed, answers)
        assert_clean(replies[-1], "ping")


@st.composite
def fuzz_case(draw, root: Path, methods: list[str]):
    method = draw(st.sampled_from(methods))
    return method, draw(params_for(method, root)), draw(st.none() | st.none() | MALFORMED)


FUZZ_SETTINGS = settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
                         suppress_health_check=list(HealthCheck))


def test_fuzz_over_stdio(fuzzed):
    root, daemon = fuzzed

    @FUZZ_SETTINGS
    @given(fuzz_case(root, METHODS))
    def run(case):
        method, params, malformed = case
        exchange(daemon.conn, root, method, params, malformed)

    run()
    assert daemon.alive()


def test_fuzz_over_the_socket(fuzzed):
    root, daemon = fuzzed
    conn, sock = socket_connection(root / ".ctxls" / "daemon.sock")
    custom = [m for m in METHODS if m.startswith("ctxls/")]  # the socket serves these

    @FUZZ_SETTINGS
    @given(fuzz_case(root, custom))
    def run(case):
        method, params, malformed = case
        exchange(conn, root, method, params, malformed)

    try:
        run()
    finally:
        sock.close()
    assert daemon.alive()


# -- ids of any shape (issue 38, item 2) --------------------------------------------

# Strings with lone surrogates and other characters UTF-8 cannot carry as
# they are; JSON escapes them, and the answer must echo the same id back.
id_texts = st.text(max_size=12) | st.sampled_from(["\ud800", "a\udfffb", "\ud83d", "\x00", "\u2028"])
any_ids = (id_texts | st.integers(min_value=-(1 << 70), max_value=1 << 70) | st.floats()
           | st.booleans() | st.none() | st.lists(st.integers(), max_size=2)
           | st.dictionaries(st.text(max_size=3), st.integers(), max_size=2))


def exchange_with_id(conn, method: str, msg_id, well_formed: bool) -> None:
    """Send one request with ``msg_id``, then a ping: the request is answered
    once (with its own id when that id is valid, else null; in any order with
    the ping's, requests run concurrently) and the connection lives."""
    message = {"jsonrpc": "2.0" if well_formed else "1.0", "id": msg_id, "method": method,
               "params": {"query": "send", "id": "pkg/session.py", "symbol": "send_prepared"}}
    conn.send(message)
    ping = f"ping-{next(ids)}"
    conn.send({"jsonrpc": "2.0", "id": ping, "method": "ctxls/count", "params": {}})
    replies = [conn.reply(timeout=60), conn.reply(timeout=60)]
    pings = [r for r in replies if r.get("id") == ping]
    answers = [r for r in replies if r.get("id") != ping]
    assert len(pings) == len(answers) == 1, (msg_id, replies)
    answer = answers[0]
    valid = isinstance(msg_id, (int, str)) and not isinstance(msg_id, bool)
    assert answer["id"] == (msg_id if valid else None), (msg_id, answer)
    if not (valid and well_formed):
        assert answer["error"]["code"] == -32600, (msg_id, answer)
    else:
        assert_clean(answer, (method, msg_id))
    assert "result" in pings[0]


def test_every_id_is_answered_on_both_transports(fuzzed):
    root, daemon = fuzzed
    conn, sock = socket_connection(root / ".ctxls" / "daemon.sock")
    custom = ["ctxls/recall", "ctxls/get", "ctxls/impact", "ctxls/count", "ctxls/status"]

    @settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    @given(st.sampled_from(custom), any_ids, st.booleans(), st.booleans())
    def run(method, msg_id, well_formed, over_socket):
        exchange_with_id(conn if over_socket else daemon.conn, method, msg_id, well_formed)

    try:
        run()
        assert not conn.closed.is_set() and not daemon.conn.closed.is_set()
    finally:
        sock.close()
    assert daemon.alive()
