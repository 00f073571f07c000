"""Hardening benchmarks (issue 15), through the real `ctxls serve` over stdio.

1. Recall latency while a 20 MB buffer is opened and edited: the daemon
   indexes a corpus (a copy of this repository by default); ``ctxls/recall``
   latency is measured idle, then for 15 s while a 20 MB buffer (over the
   1 MiB bound, so it must be left out cheaply) is opened and edited with an
   incremental didChange every 100 ms.
2. Restart after kill -9 with embeddings on: the daemon indexes and starts
   embedding; after ``--embed-seconds`` it is killed with SIGKILL mid-backlog
   and started again; reported are the time to the first status answer, to a
   complete pass, to the first recall answer, and whether the vectors
   survived.

Usage: .venv/bin/python bench/hardening.py [--corpus DIR] [--embed-seconds 20]
Prints a JSON report.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import shutil
import signal
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

from rawrpc import StdioDaemon  # noqa: E402

QUERIES = ["where is the index store opened", "retry opening the store", "symlink outside the root",
           "debounce buffer changes", "ripgrep word sweep", "assemble context budget",
           "memory scope fence", "socket server framing", "embedding worker backlog",
           "cold index progress"]
BIG_BYTES = 20 << 20
# Recall is measured this long while the 20 MB buffer is opened and edited.
BUSY_SECONDS = 15.0


def copy_corpus(source: Path, into: Path) -> Path:
    """The corpus's tracked-looking files (no .git, .venv, .ctxls, caches)."""
    ignored = shutil.ignore_patterns(".git", ".venv", ".ctxls", "__pycache__", "node_modules",
                                     ".cache", "*.egg-info", ".*_cache")
    shutil.copytree(source, into, ignore=ignored, symlinks=False)
    return into


def percentiles(samples: list[float]) -> dict:
    ordered = sorted(samples)
    pick = lambda q: ordered[min(int(q * len(ordered)), len(ordered) - 1)]  # noqa: E731
    return {"n": len(ordered), "p50_ms": round(pick(0.5) * 1000, 1),
            "p95_ms": round(pick(0.95) * 1000, 1), "max_ms": round(ordered[-1] * 1000, 1)}


def recall_latencies(daemon: StdioDaemon, rounds: int, tag: str, seconds: float = 0.0
                     ) -> list[float]:
    """``rounds`` recalls back to back, and on until ``seconds`` have passed."""
    out = []
    until = time.monotonic() + seconds
    for n in itertools.count():
        if n >= rounds and time.monotonic() >= until:
            break
        query = QUERIES[n % len(QUERIES)]
        started = time.perf_counter()
        reply = daemon.conn.request("ctxls/recall", {"query": query, "kind": "code", "n": 10},
                                    f"{tag}-{n}", timeout=300)
        out.append(time.perf_counter() - started)
        assert "result" in reply, reply
    return out


def big_buffer_bench(corpus: Path) -> dict:
    daemon = StdioDaemon(corpus, {"embeddings": False, "socket": False, "debounceMs": 150})
    try:
        started = time.perf_counter()
        status = daemon.wait_indexed(timeout=600)
        cold = time.perf_counter() - started
        idle = recall_latencies(daemon, 40, "idle")
        uri = (corpus / "big_generated.py").as_uri()
        line = "value_%07d = compute(%07d)  # padding padding padding\n"
        text = "".join(line % (i, i) for i in range(BIG_BYTES // len(line % (0, 0))))
        stop = threading.Event()
        edits = {"n": 0}

        def editor() -> None:
            daemon.conn.send({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {
                "textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": text}}})
            version = 1
            while not stop.is_set():
                version += 1
                at = (version * 7919) % 400_000
                daemon.conn.send({"jsonrpc": "2.0", "method": "textDocument/didChange", "params": {
                    "textDocument": {"uri": uri, "version": version},
                    "contentChanges": [{"range": {"start": {"line": at, "character": 0},
                                                  "end": {"line": at, "character": 0}},
                                        "text": f"edited_{version} = 1\n"}]}})
                edits["n"] += 1
                time.sleep(0.1)

        thread = threading.Thread(target=editor, daemon=True)
        opened = time.perf_counter()
        thread.start()
        busy = recall_latencies(daemon, 60, "busy", seconds=BUSY_SECONDS)
        stop.set()
        thread.join()
        during = time.perf_counter() - opened
        skipped = daemon.conn.request("ctxls/status", {}, "after")["result"]["skipped"]
        return {"files": status["files"], "cold_index_s": round(cold, 1),
                "recall_idle": percentiles(idle), "recall_during_20mb_buffer": percentiles(busy),
                "buffer_bytes": len(text), "edits_sent": edits["n"], "seconds": round(during, 1),
                "big_buffer_skipped": any(f["path"] == "big_generated.py" and f["reason"] == "too large"
                                          for f in skipped["files"])}
    finally:
        daemon.close()


def wait_for(predicate, timeout: float, interval: float = 0.05):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    return None


def restart_bench(corpus: Path, embed_seconds: float) -> dict:
    options = {"embeddings": True, "socket": False}
    first = StdioDaemon(corpus, options)
    first.wait_indexed(timeout=600)
    time.sleep(embed_seconds)
    before = first.conn.request("ctxls/status", {}, "before-kill")["result"]
    os.kill(first.process.pid, signal.SIGKILL)
    first.process.wait()

    started = time.perf_counter()
    second = StdioDaemon(corpus, options)  # returns once initialize is answered
    initialized = time.perf_counter() - started
    try:
        status = second.conn.request("ctxls/status", {}, "first-status", timeout=300)["result"]
        first_status = time.perf_counter() - started
        recall = second.conn.request("ctxls/recall", {"query": QUERIES[0], "kind": "code"},
                                     "first-recall", timeout=300)
        first_recall = time.perf_counter() - started
        complete = second.wait_indexed(timeout=600)
        completed = time.perf_counter() - started
        hybrid = second.conn.request("ctxls/recall", {"query": QUERIES[0], "kind": "code"},
                                     "hybrid", timeout=300)["result"]
        return {"vectors_before_kill": before["vectors"], "pending_before_kill": before["pending"],
                "initialize_s": round(initialized, 2), "first_status_s": round(first_status, 2),
                "first_recall_s": round(first_recall, 2), "complete_s": round(completed, 2),
                "vectors_after_restart": complete["vectors"],
                "first_status_vectors": status["vectors"], "recall_answered": "result" in recall,
                "mode_after_restart": hybrid.get("mode")}
    finally:
        second.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=HERE.parent,
                        help="a repository to copy and index (default: this one)")
    parser.add_argument("--embed-seconds", type=float, default=20.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="ctxls-hardening-") as tmp:
        corpus = copy_corpus(args.corpus.resolve(), Path(tmp) / "corpus")
        report = {"corpus": str(args.corpus), "big_buffer": big_buffer_bench(corpus)}
        shutil.rmtree(corpus / ".ctxls", ignore_errors=True)
        report["restart_after_kill9"] = restart_bench(corpus, args.embed_seconds)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
