"""Thread priorities (Linux niceness is per thread): background work runs at
BACKGROUND_NICENESS so a request's work keeps a core, and a thread that works
for another carries that one's niceness (an embedding run computes on the
thread it runs on: docs/decisions.md, "Embedding runs compute on their
caller's thread")."""

from __future__ import annotations

import logging
import os
import sys
import threading

log = logging.getLogger(__name__)

# The embedding workers' niceness.
BACKGROUND_NICENESS = 19

_LINUX = sys.platform.startswith("linux")


def thread_niceness() -> int:
    """The calling thread's niceness (0 where threads have none of their own)."""
    if not _LINUX:
        return 0
    try:
        return os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    except OSError:
        return 0


def set_thread_niceness(niceness: int) -> None:
    """Run the calling thread at ``niceness``; a thread may only lower its
    priority, so raising it back fails quietly (it keeps the lower one).
    Linux only: elsewhere setpriority with a thread id would name a process."""
    if not _LINUX or niceness == thread_niceness():
        return
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), niceness)
    except OSError as exc:
        log.info("cannot set this thread's niceness to %d: %s", niceness, exc)


def lower_thread_priority() -> None:
    """Run the calling thread as background work."""
    set_thread_niceness(BACKGROUND_NICENESS)
