"""Locate: what a path or dotted name written in an issue names among the indexed files.

:class:`PathIndex` resolves a written path by its longest unambiguous tail
(a path from the repository's root, as a forge's URL names one, whole),
an installed package's path, a ``node_modules`` path, a Cargo registry's
path or Go's module cache's path by the repository's own import roots,
packages, crates and modules, a Go frame's file by its function's package,
and a dotted name by Python's import resolution.
"""

from __future__ import annotations

import os
import posixpath
import re
import sys
from collections.abc import Callable

from ctxls.index.imports import ImportResolver
from ctxls.index.locate_text import INSTALLED_DIRS, in_standard_library
from ctxls.index.model import ImportRef

_PYTHON_FILES = (".py", ".pyi", ".pyx")


def _is_absolute(written: str) -> bool:
    """A path of the writer's machine: from its root, home or a drive."""
    return written.startswith(("/", "~")) or re.match(r"[A-Za-z]:[\\/]", written) is not None


# A crate's release in its registry folder's name (`anyhow-1.0.75`, `tokio-util-0.7.10`).
_CRATE_RELEASE = re.compile(r"\d+\.\d+\.\d+")
# Rust's standard library as backtraces print it: `/rustc/<commit>/library/core/src/result.rs`.
_RUST_COMMIT = re.compile(r"[0-9a-f]{7,40}")


def _registry_crate(parts: list[str]) -> tuple[str, int] | None:
    """(crate, where its files start in ``parts``) for a path into a Cargo
    registry's copy of a crate (`…/registry/src/<index>/<crate>-<version>/…`)
    or into Rust's standard library (crate ``""``: no repository's)."""
    if len(parts) > 3 and parts[0] == "rustc" and _RUST_COMMIT.fullmatch(parts[1]) and parts[2] == "library":
        return "", 3
    for at in range(len(parts) - 4):
        if parts[at] == "registry" and parts[at + 1] == "src":
            pieces = parts[at + 3].split("-")
            release = next((i for i in range(1, len(pieces)) if _CRATE_RELEASE.match(pieces[i])), None)
            if release is not None:
                return "-".join(pieces[:release]), at + 4
    return None


def _go_module_cache(parts: list[str]) -> tuple[str, int] | None:
    """(module path, where its files start in ``parts``) for a path into Go's
    module cache (`…/pkg/mod/github.com/acme/flagx@v1.0.5/…`). The cache
    writes a capital as `!` and the letter (`github.com/!burnt!sushi/toml`)."""
    cache = next((i for i in range(len(parts) - 1, 0, -1) if parts[i] == "mod" and parts[i - 1] == "pkg"), None)
    if cache is None:
        return None
    # Only the module path's last element carries the `@<version>`.
    versioned = next((i for i in range(cache + 1, len(parts)) if "@" in parts[i]), None)
    if versioned is None or parts[versioned].startswith("@"):  # `cache/download/<module>/@v/`
        return None
    module = "/".join(parts[cache + 1:versioned] + [parts[versioned].split("@", 1)[0]])
    return re.sub(r"!([a-z])", lambda m: m.group(1).upper(), module), versioned + 1


def _go_package(function: str) -> list[str] | None:
    """The import path's elements of the package a Go frame's function is in
    (`github.com/acme/flagx/internal` of `github.com/acme/flagx/internal.Split`,
    `main` of `main.main`): up to the first dot after the last slash, before
    any receiver or type arguments (which may hold slashes of their own). Go
    writes a dot in that last element as `%2e`."""
    name = re.split(r"[(\[]", function, maxsplit=1)[0]
    folder, _, last = name.rpartition("/")
    package, dot, _ = last.partition(".")
    if not dot or not package:
        return None
    return (folder.split("/") if folder else []) + [package.replace("%2e", ".")]


def go_module_path(go_mod: str) -> str | None:
    """The module path a go.mod's ``module`` directive declares, if any."""
    lines = iter(go_mod.splitlines())
    for line in lines:
        words = line.split("//", 1)[0].split()
        if words[:1] != ["module"]:
            continue
        if words[1:] == ["("]:  # `module (` / path / `)`
            words = ["module"] + next((w for w in (n.split("//", 1)[0].split() for n in lines) if w), [])
        return words[1].strip("\"`") if len(words) == 2 else None
    return None


def _root_prefixes(root: str | os.PathLike[str] | None) -> tuple[str, ...]:
    """``root`` as an absolute path into it starts ("/repo/"), as given and resolved."""
    if root is None:
        return ()
    given = os.path.abspath(root)
    return tuple(dict.fromkeys(folder.replace("\\", "/").rstrip("/") + "/"
                               for folder in (given, os.path.realpath(given))))


class PathIndex:
    """Indexed paths by their trailing components, a Python module resolver,
    and ``package_name``: the name of the JavaScript package a folder holds
    (its package.json's; ``""`` is the root), None when it holds none."""

    def __init__(self, paths: list[str],
                 package_name: Callable[[str], str | None] | None = None,
                 crate_name: Callable[[str], str | None] | None = None,
                 root: str | os.PathLike[str] | None = None,
                 go_module: Callable[[str], str | None] | None = None):
        self.package_name = package_name
        # The name of the Rust crate a folder holds (its Cargo.toml's), None when none.
        self.crate_name = crate_name
        # The path of the Go module a folder holds (its go.mod's), None when none.
        self.go_module = go_module
        # This checkout's folder as an absolute path may write it (as given,
        # and with its links resolved): a path under it names its file whole.
        self.root_prefixes = _root_prefixes(root)
        self.by_suffix: dict[str, list[str]] = {}
        # No written path's tail longer than the deepest file names one: a
        # pasted path of 20,000 components was 20,000 joins of up to 20,000.
        self.max_parts = 0
        for path in paths:
            parts = path.split("/")
            self.max_parts = max(self.max_parts, len(parts))
            for first in range(len(parts)):
                self.by_suffix.setdefault("/".join(parts[first:]), []).append(path)
        self.resolver = ImportResolver(paths)

    def resolve_path(self, written: str, function: str | None = None) -> tuple[str, int] | None:
        """The indexed file a written path names (longest matching tail) and how
        many components matched. A bare tail of one component counts only when
        the path was written bare and one file has that name.

        The path of an installed package (after ``site-packages`` or
        ``dist-packages``) is an import path: it names a file only if it is one
        of the repository's modules from an import root (``shop/cart.py`` for
        ``src/shop/cart.py``), never another library's file of the same tail.
        The standard library names none. Another absolute path names a file
        only by its whole repository path or a tail from an import root (a
        checkout elsewhere), not by a tail its own application happens to share
        (``/home/me/app/utils/helpers.py`` is not ``src/shop/utils/helpers.py``);
        only Python's import roots are known, so other languages' absolute paths
        still name a file by their longest unique tail. A Cargo registry's copy
        of a crate (``…/registry/src/<index>/shop-0.1.0/src/de/mod.rs``) is read
        as ``node_modules`` is: only a crate of the repository's own names its
        file; Rust's standard library (``/rustc/<commit>/library/…``) none. So
        is Go's module cache (``…/pkg/mod/<module>@<version>/…``) by the
        repository's Go modules. A Go frame's ``function`` names its package
        (``github.com/acme/flagx/internal.Split``): when that is a package of
        one of the repository's modules, the file of that name in its folder
        is the frame's, however the path's folders were written (a CI
        checkout's ``/home/runner/work/flagx/flagx/flag.go``); ``main.main``
        of a user's ``/home/jo/app/main.go`` names no module's."""
        normal = written.replace("\\", "/")
        in_checkout = self._in_checkout(normal)
        if in_checkout is not None:
            return in_checkout
        parts = [p for p in normal.split("/") if p not in ("", ".")]
        if "node_modules" in parts:
            at = len(parts) - 1 - parts[::-1].index("node_modules")
            rest = parts[at + 1:]
            size = 2 if rest[:1] and rest[0].startswith("@") else 1  # `@scope/name`
            return self._from_package("/".join(rest[:size]), rest[size:], self.package_name)
        crate = _registry_crate(parts)
        if crate is not None:
            return self._from_package(crate[0], parts[crate[1]:], self.crate_name) if crate[0] else None
        # Without the repository's Go modules known, the module cache's path
        # is read as any other absolute path.
        cached = _go_module_cache(parts) if self.go_module is not None else None
        if cached is not None:
            return self._from_package(cached[0], parts[cached[1]:], self.go_module)
        installed = [i for i, part in enumerate(parts)
                     if part in INSTALLED_DIRS or part.endswith(".egg")]
        if installed:
            rest = parts[installed[-1] + 1:]
            found = self._from_import_root(rest)
            return (found, len(rest)) if found is not None else None
        if in_standard_library(normal):
            return None
        if function is not None and parts and parts[-1].endswith(".go"):
            found = self._from_go_function(parts, function)
            if found is not None:
                return found
        for first in range(max(0, len(parts) - self.max_parts), len(parts)):
            tail = parts[first:]
            found = self.by_suffix.get("/".join(tail))
            if not found:
                continue
            if len(tail) == 1 and (len(parts) > 1 or len(found) > 1):
                return None
            if len(found) != 1:
                return None  # ambiguous tail
            if (_is_absolute(normal) and found[0].endswith(_PYTHON_FILES)
                    and found[0] != "/".join(tail) and self._from_import_root(tail) != found[0]):
                return None
            return found[0], len(tail)
        return None

    def _in_checkout(self, normal: str) -> tuple[str, int] | None:
        """The indexed file an absolute path into this checkout names (its
        repository path after the root's folders), else None. A tail of one
        component is refused in a path written with folders, but here the
        folders are the root itself: ``<root>/app.py`` is ``app.py``."""
        for prefix in self.root_prefixes:
            if normal.startswith(prefix):
                found = self.resolve_repository_path(normal[len(prefix):])
                if found is not None:
                    return found
        return None

    def resolve_repository_path(self, path: str) -> tuple[str, int] | None:
        """The indexed file of ``path`` whole, a path from the repository's
        root (``index.js`` is the root's, whatever other ``index.js`` there
        are), and its components; else None."""
        parts = [p for p in path.replace("\\", "/").split("/") if p not in ("", ".")]
        if parts and "/".join(parts) in self.by_suffix.get(parts[-1], ()):
            return "/".join(parts), len(parts)
        return None

    def _from_package(self, package: str, inner: list[str],
                      name_of: Callable[[str], str | None] | None) -> tuple[str, int] | None:
        """The file ``inner`` names in another package's copy (``node_modules/<package>/``,
        a Cargo registry's ``<crate>-<version>/``): the repository's file only
        when the package is one of the repository's own (``name_of`` the folder
        holding the rest of the path: its package.json's or Cargo.toml's name),
        read from that package's folder; another library's file of the same
        tail (``node_modules/other/lib/index.js`` against the repository's
        ``lib/index.js``) names nothing."""
        tail = "/".join(inner)
        if not tail or name_of is None:
            return None
        for path in self.by_suffix.get(tail, ()):
            if path == tail or path.endswith("/" + tail):
                if name_of(path[:-len(tail)].rstrip("/")) == package:
                    return path, len(inner)
        return None

    def _from_go_function(self, parts: list[str], function: str) -> tuple[str, int] | None:
        """The file ``parts`` names by its Go frame's ``function``: the file of
        its name in the folder of the function's package, when that package
        is one of the repository's modules' (the module's folder, then the
        package's path below the module's, as the written path ends)."""
        package = _go_package(function)
        if package is None or self.go_module is None:
            return None
        # The module is the package's path or a leading part of it; below it,
        # the package's folders, which the written path must end with too.
        for below in range(min(len(package) - 1, len(parts) - 1, self.max_parts) + 1):
            inner = package[len(package) - below:] + parts[-1:]
            if parts[len(parts) - len(inner):] != inner:
                break
            found = self._from_package("/".join(package[:len(package) - below]), inner, self.go_module)
            if found is not None:
                return found
        return None

    def _from_import_root(self, parts: list[str]) -> str | None:
        """The file ``parts`` names read from an import root: ``shop/cart.py`` is
        ``src/shop/cart.py`` when ``src/shop`` is the package ``shop``; also a
        data file under a package (``shop/templates/cart.html``)."""
        if not parts:
            return None
        stem, dot, extension = parts[-1].rpartition(".")
        module = parts[:-1] + ([] if stem == "__init__" else [stem])
        if dot and extension in ("py", "pyi") and module and all(p.isidentifier() for p in module):
            found = self.resolver.resolve("", ImportRef(".".join(module), 0), "python")
            if found is not None and posixpath.basename(found) == parts[-1]:
                return found
        if len(parts) > 1 and parts[0].isidentifier():
            package = self.resolver.resolve("", ImportRef(parts[0], 0), "python")
            if package is not None and posixpath.basename(package).startswith("__init__."):
                path = posixpath.join(posixpath.dirname(package), *parts[1:])
                if path in self.resolver:
                    return path
        return None

    def resolve_module(self, dotted: str) -> tuple[str, str] | None:
        """(file, the module prefix that resolved) for ``a.b.c.Name``: the longest
        importable prefix."""
        parts = dotted.split(".")
        for end in range(len(parts), 0, -1):
            module = ".".join(parts[:end])
            found = self.resolver.resolve("", ImportRef(module, 0), "python")
            if found is not None:
                return found, module
        return None

    def resolve_module_tail(self, dotted: str) -> tuple[str, str] | None:
        """(file, the prefix that resolved) for a dotted name written from inside
        its package (``contrib.auth.validators``, ``syndication.views.Feed``):
        the one file whose path ends in two or more of its leading parts. A name
        starting at a standard-library module (``logging.handlers``,
        ``json.decoder.JSONDecodeError``) is the standard library's, not a
        namesake folder's in the repository."""
        parts = dotted.split(".")
        if parts[0] in sys.stdlib_module_names:
            return None
        for end in range(len(parts), 1, -1):
            stem = "/".join(parts[:end])
            for tail in (f"{stem}.py", f"{stem}/__init__.py"):
                found = self.resolve_path(tail)
                if found is not None and found[1] >= 2:
                    return found[0], ".".join(parts[:end])
        return None

