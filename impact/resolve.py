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

import enum
import posixpath
import re
from collections.abc import Iterable
from dataclasses import dataclass

from tree_sitter import Node

from ctxls.index.engine import Engine
from ctxls.index.languages import language_for_path

from . import index_view, syntax
from .builtin_names import BUILTIN_FUNCTIONS, BUILTIN_METHODS
from .index_view import CLASS_KINDS, Definition, SymbolSpan
from .ripgrep import word_pattern
from .syntax import GO, JS, PYTHON, Binding, SourceCache, SourceFile


class Verdict(enum.IntEnum):
    OTHER = 0
    UNKNOWN = 1
    CONFIRMED = 2


@dataclass(frozen=True)
class Ref:
    """What a name refers to: a ``definition`` (path, top-level symbol), a
    ``module`` (its file; Go: its import path), something ``external`` to
    the index, or ``unknown``."""

    kind: str
    path: str | None = None
    symbol: str | None = None


UNKNOWN_REF = Ref("unknown")
EXTERNAL_REF = Ref("external")


@dataclass(frozen=True)
class ClassId:
    """A class by where it is defined, never by its bare name alone: two
    classes named alike in two modules (a ``v1/`` compatibility copy) are two
    classes. ``home`` is the defining file (Go: the package directory, where
    methods live in any file); None when only the name is known (a base that
    cannot be resolved), which is then matched by name and never confirms."""

    home: str | None
    symbol: str  # as the index qualifies it in its file: `Outer.Inner`

    @property
    def name(self) -> str:
        return self.symbol.rsplit(".", 1)[-1]


def class_home(path: str) -> str:
    """Where a class's members live: its file; Go: its package directory."""
    return posixpath.dirname(path) if path.endswith(".go") else path


def container_id(definition: Definition) -> ClassId | None:
    """The class a member definition belongs to."""
    head, dot, _ = definition.symbol.rpartition(".")
    return ClassId(class_home(definition.path), head) if dot else None


@dataclass(frozen=True)
class Base:
    cls: ClassId
    known: bool  # an indexed class, or surely outside the index (a builtin, an external import)


@dataclass(frozen=True)
class Receiver:
    """What the object of a member access (``recv.name``) is."""

    kind: str  # self | super | class | instance | module | external | unknown
    cls: ClassId | None = None
    module: str | None = None
    # The class's direct bases read from its own node (self, super), when at
    # hand: a class nested in a function is not in the index.
    bases: tuple[Base, ...] | None = None


UNKNOWN_RECEIVER = Receiver("unknown")


@dataclass(frozen=True)
class Match:
    """A verdict with the targets it leads to (confirmed) or may lead to
    (unknown), and, when unknown, why (:data:`UNCONFIRMED_REASONS`)."""

    verdict: Verdict
    keys: frozenset[tuple[str, str]] = frozenset()
    reason: str | None = None


OTHER_MATCH = Match(Verdict.OTHER)
# Why a use stays unconfirmed, most likely a true call first: the order
# unconfirmed callers are listed in.
UNCONFIRMED_REASONS = (
    "override",  # self.m() in a base: a subclass's override at run time
    "untyped-receiver",  # obj.m() where nothing tells obj's type, and few classes define m
    "unknown-base",  # the class derives from a base outside what is known
    "unresolved-class",  # the receiver's class is known by name only
    "unresolved-import",  # a bare name whose import cannot be followed
    "parameter",  # a parameter named like the target (a test fixture's value)
    "several-definitions",  # the only definitions of the name are several of the targets
    "name-only-language",  # a language without binding analysis
    "shared-name",  # obj.m() where many unrelated classes of the project define m
    "builtin-name",  # obj.m() where the standard library or builtins have m (get, close)
)
# Classes other than the targets' defining a method name that make an
# untyped `obj.name()` a "shared-name" use.
SHARED_NAME_CLASSES = 3


class Targets:
    """The definitions a question is about, with what verdicts ask of them
    precomputed (a name like `__init__` has hundreds)."""

    def __init__(self, definitions: Iterable[Definition]):
        self.definitions = list(definitions)
        self.keys = frozenset(d.key for d in self.definitions)
        self.members = [d for d in self.definitions if d.container is not None]
        self.containers = frozenset(d.container for d in self.members)  # names
        self.container_ids = frozenset(container_id(d) for d in self.members)
        self.only_methods = all(d.symbol_kind == "method" for d in self.definitions)
        self.module_level = [d for d in self.definitions if d.container is None]
        self.module_keys = frozenset(d.key for d in self.module_level)
        self.js_members = [d for d in self.members if syntax.family_for(d.language) is JS]


# Bounds on following chains: re-exports and base classes.
MAX_REEXPORT_DEPTH = 8
MAX_BASES = 64


class Resolver:
    def __init__(self, engine: Engine, sources: SourceCache):
        self.engine = engine
        self.conn = engine.store.reader()
        self._sources = sources
        self._files: dict[str, SourceFile | None] = {}
        self._read: dict[str, str] = {}  # texts read by the sweep, parsed on first use
        self._definitions: dict[str, list[Definition]] = {}
        self._spans: dict[str, list[SymbolSpan]] = {}
        self._top_level: dict[str, dict[str, str]] = {}
        self._names: dict[tuple[str, str], Ref] = {}
        self._bases: dict[ClassId, list[Base]] = {}
        self._lineages: dict[tuple[ClassId, bool], tuple[list[ClassId], bool]] = {}
        self._implemented: dict[ClassId, set[ClassId]] = {}
        self._owners: dict[tuple[Receiver, str], tuple[ClassId | None, bool]] = {}
        self._bare: dict[tuple[str, str], Ref] = {}
        self._receivers: dict[tuple[str, int], Receiver] = {}
        self._import_resolver: index_view.Imports | None = None
        self._scopes: dict[tuple[str, int, str], set[Receiver]] = {}
        self._returns: dict[tuple[str, str], Receiver | None] = {}
        self._attributes: dict[tuple[str, int, str], Receiver | None] = {}
        self._assignments: dict[tuple[str, int, str], list[Node]] = {}
        self._go_module: str | None = None

    # -- files and the index -------------------------------------------------

    def remember(self, texts: dict[str, str]) -> None:
        """Current texts just read (by the sweep): ``source`` parses them
        instead of reading those files a second time."""
        for path, text in texts.items():
            self._read.setdefault(path, text)

    def source(self, path: str) -> SourceFile | None:
        """The file's current text (buffer or disk), parsed; None if unreadable."""
        if path not in self._files:
            text = self._read.pop(path, None)
            if text is None:
                text = self.engine.current_text(path)
            self._files[path] = (self._sources.get(f"{self.engine.root}\0{path}", path, text)
                                 if text is not None else None)
        return self._files[path]

    def definitions_named(self, name: str) -> list[Definition]:
        if name not in self._definitions:
            self._definitions[name] = index_view.definitions_named(self.conn, name)
        return self._definitions[name]

    def spans(self, sf: SourceFile) -> list[SymbolSpan]:
        if sf.path not in self._spans:
            self._spans[sf.path] = index_view.file_spans(self.engine, sf.path, sf.text)
        return self._spans[sf.path]

    def top_level(self, sf: SourceFile) -> dict[str, str]:
        """Top-level symbol -> kind, in the file's current text."""
        if sf.path not in self._top_level:
            self._top_level[sf.path] = {s.symbol: s.symbol_kind for s in self.spans(sf) if "." not in s.symbol}
        return self._top_level[sf.path]

    def enclosing(self, sf: SourceFile, row: int) -> SymbolSpan | None:
        """The innermost symbol whose lines hold ``row``."""
        best = None
        for span in self.spans(sf):
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

    # -- what names refer to -------------------------------------------------

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
        path, external = self.module_path(sf, binding.spec)
        if path is None:
            return EXTERNAL_REF if external else UNKNOWN_REF
        if imported is None or (sf.family is PYTHON and _is_submodule(path, imported)
                                and self.module_path(sf, binding.spec.partition(":")[0])[0] != path):
            # `from pkg import mod`; not `from .mod import mod`, where the file
            # found is the module itself and the name its attribute.
            return Ref("module", path)
        return self.lookup_name(path, imported, depth)

    def _lookup_stars(self, sf: SourceFile, name: str, stars: Iterable[Binding], depth: int) -> Ref:
        for star in stars:
            ref = self._lookup_binding(sf, star, name, depth)
            if ref.kind == "definition":
                return ref
        return UNKNOWN_REF

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

    # -- receivers and classes -----------------------------------------------

    def receiver(self, sf: SourceFile, node: Node, site: Node) -> Receiver:
        """What the object of a member access is (``node`` is the object,
        ``site`` the member's name)."""
        key = (sf.path, node.id)
        if key not in self._receivers:
            self._receivers[key] = UNKNOWN_RECEIVER  # a value defined through itself: no cycle
            self._receivers[key] = self._receiver(sf, node, site)
        return self._receivers[key]

    def _receiver(self, sf: SourceFile, node: Node, site: Node) -> Receiver:
        family = sf.family
        assert family is not None
        kind = node.type
        if kind == "this":
            return self._own_class("self", sf, site)
        if kind == "super":
            return self._own_class("super", sf, site)
        callee = syntax.callee_of(family, node)
        if family is PYTHON and callee is not None and syntax.text_of(callee) == "super":
            arguments = node.child_by_field_name("arguments")
            first = arguments.named_child(0) if arguments is not None and arguments.named_child_count else None
            named = self.class_of(self.bare_ref_at(sf, syntax.text_of(first), first.start_point.row)) \
                if first is not None and syntax.is_identifier(first) else None
            if named is not None:  # super(C, self): the bases of C, wherever it is called
                return Receiver("super", named)
            return self._own_class("super", sf, site)
        if syntax.is_identifier(node):
            name = syntax.text_of(node)
            if family is PYTHON and name in family.self_names:
                return self._own_class("self", sf, site)
            if family is GO:
                method = next((a for a in syntax.ancestors(site) if a.type == "method_declaration"), None)
                if method is not None and syntax.go_receiver(method)[0] == name:
                    return Receiver("self", ClassId(posixpath.dirname(sf.path), syntax.go_receiver(method)[1]))
            local = self._local_receiver(sf, site, name)
            if local is not None:
                return local
            ref = self.bare_ref_at(sf, name, site.start_point.row)
            if family is JS and ref.kind == "unknown" and name in BUILTIN_FUNCTIONS["js"]:
                return Receiver("external")  # Object.defineProperty, Reflect.get, console.log
            return self._receiver_of(ref)
        if family is PYTHON and kind == "attribute":
            owner, attribute = node.child_by_field_name("object"), node.child_by_field_name("attribute")
            if owner is not None and attribute is not None and syntax.text_of(owner) in family.self_names:
                held = self._self_attribute(sf, site, syntax.text_of(attribute))
                if held is not None:  # self.engine.step(), self.engine = Engine() in the class
                    return held
            elif owner is not None and attribute is not None:
                holder = self.receiver(sf, owner, attribute)
                if holder.kind == "instance" and holder.cls is not None:  # x.engine.step(), x an Engine holder
                    held = self._member_attribute(holder.cls, syntax.text_of(attribute))
                    if held is not None:
                        return held
        if family is JS and kind == "member_expression":
            owner, attribute = node.child_by_field_name("object"), node.child_by_field_name("property")
            held = None
            if owner is not None and attribute is not None and owner.type == "this":
                held = self._self_attribute(sf, site, syntax.text_of(attribute))  # this.engine.step()
            elif owner is not None and attribute is not None:
                holder = self.receiver(sf, owner, attribute)
                if holder.kind == "instance" and holder.cls is not None:  # car.engine.step()
                    held = self._member_attribute(holder.cls, syntax.text_of(attribute))
            if held is not None:
                return held
        if family is PYTHON and kind == "attribute" and re.fullmatch(r"[\w.\s]+", syntax.text_of(node)):
            assigned = self._assigned_attribute(sf, node, site)
            if assigned is not None:  # `sys.stdout = Buffer()` then `sys.stdout.reset()`
                return assigned
            return self._receiver_of(self.dotted_ref(sf, syntax.text_of(node), site.start_point.row))
        return self._value_of(sf, node)  # C(...), new C(), T{...}, a literal

    def _receiver_of(self, ref) -> Receiver:
        """What a name or dotted name bound in the file stands for as a receiver."""
        if ref.kind == "module":
            return Receiver("module", module=ref.path)
        if ref.kind == "external":
            return Receiver("external")
        cls = self.class_of(ref)
        return Receiver("class", cls) if cls is not None else UNKNOWN_RECEIVER

    def _own_class(self, kind: str, sf: SourceFile, site: Node) -> Receiver:
        assert sf.family is not None
        name, node = syntax.enclosing_class(sf.family, site)
        if name is None:
            return Receiver(kind)
        if node is None:  # Go: the method's receiver type, in this package
            return Receiver(kind, ClassId(posixpath.dirname(sf.path), name))
        return Receiver(kind, self.class_at(sf, node), bases=tuple(self._node_bases(sf, node)))

    def class_at(self, sf: SourceFile, class_node: Node) -> ClassId:
        """The class a class node of ``sf`` declares: the innermost class span
        of its name holding its first line; a class the index does not list
        (nested in a function) is still this file's."""
        name = syntax.text_of(class_node.child_by_field_name("name"))
        row = class_node.start_point.row
        spans = [s for s in self.spans(sf) if s.symbol_kind in CLASS_KINDS
                 and s.symbol.rsplit(".", 1)[-1] == name and s.start_line <= row <= s.end_line]
        symbol = max(spans, key=lambda s: s.start_line).symbol if spans else name
        return ClassId(class_home(sf.path), symbol)

    def _local_receiver(self, sf: SourceFile, site: Node, name: str) -> Receiver | None:
        """What a variable holds when the enclosing function, else the module,
        assigns it (None: neither does; an import or a definition decides).
        Every binding must agree: ``x = C()`` / ``x := &C{}`` /
        ``const x = new C()`` / ``x: C`` make an instance of C; literals,
        ``dict()``, ``**kwargs`` make builtin values."""
        family = sf.family
        assert family is not None and sf.tree is not None
        if sf.binding(name) is not None or sf.function_binding(name, site.start_point.row) is not None:
            return None  # an import (maybe in the function) decides
        function = next((a for a in syntax.ancestors(site) if a.type in family.functions), None)
        module = sf.tree.root_node
        for scope in (function, module):
            if scope is None or (scope.id == module.id and name in self.top_level(sf)):
                continue
            found = self._scope_values(sf, scope, name)
            if found:
                return next(iter(found)) if len(found) == 1 else UNKNOWN_RECEIVER
        return None

    def _scope_values(self, sf: SourceFile, scope: Node, name: str) -> set[Receiver]:
        """What the bindings of ``name`` directly in ``scope`` (a function or
        the module, not a nested function) give it."""
        key = (sf.path, scope.id, name)
        if key not in self._scopes:
            family = sf.family
            assert family is not None
            found: set[Receiver] = set()
            for row, start, end in sf.occurrences(name, range(scope.start_point.row, scope.end_point.row + 1)):
                node = sf.node_at(row, start, end)
                if node is None or not syntax.is_identifier(node):
                    continue
                owner = next((a for a in syntax.ancestors(node) if a.type in family.functions), None)
                if owner is not None and node.parent is not None and node.parent.id == owner.id \
                        and syntax.declares(family, node):
                    # A function's own name is bound where the function is, not in it.
                    owner = next((a for a in syntax.ancestors(owner) if a.type in family.functions), None)
                if (owner.id if owner is not None else sf.tree.root_node.id) != scope.id:
                    continue  # a nested function's own
                value = self._bound_value(sf, node)
                if value is not None:
                    found.add(value)
            self._scopes[key] = found
        return self._scopes[key]

    def _bound_value(self, sf: SourceFile, name_node: Node) -> Receiver | None:
        """What binding ``name_node`` gives its name (None: not a binding)."""
        family = sf.family
        assert family is not None
        parent = name_node.parent
        if parent is None:
            return None
        if parent.type == "dictionary_splat_pattern" or (
                parent.type == "list_splat_pattern" and parent.parent is not None
                and parent.parent.type in ("parameters", "lambda_parameters")):
            return Receiver("external")  # **kwargs: a dict; *args: a tuple
        if parent.type in ("typed_parameter", "typed_default_parameter", "required_parameter",
                           "optional_parameter", "parameter_declaration") \
                and syntax.field_of(name_node) in ("", "name", "pattern"):
            annotation = parent.child_by_field_name("type")
            return self._annotated(sf, annotation) if annotation is not None else UNKNOWN_RECEIVER
        if not syntax.is_bound(family, name_node) and not syntax.declares(family, name_node):
            return None
        if parent.type == "assignment" and parent.child_by_field_name("type") is not None \
                and syntax.field_of(name_node) == "left":  # `x: C = make()`: the annotation says
            return self._annotated(sf, parent.child_by_field_name("type"))  # type: ignore[arg-type]
        if parent.type == "variable_declarator" and parent.child_by_field_name("type") is not None \
                and syntax.field_of(name_node) == "name":  # TS `const x: C = make()`
            return self._annotated(sf, parent.child_by_field_name("type"))  # type: ignore[arg-type]
        value = _assigned_value(name_node)
        return self._value_of(sf, value) if value is not None else UNKNOWN_RECEIVER

    def _annotated(self, sf: SourceFile, annotation: Node) -> Receiver:
        text = syntax.text_of(annotation)
        if sf.family is JS:  # TS `Subject<T>` is a Subject, whatever T
            text = _without_type_arguments(text)
        words = re.findall(r"[A-Za-z_]\w*", text)
        if len(words) != 1:  # Optional[C], C | None, Python generics: not one class
            return UNKNOWN_RECEIVER
        if words[0] in ("dict", "list", "str", "bytes", "set", "tuple", "int", "float", "string",
                        "number", "boolean"):
            return Receiver("external")
        made = self._class_named(sf, words[0])
        return Receiver("instance", made) if made else UNKNOWN_RECEIVER

    def _value_of(self, sf: SourceFile, value: Node) -> Receiver:
        family = sf.family
        assert family is not None
        if value.type == "unary_expression" and value.named_child_count:  # Go: &T{}
            value = value.named_child(0) or value
        if value.type in family.literals:
            return Receiver("external")
        if value.type == "composite_literal":  # Go: T{...}, pkg.T{...}, map[...]...{}, []T{...}
            type_node = value.child_by_field_name("type")
            package = None
            if type_node is not None and type_node.type == "qualified_type":
                package = syntax.text_of(type_node.child_by_field_name("package"))
                type_node = type_node.child_by_field_name("name")
            if type_node is None or not syntax.is_identifier(type_node):
                return Receiver("external")
            cls = self._go_type(sf, package, syntax.text_of(type_node))
            return Receiver("instance", cls) if cls is not None else UNKNOWN_RECEIVER
        if family is PYTHON and value.type == "attribute":  # x = self.engine
            held = self.receiver(sf, value, value)
            return held if held.kind in ("instance", "class", "module", "external") else UNKNOWN_RECEIVER
        callee = syntax.callee_of(family, value)  # C(...), new C()
        if family is PYTHON and callee is not None and callee.type == "attribute":
            owner, attribute = callee.child_by_field_name("object"), callee.child_by_field_name("attribute")
            if owner is not None and attribute is not None and syntax.text_of(owner) in family.self_names:
                held = self._self_attribute(sf, callee, syntax.text_of(attribute))
                if held is not None and held.kind == "class":  # self.backend() of `backend = Store`
                    return Receiver("instance", held.cls)
        if callee is not None and syntax.is_identifier(callee):
            called = syntax.text_of(callee)
            ref = self.bare_ref_at(sf, called, callee.start_point.row)
            made = self.class_of(ref)
            if made:
                return Receiver("instance", made)
            returned = self._returned(ref) if family in (PYTHON, JS) else None
            if returned is not None:  # `make()` of `def make() -> C`, `function make(): C`
                return returned
            if called in BUILTIN_FUNCTIONS[family.name] and ref.kind != "definition":
                return Receiver("external")  # dict(), list(), str(), make(), Object()...
        return UNKNOWN_RECEIVER

    def _returned(self, ref: Ref) -> Receiver | None:
        """What a call of the function ``ref`` returns, when its return
        annotation names one class (None: not a function, not annotated)."""
        if ref.kind != "definition" or self.kind_of(ref) != "function" or ref.path is None:
            return None
        key = (ref.path, f"{ref.symbol}()")
        if key not in self._returns:
            returned: Receiver | None = None
            sf = self.source(ref.path)
            definition = next((d for d in self.definitions_named(ref.symbol or "")
                               if d.path == ref.path and d.symbol == ref.symbol), None)
            node = self.declaration(sf, definition) if definition is not None else None
            annotation = node.child_by_field_name("return_type") if node is not None else None
            if sf is not None and annotation is not None:
                returned = self._annotated(sf, annotation)
            self._returns[key] = returned
        return self._returns.get(key)

    def _self_attribute(self, sf: SourceFile, site: Node, attribute: str) -> Receiver | None:
        """What ``self.attribute`` holds in the class around ``site`` (see
        :meth:`_class_attribute`)."""
        family = sf.family
        assert family is not None
        _, class_node = syntax.enclosing_class(family, site)
        return self._class_attribute(sf, class_node, attribute) if class_node is not None else None

    def _member_attribute(self, cls: ClassId, attribute: str) -> Receiver | None:
        """What ``obj.attribute`` holds on an instance of the indexed class
        ``cls``: the first class up its lineage assigning it (see :meth:`_class_attribute`)."""
        for owner in self.lineage(cls)[0]:
            declared = self.class_declarations(owner) if owner.home is not None else []
            if declared:
                held = self._class_attribute(*declared[0], attribute)
                if held is not None:
                    return held
        return None

    def _class_attribute(self, sf: SourceFile, class_node: Node, attribute: str) -> Receiver | None:
        """What ``self.attribute`` holds in the class ``class_node``, when every
        assignment to it there (``self.x = C()``, ``self.x = x`` of a parameter
        ``x: C``, ``x: C`` in the class body) gives one class; ``None``
        placeholders aside. None: no such assignment, or several types."""
        family = sf.family
        assert family is not None
        key = (sf.path, class_node.id, attribute)
        if key in self._attributes:
            return self._attributes[key]
        self._attributes[key] = None  # `self.x = self.x.y`: no cycle
        if family is JS:
            self._attributes[key] = result = self._js_class_attribute(sf, class_node, attribute)
            return result
        found: set[Receiver] = set()
        rows = range(class_node.start_point.row, class_node.end_point.row + 1)
        for row, start, end in sf.occurrences(attribute, rows):
            node = sf.node_at(row, start, end)
            if node is None or not syntax.is_identifier(node) or node.parent is None:
                continue
            on_self = node.parent.type == "attribute"
            target = node.parent if on_self else node
            if on_self:
                owner = target.child_by_field_name("object")
                if owner is None or syntax.text_of(owner) not in family.self_names \
                        or syntax.field_of(node) != "attribute":
                    continue
            elif syntax.enclosing_class(family, node)[1] is None \
                    or any(a.type in family.functions for a in syntax.ancestors(node)):
                continue  # a bare name counts only as a declaration in the class body
            assignment = target.parent
            if assignment is None or assignment.type != "assignment" or syntax.field_of(target) != "left" \
                    or syntax.enclosing_class(family, node)[1].id != class_node.id:  # type: ignore[union-attr]
                continue
            annotation = assignment.child_by_field_name("type")
            value = assignment.child_by_field_name("right")
            if annotation is not None:
                found.add(self._annotated(sf, annotation))
            elif value is not None and value.type != "none":
                found.add(self.receiver(sf, value, value) if syntax.is_identifier(value)
                          else self._value_of(sf, value))
        known = found - {UNKNOWN_RECEIVER}
        result = next(iter(known)) if len(found) == 1 and known else None
        self._attributes[key] = result
        return result

    def _js_class_attribute(self, sf: SourceFile, class_node: Node, attribute: str) -> Receiver | None:
        """JS/TS: what ``this.attribute`` holds in the class, when its field
        (``x: C``, ``x = new C()``), a constructor's parameter property
        (``constructor(private x: C)``) and every ``this.x = ...`` in the class
        give one class (``null``/``undefined`` placeholders aside)."""
        found: set[Receiver] = set()
        body = class_node.child_by_field_name("body")
        for member in body.named_children if body is not None else ():
            if member.type in ("public_field_definition", "field_definition"):
                name = member.child_by_field_name("name") or member.child_by_field_name("property")
                if syntax.text_of(name) != attribute:
                    continue
                annotation, value = member.child_by_field_name("type"), member.child_by_field_name("value")
                if annotation is not None:
                    found.add(self._annotated(sf, annotation))
                elif value is not None and value.type not in ("null", "undefined"):
                    found.add(self._value_of(sf, value))
            elif member.type == "method_definition" \
                    and syntax.text_of(member.child_by_field_name("name")) == "constructor":
                parameters = member.child_by_field_name("parameters")
                for parameter in parameters.named_children if parameters is not None else ():
                    if syntax.text_of(parameter.child_by_field_name("pattern")) == attribute and any(
                            c.type in ("accessibility_modifier", "readonly") for c in parameter.children):
                        annotation = parameter.child_by_field_name("type")
                        found.add(self._annotated(sf, annotation) if annotation is not None else UNKNOWN_RECEIVER)
        rows = range(class_node.start_point.row, class_node.end_point.row + 1)
        for row, start, end in sf.occurrences(attribute, rows):
            node = sf.node_at(row, start, end)
            target = node.parent if node is not None else None
            assignment = target.parent if target is not None else None
            if target is None or assignment is None or target.type != "member_expression" \
                    or syntax.field_of(node) != "property" or assignment.type != "assignment_expression" \
                    or syntax.field_of(target) != "left" \
                    or getattr(target.child_by_field_name("object"), "type", None) != "this" \
                    or syntax.enclosing_class(JS, node)[1].id != class_node.id:  # type: ignore[union-attr]
                continue
            value = assignment.child_by_field_name("right")
            if value is not None and value.type not in ("null", "undefined"):
                found.add(self.receiver(sf, value, value) if syntax.is_identifier(value)
                          else self._value_of(sf, value))
        known = found - {UNKNOWN_RECEIVER}
        return next(iter(known)) if len(found) == 1 and known else None

    def _assigned_attribute(self, sf: SourceFile, node: Node, site: Node) -> Receiver | None:
        """What the dotted attribute ``node`` (``a.b``) holds where the function
        around ``site`` (else the module) last assigned it before ``site``, when
        that is one class (a type checker narrows it there)."""
        family = sf.family
        assert family is not None and sf.tree is not None
        dotted = "".join(syntax.text_of(node).split())
        attribute = node.child_by_field_name("attribute")
        if attribute is None:
            return None
        scope = next((a for a in syntax.ancestors(site) if a.type in family.functions), sf.tree.root_node)
        key = (sf.path, scope.id, dotted)
        if key not in self._assignments:
            values: list[Node] = []  # the values assigned, in order
            rows = range(scope.start_point.row, scope.end_point.row + 1)
            for row, start, end in sf.occurrences(syntax.text_of(attribute), rows):
                name = sf.node_at(row, start, end)
                target = name.parent if name is not None else None
                if target is None or target.type != "attribute" \
                        or "".join(syntax.text_of(target).split()) != dotted:
                    continue
                assignment = target.parent
                value = assignment.child_by_field_name("right") if assignment is not None else None
                if assignment is not None and assignment.type == "assignment" and value is not None \
                        and syntax.field_of(target) == "left" \
                        and next((a for a in syntax.ancestors(target) if a.type in family.functions),
                                 sf.tree.root_node).id == scope.id:
                    values.append(value)
            self._assignments[key] = values
        last = None
        for value in self._assignments[key]:
            if value.end_byte <= site.start_byte:
                last = value
        if last is None or last.type == "none":
            return None
        held = self._value_of(sf, last)
        return held if held != UNKNOWN_RECEIVER else None

    def _class_named(self, sf: SourceFile, name: str) -> ClassId | None:
        """The class ``name`` refers to in ``sf``, if it is one."""
        return self.class_of(self.lookup_bare(sf, name))

    def class_of(self, ref: Ref) -> ClassId | None:
        """The class a reference leads to, if it is one (a TypeScript type
        alias is not: it may name a union, `Subscription | (() => void)`)."""
        kind = self.kind_of(ref)
        if ref.path is None or ref.symbol is None or kind not in CLASS_KINDS \
                or (kind == "type" and syntax.family_for(language_for_path(ref.path)) is JS):
            return None
        return ClassId(class_home(ref.path), ref.symbol)

    def _go_type(self, sf: SourceFile, package: str | None, name: str) -> ClassId | None:
        """The Go type ``name`` (``package.name``) in ``sf``: in its own
        package, or in the package the import of ``package`` names."""
        binding = sf.binding(package) if package else None
        if package and binding is None:
            return None
        for definition in self.definitions_named(name):
            if definition.language != "go" or definition.symbol != name \
                    or definition.symbol_kind not in CLASS_KINDS:
                continue
            home = posixpath.dirname(definition.path)
            if (binding is not None and self._go_import_names(binding.spec, definition.path)) \
                    or (binding is None and home == posixpath.dirname(sf.path)):
                return ClassId(home, name)
        return None

    def dotted_ref(self, sf: SourceFile, dotted: str, row: int | None = None) -> Ref:
        """What ``a.b.c`` made of names refers to in ``sf`` (on line ``row``,
        where an import in a function counts): after Python's ``import a.b.c``
        the longest prefix that is an indexed module, then the rest looked up
        in it; else ``a`` looked up, then the rest in it."""
        parts = "".join(dotted.split()).split(".")
        root = (sf.function_binding(parts[0], row) if row is not None and sf.family is PYTHON else None) \
            or sf.binding(parts[0])
        ref = UNKNOWN_REF
        rest: list[str] = []
        if sf.family is PYTHON and root is not None and root.package:
            for end in range(len(parts), 0, -1):
                path, external = self.module_path(sf, ".".join(parts[:end]))
                if path is not None:
                    ref, rest = Ref("module", path), parts[end:]
                    break
                if end == 1:
                    return EXTERNAL_REF if external else UNKNOWN_REF
        else:
            ref = self.bare_ref_at(sf, parts[0], row) if row is not None else self.lookup_bare(sf, parts[0])
            rest = parts[1:]
        for part in rest:
            if ref.kind != "module" or ref.path is None:
                return EXTERNAL_REF if ref.kind == "external" else UNKNOWN_REF
            ref = self.lookup_name(ref.path, part)
        return ref

    def direct_bases(self, cls: ClassId) -> list[Base]:
        """Bases of the indexed class ``cls`` (known by name only: of every
        indexed class of that name), each resolved where its class is written."""
        if cls not in self._bases:
            self._bases[cls] = [base for sf, node in self.class_declarations(cls)
                                for base in self._node_bases(sf, node)]
        return self._bases[cls]

    def class_declarations(self, cls: ClassId) -> list[tuple[SourceFile, Node]]:
        """Where the indexed class ``cls`` is declared: (file, class node) of
        the one of its home, or of every indexed class of its name when its
        home is unknown."""
        found: list[tuple[SourceFile, Node]] = []
        for definition in self.definitions_named(cls.name):
            if definition.symbol_kind in CLASS_KINDS and (cls.home is None or (
                    definition.symbol == cls.symbol and class_home(definition.path) == cls.home)):
                sf = self.source(definition.path)
                node = self.declaration(sf, definition)
                if node is not None and sf is not None:
                    found.append((sf, node))
        return found

    def _node_bases(self, sf: SourceFile, class_node: Node) -> list[Base]:
        assert sf.family is not None
        return [self._base(sf, dotted) for dotted in syntax.class_bases(sf.family, class_node)]

    def _base(self, sf: SourceFile, dotted: str) -> Base:
        """A base class named in ``sf``, through the import that brings it
        there (aliases, re-exports): ``from m import Base as B; class C(B)``."""
        assert sf.family is not None
        parts = dotted.split(".")
        name = parts[-1]
        if sf.family is GO:
            cls = self._go_type(sf, parts[0] if len(parts) > 1 else None, name)
            if cls is not None:
                return Base(cls, True)
            external = len(parts) > 1 and sf.binding(parts[0]) is not None
            return Base(ClassId(None, name), external or name in BUILTIN_FUNCTIONS["go"])
        ref = self.dotted_ref(sf, dotted)
        cls = self.class_of(ref)
        if cls is not None:
            return Base(cls, True)
        if ref.kind == "external" or (ref.kind == "unknown" and len(parts) == 1
                                      and name in BUILTIN_FUNCTIONS[sf.family.name]):
            return Base(ClassId(None, name), True)  # object, Exception, an installed package's
        binding = sf.binding(parts[0])
        if len(parts) == 1 and binding is not None and binding.imported not in (None, "*"):
            name = binding.imported  # unresolved import: at least its imported name
        # Unresolved: matched by name, known if the index has a class of that name.
        return Base(ClassId(None, name), any(d.symbol_kind in CLASS_KINDS for d in self.definitions_named(name)))

    def lineage(self, cls: ClassId, bases: Iterable[Base] | None = None,
                include_self: bool = True) -> tuple[list[ClassId], bool]:
        """The class and its bases, breadth first (cycles cut), and whether
        every base on the way is known (see :class:`Base`)."""
        key = (cls, include_self)
        if bases is None and key in self._lineages:
            return self._lineages[key]
        order = [cls] if include_self else []
        queue = list(bases if bases is not None else self.direct_bases(cls))
        seen = {cls} if include_self else set()
        complete = True
        while queue and len(order) < MAX_BASES:
            base = queue.pop(0)
            complete = complete and base.known
            if base.cls in seen:
                continue
            seen.add(base.cls)
            order.append(base.cls)
            queue.extend(self.direct_bases(base.cls))
        if bases is None:
            self._lineages[key] = (order, complete)
        return order, complete

    def defines(self, cls: ClassId, member: str) -> bool:
        """Does the class (by name only: any class of that name) define ``member``?"""
        if cls.home is None:
            return any(d.container == cls.name for d in self.definitions_named(member))
        return any(container_id(d) == cls for d in self.definitions_named(member))

    # -- verdicts ------------------------------------------------------------

    def verdict(self, sf: SourceFile, name_node: Node, name: str, targets: Targets) -> Verdict:
        """Does ``name`` at ``name_node`` in ``sf`` refer to one of ``targets``?"""
        return self.match(sf, name_node, name, targets).verdict

    def match(self, sf: SourceFile, name_node: Node, name: str, targets: Targets) -> Match:
        """The verdict, which of ``targets`` it leads (or may lead) to, and
        why it stays unconfirmed."""
        family = sf.family
        if family is None or family.name == syntax.GENERIC.name:
            return self._name_only_match(sf, name_node, name, targets)
        _, receiver_node = syntax.member_parts(family, name_node)
        if receiver_node is None:
            scoped = sf.function_binding(name, name_node.start_point.row) if family is PYTHON else None
            if scoped is not None:  # `def f(): from m import f; f()`: m's, not this file's f
                return self._ref_match(self._lookup_binding(sf, scoped, scoped.imported, 0), targets)
            local = self._bound_locally(sf, name_node, name)
            if local == "parameter":  # maybe what the target returns (a test fixture), never it
                return Match(Verdict.UNKNOWN, targets.module_keys, "parameter") \
                    if targets.module_keys else OTHER_MATCH
            if local == "local":
                return OTHER_MATCH  # a local variable of that name
            return self._bare_match(sf, name, targets)
        called = syntax.use_kind(family, syntax.member_parts(family, name_node)[0]) != "value"
        return self._member_match(sf, self.receiver(sf, receiver_node, name_node), name, targets, called)

    def _name_only_match(self, sf: SourceFile, name_node: Node, name: str, targets: Targets) -> Match:
        """A language without binding analysis: unconfirmed, except (in the
        languages read by a definitions table) a bare call of the one
        function of that name its own file defines (`restock(…)` beside
        `fun restock`, Elixir's `open(owner)` in the module defining `open`)."""
        family = sf.family
        if family is not None and family.called_names and syntax.is_bare_call(family, name_node):
            here = [d for d in self.definitions_named(name) if d.path == sf.path]
            if len(here) == 1 and here[0].key in targets.keys:
                return Match(Verdict.CONFIRMED, frozenset({here[0].key}))
        return Match(Verdict.UNKNOWN, targets.keys, "name-only-language")

    def _bound_locally(self, sf: SourceFile, site: Node, name: str) -> str | None:
        """``parameter`` or ``local`` when the innermost function around
        ``site`` binding ``name`` takes it as a parameter or assigns it: the
        name there is that local, not the module's or an import's
        (`def result(): result = f(); result.ready()`); None otherwise."""
        family = sf.family
        assert family is not None
        if family is GO or sf.binding(name) is not None:
            return None
        for function in syntax.ancestors(site):
            if function.type not in family.functions:
                continue
            if name in syntax.parameter_names(function):
                return "parameter"
            if self._scope_values(sf, function, name):
                return "local"
        return None

    def _bare_match(self, sf: SourceFile, name: str, targets: Targets) -> Match:
        ref = self.lookup_bare(sf, name)
        match = self._ref_match(ref, targets)
        if match.verdict is Verdict.CONFIRMED or sf.family is not PYTHON:
            return match
        # Bound more than once at module level (`try: from a import f / except
        # ImportError: from b import f`, or a fallback `def f`): a call may
        # reach any of them, where the file's name is only the last.
        imports = sf.module_bindings(name)
        if len(imports) + (ref.kind == "definition" and ref.path == sf.path) > 1:
            for binding in imports:
                other = _match_of(self._lookup_binding(sf, binding, binding.imported, 0), targets)
                if other.verdict is Verdict.CONFIRMED:
                    return other
        return match

    def _ref_match(self, ref: Ref, targets: Targets) -> Match:
        """The verdict on a bare name that refers to ``ref``."""
        if ref.kind == "definition":
            return _match_of(ref, targets)
        if ref.kind in ("module", "external"):
            return OTHER_MATCH
        if targets.only_methods:
            return OTHER_MATCH  # a bare name never reaches a method
        return Match(Verdict.UNKNOWN, targets.module_keys, "unresolved-import")

    def _member_match(self, sf: SourceFile, receiver: Receiver, name: str, targets: Targets,
                      called: bool = True) -> Match:
        if receiver.kind == "module":
            if sf.family is GO:
                keys = frozenset(t.key for t in targets.module_level
                                 if self._go_import_names(receiver.module or "", t.path))
                return Match(Verdict.CONFIRMED, keys) if keys else OTHER_MATCH
            return _match_of(self.lookup_name(receiver.module or "", name), targets)
        if receiver.kind == "external":
            return OTHER_MATCH
        if receiver.cls is not None and receiver.kind in ("self", "super", "class", "instance"):
            return self._class_member_match(receiver, name, targets)
        # A receiver of unknown type.
        builtin = name in BUILTIN_METHODS[sf.family.name if sf.family else "generic"]
        if targets.members:
            member_keys = frozenset(d.key for d in targets.members)
            # No other definition, no builtin has that name: a call confirms
            # (not a read: `obj.data` may be any object's instance attribute,
            # which the index does not list); with several targets, which of
            # them is not known.
            if called and not builtin and all(d.key in targets.keys for d in self.definitions_named(name)):
                return Match(Verdict.CONFIRMED, member_keys) if len(member_keys) == 1 \
                    else Match(Verdict.UNKNOWN, member_keys, "several-definitions")
            return Match(Verdict.UNKNOWN, member_keys, self._unknown_receiver_reason(name, targets, builtin))
        # Only module-level targets: `x.name` reaches one only through a module.
        if builtin or any(d.container is not None for d in self.definitions_named(name)):
            return OTHER_MATCH
        return Match(Verdict.UNKNOWN, targets.keys, "untyped-receiver")

    def _unknown_receiver_reason(self, name: str, targets: Targets, builtin: bool) -> str:
        """Why a method call on a receiver of unknown type stays unconfirmed:
        the standard library or builtins have the name, many unrelated
        classes of the project define it, or nothing is known either way."""
        if builtin:
            return "builtin-name"
        others = {container_id(d) for d in self.definitions_named(name)
                  if d.container is not None and d.key not in targets.keys}
        return "shared-name" if len(others) >= SHARED_NAME_CLASSES else "untyped-receiver"

    def _class_member_match(self, receiver: Receiver, name: str, targets: Targets) -> Match:
        owner, complete = self._owner(receiver, name)
        if owner is None:
            # No indexed class on the way defines it: a base outside the index
            # does, if every base is known. Never on `self`, which may be an
            # instance of a subclass mixing in the definer (mixins, abstract bases).
            if complete and receiver.kind != "self":
                return self._typed_dispatch(receiver, targets)
            return Match(Verdict.UNKNOWN, frozenset(d.key for d in targets.members), "unknown-base")
        if owner in targets.container_ids:
            return Match(Verdict.CONFIRMED, frozenset(d.key for d in targets.members if container_id(d) == owner))
        if owner.home is None:  # a class known by name only never confirms
            keys = frozenset(d.key for d in targets.members if d.container == owner.name)
            return Match(Verdict.UNKNOWN, keys, "unresolved-class") if keys else OTHER_MATCH
        # self.m() in a base class reaches an override in a subclass at run time.
        if receiver.kind == "self":
            keys = frozenset(d.key for d in targets.members
                             if owner in self.lineage(container_id(d), include_self=False)[0])
            if keys:
                return Match(Verdict.UNKNOWN, keys, "override")
        return self._typed_dispatch(receiver, targets)

    def _typed_dispatch(self, receiver: Receiver, targets: Targets) -> Match:
        """TypeScript's reading of a typed receiver: ``x: Base`` (or an
        interface) may hold an instance of a class deriving from (implementing)
        it, so ``x.m()`` may reach that class's ``m``; not after ``super.``,
        which names the base's. Other languages: OTHER."""
        if receiver.kind not in ("instance", "class") or receiver.cls is None or not targets.js_members:
            return OTHER_MATCH
        cls = receiver.cls
        # ... and a class implementing another class gets its methods from
        # that class at run time (the mixin pattern: `class C implements M`,
        # `applyMixins(C, [M])`), so `x: C; x.m()` may run M's `m`.
        keys = frozenset(d.key for d in targets.js_members
                         if cls in self.lineage(container_id(d), include_self=False)[0]  # type: ignore[arg-type]
                         or cls in self.implemented(container_id(d))  # type: ignore[arg-type]
                         or container_id(d) in self.implemented(cls))
        return Match(Verdict.UNKNOWN, keys, "override") if keys else OTHER_MATCH

    def implemented(self, cls: ClassId) -> set[ClassId]:
        """TypeScript: the indexed interfaces ``cls`` and its bases implement,
        and those they extend."""
        if cls not in self._implemented:
            self._implemented[cls] = set()  # a cycle ends here
            found: set[ClassId] = set()
            queue = [self._base(sf, name) for owner in self.lineage(cls)[0] if owner.home is not None
                     for sf, node in self.class_declarations(owner)
                     for name in syntax.implemented_types(sf.family, node)]  # type: ignore[arg-type]
            while queue and len(found) < MAX_BASES:
                interface = queue.pop(0).cls
                if interface in found or interface.home is None:
                    continue
                found.add(interface)
                queue += [self._base(sf, name) for sf, node in self.class_declarations(interface)
                          for name in syntax.implemented_types(sf.family, node)]  # type: ignore[arg-type]
            self._implemented[cls] = found
        return self._implemented[cls]

    def _owner(self, receiver: Receiver, name: str) -> tuple[ClassId | None, bool]:
        """The first class up the receiver's lineage defining ``name``, and
        whether the lineage is fully known."""
        key = (receiver, name)
        if key not in self._owners:
            assert receiver.cls is not None
            lineage, complete = self.lineage(receiver.cls, receiver.bases, receiver.kind != "super")
            self._owners[key] = (next((cls for cls in lineage if self.defines(cls, name)), None), complete)
        return self._owners[key]

    def _go_import_names(self, import_path: str, definition_path: str) -> bool:
        """Does a Go import path name the package (directory) of a file?"""
        package = posixpath.dirname(definition_path)
        if package:
            return import_path == package or import_path.endswith("/" + package)
        return import_path == self.go_module()

    def go_module(self) -> str:
        if self._go_module is None:
            self._go_module = ""
            # Through the engine's reader: a go.mod symlinked out of the root is not read.
            for line in (self.engine.current_text("go.mod") or "").splitlines():
                if line.startswith("module ") and len(line.split()) > 1:
                    self._go_module = line.split()[1].strip("\"`")
                    break
        return self._go_module

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
        return True

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


def _without_type_arguments(text: str) -> str:
    """``: Subject<Map<K, V>>`` -> ``: Subject``: the type arguments of one
    generic type dropped; anything else (a union of generics) unchanged."""
    head, bracket, rest = text.partition("<")
    if not bracket or not rest.rstrip().endswith(">"):
        return text
    depth = 1
    for char in rest.rstrip()[:-1]:
        depth += {"<": 1, ">": -1}.get(char, 0)
        if depth == 0:  # `A<T> | B<U>`: the first `>` closes before the end
            return text
    return head


def _assigned_value(name_node: Node) -> Node | None:
    """The value a declaration or plain assignment gives a name
    (``x = v``, ``const x = v``, ``x := v``); None when it is not that simple."""
    node = name_node
    while node.parent is not None and node.parent.type in ("expression_list", "pattern_list"):
        node = node.parent
    parent = node.parent
    if parent is None:
        return None
    if parent.type in ("assignment", "variable_declarator", "short_var_declaration", "var_spec"):
        target = parent.child_by_field_name("left") or parent.child_by_field_name("name")
        value = parent.child_by_field_name("right") or parent.child_by_field_name("value")
        if target is None or value is None:
            return None
        if target.id == name_node.id:
            return value
        # `a, b := f(), g()`: the value in the same position.
        names, values = target.named_children, value.named_children
        if len(names) == len(values):
            for index, candidate in enumerate(names):
                if candidate.id == name_node.id:
                    return values[index]
    return None


def _match_of(ref: Ref, targets: Targets) -> Match:
    if ref.kind == "definition":
        key = (ref.path or "", ref.symbol or "")
        return Match(Verdict.CONFIRMED, frozenset({key})) if key in targets.keys else OTHER_MATCH
    if ref.kind == "unknown":
        return Match(Verdict.UNKNOWN, targets.module_keys or targets.keys, "unresolved-import")
    return OTHER_MATCH


def _is_submodule(path: str, name: str) -> bool:
    """Did ``from M import name`` resolve to the submodule ``name`` itself?"""
    stem = posixpath.splitext(posixpath.basename(path))[0]
    if stem == "__init__":
        stem = posixpath.basename(posixpath.dirname(path))
    return stem == name
