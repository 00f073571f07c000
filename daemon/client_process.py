"""Exit when the editor that started us is gone.

An LSP client names its process twice: ``--clientProcessId`` on the command
line (vscode-languageclient) and ``processId`` in ``initialize``. Its stdio
pipe does not always close when it dies (a grandchild may hold it open), so a
daemon that only waited for end-of-stream would linger and keep the
repository's socket; a thread polls the process instead.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from typing import Callable

log = logging.getLogger(__name__)

POLL_SECONDS = 1.0


def process_alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, dead but not yet reaped, counts as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, owned by another user
        return True
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            state = stat.read().rsplit(b")", 1)[1].split()[0]
        return state != b"Z"
    except (OSError, IndexError):
        return True  # no /proc (macOS): kill(0) said it exists


class ClientWatch:
    """Calls ``on_gone(pid)`` once, from a daemon thread, when the first watched
    process exits. Watching a second pid (command line, then ``initialize``)
    adds it; any one of them dying means the client is gone."""

    def __init__(self, on_gone: Callable[[int], None], interval: float = POLL_SECONDS):
        self._on_gone = on_gone
        self._interval = interval
        self._pids: set[int] = set()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def watch(self, pid: int) -> None:
        if pid <= 0 or pid == os.getpid():
            return
        with self._lock:
            self._pids.add(pid)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="ctxls-client-watch",
                                                daemon=True)
                self._thread.start()

    def _run(self) -> None:
        while True:
            with self._lock:
                pids = sorted(self._pids)
            for pid in pids:
                if not process_alive(pid):
                    log.warning("client process %d is gone; exiting", pid)
                    self._on_gone(pid)
                    return
            time.sleep(self._interval)
