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
* ``history``: 1 when the history was read, else 0 (no ``.git``, git missing
  or failing, a timeout): then the three above are 0 too.

Only HEAD's ancestors are read (``git log HEAD``): the commit being answered
about is never in its own history. One ``git log --name-only`` per HEAD,
cached; a moved HEAD is read again. Commits touching more than
:data:`MAX_FILES` files (a reformat, a mass rename, an import) say nothing
about any one file and are skipped. A repository is data, never authority:
git runs with hooks off, no pager, no external diff or textconv, no signature
checks, and a time limit.

The features only weigh files some other evidence already points at
(index/locate.py adds them to the candidates); they never make a candidate.
"""

from __future__ import annotations

import math
import os
import re
import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path

HISTORY_FEATURES = ("history", "hist_commits", "hist_fixes", "hist_recency")

WINDOW = 500  # newest non-merge commits of HEAD read
MAX_FILES = 50  # a commit touching more files is skipped
TIMEOUT_S = 10.0
# Subject words of a commit that fixes something: one list for every project.
FIX_WORDS = re.compile(
    r"\b(?:fix(?:e[sd]|ing|up)?|bugs?|bugfix|errors?|crash(?:es|ed|ing)?|issues?|fail(?:s|ed|ure|ing)?"
    r"|broken|wrong|incorrect(?:ly)?|regressions?|exceptions?|leaks?|hangs?|workaround)\b", re.I)

# Safety: a repository's config never runs a program here.
_SAFE = ("-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", "-c", "log.showSignature=false",
         "-c", "diff.external=", "-c", "core.pager=cat")
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

    def features(self, path: str) -> dict[str, float]:
        """``path``'s :data:`HISTORY_FEATURES` (all 0 without a history)."""
        if self.head is None:
            return dict.fromkeys(HISTORY_FEATURES, 0.0)
        found = self.files.get(path)
        scale = math.log1p(WINDOW)
        if found is None:
            return {"history": 1.0, "hist_commits": 0.0, "hist_fixes": 0.0, "hist_recency": 0.0}
        return {"history": 1.0, "hist_commits": min(1.0, math.log1p(found.commits) / scale),
                "hist_fixes": min(1.0, math.log1p(found.fixes) / scale),
                "hist_recency": max(0.0, 1.0 - math.log1p(found.newest) / scale)}


NO_HISTORY = RepoHistory(None, 0, {})


def _git(base: list[str], *args: str) -> str | None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_TERMINAL_PROMPT="0", GIT_OPTIONAL_LOCKS="0")
    try:
        proc = subprocess.run([*base, *args], capture_output=True, timeout=TIMEOUT_S, env=env,
                              stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if proc.returncode != 0:
        return None
    return proc.stdout.decode("utf-8", "surrogateescape")


def git_base(root: Path | None = None, git_dir: Path | None = None) -> list[str]:
    """The git command line for a working tree ``root`` (paths relative to it,
    as the index has them) or a bare ``git_dir`` (paths from its top)."""
    where = ["-C", str(root)] if git_dir is None else ["--git-dir", str(git_dir)]
    return ["git", "--no-pager", *_SAFE, *where]


def head_of(base: list[str], rev: str = "HEAD") -> str | None:
    out = _git(base, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}")
    return out.strip() or None if out is not None else None


def parse_log(out: str) -> tuple[int, dict[str, FileHistory]]:
    """(commits read, path -> its history) from ``git log --name-only`` with
    records ``\\x1e<subject>\\x1f`` then the paths."""
    commits, fixes, newest = {}, {}, {}
    records = out.split(_SEP)[1:]
    for k, record in enumerate(records):
        subject, _, names = record.partition(_END)
        paths = {line for line in names.splitlines() if line.strip()}
        if len(paths) > MAX_FILES:
            continue
        fix = FIX_WORDS.search(subject) is not None
        for path in paths:
            commits[path] = commits.get(path, 0) + 1
            fixes[path] = fixes.get(path, 0) + fix
            newest.setdefault(path, k)
    return len(records), {p: FileHistory(commits[p], fixes[p], newest[p]) for p in commits}


def read_history(base: list[str], head: str, relative: bool = True) -> RepoHistory:
    """The history of ``head`` (a full commit id): its newest WINDOW non-merge
    commits, ``head`` itself first. With ``relative``, paths relative to the
    working folder ``base`` runs in, changes outside it left out."""
    out = _git(base, "log", "--no-merges", "--no-renames", "--no-ext-diff", "--no-textconv",
               "--no-show-signature", "--no-color", f"-n{WINDOW}", "--name-only",
               f"--format={_SEP}%s{_END}", *(["--relative"] if relative else []), head, "--")
    if out is None:
        return NO_HISTORY
    window, files = parse_log(out)
    return RepoHistory(head, window, files)


class History:
    """The history of one working tree's repository, read once per HEAD; safe
    to share between threads. ``root`` None: no history."""

    def __init__(self, root: Path | None):
        self.root = root
        self._lock = threading.Lock()
        self._cached: RepoHistory = NO_HISTORY
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
            if self._cached.head == head:
                return self._cached
        found = read_history(base, head)
        self.reads += 1
        with self._lock:
            self._cached = found
        return found
