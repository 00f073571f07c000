"""Whether a store is this user's own: the seal (docs/architecture.md, "Trust model").

Written memory is served only from a store this OS user created for this path
on this machine. At creation a store gets a seal in its ``meta`` table: a
random store id, the owner's uid, the store file's real path (for the default
store, ``<root>/.ctxls/index.db``, so it names the root) and an HMAC-SHA256 of
the three under the user's store key. The key lives outside every checkout,
in the user's state folder (``$CTXLS_STATE_DIR``, else
``$XDG_STATE_HOME/ctxls``, else ``~/.local/state/ctxls``; ``store-key``,
0600, made on first use). A checkout can carry a store, but not a seal that
verifies here: a committed ``.ctxls/index.db``, one from an archive, one
copied from another folder or made by another user fails the check, and is
moved aside (quarantined) whole by ``Store``.

A store without a seal (from before seals, or stripped of its seal) is
quarantined like any other: an archive or a copied folder that brings its
``.git`` makes an untracked, user-owned store look exactly like one this user
made before seals, so git cannot tell them apart. Only without a usable state
folder (no home, read-only), where nothing can be sealed, is a store judged
by git alone, with a warning: adopted when the folder is a git work tree, the
file untracked, and this user owns it.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import os
import secrets
import stat
from pathlib import Path

from ctxls.index.git import git_command, run_git
from ctxls.index.private import PRIVATE_DIR_MODE, PRIVATE_FILE_MODE, create_whole, restrict
from ctxls.index.roots import state_dir

log = logging.getLogger(__name__)

KEY_FILE_NAME = "store-key"
_KEY_BYTES = 32
# The meta rows of a seal.
SEAL_KEYS = ("store_id", "owner_uid", "store_path", "store_seal")

_key_warned = False


def user_key() -> bytes | None:
    """This user's store key, made on first use; None when it cannot be
    read or made (warned once)."""
    global _key_warned
    folder = state_dir()
    try:
        if folder is None:
            raise OSError("no home folder to keep it in (set CTXLS_STATE_DIR)")
        path = folder / KEY_FILE_NAME
        folder.mkdir(parents=True, exist_ok=True, mode=PRIVATE_DIR_MODE)
        create_whole(path, secrets.token_bytes(_KEY_BYTES))  # unless made already
        restrict(path, PRIVATE_FILE_MODE)
        st = path.stat()
        key = _read_small(path, _KEY_BYTES + 1)
        if st.st_uid != os.getuid() or key is None or len(key) != _KEY_BYTES:
            raise OSError(f"{path} is not this user's store key")
        return key
    except OSError as exc:
        if not _key_warned:
            _key_warned = True
            log.warning("no store key (%s): stores cannot be sealed; a store is trusted only "
                        "when git says it is not part of the checkout", exc)
        return None


def _read_small(path: Path, limit: int) -> bytes | None:
    """At most ``limit`` bytes of the regular file ``path``; None when it is
    unreadable or something else (a folder, a FIFO, which would block a read)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except (OSError, ValueError):
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return os.read(fd, limit)
    except OSError:
        return None
    finally:
        os.close(fd)


def real_store_path(db_path: str) -> str:
    return os.path.realpath(db_path)


def _mac(key: bytes, store_id: str, uid: int, path: str) -> str:
    message = "\0".join((store_id, str(uid), path)).encode("utf-8", "surrogateescape")
    return hmac.new(key, message, hashlib.sha256).hexdigest()


def new_seal(db_path: str) -> dict[str, str] | None:
    """The meta rows sealing a store this user creates (or adopts) now."""
    key = user_key()
    if key is None:
        return None
    store_id, uid, path = secrets.token_hex(16), os.getuid(), real_store_path(db_path)
    return {"store_id": store_id, "owner_uid": str(uid), "store_path": path,
            "store_seal": _mac(key, store_id, uid, path)}


def untracked_and_owned(db_path: str) -> bool:
    """Git says the file is no part of the checkout (a work tree, the file
    untracked) and this user owns it."""
    try:
        if os.stat(db_path).st_uid != os.getuid():
            return False
    except OSError:
        return False
    real = os.path.realpath(db_path)
    proc = run_git(git_command("ls-files", "--error-unmatch", "--", real, root=os.path.dirname(real)), timeout=30)
    # 0: tracked; 1 with "did not match": untracked in a work tree; 128: no repository.
    return proc is not None and proc.returncode == 1 and b"did not match" in proc.stderr


def problem(meta: dict[str, str], db_path: str) -> str | None:
    """Why a store's written rows are not to be trusted here, None when they
    are: its seal verifies, or it has none and may be adopted (the caller
    seals it then)."""
    if "store_id" not in meta:
        if user_key() is None and untracked_and_owned(db_path):
            return None
        return "it has no seal of this user and may have come with the checkout or an archive"
    try:
        uid = int(meta.get("owner_uid", ""))
    except ValueError:
        return "its seal is malformed"
    if uid != os.getuid():
        return f"it was sealed by another user (uid {uid})"
    if meta.get("store_path") != real_store_path(db_path):
        return f"it was sealed for another place ({meta.get('store_path')!r})"
    key = user_key()
    if key is None:
        return None if untracked_and_owned(db_path) else "no store key to verify its seal"
    expected = _mac(key, meta["store_id"], uid, meta["store_path"])
    if not hmac.compare_digest(expected, meta.get("store_seal", "")):
        return "its seal was not made with this user's key (another machine or a forgery)"
    return None


def _checked_path(store_id: str) -> Path | None:
    state = state_dir()
    if not isinstance(store_id, str) or not store_id.isalnum() or state is None:
        return None
    return state / "checked" / store_id


def record_checked(store_id: str, signature: tuple[int, int, int]) -> None:
    """The file as this user's process left it after using (and checking) it:
    the next open skips the whole-file check when the file is still exactly so."""
    path = _checked_path(store_id)
    if path is None:
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=PRIVATE_DIR_MODE)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(" ".join(map(str, signature)), encoding="ascii")
        os.replace(tmp, path)
    except OSError as exc:
        log.debug("could not record the store check: %s", exc)


# A record is three decimal integers: anything longer is no record.
_CHECKED_RECORD_BYTES = 80


def unchanged_since_checked(store_id: str, signature: tuple[int, int, int]) -> bool:
    """The file is as :func:`record_checked` last recorded it. A record that
    cannot be read as one (damaged bytes, a folder, a FIFO in its place)
    reads as none: the check runs, and records it anew."""
    path = _checked_path(store_id)
    record = _read_small(path, _CHECKED_RECORD_BYTES) if path is not None else None
    try:
        return record is not None and record.decode("ascii") == " ".join(map(str, signature))
    except UnicodeDecodeError:
        return False

