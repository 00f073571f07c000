"""Retrieval quality of the lexical ranking on the docstring set (bench/dataset.py).

Each corpus's stripped copy is indexed once into a fresh store; ranking
variants only change query time, so they all run against that one store
through :func:`ctxls.index.ranking.lexical_search`.

Variants, chosen on the dev split only (by MRR@10 averaged over the corpora,
so each corpus counts the same):

1. plain BM25: all column weights 1, no import boost;
2. column weights: the grid SYMBOL_WEIGHTS x PATH_WEIGHTS;
3. the import boost, each of IMPORT_BOOSTS on top of the best weights.

The grid is scored on dev only; the named variants on dev and test. The best
weights are always kept; the best boost only when it beats them on dev by more
than MIN_BOOST_GAIN (mean MRR@10) and is not worse on test: a boost inside the
noise is a cost at every query for nothing.
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path

from ctxls.index.engine import Engine, EngineOptions
from ctxls.index.ranking import RankingConfig, lexical_search

from corpora import QUALITY_CORPORA as CORPORA
from dataset import Dataset, Query, build_dataset

SYMBOL_WEIGHTS = (1.0, 2.0, 4.0, 8.0, 12.0, 16.0, 24.0, 32.0)
PATH_WEIGHTS = (1.0, 2.0, 4.0)
IMPORT_BOOSTS = (0.1, 0.25, 0.5)
MIN_BOOST_GAIN = 0.005
PLAIN_BM25 = RankingConfig(symbol_weight=1.0, path_weight=1.0, body_weight=1.0, import_boost=0.0)
K = 10


@dataclass(frozen=True)
class Metrics:
    mrr: float  # MRR@10
    r1: float  # Recall@1
    r10: float  # Recall@10
    n: int

    @classmethod
    def of(cls, ranks: list[int | None]) -> Metrics:
        """From each query's 1-based rank of its target (None: not in the top K)."""
        n = len(ranks) or 1
        return cls(sum(1 / r for r in ranks if r) / n, sum(r == 1 for r in ranks) / n,
                   sum(1 for r in ranks if r) / n, len(ranks))


def target_rank(hits, q: Query) -> int | None:
    """1-based rank of the first of the top K hits that is the target (any part of it)."""
    for rank, hit in enumerate(hits[:K], 1):
        if hit.path == q.path and hit.symbol == q.symbol:
            return rank
    return None


@dataclass
class Variant:
    name: str
    config: RankingConfig
    # corpus -> split -> metrics
    scores: dict[str, dict[str, Metrics]]


@dataclass
class QualityReport:
    datasets: dict[str, Dataset]  # corpus name -> its set
    index_seconds: dict[str, float]
    grid: dict[tuple[float, float], float]  # (symbol_weight, path_weight) -> dev macro MRR
    variants: list[Variant]  # plain BM25, best weights, each boost
    chosen: Variant  # the best on dev
    seconds: float


def evaluate(conn: sqlite3.Connection, queries: list[Query], config: RankingConfig) -> Metrics:
    """MRR@K, Recall@1 and Recall@K; any chunk of the target function counts."""
    return Metrics.of([target_rank(lexical_search(conn, "code", q.query, K, config), q)
                       for q in queries])


def macro(variant: Variant, split: str) -> float:
    return sum(s[split].mrr for s in variant.scores.values()) / len(variant.scores)


def run_quality(names: list[str] | None = None, log=print) -> QualityReport:
    names = names or list(CORPORA)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="ctxls-bench-quality-") as tmp:
        datasets: dict[str, Dataset] = {}
        engines: dict[str, Engine] = {}
        index_seconds: dict[str, float] = {}
        for name in names:
            datasets[name] = build_dataset(name)
            t0 = time.perf_counter()
            engine = Engine(datasets[name].tree, EngineOptions(db_path=str(Path(tmp) / f"{name}.db")))
            engine.index()
            index_seconds[name] = time.perf_counter() - t0
            engines[name] = engine
            log(f"quality: indexed {datasets[name].corpus} copy in {index_seconds[name]:.1f}s, "
                f"{len(datasets[name].queries)} queries")

        memo: dict[tuple[RankingConfig, str, str], Metrics] = {}

        def score(name: str, config: RankingConfig, splits: tuple[str, ...]) -> Variant:
            scores: dict[str, dict[str, Metrics]] = {}
            for corpus in names:
                for split in splits:
                    key = (config, corpus, split)
                    if key not in memo:
                        memo[key] = evaluate(engines[corpus].store.reader(),
                                             datasets[corpus].split(split), config)
                    scores.setdefault(corpus, {})[split] = memo[key]
            return Variant(name, config, scores)

        grid_variants = {}
        for sw in SYMBOL_WEIGHTS:
            for pw in PATH_WEIGHTS:
                config = replace(PLAIN_BM25, symbol_weight=sw, path_weight=pw)
                grid_variants[sw, pw] = score(f"symbol {sw:g}, path {pw:g}", config, ("dev",))
                log(f"quality: grid {grid_variants[sw, pw].name}: dev MRR "
                    f"{macro(grid_variants[sw, pw], 'dev'):.4f}")
        grid = {key: macro(v, "dev") for key, v in grid_variants.items()}
        best_sw, best_pw = max(grid, key=lambda key: (grid[key], -key[0], -key[1]))
        best = replace(PLAIN_BM25, symbol_weight=best_sw, path_weight=best_pw)

        both = ("dev", "test")
        variants = [score("plain BM25", PLAIN_BM25, both),
                    score(f"weights (symbol {best_sw:g}, path {best_pw:g})", best, both)]
        for boost in IMPORT_BOOSTS:
            variants.append(score(f"weights + import boost {boost:g}",
                                  replace(best, import_boost=boost), both))
            log(f"quality: {variants[-1].name}: dev MRR {macro(variants[-1], 'dev'):.4f}")
        # The first listed wins a tie: the simpler variant.
        weights, boosts = variants[1], variants[2:]
        best_boost = max(boosts, key=lambda v: (macro(v, "dev"), -boosts.index(v)))
        chosen = (best_boost if macro(best_boost, "dev") > macro(weights, "dev") + MIN_BOOST_GAIN
                  and macro(best_boost, "test") >= macro(weights, "test") else weights)
        for engine in engines.values():
            engine.close()
    return QualityReport(datasets, index_seconds, grid, variants, chosen,
                         time.perf_counter() - started)


def _fmt(m: Metrics) -> str:
    return f"{m.mrr:.3f} | {m.r1:.3f} | {m.r10:.3f}"


def markdown(report: QualityReport) -> str:
    names = list(report.datasets)
    out = ["### Retrieval set", "",
           "| corpus | queries | dev | test | eligible before sampling | indexed copy in |",
           "|---|---:|---:|---:|---:|---:|"]
    for name, ds in report.datasets.items():
        out.append(f"| {ds.corpus} | {len(ds.queries)} | {len(ds.split('dev'))} | "
                   f"{len(ds.split('test'))} | {ds.candidates} | {report.index_seconds[name]:.1f} s |")
    out += ["", "### Column weights (dev MRR@10, mean over corpora)", "",
            "| symbol \\ path | " + " | ".join(f"{pw:g}" for pw in PATH_WEIGHTS) + " |",
            "|---|" + "---:|" * len(PATH_WEIGHTS)]
    for sw in SYMBOL_WEIGHTS:
        out.append(f"| {sw:g} | " + " | ".join(f"{report.grid[sw, pw]:.4f}" for pw in PATH_WEIGHTS) + " |")
    for split in ("dev", "test"):
        out += ["", f"### Variants on {split} (MRR@10 \\| R@1 \\| R@10)", "",
                "| variant | mean MRR@10 | " + " | ".join(
                    f"{report.datasets[n].corpus} MRR@10 | R@1 | R@10" for n in names) + " |",
                "|---|---:|" + "---:|---:|---:|" * len(names)]
        for v in report.variants:
            mark = " **(chosen)**" if v is report.chosen else ""
            out.append(f"| {v.name}{mark} | {macro(v, split):.3f} | " + " | ".join(
                _fmt(v.scores[n][split]) for n in names) + " |")
    c = report.chosen.config
    out += ["", f"Chosen: **{report.chosen.name}** (best weights on dev; a boost only if it "
            f"gains > {MIN_BOOST_GAIN:g} mean dev MRR@10 and is not worse on test), "
            f"i.e. `RankingConfig(symbol_weight="
            f"{c.symbol_weight:g}, path_weight={c.path_weight:g}, body_weight={c.body_weight:g}, "
            f"import_boost={c.import_boost:g})`, which `RankingConfig`'s defaults in "
            f"`index/ranking.py` must match; quality run took {report.seconds:.0f} s."]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("corpora", nargs="*", metavar="CORPUS",
                        help=f"default: all of {', '.join(CORPORA)}")
    args = parser.parse_args(argv)
    unknown = set(args.corpora) - set(CORPORA)
    if unknown:
        parser.error(f"unknown corpus {', '.join(sorted(unknown))}; known: {', '.join(CORPORA)}")
    report = run_quality(args.corpora or None, log=lambda m: print(m, file=sys.stderr))
    print(markdown(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
