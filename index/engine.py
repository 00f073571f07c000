"""The engine facade: one workspace root, its store, its open buffers.

Everything a shell (daemon, CLI, MCP bridge, benchmark) needs goes through
:class:`Engine`, in plain Python types. It knows nothing about LSP or JSON;
``ctxls.daemon.wire`` turns its results into the protocol's shapes.
"""

from __future__ import annotations

import collections
import json
import logging
import os
import re
import threading
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, Iterable, Protocol, Sequence, TypeVar

from ctxls import __version__
from ctxls.index.discovery import (MAX_PATHSPECS, UNKNOWN_SIGNATURE, DiscoveryOptions, Skipped,
                                   byte_limit, decode_text, ignored_paths, indexed_buffer_text,
                                   left_out_of_listing, looks_binary, read_file, reason_family,
                                   relative_path, repositories_among, sets_ignore_rules,
                                   stat_signature)
from ctxls.index import graph, postings
from ctxls.index.priority import lower_thread_priority
from ctxls.index.cancel import check_cancelled
from ctxls.index.demand import Demand, DemandLog
from ctxls.index.errors import (EngineError, IndexNotReady, InvalidParams, MemoryUnavailable,
                                OutsideRoot, RequestCancelled, StalePointer, StoreUnavailable,
                                WriteFailed)
from ctxls.index.indexer import Cancelled, Indexer, IndexStats, ProgressCallback, racy
from ctxls.index.model import MAX_ANSWER_BODY_BYTES, content_hash, line_end_character
from ctxls.index.vocabulary import (MAX_DAYS, MAX_LOCATE_N, MAX_QUERY_CHARS, MAX_RECALL_N,
                                    MAX_RECENT_ITEMS, RECALL_KINDS, RECALL_MODES, locate_text_kept)
from ctxls.index.chunker import PLAIN_LANGUAGES, reads_definitions
from ctxls.index.assemble import (ByteEstimate, TokenCounter, TokenizerCounter, Topicality, off_topic,
                                  with_written)
from ctxls.index.embeddings import (
    DEFAULT_MODEL_NAME,
    STATIC_MODEL_NAME,
    EmbedderUnavailable,
    is_static_model,
    load_counting_tokenizer,
    load_embedder,
)
from ctxls.index.live import BURST_FILES, DiskFollower, watch_status
from ctxls.index.locate import LocatedFile, Locator
from ctxls.index.memory import (MEMORY_KINDS as WRITTEN_KINDS, Memory, MemoryItem, MemoryRow,
                                open_memory_store)
from ctxls.index.ranking import RankingConfig, ScoredChunk, hybrid_search, lexical_search, term_counts
from ctxls.index.recall_calibration import Calibration, Evidence, QueryEvidence, shipped_calibration
from ctxls.index.recall_scorer import Contribution
from ctxls.index.tokenize import query_terms
from ctxls.index.query import declared_name
from ctxls.index.git import (HeadMove, head_commit, head_moves, stopped_operation_commit,
                             taken_from_merged_branch, written_by_checkout)
from ctxls.index.roots import store_dir
from ctxls.index.scopes import EVERYTHING, Scope
from ctxls.index.semantic import VECTOR_TIERS, FAST_TIER, SemanticIndex, vector_file_for
from ctxls.index.stash import Stash
from ctxls.index import symbols as symbol_table
from ctxls.index.symbols import Definition
from ctxls.index.store import (FTS_TABLE_BY_KIND, INDEX_COMPLETE_KEY, INDEX_STAMP, Connection, FileState, Store,
                               now_ms)

log = logging.getLogger(__name__)

T = TypeVar("T")

FILE_KINDS = ("code", "doc", "config")
# The kinds whose term coverage the shipped recall calibration was fit on.
CALIBRATED_KINDS = ("code", "doc")
# The kinds whose window answers the transformer orders (ranking._rescored):
# code, which set 4 and the files set measure. Docs and configs keep the fast
# tier's ranking there: unmeasured, and each would embed 30 more texts a query.
RESCORED_KINDS = ("code",)
# Recalled from written memory only (index/memory/sqlite.py); "doc" is recalled from
# both files and written memory (remembered or ingested documents).
MEMORY_KINDS = ("fact", "episode")
# File URIs kept for hits (uri_for), at most.
MAX_CACHED_URIS = 100_000
DAY_MS = 86_400_000
# The primary tier serves hybrid recall once at most this many rows lack its
# vector (an edit's few chunks must not hand answers back to the fast tier).
TAKEOVER_BACKLOG = 64
# How long close() waits for a running pass to stop (it stops at its next file).
CLOSE_PASS_WAIT_S = 30.0
# After an edit or a query, background embedding waits this long (seconds).
INTERACTIVE_QUIET_S = 0.3
# A request before the first index is complete waits this long (seconds) by default.
READY_WAIT_S = 3.0
# An answer is computed at most this often while the files it points into
# turn out changed on disk (each time, those are re-indexed first).
FRESH_RETRIES = 5
# A ranked answer (recall, locate, assemble) waits at most this long for the
# watcher to index what was written before it was asked: its files are found
# by their contents, so no check of the answer's own files can bring in one
# written a moment ago. Not the ready wait, which may be 0 (no wait for the
# first index): the watcher says it caught up only at its next return.
DISK_CATCH_UP_S = 1.0
# A first pass the store refused (it cannot be opened, or written: a full disk,
# a read-only or locked store) is tried again after this many seconds, the wait
# doubling up to the second figure: soon after space is freed, never a busy loop
# re-reading every file of a repository that cannot be stored.
STORE_RETRY_S = 2.0
STORE_RETRY_MAX_S = 60.0
# A file git removed as HEAD moved: edits logged from this long before the
# reflog dates the move are the move's own (git removes and writes the files,
# then moves the ref; 12,500 files took 1.3 s here). A file it wrote: those
# logged from its mtime (never later than the write, even where file times
# are coarse: they are rounded down). Also how long after a move is found
# its files are reconciled again (the watcher's batch of them may come later).
CHECKOUT_WINDOW_MS = 10_000
# How many of HEAD's latest moves are read for the latest one git made since
# the commit the edit log was reconciled with (commits may follow it).
HEAD_MOVES_READ = 100
# The store's meta key: the commit the edit log was last reconciled with.
EDITS_HEAD_KEY = "edits_head"


def _term_share(terms: list[str], found: dict[str, set[str]], kinds: Iterable[str]) -> float:
    """The share of ``terms`` that ``found`` (Engine._found_terms) holds in any of ``kinds``."""
    if not terms:
        return 0.0
    held = set().union(*(found[kind] for kind in kinds))
    return sum(1 for term in terms if term in held) / len(terms)


@dataclass(frozen=True)
class EngineOptions:
    db_path: str | None = None  # default <root>/.ctxls/index.db
    discovery: DiscoveryOptions = field(default_factory=DiscoveryOptions)
    ranking: RankingConfig = field(default_factory=RankingConfig)
    # The semantic tier: off for a bare library Engine, on in the daemon.
    embeddings: bool = False
    embed_model: str | None = None  # a user's ONNX model (with embed_tokenizer)
    embed_tokenizer: str | None = None
    # Team memory: a postgresql:// URL; None keeps memory in this store.
    memory_url: str | None = None
    # Following the disk (index/live.py): "auto", "poll" or "off" (a library engine's default).
    watch: str = "off"
    # How long a request waits for the first index (and a burst's pass) before
    # answering "index not ready" (or, for a burst, a partial answer).
    ready_wait_s: float = READY_WAIT_S


@dataclass
class Hit:
    path: str  # a repo-relative path, or a written memory's id
    uri: str | None  # None for written memory: it is not a file
    kind: str
    format: str
    score: float
    symbol: str | None
    start_line: int
    end_line: int
    end_character: int  # length of the last line: the range ends there
    body: str | None
    meta: dict | None = None  # a memory row's meta, verbatim
    scope: str | None = None  # a memory row's scope: its demand is logged under it
    # A written row's body, asked for but not read yet: read by BodyBudget.take,
    # only if it fits what the answer has left.
    read_body: Callable[[int], str | None] | None = field(default=None, repr=False, compare=False)
    # A file chunk's definitions (those whose name row lies in its lines),
    # in file order; None for written memory and line windows.
    definitions: list[Definition] | None = None
    # A recall hit's largest feature contributions (recall_scorer.Contribution),
    # largest first; None for written memory and other answers' hits.
    why: list[Contribution] | None = None
    # A recall hit's estimated P(relevant) (index/recall_calibration.py): what
    # hits of several sources, kinds and folders are merged on; None for
    # other answers' hits. ``evidence``: what it was calculated from.
    calibrated: float | None = None
    evidence: Evidence | None = field(default=None, repr=False, compare=False)

    @property
    def wants_body(self) -> bool:
        return self.body is not None or self.read_body is not None


class BodyBudget:
    """What is left of one answer's MAX_ANSWER_BODY_BYTES. Bodies are taken in
    answer order until one does not fit; from there on every body is left out
    (``body: null``, ``truncated: true``), so the bodies an answer carries are
    always those of its first items. A written row's body is read from the
    store only when it is taken, so what is read is bounded too."""

    def __init__(self, limit: int = MAX_ANSWER_BODY_BYTES) -> None:
        self.left = limit
        self.cut = False

    def take(self, hit: Hit) -> str | None:
        """``hit``'s body if it still fits, else None (and none after it)."""
        if self.cut:
            return None
        body = hit.body if hit.body is not None else (
            hit.read_body(self.left) if hit.read_body is not None else None)
        size = len(body.encode("utf-8", "surrogatepass")) if body is not None else None
        if size is None or size > self.left:
            self.cut = True
            return None
        self.left -= size
        return body


# A location after a path, as answers, editors and GitHub write it (1-based):
# `:16`, `:16-18`, `:16:5` (a column), `#L16`, `#L16-L18`, `#L16-18`.
_WRITTEN_LOCATION = re.compile(r"(.+?)(?::(\d+)(?:-(\d+)|:\d+)?|#L(\d+)(?:-L?(\d+))?)")


def _written_lines(text: str) -> tuple[str, int, int] | None:
    """(path, first line, last line) as written (1-based, unchecked) of an
    id that ends with a written location, or None."""
    found = _WRITTEN_LOCATION.fullmatch(text.strip())
    if found is None:
        return None
    path, start, end, hash_start, hash_end = found.groups()
    first = int(start or hash_start)
    return path, first, int(end or hash_end or first)


def written_location(text: str) -> tuple[str, int, int] | None:
    """(path, first line, last line), 0-based, of an id that ends with a
    written location, or None (also for lines that are no range:
    ``unreadable_location`` says why)."""
    written = _written_lines(text)
    if written is None or not 1 <= written[1] <= written[2]:
        return None
    path, first, last = written
    return path, first - 1, last - 1


def unreadable_location(text: str) -> tuple[str, str] | None:
    """(path, why) of an id that ends with a written location whose lines
    are no range (`:4-3`, `:0-2`: lines count from 1), else None."""
    written = _written_lines(text)
    if written is None or 1 <= written[1] <= written[2]:
        return None
    path, first, last = written
    why = "lines count from 1" if first < 1 else "its last line is before its first"
    return path, f"{text.strip()!r} names lines {first}-{last} of {path!r}, which are no range: {why}"


@dataclass
class RecallResult:
    hits_by_kind: dict[str, list[Hit]]
    partial: bool
    # Why the answer may miss something (None when it does not).
    partial_reason: str | None = None
    # The ranking actually used: "lexical" when no vectors could take part.
    mode: str = "hybrid"
    # Why the hits are probably not about the query (assemble's off-topic
    # test), or None. BM25 returns nothing for words that occur nowhere; a
    # ranking by meaning always returns its nearest rows, however far.
    weak_reason: str | None = None
    # What the answer knows of the index as a whole for the query (file kinds
    # asked only): the calibration's and the off-topic test's evidence.
    topicality: Topicality | None = None


@dataclass
class Item:
    id: str
    kind: str
    format: str
    source: str  # "file" | "direct"
    provenance: str  # "disk" | "buffer"
    occurred_at: int  # ms
    text: str | None
    meta: dict
    # Written memory only:
    created_at: int | None = None
    expires_at: int | None = None
    encoding: str | None = None  # "base64": text is an ingested blob's bytes
    # A file's lines asked for (first, last), as cut: the answer says them.
    lines_given: tuple[int, int] | None = None


@dataclass
class ActivityItem:
    id: str
    symbol: str | None
    kind: str
    last_edited_at: int
    edits: int
    # Of the latest edit: "editor" | "disk" (None: logged before it was kept);
    # "checkout" rows are never items.
    origin: str | None = None


@dataclass
class IndexProgress:
    indexing: bool = False
    done: int = 0
    total: int = 0
    started: float = field(default_factory=time.monotonic)
    # A pass for a burst of changes on disk (a checkout), not the first index.
    burst: bool = False


class PassProgress(Protocol):
    """What a shell shows while a burst's pass runs (the daemon: ``$/progress``)."""

    def report(self, done: int, total: int) -> None: ...

    def end(self, message: str) -> None: ...


class Engine:
    def __init__(self, root: str | Path, options: EngineOptions | None = None,
                 private_store: bool = False):
        """``private_store``: a throw-away store for buffers outside every
        workspace folder (never discovered, never written under root). Such
        an engine serves its buffers only and never reads a file: its root
        (``/``) is no boundary, so a path sent to it may name any file.
        ``root`` as named (a link to the folder, say) is what answers' URIs
        are built on: the editor that opened it has its files by those URIs."""
        self.root = Path(root).resolve()
        self.named_root = Path(os.path.abspath(root))
        self.options = options or EngineOptions()
        self.buffers_only = private_store
        if private_store:
            db_path, home = None, None
        elif self.options.db_path:
            db_path, home = self.options.db_path, None
        else:
            # A store in the repository's own folder never re-creates that folder.
            db_path, home = str(store_dir(self.root) / "index.db"), self.root
        self.store = Store(db_path, home=home)
        if self.store.moved_aside is not None:
            # The ANN caches beside it hold the ids and vectors of the store moved aside.
            for tier in VECTOR_TIERS:
                vector_file_for(self.store.db_path, tier).unlink(missing_ok=True)
        # A store moved aside with no written rows holds nothing to trust: no
        # warning (the CLI, which starts an engine on every call, repeated it).
        for quarantined in (q for q in self.store.quarantined() if q["memory"]):
            log.warning("%s: %d written memory rows of a store that was not this user's own are "
                        "quarantined (not served); `ctxls trust-memory` imports them",
                        quarantined["path"], quarantined["memory"])
        self._buffers: dict[str, str] = {}
        self._buffers_lock = threading.Lock()
        self._uris: dict[str, str] = {}  # path -> file URI (uri_for: pathlib costs on every hit)
        self.indexer = Indexer(self.root, self.store, self.options.discovery, self.open_buffers)
        # Where warnings a user should see go (the daemon shows them in the editor).
        self.on_warning: Callable[[str], None] = log.warning
        # The primary tier (the configured model) and, beside a transformer,
        # the fast tier (the static model): complete in seconds, it serves
        # hybrid recall until the primary's backlog is nearly empty.
        self.semantic: SemanticIndex | None = None
        self.fast_semantic: SemanticIndex | None = None
        if self.options.embeddings and not private_store:
            if not is_static_model(self.options.embed_model):
                self.fast_semantic = SemanticIndex(
                    self.store, vector_file_for(self.store.db_path, FAST_TIER),
                    lambda: load_embedder(STATIC_MODEL_NAME),
                    lambda message: self.on_warning(message), tier=FAST_TIER)
            self.semantic = SemanticIndex(
                self.store, vector_file_for(self.store.db_path),
                lambda: load_embedder(self.options.embed_model, self.options.embed_tokenizer),
                lambda message: self.on_warning(message), yield_to=self.fast_semantic)
        if self.options.memory_url is not None and not private_store:
            # PostgreSQL embeds a row as it writes it; the local worker never sees memory there.
            self.memory = Memory(open_memory_store(self.options.memory_url, self.store,
                                                   lambda message: self.on_warning(message),
                                                   self.semantic))
        else:
            self.memory = Memory(open_memory_store(None, self.store),
                                 self.semantic.mark_memory_urgent if self.semantic else None)
        self.demand = DemandLog(self.store, self.memory.backend)
        self.stash = Stash(self.store)
        self.progress = IndexProgress()
        self.locator = Locator(ranking=self.options.ranking, root=self.root, history=not private_store)
        self.index_error: EngineError | None = None  # why the last pass failed
        # Files whose latest text (a buffer's, or the disk's) the store refused
        # (a full disk …), and why: answers say so until it is written
        # (write_unwritten, tried again before answers).
        self._unwritten: dict[str, WriteFailed] = {}
        self._unwritten_lock = threading.Lock()
        self._unwritten_tried = 0.0
        # Per file, the content hash of the text this process's latest answer
        # pointing into it (its lines) was computed from, or that a whole-file
        # `get` handed out: a `get` of a line range is refused (StalePointer)
        # when the file holds other text now, whenever the change was indexed.
        self._answered_hashes: dict[str, str] = {}
        self._answered_lock = threading.Lock()
        self._token_counter: TokenCounter | None = None
        # Set by the first complete pass: until then answers are partial.
        self._cold_done = threading.Event()
        # Whether the store held a whole pass's rows when this process's first
        # pass began (read once, at the first answer that waits for it): then
        # answers come from them at once, partial, rather than IndexNotReady.
        self._stored_complete: bool | None = None
        # Wall clock (ns) when the last whole pass began listing files: a file
        # created since may not be indexed yet (impact's sweep looks in the
        # folders changed since). None: no whole pass in this process.
        self.listed_ns: int | None = None
        # The repositories inside the root (log_git_writes), as of a whole pass's listed_ns.
        self._repositories_listed: tuple[int | None, list[str]] = (None, [])
        # What each repository's HEAD moves found by log_git_writes wrote, reconciled again a while.
        self._git_writes: dict[str, _GitWrites] = {}
        # Repositories inside that came since this process's first listing, not reconciled yet.
        self._repositories_came: set[str] = set()
        # Each repository's merge or cherry-pick stopped on a conflict, as last found (its commit).
        self._stopped_operations: dict[str, str | None] = {}
        if private_store:
            self._cold_done.set()
        # Set once a first pass is due (a daemon or a hosted engine): requests
        # then wait for it, or answer IndexNotReady, instead of "no hits".
        self._first_pass_due = False
        self._pass_idle = threading.Event()  # set while no pass runs
        self._pass_idle.set()
        self._passes_running = 0
        self._pass_ended = 0.0  # monotonic: when the last pass ended (disk_events_waiting)
        self._passes_lock = threading.Lock()
        self.follower: DiskFollower | None = None
        # Called (from the watcher thread) when a burst's pass begins.
        self.on_burst: Callable[[str], PassProgress] | None = None
        # Called after files changed on disk were re-indexed.
        self.on_disk_change: Callable[[], None] | None = None
        self.store.on_replaced.append(self._store_replaced)
        # The postings' warm-up after the first pass (cold_index), and what
        # stops it; the lock makes starting it and close() one after the other
        # (close() joined a thread created but not yet started).
        self._warm_thread: threading.Thread | None = None
        self._warm_lock = threading.Lock()
        self._closing = threading.Event()
        # Set when a write succeeds while the first pass waits to be tried
        # again (first_pass): the store takes writes again, so it is tried now.
        self._store_writes = threading.Event()
        self._quiet_until = 0.0  # see _defer_embedding

    @property
    def _tiers(self) -> list[SemanticIndex]:
        """The semantic tiers, the fast one first (its worker goes first)."""
        return [tier for tier in (self.fast_semantic, self.semantic) if tier is not None]

    def _store_replaced(self) -> None:
        """The store file vanished and was created anew: index everything again
        (open buffers included) in the background; answers are partial meanwhile."""
        self._cold_done.clear()
        self._stored_complete = None
        self.listed_ns = None
        self.indexer.fills_empty_store = None  # the new store's first pass judges: empty, it logs no edit
        for tier in self._tiers:
            tier.store_replaced()

        def rebuild() -> None:
            try:
                self.cold_index()
                for path, text in self.open_buffers().items():
                    self.indexer.index_buffer(path, text)
            except Cancelled:  # the engine is closing: stopped, not failed
                pass
            except Exception:  # status carries indexError; the daemon stays up
                log.exception("re-indexing %s into its new store failed", self.root)

        threading.Thread(target=rebuild, name="ctxls-store-rebuild", daemon=True).start()

    def check_store(self) -> None:
        """Look whether the store file was deleted under us (opened anew and
        re-indexed then, as on any access); an unavailable store is left
        for its status to report."""
        try:
            self.store.reader()
        except EngineError:
            pass

    def token_counter(self) -> TokenCounter:
        """The embedding tokenizer when embeddings are on (and it loads), else a
        byte estimate. Fixed per engine so assembled output is byte-stable."""
        if self._token_counter is None:
            counter: TokenCounter = ByteEstimate()
            if self.options.embeddings:
                try:
                    tokenizer, name = load_counting_tokenizer(self.options.embed_model,
                                                              self.options.embed_tokenizer)
                    counter = TokenizerCounter(tokenizer, name)
                except EmbedderUnavailable as exc:
                    log.warning("counting tokens by estimate: %s", exc)
            self._token_counter = counter
        return self._token_counter

    def start_embedding(self) -> None:
        """Start the background embedding workers (no-op without embeddings),
        and team memory's filling of rows another daemon wrote without a vector."""
        for tier in self._tiers:
            tier.start()
        start_memory = getattr(self.memory.backend, "start_embedding", None)
        if start_memory is not None:
            start_memory()

    def embed_pending(self, progress: Callable[[int, int], None] | None = None) -> int:
        """Embed the whole backlog in this thread (CLI `index --embed`, benchmarks),
        the fast tier's first; returns how many vectors the primary tier added.
        The daemon uses the workers instead. ``progress(done, total)`` is
        called after each of the primary's batches."""
        self.embed_fast_tier()
        if self.semantic is None or not self.semantic.ensure_loaded():
            return 0
        before = self.semantic.embedded_total
        total = self.semantic.pending()
        while self.semantic.step():
            if progress is not None:
                done = self.semantic.embedded_total - before
                progress(done, max(total, done))
        self.semantic.save()
        return self.semantic.embedded_total - before

    def embed_fast_tier(self) -> None:
        """Embed the fast tier's whole backlog in this thread (no-op without one)."""
        if self.fast_semantic is not None and self.fast_semantic.ensure_loaded():
            while self.fast_semantic.step():
                pass
            self.fast_semantic.save()

    def serve_stored_index(self) -> None:
        """Answer from the store as the last pass left it, with no pass in this
        process (a CLI verb without a daemon): answers are not partial for it."""
        self._cold_done.set()

    def close(self) -> None:
        # The warm-up reads on a connection store.close() closes: it stops first;
        # so does a running pass (it checks _closing at each file and writes
        # what it read before it stops), and no pass starts after this.
        with self._passes_lock:
            self._closing.set()
        with self._warm_lock:
            warm_thread = self._warm_thread
        if warm_thread is not None:
            warm_thread.join()
        if not self._pass_idle.wait(CLOSE_PASS_WAIT_S):
            log.warning("closing %s while a pass still runs", self.root)
        if self.follower is not None:
            self.follower.stop()
        for tier in self._tiers:
            tier.stop()
        self.demand.close()
        self.memory.backend.close()
        self.store.close()

    # -- paths ---------------------------------------------------------------

    def relative(self, candidate: str) -> str:
        """Repo-relative path of an id, path or absolute path ("." for the root
        itself: a folder like its sub-folders, not outside); OutsideRoot if it escapes."""
        rel = relative_path(self.root, candidate)
        if rel is None:
            try:
                is_root = (self.root.resolve() / candidate).resolve() == self.root.resolve()
            except (RuntimeError, OSError):  # a symlink loop: no file, no folder
                is_root = False
            if not is_root:
                raise OutsideRoot(candidate)
            rel = "."
        return rel

    def uri_for(self, path: str) -> str:
        uri = self._uris.get(path)
        if uri is None:
            if len(self._uris) >= MAX_CACHED_URIS:
                self._uris.clear()
            uri = self._uris[path] = (self.named_root / path).as_uri()
        return uri

    # -- indexing ------------------------------------------------------------

    @property
    def indexing(self) -> bool:
        """A pass runs, or waits for the one running to end (a checkout's,
        queued behind the first pass)."""
        return self._passes_running > 0

    def disk_events_waiting(self) -> bool:
        """Whether file events from before the last pass ended may not be
        handled yet (the watcher has not returned since, or holds a batch
        it has not handed over): what the pass left is not the disk yet (a
        checkout during the first pass, whose burst is still to start)."""
        follower = self.follower
        return follower is not None and not follower.handled_since(self._pass_ended)

    @property
    def cold_index_done(self) -> bool:
        return self._cold_done.is_set()

    def cold_index(self, progress: ProgressCallback | None = None,
                   cancel: threading.Event | None = None) -> IndexStats:
        """The first pass after start (a daemon's, a hosted `ctxls mcp`'s).
        It logs the edits it finds, as any incremental pass does: files
        written while no process served the store, dated by their mtime, so
        recent activity never depends on who opened the repository first.
        A first index of an empty store logs none (a pass logs changes to
        files it had rows for), nor does a buffer's text left in the store
        going back to the disk's (``_logged_whole_pass``)."""
        self._first_pass_due = True
        stats = self._logged_whole_pass(progress, cancel)
        with self._warm_lock:
            if not self._closing.is_set() and (self._warm_thread is None
                                               or not self._warm_thread.is_alive()):
                self._warm_thread = threading.Thread(target=self._warm_in_background,
                                                     name="ctxls-warm", daemon=True)
                self._warm_thread.start()
        return stats

    def first_pass(self, progress: ProgressCallback | None = None,
                   stop: threading.Event | None = None) -> IndexStats:
        """The first pass of a daemon (or a hosted engine), tried again while
        the store refuses it (STORE_RETRY_S, doubling to STORE_RETRY_MAX_S, or
        at once when a file changed on disk was written meanwhile) until it
        succeeds, ``stop`` is set or the engine closes (Cancelled).
        Meanwhile status says why (``indexError``), answers come from what the
        store holds and say so, and the first refusal is one warning."""
        delay, warned = STORE_RETRY_S, False
        stopping = _EitherSet(stop, self._closing)
        while True:
            self._store_writes.clear()
            try:
                return self.cold_index(progress, stop)
            except (StoreUnavailable, WriteFailed) as exc:
                if warned:
                    log.info("indexing %s: %s; trying again in %.0f s", self.root, exc, delay)
                else:
                    warned = True
                    self.on_warning(f"{exc}: answers come from what the index holds; "
                                    "indexing is tried again until the store takes it")
                if _EitherSet(stop, self._closing, self._store_writes).wait(delay) \
                        and stopping.is_set():
                    raise Cancelled() from None
                delay = min(delay * 2, STORE_RETRY_MAX_S)

    def warm_postings(self) -> int:
        """Load the in-memory postings of the terms many rows hold
        (index/postings.py), so that no query pays for loading them; a
        daemon does it in the background after its first pass. Returns how
        many terms were loaded. It waits while queries and edits come (as
        the embedding workers do) and stops when the engine closes."""
        conn = self.store.reader()
        return sum(postings.warm(conn, table, postings.WARM_MIN_ROWS, self._warm_pause)
                   for table in FTS_TABLE_BY_KIND.values())

    def _warm_pause(self) -> bool:
        """Between two terms of the warm-up: wait out a request's quiet
        period (``_defer_embedding``); True once the engine closes."""
        while (quiet := self._quiet_until - time.monotonic()) > 0 and not self._closing.is_set():
            self._closing.wait(quiet)
        return self._closing.is_set()

    def _warm_in_background(self) -> None:
        """After the first pass: the common terms' postings, then the git
        history locate reads (one ``git log`` per HEAD, ~0.6 s on a large
        repository), so that no first request waits for either."""
        lower_thread_priority()
        try:
            self.warm_postings()
        except Exception:  # a store closed or failing meanwhile: queries load what they need
            log.debug("warming the postings failed", exc_info=True)
        if not self._closing.is_set():
            try:
                self.locator.history.current()
            except Exception:  # locate reads it again, and answers without it if it fails
                log.debug("reading the git history failed", exc_info=True)

    def follow_disk(self) -> None:
        """Start following this root's files on disk (``options.watch``); a
        first pass is due from now on. The pass should start once
        ``follower.established`` is set, so no change falls between them."""
        self._first_pass_due = True
        if self.follower is None and not self.buffers_only and self.options.watch != "off":
            self.follower = DiskFollower(self, self.options.watch)
            self.follower.start()

    def disk_changed(self, paths: list[str], head_moved: bool = False,
                     rules_changed: bool = False, events_lost: bool = False) -> None:
        """One batch of changed files, from the watcher or an editor's events.
        A burst is one incremental pass with progress, answers partial
        meanwhile; its changes are logged as disk edits like any. A burst:
        HEAD moved; ignore rules changed (``rules_changed``: git's own exclude
        file, or a ``.gitignore`` among ``paths``), which can bring files in or
        take them out that no event names; the watcher lost a batch of events
        (``events_lost``); or BURST_FILES indexable files."""
        indexable = [p for p in paths if self.indexer.wanted(p)]
        rules_changed = rules_changed or any(map(sets_ignore_rules, paths))
        title = ("a checkout" if head_moved else "a change of ignore rules" if rules_changed
                 else "file events the watcher could not read" if events_lost
                 else f"{len(indexable)} files changed on disk" if len(indexable) >= BURST_FILES
                 else None)
        if title is not None and not self.buffers_only:
            sink = self.on_burst(title) if self.on_burst is not None else None
            message = "re-indexed"
            try:
                stats = self._pass(None, False, True,
                                   sink.report if sink is not None else None, None, burst=True,
                                   reported=frozenset(paths))
                message = f"re-indexed after {title}: {stats.added} new, {stats.updated} " \
                          f"changed, {stats.removed} removed"
            except Exception as exc:
                message = f"re-indexing failed: {exc}"
                raise
            finally:
                if sink is not None:
                    sink.end(message)
        else:
            self.files_changed_on_disk(paths)
        if self.on_disk_change is not None:
            self.on_disk_change()

    def _written_at(self, path: str, moved_ms: int) -> int:
        """When git wrote ``path`` as HEAD moved (ms); for a file it removed,
        CHECKOUT_WINDOW_MS before the move."""
        written = _mtime_ms(self.root / path)
        return written if written is not None else moved_ms - CHECKOUT_WINDOW_MS

    def log_git_writes(self) -> None:
        """What git wrote as HEAD moved (a checkout, pull, reset, merge or
        rebase; not a commit, whose files somebody edited, but what a merge
        concluded by one brought in; and what a merge or cherry-pick stopped
        on a conflict brought in) is no work done
        here: the edits logged since git wrote each file (its mtime) get the
        origin "checkout", which recent activity leaves out (an edit made
        just before, by somebody, keeps its origin); a fact anchored to that
        code still reads as stale. A file edited since, differing from the
        new HEAD, keeps its origin. So for each repository inside the root
        too (a submodule, a clone), whose HEAD `git submodule update` or a
        checkout in it moves. The commit each repository's log was
        reconciled with is kept in the store (the root's first one as a
        store's first whole pass begins), so a move made while no daemon
        ran, or during that pass, is found by the next call; called after
        whole passes and
        before recent activity answers, whose reads see it. Never fails what
        it serves (the store refusing the write, git missing): the log is
        reconciled later."""
        if self.buffers_only:
            return
        try:
            reconciled = self.store.meta()
            for repository in ("", *self._repositories_inside()):
                self._log_git_writes_in(repository, reconciled)
        except (StoreUnavailable, WriteFailed) as exc:
            log.debug("edit log not reconciled with git: %s", exc)

    def _first_reconciled_commit(self) -> None:
        """Before a store's first whole pass: the commit it indexes is the
        one the edit log is reconciled with (there was none), so a checkout
        during that pass is git's, not a disk edit of every file it changed
        that the pass had read."""
        if self.buffers_only:
            return
        try:
            if EDITS_HEAD_KEY in self.store.meta() or (head := head_commit(self.root)) is None:
                return
            with self.store.write() as conn:
                conn.execute("INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) "
                             "DO NOTHING", (EDITS_HEAD_KEY, head))
        except (StoreUnavailable, WriteFailed) as exc:  # reconciled from the next move on
            log.debug("edit log not reconciled with git: %s", exc)

    def _repositories_inside(self) -> list[str]:
        """The repositories inside the root holding indexed files, listed
        again after each whole pass (``listed_ns`` moves), not on every
        recent-activity answer."""
        listed_ns, before = self._repositories_listed
        if listed_ns is not None and listed_ns == self.listed_ns:
            return before
        folders = {""}
        for (path,) in self.store.reader().execute("SELECT path FROM files"):
            folder = path.rpartition("/")[0]
            while folder not in folders:
                folders.add(folder)
                folder = folder.rpartition("/")[0]
        repositories = repositories_among(self.root, folders)
        if listed_ns is not None:  # not this process's first listing
            self._repositories_came.update(set(repositories) - set(before))
        self._repositories_listed = (self.listed_ns, repositories)
        return repositories

    def _log_git_writes_in(self, repository: str, reconciled: dict[str, str]) -> None:
        """``log_git_writes`` for one repository ("" the root's; else its
        folder), whose reconciled commit is ``reconciled``'s key for it. A
        move's files are reconciled again by each call for CHECKOUT_WINDOW_MS
        after it (and by the first call after that), each only while it is
        as git wrote it: their edits may be logged after the move was found
        (a pass or an answer reconciled a submodule as `git submodule update`
        wrote it, before the watcher's batch of its files was handled)."""
        where = self.root / repository if repository else self.root
        prefix = repository + "/" if repository else ""
        key = f"{EDITS_HEAD_KEY}:{repository}" if repository else EDITS_HEAD_KEY
        new = head_commit(where)
        old = reconciled.get(key)
        # A repository that came while this process followed the root (`git
        # submodule update --init`, a clone): every file it checked out is git's.
        came = old is None and repository in self._repositories_came
        moved = new is not None and old != new
        if moved:
            self._repositories_came.discard(repository)
            move = (_latest_written_move(head_moves(where, HEAD_MOVES_READ), old)
                    if old is not None or came else None)
            written = self._written_by_move(where, old, move) if move is not None else None
            # A repository that came is reconciled first at a whole pass, maybe
            # after a later move rewrote what it checked out (its files'
            # batches came after the pass `git submodule update --init`
            # started): every edit of its files since it was made is git's.
            began = (head_moves(where) or [None])[-1] if came and written else None
            since = {prefix + path: began.at if began is not None
                     else self._written_at(prefix + path, move.at) for path in written or ()}
            writes = _GitWrites(since, {path: _mtime_ms(self.root / path) for path in since},
                                now_ms() + CHECKOUT_WINDOW_MS)
            if (previous := self._git_writes.get(repository)) is not None:
                writes = previous.followed_by(writes)
            self._git_writes[repository] = writes
        else:
            writes = self._git_writes.get(repository)
            if (stopped := self._stopped_operation_writes(where, prefix, repository)) is not None:
                writes = stopped if writes is None else writes.followed_by(stopped)
                self._git_writes[repository] = writes
            if writes is None:
                return
            if now_ms() > writes.until:  # this call is its last, but for files under a buffer:
                # closed unsaved, however late, it logs what git wrote under it.
                under_buffers = writes.narrowed(set(self.open_buffers()))
                if under_buffers.since:
                    self._git_writes[repository] = under_buffers
                else:
                    self._git_writes.pop(repository, None)
        since = {path: ts for path, ts in writes.since.items()
                 if _mtime_ms(self.root / path) == writes.mtimes[path]}
        if not since and not writes.rewritten and not moved:
            return
        with self.store.write() as conn:
            if since or writes.rewritten:
                rows = conn.execute("SELECT id, path, ts FROM edits WHERE ts >= ? "
                                    "AND origin = 'disk'",
                                    (min([*since.values(), *writes.rewritten.values()]),)
                                    ).fetchall()
                ids = [row[0] for row in rows if (row[1] in since and row[2] >= since[row[1]])
                       or writes.rewritten.get(row[1]) == row[2]]
                conn.execute("UPDATE edits SET origin = 'checkout' "
                             "WHERE id IN (SELECT value FROM json_each(?))", (json.dumps(ids),))
            if moved:
                conn.execute("INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) "
                             "DO UPDATE SET value = excluded.value", (key, new))
        self.store.renew_snapshot()

    def _stopped_operation_writes(self, where: Path, prefix: str,
                                  repository: str) -> _GitWrites | None:
        """A merge or cherry-pick stopped on a conflict leaves HEAD where it
        was: the files it took whole from the commit it brings in, as git
        wrote them, are git's (the conflicted ones are the user's to
        resolve). Found once per such commit; None when there is nothing new."""
        bringing = stopped_operation_commit(where)
        if bringing == self._stopped_operations.get(repository):
            return None
        self._stopped_operations[repository] = bringing
        written = written_by_checkout(where, "HEAD", bringing) if bringing is not None else None
        if not written:
            return None
        found = now_ms()
        since = {prefix + path: self._written_at(prefix + path, found) for path in written}
        return _GitWrites(since, {path: _mtime_ms(self.root / path) for path in since},
                          found + CHECKOUT_WINDOW_MS)

    @staticmethod
    def _written_by_move(where: Path, old: str | None, move: HeadMove) -> set[str] | None:
        """What git wrote as HEAD moved from ``old`` on to ``move`` and that
        nobody changed since: for a merge committed once its conflicts were
        resolved, the files it took whole from the branch merged in (not
        those both branches changed, the conflicts among them)."""
        if not move.reason.startswith("commit"):
            return written_by_checkout(where, old, move.commit)
        written = written_by_checkout(where, f"{move.commit}^1", move.commit)
        brought = taken_from_merged_branch(where, move.commit) if written else None
        return written & brought if written and brought is not None else None

    def refresh_stale(self, paths: list[str]) -> set[str]:
        """Re-index those of ``paths`` whose file on disk is not what their
        rows were made from (size and mtime first, then the content hash);
        returns those whose rows changed. An open buffer is the truth and is
        indexed by its own updates."""
        if self.buffers_only:
            return set()
        changed = set()
        wanted = [path for path in dict.fromkeys(paths) if self.buffer_text(path) is None]
        if not wanted:
            return changed
        rows = {row["path"]: row for row in self.store.reader().execute(
            "SELECT path, size, mtime_ns, source, indexed_at FROM files "
            f"WHERE path IN ({','.join('?' * len(wanted))})", wanted)}
        unseen = [path for path in wanted if path not in rows and stat_signature(self.root, path)]
        if unseen:
            # On disk and in no row: written a moment ago, its watcher batch
            # not in yet (`get` or `outline` of the file an agent just wrote).
            # Indexed now under a new file's rules (indexable, not ignored);
            # not "changed": no earlier answer pointed into it. While an empty
            # store is filled for the first time it is only a file that pass
            # has not reached: read, not edited, so no edit is logged.
            try:
                self.files_changed_on_disk(unseen, log_edits=self.indexer.fills_empty_store is False)
            except WriteFailed:  # remembered: fresh_answer leaves its hits out
                pass
        for path in wanted:
            row = rows.get(path)
            if row is None:
                continue
            # A stat equal to the row's is trusted unless racy (then: hashed).
            if row["source"] == "disk" and \
                    (row["mtime_ns"], row["size"]) == stat_signature(self.root, path) and \
                    not racy(row["mtime_ns"], row["indexed_at"]):
                continue
            try:
                if self._written_edit(path, lambda: self.indexer.reindex_from_disk(path)):
                    changed.add(path)
            except WriteFailed:  # remembered: fresh_answer leaves its hits out
                continue
        for path in changed:
            self._mark_urgent(path)
        return changed

    def fresh_answer(self, answer: Callable[[], T], paths_of: Callable[[T], list[str]],
                     without: Callable[[T, set[str]], T],
                     found_nothing: Callable[[T], bool] | None = None) -> T:
        """``answer()`` computed from rows that match the disk in every file
        it points into. Files changed since their rows were made (the
        watcher's batch not in yet, or no watcher) are re-indexed and the
        answer computed again; its new files may be stale in turn (a checkout
        under way), so after FRESH_RETRIES what still changed is left out
        (``without``) rather than served with old lines. An answer that
        ``found_nothing`` points into no file to check: a name in a file
        written a moment ago is in no batch the watcher handed over yet, or
        in the pass a checkout's batch started, so it is computed again once
        the watcher caught up with the disk, waited for up to the ready wait
        (``readyWaitMs``; 2026-12-07: 1 s, shorter than a checkout's pass,
        and "not defined" came back). Still behind then, the answer is
        partial (``partial_reason``: the pass under way)."""
        result = self._checked_answer(answer, paths_of, without)
        if found_nothing is not None and found_nothing(result) \
                and self.disk_caught_up(self.options.ready_wait_s):
            result = self._checked_answer(answer, paths_of, without)
        return result

    def caught_up_with_disk(self) -> str | None:
        """Before a ranked answer: wait (at most DISK_CATCH_UP_S) until what
        was written on disk before now is indexed, the watcher's batch not
        handed over yet included (a file an agent wrote a moment ago: its
        words match none of the rows an answer points into, so
        ``fresh_answer``'s checks cannot bring it in). Returns why the answer
        may miss such files when the watcher is still behind then, else None.
        Without a native watch (polled, off) there is no moment to wait for:
        None, as before."""
        follower = self.follower
        if follower is None or follower.mode != "native":
            return None
        if follower.caught_up(DISK_CATCH_UP_S):
            return None
        return "files changed on disk a moment ago are still being indexed"

    def disk_caught_up(self, timeout: float) -> bool:
        """Whether what was written before now is indexed, a pass it started
        included (waiting for the watcher at most ``timeout`` s); False
        without a native watch."""
        follower = self.follower
        return follower is not None and follower.caught_up(timeout)

    def _checked_answer(self, answer: Callable[[], T], paths_of: Callable[[T], list[str]],
                        without: Callable[[T, set[str]], T]) -> T:
        for _ in range(FRESH_RETRIES):
            check_cancelled()
            # Each round reads one snapshot, taken after the serial it is checked against.
            self.store.renew_snapshot()
            serial = self.indexer.row_serial
            result = answer()
            paths = paths_of(result)
            self.refresh_stale(paths)
            # Rows re-indexed now, or by the watcher while the answer was computed.
            changed = self.indexer.rows_written_since(serial, paths)
            if not changed:
                self._answered_from(paths)
                return self._without_unwritten(result, paths, without)
        result = without(result, changed)
        self._answered_from([path for path in paths if path not in changed])
        return self._without_unwritten(result, paths, without)

    def _answered_from(self, paths: list[str]) -> None:
        """Remember the text (its rows' hash, in the snapshot the answer read)
        each of ``paths`` had when an answer pointed into it (``get``'s
        StalePointer compares with it)."""
        wanted = list(dict.fromkeys(paths))
        if not wanted:
            return
        rows = self.store.reader().execute(
            f"SELECT path, hash FROM files WHERE path IN ({','.join('?' * len(wanted))})",
            wanted).fetchall()
        with self._answered_lock:
            self._answered_hashes.update((row["path"], row["hash"]) for row in rows)

    def _without_unwritten(self, result: T, paths: list[str],
                           without: Callable[[T, set[str]], T]) -> T:
        """``result`` less its hits in files whose latest text the store
        refused: their rows are older than that text, and would lay old
        lines over it (the answer says why it may miss them)."""
        with self._unwritten_lock:
            unwritten = self._unwritten.keys() & set(paths)
        return without(result, unwritten) if unwritten else result

    def await_index(self, from_stored: bool = True) -> None:
        """Before an answer from the index: wait (at most ``ready_wait_s``) for
        the first pass, and for a burst's pass. Raises IndexNotReady when the
        first pass is still running then; a burst still running leaves the
        answer partial. ``from_stored``: no wait for the first pass where the
        store holds an index a whole pass completed (its answer is partial).
        Never waits for a store that cannot open or a pass that failed:
        those answer with their own errors."""
        self.write_unwritten()
        if self._cold_done.is_set() and not self.indexing:
            # The first pass may have ended after the request's snapshot was
            # taken (`get` reads memory first): renewed, its reads see the pass.
            self.store.renew_snapshot()
            return
        if not self._first_pass_due or self.store.error is not None or self.index_error is not None:
            return
        if from_stored and self.stored_index_complete():
            # A restart on an index a whole pass left complete: its rows
            # answer now, partial, while this process's first pass checks
            # what changed since (a 100,000-file tree's took 27 s).
            self.store.renew_snapshot()
            return
        deadline = time.monotonic() + self.options.ready_wait_s
        if not self._cold_done.wait(self.options.ready_wait_s):
            progress = self.progress
            done, total = (progress.done, progress.total) if progress.indexing else (0, 0)
            elapsed = time.monotonic() - progress.started
            rate = done / elapsed if done and elapsed > 0 else 0.0
            retry = (total - done) / rate if rate else max(self.options.ready_wait_s, 1.0)
            raise IndexNotReady(str(self.root), done, total, max(1, round(retry)))
        self._pass_idle.wait(max(deadline - time.monotonic(), 0.0))
        # The request's snapshot may predate the pass it waited for (a read
        # before this wait took it): renewed, its reads see the pass. Without
        # this a `get` of a fresh session answered "not found" for a file the
        # first pass had just indexed.
        self.store.renew_snapshot()

    def stored_index_complete(self) -> bool:
        """Whether the store holds the rows of a whole pass of this index
        format (an earlier process's, or this one's), whatever this process's
        first pass has done yet."""
        if self._stored_complete is None:
            try:
                self._stored_complete = self.store.meta().get(INDEX_COMPLETE_KEY) == INDEX_STAMP
            except EngineError:  # unreadable now: wait for the pass, as without such rows
                return False
        return self._stored_complete

    def _mark_index_complete(self) -> None:
        """After a whole pass: its rows are a complete index of this format
        (read first: a repair since may have deleted the mark with rows)."""
        try:
            if self.store.meta().get(INDEX_COMPLETE_KEY) != INDEX_STAMP:
                with self.store.write() as conn:
                    conn.execute("INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) "
                                 "DO UPDATE SET value = excluded.value", (INDEX_COMPLETE_KEY, INDEX_STAMP))
            self._stored_complete = True
        except (StoreUnavailable, WriteFailed) as exc:  # the next restart waits for its pass
            log.debug("index not marked complete: %s", exc)

    def index(self, pathspecs: list[str] | None = None, force: bool = False,
              progress: ProgressCallback | None = None) -> IndexStats:
        """An explicit pass; a forced one re-chunks everything and logs no edits."""
        if pathspecs is not None and len(pathspecs) > MAX_PATHSPECS:
            raise InvalidParams("paths", f"must hold at most {MAX_PATHSPECS} pathspecs "
                                "(none: the whole folder)")
        if force:
            self.store.verify()  # a damaged store is rebuilt first: the forced pass always works
        if pathspecs is None and not force:
            return self._logged_whole_pass(progress, None)
        return self._pass(pathspecs, force, not force, progress, None)

    def _logged_whole_pass(self, progress: ProgressCallback | None,
                           cancel: threading.Event | None) -> IndexStats:
        """An incremental pass over every file, logging the edits it finds.
        Rows a buffer's text left in the store when the process that had it
        open ended without closing it (an editor or daemon killed) go back
        to the disk's text first, logged only as ``close_buffer`` logs (the
        pass logged a definition only ever typed, never written, as removed
        on disk); they count as the pass's updates and removals."""
        updated = removed = 0
        if not self.buffers_only and not self._closing.is_set():
            left = [FileState(**dict(row)) for row in self.store.reader().execute(
                "SELECT id, path, size, mtime_ns, hash, source, indexed_at FROM files "
                "WHERE source = 'buffer'")]
            for state in left:
                if self.buffer_text(state.path) is not None:  # open here: its rows are its own
                    continue
                if self._written_edit(state.path, lambda state=state: self.indexer.reindex_from_disk(
                        state.path, log_edits=self._written_on_disk_since(state))):
                    if self.store.file_state(state.path) is None:
                        removed += 1
                    else:
                        updated += 1
        stats = self._pass(None, False, True, progress, cancel)
        # The pass found those files as their rows now are: unchanged.
        stats.updated += updated
        stats.unchanged -= updated
        stats.removed += removed
        return stats

    def _written_on_disk_since(self, state: FileState) -> bool:
        """Whether the file behind a buffer's rows ``state`` was written (or
        removed) on disk since the buffer took over: going from a buffer's
        rows back to the disk's text is an edit only then (a disk edit, dated
        by its mtime), never when it only drops text the editor discarded.
        The rows keep the disk's stat from then (Indexer.shadowed_disk_signature)."""
        signature = stat_signature(self.root, state.path)
        # Gone, or unreadable: its rows going is a disk edit.
        return signature in (None, UNKNOWN_SIGNATURE) or signature != (state.mtime_ns, state.size)

    def _pass(self, pathspecs, force, log_edits, progress, cancel, burst: bool = False,
              reported: frozenset[str] = frozenset()) -> IndexStats:
        # This pass's own progress: a pass queued behind another (it waits
        # for the indexer's lock) must neither take that one's counts nor
        # have its end say this one is over.
        mine = IndexProgress(indexing=True, burst=burst)

        def report(done: int, total: int) -> None:
            mine.done, mine.total = done, total
            self.progress = mine  # the pass reporting is the one running
            if progress is not None:
                progress(done, total)

        with self._passes_lock:  # close() sets _closing under it: a pass starts before, or not at all
            if self._closing.is_set():
                raise Cancelled()
            self._passes_running += 1
            self._pass_idle.clear()
        self.progress = mine
        started = time.perf_counter()
        listed_ns = time.time_ns()  # before the listing: what changes after it is newer
        for tier in self._tiers:
            tier.pause()
        if pathspecs is None:
            self._first_reconciled_commit()
        try:
            stats = self.indexer.run_pass(pathspecs, force, log_edits, report,
                                          _EitherSet(cancel, self._closing), reported)
            if pathspecs is None:
                self.store.drop_all_orphan_vectors()
                self.listed_ns = listed_ns
                self.log_git_writes()  # a move while no daemon ran: its edits are git's
                self._mark_index_complete()
                self._cold_done.set()
            self.index_error = None
        except (Cancelled, RequestCancelled):  # stopped, not failed: the next pass resumes
            raise
        except Exception as exc:  # status says why until a pass succeeds
            self.index_error = exc if isinstance(exc, EngineError) else EngineError(
                f"indexing failed: {exc}")
            raise
        finally:
            mine.indexing = False
            with self._passes_lock:  # passes overlap (one waits for the indexer's lock)
                self._pass_ended = time.monotonic()
                self._passes_running -= 1
                if not self._passes_running:
                    self._pass_idle.set()
            for tier in self._tiers:
                tier.resume()
                tier.notify()
        log.info("indexed %s in %.2fs: %s", self.root, time.perf_counter() - started, stats)
        return stats

    def open_buffers(self) -> dict[str, str]:
        with self._buffers_lock:
            return dict(self._buffers)

    def buffer_text(self, path: str) -> str | None:
        with self._buffers_lock:
            return self._buffers.get(path)

    def set_buffer(self, path: str, text: str) -> bool:
        """Make an open buffer with unsaved text the truth for ``path`` and
        index it now, when discovery's filter wants the file (a gitignored
        one it does: opened, it is read). Returns False when nothing
        changed. A buffer whose text is the disk's (opened, or reloaded
        after a write on disk, nothing unsaved) is no truth of its own: the
        disk is followed under it, so a later write is not hidden, and a
        reload is the disk's edit, not the editor's."""
        if not self.indexer.wanted(path):
            # The include/exclude options and .git/ or .ctxls/ hold for a
            # buffer as for the disk: an excluded file or git's COMMIT_EDITMSG
            # opened in an editor was indexed, and recalled while open.
            return False
        text = indexed_buffer_text(text)
        if self.buffer_text(path) is None and self._is_disk_text(path, text):
            return False
        with self._buffers_lock:
            self._buffers[path] = text
        self._defer_embedding()
        changed = self._written_edit(path, lambda: self.indexer.index_buffer(path, text))
        if changed:
            self._mark_urgent(path)
        return changed

    def _is_disk_text(self, path: str, text: str) -> bool:
        """Whether ``text`` is what the file indexed from disk at ``path``
        holds now; a write its rows do not have yet (the watcher's batch not
        in) is indexed first, as the disk's edit. Read only when the file's
        stat moved since its rows were made."""
        state = self.store.file_state(path) if not self.buffers_only else None
        if state is None or state.source != "disk":
            return False  # not indexed from disk (new, ignored): the buffer is indexed
        if (state.mtime_ns, state.size) == stat_signature(self.root, path):
            return state.hash == content_hash(text)
        if self._disk_text(path) != text:
            return False
        self.file_changed_on_disk(path)
        return True

    def _written_edit(self, path: str, write: Callable[[], bool]) -> bool:
        """``write()`` (one file's latest text into the index); one the store
        refuses is remembered (answers say so) and raised."""
        try:
            changed = write()
        except WriteFailed as exc:
            with self._unwritten_lock:
                self._unwritten[path] = exc
            raise
        if self._unwritten:
            with self._unwritten_lock:
                self._unwritten.pop(path, None)
        return changed

    def write_unwritten(self) -> None:
        """Write the edits the store refused, at most every STORE_RETRY_S
        (before answers): once it takes writes again (space freed), answers
        reflect them and stop saying otherwise. Stops at the first refusal."""
        if not self._unwritten or time.monotonic() - self._unwritten_tried < STORE_RETRY_S:
            return
        self._unwritten_tried = time.monotonic()
        with self._unwritten_lock:
            paths = list(self._unwritten)
        for path in paths:
            text = self.buffer_text(path)
            try:  # as the edit came: a buffer's text, or the disk's
                self.set_buffer(path, text) if text is not None else self.file_changed_on_disk(path)
            except WriteFailed:
                return

    def _mark_urgent(self, path: str) -> None:
        for tier in self._tiers:
            tier.mark_urgent(path)

    def _defer_embedding(self) -> None:
        """Someone is typing or asking: the workers keep off the cores a moment."""
        self._quiet_until = time.monotonic() + INTERACTIVE_QUIET_S  # the postings' warm-up too
        for tier in self._tiers:
            tier.defer(INTERACTIVE_QUIET_S)

    def close_buffer(self, path: str, *, listed: bool | None = None) -> None:
        """The buffer is gone: what is on disk is the truth again (for a
        buffers-only engine: nothing is). ``listed``: whether discovery lists
        the file, where the caller has asked already (one `git check-ignore`)."""
        if self.buffers_only:
            self.forget_buffer(path)
            return
        with self._buffers_lock:
            self._buffers.pop(path, None)
        state = self.store.file_state(path)
        # Closed without saving, the buffer's rows give way to the disk's
        # older text: no edit by anyone (the editor's edits are logged as
        # typed). A file written on disk since they were made is one.
        log_edits = state is None or state.source != "buffer" or self._written_on_disk_since(state)
        if state is not None and (not listed if listed is not None else left_out_of_listing(self.root, path)):
            # An ignored file (build output, node_modules) an editor opened:
            # its buffer was indexed, its disk text never is.
            self._written_edit(path, lambda: self.indexer.drop_buffer(path))
            return
        self._written_edit(path, lambda: self.indexer.reindex_from_disk(path, log_edits=log_edits))

    def file_changed_on_disk(self, path: str, log_edits: bool = True) -> None:
        """A save or a watched-file event; an open buffer's unsaved text still
        wins. A buffer the disk now holds (saved) has nothing unsaved: the
        disk is the truth again (the save is not logged twice). A
        buffers-only engine reads no file, whatever its client says changed.
        ``log_edits`` False: a read, not a change (``refresh_stale``)."""
        if self.buffers_only:
            return
        buffered = self.buffer_text(path)
        if buffered is not None:
            if self._disk_text(path) == buffered and not left_out_of_listing(self.root, path):
                self.close_buffer(path, listed=True)
            return
        if self._written_edit(path, lambda: self.indexer.reindex_from_disk(path, log_edits=log_edits)):
            self._mark_urgent(path)  # recall by meaning sees it first

    def files_changed_on_disk(self, paths: list[str], log_edits: bool = True) -> None:
        """Watched-file events: new files must also pass .gitignore. A file
        neither indexable nor indexed costs nothing: the store's own files
        change with every write, and an editor watching ``**/*`` reports them
        (handling them by a write of their own kept the event stream going)."""
        indexed = {p for p in paths if self.store.file_state(p) is not None}
        paths = [p for p in paths if p in indexed or self.indexer.wanted(p)]
        ignored = ignored_paths(self.root, [p for p in paths if p not in indexed])
        refused: WriteFailed | None = None
        for path in paths:
            if path not in ignored:
                try:
                    self.file_changed_on_disk(path, log_edits)
                except WriteFailed as exc:  # remembered: every refused file is written later
                    refused = exc
        if refused is not None:
            raise refused
        if paths and self.index_error is not None:
            self._store_writes.set()  # written: a first pass waiting to be tried again goes now

    def forget_buffer(self, path: str) -> None:
        """For a private store: a closed buffer outside every folder leaves no rows."""
        with self._buffers_lock:
            self._buffers.pop(path, None)
        self._written_edit(path, lambda: self.indexer.drop_buffer(path))

    # -- queries -------------------------------------------------------------

    def recall(self, query: str, kinds: list[str] | None = None, n: int = 10,
               body: bool = False, mode: str = "hybrid", scope: Scope = EVERYTHING,
               log: bool = False) -> RecallResult:
        """The best ``n`` hits per kind. Written memory (facts, episodes, and
        documents next to file docs) is searched within ``scope``; ``log``
        appends every hit to the demand log."""
        if not isinstance(query, str) or not query.strip():
            raise InvalidParams("query", "must be a non-empty string")
        if len(query) > MAX_QUERY_CHARS:
            raise InvalidParams("query", f"must be at most {MAX_QUERY_CHARS} characters (for an "
                                "issue or a log pasted whole, use ctxls/locate)")
        if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= MAX_RECALL_N:
            raise InvalidParams("n", f"must be an integer from 1 to {MAX_RECALL_N}")
        if mode not in RECALL_MODES:
            raise InvalidParams("mode", f"must be one of {', '.join(RECALL_MODES)}")
        kinds = list(RECALL_KINDS) if kinds is None else kinds
        for kind in kinds:
            if kind not in RECALL_KINDS:
                raise InvalidParams("kind", f"unknown kind {kind!r}; known: {', '.join(RECALL_KINDS)}")
        behind_disk = None
        if any(kind in FILE_KINDS for kind in kinds):
            self.await_index()
            behind_disk = self.caught_up_with_disk()
        result = self.fresh_answer(
            lambda: self._recall(query, kinds, n, body, mode, scope),
            lambda result: [h.path for hits in result.hits_by_kind.values()
                            for h in hits if h.uri is not None],
            _recall_without,
            # Hits dropped as their files went (a checkout under way) leave none.
            found_nothing=(lambda result: not any(result.hits_by_kind.get(kind)
                                                  for kind in FILE_KINDS))
            if any(kind in FILE_KINDS for kind in kinds) else None)
        # A pass that started while it was computed (a checkout's batch
        # handed over meanwhile) may hold rows it lacks.
        behind = None if result.partial else self.partial_reason() or behind_disk
        if behind is not None:
            result = replace(result, partial=True, partial_reason=behind)
        # Judged once, on the fresh answer (not on each of fresh_answer's rounds).
        if result.mode != "lexical" and any(result.hits_by_kind.get(kind) for kind in FILE_KINDS) \
                and not _names_a_hit(query, result, self.store.reader()):
            result = replace(result, weak_reason=off_topic(result.topicality))
        if log:
            self.log_demand([h for hits in result.hits_by_kind.values() for h in hits], "recall")
        return result

    def _recall(self, query: str, kinds: list[str], n: int, body: bool, mode: str,
                scope: Scope) -> RecallResult:
        conn = self.store.reader()
        self._defer_embedding()
        semantic = self._semantic_for(mode)
        rescoring = (self._rescoring_tier(semantic) if any(kind in RESCORED_KINDS for kind in kinds)
                     else None)
        memory_semantic = self._memory_semantic_for(mode)
        wants_files = any(kind in FILE_KINDS for kind in kinds)
        ranked_text = declared_name(query)  # what ranking and topicality embed
        if wants_files:
            # The transformer's few milliseconds run on the query pool while
            # the words are counted and BM25 scans here; every later ask of
            # this text (ranking, topicality, memory) waits for that one run.
            for tier in (semantic, rescoring):
                if tier is not None:
                    tier.query_vector_soon(ranked_text)
        partial_reason = self._partial_reason(mode, semantic)
        hits_by_kind: dict[str, list[Hit]] = {}
        file_mode = mode if semantic is not None else "lexical"
        memory_mode = "lexical" if memory_semantic is None else mode
        # Read by the calibration here (words only) and by recall's off-topic
        # test (its one ANN search, of the tier ranking the files, made last).
        terms = query_terms(query)
        # Off-topic is judged on the kinds searched; the calibration was fit
        # on code and docs' coverage and reads that.
        # One read of the terms' counts serves both.
        searched = [k for k in kinds if k in FILE_KINDS]
        found = self._found_terms(terms, {*searched, *CALIBRATED_KINDS}) if wants_files else {}
        coverage = Topicality(_term_share(terms, found, searched), None, None) if wants_files else None
        query_evidence = QueryEvidence(_term_share(terms, found, CALIBRATED_KINDS) if wants_files else 0.0,
                                       len(terms))
        calibration = shipped_calibration()
        # Code first: its BM25 scan is what the query's embedding overlaps.
        scored_by_kind = {
            kind: (hybrid_search(conn, kind, query, n, self.options.ranking, semantic,
                                 dense_only=mode == "semantic",
                                 rescoring=rescoring if kind in RESCORED_KINDS else None)
                   if semantic is not None
                   else lexical_search(conn, kind, query, n, self.options.ranking))
            for kind in kinds if kind in FILE_KINDS}
        memory_down = False
        memory_rows: dict[str, list[MemoryRow]] = {}
        written = [kind for kind in kinds if kind in WRITTEN_KINDS]
        if written:
            try:
                memory_rows = self.memory.search_kinds(written, query, n, scope, memory_semantic,
                                                       dense_only=mode == "semantic")
            except MemoryUnavailable as exc:
                # Code recall never depends on the memory database: answer
                # without memory, marked partial.
                logging.getLogger(__name__).warning("recall without memory: %s", exc.message)
                memory_down = True
        for kind in kinds:
            scored = scored_by_kind.get(kind, [])
            # The cosines the hits carry: the primary's where it scored the fast tier's first hits.
            rescored = rescoring is not None and any(s.rescored for s in scored)
            file_model = ((rescoring if rescored else semantic).embedder.name
                          if semantic is not None else None)
            hits = self._labelled([self._hit(s, body, file_mode, file_model) for s in scored],
                                  conn, query)
            calibrate(hits, calibration, query_evidence)
            if kind in memory_rows:
                memory_model = memory_semantic.embedder.name if memory_semantic is not None else None
                written_hits = [memory_hit(row, body, memory_mode, memory_model)
                                for row in memory_rows[kind]]
                calibrate(written_hits, calibration, query_evidence)
                hits = merged_hits(hits + written_hits)
            hits_by_kind[kind] = hits[:n]
        if memory_down:
            partial_reason = "; ".join(filter(None, [partial_reason, "written memory is unavailable"]))
        topicality = (with_written(self._with_nearest(coverage, semantic, ranked_text),
                                   [h for hits in hits_by_kind.values() for h in hits])
                      if coverage is not None else None)
        return RecallResult(hits_by_kind, partial=partial_reason is not None,
                            partial_reason=partial_reason, mode=file_mode, topicality=topicality)

    def partial_reason(self) -> str | None:
        """Why a keyword (lexical) answer may miss rows it should hold, or
        None: recall's ``partialReason`` without the ranking tiers' reasons
        (what the symbol and impact answers say)."""
        return self._partial_reason("lexical", None)

    def index_refusal(self, path: str | None = None) -> EngineError | None:
        """The store's refusal the index lacks rows for (a full disk, a
        read-only store), or None: the failed pass's, else the last refused
        edit's (what ``status`` reports); with ``path``, only a refusal of
        that file's latest text (its rows are left out of answers: fresh_answer)."""
        with self._unwritten_lock:
            if path is not None:
                return self._unwritten.get(path)
            return self.index_error or next(reversed(self._unwritten.values()), None)

    def _partial_reason(self, mode: str, semantic: SemanticIndex | None) -> str | None:
        """Why an answer in ``mode`` may miss rows it should rank, or None."""
        if self.indexing and self.progress.burst:
            # The count once the pass has listed the files (0 of 0 before).
            counted = (f" ({self.progress.done} of {self.progress.total} files)"
                       if self.progress.total else "")
            return f"re-indexing after a change on disk{counted}"
        if self.index_error is not None:
            return f"the index could not be updated ({self.index_error}): answers come from what it holds"
        unwritten = []
        if self._unwritten:  # the recall path: no lock unless an edit was refused
            with self._unwritten_lock:
                unwritten = list(self._unwritten.values())
        if unwritten:
            return (f"the index could not take the latest text of {len(unwritten)} "
                    f"file{'s' if len(unwritten) > 1 else ''} ({unwritten[-1]}): answers may not "
                    "reflect it")
        if not self.cold_index_done and self.stored_index_complete():
            return "checking for changes made since the index was last updated: answers come from it as it was left"
        if not self.cold_index_done or self.indexing:
            return "indexing is still running"
        if mode == "lexical" or self.semantic is None:
            if mode == "semantic":
                return "embeddings are off: ranked by keywords (BM25) instead of meaning"
            return None
        if self.semantic.failed is not None and semantic is None:
            return (f"the embedding model failed ({self.semantic.failed}): ranked by keywords "
                    "(BM25) only") if mode == "semantic" else None
        pending = self.semantic.pending()
        if semantic is None:
            if pending == 0 and self.store.reader().execute("SELECT 1 FROM chunks LIMIT 1").fetchone() is None:
                return None  # nothing indexed (an empty repository): nothing to miss
            return (f"no vectors yet ({pending} chunks waiting to be embedded{self._embedding_paused()}): "
                    "ranked by keywords (BM25) only")
        reasons = [self.serving_text()] if semantic is self.fast_semantic else []
        if semantic.pending():
            reasons.append(f"{semantic.pending()} chunks still lack a vector{self._embedding_paused()}: "
                           "ranking by meaning does not see them yet")
        return "; ".join(reasons) or None

    def _embedding_paused(self) -> str:
        """`; embedding is paused: …` while a tier's worker waits for the
        store to take its writes (a full disk …), else ''."""
        paused = next((tier.paused for tier in self._tiers if tier.paused is not None), None)
        return (f"; embedding is paused ({paused}) until the store takes writes again"
                if paused is not None else "")

    def serving_text(self) -> str:
        """`semantic: fast tier (ctxls-code-static-256), its first hits scored by
        ctxls-code-minilm-int8 while it embeds 1200/25000`: which tier ranks by
        meaning, and how far the primary is."""
        assert self.semantic is not None and self.fast_semantic is not None
        if self.semantic.failed is not None:
            return (f"semantic: fast tier ({STATIC_MODEL_NAME}): the embedding model failed "
                    f"({self.semantic.failed})")
        done, pending = self.semantic.vector_count(), self.semantic.pending()
        return (f"semantic: fast tier ({STATIC_MODEL_NAME}), its first hits scored by "
                f"{self._primary_model_name()} while it embeds {done}/{done + pending}")

    def _primary_model_name(self) -> str:
        if self.semantic is not None and self.semantic.embedder is not None:
            return self.semantic.embedder.name
        return self.options.embed_model or DEFAULT_MODEL_NAME

    def locate(self, text: str, n: int = 10, include_tests: bool = False) -> list[LocatedFile]:
        """The files to change for an issue text (index/locate.py), best first."""
        if not isinstance(text, str) or not text.strip():
            raise InvalidParams("text", "must be a non-empty string")
        if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= MAX_LOCATE_N:
            raise InvalidParams("n", f"must be an integer from 1 to {MAX_LOCATE_N}")
        text = locate_text_kept(text)
        self.await_index()
        self.caught_up_with_disk()  # a file written a moment ago is ranked too
        return self.fresh_answer(
            lambda: self._located_definitions(self.locator.locate(
                self.store.reader(), text, n, include_tests, semantic=self._semantic_for("semantic"))),
            lambda located: [f.path for f in located],
            lambda located, changed: [f for f in located if f.path not in changed])

    def topicality(self, query: str, meaning: bool = True,
                   kinds: list[str] | None = None) -> Topicality:
        """How much of this repository is about ``query`` at all, whatever the
        ranking: the share of its terms that occur anywhere in the indexed
        files of ``kinds`` (every file kind when None, as recall searches),
        and the cosine of the nearest vector (None without vectors, or
        without ``meaning``: words only, no nearest-neighbour search).
        ``ctxls/assemble`` abstains on off-topic questions with it."""
        semantic = self._semantic_for("semantic") if meaning else None  # the tier serving now
        searched = FILE_KINDS if kinds is None else [k for k in kinds if k in FILE_KINDS]
        return self._with_nearest(self._term_coverage(query_terms(query), searched), semantic, query)

    def _term_coverage(self, terms: list[str], kinds: Sequence[str]) -> Topicality:
        """``topicality`` without the nearest vector: the share of the query's
        ``terms`` found anywhere in the files of ``kinds`` (2026-12-07: code
        and docs only, so a word only in the config files searched read as
        off-topic)."""
        return Topicality(_term_share(terms, self._found_terms(terms, kinds), kinds), None, None)

    def _found_terms(self, terms: list[str], kinds: Iterable[str]) -> dict[str, set[str]]:
        """Per file kind, which of ``terms`` occur in its files."""
        conn = self.store.reader()
        # Document counts kept per reader while the tables are unchanged: no
        # FTS probe per term on each recall.
        found = {}
        for kind in kinds:
            counts = term_counts(conn, FTS_TABLE_BY_KIND[kind]).of(conn, FTS_TABLE_BY_KIND[kind], terms)
            found[kind] = {term for term in terms if counts[term]}
        return found

    @staticmethod
    def _with_nearest(coverage: Topicality, semantic: SemanticIndex | None,
                      query: str) -> Topicality:
        if semantic is None:
            return coverage
        vector = semantic.query_vector(query)
        best = semantic.nearest(vector, 1) if vector is not None else []
        return replace(coverage, nearest_cosine=best[0][1] if best else None,
                       model=semantic.embedder.name)

    def log_demand(self, hits: list[Hit], action: str) -> None:
        """Append these hits to the demand log ("recall", or "fetch" for a get)."""
        self.demand.record([Demand(h.path, h.kind, h.symbol, h.scope) for h in hits], action)

    def _semantic_for(self, mode: str) -> SemanticIndex | None:
        """The semantic tier this query of code and docs ranks with; None means
        BM25 only (lexical mode, embeddings off or broken, or no vector stored yet)."""
        tier = self.serving_tier() if mode != "lexical" else None
        return tier if tier is not None and tier.ensure_loaded() else None

    def serving_tier(self) -> SemanticIndex | None:
        """The primary tier once at most TAKEOVER_BACKLOG rows lack its vector,
        else the tier with fewer rows left (the fast one, complete seconds
        after indexing); only tiers with vectors and a model that did not fail.
        One tier ranks a query: cosines of two models are never fused."""
        usable = [tier for tier in (self.semantic, self.fast_semantic)
                  if tier is not None and tier.failed is None and tier.has_vectors()]
        if not usable:
            return None
        if usable[0] is self.semantic and self.semantic.pending() <= TAKEOVER_BACKLOG:
            return self.semantic
        return min(usable, key=lambda tier: tier.pending())  # the primary on a tie

    def _rescoring_tier(self, serving: SemanticIndex | None) -> SemanticIndex | None:
        """The primary tier while the fast one serves and the primary's model
        loads: it scores the fast tier's first hits again (ranking._rescored).
        None otherwise."""
        primary = self.semantic
        if serving is None or serving is not self.fast_semantic or primary is None:
            return None
        return primary if primary.failed is None and primary.ensure_loaded() else None

    def _memory_semantic_for(self, mode: str) -> SemanticIndex | None:
        """Written memory has vectors of the primary model only (in this store,
        or in PostgreSQL, where only the model has to load)."""
        primary = self.semantic
        if mode == "lexical" or primary is None or primary.failed is not None:
            return None
        if self.memory.backend.kind == "sqlite" and not primary.has_vectors():
            return None
        return primary if primary.ensure_loaded() else None

    def _hit(self, scored: ScoredChunk, body: bool, mode: str, model: str | None) -> Hit:
        """A file chunk as a recall hit, ranked in ``mode`` with ``model``'s cosines."""
        last_line = scored.text.rsplit("\n", 1)[-1]
        score = round(scored.score, 6)
        return Hit(path=scored.path, uri=self.uri_for(scored.path), kind=scored.kind,
                   format=scored.language, score=score, symbol=scored.symbol,
                   start_line=scored.start_line, end_line=scored.end_line,
                   end_character=line_end_character(last_line), body=scored.text if body else None,
                   why=scored.why or None,
                   evidence=Evidence("file", mode, score, scored.features.similarity, None,
                                     model if mode != "lexical" else None))

    def current_text(self, path: str) -> str | None:
        """The truth for ``path``: its open buffer, else the file on disk
        (None when missing, binary, over the file size bound, or not where
        the file really is: a symlink). Read fresh, never from the index; a
        file that grew past the bound since it was indexed (a log being
        written) is not read whole into an answer."""
        buffered = self.buffer_text(path)
        if buffered is not None or self.buffers_only:
            return buffered
        return self._disk_text(path)

    def _disk_text(self, path: str) -> str | None:
        """The file at ``path`` on disk, as ``current_text`` reads it."""
        limit = byte_limit(path, self.options.discovery.max_file_bytes)
        read = read_file(self.root, path, limit)
        if isinstance(read, Skipped) or len(read[0]) > limit:
            return None
        data = read[0]
        return None if looks_binary(data) else decode_text(data)

    def names_indexed_file(self, item_id: str) -> bool:
        """Whether ``item_id`` names an indexed file of this folder, or lines
        of one as answers print them: then the file is what it names,
        whatever memory was written under that id (another tenant's text
        must never pass for the file's where a code hit pointed)."""
        located = written_location(item_id)
        for candidate in (item_id, located[0] if located is not None else None):
            if candidate is None:
                continue
            try:
                if self.store.file_state(self.relative(candidate)) is not None:
                    return True
            except (OutsideRoot, StoreUnavailable):  # no file of this folder can be answered
                continue
        return False

    def get(self, item_id: str, start_line: int | None = None, end_line: int | None = None,
            scope: Scope = EVERYTHING, log: bool = False) -> Item | None:
        """The indexed file an id names (read fresh), else a written memory
        ``scope`` sees under this id, else, for an id that is neither and ends
        with a location as answers print it (``path:16-18``, ``path:16``,
        ``path:16:5``, ``path#L16-L18``; 1-based), those lines of that file.
        ``log`` appends a "fetch" to the demand log."""
        if not isinstance(item_id, str) or not item_id:
            raise InvalidParams("id", "must be a non-empty string")
        for name, value in (("startLine", start_line), ("endLine", end_line)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
                raise InvalidParams(name, "must be a non-negative integer")
        if start_line is not None and end_line is not None and end_line < start_line:
            raise InvalidParams("endLine", "must not be before startLine")
        direct = None if self.names_indexed_file(item_id) else self.memory.item(
            item_id, scope, start_line, end_line)
        if direct is not None:
            if log:
                self.demand.record([Demand(direct.row.key, direct.row.kind, None, direct.row.scope)],
                                   "fetch")
            return direct_item(direct)
        path = self.relative(item_id)
        self.await_index()
        self.refresh_stale([path])
        state = self.store.file_state(path)
        if state is None:
            located = written_location(item_id)
            unreadable = unreadable_location(item_id) if located is None else None
            # Lines that are no range of a file or memory get answers: the range
            # is wrong, not the id (never "not found").
            if unreadable is not None and (
                    self.memory.item(unreadable[0], scope) is not None
                    or self.store.file_state(self.relative(unreadable[0])) is not None):
                raise InvalidParams("id", unreadable[1])
            if located is not None and (start_line is not None or end_line is not None):
                raise InvalidParams("startLine", f"{item_id!r} names its lines already: give "
                                    f"it alone, or the path {located[0]!r} with startLine/endLine")
            return self.get(*located, scope=scope, log=log) if located is not None else None
        text = self.current_text(path)
        if text is None:
            return None
        provenance = "buffer" if self.buffer_text(path) is not None else "disk"
        # Lines as an editor numbers them: a final newline ends the last line
        # and starts none (a 136-line file is not 137 lines long).
        lines = text.split("\n")
        if lines[-1] == "":
            lines.pop()
        meta: dict = {"lines": len(lines)}
        lines_given: tuple[int, int] | None = None
        digest = content_hash(text)
        with self._answered_lock:
            answered = self._answered_hashes.get(path)
            if start_line is None and end_line is None:
                # The caller holds the current text now: ranges it reads off it are current.
                self._answered_hashes[path] = digest
        if start_line is not None or end_line is not None:
            # A range from an answer given before the file changed: refused,
            # whether or not the watcher has indexed the change since (it was
            # refused only when this get re-indexed the file, so a range kept
            # a second longer read other lines, and a range of lines the
            # caller had just written was refused for a moment). A file no
            # answer pointed into gives its current lines. Or the text
            # changed again while it was read.
            if (answered is not None and answered != digest) or digest != state.hash:
                raise StalePointer(path)
            first = start_line or 0
            last = min(end_line if end_line is not None else len(lines) - 1, len(lines) - 1)
            # A range's lines end as the chunker's do (``split_lines``): a CRLF
            # file's without their "\r", as an LF file's (the whole file keeps them).
            text = "\n".join(line.removesuffix("\r") for line in lines[first:last + 1])
            lines_given = (first, last)
        row = self.store.reader().execute(
            "SELECT language, indexed_at FROM files WHERE id = ?", (state.id,)).fetchone()
        kind = self.store.reader().execute(
            "SELECT kind FROM chunks WHERE file_id = ? LIMIT 1", (state.id,)).fetchone()
        if log:
            self.demand.record([Demand(path, kind[0] if kind else "code", None, None)], "fetch")
        return Item(id=path, kind=kind[0] if kind else "code", format=row["language"],
                    source="file", provenance=provenance, occurred_at=row["indexed_at"],
                    text=text, meta=meta, lines_given=lines_given)

    def status(self) -> dict:
        """Never raises for the store's sake: an unavailable store is reported
        (``store_error``) with zero counts. Python names and values (errors as
        ``EngineError``s): ``wire.status_json`` makes it the protocol's."""
        with self._buffers_lock:
            buffers = len(self._buffers)
        # Read before the counts: a pass ending between the two must not pair
        # "complete" with counts read before its writes (a status said
        # complete with 0 files once, under load).
        indexing, complete = self.indexing, self.cold_index_done
        files_pending = max(self.progress.total - self.progress.done, 0) if indexing else 0
        semantic = self.semantic
        store_error: StoreUnavailable | None = None
        languages: dict = {}
        try:
            with self.store.snapshot():  # the counts of one state
                counts = self.store.counts()
                vectors = semantic.vector_count() if semantic else 0
                embedding = semantic.pending() if semantic and semantic.failed is None else 0
                embeddings = self._describe_embeddings()
                meaning = self.meaning_progress()
                languages = self._language_counts()
        except StoreUnavailable as exc:
            # A damaged store reported, never a failed status (and repaired at its next use).
            store_error = exc
            counts, vectors, embedding, meaning = {"files": 0, "chunks": 0}, 0, 0, None
            embeddings = semantic.describe() if semantic else {"enabled": False, "model": "", "dim": 0}
        memory_error = self.memory.backend.unavailable()
        index_error = self.index_refusal()  # a failed pass, else an edit the store refused
        if store_error is not None or index_error is not None:
            state = "error"  # store_error / index_error say what
        elif indexing or not complete or self.disk_events_waiting():
            state = "indexing"  # the events waiting may start a pass (a checkout's)
        elif embedding and semantic.running:
            state = "embedding"
        elif embedding:
            state = "idle"  # vectors missing, but no worker here computes them
        elif memory_error is not None:
            state = "degraded"  # code is served, written memory is not: memory_error says why
        else:
            state = "ready"
        status = {
            "indexing": indexing,
            "complete": complete,
            "state": state,
            "ready": state == "ready",
            "files": counts["files"],
            "chunks": counts["chunks"],
            "vectors": vectors,
            "pending": files_pending + embedding,
            "progress": {"files": {"done": self.progress.done, "total": self.progress.total}
                         if self.indexing else None,
                         "meaning": meaning},
            "embeddings": embeddings,
            "buffers": buffers,
            "memory": self.memory.backend.describe() | {"reachable": memory_error is None},
            "skipped": reasons_json(self.indexer.skipped),
            "unparsed": reasons_json(self.indexer.unparsed),
            **languages,
            "watch": watch_status(self.follower, self.options.watch),
            "root": str(self.root),
            "db_path": self.store.db_path,
            "version": __version__,
        }
        if store_error is not None:
            status["store_error"] = store_error
        if index_error is not None:
            status["index_error"] = index_error
        if memory_error is not None:
            status["memory_error"] = memory_error
        if self.store.repair is not None:
            status["repaired"] = self.store.repair
        quarantined = self.store.quarantined()
        if quarantined:
            status["quarantined"] = {"stores": [q["path"] for q in quarantined],
                                     "memory": sum(q["memory"] for q in quarantined)}
        return status

    def meaning_progress(self) -> dict | None:
        """How far ranking by meaning is from seeing every chunk, for the one
        progress item (status ``progress.meaning``): the fast tier's vectors
        while it drains (the primary's where there is no fast tier, or where
        the fast tier failed); ``ready`` once the tier that would serve has
        every chunk (the primary then takes over in the background: ``text``
        says how far it is). None without embeddings or with no model."""
        tiers = [tier for tier in (self.fast_semantic, self.semantic)
                 if tier is not None and tier.failed is None]
        if not tiers:
            return None
        tier = tiers[0]
        done, pending = tier.vector_count(), tier.pending()
        model = STATIC_MODEL_NAME if tier is self.fast_semantic else self._primary_model_name()
        if pending:
            text = f"embedding {done}/{done + pending} chunks ({model})"
        elif tier is self.fast_semantic and self.serving_tier() is tier:
            text = f"ranking by meaning; {self.serving_text()}"
        else:
            text = f"ranking by meaning with {self._primary_model_name()}"
        return {"done": done, "total": done + pending, "ready": pending == 0, "text": text}

    def _describe_embeddings(self) -> dict:
        """The primary tier's model, which tier serves, and the fast tier's
        own counts (``vectors`` and ``pending`` of the status are the primary's)."""
        if self.semantic is None:
            return {"enabled": False, "model": "", "dim": 0}
        described = self.semantic.describe()
        serving = self.serving_tier()
        described["serving"] = None if serving is None else (
            "fast" if serving is self.fast_semantic else "primary")
        fast = self.fast_semantic
        if fast is not None:
            described["fast"] = fast.describe() | {
                "model": STATIC_MODEL_NAME, "vectors": fast.vector_count(),
                "pending": fast.pending() if fast.failed is None else 0}
            if serving is fast:
                described["serving_text"] = self.serving_text()
        return described

    def _language_counts(self) -> dict:
        """Status's `languages` (files per language, and whether its
        definitions are read) and `without_grammar` (the files in a known
        language read as line windows, at most STATUS_SKIPPED_LISTED listed)."""
        conn = self.store.reader()
        rows = conn.execute("SELECT language, count(*) FROM files GROUP BY language "
                            "ORDER BY count(*) DESC, language").fetchall()
        languages = {language or "text": {"files": count, "definitions": reads_definitions(language)}
                     for language, count in rows}
        plain = [language for language, info in languages.items()
                 if not info["definitions"] and language not in PLAIN_LANGUAGES]
        marks = ",".join("?" * len(plain))
        count = sum(languages[language]["files"] for language in plain)
        paths = [row[0] for row in conn.execute(
            f"SELECT path FROM files WHERE language IN ({marks}) ORDER BY path LIMIT ?",
            (*plain, STATUS_SKIPPED_LISTED))] if plain else []
        return {"languages": languages, "without_grammar": {"count": count, "files": paths}}

    def trust_quarantined(self) -> dict:
        """Import the written rows of the stores quarantined as not this
        user's own (the user vouches for them): `ctxls trust-memory`."""
        return self.store.import_quarantined()  # new row ids: the embedding backlog reaches them

    def recent_activity(self, days: float | None = None, since: int | None = None,
                        limit: int = 20) -> list[ActivityItem]:
        if days is not None and (isinstance(days, bool) or not isinstance(days, (int, float))
                                 or not 0 < days <= MAX_DAYS):
            raise InvalidParams("days", f"must be a positive number of at most {MAX_DAYS}")
        if since is not None and (isinstance(since, bool) or not isinstance(since, (int, float)) or since < 0):
            raise InvalidParams("since", "must be a non-negative timestamp in ms")
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_RECENT_ITEMS:
            raise InvalidParams("limit", f"must be an integer from 1 to {MAX_RECENT_ITEMS}")
        cutoff = int(since) if since is not None else now_ms() - int((days or 7) * DAY_MS)
        # The first pass logs what changed while no process ran: a session's
        # first question ("where was I?") waits for it, even on a complete
        # stored index (those changes are what it asks about).
        self.await_index(from_stored=False)
        self.caught_up_with_disk()  # an edit made a moment ago is listed too
        self.log_git_writes()
        conn = self.store.reader()
        # Each item's latest edit is one row, its time and who made it (the
        # editor, a buffer; or the disk) both: the row with the latest ts
        # (the last logged of those). A disk edit is dated by its file's
        # mtime, so the row logged last is not always the latest; taking the
        # origin from it and the time from another said "disk" for an edit
        # the editor made.
        rows = conn.execute(
            "SELECT path, symbol, kind, ts, n, origin FROM ("
            " SELECT path, symbol, kind, ts, id, origin,"
            "  sum(coalesce(times, 1)) OVER item AS n,"
            "  row_number() OVER (item ORDER BY ts DESC, id DESC) AS latest"
            " FROM edits WHERE ts >= ? AND (origin IS NULL OR origin != 'checkout')"
            " WINDOW item AS (PARTITION BY path, symbol, kind))"
            " WHERE latest = 1 ORDER BY ts DESC, id DESC LIMIT ?", (cutoff, limit)).fetchall()
        return [ActivityItem(id=r["path"], symbol=r["symbol"], kind=r["kind"],
                             last_edited_at=r["ts"], edits=r["n"], origin=r["origin"])
                for r in rows]

    def file_node(self, path: str) -> graph.FileNode | None:
        """An indexed file's node: its chunks and import-edge counts."""
        return graph.file_node(self.store.reader(), path)

    def related(self, path: str, direction: str = "both",
                hops: int = 1) -> tuple[list[graph.Related], bool]:
        """The files ``hops`` import edges from ``path`` (and whether cut short)."""
        return graph.related(self.store.reader(), path, direction, hops)


    # -- definitions (index/symbols.py) ---------------------------------------

    def symbols(self, query: str, match: str = "fuzzy", kinds: list[str] | None = None,
                limit: int = 50) -> list[Definition]:
        """Definitions named like ``query``, best first (symbols.find_definitions)."""
        self.await_index()
        return self.fresh_answer(
            lambda: symbol_table.find_definitions(self.store.reader(), query, match, kinds, limit),
            lambda found: [d.path for d in found],
            lambda found, changed: [d for d in found if d.path not in changed],
            found_nothing=lambda found: not found)

    def outline(self, path: str) -> list[Definition]:
        """``path``'s definitions as a tree (symbols.outline); [] for a file
        without any, or not indexed. Never waits for the first index: one
        file's rows are there (or made by ``fresh_answer``) without it, and
        editors ask for an outline as soon as a file opens."""
        return self.fresh_answer(lambda: symbol_table.outline(self.store.reader(), path),
                                 lambda tree: [path], lambda tree, changed: [])

    def line_ends(self, path: str, lines: Iterable[int]) -> dict[int, int]:
        """The UTF-16 length of each of ``path``'s ``lines`` the index holds:
        where an LSP range of whole lines ending there ends (symbols.line_ends)."""
        return symbol_table.line_ends(self.store.reader(), path, lines)

    def similar(self, path: str, line: int, n: int = 10) -> tuple[Hit | None, list[Hit], str]:
        """Code like the chunk at ``path``:``line`` (symbols.related): that
        chunk's hit (None when no chunk holds the line), the ``n`` nearest
        other chunks' hits, and how they were found ("semantic": its vector;
        "lexical": its identifiers)."""
        if isinstance(line, bool) or not isinstance(line, int) or line < 0:
            raise InvalidParams("line", "must be a non-negative integer (0-based)")
        self.await_index()

        def answer() -> tuple[Hit | None, list[Hit], str]:
            conn = self.store.reader()
            origin = symbol_table.chunk_at(conn, path, line)
            if origin is None:
                return None, [], "lexical"
            semantic = self._semantic_for("hybrid")
            found = symbol_table.related(conn, origin, n, self.options.ranking, semantic)
            model = semantic.embedder.name if semantic is not None else None
            hits = [self._hit(chunk, False, found.mode, model) for chunk in found.chunks]
            asked = self._labelled([self._hit(origin, False, found.mode, model)], conn, "")[0]
            # The origin is named by the definition at the line asked about.
            at_line = symbol_table.innermost_at(conn, path, line)
            if at_line is not None and len(asked.definitions or []) > 1:
                self._narrow(asked, at_line, conn)
            return asked, self._labelled(hits, conn, ""), found.mode
        return self.fresh_answer(
            answer, lambda result: [path, *(h.path for h in result[1])],
            lambda result, changed: ((None, [], result[2]) if path in changed else
                                     (result[0], [h for h in result[1] if h.path not in changed],
                                      result[2])))

    def _labelled(self, hits: list[Hit], conn: Connection, query: str) -> list[Hit]:
        """File hits with the definitions their chunk holds; a hit whose chunk
        holds the definition the query names becomes that definition's own
        hit (its name, its lines within the chunk: symbols.asked_names), the
        chunk's other definitions, module code and section comments left out.
        Two hits narrowed to the same lines are one."""
        names = symbol_table.asked_names(query) if query else set()
        out: list[Hit] = []
        seen: set[tuple[str, int, int]] = set()
        for hit in hits:
            if hit.uri is not None:
                hit.definitions = symbol_table.definitions_in(conn, hit.path, hit.start_line,
                                                              hit.end_line)
                named = (symbol_table.named_definition(hit.definitions, names, conn)
                         if names else None)
                if named is not None:
                    self._narrow(hit, named, conn)
                key = (hit.path, hit.start_line, hit.end_line)
                if key in seen:
                    continue
                seen.add(key)
            out.append(hit)
        return out

    @staticmethod
    def _narrow(hit: Hit, definition: Definition, conn: Connection) -> None:
        """``hit`` pointed at ``definition``'s lines (within its chunk)."""
        start, end, end_character = symbol_table.clipped(conn, hit.path, hit.start_line,
                                                         hit.end_line, definition)
        if hit.body is not None:
            rows = hit.body.split("\n")
            hit.body = "\n".join(rows[start - hit.start_line:end - hit.start_line + 1])
        hit.end_character = end_character if end_character is not None else hit.end_character
        hit.symbol, hit.start_line, hit.end_line = definition.symbol, start, end
        hit.definitions = [d for d in hit.definitions or [] if start <= d.line <= end]

    def _located_definitions(self, located: list[LocatedFile]) -> list[LocatedFile]:
        """Locate's chunks named by the definition their evidence points into:
        a chunk holding a frame's (or a named symbol's) line becomes the
        innermost definition around that line, at its own lines. The line a
        frame or a written path names (`cart.py:12`, `#L12`) is that line
        before any other evidence's in the chunk (a text match's)."""
        conn = self.store.reader()
        for found in located:
            lines = [r.line for r in sorted(found.reasons, key=lambda r: r.signal not in ("frame", "path"))
                     if r.line is not None]
            refs = []
            for ref in found.chunks:
                inside = [line for line in lines if ref.start_line <= line <= ref.end_line]
                definition = symbol_table.innermost_at(conn, found.path, inside[0]) if inside else None
                if definition is not None and (definition.start_line > ref.start_line
                                               or definition.end_line < ref.end_line):
                    start, end, end_character = symbol_table.clipped(
                        conn, found.path, ref.start_line, ref.end_line, definition)
                    ref = replace(ref, symbol=definition.symbol, start_line=start, end_line=end,
                                  end_character=end_character if end_character is not None
                                  else ref.end_character)
                refs.append(ref)
            found.chunks = refs
        return located


# Status lists this many skipped files (all are counted).
STATUS_SKIPPED_LISTED = 100


@dataclass(frozen=True)
class _GitWrites:
    """The files a repository's HEAD moves, or a merge or cherry-pick stopped
    on a conflict, wrote or removed (``Engine.log_git_writes``)."""
    since: dict[str, int]  # path -> the edits logged from then (ms) are git's
    mtimes: dict[str, int | None]  # path -> its mtime (ms) as git left it; None: removed
    until: int  # reconciled again until then (ms)
    # path -> when an earlier move wrote it (its mtime, ms), which a later one
    # wrote again: the edit dated then is git's, whatever came between.
    rewritten: dict[str, int] = field(default_factory=dict)

    def followed_by(self, later: _GitWrites) -> _GitWrites:
        """This move's record and the next one's of the same repository, as
        one: an edit this move's write was logged with after the next move
        was found (its batch handled late) is git's still."""
        rewritten = {**self.rewritten, **{path: written for path, written in self.mtimes.items()
                                          if path in later.since and written is not None}}
        return _GitWrites({**self.since, **later.since}, {**self.mtimes, **later.mtimes},
                          later.until, rewritten)

    def narrowed(self, paths: set[str]) -> _GitWrites:
        """This record for ``paths`` only."""
        return _GitWrites({path: ts for path, ts in self.since.items() if path in paths},
                          {path: ts for path, ts in self.mtimes.items() if path in paths},
                          self.until,
                          {path: ts for path, ts in self.rewritten.items() if path in paths})


def _latest_written_move(moves: list[HeadMove], old: str | None) -> HeadMove | None:
    """The latest of ``moves`` (the reflog's, latest first) since HEAD was at
    ``old`` that git made writing files (a checkout, pull, reset, merge,
    rebase, or a merge's commit): commits after it are somebody's, and its
    files they changed are not git's. Not only the latest move: a checkout
    and a commit in one batch (`git checkout x && … && git commit`) left the
    checkout's files the user's. None when only commits were made."""
    for move in moves:
        if move.commit == old:
            return None  # HEAD was at ``old`` then: what came before is reconciled
        if not move.reason.startswith("commit") or move.reason.startswith("commit (merge)"):
            return move
    return None


def _mtime_ms(where: Path) -> int | None:
    try:
        return os.stat(where).st_mtime_ns // 1_000_000
    except OSError:
        return None


def _names_a_hit(query: str, result: RecallResult, conn: Connection) -> bool:
    """Is the query one name a hit defines? That definition is the answer,
    whatever the nearest cosine says (a function typed a moment ago has no
    vector yet, and the off-topic thresholds were calibrated on questions)."""
    names = symbol_table.asked_names(query)
    return bool(names) and any(symbol_table.named_definition(hit.definitions or [], names, conn)
                               for kind in FILE_KINDS for hit in result.hits_by_kind.get(kind, []))


def _recall_without(result: RecallResult, changed: set[str]) -> RecallResult:
    """``result`` less the hits in ``changed`` files, saying so."""
    hits_by_kind = {kind: [h for h in hits if h.uri is None or h.path not in changed]
                    for kind, hits in result.hits_by_kind.items()}
    reason = f"{len(changed)} files changed on disk while answering; their hits are left out"
    return RecallResult(hits_by_kind, True, "; ".join(filter(None, [result.partial_reason, reason])),
                        result.mode, topicality=result.topicality)


def reasons_json(reasons: dict[str, str]) -> dict:
    """Files and why (left out of the index; read as line windows), for
    status: every file counted by its reason's kind, the first
    STATUS_SKIPPED_LISTED listed."""
    listed = sorted(dict(reasons).items())
    by_kind = collections.Counter(reason_family(reason) for _, reason in listed)
    return {"count": len(listed), "reasons": dict(by_kind.most_common()),
            "files": [{"path": p, "reason": r} for p, r in listed[:STATUS_SKIPPED_LISTED]]}


def memory_hit(row: MemoryRow, body: bool, mode: str | None = None, model: str | None = None) -> Hit:
    """A written memory as a hit (a recall's: ranked in ``mode`` with
    ``model``'s cosines; None: listed, not ranked): no uri, so no range
    (``end_character`` 0); its chunk is its lines in the whole text; its
    body is read when an answer takes it (BodyBudget)."""
    score = round(row.score, 6)
    evidence = (Evidence("memory", mode, score, row.cosine, row.coverage,
                         model if mode != "lexical" else None) if mode is not None else None)
    return Hit(path=row.key, uri=None, kind=row.kind, format=row.format, score=score,
               symbol=row.symbol, start_line=row.start_line, end_line=row.end_line,
               end_character=0, body=None, meta=row.meta, scope=row.scope,
               read_body=row.text_within if body else None, evidence=evidence)


class _EitherSet:
    """Set when any of its events is (a pass's own cancel, the engine closing)."""

    def __init__(self, *events: threading.Event | None) -> None:
        self._events = [event for event in events if event is not None]

    def is_set(self) -> bool:
        return any(event.is_set() for event in self._events)

    def wait(self, timeout: float) -> bool:
        """Wait until either is set (True) or ``timeout`` seconds pass (False)."""
        deadline = time.monotonic() + timeout
        while not self.is_set():
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            self._events[-1].wait(min(left, 0.1))
        return True


def calibrate(hits: list[Hit], calibration: Calibration, query: QueryEvidence) -> None:
    """Sets ``calibrated`` on one source's ``hits`` (best first)."""
    for hit, value in zip(hits, calibration.calibrate([h.evidence for h in hits], query)):
        hit.calibrated = value


def merged_hits(hits: list[Hit]) -> list[Hit]:
    """Hits of several sources (files and written memory, several folders) in
    one order: by calibrated score. Each source's own order is kept
    (calibration never rises down a source's list, and ties keep the order
    the hits come in)."""
    return sorted(hits, key=lambda h: -h.calibrated)  # stable: ties keep the sources' order


def direct_item(direct: MemoryItem) -> Item:
    row = direct.row
    return Item(id=row.key, kind=row.kind, format=row.format, source="direct",
                provenance=row.author, occurred_at=row.occurred_at, text=direct.text,
                meta=row.meta if row.meta is not None else {}, created_at=row.created_at,
                expires_at=row.expires_at, encoding=direct.encoding)
