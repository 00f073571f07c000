"""Turning files and buffers into store rows, incrementally.

A pass decides per file with one state function (:func:`file_decision`):
unchanged by (mtime, size), unchanged by content hash, changed, or gone. Only
changed files are re-chunked. Chunking runs outside the store's write lock;
writes go in short batches so live buffer updates interleave with a cold index.
"""

from __future__ import annotations

import json
import logging
import threading
from contextlib import contextmanager
from dataclasses import dataclass, replace
from enum import Enum
from pathlib import Path
from typing import Callable, Iterator

from ctxls.index.cancel import cancel_requested, check_cancelled
from ctxls.index.chunk_worker import Ticket, chunk_guarded, shared_worker
from ctxls.index.chunker import reads_definitions
from ctxls.index.discovery import (DiscoveryOptions, FileFilter, Skipped, SourceText, byte_limit,
                                   discover, looks_binary, looks_generated, looks_minified,
                                   pathspec_matcher,
                                   UNKNOWN_SIGNATURE, read_source, stat_signature)
from ctxls.index.edit_log import EditLogMerger, log_changed_symbols
from ctxls.index.errors import StoreError
from ctxls.index.imports import ImportChange, ImportResolver, import_change
from ctxls.index.languages import forgive, language_for_path, suspended
from ctxls.index.model import (UNPARSED_DEADLINE, UNPARSED_EARLIER, UNPARSED_HAZARD, UNPARSED_SUSPENDED,
                               ImportRef, ParsedFile, content_hash)
from ctxls.index.paths import says_generated
from ctxls.index.store import Connection, FileRecord, FileState, Store, now_ms, windowed_files

log = logging.getLogger(__name__)
# The reasons a text read as windows was itself given up on (it stays counted).
GIVE_UPS = (UNPARSED_DEADLINE, UNPARSED_HAZARD)

# Files per write transaction during a pass: small enough that a buffer update
# waiting for the lock is delayed by milliseconds, large enough to amortise commits.
WRITE_BATCH_FILES = 64
# A file modified within this long before its row was made is hashed, not
# trusted by (mtime, size): file system clocks tick coarsely (ext4: a few ms,
# FAT: 2 s).
RACY_MARGIN_NS = 2_000_000_000
# Names up to which the imports to resolve again are picked by SQL (a
# condition per name); beyond, every import row is read and picked here.
MAX_NAMES_PICKED_BY_SQL = 64

ProgressCallback = Callable[[int, int], None]  # (done, total)


def racy(mtime_ns: int, checked_ms: int) -> bool:
    """Git's racy rule: a stat equal to a row's proves nothing when the file
    was modified that close to (or after) when the rows were made or checked
    (``checked_ms``): a second write of the same size in the same clock tick."""
    return mtime_ns >= checked_ms * 1_000_000 - RACY_MARGIN_NS


class Decision(Enum):
    UNCHANGED = "unchanged"      # (mtime, size) match: not even read
    SAME_CONTENT = "same"        # read, hash matches: only the stat is refreshed
    CHANGED = "changed"          # new or different content: re-chunk
    GONE = "gone"                # vanished, or now binary / too large


def file_decision(state: FileState | None, signature: tuple[int, int] | None,
                  read: Callable[[], SourceText | Skipped], force: bool, reported: bool = False
                  ) -> tuple[Decision, SourceText | Skipped | None]:
    """The one place that decides what a pass does with a file. ``read`` is
    called only when the stat fast path cannot answer. ``reported``: an
    event said the file changed, so its stat proves nothing (`rsync -a`,
    `tar x`, `cp -p` write new text under the old size and mtime): read and
    hashed whatever it says."""
    if signature is None:
        return Decision.GONE, None
    if (state is not None and not force and not reported and state.source == "disk"
            and (state.mtime_ns, state.size) == signature):
        return Decision.UNCHANGED, None
    source = read()
    if isinstance(source, Skipped):
        return Decision.GONE, source
    if state is not None and not force and state.hash == content_hash(source.text):
        return Decision.SAME_CONTENT, source
    return Decision.CHANGED, source


@dataclass
class IndexStats:
    files: int = 0
    added: int = 0
    updated: int = 0
    removed: int = 0
    unchanged: int = 0
    skipped: int = 0


class Cancelled(Exception):
    """A pass stopped early because its cancel event was set."""


# The meta key of the files the last pass left out (JSON: path -> reason).
SKIPPED_KEY = "skipped_files"


def _stored_skipped(conn: Connection) -> dict[str, str]:
    """The files a pass of this store left out and why, as it stored them
    (data: anything else there reads as none)."""
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (SKIPPED_KEY,)).fetchone()
    try:
        stored = json.loads(row[0]) if row is not None else {}
    except (TypeError, ValueError):
        return {}
    if not isinstance(stored, dict):
        return {}
    return {path: reason for path, reason in stored.items() if isinstance(reason, str)}


class Indexer:
    def __init__(self, root: Path, store: Store, options: DiscoveryOptions,
                 open_buffers: Callable[[], dict[str, str]]):
        self.root = root
        self.store = store
        self.options = options
        self.wanted = FileFilter(options, root)
        self._open_buffers = open_buffers
        # Serialises whole passes; buffer updates only take the store's write lock.
        self.pass_lock = threading.Lock()
        self._disk_lock = threading.Lock()
        self._serial_lock = threading.Lock()
        # What imports resolve against: the pass's listing, amended by files
        # made or removed since. A change to it leaves other files' stored
        # imports to resolve again (``_import_change``), with the next write.
        self._resolver: ImportResolver | None = None
        self._import_change = ImportChange()
        self._resolver_lock = threading.Lock()
        # Bumped after every commit that wrote or dropped a file's rows, and
        # the value each path last got: an answer computed before a commit
        # to one of its files may hold that file's old lines (Engine.fresh_answer).
        self.row_serial = 0
        self._row_serials: dict[str, int] = {}
        # Files left out and why (path -> reason), for status: a whole pass
        # replaces it, a scoped pass or a single-file update amends it; a
        # pass stores it, so a process that runs none (a CLI status) says why.
        self.skipped: dict[str, str] = {}
        # Whether this store held no file when it was opened, until a whole
        # pass completes: its first index logs no edit. Judged at the open,
        # not from a pass's own listing of the rows, which a file read (an
        # outline) or a watched write indexed meanwhile made non-empty (None:
        # the store could not be read then; the first pass's listing judges).
        self.fills_empty_store: bool | None = None
        # Files read as line windows though their grammar reads them (path ->
        # why: ParsedFile.unparsed); those an earlier process stored so and
        # nobody changed since, too: given up on there (UNPARSED_EARLIER), or
        # set aside untried while their grammar was suspended, which a pass
        # reads again once it is not (``_set_aside_ready``).
        try:
            with self.store.snapshot() as conn:
                earlier = windowed_files(conn)
                self.skipped = _stored_skipped(conn)
                self.fills_empty_store = conn.execute("SELECT 1 FROM files LIMIT 1").fetchone() is None
        except StoreError:  # status reports the store itself
            earlier = {}
        self._skipped_stored = dict(self.skipped)
        self.unparsed: dict[str, str] = {
            path: UNPARSED_SUSPENDED if why == UNPARSED_SUSPENDED else UNPARSED_EARLIER
            for path, (language, why) in earlier.items() if reads_definitions(language)}
        # A give-up forgiven ended a suspension: its set-aside files are due.
        self._lifted = False
        self._edit_log_merger = EditLogMerger()

    # -- whole passes --------------------------------------------------------

    def run_pass(self, pathspecs: list[str] | None = None, force: bool = False,
                 log_edits: bool = True, progress: ProgressCallback | None = None,
                 cancel: threading.Event | None = None,
                 reported: frozenset[str] = frozenset()) -> IndexStats:
        """``reported``: the paths file events said changed (a burst's
        batch), each read and hashed (``file_decision``)."""
        with self.pass_lock:
            return self._run_pass(pathspecs, force, log_edits, progress, cancel, reported)

    def _run_pass(self, pathspecs, force, log_edits, progress, cancel, reported) -> IndexStats:
        stats = IndexStats()
        started = self.row_serial  # rows written after this are newer than the listing
        discovered = discover(self.root, self.wanted)
        listing = discovered.paths
        in_scope_path = (lambda path: True) if pathspecs is None else pathspec_matcher(pathspecs)
        in_scope = [p for p in listing if in_scope_path(p)]
        skipped = {s.path: s.reason for s in discovered.skipped if in_scope_path(s.path)}
        buffers = self._open_buffers()
        states = self.store.file_states()
        if self.fills_empty_store is None:
            self.fills_empty_store = not states
        self._list_for_imports(listing, states)
        set_aside = self._set_aside_ready()
        # The rows of files gone from the listing go first, at once: kept
        # until the pass ended, they were counted (and served) beside the
        # new paths' rows (a checkout renaming every folder: status said
        # twice the files).
        listed = set(listing)
        with self._disk_lock:  # a file made again since the listing is the watcher's now
            stale = [p for p in states
                     if p not in listed and p not in buffers
                     and in_scope_path(p) and not self._written_after(p, started)]
            if stale:
                with self._writing(stale) as conn:
                    for path in stale:
                        # Only a file gone from disk was deleted by someone; one
                        # still there was left out (`ctxls.exclude`, ignore rules).
                        if log_edits and not (self.root / path).is_file():
                            self._log_removal(conn, path)
                        if self._delete(conn, path):
                            stats.removed += 1
        stats.files = len(in_scope)
        total = len(in_scope)
        # Two batches: the one filling, and the one before it, whose files the
        # chunk worker reads while this thread writes the batch before that
        # (the worker's core and this one overlap). Each file's read carries
        # the row serial it was read at (see _write_batch).
        pending: list[tuple[FileRecord, Ticket | None, bool, int]] = []
        chunking: list[tuple[FileRecord, Ticket | None, bool, int]] = []

        def write(batch: list[tuple[FileRecord, Ticket | None, bool, int]]) -> None:
            rows = []
            for record, ticket, replaced, read_at in batch:
                parsed = ticket.result() if ticket is not None else None
                rows.append((replace(record, language=parsed.language) if parsed else record,
                             parsed, replaced, read_at))
            if rows:
                self._write_batch(rows, log_edits, rewrite=force)

        def rotate() -> None:
            nonlocal chunking
            write(chunking)
            chunking = pending[:]
            pending.clear()

        def flush() -> None:
            rotate()
            rotate()

        for done, path in enumerate(in_scope, 1):
            if cancel is not None and cancel.is_set():
                flush()
                raise Cancelled()
            if cancel_requested():  # the request asking for the pass was cancelled
                flush()
                check_cancelled()
            if progress is not None and (done % 50 == 0 or done == total):
                progress(done, total)
            if path in buffers:  # the buffer is the truth; its own updates index it
                stats.unchanged += 1
                continue
            state = states.get(path)
            read_at = self.row_serial
            decision, source = file_decision(
                state, stat_signature(self.root, path),
                lambda: read_source(self.root, path, self.options.max_file_bytes),
                force or path in set_aside, path in reported)
            if isinstance(source, Skipped):
                skipped[path] = source.reason
            if decision is Decision.GONE and (source is None or (
                    isinstance(source, Skipped) and source.reason == "vanished")):
                self._unlist_for_imports([path])  # gone since the listing
            if decision is Decision.UNCHANGED:
                stats.unchanged += 1
            elif decision is Decision.GONE:
                if state is not None:
                    pending.append((FileRecord(path, "", 0, 0, "", "gone"), None, False, read_at))
                    stats.removed += 1
            elif decision is Decision.SAME_CONTENT:
                assert isinstance(source, SourceText)
                pending.append((self._record(source, state), None, False, read_at))
                stats.unchanged += 1
            else:
                assert isinstance(source, SourceText)
                ticket = shared_worker().submit(path, source.text)
                # A file new to a store that held files is an edit (made while
                # no process ran, or by a checkout, which log_git_writes
                # re-dates); a first index of an empty store logs none.
                pending.append((self._record(source, state), ticket,
                                state is not None or not self.fills_empty_store, read_at))
                if state is None:
                    stats.added += 1
                else:
                    stats.updated += 1
            if len(pending) >= WRITE_BATCH_FILES:
                rotate()
        flush()
        if stats.added + stats.updated >= WRITE_BATCH_FILES:
            # The child now holds what py-tree-sitter leaked on this pass's
            # files (about their size: django's cold pass +25 MiB, larger
            # files' repositories hundreds) while the daemon goes on to embed;
            # a fresh one starts with the next file (~0.2 s).
            shared_worker().trim()
        for path, reason in skipped.items():
            log.info("skipped %s: %s", path, reason)
        stats.skipped = len(skipped)
        if pathspecs is None:
            self.skipped = skipped
        else:
            self.skipped = {p: r for p, r in self.skipped.items()
                            if not in_scope_path(p)} | skipped
        if self.skipped != self._skipped_stored:
            with self.store.write() as conn:
                conn.execute("INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) "
                             "DO UPDATE SET value = excluded.value", (SKIPPED_KEY, json.dumps(self.skipped)))
            self._skipped_stored = dict(self.skipped)

        self._resolve_imports_left()
        self._reread_if_lifted()
        if pathspecs is None:
            self.fills_empty_store = False
        return stats

    # -- imports of files the listing's change concerns ----------------------

    def _list_for_imports(self, listing: list[str], states: dict[str, FileState]) -> None:
        """A pass's listing is what imports resolve against: the stored
        imports its difference from the listing before (the files stored,
        for the first pass of this process) may resolve otherwise are
        resolved again, so an unchanged file importing a file made or
        removed since matches what a cold index makes of it."""
        listed = frozenset(listing)
        with self._resolver_lock:
            before = self._resolver.paths if self._resolver is not None else frozenset(states)
            earlier, self._resolver = self._resolver, ImportResolver(listed, root=self.root)
            # tsconfig.json is no indexed file: a pass is where a change to one is seen.
            self._import_change |= import_change(before ^ listed, before | listed) \
                | self._resolver.alias_change(earlier)

    def _unlist_for_imports(self, paths: list[str]) -> None:
        """Files gone from disk (or no longer wanted) leave what imports resolve against."""
        self._make_resolver()
        with self._resolver_lock:
            self._import_change |= self._current_resolver().update(removed=paths)

    def _make_resolver(self) -> None:
        """Before any pass of this process, a resolver of the stored files.
        Once made, it is only replaced (by a pass) or updated, under
        ``_resolver_lock``; the store is read outside that lock."""
        if self._resolver is None:
            stored = ImportResolver(self.store.file_states(), root=self.root)
            with self._resolver_lock:
                if self._resolver is None:
                    self._resolver = stored

    def _current_resolver(self) -> ImportResolver:
        """The resolver, with ``_resolver_lock`` held, once ``_make_resolver`` ran."""
        assert self._resolver is not None
        return self._resolver

    def _resolve_imports_left(self) -> None:
        """Imports a change of the listing left to resolve again that no
        write of the pass resolved: a write of their own, if any resolves
        otherwise (files listed but left out, too large say, change the
        listing of every first pass and mostly nothing else)."""
        with self._resolver_lock:
            change = self._import_change
        if not change:
            return
        with self.store.snapshot() as conn:
            due = self._imports_resolved_otherwise(conn, change)
        if due:
            with self._writing([]):
                pass  # _writing resolves them
            return
        with self._resolver_lock:
            if self._import_change is change:  # nothing came meanwhile
                self._import_change = ImportChange()

    def _resolve_imports_again(self, conn: Connection, change: ImportChange) -> None:
        """The stored imports ``change`` may resolve otherwise, resolved
        against the current listing (inside the caller's write transaction)."""
        conn.executemany("UPDATE imports SET target = ? WHERE rowid = ?",
                         self._imports_resolved_otherwise(conn, change))

    def _imports_resolved_otherwise(self, conn: Connection, change: ImportChange
                                    ) -> list[tuple[str | None, int]]:
        """(new target, rowid) of the stored imports ``change`` may resolve
        otherwise that the current listing resolves otherwise."""
        query = ("SELECT i.rowid, i.spec, i.target, f.path, f.language "
                 "FROM imports i JOIN files f ON f.id = i.file_id")
        names = sorted(change.names)
        params: list[str] = []
        if not change.everything and len(names) <= MAX_NAMES_PICKED_BY_SQL:
            # A superset of what may_change picks (instr() finds a name inside
            # a longer one too), with the relative specs naming no file: `.`, `./a/..`.
            conditions = ["instr(i.spec, ?) > 0"] * len(names) + [
                "(i.spec GLOB '.*' AND (i.spec NOT GLOB '*[^./:]*' OR instr(i.spec, '/..') > 0))"]
            if change.relative:
                conditions.append("i.spec GLOB '.*'")
            query += " WHERE " + " OR ".join(conditions)
            params = names
        self._make_resolver()
        with self._resolver_lock:
            resolver = self._current_resolver()
            return [(target, rowid) for rowid, spec, old, path, language in conn.execute(query, params)
                    if change.may_change(spec) and (target := resolver.resolve(
                        path, ImportRef(spec, 0), language)) != old]

    def _set_aside_ready(self) -> set[str]:
        """Files set aside untried while their language was suspended, whose
        language no longer is (the chunk worker sets aside again any that still is)."""
        return {path for path, why in list(self.unparsed.items())
                if why == UNPARSED_SUSPENDED and not suspended(language_for_path(path) or "")}

    def _forgive(self, path: str) -> None:
        if forgive(path):
            self._lifted = True

    def _reread_if_lifted(self) -> None:
        """A suspension ended (its hostile files were deleted or changed):
        the files it set aside are read again now, not at the next pass."""
        if not self._lifted:
            return
        self._lifted = False
        buffers = self._open_buffers()
        for path in sorted(self._set_aside_ready()):
            if path in buffers:
                self.index_text(path, buffers[path], "buffer", reread=True)
            else:
                self.reindex_from_disk(path, log_edits=False, reread=True)

    @contextmanager
    def _writing(self, paths: list[str]) -> Iterator[Connection]:
        """One write transaction changing ``paths``' rows, counted once
        committed; the imports a change of the listing left to resolve again
        are resolved in it (and left for the next one if it fails)."""
        change = ImportChange()
        try:
            with self.store.write() as conn:
                yield conn
                with self._resolver_lock:
                    change, self._import_change = self._import_change, ImportChange()
                if change:
                    self._resolve_imports_again(conn, change)
        except BaseException:
            with self._resolver_lock:
                self._import_change |= change
            raise
        with self._serial_lock:
            for path in paths:
                self.row_serial += 1
                self._row_serials[path] = self.row_serial

    def rows_written_since(self, serial: int, paths: list[str]) -> set[str]:
        """Those of ``paths`` whose rows a commit changed after ``row_serial`` was ``serial``."""
        with self._serial_lock:
            return {p for p in paths if self._row_serials.get(p, 0) > serial}

    def _record(self, source: SourceText, state: FileState | None) -> FileRecord:
        return FileRecord(path=source.path, language="", size=source.size,
                          mtime_ns=source.mtime_ns, hash=content_hash(source.text), source="disk",
                          generated=says_generated(source.text))

    def _written_after(self, path: str, serial: int) -> bool:
        with self._serial_lock:
            return self._row_serials.get(path, 0) > serial

    def _write_batch(self, batch: list[tuple[FileRecord, ParsedFile | None, bool, int]],
                     log_edits: bool, rewrite: bool = False) -> None:
        """A pass's reads written. A file whose rows were written since the
        pass read it (``read_at``: the row serial then; the watcher re-read
        it, or dropped it, after a change during the pass) keeps those rows:
        the pass's read is the older one. Written under the lock single-file
        re-reads take, so none lands between that check and this write."""
        ts = now_ms()
        with self._disk_lock:
            batch = [entry for entry in batch if not self._written_after(entry[0].path, entry[3])]
            if not batch:
                return
            with self._writing([record.path for record, _, _, _ in batch]) as conn:
                # A buffer opened since the pass started owns its rows now.
                opened = self._open_buffers()
                for record, parsed, logged, _ in batch:
                    if record.path in opened:
                        continue
                    if record.source == "gone":  # the pass unlisted it if it vanished
                        if log_edits:
                            self._log_removal(conn, record.path)
                        self._delete(conn, record.path, unlisted=False)
                    elif parsed is None:  # same content, new stat
                        conn.execute("UPDATE files SET size=?, mtime_ns=?, source='disk' WHERE path=?",
                                     (record.size, record.mtime_ns, record.path))
                    else:
                        self._put_parsed(conn, record, parsed, log_edits and logged, ts, rewrite)

    def _log_edits(self, conn: Connection, path: str, parsed: ParsedFile, ts: int,
                   origin: str) -> None:
        log_changed_symbols(conn, path, parsed, ts, origin)
        self._edit_log_merger.merge_if_due(conn, now_ms())

    def _log_removal(self, conn: Connection, path: str) -> None:
        """A pass found ``path`` gone: its definitions' removal is a disk
        edit, dated no later than the last change of the nearest folder
        still there (the removal changed it), so one made while no process
        ran keeps its window."""
        folder = path.rpartition("/")[0]
        while (signature := stat_signature(self.root, folder or ".")) is None and folder:
            folder = folder.rpartition("/")[0]
        ts = now_ms()
        if signature not in (None, UNKNOWN_SIGNATURE):
            ts = min(ts, signature[0] // 1_000_000)
        self._log_edits(conn, path, ParsedFile(language=""), ts, "disk")

    def _delete(self, conn: Connection, path: str, unlisted: bool = True) -> bool:
        """Drop a file's rows; ``unlisted``: it is gone from disk (or no
        longer wanted), not only left out (too large, binary: still listed,
        so imports of it resolve to it as in a cold index)."""
        self.unparsed.pop(path, None)
        self._forgive(path)
        if unlisted:
            self._unlist_for_imports([path])
        return self.store.delete_file(conn, path)

    def _put_parsed(self, conn, record: FileRecord, parsed: ParsedFile, log_edits: bool,
                    ts: int, rewrite: bool = False) -> None:
        if log_edits:
            if record.source == "disk" and record.mtime_ns > 0:
                # Written when its file was, not when a pass found it: edits
                # made while no daemon ran were all dated by that pass, in no
                # order and inside any window. Unless that is before the
                # store last looked at the file (by more than a coarse clock's
                # tick, the racy margin): the write kept an older mtime
                # (`cp -p`, `tar x`, `rsync -a`) and was made since.
                looked = conn.execute("SELECT indexed_at FROM files WHERE path = ?",
                                      (record.path,)).fetchone()
                if looked is None or racy(record.mtime_ns, looked[0]):
                    ts = min(ts, record.mtime_ns // 1_000_000)
            self._log_edits(conn, record.path, parsed, ts,
                            "editor" if record.source == "buffer" else "disk")
        self._make_resolver()
        with self._resolver_lock:
            resolver = self._current_resolver()
            # A new file: other files' imports may resolve to it now (this
            # transaction resolves them again, see _writing). What the
            # resolver knew stays: a buffer indexed during a pass must not
            # swap the pass's listing for the files stored so far.
            self._import_change |= resolver.update(added=[record.path])
            imports = [(ref, resolver.resolve(record.path, ref, parsed.language))
                       for ref in parsed.imports]
        self.store.put_file(conn, replace(record, unparsed=parsed.unparsed), parsed.chunks, imports,
                            parsed.symbols, rewrite=rewrite)
        if parsed.unparsed:
            self.unparsed[record.path] = parsed.unparsed
        else:
            self.unparsed.pop(record.path, None)
        if parsed.unparsed not in GIVE_UPS:  # the text it gave up on, if any, is gone
            self._forgive(record.path)

    # -- single files (buffers, watched files) -------------------------------

    def index_text(self, path: str, text: str, source: str, size: int = -1,
                   mtime_ns: int = -1, log_edits: bool = True, reread: bool = False) -> bool:
        """Index one file's text (a buffer, or a file re-read after a change;
        a buffer's ``size``/``mtime_ns`` are derived: the file's it stands in for).
        Returns False when the content is what is indexed already (unless
        ``reread``: chunked again all the same)."""
        digest = content_hash(text)
        state = self.store.file_state(path)  # one read on the didChange path: the signature's too
        if source == "buffer":
            mtime_ns, size = self.shadowed_disk_signature(path, state)
        if state is not None and state.hash == digest and not reread:
            if (state.source, state.size, state.mtime_ns) != (source, size, mtime_ns) or (
                    source == "disk" and racy(mtime_ns, state.indexed_at)
                    and not racy(mtime_ns, now_ms())):
                # Same rows; only where they came from, and when that was
                # checked (Engine.refresh_stale trusts a stat older than that:
                # a file written just before its rows were made is hashed on
                # every answer until a check well after the write says so).
                with self.store.write() as conn:
                    if not self._opened_meanwhile(path, source):
                        conn.execute("UPDATE files SET source=?, size=?, mtime_ns=?, indexed_at=? "
                                     "WHERE id=?", (source, size, mtime_ns, now_ms(), state.id))
            return False
        parsed = chunk_guarded(path, text)
        record = FileRecord(path=path, language=parsed.language, size=size,
                            mtime_ns=mtime_ns, hash=digest, source=source,
                            generated=says_generated(text))
        # A file new on disk (written by an agent, a generator) is activity
        # too; a buffer not indexed before is not an edit yet.
        with self._writing([path]) as conn:
            if self._opened_meanwhile(path, source):
                return False
            self._put_parsed(conn, record, parsed,
                             log_edits and (state is not None or source == "disk"), now_ms())
        return True

    def _opened_meanwhile(self, path: str, source: str) -> bool:
        """Whether a disk read of ``path`` must not be written: a buffer of it
        was opened since the caller looked (asked inside the write: a buffer's
        rows are written after its opening, so either they come after these
        or the buffer is seen here). The pass's batches ask the same."""
        return source == "disk" and path in self._open_buffers()

    def index_buffer(self, path: str, text: str) -> bool:
        """Index an open buffer. One over the size bound is left out like a
        file over it (never chunked, tokenized or diffed: a 20 MB buffer must
        not stall other requests); rows it had are dropped."""
        limit = byte_limit(path, self.options.max_file_bytes)
        too_large = len(text) > limit or (4 * len(text) > limit
                                          and len(text.encode("utf-8", "surrogatepass")) > limit)
        # The rules a file on disk is held to.
        reason = ("too large" if too_large else "binary" if looks_binary(text)
                  else "minified" if looks_minified(path, text)
                  else "generated" if looks_generated(path, text) else None)
        if reason is not None:
            self.skipped[path] = reason
            with self._writing([path]) as conn:
                return self._delete(conn, path, unlisted=False)
        self.skipped.pop(path, None)
        changed = self.index_text(path, text, source="buffer")
        self._reread_if_lifted()
        return changed

    def shadowed_disk_signature(self, path: str, state: FileState | None) -> tuple[int, int]:
        """(mtime_ns, size) of the disk file a buffer's rows stand in for, as
        it was when the buffer took over (-1, -1: none), from ``path``'s rows
        ``state``: closing the buffer logs the disk's text as edits only if
        the file was written since. A stat, never a clock: mtimes come from
        the kernel's coarse clock, so a write just after the buffer's rows
        were made can carry an earlier time than they do."""
        if state is not None:  # the disk's rows, or an earlier buffer's record of them
            return state.mtime_ns, state.size
        return stat_signature(self.root, path) or UNKNOWN_SIGNATURE

    def drop_buffer(self, path: str) -> bool:
        """A closed buffer no file stands behind (a buffers-only engine):
        its rows go as a deleted file's do, imports of it resolved again."""
        with self._disk_lock, self._writing([path]) as conn:
            return self._delete(conn, path)

    def reindex_from_disk(self, path: str, log_edits: bool = True, reread: bool = False) -> bool:
        """Re-read one file from disk (didClose, didSave, a watched-file event,
        an answer checking its files); drops it when it is gone or no longer
        indexable. True if rows changed. One at a time: the watcher and a
        request re-reading the same file must not write an older read last."""
        with self._disk_lock:
            changed = self._reindex_from_disk(path, log_edits, reread)
        self._reread_if_lifted()
        return changed

    def _reindex_from_disk(self, path: str, log_edits: bool, reread: bool) -> bool:
        source = read_source(self.root, path, self.options.max_file_bytes)
        self.skipped.pop(path, None)
        if isinstance(source, Skipped) or not self.wanted(path):
            # A deleted file is gone, not left out; its definitions' going is an edit.
            if isinstance(source, Skipped) and self.wanted(path) and source.reason != "vanished":
                log.info("skipped %s: %s", path, source.reason)
                self.skipped[path] = source.reason
            gone = not self.wanted(path) or source.reason == "vanished"
            with self._writing([path]) as conn:
                if self._opened_meanwhile(path, "disk"):
                    return False
                if log_edits and isinstance(source, Skipped) and source.reason == "vanished":
                    self._log_edits(conn, path, ParsedFile(language=""), now_ms(), "disk")
                return self._delete(conn, path, unlisted=gone)
        return self.index_text(path, source.text, "disk", source.size, source.mtime_ns,
                               log_edits=log_edits, reread=reread)
