"""The semantic tier: a background embedding queue and the usearch ANN index.

One ``SemanticIndex`` serves one model's vectors, in the table and ANN file of
its ``VectorTier``: ``PRIMARY_TIER`` (the configured model, chunks and written
memory) and ``FAST_TIER`` (the static model, chunks only, beside a
transformer: it is complete seconds after indexing and serves hybrid recall
until the primary's backlog is nearly empty; the engine chooses, and never
ranks with both). The rest of this text holds for each.

SQLite is the truth: ``vectors`` maps an embedding-text hash to its vector
(float16). ``vectors.usearch`` beside the store (``<db>.vectors.usearch``
for a store not named ``index.db``: ``vector_file_for``) is a cache of that
table for fast nearest-neighbour search, saved atomically (temp file +
rename) and, on start, reconciled with the table (missing keys added, extra
keys removed) or rebuilt when it is missing, unreadable, or written for
another store or model (ann_file's binding). So a crash at any point leaves at
worst a stale ANN file, which the next start repairs, and never a vector that
SQLite does not know.

The worker embeds chunks and written-memory rows without a vector: first the
chunks of paths marked urgent (open buffers, just-edited files; newest rows
first, so the chunk just edited comes before the rest of its file), then
memory rows (those just written first: a writer expects to recall them by
meaning soon, and there are few), then the rest of the chunks in chunk-id
order, a window at a time, shortest text first.
Requests never wait for it; rows without a vector still rank by BM25.
"""

from __future__ import annotations

import collections
import logging
import os
import threading
import time
import uuid
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from ctxls.index import ann_file
from ctxls.index.embed_text import EMBED_TEXT_VERSION, embedding_text, memory_embedding_text
from ctxls.index.cancel import check_cancelled
from ctxls.index.embeddings import Embedder, EmbedderUnavailable, builtin_model_named, load_embedder
from ctxls.index.errors import StoreError, WriteFailed
from ctxls.index.priority import FAST_TIER_NICENESS, TRANSFORMER_NICENESS, set_thread_niceness
from ctxls.index.private import restrict
from ctxls.index.store import Store, read_snapshot

log = logging.getLogger(__name__)



@dataclass(frozen=True)
class VectorTier:
    table: str  # one of store.VECTOR_TABLES
    file_name: str  # its ANN cache, beside the store
    model_key: str  # the meta key stamping which model its vectors come from
    memory: bool  # written memory rows are embedded too
    niceness: int  # its worker thread's (index/priority.py)


PRIMARY_TIER = VectorTier("vectors", "vectors.usearch", "vector_model", memory=True,
                          niceness=TRANSFORMER_NICENESS)
# Memory stays on the primary: there are few rows, embedded first by its worker.
FAST_TIER = VectorTier("fast_vectors", "fast_vectors.usearch", "fast_vector_model", memory=False,
                       niceness=FAST_TIER_NICENESS)
VECTOR_TIERS = (PRIMARY_TIER, FAST_TIER)
# The backlog is read this many rows (at least four of the model's batches) at
# a time and embedded shortest first, a batch (``Embedder.batch_size``) at a
# time: a batch is padded to its longest text, so similar lengths together
# embed ~1.6x faster than chunk-id order (docs/decisions.md, "Embedding backlog").
BACKLOG_WINDOW = 64
# Save the ANN file at most this often while the backlog drains (and when it empties).
SAVE_INTERVAL_S = 30.0
# After the store refuses a batch's vectors (a full disk), the worker tries
# to store that batch again after this long (never embedding it again).
REFUSED_WAIT_S = 2.0
PENDING_CACHE_S = 1.0
QUERY_CACHE_SIZE = 256
# Vectors a request embedded ahead of the backlog (similarities_embedding_missing)
# that the worker has not stored yet, at most: ~3 MiB of a 384-wide model's.
MAX_EMBEDDED_AHEAD = 2048
QUERY_POOL_THREADS = 4
# A temporary ANN file older than this is a killed writer's (a write takes
# seconds even for millions of vectors).
STRAY_WRITE_S = 600


def unfingerprinted(stamp: str) -> str:
    """``stamp`` as it was written before stamps carried the model files'
    fingerprint (name/dim/text version). Vectors under such a stamp were
    trusted by name then; they are kept once, under the full stamp, and from
    then on a file replaced under the same name drops them."""
    return stamp.rsplit("/", 1)[0]


class SemanticIndex:
    def __init__(self, store: Store, vector_path: Path | None,
                 load_embedder: Callable[[], Embedder], warn: Callable[[str], None],
                 tier: VectorTier = PRIMARY_TIER, yield_to: SemanticIndex | None = None):
        """``yield_to``: another tier whose worker goes first; this one's waits
        while that one has work (the fast tier drains in seconds)."""
        self.store = store
        self.vector_path = vector_path
        self.tier = tier
        self.table = tier.table
        self._yield_to = yield_to
        self._load_embedder = load_embedder
        self._warn = warn
        self.embedder: Embedder | None = None
        self.failed: str | None = None
        # The store refused the worker's last write or the model's check (a
        # full disk …): it tries again every REFUSED_WAIT_S; status says so.
        self.paused: StoreError | None = None
        self._loaded: Embedder | None = None  # the model, loaded before the store took its stamp
        # Why the ANN file was rebuilt from SQLite at load, for status.
        self.rebuilt_reason: str | None = None
        self._ann = None
        # ``_replacements`` when ``_ann`` was loaded: it serves only while equal
        # (``_current_ann``; store_replaced takes no lock, see there).
        self._ann_for = 0
        self._binding = ""  # ann_file's binding of the loaded index (_open_ann)
        # The highest vector id the ANN index was brought up to: ids are never
        # reused, so a higher one in SQLite is a vector another process wrote
        # (a `--no-daemon` CLI embedding beside the daemon).
        self._known_max_id = 0
        self._ann_lock = threading.Lock()
        self._load_lock = threading.Lock()
        self._urgent: collections.OrderedDict[str, bool] = collections.OrderedDict()
        self._urgent_memory: set[int] = set()  # memory row ids just written
        self._urgent_lock = threading.Lock()
        self._wake = threading.Event()
        self._drained = threading.Event()  # the worker found nothing left to embed
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._cursor = 0
        self._memory_cursor = 0
        self._window: list[tuple[str, str]] = []  # (embed hash, text), shortest first
        # Set by other threads (``notify``, ``store_replaced``, a failed
        # step): the next batch scans the backlog from the start. Applied by
        # the thread embedding (``_next_batch``), so a step under way cannot
        # set its cursor past what the rescan was for.
        self._rescan = threading.Event()
        # Bumped when the store was created anew: the ANN index loaded before
        # holds the old store's ids, and so may vectors a step stored across it.
        self._replacements = 0
        self._dirty = False
        self._last_save = time.monotonic()
        self._pending_cache: tuple[float, int] = (0.0, 0)
        self._pending_generation = 0  # bumped when rows may have changed
        self._edited_since_count: set[str] = set()  # paths edited since _pending_cache's count
        self._query_cache: collections.OrderedDict[str, np.ndarray] = collections.OrderedDict()
        self._query_cache_lock = threading.Lock()
        # Queries being embedded on the query pool: a second ask of the same
        # text waits for that run instead of starting another.
        self._query_inflight: dict[str, Future] = {}
        self.embedded_total = 0
        # Embed hash -> vector a request computed before the backlog reached
        # it: the worker stores these first instead of embedding them again.
        self._embedded_ahead: collections.OrderedDict[str, np.ndarray] = collections.OrderedDict()
        self._ahead_lock = threading.Lock()
        # Embed hashes stored from requests since the backlog window was read
        # (the worker's own: it skips them in that window).
        self._stored_ahead: set[str] = set()
        # A batch embedded whose vectors the store refused (a full disk): the
        # next step stores it instead of embedding anything.
        self._unstored: tuple[list[str], object] | None = None
        # Embedding competes for the same two cores as indexing and typing:
        # it waits while a pass runs and for a moment after each edit or query.
        self._allowed = threading.Event()
        self._allowed.set()
        self._quiet_until = 0.0

    # -- lifecycle -----------------------------------------------------------

    @property
    def ready(self) -> bool:
        return self.embedder is not None and self._current_ann() is not None

    def _current_ann(self):
        """The ANN index, or None when not loaded or loaded from a store
        created anew since."""
        return self._ann if self._ann_for == self._replacements else None

    def ensure_loaded(self) -> bool:
        """Load the model and the ANN index once; warn once on failure."""
        if self.ready:
            return True
        if self.failed is not None:
            return False
        with self._load_lock:
            if self.ready or self.failed is not None:
                return self.ready
            replacements = self._replacements
            try:
                # A snapshot makes a SQLite error a StoreError (the worker's
                # thread, in no request's snapshot, ended on the library's own).
                with read_snapshot():
                    if self._loaded is None:
                        # Once loaded, the model stays across a store created anew.
                        self._loaded = self.embedder or self._load_embedder()
                    embedder = self._checked_model(self._loaded)
                    ann = self._open_ann(embedder.dim, self._model_stamp(embedder))
            except EmbedderUnavailable as exc:
                self.failed = str(exc)
                self._loaded = None
                fast = self._yield_to
                fallback = ("recall ranks with the fast tier's vectors instead"
                            if fast is not None and fast.failed is None else "recall uses BM25 only")
                self._warn(f"semantic search is off: {exc}; {fallback}")
                return False
            except StoreError as exc:  # a full disk, a store unreadable now: tried again later
                self.paused = exc
                return False
            with self._ann_lock:
                self._ann, self._ann_for = ann, replacements
                self.embedder, self._loaded, self.paused = embedder, None, None
        return self.ready  # False when the store was created anew meanwhile: loaded again next time

    def store_replaced(self) -> None:
        """The store was created anew: the ANN index and its file hold keys of
        vectors that no longer exist. Both go; the next step loads them again
        from the new store (``ensure_loaded``; the model stays loaded), and
        scans its backlog from the start (the cursors are the old store's ids)."""
        # No lock: it runs in whichever thread's store access noticed the
        # new store, which may hold this index's locks (a step's write under
        # ensure_loaded, a query's read under _ann_lock): it deadlocked there.
        self._replacements += 1
        if self.vector_path is not None:
            self.vector_path.unlink(missing_ok=True)
        self.notify()

    @property
    def running(self) -> bool:
        """The background worker is alive (it will embed the backlog)."""
        return self._thread is not None and self._thread.is_alive()

    @property
    def busy(self) -> bool:
        """The worker runs and has not yet found its backlog empty."""
        return self.running and not self._drained.is_set()

    def start(self) -> None:
        """Start the background embedding worker (loads the model lazily).
        Its engine embeds with the model it was configured with: it may
        replace a store's vectors of another model (_checked_model)."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="ctxls-embed", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
        if self.ready and (self._thread is None or not self._thread.is_alive()):
            try:
                self._store_embedded_ahead()  # a CLI's requests' vectors outlive the process
            except Exception:  # a store gone or failing: they are embedded again later
                log.warning("vectors embedded for requests not stored at close", exc_info=True)
        if self.ready and self._dirty:
            self.save()

    def mark_urgent(self, path: str) -> None:
        """Embed this path's new chunks before the rest of the backlog."""
        with self._urgent_lock:
            self._urgent[path] = True  # just marked: its newest chunk goes alone, first
            self._urgent.move_to_end(path, last=False)
            # Counted again on top of the last count (pending()): status and
            # recall must not report a stale "nothing pending".
            self._edited_since_count.add(path)
        self._drained.clear()
        self._wake.set()

    def mark_memory_urgent(self, row_ids: list[int]) -> None:
        """Embed these memory rows next (an upsert keeps its row id, so the
        backlog cursor may already be past it)."""
        if not self.tier.memory:
            return
        with self._urgent_lock:
            self._urgent_memory.update(row_ids)
        self._forget_pending_count()  # status must not report a stale "nothing pending"
        self._drained.clear()
        self._wake.set()

    def pause(self) -> None:
        """Hold the worker (an indexing pass is running)."""
        self._allowed.clear()

    def resume(self) -> None:
        self._allowed.set()

    def defer(self, seconds: float) -> None:
        """Keep the worker idle for a moment: someone is typing or asking."""
        self._quiet_until = max(self._quiet_until, time.monotonic() + seconds)

    def notify(self) -> None:
        """New chunks may be waiting (after a pass): rescan from the start."""
        self._rescan.set()  # the window may hold chunks the pass replaced
        self._forget_pending_count()  # counted before the pass wrote its chunks
        self._drained.clear()
        self._wake.set()

    # -- model identity and the ANN file ---------------------------------------

    @staticmethod
    def _model_stamp(embedder: Embedder) -> str:
        return f"{embedder.name}/{embedder.dim}/text-{EMBED_TEXT_VERSION}/{embedder.fingerprint}"

    def model_stamp(self) -> str | None:
        """Which model (and embedding text) this index's vectors come from; None until loaded."""
        return self._model_stamp(self.embedder) if self.embedder is not None else None

    def _checked_model(self, embedder: Embedder) -> Embedder:
        """The model whose vectors this tier's table holds from now on.
        ``embedder``'s, dropping another model's vectors (useless to it), where
        this engine chose its model: it runs the embedding worker (a daemon
        embeds with the model it was configured with) or embedModel named it.
        An engine merely on the default model (a CLI command without a daemon,
        ``index --embed``) never drops another model's vectors (costly, and
        written memory's among them): it uses that model where it is built
        in, else raises EmbedderUnavailable (ranked by keywords; nothing lost)."""
        stamp = self._model_stamp(embedder)
        recorded = self.store.meta().get(self.tier.model_key)
        if recorded == stamp:
            return embedder
        if recorded == unfingerprinted(stamp):
            with self.store.write() as conn:
                conn.execute("UPDATE meta SET value = ? WHERE key = ?", (stamp, self.tier.model_key))
            return embedder
        # An embedder not from load_embedder (a benchmark's own) counts as chosen.
        chose_model = self._thread is not None or getattr(embedder, "chosen", True)
        if recorded is not None and not chose_model and self.has_vectors():
            return self._recorded_model(recorded)
        self._switch_model(stamp)
        return embedder

    def _recorded_model(self, recorded: str) -> Embedder:
        """The built-in model whose vectors the table holds (``recorded`` its
        stamp), loaded; EmbedderUnavailable when none here matches it."""
        name = recorded.split("/", 1)[0]
        builtin = builtin_model_named(name)
        if builtin is not None:
            try:
                embedder = load_embedder(builtin)
            except EmbedderUnavailable as exc:
                raise EmbedderUnavailable(f"this store's vectors come from the model {name}, which "
                                          f"does not load here ({exc}); they are kept") from exc
            if recorded in (self._model_stamp(embedder), unfingerprinted(self._model_stamp(embedder))):
                return embedder
        raise EmbedderUnavailable(
            f"this store's vectors come from the model {name}, which only an engine configured "
            "with it ranks with; they are kept (a daemon with another embedModel replaces them)")

    def _switch_model(self, stamp: str) -> None:
        """Drop the table's vectors and stamp it with the model ``stamp`` names."""
        with self.store.write() as conn:
            conn.execute(f"DELETE FROM {self.table}")
            conn.execute("INSERT INTO meta(key, value) VALUES (?, ?) "
                         "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                         (self.tier.model_key, stamp))
        if self.vector_path is not None and self.vector_path.exists():
            self.vector_path.unlink()

    def _new_ann(self, dim: int):
        from usearch.index import Index

        return Index(ndim=dim, metric="cos", dtype="f16")

    def _ann_binding(self, model_stamp: str) -> str:
        """What the ANN file's keys and vectors belong to: this store (ids are
        numbered per store), this table and this model (ann_file's binding)."""
        return "\0".join((self.store.meta().get("store_id", ""), self.table, model_stamp))

    def _open_ann(self, dim: int, model_stamp: str):
        self._remove_stray_writes()
        ann = self._new_ann(dim)
        self._binding = self._ann_binding(model_stamp)  # what save() writes: the index loaded for it
        if self.vector_path is not None and self.vector_path.exists():
            try:
                ann.load(ann_file.read(self.vector_path, dim, self._binding))
            except Exception as exc:  # damaged, foreign or old: rebuild from SQLite
                log.warning("rebuilding %s: %s", self.vector_path, exc)
                self.rebuilt_reason = str(exc)
                ann = self._new_ann(dim)
        self._reconcile(ann)
        return ann

    def _reconcile(self, ann) -> None:
        """Make the ANN index hold exactly the vectors SQLite holds."""
        conn = self.store.reader()
        truth = {row[0] for row in conn.execute(f"SELECT id FROM {self.table}")}
        # All keys in one slice: read one by one (iterating ``ann.keys``), each
        # key's lookup scanned the index, so a daemon's first load of 100,000
        # vectors held every recall for minutes.
        present = set(ann.keys[:].tolist())
        extra = present - truth
        missing = sorted(truth - present)
        if extra:
            ann.remove(np.fromiter(extra, dtype=np.uint64))
        for start in range(0, len(missing), 4096):
            ids = missing[start:start + 4096]
            placeholders = ",".join("?" * len(ids))
            rows = conn.execute(f"SELECT id, vec FROM {self.table} WHERE id IN ({placeholders})",
                                ids).fetchall()
            ann.add(np.array([r[0] for r in rows], dtype=np.uint64),
                    np.stack([np.frombuffer(r[1], dtype=np.float16) for r in rows]).astype(np.float32))
        self._known_max_id = max(truth, default=0)
        if extra or missing:
            log.info("vector index reconciled: %d added, %d removed", len(missing), len(extra))
            self._dirty = True
        self.store.removed_vector_ids[self.table].clear()

    def save(self) -> None:
        """Write the ANN file atomically: a reader never sees half a file.
        A write that fails (a full disk, the folder gone) is logged, not
        raised: it loses nothing, since the vectors are in SQLite and the next
        load adds what the file lacks (``_reconcile``); raised, it ended the
        embedding worker's thread. Each write has a temporary name of its own,
        so two processes with one store open (a second daemon started by hand
        with the same ``dbPath``, two bench runs) each rename a whole file."""
        if self.vector_path is None:
            return
        binding = self._binding
        tmp = self.vector_path.with_name(f"{self.vector_path.name}.{os.getpid()}-{uuid.uuid4().hex}.tmp")
        with self._ann_lock:
            ann = self._current_ann()
            if ann is None:  # not loaded, or the store was created anew
                return
            payload = ann.save()
            dim, count = ann.ndim, len(ann)
        try:
            if not ann_file.write(tmp, payload, dim, count, binding):
                return  # no key to sign it: the next start rebuilds from SQLite
            restrict(tmp)  # 0600 before it takes the real name
            os.replace(tmp, self.vector_path)
        except OSError as exc:  # the folder gone, the disk full: the next save tries again
            log.warning("could not write %s: %s", self.vector_path, exc)
            tmp.unlink(missing_ok=True)
            return
        self._dirty = False
        self._last_save = time.monotonic()

    def _remove_stray_writes(self) -> None:
        """Temporary files of writes a killed process left (a live writer's
        file is younger than STRAY_WRITE_S)."""
        if self.vector_path is None:
            return
        name = self.vector_path.name
        # `<name>.tmp`: the one name every write used before writes had their own.
        for stray in [*self.vector_path.parent.glob(f"{name}.*.tmp"), self.vector_path.with_name(f"{name}.tmp")]:
            try:
                if time.time() - stray.lstat().st_mtime > STRAY_WRITE_S:
                    stray.unlink()
            except OSError:
                pass

    # -- the worker ----------------------------------------------------------

    def _run(self) -> None:
        # The worker's embedding runs compute at its niceness: a request keeps a core.
        set_thread_niceness(self.tier.niceness)
        said = False
        while not self.ensure_loaded():
            if self.failed is not None or self._stop.is_set():
                return  # no model here (warned); or closing
            if not said and self.paused is not None:  # the store refused the model's check: tried again
                log.warning("embedding paused: %s", self.paused)
                said = True
            self._stop.wait(REFUSED_WAIT_S)
        while not self._stop.is_set():
            if not self._allowed.wait(timeout=1.0):
                continue
            quiet = self._quiet_until - time.monotonic()
            if quiet > 0:
                self._stop.wait(quiet)
                continue
            if self._yield_to is not None and self._yield_to.busy:
                self._stop.wait(0.2)  # one tier at a time on the cores
                continue
            try:
                worked = self.step()
                self.paused = None
            except WriteFailed as exc:
                # A full disk (…): the batch waits in memory (step stores it
                # again, never embeds it again); said once, not a traceback a try.
                if self.paused is None:
                    log.warning("embedding paused: %s", exc)
                self.paused = exc
                self._stop.wait(REFUSED_WAIT_S)
                continue
            except Exception:  # keep the daemon alive; try again shortly
                log.exception("embedding step failed")
                # What the step took from the backlog lacks its vector still:
                # found again by a scan from the start.
                self._rescan.set()
                worked = False
                self._stop.wait(1.0)
            if not worked:
                if self._dirty:
                    self.save()
                self._drained.set()
                self._wake.wait(timeout=2.0)
                self._wake.clear()
            elif self._dirty and time.monotonic() - self._last_save > SAVE_INTERVAL_S:
                self.save()

    def step(self) -> bool:
        """Embed one batch (or store what requests embedded ahead); False when
        there was nothing to do (or the model or the store cannot be used now:
        ``failed``, ``paused`` say why). Loads the ANN index again after the
        store was created anew."""
        if not self.ensure_loaded():
            return False
        self._apply_removals()
        if self._unstored is not None:  # a batch the store refused: stored, not embedded again
            self._store_vectors(*self._unstored)
            self._unstored = None
            return True
        if self._store_embedded_ahead():
            return True
        batch = self._next_batch()
        if not batch:
            return False
        # The backlog window was read before some of its texts were stored ahead.
        hashes = [text_hash for text_hash in batch if text_hash not in self._stored_ahead]
        if not hashes:
            return True
        assert self.embedder is not None
        vectors = self.embedder.embed([batch[h] for h in hashes])
        try:
            self._store_vectors(hashes, vectors)
        except WriteFailed:
            self._unstored = (hashes, vectors)
            raise
        return True

    def _store_embedded_ahead(self) -> bool:
        """Store the vectors requests embedded ahead of the backlog; False
        when there were none. They stay readable to requests until stored."""
        with self._ahead_lock:
            ahead = dict(self._embedded_ahead)
        if not ahead:
            return False
        self._store_vectors(list(ahead), list(ahead.values()))
        self._stored_ahead.update(ahead)
        with self._ahead_lock:
            for text_hash in ahead:
                self._embedded_ahead.pop(text_hash, None)
        return True

    def _store_vectors(self, hashes: list[str], vectors) -> None:
        added: list[tuple[int, np.ndarray]] = []
        replacements = self._replacements
        with self.store.write() as conn:
            for text_hash, vector in zip(hashes, vectors):
                # Only if a row still wants it: it may have changed or gone meanwhile.
                cur = conn.execute(
                    f"INSERT INTO {self.table}(text_hash, vec) SELECT ?, ? WHERE EXISTS "
                    "(SELECT 1 FROM chunks WHERE embed_hash = ?) OR EXISTS "
                    "(SELECT 1 FROM memory WHERE embed_hash = ?) ON CONFLICT(text_hash) DO NOTHING",
                    (text_hash, vector.astype(np.float16).tobytes(), text_hash, text_hash))
                if cur.rowcount:
                    added.append((cur.lastrowid, vector))
        if added:
            with self._ann_lock:
                # The store created anew since the write began: its ids may
                # be the old store's. The ANN index loads (or took in,
                # ``_take_in_other_writes``) whatever the new store holds.
                if self._current_ann() is not None and replacements == self._replacements:
                    self._add_absent(np.array([a[0] for a in added], dtype=np.uint64),
                                     np.stack([a[1] for a in added]))
            self._dirty = True
        self.embedded_total += len(added)
        self._forget_pending_count()

    def _apply_removals(self) -> None:
        removed = []
        queue = self.store.removed_vector_ids[self.table]
        while queue:
            removed.append(queue.popleft())
        if removed:
            with self._ann_lock:
                if self._current_ann() is None:  # the store was created anew: the next load reconciles
                    return
                keys = np.array(removed, dtype=np.uint64)
                present = keys[np.asarray(self._ann.contains(keys), dtype=bool)]
                if len(present):
                    self._ann.remove(present)
            self._dirty = True

    @property
    def _missing_chunks_sql(self) -> str:
        return ("SELECT c.id, c.embed_hash, f.path, c.symbol, c.text FROM chunks c "
                "JOIN files f ON f.id = c.file_id WHERE NOT EXISTS "
                f"(SELECT 1 FROM {self.table} v WHERE v.text_hash = c.embed_hash) ")

    @property
    def _missing_memory_sql(self) -> str:
        return ("SELECT m.id, m.embed_hash, m.symbol, m.text FROM memory m WHERE NOT EXISTS "
                f"(SELECT 1 FROM {self.table} v WHERE v.text_hash = m.embed_hash) ")

    def _next_batch(self) -> dict[str, str]:
        """Embed hash -> embedding text, one per hash: equal texts share a vector."""
        conn = self.store.reader()
        if self._rescan.is_set():
            self._rescan.clear()
            self._cursor = self._memory_cursor = 0
            self._window = []
        while True:
            with self._urgent_lock:
                path, just_marked = next(iter(self._urgent.items()), (None, False))
            if path is None:
                break
            # Newest rows first: an edit rewrites only the chunks it changed, so
            # the one being typed in gets its vector before the rest of its file,
            # in a batch of its own (not padded to seven other chunks).
            rows = conn.execute(self._missing_chunks_sql + "AND f.path = ? ORDER BY c.id DESC LIMIT ?",
                                (path, 1 if just_marked else self._work_batch)).fetchall()
            if rows:
                with self._urgent_lock:
                    if path in self._urgent:
                        self._urgent[path] = False
                return self._chunk_texts(rows)
            with self._urgent_lock:
                self._urgent.pop(path, None)
        with self._urgent_lock:
            written = [self._urgent_memory.pop()
                       for _ in range(min(self._work_batch, len(self._urgent_memory)))]
        if written:
            rows = conn.execute(self._missing_memory_sql + f"AND m.id IN ({','.join('?' * len(written))})",
                                written).fetchall()
            if rows:
                return self._memory_texts(rows)
        if not self._window:
            self._window = self._backlog_window(conn)  # read after: holds none stored ahead
            self._stored_ahead.clear()
        batch, self._window = self._window[:self._work_batch], self._window[self._work_batch:]
        return dict(batch)

    @property
    def _work_batch(self) -> int:
        """Texts per step: a transformer's is small (embeddings.STEP_TEXTS_PER_RUN
        for each of its runs at once);
        a static model's is large, or SQLite's per-step work would bound its pace."""
        return self.embedder.batch_size if self.embedder is not None else 1

    def _backlog_window(self, conn) -> list[tuple[str, str]]:
        """The next BACKLOG_WINDOW rows without a vector (memory rows first,
        from the start again once none is left past the last), sorted by text
        length."""
        window = max(BACKLOG_WINDOW, 4 * self._work_batch)
        rows = []
        if self.tier.memory:
            rows = conn.execute(self._missing_memory_sql + "AND m.id > ? ORDER BY m.id LIMIT ?",
                                (self._memory_cursor, window)).fetchall()
            if not rows and self._memory_cursor:
                # Nothing past the cursor: look from the start again (as before any
                # memory row was embedded). Another process's re-remember rewrites
                # its row in place, keeping its id, behind the cursor; this
                # process's own writes are mark_memory_urgent's.
                self._memory_cursor = 0
                rows = conn.execute(self._missing_memory_sql + "AND m.id > 0 ORDER BY m.id LIMIT ?",
                                    (window,)).fetchall()
        if rows:
            self._memory_cursor = rows[-1][0]
            texts = self._memory_texts(rows)
        else:
            rows = conn.execute(self._missing_chunks_sql + "AND c.id > ? ORDER BY c.id LIMIT ?",
                                (self._cursor, window)).fetchall()
            if not rows:
                return []
            self._cursor = rows[-1][0]
            texts = self._chunk_texts(rows)
        return sorted(texts.items(), key=lambda item: (len(item[1]), item[0]))

    @staticmethod
    def _chunk_texts(rows) -> dict[str, str]:
        return {row[1]: embedding_text(row[2], row[3], row[4]) for row in rows}

    @staticmethod
    def _memory_texts(rows) -> dict[str, str]:
        return {row[1]: memory_embedding_text(row[2], row[3]) for row in rows}

    # -- queries -------------------------------------------------------------

    def pending(self) -> int:
        """Chunks and memory rows still without a vector. A count of every row
        (~8 ms on django) is kept for PENDING_CACHE_S: status polls it, and a
        recall after each keystroke asks it. Paths edited since (mark_urgent)
        add their own rows without a vector to it, which may count some of
        theirs twice but never reports a stale "nothing pending"."""
        at, count = self._pending_cache
        if time.monotonic() - at < PENDING_CACHE_S:
            with self._urgent_lock:
                edited = sorted(self._edited_since_count)
            return count + self._missing_in(edited) if edited else count
        generation = self._pending_generation
        with self._urgent_lock:
            self._edited_since_count.clear()  # edits from here on are counted again
        count = sum(self.store.reader().execute(
            f"SELECT count(*) FROM {table} x WHERE NOT EXISTS "
            f"(SELECT 1 FROM {self.table} v WHERE v.text_hash = x.embed_hash)").fetchone()[0]
            for table in (("chunks", "memory") if self.tier.memory else ("chunks",)))
        if generation == self._pending_generation:  # else rows changed while counting
            self._pending_cache = (time.monotonic(), count)
        return count

    def _missing_in(self, paths: list[str]) -> int:
        """The chunks of ``paths`` without a vector."""
        return self.store.reader().execute(
            "SELECT count(*) FROM chunks c JOIN files f ON f.id = c.file_id "
            f"WHERE f.path IN ({','.join('?' * len(paths))}) AND NOT EXISTS "
            f"(SELECT 1 FROM {self.table} v WHERE v.text_hash = c.embed_hash)", paths).fetchone()[0]

    def _forget_pending_count(self) -> None:
        self._pending_generation += 1
        self._pending_cache = (0.0, 0)

    def vector_count(self) -> int:
        return self.store.reader().execute(f"SELECT count(*) FROM {self.table}").fetchone()[0]

    def has_vectors(self) -> bool:
        """Asked on every recall: unlike count(*), costs nothing at 100k vectors."""
        return self.store.reader().execute(
            f"SELECT EXISTS (SELECT 1 FROM {self.table})").fetchone()[0] == 1

    def query_vector(self, query: str) -> np.ndarray | None:
        if not self.ensure_loaded():
            return None
        with self._query_cache_lock:
            cached = self._query_cache.get(query)
            if cached is not None:
                self._query_cache.move_to_end(query)
                return cached
            running = self._query_inflight.get(query)
        if running is not None:
            return running.result()
        return self._embed_query(query)

    def query_vector_soon(self, query: str) -> Future:
        """``query_vector(query)`` computed on the query pool while the caller
        does its lexical work (the model runs outside the GIL, and so does
        SQLite). Asked again before it is done, the same run answers. A
        model whose queries cost a table lookup embeds on this thread."""
        if self.embedder is not None and getattr(self.embedder, "queries_inline", False):
            return _done(self.query_vector(query))
        with self._query_cache_lock:
            cached = self._query_cache.get(query)
            if cached is not None:
                self._query_cache.move_to_end(query)
                return _done(cached)
            running = self._query_inflight.get(query)
            if running is None:
                running = embedding_pool().submit(self._embed_query_soon, query)
                self._query_inflight[query] = running
            return running

    def _embed_query_soon(self, query: str) -> np.ndarray | None:
        try:
            return self._embed_query(query) if self.ensure_loaded() else None
        finally:
            with self._query_cache_lock:
                self._query_inflight.pop(query, None)

    def _embed_query(self, query: str) -> np.ndarray:
        assert self.embedder is not None
        vector = self.embedder.embed_query(query)
        with self._query_cache_lock:
            self._query_cache[query] = vector
            if len(self._query_cache) > QUERY_CACHE_SIZE:
                self._query_cache.popitem(last=False)
        return vector

    def _add_absent(self, keys: np.ndarray, vectors: np.ndarray) -> None:
        """Add the vectors the ANN index lacks (under ``_ann_lock``): one this
        process stored may have been taken in by ``_take_in_other_writes``
        between its commit and here."""
        absent = ~np.asarray(self._ann.contains(keys), dtype=bool)
        if absent.any():
            self._ann.add(keys[absent], vectors[absent])
        self._known_max_id = max(self._known_max_id, int(keys.max()))

    def _take_in_other_writes(self) -> None:
        """Vectors another process stored since the index was loaded (under
        ``_ann_lock``): without them, semantic recall missed those chunks for
        as long as the daemon ran while status said ready. One indexed
        lookup when there are none."""
        conn = self.store.reader()
        if self._current_ann() is None:  # that read found the store created anew
            return
        (top,) = conn.execute(f"SELECT max(id) FROM {self.table}").fetchone()
        if top is None or top <= self._known_max_id:
            return
        rows = conn.execute(f"SELECT id, vec FROM {self.table} WHERE id > ? ORDER BY id",
                            (self._known_max_id,)).fetchall()
        if rows:
            self._add_absent(np.array([r[0] for r in rows], dtype=np.uint64),
                             np.stack([np.frombuffer(r[1], dtype=np.float16) for r in rows]
                                      ).astype(np.float32))
            self._dirty = True
        self._known_max_id = max(self._known_max_id, top)

    def nearest(self, vector: np.ndarray, k: int) -> list[tuple[int, float]]:
        """(vector id, cosine similarity), best first."""
        with self._ann_lock:
            self._take_in_other_writes()
            ann = self._current_ann()
            if ann is None or len(ann) == 0:  # not loaded, or the store was created anew
                return []
            matches = ann.search(vector, min(k, len(ann)))
        return [(int(key), 1.0 - float(dist)) for key, dist in zip(matches.keys, matches.distances)]

    def similarities(self, vector: np.ndarray, text_hashes: list[str]) -> dict[str, float]:
        """Exact cosine similarity for chunks already embedded."""
        if not text_hashes:
            return {}
        placeholders = ",".join("?" * len(text_hashes))
        rows = self.store.reader().execute(
            f"SELECT text_hash, vec FROM {self.table} WHERE text_hash IN ({placeholders})",
            text_hashes).fetchall()
        return {r[0]: float(np.frombuffer(r[1], dtype=np.float16).astype(np.float32) @ vector)
                for r in rows}

    def similarities_embedding_missing(self, vector: np.ndarray, texts: dict[str, str]
                                       ) -> dict[str, float]:
        """Cosine similarity for each of ``texts`` (embed hash -> embedding
        text): stored vectors read, the others embedded now on the caller's
        thread (at its priority, beside a nice backlog) and kept for the
        worker to store, so no text is embedded twice. Each cosine is of the
        vector as it is stored (float16), so an answer does not change when
        the worker stores it. Where the model fails, those texts are left
        out; a cancelled request (index/cancel.py) raises RequestCancelled."""
        found = self.similarities(vector, list(texts))
        with self._ahead_lock:
            for text_hash in texts:
                if text_hash not in found and text_hash in self._embedded_ahead:
                    found[text_hash] = self._stored_cosine(self._embedded_ahead[text_hash], vector)
        missing = [text_hash for text_hash in texts if text_hash not in found]
        if not missing or not self.ensure_loaded():
            return found
        assert self.embedder is not None
        # A worker step's worth at a time (8 texts, ~35 ms on 2 cores): a
        # cancelled request stops after the slice it is in (what it embedded
        # is kept for the worker); one text a run each costs ~10% more.
        step = max(1, self._work_batch)
        for start in range(0, len(missing), step):
            check_cancelled()
            part = missing[start:start + step]
            try:
                vectors = self.embedder.embed([texts[text_hash] for text_hash in part])
            except Exception:  # the caller answers without these cosines; the daemon goes on
                log.exception("embedding %d texts for a request failed", len(part))
                return found
            with self._ahead_lock:
                for text_hash, embedded in zip(part, vectors):
                    self._embedded_ahead[text_hash] = embedded
                    found[text_hash] = self._stored_cosine(embedded, vector)
                while len(self._embedded_ahead) > MAX_EMBEDDED_AHEAD:
                    self._embedded_ahead.popitem(last=False)
        return found

    @staticmethod
    def _stored_cosine(embedded: np.ndarray, vector: np.ndarray) -> float:
        return float(embedded.astype(np.float16).astype(np.float32) @ vector)

    def describe(self) -> dict:
        name = self.embedder.name if self.embedder else ""
        dim = self.embedder.dim if self.embedder else 0
        return {"enabled": self.failed is None, "model": name, "dim": dim,
                **({"error": self.failed} if self.failed else {}),
                **({"paused": self.paused} if self.paused is not None else {}),
                **({"ann_rebuilt": self.rebuilt_reason} if self.rebuilt_reason else {})}


_EMBEDDING_POOL: ThreadPoolExecutor | None = None
_EMBEDDING_POOL_LOCK = threading.Lock()


def _done(value) -> Future:
    """A future already holding ``value``."""
    future: Future = Future()
    future.set_result(value)
    return future


def embedding_pool() -> ThreadPoolExecutor:
    """The process's query pool: queries embedded beside the requests' lexical
    work (one per engine would leave threads per workspace folder). As many
    threads as requests read at once (the daemon's read lane), so that a query
    never queues behind another's embedding."""
    global _EMBEDDING_POOL
    with _EMBEDDING_POOL_LOCK:
        if _EMBEDDING_POOL is None:
            _EMBEDDING_POOL = ThreadPoolExecutor(QUERY_POOL_THREADS,
                                                 thread_name_prefix="ctxls-query-embed")
        return _EMBEDDING_POOL


class EmbeddingEta:
    """One embedding pass's progress line, `embedding 120/4000 chunks, 35.2/s,
    ETA 1m50s` (the CLI's and the daemon's work-done progress message), its
    rate measured on this pass alone: from the first batch seen done on
    (before it the model loads and warms up, which made the first ETA ~3x too
    long), over the last RATE_WINDOW_S. "estimating…" until a batch has
    finished after that first one."""

    RATE_WINDOW_S = 60.0

    def __init__(self, clock: Callable[[], float] = time.monotonic):
        self._clock = clock
        self._samples: collections.deque[tuple[float, int]] = collections.deque()

    def text(self, done: int, total: int) -> str:
        now, samples = self._clock(), self._samples
        if done > 0 and (not samples or done > samples[-1][1]):
            samples.append((now, done))
        while len(samples) > 2 and now - samples[1][0] >= self.RATE_WINDOW_S:
            samples.popleft()
        text = f"embedding {done}/{total} chunks"
        if len(samples) < 2:
            return f"{text}, estimating…"
        (first_at, first_done), (last_at, last_done) = samples[0], samples[-1]
        rate = (last_done - first_done) / max(last_at - first_at, 1e-6)
        left = max(total - done, 0) / rate
        return f"{text}, {rate:.1f}/s, ETA {int(left // 60)}m{int(left % 60):02d}s"


# The default store's name: its ANN files keep their plain names.
_DEFAULT_STORE_NAME = "index.db"


def vector_file_for(db_path: str, tier: VectorTier = PRIMARY_TIER) -> Path:
    """A store's ANN file, beside it and named after it (``a.db`` ->
    ``a.db.vectors.usearch``): two stores in one folder never share one."""
    db = Path(db_path)
    if db.name == _DEFAULT_STORE_NAME:
        return db.with_name(tier.file_name)
    return db.with_name(f"{db.name}.{tier.file_name}")


