"""Following a root's files on disk: a watcher thread that feeds what
changed to the same incremental indexer an editor's ``didChange`` feeds.

It watches, one level each, exactly the folders discovery would list files
in (``discovery.listed_folders``, an uninitialised submodule's empty folder
included), so ignored trees cost neither a watch nor an event, plus, for the
root's repository and each inside it (a clone, a submodule), its git folder
for ``HEAD`` and its index (which files git tracks), and the folders of its
exclude files (``info/exclude``, the global excludes file). A ``.git``
coming or going in a watched folder (`git submodule update --init`) is a
checkout. ``watchfiles`` debounces: a batch
is handed over once ``STEP_MS`` pass without a new event, at most
``MAX_BATCH_MS`` after its first. A batch that moves ``HEAD`` or names at
least ``BURST_FILES`` indexable files (a checkout, a pull, a formatter) is one
incremental pass with progress; smaller ones are re-indexed file by file. A
new folder restarts the watch with it, then its files are indexed (after the
watch stands, so nothing created meanwhile is missed).

Folders the platform does not watch (inotify's ``max_user_watches``
reached: notify leaves them out without an error, so the kernel's own list of
the watches, /proc/self/fdinfo, is checked) are polled every ``POLL_MS`` (stat
scans of the folders and their indexable files), and status and the log say
so; where no native watch can be set up at all, every folder is polled. A
folder whose name is not UTF-8 is not watched (none of its files is indexed),
and the log says so. A watch that fails is made again, every file checked,
as is one whose root was removed and made again (`rm -rf repo && git clone`).
"""

from __future__ import annotations

import errno
import logging
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable

import watchfiles
from watchfiles._rust_notify import RustNotify, WatchfilesRustInternalError

from ctxls.index.discovery import (STORE_DIR_NAME, holds_installed_dependencies, ignored_paths,
                                   is_skipped_folder_name, is_utf8, listed_folders,
                                   repositories_among, sets_ignore_rules, shown_name)
from ctxls.index.git import git_command, global_excludes_file, run_git
from ctxls.index.indexer import Cancelled

if TYPE_CHECKING:
    from ctxls.index.engine import Engine

log = logging.getLogger(__name__)

# "auto": native events (inotify, FSEvents, ReadDirectoryChangesW), polling
# when they cannot be set up; "poll": polling only; "off": nothing follows the disk.
WATCH_MODES = ("auto", "poll", "off")
# A batch is handed over this long after the last event of a quiet spell...
STEP_MS = 50
# ...or this long after its first event, if events keep coming.
MAX_BATCH_MS = 1000
# The thread wakes this often with nothing happening (stop, new folders'
# catch-up, and saying the disk is caught up: ``caught_up`` waits up to this
# long after EVENT_DELAY_S, and every ranked answer with a native watch waits
# for it). One STEP_MS since stop 69: notify sleeps a step between looks
# anyway, so a shorter tick costs only the returns. Idle CPU of django's
# 2,455 watched folders, 30 s, one core: 0.11 % at 1 s, 0.14 % at 250 ms,
# 0.17–0.19 % at 100 ms; of 2,021 folders: 0.22 % at 100 ms, 0.25 % at 50
# (docs/decisions.md).
TICK_MS = STEP_MS
# An event is in the watch's set this long after the write that caused it
# (inotify queues it at the write; notify's thread reads it at once).
EVENT_DELAY_S = 0.02
# Stat scans of the watched folders when native events are unavailable.
POLL_MS = 2000
# This many indexable files in one batch (or a HEAD move) is a burst: one pass.
BURST_FILES = 100
# After a watch fails for a reason other than the platform's limit (a folder
# removed while the watch was being set up), wait this long and set it up again.
RETRY_S = 0.2
# After a watch fails for any other reason (the store unavailable while the
# repository is cloned again), wait twice as long each time, at most this long.
MAX_RETRY_S = 30.0


def git_dir(root: Path) -> Path | None:
    """The git folder of the repository ``root`` is in (a worktree's own), or None."""
    proc = run_git(git_command("rev-parse", "--absolute-git-dir", root=root), timeout=10)
    found = Path(os.fsdecode(proc.stdout.strip())) if proc is not None and proc.returncode == 0 else None
    return found if found is not None and found.is_dir() else None


def git_exclude_file(root: Path) -> Path | None:
    """git's own exclude file for the repository ``root`` is in (a worktree
    reads its main repository's), or None."""
    proc = run_git(git_command("rev-parse", "--git-path", "info/exclude", root=root), timeout=10)
    if proc is None or proc.returncode != 0:
        return None
    return root / os.fsdecode(proc.stdout.strip())  # relative to ``root``, or absolute


@dataclass(frozen=True)
class GitFiles:
    """One repository's files outside its work tree whose changes count."""
    folder: str  # its git folder, watched one level deep
    head: str  # a checkout in the repository moves it
    index: str  # `git add -f`, `git rm --cached` change which files git lists
    # Its info/exclude and the global excludes file (and, for a link, where it leads).
    excludes: tuple[str, ...]


def git_files_of(work_tree: Path) -> GitFiles | None:
    """The ``GitFiles`` of the repository ``work_tree`` is in, or None."""
    found = git_dir(work_tree)
    if found is None:
        return None
    excludes = [where for named in (git_exclude_file(work_tree), global_excludes_file(work_tree))
                if named is not None for where in (os.path.abspath(named), os.path.realpath(named))]
    return GitFiles(str(found), str(found / "HEAD"), str(found / "index"),
                    tuple(dict.fromkeys(excludes)))


def tracked_files(work_tree: Path) -> frozenset[str]:
    """The files git tracks in the repository ``work_tree`` is in, relative
    to it (what its index lists: no walk of the tree)."""
    proc = run_git(git_command("ls-files", "-z", root=work_tree), timeout=30)
    if proc is None or proc.returncode != 0:
        return frozenset()
    return frozenset(os.fsdecode(name) for name in proc.stdout.split(b"\0") if name)


# Never followed inside a repository: version control's own folders and the store.
_VCS_AND_STORE = frozenset({".git", ".hg", ".svn", STORE_DIR_NAME})


def _limit_reached(exc: OSError) -> bool:
    """The platform's watch limit (inotify's watches or instances, descriptors)."""
    return exc.errno in (errno.ENOSPC, errno.EMFILE, errno.ENFILE) or "limit" in str(exc).lower()


_NEW_WATCH_LOCK = threading.Lock()  # tells one new watch's inotify descriptor from another's


def _inotify_fds() -> set[int]:
    """This process's inotify descriptors (Linux; elsewhere none)."""
    try:
        names = os.listdir("/proc/self/fd")
    except OSError:
        return set()
    found = set()
    for name in names:
        try:
            if os.readlink(f"/proc/self/fd/{name}") == "anon_inode:inotify":
                found.add(int(name))
        except OSError:
            continue
    return found


def _unwatched(paths: list[str], fds: set[int]) -> list[str]:
    """Those of ``paths`` the kernel holds no inotify watch for on ``fds``
    (by device and inode, from /proc/self/fdinfo); none where that cannot be
    read. A folder this user may not read is none of them: inotify refuses
    it (EACCES) whatever the limit, and nothing in it can be listed or polled."""
    watched: set[tuple[int, int]] = set()
    for fd in fds:
        try:
            with open(f"/proc/self/fdinfo/{fd}") as info:
                for line in info:
                    if line.startswith("inotify wd:"):
                        fields = dict(f.split(":", 1) for f in line.split()[1:] if ":" in f)
                        dev = int(fields["sdev"], 16)  # the kernel's dev_t: major << 20 | minor
                        watched.add((os.makedev(dev >> 20, dev & 0xFFFFF), int(fields["ino"], 16)))
        except (OSError, KeyError, ValueError):
            return []
    if not fds:
        return []
    missing = []
    for where in paths:
        try:
            st = os.stat(where)
        except OSError:
            continue
        if (st.st_dev, st.st_ino) not in watched and os.access(where, os.R_OK):
            missing.append(where)
    return missing


def watch_status(follower: DiskFollower | None, requested: str) -> dict:
    """Status ``watch``: how a root's files on disk are followed."""
    if follower is None:
        return {"mode": "off", "requested": requested, "reason": None, "folders": 0,
                "polled": 0, "batches": 0, "editor_events_skipped": 0}
    return {"mode": follower.mode, "requested": follower.requested, "reason": follower.reason,
            "folders": follower.folders, "polled": follower.polled, "batches": follower.batches,
            "editor_events_skipped": follower.editor_events_skipped}


class StatPoller:
    """Stat scans of some folders, for when native events cannot cover them:
    each folder's mtime (it moves when an entry comes, goes or is renamed;
    then the folder is listed again) and each indexable file's mtime in ns
    and size. (watchfiles' own poller compares whole seconds of mtime, so it
    misses a second write within the second of its last scan.)"""

    def __init__(self, folders: list[str], indexable: Callable[[str], bool], git_files: list[str]):
        self._indexable = indexable
        self._files: dict[str, tuple[int, int]] = {}  # file -> (mtime_ns, size)
        self._folders: dict[str, int | None] = {}  # folder -> mtime_ns
        for folder in folders:
            self._list(folder)
        for where in git_files:  # HEAD (a checkout moves it), the exclude file
            if (signature := _stat(where)) is not None:
                self._files[where] = signature

    def _list(self, folder: str) -> set[str]:
        """(Re)read a folder; its sub-folders not polled yet."""
        self._folders[folder] = (_stat(folder) or (None, 0))[0]
        try:
            with os.scandir(folder) as found:
                entries = [(e.path, e.is_dir(follow_symlinks=False)) for e in found]
        except OSError:
            return set()
        for where, is_dir in entries:
            if not is_dir and where not in self._files and self._indexable(where):
                if (signature := _stat(where)) is not None:
                    self._files[where] = signature
        return {where for where, is_dir in entries if is_dir and where not in self._folders}

    def close(self) -> None:
        """Nothing to release (as a native watch has)."""

    def scan(self) -> set[tuple[watchfiles.Change, str]]:
        changes: set[tuple[watchfiles.Change, str]] = set()
        for folder, mtime in list(self._folders.items()):
            now = (_stat(folder) or (None, 0))[0]
            if now == mtime:
                continue
            if now is None:
                changes.add((watchfiles.Change.deleted, folder))
                continue
            known = set(self._files)
            changes.update((watchfiles.Change.added, where) for where in self._list(folder))
            changes.update((watchfiles.Change.added, where) for where in set(self._files) - known)
        for where, signature in list(self._files.items()):
            now = _stat(where)
            if now == signature:
                continue
            if now is None:
                del self._files[where]
                changes.add((watchfiles.Change.deleted, where))
            else:
                self._files[where] = now
                changes.add((watchfiles.Change.modified, where))
        return changes


def _changes(raw) -> set[tuple[watchfiles.Change, str]]:
    """A watch's batch (none for "timeout", "stop" or "signal")."""
    return {(watchfiles.Change(change), where) for change, where in raw} if isinstance(raw, set) \
        else set()


def _stat(where: str) -> tuple[int, int] | None:
    """(mtime_ns, size), or None when it is gone."""
    try:
        st = os.stat(where)
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size


class _WatchLost(Exception):
    """The native watch can report nothing more (see ``DiskFollower._events``)."""


class DiskFollower:
    """One root's watcher thread. ``established`` is set once the first watch
    stands (or the follower gave up), so a first pass started after it misses
    no change."""

    def __init__(self, engine: Engine, mode: str):
        self.engine = engine
        self.root = engine.root
        self.requested = mode
        # "native" | "poll" | "off" (stopped, or never started) | "starting"
        self.mode = "starting"
        self.reason: str | None = None  # why native events are not used
        self.folders = 0
        self.batches = 0
        self.polled = 0  # folders polled because native events could not cover them
        # An editor's didChangeWatchedFiles events not handled again (the daemon saw them).
        self.editor_events_skipped = 0
        self.established = threading.Event()
        self._stop = threading.Event()
        self._git_dir: Path | None = None  # found by the thread (a git call)
        # The git files of the root's repository ("") and of each inside it (a
        # clone, a submodule) by folder; found by the thread (git calls).
        self._repositories: dict[str, GitFiles] = {}
        # The files each repository's index tracks, by folder as above: a change
        # of its index is compared with them.
        self._tracked: dict[str, frozenset[str]] = {}
        # The folders holding a repository of their own at the last listing.
        self._inner_repositories: set[str] = set()
        # Folders that appeared since the last listing (an empty one is in no listing yet).
        self._new_folders: set[str] = set()
        # New folders whose files are indexed once the watch on them stands.
        self._catch_up: set[str] = set()
        self._watched: set[str] = set()
        self._not_utf8: set[str] = set()  # listed folders left unwatched: their names are not UTF-8
        # The watch a new folder or new ignore rules replaced, open until its
        # successor stands: what it saw in between is handled, not lost.
        self._previous: RustNotify | StatPoller | None = None
        # The replaced native watch's poller of the folders it could not watch
        # (or a picture of every folder, near the watch limit): scanned once
        # more once the successor stands, so a change made in between is seen.
        self._previous_poller: StatPoller | None = None
        # When the watch last held nothing it had not handled (monotonic): a
        # watch returning with nothing, or its batch handled. ``caught_up``
        # waits on it.
        self._handled_until = 0.0
        self._handled = threading.Condition()
        # A watch lost a batch of events: the next one, once it stands,
        # checks every file.
        self._events_lost = False
        self._thread = threading.Thread(target=self._run, name=f"ctxls-watch-{self.root.name}",
                                        daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=5)
        self.mode = "off"


    def caught_up(self, timeout: float) -> bool:
        """Wait (at most ``timeout`` s) until every change written before now
        is indexed: a native watch returned after now, with nothing or with
        a batch it then handled. False when polled or stopped (no such moment
        comes soon) or on timeout. For answers that found nothing: a name in
        a file written a moment ago is in no batch handed over yet."""
        if self.mode != "native" or self._stop.is_set():
            return False
        asked = time.monotonic() + EVENT_DELAY_S
        with self._handled:
            return self._handled.wait_for(
                lambda: self._handled_until >= asked or self.mode != "native", timeout) \
                and self._handled_until >= asked

    def handled_since(self, moment: float) -> bool:
        """Without waiting: whether every change written before ``moment``
        (monotonic) is handled, as ``caught_up`` waits for. True when not
        watched natively (no such moment is known; answers check their files)."""
        return self.mode != "native" or self._stop.is_set() \
            or self._handled_until >= moment + EVENT_DELAY_S

    def _handled_to(self, moment: float) -> None:
        with self._handled:
            self._handled_until = moment
            self._handled.notify_all()

    # -- the thread ------------------------------------------------------------

    def _find_root_repository(self) -> None:
        """The root's repository's git files (none outside one): at the start,
        and again when the root or its ``.git`` was replaced."""
        own = git_files_of(self.root)
        self._git_dir = Path(own.folder) if own is not None else None
        self._tracked.pop("", None)  # listed again with the next watch
        if own is not None:
            self._repositories[""] = own
        else:
            self._repositories.pop("", None)

    def _run(self) -> None:
        self._find_root_repository()
        polling = self.requested == "poll"
        if polling:
            self.reason = "polling was asked for (watch: \"poll\")"
        failures = 0
        try:
            while not self._stop.is_set():
                try:
                    self._watch(polling)
                    failures = 0
                except OSError as exc:
                    if self._stop.is_set():
                        break
                    if not polling and _limit_reached(exc):
                        polling = True
                        self.polled = self.folders
                        self.reason = (f"native file events unavailable ({exc}); polling "
                                       f"{self.folders} folders every {POLL_MS / 1000:g} s")
                        self.engine.on_warning(f"{self.root}: {self.reason}")
                    else:  # a folder vanished while the watch was set up: again
                        log.info("watching %s again: %s", self.root, exc)
                        self._stop.wait(RETRY_S)
                except Exception:
                    # Whatever failed (the store missing for a moment while
                    # the repository is cloned again), the disk is followed
                    # again: a new watch, then every file checked.
                    if self._stop.is_set():
                        break
                    failures += 1
                    wait = min(RETRY_S * 2 ** failures, MAX_RETRY_S)
                    log.exception("following %s on disk failed; watching again in %g s",
                                  self.root, wait)
                    self._events_lost = True
                    self.established.set()  # a first pass need not wait: every file is checked
                    self._stop.wait(wait)
        finally:
            if self._previous is not None:
                self._previous.close()
            self.mode = "off"
            self.established.set()
            self._handled_to(self._handled_until)  # no wait for a watch that is gone

    def _folders(self) -> list[str]:
        # Only folders there now: git lists a deleted tracked file until the
        # deletion is staged, and a folder kept "watched" while gone was
        # skipped as known when it came back (`rm -rf pkg; git checkout pkg`).
        folders = {f for f in listed_folders(self.root) | self._new_folders
                   if not f or os.path.isdir(self.root / f)}
        # A folder whose name is not UTF-8 (an old Latin-1 archive's): no
        # file in it is indexed (discovery.NAME_NOT_UTF8), and watchfiles
        # cannot take its path, which ended the watcher. Left out, said once.
        unnamed = {f for f in folders if not is_utf8(f)}
        if unnamed - self._not_utf8:
            log.warning("%s: not watching %d folders whose names are not UTF-8 (their files are "
                        "not indexed): %s", self.root, len(unnamed),
                        ", ".join(sorted(map(shown_name, unnamed))[:5]))
        self._not_utf8 = unnamed
        folders -= unnamed
        self._new_folders &= folders
        if self.established.is_set():
            # Folders listed now and not before (new ignore rules let them in):
            # their files are indexed once the watch on them stands, as a new
            # folder's are (the first watch's are the first pass's).
            self._catch_up.update(folders - self._watched)
        self._watched = folders
        self.folders = len(folders)
        paths = [str(self.root / f) if f else str(self.root) for f in sorted(folders)]
        if self._git_dir is not None:
            self._follow_inner_repositories(folders)
        for folder in set(self._tracked) - set(self._repositories):
            del self._tracked[folder]
        for folder in set(self._repositories) - set(self._tracked):
            self._tracked[folder] = tracked_files(self.root / folder)
        for repository in self._repositories.values():
            paths.append(repository.folder)
            paths.extend(os.path.dirname(f) for f in repository.excludes
                         if os.path.isdir(os.path.dirname(f)))
        return list(dict.fromkeys(paths))

    def _follow_inner_repositories(self, folders: set[str]) -> None:
        """The repositories among the watched folders (a clone, a submodule):
        a checkout or `git submodule update` in one moves its HEAD, and its
        own exclude files judge its files."""
        self._inner_repositories = set(repositories_among(self.root, folders))
        for folder in set(self._repositories) - self._inner_repositories - {""}:
            del self._repositories[folder]
        for folder in self._inner_repositories - set(self._repositories):
            found = git_files_of(self.root / folder)
            if found is not None:  # a broken .git: asked again at the next listing
                self._repositories[folder] = found

    def _watch(self, polling: bool) -> None:
        """One watch over the current folders, until a new folder needs a new one."""
        if not self.root.is_dir():  # removed: watched again, every file checked, once it is back
            self._events_lost = True
            self._stop.wait(RETRY_S)
            return
        paths = self._folders()
        if polling:
            poller = StatPoller(paths, self._followed, self._git_files())
            self.polled = self.folders  # the git folders are in neither count
            more_folders = self._standing("poll")
            changes = self._drain_previous()
            self._check_all_if_events_lost()
            if (changes and self._handle(changes)) or more_folders:
                self._previous = poller
                return
            while not self._stop.wait(POLL_MS / 1000):
                if (changes := poller.scan()) and self._handle(changes):
                    self._previous = poller  # new folders: poll them too
                    return
            return
        # watchfiles' documented Rust backend: unlike its watch() generator it
        # says when the watch stands (the constructor returns), so the first
        # pass and a new folder's catch-up start only then.
        with _NEW_WATCH_LOCK:
            before = _inotify_fds()
            notify = RustNotify(paths, False, False, 0, False, True)
            mine = _inotify_fds() - before
        try:
            # notify drops a folder it cannot watch (inotify's limit) without a
            # word: those are found in the kernel's list and polled instead.
            unwatched = _unwatched(paths, mine)
            if unwatched and self._previous is not None:
                # The replaced watch holds the watches this one lacks: take what
                # both saw, let both go and watch again without holding one.
                # A picture of every folder, taken while the old watch stands,
                # is scanned once the next one stands: nothing made in between is lost.
                picture = StatPoller(paths, self._followed, self._git_files())
                changes = self._drain_previous() | self._pending(notify)
                self._previous_poller = picture
                if changes:
                    self._handle(changes)
                return
            git_files = [f for f in self._git_files() if os.path.dirname(f) in unwatched]
            poller = StatPoller(unwatched, self._followed, git_files) if unwatched else None
            said, self.polled = self.polled, len(unwatched)
            self.reason = (f"the platform's watch limit was reached: {len(unwatched)} of "
                           f"{len(paths)} folders are polled every {POLL_MS / 1000:g} s "
                           "(raise fs.inotify.max_user_watches to watch them all)"
                           if unwatched else None)
            if unwatched and not said:
                self.engine.on_warning(f"{self.root}: {self.reason}")
            more_folders = self._standing("native")
            changes = self._drain_previous()
            self._check_all_if_events_lost()
            if more_folders:  # sub-folders the catch-up found: watched too, from the next watch
                if changes:
                    self._handle(changes)
                self._previous, notify = notify, None
                self._previous_poller = poller
                return
            scanned = time.monotonic()
            while not self._stop.is_set():
                returned = time.monotonic()
                if not changes:
                    changes = self._events(notify, TICK_MS)
                    returned = time.monotonic()
                if poller is not None and time.monotonic() - scanned >= POLL_MS / 1000:
                    changes |= poller.scan()
                    scanned = time.monotonic()
                if changes and self._handle(changes):
                    self._handled_to(returned)
                    self._previous, notify = notify, None  # new folders: watch them too
                    self._previous_poller = poller
                    return
                self._handled_to(returned)
                changes = set()
        except _WatchLost:
            return  # a new watch, then every file checked
        finally:
            if notify is not None:
                notify.close()

    def _check_all_if_events_lost(self) -> None:
        """Once a new watch stands: every file checked if the last one lost events."""
        if self._events_lost:
            self._events_lost = False
            self._index([], events_lost=True)

    def _events(self, notify: RustNotify, timeout_ms: int) -> set[tuple[watchfiles.Change, str]]:
        """What ``notify`` reports within ``timeout_ms``. A path that is not
        UTF-8 (a file named so) cannot be reported: watchfiles raises for it
        on this and every later call, with the rest of its batch. That watch
        is done (``_WatchLost``); the follower watches again and checks
        every file, rather than ending, which left the disk unfollowed."""
        try:
            return _changes(notify.watch(MAX_BATCH_MS, STEP_MS, timeout_ms, self._stop))
        except WatchfilesRustInternalError as exc:
            log.warning("%s: file events lost (%s); watching again and checking every file",
                        self.root, exc)
            self._events_lost = True
            raise _WatchLost from exc

    def _drain_previous(self) -> set[tuple[watchfiles.Change, str]]:
        """What the replaced watch and its poller saw until now (its successor
        stands), and close it."""
        poller, self._previous_poller = self._previous_poller, None
        changes = poller.scan() if poller is not None else set()
        previous, self._previous = self._previous, None
        if previous is None:
            return changes
        if isinstance(previous, StatPoller):
            return changes | previous.scan()
        try:
            return changes | self._pending(previous)
        except _WatchLost:  # its events are lost: the watch replacing it checks every file
            return changes
        finally:
            previous.close()

    def _pending(self, notify: RustNotify) -> set[tuple[watchfiles.Change, str]]:
        """What ``notify`` holds now (none after a step without any)."""
        return self._events(notify, STEP_MS)

    def _standing(self, mode: str) -> bool:
        """The watch stands: say so once, and index the new folders' files;
        True when they hold folders this watch lacks."""
        if not self.established.is_set():
            log.info("following %s on disk (%s, %d folders)", self.root, mode, self.folders)
            self.established.set()
        self.mode = mode
        return bool(self._catch_up) and self._index_new_folders()

    def _followed(self, where: str) -> bool:
        """A file whose changes count: indexable, or holding ignore rules."""
        rel = os.path.relpath(where, self.root)
        return self.engine.indexer.wanted(rel) or sets_ignore_rules(rel)

    def _git_files(self) -> list[str]:
        """The git files whose changes count: each repository's HEAD and exclude files."""
        return list(dict.fromkeys(where for repository in self._repositories.values()
                                  for where in (repository.head, repository.index,
                                                *repository.excludes)))

    def _skipped_name(self, name: str) -> bool:
        """A folder discovery never lists: in a repository, version control's
        and the store (git decides the rest); outside one, its walk's rules."""
        return name in _VCS_AND_STORE if self._git_dir is not None else is_skipped_folder_name(name)

    def _handle(self, changes: set[tuple[watchfiles.Change, str]]) -> bool:
        """Index one batch; True when it brought folders to watch."""
        root = str(self.root)
        paths: set[str] = set()
        head_moved = excludes_changed = repositories_changed = root_replaced = False
        listing_changed = False
        appeared: list[str] = []
        vanished: list[str] = []
        heads = {repository.head for repository in self._repositories.values()}
        excludes = {f for repository in self._repositories.values() for f in repository.excludes}
        indexes = {repository.index: folder for folder, repository in self._repositories.items()}
        for change, where in changes:
            if where in heads:
                head_moved = True
                continue
            if where in indexes:
                # Files (and folders to watch) discovery lists now, or no more.
                tracked, untracked = self._tracking_changed(indexes[where])
                listing_changed = listing_changed or bool(tracked) \
                    or bool(ignored_paths(self.root, untracked))
                continue
            if where in excludes:
                excludes_changed = True
                continue
            rel = os.path.relpath(where, root)
            if rel == "." and change is watchfiles.Change.deleted:
                root_replaced = True  # removed, maybe made again (`rm -rf repo && git clone`)
                continue
            if rel in (".", "..") or rel.startswith("../") or not is_utf8(rel):
                continue  # the git folders' other files; a name no file of is indexed
            rel = rel.replace(os.sep, "/")
            folder, _, name = rel.rpartition("/")
            if rel == ".git" and os.path.lexists(where) != (self._git_dir is not None):
                root_replaced = True  # the root's repository came or went (`git init`, a clone)
                continue
            if name == ".git" and folder and self._git_dir is not None \
                    and (change is not watchfiles.Change.deleted) != (folder in self._inner_repositories):
                # A repository inside came or went (`git submodule update --init`
                # in its empty folder, `git init`, `git submodule deinit`): other
                # rules list its files now, and its HEAD is to be followed.
                repositories_changed = True
                continue
            if any(self._skipped_name(p) for p in rel.split("/")):
                continue
            if change is not watchfiles.Change.deleted and os.path.isdir(where) \
                    and not os.path.islink(where):
                # A new node_modules or virtual environment (an install): none
                # of its files is listed, so neither watched nor walked.
                if rel not in self._watched and not holds_installed_dependencies(where):
                    appeared.append(rel)
                continue
            if rel in self._watched:
                vanished.append(rel)  # a folder removed or moved away...
                if change is watchfiles.Change.deleted:
                    continue  # ...or replaced by a file of its name (indexed below)
            paths.add(rel)
        if root_replaced:
            # Its watches went with it, and what is there now may be another
            # repository: a new watch on it, then every file checked.
            self._find_root_repository()
            self._events_lost = True
            return True
        if vanished:
            indexed = self.engine.store.file_states()
            paths.update(p for p in indexed if any(p.startswith(v + "/") for v in vanished))
            self._new_folders.difference_update(vanished)
            # Removed and made again within the batch (`rm -rf gen && mkdir
            # gen`, a generator's output): a new folder, whose files no watch
            # reported (the old one's watch went with it): caught up as new.
            appeared.extend(v for v in vanished if os.path.isdir(os.path.join(root, v))
                            and not os.path.islink(os.path.join(root, v)) and v not in appeared)
        ignored = ignored_paths(self.root, [f + "/" for f in appeared])
        new = [f for f in appeared if f + "/" not in ignored]
        self.batches += 1
        rules_changed = excludes_changed or listing_changed or any(map(sets_ignore_rules, paths))
        # A repository coming is a checkout: one pass lists what it holds.
        head_moved = head_moved or repositories_changed
        if paths or head_moved or rules_changed:
            self._index(sorted(paths), head_moved, rules_changed)
        if new or vanished or rules_changed or repositories_changed:  # other folders to watch
            self._new_folders.update(new)
            # Now, for what is already there, and again once the new watch
            # stands, for what was created in between.
            self._catch_up.update(new)
            self._index_new_folders(keep=True)
            return True
        return False

    def _tracking_changed(self, folder: str) -> tuple[list[str], list[str]]:
        """The files the repository at ``folder`` ("" the root's) tracks since
        its index last changed and does not index yet (`git add -f` of an
        ignored file: discovery lists it now, and no event in the work tree
        says so), and those it no longer tracks (`git rm --cached`: ignored,
        discovery lists it no more). A stage or a commit lists the same files."""
        was = self._tracked.get(folder, frozenset())
        now = self._tracked[folder] = tracked_files(self.root / folder)
        prefix = f"{folder}/" if folder else ""
        tracked = [prefix + path for path in now - was]
        return ([path for path in tracked if self.engine.indexer.wanted(path)
                 and self.engine.store.file_state(path) is None],
                [prefix + path for path in was - now])

    def _index_new_folders(self, keep: bool = False) -> bool:
        """The files of folders that appeared, their sub-folders' too;
        ``keep``: do it again once the new watch stands. Sub-folders are
        watched from the next watch on (an empty one is in no listing: files
        made later in `mkdir -p a/b/c` were missed). True when some folder
        found is not watched yet."""
        folders = sorted(self._catch_up)
        if not keep:
            self._catch_up = set()
        found: list[str] = []
        subfolders: list[str] = []
        for folder in folders:
            for dirpath, dirnames, filenames in os.walk(self.root / folder):
                # Nor an installed dependency inside it (a copied project's
                # .venv, node_modules): discovery lists none of its files.
                dirnames[:] = [d for d in dirnames if not self._skipped_name(d) and is_utf8(d)
                               and not os.path.islink(os.path.join(dirpath, d))
                               and not holds_installed_dependencies(os.path.join(dirpath, d))]
                rel_dir = os.path.relpath(dirpath, self.root).replace(os.sep, "/")
                found.extend(f"{rel_dir}/{name}" for name in filenames if is_utf8(name))
                subfolders.extend(f"{rel_dir}/{name}" for name in dirnames)
        if found:
            self._index(found)
        unwatched = [f for f in subfolders if f not in self._watched and f not in self._new_folders]
        if unwatched:
            ignored = ignored_paths(self.root, [f + "/" for f in unwatched])
            unwatched = [f for f in unwatched if f + "/" not in ignored]
            self._new_folders.update(unwatched)
        return any(f not in self._watched for f in self._new_folders)

    def _index(self, paths: list[str], head_moved: bool = False, rules_changed: bool = False,
               events_lost: bool = False) -> None:
        """Hand a batch to the engine; a failure (the store unavailable for a
        moment) costs that batch, not the watch: answers still check their files."""
        try:
            self.engine.disk_changed(paths, head_moved, rules_changed, events_lost)
        except Cancelled:  # the engine is closing
            pass
        except Exception:
            log.exception("indexing %d changed files of %s failed", len(paths), self.root)
