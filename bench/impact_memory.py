"""Impact's memory and time on hot names of django 5.1.4 (speed only: django
is reserved from every quality set).

An in-process Engine indexes django from cold and loads its postings; then
impact is asked for eight names with many callers, one after the other.
Reported: each name's time, the total, the process's peak RSS and its RSS
after the eight, and a digest of the answers (callers with their verdicts,
targets and reasons; mention counts). ``--pin`` measures the former
behaviour: the sweep keeps every caller file's tree to the request's end
(``Resolver.release`` made a no-op); the digests of the two must be equal.

Usage: .venv/bin/python bench/impact_memory.py [--pin] [--json]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from corpora import corpus_path  # noqa: E402

from ctxls.impact import analysis  # noqa: E402
from ctxls.impact.resolve import Resolver  # noqa: E402
from ctxls.index.engine import Engine, EngineOptions  # noqa: E402

HOT_NAMES = ["QuerySet", "filter", "get", "save", "Model", "reverse", "render", "HttpResponse"]


def _rss_mib() -> int:
    status = Path("/proc/self/status").read_text()
    return int(next(line for line in status.splitlines() if line.startswith("VmRSS")).split()[1]) // 1024


def run(pin: bool) -> dict:
    if pin:
        Resolver.release = lambda self, path: None  # type: ignore[method-assign]
    with tempfile.TemporaryDirectory(prefix="ctxls-impact-memory-") as tmp:
        engine = Engine(str(corpus_path("django")), EngineOptions(db_path=str(Path(tmp) / "index.db")))
        engine.cold_index()
        engine.warm_postings()
        before = _rss_mib()
        times, answers = {}, {}
        for name in HOT_NAMES:
            started = time.perf_counter()
            impact = analysis.analyze(engine, name)
            times[name] = round(time.perf_counter() - started, 2)
            assert impact is not None
            answers[name] = [[c.path, c.span.start_line, c.span.start_character, c.confirmed, c.kind,
                              sorted(c.targets), c.reason] for c in impact.callers] + [impact.mention_kinds]
        after = _rss_mib()
        engine.close()
    digest = hashlib.sha256(json.dumps(answers, sort_keys=True).encode()).hexdigest()[:16]
    return {"pinned": pin, "seconds": times, "total_s": round(sum(times.values()), 1),
            "rss_before_mib": before, "rss_after_mib": after,
            "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024,
            "answers_sha256": digest}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pin", action="store_true", help="keep every caller's tree (the former behaviour)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    result = run(args.pin)
    print(json.dumps(result) if args.json else
          f"{'pinned' if args.pin else 'released'}: {result['total_s']} s, peak RSS {result['peak_rss_mib']} MiB, "
          f"after {result['rss_after_mib']} MiB (before {result['rss_before_mib']}), answers {result['answers_sha256']}")


if __name__ == "__main__":
    main()
