"""Thread priorities (Linux niceness is per thread): background work runs at
BACKGROUND_NICENESS so a request's work keeps a core, and a thread that works
for another carries that one's niceness (an embedding run computes on the
thread it runs on: docs/decisions.md, "Embedding runs compute on their
caller's thread")."""

from __future__ import annotations

import logging
import math
import os
import sys
import threading
from pathlib import Path

log = logging.getLogger(__name__)

# The background workers' niceness: warm-ups.
BACKGROUND_NICENESS = 19
# The transformer's worker: at 19 a machine busy at normal priority starved
# it (django under two busy loops: ~0 texts/s of its backlog, so the fast
# tier's window never closed); at 10 it embedded ~20 texts/s there, and
# lexical recall while it drains stayed within noise of idle, quiet and
# loaded (docs/decisions.md, "The transformer's worker at niceness 10").
TRANSFORMER_NICENESS = 10
# The fast tier's worker: its whole job is seconds of CPU (django: 8 s) that
# ranking by meaning waits for, so it must not starve on a busy machine.
# Django under two busy loops at normal priority: every chunk embedded 477 s
# after the lexical index at 19, 77 s at 10, 34 s at 5, 19 s at 0; lexical
# recall while it drains within noise of idle at each (docs/decisions.md,
# "The fast tier's worker at niceness 5").
FAST_TIER_NICENESS = 5

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


def usable_cores() -> int:
    """The CPUs this process may use: its affinity mask (taskset, a cpuset),
    bounded by its cgroup CPU quota (a container's ``--cpus``); at least 1."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # no affinity masks here (macOS)
        cores = os.cpu_count() or 1
    quota = _cgroup_cpu_quota()
    return max(1, min(cores, quota) if quota is not None else cores)


def _cgroup_cpu_quota(membership: Path = Path("/proc/self/cgroup"),
                      hierarchy: Path = Path("/sys/fs/cgroup")) -> int | None:
    """This process's cgroup CPU quota in CPUs (rounded up), or None: no
    quota, or none readable. cgroup v2 (``cpu.max``) or v1 (the ``cpu``
    controller's ``cpu.cfs_quota_us`` and ``cpu.cfs_period_us``). A container
    sees its own cgroup at the hierarchy's root while ``/proc/self/cgroup``
    may name the host's path: the root is read when the path is not there."""
    try:
        lines = membership.read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        _, controllers, group = parts
        if controllers == "":
            mount, files = hierarchy, ("cpu.max",)
        elif "cpu" in controllers.split(","):
            mount, files = hierarchy / controllers, ("cpu.cfs_quota_us", "cpu.cfs_period_us")
        else:
            continue
        for folder in (mount / group.lstrip("/"), mount):
            try:
                limit, period = " ".join((folder / name).read_text() for name in files).split()[:2]
                return None if limit in ("max", "-1") else max(1, math.ceil(int(limit) / int(period)))
            except (OSError, ValueError, ZeroDivisionError):
                continue
    return None


def lower_thread_priority() -> None:
    """Run the calling thread as background work."""
    set_thread_niceness(BACKGROUND_NICENESS)
