"""Impact under load (issue 38): the same request asked N times while other
processes burn the CPU gives one answer, and the code lens's counts are the
impact view's.

    python bench/impact_determinism.py ROOT SYMBOL... [--runs 10] [--burners 3]

ROOT must be indexed already (``ctxls index ROOT``). For each symbol, its
first definition (by path) is analysed twice per run: as the impact view asks
(``analyze(engine, path=, line=, character=)``, the definition's name) and as
the lens asks (``analyze(engine, symbol, path)``). Prints one JSON line per
symbol: distinct answers (callers, counts, risk, partial), the lens's counts
against the view's, wall ms (p50, max). It reads only the library's public
entry points, so an older revision can be measured the same way (put its
tree first on ``PYTHONPATH``).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import statistics
import time
from pathlib import Path

from ctxls.impact import analysis
from ctxls.index.engine import Engine


def burn() -> None:
    while True:
        pass


def fingerprint(found) -> str:
    """What a reader of the answer sees, without its timing."""
    return json.dumps({
        "callers": sorted((c.path, c.span.start_line, c.span.start_character, c.confirmed)
                          for c in found.callers),
        "confirmed": found.confirmed, "unconfirmed": found.unconfirmed, "risk": found.risk,
        "mentions": found.mention_kinds, "partial": getattr(found, "partial", None)}, sort_keys=True)


def measure(engine: Engine, symbol: str, runs: int) -> dict:
    named = sorted((info.path, info.start_line) for info in engine.symbols(symbol, "substring", limit=1000)
                   if info.symbol.rsplit(".", 1)[-1] == symbol.rsplit(".", 1)[-1])
    path = named[0][0]
    site = min((s for s in analysis.definitions_in(engine, path) if s.definition.name == symbol),
               key=lambda s: s.name_span.start_line)
    span = site.name_span
    views, lenses, times = set(), set(), []
    for _ in range(runs):
        started = time.perf_counter()
        view = analysis.analyze(engine, path=path, line=span.start_line,
                                character=span.start_character)
        times.append((time.perf_counter() - started) * 1000)
        lens = analysis.analyze(engine, site.definition.symbol, path)
        views.add(fingerprint(view))
        lenses.add((lens.confirmed, lens.unconfirmed, lens.risk, getattr(lens, "partial", None)))
    view_counts = {(json.loads(v)["confirmed"], json.loads(v)["unconfirmed"], json.loads(v)["risk"],
                    json.loads(v)["partial"]) for v in views}
    return {"symbol": site.definition.symbol, "path": path, "runs": runs,
            "distinct_answers": len(views),
            "view_counts": sorted(view_counts), "lens_counts": sorted(lenses),
            "lens_equals_view": view_counts == lenses and len(views) == 1,
            "p50_ms": round(statistics.median(times), 1), "max_ms": round(max(times), 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", type=Path)
    parser.add_argument("symbols", nargs="+")
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--burners", type=int, default=3, help="busy-loop processes while measuring")
    args = parser.parse_args()
    engine = Engine(args.root)
    engine.serve_stored_index()
    burners = [multiprocessing.Process(target=burn, daemon=True) for _ in range(args.burners)]
    for burner in burners:
        burner.start()
    try:
        for symbol in args.symbols:
            print(json.dumps(measure(engine, symbol, args.runs)), flush=True)
    finally:
        for burner in burners:
            burner.kill()
        engine.close()


if __name__ == "__main__":
    main()
