"""Recall's features and scorer (index/recall_features.py, index/recall_scorer.py)
through the library's recall: each prior
is shown to change a ranking it is meant to change, and to step aside when the
query asks for what it demotes."""

from __future__ import annotations

import sqlite3
from dataclasses import replace
from pathlib import Path

import pytest

from ctxls.index.engine import Engine, EngineOptions
from ctxls.index.paths import is_test_path
from ctxls.index.query import query_shape
from ctxls.index.ranking import RankingConfig, ScoredChunk, file_bm25, lexical_search, rank_candidates
from ctxls.index.recall_features import PathWordIndex, definition_tier, named_files, path_index
from ctxls.index.recall_scorer import NO_PRIORS, PriorConfig
from ctxls.index.tokenize import query_terms

from conftest import scored_chunk

SESSION = '''
class Session:
    """Keeps cookies and a connection pool across requests."""

    def __init__(self):
        self.cookies = {}
        self.adapters = {}

    def send(self, request):
        adapter = self.adapters.get(request.url)
        return adapter.send(request)
'''

SESSION_TEST = '''
from pkg.session import Session


def test_session_keeps_cookies():
    session = Session()
    session.cookies["a"] = "b"
    assert Session().cookies == {}
    assert session.cookies["a"] == "b"


def test_session_sends_through_its_adapter():
    session = Session()
    assert isinstance(session, Session)
'''

# Each helper longer than SHORT_CHARS (index/chunking/packing.py), so each is a chunk of its own.
HELPERS = "\n\n".join(
    f"def cookiejar_helper_{i}(session):\n    cookiejar = session.cookiejar\n    cookiejar['k{i}'] = 'v'\n"
    + "".join(f"    record_{j}_of_helper_{i} = len(cookiejar) + {j}  # keep a count for the audit log\n"
              for j in range(6))
    + "    return cookiejar\n" for i in range(8))


def indexed(root: Path, files: dict[str, str]):
    """An engine over ``files`` written under ``root``, indexed; closed after."""
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text.lstrip("\n"))
    engine = Engine(root, EngineOptions(db_path=str(Path(root) / "db" / "index.db")))
    engine.cold_index()
    yield engine
    engine.close()


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory):
    yield from indexed(tmp_path_factory.mktemp("repo"), {
        "pkg/session.py": SESSION,
        "pkg/helpers.py": HELPERS,
        "tests/test_session.py": SESSION_TEST,
        "pkg/cookies.py": "def merge_cookies(jar, cookies):\n    jar.update(cookies)\n    return jar\n",
    })


def paths(engine: Engine, query: str, config: RankingConfig | None = None, n: int = 5) -> list[str]:
    """Recall's lexical ranking (the library function recall calls), with ``config``."""
    hits = lexical_search(engine.store.reader(), "code", query, n, config or RankingConfig())
    return [f"{h.path}:{h.symbol}" for h in hits]


def test_a_symbol_query_puts_the_current_definition_first(engine: Engine) -> None:
    assert paths(engine, "Session")[0] == "pkg/session.py:Session"


def test_a_name_asked_with_its_declaring_keyword_ranks_as_the_bare_name(engine: Engine) -> None:
    # "class" is in no chunk here, "def" in every function: as query terms
    # they would rank by whatever says "class" or "def" most.
    assert paths(engine, "class Session") == paths(engine, "Session")
    assert paths(engine, "class Session")[0] == "pkg/session.py:Session"
    assert paths(engine, "def merge_cookies")[0] == "pkg/cookies.py:merge_cookies"


def test_tests_rank_below_the_source(engine: Engine) -> None:
    ranked = paths(engine, "session cookies connection pool")
    assert all(not p.startswith("tests/") for p in ranked[:2])
    flat = paths(engine, "session cookies connection pool",
                 RankingConfig(priors=replace(RankingConfig().priors, test_penalty=1.0)))
    assert any(p.startswith("tests/") for p in flat[:2])


def test_a_query_that_asks_for_tests_lifts_the_test_penalty(engine: Engine) -> None:
    assert paths(engine, "test session keeps cookies")[0].startswith("tests/test_session.py")


BACKOFF_RS = """use std::time::Duration;

/// Policy for spacing out retries of a failed upload.
pub struct Backoff {
    base: Duration,
    cap: Duration,
}

impl Backoff {
    /// Delay before the given attempt: doubles each time, never above the cap.
    pub fn delay(&self, attempt: u32) -> Duration {
        let factor = 2u32.saturating_pow(attempt);
        std::cmp::min(self.base * factor, self.cap)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delay_doubles_each_attempt_until_cap() {
        let b = Backoff { base: Duration::from_millis(100), cap: Duration::from_secs(10) };
        assert_eq!(b.delay(0), Duration::from_millis(100));
        assert_eq!(b.delay(1), Duration::from_millis(200));
        assert_eq!(b.delay(2), Duration::from_millis(400));
    }

    #[test]
    fn delay_never_exceeds_cap() {
        let b = Backoff { base: Duration::from_millis(100), cap: Duration::from_secs(1) };
        assert_eq!(b.delay(20), Duration::from_secs(1));
    }
}
"""


def test_rusts_inline_test_module_ranks_as_tests_below_the_code_it_tests(tmp_path: Path) -> None:
    """`#[cfg(test)] mod tests` in src/backoff.rs is test code although its
    path is not a test path: it takes the test penalty (unless the query
    asks for tests), and the implementation it tests comes first."""
    from ctxls.index.test_scopes import inline_test_scopes

    files = {"src/backoff.rs": BACKOFF_RS, "src/lib.rs": "pub mod backoff;\n"}
    files |= {f"src/w{i}.rs": f"/// Module {i} parses widget number {i}.\npub fn widget_{i}(s: &str) -> usize {{\n"
              f"    s.len() + {i}\n}}\n" for i in range(15)}
    root = tmp_path / "crate"
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    engine = Engine(root, EngineOptions())
    try:
        engine.index()
        # The module (its attribute row included) and each #[test] function.
        assert inline_test_scopes(engine.store.reader(), "src/backoff.rs") == [(16, 33), (20, 26), (28, 32)]
        hits = engine.recall("delay before the next attempt doubles up to the cap", ["code"],
                             mode="lexical").hits_by_kind["code"]
        assert hits[0].path == "src/backoff.rs" and hits[0].end_line < 16
        assert "Backoff.delay" in [d.symbol for d in hits[0].definitions or []]
        in_tests = next(h for h in hits if h.start_line >= 16)
        assert "test" in [c.feature for c in in_tests.why]
        assert "test" not in [c.feature for c in hits[0].why]
        # Asking for the tests lifts the penalty, as for a test path.
        hits = engine.recall("test that delay doubles each attempt until cap", ["code"],
                             mode="lexical").hits_by_kind["code"]
        assert hits[0].start_line >= 16 and "test" not in [c.feature for c in hits[0].why]
    finally:
        engine.close()



def test_zig_test_blocks_and_d_unittests_are_definitions_and_test_scopes(tmp_path: Path) -> None:
    """Zig's `test "…" { … }` and D's `unittest { … }` blocks were in no
    symbol table (no outline row) and so never test code for recall: a test
    block ranked as the production code around it."""
    from ctxls.index.test_scopes import inline_test_scopes

    zig = ("const std = @import(\"std\");\n\npub fn addPorts(a: u16, b: u16) u16 {\n    return a + b;\n}\n\n"
           "test \"adds two ports\" {\n    try std.testing.expect(addPorts(1, 2) == 3);\n}\n\n"
           "test addPorts {\n    _ = addPorts(0, 0);\n}\n\nconst test_value = 3;\n")
    d = "module ports;\n\nint addPorts(int a, int b) { return a + b; }\n\nunittest {\n    assert(addPorts(1, 2) == 3);\n}\n"
    root = tmp_path / "repo"
    root.mkdir()
    (root / "ports.zig").write_text(zig)
    (root / "ports.d").write_text(d)
    engine = Engine(root, EngineOptions())
    try:
        engine.index()
        conn = engine.store.reader()
        names = {path: [row[0] for row in conn.execute(
            "SELECT s.symbol FROM symbols s JOIN files f ON f.id = s.file_id WHERE f.path = ? "
            "ORDER BY s.start_line", (path,))] for path in ("ports.zig", "ports.d")}
        # A doctest is "test addPorts", never a second definition of addPorts.
        assert names == {"ports.zig": ["addPorts", "adds two ports", "test addPorts"],
                         "ports.d": ["addPorts", "unittest"]}
        assert inline_test_scopes(conn, "ports.zig") == [(6, 8), (10, 12)]
        assert inline_test_scopes(conn, "ports.d") == [(4, 6)]
    finally:
        engine.close()

SAMPLE = '''
from pkg.session import Session


def run_sample():
    """A sample: one session, its cookies, its connection pool, sent twice."""
    session = Session()
    session.cookies["sample"] = "cookies"
    session.send(session)
    session.send(session)
    return session.cookies, session.adapters
'''


@pytest.fixture(scope="module")
def with_samples(tmp_path_factory: pytest.TempPathFactory):
    yield from indexed(tmp_path_factory.mktemp("samples"),
                       {"pkg/session.py": SESSION, "samples/Pkg.Samples/run_sample.py": SAMPLE})


def test_samples_rank_below_the_source_unless_asked_for(with_samples: Engine) -> None:
    query = "send the session twice and read its cookies"
    assert paths(with_samples, query)[0].startswith("pkg/session.py")
    flat = paths(with_samples, query, RankingConfig(priors=replace(RankingConfig().priors, example_penalty=1.0)))
    assert flat[0].startswith("samples/")
    assert paths(with_samples, "a sample that sends the session twice and reads its cookies")[0].startswith("samples/")


def test_per_file_saturation_lets_another_file_in(engine: Engine) -> None:
    # helpers.py has eight near-identical cookie functions; saturation keeps
    # the list from being all of them.
    ranked = paths(engine, "cookiejar session", n=5)
    assert len({p.split(":")[0] for p in ranked}) >= 2
    flat = paths(engine, "cookiejar session", RankingConfig(priors=NO_PRIORS), n=5)
    assert {p.split(":")[0] for p in flat} == {"pkg/helpers.py"}


def _bare_store() -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:")  # a store whose files table names none of them
    conn.execute("CREATE TABLE files (id INTEGER PRIMARY KEY, path TEXT, generated INTEGER NOT NULL DEFAULT 0)")
    conn.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    return conn


def rerank(query: str, hits: list[ScoredChunk], n: int, config: PriorConfig,
           file_scores=None) -> list[ScoredChunk]:
    """The lexical ranking's scorer and selection over ``hits`` (their BM25 set)."""
    return rank_candidates(_bare_store(), "code", query_shape(query), hits, n,
                           RankingConfig(priors=config), 0.0, lambda ids: [], file_scores)


def _top_paths(hits: list[ScoredChunk], config: PriorConfig, n: int = 3) -> list[str]:
    ranked = rerank("retry the upload after a pause", hits, n, config)
    return [h.path for h in ranked]


def test_a_file_with_several_matching_chunks_outranks_one_lucky_chunk() -> None:
    # uploads.py matches in three places, misc.py in one slightly better one.
    def hits() -> list[ScoredChunk]:
        return [scored_chunk(1, "pkg/misc.py", 10.0), scored_chunk(2, "pkg/uploads.py", 8.0),
                scored_chunk(3, "pkg/uploads.py", 7.5), scored_chunk(4, "pkg/uploads.py", 7.0)]
    assert _top_paths(hits(), replace(PriorConfig(), coherence_boost=0.0))[0] == "pkg/misc.py"
    assert _top_paths(hits(), PriorConfig())[0] == "pkg/uploads.py"


def test_saturation_gives_the_next_slot_to_another_file() -> None:
    def hits() -> list[ScoredChunk]:
        return [scored_chunk(i, "pkg/a.py", 10.0 - i / 10) for i in range(1, 5)] + [scored_chunk(9, "pkg/b.py", 7.0)]
    config = replace(PriorConfig(), coherence_boost=0.0, definition_boost=0.0)
    # The second hit of a.py is worth half its score, below b.py's.
    assert _top_paths(hits(), config, n=4) == ["pkg/a.py", "pkg/b.py", "pkg/a.py", "pkg/a.py"]
    assert _top_paths(hits(), replace(config, saturation_decay=1.0), n=4) == ["pkg/a.py"] * 4


def test_a_module_header_places_its_file_but_the_files_code_is_shown_first() -> None:
    # realip.go's package comment matches best; its function a little less,
    # proxy.go's function in between.
    def hits() -> list[ScoredChunk]:
        return [replace(scored_chunk(1, "mw/realip.go", 10.0), symbol_kind="module"),
                scored_chunk(2, "mw/realip.go", 6.0), scored_chunk(3, "mw/proxy.go", 8.0),
                replace(scored_chunk(4, "mw/strip.go", 7.0), symbol_kind="module")]
    config = replace(PriorConfig(), coherence_boost=0.0, definition_boost=0.0, file_name_boost=0.0)

    def ranked(config: PriorConfig) -> list[tuple[str, int]]:
        return [(h.path, h.chunk_id) for h in rerank("real client address", hits(), 4, config)]
    # The file keeps the header's place, shown by its code; a header alone in
    # its file stays; the header itself comes after the file's code.
    assert ranked(config) == [("mw/realip.go", 2), ("mw/proxy.go", 3), ("mw/strip.go", 4),
                              ("mw/realip.go", 1)]
    assert ranked(replace(config, module_after_code=False))[:2] == [("mw/realip.go", 1), ("mw/proxy.go", 3)]


def test_a_long_definition_is_listed_once_by_its_best_window() -> None:
    # Curl_cookie_add's 150-line windows (they overlap by 20 lines) took five
    # of curl's top ten for a cookie question.
    windows = [replace(scored_chunk(i, "lib/cookie.c", 10.0 - i), start_line=130 * i, end_line=130 * i + 149)
               for i in range(1, 4)]
    ranked = rerank("Curl_cookie_add", windows + [scored_chunk(9, "lib/cookie.h", 1.0)], 3,
                    replace(PriorConfig(), definition_boost=0.0, coherence_boost=0.0))
    assert [(h.path, h.start_line) for h in ranked] == [("lib/cookie.c", 130), ("lib/cookie.h", 90)]


def test_a_file_whose_whole_text_keeps_to_the_question_outranks_one_lucky_chunk() -> None:
    # One chunk each; uploads.py's whole text matches the question better.
    text_scores = {"pkg/misc.py": 1.0, "pkg/uploads.py": 4.0, "tests/test_uploads.py": 8.0}
    config = replace(PriorConfig(), coherence_boost=0.0, definition_boost=0.0)

    def ranked(query: str, config: PriorConfig) -> list[str]:
        hits = [scored_chunk(1, "pkg/misc.py", 10.0), scored_chunk(2, "pkg/uploads.py", 9.0),
                scored_chunk(3, "tests/test_uploads.py", 9.5)]
        return [h.path for h in rerank(query, hits, 3, config, lambda paths: {p: text_scores[p] for p in paths})]
    assert ranked("retry the upload after a pause", replace(config, file_text_boost=0.0))[0] == "pkg/misc.py"
    # The test file's text matches best, but its boost takes its path prior too.
    assert ranked("retry the upload after a pause", config)[:2] == ["pkg/uploads.py", "pkg/misc.py"]
    # A symbol or a one-word query asks for a name, not a file about it.
    assert ranked("UploadRetry", config)[0] == "pkg/misc.py"


def test_file_bm25_counts_a_files_chunks_holding_each_word_against_its_length(tmp_path: Path) -> None:
    def function(name: str, comment: str) -> str:
        return f"def {name}(request):\n    # {comment}\n" + "".join(
            f"    step_{i} = request.prepare({i})  # one more step of the request's preparation\n"
            for i in range(8)) + "    return request\n\n\n"
    files = {
        "pkg/retry.py": "".join(function(f"retry_{i}", "retry the upload") for i in range(3)),
        "pkg/once.py": function("send", "retry the upload") + function("close", "nothing to see"),
        "pkg/big.py": function("send", "retry the upload") + "".join(
            function(f"other_{i}", "nothing to see") for i in range(12)),
        "pkg/none.py": function("send", "nothing to see"),
    }
    for path, text in files.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text)
    engine = Engine(tmp_path, EngineOptions(db_path=str(tmp_path / "db" / "index.db"), embeddings=False))
    engine.index()
    scores = file_bm25(engine.store.reader(), "code", query_terms("retry upload"), set(files))
    # Three chunks about it beat one; one in two chunks beats one in thirteen.
    assert scores["pkg/retry.py"] > scores["pkg/once.py"] > scores["pkg/big.py"] > 0
    assert scores.get("pkg/none.py", 0.0) == 0.0
    assert file_bm25(engine.store.reader(), "memory", ["retry"], set(files)) == {}
    engine.close()


def test_a_file_the_query_names_joins_the_candidates(engine: Engine) -> None:
    # A two-chunk BM25 pool misses helpers.py; the query names it ("helpers"),
    # so its chunks join the candidates and its name lifts them.
    narrow = RankingConfig(candidate_pool=2, import_boost=0.0)
    unnamed = replace(narrow, priors=replace(narrow.priors, named_files=0))
    assert "pkg/helpers.py" in {p.split(":")[0] for p in paths(engine, "cookie jar helpers", narrow, n=2)}
    assert "pkg/helpers.py" not in {
        p.split(":")[0] for p in paths(engine, "cookie jar helpers", unnamed, n=2)}


QUERY_FOR_HELPERS = "retry upload helpers"


def _repo_naming_no_helpers(tmp_path: Path, *more: str) -> tuple[Engine, sqlite3.Connection]:
    """An indexed repo with pkg/client.py and ``more`` files, whose paths name
    none of QUERY_FOR_HELPERS's words, and a reader on it."""
    (tmp_path / "pkg").mkdir()
    for name in ("client.py", *more):
        (tmp_path / "pkg" / name).write_text("def send(request):\n    return request\n")
    engine = Engine(tmp_path, EngineOptions(db_path=str(tmp_path / "db" / "index.db")))
    engine.cold_index()
    conn = engine.store.reader()
    assert named_files(conn, query_shape(QUERY_FOR_HELPERS), PriorConfig()) == []
    return engine, conn


def test_the_files_a_query_names_follow_the_index(tmp_path: Path) -> None:
    # The path words are cached per reader connection; a file indexed after
    # the first query must be named by the next one.
    engine, conn = _repo_naming_no_helpers(tmp_path)
    query = QUERY_FOR_HELPERS
    try:
        (tmp_path / "pkg/upload_helpers.py").write_text("def backoff(attempt):\n    return 2 ** attempt\n")
        engine.index()
        file_id = conn.execute("SELECT id FROM files WHERE path = 'pkg/upload_helpers.py'").fetchone()[0]
        assert named_files(conn, query_shape(query), PriorConfig()) == [file_id]
    finally:
        engine.close()


def test_the_path_words_follow_a_file_given_a_deleted_files_id_and_outlive_other_writes(tmp_path: Path) -> None:
    # Cached per reader connection until a file row comes or goes: a file
    # added after the newest was deleted gets its row id.
    engine, conn = _repo_naming_no_helpers(tmp_path, "zz_old.py")
    query = QUERY_FOR_HELPERS
    try:
        words = path_index(conn)
        # A buffer edit commits, but every path stays: the same index serves.
        assert engine.set_buffer("pkg/client.py", "def send(request):\n    return None\n")
        assert path_index(conn) is words
        old_id = conn.execute("SELECT id FROM files WHERE path = 'pkg/zz_old.py'").fetchone()[0]
        (tmp_path / "pkg/zz_old.py").unlink()
        engine.index()
        (tmp_path / "pkg/upload_helpers.py").write_text("def backoff(attempt):\n    return 1\n")
        engine.index()
        file_id = conn.execute("SELECT id FROM files WHERE path = 'pkg/upload_helpers.py'").fetchone()[0]
        assert file_id == old_id  # as many files as before, the same highest id
        assert named_files(conn, query_shape(query), PriorConfig()) == [file_id]
    finally:
        engine.close()


def test_a_camel_case_query_word_names_a_file_through_its_parts() -> None:
    words = query_shape("toString builder for readable descriptions").words
    index = PathWordIndex([(1, "src/ToStringBuilder.java")])
    assert index.name_counts(words) == {1: 2}
    assert index.name_counts(frozenset({"tostring"})) == {}


def test_a_definition_the_text_match_missed_is_found_through_the_symbol_table(engine: Engine) -> None:
    # "merge_cookies" is one FTS token set; the symbol table finds its definition
    # even when only the name is asked, and puts it first.
    assert paths(engine, "merge_cookies")[0] == "pkg/cookies.py:merge_cookies"


def test_a_name_many_files_define_weighs_little_inside_a_sentence(tmp_path: Path) -> None:
    # commons-lang: "toString builder for human-readable object descriptions"
    # named twenty `toString` methods, each boosted above ToStringBuilder.
    for name in ("Range", "CharSet", "Fraction", "Pair", "Triple", "MutableInt"):
        (tmp_path / f"{name}.java").write_text(
            f"public final class {name} {{\n"
            f"    /** The string form of this {name.lower()}, for logs and messages. */\n"
            f"    @Override\n    public String toString() {{\n"
            f"        return \"{name}[\" + describe() + \"]\";\n    }}\n}}\n")
    (tmp_path / "ToStringBuilder.java").write_text(
        "/** Assists in building readable descriptions of objects, field by field. */\n"
        "public class ToStringBuilder {\n"
        "    private final StringBuffer buffer = new StringBuffer();\n"
        + "".join(f"    public ToStringBuilder append(String fieldName, {t} value) {{\n"
                  f"        style.append(buffer, fieldName, value);\n        return this;\n    }}\n"
                  for t in ("int", "long", "Object", "boolean", "char", "double", "float", "short"))
        + "}\n")
    engine = Engine(tmp_path, EngineOptions(embeddings=False))
    engine.index()
    hits = lexical_search(engine.store.reader(), "code",
                          "toString builder for human-readable object descriptions", 3, RankingConfig())
    assert hits[0].path == "ToStringBuilder.java"
    engine.close()


def test_localized_message_tables_rank_below_the_code_unless_asked_for(tmp_path: Path) -> None:
    files = {"src/errors.ts": "export function formatIssue(issue: Issue): string {\n"
                              "  return `Invalid input: expected ${issue.expected}`;\n}\n"}
    for lang in ("en", "de", "fr", "es", "it", "pt", "ru", "ja"):
        files[f"src/locales/{lang}.ts"] = (
            "const error = (issue) => {\n  switch (issue.code) {\n"
            "    case 'invalid_type': return `Invalid input: expected ${issue.expected}`;\n"
            "    case 'too_big': return `Invalid input: too big, expected ${issue.maximum}`;\n  }\n};\n")
    for path, text in files.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text)
    engine = Engine(tmp_path, EngineOptions(embeddings=False))
    engine.index()
    reader = engine.store.reader()
    assert lexical_search(reader, "code", "invalid input expected message", 1, RankingConfig())[0].path \
        == "src/errors.ts"
    assert lexical_search(reader, "code", "invalid input expected message", 1,
                          RankingConfig(priors=NO_PRIORS))[0].path.startswith("src/locales/")
    assert lexical_search(reader, "code", "invalid input expected translation", 1,
                          RankingConfig())[0].path.startswith("src/locales/")
    engine.close()


def test_a_go_package_named_doc_is_code_while_a_docs_tree_is_an_example() -> None:
    # A Go folder is a package: doc/ is library code (as the standard
    # library's go/doc is); docs/ of Python snippets is a documentation tree,
    # which impact reads as peripheral (recall's example penalty was retired:
    # turned off, it lost nothing on any set; issue 36).
    from ctxls.impact.risk import is_peripheral_path
    from ctxls.index.paths import path_class

    assert not path_class("doc/synopsis.go").example and not is_peripheral_path("doc/synopsis.go")
    assert path_class("docs/synopsis.py").example and is_peripheral_path("docs/synopsis.py")


def test_an_implementation_ranks_above_its_overload_signatures(tmp_path: Path) -> None:
    overloads = "".join(
        f"/** Emits the first value{' matching a predicate' * i}, or a default value. */\n"
        f"export function first<T>(predicate{i}?: (value: T) => boolean, defaultValue?: T): "
        f"OperatorFunction<T, T>;\n\n" for i in range(3))
    implementation = ("export function first<T>(predicate?: (value: T) => boolean, defaultValue?: T) {\n"
                      + "".join(f"  const step{i} = take(1);\n" for i in range(40))
                      + "  return pipe(step0);\n}\n")
    (tmp_path / "first.ts").write_text(overloads + "\n" * 40 + implementation)
    for i in range(12):  # files without the name, so that it has a document frequency to speak of
        (tmp_path / f"other{i}.ts").write_text(f"export function other{i}() {{\n  return {i};\n}}\n")
    engine = Engine(tmp_path, EngineOptions(embeddings=False))
    engine.index()
    hits = lexical_search(engine.store.reader(), "code", "first", 3, RankingConfig())
    assert hits[0].end_line - hits[0].start_line > 30  # the body, not a signature
    engine.close()


def test_a_constructor_answers_a_class_name_less_than_the_class_or_a_method() -> None:
    # commons-lang's `Validate()` constructor outranked `class Validate` for "Validate".
    cls = definition_tier("Validate", "class", "Validate")
    function = definition_tier("validate", "function", "Validate")  # another case: 0.6
    constructor = definition_tier("Validate.Validate", "method", "Validate")
    assert cls == 1.0 and constructor < 0.5 * cls and constructor < function


def test_query_shapes() -> None:
    assert query_shape("HTTPAdapter").symbol == "HTTPAdapter"
    assert query_shape("Session.request").symbol == "Session.request"
    assert query_shape("fmt::format").symbol == "fmt::format"
    assert query_shape("how does safeParse report errors").embedded == ("safeParse",)
    assert query_shape("where do we retry uploads").symbol is None
    assert query_shape("spawn").word == "spawn" and query_shape("spawn").symbol is None
    assert query_shape("the test for retry_upload").wants_tests
    assert not query_shape("retry uploads").wants_tests


@pytest.mark.parametrize(("path", "expected"), [
    ("tests/test_api.py", True), ("pkg/api_test.go", True), ("src/Api.test.ts", True),
    ("src/test/java/FooTest.java", True), ("bench/bench.go", True), ("pkg/api.py", False),
    ("src/contest.py", False), ("src/benchmark_utils/x.py", False),
    # Test projects and source sets named as their ecosystems name them.
    ("src/UnitTests/MappingOrder.cs", True), ("src/AutoMapper.DI.Tests/Foo.cs", True),
    ("Tests/PILTests/helper.py", True), ("core/src/jvmTest/kotlin/A.kt", True),
    ("app/src/androidTest/java/a/B.java", True), ("certbot_integration_tests/x.py", True),
    ("packages/dts-test/index.ts", True),
    ("src/pytest/hooks.py", False), ("net/httptest/server.go", False),
    ("docs/latest/api.py", False), ("lib/Latest/Feed.cs", False), ("attestation/a.go", False),
])
def test_test_paths(path: str, expected: bool) -> None:
    assert is_test_path(path) is expected


def test_a_type_named_in_a_sentence_lends_its_boost_to_its_members(tmp_path: Path) -> None:
    # tokio: "Returns whether the JoinSet is empty." ranked the JoinSet struct
    # above its `is_empty` method, the one place the sentence describes.
    def method(name: str, words: str) -> str:
        body = "".join(f"        step_{i} = self._tasks.get({i!r}, {words!r})\n" for i in range(12))
        return f"    def {name}(self):\n{body}        return step_0\n\n"
    (tmp_path / "join_set.py").write_text(
        "class JoinSet:\n"
        + "".join(f"    slot_{i}: dict = {{}}  # a JoinSet holds the tasks it spawned\n" for i in range(30))
        + "\n" + method("spawn", "start running a task in the set")
        + method("is_empty", "no task left in the set, empty")
        + method("shutdown", "abort every task and wait"))
    engine = Engine(tmp_path, EngineOptions(embeddings=False))
    engine.index()
    conn = engine.store.reader()
    query = "Returns whether the JoinSet is empty"
    assert lexical_search(conn, "code", query, 1, RankingConfig())[0].symbol == "JoinSet.is_empty"
    alone = RankingConfig(priors=replace(PriorConfig(), member_share=0.0))
    assert lexical_search(conn, "code", query, 1, alone)[0].symbol == "JoinSet"
    # A symbol query still wants the type itself.
    assert lexical_search(conn, "code", "JoinSet", 1, RankingConfig())[0].symbol == "JoinSet"
    engine.close()


def test_a_hit_says_which_features_made_its_score(engine: Engine) -> None:
    # A symbol query's top hit is there by its definition; a test file's hit
    # carries the test penalty that put it below the source.
    top = lexical_search(engine.store.reader(), "code", "Session", 5, RankingConfig())
    assert top[0].path == "pkg/session.py"
    assert top[0].why[0].feature == "definition" and top[0].why[0].contribution > 0
    hits = lexical_search(engine.store.reader(), "code", "session keeps cookies", 10, RankingConfig())
    test_hit = next(h for h in hits if h.path.startswith("tests/"))
    penalty = next(c for c in test_hit.why if c.feature == "test")
    assert penalty.contribution < 0
    assert all(abs(a.contribution) >= abs(b.contribution) for a, b in zip(test_hit.why, test_hit.why[1:]))
    assert all(len(h.why) <= 5 for h in hits)


def test_the_contributions_add_up_to_the_score() -> None:
    # Three chunks of one file, one of another: BM25, coherence and per-file
    # saturation make the scores, and each hit's contributions are those.
    hits = [scored_chunk(1, "pkg/misc.py", 10.0), scored_chunk(2, "pkg/uploads.py", 8.0),
            scored_chunk(3, "pkg/uploads.py", 7.5), scored_chunk(4, "tests/test_uploads.py", 7.0)]
    ranked = rerank("retry the upload after a pause", hits, 4,
                    replace(PriorConfig(), file_name_boost=0.0, definition_boost=0.0))
    for hit in ranked:
        assert sum(c.contribution for c in hit.why) == pytest.approx(hit.score)
    second = next(h for h in ranked if h.chunk_id == 3)
    assert {c.feature for c in second.why} == {"bm25", "saturation"}
    assert {c.feature for c in next(h for h in ranked if h.chunk_id == 4).why} >= {"bm25", "test"}


@pytest.mark.parametrize(("path", "legacy"), [
    ("pkg/compat.py", True), ("pkg/_compat.py", True), ("pkg/py3_compat.py", True),
    ("pkg/legacy/store.py", True), ("pkg/backports/zoneinfo.py", True),
    ("pkg/compatible.py", False), ("pkg/store.py", False), ("api/v1/users.py", False),
])
def test_impact_knows_compatibility_copies_by_the_one_classifier(path: str, legacy: bool) -> None:
    # One classifier (index/paths.py): its legacy class is impact's
    # peripheral definitions (recall no longer penalises it: its 0.3 was retired, issue 36).
    from ctxls.impact.risk import is_peripheral_path
    from ctxls.index.paths import path_class

    assert path_class(path).legacy is legacy
    assert is_peripheral_path(path) is legacy


def test_dumped_feature_records_rank_as_recall_does(engine: Engine) -> None:
    # bench/train_recall_scorer.py fits the scorer on records dumped from the
    # candidates (lexical_candidates, with_features, file_bm25) and scores
    # them through score_candidates, away from the store: they must rank as
    # lexical_search does, or the fit would tune another ranking.
    from dataclasses import fields

    from ctxls.index.ranking import lexical_candidates, score_candidates, store_rows
    from ctxls.index.recall_features import RecallFeatures, with_features

    conn = engine.store.reader()
    config = RankingConfig()
    for query in ("Session", "session keeps cookies", "cookiejar session", "merge_cookies", "send"):
        shape = query_shape(query)
        hits = with_features(conn, "code", shape, lexical_candidates(conn, "code", shape, config.candidate_pool,
                                                                    config), config.priors, store_rows(conn))
        files = file_bm25(conn, "code", shape.terms, {h.path for h in hits})
        dumped = [ScoredChunk(h.chunk_id, h.path, "code", h.language, None, h.symbol_kind, h.start_line,
                              h.end_line, 0.0, "", "", RecallFeatures(**{
                                  f.name: getattr(h.features, f.name) for f in fields(RecallFeatures)}))
                  for h in hits]
        rescored = score_candidates(shape, dumped, config.candidate_pool, config, 0.0,
                                    lambda paths: {p: files[p] for p in paths if p in files})
        expected = lexical_search(conn, "code", query, 10, config)
        assert expected
        assert [(h.path, h.start_line, round(h.score, 9)) for h in rescored[:10]] == \
            [(h.path, h.start_line, round(h.score, 9)) for h in expected]
