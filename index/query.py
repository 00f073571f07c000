"""Query analysis: what a recall query asks for, read once.

One answer to "is this query one code name?" (``QueryShape.identifier``) for
every reader: recall's fusion weight and definition feature (index/ranking.py,
index/recall_features.py), the hit narrowed to the definition a query names
(index/symbols.py). The
query's words, the path classes it asks for ("the test for ...") and its
BM25 terms come with it.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass

from ctxls.index.tokenize import FILE_NAME_STOPWORDS, fold, query_terms

# One code name: qualified (a.b, A::b, a->b, A#b, A\b), or an identifier with a
# capital, an underscore or a digit after its first character, or a leading
# underscore, or a capitalised word, or any of these or a lower-case word
# called (``parse()``). A name whose last segment starts in lower case may end
# in Ruby's and Elixir's ``?`` or ``!`` (``Account#valid?``, ``save_all!``; no
# type or constant does: "What?" is no name). A plain lowercase word
# ("session", "valid?", Lisp's "format-user-name") may be a word or a name
# (QueryShape.word). Written for ASCII: a query in another script is read
# through _shape_classes (a capital as `A`, any other letter as `a`), so a
# name may start with any letter and have a capital of any script.
_SEGMENT = r"[A-Za-z_$][\w$]*"
_SEPARATOR = r"(?:::|->|[.#\\])"
# A Lisp name (Clojure's `parse-version`) qualified by its dotted namespace,
# `shop.main/parse-version`: the slash only after a dotted namespace (after
# one word it is a path or "and/or").
_LISP_SEGMENT = r"[A-Za-z_$][\w$]*(?:-[\w$]+)*"
_NAMESPACED = rf"{_LISP_SEGMENT}(?:\.{_LISP_SEGMENT})+/{_LISP_SEGMENT}[?!]?"
# A C++ destructor qualified by its class (`geo::Outer::~Outer`) is one name too.
_NAME = (rf"{_SEGMENT}(?:{_SEPARATOR}{_SEGMENT})*(?:{_SEPARATOR}(?:[a-z_][\w$]*[?!]|{_SEGMENT})"
         rf"|::~{_SEGMENT})"
         rf"|{_NAMESPACED}"
         r"|_[\w$]*[?!]?"
         # (a capital, underscore or digit looked for ahead, the name taken
         # once: backtracking over both stars was quadratic in a long name)
         r"|[a-z$](?=[\w$]*?[A-Z_0-9])[\w$]*+[?!]?"
         r"|[A-Z][\w$]*")
_SYMBOL_QUERY = re.compile(rf"(?:{_NAME})(?:\(\))?")
# A lower-case word, or a hyphenated run of them (an English compound or a
# Lisp name), with Ruby's `?` or `!` after it or not.
_PLAIN_WORD = re.compile(r"[a-z][a-z0-9]*(?:-[a-z0-9]+)*[?!]?")
# "struct Runtime", "fn spawn_blocking", "class Session": a name asked for
# with the keyword that declares it. Keywords that are also English words
# ("type checking", "module loading") only count before a name no sentence
# has (_NAME: not a plain lowercase word).
_DECLARATION_QUERY = re.compile(
    r"(?:(?:fn|func|def|defn|fun)\s+(?P<any>[A-Za-z_$][\w$]*(?:(?:::|->|[.#])[A-Za-z_$][\w$]*)*"
    r"(?:-[\w$]+)*[?!]?)"
    r"|(?:class|struct|enum|trait|interface|type|typedef|function|impl|mod|module|union|record"
    rf"|protocol|object|macro|const|let|var|package|namespace)\s+(?P<named>{_NAME}))(?:\(\))?")
# Identifiers inside a sentence: CamelCase, camelCase, snake_case, dotted.
_EMBEDDED_SYMBOL = re.compile(
    r"(?<![\w.])(?:"
    r"[A-Za-z_][\w]*(?:(?:::|\.)[A-Za-z_]\w*)+"
    r"|[A-Z][a-z0-9]+[A-Z]\w*"
    r"|[a-z][a-z0-9]*[A-Z]\w*"
    r"|[a-z][a-z0-9]*_\w+"
    r")(?![\w])")
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9]+")
# A qualified name's separators: its last segment is the name defined.
NAME_SEPARATORS = re.compile(r"::|->|[.#\\]")
# A separator between two names (an operator's own `->`, `operator->`, is none).
# `~` after it: a C++ destructor, `Matrix::~Matrix`.
_QUALIFIER = re.compile(r"(?<=[\w$])(?:::|->|[#\\])(?=[\w$~])")
_NAMESPACED_NAME = re.compile(_NAMESPACED)
# `_` and `-` inside a name: `build_cache_key`, `buildCacheKey` and
# `build-cache-key` are one name in three case styles; a leading or trailing
# `_` is not a word break (`__init__` is not `init`, `_request` not `request`).
_WORD_JOINER = re.compile(r"(?<=[^\W_])[-_]+(?=[^\W_])")
# A file's own package or namespace, declared on a line of its own near its
# top: `package com.example;` (Java, Kotlin, Scala, Go), `namespace A\B;` (PHP,
# C#), `package LWP::ConnCache;` (Perl), `module A.B where` (Haskell), `(ns a.b`;
# the name ends its line or a `;`, `{`, `(` or `where` follows it (a doc
# comment's "module helpers for …" declares nothing).
_DECLARED_MODULE = re.compile(r"^[ \t]*(?:package|namespace|module|\(ns)[ \t]+"
                              r"([A-Za-z_][\w$-]*(?:(?:\.|::|\\)[A-Za-z_][\w$-]*)*)"
                              r"(?=[ \t]*(?:[;{(]|where\b|$))", re.M)

# A name as its language's own tools print it (plain_name), each piece read
# off or rewritten. A name segment of any script: a letter or `_`, then word
# characters.
_ANY_SEGMENT = r"[^\W\d][\w$]*"
# Go's receiver, as a stack trace or pprof prints a method: `(*LRU).Put`,
# `cache.(*LRU).Put`.
_GO_RECEIVER = re.compile(rf"(?<![^.])\(\*?({_ANY_SEGMENT})\)(?=\.)")
# Objective-C's method notation, as the runtime, crash logs and Apple's docs
# print it: `-[Downloader cancel]`, `+[Downloader sharedDownloader]`,
# `-[Downloader startWithURL:completion:]`, a category's `-[NSString(Trim) trimmed]`:
# the class's method, named as the index names it, by its selector's first piece.
_OBJC_METHOD = re.compile(rf"[-+]\[({_ANY_SEGMENT})(?:\({_ANY_SEGMENT}\))?[ \t]+({_ANY_SEGMENT})(?::(?:{_ANY_SEGMENT}:)*)?\]")
# Template or generic arguments after a name, before a qualifier or the end
# (`Matrix<T>::multiply`, Rust's `Vec::<T>::new`, `Map<K, V>.get`) or inside
# another's (`vector<pair<K, V>>`); innermost first, a pass a level. No `=`
# or `-` inside: C++'s `operator<=>` and `operator->` keep theirs.
_TYPE_ARGUMENTS = re.compile(r"(?<=[\w$])(?:::)?<[\w$:.,*&\s\[\]]*>(?=::|->|[.#(>,]|$)")
_TYPE_ARGUMENT_DEPTH = 8
# Rust's paths relative to the current module (`self::parse`, `super::super::x`):
# the name follows. (`crate::` stays: the crate's root is a module a file is
# named by, file_modules.)
_RELATIVE_PATH = re.compile(r"^(?:(?:self|super)::)+")
# An arity after a name: Elixir's and Erlang's `withdraw/2` (docs, IEx, traces).
_ARITY = re.compile(r"(?<=[\w$?!])/\d+$")
# Swift's argument labels: `scale(by:)`, `tableView(_:didSelectRowAt:)`.
_ARGUMENT_LABELS = re.compile(rf"(?<=[\w$])\((?:{_ANY_SEGMENT}:)+\)$")
# One `:` between two names: Lua's method `Queue:push`, Erlang's `kv:put`,
# Python's entry point `pkg.cli:main` (never `::`; a name must follow it, so
# `host:8080` stays).
_SINGLE_COLON = re.compile(r"(?<=[\w$])(?<!:):(?=[^\W\d])")

# Words that ask for a path class the ranking otherwise puts last.
_TEST_WORDS = frozenset({"test", "tests", "testing", "spec", "specs", "fixture", "fixtures",
                         "mock", "mocks", "unittest", "benchmark", "benchmarks"})
_EXAMPLE_WORDS = frozenset({"example", "examples", "demo", "demos", "sample", "samples", "tutorial"})
_LOCALE_WORDS = frozenset({"locale", "locales", "translation", "translations", "translate",
                           "language", "languages", "i18n", "l10n", "localization", "localized"})


def declared_name(query: str) -> str:
    """The name a "<declaring keyword> <name>" query asks for, else the query
    (stripped): such a query wants the definition, and is ranked as the bare
    name is (the keyword, in every chunk of its kind, only adds noise to
    BM25 and to the query's embedding)."""
    text = query.strip()
    found = _DECLARATION_QUERY.fullmatch(_shape_classes(text))
    if found is None:
        return plain_name(text)
    group = "any" if found.group("any") else "named"
    return text[found.start(group):found.end(group)]


def plain_name(text: str) -> str:
    """``text`` as the plain name it is when it is one name written as its
    language's own tools print it: Go's `(*LRU).Put`, template arguments
    (`Matrix<T>::multiply`), Rust's `self::`/`super::`, an Elixir or Erlang
    arity (`withdraw/2`), Lua's `Queue:push` or Erlang's `kv:put` (as
    `Queue.push`), Swift's labels (`scale(by:)`), Objective-C's
    `-[Downloader startWithURL:completion:]` (as `Downloader.startWithURL`).
    Anything else, a sentence included, is returned as it is."""
    objc = _OBJC_METHOD.fullmatch(text)
    name = f"{objc.group(1)}.{objc.group(2)}" if objc else _GO_RECEIVER.sub(r"\1", text)
    for _ in range(_TYPE_ARGUMENT_DEPTH):
        name, stripped = _TYPE_ARGUMENTS.subn("", name)
        if not stripped:
            break
    name = _RELATIVE_PATH.sub("", name)
    name = _ARGUMENT_LABELS.sub("", _ARITY.sub("", name))
    name = _SINGLE_COLON.sub(".", name)
    if name == text:
        return text
    shape = _shape_classes(name)
    return name if _SYMBOL_QUERY.fullmatch(shape) or _PLAIN_WORD.fullmatch(shape) else text


def dotted_name(name: str) -> str:
    """A qualified name written with its language's separator (``A::b``,
    ``A#b``, ``a->b``, ``A\\b``, Clojure's ``a.b/c``) as the index writes
    it, ``A.b``; one its language's tools print (plain_name) read first."""
    name = plain_name(name)
    if _NAMESPACED_NAME.fullmatch(name):
        name = name.replace("/", ".")
    return _QUALIFIER.sub(".", name)


def name_key(name: str) -> str:
    """``name`` as names are matched across case styles: folded
    (tokenize.fold) and its `_` and `-` between two letters or digits
    dropped, so ``build_cache_key`` finds ``buildCacheKey`` and
    ``pathIsSymlink`` finds ``path_is_symlink`` (the symbols' name_key
    column)."""
    return _WORD_JOINER.sub("", fold(name))


def file_modules(path: str, header: str) -> list[tuple[str, ...]]:
    """The names a file's module goes by, as parts: its folders with its
    stem and without (`src/util/util.go`: Go's package is its folder, Perl's
    `lib/LWP/ConnCache.pm` its stem too), and the package or namespace
    ``header`` (the text of its first chunk) declares (PHP's
    `namespace GuzzleHttp;` in `src/Utils.php`); a Rust file's `crate::`
    path too (`crate.net.http` for `src/net/http.rs`)."""
    folders, _, file_name = path.rpartition("/")
    parts = tuple(part for part in folders.split("/") if part)
    stem = file_name.split(".", 1)[0]
    names = [parts, (*parts, stem)]
    names.extend(tuple(dotted_name(found).split(".")) for found in _DECLARED_MODULE.findall(header))
    if file_name.endswith(".rs"):
        crate_path = rust_crate_path(parts, stem)
        if crate_path is not None:
            names.append(crate_path)
    return names


def rust_crate_path(folders: tuple[str, ...], stem: str) -> tuple[str, ...] | None:
    """A Rust file's module as a `crate::` path names it: below its
    (innermost) `src/`, `mod.rs` its folder's module, `lib.rs` and `main.rs`
    the crate's root (`src/net/http.rs` -> crate.net.http, `src/lib.rs` ->
    crate); None outside a `src/` (a crate root's `lib.rs` or `main.rs` at
    the top excepted). impact/index_view.module_names names a file so too."""
    if "src" in folders:
        inner = folders[len(folders) - folders[::-1].index("src"):]
    elif not folders and stem in ("lib", "main"):
        inner = ()
    else:
        return None
    if stem == "mod" or (not inner and stem in ("lib", "main")):
        return ("crate", *inner)
    return ("crate", *inner, stem)


def names_definition(asked: str, symbol: str, modules: Callable[[], list[tuple[str, ...]]],
                     key: Callable[[str], str] = name_key) -> bool:
    """Whether the dotted name ``asked`` names the definition ``symbol``: the
    symbol is it or ends with it (`Session.request` for `request`), or the
    name's trailing parts are the whole symbol and its leading parts end one
    of ``modules()``, its file's module names (file_modules): `util.Constrain`
    for `Constrain` in `src/util/util.go`, `GuzzleHttp.Utils.describeType`
    for `Utils.describeType`. The symbol's parts are compared by ``key``, the
    module's by name_key (a folder is spelt `my_app` for the namespace
    `my-app`)."""
    asked_parts, symbol_parts = asked.split("."), symbol.split(".")
    qualifier = len(asked_parts) - len(symbol_parts)
    if qualifier <= 0:
        return [key(part) for part in symbol_parts[-len(asked_parts):]] == list(map(key, asked_parts))
    if list(map(key, asked_parts[qualifier:])) != list(map(key, symbol_parts)):
        return False
    wanted = [name_key(part) for part in asked_parts[:qualifier]]
    return any([name_key(part) for part in module[-qualifier:]] == wanted
               for module in modules() if len(module) >= qualifier)


def _shape_classes(text: str) -> str:
    """``text`` with each non-ASCII letter, mark or digit as the ASCII one of
    its kind (a capital as ``A``, another letter or a mark as ``a``, a digit
    as ``0``), at the same offsets: the name patterns, written for ASCII,
    read names of any script."""
    if text.isascii():
        return text
    return "".join(
        char if char.isascii()
        else "A" if char.isupper() or char.istitle()
        else "a" if char.isalpha() or unicodedata.category(char)[0] == "M"
        else "0" if char.isalnum()
        else char
        for char in text)


@dataclass(frozen=True)
class QueryShape:
    text: str  # the query as ranked: stripped, a declaring keyword dropped
    symbol: str | None  # the whole query, when it is one code name
    word: str | None  # the whole query, when it is one lower-case word (a word or a name)
    embedded: tuple[str, ...]  # identifiers inside a sentence
    words: frozenset[str]  # content words as written (camelCase kept), for file-name matches
    wants_tests: bool
    wants_examples: bool
    wants_locales: bool
    terms: tuple[str, ...]  # the BM25 query terms (tokenize.query_terms of ``text``)

    @property
    def identifier(self) -> str | None:
        """The one code name the query is (a symbol or a lower-case word:
        ``make_response``, ``Flask.make_response``, ``fmt::format``,
        ``parse()``, ``session``), else None: a sentence, whose caller wants
        its meaning, not a name."""
        return self.symbol or self.word


@functools.lru_cache(maxsize=256)
def query_shape(query: str) -> QueryShape:
    text = declared_name(query)
    shape = _shape_classes(text)
    found = _WORD.findall(text)
    words = {word.lower() for word in found}
    bare = text.removesuffix("()")
    # A lower-case word called (`parse()`) is a name, as any other name is.
    called = bare != text and _PLAIN_WORD.fullmatch(shape, 0, len(bare)) is not None
    symbol = bare if _SYMBOL_QUERY.fullmatch(shape) or called else None
    word = text if symbol is None and _PLAIN_WORD.fullmatch(shape) else None
    embedded: tuple[str, ...] = ()
    if symbol is None and word is None:
        embedded = tuple(dict.fromkeys(text[name.start():name.end()]
                                       for name in _EMBEDDED_SYMBOL.finditer(shape)))
    return QueryShape(text, symbol, word, embedded,
                      frozenset(w for w in dict.fromkeys(found) if w.lower() not in FILE_NAME_STOPWORDS),
                      bool(words & _TEST_WORDS), bool(words & _EXAMPLE_WORDS),
                      bool(words & _LOCALE_WORDS),
                      tuple(query_terms(text)))

