"""`ctxls serve` over stdio when the repository already has a daemon: a thin
proxy that forwards the editor's LSP stream to the owner's socket.

The first message decides. If it is `initialize` for one folder whose socket
(`ROOT/.ctxls/daemon.sock`) answers, this process forwards every message both
ways, unchanged, to a session of the owner (daemon/sessions.py). Otherwise it
serves in process as before and opens the socket itself (the owner).

The proxy remembers what it needs to survive the owner: the `initialize`
params and the editor's open documents (text kept current from didChange). If
the owner goes away, requests in flight are answered with an error, a new
owner is found or started (`ctxls serve --root ROOT --socket`, bound to this
process, with the editor's index options), and the session is
replayed: initialize, initialized, and a didOpen of every open buffer with its
unsaved text.
"""

from __future__ import annotations

import asyncio
import io
import json
import logging
import logging.handlers
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, BinaryIO

from lsprotocol import types
from pygls.protocol import default_converter
from pygls.workspace import TextDocument
from pygls.workspace.position_codec import PositionCodec

from ctxls.daemon.client import (LIVENESS_TIMEOUT_S, TAKEOVER_ATTEMPTS, TAKEOVER_RETRY_S,
                                 DaemonClient, DaemonNotAnswering, default_socket, takeover_lock)
from ctxls.daemon.edits import apply_changes
from ctxls.daemon.options import INDEX_OPTIONS, TAKEOVER_OPTIONS_ENV
from ctxls.daemon.sessions import PROXY_MARK
from ctxls.daemon.framing import (MAX_HEADER_LINE, MAX_MESSAGE_BYTES, OVERSIZED_END_BYTES, FramingError,
                                  HeaderBlock, OversizedMessage, bad_frame_notice, foreign_daemon, frame,
                                  frame_body, header_tail, oversized_notice, read_away, read_away_sync,
                                  read_body, read_message, top_level_member)
from ctxls.daemon.outbox import Outbox
from ctxls.daemon.socket_server import error_response, socket_is_live, socket_owner_pid, valid_id
from ctxls.daemon.uris import local_path
from ctxls.index.private import make_private_dir, open_private

log = logging.getLogger(__name__)

# A takeover that found a dying owner, or lost the new one at once, tries
# again TAKEOVER_ATTEMPTS times, TAKEOVER_RETRY_S apart (daemon/client.py).
# How long a takeover waits for a new owner to listen (it indexes first):
TAKEOVER_TIMEOUT_S = 300.0
# A daemon log this large is set aside (daemon.log.1): before the next daemon
# starts, and by a running daemon as it writes (DaemonLogFile).
LOG_ROTATE_BYTES = 4 << 20
RESTARTED = -32603  # the answer to requests lost with the owner: retry
# What the proxy keeps of an editor's documents, and replays to a new owner.
DOCUMENT_SYNC = frozenset({"textDocument/didOpen", "textDocument/didChange", "textDocument/didClose"})


def read_first_message(stream: BinaryIO) -> tuple[bytes, dict | None]:
    """The raw bytes of the first LSP message and the message (None if it is
    not a readable one: the in-process server then reports it as usual)."""
    raw = io.BytesIO()
    block = HeaderBlock()
    while True:
        line = stream.readline(MAX_HEADER_LINE)
        raw.write(line)
        if not line or raw.tell() > 4 * MAX_HEADER_LINE:  # no header is that long
            return raw.getvalue(), None
        if not line.strip():
            break
        block.take(line, over=not line.endswith(b"\n"))
    try:
        length = block.length()
    except FramingError:
        return raw.getvalue(), None
    if length > MAX_MESSAGE_BYTES:
        ends = read_away_sync(stream.read, length, OVERSIZED_END_BYTES)
        return (b"" if ends is None else frame_body(oversized_notice(length, *ends))), None
    body = stream.read(length)
    raw.write(body)
    try:
        message = json.loads(body)
    except (ValueError, RecursionError):  # not JSON, or nested too deep
        return raw.getvalue(), None
    return raw.getvalue(), message if isinstance(message, dict) else None


class FramedStdin:
    """stdin for pygls: the already-read first message put back in front, and
    each message handed on framed as pygls reads it (``Content-Length:
    N\\r\\n\\r\\n`` then the body) whatever the client wrote. pygls matched
    only that exact header line: a header block it could not read (no
    Content-Length, a negative or spaced one, LF line ends) made it take the
    next message's header for its own, so that message went unanswered too.

    - A header block is read as the shared socket reads it
      (framing.HeaderBlock): any case, spaces around the value, CRLF or LF.
    - One without a usable Content-Length (framing.content_length) becomes
      a notice answered -32700.
    - Bytes that are no header (the rest of a body whose Content-Length was
      short, or of one that had none) are skipped up to the next
      Content-Length header, even one on the same line.
    - A body over MAX_MESSAGE_BYTES is read away in pieces and becomes a
      notice answered -32700: pygls would read it whole (a Content-Length of a
      terabyte killed the process with a MemoryError, unanswered)."""

    def __init__(self, prefix: bytes, stream: BinaryIO):
        self._prefix = io.BytesIO(prefix)
        self._stream = stream
        self._frame = io.BytesIO()  # what pygls reads next

    # -- what pygls calls -----------------------------------------------------

    def readline(self) -> bytes:
        line = self._frame.readline()
        if not line and self._next_frame():
            line = self._frame.readline()
        return line

    def read(self, n: int) -> bytes:
        return self._frame.read(n)  # a frame's body follows its header lines

    # -- reading the client's bytes -----------------------------------------------

    def _read(self, n: int) -> bytes:
        data = self._prefix.read(n)
        return data + self._stream.read(n - len(data)) if len(data) < n else data

    def _raw_line(self) -> bytes:
        line = self._prefix.readline(MAX_HEADER_LINE)
        if len(line) < MAX_HEADER_LINE and not line.endswith(b"\n"):
            line += self._stream.readline(MAX_HEADER_LINE - len(line))
        return line

    def _line(self) -> tuple[bytes, bool]:
        """The next line, and whether it was over MAX_HEADER_LINE: of such a
        line only its tail from the last Content-Length header on is kept
        (the rest of a body, then a header), else its last few bytes."""
        line, over = self._raw_line(), False
        while line and not line.endswith(b"\n"):  # over-long (or the stream's end)
            over = over or len(line) >= MAX_HEADER_LINE
            line = header_tail(line)
            more = self._raw_line()
            if not more:
                break
            line += more
        return line, over

    def _next_frame(self) -> bool:
        """Read the client's next message into ``self._frame``; False at the end."""
        block = HeaderBlock()
        while True:
            line, over = self._line()
            if not line:
                return False
            if block.take(line, over):
                break
        try:
            length = block.length()
        except FramingError as exc:
            self._frame = io.BytesIO(frame_body(bad_frame_notice(str(exc))))
            return True
        if length > MAX_MESSAGE_BYTES:
            ends = read_away_sync(self._read, length, OVERSIZED_END_BYTES)
            if ends is None:
                return False
            self._frame = io.BytesIO(frame_body(oversized_notice(length, *ends)))
            return True
        body = self._read(length)
        if len(body) < length:
            return False  # the stream ended inside the body
        self._frame = io.BytesIO(frame_body(body))
        return True


def single_root(params: dict) -> Path | None:
    folders = params.get("workspaceFolders") or []
    if not isinstance(folders, list):
        return None  # not the LSP shape: the in-process server answers it
    uris = [f.get("uri") for f in folders if isinstance(f, dict)]
    if not folders and isinstance(params.get("rootUri"), str):
        uris = [params["rootUri"]]
    if len(uris) != 1 or not isinstance(uris[0], str):
        return None  # multi-root editors keep an in-process server
    path = local_path(uris[0])
    return Path(path).resolve() if path else None


def owner_socket(message: dict | None, no_socket: bool) -> tuple[Path, Path] | None:
    """(root, socket) when this editor's repository already has a live owner."""
    if no_socket or not message or message.get("method") != "initialize":
        return None
    params = message.get("params") or {}
    if not isinstance(params, dict):
        return None  # the in-process server answers it (-32602)
    options = params.get("initializationOptions")
    if isinstance(options, dict) and (options.get("socket") is False or options.get("dbPath")):
        return None  # no socket wanted, or a store elsewhere: serve in process
    root = single_root(params)
    if root is None:
        return None
    path = default_socket(root)
    return (root, path) if socket_is_live(path) else None


def wire_stdio() -> tuple[BinaryIO, BinaryIO]:
    """The editor's stdin and stdout on descriptors of their own (not
    inherited by children); fd 0 then reads the null device and fd 1 writes
    to stderr, so neither a child process nor a stray print (ours, a
    library's, C code's) reads the editor's messages or writes into the
    answers (as `ctxls mcp` does, daemon/mcp_stdio.py)."""
    wire_in = os.fdopen(os.dup(0), "rb")
    wire_out = os.fdopen(os.dup(1), "wb")
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    try:
        os.dup2(2, 1)
    except OSError:  # started with stderr closed
        os.dup2(null, 1)
    os.close(null)
    return wire_in, wire_out


def serve_stdio(server: Any, no_socket: bool) -> int:
    """`ctxls serve` on stdio: a proxy to the repository's owner, or the owner.
    Either way stdout is an ``Outbox``: the event loop never waits for the
    editor to read. Its exit status is LSP's: 0 when the editor sent
    ``shutdown`` before it ended the session, else 1."""
    stdin, wire_out = wire_stdio()
    raw, first = read_first_message(stdin)
    found = owner_socket(first, no_socket)
    stdout = Outbox(wire_out)
    try:
        if found is None:
            server.no_socket = no_socket
            server.start_io(stdin=FramedStdin(raw, stdin), stdout=stdout)
            return 0 if server.protocol.shutdown_seen else 1
        root, path = found
        process_id = first["params"].get("processId")
        if isinstance(process_id, int):
            server.client_watch.watch(process_id)
        log.info("proxying to the daemon on %s", path)
        proxy = Proxy(first, root, path, stdin, stdout)
        try:
            asyncio.run(proxy.run())
        except KeyboardInterrupt:
            pass
        return 0 if proxy.shutting_down else 1
    finally:
        stdout.close()  # the answers still queued reach the editor first


class Proxy:
    def __init__(self, initialize: dict, root: Path, socket_path: Path, editor_in: BinaryIO,
                 editor_out: Outbox):
        self.initialize = initialize
        self.editor_in, self.editor_out = editor_in, editor_out  # stdin and stdout (wire_stdio)
        self.root = root
        self.socket_path = socket_path
        self.documents: dict[str, TextDocument] = {}
        self.initialized = False  # the editor sent `initialized`
        self.pending: dict[Any, str] = {}  # editor request id -> method, awaiting the owner
        self.swallow: set[Any] = set()  # our own replayed initialize's id
        self.codec = PositionCodec()
        self.converter = default_converter()
        self.owner_writer: asyncio.StreamWriter | None = None
        self.owner_reader: asyncio.StreamReader | None = None
        self.connected = asyncio.Event()
        self.shutting_down = False
        self.replays = 0
        # Document-sync messages tracked, and how many of them the last
        # replay's didOpen texts already hold: one of those still waiting
        # to be sent (the owner was being replaced) is not sent again, or
        # an incremental edit would be applied twice.
        self.synced = 0
        self.replayed_through = 0
        self.pending[initialize.get("id")] = "initialize"
        # Since when the owner has said nothing while a request waited
        # (loop time; answer_if_owner_stops).
        self.silent_since = 0.0

    # -- the editor side --------------------------------------------------------

    def to_editor(self, message: dict) -> None:
        self.editor_out.write(frame(message))

    async def editor_reader(self) -> asyncio.StreamReader:
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=1 << 26)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), self.editor_in)
        return reader

    def track(self, message: dict) -> None:
        """Keep the editor's open documents, to replay them to a new owner."""
        method, params = message.get("method"), message.get("params") or {}
        if method in DOCUMENT_SYNC:
            self.synced += 1
        if method == "initialized":
            self.initialized = True
        elif method == "textDocument/didOpen":
            item = params["textDocument"]
            self.documents[item["uri"]] = TextDocument(
                item["uri"], item["text"], item.get("version"), item.get("languageId"),
                position_codec=self.codec)
        elif method == "textDocument/didChange":
            document = self.documents.get(params["textDocument"]["uri"])
            if document is None:
                return
            # An edit out of range: the owner tells the editor; as there, the
            # last good text stays.
            text, _ = apply_changes(document.source, [
                (None if change.get("range") is None
                 else self.converter.structure(change["range"], types.Range), change["text"])
                for change in params.get("contentChanges") or []], self.codec.encoding)
            if text is not None:
                document.apply_change(types.TextDocumentContentChangeWholeDocument(text=text))
            document.version = params["textDocument"].get("version")
        elif method == "textDocument/didClose":
            self.documents.pop(params["textDocument"]["uri"], None)
        elif method == "shutdown":
            self.shutting_down = True

    async def pump_editor(self) -> None:
        reader = await self.editor_reader()
        while True:
            try:
                body = await read_message(reader)  # an oversized one: its notice, for the owner
            except ValueError as exc:  # a header without a usable Content-Length
                self.to_editor(error_response(None, -32700, f"parse error: {exc}"))
                continue
            if body is None:
                return  # the editor is done: so is this proxy (the owner's session ends with us)
            try:
                message = json.loads(body)
            except (ValueError, RecursionError):
                message = None
            if not isinstance(message, dict):
                # Not a message this proxy can read: the owner's session answers it
                # (-32700 / -32600), exactly as it would have without the proxy.
                await self.to_owner(body)
                continue
            if message.get("method") == "exit":
                return
            try:
                self.track(message)
            except Exception:  # a malformed sync message: forward it, the owner answers it
                log.exception("cannot track %s", message.get("method"))
            if valid_id(message.get("id")) and isinstance(message.get("method"), str):
                if not self.pending:
                    self.silent_since = asyncio.get_running_loop().time()
                self.pending[message["id"]] = message["method"]
            await self.to_owner(message, self.synced if message.get("method") in DOCUMENT_SYNC
                                else None)

    # -- the owner side -------------------------------------------------------

    async def to_owner(self, message: dict | bytes, synced: int | None = None) -> None:
        """A message, or a body the proxy could not read (forwarded as is).
        ``synced``: a document-sync message's number (``self.synced``), not
        sent when a replay to a new owner already held it."""
        data = frame(message) if isinstance(message, dict) else frame_body(message)
        while True:
            await self.connected.wait()
            if synced is not None and synced <= self.replayed_through:
                return
            writer = self.owner_writer
            try:
                writer.write(data)
                await writer.drain()
                return
            except (ConnectionError, OSError):
                # The owner is gone: a request is answered by the takeover;
                # document sync is replayed from self.documents.
                if not isinstance(message, dict) or ("id" in message and "method" in message):
                    return
                if str(message.get("method", "")).startswith("textDocument/"):
                    return
                await asyncio.sleep(0.05)

    async def connect(self) -> None:
        reader, writer = await asyncio.open_unix_connection(str(self.socket_path), limit=1 << 26)
        foreign = foreign_daemon(self.socket_path, writer.get_extra_info("socket"))
        if foreign is not None:  # never send this editor's session and buffers there
            writer.close()
            raise ConnectionError(f"not using the ctxls daemon socket: {foreign}")
        self.owner_reader, self.owner_writer = reader, writer

    async def pump_owner(self) -> None:
        params = dict(self.initialize["params"]) | {PROXY_MARK: True}
        try:
            await self.connect()
        except OSError:  # the owner went away since we looked
            await asyncio.to_thread(self.ensure_owner)
            await self.connect()
        self.owner_writer.write(frame(self.initialize | {"params": params}))
        self.silent_since = asyncio.get_running_loop().time()
        self.connected.set()
        await self.relay_owner()

    async def relay_owner(self) -> None:
        """The owner's messages to the editor, until the owner is gone while
        this session ends; an owner gone earlier is taken over. A message
        this proxy cannot take (over the bound, an unusable header, not
        JSON) is answered to the requests it may have been for: the proxy
        itself never ends on one (the editor's server then died, and every
        later request went unanswered)."""
        while True:
            try:
                body = await read_body(self.owner_reader)
            except OversizedMessage as exc:
                ends = await read_away(self.owner_reader, exc.length, OVERSIZED_END_BYTES)
                if ends is not None:
                    self.answer_unreadable(ends[0], f"{exc}; it was read away")
                    continue
                body = None  # the owner went away inside it
            except ValueError as exc:  # a header without a usable Content-Length
                log.error("the ctxls daemon sent %s; reconnecting", exc)
                self.owner_writer.close()  # no later message can be found in this stream
                body = None
            except OSError:  # reset: a killed owner is as gone as one that closed
                body = None
            self.silent_since = asyncio.get_running_loop().time()
            if body is None:
                if self.shutting_down:
                    return
                await self.take_over()
                continue
            try:
                message = json.loads(body)
            except (ValueError, RecursionError) as exc:
                self.answer_unreadable(body[:OVERSIZED_END_BYTES], f"its message is not JSON ({exc})")
                continue
            if not isinstance(message, dict):
                self.answer_unreadable(b"", "its message is not a JSON object")
                continue
            if "method" not in message and "id" in message:  # a response
                if message["id"] in self.swallow:
                    self.swallow.discard(message["id"])
                    continue
                method = self.pending.pop(message["id"], None)
                if method == "initialize":
                    encoding = ((message.get("result") or {}).get("capabilities") or {}).get(
                        "positionEncoding")
                    self.codec = PositionCodec(encoding or types.PositionEncodingKind.Utf16)
            self.to_editor(message)

    def answer_unreadable(self, head: bytes, problem: str) -> None:
        """Answer with an error the request a message from the owner that
        this proxy could not take was for: the one whose id its first bytes
        (``head``) hold at the top level, else every waiting request (their
        later answers, if any, are swallowed: one answer per request)."""
        message = f"the ctxls daemon's answer could not be passed on: {problem}"
        log.error("%s", message)
        msg_id = top_level_member(head, b"", "id")
        if msg_id is not None and msg_id in self.swallow:  # for a request already answered
            self.swallow.discard(msg_id)
            return
        waiting = [msg_id] if msg_id in self.pending else [
            i for i, method in self.pending.items() if method != "initialize"]
        for waiting_id in waiting:
            del self.pending[waiting_id]
            if waiting_id != msg_id:
                self.swallow.add(waiting_id)
            self.to_editor({"jsonrpc": "2.0", "id": waiting_id,
                            "error": {"code": -32603, "message": message}})

    async def answer_if_owner_stops(self) -> None:
        """The editor's waiting requests answered with DaemonNotAnswering's
        message (its PID, what to do) when the owner has said nothing for
        the liveness bound while they waited and does not answer a liveness
        exchange of its own: a stopped or hung daemon, whose socket the
        kernel still accepts, left the editor waiting forever. A request
        that rightly takes minutes (a forced pass, an impact sweep) is left
        alone: its owner answers the exchange. A pending ``initialize`` is
        that exchange itself. Late answers, should the owner resume, are
        swallowed: one answer per request."""
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(LIVENESS_TIMEOUT_S / 4)
            if not self.connected.is_set() or not self.pending \
                    or loop.time() - self.silent_since < LIVENESS_TIMEOUT_S:
                continue
            if "initialize" not in self.pending.values():
                try:
                    client = await asyncio.to_thread(DaemonClient.connect, self.socket_path)
                except DaemonNotAnswering:
                    pass
                except OSError:  # gone: pump_owner reads its end and takes over
                    continue
                else:
                    if client is not None:
                        client.close()
                    self.silent_since = loop.time()  # alive: busy with long work
                    continue
            pid = await asyncio.to_thread(socket_owner_pid, self.socket_path)
            message = str(DaemonNotAnswering(self.socket_path, pid))
            log.warning("%s", message)
            for msg_id in list(self.pending):
                del self.pending[msg_id]
                self.swallow.add(msg_id)
                self.to_editor({"jsonrpc": "2.0", "id": msg_id,
                                "error": {"code": -32603, "message": message}})

    async def take_over(self) -> None:
        """The owner exited: find or start the next one and replay this session."""
        self.connected.clear()
        log.warning("the ctxls daemon on %s went away; taking over", self.socket_path)
        for msg_id, method in list(self.pending.items()):
            if method == "shutdown":
                self.to_editor({"jsonrpc": "2.0", "id": msg_id, "result": None})
            else:
                self.to_editor({"jsonrpc": "2.0", "id": msg_id, "error": {
                    "code": RESTARTED, "message": "the ctxls daemon restarted; please retry"}})
        self.pending.clear()
        for attempt in range(TAKEOVER_ATTEMPTS):
            try:
                await asyncio.to_thread(self.ensure_owner)
                await self.connect()
                await self._replay()
                break
            except OSError as exc:
                # A killed owner's socket can still accept for a moment while
                # the kernel tears it down, and then reset: look again.
                if attempt == TAKEOVER_ATTEMPTS - 1:
                    raise
                log.warning("taking over again: %s", exc)
                await asyncio.sleep(TAKEOVER_RETRY_S)
        self.connected.set()
        log.warning("session replayed to the new daemon (%d open buffers)", len(self.documents))

    async def _replay(self) -> None:
        """This session, as the new owner needs it: initialize, initialized
        and every open buffer's text."""
        self.replays += 1
        replay_id = f"ctxls-proxy-replay-{self.replays}"
        self.swallow.add(replay_id)
        params = dict(self.initialize["params"]) | {PROXY_MARK: True}
        messages = [{"jsonrpc": "2.0", "id": replay_id, "method": "initialize", "params": params}]
        if self.initialized:
            messages.append({"jsonrpc": "2.0", "method": "initialized", "params": {}})
        self.replayed_through = self.synced  # the texts below hold every edit tracked so far
        for document in self.documents.values():
            messages.append({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {
                "textDocument": {"uri": document.uri, "languageId": document.language_id or "",
                                 "version": document.version or 0, "text": document.source}}})
        for message in messages:
            self.owner_writer.write(frame(message))
        await self.owner_writer.drain()

    def _beside_socket(self, name: str, mode: str):
        """The file ``name`` beside the socket, opened to append, never
        through a link the repository shipped (``open_private``)."""
        path = self.socket_path.with_name(name)
        try:
            make_private_dir(path.parent)
            return os.fdopen(open_private(path, append=True), mode)
        except OSError as exc:  # such a link, a read-only folder
            raise ConnectionError(f"cannot start a ctxls daemon: {path}: {exc.strerror or exc}") from exc

    def _rotate_log(self) -> None:
        """Each new daemon appends to ``daemon.log``; past LOG_ROTATE_BYTES it
        becomes ``daemon.log.1`` (the one before is dropped), so years of
        takeovers never fill the disk. A link there is never followed (lstat)."""
        path = self.socket_path.with_name("daemon.log")
        try:
            if path.lstat().st_size >= LOG_ROTATE_BYTES:
                os.replace(path, path.with_name("daemon.log.1"))
        except OSError:  # none yet; or it cannot be moved: appended to as it is
            pass

    def daemon_environment(self) -> dict[str, str]:
        """The environment of a daemon this proxy starts: its editor's index
        options go with it (options.TAKEOVER_OPTIONS_ENV), so the daemon
        indexes as that editor asked, not with the defaults."""
        environment = dict(os.environ)
        environment.pop(TAKEOVER_OPTIONS_ENV, None)
        options = (self.initialize.get("params") or {}).get("initializationOptions")
        if isinstance(options, dict):
            environment[TAKEOVER_OPTIONS_ENV] = json.dumps(
                {name: value for name, value in options.items() if name in INDEX_OPTIONS})
        return environment

    def ensure_owner(self) -> None:
        """Block until a daemon listens on the socket, starting one if nobody
        does. A lock file makes proxies that lost the same owner start one
        daemon between them: the others wait and connect to it (and so
        does a `ctxls mcp` that lost it, or hosts the engine and listens
        itself where it takes the lock first: daemon/client.py)."""
        try:
            lock = takeover_lock(self.socket_path)
        except OSError as exc:  # a link the repository shipped there, a read-only folder
            raise ConnectionError(f"cannot start a ctxls daemon: "
                                  f"{self.socket_path.with_name('takeover.lock')}: "
                                  f"{exc.strerror or exc}") from exc
        with lock:
            if socket_is_live(self.socket_path):
                return
            self._rotate_log()
            log_file = self._beside_socket("daemon.log", "ab")
            # Bound to this process: when our editor exits, the daemon does too
            # and the remaining proxies start the next one. -P: the folder it
            # runs in (an editor starts servers in the repository) is not put
            # on sys.path, so the repository's own `ctxls/` or `numpy.py` is
            # never imported in its place.
            daemon = subprocess.Popen(
                [sys.executable, "-P", "-m", "ctxls.daemon.cli", "serve", "--root", str(self.root),
                 "--socket", str(self.socket_path), f"--clientProcessId={os.getpid()}",
                 "--log-file", str(self.socket_path.with_name("daemon.log"))],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log_file,
                start_new_session=True, env=self.daemon_environment())
            log_file.close()
            deadline = time.monotonic() + TAKEOVER_TIMEOUT_S
            while not socket_is_live(self.socket_path):
                if daemon.poll() is not None:
                    raise ConnectionError(f"the new ctxls daemon exited ({daemon.returncode}); "
                                          f"see {self.socket_path.with_name('daemon.log')}")
                if time.monotonic() > deadline:
                    raise ConnectionError("the new ctxls daemon did not start listening")
                time.sleep(0.1)

    async def run(self) -> None:
        editor = asyncio.create_task(self.pump_editor())
        owner = asyncio.create_task(self.pump_owner())
        watch = asyncio.create_task(self.answer_if_owner_stops())
        done, pending = await asyncio.wait({editor, owner}, return_when=asyncio.FIRST_COMPLETED)
        watch.cancel()
        for task in pending:
            task.cancel()
        for task in done:
            if task.exception() is not None:
                raise task.exception()
        if self.owner_writer is not None:
            self.owner_writer.close()


class DaemonLogFile(logging.handlers.RotatingFileHandler):
    """The log of a daemon a proxy started (``serve --log-file``), whose stderr
    is the same file. Past LOG_ROTATE_BYTES it becomes ``daemon.log.1`` while
    the daemon runs too (a daemon serving for months with a repeating warning
    filled the disk), and stderr follows to the new file, so what the
    interpreter itself prints still lands in the log. Never opened through a
    link the repository shipped."""

    def __init__(self, path: Path):
        super().__init__(path, maxBytes=LOG_ROTATE_BYTES, backupCount=1, encoding="utf-8")

    def _open(self):
        return os.fdopen(open_private(self.baseFilename, append=True), "a", encoding="utf-8",
                         errors="backslashreplace")

    def doRollover(self) -> None:
        super().doRollover()
        os.dup2(self.stream.fileno(), sys.stderr.fileno())
