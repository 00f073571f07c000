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
    binding                     32 bytes: SHA-256 of what the vectors belong to
    HMAC-SHA256 of the above and the payload, keyed by a per-user secret   32 bytes
    payload                     usearch's serialized index

The binding names the store (its random ``store_id``), the vector table and
the model: the keys are the store's row ids, which every store numbers from 1,
so a file of another store (two ``dbPath`` stores in one folder shared one, a
file copied from another repository) verified and ranked with the wrong
vectors. One of another store or model is rebuilt like a damaged one.

The key is the user's store key (``trust.user_key``: the user's state folder,
0600, outside every repository), so a file that arrived with a checkout, or
was written by another user, fails the check like a damaged one and the index
is rebuilt from SQLite, which is the truth. Any failure is an
``AnnFileInvalid`` with the reason; the caller rebuilds. Without a key no file
is written (each start rebuilds the index from SQLite).
"""

from __future__ import annotations

import hashlib
import hmac
import os
import struct
from pathlib import Path

from ctxls.index.private import open_private, require_regular
from ctxls.index.trust import user_key

MAGIC = b"CTXLSANN"
# 2: the binding.
FORMAT_VERSION = 2
_HEADER = struct.Struct("<8sIIQQ32s")
_MAC_BYTES = 32
PREFIX_BYTES = _HEADER.size + _MAC_BYTES


class AnnFileInvalid(Exception):
    """The ANN file is missing, damaged, foreign or of another format."""


def _mac(key: bytes, header: bytes, payload: bytes | bytearray) -> bytes:
    digest = hmac.new(key, header, hashlib.sha256)
    digest.update(payload)
    return digest.digest()


def _binding_digest(binding: str) -> bytes:
    return hashlib.sha256(binding.encode("utf-8", "surrogateescape")).digest()


def write(path: Path, payload: bytes | bytearray, dim: int, count: int, binding: str = "") -> bool:
    """Write header + payload to ``path`` (the caller renames it into place);
    False, writing nothing, without a key to sign it with. ``binding``: what
    the vectors belong to (semantic.py: store id, table, model)."""
    key = user_key()
    if key is None:
        return False
    header = _HEADER.pack(MAGIC, FORMAT_VERSION, dim, count, len(payload), _binding_digest(binding))
    with os.fdopen(open_private(path), "wb") as out:  # never through a link planted in the store folder
        out.write(header + _mac(key, header, payload))
        out.write(payload)
        out.flush()
        os.fsync(out.fileno())
    return True


def read(path: Path, dim: int, binding: str | None = None) -> bytes:
    """The verified payload of ``path`` for vectors of ``dim`` dimensions
    (and, unless None, of ``binding``: the one it was written with).

    Reads no more than the header promises, and the header's promise is
    checked against the file's size before anything is allocated for it.
    """
    try:
        # Without blocking and a regular file only: a FIFO in its place is damage, not a wait.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        try:
            require_regular(fd, path)
            os.set_blocking(fd, True)
        except OSError:
            os.close(fd)
            raise AnnFileInvalid("not a regular file") from None
        with os.fdopen(fd, "rb") as src:
            prefix = src.read(PREFIX_BYTES)
            if len(prefix) < PREFIX_BYTES:
                raise AnnFileInvalid("shorter than its header")
            magic, version, file_dim, _count, length, bound = _HEADER.unpack_from(prefix)
            if magic != MAGIC:
                raise AnnFileInvalid("not a ctxls ANN file")
            if version != FORMAT_VERSION:
                raise AnnFileInvalid(f"format {version}, expected {FORMAT_VERSION}")
            if file_dim != dim:
                raise AnnFileInvalid(f"dimension {file_dim} != {dim}")
            if binding is not None and bound != _binding_digest(binding):
                raise AnnFileInvalid("written for another store or vector model")
            size = os.fstat(src.fileno()).st_size
            if size != PREFIX_BYTES + length:
                raise AnnFileInvalid(f"size {size} != {PREFIX_BYTES + length} its header says")
            payload = src.read(length)
    except OSError as exc:
        raise AnnFileInvalid(str(exc)) from exc
    if len(payload) != length:
        raise AnnFileInvalid("changed while read")
    key = user_key()
    if key is None:
        raise AnnFileInvalid("no store key to check it with")
    expected = _mac(key, prefix[:_HEADER.size], payload)
    if not hmac.compare_digest(expected, prefix[_HEADER.size:]):
        raise AnnFileInvalid("checksum mismatch (damaged, or not written by this user's ctxls)")
    return payload

