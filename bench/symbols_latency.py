"""Latency of the symbol tools (issue 39), in process, lexical (no vectors):

    .venv/bin/python bench/symbols_latency.py ROOT [--queries 200]

Indexes ROOT into a temporary store, then times ``Engine.symbols`` (exact,
prefix, fuzzy) for random definition names of ROOT, ``Engine.outline`` of
its Python files, ``Engine.related`` at their first line, a lexical recall
(its hits labelled with their definitions) and the labelling alone. Prints
p50 and p95 in milliseconds. Every answer includes ``fresh_answer``'s check
of the files it points into, as a client's would.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path
from typing import Callable

from ctxls.index import symbols as symbol_table
from ctxls.index.engine import Engine, EngineOptions


def timed(call: Callable, inputs: list) -> str:
    """p50 / p95 of ``call`` over ``inputs``, in ms."""
    times = []
    for value in inputs:
        start = time.perf_counter()
        call(value)
        times.append((time.perf_counter() - start) * 1000)
    times.sort()
    return f"{statistics.median(times):.2f} / {times[max(int(len(times) * 0.95) - 1, 0)]:.2f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", type=Path)
    parser.add_argument("--queries", type=int, default=200)
    args = parser.parse_args()
    engine = Engine(args.root, EngineOptions(db_path=tempfile.mkdtemp() + "/index.db"))
    try:
        engine.index()
        conn = engine.store.reader()
        names = [row[0] for row in conn.execute("SELECT name FROM symbols ORDER BY random() LIMIT ?",
                                                (args.queries,))]
        paths = [row[0] for row in conn.execute(
            "SELECT path FROM files WHERE language = 'python' ORDER BY path LIMIT 100")]
        print(f"{len(paths)} python files, {conn.execute('SELECT count(*) FROM symbols').fetchone()[0]} "
              f"definitions, {len(names)} names")
        for match in ("exact", "prefix", "fuzzy"):
            print(f"symbols {match}: {timed(lambda name: engine.symbols(name, match), names)}")
        print(f"outline: {timed(engine.outline, paths)}")
        print(f"related (lexical): {timed(lambda path: engine.similar(path, 0), paths[:50])}")
        print(f"recall lexical, labelled: "
              f"{timed(lambda name: engine.recall(name, ['code'], mode='lexical'), names[:100])}")
        hits = [engine.recall(name, ["code"], mode="lexical").hits_by_kind["code"] for name in names[:50]]
        print("labelling 10 hits: " + timed(lambda found: [
            symbol_table.definitions_in(conn, h.path, h.start_line, h.end_line) for h in found], hits))
    finally:
        engine.close()


if __name__ == "__main__":
    main()
