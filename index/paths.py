"""What a repository path is: a test, an example or doc, vendored code, generated
code, a compatibility copy, a localized message table, a type stub, a re-export barrel.

One classifier, read by recall's features, locate and impact's ranking, so the
three agree on what is first-party code. Folder and file names, never the
repository's own say (nothing inside the tree can mark itself first-party);
the one mark a file's text may carry (:func:`says_generated`) only ever puts
that file after first-party code.
"""

from __future__ import annotations

import functools
import posixpath
import re
from collections.abc import Callable, Container, Iterable
from typing import NamedTuple


# A line break or another control character (C0, DEL, C1, U+2028/2029): no
# name (a file's, a written memory's id) may hold one, since every text
# answer prints names one per line and such a name would forge lines there.
CONTROL_CHARACTER = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def escaped_controls(text: str) -> str:
    """``text`` with each CONTROL_CHARACTER written ``\\uXXXX``: a name a
    repository holds (a Racket `|a⏎b|` symbol, a JavaScript computed method
    name) as answers may print it on one line."""
    return CONTROL_CHARACTER.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


_TEST_FILE = re.compile(
    r"(?:^|/)(?:test_[^/]*\.py|[^/]*_tests?\.(?:py|go|rb|c|cc|cpp|dart|lua)|conftest\.py"
    r"|[^/]*Tests?\.(?:java|kt|cs|swift|scala|php)|[^/]*(?:Spec|Suite)\.(?:kt|scala|swift)"
    r"|[^/]*\.(?:test|spec)\.[cm]?[jt]sx?|[^/]*_spec\.(?:rb|lua)|test_[^/]*\.(?:c|cc|cpp|lua|dart)"
    r"|test_helpers?[^/]*)$")
# Besides the plain names, a folder named as its ecosystem names a test
# project or source set: capitalised (.NET's `Foo.Tests/` and `UnitTests/`,
# SwiftPM's `Tests/`, Gradle's and Kotlin's `androidTest/`, `jvmTest/`) or
# after a separator (`unit_tests/`, `integration-test/`). A capital T, or
# the separator, keeps `pytest/`, `httptest/` and `latest/` first-party.
_TEST_DIR = re.compile(r"(?:^|/)(?:tests?|__tests__|__mocks__|spec|specs|testing|testdata|test_data"
                       r"|test-?utils|fixtures|bench|benches|benchmarks?|asv_bench|e2e"
                       r"|(?:[A-Za-z0-9_.-]*[a-z0-9.])?Tests?|[a-z0-9_.-]*[_.-]tests?)(?:/|$)")
# Examples, tutorials, galleries and documentation sources, capitalised too
# (Swift's and .NET's `Examples/`, `Demo/`), and Xcode's playgrounds.
_EXAMPLE_DIR = re.compile(r"(?:^|/)(_?[Ee]xamples?|[Ss]amples?|[Dd]emos?|docs?_src|[Dd]ocs?|[Tt]utorials?"
                          r"|galleries|cookbook|[^/]+\.playground)(?=/)")
# Prose files by extension (lower case, no dot): recall's `doc` kind
# (languages.chunk_kind_for_path) and the doc path class alike.
DOC_EXTENSIONS = frozenset({"md", "markdown", "mdx", "rmd", "qmd", "rst", "txt", "adoc", "tex"})

# Folders that hold another project's code copied in: Go's and PHP's
# `vendor/`, pip's `_vendor/`, C/C++'s `third_party/` and `extern/`, npm's
# installed packages.
VENDORED_DIRS = frozenset({
    "vendor", "vendors", "vendored", "_vendor", "_vendored", "third_party", "third-party",
    "thirdparty", "3rdparty", "3rd_party", "extern", "external", "externals",
    "node_modules", "bower_components", "site-packages"})
# Named so only at the repository's top: libraries copied in by node,
# redis, ujson and Elixir's mix (`deps/double-conversion/…`); deeper, a
# `deps` folder is as often a project's own code about dependencies.
ROOT_VENDORED_DIRS = frozenset({"deps"})
# A web library copied in whole: a script or style sheet named after its
# release (`jquery-3.6.0.js`, `d3.v5.min.js`, `bootstrap-4.1.3/js/bootstrap.js`,
# `htmx@1.9.2.js`) or minified (`select2.min.js`). A project's own scripts
# carry no version in their names.
_WEB_ASSET = (".js", ".mjs", ".css")
_RELEASE_NAME = re.compile(r"[-_.@](?:v\d+(?:\.\d+)*|\d+\.\d+(?:\.\d+)*)(?=[-_.]|/|$)")
_MINIFIED = re.compile(r"[.-]min\.(?:m?js|css)$")
# Build outputs and generated sources.
_GENERATED = re.compile(r"(?:^|/)(?:single_include|dist|build|generated|__generated__|gen)/"
                        r"|(?:_pb2(?:_grpc)?\.py|\.pb\.go|\.min\.js|_generated\.\w+|\.gen\.\w+)$")


def is_test_path(path: str) -> bool:
    return _TEST_FILE.search(path) is not None or _TEST_DIR.search(path) is not None


def is_example_path(path: str) -> bool:
    """Examples, tutorials and documentation sources. A Go folder is a package:
    `.go` files under `doc/` (the standard library's `go/doc`, a CLI library's
    man-page generator) are library code, not a documentation tree, whose
    pages are not Go."""
    found = _EXAMPLE_DIR.findall(path)
    if path.endswith(".go") and found and {f.lower() for f in found} <= {"doc", "docs"}:
        return False
    return bool(found)


def is_doc_path(path: str) -> bool:
    """An example or documentation source, or a prose file anywhere."""
    extension = posixpath.splitext(path)[1][1:].lower()
    return extension in DOC_EXTENSIONS or is_example_path(path)


@functools.lru_cache(maxsize=16384)
def is_vendored_path(path: str) -> bool:
    """Under a folder named as a vendored tree, at any depth (or, for
    ROOT_VENDORED_DIRS, at the top), or a web library copied in by its
    release's name or minified."""
    folders = path.split("/")[:-1]
    if not VENDORED_DIRS.isdisjoint(folders) or (folders and folders[0] in ROOT_VENDORED_DIRS):
        return True
    return path.endswith(_WEB_ASSET) and (_MINIFIED.search(path) is not None
                                          or _RELEASE_NAME.search(path) is not None)


@functools.lru_cache(maxsize=16384)
def is_test_or_doc(path: str) -> bool:
    """Where a fix rarely starts: tests and their data, examples and docs,
    benchmarks, vendored code."""
    return is_test_path(path) or is_doc_path(path) or is_vendored_path(path)


def is_generated_path(path: str) -> bool:
    return _GENERATED.search(path) is not None


# A program's output committed beside its source says so in a comment at its
# top: Go's `// Code generated … DO NOT EDIT.`, the `@generated` convention,
# C#'s `// <auto-generated>`, `// Generated by CoffeeScript 1.8.0`, protoc's
# `# Generated by the protocol buffer compiler.  DO NOT EDIT!`. A sentence
# that begins "generated by" (or "this file was generated by") is about the
# file; one that only uses the words ("the parser is generated by Jison",
# "the bytes are\n * generated using Fortuna", "auto-generated names") is
# not, and neither is a skeleton a tool wrote once for hands to edit
# ("# autogenerated file." atop Sphinx's conf.py). "Do not edit" counts
# only beside a word of generating ("DO NOT EDIT THIS FILE BY HAND; run
# gen_symbols.py": generated; eslint's "STOP!!! DO NOT MODIFY." atop a
# frozen hand-written module: not) and never about another file (a template's
# "do not modify Foo.swift"). Only the comments before the first line of
# anything else count, as Go's convention has it: a template string further
# down is not the file's say (PHP's opening tag and XML's declaration are
# not anything else).
_LINE_COMMENT = re.compile(r"\s*(?://+|#+'?|--|;+|%+)\s*")
_BLOCK_COMMENTS = (("/*", "*/"), ("<!--", "-->"), ("{-", "-}"), ("(*", "*)"))
_MARKED_GENERATED = re.compile(r"@generated\b|<auto-?generated\b", re.IGNORECASE)
_STARTS_GENERATED = re.compile(
    r"(?:warning[:!]?\s*)?(?:this (?:file|code|module) (?:(?:was|is|has been) )?)?"
    r"(?:auto(?:matically)?[- ]?)?generated (?:automatically )?(?:by|from|with|using)\b"
    r"|code generated\b", re.IGNORECASE)
_NOT_TO_EDIT = re.compile(r"\bdo(?:n'?t| not) (?:edit|modify|change)\b(?!\s+[\w-]+(?:\.[\w-]+)+)",
                          re.IGNORECASE)
_GENERATING = re.compile(r"generat(?:ed|or|ing|e)\b|\bgen_\w+|\bgo:generate\b", re.IGNORECASE)
_GENERATED_MARK_LINES = 30
_GENERATED_MARK_CHARS = 4096


def says_generated(text: str) -> bool:
    """A comment before the file's first other line (within its first
    lines) says a program wrote it: generated code wherever its path is.
    A file can mark only itself, and only down."""
    closer = None  # the end of the block comment the line is inside
    sentence_starts = True  # the line begins a comment's sentence
    not_to_edit = generating = False
    for line in text[:_GENERATED_MARK_CHARS].splitlines()[:_GENERATED_MARK_LINES]:
        body = line.strip()
        if closer is None:
            if not body or body == "<?php" or body.startswith("<?xml"):
                sentence_starts = True
                continue
            opened = next(((o, c) for o, c in _BLOCK_COMMENTS if body.startswith(o)), None)
            if opened is not None:
                body, closer, sentence_starts = body[len(opened[0]):], opened[1], True
            elif (leader := _LINE_COMMENT.match(line)) is not None:
                body = line[leader.end():]
            else:
                break
        block_ended = False
        if closer is not None:
            inside, ended, _ = body.partition(closer)
            body = inside.lstrip("* \t")
            if ended:
                closer, block_ended = None, True
        body = body.strip()
        if _MARKED_GENERATED.search(body) or (sentence_starts and _STARTS_GENERATED.match(body)):
            return True
        not_to_edit = not_to_edit or _NOT_TO_EDIT.search(body) is not None
        generating = generating or _GENERATING.search(body) is not None
        # A sentence also starts after a block comment's end, and after a line
        # that is no sentence: a shebang, an editor's mode line, a one-word
        # directive (`/* eslint-disable */`, `// @ts-nocheck`).
        sentence_starts = (not body or block_ended or body.endswith((".", "!", "?", ":"))
                           or body.startswith(("!", "-*-")) or " " not in body)
    return not_to_edit and generating


# Compatibility copies: a folder of the old or shimmed API, or a file named so
# (`compat.py`, `_compat.py`, `py3_compat.py`, `legacy.js`).
_LEGACY = re.compile(r"(?:^|/)(?:_?compat|legacy|deprecated|backports?|old|obsolete)(?:/|$)"
                     r"|(?:^|/)(?:[^/]*_)?(?:compat|legacy|deprecated)(?:\.[^/]*)?$")
_VERSION_DIR = re.compile(r"(?:^|/)v(\d+)(?=/)")
# Localized message tables (zod's `locales/en.ts`).
_LOCALE_DIR = re.compile(r"(?:^|/)(?:locales?|translations?|l10n)(?:/|$)")
# Files that often only re-export a package's names.
BARRELS = frozenset({"__init__.py", "index.ts", "index.js", "index.mjs", "index.tsx",
                     "package-info.java", "mod.rs", "lib.rs", "doc.go"})


def is_legacy_path(path: str) -> bool:
    """A compatibility copy: under a ``compat``/``legacy``/``deprecated``/
    ``backports``/``old``/``obsolete`` folder or in a file named so
    (``compat.py``, ``*_compat.*``). A ``vN/`` folder is one only beside the
    newer code: :func:`superseded_paths`."""
    return _LEGACY.search(path) is not None


def superseded_paths(paths: Iterable[str], indexed: Callable[[], Container[str]]) -> set[str]:
    """Those of ``paths`` under a ``vN/`` folder that an older major version
    kept beside the current code: a sibling ``vM/`` (M > N) is also among
    ``paths`` (zod's ``v3/`` beside ``v4/``), or the same file exists outside
    the version folder among ``indexed()``'s paths (pydantic's
    ``pydantic/v1/main.py`` beside ``pydantic/main.py``); ``indexed`` is asked
    only when a path has such a folder. A version folder with neither is the
    code itself (a service's ``api/v1/``)."""
    newest: dict[str, int] = {}
    located: dict[str, tuple[str, int]] = {}
    copies: set[str] = set()
    known: Container[str] | None = None  # indexed(), once
    for path in paths:
        for match in _VERSION_DIR.finditer(path):
            prefix, version = path[:match.start()], int(match.group(1))
            newest[prefix] = max(newest.get(prefix, -1), version)
            located[path] = (prefix, version)
            outside = f"{prefix}/{path[match.end() + 1:]}" if prefix else path[match.end() + 1:]
            known = indexed() if known is None else known
            if outside in known:
                copies.add(path)
    return copies | {path for path, (prefix, version) in located.items() if version < newest[prefix]}


class PathClass(NamedTuple):
    test: bool
    example: bool
    legacy: bool
    vendored: bool  # vendored or generated: another project's or a tool's code
    stub: bool  # a TypeScript declaration file
    barrel: bool
    locale: bool


@functools.lru_cache(maxsize=16384)
def path_class(path: str) -> PathClass:
    """Every class of a path at once, cached (recall meets the same paths again and again)."""
    return PathClass(is_test_path(path), is_example_path(path), is_legacy_path(path),
                     is_vendored_path(path) or is_generated_path(path),
                     path.endswith(".d.ts"), posixpath.basename(path) in BARRELS,
                     _LOCALE_DIR.search(path) is not None)
