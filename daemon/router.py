"""How each method runs: ``ROUTES``, the one table from every method the
daemon serves (LSP's and ``ctxls/*``) to its lane, and ``Router``, which runs
a method's work there. A handler says what to do; this table alone says
where and how (docs/architecture.md, "Request router").

Lanes:

- **inline** — on the event loop, in the order messages arrive: lifecycle,
  and notifications that only record or schedule (a ``didChange`` starts a
  debounce; the indexing it leads to runs in the exclusive lane). Nothing
  inline reads or writes a store.
- **background** — the read pool (``READ_WORKERS`` threads). The request's
  reads see one snapshot of each store it reads (``store.read_snapshot``),
  renewed only by its own writes and by each round of
  ``Engine.fresh_answer``; SQLite's errors leave it as the library's.
- **analysis** — reads as in background, in a pool of their own
  (``ANALYSIS_WORKERS`` threads): impact's sweep (``ctxls/impact``, incoming
  calls, a code lens's resolve), whose work grows with the repository and
  the call sites, not with the answer. Four of them once held every read
  thread for minutes and a recall from another client got no answer; now
  they queue among themselves and the read pool stays free for short reads.
- **exclusive** — writes (edits, memory writes, the stash, re-indexing): the
  write pool (``WRITE_WORKERS`` threads) apart from the reads, so an
  acknowledgement never queues behind a backlog of reads nor a read behind a
  pass. Each transaction holds the store's one writer connection, and whole
  passes hold ``Indexer.pass_lock``: writes to a store are one at a time.

A routed request's work runs under a cancel token (``index/cancel.py``).
``$/cancelRequest`` cancels the task awaiting the work (pygls does it for
the LSP connection, ``socket_server`` for the shared socket); the router then
sets the token, the request is answered -32800 (RequestCancelled) at once,
and the worker stops at its next check (a file of a pass or of the impact
sweep, a round of ``fresh_answer``, a candidate of assemble).

``settles`` (every read of the code, CODE_READ): the request first lets the
buffers just opened and those whose debounce is over reach the index
(``CtxlsServer.settle_buffers``: every editor's, the owner's and its proxied
sessions'), so it answers with the edit just typed, and an outline asked for
as a file opens is that file's. Over LSP and on the shared socket alike
(``CtxlsServer.run_routed``).

The daemon's own jobs (a folder's first index, progress polling) are no
request: they run on asyncio's default executor, outside the lanes.
"""

from __future__ import annotations

import asyncio
import enum
import functools
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, NamedTuple, TypeVar

from lsprotocol import types

from ctxls.index.cancel import CancelToken, cancelling, check_cancelled
from ctxls.index.store import read_snapshot

T = TypeVar("T")

# The read pool's threads: as many requests read at once (bench/lanes.py: 6
# answered later than 4 and 2 under a mixed load; docs/decisions.md).
READ_WORKERS = 4
# The write pool's threads: a buffer's update or a remember need not wait for
# a long `ctxls/index` to end (they interleave at the store's writer; with
# one thread a remember waited ~0.5-1 s for a re-index pass of flask).
WRITE_WORKERS = 2
# The analysis pool's threads: at most this many sweeps run at once, the rest
# queue behind them, and never take a read thread.
ANALYSIS_WORKERS = 2


class Lane(enum.Enum):
    INLINE = "inline"
    BACKGROUND = "background"
    ANALYSIS = "analysis"
    EXCLUSIVE = "exclusive"


class Route(NamedTuple):
    lane: Lane
    settles: bool = False  # waits for the buffers whose debounce is over


INLINE, BACKGROUND, EXCLUSIVE = Route(Lane.INLINE), Route(Lane.BACKGROUND), Route(Lane.EXCLUSIVE)
# A read of the code: it answers with the buffers just opened or edited.
CODE_READ = Route(Lane.BACKGROUND, settles=True)
# Impact's sweep over the repository: a read of the code in the analysis pool.
ANALYSIS = Route(Lane.ANALYSIS, settles=True)

ROUTES: dict[str, Route] = {
    # Lifecycle.
    types.INITIALIZE: INLINE,
    types.INITIALIZED: INLINE,  # opens the folders; their first index is a job
    types.SHUTDOWN: INLINE,
    types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS: INLINE,
    # Documents: recorded on the loop; the indexing they lead to runs exclusive.
    types.TEXT_DOCUMENT_DID_OPEN: INLINE,
    types.TEXT_DOCUMENT_DID_CHANGE: INLINE,
    types.TEXT_DOCUMENT_DID_CLOSE: INLINE,
    types.TEXT_DOCUMENT_DID_SAVE: EXCLUSIVE,
    types.WORKSPACE_DID_CHANGE_WATCHED_FILES: EXCLUSIVE,
    # Standard queries.
    types.TEXT_DOCUMENT_DOCUMENT_SYMBOL: CODE_READ,
    types.WORKSPACE_SYMBOL: CODE_READ,
    types.TEXT_DOCUMENT_PREPARE_CALL_HIERARCHY: CODE_READ,
    types.CALL_HIERARCHY_INCOMING_CALLS: ANALYSIS,
    types.CALL_HIERARCHY_OUTGOING_CALLS: CODE_READ,
    types.TEXT_DOCUMENT_CODE_LENS: CODE_READ,
    types.CODE_LENS_RESOLVE: Route(Lane.ANALYSIS),
    # ctxls reads (docs/protocol.md).
    "ctxls/status": BACKGROUND,
    "ctxls/recall": CODE_READ,
    "ctxls/locate": CODE_READ,
    "ctxls/get": CODE_READ,
    "ctxls/recentActivity": BACKGROUND,
    "ctxls/impact": ANALYSIS,
    "ctxls/assemble": CODE_READ,
    "ctxls/knowledge": BACKGROUND,
    "ctxls/recentMemory": BACKGROUND,
    "ctxls/enumerate": BACKGROUND,
    "ctxls/count": BACKGROUND,
    "ctxls/reviewCandidates": BACKGROUND,
    "ctxls/promotionCandidates": BACKGROUND,
    "ctxls/peek": BACKGROUND,
    "ctxls/node": BACKGROUND,
    "ctxls/related": CODE_READ,
    "ctxls/symbols": CODE_READ,
    "ctxls/outline": CODE_READ,
    "ctxls/similar": CODE_READ,
    # ctxls writes.
    "ctxls/index": EXCLUSIVE,
    "ctxls/remember": EXCLUSIVE,
    "ctxls/forget": EXCLUSIVE,
    "ctxls/ingest": EXCLUSIVE,
    "ctxls/purge": EXCLUSIVE,
    "ctxls/trustMemory": EXCLUSIVE,
    "ctxls/stash": EXCLUSIVE,
    "ctxls/evict": EXCLUSIVE,
}


def route_of(method: str) -> Route:
    """The method's route; a handler registered without a row is a bug caught at import."""
    try:
        return ROUTES[method]
    except KeyError:
        raise LookupError(f"{method} has no row in daemon/router.py ROUTES: say there how it "
                          "runs (inline, background, analysis or exclusive)") from None


def _in_request(token: CancelToken | None, work: Callable[[], T]) -> T:
    """A request's work in this thread: its cancel token bound, one read
    snapshot, SQLite's errors as the library's."""
    if token is None:
        with read_snapshot():
            return work()
    with cancelling(token), read_snapshot():
        check_cancelled()  # cancelled while it waited for a thread
        return work()


class Router:
    """The lanes' thread pools (one router per process: every session and
    the shared socket share them)."""

    def __init__(self) -> None:
        self._pools = {Lane.BACKGROUND: ThreadPoolExecutor(READ_WORKERS, "ctxls-read"),
                       Lane.ANALYSIS: ThreadPoolExecutor(ANALYSIS_WORKERS, "ctxls-analysis"),
                       Lane.EXCLUSIVE: ThreadPoolExecutor(WRITE_WORKERS, "ctxls-write")}

    async def run(self, method: str, work: Callable[[], Any]) -> Any:
        """``work`` run as ``method``'s row says (an inline one may be a coroutine function)."""
        lane = route_of(method).lane
        if lane is Lane.INLINE:
            result = work()
            return await result if asyncio.iscoroutine(result) else result
        return await self.on_lane(lane, work)

    async def on_lane(self, lane: Lane, work: Callable[[], T]) -> T:
        """``work`` in a pool's thread under a cancel token the awaiting task's
        cancellation sets."""
        token = CancelToken()
        future = asyncio.get_running_loop().run_in_executor(
            self._pools[lane], functools.partial(_in_request, token, work))
        try:
            return await future
        except asyncio.CancelledError:
            token.cancel()
            raise

    @staticmethod
    def run_here(work: Callable[[], T], token: CancelToken | None = None) -> T:
        """``work`` in this thread as a request runs (one snapshot, the
        library's errors, ``token`` bound): the in-process CLI and MCP tool
        calls, which have no event loop."""
        return _in_request(token, work)


ROUTER = Router()
