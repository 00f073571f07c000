"""Cancelling a request's work: the daemon's router (daemon/router.py) binds a
``CancelToken`` to the worker thread running a request (``cancelling``), sets
it on ``$/cancelRequest``, and long work calls ``check_cancelled()`` at its
natural steps (a file of a pass or of the impact sweep, an occurrence the
sweep resolves, a round of
``Engine.fresh_answer``, a candidate of assemble, a kind of locate's
evidence), which raises
``RequestCancelled`` (-32800) so the thread stops instead of running to the
end. Work outside a request (a cold index, the watcher) has no token: the
check is a no-op. The token is the thread's, so work handed to another thread
checks only what it is handed."""

from __future__ import annotations

import threading
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Callable, Iterator

from ctxls.index.errors import RequestCancelled


class CancelToken:
    """Set once, from any thread, when the client no longer wants the answer."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self._lock = threading.Lock()
        self._callbacks: list[Callable[[], None]] = []

    def cancel(self) -> None:
        with self._lock:
            self._event.set()
            callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback()

    def on_cancel(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` when the token is cancelled (now, if it is):
        passing the cancellation on, to a daemon that runs the work."""
        with self._lock:
            if not self._event.is_set():
                self._callbacks.append(callback)
                return
        callback()

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()


_current: ContextVar[CancelToken | None] = ContextVar("ctxls_cancel_token", default=None)


@contextmanager
def cancelling(token: CancelToken) -> Iterator[CancelToken]:
    """Bind ``token`` to the work run in this block (this thread's context)."""
    bound = _current.set(token)
    try:
        yield token
    finally:
        _current.reset(bound)


def cancel_requested() -> bool:
    """Whether the request this work serves was cancelled."""
    token = _current.get()
    return token is not None and token.cancelled


def check_cancelled() -> None:
    """Raise RequestCancelled when the request this work serves was cancelled."""
    if cancel_requested():
        raise RequestCancelled()
