"""Ranking as plain functions: BM25 candidates and what each fusion promises."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from ctxls.index import postings, ranking
from ctxls.index.embeddings import STATIC_MODEL_NAME
from ctxls.index.engine import Engine, EngineOptions
from ctxls.index.ranking import (FUSIONS, RankingConfig, _id_runs, bm25_of_files, bm25_of_ids, bm25_scores,
                                 fused_scores, lexical_search)
from ctxls.index.tokenize import query_terms

from conftest import write_tree

LEXICAL = {1: 12.0, 2: 6.0}  # 3 and 4 match no query term
DENSE = {1: 0.30, 2: 0.55, 3: 0.60, 4: None}  # 4 has no vector yet


def test_linear_keeps_the_cosine_and_divides_bm25_by_its_best():
    fused = fused_scores(LEXICAL, DENSE, 0.5, fusion="linear")
    assert fused[1] == pytest.approx(0.5 * 0.30 + 0.5 * 1.0)
    assert fused[3] == pytest.approx(0.5 * 0.60)
    assert fused[4] == pytest.approx(0.5 * 0.55)  # the median cosine of the others


def test_min_max_scales_both_sides_over_the_candidates():
    fused = fused_scores(LEXICAL, DENSE, 0.5, fusion="min-max")
    assert fused[1] == pytest.approx(0.5 * 0.0 + 0.5 * 1.0)  # worst cosine, best BM25
    assert fused[3] == pytest.approx(0.5 * 1.0)  # best cosine, no term
    assert fused[2] == pytest.approx(0.5 * (0.25 / 0.30) + 0.5 * 0.5)
    assert all(0.0 <= score <= 1.0 for score in fused.values())


@pytest.mark.parametrize("fusion", FUSIONS)
def test_dense_only_is_the_cosine_and_skips_rows_without_a_vector(fusion):
    assert fused_scores(LEXICAL, DENSE, 0.5, dense_only=True, fusion=fusion) == {
        1: 0.30, 2: 0.55, 3: 0.60}


@pytest.mark.parametrize("fusion", FUSIONS)
def test_coverage_scales_the_lexical_share(fusion):
    full = fused_scores(LEXICAL, DENSE, 0.5, fusion=fusion)
    half = fused_scores(LEXICAL, DENSE, 0.5, coverage={1: 0.5, 2: 1.0}, fusion=fusion)
    assert half[1] < full[1] and half[2] == pytest.approx(full[2])


def test_bm25_of_ids_scores_rows_outside_the_top_exactly(tmp_path):
    write_tree(tmp_path, {f"m{i}.py": f"def f{i}():\n" + "    parse = 1\n" * (i + 1) for i in range(6)}
               | {"other.py": "def unrelated():\n    return 2\n"})
    engine = Engine(tmp_path, EngineOptions(embeddings=False))
    engine.index()
    conn, config = engine.store.reader(), RankingConfig()
    terms = query_terms("parse")  # the index's form of the word
    every = bm25_scores(conn, "fts_code", terms, config)
    ranked = sorted(every, key=lambda rid: -every[rid])
    unmatched = conn.execute("SELECT id FROM chunks WHERE symbol = 'unrelated'").fetchone()[0]
    top = bm25_scores(conn, "fts_code", terms, config, limit=2)
    top.update(bm25_of_ids(conn, "fts_code", terms, config, [ranked[-1], unmatched]))
    assert set(top) == {*ranked[:2], ranked[-1]}  # the unmatched row has no BM25 score
    assert all(top[rid] == pytest.approx(every[rid]) for rid in top)
    engine.close()


def test_a_files_own_scores_equal_the_whole_scan_after_edits_reused_its_rows(tmp_path):
    body = "".join(f"def parse_{i}(text):\n" + "    tokens = text.split()  # parse the words\n" * 12
                   + "    return tokens\n\n\n" for i in range(3))
    write_tree(tmp_path, {"a.py": body, "b.py": body.replace("parse_", "other_")})
    engine = Engine(tmp_path, EngineOptions(embeddings=False))
    engine.index()
    # An edit keeps a.py's unchanged rows and gives its new function ids after b.py's.
    (tmp_path / "a.py").write_text(body + "def parse_more(text):\n    return parse_0(text)\n")
    engine.index()
    conn, config = engine.store.reader(), RankingConfig()
    terms = query_terms("parse words")
    file_id = conn.execute("SELECT id FROM files WHERE path = 'a.py'").fetchone()[0]
    own = {row[0] for row in conn.execute("SELECT id FROM chunks WHERE file_id = ?", (file_id,))}
    every = bm25_scores(conn, "fts_code", terms, config)
    expected = {rid: score for rid, score in every.items() if rid in own}
    scored = bm25_of_files(conn, "code", terms, config, [file_id])
    assert expected and scored.keys() == expected.keys()
    assert all(scored[rid] == pytest.approx(expected[rid]) for rid in expected)
    engine.close()


def test_id_runs_split_where_other_rows_lie_between() -> None:
    assert _id_runs({5, 6, 7}) == [(5, 7)]
    assert _id_runs({1, 2, 900, 901}, gap=256) == [(1, 2), (900, 901)]


def test_import_boost_lifts_the_neighbours_of_top_files_both_ways(tmp_path):
    write_tree(tmp_path, {
        "app/main.py": "from app import store\n\n\ndef upload_upload_upload():\n    store.put()\n",
        "app/store.py": "def put_upload():\n    return 1\n",
        "app/consumer.py": "from app import main\n\n\ndef use_upload():\n    return 2\n",
        "lonely/put.py": "def put_upload():\n    return 1\n",
    })
    engine = Engine(tmp_path, EngineOptions(embeddings=False))
    engine.index()
    conn = engine.store.reader()
    plain = {h.path: h.score for h in lexical_search(conn, "code", "upload", 10,
                                                      RankingConfig(import_boost=0.0))}
    boosted = {h.path: h.score for h in lexical_search(conn, "code", "upload", 10,
                                                        RankingConfig(import_boost=0.5))}
    assert max(plain, key=plain.get) == "app/main.py"
    assert boosted["app/store.py"] > plain["app/store.py"]  # main imports it
    assert boosted["app/consumer.py"] > plain["app/consumer.py"]  # it imports main
    assert boosted["lonely/put.py"] == pytest.approx(plain["lonely/put.py"])
    engine.close()


def test_min_max_fusion_scores_a_lone_candidate_as_the_best() -> None:
    # One candidate is the best on both sides: 1, not 0 (a group of one hit,
    # such as a single matching config file, used to show 0.000).
    assert fused_scores({7: 5.0}, {7: 0.4}, 0.6, fusion="min-max") == {7: 1.0}
    # No BM25 match at all: that side adds nothing; equal cosines are each the best.
    assert fused_scores({}, {1: 0.4, 2: 0.4}, 0.6, fusion="min-max") == {1: 0.6, 2: 0.6}


def _restricted_scans(conn) -> list[str]:
    """Record the statements ranking only the rows holding a rarer term."""
    seen: list[str] = []
    conn.set_trace_callback(lambda sql: seen.append(sql) if "rowid + 0 IN (SELECT" in sql else None)
    return seen


def test_leaving_common_terms_out_of_the_scan_keeps_the_top_rows(tmp_path, monkeypatch):
    # Every chunk says "return value"; a few say "parse" or "widget" too.
    # FTS5's own scan, as readers of an older snapshot get it (the in-memory
    # postings set aside; tests/test_postings.py checks those).
    monkeypatch.setattr(ranking, "PRUNE_MIN_ROWS", 0)
    monkeypatch.setattr(postings, "bm25", lambda *args: None)
    files = {f"m{i}.py": f"def f{i}(x):\n    # return the value\n    return x\n" for i in range(40)}
    files |= {f"p{i}.py": f"def parse_{i}(text):\n    # parse and return the value\n"
              + "    value = text\n" * i + "    return value\n" for i in range(6)}
    files["w.py"] = "def widget(value):\n    # the widget value\n    return value\n"
    write_tree(tmp_path, files)
    engine = Engine(tmp_path, EngineOptions(embeddings=False))
    engine.index()
    conn, config = engine.store.reader(), RankingConfig()
    restricted = _restricted_scans(conn)
    for query in ("return the parsed value", "widget return value", "parse widget value return"):
        terms = query_terms(query)
        every = bm25_scores(conn, "fts_code", terms, config)
        for limit in (1, 3, 8):
            got = bm25_scores(conn, "fts_code", terms, config, limit=limit)
            best = sorted(every.values(), reverse=True)[:limit]
            assert sorted(got.values(), reverse=True) == pytest.approx(best)
            assert all(got[rid] == pytest.approx(every[rid]) for rid in got)
    assert restricted  # the common terms were left out of some scans
    engine.close()


def test_a_term_no_longer_common_after_an_edit_is_scanned_again(tmp_path, monkeypatch):
    # The term counts are cached per reader connection; an edit that makes
    # "widget" rare (and so worth a lot) must reach the next query, or the
    # one chunk holding it would be left out as holding a common term only.
    monkeypatch.setattr(ranking, "PRUNE_MIN_ROWS", 0)
    monkeypatch.setattr(postings, "bm25", lambda *args: None)  # FTS5's own scan
    write_tree(tmp_path, {f"m{i}.py": f"def f{i}():\n    # widget\n    return {i}\n" for i in range(30)}
               | {"g1.py": "def g1():\n    # widget gadget\n    return 1\n",
                  "g2.py": "def g2():\n    # widget gadget gadget\n    return 2\n"})
    engine = Engine(tmp_path, EngineOptions(embeddings=False))
    engine.index()
    conn, config = engine.store.reader(), RankingConfig()
    restricted = _restricted_scans(conn)
    terms = query_terms("widget gadget")
    assert bm25_scores(conn, "fts_code", terms, config, limit=1) and restricted
    for i in range(30):
        (tmp_path / f"m{i}.py").write_text(f"def f{i}():\n    return {i}\n")
    (tmp_path / "m0.py").write_text("def widget_widget():\n    return 0\n")
    (tmp_path / "g1.py").write_text("def g1():\n    # gadget\n    return 1\n")
    (tmp_path / "g2.py").write_text("def g2():\n    # gadget gadget\n    return 2\n")
    engine.index()
    every = bm25_scores(conn, "fts_code", terms, config)
    top = max(every, key=every.get)
    assert conn.execute("SELECT symbol FROM chunks WHERE id = ?", (top,)).fetchone()[0] == "widget_widget"
    assert set(bm25_scores(conn, "fts_code", terms, config, limit=1)) == {top}
    engine.close()


def test_a_table_that_stems_the_query_again_is_scanned_whole(monkeypatch):
    # Written memory's tables stem with porter: a query term's count in their
    # vocabulary need not be the count of the stem the MATCH looks for.
    monkeypatch.setattr(ranking, "PRUNE_MIN_ROWS", 0)
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE fts_memory_fact USING fts5(symbol, path, body, "
                 "tokenize = \"porter unicode61 tokenchars '_'\")")
    conn.executemany("INSERT INTO fts_memory_fact(symbol, path, body) VALUES ('', '', ?)",
                     [("plan the release",)] * 20 + [("agreed rollout plan",)] * 2)
    restricted = _restricted_scans(conn)
    terms = ["plan", "agre", "rollout"]
    every = bm25_scores(conn, "fts_memory_fact", terms, RankingConfig())
    top = bm25_scores(conn, "fts_memory_fact", terms, RankingConfig(), limit=2)
    assert set(top) == set(sorted(every, key=every.get, reverse=True)[:2])
    assert not restricted



# The ranking code itself (this package's index/, impact/ and daemon/): real
# files, a few thousand chunks, identifiers and sentences to ask about.
N_INDEPENDENCE_QUERIES = [
    "bm25_scores", "SemanticIndex", "fused_scores", "refresh_stale", "Store.write",
    "how are the hybrid candidates gathered from the ANN index",
    "re-index a file changed on disk", "wait for the first index before answering",
    "which files does a query name", "per-file saturation of the top hits",
    "embed the backlog in batches", "parse the import statements of a file",
]


@pytest.fixture(scope="module")
def own_code_engine(tmp_path_factory):
    package = Path(ranking.__file__).resolve().parents[1]
    root = tmp_path_factory.mktemp("own-code")
    write_tree(root, {str(path.relative_to(package)): path.read_text(encoding="utf-8")
                      for folder in ("index", "impact", "daemon")
                      for path in sorted((package / folder).rglob("*.py"))})
    engine = Engine(root, EngineOptions(embeddings=True, embed_model=STATIC_MODEL_NAME))
    engine.index()
    engine.embed_pending()
    assert engine.semantic.pending() == 0
    yield engine
    engine.close()


@pytest.mark.parametrize("mode", ["lexical", "hybrid"])
def test_the_top_ten_do_not_depend_on_how_many_hits_are_asked_for(own_code_engine, mode):
    def top(query: str, n: int) -> list[tuple]:
        result = own_code_engine.recall(query, ["code"], n, mode=mode)
        assert result.mode == mode
        return [(h.path, h.start_line, h.end_line, h.score, h.why) for h in result.hits_by_kind["code"]]

    longest = 0
    for query in N_INDEPENDENCE_QUERIES:
        ten, fifty, hundred = top(query, 10), top(query, 50), top(query, 100)
        assert len(ten) == 10 and len(fifty) > 10, query
        assert ten == fifty[:10] == hundred[:10], query
        # Past the fixed depth too: the deeper search no longer grows with n.
        assert fifty == hundred[:len(fifty)] == top(query, 200)[:len(fifty)], query
        # Past the fixed depth (n = 100) the list goes on below, never above,
        # and never lists a chunk twice.
        assert [h[3] for h in hundred] == sorted((h[3] for h in hundred), reverse=True), query
        assert len(set(h[:3] for h in hundred)) == len(hundred) >= len(fifty), query
        longest = max(longest, len(hundred))
    assert longest == 100


def test_a_kind_rare_in_the_repository_lists_as_many_hits_whatever_n(tmp_path):
    """The ANN's nearest vectors are of every kind: in a repository of code
    with two documents, a doc list asked with n=10 held 1 section and with
    n=31 three. A list shorter than n goes on with the deeper search."""
    files = {f"src/mod{i}.py": "".join(
        f"def upload_part_{i}_{j}(client, part, attempts=5):\n"
        f"    \"\"\"Upload the part to storage, retrying failed uploads.\"\"\"\n"
        "    delay = 1.0\n    last_error = None\n    for attempt in range(attempts):\n        try:\n"
        "            response = client.put(part)\n            if response.status == 200:\n"
        "                return response\n            last_error = RuntimeError(response.status)\n"
        "        except IOError as error:\n            last_error = error\n"
        "        log.warning('retrying %s after %s', part, last_error)\n        time.sleep(delay)\n"
        "        delay *= 2\n    raise UploadFailed(part) from last_error\n\n\n" for j in range(3))
        for i in range(40)}
    files["docs/uploads.md"] = ("# Uploads\n\n## Retrying failed uploads\n\nWhen an upload fails, the "
                                "client tries again with backoff, at most five attempts.\n\n"
                                "## Quotas\n\nEach tenant may store at most 10 GiB.\n")
    files["README.md"] = "# Demo\n\nA demo project. See the docs folder.\n"
    write_tree(tmp_path, files)
    engine = Engine(tmp_path, EngineOptions(embeddings=True, embed_model=STATIC_MODEL_NAME))
    try:
        engine.index()
        engine.embed_pending()
        assert engine.store.counts()["chunks"] > 100  # one per function: docs are rare
        query = "how many attempts before giving up on an upload"
        for mode in ("semantic", "hybrid"):
            def docs(n: int) -> list[tuple]:
                hits = engine.recall(query, ["doc"], n, mode=mode).hits_by_kind["doc"]
                return [(h.path, h.start_line, h.score) for h in hits]

            every = docs(50)
            assert len(every) >= 3, (mode, every)
            for n in (1, 2, 10, 31):
                assert docs(n) == every[:n], (mode, n)
    finally:
        engine.close()


def test_a_function_without_the_querys_words_never_takes_the_place_of_residue_that_has_them(tmp_path):
    """Module residue places its file and its best code chunk is shown
    there; in hybrid mode the ANN makes every chunk a candidate, so an
    unrelated function with no word of the query was listed first for a
    module constant, and the residue holding it last."""
    write_tree(tmp_path, {"settings.py": (
        '"""Deployment settings."""\nimport os\n\nUPLOAD_BUCKET = os.environ.get("UPLOAD_BUCKET", "prod")\n'
        "MAX_UPLOAD_RETRIES = 5\n\n\ndef database_url():\n    return os.environ['DATABASE_URL']\n\n\n"
        "def cache_ttl():\n    return 300\n")})
    engine = Engine(tmp_path, EngineOptions(embeddings=True, embed_model=STATIC_MODEL_NAME))
    try:
        engine.index()
        engine.embed_pending()
        for mode in ("lexical", "hybrid"):
            hits = engine.recall("MAX_UPLOAD_RETRIES", ["code"], 5, mode=mode).hits_by_kind["code"]
            assert (hits[0].path, hits[0].start_line) == ("settings.py", 0), (mode, hits)
    finally:
        engine.close()


def test_a_scripts_top_level_code_outranks_its_helpers_that_hold_only_common_words(tmp_path):
    """A shell script's loop (module residue) that dumps the databases came
    second to the file's `log`/`die` helpers, which share with the query only
    a word in most chunks: that word's idf is floored at 1e-6, not 0, so the
    helpers passed for a chunk with the query's words and took the loop's place."""
    common = {f"lib/reader_{i}.py": (f"def read_record_{i}(path):\n    if not path:\n"
                                     f"        raise ValueError('error reading record {i}')\n    return path\n")
              for i in range(8)}
    write_tree(tmp_path, {"backup.sh": (
        '#!/usr/bin/env bash\nset -euo pipefail\n\nlog() {\n  echo "$*" >&2\n}\n\n'
        'die() {\n  log "error: $*"\n  exit 1\n}\n\nBUCKET=${BUCKET:?set BUCKET}\n\n'
        "# Dump every Postgres database, compressed.\n"
        'for db in $(psql -Atc "select datname from pg_database"); do\n'
        '  pg_dump --format=custom "$db" | gzip > "/tmp/$db.dump.gz" || die "$db"\n'
        'done\nlog "backup finished"\n'), **common})
    engine = Engine(tmp_path, EngineOptions())
    try:
        engine.index()
        hits = engine.recall("dump every postgres database error", ["code"], 5, mode="lexical").hits_by_kind["code"]
        assert (hits[0].path, hits[0].start_line, hits[0].symbol) == ("backup.sh", 12, None), hits
    finally:
        engine.close()


# --- Query analysis: names and text of every script, Lisp and Ruby names ----------------------

def _filler(count: int = 6) -> dict[str, str]:
    """ASCII modules, so that BM25's IDF is not degenerate."""
    return {f"filler/mod_{i}.py": (f"def load_record_{i}(path, key_name):\n    \"\"\"Load record {i}.\"\"\"\n"
                                   f"    with open(path) as handle:\n        return handle.read().split('_')[{i}]\n")
            for i in range(count)}


def test_lexical_recall_finds_names_and_text_of_any_script(tmp_path):
    # Tokenized as [A-Za-z0-9_] only, every Cyrillic or Greek snake_case name
    # was `_` (each query found the same file) and Chinese text no token at all.
    from ctxls.index.scopes import EVERYTHING

    write_tree(tmp_path, {
        **_filler(),
        "src/users_ru.py": "def получить_пользователя(ид):\n    # Получает пользователя из базы данных\n"
                           "    return ид\n",
        "src/files_ru.py": "def удалить_файл(путь):\n    # Удаляет файл с диска\n    return путь\n",
        "src/sum_zh.py": "def 计算总和(数字):\n    # 计算列表的总和\n    return sum(数字)\n",
        "src/check_el.py": "def ελέγχω_κωδικό(κωδικός):\n    return κωδικός\n",
    })
    engine = Engine(tmp_path, EngineOptions(embeddings=False))
    try:
        engine.index()

        def top(query: str, kind: str = "code"):
            hits = engine.recall(query, [kind], mode="lexical").hits_by_kind[kind]
            return (hits[0].path, hits[0].symbol) if hits else None

        assert top("получить_пользователя") == ("src/users_ru.py", "получить_пользователя")
        assert top("удалить_файл") == ("src/files_ru.py", "удалить_файл")
        assert top("ελέγχω_κωδικό") == ("src/check_el.py", "ελέγχω_κωδικό")
        assert top("计算总和") == ("src/sum_zh.py", "计算总和")
        assert top("计算列表的总和")[0] == "src/sum_zh.py"  # the comment's words
        assert top("удаляет файл с диска")[0] == "src/files_ru.py"
        engine.memory.remember(EVERYTHING, "restarts", "Сервер базы данных перезапускается каждую ночь")
        engine.memory.remember(EVERYTHING, "restarts-zh", "数据库服务器每晚重启")
        assert top("перезапускается", "fact")[0] == "restarts"
        assert top("数据库服务器", "fact")[0] == "restarts-zh"
    finally:
        engine.close()


def test_a_lisp_or_ruby_name_asked_for_is_its_definitions_hit(tmp_path):
    # `format-user-name`, `valid?`, `save!` were no name to recall: the hit
    # stayed the whole chunk, its first definition's.
    write_tree(tmp_path, {
        **_filler(),
        "core.clj": "(ns app.core)\n\n(defn parse-user-id [s]\n  (Integer/parseInt s))\n\n"
                    "(defn format-user-name [u]\n  (str (:first u) \" \" (:last u)))\n",
        "model.rb": "class Account\n  def valid?\n    true\n  end\n\n  def save!\n    true\n  end\nend\n",
    })
    engine = Engine(tmp_path, EngineOptions(embeddings=False))
    try:
        engine.index()
        for query, expected in (("format-user-name", ("core.clj", "format-user-name", 5, 6)),
                                ("valid?", ("model.rb", "Account.valid?", 1, 3)),
                                ("save!", ("model.rb", "Account.save!", 5, 7)),
                                ("Account#valid?", ("model.rb", "Account.valid?", 1, 3))):
            hit = engine.recall(query, ["code"], mode="lexical").hits_by_kind["code"][0]
            assert (hit.path, hit.symbol, hit.start_line, hit.end_line) == expected, query
        # A hyphenated English word names no definition: the chunk stays whole.
        hit = engine.recall("user-id", ["code"], mode="lexical").hits_by_kind["code"][0]
        assert (hit.path, hit.start_line) == ("core.clj", 0)
    finally:
        engine.close()


def test_recall_for_a_class_is_the_class_with_its_members_not_its_header(tmp_path):
    # The header was packed with the short function before it, its members
    # into another chunk: recall answered a lone 1-line header.
    write_tree(tmp_path, {
        **_filler(),
        "svc.py": "def helper_one(x):\n    \"\"\"convert one\"\"\"\n    return x\n\n\n"
                  "class PaymentGateway:\n    def charge(self):\n        return 1\n\n\n"
                  "def refund_payment(data):\n    return data\n",
        "shop.ts": "export function helperOne(x: number): number {\n  // convert one\n  return x;\n}\n\n"
                   "export class CartService {\n  addItem(id: string): void {\n    console.log(id);\n  }\n}\n",
    })
    engine = Engine(tmp_path, EngineOptions(embeddings=False))
    try:
        engine.index()
        hit = engine.recall("PaymentGateway", ["code"], mode="lexical").hits_by_kind["code"][0]
        assert (hit.path, hit.symbol, hit.start_line, hit.end_line) == ("svc.py", "PaymentGateway", 5, 7)
        hit = engine.recall("CartService", ["code"], mode="lexical").hits_by_kind["code"][0]
        assert (hit.path, hit.symbol, hit.start_line) == ("shop.ts", "CartService", 5)
        assert hit.end_line >= 8  # addItem's lines with it
    finally:
        engine.close()


def test_an_exact_qualified_name_outranks_a_namesake_named_by_its_module(tmp_path):
    # Probe (stop 66): `Diff.diff` answered `diff` of lib/diff/diff.js first:
    # its folder named it `Diff.diff` (the module tier, 0.9) and its stem made
    # it at home (x home_share), over the method whose own name the query is.
    write_tree(tmp_path, {
        **_filler(),
        "lib/base/engine.js": "/** The diffing engine. */\nclass Diff {\n"
                              "  /** Compute the edit script between two strings. */\n"
                              "  diff(oldString, newString) {\n"
                              "    return this.extractCommon(oldString, newString);\n  }\n\n"
                              "  extractCommon(a, b) {\n    return [a, b];\n  }\n}\n"
                              "module.exports = Diff;\n",
        "lib/diff/diff.js": "// Returns which part of two version strings differs.\n"
                            "function diff(a, b) {\n  return a === b ? null : 'major';\n}\n"
                            "module.exports = diff;\n",
    })
    engine = Engine(tmp_path, EngineOptions(embeddings=False))
    try:
        engine.index()
        hits = engine.recall("Diff.diff", ["code"], mode="lexical").hits_by_kind["code"]
        assert (hits[0].path, hits[0].symbol, hits[0].start_line, hits[0].end_line) == (
            "lib/base/engine.js", "Diff.diff", 2, 5)
        assert ("lib/diff/diff.js", "diff") in [(hit.path, hit.symbol) for hit in hits[1:]]
        # Named by its module alone, the function is still the answer.
        hit = engine.recall("diff.diff", ["code"], mode="lexical").hits_by_kind["code"][0]
        assert (hit.path, hit.symbol) == ("lib/diff/diff.js", "diff")
    finally:
        engine.close()
