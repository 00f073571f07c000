"""Unit tests of ctxls.impact: the word sweep, binding extraction, verdicts on
tricky receivers, callees and complexity, the file limits, risk and hedges."""

from __future__ import annotations

import os
import subprocess
import time
from collections import Counter
from pathlib import Path

import pytest

from conftest import callers, write_tree
from ctxls.impact import analysis, index_view, ripgrep, risk, syntax
from ctxls.impact.callers import Limits
from ctxls.impact.risk import Evidence, assess
from ctxls.impact.syntax import Binding, SourceCache, SourceFile
from ctxls.index import chunk_worker, languages
from ctxls.index.discovery import DiscoveryOptions, FileFilter, reason_family
from ctxls.index.engine import Engine
from ctxls.index.paths import is_test_path
from ctxls.index.errors import RipgrepMissing
from ctxls.index.symbols import find_definitions


# -- ripgrep ------------------------------------------------------------------


def test_locate_rg_honours_ctxls_rg_and_reports_missing(monkeypatch, tmp_path: Path):
    monkeypatch.delenv(ripgrep.RG_ENV, raising=False)
    found = ripgrep.locate_rg()  # the ripgrep wheel's binary, or one on PATH
    assert Path(found).name.startswith("rg")
    monkeypatch.setenv(ripgrep.RG_ENV, found)
    assert ripgrep.locate_rg() == found
    monkeypatch.setenv(ripgrep.RG_ENV, str(tmp_path / "missing-rg"))
    with pytest.raises(RipgrepMissing) as err:
        ripgrep.locate_rg()
    assert err.value.code == -32001 and err.value.data == {} and "install ripgrep" in err.value.message


@pytest.mark.parametrize("impostor", ["/bin/false", "/bin/true"])
def test_an_rg_that_does_not_search_is_an_error(monkeypatch, tmp_path: Path, impostor: str):
    monkeypatch.setenv(ripgrep.RG_ENV, impostor)
    with pytest.raises(RipgrepMissing):
        ripgrep.sweep(tmp_path, "word", ("py",), lambda path: True, {}, 1 << 20)


def test_source_cache_reuses_parses_and_bounds_its_size():
    cache = SourceCache(max_chars=20)
    first = cache.get("k1", "a.py", "x = 1\n")
    assert cache.get("k1", "a.py", "x = 1\n") is first  # same text: same parse
    assert cache.get("k1", "a.py", "x = 2\n") is not first  # changed text: parsed again
    cache.get("k2", "b.py", "y = 1\n")
    cache.get("k3", "c.py", "z = 1\n")
    kept = cache.get("k3", "c.py", "z = 1\n")
    cache.get("k4", "d.py", "w = 1\n")  # 4 x 6 chars > 20: the oldest goes
    assert cache.get("k3", "c.py", "z = 1\n") is kept
    assert cache.get("k1", "a.py", "x = 2\n").tree is not None


@pytest.mark.parametrize("git", [True, False])
def test_sweep_honours_gitignore_include_store_and_buffers(tmp_path: Path, git: bool):
    root = tmp_path / "tree"
    write_tree(root, {
        ".gitignore": "build/\n",
        "src/a.py": "x = 1\nvalue = frobnicate(x)  # frobnicate\n",
        "src/b.py": "frobnicated = 2\n",  # not the whole word
        "build/gen.py": "frobnicate()\n",  # ignored
        "data.json": '{"frobnicate": 1}\n',  # not an indexed type
        ".ctxls/x.py": "frobnicate()\n",  # the store folder
        "src/open.py": "nothing here\n",
    })
    if git:
        subprocess.run(["git", "init", "-q", str(root)], check=True)
    wanted = FileFilter(DiscoveryOptions())
    buffers = {"src/open.py": "call = frobnicate\n", "src/new.py": "\n\nfrobnicate()\n"}
    found = ripgrep.sweep(root, "frobnicate", DiscoveryOptions().include, wanted, buffers, 1 << 20)
    assert found.lines == {"src/a.py": [1], "src/open.py": [0], "src/new.py": [2]}
    assert found.lines_dropped == 0
    # A buffer replaces its file: the word gone from the buffer is gone.
    gone = ripgrep.sweep(root, "frobnicate", DiscoveryOptions().include, wanted,
                         {"src/a.py": "x = 1\n"}, 1 << 20)
    assert "src/a.py" not in gone.lines


def _sweep_of(engine: Engine, word: str, scope: ripgrep.Scope | None) -> ripgrep.Sweep:
    options = engine.options.discovery
    return ripgrep.sweep(engine.root, word, options.include, engine.indexer.wanted,
                         engine.open_buffers(), options.max_file_bytes, scope)


def _touch_later(path: Path, text: str) -> None:
    """Rewrite a file with an mtime no indexed row can have (the index is stale for it)."""
    path.write_text(text, encoding="utf-8")
    later = time.time_ns() + 5_000_000_000
    os.utime(path, ns=(later, later))


def test_scoped_sweep_reads_the_files_the_index_names_and_finds_what_rg_finds(make_engine):
    engine = make_engine({
        "pkg/core.py": "def frobnicate(x):\n    return x\n",
        "pkg/use.py": "from pkg.core import frobnicate\n\n\ndef run():\n    return frobnicate(1)\n",
        "pkg/near.py": "frobnicated = 2\nnot_frobnicate = 3\n",  # the token, never the word
        "other.py": "x = 1\n",
        "README.md": "Call `frobnicate` first.\n",
    })
    scope = index_view.sweep_scope(engine, "frobnicate")
    assert scope is not None and scope.folders == []
    assert "other.py" not in scope.files
    assert {"pkg/core.py", "pkg/use.py", "README.md"} <= set(scope.files)
    scoped, whole = _sweep_of(engine, "frobnicate", scope), _sweep_of(engine, "frobnicate", None)
    assert scoped.lines == whole.lines == {"pkg/core.py": [0], "pkg/use.py": [0, 4], "README.md": [0]}


@pytest.mark.parametrize("name", ["getUserName", "running", "__init__", "HTTPServer", "x2", "ab"])
def test_scoped_sweep_finds_every_shape_of_name_where_rg_does(make_engine, name: str):
    """However the index tokenizes a name (camelCase parts, stems, dunders,
    short words), the files it names hold every whole-word occurrence."""
    engine = make_engine({
        "a.py": f"def {name}():\n    pass\n",
        "b.py": f"import a\nx = a.{name}()\ny = pkg.mod.{name}\n",
        "c.py": f"obj.{name}_suffix = 1\nz = {name}X\nw = X{name}\n",  # not the whole word
        "d.md": f"See {name}.\n",
        "e.py": f"s = '{name}'  # {name}\n",
    })
    scope = index_view.sweep_scope(engine, name)
    assert scope is not None
    scoped, whole = _sweep_of(engine, name, scope), _sweep_of(engine, name, None)
    assert scoped.lines == whole.lines
    assert set(whole.lines) == {"a.py", "b.py", "d.md", "e.py"}


def test_a_caller_in_a_file_edited_since_it_was_indexed_is_found(make_engine):
    engine = make_engine({
        "core.py": "def frobnicate(x):\n    return x\n",
        "late.py": "def later():\n    return 0\n",
    })
    _touch_later(engine.root / "late.py",
                 "from core import frobnicate\n\n\ndef later():\n    return frobnicate(0)\n")
    assert "late.py" in index_view.sweep_scope(engine, "frobnicate").files
    assert callers(analysis.analyze(engine, "frobnicate")) == {("late.py", 4, "later", True)}


def test_callers_in_files_and_folders_created_since_the_pass_are_found(make_engine, tmp_path: Path):
    engine = make_engine({
        ".gitignore": "build/\n",
        "core.py": "def frobnicate(x):\n    return x\n",
        "pkg/__init__.py": "",
    })
    outside = tmp_path / "outside"
    write_tree(outside, {"far.py": "from core import frobnicate\nfrobnicate(9)\n"})
    write_tree(engine.root, {
        "pkg/fresh.py": "from core import frobnicate\nfrobnicate(1)\n",  # a new file, known folder
        "newpkg/deep/mod.py": "from core import frobnicate\nfrobnicate(2)\n",  # a new folder
        "build/gen.py": "from core import frobnicate\nfrobnicate(3)\n",  # new but ignored
    })
    (engine.root / "pkg" / "far.py").symlink_to(outside / "far.py")  # a new link out of the root
    (engine.root / "farpkg").symlink_to(outside)
    scope = index_view.sweep_scope(engine, "frobnicate")
    assert "pkg/fresh.py" in scope.files and scope.folders == ["newpkg"]
    assert {(path, line) for path, line, _, _ in callers(analysis.analyze(engine, "frobnicate"))} == {
        ("pkg/fresh.py", 1), ("newpkg/deep/mod.py", 1)}


def test_a_file_indexed_from_a_closed_buffer_is_read_from_disk(make_engine):
    engine = make_engine({
        "core.py": "def frobnicate(x):\n    return x\n",
        "use.py": "from core import frobnicate\n\n\ndef run():\n    return frobnicate(1)\n",
    })
    engine.set_buffer("use.py", "def run():\n    return 0\n")  # an unsaved edit without the call
    assert callers(analysis.analyze(engine, "frobnicate")) == set()
    # The moment between the buffer's close and its file's re-index: the row
    # still holds the buffer's text, the file on disk calls frobnicate.
    with engine._buffers_lock:
        engine._buffers.pop("use.py")
    assert callers(analysis.analyze(engine, "frobnicate")) == {("use.py", 4, "run", True)}


def test_a_new_file_is_read_until_the_index_holds_it(make_engine):
    engine = make_engine({"core.py": "def frobnicate(x):\n    return x\n", "pkg/__init__.py": ""})
    write_tree(engine.root, {"pkg/fresh.py": "unrelated = 1\n"})
    assert "pkg/fresh.py" in index_view.sweep_scope(engine, "frobnicate").files
    engine.file_changed_on_disk("pkg/fresh.py")  # a watched-file event: indexed now
    assert "pkg/fresh.py" not in index_view.sweep_scope(engine, "frobnicate").files


@pytest.mark.parametrize("name", ["grüße", "f" * 60])
def test_a_name_the_index_cannot_tokenize_is_swept_on_the_whole_tree(make_engine, name: str):
    """`tokenize.expand` splits at non-ASCII letters and drops tokens over 48
    characters: the index cannot say which files hold such a name."""
    engine = make_engine({
        "core.py": f"def {name}(x):\n    return x\n",
        "use.py": f"from core import {name}\n\n\ndef run():\n    return {name}(1)\n",
    })
    assert index_view.sweep_scope(engine, name) is None
    assert callers(analysis.analyze(engine, name)) == {("use.py", 4, "run", True)}


def test_an_index_no_whole_pass_of_this_process_listed_is_swept_on_the_whole_tree(make_engine):
    engine = make_engine({"core.py": "def frobnicate():\n    return 1\n"})
    assert index_view.sweep_scope(engine, "frobnicate") is not None
    served = Engine(engine.root)  # the store as the last pass left it, nothing listed here
    try:
        served.serve_stored_index()
        assert index_view.sweep_scope(served, "frobnicate") is None
    finally:
        served.close()


# -- syntax -------------------------------------------------------------------


def test_import_bindings_of_python_js_and_go():
    python = SourceFile("m.py", "import os.path\nimport numpy as np\nfrom .a import f as g, h\n"
                                "from b import *\ndef inner():\n    from c import d\n")
    assert python.bindings == [
        Binding("os", "os.path", None, 0, package=True), Binding("np", "numpy", None, 1),
        Binding("g", ".a:f", "f", 2), Binding("h", ".a:h", "h", 2), Binding("*", "b", "*", 3),
        Binding("d", "c:d", "d", 5, function=(4, 5))]  # a local of inner()
    js = SourceFile("m.ts", "import d, { f as g } from './a';\nimport * as ns from './b';\n"
                            "export { x as y } from './c';\nexport * from './e';\n"
                            "const { p, q: r } = require('./f');\nconst mod = require('./g');\n")
    assert js.bindings == [
        Binding("d", "./a", "default", 0), Binding("g", "./a", "f", 0), Binding("ns", "./b", None, 1),
        Binding("y", "./c", "x", 2, reexport=True), Binding("*", "./e", "*", 3, reexport=True),
        Binding("p", "./f", "p", 4), Binding("r", "./f", "q", 4), Binding("mod", "./g", None, 5)]
    go = SourceFile("m.go", 'package m\nimport (\n\t"fmt"\n\tal "x.io/util"\n\t"x.io/yaml.v2"\n'
                            '\t"x.io/api/v3"\n\t. "x.io/dot"\n)\n')
    assert [(b.local, b.spec) for b in go.bindings] == [
        ("fmt", "fmt"), ("al", "x.io/util"), ("yaml", "x.io/yaml.v2"), ("api", "x.io/api/v3"),
        ("*", "x.io/dot")]


# -- verdicts -------------------------------------------------------------------


def test_dynamic_dispatch_and_untyped_receivers(make_engine):
    engine = make_engine({
        "jobs.py": (
            "class Base:\n"
            "    def run(self):\n"
            "        return self.step()\n"  # line 2: Base.step, or a subclass's override
            "\n"
            "    def step(self):\n"
            "        return 1\n"
            "\n"
            "\n"
            "class Sub(Base):\n"
            "    def step(self):\n"
            "        return super().step() + 1\n"  # line 10: Base.step
            "\n"
            "\n"
            "class Store:\n"
            "    def get(self, key):\n"
            "        return key\n"
        ),
        "use.py": (
            "from jobs import Store, Sub\n"
            "\n"
            "\n"
            "def lookup(d, key):\n"
            "    return d.get(key)\n"  # line 4: a dict? `get` is a builtin method name
            "\n"
            "\n"
            "def typed():\n"
            "    return Store().get(1), Sub().step()\n"  # line 8: known classes
            "\n"
            "\n"
            "def local(key, **options):\n"
            "    store = Store()\n"
            "    options.get(key)\n"  # line 13: **options is a dict
            "    return store.get(key)\n"  # line 14: store holds a Store
        ),
    })
    base_step = analysis.analyze(engine, "Base.step")
    assert callers(base_step) == {("jobs.py", 2, "Base.run", True), ("jobs.py", 10, "Sub.step", True)}
    assert base_step.mention_kinds["elsewhere"] == 1  # Sub().step() is Sub's own
    sub_step = analysis.analyze(engine, "Sub.step")
    assert callers(sub_step) == {("jobs.py", 2, "Base.run", False), ("use.py", 8, "typed", True)}
    assert any("unconfirmed" in h for h in sub_step.hedges)
    get = analysis.analyze(engine, "Store.get")
    assert callers(get) == {("use.py", 4, "lookup", False), ("use.py", 8, "typed", True),
                            ("use.py", 14, "local", True)}
    assert get.mention_kinds["elsewhere"] == 1  # options.get


def test_a_query_matching_several_definitions_answers_each_best_first(make_engine):
    engine = make_engine({
        "a.py": "def fetch():\n    return 1\n",
        "b.py": "class Client:\n    def fetch(self):\n        return 2\n",
        "c.py": "from a import fetch\n\n\ndef go(client):\n    return fetch() + client.fetch()\n",
    })
    result = analysis.analyze(engine, "fetch")
    # The exact name first: the function; the method is the second answer.
    assert [d.symbol for d in result.definitions] == ["fetch"]
    assert [a.definition.symbol for a in result.per_definition] == ["fetch", "Client.fetch"]
    assert result.definitions_matched == 2
    assert result.hedges[0].startswith("2 definitions match 'fetch': this answer is for fetch in a.py")
    # fetch() is a.py's; client.fetch() can only be Client's: each to its own definition.
    assert [(c.span.start_character, c.confirmed) for c in result.callers] == [(11, True)]
    method = result.per_definition[1]
    assert [(c.span.start_character, c.confirmed) for c in method.callers] == [(28, True)]
    assert method.risk == "med"  # public, with a caller
    only_a = analysis.analyze(engine, "fetch", "a.py")
    assert only_a.per_definition == [] and only_a.definitions_matched == 1
    assert [(c.span.start_character, c.confirmed) for c in only_a.callers] == [(11, True)]
    assert only_a.mention_kinds["elsewhere"] == 1  # client.fetch(): a method, not a.py's function


def test_several_definitions_rank_by_import_proximity_to_the_asking_file(make_engine):
    store = "class Store:\n    def get(self, key):\n        return key\n"
    engine = make_engine({
        "shop/store.py": store,
        "legacy/store.py": store,  # a compatibility copy
        "shop/view.py": "from shop.store import Store\n\n\ndef show():\n    return Store().get(1)\n",
        "shop/other.py": "x = 1\n",
        "legacy/main.py": "from legacy.store import Store as S\n\n\ndef run():\n    return S().get(2)\n",
    })

    def best(context):
        found = analysis.analyze(engine, "Store.get", context=context)
        return found.definitions[0].path, [(c.path, c.confirmed) for c in found.callers]

    assert best("shop/view.py") == ("shop/store.py", [("shop/view.py", True)])  # its import
    assert best("legacy/main.py") == ("legacy/store.py", [("legacy/main.py", True)])
    assert best("shop/other.py")[0] == "shop/store.py"  # the same folder
    # Qualified by its module, one definition: no per definition answers.
    assert analysis.analyze(engine, "legacy.store.Store.get").per_definition == []


def test_unconfirmed_callers_come_ranked_capped_and_counted_by_reason(make_engine, monkeypatch):
    engine = make_engine({
        "jobs.py": ("class Base:\n    def start(self):\n        return self.launch()\n\n"
                    "    def launch(self):\n        return 0\n\n\n"
                    "class Job(Base):\n    def launch(self):\n        return 1\n"),
        "others.py": ("class Rocket:\n    def launch(self):\n        return 2\n\n\n"
                      "class Boat:\n    def launch(self):\n        return 3\n"),
        "cache.py": "class Cache:\n    def get(self, key):\n        return key\n",
        "a_use.py": "def go(thing, mapping):\n    return thing.launch(), mapping.get(1)\n",
    })
    launch = analysis.analyze(engine, "Job.launch")
    # self.launch() in Base may be Job's override: before a name three other classes define.
    assert [(c.path, c.reason) for c in launch.callers] == [("jobs.py", "override"), ("a_use.py", "shared-name")]
    assert (launch.confirmed, launch.unconfirmed, launch.unconfirmed_omitted) == (0, 2, 0)
    assert launch.unconfirmed_reasons == {"override": 1, "shared-name": 1}
    get = analysis.analyze(engine, "Cache.get")
    assert [(c.path, c.reason) for c in get.callers] == [("a_use.py", "builtin-name")]
    monkeypatch.setattr(analysis, "MAX_UNCONFIRMED_LISTED", 1)
    capped = analysis.analyze(engine, "Job.launch")
    assert [c.reason for c in capped.callers] == ["override"]
    assert (capped.unconfirmed, capped.unconfirmed_omitted) == (2, 1)
    assert capped.unconfirmed_reasons == {"override": 1, "shared-name": 1}


def test_callees_skip_builtins_and_complexity_counts_decisions(make_engine):
    engine = make_engine({
        "calc.py": (
            "def helper(x):\n"
            "    return x\n"
            "\n"
            "\n"
            "def compute(items):\n"
            "    total = 0\n"
            "    for item in items:\n"
            "        if item and item > 0 or helper(item):\n"
            "            total += len(str(item))\n"
            "    while total > 100:\n"
            "        total = helper(total) - 1\n"
            "    try:\n"
            "        print(total)\n"
            "    except ValueError:\n"
            "        pass\n"
            "    return [i for i in items if i] if total else None\n"
        ),
    })
    result = analysis.analyze(engine, "compute")
    assert [(c.symbol, [s.start_line for s in c.call_sites]) for c in result.callees] == [("helper", [7, 10])]
    # for, if, and, or, while, except, comprehension for + if, conditional expression
    assert result.complexity == 1 + 9


def test_definitions_at_a_position_follow_declarations_uses_and_aliases(make_engine):
    engine = make_engine({
        "lib.py": "def area(r):\n    return 3 * r * r\n",
        "app.py": "from lib import area as surface\n\n\nprint(surface(2))\n",
    })
    (site,) = analysis.definitions_at(engine, "lib.py", 0, 5)
    assert (site.definition.symbol, site.name_span.start_character, site.name_span.end_character) == ("area", 4, 8)
    (used,) = analysis.definitions_at(engine, "app.py", 3, 8)
    assert used.definition.key == ("lib.py", "area")
    assert analysis.definitions_at(engine, "app.py", 3, 1) == []  # print: not indexed
    with pytest.raises(Exception) as err:
        analysis.analyze(engine, symbol=" ")
    assert getattr(err.value, "data", None) == {"param": "symbol"}


def test_file_limits_cap_and_count_what_is_left(make_engine):
    engine = make_engine({"m.py": "def tick():\n    return 0\n\n\ndef tock():\n    return tick() + tick()\n",
                          "far.py": "def far():\n    return tick()\n"})
    capped = analysis.analyze(engine, "tick", limits=Limits(near_files=0, distant_files=0))
    assert capped.callers == [] and capped.mention_kinds.get("unchecked", 0) == 3
    assert capped.partial and (capped.unchecked_files, capped.unchecked_lines) == (2, 3)
    assert capped.risk == "med" and any(h.startswith("partial: 3 occurrence line(s) in 2 file(s)")
                                        for h in capped.hedges)
    near_only = analysis.analyze(engine, "tick", limits=Limits(near_files=1, distant_files=0))
    assert (near_only.confirmed, near_only.unchecked_files) == (2, 1)  # the defining file first
    full = analysis.analyze(engine, "tick")
    assert full.confirmed == 2 and full.unconfirmed == 1 and not full.partial
    assert "unchecked" not in full.mention_kinds


# -- risk ------------------------------------------------------------------------------


@pytest.mark.parametrize("evidence, bucket", [
    (Evidence(), "low"),
    (Evidence(confirmed_sites=1, caller_files=1), "low"),
    (Evidence(confirmed_sites=1, caller_files=1, public=True), "med"),
    (Evidence(confirmed_sites=2, caller_files=2), "med"),
    (Evidence(confirmed_sites=4, caller_files=1), "med"),
    (Evidence(unconfirmed_sites=3, caller_files=1), "med"),
    (Evidence(named_in_strings=1), "med"),
    (Evidence(mentions=Counter(unchecked=5)), "med"),
    (Evidence(confirmed_sites=5, caller_files=5), "high"),
    (Evidence(confirmed_sites=15, caller_files=1), "high"),
    (Evidence(test_confirmed_sites=40), "low"),  # tests only never raise the bucket
])
def test_risk_buckets(evidence: Evidence, bucket: str):
    assert assess(evidence)[0] == bucket


@pytest.mark.parametrize("evidence", [
    Evidence(), Evidence(public=True), Evidence(unconfirmed_sites=2, caller_files=1),
    Evidence(test_unconfirmed_sites=1), Evidence(mentions=Counter(comment=3, string=1)),
])
def test_no_confirmed_caller_is_never_stated_bare(evidence: Evidence):
    bucket, hedges = assess(evidence)
    assert hedges and hedges[0].startswith(("no references found", "no confirmed callers"))
    if bucket == "low" or not evidence.confirmed_sites + evidence.unconfirmed_sites:
        assert risk.BLIND_SPOTS in hedges


@pytest.mark.parametrize("evidence", [
    Evidence(), Evidence(confirmed_sites=1, caller_files=1), Evidence(test_confirmed_sites=3),
    Evidence(confirmed_sites=2, caller_files=1, mentions=Counter(comment=1)),
])
def test_every_low_answer_says_what_the_sweep_cannot_see(evidence: Evidence):
    bucket, hedges = assess(evidence)
    assert bucket == "low" and risk.BLIND_SPOTS in hedges
    assert "dynamic dispatch" in risk.BLIND_SPOTS and "confirmed" in risk.BLIND_SPOTS
    assert risk.BLIND_SPOTS not in assess(Evidence(confirmed_sites=5, caller_files=5))[1]


def test_test_paths():
    for path in ("tests/test_x.py", "pkg/tests/helpers.py", "x_test.go", "src/a.test.ts",
                 "web/__tests__/a.js", "conftest.py", "spec/a.spec.js"):
        assert is_test_path(path), path
    for path in ("src/testing_utils_not.py", "pkg/contest.py", "attestation.py", "src/latest/x.py"):
        assert not is_test_path(path), path


def test_js_default_exports_commonjs_and_this(make_engine):
    engine = make_engine({
        "lib/fmt.js": "export default function money(v) {\n  return v;\n}\n",
        "lib/calc.js": ("function total(xs) {\n  return xs.length;\n}\n"
                        "class Cart {\n  sum() {\n    return total(this.items) + this.tax();\n  }\n"
                        "  tax() {\n    return 0;\n  }\n}\nmodule.exports = { total, Cart };\n"),
        "app.js": ("import pretty from './lib/fmt';\nconst calc = require('./lib/calc');\n\n"
                   "export function show(xs) {\n  return pretty(calc.total(xs));\n}\n"),
    })
    money = analysis.analyze(engine, "money")
    assert callers(money) == {("app.js", 4, "show", True)}  # the default import, renamed
    total = analysis.analyze(engine, "total")
    # In its file, from a method, through require(); the export object is a use as a value.
    assert callers(total) == {("lib/calc.js", 5, "Cart.sum", True), ("lib/calc.js", 11, None, True),
                              ("app.js", 4, "show", True)}
    tax = analysis.analyze(engine, "Cart.tax")
    assert callers(tax) == {("lib/calc.js", 5, "Cart.sum", True)}  # this.tax()


def test_module_level_instances_type_their_receivers(make_engine):
    engine = make_engine({
        "web.py": ("class App:\n    def route(self, path):\n        return path\n\n\n"
                   "app = App()\n\n\n@app.route('/')\ndef index():\n    return 1\n"),
        "other.py": "class Router:\n    def route(self, path):\n        return path\n",
    })
    # `route` has two definitions: `app` is an App, so the decorator is App.route's.
    assert callers(analysis.analyze(engine, "App.route")) == {("web.py", 8, "index", True)}
    router = analysis.analyze(engine, "Router.route")
    assert router.callers == [] and router.mention_kinds["elsewhere"] == 1


# -- class identity: by module, not by bare name (issue 16) -------------------


CHECKER = ("class Checker:\n"
           "    def is_true(self, x):\n"
           "        return bool(x)\n"
           "\n"
           "    def run(self, x):\n"
           "        return self.is_true(x)\n")  # line 5


def test_a_class_is_its_module_s_not_every_class_of_that_name(make_engine):
    engine = make_engine({
        "pkg/__init__.py": "from .checks import Checker as Checker\n",
        "pkg/checks.py": CHECKER,
        "pkg/util.py": "def parse(text):\n    return text\n",
        "pkg/v1/__init__.py": "",
        "pkg/v1/checks.py": CHECKER,  # a compatibility copy: same names, another class
        "pkg/v1/util.py": "def parse(text):\n    return text.strip()\n",
        "app.py": (
            "from pkg import Checker as C\n"  # through the package's re-export, aliased
            "from pkg.v1.checks import Checker as OldChecker\n"
            "from pkg.util import parse\n"
            "from pkg.v1 import util as old_util\n"
            "\n"
            "\n"
            "def new(x):\n"
            "    return C().is_true(parse(x))\n"  # line 7: the current class and function
            "\n"
            "\n"
            "def old(x):\n"
            "    checker = OldChecker()\n"
            "    return checker.is_true(old_util.parse(x))\n"  # line 12: the v1 copies
            "\n"
            "\n"
            "class Strict(C):\n"
            "    def is_true(self, x):\n"
            "        return super().is_true(x) and x == 1\n"  # line 17: the base's, as imported
        ),
    })
    current = analysis.analyze(engine, "Checker.is_true", "pkg/checks.py")
    assert callers(current) == {("pkg/checks.py", 5, "Checker.run", True), ("app.py", 7, "new", True),
                                ("app.py", 17, "Strict.is_true", True)}
    old = analysis.analyze(engine, "Checker.is_true", "pkg/v1/checks.py")
    assert callers(old) == {("pkg/v1/checks.py", 5, "Checker.run", True), ("app.py", 12, "old", True)}
    # super().is_true() is the base's: not a caller of Strict's own is_true.
    strict = analysis.analyze(engine, "Strict.is_true")
    assert all(c.span.start_line != 17 for c in strict.callers)
    assert callers(analysis.analyze(engine, "parse", "pkg/util.py")) == {("app.py", 7, "new", True)}
    assert callers(analysis.analyze(engine, "parse", "pkg/v1/util.py")) == {("app.py", 12, "old", True)}


def test_super_reaches_a_base_of_the_same_name_imported_under_another(make_engine):
    engine = make_engine({
        "core/blueprints.py": ("class Blueprint:\n    def register(self, app):\n        return app\n"),
        "web/blueprints.py": (
            "from core.blueprints import Blueprint as CoreBlueprint\n"
            "\n"
            "\n"
            "class Blueprint(CoreBlueprint):\n"
            "    def register(self, app):\n"
            "        return super().register(app)\n"  # line 5: core's register
        ),
    })
    core = analysis.analyze(engine, "Blueprint.register", "core/blueprints.py")
    assert callers(core) == {("web/blueprints.py", 5, "Blueprint.register", True)}
    web = analysis.analyze(engine, "Blueprint.register", "web/blueprints.py")
    assert web.callers == []


def test_callers_in_and_through_symlinked_modules_inside_the_root(tmp_path: Path):
    """Discovery indexes a link inside the root under its target's path; the
    sweep finds the callers there, and an import through the link's path
    leads to the target."""
    root = tmp_path / "linked"
    write_tree(root, {
        "core.py": "def tick():\n    return 1\n",
        "shared/__init__.py": "",
        "shared/helpers.py": "from core import tick\n\n\ndef use():\n    return tick()\n",
        "pkg/__init__.py": "",
        "vendor/lib/mod.py": "from core import tick\n\n\ndef deep():\n    return tick() + 1\n",
        "app.py": "from pkg.helpers import use\nfrom lib.mod import deep\n\nuse()\ndeep()\n",
    })
    (root / "pkg" / "helpers.py").symlink_to("../shared/helpers.py")  # a linked module
    (root / "lib").symlink_to("vendor/lib")  # a linked folder
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    engine = Engine(root)
    try:
        engine.cold_index()
        assert callers(analysis.analyze(engine, "tick")) == {
            ("shared/helpers.py", 4, "use", True), ("vendor/lib/mod.py", 4, "deep", True)}
        # `from pkg.helpers import use`: through the link, to the file the index holds.
        assert callers(analysis.analyze(engine, "use")) == {("app.py", 3, None, True)}
        assert callers(analysis.analyze(engine, "deep")) == {("app.py", 4, None, True)}
    finally:
        engine.close()


def test_a_symbol_query_without_context_prefers_the_maintained_definition(make_engine):
    """A compatibility copy whose own module calls it more does not outrank
    the maintained class; asked from a file that imports the copy, the copy comes first."""
    engine = make_engine({
        "app/__init__.py": "",
        "app/store.py": "class Store:\n    def get(self, key):\n        return key\n",
        "app/view.py": "from app.store import Store\n\n\ndef show():\n    return Store().get(1)\n",
        "app/v1/__init__.py": "",
        "app/v1/store.py": (
            "class Store:\n"
            "    def get(self, key):\n"
            "        return key\n"
            "\n"
            "    def many(self, keys):\n"
            "        return [self.get(k) for k in keys] + [self.get(0), self.get(1)]\n"),
        "app/v1/main.py": "from app.v1.store import Store\n\n\ndef run():\n    return Store().get(2)\n",
    })
    asked = analysis.analyze(engine, "Store.get")
    assert [a.definition.path for a in asked.per_definition] == ["app/store.py", "app/v1/store.py"]
    assert (asked.definitions[0].path, asked.confirmed) == ("app/store.py", 1)
    assert asked.per_definition[1].confirmed == 4  # more than the maintained one: not what ranks
    from_copy = analysis.analyze(engine, "Store.get", context="app/v1/main.py")
    assert from_copy.definitions[0].path == "app/v1/store.py"


def test_a_parameter_or_local_of_the_same_name_is_not_the_module_s_function(make_engine):
    engine = make_engine({
        "views.py": (
            "def result(job):\n"
            "    result = job.outcome()\n"  # a local of the same name
            "    return result.ready()\n"  # line 2: the local, not the function
            "\n"
            "\n"
            "def runner(n):\n"
            "    return runner(n - 1) if n else 0\n"  # line 6: recursion is a call
            "\n"
            "\n"
            "def test_it(runner):\n"
            "    return runner.invoke(result)\n"  # line 10: a parameter; `result` the function
        ),
    })
    assert callers(analysis.analyze(engine, "result")) == {("views.py", 10, "test_it", True)}
    # A parameter named like it may hold what it returns (a test fixture): unconfirmed, never dropped.
    runner = analysis.analyze(engine, "runner")
    assert callers(runner) == {("views.py", 6, "runner", True), ("views.py", 10, "test_it", False)}
    assert runner.unconfirmed_reasons == {"parameter": 1}


def test_a_read_on_an_untyped_receiver_never_confirms_by_a_unique_name(make_engine):
    engine = make_engine({
        "resp.py": ("class Response:\n    @property\n    def payload(self):\n        return 1\n\n"
                    "    def render(self):\n        return 2\n"),
        "use.py": "def show(r):\n    return r.payload, r.render()\n",  # r: any object
    })
    # Any object may have a `payload` attribute the index does not list; a call is a method.
    payload = analysis.analyze(engine, "Response.payload")
    assert [(c.path, c.confirmed, c.reason) for c in payload.callers] == [("use.py", False, "untyped-receiver")]
    assert callers(analysis.analyze(engine, "Response.render")) == {("use.py", 1, "show", True)}


# -- bindings a type checker follows (sixth session, against pyright) ----------


def test_a_function_imported_from_a_module_of_its_own_name_is_the_function(make_engine):
    """``from .render import render``: the module has the attribute, so the
    name is the function, not the submodule (rich's ``_emoji_replace``)."""
    engine = make_engine({
        "pkg/__init__.py": "",
        "pkg/render.py": "def render(x):\n    return x\n",
        "pkg/page.py": (
            "from .render import render\n"
            "from pkg.render import render as draw\n"
            "\n"
            "\n"
            "def show():\n"
            "    return render(1)\n"  # line 5
            "\n"
            "\n"
            "def again():\n"
            "    return draw(2)\n"  # line 9
        ),
        "pkg/star.py": "from .render import *\n\n\ndef every():\n    return render(3)\n",  # line 4
        "pkg/views.py": "from . import render\n\n\ndef module_use():\n    return render.render(4)\n",  # line 4
    })
    assert callers(analysis.analyze(engine, "render")) == {
        ("pkg/page.py", 5, "show", True), ("pkg/page.py", 9, "again", True), ("pkg/star.py", 4, "every", True),
        ("pkg/views.py", 4, "module_use", True)}


def test_an_import_inside_a_function_binds_the_name_there(make_engine):
    """``def make_app(): from app import make_app; return make_app()`` calls
    the imported one, not itself (werkzeug's example managers, rich's
    ``get_windows_console_features``); outside that function the module's own
    definition stays what the name means."""
    engine = make_engine({
        "tee/__init__.py": "from .application import make_app, Tee\n",
        "tee/application.py": ("def make_app(path):\n    return path\n\n\n"
                               "class Tee:\n    def brew(self):\n        return 1\n"),
        "manage.py": (
            "def make_app():\n"
            "    from tee import make_app\n"
            "\n"
            "    return make_app('/tmp/db')\n"  # line 3: tee's
            "\n"
            "\n"
            "def serve():\n"
            "    return make_app()\n"  # line 7: this file's
            "\n"
            "\n"
            "class Tee:\n"
            "    def brew(self):\n"
            "        return 2\n"
            "\n"
            "\n"
            "def pour():\n"
            "    from tee import Tee\n"
            "    return Tee().brew()\n"  # line 17: tee's Tee
            "\n"
            "\n"
            "def sip():\n"
            "    return Tee().brew()\n"  # line 21: this file's Tee
        ),
    })
    assert callers(analysis.analyze(engine, "make_app", "tee/application.py")) == {
        ("manage.py", 3, "make_app", True)}
    assert callers(analysis.analyze(engine, "make_app", "manage.py")) == {("manage.py", 7, "serve", True)}
    assert callers(analysis.analyze(engine, "Tee.brew", "tee/application.py")) == {("manage.py", 17, "pour", True)}
    assert callers(analysis.analyze(engine, "Tee.brew", "manage.py")) == {("manage.py", 21, "sip", True)}


def test_a_name_both_imported_and_defined_at_module_level_calls_either(make_engine):
    """``try: from speedups import escape / except ImportError: def escape``
    (click's ``_get_windows_console_stream``), or two imports of one name: a
    call may reach any of them."""
    engine = make_engine({
        "speedups.py": "def escape(s):\n    return s\n",
        "fast.py": "def dumps(x):\n    return x\n",
        "slow.py": "def dumps(x):\n    return str(x)\n",
        "codec.py": ("try:\n    from fast import dumps\nexcept ImportError:\n    from slow import dumps\n\n\n"
                     "def save(x):\n    return dumps(x)\n"),  # line 7
        "markup.py": (
            "try:\n"
            "    from speedups import escape\n"
            "except ImportError:\n"
            "    def escape(s):\n"
            "        return s.replace('<', '')\n"
            "\n"
            "\n"
            "def render(s):\n"
            "    return escape(s)\n"  # line 8
        ),
        "other.py": "def escape(s):\n    return s\n\n\ndef show(s):\n    return escape(s)\n",  # line 5: its own
    })
    assert callers(analysis.analyze(engine, "escape", "speedups.py")) == {("markup.py", 8, "render", True)}
    assert callers(analysis.analyze(engine, "escape", "markup.py")) == {("markup.py", 8, "render", True)}
    assert callers(analysis.analyze(engine, "dumps", "fast.py")) == {("codec.py", 7, "save", True)}
    assert callers(analysis.analyze(engine, "dumps", "slow.py")) == {("codec.py", 7, "save", True)}


def test_a_module_s_name_for_its_importers_is_its_module_level_import(make_engine):
    """An import of the same name inside one of its functions is that function's
    local, not what ``from module import name`` gets."""
    engine = make_engine({
        "fast.py": "def dumps(x):\n    return x\n",
        "slow.py": "def dumps(x):\n    return str(x)\n",
        "compat.py": ("from fast import dumps\n\n\n"
                      "def fallback(x):\n    from slow import dumps\n    return dumps(x)\n"),  # line 5
        "app.py": "from compat import dumps\n\n\ndef save(x):\n    return dumps(x)\n",  # line 4
    })
    assert callers(analysis.analyze(engine, "dumps", "fast.py")) == {("app.py", 4, "save", True)}
    assert callers(analysis.analyze(engine, "dumps", "slow.py")) == {("compat.py", 5, "fallback", True)}


def test_receivers_typed_by_annotations_returns_and_self_attributes(make_engine):
    """What a type checker reads off the code: ``x: C = make()``, a call of
    ``def make() -> C``, and ``self.engine`` assigned ``Engine()`` (or a
    parameter ``engine: Engine``) in the class; a ``None`` placeholder aside."""
    engine = make_engine({
        "engine.py": ("class Engine:\n    def step(self):\n        return 1\n\n\n"
                      "class Motor:\n    def step(self):\n        return 2\n\n\n"
                      "class Pump:\n    def step(self):\n        return 3\n"),
        "make.py": ("from engine import Engine, Motor\n\n\n"
                    "def make() -> Engine:\n    return Engine()\n\n\n"
                    "def build():\n    return Motor()\n"),
        "use.py": (
            "from engine import Engine, Motor\n"
            "from make import make, build\n"
            "\n"
            "\n"
            "def annotated():\n"
            "    x: Engine = build()\n"
            "    return x.step()\n"  # line 6: the annotation says Engine
            "\n"
            "\n"
            "def returned():\n"
            "    return make().step()\n"  # line 10: make() -> Engine
            "\n"
            "\n"
            "class Holder:\n"
            "    def __init__(self, motor: Motor):\n"
            "        self.engine = None\n"
            "        self.engine = Engine()\n"
            "        self.motor = motor\n"
            "\n"
            "    def go(self):\n"
            "        return self.engine.step() + self.motor.step()\n"  # line 20: Engine's, Motor's
        ),
    })
    assert callers(analysis.analyze(engine, "Engine.step")) == {
        ("use.py", 6, "annotated", True), ("use.py", 10, "returned", True), ("use.py", 20, "Holder.go", True)}
    assert callers(analysis.analyze(engine, "Motor.step")) == {("use.py", 20, "Holder.go", True)}
    # Typed receivers of other classes are not Pump's callers, confirmed or not.
    assert analysis.analyze(engine, "Pump.step").callers == []


def test_super_of_a_named_class_and_a_class_held_in_a_class_attribute(make_engine):
    """``super(Choice, self).copy()`` starts after Choice, whichever class it
    is written in (django's forms); ``self.backend()`` of ``backend = Store``
    makes a Store (django's session tests)."""
    engine = make_engine({
        "fields.py": (
            "class Field:\n"
            "    def copy(self):\n"
            "        return 1\n"
            "\n"
            "\n"
            "class Choice(Field):\n"
            "    def copy(self):\n"
            "        return 2\n"
            "\n"
            "\n"
            "class ModelChoice(Choice):\n"
            "    def copy(self):\n"
            "        return super(Choice, self).copy()\n"  # line 12: Field's, skipping Choice's
        ),
        "store.py": "class Store:\n    def create(self):\n        return 1\n",
        "tests.py": (
            "from store import Store\n"
            "\n"
            "\n"
            "class StoreTests:\n"
            "    backend = Store\n"
            "\n"
            "    def test_create(self):\n"
            "        self.session = self.backend()\n"
            "        self.session.create()\n"  # line 8
        ),
        "other.py": ("class Other:\n    def create(self):\n        return 2\n\n\n"
                     "class Another:\n    def create(self):\n        return 3\n\n\n"
                     "class Third:\n    def create(self):\n        return 4\n"),
    })
    assert callers(analysis.analyze(engine, "Field.copy")) == {("fields.py", 12, "ModelChoice.copy", True)}
    assert analysis.analyze(engine, "Choice.copy").callers == []
    assert callers(analysis.analyze(engine, "Store.create")) == {("tests.py", 8, "StoreTests.test_create", True)}
    assert analysis.analyze(engine, "Other.create").callers == []


def test_an_attribute_assigned_in_the_function_holds_that_class(make_engine):
    """``sys.stdout = HTMLStringO()`` then ``sys.stdout.reset()`` (werkzeug's
    debug tests): the module attribute holds what the function put there."""
    engine = make_engine({
        "console.py": "class HTMLStringO:\n    def reset(self):\n        return ''\n",
        "test_console.py": (
            "import sys\n"
            "\n"
            "from console import HTMLStringO\n"
            "\n"
            "\n"
            "def test_dump():\n"
            "    old = sys.stdout\n"
            "    sys.stdout = HTMLStringO()\n"
            "    try:\n"
            "        return sys.stdout.reset()\n"  # line 9
            "    finally:\n"
            "        sys.stdout = old\n"
            "\n"
            "\n"
            "def test_other():\n"
            "    return sys.stdout.reset()\n"  # line 15: the real stdout here
        ),
    })
    assert callers(analysis.analyze(engine, "HTMLStringO.reset")) == {("test_console.py", 9, "test_dump", True)}


def test_an_import_in_one_function_is_not_a_local_of_the_same_name_in_another(make_engine):
    """click's core.py imports ``command`` inside one function and names a
    local ``command`` in others: those locals are not uses of the decorator."""
    engine = make_engine({
        "decorators.py": "def command(f):\n    return f\n",
        "pkg/__init__.py": "",
        "pkg/mod.py": "def run():\n    return 1\n",
        "core.py": (
            "def make():\n"
            "    from decorators import command\n"
            "    return command(1)\n"  # line 2
            "\n"
            "\n"
            "def listing(multi):\n"
            "    command = multi.get()\n"
            "    return command\n"  # line 7: the local
            "\n"
            "\n"
            "def dotted():\n"
            "    import pkg.mod\n"
            "    return pkg.mod.run()\n"  # line 12
        ),
    })
    assert callers(analysis.analyze(engine, "command")) == {("core.py", 2, "make", True)}
    assert callers(analysis.analyze(engine, "run")) == {("core.py", 12, "dotted", True)}


def test_an_attribute_of_a_typed_instance_holds_what_its_class_assigns(make_engine):
    """``translation = self.translation`` then ``translation._catalog.items()``
    (django's JavaScriptCatalog): the view's attribute is a DjangoTranslation,
    whose ``_catalog`` is a TranslationCatalog."""
    engine = make_engine({
        "trans.py": (
            "class TranslationCatalog:\n"
            "    def items(self):\n"
            "        return []\n"
            "\n"
            "\n"
            "class DjangoTranslation:\n"
            "    def __init__(self):\n"
            "        self._catalog = None\n"
            "        self._catalog = TranslationCatalog()\n"
        ),
        "views.py": (
            "from trans import DjangoTranslation\n"
            "\n"
            "\n"
            "class JavaScriptCatalog:\n"
            "    def get(self):\n"
            "        self.translation = DjangoTranslation()\n"
            "\n"
            "    def get_catalog(self):\n"
            "        translation = self.translation\n"
            "        return translation._catalog.items()\n"  # line 9
        ),
        "other.py": ("class A:\n    def items(self):\n        return 1\n\n\n"
                     "class B:\n    def items(self):\n        return 2\n\n\n"
                     "class C:\n    def items(self):\n        return 3\n"),
    })
    assert callers(analysis.analyze(engine, "TranslationCatalog.items")) == {
        ("views.py", 9, "JavaScriptCatalog.get_catalog", True)}
    assert analysis.analyze(engine, "A.items").callers == []


def test_receivers_defined_through_themselves_end(make_engine):
    """``x = x.parent`` in a loop, ``self.a = self.b`` / ``self.b = self.a``,
    ``make().node.node``: every answer comes back, unconfirmed where unknown."""
    engine = make_engine({
        "tree.py": (
            "class Node:\n"
            "    def __init__(self):\n"
            "        self.a = self.b\n"
            "        self.b = self.a\n"
            "\n"
            "    def walk(self, x):\n"
            "        while x:\n"
            "            x = x.parent\n"
            "        return self.a.walk(x), make().node.node.walk(x)\n"  # line 8
            "\n"
            "\n"
            "def make():\n"
            "    return make().node\n"
        ),
    })
    walk = analysis.analyze(engine, "Node.walk")
    assert {(c.path, c.span.start_line) for c in walk.callers} == {("tree.py", 8)}


# -- TypeScript, as its language service reads it (seventh session) ------------


def test_a_js_constructor_is_called_by_new_of_its_class_and_super_in_a_subclass(make_engine):
    engine = make_engine({
        "src/sub.ts": ("export class Subscription {\n  constructor(private teardown?: () => void) {}\n}\n"
                       "export class Other {\n  constructor() {}\n}\n"),
        "src/user.ts": ("import { Subscription, Other } from './sub';\n"
                        "import * as subs from './sub';\n"
                        "export class Subscriber extends Subscription {\n"
                        "  constructor() {\n    super(() => {});\n  }\n}\n"  # line 4
                        "export function make() {\n  new Other();\n  return new Subscription();\n}\n"  # 8, 9
                        "const viaNamespace = new subs.Subscription();\n"  # line 11
                        "let typed: Subscription;\n"
                        "export class Quiet extends Subscriber {}\n"  # its `new` runs Subscriber's
                        "export class Silent extends Subscription {}\n"  # its `new` runs Subscription's
                        "const quiet = new Quiet();\n"),  # line 15
        "src/other.ts": "import { Silent } from './user';\nexport const silent = new Silent();\n",
    })
    result = analysis.analyze(engine, "Subscription.constructor", "src/sub.ts")
    assert callers(result) == {("src/user.ts", 4, "Subscriber.constructor", True),
                               ("src/user.ts", 9, "make", True), ("src/user.ts", 11, None, True),
                               ("src/other.ts", 1, "silent", True)}  # an exported const names its line
    subscriber = analysis.analyze(engine, "Subscriber.constructor", "src/user.ts")
    assert callers(subscriber) == {("src/user.ts", 15, None, True)}
    assert {c.kind for c in result.callers} == {"call"}
    other = analysis.analyze(engine, "Other.constructor", "src/sub.ts")
    assert callers(other) == {("src/user.ts", 8, "make", True)}


def test_a_receiver_typed_by_a_ts_type_alias_is_not_an_instance_of_it(make_engine):
    engine = make_engine({
        "src/types.ts": "export type Teardown = Subscription | (() => void);\nimport { Subscription } from './sub';\n",
        "src/sub.ts": ("import { Teardown } from './types';\n"
                       "export class Subscription {\n"
                       "  add(teardown: Teardown) {\n"
                       "    if (teardown instanceof Subscription) {\n"
                       "      teardown.hasParent(this);\n"  # line 4: narrowed, a Subscription
                       "    }\n  }\n  hasParent(parent: Subscription) {\n    return false;\n  }\n}\n"),
    })
    assert callers(analysis.analyze(engine, "Subscription.hasParent")) == {("src/sub.ts", 4, "Subscription.add", True)}


def test_a_call_through_a_ts_interface_or_base_type_may_reach_an_implementation(make_engine):
    engine = make_engine({
        "src/types.ts": ("export interface SchedulerLike {\n  schedule(work: () => void): void;\n}\n"
                         "export interface Named extends SchedulerLike {\n  name: string;\n}\n"),
        "src/scheduler.ts": ("import { Named } from './types';\n"
                             "export class Scheduler implements Named {\n"
                             "  name = 'async';\n  schedule(work: () => void) {\n    work();\n  }\n}\n"
                             "export class Queue extends Scheduler {\n"
                             "  schedule(work: () => void) {\n    super.schedule(work);\n  }\n}\n"  # line 9
                             "export class Unrelated {\n  schedule() {}\n}\n"),
        "src/timer.ts": ("import { SchedulerLike } from './types';\nimport { Scheduler } from './scheduler';\n"
                         "export function timer(scheduler: SchedulerLike, base: Scheduler) {\n"
                         "  scheduler.schedule(() => {});\n"  # line 3: any implementation
                         "  base.schedule(() => {});\n}\n"),  # line 4: Scheduler's, or a subclass's override
    })
    scheduler = analysis.analyze(engine, "Scheduler.schedule")
    assert callers(scheduler) == {("src/timer.ts", 3, "timer", False), ("src/timer.ts", 4, "timer", True),
                                  ("src/scheduler.ts", 9, "Queue.schedule", True)}
    assert {c.reason for c in scheduler.callers if not c.confirmed} == {"override"}
    queue = analysis.analyze(engine, "Queue.schedule")
    # Both receivers may hold a Queue; `super.schedule` in Queue is Scheduler's.
    assert callers(queue) == {("src/timer.ts", 3, "timer", False), ("src/timer.ts", 4, "timer", False)}
    assert callers(analysis.analyze(engine, "Unrelated.schedule")) == set()


def test_js_globals_and_ts_type_members_are_not_uses_of_a_project_definition(make_engine):
    engine = make_engine({
        "src/traps.ts": ("export const traps = {\n  defineProperty(target: object, key: string) {\n"
                         "    return true;\n  },\n};\n"
                         "export function spyReportEnd() {}\n"
                         "export type SpyEvent = { type: 'end'; spyReportEnd: true };\n"),  # line 6
        "src/use.ts": ("import { traps, spyReportEnd } from './traps';\n"
                       "Object.defineProperty(globalThis, 'x', {});\n"
                       "Reflect.defineProperty(globalThis, 'y', {});\n"
                       "traps.defineProperty({}, 'z');\n"  # line 3
                       "spyReportEnd();\n"),  # line 4
    })
    assert callers(analysis.analyze(engine, "traps.defineProperty")) == {("src/use.ts", 3, None, True)}
    spy = analysis.analyze(engine, "spyReportEnd")
    assert callers(spy) == {("src/use.ts", 4, None, True)}
    assert spy.mention_kinds["definition"] == 1  # the type's member (the function's own name is none)


def test_a_default_export_re_exported_by_a_barrel_under_a_name_is_called_through_it(make_engine):
    engine = make_engine({
        "src/lib/clamp.ts": "export default function clamp(x: number) {\n  return x;\n}\n",
        "src/ui/Card.tsx": "export default function Card() {\n  return <div />;\n}\n",
        "src/lib/index.ts": ("export { default as clampValue } from './clamp';\n"
                             "export { default as Card } from '../ui/Card';\n"),
        "src/app.tsx": ("import { clampValue, Card } from './lib';\n"
                        "export function App() {\n  clampValue(3);\n  return <Card />;\n}\n"),  # lines 2, 3
    })
    assert callers(analysis.analyze(engine, "clamp")) == {("src/app.tsx", 2, "App", True)}
    card = analysis.analyze(engine, "Card")
    assert callers(card) == {("src/app.tsx", 3, "App", True)}
    assert [c.kind for c in card.callers] == ["call"]  # rendering a component calls it


def test_a_module_s_own_export_clause_under_another_name_is_followed(make_engine):
    """`export { otherImpl as other }` (no `from`) exports the file's own
    name `otherImpl` as `other`: `import { other }` of it was an unresolved
    import, and `import { create as stringCreate }` then `export {
    stringCreate as string }` (yup's index.ts) hid every `string()` call of
    `create`. An alias of an alias is followed in turn, in Python too."""
    others = [f"m{n}" for n in range(5)]  # other modules' `create`, renamed by the same barrel
    engine = make_engine({
        "src/impl.ts": "export function create() {\n  return 1;\n}\nexport function other() {\n  return 2;\n}\n",
        **{f"src/{m}.ts": "export function create() {\n  return 0;\n}\n" for m in others},
        "src/index.ts": ("".join(f"import {{ create as {m}Create }} from './{m}';\n" for m in others)
                         + "import { create as stringCreate, other as otherImpl } from './impl';\n\n"
                         + "".join(f"export {{ {m}Create as {m} }};\n" for m in others)
                         + "export { stringCreate as string, otherImpl as other };\n"),
        "test/a.ts": "import { string, other } from '../src';\n\nexport const x = string() + other();\n",  # line 2
        "py/pkg/impl.py": "def make():\n    return 1\n",
        "py/pkg/__init__.py": "from .impl import make as make_item\n",
        "py/use.py": "from pkg import make_item as mk\n\nmk()\n",  # line 2
    })
    for symbol, defined, called in (("create", "src/impl.ts", "test/a.ts"), ("other", "src/impl.ts", "test/a.ts"),
                                    ("make", "py/pkg/impl.py", "py/use.py")):
        found = analysis.analyze(engine, symbol, defined)
        assert {(c.path, c.span.start_line, c.confirmed) for c in found.callers} == {(called, 2, True)}, symbol


def test_this_in_a_js_function_binding_its_own_this_is_not_the_class_instance(make_engine):
    """`this` in an object literal's method or a `function` expression (yup's
    `this.test({ test(value) { return this.resolve(min) } })`, whose `this`
    is the test context) is not the class around it: those calls were
    confirmed callers of the class's `resolve`. An arrow function and a
    field's initializer keep the class's `this`."""
    engine = make_engine({
        "src/ref.ts": "export class Ref {\n  resolve(x: number): number {\n    return x + 1;\n  }\n}\n",
        "src/schema.ts": ("export class Schema {\n  resolve(x: number): number {\n    return x;\n  }\n"
                          "  test(opts: object): this {\n    return this;\n  }\n"
                          "  min(n: number) {\n    return this.test({\n      test(value: number) {\n"
                          "        return value >= this.resolve(n);\n      },\n    });\n  }\n"  # line 10
                          "  max(n: number) {\n    return this.test({\n      test: function (value: number) {\n"
                          "        return value <= this.resolve(n);\n      },\n    });\n  }\n"  # line 17
                          "  range(n: number) {\n    return [1, 2].map((v) => this.resolve(v + n));\n  }\n"  # line 22
                          "  handler = () => this.resolve(1);\n}\n"),  # line 24
    })
    found = analysis.analyze(engine, "Schema.resolve")
    assert {(c.span.start_line, c.confirmed) for c in found.callers} == {
        (10, False), (17, False), (22, True), (24, True)}
    assert {c.span.start_line for c in analysis.analyze(engine, "Ref.resolve").callers} == {10, 17}


def test_a_method_s_declared_return_types_the_result_of_its_call(make_engine):
    """`Store.create('w').log('x')` of `static create(p): Store`,
    `b.self().add(3)` of `self(): Builder<T>`, Python's `Store.open('p').put()`
    of `def open(cls, p) -> "Store"`: the result is an instance of the class
    declared (as a type checker reads it); they were unconfirmed `builtin-name`
    callers (only a function's return typed its call). `this` / `Self` stay
    unknown (a subclass's instance)."""
    engine = make_engine({
        "src/store.ts": ("export class Store {\n  log(m: string): void {}\n"
                         "  static create(p: string): Store {\n    return new Store();\n  }\n"
                         "  again(): this {\n    return this;\n  }\n}\n"),
        "src/use.ts": ("import { Store } from './store';\n\nexport function f(s: Store) {\n"
                       "  Store.create('w').log('x');\n  s.again().log('y');\n}\n"),  # lines 3, 4
        "store.py": ("class Store:\n    def put(self):\n        return 1\n\n    @classmethod\n"
                     "    def open(cls, p) -> \"Store\":\n        return cls()\n\n"
                     "    def name(self) -> str:\n        return 'n'\n"),
        "use.py": "from store import Store\n\nStore.open('p').put()\nStore.open('q').name().put()\n",  # lines 2, 3
    })
    assert {(c.path, c.span.start_line, c.confirmed) for c in analysis.analyze(engine, "Store.log").callers} == {
        ("src/use.ts", 3, True), ("src/use.ts", 4, False)}
    # A `str` result is the language's: none of the project's methods.
    assert {(c.path, c.span.start_line, c.confirmed) for c in analysis.analyze(engine, "Store.put").callers} == {
        ("use.py", 2, True)}


def test_ts_receivers_typed_by_fields_parameter_properties_annotations_and_returns(make_engine):
    engine = make_engine({
        "src/parts.ts": ("export class Engine {\n  step() {\n    return 1;\n  }\n}\n"
                         "export class Wheel {\n  step() {\n    return 2;\n  }\n}\n"),
        "src/car.ts": ("import { Engine, Wheel } from './parts';\n"
                       "function make(): Engine {\n  return new Engine();\n}\n"
                       "export class Car {\n"  # line 4
                       "  private spare: Engine = make();\n"
                       "  wheel = new Wheel();\n"
                       "  constructor(private engine: Engine, other: Wheel) {\n"
                       "    this.backup = other;\n  }\n"
                       "  drive() {\n"  # line 10
                       "    this.engine.step();\n"  # 11
                       "    this.spare.step();\n"  # 12
                       "    this.wheel.step();\n"  # 13
                       "    this.backup.step();\n"  # 14
                       "    const e: Engine = make();\n    e.step();\n"  # 16
                       "    make().step();\n"  # 17
                       "  }\n}\n"
                       "export function tour(car: Car) {\n  car.wheel.step();\n}\n"),  # line 21
    })
    assert callers(analysis.analyze(engine, "Engine.step")) == {
        ("src/car.ts", row, "Car.drive", True) for row in (11, 12, 16, 17)}
    assert callers(analysis.analyze(engine, "Wheel.step")) == {
        ("src/car.ts", 13, "Car.drive", True), ("src/car.ts", 14, "Car.drive", True), ("src/car.ts", 21, "tour", True)}


def test_a_ts_receiver_typed_by_a_generic_class_is_an_instance_of_that_class(make_engine):
    engine = make_engine({
        "src/subject.ts": ("export class Subject<T> {\n  next(value: T) {}\n}\n"
                           "export class Queue<T> {\n  next(value: T) {}\n}\n"),
        "src/use.ts": ("import { Subject, Queue } from './subject';\n"
                       "export function emit(s: Subject<Map<string, number>>, q: Queue<number> | Subject<number>) {\n"
                       "  s.next(new Map());\n"  # line 2: a Subject
                       "  q.next(1);\n}\n"),  # line 3: either
    })
    assert callers(analysis.analyze(engine, "Subject.next")) == {("src/use.ts", 2, "emit", True),
                                                                  ("src/use.ts", 3, "emit", False)}


def test_a_member_of_a_class_is_no_caller_of_a_module_level_function(make_engine):
    """`self.indent` (an attribute, or a base's member) never reaches `def
    indent` of a module: it was an unconfirmed "unknown-base" caller of it
    (sqlparse's ReindentFilter and `utils.indent`), while a method of that
    name stays an unconfirmed caller (a subclass may mix its class in)."""
    engine = make_engine({
        "util.py": "def indent(n):\n    return n * 2\n",
        "mixin.py": "class Indenting:\n    def indent(self):\n        return 1\n",
        "filt.py": ("from util import indent\nimport lib\n\n\nclass Filter:\n    def __init__(self):\n"
                    "        self.indent = 0\n\n    def width(self):\n        return self.indent * 2\n\n"  # line 9
                    "    def go(self):\n        return indent(3)\n\n\n"  # line 12
                    "class Remote(lib.Base):\n    def run(self):\n        return self.indent()\n"),  # line 17
    })
    function = analysis.analyze(engine, "indent", "util.py")
    assert callers(function) == {("filt.py", 12, "Filter.go", True)}
    method = analysis.analyze(engine, "Indenting.indent")
    assert {(c.path, c.span.start_line, c.reason) for c in method.callers} == {
        ("filt.py", 9, "unknown-base"), ("filt.py", 17, "unknown-base")}


def test_ts_mixins_reach_the_mixed_in_class_s_methods(make_engine):
    engine = make_engine({
        "src/loggable.ts": ("export class Loggable {\n  logFrame() {\n    return 0;\n  }\n}\n"
                            "export function applyMixins(target: any, mixins: any[]) {}\n"),
        "src/cold.ts": ("import { Loggable, applyMixins } from './loggable';\n"
                        "export class Cold<T> implements Loggable {\n"
                        "  logFrame: () => number;\n}\n"  # declared for the type checker only
                        "applyMixins(Cold, [Loggable]);\n"
                        "export interface Hot<T> extends Loggable {}\n"
                        "export class Hot<T> {}\n"
                        "applyMixins(Hot, [Loggable]);\n"
                        "export function frames(cold: Cold<number>, hot: Hot<number>) {\n"
                        "  cold.logFrame();\n"  # line 9: Cold's field holds Loggable's method
                        "  hot.logFrame();\n}\n"),  # line 10: the merged interface derives from Loggable
    })
    assert callers(analysis.analyze(engine, "Loggable.logFrame")) == {("src/cold.ts", 9, "frames", False),
                                                                     ("src/cold.ts", 10, "frames", True)}


def test_a_changed_file_a_grammar_hangs_on_is_never_parsed_in_the_daemon(make_engine, monkeypatch):
    """A file changed on disk since the pass (the watcher not there yet) is
    read by the chunk worker before impact parses it: tree-sitter-kotlin
    hangs inside one step on this text (and crashes at 100,000 lines), where
    only killing the process that parses stops it."""
    worker = chunk_worker.ChunkWorker(deadline_s=1.0)
    monkeypatch.setitem(chunk_worker._workers, "pass", worker)
    engine = make_engine({"core.py": "def frobnicate(x):\n    return x\n",
                          "Use.kt": "fun run() = frobnicate(1)\n"})
    hostile = "class A\n" + "@A\n" * 20_000 + "constructor(\n fun f( { frobnicate(2)\n"
    (engine.root / "Use.kt").write_text(hostile)
    try:
        result = analysis.analyze(engine, "frobnicate")
        assert languages.hazard(hostile) is not None and worker.restarts == 1
        assert result.mention_kinds.get("text") == 1 and not result.callers  # read, not parsed
    finally:
        worker.close()



def test_a_file_the_index_read_as_windows_is_not_parsed_after_a_restart(make_engine, monkeypatch):
    """What hung the worker is remembered in memory only; after a restart the
    index still says it: a file of a parsed language stored as line windows
    is never parsed by impact (it would hang, or crash, the daemon)."""
    worker = chunk_worker.ChunkWorker(deadline_s=1.0)
    monkeypatch.setitem(chunk_worker._workers, "pass", worker)
    hostile = "class A\n" + "@A\n" * 20_000 + "constructor(\n fun f( { frobnicate(3)\n"
    try:
        engine = make_engine({"core.py": "def frobnicate(x):\n    return x\n", "Use.kt": hostile})
        assert worker.restarts == 1
        monkeypatch.setattr(languages, "_hazardous", type(languages._hazardous)())  # a new process
        result = analysis.analyze(engine, "frobnicate")
        assert languages.hazard(hostile) is not None and worker.restarts == 1
        assert result.mention_kinds.get("text") == 1 and not result.callers
    finally:
        worker.close()


def test_status_names_a_file_an_earlier_run_left_unparsed_until_it_parses(make_engine, monkeypatch):
    """The hazard marks and their reasons live in memory; after a restart
    the index still says which files were read as line windows though their
    language has a grammar, and status lists them (said, not silent)."""
    from ctxls.index.model import UNPARSED_EARLIER, UNPARSED_HAZARD

    worker = chunk_worker.ChunkWorker(deadline_s=1.0)
    monkeypatch.setitem(chunk_worker._workers, "pass", worker)
    hostile = "class A\n" + "@A\n" * 20_000 + "constructor(\n fun f( { frobnicate(4)\n"
    try:
        engine = make_engine({"core.py": "def frobnicate(x):\n    return x\n", "notes.md": "# Notes\n",
                              "Use.kt": hostile})
        assert engine.status()["unparsed"] == {"count": 1, "reasons": {reason_family(UNPARSED_HAZARD): 1},
                                               "files": [{"path": "Use.kt", "reason": UNPARSED_HAZARD}]}
        engine.close()
        restarted = Engine(engine.root)
        try:
            assert restarted.status()["unparsed"] == {
                "count": 1, "reasons": {reason_family(UNPARSED_EARLIER): 1},
                "files": [{"path": "Use.kt", "reason": UNPARSED_EARLIER}]}
            (engine.root / "Use.kt").write_text("fun run() = frobnicate(1)\n")
            restarted.index()
            assert restarted.status()["unparsed"] == {"count": 0, "reasons": {}, "files": []}
        finally:
            restarted.close()
    finally:
        worker.close()


def _suspended_kotlin(make_engine, monkeypatch, seed: int):
    """An engine whose pass gave up on two Kotlin files (the bound lowered to
    2: Kotlin is suspended), then a Kotlin file written, set aside untried.
    ``seed``: texts of their own (hazard marks outlive a test)."""
    from ctxls.index.model import UNPARSED_SUSPENDED

    monkeypatch.setattr(languages, "GIVE_UPS_TO_SUSPEND", 2)
    worker = chunk_worker.ChunkWorker(deadline_s=1.0)
    monkeypatch.setitem(chunk_worker._workers, "pass", worker)
    hostile = "class A\n" + "@A\n" * 20_000 + "constructor(\n fun f( { frobnicate(%d)\n"
    # Java's: Kotlin calls it (one JVM), not a Python function's name.
    engine = make_engine({"Core.java": "class Core {\n    static int frobnicate(int x) { return x; }\n}\n",
                          "A.kt": hostile % seed, "B.kt": hostile % (seed + 1)})
    assert languages.suspended("kotlin") and worker.restarts == 2
    (engine.root / "Use.kt").write_text("fun run() = frobnicate(1)\n")
    engine.file_changed_on_disk("Use.kt")
    assert {f["path"]: f["reason"] for f in engine.status()["unparsed"]["files"]}["Use.kt"] == UNPARSED_SUSPENDED
    assert not engine.outline("Use.kt")
    return engine, worker


def test_a_suspension_ends_when_a_hostile_file_goes_and_what_it_set_aside_is_read(make_engine, monkeypatch):
    """The give-ups that suspended a language count by file: one deleted (or
    rewritten) takes its give-up with it, and once the language is under the
    bound again the files it set aside are read at once, not at a restart."""
    from ctxls.index.model import UNPARSED_HAZARD

    engine, worker = _suspended_kotlin(make_engine, monkeypatch, 5)
    try:
        (engine.root / "A.kt").unlink()
        engine.file_changed_on_disk("A.kt")
        assert not languages.suspended("kotlin")
        assert [d.symbol for d in engine.outline("Use.kt")] == ["run"]
        assert engine.status()["unparsed"]["files"] == [{"path": "B.kt", "reason": UNPARSED_HAZARD}]
        assert {c[:3] for c in callers(analysis.analyze(engine, "frobnicate"))} == {("Use.kt", 0, "run")}
    finally:
        worker.close()


def test_give_ups_in_several_languages_suspend_every_grammar_until_they_go(make_engine, monkeypatch):
    """A repository of hostile files in every language cost 16 give-ups in
    each before each was suspended; past a bound on all give-ups together
    every grammar is (here one Kotlin and one D give-up, the bounds lowered
    to 2), and a file of any language written then is set aside; once a
    hostile file goes, it is read at once."""
    from ctxls.index.model import UNPARSED_SUSPENDED

    monkeypatch.setattr(languages, "GIVE_UPS_TO_SUSPEND", 2)
    monkeypatch.setattr(languages, "GIVE_UPS_TO_SUSPEND_ALL", 2)
    worker = chunk_worker.ChunkWorker(deadline_s=1.0)
    monkeypatch.setitem(chunk_worker._workers, "pass", worker)
    try:
        engine = make_engine({
            "core.py": "def frobnicate(x):\n    return x\n",
            "A.kt": "class A\n" + "@A\n" * 20_000 + "constructor(\n fun f( { frobnicate(11)\n",
            "slow.d": "x = " + "a + " * 12_500 + "b;\n// 11\n"})
        assert worker.restarts == 2 and languages.suspended("python") and languages.suspended("kotlin")
        (engine.root / "use.py").write_text("from core import frobnicate\n\n\ndef run():\n    return frobnicate(1)\n")
        engine.file_changed_on_disk("use.py")
        unparsed = {f["path"]: f["reason"] for f in engine.status()["unparsed"]["files"]}
        assert unparsed["use.py"] == UNPARSED_SUSPENDED and not engine.outline("use.py")
        (engine.root / "A.kt").unlink()
        engine.file_changed_on_disk("A.kt")
        assert not languages.suspended("python") and not languages.suspended("d")
        assert [d.symbol for d in engine.outline("use.py")] == ["run"]
        assert "use.py" not in {f["path"] for f in engine.status()["unparsed"]["files"]}
    finally:
        worker.close()


def test_files_set_aside_by_a_suspension_are_read_by_the_next_process(make_engine, monkeypatch):
    """What a suspension set aside was never tried: the store says so, and a
    new process (no language suspended) reads those files in its first pass,
    while the files whose parse was given up stay line windows."""
    from ctxls.index.model import UNPARSED_EARLIER

    engine, worker = _suspended_kotlin(make_engine, monkeypatch, 7)
    try:
        engine.close()
        for state in ("_hazardous", "_give_ups", "_set_aside"):  # a new process
            monkeypatch.setattr(languages, state, type(getattr(languages, state))())
        restarted = Engine(engine.root)
        try:
            restarted.index()
            assert [d.symbol for d in restarted.outline("Use.kt")] == ["run"]
            assert restarted.status()["unparsed"]["files"] == [
                {"path": "A.kt", "reason": UNPARSED_EARLIER}, {"path": "B.kt", "reason": UNPARSED_EARLIER}]
            assert worker.restarts == 2  # the given-up files were not tried again
        finally:
            restarted.close()
    finally:
        worker.close()


def test_a_sweep_lets_go_of_each_callers_tree_and_answers_the_same(make_engine, monkeypatch):
    """A hot name's sweep reads up to 1,150 files; the request no longer pins
    each one's tree (and the node-keyed answers about it) once read through.
    A file asked for again is parsed again from the same text: with a shared
    cache too small to keep anything, the answer is the same."""
    from ctxls.impact import resolve
    from ctxls.impact.syntax import SourceCache

    files = {"core.py": "class Store:\n    def frobnicate(self, x):\n        return x\n"}
    for n in range(6):
        files[f"use{n}.py"] = (f"from core import Store\n\n\ndef run{n}(store: Store):\n"
                               f"    s = Store()\n    s.frobnicate({n})\n    return store.frobnicate({n})\n")
    engine = make_engine(files)
    made: list[resolve.Resolver] = []

    class Recorded(resolve.Resolver):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            made.append(self)

    monkeypatch.setattr(analysis, "Resolver", Recorded)
    answer = callers(analysis.analyze(engine, "Store.frobnicate"))
    assert len(answer) == 12 and all(confirmed for *_, confirmed in answer)
    users = {f"use{n}.py" for n in range(6)}
    assert not users & set(made[-1]._files)
    assert not users & set(made[-1]._receivers._by_path)
    monkeypatch.setattr(analysis, "_sources", SourceCache(max_chars=1))
    assert callers(analysis.analyze(engine, "Store.frobnicate")) == answer


def test_a_call_deep_in_a_nest_is_found_and_confirmed(make_engine):
    """tree-sitter keeps no parent links: each step up walks down from the
    root, so looking up a nest of 60,000 levels for the call's import, class
    and function was minutes per call. The walks up are bounded now; the
    calls are still found and confirmed."""
    nest = 60_000
    engine = make_engine({
        "pkg/__init__.py": "",
        "pkg/lib.py": "def target():\n    return 1\n",
        "pkg/deep.py": ("from pkg.lib import target\n\n\ndef caller():\n    return "
                        + "-" * nest + "target()\n"),
        "pkg/cls.py": ("class C:\n    def meth(self):\n        return 1\n\n    def user(self):\n        return "
                       + "-" * nest + "self.meth()\n"),
    })
    assert engine.status()["unparsed"]["count"] == 0
    found = analysis.analyze(engine, "target")
    assert [(c.path, c.span.start_line, c.confirmed) for c in found.callers] == [("pkg/deep.py", 4, True)]
    found = analysis.analyze(engine, "C.meth")
    assert [(c.path, c.span.start_line, c.confirmed) for c in found.callers] == [("pkg/cls.py", 5, True)]


def test_a_symbol_written_as_a_call_is_the_symbol(make_engine):
    """Agents copy `frobnicate()` from prose: impact said "not defined" and
    a symbol search found nothing."""
    engine = make_engine({
        "core.py": "def frobnicate(x):\n    return x\n",
        "use.py": "from core import frobnicate\n\n\ndef later():\n    return frobnicate(0)\n",
    })
    for written in ("frobnicate()", " frobnicate() "):
        found = analysis.analyze(engine, written)
        assert found is not None and found.symbol == "frobnicate", written
        assert callers(found) == {("use.py", 4, "later", True)}
    assert analysis.analyze(engine, "()") is None  # nothing left: no such name
    assert [d.symbol for d in find_definitions(engine.store.reader(), "frobnicate()", "exact")] == \
        ["frobnicate"]


# -- scopes a type checker follows (against basedpyright on click, h11, attrs) --


def test_a_local_shadowing_an_imported_name_is_that_local(make_engine):
    """A parameter, local, loop or except/with target, walrus, lambda
    parameter, nested def or destructured name shadows an import of the same
    name in its function (click's ``prompt`` parameters in core.py were
    confirmed callers of ``termui.prompt``); ``global`` keeps the module's."""
    engine = make_engine({
        "mod.py": "def prompt():\n    return 1\n",
        "user.py": (
            "from mod import prompt\n"
            "\n"
            "\n"
            "def ask(prompt):\n"
            "    return prompt()\n"  # line 4: the parameter
            "\n"
            "\n"
            "def local():\n"
            "    prompt = print\n"
            "    for prompt in []:\n"
            "        prompt()\n"  # line 10
            "    with open('f') as prompt:\n"
            "        prompt()\n"  # line 12
            "    try:\n"
            "        pass\n"
            "    except OSError as prompt:\n"
            "        prompt()\n"  # line 16
            "    (a, prompt) = (1, 2)\n"
            "    return prompt(), (lambda prompt: prompt())(3)\n"  # line 18, twice
            "\n"
            "\n"
            "def walrus():\n"
            "    if (prompt := print):\n"
            "        return prompt()\n"  # line 23
            "\n"
            "\n"
            "def nested():\n"
            "    def prompt():\n"
            "        return 2\n"
            "    return prompt()\n"  # line 29
            "\n"
            "\n"
            "def rebinds():\n"
            "    global prompt\n"
            "    return prompt()\n"  # line 34: the module's, the import
            "\n"
            "\n"
            "def real():\n"
            "    return prompt()\n"  # line 38
        ),
        "lib.ts": "export function prompt(): number { return 1; }\n",
        "use.ts": (
            "import { prompt } from './lib';\n"
            "export function ask(prompt: () => number) { return prompt(); }\n"  # line 1: the parameter
            "export function local() { const prompt = () => 2; return prompt(); }\n"  # line 2
            "export function caught() { try { return 1; } catch (prompt) { return prompt(); } }\n"  # line 3
            "export const arrow = (prompt: () => number) => prompt();\n"  # line 4
            "export function real() { return prompt(); }\n"  # line 5
        ),
    })
    python = analysis.analyze(engine, "prompt", "mod.py")
    assert {c for c in callers(python) if c[3]} == {
        ("user.py", 34, "rebinds", True), ("user.py", 38, "real", True)}
    # Parameters may hold what it returns (a fixture): unconfirmed, as without the import.
    assert {c for c in callers(python) if c[0] == "user.py" and not c[3]} == {
        ("user.py", 4, "ask", False), ("user.py", 18, "local", False)}
    typescript = analysis.analyze(engine, "prompt", "lib.ts")
    assert {c for c in callers(typescript) if c[3]} == {("use.ts", 5, "real", True)}
    assert {c[:2] for c in callers(typescript) if c[0] == "use.ts" and not c[3]} == {
        ("use.ts", 1), ("use.ts", 4)}  # parameters: unconfirmed


def test_a_keyword_argument_object_key_or_member_of_the_same_name_hides_no_call(make_engine):
    """``run(helper=1)``, ``{ helper: 1 }``, ``{ helper() {...} }`` and Go's
    ``T{helper: 1}`` name no variable: the function's real calls beside them
    were lost as calls of a local."""
    engine = make_engine({
        "a.py": "def helper():\n    return 1\n\n\ndef use():\n    run(helper=3)\n    return helper()\n",  # line 6
        "b.ts": ("export function helper(): number { return 1; }\n"
                 "export function use() { const o = { helper: 1, helper2() { return helper(); } };"
                 " return helper(); }\n"),  # line 1, twice
        # A JS assignment declares nothing: `helper` stays the function, wrapped.
        "d.js": "function helper() { return 1; }\nfunction swap() { helper = wrap(helper); return helper(); }\n",
        "go.mod": "module example.com/k\n\ngo 1.21\n",
        "c.go": ("package main\n\ntype T struct{ helper int }\n\nfunc helper() int { return 1 }\n\n"
                 "func use() int {\n\tt := T{helper: 1}\n\treturn helper() + t.helper\n}\n"),  # line 8
    })
    assert callers(analysis.analyze(engine, "helper", "a.py")) == {("a.py", 6, "use", True)}
    assert [(c.span.start_line, c.confirmed) for c in analysis.analyze(engine, "helper", "b.ts").callers] == \
        [(1, True), (1, True)]
    assert callers(analysis.analyze(engine, "helper", "c.go")) == {("c.go", 8, "use", True)}
    assert [(c.span.start_line, c.kind, c.confirmed) for c in analysis.analyze(engine, "helper", "d.js").callers] == \
        [(1, "value", True), (1, "call", True)]


def test_go_locals_and_parameters_shadow_a_package_function(make_engine):
    engine = make_engine({
        "go.mod": "module example.com/g\n\ngo 1.21\n",
        "a.go": (
            "package main\n"
            "\n"
            "func parse() int { return 1 }\n"
            "\n"
            "func local() int {\n"
            "\tparse := func() int { return 2 }\n"
            "\treturn parse()\n"  # line 6: the local
            "}\n"
            "\n"
            "func param(other, parse func() int) int {\n"
            "\treturn parse()\n"  # line 10: the parameter
            "}\n"
            "\n"
            "func real() int {\n"
            "\treturn parse()\n"  # line 14
            "}\n"
        ),
    })
    found = analysis.analyze(engine, "parse")
    assert callers(found) == {("a.go", 14, "real", True), ("a.go", 10, "param", False)}
    assert found.unconfirmed_reasons == {"parameter": 1}


def test_go_receivers_typed_by_a_package_qualified_type_or_a_var_declaration(make_engine):
    """``a *m.Alpha`` and ``var a Alpha`` type their receivers: ``a.Run()``
    calls Alpha's Run, not the unrelated Beta's."""
    engine = make_engine({
        "go.mod": "module example.com/gq\n\ngo 1.21\n",
        "mod/mod.go": ("package mod\n\ntype Alpha struct{}\n\nfunc (a *Alpha) Run() int { return 1 }\n\n"
                       "type Beta struct{}\n\nfunc (b *Beta) Run() int { return 3 }\n\n"
                       "func sameVar() int {\n\tvar a Alpha\n\treturn a.Run()\n}\n"),  # line 12
        "main.go": ("package main\n\nimport m \"example.com/gq/mod\"\n\n"
                    "func useTyped(a *m.Alpha) int {\n\treturn a.Run()\n}\n\nfunc main() {}\n"),  # line 5
    })
    assert callers(analysis.analyze(engine, "Alpha.Run")) == {
        ("mod/mod.go", 12, "sameVar", True), ("main.go", 5, "useTyped", True)}
    assert callers(analysis.analyze(engine, "Beta.Run")) == set()


def test_type_of_an_object_is_its_class_as_a_receiver(make_engine):
    """``type(self).m()`` and ``type(a).m()`` call ``m`` of the object's class;
    ``type(x)`` of an object of unknown type may (counted as another
    definition's name, they were no callers at all)."""
    engine = make_engine({
        "a.py": (
            "class Alpha:\n"
            "    def inherited(self):\n"
            "        return 3\n"
            "\n"
            "    def v1(self):\n"
            "        return type(self).inherited(self)\n"  # line 5
            "\n"
            "\n"
            "class Beta:\n"
            "    def inherited(self):\n"
            "        return 4\n"
            "\n"
            "\n"
            "def outside(a: Alpha, x):\n"
            "    return type(a).inherited(a), type(x).inherited(x)\n"  # line 14, twice
        ),
    })
    found = analysis.analyze(engine, "Alpha.inherited")
    assert sorted((c.span.start_line, c.confirmed) for c in found.callers) == [(5, True), (14, False), (14, True)]
    beta = analysis.analyze(engine, "Beta.inherited")
    assert sorted((c.span.start_line, c.confirmed) for c in beta.callers) == [(14, False)]  # type(x) only


# -- receivers a type checker types: Optional, library classes, nested classes --


def test_an_optional_annotated_receiver_confirms_its_class(make_engine):
    """``Optional[C]``, ``C | None``, ``Union[C, None]`` (and as a string)
    type a receiver as C, as a type checker reads it once None is ruled out:
    its call is C's, not an untyped caller of every class's method."""
    engine = make_engine({
        "two.py": (
            "from typing import Optional, Union\n"
            "\n"
            "\n"
            "class Engine:\n"
            "    def shutdown(self):\n"
            "        return 0\n"
            "\n"
            "    def stop(self):\n"
            "        return 0\n"
            "\n"
            "\n"
            "class Motor:\n"
            "    def shutdown(self):\n"
            "        return 1\n"
            "\n"
            "\n"
            "def p2(e: Optional[Engine]):\n"
            "    return e.shutdown()\n"  # line 17
            "\n"
            "\n"
            "def p3(m: Motor | None, n: 'None | Motor'):\n"
            "    return m.shutdown(), n.shutdown()\n"  # line 21
            "\n"
            "\n"
            "def p4(e: Union[Engine, None] = None):\n"
            "    return e.stop()\n"  # line 25: `stop` is a builtin name too
        ),
    })
    assert callers(analysis.analyze(engine, "Engine.shutdown")) == {("two.py", 17, "p2", True)}
    assert callers(analysis.analyze(engine, "Motor.shutdown")) == {("two.py", 21, "p3", True)}
    assert callers(analysis.analyze(engine, "Engine.stop")) == {("two.py", 25, "p4", True)}


def test_a_ts_receiver_typed_with_null_or_undefined_is_of_its_class(make_engine):
    """``e: Engine | undefined``, ``m: Motor | null`` (also through ``?.`` and
    ``!``), and a field ``motor: Motor | null = null``: the class's, as
    tsserver reads them."""
    engine = make_engine({
        "a.ts": (
            "export class Engine {\n"
            "  shutdownNow(): number { return 0; }\n"
            "}\n"
            "export class Motor {\n"
            "  shutdownNow(): number { return 1; }\n"
            "}\n"
            "export function p2(e: Engine | undefined) {\n"
            "  return e?.shutdownNow();\n"  # line 7
            "}\n"
            "export function p4(m: Motor | null) {\n"
            "  return m!.shutdownNow();\n"  # line 10
            "}\n"
            "export class Holder {\n"
            "  motor: Motor | null | undefined = null;\n"
            "  run() {\n"
            "    this.motor?.shutdownNow();\n"  # line 15
            "  }\n"
            "}\n"
        ),
    })
    assert callers(analysis.analyze(engine, "Engine.shutdownNow")) == {("a.ts", 7, "p2", True)}
    assert callers(analysis.analyze(engine, "Motor.shutdownNow")) == {
        ("a.ts", 10, "p4", True), ("a.ts", 15, "Holder.run", True)}


def test_a_receiver_annotated_with_a_library_class_is_not_a_project_object(make_engine):
    """``conn: sqlite3.Connection``, ``d: Decimal`` imported from the standard
    library, TS ``res: Response`` (a global of the environment): the library's
    methods run, so a project method of the name only one class has is not
    called there. ``Any`` and a TS type parameter (``<T extends Payload>``)
    are no library class: their calls stay callers."""
    engine = make_engine({
        "a.py": (
            "import sqlite3\n"
            "from decimal import Decimal\n"
            "from typing import Any\n"
            "\n"
            "\n"
            "class UnitOfWork:\n"
            "    def commit(self):\n"
            "        return True\n"
            "\n"
            "    def quantize(self):\n"
            "        return 1\n"
            "\n"
            "\n"
            "def f(conn: sqlite3.Connection, d: Decimal):\n"
            "    return conn.commit(), d.quantize(Decimal('0.01'))\n"
            "\n"
            "def g(u: UnitOfWork, a: Any):\n"
            "    return u.commit(), a.commit()\n"  # line 17: any object, a project one too
        ),
        "a.ts": (
            "export class Payload {\n"
            "  arrayBuffer(): number { return 0; }\n"
            "}\n"
            "export async function bytes(res: Response) {\n"
            "  return res.arrayBuffer();\n"
            "}\n"
            "export function generic<T extends Payload>(p: T) {\n"
            "  return p.arrayBuffer();\n"  # line 7
            "}\n"
        ),
    })
    found = analysis.analyze(engine, "UnitOfWork.commit")
    assert sorted((c.path, c.span.start_line) for c in found.callers) == [("a.py", 17), ("a.py", 17)]
    assert analysis.analyze(engine, "UnitOfWork.quantize").callers == []
    assert callers(analysis.analyze(engine, "Payload.arrayBuffer")) == {("a.ts", 7, "generic", True)}


def test_what_a_library_call_returns_is_not_a_project_object(make_engine):
    """``self.conn = sqlite3.connect(p)``, ``connect(p)`` imported from
    sqlite3, ``requests.get(u).json()``: the library's objects, whose
    same-named methods are not the project's (a wrapper's
    ``self.conn.executescript`` is not its own caller). A library call given
    something of the project may return it (``copy.copy(self)``,
    ``asyncio.run(opened())``), and a builtin container gives back what it
    holds (``handlers.get(k)``): those stay callers."""
    engine = make_engine({
        "db.py": (
            "import asyncio, copy\n"
            "import sqlite3\n"
            "from sqlite3 import connect\n"
            "\n"
            "import requests\n"
            "\n"
            "\n"
            "class Database:\n"
            "    def __init__(self, path):\n"
            "        self.conn = sqlite3.connect(path)\n"
            "\n"
            "    def executescript(self, sql):\n"
            "        return self.conn.executescript(sql)\n"
            "\n"
            "    def iterdump(self):\n"
            "        return connect(':memory:').iterdump()\n"
            "\n"
            "    def json(self):\n"
            "        return requests.get('u').json()\n"
            "\n"
            "    def clone(self):\n"
            "        return copy.copy(self).json()\n"  # line 21
            "\n"
            "\n"
            "def migrate(db: Database):\n"
            "    return db.executescript('create table t (x)')\n"  # line 25
            "\n"
            "\n"
            "def opened():\n"
            "    return Database(':memory:')\n"
            "\n"
            "\n"
            "def run():\n"
            "    handlers = {}\n"
            "    return asyncio.run(opened()).json(), handlers.get('db').json()\n"  # line 34
        ),
    })
    assert callers(analysis.analyze(engine, "Database.executescript")) == {("db.py", 25, "migrate", True)}
    assert analysis.analyze(engine, "Database.executescript").callees == []
    assert analysis.analyze(engine, "Database.iterdump").callers == []
    found = analysis.analyze(engine, "Database.json")
    assert sorted((c.span.start_line, c.confirmed) for c in found.callers) == [(21, True), (34, True), (34, True)]


def test_a_library_call_given_the_projects_type_or_items_may_return_them(make_engine):
    """``cast("Engine", obj)`` (the type written as text),
    ``random.choice(engines)`` of a parameter annotated ``list[Engine]``
    (or ``"list[Engine]"``), ``choice(list(engines))``: the library's call
    returns the project's object, as a type checker reads it; confirmed
    callers (the stop-67 regression probe: they had become library objects)."""
    engine = make_engine({
        "engine.py": (
            "import random\n"
            "from typing import cast\n"
            "\n"
            "\n"
            "class Engine:\n"
            "    def ignite(self):\n"
            "        return 1\n"
            "\n"
            "\n"
            "def use_cast(obj):\n"
            "    return cast(\"Engine\", obj).ignite()\n"  # line 10
            "\n"
            "\n"
            "def use_choice(engines: \"list[Engine]\"):\n"
            "    return random.choice(engines).ignite()\n"  # line 14
            "\n"
            "\n"
            "def use_items(engines: list[Engine]):\n"
            "    return random.choice(list(engines)).ignite()\n"  # line 18
            "\n"
            "\n"
            "def use_sqlite(path):\n"
            "    import sqlite3\n"
            "    return sqlite3.connect(path).ignite()\n"  # line 23: the library's object
        ),
    })
    found = analysis.analyze(engine, "Engine.ignite")
    assert sorted((c.span.start_line, c.confirmed) for c in found.callers) == [(10, True), (14, True), (18, True)]


def test_a_call_through_a_named_base_class_never_reaches_an_override(make_engine):
    """``Base.save(self)`` in the override ``Model.save`` runs Base's: no
    caller of Model.save (it looked recursive); ``x.save()`` on ``x: Base``
    still may reach it."""
    engine = make_engine({
        "base.py": "class Base:\n    def save(self):\n        return 1\n",
        "models.py": (
            "from base import Base\n"
            "\n"
            "\n"
            "class Model(Base):\n"
            "    def save(self):\n"
            "        Base.save(self)\n"
            "        return 2\n"
            "\n"
            "\n"
            "def go(x: Base):\n"
            "    return Model().save(), x.save()\n"  # line 10
        ),
    })
    found = analysis.analyze(engine, "Model.save")
    assert sorted((c.span.start_line, c.confirmed, c.reason) for c in found.callers) == [
        (10, False, "override"), (10, True, None)]


def test_an_instance_of_a_nested_class_is_of_that_class(make_engine):
    """``Outer.Inner()`` and ``self.Inner()`` make an ``Outer.Inner``: its
    calls are that class's, not untyped callers of every nested ``Inner``'s."""
    engine = make_engine({
        "m.py": (
            "class Outer:\n"
            "    class Inner:\n"
            "        def method(self):\n"
            "            return 1\n"
            "\n"
            "    def use(self):\n"
            "        return self.Inner().method()\n"  # line 6
            "\n"
            "\n"
            "class Other:\n"
            "    class Inner:\n"
            "        def method(self):\n"
            "            return 2\n"
            "\n"
            "\n"
            "def go():\n"
            "    a = Outer.Inner()\n"
            "    b = Other.Inner()\n"
            "    return a.method(), b.method()\n"  # line 18
        ),
    })
    assert callers(analysis.analyze(engine, "Outer.Inner.method")) == {
        ("m.py", 6, "Outer.use", True), ("m.py", 18, "go", True)}
    assert callers(analysis.analyze(engine, "Other.Inner.method")) == {("m.py", 18, "go", True)}


def test_a_comprehension_variable_is_the_comprehension_s_own(make_engine):
    """Python 3: ``[helper() for helper in fns]`` calls the loop variable, at
    module level too; ``[helper for helper in xs]`` in a function binds no
    local, so the function's ``helper()`` after it is the module's."""
    engine = make_engine({
        "a.py": (
            "def helper():\n"
            "    return 1\n"
            "\n"
            "\n"
            "results = [helper() for helper in [print]]\n"  # line 4: the comprehension's own
            "firsts = [x for x in helper()]\n"  # line 5: the module's helper
            "\n"
            "\n"
            "def count(xs):\n"
            "    names = [helper for helper in xs]\n"
            "    return helper() + len(names)\n"  # line 10: the module's helper
        ),
        "b.py": "from a import helper\n\n\ndef runs(helpers):\n    return {helper.run() for helper in helpers}\n",
    })
    assert callers(analysis.analyze(engine, "helper")) == {("a.py", 5, None, True), ("a.py", 10, "count", True)}
    # A receiver named like a typed variable around it is the comprehension's own (its type unknown).
    engine = make_engine({
        "cars.py": (
            "class Engine:\n"
            "    def ignite(self):\n"
            "        return 1\n"
            "\n"
            "\n"
            "class Motor:\n"
            "    def ignite(self):\n"
            "        return 2\n"
            "\n"
            "\n"
            "engine = Engine()\n"
            "engine.ignite()\n"  # line 11
            "started = [engine.ignite() for engine in [Motor()]]\n"  # line 12
            "\n"
            "\n"
            "def again(motors):\n"
            "    engine = Engine()\n"
            "    return engine.ignite(), [engine.ignite() for engine in motors]\n"  # line 17, twice
        ),
    })
    found = analysis.analyze(engine, "Engine.ignite")
    assert sorted((c.span.start_line, c.confirmed) for c in found.callers) == [
        (11, True), (12, False), (17, False), (17, True)]


def test_a_rust_use_alias_is_swept_for_calls(make_engine):
    """``use m::parse as p`` then ``p()``: an unconfirmed caller (Rust is read
    by name only), not nothing."""
    engine = make_engine({
        "Cargo.toml": "[package]\nname = \"ra\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
        "src/m.rs": "pub fn parse() -> i32 {\n    1\n}\n",
        "src/main.rs": ("mod m;\n\nuse m::parse as p;\nuse m::{parse as q};\n\n"
                        "fn main() {\n    let _ = p() + q();\n}\n"),  # line 6, twice
    })
    found = analysis.analyze(engine, "parse")
    assert sorted((c.path, c.span.start_line, c.confirmed) for c in found.callers) == [
        ("src/main.rs", 6, False), ("src/main.rs", 6, False)]
    assert found.unconfirmed_reasons == {"name-only-language": 2}


def test_a_symbol_written_with_its_languages_qualifier_is_found(make_engine):
    """`impact Polygon::area` said "not defined in the index" while recall
    and symbols read `::`, `#` and `->` as the index's `.`."""
    engine = make_engine({
        "geo.cpp": ("struct Polygon {\n    double area() const;\n};\n\n"
                    "double Polygon::area() const {\n    return 0.0;\n}\n"),
        "shop.rb": "class Ledger\n  def post_entry\n    1\n  end\nend\n",
    })
    for written, qualified in (("Polygon::area", "Polygon.area"), ("Ledger#post_entry", "Ledger.post_entry")):
        found = analysis.analyze(engine, written, with_callers=False)
        assert found is not None and qualified in [d.symbol for d in found.definitions], written


# -- constructors, symbols, macros, shadows, qualified names, case (probe 3) ----


def test_constructors_named_apart_from_their_class_are_called_by_constructing_it(make_engine):
    """Python's `__init__`, Ruby's `initialize`, PHP's `__construct` and
    Swift's `init` had 0 callers: `Foo(1)`, `Item.new`, `new Item`, `Item(…)`
    never write the name. A subclass without a constructor of its own runs
    its base's; Ruby's `super` in a subclass's `initialize` calls it; PHP's
    `new static`/`new self` and an aliased `use … as` construct it too. A
    class of that name in another language is another class."""
    engine = make_engine({
        "py/a.py": "class Foo:\n    def __init__(self, x):\n        self.x = x\n",
        "py/b.py": "import a\nfrom a import Foo\nf = Foo(1)\ng = a.Foo(2)\nh = Foo\n",  # lines 2, 3
        "rb/item.rb": "module Shop\n  class Item\n    def initialize(price)\n      @price = price\n    end\n  end\nend\n",
        "rb/kinds.rb": ("class Plain < Item\nend\n"
                        "class Fancy < Shop::Item\n  def initialize\n    super(1)\n  end\nend\n"),  # line 4
        "rb/main.rb": "a = Item.new(10)\nb = Plain.new(1)\nc = Item\n",  # lines 0, 1
        "php/Item.php": ("<?php namespace Shop;\nclass Item\n{\n    public function __construct($price)\n    {\n    }\n"
                         "    public static function make($p)\n    {\n        return new static($p);\n    }\n}\n"),  # 8
        "php/index.php": ("<?php\nuse Shop\\Item as Thing, Shop\\Item;\n$a = new Item(10);\n$b = new \\Shop\\Item(1);\n"
                          "$c = new Thing(2);\n"),  # lines 2, 3, 4
        "swift/Item.swift": "class Item {\n    init(price: Double) {\n    }\n}\n",
        "swift/main.swift": "let item = Item(price: 10)\nlet t = Item.self\n",  # line 0
    })
    python = analysis.analyze(engine, "Foo.__init__")
    # Listed, never confirmed: type checkers count `Foo()` a reference to the class.
    assert {(c.path, c.span.start_line, c.confirmed, c.reason) for c in python.callers} == {
        ("py/b.py", 2, False, "construction"), ("py/b.py", 3, False, "construction")}
    ruby = analysis.analyze(engine, "Item.initialize", "rb/item.rb")
    assert {(c.path, c.span.start_line) for c in ruby.callers} == {
        ("rb/main.rb", 0), ("rb/main.rb", 1), ("rb/kinds.rb", 4)}
    assert {c.kind for c in ruby.callers} == {"call"}
    php = analysis.analyze(engine, "Item.__construct")
    assert {(c.path, c.span.start_line, c.confirmed) for c in php.callers} == {
        ("php/Item.php", 8, True), ("php/index.php", 2, False), ("php/index.php", 3, False),
        ("php/index.php", 4, False)}
    swift = analysis.analyze(engine, "Item.init", "swift/Item.swift")
    assert {(c.path, c.span.start_line) for c in swift.callers} == {("swift/main.swift", 0)}


def test_a_class_imported_under_another_name_is_constructed_under_that_name(make_engine):
    """`from m import C as D; D()`, a package __init__'s `C as D` imported
    elsewhere, `import { C as D }; new D()`, a default export imported as
    `Q`, and a subclass declared through the alias: each runs C's constructor. They had no caller: the
    constructor's sweep read the class's own name only."""
    engine = make_engine({
        "lib/__init__.py": "from .base import Store as BaseStore\n",
        "lib/base.py": "class Store:\n    def __init__(self, path):\n        self.path = path\n",
        "app.py": ("from lib import BaseStore\nfrom lib.base import Store as S\n\n\nclass Kid(S):\n    pass\n\n\n"
                   "def go():\n    BaseStore('a')\n    S('b')\n    Kid('c')\n"),  # lines 9, 10, 11
        "other.py": "from elsewhere import Store as S\n\n\ndef no():\n    S('x')\n",  # another Store
        "src/store.ts": "export class Store {\n  constructor(private path: string) {}\n}\n",
        "src/app.ts": ("import { Store as S } from './store';\n\nclass Kid extends S {}\n\n"
                       "export function go() {\n  new S('a');\n  new Kid('b');\n}\n"),  # lines 5, 6
        "src/queue.ts": "export default class Queue {\n  constructor(readonly size: number) {}\n}\n",
        "src/use.ts": "import Q from './queue';\n\nexport const q = new Q(3);\n",  # line 2
    })
    python = analysis.analyze(engine, "Store.__init__")
    assert {(c.path, c.span.start_line, c.confirmed, c.reason) for c in python.callers} == {
        ("app.py", 9, False, "construction"), ("app.py", 10, False, "construction"),
        ("app.py", 11, False, "construction")}
    typescript = analysis.analyze(engine, "Store.constructor")
    assert {(c.path, c.span.start_line, c.confirmed) for c in typescript.callers} == {
        ("src/app.ts", 5, True), ("src/app.ts", 6, True)}
    default = analysis.analyze(engine, "Queue.constructor")
    assert callers(default) == {("src/use.ts", 2, "q", True)}


def test_java_and_csharp_constructors_are_called_by_this_super_and_base(make_engine):
    """`this(…)` in another constructor of the class, and `super(…)` / `:
    base(…)` in a subclass's, call a Java or C# constructor; neither writes
    its name."""
    engine = make_engine({
        "Circle.java": ("public class Circle {\n    public Circle(double r) {\n    }\n"
                        "    public Circle() {\n        this(1.0);\n    }\n}\n"),  # line 4
        "Ring.java": ("public class Ring extends Circle {\n    public Ring(double r) {\n"
                      "        super(r);\n    }\n}\n"),  # line 2
        "Shape.cs": ("class Disc {\n    public Disc(double r) { }\n    public Disc() : this(1.0) { }\n}\n"  # 2
                     "class Band : Disc {\n    public Band(double r) : base(r) { }\n}\n"),  # line 5
    })
    java = analysis.analyze(engine, "Circle.Circle")
    assert {(c.path, c.span.start_line, c.symbol) for c in java.callers if c.kind == "call"} == {
        ("Circle.java", 4, "Circle.Circle"), ("Ring.java", 2, "Ring.Ring")}
    assert ("Circle.java", 4, True) in {(c.path, c.span.start_line, c.confirmed) for c in java.callers}
    csharp = analysis.analyze(engine, "Disc.Disc")
    assert {(c.path, c.span.start_line) for c in csharp.callers if c.kind == "call"} == {
        ("Shape.cs", 2), ("Shape.cs", 5)}


def test_ruby_symbols_naming_a_method_to_call_are_its_callers(make_engine):
    """`map(&:discounted)`, `method(:tally)` and `send(:tally)` use the
    method; they counted as words inside other words. A hash key does not."""
    engine = make_engine({
        "item.rb": "class Item\n  def discounted\n    9\n  end\n\n  def tally(x)\n    x\n  end\nend\n",
        "cart.rb": ("class Cart\n  def total(items)\n    items.map(&:discounted).sum\n  end\n\n"  # line 2
                    "  def count(items)\n    items.each(&Item.new.method(:tally))\n"  # line 6
                    "    items.first.send(:tally, 1)\n    { tally: 1, :discounted => 2 }\n  end\nend\n"),  # 7
    })
    discounted = analysis.analyze(engine, "Item.discounted")
    assert {(c.path, c.span.start_line, c.kind, c.confirmed) for c in discounted.callers} == {
        ("cart.rb", 2, "value", False)}
    tally = analysis.analyze(engine, "Item.tally")
    assert {(c.path, c.span.start_line, c.kind) for c in tally.callers} == {
        ("cart.rb", 6, "value"), ("cart.rb", 7, "call")}


def test_a_c_function_used_in_a_macro_body_has_those_callers(make_engine):
    """`#define PARSE_TWICE(s) (parse_num(s) * 2)` and `#define PARSER
    parse_num` use parse_num: tree-sitter leaves a macro's body as text, so
    they were "other" words and the function looked isolated. A comment or
    a string there stays a mention."""
    engine = make_engine({
        "util.h": ("int parse_num(const char *s);\n#define PARSE_TWICE(s) (parse_num(s) * 2)\n"  # line 1
                   "#define PARSER parse_num\n#define NAME \"parse_num\" /* parse_num */\n"),  # lines 2, 3
        "util.c": "#include \"util.h\"\nint parse_num(const char *s)\n{\n    return 0;\n}\n",
    })
    found = analysis.analyze(engine, "parse_num")
    assert {(c.path, c.span.start_line, c.kind, c.confirmed) for c in found.callers} == {
        ("util.h", 1, "call", False), ("util.h", 2, "value", False)}
    assert found.mention_kinds.get("string") == 1 and found.mention_kinds.get("comment") == 1


def test_a_parameter_or_local_shadows_a_function_in_the_table_languages(make_engine):
    """Kotlin, Swift, Scala: `normalize(s)` calling a parameter or a local of
    that name was a confirmed caller of the file's one `normalize`."""
    engine = make_engine({
        "kt/Util.kt": ("fun normalize(s: String): String = s.trim()\n\n"
                       "fun viaParam(normalize: (String) -> String, s: String): String {\n"
                       "    return normalize(s)\n}\n\n"  # line 3
                       "fun viaLocal(s: String): String {\n    val normalize = { x: String -> x + x }\n"
                       "    return normalize(s)\n}\n\n"  # line 8
                       "fun direct(s: String): String = normalize(s)\n"),  # line 11
        "swift/Util.swift": ("func normalize(_ s: String) -> String {\n    return s\n}\n\n"
                             "func viaParam(_ normalize: (String) -> String, _ s: String) -> String {\n"
                             "    return normalize(s)\n}\n\n"  # line 5
                             "func viaLocal(_ s: String) -> String {\n    let normalize = { (x: String) in x }\n"
                             "    return normalize(s)\n}\n\n"  # line 10
                             "func direct(_ s: String) -> String {\n    return normalize(s)\n}\n"),  # line 14
        "scala/Util.scala": ("object Util {\n  def normalize(s: String): String = s.trim\n\n"
                             "  def viaParam(normalize: String => String, s: String): String = normalize(s)\n\n"  # 3
                             "  def viaLocal(s: String): String = {\n    val normalize = (x: String) => x\n"
                             "    normalize(s)\n  }\n\n"  # line 7
                             "  def direct(s: String): String = normalize(s)\n}\n"),  # line 10
    })
    # A local is another thing; a parameter may hold what a module-level
    # function returns (unconfirmed), never a method (Scala's is Util's).
    for path, expected in (("kt/Util.kt", {(11, True, None), (3, False, "parameter")}),
                           ("swift/Util.swift", {(14, True, None), (5, False, "parameter")}),
                           ("scala/Util.scala", {(10, True, None)})):
        found = analysis.analyze(engine, "normalize", path)
        assert {(c.span.start_line, c.confirmed, c.reason) for c in found.callers if c.path == path} == expected, path


def test_a_c_function_after_a_comment_has_its_own_callees_and_name(make_engine):
    """`/* Returns zero. */ int quiet(void)`: its lines start at the comment,
    and the smallest node spanning them was the file: quiet got noisy's
    callees and complexity, and an empty selection range on the comment."""
    engine = make_engine({
        "lib.c": ("int helper(int x)\n{\n    return x + 1;\n}\n\n/* Returns zero. */\nint quiet(void)\n{\n"
                  "    return 0;\n}\n\nint noisy(int x)\n{\n    if (x > 0 && x < 10)\n"
                  "        return helper(x);\n    return helper(-x);\n}\n"),
    })
    quiet = analysis.analyze(engine, "quiet")
    assert quiet.callees == [] and quiet.complexity == 1
    span = quiet.definitions[0].name_span
    assert (span.start_line, span.start_character, span.end_character) == (6, 4, 9)
    noisy = analysis.analyze(engine, "noisy")
    assert [c.symbol for c in noisy.callees] == ["helper"] and noisy.complexity == 3


def test_a_definition_whose_name_is_not_found_is_read_without_its_leading_comment(make_engine):
    """The fallback for a definition whose declared name the syntax does not
    show: the one node within its lines, not the file around a comment."""
    from ctxls.impact import callees
    from ctxls.impact.resolve import Resolver
    from ctxls.impact.syntax import SourceCache
    engine = make_engine({"lib.c": ("/* Doc. */\nint quiet(void)\n{\n    return 0;\n}\n\n"
                                    "int other(void) { return 1; }\n")})
    resolver = Resolver(engine, SourceCache())
    unnamed = index_view.Definition("lib.c", "not_written_here", "function", "c", 0, 4)
    node = callees._definition_node(resolver, resolver.source("lib.c"), unnamed)
    assert node is not None and node.type == "function_definition" and node.start_point.row == 1


def test_rust_and_java_symbols_qualified_by_their_module_are_found(make_engine):
    """`util::parse`, `crate::util::parse` (src/util/mod.rs) and
    `com.other.Strings.pad` (a class named by its file) said "not defined"."""
    engine = make_engine({
        "src/com/acme/util/Strings.java": "package com.acme.util;\npublic final class Strings {\n"
                                          "    public static String pad(String s) { return s; }\n}\n",
        "src/com/other/Strings.java": "package com.other;\npublic final class Strings {\n"
                                      "    public static String pad(String s) { return s; }\n}\n",
        "src/util/mod.rs": "pub fn parse(s: &str) -> i32 {\n    0\n}\n",
        "src/main.rs": "mod util;\nfn main() {\n    util::parse(\"x\");\n}\n",
    })
    for written, path in (("com.other.Strings.pad", "src/com/other/Strings.java"),
                          ("util::parse", "src/util/mod.rs"), ("crate::util::parse", "src/util/mod.rs"),
                          ("crate::main", "src/main.rs")):
        found = analysis.analyze(engine, written, with_callers=False)
        assert found is not None and [d.path for d in found.definitions] == [path], written
    assert index_view.module_names("src/lib.rs") == ["src.lib", "crate"]
    assert index_view.module_names("lib/foo.rs") == ["lib.foo"]


def test_php_calls_written_in_another_case_are_callers(make_engine):
    """PHP resolves functions and methods whatever their case:
    `Format_Price($i->DISCOUNTED())` calls format_price and discounted. Other
    languages' names keep their case."""
    engine = make_engine({
        "helpers.php": "<?php\nfunction format_price($p)\n{\n    return $p;\n}\n",
        "Item.php": "<?php\nclass Item\n{\n    public function discounted()\n    {\n        return 1;\n    }\n}\n",
        "index.php": "<?php\n$i = new Item();\necho Format_Price($i->DISCOUNTED());\necho format_price(1);\n",
        "other.py": "def use():\n    return Format_Price(1)\n",
    })
    found = analysis.analyze(engine, "format_price")
    assert {(c.path, c.span.start_line, c.span.start_character) for c in found.callers} == {
        ("index.php", 2, 5), ("index.php", 3, 5)}
    method = analysis.analyze(engine, "Item.discounted")
    assert {(c.path, c.span.start_line) for c in method.callers} == {("index.php", 2)}


def test_swift_strings_kotlin_imports_and_rust_macro_calls_are_told_apart(make_engine):
    """Swift's string text was an "other" word, a Kotlin import line a
    `value` caller, and a call inside `println!(…)` a `value`."""
    engine = make_engine({
        "Sources/Total.swift": "func total() -> Int {\n    return 1\n}\nprint(\"total in a string\")\n",
        "app/Util.kt": "package acme\n\nfun normalize(s: String): String = s\n",
        "app/Main.kt": "import acme.normalize\n\nfun main() {\n    println(normalize(\"x\"))\n}\n",  # line 3
        "Cargo.toml": "[package]\nname = \"m\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
        "src/main.rs": "fn parse(s: &str) -> i32 {\n    0\n}\nfn main() {\n    println!(\"{}\", parse(\"x\"));\n}\n",
    })
    total = analysis.analyze(engine, "total")
    assert total.mention_kinds.get("string") == 1 and "other" not in total.mention_kinds
    normalize = analysis.analyze(engine, "normalize")
    assert {(c.path, c.span.start_line, c.kind) for c in normalize.callers} == {("app/Main.kt", 3, "call")}
    assert normalize.mention_kinds.get("import") == 1
    parse = analysis.analyze(engine, "parse")
    assert {(c.path, c.span.start_line, c.kind) for c in parse.callers} == {("src/main.rs", 4, "call")}


def test_a_local_is_not_in_scope_in_its_own_initializer_in_the_table_languages(make_engine):
    """Kotlin's `val normalize = normalize(s)` (Swift's `let`, Scala's `val`)
    calls the function: the local it declares is not in scope yet. It was
    taken for that local, and the function showed no caller."""
    engine = make_engine({
        "kt/Util.kt": ("fun normalize(s: String): String = s.trim()\n\n"
                       "fun caller(s: String): String {\n    val normalize = normalize(s)\n"  # line 3
                       "    return normalize\n}\n"),
        "swift/Util.swift": ("func normalize(_ s: String) -> String {\n    return s\n}\n\n"
                             "func caller(_ s: String) -> String {\n    let normalize = normalize(s)\n"  # line 5
                             "    return normalize\n}\n"),
        "scala/Util.scala": ("object Util {\n  def normalize(s: String): String = s.trim\n\n"
                             "  def caller(s: String): String = {\n    val normalize = normalize(s)\n"  # line 4
                             "    normalize\n  }\n}\n"),
    })
    for path, line in (("kt/Util.kt", 3), ("swift/Util.swift", 5), ("scala/Util.scala", 4)):
        found = analysis.analyze(engine, "normalize", path)
        assert (path, line, "call", True) in {(c.path, c.span.start_line, c.kind, c.confirmed)
                                               for c in found.callers}, path


def test_a_construction_naming_another_namespaces_class_is_not_a_caller(make_engine):
    """The constructor sweep finds a class by its last name: `Shop::Request.new`
    was a caller of `Shop::Auth::BaseRequest#initialize` (through its subclass
    `Basic::Request`), `use Shop\\B\\Item; new Item` of `Shop\\A\\Item`'s
    `__construct`, Java's `super(r)` in com.b (beside com.b.Base) of
    com.a.Base's constructor. Constructions the code names as the class stay,
    and each of a Java subclass's constructors calls `super`."""
    engine = make_engine({
        "rb/base_request.rb": ("module Shop\n  module Auth\n    class BaseRequest\n"
                               "      def initialize(env)\n      end\n    end\n  end\nend\n"),
        "rb/basic.rb": ("module Shop\n  module Auth\n    class Basic\n      class Request < Auth::BaseRequest\n"
                        "      end\n\n      def call(env)\n        Basic::Request.new(env)\n"  # line 7
                        "        Request.new(env)\n      end\n    end\n  end\nend\n"),  # line 8
        "rb/request.rb": "module Shop\n  class Request\n    def initialize(env)\n    end\n  end\nend\n",
        "rb/logger.rb": ("module Shop\n  class Logger\n    def log(env)\n      Shop::Request.new(env)\n"  # line 3
                         "      Request.new(env)\n      ::Shop::Auth::Basic::Request.new(env)\n"  # lines 4, 5
                         "    end\n  end\nend\n"),
        "php/A/Item.php": "<?php\nnamespace Shop\\A;\n\nclass Item\n{\n    public function __construct($p)\n    {\n    }\n}\n",
        "php/B/Item.php": "<?php\nnamespace Shop\\B;\n\nclass Item\n{\n    public function __construct($n)\n    {\n    }\n}\n",
        "php/B/Use.php": ("<?php\nnamespace Shop\\B;\n\nuse Shop\\A\\Item as Priced;\n\n"
                          "function make()\n{\n    new Item('x');\n    new \\Shop\\A\\Item(1);\n"  # lines 7, 8
                          "    new Priced(2);\n    new A\\Item(3);\n}\n"),  # lines 9, 10
        "php/C/Use.php": ("<?php\nnamespace Shop\\C;\n\nuse Shop\\B\\Item;\nuse Shop\\B\\Item as Other;\n\n"
                          "new Item('y');\nnew Other('z');\n"),  # lines 6, 7
        "java/com/a/Base.java": "package com.a;\n\npublic class Base {\n    public Base(int r) {\n    }\n}\n",
        "java/com/b/Base.java": "package com.b;\n\npublic class Base {\n    public Base(int r) {\n    }\n}\n",
        "java/com/b/Child.java": ("package com.b;\n\npublic class Child extends Base {\n    public Child(int r) {\n"
                                  "        super(r);\n    }\n}\n"),  # line 4
        "java/com/c/Kid.java": ("package com.c;\n\nimport com.a.Base;\n\npublic class Kid extends Base {\n"
                                "    public Kid(int r) {\n        super(r);\n    }\n"  # line 6
                                "    public Kid() {\n        super(0);\n    }\n}\n"),  # line 9
    })

    def calls(symbol: str, path: str) -> set[tuple[str, int]]:
        return {(c.path, c.span.start_line) for c in analysis.analyze(engine, symbol, path).callers
                if c.kind == "call"}

    # Basic::Request, and Request inside Basic, are the subclass; Shop::Request
    # and Request inside Shop::Logger are Shop::Request.
    assert calls("Shop.Auth.BaseRequest.initialize", "rb/base_request.rb") == {
        ("rb/basic.rb", 7), ("rb/basic.rb", 8), ("rb/logger.rb", 5)}
    assert calls("Shop.Request.initialize", "rb/request.rb") == {("rb/logger.rb", 3), ("rb/logger.rb", 4)}
    # A relative qualifier is kept when it ends the class's namespace (`A\Item`).
    assert calls("Item.__construct", "php/A/Item.php") == {
        ("php/B/Use.php", 8), ("php/B/Use.php", 9), ("php/B/Use.php", 10)}
    assert calls("Item.__construct", "php/B/Item.php") == {
        ("php/B/Use.php", 7), ("php/C/Use.php", 6), ("php/C/Use.php", 7)}
    assert {line for path, line in calls("Base.Base", "java/com/a/Base.java") if path == "java/com/c/Kid.java"} \
        == {6, 9}
    assert not {p for p, _ in calls("Base.Base", "java/com/a/Base.java")} & {"java/com/b/Child.java"}
    assert ("java/com/b/Child.java", 4) in calls("Base.Base", "java/com/b/Base.java")


def test_a_block_scoped_local_hides_an_import_only_in_its_block(make_engine):
    """A JS/TS ``const``/``let``/``class`` in an inner block, a ``for (const x
    of …)`` or ``catch (x)`` head, and Go's ``x := …`` in an ``if`` bind
    ``x`` in that block only: the function's calls after it are the
    import's (they were dropped: "no callers, risk low"). A JS ``var`` is
    the whole function's."""
    engine = make_engine({
        "helpers.ts": "export function double(v: number): number { return v * 2; }\n",
        "use.ts": (
            "import { double } from './helpers';\n"
            "export function inIf(xs: number[]): number {\n"
            "  if (xs.length > 1) {\n"
            "    const double = (v: number) => v;\n"
            "    return double(1);\n"  # line 4: the block's own
            "  }\n"
            "  return double(2);\n"  # line 6
            "}\n"
            "export function inLoop(xs: number[]): number {\n"
            "  for (const double of [Math.abs]) { xs.push(double(3)); }\n"  # line 9: the loop's own
            "  return double(4);\n"  # line 10
            "}\n"
            "export function inCatch(): number {\n"
            "  try { JSON.parse('{'); } catch (double) { console.log(double); }\n"
            "  return double(5);\n"  # line 14
            "}\n"
            "export function withVar(c: boolean): number {\n"
            "  if (c) { var double = (v: number) => v; }\n"
            "  return double(6);\n"  # line 18: the var, hoisted to the function
            "}\n"
        ),
        "go.mod": "module example.com/bs\n\ngo 1.21\n",
        "calc/calc.go": (
            "package calc\n"
            "\n"
            "func Triple(v int) int { return v * 3 }\n"
            "\n"
            "func Blocky(xs []int) int {\n"
            "\tif len(xs) > 1 {\n"
            "\t\tTriple := func(v int) int { return v }\n"
            "\t\t_ = Triple(1)\n"  # line 7: the block's own
            "\t}\n"
            "\treturn Triple(3)\n"  # line 9
            "}\n"
        ),
    })
    assert callers(analysis.analyze(engine, "double", "helpers.ts")) == {
        ("use.ts", 6, "inIf", True), ("use.ts", 10, "inLoop", True), ("use.ts", 14, "inCatch", True)}
    assert callers(analysis.analyze(engine, "Triple", "calc/calc.go")) == {("calc/calc.go", 9, "Blocky", True)}


def test_an_attribute_or_local_given_two_classes_on_two_branches_may_hold_either(make_engine):
    """``if debug: app.backend = Store() / else: app.backend = Square()`` then
    ``app.backend.save()``: a type checker reads ``Store | Square``, so the
    call is an unconfirmed caller of both (it was Square's, confirmed, and
    no caller of Store's). An assignment after the ``if`` decides alone."""
    engine = make_engine({
        "b.py": (
            "class Store:\n"
            "    def save(self):\n"
            "        return 1\n"
            "\n"
            "\n"
            "class Square:\n"
            "    def save(self):\n"
            "        return 2\n"
            "\n"
            "\n"
            "class App:\n"
            "    backend: object = None\n"
            "\n"
            "\n"
            "def setup(app: App, debug: bool):\n"
            "    if debug:\n"
            "        app.backend = Store()\n"
            "    else:\n"
            "        app.backend = Square()\n"
            "    app.backend.save()\n"  # line 19: either
            "    app.backend = Store()\n"
            "    app.backend.save()\n"  # line 21: Store's
            "\n"
            "\n"
            "def local(debug: bool):\n"
            "    if debug:\n"
            "        s = Store()\n"
            "    else:\n"
            "        s = Square()\n"
            "    return s.save()\n"  # line 29: either
        ),
    })
    assert callers(analysis.analyze(engine, "Store.save")) == {
        ("b.py", 19, "setup", False), ("b.py", 21, "setup", True), ("b.py", 29, "local", False)}
    assert callers(analysis.analyze(engine, "Square.save")) == {
        ("b.py", 19, "setup", False), ("b.py", 29, "local", False)}


def test_a_bare_call_confirms_a_method_of_its_file_only_from_its_class(make_engine):
    """Kotlin's imported ``format(…)`` (C#'s ``using static``, Swift's global
    function) beside another class's method of that name in the file: the
    compiler calls the import, so that method is at most an unconfirmed
    caller (it was confirmed). Inside its class, or a class naming it as
    a base, the bare call is the method's."""
    engine = make_engine({
        "src/com/acme/util/Format.kt": "package com.acme.util\n\nfun format(s: String): String = s.trim()\n",
        "src/com/acme/svc/Job.kt": (
            "package com.acme.svc\n"
            "\n"
            "import com.acme.util.format\n"
            "\n"
            "open class Printer {\n"
            "    fun format(s: String): String = s\n"
            "    fun show(s: String): String = format(s)\n"  # line 6: its own class
            "}\n"
            "\n"
            "class Loud : Printer() {\n"
            "    fun shout(s: String): String = format(s)\n"  # line 10: a subclass
            "}\n"
            "\n"
            "class Job {\n"
            "    fun run(): String = format(\" x \")\n"  # line 14: the import
            "}\n"
        ),
        "src/Logger.cs": "namespace Util\n{\n    public static class Logger\n    {\n"
                         "        public static void Log(string s) { }\n    }\n}\n",
        "src/Svc.cs": (
            "using static Util.Logger;\n"
            "\n"
            "namespace App\n"
            "{\n"
            "    public class Printer\n"
            "    {\n"
            "        public void Log(string s, int level) { }\n"
            "    }\n"
            "\n"
            "    public class Svc\n"
            "    {\n"
            "        public void Run()\n"
            "        {\n"
            "            Log(\"x\");\n"  # line 13: Logger's
            "        }\n"
            "    }\n"
            "}\n"
        ),
        "src/Util.swift": "func pad2(_ s: String) -> String {\n    return \" \" + s\n}\n",
        "src/Report.swift": (
            "class Grid {\n"
            "    func pad2(_ s: String) -> String {\n"
            "        return s\n"
            "    }\n"
            "}\n"
            "\n"
            "class Sheet {\n"
            "    func line(_ s: String) -> String {\n"
            "        return pad2(s)\n"  # line 8: the global function's
            "    }\n"
            "}\n"
        ),
    })
    assert callers(analysis.analyze(engine, "Printer.format")) == {
        ("src/com/acme/svc/Job.kt", 6, "Printer.show", True), ("src/com/acme/svc/Job.kt", 10, "Loud.shout", True),
        ("src/com/acme/svc/Job.kt", 14, "Job.run", False)}
    assert callers(analysis.analyze(engine, "App.Printer.Log")) == {("src/Svc.cs", 13, "App.Svc.Run", False)}
    assert callers(analysis.analyze(engine, "Grid.pad2")) == {("src/Report.swift", 8, "Sheet.line", False)}


def test_go_receivers_typed_by_what_a_constructor_function_returns(make_engine):
    """``s := store.New()`` and ``t, err := store.Open(…)`` (its first
    result) give a ``*Store``: ``s.Save()`` calls Store's Save (they were
    unconfirmed, and unconfirmed callers of the unrelated Other's too)."""
    engine = make_engine({
        "go.mod": "module example.com/app\n\ngo 1.21\n",
        "store/store.go": (
            "package store\n"
            "\n"
            "type Store struct{ n int }\n"
            "\n"
            "func New() *Store { return &Store{} }\n"
            "\n"
            "func Open(path string) (*Store, error) { return &Store{}, nil }\n"
            "\n"
            "func (s *Store) Save() error { return nil }\n"
            "\n"
            "type Other struct{}\n"
            "\n"
            "func (o *Other) Save() error { return nil }\n"
            "\n"
            "func local() error {\n"
            "\ts := New()\n"
            "\treturn s.Save()\n"  # line 16
            "}\n"
        ),
        "api/api.go": (
            "package api\n"
            "\n"
            "import \"example.com/app/store\"\n"
            "\n"
            "func A() {\n"
            "\ts := store.New()\n"
            "\ts.Save()\n"  # line 6
            "}\n"
            "\n"
            "func B() error {\n"
            "\tt, err := store.Open(\"x\")\n"
            "\tif err != nil {\n"
            "\t\treturn err\n"
            "\t}\n"
            "\treturn t.Save()\n"  # line 14
            "}\n"
        ),
    })
    assert callers(analysis.analyze(engine, "Store.Save")) == {
        ("store/store.go", 16, "local", True), ("api/api.go", 6, "A", True), ("api/api.go", 14, "B", True)}
    assert callers(analysis.analyze(engine, "Other.Save")) == set()


def test_go_receivers_typed_by_a_generic_type_with_its_type_arguments(make_engine):
    """Probe G5: ``s := &coll.Stack[int]{}``, ``Stack[string]{}``, ``var s
    coll.Stack[int]`` and a parameter ``s *coll.Stack[int]`` are Stacks:
    ``s.Push(1)`` calls Stack's Push, not the unrelated Queue's (the
    composite literals were read as a library's value: no caller at all,
    an `elsewhere` mention; the declared ones were untyped)."""
    engine = make_engine({
        "go.mod": "module example.com/g4\n\ngo 1.21\n",
        "coll/stack.go": (
            "package coll\n"
            "\n"
            "type Stack[T any] struct{ items []T }\n"
            "\n"
            "func (s *Stack[T]) Push(v T) { s.items = append(s.items, v) }\n"
            "\n"
            "type Queue struct{ items []int }\n"
            "\n"
            "func (q *Queue) Push(v int) { q.items = append(q.items, v) }\n"
            "\n"
            "func fill() {\n"
            "\ts := &Stack[int]{}\n"
            "\ts.Push(1)\n"  # line 12
            "}\n"
        ),
        "app/app.go": (
            "package app\n"
            "\n"
            "import \"example.com/g4/coll\"\n"
            "\n"
            "func A() {\n"
            "\ts := &coll.Stack[int]{}\n"
            "\ts.Push(1)\n"  # line 6
            "\tt := coll.Stack[string]{}\n"
            "\tt.Push(\"x\")\n"  # line 8
            "}\n"
            "\n"
            "func B(s *coll.Stack[int]) {\n"
            "\tvar u coll.Stack[int]\n"
            "\tu.Push(3)\n"  # line 13
            "\ts.Push(4)\n"  # line 14
            "}\n"
        ),
    })
    assert callers(analysis.analyze(engine, "Stack.Push")) == {
        ("coll/stack.go", 12, "fill", True), ("app/app.go", 6, "A", True), ("app/app.go", 8, "A", True),
        ("app/app.go", 13, "B", True), ("app/app.go", 14, "B", True)}
    assert callers(analysis.analyze(engine, "Queue.Push")) == set()


def test_go_calls_through_an_interface_are_unconfirmed_callers_of_its_implementations(make_engine):
    """Probe G6: Go names no type implementing an interface, so ``r.Save()``
    on a variable, parameter or constructor result typed as the interface
    ``Repo`` (or an interface embedding it), and ``l.Log()`` promoted from
    an interface a struct embeds, may run any project type's method of
    that name whose type has the interface's methods: an unconfirmed
    (``override``) caller of ``Mem.Save``, none of ``Partial.Save`` (no
    ``Load``). A caller of the interface's own method is confirmed. (They
    were `elsewhere` mentions: no caller at all.)"""
    engine = make_engine({
        "go.mod": "module example.com/app2\n\ngo 1.21\n",
        "repo/repo.go": (
            "package repo\n"
            "\n"
            "type Repo interface {\n"
            "\tSave(k string) error\n"
            "\tLoad(k string) bool\n"
            "}\n"
            "\n"
            "type Closer interface {\n"
            "\tRepo\n"
            "\tClose()\n"
            "}\n"
            "\n"
            "type Logger interface{ Log() }\n"
        ),
        "mem/mem.go": (
            "package mem\n"
            "\n"
            "import \"example.com/app2/repo\"\n"
            "\n"
            "type Mem struct{ data map[string]bool }\n"
            "\n"
            "func NewMem() *Mem { return &Mem{data: map[string]bool{}} }\n"
            "\n"
            "func Open() repo.Repo { return NewMem() }\n"
            "\n"
            "func (m *Mem) Save(k string) error { m.data[k] = true; return nil }\n"
            "\n"
            "func (m *Mem) Load(k string) bool { return m.data[k] }\n"
            "\n"
            "type Partial struct{}\n"
            "\n"
            "func (p Partial) Save(k string) error { return nil }\n"
            "\n"
            "type Printer struct{}\n"
            "\n"
            "func (p Printer) Log() {}\n"
            "\n"
            "type Loud struct{ repo.Logger }\n"
        ),
        "app/app.go": (
            "package app\n"
            "\n"
            "import (\n"
            "\t\"example.com/app2/mem\"\n"
            "\t\"example.com/app2/repo\"\n"
            ")\n"
            "\n"
            "func Store(k string) {\n"
            "\tvar r repo.Repo = mem.NewMem()\n"
            "\tr.Save(k)\n"  # line 9
            "\tmem.Open().Save(k)\n"  # line 10
            "}\n"
            "\n"
            "func Flush(r repo.Repo, c repo.Closer) {\n"
            "\tr.Save(\"all\")\n"  # line 14
            "\tc.Save(\"all\")\n"  # line 15
            "}\n"
            "\n"
            "func Shout() {\n"
            "\tl := mem.Loud{Logger: mem.Printer{}}\n"
            "\tl.Log()\n"  # line 20
            "}\n"
        ),
    })
    save = analysis.analyze(engine, "Mem.Save")
    assert callers(save) == {("app/app.go", line, symbol, False)
                             for line, symbol in ((9, "Store"), (10, "Store"), (14, "Flush"), (15, "Flush"))}
    assert save.unconfirmed_reasons == {"override": 4}
    assert callers(analysis.analyze(engine, "Partial.Save")) == set()
    assert callers(analysis.analyze(engine, "Repo.Save")) == {
        ("app/app.go", line, symbol, True) for line, symbol in ((9, "Store"), (10, "Store"), (14, "Flush"), (15, "Flush"))}
    assert callers(analysis.analyze(engine, "Printer.Log")) == {("app/app.go", 20, "Shout", False)}


def test_go_receivers_typed_by_a_struct_fields_declared_type(make_engine):
    """Probe G13: ``h.db.Put()`` with ``type Holder struct { db
    *store.Store }`` calls Store's Put: through the method's receiver, a
    parameter, a field promoted from an embedded struct, or an embedded
    ``*store.Store`` named as its type (``w.Store.Put()``); never the
    unrelated Cache's Put (each was an unconfirmed `untyped-receiver`
    caller of both)."""
    engine = make_engine({
        "go.mod": "module example.com/shop\n\ngo 1.21\n",
        "store/store.go": (
            "package store\n"
            "\n"
            "type Store struct{ items map[string]int }\n"
            "\n"
            "func (s *Store) Put(k string, v int) { s.items[k] = v }\n"
            "\n"
            "type Cache struct{ m map[string]int }\n"
            "\n"
            "func (c *Cache) Put(k string, v int) { c.m[k] = v }\n"
        ),
        "app/app.go": (
            "package app\n"
            "\n"
            "import \"example.com/shop/store\"\n"
            "\n"
            "type Holder struct {\n"
            "\tname string\n"
            "\tdb   *store.Store\n"
            "}\n"
            "\n"
            "type Outer struct{ Holder }\n"
            "\n"
            "type Wrapper struct{ *store.Store }\n"
            "\n"
            "func (h *Holder) Save() {\n"
            "\th.db.Put(\"x\", 2)\n"  # line 14
            "}\n"
            "\n"
            "func Use(h *Holder, o Outer, w Wrapper) {\n"
            "\th.db.Put(\"y\", 3)\n"  # line 18
            "\to.db.Put(\"z\", 4)\n"  # line 19
            "\tw.Store.Put(\"w\", 5)\n"  # line 20
            "}\n"
        ),
    })
    assert callers(analysis.analyze(engine, "Store.Put")) == {
        ("app/app.go", 14, "Holder.Save", True), ("app/app.go", 18, "Use", True),
        ("app/app.go", 19, "Use", True), ("app/app.go", 20, "Use", True)}
    assert callers(analysis.analyze(engine, "Cache.Put")) == set()


def test_a_class_written_through_its_module_types_a_receiver(make_engine):
    """``other.Store()``, ``s: other.Store``, ``other.Store().save()``, and
    TypeScript's ``new models.Cart()`` / ``c: models.Cart`` after ``import *
    as models`` are instances of that class, as when imported by name
    (they were unconfirmed ``shared-name`` callers)."""
    engine = make_engine({
        "pkg/__init__.py": "",
        "pkg/other.py": "class Store:\n    def save(self):\n        return 1\n",
        "pkg/others.py": "".join(f"class {name}:\n    def save(self):\n        return 2\n\n\n"
                                 for name in ("Disk", "Cloud", "Memory")),
        "pkg/use.py": (
            "from pkg import other\n"
            "\n"
            "\n"
            "def made():\n"
            "    s = other.Store()\n"
            "    s.save()\n"  # line 5
            "\n"
            "\n"
            "def annotated(s: other.Store):\n"
            "    s.save()\n"  # line 9
            "\n"
            "\n"
            "def chained():\n"
            "    other.Store().save()\n"  # line 13
        ),
        "src/models.ts": "export class Cart {\n  total(): number { return 0; }\n}\n",
        "src/others.ts": "".join(f"export class {name} {{ total(): number {{ return 1; }} }}\n" for name in "ABC"),
        "src/use.ts": (
            "import * as models from './models';\n"
            "export function made(): number {\n"
            "  const c = new models.Cart();\n"
            "  return c.total();\n"  # line 3
            "}\n"
            "export function annotated(c: models.Cart): number {\n"
            "  return c.total();\n"  # line 6
            "}\n"
        ),
    })
    assert callers(analysis.analyze(engine, "Store.save", "pkg/other.py")) == {
        ("pkg/use.py", 5, "made", True), ("pkg/use.py", 9, "annotated", True), ("pkg/use.py", 13, "chained", True)}
    assert callers(analysis.analyze(engine, "Cart.total")) == {
        ("src/use.ts", 3, "made", True), ("src/use.ts", 6, "annotated", True)}


def test_isinstance_and_instanceof_narrow_and_a_closure_sees_its_function_s_locals(make_engine):
    """``if isinstance(x, Store): x.save()``, ``if (x instanceof Store)
    x.save()`` and ``u = Store()`` read by a nested ``def cb(): u.save()``
    are Store's, as a type checker narrows them (they were unconfirmed
    ``shared-name`` callers); a branch that rebinds ``x`` first is not."""
    engine = make_engine({
        "pkg/__init__.py": "",
        "pkg/models.py": "".join(f"class {name}:\n    def save(self):\n        return 1\n\n\n"
                                 for name in ("Store", "Disk", "Cloud", "Memory")),
        "pkg/use.py": (
            "from pkg.models import Store\n"
            "\n"
            "\n"
            "def flush(x: object, ok: bool):\n"
            "    if ok and isinstance(x, Store):\n"
            "        x.save()\n"  # line 5
            "    if isinstance(x, Store):\n"
            "        x = make()\n"
            "        x.save()\n"  # line 8: another object
            "\n"
            "\n"
            "def later():\n"
            "    u = Store()\n"
            "\n"
            "    def cb():\n"
            "        u.save()\n"  # line 15
            "    cb()\n"
        ),
        "src/models.ts": "".join(f"export class {name} {{ save(): void {{}} }}\n"
                                 for name in ("Store", "Disk", "Cloud", "Memory")),
        "src/use.ts": (
            "import { Store } from './models';\n"
            "export function flush(x: unknown): void {\n"
            "  if (x instanceof Store) {\n"
            "    x.save();\n"  # line 3
            "  }\n"
            "}\n"
        ),
    })
    python = callers(analysis.analyze(engine, "Store.save", "pkg/models.py"))
    assert {c for c in python if c[3]} == {("pkg/use.py", 5, "flush", True), ("pkg/use.py", 15, "later", True)}
    assert ("pkg/use.py", 8, "flush", False) in python
    assert {c for c in callers(analysis.analyze(engine, "Store.save", "src/models.ts")) if c[0].startswith("src/")} \
        == {("src/use.ts", 3, "flush", True)}


def test_each_definition_of_a_bare_name_query_gets_the_callers_it_gets_asked_alone(make_engine):
    """``self.step()`` in Base and ``x.step()`` on ``x: Base`` may run Sub's
    override: asked as `step` (Base's and Sub's at once), Sub.step's answer
    had no caller and risk low (the owner's confirmation hid the override),
    where `Sub.step` asked alone has them unconfirmed (override), risk med;
    Base.step keeps its confirmed callers. TypeScript's ``this.tstep()`` too."""
    engine = make_engine({
        "m.py": ("class Base:\n"
                 "    def run(self):\n"
                 "        return self.step()\n"  # line 2
                 "\n"
                 "    def step(self):\n"
                 "        return 1\n"
                 "\n"
                 "\n"
                 "class Sub(Base):\n"
                 "    def step(self):\n"
                 "        return 2\n"
                 "\n"
                 "\n"
                 "def typed(x: Base):\n"
                 "    return x.step()\n"),  # line 14
        "t.ts": ("export class TBase {\n"
                 "  run(): number {\n"
                 "    return this.tstep();\n"  # line 2
                 "  }\n"
                 "  tstep(): number {\n"
                 "    return 1;\n"
                 "  }\n"
                 "}\n"
                 "export class TSub extends TBase {\n"
                 "  tstep(): number {\n"
                 "    return 2;\n"
                 "  }\n"
                 "}\n"),
    })
    for name, subclass_symbol, base_symbol in (("step", "Sub.step", "Base.step"),
                                                ("tstep", "TSub.tstep", "TBase.tstep")):
        both = analysis.analyze(engine, name)
        answers = {a.definition.symbol: a for a in both.per_definition}
        for symbol in (subclass_symbol, base_symbol):
            alone = analysis.analyze(engine, symbol)
            asked = answers[symbol]
            assert callers(asked) == callers(alone) and asked.risk == alone.risk
            assert asked.unconfirmed_reasons == alone.unconfirmed_reasons
        assert {c.reason for c in answers[subclass_symbol].callers} == {"override"}
        assert answers[subclass_symbol].risk == "med"
    assert callers(answers_of := analysis.analyze(engine, "step").per_definition[0]) == {
        ("m.py", 2, "Base.run", True), ("m.py", 14, "typed", True)}
    assert answers_of.definition.symbol == "Base.step"
    assert callers(analysis.analyze(engine, "Sub.step")) == {
        ("m.py", 2, "Base.run", False), ("m.py", 14, "typed", False)}


def test_a_name_a_class_body_binds_is_that_class_s_member(make_engine):
    """In a class body, a name bound earlier in it is the class's own
    attribute: `__int__ = unwrap` after `def unwrap`, `cases = _cases()`, a
    decorator's argument and `@value.setter` use the method (renaming it
    breaks the class), where they were counted as a use of something else.
    Another class's member of that name, or a module function the class
    body rebinds, is not what they use."""
    engine = make_engine({
        "m.py": ("class Num:\n"
                 "    def unwrap(self):\n"
                 "        return 1\n"
                 "\n"
                 "    __int__ = unwrap\n"  # line 4
                 "\n"
                 "\n"
                 "class Other:\n"
                 "    def unwrap(self):\n"
                 "        return 2\n"
                 "\n"
                 "    alias = unwrap\n"),  # line 11: Other's, not Num's
        "t.py": ("import pytest\n"
                 "\n"
                 "\n"
                 "def helper():\n"
                 "    return 0\n"
                 "\n"
                 "\n"
                 "class TestX:\n"
                 "    def _cases():\n"
                 "        return [1, 2]\n"
                 "\n"
                 "    cases = _cases()\n"  # line 11
                 "\n"
                 "    @pytest.mark.parametrize('k', _cases())\n"  # line 13
                 "    def test_k(self, k):\n"
                 "        assert k\n"
                 "\n"
                 "    @property\n"
                 "    def value(self):\n"
                 "        return 1\n"
                 "\n"
                 "    @value.setter\n"  # line 21
                 "    def value(self, v):\n"
                 "        pass\n"
                 "\n"
                 "    helper = staticmethod(len)\n"
                 "    size = helper([])\n"),  # line 26: the class's helper, not the module's
    })
    def sites(symbol: str, path: str | None = None) -> set[tuple[str, int, bool]]:
        return {(p, line, confirmed) for p, line, _, confirmed in callers(analysis.analyze(engine, symbol, path))}

    assert sites("Num.unwrap") == {("m.py", 4, True)}
    assert sites("Other.unwrap") == {("m.py", 11, True)}
    assert sites("TestX._cases") == {("t.py", 11, True), ("t.py", 13, True)}
    assert ("t.py", 21, True) in sites("TestX.value")
    helper = analysis.analyze(engine, "helper", "t.py")
    assert callers(helper) == set() and helper.mention_kinds["elsewhere"] == 1


def test_a_module_qualified_query_follows_the_module_s_re_exports(make_engine):
    """`pkg.compute` where pkg/__init__.py re-exports `from .core import
    compute` (as callers write `pkg.compute()`) was "not defined"; now it is
    the definition `from pkg import compute` gets: through an alias
    (`pkg.calc`), into a class (`pkg.Engine.step`), and a TypeScript
    barrel's `export { … } from` and `export * from`."""
    engine = make_engine({
        "pkg/__init__.py": "from .core import compute, Engine\nfrom .core import compute as calc\n",
        "pkg/core.py": ("def compute(x):\n    return x\n\n\n"
                        "class Engine:\n    def step(self):\n        return compute(1)\n"),
        "app.py": "import pkg\n\n\ndef main():\n    pkg.Engine().step()\n    return pkg.compute(2)\n",
        "web/index.ts": "export { compute as calc } from './core';\nexport * from './engine';\n",
        "web/core.ts": "export function compute(x: number): number {\n  return x;\n}\n",
        "web/engine.ts": "export class Motor {\n  spin(): number {\n    return 1;\n  }\n}\n",
    })
    direct = analysis.analyze(engine, "pkg.core.compute")
    for query, key in (("pkg.compute", ("pkg/core.py", "compute")), ("pkg.calc", ("pkg/core.py", "compute")),
                       ("pkg.Engine.step", ("pkg/core.py", "Engine.step")),
                       ("web.calc", ("web/core.ts", "compute")), ("web.Motor.spin", ("web/engine.ts", "Motor.spin"))):
        result = analysis.analyze(engine, query)
        assert result is not None and [d.key for d in result.definitions] == [key], query
        assert result.symbol == query
    assert callers(analysis.analyze(engine, "pkg.compute")) == callers(direct)
    assert analysis.analyze(engine, "pkg.compute", "app.py") is None  # only its definitions in that file
    assert analysis.analyze(engine, "pkg.missing") is None
    assert analysis.analyze(engine, "web.Motor.missing") is None


def test_a_position_on_a_module_attribute_follows_the_module_s_re_export_alias(make_engine):
    """Impact at `calc` of `pkg.calc(2)`, where pkg/__init__.py has `from
    .core import compute as calc`, answered nothing (no definition is named
    calc); it resolves like go-to-definition: compute."""
    engine = make_engine({
        "pkg/__init__.py": "from .core import compute as calc\n",
        "pkg/core.py": "def compute(x):\n    return x\n",
        "app.py": "import pkg\nfrom pkg import calc\n\n\ndef main():\n    calc(1)\n    return pkg.calc(2)\n",
    })
    for line, character in ((5, 4), (6, 15)):
        result = analysis.analyze(engine, path="app.py", line=line, character=character)
        assert result is not None and [d.key for d in result.definitions] == [("pkg/core.py", "compute")]
    (site,) = analysis.definitions_at(engine, "app.py", 6, 15)
    assert site.definition.key == ("pkg/core.py", "compute")
    assert analysis.definitions_at(engine, "app.py", 6, 11) == []  # `pkg`: a module, no definition


def test_a_query_for_an_inherited_member_answers_the_base_s_definition_and_says_so(make_engine):
    """`Engine.run` where Engine inherits `run` from Base was "not defined";
    it is the `run` a call on an Engine runs: Base's, with a hedge saying
    so. A member no class up the lineage defines is still not defined."""
    engine = make_engine({
        "pkg/__init__.py": "from .core import Engine\n",
        "pkg/base.py": "class Base:\n    def run(self):\n        return 1\n",
        "pkg/core.py": "from .base import Base\n\n\nclass Engine(Base):\n    pass\n",
        "app.py": "import pkg\n\n\ndef main():\n    return pkg.Engine().run()\n",
    })
    for query in ("Engine.run", "pkg.Engine.run", "pkg.core.Engine.run"):
        result = analysis.analyze(engine, query)
        assert [d.key for d in result.definitions] == [("pkg/base.py", "Base.run")], query
        assert result.hedges[0].startswith(f"{query} is inherited (its class does not define it): "
                                           "this answer is for Base.run in pkg/base.py")
        assert callers(result) == {("app.py", 4, "main", True)}
    assert not any("inherited" in hedge for hedge in analysis.analyze(engine, "Base.run").hedges)
    assert analysis.analyze(engine, "Engine.stop") is None
    assert analysis.analyze(engine, "Engine.run", "pkg/core.py") is None  # its definition is in pkg/base.py


def _counting_parents(sf: SourceFile) -> list[object]:
    """The nodes whose parent ``sf``'s walks look up from the root, in order
    (each recorded as its walk first stores it in ``sf.parents``)."""
    looked_up: list[object] = []

    class Counted(dict):
        def __setitem__(self, key, value):
            looked_up.append(key)
            super().__setitem__(key, value)

    sf.parents = Counted()
    return looked_up


def _nodes_where(sf: SourceFile, wanted) -> list:
    """``sf``'s nodes for which ``wanted(node)`` holds."""
    found, pending = [], [sf.tree.root_node]
    while pending:
        node = pending.pop()
        found += [node] if wanted(node) else []
        pending += node.children
    return found


def test_the_call_sites_of_a_nest_look_up_each_parent_once():
    """tree-sitter finds a parent by walking down from the root: walking up
    from each call site of `chain_x(chain_x(...))`, 1,500 deep, made impact
    run for minutes. A file's walks up share its `parents`, so each parent
    is looked up once however many call sites walk past it."""
    depth = 300
    sf = SourceFile("calls.py", "def chain_x(a):\n    return " + "chain_x(" * depth + "1" + ")" * depth + "\n")
    looked_up = _counting_parents(sf)
    sites = _nodes_where(sf, lambda node: node.type == "call")
    for site in sites:
        assert not syntax.class_body_binds(sf.family, site, "a", sf.parents)
        assert len(list(syntax.ancestors(site, sf.parents))) >= 3
    assert len(sites) == depth
    assert len(looked_up) == len(set(looked_up)) < 3 * depth


def test_a_builder_chains_call_sites_share_their_walks_up_to_an_import(make_engine, monkeypatch):
    """`Builder().step(0).step(1)…`: each call site's walk up looking for an
    import statement looked every parent up from the root again, so a
    generated 3,000-long chain held impact for ~30 s of CPU. The walk shares
    the file's `parents` with the other walks: each parent is looked up once."""
    depth = 300
    text = "class Builder:\n    def step(self, n):\n        return self\n\n\ndef build():\n" \
           "    return Builder()" + "".join(f".step({n})" for n in range(depth)) + "\n"
    engine = make_engine({"b.py": text})
    walks: list[object] = []
    in_import = syntax.in_import

    def spied(family, node, parents=None):
        walks.append(parents)
        return in_import(family, node, parents)

    monkeypatch.setattr(syntax, "in_import", spied)
    result = analysis.analyze(engine, "Builder.step")
    assert sum(c.confirmed for c in result.callers) == depth
    assert len(walks) >= depth and all(isinstance(p, dict) and p for p in walks)
    sf = SourceFile("b.py", text)
    looked_up = _counting_parents(sf)
    sites = _nodes_where(sf, lambda node: node.type == "identifier" and node.text == b"step")
    assert all(syntax.in_import(sf.family, site, sf.parents) is None for site in sites)
    assert len(looked_up) == len(set(looked_up)) < 4 * depth  # a name, its access and its call a level


@pytest.mark.parametrize("shape", ["sum", "nest"])
def test_a_files_sites_find_their_parents_scopes_and_nodes_in_one_walk_down(shape):
    """Probe F2: `target(1)+target(1)+…` (a left-deep chain) and
    `target(target(…))`, N deep: each call site looked up its own name's,
    call's and operand's parents, and found its node, from the root (each
    lookup N steps in tree-sitter), and walked up to its function: impact
    took minutes (5,000 nested: 79 s). A file's walks fill its Parents in
    one pass down once it shows a nest; then sites find their parents,
    their enclosing function and their node in it, and the answers are
    tree-sitter's."""
    depth = 400
    body = "+".join(["target(1)"] * depth) if shape == "sum" else "target(" * depth + "1" + ")" * depth
    sf = SourceFile("b.py", "def user():\n    return " + body + "\n")
    from_root: list[object] = []

    class Counted(syntax.Parents):
        filling = False

        def fill(self):
            self.filling = True
            super().fill()
            self.filling = False

        def __setitem__(self, key, value):
            if not self.filling:
                from_root.append(key)
            super().__setitem__(key, value)

    root = sf.tree.root_node
    sf.parents = Counted(root)
    scopes = sf.family.functions | sf.family.comprehensions
    sites = sf.occurrences("target", range(len(sf.lines)))
    for row, start, end in sites:  # in document order, as the sweep reads them
        site = sf.node_at(row, start, end)
        assert site.id == root.named_descendant_for_point_range(
            (row, sf.byte_column(row, start)), (row, sf.byte_column(row, end))).id
        expression, receiver = syntax.member_parts(sf.family, site, sf.parents)
        assert receiver is None and syntax.variable_position(sf.family, site, sf.parents) is None
        assert syntax.use_kind(sf.family, expression, sf.parents) == "call"
        assert syntax.enclosing(site, scopes, sf.parents).type == "function_definition"
        assert syntax.parent_of(site, sf.parents).id == site.parent.id
    assert len(sites) == depth and sf.parents.filled
    # Without the one walk down: three or more lookups from the root a site.
    assert len(from_root) == len(set(from_root)) < depth


def test_a_cancelled_impact_stops_within_a_file_of_many_call_sites(make_engine, monkeypatch):
    """Cancellation was checked only between the sweep's files: an impact
    abandoned on one planted file of thousands of call sites ran on, and
    held the daemon past SIGTERM. Each occurrence resolved is a step too."""
    from ctxls.impact import callers as callers_module
    from ctxls.index.cancel import CancelToken, cancelling
    from ctxls.index.errors import RequestCancelled

    engine = make_engine({"calls.py": "def chain_x(a):\n    return a\n\n\n"
                                      + "".join(f"chain_x({n})\n" for n in range(50))})
    token, classified = CancelToken(), []
    classify = callers_module._classify

    def classify_then_cancel(*args):
        classified.append(args[2])
        token.cancel()  # the client gives up while the first occurrence is resolved
        return classify(*args)

    monkeypatch.setattr(callers_module, "_classify", classify_then_cancel)
    with cancelling(token), pytest.raises(RequestCancelled):
        analysis.analyze(engine, "chain_x")
    assert len(classified) == 1


def test_a_call_under_an_alias_is_a_callee_as_it_is_a_caller(make_engine):
    """`h()` of `from m import helper as h`, `pkg.public_helper()` of a
    package's `helper as public_helper`, `new S()` of `import { Store as S }`
    are callers of helper and Store; they were no callee of the function
    making them (the name looked up was the one written), so outgoing and
    incoming calls disagreed."""
    engine = make_engine({
        "pkg/__init__.py": "from .core import helper as public_helper\n",
        "pkg/core.py": "def helper(x):\n    return x\n",
        "app.py": ("import pkg\nfrom pkg.core import helper as h\n\n\n"
                   "def main():\n    h(1)\n    pkg.public_helper(2)\n"),  # lines 5, 6
        "src/store.ts": "export class Store {\n  put(): void {}\n}\n",
        "src/app.ts": "import { Store as S } from './store';\n\nexport function go() {\n  new S().put();\n}\n",
    })
    python = analysis.analyze(engine, "main")
    assert [(c.symbol, [s.start_line for s in c.call_sites]) for c in python.callees] == [("helper", [5, 6])]
    assert {(c.path, c.span.start_line) for c in analysis.analyze(engine, "helper").callers} == {
        ("app.py", 5), ("app.py", 6)}
    typescript = analysis.analyze(engine, "go")
    assert [c.symbol for c in typescript.callees] == ["Store", "Store.put"]


def test_path_qualified_and_instantiated_calls_are_callees_and_calls(make_engine):
    """Rust's `util::parse_num()`, `Square::new()`, `Self::check()` and C++'s
    `geo::Point::origin()` were no callees (the name looked up was the whole
    path), and `clamp_to::<f64>(…)`, `fit<int>(…)`, Go's `NewBox[int](…)`
    were `value` uses: a call's name is its path's last segment, without
    type arguments."""
    engine = make_engine({
        "Cargo.toml": "[package]\nname = \"m\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
        "src/lib.rs": ("pub mod util;\npub struct Square { pub side: f64 }\nimpl Square {\n"
                       "    pub fn new(side: f64) -> Self { Self::check(side); Square { side } }\n"
                       "    fn check(side: f64) { assert!(side >= 0.0); }\n}\n"
                       "pub fn make() -> Square {\n    let n = util::parse_num(\"2\");\n"  # line 7
                       "    let c = util::clamp_to::<f64>(n);\n    Square::new(c)\n}\n"),
        "src/util.rs": ("pub fn parse_num(s: &str) -> f64 { s.parse().unwrap() }\n"
                        "pub fn clamp_to<T>(x: T) -> T { x }\n"),
        "geo.cpp": ("namespace geo {\nint helper() { return 1; }\nstruct Point {\n"
                    "    static Point origin() { return Point(); }\n};\n"
                    "template <typename T> T fit(T x) { return x; }\n}\n"
                    "int main() {\n    geo::Point o = geo::Point::origin();\n"  # line 8
                    "    return geo::fit<int>(geo::helper());\n}\n"),
        "go.mod": "module example.com/m\n\ngo 1.21\n",
        "box/box.go": ("package box\n\ntype Box[T any] struct{ v T }\n\n"
                       "func NewBox[T any](v T) *Box[T] { return &Box[T]{v} }\n"),
        "main.go": ("package main\n\nimport \"example.com/m/box\"\n\n"
                    "func main() {\n\tbox.NewBox[int](1)\n}\n"),  # line 5
    })
    assert [c.symbol for c in analysis.analyze(engine, "make").callees] == ["parse_num", "clamp_to",
                                                                           "Square.new"]
    assert [c.symbol for c in analysis.analyze(engine, "Square.new").callees] == ["Square.check"]
    assert {c.symbol for c in analysis.analyze(engine, "main", path="geo.cpp").callees} \
        == {"geo.Point.origin", "geo.fit", "geo.helper"}
    for name, site in (("clamp_to", ("src/lib.rs", 8, "call")), ("fit", ("geo.cpp", 9, "call"))):
        assert {(c.path, c.span.start_line, c.kind) for c in analysis.analyze(engine, name).callers} == {site}
    assert {(c.path, c.span.start_line, c.kind) for c in analysis.analyze(engine, "NewBox").callers} \
        == {("main.go", 5, "call")}


def test_a_library_call_is_no_callee_or_caller_of_the_method_it_sits_in(make_engine):
    """In the name-only languages `self.items.push(v)` in `Stack.push`,
    `data.put(k, v)` in `Repo.put`, `Vec::new()` in `Stack::new` and
    `System.Math.Round(x)` in `Price.Round` made each method its own callee
    and caller. A call on another receiver is not the method it is in, and
    a path whose last segment names nothing of the index is a library's;
    the same calls through the project's own receivers still count."""
    engine = make_engine({
        "Cargo.toml": "[package]\nname = \"m\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
        "src/lib.rs": ("pub struct Stack<T> { items: Vec<T> }\nimpl<T> Stack<T> {\n"
                       "    pub fn new() -> Self { Stack { items: Vec::new() } }\n"
                       "    pub fn push(&mut self, v: T) {\n        self.items.push(v);\n    }\n"
                       "    pub fn push_twice(&mut self, v: T) where T: Clone {\n"
                       "        self.push(v.clone());\n        self.push(v);\n    }\n}\n"
                       "pub fn build() -> Stack<i32> {\n    let mut s = Stack::new();\n    s.push(1);\n    s\n}\n"),
        "com/shop/Repo.java": ("package com.shop;\nimport java.util.HashMap;\nimport java.util.Map;\n"
                               "public class Repo {\n    private final Map<String, Integer> data = new HashMap<>();\n"
                               "    public void put(String k, int v) {\n        data.put(k, v);\n    }\n}\n"),
        "Shop/Price.cs": ("namespace Shop {\n    public class Price {\n"
                          "        public static double Round(double x) {\n"
                          "            return System.Math.Round(x, 2);\n        }\n"
                          "        public static double Twice(double x) {\n"
                          "            return Price.Round(Math.Round(x));\n        }\n    }\n}\n"),
    })
    push = analysis.analyze(engine, "Stack.push")
    assert push.callees == []
    assert {(c.path, c.span.start_line, c.symbol) for c in push.callers} == {
        ("src/lib.rs", 7, "Stack.push_twice"), ("src/lib.rs", 8, "Stack.push_twice"), ("src/lib.rs", 13, "build")}
    new = analysis.analyze(engine, "Stack.new")
    assert new.callees == [] and {(c.path, c.span.start_line) for c in new.callers} == {("src/lib.rs", 12)}
    assert analysis.analyze(engine, "Repo.put").callees == []
    rounding = analysis.analyze(engine, "Price.Round")
    assert rounding.callees == []
    assert {(c.path, c.span.start_line) for c in rounding.callers} == {("Shop/Price.cs", 6)}


def test_a_ruby_method_called_without_parentheses_is_a_callee_and_a_call(make_engine):
    """Ruby's `log_change` alone on a line calls the method, but only call
    nodes were read: `add` had no callees and the caller's kind was
    `value`. A bare name is a call unless its scope bound it before (a
    parameter, an assignment): then it is the local."""
    engine = make_engine({
        "lib/cart.rb": ("class Cart\n  def add(price)\n    log_change\n    recalculate\n"
                        "    total = price\n    total\n  end\n\n"  # line 5: the local, not the method
                        "  def again(log_change)\n    log_change\n  end\n\n"  # line 9: the parameter
                        "  private\n\n  def log_change\n    puts \"changed\"\n  end\n\n"
                        "  def recalculate\n    @sum = 1\n  end\n\n  def total\n    @sum\n  end\nend\n"),
    })
    add = analysis.analyze(engine, "Cart.add")
    assert [(c.symbol, [s.start_line for s in c.call_sites]) for c in add.callees] == [
        ("Cart.log_change", [2]), ("Cart.recalculate", [3])]
    assert {(c.span.start_line, c.kind) for c in analysis.analyze(engine, "Cart.log_change").callers} == {(2, "call")}
    assert analysis.analyze(engine, "Cart.total").callers == []


def test_a_local_function_shadows_the_files_function_of_that_name(make_engine):
    """Kotlin's `fun round2` in a function body and C#'s local function
    `Round` (declared before or after its call) shadow the file's: the call
    was a confirmed caller of the file's function and its callee."""
    engine = make_engine({
        "src/shop/Pricing.kt": ("package shop\n\nfun round2(x: Double): Double = x\n\n"
                                "fun total(xs: List<Double>): Double {\n"
                                "    fun round2(x: Double): Double = Math.floor(x)\n"
                                "    return round2(xs.sum())\n}\n\n"  # line 6: the local one
                                "fun net(x: Double): Double = round2(x)\n"),  # line 9: the file's
        "Shop/Cart.cs": ("namespace Shop {\n    public class Cart {\n"
                         "        public double Total(double sum) {\n            return Round(sum);\n"  # line 3
                         "            double Round(double x) => x - 1;\n        }\n"
                         "        public double Net(double sum) { return Round(sum); }\n"  # line 6
                         "        public static double Round(double x) { return x; }\n    }\n}\n"),
    })
    assert callers(analysis.analyze(engine, "shop.round2")) == {("src/shop/Pricing.kt", 9, "net", True)}
    assert analysis.analyze(engine, "total").callees == []
    assert {(c.span.start_line, c.confirmed) for c in analysis.analyze(engine, "Cart.Round").callers} == {(6, True)}
    assert analysis.analyze(engine, "Cart.Total").callees == []


def test_a_kotlin_bare_call_in_a_scope_functions_lambda_is_unconfirmed(make_engine):
    """`with(ledger) { save() }` and `ledger.apply { save() }` in `Cart`
    may call the ledger's `save` (the lambda's implicit receiver): they
    were confirmed callers of `Cart.save`. `let`'s lambda and a bare
    `run { … }` have no receiver: still confirmed."""
    engine = make_engine({
        "src/shop/Cart.kt": ("package shop\n\nclass Cart {\n    fun save() {\n        println(\"cart\")\n    }\n\n"
                             "    fun checkout(ledger: Ledger) {\n"
                             "        with(ledger) {\n            save()\n        }\n"  # line 9
                             "        ledger.apply {\n            save()\n        }\n"  # line 12
                             "        ledger.let {\n            save()\n        }\n"  # line 15
                             "        run {\n            save()\n        }\n        save()\n    }\n}\n"),  # 18, 20
        "src/shop/Ledger.kt": ("package shop\n\nclass Ledger {\n"
                               "    fun save() {\n        println(\"ledger\")\n    }\n}\n"),
    })
    assert {(c.span.start_line, c.confirmed) for c in analysis.analyze(engine, "Cart.save").callers} == {
        (9, False), (12, False), (15, True), (18, True), (20, True)}


def test_a_library_types_path_is_no_caller_and_a_crates_own_path_still_is(make_engine):
    """`Vec::new()` and `String::new()` anywhere were unconfirmed callers of
    the project's `Stack::new`: a path ending in a type the index does not
    define is a library's. A lowercase path may be the project's own crate
    (`m::parse()` in an integration test): it still counts."""
    engine = make_engine({
        "Cargo.toml": "[package]\nname = \"m\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
        "src/lib.rs": ("pub struct Stack { items: Vec<i32> }\nimpl Stack {\n"
                       "    pub fn new() -> Self { Stack { items: Vec::new() } }\n}\n"
                       "pub fn parse(s: &str) -> String {\n    let out = String::new();\n    out\n}\n"
                       "pub fn make() -> Stack {\n    Stack::new()\n}\n"),  # line 9
        "tests/it.rs": "#[test]\nfn parses() {\n    m::parse(\"x\");\n}\n",  # line 2
    })
    assert callers(analysis.analyze(engine, "Stack.new")) == {("src/lib.rs", 9, "make", False)}
    assert {(c.path, c.span.start_line) for c in analysis.analyze(engine, "parse").callers} == {("tests/it.rs", 2)}


def test_a_targets_own_name_is_no_mention_while_another_definitions_name_is(make_engine):
    """Every impact counted the target's own `def` line as a mention of kind
    `definition`, which the text calls "other definitions' names": an agent
    was told of another definition of the name where there was none."""
    from ctxls.daemon.formatting import Style, impact_lines
    from ctxls.daemon.impact_handlers import impact_answer

    engine = make_engine({
        "pkg/core.py": "def lonely_function(x):\n    return x\n",
        "pkg/other.py": "class Other:\n    def lonely_function(self):\n        return 1\n"})
    alone = impact_answer(analysis.analyze(engine, "lonely_function", "pkg/core.py"), engine)
    assert [d["path"] for d in alone["definitions"]] == ["pkg/core.py"]
    # Other.lonely_function is another definition of the name: that one is a mention.
    assert alone["mentionKinds"] == {"definition": 1}
    assert (alone["mentions"], alone["refCount"]) == (1, 1)
    both = impact_answer(analysis.analyze(engine, "lonely_function"), engine)
    assert both["mentionKinds"] == {} and both["mentions"] == 0
    text = "\n".join(impact_lines(both, 10, Style(False)))
    assert "0 other mentions" in text and "other definitions' names" not in text


def test_the_impact_headline_calls_no_unchecked_line_a_non_call(make_engine):
    """Past the file limits, lines holding the name are left unchecked: they
    may well be calls (here every one is), yet the headline counted them in
    "N other mentions (not calls)"."""
    from ctxls.daemon.formatting import Style, impact_lines
    from ctxls.daemon.impact_handlers import impact_answer

    files = {"src/core.py": "def process_item(x):\n    return x\n"}
    files |= {f"src/m{n}.py": f"def use_{n}(v):\n    return process_item(v)\n" for n in range(6)}
    engine = make_engine(files)
    found = analysis.analyze(engine, "process_item", limits=Limits(distant_files=2))
    answer = impact_answer(found, engine)
    unchecked = answer["mentionKinds"]["unchecked"]
    assert unchecked > 0 and answer["mentions"] == unchecked  # only unchecked lines besides the calls
    headline = impact_lines(answer, 10, Style(False))[0]
    assert "0 other mentions (not calls)" in headline
    assert f"{unchecked} line{'s' if unchecked > 1 else ''} left unchecked (calls or not)" in headline
