import pytest

from ctxls.index.query import declared_name, query_shape
from ctxls.index.tokenize import expand_tokens, fts_match_expression, query_terms


def check(text: str, expected: list[str]) -> None:
    assert expand_tokens(text) == expected


def test_camel_case_keeps_original_and_parts():
    check("getUserName", ["getusername", "get", "user", "name"])
    check("HTTPServerError", ["httpservererror", "http", "server", "error"])


def test_snake_case_keeps_original_and_parts():
    check("snake_case_name", ["snake_case_name", "snake", "case", "name"])
    check("__init__", ["__init__", "init"])


def test_dotted_names_and_paths_add_a_compound():
    check("os.path.join", ["os_path_join", "os", "path", "join"])
    check("index/store.py", ["index_store_py", "index", "store", "py"])
    check("std::vector", ["std_vector", "std", "vector"])


def test_plain_words_are_stemmed_not_duplicated():
    check("retry the upload", ["retri", "the", "upload"])


def test_a_sentence_meets_the_identifier_it_describes():
    # "Receives the users" and receive_user share every content word's stem;
    # the compound itself stays whole and unstemmed, so the exact name still
    # matches only itself.
    assert set(query_terms("Receives the users")) <= set(expand_tokens("receive_user"))
    assert "receive_user" in expand_tokens("receive_user")
    assert query_terms("parsing errors") == query_terms("parse error")


def test_overlong_tokens_are_dropped():
    assert expand_tokens("a" * 200 + " ok") == ["ok"]


def test_query_terms_drop_stopwords_unless_nothing_is_left():
    assert query_terms("where do we retry failed uploads?") == ["retri", "fail", "upload"]
    assert query_terms("how does it work") == ["work"]  # "does" is stemmed to "doe", still a stopword
    assert query_terms("the") == ["the"]
    assert query_terms("sessionRequest session") == ["sessionrequest", "session", "request"]
    assert query_terms("!!!") == []


def test_match_expression_quotes_every_term():
    assert fts_match_expression(["and", 'x"y']) == '"and" OR "x""y"'


@pytest.mark.parametrize("query", ["make_response", "Flask.make_response", "fmt::format",
                                   "parse()", "  HTTPAdapter  ", "_private", "session", "$httpProvider",
                                   "node->next", "Foo#bar", "class Session"])
def test_one_code_name_is_an_identifier_query(query):
    assert query_shape(query).identifier is not None


@pytest.mark.parametrize("query", ["retry failed uploads", "make_response flask", "", "a.b.",
                                   "3d_model", "where is make_response?"])
def test_sentences_and_fragments_are_not_identifier_queries(query):
    assert query_shape(query).identifier is None


def test_stems_are_right_when_threads_stem_at_once():
    # The indexer and recall threads stem at the same time; a Snowball stemmer
    # keeps the word it works on in the object.
    import snowballstemmer
    from concurrent.futures import ThreadPoolExecutor

    from ctxls.index import tokenize

    words = [f"{base}{suffix}" for base in ("connect", "generat", "process", "receiv", "initializ",
                                             "normaliz", "configur", "transport", "serializ")
             for suffix in ("e", "ed", "ing", "ation", "ations", "er", "ers", "es")]
    words = [f"{word}{'x' * n}" for n in range(40) for word in words]  # distinct: no cache hits
    expected = [snowballstemmer.stemmer("english").stemWord(w) for w in words]
    tokenize.stem.cache_clear()
    with ThreadPoolExecutor(8) as pool:
        chunks = [words[i::8] for i in range(8)]
        results = list(pool.map(lambda part: [tokenize.stem(w) for w in part], chunks))
    got = {w: s for part, stems in zip(chunks, results) for w, s in zip(part, stems)}
    assert [got[w] for w in words] == expected


def test_a_name_asked_with_its_declaring_keyword_is_the_name() -> None:
    assert declared_name("struct Runtime") == "Runtime"
    assert declared_name("  fn spawn_blocking ") == "spawn_blocking"
    assert declared_name("def send") == "send"
    assert declared_name("class pkg.Session") == "pkg.Session"
    assert declared_name("trait AsyncRead") == "AsyncRead"
    assert declared_name("interface Handler()") == "Handler"
    # Keywords that are English words stay a sentence before a plain word.
    assert declared_name("type checking") == "type checking"
    assert declared_name("module loading") == "module loading"
    assert declared_name("class hierarchy of errors") == "class hierarchy of errors"
