"""Run the benchmarks (issue #2; not part of CI) and record their headline figures.

    .venv/bin/python bench/run.py                 # everything (about 10 minutes)
    .venv/bin/python bench/run.py --only perf     # speed and size
    .venv/bin/python bench/run.py --only quality  # retrieval quality
    .venv/bin/python bench/run.py --only semantic # semantic tier (issue 3; the first run
                                                  # embeds django: an hour or more on 2 cores)

Prints a Markdown report of every table. Each part that ran also replaces its
result file in bench/results/ (``run-perf.json``, ``run-quality.json``,
``run-semantic.json``: its targets and chosen figures) and BENCHMARKS.md is
generated again from them (bench/report.py).

- Corpora: PyPI sdists of bench/corpora.py, fetched once with ``pip download
  --no-deps --no-binary :all: NAME==VER`` and unpacked as they are into
  ``bench/.cache/corpora/NAME-VER/``.
- Speed and size (``bench/perf.py``): cold and no-op indexing, recall latency
  in-process and over the daemon, didChange -> recall latency against the real
  ``ctxls serve`` over stdio, peak RSS, index size.
- Retrieval quality (``bench/quality.py``, set built by ``bench/dataset.py``):
  docstrings of functions are removed from a copy of each corpus, and their
  first sentence must find the function.
- Semantic tier (``bench/semantic.py``, issue 3): BM25, dense-only and hybrid on
  the same set with every copy fully embedded, the fusion grid, embedding-text
  variants, speed and memory with embeddings on.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import dataset
import perf
import quality
import report
import semantic

REPO = Path(__file__).resolve().parent.parent
PARTS = ("perf", "quality", "semantic")
# Where each part's result file sits on BENCHMARKS.md.
SECTION_AREAS = {"perf": "Recall speed and indexing", "quality": "Recall quality", "semantic": "Semantic tier"}


def _run(*cmd: str) -> str:
    try:
        return subprocess.run(cmd, capture_output=True, text=True, cwd=REPO).stdout.strip()
    except OSError:
        return ""


def machine() -> str:
    return (f"{_run('nproc')} cores, Python {platform.python_version()}; "
            f"load average at start {os.getloadavg()[0]:.2f}")


def revision() -> str:
    commit = _run("git", "rev-parse", "--short", "HEAD") or "unknown"
    return commit + ("+dirty" if _run("git", "status", "--porcelain") else "")


def command() -> str:
    python = Path(sys.executable)
    try:
        python = python.relative_to(REPO)
    except ValueError:
        pass
    return " ".join([str(python), "bench/run.py", *sys.argv[1:]])


def row(target: str, value: str, goal: str | None = None, met: bool | None = None) -> dict:
    return {"target": target, "value": value, "goal": goal, "met": met}


def perf_rows(result: perf.PerfReport) -> list[dict]:
    rows = []
    django = result.cold.get("django")
    if django is not None:
        rows += [row("django cold index", f"{django.seconds:.2f} s", "≤ 20 s", django.seconds <= 20),
                 row("django no-op re-index", f"{django.noop_first:.3f} s", "≤ 0.3 s", django.noop_first <= 0.3)]
    change = result.daemon.changes[0].latency
    return rows + [row("recall p50 (in-process)", f"{result.recall['all'].p50:.1f} ms", "≤ 10 ms",
                       result.recall["all"].p50 <= 10),
                   row("didChange → recall p95 (daemon)", f"{change.p95:.1f} ms", "≤ 50 ms", change.p95 <= 50)]


def quality_rows(result: quality.QualityReport) -> list[dict]:
    chosen = result.chosen
    return [row(f"test MRR@10, mean over the corpora ({chosen.name})", f"{quality.macro(chosen, 'test'):.3f}"),
            row(f"dev MRR@10, mean over the corpora ({chosen.name})", f"{quality.macro(chosen, 'dev'):.3f}")]


def semantic_rows(result: semantic.SemanticReport) -> list[dict]:
    if result.quality is None:
        return []
    return [row(f"{ranker.name}: MRR@10 dev / test, mean over the corpora",
                f"{ranker.macro('dev'):.3f} / {ranker.macro('test'):.3f}") for ranker in result.quality.rankers]


def record(part: str, section: str, rows: list[dict], notes: str) -> None:
    """Replace this part's result file; BENCHMARKS.md is generated again by the caller."""
    if rows:
        report.write_result(f"run-{part}", {
            "section": section, "area": SECTION_AREAS[part], "issue": 2 if part != "semantic" else 3,
            "date": datetime.date.today().isoformat(), "commit": revision(), "command": command(),
            "machine": machine(), "rows": rows, "notes": notes})



def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", choices=PARTS, help="run one part (default: all)")
    parser.add_argument("--queries", type=int, default=perf.QUERIES, help="recall latency queries")
    parser.add_argument("--edits", type=int, default=perf.EDITS, help="didChange edits per run")
    parser.add_argument("--no-write", action="store_true", help="leave bench/results/ and BENCHMARKS.md alone")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    if args.only in (None, "perf"):
        result = perf.run_perf(None, args.queries, args.edits, log=log)
        print(perf.markdown(result))
        if not args.no_write:
            record("perf", "django speed and size (bench/run.py)", perf_rows(result),
                   "The whole tables (every corpus, every latency) are in the run's printed report.")
    if args.only in (None, "quality"):
        result = quality.run_quality(None, log=log)
        print(quality.markdown(result))
        if not args.no_write:
            record("quality", "Docstring retrieval set (requests, flask, django), lexical", quality_rows(result),
                   "Variants are chosen on dev only; the grid and every variant are in the printed report.")
    if args.only in (None, "semantic"):
        result = semantic.run_semantic(log=log)
        print(semantic.markdown(result))
        if not args.no_write:
            record("semantic", "Docstring retrieval set with embeddings (BM25, dense, hybrid)",
                   semantic_rows(result), "Fusion grid, texts and speed tables are in the printed report.")
    if not args.no_write:
        report.main([])
    log(f"bench: done in {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
