"""Code search scored by file: hand-written queries, the way an outside benchmark scores them.

The dev set of ``codesearch.py`` is generated (a definition's name, its stripped
doc comment, a module's docstring) and scored on chunks. The independent
evaluation issue 11 quotes is different in two ways this set copies:

* the queries are hand-written by people reading the code: a symbol name
  ("Semaphore"), a short description ("gzip response compression
  middleware"), a "how does X work" question; the code keeps its comments;
* targets are files (a few carry a line span), each with a "relevant" and an
  optional "secondary" list; a query's ranks are the ranks of the first of the
  top 10 chunks that lies in each target file (overlapping its span, if any),
  and NDCG@10 has binary gains over all targets. A second chunk of a file
  already found earns nothing, so the metric rewards a list of distinct files.

Two sources of annotations (``Project.hand_written`` says which):

* the public benchmark's: those a public code-search benchmark publishes for
  five projects that no issue reserves (one Go, two Java, one Rust, one
  TypeScript project; 98 queries, 95 with a target in the tree: chi's
  ``middleware/cors.go`` and ``redirect.go`` never existed). Each project is
  indexed at the revision the annotations were written against, from the
  folder they were written for. They are not ours to commit: the cache is
  made once by hand (the
  benchmark's annotation files copied to ``ANNOTATIONS_DIR/<project>.json``;
  each project's repository fetched and ``git archive <revision> <root>``
  unpacked under ``TREES_DIR/<project>``; see ``PROJECTS``);
* hand-written ones for ten more projects (two Python, two C, two
  JavaScript, and a second Go, Rust and two more TypeScript ones:
  client_golang, rayon, mobx, rxjs; 22 queries each, 7 symbol / 7-8
  semantic / 7-8 architecture), committed as
  ``bench/codesearch_files/<project>.json``. They were written
  by reading each project's code (with its comments), before and without
  running ctxls on them, and never changed after seeing a ranking:
  descriptions are paraphrased as a user who does not know the names would
  put them, not copied from doc comments. Their trees are the pinned
  corpora of ``codesearch_corpora.py`` (a registry package, fetched through
  its client by ``corpus_tree``), copied to ``TREES_DIR/<project>`` on first
  use and indexed whole (their README and docs pages are indexed too;
  recall is asked for code chunks only, as for the other five).

Fifteen projects, 318 queries; every language has two or three projects
(Java's two and one of Go's, Rust's and TypeScript's are the public
benchmark's). Still too few per language to split by project: it is a second
dev set, read beside the generated set's test split, never instead of it.
Five of the hand-written projects (click, curl, lodash, mobx, rayon) are
test-split corpora of the generated set: a knob tuned on them here has seen
those projects' code.

Held out (``Project.held_out``): one more hand-written project per language
(starlette, hapi, table_core, hyper, urfave_cli, jackson_core; ~20
queries each, about 4 symbol / 10 semantic / 6 architecture, the public
benchmark's mix and its wording: short noun phrases a user who knows the
domain would type). Written in the eleventh session by reading the code
only, after every ranking choice before it; their corpora
(``codesearch_corpora.HELD_OUT_CORPORA``) are in no dev, test, training or
reserved list. They are reported in their own column and left out of the
mean, category and language figures: a change is taken on the fifteen and
checked here. They first showed that the tenth session's vote of rankings
did not generalize, and have since informed two choices read on every set
at once (module residue, barrels: docs/decisions.md), so they
are no longer a clean test.

Run: .venv/bin/python bench/codesearch_files.py [--modes lexical,hybrid] [--project NAME ...]
     [--ranking field=value ...] [--max-tokens N] [--embed-model NAME] [--verbose] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from codesearch import (RECALL_MODE, embed_store, embedding_variant, open_engine, parse_ranking,  # noqa: E402
                        pending_vectors, serve_the_window)
from codesearch_corpora import CodeCorpus, corpus_by_name, corpus_tree  # noqa: E402
from ctxls.index.ranking import RankingConfig  # noqa: E402
from codesearch_set import CodeSet  # noqa: E402
from corpora import CACHE_DIR, make_own_repo  # noqa: E402

K = 10
WORK_DIR = CACHE_DIR / "codesearch-files"
ANNOTATIONS_DIR = WORK_DIR / "annotations"
TREES_DIR = WORK_DIR / "trees"
HAND_WRITTEN_DIR = Path(__file__).resolve().parent / "codesearch_files"


@dataclass(frozen=True)
class Project:
    name: str
    language: str
    repository: str  # where the tree was archived from
    revision: str
    root: str  # the indexed folder inside the repository ("" = all of it)
    # Hand-written annotations in HAND_WRITTEN_DIR, the tree copied from the
    # codesearch_corpora corpus of the same name; else the public benchmark's.
    hand_written: bool = False
    # Annotated after every earlier ranking choice (codesearch_corpora.HELD_OUT_CORPORA):
    # reported apart, in "held-out", and not tuned on alone.
    held_out: bool = False


PROJECTS = (
    Project("chi", "go", "go-chi/chi", "a54874f0e2f12647a19e82ee70dfa8185014100c", ""),
    Project("tokio", "rust", "tokio-rs/tokio", "5db10f538b683fe88d699dfd11be31d193db011c", "tokio/src"),
    Project("commons-lang", "java", "apache/commons-lang", "0ba92dc402312a38252a3398931ffbfbb4a88f7d",
            "src/main/java/org/apache/commons/lang3"),
    # The annotations' own revision is not in the fetched history; this 3.x
    # commit holds every annotated file but `deser/BeanDeserializer.java` (only
    # `deser/bean/BeanDeserializer.java` is there), so one query has no target.
    Project("jackson-databind", "java", "FasterXML/jackson-databind", "a10060a0a",
            "src/main/java/tools/jackson/databind"),
    Project("vitest", "typescript", "vitest-dev/vitest", "596f73986abe2161a9a06f0ca03df68e82690b21",
            "packages/vitest/src"),
    # Hand-written (see the module docstring); repository = registry:package.
    Project("click", "python", "pypi:click", "8.1.7", "", hand_written=True),
    Project("rich", "python", "pypi:rich", "13.9.4", "", hand_written=True),
    Project("curl", "c", "debsrc:curl", "7.88.1", "", hand_written=True),
    Project("eslint", "javascript", "npm:eslint", "8.57.0", "", hand_written=True),
    Project("lodash", "javascript", "npm:lodash", "4.17.21", "", hand_written=True),
    # A second project for each language that had one public-benchmark project.
    Project("client_golang", "go", "deb:golang-github-prometheus-client-golang-dev", "1.14.0", "",
            hand_written=True),
    Project("rayon", "rust", "deb:librust-rayon-dev", "1.6.1", "", hand_written=True),
    Project("mobx", "typescript", "npm:mobx", "6.13.5", "", hand_written=True),
    Project("rxjs", "typescript", "npm:rxjs", "7.8.1", "", hand_written=True),
    # Held out (see Project.held_out).
    Project("starlette", "python", "pypi:starlette", "0.41.3", "", hand_written=True, held_out=True),
    Project("hapi", "javascript", "npm:@hapi/hapi", "21.3.12", "", hand_written=True, held_out=True),
    Project("table_core", "typescript", "npm:@tanstack/table-core", "8.20.5", "", hand_written=True,
            held_out=True),
    Project("hyper", "rust", "deb:librust-hyper-dev", "0.14.19", "", hand_written=True, held_out=True),
    Project("urfave_cli", "go", "deb:golang-github-urfave-cli-dev", "1.22.9", "", hand_written=True,
            held_out=True),
    Project("jackson_core", "java", "debsrc:jackson-core", "2.14.1", "", hand_written=True,
            held_out=True),
)


@dataclass(frozen=True)
class FileTarget:
    path: str  # relative to the repository root
    start_line: int | None = None  # 1-based, inclusive
    end_line: int | None = None


@dataclass(frozen=True)
class FileQuery:
    project: str
    category: str  # symbol | semantic | architecture
    query: str
    targets: tuple[FileTarget, ...]  # relevant, then secondary


def _target(raw) -> FileTarget:
    if isinstance(raw, str):
        return FileTarget(raw)
    return FileTarget(raw["path"], raw.get("start_line"), raw.get("end_line"))


def load_queries(project: Project) -> list[FileQuery]:
    """The project's queries, each with the targets its tree holds; a query
    left with none is dropped (it would score 0 for any ranking)."""
    folder = HAND_WRITTEN_DIR if project.hand_written else ANNOTATIONS_DIR
    raw = json.loads((folder / f"{project.name}.json").read_text(encoding="utf-8"))
    repository = TREES_DIR / project.name
    queries = []
    for item in raw:
        targets = tuple(t for t in (_target(r) for r in [*item["relevant"], *item.get("secondary", [])])
                        if (repository / t.path).is_file())
        if targets:
            queries.append(FileQuery(project.name, item["category"], item["query"], targets))
    return queries


def hit_finds(hit: tuple[str, int, int], target: FileTarget, root: str) -> bool:
    """``hit`` is (path relative to the indexed root, 1-based start, end)."""
    path, start, end = hit
    full = f"{root}/{path}" if root else path
    if full != target.path:
        return False
    if target.start_line is None:
        return True
    return not (end < target.start_line or start > target.end_line)


def ndcg_by_file(hits: list[tuple[str, int, int]], targets: tuple[FileTarget, ...], root: str,
                 k: int = K) -> float:
    ranks = []
    for target in targets:
        for rank, hit in enumerate(hits[:k], 1):
            if hit_finds(hit, target, root):
                ranks.append(rank)
                break
    dcg = sum(1 / math.log2(rank + 1) for rank in ranks)
    ideal = sum(1 / math.log2(rank + 1) for rank in range(1, min(k, len(targets)) + 1))
    return dcg / ideal if ideal else 0.0


def _code_set(project: Project) -> CodeSet:
    if project.hand_written and not (TREES_DIR / project.name).is_dir():
        shutil.copytree(corpus_tree(corpus_by_name(project.name)), TREES_DIR / project.name,
                        ignore=shutil.ignore_patterns(".git"))
    tree = TREES_DIR / project.name / project.root
    if not tree.is_dir():
        raise SystemExit(f"{tree} is missing: see this module's docstring for how the cache is made")
    make_own_repo(tree)
    # "files-": the generated set's stores are named name-version too, over
    # its stripped copy of the same corpora.
    corpus = CodeCorpus(f"files-{project.name}", project.language, "git", project.repository,
                        project.revision[:10], "files")
    return CodeSet(corpus, tree, [], {})


def evaluate(projects, modes, rankings: dict[str, RankingConfig], log, verbose=False,
             embedding: str = "", window: bool = False) -> dict:
    """{(variant, mode): {project: [(query, ndcg)]}}: every ranking variant on
    the same stores (``embedding``: the store variant of
    codesearch.embedding_variant, "" for the default model and length;
    ``window``: as codesearch.evaluate's)."""
    scores: dict[tuple[str, str], dict[str, list[tuple[FileQuery, float]]]] = {
        (v, m): {} for v in rankings for m in modes}
    for project in projects:
        code_set = _code_set(project)
        queries = load_queries(project)
        dense = any(m != "lexical" for m in modes)
        if dense:
            embed_store(code_set, variant=embedding, log=log)
        engine = open_engine(code_set, dense, variant=embedding, log=log)
        if window:
            serve_the_window(engine)
        try:
            if dense and pending_vectors(engine):
                raise RuntimeError(f"{project.name}: the store is not fully embedded")
            for (variant, mode), by_project in scores.items():
                engine.options = replace(engine.options, ranking=rankings[variant])
                by_project[project.name] = score_queries(engine, queries, project.root,
                                                         RECALL_MODE[mode], log if verbose else None,
                                                         f"{mode} {project.name}")
        finally:
            engine.close()
    return scores


def score_queries(engine, queries: list[FileQuery], root: str, mode: str, log=None,
                  label: str = "") -> list[tuple[FileQuery, float]]:
    """Each query's NDCG@10 by file through ``engine.recall`` in ``mode``;
    with ``log``, every query scoring below 1 is printed with its top hits."""
    scored = []
    for q in queries:
        hits = engine.recall(q.query, kinds=["code"], n=K, mode=mode).hits_by_kind["code"]
        # hits are 0-based like LSP; the annotations' spans 1-based
        spans = [(h.path, h.start_line + 1, h.end_line + 1) for h in hits]
        score = ndcg_by_file(spans, q.targets, root)
        scored.append((q, score))
        if log is not None and score < 1:
            log(f"{label} [{q.category}] {score:.2f} {q.query!r}\n"
                f"   want {[t.path.rsplit('/', 1)[-1] for t in q.targets]}\n"
                f"   got  {[f'{p}:{s}-{e}' for p, s, e in spans[:6]]}")
    return scored


def markdown(scores, projects) -> str:
    """Per project, the mean over projects (as the outside benchmark
    averages: each project weighs the same), per category; then per language.
    A category's or a language's figure is the mean over its projects of the
    project's mean. The mean, category and language figures cover the projects
    rankings were chosen on; the held-out projects have their own column."""
    categories = ("symbol", "semantic", "architecture")
    held_out = [p for p in projects if p.held_out]
    tuned = [p for p in projects if not p.held_out]
    languages = tuple(dict.fromkeys(p.language for p in tuned))

    def mean(values: list[float]) -> float:
        return sum(values) / len(values) if values else float("nan")

    # The public benchmark's projects were annotated by the outside
    # evaluation's own annotators: their mean is the closest proxy for it.
    public = [p for p in tuned if not p.hand_written]
    lines = ["| mode | " + " | ".join(p.name for p in projects) + " | mean | "
             + " | ".join(categories) + " | public | hand-written | held-out |",
             "|---|" + "---:|" * (len(projects) + 4 + len(categories))]
    by_language = ["", "| mode | " + " | ".join(languages) + " |", "|---|" + "---:|" * len(languages)]
    for (variant, mode), by_project in scores.items():
        per_project = {p.name: mean([s for _, s in by_project[p.name]]) for p in projects}
        per_category = [mean([mean([s for q, s in by_project[p.name] if q.category == c])
                              for p in tuned if any(q.category == c for q, _ in by_project[p.name])])
                        for c in categories]
        lines.append(f"| {mode} {variant} | " + " | ".join(f"{per_project[p.name]:.3f}" for p in projects)
                     + f" | **{mean([per_project[p.name] for p in tuned]):.3f}** | "
                     + " | ".join(f"{v:.3f}" for v in per_category) + " | "
                     + " | ".join(f"{mean([per_project[p.name] for p in group]):.3f}" if group else "–"
                                  for group in (public, [p for p in tuned if p.hand_written], held_out))
                     + " |")
        by_language.append(f"| {mode} {variant} | " + " | ".join(
            f"{mean([per_project[p.name] for p in tuned if p.language == language]):.3f}"
            for language in languages) + " |")
    return "\n".join(lines + by_language)


def scores_json(scores) -> list[dict]:
    """One row per (variant, mode, query): what ``--json`` writes."""
    return [{"variant": variant, "mode": mode, "project": project, "category": q.category,
             "query": q.query, "ndcg": score}
            for (variant, mode), by_project in scores.items()
            for project, rows in by_project.items() for q, score in rows]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--modes", default="lexical,hybrid")
    parser.add_argument("--project", nargs="*", help="only these projects")
    parser.add_argument("--ranking", action="append",
                        help="RankingConfig or PriorConfig overrides: field=value,... (repeat to "
                             "compare variants on the same stores)")
    parser.add_argument("--verbose", action="store_true", help="print every query scoring below 1")
    parser.add_argument("--json", help="write every query's score to this file (to compare two "
                                       "builds query by query)")
    parser.add_argument("--max-tokens", type=int,
                        help="embedding input length (default: the model's, index/embeddings.py)")
    parser.add_argument("--window", action="store_true",
                        help="answer as in the fast tier's window (see codesearch.py --window)")
    parser.add_argument("--embed-model",
                        help="the engine's embedModel option (e.g. multilingual-e5-small)")
    args = parser.parse_args(argv)

    def log(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    projects = [p for p in PROJECTS if not args.project or p.name in args.project]
    started = time.perf_counter()
    rankings = {text: parse_ranking(None if text == "default" else text)
                for text in (args.ranking or ["default"])}
    with embedding_variant(args.max_tokens, args.embed_model) as embedding:
        scores = evaluate(projects, [m for m in args.modes.split(",") if m], rankings, log,
                          args.verbose, embedding, args.window)
    print(markdown(scores, projects))
    if args.json:
        Path(args.json).write_text(json.dumps(scores_json(scores)), encoding="utf-8")
    log(f"codesearch_files: {time.perf_counter() - started:.0f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
