"""The type of a receiver (``x`` in ``x.f()``): ``self``/``this``, locals,
parameters' annotations, assigned values, attributes, return values."""

from __future__ import annotations

import posixpath
import re

from tree_sitter import Node

from ctxls.index.languages import language_for_path
from ctxls.index.model import split_symbol

from . import syntax
from .builtin_names import BUILTIN_FUNCTIONS
from .index_view import CLASS_KINDS
from .resolved import EXTERNAL_REF, UNKNOWN_RECEIVER, UNKNOWN_REF, ClassId, Receiver, Ref, class_home, container_id
from .syntax import GO, JS, PYTHON, Family, SourceFile


# Receivers of receivers worked out at once, at most (`a.b.c.….f()`): each
# level is two Python frames, and 500 levels of a 1 KB file overran the
# recursion limit (the request failed). Deeper, the receiver is unknown.
MAX_RECEIVER_DEPTH = 32


class ReceiverTypes:
    """A part of :class:`~ctxls.impact.resolve.Resolver` (its caches live there)."""

    def receiver(self, sf: SourceFile, node: Node, site: Node) -> Receiver:
        """What the object of a member access is (``node`` is the object,
        ``site`` the member's name)."""
        key = (sf.path, node.id)
        if key not in self._receivers:
            if self._receiver_depth >= MAX_RECEIVER_DEPTH:
                return UNKNOWN_RECEIVER
            self._receivers[key] = UNKNOWN_RECEIVER  # a value defined through itself: no cycle
            self._receiver_depth += 1
            try:
                self._receivers[key] = self._receiver(sf, node, site)
            finally:
                self._receiver_depth -= 1
        return self._receivers[key]

    def _receiver(self, sf: SourceFile, node: Node, site: Node) -> Receiver:
        family = sf.family
        assert family is not None
        kind = node.type
        if kind == "this":
            return self._own_class("self", sf, site)
        if kind == "super":
            return self._own_class("super", sf, site)
        if family is JS and kind == "non_null_expression" and node.named_child_count:  # TS `m!.stop()`: m's
            return self.receiver(sf, node.named_child(0), site)  # type: ignore[arg-type]
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
            narrowed = self._narrowed(sf, site, name)
            if narrowed is not None:  # `if isinstance(x, C): x.f()`, `if (x instanceof C) x.f()`
                return narrowed
            local = self._local_receiver(sf, site, name)
            if local is not None:
                return local
            ref = self.bare_ref_at(sf, name, site.start_point.row)
            if family is JS and ref.kind == "unknown" and name in BUILTIN_FUNCTIONS["js"]:
                return Receiver("external")  # Object.defineProperty, Reflect.get, console.log
            return self._receiver_of(ref)
        if family is PYTHON and kind == "attribute":
            owner, attribute = node.child_by_field_name("object"), node.child_by_field_name("attribute")
            if owner is not None and attribute is not None:
                name, held = syntax.text_of(attribute), None
                if syntax.text_of(owner) in family.self_names:  # self.engine.step(), self.engine = Engine()
                    held = self._self_attribute(sf, site, name)
                if held is None:
                    holder = self.receiver(sf, owner, attribute)
                    if holder.kind == "instance" and holder.cls is not None:  # x.engine.step(), x an Engine holder
                        held = self._member_attribute(holder.cls, name)
                    if held is None:
                        held = self._nested_class(holder, name)  # Outer.Inner, self.Inner
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
        if family is GO and kind == "selector_expression":  # h.db.Put(): the field's declared type
            owner, field = node.child_by_field_name("operand"), node.child_by_field_name("field")
            if owner is not None and field is not None:
                holder = self.receiver(sf, owner, field)
                held = self._member_attribute(holder.cls, syntax.text_of(field)) \
                    if holder.kind in ("self", "instance") and holder.cls is not None else None
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
        name, node = syntax.this_class(sf.family, site)
        if name is None:
            return Receiver(kind)
        if node is None:  # Go: the method's receiver type, in this package
            return Receiver(kind, ClassId(posixpath.dirname(sf.path), name))
        return Receiver(kind, self.class_at(sf, node), bases=tuple(self._node_bases(sf, node)))

    def class_at(self, sf: SourceFile, class_node: Node) -> ClassId:
        """The class a class node of ``sf`` declares: the innermost class span
        of its name holding its first line; a class the index does not list
        (nested in a function) is still this file's, named under the
        definition around it (``test.Child``): not the module's ``Child``.
        One the index lists under another kind (a class merged with a
        TypeScript namespace of its name) keeps its name."""
        name = syntax.text_of(class_node.child_by_field_name("name"))
        row = class_node.start_point.row
        spans = [s for s in self.spans(sf) if s.symbol_kind in CLASS_KINDS
                 and split_symbol(s.symbol)[1] == name and s.start_line <= row <= s.end_line]
        if spans:
            return ClassId(class_home(sf.path), max(spans, key=lambda s: s.start_line).symbol)
        assert sf.family is not None
        in_function = any(a.type in sf.family.functions for a in syntax.ancestors(class_node))
        around = self.enclosing(sf, row) if in_function else None
        return ClassId(class_home(sf.path), f"{around.symbol}.{name}" if around is not None else name)

    def _local_receiver(self, sf: SourceFile, site: Node, name: str) -> Receiver | None:
        """What a variable holds when the enclosing function, else a function
        around it (a closure's variable), else the module, assigns it (None:
        none does; an import or a definition decides). Every binding must
        agree: ``x = C()`` / ``x := &C{}`` / ``const x = new C()`` / ``x: C``
        make an instance of C; literals, ``dict()``, ``**kwargs`` make
        builtin values."""
        family = sf.family
        assert family is not None and sf.tree is not None
        if sf.function_binding(name, site.start_point.row) is not None:
            return None  # an import in the function decides
        innermost = True
        for ancestor in syntax.ancestors(site):
            if ancestor.type in family.comprehensions and syntax.comprehension_binds(ancestor, name, site):
                return UNKNOWN_RECEIVER  # `[x.f() for x in xs]`: the comprehension's own x
            if innermost and ancestor.type in family.classes:
                # A class body's statements see its bindings (`engine = Engine()`; `engine.run()`);
                # its methods do not.
                found = self._scope_values(sf, ancestor, name, site)
                if found:
                    return next(iter(found)) if len(found) == 1 else UNKNOWN_RECEIVER
                innermost = False  # a class around it is no scope of its body
            if ancestor.type in family.functions:
                # A function's own binding (a parameter, a local) shadows the
                # functions' around it, theirs the module's.
                found = self._scope_values(sf, ancestor, name, site)
                if found:
                    if not innermost and _rebound_in_nested(family, ancestor, name):
                        return UNKNOWN_RECEIVER  # another closure assigns it (`nonlocal x; x = D()`)
                    return next(iter(found)) if len(found) == 1 else UNKNOWN_RECEIVER
                innermost = False
        module = sf.tree.root_node
        # At module level an import or a definition decides.
        if name in self.top_level(sf) or sf.binding(name) is not None:
            return None
        found = self._scope_values(sf, module, name, site)
        if found:
            return next(iter(found)) if len(found) == 1 else UNKNOWN_RECEIVER
        return None

    def _narrowed(self, sf: SourceFile, site: Node, name: str) -> Receiver | None:
        """The class an ``if`` around ``site`` in its function tests ``name``
        to be an instance of (``isinstance(x, C)``, ``x instanceof C``, also
        as a part of an ``and``/``&&``), as a type checker narrows it there;
        None when nothing does, or the ``if`` rebinds it before ``site``."""
        family = sf.family
        assert family is not None and sf.tree is not None
        if family not in (PYTHON, JS):
            return None
        for ancestor in syntax.ancestors(site):
            if ancestor.type in family.functions:
                return None
            consequence = ancestor.child_by_field_name("consequence") \
                if ancestor.type in ("if_statement", "elif_clause") else None
            if consequence is None or not consequence.start_byte <= site.start_byte < consequence.end_byte:
                continue
            for test in _conjuncts(ancestor.child_by_field_name("condition")):
                tested = _tested_class(family, test, name)
                if tested is None or (family is PYTHON and self.bare_ref_at(
                        sf, "isinstance", test.start_point.row).kind == "definition"):
                    continue
                function = next((a for a in syntax.ancestors(site) if a.type in family.functions),
                                sf.tree.root_node)
                if any(consequence.start_byte <= node.start_byte < site.start_byte
                       for node in self.scope_bindings(sf, function, name)):
                    return None  # `x = other()` in the branch: no longer the tested object
                cls = self.class_of(self.dotted_ref(sf, syntax.text_of(tested), tested.start_point.row))
                if cls is not None:
                    return Receiver("instance", cls)
        return None

    def _scope_values(self, sf: SourceFile, scope: Node, name: str, site: Node) -> set[Receiver]:
        """What the bindings of ``name`` directly in ``scope`` (a function or
        the module, not a nested function) that ``site`` sees give it."""
        visible = self.visible_bindings(sf, scope, name, site)
        key = (sf.path, scope.id, name, tuple(node.id for node in visible))
        if key not in self._scopes:
            self._scopes[key] = {self._bound_value(sf, node) or UNKNOWN_RECEIVER for node in visible}
        return self._scopes[key]

    def visible_bindings(self, sf: SourceFile, scope: Node, name: str, site: Node) -> list[Node]:
        """The :meth:`scope_bindings` that ``site`` sees: a block-scoped one
        (JS/TS ``let``/``const``/``class``, a ``catch`` or ``for (const x of
        …)`` head; Go ``:=`` or a ``var`` in a block) only inside its block."""
        family = sf.family
        assert family is not None
        found = []
        for node in self.scope_bindings(sf, scope, name):
            key = (sf.path, node.id, "\0block")  # no name holds a NUL: apart from the bindings' keys
            if key not in self._scopes:
                self._scopes[key] = binding_block(family, node)
            block = self._scopes[key]
            if block is None or block.start_byte <= site.start_byte < block.end_byte:
                found.append(node)
        return found

    def scope_bindings(self, sf: SourceFile, scope: Node, name: str) -> list[Node]:
        """The names binding ``name`` as a variable directly in ``scope`` (a
        function or the module): not a nested function's, not a
        comprehension's own, not a key, keyword or label."""
        key = (sf.path, scope.id, name, "bindings")
        if key not in self._scopes:
            family = sf.family
            assert family is not None
            found: list[Node] = []
            for row, start, end in sf.occurrences(name, range(scope.start_point.row, scope.end_point.row + 1)):
                node = sf.node_at(row, start, end)
                if node is None or not syntax.is_identifier(node) \
                        or syntax.variable_position(family, node, sf.parents) is None \
                        or syntax.comprehension_variable(family, node) or sf.declares_import(node):
                    continue  # a use, a key or keyword; a comprehension's own; an import's
                scopes = family.functions | family.classes
                owner = syntax.enclosing(node, scopes, sf.parents)
                parent = syntax.parent_of(node, sf.parents)
                if owner is not None and parent is not None and parent.id == owner.id \
                        and syntax.declares(family, node, sf.parents):
                    # A function's or class's own name is bound where it is, not in it.
                    owner = syntax.enclosing(owner, scopes, sf.parents)
                if (owner.id if owner is not None else sf.tree.root_node.id) != scope.id:
                    continue  # a nested function's own; a class body's (`def set` there), the class's attribute
                found.append(node)
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
        if parent.type in family.classes and syntax.field_of(name_node) == "name":
            # A class declared in a function (the index lists none): read from its node.
            return Receiver("class", self.class_at(sf, parent), bases=tuple(self._node_bases(sf, parent)))
        if parent.type == "assignment" and parent.child_by_field_name("type") is not None \
                and syntax.field_of(name_node) == "left":  # `x: C = make()`: the annotation says
            return self._annotated(sf, parent.child_by_field_name("type"))  # type: ignore[arg-type]
        if parent.type in ("variable_declarator", "var_spec") and parent.child_by_field_name("type") is not None \
                and syntax.field_of(name_node) == "name":  # TS `const x: C = make()`, Go `var x C`
            return self._annotated(sf, parent.child_by_field_name("type"))  # type: ignore[arg-type]
        value = _assigned_value(name_node)
        return self._value_of(sf, value) if value is not None else UNKNOWN_RECEIVER

    def _annotated(self, sf: SourceFile, annotation: Node) -> Receiver:
        """What a value annotated ``annotation`` is: an instance of the class
        it names (``Optional[C]``, ``C | None``, TS ``C | undefined``: C, as a
        type checker reads it once the ``None`` is ruled out before a call),
        through its module (``other.Store``); external when it names a class
        outside the index (``sqlite3.Connection``, ``from decimal import
        Decimal``, a builtin, TS's global ``Response``); unknown otherwise
        (a union of classes, a generic, a type variable)."""
        text = _without_none(sf.family, syntax.text_of(annotation))
        generic = False
        if sf.family is JS:  # TS `Subject<T>` is a Subject, whatever T
            bare = _without_type_arguments(text)
            generic, text = bare != text, bare
        if sf.family is GO:  # `*T`, `pkg.T`, `*pkg.T[int]`: the type T of this package or of pkg's
            named = syntax.go_named_type(annotation)
            cls = self._go_type(sf, *named) if named is not None else None
            return Receiver("instance", cls) if cls is not None else UNKNOWN_RECEIVER
        words = re.findall(r"[A-Za-z_]\w*", text)
        if words and words[-1] in _ANY_OBJECT_TYPES:
            return UNKNOWN_RECEIVER  # `typing.Any`, `Self`: a project object may be one
        dotted = re.fullmatch(r"[\s:]*([A-Za-z_]\w*(?:\s*\.\s*[A-Za-z_]\w*)+)\s*", text)
        if dotted is not None:  # `other.Store`, TS `models.Cart`: a class through its module
            ref = self.dotted_ref(sf, dotted.group(1), annotation.start_point.row)
            made = self.class_of(ref)
            if made:
                return Receiver("instance", made)
            return Receiver("external") if ref.kind == "external" else UNKNOWN_RECEIVER  # `sqlite3.Connection`
        if len(words) != 1:  # a union of classes, Python generics: not one class
            return UNKNOWN_RECEIVER
        if words[0] in ("dict", "list", "str", "bytes", "set", "tuple", "int", "float", "string",
                        "number", "boolean"):
            return Receiver("external")
        made = self._class_named(sf, words[0])
        if made:
            return Receiver("instance", made)
        ref = self.lookup_bare(sf, words[0])
        if ref.kind == "external" or (ref.kind == "unknown" and not generic
                                      and self._global_type(sf, annotation, words[0])):
            return Receiver("external")  # a library's class: its methods run, not the project's
        return UNKNOWN_RECEIVER

    def _global_type(self, sf: SourceFile, annotation: Node, name: str) -> bool:
        """Whether ``name``, bound nowhere in ``sf``, is a class of the
        language or its environment: a Python builtin (``Exception``); in
        TypeScript a capitalised name no indexed definition has and no
        declaration around ``annotation`` takes as a type parameter
        (``Response``, ``ReadableStream``: the DOM's and Node's globals need
        no import)."""
        family = sf.family
        assert family is not None
        if name in self.top_level(sf) or sf.binding(name) is not None:
            return False
        if family is PYTHON:
            return name in BUILTIN_FUNCTIONS["python"]
        return family is JS and name[:1].isupper() and not self.definitions_named(name) \
            and not _type_parameter(annotation, name)

    def _value_of(self, sf: SourceFile, value: Node) -> Receiver:
        family = sf.family
        assert family is not None
        if value.type == "unary_expression" and value.named_child_count:  # Go: &T{}
            value = value.named_child(0) or value
        if value.type in family.literals:
            return Receiver("external")
        if value.type == "composite_literal":  # Go: T{...}, pkg.T[int]{...}, map[...]...{}, []T{...}
            named = syntax.go_named_type(value.child_by_field_name("type"))
            if named is None:
                return Receiver("external")
            cls = self._go_type(sf, *named)
            return Receiver("instance", cls) if cls is not None else UNKNOWN_RECEIVER
        if family is PYTHON and value.type == "attribute":  # x = self.engine
            held = self.receiver(sf, value, value)
            return held if held.kind in ("instance", "class", "module", "external") else UNKNOWN_RECEIVER
        callee = syntax.callee_of(family, value)  # C(...), new C()
        if callee is not None and callee.type in family.members:  # other.Store(), new m.C(), store.New()
            ref = self._module_member(sf, callee)
            made = self.class_of(ref) if ref is not None else None
            if made:
                return Receiver("instance", made)
            returned = self._returned(ref, sf, value) if ref is not None else None
            if returned is not None:
                return returned
            if family in (PYTHON, JS):
                held = self.receiver(sf, callee, callee)
                if held.kind == "class" and held.cls is not None:  # Outer.Inner(), self.backend() of `backend = Store`
                    return Receiver("instance", held.cls)
                owner = callee.child_by_field_name(family.members[callee.type][0])
                if owner is not None and self._external_import(sf, owner, callee):
                    return self._external_result(sf, value)  # sqlite3.connect(p), requests.get(u)
                attribute = callee.child_by_field_name(family.members[callee.type][1])
                returned = self._method_returned(sf, owner, attribute) \
                    if owner is not None and attribute is not None and value.type in ("call", "call_expression") \
                    else None
                if returned is not None:  # `Store.create(p)` of `static create(p): Store`
                    return returned
        if callee is not None and syntax.is_identifier(callee):
            called = syntax.text_of(callee)
            if self._receiver_depth >= MAX_RECEIVER_DEPTH:
                return UNKNOWN_RECEIVER  # `x = x()`, `v0 = v1(); v1 = v2(); …`: each local's value in turn
            self._receiver_depth += 1
            try:
                local = self._local_receiver(sf, callee, called)
            finally:
                self._receiver_depth -= 1
            if local is not None:  # a local of the function shadows the module's name (a class declared there)
                return Receiver("instance", local.cls, bases=local.bases) \
                    if local.kind == "class" and local.cls is not None else UNKNOWN_RECEIVER
            ref = self.bare_ref_at(sf, called, callee.start_point.row)
            if family is PYTHON and called == "type" and ref.kind == "unknown":
                return self._type_of(sf, value)
            made = self.class_of(ref)
            if made:
                return Receiver("instance", made)
            returned = self._returned(ref, sf, value)
            if returned is not None:  # `make()` of `def make() -> C`, `function make(): C`, `func New() *C`
                return returned
            if ref.kind == "external" and family in (PYTHON, JS):
                return self._external_result(sf, value)  # `from sqlite3 import connect`; `connect(p)`
            if called in BUILTIN_FUNCTIONS[family.name] and ref.kind != "definition":
                return Receiver("external")  # dict(), list(), str(), make(), Object()...
        return UNKNOWN_RECEIVER

    def _method_returned(self, sf: SourceFile, owner: Node, attribute: Node) -> Receiver | None:
        """What a call of the method ``owner.attribute(…)`` returns when the
        class of ``owner`` (or the base defining it) declares it with one
        return type: `Store.create(p)` of `static create(p): Store`,
        `s.clone()` of `def clone(self) -> "Store"` (None: not known)."""
        holder = self.receiver(sf, owner, attribute)
        if holder.kind not in ("class", "instance", "self", "super") or holder.cls is None:
            return None
        name = syntax.text_of(attribute)
        cls, _ = self._owner(holder, name)  # type: ignore[attr-defined]
        method = next((d for d in self.definitions_named(name) if container_id(d) == cls), None) \
            if cls is not None and cls.home is not None else None
        msf = self.source(method.path) if method is not None else None
        node = self.declaration(msf, method) if msf is not None and method is not None else None
        if node is None or msf is None or msf.family is None:
            return None
        each = {self._declared_return(msf, signature) for signature in syntax.typed_signatures(msf.family, node)}
        return next(iter(each)) if len(each) == 1 else None

    def _external_import(self, sf: SourceFile, node: Node, site: Node) -> bool:
        """Whether ``node``, a name or dotted name, is an import from outside
        the index (a library module or its attribute: ``sqlite3``,
        ``os.path``), not a local of that name. A builtin value (``{}``, a
        list) is not one: its ``get``/``pop`` give back what it holds."""
        text = syntax.text_of(node)
        return re.fullmatch(r"[A-Za-z_$][\w$]*(?:\s*\.\s*[A-Za-z_$][\w$]*)*", text) is not None \
            and self.receiver(sf, node, site).kind == "external" \
            and self.dotted_ref(sf, text, site.start_point.row).kind == "external"

    def _external_result(self, sf: SourceFile, call: Node) -> Receiver:
        """What a call of a library's function or class gives (``sqlite3.connect(p)``,
        ``requests.get(u)``, ``Decimal(x)``): an external object, whose
        methods are the library's. Unknown when the call is
        given something of the project, which a generic function returns
        (``copy.copy(self)``, ``typing.cast(Engine, x)``, ``asyncio.run(main())``,
        TS ``inject<Engine>()``, ``useContext(ApiContext)``)."""
        if call.child_by_field_name("type_arguments") is not None:
            return UNKNOWN_RECEIVER
        return UNKNOWN_RECEIVER if self._given_of_project(sf, call) else Receiver("external")

    def _given_of_project(self, sf: SourceFile, call: Node, depth: int = 0) -> bool:
        """Whether a call is given something of the project (``_of_project``)."""
        arguments = call.child_by_field_name("arguments")
        for argument in arguments.named_children if arguments is not None else ():
            if argument.type == "keyword_argument":
                argument = argument.child_by_field_name("value") or argument
            if not syntax.is_comment(argument) and self._of_project(sf, argument, depth):
                return True
        return False

    def _of_project(self, sf: SourceFile, value: Node, depth: int = 0) -> bool:
        """Whether ``value`` is, or a call gives, something of the project: an
        object of an indexed class, a name bound to an indexed definition,
        a call of one (``main()``) or of a method of a project object
        (``self.start()``)."""
        family = sf.family
        assert family is not None
        if self.receiver(sf, value, value).cls is not None:
            return True
        callee = syntax.callee_of(family, value)
        named = callee if callee is not None else value
        if named.type in family.members:
            owner = named.child_by_field_name(family.members[named.type][0])
            return owner is not None and self.receiver(sf, owner, named).cls is not None
        if named.type in ("string", "template_string"):  # `cast("Engine", x)`: a type written as text
            return self._names_project_class(sf, syntax.text_of(named))
        if not syntax.is_identifier(named) and callee is None:
            return False
        if syntax.is_identifier(named) and \
                self.bare_ref_at(sf, syntax.text_of(named), named.start_point.row).kind == "definition":
            return True
        if callee is not None:  # `random.choice(list(engines))`: what it is given may come back
            return depth < _GIVEN_DEPTH and self._given_of_project(sf, value, depth + 1)
        # A parameter annotated with a project class inside a generic
        # (`engines: list[Engine]`, TS `engines: Engine[]`): its items are the project's.
        annotation = _parameter_annotation(sf, named, syntax.text_of(named))
        return annotation is not None and self._names_project_class(sf, annotation)

    def _names_project_class(self, sf: SourceFile, text: str) -> bool:
        """Whether a type's text (``"Engine"``, ``list[Engine]``) names an indexed class."""
        return any(self._class_named(sf, word) is not None for word in set(re.findall(r"[A-Za-z_]\w*", text)))

    def _nested_class(self, holder: Receiver, name: str) -> Receiver | None:
        """The class ``name`` when the holder's class, or the first class up
        its lineage defining ``name``, declares it in its body
        (``Outer.Inner``, ``self.Inner``); None otherwise."""
        if holder.cls is None or holder.kind not in ("self", "super", "class", "instance"):
            return None
        for owner in self.lineage(holder.cls, holder.bases, holder.kind != "super")[0]:
            if owner.home is not None and self.defines(owner, name):
                nested = next((d for d in self.definitions_named(name)
                               if d.symbol_kind in CLASS_KINDS and container_id(d) == owner), None)
                return Receiver("class", ClassId(class_home(nested.path), nested.symbol)) if nested else None
        return None

    def _module_member(self, sf: SourceFile, member: Node) -> Ref | None:
        """What ``module.name`` (a member access on a module: Python's
        ``other.Store``, a TS namespace import's ``models.Cart``, Go's
        ``store.New``) refers to; None when its object is no module."""
        family = sf.family
        assert family is not None
        receiver_field, name_field = family.members[member.type]
        owner, attribute = member.child_by_field_name(receiver_field), member.child_by_field_name(name_field)
        if owner is None or attribute is None or not syntax.is_identifier(attribute):
            return None
        holder = self.receiver(sf, owner, attribute)
        if holder.kind != "module" or holder.module is None:
            return None
        name = syntax.text_of(attribute)
        if family is GO:  # the module is an import path: the package's function or type
            return next((Ref("definition", d.path, d.symbol) for d in self.definitions_named(name)
                         if d.language == "go" and d.symbol == name
                         and self._go_import_names(holder.module, d.path)), None)
        return self.lookup_name(holder.module, name)

    def _type_of(self, sf: SourceFile, call: Node) -> Receiver:
        """What the builtin ``type(x)`` gives: the class of ``x`` (``type(self)``
        is the class of self, maybe a subclass: as ``self``; ``type(a)`` of an
        instance of C is C or a subclass: as ``a``, whose calls may reach a
        subclass's override, where a class named, ``C.m()``, runs C's); unknown
        when that is not known (``type(name, bases, dict)`` makes a new class)."""
        arguments = call.child_by_field_name("arguments")
        if arguments is None or arguments.named_child_count != 1 \
                or arguments.named_children[0].type in ("keyword_argument", "list_splat", "dictionary_splat"):
            return UNKNOWN_RECEIVER
        argument = arguments.named_children[0]
        held = self.receiver(sf, argument, argument)
        if held.kind == "self" and held.cls is not None:
            return held
        if held.kind == "instance" and held.cls is not None:
            return held
        return Receiver("external") if held.kind == "external" else UNKNOWN_RECEIVER

    def _returned(self, ref: Ref, sf: SourceFile | None = None, call: Node | None = None) -> Receiver | None:
        """What a call of the function ``ref`` returns, when its return
        annotation (Go: its first result) names one class (None: not a
        function, not annotated). Overloads returning different classes
        leave it unknown (a call may reach each class's method) unless the
        overload that ``call`` (in ``sf``) picks is told by its literal
        arguments (:meth:`_picked_overload`)."""
        if ref.kind != "definition" or self.kind_of(ref) != "function" or ref.path is None:
            return None
        returned = self._typed_return(ref)
        if returned == UNKNOWN_RECEIVER and sf is not None and sf.family is not None and call is not None:
            declared = self._signatures(ref)
            if declared is not None and declared[0].family is sf.family and len(declared[1]) > 1:
                picked = _picked_overload(sf.family, call, declared[1])
                if picked is not None:
                    return self._declared_return(declared[0], picked)
        return returned

    def _signatures(self, ref: Ref) -> tuple[SourceFile, list[Node]] | None:
        """The function ``ref``'s file and the declarations there a call is
        typed by (its overloads, if any: ``syntax.typed_signatures``)."""
        sf = self.source(ref.path) if ref.path is not None else None
        definition = next((d for d in self.definitions_named(ref.symbol or "")
                           if d.path == ref.path and d.symbol == ref.symbol), None)
        node = self.declaration(sf, definition) if definition is not None else None
        if node is None or sf is None or sf.family is None:
            return None
        return sf, syntax.typed_signatures(sf.family, node)

    def _typed_return(self, ref: Ref) -> Receiver | None:
        """:meth:`_returned`, whatever the call (UNKNOWN: overloads disagree)."""
        key = (ref.path, f"{ref.symbol}()")
        if key not in self._returns:
            returned: Receiver | None = None
            declared = self._signatures(ref)
            if declared is not None:
                each = {self._declared_return(declared[0], signature) for signature in declared[1]}
                returned = next(iter(each)) if len(each) == 1 else UNKNOWN_RECEIVER
            self._returns[key] = returned
        return self._returns.get(key)

    def _declared_return(self, sf: SourceFile, function: Node) -> Receiver | None:
        """What the return annotation of one declaration of a function (Go: its
        first result) names (None: none)."""
        annotation = _go_first_result(function) if sf.family is GO else function.child_by_field_name("return_type")
        return self._annotated(sf, annotation) if annotation is not None else None

    def _go_interface(self, cls: ClassId | None) -> bool:
        """Whether the Go type ``cls`` is an interface (a package's `type T interface{…}`)."""
        return cls is not None and any(
            d.language == "go" and d.symbol_kind == "interface" and d.symbol == cls.symbol
            and class_home(d.path) == cls.home
            for d in self.definitions_named(cls.symbol))

    def _self_attribute(self, sf: SourceFile, site: Node, attribute: str) -> Receiver | None:
        """What ``self.attribute`` holds in the class around ``site`` (see
        :meth:`_class_attribute`)."""
        family = sf.family
        assert family is not None
        _, class_node = syntax.this_class(family, site)
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
        if family is GO:
            self._attributes[key] = result = self._go_field(sf, class_node, attribute)
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

    def _go_field(self, sf: SourceFile, type_spec: Node, field: str) -> Receiver | None:
        """Go: what the field ``field`` of the struct ``type_spec`` holds, by
        its declared type (``db *store.Store``; an embedded ``*store.Store``
        is the field ``Store``); None: no such field, or a type not known."""
        declared = type_spec.child_by_field_name("type")
        fields = declared.named_child(0) if declared is not None and declared.type == "struct_type" else None
        for declaration in fields.named_children if fields is not None else ():
            type_node = declaration.child_by_field_name("type")
            if declaration.type != "field_declaration" or type_node is None:
                continue
            names = [syntax.text_of(name) for name in declaration.children_by_field_name("name")]
            embedded = syntax.go_named_type(type_node) if not names else None
            if field in names or (embedded is not None and embedded[1] == field):
                held = self._annotated(sf, type_node)
                return held if held != UNKNOWN_RECEIVER else None
        return None

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
        that is one class (a type checker narrows it there); unknown when
        assignments on different paths to ``site`` give different classes."""
        family = sf.family
        assert family is not None and sf.tree is not None
        dotted = "".join(syntax.text_of(node).split())
        attribute = node.child_by_field_name("attribute")
        if attribute is None:
            return None
        scope = next((a for a in syntax.ancestors(site) if a.type in family.functions), sf.tree.root_node)
        name = syntax.text_of(attribute)
        key = (sf.path, scope.id, name)
        if key not in self._assignments:
            # Every assignment to an attribute of this name in the scope, by its
            # dotted target, read once: read again for each dotted name asked
            # (`v1.a.a…`, `v2.a.a…`), every line's chain rescanned every
            # occurrence of `a` (quadratic in the function).
            assigned: dict[str, list[Node]] = {}
            rows = range(scope.start_point.row, scope.end_point.row + 1)
            for row, start, end in sf.occurrences(name, rows):
                found = sf.node_at(row, start, end)
                target = found.parent if found is not None else None
                if target is None or target.type != "attribute" or syntax.field_of(target) != "left":
                    continue
                assignment = target.parent
                value = assignment.child_by_field_name("right") if assignment is not None else None
                if assignment is not None and assignment.type == "assignment" and value is not None \
                        and next((a for a in syntax.ancestors(target) if a.type in family.functions),
                                 sf.tree.root_node).id == scope.id:
                    assigned.setdefault("".join(syntax.text_of(target).split()), []).append(value)
            self._assignments[key] = assigned
        before = [value for value in self._assignments[key].get(dotted, ()) if value.end_byte <= site.start_byte]
        if not before or before[-1].type == "none":
            return None
        # The last assignment, and the ones before it while it runs only on
        # some paths to `site` (`if debug: a.b = Store() / else: a.b =
        # Square()`): a type checker's `Store | Square`.
        reaching = []
        for value in reversed(before):
            reaching.append(value)
            if _runs_before(value, site):
                break
        held = {self._value_of(sf, value) for value in reaching if value.type != "none"}
        if len(held) > 1:
            return UNKNOWN_RECEIVER  # several classes: a call may reach each
        return next(iter(held)) if held and held != {UNKNOWN_RECEIVER} else None

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


# The nodes that end the scope of a block-scoped binding: JS/TS `let`,
# `const`, `class` (and a `for`'s own declarations), Go's `:=` and `var`
# (an `if`/`for`/`switch` header's too, and a `case`'s statements).
_JS_BLOCKS = frozenset({"statement_block", "for_statement", "for_in_statement", "switch_body"})
_JS_BLOCK_DECLARATIONS = frozenset({"class_declaration", "abstract_class_declaration", "function_declaration",
                                    "generator_function_declaration", "enum_declaration"})
_GO_BLOCKS = frozenset({"block", "if_statement", "for_statement", "expression_switch_statement",
                        "type_switch_statement", "select_statement", "expression_case", "type_case",
                        "default_case", "communication_case"})
_GO_BLOCK_DECLARATIONS = frozenset({"short_var_declaration", "range_clause", "var_spec", "const_spec",
                                    "type_spec", "type_alias"})


def binding_block(family: Family, name: Node) -> Node | None:
    """The block a block-scoped binding ``name`` covers (a JS/TS ``let`` or
    ``const`` in an ``if``: that block; ``catch (e)``, ``for (const x of
    …)``: that clause; Go's ``x := …`` in an ``if``: that block); None for
    a binding seen in its whole function (Python's, JS ``var``, parameters).
    Modules and TypeScript are strict code, where a function declared in a
    block is the block's too."""
    position = syntax.variable_position(family, name)
    if position is None or family not in (JS, GO):
        return None
    binder = next((a for a in syntax.ancestors(name) if a.type == position[0]), None)
    if binder is None:
        return None
    if family is JS:
        if binder.type == "catch_clause":
            return binder
        if binder.type == "for_in_statement":
            return binder if syntax.text_of(binder.child_by_field_name("kind")) in ("let", "const") else None
        if binder.type == "variable_declarator":
            declaration = binder.parent
            if declaration is None or declaration.type != "lexical_declaration":
                return None  # `var`: the function's
            return _innermost_block(family, declaration, _JS_BLOCKS)
        if binder.type in _JS_BLOCK_DECLARATIONS:
            return _innermost_block(family, binder, _JS_BLOCKS)
        return None
    if binder.type in _GO_BLOCK_DECLARATIONS:
        return _innermost_block(family, binder, _GO_BLOCKS)
    return None


def _innermost_block(family: Family, node: Node, blocks: frozenset[str]) -> Node | None:
    """The innermost of ``blocks`` around ``node`` inside its function (None: none)."""
    for ancestor in syntax.ancestors(node):
        if ancestor.type in blocks:
            return ancestor
        if ancestor.type in family.functions:
            return None
    return None


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


# Annotations any object may have, a project's too (`object`, `typing.Any`,
# `Self`, `type`, TS `any`, `unknown`, `Object`, `this`): never a library's class.
_ANY_OBJECT_TYPES = frozenset({"Any", "Self", "object", "type", "Object", "any", "unknown", "this"})


# What a union's "no value" member is written as: a type checker rules it out
# before a method call (`if e is not None: e.stop()`, `e?.stop()`, `e!.stop()`).
_NONE_TYPES = {"python": frozenset({"None"}), "js": frozenset({"null", "undefined"})}


def _without_none(family: Family | None, text: str) -> str:
    """``Optional[C]``, ``Union[C, None]``, ``C | None`` (TS ``: C | undefined``,
    ``C | null``) -> ``C``: a union's one member besides its ``None``; any
    other annotation unchanged."""
    nones = _NONE_TYPES.get(family.name if family is not None else "", frozenset())
    body = text.strip().lstrip(":").strip()
    if family is PYTHON and len(body) > 1 and body[0] == body[-1] and body[0] in "\"'":
        body = body[1:-1].strip()  # a string annotation: `"Engine | None"`
    if not nones or not body:
        return text
    members = _top_level_parts(body, "|")
    if family is PYTHON and len(members) == 1:
        wrapped = re.fullmatch(r"(?:[A-Za-z_]\w*\s*\.\s*)?(Optional|Union)\s*\[(.*)\]", body, re.S)
        if wrapped is None:
            return text
        members = [wrapped.group(2), "None"] if wrapped.group(1) == "Optional" \
            else _top_level_parts(wrapped.group(2), ",")
    kept = [member for member in members if member not in nones]
    return kept[0] if len(kept) == 1 and len(members) > 1 else text


def _top_level_parts(text: str, separator: str) -> list[str]:
    """``text`` split at ``separator`` outside brackets, each part stripped
    (``Map<A | B, C> | null``: ``Map<A | B, C>``, ``null``)."""
    parts, depth, start = [], 0, 0
    for index, char in enumerate(text):
        if char in "[(<{":
            depth += 1
        elif char in "])}" or (char == ">" and text[index - 1:index] != "="):  # not an arrow's `=>`
            depth -= 1
        elif char == separator and depth == 0:
            parts.append(text[start:index].strip())
            start = index + 1
    parts.append(text[start:].strip())
    return parts


def _type_parameter(node: Node, name: str) -> bool:
    """Whether a declaration around ``node`` (a TS function, method, class
    or interface) takes ``name`` as a type parameter (``<T extends Base>``)."""
    for ancestor in syntax.ancestors(node):
        parameters = ancestor.child_by_field_name("type_parameters")
        if parameters is not None and any(syntax.text_of(p.child_by_field_name("name")) == name
                                          for p in parameters.named_children):
            return True
    return False


def _conjuncts(condition: Node | None) -> list[Node]:
    """The parts of an ``if``'s condition joined by ``and`` / ``&&`` (each holds
    in its branch), parentheses aside."""
    if condition is None:
        return []
    while condition.type == "parenthesized_expression" and condition.named_child_count == 1:
        condition = condition.named_child(0)  # type: ignore[assignment]
    operator = syntax.text_of(condition.child_by_field_name("operator"))
    if (condition.type, operator) in (("boolean_operator", "and"), ("binary_expression", "&&")):
        return _conjuncts(condition.child_by_field_name("left")) + _conjuncts(condition.child_by_field_name("right"))
    return [condition]


def _tested_class(family: Family, test: Node, name: str) -> Node | None:
    """The class (a name or a dotted name) that ``test`` checks ``name`` is an
    instance of: ``isinstance(name, C)``, ``name instanceof C``."""
    if family is PYTHON and test.type == "call" and syntax.text_of(test.child_by_field_name("function")) == "isinstance":
        arguments = test.child_by_field_name("arguments")
        tested = arguments.named_children if arguments is not None else []
        if len(tested) == 2 and syntax.text_of(tested[0]) == name and tested[0].type == "identifier":
            cls = tested[1]
        else:
            return None
    elif family is JS and test.type == "binary_expression" \
            and syntax.text_of(test.child_by_field_name("operator")) == "instanceof" \
            and getattr(test.child_by_field_name("left"), "type", None) == "identifier" \
            and syntax.text_of(test.child_by_field_name("left")) == name:
        cls = test.child_by_field_name("right")  # type: ignore[assignment]
    else:
        return None
    # A class written as a name or a dotted name; a tuple of classes is not one class.
    return cls if cls is not None and re.fullmatch(r"[A-Za-z_$][\w$]*(?:\s*\.\s*[A-Za-z_$][\w$]*)*",
                                                   syntax.text_of(cls)) else None


def _runs_before(value: Node, site: Node) -> bool:
    """Does the Python statement assigning ``value`` run on every path to
    ``site`` after it: is it straight in a block that holds ``site`` (not
    in an ``if``, a loop, a ``try`` or a ``with`` that ``site`` is outside)?"""
    block = next((a for a in syntax.ancestors(value) if a.type in ("block", "module")), None)
    return block is not None and block.start_byte <= site.start_byte < block.end_byte


def _rebound_in_nested(family, function: Node, name: str) -> bool:
    """Whether a function nested in ``function`` may assign its variable
    ``name`` (a closure's variable may then hold what that one assigned):
    Python's ``nonlocal name``; JavaScript's ``name = …`` in a nested function
    (one declaring a ``name`` of its own counts too: unconfirmed, never lost)."""
    for node in syntax.walk(function, frozenset()):
        if node.type == "nonlocal_statement" and any(
                c.type == "identifier" and syntax.text_of(c) == name for c in node.named_children):
            return True
        if family is syntax.JS and node.type in ("assignment_expression", "augmented_assignment_expression"):
            left = node.child_by_field_name("left")
            if left is not None and left.type == "identifier" and syntax.text_of(left) == name \
                    and _in_nested_function(family, node, function):
                return True
    return False


def _in_nested_function(family, node: Node, function: Node) -> bool:
    """Whether a function between ``node`` and ``function`` holds ``node``."""
    for ancestor in syntax.ancestors(node):
        if ancestor.id == function.id:
            return False
        if ancestor.type in family.functions:
            return True
    return False


def _picked_overload(family: Family, call: Node, signatures: list[Node]) -> Node | None:
    """The overload a type checker picks for ``call``, the first whose
    parameters take its arguments, when every argument is a literal and
    every overload before it surely does not take them (by their number,
    or a builtin type); None when that is not told."""
    arguments = call.child_by_field_name("arguments")
    if arguments is None or arguments.type not in ("argument_list", "arguments"):
        return None
    values = [a for a in arguments.named_children if not syntax.is_comment(a)]
    types = [syntax.literal_types(family, value) for value in values]
    if any(t is None for t in types):
        return None
    for signature in signatures:
        parameters = syntax.positional_parameters(family, signature)
        if parameters is None:
            return None
        if len(values) > len(parameters) or any(required for _, required in parameters[len(values):]):
            continue  # not that many arguments
        taken = [_takes(family, annotation, accepted) for (annotation, _), accepted in zip(parameters, types)]
        if None in taken:
            return None
        if all(taken):
            return signature
    return None


def _takes(family: Family, annotation: str | None, accepted: frozenset[str] | None) -> bool | None:
    """Whether a parameter annotated ``annotation`` (None: not annotated,
    any value) takes a literal of the builtin types ``accepted``: a
    builtin type or a union of them tells; another class may (a protocol
    such as ``Sequence``): None."""
    if annotation is None:
        return True
    names = [name.strip() for name in annotation.split("|")]
    if any(name in syntax.ANY_TYPES[family.name] for name in names):
        return True
    if accepted is not None and any(name in accepted for name in names):
        return True
    return False if all(name in syntax.BUILTIN_TYPES[family.name] for name in names) else None


def _go_first_result(function: Node) -> Node | None:
    """A Go function's result type, its first one of several (``(*Store,
    error)``: ``*Store``, what ``s, err := Open()`` gives ``s``)."""
    result = function.child_by_field_name("result")
    if result is None or result.type != "parameter_list":
        return result
    first = next((c for c in result.named_children if c.type == "parameter_declaration"), None)
    return first.child_by_field_name("type") if first is not None else None


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
        # Go's `s, err := Open()`: s is the call's first result.
        if parent.type in ("short_var_declaration", "var_spec") and len(values) == 1 \
                and values[0].type == "call_expression" and names and names[0].id == name_node.id:
            return values[0]
    return None


# How deep calls given to calls are read for something of the project
# (`choice(list(engines))`: 2); a hostile nest of calls is not followed down.
_GIVEN_DEPTH = 3


def _parameter_annotation(sf: SourceFile, node: Node, name: str) -> str | None:
    """The annotation's text of the parameter ``name`` of the innermost
    function around ``node`` declaring one (None: no such annotated parameter)."""
    family = sf.family
    assert family is not None
    for scope in syntax.ancestors(node, sf.parents):
        if scope.type not in family.functions:
            continue
        parameters = scope.child_by_field_name("parameters")
        for parameter in parameters.named_children if parameters is not None else ():
            declared = parameter.child_by_field_name("name") or parameter.child_by_field_name("pattern") \
                or (parameter.named_children[0] if parameter.named_children else None)
            annotation = parameter.child_by_field_name("type")
            if declared is not None and syntax.text_of(declared) == name:
                return syntax.text_of(annotation) if annotation is not None else None
    return None
