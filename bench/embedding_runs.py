"""The transformer's backlog throughput and peak RSS by runs at once (issue 35).

    [taskset -c 0] .venv/bin/python bench/embedding_runs.py STORE COUNT [RUNS]

A fixed sample (seed 7) of COUNT chunk texts of an index store (STORE/index.db,
e.g. django's from bench/fast_tier.py --store) through the default transformer
in the background worker's steps (``embedder.batch_size`` texts) at niceness
19, with both models loaded as the engine loads them; ``runs_at_once`` as the
embedder derives it from the usable cores (``taskset`` narrows them), or RUNS.
Prints texts/s, wall and CPU seconds, and the peak RSS beside the models' own.
"""
import os
import random
import sqlite3
import sys
import time
from pathlib import Path

import ctxls.index.embeddings as E
from ctxls.index.embed_text import embedding_text
from ctxls.index.priority import lower_thread_priority

store, count = sys.argv[1], int(sys.argv[2])
conn = sqlite3.connect(f"file:{store}/index.db?mode=ro", uri=True)
rows = conn.execute("SELECT f.path, c.symbol, c.text FROM chunks c "
                    "JOIN files f ON f.id = c.file_id ORDER BY c.id").fetchall()
random.Random(7).shuffle(rows)
texts = [embedding_text(*r) for r in rows[:count]]
static = E.load_embedder(E.STATIC_MODEL_NAME)  # the fast tier's, loaded beside it as the engine does
emb = E.load_embedder(None)
if len(sys.argv) > 3:
    emb.runs_at_once = int(sys.argv[3])
    emb.batch_size = E.STEP_TEXTS_PER_RUN * emb.runs_at_once


def peak_mib() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM"):
            return int(line.split()[1]) // 1024
    return 0


base = peak_mib()
Path("/proc/self/clear_refs").write_text("5")  # resets VmHWM
lower_thread_priority()
t0, c0 = time.perf_counter(), time.process_time()
for i in range(0, len(texts), emb.batch_size):
    emb.embed(texts[i:i + emb.batch_size])
dt = time.perf_counter() - t0
print(f"cores={len(os.sched_getaffinity(0))} runs={emb.runs_at_once} step={emb.batch_size} "
      f"texts={len(texts)} {len(texts) / dt:.1f} texts/s wall {dt:.1f}s "
      f"cpu {time.process_time() - c0:.1f}s peak={peak_mib()} MiB (models {base})", flush=True)
