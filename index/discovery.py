"""Which files of a root get indexed, and reading them safely.

Discovery never raises for a single bad file: binary, oversized, vanished or
unreadable files are skipped with one log line each and reported in the
result so callers can count them.
"""

from __future__ import annotations

import fnmatch
import io
import logging
import os
import re
import stat
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import pathspec
import re2

from ctxls.index.git import git_command, run_git
from ctxls.index.languages import DEFAULT_INCLUDE, NAMED_VARIANTS, SHEBANG_BYTES, script_languages, shebang_language
from ctxls.index.paths import CONTROL_CHARACTER, escaped_controls
from ctxls.index.roots import STORE_DIR_NAME

log = logging.getLogger(__name__)

DEFAULT_MAX_FILE_BYTES = 1 << 20
# Bytes sniffed for a NUL to call a file binary (what git does).
_BINARY_SNIFF_BYTES = 8192
# Never descend into these in the non-git walk, nor list git's untracked files
# in them (they are almost always ignored: version control, installed
# dependencies, caches).
_ALWAYS_SKIPPED_DIRS = frozenset({".git", ".hg", ".svn", STORE_DIR_NAME, "node_modules",
                                  "__pycache__", ".venv", ".tox", ".mypy_cache"})
# Folders whose files are never indexed, listed or not, from disk or from an
# editor's buffer: version control's own (COMMIT_EDITMSG) and the store.
_NEVER_INDEXED_DIRS = frozenset({".git", ".hg", ".svn", STORE_DIR_NAME})
# The file that makes a folder of any name a Python virtual environment.
_VENV_MARKER = "pyvenv.cfg"
# The file of ignore rules git reads in every folder (and discovery's walk outside git).
IGNORE_FILE = ".gitignore"
# The file naming a repository's submodules and their folders.
_GITMODULES = ".gitmodules"
# Repositories inside a git root (clones, submodules) are listed by their own
# git, one process each: at most this many per pass, and this deep.
MAX_INNER_REPOSITORIES = 64
MAX_REPOSITORY_NESTING = 4


@dataclass(frozen=True)
class DiscoveryOptions:
    include: tuple[str, ...] = DEFAULT_INCLUDE  # extensions without the dot
    exclude: tuple[str, ...] = ()  # gitignore-style globs
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES


@dataclass(frozen=True)
class SourceText:
    path: str  # repo-relative POSIX
    text: str
    size: int
    mtime_ns: int


@dataclass
class Skipped:
    path: str
    # "binary" | "minified" | "too large" | "vanished" | "unreadable" | OUTSIDE_ROOT | LINK_LOOP |
    # NAME_NOT_UTF8 (path shown with U+FFFD) | NAME_CONTROL (shown with \uXXXX) |
    # "symlink to <path>"; of a folder (its path ends in "/"): "unreadable (…)",
    # REPOSITORY_LEFT_OUT
    reason: str


@dataclass
class Listing:
    paths: list[str] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)


# A symlink (to a file, or a folder on the way) whose target is outside the
# root: never read, whoever asks.
OUTSIDE_ROOT = "symlink outside the root"
# A repository inside a git root past MAX_INNER_REPOSITORIES or
# MAX_REPOSITORY_NESTING (its folder, ending in "/"): none of its files listed.
REPOSITORY_LEFT_OUT = (f"repository left out (over {MAX_INNER_REPOSITORIES} inside, "
                       f"or nested over {MAX_REPOSITORY_NESTING} deep)")
# A symlink that leads back to itself: no file, never read.
LINK_LOOP = "symlink loop"
# A name that is not UTF-8 (Python reads it with surrogate escapes): no
# protocol path or URI can name it, and SQLite cannot store it.
NAME_NOT_UTF8 = "name not UTF-8"
# A name holding a line break or another control character (git allows it;
# no project needs it): every answer's text prints a path per line (the CLI,
# the MCP tools), where such a name would forge lines (a hit, a caller).
NAME_CONTROL = "name holds a control character"


# Generated files that match an included extension but are never worth
# indexing: minified bundles are one huge line, lock files are data.
_GENERATED_SUFFIXES = (".min.js", ".min.css", "-lock.yaml", ".lock.yaml")


# Ignore files already warned about, by (where, text): a pass runs often and
# the warning is worth one line per malformed file's version, not per pass.
_WARNED_IGNORE_FILES: set[tuple[str, str]] = set()


# A rule's regular expression runs on RE2, in time linear in the path: on
# Python's backtracking engine one `.gitignore` line such as `*a*a*a*a*b`
# took 7 s per 250-character name, `**/a/**/a/**/a/**/b` 7 s per deep path,
# so a folder's rules could stall a pass for hours ("Ignore rules run in
# linear time", docs/decisions.md).
_RULE_BACKEND = "re2"
# What a rule pathspec or RE2 cannot read raises (RE2 refuses a few classes
# that Python's engine accepts, such as pathspec's reading of `[[:alpha:]]`).
_RULE_ERRORS = (ValueError, re.error, re2.error)


# Rules compiled together, at most: RE2 compiles a set of them within its
# memory budget, and one `.gitignore` of 50,000 rules failed as one set.
RULES_PER_SET = 2_000


class IgnoreRules:
    """Gitignore rules in sets of at most RULES_PER_SET (fewer where RE2
    refuses a set that large: `_rule_sets`), each on RE2; the last rule
    that matches a path decides, across the sets, as in git."""

    def __init__(self, lines: Iterable[str]):
        # A blank line or a comment is no rule: no set is compiled for them.
        lines = [line for line in lines if line.strip() and not line.startswith("#")]
        self._sets = [rules for start in range(0, len(lines), RULES_PER_SET)
                      for rules in _rule_sets(lines[start:start + RULES_PER_SET])]

    def match_file(self, path: str) -> bool:
        for rules in reversed(self._sets):
            decided = rules.check_file(path).include
            if decided is not None:
                return decided
        return False


def _rule_sets(lines: list[str]) -> list[pathspec.PathSpec]:
    """``lines`` compiled as one set, else as two halves, and so on: RE2
    refuses a set past its memory budget (2,000 rules like `**/x1*y*z*/**/*.q1`
    failed as one), while a rule it cannot read fails alone too."""
    try:
        return [pathspec.PathSpec.from_lines("gitignore", lines, backend=_RULE_BACKEND)]
    except re2.error:
        if len(lines) < 2:
            raise
    half = len(lines) // 2
    return _rule_sets(lines[:half]) + _rule_sets(lines[half:])


def ignore_spec(lines: Iterable[str], source: str) -> IgnoreRules:
    """Gitignore rules, compiled so that a rule pathspec cannot read (a lone
    `!`, a trailing `\\`, `[z-a]`) costs only itself: git skips such a rule,
    and one such line among a project's test fixtures failed every pass of a
    folder outside git. The rules dropped are logged once, naming ``source``."""
    lines = [line.rstrip("\r\n") for line in lines]
    try:
        return IgnoreRules(lines)
    except _RULE_ERRORS:
        pass
    kept, dropped = [], []
    for number, line in enumerate(lines, 1):
        try:
            IgnoreRules([line])
        except _RULE_ERRORS as exc:
            dropped.append(f"line {number} {line!r} ({exc})")
        else:
            kept.append(line)
    key = (source, "\n".join(lines))
    if key not in _WARNED_IGNORE_FILES:
        _WARNED_IGNORE_FILES.add(key)
        log.warning("%s: ignore rules git cannot read left out: %s", source, "; ".join(dropped))
    return IgnoreRules(kept)


# A .gitignore's bytes read, at most (real ones hold a few KB; git refuses
# one over 100 MB): a 10 MB one of comments cost 30 s and 0.5 GB a pass.
IGNORE_FILE_BYTES = 1 << 20


def _ignore_file_spec(path: str) -> IgnoreRules | None:
    """The rules of one .gitignore file, None when it cannot be read; of
    one over IGNORE_FILE_BYTES, the whole lines of its first IGNORE_FILE_BYTES,
    with one warning that the rest are not applied."""
    text = _rules_file_text(*os.path.split(path), IGNORE_FILE_BYTES + 1)
    if text is None:
        return None
    if len(text.encode("utf-8", "surrogateescape")) > IGNORE_FILE_BYTES:
        text = text[:text.rfind("\n", 0, IGNORE_FILE_BYTES) + 1]
        if (path, "") not in _WARNED_IGNORE_FILES:
            _WARNED_IGNORE_FILES.add((path, ""))
            log.warning("%s: over %d bytes: only the rules of its first %d bytes are applied",
                        path, IGNORE_FILE_BYTES, IGNORE_FILE_BYTES)
    # Lines split as a file opened in text mode splits them (universal newlines).
    return ignore_spec(io.StringIO(text, newline=None), path)


def _rules_file_text(folder: str | Path, name: str, max_bytes: int = -1) -> str | None:
    """The text (at most ``max_bytes`` of it) of a file discovery reads for
    its own rules (a .gitignore, a .gitmodules), None when it is not a
    regular file or cannot be read. Opened as read_file opens files
    (_open_beneath: no link followed, no blocking): a FIFO named
    `.gitmodules` blocked every indexing pass forever."""
    try:
        fd = _open_beneath(Path(folder), name)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        with os.fdopen(fd, "rb") as fh:
            fd = -1  # the file object closes it
            return fh.read(max_bytes).decode("utf-8", "replace")
    except OSError:
        return None
    finally:
        if fd >= 0:
            os.close(fd)


class FileFilter:
    """include / exclude / the store and version-control folders, compiled once. With ``root``, a
    file with no extension is also wanted when its `#!` line names a
    language one of whose extensions is included (`bin/deploy`)."""

    def __init__(self, options: DiscoveryOptions, root: Path | None = None):
        self._include = frozenset(e.lower().lstrip(".") for e in options.include)
        # `Dockerfile.dev` is included with `Dockerfile`.
        self._variants = frozenset(n.lower() for n in NAMED_VARIANTS) & self._include
        self._root = root
        self._script_languages = script_languages(self._include)
        self._excluded = (ignore_spec(options.exclude, "the exclude option")
                          if options.exclude else None)

    def __call__(self, path: str) -> bool:
        parts = path.split("/")
        if not _NEVER_INDEXED_DIRS.isdisjoint(parts[:-1]) or parts[0] == STORE_DIR_NAME:
            return False
        name = parts[-1]
        ext = name.rsplit(".", 1)[-1].lower() if "." in name else ""
        if ext not in self._include and name.lower() not in self._include \
                and name.split(".", 1)[0].lower() not in self._variants \
                and not (not ext and self._is_included_script(path)):  # `Makefile`, `Gemfile`
            return False
        if name.endswith(_GENERATED_SUFFIXES):
            return False
        return not (self._excluded and self._excluded.match_file(path))


    def _is_included_script(self, path: str) -> bool:
        """Whether ``path``'s first bytes are a `#!` line naming an included
        language (read beneath the root, never through a link)."""
        if self._root is None or not self._script_languages:
            return False
        try:
            fd = _open_beneath(self._root, path)
            try:
                head = os.read(fd, SHEBANG_BYTES)
            finally:
                os.close(fd)
        except OSError:  # vanished, a folder, unreadable: no script
            return False
        return head.startswith(b"#!") and \
            shebang_language(head.decode("utf-8", "replace")) in self._script_languages


def _git_files(root: Path) -> Listing | None:
    """Tracked plus untracked-but-not-ignored files, or None if not a git
    repo; with the files of the repositories inside it (clones, submodules),
    which git lists only as their folder, each listed by its own rules.
    Skipped: the folders git could not read, and the repositories inside
    left out (past MAX_INNER_REPOSITORIES or MAX_REPOSITORY_NESTING)."""
    top = _git_listing(root)
    if top is None:
        return None
    found = Listing()
    stack: list[tuple[str, Listing, int]] = [("", top, 0)]
    listed_repositories = 0
    left_out: list[str] = []
    while stack:
        prefix, listing, depth = stack.pop()
        listed = listing.paths
        inner = _inner_repositories(root / prefix if prefix else root, listed)
        found.paths.extend(prefix + p for p in listed if p.rstrip("/") not in inner)
        found.skipped.extend(Skipped(prefix + s.path, s.reason) for s in listing.skipped)
        admitted: list[tuple[str, Listing, int]] = []
        for folder in sorted(inner):
            if depth >= MAX_REPOSITORY_NESTING or listed_repositories >= MAX_INNER_REPOSITORIES:
                left_out.append(prefix + folder)
                continue
            listed_repositories += 1
            where = root / prefix / folder
            its = _git_listing(where)
            if its is None:  # git refuses it (ownership, a broken .git): its .gitignore files decide
                its = _walk_files(where)
            admitted.append((f"{prefix}{folder}/", its, depth + 1))
        stack.extend(reversed(admitted))
    if left_out:
        log.warning("%s: %d repositories inside not indexed (%s%s): more than %d inside, or nested "
                    "deeper than %d", root, len(left_out), ", ".join(sorted(left_out)[:3]),
                    ", …" if len(left_out) > 3 else "", MAX_INNER_REPOSITORIES, MAX_REPOSITORY_NESTING)
    # Said in status, not only in the log: their files answer nothing.
    found.skipped.extend(Skipped(folder + "/", REPOSITORY_LEFT_OUT) for folder in sorted(left_out))
    return found


# How git says it could not list a folder (on stderr, as a warning; the
# listing goes on without it): git's messages are read in the C locale (git.py).
_GIT_UNREADABLE_FOLDER = re.compile(rb"^warning: could not open directory '(.+/)': (.+)$", re.MULTILINE)


def _git_listing(root: Path) -> Listing | None:
    """What `git ls-files` lists in ``root``: files, and a repository inside
    as its folder; never a file a sparse checkout leaves out of the work
    tree (tagged ``S``: in the index, never on disk, however many). Skipped:
    each folder git could not read (a folder this user may not read: its
    untracked files went missing without a word)."""
    proc = run_git(git_command("ls-files", "-z", "-t", "--cached", "--others", "--exclude-standard",
                               "--deduplicate", root=root), timeout=60, fifo_root=root)
    if proc is None or proc.returncode != 0:
        return None
    entries = [(entry[0], entry[2:]) for entry in proc.stdout.decode("utf-8", "surrogateescape").split("\0")
               if len(entry) > 2 and entry[0] != "S"]
    # Untracked files (``?``) of installed dependencies: a virtual environment
    # or node_modules made before the .gitignore that would name it (an agent's
    # fresh project) held tens of thousands of files. Tracked ones stay.
    environments = tuple(path[:-len(_VENV_MARKER)] for tag, path in entries
                         if tag == "?" and path.endswith("/" + _VENV_MARKER))
    unreadable = [Skipped(os.fsdecode(folder), f"unreadable ({os.fsdecode(why).strip()})")
                  for folder, why in _GIT_UNREADABLE_FOLDER.findall(proc.stderr)]
    return Listing([path for tag, path in entries
                    if tag != "?" or not (path.startswith(environments)
                                          or not _ALWAYS_SKIPPED_DIRS.isdisjoint(path.split("/")[:-1]))],
                   [s for s in unreadable if os.path.isdir(root / s.path)])


def _inner_repositories(folder: Path, listed: list[str]) -> set[str]:
    """The entries of a git listing of ``folder`` that are repositories: an
    untracked clone (listed as ``name/``) or a submodule (a ``.gitmodules``
    path that the listing holds as one entry), each a real folder with a
    ``.git`` of its own (an uninitialised submodule has none)."""
    names = {p[:-1] for p in listed if p.endswith("/")} | (_submodule_folders(folder) & set(listed))
    return {name for name in _real_folders_named(folder, names)
            if os.path.lexists(folder / name / ".git")}


def _submodule_folders(folder: Path) -> set[str]:
    """The submodules the ``.gitmodules`` of ``folder`` names whose folder is
    there, initialised or not (relative to ``folder``)."""
    text = _rules_file_text(folder, _GITMODULES, 1 << 20)
    return set() if text is None else _real_folders_named(folder, _submodule_paths(text))


def _real_folders_named(folder: Path, names: Iterable[str]) -> set[str]:
    """Those of ``names`` (relative paths, from git or a ``.gitmodules``)
    that stay inside ``folder`` and are real folders there, not links."""
    found = set()
    for name in names:
        if not name or name.startswith("/") or ".." in name.split("/"):
            continue
        try:
            if stat.S_ISDIR(os.lstat(folder / name).st_mode):
                found.add(name)
        except OSError:
            continue
    return found


def _submodule_paths(text: str) -> set[str]:
    """The `path = …` values of a `.gitmodules` text, read line by line (a
    pattern with a lazy group before optional quotes and spaces was
    quadratic in a line's length: 40,000 spaces took 3 s, every pass)."""
    paths = set()
    for line in text.splitlines():
        key, equals, value = line.partition("=")
        if equals and key.strip() == "path":
            paths.add(value.strip().strip('"'))
    return paths


def _walk_files(root: Path) -> Listing:
    """A filesystem walk honouring .gitignore files at every level, in
    os.walk's order (top-down, names sorted; links to folders listed by
    neither list nor entered), without recursion: os.walk recurses once per
    level in Python 3.11, so a tree 1,000 folders deep (3,000 characters of
    path, well within PATH_MAX) failed every indexing pass. Skipped: each
    folder it could not read (``unreadable (…)``), whose files it cannot list."""
    walked = Listing()
    found = walked.paths
    # (folder relative to root with a trailing "/", the .gitignore specs above it)
    stack: list[tuple[str, list[tuple[str, IgnoreRules]]]] = [("", [])]
    while stack:
        rel_dir, inherited = stack.pop()
        dirpath = os.path.join(root, rel_dir)
        try:
            with os.scandir(dirpath) as it:
                entries = list(it)
        except (FileNotFoundError, NotADirectoryError):
            continue  # gone since its folder was read
        except OSError as exc:
            if rel_dir:  # the root's own failure is the pass's, not a skipped folder
                walked.skipped.append(Skipped(rel_dir, f"unreadable ({exc.strerror or exc})"))
            continue
        if rel_dir and any(entry.name == _VENV_MARKER for entry in entries):
            continue  # a virtual environment, whatever its name
        specs = list(inherited)
        ignore_file = os.path.join(dirpath, IGNORE_FILE)
        if os.path.isfile(ignore_file):
            spec = _ignore_file_spec(ignore_file)
            if spec is not None:
                specs.append((rel_dir, spec))

        def ignored(rel: str) -> bool:
            return any(s.match_file(rel[len(d):]) for d, s in specs)

        folders, names = [], []
        for entry in entries:
            try:
                is_dir = entry.is_dir()
            except OSError:
                is_dir = False
            if not is_dir:
                names.append(entry.name)
            elif not entry.is_symlink() and entry.name not in _ALWAYS_SKIPPED_DIRS \
                    and not ignored(rel_dir + entry.name + "/"):
                folders.append(entry.name)
        for name in sorted(names):
            rel = rel_dir + name
            if not ignored(rel):
                found.append(rel)
        stack.extend((rel_dir + name + "/", specs) for name in sorted(folders, reverse=True))
    return walked


def listed_folders(root: Path) -> set[str]:
    """Every folder (repo-relative, "" for the root) holding a file discovery
    would consider, before the include filter, and the folders above them:
    what the live watcher watches, so ignored trees (``node_modules``, build
    output, ``.venv``) cost no watch and no event. An uninitialised
    submodule's folder is one too, empty as it is: `git submodule update
    --init` fills it, and no event in the folder above says so."""
    in_git = _git_files(root)
    candidates = (in_git if in_git is not None and in_git.paths else _walk_files(root)).paths
    listed = set(candidates)
    uninitialised = [prefix + name for prefix in (path[:-len(_GITMODULES)] for path in candidates
                                                  if path.rpartition("/")[2] == _GITMODULES)
                     for name in _submodule_folders(root / prefix) if prefix + name in listed]
    folders = {""}
    for folder in [*(path.rpartition("/")[0] for path in candidates), *uninitialised]:
        while folder not in folders:
            folders.add(folder)
            folder = folder.rpartition("/")[0]
    return folders


def repositories_among(root: Path, folders: Iterable[str]) -> list[str]:
    """Those of ``folders`` (repo-relative, "" the root) that are
    repositories inside the root, as discovery takes them: a folder holding
    a ``.git`` of its own (a clone, an initialised submodule), sorted."""
    return sorted(f for f in folders if f and os.path.lexists(root / f / ".git"))


def is_skipped_folder_name(name: str) -> bool:
    """A folder no walk enters (version control, the store, dependency caches)."""
    return name in _ALWAYS_SKIPPED_DIRS


def holds_installed_dependencies(folder: str) -> bool:
    """A folder whose untracked files discovery never lists, in a repository
    or not: ``node_modules``, ``.venv`` and the others by name, or a virtual
    environment of any name (it holds ``pyvenv.cfg``)."""
    return os.path.basename(folder) in _ALWAYS_SKIPPED_DIRS or os.path.isfile(
        os.path.join(folder, _VENV_MARKER))


def left_out_of_listing(root: Path, path: str) -> bool:
    """Whether discovery leaves the repo-relative file ``path`` out, as a
    whole pass would: git (or the .gitignore files) ignores it, or it lies in
    a folder of installed dependencies and git does not track it. For one
    file an editor had open: its buffer is indexed wherever it lies, its
    disk text only where discovery lists it."""
    if ignored_paths(root, [path]):
        return True
    folder = path.rpartition("/")[0]
    while folder and not holds_installed_dependencies(str(root / folder)):
        folder = folder.rpartition("/")[0]
    if not folder:
        return False
    proc = run_git(git_command("ls-files", "--error-unmatch", "--", path, root=root), timeout=30)
    return proc is None or proc.returncode != 0


def sets_ignore_rules(rel: str) -> bool:
    """Whether the repo-relative file ``rel`` holds ignore rules: a change to it
    can bring files into the listing or take them out."""
    return rel.rsplit("/", 1)[-1] == IGNORE_FILE


def ignored_paths(root: Path, paths: list[str]) -> set[str]:
    """Which of ``paths`` (repo-relative; a folder may end in "/") git, or
    outside git the .gitignore files, ignores. Each is judged as discovery
    lists it, by the innermost repository holding it (a clone's or a
    submodule's own rules, its info/exclude and the global excludes file):
    git refuses a path inside a submodule outright, which made the whole
    batch fall back to the .gitignore files from the root down. A path
    inside a repository whose folder the one around it ignores is ignored."""
    if not paths:
        return set()
    holders: dict[str, str] = {}  # folder -> the innermost repository holding it

    def holder(path: str) -> str:
        return _holding_repository(root, path.rstrip("/").rpartition("/")[0], holders)

    asked: dict[str, set[str]] = {}  # repository ("" the root's) -> its paths
    for path in paths:
        asked.setdefault(holder(path), set()).add(path)
    # Each inner repository's folder is asked of the one around it, out to the root.
    inner = [repository for repository in asked if repository]
    while inner:
        repository = inner.pop()
        outer = holder(repository)
        if outer and outer not in asked:
            inner.append(outer)
        asked.setdefault(outer, set()).add(repository)
    ignored: set[str] = set()
    for repository, its_paths in asked.items():
        ignored |= _ignored_in(root, repository, sorted(its_paths))

    def left_out(repository: str) -> bool:
        return bool(repository) and (repository in ignored or left_out(holder(repository)))

    return {path for path in paths if path in ignored or left_out(holder(path))}


def _holding_repository(root: Path, folder: str, holders: dict[str, str]) -> str:
    """The innermost repository inside ``root`` holding the repo-relative
    ``folder`` (a folder with a ``.git`` of its own), "" for none but the root's."""
    # Up the folders, without recursion (a tree may be thousands of folders deep).
    below = []
    while folder not in holders:
        if not folder or os.path.lexists(root / folder / ".git"):
            holders[folder] = folder
            break
        below.append(folder)
        folder = folder.rpartition("/")[0]
    for inside in below:
        holders[inside] = holders[folder]
    return holders[folder]


def _ignored_in(root: Path, repository: str, paths: list[str]) -> set[str]:
    """Which of ``paths`` (repo-relative, all in ``repository``) the
    repository at ``root/repository`` ignores: git's answer, or where git
    cannot give one (no repository, git missing), the .gitignore files from
    that repository's folder down."""
    prefix = repository + "/" if repository else ""
    folder = root / repository if repository else root
    asked: dict[str, list[str]] = {}  # as git is asked -> the paths it stands for
    for path in paths:
        # A submodule's own folder, asked with a trailing "/", is refused as a path inside it.
        is_repository = path.endswith("/") and os.path.lexists(root / path / ".git")
        asked.setdefault(path[len(prefix):].rstrip("/") if is_repository else path[len(prefix):],
                         []).append(path)
    proc = run_git(git_command("check-ignore", "-z", "--stdin", root=folder), timeout=30,
                   input="\0".join(asked).encode("utf-8", "surrogateescape"), fifo_root=folder)
    if proc is not None and proc.returncode in (0, 1):  # 1: none ignored
        return {path for answer in proc.stdout.decode("utf-8", "surrogateescape").split("\0")
                for path in asked.get(answer, ())}
    ignored = set()
    for path in paths:
        parts = path[len(prefix):].split("/")
        for depth in range(len(parts)):
            ignore_file = folder / "/".join(parts[:depth]) / IGNORE_FILE
            if ignore_file.is_file():
                spec = _ignore_file_spec(str(ignore_file))
                if spec is not None and spec.match_file("/".join(parts[depth:])):
                    ignored.add(path)
                    break
    return ignored


def discover(root: Path, wanted: FileFilter) -> Listing:
    """Repo-relative POSIX paths to index, sorted, and the candidates skipped
    for where they really are: a symlink out of the root is never indexed, and
    one inside it is indexed once, under its target's own path (when discovery
    lists the target), so no file has two names in the index."""
    root = root.resolve()
    found = _git_files(root)
    if found is None or not found.paths:
        # Not a repository, or a folder that an enclosing repository ignores
        # (git answers for the outer one and lists nothing).
        found = _walk_files(root)
    candidates = found.paths
    # The folders it could not list come first, named so status says so (as
    # status shows any name: shown_name).
    listing = Listing(skipped=[Skipped(shown_name(s.path), s.reason) for s in found.skipped])
    real_dirs: dict[str, str | None] = {"": ""}
    for path in sorted({p for p in candidates if wanted(p)}):
        problem = name_problem(path)
        if problem is not None:  # a non-UTF-8 one failed every pass: nothing was indexed
            listing.skipped.append(Skipped(shown_name(path), problem))
            continue
        real = real_path(root, path, real_dirs)
        if real == path:
            listing.paths.append(path)
        else:
            listing.skipped.append(Skipped(path, _alias_reason(root, path, real)))
    return listing


def name_problem(path: str) -> str | None:
    """Why a file of this name is never indexed (NAME_NOT_UTF8,
    NAME_CONTROL), or None."""
    if not is_utf8(path):
        return NAME_NOT_UTF8
    return NAME_CONTROL if CONTROL_CHARACTER.search(path) else None


def shown_name(path: str) -> str:
    """A name ``name_problem`` refuses as status lists it: U+FFFD for bytes
    that are not UTF-8, ``\\uXXXX`` for a control character."""
    return escaped_controls(path.encode("utf-8", "surrogateescape").decode("utf-8", "replace"))


def is_utf8(text: str) -> bool:
    """Whether ``text`` has a UTF-8 form: no unpaired surrogate (a file name
    read with surrogate escapes, a lone surrogate a JSON string carried)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


# A symlink to a file in the root: that file is indexed under its own path.
SYMLINK_TO = "symlink to "


def reason_family(reason: str) -> str:
    """A reason left out of its particulars, for counting by kind:
    `unreadable (permission denied)` → `unreadable`, `symlink to src/a.py`
    → `symlink to a file in the root`."""
    family = reason.split(" (")[0]
    return "symlink to a file in the root" if family.startswith(SYMLINK_TO) else family


def _alias_reason(root: Path, path: str, real: str | None) -> str:
    if real is not None:
        return f"{SYMLINK_TO}{real}"
    try:
        (root / path).resolve()
    except (RuntimeError, OSError):
        return LINK_LOOP
    return OUTSIDE_ROOT


def real_path(root: Path, path: str, real_dirs: dict[str, str | None]) -> str | None:
    """``relative_path`` of a repo-relative ``path`` under a resolved ``root``,
    resolving each folder once across calls sharing ``real_dirs`` (start it
    as ``{"": ""}``; a listing has far fewer folders than files): a folder is
    its parent's real path and its name unless it is a link itself, so a
    folder costs one ``lstat``, not a resolution of the whole path."""
    folder, _, name = path.rpartition("/")
    if folder not in real_dirs:
        _real_folders(root, folder, real_dirs)
    return _real_child(root, real_dirs[folder], path, name)


def _real_child(root: Path, real_folder: str | None, path: str, name: str) -> str | None:
    """``real_path`` of ``path`` (named ``name``) in a folder whose real path is known."""
    if real_folder is None:
        return None
    if name in ("", ".", "..") or os.path.islink(f"{root}/{path}"):
        return relative_path(root, path)
    return f"{real_folder}/{name}" if real_folder else name


def _real_folders(root: Path, folder: str, real_dirs: dict[str, str | None]) -> None:
    """Fill ``real_dirs`` for ``folder`` and every folder above it not in it
    yet, top-down and without recursion (a tree may be thousands of folders
    deep: recursing once per level failed every pass of a tree 1,000 deep).
    A folder that is a link back to the root is ``""``."""
    real_dirs.setdefault("", "")
    missing = []
    while folder not in real_dirs:
        missing.append(folder)
        folder = folder.rpartition("/")[0]
    for folder in reversed(missing):
        parent, _, name = folder.rpartition("/")
        real = _real_child(root, real_dirs[parent], folder, name)
        if real is None and os.path.realpath(f"{root}/{folder}") == str(root):
            real = ""
        real_dirs[folder] = real


# ctxls/index's `paths`: more is refused (-32602); index everything with none.
MAX_PATHSPECS = 10_000


def pathspec_matcher(pathspecs: list[str]) -> Callable[[str], bool]:
    """Whether a path is in scope: it equals a spec, lies under a spec
    directory, or matches a spec glob. Built once per pass: a path costs a
    set lookup per folder above it plus one regex over all globs, not a
    comparison with every spec (100,000 specs took 44 s over 5 files)."""
    specs = {spec.strip("/") for spec in pathspecs}
    if specs & {"", "."}:
        return lambda path: True
    globs = sorted(spec for spec in specs if any(c in spec for c in "*?["))
    glob = re.compile("|".join(fnmatch.translate(g) for g in globs)).match if globs else None

    def matches(path: str) -> bool:
        folder = path
        while True:
            if folder in specs:
                return True
            if "/" not in folder:
                return glob is not None and glob(path) is not None
            folder = folder.rpartition("/")[0]
    return matches


# UTF-16 with its byte-order mark: what Visual Studio, SQL Server's tools
# and Windows PowerShell save C#, SQL and scripts as. Its NUL bytes made it
# "binary"; by the mark, it is text.
_UTF16_MARKS = {b"\xff\xfe": "utf-16-le", b"\xfe\xff": "utf-16-be"}


def decode_text(data: bytes) -> str:
    """The index's text of a file's bytes: ``decode_as_written`` with each
    lone CR a line feed (``editor_line_breaks``); never raises. The one way
    a file's bytes become text, for every reader."""
    return editor_line_breaks(decode_as_written(data))


def decode_as_written(data: bytes) -> str:
    """UTF-8 with replacement (a BOM is dropped), or UTF-16 by its BOM; line
    breaks as the file has them; never raises."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    elif is_utf16_marked(data):
        return data[2:].decode(_UTF16_MARKS[data[:2]], errors="replace")
    return data.decode("utf-8", errors="replace")


def is_utf16_marked(data: bytes) -> bool:
    """Whether ``data`` starts with a UTF-16 byte-order mark (and is read as UTF-16)."""
    return data[:2] in _UTF16_MARKS


# A CR that no LF follows: LSP and editors end a line there, as at "\n"
# and "\r\n" (daemon/edits.py counts lines so), while every reader of the
# index's text (the chunker, tree-sitter's rows, impact's sweep, `get`)
# splits at "\n" only.
_LONE_CR = re.compile(r"\r(?!\n)")


def editor_line_breaks(text: str) -> str:
    """``text`` with each lone CR a line feed: one code unit for one, so every
    offset and column stays, and lines split at "\n" are the lines an editor
    numbers (a CRLF line keeps its "\r", as before)."""
    return _LONE_CR.sub("\n", text) if "\r" in text else text


# A minified script or stylesheet whatever its name (`static/jquery.js`, a
# theme's `theme.css`, a browser build): its lines average more than this
# many characters. Hand-written code averages 30-40; of the 77k files of 4 KB
# to 1 MiB in bench's trees (100+ projects), every `.js`/`.css` above 300 was
# a minified bundle or a one-line test fixture (docs/decisions.md, "Minified
# scripts left out by their lines").
MINIFIED_MEAN_LINE = 300
MINIFIED_MIN_CHARS = 4096
_MINIFIABLE_SUFFIXES = (".js", ".mjs", ".cjs", ".css", ".html", ".htm")

# HTML a program wrote (API docs, coverage reports, static site output) says
# so at its top or its foot: a generator meta tag (Hugo, MkDocs, rustdoc,
# pdoc, javadoc), a comment ("<!-- Generated by javadoc"), or a credit
# linking to the program ("Generated by <a …>jazzy", "Created using <a
# …>Sphinx", "Created by <a …>coverage.py", doxygen's, TypeDoc's). Prose in
# a template ("each page is generated by a view") is none of these.
_HTML_SUFFIXES = (".html", ".htm")
_GENERATOR_MARK = re.compile(
    r"<meta\s+name=[\"']?generator\b|<!--\s*generated\s+(?:by|with|using)\b"
    r"|\b(?:generated|created)\s+(?:by|with|using)(?:\s|&#160;|&nbsp;)*<a\b", re.IGNORECASE)
_GENERATOR_SNIFF_CHARS = 4096


def looks_generated(path: str, text: str) -> bool:
    """An HTML file a generator wrote (it says so within its first or last
    4 KB): documentation or report output, not the templates and pages a
    team writes. Left out; code a program wrote stays in, classed as
    generated (paths.says_generated): its callers and definitions are real."""
    return path.endswith(_HTML_SUFFIXES) and (
        _GENERATOR_MARK.search(text, 0, _GENERATOR_SNIFF_CHARS) is not None
        or _GENERATOR_MARK.search(text, max(0, len(text) - _GENERATOR_SNIFF_CHARS)) is not None)


def looks_minified(path: str, text: str) -> bool:
    """A script or stylesheet of long lines: a bundle, not source to search
    (like a `.min.js`, left out of the index)."""
    return (path.endswith(_MINIFIABLE_SUFFIXES) and len(text) >= MINIFIED_MIN_CHARS
            and len(text) > MINIFIED_MEAN_LINE * (text.count("\n") + 1))


def looks_binary(data: bytes | str) -> bool:
    """A NUL in the first 8 KiB (of a file's bytes, or of an editor buffer's
    text); in UTF-16 marked by its BOM, a NUL character."""
    if isinstance(data, bytes) and is_utf16_marked(data):
        return "\0" in decode_as_written(data[:_BINARY_SNIFF_BYTES])
    return ("\0" if isinstance(data, str) else b"\0") in data[:_BINARY_SNIFF_BYTES]


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def replace_lone_surrogates(text: str) -> str:
    """``text`` with each unpaired UTF-16 surrogate (JSON can carry one; UTF-8
    and SQLite cannot) replaced by U+FFFD, one code unit for one, so LSP
    columns stay where they were."""
    return text if is_utf8(text) else _LONE_SURROGATE.sub("\ufffd", text)


def indexed_buffer_text(text: str) -> str:
    """The index's text of an editor's buffer, by a file's rules: a lone
    surrogate U+FFFD and a lone CR a line feed (each one code unit for one)."""
    return editor_line_breaks(replace_lone_surrogates(text))


def read_file(root: Path, path: str, max_bytes: int | None,
              real_dirs: dict[str, str | None] | None = None
              ) -> tuple[bytes, os.stat_result] | Skipped:
    """The bytes of ``root/path`` (at most ``max_bytes + 1``) and its stat
    taken before reading them, only when that path is where the file really
    is. Every reader of a root's files goes through here, so a symlink never
    leads a reader out of the root, nor to a second name of a file indexed
    under its own. A reader of many files passes ``real_dirs`` (see
    ``real_path``; ``root`` resolved) to resolve each folder once."""
    problem = name_problem(path)
    if problem is not None:
        return Skipped(shown_name(path), problem)
    real = relative_path(root, path) if real_dirs is None else real_path(root, path, real_dirs)
    if real != path:
        return Skipped(path, _alias_reason(root, path, real))
    try:
        fd = _open_beneath(root, path)
    except FileNotFoundError:
        return Skipped(path, "vanished")
    except OSError as exc:
        return Skipped(path, f"unreadable ({exc.strerror or exc})")
    try:
        st = os.fstat(fd)
    except OSError as exc:
        os.close(fd)
        return Skipped(path, f"unreadable ({exc.strerror or exc})")
    if not stat.S_ISREG(st.st_mode):  # checked before fdopen, which refuses a directory
        os.close(fd)
        return Skipped(path, "vanished")
    with os.fdopen(fd, "rb") as fh:
        try:
            if max_bytes is not None and st.st_size > max_bytes:
                return Skipped(path, "too large")
            return fh.read(-1 if max_bytes is None else max_bytes + 1), st
        except OSError as exc:
            return Skipped(path, f"unreadable ({exc.strerror or exc})")


def _open_beneath(root: Path, path: str) -> int:
    """A read-only descriptor of ``root/path`` that follows no link below
    ``root``: each folder is opened from the one before it (``dir_fd``) with
    O_NOFOLLOW, so a folder swapped for a link out of the root after
    ``read_file``'s check is refused (ELOOP/ENOTDIR), not followed; opening
    ``root/path`` whole followed it (a race: the check saw a folder). The
    file itself: O_NOFOLLOW as well, and O_NONBLOCK so a FIFO does not hang
    the reader."""
    nofollow = getattr(os, "O_NOFOLLOW", 0)
    last = os.O_RDONLY | nofollow | getattr(os, "O_NONBLOCK", 0)
    parts = path.split("/")
    if os.open not in os.supports_dir_fd:  # no openat: the last step only
        return os.open(root / path, last)
    folder = os.open(root, os.O_RDONLY | os.O_DIRECTORY)  # the root itself may be a link
    try:
        for part in parts[:-1]:
            inner = os.open(part, os.O_RDONLY | os.O_DIRECTORY | nofollow, dir_fd=folder)
            os.close(folder)
            folder = inner
        return os.open(parts[-1], last, dir_fd=folder)
    finally:
        os.close(folder)


# A notebook's outputs (plots as base64) are most of its bytes and none of
# what is read of it (languages.notebook_view): its bound is this many times
# a file's.
NOTEBOOK_BYTES_FACTOR = 16


def byte_limit(path: str, max_bytes: int) -> int:
    """The size bound of ``path`` under the configured one (``max_file_bytes``)."""
    return max_bytes * NOTEBOOK_BYTES_FACTOR if path.endswith(".ipynb") else max_bytes


def read_source(root: Path, path: str, max_bytes: int) -> SourceText | Skipped:
    """Read one file for indexing, or say why it was skipped (``max_bytes``:
    the configured bound; ``byte_limit`` says what it is for this path)."""
    max_bytes = byte_limit(path, max_bytes)
    read = read_file(root, path, max_bytes)
    if isinstance(read, Skipped):
        return read
    data, st = read
    if len(data) > max_bytes:
        return Skipped(path, "too large")
    if looks_binary(data):
        return Skipped(path, "binary")
    text = decode_text(data)
    if looks_minified(path, text):
        return Skipped(path, "minified")
    if looks_generated(path, text):
        return Skipped(path, "generated")
    return SourceText(path=path, text=text, size=st.st_size, mtime_ns=st.st_mtime_ns)


# The signature of a file that cannot be stat'ed though it may be there (a
# folder on the way this user may not search): it matches no row, so the file
# is read, and the read says why it is skipped (it vanished silently before).
UNKNOWN_SIGNATURE = (-1, -1)


def stat_signature(root: Path, path: str) -> tuple[int, int] | None:
    """(mtime_ns, size) of a file, None if it is gone, else UNKNOWN_SIGNATURE."""
    try:
        st = (root / path).stat()
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError:
        return UNKNOWN_SIGNATURE
    return st.st_mtime_ns, st.st_size


def relative_path(root: Path, candidate: str | os.PathLike[str]) -> str | None:
    """The repo-relative POSIX path of ``candidate``, or None when it resolves
    outside ``root`` (symlinks and ``..`` included) or nowhere (a symlink loop)."""
    root_resolved = root.resolve()
    cand = Path(candidate)
    try:
        full = (cand if cand.is_absolute() else root_resolved / cand).resolve()
    except (RuntimeError, OSError):  # a symlink loop: it leads to no file at all
        return None
    try:
        rel = full.relative_to(root_resolved)
    except ValueError:
        return None
    rel_posix = rel.as_posix()
    return None if rel_posix in ("", ".") else rel_posix
