"""The request lanes' pool sizes (daemon/router.py READ_WORKERS and
WRITE_WORKERS) under a mixed load on the real daemon.

For each pool size pair, a fresh copy of the corpus is served by the real
``ctxls serve`` over stdio (embeddings off, so the load is the lanes', not
the embedder's), indexed, and then for :data:`MEASURE_S` seconds (after
:data:`WARMUP_S`):

* :data:`READERS` clients each send reads back to back, in turn
  ``ctxls/recall`` (a definition's name as words), ``ctxls/impact`` (the
  definition) and ``ctxls/locate`` (a sentence naming it);
* one editor sends a ``didChange`` of an open buffer every
  :data:`EDIT_INTERVAL_S` (each re-indexes the buffer on the write lane);
* :data:`WRITERS` clients each send a ``ctxls/remember`` and wait
  :data:`WRITE_PAUSE_S` after its answer;
* with ``--reindexing``, one more client re-indexes the whole folder
  (``ctxls/index`` with ``force``) back to back: the long write a
  ``remember`` should not wait for.

A run in which nothing comes from the daemon for :data:`STALL_S` while
requests wait ends with where the bytes are (``stall_report``): the daemon's
threads and the bytes lying unread in its pipes to the bench.

Reported: read latency p50/p95 (all reads, and per method), the remember's
acknowledgement p50/p95, and how many of each were answered. The sizes are
set only here: the daemon is started by a launcher that sets the router's
module constants and builds its pools again before serving (production code
has no knob for them).

Run: nice .venv/bin/python bench/lanes.py --corpus bench/.cache/corpora/flask-3.1.0
     [--sizes 2x1,4x1,6x1,2x2,4x2,6x2] [--rounds 1] [--write-result]
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import fcntl
import itertools
import os
import random
import shutil
import subprocess
import sys
import tempfile
import termios
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from lsprotocol import types

from ctxls.index.chunker import chunk_file

from perf import BenchDaemon, Latency

REPO = Path(__file__).resolve().parent.parent
DEFAULT_SIZES = ((2, 1), (4, 1), (6, 1), (2, 2), (4, 2), (6, 2))
READERS = 8  # more clients than the largest read pool: the pool is what limits
WRITERS = 2
EDIT_INTERVAL_S = 0.1
WRITE_PAUSE_S = 0.05
WARMUP_S = 3.0
MEASURE_S = 30.0
DAEMON_OPTIONS = {"embeddings": False, "debounceMs": 50}
EDITED_SUFFIX = ".py"
# Seconds without a message from the daemon, requests waiting, that make a run stalled.
STALL_S = 60.0

# The daemon with the router's pools at the bench's sizes: the module's
# constants set and its pools built again before anything has run on them.
LAUNCHER = """import sys
from ctxls.daemon import router
router.READ_WORKERS, router.WRITE_WORKERS = int(sys.argv[1]), int(sys.argv[2])
router.ROUTER.__init__()
from ctxls.daemon.cli import main
sys.exit(main(["serve"]))
"""


@dataclass
class SizeRun:
    """One pool size's measured seconds (several rounds' added together)."""

    read_workers: int
    write_workers: int
    read_times: dict[str, list[float]]  # by method
    ack_times: list[float]  # ctxls/remember
    edits: int
    seconds: float

    @property
    def reads(self) -> Latency:
        return Latency.of([t for times in self.read_times.values() for t in times])

    @property
    def by_method(self) -> dict[str, Latency]:
        return {method: Latency.of(times) for method, times in sorted(self.read_times.items())}

    @property
    def remember_ack(self) -> Latency:
        return Latency.of(self.ack_times)

    def add(self, other: SizeRun) -> None:
        for method, times in other.read_times.items():
            self.read_times.setdefault(method, []).extend(times)
        self.ack_times += other.ack_times
        self.edits += other.edits
        self.seconds += other.seconds

    def summary(self) -> dict:
        return {"read_workers": self.read_workers, "write_workers": self.write_workers,
                "reads": asdict(self.reads), "by_method": {m: asdict(l) for m, l in self.by_method.items()},
                "remember_ack": asdict(self.remember_ack), "edits": self.edits, "seconds": self.seconds}


def definitions(root: Path, limit: int = 60) -> list[str]:
    """Function and method names of the corpus's Python files (seeded sample)."""
    names = set()
    for path in sorted(root.rglob("*.py")):
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        for symbol in chunk_file(str(path.relative_to(root)), text).symbols:
            last = symbol.symbol.rsplit(".", 1)[-1]
            if symbol.symbol_kind in ("function", "method") and len(last) > 3 and not last.startswith("__"):
                names.add(last)
    return random.Random(7).sample(sorted(names), min(limit, len(names)))


def _fd_links(pid: int | str, access: int) -> dict[str, list[int]]:
    """A process's pipes open for ``access`` (os.O_RDONLY, os.O_WRONLY): their
    /proc link name (``pipe:[inode]``) and the descriptors."""
    links: dict[str, list[int]] = {}
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            link = os.readlink(f"/proc/{pid}/fd/{fd}")
            with open(f"/proc/{pid}/fdinfo/{fd}") as info:
                flags = int(next(line for line in info if line.startswith("flags:")).split()[1], 8)
        except (OSError, StopIteration):
            continue
        if link.startswith("pipe:") and flags & os.O_ACCMODE == access:
            links.setdefault(link, []).append(int(fd))
    return links


def stall_report(pid: int) -> str:
    """Where a stalled run's bytes are: each daemon thread's kernel wait
    (``pipe_write``: blocked writing to the bench; ``ep_poll``: idle), and
    the bytes the daemon wrote that lie unread in each of its pipes to this
    process."""
    threads = []
    for tid in sorted(os.listdir(f"/proc/{pid}/task"), key=int):
        try:
            with open(f"/proc/{pid}/task/{tid}/comm") as comm, open(f"/proc/{pid}/task/{tid}/wchan") as wchan:
                threads.append(f"{comm.read().strip()}:{wchan.read().strip()}")
        except OSError:
            continue
    written = _fd_links(pid, os.O_WRONLY)
    unread = {}
    for link, fds in _fd_links("self", os.O_RDONLY).items():
        if link in written:
            count = bytearray(4)
            fcntl.ioctl(fds[0], termios.FIONREAD, count)
            unread[f"{link} (daemon fds {written[link]})"] = int.from_bytes(count, sys.byteorder)
    return f"daemon threads: {', '.join(threads)}; unread in its pipes to the bench: {unread}"


def reads(names: list[str]):
    """(method, params) forever: recall, impact and locate of each name in turn."""
    for name in itertools.cycle(names):
        words = name.replace("_", " ").strip()
        yield "ctxls/recall", {"query": words, "kind": "code", "n": 10}
        yield "ctxls/impact", {"symbol": name}
        yield "ctxls/locate", {"text": f"{name} raises an error when it is called", "n": 5}


async def load(daemon: BenchDaemon, names: list[str], edited: Path, measure_s: float,
               reindexing: bool) -> SizeRun:
    times: dict[str, list[float]] = {}
    acks: list[float] = []
    edits = 0
    measuring = asyncio.Event()
    stop = asyncio.Event()
    plan = reads(names)

    async def reader() -> None:
        while not stop.is_set():
            method, params = next(plan)
            t0 = time.perf_counter()
            await request(method, params)
            if measuring.is_set() and not stop.is_set():
                times.setdefault(method, []).append(time.perf_counter() - t0)

    async def writer(number: int) -> None:
        for n in itertools.count():
            if stop.is_set():
                return
            t0 = time.perf_counter()
            await request("ctxls/remember", {"id": f"lanes-{number}-{n}",
                                                    "text": f"lanes bench fact {number} {n}: "
                                                            f"{random.choice(names)} is slow"})
            if measuring.is_set() and not stop.is_set():
                acks.append(time.perf_counter() - t0)
            await asyncio.sleep(WRITE_PAUSE_S)

    async def editor() -> None:
        nonlocal edits
        uri = edited.as_uri()
        base = edited.read_text(encoding="utf-8")
        daemon.client.text_document_did_open(types.DidOpenTextDocumentParams(types.TextDocumentItem(
            uri=uri, language_id="python", version=1, text=base)))
        for version in itertools.count(2):
            if stop.is_set():
                return
            marker = "".join(random.choices("abcdefghijklmnopqrstuvwxyz", k=12))
            daemon.client.text_document_did_change(types.DidChangeTextDocumentParams(
                types.VersionedTextDocumentIdentifier(uri=uri, version=version),
                [types.TextDocumentContentChangeWholeDocument(
                    text=base + f"\n\ndef {marker}():\n    return {version}\n")]))
            if measuring.is_set():
                edits += 1
            await asyncio.sleep(EDIT_INTERVAL_S)

    async def reindexer() -> None:
        while not stop.is_set():
            await request("ctxls/index", {"force": True})

    protocol = daemon.client.protocol
    last_message = time.monotonic()
    handle_message = protocol.handle_message

    def stamped(message):
        nonlocal last_message
        last_message = time.monotonic()
        return handle_message(message)

    protocol.handle_message = stamped

    waiting = 0  # requests sent and not answered

    async def request(method: str, params: dict) -> Any:
        nonlocal waiting
        waiting += 1
        try:
            return await daemon.request(method, params)
        finally:
            waiting -= 1

    async def watchdog() -> None:
        while True:
            await asyncio.sleep(1.0)
            if waiting and time.monotonic() - last_message > STALL_S:
                raise RuntimeError(f"stalled: nothing from the daemon for {STALL_S:.0f} s with "
                                   f"{waiting} requests waiting; {stall_report(daemon.process.pid)}")

    tasks = [asyncio.create_task(reader()) for _ in range(READERS)]
    if reindexing:
        tasks.append(asyncio.create_task(reindexer()))
    tasks += [asyncio.create_task(writer(n)) for n in range(WRITERS)]
    tasks.append(asyncio.create_task(editor()))
    watching = asyncio.create_task(watchdog())  # it ends only by finding a stall
    await asyncio.wait([watching], timeout=WARMUP_S)
    measuring.set()
    started = time.perf_counter()
    await asyncio.wait([watching], timeout=measure_s)
    stop.set()
    seconds = time.perf_counter() - started
    clients = asyncio.gather(*tasks)
    await asyncio.wait([clients, watching], timeout=300, return_when=asyncio.FIRST_COMPLETED)
    if watching.done():
        clients.cancel()
        watching.result()
    watching.cancel()
    if not clients.done():
        raise TimeoutError("the clients did not end within 300 s")
    clients.result()
    return SizeRun(0, 0, times, acks, edits, seconds)


async def run_size(corpus: Path, names: list[str], read_workers: int, write_workers: int,
                   measure_s: float, reindexing: bool) -> SizeRun:
    with tempfile.TemporaryDirectory(prefix="ctxls-lanes-") as tmp:
        root = Path(tmp) / corpus.name
        shutil.copytree(corpus, root, ignore=shutil.ignore_patterns(".ctxls", ".git"))
        edited = max((p for p in root.rglob(f"*{EDITED_SUFFIX}") if "test" not in p.name),
                     key=lambda p: p.stat().st_size)
        daemon = BenchDaemon(root, Path(tmp) / "index.db", DAEMON_OPTIONS,
                             serve=("-c", LAUNCHER, str(read_workers), str(write_workers)))
        await daemon.start()
        try:
            result = await load(daemon, names, edited, measure_s, reindexing)
        finally:
            await daemon.stop()
    result.read_workers, result.write_workers = read_workers, write_workers
    return result


def _ms(latency: Latency) -> str:
    return f"{latency.p50:.0f} / {latency.p95:.0f} ms"


def table(runs: list[SizeRun]) -> str:
    methods = sorted({method for run in runs for method in run.by_method})
    head = ["read×write", "reads p50/p95", *[f"{m.removeprefix('ctxls/')} p50/p95" for m in methods],
            "remember ack p50/p95", "reads/s", "acks/s", "edits"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for run in runs:
        cells = [f"{run.read_workers}×{run.write_workers}", _ms(run.reads),
                 *[_ms(run.by_method[m]) if m in run.by_method else "-" for m in methods],
                 _ms(run.remember_ack), f"{run.reads.n / run.seconds:.1f}",
                 f"{run.remember_ack.n / run.seconds:.1f}", str(run.edits)]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], capture_output=True, text=True, cwd=REPO).stdout.strip()


def write_result(runs: list[SizeRun], corpus: Path, load_before: float, rounds: int,
                 measure_s: float, reindexing: bool) -> Path:
    import report

    best = min(runs, key=lambda run: run.reads.p95)
    rows = [{"target": f"{run.read_workers} read × {run.write_workers} write threads: reads p50/p95, "
                       "remember ack p50/p95",
             "value": f"{_ms(run.reads)}; {_ms(run.remember_ack)} "
                      f"({run.reads.n / run.seconds:.1f} reads/s)",
             "goal": None, "met": None} for run in runs]
    name, section = (("lanes-pool_sizes-reindexing", "Request lanes: pool sizes during a whole re-index")
                     if reindexing else ("lanes-pool_sizes", "Request lanes: pool sizes under a mixed load"))
    return report.write_result(name, {
        "section": section,
        "area": "Recall speed and indexing",
        "issue": 40,
        "date": datetime.date.today().isoformat(),
        "commit": _git("rev-parse", "--short", "HEAD") + ("+dirty" if _git("status", "--porcelain") else ""),
        "command": "nice " + " ".join([os.path.relpath(sys.executable, REPO), *sys.argv]),
        "machine": f"{os.cpu_count()} cores shared with other sessions, load average "
                   f"{load_before:.2f} at start, {os.getloadavg()[0]:.2f} at the end",
        "rows": rows,
        "notes": (f"{corpus.name}, embeddings off, {rounds} round(s) of {measure_s:.0f} s per size: "
                  f"{READERS} clients reading back to back (recall, impact, locate in turn), "
                  f"{WRITERS} remembering with {WRITE_PAUSE_S * 1000:.0f} ms pauses, a didChange every "
                  f"{EDIT_INTERVAL_S * 1000:.0f} ms"
                  f"{', and one client re-indexing the folder back to back' if reindexing else ''}. "
                  f"Lowest read p95: {best.read_workers}×"
                  f"{best.write_workers}. No run stalled (nothing from the daemon for "
                  f"{STALL_S:.0f} s with requests waiting ends a run)."),
        "runs": [run.summary() for run in runs],
    })


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", type=Path, required=True, help="a source tree (copied, never written)")
    parser.add_argument("--sizes", default=",".join(f"{r}x{w}" for r, w in DEFAULT_SIZES),
                        help="read×write pool sizes, e.g. 2x1,6x2")
    parser.add_argument("--rounds", type=int, default=1, help="each size this many times, interleaved")
    parser.add_argument("--seconds", type=float, default=MEASURE_S, help="measured seconds per run")
    parser.add_argument("--reindexing", action="store_true",
                        help="one more client re-indexing the whole folder back to back")
    parser.add_argument("--write-result", action="store_true",
                        help="write bench/results/lanes-pool_sizes.json")
    args = parser.parse_args(argv)
    sizes = [tuple(int(n) for n in size.split("x")) for size in args.sizes.split(",")]
    load_before = os.getloadavg()[0]
    names = definitions(args.corpus)
    runs: dict[tuple[int, int], SizeRun] = {}
    for round_number in range(args.rounds):
        for read_workers, write_workers in (sizes if round_number % 2 == 0 else sizes[::-1]):
            run = asyncio.run(run_size(args.corpus, names, read_workers, write_workers, args.seconds,
                                       args.reindexing))
            print(f"{read_workers}x{write_workers}: reads {_ms(run.reads)}, remember ack "
                  f"{_ms(run.remember_ack)}, {run.reads.n} reads, {run.edits} edits "
                  f"(load {os.getloadavg()[0]:.2f})", flush=True)
            if (read_workers, write_workers) in runs:
                runs[read_workers, write_workers].add(run)
            else:
                runs[read_workers, write_workers] = run
    ordered = [runs[size] for size in sorted(runs)]
    print(table(ordered))
    if args.write_result:
        print(write_result(ordered, args.corpus, load_before, args.rounds, args.seconds, args.reindexing))
    return 0


if __name__ == "__main__":
    sys.exit(main())
