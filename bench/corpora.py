"""The benchmark corpora: pinned PyPI sdists, fetched and unpacked once.

``bench/.cache/sdists`` keeps the downloaded archives and
``bench/.cache/corpora/NAME-VER`` the unpacked trees. Both steps are skipped
when their result is already there, so calling :func:`corpus_paths` is cheap
after the first run.

Each unpacked tree is made a git repository of its own (``git init``, nothing
committed), as a checkout would be. Without it, discovery's ``git ls-files``
would answer for the enclosing ctxls checkout, which ignores ``bench/.cache``,
and list no files at all.
"""

from __future__ import annotations

import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
CACHE_DIR = BENCH_DIR / ".cache"
SDIST_DIR = CACHE_DIR / "sdists"
CORPORA_DIR = CACHE_DIR / "corpora"

# name -> pinned version, smallest first.
CORPORA: dict[str, str] = {"requests": "2.32.3", "flask": "3.1.0", "django": "5.1.4"}


def corpus_id(name: str, version: str | None = None) -> str:
    return f"{name}-{version or CORPORA[name]}"


def _sdist(name: str, version: str) -> Path:
    """The archive of ``name`` ``version`` (downloaded on first use)."""
    wanted = f"{name}-{version}.tar.gz".lower()  # Django's sdist is "Django-5.1.4.tar.gz"
    for attempt in range(2):
        if SDIST_DIR.is_dir():
            for path in SDIST_DIR.iterdir():
                if path.name.lower() == wanted:
                    return path
        if attempt == 0:
            SDIST_DIR.mkdir(parents=True, exist_ok=True)
            subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
                            "--no-binary", ":all:", f"{name}=={version}", "-d", str(SDIST_DIR)],
                           check=True)
    raise RuntimeError(f"pip download did not produce {wanted} in {SDIST_DIR}")


def make_own_repo(path: Path) -> None:
    """Make ``path`` a git repository root (idempotent); see the module docstring."""
    if not (path / ".git").exists():
        subprocess.run(["git", "init", "-q", str(path)], check=True)


def corpus_path(name: str, version: str | None = None) -> Path:
    """The unpacked tree of corpus ``name`` (fetched and unpacked if needed);
    ``version`` for a package some bench uses on its own (not in CORPORA)."""
    version = version or CORPORA[name]
    target = CORPORA_DIR / corpus_id(name, version)
    if not target.is_dir():
        archive = _sdist(name, version)
        CORPORA_DIR.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=CORPORA_DIR) as tmp:
            with tarfile.open(archive) as tar:
                tar.extractall(tmp, filter="data")
            (top,) = Path(tmp).iterdir()  # an sdist has one top-level folder
            top.rename(target)  # atomic: a half-unpacked tree is never seen
    make_own_repo(target)
    return target


def corpus_paths(names: list[str] | None = None) -> dict[str, Path]:
    """name -> unpacked tree, for ``names`` (default: all corpora)."""
    return {name: corpus_path(name) for name in (names or list(CORPORA))}


if __name__ == "__main__":
    for corpus, tree in corpus_paths().items():
        print(f"{corpus}: {tree}")
