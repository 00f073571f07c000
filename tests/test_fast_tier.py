"""The fast semantic tier (issue 35, option b): the static model's vectors serve
hybrid recall seconds after indexing while the transformer embeds, and hand
over to it once its backlog is nearly empty. Real models, real store."""

from __future__ import annotations

import sqlite3
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from lsprotocol import types

from ctxls.index import engine as engine_module
from ctxls.index import store as store_module
from ctxls.index.cancel import CancelToken, cancelling
from ctxls.index.embed_text import embedding_text
from ctxls.index.errors import RequestCancelled
from ctxls.index.embeddings import CODE_MODEL_NAME, STATIC_MODEL_NAME
from ctxls.index.engine import Engine, EngineOptions
from ctxls.index.priority import BACKGROUND_NICENESS, FAST_TIER_NICENESS, TRANSFORMER_NICENESS, thread_niceness
from ctxls.index.ranking import RankingConfig
from ctxls.index.semantic import FAST_TIER, SemanticIndex, vector_file_for

from conftest import serve, write_tree
from test_semantic import PARAPHRASE_REPO, damage_ann_file, indexed_with_a_missing_model

# More chunks than the takeover backlog: a primary tier a few batches in still
# has too many rows left to serve.
FILLER = {f"gen/handler_{i}.py": f"def handler_{i}(value):\n    return value * {i} + {i * 7}\n"
          for i in range(engine_module.TAKEOVER_BACKLOG + 40)}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    write_tree(root, PARAPHRASE_REPO | FILLER)
    return root


def open_engine(root: Path, **options) -> Engine:
    return Engine(root, EngineOptions(embeddings=True, **options))


def drain(tier: SemanticIndex) -> None:
    assert tier.ensure_loaded()
    while tier.step():
        pass


# Shares no word with retry_upload, the function it describes.
PARAPHRASE = "try again when a transfer fails"


def in_the_window(root: Path, **options) -> Engine:
    """An engine whose fast tier has every chunk and serves, its transformer
    loaded with no vector yet: the window a repository opens in."""
    engine = open_engine(root, **options)
    engine.index()
    drain(engine.fast_semantic)
    assert engine.semantic.ensure_loaded() and engine.semantic.vector_count() == 0
    return engine


def assert_tier_consistent(engine: Engine, tier: SemanticIndex) -> None:
    """Every chunk has one vector in the tier's table, none is orphaned, and
    its ANN index holds exactly those."""
    conn = engine.store.reader()
    wanted = {r[0] for r in conn.execute("SELECT DISTINCT embed_hash FROM chunks")}
    stored = dict(conn.execute(f"SELECT text_hash, id FROM {tier.table}"))
    assert set(stored) == wanted
    assert len(tier._ann) == len(stored)
    assert all(np.asarray(tier._ann.contains(np.array(list(stored.values()), dtype=np.uint64))))


def semantic_scores(engine: Engine, query: str) -> dict[str, float]:
    """Symbol -> score of a semantic-mode recall (the cosine, through the ranking's priors)."""
    hits = engine.recall(query, ["code"], 20, mode="semantic").hits_by_kind["code"]
    return {hit.symbol: hit.score for hit in hits}


def test_the_fast_tier_serves_while_the_transformer_embeds_then_hands_over(repo: Path):
    engine = open_engine(repo)
    assert engine.fast_semantic is not None and engine.semantic.tier.table == "vectors"
    engine.index()
    fast, primary = engine.fast_semantic, engine.semantic
    drain(fast)
    assert_tier_consistent(engine, fast)
    assert primary.ensure_loaded() and primary.step()  # one batch: a backlog remains
    total = len(PARAPHRASE_REPO) + len(FILLER)
    assert primary.pending() == total - primary.vector_count() > engine_module.TAKEOVER_BACKLOG

    result = engine.recall("try again when a transfer fails", ["code"], 3, mode="hybrid")
    assert result.mode == "hybrid" and result.hits_by_kind["code"][0].symbol == "retry_upload"
    assert result.partial and result.partial_reason == (
        f"semantic: fast tier ({STATIC_MODEL_NAME}), its first hits scored by {CODE_MODEL_NAME} "
        f"while it embeds {primary.vector_count()}/{total}")
    assert engine._semantic_for("hybrid") is fast  # what recall nominates with
    # Topicality is judged in the serving tier's cosines, against that model's thresholds.
    fast_topicality = engine.topicality("checksum of a blob")
    assert fast_topicality.model == STATIC_MODEL_NAME and fast_topicality.nearest_cosine > 0.3
    served_by_fast = semantic_scores(engine, "checksum of a blob")
    assert next(iter(served_by_fast)) == "compute_checksum"
    status = engine.status()
    assert status["embeddings"]["serving"] == "fast"
    assert status["embeddings"]["serving_text"] == result.partial_reason
    assert status["embeddings"]["fast"] == {
        "enabled": True, "model": STATIC_MODEL_NAME, "dim": 256, "vectors": total, "pending": 0}
    assert status["pending"] == primary.pending() and status["vectors"] == primary.vector_count()
    assert status["state"] == "idle"  # the primary's backlog, no worker running here

    # An edit: the fast tier re-embeds it at once and keeps its table exact.
    engine.set_buffer("net/upload.py", PARAPHRASE_REPO["net/upload.py"].replace("3", "5"))
    drain(fast)
    assert_tier_consistent(engine, fast)

    assert engine.embed_pending() > 0  # the primary drains: it takes over
    result = engine.recall("try again when a transfer fails", ["code"], 3, mode="hybrid")
    assert not result.partial and result.hits_by_kind["code"][0].symbol == "retry_upload"
    assert engine._semantic_for("hybrid") is primary
    primary_topicality = engine.topicality("checksum of a blob")
    assert primary_topicality.model == CODE_MODEL_NAME and primary_topicality.nearest_cosine > 0.3
    assert primary_topicality.nearest_cosine != fast_topicality.nearest_cosine
    served_by_primary = semantic_scores(engine, "checksum of a blob")
    assert next(iter(served_by_primary)) == "compute_checksum"
    status = engine.status()
    assert status["embeddings"]["serving"] == "primary" and "serving_text" not in status["embeddings"]
    assert status["state"] == "ready"
    engine.close()


def test_the_transformer_scores_the_fast_tiers_first_hits_and_keeps_their_vectors(repo: Path):
    """While the fast tier serves, its first ``fusion_pool`` hits are ranked
    again with the transformer's cosines, embedded at once where its backlog
    has not reached them; the worker stores those vectors instead of
    embedding the texts again. Hits below them carry no cosine of the other
    model: none, or the transformer's where the deeper search that continues
    the list (ranking.first_n) scored its own first hits again."""
    engine = in_the_window(repo)
    primary, query = engine.semantic, PARAPHRASE
    pool = engine.options.ranking.fusion_pool
    embedded: list[str] = []
    embed = primary.embedder.embed
    primary.embedder.embed = lambda texts: embedded.extend(texts) or embed(texts)
    try:
        hits = engine.recall(query, ["code"], pool + 10, mode="hybrid").hits_by_kind["code"]
        by_request = set(embedded) - {query}  # the chunks' texts (embed_query embeds the query)
        assert len(hits) == pool + 10 and hits[0].symbol == "retry_upload"
        head, tail = hits[:pool], hits[pool:]
        assert {hit.evidence.model for hit in hits} == {CODE_MODEL_NAME}
        assert all(hit.evidence.cosine is not None for hit in head)
        assert all(a.score >= b.score for a, b in zip(hits, hits[1:]))
        conn = engine.store.reader()
        texts = {(hit.path, hit.start_line): embedding_text(hit.path, hit.symbol, conn.execute(
            "SELECT c.text FROM chunks c JOIN files f ON f.id = c.file_id WHERE f.path = ? "
            "AND c.start_line = ?", (hit.path, hit.start_line)).fetchone()[0]) for hit in hits}
        query_vector = primary.embedder.embed_query(query)
        cosined = [hit for hit in hits if hit.evidence.cosine is not None]
        for hit in cosined:  # the transformer's cosine of each, as stored (float16): never the fast tier's
            text = texts[(hit.path, hit.start_line)]
            assert text in by_request
            stored = embed([text])[0].astype(np.float16).astype(np.float32)
            assert hit.evidence.cosine == pytest.approx(float(stored @ query_vector), abs=1e-6)
        # Nor does their `why` show a cosine the hit does not carry.
        assert [c for hit in hits if hit.evidence.cosine is None
                for c in hit.why or () if c.feature == "cosine"] == []
        assert primary.vector_count() == 0  # not stored by a request: by the worker's next step
        embedded.clear()
        assert primary.step()
        assert embedded == [] and primary.vector_count() == len(by_request)
        again = engine.recall(query, ["code"], pool + 10, mode="hybrid").hits_by_kind["code"]
        assert embedded == []  # every scored hit's vector was stored
        assert [(h.path, h.start_line, h.score) for h in again] == [
            (h.path, h.start_line, h.score) for h in hits]
        assert primary.step() and len(embedded) == primary.embedder.batch_size
        assert not set(embedded) & by_request  # the backlog skips what is stored
    finally:
        primary.embedder.embed = embed
    engine.close()


@pytest.mark.parametrize("failing", ["embed", "embed_query"])
def test_a_transformer_that_fails_on_a_request_leaves_the_fast_tiers_answer(repo: Path, monkeypatch,
                                                                            failing: str):
    """The transformer failing on the chunks' texts or on the query itself:
    the answer is the fast tier's, its cosines and its model's name."""
    engine = in_the_window(repo)
    primary, query = engine.semantic, PARAPHRASE
    if failing == "embed":
        primary.query_vector(query)  # the query's vector computed: the chunks' embedding fails

    def broken(*args):
        raise RuntimeError("onnxruntime: out of memory")
    monkeypatch.setattr(primary.embedder, failing, broken)
    result = engine.recall(query, ["code"], 5, mode="hybrid")
    hits = result.hits_by_kind["code"]
    assert hits[0].symbol == "retry_upload" and result.partial
    assert {hit.evidence.model for hit in hits} == {STATIC_MODEL_NAME}
    assert all(hit.evidence.cosine is not None for hit in hits)
    monkeypatch.undo()
    hits = engine.recall(query, ["code"], 5, mode="hybrid").hits_by_kind["code"]
    assert {hit.evidence.model for hit in hits} == {CODE_MODEL_NAME}
    engine.close()


def test_a_cancelled_window_answer_stops_embedding_and_keeps_what_it_embedded(repo: Path, monkeypatch):
    engine = in_the_window(repo)
    primary, query = engine.semantic, PARAPHRASE
    primary.query_vector(query)
    token = CancelToken()
    calls: list[int] = []
    embed = primary.embedder.embed

    def embed_then_cancel(texts):
        calls.append(len(texts))
        token.cancel()  # the client cancels while the first slice embeds
        return embed(texts)
    monkeypatch.setattr(primary.embedder, "embed", embed_then_cancel)
    with cancelling(token), pytest.raises(RequestCancelled):
        engine.recall(query, ["code"], 5, mode="hybrid")
    assert calls == [primary.embedder.batch_size]  # one slice, not the 30 texts
    monkeypatch.undo()
    assert primary.step() and primary.vector_count() == calls[0]  # kept for the worker
    engine.close()


def test_what_a_request_embedded_ahead_is_stored_when_the_engine_closes(repo: Path):
    """A command line without a daemon has no worker running: the vectors its
    answer embedded are stored at close, not lost with the process."""
    engine = in_the_window(repo)
    hits = engine.recall(PARAPHRASE, ["code"], 5, mode="hybrid").hits_by_kind["code"]
    assert hits[0].evidence.model == CODE_MODEL_NAME and engine.semantic.vector_count() == 0
    engine.close()
    reopened = open_engine(repo)
    assert reopened.semantic.vector_count() == engine.options.ranking.fusion_pool
    reopened.close()


def test_the_transformer_orders_code_hits_only_in_the_window(repo: Path):
    """Docs keep the fast tier's ranking (no set measures theirs), each list
    labelled with the model whose cosines it carries."""
    (repo / "docs").mkdir()
    (repo / "docs" / "uploads.md").write_text(
        "# Uploads\n\nA failed transfer is tried again a few times before the upload gives up.\n")
    engine = in_the_window(repo)
    result = engine.recall(PARAPHRASE, ["code", "doc"], 5, mode="hybrid")
    code, docs = result.hits_by_kind["code"], result.hits_by_kind["doc"]
    assert code and docs
    assert {hit.evidence.model for hit in code} == {CODE_MODEL_NAME}
    assert {hit.evidence.model for hit in docs} == {STATIC_MODEL_NAME}
    assert engine.semantic.step()  # what the request embedded, stored: the code's texts only
    embedded_kinds = {row[0] for row in engine.store.reader().execute(
        "SELECT DISTINCT c.kind FROM chunks c JOIN vectors v ON v.text_hash = c.embed_hash")}
    assert embedded_kinds == {"code"}
    engine.close()


def test_each_tier_fuses_with_its_own_cosine_share(repo: Path):
    """A sentence query's cosine share is ``static_dense_weight`` in the
    static tier's ranking and ``dense_weight`` in the transformer's, its
    scoring of the static tier's first hits included: here all of it and none
    of it, so the paraphrase (no word shared with its function) is among the
    first hits the static tier nominates, but BM25 alone orders them."""
    query = PARAPHRASE
    engine = in_the_window(repo, ranking=RankingConfig(dense_weight=0.0, static_dense_weight=1.0))
    assert engine._semantic_for("hybrid") is engine.fast_semantic
    pool = engine.options.ranking.fusion_pool
    symbols = [hit.symbol for hit in engine.recall(query, ["code"], pool, mode="hybrid").hits_by_kind["code"]]
    assert "retry_upload" in symbols and symbols[0] != "retry_upload"
    drain(engine.semantic)
    assert engine._semantic_for("hybrid") is engine.semantic
    hits = engine.recall(query, ["code"], 3, mode="hybrid").hits_by_kind["code"]
    assert "retry_upload" not in [hit.symbol for hit in hits]  # BM25 alone: no shared word
    engine.close()


def test_the_static_tier_embeds_a_query_on_the_callers_thread(repo: Path, monkeypatch):
    """A table lookup is cheaper than a hand-off: the fast tier's query is
    embedded on the request's own thread, never on the query pool."""
    engine = open_engine(repo)
    engine.index()
    fast = engine.fast_semantic
    drain(fast)
    embed = fast.embedder.embed_query
    threads: list[str] = []
    monkeypatch.setattr(fast.embedder, "embed_query",
                        lambda text: threads.append(threading.current_thread().name) or embed(text))
    hits = engine.recall("try again when a transfer fails", ["code"], 3, mode="hybrid").hits_by_kind["code"]
    assert hits[0].symbol == "retry_upload"
    assert threads == [threading.current_thread().name]
    engine.close()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="niceness is per thread on Linux")
def test_the_fast_tiers_worker_is_less_nice_than_the_transformers(repo: Path):
    """The fast tier's few seconds of work must not starve on a busy machine
    (niceness 5); the transformer's long backlog yields more (10), but less
    than warm-ups (19), or a busy machine starves it."""
    engine = open_engine(repo)
    engine.index()
    seen: dict[str, set[int]] = {"fast": set(), "primary": set()}
    for name, tier in (("fast", engine.fast_semantic), ("primary", engine.semantic)):
        step = tier.step
        tier.step = lambda step=step, name=name: seen[name].add(thread_niceness()) or step()
    engine.start_embedding()
    deadline = time.monotonic() + 120
    while engine.semantic.pending() and time.monotonic() < deadline:
        time.sleep(0.1)
    # A thread can only lower its priority: under a runner niced past 5 the fast tier keeps the runner's.
    assert seen == {"fast": {max(FAST_TIER_NICENESS, thread_niceness())},
                    "primary": {max(TRANSFORMER_NICENESS, thread_niceness())}}
    assert FAST_TIER_NICENESS < TRANSFORMER_NICENESS < BACKGROUND_NICENESS
    engine.close()


def test_a_few_rows_without_a_primary_vector_do_not_hand_answers_back(repo: Path):
    engine = open_engine(repo)
    engine.index()
    engine.embed_pending()
    engine.set_buffer("net/upload.py", PARAPHRASE_REPO["net/upload.py"].replace("3", "5"))
    drain(engine.fast_semantic)
    assert engine.semantic.pending() == 1
    assert engine.serving_tier() is engine.semantic
    assert engine.recall("fingerprint", ["code"], 1).partial_reason == (
        "1 chunks still lack a vector: ranking by meaning does not see them yet")
    engine.close()


def test_the_static_model_as_primary_needs_no_fast_tier(repo: Path):
    engine = open_engine(repo, embed_model=STATIC_MODEL_NAME)
    assert engine.fast_semantic is None
    engine.index()
    engine.embed_pending()
    assert engine.status()["embeddings"]["serving"] == "primary"
    assert "fast" not in engine.status()["embeddings"]
    engine.close()


def test_a_primary_model_that_fails_to_load_leaves_the_fast_tier_serving(repo: Path, tmp_path: Path):
    engine, warnings = indexed_with_a_missing_model(repo, tmp_path)
    assert engine.embed_pending() == 0 and len(warnings) == 1 and "none.onnx" in warnings[0]
    result = engine.recall("checksum of a blob", ["code"], 3, mode="semantic")
    assert result.mode == "semantic" and result.hits_by_kind["code"][0].symbol == "compute_checksum"
    assert result.partial_reason.startswith(
        f"semantic: fast tier ({STATIC_MODEL_NAME}): the embedding model failed (")
    embeddings = engine.status()["embeddings"]
    assert embeddings["enabled"] is False and embeddings["serving"] == "fast"
    engine.close()


def test_the_primary_worker_waits_while_the_fast_tier_has_work(repo: Path):
    engine = open_engine(repo)
    engine.index()
    fast, primary = engine.fast_semantic, engine.semantic
    fast.pause()  # its backlog stays: the fast tier is busy
    engine.start_embedding()
    time.sleep(2.0)  # the primary's worker has loaded its model and would embed by now
    assert primary.vector_count() == 0 and fast.busy
    fast.resume()
    deadline = time.monotonic() + 120
    while (primary.busy or fast.busy) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert fast.pending() == 0 and primary.pending() == 0
    assert_tier_consistent(engine, fast)
    assert_tier_consistent(engine, primary)
    engine.close()


def test_a_schema_5_store_gains_the_fast_table_and_keeps_its_rows(repo: Path, tmp_path: Path):
    db = tmp_path / "db" / "index.db"
    engine = open_engine(repo, db_path=str(db))
    engine.index()
    engine.embed_pending()
    counts, vectors = engine.store.counts(), engine.semantic.vector_count()
    engine.close()
    with sqlite3.connect(db) as conn:  # what ctxls with schema 5 left behind
        conn.execute("DROP TABLE fast_vectors")
        conn.execute("DELETE FROM meta WHERE key = 'fast_vector_model'")
        conn.execute("UPDATE meta SET value = '5' WHERE key = 'schema_version'")
    vector_file_for(str(db), FAST_TIER).unlink()
    upgraded = open_engine(repo, db_path=str(db))
    assert not upgraded.store.rebuilt and upgraded.store.counts() == counts
    assert upgraded.store.meta()["schema_version"] == str(store_module.SCHEMA_VERSION) == "6"
    assert upgraded.semantic.vector_count() == vectors and upgraded.fast_semantic.vector_count() == 0
    assert upgraded.serving_tier() is upgraded.semantic
    upgraded.embed_pending()
    assert_tier_consistent(upgraded, upgraded.fast_semantic)
    upgraded.close()


@pytest.mark.parametrize("damage", ["missing", "corrupt"])
def test_a_damaged_fast_ann_file_is_rebuilt_from_the_store(repo: Path, damage: str):
    engine = open_engine(repo)
    engine.index()
    drain(engine.fast_semantic)
    engine.close()
    ann_path = vector_file_for(engine.store.db_path, FAST_TIER)
    assert ann_path.exists() and ann_path != vector_file_for(engine.store.db_path)
    damage_ann_file(ann_path, damage)
    reopened = open_engine(repo)
    assert reopened.fast_semantic.ensure_loaded()
    assert_tier_consistent(reopened, reopened.fast_semantic)
    if damage == "corrupt":
        assert "ann_rebuilt" in reopened.status()["embeddings"]["fast"]
    reopened.close()


async def test_one_progress_item_covers_the_index_and_the_fast_tier_and_ends_in_ready(repo: Path):
    async with serve(repo, options={"embeddings": True}) as s:
        await s.wait_indexed()
        status = await s.request("ctxls/status")
        items = [reports for reports in s.client.progress_reports.values() if reports]
        assert len(items) == 1  # no second item for the embedding
        (reports,) = items
        assert isinstance(reports[0], types.WorkDoneProgressBegin)
        assert reports[0].title == "ctxls: indexing"
        assert isinstance(reports[-1], types.WorkDoneProgressEnd)
        assert reports[-1].message.startswith("ready; indexed ")
        # Ended once ranking by meaning sees every chunk: the fast tier's.
        assert status["embeddings"]["fast"]["pending"] == 0
        meaning = status["progress"]["meaning"]
        assert meaning["ready"] and meaning["done"] == meaning["total"] > 0
        assert "ranking by meaning" in reports[-1].message


def test_the_ann_nominates_ann_pool_vectors_beside_bm25_and_the_whole_pool_alone(repo: Path, monkeypatch):
    """``RankingConfig.ann_pool`` nearest vectors per ``fusion_pool`` when
    BM25 has candidates; twice the pool when it has none (dense-only mode, or
    a query none of whose words is indexed), where the ANN is all there is."""
    engine = open_engine(repo, embed_model=STATIC_MODEL_NAME, ranking=RankingConfig(ann_pool=4))
    engine.index()
    drain(engine.semantic)
    asked: list[int] = []
    nearest = engine.semantic.nearest
    monkeypatch.setattr(engine.semantic, "nearest", lambda vector, k: asked.append(k) or nearest(vector, k))
    engine.recall("retry the upload when a transfer fails", ["code"], 5, mode="hybrid")
    assert asked[0] == 4  # (then the answer's topicality asks for the nearest one)
    asked.clear()
    engine.recall("retry the upload when a transfer fails", ["code"], 5, mode="semantic")
    assert asked[0] == 2 * RankingConfig().fusion_pool
    engine.close()
