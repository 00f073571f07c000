"""Impact benchmarks (issue 4; not run in CI).

    .venv/bin/pip install -e ".[bench]"          # jedi, the ground truth
    .venv/bin/python bench/impact.py             # quality and latency, prints Markdown
    .venv/bin/python bench/impact.py --write     # ... and replaces the section in BENCHMARKS.md
    .venv/bin/python bench/impact.py --only quality|latency

Quality (requests, flask): every function and method the index finds in the
sdist. Ground truth: ``jedi.Script.get_references`` at the definition's
name, keeping references that are calls (the name is what a call or a
decorator calls; a syntactic check with tree-sitter). Against it:

* caller-file recall: of the (symbol, file) pairs where jedi sees a call,
  the share where ctxls lists a caller (confirmed or not);
* false isolations: symbols jedi sees called that ctxls reports uncalled;
* caller precision: of the (symbol, file) pairs where ctxls lists a call,
  the share jedi agrees with; for all callers and for confirmed ones.
  jedi misses calls it cannot infer (untyped receivers, dynamic dispatch), so
  this undercounts ctxls's precision; a sample of disagreements is printed.

jedi's answers are cached in ``bench/.cache/impact/`` (they take minutes).

Latency (django): ``analyze(engine, symbol)`` in-process on a warm index
for symbols sampled uniformly from every definition of the repository
(seeded), p50/p95/max; then hot names (``get``, ``run``, ...), which hit the
time budget and answer capped.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import random
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ctxls.impact import analysis, syntax
from ctxls.impact.index_view import Definition
from ctxls.impact.resolve import Resolver
from ctxls.index.engine import Engine, EngineOptions

from corpora import CORPORA, corpus_path

BENCH_DIR = Path(__file__).resolve().parent
REPO = BENCH_DIR.parent
CACHE = BENCH_DIR / ".cache" / "impact"
BENCHMARKS_MD = REPO / "BENCHMARKS.md"
SECTION_START, SECTION_END = "<!-- impact:start -->", "<!-- impact:end -->"
QUALITY_CORPORA = ("requests", "flask")
HOT_SYMBOLS = ("get", "run", "save", "__init__", "filter", "as_sql", "clean", "add")
Pair = tuple[str, str]  # (definition key "path::symbol", caller file)


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def open_engine(root: Path, store_dir: Path) -> Engine:
    """A fresh private store per run: the corpus tree may be shared with other benches."""
    engine = Engine(root, EngineOptions(db_path=str(store_dir / f"{root.name}.db")))
    started = time.perf_counter()
    stats = engine.cold_index()
    log(f"indexed {root.name}: {stats.files} files in {time.perf_counter() - started:.1f}s")
    return engine


def all_definitions(engine: Engine, kinds: tuple[str, ...], language: str | None) -> list[Definition]:
    marks = ",".join("?" * len(kinds))
    sql = ("SELECT f.path, f.language, c.symbol, c.symbol_kind, min(c.start_line) s, max(c.end_line) e "
           "FROM chunks c JOIN files f ON f.id = c.file_id WHERE c.kind = 'code' AND c.symbol IS NOT NULL "
           f"AND c.symbol_kind IN ({marks})" + (" AND f.language = ?" if language else "")
           + " GROUP BY f.path, c.symbol ORDER BY f.path, s")
    rows = engine.store.reader().execute(sql, (*kinds, *([language] if language else []))).fetchall()
    return [Definition(r["path"], r["symbol"], r["symbol_kind"], r["language"], r["s"], r["e"]) for r in rows]


# -- quality ---------------------------------------------------------------------


def is_call(resolver: Resolver, path: str, line: int, column: int, name: str) -> bool:
    """Is the reference at (0-based line, column) something a call or decorator calls?"""
    sf = resolver.source(path)
    if sf is None or sf.family is None or line >= len(sf.lines):
        return False
    node = sf.node_at(line, column, column + len(name))
    if node is None or not syntax.is_identifier(node) or syntax.text_of(node) != name:
        return False
    expression, _ = syntax.member_parts(sf.family, node)
    return syntax.use_kind(sf.family, expression) in ("call", "decorator")


def jedi_calls(root: Path, engine: Engine, definitions: list[Definition]) -> dict[str, list[list]]:
    """definition key -> [[path, line, column], ...] of the calls jedi finds (cached)."""
    import jedi

    CACHE.mkdir(parents=True, exist_ok=True)
    cache = CACHE / f"jedi-{root.name}-{jedi.__version__}.json"
    known: dict[str, list[list]] = json.loads(cache.read_text()) if cache.exists() else {}
    project = jedi.Project(root, added_sys_path=[str(root / "src")])
    resolver = Resolver(engine, syntax.SourceCache())
    todo = [d for d in definitions if f"{d.path}::{d.symbol}" not in known]
    started = time.perf_counter()
    for done, definition in enumerate(todo, 1):
        sf = resolver.source(definition.path)
        name = resolver.declaration_name(sf, definition)
        calls: list[list] = []
        if sf is not None and name is not None:
            row = name.start_point.row
            column = sf.character_from_byte(row, name.start_point.column)
            try:
                references = jedi.Script(path=str(root / definition.path), project=project) \
                    .get_references(row + 1, column)
            except Exception as exc:  # jedi's own bugs: counted, not fatal
                log(f"jedi failed on {definition.path}::{definition.symbol}: {exc}")
                references = []
            for ref in references:
                if ref.is_definition() or ref.module_path is None or ref.line is None:
                    continue
                try:
                    rel = Path(ref.module_path).resolve().relative_to(root.resolve()).as_posix()
                except ValueError:
                    continue
                if is_call(resolver, rel, ref.line - 1, ref.column, definition.name):
                    calls.append([rel, ref.line - 1, ref.column])
        known[f"{definition.path}::{definition.symbol}"] = calls
        if done % 100 == 0 or done == len(todo):
            cache.write_text(json.dumps(known))
            log(f"  jedi {done}/{len(todo)} ({time.perf_counter() - started:.0f}s)")
    return known


def quality(name: str, store_dir: Path) -> dict:
    root = corpus_path(name)
    engine = open_engine(root, store_dir)
    definitions = all_definitions(engine, ("function", "method"), "python")
    truth = jedi_calls(root, engine, definitions)
    jedi_pairs: set[Pair] = set()
    ours_all: set[Pair] = set()
    ours_calls: set[Pair] = set()
    ours_confirmed_calls: set[Pair] = set()
    called_by_jedi: set[str] = set()
    isolated: list[str] = []
    timings = []
    for definition in definitions:
        key = f"{definition.path}::{definition.symbol}"
        jedi_files = {path for path, _, _ in truth[key]}
        jedi_pairs |= {(key, f) for f in jedi_files}
        started = time.perf_counter()
        result = analysis.analyze(engine, definition.symbol, definition.path)
        timings.append(time.perf_counter() - started)
        callers = result.callers if result is not None else []
        ours_all |= {(key, c.path) for c in callers}
        ours_calls |= {(key, c.path) for c in callers if c.kind in ("call", "decorator")}
        ours_confirmed_calls |= {(key, c.path) for c in callers if c.kind in ("call", "decorator") and c.confirmed}
        if jedi_files:
            called_by_jedi.add(key)
            if not callers:
                isolated.append(key)
    engine.close()

    def ratio(hit: int, total: int) -> float:
        return round(hit / total, 3) if total else math.nan

    missed = sorted(jedi_pairs - ours_all)
    extra = sorted(ours_confirmed_calls - jedi_pairs)
    return {
        "corpus": f"{name}=={CORPORA[name]}",
        "definitions": len(definitions),
        "called_by_jedi": len(called_by_jedi),
        "jedi_pairs": len(jedi_pairs),
        "recall": ratio(len(jedi_pairs & ours_all), len(jedi_pairs)),
        "recall_confirmed": ratio(len(jedi_pairs & {p for p in ours_confirmed_calls}), len(jedi_pairs)),
        "false_isolations": len(isolated),
        "precision": ratio(len(ours_calls & jedi_pairs), len(ours_calls)),
        "precision_confirmed": ratio(len(ours_confirmed_calls & jedi_pairs), len(ours_confirmed_calls)),
        "our_call_pairs": len(ours_calls),
        "our_confirmed_pairs": len(ours_confirmed_calls),
        "p50_ms": round(statistics.median(timings) * 1000, 1),
        "missed": missed[:15],
        "isolated": isolated[:15],
        "extra_confirmed": extra[:15],
    }


# -- latency -------------------------------------------------------------------


def cpu_seconds() -> float:
    """CPU time of this process and its finished children (rg): unlike wall
    time, it does not grow when other jobs load the machine."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


def latency(samples: int, seed: int, store_dir: Path) -> dict:
    root = corpus_path("django")
    engine = open_engine(root, store_dir)
    definitions = all_definitions(engine, ("function", "method", "class"), None)
    rng = random.Random(seed)
    chosen = rng.sample(definitions, samples)
    for warm in rng.sample(definitions, 10):  # first parses, the resolver cache, rg in page cache
        analysis.analyze(engine, warm.symbol)
    times: list[tuple[float, str, int]] = []
    cpu_ms: list[float] = []
    for definition in chosen:
        started, cpu_started = time.perf_counter(), cpu_seconds()
        result = analysis.analyze(engine, definition.symbol)
        elapsed = time.perf_counter() - started
        cpu_ms.append((cpu_seconds() - cpu_started) * 1000)
        times.append((elapsed * 1000, definition.symbol, result.mention_kinds.get("unchecked", 0) if result else 0))
    hot = []
    for name in HOT_SYMBOLS:
        started = time.perf_counter()
        result = analysis.analyze(engine, name)
        elapsed = (time.perf_counter() - started) * 1000
        hot.append({"symbol": name, "ms": round(elapsed), "definitions": len(result.definitions) if result else 0,
                    "callers": len(result.callers) if result else 0,
                    "unchecked": result.mention_kinds.get("unchecked", 0) if result else 0,
                    "risk": result.risk if result else None})
    engine.close()
    ms = [t for t, _, _ in times]
    slowest = sorted(times, reverse=True)[:5]
    return {
        "corpus": f"django=={CORPORA['django']}",
        "definitions": len(definitions),
        "samples": samples,
        "seed": seed,
        "p50_ms": round(statistics.median(ms), 1),
        "p95_ms": round(percentile(ms, 0.95), 1),
        "cpu_p50_ms": round(statistics.median(cpu_ms), 1),
        "cpu_p95_ms": round(percentile(cpu_ms, 0.95), 1),
        "max_ms": round(max(ms), 1),
        "capped": sum(1 for _, _, unchecked in times if unchecked),
        "slowest": [(round(t), s) for t, s, _ in slowest],
        "hot": hot,
    }


# -- report ----------------------------------------------------------------------


def markdown(quality_rows: list[dict], latency_row: dict | None, command: str, load: tuple) -> str:
    revision = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True).stdout.strip() or "unknown"
    lines = ["## Impact (issue 4)", "",
             f"Run {datetime.date.today().isoformat()} at revision `{revision}` with `{command}` "
             f"on {os.cpu_count()} cores; load average before/after: "
             f"{load[0]:.2f} / {load[1]:.2f} (other engineers' jobs share the machine). "
             "Method: see `bench/impact.py`'s docstring.", ""]
    if quality_rows:
        lines += ["Callers against jedi's call references (targets: recall 1.00, false isolations 0, "
                  "precision >= 0.90):", "",
                  "| corpus | functions+methods | called (jedi) | caller-file recall | false isolations "
                  "| precision, all callers | precision, confirmed | recall, confirmed only | p50 ms |",
                  "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for q in quality_rows:
            lines.append(f"| {q['corpus']} | {q['definitions']} | {q['called_by_jedi']} | {q['recall']} "
                         f"| {q['false_isolations']} | {q['precision']} | {q['precision_confirmed']} "
                         f"| {q['recall_confirmed']} | {q['p50_ms']} |")
        lines += ["",
                  "Reading it: \"all callers\" includes the unconfirmed ones (a method called on a "
                  "receiver of unknown type whose name other classes or builtin types share, like "
                  "`client.get(...)`), listed on purpose because missing a caller is the failure that "
                  "matters; the risk bucket and `confirmed` rest on the confirmed ones. jedi itself "
                  "misses calls it cannot infer (pytest fixtures, results of `.copy()`), so some "
                  "\"wrong\" confirmed callers are real calls. Samples:", ""]
        for q in quality_rows:
            for label, pairs in (("missed", q["missed"]), ("isolated", [(k, "") for k in q["isolated"]]),
                                 ("confirmed, jedi disagrees", q["extra_confirmed"])):
                if pairs:
                    shown = ", ".join(f"`{key}` in `{file}`" if file else f"`{key}`" for key, file in pairs[:5])
                    lines.append(f"- {q['corpus']}, {label}: {shown}")
        lines.append("")
    if latency_row:
        l = latency_row
        lines += [f"Latency on {l['corpus']} ({l['definitions']} definitions), `analyze(engine, symbol)` "
                  f"in-process, warm index, {l['samples']} symbols sampled with seed {l['seed']} "
                  "(targets: p50 <= 150 ms, p95 <= 500 ms; hot symbols < 2 s):", "",
                  "| p50 ms | p95 ms | max ms | answers capped | CPU p50 ms | CPU p95 ms |",
                  "|---:|---:|---:|---:|---:|---:|",
                  f"| {l['p50_ms']} | {l['p95_ms']} | {l['max_ms']} | {l['capped']} | {l['cpu_p50_ms']} "
                  f"| {l['cpu_p95_ms']} |", "",
                  "CPU time is this process's plus rg's (user + system): what a request costs "
                  "whatever else runs; wall time is what the caller waits on this machine, "
                  "and the time budgets are wall time (1.2 s for files importing the definitions, "
                  "0.4 s for the others, 0.3 s more for callees), so a loaded machine caps more "
                  "answers. A capped answer counts the lines it left as `unchecked` mentions and "
                  "says so in a hedge.", "",
                  "Slowest samples: " + ", ".join(f"`{s}` {t} ms" for t, s in l["slowest"]) + ".", "",
                  "| hot symbol | ms | definitions | callers listed | lines left unchecked | risk |",
                  "|---|---:|---:|---:|---:|---|"]
        lines += [f"| `{h['symbol']}` | {h['ms']} | {h['definitions']} | {h['callers']} | {h['unchecked']} "
                  f"| {h['risk']} |" for h in l["hot"]]
        lines.append("")
    return "\n".join(lines)


def write_section(section: str) -> None:
    """Replace this benchmark's own section of BENCHMARKS.md (other sections are other benches')."""
    block = f"{SECTION_START}\n{section}\n{SECTION_END}"
    text = BENCHMARKS_MD.read_text(encoding="utf-8") if BENCHMARKS_MD.exists() else "# Benchmarks\n"
    pattern = re.compile(re.escape(SECTION_START) + ".*?" + re.escape(SECTION_END), re.S)
    if pattern.search(text):
        text = pattern.sub(lambda _: block, text)
    elif "\n## History" in text:  # the run history stays last
        text = text.replace("\n## History", f"\n{block}\n\n## History", 1)
    else:
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    BENCHMARKS_MD.write_text(text, encoding="utf-8")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", choices=("quality", "latency"))
    parser.add_argument("--symbols", type=int, default=300)
    parser.add_argument("--seed", type=int, default=4)
    parser.add_argument("--write", action="store_true", help="update BENCHMARKS.md")
    args = parser.parse_args()
    load_before = os.getloadavg()[0]
    quality_rows: list[dict] = []
    latency_row = None
    with tempfile.TemporaryDirectory(prefix="ctxls-impact-bench-") as store_dir:
        if args.only in (None, "quality"):
            for name in QUALITY_CORPORA:
                row = quality(name, Path(store_dir))
                quality_rows.append(row)
                log(json.dumps(row, indent=1))
        if args.only in (None, "latency"):
            latency_row = latency(args.symbols, args.seed, Path(store_dir))
            log(json.dumps(latency_row, indent=1))
    command = "python bench/impact.py" + "".join(f" {a}" for a in sys.argv[1:])
    section = markdown(quality_rows, latency_row, command, (load_before, os.getloadavg()[0]))
    print(section)
    if args.write:
        write_section(section)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
