"""Locate's evidence from the repository's own git history.

Files that changed often, and often in commits that say they fix something,
are where the next fix tends to land; a file changed a moment ago more so than
one untouched for years. These are facts of the repository, not of any one
project's shape, read at run time for the repository locate serves:

* ``hist_commits``: log(1 + commits touching the file among the newest
  :data:`WINDOW` non-merge commits of HEAD), over log(1 + WINDOW);
* ``hist_fixes``: the same count of those whose subject has a fix word
  (:data:`FIX_WORDS`, one list for every project);
* ``hist_recency``: 1 - log(1 + k) / log(1 + WINDOW), k the number of newer
  commits in the window than the newest one touching the file (0 if none);
* ``hist_text``: how well the text matches the subjects of the commits that
  touched the file (BM25 of the text's terms over each file's subjects, a
  file's length its commit count), over the best candidate's: past fixes of
  a file are described in the words of the next one;
* ``history``: 1 when the history was read, else 0 (no ``.git``, git missing
  or failing, a timeout): then the others are 0 too.

Only HEAD's ancestors are read (``git log HEAD``): the commit being answered
about is never in its own history. One ``git log --name-only`` per HEAD,
cached; a moved HEAD is read again (a read that failed or timed out is not
retried before HEAD moves). Commits touching more than
:data:`MAX_FILES` files (a reformat, a mass rename, an import) say nothing
about any one file and are skipped. A repository is data, never authority:
git runs with hooks off, no pager, no external diff or textconv, no signature
checks, and a time limit.

The features only weigh files some other evidence already points at
(index/locate.py adds them to the candidates); they never make a candidate.
"""

from __future__ import annotations

import collections
import math
import re
import threading
from dataclasses import dataclass
from pathlib import Path

from ctxls.index.git import git_command, run_git
from ctxls.index.tokenize import query_terms

HISTORY_FEATURES = ("history", "hist_commits", "hist_fixes", "hist_recency", "hist_text")

WINDOW = 500  # newest non-merge commits of HEAD read
MAX_FILES = 50  # a commit touching more files is skipped
TIMEOUT_S = 10.0
MAX_TEXT_TERMS = 64  # the text's terms matched against the subjects
BM25_K1, BM25_B = 1.2, 0.75
# Subject words of a commit that fixes something: one list for every project.
FIX_WORDS = re.compile(
    r"\b(?:fix(?:e[sd]|ing|up)?|bugs?|bugfix|errors?|crash(?:es|ed|ing)?|issues?|fail(?:s|ed|ure|ing)?"
    r"|broken|wrong|incorrect(?:ly)?|regressions?|exceptions?|leaks?|hangs?|workaround)\b", re.I)

_SEP, _END = "\x1e", "\x1f"


@dataclass(frozen=True)
class FileHistory:
    commits: int  # non-bulk commits in the window touching the file
    fixes: int  # those with a fix word in their subject
    newest: int  # commits newer in the window than the newest one touching it


@dataclass(frozen=True)
class RepoHistory:
    head: str | None  # the commit read, None when no history was read
    window: int  # commits read (at most WINDOW)
    files: dict[str, FileHistory]
    # path -> term -> how many of its (non-bulk) commits' subjects have it
    subject_terms: dict[str, dict[str, int]] = None  # type: ignore[assignment]
    # term -> how many (non-bulk) commits' subjects have it; how many commits those are
    subject_df: dict[str, int] = None  # type: ignore[assignment]
    counted: int = 0

    def features(self, path: str) -> dict[str, float]:
        """``path``'s :data:`HISTORY_FEATURES` but ``hist_text`` (0: see
        :meth:`annotate`), all 0 without a history."""
        if self.head is None:
            return dict.fromkeys(HISTORY_FEATURES, 0.0)
        found = self.files.get(path)
        scale = math.log1p(WINDOW)
        if found is None:
            return {"history": 1.0, "hist_commits": 0.0, "hist_fixes": 0.0, "hist_recency": 0.0,
                    "hist_text": 0.0}
        return {"history": 1.0, "hist_commits": min(1.0, math.log1p(found.commits) / scale),
                "hist_fixes": min(1.0, math.log1p(found.fixes) / scale),
                "hist_recency": max(0.0, 1.0 - math.log1p(found.newest) / scale), "hist_text": 0.0}

    def text_scores(self, text: str, paths) -> dict[str, float]:
        """BM25 of ``text``'s terms over each path's commit subjects (0 for a
        path no commit touched)."""
        if self.head is None or not self.subject_terms:
            return {}
        terms = query_terms(text)[:MAX_TEXT_TERMS]
        n = max(self.counted, 1)
        idf = {t: math.log(1 + (n - self.subject_df[t] + 0.5) / (self.subject_df[t] + 0.5))
               for t in terms if t in self.subject_df}
        if not idf:
            return {}
        mean_length = sum(f.commits for f in self.files.values()) / max(len(self.files), 1)
        out = {}
        for path in paths:
            bag = self.subject_terms.get(path)
            if not bag:
                continue
            norm = BM25_K1 * (1 - BM25_B + BM25_B * self.files[path].commits / mean_length)
            score = sum(w * bag[t] * (BM25_K1 + 1) / (bag[t] + norm) for t, w in idf.items() if t in bag)
            if score > 0:
                out[path] = score
        return out

    def annotate(self, text: str, paths) -> dict[str, dict[str, float]]:
        """Every path's :data:`HISTORY_FEATURES`, ``hist_text`` scaled to the
        best of ``paths`` (the candidates)."""
        paths = list(paths)
        out = {p: self.features(p) for p in paths}
        scores = self.text_scores(text, paths)
        best = max(scores.values(), default=0.0)
        for path, score in scores.items():
            out[path]["hist_text"] = score / best
        return out


NO_HISTORY = RepoHistory(None, 0, {}, {}, {}, 0)


def _git(base: list[str], *args: str) -> str | None:
    proc = run_git([*base, *args], timeout=TIMEOUT_S)
    if proc is None or proc.returncode != 0:
        return None
    return proc.stdout.decode("utf-8", "surrogateescape")


def git_base(root: Path | None = None, git_dir: Path | None = None) -> list[str]:
    """The git command line for a working tree ``root`` (paths relative to it,
    as the index has them) or a bare ``git_dir`` (paths from its top)."""
    return git_command(root=root if git_dir is None else None, git_dir=git_dir)


def head_of(base: list[str], rev: str = "HEAD") -> str | None:
    out = _git(base, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}")
    return out.strip() or None if out is not None else None


def parse_log(out: str, head: str | None = None) -> RepoHistory:
    """The history in ``git log --name-only`` output with records
    ``\\x1e<subject>\\x1f`` then the paths."""
    commits, fixes, newest = {}, {}, {}
    terms: dict[str, collections.Counter] = {}
    df: collections.Counter = collections.Counter()
    counted = 0
    records = out.split(_SEP)[1:]
    for k, record in enumerate(records):
        subject, _, names = record.partition(_END)
        paths = {line for line in names.splitlines() if line.strip()}
        if len(paths) > MAX_FILES or not paths:
            continue
        counted += 1
        fix = FIX_WORDS.search(subject) is not None
        words = set(query_terms(subject))
        df.update(words)
        for path in paths:
            commits[path] = commits.get(path, 0) + 1
            fixes[path] = fixes.get(path, 0) + fix
            newest.setdefault(path, k)
            terms.setdefault(path, collections.Counter()).update(words)
    return RepoHistory(head, len(records), {p: FileHistory(commits[p], fixes[p], newest[p]) for p in commits},
                       {p: dict(c) for p, c in terms.items()}, dict(df), counted)


def read_history(base: list[str], head: str, relative: bool = True) -> RepoHistory:
    """The history of ``head`` (a full commit id): its newest WINDOW non-merge
    commits, ``head`` itself first. With ``relative``, paths relative to the
    working folder ``base`` runs in, changes outside it left out."""
    out = _git(base, "log", "--no-merges", "--no-renames", "--no-ext-diff", "--no-textconv",
               "--no-show-signature", "--no-color", f"-n{WINDOW}", "--name-only",
               f"--format={_SEP}%s{_END}", *(["--relative"] if relative else []), head, "--")
    if out is None:
        return NO_HISTORY
    return parse_log(out, head)


class History:
    """The history of one working tree's repository, read once per HEAD; safe
    to share between threads. ``root`` None: no history."""

    def __init__(self, root: Path | None):
        self.root = root
        self._lock = threading.Lock()
        # The HEAD last read and what it gave (NO_HISTORY when the read failed
        # or timed out: not tried again until HEAD moves).
        self._cached: tuple[str | None, RepoHistory] = (None, NO_HISTORY)
        self.reads = 0  # git logs run (a test reads it)

    def current(self) -> RepoHistory:
        """The history at the current HEAD (NO_HISTORY without a repository)."""
        if self.root is None or not Path(self.root).is_dir():
            return NO_HISTORY
        base = git_base(self.root)
        head = head_of(base)
        if head is None:
            return NO_HISTORY
        with self._lock:
            if self._cached[0] == head:
                return self._cached[1]
        found = read_history(base, head)
        self.reads += 1
        with self._lock:
            self._cached = (head, found)
        return found
