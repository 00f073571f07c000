"""The semantic tier (issue 3): quality, embedding text, speed and memory with embeddings on.

    .venv/bin/python bench/semantic.py build [CORPUS ...]   # embed the stores (cached)
    .venv/bin/python bench/semantic.py quality              # BM25 / dense / hybrid, fusion grid
    .venv/bin/python bench/semantic.py texts                # embedding-text variants
    .venv/bin/python bench/semantic.py perf                 # latency, didChange, vector freshness
    .venv/bin/python bench/semantic.py recall               # in-process hybrid recall latency only

``--embed-model NAME`` (before the verb) runs with that embedModel, on stores
of its own (``NAME-VER+MODEL``).

Stores: each corpus's stripped copy (bench/dataset.py) is indexed and fully
embedded (``Engine.embed_pending()``) once, in a child process that reports
its own throughput and peak RSS, into ``bench/.cache/semantic/NAME-VER/``
(``index.db`` + ``vectors.usearch`` + ``build.json``). A later run re-opens
the store: the pass is a no-op and nothing is re-embedded unless the
embedding text or the model changed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import re
import resource
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Callable

from ctxls.index.embed_text import EMBED_TEXT_VERSION, MAX_EMBED_CHARS, embedding_text
from ctxls.index.engine import Engine, EngineOptions
from ctxls.index.model import content_hash
from ctxls.index.ranking import (HybridCandidates, RankingConfig, fused_scores,
                                 hybrid_candidates, hybrid_search, lexical_search)
from ctxls.index.tokenize import query_terms

import perf
from quality import K, Metrics, target_rank
from corpora import CACHE_DIR, CORPORA, QUALITY_CORPORA, corpus_id
from dataset import Query, build_dataset

SEMANTIC_DIR = CACHE_DIR / "semantic"


def _proc_status_kb(field: str, pid: str = "self") -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def _reset_peak_rss() -> bool:
    """Reset VmHWM to the current RSS (Linux >= 4.0), so the next peak is
    the coming work's own."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return True
    except OSError:
        return False


# -- building the embedded stores ------------------------------------------------

@dataclass
class Build:
    corpus: str
    chunks: int
    vectors: int  # distinct embedding texts
    index_seconds: float
    embed_seconds: float  # embed_pending(): until the backlog is empty
    embedded: int  # vectors added by this build (0: reused from the cache)
    rss_before_embed_kb: int  # after the pass, before the model loads
    peak_rss_embed_kb: int  # VmHWM reset before embed_pending(): its own peak
    ru_maxrss_kb: int  # the whole process, indexing included
    load_start: float
    load_end: float
    embed_text_version: int
    samples: list[tuple[float, int, int]]  # (seconds, vectors added, RSS kB) every ~10 s

    @property
    def full(self) -> bool:
        """Embedded from an empty backlog (not topped up after an interrupted build)."""
        return self.embedded == self.vectors

    @property
    def chunks_per_s(self) -> float:
        return self.chunks / self.embed_seconds if self.embed_seconds and self.full else 0.0

    @property
    def vectors_per_s(self) -> float:
        return self.embedded / self.embed_seconds if self.embed_seconds else 0.0


# The engine's embedModel option (--embed-model; None: the default model).
_embed_model: str | None = None


def store_dir(name: str) -> Path:
    """Another model's stores are apart: ``NAME-VER+MODEL``."""
    return SEMANTIC_DIR / (corpus_id(name) + (f"+{_embed_model}" if _embed_model else ""))


def open_engine(name: str) -> Engine:
    """An engine (embeddings on) over the cached store of corpus ``name``."""
    ds = build_dataset(name)
    folder = store_dir(name)
    folder.mkdir(parents=True, exist_ok=True)
    return Engine(ds.tree, EngineOptions(embeddings=True, db_path=str(folder / "index.db"),
                                         embed_model=_embed_model))


def _build_child(name: str) -> None:
    """Index and fully embed one corpus's store; prints a Build as JSON."""
    load_start = os.getloadavg()[0]
    engine = open_engine(name)
    t0 = time.perf_counter()
    engine.index()
    index_seconds = time.perf_counter() - t0
    engine.embed_fast_tier()  # beside a transformer: the figures below are the model's own
    rss_before = _proc_status_kb("VmRSS")
    _reset_peak_rss()
    samples: list[tuple[float, int, int]] = []
    done = threading.Event()
    t0 = time.perf_counter()

    progress = store_dir(name) / "build.progress"  # a build's samples so far, one per line

    def sample() -> None:
        with progress.open("w", encoding="utf-8") as out:
            while not done.wait(10.0):
                semantic = engine.semantic
                samples.append((round(time.perf_counter() - t0, 1),
                                semantic.embedded_total if semantic else 0,
                                _proc_status_kb("VmRSS")))
                out.write(json.dumps([*samples[-1], _proc_status_kb("VmHWM"),
                                      round(os.getloadavg()[0], 2)]) + "\n")
                out.flush()

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    embedded = engine.embed_pending()
    embed_seconds = time.perf_counter() - t0
    done.set()
    peak = _proc_status_kb("VmHWM")
    status = engine.status()
    assert status["pending"] == 0, status
    build = Build(corpus_id(name), status["chunks"], status["vectors"], index_seconds,
                  embed_seconds, embedded, rss_before, peak,
                  resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, load_start,
                  os.getloadavg()[0], EMBED_TEXT_VERSION, samples)
    engine.close()
    print(json.dumps(asdict(build)))


def build_store(name: str, log=print) -> Build:
    """The cached, fully embedded store of ``name``: built on first use, else
    re-opened and topped up. Returns the measurement of the build that
    embedded it (kept in build.json)."""
    record = store_dir(name) / "build.json"
    model = ["--embed-model", _embed_model] if _embed_model else []
    out = subprocess.run([sys.executable, __file__, *model, "--build-child", name], check=True,
                         capture_output=True, text=True).stdout
    build = Build(**json.loads(out))
    if build.embedded or not record.is_file():
        record.write_text(json.dumps(asdict(build), indent=1), encoding="utf-8")
        log(f"semantic: built {build.corpus}: {build.chunks} chunks, {build.embedded} embedded in "
            f"{build.embed_seconds:.0f}s ({build.chunks_per_s:.1f} chunks/s), peak RSS "
            f"{build.peak_rss_embed_kb / 1024:.0f} MiB")
        return build
    cached = json.loads(record.read_text(encoding="utf-8"))
    log(f"semantic: {build.corpus} store up to date (built in {cached['embed_seconds']:.0f}s)")
    return Build(**cached)


# -- retrieval quality: BM25, dense-only, hybrid ----------------------------------

DENSE_WEIGHTS = (0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.95)
FUSION_POOLS = (30, 50, 100)
RRF_K = (10, 60)
# RankingConfig.identifier_dense_weight, tried on dev's function-name queries.
IDENTIFIER_WEIGHTS = (0.1, 0.2, 0.3, 0.4, 0.6)


def gather(conn, semantic, vector, terms: list[str], config: RankingConfig, pool: int,
           rows: dict[int, tuple]) -> HybridCandidates:
    """One query's fusion candidates at one pool size, exactly as
    ``hybrid_search`` gathers them; ``rows`` (chunk id -> (path, symbol,
    start_line)) is filled in."""
    candidates = hybrid_candidates(conn, "code", lambda: vector, terms, pool, config, semantic)
    for cid, row in candidates.rows.items():
        rows.setdefault(cid, (row[1], row[4], row[5]))
    return candidates


# Fusion methods tried on dev: (lexical, dense, weight, param) -> fused score per candidate.

def _fill(dense: dict[int, float | None]) -> dict[int, float]:
    known = sorted(v for v in dense.values() if v is not None)
    fill = known[len(known) // 2] if known else 0.0
    return {cid: fill if v is None else v for cid, v in dense.items()}


def fuse_linear(lexical, dense, weight, _param=None):
    """The library's linear fusion: w·cos + (1-w)·bm25/max bm25."""
    return fused_scores(lexical, dense, weight, fusion="linear")


def fuse_linear_cos_max(lexical, dense, weight, _param=None):
    """Both sides divided by the candidates' best: w·cos/max cos + (1-w)·bm25/max bm25."""
    cos = _fill(dense)
    top_cos = max(cos.values(), default=0.0) or 1.0
    top_lex = max(lexical.values(), default=0.0) or 1.0
    return {cid: weight * c / top_cos + (1 - weight) * lexical.get(cid, 0.0) / top_lex
            for cid, c in cos.items()}


def fuse_min_max(lexical, dense, weight, _param=None):
    """The library's min-max fusion: both sides min-max scaled over the candidates."""
    return fused_scores(lexical, dense, weight, fusion="min-max")


def fuse_rrf(lexical, dense, weight, k):
    """Weighted reciprocal-rank fusion: w/(k + dense rank) + (1-w)/(k + BM25 rank);
    a candidate matching no query term gets no BM25 term."""
    cos = _fill(dense)
    dense_rank = {cid: r for r, cid in enumerate(sorted(cos, key=lambda c: -cos[c]), 1)}
    lex_rank = {cid: r for r, cid in enumerate(sorted(lexical, key=lambda c: -lexical[c]), 1)}
    return {cid: weight / (k + dense_rank[cid])
            + ((1 - weight) / (k + lex_rank[cid]) if cid in lex_rank else 0.0) for cid in cos}


FUSIONS = {
    "linear (w·cos + (1-w)·bm25/max)": (fuse_linear, (None,)),
    "linear, cosine / max cosine": (fuse_linear_cos_max, (None,)),
    "min-max both sides": (fuse_min_max, (None,)),
    "weighted RRF": (fuse_rrf, RRF_K),
}
# RankingConfig.fusion -> its FUSIONS key.
LIBRARY_FUSIONS = {"linear": "linear (w·cos + (1-w)·bm25/max)", "min-max": "min-max both sides"}


def rank_of(scores: dict[int, float], rows: dict[int, tuple], q: Query) -> int | None:
    ranked = sorted(scores, key=lambda cid: (-scores[cid], rows[cid][0], rows[cid][2]))[:K]
    for rank, cid in enumerate(ranked, 1):
        if rows[cid][0] == q.path and rows[cid][1] == q.symbol:
            return rank
    return None


@dataclass
class Ranker:
    """One ranking's metrics: corpus id -> split -> Metrics."""

    name: str
    scores: dict[str, dict[str, Metrics]] = field(default_factory=dict)

    def macro(self, split: str) -> float:
        return statistics.fmean(s[split].mrr for s in self.scores.values())


@dataclass(frozen=True)
class Fusion:
    method: str  # a FUSIONS key
    param: Any  # RRF's k, else None
    pool: int
    weight: float

    def label(self) -> str:
        k = f", k {self.param}" if self.param is not None else ""
        return f"{self.method}{k}, w {self.weight:g}, pool {self.pool}"


# What hybrid_search shipped with before this benchmark.
SHIPPED_BEFORE = Fusion("linear (w·cos + (1-w)·bm25/max)", None, 50, 0.7)


@dataclass
class QualityReport:
    corpora: dict[str, tuple[int, int, int]]  # corpus id -> (queries, dev, test)
    builds: dict[str, Build]
    bm25_config: RankingConfig
    grid: dict[Fusion, float]  # dev macro MRR@10 of every fusion tried
    best_by_method: list[tuple[Fusion, Ranker]]  # dev winner of each method, dev and test
    before: Ranker  # SHIPPED_BEFORE, simulated
    chosen: Fusion  # the dev winner
    rankers: list[Ranker]  # BM25, dense-only, hybrid: through the library functions
    names: list[Ranker]  # the same on function-name queries (a guard, not a target)
    identifier_grid: dict[float, float]  # identifier_dense_weight -> dev macro MRR on names
    defaults: RankingConfig  # what hybrid_search ran with
    defaults_match: bool  # RankingConfig's defaults are the dev winner
    seconds: float


def _tie_key(f: Fusion) -> tuple:
    # Equal dev MRR: the method listed first, the smaller pool, the weight nearer 0.5.
    return (list(FUSIONS).index(f.method), f.pool, abs(f.weight - 0.5))


def run_quality(names: list[str] | None = None, log=print) -> QualityReport:
    names = names or list(QUALITY_CORPORA)
    started = time.perf_counter()
    builds = {name: build_store(name, log) for name in names}
    engines = {name: open_engine(name) for name in names}
    datasets = {name: build_dataset(name) for name in names}
    defaults = RankingConfig()
    try:
        for engine in engines.values():
            assert engine.semantic is not None and engine.semantic.ensure_loaded()
        # Candidates of every query at every pool size, once: fusions are pure functions of them.
        cands: dict[tuple[str, str, int], list[tuple[Query, HybridCandidates, dict]]] = {}
        for name in names:
            conn, semantic = engines[name].store.reader(), engines[name].semantic
            rows: dict[int, tuple] = {}
            t0 = time.perf_counter()
            for split in ("dev", "test"):
                for q in datasets[name].split(split):
                    vector = semantic.query_vector(q.query)
                    terms = query_terms(q.query)
                    for pool in FUSION_POOLS:
                        cands.setdefault((name, split, pool), []).append(
                            (q, gather(conn, semantic, vector, terms, defaults, pool, rows), rows))
            log(f"semantic: candidates of {datasets[name].corpus} in {time.perf_counter() - t0:.0f}s")

        def simulate(fusion: Fusion, split: str) -> Ranker:
            fn = FUSIONS[fusion.method][0]
            ranker = Ranker(fusion.label())
            for name in names:
                ranks = [rank_of(fn(c.lexical, c.dense, fusion.weight, fusion.param), rows, q)
                         for q, c, rows in cands[name, split, fusion.pool]]
                ranker.scores.setdefault(datasets[name].corpus, {})[split] = Metrics.of(ranks)
            return ranker

        def both_splits(fusion: Fusion) -> Ranker:
            ranker, test = simulate(fusion, "dev"), simulate(fusion, "test")
            for corpus, scores in ranker.scores.items():
                scores.update(test.scores[corpus])
            return ranker

        grid: dict[Fusion, float] = {}
        for method, (_, params) in FUSIONS.items():
            for param in params:
                for pool in FUSION_POOLS:
                    for weight in DENSE_WEIGHTS:
                        fusion = Fusion(method, param, pool, weight)
                        grid[fusion] = simulate(fusion, "dev").macro("dev")
            log(f"semantic: fusion grid {method} done")
        chosen = max(grid, key=lambda f: (round(grid[f], 6), tuple(-x for x in _tie_key(f))))
        best_by_method = []
        for method in FUSIONS:
            best = max((f for f in grid if f.method == method),
                       key=lambda f: (round(grid[f], 6), tuple(-x for x in _tie_key(f))))
            best_by_method.append((best, both_splits(best)))
        before = both_splits(SHIPPED_BEFORE)

        # The library's own functions, with RankingConfig's defaults.
        bm25 = Ranker("BM25 (lexical_search, RankingConfig defaults)")
        dense = Ranker(f"dense only (hybrid_search dense_only, pool {defaults.fusion_pool})")
        hybrid = Ranker(f"hybrid (hybrid_search, RankingConfig defaults: fusion {defaults.fusion}, "
                        f"dense_weight {defaults.dense_weight:g}, fusion_pool {defaults.fusion_pool})")
        name_rankers = [Ranker(r.name) for r in (bm25, dense, hybrid)]
        for name in names:
            conn, semantic = engines[name].store.reader(), engines[name].semantic
            corpus = datasets[name].corpus
            for split in ("dev", "test"):
                queries = datasets[name].split(split)
                for rankers, text_of in (((bm25, dense, hybrid), lambda q: q.query),
                                         (name_rankers, lambda q: q.symbol.rsplit(".", 1)[-1])):
                    runs = (lambda t: lexical_search(conn, "code", t, K, defaults),
                            lambda t: hybrid_search(conn, "code", t, K, defaults, semantic, True),
                            lambda t: hybrid_search(conn, "code", t, K, defaults, semantic))
                    for ranker, run in zip(rankers, runs):
                        ranker.scores.setdefault(corpus, {})[split] = Metrics.of(
                            [target_rank(run(text_of(q)), q) for q in queries])
            log(f"semantic: library rankings of {corpus} done")
        identifier_grid = {}
        for weight in IDENTIFIER_WEIGHTS:
            config = replace(defaults, identifier_dense_weight=weight)
            identifier_grid[weight] = statistics.fmean(Metrics.of([target_rank(hybrid_search(
                engines[n].store.reader(), "code", q.symbol.rsplit(".", 1)[-1], K, config,
                engines[n].semantic), q) for q in datasets[n].split("dev")]).mrr for n in names)
        log("semantic: identifier weights done")
        shipped = Fusion(LIBRARY_FUSIONS[defaults.fusion], None, defaults.fusion_pool,
                         defaults.dense_weight)
        return QualityReport(
            {datasets[n].corpus: (len(datasets[n].queries), len(datasets[n].split("dev")),
                                  len(datasets[n].split("test"))) for n in names},
            builds, defaults, grid, best_by_method, before, chosen, [bm25, dense, hybrid],
            name_rankers, identifier_grid, defaults, shipped == chosen,
            time.perf_counter() - started)
    finally:
        for engine in engines.values():
            engine.close()


def _metrics_header(corpora: list[str]) -> list[str]:
    return ["| ranking | mean MRR@10 | " + " | ".join(f"{c} MRR@10 | R@1 | R@10" for c in corpora)
            + " |", "|---|---:|" + "---:|---:|---:|" * len(corpora)]


def _metrics_row(ranker: Ranker, split: str, corpora: list[str], mark: str = "") -> str:
    cells = [f"{ranker.scores[c][split].mrr:.3f} | {ranker.scores[c][split].r1:.3f} | "
             f"{ranker.scores[c][split].r10:.3f}" for c in corpora]
    return f"| {ranker.name}{mark} | {ranker.macro(split):.3f} | " + " | ".join(cells) + " |"


def quality_markdown(report: QualityReport) -> str:
    corpora = list(report.corpora)
    out = ["### Stores (stripped copies, fully embedded)", "",
           "| corpus | queries (dev / test) | chunks | vectors | embedded in | chunks/s | "
           "peak RSS while embedding | load avg (start → end) |",
           "|---|---:|---:|---:|---:|---:|---:|---|"]
    for build in report.builds.values():
        total, dev, test = report.corpora[build.corpus]
        top_up = "" if build.full else f" (top-up of {build.embedded})"
        out.append(f"| {build.corpus} | {total} ({dev} / {test}) | {build.chunks} | {build.vectors} | "
                   f"{build.embed_seconds:.0f} s{top_up} | {build.chunks_per_s:.1f} | "
                   f"{build.peak_rss_embed_kb / 1024:.0f} MiB | {build.load_start:.1f} → "
                   f"{build.load_end:.1f} |")
    for split in ("dev", "test"):
        out += ["", f"### BM25, dense-only and hybrid on {split} (MRR@10 \\| R@1 \\| R@10)", "",
                *_metrics_header(corpora)]
        out += [_metrics_row(r, split, corpora) for r in report.rankers]
        out.append(_metrics_row(report.before, split, corpora, " (before: simulated)"))
    bm25, dense, hybrid = (r.macro("dev") for r in report.rankers)
    out += ["", f"Targets on dev (mean MRR@10): hybrid {hybrid:.3f} ≥ dense-only {dense:.3f}: "
            f"**{'yes' if hybrid >= dense else 'no'}**; hybrid ≥ BM25 {bm25:.3f} + 0.20 = "
            f"{bm25 + 0.2:.3f}: **{'yes' if hybrid >= bm25 + 0.2 else 'no'}**."]
    out += ["", "### Fusion methods (each at its best on dev; MRR@10 mean over corpora)", "",
            "| method | best on dev | dev MRR@10 | test MRR@10 |", "|---|---|---:|---:|"]
    for fusion, ranker in report.best_by_method:
        mark = " **(chosen)**" if fusion == report.chosen else ""
        out.append(f"| {fusion.method}{mark} | {fusion.label()} | {ranker.macro('dev'):.3f} | "
                   f"{ranker.macro('test'):.3f} |")
    for method, (_, params) in FUSIONS.items():
        for param in params:
            k = f", k = {param}" if param is not None else ""
            out += ["", f"Dev MRR@10 (mean over corpora), {method}{k}:", "",
                    "| dense_weight \\ fusion_pool | " + " | ".join(map(str, FUSION_POOLS)) + " |",
                    "|---|" + "---:|" * len(FUSION_POOLS)]
            for weight in DENSE_WEIGHTS:
                out.append(f"| {weight:g} | " + " | ".join(
                    f"{report.grid[Fusion(method, param, pool, weight)]:.4f}"
                    for pool in FUSION_POOLS) + " |")
    out += ["", "### Guard: function-name queries (the target's bare name; names repeat, so "
            "absolute values are low)", "", *_metrics_header(corpora)]
    for split in ("dev", "test"):
        out += [_metrics_row(replace(r, name=f"{r.name}, {split}"), split, corpora)
                for r in report.names]
    best = max(report.identifier_grid, key=lambda w: (round(report.identifier_grid[w], 6), -w))
    out += ["", "Function-name queries are identifier queries (`QueryShape.identifier`): hybrid "
            "uses `identifier_dense_weight` for them. Dev MRR@10 (mean over corpora) per weight: "
            + ", ".join(f"{w:g} → {m:.4f}" for w, m in report.identifier_grid.items())
            + f"; best {best:g}, default {report.defaults.identifier_dense_weight:g}."]
    d = report.defaults
    verdict = ("they are the dev winner" if report.defaults_match else
               f"**they are not the dev winner ({report.chosen.label()})**")
    out += ["", f"Dev winner: **{report.chosen.label()}**. RankingConfig defaults: "
            f"`fusion={d.fusion!r}, dense_weight={d.dense_weight:g}, fusion_pool={d.fusion_pool}` "
            f"— {verdict}. "
            f"Quality run took {report.seconds:.0f} s."]
    return "\n".join(out)

# -- the embedding text -----------------------------------------------------------

TEXT_CORPORA = ("requests", "flask")
SIGNATURE_BODY_CHARS = 1000
# Another text replaces the shipped one only if its dense-only mean dev MRR@10
# (the text only changes the dense side) is higher by this much, ~130 dev
# queries being noisy, and its hybrid dev MRR@10 is not lower.
MIN_TEXT_GAIN = 0.01
_DEF_LINE = re.compile(r"\s*(?:async\s+def|def|class)\b")
_DOCSTRING = re.compile(r"\A\s*[rRuUbB]{0,2}(\"\"\"|''')(?:.|\n)*?\1")
_CAMEL_EDGE = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def _words(name: str) -> str:
    """``src/flask/app.py`` -> ``src flask app py``; ``Flask.make_response`` -> ``Flask make response``."""
    return " ".join(_CAMEL_EDGE.sub(" ", re.sub(r"[^A-Za-z0-9]+", " ", name)).split())


def _signature_text(path: str, symbol: str | None, body: str, keep_docstring: bool = False) -> str:
    """Header, the def/class line(s) on one line, then the rest without blank
    lines (and without its docstring unless kept), cut at SIGNATURE_BODY_CHARS."""
    lines = body.split("\n")
    start = next((i for i, line in enumerate(lines) if _DEF_LINE.match(line)), None)
    signature, rest = "", body
    if start is not None:
        end = start
        while end < min(len(lines) - 1, start + 20) and not lines[end].rstrip().endswith(":"):
            end += 1
        signature = " ".join(line.strip() for line in lines[start:end + 1])
        rest = "\n".join(lines[end + 1:])
        if not keep_docstring:
            rest = _DOCSTRING.sub("", rest, count=1)
    rest = "\n".join(line for line in rest.split("\n") if line.strip())
    header = f"{path} {symbol}" if symbol else path
    return f"{header}\n{signature}\n{rest[:SIGNATURE_BODY_CHARS]}"


TEXT_VARIANTS: dict[str, Callable[[str, str | None, str], str]] = {
    "path symbol\\nbody": lambda path, symbol, body: (
        f"{path} {symbol}" if symbol else path) + "\n" + body[:MAX_EMBED_CHARS],
    "symbol\\nbody": lambda path, symbol, body: (
        f"{symbol}\n{body[:MAX_EMBED_CHARS]}" if symbol else body[:MAX_EMBED_CHARS]),
    "body": lambda path, symbol, body: body[:MAX_EMBED_CHARS],
    f"path symbol\\nsignature\\nbody without docstring, ≤ {SIGNATURE_BODY_CHARS} chars": _signature_text,
    # The same with the docstring kept: the set cannot reward a docstring (its
    # targets have none), so this tells what removing them does on its own.
    f"path symbol\\nsignature\\nbody, ≤ {SIGNATURE_BODY_CHARS} chars": lambda path, symbol, body: (
        _signature_text(path, symbol, body, keep_docstring=True)),
    # Truncation alone (any language), blank lines dropped as above.
    f"path symbol\\nbody, ≤ {SIGNATURE_BODY_CHARS} chars": lambda path, symbol, body: (
        f"{path} {symbol}" if symbol else path) + "\n" + "\n".join(
            line for line in body.split("\n") if line.strip())[:SIGNATURE_BODY_CHARS],
    "path and symbol as words\\nbody": lambda path, symbol, body: (
        f"{_words(path)} {_words(symbol or '')}".strip() + "\n" + body[:MAX_EMBED_CHARS]),
}

# Measured, but not eligible to ship. Every target of the set lost its
# docstring while distractors keep theirs (short or otherwise ineligible ones),
# so removing docstrings can only help here; in real code the target's own
# docstring is the text most like a question, and this set cannot see that.
NOT_SHIPPABLE = {f"path symbol\\nsignature\\nbody without docstring, ≤ {SIGNATURE_BODY_CHARS} chars":
                 "drops docstrings, which the set cannot reward"}


@dataclass
class TextVariant:
    name: str
    shipped: bool  # what embedding_text() produces for every chunk
    texts: int  # distinct texts embedded (code chunks of TEXT_CORPORA)
    mean_tokens: float  # after truncation to the model's 256
    embed_seconds: float
    dense: Ranker
    hybrid: Ranker


def _slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")[:60]


def _stamp(embedder) -> str:
    """semantic.SemanticIndex's model stamp: vectors of another stamp are dropped on open."""
    return f"{embedder.name}/{embedder.dim}/text-{EMBED_TEXT_VERSION}"


def variant_store(name: str, variant: str, embedder, log=print) -> tuple[Path, dict]:
    """A copy of ``name``'s store whose code chunks are embedded with
    ``variant``'s text (cached under bench/.cache/semantic/texts/)."""
    fn = TEXT_VARIANTS[variant]
    folder = SEMANTIC_DIR / "texts" / _slug(variant) / corpus_id(name)
    db, record = folder / "index.db", folder / "variant.json"
    if record.is_file() and db.is_file():
        info = json.loads(record.read_text(encoding="utf-8"))
        if info.get("variant") == variant and info.get("model") == embedder.name:
            return db, info
    build_store(name, log)
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    source = sqlite3.connect(store_dir(name) / "index.db")
    conn = sqlite3.connect(db)
    source.backup(conn)
    source.close()
    rows = conn.execute("SELECT c.id, f.path, c.symbol, c.text FROM chunks c "
                        "JOIN files f ON f.id = c.file_id WHERE c.kind = 'code'").fetchall()
    texts = {cid: fn(path, symbol, text) for cid, path, symbol, text in rows}
    shipped = all(texts[cid] == embedding_text(path, symbol, text) for cid, path, symbol, text in rows)
    by_hash = {content_hash(text): text for text in texts.values()}
    order = sorted(by_hash, key=lambda h: len(by_hash[h]))  # similar lengths share a batch
    tokens = [min(embedder.count_tokens(by_hash[h]) + 2, 256) for h in order]
    t0 = time.perf_counter()
    vectors = embedder.embed([by_hash[h] for h in order])
    seconds = time.perf_counter() - t0
    with conn:
        conn.executemany("UPDATE chunks SET embed_hash = ? WHERE id = ?",
                         [(content_hash(text), cid) for cid, text in texts.items()])
        conn.execute("DELETE FROM vectors")
        conn.executemany("INSERT INTO vectors(text_hash, vec) VALUES (?, ?)",
                         [(h, v.astype("float16").tobytes()) for h, v in zip(order, vectors)])
    conn.close()
    info = {"variant": variant, "model": embedder.name, "shipped": shipped, "texts": len(order),
            "mean_tokens": statistics.fmean(tokens), "embed_seconds": seconds,
            "load": os.getloadavg()[0]}
    record.write_text(json.dumps(info, indent=1), encoding="utf-8")
    log(f"semantic: text '{variant}' on {corpus_id(name)}: {len(order)} texts in {seconds:.0f}s")
    return db, info


@dataclass
class TextReport:
    corpora: list[str]
    variants: list[TextVariant]
    chosen: TextVariant
    defaults: RankingConfig
    seconds: float


def run_texts(names: list[str] | None = None, log=print) -> TextReport:
    from ctxls.index.embeddings import load_embedder

    names = names or list(TEXT_CORPORA)
    started = time.perf_counter()
    embedder = load_embedder()
    defaults = RankingConfig()
    variants = []
    for variant in TEXT_VARIANTS:
        dense, hybrid = Ranker(variant), Ranker(variant)
        texts = seconds = 0
        tokens = []
        shipped = True
        for name in names:
            db, info = variant_store(name, variant, embedder, log)
            texts += info["texts"]
            seconds += info["embed_seconds"]
            tokens.append((info["mean_tokens"], info["texts"]))
            shipped = shipped and info["shipped"]
            with sqlite3.connect(db) as conn:  # the current stamp, so the engine keeps the vectors
                conn.execute("UPDATE meta SET value = ? WHERE key = 'vector_model'", (_stamp(embedder),))
            ds = build_dataset(name)
            engine = Engine(ds.tree, EngineOptions(embeddings=True, db_path=str(db)))
            try:
                semantic = engine.semantic
                assert semantic is not None and semantic.ensure_loaded()
                assert semantic.vector_count() == info["texts"], "vectors dropped on open"
                conn = engine.store.reader()
                for split in ("dev", "test"):
                    queries = ds.split(split)
                    dense.scores.setdefault(ds.corpus, {})[split] = Metrics.of([target_rank(
                        hybrid_search(conn, "code", q.query, K, defaults, semantic, True), q)
                        for q in queries])
                    hybrid.scores.setdefault(ds.corpus, {})[split] = Metrics.of([target_rank(
                        hybrid_search(conn, "code", q.query, K, defaults, semantic), q)
                        for q in queries])
            finally:
                engine.close()
        mean_tokens = sum(m * n for m, n in tokens) / max(sum(n for _, n in tokens), 1)
        variants.append(TextVariant(variant, shipped, texts, mean_tokens, seconds, dense, hybrid))
        log(f"semantic: text '{variant}': dev dense {dense.macro('dev'):.3f}, "
            f"hybrid {hybrid.macro('dev'):.3f}")
    current = next((v for v in variants if v.shipped), variants[0])
    best = max((v for v in variants if v.name not in NOT_SHIPPABLE), key=lambda v: v.dense.macro("dev"))
    chosen = (best if best.dense.macro("dev") > current.dense.macro("dev") + MIN_TEXT_GAIN
              and best.hybrid.macro("dev") >= current.hybrid.macro("dev") else current)
    return TextReport([build_dataset(n).corpus for n in names], variants, chosen, defaults,
                      time.perf_counter() - started)


def texts_markdown(report: TextReport) -> str:
    out = [f"Corpora {', '.join(report.corpora)}; code chunks embedded by the bench itself "
           f"(distinct texts sorted by length, batches of 8), ranked through `hybrid_search` "
           f"with RankingConfig defaults (dense_weight {report.defaults.dense_weight:g}, "
           f"fusion_pool {report.defaults.fusion_pool}).", "",
           "| embedding text | texts | mean tokens | embed s (texts/s) | dense dev MRR@10 | "
           "hybrid dev MRR@10 | dense test | hybrid test | "
           + " | ".join(f"{c} hybrid dev MRR@10 \\| R@1 \\| R@10" for c in report.corpora) + " |",
           "|---|---:|---:|---:|---:|---:|---:|---:|" + "---:|" * len(report.corpora)]
    for v in report.variants:
        marks = ((" (shipped)" if v.shipped else "") + (" **(chosen)**" if v is report.chosen else "")
                 + (f" (not eligible: {NOT_SHIPPABLE[v.name]})" if v.name in NOT_SHIPPABLE else ""))
        per = [f"{v.hybrid.scores[c]['dev'].mrr:.3f} \\| {v.hybrid.scores[c]['dev'].r1:.3f} \\| "
               f"{v.hybrid.scores[c]['dev'].r10:.3f}" for c in report.corpora]
        out.append(f"| `{v.name}`{marks} | {v.texts} | {v.mean_tokens:.0f} | {v.embed_seconds:.0f} "
                   f"({v.texts / max(v.embed_seconds, 1e-9):.1f}) | {v.dense.macro('dev'):.3f} | "
                   f"{v.hybrid.macro('dev'):.3f} | {v.dense.macro('test'):.3f} | "
                   f"{v.hybrid.macro('test'):.3f} | " + " | ".join(per) + " |")
    out += ["", f"Rule: another text replaces the shipped one only if its mean dev dense-only "
            f"MRR@10 is higher by more than {MIN_TEXT_GAIN:g} (the text changes only the dense "
            f"side) and its dev hybrid MRR@10 is not lower. Texts run took {report.seconds:.0f} s."]
    return "\n".join(out)

# -- speed with embeddings on (django) -----------------------------------------------

PERF_CORPUS = "django"
QUERIES = perf.QUERIES
EDITS = perf.EDITS
FRESHNESS_EDITS = 30
WARMUP_QUERIES = 20
# The same edit as bench/perf.py, with the semantic tier on.
DAEMON_OPTIONS = {"debounceMs": perf.DEBOUNCE_MS, "embeddings": True}
FRESHNESS_TIMEOUT_S = 10.0
# Scenarios: (label, vectors kept in the daemon's store copy, recall queries and
# didChange edits run?, new-vector edits, their timeout in s).
#   all: the backlog is drained;
#   edited file: the backlog drains (every other file's vectors deleted) while
#     the edited file was embedded before;
#   none: nothing embedded yet, so the edited file's own backlog comes first.
SCENARIOS = (("backlog drained", "all", True, FRESHNESS_EDITS, FRESHNESS_TIMEOUT_S),
             ("backlog draining, edited file embedded", "edited file", True, FRESHNESS_EDITS,
              FRESHNESS_TIMEOUT_S),
             ("backlog draining, nothing embedded yet", "none", False, 1, 180.0))
FRESHNESS_POLL_S = 0.005


def _copy_store(name: str, dest: Path, keep: str) -> Path:
    """A throw-away copy of the cached store (the daemon edits it) keeping
    ``keep``'s vectors (see SCENARIOS): the daemon embeds the rest."""
    dest.mkdir(parents=True, exist_ok=True)
    db = dest / "index.db"
    source = sqlite3.connect(store_dir(name) / "index.db")
    conn = sqlite3.connect(db)
    source.backup(conn)
    source.close()
    if keep == "all":
        shutil.copyfile(store_dir(name) / "vectors.usearch", dest / "vectors.usearch")
    else:  # no ANN file: the daemon rebuilds it from the table
        with conn:
            conn.execute("DELETE FROM vectors WHERE text_hash NOT IN (SELECT c.embed_hash FROM "
                         "chunks c JOIN files f ON f.id = c.file_id WHERE f.path = ?)",
                         (perf.EDIT_PATH if keep == "edited file" else "",))
    conn.close()
    return db


def _timed_queries(n: int = QUERIES) -> tuple[list[tuple[str, str]], list[str]]:
    """bench/perf.py's recall queries, and warm-up queries that are not among
    them (so the query-vector cache never answers a timed query)."""
    picked = perf.recall_queries(n)
    used = {q for _, q in picked}
    rest = sorted(q.query for q in build_dataset(PERF_CORPUS).queries if q.query not in used)
    return picked, random.Random(3).sample(rest, WARMUP_QUERIES)


def recall_in_process(queries: int = QUERIES, log=print) -> dict[str, perf.Latency]:
    picked, warmup = _timed_queries(queries)
    engine = open_engine(PERF_CORPUS)
    try:
        assert engine._semantic_for("hybrid") is not None, "no vectors: recall would be BM25"
        result = perf.time_recall_in_process(engine, picked, warmup)
    finally:
        engine.close()
    log(f"semantic: in-process hybrid recall p50 {result['all'].p50:.1f} ms")
    return result


@dataclass
class DaemonSemantic:
    label: str
    vectors_at_start: int
    pending_at_start: int
    recall: perf.Latency
    change: perf.ChangeRun  # didChange -> top hit in recall, polls back to back
    freshness: perf.Latency  # didChange -> the edited chunk's new vector in the store
    freshness_failures: int
    freshness_timeout: float
    vectors_at_end: int
    pending_at_end: int
    vmhwm_kb: int
    load: tuple[float, float]


async def _daemon_semantic(label: str, root: Path, db: Path, queries: int, edits: int,
                           freshness_edits: int, freshness_timeout: float = FRESHNESS_TIMEOUT_S,
                           log=print) -> DaemonSemantic:
    load_start = os.getloadavg()[0]
    daemon = perf.BenchDaemon(root, db, DAEMON_OPTIONS)
    await daemon.start()
    store = sqlite3.connect(f"file:{db}?mode=ro", uri=True, check_same_thread=False)
    try:
        status = await daemon.request("ctxls/status", {})
        vectors_start, pending_start = status["vectors"], status["pending"]
        picked, warmup = _timed_queries(queries)
        recall = await daemon.time_recalls([q for _, q in picked], warmup)

        buffer = perf.MarkedBuffer(root)
        await daemon.open(buffer)
        change = await daemon.edit_run(buffer, edits, 0.0)
        log(f"semantic: {label}: didChange -> recall p95 {change.latency.p95:.1f} ms")

        # Vector freshness: no recall in between (a query defers the worker too).
        fresh, fresh_failures = [], 0
        # The chunk holding the fresh marker (whatever symbol packing filed it under).
        has_vector = ("SELECT 1 FROM chunks c JOIN files f ON f.id = c.file_id "
                      "JOIN vectors v ON v.text_hash = c.embed_hash "
                      "WHERE f.path = ? AND instr(c.text, ?) > 0")
        for _ in range(freshness_edits):
            await asyncio.sleep(0.5)
            t0 = time.perf_counter()
            new = daemon.rename(buffer)
            while True:
                found = await asyncio.to_thread(
                    lambda: store.execute(has_vector, (perf.EDIT_PATH, new)).fetchone())
                if found:
                    fresh.append(time.perf_counter() - t0)
                    break
                if time.perf_counter() - t0 > freshness_timeout:
                    fresh_failures += 1
                    break
                await asyncio.sleep(FRESHNESS_POLL_S)
        log(f"semantic: {label}: new vector p95 {perf.Latency.of(fresh).p95:.0f} ms")
        status = await daemon.request("ctxls/status", {})
        vmhwm = daemon.vmhwm_kb()
    finally:
        store.close()
        await daemon.stop()
    return DaemonSemantic(label, vectors_start, pending_start, recall, change,
                          perf.Latency.of(fresh), fresh_failures, freshness_timeout, status["vectors"],
                          status["pending"], vmhwm, (load_start, os.getloadavg()[0]))


@dataclass
class SemanticPerf:
    build: Build
    recall: dict[str, perf.Latency]
    daemons: list[DaemonSemantic]
    seconds: float


def run_perf(queries: int = QUERIES, edits: int = EDITS, freshness_edits: int = FRESHNESS_EDITS,
             log=print) -> SemanticPerf:
    started = time.perf_counter()
    build = build_store(PERF_CORPUS, log)
    recall = recall_in_process(queries, log)
    root = build_dataset(PERF_CORPUS).tree
    daemons = []
    with tempfile.TemporaryDirectory(prefix="ctxls-bench-semantic-") as tmp:
        for label, keep, timed, fresh, timeout in SCENARIOS:
            db = _copy_store(PERF_CORPUS, Path(tmp) / _slug(label), keep)
            daemons.append(asyncio.run(_daemon_semantic(
                label, root, db, queries if timed else 0, edits if timed else 0,
                min(fresh, freshness_edits), timeout, log)))
    return SemanticPerf(build, recall, daemons, time.perf_counter() - started)


def _lat(label: str, lat: perf.Latency, target: str = "") -> str:
    return (f"| {label} | {lat.p50:.1f} | {lat.p95:.1f} | {lat.mean:.1f} | {lat.max:.1f} | "
            f"{lat.n} | {target} |")


def perf_markdown(report: SemanticPerf) -> str:
    b = report.build
    window = [s for s in b.samples if s[1]]
    out = ["| measure (django, embeddings on) | value | target |", "|---|---:|---|",
           f"| chunks / distinct texts embedded | {b.chunks} / {b.vectors} | |",
           f"| `embed_pending()` until the backlog is empty | {b.embed_seconds:.0f} s | |",
           f"| throughput | {b.chunks_per_s:.1f} chunks/s ({b.vectors_per_s:.1f} texts/s) | |",
           f"| peak RSS while embedding (VmHWM reset before `embed_pending()`) | "
           f"{b.peak_rss_embed_kb / 1024:.0f} MiB | ≤ 800 MiB |",
           f"| RSS before embedding (store open, pass done) | {b.rss_before_embed_kb / 1024:.0f} MiB | |",
           f"| load average, start → end of the build | {b.load_start:.1f} → {b.load_end:.1f} | |"]
    if window:
        rss = [s[2] for s in window]
        out.append(f"| RSS sampled every 10 s while embedding: median / max | "
                   f"{statistics.median(rss) / 1024:.0f} / {max(rss) / 1024:.0f} MiB | |")
    out += ["", "| latency on django, embeddings on (ms) | p50 | p95 | mean | max | n | target |",
            "|---|---:|---:|---:|---:|---:|---|",
            _lat("hybrid recall in-process, all queries", report.recall["all"], "p50 ≤ 20"),
            _lat("hybrid recall in-process, docstring sentences", report.recall["sentence"]),
            _lat("hybrid recall in-process, function names", report.recall["identifier"])]
    for d in report.daemons:
        rows = [(f"daemon, {d.label}: recall round trip", d.recall, "p50 ≤ 20"),
                (f"daemon, {d.label}: didChange → top hit in recall (polls back to back)",
                 d.change.latency, "p95 ≤ 50"),
                (f"daemon, {d.label}: didChange → new vector in the store", d.freshness, "≤ 1000")]
        out += [_lat(*row) for row in rows if row[1].n]
    out.append("")
    for d in report.daemons:
        out.append(f"- Daemon {d.label}: vectors {d.vectors_at_start} → {d.vectors_at_end}, pending "
                   f"{d.pending_at_start} → {d.pending_at_end}; {d.change.failures} of "
                   f"{d.change.latency.n + d.change.failures} edits not visible within "
                   f"{perf.EDIT_TIMEOUT_S:g} s, median {d.change.polls_median} polls; "
                   f"{d.freshness_failures} of {d.freshness.n + d.freshness_failures} new vectors "
                   f"later than {d.freshness_timeout:g} s; VmHWM {d.vmhwm_kb / 1024:.0f} MiB; "
                   f"load {d.load[0]:.1f} → {d.load[1]:.1f}.")
    out += [f"- Timed queries: bench/perf.py's recall queries (half docstring sentences, half function "
            f"names), after {WARMUP_QUERIES} other warm-up queries, so every timed query embeds "
            f"its vector. Edits: bench/perf.py's marker rename in `{perf.EDIT_SYMBOL}`, daemon "
            f"options `{json.dumps(DAEMON_OPTIONS)}` (the default debounce, 150 ms, would add "
            f"150 ms to both didChange measures); new-vector edits are 0.5 s apart with no "
            f"recall in between, polling the store every {FRESHNESS_POLL_S * 1000:g} ms.",
            f"- Perf run took {report.seconds:.0f} s."]
    return "\n".join(out)


# -- all of it ------------------------------------------------------------------------

@dataclass
class SemanticReport:
    quality: QualityReport | None
    texts: TextReport | None
    perf: SemanticPerf | None


def run_semantic(parts: tuple[str, ...] = ("quality", "texts", "perf"), log=print) -> SemanticReport:
    return SemanticReport(run_quality(None, log) if "quality" in parts else None,
                          run_texts(None, log) if "texts" in parts else None,
                          run_perf(log=log) if "perf" in parts else None)


def markdown(report: SemanticReport) -> str:
    out = []
    if report.quality is not None:
        out += ["### Retrieval quality", "",
                "The lexical section's retrieval set, each stripped copy fully embedded; a hit "
                "counts when its path and symbol are the target's. BM25 uses the lexical defaults; "
                "the fusion grid is scored on dev only, by simulating `hybrid_search`'s candidate "
                "gathering (BM25 top pool ∪ ANN top pool, both scores for each) and applying each "
                "fusion; the library rows run the real functions.", "",
                quality_markdown(report.quality)]
    if report.texts is not None:
        out += ["", "### Embedding text (`index/embed_text.py`)", "", texts_markdown(report.texts)]
    if report.perf is not None:
        out += ["", "### Speed and memory with embeddings on", "", perf_markdown(report.perf)]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build-child", metavar="CORPUS", help=argparse.SUPPRESS)
    parser.add_argument("--embed-model", help="the engine's embedModel option (stores of their own)")
    sub = parser.add_subparsers(dest="command")
    b = sub.add_parser("build", help="index and embed the corpora's stores (cached)")
    b.add_argument("corpora", nargs="*", metavar="CORPUS")
    q = sub.add_parser("quality", help="BM25 / dense-only / hybrid and the fusion grid")
    q.add_argument("corpora", nargs="*", metavar="CORPUS")
    sub.add_parser("texts", help=f"embedding-text variants on {', '.join(TEXT_CORPORA)}")
    p = sub.add_parser("perf", help="recall latency, didChange and vector freshness on django")
    p.add_argument("--queries", type=int, default=QUERIES)
    p.add_argument("--edits", type=int, default=EDITS)
    p.add_argument("--freshness-edits", type=int, default=FRESHNESS_EDITS)
    r = sub.add_parser("recall", help="in-process hybrid recall latency on django (perf's first part)")
    r.add_argument("--queries", type=int, default=QUERIES)
    sub.add_parser("all", help="quality, texts and perf")
    args = parser.parse_args(argv)
    global _embed_model
    _embed_model = args.embed_model
    if args.build_child:
        _build_child(args.build_child)
        return 0
    log = lambda m: print(m, file=sys.stderr, flush=True)  # noqa: E731
    unknown = set(getattr(args, "corpora", None) or []) - set(CORPORA)
    if unknown:
        parser.error(f"unknown corpus {', '.join(sorted(unknown))}; known: {', '.join(CORPORA)}")
    if args.command == "build":
        for name in args.corpora or list(CORPORA):
            build_store(name, log)
    elif args.command == "quality":
        print(quality_markdown(run_quality(args.corpora or None, log)))
    elif args.command == "texts":
        print(texts_markdown(run_texts(None, log)))
    elif args.command == "perf":
        print(perf_markdown(run_perf(args.queries, args.edits, args.freshness_edits, log)))
    elif args.command == "recall":
        for kind, latency in recall_in_process(args.queries, log).items():
            print(f"| {kind} | {latency.p50:.1f} | {latency.p95:.1f} | {latency.mean:.1f} |")
    elif args.command == "all":
        print(markdown(run_semantic(log=log)))
    else:
        parser.print_help()
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
