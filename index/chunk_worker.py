"""``chunk_file`` in a child process, with a deadline.

The daemon must outlive any file a repository holds. ``parse_source``'s
deadline stops a parse between tree-sitter's steps, but a grammar can hang
or crash inside one: tree-sitter-kotlin takes 11 s on a class name and
20,000 ``@A`` lines and dies of SIGSEGV at 100,000 (300 KB), killing the
process that parsed it. So the files the indexer and impact read with a
grammar are chunked here, in one long-lived child (``python -I``, importing
this process's ctxls) over its pipes: a length-prefixed pickle of
``(path, text)`` in, of the ``ParsedFile`` out, answered in order; callers
may submit ahead (the indexer submits a batch while it writes the last).

A child that has spent WORKER_DEADLINE_S of CPU time on a file without
answering (or WORKER_STARVED_FACTOR times that of the clock, however
little CPU it got), or that died, is killed and replaced; the files behind it are sent to the
new one. Requests are written by a thread of their own: a child stuck on a
file reads no more of its pipe, and a caller writing the next file past the
pipe's 64 KiB blocked there, out of the deadline's reach, for as long as the
child ran. A child still on one file CHILD_DEADLINE_MARGIN_S of CPU time
past the deadline ends itself (SIGPROF), so a daemon killed meanwhile leaves no child
busy for minutes. The text is marked hazardous
(``languages.mark_hazardous``: never parsed again in the daemon, impact and
imports included) and read as line windows. Files without a grammar
(Markdown, line windows) are chunked in the caller: nothing there parses.
If the child cannot be started at all, files are chunked in the caller, as
before this module (logged once).

The child bounds its own memory: its address space is capped
(WORKER_ADDRESS_SPACE: tree-sitter-kotlin's crash file grows it by ~0.8 GB/s,
to the machine's whole memory before the deadline), and past
WORKER_RECYCLE_BYTES resident (py-tree-sitter leaks what the deadline's read
callback returns: ``languages.parse_source``) it exits after a reply with
RECYCLED_EXIT; the files it had not answered go to the next child, which is
no failure. After a large pass the indexer stops it (``trim``): the daemon
then embeds for minutes, and the child would sit on what that pass leaked.
A text whose parse was abandoned at the deadline is marked hazardous too:
the daemon parses without a deadline (``parse_source``). Each such give-up
counts against its language: past ``languages.GIVE_UPS_TO_SUSPEND`` the
language's other files are read as line windows without a try, so that a
repository of many hostile files does not hold a pass for hours; the
indexer forgives a path whose file goes or changes, which ends the
suspension once the hostile files are gone.

Two children at most: the pass's, and one for the readings somebody waits
on (a buffer, a file just written, impact): those never queue behind a
pass's batch or a file that hangs in it (``chunk_guarded``).
"""

from __future__ import annotations

import atexit
import collections
import io
import logging
import os
import pickle
import queue
import signal
import struct
import subprocess
import sys
import threading
import time

from ctxls.index.chunker import chunk_file, reads_definitions, window_file
from ctxls.index.languages import hazard, language_for_path, mark_hazardous, set_aside, suspended
from ctxls.index.model import UNPARSED_SUSPENDED, ParsedFile

log = logging.getLogger(__name__)

# Real files chunk in well under a second (the slowest parse of 5,716 files
# of 35 projects: 0.04 s) and ``parse_source`` abandons a parse at 2 s; past
# this, the child is stuck inside a grammar (the first request also pays the
# child's start, ~0.2 s).
# CPU seconds, not the clock's: on a loaded machine (a test suite or a build
# beside the daemon, 12 runnable processes on 2 cores) a parse abandoned at
# its own deadline took past 10 s of the clock, and the file was marked
# "parser hung or crashed" for good.
WORKER_DEADLINE_S = 10.0
# A child that got less CPU than the deadline gives in this many times it
# of the clock is given up all the same (stopped, or starved for a minute).
WORKER_STARVED_FACTOR = 6.0
# A fresh child is ~30 MiB resident; py-tree-sitter's leak adds once to
# twice each source it parses (django's cold pass: +25 MiB; an edit of its
# 100 KB query.py: +0.1 MiB; the 2,109 largest code-corpora files: +390
# MiB), so long sessions and large repositories recycle it now and then (a
# restart costs ~0.2 s).
WORKER_RECYCLE_BYTES = 192 << 20
# Real files stay far below this (the 2,000 largest of 35 projects, up to
# 1 MiB each, in one child: 431 MB at its peak with the leak unrecycled); a
# grammar whose memory explodes aborts here instead of taking the machine.
WORKER_ADDRESS_SPACE = 2 << 30
RECYCLED_EXIT = 75  # the child's "I left to free memory" (EX_TEMPFAIL)
# A child still reading one file this long past the deadline ends itself:
# its parent gives the file up at the deadline, counted from about when the
# child began it, so only a child whose parent died is ended so in practice.
CHILD_DEADLINE_MARGIN_S = 2.0
_HEADER = struct.Struct("<I")
# What a reply may hold: the chunker's records and nothing else, whatever a
# child (reading hostile text) was made to write.
_REPLY_CLASSES = frozenset({("ctxls.index.model", name)
                            for name in ("ParsedFile", "Chunk", "ImportRef", "SymbolDef")})


class _ReplyUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> type:
        if (module, name) not in _REPLY_CLASSES:
            raise pickle.UnpicklingError(f"unexpected {module}.{name} in a chunk worker's reply")
        return super().find_class(module, name)


class _WorkerFailed(Exception):
    """The child died, hung past the deadline, or answered nonsense."""


class _WorkerRecycled(Exception):
    """The child left to free its memory, with files unanswered: no failure."""


class Ticket:
    """A file submitted to the worker; ``result()`` waits for its reading.
    Tickets are answered in the order they were submitted."""

    __slots__ = ("path", "text", "language", "submitted_at", "submitted_cpu", "_worker", "_result")

    def __init__(self, worker: ChunkWorker | None, path: str, text: str,
                 result: ParsedFile | None = None, language: str | None = None) -> None:
        self.path, self.text, self._worker, self._result = path, text, worker, result
        self.language = language
        self.submitted_at = time.monotonic()
        self.submitted_cpu: float | None = None  # the child's CPU seconds then (ChunkWorker._send)

    def result(self) -> ParsedFile:
        if self._result is None:
            assert self._worker is not None
            self._worker._resolve(self)
        assert self._result is not None
        return self._result


class ChunkWorker:
    """One child process chunking files for this process; thread-safe.
    Files are submitted ahead (``submit``) so that the child reads the next
    ones while the caller writes the last ones' rows: the two cores overlap."""

    def __init__(self, deadline_s: float = WORKER_DEADLINE_S,
                 recycle_bytes: int = WORKER_RECYCLE_BYTES) -> None:
        self.deadline_s, self.recycle_bytes = deadline_s, recycle_bytes
        self._lock = threading.Lock()
        self._process: subprocess.Popen | None = None
        self._replies: queue.Queue[tuple[bytes | None, float]] = queue.Queue()
        # The child's requests, written by a thread of their own (_write_requests).
        self._requests: queue.Queue[bytes | None] = queue.Queue()
        self._in_flight: collections.deque[Ticket] = collections.deque()
        self._last_reply_at, self._last_reply_cpu = 0.0, None
        self._unavailable = False  # the child could not be started: chunk in the caller
        self.restarts = 0  # children killed or lost (the bench and tests read it)
        self.recycles = 0  # children that left to free their memory

    def busy(self) -> bool:
        """Files are in flight (read without the lock, which a caller
        waiting for a reply holds)."""
        return bool(self._in_flight)

    def chunk(self, path: str, text: str) -> ParsedFile:
        """``chunk_file(path, text)``, read in the child where it parses."""
        return self.submit(path, text).result()

    def submit(self, path: str, text: str) -> Ticket:
        known_hazard = hazard(text)
        if known_hazard is not None:
            return Ticket(None, path, text, window_file(path, text, known_hazard))
        language = _grammar_language(path, text)
        if language is None:
            return Ticket(None, path, text, chunk_file(path, text))
        if suspended(language):
            # Not read by the worker: nothing parses it in this process either.
            set_aside(text, language)
            return Ticket(None, path, text, window_file(path, text, UNPARSED_SUSPENDED))
        ticket = Ticket(self, path, text, language=language)
        with self._lock:
            self._send(ticket)
        return ticket

    def trim(self) -> None:
        """Stop the child if it holds no files; the next file starts a fresh
        one."""
        with self._lock:
            if not self._in_flight:
                self._stop()

    def close(self) -> None:
        with self._lock:
            for ticket in self._in_flight:  # unread: never parsed in this process
                ticket._result = window_file(ticket.path, ticket.text, "not read: closing")
            self._in_flight.clear()
            self._stop()

    def _send(self, ticket: Ticket) -> None:
        process = None if self._unavailable else self._started()
        if process is None:
            ticket._result = chunk_file(ticket.path, ticket.text)
            return
        request = pickle.dumps((ticket.path, ticket.text), protocol=pickle.HIGHEST_PROTOCOL)
        ticket.submitted_cpu = _cpu_seconds(process.pid)
        self._in_flight.append(ticket)
        # Never written here: a child stuck on a file reads no more, a request
        # past the pipe's 64 KiB blocked this write, under the lock the
        # deadline's check needs, for as long as the child ran (minutes).
        self._requests.put(_HEADER.pack(len(request)) + request)

    def _resolve(self, wanted: Ticket) -> None:
        """Answer the tickets in flight, in order, up to ``wanted``."""
        with self._lock:
            while wanted._result is None:
                head = self._in_flight[0]
                try:
                    head._result = self._reply_to(head)
                except _WorkerRecycled:
                    self._recycle()
                    continue
                except _WorkerFailed as failed:
                    self._fail(head, failed)
                self._in_flight.popleft()

    def _reply_to(self, head: Ticket) -> ParsedFile:
        # The head's clocks start when the child could begin it: after the
        # reply before it, or when it was sent.
        started_at, started_cpu = max((head.submitted_at, head.submitted_cpu),
                                      (self._last_reply_at, self._last_reply_cpu), key=lambda start: start[0])
        deadline = started_at + self.deadline_s
        while True:
            try:
                reply, self._last_reply_at, self._last_reply_cpu = self._replies.get(
                    timeout=max(0.0, deadline - time.monotonic()))
                break
            except queue.Empty:
                deadline = self._deadline_after_waiting(started_at, started_cpu)
        if reply is None:
            code = self._exit_code()
            if code == RECYCLED_EXIT:
                raise _WorkerRecycled()
            raise _WorkerFailed(f"the worker exited ({code})")
        try:
            parsed = _ReplyUnpickler(io.BytesIO(reply)).load()
        except Exception as garbled:
            raise _WorkerFailed(f"unreadable reply: {garbled}") from garbled
        if not isinstance(parsed, ParsedFile):
            raise _WorkerFailed(f"a reply of type {type(parsed).__name__}")
        if parsed.unparsed is not None:
            # Abandoned at the parse deadline: the daemon parses without one.
            mark_hazardous(head.text, parsed.unparsed, head.language, head.path)
        return parsed

    def _deadline_after_waiting(self, started_at: float, started_cpu: float | None) -> float:
        """When to look again at a child that has not answered by its
        deadline of the clock: as late as the CPU time it has left, if it
        got less than the deadline's (a loaded machine); else it is lost."""
        now = time.monotonic()
        process = self._process
        used = None
        if process is not None and started_cpu is not None:
            spent = _cpu_seconds(process.pid)
            used = spent - started_cpu if spent is not None else None
        if used is None or used >= self.deadline_s or now - started_at >= self.deadline_s * WORKER_STARVED_FACTOR:
            raise _WorkerFailed("no answer by the deadline")
        return min(now + self.deadline_s - used, started_at + self.deadline_s * WORKER_STARVED_FACTOR)

    def _exit_code(self) -> int | None:
        process = self._process
        if process is None:
            return None
        try:  # its stdout has ended: the exit follows
            return process.wait(timeout=1.0)
        except subprocess.TimeoutExpired:
            return None

    def _recycle(self) -> None:
        """The child left to free its memory: every file it had not answered
        goes to the next one."""
        self._stop()
        self.recycles += 1
        unanswered, self._in_flight = list(self._in_flight), collections.deque()
        for ticket in unanswered:
            ticket.submitted_at = time.monotonic()
            self._send(ticket)

    def _fail(self, head: Ticket, failed: _WorkerFailed) -> None:
        """The child is lost on ``head``: windows for it, and the files
        behind it sent again to a new child."""
        self._stop()
        self.restarts += 1
        mark_hazardous(head.text, language=head.language, path=head.path)
        log.warning("chunking %s in the worker failed (%s): read as line windows", head.path, failed)
        head._result = window_file(head.path, head.text)
        behind = list(self._in_flight)[1:]
        self._in_flight = collections.deque([head])
        for ticket in behind:
            ticket.submitted_at = time.monotonic()
            self._send(ticket)

    def _started(self) -> subprocess.Popen | None:
        process = self._process
        if process is not None and (process.poll() is None or any(
                ticket._result is None for ticket in self._in_flight)):
            # Alive; or dead with files of its own unanswered: those are
            # failed first (their reader ends with the child), and the next
            # child gets them and this one together (the write fails quietly).
            return process
        self._stop()
        # The child imports ctxls from this process's absolute import path and
        # nothing else: isolated (-I: no current folder, no PYTHON* variables),
        # since the daemon often runs inside the repository, and a `ctxls/`
        # folder there must stay data, never code run by the worker.
        paths = [entry for entry in sys.path if os.path.isabs(entry)]
        boot = (f"import sys; sys.path[:] = {paths!r}; from ctxls.index.chunk_worker import _serve; "
                f"_serve({int(self.recycle_bytes)}, {float(self.deadline_s)!r})")
        try:
            process = subprocess.Popen(
                self._child_command(boot), stdin=subprocess.PIPE,
                stdout=subprocess.PIPE, stderr=None, close_fds=True)
        except OSError as failed:
            self._unavailable = True
            log.warning("no chunk worker (%s): files are chunked in the daemon's process", failed)
            return None
        self._process = process
        self._replies, self._requests = queue.Queue(), queue.Queue()
        self._last_reply_at, self._last_reply_cpu = time.monotonic(), 0.0  # a fresh child
        threading.Thread(target=_read_replies, args=(process, self._replies),
                         name="chunk-worker-replies", daemon=True).start()
        threading.Thread(target=_write_requests, args=(process, self._requests),
                         name="chunk-worker-requests", daemon=True).start()
        return process

    @staticmethod
    def _child_command(boot: str) -> list[str]:
        """The command that starts a child running ``boot`` (the Python
        that serves requests: ``_serve``)."""
        return [sys.executable, "-I", "-c", boot]

    def _stop(self) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        if process.poll() is None:
            process.kill()
        process.wait()
        self._requests.put(None)  # its writer closes the pipe (a write under way fails: the child is gone)


def _read_replies(process: subprocess.Popen, replies: queue.Queue) -> None:
    """The child's replies, as they come (so that it never waits to write
    one), then None when its stdout ends."""
    assert process.stdout is not None
    stream = process.stdout
    try:
        while True:
            header = stream.read(_HEADER.size)
            if len(header) < _HEADER.size:
                break
            (size,) = _HEADER.unpack(header)
            reply = stream.read(size)
            if len(reply) < size:
                break
            replies.put((reply, time.monotonic(), _cpu_seconds(process.pid)))
    except (OSError, ValueError):
        pass
    finally:
        replies.put((None, time.monotonic(), None))
        stream.close()


_CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _cpu_seconds(pid: int) -> float | None:
    """The CPU time (user and system) process ``pid`` has used, or None
    where /proc does not say (not Linux, or the process is gone)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            fields = stat.read().rsplit(b")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / _CLOCK_TICKS
    except (OSError, IndexError, ValueError):
        return None


def _write_requests(process: subprocess.Popen, requests: queue.Queue) -> None:
    """Write ``requests`` to the child's stdin as they come, until None;
    then close it. A write the child does not read blocks here until the
    child answers or is killed at the deadline."""
    assert process.stdin is not None
    stream = process.stdin
    try:
        while (request := requests.get()) is not None:
            stream.write(request)
            stream.flush()
    except (OSError, ValueError):
        pass  # the child died or was killed: the reply read finds it and the head is failed
    finally:
        try:
            stream.close()
        except OSError:  # what was left unwritten goes nowhere: the child is gone
            pass


def _grammar_language(path: str, text: str) -> str | None:
    """The file's language when the chunker parses it with a grammar."""
    language = language_for_path(path, text)
    return language if language is not None and language != "markdown" and reads_definitions(language) else None


_workers: dict[str, ChunkWorker] = {}
_workers_lock = threading.Lock()


def shared_worker(lane: str = "pass") -> ChunkWorker:
    """This process's chunk worker for ``lane`` (started on first use):
    "pass" for the indexer's passes, "waited" for readings somebody waits
    on."""
    worker = _workers.get(lane)
    if worker is None:
        with _workers_lock:
            worker = _workers.get(lane)
            if worker is None:
                worker = _workers[lane] = ChunkWorker()
                atexit.register(worker.close)
    return worker


def chunk_guarded(path: str, text: str) -> ParsedFile:
    """``chunk_file`` through this process's chunk worker, for a reading
    somebody waits on: the pass's child when it holds no files (so an idle
    daemon keeps one child), else a second one, so that it never waits for
    a pass's batch (64 files) or a file that hangs the child in it (10 s)."""
    worker = shared_worker()
    if worker.busy():
        worker = shared_worker("waited")
    return worker.chunk(path, text)


def _serve(recycle_bytes: int, deadline_s: float = WORKER_DEADLINE_S) -> None:
    """The child: requests from stdin, replies on stdout, until stdin ends
    or it holds more than ``recycle_bytes``. A file it is still reading
    CHILD_DEADLINE_MARGIN_S of CPU time past ``deadline_s`` ends it
    (SIGPROF's default action, which needs no Python code to run: a grammar or a query holds
    the interpreter for minutes), whoever still waits: the parent has
    given the file up by then, or died (killed, its child left reading a
    hostile file for minutes with nobody to read the answer)."""
    # Ctrl-C in a terminal reaches the whole process group, and so do a
    # service manager's or `timeout`'s SIGTERM and a closed terminal's SIGHUP:
    # the daemon decides when this child ends (by closing its stdin, or by
    # dying). Dying of them, it read as the parser crashing on its file, which
    # was then given up on for good.
    for stop in (signal.SIGINT, signal.SIGTERM, getattr(signal, "SIGHUP", None)):
        if stop is not None:
            signal.signal(stop, signal.SIG_IGN)
    alarm = getattr(signal, "SIGPROF", None)
    if alarm is not None:
        signal.signal(alarm, signal.SIG_DFL)
    _cap_address_space()
    requests, replies = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # stdout is the channel; a stray print must not corrupt it
    while True:
        header = requests.read(_HEADER.size)
        if len(header) < _HEADER.size:
            return
        (size,) = _HEADER.unpack(header)
        path, text = pickle.loads(requests.read(size))
        if alarm is not None:
            signal.setitimer(signal.ITIMER_PROF, deadline_s + CHILD_DEADLINE_MARGIN_S)
        parsed = chunk_file(path, text)
        if alarm is not None:
            signal.setitimer(signal.ITIMER_PROF, 0)
        reply = pickle.dumps(parsed, protocol=pickle.HIGHEST_PROTOCOL)
        replies.write(_HEADER.pack(len(reply)) + reply)
        replies.flush()
        if _resident_bytes() > recycle_bytes:
            sys.exit(RECYCLED_EXIT)


def _cap_address_space() -> None:
    try:
        import resource
        resource.setrlimit(resource.RLIMIT_AS, (WORKER_ADDRESS_SPACE, WORKER_ADDRESS_SPACE))
    except (ImportError, ValueError, OSError):
        pass  # no such limit here (Windows; a lower hard limit already set)


def _resident_bytes() -> int:
    try:
        with open("/proc/self/statm", encoding="ascii") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        try:
            import resource
        except ImportError:
            return 0
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # the peak: the leak only grows
        return peak if sys.platform == "darwin" else peak * 1024
