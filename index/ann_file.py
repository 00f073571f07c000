"""The on-disk envelope of the ANN cache (``vectors.usearch``).

usearch's own loader trusts its input: garbage in the middle of a file made
it crash the process (SIGSEGV) or allocate until the OOM killer came, on
every start. So the payload is never handed to usearch before it is proven to
be exactly what this user's ctxls wrote:

    magic  b"CTXLSANN"          8 bytes
    format version              u32 (little endian)
    dimension                   u32
    vector count                u64
    payload length              u64
    HMAC-SHA256 of the above and the payload, keyed by a per-user secret   32 bytes
    payload                     usearch's serialized index

The key lives outside every repository (the user's state folder, 0600), so a
file that arrived with a checkout, or was written by another user, fails the
check like a damaged one and the index is rebuilt from SQLite, which is the
truth. Any failure is a ``AnnFileInvalid`` with the reason; the caller rebuilds.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import struct
from pathlib import Path

MAGIC = b"CTXLSANN"
FORMAT_VERSION = 1
_HEADER = struct.Struct("<8sIIQQ")
_MAC_BYTES = 32
PREFIX_BYTES = _HEADER.size + _MAC_BYTES


class AnnFileInvalid(Exception):
    """The ANN file is missing, damaged, foreign or of another format."""


def state_dir() -> Path:
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return Path(base) / "ctxls"


def _user_key() -> bytes:
    """This user's secret, made on first use; without one nothing is trusted."""
    path = state_dir() / "ann.key"
    try:
        key = path.read_bytes()
        if len(key) == 32:
            return key
    except OSError:
        pass
    key = secrets.token_bytes(32)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"ann.key.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(key)
    # Two processes racing both write a key; the first rename wins for good.
    try:
        os.link(tmp, path)
    except FileExistsError:
        key = path.read_bytes()
    finally:
        os.unlink(tmp)
    if len(key) != 32:
        raise OSError(f"{path}: not a ctxls key")
    return key


def _mac(key: bytes, header: bytes, payload: bytes | bytearray) -> bytes:
    digest = hmac.new(key, header, hashlib.sha256)
    digest.update(payload)
    return digest.digest()


def encode(payload: bytes | bytearray, dim: int, count: int) -> bytes:
    header = _HEADER.pack(MAGIC, FORMAT_VERSION, dim, count, len(payload))
    return header + _mac(_user_key(), header, payload)


def write(path: Path, payload: bytes | bytearray, dim: int, count: int) -> None:
    """Write header + payload to ``path`` (the caller renames it into place)."""
    with open(path, "wb") as out:
        out.write(encode(payload, dim, count))
        out.write(payload)
        out.flush()
        os.fsync(out.fileno())


def read(path: Path, dim: int) -> bytes:
    """The verified payload of ``path`` for vectors of ``dim`` dimensions.

    Reads no more than the header promises, and the header's promise is
    checked against the file's size before anything is allocated for it.
    """
    try:
        with open(path, "rb") as src:
            prefix = src.read(PREFIX_BYTES)
            if len(prefix) < PREFIX_BYTES:
                raise AnnFileInvalid("shorter than its header")
            magic, version, file_dim, _count, length = _HEADER.unpack_from(prefix)
            if magic != MAGIC:
                raise AnnFileInvalid("not a ctxls ANN file")
            if version != FORMAT_VERSION:
                raise AnnFileInvalid(f"format {version}, expected {FORMAT_VERSION}")
            if file_dim != dim:
                raise AnnFileInvalid(f"dimension {file_dim} != {dim}")
            size = os.fstat(src.fileno()).st_size
            if size != PREFIX_BYTES + length:
                raise AnnFileInvalid(f"size {size} != {PREFIX_BYTES + length} its header says")
            payload = src.read(length)
    except OSError as exc:
        raise AnnFileInvalid(str(exc)) from exc
    if len(payload) != length:
        raise AnnFileInvalid("changed while read")
    try:
        key = _user_key()
    except OSError as exc:
        raise AnnFileInvalid(f"no key to check it with: {exc}") from exc
    expected = _mac(key, prefix[:_HEADER.size], payload)
    if not hmac.compare_digest(expected, prefix[_HEADER.size:]):
        raise AnnFileInvalid("checksum mismatch (damaged, or not written by this user's ctxls)")
    return payload

