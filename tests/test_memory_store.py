"""Written memory as a library: schema upgrade, survival of rebuilds, stemming,
and recall by meaning with the real model (vectors shared with chunks)."""

from __future__ import annotations

import base64
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from ctxls.index.memory import Memory
from ctxls.index.memory import sqlite as memory_module
from ctxls.index.memory.lexemes import fts_lexemes
from ctxls.index.engine import Engine, EngineOptions
from ctxls.index.scopes import EVERYTHING, named_scope
from ctxls.index.store import INDEX_STAMP, SCHEMA_VERSION, recovery
from ctxls.index.tokenize import expand, expand_tokens

from conftest import SAMPLE_FILES, write_tree

FACTS = {
    "deploy-env": "The deploy fails when FOO_URL is unset",
    "db-backup": "Postgres snapshots are taken every night at 2am",
    "oncall": "Pager duty rotates every Monday morning",
    "retries": "Uploads are retried three times with exponential backoff",
    "config": "Configuration lives in settings.toml next to the binary",
    "caches": "The build cache is flushed when the lockfile changes",
}

V3_TABLES = ("memory", "memory_files", "fts_memory_fact", "fts_memory_episode", "fts_memory_doc",
             "demand", "stash")


@pytest.fixture
def plain(tmp_path: Path) -> Path:
    root = tmp_path / "plain"
    write_tree(root, SAMPLE_FILES)
    return root


def remember_all(engine: Engine, facts: dict[str, str], scope=EVERYTHING) -> None:
    for key, text in facts.items():
        engine.memory.remember(scope, key, text)


def top_fact(engine: Engine, query: str, mode: str = "hybrid", scope=EVERYTHING) -> str | None:
    hits = engine.recall(query, ["fact"], 3, mode=mode, scope=scope).hits_by_kind["fact"]
    return hits[0].path if hits else None


def test_a_schema_2_store_is_upgraded_in_place(plain: Path, tmp_path: Path):
    db = tmp_path / "index.db"
    engine = Engine(plain, EngineOptions(db_path=str(db)))
    engine.index()
    engine.set_buffer("pkg/retry.py", "def edited_before_upgrade():\n    pass\n")
    engine.close()
    with sqlite3.connect(db) as conn:  # what ctxls with schema 2 left behind
        for table in V3_TABLES:
            conn.execute(f"DROP TABLE {table}")
        conn.execute("UPDATE meta SET value = '2' WHERE key = 'schema_version'")

    upgraded = Engine(plain, EngineOptions(db_path=str(db)))
    # 3 only added tables; 4 (symbols, packed chunks) and 5 (file_terms) rebuild the file
    # rows; 6 (fast_vectors) only adds a table.
    assert SCHEMA_VERSION == 6 and upgraded.store.rebuilt
    upgraded.index()
    assert upgraded.store.counts()["chunks"] > 0
    # The edit log and written memory are never dropped by a rebuild.
    assert "edited_before_upgrade" in [a.symbol for a in upgraded.recent_activity()]
    upgraded.memory.remember(EVERYTHING, "after", "written after the upgrade")
    assert top_fact(upgraded, "upgrade") == "after"
    assert upgraded.store.meta()["schema_version"] == "6"
    upgraded.close()


def test_memory_survives_a_stamp_rebuild_and_is_retokenized(plain: Path, tmp_path: Path):
    db = tmp_path / "index.db"
    engine = Engine(plain, EngineOptions(db_path=str(db)))
    engine.index()
    remember_all(engine, FACTS)
    engine.memory.ingest(named_scope("alice"), "notes.md", text="# Notes\n\nRollback with care.\n")
    engine.stash.put("log", "parked")
    engine.close()
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE meta SET value = 'chunker-0/tokenizer-0' WHERE key = 'index_stamp'")
        conn.execute("DELETE FROM fts_memory_fact")  # stale tokens: must be re-derived

    reopened = Engine(plain, EngineOptions(db_path=str(db)))
    assert reopened.store.rebuilt and reopened.store.counts()["files"] == 0
    assert reopened.store.meta()["index_stamp"] == INDEX_STAMP
    assert reopened.memory.count(EVERYTHING) == len(FACTS) + 1
    assert top_fact(reopened, "snapshots") == "db-backup"
    doc = reopened.recall("rollback", ["doc"], scope=named_scope("alice")).hits_by_kind["doc"]
    assert [h.path for h in doc] == ["notes.md"]
    assert reopened.stash.peek("log").head == "parked"
    reopened.index(force=True)
    assert reopened.memory.count(EVERYTHING) == len(FACTS) + 1
    reopened.close()


DIGEST = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"


def test_a_digest_is_found_after_a_stamp_rebuild(plain: Path, tmp_path: Path):
    """The stamp's re-derivation wrote each row's text without the long
    words' stand-ins, so a fact found by its digest was lost to every
    rebuild."""
    db = tmp_path / "index.db"
    engine = Engine(plain, EngineOptions(db_path=str(db)))
    engine.memory.remember(EVERYTHING, "release", f"The release tarball has sha256 {DIGEST}")
    assert top_fact(engine, DIGEST, mode="lexical") == "release"
    engine.close()
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE meta SET value = 'chunker-0/tokenizer-0' WHERE key = 'index_stamp'")

    reopened = Engine(plain, EngineOptions(db_path=str(db)))
    try:
        assert reopened.store.rebuilt
        assert top_fact(reopened, DIGEST, mode="lexical") == "release"
    finally:
        reopened.close()


def test_rows_written_before_the_stand_ins_get_them_on_opening(plain: Path, tmp_path: Path):
    """A store whose memory rows were written before long words had
    stand-ins (their full-text rows read the text alone, and the store
    says no memory text version) has them re-derived once; its file rows
    are kept."""
    db = tmp_path / "index.db"
    engine = Engine(plain, EngineOptions(db_path=str(db)))
    engine.index()
    engine.memory.remember(EVERYTHING, "release", f"The release tarball has sha256 {DIGEST}")
    engine.close()
    with sqlite3.connect(db) as conn:  # what a ctxls of before the stand-ins wrote
        (row_id,) = conn.execute("SELECT id FROM memory WHERE key = 'release'").fetchone()
        conn.execute("DELETE FROM fts_memory_fact WHERE rowid = ?", (row_id,))
        conn.execute("INSERT INTO fts_memory_fact(rowid, symbol, path, body) VALUES (?, '', ?, ?)",
                     (row_id, expand("release"), expand(f"The release tarball has sha256 {DIGEST}")))
        conn.execute("DELETE FROM meta WHERE key = 'memory_text_version'")

    reopened = Engine(plain, EngineOptions(db_path=str(db)))
    try:
        assert not reopened.store.rebuilt and reopened.store.counts()["files"] > 0
        assert top_fact(reopened, DIGEST, mode="lexical") == "release"
    finally:
        reopened.close()


def test_stemming_finds_morphological_variants_without_embeddings(plain: Path):
    engine = Engine(plain)
    remember_all(engine, FACTS)
    for query, expected in {
        "deploying": "deploy-env",
        "retrying uploaded files": "retries",
        "configuring": "config",
        "flushing caches": "caches",
        "rotating pagers": "oncall",
        "snapshot": "db-backup",
    }.items():
        assert top_fact(engine, query, mode="lexical") == expected, query
    # Ranked only against their own kind: a fact never lands in another group.
    result = engine.recall("deploying", None, 5)
    assert [h.path for h in result.hits_by_kind["fact"]] == ["deploy-env"]
    assert all(h.kind == kind for kind, hits in result.hits_by_kind.items() for h in hits)
    engine.close()


def _memory_hashes(engine: Engine) -> set[str]:
    return {h for (h,) in engine.store.reader().execute("SELECT embed_hash FROM memory")}


def _vectors(engine: Engine) -> dict[str, int]:
    return {h: i for i, h in engine.store.reader().execute("SELECT id, text_hash FROM vectors")}


def test_paraphrases_are_found_and_memory_vectors_live_with_their_rows(plain: Path):
    engine = Engine(plain, EngineOptions(embeddings=True))
    engine.index()
    remember_all(engine, FACTS)
    chunk_hashes = {h for (h,) in engine.store.reader().execute("SELECT DISTINCT embed_hash FROM chunks")}
    assert engine.embed_pending() == len(chunk_hashes) + len(FACTS)
    for query, expected in {
        "release breaks without that environment variable": "deploy-env",
        "database copies overnight": "db-backup",
        "the person handling emergencies switches weekly": "oncall",
        "where are the knobs kept": "config",
    }.items():
        assert top_fact(engine, query, mode="lexical") != expected  # no shared word
        assert top_fact(engine, query) == expected, query
        assert top_fact(engine, query, mode="semantic") == expected, query

    # A forced re-index and its orphan sweep keep memory's vectors.
    before = _vectors(engine)
    engine.index(force=True)
    assert _vectors(engine) == before and engine.embed_pending() == 0

    # An upsert keeps its row id but changes its text: re-embedded, old vector dropped.
    old_hash = engine.store.reader().execute(
        "SELECT embed_hash FROM memory WHERE key = 'oncall'").fetchone()[0]
    engine.memory.remember(EVERYTHING, "oncall", "The on-call engineer changes every Monday")
    assert old_hash not in _vectors(engine)
    assert engine.embed_pending() == 1
    # forget drops the vector and its ANN entry.
    vector_id = _vectors(engine)[engine.store.reader().execute(
        "SELECT embed_hash FROM memory WHERE key = 'db-backup'").fetchone()[0]]
    engine.memory.forget(EVERYTHING, key="db-backup")
    engine.embed_pending()  # applies queued ANN removals
    assert not np.asarray(engine.semantic._ann.contains(np.array([vector_id], dtype=np.uint64))).any()
    assert set(_vectors(engine)) == chunk_hashes | _memory_hashes(engine)
    assert len(engine.semantic._ann) == len(_vectors(engine))
    engine.close()


def test_a_hybrid_memory_recall_embeds_its_query_while_bm25_scans(plain: Path, monkeypatch):
    """The query's embedding starts on the query pool before any kind's BM25
    scan (as code recall's does), so the two overlap; each kind then ranks
    with that one run's vector."""
    engine = Engine(plain, EngineOptions(embeddings=True))
    remember_all(engine, FACTS)
    engine.memory.remember(EVERYTHING, "standup", "The team meets at ten every morning", kind="episode")
    engine.embed_pending()
    semantic = engine.semantic
    events: list[str] = []
    scan, soon, embed = memory_module.bm25_scores, semantic.query_vector_soon, semantic._embed_query

    def recorded_scan(*args, **kwargs):
        events.append("bm25")
        return scan(*args, **kwargs)

    def recorded_soon(query: str):
        events.append("embedding started")
        return soon(query)

    def recorded_embed(query: str):
        events.append("embedded")
        return embed(query)

    monkeypatch.setattr(memory_module, "bm25_scores", recorded_scan)
    monkeypatch.setattr(semantic, "query_vector_soon", recorded_soon)
    monkeypatch.setattr(semantic, "_embed_query", recorded_embed)
    query = "database copies overnight at the standup"
    hits = engine.recall(query, ["fact", "episode"], 3, mode="hybrid").hits_by_kind
    assert events[0] == "embedding started" and events.count("bm25") == 2
    assert events.count("embedded") == 1, "one run for both kinds"
    assert hits["fact"][0].path == "db-backup"
    engine.close()


def test_ann_nominees_never_cross_the_scope_fence(plain: Path, monkeypatch):
    # Force the ANN path (as with thousands of rows), where other tenants'
    # rows sit in the same index as the requester's.
    monkeypatch.setattr(memory_module, "EXACT_NOMINATION_ROWS", 1)
    engine = Engine(plain, EngineOptions(embeddings=True))
    alice, bob = named_scope("alice"), named_scope("bob")
    remember_all(engine, {"a-backup": "Postgres snapshots are taken every night",
                          "a-oncall": "Pager duty rotates every Monday"}, alice)
    remember_all(engine, {"b-backup": "Nightly database dumps go to the backup bucket",
                          "b-cache": "The build cache is flushed on lockfile changes"}, bob)
    engine.embed_pending()
    query = "database copies overnight"
    assert top_fact(engine, query, "semantic", alice) == "a-backup"
    assert top_fact(engine, query, "semantic", bob) == "b-backup"
    for scope, own in ((alice, "a-"), (bob, "b-")):
        hits = engine.recall(query, ["fact"], 10, mode="semantic", scope=scope).hits_by_kind["fact"]
        assert hits and all(h.path.startswith(own) for h in hits)
    assert engine.recall(query, ["fact"], 10, mode="semantic",
                         scope=named_scope("carol")).hits_by_kind["fact"] == []
    engine.close()


def test_a_files_demand_rows_are_bounded_and_memory_rows_kept(tmp_path, monkeypatch):
    """Each recall hit and get of a file wrote a demand row, kept for good
    (~1 KB per recall and get for as long as a daemon served). The newest
    MAX_FILE_DEMAND_ROWS are kept; memory rows, which count, are not touched."""
    from ctxls.index import demand
    from ctxls.index.engine import Engine, EngineOptions

    monkeypatch.setattr(demand, "MAX_FILE_DEMAND_ROWS", 50)
    monkeypatch.setattr(demand, "FILE_DEMAND_TRIM_EVERY", 10)
    (tmp_path / "a.py").write_text("def a():\n    return 1\n")
    engine = Engine(tmp_path, EngineOptions(watch="off"))
    try:
        engine.cold_index()
        log = engine.demand
        for n in range(300):
            log.record([demand.Demand(f"f{n}.py", "code", None, None)], "recall")
            log.record([demand.Demand("fact-1", "fact", None, "team")], "recall")
            log.flush()
        conn = engine.store.reader()
        files = [r[0] for r in conn.execute("SELECT path FROM demand WHERE scope IS NULL ORDER BY id")]
        assert 50 <= len(files) < 60 and files[-1] == "f299.py"
        assert conn.execute("SELECT count(*) FROM demand WHERE scope IS NOT NULL").fetchone()[0] == 300
    finally:
        engine.close()


def test_trusting_a_quarantined_store_never_joins_an_id_this_store_holds(plain: Path, tmp_path: Path):
    """trust-memory copied row by row, each conflicting on (scope, id, part)
    only: the old document's parts 1+ were added beside this store's own
    fact of that id, and its upload too, which get then served instead of
    the own row (memory probe). A held (scope, id) keeps its own rows and
    upload; the file's other ids are carried in."""
    db = tmp_path / "index.db"
    engine = Engine(plain, EngineOptions(db_path=str(db)))
    alice = named_scope("alice")
    runbook = "# Old runbook\n\nold intro\n\n## Deploy\n\nrun the legacy deploy script\n"
    assert engine.memory.ingest(alice, "x.md", text=runbook, key="x").segments == 2
    engine.memory.ingest(alice, "old-only.md", text=runbook)
    engine.memory.remember(alice, "y", "an old fact kept beside its upload-free twin")
    engine.memory.ingest(named_scope("bob"), "x.md", text=runbook, key="x")
    engine.close()
    with sqlite3.connect(db) as conn:  # no seal: quarantined on the next open
        conn.execute("DELETE FROM meta WHERE key IN ('store_id', 'owner_uid', 'store_path', 'store_seal')")

    engine = Engine(plain, EngineOptions(db_path=str(db)))
    assert engine.memory.count(EVERYTHING) == 0
    engine.memory.remember(alice, "x", "the new deploy uses argo")
    engine.memory.ingest(alice, "y.txt", text="a new upload under y", key="y")
    engine.trust_quarantined()

    assert engine.memory.item("x", alice).text == "the new deploy uses argo"
    assert [s.whole_text() for s in engine.memory.node("x", alice).segments] == ["the new deploy uses argo"]
    assert engine.memory.item("y", alice).text == "a new upload under y"
    assert [r.key for r in engine.memory.search("doc", "legacy deploy", 10, alice)] == ["old-only.md"]
    assert engine.memory.item("x", named_scope("bob")).text == runbook  # another scope's x: carried
    assert engine.memory.count(EVERYTHING) == 4
    engine.close()



def test_a_carry_cut_short_leaves_nothing_half_carried(plain: Path, tmp_path: Path, monkeypatch):
    """trust-memory carried each table in a transaction of its own: cut
    short after `memory` (a kill), the next trust-memory took those ids as
    this store's own and skipped their uploads, so an ingested blob's bytes
    were gone for good and `get` answered its filename as its text."""
    db = tmp_path / "index.db"
    engine = Engine(plain, EngineOptions(db_path=str(db), embeddings=False))
    engine.memory.ingest(EVERYTHING, "logo.png", base64_data=base64.b64encode(b"\x89PNG").decode())
    engine.memory.remember(EVERYTHING, "fact", "a fact that came along")
    engine.close()
    with sqlite3.connect(db) as conn:  # no seal: quarantined on the next open
        conn.execute("DELETE FROM meta WHERE key IN ('store_id', 'owner_uid', 'store_path', 'store_seal')")
    engine = Engine(plain, EngineOptions(db_path=str(db), embeddings=False))
    try:
        readable_rows = recovery._readable_rows

        def killed_at_uploads(source, table, columns):
            if table == "memory_files":
                raise KeyboardInterrupt("killed while carrying")
            return readable_rows(source, table, columns)
        monkeypatch.setattr(recovery, "_readable_rows", killed_at_uploads)
        with pytest.raises(KeyboardInterrupt):
            engine.trust_quarantined()
        assert engine.memory.count(EVERYTHING) == 0  # nothing of it was carried
        monkeypatch.setattr(recovery, "_readable_rows", readable_rows)
        engine.trust_quarantined()
        item = engine.memory.item("logo.png", EVERYTHING)
        assert (item.encoding, base64.b64decode(item.text)) == ("base64", b"\x89PNG")
        assert engine.memory.count(EVERYTHING) == 2
    finally:
        engine.close()

def _fts5_terms(texts: list[str]) -> list[list[str]]:
    """Each text's terms as the memory tables' tokenizer reads expand()'s output."""
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(x, tokenize = \"porter unicode61 tokenchars '_'\")")
    conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance')")
    conn.executemany("INSERT INTO t(rowid, x) VALUES (?, ?)",
                     [(i + 1, expand(text)) for i, text in enumerate(texts)])
    found: dict[int, list[tuple[int, str]]] = {}
    for term, doc, _, offset in conn.execute("SELECT term, doc, col, offset FROM v"):
        found.setdefault(doc, []).append((offset, term))
    return [[term for _, term in sorted(found.get(i + 1, []))] for i in range(len(texts))]


def test_postgresql_lexemes_are_the_sqlite_memory_tables_terms():
    """PostgreSQL stemmed with its `english` configuration (stop words
    dropped, accents kept): the same lexical recall found different rows on
    the two backends (memory probe). Its lexemes are now computed as FTS5's
    porter unicode61 tokenizer reads the same index tokens; SQLite's own
    tokenizer is the reference here. (All 300,000 distinct tokens of a
    corpus of source and prose agreed when this was written.)"""
    texts = ["Who is on call this week? IT replaces laptops", "The café, naïve Über CAFÉ façade",
             "terminology ontology chronologies technologies assemblies", "eed ies succeed agreed",
             "relational conditional rational valency hopefulness goodness formalize",
             "generalizations oscillators sensibility electrical running hopping filing",
             "Ωmega ΣΊΣΥΦΟΣ straße ǅemal İstanbul ﬁle Ｆｕｌｌ ǖber ø æ ł Москва бежали",
             "東京都の天気 สวัสดีครับ 한국어 텍스트", "getUserName os.path.join FOO_URL snake_case_name v2 3mins",
             "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855 x" * 2,
             "AbstractSingletonProxyFactoryBeanConfigurationHelper _details _alias 20commits"]
    for text, terms in zip(texts, _fts5_terms(texts)):
        assert fts_lexemes(expand_tokens(text)) == terms, text


def test_a_query_without_lexical_terms_is_still_searched_by_meaning():
    """A query with no lexical term returned nothing before the backend was
    asked, semantic mode included (memory probe): with a semantic index the
    backend is asked (by meaning alone); without one, nothing is."""
    asked: list[list[str]] = []

    class Backend:
        def search(self, kinds, query, terms, n, scope, now, semantic, dense_only):
            asked.append(terms)
            return {kind: [] for kind in kinds}

    memory = Memory(Backend())
    assert memory.search_kinds(["fact"], "?! …", 5, EVERYTHING) == {"fact": []}
    assert asked == []
    memory.search_kinds(["fact"], "?! …", 5, EVERYTHING, semantic=object(), dense_only=True)
    assert asked == [[]]


def test_a_semantic_recall_without_lexical_terms_finds_rows_by_meaning(plain: Path):
    engine = Engine(plain, EngineOptions(embeddings=True))
    try:
        remember_all(engine, {"db-backup": FACTS["db-backup"]})
        engine.embed_pending()
        for mode in ("semantic", "hybrid"):
            hits = engine.recall("?! …", ["fact"], 5, mode=mode).hits_by_kind["fact"]
            assert [h.path for h in hits] == ["db-backup"], mode
    finally:
        engine.close()


def test_acknowledged_memory_is_in_the_store_file_not_only_in_its_wal(tmp_path: Path):
    """Crash probe (t_wal_flip): written memory stayed in the WAL while the
    daemon ran (SQLite checkpoints every 1,000 pages), and a damaged WAL
    frame reads as the log's end: after a kill, acknowledged facts were gone
    without a word. A durable write is checkpointed into the store file, so
    the file alone, as a kill leaves it without its WAL, holds them."""
    root = tmp_path / "repo"
    root.mkdir()
    (root / "app.py").write_text("def handler():\n    return 1\n")
    engine = Engine(root, EngineOptions(embeddings=False))
    try:
        engine.index()
        for n in range(3):
            engine.memory.remember(EVERYTHING, f"fact-{n}", f"acknowledged fact number {n}")
        store_file = Path(engine.store.db_path)
        assert store_file.with_name(store_file.name + "-wal").exists()  # still open, in WAL mode
        alone = tmp_path / "alone.db"
        alone.write_bytes(store_file.read_bytes())  # the file without its WAL
        conn = sqlite3.connect(alone)
        try:
            keys = sorted(r[0] for r in conn.execute("SELECT key FROM memory"))
        finally:
            conn.close()
        assert keys == ["fact-0", "fact-1", "fact-2"]
    finally:
        engine.close()


def test_an_enumerate_page_holds_its_rows_metas_within_the_answer_bound(plain: Path, tmp_path: Path):
    """meta did not count toward an answer's bound: a page of 1000 rows, each
    meta within its own 64 KiB bound, was a 98 MB answer, over the 64 MiB a
    message may be, and the editor's `ctxls serve` proxy died reading it.
    A page now ends before the row whose meta would take the page's metas
    past 16 MiB; nextOffset continues from that row."""
    from ctxls.daemon import wire
    from ctxls.daemon.framing import MAX_MESSAGE_BYTES, encode
    from ctxls.index.model import MAX_ANSWER_BODY_BYTES

    engine = Engine(plain, EngineOptions(db_path=str(tmp_path / "index.db"), embeddings=False))
    try:
        meta = {"a": [0] * 32700}  # 65,407 bytes as compact JSON: within the 64 KiB bound
        scope = named_scope("bm")
        for i in range(300):
            engine.memory.remember(scope, f"m{i:03}", f"row {i}", meta=meta)
        page = engine.memory.enumerate(scope, "fact", 0, 1000)
        fit = MAX_ANSWER_BODY_BYTES // 65_407
        assert (len(page.rows), page.total, page.next_offset) == (fit, 300, fit)
        answer = encode(wire.page_json(page, True))
        assert len(answer) < MAX_ANSWER_BODY_BYTES + (1 << 20) < MAX_MESSAGE_BYTES
        seen = [r.key for r in page.rows]
        while page.next_offset is not None:
            page = engine.memory.enumerate(scope, "fact", page.next_offset, 1000)
            seen += [r.key for r in page.rows]
        assert seen == [f"m{i:03}" for i in range(300)]
    finally:
        engine.close()


def test_a_row_another_process_rewrites_in_place_is_embedded_again(plain: Path):
    """Re-remembering an id from another process (`--no-daemon` beside the
    daemon) kept its row id behind the embedding worker's cursor: its new text
    never got a vector (status `embedding`, pending 1, forever) and recall by
    meaning never found it."""
    engine = Engine(plain, EngineOptions(embeddings=True))
    other = Engine(plain, EngineOptions(embeddings=False))  # another writer of the store
    try:
        other.memory.remember(EVERYTHING, "billing", "react hooks re-render on every state change")
        assert engine.embed_pending() == 1  # found by the backlog scan, past its cursor then
        other.memory.remember(EVERYTHING, "billing",
                              "the billing service retries stripe webhooks for three days")
        assert engine.embed_pending() == 1 and engine.semantic.pending() == 0
        assert top_fact(engine, "payment provider callbacks", mode="semantic") == "billing"
    finally:
        other.close()
        engine.close()


def test_a_trust_memory_the_full_disk_cut_short_carries_every_upload_when_tried_again(
        plain: Path, tmp_path: Path):
    """The written tables were carried one transaction each: a full disk
    after the memory rows left their uploads behind, and the retry skipped
    those uploads as ids this store "already holds", then removed the
    quarantined file: the uploaded bytes were gone. All tables are carried
    in one transaction: all or nothing."""
    import base64
    import os

    from ctxls.index.errors import WriteFailed

    db = tmp_path / "index.db"
    engine = Engine(plain, EngineOptions(db_path=str(db)))
    blob = os.urandom(400_000)
    engine.memory.ingest(EVERYTHING, "diagram.png", base64_data=base64.b64encode(blob).decode(), key="diagram")
    engine.close()
    with sqlite3.connect(db) as conn:  # no seal: quarantined on the next open
        conn.execute("DELETE FROM meta WHERE key IN ('store_id', 'owner_uid', 'store_path', 'store_seal')")

    engine = Engine(plain, EngineOptions(db_path=str(db)))
    try:
        writer = engine.store._writer
        writer.execute("VACUUM")
        pages = writer.execute("PRAGMA page_count").fetchone()[0]
        writer.execute(f"PRAGMA max_page_count = {pages + 20}")  # room for a row, not for the upload
        with pytest.raises(WriteFailed):
            engine.trust_quarantined()
        assert engine.memory.count(EVERYTHING) == 0  # nothing of it was written
        writer.execute("PRAGMA max_page_count = 1073741823")  # space freed
        assert engine.trust_quarantined()["imported"]["memory_files"] == 1
        item = engine.memory.item("diagram", EVERYTHING)
        assert item is not None and base64.b64decode(item.text) == blob
        assert engine.store.quarantined() == []
    finally:
        engine.close()


def test_an_upload_is_read_as_a_file_of_its_bytes_is_indexed(plain: Path):
    """Ingest decoded an upload as bare UTF-8, unlike every reader of a
    file's bytes (discovery.decode_text): a BOM kept the first heading from
    being one, a UTF-16 log was refused as holding NUL, and lone-CR line
    ends made a Markdown file one segment whose heading was all of it."""
    def b64(data: bytes) -> str:
        return base64.b64encode(data).decode("ascii")
    markdown = "# Alpha\n\nalpha text quokka\n\n# Beta\n\nbeta text wombat\n"
    engine = Engine(plain, EngineOptions(embeddings=False))
    try:
        engine.index()
        uploads = {"bom.md": {"base64_data": b64(b"\xef\xbb\xbf" + markdown.encode())},
                   "mac.md": {"text": markdown.replace("\n", "\r")},
                   "mac-bytes.md": {"base64_data": b64(markdown.replace("\n", "\r").encode())}}
        for name, upload in uploads.items():
            assert engine.memory.ingest(EVERYTHING, name, **upload).segments == 2, name
            beta = engine.memory.node(name, EVERYTHING).segments[1]
            assert beta.symbol == "Beta", name
            # get's lines are the segments' lines.
            lines = engine.memory.item(name, EVERYTHING, beta.start_line, beta.end_line).text
            assert "beta text wombat" in lines and "alpha" not in lines, name
        assert engine.memory.item("bom.md", EVERYTHING).text == markdown  # the BOM is no text
        log = "\ufeff2026-01-01 ERROR disk full on node7\n".encode("utf-16-le")
        engine.memory.ingest(EVERYTHING, "win.log", base64_data=b64(log))
        found = engine.memory.search("doc", "disk full node7", 5, EVERYTHING)
        assert [r.key for r in found] == ["win.log"]
        assert engine.memory.item("win.log", EVERYTHING).text == log.decode("utf-16")
    finally:
        engine.close()
