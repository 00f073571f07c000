"""How headless shells (CLI verbs, the MCP bridge) reach the engine: through
the running daemon's socket when there is one — so they see the editor's
unsaved buffers — else in this process over the store on disk.

Both paths run the same request functions (``CtxlsServer.custom_methods``) and
return the protocol's JSON, so output never depends on which one answered.
"""

from __future__ import annotations

import functools
import json
import socket
import threading
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from ctxls.daemon.framing import (MAX_MESSAGE_BYTES, encode, foreign_daemon, frame, frame_body,
                                  is_socket_file, peer_credentials, socket_path_for)
from ctxls.index.roots import store_dir
from ctxls.index.errors import EngineError, InvalidParams, StoreUnavailable, WriteFailed
from ctxls.index.vocabulary import locate_text_kept

if TYPE_CHECKING:
    from ctxls.index.cancel import CancelToken
    from ctxls.index.engine import Engine


class RemoteError(EngineError):
    """An error answer from the daemon, with its code and data kept."""

    def __init__(self, code: int, message: str, data: Any):
        super().__init__(message, data if isinstance(data, dict) else {})
        self.code = code


# How long a daemon may take to answer the liveness exchange (an
# ``initialize``, which its event loop answers itself, touching no engine)
# before it counts as not answering. A healthy daemon answers connect and
# initialize in about 1 ms, and in under 100 ms at worst on two cores
# busy with forced passes of 562 files and their embedding: the bound
# leaves two orders of magnitude for a machine under heavier load. Without
# it, a daemon that was stopped (SIGSTOP, a debugger) or hung, whose socket
# the kernel still accepts connections on, held every client forever.
LIVENESS_TIMEOUT_S = 10.0


class DaemonNotAnswering(ConnectionError):
    """A daemon listens on the socket but does not answer (or takes no
    more connections: its backlog is full). It still holds the store, so
    nothing may stand in for it (a second writer of the store); the user is
    told which process it is and what to do."""

    def __init__(self, path: Path, pid: int | None, queue_full: bool = False):
        """``pid``: None where it cannot be told (no connection to ask it
        through, a platform that does not say). ``queue_full``: the connect
        itself failed, the daemon's listen backlog full."""
        self.path, self.pid = path, pid
        what = ("listens but takes no more connections (its queue of them is full)" if queue_full
                else f"accepts connections but did not answer within {LIVENESS_TIMEOUT_S:g} s")
        if pid:
            who = f"the ctxls daemon on {path} (PID {pid})"
            todo = (f"it may be stopped (resume it: `kill -CONT {pid}`) or hung (end it: "
                    f"`kill {pid}`, or `kill -9 {pid}` if it stays)")
        else:
            who = f"the ctxls daemon on {path}"
            todo = (f"it may be stopped (resume it: `kill -CONT PID`) or hung (end it: `kill PID`); "
                    f"`ss -xlp src {path}` names its PID")
        super().__init__(f"{who} {what}: {todo}. It holds the index meanwhile, so nothing "
                         "answers in its place")


class DaemonClient:
    """A blocking JSON-RPC client on the daemon socket."""

    def __init__(self, sock: socket.socket, path: Path):
        self._sock = sock
        self._path = path
        self._file = sock.makefile("rb")
        self._next_id = 0
        self._liveness_checks = 0  # their ids ("alive-N") leave the requests' numbering as it was
        self._write_lock = threading.Lock()  # a cancellation is written from another thread
        self._just_answered = False  # the liveness exchange was the last one: no need for another

    @classmethod
    def connect(cls, path: Path) -> "DaemonClient | None":
        """None when no daemon listens there (absent or stale socket);
        DaemonNotAnswering when one accepts the connection but does not
        answer its first message (``check_answering``), or its backlog is full."""
        if not is_socket_file(path):
            return None
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(LIVENESS_TIMEOUT_S)
        try:
            sock.connect(str(path))
        except (BlockingIOError, TimeoutError):
            # Its backlog is full (EAGAIN): it accepts no connection, though
            # it listens. Not a stale socket: nobody may take its place.
            sock.close()
            raise DaemonNotAnswering(path, None, queue_full=True) from None
        except OSError:  # nobody listens (ECONNREFUSED), or no socket there any more
            sock.close()
            return None
        foreign = foreign_daemon(path, sock)
        if foreign is not None:
            sock.close()
            raise ConnectionError(f"not using the ctxls daemon socket: {foreign}")
        client = cls(sock, path)
        client.check_answering()
        return client

    def check_answering(self) -> None:
        """An ``initialize`` answered within LIVENESS_TIMEOUT_S, else
        DaemonNotAnswering and this connection closed. Only this exchange is
        bounded: the daemon answers every request, and one can rightly take
        minutes (a forced pass of a large folder, an impact sweep; a bound
        on whole requests once took such a one for a lost daemon and sent it
        again)."""
        self._sock.settimeout(LIVENESS_TIMEOUT_S)
        try:
            self._liveness_checks += 1
            self._exchange(f"alive-{self._liveness_checks}", "initialize", {}, None)
        except RemoteError:
            pass  # an answer all the same (a daemon of another version)
        except TimeoutError:
            creds = peer_credentials(self._sock)
            self._file.close()
            self._sock.close()
            raise DaemonNotAnswering(self._path, creds[0] if creds else None) from None
        self._sock.settimeout(None)
        self._just_answered = True

    def request(self, method: str, params: dict | None, token: CancelToken | None = None) -> Any:
        """The daemon's answer; ``token`` cancelled sends ``$/cancelRequest``
        (the daemon stops the work and answers -32800). A connection used
        before (an agent's, held between tool calls) first checks that the
        daemon still answers: it may have been stopped since."""
        if method == "ctxls/locate" and params:
            params = locate_text_cut(params)
        if not self._just_answered:
            self.check_answering()
        self._just_answered = False
        self._next_id += 1
        return self._exchange(self._next_id, method, params, token)

    def _exchange(self, msg_id: int | str, method: str, params: dict | None,
                  token: CancelToken | None) -> Any:
        params = params or {}
        body = encode({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
        if len(body) > MAX_MESSAGE_BYTES:
            # The daemon reads no longer message: it would end the connection,
            # and the caller hear of a lost daemon, not of what it sent.
            raise oversized_request(params, len(body))
        self._send(frame_body(body))
        if token is not None:
            token.on_cancel(functools.partial(self._cancel, msg_id))
        while True:
            message = self._read()
            if message.get("id") != msg_id:
                continue
            if "error" in message:
                error = message["error"]
                raise RemoteError(error.get("code", -32603), error.get("message", ""),
                                  error.get("data"))
            return message.get("result")

    def _send(self, data: bytes) -> None:
        with self._write_lock:
            self._sock.sendall(data)

    def _cancel(self, msg_id: int) -> None:
        try:
            self._send(frame({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": msg_id}}))
        except OSError:  # the connection is gone: no work left to stop
            pass

    def _read(self) -> dict:
        length = None
        while True:
            line = self._file.readline()
            if not line:
                raise ConnectionError("the daemon closed the connection")
            line = line.strip()
            if not line:
                break
            name, _, value = line.decode("ascii", "replace").partition(":")
            if name.lower() == "content-length":
                length = int(value)
        if length is None:
            raise ConnectionError("malformed message from the daemon")
        try:
            return json.loads(self._file.read(length))
        except json.JSONDecodeError as exc:
            raise ConnectionError(f"malformed message from the daemon: {exc}") from exc

    def close(self) -> None:
        try:
            self._sock.settimeout(LIVENESS_TIMEOUT_S)  # a stopped daemon reads nothing: never wait on it
            self._sock.sendall(frame({"jsonrpc": "2.0", "method": "exit"}))
        except OSError:
            pass
        self._file.close()
        self._sock.close()


def locate_text_cut(params: dict) -> dict:
    """``ctxls/locate``'s params with the text cut as the engine cuts it
    (``locate_text_kept``), which the engine's own cut then leaves as it is: a log pasted
    whole is answered as without a daemon, not sent whole (70 MiB was over
    the bound of a message, and the daemon ended the connection)."""
    text = params.get("text")
    if not isinstance(text, str):
        return params
    return params | {"text": locate_text_kept(text)}


def oversized_request(params: dict, size: int) -> InvalidParams:
    """The error of a request of ``size`` bytes, over the bound of a message
    (never sent): naming the param that made it so large, its largest."""
    largest = max(params, key=lambda name: len(encode({name: params[name]})), default="params")
    error = InvalidParams(largest, f"the request is {size} bytes, over the "
                                   f"{MAX_MESSAGE_BYTES >> 20} MiB bound of a message to the "
                                   "daemon; it was not sent: give less")
    error.data |= {"bytes": size, "limit": MAX_MESSAGE_BYTES}
    return error


def default_socket(root: Path) -> Path:
    return socket_path_for(store_dir(root.resolve()) / "index.db")


# A client that lost its daemon (an editor's proxy, daemon/proxy.py; the MCP
# bridge) tries again this many times, this far apart: a killed owner's
# socket can still accept for a moment while the kernel tears it down.
TAKEOVER_ATTEMPTS = 5
TAKEOVER_RETRY_S = 0.2


# How long a client that finds no daemon waits for one that is starting (a
# process holding takeover.lock) to listen, rather than open the store in
# process beside it: a cold start (imports, opening the store) takes a few
# seconds, and more on a loaded machine. Past it, the client goes on as if
# none were starting.
DAEMON_START_WAIT_S = 60.0
DAEMON_START_POLL_S = 0.05


def takeover_lock(socket_path: Path, wait: bool = True) -> IO[str]:
    """``takeover.lock`` beside the daemon socket, open and locked (closing
    it unlocks): who owns the socket is decided by one process at a time,
    and a daemon is starting while one holds it. An editor's proxy holds it
    while it starts the next daemon and waits for it to listen; a `ctxls
    mcp` that finds no daemon holds it while it looks once more, then hosts
    the engine and listens itself; a `serve --socket` holds it from its
    start until it listens (``wait`` False: the proxy that started it holds
    it already). Never opened through a link the repository shipped.
    OSError when it cannot be (BlockingIOError: not ``wait``, another holds it)."""
    import os

    from ctxls.index.private import locked_file, make_private_dir

    path = socket_path.with_name("takeover.lock")
    make_private_dir(path.parent)
    return os.fdopen(locked_file(path, wait), "a")


def daemon_starting(socket_path: Path) -> bool:
    """Whether a process holds ``takeover.lock`` beside ``socket_path`` now:
    a daemon of this root is starting and will listen there. Looked at
    without creating or writing anything (a CLI verb on a root with no store)."""
    import fcntl
    import os
    import stat

    try:
        fd = os.open(socket_path.with_name("takeover.lock"),
                     os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:  # none (nobody ever started one), or a link there: none starting
        return False
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return False
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        return False
    except BlockingIOError:
        return True
    except OSError:
        return False
    finally:
        os.close(fd)  # unlocks a shared lock just taken


def find_daemon(path: Path) -> DaemonClient | None:
    """The daemon listening on ``path``; one that is starting (``daemon_starting``)
    is waited for, at most DAEMON_START_WAIT_S: a client that went on without
    it opened the store in process beside it, a second writer. None when no
    daemon listens nor starts."""
    import time

    client = DaemonClient.connect(path)
    if client is not None or not daemon_starting(path):
        return client
    deadline = time.monotonic() + DAEMON_START_WAIT_S
    while daemon_starting(path) and time.monotonic() < deadline:
        time.sleep(DAEMON_START_POLL_S)
    return DaemonClient.connect(path)


class EngineAccess:
    """One root, reached through its daemon or in process. Threads may share
    it: each asks the daemon on a connection of its own (one connection
    answers in turn, so a quick request waited behind a slow one)."""

    def __init__(self, root: Path, use_daemon: bool = True, refresh: bool = True):
        self.root = root.resolve()
        self.refresh = refresh
        self.use_daemon = use_daemon
        self.daemon = find_daemon(default_socket(self.root)) if use_daemon else None
        self._local_ready = False
        self.hosted = False
        self._socket_loop: Any = None  # the event loop serving the shared socket, when hosted
        self._socket_thread: threading.Thread | None = None  # the thread running that loop
        self._thread_connection = threading.local()
        self._connections: list[DaemonClient] = []  # every thread's, ``daemon`` the first
        self._connections_lock = threading.Lock()

    @property
    def via(self) -> str:
        """"daemon", "hosted" (this process indexes and embeds) or "local"."""
        if self.daemon is not None:
            return "daemon"
        return "hosted" if self.hosted else "local"

    def request(self, method: str, params: dict | None = None,
                token: CancelToken | None = None) -> Any:
        """``token``: cancelled, the work stops (-32800), here or in the daemon."""
        if self.daemon is not None:
            return self._connection().request(method, params, token)
        return self._local(method, params, token)

    def _connection(self) -> DaemonClient:
        """This thread's connection to the daemon (the first thread's is ``daemon``)."""
        client = getattr(self._thread_connection, "client", None)
        if client is None:
            with self._connections_lock:
                client = self.daemon if not self._connections else \
                    DaemonClient.connect(default_socket(self.root))
                if client is None:
                    raise ConnectionError("the daemon stopped listening")
                self._connections.append(client)
            self._thread_connection.client = client
        return client

    def local_engine(self) -> Engine:
        """The in-process engine of this root (opened on first use)."""
        from ctxls.daemon.server import server

        engine = server.workspaces.engines.get(self.root)
        if engine is None:
            engine = server.workspaces.add_folder(self.root)
            if self.hosted:
                # Like a daemon: a first pass is due, so requests wait for it
                # (at most readyWaitMs), then answer "index not ready"; host()
                # starts the pass and the embedding once the socket listens.
                engine.follow_disk()
            elif self.refresh:
                try:
                    engine.index()  # incremental: a no-op pass costs a fraction of a second
                except (StoreUnavailable, WriteFailed):
                    # A full disk, a read-only store: the answer comes from what
                    # the store holds, partial, saying why (the engine's index_error).
                    engine.serve_stored_index()
            else:
                engine.serve_stored_index()  # nobody indexes here: answers are the store's
        return engine


    def host(self) -> None:
        """Serve this root in process as a daemon would (`ctxls mcp` without
        one). Unless told to use no daemon, it is then the daemon: it owns
        the root's socket as an editor's daemon does, so a CLI verb, another
        agent or an editor started later (its proxy, daemon/sessions.py)
        reaches this engine, never a second writer of the store that would
        not see the editor's unsaved buffers. Decided under the takeover
        lock: a daemon an editor's proxy started meanwhile is used instead."""
        if self.daemon is not None:
            return
        path = default_socket(self.root)
        try:
            lock = takeover_lock(path) if self.use_daemon else None
        except OSError:  # a store folder that is a link or read-only: nobody listens there
            lock = None
        try:
            if lock is not None:
                self.daemon = DaemonClient.connect(path)
                if self.daemon is not None:
                    return
            self.hosted = True
            engine = self.local_engine()
            self._local_ready = True
            if lock is not None:
                # Before the pass and the embedding start: they slowed the bind
                # by seconds, while the store already existed and a CLI verb
                # found no daemon and opened it in process beside this one.
                self._own_socket(path)
            if self.hosted:  # no editor's daemon took the socket meanwhile
                from ctxls.daemon.app import index_in_background

                engine.start_embedding()
                index_in_background(engine)
        finally:
            if lock is not None:
                lock.close()

    def _own_socket(self, path: Path) -> None:
        """Listen on the shared socket as a daemon does (the same
        ``open_shared_socket``), on an event loop of its own thread. Where
        an editor's daemon took the socket since this process looked (it
        listens without the lock), that daemon serves the root: this
        engine is closed and requests go there."""
        import asyncio

        from ctxls.daemon.server import server
        from ctxls.daemon.socket_server import socket_is_live

        loop = asyncio.new_event_loop()
        thread = threading.Thread(target=loop.run_forever, name="ctxls-socket", daemon=True)
        thread.start()
        try:
            asyncio.run_coroutine_threadsafe(server.open_shared_socket(), loop).result()
        except OSError as exc:  # it cannot be bound: this agent is served all the same
            import logging

            logging.getLogger(__name__).warning("not listening on %s: %s", path,
                                                exc.strerror or exc)
        if server.shared_socket is not None:
            self._socket_loop, self._socket_thread = loop, thread
            return
        _stop_loop(loop, thread)
        if socket_is_live(path):
            server.workspaces.remove_folder(self.root)
            self.hosted = self._local_ready = False
            self.daemon = DaemonClient.connect(path)

    def _local(self, method: str, params: dict | None, token: CancelToken | None = None) -> Any:
        from ctxls.daemon import wire
        from ctxls.daemon.router import ROUTER, route_of
        from ctxls.daemon.server import server

        if not self._local_ready:
            self.local_engine()
            self._local_ready = True
        handler = server.custom_methods.get(method)
        if handler is None:
            raise RemoteError(-32601, f"method not found: {method}", {})
        if self._socket_loop is not None and route_of(method).settles:
            import asyncio

            # Hosting, this process is the daemon: a read of the code waits
            # for the editors' buffers whose debounce is over, as a request
            # on the socket does (their sessions run on the socket's loop).
            asyncio.run_coroutine_threadsafe(server.settle_buffers(), self._socket_loop).result()
        return ROUTER.run_here(functools.partial(handler, server, wire.Params(params)), token)

    def close(self) -> None:
        if self.daemon is not None:
            with self._connections_lock:
                for client in self._connections or [self.daemon]:
                    client.close()
        elif self._socket_loop is not None:
            import asyncio

            from ctxls.daemon.server import server

            # The socket first (as a daemon closes): a client must not reach
            # stores being closed; editors' proxies then take over.
            asyncio.run_coroutine_threadsafe(server.close_all(), self._socket_loop).result()
            _stop_loop(self._socket_loop, self._socket_thread)
            self._socket_loop = self._socket_thread = None
        else:
            import sys

            # Only a server already imported can hold an engine opened here. An
            # import Ctrl-C cut short is gone from sys.modules while the handlers
            # it registered stay: importing it again would register them twice.
            server_module = sys.modules.get("ctxls.daemon.server")
            if server_module is not None:
                server_module.server.workspaces.close()


# How long the tasks left on the socket's loop may take to end once cancelled:
# past it the process exits without them rather than wait on one that hangs.
TASKS_END_WAIT_S = 5.0


def _stop_loop(loop: Any, thread: threading.Thread | None) -> None:
    """Cancel every task left on the socket's event loop (``close_all`` ended
    the socket's own and its connections; an editor session's work may
    remain), then stop the loop and close it. Left pending when the loop
    stopped, a task was destroyed at exit and logged as an error ("Task was
    destroyed but it is pending!"), which agents' clients show as the server
    failing."""
    import asyncio

    async def end_tasks() -> None:
        here = asyncio.current_task()
        tasks = [task for task in asyncio.all_tasks() if task is not here]
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=TASKS_END_WAIT_S)

    asyncio.run_coroutine_threadsafe(end_tasks(), loop).result()
    loop.call_soon_threadsafe(loop.stop)
    if thread is not None:
        thread.join()
        loop.close()
