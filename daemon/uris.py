"""What a client's URI names on this machine: one check, for the daemon's
workspaces and the stdio proxy alike (kept light: the proxy imports it)."""

from __future__ import annotations

import os

from pygls.uris import to_fs_path


def local_path(uri: str) -> str | None:
    """The absolute path a ``file:`` URI names, or None: another scheme, a
    path that is not absolute here (``file:///C:/x`` on POSIX), or one with
    a NUL (``%00``), which no file has."""
    path = to_fs_path(uri)
    if not path or "\0" in path or not os.path.isabs(path):
        return None
    return path
