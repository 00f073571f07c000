"""Editor sessions on the owner's socket: one daemon per repository.

An editor's ``ctxls serve`` that finds a live daemon on the repository's
socket becomes a proxy (daemon/proxy.py) and forwards its whole LSP stream
here. Each such connection gets a session: a ``CtxlsServer`` of its own (its
own client capabilities, documents, debounce timers and progress) whose
``workspaces`` are the owner's, so there is one store writer per repository
and every client's unsaved buffers are in the one index.

When a session ends (its editor closed, or the proxy vanished) the buffers it
had open go back to what is on disk, unless another session still has the
file open, in which case that session's text stays the truth.

One index, so one set of index options (options.INDEX_OPTIONS: include,
exclude, embeddings, …): the daemon's. A session's own apply to it alone
(owner, session, strictScope, episodeWindowDays, debounceMs); an editor whose
index options differ is told which are not applied, and what to do.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from ctxls.daemon.framing import read_message
from ctxls.daemon.options import unapplied_index_options
from ctxls.daemon.uris import open_uris

if TYPE_CHECKING:
    from ctxls.daemon.app import CtxlsServer
    from ctxls.index.engine import Engine

log = logging.getLogger(__name__)

# The key a proxy adds to the editor's `initialize` params to ask for a full
# LSP session (plain socket clients — CLI, MCP — never send it).
PROXY_MARK = "ctxlsProxy"

# Live proxied sessions, for "does another editor still have this file open".
SESSIONS: set["CtxlsServer"] = set()


def is_session_request(message: dict) -> bool:
    params = message.get("params")
    return (message.get("method") == "initialize" and isinstance(params, dict)
            and bool(params.get(PROXY_MARK)))


def new_session(owner: "CtxlsServer") -> "CtxlsServer":
    """A server object for one proxied editor: the owner's handlers and engines."""
    session = type(owner)()
    session.workspaces = owner.workspaces
    session.shares_workspaces = True
    session.no_socket = True  # the owner already listens
    features = owner.protocol.fm
    # pygls binds each handler to its server; bind the originals to this one.
    for name, wrapped in features.features.items():
        session.feature(name, features.feature_options.get(name))(getattr(wrapped, "func", wrapped))
    for name, wrapped in features.commands.items():
        session.command(name)(getattr(wrapped, "func", wrapped))
    return session


def open_text_elsewhere(engine: "Engine", path: str, owner: "CtxlsServer",
                        leaving: "CtxlsServer") -> str | None:
    """The text of ``engine``'s file ``path`` in another editor that still
    has it open, if any, whatever URI that editor names it by (through a
    linked folder, say: a look-up by the leaving editor's URI missed it,
    and the file fell back to disk)."""
    for other in [owner, *SESSIONS]:
        if other is leaving:
            continue
        try:
            documents = list(other.workspace.text_documents.values())
        except Exception:  # a server that never initialized has no workspace
            continue
        # Within the folders only, unless the file is outside them all: a
        # look-up must not open the buffers-only engine.
        served_by = other.engine_for if other.workspaces.is_loose(engine) \
            else other.workspaces.folder_for_uri
        for document in documents:
            if served_by(document.uri) == (engine, path):
                return document.source
    return None


def release_buffer(session: "CtxlsServer", owner: "CtxlsServer", uri: str) -> None:
    """``uri`` is no longer open in ``session``: disk is the truth again, or
    the text another editor still has open."""
    target = session.engine_for(uri)
    if target is None:
        return
    engine, path = target
    other = open_text_elsewhere(engine, path, owner, session)
    if other is not None:
        engine.set_buffer(path, other)
    else:
        engine.close_buffer(path)


async def serve_session(owner: "CtxlsServer", reader: asyncio.StreamReader,
                        writer: asyncio.StreamWriter, first: dict) -> None:
    """Run one proxied editor's LSP session until its connection ends."""

    session = new_session(owner)
    protocol = session.protocol
    protocol.set_writer(writer)
    params = first["params"]
    params.pop(PROXY_MARK, None)
    # The proxy watches its editor; the owner must not exit when that editor does.
    params["processId"] = None
    SESSIONS.add(session)
    log.info("editor session opened (%d live)", len(SESSIONS))
    initializing = True
    try:
        body: bytes | None = json.dumps(first).encode()
        while body is not None:
            try:
                message = json.loads(body, object_hook=protocol.structure_message)
            except (ValueError, RecursionError) as exc:  # not JSON: answered, the session goes on
                protocol.send_parse_error(exc)
            else:
                if getattr(message, "method", None) == "exit":  # ends this session, never the owner
                    break
                try:
                    protocol.handle_message(message)
                except Exception:
                    log.exception("editor session: cannot handle a message")
            if initializing:  # the session's initialize, handled inline just now
                warn_of_unapplied_options(session, owner)
                initializing = False
            body = await read_message(reader)
    except (ConnectionError, OSError, ValueError, asyncio.IncompleteReadError) as exc:
        log.info("editor session lost: %s", exc)
    finally:
        SESSIONS.discard(session)
        session.stopping.set()
        for uri in list(session._debounce):
            session.cancel_debounce(uri)
        uris = open_uris(session.workspace) if _initialized(session) else []
        for uri in uris:
            try:
                await session.in_order(uri, lambda uri=uri: asyncio.to_thread(
                    release_buffer, session, owner, uri))
            except Exception:
                log.exception("releasing %s after its editor left failed", uri)
        writer.close()
        log.info("editor session closed, %d buffer(s) released (%d live)", len(uris), len(SESSIONS))


def warn_of_unapplied_options(session: "CtxlsServer", owner: "CtxlsServer") -> None:
    """After a session's ``initialize``: the editor hears which of its index
    options the daemon's folders do not apply (a second editor's exclude
    was silently ignored)."""
    if not _initialized(session):  # its initialize was refused: no options were read
        return
    unapplied = unapplied_index_options(session.options, owner.workspaces.options)
    if not unapplied:
        return
    message = (f"ctxls: the ctxls daemon already serving this repository (PID {os.getpid()}) "
               "indexes it with other options, and one index serves every editor and agent on "
               f"it, so these of yours are not applied: {'; '.join(unapplied)}. To apply them, "
               "close the other editors and agents on this repository (or stop that daemon): "
               "this editor's ctxls then starts the next daemon, with your options. Or give "
               "them all the same options.")
    log.warning("%s", message)
    session.window_show_message(types.ShowMessageParams(types.MessageType.Warning, message))


def _initialized(session: Any) -> bool:
    try:
        session.workspace
    except Exception:
        return False
    return True
