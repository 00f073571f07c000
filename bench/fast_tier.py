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
  drain by at most that share);
* the process's RSS, sampled every RSS_INTERVAL_S, in each phase (the
  lexical index, the fast tier draining, the primary draining with both
  models loaded, after the takeover): the peak and the median ("steady");
  and VmHWM, reset when the workers start, at the end;
* hybrid recall latency (query embedding included) while the fast tier
  serves (the transformer scoring its first hits again, embedding those its
  backlog has not reached) and, when the primary took over, after it.

``--store DIR`` keeps the store (index.db and the vector files) in DIR, to be
reused by other benchmarks (bench/perf.py --hybrid-store).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import threading
import time
from pathlib import Path

from ctxls.index.embed_text import embedding_text
from ctxls.index.engine import Engine, EngineOptions

from dataset import build_dataset

QUERY_INTERVAL_S = 2.0
RSS_INTERVAL_S = 0.5
HYBRID_QUERIES = 100


def status_kb(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


class RssSampler:
    """The process's RSS every RSS_INTERVAL_S, filed under the current phase."""

    def __init__(self) -> None:
        self.phase = "start"
        self.samples: dict[str, list[int]] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(RSS_INTERVAL_S):
            self.samples.setdefault(self.phase, []).append(status_kb("VmRSS"))

    def stop(self) -> dict:
        self._stop.set()
        self._thread.join()
        return {phase: {"peak_mib": round(max(kb) / 1024), "median_mib": round(statistics.median(kb) / 1024),
                        "samples": len(kb)} for phase, kb in self.samples.items()}


def longest_texts(conn, count: int) -> list[str]:
    """The embedding texts of a store's ``count`` longest chunks."""
    return [embedding_text(*row) for row in conn.execute(
        "SELECT f.path, c.symbol, c.text FROM chunks c JOIN files f ON f.id = c.file_id "
        "ORDER BY length(c.text) DESC LIMIT ?", (count,))]


def longest_texts_peak_mib(engine: Engine, count: int) -> int:
    """Peak RSS (MiB) while the primary embeds the ``count`` longest chunk texts
    in the worker's batches: the worker goes shortest first, so a run that
    stops early has not seen its largest batches (VmHWM reset before)."""
    texts = longest_texts(engine.store.reader(), count)
    Path("/proc/self/clear_refs").write_text("5")
    engine.semantic.embedder.embed(texts)
    return round(status_kb("VmHWM") / 1024)


def hybrid_latencies(engine: Engine, queries: list[str]) -> list[float]:
    """Hybrid recall latency (ms), the query's embedding included, back to back."""
    out = []
    for query in queries:
        t0 = time.perf_counter()
        engine.recall(query, ["code"], 10, mode="hybrid")
        out.append((time.perf_counter() - t0) * 1000)
    return out


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
    parser.add_argument("--longest", type=int, default=400,
                        help="then the primary embeds this many longest texts (peak RSS)")
    parser.add_argument("--store", help="keep the store in this (empty or new) folder")
    args = parser.parse_args()
    ds = build_dataset(args.corpus)
    queries = sorted({q.query for q in ds.queries})
    rss = RssSampler()
    with tempfile.TemporaryDirectory(prefix="ctxls-fast-tier-") as tmp:
        folder = Path(args.store) if args.store else Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        if any(folder.iterdir()):
            parser.error(f"{folder} is not empty")
        engine = Engine(ds.tree, EngineOptions(embeddings=True, db_path=str(folder / "index.db")))
        rss.phase = "lexical index"
        t0 = time.perf_counter()
        engine.index()
        index_s = time.perf_counter() - t0
        engine.warm_postings()  # as a daemon after its first pass (index/postings.py)
        rss.phase = "idle"
        chunks = engine.store.counts()["chunks"]
        fast, primary = engine.fast_semantic, engine.semantic
        assert fast is not None and primary is not None
        for query in queries[:10]:  # warm the page cache and the FTS tables
            engine.recall(query, ["code"], 10, mode="lexical")
        count = iter(range(args.idle_queries))
        idle = latencies(engine, queries, lambda: next(count, None) is None)
        load_before = os.getloadavg()[0]

        Path("/proc/self/clear_refs").write_text("5")  # VmHWM from here: the embedding's own peak
        rss.phase = "fast tier drains"
        started = time.perf_counter()
        engine.start_embedding()
        during_fast = latencies(engine, queries, lambda: not fast.busy and fast.pending() == 0)
        fast_complete_s = time.perf_counter() - started
        rss.phase = "primary drains (both models loaded)"
        served_by = engine.serving_tier()
        hybrid = engine.recall(queries[0], ["code"], 10, mode="hybrid")
        hybrid_fast = hybrid_latencies(engine, queries[:HYBRID_QUERIES])
        primary_started = primary.vector_count()
        deadline = time.perf_counter() + args.primary_seconds
        primary_from = time.perf_counter()
        during_primary = latencies(engine, queries, lambda: time.perf_counter() > deadline
                                   or engine.serving_tier() is primary)
        took_over = engine.serving_tier() is primary
        takeover_s = time.perf_counter() - started
        primary_done = primary.vector_count() - primary_started
        primary_rate = primary_done / (time.perf_counter() - primary_from)
        rss.phase = "after the takeover" if took_over else "primary still draining"
        # The window's runs embedded these queries in the transformer too: forgotten,
        # so that each is embedded again, as a query never asked before would be.
        primary._query_cache.clear()
        hybrid_primary = hybrid_latencies(engine, queries[:HYBRID_QUERIES]) if took_over else []
        hwm_kb = status_kb("VmHWM")
        time.sleep(5 * RSS_INTERVAL_S)
        primary_pending = primary.pending()
        for tier in (fast, primary):
            tier.stop()  # the models stay loaded
        rss.phase = "the longest texts through the primary"
        longest_peak = longest_texts_peak_mib(engine, args.longest)
        engine.close()
        report = {
            "corpus": ds.corpus, "chunks": chunks, "lexical_index_s": round(index_s, 1),
            "fast_tier_complete_s": round(fast_complete_s, 1),
            "served_by_then": "fast" if served_by is fast else "primary" if served_by else None,
            "hybrid_partial_reason": hybrid.partial_reason,
            "primary_takes_over_s": round(takeover_s, 1) if took_over else None,
            "primary_vectors_per_s_after": round(primary_rate, 1),
            "primary_pending_after": primary_pending,
            "primary_eta_min": round(primary_pending / max(primary_rate, 1e-6) / 60, 1),
            "lexical_ms_idle": summary(idle),
            "lexical_ms_while_fast_drains": summary(during_fast),
            "lexical_ms_while_primary_drains": summary(during_primary),
            "hybrid_ms_fast_tier_serving": summary(hybrid_fast),
            "hybrid_ms_after_takeover": summary(hybrid_primary),
            "peak_rss_mib_since_workers_started": round(hwm_kb / 1024),
            "peak_rss_mib_longest_texts": longest_peak,
            "rss_by_phase": rss.stop(),
            "load_before": round(load_before, 2), "load_after": round(os.getloadavg()[0], 2),
        }
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
