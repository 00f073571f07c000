"""The verdict on one occurrence of a name against the targets: a bare
name, a member of a typed or untyped receiver, a name-only language."""

from __future__ import annotations

import posixpath
import re

from tree_sitter import Node

from ctxls.index.definition_table import classify as classify_definition

from . import syntax
from .builtin_names import BUILTIN_METHODS
from .index_view import CLASS_KINDS, Definition
from .resolved import (MAX_BASES, OTHER_MATCH, SHARED_NAME_CLASSES, ClassId, Match, Receiver, Ref,
                       Targets, Verdict, container_id, interoperate)
from .syntax import GO, PYTHON, SourceFile


class Verdicts:
    """A part of :class:`~ctxls.impact.resolve.Resolver` (its caches live there)."""

    def verdict(self, sf: SourceFile, name_node: Node, name: str, targets: Targets) -> Verdict:
        """Does ``name`` at ``name_node`` in ``sf`` refer to one of ``targets``?"""
        return self.match(sf, name_node, name, targets).verdict

    def match(self, sf: SourceFile, name_node: Node, name: str, targets: Targets) -> Match:
        """The verdict, which of ``targets`` it leads (or may lead) to, and
        why it stays unconfirmed. Only definitions in a language ``sf``'s
        code can call are reached (``resolved.interoperate``)."""
        targets = targets.reachable_from(sf.language)
        if not targets.definitions:
            return OTHER_MATCH
        family = sf.family
        if family is None or family.name == syntax.GENERIC.name:
            return self._name_only_match(sf, name_node, name, targets)
        expression, receiver_node = syntax.member_parts(family, name_node, sf.parents)
        if receiver_node is None:
            scoped = sf.function_binding(name, name_node.start_point.row) if family is PYTHON else None
            if scoped is not None:  # `def f(): from m import f; f()`: m's, not this file's f
                return self._ref_match(self._lookup_binding(sf, scoped, scoped.imported, 0), targets)
            local = self._bound_locally(sf, name_node, name)
            if local == "parameter":  # maybe what the target returns (a test fixture), never it
                return Match(Verdict.UNKNOWN, targets.module_keys, "parameter") \
                    if targets.module_keys else OTHER_MATCH
            if local == "class":
                return self._class_body_match(sf, name_node, name, targets)
            if local == "local":
                return OTHER_MATCH  # a local variable of that name
            return self._bare_match(sf, name, targets)
        called = syntax.use_kind(family, expression, sf.parents) != "value"
        return self._member_match(sf, self.receiver(sf, receiver_node, name_node), name, targets, called)

    def _name_only_match(self, sf: SourceFile, name_node: Node, name: str, targets: Targets) -> Match:
        """A language without binding analysis: unconfirmed, except (in the
        languages read by a definitions table) a bare call of the one
        function of that name its own file defines (`restock(…)` beside
        `fun restock`, Elixir's `open(owner)` in the module defining `open`;
        a method only from inside its class or a class naming it as a base:
        elsewhere the call reaches an imported or top-level function of that
        name), unless a parameter or a local of that name around the call is
        what it calls (a parameter: unconfirmed; a local: another thing)."""
        family = sf.family
        if family is not None and family.called_names and syntax.is_bare_call(family, name_node):
            # A parameter or a local of that name is what the call calls.
            local = syntax.table_local_binding(family, name_node, name)
            if local == "parameter":  # maybe what the target returns, never it
                return Match(Verdict.UNKNOWN, targets.module_keys, "parameter") \
                    if targets.module_keys else OTHER_MATCH
            if local == "local":
                return OTHER_MATCH
            here = [d for d in self.definitions_named(name) if d.path == sf.path]
            # Another class's method is not what a bare call names: Kotlin's
            # imported `format(…)` beside `class Printer { fun format }`.
            # In `with(ledger) { save() }` the call may be the ledger's `save`.
            if len(here) == 1 and here[0].key in targets.keys and (
                    here[0].container is None or here[0].container in _enclosing_definitions(family, name_node)) \
                    and not (sf.language == "kotlin" and syntax.in_kotlin_receiver_lambda(family, name_node)):
                return Match(Verdict.CONFIRMED, frozenset({here[0].key}))
        # A C `static` function of another file is not what any name here calls.
        reachable = [d for d in targets.definitions if d.path == sf.path or not self.file_local(d)]
        qualifier = syntax.call_qualifier(family, name_node) if family is not None else None
        keys = (self._qualified_call_keys(sf, name_node, qualifier, reachable) if qualifier
                else frozenset(d.key for d in reachable))
        return Match(Verdict.UNKNOWN, keys, "name-only-language") if keys else OTHER_MATCH

    def _qualified_call_keys(self, sf: SourceFile, site: Node, qualifier: str,
                             definitions: list[Definition]) -> frozenset:
        """The targets a call written after a receiver or a path may reach,
        in a language without binding analysis. Not through a library's
        type: a path whose last segment is capitalized as a type and names
        nothing the index defines, no target's module or class, no alias of
        the file (``Vec::new()``, ``System.Math.Round(x)``); a lowercase
        one may be the project's own crate or package, which the index does
        not name (``mycrate::parse()``, R's ``pkg::f()``). Not the method
        the call is in, unless on its own object or class (``self.check()``,
        ``Self::check()``, ``Square::new()``): ``self.items.push(v)`` in
        ``Stack.push`` is a Vec's push, and recursion through another
        receiver cannot be told from it by name."""
        plain = qualifier
        while (unwrapped := _TYPE_ARGUMENTS.sub("", plain)) != plain:  # `Vec::<i32>`, `Map<K, V>`
            plain = unwrapped
        segments = re.split(r"\s*(?:::|\.)\s*", plain)
        last = segments[-1]
        library = all(re.fullmatch(r"\w+", s) for s in segments) and _type_like(last) \
            and last not in _PATH_KEYWORDS and not self.definitions_named(last) and not self._aliases(sf, last)
        row = site.start_point.row
        kept = set()
        for target in definitions:
            if library and last != target.container and last not in re.split(r"[/.]", target.path):
                continue
            inside = target.path == sf.path and target.start_line <= row <= target.end_line \
                and target.symbol_kind not in CLASS_KINDS
            if inside and qualifier not in syntax.SELF_RECEIVERS and last != target.container:
                continue
            kept.add(target.key)
        return frozenset(kept)

    def _aliases(self, sf: SourceFile, name: str) -> bool:
        """Whether the file may bind ``name`` as an alias of a module,
        namespace or type (``use a::b as name``, ``import a.B as name``,
        ``using name =``, ``namespace name =``, Scala's ``B => name``): by
        its text, so a mention in a comment counts too (the safe side)."""
        key = (sf.path, name)
        if key not in self._aliased:
            word = re.escape(name)
            self._aliased[key] = re.search(
                rf"(?:\bas|=>)\s+{word}\b|\b(?:using|namespace)\s+{word}\s*=", sf.text) is not None
        return self._aliased[key]

    def _bound_locally(self, sf: SourceFile, site: Node, name: str) -> str | None:
        """``parameter`` or ``local`` when the innermost scope around ``site``
        binding ``name`` (a function, a Python comprehension) takes it as a
        parameter or declares it: the name there is that local, not the
        module's or an import's (`def result(): result = f(); result.ready()`,
        `def ask(prompt): prompt()` beside `from m import prompt`); ``class``
        when a Python class body binds it before ``site``; None otherwise. A
        JS/TS `let`/`const` or a Go `:=` in an inner block declares it in
        that block only (`visible_bindings`)."""
        family = sf.family
        assert family is not None
        if syntax.class_body_binds(family, site, name, sf.parents):
            return "class"  # a class attribute bound earlier in the class body
        scopes = family.functions | family.comprehensions
        scope = syntax.enclosing(site, scopes, sf.parents)
        while scope is not None:
            if scope.type in family.comprehensions and syntax.comprehension_binds(scope, name, site):
                return "local"
            if scope.type in family.functions:
                if name in syntax.parameter_names(scope):
                    return "parameter"
                declared = [syntax.variable_position(family, node, sf.parents)
                            for node in self.visible_bindings(sf, scope, name, site)]
                if ("global_statement", "") in declared:
                    return None  # `global f`: the module's f
                # `f = g` in JS or Go assigns an f declared elsewhere; in Python it declares
                # one; `nonlocal f`: an enclosing function's.
                if ("nonlocal_statement", "") not in declared \
                        and any(position not in family.rebindings for position in declared):
                    return "local"
            scope = syntax.enclosing(scope, scopes, sf.parents)
        return None

    def _class_body_match(self, sf: SourceFile, site: Node, name: str, targets: Targets) -> Match:
        """A name a Python class body bound before ``site`` (`def unwrap`,
        then `__int__ = unwrap`; `cases = _cases()`; `@prop.setter`) is that
        class's attribute: a use of the class's member of that name when it
        is a target, of something else otherwise."""
        assert sf.family is not None
        _, class_node = syntax.enclosing_class(sf.family, site)
        if class_node is None:
            return OTHER_MATCH
        cls = self.class_at(sf, class_node)
        keys = frozenset(d.key for d in targets.members if d.name == name and container_id(d) == cls)
        return Match(Verdict.CONFIRMED, keys) if keys else OTHER_MATCH

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
            if called and not builtin and all(d.key in targets.keys for d in self.definitions_named(name)
                                              if interoperate(sf.language, d.language)):
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
            members = frozenset(d.key for d in targets.members)
            # A class's member is no module-level function (`self.indent` of
            # `def indent`): only a method target may be the base's.
            return Match(Verdict.UNKNOWN, members, "unknown-base") if members else OTHER_MATCH
        if owner in targets.container_ids:
            owned = frozenset(d.key for d in targets.members if container_id(d) == owner)
            # The call may also run another target, an override of the
            # owner's: confirmed for the owner's, unconfirmed for the override,
            # as each asked alone (analysis splits it per definition).
            dispatched = self._dispatch_match(receiver, owner, name, targets).keys - owned \
                if len(targets.container_ids) > 1 else frozenset()
            return Match(Verdict.UNKNOWN, owned | dispatched, "override") if dispatched \
                else Match(Verdict.CONFIRMED, owned)
        if owner.home is None:  # a class known by name only never confirms
            keys = frozenset(d.key for d in targets.members if d.container == owner.name)
            return Match(Verdict.UNKNOWN, keys, "unresolved-class") if keys else OTHER_MATCH
        return self._dispatch_match(receiver, owner, name, targets)

    def _dispatch_match(self, receiver: Receiver, owner: ClassId, name: str, targets: Targets) -> Match:
        """The targets a call resolved to ``owner``'s member may run instead at run time."""
        if self._go_interface(owner):
            # A Go interface's method runs the method of whatever type the
            # value holds, and Go never names the types implementing it.
            keys = frozenset(d.key for d in targets.members if d.name == name and d.language == "go"
                             and self.go_implements(container_id(d), owner))  # type: ignore[arg-type]
            return Match(Verdict.UNKNOWN, keys, "override") if keys else OTHER_MATCH
        # self.m() in a base class reaches an override in a subclass at run time.
        if receiver.kind == "self":
            keys = frozenset(d.key for d in targets.members
                             if owner in self.lineage(container_id(d), include_self=False)[0])
            if keys:
                return Match(Verdict.UNKNOWN, keys, "override")
        return self._typed_dispatch(receiver, targets)

    def _typed_dispatch(self, receiver: Receiver, targets: Targets) -> Match:
        """A typed receiver as a type checker reads it: ``x: Base`` (or a
        TypeScript interface; Python's ``isinstance(x, Base)``) may hold an
        instance of a class deriving from (implementing) it, so ``x.m()`` may
        reach that class's ``m``; not after ``super.``, which names the
        base's, nor on a class named (``Base.save(self)`` runs Base's, never
        an override). Other languages: OTHER."""
        if receiver.kind != "instance" or receiver.cls is None or not targets.dispatch_members:
            return OTHER_MATCH
        cls = receiver.cls
        # ... and a class implementing another class gets its methods from
        # that class at run time (TypeScript's mixin pattern: `class C
        # implements M`, `applyMixins(C, [M])`), so `x: C; x.m()` may run M's `m`.
        js = set(id(d) for d in targets.js_members)
        keys = frozenset(d.key for d in targets.dispatch_members
                         if cls in self.lineage(container_id(d), include_self=False)[0]  # type: ignore[arg-type]
                         or id(d) in js and (cls in self.implemented(container_id(d))  # type: ignore[arg-type]
                                             or container_id(d) in self.implemented(cls)))
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

    def go_implements(self, cls: ClassId, interface: ClassId) -> bool:
        """Whether the Go type ``cls`` may implement ``interface``: it is no
        interface, and it or a type it embeds defines each method the
        interface (and those it embeds) declares; a type embedding one
        outside the index may (its methods are not known)."""
        key = (cls, interface)
        if key not in self._go_implements:
            lineage, complete = self.lineage(cls)
            methods = {method for declared in self.lineage(interface)[0] if declared.home is not None
                       for _, node in self.class_declarations(declared) for method in syntax.go_interface_methods(node)}
            self._go_implements[key] = not self._go_interface(cls) and (
                not complete or all(any(self.defines(owner, method) for owner in lineage) for method in methods))
        return self._go_implements[key]

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


# Type arguments in a path (`Vec::<i32>::new`, `List<String>.of`), innermost first.
_TYPE_ARGUMENTS = re.compile(r"<[^<>]*>")
# Path segments naming the code's own crate, module or class, or the root namespace.
_PATH_KEYWORDS = syntax.SELF_RECEIVERS | {"crate", "super", "parent", "base", "global"}


def _type_like(segment: str) -> bool:
    """Capitalized as a type or namespace is (``Math``), not as a constant (``LOG``, ``INSTANCE``)."""
    return segment[:1].isupper() and segment != segment.upper()


# Definitions-table kinds whose header names no bases.
_NOT_TYPE_KINDS = frozenset({"function", "method", "namespace", "constant", "property", "macro", "table", "view"})


def _enclosing_definitions(family: syntax.Family, node: Node) -> set[str]:
    """In a table language, the names of the definitions (classes, modules,
    functions) around ``node`` by its definitions table, and the words of
    those types' headers before their members: the bases they name
    (``class TodoStore with Logging``, ``class Sub : Printer()``)."""
    table = family.definitions
    found: set[str] = set()
    if table is None:
        return found
    for ancestor in syntax.ancestors(node):
        definition = classify_definition(table, ancestor)
        if definition is None or not definition.name:
            continue
        found.add(definition.name[-1])
        if definition.kind not in _NOT_TYPE_KINDS and definition.members is not None:
            header = (ancestor.text or b"")[:definition.members.start_byte - ancestor.start_byte]
            found.update(re.findall(r"\w+", header.decode("utf-8", "replace")))
    return found


def _match_of(ref: Ref, targets: Targets) -> Match:
    if ref.kind == "definition":
        key = (ref.path or "", ref.symbol or "")
        return Match(Verdict.CONFIRMED, frozenset({key})) if key in targets.keys else OTHER_MATCH
    if ref.kind == "unknown":
        return Match(Verdict.UNKNOWN, targets.module_keys or targets.keys, "unresolved-import")
    return OTHER_MATCH
