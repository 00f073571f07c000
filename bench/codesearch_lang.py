"""Code search in the languages of issue 37, scored by file (lexical recall).

Twelve projects, two per language (Kotlin, Swift, C#, Elixir, Lua, Scala),
one dev and one test: ``PROJECTS``, listed with their commits in
``bench/projects.md``. The queries (``bench/codesearch_lang/<project>.json``,
the format of ``codesearch_files.py``'s hand-written ones: symbol / semantic /
architecture, relevant and secondary files) were written by reading each
project's code and docs, before running ctxls on them, and not changed after
seeing a ranking. Scoring is ``codesearch_files.ndcg_by_file``: NDCG@10 over
the ranks of the first top-10 code chunk lying in each target file.

The trees are GitHub snapshots at the listed commit, unpacked with
``git archive <commit>`` into ``bench/.cache/codesearch-lang/trees/<project>``
(made once by hand: nothing downloads here). Each run indexes every project
into a fresh store (a temporary folder), so the figures are the code's that
runs: to measure the code before a change, run this file with that code first
on ``PYTHONPATH`` (docs/decisions.md, "Six more languages", says how).

``--force-include`` adds the projects' extensions to the default ``include``:
what a user of a ctxls that skipped them could do (their files are then read
as text windows by a ctxls without their grammar).

Also reported per project: the cold index (files, chunks, seconds, chunks/s),
next to this repository's own Python (``index/``, ``impact/``, ``daemon/``)
indexed the same way, the reference the issue's throughput bar names.

Run: .venv/bin/python bench/codesearch_lang.py [--project NAME ...] [--force-include] [--verbose]
     [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from codesearch_files import FileQuery, _target, score_queries  # noqa: E402
from corpora import CACHE_DIR  # noqa: E402
from ctxls.index.discovery import DiscoveryOptions  # noqa: E402
from ctxls.index.engine import Engine, EngineOptions  # noqa: E402
from ctxls.index.languages import DEFAULT_INCLUDE  # noqa: E402

TREES_DIR = CACHE_DIR / "codesearch-lang" / "trees"
QUERIES_DIR = Path(__file__).resolve().parent / "codesearch_lang"
REPOSITORY_ROOT = Path(__file__).resolve().parent.parent
EXTENSIONS = {"kotlin": ("kt", "kts"), "swift": ("swift",), "csharp": ("cs",), "elixir": ("ex", "exs"),
              "lua": ("lua",), "scala": ("scala", "sc")}


@dataclass(frozen=True)
class Project:
    name: str
    language: str
    repository: str  # GitHub owner/name
    commit: str
    split: str  # dev | test


PROJECTS = (
    Project("moshi", "kotlin", "square/moshi", "889013ec2edb8d8034902662a1dc8c4f3b3f8111", "dev"),
    Project("kotlinpoet", "kotlin", "square/kotlinpoet", "be2de914ce6eb3694092ed4e0f28626cbce1ffe0", "test"),
    Project("alamofire", "swift", "Alamofire/Alamofire", "7595cbcf59809f9977c5f6378500de2ad73b7ddb", "dev"),
    Project("kingfisher", "swift", "onevcat/Kingfisher", "410984bf301f4fa224fe56277b3f8672cc465c79", "test"),
    Project("mediatr", "csharp", "jbogard/MediatR", "8a64581e2570e7410c5f44835d9ea112beccbe6b", "dev"),
    Project("polly", "csharp", "App-vNext/Polly", "173d6d1d2e28a4697f1ac1d22da68f77ff19a0c9", "test"),
    Project("ex_machina", "elixir", "beam-community/ex_machina", "06fce55ec1b248d99825ed5bf01f6c2af99b3f7c",
            "dev"),
    Project("plug", "elixir", "elixir-plug/plug", "a898c454a04ca5ffad306bd751a15c7ac9ff6927", "test"),
    Project("plenary", "lua", "nvim-lua/plenary.nvim", "b9fd5226c2f76c951fc8ed5923d85e4de065e509", "dev"),
    Project("lazy_nvim", "lua", "folke/lazy.nvim", "306a05526ada86a7b30af95c5cc81ffba93fef97", "test"),
    Project("scopt", "scala", "scopt/scopt", "75cd14c9e1f517e9d1beb8de9e3427e40630f1cb", "dev"),
    Project("os_lib", "scala", "com-lihaoyi/os-lib", "e237000cbd4d97a4c4463df43d64556130d2bc50", "test"),
)


def load_queries(project: Project) -> list[FileQuery]:
    raw = json.loads((QUERIES_DIR / f"{project.name}.json").read_text(encoding="utf-8"))
    return [FileQuery(project.name, item["category"], item["query"],
                      tuple(_target(r) for r in [*item["relevant"], *item.get("secondary", [])]))
            for item in raw]


def index_cold(tree: Path, include: tuple[str, ...]) -> tuple[Engine, dict, Path]:
    """An engine on a fresh store of ``tree``, its cold index's figures, and
    the store's temporary folder (for ``close_store``)."""
    store = Path(tempfile.mkdtemp(prefix="ctxls-lang-"))
    engine = Engine(tree, EngineOptions(db_path=str(store / "index.db"),
                                        discovery=DiscoveryOptions(include=include)))
    started = time.perf_counter()
    engine.index()
    seconds = time.perf_counter() - started
    status = engine.status()
    return engine, {"files": status["files"], "chunks": status["chunks"], "seconds": round(seconds, 2),
                    "chunks_per_s": round(status["chunks"] / seconds) if seconds else 0}, store


def close_store(engine: Engine, store: Path) -> None:
    engine.close()
    shutil.rmtree(store, ignore_errors=True)


def evaluate(projects, force_include: bool, log, verbose: bool) -> tuple[dict, dict]:
    """({project: [(query, ndcg)]}, {project: cold index figures})."""
    scores: dict[str, list[tuple[FileQuery, float]]] = {}
    throughput: dict[str, dict] = {}
    for project in projects:
        tree = TREES_DIR / project.name
        if not tree.is_dir():
            raise SystemExit(f"{tree} is missing: see this module's docstring for how the trees are made")
        include = DEFAULT_INCLUDE + (EXTENSIONS[project.language] if force_include else ())
        engine, throughput[project.name], store = index_cold(tree, include)
        try:
            scores[project.name] = score_queries(engine, load_queries(project), "", "lexical",
                                                 log if verbose else None, project.name)
        finally:
            close_store(engine, store)
        log(f"{project.name}: {throughput[project.name]}")
    return scores, throughput


def python_reference(log) -> dict:
    """Cold index figures of this repository's own Python, the same way."""
    with tempfile.TemporaryDirectory(prefix="ctxls-lang-py-") as folder:
        tree = Path(folder) / "tree"
        for part in ("index", "impact", "daemon"):
            shutil.copytree(REPOSITORY_ROOT / part, tree / part,
                            ignore=shutil.ignore_patterns("__pycache__", "models"))
        engine, figures, store = index_cold(tree, DEFAULT_INCLUDE)
        close_store(engine, store)
    log(f"python reference: {figures}")
    return figures


def markdown(scores, throughput, reference, projects) -> str:
    def mean(values) -> float:
        return sum(values) / len(values) if values else float("nan")

    categories = ("symbol", "semantic", "architecture")
    lines = ["| project | language | split | queries | NDCG@10 | " + " | ".join(categories)
             + " | files | chunks | chunks/s |", "|---|---|---|---:|---:|" + "---:|" * (len(categories) + 3)]
    for p in projects:
        rows = scores[p.name]
        by_category = [mean([s for q, s in rows if q.category == c]) for c in categories]
        t = throughput[p.name]
        lines.append(f"| {p.name} | {p.language} | {p.split} | {len(rows)} | {mean([s for _, s in rows]):.3f} | "
                     + " | ".join("–" if v != v else f"{v:.3f}" for v in by_category)
                     + f" | {t['files']} | {t['chunks']} | {t['chunks_per_s']} |")
    if reference:
        lines.append(f"| (this repository's Python) | python | – | – | – | – | – | – | {reference['files']} | "
                     f"{reference['chunks']} | {reference['chunks_per_s']} |")
    languages = tuple(dict.fromkeys(p.language for p in projects))
    lines += ["", "| split | " + " | ".join(languages) + " | mean |", "|---|" + "---:|" * (len(languages) + 1)]
    for split in ("dev", "test"):
        per_language = [mean([mean([s for _, s in scores[p.name]]) for p in projects
                              if p.language == language and p.split == split]) for language in languages]
        known = [v for v in per_language if v == v]
        lines.append(f"| {split} | " + " | ".join("–" if v != v else f"{v:.3f}" for v in per_language)
                     + f" | {mean(known):.3f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--project", nargs="*", help="only these projects")
    parser.add_argument("--force-include", action="store_true",
                        help="add the projects' extensions to the default include")
    parser.add_argument("--no-reference", action="store_true", help="skip the Python throughput reference")
    parser.add_argument("--verbose", action="store_true", help="print every query scoring below 1")
    parser.add_argument("--json", help="write every query's score to this file")
    args = parser.parse_args(argv)

    def log(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    projects = [p for p in PROJECTS if not args.project or p.name in args.project]
    scores, throughput = evaluate(projects, args.force_include, log, args.verbose)
    reference = None if args.no_reference else python_reference(log)
    print(markdown(scores, throughput, reference, projects))
    if args.json:
        Path(args.json).write_text(json.dumps([
            {"project": name, "category": q.category, "query": q.query, "ndcg": score}
            for name, rows in scores.items() for q, score in rows]), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
