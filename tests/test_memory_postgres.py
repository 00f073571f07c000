"""Team memory on PostgreSQL: what only a shared database has to prove —
the database's own tenant fence, many daemons at once, migrations, faults,
and moving memory between backends. (Every memory verb's contract is checked
on both backends by tests/test_memory.py.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from contextlib import contextmanager
from pathlib import Path

import psycopg
import pytest
from pygls.exceptions import JsonRpcException

from conftest import SAMPLE_FILES, serve, write_tree
from pg_server import DAEMON_ROLE, PgServer, SilenceableLink, server_folder

from ctxls.index.engine import Engine, EngineOptions
from ctxls.index.errors import EngineError, MemoryUnavailable
from ctxls.index.memory import Memory
from ctxls.index.memory.model import Write, whole_segment
from ctxls.index.memory.postgres import SCHEMA_VERSION, MemorySchemaError, PostgresMemoryStore
from ctxls.index.scopes import EVERYTHING, named_scope
from ctxls.index.semantic import unfingerprinted
from ctxls.index.tokenize import query_terms


@pytest.fixture
def url(pg_server: PgServer) -> str:
    return pg_server.fresh_database()


@pytest.fixture
def memory(url: str):
    opened = Memory(PostgresMemoryStore(url))
    yield opened
    opened.backend.close()


def _tenants(memory: Memory) -> None:
    for tenant in ("alice", "bob"):
        memory.remember(named_scope(tenant), "creds", f"{tenant} password is secret-{tenant}")
        memory.ingest(named_scope(tenant), f"{tenant}.md", text=f"# {tenant}\n\n{tenant} notes\n")
    memory.remember(named_scope("@global"), "policy", "every deploy needs a review")


def test_row_level_security_fences_raw_sql_under_the_daemons_role(memory: Memory, url: str):
    _tenants(memory)
    with psycopg.connect(url, autocommit=True) as conn:  # the daemon's role, no ctxls code
        # Naming no scope: the shared tier only, for every table.
        assert conn.execute("SELECT scope, key FROM ctxls_memory").fetchall() == [("@global", "policy")]
        assert conn.execute("SELECT count(*) FROM ctxls_memory_files").fetchone()[0] == 0
        # Naming alice: alice's rows and the shared tier, never bob's, whatever the query says.
        with conn.transaction():
            conn.execute("SELECT set_config('ctxls.visible', '[\"alice\"]', true), "
                         "set_config('ctxls.home', 'alice', true)")
            seen = conn.execute("SELECT DISTINCT scope FROM ctxls_memory WHERE scope = 'bob' OR true"
                                ).fetchall()
            assert sorted(seen) == [("@global",), ("alice",)]
            assert conn.execute("SELECT count(*) FROM ctxls_memory_files WHERE scope = 'bob'"
                                ).fetchone()[0] == 0
            # Writes are fenced too: bob's rows can be neither changed nor removed.
            assert conn.execute("DELETE FROM ctxls_memory WHERE scope = 'bob'").rowcount == 0
            assert conn.execute("UPDATE ctxls_memory SET text = 'x' WHERE true").rowcount == 2
            conn.execute("ROLLBACK")
    with psycopg.connect(url, autocommit=True) as conn:
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            with conn.transaction():
                conn.execute("SELECT set_config('ctxls.home', 'alice', true)")
                conn.execute("INSERT INTO ctxls_memory(scope, key, part, kind, author, format, "
                             "start_line, end_line, text, created_at, occurred_at, embed_hash, tsv) "
                             "VALUES ('bob', 'planted', 0, 'fact', 'agent', 'text', 0, 0, 'x', 0, 0, "
                             "'h', ''::tsvector)")
    assert memory.count(named_scope("bob")) == 3  # bob's two ids and the shared policy


def test_one_round_trip_reads_are_fenced_and_leave_no_tenancy_on_the_connection(memory: Memory):
    _tenants(memory)
    store = memory.backend
    # Reads send the tenancy and their statements as one query: the settings hold
    # for the statements after them, even one that forgets its own fence ...
    (seen,) = store._read(named_scope("alice"), [("SELECT DISTINCT scope FROM ctxls_memory "
                                                   "ORDER BY 1", [])])
    assert seen == [("@global",), ("alice",)]
    found = memory.search_kinds(["fact", "doc"], "password notes", 5, named_scope("alice"))
    assert [(r.scope, r.key) for r in found["fact"]] == [("alice", "creds")]
    assert [(r.scope, r.key) for r in found["doc"]] == [("alice", "alice.md")]
    # ... and end with it: the pooled connection names no tenant afterwards.
    with store.pool.connection() as conn:
        assert set(conn.execute("SELECT current_setting('ctxls.visible', true), "
                                "current_setting('ctxls.home', true), "
                                "current_setting('ctxls.all', true)").fetchone()) <= {None, ""}
        assert conn.execute("SELECT DISTINCT scope FROM ctxls_memory").fetchall() == [("@global",)]


def test_a_value_over_a_postgresql_limit_fails_the_request_not_the_database(memory: Memory):
    """Every OperationalError was "team memory is unavailable" (-32010), a
    limit of PostgreSQL's own too (a tsvector over 1 MB, memory probe),
    though the database was up: a client would wait for an outage to end.
    It is the statement's failure (-32603), and the database stays ready."""
    store = memory.backend
    too_long = " ".join(f"w{n}" for n in range(300_000))  # a tsvector of some 4 MB
    with pytest.raises(EngineError) as refused:
        with store._raw() as conn:
            conn.execute("SELECT to_tsvector('simple', %s)", [too_long])
    assert not isinstance(refused.value, MemoryUnavailable) and refused.value.code == -32603
    assert "too long for tsvector" in refused.value.message
    assert store.unavailable() is None


def test_two_daemons_see_each_others_writes_and_upserts_race_safely(url: str):
    first, second = Memory(PostgresMemoryStore(url)), Memory(PostgresMemoryStore(url))
    try:
        first.remember(named_scope("team"), "deploy-env", "The deploy fails when FOO_URL is unset")
        # Read-your-writes across connections: acknowledged means committed.
        assert [r.key for r in second.search("fact", "deploying", 5, named_scope("team"))] == ["deploy-env"]
        errors: list[BaseException] = []

        def hammer(memory: Memory, name: str) -> None:
            try:
                for i in range(20):
                    memory.remember(named_scope("team"), "contended", f"{name} wrote version {i}")
                    memory.ingest(named_scope("team"), "shared.md",
                                  text=f"# Shared\n\n{name} {i}\n\n## Part\n\nmore {i}\n")
            except BaseException as exc:  # noqa: BLE001 - reported below
                errors.append(exc)

        threads = [threading.Thread(target=hammer, args=(m, n))
                   for m, n in ((first, "one"), (second, "two"), (first, "three"))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert errors == []
        page = second.enumerate(named_scope("team"), "fact")
        assert sorted(r.key for r in page.rows) == ["contended", "deploy-env"]  # one row per id
        node = first.node("shared.md", named_scope("team"))
        assert [s.part for s in node.segments] == [0, 1]
        assert first.item("shared.md", named_scope("team")).text.startswith("# Shared")
    finally:
        first.backend.close()
        second.backend.close()


def test_purge_runs_once_across_daemons(url: str):
    stores = [Memory(PostgresMemoryStore(url)) for _ in range(3)]
    try:
        for i in range(30):
            stores[0].remember(named_scope("team"), f"old-{i}", "expired note", expires_at=1000)
        stores[0].remember(named_scope("team"), "kept", "still valid")
        removed: list[int] = []
        threads = [threading.Thread(target=lambda m=m: removed.append(m.purge(now=2000)))
                   for m in stores]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert sorted(removed) == [0, 0, 30]  # serialised by the advisory lock: one did the work
        assert stores[1].count(EVERYTHING) == 1
    finally:
        for memory in stores:
            memory.backend.close()


def test_migrations_are_versioned_and_a_newer_schema_is_refused(url: str):
    store = PostgresMemoryStore(url, migrate=False)
    try:
        with pytest.raises(MemoryUnavailable, match="ctxls memory migrate"):
            store.count(EVERYTHING, ["fact"], 0)  # schema 0: not migrated, not guessed
        assert store.migrate() == (0, SCHEMA_VERSION)
        assert store.migrate() == (SCHEMA_VERSION, SCHEMA_VERSION)  # idempotent
    finally:
        store.close()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("UPDATE ctxls_memory_meta SET value = %s WHERE key = 'schema_version'",
                     (str(SCHEMA_VERSION + 1),))
    newer = PostgresMemoryStore(url)
    try:
        with pytest.raises(MemorySchemaError, match="reads up to"):
            newer.count(EVERYTHING, ["fact"], 0)
    finally:
        newer.close()
    with psycopg.connect(url, autocommit=True) as conn:  # left untouched
        assert conn.execute("SELECT value FROM ctxls_memory_meta WHERE key = 'schema_version'"
                            ).fetchone()[0] == str(SCHEMA_VERSION + 1)


def _pending_full_text_entries(pg_server: PgServer, url: str) -> int:
    """Entries waiting in the fact full-text index's pending list (pgstattuple)."""
    with pg_server.admin(url.rsplit("/", 1)[1]) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS pgstattuple")
        return conn.execute("SELECT pending_tuples FROM pgstatginindex('ctxls_memory_tsv_fact')"
                            ).fetchone()[0]


def test_schema_3_full_text_indexes_keep_no_pending_list(pg_server: PgServer, url: str):
    """Every full-text query scans the pending list whole (~25 ms at 1M facts
    with it full): schema 3 merges it and writes straight to the index."""
    store = PostgresMemoryStore(url, migrate=False)
    try:
        assert store.migrate(target=2) == (0, 2)
        memory = Memory(store)
        store._ready = True  # read and write under schema 2 before migrating
        for i in range(20):
            memory.remember(named_scope("alice"), f"note-{i}", f"deploy note number {i}")
        assert _pending_full_text_entries(pg_server, url) > 0
        assert store.migrate() == (2, SCHEMA_VERSION)
        assert _pending_full_text_entries(pg_server, url) == 0  # merged by the migration
        memory.remember(named_scope("alice"), "later", "a deploy note written under schema 3")
        assert _pending_full_text_entries(pg_server, url) == 0  # written straight to the index
        assert len(memory.search("fact", "deploy note", 50, named_scope("alice"))) == 21
    finally:
        store.close()


def _plan(store: PostgresMemoryStore, url: str, query: str) -> str:
    """EXPLAIN of recall's full-text statement as the daemon runs it (alice's
    fence), sequential scans priced out so that only what is usable counts."""
    terms = query_terms(query)
    sql, args = store.lexical_statement(["fact"], terms, 10, named_scope("alice"), 0)
    with psycopg.connect(url) as conn:
        conn.execute("SELECT set_config('ctxls.visible', '[\"alice\"]', true)")
        conn.execute("ANALYZE ctxls_memory")  # as autovacuum would have by now
        conn.execute("SET LOCAL enable_seqscan = off")
        return "\n".join(line for (line,) in conn.execute("EXPLAIN " + sql, args))


def test_an_older_schema_migrates_and_recall_uses_the_full_text_index(pg_server: PgServer,
                                                                       url: str):
    old = PostgresMemoryStore(url, migrate=False)
    try:
        assert old.migrate(target=1) == (0, 1)
    finally:
        old.close()
    with psycopg.connect(url) as conn:  # rows written under schema 1
        conn.execute("SELECT set_config('ctxls.all', 'on', true)")
        conn.execute(
            "INSERT INTO ctxls_memory(scope, key, part, kind, author, format, start_line, end_line, "
            "text, created_at, occurred_at, embed_hash, tsv) SELECT CASE WHEN i % 2 = 0 THEN "
            "'alice' ELSE 'bob' END, 'note-' || i, 0, 'fact', 'agent', 'text', 0, 0, t, 0, 0, "
            "md5(t), to_tsvector('english', t) FROM (SELECT i, 'note ' || md5(i::text) AS t "
            "FROM generate_series(1, 400) i) s")
        conn.execute(
            "INSERT INTO ctxls_memory(scope, key, part, kind, author, format, start_line, end_line, "
            "text, created_at, occurred_at, embed_hash, tsv) VALUES ('alice', 'deploy-env', 0, "
            "'fact', 'agent', 'text', 0, 0, 'The deploy fails when FOO_URL is unset', 0, 0, 'h', "
            "to_tsvector('english', 'The deploy fails when FOO_URL is unset'))")
    warnings: list[str] = []
    store = PostgresMemoryStore(url, warn=warnings.append, migrate=False)
    try:
        with pytest.raises(MemoryUnavailable, match="ctxls memory migrate"):
            store.count(EVERYTHING, ["fact"], 0)  # schema 1 is not read as if it were 2
        assert store.migrate() == (1, SCHEMA_VERSION)
        memory = Memory(store)
        assert [r.key for r in memory.search("fact", "deploy unset", 5, named_scope("alice"))] \
            == ["deploy-env"]
        assert memory.count(named_scope("alice")) == 201  # nothing lost on the way
        assert warnings == []  # the fixture's database has the match marked LEAKPROOF
        with psycopg.connect(url) as conn:
            indexes = {name for (name,) in conn.execute(
                "SELECT indexname FROM pg_indexes WHERE tablename = 'ctxls_memory'")}
        assert {"ctxls_memory_tsv_fact", "ctxls_memory_tsv_episode", "ctxls_memory_tsv_doc"} <= indexes
        assert "ctxls_memory_tsv" not in indexes
        assert "ctxls_memory_tsv_fact" in _plan(store, url, "deploy unset")
    finally:
        store.close()
    # Without LEAKPROOF, row-level security keeps the planner from the index
    # (the daemon's role sees the same rows, slower), and the daemon says why.
    pg_server.mark_full_text_match(url.rsplit("/", 1)[1], leakproof=False)
    store = PostgresMemoryStore(url, warn=warnings.append)
    try:
        assert [r.key for r in Memory(store).search("fact", "deploy unset", 5,
                                                    named_scope("alice"))] == ["deploy-env"]
        assert len(warnings) == 1 and "LEAKPROOF" in warnings[0]
        assert "ctxls_memory_tsv_fact" not in _plan(store, url, "deploy unset")
    finally:
        store.close()


async def test_database_down_fails_memory_verbs_with_32010_and_code_recall_keeps_working(
        repo: Path):
    with server_folder() as folder:
        await _outage(repo, PgServer(folder))


async def _outage(repo: Path, server: PgServer) -> None:
    server.start()
    server.prepare()
    url = server.fresh_database()
    try:
        async with serve(repo, {"memoryUrl": url}) as s:
            await s.wait_indexed()
            await s.request("ctxls/remember", {"id": "before", "text": "written before the outage"})
            server.stop()
            with pytest.raises(JsonRpcException) as err:
                await s.request("ctxls/remember", {"id": "during", "text": "lost? no: refused"})
            assert err.value.code == -32010
            with pytest.raises(JsonRpcException) as err:
                await s.request("ctxls/count", {})
            assert err.value.code == -32010
            code = await s.request("ctxls/recall", {"query": "send prepared request"})
            assert "pkg/session.py" in [h["path"] for h in code["groups"]["code"]]
            assert code["partial"] is True  # memory was left out, and it says so
            # An indexed file's path names the file, so memory is not asked:
            # node answered -32010 for it while get answered the file.
            for method in ("ctxls/get", "ctxls/node"):
                item = await s.request(method, {"id": "pkg/session.py"})
                assert item["source"] == "file", method
            server.start()  # same port: the pool reconnects on its own

            async def counted():
                try:
                    return (await s.request("ctxls/count", {}))["count"]
                except JsonRpcException:
                    return None
            assert await s.wait_for(counted, timeout=60, interval=0.5) == 1  # "before" survived
            await s.request("ctxls/remember", {"id": "after", "text": "written after the outage"})
            assert (await s.request("ctxls/count", {}))["count"] == 2
    finally:
        server.stop()


def test_export_import_round_trips_exactly_between_backends(tmp_path: Path, url: str):
    root = tmp_path / "repo"
    write_tree(root, SAMPLE_FILES)
    lite = Engine(root, EngineOptions(db_path=str(tmp_path / "a.db")))
    _tenants(lite.memory)
    lite.memory.remember(named_scope("alice"), "ep", "ünïcödé episode\nline two", kind="episode",
                         by="human", occurred_at=1_700_000_000_000, meta={"b": [1, {"z": None}]},
                         expires_at=99_999_999_999_999)
    lite.memory.ingest(named_scope("bob"), "blob.bin", base64_data="AAEC/w==")
    lite.recall("password", scope=named_scope("alice"), log=True)
    lite.demand.flush()
    cli = [sys.executable, "-m", "ctxls.daemon.cli", "memory"]
    exported = subprocess.run([*cli, "export", "--db", str(tmp_path / "a.db")], check=True,
                              capture_output=True, text=True).stdout
    assert exported.count('"type":"demand"') >= 1 and '"type":"upload"' in exported
    subprocess.run([*cli, "import", "--url", url], input=exported, check=True, capture_output=True,
                   text=True)
    from_pg = subprocess.run([*cli, "export", "--url", url], check=True, capture_output=True,
                             text=True).stdout
    assert from_pg == exported
    subprocess.run([*cli, "import", "--db", str(tmp_path / "b.db")], input=from_pg, check=True,
                   capture_output=True, text=True)
    back = subprocess.run([*cli, "export", "--db", str(tmp_path / "b.db")], check=True,
                          capture_output=True, text=True).stdout
    assert back == exported
    # Imported rows are searchable, fenced and whole on the other side.
    team = Memory(PostgresMemoryStore(url))
    try:
        assert [r.key for r in team.search("fact", "password", 5, named_scope("alice"))] == ["creds"]
        assert team.item("blob.bin", named_scope("bob")).text == "AAEC/w=="
        assert team.item("blob.bin", named_scope("alice")) is None
    finally:
        team.backend.close()
        lite.close()
    bad = subprocess.run([*cli, "import", "--url", url], input='{"type": "memory"}\n',
                         capture_output=True, text=True)
    assert bad.returncode == 2 and "line 1" in bad.stderr  # bad input is a usage error


def test_import_embeds_rows_so_they_are_recalled_by_meaning(tmp_path: Path, pg_server: PgServer,
                                                            url: str):
    def record(key: str, text: str) -> str:
        return json.dumps({"type": "memory", "scope": "team", "id": key, "part": 0, "kind": "fact",
                           "by": "human", "format": "text", "symbol": None, "startLine": 0,
                           "endLine": 0, "text": text, "meta": None, "session": None,
                           "createdAt": 1, "occurredAt": 1, "expiresAt": None})
    lines = "\n".join([record("backups", "Postgres snapshots are taken every night"),
                       record("oncall", "Pager duty rotates every Monday")]) + "\n"
    cli = [sys.executable, "-m", "ctxls.daemon.cli", "memory", "import"]
    unembedded = pg_server.fresh_database()
    done = subprocess.run([*cli, "--url", url], input=lines, check=True, capture_output=True,
                          text=True)
    assert "embedded 2 rows" in done.stderr
    subprocess.run([*cli, "--url", unembedded, "--no-embed"], input=lines, check=True,
                   capture_output=True, text=True)
    root = tmp_path / "repo"
    write_tree(root, SAMPLE_FILES)
    for database, found in ((url, ["backups"]), (unembedded, [])):
        engine = Engine(root, EngineOptions(db_path=str(tmp_path / "a.db"), embeddings=True,
                                            memory_url=database))
        try:
            hits = engine.recall("database copies overnight", ["fact"], 1, mode="semantic",
                                 scope=named_scope("team")).hits_by_kind["fact"]
            # By meaning alone: no word of the query is in the row.
            assert [h.path for h in hits] == found
        finally:
            engine.close()


def test_vectors_of_one_model_only_and_another_model_is_refused(tmp_path: Path, url: str):
    root = tmp_path / "repo"
    write_tree(root, SAMPLE_FILES)
    engine = Engine(root, EngineOptions(db_path=str(tmp_path / "a.db"), embeddings=True,
                                        memory_url=url))
    engine.memory.remember(named_scope("team"), "backups", "Postgres snapshots are taken every night")
    # Found by meaning alone, from the vector written with the row.
    hits = engine.recall("database copies overnight", ["fact"], 3, mode="semantic",
                         scope=named_scope("team")).hits_by_kind["fact"]
    assert [h.path for h in hits] == ["backups"]
    stamp = engine.semantic.model_stamp()
    engine.close()
    with psycopg.connect(url, autocommit=True) as conn:
        with conn.transaction():
            conn.execute("SELECT set_config('ctxls.all', 'on', true)")
            assert conn.execute("SELECT value FROM ctxls_memory_meta WHERE key = 'vector_model'"
                                ).fetchone()[0] == stamp
            assert conn.execute("SELECT count(*) FROM ctxls_memory WHERE embedding IS NOT NULL"
                                ).fetchone()[0] == 1
            # The team embedded with the general model, the default before the code model.
            conn.execute("UPDATE ctxls_memory_meta SET value = 'all-MiniLM-L6-v2-int8/384/text-1' "
                         "WHERE key = 'vector_model'")
    warnings: list[str] = []
    other = Engine(root, EngineOptions(db_path=str(tmp_path / "b.db"), embeddings=True,
                                       memory_url=url))
    other.on_warning = warnings.append
    try:
        other.memory.remember(named_scope("team"), "oncall", "Pager duty rotates every Monday")
        assert len(warnings) == 1 and 'embedModel: "all-MiniLM-L6-v2-int8" uses them' in warnings[0]
        # Refused vectors, not refused memory: lexical recall finds both rows.
        lexical = other.recall("snapshots pager", ["fact"], 5, scope=named_scope("team"))
        assert sorted(h.path for h in lexical.hits_by_kind["fact"]) == ["backups", "oncall"]
        assert other.recall("database copies overnight", ["fact"], 3, mode="semantic",
                            scope=named_scope("team")).hits_by_kind["fact"] == []
    finally:
        other.close()
    with psycopg.connect(url, autocommit=True) as conn:
        with conn.transaction():
            conn.execute("SELECT set_config('ctxls.all', 'on', true)")
            assert conn.execute("SELECT key FROM ctxls_memory WHERE embedding IS NULL").fetchall() \
                == [("oncall",)]


def recorded_model(url: str, replace: str | None = None) -> str:
    """The team database's vector_model stamp, set to ``replace`` first when given."""
    with psycopg.connect(url, autocommit=True) as conn:
        with conn.transaction():
            conn.execute("SELECT set_config('ctxls.all', 'on', true)")
            if replace is not None:
                conn.execute("UPDATE ctxls_memory_meta SET value = %s WHERE key = 'vector_model'", (replace,))
            return conn.execute("SELECT value FROM ctxls_memory_meta WHERE key = 'vector_model'").fetchone()[0]


def test_a_team_stamp_written_before_fingerprints_is_adopted(tmp_path: Path, url: str):
    """Teams recorded name/dim/text version before stamps carried the model
    files' fingerprint: the same model keeps the team's vectors (the stamp is
    completed), it does not refuse them."""
    root = tmp_path / "repo"
    write_tree(root, SAMPLE_FILES)
    engine = Engine(root, EngineOptions(db_path=str(tmp_path / "a.db"), embeddings=True, memory_url=url))
    engine.memory.remember(named_scope("team"), "backups", "Postgres snapshots are taken every night")
    stamp = engine.semantic.model_stamp()
    engine.close()
    recorded_model(url, unfingerprinted(stamp))
    warnings: list[str] = []
    later = Engine(root, EngineOptions(db_path=str(tmp_path / "b.db"), embeddings=True, memory_url=url))
    later.on_warning = warnings.append
    try:
        hits = later.recall("database copies overnight", ["fact"], 3, mode="semantic",
                            scope=named_scope("team")).hits_by_kind["fact"]
        assert [h.path for h in hits] == ["backups"] and warnings == []
    finally:
        later.close()
    assert recorded_model(url) == stamp


async def test_status_says_team_memory_is_unreachable_instead_of_ready(repo: Path):
    """status said `ready` through a PostgreSQL outage: only a memory verb's
    -32010 told."""
    with server_folder() as folder:
        server = PgServer(folder)
        server.start()
        server.prepare()
        try:
            async with serve(repo, {"memoryUrl": server.fresh_database()}) as s:
                await s.wait_indexed()

                async def in_state(state: str):
                    status = await s.request("ctxls/status")
                    return status if status["state"] == state else None
                up = await s.wait_for(lambda: in_state("ready"), timeout=30)
                assert up and up["memory"] == {"backend": "postgresql", "schemaVersion": SCHEMA_VERSION,
                                               "reachable": True}
                server.stop()
                down = await s.wait_for(lambda: in_state("degraded"), timeout=30)
                assert down and down["ready"] is False and down["memory"]["reachable"] is False
                assert down["memoryError"]["code"] == -32010
                code = await s.request("ctxls/recall", {"query": "send prepared request"})
                assert "pkg/session.py" in [h["path"] for h in code["groups"]["code"]]
                server.start()
                again = await s.wait_for(lambda: in_state("ready"), timeout=60, interval=0.5)
                assert again and "memoryError" not in again
        finally:
            server.stop()


def _lock_waiters(pg_server: PgServer, url: str) -> int:
    """Backends of the test database waiting for a lock (a row's or an advisory one)."""
    with pg_server.admin() as conn:
        return conn.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = %s AND "
                            "wait_event_type = 'Lock'", (url.rsplit("/", 1)[1],)).fetchone()[0]


def _wait_until(condition, what: str) -> None:
    for _ in range(600):
        if condition():
            return
        threading.Event().wait(0.05)
    raise AssertionError(f"never happened: {what}")


def test_an_ingest_and_a_remember_of_one_id_never_leave_it_torn(pg_server: PgServer, url: str):
    """Under READ COMMITTED a remember racing an ingest of the same (scope,
    id) deleted only the parts it could see, upserted part 0 and dropped the
    upload: the id was left half fact, half document (memory probe; ~40 % of
    unforced races). Memory writes take one advisory lock first, so the id
    ends as one writer's whole. The ingest is held inside its transaction
    here (the upload's row locked), as a slow first writer would be."""
    first, second = Memory(PostgresMemoryStore(url)), Memory(PostgresMemoryStore(url))
    alice = named_scope("alice")
    document = "# One\n\nfirst section\n\n# Two\n\nsecond section words\n\n# Three\n\nthird\n"
    try:
        first.ingest(alice, "notes.md", text="# old\n\nold text\n", key="notes")
        with pg_server.admin(url.rsplit("/", 1)[1]) as admin:
            admin.execute("BEGIN")
            admin.execute("SELECT 1 FROM ctxls_memory_files WHERE key = 'notes' FOR UPDATE")
            ingest = threading.Thread(target=lambda: first.ingest(alice, "notes.md", text=document,
                                                                  key="notes"))
            ingest.start()
            _wait_until(lambda: _lock_waiters(pg_server, url) == 1, "the ingest waits")
            remember = threading.Thread(target=lambda: second.remember(alice, "notes", "a plain fact"))
            remember.start()
            _wait_until(lambda: _lock_waiters(pg_server, url) == 2, "the remember waits")
            admin.execute("COMMIT")
        ingest.join()
        remember.join()
        node = first.node("notes", alice)
        assert [(s.part, s.kind) for s in node.segments] == [(0, "fact")]  # the later writer's, whole
        assert first.item("notes", alice).text == "a plain fact"
        assert first.backend.upload("alice", "notes") is None
        assert first.search("doc", "second section", 5, alice) == []
    finally:
        first.backend.close()
        second.backend.close()


def test_enumerate_never_repeats_or_skips_a_row_while_another_daemon_commits_late(
        pg_server: PgServer, url: str):
    """A row's id (its place in enumerate) was taken at INSERT, not at
    COMMIT: a write that committed after a later one landed before it, so a
    client following the pages saw one row twice and another never (memory
    probe). Memory writes are serialised by an advisory lock: ids come in
    commit order. Daemon C is held just before its COMMIT."""
    inserted, commit = threading.Event(), threading.Event()

    class LateCommit(PostgresMemoryStore):
        @contextmanager
        def _tx(self, scope=None, home=None):
            with super()._tx(scope, home) as conn:
                yield conn
                inserted.set()
                commit.wait(30)

    alice = named_scope("alice")
    a, b, c = (Memory(PostgresMemoryStore(url)), Memory(PostgresMemoryStore(url)),
               Memory(LateCommit(url)))
    try:
        for i in range(4):
            a.remember(alice, f"f{i}", f"fact number {i}")
        late = threading.Thread(target=lambda: c.remember(alice, "from-c", "written by C"))
        late.start()
        inserted.wait(30)
        other = threading.Thread(target=lambda: [b.remember(alice, k, "written by B")
                                                 for k in ("from-b1", "from-b2")])
        other.start()
        _wait_until(lambda: not other.is_alive() or _lock_waiters(pg_server, url) >= 1,
                    "B wrote or waits")
        page = a.enumerate(alice, "fact", 0, 5)
        seen = [r.key for r in page.rows]
        commit.set()
        late.join()
        other.join()
        offset = page.offset + len(page.rows)  # where a client following the pages goes on
        while True:
            page = a.enumerate(alice, "fact", offset, 5)
            if not page.rows:
                break
            seen += [r.key for r in page.rows]
            offset += len(page.rows)
        assert sorted(seen) == sorted(["f0", "f1", "f2", "f3", "from-c", "from-b1", "from-b2"])
    finally:
        for memory in (a, b, c):
            memory.backend.close()


def test_schema_4_rebuilds_every_rows_full_text_as_sqlite_reads_it(url: str):
    """Rows written under schema 3 hold the `english` configuration's
    tsvector (stop words dropped, accents kept): migrating rebuilds each
    row's, so 'who' and 'cafe' find them as on SQLite."""
    old = PostgresMemoryStore(url, migrate=False)
    try:
        assert old.migrate(target=3) == (0, 3)
    finally:
        old.close()
    facts = {("alice", "oncall"): "Who is on call this week: Dana",
             ("bob", "menu"): "The café on the corner closes at noon"}
    with psycopg.connect(url) as conn:  # as schema 3 wrote them
        conn.execute("SELECT set_config('ctxls.all', 'on', true)")
        for (scope, key), text in facts.items():
            conn.execute(
                "INSERT INTO ctxls_memory(scope, key, part, kind, author, format, start_line, "
                "end_line, text, created_at, occurred_at, embed_hash, tsv) VALUES (%s, %s, 0, "
                "'fact', 'agent', 'text', 0, 0, %s, 0, 0, 'h', setweight(to_tsvector('english', %s), "
                "'B') || to_tsvector('english', %s))", (scope, key, text, key, text))
    store = PostgresMemoryStore(url, migrate=False)
    try:
        assert store.migrate() == (3, SCHEMA_VERSION)
        memory = Memory(store)
        assert [r.key for r in memory.search("fact", "who", 5, named_scope("alice"))] == ["oncall"]
        assert [r.key for r in memory.search("fact", "cafe", 5, named_scope("bob"))] == ["menu"]
        assert [r.key for r in memory.search("fact", "oncall", 5, named_scope("alice"))] == ["oncall"]
    finally:
        store.close()


def test_a_wrong_memory_url_names_the_servers_reason(pg_server: PgServer):
    """A database (or role) that does not exist read as an outage: every
    memory request waited 5 s and said "no connection within 5 s", the
    server's own reason only in a psycopg.pool warning on stderr."""
    url = pg_server.url("nonexist").replace("@", ":s3cret@", 1)  # trust auth: the password is unread
    store = PostgresMemoryStore(url)
    try:
        with pytest.raises(MemoryUnavailable) as err:
            Memory(store).remember(named_scope("t"), "a", "some fact")
        assert 'database "nonexist" does not exist' in err.value.message
        assert "s3cret" not in err.value.message
        assert store._masked(f"could not connect with {url}") == \
            f"could not connect with {url.replace('s3cret', '***')}"
    finally:
        store.close()


def test_a_value_postgresql_cannot_hold_fails_the_statement_not_the_database(memory: Memory):
    """psycopg's DataError (text holding NUL, which no PostgreSQL text holds)
    answered "internal error: DataError"."""
    write = Write("t", "k", "fact", "agent", "text", [whole_segment("a\x00b")], None, 1, None, None,
                  1, None, None)
    with pytest.raises(EngineError) as refused:
        memory.backend.write(write)
    assert not isinstance(refused.value, MemoryUnavailable) and refused.value.code == -32603
    assert "nothing was written" in refused.value.message and "NUL" in refused.value.message
    assert memory.backend.unavailable() is None


def test_a_daemon_fills_in_the_vectors_of_rows_written_without_one(tmp_path: Path, url: str):
    """A row written by a daemon with embeddings off never got a vector (only
    `ctxls memory import` embedded missing ones): recall by meaning never
    found it. A daemon with the team's model fills such rows in, in the
    background, as the SQLite store's worker does."""
    unembedded = Memory(PostgresMemoryStore(url))  # no model: written without a vector
    unembedded.remember(named_scope("team"), "backups", "Postgres snapshots are taken every night")
    unembedded.backend.close()
    root = tmp_path / "repo"
    write_tree(root, SAMPLE_FILES)
    engine = Engine(root, EngineOptions(db_path=str(tmp_path / "a.db"), embeddings=True,
                                        memory_url=url))
    try:
        engine.start_embedding()  # the daemon's: its tiers' workers and team memory's filler

        def without_vector() -> list:
            with psycopg.connect(url, autocommit=True) as conn, conn.transaction():
                conn.execute("SELECT set_config('ctxls.all', 'on', true)")
                return conn.execute("SELECT key FROM ctxls_memory WHERE embedding IS NULL").fetchall()
        _wait_until(lambda: not without_vector(), "the row got a vector")
        hits = engine.recall("database copies overnight", ["fact"], 3, mode="semantic",
                             scope=named_scope("team")).hits_by_kind["fact"]
        assert [h.path for h in hits] == ["backups"]  # by meaning alone
    finally:
        engine.close()


@pytest.fixture
def link(pg_server: PgServer):
    relay = SilenceableLink(pg_server.port)
    yield relay
    relay.close()


def _answered_within(seconds: float, call) -> dict:
    """``call``'s outcome ({"value": ...} or {"error": ...}); a failure when it
    gives none within ``seconds`` (a hang)."""
    outcome: dict = {}

    def run() -> None:
        try:
            outcome["value"] = call()
        except Exception as exc:
            outcome["error"] = exc
    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(seconds)
    assert outcome, f"no answer within {seconds} s"
    return outcome


def test_a_database_that_stops_answering_fails_memory_verbs_with_32010_not_a_hang(
        url: str, link: SilenceableLink):
    """A frozen server (a partition: connections stay open and nothing answers)
    hung remember and the memory half of recall forever, and with them the
    daemon's write lane: the pool's check and every statement waited without
    end for an answer."""
    store = PostgresMemoryStore(link.url(url))
    memory = Memory(store)
    try:
        memory.remember(named_scope("t"), "warm", "written while the server answers")
        link.silence()
        for verb in (lambda: memory.remember(named_scope("t"), "hung", "written while it hangs"),
                     lambda: memory.search("fact", "written", 5, named_scope("t"))):
            error = _answered_within(60, verb).get("error")
            assert isinstance(error, MemoryUnavailable) and error.code == -32010
        link.restore()

        def answers() -> bool:
            try:
                return memory.count(named_scope("t"), ["fact"]) == 1  # "hung" was not written
            except MemoryUnavailable:
                return False
        _wait_until(answers, "team memory answers again")

        def silent_mid_statement():
            with store._raw() as conn:  # checked out while the server answers
                conn.answer_within = 1.0  # the client's statement deadline, shortened here
                link.silence()
                conn.execute("SELECT 1")
        error = _answered_within(60, silent_mid_statement).get("error")
        assert isinstance(error, MemoryUnavailable) and "did not answer" in error.message
    finally:
        link.restore()
        store.close()


def test_while_the_database_is_down_memory_verbs_fail_at_once_and_it_is_asked_again_at_a_bounded_rate(
        url: str, link: SilenceableLink):
    """Every memory request of an outage waited the pool's whole 5 s, though
    each connection attempt was refused at once."""
    store = PostgresMemoryStore(link.url(url))
    memory = Memory(store)
    try:
        memory.remember(named_scope("t"), "warm", "written while the server answers")
        link.refuse()
        with pytest.raises(MemoryUnavailable):
            memory.count(named_scope("t"), ["fact"])  # the outage is met once
        asked = store.pool.get_stats()["requests_num"]
        for _ in range(5):
            with pytest.raises(MemoryUnavailable, match="no connection"):
                memory.count(named_scope("t"), ["fact"])
        # The pool was asked at most once more (the probe, at most every 2 s), not each time.
        assert store.pool.get_stats()["requests_num"] - asked <= 1
        link.restore()

        def answers() -> bool:
            try:
                return memory.count(named_scope("t"), ["fact"]) == 1
            except MemoryUnavailable:
                return False
        _wait_until(answers, "team memory answers again after the outage")
    finally:
        store.close()


def _recall_with_memory(tmp_path: Path, url: str):
    root = tmp_path / "repo"
    write_tree(root, SAMPLE_FILES)
    engine = Engine(root, EngineOptions(db_path=str(tmp_path / "index.db"), embeddings=False,
                                        memory_url=url))
    try:
        engine.index()
        with pytest.raises(MemoryUnavailable) as err:
            engine.memory.remember(named_scope("t"), "a", "some fact")
        recalled = engine.recall("send prepared request", ["code", "fact"], 5)
    finally:
        engine.close()
    assert "pkg/session.py" in [h.path for h in recalled.hits_by_kind["code"]]
    assert "written memory is unavailable" in recalled.partial_reason
    return err.value


def test_a_database_without_pgvector_fails_memory_with_32010_saying_who_adds_it_and_recall_keeps_code(
        tmp_path: Path, pg_server: PgServer):
    """The role may not create the extension (the one-time set-up step missed):
    InsufficientPrivilege escaped as a traceback or "internal error", and a
    plain recall lost its code hits."""
    name = f"ctxls_novector_{os.getpid()}"
    with pg_server.admin() as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name}")
        conn.execute(f"CREATE DATABASE {name} TEMPLATE template0 OWNER {DAEMON_ROLE}")
    error = _recall_with_memory(tmp_path, pg_server.url(name))
    assert error.code == -32010 and "CREATE EXTENSION vector" in error.message


def test_a_newer_schema_fails_memory_with_32010_saying_upgrade_and_recall_keeps_code(
        tmp_path: Path, url: str):
    """MemorySchemaError was no MemoryUnavailable: a traceback in the CLI,
    "internal error" through the daemon, and a plain recall lost its code hits."""
    store = PostgresMemoryStore(url)
    store.migrate()
    store.close()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("UPDATE ctxls_memory_meta SET value = '99' WHERE key = 'schema_version'")
    error = _recall_with_memory(tmp_path, url)
    assert error.code == -32010 and "schema 99" in error.message and "upgrade ctxls" in error.message
