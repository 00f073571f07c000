"""The LSP layer: registers features and converts; the engine does the work.

Each handler checks params, calls into the engine and converts the result
with ``ctxls.daemon.wire``; how it runs (inline, background, exclusive) is its
row of daemon/router.py. Engine errors become JSON-RPC errors with the
protocol's codes; anything unexpected becomes an internal error for that
request only: the daemon never dies on a request. Importing this module
assembles the daemon: the server object (``app.py``) with every handler
module's features registered.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import signal
import sys
from pathlib import Path
from typing import Callable

from lsprotocol import types

from ctxls.daemon import wire
# The handler modules register their features on `server` when imported.
from ctxls.daemon import (context_handlers, impact_handlers, memory_handlers, sessions,  # noqa: F401
                          symbol_handlers)
from ctxls.daemon.app import WATCH_START_S, CtxlsServer, feature, index_in_background, rpc, server
from ctxls.daemon.options import parse_init_options
from ctxls.daemon.router import ROUTER, Lane
from ctxls.daemon.framing import socket_path_for
from ctxls.daemon.socket_server import SocketServer
from ctxls.daemon.uris import local_path, open_uris
from ctxls.daemon.workspaces import Workspaces, one_per_place
from ctxls.index.engine import Engine
from ctxls.index.errors import StoreUnavailable, WriteFailed
from ctxls.index.indexer import Cancelled

log = logging.getLogger(__name__)


# -- lifecycle ------------------------------------------------------------------

@feature(types.INITIALIZE)
def on_initialize(ls: CtxlsServer, params: types.InitializeParams) -> None:
    ls.loop = asyncio.get_running_loop()
    if params.process_id:
        ls.client_watch.watch(params.process_id)
    options, problems = parse_init_options(params.initialization_options)
    ls.options = options
    if not ls.shares_workspaces:  # a proxied editor's options never replace the daemon's
        ls.workspaces.options = options
    for problem in problems:
        ls.window_show_message(types.ShowMessageParams(types.MessageType.Warning, f"ctxls: {problem}"))
    if options.ignored:
        log.info("ignored unknown initializationOptions: %s", ", ".join(options.ignored))


@feature(types.INITIALIZED)
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


@feature(types.SHUTDOWN)
def on_shutdown(ls: CtxlsServer, params: None) -> None:
    ls.stopping.set()
    if ls.shared_socket is not None:
        ls.shared_socket.close()
        ls.shared_socket = None


@feature(types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)
def on_folders_changed(ls: CtxlsServer, params: types.DidChangeWorkspaceFoldersParams) -> None:
    served_by = {uri: ls.engine_for(uri) for uri in open_uris(ls.workspace)}
    for folder in params.event.removed:
        root = Workspaces.folder_path(folder)
        if root is not None:
            ls.workspaces.remove_folder(root)
    for folder in params.event.added:
        root = Workspaces.folder_path(folder)
        if root is not None:
            ls.add_folder(root, single_root=False)
    ls.rehome_buffers(served_by)


# -- documents ----------------------------------------------------------------------

@feature(types.TEXT_DOCUMENT_DID_OPEN)
def on_did_open(ls: CtxlsServer, params: types.DidOpenTextDocumentParams) -> None:
    ls.cancel_debounce(params.text_document.uri)  # the open text supersedes a pending edit
    # Tracked from now on: the outline an editor asks for next waits for it.
    ls.start_flush(params.text_document.uri)


@feature(types.TEXT_DOCUMENT_DID_CHANGE)
def on_did_change(ls: CtxlsServer, params: types.DidChangeTextDocumentParams) -> None:
    ls.schedule_buffer(params.text_document.uri)


@feature(types.TEXT_DOCUMENT_DID_CLOSE)
async def on_did_close(ls: CtxlsServer, params: types.DidCloseTextDocumentParams) -> None:
    uri = params.text_document.uri
    ls.cancel_debounce(uri)
    # Disk is the truth again, unless another editor (daemon/sessions.py) has it
    # open; after this URI's indexing already under way, before its next open's.
    await ls.in_order(uri, lambda: ROUTER.on_lane(
        Lane.EXCLUSIVE, functools.partial(sessions.release_buffer, ls, server, uri)))


@feature(types.TEXT_DOCUMENT_DID_SAVE)
def on_did_save(ls: CtxlsServer, params: types.DidSaveTextDocumentParams) -> None:
    target = ls.engine_for(params.text_document.uri)
    if target is not None:
        target[0].file_changed_on_disk(target[1])


@feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
def on_watched_files(ls: CtxlsServer, params: types.DidChangeWatchedFilesParams) -> None:
    # Off the event loop (its lane): each URI costs a path resolution, and a
    # checkout can report 100,000 files at once (200,000 held every request for 29 s).
    by_engine = watched_paths(ls.workspaces, params.changes)
    for engine, paths in by_engine.items():
        # A folder the daemon watches natively has seen these changes itself
        # (index/live.py); the client's events count only where it polls or
        # does not watch, and where they come first, the content hash makes
        # the second report of a file a no-op either way.
        if engine.follower is None or engine.follower.mode != "native":
            engine.disk_changed(paths)
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


# -- custom requests (docs/protocol.md) ---------------------------------------------------

@rpc("ctxls/status")
def status(ls: CtxlsServer, params: wire.Params) -> dict:
    return wire.status_json(ls.status())


@rpc("ctxls/index")
def index(ls: CtxlsServer, params: wire.Params) -> dict:
    stats = ls.index(params.str_list("paths"), params.bool("force", False))
    return wire.index_stats_json(stats)


@rpc("ctxls/recall")
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
    found = one_per_place(found, lambda ef: ef[0].uri_for(ef[1].path))
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
    found = []
    for engine in ls.workspaces.all():
        found.extend((engine, a) for a in engine.recent_activity(days, since, limit))
    found.sort(key=lambda ea: (-ea[1].last_edited_at, ea[1].id, ea[1].symbol or ""))
    found = one_per_place(found, lambda ea: (ea[0].uri_for(ea[1].id), ea[1].symbol))
    return wire.activity_json([(a, engine.uri_for(a.id)) for engine, a in found[:limit]])


async def serve_headless(root: Path, socket_path: str | None,
                         indexed: Callable[[Engine], None] | None = None,
                         listening: Callable[[], None] | None = None) -> None:
    """No editor: serve a root on the shared socket until interrupted. The
    socket listens before the first pass, as an editor's daemon's does: a
    client meanwhile sees status "indexing" and waits readyWaitMs for an
    answer ("index not ready" after it), and never indexes the store itself
    (one process writes it). ``listening()`` runs once the socket listens
    (it releases the takeover lock the start held), ``indexed(engine)``
    after the first pass."""
    engine = open_root(root)
    server.prewarmed.pop(engine.root, None)
    server.workspaces.engines[engine.root] = engine
    path = Path(socket_path) if socket_path else socket_path_for(engine.store.db_path)
    side = SocketServer(server, path)
    if not await side.start():  # before the pass: a daemon that cannot listen writes nothing
        raise SystemExit(f"ctxls: cannot listen on {path} (the warning above says why)")
    if listening is not None:
        listening()
    # Before any connection is handled (no await since the bind): requests wait for the pass.
    engine.follow_disk()
    # SIGTERM and Ctrl-C end the loop cleanly: the socket is removed, the ANN saved.
    serving = asyncio.current_task()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, serving.cancel)
    # From now on: a socket deleted under the pass (`git clean -fdx`) is bound again too.
    listening = loop.create_task(side.serve_forever())
    try:
        print(f"indexing {engine.root}; {path} answers meanwhile", file=sys.stderr, flush=True)
        await asyncio.to_thread(index_first, engine)
        if indexed is not None:
            await asyncio.to_thread(indexed, engine)
        # Said after the first pass (the socket accepted connections before):
        # clients that wait for this line find the index complete, as before.
        print(f"serving {engine.root} on {path} until interrupted", file=sys.stderr, flush=True)
        if not await listening:
            # One daemon per repository: it serves no editor of its own, so it ends.
            raise SystemExit(f"ctxls: another ctxls daemon took {path} after this one's socket "
                             "was deleted; stopping (one daemon per repository)")
    except asyncio.CancelledError:
        pass
    finally:
        listening.cancel()
        side.close()


def prewarm(root: Path) -> Engine:
    """Open and cold-index a root before any client connects (serve --root)."""
    engine = open_root(root)
    index_first(engine)
    return engine


def open_root(root: Path) -> Engine:
    """The engine of `serve --root`'s root, not indexed yet (``index_first``)."""
    engine = server.workspaces.add_folder(root) or server.workspaces.engines[root.resolve()]
    server.workspaces.engines.pop(engine.root, None)
    server.prewarmed[engine.root] = engine
    return engine


def index_first(engine: Engine) -> None:
    """The first pass of `serve --root`'s engine, then its embedding. A pass
    the store refuses or that fails fails neither the daemon nor its caller."""
    engine.follow_disk()  # the pass lists what the watch may have missed
    if engine.follower is not None:
        engine.follower.established.wait(WATCH_START_S)
    try:
        engine.cold_index()
        # Belt and braces for a proxy's replayed buffer during the pass: a
        # disk read checks for it inside its write (Indexer._opened_meanwhile),
        # yet make test still lost one in ~20 runs of the [killed] takeover
        # test, by a path not found. Written again, as a store rebuild does:
        # only a buffer still open with the same text.
        for path, text in engine.open_buffers().items():
            if engine.buffer_text(path) == text:
                engine.indexer.index_buffer(path, text)
    except (StoreUnavailable, WriteFailed) as exc:
        # Served all the same (a full disk, a store locked or read-only): every
        # answer and status say why, and the pass is tried again until it lands.
        log.warning("%s: %s; serving what the index holds meanwhile", engine.root, exc)
        index_in_background(engine)
    except Cancelled:  # the daemon is closing (SIGTERM during the pass)
        return
    except Exception:
        # Any other failure of the first pass fails that pass, never the
        # daemon: status carries it, and the next pass (a change, `index`) runs.
        log.exception("the first pass of %s failed; serving what the index holds", engine.root)
    engine.start_embedding()  # the backlog drains after the lexical pass

