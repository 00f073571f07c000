"""The semantic tier with the real model: durability, consistency, hybrid recall."""

from __future__ import annotations

import os
import shutil
import sqlite3
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from ctxls.index import ann_file
from ctxls.index.embeddings import (CODE_MODEL_FILE, CODE_MODEL_NAME, E5_MODEL_NAME, MINILM_MODEL_NAME,
                                    STATIC_MODEL_NAME, TOKENIZER_FILE)
from ctxls.index.engine import Engine, EngineOptions
from ctxls.index.semantic import unfingerprinted, vector_file_for

from conftest import alter_model_file, serve, write_tree

PARAPHRASE_REPO = {
    "util/checksum.py": "import hashlib\n\n\ndef compute_checksum(data):\n    return hashlib.sha256(data).hexdigest()\n",
    "web/widget.py": "def render_widget(name):\n    return '<div>' + name + '</div>'\n",
    "util/dates.py": "from datetime import datetime\n\n\ndef parse_date(text):\n    return datetime.strptime(text, '%Y-%m-%d')\n",
    "mail/send.py": "def send_email(to, subject, body):\n    smtp.sendmail(FROM, to, subject + body)\n",
    "net/upload.py": ("def retry_upload(payload, attempts=3):\n    for _ in range(attempts):\n"
                      "        if put(payload):\n            return True\n    return False\n"),
}


def semantic_engine(root: Path, **options) -> Engine:
    return Engine(root, EngineOptions(embeddings=True, **options))


@pytest.fixture
def small(tmp_path: Path) -> Path:
    root = tmp_path / "small"
    write_tree(root, PARAPHRASE_REPO)
    return root


def vector_rows(engine: Engine) -> dict[str, int]:
    return {h: i for i, h in engine.store.reader().execute("SELECT id, text_hash FROM vectors")}


def assert_consistent(engine: Engine) -> None:
    """Every chunk has exactly one vector, no vector is orphaned, and the ANN
    index holds exactly SQLite's vectors."""
    conn = engine.store.reader()
    wanted = {r[0] for r in conn.execute("SELECT DISTINCT embed_hash FROM chunks")}
    stored = vector_rows(engine)
    assert set(stored) == wanted
    ann = engine.semantic._ann
    assert len(ann) == len(stored)
    assert all(np.asarray(ann.contains(np.array(list(stored.values()), dtype=np.uint64))))


def test_paraphrase_without_shared_words_finds_the_function(small: Path):
    engine = semantic_engine(small)
    engine.index()
    assert engine.embed_pending() == engine.status()["chunks"] == 5  # 5 functions (imports packed in)
    expected = {
        "fingerprint the contents of a blob": "compute_checksum",
        "try again when a transfer fails": "retry_upload",
        "turn a calendar string into a moment in time": "parse_date",
        "deliver a message to someone's inbox": "send_email",
        "produce markup for a component": "render_widget",
    }
    for query, symbol in expected.items():
        for mode in ("semantic", "hybrid"):
            hits = engine.recall(query, ["code"], 3, mode=mode).hits_by_kind["code"]
            assert hits[0].symbol == symbol, (query, mode)
        lexical = engine.recall(query, ["code"], 3, mode="lexical").hits_by_kind["code"]
        assert symbol not in [h.symbol for h in lexical]  # no shared word: BM25 cannot
    assert engine.status()["vectors"] == 5 and engine.status()["pending"] == 0
    engine.close()


def test_a_hybrid_recall_embeds_its_query_once_on_the_query_pool_while_bm25_scans(
        small: Path, monkeypatch):
    """The transformer's query embedding overlaps the lexical work: it runs on
    the query pool, started before BM25, and the ranking, the off-topic test
    and a second ask all wait for that one run."""
    engine = semantic_engine(small)
    engine.index()
    engine.embed_pending()
    semantic = engine.semantic
    embed = semantic.embedder.embed_query
    runs: list[tuple[str, str]] = []
    finished: list[str] = []

    def slow_embed(text: str):
        runs.append((text, threading.current_thread().name))
        time.sleep(0.3)  # long enough that the request thread gets to BM25 first
        finished.append(text)
        return embed(text)

    monkeypatch.setattr(semantic.embedder, "embed_query", slow_embed)
    import ctxls.index.ranking as ranking
    scans: list[int] = []  # embeddings finished when BM25 started
    bm25 = ranking.bm25_scores
    monkeypatch.setattr(ranking, "bm25_scores",
                        lambda *args, **kw: scans.append(len(finished)) or bm25(*args, **kw))
    result = engine.recall("try again when a transfer fails", ["code"], 3, mode="hybrid")
    assert result.hits_by_kind["code"][0].symbol == "retry_upload"
    assert result.topicality is not None and result.topicality.nearest_cosine is not None
    assert [text for text, _ in runs] == ["try again when a transfer fails"]
    assert runs[0][1].startswith("ctxls-query-embed")
    assert scans and scans[0] == 0  # BM25 ran before the embedding was done
    # Asked twice at once, the text is embedded once.
    future = semantic.query_vector_soon("deliver a message")
    vector = semantic.query_vector("deliver a message")
    assert np.array_equal(future.result(), vector)
    assert [text for text, _ in runs].count("deliver a message") == 1
    engine.close()


def test_no_change_embeds_nothing_and_an_edit_replaces_only_its_vector(small: Path):
    engine = semantic_engine(small)
    engine.index()
    engine.embed_pending()
    before = vector_rows(engine)
    engine.index(force=True)  # every file re-chunked, no text changed
    assert engine.embed_pending() == 0 and vector_rows(engine) == before

    text = (small / "web/widget.py").read_text().replace("<div>", "<section>")
    engine.set_buffer("web/widget.py", text)
    assert engine.embed_pending() == 1
    after = vector_rows(engine)
    (gone,) = set(before) - set(after)
    assert not np.asarray(engine.semantic._ann.contains(np.array([before[gone]], dtype=np.uint64))).any()
    assert len(after) == len(before)
    assert_consistent(engine)
    engine.close()


def test_pending_counts_an_edit_at_once_and_its_vector_when_embedded(small: Path):
    # The count of every row is kept for a moment; an edited path's rows
    # without a vector are counted on top of it, not after the next recount.
    engine = semantic_engine(small)
    engine.cold_index()
    engine.embed_pending()
    assert engine.status()["pending"] == 0
    text = (small / "web/widget.py").read_text()
    for n, markup in enumerate(("<section>", "<article>"), 1):
        engine.set_buffer("web/widget.py", text.replace("<div>", markup))
        status = engine.status()
        assert status["pending"] == 1 and status["state"] != "ready", n
        assert engine.recall("render widget", ["code"], 3).partial
        assert engine.embed_pending() == 1
        assert engine.status()["pending"] == 0
    engine.close()


def test_backlog_batches_are_length_sorted_and_urgent_paths_come_first(tmp_path: Path):
    files = {f"pkg/m{i:02d}.py": f"def f{i}():\n" + "    x = 1\n" * ((i * 7) % 23 + 1)
             for i in range(40)}
    root = tmp_path / "many"
    write_tree(root, files)
    engine = semantic_engine(root)
    engine.index()
    semantic = engine.semantic
    assert semantic.ensure_loaded()
    semantic.mark_urgent("pkg/m39.py")  # chunk-id order would reach it last
    batches = []
    embed = semantic.embedder.embed

    def recording(texts):
        batches.append(texts)
        return embed(texts)

    semantic.embedder.embed = recording
    assert engine.embed_pending() == 40
    assert "def f39" in batches[0][0]  # the urgent path before the backlog
    backlog = [t for batch in batches[1:] for t in batch]
    assert all(len(batch) <= 8 for batch in batches)
    assert [len(t) for t in backlog] == sorted(len(t) for t in backlog)  # one window of 64
    assert_consistent(engine)
    engine.close()


def test_the_chunk_just_edited_is_embedded_before_the_rest_of_its_file(tmp_path: Path):
    # Functions longer than SHORT_CHARS (index/chunking/packing.py): packing leaves each its own chunk.
    padding = "".join(f"    y{j} = x  # an intermediate value kept for the trace of step {j}\n" for j in range(7))
    source = "".join(f"def step_{i}(x):\n{padding}    return x + {i}\n\n\n" for i in range(20))
    write_tree(tmp_path, {"steps.py": source})
    engine = semantic_engine(tmp_path)
    engine.index()  # nothing embedded yet
    assert engine.semantic.ensure_loaded()
    engine.set_buffer("steps.py", source.replace("return x + 3\n", "return x * 3\n"))
    batches = []
    embed = engine.semantic.embedder.embed
    engine.semantic.embedder.embed = lambda texts: batches.append(texts) or embed(texts)
    assert engine.embed_pending() == 20
    assert len(batches[0]) == 1 and "return x * 3" in batches[0][0]  # alone, first
    assert_consistent(engine)
    engine.close()


def damage_ann_file(path: Path, damage: str) -> None:
    """"missing": deleted; "corrupt": garbage in its place."""
    if damage == "missing":
        path.unlink()
    else:
        path.write_bytes(b"not an index" * 100)


@pytest.mark.parametrize("damage", ["missing", "corrupt", "stale"])
def test_ann_file_is_repaired_from_the_store(small: Path, damage: str):
    engine = semantic_engine(small)
    engine.index()
    engine.embed_pending()
    ann_path = vector_file_for(engine.store.db_path)
    assert ann_path.exists()
    if damage == "stale":
        # Vectors committed after the last save, as after a crash mid-backlog.
        write_tree(small, {"extra.py": "def added_late():\n    return 1\n"})
        engine.index()
        while engine.semantic.step():
            pass  # embedded, never saved
        engine.store.close()
    else:
        engine.close()
        damage_ann_file(ann_path, damage)
    reopened = semantic_engine(small)
    assert reopened.semantic.ensure_loaded()
    assert_consistent(reopened)
    reopened.close()


def test_the_ann_files_keys_are_read_at_once_when_it_is_loaded(small: Path, monkeypatch):
    """Loading the ANN file read its keys one by one (iterating usearch's
    key view), and each one-key read scans the index: quadratic, so a
    daemon restarted on 100,000 vectors held every recall for minutes
    waiting for the load. Read by the key view's offset, nothing loads."""
    from usearch.index import IndexedKeys

    engine = semantic_engine(small)
    engine.index()
    engine.embed_pending()
    engine.close()
    whole = IndexedKeys.__getitem__

    def no_single_offsets(self, offset):
        assert isinstance(offset, slice), "a key read on its own"
        return whole(self, offset)

    monkeypatch.setattr(IndexedKeys, "__getitem__", no_single_offsets)
    reopened = semantic_engine(small)
    assert reopened.semantic.ensure_loaded()
    assert_consistent(reopened)
    reopened.close()


def test_two_writers_of_one_ann_file_each_write_a_whole_one(small: Path, monkeypatch):
    """Two processes with one store open save the ANN file at the same
    moment: both writes complete, the file left is whole, and no temporary
    file stays behind (two bench runs crashed on `<file>.tmp` renamed twice)."""
    engine = semantic_engine(small)
    engine.index()
    engine.embed_pending()
    ann_path = vector_file_for(engine.store.db_path)
    write = ann_file.write
    calls = []

    def write_while_another_writes(path, payload, dim, count, binding):
        done = write(path, payload, dim, count, binding)
        calls.append(path)
        if len(calls) == 1:  # the other writer, between this one's write and its rename
            engine.semantic.save()
        return done

    monkeypatch.setattr(ann_file, "write", write_while_another_writes)
    engine.semantic._dirty = True
    engine.semantic.save()  # raised FileNotFoundError: both wrote, and renamed, `<file>.tmp`
    assert len(calls) == 2 and calls[0] != calls[1]
    assert not engine.semantic._dirty
    assert ann_file.read(ann_path, engine.semantic.embedder.dim)
    assert sorted(p.name for p in ann_path.parent.iterdir() if p.name.startswith(ann_path.name)) == [ann_path.name]
    engine.close()


def test_a_failed_ann_write_loses_nothing_and_a_killed_writers_file_is_removed(small: Path, monkeypatch):
    """A full disk raised out of save() and ended the embedding worker's thread."""
    engine = semantic_engine(small)
    engine.index()
    engine.embed_pending()
    ann_path = vector_file_for(engine.store.db_path)
    def disk_full(*args):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(ann_file, "write", disk_full)
    engine.semantic._dirty = True
    engine.semantic.save()  # logged, not raised: the worker thread and the close go on
    assert engine.semantic._dirty
    monkeypatch.undo()
    engine.close()
    old, fresh = ann_path.with_name(ann_path.name + ".41-dead.tmp"), ann_path.with_name(ann_path.name + ".42-live.tmp")
    for path in (old, fresh, ann_path.with_name(ann_path.name + ".tmp")):
        path.write_bytes(b"half a file")
    os.utime(old, (time.time() - 3600, time.time() - 3600))
    os.utime(ann_path.with_name(ann_path.name + ".tmp"), (time.time() - 3600, time.time() - 3600))
    reopened = semantic_engine(small)
    assert reopened.semantic.ensure_loaded()
    assert not old.exists() and fresh.exists()  # a live writer's file is left to it
    assert not ann_path.with_name(ann_path.name + ".tmp").exists()
    assert_consistent(reopened)
    reopened.close()


def test_changing_the_model_drops_old_vectors(small: Path):
    engine = semantic_engine(small)
    engine.index()
    engine.embed_pending()
    with engine.store.write() as conn:
        conn.execute("UPDATE meta SET value = 'another-model/384/text-1' WHERE key = 'vector_model'")
    engine.close()
    reopened = semantic_engine(small, embed_model=CODE_MODEL_NAME)  # an engine that chose its model
    reopened.semantic.ensure_loaded()
    assert reopened.status()["vectors"] == 0 and reopened.embed_pending() == 5
    reopened.close()


def test_an_engine_merely_on_the_default_model_never_drops_another_models_vectors(small: Path):
    """`ctxls recall --no-daemon` on a store the daemon embedded with the
    user's embedModel deleted every vector (written memory's among them): an
    engine on the default model that only answers uses the store's model where
    it is built in, else ranks by keywords, and leaves the vectors."""
    chosen = semantic_engine(small, embed_model=STATIC_MODEL_NAME)  # as a daemon configured so
    chosen.index()
    assert chosen.embed_pending() == 5
    stamp = chosen.store.meta()["vector_model"]
    chosen.close()
    reader = semantic_engine(small)  # the CLI's engine: no embedModel, no worker
    assert reader.semantic.ensure_loaded() and reader.semantic.embedder.name == STATIC_MODEL_NAME
    assert reader.recall("checksum", ["code"], 3, mode="semantic").mode == "semantic"
    assert reader.status()["vectors"] == 5 and reader.store.meta()["vector_model"] == stamp
    with reader.store.write() as conn:  # a model no ctxls has built in (a user's ONNX file)
        conn.execute("UPDATE meta SET value = 'ours/384/text-1/abc' WHERE key = 'vector_model'")
    reader.close()
    reader = semantic_engine(small)
    assert not reader.semantic.ensure_loaded() and "ours" in reader.semantic.failed
    assert reader.recall("compute_checksum", ["code"], 1).hits_by_kind["code"][0].symbol == "compute_checksum"
    assert reader.status()["vectors"] == 5 and reader.store.meta()["vector_model"] == "ours/384/text-1/abc"
    reader.close()
    daemon = semantic_engine(small)  # a daemon's worker embeds with its configured model
    daemon.start_embedding()
    deadline = time.monotonic() + 60
    while daemon.store.meta()["vector_model"] == "ours/384/text-1/abc" and time.monotonic() < deadline:
        time.sleep(0.05)
    assert daemon.store.meta()["vector_model"].startswith(CODE_MODEL_NAME)
    daemon.close()


def test_an_unknown_built_in_model_name_is_named_with_the_built_in_ones():
    from ctxls.index.embeddings import EmbedderUnavailable, load_embedder

    with pytest.raises(EmbedderUnavailable) as raised:
        load_embedder("ctxls-code-static")
    message = str(raised.value)
    assert "'ctxls-code-static' is not a built-in model" in message
    assert all(name in message for name in (STATIC_MODEL_NAME, CODE_MODEL_NAME, "all-MiniLM-L6-v2",
                                            E5_MODEL_NAME))


def test_a_model_file_replaced_at_its_path_is_another_model(small: Path, tmp_path: Path):
    """A user's model is named by its file: the file replaced at the same path
    (a model fine-tuned again) must not be ranked against the old file's vectors."""
    model, tokenizer = tmp_path / "ours.onnx", tmp_path / "ours.json"
    model.write_bytes(CODE_MODEL_FILE.read_bytes())
    tokenizer.write_bytes(TOKENIZER_FILE.read_bytes())
    options = {"embed_model": str(model), "embed_tokenizer": str(tokenizer)}
    engine = semantic_engine(small, **options)
    engine.index()
    assert engine.embed_pending() == 5
    first = engine.store.meta()["vector_model"]
    engine.close()
    same = semantic_engine(small, **options)  # the same file: its vectors are kept
    assert same.semantic.ensure_loaded() and same.status()["vectors"] == 5 and same.embed_pending() == 0
    same.close()
    # Another ONNX file at the same path (protobuf skips the unknown field 99
    # appended here: it loads and runs; only its bytes differ).
    model.write_bytes(model.read_bytes() + bytes([0x98, 0x06, 0x01]))
    replaced = semantic_engine(small, **options)
    assert replaced.semantic.ensure_loaded()
    assert replaced.store.meta()["vector_model"] != first
    assert replaced.status()["vectors"] == 0 and replaced.embed_pending() == 5
    replaced.close()


def test_vectors_stamped_before_fingerprints_are_kept_once_then_tracked(small: Path):
    engine = semantic_engine(small)
    engine.index()
    engine.embed_pending()
    stamp = engine.store.meta()["vector_model"]
    with engine.store.write() as conn:  # the stamp such a store holds: name/dim/text version
        conn.execute("UPDATE meta SET value = ? WHERE key = 'vector_model'", (unfingerprinted(stamp),))
    engine.close()
    reopened = semantic_engine(small)
    assert reopened.semantic.ensure_loaded()
    assert reopened.status()["vectors"] == 5 and reopened.embed_pending() == 0
    assert reopened.store.meta()["vector_model"] == stamp
    reopened.close()


def assert_finds_paraphrases(engine: Engine) -> None:
    """Cosine alone finds PARAPHRASE_REPO's functions by queries sharing no word with them."""
    for query, symbol in {"fingerprint the contents of a blob": "compute_checksum",
                          "try again when a transfer fails": "retry_upload"}.items():
        hits = engine.recall(query, ["code"], 3, mode="semantic").hits_by_kind["code"]
        assert hits[0].symbol == symbol, query


def test_the_e5_tier_replaces_the_default_vectors_and_finds_paraphrases(small: Path):
    engine = semantic_engine(small)
    engine.index()
    engine.embed_pending()
    minilm = engine.store.meta()["vector_model"]
    engine.close()
    e5 = semantic_engine(small, embed_model=E5_MODEL_NAME)  # the same store, another model
    assert e5.semantic.ensure_loaded()
    assert e5.store.meta()["vector_model"].startswith(E5_MODEL_NAME) != minilm.startswith(E5_MODEL_NAME)
    assert e5.status()["vectors"] == 0  # the old model's vectors are useless to it
    # Recall answers while nothing is embedded yet (the worker re-embeds in the background).
    assert e5.recall("compute_checksum", ["code"], 1).hits_by_kind["code"][0].symbol == "compute_checksum"
    assert e5.embed_pending() == 5
    # e5 embeds a query with its "query: " prefix and chunks with "passage: ".
    assert_finds_paraphrases(e5)
    assert_consistent(e5)
    e5.close()


def indexed_with_a_missing_model(root: Path, tmp_path: Path) -> tuple[Engine, list[str]]:
    """An engine whose model files do not exist, indexed, and the warnings it gives."""
    engine = semantic_engine(root, embed_model=str(tmp_path / "none.onnx"),
                             embed_tokenizer=str(tmp_path / "none.json"))
    warnings: list[str] = []
    engine.on_warning = warnings.append
    engine.index()
    return engine, warnings


def test_missing_model_warns_once_and_recall_still_answers(small: Path, tmp_path: Path):
    engine, warnings = indexed_with_a_missing_model(small, tmp_path)
    assert engine.embed_pending() == 0
    with engine.store.write() as conn:  # even with vectors present, a broken model falls back
        conn.execute("INSERT INTO vectors(text_hash, vec) VALUES ('x', x'00')")
    hits = engine.recall("compute_checksum", ["code"], mode="semantic").hits_by_kind["code"]
    assert hits[0].symbol == "compute_checksum"
    assert len(warnings) == 1 and "none.onnx" in warnings[0]
    assert engine.status()["embeddings"]["enabled"] is False
    engine.close()


def test_the_general_model_is_chosen_by_name_and_replaces_the_code_models_vectors(small: Path):
    code = semantic_engine(small)
    code.index()
    assert code.embed_pending() == 5
    assert code.store.meta()["vector_model"].startswith(CODE_MODEL_NAME)
    code.close()
    general = semantic_engine(small, embed_model="all-MiniLM-L6-v2")  # the same store
    assert general.semantic.ensure_loaded()
    assert general.store.meta()["vector_model"].startswith(MINILM_MODEL_NAME)
    assert general.status()["vectors"] == 0 and general.embed_pending() == 5
    assert_finds_paraphrases(general)
    assert_consistent(general)
    general.close()


def test_an_altered_code_model_file_is_refused(small: Path, tmp_path: Path, monkeypatch):
    from ctxls.index import embeddings

    alter_model_file(monkeypatch, tmp_path, "CODE_MODEL_FILE")
    with pytest.raises(embeddings.EmbedderUnavailable, match="sha256"):
        embeddings.load_embedder()
    engine = semantic_engine(small)
    warnings: list[str] = []
    engine.on_warning = warnings.append
    engine.index()
    assert engine.embed_pending() == 0  # no vectors from a model that is not the shipped one
    assert engine.recall("compute_checksum", ["code"], 1).hits_by_kind["code"][0].symbol == "compute_checksum"
    assert len(warnings) == 1 and "sha256" in warnings[0]
    engine.close()


async def _wait_embedded(s, timeout: float = 120.0) -> dict:
    async def done():
        status = await s.request("ctxls/status")
        return status if status["pending"] == 0 and status["vectors"] > 0 else None

    status = await s.wait_for(done, timeout=timeout, interval=0.2)
    assert status, "embedding backlog did not drain"
    return status


async def test_daemon_embeds_in_background_and_reembeds_an_edit(small: Path):
    async with serve(small, options={"embeddings": True}) as s:
        await s.wait_indexed()
        status = await _wait_embedded(s)
        # Both tiers embedded in the background; the drained primary serves.
        assert status["embeddings"] == {
            "enabled": True, "model": "ctxls-code-minilm-int8", "dim": 384, "serving": "primary",
            "fast": {"enabled": True, "model": "ctxls-code-static-256", "dim": 256,
                     "vectors": 5, "pending": 0}}
        result = await s.request("ctxls/recall", {"query": "try again when a transfer fails",
                                                  "kind": "code", "mode": "hybrid"})
        assert result["hits"][0]["chunk"]["symbol"] == "retry_upload"

        db = small / ".ctxls" / "index.db"
        old = {h for (h,) in sqlite3.connect(db).execute("SELECT text_hash FROM vectors")}
        text = (small / "net/upload.py").read_text()
        s.open("net/upload.py", text)
        s.replace("net/upload.py", text.replace("attempts=3", "attempts=5"), version=2)
        started = time.monotonic()

        async def reembedded():
            now = {h for (h,) in sqlite3.connect(db).execute("SELECT text_hash FROM vectors")}
            return now if len(now - old) == 1 else None

        now = await s.wait_for(reembedded, timeout=10)
        assert now and len(old - now) == 1 and len(now) == len(old)  # old vector gone
        assert time.monotonic() - started < 5


async def test_killed_mid_embedding_restart_is_consistent(tmp_path: Path):
    root = tmp_path / "many"
    write_tree(root, {f"pkg/m{i:03}.py": f"def handler_{i}(request):\n    return request.get('field_{i}')\n"
                      for i in range(400)})
    async with serve(root, options={"embeddings": True}) as s:
        # Polled from the start, not after wait_indexed: the one progress item
        # ends once ranking by meaning sees every chunk, and on a quiet machine
        # the transformer has embedded these 400 small chunks by then.
        async def partly():
            status = await s.request("ctxls/status")
            return status["vectors"] > 16 and status["pending"] > 0

        assert await s.wait_for(partly, timeout=60, interval=0.05)
        s.client._server.kill()  # no shutdown, no final save
        await s.client._server.wait()
        s.client.capabilities = None  # nothing to shut down any more

    async with serve(root, options={"embeddings": True}) as s:
        await s.wait_indexed()
        await _wait_embedded(s, timeout=180)
    engine = semantic_engine(root)
    assert engine.semantic.ensure_loaded()
    assert_consistent(engine)
    assert engine.status()["vectors"] == 400
    engine.close()


async def test_embeddings_off_and_broken_model_still_answer_over_lsp(small: Path, tmp_path: Path):
    async with serve(small, options={"embeddings": False}) as s:
        await s.wait_indexed()
        status = await s.request("ctxls/status")
        assert status["embeddings"]["enabled"] is False and status["vectors"] == 0
        hits = (await s.request("ctxls/recall", {"query": "parse_date", "kind": "code"}))["hits"]
        assert hits[0]["chunk"]["symbol"] == "parse_date"
    broken = tmp_path / "broken.onnx"
    broken.write_bytes(b"not a model")
    async with serve(small, options={"embeddings": True, "embedModel": str(broken),
                                     "embedTokenizer": str(broken)}) as s:
        await s.wait_indexed()

        async def warned():
            return [m for m in s.client.messages if "semantic search is off" in m.message]

        warnings = await s.wait_for(warned)
        # The fast tier (the shipped static model) still serves: the warning says so.
        assert len(warnings) == 1 and "the fast tier's vectors instead" in warnings[0].message
        hits = (await s.request("ctxls/recall", {"query": "parse_date", "kind": "code"}))["hits"]
        assert hits[0]["chunk"]["symbol"] == "parse_date"
        status = (await s.request("ctxls/status"))["embeddings"]
        assert status["enabled"] is False and status["serving"] == "fast"


def test_hybrid_recall_marks_hits_weak_when_the_repository_is_not_about_the_query(small: Path):
    """BM25 finds nothing for words that occur nowhere; a ranking by meaning
    always returns its nearest rows. Those are flagged weak (assemble's
    off-topic test), never silently served as an answer; the CLI exits 1."""
    import json
    import subprocess
    import sys

    engine = semantic_engine(small)
    engine.index()
    engine.embed_pending()
    unrelated = "kubernetes helm chart zzqx flurbo"
    weak = engine.recall(unrelated, ["code"], 5, mode="hybrid")
    assert weak.mode == "hybrid" and weak.hits_by_kind["code"]  # the nearest rows stay listed
    assert weak.weak_reason
    assert not engine.recall(unrelated, ["code"], 5, mode="lexical").hits_by_kind["code"]
    related = engine.recall("retry upload payload attempts", ["code"], 3, mode="hybrid")
    assert related.weak_reason is None and related.hits_by_kind["code"][0].symbol == "retry_upload"
    engine.close()

    cli = [sys.executable, "-m", "ctxls.daemon.cli", "recall", "--root", str(small), "--no-daemon",
           "--kind", "code"]
    got = subprocess.run([*cli, unrelated], capture_output=True, text=True, timeout=120)
    assert got.returncode == 1 and "(weak: " in got.stdout
    as_json = json.loads(subprocess.run([*cli, unrelated, "--json"], capture_output=True, text=True,
                                        timeout=120).stdout)
    assert as_json["weak"] is True and as_json["weakReason"] == weak.weak_reason
    found = subprocess.run([*cli, "retry upload payload attempts"], capture_output=True, text=True,
                           timeout=120)
    assert found.returncode == 0 and "(weak" not in found.stdout
    # A name the repository defines is answered by its definition, even before
    # its vector exists (a function just typed; no daemon embeds it here).
    with open(small / "mail" / "send.py", "a") as typed:
        typed.write("\n\ndef frobnicate_quux_zyx(spec):\n    return spec\n")
    named = subprocess.run([*cli, "frobnicate_quux_zyx"], capture_output=True, text=True,
                           timeout=120)
    assert named.returncode == 0 and "(weak" not in named.stdout, named.stdout
    assert "mail/send.py:5-6  frobnicate_quux_zyx" in named.stdout
    assert "(partial: 1 chunks still lack a vector" in named.stdout

    # The MCP recall tool says so too: its text ends with the note, its JSON says weak.
    mcp = subprocess.Popen([sys.executable, "-m", "ctxls.daemon.cli", "mcp", "--root", str(small),
                            "--no-daemon"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                           stderr=subprocess.DEVNULL, text=True,
                           env={**os.environ, "CTXLS_LOG": "ERROR"})

    def call_recall(msg_id: int, arguments: dict) -> dict:
        mcp.stdin.write(json.dumps({"jsonrpc": "2.0", "id": msg_id, "method": "tools/call", "params": {
            "name": "recall", "arguments": {"kind": "code", **arguments}}}) + "\n")
        mcp.stdin.flush()
        return json.loads(mcp.stdout.readline())["result"]

    try:
        mcp.stdin.write(json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"}}}) + "\n")
        mcp.stdin.flush()
        assert "result" in json.loads(mcp.stdout.readline())
        text = call_recall(1, {"query": unrelated})["content"][0]["text"]
        assert "(weak: " in text and "these are only the nearest rows)" in text
        assert call_recall(2, {"query": unrelated, "format": "json"})["structuredContent"]["weak"]
        answer = call_recall(3, {"query": "retry upload payload attempts"})["content"][0]["text"]
        assert "retry_upload" in answer and "(weak" not in answer
    finally:
        mcp.stdin.close()
        mcp.wait(timeout=60)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="niceness is per thread on Linux")
def test_embedding_runs_compute_on_their_callers_threads_at_its_priority():
    """No shared ONNX pool (a query's run queued behind a nice backlog's, at
    its niceness, took 4x as long): a query's run computes on the caller's
    thread, and a nice thread's many-run embed runs its other runs on threads
    as nice as it, each text's vector in its place. Each run records the
    thread it computed on (listing /proc/self/task missed a live thread now
    and then)."""
    from ctxls.index.embeddings import BATCH_SIZE, OnnxEmbedder, builtin_model_files
    from ctxls.index.priority import BACKGROUND_NICENESS, lower_thread_priority, thread_niceness

    embedder = OnnxEmbedder(builtin_model_files(CODE_MODEL_NAME))
    embedder.runs_at_once = 3  # as on a 3-core machine, whatever this one has
    runs_seen: list[tuple[int, int]] = []  # (thread id, its niceness) per run
    embed_run = embedder._embed_batch

    def recorded_run(texts: list[str]) -> np.ndarray:
        runs_seen.append((threading.get_native_id(), thread_niceness()))
        return embed_run(texts)

    embedder._embed_batch = recorded_run
    query = embedder.embed_query("retry a failed upload")
    assert runs_seen == [(threading.get_native_id(), thread_niceness())]  # computed here

    texts = [f"def helper_{i}(value):\n    return value * {i}" for i in range(3 * embedder.batch_size)]
    result: dict[str, object] = {}

    def background() -> None:
        lower_thread_priority()
        result["caller"] = threading.get_native_id()
        result["vectors"] = embedder.embed(texts)

    runs_seen.clear()
    worker = threading.Thread(target=background)
    worker.start()
    worker.join()
    assert len(runs_seen) == -(-len(texts) // BATCH_SIZE)
    run_threads = {tid for tid, _ in runs_seen}
    assert result["caller"] in run_threads and 1 < len(run_threads) <= 3, \
        "some runs on the caller's thread, the others on threads of their own, at most 3 at once"
    assert {niceness for _, niceness in runs_seen} == {BACKGROUND_NICENESS}
    # Each text's vector where it stood, as its run embedded alone gives it
    # (one text a run: the text alone).
    batch_by_batch = np.concatenate([embed_run(texts[start:start + BATCH_SIZE])
                                     for start in range(0, len(texts), BATCH_SIZE)])
    np.testing.assert_allclose(result["vectors"], batch_by_batch, atol=1e-5)
    assert np.allclose(query, embed_run(["retry a failed upload"])[0], atol=1e-5)


def test_the_backlog_runs_one_run_per_usable_core():
    """A transformer's backlog computes as many runs at once as the process
    has cores to run on (its affinity; a container's CPU quota), at most
    MAX_RUNS_AT_ONCE; on one core every run computes on the caller's thread."""
    from ctxls.index.embeddings import (MAX_RUNS_AT_ONCE, STEP_TEXTS_PER_RUN, OnnxEmbedder,
                                        builtin_model_files, runs_at_once)
    from ctxls.index.priority import usable_cores

    assert runs_at_once() == min(usable_cores(), MAX_RUNS_AT_ONCE)
    seen: dict[str, object] = {}

    def on_one_core() -> None:
        # Linux: affinity is per thread, and a thread's new threads inherit it.
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
        seen["cores"] = usable_cores()
        embedder = OnnxEmbedder(builtin_model_files(CODE_MODEL_NAME))
        seen["runs"], seen["step"] = embedder.runs_at_once, embedder.batch_size
        threads: set[int] = set()
        embed_run = embedder._embed_batch

        def recorded_run(texts: list[str]) -> np.ndarray:
            threads.add(threading.get_native_id())
            return embed_run(texts)

        embedder._embed_batch = recorded_run
        texts = [f"def helper_{i}(value):\n    return value + {i}" for i in range(6)]
        vectors = embedder.embed(texts)
        seen["threads"] = threads == {threading.get_native_id()}
        seen["in place"] = np.allclose(vectors, np.concatenate([embed_run([t]) for t in texts]), atol=1e-5)

    worker = threading.Thread(target=on_one_core)
    worker.start()
    worker.join()
    assert seen == {"cores": 1, "runs": 1, "step": STEP_TEXTS_PER_RUN, "threads": True, "in place": True}


def test_a_containers_cpu_quota_bounds_the_usable_cores(tmp_path: Path):
    """cgroup v2's cpu.max (``--cpus 1.5`` writes "150000 100000") and v1's
    cfs quota count rounded up; "max" or -1, no cpu controller, or no file is
    no quota; a container whose cgroup is the mount's root (while
    /proc/self/cgroup names the host's path) is read at the root."""
    from ctxls.index.priority import _cgroup_cpu_quota

    membership, fs = tmp_path / "cgroup", tmp_path / "fs"
    group = fs / "docker" / "abc"
    group.mkdir(parents=True)
    membership.write_text("4:memory:/ignored\n0::/docker/abc\n")
    for written, quota in (("150000 100000\n", 2), ("100000 100000", 1), ("max 100000", None),
                           ("garbage", None)):
        (group / "cpu.max").write_text(written)
        assert _cgroup_cpu_quota(membership, fs) == quota, written
    (group / "cpu.max").unlink()
    (fs / "cpu.max").write_text("250000 100000")  # the container's own cgroup, at the root
    assert _cgroup_cpu_quota(membership, fs) == 3
    v1 = fs / "cpu,cpuacct"
    v1.mkdir()
    membership.write_text("3:cpu,cpuacct:/docker/abc\n2:memory:/docker/abc\n")
    (v1 / "cpu.cfs_period_us").write_text("100000\n")
    for written, quota in (("50000\n", 1), ("400000\n", 4), ("-1\n", None)):
        (v1 / "cpu.cfs_quota_us").write_text(written)
        assert _cgroup_cpu_quota(membership, fs) == quota, written
    membership.write_text("4:memory:/only-memory\n")
    assert _cgroup_cpu_quota(membership, fs) is None
    assert _cgroup_cpu_quota(tmp_path / "absent", fs) is None


def test_a_texts_vector_does_not_depend_on_the_texts_embedded_beside_it():
    """Vectors are keyed by the text's hash: the same text must get the same
    vector whichever texts share its step (the int8 model scales a batch's
    activations together, so the product runs one text at a time)."""
    from ctxls.index.embeddings import load_embedder
    embedder = load_embedder()
    text = "def apart(expr, symbol=None):\n    return expr.split(symbol)"
    others = ["x = 1", "class Cart:\n    def total(self):\n        return sum(i.price * i.quantity "
              "for i in self.items if i.price is not None) + self.shipping_cost()", "import os"]
    alone = embedder.embed([text])[0]
    for step in ([others[1], text], [text, others[0]], [*others, text], [others[0], text, others[2], text]):
        vectors = embedder.embed(step)
        for at in (i for i, t in enumerate(step) if t == text):
            np.testing.assert_allclose(vectors[at], alone, atol=1e-6)


def test_a_full_disk_pauses_embedding_with_one_warning_and_it_resumes(small: Path, monkeypatch, caplog):
    """On a full disk every embedding step computed a batch, lost it at the
    write and logged a traceback, every 3 s for as long as the disk stayed
    full. Now the worker says so once and keeps the refused batch, storing it
    again (never embedding it again); once space is freed the vectors land."""
    import logging

    from ctxls.index import semantic

    monkeypatch.setattr(semantic, "REFUSED_WAIT_S", 0.05)
    batches: list[int] = []  # each embedding batch taken from the backlog
    next_batch = semantic.SemanticIndex._next_batch

    def counted(self):
        batch = next_batch(self)
        if batch:
            batches.append(len(batch))
        return batch

    monkeypatch.setattr(semantic.SemanticIndex, "_next_batch", counted)
    write_tree(small, {f"gen/m{i}.py": f"def generated_{i}(x):\n    return x * {i}\n" for i in range(300)})
    engine = semantic_engine(small)
    try:
        engine.index()
        writer = engine.store._writer
        writer.execute("VACUUM")  # no free pages left to take a batch of vectors
        writer.execute(f"PRAGMA max_page_count = {writer.execute('PRAGMA page_count').fetchone()[0]}")
        with caplog.at_level(logging.WARNING, logger="ctxls.index.semantic"):
            engine.start_embedding()
            deadline = time.monotonic() + 60
            while not any("embedding paused" in r.getMessage() for r in caplog.records) \
                    and time.monotonic() < deadline:
                time.sleep(0.05)
            taken = len(batches)
            time.sleep(0.5)  # several refusals: the refused batches are stored again, not embedded again
            assert len(batches) == taken
            paused = [r for r in caplog.records if "embedding paused" in r.getMessage()]
            assert paused and "database or disk is full" in paused[0].getMessage()
            assert len(paused) <= 2  # once per tier
            assert not any("embedding step failed" in r.getMessage() for r in caplog.records)
        writer.execute("PRAGMA max_page_count = 1073741823")  # space freed
        deadline = time.monotonic() + 60
        while engine.semantic.pending() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert engine.semantic.pending() == 0 and engine.semantic.vector_count() > 0
    finally:
        engine.close()


def test_an_ann_file_of_another_store_is_rebuilt_and_stores_in_one_folder_have_their_own(
        small: Path, tmp_path: Path):
    """Two stores given by dbPath in one folder shared one vectors.usearch, and
    a file of another store (copied from another repository) passed the
    check: the keys are row ids, which every store numbers from 1, so recall
    ranked with the other store's vectors."""
    stores = tmp_path / "stores"
    a_db, b_db = str(stores / "a.db"), str(stores / "b.db")
    assert vector_file_for(a_db) == stores / "a.db.vectors.usearch" != vector_file_for(b_db)
    assert vector_file_for(str(stores / "index.db")) == stores / "vectors.usearch"  # the default keeps its name
    for db in (a_db, b_db):
        engine = semantic_engine(small, db_path=db)
        engine.index()
        engine.embed_pending()
        engine.close()  # saves its ANN file
    b_file = vector_file_for(b_db)
    b_file.write_bytes(vector_file_for(a_db).read_bytes())  # A's vectors where B's belong
    reopened = semantic_engine(small, db_path=b_db)
    try:
        assert reopened.semantic.ensure_loaded()
        assert reopened.semantic.rebuilt_reason == "written for another store or vector model"
        assert_consistent(reopened)
    finally:
        reopened.close()
    again = semantic_engine(small, db_path=b_db)
    try:
        assert again.semantic.ensure_loaded() and again.semantic.rebuilt_reason is None  # its own file now
    finally:
        again.close()


def test_a_tokenizer_file_that_does_not_load_is_named_not_the_model(tmp_path: Path):
    """A bad `embedTokenizer` file was reported as "cannot load <the model>":
    the editor's warning and status named a model that was fine."""
    from ctxls.index import embeddings

    model = tmp_path / "code.onnx"
    shutil.copy(Path(embeddings.__file__).parent / "models" / "code-minilm-int8.onnx", model)
    tokenizer = tmp_path / "badtok.json"
    tokenizer.write_text('{"x": 1}')
    with pytest.raises(embeddings.EmbedderUnavailable, match="tokenizer .*badtok.json"):
        embeddings.load_embedder(str(model), str(tokenizer))


def test_vectors_another_process_stores_are_searched_by_a_running_engine(small: Path):
    """The ANN index was brought in line with SQLite only when loaded: a
    `--no-daemon` CLI embedding beside a running daemon stored vectors the
    daemon never searched, and its semantic recall missed those chunks for
    as long as it ran, while status said ready."""
    from ctxls.index.embeddings import STATIC_MODEL_NAME

    running = semantic_engine(small, embed_model=STATIC_MODEL_NAME)
    running.index()
    running.embed_pending()
    assert running.recall("warm up", ["code"], 3, mode="semantic").hits_by_kind["code"]
    (small / "garden.py").write_text(
        "def water_tomato_plants(bed):\n    \"\"\"Water the tomato seedlings in the vegetable garden.\"\"\"\n"
        "    return bed.soak(litres=2)\n")
    other = semantic_engine(small, embed_model=STATIC_MODEL_NAME, watch="off")
    try:
        other.index()
        other.embed_pending()
    finally:
        other.close()
    hits = running.recall("water tomato seedlings in the vegetable garden", ["code"], 3,
                          mode="semantic").hits_by_kind["code"]
    running.close()
    assert hits and hits[0].path == "garden.py"


def test_a_full_disk_when_the_model_loads_pauses_the_worker_says_so_and_it_resumes(small: Path, monkeypatch):
    """The store refusing the model's stamp (a full disk as the daemon
    started) ended the worker's thread: nothing was embedded once space was
    freed, and status said nothing. Now it pauses, status and answers say
    why, and it tries again until the vectors land."""
    from ctxls.index import semantic
    from ctxls.index.errors import WriteFailed

    monkeypatch.setattr(semantic, "REFUSED_WAIT_S", 0.05)
    full = threading.Event()
    engine = semantic_engine(small)  # a new store: no model stamped yet
    real_write = engine.store.write

    def write_unless_full(*args, **kwargs):
        if full.is_set():
            raise WriteFailed(engine.store.db_path, "full", "database or disk is full")
        return real_write(*args, **kwargs)

    monkeypatch.setattr(engine.store, "write", write_unless_full)
    try:
        engine.index()
        full.set()  # the disk fills before the worker stamps its model
        engine.start_embedding()
        deadline = time.monotonic() + 30
        while "paused" not in engine.status()["embeddings"] and time.monotonic() < deadline:
            time.sleep(0.05)
        assert engine.semantic.running  # its thread ended here before
        assert engine.status()["embeddings"]["paused"].code == WriteFailed.code
        reason = engine.recall("compute_checksum", ["code"], 1).partial_reason
        assert "embedding is paused" in reason and "database or disk is full" in reason
        full.clear()  # space freed
        deadline = time.monotonic() + 60
        while engine.semantic.pending() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert engine.semantic.vector_count() == 5 and "paused" not in engine.status()["embeddings"]
    finally:
        full.clear()
        engine.close()


def test_a_sqlite_error_when_the_model_loads_pauses_the_worker_and_it_resumes(small: Path, monkeypatch):
    """The worker's first read of the store (the model's stamp) raised the
    library's own error, not a StoreError (a daemon out of file descriptors:
    "unable to open database file"), which ended the worker's thread: nothing
    was embedded once the store read again. Now the error pauses it, and it
    tries again until the vectors land."""
    import sqlite3

    from ctxls.index import semantic

    monkeypatch.setattr(semantic, "REFUSED_WAIT_S", 0.05)
    failing = threading.Event()
    engine = semantic_engine(small, embed_model=STATIC_MODEL_NAME)
    real_reader = engine.store.reader

    class UnopenableReader:
        def __init__(self, conn):
            self.conn = conn

        def execute(self, *args):
            raise sqlite3.OperationalError("unable to open database file")

        def __getattr__(self, name):
            return getattr(self.conn, name)

    def reader():
        conn = real_reader()
        worker = threading.current_thread() is engine.semantic._thread
        return UnopenableReader(conn) if failing.is_set() and worker else conn

    monkeypatch.setattr(engine.store, "reader", reader)
    try:
        engine.index()
        failing.set()
        engine.start_embedding()
        deadline = time.monotonic() + 30
        while "paused" not in engine.status()["embeddings"] and time.monotonic() < deadline:
            time.sleep(0.05)
        assert engine.semantic.running  # its thread ended here before
        assert "unable to open database file" in engine.status()["embeddings"]["paused"].message
        failing.clear()  # the store reads again
        deadline = time.monotonic() + 60
        while engine.semantic.pending() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert engine.semantic.vector_count() == 5 and "paused" not in engine.status()["embeddings"]
    finally:
        failing.clear()
        engine.close()


def test_a_worker_paused_by_a_full_disk_is_in_status_and_the_answers_reason(small: Path, monkeypatch):
    """A worker whose vectors the store refused kept status at "embedding"
    with no error, and answers said only "no vectors yet"."""
    from ctxls.index import semantic
    from ctxls.index.errors import WriteFailed

    monkeypatch.setattr(semantic, "REFUSED_WAIT_S", 0.05)
    write_tree(small, {f"gen/m{i}.py": f"def generated_{i}(x):\n    return x * {i}\n" for i in range(300)})
    engine = semantic_engine(small, embed_model=STATIC_MODEL_NAME)  # one tier, quick to drain
    try:
        engine.index()
        assert engine.semantic.ensure_loaded()  # the stamp written while there is room
        writer = engine.store._writer
        writer.execute("VACUUM")  # no free pages left to take a batch of vectors
        writer.execute(f"PRAGMA max_page_count = {writer.execute('PRAGMA page_count').fetchone()[0]}")
        engine.start_embedding()
        deadline = time.monotonic() + 60
        while paused_tier(engine.status()) is None and time.monotonic() < deadline:
            time.sleep(0.05)
        status = engine.status()
        assert status["state"] == "embedding" and status["embeddings"]["paused"].code == WriteFailed.code
        reason = engine.recall("compute_checksum", ["code"], 1).partial_reason
        assert "embedding is paused" in reason and "disk is full" in reason
        writer.execute("PRAGMA max_page_count = 1073741823")  # space freed
        deadline = time.monotonic() + 60
        while engine.semantic.pending() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert engine.semantic.pending() == 0 and paused_tier(engine.status()) is None
    finally:
        engine.close()


def paused_tier(status: dict) -> dict | None:
    """Status's description of a tier whose worker the store paused, if any."""
    embeddings = status["embeddings"]
    return next((tier for tier in (embeddings, embeddings.get("fast", {})) if "paused" in tier), None)


@pytest.mark.parametrize("when", ["loading", "storing"])
def test_a_store_deleted_under_the_embedding_worker_leaves_embedding_to_finish(small: Path, when: str):
    """`git clean -fdx` right after a daemon started. While the worker
    loaded (its model's stamp written under its load lock) the store's
    replacement, noticed by that write, took the same lock: the worker and
    the re-index it was to start waited for good ("indexing"). While a step
    stored its vectors, the ANN index store_replaced had dropped was used
    (AttributeError) by that step and every later one: "embedding" for good."""
    from contextlib import contextmanager

    engine = semantic_engine(small, embed_model=STATIC_MODEL_NAME)  # one tier, quick to drain
    store = engine.store
    real_write = store.write
    deleting: list[bool] = []
    deleted: list[bool] = []

    @contextmanager
    def deleted_after_the_commit(durable: bool = False):
        with real_write(durable) as conn:
            yield conn
        if threading.current_thread().name == "ctxls-embed" and not deleting \
                and engine.semantic.ready == (when == "storing"):
            deleting.append(True)
            for suffix in ("", "-wal", "-shm"):
                Path(f"{store.db_path}{suffix}").unlink(missing_ok=True)
            store._ready(verify=True)  # noticed (by any access): created anew, store_replaced
            deleted.append(True)

    try:
        engine.cold_index()
        store.write = deleted_after_the_commit
        engine.start_embedding()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not (
                deleted and engine.cold_index_done and engine.status()["state"] == "ready"):
            time.sleep(0.05)
        assert deleted and engine.status()["state"] == "ready"
        assert engine.semantic.pending() == 0
        assert_consistent(engine)
        hits = engine.recall("hash the bytes of a blob", ["code"], 3, mode="semantic")
        assert not hits.partial and hits.hits_by_kind["code"]
    finally:
        store.write = real_write
        engine.close()


def test_a_batch_whose_embedding_step_failed_is_embedded_later(small: Path):
    """A step that failed (any error) had taken its batch from the backlog
    window: those chunks stayed without a vector until the next pass, and
    status said "embedding" meanwhile."""
    engine = semantic_engine(small, embed_model=STATIC_MODEL_NAME)
    try:
        engine.index()
        assert engine.semantic.ensure_loaded()
        embedder = engine.semantic.embedder
        real_embed = embedder.embed
        failures: list[int] = []

        def fails_once(texts):
            if not failures:
                failures.append(len(texts))
                raise RuntimeError("a model run failed")
            return real_embed(texts)

        embedder.embed = fails_once
        engine.start_embedding()
        deadline = time.monotonic() + 30
        while (not failures or engine.semantic.pending()) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert failures and engine.semantic.pending() == 0
        assert_consistent(engine)
    finally:
        engine.close()
