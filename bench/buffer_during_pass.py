"""An open buffer edited while a pass indexes the repository.

A copy of django 5.1.4 (speed only: it is reserved from every quality set)
is indexed from cold by ``Engine.cold_index`` in a thread, embeddings off,
while the main thread edits ``django/db/models/query.py`` as an editor's
buffer: a marker line renamed every :data:`EDIT_INTERVAL_S`, each edit
timed through ``Engine.set_buffer`` (chunking, the rows written, the
resolver told) until the pass ends. With ``--hostile N`` the copy also holds
N tree-sitter-kotlin crash files (a class name and 100,000 ``@A`` lines:
the chunk worker is killed at its deadline on each), spread through the
tree so that the pass meets them while the buffer is edited.

Reported: set_buffer p50 / p95 / max over the edits made during the pass,
how many, and the pass's own time. With ``--then N``, N more edits after the
pass (an editing session on an idle daemon), then this process's and the
chunk workers' resident memory: py-tree-sitter 0.26.1 leaks what a parse's
read callback returns, so memory that grows with the edits is a leak.

Usage: .venv/bin/python bench/buffer_during_pass.py [--hostile 3] [--then 2000] [--json]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from corpora import corpus_path  # noqa: E402
from parse_deadline import shapes  # noqa: E402
from perf import EDIT_PATH, MarkedBuffer  # noqa: E402

from ctxls.index import chunk_worker  # noqa: E402
from ctxls.index.engine import Engine, EngineOptions  # noqa: E402

EDIT_INTERVAL_S = 0.2
HOSTILE_FOLDERS = ["django/apps", "django/db/backends", "django/middleware",
                   "django/urls", "docs", "tests/admin_views", "tests/model_forms",
                   "tests/queries"]


def _rss_mib(pid: int | str = "self") -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(next(line for line in status.splitlines() if line.startswith("VmRSS")).split()[1]) // 1024


def edit_session(engine: Engine, buffer: MarkedBuffer, edits: int) -> dict:
    times = []
    for _ in range(edits):
        buffer.rename()
        started = time.perf_counter()
        engine.set_buffer(EDIT_PATH, buffer.current)
        times.append(time.perf_counter() - started)
    times.sort()
    workers = getattr(chunk_worker, "_workers", None) or {"pass": chunk_worker._worker}
    return {"edits": edits, "p50_ms": round(1000 * times[len(times) // 2], 1),
            "daemon_rss_mib": _rss_mib(),
            "worker_rss_mib": {lane: _rss_mib(worker._process.pid)
                               for lane, worker in workers.items() if worker._process is not None},
            "worker_recycles": {lane: getattr(worker, "recycles", None) for lane, worker in workers.items()}}


def run(hostile: int, then: int = 0) -> dict:
    with tempfile.TemporaryDirectory(prefix="ctxls-buffer-pass-") as tmp:
        root = Path(tmp) / "django"
        shutil.copytree(corpus_path("django"), root)
        crash = shapes()["annotations"]
        for n, folder in enumerate(HOSTILE_FOLDERS[:hostile]):
            (root / folder / f"Hostile{n}.kt").write_text(crash + f"// {n}\n")
        engine = Engine(str(root), EngineOptions(db_path=str(Path(tmp) / "index.db")))
        buffer = MarkedBuffer(root)
        pass_seconds: list[float] = []

        def index() -> None:
            started = time.perf_counter()
            engine.cold_index()
            pass_seconds.append(time.perf_counter() - started)

        indexing = threading.Thread(target=index, name="cold-index")
        indexing.start()
        times: list[float] = []
        while indexing.is_alive():
            buffer.rename()
            started = time.perf_counter()
            engine.set_buffer(EDIT_PATH, buffer.current)
            if indexing.is_alive():  # an edit that ended after the pass is not counted
                times.append(time.perf_counter() - started)
            time.sleep(EDIT_INTERVAL_S)
        indexing.join()
        unparsed = engine.status().get("unparsed", {}).get("count", 0)
        after = edit_session(engine, buffer, then) if then else None
        engine.close()
    times.sort()

    def at(share: float) -> float:
        return round(1000 * times[min(len(times) - 1, int(share * len(times)))], 1)

    return {"hostile_files": hostile, "edits": len(times), "p50_ms": at(0.5), "p95_ms": at(0.95),
            "max_ms": round(1000 * times[-1], 1), "pass_s": round(pass_seconds[0], 1),
            "unparsed": unparsed, "after_the_pass": after}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hostile", type=int, default=0, help="crash files in the copy (up to 8)")
    parser.add_argument("--then", type=int, default=0, help="edits after the pass")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    result = run(args.hostile, args.then)
    print(json.dumps(result) if args.json else
          f"{result['edits']} edits during a {result['pass_s']} s pass ({args.hostile} hostile files): "
          f"set_buffer p50 {result['p50_ms']} ms, p95 {result['p95_ms']} ms, max {result['max_ms']} ms"
          + (f"; then {result['after_the_pass']}" if args.then else ""))


if __name__ == "__main__":
    main()
