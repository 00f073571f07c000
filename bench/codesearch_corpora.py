"""The multi-language code-search corpora (issue 11): pinned packages, fetched once.

Each corpus is one project at a pinned version, taken from a registry the
machine reaches, through its ordinary client:

* ``pypi``: the sdist (``pip download --no-binary :all:``);
* ``npm``: the package tarball (``npm pack NAME@VER``; only packages that ship
  their JS/TS sources are used, and only those folders are kept);
* ``deb``: a Debian binary package unpacked with ``dpkg-deb -x`` (Rust crates
  under /usr/share/cargo/registry, Go modules under /usr/share/gocode); nothing
  is installed on the system;
* ``debsrc``: the upstream tarball of a Debian source package
  (``apt-get source --download-only``). The system's apt has no ``deb-src``
  line, so apt is pointed at a ``deb-src`` list and a lists folder of its own
  under the cache (``apt-src/``): the system's apt configuration is untouched.

Only the files matching a corpus's ``include`` globs (and none of its
``exclude`` globs) are kept, at most :data:`MAX_FILES` of them, so the whole
set indexes and embeds in reasonable time. Downloads go to
``bench/.cache/downloads``, the kept trees to ``bench/.cache/code-corpora/ID-SELECTION``;
both steps are skipped when their result is there. Each tree is made a git
repository of its own (see corpora.make_own_repo).

``split`` is the dev/test split, by project: tune on dev, report test.
"""

from __future__ import annotations

import fnmatch
import hashlib
import shutil
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

from corpora import CACHE_DIR, make_own_repo

DOWNLOAD_DIR = CACHE_DIR / "downloads"
TREES_DIR = CACHE_DIR / "code-corpora"
APT_SRC_DIR = CACHE_DIR / "apt-src"
APT_SRC_LINE = "deb-src http://deb.debian.org/debian bookworm main\n"
MAX_FILES = 3000


@dataclass(frozen=True)
class CodeCorpus:
    name: str
    language: str  # python | javascript | typescript | go | rust | java | c
    source: str  # pypi | npm | deb | debsrc
    package: str  # the registry's package name
    version: str  # pinned (upstream version for deb/debsrc: any Debian revision of it)
    split: str  # dev | test (held-out: the files set's alone, see HELD_OUT_CORPORA)
    root: str = ""  # folder inside the unpacked package that is the project
    include: tuple[str, ...] = ("*",)  # globs on paths relative to root
    exclude: tuple[str, ...] = ()
    # The path-class set's (PATHCLASS_CORPORA): queries come from first-party
    # definitions only, while the vendored, locale and stub files of the same
    # tree stay indexed and compete (codesearch_set.build_queries).
    competitors: bool = False
    # With competitors: "first-party" (the gain: the answer is first-party
    # code) or "penalized" (the cost: the answer is a vendored, locale or
    # stub file's definition that no first-party one shares a name with).
    gold: str = "first-party"

    @property
    def pinned(self) -> str:
        return f"{self.name}-{self.version}"

    @property
    def id(self) -> str:
        """The query set's and store's name (a penalized-gold set is a set of its own)."""
        return self.pinned + ("-penalized" if self.gold == "penalized" else "")

    @property
    def tree_id(self) -> str:
        """The kept tree's folder: changes when the selection does."""
        selection = repr((self.root, self.include, self.exclude)).encode()
        return f"{self.pinned}-{hashlib.sha1(selection).hexdigest()[:8]}"


_TESTS = ("*/tests/*", "tests/*", "*/test/*", "test/*")

CODE_CORPORA: tuple[CodeCorpus, ...] = (
    # Python
    CodeCorpus("rich", "python", "pypi", "rich", "13.9.4", "dev",
               include=("rich/*.py", "README.md", "docs/source/*.rst")),
    CodeCorpus("click", "python", "pypi", "click", "8.1.7", "test",
               include=("src/click/*.py", "README.*", "docs/*.rst")),
    # JavaScript
    CodeCorpus("eslint", "javascript", "npm", "eslint", "8.57.0", "dev", root="package",
               include=("lib/*.js", "README.md"), exclude=("lib/rules/*",)),
    CodeCorpus("lodash", "javascript", "npm", "lodash", "4.17.21", "test", root="package",
               include=("*.js", "README.md"),
               exclude=("fp/*", "lodash.js", "lodash.min.js", "core.js", "core.min.js", "fp.js")),
    CodeCorpus("axios", "javascript", "npm", "axios", "1.7.9", "test", root="package",
               include=("lib/*.js", "README.md")),
    # TypeScript
    CodeCorpus("rxjs", "typescript", "npm", "rxjs", "7.8.1", "dev", root="package",
               include=("src/*.ts", "README.md")),
    CodeCorpus("mobx", "typescript", "npm", "mobx", "6.13.5", "test", root="package",
               include=("src/*.ts", "README.md")),
    # Go
    CodeCorpus("client_golang", "go", "deb", "golang-github-prometheus-client-golang-dev", "1.14.0",
               "dev", root="usr/share/gocode/src/github.com/prometheus/client_golang",
               include=("*.go", "*.md")),
    CodeCorpus("raft", "go", "deb", "golang-github-hashicorp-raft-dev", "1.1.2", "test",
               root="usr/share/gocode/src/github.com/hashicorp/raft", include=("*.go", "*.md")),
    # Rust
    CodeCorpus("tokio", "rust", "deb", "librust-tokio-dev", "1.24.2", "dev",
               root="usr/share/cargo/registry/tokio-1.24.2",
               include=("src/lib.rs", "src/sync/*.rs", "src/io/*.rs", "src/time/*.rs",
                        "src/task/*.rs", "README.md")),
    CodeCorpus("rayon", "rust", "deb", "librust-rayon-dev", "1.6.1", "test",
               root="usr/share/cargo/registry/rayon-1.6.1", include=("src/*.rs", "README.md"),
               exclude=("src/compile_fail/*", "*/test.rs")),
    # Java
    CodeCorpus("commons-lang3", "java", "debsrc", "libcommons-lang3-java", "3.12.0", "dev",
               include=("src/main/java/*.java", "README.md"),
               exclude=("*/lang3/text/*", "*/lang3/time/*", "*/lang3/reflect/*",
                        "*/lang3/concurrent/*", "*/lang3/StringUtils.java", "*/lang3/ArrayUtils.java")),
    CodeCorpus("jsoup", "java", "debsrc", "jsoup", "1.15.3", "test",
               include=("src/main/java/*.java", "README.md")),
    # C
    # (redis, the C dev project, is reserved for independent evaluation: bench/projects.md.)
    CodeCorpus("curl", "c", "debsrc", "curl", "7.88.1", "test",
               include=tuple(f"lib/{name}" for name in (
                   "multi.c", "multihandle.h", "easy.c", "transfer.*", "url.*", "urldata.h", "http.*",
                   "http_chunks.*", "http_proxy.*", "cookie.*", "hostip*", "connect.*", "cf-socket.*",
                   "cfilters.*", "sendf.*", "urlapi.c", "dynbuf.*", "llist.*", "hash.*", "splay.*",
                   "mime.*", "headers.*", "conncache.*", "escape.*", "parsedate.*", "progress.*",
                   "select.*", "speedcheck.*", "timeval.*", "content_encoding.*", "altsvc.*",
                   "hsts.*", "netrc.*", "doh.*", "socks.*", "ftp.*", "inet_pton.*", "krb5.c"))
               + ("README",)),
)

# Corpora of the hand-written files set only (bench/codesearch_files.py), not
# of the generated set: annotated in the eleventh session, after every ranking
# choice before it, and reported apart (see codesearch_files.Project.held_out).
# None is a dev, test, training (embed_train.py) or reserved project.
HELD_OUT_CORPORA: tuple[CodeCorpus, ...] = (
    CodeCorpus("starlette", "python", "pypi", "starlette", "0.41.3", "held-out",
               include=("starlette/*.py", "README.md")),
    CodeCorpus("hapi", "javascript", "npm", "@hapi/hapi", "21.3.12", "held-out", root="package",
               include=("lib/*", "README.md")),
    CodeCorpus("table_core", "typescript", "npm", "@tanstack/table-core", "8.20.5", "held-out",
               root="package", include=("src/*.ts", "README.md")),
    CodeCorpus("hyper", "rust", "deb", "librust-hyper-dev", "0.14.19", "held-out",
               root="usr/share/cargo/registry/hyper-0.14.19", include=("src/*.rs", "README.md"),
               exclude=("src/client/tests.rs", "src/mock.rs")),
    CodeCorpus("urfave_cli", "go", "deb", "golang-github-urfave-cli-dev", "1.22.9", "held-out",
               root="usr/share/gocode/src/github.com/urfave/cli", include=("*.go", "README.md"),
               exclude=("*_test.go",)),
    CodeCorpus("jackson_core", "java", "debsrc", "jackson-core", "2.14.1", "held-out",
               include=("src/main/java/*.java", "README.md")),
)

# The path-class set (issue 36, bench/recall_ablation.py --sets pathclass):
# whole package trees whose first-party code sits next to the paths recall's
# three untested penalties act on: a vendored copy of another project
# (``vendored_penalty``), locale tables (``locale_penalty``), TypeScript
# declaration stubs beside the JavaScript (``stub_penalty``). Queries are
# mined from the first-party definitions alone; the other files compete. Two
# projects per class, one dev and one test. Nothing else is left out of a tree
# but build copies no path rule names (date-and-time's ``esm/``: the same
# functions again, which would make every query ambiguous).
PATHCLASS_CLASSES = {"wheel": "vendored", "bleach": "vendored", "sphinx": "vendored", "date_and_time": "locale",
                     "pendulum": "locale", "chrono_node": "locale", "chokidar": "stub",
                     "winston": "stub"}
PATHCLASS_CORPORA: tuple[CodeCorpus, ...] = (
    # pip's wheel: src/wheel/vendored/packaging beside its own code.
    CodeCorpus("wheel", "python", "pypi", "wheel", "0.43.0", "dev", competitors=True),
    # bleach/_vendor/html5lib (a whole HTML parser and sanitizer) beside bleach's sanitizer.
    CodeCorpus("bleach", "python", "pypi", "bleach", "6.2.0", "test", competitors=True),
    # Web libraries copied in by their release's name (themes/basic/static/
    # jquery-3.6.0.js, underscore-1.13.1.js: the issue's "versioned JavaScript
    # libraries under static/") beside sphinx's own Python and JavaScript; its
    # locale/*/LC_MESSAGES/sphinx.js tables too. Left out: the minified copies
    # of the two named without a version (jquery.js, underscore.js) and the
    # minified stemmers, which no path rule names and whose one-line code the
    # miner would take for first-party definitions.
    CodeCorpus("sphinx", "python", "pypi", "Sphinx", "5.3.0", "test", competitors=True,
               exclude=("sphinx/themes/basic/static/jquery.js", "sphinx/themes/basic/static/underscore.js",
                        "sphinx/search/minified-js/*")),
    # locale/*.js (35 languages) beside date-and-time.js; every file has its .d.ts.
    CodeCorpus("date_and_time", "javascript", "npm", "date-and-time", "3.6.0", "dev", root="package",
               exclude=("esm/*",), competitors=True),
    # pendulum/locales/*/locale.py and custom.py (25 languages) beside the date library.
    CodeCorpus("pendulum", "python", "pypi", "pendulum", "2.1.2", "test", competitors=True),
    # src/locales/<10 languages>/ (each language's parsers and refiners, 140
    # TypeScript files) beside src/common and src/calculation; its dist/ build is
    # generated. A second test project for the locale class (date-and-time's
    # dev queries are names only). Not the Rust crate chrono (a train project).
    CodeCorpus("chrono_node", "typescript", "npm", "chrono-node", "2.7.7", "test", root="package",
               competitors=True),
    # types/index.d.ts beside index.js and lib/*.js.
    CodeCorpus("chokidar", "javascript", "npm", "chokidar", "3.6.0", "dev", root="package",
               competitors=True),
    # index.d.ts and lib/winston/*/index.d.ts beside lib/ (its dist/ babel copy: generated).
    CodeCorpus("winston", "javascript", "npm", "winston", "3.17.0", "test", root="package",
               competitors=True),
)
# The same trees with the gold turned round: queries mined from the
# penalized files' own definitions (those without a first-party namesake, so
# a first-party copy is never the better answer): what each penalty costs
# when the vendored, locale or stub code is what is asked for.
PATHCLASS_COST = tuple(replace(c, gold="penalized") for c in PATHCLASS_CORPORA)

LANGUAGES = tuple(dict.fromkeys(c.language for c in CODE_CORPORA))


def corpus_by_name(name: str) -> CodeCorpus:
    known = CODE_CORPORA + HELD_OUT_CORPORA + PATHCLASS_CORPORA
    for corpus in known:
        if corpus.name == name:
            return corpus
    raise KeyError(f"unknown corpus {name!r}; known: {', '.join(c.name for c in known)}")


def _run(cmd: list[str], cwd: Path | None = None) -> str:
    done = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({done.returncode}): {done.stderr.strip()[-2000:]}")
    return done.stdout


def _apt_src_options() -> list[str]:
    """apt options that read our own deb-src list (updated once into the cache)."""
    lists = APT_SRC_DIR / "lists"
    options = ["-o", f"Dir::Etc::SourceList={APT_SRC_DIR / 'sources.list'}",
               "-o", "Dir::Etc::SourceParts=/dev/null", "-o", f"Dir::State::Lists={lists}"]
    if not any(lists.glob("*Sources*")):
        (lists / "partial").mkdir(parents=True, exist_ok=True)
        (APT_SRC_DIR / "sources.list").write_text(APT_SRC_LINE, encoding="utf-8")
        _run(["apt-get", *options, "update"])
    return options


def _download(corpus: CodeCorpus) -> Path:
    """The package archive (downloaded on first use)."""
    folder = DOWNLOAD_DIR / corpus.source / corpus.pinned
    existing = [p for p in folder.iterdir()] if folder.is_dir() else []
    if not existing:
        with tempfile.TemporaryDirectory(dir=DOWNLOAD_DIR.parent) as tmp:
            work = Path(tmp)
            if corpus.source == "pypi":
                _run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary",
                      ":all:", f"{corpus.package}=={corpus.version}", "-d", str(work)])
            elif corpus.source == "npm":
                _run(["npm", "pack", "--silent", f"{corpus.package}@{corpus.version}"], cwd=work)
            elif corpus.source == "deb":
                _run(["apt-get", "download", corpus.package], cwd=work)
            elif corpus.source == "debsrc":
                _run(["apt-get", *_apt_src_options(), "source", "--download-only", corpus.package],
                     cwd=work)
                for other in work.iterdir():  # only the upstream tarball is unpacked
                    if ".orig.tar." not in other.name or other.name.endswith(".asc"):
                        other.unlink()
            else:
                raise ValueError(f"unknown source {corpus.source!r}")
            archives = list(work.iterdir())
            if len(archives) != 1:
                raise RuntimeError(f"{corpus.id}: expected one archive, got {archives}")
            (archive,) = archives
            # A registry that moved past the pin must fail loudly, not change the set.
            if corpus.version not in archive.name:
                raise RuntimeError(f"{corpus.id}: got {archive.name}, not version {corpus.version}")
            folder.mkdir(parents=True, exist_ok=True)
            archive.rename(folder / archive.name)
        existing = list(folder.iterdir())
    return existing[0]


def _unpack(archive: Path, into: Path) -> Path:
    """Unpack and return the folder the corpus's ``root`` is relative to."""
    if archive.suffix == ".deb":
        _run(["dpkg-deb", "-x", str(archive), str(into)])
        return into
    with tarfile.open(archive) as tar:
        tar.extractall(into, filter="data")
    tops = list(into.iterdir())
    # sdists and upstream tarballs have one top folder; an npm tarball's is "package".
    return tops[0] if len(tops) == 1 and tops[0].name != "package" else into


def selected(corpus: CodeCorpus, rel: str) -> bool:
    """Is ``rel`` (relative to the corpus root) kept? fnmatch's ``*`` crosses folders."""
    return (any(fnmatch.fnmatchcase(rel, g) for g in corpus.include)
            and not any(fnmatch.fnmatchcase(rel, g) for g in corpus.exclude))


def corpus_tree(corpus: CodeCorpus) -> Path:
    """The kept files of ``corpus`` (fetched and unpacked if needed)."""
    target = TREES_DIR / corpus.tree_id
    if not target.is_dir():
        archive = _download(corpus)
        TREES_DIR.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=TREES_DIR) as tmp:
            base = _unpack(archive, Path(tmp) / "unpacked")
            root = base / corpus.root if corpus.root else base
            if not root.is_dir():
                raise RuntimeError(f"{corpus.id}: no folder {corpus.root} in {archive.name}")
            kept = sorted(p for p in root.rglob("*") if p.is_file() and not p.is_symlink()
                          and selected(corpus, p.relative_to(root).as_posix()))
            if len(kept) > MAX_FILES:
                raise RuntimeError(f"{corpus.id}: {len(kept)} files > {MAX_FILES}; narrow include")
            copy = Path(tmp) / "tree"
            for path in kept:
                dest = copy / path.relative_to(root)
                dest.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(path, dest)
            copy.rename(target)  # atomic: a half-copied tree is never seen
    make_own_repo(target)
    return target


if __name__ == "__main__":
    for c in CODE_CORPORA:
        tree = corpus_tree(c)
        files = sum(1 for p in tree.rglob("*") if p.is_file() and ".git" not in p.parts)
        print(f"{c.language:11} {c.split:4} {c.id:24} {files:5} files  {tree}")
