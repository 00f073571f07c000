"""Speed and size: cold and no-op indexing, recall latency, edit-to-recall
latency through the real daemon, peak memory and index size.

* Cold index (every corpus): a child process indexes the corpus into a fresh
  store, then re-indexes it (a no-op) a few times; it reports its own peak RSS
  (``ru_maxrss``) and the store's size (db + wal, before closing).
* Recall (django): :data:`QUERIES` queries (half docstring first sentences from
  the retrieval set, half function names) in-process through
  ``Engine.recall(query, ["code"], 10)``, and the same ones over the daemon.
* didChange -> recall (django): the real ``ctxls serve`` over stdio with
  :data:`DAEMON_OPTIONS`, driven by a pygls client. A marker line is added to
  a function of an open buffer; each edit renames its identifier to a fresh
  random word (letters only, so it shares no sub-word with any earlier one),
  then ``ctxls/recall`` is polled until the function is the top hit: back to
  back, then again with pauses (see :data:`POLL_INTERVALS_S`). Latency = send
  of didChange -> first recall answer showing it, minus the debounce (0). For
  scale, the same edits through ``Engine.set_buffer`` in-process are timed too.
* Daemon peak RSS: ``VmHWM`` from /proc/PID/status after its cold index and at
  the end.
* ``--hybrid-store DIR`` instead: hybrid recall in process on a store whose
  vectors are already there (bench/fast_tier.py ``--store DIR`` makes one of
  django's stripped copy), the query's embedding included (warmed with other
  queries, so no cached query vector answers), by the tier that serves;
  ``--profile FILE`` writes a cProfile (request thread CPU time) of the timed queries.
"""

from __future__ import annotations

import argparse
import ast
import asyncio
import cProfile
import json
import math
import os
import random
import resource
import statistics
import string
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.lsp.client import LanguageClient
from pygls.protocol import default_converter
from pygls.protocol.json_rpc import JsonRPCResponseMessage

from ctxls.index import postings
from ctxls.index.engine import Engine, EngineOptions

from corpora import CORPORA, corpus_id, corpus_path
from dataset import build_dataset

QUERIES = 200
EDITS = 200
WARMUP_QUERIES = 20
NOOP_REPEATS = 5
# The buffer edited in the didChange benchmark: a large file, a short method.
EDIT_PATH = "django/db/models/query.py"
EDIT_SYMBOL = "QuerySet.filter"
DEBOUNCE_MS = 0
# The daemon's initializationOptions. The semantic tier (on by default) embeds
# the whole corpus in the background; it is off here so these numbers are the
# lexical pipeline's alone.
DAEMON_OPTIONS = {"debounceMs": DEBOUNCE_MS, "embeddings": False}
# Pauses between recall polls in the didChange benchmark: back to back (the
# measure), and a gentler client whose polls do not compete with the indexing
# thread for the GIL.
POLL_INTERVALS_S = (0.0, 0.005)
# Give up on one edit (and count it as a failure) after this long.
EDIT_TIMEOUT_S = 10.0


@dataclass
class Latency:
    """Milliseconds; p95 is the nearest-rank percentile."""

    n: int
    p50: float
    p95: float
    mean: float
    max: float

    @classmethod
    def of(cls, seconds: list[float]) -> Latency:
        ms = sorted(s * 1000 for s in seconds)
        if not ms:
            return cls(0, math.nan, math.nan, math.nan, math.nan)
        return cls(len(ms), statistics.median(ms), ms[math.ceil(0.95 * len(ms)) - 1],
                   statistics.fmean(ms), ms[-1])


@dataclass
class ColdIndex:
    corpus: str
    files: int
    chunks: int
    seconds: float
    noop_first: float
    noop_median: float
    max_rss_kb: int
    db_bytes: int
    wal_bytes: int

    @property
    def files_per_s(self) -> float:
        return self.files / self.seconds


@dataclass
class ChangeRun:
    """EDITS edits: didChange -> visible in recall, debounce subtracted."""

    poll_interval_ms: float
    latency: Latency
    polls_median: int
    failures: int  # edits not visible within EDIT_TIMEOUT_S


@dataclass
class DaemonRun:
    cold_index_seconds: float  # initialized -> work-done progress end
    recall: Latency
    changes: list[ChangeRun]  # one per POLL_INTERVALS_S
    vmhwm_kb_indexed: int
    vmhwm_kb_end: int


@dataclass
class PerfReport:
    cold: dict[str, ColdIndex]  # corpus name -> cold index
    recall: dict[str, Latency]  # "all" | "sentence" | "identifier" -> in-process latency
    set_buffer: Latency  # in-process Engine.set_buffer of the edited file
    edited_lines: int
    daemon: DaemonRun
    seconds: float


# -- cold and no-op index (child process) -------------------------------------

def _cold_index_child(root: str, db: str) -> None:
    """Run in a child process so ru_maxrss is the indexing's alone; prints JSON."""
    engine = Engine(root, EngineOptions(db_path=db))
    started = time.perf_counter()
    stats = engine.cold_index()
    seconds = time.perf_counter() - started
    noop = []
    for _ in range(NOOP_REPEATS):
        started = time.perf_counter()
        engine.index()
        noop.append(time.perf_counter() - started)
    size = {suffix: os.path.getsize(db + suffix) if os.path.exists(db + suffix) else 0
            for suffix in ("", "-wal")}
    print(json.dumps({
        "files": stats.added, "chunks": engine.status()["chunks"], "seconds": seconds,
        "noop_first": noop[0], "noop_median": sorted(noop)[len(noop) // 2],
        "max_rss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
        "db_bytes": size[""], "wal_bytes": size["-wal"]}))
    engine.close()


def cold_index(name: str, db: Path) -> ColdIndex:
    out = subprocess.run([sys.executable, __file__, "--cold-index-child", str(corpus_path(name)),
                          str(db)], check=True, capture_output=True, text=True).stdout
    return ColdIndex(corpus_id(name), **json.loads(out))


# -- queries and edits ----------------------------------------------------------

def recall_queries(n: int) -> list[tuple[str, str]]:
    """(type, query): n/2 docstring first sentences and n/2 function names,
    picked deterministically from the django retrieval set."""
    queries = sorted(build_dataset("django").queries, key=lambda q: q.target)
    rng = random.Random(2)
    picked = rng.sample(queries, n)
    half = n // 2
    return ([("sentence", q.query) for q in picked[:half]]
            + [("identifier", q.symbol.rsplit(".", 1)[-1]) for q in picked[half:]])


def time_recall_in_process(engine: Engine, queries: list[tuple[str, str]],
                           warmup: list[str] | None = None,
                           cpu_seconds: list[float] | None = None) -> dict[str, Latency]:
    """Latency per query type (and "all"), after ``warmup`` queries (default:
    the first timed ones; pass others when a query cache must not answer);
    ``cpu_seconds`` gets each query's CPU time on the calling thread."""
    for query in warmup if warmup is not None else [q for _, q in queries[:WARMUP_QUERIES]]:
        engine.recall(query, ["code"], 10)
    by_type: dict[str, list[float]] = {"all": []}
    for kind, query in queries:
        started, cpu_started = time.perf_counter(), time.thread_time()
        engine.recall(query, ["code"], 10)
        elapsed = time.perf_counter() - started
        if cpu_seconds is not None:
            cpu_seconds.append(time.thread_time() - cpu_started)
        by_type["all"].append(elapsed)
        by_type.setdefault(kind, []).append(elapsed)
    return {kind: Latency.of(times) for kind, times in by_type.items()}


class MarkedBuffer:
    """The edited file with a marker line ``<ident> = None`` in EDIT_SYMBOL."""

    def __init__(self, root: Path):
        self.text = (root / EDIT_PATH).read_text(encoding="utf-8")
        lines = self.text.split("\n")
        body = _find_function(ast.parse(self.text), EDIT_SYMBOL.split(".")).body
        self.line = body[-1].lineno - 1  # the marker goes above the last statement
        self.column = body[-1].col_offset
        self.rng = random.Random(7)
        self.ident = self.fresh()
        lines.insert(self.line, " " * self.column + f"{self.ident} = None")
        self.lines = lines

    def fresh(self) -> str:
        return "".join(self.rng.choice(string.ascii_lowercase) for _ in range(14))

    def rename(self) -> tuple[str, str]:
        """Give the marker a fresh identifier: (old, new)."""
        old, self.ident = self.ident, self.fresh()
        self.lines[self.line] = " " * self.column + f"{self.ident} = None"
        return old, self.ident

    @property
    def current(self) -> str:
        return "\n".join(self.lines)


def _find_function(module: ast.Module, names: list[str]) -> ast.FunctionDef:
    node: Any = module
    for name in names:
        node = next(n for n in node.body if getattr(n, "name", None) == name)
    return node


def time_set_buffer(engine: Engine, root: Path, edits: int) -> Latency:
    # A pass leaves the import resolver built, as the daemon's cold index does;
    # without one, every buffer update would rebuild it from all file rows.
    engine.index()
    buffer = MarkedBuffer(root)
    engine.set_buffer(EDIT_PATH, buffer.current)
    times = []
    for _ in range(edits):
        buffer.rename()
        started = time.perf_counter()
        engine.set_buffer(EDIT_PATH, buffer.current)
        times.append(time.perf_counter() - started)
    engine.close_buffer(EDIT_PATH)
    return Latency.of(times)


# -- the daemon -------------------------------------------------------------------

def _raw_result_converter():
    """Keep custom requests' results as plain dicts (pygls would make namedtuples)."""
    converter = default_converter()
    default_hook = converter.get_structure_hook(JsonRPCResponseMessage)

    def structure(obj: Any, cls: type) -> Any:
        return cls(**obj) if cls is JsonRPCResponseMessage else default_hook(obj, cls)

    converter.register_structure_hook(JsonRPCResponseMessage, structure)
    return converter


def _vmhwm_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return 0


async def _drain(stream: asyncio.StreamReader) -> None:
    """Read the daemon's stderr so a chatty log can never block it."""
    while await stream.read(65536):
        pass


class BenchDaemon:
    """The real ``ctxls serve`` over stdio with one folder, for timing: started
    and indexed by ``start()``; ``MarkedBuffer`` edits go to it as didChange.
    ``serve``: the Python arguments that start it (bench/lanes.py's launcher)."""

    def __init__(self, root: Path, db: Path, options: dict,
                 serve: tuple[str, ...] = ("-m", "ctxls.daemon.cli", "serve")):
        self.root, self.db, self.options, self.serve = root, db, options, serve
        self.client = LanguageClient("ctxls-bench", "1", converter_factory=_raw_result_converter)
        self.indexed = asyncio.Event()
        self.cold_seconds = 0.0
        self.doc_uri = (root / EDIT_PATH).as_uri()
        self.version = 1
        titles: dict = {}

        @self.client.feature(types.WINDOW_WORK_DONE_PROGRESS_CREATE)
        def on_progress_create(params):
            return None

        @self.client.feature(types.PROGRESS)
        def on_progress(params):
            value = params.value
            kind = value.get("kind") if isinstance(value, dict) else getattr(value, "kind", None)
            title = value.get("title") if isinstance(value, dict) else getattr(value, "title", None)
            if kind == "begin" and title:
                titles[params.token] = title
            # The index pass's progress, not the embedding backlog's.
            if kind == "end" and "index" in titles.get(params.token, "index"):
                self.indexed.set()

    async def start(self) -> None:
        await self.client.start_io(sys.executable, *self.serve)
        self.process = self.client._server  # pygls keeps the child process here
        assert self.process is not None and self.process.stderr is not None
        self._drain = asyncio.create_task(_drain(self.process.stderr))
        uri = self.root.as_uri()
        await self.client.initialize_async(types.InitializeParams(
            capabilities=types.ClientCapabilities(
                window=types.WindowClientCapabilities(work_done_progress=True)),
            root_uri=uri, workspace_folders=[types.WorkspaceFolder(uri=uri, name=self.root.name)],
            initialization_options=self.options | {"dbPath": str(self.db)}))
        started = time.perf_counter()
        self.client.initialized(types.InitializedParams())
        await asyncio.wait_for(self.indexed.wait(), timeout=600)
        self.cold_seconds = time.perf_counter() - started

    async def request(self, method: str, params: dict) -> Any:
        return await self.client.protocol.send_request_async(method, params)

    async def time_recalls(self, queries: list[str], warmup: list[str]) -> Latency:
        for query in warmup:
            await self.request("ctxls/recall", {"query": query, "kind": "code", "n": 10})
        times = []
        for query in queries:
            t0 = time.perf_counter()
            await self.request("ctxls/recall", {"query": query, "kind": "code", "n": 10})
            times.append(time.perf_counter() - t0)
        return Latency.of(times)

    async def visible(self, ident: str, line: int, deadline: float, interval: float = 0.0
                      ) -> int | None:
        """Recall polls until ``ident`` finds the chunk holding the marker's
        ``line`` first (by its span: packing may file EDIT_SYMBOL's lines under
        a sibling's name); None on timeout."""
        polls = 0
        while time.perf_counter() < deadline:
            polls += 1
            hits = (await self.request("ctxls/recall", {"query": ident, "kind": "code", "n": 1}))["hits"]
            if (hits and hits[0]["path"] == EDIT_PATH
                    and hits[0]["chunk"]["startLine"] <= line <= hits[0]["chunk"]["endLine"]):
                return polls
            if interval:
                await asyncio.sleep(interval)
        return None

    async def open(self, buffer: MarkedBuffer) -> None:
        self.client.text_document_did_open(types.DidOpenTextDocumentParams(types.TextDocumentItem(
            uri=self.doc_uri, language_id="python", version=self.version, text=buffer.current)))
        if await self.visible(buffer.ident, buffer.line, time.perf_counter() + 60) is None:
            raise RuntimeError("the opened buffer never became visible in recall")

    def rename(self, buffer: MarkedBuffer) -> str:
        """Send the marker's rename as an incremental didChange; the new identifier."""
        self.version += 1
        old, new = buffer.rename()
        start = types.Position(buffer.line, buffer.column)
        change = types.TextDocumentContentChangePartial(
            range=types.Range(start, types.Position(buffer.line, buffer.column + len(old))), text=new)
        self.client.text_document_did_change(types.DidChangeTextDocumentParams(
            types.VersionedTextDocumentIdentifier(uri=self.doc_uri, version=self.version), [change]))
        return new

    async def edit_run(self, buffer: MarkedBuffer, edits: int, interval: float) -> ChangeRun:
        """didChange -> the new identifier finds the edited function, ``edits`` times."""
        times, polls, failures = [], [], 0
        for _ in range(edits):
            t0 = time.perf_counter()
            new = self.rename(buffer)
            n = await self.visible(new, buffer.line, t0 + EDIT_TIMEOUT_S, interval)
            if n is None:
                failures += 1
                continue
            times.append(time.perf_counter() - t0 - self.options.get("debounceMs", 0) / 1000)
            polls.append(n)
        return ChangeRun(interval * 1000, Latency.of(times),
                         sorted(polls)[len(polls) // 2] if polls else 0, failures)

    def vmhwm_kb(self) -> int:
        return _vmhwm_kb(self.process.pid)

    async def stop(self) -> None:
        try:
            await asyncio.wait_for(self.client.shutdown_async(None), timeout=30)
            self.client.exit(None)
        finally:
            await self.client.stop()
            self._drain.cancel()


async def _daemon_run(root: Path, db: Path, queries: list[tuple[str, str]], edits: int) -> DaemonRun:
    daemon = BenchDaemon(root, db, DAEMON_OPTIONS)
    await daemon.start()
    try:
        vmhwm_indexed = daemon.vmhwm_kb()
        recall = await daemon.time_recalls([q for _, q in queries],
                                           [q for _, q in queries[:WARMUP_QUERIES]])
        buffer = MarkedBuffer(root)
        await daemon.open(buffer)
        changes = [await daemon.edit_run(buffer, edits, interval) for interval in POLL_INTERVALS_S]
        vmhwm_end = daemon.vmhwm_kb()
    finally:
        await daemon.stop()
    return DaemonRun(daemon.cold_seconds, recall, changes, vmhwm_indexed, vmhwm_end)


# -- all of it ---------------------------------------------------------------------

def run_perf(names: list[str] | None = None, queries: int = QUERIES, edits: int = EDITS,
             log=print) -> PerfReport:
    """Cold index of ``names`` (default: all corpora); the rest on django."""
    names = names or list(CORPORA)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="ctxls-bench-perf-") as tmp:
        cold = {}
        for name in names:
            cold[name] = cold_index(name, Path(tmp) / f"{name}.db")
            log(f"perf: cold index {cold[name].corpus}: {cold[name].seconds:.1f}s, "
                f"no-op {cold[name].noop_first:.3f}s")
        root = corpus_path("django")
        db = Path(tmp) / "django.db"
        if "django" not in cold:  # the rest needs django's store all the same
            cold_index("django", db)
        picked = recall_queries(queries)
        engine = Engine(root, EngineOptions(db_path=str(db)))
        engine.warm_postings()  # as the daemon after its first pass (index/postings.py)
        recall = time_recall_in_process(engine, picked)
        log(f"perf: in-process recall p50 {recall['all'].p50:.1f} ms")
        set_buffer = time_set_buffer(engine, root, edits)
        log(f"perf: in-process set_buffer p50 {set_buffer.p50:.1f} ms")
        engine.close()
        daemon = asyncio.run(_daemon_run(root, Path(tmp) / "daemon.db", picked, edits))
        log(f"perf: daemon didChange->recall p95 {daemon.changes[0].latency.p95:.1f} ms")
    return PerfReport(cold, recall, set_buffer, len(MarkedBuffer(root).lines), daemon,
                      time.perf_counter() - started)


def _rss_kb() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def hybrid_recall(store: Path, queries: int, profile: str | None, embed_model: str | None) -> dict:
    """Hybrid recall latency on django's stripped copy, from a store embedded before."""
    picked = recall_queries(queries)
    timed = {query for _, query in picked}
    warmup = [q.query for q in build_dataset("django").queries if q.query not in timed][:WARMUP_QUERIES]
    engine = Engine(build_dataset("django").tree,
                    EngineOptions(embeddings=True, embed_model=embed_model,
                                  db_path=str(store / "index.db")))
    engine.serve_stored_index()
    # The daemon's state after its first pass: the common terms' postings
    # loaded in the background (index/postings.py).
    rss_before, started = _rss_kb(), time.process_time()
    warmed = engine.warm_postings()
    warm = {"terms": warmed, "cpu_s": round(time.process_time() - started, 2),
            "entries": postings.cached_entries(), "rss_added_mib": round((_rss_kb() - rss_before) / 1024, 1)}
    # CPU time of the request thread: comparable across machine loads, unlike wall time.
    profiler = cProfile.Profile(time.thread_time) if profile else None
    if profiler is not None:
        for query in warmup:
            engine.recall(query, ["code"], 10)
        profiler.enable()
        latency = time_recall_in_process(engine, picked, warmup=[])
        profiler.disable()
        profiler.dump_stats(profile)
    else:
        cpu: list[float] = []
        latency = time_recall_in_process(engine, picked, warmup=warmup, cpu_seconds=cpu)
        latency["request thread CPU"] = Latency.of(cpu)
    tier = engine.serving_tier()
    served = tier.embedder.name if tier is not None and tier.embedder is not None else None
    engine.close()
    return {"served_by": served, "load_average": [round(x, 2) for x in os.getloadavg()],
            "postings_warm_up": warm, "postings_entries_after": postings.cached_entries(),
            **{kind: asdict(lat) for kind, lat in latency.items()}}


def _lat(label: str, lat: Latency, target: str = "") -> str:
    return (f"| {label} | {lat.p50:.1f} | {lat.p95:.1f} | {lat.mean:.1f} | {lat.max:.1f} | "
            f"{lat.n} | {target} |")


def _polling(change: ChangeRun) -> str:
    return f"{change.poll_interval_ms:g} ms apart" if change.poll_interval_ms else "back to back"


def markdown(report: PerfReport) -> str:
    mb = 1024 * 1024
    out = ["### Indexing", "",
           "| corpus | files | chunks | cold index | files/s | no-op re-index (first / median of "
           f"{NOOP_REPEATS}) | peak RSS | db + wal |",
           "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for c in report.cold.values():
        out.append(f"| {c.corpus} | {c.files} | {c.chunks} | {c.seconds:.2f} s | "
                   f"{c.files_per_s:.0f} | {c.noop_first:.3f} s / {c.noop_median:.3f} s | "
                   f"{c.max_rss_kb / 1024:.0f} MiB | {c.db_bytes / mb:.1f} + "
                   f"{c.wal_bytes / mb:.1f} MiB |")
    out.append("")
    out.append("Targets (django): cold index ≤ 20 s, no-op re-index ≤ 0.3 s.")
    d = report.daemon
    out += ["", "### Latency on django (ms)", "",
            "| measure | p50 | p95 | mean | max | n | target |",
            "|---|---:|---:|---:|---:|---:|---|",
            _lat("recall in-process, all queries", report.recall["all"], "p50 ≤ 10"),
            _lat("recall in-process, docstring sentences", report.recall["sentence"]),
            _lat("recall in-process, function names", report.recall["identifier"]),
            _lat("recall over the daemon (round trip)", d.recall),
            *(_lat(f"didChange → top hit in recall (daemon), polls {_polling(c)}", c.latency,
                   "" if c.poll_interval_ms else "p95 ≤ 50") for c in d.changes),
            _lat(f"Engine.set_buffer of {EDIT_PATH} (in-process)", report.set_buffer),
            "", f"- didChange: an incremental change renames a marker identifier in `{EDIT_SYMBOL}` "
            f"of `{EDIT_PATH}` ({report.edited_lines} lines); debounce {DEBOUNCE_MS} ms, so "
            f"nothing is subtracted; daemon options `{json.dumps(DAEMON_OPTIONS)}`.",
            *(f"- Polls {_polling(c)}: median {c.polls_median} recall polls per edit, {c.failures} "
              f"of {c.latency.n + c.failures} edits not visible within {EDIT_TIMEOUT_S:g} s."
              for c in d.changes),
            "", "### Daemon (django)", "",
            "| measure | value |", "|---|---:|",
            f"| cold index, initialized → progress end | {d.cold_index_seconds:.2f} s |",
            f"| peak RSS (VmHWM) after cold index | {d.vmhwm_kb_indexed / 1024:.0f} MiB |",
            f"| peak RSS (VmHWM) at the end | {d.vmhwm_kb_end / 1024:.0f} MiB |",
            "", f"Perf run took {report.seconds:.0f} s."]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("corpora", nargs="*", metavar="CORPUS",
                        help=f"cold-index these (default: all of {', '.join(CORPORA)})")
    parser.add_argument("--queries", type=int, default=QUERIES)
    parser.add_argument("--edits", type=int, default=EDITS)
    parser.add_argument("--json", action="store_true", help="print the raw numbers as JSON")
    parser.add_argument("--hybrid-store", type=Path,
                        help="only time hybrid recall on this embedded store of django's stripped copy")
    parser.add_argument("--embed-model", help="with --hybrid-store: the model its vectors are of "
                        "(default: the default model, its fast tier serving until it takes over)")
    parser.add_argument("--profile", help="with --hybrid-store: write a cProfile of the timed queries")
    parser.add_argument("--cold-index-child", nargs=2, metavar=("ROOT", "DB"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.cold_index_child:
        _cold_index_child(*args.cold_index_child)
        return 0
    if args.hybrid_store:
        print(json.dumps(hybrid_recall(args.hybrid_store, args.queries, args.profile, args.embed_model),
                         indent=1))
        return 0
    unknown = set(args.corpora) - set(CORPORA)
    if unknown:
        parser.error(f"unknown corpus {', '.join(sorted(unknown))}; known: {', '.join(CORPORA)}")
    report = run_perf(args.corpora or None, args.queries, args.edits,
                      log=lambda m: print(m, file=sys.stderr))
    print(json.dumps(asdict(report), indent=1) if args.json else markdown(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
