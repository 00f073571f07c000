"""A store that is damaged, vanished or not this user's own: moving it
aside, building anew, carrying its written rows over, quarantine and the
user's word that imports them (``Recovery``, a part of ``Store``)."""

from __future__ import annotations

import logging
import os
import sqlite3
import stat
from pathlib import Path
from typing import Iterator

from ctxls.index import trust
from ctxls.index.errors import StoreError, StoreUnavailable
from ctxls.index.private import create_private_file
from ctxls.index.store.failures import detail, storage_reason, store_error
from ctxls.index.store.fts_changes import opened as fts_tables_opened
from ctxls.index.store.records import drop_damaged, find_damage
from ctxls.index.store.schema import (APPLICATION_ID, FTS_TABLE_BY_KIND, MEMORY_FTS_TABLE_BY_KIND,
                                      VECTOR_TABLES, _SQLITE_MAGIC, index_incomplete,
                                      new_paths_generation)
from ctxls.index.store.writes import now_ms

log = logging.getLogger(__name__)

# Written rows a corrupt store's replacement inherits (nothing else is
# irreplaceable: file rows are re-derived, vectors re-embedded).
CARRIED_TABLES = ("memory", "memory_files", "stash", "edits")
# The carried tables keyed by a memory (scope, id): one carried in never joins
# an id this store already holds.
_MEMORY_TABLES = ("memory", "memory_files")
# A store moved aside as not this user's own: <db>.quarantined-<ms>.
QUARANTINE_LABEL = "quarantined"
# A damaged store moved aside whose written rows are not carried yet:
# <db>.repairing-<ms>, renamed <db>.corrupt-<ms> once they are. A process
# killed in between leaves the first name, and the next open carries them.
REPAIRING_LABEL = "repairing"
CORRUPT_LABEL = "corrupt"


def _is_ours(header: bytes) -> bool:
    """The file header carries our application id."""
    return (header.startswith(_SQLITE_MAGIC) and len(header) >= 72
            and int.from_bytes(header[68:72], "big") == APPLICATION_ID)


def _aside_files(db_path: str, label: str) -> list[str]:
    """The stores moved aside from ``db_path`` as ``<name>.<label>-<ms>``,
    oldest first: regular files, with regular journals if any. Only a
    store's own rename makes these names, but the folder may have come with
    the repository: SQLite blocked forever opening a FIFO of such a name
    (every open, every status), and would read another file through a link."""
    folder, name = os.path.split(db_path)
    prefix = f"{name}.{label}-"
    try:
        names = sorted(os.listdir(folder or "."))
    except OSError:
        return []
    return [os.path.join(folder, entry) for entry in names
            if entry.startswith(prefix) and not entry.endswith(("-wal", "-shm"))
            and _regular_with_journals(os.path.join(folder, entry))]


def _regular_with_journals(path: str) -> bool:
    """``path`` is a regular file (not a link), and so are its journals
    where they exist."""
    for suffix in ("", "-wal", "-shm", "-journal"):
        try:
            mode = os.lstat(path + suffix).st_mode
        except FileNotFoundError:
            if not suffix:
                return False
            continue
        except OSError:
            return False
        if not stat.S_ISREG(mode):
            return False
    return True


def _salvage_connection(path: str, read_only: bool) -> sqlite3.Connection:
    """A connection to a damaged store file that reads what is left: with
    ``writable_schema`` SQLite skips the schema entries it cannot load (a
    truncated file's tables whose root pages are gone) instead of refusing
    every table. Nothing writes through it."""
    uri = Path(path).resolve().as_uri() + ("?mode=ro" if read_only else "")
    source = sqlite3.connect(uri, uri=True, isolation_level=None)
    source.execute("PRAGMA writable_schema = ON")
    return source


def _readable_rows(source: sqlite3.Connection, table: str, columns: list[str]) -> Iterator[tuple]:
    """``columns`` of every row of ``table`` that SQLite can still read, in
    rowid order: 256 rows at a time, one at a time after a failure, hopping
    over a damaged stretch with growing strides."""
    select = (f"SELECT rowid, {', '.join(columns)} FROM {table} "
              "WHERE rowid > ? ORDER BY rowid LIMIT ?")
    last, limit, stride = -(1 << 63), 256, 1
    while True:
        try:
            rows = source.execute(select, (last, limit)).fetchall()
        except sqlite3.Error:
            if limit > 1:
                limit = 1
                continue
            last, stride = last + stride, stride * 2
            if last >= (1 << 63) - 1 or stride > (1 << 48):
                return
            continue
        if not rows:
            return
        stride = 1
        for row in rows:
            yield tuple(row[1:])
        last = rows[-1][0]



class Recovery:
    """``Store``'s handling of damage and distrust."""

    def _replace_corrupt(self, cause: sqlite3.Error | str, meta: dict[str, str]) -> None:
        """Move our corrupt store aside, create a new one, carry the written
        rows that still read, when they are this user's own (else the file is
        quarantined like any unsealed store: its rows wait for `trust-memory`)."""
        if isinstance(cause, sqlite3.Error):
            cause = detail(cause)
        if not meta:  # the seal's rows may still read where the first look failed
            meta = dict(self._rows_of(self.db_path, "meta", ["key", "value"]))
        distrust = trust.problem(meta, self.db_path) if self._sealed else None
        if distrust is not None:
            self._quarantine(f"corrupt ({cause}), and {distrust}")
            return
        aside = self._move_aside(REPAIRING_LABEL, f"corrupt ({cause})")
        log.error("index store %s is corrupt (%s); moved to %s and rebuilding",
                  self.db_path, cause, aside)
        self._create_anew()
        self._finish_repairs({aside: str(cause)})

    def _finish_repairs(self, causes: dict[str, str] | None = None) -> None:
        """Carry the written rows of every store moved aside for repair into
        this one, then name it ``corrupt-<ms>``: carried. A repair cut short
        (a crash between the move and the carry) is finished by the next open.
        ``causes``: why each file this process moved aside was damaged."""
        for path in _aside_files(self.db_path, REPAIRING_LABEL):
            cause = (causes or {}).get(path, "a repair cut short before its written rows were carried")
            meta = dict(self._rows_of(path, "meta", ["key", "value"]))
            distrust = trust.problem(meta, self.db_path) if self._sealed else None
            if distrust is not None:  # not moved aside by this user's ctxls: it waits for trust-memory
                self.repair = {"at": now_ms(), "cause": f"{cause}, and {distrust}",
                               "moved_to": self._rename_aside(path, QUARANTINE_LABEL), "carried": {}}
                continue
            try:
                carried = self._carry_over(path)
            except StoreError as exc:  # a full disk: the file stays pending for the next open
                log.error("could not carry the written rows of %s into %s: %s", path, self.db_path, exc)
                continue
            done = self._rename_aside(path, CORRUPT_LABEL)
            self.repair = {"at": now_ms(), "cause": cause, "moved_to": done, "carried": carried}
            log.warning("carried into the new store from %s: %s", done, carried)

    def _rename_aside(self, path: str, label: str) -> str:
        """``path`` (a store moved aside, with its journals) as ``<db>.<label>-<ms>``."""
        renamed = f"{self.db_path}.{label}-{path.rsplit('-', 1)[1]}"
        try:
            for suffix in ("", "-wal", "-shm"):
                if os.path.exists(path + suffix):
                    os.replace(path + suffix, renamed + suffix)
        except OSError as exc:
            log.error("could not rename %s to %s: %s", path, renamed, exc.strerror or exc)
            return path
        return renamed

    def _quarantine(self, why: str) -> None:
        """Move a store whose written rows are not this user's own aside
        whole (its index and vectors were made elsewhere too) and start anew;
        `import_quarantined` carries its rows in when the user says so."""
        if self._refuse_untrusted:
            raise StoreUnavailable(self.db_path, "untrusted",
                                   f"its written memory is not read: {why} (the file was left as "
                                   "it is; `ctxls trust-memory` imports a repository's quarantined "
                                   "store)")
        aside = self._move_aside(QUARANTINE_LABEL, why)
        self.repair = {"at": now_ms(), "cause": why, "moved_to": aside, "carried": {}}
        log.warning("index store %s is not trusted: %s. Moved to %s; its written memory is "
                    "quarantined (not served) until `ctxls trust-memory` imports it",
                    self.db_path, why, aside)
        self._create_anew()

    def _damage(self, fts: bool = False) -> str | None:
        """What SQLite finds wrong with the open store (quick_check: every
        page and b-tree; every full-text table opens; with ``fts`` also the
        full-text tables' whole structure, which quick_check does not read),
        None when sound."""
        conn = self._connect()  # its own page cache: the file as it is on disk now
        try:
            found = [r[0] for r in conn.execute("PRAGMA quick_check(1)")]
            if found != ["ok"]:
                return found[0] if found else "quick_check gave no answer"
            for table in (*FTS_TABLE_BY_KIND.values(), *MEMORY_FTS_TABLE_BY_KIND.values()):
                # Opening reads only its structure record (cheap, so on every
                # open check too): one that is damaged fails every read of the
                # table, and a CLI call, one read per process, never got to the
                # check its failure asks for (``suspect``) before it exited.
                conn.execute(f"SELECT rowid FROM {table} LIMIT 0").fetchall()
                if fts:
                    conn.execute(f"INSERT INTO {table}({table}) VALUES ('integrity-check')")
        except sqlite3.Error as exc:
            if storage_reason(exc) == "corrupt":
                return str(exc)
            raise
        finally:
            conn.close()
        return None

    def _repair_records(self, cause: str, meta: dict[str, str]) -> bool:
        """Read every TEXT value (quick_check reads none) and repair what is
        damaged: rows derived from the repository are dropped in place (a pass
        derives them again; status says so), damage in written rows is the
        whole store's (moved aside, its readable rows carried). True when
        anything was repaired. Raw SQLite errors: the caller classifies them."""
        conn = self._connect()
        try:
            damage = find_damage(conn)
        finally:
            conn.close()
        if not damage:
            return False
        if damage.elsewhere:
            self._repair(f"{cause}; {damage.describe()}", meta)
            return True
        with self._write_lock, self._transaction() as conn:
            drop_damaged(conn, damage)
            if damage.files or damage.fts_rows:
                new_paths_generation(conn)
                index_incomplete(conn)
                self._files_touched = True
        fts_tables_opened(self._database_name(self._writer))  # no FTS cache follows these deletes
        for table in VECTOR_TABLES:
            self.removed_vector_ids[table].extend(damage.droppable.get(table, ()))
        self.repair = {"at": now_ms(), "cause": f"{cause}; {damage.describe()}", "moved_to": None,
                       "carried": {}}
        log.error("index store %s: %s; dropped those rows, which the next pass derives again",
                  self.db_path, damage.describe())
        return True

    def _repair(self, damage: str, meta: dict[str, str]) -> None:
        """Replace the open, damaged store (see _replace_corrupt)."""
        if self._writer is not None:
            self._writer.close()
            self._writer = None
        self._replace_corrupt(damage, meta)

    def _check_suspect(self) -> bool:
        """A query met corruption: check the store whole and repair it when
        damaged. True when it was replaced (its file rows are gone)."""
        with self._write_lock, self._folder_lock():
            cause, self._suspect = self._suspect, None
            if cause is None or self.error is not None:
                return False
            try:
                damage = self._damage(fts=True)
                meta = dict(self._rows_of(self.db_path, "meta", ["key", "value"]))
                if damage is None:
                    if self._repair_records(cause, meta):
                        return True
                    log.info("index store %s: %s, and a check finds it sound", self.db_path, cause)
                    return False
                self._repair(f"{cause}; {damage}" if damage != cause else cause, meta)
            except StoreUnavailable as exc:
                self._unavailable(exc)
                return False
            except sqlite3.Error as exc:  # could not check now (locked, I/O): the next corrupt error asks again
                log.warning("index store %s: %s; could not check it: %s", self.db_path, cause, exc)
                return False
            return True

    def suspect(self, cause: str) -> None:
        """A query met corruption: the next access checks the store and
        repairs it when it is damaged."""
        self._suspect = cause

    def failure(self, exc: sqlite3.Error, writing: bool) -> StoreError | None:
        """The protocol error for a storage failure met while using this store
        (None when ``exc`` is not one); corruption makes the store suspect."""
        error = store_error(exc, self.db_path, writing)
        if error is not None and storage_reason(exc) == "corrupt":
            self.suspect(detail(exc))
        return error

    def verify(self) -> None:
        """Check the whole store now and repair it when damaged (a forced
        pass starts here: `index --force` is the remedy that always works)."""
        self.suspect("a forced index pass checks the store")
        self._ready()

    def _move_aside(self, label: str, why: str) -> str:
        aside = f"{self.db_path}.{label}-{now_ms()}"
        try:
            for suffix in ("", "-wal", "-shm"):
                if os.path.exists(self.db_path + suffix):
                    os.replace(self.db_path + suffix, aside + suffix)
        except OSError as exc:
            raise StoreUnavailable(self.db_path, "io", f"{why}, and cannot be moved "
                                   f"aside: {exc.strerror or exc}") from exc
        self.moved_aside = aside
        return aside

    def _create_anew(self) -> None:
        """A new, sealed store where one was moved aside."""
        self.rebuilt = True
        conn = None
        try:
            create_private_file(Path(self.db_path))
            conn = self._connect()
            self._install(conn)  # sealed in the transaction that makes it (Migrations._migrate)
        except sqlite3.Error as exc:
            if conn is not None:
                conn.close()
            raise StoreUnavailable(self.db_path, storage_reason(exc) or "io", str(exc)) from exc
        except OSError as exc:
            raise StoreUnavailable(self.db_path, "io", exc.strerror or str(exc)) from exc

    def _seal(self) -> dict[str, str] | None:
        """The meta rows marking a store made now as this user's, for this
        place (index/trust.py); None without a store key."""
        return trust.new_seal(self.db_path)

    # -- quarantine ----------------------------------------------------------

    def quarantined(self) -> list[dict]:
        """The stores moved aside as untrusted that are still waiting, with how
        many written memory rows each holds (counted once per file version)."""
        if self._temp_dir is not None:
            return []
        return [{"path": path, "memory": self._quarantined_rows(path)}
                for path in _aside_files(self.db_path, QUARANTINE_LABEL)]

    def _quarantined_rows(self, path: str) -> int:
        try:
            st = os.stat(path)
        except OSError:
            return 0
        version = (path, st.st_size, st.st_mtime_ns)
        if version not in self._quarantine_counts:
            self._quarantine_counts[version] = sum(1 for _ in self._rows_of(path, "memory", ["key"]))
        return self._quarantine_counts[version]

    @staticmethod
    def _rows_of(path: str, table: str, columns: list[str]) -> Iterator[tuple]:
        """The readable rows of a damaged or quarantined store file (read-only)."""
        try:
            source = _salvage_connection(path, read_only=True)
        except sqlite3.Error:
            return
        try:
            yield from _readable_rows(source, table, columns)
        except sqlite3.Error:
            return
        finally:
            source.close()

    def import_quarantined(self) -> dict:
        """Carry the written rows of every quarantined store into this one (the
        user vouches for them), then remove those files; a (scope, id) this
        store already holds keeps this store's rows and upload, none of the
        file's."""
        stores = self.quarantined()
        carried: dict[str, int] = {table: 0 for table in CARRIED_TABLES}
        for entry in stores:
            for table, count in self._carry_over(entry["path"]).items():
                carried[table] += count
            for suffix in ("", "-wal", "-shm"):
                try:
                    os.remove(entry["path"] + suffix)
                except FileNotFoundError:
                    pass
            log.warning("imported the written rows of %s on the user's word", entry["path"])
        return {"stores": [entry["path"] for entry in stores], "imported": carried}

    def _carry_vanished(self) -> None:
        """The written rows (CARRIED_TABLES) of a store file deleted while
        open (`git clean -fdx` takes `.ctxls`, ignored by its own
        `.gitignore`), read through the writer still open on it, carried
        into the store made in its place, as a repair carries a damaged
        store's; status says so (``repaired``). Until 2026-12-07 they were lost."""
        vanished, self._vanished = self._vanished, None
        if vanished is None:
            return
        cause = "the store file was deleted while open (`git clean -x`, `rm -rf .ctxls`)"
        try:
            carried = self._carry_rows(vanished)
        except (StoreError, sqlite3.Error) as exc:
            log.error("could not carry the written rows of the deleted store %s into the new one: %s",
                      self.db_path, exc)
            self.repair = {"at": now_ms(), "cause": f"{cause}; its written rows could not be carried "
                           f"over ({exc}) and are lost", "moved_to": None, "carried": {}}
            return
        finally:
            vanished.close()
        self.repair = {"at": now_ms(), "cause": cause, "moved_to": None, "carried": carried}
        log.warning("index store %s was deleted while open; carried its written rows into the new "
                    "store: %s", self.db_path, carried)

    def _carry_over(self, aside: str) -> dict[str, int]:
        """Copy the rows of CARRIED_TABLES that can still be read from the
        file ``aside`` (corrupt, or quarantined and now vouched for) into this
        store; per table, how many."""
        try:
            source = _salvage_connection(aside, read_only=False)
        except sqlite3.Error:
            return {}
        try:
            return self._carry_rows(source)
        finally:
            source.close()

    def _carry_rows(self, source: sqlite3.Connection) -> dict[str, int]:
        """Copy the rows of CARRIED_TABLES that ``source`` can still read into
        this store; per table, how many."""
        carried: dict[str, int] = {}
        # One transaction for every table: carried one by one, a failure (a
        # full disk, a crash) between them left memory rows without their
        # uploads, and the retry skipped those uploads as "held".
        with self.write(durable=True) as conn:
            # A (scope, id) this store holds keeps its own row and upload whole:
            # the rows conflict per part only, so the old document's other parts
            # (and an upload the own row lacks) would join it.
            held = {tuple(r) for table in _MEMORY_TABLES
                    for r in conn.execute(f"SELECT DISTINCT scope, key FROM {table}")}
            for table in CARRIED_TABLES:
                carried[table] = self._carry_table(conn, source, table, held)
        return {table: count for table, count in carried.items() if count is not None}

    def _carry_table(self, conn: sqlite3.Connection, source: sqlite3.Connection, table: str,
                     held: set[tuple]) -> int | None:
        """Copy ``table``'s rows that ``source`` can still read (none held)
        within the caller's transaction; how many, None when it has no such table."""
        try:
            old_columns = {r[1] for r in source.execute(f"PRAGMA table_info({table})")}
        except sqlite3.Error:
            return None
        # A rowid key is renumbered here: the rows may join a store that has its own.
        columns = [r[1] for r in conn.execute(f"PRAGMA table_info({table})")
                   if r[1] in old_columns and not (r[5] == 1 and r[2].upper() == "INTEGER")]
        if not columns:
            return None
        insert = (f"INSERT OR IGNORE INTO {table}({', '.join(columns)}) "
                  f"VALUES ({', '.join('?' * len(columns))})")
        count = 0
        for row in _readable_rows(source, table, columns):
            values = dict(zip(columns, row))
            if table in _MEMORY_TABLES and (values.get("scope"), values.get("key")) in held:
                continue
            try:
                cursor = conn.execute(insert, row)
            except sqlite3.IntegrityError:  # a damaged row: leave it behind
                continue
            if cursor.rowcount != 1:
                continue
            count += 1
            if table == "memory":
                self.put_memory_text(conn, cursor.lastrowid, values["kind"], values["key"],
                                     values.get("symbol"), values["text"])
        return count

