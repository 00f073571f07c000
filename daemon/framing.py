"""LSP framing (``Content-Length`` headers) of the daemon socket, on the
standard library alone: the CLI and the MCP bridge import it to talk to a
running daemon without loading the engine or the LSP types (about a second
of CPU a call, which an agent calling ``ctxls recall`` in a loop pays every
time)."""

from __future__ import annotations

import hashlib
import json
import os
import socket
import stat
import struct
from pathlib import Path
from typing import TYPE_CHECKING

from ctxls.index.roots import state_dir

if TYPE_CHECKING:  # asyncio costs a CLI call ~0.1 s; only the daemon's readers use it
    import asyncio

SOCKET_NAME = "daemon.sock"
# sun_path is 108 bytes on Linux, including the terminating NUL.
MAX_SOCKET_PATH = 107
# The most one message may hold, on stdio and on the socket.
MAX_MESSAGE_BYTES = 64 << 20


def socket_path_for(db_path: str | os.PathLike[str]) -> Path:
    """The daemon's socket for the store ``db_path`` (its takeover lock and log
    go beside it): beside the store, unless that path is too long for a Unix
    socket (a repository deep in the tree). Then a folder of the user's state
    folder named by a hash of the store's path, alike for every process."""
    beside = Path(db_path).with_name(SOCKET_NAME)
    state = state_dir()
    if len(os.fsencode(beside)) <= MAX_SOCKET_PATH or state is None:
        return beside
    digest = hashlib.sha256(os.fsencode(Path(db_path).parent)).hexdigest()[:16]
    return state / "sockets" / digest / SOCKET_NAME


# An answer over MAX_MESSAGE_BYTES goes out as this error instead: no reader
# (ours: read_body) takes a longer message, and one that refused it could no
# longer follow the stream, so the request went unanswered.
OVERSIZED_ANSWER = -32603


class OversizedMessage(ValueError):
    """A header announcing a body over MAX_MESSAGE_BYTES: the stream can still
    be followed once the body is read away (``read_away``)."""

    def __init__(self, length: int):
        super().__init__(f"a message of {length} bytes is over the {MAX_MESSAGE_BYTES >> 20} MiB bound")
        self.length = length


def encode(message: dict) -> bytes:
    """A message's JSON body: compact (no space after "," and ":"; an answer
    listing rows with large metas was half again its size), UTF-8."""
    text = json.dumps(message, ensure_ascii=False, separators=(",", ":"))
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        # A lone surrogate (a request id "\ud800" is echoed back) has no UTF-8
        # form; JSON's \u escapes carry it exactly, so the peer gets its id back.
        return json.dumps(message, ensure_ascii=True, separators=(",", ":")).encode("ascii")


def frame(message: dict) -> bytes:
    body = encode(message)
    if len(body) > MAX_MESSAGE_BYTES and "id" in message and "method" not in message:
        body = encode({"jsonrpc": "2.0", "id": message["id"], "error": {
            "code": OVERSIZED_ANSWER,
            "message": f"the answer is {len(body)} bytes, over the {MAX_MESSAGE_BYTES >> 20} MiB "
                       "bound of a message; ask for less (a smaller limit or n, body: false)",
            "data": {"bytes": len(body), "limit": MAX_MESSAGE_BYTES}}})
    return frame_body(body)


def frame_body(body: bytes) -> bytes:
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


async def read_body(reader: asyncio.StreamReader) -> bytes | None:
    """One LSP-framed body, or None at end of stream; ValueError when the
    header is unusable (the stream cannot be followed any further), its
    OversizedMessage when it announces a body over MAX_MESSAGE_BYTES
    (``read_away`` follows the stream past it)."""
    length = None
    while True:
        line = await reader.readline()
        if not line:
            return None
        line = line.strip()
        if not line:
            break
        name, _, value = line.decode("ascii", "replace").partition(":")
        if name.lower() == "content-length":
            length = int(value.strip())
    if length is None or length < 0:
        raise ValueError("missing or unreasonable Content-Length")
    if length > MAX_MESSAGE_BYTES:
        raise OversizedMessage(length)
    return await reader.readexactly(length)


async def read_away(reader: asyncio.StreamReader, length: int, keep: int = 0) -> bytes | None:
    """Read ``length`` bytes in pieces, holding none but the first ``keep``
    (returned); None when the stream ends first."""
    head = b""
    while length > 0:
        piece = await reader.read(min(length, 1 << 20))
        if not piece:
            return None
        if len(head) < keep:
            head += piece[:keep - len(head)]
        length -= len(piece)
    return head


def peer_credentials(sock: socket.socket) -> tuple[int, int] | None:
    """(pid, uid) of the process at the other end of a Unix socket; None
    where the platform cannot tell."""
    if not hasattr(socket, "SO_PEERCRED"):
        return None
    creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    pid, uid, _ = struct.unpack("3i", creds)
    return pid, uid


def peer_uid(sock: socket.socket) -> int | None:
    """The user id of the process at the other end of a Unix socket; None
    where the platform cannot tell."""
    creds = peer_credentials(sock)
    return None if creds is None else creds[1]


def is_socket_file(path: Path) -> bool:
    """Whether ``path`` itself is a socket: not a link to one. A `daemon.sock`
    link shipped in a repository's `.ctxls/` sent every verb, an editor's
    session and written memory to another repository's daemon (or to any
    socket of this user's, which never answered)."""
    try:
        return stat.S_ISSOCK(os.lstat(path).st_mode)
    except OSError:
        return False


def foreign_daemon(path: Path, sock: socket.socket) -> str | None:
    """Why the daemon reached on ``path`` through ``sock`` is not this user's
    (another user's daemon reads every query and answers with its own
    memory), or None when it is."""
    try:
        owner = os.lstat(path).st_uid
    except OSError as exc:
        return f"{path} cannot be checked: {exc.strerror or exc}"
    if owner != os.geteuid():
        return f"{path} belongs to another user (uid {owner})"
    uid = peer_uid(sock)
    if uid is not None and uid != os.geteuid():
        return f"the daemon on {path} runs as another user (uid {uid})"
    return None
