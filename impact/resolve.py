"""Does this name, at this place, refer to that definition?

A :class:`Resolver` answers for one request with a :class:`Verdict`:

* ``CONFIRMED``: the binding leads to one of the target definitions: a
  definition in the same file (Go: package), an import (followed through
  aliases, ``__init__`` and barrel re-exports, ``*``), a module attribute
  (``api.get``), a method on ``self``/``this``/``super``, a class or an
  instance of it (following base classes). A class is identified by its
  module (:class:`ClassId`), through the import that brings it into the
  file, never by its bare name; or, for a method on a receiver of
  unknown type, a name no other indexed definition and no builtin type has.
* ``OTHER``: it leads somewhere else (another definition, an external
  module, a module where a method was expected).
* ``UNKNOWN``: it might be a target, but the binding cannot be followed
  (an untyped receiver, an unresolved import, a language without binding
  analysis). These are reported as unconfirmed callers: over-counting is
  safe, under-counting is not.

Everything is memoised per resolver: a request asks about the same imports
and classes many times.
"""

from __future__ import annotations

import posixpath
from typing import Any

from tree_sitter import Node

from ctxls.index.chunk_worker import chunk_guarded
from ctxls.index.chunker import reads_definitions
from ctxls.index.discovery import looks_minified
from ctxls.index.engine import Engine
from ctxls.index.languages import mark_hazardous
from ctxls.index.model import UNPARSED_EARLIER, UNPARSED_SUSPENDED, content_hash
from ctxls.index.store import windowed_files

from . import index_view, syntax
from .classes import ClassLineage
from .index_view import Definition, SymbolSpan
from .names import NameLookup
from .receivers import ReceiverTypes
from .resolved import Base, ClassId, Receiver, Ref
from .ripgrep import word_pattern
from .syntax import GO, JS, PYTHON, SourceCache, SourceFile
from .verdicts import Verdicts


# C's languages, and the headers whose `static` functions each includer gets a copy of.
_C_LANGUAGES = frozenset({"c", "cpp", "objc", "cuda"})
_C_HEADERS = (".h", ".hh", ".hpp", ".hxx", ".h++", ".inl", ".ipp", ".cuh")


class NodeMemo:
    """A request's answers about one file's nodes, keyed ``(path, node id,
    ...)``; dropped with the file's tree (``Resolver.release``): a node id
    is an address, which another tree of the same file may reuse."""

    def __init__(self) -> None:
        self._by_path: dict[str, dict[tuple, Any]] = {}

    def __contains__(self, key: tuple) -> bool:
        return key[1:] in self._by_path.get(key[0], ())

    def __getitem__(self, key: tuple) -> Any:
        return self._by_path[key[0]][key[1:]]

    def __setitem__(self, key: tuple, value: Any) -> None:
        self._by_path.setdefault(key[0], {})[key[1:]] = value

    def drop(self, path: str) -> None:
        self._by_path.pop(path, None)


class Resolver(NameLookup, ReceiverTypes, ClassLineage, Verdicts):
    """Answers for one request; its parts live in names.py, receivers.py,
    classes.py and verdicts.py, its caches here."""

    def __init__(self, engine: Engine, sources: SourceCache):
        self.engine = engine
        self.conn = engine.store.reader()
        self._sources = sources
        self._files: dict[str, SourceFile | None] = {}
        self._read: dict[str, str] = {}  # texts read by the sweep, parsed on first use
        self._definitions: dict[str, list[Definition]] = {}
        self._rows: dict[str, list[SymbolSpan]] = {}  # each definition's own rows (index_view.file_rows)
        self._spans: dict[str, list[SymbolSpan]] = {}
        self._top_level: dict[str, dict[str, str]] = {}
        self._names: dict[tuple[str, str], Ref] = {}
        self._bases: dict[ClassId, list[Base]] = {}
        self._lineages: dict[tuple[ClassId, bool], tuple[list[ClassId], bool]] = {}
        self._implemented: dict[ClassId, set[ClassId]] = {}
        self._go_implements: dict[tuple[ClassId, ClassId], bool] = {}  # (type, interface) -> may implement
        self._setters: dict[tuple[str, str], bool] = {}  # member key -> whether it has a setter
        self._owners: dict[tuple[Receiver, str], tuple[ClassId | None, bool]] = {}
        self._bare: dict[tuple[str, str], Ref] = {}
        self._aliased: dict[tuple[str, str], bool] = {}  # (path, name) -> whether the file may alias it
        # What these four hold is keyed by node ids (NodeMemo).
        self._receivers = NodeMemo()  # (path, node id) -> Receiver
        self._import_resolver: index_view.Imports | None = None
        # (path, scope id, name) -> set[Receiver]; (..., "bindings") -> the binding name nodes
        self._scopes = NodeMemo()
        self._returns: dict[tuple[str, str], Receiver | None] = {}
        self._attributes = NodeMemo()  # (path, class id, attribute) -> Receiver | None
        # (path, scope id, attribute name) -> {dotted name: the values assigned, in order}
        self._assignments = NodeMemo()
        self._receiver_depth = 0  # receivers of receivers being worked out (receivers.py)
        self._go_module: str | None = None
        self._file_local: dict[tuple, bool] = {}  # definition key -> Resolver.file_local

    # -- files and the index -------------------------------------------------

    def remember(self, texts: dict[str, str]) -> None:
        """Current texts just read (by the sweep): ``source`` parses them
        instead of reading those files a second time."""
        for path, text in texts.items():
            self._read.setdefault(path, text)

    def release(self, path: str) -> None:
        """Done with ``path`` for now (a file the sweep has read through):
        this request stops pinning its tree. The shared SourceCache may keep
        it; else a later ``source`` parses the same text again. A hot name's
        sweep reads up to 1,150 files, and holding all their trees at once
        took ~400 MiB on django (docs/decisions.md)."""
        released = self._files.pop(path, None)
        if released is not None:
            self._read.setdefault(path, released.text)  # the same text if it is asked again
        for memo in (self._receivers, self._scopes, self._attributes, self._assignments):
            memo.drop(path)

    def source(self, path: str) -> SourceFile | None:
        """The file's current text (buffer or disk), parsed; None if unreadable
        or a minified bundle (left out of the index: no caller lives there)."""
        if path not in self._files:
            text = self._read.pop(path, None)
            if text is None:
                text = self.engine.current_text(path)
            if text is not None and looks_minified(path, text):
                text = None
            key = f"{self.engine.root}\0{path}"
            if text is not None and not self._sources.holds(key, text):
                self._vet(path, text)
            self._files[path] = self._sources.get(key, path, text) if text is not None else None
        return self._files[path]

    def _vet(self, path: str, text: str) -> None:
        """A text the index has not read (changed since its pass, or never
        indexed) goes through the chunk worker before it is parsed here: a
        grammar that hangs or crashes on it does so there, and marks it
        hazardous (``SourceFile.tree`` then parses nothing). One the index
        read as line windows though its language has a grammar (its parse
        was given up, maybe by an earlier process) is not parsed either; one
        set aside untried while its grammar was suspended is read by the
        worker first, as a changed one."""
        row = self.conn.execute("SELECT hash FROM files WHERE path = ?", (path,)).fetchone()
        if row is None or row["hash"] != content_hash(text):
            chunk_guarded(path, text)
            return
        windowed = windowed_files(self.conn, path).get(path)
        if windowed is None:
            return
        language, why = windowed
        if why == UNPARSED_SUSPENDED:  # set aside untried: its grammar was suspended
            chunk_guarded(path, text)
        elif reads_definitions(language):
            mark_hazardous(text, UNPARSED_EARLIER)

    def definitions_named(self, name: str) -> list[Definition]:
        if name not in self._definitions:
            self._definitions[name] = index_view.definitions_named(self.conn, name)
        return self._definitions[name]

    def spans(self, sf: SourceFile) -> list[SymbolSpan]:
        """The file's symbols, the rows of one symbol merged (a type's `impl` blocks)."""
        if sf.path not in self._spans:
            language, self._rows[sf.path] = index_view.file_rows(self.engine, sf.path, sf.text)
            self._spans[sf.path] = index_view.merged_spans(language, self._rows[sf.path])
        return self._spans[sf.path]

    def top_level(self, sf: SourceFile) -> dict[str, str]:
        """Top-level symbol -> kind, in the file's current text."""
        if sf.path not in self._top_level:
            self._top_level[sf.path] = {s.symbol: s.symbol_kind for s in self.spans(sf) if "." not in s.symbol}
        return self._top_level[sf.path]

    def enclosing(self, sf: SourceFile, row: int) -> SymbolSpan | None:
        """The innermost symbol whose lines hold ``row``: by each definition's
        own rows, not a symbol's merged span, which holds every line between
        two `instance Semigroup …` (doclayout's `infixr 6 <+>` was a caller
        inside `Semigroup`)."""
        self.spans(sf)
        best = None
        for span in self._rows[sf.path]:
            if span.start_line <= row <= span.end_line and (best is None or span.start_line >= best.start_line):
                best = span
        return best

    def module_path(self, sf: SourceFile, spec: str) -> tuple[str | None, bool]:
        """(indexed file an import spec names, whether it is external to the index)."""
        language = "python" if sf.family is PYTHON else sf.language or ""
        if self._import_resolver is None:
            self._import_resolver = index_view.import_resolver(self.engine)
        resolved = self._import_resolver.resolve(sf.path, spec, language)
        if resolved is not None:
            return resolved, False
        if sf.family is PYTHON:
            return None, not spec.startswith(".")
        # Relative paths, and path aliases (`@/x`, `~/x`, `#x`) that need a tsconfig.
        return None, not spec.startswith((".", "/", "@/", "~/", "#"))

    # -- definitions in files ------------------------------------------------

    def declaration(self, sf: SourceFile | None, definition: Definition) -> Node | None:
        """The declaration node of ``definition`` in its file's current text."""
        name = self.declaration_name(sf, definition)
        return syntax.declaration_of(sf.family, name) if name is not None and sf is not None \
            and sf.family is not None else None

    def declaration_name(self, sf: SourceFile | None, definition: Definition) -> Node | None:
        """The node of the name a definition declares (``f`` in ``def f``)."""
        if sf is None or sf.family is None:
            return None
        pattern = word_pattern(definition.name)
        last = min(definition.end_line, len(sf.lines) - 1)
        for row in range(definition.start_line, last + 1):
            for match in pattern.finditer(sf.lines[row]):
                node = sf.node_at(row, match.start(), match.end())
                if node is not None and syntax.declares(sf.family, node):
                    return node
        return None

    def is_public(self, definition: Definition) -> bool:
        """Visible outside its module: callers may live outside the workspace."""
        sf = self.source(definition.path)
        family = sf.family if sf is not None else None
        parts = definition.symbol.split(".")
        if family is PYTHON:
            module = posixpath.basename(definition.path).split(".")[0]
            private_module = module.startswith("_") and module not in ("__init__", "__main__")
            return not private_module and not any(
                p.startswith("_") and not (p.startswith("__") and p.endswith("__")) for p in parts)
        if family is GO:
            return definition.name[:1].isupper()
        if family is JS and sf is not None and sf.tree is not None:
            return self._js_exported(sf, definition)
        declaration = self.declaration(sf, definition)
        return declaration is None or not syntax.hidden(definition.language, declaration)

    def file_local(self, definition: Definition) -> bool:
        """Callable from its own file only: a C/C++ `static` function (or
        one in an anonymous namespace) of a source file; a header's is
        each including file's own copy."""
        if definition.language not in _C_LANGUAGES or definition.path.endswith(_C_HEADERS):
            return False
        if definition.key not in self._file_local:
            declaration = self.declaration(self.source(definition.path), definition)
            self._file_local[definition.key] = declaration is not None and syntax.c_file_local(declaration)
        return self._file_local[definition.key]

    def _js_exported(self, sf: SourceFile, definition: Definition) -> bool:
        """Exported from its module; a member: its class is, and it is not private."""
        assert sf.tree is not None
        if definition.name.startswith("#"):
            return False
        if definition.container is not None:
            name = self.declaration_name(sf, definition)
            if name is not None and name.parent is not None and any(
                    child.type == "accessibility_modifier" and syntax.text_of(child) != "public"
                    for child in name.parent.children):
                return False
        top = definition.symbol.split(".")[0]
        if syntax.js_default_export(sf.tree) == top:
            return True
        top_definition = next((d for d in self.definitions_named(top) if d.path == sf.path), None)
        top_name = self.declaration_name(sf, top_definition) if top_definition else None
        if top_name is not None and any(a.type == "export_statement" for a in syntax.ancestors(top_name)):
            return True
        return any(b.local == top and b.reexport for b in sf.bindings) or _js_export_clause_names(sf, top)


def _js_export_clause_names(sf: SourceFile, name: str) -> bool:
    """``export { name }`` or ``module.exports`` mentioning ``name``."""
    assert sf.tree is not None
    for statement in sf.tree.root_node.named_children:
        text = syntax.text_of(statement)
        if statement.type == "export_statement" and name in text:
            return True
        if statement.type == "expression_statement" and ("module.exports" in text or "exports." in text) \
                and word_pattern(name).search(text):
            return True
    return False
