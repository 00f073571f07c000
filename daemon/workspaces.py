"""Which engine serves a document: one per workspace folder, plus a private
one for buffers that lie outside every folder (served from the buffer only)."""

from __future__ import annotations

import hashlib
import logging
import os
import resource
import threading
from collections.abc import Callable, Hashable, Iterable
from pathlib import Path
from typing import TypeVar

from lsprotocol.types import WorkspaceFolder

from ctxls.index.discovery import DiscoveryOptions
from ctxls.index.roots import store_dir, too_broad_root
from ctxls.index.engine import Engine, EngineOptions
from ctxls.index.errors import OutsideRoot

from ctxls.daemon.options import InitOptions, with_takeover_options
from ctxls.daemon.uris import local_path

log = logging.getLogger(__name__)


def engine_options(options: InitOptions, root: Path, single_root: bool,
                   holds_memory: bool = False, stores_in_use: frozenset[str] = frozenset()
                   ) -> EngineOptions:
    """``holds_memory``: the engine whose memory the memory verbs use (the
    first folder's); only it opens ``memoryUrl``, so a team database is
    searched once per recall, not once per folder. ``stores_in_use``: the
    store files the other folders' engines have open."""
    db_path = options.dbPath
    if db_path is not None and not single_root:
        # One store per folder: a shared dbPath gets a per-folder file beside it,
        # named by the folder; a later folder of the same name (one/app and
        # two/app) by its whole path too, or both wrote one store. The first
        # keeps the plain name, so the folder holding memory never moves.
        db_path = f"{db_path}.{root.name}"
        if db_path in stores_in_use:
            db_path += "-" + hashlib.sha256(os.fsencode(root)).hexdigest()[:12]
    return EngineOptions(db_path=db_path,
                         discovery=DiscoveryOptions(include=options.include, exclude=options.exclude),
                         embeddings=options.embeddings, embed_model=options.embedModel,
                         embed_tokenizer=options.embedTokenizer,
                         memory_url=options.memoryUrl if holds_memory else None,
                         watch=options.watch, ready_wait_s=options.readyWaitMs / 1000)


# Descriptors one folder's engine keeps open (SQLite connections with their
# WAL and shm files: 12 measured) with some room, and those left for the
# process itself (stdio, rg's pipes, files being read). Folders may use three
# quarters of the rest, shared-socket connections a quarter.
FDS_PER_FOLDER = 16
FDS_RESERVED = 128


def open_file_limit() -> int:
    """The open-file limit, raised first to the hard limit (at most 65,536)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = 65_536 if hard == resource.RLIM_INFINITY else min(hard, 65_536)
    if soft != resource.RLIM_INFINITY and soft < wanted:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
            soft = wanted
        except (ValueError, OSError):
            pass
    return 65_536 if soft == resource.RLIM_INFINITY else soft


def folder_capacity() -> int:
    """How many workspace folders fit in the open-file limit. Without a cap,
    a client adding folders exhausted the descriptors: the folders already
    open then failed every request with -32006 (their store could not open
    a connection)."""
    return max(1, (open_file_limit() - FDS_RESERVED) * 3 // 4 // FDS_PER_FOLDER)


def connection_capacity() -> int:
    """How many shared-socket connections may be open at once (one descriptor each)."""
    return max(8, (open_file_limit() - FDS_RESERVED) // 4)


class Workspaces:
    def __init__(self, options: InitOptions):
        # A takeover's daemon (`serve --root --socket`, no editor of its own)
        # indexes as the editor whose proxy started it asked.
        self.options = with_takeover_options(options)
        self.engines: dict[Path, Engine] = {}
        self._loose: Engine | None = None
        self._loose_lock = threading.Lock()
        self.problems: list[str] = []

    def add_folder(self, named: Path, single_root: bool = True,
                   owned_elsewhere: Callable[[Path], Path | None] | None = None) -> Engine | None:
        """The engine of a folder as the client names it (its URIs are built
        on that name, a link's included); None when it is served already or
        refused (``problems`` says why). ``owned_elsewhere``: given the
        folder's store file, the socket of another process that serves it
        (None: nobody); such a folder is refused, as that process is its
        store's one writer."""
        root = named.resolve()
        if root in self.engines:
            return None
        if not root.is_dir():
            # Never created: a client must not make the daemon write folders anywhere.
            self.problems.append(f"ctxls: workspace folder {root} is not a folder; not indexed")
            return None
        if len(self.engines) >= (capacity := folder_capacity()):
            self.problems.append(f"ctxls: workspace folder {root} not indexed: {capacity} folders "
                                 "are open, as many as this process's open-file limit allows")
            return None
        if (broad := too_broad_root(root)) is not None:
            self.problems.append(f"ctxls: workspace folder {root} {broad}; not indexed "
                                 "(open a project's folder)")
            return None
        options = engine_options(
            self.options, root, single_root, holds_memory=not self.engines,
            stores_in_use=frozenset(e.options.db_path for e in self.engines.values() if e.options.db_path))
        db_path = Path(options.db_path) if options.db_path else store_dir(root) / "index.db"
        if owned_elsewhere is not None and (socket := owned_elsewhere(db_path)) is not None:
            # A second writer's first pass rewrote from disk the rows that
            # held the owner's editors' unsaved text (a second VS Code window
            # opening a multi-root workspace that includes the folder).
            self.problems.append(
                f"ctxls: workspace folder {root} is served by another ctxls process (on {socket}); "
                "not indexed here, so that process stays its index's only writer. Open the folder "
                "in a window of its own to share that process, or close the other one and reload")
            return None
        engine = Engine(named, options)
        if engine.store.error is not None:
            # Never a stand-in store: a write it acknowledged would be lost.
            # Every request says -32006 until the store opens (retried).
            self.problems.append(f"ctxls: {engine.store.error.message}; "
                                 "requests fail with -32006 until it can be opened (retrying)")
        self.engines[root] = engine
        return engine

    def remove_folder(self, root: Path) -> None:
        engine = self.engines.pop(root.resolve(), None)
        if engine is not None:
            engine.close()

    @staticmethod
    def folder_path(folder: WorkspaceFolder) -> Path | None:
        path = local_path(folder.uri)
        return Path(path) if path else None

    @property
    def loose(self) -> Engine:
        with self._loose_lock:  # asked from the loop and from the lanes' threads
            if self._loose is None:
                self._loose = Engine(Path("/"), EngineOptions(), private_store=True)
            return self._loose

    def all(self, include_loose: bool = False) -> list[Engine]:
        engines = list(self.engines.values())
        if include_loose and self._loose is not None:
            engines.append(self._loose)
        return engines

    def is_loose(self, engine: Engine) -> bool:
        return engine is self._loose

    def for_uri(self, uri: str) -> tuple[Engine, str] | None:
        """(engine, repo-relative path) for a document URI; the deepest folder
        wins, the buffers-only engine for a file outside every folder. None for
        a URI that names no local file (``uris.local_path``)."""
        fs_path = local_path(uri)
        if fs_path is None:
            return None
        return self.folder_for_path(fs_path) or (self.loose, self.loose.relative(fs_path))

    def folder_for_uri(self, uri: str) -> tuple[Engine, str] | None:
        """``for_uri`` within the workspace folders only (None outside them);
        safe in a worker thread."""
        fs_path = local_path(uri)
        return self.folder_for_path(fs_path) if fs_path is not None else None

    def folder_for_path(self, fs_path: str) -> tuple[Engine, str] | None:
        best: tuple[Engine, str] | None = None
        for root, engine in list(self.engines.items()):  # a copy: folders may come and go
            try:
                rel = engine.relative(fs_path)
            except OutsideRoot:
                continue
            if best is None or len(str(root)) > len(str(best[0].root)):
                best = (engine, rel)
        return best

    def close(self) -> None:
        for engine in self.engines.values():
            engine.close()
        self.engines.clear()
        if self._loose is not None:
            self._loose.close()
            self._loose = None


T = TypeVar("T")


def one_per_place(items: Iterable[T], place: Callable[[T], Hashable | None]) -> list[T]:
    """``items`` in their order, without those naming a place (a file's URI
    and lines) an earlier one named; ``None``: no place, always kept. A
    workspace folder inside another is indexed by both, so every answer
    merged across folders had each of its files twice."""
    seen: set[Hashable] = set()
    kept = []
    for item in items:
        key = place(item)
        if key is not None:
            if key in seen:
                continue
            seen.add(key)
        kept.append(item)
    return kept
