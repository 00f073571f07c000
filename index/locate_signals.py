"""Locate, step 2: the evidence. Each kind of evidence an issue text carries
(:mod:`ctxls.index.locate_text`) is looked up in the index and becomes a
signal in 0..1 on the files it points at; each file some evidence points at
is a candidate with one :class:`FileEvidence`, its feature record's raw part.

* ``frame``: the file of a traceback frame inside the repository; the deepest
  in-repo frame of a traceback counts most (frames that resolve to no indexed
  file, such as the standard library or third-party packages, count nothing).
* ``symbol``: the file defining a named class or function; a name defined in
  one file counts fully, one defined in k files 1/k (combined noisy-or). A
  qualified name (``TzinfoParser.parse``, ``Beta::parse``) names its owner's
  definition; one after a standard-library module (``time.time()``) none of
  the repository's Python definitions.
* ``assignment``: the file assigning (at module level or in a class body) a
  name no class or function defines: a setting, a constant, an attribute.
* ``literal``: the file holding, as a whole string literal, a name the text
  quotes that projects register by string: a command-line option, a message
  id or name, a directive, a configuration key no file defines or assigns.
* ``path``: a file path (outside a stack frame) or module name the text mentions
  (also written from inside its package: ``contrib.auth.validators``); a dotted
  name going on to a function or method the module defines names it fully.
* ``message``: an error message found word for word in the file (the raise
  site), or matching a format string the file holds (``"cannot load %s"``,
  ``"{name} is missing"``) with its placeholders filled in.
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

How the signals weigh against each other is not decided here:
index/locate_scorer.py scores the records.
"""

from __future__ import annotations

import json
import logging
import posixpath
import re
import sys
import threading
import tomllib
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path

from ctxls.index.cancel import check_cancelled
from ctxls.index.discovery import Skipped, read_file
from ctxls.index.languages import language_for_path
from ctxls.index.locate_paths import PathIndex, go_module_path
from ctxls.index.locate_text import Frame, IssueText, read_issue, semantic_query, written_qualified
from ctxls.index.paths import is_test_or_doc
from ctxls.index.ranking import RankingConfig, bm25_scores, term_counts
from ctxls.index.semantic import SemanticIndex
from ctxls.index.store import generated_paths, paths_generation
from ctxls.index.tokenize import NO_SPACE_SCRIPTS, expand_tokens, fold, query_terms

log = logging.getLogger(__name__)

SIGNALS = ("frame", "symbol", "assignment", "literal", "path", "message", "import", "text",
           "title", "semantic")


@dataclass(frozen=True)
class SignalConfig:
    """How the signals are gathered (not how they weigh: locate_scorer.py)."""
    # A path, module or quoted name the text writes only in its code (imports,
    # calls through an alias, pasted tool output), not in its prose, counts this
    # share: `import plotlib.pyplot as plt` is how a reporter reached the code.
    # Re-measured on sympy and scikit-learn (docs/decisions.md, "matplotlib is
    # reserved"; scikit-learn has since been reserved too): off cost a dev task
    # (Acc@1 71.7 -> 69.8), test unchanged.
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
    # Fix commits, re-dumped per value (today's model, history, embeddings
    # off): dev Acc@1 / MRR at 0.1, 0.2, 0.4, 0.6, 1.0: 50.6 / 0.750, 53.2 /
    # 0.775, 53.9 / 0.785, 53.9 / 0.785, 53.9 / 0.786; 0.4, the smallest
    # change that takes the gain, keeps a bound on the title's postings; test
    # 47.9 / 0.728 -> 49.0 / 0.738 (docs/decisions.md, "Locate's
    # signal-gathering constants on fix commits").
    max_title_term_share: float = 0.4
    # Embeddings compare the text with the code chunks of this many files, the
    # best by the other signals (a re-ranking: vectors of the rest are not read).
    semantic_pool: int = 20
    # The embedding model reads the title and the first prose sentences up to
    # this many words (semantic_query): on the dev split 32, 48 and 64 words
    # rank as well as the whole text cut at 256 tokens, 32 at a quarter of
    # its cost (BENCHMARKS.md, "Locate").
    semantic_query_words: int = 32


# A chunk a frame's or a written path's line names outranks every scored one
# (text matches score far below); each next such line's chunk one step less.
# Answers show such a chunk's score as 0.0 (it has none of its own).
PLACED_CHUNK_SCORE = 1e9


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
    # The git-history features (locate_history.HISTORY_FEATURES), set by the Locator.
    history: dict[str, float] = field(default_factory=dict)
    # Its text says a program wrote it (the store's files.generated).
    generated: bool = False

    def scorer_inputs(self) -> dict[str, float]:
        """What the scorer reads of this candidate besides its path
        (locate_scorer.features): its signals, its history, and
        ``generated`` when its text says so."""
        return self.signals | self.history | ({"generated": 1.0} if self.generated else {})

    def raise_signal(self, signal: str, value: float, reason: Reason | None) -> None:
        if value > self.signals.get(signal, 0.0):
            self.signals[signal] = value
        if reason is not None and not any(r.signal == reason.signal and r.detail == reason.detail
                                          for r in self.reasons):
            self.reasons.append(reason)


_WORD_RUN = re.compile(r"[a-z0-9]+")


def _longest_run(message_words: list[str], text_words: list[str], shortest: int,
                 longest: int) -> int:
    """The most consecutive message words (``shortest`` to ``longest`` of them)
    that occur consecutively in the text, else 0."""
    return _longest_run_at(message_words, text_words, shortest, longest)[0]


def _longest_run_at(message_words: list[str], text_words: list[str], shortest: int,
                    longest: int) -> tuple[int, int]:
    """:func:`_longest_run`, and the index in ``text_words`` of the run's first
    word (0 without a run)."""
    # Words are [a-z0-9]+: joined by single spaces, a run of words is a substring
    # (and the spaces before it count the words before it).
    text = f" {' '.join(text_words)} "
    for size in range(min(longest, len(message_words)), shortest - 1, -1):
        for start in range(len(message_words) - size + 1):
            found = text.find(f" {' '.join(message_words[start:start + size])} ")
            if found >= 0:
                return size, text.count(" ", 0, found)
    return 0, 0


# What a message fills into a format string's placeholders, mostly: a quoted
# value (in any quote marks: smart punctuation, GCC's `‘x’ undeclared`), a
# dotted name or path, a number, an id in hex (a UUID, a commit's or an
# object's hash: `f47ac10b-58cc-4372-a567-0e02b2c3d479`, `a1b2c3d`, whose
# letter groups are no words of the format string's).
# A path-like word is matched from its start and up to its first separator
# (the same matches as `\S*[./\\]\S*\w`, which backtracked in cubic time:
# a message holding 2,000 slashes took 20 s to read, 40,000 days).
_FILLED_IN = re.compile(r"'[^'\n]*'|\"[^\"\n]*\"|`[^`\n]*`|‘[^‘’\n]*’|“[^“”\n]*”|„[^„“”\n]*[“”]|«[^«»\n]*»"
                        r"|「[^「」\n]*」|『[^『』\n]*』|[^\s./\\]*[./\\]\S*\w"
                        r"|\b[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}\b|\b(?=[a-fA-F]*\d)[0-9a-fA-F]{7,}\b"
                        r"|\b\d[\w.]*")
# A string literal on one line: quoted, or in backticks (JavaScript's and
# TypeScript's template literals, Go's raw strings: `unknown option ${name}`,
# fmt.Errorf(`reading %q: %w`, …)).
_STRING_LITERAL = re.compile(r"""(['"`])((?:\\.|(?!\1)[^\\\n])*)\1""")
_QUOTE_MARK = re.compile(r"""['"`]""")
# printf's (`%s`, `%(name)s`, `%-8.3f`, C's `%zu` and `%lld`, Go's `%v`, `%w`,
# `%T`, `%t`, `%b`, Java's and POSIX's positional `%1$s`, Objective-C's `%@`),
# Python's format and f-strings (`{}`, `{name!r}`, `{0:>4}`), a template's
# `{{name}}` (Handlebars, Jinja, Angular's and Vue's messages), JavaScript's
# and Ruby's `${x}`, `#{x}`, Swift's `\(x)`, and Kotlin's, Dart's, PHP's and
# the shell's `$name`.
_PLACEHOLDER = re.compile(r"%(?:\d+\$|\(\w+\))?[-#0 +]*(?:\d+|\*)?(?:\.\d+)?(?:hh|ll|[hljztLq])?"
                          r"[sdrifgGeExXcvqpaou@wTtb]"
                          r"|\{\{[^{}\n]*\}\}|[$#]?\{[^{}\n]*\}|\\\([^()\n]*\)|\$[A-Za-z_]\w*")
_ESCAPE = re.compile(r"\\[ntr]")
# Fixed words a format string needs around its placeholders to say anything,
# and those that, matched whole, count as fully as the message's own 4 words.
_FORMAT_WORDS = 2
_FORMAT_FULL = 3


def _string_literals(text: str) -> Iterator[re.Match]:
    """The string literals in ``text``, left to right: what
    ``_STRING_LITERAL.finditer`` reads, in linear time. The regex read a
    literal never closed to its line's end again from each escaped quote
    mark in it (a repository's line of `'\\'\\'…`: a minute a chunk); a
    quote mark after one that found no closing mark on its line finds none
    either (it is escaped, and the reading after it is the same)."""
    unclosed_until: dict[str, int] = {}  # a quote mark: the line's end where one found no closing mark
    at = 0
    while (mark := _QUOTE_MARK.search(text, at)) is not None:
        start, quote = mark.start(), mark.group()
        if unclosed_until.get(quote, -1) < start:
            literal = _STRING_LITERAL.match(text, start)
            if literal is not None:
                yield literal
                at = literal.end()
                continue
            line_end = text.find("\n", start)
            unclosed_until[quote] = len(text) if line_end < 0 else line_end
        at = start + 1


def _format_words(chunk_text: str, message: str) -> int:
    """The most fixed words of a format string in ``chunk_text`` (a string
    literal with placeholders) that ``message`` fills in, else 0."""
    return _format_words_at(chunk_text, message)[0]


def _format_words_at(chunk_text: str, message: str) -> tuple[int, int]:
    """:func:`_format_words`, and where in ``chunk_text`` that format string
    starts (0 without one)."""
    best, best_at = 0, 0
    for match in _string_literals(chunk_text):
        body = _ESCAPE.sub(" ", match.group(2))
        pieces = _PLACEHOLDER.split(body)
        if len(pieces) < 2:
            continue
        pieces = [p.strip() for p in pieces]
        words = sum(len(_WORD_RUN.findall(p.lower())) for p in pieces)
        if words <= best or words < _FORMAT_WORDS:
            continue
        if _filled_in([p for p in pieces if p], message):
            best, best_at = words, match.start()
    return best, best_at


def _filled_in(fixed: list[str], message: str) -> bool:
    """Whether ``message`` holds ``fixed`` in order, any case, each apart
    from the one before by at least one character (a placeholder's value).
    Leftmost first is enough, and linear: the regex it replaces (the parts
    joined by `\\s*.+?\\s*`) backtracked as a power of the message's length,
    a minute for a 350-character issue near one of the repository's formats."""
    text = message.lower()
    at = 0
    for part in map(str.lower, fixed):
        found = text.find(part, at)
        if found < 0:
            return False
        at = found + len(part) + 1
    return True


def _noisy_or(before: float, share: float) -> float:
    return 1.0 - (1.0 - before) * (1.0 - share)


def _member_of(symbol: str, owner: str, name: str) -> bool:
    """Whether ``symbol`` (a definition as its file names it: ``Outer.Inner.parse``)
    is ``owner``'s ``name`` (``Inner.parse``; not ``BaseInner.parse``)."""
    return symbol == f"{owner}.{name}" or symbol.endswith(f".{owner}.{name}")


# A character of a name, as the reader counts one (locate_text's _NAME_CHAR),
# and a name or a dotted run of them as written.
_NAME_CHAR = rf"[^\W{NO_SPACE_SCRIPTS}]"
_NAME_CHAIN = re.compile(rf"(?<!{_NAME_CHAR})(?<!\.){_NAME_CHAR}+(?:\.{_NAME_CHAR}+)*")


def _standard_library_names(issue: IssueText, paths: PathIndex) -> set[str]:
    """The names the text writes only as attributes of a Python standard-library
    module (`datetime.date.today()`, `time.time()`): the standard library's,
    not the repository's namesakes. A module the repository holds itself
    (a top-level `types.py`) is its own."""
    modules: dict[str, bool] = {}

    def standard(first: str) -> bool:
        if first not in modules:
            modules[first] = first in sys.stdlib_module_names and paths.resolve_module(first) is None
        return modules[first]

    candidates = {w.rsplit(".", 1)[1] for w in issue.identifiers if "." in w and standard(w.split(".", 1)[0])}
    if not candidates:
        return set()
    # One pass over the text (a search per name was quadratic: 12 s for 40,000
    # characters of `os.n1 os.n2 …`): the parts of every other mention.
    elsewhere: set[str] = set()
    for match in _NAME_CHAIN.finditer(issue.raw):
        parts = match.group(0).split(".")
        if len(parts) == 1 or not standard(parts[0]):
            elsewhere.update(parts)
    return candidates - elsewhere


# A package.json larger than this is no package's manifest to read here.
_MANIFEST_BYTES = 1 << 20


def _chunks_with_tokens(conn, tokens: list[str], limit: int) -> list[tuple]:
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
    except conn.OperationalError:
        return []


class Signals:
    """Gathers the evidence of an issue text on the indexed files of one
    store. Holds the indexed paths, kept while the set of files is unchanged;
    safe to share between threads."""

    def __init__(self, config: SignalConfig | None = None,
                 ranking: RankingConfig | None = None, root: Path | None = None):
        self.config = config or SignalConfig()
        self.ranking = ranking or RankingConfig()
        # The repository's folder: its package.json files name its JavaScript
        # packages (JSON is not indexed). Without it no node_modules path
        # names a file.
        self.root = root
        self._lock = threading.Lock()
        self._paths: tuple[str | None, PathIndex] | None = None

    def path_index(self, conn) -> PathIndex:
        key = paths_generation(conn)
        with self._lock:
            if self._paths is not None and self._paths[0] == key:
                return self._paths[1]
        index = PathIndex([r[0] for r in conn.execute("SELECT path FROM files")],
                          self._package_name, self._crate_name, root=self.root,
                          go_module=self._go_module)
        with self._lock:
            self._paths = (key, index)
        return index

    def _manifest(self, folder: str, name: str) -> str | None:
        """``folder``'s manifest ``name`` under the root, if any (read as every
        file of the root is: never through a link out of it)."""
        if self.root is None:
            return None
        read = read_file(self.root, posixpath.join(folder, name), _MANIFEST_BYTES)
        if isinstance(read, Skipped) or len(read[0]) > _MANIFEST_BYTES:
            return None
        return read[0].decode("utf-8", errors="replace")

    def _package_name(self, folder: str) -> str | None:
        """The ``name`` of ``folder``'s package.json under the root, if any."""
        text = self._manifest(folder, "package.json")
        try:
            manifest = json.loads(text) if text is not None else None
        except (ValueError, RecursionError):  # not JSON, or nested past the parser's recursion
            return None
        name = manifest.get("name") if isinstance(manifest, dict) else None
        return name if isinstance(name, str) else None

    def _crate_name(self, folder: str) -> str | None:
        """The ``[package]`` ``name`` of ``folder``'s Cargo.toml under the root, if any."""
        text = self._manifest(folder, "Cargo.toml")
        try:
            manifest = tomllib.loads(text) if text is not None else None
        except (ValueError, RecursionError):  # tomllib.TOMLDecodeError, or nested past its recursion
            return None
        package = manifest.get("package") if isinstance(manifest, dict) else None
        name = package.get("name") if isinstance(package, dict) else None
        return name if isinstance(name, str) else None

    def _go_module(self, folder: str) -> str | None:
        """The module path of ``folder``'s go.mod under the root, if any."""
        text = self._manifest(folder, "go.mod")
        return go_module_path(text) if text is not None else None

    # -- evidence ------------------------------------------------------------------------

    def evidence(self, conn, text: str, semantic: SemanticIndex | None = None,
                 best: Callable[[dict[str, FileEvidence], int], list[str]] | None = None,
                 ) -> dict[str, FileEvidence]:
        """Every file some evidence points at, with its signals and reasons;
        with a semantic index and ``best`` (the best n files by the other
        signals, by the scorer), ``semantic`` too."""
        issue = read_issue(text)
        # The query's vector is computed while the lexical signals are gathered
        # (the model runs outside the GIL); it is needed only at the end.
        vector = None
        if semantic is not None and best is not None:
            vector = semantic.query_vector_soon(
                semantic_query(issue, self.config.semantic_query_words))
        paths = self.path_index(conn)
        files: dict[str, FileEvidence] = {}

        def file(path: str) -> FileEvidence:
            found = files.get(path)
            if found is None:
                found = files[path] = FileEvidence(path, test_or_doc=is_test_or_doc(path))
            return found

        # Each kind of evidence is a step a cancelled request stops at
        # (index/cancel.py): a long issue text takes its time over each.
        self._frame_evidence(issue, paths, file)
        check_cancelled()
        self._path_evidence(conn, issue, paths, file)
        check_cancelled()
        defined = self._symbol_evidence(conn, issue, paths, file)
        check_cancelled()
        unassigned = self._assignment_evidence(conn, issue, defined, file)
        check_cancelled()
        self._literal_evidence(conn, issue, unassigned, file)
        check_cancelled()
        self._message_evidence(conn, issue, file)
        check_cancelled()
        self._text_evidence(conn, issue, file)
        check_cancelled()
        for path in generated_paths(conn, files):  # semantic adds no candidates
            files[path].generated = True
        if vector is not None:
            self._semantic_evidence(conn, vector, semantic, best(files, self.config.semantic_pool), files)
        self._frame_chunks(conn, files)
        return files

    def _frame_evidence(self, issue: IssueText, paths: PathIndex, file) -> None:
        in_repo: list[tuple[Frame, str]] = []
        for frame in issue.frames:
            resolved = paths.resolve_path(frame.path, frame.function)
            if resolved is not None:
                in_repo.append((frame, resolved[0]))
        # The deepest in-repo frame counts 1, the next ones less and less.
        ordered = sorted(in_repo, key=lambda fp: fp[0].depth)
        for rank, (frame, path) in enumerate(ordered):
            value = self.config.frame_decay ** rank
            line = frame.line - 1 if frame.line else None
            where = f"{frame.path}:{frame.line}" + (f" in {frame.function}" if frame.function else "")
            file(path).raise_signal("frame", value, Reason("frame", where, line))

    def _path_evidence(self, conn, issue: IssueText, paths: PathIndex,
                       file) -> None:
        for written in issue.paths:
            resolved = self._resolve_written_path(issue, paths, written)
            if resolved is not None:
                value = 1.0 if issue.in_prose(written) else self.config.code_only_path
                line = issue.path_lines.get(written)
                file(resolved).raise_signal("path", value,
                                            Reason("path", written, line - 1 if line else None))
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
                value *= self.config.code_only_path
            file(path).raise_signal("path", value, Reason("path", prefix))

    @staticmethod
    def _resolve_written_path(issue: IssueText, paths: PathIndex, written: str) -> str | None:
        """The file a path the text writes names: the one a forge's URL names
        from the repository's root, the module a source view shows (a package's
        ``__init__`` too), else the file of its tail (``resolve_path``)."""
        if written in issue.repository_paths:
            found = paths.resolve_repository_path(issue.repository_paths[written])
            if found is not None:
                return found[0]
        if written in issue.linked_modules:
            module = issue.linked_modules[written]
            found = paths.resolve_module(module)
            if found is not None and found[1] == module:
                return found[0]
        found = paths.resolve_path(written)
        return found[0] if found is not None else None

    @staticmethod
    def _names_a_function(conn, path: str, rest: str) -> bool:
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

    def _symbol_evidence(self, conn, issue: IssueText, paths: PathIndex,
                         file) -> set[str]:
        """Raises ``symbol`` on defining files; returns the names some file
        outside tests and docs defines."""
        names: dict[str, list[str]] = {}  # last segment -> the written names ending in it
        for written in issue.identifiers:
            names.setdefault(written.split(".")[-1], []).append(written)
        if not names:
            return set()
        lowered = sorted({fold(n) for n in names})
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
        # `Beta::parse` is qualified as `Beta.parse` is.
        for written in [*issue.identifiers, *written_qualified(issue.raw)]:
            if "." in written:
                head, name = written.rsplit(".", 1)
                qualified.setdefault(name, set()).add(head)
        standard = _standard_library_names(issue, paths)
        strength: dict[str, float] = {}
        for name, by_path in defined.items():
            if name in standard:  # `time.time()`: not the repository's Python `time`
                by_path = {p: rows for p, rows in by_path.items() if language_for_path(p) != "python"}
            chosen = self._qualified_definitions(conn, name, qualified.get(name, ()), by_path,
                                                 paths, file)
            if chosen is not None:
                by_path = {p: rows for p, rows in by_path.items() if p in chosen}
            owners = {head.rsplit(".", 1)[-1] for head in qualified.get(name, ())}
            shares = self._shares(by_path, issue.prominence(name))
            for path, rows_here in by_path.items():
                if path not in shares:
                    continue
                evidence = file(path)
                strength[path] = _noisy_or(strength.get(path, 0.0), shares[path])
                # `TzinfoParser.parse`: that class's method, not the file's first `parse`.
                named = [any(_member_of(r[1], owner, name) for owner in owners) for r in rows_here]
                meant = [r for r, is_meant in zip(rows_here, named) if is_meant]
                rows_here = meant + [r for r, is_meant in zip(rows_here, named) if not is_meant]
                first = min(meant or rows_here, key=lambda r: r[8])
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
        if not paths or counted > self.config.max_definitions:
            return {}
        return {p: prominence / (counted if p in source or not source else len(paths))
                for p in paths}

    def _assignment_evidence(self, conn, issue: IssueText, defined: set[str],
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
        wanted = wanted[:self.config.max_assigned_names]
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

    def _literal_evidence(self, conn, issue: IssueText,
                          unnamed: dict[str, list[tuple]], file) -> None:
        """``literal``: a name a file registers as a string, not a symbol: a
        command-line option (``addoption("--import-mode", …)``), a message id or
        name in a table (``"W0611": ("…", "unused-import", …)``), a directive, or a
        configuration key no file outside tests defines or assigns
        (``unnamed``, with the chunks holding each: ``add_config_value("my_option",
        …)``). The files holding it as a whole quoted string literal, p/k over the
        k of them as for ``symbol``. A name only the text's code blocks write
        (pasted tool output: a linter's report, a command's log) counts
        ``code_only_path`` of that; several names on one file count as the
        strongest of them, not more (a file registering many names, an options
        parser or a message table, holds most strings any pasted output has)."""
        strength: dict[str, float] = {}
        for name in list(dict.fromkeys([*issue.literals, *unnamed]))[:self.config.max_assigned_names]:
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
            weight = 1.0 if issue.in_prose(name) else self.config.code_only_path
            self._raise_shared(issue, "literal", name, by_path, strength, file, weight, combine=max)

    def _raise_shared(self, issue: IssueText, signal: str, name: str, by_path: dict[str, tuple],
                      strength: dict[str, float], file, weight: float = 1.0,
                      combine: Callable[[float, float], float] = _noisy_or) -> None:
        """Raises ``signal`` on the files holding ``name`` (path -> chunk id, its
        symbol, start, end, the line found), each by its share (:meth:`_shares`)
        times ``weight``, several names on one file combined in ``strength``
        (noisy-or unless ``combine`` says otherwise)."""
        for path, share in self._shares(by_path, weight * issue.prominence(name)).items():
            chunk_id, symbol, start, end, line = by_path[path]
            strength[path] = combine(strength.get(path, 0.0), share)
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
                           if any(_member_of(r[1], owner, name) for r in rows)}
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
            "s.name = ? LIMIT 1", (path, fold(name))).fetchone() is not None

    def _message_evidence(self, conn, issue: IssueText, file) -> None:
        """``message``: the chunk holding a message's longest run of words, or a
        format string the message fills in (``"cannot find %s in %r"``,
        ``"{name} is missing"``): the share of its words found (4 count 1), or
        of the format string's fixed words (3 count 1). The reason cites the
        line where that run or format string starts."""
        for message in issue.messages[:12]:
            words = _WORD_RUN.findall(message.lower())
            if len(words) < 3:
                continue
            rows = self._message_chunks(conn, message)
            needed = min(len(words), 4)
            for path, chunk_id, symbol, start, end, chunk_text, _ in rows:
                lowered = chunk_text.lower()
                chunk_words = list(_WORD_RUN.finditer(lowered))
                run, first = _longest_run_at(words, [w.group(0) for w in chunk_words],
                                             shortest=min(3, needed), longest=8)
                format_words, format_at = _format_words_at(chunk_text, message)
                value = min(1.0, max(run / needed, format_words / _FORMAT_FULL))
                if value == 0:
                    continue
                if run / needed >= format_words / _FORMAT_FULL:
                    line = start + lowered.count("\n", 0, chunk_words[first].start())
                else:
                    line = start + chunk_text.count("\n", 0, format_at)
                evidence = file(path)
                evidence.raise_signal("message", value, Reason("message", message[:120], line))
                evidence.chunks.setdefault(chunk_id, ChunkRef(symbol, start, end, -1, 0.0))

    @staticmethod
    def _message_chunks(conn, message: str) -> list[tuple]:
        """The chunks holding the longest words of a message's fixed part (what
        a format string would write itself: quoted values, dotted names, paths
        and numbers left out), all of them, else all but one (one more value
        filled in)."""
        fixed = _WORD_RUN.findall(_FILLED_IN.sub(" ", message).lower())
        keys = sorted({w for w in fixed if len(w) > 2 and not w.isdigit()},
                      key=lambda w: (-len(w), w))[:5]
        if len(keys) < 2:
            return []
        # Each word as the index spells it (its stem), all of them in one chunk.
        tokens = [found[0] for k in keys if (found := expand_tokens(k))]
        rows = _chunks_with_tokens(conn, tokens, 40)
        for left_out in range(len(tokens)) if not rows and len(tokens) > 2 else ():
            rows = _chunks_with_tokens(conn, tokens[:left_out] + tokens[left_out + 1:], 40)
            if rows:
                break
        return rows

    def _terms(self, conn, text: str, max_share: float) -> list[str]:
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
        for term in kept[:self.config.max_terms]:
            postings += frequency[term]
            if chosen and postings > self.config.max_postings:
                break
            chosen.append(term)
        return chosen

    def _text_evidence(self, conn, issue: IssueText, file) -> None:
        """``text``: the whole text's rarer terms; ``title``: the title's terms."""
        config = self.config
        for signal, text, share in (("text", issue.raw, config.max_term_share),
                                    ("title", issue.title, config.max_title_term_share)):
            terms = self._terms(conn, text, share)
            if terms:
                self._similarity(conn, terms, signal, file)

    def _similarity(self, conn, terms: list[str], signal: str, file) -> None:
        scores = bm25_scores(conn, "fts_code", terms, self.ranking, limit=self.config.chunk_pool)
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
        shares = self.config.chunk_shares
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

    def _semantic_evidence(self, conn, query: Future, semantic: SemanticIndex, pool: list[str],
                           files: dict[str, FileEvidence]) -> None:
        """``semantic``: cosine similarity of the text's title and opening prose
        (``query``: its vector, being computed) with the embedded code chunks of
        the ``pool`` files (the best so far), aggregated per file like ``text``
        and scaled to the best file. A model that fails leaves the answer lexical."""
        try:
            vector = query.result()
        except Exception:  # the model broke mid-request: answer without it
            log.exception("locate: the query embedding failed; ranking without it")
            return
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
        shares = self.config.chunk_shares
        aggregated = {path: sum(share * s for share, s in zip(shares, sorted(scores, reverse=True)))
                      for path, scores in by_file.items()}
        top = max(aggregated.values(), default=0.0) or 1.0
        for path, value in aggregated.items():
            files[path].raise_signal("semantic", value / top,
                                     Reason("semantic", f"cosine {max(by_file[path]):.2f}"))

    def _frame_chunks(self, conn, files: dict[str, FileEvidence]) -> None:
        """The chunk around each frame's line, and around the line a written
        path names (`cart.py:12`, a link's `#L12`), is its file's best chunk,
        first whatever other evidence already chose it (a text match's score):
        the deepest frame's first (frames are reasons in depth order), then the
        outer ones', then the written paths'."""
        for evidence in files.values():
            placed = [r for r in evidence.reasons if r.signal == "frame" and r.line is not None] + \
                     [r for r in evidence.reasons if r.signal == "path" and r.line is not None]
            for order, reason in enumerate(placed):
                row = conn.execute(
                    "SELECT c.id, c.symbol, c.start_line, c.end_line FROM chunks c JOIN files f "
                    "ON f.id = c.file_id WHERE f.path = ? AND c.start_line <= ? AND c.end_line >= ? "
                    "ORDER BY c.end_line - c.start_line LIMIT 1",
                    (evidence.path, reason.line, reason.line)).fetchone()
                score = PLACED_CHUNK_SCORE - order
                held = evidence.chunks.get(row[0]) if row is not None else None
                if row is not None and (held is None or held.score < score):
                    evidence.chunks[row[0]] = ChunkRef(row[1], row[2], row[3], -1, score)
