"""Locate quality and speed on real issues: SWE-bench Lite tasks of the
allowed repositories, with the gold files of each task's merged fix.

Tasks come from LocAgent's published outputs (the ``fetch``ed snapshot of
``gersteinlab/LocAgent``, ``evaluation/loc_output/locagent/claude_3-5/
loc_outputs.jsonl``): repository, base commit, problem statement and gold
patch; the gold files are the patch's ``diff --git`` headers. Only the
repositories in :data:`ALLOWED_REPOS` are read (a positive list; every other
task is skipped unread). The split is by a hash of the task id.

Per repository with a git snapshot (``fetch github:owner/name``, a bare git
dir under /work/.mirror), one working tree under ``bench/.cache/locate/trees``
moves from base commit to base commit in commit-time order and is re-indexed
incrementally each time (the re-index time is recorded). At each commit the
task's problem statement is answered by:

* locate's evidence (``Locator.evidence``), kept per file so the weights can be
  chosen afterwards without re-indexing;
* ``recall`` (lexical, code and doc kinds), files in hit order;
* plain BM25 (all column weights 1, no boost, every term of the text) over
  the chunks, best chunk per file.

Locate's evidence is also kept under the :data:`VARIANTS` of the engine's
defaults (how the text signals aggregate chunks per file). Results go to
``bench/.cache/locate/results-<repo>.jsonl`` (a re-run resumes).
``--evaluate`` then ranks every task's evidence with the shipped scorer
(index/locate_scorer.py; its weights are fitted by bench/train_locate_scorer.py
on mined fix commits, not here), picks the variant on the dev tasks, and
prints Acc@1/3/5/10 (every gold file in the top k) and MRR (of the first gold
file) on dev and test.

django, matplotlib and scikit-learn are reserved for independent evaluation:
their tasks are not in the set (answered until 2026-12-04; matplotlib's and
scikit-learn's release trees, sdists and answers were deleted). django's release tree
serves speed only: ``--latency`` times ``Engine.locate`` on it with the set's
issue texts (``--embeddings``: with the vectors ``--embed-candidates``
embedded for each text's best files by the lexical signals).

``--releases`` answers a project's tasks on PyPI release trees (for a
snapshot too large to fetch here), each task on the newest release its gold
patch applies to (:func:`choose_releases`), walked oldest release first on one
working tree re-indexed incrementally, like a snapshot's walk. No project of
the set needs it since scikit-learn, its one user, is reserved.

With ``--repo`` or ``--releases``, ``--embed-candidates`` embeds during the walk instead: at each
step, the chunks of the task's best files by the lexical signals that lack
a vector (a vector is keyed by the chunk's embedding text, so the unchanged
chunks keep theirs from commit to commit), for the tasks of ``--embed-splits``;
the other tasks are answered without vectors.

``--embed-model NAME`` embeds with another built-in model than the engine's
default (``EngineOptions.embed_model``): its results files and embedding
stores carry ``@NAME`` in their names, and ``--evaluate`` with it scores only
its results (without it, only the default model's).
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import itertools
import json
import re
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

from ctxls.index.embeddings import is_builtin_model
from ctxls.index.engine import Engine, EngineOptions
from ctxls.index.vocabulary import MAX_QUERY_CHARS
from ctxls.index.locate import Locator
from ctxls.index.locate_scorer import rank, shipped_scorer, text_terms
from ctxls.index.locate_signals import FileEvidence
from ctxls.index.ranking import RankingConfig, bm25_scores
from ctxls.index.tokenize import query_terms

from corpora import CACHE_DIR, corpus_path, make_own_repo, pypi_sdists
from git_walk import MIRROR, attach_tree, commit_times, git, reindexed, snapshot_dir

LOCATE_DIR = CACHE_DIR / "locate"
LOCAGENT_GIT = MIRROR / "gersteinlab+LocAgent" / "repo"
LOCAGENT_FILE = "evaluation/loc_output/locagent/claude_3-5/loc_outputs.jsonl"
# The only repositories whose tasks this benchmark reads.
# django/django's, matplotlib's and scikit-learn's tasks left the set on
# 2026-12-04: they are reserved for independent evaluation (django's tree
# serves --latency only).
ALLOWED_REPOS = ("sympy/sympy",)
PLAIN_BM25 = RankingConfig(symbol_weight=1.0, path_weight=1.0, body_weight=1.0, import_boost=0.0)
KS = (1, 3, 5, 10)
# Files kept per task and method (enough for Acc@10 and MRR over a long tail).
KEEP = 50
_DIFF_HEADER = re.compile(r"^diff --git a/(\S+) b/", re.M)


def split_of(task_id: str) -> str:
    return "dev" if int(hashlib.sha256(task_id.encode()).hexdigest()[:8], 16) % 2 == 0 else "test"


def load_tasks() -> list[dict]:
    """The allowed tasks (cached in bench/.cache/locate/tasks.json; a cache
    written before a repository left :data:`ALLOWED_REPOS` still holds its
    tasks, so the cache is filtered too)."""
    cached = LOCATE_DIR / "tasks.json"
    if cached.exists():
        return [task for task in json.loads(cached.read_text()) if task["repo"] in ALLOWED_REPOS]
    tasks = []
    for row in _locagent_rows():
        meta = row["meta_data"]
        tasks.append({"id": row["instance_id"], "repo": meta["repo"], "commit": meta["base_commit"],
                      "text": meta["problem_statement"],
                      "gold": sorted(set(_DIFF_HEADER.findall(meta["patch"]))),
                      "split": split_of(row["instance_id"])})
    LOCATE_DIR.mkdir(parents=True, exist_ok=True)
    cached.write_text(json.dumps(tasks))
    return tasks


def _locagent_rows():
    """LocAgent's published rows of the allowed repositories (no other row is kept)."""
    raw = git(LOCAGENT_GIT, "show", f"HEAD:{LOCAGENT_FILE}")
    for line in raw.splitlines():
        row = json.loads(line)
        if row["meta_data"]["repo"] in ALLOWED_REPOS:
            yield row


def _files_in_order(paths: list[str]) -> list[str]:
    return list(dict.fromkeys(paths))[:KEEP]


def evidence_json(files: dict[str, FileEvidence]) -> dict:
    return {path: {"s": ev.signals, "t": ev.test_or_doc} for path, ev in files.items()}


def model_suffix(embed_model: str | None) -> str:
    """What a non-default embedding model adds to the names of its results and
    stores ("" for the default): a store keeps one model's vectors (another's
    replace them all), and the two models' results must not be scored together."""
    return "" if embed_model is None else f"@{embed_model}"


def results_path(name: str, embed_model: str | None) -> Path:
    return LOCATE_DIR / f"results-{name}{model_suffix(embed_model)}.jsonl"


def results_files(embed_model: str | None) -> list[Path]:
    """The stored results of ``embed_model`` (None: the default model's), no other's."""
    def model_of(path: Path) -> str | None:
        _, at, model = path.stem.partition("@")
        return model if at else None

    return sorted(p for p in LOCATE_DIR.glob("results-*.jsonl") if model_of(p) == embed_model)


def walk_db(name: str, embeddings: bool, embed_model: str | None = None) -> Path:
    """The walk's store; with embeddings a directory of its own per model (the
    vector file sits beside the store under a fixed name). Without, no model's
    output is stored: one store serves every model."""
    if not embeddings:
        return LOCATE_DIR / f"{name}.db"
    return LOCATE_DIR / f"{name}-embed{model_suffix(embed_model)}" / "index.db"


def run_repo(repo: str, tasks: list[dict], limit: int | None, embed_pool: int | None = None,
             embed_splits: tuple[str, ...] = ("dev", "test"), embed_model: str | None = None) -> Path:
    """Walk the repository's tasks in commit order on its git snapshot (see :func:`walk`)."""
    name = repo.replace("/", "+")
    git_dir = snapshot_dir(repo)
    if not git_dir.is_dir():
        raise SystemExit(f"no snapshot of {repo} at {git_dir} (fetch github:{repo} first)")
    tree = LOCATE_DIR / "trees" / name
    move = attach_tree(git_dir, tree)

    def checkout(task: dict) -> None:
        move(task["commit"])

    def order(todo: list[dict]) -> list[dict]:
        times = commit_times(git_dir, (t["commit"] for t in todo))
        return sorted(todo, key=lambda t: times[t["commit"]])

    return walk(repo, name, repo, tree, tasks, order, checkout, limit, embed_pool, embed_splits,
                embed_model)


def walk(repo: str, name: str, label: str, tree: Path, tasks: list[dict], order, checkout,
         limit: int | None, embed_pool: int | None, embed_splits: tuple[str, ...],
         embed_model: str | None) -> Path:
    """Answer ``repo``'s tasks not yet in the results, in the ``order`` given,
    on one working tree that ``checkout(task)`` moves to each task's code and
    that is re-indexed incrementally each time; append one result line each.
    With ``embed_pool``, at each step the code chunks of the task's best
    ``embed_pool`` files by the lexical signals (those ``semantic`` re-ranks)
    get their vectors first, for the tasks of ``embed_splits``: a chunk's
    vector is keyed by its embedding text, so it carries to later steps
    while the chunk is unchanged."""
    results = results_path(name, embed_model)
    done = set()
    if results.exists():
        done = {json.loads(line)["id"] for line in results.read_text().splitlines()}
    todo = order([t for t in tasks if t["repo"] == repo and t["id"] not in done])
    if limit is not None:
        todo = todo[:limit]
    db = walk_db(name, embed_pool is not None, embed_model)
    db.parent.mkdir(parents=True, exist_ok=True)
    engine = Engine(tree, EngineOptions(db_path=str(db), embeddings=embed_pool is not None,
                                        embed_model=embed_model))
    locator = Locator()
    try:
        for task, stats, reindex_s in reindexed(engine, todo, checkout):
            embedded = {}
            with_vectors = embed_pool is not None and task["split"] in embed_splits
            if with_vectors:
                conn = engine.store.reader()
                pool = best_files(locator.evidence(conn, task["text"]), embed_pool, task["text"])
                started = time.perf_counter()
                count = embed_files(engine, conn, pool)
                embedded = {"embedded": count, "embed_s": round(time.perf_counter() - started, 1)}
            line = answer_task(engine, locator, task, label, use_vectors=with_vectors)
            line.update(reindex_s=round(reindex_s, 3),
                        changed=stats.added + stats.updated + stats.removed, **embedded)
            with results.open("a") as out:
                out.write(json.dumps(line) + "\n")
            print(f"{task['id']}: re-index {reindex_s:.1f}s ({line['changed']} files), "
                  + (f"embedded {count} chunks in {embedded['embed_s']}s, " if embedded else "")
                  + f"locate {line['locate_ms']:.0f} ms", flush=True)
    finally:
        if engine.semantic is not None and engine.semantic.ready:
            engine.semantic.save()
        engine.close()
    return results


# Projects whose snapshot is too large to fetch here, answered on PyPI
# release trees instead (repository -> its PyPI name), each task on the
# newest release its gold patch applies to: the code just before the fix, as
# near the base commit as releases come. Empty since scikit-learn is reserved.
RELEASE_PROJECTS: dict[str, str] = {}


def gold_patches(repos) -> dict[str, str]:
    """task id -> gold patch, for the tasks of ``repos`` (cached)."""
    cached = LOCATE_DIR / "patches.json"
    patches = json.loads(cached.read_text()) if cached.exists() else {}
    if not any(t["id"] in patches for t in load_tasks() if t["repo"] in repos):
        for row in _locagent_rows():
            if row["meta_data"]["repo"] in repos:
                patches[row["instance_id"]] = row["meta_data"]["patch"]
        LOCATE_DIR.mkdir(parents=True, exist_ok=True)
        cached.write_text(json.dumps(patches))
    return patches


# SWE-bench's tasks are from 2017 on: older releases are never the code before a fix.
RELEASES_SINCE = "2017-01-01"


@functools.cache  # one read of PyPI's index per project and run
def _final_releases(project: str) -> list[str]:
    """The project's final releases on PyPI with an sdist uploaded since
    RELEASES_SINCE, newest first."""
    from packaging.version import InvalidVersion, Version

    versions = []
    for text, (_, _, uploaded) in pypi_sdists(project).items():
        try:
            version = Version(text)
        except InvalidVersion:
            continue
        if not (version.is_prerelease or version.is_devrelease) and uploaded >= RELEASES_SINCE:
            versions.append((version, text))
    return [text for _, text in sorted(versions, reverse=True)]


@functools.cache  # the tree is walked for generated sources once per run
def release_tree(project: str, version: str) -> Path:
    """The release's unpacked sdist as a checkout has it: the sources Cython
    generates beside each ``.pyx`` (shipped in sdists, never committed) removed."""
    tree = corpus_path(project, version)
    for pyx in tree.rglob("*.pyx"):
        for generated in (pyx.with_suffix(".c"), pyx.with_suffix(".cpp")):
            generated.unlink(missing_ok=True)
    return tree


def _holds_gold(project: str, version: str, task: dict) -> bool:
    return all((release_tree(project, version) / g).is_file() for g in task["gold"])


def _applies(tree: Path, patch: Path, *options: str) -> bool:
    return subprocess.run(["git", "-C", str(tree), "apply", "--check", *options, str(patch)],
                          capture_output=True).returncode == 0


def _task_number(task_id: str) -> int:
    """The GitHub number in a SWE-bench id (``owner__repo-12345``): it grows with time."""
    return int(task_id.rsplit("-", 1)[1])


def _release_evidence(project: str, releases: list[str], task: dict, patch_text: str) -> dict:
    """Which releases the gold patch applies to: forward exactly ("forward"),
    forward with one line of context ("loose"), in reverse ("fixed")."""
    patch = LOCATE_DIR / "patch.diff"
    patch.write_text(patch_text)
    found = {"forward": [], "loose": [], "fixed": []}
    for version in releases:
        if not _holds_gold(project, version, task):
            continue
        tree = release_tree(project, version)
        if _applies(tree, patch):
            found["forward"].append(version)
        elif _applies(tree, patch, "-C1"):
            found["loose"].append(version)
        elif _applies(tree, patch, "--reverse") or _applies(tree, patch, "--reverse", "-C1"):
            found["fixed"].append(version)
    return found


def choose_releases(repo: str, tasks: list[dict]) -> dict[str, dict]:
    """task id -> {"version", "how"}: the release tree a task is answered on.

    The fix landed before the oldest release the gold patch applies to in
    reverse; the task's code is the newest release older than that one which
    the patch applies to exactly, else the newest older release holding the
    gold files (else that one, the fix already in). These
    placements are anchors. A patch one line of context places only within
    the anchors of the neighbouring task numbers (a loose match also hits code
    years later), and a task nothing places takes the release of the anchored
    task nearest in number (below first) whose tree holds its gold files."""
    from packaging.version import Version

    name = repo.replace("/", "+")
    cached = LOCATE_DIR / f"releases-{name}.json"
    evidence = json.loads(cached.read_text()) if cached.exists() else {}
    project = RELEASE_PROJECTS[repo]
    mine = sorted((t for t in tasks if t["repo"] == repo), key=lambda t: _task_number(t["id"]))
    if any(t["id"] not in evidence for t in mine):
        patches = gold_patches(tuple(RELEASE_PROJECTS))
        releases = _final_releases(project)
        for task in mine:
            if task["id"] not in evidence:
                evidence[task["id"]] = _release_evidence(project, releases, task, patches[task["id"]])
                cached.write_text(json.dumps(evidence, indent=1))
    chosen: dict[str, dict] = {}
    for task in mine:
        found = evidence[task["id"]]
        first_fixed = min(found["fixed"], key=Version) if found["fixed"] else None
        before = [v for v in found["forward"] if first_fixed is None or Version(v) < Version(first_fixed)]
        if before:
            chosen[task["id"]] = {"version": max(before, key=Version), "how": "applies"}
        elif first_fixed is not None:
            older = [v for v in _final_releases(project)
                     if Version(v) < Version(first_fixed) and _holds_gold(project, v, task)]
            chosen[task["id"]] = ({"version": max(older, key=Version), "how": "the release before the fix"}
                                  if older else {"version": first_fixed, "how": "fix already in"})
    anchors = [(_task_number(i), Version(c["version"])) for i, c in chosen.items()]
    for task in mine:
        if task["id"] in chosen:
            continue
        number = _task_number(task["id"])
        low = max((v for n, v in anchors if n < number), default=None)
        high = min((v for n, v in anchors if n > number), default=None)
        inside = [v for v in evidence[task["id"]]["loose"]
                  if (low is None or Version(v) >= low) and (high is None or Version(v) <= high)]
        # Else the anchors nearest in number, below first, whose tree holds the gold files.
        nearest = sorted(anchors, key=lambda nv: (nv[0] > number, abs(nv[0] - number)))
        holding = [v for _, v in nearest if _holds_gold(project, str(v), task)]
        if inside:
            chosen[task["id"]] = {"version": max(inside, key=Version), "how": "applies with one line of context"}
        elif holding:
            chosen[task["id"]] = {"version": str(holding[0]), "how": "the release of the nearest task"}
        else:
            chosen[task["id"]] = {"version": None, "how": "placed by nothing"}
    return chosen


def run_releases(repo: str, tasks: list[dict], limit: int | None, embed_pool: int | None = None,
                 embed_splits: tuple[str, ...] = ("dev", "test"), embed_model: str | None = None) -> Path:
    """Walk the repository's tasks on their release trees (:func:`choose_releases`),
    oldest release first, one working tree copied from release to release."""
    from packaging.version import Version

    name = repo.replace("/", "+")
    project = RELEASE_PROJECTS[repo]
    chosen = choose_releases(repo, tasks)
    tree = LOCATE_DIR / "trees" / f"{name}-releases"
    tree.mkdir(parents=True, exist_ok=True)
    make_own_repo(tree)
    current = {"version": None}

    def checkout(task: dict) -> None:
        version = chosen[task["id"]]["version"]
        if version == current["version"]:
            return
        for entry in tree.iterdir():
            if entry.name != ".git":
                shutil.rmtree(entry) if entry.is_dir() and not entry.is_symlink() else entry.unlink()
        # copy2 keeps the release's modification times: unchanged files stay unchanged.
        shutil.copytree(release_tree(project, version), tree, symlinks=True, dirs_exist_ok=True,
                        ignore=lambda folder, names: [".git"] if ".git" in names else [])
        current["version"] = version

    def order(todo: list[dict]) -> list[dict]:
        placed = [t for t in todo if chosen[t["id"]]["version"] is not None]
        return sorted(placed, key=lambda t: (Version(chosen[t["id"]]["version"]), t["id"]))

    label = f"{repo} @ the release before each fix"
    return walk(repo, name + "-releases", label, tree, tasks, order, checkout, limit, embed_pool,
                embed_splits, embed_model)


def embed_files(engine: Engine, conn, paths: list[str]) -> int:
    """Give every chunk of ``paths`` a vector now (those missing one), and
    nothing else: the paths go first in the worker's queue, stepped until none
    of their chunks is left without a vector. Returns how many were embedded."""
    if not paths or not engine.semantic.ensure_loaded():
        return 0

    def missing() -> int:
        return conn.execute(
            f"SELECT count(*) FROM chunks c JOIN files f ON f.id = c.file_id WHERE "
            f"f.path IN ({','.join('?' * len(paths))}) AND NOT EXISTS "
            f"(SELECT 1 FROM vectors v WHERE v.text_hash = c.embed_hash)", paths).fetchone()[0]

    before = engine.semantic.embedded_total
    if missing():
        for path in paths:
            engine.semantic.mark_urgent(path)
        while missing() and engine.semantic.step():
            pass
    return engine.semantic.embedded_total - before


# Evidence also kept under these variants of the engine's defaults (chosen
# between on dev): the text signals' chunks aggregated per file. (docs/decisions.md,
# "Locate's signal weights", lists the variants tried and dropped.)
VARIANTS = {"best chunk only": {"chunk_shares": (1.0,)},
            # Term shares: how common a term of the text / title may be.
            "text terms 50%": {"max_term_share": 0.5},
            "title terms 100%": {"max_title_term_share": 1.0},
            # How much less each frame out from the deepest in-repo one counts.
            "frame decay 0.3": {"frame_decay": 0.3},
            "frame decay 0.8": {"frame_decay": 0.8},
            "frame decay 1.0": {"frame_decay": 1.0},
            # A name defined in more files than this names nothing in particular.
            "definitions 6": {"max_definitions": 6},
            "definitions 24": {"max_definitions": 24},
            # A path the text names only in its code counts this share.
            "code-only path 1.0": {"code_only_path": 1.0}}


def answer_task(engine: Engine, locator: Locator, task: dict, label: str,
                use_vectors: bool = True) -> dict:
    """One task's answers: locate's evidence per file (with the ``semantic``
    signal when the engine has vectors and ``use_vectors``), recall's and
    plain BM25's files."""
    conn = engine.store.reader()
    semantic = engine.semantic if (use_vectors and engine.semantic is not None
                                   and engine.semantic.has_vectors()) else None
    started = time.perf_counter()
    files = locator.evidence(conn, task["text"], semantic)
    locate_ms = (time.perf_counter() - started) * 1000
    variants = {name: evidence_json(Locator(replace(locator.config, **changes)).evidence(
        conn, task["text"], semantic)) for name, changes in VARIANTS.items()}
    # recall takes a search box's query: a longer text is cut to its limit.
    hits = engine.recall(task["text"][:MAX_QUERY_CHARS], ["code", "doc"], KEEP,
                         mode="lexical").hits_by_kind
    merged = sorted((h for hs in hits.values() for h in hs), key=lambda h: -h.score)
    present = [g for g in task["gold"] if engine.store.file_state(g) is not None]
    extra = {}
    if semantic is not None:
        # How many of the re-ranked files' code chunks have a vector (the rest count nothing).
        pool = best_files(locator.evidence(conn, task["text"]), locator.config.semantic_pool, task["text"])
        extra["pool_chunks"], extra["pool_vectors"] = conn.execute(
            f"SELECT count(*), count(v.text_hash) FROM chunks c JOIN files f ON f.id = c.file_id "
            f"LEFT JOIN vectors v ON v.text_hash = c.embed_hash WHERE c.kind = 'code' "
            f"AND f.path IN ({','.join('?' * len(pool))})", pool).fetchone()
    return {"id": task["id"], "repo": label, "split": task["split"], "gold": task["gold"], **extra,
            "gold_present": present, "evidence": evidence_json(files), "variants": variants,
            "recall": _files_in_order([h.path for h in merged]),
            "bm25": plain_bm25_files(conn, task["text"]), "locate_ms": round(locate_ms, 1),
            "chars": len(task["text"])}


def django_engine(embeddings: bool, embed_model: str | None = None) -> Engine:
    """The django corpus engine (speed only: django is reserved for independent
    evaluation, so no task is scored on it) on its store, one per model."""
    db = walk_db("django", True, embed_model)
    db.parent.mkdir(parents=True, exist_ok=True)
    return Engine(corpus_path("django"), EngineOptions(db_path=str(db), embeddings=embeddings,
                                                      embed_model=embed_model))


def embed_candidates(tasks: list[dict], pool: int, embed_model: str | None = None) -> None:
    """On django's store, for ``--latency --embeddings``: embed the code chunks
    of each task text's best ``pool`` files by the lexical signals (what the
    ``semantic`` signal re-ranks), not the whole corpus: the backlog takes
    hours on this shared machine. Dev tasks' files first."""
    engine = django_engine(embeddings=True, embed_model=embed_model)
    locator = Locator()
    try:
        engine.index()
        conn = engine.store.reader()
        engine.semantic.ensure_loaded()
        done: set[str] = set()
        for split in ("dev", "test"):
            wanted: set[str] = set()
            for task in tasks:
                if task["split"] == split:
                    files = locator.evidence(conn, task["text"])
                    wanted |= set(best_files(files, pool, task["text"]))
            listed = sorted(wanted - done)
            done |= wanted
            started = time.perf_counter()
            count = embed_files(engine, conn, listed)
            engine.semantic.save()
            print(f"{split}: {len(listed)} files, {count} chunks embedded in "
                  f"{time.perf_counter() - started:.0f}s", flush=True)
    finally:
        engine.close()


def plain_bm25_files(conn, text: str) -> list[str]:
    terms = query_terms(text)
    if not terms:
        return []
    scores = bm25_scores(conn, "fts_code", terms, PLAIN_BM25, limit=500)
    best: dict[str, float] = {}
    ids = list(scores)
    for chunk_id, path in conn.execute(
            f"SELECT c.id, f.path FROM chunks c JOIN files f ON f.id = c.file_id "
            f"WHERE c.id IN ({','.join('?' * len(ids))})", ids):
        best[path] = max(best.get(path, 0.0), scores[chunk_id])
    return sorted(best, key=lambda p: (-best[p], p))[:KEEP]


# -- scoring ---------------------------------------------------------------------------------

def best_files(files: dict[str, FileEvidence], n: int, text: str) -> list[str]:
    """The best ``n`` files by the lexical signals for ``text`` (those to embed)."""
    return [s.path for s in rank(shipped_scorer(), {p: ev.signals for p, ev in files.items()}, n,
                                 terms=text_terms(text))]


def ranked_from_evidence(evidence: dict, text: str, semantic: bool = True) -> list[str]:
    """Files best first by the shipped scorer for the task's ``text``
    (``semantic`` False: embeddings off)."""
    candidates = {path: {s: v for s, v in ev["s"].items() if semantic or s != "semantic"}
                  for path, ev in evidence.items()}
    return [s.path for s in rank(shipped_scorer(), candidates, KEEP, terms=text_terms(text))]


@functools.cache
def task_texts() -> dict[str, str]:
    """Each task's issue text by id (a results row holds only the id)."""
    return {task["id"]: task["text"] for task in load_tasks()}


def metrics(rows: list[tuple[list[str], list[str]]]) -> dict[str, float]:
    """Acc@k (every gold file in the top k) and MRR (first gold file), in percent / 0..1."""
    out = {f"acc@{k}": 0.0 for k in KS}
    rr = 0.0
    for ranked, gold in rows:
        for k in KS:
            if set(gold) <= set(ranked[:k]):
                out[f"acc@{k}"] += 1
        rank = next((i for i, p in enumerate(ranked) if p in gold), None)
        rr += 0.0 if rank is None else 1.0 / (rank + 1)
    n = max(len(rows), 1)
    out = {k: round(100 * v / n, 1) for k, v in out.items()}
    out["mrr"] = round(rr / n, 3)
    out["n"] = len(rows)
    return out


def evidence_of(row: dict, variant: str | None) -> dict:
    """A task's evidence with the engine's defaults (None) or under a VARIANTS entry."""
    return row["evidence"] if variant is None else row["variants"][variant]


def objective(dev: list[dict], variant: str | None) -> tuple:
    m = metrics([(ranked_from_evidence(evidence_of(r, variant), task_texts()[r["id"]], False), r["gold"])
                 for r in dev])
    return (m["acc@5"], m["acc@1"], m["mrr"])


def has_semantic(row: dict) -> bool:
    return any("semantic" in ev["s"] for ev in row["evidence"].values())


def evaluate(embed_model: str | None = None) -> None:
    rows = []
    print(f"results of the embedding model {embed_model or 'default'}")
    for results in results_files(embed_model):
        rows += [json.loads(line) for line in results.read_text().splitlines()]
    # The text signals' aggregation is chosen on every dev task, embeddings off.
    dev = [r for r in rows if r["split"] == "dev"]
    found = {variant: objective(dev, variant) for variant in (None, *VARIANTS)}
    for variant, score in found.items():
        print(f"dev ({len(dev)} tasks), {variant or 'engine defaults'}: Acc@5, Acc@1, MRR {score}")
    variant = max(found, key=found.get)
    for split in ("dev", "test"):
        embedded = [r for r in rows if r["split"] == split and "pool_chunks" in r]
        if embedded:
            print(f"{split}: re-ranked files' code chunks with a vector: "
                  f"{sum(r['pool_vectors'] for r in embedded)} of {sum(r['pool_chunks'] for r in embedded)}")
    texts = task_texts()
    methods = {
        "locate (lexical), engine defaults": lambda r: ranked_from_evidence(
            r["evidence"], texts[r["id"]], False),
        "locate (embeddings on), engine defaults": lambda r: (
            ranked_from_evidence(r["evidence"], texts[r["id"]]) if has_semantic(r) else None),
        "locate (lexical), dev-chosen variant": lambda r: ranked_from_evidence(
            evidence_of(r, variant), texts[r["id"]], False),
        "recall (lexical), files in hit order": lambda r: r["recall"],
        "plain BM25, best chunk per file": lambda r: r["bm25"],
    }
    repos = sorted({r["repo"] for r in rows})
    print("| repo | split | method | n | Acc@1 | Acc@3 | Acc@5 | Acc@10 | MRR |")
    print("|---|---|---|---|---|---|---|---|---|")
    for repo, split in itertools.product(repos, ("dev", "test")):
        subset = [r for r in rows if r["repo"] == repo and r["split"] == split]
        for label, method in methods.items():
            ranked = [(method(r), r["gold"]) for r in subset]
            ranked = [(files, gold) for files, gold in ranked if files is not None]
            if not ranked:
                continue
            m = metrics(ranked)
            print(f"| {repo} | {split} | {label} | {m['n']} | {m['acc@1']} | {m['acc@3']} | "
                  f"{m['acc@5']} | {m['acc@10']} | {m['mrr']} |")
    for split in ("dev", "test"):
        subset = [r for r in rows if r["split"] == split]
        for label, method in methods.items():
            if not label.startswith("locate"):
                continue
            ranked = [(method(r), r["gold"]) for r in subset]
            ranked = [(files, gold) for files, gold in ranked if files is not None]
            m = metrics(ranked)
            print(f"all {split} ({m['n']} of {len(subset)} tasks), {label}: Acc@1 {m['acc@1']}, "
                  f"Acc@3 {m['acc@3']}, Acc@5 {m['acc@5']}, Acc@10 {m['acc@10']}, MRR {m['mrr']}")
    walked = rows
    if walked:  # every task is answered on a walked tree
        reindex = [r["reindex_s"] for r in walked]
        changed = [r["changed"] for r in walked]
        print(f"re-index per task: p50 {statistics.median(reindex):.1f}s, max {max(reindex):.1f}s; "
              f"files changed p50 {statistics.median(changed)}; locate in the walk p50 "
              f"{statistics.median(r['locate_ms'] for r in walked):.0f} ms")
    missing = sum(1 for r in rows if set(r["gold"]) - set(r["gold_present"]))
    print(f"tasks whose gold includes a file not in the index at the base commit: {missing}")


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else 0.0


def latency(repeats: int, embeddings: bool, embed_model: str | None = None) -> None:
    """Engine.locate on the django corpus with the localisation set's issue
    texts (speed only; with embeddings: the store of ``--embed-candidates``)."""
    tasks = load_tasks()
    engine = django_engine(embeddings, embed_model)
    try:
        started = time.perf_counter()
        engine.index()
        print(f"index django corpus: {time.perf_counter() - started:.1f}s; embeddings "
              f"{'on' if embeddings else 'off'}")
        for task in tasks[:5]:  # warm-up: caches, vocab table, page cache
            engine.locate(task["text"], 10)
        # Wall time, and this thread's CPU time: on a loaded machine the wall
        # time mostly measures the wait for a core.
        # The process's CPU time too: the embedding model runs on threads of its own.
        wall, cpu, process, sizes = [], [], [], []
        for _ in range(repeats):
            for task in tasks:
                started, started_cpu = time.perf_counter(), time.thread_time()
                started_process = time.process_time()
                engine.locate(task["text"], 10)
                wall.append((time.perf_counter() - started) * 1000)
                cpu.append((time.thread_time() - started_cpu) * 1000)
                process.append((time.process_time() - started_process) * 1000)
                sizes.append(len(task["text"]))
        print(f"locate on django ({len(wall)} calls, issue texts p50 {statistics.median(sizes)} chars)")
        near = [i for i, size in enumerate(sizes) if 1500 <= size <= 2500]
        for label, values in (("wall", wall), ("cpu", cpu), ("process cpu", process)):
            print(f"  {label}: p50 {_quantile(values, 0.5):.1f} ms, p95 {_quantile(values, 0.95):.1f} ms, "
                  f"max {max(values):.1f} ms; texts of 1500-2500 chars ({len(near)} calls) p50 "
                  f"{_quantile([values[i] for i in near], 0.5):.1f} ms")
    finally:
        engine.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repo", action="append", choices=ALLOWED_REPOS,
                        help="walk this repository's tasks (repeatable)")
    parser.add_argument("--releases", action="append", choices=tuple(RELEASE_PROJECTS),
                        help="answer this repository's tasks on PyPI release trees (repeatable)")
    parser.add_argument("--limit", type=int, help="at most this many new tasks per repository")
    parser.add_argument("--evaluate", action="store_true", help="score the stored results")
    parser.add_argument("--latency", action="store_true", help="time locate on the django corpus")
    parser.add_argument("--repeats", type=int, default=1,
                        help="passes over the texts (after the first, query vectors come from the cache)")
    parser.add_argument("--embed-candidates", type=int, metavar="FILES",
                        help="embed the chunks of each task's best FILES files (lexical): with "
                             "--repo or --releases at each step of the walk, else django's store")
    parser.add_argument("--embed-splits", default="dev,test",
                        help="with --repo/--releases --embed-candidates: the splits whose tasks "
                             "get vectors")
    parser.add_argument("--embeddings", action="store_true", help="--latency with embeddings on")
    parser.add_argument("--embed-model", metavar="NAME",
                        help="embed with this built-in model instead of the default (its results "
                             "and stores kept apart, --evaluate scores only them)")
    args = parser.parse_args()
    # An unknown model would only warn in the embedding worker, leaving every task without vectors.
    if args.embed_model is not None and not is_builtin_model(args.embed_model):
        parser.error(f"--embed-model: no built-in embedding model {args.embed_model!r}")
    tasks = load_tasks()
    for repo in args.repo or ():
        run_repo(repo, tasks, args.limit, args.embed_candidates,
                 tuple(args.embed_splits.split(",")), args.embed_model)
    for repo in args.releases or ():
        run_releases(repo, tasks, args.limit, args.embed_candidates,
                     tuple(args.embed_splits.split(",")), args.embed_model)
    if args.embed_candidates and not (args.repo or args.releases):
        embed_candidates(tasks, args.embed_candidates, args.embed_model)
    if args.evaluate:
        evaluate(args.embed_model)
    if args.latency:
        latency(args.repeats, args.embeddings, args.embed_model)


if __name__ == "__main__":
    sys.exit(main())
