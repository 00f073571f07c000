"""Locate's fix-commit set (bench/locate_commits.py): the miner keeps exactly
the commits that describe a fix in prose, with the source files they modified
as gold; the split is by project; the feature dump answers a task on its
parent commit with every gold file flagged among the candidates."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from ctxls.index.embeddings import STATIC_MODEL_NAME
from ctxls.index.engine import Engine, EngineOptions

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))  # the bench modules import each other by plain name

import locate_commits  # noqa: E402
from locate_commits import (Repo, add_semantic, clean_message, dump, gold_files, mine, reproduction,  # noqa: E402
                            semantic_path, split_of, with_tests)

from conftest import commit_files, git  # noqa: E402

FIX_MESSAGE = """Fix crash in read_config when the parser reads an empty config file (#4812)

The reader returned None for an empty file and the caller indexed it.
Return an empty mapping instead.

Fixes #4811
Signed-off-by: Ada Lovelace <ada@example.com>
Co-authored-by: Charles Babbage <cb@example.com>
"""


def new_repo(repo: Path) -> Path:
    """An empty repository at ``repo`` on branch main (conftest's ``git`` commits as the tests' identity)."""
    repo.mkdir(parents=True, exist_ok=True)
    git(repo, "init", "-q", "-b", "main")
    return repo


@pytest.fixture(scope="module")
def history(tmp_path_factory) -> dict:
    """A project whose history holds one fix, a test-only fix, a merge and a
    formatting commit."""
    repo = tmp_path_factory.mktemp("project")
    new_repo(repo)
    parser = "def read_config(path):\n    text = open(path).read()\n    return parse(text)\n"
    base = commit_files(repo, "Initial import of the configuration reader", {
        "shop/config_reader.py": parser,
        "shop/cart.py": "def total(items):\n    return sum(i.price for i in items)\n",
        "tests/test_config_reader.py": "def test_read():\n    assert True\n",
        "docs/index.md": "# Shop\n"})
    fix = commit_files(repo, FIX_MESSAGE, {
        "shop/config_reader.py": parser.replace("return parse(text)",
                                                "return parse(text) if text else {}"),
        "tests/test_config_reader.py": "def test_read_empty():\n    assert True\n"})
    commit_files(repo, "Fix the flaky test of the reader when the suite runs in parallel", {
        "tests/test_config_reader.py": "def test_read_empty():\n    assert 1\n"})
    git(repo, "checkout", "-q", "-b", "feature", fix)
    commit_files(repo, "Fix the cart total when an item has no price at all", {
        "shop/cart.py": "def total(items):\n    return sum(i.price or 0 for i in items)\n"})
    git(repo, "checkout", "-q", "main")
    git(repo, "merge", "-q", "--no-ff", "-m", "Merge branch feature: fix the cart total when prices are missing",
        "feature")
    commit_files(repo, "Reformat the code with the new line length so that lines are shorter", {
        "shop/cart.py": "def total(items):\n    return sum(\n        i.price or 0 for i in items)\n",
        "shop/config_reader.py": parser.replace("return parse(text)",
                                                "return parse(text) if text else {}") + "\n"})
    head = git(repo, "rev-parse", "HEAD")
    return {"repo": repo, "git_dir": repo / ".git", "base": base, "fix": fix, "head": head}


def test_the_miner_keeps_exactly_the_fixes_with_their_source_files(history):
    project = Repo("example/shop", "python", history["head"])
    tasks = mine(project, history["git_dir"])
    by_commit = {t["commit"]: t for t in tasks}
    # The fix on main and the fix on the merged branch; not the test-only fix
    # (no source file), the merge, or the formatting commit.
    assert history["fix"] in by_commit
    cart_fix = git(history["repo"], "rev-parse", "feature")
    assert set(by_commit) == {history["fix"], cart_fix}
    task = by_commit[history["fix"]]
    assert task["gold"] == ["shop/config_reader.py"]
    assert task["parent"] == history["base"]
    assert task["kind"] == "fix-description"
    assert task["text"].startswith("Fix crash in read_config when the parser reads an empty config file")
    for gone in ("#4812", "#4811", "Signed-off-by", "Co-authored-by", "Ada", "Charles"):
        assert gone not in task["text"]
    assert by_commit[cart_fix]["gold"] == ["shop/cart.py"]


def test_an_issue_like_task_is_the_subject_and_the_test_code_the_fix_adds(tmp_path):
    """--with-tests: the first block of test code a fix adds (3+ non-blank
    lines: a lone import or assertion tweak is no reproduction) after the
    fix's subject; a fix that adds no such block gives no task."""
    repo = tmp_path / "project"
    new_repo(repo)
    source = "def parse(text):\n    return text.split(',')\n"
    old_test = "import pytest\n\n\ndef test_parse():\n    assert parse('a') == ['a']\n"
    base = commit_files(repo, "Initial import", {"csvish/parse.py": source, "tests/test_parse.py": old_test})
    fixed = commit_files(repo, "Fix parse dropping the empty last field\n\nThe split kept it; strip did not.", {
        "csvish/parse.py": source.replace("text.split", "text.rstrip('\\n').split"),
        "tests/test_parse.py": old_test.replace("import pytest", "import pytest\nimport csvish") +
        "\n\ndef test_parse_keeps_the_empty_last_field():\n    fields = parse('a,b,')\n"
        "    assert fields == ['a', 'b', '']\n"})
    tweak = commit_files(repo, "Fix parse of a lone comma in the middle of the text", {
        "csvish/parse.py": source.replace("','", "', '"),
        "tests/test_parse.py": old_test.replace("== ['a']", "== ['a'] and True")})
    tasks = [{"project": "example/csvish", "commit": fixed, "parent": base, "kind": "fix-description",
              "text": "Fix parse dropping the empty last field\n\nThe split kept it; strip did not.",
              "gold": ["csvish/parse.py"], "split": "train"},
             {"project": "example/csvish", "commit": tweak, "parent": fixed, "kind": "fix-description",
              "text": "Fix parse of a lone comma in the middle of the text", "gold": ["csvish/parse.py"],
              "split": "train"}]
    git_dir = repo / ".git"
    assert reproduction(git_dir, tasks[0]) == ("def test_parse_keeps_the_empty_last_field():\n"
                                               "    fields = parse('a,b,')\n    assert fields == ['a', 'b', '']")
    assert reproduction(git_dir, tasks[1]) is None
    issue_like = with_tests(tasks, lambda project: git_dir)
    assert [t["commit"] for t in issue_like] == [fixed]
    assert issue_like[0]["kind"] == "fix-with-test" and issue_like[0]["gold"] == ["csvish/parse.py"]
    assert issue_like[0]["text"] == ("Fix parse dropping the empty last field\n\n"
                                     "def test_parse_keeps_the_empty_last_field():\n"
                                     "    fields = parse('a,b,')\n    assert fields == ['a', 'b', '']")


def test_the_split_is_by_project_never_by_task(history):
    tasks = mine(Repo("example/shop", "python", history["head"]), history["git_dir"])
    assert {t["split"] for t in tasks} == {split_of("example/shop")}
    splits = [split_of(f"owner/project-{i}") for i in range(1000)]
    shares = {s: splits.count(s) / len(splits) for s in ("train", "dev", "test")}
    assert 0.55 < shares["train"] < 0.65 and 0.15 < shares["dev"] < 0.25 and 0.15 < shares["test"] < 0.25
    # The committed set's projects each sit wholly in one split.
    committed = locate_commits.read_tasks()
    by_project: dict[str, set[str]] = {}
    for task in committed:
        by_project.setdefault(task["project"], set()).add(task["split"])
    assert all(splits == {split_of(p)} for p, splits in by_project.items())
    assert set(by_project) <= {r.name for r in locate_commits.PROJECTS}


def test_gold_files_drop_renames_additions_and_large_commits():
    assert gold_files([("M", "pkg/a.py"), ("M", "pkg/tests/test_a.py"), ("M", "README.md")]) == ["pkg/a.py"]
    assert gold_files([("M", "pkg/a.py"), ("A", "pkg/b.py")]) is None  # a new file no text can locate
    assert gold_files([("R100", "pkg/a.py")]) is None
    assert gold_files([("M", f"pkg/m{i}.py") for i in range(13)]) is None
    assert gold_files([("M", "tests/test_a.py"), ("M", "docs/conf.py")]) is None
    assert gold_files([("M", "vendor/lib/x.go"), ("M", "dist/app.min.js")]) is None


def test_a_dumped_task_is_relabelled_as_todays_classifier_reads_its_gold_files():
    row = {"gold": ["src/Core/Mapper.cs", "src/UnitTests/MapperTests.cs"],
           "candidates": [{"path": "src/Core/Mapper.cs", "gold": True},
                          {"path": "src/UnitTests/MapperTests.cs", "gold": True},
                          {"path": "src/Core/Other.cs", "gold": False}]}
    relabelled = locate_commits.relabelled(row)
    assert relabelled["gold"] == ["src/Core/Mapper.cs"]
    assert [c["gold"] for c in relabelled["candidates"]] == [True, False, False]
    assert locate_commits.relabelled({"gold": ["src/UnitTests/MapperTests.cs"], "candidates": []}) is None
    assert locate_commits.relabelled(relabelled) is relabelled  # nothing to change


def test_the_text_keeps_the_prose_only():
    text = clean_message("[Fix #12] Fix false positives in Foo when bar is empty (#45)\n\n"
                         "See https://github.com/o/r/issues/3\nAuthored by: someone\nChange-Id: I12ab\n")
    assert text == "Fix false positives in Foo when bar is empty"
    # A squashed branch: its repeated lines and the review tool's "Update <file>" (it names the gold).
    squashed = clean_message("Fix the cache key when a URL is overridden\n\n* Add an override\n"
                             "* Add an override\n* Update okhttp/src/main/kotlin/okhttp3/Request.kt\n"
                             "* Apply suggestions from code review\n")
    assert squashed == "Fix the cache key when a URL is overridden\n\n* Add an override"


def test_the_dump_answers_on_the_parent_commit(history, tmp_path):
    tasks = mine(Repo("example/shop", "python", history["head"]), history["git_dir"])
    assert dump("example/shop", tasks, history["git_dir"], tmp_path) == len(tasks)
    rows = [json.loads(line) for line in
            locate_commits.features_path("example/shop", tmp_path).read_text().splitlines()]
    row = next(r for r in rows if r["commit"] == history["fix"])
    assert row["parent"] == history["base"]
    assert row["gold"] == ["shop/config_reader.py"] and row["gold_not_indexed"] == []
    flagged = [c["path"] for c in row["candidates"] if c["gold"]]
    assert flagged == ["shop/config_reader.py"] and row["gold_no_evidence"] == []
    assert row["locate_top10"][0] == "shop/config_reader.py"
    assert all(isinstance(v, float) for c in row["candidates"] for v in c["signals"].values())
    # A second run resumes: nothing left to answer.
    assert dump("example/shop", tasks, history["git_dir"], tmp_path) == 0


def test_the_semantic_signal_beside_the_dump_is_the_products_at_the_parent_commit(history, tmp_path):
    tasks = mine(Repo("example/shop", "python", history["head"]), history["git_dir"])
    dump("example/shop", tasks, history["git_dir"], tmp_path / "data")
    features = locate_commits.features_path("example/shop", tmp_path / "data")
    assert add_semantic(features, STATIC_MODEL_NAME, history["git_dir"], tmp_path / "data") == len(tasks)
    assert add_semantic(features, STATIC_MODEL_NAME, history["git_dir"], tmp_path / "data") == 0  # resumes
    rows = {r["commit"]: r for r in map(json.loads, semantic_path(
        "example/shop", STATIC_MODEL_NAME, tmp_path / "data").read_text().splitlines())}
    written = rows[history["fix"]]["semantic"]
    # The dump itself stays embeddings-off.
    assert all("semantic" not in c["signals"] for line in features.read_text().splitlines()
               for c in json.loads(line)["candidates"])
    # The product, with the same model, on a checkout of the parent commit.
    tree = tmp_path / "tree"
    git(history["repo"], "worktree", "add", "-q", "--detach", str(tree), history["base"])
    engine = Engine(tree, EngineOptions(db_path=str(tmp_path / "index.db"), embeddings=True,
                                        embed_model=STATIC_MODEL_NAME))
    try:
        engine.cold_index()
        engine.embed_pending()
        fix_text = next(t["text"] for t in tasks if t["commit"] == history["fix"])
        product = {f.path: f.signals["semantic"] for f in engine.locate(fix_text, 10) if "semantic" in f.signals}
    finally:
        engine.close()
        git(history["repo"], "worktree", "remove", "--force", str(tree))
    assert product and product.keys() == written.keys()
    assert all(abs(product[p] - written[p]) < 1e-4 for p in product)
    assert max(written.values()) == 1.0


def test_no_project_of_the_set_is_in_another_set_or_reserved():
    """Every project is new to ctxls's sets: no other row of bench/projects.md
    names it (by its short name), it is not reserved, not of SWE-bench's family."""
    sys.path.insert(0, str(Path(__file__).parent))
    from test_projects_list import PROJECTS_MD, parse_table, reserved_projects

    ours = {r.name for r in locate_commits.PROJECTS}
    assert len(ours) >= 100
    others = {row["project"].split("/")[-1].lower() for row in parse_table(PROJECTS_MD.read_text())
              if row["project"] not in ours}
    forbidden = others | {n.lower() for n in reserved_projects()} | locate_commits.SWE_BENCH_FAMILY
    assert {name.split("/")[-1].lower() for name in ours} & forbidden == set()


def test_the_walk_checks_out_a_commit_whose_snapshot_lacks_a_file(tmp_path):
    """A fetched snapshot lacks files of 4 MiB and more: the tree gets every
    other file of the commit (and the snapshot's own HEAD does not move)."""
    from git_walk import attach_tree

    repo = tmp_path / "project"
    new_repo(repo)
    first = commit_files(repo, "Initial import", {"src/app.py": "x = 1\n", "tools/big.bin": "large\n"})
    second = commit_files(repo, "Fix the value of x when it is read twice", {"src/app.py": "x = 2\n"})
    big = git(repo, "rev-parse", f"{first}:tools/big.bin")
    (repo / ".git" / "objects" / big[:2] / big[2:]).unlink()  # what the snapshot lacks
    checkout = attach_tree(repo / ".git", tmp_path / "tree")
    checkout(first)
    assert (tmp_path / "tree" / "src" / "app.py").read_text() == "x = 1\n"
    assert not (tmp_path / "tree" / "tools" / "big.bin").exists()
    checkout(second)
    assert (tmp_path / "tree" / "src" / "app.py").read_text() == "x = 2\n"
    checkout(first)
    # The snapshot's HEAD is where it was: still its branch, at its newest commit.
    assert git(repo, "symbolic-ref", "HEAD") == "refs/heads/main"
    assert git(repo, "rev-parse", "HEAD") == second


def test_a_block_of_imports_is_no_reproduction(tmp_path):
    """--with-tests: a test file's new header (imports, usings, includes) shows
    no fault; the first block with three lines of code besides them does."""
    repo = tmp_path / "project"
    new_repo(repo)
    source = "def parse(text):\n    return text.split(',')\n"
    test = "def test_parse():\n    assert parse('a') == ['a']\n"
    base = commit_files(repo, "Initial import", {"csvish/parse.py": source, "tests/test_parse.py": test})
    header = "import os\nimport sys\nfrom csvish import parse\nimport pytest\n\n\n"
    imports_only = commit_files(repo, "Fix parse of spaces around commas in every field", {
        "csvish/parse.py": source.replace("','", "', '"), "tests/test_parse.py": header + test})
    with_code = commit_files(repo, "Fix parse dropping a quoted comma inside a field", {
        "csvish/parse.py": source.replace("split", "rsplit"),
        "tests/test_parse.py": header + test + "\n\ndef test_quoted():\n    fields = parse('\"a,b\"')\n"
        "    assert fields == ['\"a,b\"']\n"})
    task = {"project": "example/csvish", "kind": "fix-description", "gold": ["csvish/parse.py"], "split": "train"}
    git_dir = repo / ".git"
    assert reproduction(git_dir, dict(task, commit=imports_only, parent=base, text="Fix parse")) is None
    assert reproduction(git_dir, dict(task, commit=with_code, parent=imports_only, text="Fix parse")) == (
        "def test_quoted():\n    fields = parse('\"a,b\"')\n    assert fields == ['\"a,b\"']")


def test_compiled_output_that_says_so_is_never_gold_and_is_marked_among_the_candidates(tmp_path, monkeypatch):
    """A fix to CoffeeScript's `src/*.coffee` also commits the compiled
    `lib/*.js`, whose first line says "Generated by CoffeeScript": the
    miner counted the copy as gold (no task could score at Acc@1), and the
    dump must carry the store's mark, as the backfill for older dumps
    reads it from the snapshot."""
    repo = new_repo(tmp_path / "coffee")
    source = "parseHeader = (line) ->\n  [name, value] = line.split ':'\n  {name, value}\n"
    compiled = ("// Generated by CoffeeScript 1.8.0\n"
                "exports.parseHeader = function(line) {\n  return line.split(':');\n};\n")
    commit_files(repo, "Initial import of the header parser", {
        "src/headers.coffee": source, "lib/headers.js": compiled,
        "src/body.coffee": "readBody = (stream) ->\n  stream.read()\n"})
    fix = commit_files(repo, "Fix parseHeader crashing when a header value holds a colon", {
        "src/headers.coffee": source.replace("line.split ':'", "line.split ':', 2"),
        "lib/headers.js": compiled.replace("line.split(':')", "line.split(':', 2)")})
    tasks = mine(Repo("example/coffee", "javascript", git(repo, "rev-parse", "HEAD")), repo / ".git")
    assert [(t["commit"], t["gold"]) for t in tasks] == [(fix, ["src/headers.coffee"])]
    # The copy alone is no gold either way: a commit of generated files only is no task.
    assert gold_files([("M", "lib/headers.js")], {"lib/headers.js"}) is None

    data = tmp_path / "data"
    assert dump("example/coffee", tasks, repo / ".git", data) == 1
    features = locate_commits.features_path("example/coffee", data)
    dumped = {c["path"]: c["signals"].get("generated") for c in json.loads(features.read_text())["candidates"]}
    assert dumped.get("lib/headers.js") == 1.0 and dumped.get("src/headers.coffee") is None, dumped
    monkeypatch.setattr(locate_commits, "snapshot_dir", lambda name: repo / ".git")
    assert locate_commits.add_generated(features) == 1
    backfilled = {c["path"]: c["signals"].get("generated") for c in json.loads(features.read_text())["candidates"]}
    assert backfilled == dumped
