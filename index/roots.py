"""Where a repository's root and store are, on the standard library alone:
the CLI imports this on every call, before it knows whether a daemon will
answer (discovery's ignore rules and languages cost it tens of milliseconds)."""

from __future__ import annotations

import hashlib
import os
import re
import stat
from pathlib import Path

STORE_DIR_NAME = ".ctxls"
STORE_FILE_NAME = "index.db"
STATE_DIR_ENV = "CTXLS_STATE_DIR"
# The store folder's own .gitignore (private.ignore_in_git writes it): git never lists the index.
STORE_GITIGNORE = "# written by ctxls: the index is a local cache\n*\n"
# Read of a .gitignore found there, at most (ours is a line).
MAX_GITIGNORE_BYTES = 65536

# What makes a folder a repository root for the CLI and `ctxls mcp` (like git
# and ripgrep: the nearest enclosing folder holding one of these).
ROOT_MARKERS = (STORE_DIR_NAME, ".git")


def find_root(start: Path) -> Path | None:
    """The nearest folder at or above ``start`` holding ``.ctxls/`` or ``.git``
    of this user's. Another user's marker is passed over, as git refuses a
    repository of "dubious ownership": in a shared folder (/tmp, a team
    drive) anyone could make it the root of this user's index."""
    start = start.resolve()
    for folder in (start, *start.parents):
        if any(_own_marker(folder / marker) for marker in ROOT_MARKERS):
            return folder
    return None


def _own_marker(path: Path) -> bool:
    try:
        if not path.exists():
            return False
        owner = path.lstat().st_uid
    except OSError:
        return False
    if owner != os.geteuid():
        import logging  # only here: the CLI imports this module on every call

        logging.getLogger(__name__).warning("%s belongs to another user (uid %d): not taken for "
                                            "a repository's root", path, owner)
        return False
    return True


def too_broad_root(root: Path) -> str | None:
    """Why ``root`` (resolved) is no folder to index, or None. The filesystem
    root would walk every mounted disk, /proc and /sys, and write
    ``/.ctxls``; a home folder that is not a repository (nor indexed before)
    walks every cache and download in it. The daemon refuses such a
    workspace folder and the CLI such a root, saying so."""
    if root.parent == root:
        return "is the filesystem root"
    home = home_folder()
    if home is not None and root == home.resolve() \
            and not any((root / m).exists() for m in ROOT_MARKERS):
        return "is the home folder, and not a repository (no .git or .ctxls in it)"
    return None


def home_folder() -> Path | None:
    """This user's home folder, or None: a container's user with neither
    ``$HOME`` nor a passwd entry has none (``Path.home()`` raises there)."""
    try:
        return Path.home()
    except RuntimeError:
        return None


def state_dir() -> Path | None:
    """The user's own ctxls folder, outside every checkout: ``$CTXLS_STATE_DIR``,
    else ``$XDG_STATE_HOME/ctxls``, else ``~/.local/state/ctxls``; None
    without a home folder."""
    explicit = os.environ.get(STATE_DIR_ENV)
    if explicit:
        # `~/…` as an editor's settings pass it, unexpanded; a relative one
        # from where this process started.
        return Path(os.path.abspath(os.path.expanduser(explicit)))
    xdg = os.environ.get("XDG_STATE_HOME")
    if xdg and not os.path.isabs(xdg):
        xdg = None  # the XDG spec: a relative value is invalid, and ignored
    home = home_folder()
    if not xdg and home is None:
        return None
    base = Path(xdg) if xdg else home / ".local" / "state"
    return base / "ctxls"


def _owner(path: Path) -> int | None:
    try:
        return path.stat().st_uid
    except OSError:
        return None


def _kept_out_of_git(store_folder: Path) -> bool:
    """Whether git lists nothing of ``store_folder`` but its .gitignore: it
    has none yet (ctxls writes its own), or one, a regular file, that
    ignores every entry (a ``*`` or ``/*`` line, a byte-order mark and CRLF
    line ends as Windows editors write them) and brings none back but
    itself (``!.gitignore``, which keeps the rule in a commit)."""
    ignore = store_folder / ".gitignore"
    try:
        if not stat.S_ISREG(ignore.lstat().st_mode):
            return False  # a link, a FIFO: not ctxls's
        fd = os.open(ignore, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as read:
            text = read.read(MAX_GITIGNORE_BYTES).decode("utf-8", "replace")
    except FileNotFoundError:
        return True
    except OSError:
        return False
    rules = [line.strip() for line in text.removeprefix("\ufeff").splitlines()]
    rules = [rule for rule in rules if rule and not rule.startswith("#")]
    return bool({"*", "/*"} & set(rules)) and all(
        rule in ("!.gitignore", "!/.gitignore") for rule in rules if rule.startswith("!"))


def store_dir(root: Path) -> Path:
    """Where the index, the daemon's socket and its log of the repository
    ``root`` (resolved) live: its ``.ctxls`` folder, unless the repository
    cannot hold one (a read-only checkout: a mount, an image, a folder of
    another user's), or it ships a file or a link where that folder goes
    (another tool's, or planted: never written through), or another user
    made that folder. Then a folder in
    the user's state folder named by the root's path, which every process
    serving ``root`` finds alike, and which stays the store while the
    repository has no ``.ctxls`` folder of its own. A ``.ctxls`` of this
    user's holding a store stays the answer when it cannot be written (the
    store refuses it, as it does a read-only store file). Without a state folder
    the answer is ``.ctxls`` whatever it is (the store refuses a file or a
    link there, saying why)."""
    inside = root / STORE_DIR_NAME
    state = state_dir()
    if state is None:
        return inside
    name = re.sub(r"[^A-Za-z0-9._-]", "_", root.name)[:32] or "root"
    digest = hashlib.sha256(os.fsencode(root)).hexdigest()[:16]
    outside = state / "stores" / f"{name}-{digest}"
    if inside.is_symlink() or (inside.exists() and not inside.is_dir()):
        return outside
    if inside.is_dir() and _owner(inside) not in (None, os.geteuid()):
        # Another user's, even where this one may write to it (a shared
        # checkout, a folder made 0777): its socket is that user's daemon,
        # which would read every query and answer with its own memory.
        return outside
    if inside.is_dir() and not _kept_out_of_git(inside):
        # A `.ctxls` the repository ships with a .gitignore of its own that
        # lets files through: `git add -A` would stage the store, written
        # memory and all, for the repository's next commit and push.
        return outside
    store_file = inside / STORE_FILE_NAME
    if os.path.isfile(store_file) and not os.path.islink(store_file):
        # The repository's own store, writable or not: one that cannot be
        # written (a checkout mounted read-only) is refused, never exchanged
        # for an empty store elsewhere that hides its written memory and
        # takes new memory the repository's own store never sees.
        return inside
    if not inside.is_dir() and outside.is_dir():
        # Made while the repository could not hold one: it keeps the written
        # memory, so it stays the store when the repository becomes writable.
        return outside
    writable = inside if inside.is_dir() else root
    if os.access(writable, os.W_OK | os.X_OK) or not root.is_dir():
        return inside
    return outside
