"""Classes' bases and lineage (base classes followed across files), and
what a class defines."""

from __future__ import annotations

from collections.abc import Iterable

from tree_sitter import Node

from . import syntax
from .builtin_names import BUILTIN_FUNCTIONS
from .index_view import CLASS_KINDS, Definition
from .resolved import MAX_BASES, Base, ClassId, class_home, container_id
from .syntax import GO, SourceFile


class ClassLineage:
    """A part of :class:`~ctxls.impact.resolve.Resolver` (its caches live there)."""

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
        return found or self._unlisted_declarations(cls)

    def _unlisted_declarations(self, cls: ClassId) -> list[tuple[SourceFile, Node]]:
        """Where a class the index does not list (declared in a function,
        :meth:`class_at` names it ``test.Child``) is declared in its file;
        [] for a class the index lists."""
        if cls.home is None or "." not in cls.symbol or any(
                d.symbol_kind in CLASS_KINDS and d.symbol == cls.symbol and class_home(d.path) == cls.home
                for d in self.definitions_named(cls.name)):
            return []
        sf = self.source(cls.home)
        if sf is None or sf.family is None or sf.tree is None:
            return []
        found = []
        for row, start, end in sf.occurrences(cls.name, range(len(sf.lines))):
            name = sf.node_at(row, start, end)
            declaration = name.parent if name is not None else None
            if declaration is not None and declaration.type in sf.family.classes \
                    and syntax.field_of(name) == "name" and self.class_at(sf, declaration) == cls:
                found.append((sf, declaration))
        return found

    def _node_bases(self, sf: SourceFile, class_node: Node) -> list[Base]:
        assert sf.family is not None
        return [self._base(sf, dotted, class_node) for dotted in syntax.class_bases(sf.family, class_node)]

    def _base(self, sf: SourceFile, dotted: str, class_node: Node | None = None) -> Base:
        """A base class named in ``sf``, through the import that brings it
        there (aliases, re-exports): ``from m import Base as B; class C(B)``;
        with the ``class_node`` naming it, as the scope around that class
        sees the name: a class (or import) of a function around it shadows
        the module's."""
        assert sf.family is not None
        parts = dotted.split(".")
        name = parts[-1]
        if sf.family is GO:
            cls = self._go_type(sf, parts[0] if len(parts) > 1 else None, name)
            if cls is not None:
                return Base(cls, True)
            external = len(parts) > 1 and sf.binding(parts[0]) is not None
            return Base(ClassId(None, name), external or name in BUILTIN_FUNCTIONS["go"])
        if class_node is not None and self._bound_locally(sf, class_node, parts[0]) in ("local", "parameter"):
            # `def f(): class Base: ...; class Child(Base)`: the function's Base.
            local = self._local_receiver(sf, class_node, parts[0])
            if len(parts) == 1 and local is not None and local.kind == "class" and local.cls is not None:
                return Base(local.cls, True)
            return Base(ClassId(None, name), False)  # a local value: never confirms
        ref = self.dotted_ref(sf, dotted, class_node.start_point.row if class_node is not None else None)
        cls = self.class_of(ref)
        if cls is not None:
            return Base(cls, True)
        if ref.kind == "external" or (ref.kind == "unknown" and len(parts) == 1
                                      and name in BUILTIN_FUNCTIONS[sf.family.name]):
            return Base(ClassId(None, name), True)  # object, Exception, an installed package's
        binding = sf.binding(parts[0])
        if len(parts) == 1 and binding is not None and binding.imported not in (None, "*"):
            # Unresolved import: at least its imported name (a default export's property: `default.Base`).
            name = binding.imported.rpartition(".")[2]
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

    def has_setter(self, member: Definition) -> bool:
        """Whether the class of the indexed ``member`` gives it a setter
        (``syntax.class_setter_names``): an assignment to it runs one."""
        if member.key not in self._setters:
            sf = self.source(member.path)
            declaration = self.declaration(sf, member)
            class_node = syntax.enclosing_class(sf.family, declaration)[1] \
                if declaration is not None and sf is not None and sf.family is not None else None
            self._setters[member.key] = class_node is not None \
                and member.name in syntax.class_setter_names(class_node)
        return self._setters[member.key]

    def defines(self, cls: ClassId, member: str) -> bool:
        """Does the class (by name only: any class of that name) define ``member``?"""
        if cls.home is None:
            return any(d.container == cls.name for d in self.definitions_named(member))
        if any(container_id(d) == cls for d in self.definitions_named(member)):
            return True
        # A class the index does not list (declared in a function): its own body says.
        return any(member in syntax.class_member_names(node) for _, node in self._unlisted_declarations(cls))
