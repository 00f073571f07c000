"""The transformer's query embedding beside a background backlog (issue 35).

    .venv/bin/python bench/query_embedding.py [--store DIR] [--json]

As in the daemon, the code model (``ctxls-code-minilm-int8``) is loaded by a
thread at the embedding worker's niceness (index/priority.py). Measured:

* query embedding latency, 100 short queries, idle, then while that nice
  thread embeds a backlog in the worker's steps (``Embedder.batch_size``
  texts per call) — the query must not wait on the background;
* backlog throughput (texts per second of wall time, the steps back to back);
* peak RSS (VmHWM, reset first) while the 400 longest chunk texts of a store
  (``--store DIR``: an index.db, e.g. bench/fast_tier.py ``--store``'s) are
  embedded in the worker's steps; without a store, synthetic texts of 128
  tokens stand in.

Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sqlite3
import statistics
import threading
import time
from pathlib import Path

from ctxls.index.embeddings import CODE_MODEL_NAME, OnnxEmbedder, builtin_model_files
from ctxls.index.priority import lower_thread_priority

from fast_tier import longest_texts, status_kb

QUERIES = ["how are cookies merged into the session", "parse the http date header",
           "send_prepared", "retry a failed upload with backoff",
           "where is the template cache cleared"] * 20
LONGEST = 400


def backlog_texts(store: Path | None) -> list[str]:
    if store is None:
        rng = random.Random(7)
        words = ["def", "self", "return", "request", "cookie", "value", "header", "if", "for", "x"]
        return [" ".join(rng.choice(words) for _ in range(160)) for _ in range(LONGEST)]
    return longest_texts(sqlite3.connect(f"file:{store / 'index.db'}?mode=ro", uri=True), LONGEST)


def query_ms(embedder: OnnxEmbedder, pause_s: float = 0.0) -> list[float]:
    out = []
    for query in QUERIES:
        started = time.perf_counter()
        embedder.embed_query(query)
        out.append((time.perf_counter() - started) * 1000)
        time.sleep(pause_s)
    return out


def summary(values: list[float]) -> dict:
    ordered = sorted(values)
    return {"n": len(values), "p50": round(statistics.median(values), 2),
            "p95": round(ordered[int(0.95 * (len(values) - 1))], 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--store", type=Path)
    args = parser.parse_args()
    texts = backlog_texts(args.store)
    loaded: dict[str, OnnxEmbedder] = {}

    def load() -> None:  # as the worker does: its niceness first, then the model
        lower_thread_priority()
        loaded["model"] = OnnxEmbedder(builtin_model_files(CODE_MODEL_NAME))

    loader = threading.Thread(target=load)
    loader.start()
    loader.join()
    embedder = loaded["model"]
    query_ms(embedder)  # warm-up
    idle = query_ms(embedder)

    step = embedder.batch_size
    result: dict = {}

    def background() -> None:
        lower_thread_priority()
        Path("/proc/self/clear_refs").write_text("5")
        started = time.perf_counter()
        for start in range(0, len(texts), step):
            embedder.embed(texts[start:start + step])
        result["texts_per_s"] = round(len(texts) / (time.perf_counter() - started), 1)
        result["peak_rss_mib"] = round(status_kb("VmHWM") / 1024)

    worker = threading.Thread(target=background)
    worker.start()
    time.sleep(0.5)
    busy = []
    while worker.is_alive():
        busy += query_ms(embedder, pause_s=0.02)[:5]
    worker.join()
    print(json.dumps({
        "model": embedder.name, "texts": "store's 400 longest" if args.store else "synthetic",
        "query_ms_idle": summary(idle), "query_ms_during_backlog": summary(busy),
        "backlog_texts_per_s": result["texts_per_s"],
        "peak_rss_mib_backlog": result["peak_rss_mib"],
        "load_average": [round(x, 2) for x in os.getloadavg()]}, indent=1))


if __name__ == "__main__":
    main()
