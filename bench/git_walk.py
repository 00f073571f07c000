"""Walking a project's git history on one working tree, re-indexed incrementally.

Shared by the localisation sets (``locate.py``, ``locate_commits.py``): a
``fetch``ed snapshot (a bare git dir under /work/.mirror) gets one working
tree that moves from commit to commit in commit-time order, and an Engine
re-indexes only what changed at each step.

The tree is a repository of its own whose objects are the snapshot's (git's
``alternates``): checking a commit out there moves nothing in the snapshot,
which other readers share, and ``git ls-files`` answers discovery.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from ctxls.index.engine import Engine
from ctxls.index.indexer import IndexStats

MIRROR = Path("/work/.mirror")


def snapshot_dir(repo: str) -> Path:
    """The bare git dir ``fetch github:owner/name`` leaves for ``repo`` (owner/name)."""
    return MIRROR / repo.replace("/", "+") / "repo"


def git(git_dir: Path, *args: str, tree: Path | None = None) -> str:
    """The command's output; bytes that are not UTF-8 (a diff of a Latin-1
    file) read as U+FFFD."""
    command = ["git", "--git-dir", str(git_dir)]
    if tree is not None:
        command += ["--work-tree", str(tree)]
    return subprocess.run(command + list(args), check=True, capture_output=True, text=True,
                          errors="replace").stdout


def attach_tree(git_dir: Path, tree: Path) -> Callable[[str], None]:
    """Make ``tree`` a working tree over ``git_dir``'s objects; returns
    ``checkout(commit)``, which moves it to that commit exactly (untracked and
    ignored files removed)."""
    tree.mkdir(parents=True, exist_ok=True)
    dot_git = tree / ".git"
    if dot_git.is_file():  # an older layout: a gitdir link into the snapshot itself
        dot_git.unlink()
    if not dot_git.exists():
        subprocess.run(["git", "init", "-q", str(tree)], check=True)
    (dot_git / "objects" / "info" / "alternates").write_text(f"{git_dir.resolve() / 'objects'}\n")

    def checkout(commit: str) -> None:
        try:
            git(dot_git, "checkout", "--force", "--detach", "-q", commit, tree=tree)
        except subprocess.CalledProcessError:
            # A snapshot lacks files of 4 MiB and more: check out all but those.
            leave_out(dot_git, missing_blobs(dot_git, commit))
            git(dot_git, "checkout", "--force", "--detach", "-q", commit, tree=tree)
        git(dot_git, "clean", "-fdxq", tree=tree)

    return checkout


def missing_blobs(git_dir: Path, commit: str) -> list[str]:
    """The paths of ``commit``'s files whose content the object store lacks."""
    listing = git(git_dir, "ls-tree", "-r", "-z", commit).split("\0")
    entries = [line.split("\t", 1) for line in listing if line]
    blobs = [(meta.split()[2], path) for meta, path in entries if meta.split()[1] == "blob"]
    checked = subprocess.run(["git", "--git-dir", str(git_dir), "cat-file", "--batch-check"],
                             input="".join(f"{sha}\n" for sha, _ in blobs), check=True,
                             capture_output=True, text=True).stdout.splitlines()
    return [path for (_, path), answer in zip(blobs, checked) if answer.endswith(" missing")]


class Blobs:
    """Files of a snapshot at any commit, through one ``git cat-file --batch``."""

    def __init__(self, git_dir: Path):
        self._process = subprocess.Popen(["git", "--git-dir", str(git_dir), "cat-file", "--batch"],
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE)

    def read(self, commit: str, path: str) -> str | None:
        return self.read_object(f"{commit}:{path}")

    def read_object(self, name: str) -> str | None:
        """A blob by any name git takes (``commit:path``, an object id), or None."""
        self._process.stdin.write(f"{name}\n".encode())
        self._process.stdin.flush()
        header = self._process.stdout.readline().split()
        if len(header) < 3 or header[1] != b"blob":
            return None
        data = self._process.stdout.read(int(header[2]) + 1)[:-1]
        return data.decode("utf-8", errors="replace")

    def close(self) -> None:
        self._process.stdin.close()
        self._process.wait()


def leave_out(git_dir: Path, paths: list[str]) -> None:
    """Check out everything but ``paths`` from now on (a sparse checkout; the
    list grows, so a file missing at one commit stays out at the next)."""
    sparse = git_dir / "info" / "sparse-checkout"
    patterns = sparse.read_text().splitlines() if sparse.exists() else ["/*"]
    patterns += [f"!/{glob_escape(path)}" for path in paths if f"!/{glob_escape(path)}" not in patterns]
    sparse.parent.mkdir(parents=True, exist_ok=True)
    sparse.write_text("\n".join(patterns) + "\n")
    git(git_dir, "config", "core.sparseCheckout", "true")


def glob_escape(path: str) -> str:
    return "".join(f"\\{c}" if c in "*?[]!#\\" else c for c in path)


def commit_times(git_dir: Path, commits: Iterable[str]) -> dict[str, int]:
    """commit -> its committer time (seconds), in one git call."""
    wanted = list(dict.fromkeys(commits))
    if not wanted:
        return {}
    out = subprocess.run(["git", "--git-dir", str(git_dir), "show", "-s", "--format=%H %ct", *wanted],
                         check=True, capture_output=True, text=True).stdout
    by_full = dict(line.split() for line in out.splitlines() if line.strip())
    # The caller's spelling of each commit (full or abbreviated) -> its time.
    return {c: int(next(t for full, t in by_full.items() if full.startswith(c))) for c in wanted}


def reindexed(engine: Engine, steps: Iterable[dict], checkout: Callable[[dict], bool | None]
              ) -> Iterator[tuple[dict, IndexStats, float]]:
    """For each step in order: move the tree there, re-index incrementally, and
    yield (step, the index pass's stats, its seconds). A step whose
    ``checkout`` returns False is skipped."""
    for step in steps:
        if checkout(step) is False:
            continue
        started = time.perf_counter()
        stats = engine.index()
        yield step, stats, time.perf_counter() - started
