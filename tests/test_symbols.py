"""Definitions at their own lines (whatever chunk packing put them in), and
the symbol tools over them: definitions by name, a file's outline, code
like a location's. Python, TypeScript, Go and Kotlin: every language the
chunker reads goes through the same definition table."""

from __future__ import annotations

from pathlib import Path

import pytest

from ctxls.index.chunker import chunk_file
from ctxls.index.engine import Engine, EngineOptions
from ctxls.index.errors import InvalidParams
from ctxls.index.symbols import flatten

from conftest import write_tree

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
    for query in ("clamp_ratio", "where is clamp_ratio defined"):
        hit = next(h for h in engine.recall(query, ["code"]).hits_by_kind["code"]
                   if h.path == "calc/helpers.py")
        assert (hit.symbol, hit.start_line, hit.end_line) == ("clamp_ratio", 9, 11), query
        assert [d.symbol for d in hit.definitions] == ["clamp_ratio"]
    # A query that names no definition keeps the chunk, listing all it holds.
    hit = next(h for h in engine.recall("ratio vector", ["code"]).hits_by_kind["code"]
               if h.path == "calc/helpers.py" and h.start_line <= 9 <= h.end_line)
    assert {"clamp_ratio", "scale_vector"} <= {d.symbol for d in hit.definitions}
    assert all(hit.start_line <= d.line <= hit.end_line for d in hit.definitions)
    body = engine.recall("scale_vector", ["code"], body=True).hits_by_kind["code"][0]
    assert body.symbol == "scale_vector" and body.body == (
        "def scale_vector(v, k):\n    return [k * a for a in v]")


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


def test_related_code_by_identifiers_excludes_itself(engine: Engine):
    origin, hits, mode = engine.related("calc/helpers.py", 19)
    assert mode == "lexical"
    assert origin.path == "calc/helpers.py" and origin.start_line <= 19 <= origin.end_line
    assert hits and all(not (h.path == origin.path and h.start_line <= origin.end_line
                             and origin.start_line <= h.end_line) for h in hits)
    # The other callers of invert_ratio (packing put the first in the origin's chunk).
    assert [(h.path, h.symbol) for h in hits[:2]] == [("calc/helpers.py", "Meter.reading"),
                                                      ("calc/run.py", "main")]
    assert engine.related("calc/helpers.py", 999) == (None, [], "lexical")
    with pytest.raises(InvalidParams):
        engine.related("calc/helpers.py", -1)


def test_related_code_by_vectors_when_there_are_some(tmp_path: Path):
    root = tmp_path / "vec"
    write_tree(root, FILES)
    engine = Engine(root, EngineOptions(embeddings=True))
    try:
        engine.index()
        engine.embed_pending()
        origin, hits, mode = engine.related("web/cart.ts", 9, n=3)
        assert mode == "semantic" and origin.symbol == "ShoppingCart.addLine"
        assert len(hits) == 3 and all(h.path != "web/cart.ts" or h.start_line > origin.end_line
                                      or h.end_line < origin.start_line for h in hits)
        assert hits == sorted(hits, key=lambda h: -h.score)
    finally:
        engine.close()
