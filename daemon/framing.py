"""LSP framing (``Content-Length`` headers) of the daemon socket, on the
standard library alone: the CLI and the MCP bridge import it to talk to a
running daemon without loading the engine or the LSP types (about a second
of CPU a call, which an agent calling ``ctxls recall`` in a loop pays every
time)."""

from __future__ import annotations

import hashlib
import json
import os
import re
import socket
import stat
import struct
from pathlib import Path
from typing import TYPE_CHECKING, Any

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


# A header line is at most this long; anything longer is the rest of a body.
MAX_HEADER_LINE = 64 << 10
# A header name (RFC 9110 token) and the one header that frames a message.
_HEADER = re.compile(rb"^([!#$%&'*+.^_`|~0-9A-Za-z-]+)[ \t]*:(.*)$", re.DOTALL)
_CONTENT_LENGTH = re.compile(rb"content-length[ \t]*:", re.IGNORECASE)


class FramingError(ValueError):
    """A header block that gives no usable body length: answered -32700
    (``id: null``); the reader then skips to the next ``Content-Length``
    header, so the connection goes on."""


def content_length(values: list[bytes]) -> int:
    """The body length of a header block whose ``Content-Length`` headers
    hold ``values``: the one rule of every transport (stdio, TCP, the shared
    socket, an editor's proxy). The header repeated with one value is that
    value; with different values the block is unreadable, as one with none
    or with a value that is not a positive decimal number (no JSON is empty).
    FramingError saying which."""
    if not values:
        raise FramingError("no Content-Length header")
    distinct = sorted({value.strip() for value in values})
    if len(distinct) > 1:
        shown = ", ".join(repr(v.decode("ascii", "replace")[:40]) for v in distinct[:4])
        raise FramingError(f"conflicting Content-Length headers ({shown})")
    value = distinct[0]
    if not (value.isdigit() and int(value) > 0):  # bytes.isdigit: ASCII digits only
        raise FramingError(f"unusable Content-Length {value.decode('ascii', 'replace')[:40]!r}")
    return int(value)


def header_tail(line: bytes) -> bytes:
    """What is kept of a line over MAX_HEADER_LINE while it is read: its
    tail from its last ``Content-Length`` header on (the rest of a body,
    then a header), else its last few bytes (a header may begin there)."""
    headers = list(_CONTENT_LENGTH.finditer(line))
    start = headers[-1].start() if headers else len(line)
    if len(line) - start > MAX_HEADER_LINE // 2:  # no header is that long
        start = len(line)
    return line[start if start < len(line) else max(len(line) - 16, 0):]


class HeaderBlock:
    """One message's header lines, read as every transport reads them: the
    name in any case, spaces around the value, CRLF or LF line ends. Before
    a block, blank lines are skipped, and so are bytes that are no header
    (the rest of a body whose Content-Length was understated, or of a block
    that was unreadable) up to the next ``Content-Length`` header, even one
    in the middle of a line: after an unreadable block the next message is
    found and read."""

    def __init__(self) -> None:
        self._restart()

    def _restart(self) -> None:
        self.values: list[bytes] = []  # the Content-Length headers' values
        self.problem: str | None = None
        self.in_header = False

    def take(self, line: bytes, over: bool) -> bool:
        """Read one line (``over``: it was over MAX_HEADER_LINE, kept as
        ``header_tail`` keeps it); True once it ended the block."""
        found = _CONTENT_LENGTH.search(line)
        if found is not None and found.start() > 0:  # a body's rest, then a header
            line = line[found.start():]
            self._restart()
        elif over:  # a header line no reader keeps: this message cannot be read
            self.problem, self.in_header = f"a header line over {MAX_HEADER_LINE >> 10} KiB", True
            return False
        stripped = line.strip()
        if not stripped:
            return self.in_header  # else blank lines between messages
        header = _HEADER.match(stripped)
        if header is None:  # not a header: the rest of a body, skipped
            self._restart()
            return False
        self.in_header = True
        if header.group(1).lower() == b"content-length":
            self.values.append(header.group(2))
        return False

    def length(self) -> int:
        """The body's length (``content_length``), FramingError when none is usable."""
        if self.problem is not None:
            raise FramingError(self.problem)
        return content_length(self.values)


async def _header_line(reader: asyncio.StreamReader) -> tuple[bytes, bool]:
    """The next line and whether it was over MAX_HEADER_LINE (of such a
    line ``header_tail`` is kept); b"" at the end of the stream."""
    import asyncio

    line, over = b"", False
    while True:
        try:
            piece, ended = await reader.readuntil(b"\n"), True
        except asyncio.IncompleteReadError as exc:  # the stream's end
            piece, ended = exc.partial, True
        except asyncio.LimitOverrunError as exc:  # over the reader's bound: read on in pieces
            piece, ended = await reader.readexactly(max(exc.consumed, 1)), False
        line += piece
        if len(line) >= MAX_HEADER_LINE:
            over, line = True, header_tail(line)
        if ended:
            return line, over


async def read_body(reader: asyncio.StreamReader) -> bytes | None:
    """One LSP-framed body, or None at end of stream. FramingError when its
    header block is unusable (``HeaderBlock``): answer it -32700, and the
    next call reads the next message; OversizedMessage when it announces a
    body over MAX_MESSAGE_BYTES (``read_away`` follows the stream past it)."""
    block = HeaderBlock()
    while True:
        line, over = await _header_line(reader)
        if not line:
            return None
        if block.take(line, over):
            break
    length = block.length()
    if length > MAX_MESSAGE_BYTES:
        raise OversizedMessage(length)
    return await reader.readexactly(length)


async def read_away(reader: asyncio.StreamReader, length: int,
                    keep: int = 0) -> tuple[bytes, bytes] | None:
    """Read ``length`` bytes in pieces, holding none but the first and the
    last ``keep`` (returned: head, tail); None when the stream ends first."""
    head = tail = b""
    while length > 0:
        piece = await reader.read(min(length, 1 << 20))
        if not piece:
            return None
        head, tail = _kept_ends(head, tail, piece, keep)
        length -= len(piece)
    return head, tail


def read_away_sync(read, length: int, keep: int = 0) -> tuple[bytes, bytes] | None:
    """``read_away`` on a blocking ``read(n)`` (stdio)."""
    head = tail = b""
    while length > 0:
        piece = read(min(length, 1 << 20))
        if not piece:
            return None
        head, tail = _kept_ends(head, tail, piece, keep)
        length -= len(piece)
    return head, tail


def _kept_ends(head: bytes, tail: bytes, piece: bytes, keep: int) -> tuple[bytes, bytes]:
    if len(head) < keep:
        head += piece[:keep - len(head)]
    return head, (tail + piece)[-keep:] if keep else b""


# What is kept of each end of a message over MAX_MESSAGE_BYTES while it is
# read away: its small top-level members (id, method) sit before or after
# the one big member (params), so they are found there.
OVERSIZED_END_BYTES = 4096
_JSON_SCALAR = r'-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?|"(?:[^"\\]|\\.)*"|true|false|null'
_URI_MEMBER = re.compile(r'"uri"\s*:\s*("(?:[^"\\]|\\.)*")')


def top_level_member(head: bytes, tail: bytes, name: str):
    """The value of the top-level scalar member ``name`` of the JSON object
    whose first bytes are ``head`` and last bytes ``tail`` (a nested member
    of that name is not it); None when neither end holds it."""
    text = head.decode("utf-8", "replace")
    member = re.compile(r'"%s"\s*:\s*(%s)' % (re.escape(name), _JSON_SCALAR))
    depth, at, in_string = 0, 0, False
    while at < len(text):
        char = text[at]
        if in_string:
            if char == "\\":
                at += 1
            elif char == '"':
                in_string = False
        elif char == '"':
            if depth == 1 and (found := member.match(text, at)) is not None:
                return _json_value(found.group(1))
            in_string = True
        elif char in "{[":
            depth += 1
        elif char in "}]":
            depth -= 1
        at += 1
    # At the end: the member, then only other scalar members, then the
    # object's closing brace (a nested one is followed by more braces).
    found = re.search(r'"%s"\s*:\s*(%s)\s*(?:,\s*"[^"\\]*"\s*:\s*(?:%s)\s*)*\}\s*$'
                      % (re.escape(name), _JSON_SCALAR, _JSON_SCALAR),
                      tail.decode("utf-8", "replace"))
    return None if found is None else _json_value(found.group(1))


def document_uri(head: bytes, tail: bytes) -> str | None:
    """The ``uri`` an LSP message's ends hold (its textDocument's): a quote
    inside a JSON string is escaped, so a ``"uri":"…"`` found is a member."""
    found = _URI_MEMBER.search(head.decode("utf-8", "replace"))
    if found is None:
        found = next(reversed(list(_URI_MEMBER.finditer(tail.decode("utf-8", "replace")))), None)
    value = None if found is None else _json_value(found.group(1))
    return value if isinstance(value, str) else None


def _json_value(text: str):
    try:
        return json.loads(text)
    except ValueError:
        return None


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


# What stands for a message over MAX_MESSAGE_BYTES once it is read away
# (read_message, daemon/proxy.py): a notification CtxlsProtocol answers
# (oversized_reply).
OVERSIZED_METHOD = "$/ctxls/oversizedMessage"


# What stands for a stdio message whose header had no usable Content-Length
# (daemon/proxy.py): a notification CtxlsProtocol answers with -32700.
BAD_FRAME_METHOD = "$/ctxls/badFrame"


def bad_frame_notice(problem: str) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "method": BAD_FRAME_METHOD,
                       "params": {"problem": problem}}).encode("ascii")


def oversized_notice(length: int, head: bytes = b"", tail: bytes = b"") -> bytes:
    """The notice standing for a message of ``length`` bytes read away, with
    what its ends (``head``, ``tail``) tell of it: its id, method and
    document uri, where they hold them."""
    params: dict[str, Any] = {"bytes": length}
    for name in ("id", "method"):
        if (value := top_level_member(head, tail, name)) is not None:
            params[name] = value
    if (uri := document_uri(head, tail)) is not None:
        params["uri"] = uri
    return json.dumps({"jsonrpc": "2.0", "method": OVERSIZED_METHOD, "params": params}).encode("ascii")


async def read_message(reader: asyncio.StreamReader) -> bytes | None:
    """``read_body``, but a body over MAX_MESSAGE_BYTES is read away and its
    ``oversized_notice`` stands for it, so the stream goes on (it ended the
    connection, and an editor's session with it). None at end of stream."""
    try:
        return await read_body(reader)
    except OversizedMessage as exc:
        ends = await read_away(reader, exc.length, OVERSIZED_END_BYTES)
        return None if ends is None else oversized_notice(exc.length, *ends)
