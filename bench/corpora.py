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

import json
import re
import shutil
import subprocess
import tarfile
import tempfile
import urllib.request
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
CACHE_DIR = BENCH_DIR / ".cache"
SDIST_DIR = CACHE_DIR / "sdists"
CORPORA_DIR = CACHE_DIR / "corpora"

# name -> pinned version, smallest first.
CORPORA: dict[str, str] = {"requests": "2.32.3", "flask": "3.1.0", "django": "5.1.4"}
# The corpora of the quality sets (the docstring set, assemble's). django is
# reserved for independent evaluation: it serves the speed benchmarks only,
# where nothing is tuned or scored on it.
QUALITY_CORPORA = ("requests", "flask")


def corpus_id(name: str, version: str | None = None) -> str:
    return f"{name}-{version or CORPORA[name]}"


PYPI_SIMPLE = "https://pypi.org/simple/{}/"


def _normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def pypi_sdists(name: str) -> dict[str, tuple[str, str, str]]:
    """version -> (file name, address, upload time) of every sdist of ``name``
    on PyPI, read from the registry's JSON index (PEP 691, 700)."""
    request = urllib.request.Request(PYPI_SIMPLE.format(_normalized(name)),
                                     headers={"Accept": "application/vnd.pypi.simple.v1+json"})
    with urllib.request.urlopen(request, timeout=60) as answer:
        files = json.load(answer)["files"]
    prefix = _normalized(name) + "-"
    found = {}
    for entry in files:
        stem = entry["filename"]
        if stem.endswith(".tar.gz") and _normalized(stem).startswith(prefix):
            found[stem[len(prefix):-len(".tar.gz")]] = (stem, entry["url"], entry.get("upload-time", ""))
    return found


def _sdist(name: str, version: str) -> Path:
    """The archive of ``name`` ``version`` (downloaded on first use). Taken from
    PyPI's index directly, not by ``pip download``: pip builds an sdist's
    metadata first, which fails offline for packages with compiled parts."""
    stem = _normalized(f"{name}-{version}")
    if SDIST_DIR.is_dir():
        for path in SDIST_DIR.iterdir():
            if path.name.endswith(".tar.gz") and _normalized(path.name[:-len(".tar.gz")]) == stem:
                return path
    try:
        filename, url, _ = pypi_sdists(name)[version]
    except KeyError:
        raise RuntimeError(f"PyPI has no sdist of {name} {version}") from None
    SDIST_DIR.mkdir(parents=True, exist_ok=True)
    target = SDIST_DIR / filename
    with tempfile.NamedTemporaryFile(dir=SDIST_DIR, delete=False) as tmp:
        with urllib.request.urlopen(url, timeout=300) as answer:
            shutil.copyfileobj(answer, tmp)
    Path(tmp.name).rename(target)  # atomic: a half-downloaded archive is never seen
    return target


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
