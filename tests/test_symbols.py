"""Definitions at their own lines (whatever chunk packing put them in), and
the symbol tools over them: definitions by name, a file's outline, code
like a location's. Python, TypeScript, Go and Kotlin: every language the
chunker reads goes through the same definition table."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from lsprotocol import types
from mcp import StdioServerParameters
from mcp.client.session import ClientSession
from mcp.client.stdio import stdio_client
from pygls.exceptions import JsonRpcException

from ctxls.index.chunker import chunk_file
from ctxls.index.engine import Engine, EngineOptions
from ctxls.index.errors import InvalidParams
from ctxls.index.symbols import flatten

from conftest import serve, write_tree

# Rows are 0-based, as the protocol's.
HELPERS_PY = (
    "import functools\n"                      # 0
    "\n"
    "\n"
    "# Cached: the table never changes.\n"    # 3
    "@functools.lru_cache\n"                  # 4
    "def load_table():\n"                     # 5
    "    return {1: 2}\n"
    "\n"
    "\n"
    "def clamp_ratio(x):\n"                   # 9
    "    \"\"\"Clamp to 0..1.\"\"\"\n"
    "    return min(max(x, 0.0), 1.0)\n"      # 11
    "\n"
    "\n"
    "def scale_vector(v, k):\n"               # 14
    "    return [k * a for a in v]\n"
    "\n"
    "\n"
    "def invert_ratio(x):\n"                  # 18
    "    return 1.0 / clamp_ratio(x)\n"       # 19
    "\n"
    "\n"
    "class Meter:\n"                          # 22
    "    unit = 'm'\n"
    "\n"
    "    def reading(self):\n"                # 25
    "        return invert_ratio(0.5)\n"
    "\n"
    "    @property\n"                         # 28
    "    def label(self):\n"                  # 29
    "        return self.unit\n"              # 30
)

FILES = {
    "calc/helpers.py": HELPERS_PY,
    "calc/run.py": "from calc.helpers import invert_ratio\n\n\ndef main():\n    return invert_ratio(0)\n",
    "web/cart.ts": (
        "export interface CartLine {\n"       # 0
        "  sku: string;\n"
        "  quantity: number;\n"
        "}\n"
        "\n"
        "export class ShoppingCart {\n"        # 5
        "  private lines: CartLine[] = [];\n"
        "\n"
        "  addLine(line: CartLine): void {\n"  # 8
        "    this.lines.push(line);\n"
        "  }\n"
        "\n"
        "  totalQuantity(): number {\n"        # 12
        "    return this.lines.reduce((n, l) => n + l.quantity, 0);\n"
        "  }\n"
        "}\n"
    ),
    "server/queue.go": (
        "package server\n"                      # 0
        "\n"
        "type JobQueue struct {\n"              # 2
        "\tjobs []string\n"
        "}\n"
        "\n"
        "// Push adds a job at the end.\n"     # 6
        "func (q *JobQueue) Push(job string) {\n"  # 7
        "\tq.jobs = append(q.jobs, job)\n"
        "}\n"
        "\n"
        "func NewJobQueue() *JobQueue {\n"      # 11
        "\treturn &JobQueue{}\n"
        "}\n"
    ),
    "app/Inventory.kt": (
        "package app\n"                          # 0
        "\n"
        "class Inventory {\n"                    # 2
        "    private val items = mutableListOf<String>()\n"
        "\n"
        "    fun restock(item: String) {\n"      # 5
        "        items.add(item)\n"
        "    }\n"
        "}\n"
        "\n"
        "object Clock {\n"                       # 10
        "    fun now(): Long = 0L\n"             # 11
        "}\n"
    ),
}


@pytest.fixture
def engine(tmp_path: Path):
    root = tmp_path / "proj"
    write_tree(root, FILES)
    engine = Engine(root, EngineOptions())
    engine.index()
    yield engine
    engine.close()


def test_a_definition_line_is_its_def_not_its_decorator_or_comment():
    parsed = chunk_file("calc/helpers.py", HELPERS_PY)
    by_name = {d.symbol: d for d in parsed.symbols}
    assert (by_name["load_table"].start_line, by_name["load_table"].line) == (3, 5)
    assert (by_name["Meter.label"].start_line, by_name["Meter.label"].line) == (28, 29)
    assert (by_name["Meter"].line, by_name["Meter"].body_end) == (22, 30)
    go = {d.symbol: d for d in chunk_file("server/queue.go", FILES["server/queue.go"]).symbols}
    assert (go["JobQueue.Push"].start_line, go["JobQueue.Push"].line) == (6, 7)


def test_small_definitions_packed_together_are_hits_of_their_own(engine: Engine):
    packed = chunk_file("calc/helpers.py", HELPERS_PY).chunks
    holder = next(c for c in packed if "clamp_ratio" in c.names)
    assert holder.symbol != "clamp_ratio" or len(holder.names) > 1  # packing still joins them
    hit = next(h for h in engine.recall("clamp_ratio", ["code"]).hits_by_kind["code"]
               if h.path == "calc/helpers.py")
    assert (hit.symbol, hit.start_line, hit.end_line) == ("clamp_ratio", 9, 11)
    assert [d.symbol for d in hit.definitions] == ["clamp_ratio"]
    # A sentence naming it keeps the chunk (narrowing to a name a description
    # mentions lost the definition it describes), which lists it at its lines.
    hit = next(h for h in engine.recall("where is clamp_ratio defined", ["code"]).hits_by_kind["code"]
               if h.path == "calc/helpers.py" and h.start_line <= 9 <= h.end_line)
    clamp = next(d for d in hit.definitions if d.symbol == "clamp_ratio")
    assert (clamp.start_line, clamp.end_line) == (9, 11)
    # A query that names no definition keeps the chunk, listing all it holds.
    hit = next(h for h in engine.recall("ratio vector", ["code"]).hits_by_kind["code"]
               if h.path == "calc/helpers.py" and h.start_line <= 9 <= h.end_line)
    assert {"clamp_ratio", "scale_vector"} <= {d.symbol for d in hit.definitions}
    assert all(hit.start_line <= d.line <= hit.end_line for d in hit.definitions)
    body = engine.recall("scale_vector", ["code"], body=True).hits_by_kind["code"][0]
    assert body.symbol == "scale_vector" and body.body == (
        "def scale_vector(v, k):\n    return [k * a for a in v]")


def test_a_qualified_name_is_found_among_many_definitions_of_its_name(tmp_path: Path):
    # 30 classes with an __init__ each: more than the definitions recall reads
    # for a name (RecallScorer's max_definitions), in file order before the one asked for.
    files = {f"app/model_{i:02d}.py": (f"class Model{i:02d}:\n    def __init__(self):\n"
                                       f"        self.value = {i}\n")
             for i in range(30)}
    files["zz/engine.py"] = ("class Engine:\n    def __init__(self, root):\n"
                             "        self.root = root\n\n    def run(self):\n        return self.root\n")
    root = tmp_path / "many"
    write_tree(root, files)
    engine = Engine(root, EngineOptions())
    try:
        engine.index()
        hit = engine.recall("Engine.__init__", ["code"]).hits_by_kind["code"][0]
        assert (hit.path, hit.symbol, hit.start_line, hit.end_line) == (
            "zz/engine.py", "Engine.__init__", 1, 2)
    finally:
        engine.close()


def test_a_named_definition_hit_leaves_out_the_module_code_beside_it(tmp_path: Path):
    # One definition in a chunk with module-level statements and a section
    # comment: the query naming it gets the definition's lines, not theirs.
    text = ("import os\n"                          # 0
            "\n"
            "PLAIN = os.sep\n"                     # 2
            "\n"
            "\n"
            "def line_span(chunk):\n"              # 5
            "    return chunk['end'] - chunk['start']\n"  # 6
            "\n"
            "\n"
            "# -- what the output says --\n"       # 9
            "LEFT_OUT = '(text left out)'\n"        # 10
            "MENTION_KINDS = {'string': 'in strings'}\n")
    root = tmp_path / "mod"
    write_tree(root, {"fmt.py": text})
    engine = Engine(root, EngineOptions())
    try:
        engine.index()
        chunk = next(c for c in chunk_file("fmt.py", text).chunks if "line_span" in c.names)
        assert (chunk.start_line, chunk.end_line) != (5, 6)  # the chunk holds more than it
        hit = engine.recall("line_span", ["code"], body=True).hits_by_kind["code"][0]
        assert (hit.symbol, hit.start_line, hit.end_line) == ("line_span", 5, 6)
        assert hit.body == "def line_span(chunk):\n    return chunk['end'] - chunk['start']"
        # A sentence keeps the chunk (docs/decisions.md: narrowing is for one-name queries).
        hit = engine.recall("span of a chunk", ["code"]).hits_by_kind["code"][0]
        assert (hit.start_line, hit.end_line) == (chunk.start_line, chunk.end_line)
    finally:
        engine.close()


def test_a_function_typed_below_a_method_is_its_own_hit(engine: Engine):
    engine.set_buffer("calc/helpers.py", HELPERS_PY + "\n\ndef fresh_helper():\n    return 3\n")
    hit = engine.recall("fresh_helper", ["code"]).hits_by_kind["code"][0]
    assert (hit.symbol, hit.start_line, hit.end_line) == ("fresh_helper", 33, 34)
    assert [(d.symbol, d.line) for d in engine.symbols("fresh_helper", "exact")] == [("fresh_helper", 33)]


def test_locate_names_the_innermost_frame_function_at_its_own_lines(engine: Engine):
    trace = ('Traceback (most recent call last):\n'
             '  File "calc/run.py", line 5, in main\n'
             '    return invert_ratio(0)\n'
             '  File "calc/helpers.py", line 20, in invert_ratio\n'
             '    return 1.0 / clamp_ratio(x)\n'
             'ZeroDivisionError: float division by zero\n')
    located = {f.path: f for f in engine.locate(trace)}
    refs = [(c.symbol, c.start_line, c.end_line) for c in located["calc/helpers.py"].chunks]
    assert ("invert_ratio", 18, 19) in refs
    ref = next(c for c in located["calc/helpers.py"].chunks if c.symbol == "invert_ratio")
    assert ref.end_character == len("    return 1.0 / clamp_ratio(x)")


def test_definitions_by_name_match_exact_prefix_substring_fuzzy(engine: Engine):
    def found(query, match="fuzzy", **kw):
        return [(d.symbol, d.path, d.line, d.match) for d in engine.symbols(query, match, **kw)]

    assert found("Push", "exact") == [("JobQueue.Push", "server/queue.go", 7, "exact")]
    assert found("ShoppingCart.addLine", "exact") == [("ShoppingCart.addLine", "web/cart.ts", 8, "exact")]
    assert found("restock", "exact") == [("Inventory.restock", "app/Inventory.kt", 5, "exact")]
    assert [s for s, *_ in found("total", "prefix")] == ["ShoppingCart.totalQuantity"]
    assert found("ratio", "prefix") == []
    assert [s for s, *_ in found("ratio", "substring")] == ["clamp_ratio", "invert_ratio"]
    # Fuzzy: the letters in order, closer matches first.
    fuzzy = found("invrt")
    assert fuzzy[0][:1] == ("invert_ratio",) and fuzzy[0][3] == "fuzzy"
    closest = found("jobqueue")  # any case
    assert closest[0] == ("JobQueue", "server/queue.go", 2, "exact")
    assert {(s, m) for s, _, _, m in closest[1:]} == {("JobQueue.Push", "substring"),
                                                       ("NewJobQueue", "substring")}
    # Kinds and containers.
    kinds = {d.symbol: (d.kind, d.container) for d in engine.symbols("now", "exact")}
    assert kinds == {"Clock.now": ("method", "Clock")}
    assert [d.symbol for d in engine.symbols("Inventory", "exact", kinds=["class"])] == ["Inventory"]
    with pytest.raises(InvalidParams) as err:
        engine.symbols("x", "sounds-like")
    assert err.value.param == "match"
    with pytest.raises(InvalidParams):
        engine.symbols("   ")


def test_outline_nests_definitions_with_their_lines(engine: Engine):
    tree = engine.outline("calc/helpers.py")
    assert [(d.symbol, d.line) for d in tree] == [("load_table", 5), ("clamp_ratio", 9),
                                                    ("scale_vector", 14), ("invert_ratio", 18),
                                                    ("Meter", 22)]
    meter = tree[-1]
    assert (meter.start_line, meter.end_line) == (22, 30)
    assert [(c.name, c.kind, c.start_line, c.line, c.end_line) for c in meter.children] == [
        ("reading", "method", 25, 25, 26), ("label", "method", 28, 29, 30)]
    ts = engine.outline("web/cart.ts")
    assert [(d.symbol, [c.name for c in d.children]) for d in ts] == [
        ("CartLine", []), ("ShoppingCart", ["addLine", "totalQuantity"])]
    kotlin = engine.outline("app/Inventory.kt")
    assert [(d.name, d.kind, [c.name for c in d.children]) for d in kotlin] == [
        ("Inventory", "class", ["restock"]), ("Clock", "object", ["now"])]
    go = [d.symbol for d in flatten(engine.outline("server/queue.go"))]
    assert go == ["JobQueue", "JobQueue.Push", "NewJobQueue"]
    assert engine.outline("missing.py") == []


def test_outline_keeps_definitions_written_on_one_line_as_siblings(tmp_path: Path):
    """Nesting was by whole lines: `function beta` after `function alpha`
    on alpha's line was alpha's child, `gamma` after a one-line class was
    its method's, and a one-line bundle of 10,000 functions nested each in
    the one before, to the depth cap. A definition nests only in the open
    one its name says is its container."""
    (tmp_path / "a.ts").write_text("function alpha() { return 1 }; function beta() { return 2 }\n"
                                   "class K { m() { return 1 } }; function gamma() { return 3 }\n")
    (tmp_path / "b.ts").write_text("".join(f"function f{n}() {{ return {n} }}; " for n in range(40)) + "\n")
    engine = Engine(tmp_path, EngineOptions(watch="off"))
    try:
        engine.cold_index()
        assert [(d.symbol, [c.symbol for c in d.children]) for d in engine.outline("a.ts")] == [
            ("alpha", []), ("beta", []), ("K", ["K.m"]), ("gamma", [])]
        assert [d.symbol for d in engine.outline("b.ts")] == [f"f{n}" for n in range(40)]
    finally:
        engine.close()


def test_related_code_by_identifiers_excludes_itself(engine: Engine):
    origin, hits, mode = engine.similar("calc/helpers.py", 19)
    assert mode == "lexical"
    assert origin.path == "calc/helpers.py" and origin.start_line <= 19 <= origin.end_line
    assert hits and all(not (h.path == origin.path and h.start_line <= origin.end_line
                             and origin.start_line <= h.end_line) for h in hits)
    # The other callers of invert_ratio (packing put the first in the origin's
    # chunk; Meter.reading is in its class's chunk, header and members together).
    assert [(h.path, h.symbol) for h in hits[:2]] == [("calc/run.py", "main"),
                                                      ("calc/helpers.py", "Meter")]
    assert engine.similar("calc/helpers.py", 999) == (None, [], "lexical")
    with pytest.raises(InvalidParams):
        engine.similar("calc/helpers.py", -1)


def test_related_code_by_vectors_when_there_are_some(tmp_path: Path):
    root = tmp_path / "vec"
    write_tree(root, FILES)
    engine = Engine(root, EngineOptions(embeddings=True))
    try:
        engine.index()
        engine.embed_pending()
        origin, hits, mode = engine.similar("web/cart.ts", 9, n=3)
        assert mode == "semantic" and origin.symbol == "ShoppingCart.addLine"
        assert len(hits) == 3 and all(h.path != "web/cart.ts" or h.start_line > origin.end_line
                                      or h.end_line < origin.start_line for h in hits)
        assert hits == sorted(hits, key=lambda h: -h.score)
    finally:
        engine.close()


# -- the clients: LSP, CLI, MCP -------------------------------------------------------------------

@pytest.fixture
def proj(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    write_tree(root, FILES)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    return root


async def test_lsp_symbols_outline_and_similar(proj: Path):
    async with serve(proj) as s:
        await s.wait_indexed()
        outline = await s.client.text_document_document_symbol_async(types.DocumentSymbolParams(
            text_document=types.TextDocumentIdentifier(uri=s.uri("calc/helpers.py"))))
        meter = next(sym for sym in outline if sym.name == "Meter")
        label = next(c for c in meter.children if c.name == "label")
        # The name's line (not the decorator's) is selected; the range holds the decorator.
        assert (label.selection_range.start.line, label.range.start.line) == (29, 28)
        # Its members inside: the range ends at the end of its last line.
        last_line = (proj / "calc" / "helpers.py").read_text().split("\n")[30]
        assert (meter.range.start.line, meter.range.end.line) == (22, 30)
        assert meter.range.end.character == len(last_line) > 0
        load = next(sym for sym in outline if sym.name == "load_table")
        assert (load.selection_range.start.line, load.range.start.line) == (5, 3)

        found = await s.client.workspace_symbol_async(types.WorkspaceSymbolParams(query="restock"))
        assert [(sym.name, sym.container_name, sym.kind, sym.location.uri, sym.location.range.start.line)
                for sym in found] == [("restock", "Inventory", types.SymbolKind.Method,
                                       s.uri("app/Inventory.kt"), 5)]

        named = await s.request("ctxls/symbols", {"query": "push", "match": "exact"})
        assert [(d["symbol"], d["name"], d["container"], d["kind"], d["line"], d["startLine"],
                 d["endLine"], d["match"], d["uri"]) for d in named["symbols"]] == [
            ("JobQueue.Push", "Push", "JobQueue", "method", 7, 6, 9, "exact", s.uri("server/queue.go"))]
        by_kind = await s.request("ctxls/symbols", {"query": "a", "match": "substring",
                                                    "kind": "interface"})
        assert [d["symbol"] for d in by_kind["symbols"]] == ["CartLine"]

        tree = await s.request("ctxls/outline", {"uri": s.uri("web/cart.ts")})
        assert tree["path"] == "web/cart.ts"
        cart = tree["symbols"][1]
        assert (cart["symbol"], [c["name"] for c in cart["children"]]) == (
            "ShoppingCart", ["addLine", "totalQuantity"])
        assert (await s.request("ctxls/outline", {"path": "web/cart.ts"})) == tree
        # A place as answers print it names its file (it outlined nothing).
        assert (await s.request("ctxls/outline", {"path": "web/cart.ts:3-9"})) == tree

        similar = await s.request("ctxls/similar", {"path": "calc/helpers.py", "line": 19})
        assert similar["origin"]["chunk"]["symbol"] == "invert_ratio"
        assert [h["chunk"]["symbol"] for h in similar["hits"][:2]] == ["main", "Meter"]
        assert similar["mode"] == "lexical"

        # A recall hit lists the definitions its chunk holds.
        hits = (await s.request("ctxls/recall", {"query": "clamp_ratio", "kind": "code"}))["hits"]
        assert hits[0]["chunk"] == {"symbol": "clamp_ratio", "startLine": 9, "endLine": 11}
        assert hits[0]["definitions"] == [{"symbol": "clamp_ratio", "kind": "function",
                                           "startLine": 9, "endLine": 11, "line": 9}]

        for method, params, param in (("ctxls/symbols", {"query": "x", "match": "soundex"}, "match"),
                                      ("ctxls/symbols", {"query": ""}, "query"),
                                      ("ctxls/similar", {"path": "calc/helpers.py"}, "line"),
                                      ("ctxls/outline", {}, "path")):
            with pytest.raises(JsonRpcException) as err:
                await s.request(method, params)
            assert err.value.code == -32602 and param in err.value.message, (method, err.value.message)
        with pytest.raises(JsonRpcException) as err:
            await s.request("ctxls/outline", {"path": "../elsewhere.py"})
        assert err.value.code == -32004


def ctxls(root: Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ctxls.daemon.cli", *args, "--color", "never"],
                          capture_output=True, text=True, timeout=120, cwd=cwd or root)


def test_cli_symbols_outline_related(proj: Path):
    assert subprocess.run([sys.executable, "-m", "ctxls.daemon.cli", "index", str(proj)],
                          capture_output=True, timeout=120).returncode == 0
    found = ctxls(proj, "symbols", "clamp")
    assert found.returncode == 0
    assert found.stdout.splitlines() == ["calc/helpers.py:10  function  clamp_ratio  lines 10-12, prefix"]
    as_json = json.loads(ctxls(proj, "symbols", "now", "--match", "exact", "--json").stdout)
    assert [(d["symbol"], d["line"]) for d in as_json["symbols"]] == [("Clock.now", 11)]
    missing = ctxls(proj, "symbols", "zzqx", "--match", "exact")
    assert (missing.returncode, missing.stdout) == (1, "no definitions found\n")

    outline = ctxls(proj, "outline", "helpers.py", cwd=proj / "calc")  # typed from a subfolder
    assert outline.returncode == 0, outline.stderr
    lines = outline.stdout.splitlines()
    assert lines[0] == "calc/helpers.py"
    assert "    30: method label  (29-31)" in lines  # nested in Meter: its name's line first
    assert ctxls(proj, "outline", "calc/run.py", "--json").returncode == 0
    unknown = ctxls(proj, "outline", "calc/nosuch.py")
    assert unknown.returncode == 1 and unknown.stdout.startswith("not indexed: calc/nosuch.py (")

    related = ctxls(proj, "related", "calc/helpers.py:20", "-n", "2")
    assert related.returncode == 0, related.stderr
    assert related.stdout.splitlines()[0] == "like calc/helpers.py:19-20  invert_ratio (by its identifiers):"
    assert related.stdout.splitlines()[1:] == ["     0.097  calc/run.py:1-5  main",
                                               "     0.054  calc/helpers.py:23-31  Meter"]
    bad = ctxls(proj, "related", "calc/helpers.py")
    assert bad.returncode == 2 and "PATH:LINE" in bad.stderr
    nothing = ctxls(proj, "related", "calc/helpers.py:400")
    assert (nothing.returncode, nothing.stdout) == (1, "no indexed code at that line\n")


async def test_mcp_find_symbol_outline_related(proj: Path):
    params = StdioServerParameters(command=sys.executable,
                                   args=["-m", "ctxls.daemon.cli", "mcp", "--root", str(proj)],
                                   env={**os.environ, "CTXLS_LOG": "ERROR"})
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            tools = {t.name: t for t in (await session.list_tools()).tools}
            assert {"find_symbol", "outline", "related"} <= set(tools)
            assert tools["find_symbol"].annotations.read_only_hint is True

            async def call(name: str, arguments: dict):
                deadline = asyncio.get_running_loop().time() + 60
                while True:  # the hosted engine's first index may still run (-32011)
                    result = await session.call_tool(name, arguments)
                    if not (result.is_error and "-32011" in result.content[0].text):
                        return result
                    assert asyncio.get_running_loop().time() < deadline
                    await asyncio.sleep(0.2)

            found = await call("find_symbol", {"name": "ShoppingCart.total", "match": "prefix"})
            assert found.content[0].text == (
                "web/cart.ts:13  method    ShoppingCart.totalQuantity  lines 13-15, prefix")
            typed = await call("find_symbol", {"name": "queue", "kind": ["struct"], "format": "json"})
            assert [d["symbol"] for d in typed.structured_content["symbols"]] == ["JobQueue"]
            none = await call("find_symbol", {"name": "zzqx"})
            assert none.content[0].text == "no definitions found" and not none.is_error

            outline = await call("outline", {"path": "app/Inventory.kt"})
            assert outline.content[0].text.splitlines()[:3] == [
                "app/Inventory.kt", "  3: class Inventory  (3-9)", "    6: method restock  (6-8)"]

            related = await call("related", {"path": "calc/helpers.py", "line": 20, "n": 2})
            assert related.content[0].text.startswith("like calc/helpers.py:19-20  invert_ratio")
            bad = await call("related", {"path": "calc/helpers.py", "line": 0})
            assert bad.is_error


def test_a_name_holding_a_dot_is_split_only_at_its_qualifier(tmp_path: Path):
    """`Bag.[Symbol.iterator]` was split at its last dot: name `iterator]`,
    container `Bag.[Symbol`; an operator `Money.==` and Haskell's `.:` are
    names too. The same split serves outline, the symbols table and impact."""
    from ctxls.index.model import split_symbol

    assert split_symbol("Bag.[Symbol.iterator]") == ("Bag", "[Symbol.iterator]")
    assert split_symbol("Money.==") == ("Money", "==")
    assert split_symbol(".:") == (None, ".:")
    assert split_symbol("pkg.Session.request") == ("pkg.Session", "request")
    write_tree(tmp_path, {"src/bag.ts": "export class Bag<T> {\n  private items: T[] = [];\n\n"
                                        "  *[Symbol.iterator](): Iterator<T> {\n    yield* this.items;\n  }\n}\n"})
    engine = Engine(tmp_path, EngineOptions(watch="off"))
    try:
        engine.cold_index()
        method = [d for d in flatten(engine.outline("src/bag.ts")) if d.line == 3]
        assert [(d.name, d.container) for d in method] == [("[Symbol.iterator]", "Bag")]
        found = engine.symbols("[Symbol.iterator]", match="exact")
        assert [d.symbol for d in found] == ["Bag.[Symbol.iterator]"]
    finally:
        engine.close()


def test_symbols_reads_a_name_with_its_languages_separator_in_any_script_and_form(tmp_path: Path):
    """`FrameDecoder::decode_frame` and `Ledger#post_entry` (recall read them,
    symbols did not); a capital outside ASCII in a qualified or substring
    match (SQLite's lower() folds ASCII only); and one name in NFC and NFD."""
    import unicodedata

    from ctxls.index.query import dotted_name

    nfd = unicodedata.normalize("NFD", "créerFacture")
    write_tree(tmp_path, {
        "rust/src/codec.rs": "pub struct FrameDecoder;\nimpl FrameDecoder {\n"
                             "    pub fn decode_frame(&self, buf: &[u8]) -> usize { buf.len() }\n}\n",
        "ruby/ledger.rb": "class Ledger\n  def post_entry(amount)\n    amount\n  end\nend\n",
        "konto.py": "class Ärger:\n    def prüfen(self):\n        return 1\n\n\nclass Конто:\n"
                    "    def списать(self, сумма):\n        return сумма\n\n\nclass DatenÜbertragung:\n    pass\n",
        "billing.js": f"const TAUX = 2;\nconst DEVISE = 'EUR';\n\nfunction {nfd}(montant) {{\n"
                      "  return montant * TAUX;\n}\n",
    })
    engine = Engine(tmp_path, EngineOptions(watch="off"))
    try:
        engine.cold_index()

        def first(query: str, match: str = "fuzzy"):
            found = engine.symbols(query, match)
            return (found[0].symbol, found[0].match) if found else None

        assert first("FrameDecoder::decode_frame") == ("FrameDecoder.decode_frame", "exact")
        assert first("Ledger#post_entry") == ("Ledger.post_entry", "exact")
        assert first("Ärger.prüfen", "exact") == ("Ärger.prüfen", "exact")
        assert first("конто.списать", "exact") == ("Конто.списать", "exact")
        assert first("КОНТО.СПИСАТЬ", "prefix") == ("Конто.списать", "exact")
        assert first("übertragung", "substring") == ("DatenÜbertragung", "substring")
        assert first("Übertragung", "substring") == ("DatenÜbertragung", "substring")
        assert first("ärger", "exact") == ("Ärger", "exact")
        # The name written in NFD, asked for in NFC (and the other way).
        assert first("créerFacture", "exact") == (nfd, "exact")
        assert first(nfd, "exact") == (nfd, "exact")
        hit = engine.recall("créerFacture", ["code"], mode="lexical").hits_by_kind["code"][0]
        assert (hit.path, hit.symbol, hit.start_line, hit.end_line) == ("billing.js", nfd, 3, 5)
        # ...and it is the definition asked for: the recall scorer's boost too.
        assert "definition" in [c.feature for c in hit.why]
        # A separator is one between names: an operator's own `->` stays.
        assert dotted_name("geo::Polygon::area") == "geo.Polygon.area"
        assert dotted_name("Smart::operator->") == "Smart.operator->"
    finally:
        engine.close()


def _top_code_hit(engine: Engine, query: str) -> tuple[str, str | None, int, int]:
    hit = engine.recall(query, ["code"], mode="lexical").hits_by_kind["code"][0]
    return hit.path, hit.symbol, hit.start_line, hit.end_line


def test_a_name_in_another_case_style_finds_its_definition(tmp_path: Path):
    """`build_cache_key` for Go's `buildCacheKey`, `pathIsSymlink` for Rust's
    `path_is_symlink` (a probe over 20 languages: the packed chunk came back,
    labelled with another definition); the name as written still ranks first
    when both spellings are defined; `__init__` stays no `init`."""
    write_tree(tmp_path, {
        "pattern.go": "package fzf\n\ntype Pattern struct {\n\ttext []rune\n}\n\n"
                      "func (p *Pattern) IsEmpty() bool {\n\treturn len(p.text) == 0\n}\n\n"
                      "func (p *Pattern) buildCacheKey() string {\n\treturn string(p.text)\n}\n",
        "walk.rs": "pub struct DirEntry {\n    link: bool,\n}\n\nimpl DirEntry {\n"
                   "    pub fn depth(&self) -> usize {\n        0\n    }\n\n"
                   "    pub fn path_is_symlink(&self) -> bool {\n        self.link\n    }\n}\n",
        "both.py": "def build_cache_key(parts):\n    return '/'.join(parts)\n\n\n"
                   "def buildCacheKey(parts):\n    return build_cache_key(parts)\n\n\n"
                   "class Ready:\n    def __init__(self):\n        self.ready = True\n",
    })
    engine = Engine(tmp_path, EngineOptions(watch="off"))
    try:
        engine.cold_index()
        for query in ("pathIsSymlink", "PathIsSymlink", "path-is-symlink"):
            assert _top_code_hit(engine, query) == ("walk.rs", "DirEntry.path_is_symlink", 9, 11)
        hit = engine.recall("pathIsSymlink", ["code"], mode="lexical").hits_by_kind["code"][0]
        assert "definition" in [c.feature for c in hit.why]
        # Both spellings defined: each query's own spelling first.
        assert _top_code_hit(engine, "build_cache_key") == ("both.py", "build_cache_key", 0, 1)
        assert _top_code_hit(engine, "buildCacheKey") == ("both.py", "buildCacheKey", 4, 5)
        assert [(d.symbol, d.match) for d in engine.symbols("build_cache_key", "exact")] == [
            ("build_cache_key", "exact"), ("buildCacheKey", "exact"),
            ("Pattern.buildCacheKey", "exact")]
        assert [d.symbol for d in engine.symbols("PathIsSymlink", "exact")] == [
            "DirEntry.path_is_symlink"]
        # A leading or trailing underscore is no word break.
        assert engine.symbols("init", "exact") == []
        assert [d.symbol for d in engine.symbols("__init__", "exact")] == ["Ready.__init__"]
    finally:
        engine.close()
    # Without the Python file, the Go method is the only answer.
    (tmp_path / "both.py").unlink()
    engine = Engine(tmp_path, EngineOptions(watch="off"))
    try:
        engine.cold_index()
        assert _top_code_hit(engine, "build_cache_key") == (
            "pattern.go", "Pattern.buildCacheKey", 10, 12)
    finally:
        engine.close()


def test_a_name_qualified_by_its_package_is_narrowed_to_its_definition(tmp_path: Path):
    """A name qualified by its package or namespace (Go's `util.Constrain`,
    PHP's `GuzzleHttp\\Utils::describeType`, Java's full name, Perl's
    `LWP::ConnCache::deposit`, Clojure's `shop.main/parse-version`) names
    the definition in the file whose folders, stem or declaration are that
    package; a qualifier that is no module of it narrows nothing."""
    write_tree(tmp_path, {
        "src/util/util.go": "package util\n\nfunc Truncate(input string, limit int) string {\n"
                            "\treturn input[:limit]\n}\n\n"
                            "func Constrain(val int, minimum int, maximum int) int {\n"
                            "\treturn max(min(val, maximum), minimum)\n}\n",
        "src/terminal.go": "package fzf\n\ntype Terminal struct {\n\theight int\n}\n\n"
                           "// constrain, constrain the offset and constrain the cursor\n"
                           "func (t *Terminal) constrain() {\n\tt.height = 0\n}\n",
        "src/Utils.php": "<?php\n\nnamespace GuzzleHttp;\n\nfinal class Utils\n{\n"
                         "    public static function describeType($input): string\n    {\n"
                         "        return \\gettype($input);\n    }\n\n"
                         "    public static function defaultUserAgent(): string\n    {\n"
                         "        return 'GuzzleHttp/7';\n    }\n}\n",
        "src/com/example/inject/Annotations.java":
            "package com.example.inject;\n\npublic class Annotations {\n"
            "  public static boolean isMarker(Class<?> type) {\n    return true;\n  }\n\n"
            "  public static boolean isAllDefaultMethods(Class<?> type) {\n    return false;\n  }\n}\n",
        "lib/LWP/ConnCache.pm": "package LWP::ConnCache;\n\nuse strict;\n\nsub new {\n"
                                "    my($class) = @_;\n    return bless {}, $class;\n}\n\n"
                                "sub deposit {\n    my($self, $conn) = @_;\n    push(@{$self->{conns}}, $conn);\n}\n\n"
                                "sub withdraw {\n    return undef;\n}\n\n1;\n",
        "src/shop/main.clj": "(ns shop.main\n  (:require [clojure.string :as str]))\n\n"
                             "(defn parse-version [version]\n  (str/split version #\"\\.\"))\n\n"
                             "(defn print-version []\n  (println \"shop\"))\n",
    })
    engine = Engine(tmp_path, EngineOptions(watch="off"))
    try:
        engine.cold_index()
        assert _top_code_hit(engine, "util.Constrain") == ("src/util/util.go", "Constrain", 6, 8)
        assert _top_code_hit(engine, "GuzzleHttp\\Utils::describeType") == (
            "src/Utils.php", "Utils.describeType", 6, 9)
        assert _top_code_hit(engine, "com.example.inject.Annotations.isMarker") == (
            "src/com/example/inject/Annotations.java", "Annotations.isMarker", 3, 5)
        assert _top_code_hit(engine, "LWP::ConnCache::deposit") == (
            "lib/LWP/ConnCache.pm", "LWP.ConnCache.deposit", 9, 12)
        assert _top_code_hit(engine, "shop.main/parse-version") == (
            "src/shop/main.clj", "parse-version", 3, 4)
        assert [(d.symbol, d.path) for d in engine.symbols("util.Constrain", "exact")] == [
            ("Constrain", "src/util/util.go")]
        assert [d.symbol for d in engine.symbols("LWP::ConnCache::deposit", "exact")] == ["LWP.ConnCache.deposit"]
        # A qualifier naming no module of the file narrows nothing.
        assert engine.symbols("fzf.Truncate", "exact") == []
        hit = engine.recall("fzf.Truncate", ["code"], mode="lexical").hits_by_kind["code"]
        assert all((h.symbol, h.start_line) != ("Truncate", 2) for h in hit)
    finally:
        engine.close()


def test_a_definition_whose_doc_is_longer_than_a_chunk_is_answered_from_its_name_line(
        tmp_path: Path):
    """A 170-line @doc splits the definition (chunks hold at most 150 lines):
    recall of its name answered the doc's piece alone, never reaching its
    `def` (ecto's `cast_assoc`)."""
    before = "".join(f"\n  @doc \"Field {i}.\"\n  def field_{i}(changeset) do\n"
                     f"    Map.get(changeset, :field_{i})\n  end\n" for i in range(6))
    doc = "".join(f"  Paragraph {i} about casting the association with its options.\n"
                  for i in range(170))
    text = (f"defmodule Shop.Changeset do\n  @moduledoc \"Changesets for the shop.\"\n{before}\n"
            f"  @doc \"\"\"\n  Casts the given association with the changeset parameters.\n\n{doc}"
            "  \"\"\"\n  @spec cast_assoc(map, atom, Keyword.t()) :: map\n"
            "  def cast_assoc(changeset, name, opts \\\\ []) when is_atom(name) do\n"
            "    cast_relation(:assoc, changeset, name, opts)\n  end\n\n"
            "  defp cast_relation(type, changeset, name, opts) do\n"
            "    {type, changeset, name, opts}\n  end\nend\n")
    write_tree(tmp_path, {"lib/shop/changeset.ex": text})
    def_line = text.split("\n").index(
        "  def cast_assoc(changeset, name, opts \\\\ []) when is_atom(name) do")
    engine = Engine(tmp_path, EngineOptions(watch="off"))
    try:
        engine.cold_index()
        for query in ("cast_assoc", "Shop.Changeset.cast_assoc"):
            path, symbol, start, end = _top_code_hit(engine, query)
            assert (path, symbol) == ("lib/shop/changeset.ex", "Shop.Changeset.cast_assoc")
            assert start <= def_line and end == def_line + 2
    finally:
        engine.close()


def test_another_case_style_is_a_fallback_not_a_rival(make_engine):
    """Rust's `fn flat_map` and `struct FlatMap` (in `flat_map.rs`) share a
    case-style key: boosted alike, the struct in the file named like the
    query outranked the function asked for (code search set 4, rayon)."""
    engine = make_engine({
        "src/iter/mod.rs": "pub trait ParallelIterator {\n"
                           "    fn flat_map<F>(self, map_op: F) -> FlatMap<Self, F> {\n"
                           "        FlatMap::new(self, map_op)\n    }\n}\n",
        "src/iter/flat_map.rs": "/// flat_map maps each element to a parallel iterator.\n"
                                "pub struct FlatMap<I, F> {\n    base: I,\n    map_op: F,\n}\n",
    })
    assert _top_code_hit(engine, "flat_map")[:2] == ("src/iter/mod.rs", "ParallelIterator.flat_map")
    assert _top_code_hit(engine, "FlatMap")[:2] == ("src/iter/flat_map.rs", "FlatMap")


def test_a_qualified_type_named_inside_a_sentence_is_not_read_by_its_module(make_engine):
    """"Helper class to transform a org.acme.nodes.Document to a DOM" asks
    for the helper: read through its file's module path, the `Document`
    written in it took a definition boost as if asked for by name (code
    search set 4, jsoup and click). The whole query `org.acme.nodes.Document`
    still is that class."""
    from ctxls.index.query import query_shape
    from ctxls.index.recall_features import _definition_tiers
    from ctxls.index.recall_scorer import PriorConfig

    engine = make_engine({
        "src/org/acme/nodes/Document.java": "package org.acme.nodes;\n\npublic class Document {\n"
                                            "    int size() { return 0; }\n}\n",
        "src/org/acme/helper/Converter.java": "package org.acme.helper;\n\n"
                                              "/** Helper class to transform a document to a DOM. */\n"
                                              "public class Converter {\n}\n",
    })
    conn = engine.store.reader()
    document = conn.execute("SELECT c.id FROM chunks c JOIN files f ON f.id = c.file_id "
                            "WHERE f.path LIKE '%Document.java' AND c.kind = 'code'").fetchone()[0]

    def tier(query: str) -> float:
        return _definition_tiers(conn, "code", query_shape(query), set(), PriorConfig()).get(document, 0.0)

    assert tier("org.acme.nodes.Document") >= 0.9 * tier("Document")
    assert tier("Helper class to transform a org.acme.nodes.Document to a DOM") \
        < 0.6 * tier("org.acme.nodes.Document")
    assert _top_code_hit(engine, "org.acme.nodes.Document")[1] == "Document"


# -- answers while the store refuses writes (a full disk) ------------------------------------

def request_in_process(engine: Engine, method: str, params: dict):
    """``method`` answered by the daemon's own handler, in this process, over
    ``engine`` alone: a full disk is simulated in its store (test_store's
    fill_the_disk), which a `ctxls serve` subprocess could not be given."""
    from ctxls.daemon import wire
    from ctxls.daemon.server import server

    server.workspaces.engines[engine.root] = engine
    try:
        return server.custom_methods[method](server, wire.Params(params))
    finally:
        server.workspaces.engines.pop(engine.root, None)


def test_outline_and_symbols_say_partial_when_the_full_disk_refused_a_file_s_text(
        tmp_path: Path, monkeypatch):
    """Crash probe (t_full_outline): on a full disk, a file changed on disk
    could not be re-indexed and its older rows were left out of answers, so
    `outline` said no definitions with `indexed: true` and `symbols` found
    none, saying nothing of the refused write. Both now say partial, with
    recall's partialReason, and the outline no longer claims the file is
    indexed; once space is freed the edit is written and they are whole."""
    from ctxls.index import engine as engine_module
    from test_store import fill_the_disk, free_the_disk

    monkeypatch.setattr(engine_module, "STORE_RETRY_S", 3600.0)  # no retry until space is freed
    root = tmp_path / "proj"
    write_tree(root, FILES)
    engine = Engine(root, EngineOptions(embeddings=False))
    try:
        engine.index()
        assert request_in_process(engine, "ctxls/outline", {"path": "calc/helpers.py"})["partial"] \
            is False
        fill_the_disk(engine)
        write_tree(root, {"calc/helpers.py": HELPERS_PY + "\n\ndef quokka_helper(cls):\n"
                          "    return cls\n" + "# padding\n" * 30_000})
        outline = request_in_process(engine, "ctxls/outline", {"path": "calc/helpers.py"})
        assert (outline["symbols"], outline["indexed"], outline["partial"]) == ([], False, True)
        reason = outline["partialReason"]
        assert reason in recall_reason(engine) and "could not take the latest text of 1 file" in reason \
            and "full" in reason
        meter = request_in_process(engine, "ctxls/symbols", {"query": "Meter", "match": "exact"})
        assert meter == {"symbols": [], "partial": True, "partialReason": reason}
        # The CLI's and MCP's text says so too, not a plain "no definitions".
        from ctxls.daemon.formatting import outline_text, symbols_text
        assert symbols_text(meter) == f"no definitions found\n(partial: {reason})"
        assert outline_text(outline) == f"definitions of calc/helpers.py unknown\n(partial: {reason})"
        # Another file's definitions are found, and the answer still says what it may miss.
        cart = request_in_process(engine, "ctxls/symbols", {"query": "ShoppingCart", "match": "exact"})
        assert [d["path"] for d in cart["symbols"]] == ["web/cart.ts"] and cart["partial"]
        # A file whose rows are current is whole: not partial.
        other = request_in_process(engine, "ctxls/outline", {"path": "web/cart.ts"})
        assert other["indexed"] and other["partial"] is False and "partialReason" not in other

        free_the_disk(engine)
        monkeypatch.setattr(engine_module, "STORE_RETRY_S", 0.0)
        outline = request_in_process(engine, "ctxls/outline", {"path": "calc/helpers.py"})
        assert "quokka_helper" in [d["name"] for d in outline["symbols"]]
        assert (outline["indexed"], outline["partial"], "partialReason" in outline) == (True, False, False)
        meter = request_in_process(engine, "ctxls/symbols", {"query": "Meter", "match": "exact"})
        assert [d["symbol"] for d in meter["symbols"]] == ["Meter"] and meter["partial"] is False
    finally:
        engine.close()


def recall_reason(engine: Engine) -> str | None:
    return engine.recall("clamp", ["code"], mode="lexical").partial_reason


def test_symbols_on_a_first_pass_the_full_disk_refused_say_partial_and_why(tmp_path: Path):
    """Crash probe (t_full_cold_impact): a first pass refused by a full disk
    left `symbols` answering "no definitions found" for a name the folder
    defines, while recall said why it was partial. `symbols` says so too."""
    from ctxls.index.errors import WriteFailed
    from test_store import fill_the_disk

    root = tmp_path / "proj"
    # More than the store's free pages hold: the pass must grow the file.
    write_tree(root, FILES | {f"gen/mod_{n}.py": f"def generated_{n}():\n    return {n}\n" * 20
                              for n in range(100)})
    engine = Engine(root, EngineOptions(embeddings=False))
    try:
        fill_the_disk(engine)
        with pytest.raises(WriteFailed):
            engine.index()
        found = request_in_process(engine, "ctxls/symbols", {"query": "clamp_ratio"})
        assert found["partial"] is True and found["partialReason"] in recall_reason(engine)
        assert found["partialReason"].startswith("the index could not be updated (nothing was "
                                                 "written to") and "full" in found["partialReason"]
    finally:
        engine.close()


def test_a_one_word_query_naming_a_definition_with_a_symbol_gets_its_lines(tmp_path: Path):
    # query_shape calls `operator==`, `~Matrix` and `#secret` no name, so the
    # hit was the whole chunk although `ctxls symbols` finds each by it.
    matrix = ("namespace linalg {\n"                              # 0
              "\n"
              "class Matrix {\n"                                  # 2
              "public:\n"
              "    ~Matrix() {\n"                                 # 4
              "        release();\n"
              "    }\n"                                           # 6
              "\n"
              "    bool operator==(const Matrix& other) const {\n"  # 8
              "        return data_ == other.data_;\n"
              "    }\n"                                           # 10
              "\n"
              "    Matrix operator*(const Matrix& other) const {\n"  # 12
              "        Matrix out;\n"
              "        return out;\n"
              "    }\n"                                           # 15
              "\n"
              "    double operator()(int i) const {\n"            # 17
              "        return data_[i];\n"
              "    }\n"                                           # 19
              "\n"
              "private:\n"
              "    int* data_;\n"
              "};\n"
              "\n"
              "}  // namespace linalg\n")
    queue = ("class JobQueue {\n"                                 # 0
             "  constructor() {\n"
             "    this.jobs = [];\n"
             "  }\n"
             "\n"
             "  static #secret() {\n"                             # 5
             "    return 42;\n"
             "  }\n"                                              # 7
             "}\n")
    root = tmp_path / "ops"
    write_tree(root, {"matrix.hpp": matrix, "queue.js": queue})
    engine = Engine(root, EngineOptions())
    try:
        engine.index()
        for query, expected in [("operator==", ("linalg.Matrix.operator==", 8, 10)),
                                ("operator*", ("linalg.Matrix.operator*", 12, 15)),
                                ("~Matrix", ("linalg.Matrix.~Matrix", 4, 6)),
                                ("Matrix::operator==", ("linalg.Matrix.operator==", 8, 10)),
                                ("#secret", ("JobQueue.#secret", 5, 7)),
                                # Read as a call of `operator`, and `::~` as no qualifier, before.
                                ("operator()", ("linalg.Matrix.operator()", 17, 19)),
                                ("Matrix::~Matrix", ("linalg.Matrix.~Matrix", 4, 6))]:
            hit = engine.recall(query, ["code"], mode="lexical").hits_by_kind["code"][0]
            assert (hit.symbol, hit.start_line, hit.end_line) == expected, query
        # A symbol no definition is named keeps the chunk.
        hit = engine.recall("data_==", ["code"], mode="lexical").hits_by_kind["code"]
        assert all(h.symbol != "linalg.Matrix.operator==" for h in hit)
    finally:
        engine.close()


def test_definitions_whose_names_differ_only_in_case_are_separate_hits(make_engine):
    """Probe (stop 66): Java's `builder()` and its `Builder` class, Solidity's
    `Transfer` event and `transfer` function, were merged into one hit
    spanning both and labelled with the first, whichever was asked for. The
    name as written is the definition named; another case only when none is."""
    engine = make_engine({
        "Pizza.java": "package app;\n\npublic class Pizza {\n    private final int size;\n\n"
                      "    private Pizza(int size) { this.size = size; }\n\n"
                      "    /** Start building a pizza. */\n"
                      "    public static Builder builder() {\n        return new Builder();\n    }\n\n"
                      "    public static class Builder {\n        private int size;\n"
                      "        public Builder size(int s) { size = s; return this; }\n"
                      "        public Pizza build() { return new Pizza(size); }\n    }\n}\n",
        "Token.sol": "// SPDX-License-Identifier: MIT\npragma solidity ^0.8.0;\n\ncontract Token {\n"
                     "    mapping(address => uint256) public balances;\n"
                     "    event Transfer(address from, address to, uint256 amount);\n\n"
                     "    /// Move tokens to another account.\n"
                     "    function transfer(address to, uint256 amount) external returns (bool) {\n"
                     "        balances[msg.sender] -= amount;\n        balances[to] += amount;\n"
                     "        emit Transfer(msg.sender, to, amount);\n        return true;\n    }\n}\n",
    })
    assert _top_code_hit(engine, "Pizza.Builder") == ("Pizza.java", "Pizza.Builder", 12, 16)
    assert _top_code_hit(engine, "Pizza.builder") == ("Pizza.java", "Pizza.builder", 7, 10)
    assert _top_code_hit(engine, "Token.transfer") == ("Token.sol", "Token.transfer", 7, 13)
    assert _top_code_hit(engine, "Token.Transfer") == ("Token.sol", "Token.Transfer", 5, 5)
    # No definition in the case asked: any case still names it.
    assert _top_code_hit(engine, "builder.BUILD") == ("Pizza.java", "Pizza.Builder.build", 15, 15)


def test_a_name_written_as_its_languages_tools_print_it_is_its_definitions_hit(make_engine):
    """Probe (stop 66): Go's `(*LRU).Put`, rustc's `crate::net::http::fetch_body`,
    a C++ compiler's `Matrix<T>::multiply`, Elixir's and Erlang's arity
    (`withdraw/2`, `kv:put/3`), Lua's `Queue:push` and Swift's
    `Rect.scale(by:)` were read as sentences: the hit was the packed chunk,
    labelled with another of its definitions."""
    engine = make_engine({
        "cache.go": "package cache\n\ntype LRU struct {\n\titems map[string]int\n\torder []string\n}\n\n"
                    "// Get returns the cached value.\nfunc (c *LRU) Get(key string) (int, bool) {\n"
                    "\tv, ok := c.items[key]\n\treturn v, ok\n}\n\n"
                    "// Put stores a value, evicting the oldest entry when full.\n"
                    "func (c *LRU) Put(key string, value int) {\n\tc.items[key] = value\n"
                    "\tc.order = append(c.order, key)\n}\n",
        "src/lib.rs": "pub mod net {\n    pub mod http {\n        /// Send a GET request and return the body.\n"
                      "        pub async fn fetch_body(url: &str) -> Result<String, String> {\n"
                      "            Ok(url.to_string())\n        }\n    }\n}\n",
        "matrix.cpp": "namespace linalg {\n\ntemplate <typename T>\nclass Matrix {\npublic:\n"
                      "    Matrix<T> multiply(const Matrix<T>& other) const;\n    T trace() const;\n};\n\n"
                      "template <typename T>\n"
                      "Matrix<T> Matrix<T>::multiply(const Matrix<T>& other) const {\n"
                      "    return other;\n}\n\ntemplate <typename T>\nT Matrix<T>::trace() const {\n"
                      "    return T();\n}\n\n} // namespace linalg\n",
        "accounts.ex": "defmodule Bank.Accounts do\n  defstruct [:id, :balance]\n\n"
                       "  @doc \"Withdraw an amount from the account if funds allow.\"\n"
                       "  def withdraw(%__MODULE__{balance: b} = acct, amount) when amount <= b do\n"
                       "    {:ok, %{acct | balance: b - amount}}\n  end\n\n"
                       "  def deposit(acct, amount), do: %{acct | balance: acct.balance + amount}\nend\n",
        "queue.lua": "local Queue = {}\nQueue.__index = Queue\n\n--- Create a new empty queue.\n"
                     "function Queue.new()\n  return setmetatable({ first = 1, last = 0, items = {} }, Queue)\n"
                     "end\n\n--- Append a value at the back of the queue.\nfunction Queue:push(value)\n"
                     "  self.last = self.last + 1\n  self.items[self.last] = value\nend\n\nreturn Queue\n",
        "kv.erl": "-module(kv).\n-export([new/0, put/3]).\n\n%% Create an empty store.\nnew() ->\n    #{}.\n\n"
                  "%% Store a value under a key.\nput(Store, Key, Value) ->\n    maps:put(Key, Value, Store).\n",
        "Rect.swift": "struct Rect {\n    var width: Double\n    var height: Double\n\n"
                      "    /// Scale the rectangle by a factor.\n    func scale(by factor: Double) -> Rect {\n"
                      "        return Rect(width: width * factor, height: height * factor)\n    }\n\n"
                      "    func area() -> Double {\n        return width * height\n    }\n}\n",
    })
    for query, expected in (("(*LRU).Put", ("cache.go", "LRU.Put", 13, 17)),
                            ("cache.(*LRU).Put", ("cache.go", "LRU.Put", 13, 17)),
                            ("crate::net::http::fetch_body", ("src/lib.rs", "net.http.fetch_body", 2, 5)),
                            ("self::net::http::fetch_body", ("src/lib.rs", "net.http.fetch_body", 2, 5)),
                            ("Matrix<T>::multiply", ("matrix.cpp", "linalg.Matrix.multiply", 9, 12)),
                            ("Bank.Accounts.withdraw/2", ("accounts.ex", "Bank.Accounts.withdraw", 3, 6)),
                            ("Queue:push", ("queue.lua", "Queue.push", 8, 12)),
                            ("kv:put/3", ("kv.erl", "put", 7, 9)),
                            ("Rect.scale(by:)", ("Rect.swift", "Rect.scale", 4, 7))):
        assert _top_code_hit(engine, query) == expected, query
    # `ctxls symbols` and impact read them through the same name (query.dotted_name).
    for query, symbol in (("(*LRU).Put", "LRU.Put"), ("Matrix<T>::multiply", "linalg.Matrix.multiply"),
                          ("crate::net::http::fetch_body", "net.http.fetch_body"),
                          ("Queue:push", "Queue.push"), ("Rect.scale(by:)", "Rect.scale")):
        assert [d.symbol for d in engine.symbols(query, "exact")] == [symbol], query
    # A sentence with a colon, a port, and C++'s own operators stay as written.
    from ctxls.index.query import plain_name
    for text in ("note: the cache", "localhost:8080", "operator<=>", "operator->", "a < b > c",
                 "fix (*LRU).Put when full"):
        assert plain_name(text) == text


def test_a_destructor_qualified_by_its_namespace_is_its_definitions_hit(make_engine):
    """Probe (stop 66): `geo::Outer::~Outer` was read as a sentence naming the
    class `geo::Outer`, whose declaration came first; `Outer::~Outer` worked."""
    engine = make_engine({
        "outer.h": "#pragma once\nnamespace geo {\n\nclass Outer {\npublic:\n    Outer();\n"
                   "    ~Outer();\n    int size() const;\n};\n\n} // namespace geo\n",
        "outer.cpp": "#include \"outer.h\"\n\nnamespace geo {\n\nOuter::Outer() {}\n\n"
                     "// Release the outer resources.\nOuter::~Outer() {\n    // nothing\n}\n\n"
                     "int Outer::size() const { return 0; }\n\n} // namespace geo\n",
    })
    for query in ("geo::Outer::~Outer", "Outer::~Outer"):
        assert _top_code_hit(engine, query) == ("outer.cpp", "geo.Outer.~Outer", 6, 9), query
    assert [d.symbol for d in engine.symbols("geo::Outer::~Outer", "exact")] == ["geo.Outer.~Outer"]
