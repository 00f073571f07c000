"""CPU time of a cold lexical index and of lexical recall on one corpus.

    .venv/bin/python bench/recall_cpu.py [CORPUS] [--ranking field=value,...]...

(default corpus: django; each ``--ranking`` variant, as in codesearch.py, is
timed on the same index after the default one)

Process CPU time, not wall time: on a shared machine the wall clock measures
the neighbours, while CPU time still compares two builds of ctxls run one
after the other. Queries: ``perf.recall_queries(200)``, drawn from django's set
whatever the corpus (half docstring
sentences, half function names); ``Engine.recall(q, ["code"], 10,
mode="lexical")`` after ten warm-up queries. Prints one JSON line.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from dataclasses import replace

from ctxls.index.engine import Engine, EngineOptions

import perf
from codesearch import parse_ranking
from corpora import corpus_path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("corpus", nargs="?", default="django")
    parser.add_argument("--ranking", action="append", default=[])
    args = parser.parse_args(argv)
    name = args.corpus
    with tempfile.TemporaryDirectory() as folder:
        engine = Engine(corpus_path(name), EngineOptions(db_path=f"{folder}/index.db"))
        cpu_started, wall_started = time.process_time(), time.perf_counter()
        engine.cold_index()
        cold_cpu, cold_wall = time.process_time() - cpu_started, time.perf_counter() - wall_started
        queries = [query for _, query in perf.recall_queries(200)]
        for query in queries[:10]:
            engine.recall(query, ["code"], 10, mode="lexical")
        for variant in ["default", *args.ranking]:
            engine.options = replace(engine.options, ranking=parse_ranking(
                None if variant == "default" else variant))
            times = []
            for query in queries:
                started = time.process_time()
                engine.recall(query, ["code"], 10, mode="lexical")
                times.append(time.process_time() - started)
            times.sort()
            print(json.dumps({"corpus": name, "ranking": variant, "chunks": engine.status()["chunks"],
                              "cold_cpu_s": round(cold_cpu, 1), "cold_wall_s": round(cold_wall, 1),
                              "recall_cpu_ms_p50": round(1000 * times[len(times) // 2], 2),
                              "recall_cpu_ms_p95": round(1000 * times[int(len(times) * 0.95)], 2)}))
        engine.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
