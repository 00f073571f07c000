"""The shared daemon socket: any number of clients (CLI, MCP bridge, scripts)
talk JSON-RPC (LSP framing) to the running daemon, so they see the editor's
unsaved buffers and never open a second writer on the store.

It serves every custom ``ctxls/*`` request through the same plain functions
as the LSP handlers (``app.CUSTOM_METHODS``), plus ``initialize``,
``shutdown``, ``exit`` (which ends that connection only) and
``$/cancelRequest``. A connection that opens with an editor proxy's
``initialize`` (daemon/sessions.py) is instead a full LSP session.
"""

from __future__ import annotations

import asyncio
import errno
import functools
import ipaddress
import json
import logging
import os
import socket
import sys
import traceback
from pathlib import Path
from typing import Any

from lsprotocol import types

from ctxls import __version__
from ctxls.daemon.framing import (MAX_MESSAGE_BYTES, MAX_SOCKET_PATH, OVERSIZED_METHOD, FramingError,
                                  frame, is_socket_file, peer_credentials, peer_uid, read_message)
from ctxls.daemon.sessions import is_session_request, serve_session
from ctxls.daemon.workspaces import connection_capacity
from ctxls.index.errors import EngineError
from ctxls.index.private import locked_file, make_private_dir, restrict

log = logging.getLogger(__name__)

# A connection's requests in flight: past this, it is not read until one is
# answered. An answer waits to be written while the client does not read, so
# without a bound a client sending requests and never reading grew the
# daemon by each whole answer (400 unread 900 KB gets: 161 MB -> 946 MB).
MAX_IN_FLIGHT = 32
# Replies the reading loop queues itself (to bodies it could not read) past
# this many unread bytes end the connection: the same client, sending bad
# bodies instead.
MAX_UNREAD_REPLY_BYTES = 1 << 20

# Connections the kernel queues for the socket before accept (asyncio's default).
LISTEN_BACKLOG = 100

# How often a listening daemon looks that its socket file is still its own:
# `git clean -fdx` or `rm -rf .ctxls` deletes it (and the store) under a
# running daemon, which then binds it again as the store is opened anew.
SOCKET_CHECK_S = 1.0
# The longest wait between tries to bind a deleted socket again that failed
# (a folder in the way, a read-only folder): each failure is logged.
SOCKET_RETRY_MAX_S = 30.0

# Set (to anything but "0") to get tracebacks in internal errors' data.
DEBUG_ENV = "CTXLS_DEBUG"


def debug_errors() -> bool:
    """Internal errors carry their traceback in ``error.data`` only when set."""
    return os.environ.get(DEBUG_ENV, "") not in ("", "0")


def valid_id(value: Any) -> bool:
    """A request id JSON-RPC allows: a number or a string (null only in replies)."""
    return isinstance(value, (int, str)) and not isinstance(value, bool)


def socket_is_live(path: Path) -> bool:
    """Whether a daemon accepts connections on ``path`` (False for a stale file)."""
    return socket_owner_pid(path) is not None


def socket_owner_pid(path: Path) -> int | None:
    """The process id of the daemon accepting connections on ``path`` (0 where
    the platform cannot tell), or None when nothing does (a stale file, or
    no socket itself: a link to another's, which `_bind` replaces)."""
    if not is_socket_file(path):
        return None
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    probe.settimeout(1.0)
    try:
        probe.connect(str(path))
        creds = peer_credentials(probe)
        return 0 if creds is None else creds[0]
    except (BlockingIOError, TimeoutError):
        # A full backlog (EAGAIN): a daemon that listens but accepts nothing
        # (stopped, hung) still holds the store; nobody may take its place.
        return 0
    except OSError:
        return None
    finally:
        probe.close()


# Where Linux lists each TCP socket with the uid owning it.
PROC_NET_TCP = (Path("/proc/net/tcp"), Path("/proc/net/tcp6"))


def tcp_peer_uid(connection: socket.socket) -> int | None:
    """The uid owning the other end of an accepted loopback TCP
    ``connection``: that of the row of /proc/net/tcp (or tcp6) whose local
    address is our peer's and whose remote one is ours, the client's own
    socket. None where that cannot be told (no /proc, or no such row: the
    client closed it already)."""
    peer = _endpoint(connection.getpeername())
    ours = _endpoint(connection.getsockname())
    for table in PROC_NET_TCP:
        try:
            rows = table.read_text().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            # sl local rem st tx:rx tr:when retrnsmt uid timeout inode ...
            fields = row.split()
            # A row of inode 0 has no socket (TIME_WAIT): its uid is 0, nobody's.
            if (len(fields) > 9 and fields[9] != "0" and _proc_endpoint(fields[1]) == peer
                    and _proc_endpoint(fields[2]) == ours):
                return int(fields[7])
    return None


def refuse_tcp_peer(connection: socket.socket) -> bool:
    """Whether a TCP client must be turned away unread (logged, saying why):
    it is another user's, or whose it is cannot be told. A TCP port, unlike
    the 0600 Unix socket, is open to every local user (docs/protocol.md)."""
    uid = tcp_peer_uid(connection)
    if uid is None:
        log.warning("refused a TCP connection: cannot tell which user made it (no row of "
                    "/proc/net/tcp or tcp6 names its socket: no /proc here, or the client "
                    "closed it already)")
        return True
    if uid != os.geteuid():
        log.warning("refused a TCP connection from another user (uid %d)", uid)
        return True
    return False


def _endpoint(address: tuple) -> tuple[ipaddress.IPv4Address | ipaddress.IPv6Address, int]:
    return _unmapped(ipaddress.ip_address(address[0])), address[1]


def _proc_endpoint(text: str) -> tuple[ipaddress.IPv4Address | ipaddress.IPv6Address, int] | None:
    """An ``ADDRESS:PORT`` of /proc/net/tcp{,6}: the address as 32-bit
    words, each in hexadecimal in the host's byte order; the port in hexadecimal."""
    address, _, port = text.partition(":")
    try:
        raw = bytes.fromhex(address)
        words = [raw[i:i + 4] for i in range(0, len(raw), 4)]
        if sys.byteorder == "little":
            words = [word[::-1] for word in words]
        return _unmapped(ipaddress.ip_address(b"".join(words))), int(port, 16)
    except ValueError:  # not a row of the table's format
        return None


def _unmapped(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    """An IPv4 client of a dual-stack socket is listed as ::ffff:a.b.c.d."""
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    return ip


def bind_lock(socket_path: Path) -> int:
    """``<socket>.lock`` beside the socket, open and locked (closing the
    descriptor unlocks): daemons starting together look at the socket and
    bind it one at a time, so two never both find it stale and remove each
    other's. Not the takeover lock (daemon/client.py): a proxy holds that
    while the daemon it started binds, and a hosting `ctxls mcp` while it
    binds itself. Never opened through a link. OSError when it cannot be."""
    return locked_file(socket_path.with_name(socket_path.name + ".lock"))


def in_the_way(path: Path, exc: OSError) -> str:
    """What to tell the user when ``path`` holds something that is not a
    socket and cannot be removed (a folder, a file we may not delete)."""
    what = "a folder" if path.is_dir() and not path.is_symlink() else "a file that cannot be removed"
    return (f"not listening on {path}: {what} is in the way ({exc.strerror or exc}); "
            "move it away and start the daemon again")


def error_response(msg_id: Any, code: int, message: str, data: Any = None) -> dict:
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": msg_id, "error": error}


def invalid_request(message: Any) -> dict | None:
    """The -32600 reply a parsed body needs when it is not a request or
    notification JSON-RPC 2.0 accepts, else None."""
    if not isinstance(message, dict):
        return error_response(None, -32600, "invalid request: not a JSON-RPC 2.0 request object")
    if "id" in message and not valid_id(message["id"]):
        return error_response(None, -32600, "invalid request: id must be a number or a string")
    if message.get("jsonrpc") != "2.0" or not isinstance(message.get("method"), str):
        return error_response(message.get("id"), -32600,
                              "invalid request: needs \"jsonrpc\": \"2.0\" and a string method")
    return None


class SocketServer:
    def __init__(self, server: Any, path: Path):
        self.server = server  # the CtxlsServer whose engines are shared
        self.path = path
        self._listener: asyncio.AbstractServer | None = None
        # (st_dev, st_ino) of the socket file this daemon bound: another at
        # the path means ours was deleted (and maybe another daemon's bound).
        self._identity: tuple[int, int] | None = None
        self._closed = False
        # Each open connection's task (it serves that connection) and its writer.
        self._open: dict[asyncio.Task, asyncio.StreamWriter] = {}

    @property
    def connections(self) -> int:
        return len(self._open)

    async def start(self) -> bool:
        """Listen, replacing a stale socket; False (logged: why, and what to
        do) if another daemon owns it or something else is in the way."""
        if len(str(self.path).encode()) > MAX_SOCKET_PATH:
            log.warning("socket path %s is too long for a Unix socket; not listening", self.path)
            return False
        try:
            make_private_dir(self.path.parent)
            lock = await asyncio.to_thread(bind_lock, self.path)
        except OSError as exc:  # a store folder the repository shipped as a link, a read-only one
            log.warning("not listening on %s: %s", self.path, exc.strerror or exc)
            return False
        try:
            listening = self._bind()
            self._identity = self._file_identity() if listening is not None else None
        finally:
            os.close(lock)
        if listening is None:
            return False
        if self._closed:  # closed while binding again: nobody is to listen there
            listening.close()
            self._unlink_own()
            return False
        previous, self._listener = self._listener, await asyncio.start_unix_server(
            self._serve, sock=listening)
        if previous is not None:  # bound to a deleted file: nobody can connect to it any more
            previous.close()  # stops accepting only: its connections are served on
        log.info("shared daemon socket listening on %s", self.path)
        return True

    def _file_identity(self) -> tuple[int, int] | None:
        try:
            st = os.lstat(self.path)
        except OSError:
            return None
        return st.st_dev, st.st_ino

    def owns_path(self) -> bool:
        """Whether the socket file at ``path`` is the one this daemon bound."""
        return self._identity is not None and self._file_identity() == self._identity

    async def _folder_ready(self) -> bool:
        """Whether the socket's folder is there to bind in again. A store's
        folder is made again by its store, once it notices it was deleted
        (asked here): one made here first let SQLite create an empty store
        file under a reader that had not noticed yet ("no such table"). A
        repository moved away is waited for, never created again."""
        stores = (await asyncio.to_thread(self.server.check_stores)
                  if self.server is not None else set())
        folder = self.path.parent
        return folder.is_dir() or (folder not in stores and folder.parent.is_dir())

    async def _bind_again(self) -> bool | None:
        """After our socket file was deleted: listen again (True), or False
        when another daemon listens there now (one daemon per repository: we
        step back), or None when it cannot be bound (logged; tried again)."""
        if await self.start():
            return True
        if socket_is_live(self.path):
            return False
        return None

    async def serve_forever(self) -> bool:
        """Serve until closed (True), binding the socket again whenever its
        file is deleted under us. False when another daemon took the path
        meanwhile: this one no longer listens (its connections are served
        on), and the caller steps back."""
        wait, noticed = SOCKET_CHECK_S, False
        while self._listener is not None:
            await asyncio.sleep(wait)
            if self._listener is None or self.owns_path():
                continue
            if not noticed:
                log.warning("the shared socket %s was deleted under this daemon; it listens "
                            "there again once it can", self.path)
                noticed = True
            try:
                if not await self._folder_ready():
                    continue  # the store has not made its folder again yet
                bound = await self._bind_again()
            except Exception:  # one failed try, never the watch: tried again later
                log.exception("binding %s again failed", self.path)
                bound = None
            if bound is False:
                log.warning("another ctxls daemon serves %s now; this one no longer listens "
                            "there", self.path)
                if self._listener is not None:
                    self._listener.close()
                    self._listener = None
                return False
            wait = SOCKET_CHECK_S if bound else min(wait * 2, SOCKET_RETRY_MAX_S)
            noticed = noticed and not bound
        return True

    def _bind(self) -> socket.socket | None:
        """The socket listening at ``path`` (called under ``bind_lock``), or
        None, logged why. Bound here rather than by asyncio's
        start_unix_server, which first removes any socket file at the path:
        a daemon that bound between our look and our bind lost its socket
        and ran on, unreachable. ``bind`` never replaces a file."""
        if self.path.exists() or self.path.is_symlink():
            if socket_is_live(self.path):
                log.warning("another ctxls daemon serves %s; not listening", self.path)
                return None
            try:
                self.path.unlink()  # left by a daemon that died
            except OSError as exc:  # a folder, a file we may not remove
                log.warning("%s", in_the_way(self.path, exc))
                return None
        listening = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            listening.bind(str(self.path))
        except OSError as exc:
            listening.close()
            if exc.errno == errno.EADDRINUSE:  # one that took no lock bound it since we looked
                log.warning("another ctxls daemon serves %s; not listening", self.path)
            else:
                log.warning("not listening on %s: %s", self.path, exc.strerror or exc)
            return None
        # Only this user may connect (the store folder is 0700 too, which also
        # covers the moment between bind and chmod).
        restrict(self.path)
        listening.listen(LISTEN_BACKLOG)
        listening.setblocking(False)
        return listening

    def close(self) -> None:
        self._closed = True
        if self._listener is not None:
            self._listener.close()
            self._listener = None
            self._unlink_own()

    async def end_connections(self) -> None:
        """End every connection (the process is stopping) and wait until each
        is let go: an editor's session releases its buffers while the stores
        are still open. Ended by closing its transport (the client reads the
        end, and takes over), never by cancelling its task: Python 3.11's
        streams log a cancelled connection task as an error."""
        serving = list(self._open)
        for writer in self._open.values():
            writer.transport.abort()
        if serving:
            await asyncio.wait(serving)

    def _unlink_own(self) -> None:
        if not self.owns_path():  # deleted under us; maybe another daemon's now
            return
        try:
            self.path.unlink()
        except OSError as exc:
            if exc.errno != errno.ENOENT:
                raise

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        sock = writer.get_extra_info("socket")
        uid = peer_uid(sock) if sock is not None else None
        if uid is not None and uid != os.geteuid():  # the socket is 0600; root ignores that
            log.warning("refused a connection from another user (uid %d)", uid)
            writer.close()
            return
        if self.connections >= connection_capacity():
            # Held connections cost a descriptor each: past the cap they would
            # starve the folders' stores (every request then -32006).
            writer.write(frame(error_response(None, -32000, "too many connections to this "
                                              "daemon; try again when others have closed")))
            writer.close()
            return
        serving = asyncio.current_task()
        self._open[serving] = writer
        write_lock = asyncio.Lock()
        tasks: dict[Any, asyncio.Task] = {}
        in_flight = asyncio.Semaphore(MAX_IN_FLIGHT)
        # Requests' tasks whose answer is written: a cancel that comes while
        # it drains (the client not reading) must not answer them again.
        answered: set[asyncio.Task] = set()
        shut_down = False  # this connection sent `shutdown`: only `exit` follows (LSP)

        async def send(message: dict) -> None:
            async with write_lock:
                writer.write(frame(message))
                answered.add(asyncio.current_task())
                await writer.drain()

        def send_unawaited(message: dict) -> None:
            """A reply of the reading loop itself (to a body it could not
            read): queued whole on the transport, never waited for, so a
            client that writes before it reads is still read (waiting for
            its reading there, while it waited for ours, deadlocked both)."""
            writer.write(frame(message))
            if writer.transport.get_write_buffer_size() > MAX_UNREAD_REPLY_BYTES:
                log.warning("closing a connection that reads none of its replies")
                writer.transport.abort()  # the reading loop then ends

        def finished(msg_id: Any, task: asyncio.Task) -> None:
            in_flight.release()
            tasks.pop(msg_id, None)
            written = task in answered
            answered.discard(task)
            if task.cancelled() and not written and not writer.is_closing():
                # Cancelled before it ran (its $/cancelRequest read right
                # after it), or while waiting for the write lock: not answered.
                send_unawaited(error_response(msg_id, -32800, "request cancelled"))

        try:
            while True:
                try:
                    body = await read_message(reader)
                except FramingError as exc:
                    # An unreadable header block: answered; the next read
                    # skips to the next Content-Length header (as on stdio).
                    send_unawaited(error_response(None, -32700, f"parse error: {exc}"))
                    continue
                except (ValueError, asyncio.IncompleteReadError) as exc:
                    # The framing is lost (a body over the bound, the stream
                    # ended inside one): answer, then end this connection.
                    send_unawaited(error_response(None, -32700, f"parse error: {exc}"))
                    break
                if body is None:
                    break
                try:
                    message = json.loads(body)
                except (ValueError, RecursionError) as exc:  # not JSON / UTF-8, or too deep
                    send_unawaited(error_response(None, -32700, f"parse error: {exc}"))
                    continue
                if isinstance(message, dict) and message.get("method") == OVERSIZED_METHOD:
                    send_unawaited(oversized_reply(message.get("params")))
                    continue
                invalid = invalid_request(message)
                if invalid is not None:
                    send_unawaited(invalid)
                    continue
                if message["method"] == "exit":
                    break
                if is_session_request(message) and not tasks:
                    # An editor's proxy: the rest of this connection is its LSP session.
                    await serve_session(self.server, reader, writer, message)
                    return
                if shut_down and "id" in message:
                    # LSP: InvalidRequest after `shutdown`, as over stdio; they were served.
                    send_unawaited(error_response(message["id"], -32600, "invalid request: this "
                                                  "connection sent shutdown; only exit may follow"))
                    continue
                if message["method"] == "shutdown" and "id" in message:
                    shut_down = True
                if "id" not in message:
                    if message.get("method") == "$/cancelRequest":
                        # Params of any shape: an id that is a list or params that
                        # are not an object raised here and ended the connection,
                        # its requests in flight unanswered.
                        params = message.get("params")
                        target = params.get("id") if isinstance(params, dict) else None
                        task = tasks.get(target) if valid_id(target) else None
                        if task is not None:
                            task.cancel()
                    continue
                await in_flight.acquire()
                task = asyncio.create_task(self._answer(message, send))
                tasks[message["id"]] = task
                task.add_done_callback(functools.partial(finished, message["id"]))
        except (ConnectionError, OSError):
            pass
        finally:
            for task in tasks.values():
                task.cancel()
            self._open.pop(serving, None)
            writer.close()

    async def _answer(self, message: dict, send) -> None:
        msg_id, method = message.get("id"), message.get("method")
        try:
            result = await self._result(method, message.get("params"))
            response = {"jsonrpc": "2.0", "id": msg_id, "result": result}
        except asyncio.CancelledError:
            response = error_response(msg_id, -32800, "request cancelled")
        except EngineError as exc:
            response = error_response(msg_id, exc.code, exc.message, exc.data)
        except LookupError:
            response = error_response(msg_id, -32601, f"method not found: {method}")
        except Exception as exc:  # one failed request, never the daemon
            log.exception("socket request %s failed", method)
            data = {"traceback": traceback.format_exc()} if debug_errors() else None
            response = error_response(msg_id, -32603, f"internal error: {type(exc).__name__}", data)
        try:
            await send(response)
        except (ConnectionError, OSError):
            pass
        except (ValueError, TypeError, RecursionError) as exc:  # the answer cannot be encoded
            log.exception("socket request %s: its answer cannot be encoded", method)
            try:
                await send(error_response(msg_id, -32603, "internal error: the answer could not "
                                          f"be encoded ({type(exc).__name__})"))
            except (ConnectionError, OSError):
                pass

    async def _result(self, method: Any, params: Any) -> Any:
        # Imported here: clients import this module for its framing and must stay light.
        from ctxls.daemon import wire

        if method == "initialize":
            return {"capabilities": {}, "serverInfo": {"name": "ctxls", "version": __version__}}
        if method == "shutdown":
            return None
        handler = self.server.custom_methods.get(method) if isinstance(method, str) else None
        if handler is None:
            raise LookupError(method)
        # Its lane, snapshot and cancel token (daemon/router.py), after the
        # editors' buffers it must see, as over LSP.
        return await self.server.run_routed(method, functools.partial(handler, self.server,
                                                                      wire.Params(params)))


def oversized_reply(params: Any) -> dict:
    """What a message over MAX_MESSAGE_BYTES, read away unparsed, gets, from
    what its ends told (framing.oversized_notice's params): a request
    whose id was read its error (-32600); a notification no reply
    (JSON-RPC) but the user hears it dropped, a didOpen's document not
    indexed from the editor (the file stays as on disk, where a file that
    size is skipped "too large"); else -32700 with a null id. Neovim's
    client rejected a reply with a null id to its didOpen of a 66 MiB file
    with a Lua error on screen."""
    params = params if isinstance(params, dict) else {}
    size = (f"a message of {params.get('bytes')} bytes is over the {MAX_MESSAGE_BYTES >> 20} "
            "MiB bound; it was read away unparsed")
    msg_id, method, uri = params.get("id"), params.get("method"), params.get("uri")
    if valid_id(msg_id):
        return {"jsonrpc": "2.0", "id": msg_id, "error": {
            "code": -32600, "message": f"invalid request: {size}",
            "data": {"bytes": params.get("bytes"), "limit": MAX_MESSAGE_BYTES}}}
    if isinstance(method, str) and is_notification(method):
        if method == types.TEXT_DOCUMENT_DID_OPEN and isinstance(uri, str):
            what = f"{uri} is too large to index from the editor (it stays as on disk)"
        else:
            what = f"{method} was dropped"
        message = f"ctxls: {what}: {size}"
        log.warning("%s", message)
        return {"jsonrpc": "2.0", "method": types.WINDOW_SHOW_MESSAGE,
                "params": {"type": types.MessageType.Warning.value, "message": message}}
    return {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": f"parse error: {size}"}}


def is_notification(method: str) -> bool:
    """An LSP notification method (lsprotocol's types say which)."""
    entry = types.METHOD_TO_TYPES.get(method)
    return entry is not None and entry[0].__name__.endswith("Notification")
