"""BM25 from in-memory postings (index/postings.py): FTS5's bm25() bit for
bit, on the snapshot the reader sees, after edits of this process and of
another one, whatever was asked before."""

from __future__ import annotations

import random
import threading

import pytest

from ctxls.index import postings, ranking
from ctxls.index.engine import Engine, EngineOptions
from ctxls.index.ranking import RankingConfig, bm25_of_ids, bm25_scores
from ctxls.index.store import read_snapshot
from ctxls.index.tokenize import query_terms

from conftest import write_tree

WORDS = ("parse value token widget gadget return render request session cache query field "
         "model user name list item order build index").split()
QUERIES = ["parse the value", "widget gadget", "return value", "render request session",
           "cache query field model", "user_name list", "order item build", "index token parse widget",
           "value", "nothing_matches_this"]
CONFIG = RankingConfig()


def _tree(seed: int, files: int = 60) -> dict[str, str]:
    """Python files whose functions say random words, some repeated: equal
    scores (ties at a pool's cut) and common and rare terms."""
    rng = random.Random(seed)
    out = {}
    for i in range(files):
        funcs = []
        for j in range(rng.randint(1, 4)):
            words = rng.choices(WORDS, k=rng.randint(1, 12))
            name = "_".join(rng.sample(WORDS, 2))
            funcs.append(f"def {name}_{j}(x):\n    # {' '.join(words)}\n    return x\n")
        out[f"pkg/m{i}.py"] = "\n".join(funcs)
    # Identical files: rows that score the same.
    for i in range(5):
        out[f"same/s{i}.py"] = "def parse_value(x):\n    # parse the value\n    return x\n"
    return out


def _fts5(conn, terms, limit=None, ids=None):
    """FTS5's own answer (the postings set aside)."""
    saved, postings.bm25 = postings.bm25, lambda *args: None
    try:
        if ids is not None:
            return list(bm25_of_ids(conn, "fts_code", terms, CONFIG, ids).items())
        return list(bm25_scores(conn, "fts_code", terms, CONFIG, limit=limit).items())
    finally:
        postings.bm25 = saved


def _assert_same_as_fts5(conn) -> None:
    ids = [row[0] for row in conn.execute("SELECT id FROM chunks WHERE kind = 'code'")][::3] + [10 ** 6]
    for query in QUERIES:
        terms = query_terms(query)
        assert postings.bm25(conn, "fts_code", terms, [32.0, 4.0, 1.0]) is not None
        for limit in (None, 1, 5, 12):
            # Ordered items, exact floats: the same rows, scores and order.
            assert list(bm25_scores(conn, "fts_code", terms, CONFIG, limit=limit).items()) == \
                _fts5(conn, terms, limit), (query, limit)
        assert list(bm25_of_ids(conn, "fts_code", terms, CONFIG, ids).items()) == \
            _fts5(conn, terms, ids=ids), query


def _table_postings(engine) -> postings.TablePostings:
    conn = engine.store.reader()
    return postings._TABLES[(postings._database(conn), "fts_code")]


def test_scores_are_fts5s_bit_for_bit_and_ties_keep_the_lower_rowid(tmp_path):
    write_tree(tmp_path, _tree(1))
    engine = Engine(tmp_path, EngineOptions(embeddings=False))
    engine.index()
    engine.warm_postings()  # as a daemon does after its first pass
    conn = engine.store.reader()
    _assert_same_as_fts5(conn)
    # The identical files tie; a pool cut inside them keeps the lowest rowids.
    terms = query_terms("parse value")
    every = bm25_scores(conn, "fts_code", terms, CONFIG)
    best = max(every.values())
    tied = sorted(rid for rid, score in every.items() if score == best)
    assert len(tied) >= 5
    assert list(bm25_scores(conn, "fts_code", terms, CONFIG, limit=2)) == tied[:2]
    engine.close()


def test_edits_are_followed_row_by_row(tmp_path):
    # The postings loaded before an edit must not answer for the rows it
    # changed: a stale cache would keep a removed row, miss an added one or
    # score a changed one by its old words.
    files = _tree(2)
    write_tree(tmp_path, files)
    engine = Engine(tmp_path, EngineOptions(embeddings=False))
    engine.index()
    engine.warm_postings()  # as a daemon does after its first pass
    conn = engine.store.reader()
    _assert_same_as_fts5(conn)
    cache = _table_postings(engine)
    rng = random.Random(3)
    for round_ in range(4):
        for path in rng.sample(sorted(files), 6):
            words = " ".join(rng.choices(WORDS, k=8))
            (tmp_path / path).write_text(f"def edited_{round_}(x):\n    # {words} widget\n    return x\n")
        (tmp_path / sorted(files)[round_]).unlink()
        (tmp_path / f"pkg/new{round_}.py").write_text("def gadget_widget(x):\n    # gadget gadget\n")
        engine.index()
        engine.set_buffer("pkg/m40.py", f"def buffered_{round_}(x):\n    # parse parse widget\n")
        _assert_same_as_fts5(conn)
        assert _table_postings(engine) is cache and cache.dirty  # followed, not loaded anew
    engine.close()


def test_a_write_of_another_process_loads_the_table_anew(tmp_path):
    write_tree(tmp_path, _tree(4))
    db = tmp_path / "store.db"
    engine = Engine(tmp_path, EngineOptions(embeddings=False, db_path=str(db)))
    engine.index()
    engine.warm_postings()  # as a daemon does after its first pass
    conn = engine.store.reader()
    _assert_same_as_fts5(conn)
    before = _table_postings(engine).generation
    # Another engine on the same file: its commits leave no record this
    # process's store made.
    (tmp_path / "pkg/m1.py").write_text("def widget_gadget(x):\n    # widget gadget parse\n")
    other = Engine(tmp_path, EngineOptions(embeddings=False, db_path=str(db)))
    other.index()
    other.close()
    _assert_same_as_fts5(conn)
    assert _table_postings(engine).generation != before
    engine.close()


def test_a_reader_of_an_older_snapshot_asks_fts5(tmp_path):
    write_tree(tmp_path, _tree(5))
    engine = Engine(tmp_path, EngineOptions(embeddings=False))
    engine.index()
    engine.warm_postings()
    terms = query_terms("widget gadget")
    old: dict = {}
    snapshot_taken, edited = threading.Event(), threading.Event()

    def old_reader():
        with read_snapshot():
            conn = engine.store.reader()
            old["before"] = _fts5(conn, terms, 5)
            snapshot_taken.set()
            edited.wait()
            old["answer"] = list(bm25_scores(conn, "fts_code", terms, CONFIG, limit=5).items())
            old["postings"] = postings.bm25(conn, "fts_code", terms, [32.0, 4.0, 1.0])

    thread = threading.Thread(target=old_reader)
    thread.start()
    snapshot_taken.wait()
    (tmp_path / "pkg/m2.py").write_text("def widget_gadget(x):\n    # widget gadget gadget widget\n")
    engine.index()
    _assert_same_as_fts5(engine.store.reader())  # the postings are at the new generation
    edited.set()
    thread.join()
    assert old["answer"] == old["before"] and old["postings"] is None
    engine.close()


def test_answers_do_not_depend_on_what_was_asked_before(tmp_path, monkeypatch):
    # Postings a few entries large: every query evicts others' terms.
    monkeypatch.setattr(postings, "MAX_POSTINGS", 40)
    write_tree(tmp_path, _tree(6))
    engine = Engine(tmp_path, EngineOptions(embeddings=False))
    engine.index()
    engine.warm_postings()
    conn = engine.store.reader()
    first = {q: list(bm25_scores(conn, "fts_code", query_terms(q), CONFIG, limit=8).items())
             for q in QUERIES}
    for q in reversed(QUERIES):
        assert list(bm25_scores(conn, "fts_code", query_terms(q), CONFIG, limit=8).items()) == first[q]
        assert first[q] == _fts5(conn, query_terms(q), 8)
    assert _table_postings(engine).loaded_entries <= 40 + max(
        len(rows) for rows, _ in _table_postings(engine).loaded.values())
    engine.close()


@pytest.mark.parametrize("weights", [[32.5, 4.0, 1.0], [-1.0, 1.0, 1.0]])
def test_weights_not_reproduced_exactly_leave_it_to_fts5(tmp_path, weights):
    write_tree(tmp_path, _tree(7, files=5))
    engine = Engine(tmp_path, EngineOptions(embeddings=False))
    engine.index()
    assert postings.bm25(engine.store.reader(), "fts_code", query_terms("parse value"), weights) is None
    engine.close()


def test_before_the_warm_up_a_common_term_not_loaded_is_left_to_fts5(tmp_path):
    # A one-off process (a CLI recall without a daemon) ranks a common word
    # for less through FTS5 than loading its postings would cost; rare words
    # are loaded on first use.
    write_tree(tmp_path, {f"m{i}.py": f"def f{i}(x):\n    # common words here\n    return x\n"
                          for i in range(postings.WARM_MIN_ROWS + 10)}
               | {"r.py": "def rare_thing(x):\n    # rare\n    return x\n"})
    engine = Engine(tmp_path, EngineOptions(embeddings=False))
    engine.index()
    conn = engine.store.reader()
    weights = [32.0, 4.0, 1.0]
    assert postings.bm25(conn, "fts_code", query_terms("common words"), weights) is None
    rare = postings.bm25(conn, "fts_code", query_terms("rare thing"), weights)
    assert rare is not None and rare.all() == dict(_fts5(conn, query_terms("rare thing")))
    assert engine.warm_postings() > 0
    common = postings.bm25(conn, "fts_code", query_terms("common words"), weights)
    assert common is not None and list(common.top(5).items()) == _fts5(conn, query_terms("common words"), 5)
    engine.close()
