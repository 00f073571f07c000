"""The static code embedding model (issue 35): token vectors averaged, no transformer."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ctxls.index import embeddings
from ctxls.index.embeddings import CODE_MODEL_NAME, STATIC_MODEL_NAME, StaticEmbedder
from ctxls.index.engine import Engine, EngineOptions

from conftest import alter_model_file, write_tree
from test_semantic import PARAPHRASE_REPO, assert_consistent


@pytest.fixture(scope="module")
def static() -> StaticEmbedder:
    return embeddings.load_embedder(STATIC_MODEL_NAME)


def test_every_builtin_model_reads_the_tokenizer_shipped_in_the_package():
    for name in (STATIC_MODEL_NAME, CODE_MODEL_NAME):
        files = embeddings.builtin_model_files(name)
        assert files.tokenizer == embeddings.TOKENIZER_FILE
        assert files.tokenizer.parent == embeddings.MODELS_DIR == files.model.parent
        embeddings.check_file(files.tokenizer, files.tokenizer_sha256)
        embeddings.check_file(files.model, files.model_sha256)


def test_a_static_vector_is_the_normalised_mean_of_its_token_vectors(static: StaticEmbedder):
    table = np.load(embeddings.STATIC_MODEL_FILE).astype(np.float32)
    texts = ["parse a date string", "def compute_checksum(data):\n    return sha256(data)", "x"]
    vectors = static.embed(texts)
    assert vectors.shape == (3, static.dim) and vectors.dtype == np.float32
    for text, vector in zip(texts, vectors):
        ids = static._tokenizer.encode(text, add_special_tokens=False).ids
        mean = table[ids].mean(axis=0)
        assert np.allclose(vector, mean / np.linalg.norm(mean), atol=1e-5)
        # One text alone or in a batch of others of other lengths: the same vector.
        assert np.allclose(static.embed([text])[0], vector, atol=1e-6)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert np.allclose(static.embed_query(texts[0]), vectors[0])


def test_a_text_without_tokens_embeds_as_zeros_among_others(static: StaticEmbedder):
    vectors = static.embed(["", "send an email", "   "])
    assert not vectors[0].any() and not vectors[2].any()
    assert np.allclose(vectors[1], static.embed(["send an email"])[0], atol=1e-6)
    assert static.embed([]).shape == (0, static.dim)


def test_the_static_model_finds_paraphrases_and_replaces_another_models_vectors(tmp_path: Path):
    root = tmp_path / "small"
    write_tree(root, PARAPHRASE_REPO)
    code = Engine(root, EngineOptions(embeddings=True, embed_model=CODE_MODEL_NAME))
    code.index()
    assert code.embed_pending() == 5
    code.close()
    engine = Engine(root, EngineOptions(embeddings=True, embed_model=STATIC_MODEL_NAME))  # same store
    assert engine.semantic.ensure_loaded()
    assert engine.store.meta()["vector_model"].startswith(STATIC_MODEL_NAME + "/")
    assert engine.status()["vectors"] == 0 and engine.embed_pending() == 5
    assert_consistent(engine)
    expected = {
        "checksum of a blob": "compute_checksum",
        "retry the upload when it fails": "retry_upload",
        "parse a date": "parse_date",
        "send mail": "send_email",
    }
    for query, symbol in expected.items():
        hits = engine.recall(query, ["code"], 3, mode="semantic").hits_by_kind["code"]
        assert hits[0].symbol == symbol, query
    engine.close()


def test_an_altered_static_model_file_is_refused(tmp_path: Path, monkeypatch):
    alter_model_file(monkeypatch, tmp_path, "STATIC_MODEL_FILE")
    with pytest.raises(embeddings.EmbedderUnavailable, match="sha256"):
        embeddings.load_embedder(STATIC_MODEL_NAME)


def test_a_static_backlog_step_embeds_a_large_batch(tmp_path: Path):
    # A transformer embeds 8 texts a step; the static model 256, or the
    # per-step SQLite and ANN work would bound its pace.
    root = tmp_path / "many"
    write_tree(root, {f"pkg/mod{i}.py": f"def handler_{i}(event):\n    return event + {i}\n"
                      for i in range(40)})
    engine = Engine(root, EngineOptions(embeddings=True, embed_model=STATIC_MODEL_NAME))
    engine.index()
    assert engine.semantic.ensure_loaded()
    chunks = engine.status()["chunks"]
    assert chunks > 8
    assert engine.semantic.step()
    assert engine.semantic.embedded_total == min(chunks, embeddings.STATIC_BATCH_SIZE)
    engine.embed_pending()
    assert_consistent(engine)
    engine.close()
