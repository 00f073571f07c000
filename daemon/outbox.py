"""The stdio connection's outgoing side: ``Outbox``, a binary stdout whose
frames one thread of its own writes, whole and in the order they came.

A write to stdout blocks while the client is not reading (its pipe holds
64 KiB). Written from the event loop, as pygls's ``StdoutWriter`` does, such
a write held the whole daemon: stdin was no longer read (a client that
writes its requests before it reads the answers, and blocks writing, was
deadlocked with the daemon), and the shared socket's clients, the timers and
``$/cancelRequest`` all waited for that one editor to read
(docs/decisions.md, "stdout is written by a thread of its own"). The loop
now only queues a frame; past ``QUEUED_BYTES_BOUND`` bytes waiting, a write
waits for the client again, so a client that never reads costs at most that
much memory.
"""

from __future__ import annotations

import collections
import logging
import threading
from typing import BinaryIO

log = logging.getLogger(__name__)

# Bytes of frames that may wait for the client's reading before a write waits too.
QUEUED_BYTES_BOUND = 64 << 20


class Outbox:
    """What pygls's ``StdoutWriter`` writes to (``write``, ``flush``,
    ``close``), and the stdio proxy's way to its editor. Every ``write`` is
    one whole frame."""

    def __init__(self, stream: BinaryIO, bound: int = QUEUED_BYTES_BOUND):
        self._stream = stream
        self._bound = bound
        self._frames: collections.deque[bytes] = collections.deque()
        self._queued = 0  # bytes in self._frames
        self._closing = False
        self._lost: OSError | None = None  # the client went away: nothing more is written
        self._changed = threading.Condition()
        self._thread = threading.Thread(target=self._write_frames, name="ctxls-stdout", daemon=True)
        self._thread.start()

    def write(self, frame: bytes) -> int:
        with self._changed:
            # A frame larger than the bound alone still goes, once the rest is written.
            while (self._lost is None and self._queued
                   and self._queued + len(frame) > self._bound):
                self._changed.wait()
            if self._lost is not None:
                # As a direct write would: pygls logs it and its loop ends with stdin's end.
                raise BrokenPipeError(self._lost.errno, "the client's end of stdout is closed")
            if self._closing:
                raise ValueError("write to a closed Outbox")
            self._frames.append(frame)
            self._queued += len(frame)
            self._changed.notify_all()
        return len(frame)

    def flush(self) -> None:
        """Nothing to do: the writing thread flushes each frame as it writes it."""

    def close(self) -> None:
        """Write what is queued, then close the stream (pygls's ``exit``, and
        the end of ``serve``: the answers to a client that closed its stdin
        first still reach it)."""
        with self._changed:
            self._closing = True
            self._changed.notify_all()
        if threading.current_thread() is not self._thread:
            self._thread.join()
        try:
            self._stream.close()
        except OSError:
            pass

    def _write_frames(self) -> None:
        while True:
            with self._changed:
                while not self._frames and not self._closing:
                    self._changed.wait()
                if not self._frames:  # closing, and everything written
                    return
                frame = self._frames[0]
            try:
                self._stream.write(frame)
                self._stream.flush()
            except (OSError, ValueError) as exc:  # the client closed its end (or stdout was closed)
                log.warning("stdout is closed (%s): the client's answers can no longer be written", exc)
                with self._changed:
                    self._lost = exc if isinstance(exc, OSError) else BrokenPipeError(32, str(exc))
                    self._frames.clear()
                    self._queued = 0
                    self._changed.notify_all()
                return
            with self._changed:
                self._frames.popleft()
                self._queued -= len(frame)
                self._changed.notify_all()
