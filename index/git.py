"""Every git command ctxls runs, built in one place so that a repository's
own config never runs a program here.

A repository is data, never authority, and its ``.git/config`` arrives with
it (a tarball, a copied folder, a shared drive): ``core.fsmonitor`` names a
program that ``git ls-files``, ``git check-ignore`` and ``git status`` run on
every call, before they answer. Command-line ``-c`` settings override every
config file, so each command carries :data:`SAFE_CONFIG`; the commands
themselves turn off what config could add to their output (``--no-pager``,
and in ``git log`` no external diff, textconv or signature checks). A
filter driver (``filter.<name>.clean``, named by the tree's
``.gitattributes``) runs whenever git hashes a work-tree file whose stat
data is stale (any file of a copied or unpacked folder), so each command
also empties every driver the repository's config defines, and a
``core.excludesFile`` that names no regular file (git blocks opening a
FIFO). The
caller's own ``GIT_*`` variables are dropped too: a daemon started from a
git hook or an editor's terminal inherits ``GIT_DIR`` or ``GIT_WORK_TREE``
that name another repository. For the same reason the work tree is always
the folder holding ``.git`` (``--work-tree``), never the repository's own
``core.worktree``.

A FIFO where git reads an ignore file (a ``.gitignore`` or
``.git/info/exclude`` that an archive or a copied folder carried) blocks
git's open for as long as nothing writes to it: the listing ran into its
60 s timeout on every pass and every CLI verb. Commands that read ignore
files (``run_git(..., fifo_root=)``) are watched: while git sleeps waiting
for a FIFO's writer (Linux says where a process sleeps), each such FIFO
under the root is opened for writing and closed, so git reads it as empty.
"""

from __future__ import annotations

import logging
import os
import stat
import subprocess
import time
from pathlib import Path
from typing import NamedTuple

log = logging.getLogger(__name__)

SAFE_CONFIG = (
    "-c", "core.fsmonitor=false",  # a program run by every index read
    "-c", "core.hooksPath=/dev/null",  # hooks (post-index-change, ...)
    "-c", "core.pager=cat",
    "-c", "diff.external=",
    "-c", "log.showSignature=false",  # gpg.program
    # A folder shaped like a bare repository (HEAD, config, objects/) inside
    # the tree is not taken for one; an explicit --git-dir still is.
    "-c", "safe.bareRepository=explicit",
)


# A filter driver's settings that run a program, emptied; and ``required``,
# which makes a driver without a program an error, turned off.
_FILTER_SETTINGS = (("clean", ""), ("smudge", ""), ("process", ""), ("required", "false"))
# What --config-env reads for a driver whose name holds "=" (``-c`` splits at
# the first "=", --config-env at the last): set by ``_env``.
_CONFIG_VARIABLES = {"": "CTXLS_GIT_EMPTY", "false": "CTXLS_GIT_FALSE"}


def git_command(*args: str, root: Path | str | None = None, git_dir: Path | str | None = None) -> list[str]:
    """The command line of ``git args`` in the working folder ``root`` (paths
    relative to it) or on the repository ``git_dir`` (a bare one, or a
    ``.git`` folder)."""
    where = ["-C", str(root)] if root is not None else []
    if git_dir is not None:
        where += ["--git-dir", str(git_dir)]
    elif root is not None:
        top = _work_tree_top(root)
        if top is not None:
            where += ["--work-tree", top]
    base = ["git", "--no-pager", *SAFE_CONFIG, *where]
    return [*base, *_neutralised(base, root), *args]


def _work_tree_top(folder: Path | str) -> str | None:
    """The folder holding the nearest ``.git`` at or above ``folder``: the
    work tree git finds, unless the repository's ``core.worktree`` names
    another folder, which would list that folder's files as the
    repository's (its config is data, never where to look)."""
    here = os.path.abspath(folder)
    while True:
        if os.path.lexists(os.path.join(here, ".git")):
            return here
        parent = os.path.dirname(here)
        if parent == here:
            return None
        here = parent


def _neutralised(base: list[str], root: Path | str | None) -> list[str]:
    """Settings emptying every filter driver the repository's config defines
    (reading config runs nothing), and ``core.excludesFile`` where it names
    something other than a regular file: git blocks opening a FIFO there
    (a shipped ``.git/config``), each command until its timeout."""
    proc = run_git([*base, "config", "--null", "--get-regexp", r"^filter\.|^core\.excludesfile$"],
                   timeout=10)
    if proc is None or proc.returncode != 0:  # 1: none defined (or no repository)
        return []
    entries = [os.fsdecode(entry).partition("\n") for entry in proc.stdout.split(b"\0") if entry]
    names = {key[len("filter."):].rpartition(".")[0] for key, _, _ in entries if key.startswith("filter.")}
    settings = []
    excludes = [value for key, _, value in entries if key == "core.excludesfile"]
    if excludes and excludes[-1]:  # the last one set is git's
        named = os.path.join(root or "", os.path.expanduser(excludes[-1]))
        if os.path.exists(named) and not os.path.isfile(named):
            settings += ["-c", "core.excludesFile="]
    for name in sorted(names):
        for setting, value in _FILTER_SETTINGS:
            if "=" in name:
                settings.append(f"--config-env=filter.{name}.{setting}={_CONFIG_VARIABLES[value]}")
            else:
                settings += ["-c", f"filter.{name}.{setting}={value}"]
    return settings


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    # Never a prompt (a credential, a passphrase), never a lock on the index;
    # messages in the C locale, which callers read (discovery's unreadable
    # folders, trust's "did not match"), whatever the user's language.
    env.update(GIT_TERMINAL_PROMPT="0", GIT_OPTIONAL_LOCKS="0", LC_ALL="C")
    env.update({variable: value for value, variable in _CONFIG_VARIABLES.items()})
    return env


def run_git(command: list[str], timeout: float, input: bytes | None = None,
            fifo_root: Path | None = None) -> subprocess.CompletedProcess | None:
    """``command`` (from :func:`git_command`) run to its end, output captured;
    None when git is missing or ran past ``timeout`` seconds. With
    ``fifo_root`` (a command reading the ignore files under it), an ignore
    file that is a FIFO git waits on is read as empty (the module's doc)."""
    try:
        process = subprocess.Popen(command, stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env())
    except OSError:
        return None
    deadline = time.monotonic() + timeout
    pending = input
    with process:
        while True:
            wait = deadline - time.monotonic()
            if fifo_root is not None:
                wait = min(wait, FIFO_CHECK_S)
            try:
                out, err = process.communicate(pending, timeout=max(0.0, wait))
                return subprocess.CompletedProcess(command, process.returncode, out, err)
            except subprocess.TimeoutExpired:
                pending = None  # communicate keeps writing what it began
                if time.monotonic() >= deadline:
                    process.kill()
                    process.communicate()
                    return None
                if fifo_root is not None and _waits_for_fifo_writer(process.pid):
                    release_ignore_fifos(fifo_root)


# How often a command reading ignore files is looked at while it runs.
FIFO_CHECK_S = 0.5


def _waits_for_fifo_writer(pid: int) -> bool:
    """Process ``pid`` sleeps in a FIFO's open (Linux's wchan); False where
    that cannot be known."""
    try:
        with open(f"/proc/{pid}/wchan", encoding="ascii", errors="replace") as wchan:
            return wchan.read().strip() in ("wait_for_partner", "fifo_open")
    except OSError:
        return False


def release_ignore_fifos(root: Path) -> list[str]:
    """Each ``.gitignore`` under ``root`` (and ``.git/info/exclude``) that is
    a FIFO, opened for writing and closed at once: a reader waiting in its
    open goes on and reads nothing. The paths released, each warned of."""
    released = []
    candidates = [os.path.join(root, ".git", "info", "exclude")]
    for folder, folders, files in os.walk(root):
        folders[:] = [name for name in folders if name != ".git"]
        if ".gitignore" in files:
            candidates.append(os.path.join(folder, ".gitignore"))
    for path in candidates:
        try:
            if not stat.S_ISFIFO(os.lstat(path).st_mode):
                continue
            os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
        except OSError:  # gone, or no reader waits on it (ENXIO)
            continue
        released.append(path)
        log.warning("%s is a FIFO, not an ignore file: git was waiting on it; read as empty", path)
    return released


def head_commit(root: Path) -> str | None:
    """The commit HEAD names in the work tree at ``root``, or None (no git,
    no commit yet)."""
    proc = run_git(git_command("rev-parse", "--verify", "--quiet", "HEAD^{commit}", root=root),
                   timeout=10)
    if proc is None or proc.returncode != 0:
        return None
    return proc.stdout.decode("ascii", "replace").strip() or None


class HeadMove(NamedTuple):
    """One move of HEAD, as git's reflog says it."""
    commit: str  # where HEAD moved to
    reason: str  # "checkout: moving from a to b", "pull: Fast-forward", "commit: …"
    at: int  # when (ms)


def head_moves(root: Path, limit: int | None = None) -> list[HeadMove]:
    """HEAD's moves in the repository at ``root``, the latest first (at most
    ``limit``; the last of them all is the one that made the work tree, "clone:
    from …"); none without a reflog."""
    proc = run_git(git_command("log", "-g", *(() if limit is None else (f"-{limit}",)),
                               "--format=%H%x00%gs%x00%gd", "--date=unix", "HEAD", root=root),
                   timeout=10)
    if proc is None or proc.returncode != 0:
        return []
    moves = []
    for line in proc.stdout.decode("utf-8", "replace").splitlines():
        commit, _, rest = line.partition("\0")
        reason, _, selector = rest.partition("\0")
        seconds = selector.rpartition("{")[2].rstrip("}")
        if seconds.isdigit():
            moves.append(HeadMove(commit, reason, int(seconds) * 1000))
    return moves


def written_by_checkout(root: Path, old: str | None, new: str) -> set[str] | None:
    """The files (relative to ``root``) that differ between commits ``old``
    and ``new`` and that the work tree holds as ``new`` has them (or lacks,
    as it does): what moving HEAD from ``old`` to ``new`` wrote, not what
    anybody edited since; with no ``old`` (a repository just cloned or
    initialised as a submodule), every file of ``new``. None when git cannot say."""
    changed = (_names(root, "diff", "--name-only", "-z", "--relative", "--no-renames", old, new, "--")
               if old is not None else _names(root, "ls-tree", "-r", "-z", "--name-only", new))
    if not changed:
        return changed
    edited = _names(root, "diff", "--name-only", "-z", "--relative", "--no-renames", new, "--")
    return None if edited is None else changed - edited


def stopped_operation_commit(root: Path) -> str | None:
    """The commit a merge or a cherry-pick that stopped on a conflict is
    bringing in (``MERGE_HEAD``, ``CHERRY_PICK_HEAD``), or None when none is
    under way in the repository at ``root``."""
    proc = run_git(git_command("cat-file", "--batch-check", root=root), timeout=10,
                   input=b"MERGE_HEAD\nCHERRY_PICK_HEAD\n")
    if proc is None or proc.returncode != 0:
        return None
    for line in proc.stdout.decode("ascii", "replace").splitlines():
        oid, _, kind = line.partition(" ")
        if kind.startswith("commit "):
            return oid
    return None


def taken_from_merged_branch(root: Path, commit: str) -> set[str] | None:
    """The files (relative to ``root``) that merge ``commit`` has as its
    second parent (the branch merged in) has them and its first parent does
    not: what the merge brought in whole. A file both branches changed is
    left out, whoever merged it (git, or somebody resolving a conflict).
    Trees compared, no merge run: a merge driver the repository's config
    names never runs. None when git cannot say (no second parent)."""
    brought = _names(root, "diff", "--name-only", "-z", "--relative", "--no-renames",
                     f"{commit}^1", commit, "--")
    theirs_differ = _names(root, "diff", "--name-only", "-z", "--relative", "--no-renames",
                           f"{commit}^2", commit, "--")
    return None if brought is None or theirs_differ is None else brought - theirs_differ


def _names(root: Path, *args: str) -> set[str] | None:
    proc = run_git(git_command(*args, root=root), timeout=30)
    if proc is None or proc.returncode != 0:
        return None
    return {os.fsdecode(name) for name in proc.stdout.split(b"\0") if name}


def global_excludes_file(root: Path) -> Path | None:
    """The excludes file git reads for the repository at ``root`` besides its
    .gitignore files and info/exclude, as git resolves it: ``core.excludesFile``
    (``~`` expanded; a relative one from ``root``), by default
    ``$XDG_CONFIG_HOME/git/ignore`` or else ``~/.config/git/ignore``. None
    when git cannot be asked or no such file can be named (no HOME)."""
    proc = run_git(git_command("config", "--path", "--get", "core.excludesFile", root=root),
                   timeout=10)
    if proc is None or proc.returncode not in (0, 1):  # 1: not set
        return None
    named = os.fsdecode(proc.stdout.rstrip(b"\n")) if proc.returncode == 0 else ""
    if named:
        return root / named  # an absolute one stays itself
    config_home = os.environ.get("XDG_CONFIG_HOME") or (
        os.path.join(os.environ["HOME"], ".config") if os.environ.get("HOME") else "")
    return Path(config_home, "git", "ignore") if config_home else None
