"""Files only their owner may read, whatever the umask.

The trust boundary is the OS user (docs/architecture.md, "Trust model"): the
store holds every tenant's written memory, so its folder is 0700, its files
0600, and the daemon's socket 0600. A umask can only take bits away from a
mode given at creation, so each is also set explicitly once created.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from ctxls.index.discovery import STORE_DIR_NAME

log = logging.getLogger(__name__)

PRIVATE_DIR_MODE = 0o700
PRIVATE_FILE_MODE = 0o600


def make_private_dir(path: Path) -> None:
    """Create ``path`` (parents as ``mkdir -p`` would). The folder itself is
    made 0700 when created here, or when it is a ``.ctxls`` store folder; a
    folder of the user's choosing that already exists keeps its mode. A
    ``.ctxls`` folder also gets its ``.gitignore``."""
    existed = path.is_dir()
    path.mkdir(parents=True, exist_ok=True)
    if not existed or path.name == STORE_DIR_NAME:
        restrict(path, PRIVATE_DIR_MODE)
    if path.name == STORE_DIR_NAME:
        ignore_in_git(path)


def ignore_in_git(store_dir: Path) -> None:
    """A ``.ctxls`` folder gets its own ``.gitignore`` (``*``): the index is a
    local cache and never shows up in ``git status``."""
    ignore = store_dir / ".gitignore"
    if ignore.exists():
        return
    try:
        create_private_file(ignore)
        ignore.write_text("# written by ctxls: the index is a local cache\n*\n", encoding="utf-8")
    except OSError as exc:  # a read-only folder still serves the store
        log.warning("could not write %s: %s", ignore, exc)


def create_private_file(path: Path) -> None:
    """Create ``path`` empty with mode 0600 unless it exists (SQLite gives a
    database's mode to its -wal and -shm files)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_FILE_MODE)
    except FileExistsError:
        return
    try:
        os.fchmod(fd, PRIVATE_FILE_MODE)
    finally:
        os.close(fd)


def restrict(path: Path | str, mode: int = PRIVATE_FILE_MODE) -> None:
    """chmod ``path`` to ``mode``; a file we may not chmod (another owner's)
    is left as it is, with one log line."""
    try:
        os.chmod(path, mode)
    except FileNotFoundError:
        pass
    except OSError as exc:
        log.warning("cannot make %s private (mode %o): %s", path, mode, exc)
