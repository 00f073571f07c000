"""Locate: from an issue text (a bug report, a stack trace) to the files to change.

The text is read the way an engineer reads it (:func:`read_issue`): fenced and
doctest code blocks, traceback frames (Python as the interpreter, IPython and
pytest print them, JavaScript/Node, Java, Go panics, Rust backtraces), error
messages, identifiers, file paths and dotted module names. :class:`Locator`
turns each kind of evidence into a per-file signal in 0..1 and ranks files,
not chunks, by their weighted sum:

* ``frame``: the file of a traceback frame inside the repository; the deepest
  in-repo frame of a traceback counts most (frames that resolve to no indexed
  file, such as the standard library or third-party packages, count nothing).
* ``symbol``: the file defining a named class or function; a name defined in
  one file counts fully, one defined in k files 1/k (combined noisy-or).
* ``assignment``: the file assigning (at module level or in a class body) a
  name no class or function defines: a setting, a constant, an attribute.
* ``literal``: the file holding, as a whole string literal, a name the text
  quotes that projects register by string: a command-line option, a message
  id or name, a directive, a configuration key no file defines or assigns.
* ``path``: a file path (outside a stack frame) or module name the text mentions
  (also written from inside its package: ``contrib.auth.validators``); a dotted
  name going on to a function or method the module defines names it fully.
* ``message``: an error message found word for word in the file (the raise site).
* ``import``: one step along the import graph: the file a mentioned module
  imports a mentioned name from (``from django.db.models import Q`` leads
  through ``django/db/models/__init__.py`` to ``query_utils.py``).
* ``text``: BM25 of the whole text over code chunks (its rarer terms only),
  aggregated per file over its best few chunks, scaled to the best file.
* ``title``: the same for the first line.
* ``semantic`` (embeddings on): cosine similarity of the text's title and
  opening prose (:func:`semantic_query`) with the code chunks of the best
  files by the other signals, aggregated and scaled alike. The query is
  embedded on a thread of its own while the other signals are gathered.

Test and doc files are multiplied by ``test_factor`` unless asked for. The
weights are the best of bench/locate.py's grid on the dev split (docs/decisions.md,
"Locate's signal weights").
"""

from __future__ import annotations

import bisect
import functools
import json
import logging
import posixpath
import re
import sqlite3
import sys
import threading
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field, replace
from pathlib import Path

from ctxls.index.discovery import Skipped, read_file
from ctxls.index.imports import ImportResolver
from ctxls.index.model import ImportRef
from ctxls.index.paths import is_vendored_path
from ctxls.index.ranking import RankingConfig, bm25_scores, term_counts
from ctxls.index.semantic import SemanticIndex
from ctxls.index.store import paths_generation
from ctxls.index.tokenize import QUERY_STOPWORDS, expand_tokens, query_terms

log = logging.getLogger(__name__)

# --- reading the text -----------------------------------------------------------------------

SIGNALS = ("frame", "symbol", "assignment", "literal", "path", "message", "import", "text",
           "title", "semantic")


@dataclass(frozen=True)
class Frame:
    """One stack frame as printed. ``depth`` 0 is where the error was raised
    (the last frame of a Python traceback, the first of the others)."""

    path: str
    line: int | None  # 1-based, as printed
    function: str | None
    language: str
    depth: int


@dataclass
class IssueText:
    prose: str  # the text without its code blocks and tracebacks
    code: list[str] = field(default_factory=list)  # code blocks (fenced, doctest, indented)
    frames: list[Frame] = field(default_factory=list)
    messages: list[str] = field(default_factory=list)  # error messages / quoted sentences
    identifiers: list[str] = field(default_factory=list)  # code names, first mention first
    paths: list[str] = field(default_factory=list)  # file paths as written
    modules: list[str] = field(default_factory=list)  # dotted module names (import lines too)
    imported: list[tuple[str, str]] = field(default_factory=list)  # (module, name) of `from m import n`
    # Names a project registers as strings, not symbols: command-line options
    # (`--import-mode`), message ids (`W0611`, `admin.E108`), hyphenated names
    # (`unused-import`), reST directives (`.. automodule::`).
    literals: list[str] = field(default_factory=list)
    title: str = ""  # the first non-empty line
    raw: str = ""  # the whole text

    def prominence(self, name: str) -> float:
        """How central a name is to the text: named in the title 1, else by how
        often it occurs (once 0.35, twice 0.6, more 0.8)."""
        word = re.compile(r"(?<![\w])" + re.escape(name) + r"(?![\w])")
        if word.search(self.title):
            return 1.0
        return PROMINENCE_BY_COUNT[min(len(word.findall(self.raw)), len(PROMINENCE_BY_COUNT) - 1)]

    @functools.cached_property
    def _prose_without_imports(self) -> str:
        return _IMPORT_LINE.sub("", self.prose)

    def in_prose(self, written: str) -> bool:
        """Whether the prose writes ``written`` outside import lines: a module
        the text names only in its code (`import matplotlib.pyplot as plt`, a
        call through that alias, a fenced block) is how the reporter reached
        the code, seldom where it breaks."""
        # A path read from a name (`-p no:cacheprovider`: `cacheprovider.py`) by that name.
        as_name = written.removesuffix(".py").replace("/", ".")
        return written in self._prose_without_imports or as_name in self._prose_without_imports


# A name's weight by how often the text mentions it (index: mentions, capped).
PROMINENCE_BY_COUNT = (0.35, 0.35, 0.6, 0.8)


_HTML_COMMENT = re.compile(r"<!--.*?-->", re.S)
_FENCE = re.compile(r"^[ \t]*(```|~~~)[^\n]*\n(.*?)^[ \t]*\1[ \t]*$", re.M | re.S)
_DOCTEST = re.compile(r"^[ \t]*(?:>>>|\.\.\.)[ \t]?.*$", re.M)

# Line-anchored patterns start with `[ \t]*`, never `\s*`: under re.M that would
# run across blank lines from every line start (quadratic: minutes for a text
# of 40,000 newlines). Python 3.11's exception groups print their tracebacks
# behind `|` margins.
_PY_FRAME = re.compile(r'^[ \t]*(?:\|[ \t]*)*File "([^"]+)", line (\d+)(?:, in ([^\s]+))?', re.M)
# The other ways Python frames get printed, most recent call last too:
# IPython 8 `File ~/env/.../dataarray.py:409, in DataArray.__init__(self, …)` (a
# module's top level without `, in …`),
# older IPython `~/env/.../point.py in __add__(self, other)` followed by its
# source with `--> 220` at the line, pytest's short form `sympy/core/expr.py:124:
# in __eq__` (before the source) and its long form `sympy/core/expr.py:124: `
# (after the source; the last frame of a traceback ends in the exception's type:
# `src/shop/pricing.py:6: ValueError`). pytest's default mixes both forms.
_PY_FRAME_OTHER = re.compile(
    r"^[ \t]*(?:File (?P<ipy8>[^\s\"]+\.py):(?P<ipy8_line>\d+)(?:, in (?P<ipy8_fn>[\w.<>]+))?"
    r"|(?P<ipy>[^\s\"]+\.py) in (?P<ipy_fn>[\w.<>]+)\("
    r"|(?P<pytest>[^\s\"]+\.py):(?P<pytest_line>\d+): in (?P<pytest_fn>[\w.<>]+)\s*$"
    r"|(?P<pylong>[^\s\"]+\.py):(?P<pylong_line>\d+):(?:[ \t]+(?P<pylong_exc>[\w.]+))?[ \t]*$)", re.M)
_IPYTHON_ARROW = re.compile(r"^[ \t]*-+>\s*(\d+)", re.M)
# Lines between two frames of one printed traceback, at most (IPython shows
# a few lines of source around each; pytest's long form whole functions).
_PY_FRAME_GAP_LINES = 12
_PYTEST_LONG_GAP_LINES = 200
# `at fn (/path/x.js:10:5)`, `at /path/x.js:10:5`, `at async fn (file:///x.mjs:1:2)`
_JS_FRAME = re.compile(
    r"^[ \t]*at (?:async )?(?:(?P<fn>[^\s()]+(?: \[as [^\]]+\])?) \()?(?:file://)?"
    r"(?P<path>[^\s():]+\.(?:[cm]?js|jsx|tsx?|vue|svelte)):(?P<line>\d+)(?::\d+)?\)?\s*$", re.M)
# `at com.example.Foo.bar(Foo.java:42)`
_JAVA_FRAME = re.compile(
    r"^[ \t]*at (?P<qual>[\w$.<>]+)\((?P<file>[\w$]+\.(?:java|kt|scala|groovy)):(?P<line>\d+)\)", re.M)
# Go: a function line, then `\t/path/file.go:123 +0x1d`
_GO_FRAME = re.compile(r"^(?P<fn>\S+)\([^()\n]*\)\n[ \t]+(?P<path>\S+\.go):(?P<line>\d+)", re.M)
# Rust: `  3: crate::module::func` then `at ./src/module.rs:12:5`
_RUST_FRAME = re.compile(r"^[ \t]*\d+: (?P<fn>\S+)\n[ \t]+at (?P<path>\S+\.rs):(?P<line>\d+)", re.M)
# A line printing a stack frame: Python's (`File "` even when elided, or as
# IPython and pytest print them), Node/Java `at`, Go/Rust source lines.
_FRAME_LINE = re.compile(rf'[ \t]*(?:\|[ \t]*)*(?:File "|at |\S+\.(?:go|rs):\d+)|{_PY_FRAME_OTHER.pattern}', re.M)
_RUST_PANIC = re.compile(r"panicked at (?:'.*?', )?(?P<path>[^\s:]+\.rs):(?P<line>\d+)")

# `ValueError: message`, `django.core.exceptions.FieldError: message`, `TypeError: x`;
# also as pytest prints them (`E   ValueError: x`, `FAILED tests/t.py::test_x - ValueError: x`)
# and as warnings are printed (`shop/cart.py:12: DeprecationWarning: x`).
_EXCEPTION_LINE = re.compile(
    r"^[ \t]*(?:\|[ \t]*)*(?:E\s+|(?:FAILED|ERROR) \S+ - |[^\s|]\S*\.py:\d+:[ \t]+)?"
    r"(?P<type>(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception|Warning|Exit|Interrupt|Panic)"
    r"|(?:[a-z_]\w*\.)+[A-Z]\w*)"
    r"(?::[ \t]*(?P<message>.+))?$", re.M)
_GO_PANIC = re.compile(r"^panic: (?P<message>.+)$", re.M)
# A logged line: `WARNING: msg`, logging's default `ERROR:shop.cart:msg`, and
# a documentation build's `index.rst:12: WARNING: msg`.
_LOG_LINE = re.compile(r"^[ \t]*(?:[^\n]*?: )?(?:WARNING|ERROR|CRITICAL)(?::[\w.]+)?:[ \t]*"
                       r"(?P<message>\S.*)$", re.M)
_MESSAGE_PARTS = re.compile(r"[:;\"'()\[\]{}<>]")
_QUOTED = re.compile(r"\"([^\"\n]{12,200})\"|'([^'\n]{12,200})'|“([^”\n]{12,200})”")

_SOURCE_EXTENSIONS = ("py", "pyi", "pyx", "js", "jsx", "mjs", "cjs", "ts", "tsx", "java", "kt", "go",
                      "rs", "c", "h", "cc", "cpp", "hpp", "rb", "php", "cs", "swift", "scala",
                      "vue", "svelte", "rst", "md", "txt", "toml", "cfg", "ini", "yml", "yaml",
                      "json", "html", "css", "sh")
# Relative, absolute (`/`, `~/`, `C:\\`) and Windows paths; a path inside a URL
# is read from the URL (_URL_PATH).
_PATH = re.compile(r"(?<![\w/.\\:~-])((?:~|[A-Za-z]:)?[\\/]*(?:[\w.-]+[\\/]+)*[\w.-]*\w\.(?:"
                   + "|".join(_SOURCE_EXTENSIONS) + r"))(?![\w/\\-])")
_URL_PATH = re.compile(r"\bhttps?://[^/\s]+(/[^\s#?)\]>'\"`]+)")
_DOTTED = re.compile(r"(?<![\w.])([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)(?![\w(])")
_DOTTED_CALL = re.compile(r"(?<![\w.])([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)\(")
_CAMEL = re.compile(r"(?<![\w.])([A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+|[a-z]+[A-Z]\w*|[A-Z]{2,}[a-z]\w*)\b")
_SNAKE = re.compile(r"(?<![\w.])(_*[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+_*)\b")
_BACKTICKED = re.compile(r"`([^`\n]{2,80})`")
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# Names registered as strings (IssueText.literals). An option's value
# (`--import-mode=importlib`) is not its name; `-->` (IPython's arrow) and
# `---` (a rule) are no options.
_OPTION = re.compile(r"(?<![\w-])(--[A-Za-z0-9][\w-]*[A-Za-z0-9])(?![\w-])")
_MESSAGE_ID = re.compile(r"(?<![\w.-])((?:[a-z_]+\.)?[A-Z]{1,2}\d{3,4})(?![\w-])")
_HYPHENATED = re.compile(r"(?<![\w./-])([a-z][a-z0-9]*(?:-[a-z0-9]+)+)(?![\w/-])")
_DIRECTIVE = re.compile(r"^[ \t]*\.\. (?:[\w-]+:)?([\w-]+)::", re.M)
# A reST role before its backticked target (`:kbd:` in ":kbd:`Ctrl+C`",
# `func` in ":py:func:`f`").
_ROLE = re.compile(r"(?<![\w:`]):(?:[a-z][\w-]*:)?([a-z][\w-]*):`")
# A plugin named on the command line (`-p no:cacheprovider`): registered by
# that name, and the module of that name.
_PLUGIN = re.compile(r"(?<![\w-])-p[ \t]+(?:no:)?([A-Za-z_][\w.]*\w)")
# The names imported: in parentheses across lines, else to the line's end.
_FROM_IMPORT = re.compile(r"^[ \t]*from\s+([\w.]+)\s+import\s+(?:\(([\w\s,]+)\)|([\w \t,]+))", re.M)
_IMPORT = re.compile(r"^[ \t]*import\s+([\w.]+(?:\s+as\s+\w+)?(?:\s*,\s*[\w.]+(?:\s+as\s+\w+)?)*)",
                     re.M)
_IMPORT_LINE = re.compile(r"^[ \t]*(?:from[ \t]+[\w.]+[ \t]+import|import[ \t]+[\w.]).*$", re.M)

# Words in code that name nothing of the repository's.
_CODE_NOISE = frozenset("""self cls None True False def class return import from as if else elif
    for while in not and or is lambda with try except finally raise pass print assert yield async
    await global nonlocal del break continue const let var function new this null undefined true
    false int str float bool list dict set tuple len range object type super isinstance
    Traceback most recent call last File line module stdin""".split())


def _frames(text: str) -> list[Frame]:
    frames: list[Frame] = []
    # Python: most recent call last; each traceback is a run of consecutive frames.
    runs: list[list[re.Match]] = []
    last_end = -1
    for match in _PY_FRAME.finditer(text):
        between = text[last_end:match.start()] if last_end >= 0 else ""
        if runs and between.count("\n") <= 4 and "Traceback" not in between:
            runs[-1].append(match)
        else:
            runs.append([match])
        last_end = match.end()
    for run in runs:
        for i, match in enumerate(run):
            frames.append(Frame(match.group(1), int(match.group(2)), match.group(3), "python",
                                len(run) - 1 - i))
    frames += _other_python_frames(text)
    # The rest print the innermost frame first.
    for pattern, language in ((_JS_FRAME, "javascript"), (_GO_FRAME, "go"), (_RUST_FRAME, "rust")):
        depth = 0
        previous_end = -1
        for match in pattern.finditer(text):
            if previous_end >= 0 and text[previous_end:match.start()].count("\n") > 3:
                depth = 0  # a new trace
            fn = match.group("fn")
            frames.append(Frame(match.group("path"), int(match.group("line")), fn, language, depth))
            depth += 1
            previous_end = match.end()
    depth, previous_end = 0, -1
    for match in _JAVA_FRAME.finditer(text):
        if previous_end >= 0 and text[previous_end:match.start()].count("\n") > 3:
            depth = 0
        qual = match.group("qual")
        parts = qual.split(".")
        package = [p for p in parts[:-2] if p and p[0].islower()]
        path = "/".join(package + [match.group("file")])
        frames.append(Frame(path, int(match.group("line")), parts[-1], "java", depth))
        depth += 1
        previous_end = match.end()
    for match in _RUST_PANIC.finditer(text):
        frames.append(Frame(match.group("path"), int(match.group("line")), None, "rust", 0))
    return frames


def _other_python_frames(text: str) -> list[Frame]:
    """Frames of IPython's and pytest's tracebacks (see _PY_FRAME_OTHER),
    grouped into tracebacks by the lines between them; the last of each is
    depth 0."""
    runs: list[list[tuple[str, int | None, str | None]]] = []
    last_end = -1
    # pytest's long form: the previous frame was one, and not a traceback's last.
    long_open = False
    for match in _PY_FRAME_OTHER.finditer(text):
        long_form = bool(match.group("pylong"))
        if match.group("ipy8"):
            frame = (match.group("ipy8"), int(match.group("ipy8_line")), match.group("ipy8_fn"))
        elif match.group("pytest"):
            frame = (match.group("pytest"), int(match.group("pytest_line")), match.group("pytest_fn"))
        elif long_form:  # no function name: it is in the source printed above
            frame = (match.group("pylong"), int(match.group("pylong_line")), None)
        else:  # old IPython: the line is the `-->` arrow in the source shown below
            following = text[match.end():match.end() + 2000]
            arrow = _IPYTHON_ARROW.search(following)
            next_frame = _PY_FRAME_OTHER.search(following)
            line = int(arrow.group(1)) if arrow and (
                next_frame is None or arrow.start() < next_frame.start()) else None
            frame = (match.group("ipy"), line, match.group("ipy_fn"))
        between = text[last_end:match.start()] if last_end >= 0 else ""
        # A traceback ends at its exception line, a code fence or a new "Traceback";
        # in pytest's long form a frame follows a whole function's source and the
        # exception's `E` lines, and the last one names the exception's type.
        if long_form or long_open:
            joins = (long_open and between.count("\n") <= _PYTEST_LONG_GAP_LINES
                     and (long_form or not _EXCEPTION_LINE.search(between)))
        else:
            joins = (runs and between.count("\n") <= _PY_FRAME_GAP_LINES
                     and not _EXCEPTION_LINE.search(between))
        joins = joins and "Traceback" not in between and "```" not in between
        if joins:
            runs[-1].append(frame)
        else:
            runs.append([frame])
        last_end = match.end()
        # pytest's default prints the middle frames in the short form: they keep
        # a long-form traceback open.
        long_open = not match.group("pylong_exc") if long_form else bool(joins and long_open)
    return [Frame(path, line, function.rsplit(".", 1)[-1] if function else None, "python",
                  len(run) - 1 - i)
            for run in runs for i, (path, line, function) in enumerate(run)]


def _add(seen: dict[str, None], value: str) -> None:
    if value:
        seen.setdefault(value)


# An environment report (`pip list`, a library's show_versions(), "System
# Details"): a version line `numpy: 1.19.1`, `attrs 20.3.0`, `commit: None`,
# and the lines around it (`OS: Linux`, `LANG: en_US.UTF-8`, a rule, a
# heading: `INSTALLED VERSIONS`, `Package    Version`).
_VERSION_LINE = re.compile(r"[ \t]*[A-Za-z][\w.-]*(?:[ \t]*:[ \t]*|[ \t]+)(?:v?\d+(?:\.\d+)+|None)\b.*")
_REPORT_LINE = re.compile(r"[ \t]*(?:[\w.-]+[ \t]*:[ \t]*\S.{0,80}|[-= \t]{3,}"
                          r"|(?i:[\w .-]{0,40}\bversions?\b[\w .-]{0,40}))")
# Version lines in one run that make it a report.
_REPORT_VERSIONS = 3


def _without_version_listings(text: str) -> str:
    """The text without its environment reports: their package names are rare
    words in any code base and point at the file listing dependencies (a
    versions printer), not at the bug."""
    lines = text.split("\n")
    keep = [True] * len(lines)
    start = 0
    while start < len(lines):
        end = start
        versions = 0
        while end < len(lines) and (_VERSION_LINE.fullmatch(lines[end])
                                    or _REPORT_LINE.fullmatch(lines[end])):
            versions += _VERSION_LINE.fullmatch(lines[end]) is not None
            end += 1
        if versions >= _REPORT_VERSIONS:
            keep[start:end] = [False] * (end - start)
        start = max(end, start + 1)
    return "\n".join(line for line, kept in zip(lines, keep) if kept)


def read_issue(text: str) -> IssueText:
    """Split an issue's text into prose, code and the evidence they carry.
    HTML comments (an issue template's instructions, never shown on the
    tracker) are not read."""
    text = _without_version_listings(_HTML_COMMENT.sub("", text))
    code: list[str] = [m.group(2) for m in _FENCE.finditer(text)]
    prose = _FENCE.sub("\n", text)
    doctest = "\n".join(re.sub(r"^\s*(?:>>>|\.\.\.) ?", "", m.group(0)) for m in _DOCTEST.finditer(prose))
    if doctest.strip():
        code.append(doctest)
    prose = _DOCTEST.sub("", prose)
    frames = _frames(text)
    messages: dict[str, None] = {}
    identifiers: dict[str, None] = {}
    found: list[str] = []
    for match in _EXCEPTION_LINE.finditer(text):
        _add(identifiers, match.group("type").rsplit(".", 1)[-1])
        if match.group("message"):
            found.append(match.group("message"))
    found += [match.group("message") for pattern in (_GO_PANIC, _LOG_LINE)
              for match in pattern.finditer(text)]
    found += [next(g for g in match.groups() if g) for match in _QUOTED.finditer(prose)]
    for message in found:
        # A message is often built from parts (`"invalid param %r: " + problem`):
        # each part between punctuation is looked for on its own too.
        for part in [message, *_MESSAGE_PARTS.split(message)]:
            if len(part.split()) >= 3:
                _add(messages, part.strip())
    paths: dict[str, None] = {}
    modules: dict[str, None] = {}
    imported: dict[tuple[str, str], None] = {}
    # Whether a line prints a stack frame, asked once per line (a long line of
    # many paths asked it per path: quadratic).
    line_starts = [0] + [m.end() for m in re.finditer("\n", text)]
    frame_lines: dict[int, bool] = {}
    for match in _PATH.finditer(text):
        line_start = line_starts[bisect.bisect_right(line_starts, match.start()) - 1]
        if line_start not in frame_lines:
            frame_lines[line_start] = _FRAME_LINE.match(text, line_start) is not None
        if frame_lines[line_start]:
            continue  # a traceback frame's file: `frame` weighs it by depth
        _add(paths, match.group(1))
    for match in _URL_PATH.finditer(text):
        # `https://github.com/o/r/blob/main/src/shop/cart.py#L9`: an absolute path
        # whose tail is the repository's file.
        url_path = match.group(1).rstrip(".,;:!")  # a sentence's end is not the path's
        if _PATH.fullmatch(url_path.rsplit("/", 1)[-1]):
            _add(paths, url_path)
    code_text = "\n".join(code)
    # `import shop.data as sd`, `from shop import open_cart as oc`: what the
    # issue's code calls `sd.load` or `oc` is the repository's `shop.data.load`,
    # `shop.open_cart`.
    aliases: dict[str, str] = {}
    for block in [code_text, text]:
        for match in _FROM_IMPORT.finditer(block):
            module = match.group(1)
            _add(modules, module)
            for part in re.split(r"\s*,\s*", (match.group(2) or match.group(3)).strip()):
                words = part.split()
                if not words:
                    continue
                imported.setdefault((module, words[0]))
                _add(identifiers, words[0])
                if len(words) == 3 and words[1] == "as":
                    aliases[words[2]] = f"{module}.{words[0]}"
        for match in _IMPORT.finditer(block):
            for part in re.split(r"\s*,\s*", match.group(1)):
                module, _, alias = part.partition(" as ")
                _add(modules, module.strip())
                if alias.strip():
                    aliases[alias.strip()] = module.strip()
    for frame in frames:
        if _in_standard_library(frame.path):
            continue  # the standard library's function (`decode`, `info`): not the repository's
        # `pkg.(*Cart).Total`, `shop::parser::Parser::next`: the function's own name.
        words = _WORD.findall(frame.function or "")
        if words and frame.function not in ("<module>", "<lambda>"):
            _add(identifiers, words[-1])
    for source in (text,):
        for pattern in (_DOTTED_CALL, _DOTTED, _CAMEL, _SNAKE):
            for match in pattern.finditer(source):
                name = match.group(1)
                if name in paths or name.split(".")[-1] in _SOURCE_EXTENSIONS:
                    continue
                _add(identifiers, name)
                if "." in name:
                    _add(modules, name)
        for match in _BACKTICKED.finditer(source):
            for word in _DOTTED_CALL.findall(match.group(1)) + _WORD.findall(match.group(1)):
                _add(identifiers, word)
    for name in list(identifiers):
        head, dot, rest = name.partition(".")
        if aliases.get(head, head) != head:
            expanded = aliases[head] + dot + rest
            _add(identifiers, expanded)
            _add(modules, expanded)
    imported_names = {name for _, name in imported}

    def meaningful(name: str) -> bool:
        last = name.split(".")[-1]
        if last in _CODE_NOISE or last.isdigit() or last.lower() in QUERY_STOPWORDS:
            return False
        return len(last) >= 2 or last in imported_names  # `from django.db.models import Q`

    names = [name for name in identifiers if meaningful(name)]
    literals: dict[str, None] = {}
    for pattern in (_OPTION, _MESSAGE_ID, _HYPHENATED, _DIRECTIVE, _ROLE, _PLUGIN):
        for match in pattern.finditer(text):
            _add(literals, match.group(1))
    for match in _PLUGIN.finditer(text):
        _add(paths, match.group(1).replace(".", "/") + ".py")
    title = next((line.strip() for line in text.splitlines() if line.strip()), "")
    return IssueText(prose=prose, code=code, frames=frames, messages=list(messages),
                     identifiers=names, paths=list(paths), modules=list(modules),
                     imported=list(imported), literals=list(literals), title=title, raw=text)


_PROSE_WORD = re.compile(r"[A-Za-z][a-z]+")
_CODE_START = re.compile(r"(?:def|class|return|import|from|try|except|raise|if|for|while|with|"
                         r"assert|print|lambda|Traceback)\b|#")


def prose_lines(issue: IssueText) -> list[str]:
    """The lines of the prose that read as sentences: indented lines, lines
    starting like code, stack frames and lines mostly of brackets and
    operators are left out (issue trackers often paste code unfenced), and so
    are Markdown headings (an issue template's "### Describe the bug") and
    comment lines, both starting ``#``."""
    out = []
    for line in issue.prose.splitlines():
        stripped = line.strip()
        if not stripped or line[:1] in (" ", "\t") or _CODE_START.match(stripped):
            continue
        words = _PROSE_WORD.findall(stripped)
        operators = sum(stripped.count(c) for c in "()[]{}=*<>")
        if len(words) < 3 or operators > 0.08 * len(stripped):
            continue
        out.append(stripped)
    return out


def semantic_query(issue: IssueText, max_words: int) -> str:
    """What the embedding model reads of an issue: its title, then its prose
    sentences, cut at ``max_words`` words. The model's cost grows with its
    input (a 256-token text costs several times a 64-token one) and the
    opening says what the issue is about; code and tracebacks are left to the
    lexical signals."""
    lines = [issue.title] + [line for line in prose_lines(issue) if line != issue.title]
    return " ".join(" ".join(lines).split()[:max_words])


# --- ranking ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class LocateWeights:
    # The best of bench/locate.py's grid on the dev split (docs/decisions.md, "Locate's signal weights").
    frame: float = 2.0
    symbol: float = 1.0
    assignment: float = 2.0
    literal: float = 2.0
    path: float = 2.0
    message: float = 0.5
    import_: float = 0.5
    text: float = 0.5
    title: float = 2.0
    semantic: float = 1.0  # used only when the store has vectors (embeddings on)
    # Test and doc files are multiplied by this unless the caller asks for them.
    test_factor: float = 0.1
    # A path or module the text names only in its code (imports, calls through an
    # alias, code blocks), not in its prose, counts this share (on the dev split:
    # `import matplotlib.pyplot as plt` no longer points every matplotlib issue at
    # pyplot; Acc@1 +5 tasks of 120, none lost; docs/decisions.md, "Locate: a path
    # named only in the issue's code").
    code_only_path: float = 0.25
    # Frames: the deepest in-repo frame counts 1, each one further out this much less.
    frame_decay: float = 0.6
    # Chunk scores aggregated per file: the best, plus these shares of the next ones.
    chunk_shares: tuple[float, ...] = (1.0, 0.5, 0.25)
    # A name defined in more files than this names nothing in particular.
    max_definitions: int = 12
    # Names looked up as assignments (each one FTS query).
    max_assigned_names: int = 24
    # BM25: this many of the text's rarest terms, over this many chunks; a
    # term in more than this share of chunks is dropped (it says nothing).
    # 200 chunks, not 600: on the dev split the weak matches below them only
    # added noise (django Acc@5 83.9 -> 89.3, sympy equal) and cost CPU.
    max_terms: int = 64
    chunk_pool: int = 200
    max_term_share: float = 0.05
    max_postings: int = 8000
    # The title is short: its terms are kept unless nearly every chunk has them.
    max_title_term_share: float = 0.2
    # Embeddings compare the text with the code chunks of this many files, the
    # best by the other signals (a re-ranking: vectors of the rest are not read).
    semantic_pool: int = 20
    # The embedding model reads the title and the first prose sentences up to
    # this many words (semantic_query): on the dev split 32, 48 and 64 words
    # rank as well as the whole text cut at 256 tokens, 32 at a quarter of
    # its cost (docs/decisions.md, "Locate's embedding query").
    semantic_query_words: int = 32

    def weight(self, signal: str) -> float:
        return self.import_ if signal == "import" else getattr(self, signal)


@dataclass(frozen=True)
class Reason:
    signal: str  # one of SIGNALS
    detail: str  # what in the text pointed here (a frame, a name, a path, a message)
    line: int | None = None  # 0-based line in the file, when the evidence names one


@dataclass(frozen=True)
class ChunkRef:
    symbol: str | None
    start_line: int  # 0-based, inclusive
    end_line: int
    end_character: int
    score: float


@dataclass
class FileEvidence:
    path: str
    signals: dict[str, float] = field(default_factory=dict)  # signal -> 0..1
    reasons: list[Reason] = field(default_factory=list)
    chunks: dict[int, ChunkRef] = field(default_factory=dict)  # chunk id -> ref
    test_or_doc: bool = False

    def raise_signal(self, signal: str, value: float, reason: Reason | None) -> None:
        if value > self.signals.get(signal, 0.0):
            self.signals[signal] = value
        if reason is not None and not any(r.signal == reason.signal and r.detail == reason.detail
                                          for r in self.reasons):
            self.reasons.append(reason)

    def score(self, weights: LocateWeights, include_tests: bool) -> float:
        total = sum(weights.weight(s) * v for s, v in self.signals.items())
        if self.test_or_doc and not include_tests:
            total *= weights.test_factor
        return total


@dataclass
class LocatedFile:
    path: str
    score: float
    signals: dict[str, float]
    reasons: list[Reason]
    chunks: list[ChunkRef]


# Tests and their data, docs (and their example galleries), benchmarks and vendored
# third-party code (the shared classifier's vendored trees): a fix rarely starts there.
_TEST_OR_DOC = re.compile(
    r"(^|/)(tests?|testing|testdata|test_data|__tests__|spec|specs|docs?|examples?|galleries"
    r"|tutorials|bench|benchmarks?|asv_bench)/|\.min\.js$"
    r"|(^|/)(test_[^/]*|[^/]*_tests?\.[a-z]+|[^/]*\.(test|spec)\.[jt]sx?|conftest\.py)$"
    r"|\.(md|rst|txt)$")


def is_test_or_doc(path: str) -> bool:
    return is_vendored_path(path) or _TEST_OR_DOC.search(path) is not None


# Where a written path leaves the writer's machine for an installed package:
# what follows is an import path (`site-packages/shop/cart.py` is `shop.cart`).
_INSTALLED_DIRS = frozenset({"site-packages", "dist-packages"})
_PYTHON_FILES = (".py", ".pyi", ".pyx")
# A Python installation's standard library (`/usr/lib/python3.11/json/decoder.py`,
# `C:\Python311\Lib\logging\__init__.py`, pyenv's and conda's alike) or code
# with no file (`<frozen runpy>`, `<string>`): never the repository's.
_STDLIB_PATH = re.compile(r"(^|/)(lib|lib64)/python\d\.\d+/|(^|/)python\d+/lib/|(^|/)lib-python/"
                          r"|^<", re.I)


def _in_standard_library(written: str) -> bool:
    """A path into a Python installation's own library (not its site-packages)."""
    parts = written.replace("\\", "/").split("/")
    return (not any(p in _INSTALLED_DIRS or p.endswith(".egg") for p in parts)
            and _STDLIB_PATH.search("/".join(parts)) is not None)


def _is_absolute(written: str) -> bool:
    """A path of the writer's machine: from its root, home or a drive."""
    return written.startswith(("/", "~")) or re.match(r"[A-Za-z]:[\\/]", written) is not None


class PathIndex:
    """Indexed paths by their trailing components, a Python module resolver,
    and ``package_name``: the name of the JavaScript package a folder holds
    (its package.json's; ``""`` is the root), None when it holds none."""

    def __init__(self, paths: list[str],
                 package_name: Callable[[str], str | None] | None = None):
        self.package_name = package_name
        self.by_suffix: dict[str, list[str]] = {}
        for path in paths:
            parts = path.split("/")
            for first in range(len(parts)):
                self.by_suffix.setdefault("/".join(parts[first:]), []).append(path)
        self.resolver = ImportResolver(paths)

    def resolve_path(self, written: str) -> tuple[str, int] | None:
        """The indexed file a written path names (longest matching tail) and how
        many components matched. A bare tail of one component counts only when
        the path was written bare and one file has that name.

        The path of an installed package (after ``site-packages`` or
        ``dist-packages``) is an import path: it names a file only if it is one
        of the repository's modules from an import root (``shop/cart.py`` for
        ``src/shop/cart.py``), never another library's file of the same tail.
        The standard library names none. Another absolute path names a file
        only by its whole repository path or a tail from an import root (a
        checkout elsewhere), not by a tail its own application happens to share
        (``/home/me/app/utils/helpers.py`` is not ``src/shop/utils/helpers.py``);
        only Python's import roots are known, so other languages' absolute paths
        (a Cargo registry's ``…/shop-0.1.0/src/de/mod.rs``) still name a file by
        their longest unique tail."""
        normal = written.replace("\\", "/")
        parts = [p for p in normal.split("/") if p not in ("", ".")]
        if "node_modules" in parts:
            return self._from_node_modules(parts)
        installed = [i for i, part in enumerate(parts)
                     if part in _INSTALLED_DIRS or part.endswith(".egg")]
        if installed:
            rest = parts[installed[-1] + 1:]
            found = self._from_import_root(rest)
            return (found, len(rest)) if found is not None else None
        if _in_standard_library(normal):
            return None
        for first in range(len(parts)):
            tail = parts[first:]
            found = self.by_suffix.get("/".join(tail))
            if not found:
                continue
            if len(tail) == 1 and (len(parts) > 1 or len(found) > 1):
                return None
            if len(found) != 1:
                return None  # ambiguous tail
            if (_is_absolute(normal) and found[0].endswith(_PYTHON_FILES)
                    and found[0] != "/".join(tail) and self._from_import_root(tail) != found[0]):
                return None
            return found[0], len(tail)
        return None

    def _from_node_modules(self, parts: list[str]) -> tuple[str, int] | None:
        """A path into ``node_modules/<package>/`` (``@scope/name`` too) names the
        repository's file only when the package is one of the repository's own
        (by its package.json's name), read from that package's folder; another
        library's file of the same tail (``node_modules/other/lib/index.js``
        against the repository's ``lib/index.js``) names nothing."""
        at = len(parts) - 1 - parts[::-1].index("node_modules")
        rest = parts[at + 1:]
        size = 2 if rest[:1] and rest[0].startswith("@") else 1
        package, inner = "/".join(rest[:size]), "/".join(rest[size:])
        if not inner or self.package_name is None:
            return None
        for path in self.by_suffix.get(inner, ()):
            if path == inner or path.endswith("/" + inner):
                if self.package_name(path[:-len(inner)].rstrip("/")) == package:
                    return path, len(rest) - size
        return None

    def _from_import_root(self, parts: list[str]) -> str | None:
        """The file ``parts`` names read from an import root: ``shop/cart.py`` is
        ``src/shop/cart.py`` when ``src/shop`` is the package ``shop``; also a
        data file under a package (``shop/templates/cart.html``)."""
        if not parts:
            return None
        stem, dot, extension = parts[-1].rpartition(".")
        module = parts[:-1] + ([] if stem == "__init__" else [stem])
        if dot and extension in ("py", "pyi") and module and all(p.isidentifier() for p in module):
            found = self.resolver.resolve("", ImportRef(".".join(module), 0), "python")
            if found is not None and posixpath.basename(found) == parts[-1]:
                return found
        if len(parts) > 1 and parts[0].isidentifier():
            package = self.resolver.resolve("", ImportRef(parts[0], 0), "python")
            if package is not None and posixpath.basename(package).startswith("__init__."):
                path = posixpath.join(posixpath.dirname(package), *parts[1:])
                if path in self.resolver:
                    return path
        return None

    def resolve_module(self, dotted: str) -> tuple[str, str] | None:
        """(file, the module prefix that resolved) for ``a.b.c.Name``: the longest
        importable prefix."""
        parts = dotted.split(".")
        for end in range(len(parts), 0, -1):
            module = ".".join(parts[:end])
            found = self.resolver.resolve("", ImportRef(module, 0), "python")
            if found is not None:
                return found, module
        return None

    def resolve_module_tail(self, dotted: str) -> tuple[str, str] | None:
        """(file, the prefix that resolved) for a dotted name written from inside
        its package (``contrib.auth.validators``, ``syndication.views.Feed``):
        the one file whose path ends in two or more of its leading parts. A name
        starting at a standard-library module (``logging.handlers``,
        ``json.decoder.JSONDecodeError``) is the standard library's, not a
        namesake folder's in the repository."""
        parts = dotted.split(".")
        if parts[0] in sys.stdlib_module_names:
            return None
        for end in range(len(parts), 1, -1):
            stem = "/".join(parts[:end])
            for tail in (f"{stem}.py", f"{stem}/__init__.py"):
                found = self.resolve_path(tail)
                if found is not None and found[1] >= 2:
                    return found[0], ".".join(parts[:end])
        return None


_WORD_RUN = re.compile(r"[a-z0-9]+")


def _longest_run(message_words: list[str], text_words: list[str], shortest: int,
                 longest: int) -> int:
    """The most consecutive message words (``shortest`` to ``longest`` of them)
    that occur consecutively in the text, else 0."""
    # Words are [a-z0-9]+: joined by single spaces, a run of words is a substring.
    text = f" {' '.join(text_words)} "
    for size in range(min(longest, len(message_words)), shortest - 1, -1):
        for start in range(len(message_words) - size + 1):
            if f" {' '.join(message_words[start:start + size])} " in text:
                return size
    return 0


# A package.json larger than this is no package's manifest to read here.
_MANIFEST_BYTES = 1 << 20


def _chunks_with_tokens(conn: sqlite3.Connection, tokens: list[str], limit: int) -> list[tuple]:
    """Code chunks holding every one of ``tokens`` (index tokens: a word's
    ``expand_tokens(word)[0]``), at most ``limit``: (path, chunk id, symbol,
    start line, end line, text, symbol kind). The full-text pre-filter of the
    evidence that then reads the chunk's text (a message's run of words, an
    assignment, a quoted string)."""
    if not tokens:
        return []
    try:
        return conn.execute(
            "SELECT f.path, c.id, c.symbol, c.start_line, c.end_line, c.text, c.symbol_kind "
            "FROM fts_code JOIN chunks c ON c.id = fts_code.rowid JOIN files f ON f.id = c.file_id "
            "WHERE fts_code MATCH ? LIMIT ?",
            (" AND ".join(f'"{token}"' for token in tokens), limit)).fetchall()
    except sqlite3.OperationalError:
        return []


class Locator:
    """Ranks the indexed files of one store for an issue text. Holds the
    indexed paths, kept while the set of files is unchanged; safe to share
    between threads."""

    def __init__(self, weights: LocateWeights | None = None,
                 ranking: RankingConfig | None = None, root: Path | None = None):
        self.weights = weights or LocateWeights()
        self.ranking = ranking or RankingConfig()
        # The repository's folder: its package.json files name its JavaScript
        # packages (JSON is not indexed). Without it no node_modules path
        # names a file.
        self.root = root
        self._lock = threading.Lock()
        self._paths: tuple[str | None, PathIndex] | None = None

    def path_index(self, conn: sqlite3.Connection) -> PathIndex:
        key = paths_generation(conn)
        with self._lock:
            if self._paths is not None and self._paths[0] == key:
                return self._paths[1]
        index = PathIndex([r[0] for r in conn.execute("SELECT path FROM files")],
                          self._package_name)
        with self._lock:
            self._paths = (key, index)
        return index

    def _package_name(self, folder: str) -> str | None:
        """The ``name`` of ``folder``'s package.json under the root, if any (read
        as every file of the root is: never through a link out of it)."""
        if self.root is None:
            return None
        read = read_file(self.root, posixpath.join(folder, "package.json"), _MANIFEST_BYTES)
        if isinstance(read, Skipped) or len(read[0]) > _MANIFEST_BYTES:
            return None
        try:
            manifest = json.loads(read[0].decode("utf-8", errors="replace"))
        except ValueError:
            return None
        name = manifest.get("name") if isinstance(manifest, dict) else None
        return name if isinstance(name, str) else None

    # -- evidence ------------------------------------------------------------------------

    def evidence(self, conn: sqlite3.Connection, text: str,
                 semantic: SemanticIndex | None = None) -> dict[str, FileEvidence]:
        """Every file some evidence points at, with its signals and reasons;
        with a semantic index, ``semantic`` too."""
        issue = read_issue(text)
        # The query's vector is computed while the lexical signals are gathered
        # (the model runs outside the GIL); it is needed only at the end.
        vector = None
        if semantic is not None and self.weights.semantic > 0:
            vector = semantic.query_vector_soon(
                semantic_query(issue, self.weights.semantic_query_words))
        paths = self.path_index(conn)
        files: dict[str, FileEvidence] = {}

        def file(path: str) -> FileEvidence:
            found = files.get(path)
            if found is None:
                found = files[path] = FileEvidence(path, test_or_doc=is_test_or_doc(path))
            return found

        self._frame_evidence(issue, paths, file)
        self._path_evidence(conn, issue, paths, file)
        defined = self._symbol_evidence(conn, issue, paths, file)
        unassigned = self._assignment_evidence(conn, issue, defined, file)
        self._literal_evidence(conn, issue, unassigned, file)
        self._message_evidence(conn, issue, file)
        self._text_evidence(conn, issue, file)
        if vector is not None:
            self._semantic_evidence(conn, vector, semantic, files)
        self._frame_chunks(conn, files)
        return files

    def _frame_evidence(self, issue: IssueText, paths: PathIndex, file) -> None:
        in_repo: list[tuple[Frame, str]] = []
        for frame in issue.frames:
            resolved = paths.resolve_path(frame.path)
            if resolved is not None:
                in_repo.append((frame, resolved[0]))
        # The deepest in-repo frame counts 1, the next ones less and less.
        ordered = sorted(in_repo, key=lambda fp: fp[0].depth)
        for rank, (frame, path) in enumerate(ordered):
            value = self.weights.frame_decay ** rank
            line = frame.line - 1 if frame.line else None
            where = f"{frame.path}:{frame.line}" + (f" in {frame.function}" if frame.function else "")
            file(path).raise_signal("frame", value, Reason("frame", where, line))

    def _path_evidence(self, conn: sqlite3.Connection, issue: IssueText, paths: PathIndex,
                       file) -> None:
        for written in issue.paths:
            resolved = paths.resolve_path(written)
            if resolved is not None:
                value = 1.0 if issue.in_prose(written) else self.weights.code_only_path
                file(resolved[0]).raise_signal("path", value, Reason("path", written))
        for module in issue.modules:
            # Issue texts often write a module from inside its package
            # (`contrib.auth.validators` for `django.contrib.auth.validators`).
            found = paths.resolve_module(module) or paths.resolve_module_tail(module)
            if found is None:
                continue
            path, prefix = found
            # `django.db.models.Q` names the module `django.db.models`: a weaker pointer
            # than naming the module itself, and none when that module is a package's
            # __init__ (`sympy.Symbol`: the package re-exports everything).
            package = posixpath.basename(path).startswith("__init__.")
            if prefix != module and package:
                continue
            # A package's __init__ (`from django.db import models`) names a whole
            # package, hardly its file.
            value = 0.25 if package else 1.0 if prefix == module else 0.5
            if value == 0.5 and self._names_a_function(conn, path, module[len(prefix) + 1:]):
                value = 1.0
            if not issue.in_prose(prefix):
                value *= self.weights.code_only_path
            file(path).raise_signal("path", value, Reason("path", prefix))

    @staticmethod
    def _names_a_function(conn: sqlite3.Connection, path: str, rest: str) -> bool:
        """Whether ``rest`` (what follows the module in a dotted name) is a
        function or method ``path`` defines: ``query.Query.resolve_lookup_value``
        names the definition, so its file as fully as the module itself. A class
        does not (``django.db.utils.IntegrityError``: tracebacks name exception
        types by their module, which is seldom where the fix goes)."""
        if "." not in rest and not rest[:1].islower():
            return False
        return conn.execute(
            "SELECT 1 FROM symbols s JOIN files f ON f.id = s.file_id WHERE f.path = ? AND "
            "s.symbol = ? LIMIT 1", (path, rest)).fetchone() is not None

    def _symbol_evidence(self, conn: sqlite3.Connection, issue: IssueText, paths: PathIndex,
                         file) -> set[str]:
        """Raises ``symbol`` on defining files; returns the names some file
        outside tests and docs defines."""
        names: dict[str, list[str]] = {}  # last segment -> the written names ending in it
        for written in issue.identifiers:
            names.setdefault(written.split(".")[-1], []).append(written)
        if not names:
            return set()
        lowered = sorted({n.lower() for n in names})
        rows = []
        for start in range(0, len(lowered), 500):
            batch = lowered[start:start + 500]
            rows += conn.execute(
                # The symbol table, each definition with the chunk it was packed into.
                f"SELECT f.path, s.symbol, s.symbol_kind, s.name, c.id, c.start_line, c.end_line, "
                f"s.end_line - s.start_line, s.start_line, c.symbol FROM symbols s "
                f"JOIN files f ON f.id = s.file_id "
                f"JOIN chunks c ON c.file_id = s.file_id AND c.start_line <= s.start_line "
                f"AND s.start_line <= c.end_line "
                f"WHERE s.name IN ({','.join('?' * len(batch))}) AND c.kind = 'code'",
                batch).fetchall()
        defined: dict[str, dict[str, list]] = {}  # name -> path -> rows
        for row in rows:
            name = row[1].rsplit(".", 1)[-1]
            if name in names:
                defined.setdefault(name, {}).setdefault(row[0], []).append(row)
        # Names written with a module (`from m import Name`, `m.Name`): that module's file,
        # or the file it imports the name from, is the definition meant.
        qualified: dict[str, set[str]] = {}
        for module, name in issue.imported:
            qualified.setdefault(name, set()).add(module)
        for written in issue.identifiers:
            if "." in written:
                head, name = written.rsplit(".", 1)
                qualified.setdefault(name, set()).add(head)
        strength: dict[str, float] = {}
        for name, by_path in defined.items():
            chosen = self._qualified_definitions(conn, name, qualified.get(name, ()), by_path,
                                                 paths, file)
            if chosen is not None:
                by_path = {p: rows for p, rows in by_path.items() if p in chosen}
            shares = self._shares(by_path, issue.prominence(name))
            for path, rows_here in by_path.items():
                if path not in shares:
                    continue
                evidence = file(path)
                before = strength.get(path, 0.0)
                strength[path] = 1.0 - (1.0 - before) * (1.0 - shares[path])
                first = min(rows_here, key=lambda r: r[8])
                evidence.raise_signal("symbol", strength[path],
                                      Reason("symbol", first[1], first[8]))
                for row in rows_here[:2]:
                    evidence.chunks.setdefault(row[4], ChunkRef(row[9], row[5], row[6], -1, 0.0))
        return {name for name, by_path in defined.items() if not all(map(is_test_or_doc, by_path))}

    def _shares(self, paths, prominence: float) -> dict[str, float]:
        """Each file's share of a name (or string) ``paths`` hold: ``prominence``/k
        over the k files outside tests and docs when some hold it (a test tree's
        copies, such as a test project's ``conf.py``, do not dilute the source's),
        the tests' own shares over all k files; none when the name is in more than
        ``max_definitions`` files (it names nothing in particular)."""
        source = [p for p in paths if not is_test_or_doc(p)]
        counted = len(source) or len(paths)
        if not paths or counted > self.weights.max_definitions:
            return {}
        return {p: prominence / (counted if p in source or not source else len(paths))
                for p in paths}

    def _assignment_evidence(self, conn: sqlite3.Connection, issue: IssueText, defined: set[str],
                             file) -> dict[str, list[tuple]]:
        """``assignment``: a name no class or function defines but a file assigns at
        module level or in a class body (a setting, a constant, a class attribute:
        ``FILE_UPLOAD_PERMISSIONS = None``),
        p/k over the k files assigning it, as for ``symbol``. Returns the names
        looked for that no file outside tests and docs assigns, each with the
        chunks holding it (:func:`_chunks_with_tokens`' rows)."""
        names = dict.fromkeys(w.split(".")[-1] for w in issue.identifiers)  # first mention first
        wanted = [n for n in names
                  if n not in defined and ("_" in n.strip("_") or (n.isupper() and len(n) > 2))]
        wanted = wanted[:self.weights.max_assigned_names]
        unassigned: dict[str, list[tuple]] = {}
        strength: dict[str, float] = {}
        for name in wanted:
            # At module level, or one level into a class body (not a function's local).
            assigned = re.compile(r"^(?P<indent>(?:    |\t)?)" + re.escape(name)
                                  + r"[ \t]*(?::[^=\n]+)?=(?!=)", re.M)
            by_path: dict[str, tuple] = {}
            # The name as the index spells it whole (a name too long to be indexed
            # whole is in no chunk).
            rows = _chunks_with_tokens(conn, expand_tokens(name)[:1], 200)
            for path, chunk_id, symbol, start, end, chunk_text, kind in rows:
                if name not in chunk_text:
                    continue
                found = next((m for m in assigned.finditer(chunk_text)
                              if not m.group("indent") or kind == "class"), None)
                if found is not None and path not in by_path:
                    line = start + chunk_text.count("\n", 0, found.start())
                    by_path[path] = (chunk_id, symbol, start, end, line)
            if all(map(is_test_or_doc, by_path)):
                unassigned[name] = rows
            self._raise_shared(issue, "assignment", name, by_path, strength, file)
        return unassigned

    def _literal_evidence(self, conn: sqlite3.Connection, issue: IssueText,
                          unnamed: dict[str, list[tuple]], file) -> None:
        """``literal``: a name a file registers as a string, not a symbol: a
        command-line option (``addoption("--import-mode", …)``), a message id or
        name in a table (``"W0611": ("…", "unused-import", …)``), a directive, or a
        configuration key no file outside tests defines or assigns
        (``unnamed``, with the chunks holding each: ``add_config_value("my_option",
        …)``). The files holding it as a whole quoted string literal, p/k over the
        k of them as for ``symbol``."""
        strength: dict[str, float] = {}
        for name in list(dict.fromkeys([*issue.literals, *unnamed]))[:self.weights.max_assigned_names]:
            # An option may be registered without its dashes (`("max-line-length", {…})`).
            quoted = re.compile(r"""(?P<quote>['"])""" + ("(?:--)?" + re.escape(name[2:])
                                                         if name.startswith("--") else re.escape(name))
                                + r"(?P=quote)")
            core = name.lstrip("-")
            rows = unnamed.get(name)
            if rows is None:
                words = _WORD_RUN.findall(name.lower())
                rows = _chunks_with_tokens(
                    conn, [tokens[0] for w in words if (tokens := expand_tokens(w))], 200)
            by_path: dict[str, tuple] = {}
            for path, chunk_id, symbol, start, end, chunk_text, _ in rows:
                found = quoted.search(chunk_text) if core in chunk_text else None
                if found is not None and path not in by_path:
                    line = start + chunk_text.count("\n", 0, found.start())
                    by_path[path] = (chunk_id, symbol, start, end, line)
            self._raise_shared(issue, "literal", name, by_path, strength, file)

    def _raise_shared(self, issue: IssueText, signal: str, name: str, by_path: dict[str, tuple],
                      strength: dict[str, float], file) -> None:
        """Raises ``signal`` on the files holding ``name`` (path -> chunk id, its
        symbol, start, end, the line found), each by its share (:meth:`_shares`),
        several names on one file combined noisy-or in ``strength``."""
        for path, share in self._shares(by_path, issue.prominence(name)).items():
            chunk_id, symbol, start, end, line = by_path[path]
            before = strength.get(path, 0.0)
            strength[path] = 1.0 - (1.0 - before) * (1.0 - share)
            evidence = file(path)
            evidence.raise_signal(signal, strength[path], Reason(signal, name, line))
            evidence.chunks.setdefault(chunk_id, ChunkRef(symbol, start, end, -1, 0.0))

    def _qualified_definitions(self, conn, name: str, modules, by_path, paths: PathIndex,
                               file) -> set[str] | None:
        """The files among ``by_path`` a module qualification points at, following
        one import step from the module to where it takes the name from."""
        chosen: set[str] = set()
        for module in modules:
            owner = module.split(".")[-1]
            if owner[:1].isupper():  # `Model.save`, `models.Model.save`: a class, not a module
                chosen |= {p for p, rows in by_path.items()
                           if any(r[1].endswith(f"{owner}.{name}") for r in rows)}
                continue
            found = paths.resolve_module(module)
            if found is None:
                continue
            module_file = found[0]
            if module_file in by_path:
                chosen.add(module_file)
                continue
            for (target,) in conn.execute(
                    "SELECT i.target FROM imports i JOIN files f ON f.id = i.file_id "
                    "WHERE f.path = ? AND i.target IS NOT NULL AND (i.spec LIKE ? OR i.spec = ?)",
                    (module_file, f"%:{name}", name)):
                if target in by_path or self._defines(conn, target, name):
                    chosen.add(target)
                    file(target).raise_signal("import", 1.0,
                                              Reason("import", f"{name} via {module_file}"))
        return chosen or None

    @staticmethod
    def _defines(conn, path: str, name: str) -> bool:
        return conn.execute(
            "SELECT 1 FROM symbols s JOIN files f ON f.id = s.file_id WHERE f.path = ? AND "
            "s.name = ? LIMIT 1", (path, name.lower())).fetchone() is not None

    def _message_evidence(self, conn: sqlite3.Connection, issue: IssueText, file) -> None:
        for message in issue.messages[:12]:
            words = _WORD_RUN.findall(message.lower())
            if len(words) < 3:
                continue
            keys = sorted({w for w in words if len(w) > 2 and not w.isdigit()},
                          key=lambda w: (-len(w), w))[:5]
            if len(keys) < 2:
                continue
            # Each word as the index spells it (its stem), all of them in one chunk.
            rows = _chunks_with_tokens(conn, [tokens[0] for k in keys if (tokens := expand_tokens(k))], 40)
            needed = min(len(words), 4)
            for path, chunk_id, symbol, start, end, chunk_text, _ in rows:
                run = _longest_run(words, _WORD_RUN.findall(chunk_text.lower()),
                                   shortest=min(3, needed), longest=8)
                if run == 0:
                    continue
                value = min(1.0, run / needed)
                evidence = file(path)
                evidence.raise_signal("message", value,
                                      Reason("message", message[:120], start))
                evidence.chunks.setdefault(chunk_id, ChunkRef(symbol, start, end, -1, 0.0))

    def _terms(self, conn: sqlite3.Connection, text: str, max_share: float) -> list[str]:
        """The text's terms that say something: those in more than ``max_share``
        of code chunks dropped, the rarest kept first."""
        terms = query_terms(text)
        if not terms:
            return []
        # The table's own row count (not its largest rowid: re-indexing gives a
        # file's chunks new ids, so that grows with the store's age).
        counts = term_counts(conn, "fts_code")
        frequency = counts.of(conn, "fts_code", terms)
        kept = [t for t in terms if 0 < frequency.get(t, 0) <= max_share * counts.rows]
        kept.sort(key=lambda t: frequency[t])
        # BM25 costs about as much per matching chunk as per term: stop adding
        # terms once their postings would pass the budget.
        chosen: list[str] = []
        postings = 0
        for term in kept[:self.weights.max_terms]:
            postings += frequency[term]
            if chosen and postings > self.weights.max_postings:
                break
            chosen.append(term)
        return chosen

    def _text_evidence(self, conn: sqlite3.Connection, issue: IssueText, file) -> None:
        """``text``: the whole text's rarer terms; ``title``: the title's terms."""
        weights = self.weights
        for signal, text, share in (("text", issue.raw, weights.max_term_share),
                                    ("title", issue.title, weights.max_title_term_share)):
            terms = self._terms(conn, text, share)
            if terms:
                self._similarity(conn, terms, signal, file)

    def _similarity(self, conn: sqlite3.Connection, terms: list[str], signal: str, file) -> None:
        scores = bm25_scores(conn, "fts_code", terms, self.ranking, limit=self.weights.chunk_pool)
        if not scores:
            return
        ids = list(scores)
        rows = conn.execute(
            f"SELECT c.id, f.path, c.symbol, c.start_line, c.end_line FROM chunks c "
            f"JOIN files f ON f.id = c.file_id WHERE c.id IN ({','.join('?' * len(ids))})",
            ids).fetchall()
        by_file: dict[str, list[tuple[float, tuple]]] = {}
        for row in rows:
            by_file.setdefault(row[1], []).append((scores[row[0]], row))
        aggregated: dict[str, float] = {}
        shares = self.weights.chunk_shares
        for path, scored in by_file.items():
            scored.sort(key=lambda sr: -sr[0])
            aggregated[path] = sum(share * s for share, (s, _) in zip(shares, scored))
        top = max(aggregated.values(), default=0.0) or 1.0
        for path, value in aggregated.items():
            scored = by_file[path]
            evidence = file(path)
            evidence.raise_signal(signal, value / top,
                                  Reason(signal, f"{len(scored)} matching chunks", scored[0][1][3]))
            for score, row in scored[:3]:
                known = evidence.chunks.get(row[0])
                if known is None or known.score < score:
                    evidence.chunks[row[0]] = ChunkRef(row[2], row[3], row[4], -1, score)

    def _semantic_evidence(self, conn: sqlite3.Connection, query: Future,
                           semantic: SemanticIndex, files: dict[str, FileEvidence]) -> None:
        """``semantic``: cosine similarity of the text's title and opening prose
        (``query``: its vector, being computed) with the embedded code chunks of
        the best ``semantic_pool`` files so far, aggregated per file like ``text``
        and scaled to the best file. A model that fails leaves the answer lexical."""
        try:
            vector = query.result()
        except Exception:  # the model broke mid-request: answer without it
            log.exception("locate: the query embedding failed; ranking without it")
            return
        pool = [path for path, _ in self.rank(files, self.weights.semantic_pool, False)]
        if vector is None or not pool:
            return
        rows = conn.execute(
            f"SELECT f.path, c.id, c.embed_hash FROM chunks c JOIN files f ON f.id = c.file_id "
            f"WHERE f.path IN ({','.join('?' * len(pool))}) AND c.kind = 'code'", pool).fetchall()
        similarity = semantic.similarities(vector, sorted({row[2] for row in rows}))
        by_file: dict[str, list[float]] = {}
        for path, _, embed_hash in rows:
            if embed_hash in similarity:
                by_file.setdefault(path, []).append(max(similarity[embed_hash], 0.0))
        shares = self.weights.chunk_shares
        aggregated = {path: sum(share * s for share, s in zip(shares, sorted(scores, reverse=True)))
                      for path, scores in by_file.items()}
        top = max(aggregated.values(), default=0.0) or 1.0
        for path, value in aggregated.items():
            files[path].raise_signal("semantic", value / top,
                                     Reason("semantic", f"cosine {max(by_file[path]):.2f}"))

    def _frame_chunks(self, conn: sqlite3.Connection, files: dict[str, FileEvidence]) -> None:
        """The chunk around each frame's line is one of its file's best chunks."""
        for evidence in files.values():
            for reason in evidence.reasons:
                if reason.signal != "frame" or reason.line is None:
                    continue
                row = conn.execute(
                    "SELECT c.id, c.symbol, c.start_line, c.end_line FROM chunks c JOIN files f "
                    "ON f.id = c.file_id WHERE f.path = ? AND c.start_line <= ? AND c.end_line >= ? "
                    "ORDER BY c.end_line - c.start_line LIMIT 1",
                    (evidence.path, reason.line, reason.line)).fetchone()
                if row is not None:
                    evidence.chunks.setdefault(row[0], ChunkRef(row[1], row[2], row[3], -1, 1e9))

    # -- ranking -------------------------------------------------------------------------

    def rank(self, files: dict[str, FileEvidence], n: int, include_tests: bool,
             weights: LocateWeights | None = None) -> list[tuple[str, float]]:
        weights = weights or self.weights
        scored = [(path, ev.score(weights, include_tests)) for path, ev in files.items()]
        scored = [(p, s) for p, s in scored if s > 0]
        scored.sort(key=lambda ps: (-ps[1], ps[0]))
        return scored[:n]

    def locate(self, conn: sqlite3.Connection, text: str, n: int = 10,
               include_tests: bool = False, max_chunks: int = 3,
               semantic: SemanticIndex | None = None) -> list[LocatedFile]:
        files = self.evidence(conn, text, semantic)
        ranked = self.rank(files, n, include_tests)
        out: list[LocatedFile] = []
        for path, score in ranked:
            evidence = files[path]
            chunks = sorted(evidence.chunks.items(), key=lambda kv: (-kv[1].score, kv[1].start_line))
            refs = _with_end_characters(conn, chunks[:max_chunks])
            reasons = sorted(evidence.reasons,
                             key=lambda r: -self.weights.weight(r.signal) * evidence.signals.get(r.signal, 0))
            out.append(LocatedFile(path, round(score, 6),
                                   {s: round(v, 4) for s, v in evidence.signals.items()},
                                   reasons[:6], refs))
        return out



def _with_end_characters(conn: sqlite3.Connection, chunks: list[tuple[int, ChunkRef]]) -> list[ChunkRef]:
    """Chunk refs with the length of their last line (the LSP range's end)."""
    if not chunks:
        return []
    ids = [cid for cid, _ in chunks]
    ends = dict(conn.execute(
        f"SELECT id, text FROM chunks WHERE id IN ({','.join('?' * len(ids))})", ids).fetchall())
    return [replace(ref, end_character=len(ends.get(cid, "").rsplit("\n", 1)[-1]),
                    score=round(ref.score, 6) if ref.score < 1e9 else 0.0)
            for cid, ref in chunks if cid in ends]
