"""The LSP layer: registers features and converts; the engine does the work.

Each handler checks params, calls one engine function off the event loop
(``asyncio.to_thread``, so a slow query never blocks typing) and converts the
result with ``ctxls.daemon.wire``. Engine errors become JSON-RPC errors with
the protocol's codes; anything unexpected becomes an internal error for that
request only: the daemon never dies on a request.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import logging
import os
import signal
import sqlite3
import sys
import threading
import time
from pathlib import Path
from typing import Any, Awaitable, Callable

from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcInternalError
from pygls.lsp.server import LanguageServer
from pygls.protocol import default_converter
from pygls.protocol.json_rpc import JsonRPCRequestMessage

from ctxls import __version__
from ctxls.daemon import wire
from ctxls.daemon.client_process import ClientWatch
from ctxls.daemon.options import InitOptions, parse_init_options
from ctxls.daemon.protocol import CtxlsProtocol, is_parse_error
from ctxls.daemon.socket_server import SocketServer, socket_path_for
from ctxls.daemon.uris import local_path
from ctxls.daemon.workspaces import Workspaces
from ctxls.index.engine import Engine, Hit, RecallResult, SymbolInfo
from ctxls.index.errors import EngineError, OutsideRoot, StoreUnavailable
from ctxls.index.indexer import Cancelled, IndexStats
from ctxls.index.scopes import Scope, resolve_scope
from ctxls.index.store import store_error
from ctxls.index.semantic import embedding_progress_text

log = logging.getLogger(__name__)

CUSTOM_PREFIX = "ctxls/"
# Seconds between cold-index attempts while a folder's store cannot be opened.
STORE_RETRY_S = 2.0
# A recall waits at most this long (seconds) for buffers being indexed.
BUFFER_SETTLE_S = 1.0
# The first index waits at most this long (seconds) for the folder's watch to stand.
WATCH_START_S = 10.0
# ctxls/status `state`, the least ready first (several folders report the first that applies).
STATES = ("error", "indexing", "embedding", "idle", "ready")
# documentSymbol nests children at most this deep (deeper ones become siblings).
MAX_SYMBOL_DEPTH = 32
# Below this many chunks waiting for a vector no embedding progress is shown.
EMBED_PROGRESS_MIN_BACKLOG = 200

_SYMBOL_KINDS = {
    "class": types.SymbolKind.Class, "method": types.SymbolKind.Method,
    "function": types.SymbolKind.Function, "interface": types.SymbolKind.Interface,
    "enum": types.SymbolKind.Enum, "struct": types.SymbolKind.Struct,
    "module": types.SymbolKind.Module, "namespace": types.SymbolKind.Namespace,
    "section": types.SymbolKind.String, "type": types.SymbolKind.TypeParameter,
    "trait": types.SymbolKind.Interface, "constructor": types.SymbolKind.Constructor,
    "impl": types.SymbolKind.Class, "constant": types.SymbolKind.Constant,
}


def _converter():
    """pygls turns unknown methods' params into namedtuples (renaming keys
    that are not identifiers); ours stay plain dicts so ``meta`` objects pass
    through verbatim."""
    converter = default_converter()
    default_hook = converter.get_structure_hook(JsonRPCRequestMessage)

    def structure_request(obj: Any, cls: type) -> Any:
        if isinstance(obj, dict) and str(obj.get("method", "")).startswith(CUSTOM_PREFIX):
            return cls(**obj)
        return default_hook(obj, cls)

    converter.register_structure_hook(JsonRPCRequestMessage, structure_request)
    return converter


class CtxlsServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__("ctxls", __version__, converter_factory=_converter,
                         protocol_cls=CtxlsProtocol,
                         text_document_sync_kind=types.TextDocumentSyncKind.Incremental)
        self.options = InitOptions()
        self.workspaces = Workspaces(self.options)
        self._debounce: dict[str, asyncio.TimerHandle] = {}
        self._pending_buffers = 0
        # Buffers being indexed (flush_buffer tasks), for settle_buffers.
        self._flushing: set[asyncio.Task] = set()
        # Unique across processes: a proxy replays its session to the next daemon.
        self._progress_tokens = (f"{os.getpid()}-{n}" for n in itertools.count(1))
        self._shutdown = threading.Event()
        # Roots indexed before any client connected (`ctxls serve --root`).
        self.prewarmed: dict[Path, Engine] = {}
        self.no_socket = False  # `serve --no-socket`
        self.shared_socket: SocketServer | None = None
        # The editor's process (--clientProcessId, initialize's processId).
        self.client_watch = ClientWatch(self.exit_for_gone_client)
        self.loop: asyncio.AbstractEventLoop | None = None  # set at initialize

    def report_server_error(self, error: Exception, source: Any) -> None:
        """A body that is not JSON still gets its JSON-RPC answer (-32700); an
        answer that could not be encoded gets -32603 instead (CtxlsProtocol)."""
        if source is JsonRpcInternalError:  # pygls's _send_data failed
            self.protocol.unsent = error
        elif source is JsonRpcException and is_parse_error(error):  # the reader's json.loads
            self.protocol.send_parse_error(error)
            return
        super().report_server_error(error, source)

    # -- helpers used by handlers --------------------------------------------

    def supports_progress(self) -> bool:
        window = self.client_capabilities.window if self.client_capabilities else None
        return bool(window and window.work_done_progress)

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

    def add_folder(self, root: Path, single_root: bool) -> None:
        root = root.resolve()
        engine = self.prewarmed.pop(root, None)
        if engine is not None:
            self.workspaces.engines[root] = engine
        else:
            engine = self.workspaces.add_folder(root, single_root)
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

    def follow_disk(self, engine: Engine, loop: asyncio.AbstractEventLoop) -> None:
        """Start following the folder on disk: a burst's pass shows work-done
        progress, and any change asks the client for fresh code lenses."""
        def burst_progress(title: str) -> ProgressBar:
            return asyncio.run_coroutine_threadsafe(
                ProgressBar.open(self, f"ctxls: re-indexing after {title}", str(engine.root)),
                loop).result(timeout=10)

        engine.on_burst = burst_progress
        engine.on_disk_change = lambda: loop.call_soon_threadsafe(
            impact_handlers.refresh_code_lenses, self)
        engine.follow_disk()

    async def open_shared_socket(self) -> None:
        """Let CLI and MCP clients share this daemon (first folder's store dir)."""
        engines = self.workspaces.all()
        if self.no_socket or not self.options.socket or not engines:
            return
        side = SocketServer(self, socket_path_for(engines[0].store.db_path))
        if await side.start():
            self.shared_socket = side
            asyncio.get_running_loop().create_task(side.serve_forever())

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
        self._shutdown.set()
        if self.shared_socket is not None:
            self.shared_socket.close()
            self.shared_socket = None
        await asyncio.to_thread(self.workspaces.close)

    def warn(self, message: str) -> None:
        log.warning("%s", message)
        self.window_show_message(types.ShowMessageParams(types.MessageType.Warning,
                                                         f"ctxls: {message}"))

    async def report_joined(self, engine: Engine) -> None:
        """A folder another session indexes: one progress begin/end when its
        first index is done, so this client's UI learns it is indexed too."""
        while not engine.cold_index_done and not self._shutdown.is_set():
            await asyncio.sleep(0.2)
        if self._shutdown.is_set():
            return
        impact_handlers.refresh_code_lenses(self)  # they said "indexing…"
        if not self.supports_progress():
            return
        token = f"ctxls-index-{next(self._progress_tokens)}"
        try:
            await self.work_done_progress.create_async(token)
        except Exception:
            return
        status = await asyncio.to_thread(engine.status)
        self.work_done_progress.begin(token, types.WorkDoneProgressBegin(
            title="ctxls: indexing", message=str(engine.root), percentage=100))
        self.work_done_progress.end(token, types.WorkDoneProgressEnd(
            message=f"indexed {status['files']} files (shared daemon)"))

    async def index_then_embed(self, engine: Engine) -> None:
        if not engine.cold_index_done:
            if engine.follower is not None:  # the pass lists what the watch may have missed
                await asyncio.to_thread(engine.follower.established.wait, WATCH_START_S)
            await self.cold_index(engine)
        await self.report_embedding(engine)

    async def report_embedding(self, engine: Engine) -> None:
        """Work-done progress while the embedding backlog is large."""
        status = await asyncio.to_thread(engine.status)
        if status["pending"] < EMBED_PROGRESS_MIN_BACKLOG or not self.supports_progress():
            return
        token = f"ctxls-embed-{next(self._progress_tokens)}"
        try:
            await self.work_done_progress.create_async(token)
        except Exception:
            return
        total, first_vectors, started = status["pending"], status["vectors"], time.monotonic()
        self.work_done_progress.begin(token, types.WorkDoneProgressBegin(
            title="ctxls: embedding", message=embedding_progress_text(0, total, 0.0),
            percentage=0))
        while not self._shutdown.is_set() and engine.semantic and engine.semantic.failed is None:
            status = await asyncio.to_thread(engine.status)
            done, pending = max(status["vectors"] - first_vectors, 0), status["pending"]
            if pending == 0:
                break
            total = max(total, done + pending)  # edits may add chunks meanwhile
            rate = done / max(time.monotonic() - started, 1e-6)
            self.work_done_progress.report(token, types.WorkDoneProgressReport(
                message=embedding_progress_text(done, total, rate),
                percentage=int(done * 100 / max(total, 1))))
            await asyncio.sleep(2.0)
        self.work_done_progress.end(token, types.WorkDoneProgressEnd(message="embedded"))

    async def cold_index(self, engine: Engine) -> None:
        """Index a folder in a worker thread, reporting work-done progress."""
        bar = await ProgressBar.open(self, "ctxls: indexing", str(engine.root))
        message = ""
        try:
            while True:
                try:
                    stats = await asyncio.to_thread(engine.cold_index, bar.report, self._shutdown)
                    break
                except StoreUnavailable:
                    # Reported by status and by every request meanwhile; the
                    # store is retried until it opens or the daemon stops.
                    if self._shutdown.is_set():
                        raise Cancelled() from None
                    await asyncio.sleep(STORE_RETRY_S)
            message = f"indexed {stats.files} files ({stats.added} new, {stats.updated} changed)"
            impact_handlers.refresh_code_lenses(self)  # they said "indexing…"
        except Cancelled:
            message = "indexing stopped"
        except Exception as exc:  # a failed pass must not take the daemon down
            log.exception("cold index of %s failed", engine.root)
            message = f"indexing failed: {exc}"
            self.window_show_message(types.ShowMessageParams(types.MessageType.Error,
                                                             f"ctxls: {message}"))
        bar.end(message)

    def schedule_buffer(self, uri: str) -> None:
        """Debounce re-indexing of an edited buffer (per URI)."""
        loop = asyncio.get_running_loop()
        handle = self._debounce.pop(uri, None)
        if handle is not None:
            handle.cancel()
        self._debounce[uri] = loop.call_later(self.options.debounceMs / 1000,
                                              lambda: self._start_flush(uri))

    def _start_flush(self, uri: str) -> None:
        """The debounce is over: index the buffer (tracked from now on)."""
        self._debounce.pop(uri, None)
        task = asyncio.get_running_loop().create_task(self.flush_buffer(uri))
        self._flushing.add(task)
        task.add_done_callback(self._flushing.discard)

    async def settle_buffers(self) -> None:
        """Let the edits whose debounce is over reach the index before a
        query reads it (at most BUFFER_SETTLE_S): a recall sent after a
        didChange answers with it, instead of a poll racing the indexing for
        the CPU. An edit still within its debounce is not waited for."""
        loop = asyncio.get_running_loop()
        for uri, handle in list(self._debounce.items()):
            if handle.when() <= loop.time():  # due, its timer not run yet
                handle.cancel()
                self._start_flush(uri)
        if self._flushing:
            await asyncio.wait(set(self._flushing), timeout=BUFFER_SETTLE_S)

    async def flush_buffer(self, uri: str) -> None:
        doc = self.workspace.text_documents.get(uri)
        target = self.engine_for(uri)
        if doc is None or target is None:  # closed before the timer fired
            return
        engine, path = target
        self._pending_buffers += 1
        try:
            changed = await asyncio.to_thread(engine.set_buffer, path, doc.source)
        except Exception:
            log.exception("indexing buffer %s failed", uri)
        else:
            if changed:  # callers may have come or gone: lens counts are stale
                impact_handlers.refresh_code_lenses(self)
        finally:
            self._pending_buffers -= 1

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
        for engine in engines:
            result = engine.recall(query, kinds, n, body, mode, scope)
            if result.partial_reason and result.partial_reason not in reasons:
                reasons.append(result.partial_reason)
            modes.add(result.mode)
            for kind, hits in result.hits_by_kind.items():
                merged.setdefault(kind, []).extend(hits)
                source.update((id(h), engine) for h in hits)
        for kind, hits in merged.items():
            hits.sort(key=lambda h: (-h.score, h.uri or h.path, h.start_line))
            merged[kind] = hits[:n]
        if log:  # only what the client gets back counts as demand
            for engine in engines:
                engine.log_demand([h for hits in merged.values() for h in hits
                                   if source[id(h)] is engine], "recall")
        return RecallResult(merged, bool(reasons), "; ".join(reasons) or None,
                            modes.pop() if len(modes) == 1 else "mixed")

    def whole_text(self, path: str) -> str | None:
        """The current text of an indexed file in whichever folder holds it."""
        for engine in self.workspaces.all():
            if engine.store.file_state(path) is not None:
                return engine.current_text(path)
        return None

    def get(self, item_id: str, start_line: int | None, end_line: int | None,
            scope: Scope, log: bool):
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
                    "dbPath": "", "version": __version__}
        else:
            statuses = [e.status() for e in engines]
            base = dict(statuses[0])
            # Not yet complete counts as indexing, unless the store or the
            # last pass failed: then the error is what status says.
            base["indexing"] = any(s["indexing"] or not (s["complete"] or "storeError" in s
                                                         or "indexError" in s)
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
            base["assemble"] = context_handlers.assemble_status(self)
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


class ProgressBar:
    """Work-done progress for one pass (``$/progress``), reported from the
    pass's worker thread; a client without progress support, or one that
    refuses the token, gets none."""

    def __init__(self, ls: CtxlsServer, loop: asyncio.AbstractEventLoop, token: str | None):
        self._ls, self._loop, self._token = ls, loop, token

    @classmethod
    async def open(cls, ls: CtxlsServer, title: str, message: str) -> "ProgressBar":
        token: str | None = None
        if ls.supports_progress():
            token = f"ctxls-index-{next(ls._progress_tokens)}"
            try:
                await ls.work_done_progress.create_async(token)
            except Exception:  # a client may refuse; indexing goes on without a bar
                token = None
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

    def end(self, message: str) -> None:
        if self._token is not None:
            self._loop.call_soon_threadsafe(self._ls.work_done_progress.end, self._token,
                                            types.WorkDoneProgressEnd(message=message))


server = CtxlsServer()


# Every custom request's plain body, by method: the LSP handlers below, the
# shared socket (daemon/socket_server.py) and the in-process CLI all call these.
CUSTOM_METHODS: dict[str, Callable[[CtxlsServer, wire.Params], Any]] = {}


def rpc(method: str, settle: bool = False) -> Callable[[Callable[..., Any]], Callable[..., Awaitable[Any]]]:
    """Register a custom request whose body runs in a worker thread and whose
    engine errors carry the protocol's error codes; ``settle``: after the
    buffers being indexed are (CtxlsServer.settle_buffers)."""

    def register(fn: Callable[[CtxlsServer, wire.Params], Any]):
        @functools.wraps(fn)
        def guarded(ls: CtxlsServer, params: wire.Params) -> Any:
            try:
                return fn(ls, params)
            except sqlite3.Error as exc:  # a read failing for the store's sake
                engines = ls.workspaces.all()
                error = store_error(exc, engines[0].store.db_path if engines else "", writing=False)
                if error is None:
                    raise
                raise error from exc

        CUSTOM_METHODS[method] = guarded

        @server.feature(method)
        @functools.wraps(fn)
        async def handler(ls: CtxlsServer, raw: Any) -> Any:
            if settle:
                await ls.settle_buffers()
            try:
                return await asyncio.to_thread(guarded, ls, wire.Params(raw))
            except EngineError as exc:
                raise JsonRpcException(message=exc.message, code=exc.code, data=exc.data) from exc

        return handler

    return register


# -- lifecycle ------------------------------------------------------------------

@server.feature(types.INITIALIZE)
def on_initialize(ls: CtxlsServer, params: types.InitializeParams) -> None:
    ls.loop = asyncio.get_running_loop()
    if params.process_id:
        ls.client_watch.watch(params.process_id)
    options, problems = parse_init_options(params.initialization_options)
    ls.options = options
    ls.workspaces.options = options
    for problem in problems:
        ls.window_show_message(types.ShowMessageParams(types.MessageType.Warning, f"ctxls: {problem}"))
    if options.ignored:
        log.info("ignored unknown initializationOptions: %s", ", ".join(options.ignored))


@server.feature(types.INITIALIZED)
async def on_initialized(ls: CtxlsServer, params: types.InitializedParams) -> None:
    folders = list(ls.workspace.folders.values())
    roots = [p for p in (Workspaces.folder_path(f) for f in folders) if p is not None]
    if not roots and ls.workspace.root_uri and (root := local_path(ls.workspace.root_uri)):
        roots = [Path(root)]
    for root in roots:
        ls.add_folder(root, single_root=len(roots) == 1)
    await ls.open_shared_socket()
    await register_file_watcher(ls)


async def register_file_watcher(ls: CtxlsServer) -> None:
    caps = ls.client_capabilities.workspace if ls.client_capabilities else None
    watched = caps.did_change_watched_files if caps else None
    if not (watched and watched.dynamic_registration):
        return
    try:
        await ls.client_register_capability_async(types.RegistrationParams(registrations=[
            types.Registration(
                id="ctxls-watched-files",
                method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
                register_options=types.DidChangeWatchedFilesRegistrationOptions(
                    watchers=[types.FileSystemWatcher(glob_pattern="**/*")]))]))
    except Exception:
        log.warning("client refused didChangeWatchedFiles registration", exc_info=True)


@server.feature(types.SHUTDOWN)
def on_shutdown(ls: CtxlsServer, params: None) -> None:
    ls._shutdown.set()
    if ls.shared_socket is not None:
        ls.shared_socket.close()
        ls.shared_socket = None


@server.feature(types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)
def on_folders_changed(ls: CtxlsServer, params: types.DidChangeWorkspaceFoldersParams) -> None:
    for folder in params.event.removed:
        root = Workspaces.folder_path(folder)
        if root is not None:
            ls.workspaces.remove_folder(root)
    for folder in params.event.added:
        root = Workspaces.folder_path(folder)
        if root is not None:
            ls.add_folder(root, single_root=False)


# -- documents ----------------------------------------------------------------------

@server.feature(types.TEXT_DOCUMENT_DID_OPEN)
async def on_did_open(ls: CtxlsServer, params: types.DidOpenTextDocumentParams) -> None:
    ls.cancel_debounce(params.text_document.uri)  # the open text supersedes a pending edit
    await ls.flush_buffer(params.text_document.uri)


@server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
def on_did_change(ls: CtxlsServer, params: types.DidChangeTextDocumentParams) -> None:
    ls.schedule_buffer(params.text_document.uri)


@server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
async def on_did_close(ls: CtxlsServer, params: types.DidCloseTextDocumentParams) -> None:
    uri = params.text_document.uri
    ls.cancel_debounce(uri)
    # Disk is the truth again, unless another editor (daemon/sessions.py) has it open.
    await asyncio.to_thread(sessions.release_buffer, ls, server, uri)


@server.feature(types.TEXT_DOCUMENT_DID_SAVE)
async def on_did_save(ls: CtxlsServer, params: types.DidSaveTextDocumentParams) -> None:
    target = ls.engine_for(params.text_document.uri)
    if target is not None:
        await asyncio.to_thread(target[0].file_changed_on_disk, target[1])


@server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
async def on_watched_files(ls: CtxlsServer, params: types.DidChangeWatchedFilesParams) -> None:
    # Off the event loop: each URI costs a path resolution, and a checkout can
    # report 100,000 files at once (200,000 held every request for 29 s).
    by_engine = await asyncio.to_thread(watched_paths, ls.workspaces, params.changes)
    for engine, paths in by_engine.items():
        # A folder the daemon watches natively has seen these changes itself
        # (index/live.py); the client's events count only where it polls or
        # does not watch, and where they come first, the content hash makes
        # the second report of a file a no-op either way.
        if engine.follower is None or engine.follower.mode != "native":
            await asyncio.to_thread(engine.files_changed_on_disk, paths)
        else:  # counted: the indexable ones (the store's own files change with every write)
            engine.follower.editor_events_skipped += sum(map(engine.indexer.wanted, paths))


def watched_paths(workspaces: Workspaces, changes: list[types.FileEvent]) -> dict[Engine, list[str]]:
    """The changed files of each folder (files outside every folder: none)."""
    by_engine: dict[Engine, list[str]] = {}
    for change in changes:
        target = workspaces.folder_for_uri(change.uri)
        if target is not None:
            by_engine.setdefault(target[0], []).append(target[1])
    return by_engine


# -- standard queries -------------------------------------------------------------------

def _symbol_range(symbol: SymbolInfo) -> types.Range:
    return types.Range(types.Position(symbol.start_line, 0), types.Position(symbol.end_line + 1, 0))


@server.feature(types.TEXT_DOCUMENT_DOCUMENT_SYMBOL)
async def on_document_symbol(ls: CtxlsServer, params: types.DocumentSymbolParams):
    target = ls.engine_for(params.text_document.uri)
    if target is None:
        return None
    symbols = await asyncio.to_thread(target[0].document_symbols, target[1])
    roots: list[types.DocumentSymbol] = []
    # Where a symbol's own children go: below MAX_SYMBOL_DEPTH its children,
    # deeper beside it (an answer nested past the JSON encoder's recursion
    # limit could not be sent at all).
    children_of: dict[str, list[types.DocumentSymbol]] = {}
    depth: dict[str, int] = {}
    for symbol in symbols:
        parent_name, _, short = symbol.symbol.rpartition(".")
        node = types.DocumentSymbol(
            name=short or symbol.symbol, detail=symbol.symbol,
            kind=_SYMBOL_KINDS.get(symbol.symbol_kind, types.SymbolKind.Variable),
            range=_symbol_range(symbol), selection_range=types.Range(
                types.Position(symbol.start_line, 0), types.Position(symbol.start_line, 0)),
            children=[])
        siblings = children_of.get(parent_name, roots)
        siblings.append(node)
        depth[symbol.symbol] = depth.get(parent_name, 0) + 1
        children_of[symbol.symbol] = (node.children if depth[symbol.symbol] < MAX_SYMBOL_DEPTH
                                      else siblings)
    return roots or None


@server.feature(types.WORKSPACE_SYMBOL)
async def on_workspace_symbol(ls: CtxlsServer, params: types.WorkspaceSymbolParams):
    found: list[types.SymbolInformation] = []
    for engine in ls.workspaces.all():
        for symbol in await asyncio.to_thread(engine.workspace_symbols, params.query):
            container, _, short = symbol.symbol.rpartition(".")
            found.append(types.SymbolInformation(
                name=short or symbol.symbol,
                kind=_SYMBOL_KINDS.get(symbol.symbol_kind, types.SymbolKind.Variable),
                location=types.Location(symbol.uri, _symbol_range(symbol)),
                container_name=container or symbol.path))
    return found


# -- custom requests (docs/protocol.md) ---------------------------------------------------

@rpc("ctxls/status")
def status(ls: CtxlsServer, params: wire.Params) -> dict:
    return ls.status()


@rpc("ctxls/index")
def index(ls: CtxlsServer, params: wire.Params) -> dict:
    stats = ls.index(params.str_list("paths"), params.bool("force", False))
    return wire.index_stats_json(stats)


@rpc("ctxls/recall", settle=True)
def recall(ls: CtxlsServer, params: wire.Params) -> dict:
    kinds, flat = params.kinds()
    result = ls.recall(params.str("query", required=True), kinds, params.int("n", 10),
                       params.bool("body", False), params.str("mode") or "hybrid",
                       ls.request_scope(params, "ctxls/recall"), params.bool("log", True))
    return wire.recall_json(result, flat)


@rpc("ctxls/locate")
def locate(ls: CtxlsServer, params: wire.Params) -> dict:
    text = params.str("text", required=True)
    n = params.int("n", 10)
    include_tests = params.bool("includeTests", False)
    engines = ls.workspaces.all() or [ls.workspaces.loose]
    found = []  # (engine, file): several folders each rank their own files
    for engine in engines:
        found += [(engine, f) for f in engine.locate(text, n, include_tests)]
    found.sort(key=lambda ef: (-ef[1].score, ef[0].uri_for(ef[1].path)))
    return {"files": [wire.located_json(f, engine.uri_for) for engine, f in found[:n]],
            "partial": any(not e.cold_index_done or e.indexing for e in engines)}


@rpc("ctxls/get")
def get(ls: CtxlsServer, params: wire.Params) -> dict | None:
    item = ls.get(params.str("id", required=True), params.int("startLine"), params.int("endLine"),
                  ls.request_scope(params, "ctxls/get"), params.bool("log", True))
    return wire.item_json(item)


@rpc("ctxls/recentActivity")
def recent_activity(ls: CtxlsServer, params: wire.Params) -> dict:
    days, since, limit = params.number("days"), params.int("since"), params.int("limit", 20)
    items = []
    for engine in ls.workspaces.all():
        items.extend(engine.recent_activity(days, since, limit))
    items.sort(key=lambda a: (-a.last_edited_at, a.id, a.symbol or ""))
    return wire.activity_json(items[:limit])


async def serve_headless(root: Path, socket_path: str | None) -> None:
    """No editor: serve a prewarmed root on the shared socket until interrupted."""
    engine = server.prewarmed.pop(root.resolve(), None) or prewarm(root)
    server.prewarmed.pop(engine.root, None)
    server.workspaces.engines[engine.root] = engine
    path = Path(socket_path) if socket_path else socket_path_for(engine.store.db_path)
    side = SocketServer(server, path)
    if not await side.start():
        raise SystemExit(f"ctxls: cannot listen on {path} (another daemon serves it?)")
    # Said only once the socket accepts connections: clients wait for this line.
    print(f"serving {engine.root} on {path} until interrupted", file=sys.stderr, flush=True)
    # SIGTERM and Ctrl-C end the loop cleanly: the socket is removed, the ANN saved.
    serving = asyncio.current_task()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, serving.cancel)
    try:
        await side.serve_forever()
    except asyncio.CancelledError:
        pass
    finally:
        side.close()


def prewarm(root: Path) -> Engine:
    """Open and cold-index a root before any client connects (serve --root)."""
    engine = server.workspaces.add_folder(root) or server.workspaces.engines[root.resolve()]
    server.workspaces.engines.pop(engine.root, None)
    server.prewarmed[engine.root] = engine
    engine.follow_disk()  # the pass lists what the watch may have missed
    if engine.follower is not None:
        engine.follower.established.wait(WATCH_START_S)
    engine.cold_index()
    engine.start_embedding()  # the backlog drains while no client is connected yet
    return engine


from ctxls.daemon import sessions  # noqa: E402
# Memory, stash, ingest and graph requests register on `server` (imported last:
# that module imports this one).
from ctxls.daemon import memory_handlers  # noqa: E402,F401
# Impact, call hierarchy and code lenses (same reason).
from ctxls.daemon import impact_handlers  # noqa: E402,F401
# Context assembly and the knowledge block (same reason).
from ctxls.daemon import context_handlers  # noqa: E402,F401
