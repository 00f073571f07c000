"""FTS5's bm25() from postings kept in memory: each query term's rows and
per-column counts, and every row's size, so that a recall's BM25 pool costs
array arithmetic instead of FTS5 looking up the size and position lists of
every row that holds any query term.

The scores are bm25()'s bit for bit: the same formula, operations in the
same order (fts5_aux.c: a row's score adds each phrase's term in query
order), the same row count, token total and document counts (the table's
own averages record and postings); a pool is cut as ``ORDER BY score DESC
LIMIT n`` cuts FTS5's scan (equal scores: the lower rowid first). So the
answers are the ones FTS5 gives (tests/test_postings.py compares the two
after edits too).

Kept in step with the index: a table's postings hold for one
``fts_generation``; a reader seeing a later one brings them forward by the
rows the commits in between wrote or dropped (store/fts_changes.py), read
back and tokenized here. Those rows are "dirty": left out of the postings
loaded before and kept in a small overlay, until there are so many that the
table starts again. A reader of an older snapshot, or of weights this does
not reproduce exactly (not whole numbers), gets None and asks FTS5.

Bounded: at most MAX_POSTINGS (row, term) entries and MAX_TERMS terms per
table, least recently used terms dropped first. A term is loaded on first
use from an fts5vocab ``instance`` table; the common ones (WARM_MIN_ROWS)
by ``warm``, which a daemon runs after its first pass: before it, a query
holding a common term not loaded asks FTS5 (cheaper than loading it once).
"""

from __future__ import annotations

import collections
import math
import re
import threading
from typing import Callable, Sequence

import numpy as np

from ctxls.index.store import Connection, connection_cache, fts_generation
from ctxls.index.store import fts_changes

# fts5_aux.c's constants.
FTS5_BM25_K1 = 1.2
FTS5_BM25_B = 0.75
# A term in half the rows or more: its idf is this floor, not log's zero or less.
FTS5_IDF_FLOOR = 1e-6
# A row's BM25 below this is made of floored idfs only (a term adds at most
# its idf × (k1 + 1); a query has far fewer than 300 terms): none of the
# query's distinguishing words is in it.
NO_QUERY_WORDS_BM25 = FTS5_IDF_FLOOR * (FTS5_BM25_K1 + 1) * 300
# (row, term) entries kept per table, all terms together: ~20 MB.
MAX_POSTINGS = 1_500_000
# Terms kept per table (each costs ~300 bytes beside its entries).
MAX_TERMS = 50_000
# Tables kept (each workspace's code, doc and config tables).
MAX_TABLES = 12
# Rows changed since the postings were loaded, past which they are loaded anew.
MAX_DIRTY_ROWS = 2000
# A term at least this many rows hold is loaded by ``warm`` (a daemon's,
# after its first pass); until a table was warmed, a query holding such a
# term not loaded yet asks FTS5, which ranks it for less than loading it
# costs (a one-off CLI recall never pays for loading common words).
WARM_MIN_ROWS = 64
# Generations passed that are remembered (a reader of one asks FTS5).
MAX_OLDER = 1024
# unicode61 with '_' as a token character, on ASCII text (index/tokenize.py's
# output): runs of letters, digits and '_', lower-cased.
_ASCII_TOKEN = re.compile(r"[A-Za-z0-9_]+")


def _varints(blob: bytes) -> list[int]:
    """SQLite's varints (FTS5's docsize and averages records)."""
    out: list[int] = []
    value, i, n = 0, 0, len(blob)
    while i < n:
        value, start = 0, i
        while True:
            byte = blob[i]
            i += 1
            if i - start == 9:  # the ninth byte carries eight bits
                value = (value << 8) | byte
                break
            value = (value << 7) | (byte & 0x7F)
            if byte < 0x80:
                break
        out.append(value)
    return out


class _Overlay:
    """The current rows of the dirty rowids: per term, row -> column counts."""

    def __init__(self) -> None:
        self.by_term: dict[str, dict[int, tuple[int, ...]]] = {}
        self.terms_of_row: dict[int, list[str]] = {}

    def drop(self, row: int) -> None:
        for term in self.terms_of_row.pop(row, ()):
            rows = self.by_term[term]
            del rows[row]
            if not rows:
                del self.by_term[term]

    def add(self, row: int, counts: dict[str, list[int]]) -> None:
        self.terms_of_row[row] = list(counts)
        for term, per_column in counts.items():
            self.by_term.setdefault(term, {})[row] = tuple(per_column)


class TablePostings:
    """One FTS table's postings, as of ``generation`` (see the module's docstring)."""

    def __init__(self, conn: Connection, table: str, epoch: int) -> None:
        self.table = table
        self.epoch = epoch
        self.lock = threading.Lock()
        self.columns = [row[1] for row in conn.execute(f"PRAGMA table_info({table})")]
        self.warmed = False  # by ``warm``: from then on any term is loaded on first use
        self._start(conn)

    def _start(self, conn: Connection) -> None:
        self.generation = fts_generation(conn, self.table)
        self.older: set = set()  # generations passed: their readers ask FTS5
        sizes = conn.execute(f"SELECT id, sz FROM {self.table}_docsize").fetchall()
        top = max((row[0] for row in sizes), default=0)
        self.sizes = np.zeros(top + 1, dtype=np.int64)
        for rowid, blob in sizes:
            self.sizes[rowid] = sum(_varints(blob))
        self.loaded: collections.OrderedDict[str, tuple[np.ndarray, np.ndarray]] = collections.OrderedDict()
        self.loaded_entries = 0
        self.dirty: set[int] = set()
        self.dirty_sorted = np.zeros(0, dtype=np.int64)
        self.overlay = _Overlay()
        self.current: dict[str, tuple[np.ndarray, np.ndarray]] = {}  # loaded - dirty + overlay
        self.last: tuple[tuple, tuple[np.ndarray, np.ndarray]] | None = None  # see scores

    # -- keeping in step --------------------------------------------------------

    def at(self, conn: Connection, database: str) -> bool:
        """Bring the postings to the reader's generation; False when that is
        an older one (the reader asks FTS5). Under ``lock``."""
        seen = fts_generation(conn, self.table)
        if seen == self.generation:
            return True
        if seen in self.older:
            return False
        if len(self.older) > MAX_OLDER:
            self.older.clear()
        changed = fts_changes.rows_changed(database, self.table, self.generation, seen)
        if changed is None and fts_changes.rows_changed(database, self.table, seen,
                                                        self.generation) is not None:
            self.older.add(seen)
            return False
        if changed is None or len(self.dirty | changed) > MAX_DIRTY_ROWS or not self._advance(conn, changed):
            self._start(conn)
            return True
        self.older.add(self.generation)
        self.generation = seen
        return True

    def _advance(self, conn: Connection, changed: set[int]) -> bool:
        """Read ``changed`` rows as the reader sees them into the overlay;
        False when one is not plain ASCII (unicode61's folding is not
        reproduced here) or its size disagrees with its tokens."""
        ids = sorted(changed)
        marks = ",".join("?" * len(ids))
        texts = {row[0]: row[1:] for row in conn.execute(
            f"SELECT rowid, * FROM {self.table} WHERE rowid IN ({marks})", ids)}
        sizes = {row[0]: _varints(row[1]) for row in conn.execute(
            f"SELECT id, sz FROM {self.table}_docsize WHERE id IN ({marks})", ids)}
        rows: dict[int, dict[str, list[int]]] = {}
        for rowid, columns in texts.items():
            counts: dict[str, list[int]] = {}
            for column, text in enumerate(columns):
                text = text or ""
                if not text.isascii():
                    return False
                tokens = _ASCII_TOKEN.findall(text)
                if len(tokens) != sizes.get(rowid, [None] * len(columns))[column]:
                    return False
                for token in tokens:
                    counts.setdefault(token.lower(), [0] * len(columns))[column] += 1
            rows[rowid] = counts
        top = max(ids)
        if top >= len(self.sizes):
            self.sizes = np.concatenate([self.sizes, np.zeros(top + 1 - len(self.sizes), dtype=np.int64)])
        for rowid in ids:
            self.overlay.drop(rowid)
            self.sizes[rowid] = sum(sizes[rowid]) if rowid in rows else 0
            if rowid in rows:
                self.overlay.add(rowid, rows[rowid])
        self.dirty |= changed
        self.dirty_sorted = np.array(sorted(self.dirty), dtype=np.int64)
        self.current.clear()
        return True

    # -- postings ---------------------------------------------------------------

    def postings(self, conn: Connection, term: str) -> tuple[np.ndarray, np.ndarray]:
        """(rowids ascending, per-column counts) of the rows holding ``term``
        at the current generation. Under ``lock``."""
        found = self.current.get(term)
        if found is not None:
            return found
        loaded = self.loaded.get(term)
        if loaded is None:
            loaded = self._load(conn, term)
        else:
            self.loaded.move_to_end(term)
        rows, counts = loaded
        if len(self.dirty_sorted):
            keep = ~np.isin(rows, self.dirty_sorted, assume_unique=True)
            rows, counts = rows[keep], counts[keep]
        extra = self.overlay.by_term.get(term)
        if extra:
            rows = np.concatenate([rows, np.fromiter(extra, dtype=np.int64, count=len(extra))])
            counts = np.concatenate([counts, np.array(list(extra.values()), dtype=np.int64)])
            order = np.argsort(rows, kind="stable")
            rows, counts = rows[order], counts[order]
        self.current[term] = (rows, counts)
        return rows, counts

    def cheap_to_load(self, conn: Connection, terms: Sequence[str]) -> bool:
        """Whether the terms not loaded yet may be loaded now: the table was
        warmed, or fewer than WARM_MIN_ROWS rows hold each."""
        missing = [t for t in terms if t not in self.loaded and t not in self.current]
        if self.warmed or not missing:
            return True
        vocab = vocab_table(conn, self.table, "row")
        return conn.execute(f"SELECT count(*) FROM temp.{vocab} WHERE doc >= ? AND term IN "
                            f"({','.join('?' * len(missing))})",
                            [WARM_MIN_ROWS, *missing]).fetchone()[0] == 0

    def _load(self, conn: Connection, term: str) -> tuple[np.ndarray, np.ndarray]:
        """The term's rows and column counts from the FTS index (an fts5vocab
        ``instance`` table of this connection), as this reader sees them:
        the current generation, dirty rows included (left out on use)."""
        vocab = vocab_table(conn, self.table, "instance")
        column_code = " ".join(f"WHEN '{name}' THEN {k}" for k, name in enumerate(self.columns))
        # One string of "row * 4 + column" numbers: SQLite builds it, numpy
        # parses it, three times faster than a Python tuple per instance.
        listed = conn.execute(f"SELECT group_concat(doc * 4 + CASE col {column_code} END) "
                              f"FROM temp.{vocab} WHERE term = ?", (term,)).fetchone()[0]
        packed = np.fromstring(listed, dtype=np.int64, sep=",") if listed else np.zeros(0, np.int64)
        rows, inverse = np.unique(packed >> 2, return_inverse=True)
        counts = np.zeros((len(rows), len(self.columns)), dtype=np.int64)
        np.add.at(counts, (inverse, packed & 3), 1)
        # Kept small: 4 + 6 bytes an entry unless a count needs more.
        entry = (rows.astype(np.int32) if len(rows) and rows[-1] < 2 ** 31 else rows,
                 counts.astype(np.uint16) if len(rows) and counts.max() < 2 ** 16 else counts)
        self.loaded[term] = entry
        self.loaded_entries += len(rows)
        while (self.loaded_entries > MAX_POSTINGS or len(self.loaded) > MAX_TERMS) and len(self.loaded) > 1:
            _, (old_rows, _) = self.loaded.popitem(last=False)
            self.loaded_entries -= len(old_rows)
            self.current.clear()
        return entry

    # -- scoring ----------------------------------------------------------------

    def scores(self, conn: Connection, terms: Sequence[str],
               weights: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
        """(rowids holding any term ascending, their bm25() negated). Under
        ``lock``. The last query's are kept: recall asks for its pool, then
        for the scores of the ANN's nominees, with the same terms."""
        key = (self.generation, tuple(terms), tuple(weights))
        if self.last is not None and self.last[0] == key:
            return self.last[1]
        averages = conn.execute(f"SELECT block FROM {self.table}_data WHERE id = 1").fetchone()
        totals = _varints(averages[0]) if averages is not None and averages[0] else []
        if not totals or not totals[0]:  # an empty table (its averages record is too)
            return np.zeros(0, dtype=np.int64), np.zeros(0)
        total_rows, *column_totals = totals
        avgdl = float(sum(column_totals)) / float(total_rows)
        weight = np.array(weights, dtype=np.float64)
        found = [self.postings(conn, term) for term in terms]
        # Dense over rowids: each row's terms are added in query order, as
        # fts5_aux.c adds its phrases (a term a row lacks adds 0.0 there).
        score = np.zeros(len(self.sizes))
        holds = np.zeros(len(self.sizes), dtype=bool)
        k1, b = FTS5_BM25_K1, FTS5_BM25_B
        for rows, counts in found:
            if not len(rows):
                continue
            hits = len(rows)
            idf = math.log((total_rows - hits + 0.5) / (hits + 0.5))
            if idf <= 0.0:
                idf = FTS5_IDF_FLOOR
            freq = counts @ weight  # whole numbers (reproducible): exact in any order
            size = self.sizes[rows].astype(np.float64)
            score[rows] += idf * ((freq * (k1 + 1.0)) / (freq + k1 * (1 - b + b * size / avgdl)))
            holds[rows] = True
        matched = np.flatnonzero(holds)
        result = (matched, score[matched])
        self.last = (key, result)
        return result


def reproducible(weights: Sequence[float]) -> bool:
    """Whether bm25() with these column weights is reproduced exactly: whole,
    non-negative numbers (sums of them are exact in any order)."""
    return all(w >= 0 and float(w).is_integer() and w < 2 ** 20 for w in weights)


def vocab_table(conn: Connection, table: str, kind: str) -> str:
    """The name of an fts5vocab table of ``kind`` ("row", "instance") over
    ``table``, a temp table of this connection made on first use."""
    vocab = f"{table}_vocab" if kind == "row" else f"{table}_{kind}"
    if conn.execute("SELECT 1 FROM temp.sqlite_master WHERE name = ?", (vocab,)).fetchone() is None:
        # The reader is query-only; a temp table writes nothing to the store.
        only = conn.execute("PRAGMA query_only").fetchone()[0]
        conn.execute("PRAGMA query_only = OFF")
        try:
            conn.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.{vocab} "
                         f"USING fts5vocab(main, {table}, {kind})")
        finally:
            conn.execute(f"PRAGMA query_only = {'ON' if only else 'OFF'}")
    return vocab


_TABLES: dict[tuple[str, str], TablePostings] = {}
_TABLES_LOCK = threading.Lock()


def _database(conn: Connection) -> str:
    return connection_cache(conn, "database file", lambda c: 0,
                            lambda c: c.execute("PRAGMA database_list").fetchone()[2])


def _table_postings(conn: Connection, database: str, table: str) -> TablePostings:
    """The table's postings of this epoch (a new epoch keeps only whether it
    was warmed); the least recently used tables past MAX_TABLES are dropped."""
    epoch = fts_changes.epoch(database)
    with _TABLES_LOCK:
        postings = _TABLES.pop((database, table), None)
        if postings is None or postings.epoch != epoch:
            warmed = postings is not None and postings.warmed
            postings = TablePostings(conn, table, epoch)
            postings.warmed = warmed
        _TABLES[(database, table)] = postings
        while len(_TABLES) > MAX_TABLES:
            del _TABLES[next(iter(_TABLES))]
        return postings


class Bm25:
    """One query's bm25() scores over a table (rowids ascending)."""

    def __init__(self, rows: np.ndarray, scores: np.ndarray) -> None:
        self.rows, self.scores = rows, scores

    def top(self, limit: int) -> dict[int, float]:
        """The best ``limit`` rows, best first, as ``ORDER BY score DESC
        LIMIT`` over a scan in rowid order keeps them (equal: lower rowid first)."""
        if limit <= 0 or not len(self.rows):
            return {}
        if len(self.rows) > limit:
            kth = np.partition(self.scores, len(self.scores) - limit)[len(self.scores) - limit]
            pick = np.flatnonzero(self.scores >= kth)
        else:
            pick = np.arange(len(self.rows))
        order = pick[np.lexsort((self.rows[pick], -self.scores[pick]))][:limit]
        return dict(zip(self.rows[order].tolist(), self.scores[order].tolist()))

    def all(self) -> dict[int, float]:
        return dict(zip(self.rows.tolist(), self.scores.tolist()))

    def of(self, ids: Sequence[int]) -> dict[int, float]:
        """Those of ``ids`` holding a term, in rowid order."""
        wanted = np.unique(np.asarray(list(ids), dtype=np.int64))
        at = np.searchsorted(self.rows, wanted)
        inside = at < len(self.rows)
        hit = np.zeros(len(wanted), dtype=bool)
        hit[inside] = self.rows[at[inside]] == wanted[inside]
        return dict(zip(wanted[hit].tolist(), self.scores[at[hit]].tolist()))


def bm25(conn: Connection, table: str, terms: Sequence[str], weights: Sequence[float]) -> Bm25 | None:
    """bm25() of the rows of ``table`` holding any of ``terms`` (each one
    unicode61 token: index/tokenize.py's), as this reader sees the table;
    None when FTS5 must answer (an older snapshot, weights not reproduced)."""
    if not terms or not reproducible(weights) or not all(_ASCII_TOKEN.fullmatch(t) and t == t.lower() for t in terms):
        return None
    database = _database(conn)
    postings = _table_postings(conn, database, table)
    # One snapshot for the generation and what is read at it (a reader
    # outside read_snapshot reads each statement's own).
    own = not conn.in_transaction
    with postings.lock:
        if own:
            conn.execute("BEGIN DEFERRED")
        try:
            if not postings.at(conn, database) or not postings.cheap_to_load(conn, terms):
                return None
            rows, scores = postings.scores(conn, terms, weights)
        finally:
            if own:
                conn.execute("COMMIT")
    return Bm25(rows, scores)


def warm(conn: Connection, table: str, min_rows: int, pause: Callable[[], bool] = lambda: False) -> int:
    """Load the postings of every term at least ``min_rows`` rows of
    ``table`` hold (the ones costly to load during a query), commonest
    first, one term per hold of the table's lock and per snapshot; returns
    how many were loaded. ``pause()`` is called before each term (it may
    wait for queries to pass; True stops)."""
    database = _database(conn)
    postings = _table_postings(conn, database, table)
    vocab = vocab_table(conn, table, "row")
    terms = [row[0] for row in conn.execute(
        f"SELECT term FROM temp.{vocab} WHERE doc >= ? ORDER BY doc DESC", (min_rows,))]
    loaded = 0
    postings.warmed = True
    for term in terms:
        if pause():
            break
        with postings.lock:
            own = not conn.in_transaction
            if own:
                conn.execute("BEGIN DEFERRED")
            try:
                if postings.loaded_entries >= MAX_POSTINGS or not postings.at(conn, database):
                    break
                if term not in postings.loaded:
                    postings.postings(conn, term)
                    loaded += 1
            finally:
                if own:
                    conn.execute("COMMIT")
    return loaded


def cached_entries() -> int:
    """(row, term) entries held, all tables together (bench/perf.py reports it)."""
    with _TABLES_LOCK:
        return sum(p.loaded_entries for p in _TABLES.values())
