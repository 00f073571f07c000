"""Whether a class name written in code names a given class, where the
language's namespaces can tell: Ruby's modules (a qualifier, else the
lexical nesting), PHP's namespaces and ``use`` imports, Java's packages and
imports, C#'s namespaces and ``using`` directives. Used by the constructor sweep, which finds a class by its last
name only: ``Shop::Request.new`` or ``use Shop\\B\\Item; new Item`` is
another class than ``Shop::Auth::Request`` or ``Shop\\A\\Item``. Only what
the code itself says counts; anything unsure is left to the caller
(listed unconfirmed), never dropped here."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from tree_sitter import Node

from ctxls.index.languages import language_for_path
from ctxls.index.model import split_symbol

from . import syntax
from .index_view import CLASS_KINDS

if TYPE_CHECKING:
    from .resolve import Resolver
    from .syntax import SourceFile

# The languages whose written class names this module reads.
LANGUAGES = frozenset({"ruby", "php", "java", "csharp"})
# What separates the segments of a written qualified name (`A::B`, `A\B`, `a.b`).
_SEPARATORS = re.compile(r"::|\\|\.")


def names_another_class(resolver: Resolver, sf: SourceFile, written: Node, cls: tuple[str, str]) -> bool:
    """Whether ``written`` (a class name in ``sf``, with its qualifiers)
    surely names another class than ``cls``, (its file, its symbol)."""
    if sf.language not in LANGUAGES or language_for_path(cls[0]) != sf.language:
        return False
    full = _full_name(resolver, *cls)
    if full is None:
        return False
    segments, absolute = _written(sf, written)
    fold = str.lower if sf.language == "php" else str  # PHP's class names ignore case
    full = [fold(s) for s in full]
    segments = [fold(s) for s in segments]
    if len(segments) > 1 or absolute:
        module, qualifier = full[:-1], segments[:-1]
        if absolute:
            return qualifier != module
        # Relative to a nesting or namespace: the qualifier ends the class's module path.
        return len(qualifier) > len(module) or module[len(module) - len(qualifier):] != qualifier
    named = _unqualified(resolver, sf, written, segments[0]) if segments else None
    return named is not None and [fold(s) for s in named] != full


def _full_name(resolver: Resolver, path: str, symbol: str) -> list[str] | None:
    """The class's fully qualified name, segment by segment: a Ruby
    symbol already is; PHP's namespace and Java's package come first."""
    segments = symbol.split(".")
    language = language_for_path(path)
    if language == "ruby":
        return segments
    sf = resolver.source(path)
    if sf is None or sf.tree is None:
        return None
    if language == "java":
        return [*_java_package(sf), *segments]
    if language == "csharp":  # a block namespace is in the symbol already, a file-scoped one is not
        return [*_csharp_file_namespace(sf), *segments]
    rows = [d.start_line for d in resolver.definitions_named(split_symbol(symbol)[1])
            if d.path == path and d.symbol == symbol and d.symbol_kind in CLASS_KINDS]
    return [*_php_namespace(sf, rows[0]), *segments] if rows else None


def _written(sf: SourceFile, written: Node) -> tuple[list[str], bool]:
    """The segments a class name is written with, and whether from the
    root (`::A::B`, `\\A\\B`, and every name a PHP `use` imports)."""
    clause = written.parent
    if sf.language == "php" and clause is not None and clause.type == "namespace_use_clause":
        return _php_used_name(clause), True
    text = syntax.text_of(written)
    absolute = text.startswith(("::", "\\"))
    return [s.strip() for s in _SEPARATORS.split(text) if s.strip()], absolute


def _unqualified(resolver: Resolver, sf: SourceFile, written: Node, name: str) -> list[str] | None:
    """The fully qualified name an unqualified class name resolves to where
    it is written, when the code says; None when unsure."""
    if sf.tree is None:
        return None
    if sf.language == "php":
        # An import of that name, else the namespace the file is in.
        imported = _php_uses(sf).get(name.lower())
        return imported if imported is not None else [*_php_namespace(sf, written.start_point.row), name]
    if sf.language == "java":
        imported = _java_imports(sf).get(name)
        if imported is not None:
            return imported
        package = _java_package(sf)
        for definition in resolver.definitions_named(name):
            if definition.symbol == name and definition.symbol_kind in CLASS_KINDS and definition.language == "java":
                other = resolver.source(definition.path)
                if other is not None and other.tree is not None and _java_package(other) == package:
                    return [*package, name]  # a class of the file's own package
        return None  # an on-demand import, java.lang, a nested class: unsure
    if sf.language == "csharp":
        return _csharp_unqualified(resolver, sf, written, name)
    return _ruby_lexical(resolver, written, name)


def _ruby_lexical(resolver: Resolver, written: Node, name: str) -> list[str] | None:
    """The class an unqualified Ruby constant names through the modules and
    classes written around it (innermost first, then the top level), when
    one of them defines a class of that name."""
    nesting: list[list[str]] = []
    for ancestor in syntax.ancestors(written):
        body = ancestor.child_by_field_name("body")
        if ancestor.type not in ("module", "class") or body is None \
                or not body.start_byte <= written.start_byte < body.end_byte:
            continue  # a superclass is read outside its class's body
        nesting.append([s for s in _SEPARATORS.split(syntax.text_of(ancestor.child_by_field_name("name"))) if s])
        if syntax.text_of(ancestor.child_by_field_name("name")).startswith("::"):
            break
    # `module A; class B::C` nests A::B::C, then A.
    prefixes = [sum(reversed(nesting[i:]), []) for i in range(len(nesting))] + [[]]
    symbols = {d.symbol for d in resolver.definitions_named(name)
               if d.language == "ruby" and d.symbol_kind in CLASS_KINDS}
    for prefix in prefixes:
        if ".".join([*prefix, name]) in symbols:
            return [*prefix, name]
    return None


def _php_namespace(sf: SourceFile, row: int) -> list[str]:
    """The namespace in effect at ``row``: the braced `namespace N { … }`
    holding it, else the last `namespace N;` before it; none: the global one."""
    found: list[str] = []
    for node in sf.tree.root_node.named_children if sf.tree is not None else ():
        if node.type != "namespace_definition" or node.start_point.row > row:
            continue
        if node.child_by_field_name("body") is None or node.end_point.row >= row:
            found = [s for s in _SEPARATORS.split(syntax.text_of(node.child_by_field_name("name"))) if s]
    return found


def _php_used_name(clause: Node) -> list[str]:
    """The fully qualified name a `use` clause imports (a group's prefix first)."""
    names = [syntax.text_of(n) for n in clause.named_children if n.type in ("qualified_name", "name")
             and n.id != (clause.child_by_field_name("alias") or clause).id][:1]
    declaration = clause.parent.parent if clause.parent is not None and clause.parent.type == "namespace_use_group" \
        else None
    prefix = next((syntax.text_of(n) for n in declaration.named_children if n.type == "namespace_name"), "") \
        if declaration is not None else ""
    return [s for s in _SEPARATORS.split("\\".join([prefix, *names])) if s]


def _php_uses(sf: SourceFile) -> dict[str, list[str]]:
    """Local class name (lowered) -> the fully qualified name a `use`
    imports under it (`use function`/`use const` import no class)."""
    found: dict[str, list[str]] = {}
    top = sf.tree.root_node.named_children if sf.tree is not None else []
    # Uses sit at the top, or at the top of a braced namespace's body.
    bodies = [body for n in top if n.type == "namespace_definition"
              and (body := n.child_by_field_name("body")) is not None]
    for node in [*top, *(child for body in bodies for child in body.named_children)]:
        if node.type != "namespace_use_declaration" or any(c.type in ("function", "const") for c in node.children):
            continue
        for clause in syntax.walk(node):
            if clause.type == "namespace_use_clause":
                full = _php_used_name(clause)
                local = syntax.text_of(clause.child_by_field_name("alias")) or (full[-1] if full else "")
                if local:
                    found[local.lower()] = full
    return found


def _java_package(sf: SourceFile) -> list[str]:
    for node in sf.tree.root_node.named_children if sf.tree is not None else ():
        if node.type == "package_declaration":
            return [s for s in _SEPARATORS.split(syntax.text_of(node.named_child(0))) if s]
    return []


def _java_imports(sf: SourceFile) -> dict[str, list[str]]:
    """Class name -> the fully qualified name a single-type import gives it."""
    found: dict[str, list[str]] = {}
    for node in sf.tree.root_node.named_children if sf.tree is not None else ():
        if node.type == "import_declaration" and not any(c.type in ("asterisk", "static") for c in node.children):
            segments = [s for s in _SEPARATORS.split(syntax.text_of(node.named_child(0))) if s]
            if segments:
                found[segments[-1]] = segments
    return found


def _csharp_file_namespace(sf: SourceFile) -> list[str]:
    """The file-scoped `namespace A.B;` of a C# file, segment by segment."""
    for node in sf.tree.root_node.named_children if sf.tree is not None else ():
        if node.type == "file_scoped_namespace_declaration":
            return [s for s in _SEPARATORS.split(syntax.text_of(node.child_by_field_name("name"))) if s]
    return []


def _csharp_unqualified(resolver: Resolver, sf: SourceFile, written: Node, name: str) -> list[str] | None:
    """The indexed C# class an unqualified name resolves to, as the
    compiler looks it up: the namespaces around it (innermost first), then
    the namespaces its `using` directives import (one only: two are
    ambiguous), then the global namespace; None when unsure (an alias of
    that name, `using static`, a class the index does not hold)."""
    classes = set()
    for definition in resolver.definitions_named(name):
        other = resolver.source(definition.path) if definition.language == "csharp" \
            and definition.symbol_kind in CLASS_KINDS else None
        if other is not None and other.tree is not None:
            classes.add((*_csharp_file_namespace(other), *definition.symbol.split(".")))
    around = [[s for s in _SEPARATORS.split(syntax.text_of(a.child_by_field_name("name"))) if s]
              for a in syntax.ancestors(written) if a.type == "namespace_declaration"]
    namespace = [*_csharp_file_namespace(sf), *(s for part in reversed(around) for s in part)]
    for end in range(len(namespace), 0, -1):
        if (*namespace[:end], name) in classes:
            return [*namespace[:end], name]
    usings: list[list[str]] = []
    for directive in syntax.walk(sf.tree.root_node, frozenset({"class_declaration", "struct_declaration",
                                                               "interface_declaration", "record_declaration"})) \
            if sf.tree is not None else ():
        if directive.type != "using_directive":
            continue
        if any(c.type == "=" for c in directive.children):
            if syntax.text_of(directive.named_children[0]) == name:
                return None  # `using Item = …;`
            continue
        if not any(c.type == "static" for c in directive.children) and directive.named_children:
            usings.append([s for s in _SEPARATORS.split(syntax.text_of(directive.named_children[-1])) if s])
    imported = [[*using, name] for using in usings if (*using, name) in classes]
    if imported:
        return imported[0] if len(imported) == 1 else None
    return [name] if (name,) in classes else None
