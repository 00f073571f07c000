"""The language server object and its method table: ``CtxlsServer`` (the
folders' engines, progress, buffers), ``server`` (the process's one
instance) and ``rpc`` (a custom request's registration). The handler modules
(server.py, memory_handlers.py, impact_handlers.py, context_handlers.py)
import this module and register on ``server``; ``server.py`` imports them
all, so importing it gives the assembled daemon.

Each handler checks params, calls into the engine and converts the result
with ``ctxls.daemon.wire``; where and how it runs (on the loop, the read
pool or the write pool, with its snapshot and cancel token) is its row of
daemon/router.py, the one table that says so. Engine errors become JSON-RPC
errors with the protocol's codes; anything unexpected becomes an internal
error for that request only: the daemon never dies on a request.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import logging
import os
import threading
from pathlib import Path
from typing import Any, Awaitable, Callable

import attrs
from lsprotocol import types
from lsprotocol.types import ResponseError, ResponseErrorMessage
from pygls.exceptions import JsonRpcException, JsonRpcInternalError
from pygls.lsp.server import LanguageServer
from pygls.protocol import default_converter
from pygls.protocol.json_rpc import JsonRPCRequestMessage

from ctxls import __version__
from ctxls.daemon import wire
from ctxls.daemon.client_process import ClientWatch
from ctxls.daemon.options import InitOptions
from ctxls.daemon.protocol import CtxlsProtocol, is_parse_error
from ctxls.daemon.request_values import MAX_INT, MIN_INT
from ctxls.daemon.router import ROUTER, Lane, route_of
from ctxls.daemon.sessions import SESSIONS
from ctxls.daemon.framing import socket_path_for
from ctxls.daemon.socket_server import SocketServer, debug_errors, socket_owner_pid
from ctxls.daemon.uris import as_local, open_document
from ctxls.daemon.workspaces import Workspaces, one_per_place
from ctxls.index.assemble import aggregate
from ctxls.index.engine import Engine, Hit, RecallResult, merged_hits
from ctxls.index.errors import EngineError, OutsideRoot
from ctxls.index.indexer import Cancelled, IndexStats
from ctxls.index.scopes import Scope, resolve_scope
from ctxls.index.semantic import EmbeddingEta

log = logging.getLogger(__name__)

# What json.dumps raises for a value it cannot encode (too deep, not JSON, circular).
UNENCODABLE = (ValueError, TypeError, RecursionError)

CUSTOM_PREFIX = "ctxls/"
# A read of the code waits at most this long (seconds) for buffers being
# indexed. An edit indexes in milliseconds; a 3,000-function file took over
# 1 s at load 12 on two cores, and an answer without the edit just sent is
# wrong, so the cap only bounds a pathological wait.
BUFFER_SETTLE_S = 5.0
# A work-done progress bar waits at most this long (seconds) for the client
# to accept its token (clients answer in milliseconds; the work does not wait longer).
PROGRESS_CREATE_S = 5.0
# The first index waits at most this long (seconds) for the folder's watch to stand.
WATCH_START_S = 10.0
# ctxls/status `state`, the least ready first (several folders report the first that applies).
STATES = ("error", "indexing", "embedding", "idle", "degraded", "ready")
# Below this many chunks waiting for a vector no embedding progress is shown.
EMBED_PROGRESS_MIN_BACKLOG = 200
# Seconds between the embedding part's progress reports.
EMBED_PROGRESS_INTERVAL_S = 2.0

SYMBOL_KINDS = {
    "class": types.SymbolKind.Class, "method": types.SymbolKind.Method,
    "function": types.SymbolKind.Function, "interface": types.SymbolKind.Interface,
    "enum": types.SymbolKind.Enum, "struct": types.SymbolKind.Struct,
    "module": types.SymbolKind.Module, "namespace": types.SymbolKind.Namespace,
    "section": types.SymbolKind.String, "type": types.SymbolKind.TypeParameter,
    "trait": types.SymbolKind.Interface, "constructor": types.SymbolKind.Constructor,
    "impl": types.SymbolKind.Class, "constant": types.SymbolKind.Constant,
    # What the definitions tables of the other languages call their kinds.
    "protocol": types.SymbolKind.Interface, "object": types.SymbolKind.Object,
    "record": types.SymbolKind.Struct, "extension": types.SymbolKind.Class,
    "union": types.SymbolKind.Struct, "macro": types.SymbolKind.Function,
}


def strict_scalar(value: Any, cls: type) -> Any:
    """``value`` as the string, integer, float or boolean type ``cls`` (or an
    enum of one), refusing any other JSON type. cattrs's own hook is
    ``cls(value)``: a null text became the buffer "None", a list its printed
    form, a uri 5 the uri "5". The refusal reaches the client as -32602
    naming the field (a notification is dropped). As for the custom params
    (wire.Params.int), a whole float in the 64-bit range is an integer; an
    integer is a float; a boolean is neither."""
    if isinstance(value, bool):
        valid = issubclass(cls, bool)
    elif issubclass(cls, bool):
        valid = False
    elif issubclass(cls, str):
        valid = isinstance(value, str)
    elif issubclass(cls, int):
        valid = isinstance(value, int) or (isinstance(value, float) and value.is_integer()
                                           and MIN_INT <= value <= MAX_INT)
    else:  # float
        valid = isinstance(value, (int, float))
    if not valid:
        raise TypeError(f"expected {cls.__name__}, not {type(value).__name__}")
    return cls(value)


def lsp_converter():
    """What every LSP message is read and written with (pygls's
    ``converter_factory``). pygls turns unknown methods' params into
    namedtuples (renaming keys that are not identifiers); ours stay plain
    dicts so ``meta`` objects pass through verbatim. An error's traceback is
    written only under CTXLS_DEBUG. A string, number or boolean field holding
    another JSON type is refused (``strict_scalar``)."""
    converter = default_converter()
    # Registered first: cattrs builds each class's structuring code once, with
    # the hooks of its fields' types at that moment.
    for scalar in (str, int, float, bool):
        converter.register_structure_hook(scalar, strict_scalar)
    default_hook = converter.get_structure_hook(JsonRPCRequestMessage)

    def structure_request(obj: Any, cls: type) -> Any:
        if isinstance(obj, dict) and str(obj.get("method", "")).startswith(CUSTOM_PREFIX):
            return cls(**obj)
        return default_hook(obj, cls)

    converter.register_structure_hook(JsonRPCRequestMessage, structure_request)
    default_error_hook = converter.get_unstructure_hook(ResponseErrorMessage)

    def unstructure_error(message: ResponseErrorMessage) -> Any:
        # pygls puts an internal error's traceback in its data; clients see it
        # only under CTXLS_DEBUG, as on the shared socket.
        error = message.error
        if (error is not None and isinstance(error.data, dict) and "traceback" in error.data
                and not debug_errors()):
            message = attrs.evolve(message, error=ResponseError(code=error.code, message=error.message))
        return default_error_hook(message)

    converter.register_unstructure_hook(ResponseErrorMessage, unstructure_error)
    return converter


def index_in_background(engine: Engine) -> threading.Thread:
    """The first pass of a hosted engine (or of a daemon whose first try the
    store refused) in a thread of its own, tried again until the store takes
    it (``Engine.first_pass``); answers meanwhile say what they miss."""
    def first_index() -> None:
        if engine.follower is not None:  # the pass lists what the watch may have missed
            engine.follower.established.wait(WATCH_START_S)
        try:
            engine.first_pass()
        except Cancelled:  # the process is closing
            pass
        except Exception:  # status and every request say why; this thread only reports it
            log.exception("indexing %s failed", engine.root)

    thread = threading.Thread(target=first_index, name="ctxls-cold-index", daemon=True)
    thread.start()
    return thread


class CtxlsServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__("ctxls", __version__, converter_factory=lsp_converter,
                         protocol_cls=CtxlsProtocol,
                         text_document_sync_kind=types.TextDocumentSyncKind.Incremental)
        self.options = InitOptions()
        self.workspaces = Workspaces(self.options)
        self._debounce: dict[str, asyncio.TimerHandle] = {}
        self._pending_buffers = 0
        # Buffers being indexed or released (in_order tasks), for settle_buffers.
        self._flushing: set[asyncio.Task] = set()
        # Each URI's latest buffer task: the next one starts after it.
        self._buffer_tasks: dict[str, asyncio.Task] = {}
        # Unique across processes: a proxy replays its session to the next daemon.
        self._progress_tokens = (f"{os.getpid()}-{n}" for n in itertools.count(1))
        self.stopping = threading.Event()
        # Roots indexed before any client connected (`ctxls serve --root`).
        self.prewarmed: dict[Path, Engine] = {}
        self.no_socket = False  # `serve --no-socket`
        # A proxied editor's session: the owner's folders, whose options are the daemon's.
        self.shares_workspaces = False
        self.shared_socket: SocketServer | None = None
        self._serving_socket: asyncio.Task | None = None  # _serve_shared_socket's task
        # The editor's process (--clientProcessId, initialize's processId).
        self.client_watch = ClientWatch(self.exit_for_gone_client)
        self.loop: asyncio.AbstractEventLoop | None = None  # set at initialize

    def report_server_error(self, error: Exception, source: Any) -> None:
        """A body that is not JSON still gets its JSON-RPC answer (-32700); an
        answer pygls could not encode gets -32603 instead."""
        if (source is JsonRpcInternalError and isinstance(error, UNENCODABLE)
                and (msg_id := self.protocol.msg_id) is not None):
            # pygls logs and drops a message it cannot encode. Reported while it
            # sends a request's answer, in that request's context: the request
            # still gets one.
            self.protocol.send_error(msg_id, -32603, "internal error: the answer could not be "
                                     f"encoded ({type(error).__name__})")
        elif source is JsonRpcException and is_parse_error(error):  # the reader's json.loads
            self.protocol.send_parse_error(error)
            return
        super().report_server_error(error, source)

    # -- helpers used by handlers --------------------------------------------

    def supports_progress(self) -> bool:
        window = self.client_capabilities.window if self.client_capabilities else None
        return bool(window and window.work_done_progress)

    async def new_progress_token(self) -> str | None:
        """A work-done progress token the client accepted, or None: no
        progress support, a refusal, or no answer within PROGRESS_CREATE_S
        (the work goes on without a bar; waiting for a client that never
        answers held the first index back for good)."""
        if not self.supports_progress():
            return None
        token = f"ctxls-index-{next(self._progress_tokens)}"
        try:
            await asyncio.wait_for(self.work_done_progress.create_async(token), PROGRESS_CREATE_S)
        except Exception:  # refused, or no answer (TimeoutError)
            return None
        return token

    def request_scope(self, params: wire.Params, verb: str, owner_blind: bool = False) -> Scope:
        """The memory scope of a request: its ``scope``, else the daemon's owner
        (ignored when ``owner_blind``), else everything; -32003 under strictScope."""
        return resolve_scope(params.str("scope"), self.options.owner, self.options.strictScope,
                             verb, owner_blind)

    def engine_for(self, uri: str) -> tuple[Engine, str] | None:
        try:
            return self.workspaces.for_uri(uri)
        except OutsideRoot:
            return None

    def add_folder(self, named: Path, single_root: bool) -> None:
        root = named.resolve()
        engine = self.prewarmed.pop(root, None)
        if engine is not None:
            self.workspaces.engines[root] = engine
        else:
            # An editor's own folders only: a proxied editor's session joins
            # the folders of the daemon it runs in.
            engine = self.workspaces.add_folder(
                named, single_root, owned_elsewhere=None if self.shares_workspaces else self.store_owner_socket)
        for problem in self.workspaces.problems:
            self.window_show_message(types.ShowMessageParams(types.MessageType.Error, problem))
        self.workspaces.problems.clear()
        if engine is None:
            joined = self.workspaces.engines.get(root)
            if joined is not None:  # another editor's session opened it (daemon/sessions.py)
                asyncio.get_running_loop().create_task(self.report_joined(joined))
            return
        loop = asyncio.get_running_loop()
        engine.on_warning = lambda message: loop.call_soon_threadsafe(self.warn, message)
        self.follow_disk(engine, loop)
        engine.start_embedding()
        loop.create_task(self.index_then_embed(engine))

    def store_owner_socket(self, db_path: Path) -> Path | None:
        """The socket of another live process serving the store ``db_path``,
        or None. Multi-root workspaces are not proxied (proxy.py): their
        in-process server must not open a second writer on a store whose
        daemon already serves another editor."""
        path = socket_path_for(db_path)
        if self.shared_socket is not None and self.shared_socket.path == path:
            return None
        pid = socket_owner_pid(path)
        return path if pid is not None and pid != os.getpid() else None

    def follow_disk(self, engine: Engine, loop: asyncio.AbstractEventLoop) -> None:
        """Start following the folder on disk: a burst's pass shows work-done
        progress, and any change asks the client for fresh code lenses."""
        def burst_progress(title: str) -> ProgressBar:
            return asyncio.run_coroutine_threadsafe(
                ProgressBar.open(self, f"ctxls: re-indexing after {title}", str(engine.root)),
                loop).result(timeout=10)

        engine.on_burst = burst_progress
        engine.on_disk_change = lambda: loop.call_soon_threadsafe(
            self.refresh_code_lenses)
        engine.follow_disk()

    async def open_shared_socket(self) -> None:
        """Let CLI and MCP clients share this daemon (first folder's store dir)."""
        engines = self.workspaces.all()
        if self.no_socket or not self.options.socket or not engines:
            return
        side = SocketServer(self, socket_path_for(engines[0].store.db_path))
        if await side.start():
            self.shared_socket = side
            self._serving_socket = asyncio.get_running_loop().create_task(
                self._serve_shared_socket(side))

    async def _serve_shared_socket(self, side: SocketServer) -> None:
        """Serve ``side`` until closed. Another daemon that took its path
        while ours was deleted keeps it: this one serves its own client in
        process, as when two editors start together (logged)."""
        if not await side.serve_forever() and self.shared_socket is side:
            self.shared_socket = None

    def check_stores(self) -> set[Path]:
        """The folders of this daemon's stores, each asked first whether its
        file was deleted under it (then it is opened anew, its folder made
        again): the shared socket waits for that before binding there."""
        folders = set()
        for engine in self.workspaces.all():
            engine.check_store()
            folders.add(Path(engine.store.db_path).parent)
        return folders

    def exit_for_gone_client(self, pid: int) -> None:
        """Close the shared socket and the stores, then end the process (called
        from the watch thread): stdin may never reach end-of-stream, so the
        normal exit path cannot be waited for."""
        try:
            if self.loop is not None and self.loop.is_running():
                asyncio.run_coroutine_threadsafe(self.close_all(), self.loop).result(timeout=15)
            else:
                self.workspaces.close()
        except Exception:
            log.exception("closing after client process %d exited failed", pid)
        finally:
            logging.shutdown()
            os._exit(0)

    async def close_all(self) -> None:
        """Stop listening, end the socket's connections (while the stores are
        open: an editor's session releases its buffers), then close the stores.
        The socket's task is cancelled and awaited: left pending, it was logged
        at exit as "Task was destroyed but it is pending!"."""
        self.stopping.set()
        side, self.shared_socket = self.shared_socket, None
        serving, self._serving_socket = self._serving_socket, None
        if side is not None:
            side.close()
        if serving is not None:
            serving.cancel()
            await asyncio.gather(serving, return_exceptions=True)
        if side is not None:
            await side.end_connections()
        await asyncio.to_thread(self.workspaces.close)

    def warn(self, message: str) -> None:
        log.warning("%s", message)
        self.window_show_message(types.ShowMessageParams(types.MessageType.Warning,
                                                         f"ctxls: {message}"))

    async def report_joined(self, engine: Engine) -> None:
        """A folder another session indexes: one progress begin/end when its
        first index is done, so this client's UI learns it is indexed too."""
        while not engine.cold_index_done and not self.stopping.is_set():
            await asyncio.sleep(0.2)
        if self.stopping.is_set():
            return
        self.refresh_code_lenses()  # they said "indexing…"
        token = await self.new_progress_token()
        if token is None:
            return
        status = await asyncio.to_thread(engine.status)
        self.work_done_progress.begin(token, types.WorkDoneProgressBegin(
            title="ctxls: indexing", message=str(engine.root), percentage=100))
        self.work_done_progress.end(token, types.WorkDoneProgressEnd(
            message=f"indexed {status['files']} files (shared daemon)"))

    async def index_then_embed(self, engine: Engine) -> None:
        """One work-done progress item: the lexical index, then embedding until
        ranking by meaning sees every chunk (status ``progress.meaning``: the
        fast tier, seconds after the index, where a transformer is the model);
        it ends in "ready"; the transformer's takeover goes on in the background."""
        bar, message = None, ""
        if not engine.cold_index_done:
            if engine.follower is not None:  # the pass lists what the watch may have missed
                await asyncio.to_thread(engine.follower.established.wait, WATCH_START_S)
            bar = await ProgressBar.open(self, "ctxls: indexing", str(engine.root))
            message = await self.cold_index(engine, bar)
            if not engine.cold_index_done:
                bar.end(message)  # failed or stopped: no embedding to wait for
                return
        meaning = await self.report_embedding(engine, bar)
        if bar is not None:
            bar.end("stopped" if self.stopping.is_set()
                    else "; ".join(filter(None, ["ready", message, meaning])))

    async def report_embedding(self, engine: Engine, bar: "ProgressBar | None") -> str:
        """Report embedding on ``bar`` (or on a bar of its own while the
        backlog is large) until ranking by meaning sees every chunk; returns
        what ranks by meaning then ("" without embeddings)."""
        meaning = (await asyncio.to_thread(engine.status))["progress"]["meaning"]
        if meaning is None:
            return ""
        own_bar = bar is None
        if own_bar:
            if meaning["total"] - meaning["done"] < EMBED_PROGRESS_MIN_BACKLOG:
                return meaning["text"]
            bar = await ProgressBar.open(self, "ctxls: embedding", meaning["text"])
        eta = EmbeddingEta()
        while not meaning["ready"] and not self.stopping.is_set():
            bar.message(eta.text(meaning["done"], meaning["total"]))
            await asyncio.sleep(EMBED_PROGRESS_INTERVAL_S)
            meaning = (await asyncio.to_thread(engine.status))["progress"]["meaning"]
            if meaning is None:  # the model failed meanwhile
                return ""
        if own_bar:
            bar.end("stopped" if self.stopping.is_set() else f"ready; {meaning['text']}")
        return meaning["text"]

    async def cold_index(self, engine: Engine, bar: "ProgressBar") -> str:
        """Index a folder in a worker thread, reporting work-done progress on
        ``bar``; returns what the pass did (the bar stays open)."""
        message = ""
        try:
            # A store that cannot be opened or written is tried again until it
            # can (Engine.first_pass); status and every request say why meanwhile.
            stats = await asyncio.to_thread(engine.first_pass, bar.report, self.stopping)
            message = f"indexed {stats.files} files ({stats.added} new, {stats.updated} changed)"
            self.refresh_code_lenses()  # they said "indexing…"
        except Cancelled:
            message = "indexing stopped"
        except Exception as exc:  # a failed pass must not take the daemon down
            log.exception("cold index of %s failed", engine.root)
            message = f"indexing failed: {exc}"
            self.window_show_message(types.ShowMessageParams(types.MessageType.Error,
                                                             f"ctxls: {message}"))
        return message

    def schedule_buffer(self, uri: str) -> None:
        """Debounce re-indexing of an edited buffer (per URI)."""
        loop = asyncio.get_running_loop()
        handle = self._debounce.pop(uri, None)
        if handle is not None:
            handle.cancel()
        self._debounce[uri] = loop.call_later(self.options.debounceMs / 1000,
                                              lambda: self.start_flush(uri))

    def start_flush(self, uri: str) -> None:
        """Index the buffer (its debounce is over, or it was just opened),
        tracked from now on for settle_buffers."""
        self._debounce.pop(uri, None)
        self.in_order(uri, lambda: self.flush_buffer(uri))

    def in_order(self, uri: str, work: Callable[[], Awaitable[Any]]) -> asyncio.Task:
        """``work()``, a buffer's indexing or its release back to disk, once
        the ones started before it for ``uri`` are done. The exclusive lane
        has two threads: a close's return to disk finishing after the next
        open's indexing left the index, and the engine's buffer, at the
        disk's text while the editor showed its own (and an older edit's
        indexing could finish after a newer one's). Tracked for settle_buffers."""
        before = self._buffer_tasks.get(uri)

        async def after_before() -> Any:
            if before is not None:
                await asyncio.wait({before})
            return await work()

        task = asyncio.get_running_loop().create_task(after_before())
        self._buffer_tasks[uri] = task
        self._flushing.add(task)

        def done(finished: asyncio.Task) -> None:
            self._flushing.discard(finished)
            if self._buffer_tasks.get(uri) is finished:
                del self._buffer_tasks[uri]
        task.add_done_callback(done)
        return task

    async def settle_buffers(self) -> None:
        """Let the buffers just opened and the edits whose debounce is over
        reach the index before a query reads it (at most BUFFER_SETTLE_S): a
        recall sent after a didChange answers with it, and the outline an
        editor asks for as a file opens is that file's (an editor keeps the
        first answer for the text it asked about). Every editor's buffers
        count, the owner's and its proxied sessions': a request on the
        shared socket (CLI, MCP) or from one editor answers with another
        editor's edit sent before it. An edit still within its debounce is
        not waited for."""
        flushing: set[asyncio.Task] = set()
        for editor in self.sharing_buffers():
            flushing |= editor.flush_due_buffers()
        if flushing:
            await asyncio.wait(flushing, timeout=BUFFER_SETTLE_S)

    def sharing_buffers(self) -> list["CtxlsServer"]:
        """This server and every other whose buffers go into the same
        engines: the process's owner and the editors' proxied sessions
        (daemon/sessions.py)."""
        others = (other for other in (server, *SESSIONS)
                  if other is not self and other.workspaces is self.workspaces)
        return [self, *others]

    def flush_due_buffers(self) -> set[asyncio.Task]:
        """Start indexing this server's buffers whose debounce is over (their
        timers not run yet); its buffers being indexed or released."""
        loop = asyncio.get_running_loop()
        for uri, handle in list(self._debounce.items()):
            if handle.when() <= loop.time():  # due, its timer not run yet
                handle.cancel()
                self.start_flush(uri)
        return set(self._flushing)

    async def flush_buffer(self, uri: str) -> None:
        doc = open_document(self.workspace, uri)
        target = self.engine_for(uri)
        if doc is None or target is None:  # closed before the timer fired
            return
        engine, path = target
        self._pending_buffers += 1
        try:
            changed = await ROUTER.on_lane(Lane.EXCLUSIVE,
                                           functools.partial(engine.set_buffer, path, doc.source))
        except Exception:
            log.exception("indexing buffer %s failed", uri)
        else:
            if changed:  # callers may have come or gone: lens counts are stale
                self.refresh_code_lenses()
        finally:
            self._pending_buffers -= 1

    def rehome_buffers(self, served_by: dict[str, tuple[Engine, str] | None]) -> None:
        """Open buffers whose engine changed as folders came or went (``served_by``:
        each open URI's before): indexed in the engine serving the URI now,
        let go in the old one unless it closed with its folder. Else a folder
        added under an open buffer served the disk's text, and a removed
        folder's open buffer no longer served at all."""
        live = self.workspaces.all(include_loose=True)
        for uri, before in served_by.items():
            now = self.engine_for(uri)
            if now is None or (before is not None and before[0] is now[0]):
                continue
            if before is not None and any(engine is before[0] for engine in live):
                old_engine, old_path = before
                self.in_order(uri, functools.partial(ROUTER.on_lane, Lane.EXCLUSIVE,
                                                     functools.partial(old_engine.close_buffer, old_path)))
            self.cancel_debounce(uri)
            self.start_flush(uri)

    def cancel_debounce(self, uri: str) -> None:
        handle = self._debounce.pop(uri, None)
        if handle is not None:
            handle.cancel()

    # -- cross-folder queries ------------------------------------------------

    def recall(self, query: str, kinds: list[str] | None, n: int, body: bool,
               mode: str, scope: Scope, log: bool) -> RecallResult:
        engines = self.workspaces.all(include_loose=True) or [self.workspaces.loose]
        merged: dict[str, list[Hit]] = {}
        source: dict[int, Engine] = {}  # id(hit) -> its engine, whose demand log it joins
        reasons: list[str] = []
        modes: set[str] = set()
        # Weak only when every folder that found files calls its hits weak.
        weak: list[str | None] = []
        for engine in engines:
            result = engine.recall(query, kinds, n, body, mode, scope)
            if result.partial_reason and result.partial_reason not in reasons:
                reasons.append(result.partial_reason)
            modes.add(result.mode)
            if any(hit.uri is not None for hits in result.hits_by_kind.values() for hit in hits):
                weak.append(result.weak_reason)
            for kind, hits in result.hits_by_kind.items():
                merged.setdefault(kind, []).extend(hits)
                source.update((id(h), engine) for h in hits)
        for kind, hits in merged.items():
            # On calibrated scores: folders' raw scores differ.
            merged[kind] = one_per_place(merged_hits(hits), lambda h: (
                h.uri, h.start_line, h.end_line) if h.uri is not None else None)[:n]
        if log:  # only what the client gets back counts as demand
            for engine in engines:
                engine.log_demand([h for hits in merged.values() for h in hits
                                   if source[id(h)] is engine], "recall")
        return RecallResult(merged, bool(reasons), "; ".join(reasons) or None,
                            modes.pop() if len(modes) == 1 else "mixed",
                            weak[0] if weak and all(weak) else None)

    def whole_text(self, path: str) -> str | None:
        """The current text of an indexed file in whichever folder holds it."""
        for engine in self.workspaces.all():
            if engine.store.file_state(path) is not None:
                return engine.current_text(path)
        return None

    def get(self, item_id: str, start_line: int | None, end_line: int | None,
            scope: Scope, log: bool):
        item_id = as_local(item_id)
        outside = True
        # Without folders written memory lives in the buffers-only engine (memory_handlers).
        for engine in self.workspaces.all() or [self.workspaces.loose]:
            try:
                item = engine.get(item_id, start_line, end_line, scope, log)
            except OutsideRoot:
                continue
            outside = False
            if item is not None:
                return item
        if outside:
            raise OutsideRoot(item_id)
        return None

    def status(self) -> dict:
        engines = self.workspaces.all()
        if not engines:
            base = {"indexing": False, "complete": True, "state": "ready", "files": 0,
                    "chunks": 0, "vectors": 0,
                    "pending": 0,
                    "embeddings": {"enabled": False, "model": "", "dim": 0}, "root": "",
                    "db_path": "", "version": __version__}
        else:
            statuses = [e.status() for e in engines]
            base = dict(statuses[0])
            # Not yet complete counts as indexing, unless the store or the
            # last pass failed: then the error is what status says.
            base["indexing"] = any(s["indexing"] or not (s["complete"] or "store_error" in s
                                                         or "index_error" in s)
                                   for s in statuses)
            base["state"] = min((s["state"] for s in statuses), key=STATES.index)
            base["files"] = sum(s["files"] for s in statuses)
            base["chunks"] = sum(s["chunks"] for s in statuses)
            base["pending"] = sum(s["pending"] for s in statuses)
            if len(statuses) > 1:
                base["folders"] = statuses
            base["vectors"] = sum(s["vectors"] for s in statuses)
        buffers_pending = self._pending_buffers + len(self._debounce)
        base["pending"] += buffers_pending
        if buffers_pending:
            base["state"] = "indexing"
        base["ready"] = base["state"] == "ready"
        try:
            engines = self.workspaces.all()
            base["assemble"] = aggregate((engines[0] if engines else self.workspaces.loose).store)
        except Exception:  # an unreadable store must not break status
            log.warning("assemble statistics unavailable", exc_info=True)
        return base

    def index(self, pathspecs: list[str] | None, force: bool) -> IndexStats:
        total = IndexStats()
        for engine in self.workspaces.all():
            stats = engine.index(pathspecs, force)
            for field in ("files", "added", "updated", "removed", "unchanged", "skipped"):
                setattr(total, field, getattr(total, field) + getattr(stats, field))
        return total

    async def answer(self, method: str, fn: Callable[["CtxlsServer", Any], Any], params: Any) -> Any:
        """``fn(self, params)`` run as ``method``'s route says; engine errors
        become JSON-RPC errors with the protocol's codes."""
        try:
            return await self.run_routed(method, functools.partial(fn, self, params))
        except EngineError as exc:
            raise JsonRpcException(message=exc.message, code=exc.code, data=exc.data) from exc

    async def run_routed(self, method: str, work: Callable[[], Any]) -> Any:
        """``work`` run as ``method``'s route says, once the buffers a read of
        the code must see are indexed: an LSP request and the same request
        on the shared socket (daemon/socket_server.py) both come here."""
        if route_of(method).settles:
            await self.settle_buffers()
        return await ROUTER.run(method, work)

    @property
    def custom_methods(self) -> dict[str, Callable[["CtxlsServer", wire.Params], Any]]:
        """Every custom request's plain body, by method (``rpc`` registers them)."""
        return CUSTOM_METHODS

    def refresh_code_lenses(self) -> None:
        """Ask the client to re-request lenses (after a buffer was re-indexed: any
        file's edit can change any lens's count), when it supports that."""
        workspace = self.client_capabilities.workspace if self.client_capabilities else None
        lens_caps = workspace.code_lens if workspace else None
        if lens_caps and lens_caps.refresh_support:
            self.workspace_code_lens_refresh(None)


class ProgressBar:
    """Work-done progress for one pass (``$/progress``), reported from the
    pass's worker thread; a client without progress support, or one that
    refuses the token or does not answer, gets none."""

    def __init__(self, ls: CtxlsServer, loop: asyncio.AbstractEventLoop, token: str | None):
        self._ls, self._loop, self._token = ls, loop, token

    @classmethod
    async def open(cls, ls: CtxlsServer, title: str, message: str) -> "ProgressBar":
        token = await ls.new_progress_token()
        if token is not None:
            ls.work_done_progress.begin(token, types.WorkDoneProgressBegin(
                title=title, message=message, percentage=0))
        return cls(ls, asyncio.get_running_loop(), token)

    def report(self, done: int, total: int) -> None:
        if self._token is not None:
            self._loop.call_soon_threadsafe(
                self._ls.work_done_progress.report, self._token, types.WorkDoneProgressReport(
                    message=f"{done}/{total} files",
                    percentage=int(done * 100 / total) if total else 100))

    def message(self, text: str) -> None:
        """A report with a message only (the percentage was the files')."""
        if self._token is not None:
            self._loop.call_soon_threadsafe(
                self._ls.work_done_progress.report, self._token,
                types.WorkDoneProgressReport(message=text))

    def end(self, message: str) -> None:
        if self._token is not None:
            self._loop.call_soon_threadsafe(self._ls.work_done_progress.end, self._token,
                                            types.WorkDoneProgressEnd(message=message))


server = CtxlsServer()


# Every custom request's plain body, by method: the LSP handlers below, the
# shared socket (daemon/socket_server.py) and the in-process CLI all call these.
CUSTOM_METHODS: dict[str, Callable[[CtxlsServer, wire.Params], Any]] = {}


def rpc(method: str) -> Callable[[Callable[..., Any]], Callable[..., Awaitable[Any]]]:
    """Register a custom request's plain body (``fn(ls, params)``), run as its
    row of daemon/router.py says."""
    route_of(method)  # a method without a row fails here, at import

    def register(fn: Callable[[CtxlsServer, wire.Params], Any]):
        CUSTOM_METHODS[method] = fn

        def body(ls: CtxlsServer, raw: Any) -> Any:
            return fn(ls, wire.Params(raw))  # params of the wrong shape: -32602 from here

        @server.feature(method)
        @functools.wraps(fn)
        async def handler(ls: CtxlsServer, raw: Any) -> Any:
            return await ls.answer(method, body, raw)

        return handler

    return register


def feature(method: str, options: Any = None) -> Callable[[Callable[..., Any]], Any]:
    """Register an LSP method's handler (``fn(ls, params)``), run as its row
    of daemon/router.py says: an inline one is pygls's as it is (it may be a
    coroutine function); any other is a plain function run in its lane."""
    route = route_of(method)

    def register(fn: Callable[..., Any]):
        if route.lane is Lane.INLINE:
            return server.feature(method, options)(fn)

        @server.feature(method, options)
        @functools.wraps(fn)
        async def handler(ls: CtxlsServer, params: Any) -> Any:
            return await ls.answer(method, fn, params)

        return handler

    return register
