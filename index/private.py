"""Files only their owner may read, whatever the umask.

The trust boundary is the OS user (docs/architecture.md, "Trust model"): the
store holds every tenant's written memory, so its folder is 0700, its files
0600, and the daemon's socket 0600. A umask can only take bits away from a
mode given at creation, so each is also set explicitly once created.

Nothing here writes or changes modes through a symbolic link: a
repository may ship its own ``.ctxls`` as a link (``.ctxls -> /``: the
daemon made the target 0700, wrote its store, socket and log there) or
links inside it (``daemon.log -> ~/.bashrc``, ``index.db-wal -> …``: text
of the repository appended where a shell reads it).
"""

from __future__ import annotations

import errno
import logging
import os
import secrets
import stat
from pathlib import Path

from ctxls.index.roots import STORE_DIR_NAME, STORE_GITIGNORE

log = logging.getLogger(__name__)

PRIVATE_DIR_MODE = 0o700
PRIVATE_FILE_MODE = 0o600


class LinkRefused(OSError):
    """A store folder or file that is a symbolic link: not written through."""


def refuse_link(path: Path | str, what: str) -> None:
    """``LinkRefused`` (naming ``what``) when ``path`` is a symbolic link."""
    if os.path.islink(path):
        raise LinkRefused(errno.ELOOP, f"{what} {path} is a symbolic link (to {os.readlink(path)}); ctxls "
                          "writes only to a real folder and file there: remove the link, or give dbPath its real path")


def make_private_dir(path: Path) -> None:
    """Create ``path`` (parents as ``mkdir -p`` would). The folder itself is
    made 0700 when created here, or when it is a ``.ctxls`` store folder; a
    folder of the user's choosing that already exists keeps its mode. A
    ``.ctxls`` folder also gets its ``.gitignore``; one that is a symbolic
    link is refused (``LinkRefused``), and a file of that name too (saying
    what to do): either may have come with the repository."""
    if path.name == STORE_DIR_NAME:
        refuse_link(path, "the store folder")
        if path.exists() and not path.is_dir():  # a file of that name came with the checkout
            raise NotADirectoryError(errno.ENOTDIR, f"the store folder {path} is a file; ctxls keeps "
                                     "its index in a folder of that name: move the file, or give "
                                     "dbPath a store elsewhere")
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
    try:
        create_whole(ignore, STORE_GITIGNORE.encode("utf-8"))  # a link, dangling or not, exists too
    except OSError as exc:  # a read-only folder (or a full disk) still serves the store
        log.warning("could not write %s: %s", ignore, exc)


# What link() says on a file system that has no hard links (FAT, some FUSE mounts).
_NO_HARD_LINKS = {errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.ENOSYS}


def _create_in_place(path: Path, data: bytes) -> bool:
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, PRIVATE_FILE_MODE)
    except FileExistsError:
        return False
    with os.fdopen(fd, "wb") as out:
        out.write(data)
        out.flush()
        os.fsync(out.fileno())
    return True


def create_whole(path: Path, data: bytes) -> bool:
    """Create ``path`` (0600) holding ``data``, whole or not at all: written
    and synced under a temporary name beside it, then linked into place. A
    file created empty and then written was left empty or cut short by a
    full disk or a kill between the two, and read as damaged for good (the
    store key, a ``.ctxls/.gitignore``). False when ``path`` exists already
    (a link too, dangling or not: nothing is written through it)."""
    if os.path.lexists(path):  # made already: nothing to write (its folder may be read-only)
        return False
    tmp = path.with_name(f".{path.name}.{os.getpid()}-{secrets.token_hex(4)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, PRIVATE_FILE_MODE)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
        finally:
            os.close(fd)
        try:
            os.link(tmp, path)
        except FileExistsError:
            return False
        except OSError as exc:
            if exc.errno not in _NO_HARD_LINKS:
                raise
            return _create_in_place(path, data)  # a file system without hard links
        return True
    finally:
        try:
            os.unlink(tmp)
        except OSError:
            pass


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


def open_private(path: Path | str, append: bool = False) -> int:
    """A descriptor writing ``path`` (created 0600, else emptied or, with
    ``append``, appended to), never through a symbolic link (``ELOOP``), and
    only a regular file: a FIFO a repository ships as ``.ctxls/daemon.log``
    or a lock file would block the open until a reader came (opened without
    blocking, it fails with ENXIO, or is refused here)."""
    flags = (os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
             | (os.O_APPEND if append else os.O_TRUNC))
    fd = os.open(path, flags, PRIVATE_FILE_MODE)
    try:
        require_regular(fd, path)
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def locked_file(path: Path | str, wait: bool = True) -> int:
    """``path`` opened as ``open_private`` does and held under an exclusive
    flock, waiting for it unless not ``wait`` (closing the descriptor
    unlocks); OSError when it cannot be (BlockingIOError: another holds it)."""
    import fcntl  # POSIX only, like every lock of the daemon's socket

    fd = open_private(path, append=True)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX if wait else fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BaseException:
        os.close(fd)
        raise
    return fd


def require_regular(fd: int, path: Path | str) -> None:
    """Refuses (OSError) an open ``fd`` that is not a regular file."""
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        raise OSError(errno.EINVAL, "not a regular file", str(path))


def restrict(path: Path | str, mode: int = PRIVATE_FILE_MODE) -> None:
    """chmod ``path`` to ``mode``; a file we may not chmod (another owner's)
    is left as it is, with one log line, and so is a symbolic link (chmod
    would change its target)."""
    if os.path.islink(path):
        log.warning("not making %s private: it is a symbolic link", path)
        return
    try:
        os.chmod(path, mode)
    except FileNotFoundError:
        pass
    except OSError as exc:
        log.warning("cannot make %s private (mode %o): %s", path, mode, exc)
