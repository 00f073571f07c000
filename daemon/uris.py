"""What a client's URI names on this machine: one check, for the daemon's
workspaces and the stdio proxy alike (kept light: the proxy imports it)."""

from __future__ import annotations

import os
import re
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

from pygls.uris import to_fs_path

# An escaped separator: data inside one segment (RFC 3986), which no POSIX
# file name can hold; decoding it would name another file (a%2Fb.py -> a/b.py).
_ESCAPED_SLASH = re.compile("%2f", re.IGNORECASE)


def open_document(workspace: Any, uri: str) -> Any | None:
    """The buffer an editor has open at ``uri``, or None. pygls files open
    documents under the URI unquoted (``put_text_document``), so a look-up
    by the URI as sent missed every file whose path holds a space or a
    non-ASCII letter (``%20``, ``%C3%BC``): their edits were never indexed."""
    return workspace.text_documents.get(unquote(uri))


def open_uris(workspace: Any) -> list[str]:
    """The URIs of the buffers open in ``workspace``, each as its editor sent
    it (the documents' own ``uri``; the keys are unquoted, and unquoting
    one again would name another file: ``%2541.py`` -> ``A.py``)."""
    return [document.uri for document in list(workspace.text_documents.values())]


def as_local(value: str) -> str:
    """A ``file:`` URI (as answers give them) as the path it names, so that a
    hit's ``uri`` goes wherever a path does (``get``, ``outline``, ``similar``);
    anything else as it is."""
    return (local_path(value) or value) if value.startswith("file:") else value


def local_path(uri: str) -> str | None:
    """The absolute path a ``file:`` URI names, or None: another scheme, a
    path that is not absolute here (``file:///C:/x`` on POSIX), one with a
    NUL (``%00``), which no file has, an escaped ``/`` inside a segment, or
    percent-escapes that are not UTF-8 (``%FF``, overlong ``%C0%AF``, an
    encoded surrogate): pygls decodes those to U+FFFD, which would name
    another file (``%FF%FE.py`` -> the file ``\\ufffd\\ufffd.py``).
    A host is this machine only as ``localhost`` (RFC 8089:
    ``file://localhost/x`` is ``file:///x``); a file of another host is no
    local file. pygls read both as the path ``//HOST/x``, that is ``/HOST/x``."""
    try:
        parts = urlsplit(uri)
        for escaped in (parts.netloc, parts.path):
            unquote(escaped, errors="strict").encode("utf-8")  # no lone surrogate either
    except (UnicodeError, ValueError, TypeError):
        return None
    if _ESCAPED_SLASH.search(parts.path):
        return None
    if parts.netloc:
        if unquote(parts.netloc).lower() != "localhost":
            return None
        uri = urlunsplit(parts._replace(netloc=""))
    path = to_fs_path(uri)
    if not path or "\0" in path or not os.path.isabs(path):
        return None
    return path
