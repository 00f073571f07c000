"""Where a repository's root and store are, on the standard library alone:
the CLI imports this on every call, before it knows whether a daemon will
answer (discovery's ignore rules and languages cost it tens of milliseconds)."""

from __future__ import annotations

from pathlib import Path

STORE_DIR_NAME = ".ctxls"

# What makes a folder a repository root for the CLI and `ctxls mcp` (like git
# and ripgrep: the nearest enclosing folder holding one of these).
ROOT_MARKERS = (STORE_DIR_NAME, ".git")


def find_root(start: Path) -> Path | None:
    """The nearest folder at or above ``start`` holding ``.ctxls/`` or ``.git``."""
    start = start.resolve()
    for folder in (start, *start.parents):
        if any((folder / marker).exists() for marker in ROOT_MARKERS):
            return folder
    return None


def too_broad_root(root: Path) -> str | None:
    """Why ``root`` (resolved) is no folder to index, or None. The filesystem
    root would walk every mounted disk, /proc and /sys, and write
    ``/.ctxls``; a home folder that is not a repository (nor indexed before)
    walks every cache and download in it. The daemon refuses such a
    workspace folder and the CLI such a root, saying so."""
    if root.parent == root:
        return "is the filesystem root"
    if root == Path.home().resolve() and not any((root / m).exists() for m in ROOT_MARKERS):
        return "is the home folder, and not a repository (no .git or .ctxls in it)"
    return None
