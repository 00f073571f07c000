"""bench/projects.md is the one list of every project a benchmark set or a
training run uses (so an outside measurement can leave them out): every
project the bench modules' tables name must be in its table with the same
version, and every row must carry a known role. A corpus added to a bench
table, a new table of projects, or a literal ``CodeCorpus(...)`` /
``Project(...)`` / ``corpus_path(NAME, VERSION)`` anywhere under bench/
without a row in projects.md fails here."""

from __future__ import annotations

import ast
import importlib.util
import json
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "bench"
PROJECTS_MD = BENCH / "projects.md"
sys.path.insert(0, str(BENCH))  # the bench modules import each other by plain name

ROLES = {"train", "dev", "test", "held-out test", "speed only", "retired", "retired (public benchmark)"}
PUBLIC = "retired (public benchmark)"
# codesearch_corpora's split -> the role its row must have.
SPLIT_ROLE = {"dev": "dev", "test": "test", "held-out": "held-out test", "train": "train"}
COLUMNS = ["project", "version or commit", "source", "role", "set(s) that use it"]

# Module-level tables of projects in bench/ that this test reads (module, name).
# A new one (a name ending in CORPORA, CORPUS, PROJECTS or REPOS holding a
# string or a collection) must be listed in projects.md and checked below.
CHECKED_TABLES = {
    ("corpora", "CORPORA"), ("corpora", "QUALITY_CORPORA"), ("codesearch_corpora", "CODE_CORPORA"),
    ("codesearch_corpora", "HELD_OUT_CORPORA"), ("codesearch_corpora", "PATHCLASS_CORPORA"),
    ("codesearch_files", "PROJECTS"),
    ("impact", "QUALITY_CORPORA"), ("impact", "TS_CORPORA"), ("semantic", "TEXT_CORPORA"),
    ("semantic", "PERF_CORPUS"), ("assemble", "CORPORA"), ("locate", "ALLOWED_REPOS"),
    ("locate", "RELEASE_PROJECTS"), ("codesearch_lang", "PROJECTS"),
    ("locate_commits", "PROJECTS"),
}
_TABLE_NAME = re.compile(r"(CORPORA|CORPUS|PROJECTS|REPOS)$")


def bench_module(name: str):
    """bench/NAME.py, loaded under a name of its own: bench/ is not a package,
    and some of its module names (impact, editors) are also top-level folders
    of the ctxls checkout."""
    key = f"_projects_list_bench_{name}"
    if key not in sys.modules:
        spec = importlib.util.spec_from_file_location(key, BENCH / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[key] = module  # dataclasses look their module up while the class is built
        try:
            spec.loader.exec_module(module)
        except BaseException:
            del sys.modules[key]
            raise
    return sys.modules[key]


def parse_table(text: str) -> list[dict[str, str]]:
    """The rows of the table whose header is COLUMNS, as column -> cell (backticks dropped
    from project and version)."""
    lines = text.splitlines()
    header = next((i for i, line in enumerate(lines)
                   if [c.strip() for c in line.strip().strip("|").split("|")] == COLUMNS), None)
    assert header is not None, f"no table with columns {' | '.join(COLUMNS)} in {PROJECTS_MD}"
    rows = []
    for line in lines[header + 2:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        assert len(cells) == len(COLUMNS), f"row with {len(cells)} cells: {line}"
        row = dict(zip(COLUMNS, cells))
        row["project"] = row["project"].strip("`")
        row["version or commit"] = row["version or commit"].strip("`")
        rows.append(row)
    return rows


def required_projects() -> list[tuple[str, str | None, str | None, str]]:
    """(project, version or None if any, role or None if any, where) of every
    project the bench tables name."""
    corpora = bench_module("corpora")
    codesearch_corpora = bench_module("codesearch_corpora")
    files = bench_module("codesearch_files")
    embed_train = bench_module("embed_train")
    impact = bench_module("impact")
    semantic = bench_module("semantic")
    assemble = bench_module("assemble")
    editors = bench_module("editors")
    locate = bench_module("locate")
    languages = bench_module("codesearch_lang")
    live = bench_module("live")
    locate_commits = bench_module("locate_commits")

    need = []
    need.append(("django", live.DJANGO, "speed only", "live.DJANGO"))
    for project in languages.PROJECTS:
        need.append((project.name, project.commit, SPLIT_ROLE[project.split], "codesearch_lang.PROJECTS"))
    for name, version in corpora.CORPORA.items():
        need.append((name, version, None, "corpora.CORPORA"))
    for name in corpora.QUALITY_CORPORA:
        need.append((name, corpora.CORPORA[name], "dev", "corpora.QUALITY_CORPORA"))
    for corpus in codesearch_corpora.CODE_CORPORA:
        need.append((corpus.name, corpus.version, SPLIT_ROLE[corpus.split], "codesearch_corpora.CODE_CORPORA"))
    for corpus in codesearch_corpora.HELD_OUT_CORPORA:
        need.append((corpus.name, corpus.version, SPLIT_ROLE[corpus.split],
                     "codesearch_corpora.HELD_OUT_CORPORA"))
    for corpus in codesearch_corpora.PATHCLASS_CORPORA:
        need.append((corpus.name, corpus.version, SPLIT_ROLE[corpus.split],
                     "codesearch_corpora.PATHCLASS_CORPORA"))
    for corpus in embed_train._corpora():
        need.append((corpus.name, corpus.version, "train", "embed_train._corpora()"))
    for project in files.PROJECTS:
        # A hand-written project's tree is the corpus of the same name (its role is the corpus's);
        # the others carry the public benchmark's annotations: retired.
        role = None if project.hand_written else PUBLIC
        need.append((project.name, project.revision, role, "codesearch_files.PROJECTS"))
    for name, version in impact.QUALITY_CORPORA.items():
        need.append((name, version or corpora.CORPORA[name], None, "impact.QUALITY_CORPORA"))
    for name in impact.TS_CORPORA:
        need.append((name, codesearch_corpora.corpus_by_name(name).version, None, "impact.TS_CORPORA"))
    for name in (*semantic.TEXT_CORPORA, semantic.PERF_CORPUS, *assemble.CORPORA, *editors.FILES):
        need.append((name, corpora.CORPORA[name], None, "semantic / assemble / editors (corpora.CORPORA)"))
    # The localisation set: SWE-bench Lite tasks, one row per repository, answered
    # at many commits or releases; the one public set the rule keeps (as dev).
    for repo in locate.ALLOWED_REPOS:
        need.append((repo, None, "dev", "locate.ALLOWED_REPOS"))
    assert set(locate.RELEASE_PROJECTS) <= set(locate.ALLOWED_REPOS)
    # Locate's fix-commit set: each project wholly in one split, at the newest commit read.
    for repo in locate_commits.PROJECTS:
        need.append((repo.name, repo.head, locate_commits.split_of(repo.name), "locate_commits.PROJECTS"))
    return need


def literal_uses() -> list[tuple[str, str, str]]:
    """(project, version, where) of every literal CodeCorpus(...), Project(...)
    and corpus_path(NAME, VERSION) call in bench/*.py, wherever it is."""
    found = []
    for path in sorted(BENCH.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
                continue
            at = {"CodeCorpus": (0, 4), "Project": (0, 3), "corpus_path": (0, 1)}.get(node.func.id)
            if at is None or len(node.args) <= max(at):
                continue
            name, version = (node.args[i] for i in at)
            if all(isinstance(a, ast.Constant) and isinstance(a.value, str) for a in (name, version)):
                found.append((name.value, version.value, f"{path.name}:{node.lineno}"))
    return found


def missing(rows: list[dict[str, str]], need) -> list[str]:
    """What ``need`` asks that ``rows`` lack: a project, its version or its role."""
    problems = []
    for name, version, role, where in need:
        same = [r for r in rows if r["project"] == name]
        if not same:
            problems.append(f"{name} ({where}) is not in bench/projects.md")
            continue
        if version is not None:
            same = [r for r in same if r["version or commit"] == version]
            if not same:
                problems.append(f"{name} {version} ({where}) is listed only with another version")
                continue
        if role is not None and not any(r["role"] == role for r in same):
            problems.append(f"{name} {version or ''} ({where}) should have role {role!r}")
    return problems


@pytest.fixture(scope="module")
def rows() -> list[dict[str, str]]:
    return parse_table(PROJECTS_MD.read_text(encoding="utf-8"))


def test_every_row_is_well_formed(rows):
    assert rows
    for row in rows:
        assert row["role"] in ROLES, f"{row['project']}: role {row['role']!r} not in {sorted(ROLES)}"
        assert row["project"] and row["version or commit"] and row["source"] and row["set(s) that use it"]
    keys = [(r["project"], r["version or commit"]) for r in rows]
    assert len(keys) == len(set(keys)), "a project and version listed twice"


def test_every_bench_project_is_listed_with_its_version_and_role(rows):
    assert missing(rows, required_projects()) == []


def test_every_literal_corpus_in_bench_is_listed(rows):
    assert missing(rows, [(n, v, None, w) for n, v, w in literal_uses()]) == []


def test_no_new_project_table_goes_unchecked():
    found = set()
    for path in sorted(BENCH.glob("*.py")):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.Assign):
                targets, value = node.targets, node.value
            elif isinstance(node, ast.AnnAssign) and node.value is not None:
                targets, value = [node.target], node.value
            else:
                continue
            table = (isinstance(value, (ast.Dict, ast.List, ast.Tuple, ast.Set))
                     or isinstance(value, ast.Constant) and isinstance(value.value, str))
            for target in targets:
                if isinstance(target, ast.Name) and _TABLE_NAME.search(target.id) and table:
                    found.add((path.stem, target.id))
    assert found - CHECKED_TABLES == set(), (
        "a new table of projects in bench/: list its projects in bench/projects.md and read it "
        "in required_projects()")


def test_the_public_benchmark_projects_are_retired(rows):
    """The files set's five projects annotated by a public benchmark (the
    localisation set's four repositories are the rule's one exception)."""
    files = bench_module("codesearch_files")
    public = {p.name for p in files.PROJECTS if not p.hand_written}
    assert public == {"chi", "tokio", "commons-lang", "jackson-databind", "vitest"}
    retired = {r["project"] for r in rows if r["role"] == PUBLIC}
    assert public <= retired
    assert not set(bench_module("locate").ALLOWED_REPOS) & retired


def test_no_training_project_is_in_an_evaluation_set(rows):
    """embed_train.py's promise: no training corpus is a dev, test or held-out project."""
    train = {r["project"] for r in rows if r["role"] == "train"}
    evaluated = {r["project"] for r in rows if r["role"] in ("dev", "test", "held-out test")}
    assert train & evaluated == set()


def reserved_projects() -> set[str]:
    """The projects an issue reserves for independent evaluation (the
    `Reserved:` line of bench/projects.md)."""
    line = next(line for line in PROJECTS_MD.read_text().splitlines()
                if line.strip().startswith("Reserved:"))
    return {name.strip() for name in line.split(":", 1)[1].split(",")}


def test_no_reserved_project_is_in_a_set_or_a_training_run(rows):
    """Issue 11's reserved projects are measured independently: none may be a
    dev, test, held-out or training project."""
    reserved = reserved_projects()
    assert {"model2vec", "fastapi", "libuv"} <= reserved
    # A GitHub row is owner/name: a reserved name as either part is that
    # project's (fastapi/typer comes from the fastapi organisation).
    used = {part for r in rows if r["role"] in ("train", "dev", "test", "held-out test")
            for part in r["project"].lower().split("/")}
    assert used & {name.lower() for name in reserved} == set()
    # Nor as part of a name (django-rest-framework, nginx): such a project went too.
    assert not [part for part in used for name in reserved if name.lower() in part]


def test_no_shipped_model_was_fitted_on_a_reserved_project():
    """A fitted model that ships (locate's scorer, recall's calibration) names
    the projects it was fitted and chosen on; none may be reserved, so a
    project reserved later forces a refit (redis: its go-redis client was
    in locate's train split)."""
    reserved = {name.lower() for name in reserved_projects()}
    models = ROOT / "index" / "models"
    locate = json.loads((models / "locate-scorer.json").read_text())["training"]["projects"]
    calibration = json.loads((models / "recall-calibration.json").read_text())["training"]["corpora"]
    used = [name for names in locate.values() for name in names] + calibration
    assert len(used) > 100 and calibration
    assert not [name for name in used for part in name.lower().split("/")
                for word in reserved if word in part]


def test_a_missing_row_is_reported(rows):
    """The check itself: drop a row, or change its version, and it is named."""
    need = [("rayon", "1.6.1", "test", "x")]
    assert missing(rows, need) == []
    assert missing([r for r in rows if r["project"] != "rayon"], need) == [
        "rayon (x) is not in bench/projects.md"]
    changed = [dict(r, **{"version or commit": "9.9"}) if r["project"] == "rayon" else r for r in rows]
    assert missing(changed, need) == ["rayon 1.6.1 (x) is listed only with another version"]
