"""Run the benchmarks (issue #2; not part of CI) and record them in BENCHMARKS.md.

    .venv/bin/python bench/run.py                 # everything (about 10 minutes)
    .venv/bin/python bench/run.py --only perf     # speed and size
    .venv/bin/python bench/run.py --only quality  # retrieval quality
    .venv/bin/python bench/run.py --only semantic # semantic tier (issue 3; the first run
                                                  # embeds django: an hour or more on 2 cores)

Prints a Markdown summary. BENCHMARKS.md keeps the latest results of each
part between its markers (a part that did not run keeps its old section) and
one history row per run.
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import dataset
import perf
import quality
import semantic
from corpora import CORPORA

REPO = Path(__file__).resolve().parent.parent
BENCHMARKS_MD = REPO / "BENCHMARKS.md"
PARTS = ("perf", "quality", "semantic")

_INTRO = """# Benchmarks

Issue #2. Not run in CI: `make bench` (or `.venv/bin/python bench/run.py`, see
`--help` for running one part) fetches the pinned corpora into `bench/.cache/`
and rewrites the sections below.

- Corpora: PyPI sdists {corpora}, fetched once by `bench/corpora.py` with
  `pip download --no-deps --no-binary :all: NAME==VER -d bench/.cache/sdists`
  and unpacked as they are into `bench/.cache/corpora/NAME-VER/`.
- Speed and size (`bench/perf.py`): cold and no-op indexing, recall latency
  in-process and over the daemon, didChange → recall latency against the real
  `ctxls serve` over stdio, peak RSS, index size.
- Retrieval quality (`bench/quality.py`, set built by `bench/dataset.py`):
  CodeSearchNet-style: docstrings of functions are removed from a copy of each
  corpus, and their first sentence must find the function. The query set is
  saved as `bench/.cache/dataset/NAME-VER.json` for reuse
  (`dataset.build_dataset(name)`).
- Semantic tier (`bench/semantic.py`, issue 3): BM25, dense-only and hybrid on
  the same set with every copy fully embedded (stores cached in
  `bench/.cache/semantic/`), the fusion grid, embedding-text variants, and
  speed and memory with embeddings on.
- Each part also runs alone: `.venv/bin/python bench/perf.py --help`,
  `.venv/bin/python bench/quality.py --help`, `.venv/bin/python bench/semantic.py --help`.
"""


def _marker(part: str, edge: str) -> str:
    return f"<!-- bench:{part}:{edge} -->"


def _run(*cmd: str) -> str:
    try:
        return subprocess.run(cmd, capture_output=True, text=True, cwd=REPO).stdout.strip()
    except OSError:
        return ""


def machine() -> str:
    cpu = next((line.split(":", 1)[1].strip() for line in
                Path("/proc/cpuinfo").read_text().splitlines() if line.startswith("model name")),
               platform.processor() or "unknown")
    mem_kb = next((int(line.split()[1]) for line in Path("/proc/meminfo").read_text().splitlines()
                   if line.startswith("MemTotal:")), 0)
    return (f"nproc {_run('nproc')}, {cpu}, "
            f"{mem_kb / 1024 / 1024:.0f} GiB RAM, Linux {platform.release()}, "
            f"Python {platform.python_version()}, SQLite {sqlite3.sqlite_version}")


def revision() -> str:
    commit = _run("git", "rev-parse", "--short", "HEAD") or "unknown"
    return commit + (" + uncommitted changes" if _run("git", "status", "--porcelain") else "")


def command() -> str:
    python = Path(sys.executable)
    try:
        python = python.relative_to(REPO)
    except ValueError:
        pass
    return " ".join([str(python), "bench/run.py", *sys.argv[1:]])


def header(date: str) -> str:
    return "\n".join([
        f"- Date: {date}",
        f"- Machine: {machine()}; load average at start {os.getloadavg()[0]:.2f}",
        f"- Revision: {revision()}",
        f"- Command: `{command()}`"])


def perf_section(report: perf.PerfReport, date: str) -> str:
    django = report.cold.get("django")
    change = report.daemon.changes[0].latency
    rows = [("django cold index", "≤ 20 s", django and f"{django.seconds:.2f} s",
             django and django.seconds <= 20),
            ("django no-op re-index", "≤ 0.3 s", django and f"{django.noop_first:.3f} s",
             django and django.noop_first <= 0.3),
            ("recall p50 (in-process)", "≤ 10 ms", f"{report.recall['all'].p50:.1f} ms",
             report.recall["all"].p50 <= 10),
            ("didChange → recall p95 (daemon)", "≤ 50 ms", f"{change.p95:.1f} ms", change.p95 <= 50)]
    targets = ["| target | goal | measured | met |", "|---|---|---:|---|"]
    targets += [f"| {name} | {goal} | {value or 'not run'} | "
                f"{'not run' if value is None else 'yes' if met else '**no**'} |"
                for name, goal, value, met in rows]
    return "\n".join(["## Speed and size", "", header(date), "", *targets, "",
                      perf.markdown(report)])


def quality_section(report: quality.QualityReport, date: str) -> str:
    rules = (f"Queries: functions and methods whose docstring's first sentence has at least "
             f"{dataset.MIN_QUERY_WORDS} words, not dunder, no \"test\" in the name, at "
             f"least {dataset.MIN_BODY_LINES} lines besides the docstring; sentences "
             f"shared by several functions dropped; at most "
             f"{dataset.MAX_QUERIES_PER_CORPUS} per corpus; dev/test split by a hash of the "
             f"target. A hit counts when its path and symbol are the target's (any part of a split "
             f"function). Ranking through `lexical_search(conn, \"code\", query, {quality.K}, config)`.")
    return "\n".join(["## Retrieval quality (lexical ranking)", "", header(date), "", rules, "",
                      quality.markdown(report)])


def semantic_section(report: semantic.SemanticReport, date: str) -> str:
    return "\n".join(["## Semantic tier (issue 3)", "", header(date), "", semantic.markdown(report)])


def history_row(date: str, perf_report: perf.PerfReport | None,
                quality_report: quality.QualityReport | None) -> str:
    cells = [date, revision()]
    if perf_report is not None and "django" in perf_report.cold:
        cold = perf_report.cold["django"]
        cells += [f"{cold.seconds:.1f} s", f"{cold.noop_first:.3f} s",
                  f"{perf_report.recall['all'].p50:.1f} ms",
                  f"{perf_report.daemon.changes[0].latency.p95:.0f} ms"]
    else:
        cells += ["–"] * 4
    if quality_report is not None:
        chosen = quality_report.chosen
        cells += [chosen.name, f"{quality.macro(chosen, 'test'):.3f}"]
    else:
        cells += ["–"] * 2
    return "| " + " | ".join(cells) + " |"


_HISTORY_HEADER = ("| date | revision | django cold | no-op | recall p50 | didChange p95 | "
                   "chosen ranking | test MRR@10 (mean) |\n|---|---|---:|---:|---:|---:|---|---:|")


def update_benchmarks_md(sections: dict[str, str], row: str) -> None:
    text = BENCHMARKS_MD.read_text(encoding="utf-8") if BENCHMARKS_MD.exists() else ""
    if not text:
        text = _INTRO.format(corpora=", ".join(f"`{n}=={v}`" for n, v in CORPORA.items()))
        for part in PARTS:
            text += f"\n{_marker(part, 'start')}\n_not run yet_\n{_marker(part, 'end')}\n"
        text += f"\n## History\n\n{_marker('history', 'start')}\n{_HISTORY_HEADER}\n" \
                f"{_marker('history', 'end')}\n"
    for part, body in sections.items():
        block = f"{_marker(part, 'start')}\n{body}\n{_marker(part, 'end')}"
        pattern = re.compile(re.escape(_marker(part, "start")) + ".*?" + re.escape(_marker(part, "end")),
                             re.S)
        text = pattern.sub(lambda _: block, text) if pattern.search(text) else text + "\n" + block + "\n"
    end = _marker("history", "end")
    text = text.replace(end, f"{row}\n{end}") if end in text else text + "\n" + row + "\n"
    BENCHMARKS_MD.write_text(text, encoding="utf-8")


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", choices=PARTS, help="run one part (default: all)")
    parser.add_argument("--queries", type=int, default=perf.QUERIES, help="recall latency queries")
    parser.add_argument("--edits", type=int, default=perf.EDITS, help="didChange edits per run")
    parser.add_argument("--no-write", action="store_true", help="leave BENCHMARKS.md alone")
    args = parser.parse_args(argv)
    date = _run("date", "-u")
    started = time.perf_counter()
    sections: dict[str, str] = {}
    perf_report = quality_report = None
    if args.only in (None, "perf"):
        perf_report = perf.run_perf(None, args.queries, args.edits, log=log)
        sections["perf"] = perf_section(perf_report, date)
    if args.only in (None, "quality"):
        quality_report = quality.run_quality(None, log=log)
        sections["quality"] = quality_section(quality_report, date)
    if args.only in (None, "semantic"):
        sections["semantic"] = semantic_section(semantic.run_semantic(log=log), date)
    print("\n\n".join(sections.values()))
    if not args.no_write:
        update_benchmarks_md(sections, history_row(date, perf_report, quality_report))
        log(f"updated {BENCHMARKS_MD.relative_to(REPO)}")
    log(f"bench: done in {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
