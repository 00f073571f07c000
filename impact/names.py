"""What a name refers to: a file's bindings and imports followed (aliases,
``__init__`` and barrel re-exports, ``*``), Go packages, dotted names."""

from __future__ import annotations

import posixpath
from collections.abc import Iterable

from . import syntax
from .resolved import EXTERNAL_REF, MAX_REEXPORT_DEPTH, UNKNOWN_REF, Ref
from .syntax import GO, JS, PYTHON, Binding, SourceFile


class NameLookup:
    """A part of :class:`~ctxls.impact.resolve.Resolver` (its caches live there)."""

    def lookup_bare(self, sf: SourceFile, name: str) -> Ref:
        """What a bare ``name`` refers to in file ``sf``."""
        key = (sf.path, name)
        if key not in self._bare:
            self._bare[key] = self._lookup_bare(sf, name)
        return self._bare[key]

    def _lookup_bare(self, sf: SourceFile, name: str) -> Ref:
        if sf.family is GO:
            return self._go_lookup_bare(sf, name)
        if name in self.top_level(sf):
            return Ref("definition", sf.path, name)
        binding = sf.binding(name)
        if binding is not None:
            return self._lookup_binding(sf, binding, binding.imported, 0)
        return self._lookup_stars(sf, name, (b for b in sf.bindings if b.local == "*" and not b.reexport), 0)

    def bare_ref_at(self, sf: SourceFile, name: str, row: int) -> Ref:
        """What a bare ``name`` refers to on line ``row`` of ``sf``: what an
        import in a function holding the line gives it, else what it means
        in the file (:meth:`lookup_bare`)."""
        scoped = sf.function_binding(name, row) if sf.family is PYTHON else None
        if scoped is not None:
            return self._lookup_binding(sf, scoped, scoped.imported, 0)
        return self.lookup_bare(sf, name)

    def lookup_name(self, path: str, name: str, depth: int = 0) -> Ref:
        """What ``name`` means at the top level of module ``path`` (what
        ``from path import name`` gets), following re-exports."""
        key = (path, name)
        if key in self._names:
            return self._names[key]
        self._names[key] = UNKNOWN_REF  # a cycle of re-exports resolves to nothing
        self._names[key] = ref = self._lookup_name(path, name, depth)
        return ref

    def _lookup_name(self, path: str, name: str, depth: int) -> Ref:
        sf = self.source(path)
        if sf is None or depth > MAX_REEXPORT_DEPTH:
            return UNKNOWN_REF
        if sf.family is JS and name == "default" and sf.tree is not None:
            name = syntax.js_default_export(sf.tree) or name
        if sf.family is JS and name.startswith("default.") and sf.tree is not None:
            # `const { one } = helpers` of `import helpers`: a property of the default export.
            held = syntax.js_default_property(sf.tree, name.removeprefix("default."))
            return self.lookup_name(path, held, depth + 1) if held is not None else UNKNOWN_REF
        if sf.family is JS and sf.tree is not None:
            local = syntax.js_local_export(sf.tree, name)  # `export { impl as name }`
            if local is not None:
                return self.lookup_name(path, local, depth + 1)
        if name in self.top_level(sf):
            return Ref("definition", path, name)
        binding = None
        for candidate in sf.bindings:  # re-exports too; not an import in a function (its local)
            if candidate.local == name and candidate.function is None:
                binding = candidate
        if binding is not None:
            return self._lookup_binding(sf, binding, binding.imported, depth + 1)
        return self._lookup_stars(sf, name, (b for b in sf.bindings if b.local == "*"), depth + 1)

    def _lookup_binding(self, sf: SourceFile, binding: Binding, imported: str | None, depth: int) -> Ref:
        # `import a.b` binds `a` to the package a (a.b is reached through it by
        # its dotted path, `dotted_ref`), whatever else imports it.
        spec = binding.spec.partition(".")[0] if binding.package else binding.spec
        path, external = self.module_path(sf, spec)
        if path is None:
            return EXTERNAL_REF if external else UNKNOWN_REF
        if imported is None or (sf.family is PYTHON and _is_submodule(path, imported)
                                and self.module_path(sf, binding.spec.partition(":")[0])[0] != path):
            # `from pkg import mod`; not `from .mod import mod`, where the file
            # found is the module itself and the name its attribute.
            return Ref("module", path)
        return self.lookup_name(path, imported, depth)

    def _lookup_stars(self, sf: SourceFile, name: str, stars: Iterable[Binding], depth: int) -> Ref:
        # Python runs a file's star imports in order: the last one that
        # exports the name binds it (in JS and Go, two that do are an error).
        for star in reversed(list(stars)):
            if sf.family is PYTHON and not self._star_exports(sf, star, name):
                continue
            ref = self._lookup_binding(sf, star, name, depth)
            if ref.kind == "definition":
                return ref
        return UNKNOWN_REF

    def _star_exports(self, sf: SourceFile, star: Binding, name: str) -> bool:
        """Whether the Python ``from M import *`` ``star`` binds ``name``
        (SourceFile.star_exports); yes when M is not read."""
        path, _ = self.module_path(sf, star.spec)
        source = self.source(path) if path is not None else None
        return source is None or source.star_exports(name)

    def _go_lookup_bare(self, sf: SourceFile, name: str) -> Ref:
        binding = sf.binding(name)
        if binding is not None:
            return Ref("module", binding.spec)
        package = posixpath.dirname(sf.path)
        for definition in self.definitions_named(name):
            if definition.language == "go" and "." not in definition.symbol \
                    and posixpath.dirname(definition.path) == package:
                return Ref("definition", definition.path, definition.symbol)
        return UNKNOWN_REF

    def kind_of(self, ref: Ref) -> str | None:
        if ref.kind != "definition" or ref.path is None:
            return None
        sf = self.source(ref.path)
        return self.top_level(sf).get(ref.symbol or "") if sf is not None else None


def _is_submodule(path: str, name: str) -> bool:
    """Did ``from M import name`` resolve to the submodule ``name`` itself?"""
    stem = posixpath.splitext(posixpath.basename(path))[0]
    if stem == "__init__":
        stem = posixpath.basename(posixpath.dirname(path))
    return stem == name
