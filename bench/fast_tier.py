"""The fast semantic tier (issue 35, option b): how soon hybrid answers come
from a complete tier, and what the background workers cost a lexical answer.

    .venv/bin/python bench/fast_tier.py [CORPUS] [--primary-seconds S]

A fresh store of the corpus's stripped copy (bench/dataset.py) is indexed
(lexical only), then the engine's workers start as a daemon's do: the fast
tier (static model) first, then the primary (the transformer). Measured:

* when the fast tier has every chunk and serves hybrid recall (seconds after
  the lexical index finished), and when the primary takes over (at most S
  more seconds are waited for it; else how far it got);
* lexical recall latency idle (before the workers), while the fast tier
  drains and while the primary does, over the corpus's queries, one every
  QUERY_INTERVAL_S, so that most arrive while a worker's step runs (a query
  defers the workers for INTERACTIVE_QUIET_S, 0.3 s: the queries slow the
  drain by at most that share).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

from ctxls.index.engine import Engine, EngineOptions

from dataset import build_dataset

QUERY_INTERVAL_S = 2.0


def latencies(engine: Engine, queries: list[str], until) -> list[float]:
    """Lexical recall latency (ms) of queries, round robin, until ``until()``."""
    out: list[float] = []
    i = 0
    while not until():
        query = queries[i % len(queries)]
        i += 1
        t0 = time.perf_counter()
        engine.recall(query, ["code"], 10, mode="lexical")
        out.append((time.perf_counter() - t0) * 1000)
        time.sleep(QUERY_INTERVAL_S)
    return out


def summary(values: list[float]) -> dict:
    if not values:
        return {"n": 0}
    ordered = sorted(values)
    return {"n": len(values), "p50": round(statistics.median(ordered), 2),
            "p95": round(ordered[int(0.95 * (len(ordered) - 1))], 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("corpus", nargs="?", default="django")
    parser.add_argument("--primary-seconds", type=float, default=180.0,
                        help="how long to wait for the primary tier to take over")
    parser.add_argument("--idle-queries", type=int, default=60)
    args = parser.parse_args()
    ds = build_dataset(args.corpus)
    queries = sorted({q.query for q in ds.queries})
    with tempfile.TemporaryDirectory(prefix="ctxls-fast-tier-") as tmp:
        engine = Engine(ds.tree, EngineOptions(embeddings=True, db_path=str(Path(tmp) / "index.db")))
        t0 = time.perf_counter()
        engine.index()
        index_s = time.perf_counter() - t0
        chunks = engine.store.counts()["chunks"]
        fast, primary = engine.fast_semantic, engine.semantic
        assert fast is not None and primary is not None
        for query in queries[:10]:  # warm the page cache and the FTS tables
            engine.recall(query, ["code"], 10, mode="lexical")
        count = iter(range(args.idle_queries))
        idle = latencies(engine, queries, lambda: next(count, None) is None)
        load_before = os.getloadavg()[0]

        started = time.perf_counter()
        engine.start_embedding()
        during_fast = latencies(engine, queries, lambda: not fast.busy and fast.pending() == 0)
        fast_complete_s = time.perf_counter() - started
        served_by = engine.serving_tier()
        hybrid = engine.recall(queries[0], ["code"], 10, mode="hybrid")
        primary_started = primary.vector_count()
        deadline = time.perf_counter() + args.primary_seconds
        primary_from = time.perf_counter()
        during_primary = latencies(engine, queries, lambda: time.perf_counter() > deadline
                                   or engine.serving_tier() is primary)
        took_over = engine.serving_tier() is primary
        takeover_s = time.perf_counter() - started
        primary_done = primary.vector_count() - primary_started
        primary_rate = primary_done / (time.perf_counter() - primary_from)
        report = {
            "corpus": ds.corpus, "chunks": chunks, "lexical_index_s": round(index_s, 1),
            "fast_tier_complete_s": round(fast_complete_s, 1),
            "served_by_then": "fast" if served_by is fast else "primary" if served_by else None,
            "hybrid_partial_reason": hybrid.partial_reason,
            "primary_takes_over_s": round(takeover_s, 1) if took_over else None,
            "primary_vectors_per_s_after": round(primary_rate, 1),
            "primary_pending_after": primary.pending(),
            "primary_eta_min": round(primary.pending() / max(primary_rate, 1e-6) / 60, 1),
            "lexical_ms_idle": summary(idle),
            "lexical_ms_while_fast_drains": summary(during_fast),
            "lexical_ms_while_primary_drains": summary(during_primary),
            "load_before": round(load_before, 2), "load_after": round(os.getloadavg()[0], 2),
        }
        engine.close()
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
