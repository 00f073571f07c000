"""``Store``: one SQLite database, its connections and transactions.

Opening (telling "not now" from "not ours / corrupt"), a writer connection
behind a lock, one read connection per thread, a read snapshot per request
(``snapshot``), and the translation of SQLite's errors into the library's.
"""

from __future__ import annotations

import collections
import fcntl
import itertools
import logging
import os
import shutil
import sqlite3
import stat
import tempfile
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

from ctxls.index import trust
from ctxls.index.errors import StoreError, StoreUnavailable, WriteFailed
from ctxls.index.private import LinkRefused, create_private_file, make_private_dir, refuse_link, restrict
from ctxls.index.store.fts_changes import opened as fts_tables_opened, record as record_fts_commit
from ctxls.index.store.failures import detail, storage_reason, store_error, translated
from ctxls.index.store.reads import Reads, fts_generation
from ctxls.index.store.recovery import Recovery, _is_ours
from ctxls.index.store.schema import APPLICATION_ID, FTS_TABLE_BY_KIND, VECTOR_TABLES, Migrations, _SQLITE_MAGIC
from ctxls.index.store.writes import FileRows, now_ms
from ctxls.index.tokenize import fold

log = logging.getLogger(__name__)

# What the rest of the package names a connection and a row by: only the
# store imports sqlite3 (tests/test_layers.py).
# The SQL name of tokenize.fold on every connection of a store.
FOLD_SQL = "ctxls_fold"
Connection = sqlite3.Connection
Row = sqlite3.Row

# Store.files_version values (never one twice in a process).
_FILES_VERSIONS = itertools.count(1)
# Seconds between attempts to open an unavailable store.
RETRY_S = 1.0
# Reads check that the store file is still the one open at most this often
# (seconds); writes check before and after every transaction.
IDENTITY_CHECK_S = 0.5


class Store(Migrations, Recovery, FileRows, Reads):
    """One SQLite database: a writer connection behind a lock, and one
    read connection per thread (WAL gives each reader a consistent snapshot)."""

    def __init__(self, db_path: str | os.PathLike[str] | None, home: Path | None = None,
                 refuse_untrusted: bool = False):
        # None: a private throw-away store (buffers outside every workspace
        # folder), a temp file so it behaves exactly like a real one (WAL).
        self._temp_dir = tempfile.mkdtemp(prefix="ctxls-") if db_path is None else None
        self.db_path = str(db_path) if db_path is not None else os.path.join(self._temp_dir, "index.db")
        self._write_lock = threading.RLock()
        self._local = threading.local()
        # Each reader with the thread it belongs to (see reader()).
        self._readers: list[tuple[threading.Thread, Connection]] = []
        self._readers_lock = threading.Lock()
        self.rebuilt = False  # True when file rows were dropped on open
        # Per vector table: ids deleted here, not yet removed from its ANN index
        # (semantic.py drains it).
        self.removed_vector_ids: dict[str, collections.deque[int]] = {
            table: collections.deque() for table in VECTOR_TABLES}
        self._writer: Connection | None = None
        # Renewed after each commit that changed a file's rows (put_file,
        # delete_file): what is derived from the code (code lens titles) holds
        # for one value. Unique in the process, whichever store.
        self.files_version = next(_FILES_VERSIONS)
        self._files_touched = False
        # The write transaction's FTS rows (table -> rowids written or dropped)
        # and, from just before the first of them, (data_version, generation
        # of each file-kind FTS table): fts_changes records the commit.
        self._fts_rows: dict[str, set[int]] = {}
        self._fts_before: tuple[int, dict[str, object]] | None = None
        # Bumped by every (re)open: a thread's read connection of an older one is replaced.
        self._generation = 0
        self.error: StoreUnavailable | None = None  # set while the store cannot be used
        self._retry_at = 0.0
        # (st_dev, st_ino) of the file opened: a different one means it was
        # deleted or replaced under us.
        self._identity: tuple[int, int] | None = None
        self._identity_checked = 0.0
        # Called after a vanished store was created anew (its file rows are gone).
        self.on_replaced: list[Callable[[], None]] = []
        # The file vanished or was replaced and no open has succeeded since:
        # the open that does tells on_replaced, however many failed before it.
        self._replaced_unopened = False
        # The writer of a store file deleted while open, until its written
        # rows are carried into the one made in its place (_carry_vanished).
        self._vanished: Connection | None = None
        # The folder the store belongs in (a repository's root, for its own
        # `.ctxls`): never created by the store; gone, the store is unavailable.
        self._home = home
        # Whether stores are sealed and checked (index/trust.py): not a throw-away one.
        self._sealed = db_path is not None
        # A store that is not this user's own is refused (StoreUnavailable),
        # never quarantined: for a read of a file the user names (`ctxls
        # memory export --db`), which must not move it or make one in its place.
        self._refuse_untrusted = refuse_untrusted
        # Whether this Store holds the lock of its folder (_folder_lock; only
        # ever changed under _write_lock, so by one thread at a time).
        self._folder_locked = False
        # Where this process moved a corrupt or untrusted store (its caches beside it are stale).
        self.moved_aside: str | None = None
        self._quarantine_counts: dict[tuple[str, int, int], int] = {}
        # Set when a query met corruption: the next access checks and repairs.
        self._suspect: str | None = None
        # The last repair or quarantine of this process: status reports it.
        self.repair: dict | None = None
        with self._write_lock:
            try:
                self._open()
            except StoreUnavailable as exc:
                self._unavailable(exc)

    # -- opening -------------------------------------------------------------

    def _unavailable(self, exc: StoreUnavailable) -> None:
        if self.error is None or self.error.message != exc.message:
            log.error("%s", exc.message)
        self.error = exc
        self._retry_at = time.monotonic() + RETRY_S

    def _ready(self, verify: bool = False) -> None:
        """Return when the store can be used; else retry opening it (at most
        every RETRY_S) and raise StoreUnavailable. Also notices a store file
        deleted or replaced under us (always when ``verify``, else at most
        every IDENTITY_CHECK_S) and creates it anew: a write must never land
        in a file nobody can open again."""
        replaced = False
        if self._suspect is not None and self.error is None:
            replaced = self._check_suspect()
        if self.error is None and not replaced:
            now = time.monotonic()
            if not verify and now < self._identity_checked + IDENTITY_CHECK_S:
                return
            self._identity_checked = now
            if self._file_identity() == self._identity:
                return
            with self._write_lock:
                if self.error is None and self._file_identity() != self._identity:
                    log.warning("index store %s was deleted or replaced while open; "
                                "opening it anew", self.db_path)
                    self.error = StoreUnavailable(self.db_path, "missing", "the store file vanished")
                    self._retry_at = 0.0
                    self._replaced_unopened = True
                    if self._vanished is None and self._writer is not None \
                            and not os.path.lexists(self.db_path) \
                            and (self._home is None or self._home.is_dir()):
                        # Deleted (`git clean -fdx`), not replaced, nor moved away
                        # with its repository: still open here, its written rows
                        # are read through this connection.
                        self._vanished, self._writer = self._writer, None
        if self.error is not None:
            with self._write_lock:
                if self.error is not None and time.monotonic() >= self._retry_at:
                    moved_aside = self.moved_aside
                    try:
                        self._open()
                    except StoreUnavailable as exc:
                        self._unavailable(exc)
                    else:
                        log.warning("index store %s is available", self.db_path)
                        replaced = replaced or self._replaced_unopened or self.moved_aside != moved_aside
                        self._replaced_unopened = False
                        self._carry_vanished()
                error = self.error
        else:
            error = None
        if replaced and error is None:
            for listener in self.on_replaced:  # outside the lock: they may take their own
                listener()
        if error is not None:
            raise error.with_traceback(None)

    def _file_identity(self) -> tuple[int, int] | None:
        try:
            st = os.stat(self.db_path)
        except OSError:
            return None
        return st.st_dev, st.st_ino

    def _header(self) -> bytes:
        """The file's first 100 bytes (b"" when it does not exist yet).
        Opened without blocking and read only when it is a regular file: a
        FIFO there (an unpacked archive can carry one) blocked the open, and
        with it every request, forever."""
        try:
            fd = os.open(self.db_path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOFOLLOW)
        except (FileNotFoundError, NotADirectoryError):  # the folder (or a file in its place) says why
            return b""
        except OSError as exc:
            raise StoreUnavailable(self.db_path, "permission" if isinstance(exc, PermissionError)
                                   else "io", exc.strerror or str(exc)) from exc
        try:
            mode = os.fstat(fd).st_mode
            if stat.S_ISDIR(mode):  # swapped in since _open looked: _open says so next time
                return b""
            self._refuse_special(self.db_path, mode)
            return os.read(fd, 100)
        except OSError as exc:
            raise StoreUnavailable(self.db_path, "io", exc.strerror or str(exc)) from exc
        finally:
            os.close(fd)

    def _refuse_special(self, path: str, mode: int) -> None:
        """StoreUnavailable when ``path`` (the store file or one of its
        journals, of mode ``mode``) is neither a regular file nor a folder
        (which _open names as such): SQLite would block opening or reading a
        FIFO, or read a device. Refused like a foreign store, never moved."""
        if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
            return
        kind = ("a FIFO (named pipe)" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode)
                else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "not a regular file")
        raise StoreUnavailable(self.db_path, "foreign",
                               f"{path} is {kind}, not a regular file; refusing to use or move it "
                               "(remove it, and ctxls makes its own)")

    def _open(self) -> None:
        """Open (or create) the store; StoreUnavailable when it cannot be used now
        or is not ours. Moves a file aside only when it is ours and corrupt."""
        path = Path(self.db_path)
        if self._home is not None and not self._home.is_dir():
            # Deleted or moved away while served: a store made anew would
            # re-create the folder (an empty repository where none is).
            raise StoreUnavailable(self.db_path, "missing", f"the folder {self._home} is gone")
        if path.is_dir():
            raise StoreUnavailable(self.db_path, "folder",
                                   "dbPath is a folder, not a ctxls store; refusing to use it")
        # SQLite follows links for the database and its journals: a repository's
        # `.ctxls/index.db-wal -> ~/.bashrc.d/x` would get its chunk texts written there.
        try:
            for suffix in ("", "-wal", "-shm", "-journal"):
                refuse_link(self.db_path + suffix, "the store file")
        except LinkRefused as exc:
            raise StoreUnavailable(self.db_path, "link", exc.strerror) from exc
        for suffix in ("-wal", "-shm", "-journal"):
            try:
                self._refuse_special(self.db_path + suffix, os.lstat(self.db_path + suffix).st_mode)
            except OSError:  # none there (SQLite makes it), or it says why when SQLite opens it
                pass
        for suffix in ("-wal", "-shm"):  # SQLite's own message names no file
            if os.path.isdir(self.db_path + suffix):
                raise StoreUnavailable(self.db_path, "folder",
                                       f"{self.db_path}{suffix} is a folder, not the store's "
                                       f"{suffix[1:]} file; refusing to use the store (move it away)")
        self._refuse_foreign(self._header())
        try:
            make_private_dir(path.parent)
        except OSError as exc:
            raise self._create_error(exc) from exc
        with self._folder_lock():
            self._open_in_folder(path)

    def _refuse_foreign(self, header: bytes) -> None:
        if header and not header.startswith(_SQLITE_MAGIC):
            raise StoreUnavailable(self.db_path, "foreign",
                                   "dbPath is not a SQLite database; refusing to use or move it")

    def _create_error(self, exc: OSError) -> StoreUnavailable:
        reason = ("permission" if isinstance(exc, PermissionError) else "link" if isinstance(exc, LinkRefused)
                  else "io")
        return StoreUnavailable(self.db_path, reason, exc.strerror or str(exc))

    @contextmanager
    def _folder_lock(self) -> Iterator[None]:
        """Exclusive between the processes (and Stores) opening a store in this
        folder: one creates, judges, quarantines or repairs a store while no
        other can see it half made (a new store before its seal was
        quarantined by a second process). Held by the caller of _open and of
        the suspect check, both under _write_lock."""
        if self._temp_dir is not None or self._folder_locked:
            yield
            return
        try:
            fd = os.open(os.path.dirname(os.path.abspath(self.db_path)), os.O_RDONLY | os.O_CLOEXEC)
        except OSError as exc:
            raise self._create_error(exc) from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            self._folder_locked = True
            yield
        finally:
            self._folder_locked = False
            os.close(fd)  # releases the lock

    def _open_in_folder(self, path: Path) -> None:
        """The part of _open that holds the folder's lock."""
        header = self._header()  # again: another process may have made or moved it meanwhile
        self._refuse_foreign(header)
        # An empty file is no store (a creation cut short, or the file
        # truncated): a new one is made in its place, and status says so.
        emptied = not header and path.is_file()
        try:
            if not header:
                create_private_file(path)
        except OSError as exc:
            raise self._create_error(exc) from exc
        self._uri = path.resolve().as_uri()
        if not header:
            self._set_aside_orphans()
        conn: Connection | None = None
        meta: dict[str, str] = {}
        try:
            conn = self._connect()
            # Before anything writes (even the journal mode): is it ours?
            tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            if conn.execute("PRAGMA application_id").fetchone()[0] != APPLICATION_ID and tables \
                    and "meta" not in tables:
                # No marker (a store from before it, or someone else's): ours
                # only if our meta table reads.
                raise StoreUnavailable(self.db_path, "foreign",
                                       "dbPath is another application's SQLite database; "
                                       "refusing to use or move it")
            if "meta" in tables:
                meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
            # Before this open writes anything (the journal mode, the stamp).
            unchanged = bool(header) and self._unchanged_since_checked(meta.get("store_id"))
            # Before anything writes: are its written rows this user's own?
            distrust = trust.problem(meta, self.db_path) if self._sealed and tables else None
            if distrust is not None:
                conn.close()
                conn = None
                self._quarantine(distrust)
                return
            self._install(conn)  # seals a new store (Migrations._migrate)
            if header and not unchanged:
                damage = self._damage()
                conn = None  # the writer now: a repair closes it
                if damage is not None:
                    self._repair(damage, meta)
                else:
                    self._repair_records("a check on open", meta)
        except sqlite3.Error as exc:
            if conn is not None:
                conn.close()
            reason = storage_reason(exc) or "io"
            if reason != "corrupt":
                raise StoreUnavailable(self.db_path, reason, detail(exc)) from exc
            if not _is_ours(header):
                raise StoreUnavailable(
                    self.db_path, "corrupt",
                    f"{detail(exc)}; it carries no ctxls marker, so it is left as it is "
                    "(move it away and ctxls builds a new store)") from exc
            self._replace_corrupt(exc, meta)
        except BaseException:
            if conn is not None:
                conn.close()
            raise
        if emptied:
            log.warning("index store %s was an empty file; a new store was made in its place", self.db_path)
            self.repair = {"at": now_ms(), "cause": "the store file was empty (0 bytes); a new store "
                           "was made in its place", "moved_to": None, "carried": {}}
        self._finish_repairs()  # a repair an earlier process began and did not finish

    def _set_aside_orphans(self) -> None:
        """A -wal/-shm without its database (deleted under a running daemon)
        would be replayed into the new file: move them aside first."""
        if os.path.exists(self.db_path):
            return
        stamp = now_ms()
        for suffix in ("-wal", "-shm"):
            if os.path.exists(self.db_path + suffix):
                try:
                    os.replace(self.db_path + suffix, f"{self.db_path}.orphan-{stamp}{suffix}")
                except OSError as exc:
                    raise StoreUnavailable(self.db_path, "io", f"cannot move the stale {suffix} "
                                           f"aside: {exc.strerror or exc}") from exc

    def _install(self, conn: Connection) -> None:
        """Make ``conn`` the writer of a freshly opened store (WAL journal) and migrate it."""
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
        old, self._writer = self._writer, conn
        if old is not None:
            old.close()
        try:
            self._migrate()
        except BaseException:
            self._writer = None
            raise
        self._generation += 1
        fts_tables_opened(self._database_name(conn))
        for suffix in ("", "-wal", "-shm"):  # a store made before modes were enforced
            restrict(self.db_path + suffix)
        self._identity = self._file_identity()
        self.error = None

    # -- connections -------------------------------------------------------

    def _connect(self) -> Connection:
        conn = sqlite3.connect(self._uri, uri=True, check_same_thread=False,
                               isolation_level=None, timeout=10.0)
        conn.row_factory = sqlite3.Row
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute("PRAGMA busy_timeout = 10000")
        # Names compared as tokenize.fold compares them (SQLite's lower()
        # folds ASCII only): symbols' queries in another script use it.
        conn.create_function(FOLD_SQL, 1, fold, deterministic=True)
        return conn

    def reader(self) -> Connection:
        """This thread's read connection; inside ``read_snapshot`` it reads
        one snapshot (a read transaction begun at its first use)."""
        self._ready()
        conn = getattr(self._local, "conn", None)
        if conn is None or self._local.generation != self._generation:
            replaced = conn
            try:
                conn = self._connect()
                conn.execute("PRAGMA query_only = ON")
            except sqlite3.Error as exc:
                raise (store_error(exc, self.db_path, writing=False)
                       or StoreUnavailable(self.db_path, "io", str(exc))) from exc
            self._local.conn, self._local.generation = conn, self._generation
            with self._readers_lock:
                # The readers of threads that ended (a thread per call, as an
                # agent's tool calls had) and the one this replaces are closed
                # now, not held open until the store closes: 2 descriptors a
                # call ran a long session out of them.
                kept = []
                for thread, reader in self._readers:
                    if reader is replaced or not thread.is_alive():
                        _close_quietly(reader)
                    else:
                        kept.append((thread, reader))
                kept.append((threading.current_thread(), conn))
                self._readers = kept
        stores = getattr(_snapshot, "stores", None)
        if stores is not None and not conn.in_transaction:
            conn.execute("BEGIN DEFERRED")  # the snapshot is taken by the first read after it
            if self not in stores:
                stores.append(self)
        return conn

    @contextmanager
    def snapshot(self) -> Iterator[Connection]:
        """This thread's reader, reading one snapshot for the block (see
        ``read_snapshot``)."""
        with read_snapshot():
            yield self.reader()

    def renew_snapshot(self) -> None:
        """Let this thread's snapshot (if any) see every commit made so far:
        a new round of an answer (``Engine.fresh_answer``) and a request's own
        writes are read from here on."""
        conn = getattr(self._local, "conn", None)
        if conn is not None and conn.in_transaction:
            try:
                conn.execute("COMMIT")  # a read transaction: nothing to write
            except sqlite3.Error as exc:
                raise translated(exc, self.db_path, writing=False) from exc

    def _end_snapshot(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None and conn.in_transaction:
            self._rollback(conn)  # a read transaction: ending it is all

    @contextmanager
    def write(self, durable: bool = False) -> Iterator[Connection]:
        """One write transaction; callers hold it briefly (one file or batch).
        A storage failure is WriteFailed: nothing of it was committed.
        ``durable``: the commit reaches the disk before this returns
        (``synchronous = FULL``): what a caller acknowledges and nothing can
        derive again (written memory, the stash). Derived rows keep NORMAL:
        a power loss can take back their last commits, which a pass re-derives."""
        self._ready(verify=True)
        with self._write_lock:
            if self.error is not None:  # lost since the check above
                raise self.error.with_traceback(None)
            try:
                if durable:
                    self._writer.execute("PRAGMA synchronous = FULL")
                with self._transaction() as conn:
                    yield conn
            except sqlite3.Error as exc:
                raise self._write_error(exc) from exc
            finally:
                if durable and self._writer is not None:
                    try:
                        self._writer.execute("PRAGMA synchronous = NORMAL")
                    except sqlite3.Error:  # the writer is lost: the next open sets it
                        pass
                touched, self._files_touched = self._files_touched, False
            if durable:
                self._checkpoint_acknowledged()
            if touched:
                self.files_version = next(_FILES_VERSIONS)
            self.renew_snapshot()  # a request reads its own writes
            if self._file_identity() != self._identity:
                # Committed into a file deleted meanwhile: not durable, not acknowledged.
                raise WriteFailed(self.db_path, "missing",
                                  "the store file vanished during the write; try again")

    def _checkpoint_acknowledged(self) -> None:
        """What a durable write committed, copied from the WAL into the
        store file: SQLite reads a damaged WAL frame as the log's end, so
        acknowledged rows living only in the WAL (SQLite checkpoints every
        1,000 pages) would be lost with it, unseen. PASSIVE: never waits for
        readers; a failure leaves the rows durable in the WAL, as before."""
        try:
            self._writer.execute("PRAGMA wal_checkpoint(PASSIVE)")
        except sqlite3.Error as exc:
            log.warning("%s: checkpoint after an acknowledged write failed: %s", self.db_path, exc)

    @contextmanager
    def _transaction(self) -> Iterator[Connection]:
        conn = self._writer
        assert conn is not None
        conn.execute("BEGIN IMMEDIATE")
        self._fts_rows, self._fts_before = {}, None
        try:
            yield conn
        except BaseException:
            self._rollback(conn)
            raise
        try:
            conn.execute("COMMIT")
        except BaseException:
            self._rollback(conn)
            raise
        if self._fts_before is not None:
            self._record_fts_changes(conn)

    def fts_rows_changing(self, conn: Connection, table: str, rowids) -> None:
        """Called (inside a write transaction) before its statement writes or
        drops ``rowids`` of the file-kind FTS ``table``."""
        if self._fts_before is None:
            self._fts_before = (conn.execute("PRAGMA data_version").fetchone()[0],
                                {t: fts_generation(conn, t) for t in FTS_TABLE_BY_KIND.values()})
        self._fts_rows.setdefault(table, set()).update(rowids)

    def _record_fts_changes(self, conn: Connection) -> None:
        """File the committed transaction's FTS rows under the generations
        before and after it, unless another connection committed meanwhile
        (then "after" is not this commit's alone, and nothing is filed)."""
        assert self._fts_before is not None
        version, before = self._fts_before
        rows, self._fts_rows, self._fts_before = self._fts_rows, {}, None
        try:
            after = {t: fts_generation(conn, t) for t in FTS_TABLE_BY_KIND.values()}
            if conn.execute("PRAGMA data_version").fetchone()[0] != version:
                return
            database = self._database_name(conn)
        except sqlite3.Error:  # committed all the same: unfiled, readers load the table anew
            return
        for table, rowids in rows.items():
            record_fts_commit(database, table, before[table], after[table], rowids)

    @staticmethod
    def _database_name(conn: Connection) -> str:
        """The file SQLite opened (the key of fts_changes' records)."""
        return conn.execute("PRAGMA database_list").fetchone()[2]

    def _write_error(self, exc: sqlite3.Error) -> StoreError:
        """WriteFailed for a storage failure; the statement's own error otherwise."""
        return self.failure(exc, writing=True) or translated(exc, self.db_path, writing=True)

    @staticmethod
    def _rollback(conn: Connection) -> None:
        if conn.in_transaction:
            try:
                conn.execute("ROLLBACK")
            except sqlite3.Error:  # the failure that got us here already says why
                pass

    def close(self) -> None:
        with self._readers_lock:
            for _, conn in self._readers:
                conn.close()
            self._readers.clear()
        with self._write_lock:
            if self._vanished is not None:  # its store never came back (the folder gone)
                self._vanished.close()
                self._vanished = None
            store_id = None
            if self._writer is not None:
                if self._sealed and self.error is None and self._suspect is None:
                    store_id = self._store_id()
                self._writer.close()
            if store_id is not None and self._check_signature() is not None:
                trust.record_checked(store_id, self._check_signature())
        if self._temp_dir is not None:
            shutil.rmtree(self._temp_dir, ignore_errors=True)

    # -- the whole-file check's shortcut -------------------------------------

    def _store_id(self) -> str | None:
        try:
            row = self._writer.execute("SELECT value FROM meta WHERE key = 'store_id'").fetchone()
        except sqlite3.Error:
            return None
        return row[0] if row else None

    def _check_signature(self) -> tuple[int, int, int] | None:
        """(inode, size, mtime) of a store file left whole: no write-ahead log
        pending (closed by its last user), else None (check it next time)."""
        try:
            if os.path.getsize(self.db_path + "-wal") > 0:
                return None
        except OSError:
            pass
        try:
            st = os.stat(self.db_path)
        except OSError:
            return None
        return st.st_ino, st.st_size, st.st_mtime_ns

    def _unchanged_since_checked(self, store_id: str | None) -> bool:
        """This user's process closed the store last and nothing has touched
        the file since: its whole-file check would find what that process
        left, so opening skips it (a CLI verb without a daemon opens the store
        every time). Any other change (another writer, garbage, truncation)
        changes the signature and the check runs."""
        signature = self._check_signature()
        return (self._sealed and signature is not None and store_id is not None
                and trust.unchanged_since_checked(store_id, signature))

    def meta(self) -> dict[str, str]:
        return dict(self.reader().execute("SELECT key, value FROM meta").fetchall())



# This thread's read snapshot: None outside one, else the stores read in it.
_snapshot = threading.local()


@contextmanager
def read_snapshot() -> Iterator[None]:
    """Every read of any store in this thread, for the block, sees one state
    of that store: a read transaction begun at the store's first read (a
    store the block never reads costs nothing, and an unavailable one fails
    only a block that reads it), ended when the outermost block ends. Commits
    of other threads meanwhile are not seen; this thread's own are (``write``
    renews the snapshot after its commit, ``renew_snapshot`` on demand). A
    SQLite error raised in the block leaves it as the library's error
    (``StoreError``): it does not say which store it came from, so each store
    read is asked (on corruption each becomes suspect and checks itself at
    its next use)."""
    if getattr(_snapshot, "stores", None) is not None:  # nested: the outer block holds it
        yield
        return
    _snapshot.stores = []
    try:
        yield
    except sqlite3.Error as exc:
        errors = [store.failure(exc, writing=False) for store in _snapshot.stores]
        db_path = _snapshot.stores[0].db_path if _snapshot.stores else ""
        raise (next((error for error in errors if error is not None), None)
               or translated(exc, db_path, writing=False)) from exc
    finally:
        stores, _snapshot.stores = _snapshot.stores, None
        for store in stores:
            store._end_snapshot()


def _close_quietly(conn: Connection) -> None:
    try:
        conn.close()
    except sqlite3.Error:  # already unusable: nothing left to release
        pass
